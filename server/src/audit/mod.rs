//! Auditing, as kube-apiserver's (`--audit-policy-file`, `--audit-log-*`): every request the
//! [`policy`] records becomes `audit.k8s.io/v1` events, written by the [`log_file`] backend
//! and sent by the [`webhook`] backend.
//!
//! The pieces, in a request's order:
//! - [`init`] (outermost layer): the request's audit ID (the client's `Audit-ID` header, else
//!   a new UUID), sent back as the `Audit-Id` header of every answer, audited or not.
//! - Authentication: a request whose credentials fail is recorded by
//!   [`Auditor::failed_authentication`] (stage `ResponseStarted`, no user, code 401).
//! - [`layer`] (after authentication): the policy's level for the request; at `None` the
//!   request just goes on. Otherwise a `RequestReceived` event, then the request is served in
//!   an audit [`scope`], where impersonation, the authorizer (`authorization.k8s.io/decision`
//!   and `reason`), admission plugins and the handlers that decode bodies add to the event.
//!   Then a `ResponseComplete` event with the answer's status (a `Status` answer's reason and
//!   message) and, at `RequestResponse`, its object. Long-running requests (watches, exec,
//!   attach, port-forward, logs, proxy) get `ResponseStarted` when their headers go out and
//!   `ResponseComplete` when their body ends or the client leaves.
//!
//! A request whose serving panics gets a `Panic` event (500, `APIServer panic'd: ...`) before
//! the panic goes on. Each stage the policy omits is not written. Objects are recorded as JSON whatever
//! encoding the client used (protobuf answers are decoded), without `managedFields` when
//! the policy says `omitManagedFields`.

pub mod event;
pub mod log_file;
pub mod policy;
pub mod scope;
pub mod webhook;

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use chrono::Utc;
use futures_util::Stream;
use http::{HeaderValue, StatusCode};
use serde_json::Value;

pub use event::Event;
pub use policy::{Level, Policy, Stage};
pub use scope::{
    admission_annotations, annotate, annotate_at, impersonated, request_object, request_patch,
};

use crate::auth::UserInfo;
use crate::authz::Attributes;
use crate::request::{RequestInfo, Target};
use crate::status::ApiError;
use event::ResponseStatus;
use policy::Decision;
use scope::Recorder;

/// The largest answer whose object or Status an event records (upstream has no bound; this
/// keeps a proxied or unusual answer from being held twice in memory).
const MAX_RECORDED_ANSWER: u64 = 64 * 1024 * 1024;

/// The header that carries a request's audit ID, both ways.
pub const AUDIT_ID_HEADER: &str = "audit-id";

/// Where events go.
pub trait Sink: Send + Sync {
    /// Writes `event`; false when it could not be kept and the request must fail for it.
    fn process(&self, event: &Event) -> bool;
    /// Whether a request whose first event cannot be written fails (`blocking-strict`).
    fn strict(&self) -> bool {
        false
    }
}

/// The server's auditing: a policy and where its events go. Without both, nothing is
/// recorded (as kube-apiserver without `--audit-policy-file` or a backend).
#[derive(Default)]
pub struct Auditor {
    policy: Option<Policy>,
    sinks: Vec<Arc<dyn Sink>>,
}

/// A request's audit ID, left in its extensions by [`init`].
#[derive(Clone, Debug)]
pub struct AuditId(pub String);

impl Auditor {
    /// Records what `policy` says into `sinks`.
    pub fn new(policy: Policy, sinks: Vec<Arc<dyn Sink>>) -> Auditor {
        Auditor { policy: Some(policy), sinks }
    }

    /// Records nothing.
    pub fn disabled() -> Auditor {
        Auditor::default()
    }

    /// Whether a policy is set (events are recorded once there is a sink too).
    pub fn has_policy(&self) -> bool {
        self.policy.is_some()
    }

    /// Adds a backend.
    pub fn add_sink(&mut self, sink: Arc<dyn Sink>) {
        self.sinks.push(sink);
    }

    fn policy(&self) -> Option<&Policy> {
        self.policy.as_ref().filter(|_| !self.sinks.is_empty())
    }

    /// Writes `event` to every sink; false when a strict sink could not keep it.
    fn emit(&self, event: &mut Event, decision: &Decision) -> bool {
        if decision.omit_stages.contains(&event.stage) {
            return true;
        }
        event.stage_timestamp =
            if event.stage == Stage::RequestReceived { event.request_received } else { Utc::now() };
        let mut kept = true;
        for sink in &self.sinks {
            kept &= sink.process(event) || !sink.strict();
        }
        kept
    }

    /// The event of a request whose credentials did not authenticate (upstream's
    /// `WithFailedAuthenticationAudit`): stage `ResponseStarted`, no user, code 401 and the
    /// credentials tried.
    pub fn failed_authentication(&self, request: &Request) {
        let Some(policy) = self.policy() else { return };
        let anonymous = UserInfo::anonymous();
        let info = RequestInfo::read(request.method(), request.uri());
        let attributes = attributes(&anonymous, request, &info);
        let decision = policy.decide(&attributes, false);
        if decision.level == Level::None {
            return;
        }
        let mut event = Event::new(
            decision.level,
            audit_id(request),
            request,
            &attributes,
            false,
            peer(request),
        );
        event.stage = Stage::ResponseStarted;
        event.response_status = Some(ResponseStatus {
            code: 401,
            message: attempted_credentials(request),
            ..ResponseStatus::default()
        });
        self.emit(&mut event, &decision);
    }
}

