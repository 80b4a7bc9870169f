//! The authorization layer (upstream's `WithAuthorization` filter): between authentication
//! and the handlers, every request's [`Attributes`] go to the server's authorizer; what it
//! does not allow is answered `403 Forbidden` with upstream's message, and what it allows
//! goes on carrying its parsed [`RequestInfo`] so the handler does not read the path again.
//! The decision and the authorizer's reason go into the request's audit event.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{Attributes, Authorizer};
use crate::auth::UserInfo;
use crate::request::RequestInfo;
use crate::status::ApiError;

/// The audit annotation of the authorizer's decision (`allow` or `forbid`).
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
/// The audit annotation of the authorizer's reason.
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// The layer: asks `authorizer` about the request.
pub async fn authorize(
    State(authorizer): State<Arc<dyn Authorizer>>,
    mut request: Request,
    next: Next,
) -> Response {
    // The audit layer may have read it already.
    let info = match request.extensions_mut().remove::<RequestInfo>() {
        Some(info) => info,
        None => RequestInfo::read(request.method(), request.uri()),
    };
    let refused = {
        let anonymous;
        let user = match request.extensions().get::<UserInfo>() {
            Some(user) => user,
            None => {
                anonymous = UserInfo::anonymous();
                &anonymous
            }
        };
        let path = request.uri().path();
        let attributes =
            Attributes::of_request(user, request.method(), path, &info.query, info.target.as_ref());
        let verdict = authorizer.authorize(&attributes);
        // As upstream's authorization filter: the decision and reason for the audit event.
        if verdict.is_allowed() {
            crate::audit::annotate(DECISION_ANNOTATION, "allow");
            crate::audit::annotate(REASON_ANNOTATION, verdict.reason.as_str());
            None
        } else if let Some(error) = verdict.evaluation_error.as_ref() {
            // An authorizer that could not decide (the webhook unreachable) makes a request
            // nobody allowed a 500, not a 403.
            crate::audit::annotate(REASON_ANNOTATION, "internal error");
            Some(Refusal::Internal(format!(
                "Internal Server Error: {:?}: {error}\n",
                crate::request::request_uri(request.uri())
            )))
        } else {
            crate::audit::annotate(DECISION_ANNOTATION, "forbid");
            crate::audit::annotate(REASON_ANNOTATION, verdict.reason.as_str());
            tracing::debug!(
                user = user.name,
                verb = &*attributes.verb,
                path,
                reason = verdict.reason,
                "Forbidden"
            );
            Some(Refusal::Forbidden(forbidden(&attributes, &verdict.reason)))
        }
    };
    match refused {
        Some(Refusal::Forbidden(error)) => error.into_response(),
        Some(Refusal::Internal(text)) => {
            // As upstream's InternalError: plain text naming the request.
            let mut response = (http::StatusCode::INTERNAL_SERVER_ERROR, text).into_response();
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            response
        }
        None => {
            request.extensions_mut().insert(info);
            next.run(request).await
        }
    }
}

/// Why a request does not go on.
enum Refusal {
    Forbidden(ApiError),
    /// The text of a 500.
    Internal(String),
}

/// Upstream's escaping of the refusal message (it may reach a browser).
fn sanitize(message: &str) -> String {
    message.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// `403 Forbidden` for `a`, worded as kube-apiserver words it:
/// `pods "web" is forbidden: User "jane" cannot get resource "pods" in API group "" in the
/// namespace "default"`, then `: <reason>` when the authorizer gave one.
pub fn forbidden(a: &Attributes<'_>, reason: &str) -> ApiError {
    let user = &a.user.name;
    let mut message = if a.resource_request {
        let resource = if a.subresource.is_empty() {
            a.resource.to_string()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        let scope = if a.namespace.is_empty() {
            " at the cluster scope".to_string()
        } else {
            format!(" in the namespace {:?}", a.namespace)
        };
        sanitize(&format!(
            "User {user:?} cannot {} resource {resource:?} in API group {:?}{scope}",
            a.verb, a.api_group
        ))
    } else {
        sanitize(&format!("User {user:?} cannot {} path {:?}", a.verb, a.path))
    };
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    if !a.resource_request || a.resource.is_empty() {
        return ApiError::forbidden(format!("forbidden: {message}"));
    }
    // upstream's NewForbidden: the group-qualified resource (without subresource), the name.
    let qualified = if a.api_group.is_empty() {
        a.resource.to_string()
    } else {
        format!("{}.{}", a.resource, a.api_group)
    };
    let mut error = if a.name.is_empty() {
        ApiError::forbidden(format!("{qualified} is forbidden: {message}"))
    } else {
        ApiError::forbidden(format!("{qualified} {:?} is forbidden: {message}", a.name))
    };
    if !a.name.is_empty() {
        error.details.name = Some(a.name.to_string());
    }
    error.details.group = Some(a.api_group.to_string());
    error.details.kind = Some(a.resource.to_string());
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn refusal(user: &UserInfo, method: Method, uri: &str, reason: &str) -> serde_json::Value {
        let uri: http::Uri = uri.parse().unwrap();
        let info = RequestInfo::read(&method, &uri);
        let a =
            Attributes::of_request(user, &method, uri.path(), &info.query, info.target.as_ref());
        forbidden(&a, reason).to_status()
    }

    #[test]
    fn refusals_read_as_kube_apiservers() {
        let anonymous = UserInfo::anonymous();
        let status = refusal(&anonymous, Method::GET, "/api/v1/namespaces/default/pods", "");
        assert_eq!(status["code"], 403);
        assert_eq!(status["reason"], "Forbidden");
        assert_eq!(
            status["message"],
            "pods is forbidden: User \"system:anonymous\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
        );
        assert_eq!(status["details"], serde_json::json!({"kind": "pods"}));
        let status =
            refusal(&anonymous, Method::GET, "/apis/apps/v1/namespaces/ns/deployments/d/scale", "");
        assert_eq!(
            status["message"],
            "deployments.apps \"d\" is forbidden: User \"system:anonymous\" cannot get resource \"deployments/scale\" in API group \"apps\" in the namespace \"ns\""
        );
        assert_eq!(
            status["details"],
            serde_json::json!({"name": "d", "group": "apps", "kind": "deployments"})
        );
        let status =
            refusal(&anonymous, Method::DELETE, "/api/v1/nodes", "Everything is forbidden.");
        assert_eq!(
            status["message"],
            "nodes is forbidden: User \"system:anonymous\" cannot deletecollection resource \"nodes\" in API group \"\" at the cluster scope: Everything is forbidden."
        );
        let status = refusal(&anonymous, Method::GET, "/apis", "");
        assert_eq!(
            status["message"],
            "forbidden: User \"system:anonymous\" cannot get path \"/apis\""
        );
        let status = refusal(&anonymous, Method::POST, "/api/a&b", "");
        assert_eq!(
            status["message"],
            "forbidden: User \"system:anonymous\" cannot post path \"/api/a&amp;b\""
        );
    }
}
