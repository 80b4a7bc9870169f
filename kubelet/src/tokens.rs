//! The kubelet's service-account token manager, as upstream's `pkg/kubelet/token`: the
//! tokens of projected `serviceAccountToken` volumes come from the TokenRequest API
//! (`serviceaccounts/<name>/token`), bound to their pod, and are cached per service account,
//! audience, lifetime and pod, so that a sync does not ask for a new token each time.
//!
//! A cached token is renewed once less than 20% of its lifetime is left or it is older than
//! 24 hours ([`requires_refresh`], with up to 10 s of jitter so that pods do not all renew at
//! once). A failed renewal keeps the old token while it is still valid. A pod's tokens are
//! forgotten with the pod ([`TokenManager::forget_pod`]), expired ones on the next request.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, PostParams};
use kube::Client;

/// Tokens older than this are renewed whatever their lifetime.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 3600);

/// At most this much earlier than the rule says.
const MAX_JITTER_SECONDS: u64 = 10;

/// What a token is for: its cache key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TokenKey {
    pub namespace: String,
    pub service_account: String,
    /// Empty: the API server's own audiences.
    pub audiences: Vec<String>,
    pub expiration_seconds: i64,
    pub pod_name: String,
    pub pod_uid: String,
}

impl std::fmt::Display for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?}/{:?}/{:?}/{}/Pod/{:?}/{:?}",
            self.namespace,
            self.service_account,
            self.audiences,
            self.expiration_seconds,
            self.pod_name,
            self.pod_uid
        )
    }
}

/// A token the API server gave, with what the refresh rule needs.
#[derive(Clone, Debug)]
pub struct Cached {
    pub token: String,
    pub expires: DateTime<Utc>,
    /// The lifetime asked for (`spec.expirationSeconds` of the answer).
    pub expiration_seconds: i64,
}

/// Upstream's rule: renew when the token is older than 24 hours, or when less than 20% of
/// its lifetime is left; `jitter` earlier.
pub fn requires_refresh(now: DateTime<Utc>, token: &Cached, jitter: Duration) -> bool {
    let lifetime = chrono::Duration::seconds(token.expiration_seconds);
    let jitter = chrono::Duration::from_std(jitter).unwrap_or_default();
    let issued = token.expires - lifetime;
    let max_ttl = chrono::Duration::from_std(MAX_TTL).unwrap_or_default();
    if now > issued + max_ttl - jitter {
        return true;
    }
    let margin = chrono::Duration::seconds(token.expiration_seconds * 20 / 100);
    now > token.expires - margin - jitter
}

/// A few seconds, different from call to call (no cryptographic quality needed).
fn jitter() -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    Duration::from_secs(u64::from(nanos) % (MAX_JITTER_SECONDS + 1))
}

/// The kubelet's tokens (one manager per kubelet, shared by its pod workers).
#[derive(Default)]
pub struct TokenManager {
    cache: Mutex<HashMap<TokenKey, Cached>>,
}

impl TokenManager {
    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<TokenKey, Cached>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The token for `key`: the cached one unless it needs renewing, else a new one from
    /// the TokenRequest API. Errors read as upstream's (`failed to fetch token: ...`).
    pub async fn token(&self, client: &Client, key: &TokenKey) -> Result<String, String> {
        let now = Utc::now();
        let cached = {
            let mut cache = self.cache();
            cache.retain(|_, c| c.expires > now);
            cache.get(key).cloned()
        };
        if let Some(c) = cached.as_ref().filter(|c| !requires_refresh(now, c, jitter())) {
            return Ok(c.token.clone());
        }
        match request(client, key).await {
            Ok(fresh) => {
                let token = fresh.token.clone();
                self.cache().insert(key.clone(), fresh);
                Ok(token)
            }
            Err(e) => match cached {
                None => Err(format!("failed to fetch token: {e}")),
                Some(c) if Utc::now() > c.expires => {
                    Err(format!("token {key} expired and refresh failed: {e}"))
                }
                Some(c) => {
                    tracing::warn!(%key, error = %e, "cannot renew a service-account token; using the current one");
                    Ok(c.token)
                }
            },
        }
    }

    /// Forgets the tokens bound to a pod that is gone.
    pub fn forget_pod(&self, uid: &str) {
        self.cache().retain(|k, _| k.pod_uid != uid);
    }

