//! The kubelet's HTTPS API, as upstream's kubelet server offers it to the API server:
//!
//! | path | what |
//! |---|---|
//! | `GET /healthz` | `ok` |
//! | `GET /pods` | a `PodList` of the pods this kubelet runs (from its [`PodCache`]) |
//! | `GET /containerLogs/{ns}/{pod}/{container}?follow&previous&sinceSeconds&sinceTime&tailLines&timestamps&limitBytes` | the container's log, streamed |
//! | `GET /exec/{ns}/{pod}[/{uid}]/{container}?command=..&input=1&output=1&error=1&tty=1` | a command in the container, over a WebSocket |
//! | `GET /attach/{ns}/{pod}[/{uid}]/{container}?input=1&output=1&error=1&tty=1` | the container's main process, over a WebSocket |
//! | `* /portForward/{ns}/{pod}[/{uid}]` | `kubectl port-forward`: SPDY/3.1, plain or tunnelled in a WebSocket, or `v4.channel.k8s.io` ([`crate::portforward`]) |
//! | `GET /stats/summary`, `GET /metrics/resource` | CPU and memory usage of the node and its pods ([`crate::stats`]) |
//!
//! Exec and attach speak the `channel.k8s.io` WebSocket protocols (v1 to v5): binary
//! messages whose first byte names the stream (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize;
//! v5 adds 255, "this stream is closed"). The session ends with a `metav1.Status` on the error
//! stream (v4 and later; earlier versions get the failure message only) and a normal close.
//! SPDY, which upstream's kubelet also speaks for them, is not offered there: clients reach
//! this kubelet through the API server, which passes WebSockets through. Port forwarding is
//! SPDY's, as kubectl speaks it ([`crate::portforward`]).
//!
//! TLS is openssl's: a serving certificate the kubelet makes for itself at start
//! ([`self_signed_certificate`], as upstream's kubelet does without `--tls-cert-file`), and
//! client certificates verified against `--client-ca-file`. A request without a verified
//! certificate gets 401, as from upstream's kubelet with anonymous access off; every
//! verified client may use every endpoint (upstream asks the API server with a
//! SubjectAccessReview first, which is not done here).
//!
//! Start at [`router`].

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, MethodFilter};
use axum::Router;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use futures::{SinkExt, StreamExt};
use http::{header, HeaderMap, HeaderValue, StatusCode};
use k8s_openapi::api::core::v1::Pod;
use openssl::ssl::SslAcceptor;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tower::ServiceExt;

use crate::pods::sync::latest;
use crate::pods::PodCache;
use crate::portforward;
use crate::runtime::{self, ContainerState, Runtime};
use crate::Config;

/// What the handlers need: the kubelet's configuration, its runtime and its pods.
pub struct ServerState {
    pub config: Arc<Config>,
    pub runtime: Arc<dyn Runtime>,
    pub pods: PodCache,
    /// Resource usage for `/stats/summary` and `/metrics/resource`.
    pub stats: Arc<crate::stats::StatsProvider>,
}

type Shared = State<Arc<ServerState>>;

/// The kubelet API's routes (without TLS and authentication, which [`serve`] adds).
pub fn router(state: Arc<ServerState>) -> Router {
    let streams = MethodFilter::GET.or(MethodFilter::POST);
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/pods", get(pods))
        .route("/pods/", get(pods))
        .route("/containerLogs/{namespace}/{pod}/{container}", get(container_logs))
        .route("/stats/summary", get(crate::stats::summary))
        .route("/metrics/resource", get(crate::stats::resource_metrics))
        .route("/exec/{namespace}/{pod}/{container}", axum::routing::on(streams, exec))
        .route("/exec/{namespace}/{pod}/{uid}/{container}", axum::routing::on(streams, exec))
        .route("/attach/{namespace}/{pod}/{container}", axum::routing::on(streams, attach))
        .route("/attach/{namespace}/{pod}/{uid}/{container}", axum::routing::on(streams, attach))
        .route("/portForward/{namespace}/{pod}", axum::routing::any(portforward::port_forward))
        .route(
            "/portForward/{namespace}/{pod}/{uid}",
            axum::routing::any(portforward::port_forward),
        )
        .fallback(|| async { (StatusCode::NOT_FOUND, "404 page not found\n") })
        .with_state(state)
}