fn attributes<'a>(
    user: &'a UserInfo,
    request: &'a Request,
    info: &'a RequestInfo,
) -> Attributes<'a> {
    Attributes::of_request(
        user,
        request.method(),
        request.uri().path(),
        &info.query,
        info.target.as_ref(),
    )
}

fn audit_id(request: &Request) -> String {
    request.extensions().get::<AuditId>().map(|a| a.0.clone()).unwrap_or_else(new_id)
}

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn peer(request: &Request) -> Option<std::net::IpAddr> {
    request.extensions().get::<SocketAddr>().map(SocketAddr::ip)
}

/// Upstream's `getAuthMethods`: what credentials a refused request carried.
fn attempted_credentials(request: &Request) -> String {
    let mut tried = Vec::new();
    let authorization = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim();
    let scheme = authorization.split(' ').next().unwrap_or("");
    if scheme.eq_ignore_ascii_case("basic") && authorization.contains(' ') {
        tried.push("basic");
    }
    if scheme.eq_ignore_ascii_case("bearer") && authorization.split(' ').count() > 1 {
        tried.push("bearer");
    }
    let query = crate::request::parse_query(request.uri().query());
    if query.get("access_token").is_some_and(|t| !t.trim().is_empty()) {
        tried.push("access_token");
    }
    if tried.is_empty() {
        "Authentication failed, no credentials provided".into()
    } else {
        format!("Authentication failed, attempted: {}", tried.join(", "))
    }
}

/// The outermost layer: gives the request its audit ID and every answer the `Audit-Id`
/// header.
pub async fn init(mut request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(AUDIT_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .unwrap_or_else(new_id);
    request.extensions_mut().insert(AuditId(id.clone()));
    let mut response = next.run(request).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(AUDIT_ID_HEADER, value);
    }
    response
}

/// The audit layer (after authentication): see the module doc.
pub async fn layer(
    State(auditor): State<Arc<Auditor>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(policy) = auditor.policy() else { return next.run(request).await };
    let user = request.extensions().get::<UserInfo>().cloned().unwrap_or_else(UserInfo::anonymous);
    let info = RequestInfo::read(request.method(), request.uri());
    let attributes = attributes(&user, &request, &info);
    let decision = policy.decide(&attributes, true);
    if decision.level == Level::None {
        request.extensions_mut().insert(info);
        return next.run(request).await;
    }
    let mut event =
        Event::new(decision.level, audit_id(&request), &request, &attributes, true, peer(&request));
    let long_running = is_long_running(&info);
    request.extensions_mut().insert(info);
    if !auditor.emit(&mut event, &decision) {
        return ApiError::internal("failed to store audit event").into_response();
    }
    let recorder = Recorder::new(decision.level, decision.omit_managed_fields);
    let served = std::panic::AssertUnwindSafe(scope::scope(recorder.clone(), next.run(request)));
    let response = match futures::FutureExt::catch_unwind(served).await {
        Ok(response) => response,
        Err(panic) => {
            // As upstream: a Panic event, then the panic goes on (the connection ends).
            complete_from(&mut event, recorder.take());
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            event.stage = Stage::Panic;
            event.response_status = Some(ResponseStatus {
                code: 500,
                status: "Failure".into(),
                reason: "InternalError".into(),
                message: format!("APIServer panic'd: {what}"),
                details: None,
            });
            auditor.emit(&mut event, &decision);
            std::panic::resume_unwind(panic);
        }
    };
    complete_from(&mut event, recorder.take());
    let code = response.status();
    event.response_status = Some(ResponseStatus { code: code.as_u16(), ..Default::default() });
    if long_running {
        event.stage = Stage::ResponseStarted;
        auditor.emit(&mut event, &decision);
        let (parts, body) = response.into_parts();
        let finish = Finish { auditor: auditor.clone(), event: Some(event), decision };
        let body = Body::from_stream(Finishing { inner: body.into_data_stream(), finish });
        return Response::from_parts(parts, body);
    }
    let response = read_answer(&mut event, &decision, response).await;
    event.stage = Stage::ResponseComplete;
    auditor.emit(&mut event, &decision);
    response
}

/// What the code serving the request added.
fn complete_from(event: &mut Event, recorded: scope::Recorded) {
    for (key, value) in recorded.annotations {
        event.annotations.entry(key).or_insert(value);
    }
    event.impersonated_user = recorded.impersonated;
    event.request_object = recorded.request_object;
    if let (Some(r), Some(meta)) = (event.object_ref.as_mut(), recorded.object_meta) {
        for (field, value) in [
            (&mut r.namespace, meta.namespace),
            (&mut r.name, meta.name),
            (&mut r.uid, meta.uid),
            (&mut r.resource_version, meta.resource_version),
        ] {
            if field.is_empty() {
                *field = value;
            }
        }
    }
}

