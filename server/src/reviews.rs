//! The resources that are answered rather than stored: `SelfSubjectReview` (`kubectl auth
//! whoami`), the access reviews (`kubectl auth can-i`) and `SelfSubjectRulesReview`
//! (`kubectl auth can-i --list`); `TokenReview` needs the token authenticator:
//! [`crate::authn::token_review`]. The access reviews and the rules review ask the server's
//! own authorizer ([`crate::authz`]), so they answer what a request would get.

use rkube_apis::validation::FieldError;
use serde_json::{json, Value};

use crate::auth::UserInfo;
use crate::authz::{Attributes, Authorizer, Verdict};
use crate::status::{ApiError, ApiResult};
use rkube_apis::resources::ResourceInfo;

const GROUP: &str = "authorization.k8s.io";

/// The review with its `status` filled in; `namespace` is the request's (for
/// `LocalSubjectAccessReview`).
pub fn answer(
    authorizer: &dyn Authorizer,
    info: &ResourceInfo,
    user: &UserInfo,
    namespace: Option<&str>,
    mut review: Value,
) -> ApiResult<Value> {
    review["apiVersion"] = json!(info.api_version());
    review["kind"] = json!(info.kind);
    if !review["metadata"].is_object() {
        review["metadata"] = json!({});
    }
    review["metadata"]["creationTimestamp"] = Value::Null;
    let status = match info.plural {
        "selfsubjectreviews" => {
            let mut info = json!({"username": user.name, "groups": user.groups});
            if !user.uid.is_empty() {
                info["uid"] = json!(user.uid);
            }
            if !user.extra.is_empty() {
                info["extra"] = json!(user.extra);
            }
            json!({"userInfo": info})
        }
        "selfsubjectrulesreviews" => {
            let namespace = review["spec"]["namespace"].as_str().unwrap_or("");
            if namespace.is_empty() {
                return Err(ApiError::bad_request("no namespace on request"));
            }
            authorizer.rules_for(user, namespace).to_status()
        }
        "selfsubjectaccessreviews" => {
            check(info.kind, attribute_problems(&review["spec"]))?;
            access_status(&authorizer.authorize(&Attributes::of_review(user, &review["spec"])))
        }
        "subjectaccessreviews" | "localsubjectaccessreviews" => {
            let mut problems = attribute_problems(&review["spec"]);
            let name = review["spec"]["user"].as_str().unwrap_or("").to_string();
            let groups = strings(&review["spec"]["groups"]);
            if name.is_empty() && groups.is_empty() {
                problems.push(FieldError::invalid(
                    "spec.user",
                    &json!(name),
                    "at least one of user or group must be specified",
                ));
            }
            if info.plural == "localsubjectaccessreviews" {
                local_problems(&mut review, namespace, &mut problems)?;
            }
            check(info.kind, problems)?;
            let spec = &review["spec"];
            let subject = UserInfo {
                name,
                uid: spec["uid"].as_str().unwrap_or("").to_string(),
                groups,
                extra: spec["extra"]
                    .as_object()
                    .map(|extra| extra.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
                    .unwrap_or_default(),
            };
            access_status(&authorizer.authorize(&Attributes::of_review(&subject, spec)))
        }
        _ => return Err(ApiError::path_not_found()),
    };
    review["status"] = status;
    Ok(review)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|items| items.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default()
}

fn present(v: &Value) -> bool {
    v.is_object()
}

/// An access review asks about a resource or a path: exactly one.
fn attribute_problems(spec: &Value) -> Vec<FieldError> {
    let resource = &spec["resourceAttributes"];
    let path = &spec["nonResourceAttributes"];
    match (present(resource), present(path)) {
        (true, true) => vec![FieldError::invalid(
            "spec.nonResourceAttributes",
            path,
            "cannot be specified in combination with resourceAttributes",
        )],
        // upstream prints the missing attributes as "null".
        (false, false) => vec![FieldError::invalid(
            "spec.resourceAttributes",
            &json!("null"),
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )],
        _ => Vec::new(),
    }
}

/// A `LocalSubjectAccessReview` is about its own namespace: the request's, which
/// `metadata.namespace` takes (or must match), and which the resource attributes must name.
fn local_problems(
    review: &mut Value,
    namespace: Option<&str>,
    problems: &mut Vec<FieldError>,
) -> ApiResult<()> {
    let namespace = namespace.unwrap_or("");
    match review["metadata"]["namespace"].as_str() {
        None | Some("") => review["metadata"]["namespace"] = json!(namespace),
        Some(ns) if ns != namespace => return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        Some(_) => {}
    }
    let spec = &review["spec"];
    if present(&spec["resourceAttributes"]) {
        let asked = spec["resourceAttributes"]["namespace"].as_str().unwrap_or("");
        if asked != namespace {
            problems.push(FieldError::invalid(
                "spec.resourceAttributes.namespace",
                &json!(asked),
                "must match metadata.namespace",
            ));
        }
    }
    if present(&spec["nonResourceAttributes"]) {
        problems.push(FieldError::invalid(
            "spec.nonResourceAttributes",
            &spec["nonResourceAttributes"],
            "disallowed on this kind of request",
        ));
    }
    Ok(())
}

fn check(kind: &str, problems: Vec<FieldError>) -> ApiResult<()> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(GROUP, kind, "", problems))
    }
}