/// A plain-text error, as upstream's kubelet writes them.
pub(crate) fn text_error(code: StatusCode, message: impl Into<String>) -> Response {
    let mut response = (code, message.into()).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

// ---------------------------------------------------------------------------------------
// TLS and connections

/// The kubelet's own serving certificate and key (PEM): self-signed, named as upstream's
/// kubelet names it (`<node>@<unix time>`), a year long, for the node's IP and name.
pub fn self_signed_certificate(
    node_name: &str,
    node_ip: IpAddr,
) -> anyhow::Result<(Vec<u8>, Vec<u8>)> {
    let cn = format!("{node_name}@{}", Utc::now().timestamp());
    let mut sans = vec![node_ip.to_string()];
    if node_name.parse::<IpAddr>().is_err() {
        sans.push(node_name.to_string());
    }
    let pair = rkube_certs::Pki::self_signed_serving_cert(&cn, &sans, 365)?;
    Ok((pair.cert_pem.into_bytes(), pair.key_pem.into_bytes()))
}

/// The TLS acceptor: the serving certificate, client certificates requested and verified
/// against `client_ca_pem` (a client without one is answered 401 by [`serve`]).
pub fn acceptor(
    cert_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: &[u8],
) -> anyhow::Result<SslAcceptor> {
    Ok(rkube_certs::tls::acceptor(cert_pem, key_pem, client_ca_pem, b"rkube-kubelet")?)
}

/// Binds the kubelet's port on every address (upstream's `--address` default), so that the
/// API server reaches it at the node's InternalIP.
pub async fn bind(config: &Config) -> anyhow::Result<TcpListener> {
    let any: IpAddr = if config.node_ip.is_ipv6() {
        std::net::Ipv6Addr::UNSPECIFIED.into()
    } else {
        std::net::Ipv4Addr::UNSPECIFIED.into()
    };
    let addr = SocketAddr::new(any, config.port);
    TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr} for the kubelet API: {e}"))
}

/// Accepts connections until the task is aborted; requests without a verified client
/// certificate get 401.
pub async fn serve(listener: TcpListener, acceptor: SslAcceptor, router: Router) {
    rkube_certs::tls::serve(listener, acceptor, "kubelet API", move |peer| {
        let router = router.clone();
        let client = peer.certificate.map(|(name, _groups)| name);
        hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
            let router = router.clone();
            let client = client.clone();
            async move {
                let Some(client) = client else {
                    return Ok(text_error(StatusCode::UNAUTHORIZED, "Unauthorized"));
                };
                tracing::debug!(user = client, method = %request.method(), uri = %request.uri(), "kubelet API");
                router.oneshot(request.map(Body::new)).await
            }
        })
    })
    .await
}

// ---------------------------------------------------------------------------------------
// /pods

