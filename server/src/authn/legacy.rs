//! Legacy service-account tokens: the never-expiring JWTs (issuer
//! `kubernetes/serviceaccount`) the token controller writes into Secrets of type
//! `kubernetes.io/service-account-token`, accepted as kube-apiserver's legacy validator
//! does. The signature is checked by [`jwt::Verifier`](super::jwt::Verifier) like any
//! token's; [`validate`] then wants the claims complete, the Secret to still hold exactly this
//! token (and not be marked invalid), and the account to exist with the token's uid. A token
//! in use gets its Secret labelled with the day (`kubernetes.io/legacy-token-last-used`), at
//! most once a day, as upstream tracks them.

use std::collections::BTreeMap;
use std::future::Future;

use base64::Engine;

pub use rkube_certs::jose::{LegacyClaims, LEGACY_ISSUER};

use super::jwt::{ObjectGetter, ObjectKind, ServiceAccountInfo};

/// The label upstream records a legacy token's last day of use in.
pub const LAST_USED_LABEL: &str = "kubernetes.io/legacy-token-last-used";
/// The label that marks a legacy token invalid (upstream's token cleaner sets it).
pub const INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";

/// What validation needs of a token Secret.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TokenSecret {
    pub uid: String,
    pub deleting: bool,
    /// `data.token`, decoded.
    pub token: Vec<u8>,
    pub labels: BTreeMap<String, String>,
}

impl TokenSecret {
    /// From a Secret's JSON.
    pub fn of(obj: &serde_json::Value) -> TokenSecret {
        let meta = &obj["metadata"];
        let token = obj["data"]["token"].as_str().unwrap_or("");
        TokenSecret {
            uid: meta["uid"].as_str().unwrap_or("").to_string(),
            deleting: !meta["deletionTimestamp"].is_null(),
            token: base64::engine::general_purpose::STANDARD.decode(token).unwrap_or_default(),
            labels: serde_json::from_value(meta["labels"].clone()).unwrap_or_default(),
        }
    }
}

/// Reads and labels token Secrets.
pub trait SecretAccess {
    /// `Ok(None)` when the Secret does not exist.
    fn token_secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<TokenSecret>, String>> + Send;
    /// Sets [`LAST_USED_LABEL`] to `day` on the Secret with this uid (best effort).
    fn mark_used(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        day: &str,
    ) -> impl Future<Output = ()> + Send;
}

/// The claims of a token whose signature was already checked.
pub fn claims(token: &str) -> Result<LegacyClaims, String> {
    let payload = token.split('.').nth(1).ok_or("malformed token")?;
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|e| e.to_string())?;
    serde_json::from_slice(&payload).map_err(|e| e.to_string())
}

