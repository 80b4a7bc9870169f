//! API errors, and how they reach the client: a `metav1.Status` with the reason, code,
//! details and causes kube-apiserver would send.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{json, Value};

/// One cause of an `Invalid` error: which field, what is wrong.
pub use rkube_apis::validation::FieldError as Cause;

/// An error answered as a `Status`.
#[derive(Clone, Debug)]
pub struct ApiError {
    pub code: StatusCode,
    pub reason: &'static str,
    pub message: String,
    /// `details` of the Status (boxed: errors travel in every `Result` of the server).
    pub details: Box<Details>,
}

/// The `details` of a Status.
#[derive(Clone, Debug, Default)]
pub struct Details {
    /// The object's name, group and kind (the resource, for most errors).
    pub name: Option<String>,
    pub group: Option<String>,
    pub kind: Option<String>,
    pub causes: Vec<Cause>,
    pub retry_after: Option<u32>,
    /// `metadata.continue` of the Status (an expired list's inconsistent continuation).
    pub continue_token: Option<String>,
}

impl ApiError {
    pub fn new(code: StatusCode, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { code, reason, message: message.into(), details: Box::default() }
    }

    fn details(mut self, name: &str, group: &str, kind: &str) -> ApiError {
        self.details.name = Some(name.to_string());
        self.details.group = Some(group.to_string());
        self.details.kind = Some(kind.to_string());
        self
    }

    /// `pods "web" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("{} {name:?} not found", qualified(group, resource)),
        )
        .details(name, group, resource)
    }

    /// `pods "web" already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::new(
            StatusCode::CONFLICT,
            "AlreadyExists",
            format!("{} {name:?} already exists", qualified(group, resource)),
        )
        .details(name, group, resource)
    }

    /// The optimistic-concurrency conflict of an update with a stale resourceVersion.
    pub fn conflict(group: &str, resource: &str, name: &str, detail: &str) -> ApiError {
        ApiError::new(
            StatusCode::CONFLICT,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {name:?}: {detail}",
                qualified(group, resource)
            ),
        )
        .details(name, group, resource)
    }

    /// `Pod "web" is invalid: [metadata.name: Required value, ...]`; the kind is qualified
    /// by its group as upstream does (`Deployment.apps "web" is invalid: ...`).
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> ApiError {
        // The message lists each line once, as upstream's `ToAggregate`; causes keep them all.
        let mut lines: Vec<String> = Vec::with_capacity(causes.len());
        for line in causes.iter().map(Cause::line) {
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
        let listed =
            if lines.len() == 1 { lines[0].clone() } else { format!("[{}]", lines.join(", ")) };
        let qualified = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
        let mut e = ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            format!("{qualified} {name:?} is invalid: {listed}"),
        )
        .details(name, group, kind);
        e.details.causes = causes;
        e
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", message)
    }

    /// The resource or path does not exist.
    pub fn path_not_found() -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    pub fn gone(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::GONE, "Expired", message)
    }

    pub fn unsupported_media_type(content_type: &str) -> ApiError {
        ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format ({content_type:?}) - accepted \
                 media types include: application/json, application/yaml, \
                 application/vnd.kubernetes.protobuf"
            ),
        )
    }

    pub fn not_acceptable(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_ACCEPTABLE, "NotAcceptable", message)
    }

    pub fn too_large(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "RequestEntityTooLarge", message)
    }

    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "Forbidden", message)
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", message)
    }

    /// Upstream's `NewServiceUnavailable`: a 503 without a retry hint (no endpoint to
    /// proxy to).
    pub fn service_unavailable(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", message)
    }

    pub fn unavailable(message: impl Into<String>) -> ApiError {
        let mut e = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", message);
        e.details.retry_after = Some(1);
        e
    }

    pub fn timeout(message: impl Into<String>) -> ApiError {
        let mut e = ApiError::new(StatusCode::GATEWAY_TIMEOUT, "Timeout", message);
        e.details.retry_after = Some(1);
        e
    }

    /// A read or watch from a resourceVersion the store has not reached within the wait
    /// (upstream's `NewTooLargeResourceVersionError`: a Timeout with the
    /// `ResourceVersionTooLarge` cause, which clients such as client-go's reflector look for).
    pub fn too_large_resource_version(requested: i64, current: i64) -> ApiError {
        let mut e = ApiError::timeout(format!(
            "Timeout: Too large resource version: {requested}, current: {current}"
        ));
        e.details.causes = vec![Cause {
            reason: "ResourceVersionTooLarge",
            message: "Too large resource version".into(),
            field: String::new(),
        }];
        e
    }

    /// The `metav1.Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code.as_u16(),
        });
        // Upstream leaves out an empty reason (an error that is no API error).
        if self.reason.is_empty() {
            if let Some(s) = status.as_object_mut() {
                s.remove("reason");
            }
        }
        let mut details = serde_json::Map::new();
        let d = &self.details;
        if let Some(name) = &d.name {
            details.insert("name".into(), json!(name));
        }
        if let Some(group) = d.group.as_ref().filter(|g| !g.is_empty()) {
            details.insert("group".into(), json!(group));
        }
        if let Some(kind) = &d.kind {
            details.insert("kind".into(), json!(kind));
        }
        if !d.causes.is_empty() {
            let causes: Vec<Value> = d
                .causes
                .iter()
                .map(|c| {
                    // As upstream's omitempty: a cause may be a bare message.
                    let mut cause = serde_json::Map::new();
                    if !c.reason.is_empty() {
                        cause.insert("reason".into(), json!(c.reason));
                    }
                    cause.insert("message".into(), json!(c.message));
                    if !c.field.is_empty() {
                        cause.insert("field".into(), json!(c.field));
                    }
                    Value::Object(cause)
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if let Some(seconds) = d.retry_after {
            details.insert("retryAfterSeconds".into(), json!(seconds));
        }
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        if let Some(token) = &d.continue_token {
            status["metadata"]["continue"] = json!(token);
        }
        status
    }
}

fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    /// The error's `Status` in the encoding the client's `Accept` prefers (JSON, or protobuf
    /// for a client that asks for protobuf first, as upstream answers errors), with its
    /// Retry-After.
    pub fn negotiated_response(self, accept: &str) -> Response {
        let retry_after = self.details.retry_after;
        let mut response =
            crate::negotiate::error(self, crate::negotiate::error_output(accept)).into_response();
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(http::header::RETRY_AFTER, seconds.into());
        }
        response
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.negotiated_response("")
    }
}

impl From<rkube_store::Error> for ApiError {
    fn from(e: rkube_store::Error) -> ApiError {
        use rkube_store::Error as E;
        match e {
            E::Compacted { requested, compacted } => ApiError::gone(if compacted > 0 {
                format!("too old resource version: {requested} ({compacted})")
            } else {
                format!("too old resource version: {requested}")
            }),
            E::FutureRevision { requested, current } => {
                ApiError::too_large_resource_version(requested, current)
            }
            E::ValueTooLarge { .. } => {
                ApiError::too_large("Request entity too large: limit is 3145728")
            }
            E::Unavailable(m) => ApiError::unavailable(format!("storage is unavailable: {m}")),
            other => ApiError::internal(other.to_string()),
        }
    }
}

/// The result of an API handler.
pub type ApiResult<T> = Result<T, ApiError>;