async fn pods(State(state): Shared) -> Response {
    let items: Vec<Value> =
        state.pods.list().iter().filter_map(|p| serde_json::to_value(p.as_ref()).ok()).collect();
    let list = json!({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items});
    let mut response = list.to_string().into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

// ---------------------------------------------------------------------------------------
// /containerLogs

/// `PodLogOptions` as the kubelet reads them from the query.
#[derive(Debug, Default, PartialEq)]
pub struct LogQuery {
    pub follow: bool,
    pub previous: bool,
    pub timestamps: bool,
    pub since_seconds: Option<i64>,
    pub since_time: Option<DateTime<Utc>>,
    pub tail_lines: Option<i64>,
    pub limit_bytes: Option<i64>,
}

/// Why a log query is refused, with upstream's status codes and (JSON-looking) texts.
#[derive(Debug, PartialEq, Eq)]
pub enum LogQueryError {
    /// 400: a value is not of its type.
    Decode,
    /// 422: the values do not pass upstream's ValidatePodLogOptions.
    Invalid,
}

impl LogQueryError {
    fn response(&self) -> Response {
        match self {
            LogQueryError::Decode => {
                text_error(StatusCode::BAD_REQUEST, r#"{"message": "Unable to decode query."}"#)
            }
            LogQueryError::Invalid => {
                text_error(StatusCode::UNPROCESSABLE_ENTITY, r#"{"message": "Invalid request."}"#)
            }
        }
    }
}

fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    query.map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default()
}

fn first<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// A boolean as apimachinery's query conversion reads it: absent, `0` and `false` (any case)
/// are false, anything else true.
fn flag(pairs: &[(String, String)], key: &str) -> bool {
    first(pairs, key).is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
}

impl LogQuery {
    pub fn parse(query: Option<&str>) -> Result<LogQuery, LogQueryError> {
        let mut pairs = query_pairs(query);
        // The old `tail` parameter, `all` meaning no limit (as upstream).
        if let Some(tail) = first(&pairs, "tail").map(String::from) {
            pairs.retain(|(k, _)| k != "tailLines");
            if tail != "all" {
                pairs.push(("tailLines".into(), tail));
            }
        }
        let int = |key: &str| -> Result<Option<i64>, LogQueryError> {
            first(&pairs, key).map(|v| v.parse().map_err(|_| LogQueryError::Decode)).transpose()
        };
        let since_time = match first(&pairs, "sinceTime").filter(|t| !t.is_empty()) {
            None => None,
            Some(t) => {
                Some(DateTime::parse_from_rfc3339(t).map_err(|_| LogQueryError::Decode)?.to_utc())
            }
        };
        let q = LogQuery {
            follow: flag(&pairs, "follow"),
            previous: flag(&pairs, "previous"),
            timestamps: flag(&pairs, "timestamps"),
            since_seconds: int("sinceSeconds")?,
            since_time,
            tail_lines: int("tailLines")?,
            limit_bytes: int("limitBytes")?,
        };
        let invalid = q.tail_lines.is_some_and(|n| n < 0)
            || q.limit_bytes.is_some_and(|n| n < 1)
            || q.since_seconds.is_some_and(|n| n < 1)
            || (q.since_seconds.is_some() && q.since_time.is_some());
        if invalid {
            return Err(LogQueryError::Invalid);
        }
        Ok(q)
    }

    fn since(&self) -> Option<DateTime<Utc>> {
        self.since_time
            .or_else(|| self.since_seconds.map(|s| Utc::now() - chrono::Duration::seconds(s)))
    }
}

/// The names of every container of the pod (init, regular, ephemeral).
fn container_names(pod: &Pod) -> Vec<String> {
    let Some(spec) = pod.spec.as_ref() else { return Vec::new() };
    let init = spec.init_containers.iter().flatten().map(|c| c.name.clone());
    let regular = spec.containers.iter().map(|c| c.name.clone());
    let ephemeral = spec.ephemeral_containers.iter().flatten().map(|c| c.name.clone());
    init.chain(regular).chain(ephemeral).collect()
}

/// Why the container is waiting, from the pod's reported status.
fn waiting_reason(pod: &Pod, container: &str) -> String {
    let status = pod.status.as_ref();
    let all = status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .chain(status.and_then(|s| s.init_container_statuses.as_ref()).into_iter().flatten());
    all.filter(|c| c.name == container)
        .find_map(|c| c.state.as_ref()?.waiting.as_ref()?.reason.clone())
        .unwrap_or_else(|| "ContainerCreating".into())
}

/// Which container attempt's log to read (upstream's validateContainerLogStatus): the
/// newest one that ran, or with `previous` the one before it; otherwise the message of a 400.
pub fn log_container(
    records: &[runtime::ContainerRecord],
    pod: &Pod,
    container: &str,
    previous: bool,
) -> Result<String, String> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or("");
    let (current, before) = latest(records, container);
    if previous {
        return before.map(|r| r.id.clone()).ok_or_else(|| {
            format!("previous terminated container {container:?} in pod {pod_name:?} not found")
        });
    }
    match current {
        Some(r) if r.state != ContainerState::Created => Ok(r.id.clone()),
        // Made but not started: the attempt before it, if any, is what there is to read.
        _ => before.map(|r| r.id.clone()).ok_or_else(|| {
            format!(
                "container {container:?} in pod {pod_name:?} is waiting to start: {}",
                waiting_reason(pod, container)
            )
        }),
    }
}

async fn container_logs(
    State(state): Shared,
    Path((namespace, pod_name, container)): Path<(String, String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    let options = match LogQuery::parse(query.as_deref()) {
        Ok(o) => o,
        Err(e) => return e.response(),
    };
    let Some(pod) = state.pods.get(&namespace, &pod_name) else {
        return text_error(StatusCode::NOT_FOUND, format!("pod {pod_name:?} does not exist"));
    };
    if !container_names(&pod).contains(&container) {
        return text_error(
            StatusCode::NOT_FOUND,
            format!("container {container:?} not found in pod {pod_name:?}"),
        );
    }
    let uid = pod.metadata.uid.as_deref().unwrap_or("");
    let records = match state.runtime.list(&state.config.node_name, Some(uid)).await {
        Ok(r) => r,
        Err(e) => return text_error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let id = match log_container(&records, &pod, &container, options.previous) {
        Ok(id) => id,
        Err(message) => return text_error(StatusCode::BAD_REQUEST, message),
    };
    let logs = state.runtime.logs(
        &id,
        runtime::LogOptions {
            follow: options.follow,
            tail_lines: options.tail_lines,
            since: options.since(),
            timestamps: options.timestamps,
        },
    );
    let body = Body::from_stream(limit_bytes(logs, options.limit_bytes.map(|n| n as u64)));
    let mut response = Response::new(body);
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

/// The log cut after `limit` bytes (and ended there, without waiting for more). A runtime
/// error ends it too: the status line has long gone out.
pub fn limit_bytes(
    logs: BoxStream<'static, runtime::Result<Bytes>>,
    limit: Option<u64>,
) -> BoxStream<'static, std::io::Result<Bytes>> {
    futures::stream::unfold((logs, limit), |(mut logs, left)| async move {
        if left == Some(0) {
            return None;
        }
        match logs.next().await? {
            Ok(mut chunk) => {
                let left = left.map(|n| {
                    if (chunk.len() as u64) > n {
                        chunk.truncate(n as usize);
                    }
                    n - chunk.len() as u64
                });
                Some((Ok(chunk), (logs, left)))
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading a container log");
                None
            }
        }
    })
    .boxed()
}

// ---------------------------------------------------------------------------------------
// /exec and /attach

/// The streams a client asks for (upstream's remotecommand Options).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamOptions {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
}

impl StreamOptions {
    /// `input`, `output`, `error` and `tty`, each on when `1`; with a TTY there is no
    /// separate stderr.
    pub fn parse(pairs: &[(String, String)]) -> Result<StreamOptions, String> {
        let on = |key: &str| first(pairs, key) == Some("1");
        let tty = on("tty");
        let options = StreamOptions {
            stdin: on("input"),
            stdout: on("output"),
            stderr: on("error") && !tty,
            tty,
        };
        if !options.stdin && !options.stdout && !options.stderr {
            return Err("you must specify at least 1 of stdin, stdout, stderr".into());
        }
        Ok(options)
    }
}

/// The `channel.k8s.io` WebSocket protocol versions, newest last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Protocol {
    V1,
    V2,
    V3,
    V4,
    V5,
}

/// The subprotocols served, most preferred first.
pub const PROTOCOLS: [(&str, Protocol); 5] = [
    ("v5.channel.k8s.io", Protocol::V5),
    ("v4.channel.k8s.io", Protocol::V4),
    ("v3.channel.k8s.io", Protocol::V3),
    ("v2.channel.k8s.io", Protocol::V2),
    ("channel.k8s.io", Protocol::V1),
];

/// The newest protocol both sides speak; a client offering none gets v1 (as upstream), one
/// offering only others gets `None`.
pub fn negotiate<'a>(offered: impl IntoIterator<Item = &'a str>) -> Option<Protocol> {
    let offered: Vec<&str> = offered.into_iter().map(str::trim).filter(|p| !p.is_empty()).collect();
    if offered.is_empty() {
        return Some(Protocol::V1);
    }
    PROTOCOLS.iter().find(|(name, _)| offered.contains(name)).map(|(_, p)| *p)
}