/// An access review's `status`, as upstream fills it: `allowed` always, `denied`, `reason`
/// and `evaluationError` when they say something.
fn access_status(verdict: &Verdict) -> Value {
    let mut status = json!({"allowed": verdict.is_allowed()});
    if verdict.decision == crate::authz::Decision::Deny {
        status["denied"] = json!(true);
    }
    if !verdict.reason.is_empty() {
        status["reason"] = json!(verdict.reason);
    }
    if let Some(error) = verdict.evaluation_error.as_ref().filter(|e| !e.is_empty()) {
        status["evaluationError"] = json!(error);
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::modes::{chain, Mode, Sources};

    fn resource(plural: &str) -> &'static ResourceInfo {
        rkube_apis::resources::Resources::builtin()
            .get(GROUP, "v1", plural)
            .expect("a built-in review")
    }

    fn ask(
        modes: &[Mode],
        plural: &str,
        user: &UserInfo,
        ns: Option<&str>,
        review: Value,
    ) -> ApiResult<Value> {
        answer(&chain(modes, &Sources::empty()), resource(plural), user, ns, review)
    }

    #[test]
    fn access_reviews_ask_the_authorizer_about_their_subject() {
        let admin = UserInfo::authenticated("system:admin".into(), vec!["system:masters".into()]);
        let pods = json!({"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}});
        let sar = |user: &str| json!({"spec": {"user": user, "resourceAttributes": pods["resourceAttributes"]}});
        let status = |modes: &[Mode], body: Value| {
            ask(modes, "subjectaccessreviews", &admin, None, body).unwrap()["status"].clone()
        };
        assert_eq!(status(&[Mode::AllowAuthenticated], sar("jane")), json!({"allowed": true}));
        assert_eq!(
            status(&[Mode::AllowAuthenticated], sar("system:anonymous")),
            json!({"allowed": false})
        );
        assert_eq!(
            status(&[Mode::AlwaysDeny], sar("jane")),
            json!({"allowed": false, "reason": "Everything is forbidden."})
        );
        // The subject's groups count, not the caller's.
        let masters = json!({"spec": {"user": "x", "groups": ["system:masters"], "resourceAttributes": pods["resourceAttributes"]}});
        assert_eq!(status(&[Mode::AlwaysDeny], masters), json!({"allowed": true}));
        // Self: about the caller.
        let jane = UserInfo::authenticated("jane".into(), vec![]);
        let ssar = ask(
            &[Mode::AlwaysDeny],
            "selfsubjectaccessreviews",
            &jane,
            None,
            json!({"spec": pods}),
        )
        .unwrap();
        assert_eq!(ssar["status"], json!({"allowed": false, "reason": "Everything is forbidden."}));
        assert_eq!(ssar["kind"], "SelfSubjectAccessReview");
    }

    #[test]
    fn access_reviews_are_validated_as_upstream() {
        let admin = UserInfo::authenticated("system:admin".into(), vec!["system:masters".into()]);
        let e =
            ask(&[Mode::AlwaysAllow], "subjectaccessreviews", &admin, None, json!({"spec": {}}))
                .unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: [spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid value: \"\": at least one of user or group must be specified]"
        );
        let e = ask(
            &[Mode::AlwaysAllow],
            "selfsubjectaccessreviews",
            &admin,
            None,
            json!({"spec": {}}),
        )
        .unwrap_err();
        assert_eq!(e.code, 422);
        let local = json!({"spec": {"user": "jane", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "other"}}});
        let e = ask(&[Mode::AlwaysAllow], "localsubjectaccessreviews", &admin, Some("ns"), local)
            .unwrap_err();
        assert!(e.message.contains("spec.resourceAttributes.namespace: Invalid value: \"other\": must match metadata.namespace"), "{}", e.message);
        let local = json!({"spec": {"user": "jane", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "ns"}}});
        let ok = ask(&[Mode::AlwaysAllow], "localsubjectaccessreviews", &admin, Some("ns"), local)
            .unwrap();
        assert_eq!(
            (ok["metadata"]["namespace"].as_str(), &ok["status"]),
            (Some("ns"), &json!({"allowed": true}))
        );
    }

    #[test]
    fn rules_reviews_list_the_authorizers_rules() {
        let jane = UserInfo::authenticated("jane".into(), vec![]);
        let review = json!({"spec": {"namespace": "default"}});
        let status = ask(
            &[Mode::AllowAuthenticated],
            "selfsubjectrulesreviews",
            &jane,
            None,
            review.clone(),
        )
        .unwrap()["status"]
            .clone();
        assert_eq!(
            status,
            json!({
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": false,
            })
        );
        let status = ask(&[Mode::AlwaysDeny], "selfsubjectrulesreviews", &jane, None, review)
            .unwrap()["status"]
            .clone();
        assert_eq!(
            status,
            json!({"resourceRules": [], "nonResourceRules": [], "incomplete": false})
        );
        let e =
            ask(&[Mode::AlwaysDeny], "selfsubjectrulesreviews", &jane, None, json!({"spec": {}}))
                .unwrap_err();
        assert_eq!((e.code.as_u16(), e.message.as_str()), (400, "no namespace on request"));
    }
}
