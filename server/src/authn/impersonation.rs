//! Impersonation, as kube-apiserver's impersonation filter: a caller sends
//! `Impersonate-User`, `Impersonate-Group` (repeated), `Impersonate-Uid` and
//! `Impersonate-Extra-<key>` headers, each is checked with the server's authorizer (verb
//! `impersonate`), and the request goes on as the impersonated user.
//!
//! What is checked, as upstream: `users` (core group) for a user name, `serviceaccounts` in
//! the account's namespace for `system:serviceaccount:<ns>:<name>`, `groups` (core group) for
//! each group, `userextras/<key>` and `uids` in `authentication.k8s.io`. The impersonated user
//! gets `system:authenticated` (or `system:unauthenticated` as `system:anonymous`) unless a
//! given group already says which; a service account without groups given gets its own.
//! The audit event records both: the authenticated user and the one impersonated.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};

use crate::auth::UserInfo;
use crate::authz::{self, Attributes, Authorizer};
use crate::status::ApiError;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// One thing a request asks to act as.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    User(String),
    ServiceAccount { namespace: String, name: String },
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Target {
    /// The attributes the authorizer is asked about: (group, resource, subresource,
    /// namespace, name).
    fn resource(&self) -> (&str, &str, &str, &str, &str) {
        match self {
            Target::User(name) => ("", "users", "", "", name),
            Target::ServiceAccount { namespace, name } => {
                ("", "serviceaccounts", "", namespace, name)
            }
            Target::Group(name) => ("", "groups", "", "", name),
            Target::Extra { key, value } => ("authentication.k8s.io", "userextras", key, "", value),
            Target::Uid(uid) => ("authentication.k8s.io", "uids", "", "", uid),
        }
    }

    fn describe(&self) -> String {
        match self {
            Target::User(name) => format!("user {name:?}"),
            Target::ServiceAccount { namespace, name } => {
                format!("serviceaccount {namespace:?}/{name:?}")
            }
            Target::Group(name) => format!("group {name:?}"),
            Target::Extra { key, value } => format!("userextra {key:?}={value:?}"),
            Target::Uid(uid) => format!("uid {uid:?}"),
        }
    }
}

/// Why impersonation was refused.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// Groups, extras or a uid without a user: upstream answers 500 with this text.
    #[error("requested [{0}] without impersonating a user")]
    NoUser(String),
    /// The authorizer did not allow one of the targets (a `403 Forbidden` Status).
    #[error("{}", .0.message)]
    Forbidden(ApiError),
}

/// The targets of the request's impersonation headers, in upstream's order: the user (or
/// service account), the groups, the extras (keys lower-cased and percent-decoded, in key
/// order), the uid.
fn targets(headers: &HeaderMap) -> Result<Vec<Target>, Refusal> {
    let mut targets = Vec::new();
    let user = headers.get(USER).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !user.is_empty() {
        targets.push(match split_service_account(user) {
            Some((namespace, name)) => Target::ServiceAccount { namespace, name },
            None => Target::User(user.to_string()),
        });
    }
    for group in headers.get_all(GROUP).iter().filter_map(|v| v.to_str().ok()) {
        targets.push(Target::Group(group.to_string()));
    }
    let mut extras: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            // Header names arrive lower-cased; a key that does not decode is kept as sent.
            let key = percent_encoding::percent_decode_str(key)
                .decode_utf8()
                .map(|k| k.into_owned())
                .unwrap_or_else(|_| key.to_string());
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            extras.entry(key).or_default().push(value);
        }
    }
    for (key, values) in extras {
        targets.extend(values.into_iter().map(|value| Target::Extra { key: key.clone(), value }));
    }
    let uid = headers.get(UID).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !uid.is_empty() {
        targets.push(Target::Uid(uid.to_string()));
    }
    if user.is_empty() && !targets.is_empty() {
        let listed: Vec<String> = targets.iter().map(Target::describe).collect();
        return Err(Refusal::NoUser(listed.join(" ")));
    }
    Ok(targets)
}

/// `system:serviceaccount:<ns>:<name>` split, when both parts are there.
fn split_service_account(user: &str) -> Option<(String, String)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (namespace, name) = rest.split_once(':')?;
    if namespace.is_empty() || name.is_empty() || name.contains(':') {
        return None;
    }
    Some((namespace.to_string(), name.to_string()))
}