/// Stream ids of the protocol.
const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;
const RESIZE: u8 = 4;
/// v5: "the stream in the next byte is closed".
const CLOSE: u8 = 255;

/// How a session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// The command exited with a non-zero code.
    ExitCode {
        command: Vec<String>,
        code: i64,
    },
    /// The message of an internal error.
    Internal(String),
}

impl Outcome {
    /// The `metav1.Status` upstream's kubelet writes on the error stream (v4 and later).
    pub fn status(&self) -> Value {
        match self {
            Outcome::Success => json!({"metadata": {}, "status": "Success"}),
            Outcome::ExitCode { command, code } => json!({
                "metadata": {},
                "status": "Failure",
                // The runtime's error as containerd words it, inside the kubelet's.
                "message": format!(
                    "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
                    command.join(" ")
                ),
                "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
            }),
            Outcome::Internal(message) => json!({
                "metadata": {},
                "status": "Failure",
                "message": format!("Internal error occurred: {message}"),
                "reason": "InternalError",
                "details": {"causes": [{"message": message}]},
                "code": 500,
            }),
        }
    }

    /// What goes on the error stream: the status (v4+), or the failure's message alone.
    pub fn error_stream(&self, protocol: Protocol) -> Option<Vec<u8>> {
        if protocol >= Protocol::V4 {
            return Some(self.status().to_string().into_bytes());
        }
        self.status()["message"].as_str().map(|m| m.as_bytes().to_vec())
    }
}

