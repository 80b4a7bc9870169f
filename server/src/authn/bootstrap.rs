//! Bootstrap tokens (`--enable-bootstrap-token-auth`), as kube-apiserver's bootstrap token
//! authenticator: a bearer token `<id>.<secret>` (6 and 16 characters of `[a-z0-9]`) is
//! checked against the kube-system Secret `bootstrap-token-<id>` of type
//! `bootstrap.kubernetes.io/token`. It authenticates `system:bootstrap:<id>` in
//! `system:bootstrappers` and the Secret's `auth-extra-groups` when the Secret's `token-id`
//! and `token-secret` match, `usage-bootstrap-authentication` is `"true"`, it is not being
//! deleted and its `expiration` (RFC 3339) has not passed.
//!
//! The Secret is read through [`SecretGetter`] (the watch cache in the server), so the check
//! itself is a pure function of the Secret. Deleting expired tokens (upstream's tokencleaner
//! controller) is not done here; expired ones are refused all the same.

use std::future::Future;

use base64::Engine;
use serde_json::Value;

use crate::auth::UserInfo;

pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
pub const DEFAULT_GROUP: &str = "system:bootstrappers";
const SECRET_PREFIX: &str = "bootstrap-token-";

/// Reads a Secret by namespace and name.
pub trait SecretGetter {
    /// `Ok(None)` when it does not exist; `Err` when it cannot be read.
    fn secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<Value>, String>> + Send;
}

/// Why a bootstrap token was refused (logged; the client sees 401).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Invalid {
    #[error("no Secret kube-system/{0} matches the bootstrap token")]
    NoSecret(String),
    #[error("Secret kube-system/{0} is deleted and awaiting removal")]
    Deleted(String),
    #[error("Secret kube-system/{0} has invalid type {1:?}, expected {SECRET_TYPE:?}")]
    Type(String, String),
    #[error("Secret kube-system/{0} has an invalid value for key {1}")]
    Value(String, &'static str),
    #[error("Secret kube-system/{0} has expired")]
    Expired(String),
    #[error("Secret kube-system/{0} is not marked usage-bootstrap-authentication=true")]
    Usage(String),
    #[error("Secret kube-system/{0} has an invalid value for key auth-extra-groups: bootstrap group {1:?} is invalid (must match \\Asystem:bootstrappers:[a-z0-9:-]{{0,255}}[a-z0-9]\\z)")]
    Group(String, String),
    #[error("cannot read Secret kube-system/{0}: {1}")]
    Read(String, String),
}