/// Upstream's long-running requests: watches, proxies, and the exec, attach, port-forward
/// and log subresources.
fn is_long_running(info: &RequestInfo) -> bool {
    match &info.target {
        Some(Target::Resource(r)) => {
            r.verb == "watch"
                || matches!(
                    r.subresource.as_deref(),
                    Some("attach" | "exec" | "proxy" | "log" | "portforward")
                )
        }
        _ => false,
    }
}

/// Reads what the event needs of a finished answer: a `Status` answer's fields, and at
/// `RequestResponse` the object. The answer goes on unchanged.
async fn read_answer(event: &mut Event, decision: &Decision, response: Response) -> Response {
    let code = response.status();
    let wants_object = decision.level >= Level::RequestResponse;
    let may_be_status = !code.is_success()
        || matches!(event.verb.as_str(), "delete" | "deletecollection")
        || code == StatusCode::ACCEPTED;
    if !wants_object && !may_be_status {
        return response;
    }
    let content_type = crate::negotiate::content_type(response.headers());
    let protobuf = content_type == rkube_apis::protobuf::CONTENT_TYPE;
    if content_type != "application/json" && !protobuf {
        return response;
    }
    // Only answers already whole in memory are read (a proxied stream is left alone).
    let whole = hyper::body::Body::size_hint(response.body()).exact();
    if whole.is_none_or(|n| n > MAX_RECORDED_ANSWER) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let value: Option<Value> = if protobuf {
        rkube_apis::protobuf::decode(&bytes).ok()
    } else {
        serde_json::from_slice(&bytes).ok()
    };
    if let Some(mut value) = value {
        if value["kind"] == "Status" {
            let text = |key: &str| value[key].as_str().unwrap_or("").to_string();
            event.response_status = Some(ResponseStatus {
                code: value["code"].as_u64().map(|c| c as u16).unwrap_or(code.as_u16()),
                status: text("status"),
                message: text("message"),
                reason: text("reason"),
                details: value.get("details").cloned(),
            });
        }
        if wants_object {
            if decision.omit_managed_fields {
                scope::without_managed_fields(&mut value);
            }
            event.response_object = Some(value);
        }
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// Writes a long-running request's `ResponseComplete` event once, when its body ends or is
/// dropped (the client went away).
struct Finish {
    auditor: Arc<Auditor>,
    event: Option<Event>,
    decision: Decision,
}

impl Finish {
    fn done(&mut self) {
        if let Some(mut event) = self.event.take() {
            event.stage = Stage::ResponseComplete;
            self.auditor.emit(&mut event, &self.decision);
        }
    }
}

impl Drop for Finish {
    fn drop(&mut self) {
        self.done();
    }
}

/// A body stream that runs [`Finish`] when it ends.
struct Finishing<S> {
    inner: S,
    finish: Finish,
}

impl<S: Stream<Item = Result<Bytes, axum::Error>> + Unpin> Stream for Finishing<S> {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.inner).poll_next(cx);
        if let Poll::Ready(None) = polled {
            self.finish.done();
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use std::sync::Mutex;
    use tower::ServiceExt;

    /// Keeps the events it is given.
    #[derive(Default)]
    struct Kept(Mutex<Vec<Value>>);

    impl Sink for Kept {
        fn process(&self, event: &Event) -> bool {
            self.0.lock().unwrap().push(event.to_json());
            true
        }
    }

    #[tokio::test]
    async fn a_panicking_request_gets_a_panic_event_and_still_panics() {
        let policy = Policy::parse(
            b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
        )
        .unwrap();
        let kept = Arc::new(Kept::default());
        let auditor = Arc::new(Auditor::new(policy, vec![kept.clone()]));
        let router = axum::Router::new()
            .route(
                "/api/v1/namespaces/default/pods",
                get(|| async {
                    annotate("before", "the panic");
                    if std::hint::black_box(true) {
                        panic!("broken handler");
                    }
                    "never"
                }),
            )
            .layer(axum::middleware::from_fn_with_state(auditor, layer));
        let request =
            http::Request::get("/api/v1/namespaces/default/pods").body(Body::empty()).unwrap();
        let served = std::panic::AssertUnwindSafe(router.oneshot(request));
        assert!(futures::FutureExt::catch_unwind(served).await.is_err(), "the panic goes on");
        let events = kept.0.lock().unwrap().clone();
        let stages: Vec<&str> = events.iter().map(|e| e["stage"].as_str().unwrap()).collect();
        assert_eq!(stages, ["RequestReceived", "Panic"]);
        assert_eq!(
            events[1]["responseStatus"],
            serde_json::json!({"metadata": {}, "status": "Failure",
                "message": "APIServer panic'd: broken handler", "reason": "InternalError", "code": 500})
        );
        assert_eq!(events[1]["annotations"]["before"], "the panic");
        assert_eq!(events[1]["verb"], "list");
    }
}