/// What a stream request is for.
#[derive(Clone, Debug)]
enum Target {
    Exec { container_id: String, command: Vec<String> },
    Attach { container_id: String },
}

async fn exec(
    state: Shared,
    Path(params): Path<Vec<String>>,
    query: RawQuery,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    stream_request(state, true, params, query, headers, ws).await
}

async fn attach(
    state: Shared,
    Path(params): Path<Vec<String>>,
    query: RawQuery,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    stream_request(state, false, params, query, headers, ws).await
}

/// Checks an exec or attach request as upstream's kubelet does (options, pod, running
/// container), then upgrades it to a WebSocket session.
async fn stream_request(
    State(state): Shared,
    is_exec: bool,
    params: Vec<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    // `{ns}/{pod}/{container}` or `{ns}/{pod}/{uid}/{container}`.
    let (namespace, pod_name, uid, container) = match params.as_slice() {
        [ns, pod, container] => (ns, pod, None, container),
        [ns, pod, uid, container] => (ns, pod, Some(uid.as_str()), container),
        _ => return text_error(StatusCode::NOT_FOUND, "404 page not found\n"),
    };
    let pairs = query_pairs(query.as_deref());
    let options = match StreamOptions::parse(&pairs) {
        Ok(o) => o,
        Err(e) => return text_error(StatusCode::BAD_REQUEST, e),
    };
    let Some(pod) = state.pods.get(namespace, pod_name) else {
        return text_error(StatusCode::NOT_FOUND, "pod does not exist");
    };
    let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
    let running = match uid {
        Some(u) if u != pod_uid => None,
        _ => match state.runtime.list(&state.config.node_name, Some(&pod_uid)).await {
            Ok(records) => latest(&records, container)
                .0
                .filter(|r| matches!(r.state, ContainerState::Running { .. }))
                .map(|r| r.id.clone()),
            Err(e) => return text_error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        },
    };
    let Some(container_id) = running else {
        return text_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("container not found ({container:?})"),
        );
    };
    let target = if is_exec {
        let command: Vec<String> =
            pairs.iter().filter(|(k, _)| k == "command").map(|(_, v)| v.clone()).collect();
        if command.is_empty() {
            return text_error(StatusCode::BAD_REQUEST, "missing command");
        }
        Target::Exec { container_id, command }
    } else {
        Target::Attach { container_id }
    };
    let ws = match ws {
        Ok(ws) => ws,
        Err(_) => {
            let spdy = headers
                .get(header::UPGRADE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.to_ascii_lowercase().starts_with("spdy"));
            let supported: Vec<&str> = PROTOCOLS.iter().map(|(n, _)| *n).collect();
            let why = if spdy { "SPDY is not supported" } else { "not a WebSocket request" };
            return text_error(
                StatusCode::BAD_REQUEST,
                format!(
                    "unable to upgrade: {why}; this kubelet streams over WebSocket with the \
                     subprotocols {}",
                    supported.join(", ")
                ),
            );
        }
    };
    let offered: Vec<String> =
        ws.requested_protocols().filter_map(|p| p.to_str().ok().map(String::from)).collect();
    let Some(protocol) = negotiate(offered.iter().map(String::as_str)) else {
        let supported: Vec<&str> = PROTOCOLS.iter().map(|(n, _)| *n).collect();
        return text_error(
            StatusCode::FORBIDDEN,
            format!(
                "requested protocol(s) are not supported: [{}]; supports [{}]",
                offered.join(" "),
                supported.join(" ")
            ),
        );
    };
    let ws = match PROTOCOLS.iter().find(|(_, p)| *p == protocol) {
        Some((name, _)) if !offered.is_empty() => ws.protocols([*name]),
        _ => ws,
    };
    let runtime = state.runtime.clone();
    ws.on_upgrade(move |socket| session(socket, protocol, runtime, target, options))
}