/// The user `requestor` acts as, when the headers ask for one and `authorizer` allows each
/// part; `Ok(None)` when the request impersonates no one.
pub fn impersonated_user(
    headers: &HeaderMap,
    requestor: &UserInfo,
    authorizer: &dyn Authorizer,
) -> Result<Option<UserInfo>, Refusal> {
    let targets = targets(headers)?;
    if targets.is_empty() {
        return Ok(None);
    }
    // Groups given are the whole list; a service account without them gets its own.
    let groups_given = headers.contains_key(GROUP);
    let mut user = UserInfo {
        name: String::new(),
        uid: String::new(),
        groups: Vec::new(),
        extra: BTreeMap::new(),
    };
    for target in &targets {
        let (api_group, resource, subresource, namespace, name) = target.resource();
        let attributes = Attributes::resource(
            requestor,
            "impersonate",
            api_group,
            resource,
            subresource,
            namespace,
            name,
        );
        let verdict = authorizer.authorize(&attributes);
        if !verdict.is_allowed() {
            tracing::debug!(
                user = requestor.name,
                target = target.describe(),
                reason = verdict.reason,
                "impersonation forbidden"
            );
            return Err(Refusal::Forbidden(authz::forbidden(&attributes, &verdict.reason)));
        }
        match target {
            Target::User(name) => user.name = name.clone(),
            Target::ServiceAccount { namespace, name } => {
                user.name = format!("system:serviceaccount:{namespace}:{name}");
                if !groups_given {
                    user.groups = vec![
                        "system:serviceaccounts".to_string(),
                        format!("system:serviceaccounts:{namespace}"),
                    ];
                }
            }
            Target::Group(group) => user.groups.push(group.clone()),
            Target::Extra { key, value } => {
                user.extra.entry(key.clone()).or_default().push(value.clone())
            }
            Target::Uid(uid) => user.uid = uid.clone(),
        }
    }
    if user.name == "system:anonymous" {
        if !user.in_group("system:unauthenticated") {
            user.groups.push("system:unauthenticated".to_string());
        }
    } else if !user.in_group("system:authenticated") && !user.in_group("system:unauthenticated") {
        user.groups.push("system:authenticated".to_string());
    }
    Ok(Some(user))
}