/// The id and secret of a token shaped like a bootstrap token.
pub fn parse(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let ok = |s: &str, len: usize| {
        s.len() == len && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    (ok(id, 6) && ok(secret, 16)).then_some((id, secret))
}

/// `Ok(None)`: not a bootstrap token; `Ok(Some(user))`: valid; `Err`: shaped like one and
/// refused.
pub async fn authenticate<G: SecretGetter>(
    getter: &G,
    token: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Option<UserInfo>, Invalid> {
    let Some((id, secret)) = parse(token) else {
        return Ok(None);
    };
    let name = format!("{SECRET_PREFIX}{id}");
    let object = getter
        .secret("kube-system", &name)
        .await
        .map_err(|e| Invalid::Read(name.clone(), e))?
        .ok_or_else(|| Invalid::NoSecret(name.clone()))?;
    check(&object, &name, id, secret, now).map(Some)
}

/// The checks on the Secret, in upstream's order.
fn check(
    object: &Value,
    name: &str,
    id: &str,
    secret: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<UserInfo, Invalid> {
    if !object["metadata"]["deletionTimestamp"].is_null() {
        return Err(Invalid::Deleted(name.into()));
    }
    let kind = object["type"].as_str().unwrap_or("");
    if kind != SECRET_TYPE {
        return Err(Invalid::Type(name.into(), kind.into()));
    }
    let data = |key: &str| -> String {
        object["data"][key]
            .as_str()
            .and_then(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
            .and_then(|v| String::from_utf8(v).ok())
            .unwrap_or_default()
    };
    let stored = data("token-secret");
    if !constant_time_eq(stored.as_bytes(), secret.as_bytes()) {
        return Err(Invalid::Value(name.into(), "token-secret"));
    }
    if data("token-id") != id {
        return Err(Invalid::Value(name.into(), "token-id"));
    }
    let expiration = data("expiration");
    if !expiration.is_empty() {
        // An expiration that does not parse counts as passed, as upstream.
        let expired =
            chrono::DateTime::parse_from_rfc3339(&expiration).map(|t| now > t).unwrap_or(true);
        if expired {
            return Err(Invalid::Expired(name.into()));
        }
    }
    if data("usage-bootstrap-authentication") != "true" {
        return Err(Invalid::Usage(name.into()));
    }
    let mut groups = std::collections::BTreeSet::from([DEFAULT_GROUP.to_string()]);
    let extra = data("auth-extra-groups");
    if !extra.is_empty() {
        for group in extra.split(',') {
            if !valid_group(group) {
                return Err(Invalid::Group(name.into(), group.into()));
            }
            groups.insert(group.to_string());
        }
    }
    Ok(UserInfo::authenticated(format!("system:bootstrap:{id}"), groups.into_iter().collect()))
}

/// Upstream's pattern for extra groups: `system:bootstrappers:` then `[a-z0-9:-]{0,255}`
/// ending in `[a-z0-9]`.
fn valid_group(group: &str) -> bool {
    let Some(rest) = group.strip_prefix("system:bootstrappers:") else {
        return false;
    };
    let body_ok = rest
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-');
    let last_ok = rest.bytes().last().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    body_ok && last_ok && rest.len() <= 256
}

/// Compares secrets in constant time (`openssl::memcmp::eq` needs equal lengths; unequal
/// ones are simply unequal).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && openssl::memcmp::eq(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn secret(extra: &[(&str, &str)]) -> Value {
        let mut data = json!({
            "token-id": b64("abcdef"),
            "token-secret": b64("0123456789abcdef"),
            "usage-bootstrap-authentication": b64("true"),
        });
        for (k, v) in extra {
            data[*k] = json!(b64(v));
        }
        json!({"metadata": {"name": "bootstrap-token-abcdef", "namespace": "kube-system"},
               "type": SECRET_TYPE, "data": data})
    }

    struct One(Option<Value>);

    impl SecretGetter for One {
        async fn secret(&self, namespace: &str, name: &str) -> Result<Option<Value>, String> {
            assert_eq!((namespace, name), ("kube-system", "bootstrap-token-abcdef"));
            Ok(self.0.clone())
        }
    }

    const TOKEN: &str = "abcdef.0123456789abcdef";

    fn run(object: Option<Value>, token: &str) -> Result<Option<UserInfo>, Invalid> {
        let now = chrono::DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z").unwrap().into();
        futures::executor::block_on(authenticate(&One(object), token, now))
    }

    #[test]
    fn only_bootstrap_shaped_tokens_are_looked_up() {
        assert_eq!(parse(TOKEN), Some(("abcdef", "0123456789abcdef")));
        for other in ["abcdef.0123456789abcde", "ABCDEF.0123456789abcdef", "abcdef", "a.b.c"] {
            assert_eq!(parse(other), None, "{other}");
            assert_eq!(run(None, other), Ok(None));
        }
    }

    #[test]
    fn a_valid_token_is_its_bootstrap_user() {
        let user = run(
            Some(secret(&[
                ("expiration", "2030-01-02T00:00:00Z"),
                ("auth-extra-groups", "system:bootstrappers:worker,system:bootstrappers:a-b"),
            ])),
            TOKEN,
        )
        .unwrap()
        .unwrap();
        assert_eq!(user.name, "system:bootstrap:abcdef");
        assert_eq!(
            user.groups,
            [
                "system:bootstrappers",
                "system:bootstrappers:a-b",
                "system:bootstrappers:worker",
                "system:authenticated"
            ]
        );
    }

    #[test]
    fn refusals() {
        let name = || "bootstrap-token-abcdef".to_string();
        assert_eq!(run(None, TOKEN), Err(Invalid::NoSecret(name())));
        assert_eq!(
            run(Some(secret(&[("expiration", "2029-12-31T23:59:59Z")])), TOKEN),
            Err(Invalid::Expired(name()))
        );
        assert_eq!(
            run(Some(secret(&[("expiration", "tomorrow")])), TOKEN),
            Err(Invalid::Expired(name()))
        );
        assert_eq!(
            run(Some(secret(&[("usage-bootstrap-authentication", "false")])), TOKEN),
            Err(Invalid::Usage(name()))
        );
        assert_eq!(
            run(Some(secret(&[])), "abcdef.0123456789abcdee"),
            Err(Invalid::Value(name(), "token-secret"))
        );
        assert_eq!(
            run(Some(secret(&[("token-id", "zzzzzz")])), TOKEN),
            Err(Invalid::Value(name(), "token-id"))
        );
        for bad in ["system:masters", "system:bootstrappers:", "system:bootstrappers:x-", "x"] {
            assert_eq!(
                run(Some(secret(&[("auth-extra-groups", bad)])), TOKEN),
                Err(Invalid::Group(name(), bad.into())),
                "{bad}"
            );
        }
        let mut opaque = secret(&[]);
        opaque["type"] = json!("Opaque");
        assert_eq!(run(Some(opaque), TOKEN), Err(Invalid::Type(name(), "Opaque".into())));
        let mut deleted = secret(&[]);
        deleted["metadata"]["deletionTimestamp"] = json!("2029-01-01T00:00:00Z");
        assert_eq!(run(Some(deleted), TOKEN), Err(Invalid::Deleted(name())));
    }
}