/// One exec or attach over an upgraded connection, from start to the closing status.
async fn session(
    socket: WebSocket,
    protocol: Protocol,
    runtime: Arc<dyn Runtime>,
    target: Target,
    options: StreamOptions,
) {
    let (mut sink, source) = socket.split();
    let started = match &target {
        Target::Exec { container_id, command } => runtime
            .exec(container_id, command.clone(), options.tty, options.stdin)
            .await
            .map_err(|e| format!("error executing command in container: {e}")),
        Target::Attach { container_id } => runtime
            .attach(container_id, options.stdin)
            .await
            .map_err(|e| format!("error attaching to container: {e}")),
    };
    let (outcome, reader) = match started {
        Err(e) => (Some(Outcome::Internal(e)), None),
        Ok(session) => {
            let (client_gone_tx, mut client_gone) = tokio::sync::oneshot::channel::<()>();
            let resize = match &target {
                Target::Exec { .. } => Resize::Exec(session.id.clone()),
                Target::Attach { container_id } => Resize::Container(container_id.clone()),
            };
            let reader = tokio::spawn(read_client(
                source,
                session.input,
                options,
                runtime.clone(),
                resize,
                client_gone_tx,
            ));
            let mut output = session.output;
            let mut gone = false;
            loop {
                tokio::select! {
                    chunk = output.next() => match chunk {
                        Some(Ok((stream, bytes))) => {
                            let wanted = match stream {
                                STDERR => options.stderr,
                                _ => options.stdout,
                            };
                            if !wanted || bytes.is_empty() {
                                continue;
                            }
                            let stream = if options.tty { STDOUT } else { stream };
                            if sink.send(frame(stream, &bytes)).await.is_err() {
                                gone = true;
                                break;
                            }
                        }
                        Some(Err(e)) => {
                            tracing::debug!(error = %e, "exec output ended");
                            break;
                        }
                        None => break,
                    },
                    _ = &mut client_gone => {
                        gone = true;
                        break;
                    }
                }
            }
            let outcome = if gone {
                None
            } else {
                Some(match &target {
                    Target::Exec { command, .. } => {
                        exit_outcome(runtime.as_ref(), &session.id, command).await
                    }
                    Target::Attach { .. } => Outcome::Success,
                })
            };
            (outcome, Some(reader))
        }
    };
    if let Some(outcome) = outcome {
        if let Some(message) = outcome.error_stream(protocol) {
            let _ = sink.send(frame(ERROR, &message)).await;
        }
        let close = CloseFrame { code: 1000, reason: "".into() };
        let _ = sink.send(Message::Close(Some(close))).await;
    }
    // The client answers the close; then the connection can go.
    if let Some(mut reader) = reader {
        if tokio::time::timeout(Duration::from_secs(5), &mut reader).await.is_err() {
            reader.abort();
        }
    }
}

/// A binary message on one stream.
fn frame(stream: u8, data: &[u8]) -> Message {
    let mut message = Vec::with_capacity(data.len() + 1);
    message.push(stream);
    message.extend_from_slice(data);
    Message::Binary(message.into())
}

/// What a resize message resizes.
enum Resize {
    Exec(String),
    Container(String),
}

/// Reads the client's messages until it closes: stdin to the process (closed on the v5
/// close signal), resizes to the runtime. Says when the client is gone.
async fn read_client(
    mut source: futures::stream::SplitStream<WebSocket>,
    mut input: Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
    options: StreamOptions,
    runtime: Arc<dyn Runtime>,
    resize: Resize,
    gone: tokio::sync::oneshot::Sender<()>,
) {
    let mut stdin_open = options.stdin;
    while let Some(Ok(message)) = source.next().await {
        let data = match message {
            Message::Binary(data) => data,
            Message::Close(_) => break,
            _ => continue,
        };
        let Some((&stream, rest)) = data.split_first() else { continue };
        match stream {
            // A process that stopped reading its stdin gets no more.
            STDIN if stdin_open && write_stdin(&mut input, rest).await.is_err() => {
                stdin_open = false;
            }
            RESIZE => {
                let Ok(size) = serde_json::from_slice::<Value>(rest) else { continue };
                let dimension = |key: &str| size[key].as_u64().and_then(|n| u16::try_from(n).ok());
                let (Some(width), Some(height)) = (dimension("Width"), dimension("Height")) else {
                    continue;
                };
                let resized = match &resize {
                    Resize::Exec(id) => runtime.resize_exec(id, width, height).await,
                    Resize::Container(id) => runtime.resize_container(id, width, height).await,
                };
                if let Err(e) = resized {
                    tracing::debug!(error = %e, "resize");
                }
            }
            CLOSE if rest.first() == Some(&STDIN) && stdin_open => {
                stdin_open = false;
                let _ = input.shutdown().await;
            }
            _ => {}
        }
    }
    let _ = gone.send(());
}