/// Upstream's legacy validator (its messages); `today` is the UTC day (`YYYY-MM-DD`) and
/// `tomorrow` the next, either of which counts as a fresh last-used label.
pub async fn validate<G: ObjectGetter + SecretAccess>(
    getter: &G,
    token: &str,
    claims: &LegacyClaims,
    today: &str,
    tomorrow: &str,
) -> Result<ServiceAccountInfo, String> {
    let required = [
        (claims.sub.as_str(), "sub claim is missing"),
        (&claims.namespace, "namespace claim is missing"),
        (&claims.secret_name, "secretName claim is missing"),
        (&claims.service_account_name, "serviceAccountName claim is missing"),
        (&claims.service_account_uid, "serviceAccountUID claim is missing"),
    ];
    if let Some((_, missing)) = required.iter().find(|(value, _)| value.is_empty()) {
        return Err(missing.to_string());
    }
    let (namespace, account) = (&claims.namespace, &claims.service_account_name);
    if claims.sub != super::jwt::username(namespace, account) {
        return Err("sub claim is invalid".into());
    }
    const INVALIDATED: &str = "Token has been invalidated";
    let secret = getter.token_secret(namespace, &claims.secret_name).await;
    let secret = secret.ok().flatten().ok_or(INVALIDATED)?;
    if secret.deleting {
        return Err(INVALIDATED.into());
    }
    // In constant time, as upstream compares.
    if secret.token.len() != token.len() || !openssl::memcmp::eq(&secret.token, token.as_bytes()) {
        return Err("Token does not match server's copy".into());
    }
    let live = getter
        .get(ObjectKind::ServiceAccount, namespace, account)
        .await?
        .ok_or_else(|| format!("serviceaccounts {account:?} not found"))?;
    if live.deletion.is_some() {
        return Err(format!("ServiceAccount {namespace}/{account} has been deleted"));
    }
    if live.uid != claims.service_account_uid {
        return Err(format!(
            "ServiceAccount UID ({}) does not match claim ({})",
            live.uid, claims.service_account_uid
        ));
    }
    let last_used = secret.labels.get(LAST_USED_LABEL).map(String::as_str);
    let fresh = last_used == Some(today) || last_used == Some(tomorrow);
    let invalid = secret.labels.get(INVALID_SINCE_LABEL).is_some_and(|v| !v.is_empty());
    if !fresh {
        getter.mark_used(namespace, &claims.secret_name, &secret.uid, today).await;
    }
    if invalid {
        return Err(format!(
            "the token in secret {namespace}/{} for service account {namespace}/{account} has \
             been marked invalid. Use tokens from the TokenRequest API or manually created \
             secret-based tokens, or remove the '{INVALID_SINCE_LABEL}' label from the secret \
             to temporarily allow use of this token",
            claims.secret_name
        ));
    }
    Ok(ServiceAccountInfo {
        namespace: namespace.clone(),
        name: account.clone(),
        uid: claims.service_account_uid.clone(),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authn::jwt::LiveObject;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Cluster {
        account: Option<LiveObject>,
        secret: Option<TokenSecret>,
        marked: Mutex<Vec<String>>,
    }

    impl ObjectGetter for Cluster {
        async fn get(&self, _: ObjectKind, _: &str, _: &str) -> Result<Option<LiveObject>, String> {
            Ok(self.account.clone())
        }
    }

    impl SecretAccess for Cluster {
        async fn token_secret(&self, _: &str, _: &str) -> Result<Option<TokenSecret>, String> {
            Ok(self.secret.clone())
        }
        async fn mark_used(&self, _: &str, _: &str, uid: &str, day: &str) {
            self.marked.lock().unwrap().push(format!("{uid} {day}"));
        }
    }

    const TOKEN: &str = "header.payload.signature";

    fn cluster() -> Cluster {
        Cluster {
            account: Some(LiveObject { uid: "sa-uid".into(), deletion: None }),
            secret: Some(TokenSecret {
                uid: "secret-uid".into(),
                token: TOKEN.as_bytes().to_vec(),
                ..Default::default()
            }),
            marked: Mutex::default(),
        }
    }

    async fn check(c: &Cluster, claims: &LegacyClaims) -> Result<ServiceAccountInfo, String> {
        validate(c, TOKEN, claims, "2026-11-28", "2026-11-29").await
    }

    #[tokio::test]
    async fn a_live_token_speaks_for_its_account_and_is_marked_used_once_a_day() {
        let claims = LegacyClaims::new("ns", "builder", "sa-uid", "builder-token");
        let c = cluster();
        let info = check(&c, &claims).await.unwrap();
        assert_eq!(
            (info.namespace.as_str(), info.name.as_str(), info.uid.as_str()),
            ("ns", "builder", "sa-uid")
        );
        assert_eq!(info.credential_id, "", "upstream gives legacy tokens no credential id");
        assert_eq!(*c.marked.lock().unwrap(), vec!["secret-uid 2026-11-28".to_string()]);
        let mut used = cluster();
        used.secret.as_mut().unwrap().labels.insert(LAST_USED_LABEL.into(), "2026-11-28".into());
        check(&used, &claims).await.unwrap();
        assert!(used.marked.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn gone_changed_or_forged_tokens_are_refused_with_upstreams_messages() {
        let claims = LegacyClaims::new("ns", "builder", "sa-uid", "builder-token");
        let no_secret = Cluster { secret: None, ..cluster() };
        assert_eq!(check(&no_secret, &claims).await.unwrap_err(), "Token has been invalidated");
        let mut other = cluster();
        other.secret.as_mut().unwrap().token = b"header.payload.signaturf".to_vec();
        assert_eq!(check(&other, &claims).await.unwrap_err(), "Token does not match server's copy");
        let no_account = Cluster { account: None, ..cluster() };
        assert!(check(&no_account, &claims).await.is_err());
        let wrong_uid = LegacyClaims::new("ns", "builder", "old-uid", "builder-token");
        assert_eq!(
            check(&cluster(), &wrong_uid).await.unwrap_err(),
            "ServiceAccount UID (sa-uid) does not match claim (old-uid)"
        );
        let mut forged = claims.clone();
        forged.sub = "system:serviceaccount:kube-system:admin".into();
        assert_eq!(check(&cluster(), &forged).await.unwrap_err(), "sub claim is invalid");
        let mut bare = claims.clone();
        bare.secret_name.clear();
        assert_eq!(check(&cluster(), &bare).await.unwrap_err(), "secretName claim is missing");
        let mut invalid = cluster();
        invalid
            .secret
            .as_mut()
            .unwrap()
            .labels
            .insert(INVALID_SINCE_LABEL.into(), "2026-01-01".into());
        assert!(check(&invalid, &claims).await.unwrap_err().contains("has been marked invalid"));
    }

    #[test]
    fn secrets_are_read_from_their_json() {
        let s = TokenSecret::of(&serde_json::json!({
            "metadata": {"uid": "u", "labels": {"a": "b"}},
            "data": {"token": "dG9r"},
        }));
        assert_eq!(s.token, b"tok");
        assert_eq!(s.labels.get("a").map(String::as_str), Some("b"));
        assert!(!s.deleting);
    }
}