/// The layer, between authentication and authorization: swaps the request's user for the
/// impersonated one and takes the impersonation headers off.
pub async fn impersonate(
    State(authorizer): State<Arc<dyn Authorizer>>,
    mut request: Request,
    next: Next,
) -> Response {
    let requestor =
        request.extensions().get::<UserInfo>().cloned().unwrap_or_else(UserInfo::anonymous);
    match impersonated_user(request.headers(), &requestor, authorizer.as_ref()) {
        Ok(None) => next.run(request).await,
        Ok(Some(user)) => {
            tracing::debug!(user = requestor.name, as_user = user.name, "impersonating");
            let headers = request.headers_mut();
            let names: Vec<http::HeaderName> = headers
                .keys()
                .filter(|n| {
                    let n = n.as_str();
                    n == USER || n == GROUP || n == UID || n.starts_with(EXTRA_PREFIX)
                })
                .cloned()
                .collect();
            for name in names {
                headers.remove(name);
            }
            crate::audit::impersonated(&user);
            request.extensions_mut().insert(user);
            next.run(request).await
        }
        Err(Refusal::Forbidden(error)) => error.into_response(),
        Err(refusal @ Refusal::NoUser(_)) => {
            // As upstream's InternalError: plain text naming the request.
            let text = format!(
                "Internal Server Error: {:?}: {refusal}\n",
                crate::request::request_uri(request.uri())
            );
            let mut response = (StatusCode::INTERNAL_SERVER_ERROR, text).into_response();
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{Decision, Rules, Verdict};

    /// Allows `impersonate` on what is listed as `resource/subresource:name`.
    struct Allows(Vec<&'static str>);

    impl Authorizer for Allows {
        fn authorize(&self, a: &Attributes<'_>) -> Verdict {
            assert_eq!(a.verb, "impersonate");
            let what = if a.subresource.is_empty() {
                format!("{}:{}:{}", a.api_group, a.resource, a.name)
            } else {
                format!("{}:{}/{}:{}", a.api_group, a.resource, a.subresource, a.name)
            };
            let what =
                if a.namespace.is_empty() { what } else { format!("{}@{what}", a.namespace) };
            if self.0.contains(&what.as_str()) {
                Verdict::allow()
            } else {
                Verdict {
                    decision: Decision::NoOpinion,
                    reason: String::new(),
                    evaluation_error: None,
                }
            }
        }
        fn rules_for(&self, _: &UserInfo, _: &str) -> Rules {
            Rules::default()
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    fn bob() -> UserInfo {
        UserInfo::authenticated("bob".into(), vec![])
    }

    #[test]
    fn no_headers_no_impersonation() {
        assert!(matches!(impersonated_user(&HeaderMap::new(), &bob(), &Allows(vec![])), Ok(None)));
    }

    #[test]
    fn user_groups_extras_and_uid_each_checked() {
        let h = headers(&[
            ("Impersonate-User", "jane"),
            ("Impersonate-Group", "devs"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-Extra-Scopes%2Fa", "view"),
            ("Impersonate-Uid", "u-1"),
        ]);
        let all = vec![
            ":users:jane",
            ":groups:devs",
            ":groups:ops",
            "authentication.k8s.io:userextras/scopes/a:view",
            "authentication.k8s.io:uids:u-1",
        ];
        let user = impersonated_user(&h, &bob(), &Allows(all.clone())).unwrap().unwrap();
        assert_eq!(user.name, "jane");
        assert_eq!(user.uid, "u-1");
        assert_eq!(user.groups, ["devs", "ops", "system:authenticated"]);
        assert_eq!(user.extra["scopes/a"], ["view"]);
        for missing in &all {
            let fewer: Vec<&str> = all.iter().copied().filter(|a| a != missing).collect();
            let refusal = impersonated_user(&h, &bob(), &Allows(fewer)).unwrap_err();
            assert!(
                matches!(refusal, Refusal::Forbidden(ref e) if e.code == StatusCode::FORBIDDEN),
                "{missing}"
            );
        }
    }

    #[test]
    fn refusals_use_upstreams_message() {
        let h = headers(&[("Impersonate-User", "jane")]);
        let Refusal::Forbidden(e) = impersonated_user(&h, &bob(), &Allows(vec![])).unwrap_err()
        else {
            panic!()
        };
        assert_eq!(
            e.message,
            "users \"jane\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
        );
    }

    #[test]
    fn service_accounts_are_checked_in_their_namespace_and_get_their_groups() {
        let h = headers(&[("Impersonate-User", "system:serviceaccount:ns1:bot")]);
        let user = impersonated_user(&h, &bob(), &Allows(vec!["ns1@:serviceaccounts:bot"]))
            .unwrap()
            .unwrap();
        assert_eq!(user.name, "system:serviceaccount:ns1:bot");
        assert_eq!(
            user.groups,
            ["system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"]
        );
        // Groups given replace the account's.
        let h = headers(&[
            ("Impersonate-User", "system:serviceaccount:ns1:bot"),
            ("Impersonate-Group", "system:unauthenticated"),
        ]);
        let allow = Allows(vec!["ns1@:serviceaccounts:bot", ":groups:system:unauthenticated"]);
        let user = impersonated_user(&h, &bob(), &allow).unwrap().unwrap();
        assert_eq!(user.groups, ["system:unauthenticated"]);
    }

    #[test]
    fn anonymous_gets_unauthenticated() {
        let h = headers(&[("Impersonate-User", "system:anonymous")]);
        let user = impersonated_user(&h, &bob(), &Allows(vec![":users:system:anonymous"]))
            .unwrap()
            .unwrap();
        assert_eq!(user.groups, ["system:unauthenticated"]);
    }

    #[test]
    fn groups_extras_or_uid_without_a_user_are_refused() {
        for h in [
            headers(&[("Impersonate-Group", "g")]),
            headers(&[("Impersonate-Extra-k", "v")]),
            headers(&[("Impersonate-Uid", "1")]),
            headers(&[("Impersonate-User", ""), ("Impersonate-Group", "g")]),
        ] {
            let refusal = impersonated_user(&h, &bob(), &Allows(vec![])).unwrap_err();
            assert!(matches!(refusal, Refusal::NoUser(_)), "{h:?}");
            assert!(refusal.to_string().ends_with("without impersonating a user"));
        }
    }
}