async fn write_stdin(
    input: &mut Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
    data: &[u8],
) -> std::io::Result<()> {
    input.write_all(data).await?;
    input.flush().await
}

/// The outcome of a finished exec: its exit code, once the runtime has it.
async fn exit_outcome(runtime: &dyn Runtime, exec_id: &str, command: &[String]) -> Outcome {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match runtime.exec_exit_code(exec_id).await {
            Ok(Some(0)) => return Outcome::Success,
            Ok(Some(code)) => return Outcome::ExitCode { command: command.to_vec(), code },
            Ok(None) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(None) => {
                return Outcome::Internal(
                    "error executing command in container: the command's exit code did not \
                     become known"
                        .into(),
                )
            }
            Err(e) => {
                return Outcome::Internal(format!("error executing command in container: {e}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{labels, ContainerRecord};
    use openssl::pkey::PKey;
    use openssl::x509::X509;
    use std::collections::HashMap;

    fn pairs(query: &str) -> Vec<(String, String)> {
        query_pairs(Some(query))
    }

    #[test]
    fn log_queries_decode_and_validate_as_upstream() {
        let q = LogQuery::parse(Some(
            "follow=true&previous=1&timestamps=True&tailLines=3&limitBytes=10&sinceSeconds=5",
        ))
        .unwrap();
        assert!(q.follow && q.previous && q.timestamps);
        assert_eq!((q.tail_lines, q.limit_bytes, q.since_seconds), (Some(3), Some(10), Some(5)));
        assert_eq!(LogQuery::parse(None).unwrap(), LogQuery::default());
        assert!(!LogQuery::parse(Some("follow=false")).unwrap().follow);
        assert!(!LogQuery::parse(Some("follow=0")).unwrap().follow);
        let t = LogQuery::parse(Some("sinceTime=2024-01-02T03:04:05Z")).unwrap();
        assert_eq!(t.since_time.unwrap().to_rfc3339(), "2024-01-02T03:04:05+00:00");
        // `tail` is the old name; `all` means no limit.
        assert_eq!(LogQuery::parse(Some("tail=7")).unwrap().tail_lines, Some(7));
        assert_eq!(LogQuery::parse(Some("tailLines=2&tail=all")).unwrap().tail_lines, None);
        assert_eq!(LogQuery::parse(Some("tailLines=x")), Err(LogQueryError::Decode));
        assert_eq!(LogQuery::parse(Some("sinceTime=yesterday")), Err(LogQueryError::Decode));
        for bad in [
            "tailLines=-1",
            "limitBytes=0",
            "sinceSeconds=0",
            "sinceSeconds=5&sinceTime=2024-01-02T03:04:05Z",
        ] {
            assert_eq!(LogQuery::parse(Some(bad)), Err(LogQueryError::Invalid), "{bad}");
        }
    }

    #[test]
    fn stream_options_need_a_stream_and_a_tty_has_no_stderr() {
        let o = StreamOptions::parse(&pairs("input=1&output=1&error=1&tty=1")).unwrap();
        assert_eq!(o, StreamOptions { stdin: true, stdout: true, stderr: false, tty: true });
        let o = StreamOptions::parse(&pairs("output=1&error=1&command=ls")).unwrap();
        assert_eq!(o, StreamOptions { stdin: false, stdout: true, stderr: true, tty: false });
        assert_eq!(
            StreamOptions::parse(&pairs("tty=1&error=1")).unwrap_err(),
            "you must specify at least 1 of stdin, stdout, stderr"
        );
    }

    #[test]
    fn the_newest_common_protocol_is_chosen() {
        let kubectl = "v5.channel.k8s.io, v4.channel.k8s.io, v3.channel.k8s.io, \
                       v2.channel.k8s.io, channel.k8s.io";
        assert_eq!(negotiate(kubectl.split(',')), Some(Protocol::V5));
        assert_eq!(
            negotiate(["channel.k8s.io", "v4.channel.k8s.io"]),
            Some(Protocol::V4),
            "the newest, whatever the client's order"
        );
        assert_eq!(negotiate([]), Some(Protocol::V1));
        assert_eq!(negotiate(["base64.channel.k8s.io"]), None);
    }

    #[test]
    fn statuses_are_upstreams() {
        assert_eq!(Outcome::Success.status().to_string(), r#"{"metadata":{},"status":"Success"}"#);
        let failed = Outcome::ExitCode { command: vec!["false".into()], code: 1 };
        assert_eq!(
            failed.status(),
            json!({
                "metadata": {},
                "status": "Failure",
                "message": "command terminated with non-zero exit code: error executing command [false], exit code 1",
                "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": "1"}]}
            })
        );
        // Before v4 only a failure's message is written.
        assert_eq!(Outcome::Success.error_stream(Protocol::V3), None);
        let text = failed.error_stream(Protocol::V2).unwrap();
        assert!(String::from_utf8(text).unwrap().starts_with("command terminated"));
        let internal = Outcome::Internal("boom".into()).status();
        assert_eq!(internal["code"], 500);
        assert_eq!(internal["message"], "Internal error occurred: boom");
    }

    fn record(name: &str, attempt: u32, state: ContainerState) -> ContainerRecord {
        ContainerRecord {
            id: format!("{name}-{attempt}"),
            labels: HashMap::from([
                (labels::CONTAINER_NAME.to_string(), name.to_string()),
                (labels::ATTEMPT.to_string(), attempt.to_string()),
                (labels::TYPE.to_string(), "container".to_string()),
            ]),
            state,
            image: String::new(),
            image_id: String::new(),
        }
    }

    fn exited() -> ContainerState {
        ContainerState::Exited {
            exit_code: 1,
            started_at: None,
            finished_at: Utc::now(),
            oom_killed: false,
            error: String::new(),
        }
    }

    #[test]
    fn logs_come_from_the_newest_attempt_or_the_one_before() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"containers": [{"name": "app"}]},
        }))
        .unwrap();
        let running = ContainerState::Running { started_at: Utc::now() };
        let records = vec![
            record("app", 0, exited()),
            record("app", 1, running),
            record("other", 5, exited()),
        ];
        assert_eq!(log_container(&records, &pod, "app", false).unwrap(), "app-1");
        assert_eq!(log_container(&records, &pod, "app", true).unwrap(), "app-0");
        let once = vec![record("app", 0, exited())];
        assert_eq!(log_container(&once, &pod, "app", false).unwrap(), "app-0");
        assert_eq!(
            log_container(&once, &pod, "app", true).unwrap_err(),
            r#"previous terminated container "app" in pod "web" not found"#
        );
        // A restart made but not started yet: the last one that ran.
        let restarting =
            vec![record("app", 0, exited()), record("app", 1, ContainerState::Created)];
        assert_eq!(log_container(&restarting, &pod, "app", false).unwrap(), "app-0");
        assert_eq!(
            log_container(&[], &pod, "app", false).unwrap_err(),
            r#"container "app" in pod "web" is waiting to start: ContainerCreating"#
        );
    }

    #[tokio::test]
    async fn a_log_stops_at_its_byte_limit_without_waiting_for_more() {
        let chunks: Vec<runtime::Result<Bytes>> =
            vec![Ok(Bytes::from_static(b"hello ")), Ok(Bytes::from_static(b"world\n"))];
        // A followed log: more never comes.
        let logs = futures::stream::iter(chunks).chain(futures::stream::pending()).boxed();
        let cut = tokio::time::timeout(
            Duration::from_secs(5),
            limit_bytes(logs, Some(8)).map(|c| c.unwrap()).collect::<Vec<_>>(),
        )
        .await
        .expect("the limit ends the stream");
        assert_eq!(cut.concat(), b"hello wo");
    }

    #[test]
    fn the_serving_certificate_names_the_node() {
        let (cert, key) = self_signed_certificate("node-1", IpAddr::from([10, 0, 0, 7])).unwrap();
        let cert = X509::from_pem(&cert).unwrap();
        let sans: Vec<String> = cert
            .subject_alt_names()
            .unwrap()
            .iter()
            .map(|n| match (n.dnsname(), n.ipaddress()) {
                (Some(d), _) => d.to_string(),
                (_, Some(ip)) => format!("{ip:?}"),
                _ => String::new(),
            })
            .collect();
        assert_eq!(sans, vec!["[10, 0, 0, 7]".to_string(), "node-1".to_string()]);
        let key = PKey::private_key_from_pem(&key).unwrap();
        assert!(cert.public_key().unwrap().public_eq(&key));
        // It serves, with the CA it trusts for clients.
        assert!(acceptor(
            &cert.to_pem().unwrap(),
            &key.private_key_to_pem_pkcs8().unwrap(),
            &cert.to_pem().unwrap()
        )
        .is_ok());
    }
}
