//! The resources that are answered rather than stored: `SelfSubjectReview` (`kubectl auth
//! whoami`), the access reviews (`kubectl auth can-i`) and `SelfSubjectRulesReview`
//! (`TokenReview` needs the token authenticator: [`crate::authn::token_review`]). Until RBAC
//! arrives every authenticated user may do everything, and the reviews say so.

use serde_json::{json, Value};

use crate::auth::UserInfo;
use crate::status::ApiResult;
use rkube_apis::resources::ResourceInfo;

/// True for the resources this module answers.
pub fn is_review(info: &ResourceInfo) -> bool {
    matches!(
        (info.group, info.plural),
        ("authentication.k8s.io", "selfsubjectreviews" | "tokenreviews")
            | (
                "authorization.k8s.io",
                "selfsubjectaccessreviews"
                    | "subjectaccessreviews"
                    | "localsubjectaccessreviews"
                    | "selfsubjectrulesreviews"
            )
    )
}

/// The review with its `status` filled in.
pub fn answer(info: &ResourceInfo, user: &UserInfo, mut review: Value) -> ApiResult<Value> {
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
        "selfsubjectrulesreviews" => json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        }),
        _ => {
            // An access review: about the caller (self), or about the user in the spec.
            let subject = review["spec"]["user"].as_str().unwrap_or(&user.name).to_string();
            let allowed = subject != "system:anonymous";
            let reason = if allowed {
                "rkube does not enforce RBAC yet: every authenticated user is allowed"
            } else {
                "anonymous requests are not allowed"
            };
            json!({"allowed": allowed, "reason": reason})
        }
    };
    review["status"] = status;
    Ok(review)
}
