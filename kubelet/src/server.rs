//! The kubelet's HTTPS API, as upstream's kubelet server offers it to the API server:
//!
//! | path | what |
//! |---|---|
//! | `GET /healthz` | `ok` |
//! | `GET /pods` | a `PodList` of the pods this kubelet runs (from its [`PodCache`]) |
//! | `GET /containerLogs/{ns}/{pod}/{container}?follow&previous&sinceSeconds&sinceTime&tailLines&timestamps&limitBytes` | the container's log, streamed |
//! | `GET\|POST /exec/{ns}/{pod}[/{uid}]/{container}?command=..&input=1&output=1&error=1&tty=1` | a command in the container, over a WebSocket or SPDY/3.1 ([`crate::remotecommand`]) |
//! | `GET\|POST /attach/{ns}/{pod}[/{uid}]/{container}?input=1&output=1&error=1&tty=1` | the container's main process, likewise |
//! | `* /portForward/{ns}/{pod}[/{uid}]` | `kubectl port-forward`: SPDY/3.1, plain or tunnelled in a WebSocket, or `v4.channel.k8s.io` ([`crate::portforward`]) |
//! | `GET /stats/summary`, `GET /metrics/resource` | CPU and memory usage of the node and its pods ([`crate::stats`]) |
//!
//! The streaming endpoints speak both transports upstream's kubelet does, since the API
//! server passes either upgrade through: WebSockets (the `channel.k8s.io` protocols, kubectl
//! 1.30 and later and client libraries) and SPDY/3.1 (kubectl 1.29 and older, and
//! `kubectl port-forward` of every version). Exec and attach share one session whatever the
//! transport ([`crate::remotecommand`]); the HTTP side of an upgrade is in
//! [`crate::httpstream`], SPDY itself in [`crate::spdy`].
//!
//! TLS is openssl's: a serving certificate the kubelet makes for itself at start
//! ([`self_signed_certificate`], as upstream's kubelet does without `--tls-cert-file`), and
//! client certificates verified against `--client-ca-file`. A request without a verified
//! certificate gets 401, as from upstream's kubelet with anonymous access off; a verified
//! caller is then authorized by a SubjectAccessReview to the API server ([`crate::authz`],
//! upstream's `--authorization-mode=Webhook`), and refused with 403 otherwise.
//!
//! Start at [`router`].

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, MethodFilter};
use axum::Router;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use futures::StreamExt;
use http::{header, HeaderValue, StatusCode};
use k8s_openapi::api::core::v1::Pod;
use openssl::ssl::SslAcceptor;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tower::ServiceExt;

use crate::authz::{self, KubeletAuthorizer};
use crate::pods::sync::latest;
use crate::pods::PodCache;
use crate::runtime::{self, ContainerState, Runtime};
use crate::{portforward, remotecommand, Config};

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
        .route(
            "/exec/{namespace}/{pod}/{container}",
            axum::routing::on(streams, remotecommand::exec),
        )
        .route(
            "/exec/{namespace}/{pod}/{uid}/{container}",
            axum::routing::on(streams, remotecommand::exec),
        )
        .route(
            "/attach/{namespace}/{pod}/{container}",
            axum::routing::on(streams, remotecommand::attach),
        )
        .route(
            "/attach/{namespace}/{pod}/{uid}/{container}",
            axum::routing::on(streams, remotecommand::attach),
        )
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
) -> Result<(Vec<u8>, Vec<u8>), rkube_certs::CertError> {
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
) -> Result<SslAcceptor, rkube_certs::CertError> {
    rkube_certs::tls::acceptor(cert_pem, key_pem, client_ca_pem, b"rkube-kubelet")
}

/// Binds the kubelet's port on every address (upstream's `--address` default), so that the
/// API server reaches it at the node's InternalIP.
pub async fn bind(config: &Config) -> crate::Result<TcpListener> {
    let any: IpAddr = if config.node_ip.is_ipv6() {
        std::net::Ipv6Addr::UNSPECIFIED.into()
    } else {
        std::net::Ipv4Addr::UNSPECIFIED.into()
    };
    let addr = SocketAddr::new(any, config.port);
    TcpListener::bind(addr).await.map_err(|error| crate::Error::Listen { addr, error })
}

/// Accepts connections until the task is aborted; requests without a verified client
/// certificate get 401, and those `authorizer` refuses 403.
pub async fn serve(
    listener: TcpListener,
    acceptor: SslAcceptor,
    router: Router,
    authorizer: Arc<KubeletAuthorizer>,
) {
    rkube_certs::tls::serve(listener, acceptor, "kubelet API", move |peer| {
        let router = router.clone();
        let authorizer = authorizer.clone();
        let client = peer.certificate;
        hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
            let router = router.clone();
            let client = client.clone();
            let authorizer = authorizer.clone();
            async move {
                let Some((user, groups)) = client else {
                    return Ok(text_error(StatusCode::UNAUTHORIZED, "Unauthorized"));
                };
                let (verb, subresource) = authz::attributes(request.method(), request.uri().path());
                let mut groups = groups;
                groups.push("system:authenticated".to_string());
                let ask = authz::Ask { user, groups, verb, subresource };
                if !authorizer.allowed(&ask).await {
                    return Ok(text_error(StatusCode::FORBIDDEN, authz::forbidden_text(&ask)));
                }
                tracing::debug!(user = ask.user, method = %request.method(), uri = %request.uri(), "kubelet API");
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

pub(crate) fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    query.map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default()
}

pub(crate) fn first<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{labels, ContainerRecord};
    use openssl::pkey::PKey;
    use openssl::x509::X509;
    use std::collections::HashMap;
    use std::time::Duration;

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
