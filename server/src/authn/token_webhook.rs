//! The token authentication webhook (`--authentication-token-webhook-config-file`), as
//! kube-apiserver's: a bearer token that no other authenticator accepts is sent in a
//! `TokenReview` (`authentication.k8s.io/v1beta1`, kube-apiserver's default, or `v1` by
//! `--authentication-token-webhook-version`) to the server the kubeconfig names
//! ([`crate::kubeconfig_webhook`]), with the audiences asked for; `status.authenticated`
//! and `status.user` are the answer. As upstream:
//!
//! - audiences: the review names the API's audiences (or a TokenReview's); when the answer
//!   names audiences they must meet the ones asked for, else the API's stand for them;
//! - answers, authenticated or not, are remembered for
//!   `--authentication-token-webhook-cache-ttl` (2m) by the token's SHA-256; failures to
//!   get an answer are not;
//! - a call that fails (no connection, 429, a 5xx) is retried after 500 ms, 1.5 times longer
//!   each time, 5 tries in all; then the token is refused (401).

use std::time::Duration;

use serde_json::{json, Value};

use super::token_cache::digest;
use crate::auth::UserInfo;
use crate::kubeconfig_webhook::KubeconfigWebhook;
use crate::ttl_cache::TtlCache;

/// The most answers remembered.
const MAX_CACHED: usize = 4096;
/// How long one call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A verdict: the user and audiences, or why not.
type Verdict = Result<(UserInfo, Vec<String>), String>;

/// A cached answer's key: the token's SHA-256 and the audiences asked for.
type CacheKey = ([u8; 32], Vec<String>);

/// The webhook authenticator.
pub struct TokenWebhook {
    remote: KubeconfigWebhook,
    /// `authentication.k8s.io/v1beta1` or `authentication.k8s.io/v1`.
    api_version: &'static str,
    cache_ttl: Duration,
    cache: TtlCache<CacheKey, Verdict>,
}

impl std::fmt::Debug for TokenWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenWebhook").field("remote", &self.remote).finish()
    }
}

impl TokenWebhook {
    /// `version` is the flag's value (`v1beta1` or `v1`).
    pub fn new(
        remote: KubeconfigWebhook,
        version: &str,
        cache_ttl: Duration,
    ) -> Result<TokenWebhook, String> {
        let api_version = match version {
            "v1beta1" => "authentication.k8s.io/v1beta1",
            "v1" => "authentication.k8s.io/v1",
            other => {
                return Err(format!(
                "unsupported webhook version {other:?}, supported versions are \"v1\", \"v1beta1\""
            ))
            }
        };
        Ok(TokenWebhook { remote, api_version, cache_ttl, cache: TtlCache::new(MAX_CACHED) })
    }

    /// Who `token` is for audiences `wanted` (the API's: `api_audiences`), and the
    /// audiences it is good for.
    pub async fn authenticate(
        &self,
        token: &str,
        wanted: &[String],
        api_audiences: &[String],
    ) -> Verdict {
        let key = (digest(token), wanted.to_vec());
        if let Some(verdict) = self.cache.get(&key) {
            return verdict;
        }
        let answer = self.review(token, wanted).await?;
        let verdict = verdict_of(&answer, wanted, api_audiences);
        self.cache.insert(key, verdict.clone(), self.cache_ttl);
        verdict
    }

    /// The webhook's TokenReview answer, retried as upstream retries.
    async fn review(&self, token: &str, audiences: &[String]) -> Result<Value, String> {
        let mut spec = json!({"token": token});
        if !audiences.is_empty() {
            spec["audiences"] = json!(audiences);
        }
        let review = json!({"apiVersion": self.api_version, "kind": "TokenReview",
                            "metadata": {"creationTimestamp": null}, "spec": spec, "status": {}});
        let body = serde_json::to_vec(&review).unwrap_or_default();
        self.remote.review(body, CALL_TIMEOUT, "token webhook").await
    }
}

/// What a TokenReview answer says, audiences checked.
fn verdict_of(answer: &Value, wanted: &[String], api_audiences: &[String]) -> Verdict {
    let status = &answer["status"];
    if status["authenticated"] != json!(true) {
        let why = status["error"].as_str().filter(|e| !e.is_empty());
        return Err(why.unwrap_or("token not authenticated by the webhook").to_string());
    }
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
            .unwrap_or_default()
    };
    let given = strings(&status["audiences"]);
    let good_for = if given.is_empty() { api_audiences.to_vec() } else { given };
    let audiences: Vec<String> = wanted.iter().filter(|a| good_for.contains(a)).cloned().collect();
    if !wanted.is_empty() && audiences.is_empty() {
        return Err("the token webhook's audiences do not include the ones asked for".into());
    }
    let user = &status["user"];
    let name = user["username"].as_str().unwrap_or("").to_string();
    if name.is_empty() {
        return Err("the token webhook authenticated no user name".into());
    }
    let mut info = UserInfo::authenticated(name, strings(&user["groups"]));
    info.uid = user["uid"].as_str().unwrap_or("").to_string();
    if let Some(extra) = user["extra"].as_object() {
        info.extra = extra.iter().map(|(k, v)| (k.clone(), strings(v))).collect();
    }
    Ok((info, audiences))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_as_upstream_reads_them() {
        let api = vec!["https://kubernetes.default.svc.cluster.local".to_string()];
        let answer = json!({"status": {"authenticated": true, "user": {
            "username": "jane", "uid": "42", "groups": ["dev"], "extra": {"scopes": ["a", "b"]}}}});
        let (user, audiences) = verdict_of(&answer, &api, &api).unwrap();
        assert_eq!(user.name, "jane");
        assert_eq!(user.uid, "42");
        assert_eq!(user.groups, ["dev", "system:authenticated"]);
        assert_eq!(user.extra["scopes"], ["a", "b"]);
        assert_eq!(audiences, api);
        // Audiences the answer names must meet the ones asked for.
        let mut other = answer.clone();
        other["status"]["audiences"] = json!(["https://elsewhere"]);
        assert!(verdict_of(&other, &api, &api).is_err());
        // Refusals carry the webhook's error.
        let refused = json!({"status": {"authenticated": false, "error": "expired"}});
        assert_eq!(verdict_of(&refused, &api, &api).unwrap_err(), "expired");
    }
}