    /// How many tokens are cached.
    pub fn len(&self) -> usize {
        self.cache().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Puts a token in the cache (tests).
    #[cfg(test)]
    fn insert(&self, key: TokenKey, token: Cached) {
        self.cache().insert(key, token);
    }
}

/// One TokenRequest, bound to the pod.
async fn request(client: &Client, key: &TokenKey) -> Result<Cached, String> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), &key.namespace);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: key.audiences.clone(),
            expiration_seconds: Some(key.expiration_seconds),
            bound_object_ref: Some(BoundObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some(key.pod_name.clone()),
                uid: Some(key.pod_uid.clone()),
            }),
        },
        ..Default::default()
    };
    let answer = api
        .create_token_request(&key.service_account, &PostParams::default(), &request)
        .await
        .map_err(|e| match e {
            kube::Error::Api(status) => status.message.clone(),
            other => other.to_string(),
        })?;
    let status = answer.status.ok_or("no token in the server's answer")?;
    if status.token.is_empty() {
        return Err("no token in the server's answer".into());
    }
    Ok(Cached {
        token: status.token,
        expires: DateTime::from_timestamp(status.expiration_timestamp.0.as_second(), 0)
            .ok_or("the token's expiration is out of range")?,
        expiration_seconds: answer.spec.expiration_seconds.unwrap_or(key.expiration_seconds),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(issued: DateTime<Utc>, seconds: i64) -> Cached {
        Cached {
            token: "t".into(),
            expires: issued + chrono::Duration::seconds(seconds),
            expiration_seconds: seconds,
        }
    }

    #[test]
    fn tokens_are_renewed_at_80_percent_of_their_life_or_after_a_day() {
        let t0 = Utc::now();
        let s = chrono::Duration::seconds;
        let hour = token(t0, 3600);
        let none = Duration::ZERO;
        assert!(!requires_refresh(t0, &hour, none));
        assert!(!requires_refresh(t0 + s(2880), &hour, none), "exactly 80%");
        assert!(requires_refresh(t0 + s(2881), &hour, none), "past 80%");
        // Jitter makes it come a little earlier.
        assert!(requires_refresh(t0 + s(2875), &hour, Duration::from_secs(10)));
        // A ten-minute token: after eight minutes.
        let short = token(t0, 600);
        assert!(!requires_refresh(t0 + s(479), &short, none));
        assert!(requires_refresh(t0 + s(481), &short, none));
        // A token for a week: after 24 hours, long before 80%.
        let week = token(t0, 7 * 24 * 3600);
        assert!(!requires_refresh(t0 + s(24 * 3600 - 1), &week, none));
        assert!(requires_refresh(t0 + s(24 * 3600 + 1), &week, none));
        // An expired token, of course.
        assert!(requires_refresh(t0 + s(3601), &hour, none));
        assert!(jitter() <= Duration::from_secs(MAX_JITTER_SECONDS));
    }

    fn key(pod_uid: &str) -> TokenKey {
        TokenKey {
            namespace: "default".into(),
            service_account: "bot".into(),
            audiences: vec![],
            expiration_seconds: 3600,
            pod_name: "web".into(),
            pod_uid: pod_uid.into(),
        }
    }

    /// A client for an address nothing listens on (a failed renewal).
    fn unreachable_client() -> Client {
        let config = kube::Config::new("https://127.0.0.1:1".parse().unwrap());
        Client::try_from(config).unwrap()
    }

    #[tokio::test]
    async fn fresh_tokens_come_from_the_cache_and_a_failed_renewal_keeps_a_valid_one() {
        let manager = TokenManager::default();
        let client = unreachable_client();
        let now = Utc::now();
        manager.insert(key("a"), token(now, 3600));
        assert_eq!(manager.token(&client, &key("a")).await.unwrap(), "t");
        // Due for renewal, the API unreachable: the current token is still good.
        manager.insert(key("b"), token(now - chrono::Duration::seconds(3500), 3600));
        assert_eq!(manager.token(&client, &key("b")).await.unwrap(), "t");
        // Nothing cached: the error says why.
        let err = manager.token(&client, &key("c")).await.unwrap_err();
        assert!(err.starts_with("failed to fetch token: "), "{err}");
        // Expired tokens go; a pod's tokens go with it.
        manager.insert(key("d"), token(now - chrono::Duration::seconds(7200), 3600));
        let _ = manager.token(&client, &key("c")).await;
        assert_eq!(manager.len(), 2);
        manager.forget_pod("a");
        assert_eq!(manager.len(), 1);
        manager.forget_pod("b");
        assert!(manager.is_empty());
    }
}
