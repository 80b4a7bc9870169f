//! The actions that probes and lifecycle hooks run, as upstream's `pkg/probe` runs them: a
//! command in the container (exec), an HTTP GET, a TCP connect, and a gRPC health check
//! (`grpc.health.v1.Health/Check`). Each reports an [`Outcome`] worded as upstream's kubelet
//! words it, since the words end up in events users read (`HTTP probe failed with
//! statuscode: 500`, `dial tcp 10.42.0.5:80: connect: connection refused`).
//!
//! Connections go from the node to the pod IP (or the host the action names), as upstream.

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, Empty};
use k8s_openapi::api::core::v1::{Container, HTTPGetAction};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::net::TcpStream;

use crate::runtime::Runtime;

/// The minor version in upstream's `kube-probe/1.33` and `kube-lifecycle/1.33` user agents.
pub const USER_AGENT_VERSION: &str = "1.33";

/// Upstream reads at most this much of a probe's output or response body.
const MAX_OUTPUT: usize = 10 * 1024;

/// What running a probe action gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// With the output (exec) or the response body (HTTP).
    Success(String),
    /// Counts as a success, with a `ProbeWarning` event (a redirect to another host).
    Warning(String),
    /// With upstream's words for why.
    Failure(String),
    /// The action could not run (say, a port name the container does not have): upstream
    /// throws the result away.
    Error(String),
}

/// A finished command in a container.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecResult {
    pub exit_code: i64,
    /// Standard output and error as they came (at most 10 KiB).
    pub output: String,
    pub stderr: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecError {
    TimedOut,
    Runtime(String),
}

/// Runs a command in a container and waits for its exit code, at most `timeout` when given.
pub async fn exec(
    runtime: &dyn Runtime,
    container_id: &str,
    command: &[String],
    timeout: Option<Duration>,
) -> Result<ExecResult, ExecError> {
    let run = async {
        let session = runtime
            .exec(container_id, command.to_vec(), false, false)
            .await
            .map_err(|e| ExecError::Runtime(e.to_string()))?;
        drop(session.input);
        let mut output = Vec::new();
        let mut stderr = Vec::new();
        let mut stream = session.output;
        while let Some(chunk) = stream.next().await {
            let Ok((kind, data)) = chunk else { break };
            let room = MAX_OUTPUT.saturating_sub(output.len());
            output.extend_from_slice(&data[..data.len().min(room)]);
            if kind == 2 {
                let room = MAX_OUTPUT.saturating_sub(stderr.len());
                stderr.extend_from_slice(&data[..data.len().min(room)]);
            }
        }
        // The output ends a moment before the engine knows the exit code.
        let mut tries = 0;
        let exit_code = loop {
            match runtime.exec_exit_code(&session.id).await {
                Ok(Some(code)) => break code,
                Ok(None) if tries < 200 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                Ok(None) => {
                    return Err(ExecError::Runtime(
                        "the command's exit code did not become known".into(),
                    ))
                }
                Err(e) => return Err(ExecError::Runtime(e.to_string())),
            }
        };
        Ok(ExecResult {
            exit_code,
            output: String::from_utf8_lossy(&output).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        })
    };
    match timeout {
        Some(limit) => tokio::time::timeout(limit, run).await.unwrap_or(Err(ExecError::TimedOut)),
        None => run.await,
    }
}

/// An exec probe: success on exit code 0; the output is what the event shows.
pub async fn exec_probe(
    runtime: &dyn Runtime,
    container_id: &str,
    command: &[String],
    timeout: Duration,
) -> Outcome {
    match exec(runtime, container_id, command, Some(timeout)).await {
        Ok(r) if r.exit_code == 0 => Outcome::Success(r.output),
        Ok(r) => Outcome::Failure(r.output),
        Err(ExecError::TimedOut) => Outcome::Failure(timed_out(command)),
        Err(ExecError::Runtime(e)) => Outcome::Error(e),
    }
}

/// Upstream's words for a command that ran out of time.
pub fn timed_out(command: &[String]) -> String {
    format!("command {:?} timed out", command.join(" "))
}

/// A container port given by number or by the name of one of the container's ports (or a
/// number written as a string), as upstream resolves it.
pub fn resolve_port(port: &IntOrString, container: &Container) -> Result<u16, String> {
    let number = match port {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(name) => {
            let named = container
                .ports
                .iter()
                .flatten()
                .find(|p| p.name.as_deref() == Some(name.as_str()))
                .map(|p| i64::from(p.container_port));
            match named {
                Some(n) => n,
                None => name
                    .parse::<i64>()
                    .map_err(|_| format!("strconv.Atoi: parsing {name:?}: invalid syntax"))?,
            }
        }
    };
    if number > 0 && number < 65536 {
        Ok(number as u16)
    } else {
        Err(format!("invalid port number: {number}"))
    }
}

/// `host:port`, with brackets around an IPv6 address.
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A GET to send: where, and with which headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpRequest {
    pub https: bool,
    pub host: String,
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
    /// In the order they are sent; names as given.
    pub headers: Vec<(String, String)>,
}

impl HttpRequest {
    /// `scheme://host:port/path`, as upstream's messages show the URL.
    pub fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}{}", join_host_port(&self.host, self.port), self.path)
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// The request an `httpGet` action means (upstream's NewRequestForHTTPGetAction): the pod IP
/// unless a host is given, the port by number or name, the user's headers, and upstream's
/// `User-Agent: kube-<fragment>/1.33` and `Accept: */*` unless the user set them (an empty
/// Accept removes it).
pub fn http_request(
    action: &HTTPGetAction,
    container: &Container,
    pod_ip: &str,
    fragment: &str,
) -> Result<HttpRequest, String> {
    let scheme = action.scheme.as_deref().unwrap_or("HTTP").to_ascii_lowercase();
    let host = action.host.clone().filter(|h| !h.is_empty()).unwrap_or_else(|| pod_ip.to_string());
    let port = resolve_port(&action.port, container)?;
    let path = action.path.clone().unwrap_or_default();
    let path = if path.starts_with('/') { path } else { format!("/{path}") };
    let mut headers: Vec<(String, String)> = Vec::new();
    for h in action.http_headers.iter().flatten() {
        headers.push((canonical_header(&h.name), h.value.clone()));
    }
    let has = |headers: &[(String, String)], name: &str| {
        headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    if !has(&headers, "User-Agent") {
        headers.push(("User-Agent".into(), format!("kube-{fragment}/{USER_AGENT_VERSION}")));
    }
    if !has(&headers, "Accept") {
        headers.push(("Accept".into(), "*/*".into()));
    } else if headers.iter().any(|(n, v)| n.eq_ignore_ascii_case("Accept") && v.is_empty()) {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case("Accept"));
    }
    Ok(HttpRequest { https: scheme == "https", host, port, path, headers })
}

/// Go's canonical header name (`x-custom-header` is sent as `X-Custom-Header`).
fn canonical_header(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        out.push(if upper { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() });
        upper = c == '-';
    }
    out
}

/// What an HTTP probe's response means: 200-399 succeed (a 3xx that was not followed with a
/// warning), anything else fails with the status code.
pub fn http_outcome(status: u16, body: &str) -> Outcome {
    match status {
        200..=299 => Outcome::Success(body.to_string()),
        300..=399 => Outcome::Warning(format!("Probe terminated redirects, Response body: {body}")),
        _ => Outcome::Failure(format!("HTTP probe failed with statuscode: {status}")),
    }
}

/// An HTTP probe: the GET, then [`http_outcome`]; a request that fails is a failure with Go's
/// words for why.
pub async fn http_probe(request: &HttpRequest, timeout: Duration) -> Outcome {
    match http_get(request, timeout).await {
        Ok((status, body)) => http_outcome(status, &body),
        Err(e) => Outcome::Failure(e),
    }
}

/// Sends the GET (new connection, no keep-alive, certificates not verified), follows
/// redirects to the same host (at most 10) and returns the status and the first 10 KiB of
/// the body. A redirect to another host is not followed: its response is the answer.
pub async fn http_get(request: &HttpRequest, timeout: Duration) -> Result<(u16, String), String> {
    let mut current = request.clone();
    let mut hops = 0;
    let work = async {
        loop {
            let (status, location, body) =
                http_once(&current).await.map_err(|e| format!("Get {:?}: {e}", current.url()))?;
            let redirect = matches!(status, 301 | 302 | 303 | 307 | 308);
            let Some(location) = location.filter(|_| redirect) else {
                return Ok((status, body));
            };
            let next = resolve_location(&current, &location)
                .ok_or_else(|| format!("failed to parse Location header {location:?}"))?;
            if next.host != request.host {
                return Ok((status, body));
            }
            hops += 1;
            if hops > 10 {
                return Err(format!("Get {:?}: stopped after 10 redirects", next.url()));
            }
            current = next;
        }
    };
    let url = request.url();
    match tokio::time::timeout(timeout, work).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "Get {url:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )),
    }
}

/// Where a `Location` header points, from the request that got it.
fn resolve_location(from: &HttpRequest, location: &str) -> Option<HttpRequest> {
    let mut next = from.clone();
    let rest = if let Some(rest) = location.strip_prefix("http://") {
        next.https = false;
        Some(rest)
    } else if let Some(rest) = location.strip_prefix("https://") {
        next.https = true;
        Some(rest)
    } else {
        location.strip_prefix("//")
    };
    match rest {
        Some(rest) => {
            let (authority, path) = match rest.find(['/', '?']) {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, "/"),
            };
            let default_port = if next.https { 443 } else { 80 };
            let (host, port) = split_authority(authority, default_port)?;
            next.host = host;
            next.port = port;
            next.path = if path.starts_with('?') { format!("/{path}") } else { path.to_string() };
        }
        None if location.starts_with('/') => next.path = location.to_string(),
        None => {
            let base = from.path.split('?').next().unwrap_or("/");
            let dir = &base[..base.rfind('/').map(|i| i + 1).unwrap_or(0)];
            next.path = format!("{dir}{location}");
        }
    }
    Some(next)
}

fn split_authority(authority: &str, default_port: u16) -> Option<(String, u16)> {
    let authority = authority.rsplit('@').next()?;
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None => default_port,
        };
        return Some((host.to_string(), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => Some((host.to_string(), port.parse().ok()?)),
        None => Some((authority.to_string(), default_port)),
    }
}

trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Io for T {}

/// One request on a new connection: status, Location, body (truncated at 10 KiB).
async fn http_once(request: &HttpRequest) -> Result<(u16, Option<String>, String), String> {
    let (tcp, _) = dial(&request.host, request.port).await?;
    let stream: Box<dyn Io> =
        if request.https { Box::new(tls(tcp, &request.host).await?) } else { Box::new(tcp) };
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .title_case_headers(true)
        .handshake::<_, Empty<Bytes>>(hyper_util::rt::TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let host = request
        .header("Host")
        .map(str::to_string)
        .unwrap_or_else(|| join_host_port(&request.host, request.port));
    let mut builder = http::Request::get(request.path.as_str()).header(http::header::HOST, host);
    for (name, value) in request.headers.iter().filter(|(n, _)| !n.eq_ignore_ascii_case("Host")) {
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder = builder.header(http::header::CONNECTION, "close");
    let outgoing = builder.body(Empty::<Bytes>::new()).map_err(|e| e.to_string())?;
    let result = async {
        let response = sender.send_request(outgoing).await.map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut body = response.into_body();
        let mut bytes = Vec::new();
        while bytes.len() < MAX_OUTPUT {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        let room = MAX_OUTPUT - bytes.len();
                        bytes.extend_from_slice(&data[..data.len().min(room)]);
                    }
                }
                Some(Err(e)) => return Err(e.to_string()),
                None => break,
            }
        }
        Ok((status, location, String::from_utf8_lossy(&bytes).into_owned()))
    }
    .await;
    driver.abort();
    result
}

async fn tls(tcp: TcpStream, host: &str) -> Result<tokio_openssl::SslStream<TcpStream>, String> {
    use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
    let mut builder = SslConnector::builder(SslMethod::tls_client()).map_err(|e| e.to_string())?;
    builder.set_verify(SslVerifyMode::NONE);
    let connector = builder.build();
    let ssl = connector
        .configure()
        .map_err(|e| e.to_string())?
        .verify_hostname(false)
        .use_server_name_indication(host.parse::<IpAddr>().is_err())
        .into_ssl(host)
        .map_err(|e| e.to_string())?;
    let mut stream = tokio_openssl::SslStream::new(ssl, tcp).map_err(|e| e.to_string())?;
    Pin::new(&mut stream).connect().await.map_err(|e| format!("tls: {e}"))?;
    Ok(stream)
}

/// Connects as Go's dialer words it: `dial tcp 10.42.0.5:80: connect: connection refused`.
async fn dial(host: &str, port: u16) -> Result<(TcpStream, SocketAddr), String> {
    let addr = join_host_port(host, port);
    let target = match host.parse::<IpAddr>() {
        Ok(ip) => SocketAddr::new(ip, port),
        Err(_) => match tokio::net::lookup_host(&addr).await {
            Ok(mut addrs) => {
                addrs.next().ok_or_else(|| format!("dial tcp: lookup {host}: no such host"))?
            }
            Err(e) => return Err(format!("dial tcp: lookup {host}: {}", syscall_text(&e))),
        },
    };
    match TcpStream::connect(target).await {
        Ok(stream) => Ok((stream, target)),
        Err(e) => Err(format!("dial tcp {}: connect: {}", target, syscall_text(&e))),
    }
}

/// An OS error as Go prints it: the C library's text, lower-case first letter.
fn syscall_text(e: &std::io::Error) -> String {
    let Some(code) = e.raw_os_error() else { return e.to_string() };
    // SAFETY: strerror returns a valid C string for any error number.
    let text = unsafe { std::ffi::CStr::from_ptr(libc::strerror(code)) };
    let text = text.to_string_lossy();
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => e.to_string(),
    }
}

/// A TCP probe: success when the connection opens.
pub async fn tcp_probe(host: &str, port: u16, timeout: Duration) -> Outcome {
    match tokio::time::timeout(timeout, dial(host, port)).await {
        Ok(Ok(_)) => Outcome::Success(String::new()),
        Ok(Err(e)) => Outcome::Failure(e),
        Err(_) => Outcome::Failure(format!("dial tcp {}: i/o timeout", join_host_port(host, port))),
    }
}

/// `grpc.health.v1.HealthCheckRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HealthCheckRequest {
    #[prost(string, tag = "1")]
    pub service: String,
}

/// `grpc.health.v1.HealthCheckResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HealthCheckResponse {
    #[prost(enumeration = "ServingStatus", tag = "1")]
    pub status: i32,
}

/// `grpc.health.v1.HealthCheckResponse.ServingStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ServingStatus {
    Unknown = 0,
    Serving = 1,
    NotServing = 2,
    ServiceUnknown = 3,
}

impl ServingStatus {
    /// The name in the proto, as upstream's message quotes it.
    pub fn proto_name(status: i32) -> String {
        match ServingStatus::try_from(status) {
            Ok(ServingStatus::Unknown) => "UNKNOWN".into(),
            Ok(ServingStatus::Serving) => "SERVING".into(),
            Ok(ServingStatus::NotServing) => "NOT_SERVING".into(),
            Ok(ServingStatus::ServiceUnknown) => "SERVICE_UNKNOWN".into(),
            Err(_) => status.to_string(),
        }
    }
}

/// A duration as Go prints it (`400ms`, `1s`, `1.5s`, `1m30s`).
fn go_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        return format!("{}ms", d.as_secs_f64() * 1000.0);
    }
    let secs = d.as_secs();
    let (h, m) = (secs / 3600, (secs % 3600) / 60);
    let s = (secs % 60) as f64 + f64::from(d.subsec_nanos()) / 1e9;
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m{s}s"),
        (h, m) => format!("{h}h{m}m{s}s"),
    }
}

/// A gRPC probe: `grpc.health.v1.Health/Check` with the service name, plaintext, success
/// when the answer is SERVING. Like upstream's blocking dial, connecting is retried until
/// the timeout.
pub async fn grpc_probe(host: &str, port: u16, service: &str, timeout: Duration) -> Outcome {
    let addr = join_host_port(host, port);
    let deadline = tokio::time::Instant::now() + timeout;
    let endpoint = match tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .and_then(|e| e.user_agent(format!("kube-probe/{USER_AGENT_VERSION}")))
    {
        Ok(e) => e.connect_timeout(timeout).timeout(timeout),
        Err(e) => {
            return Outcome::Failure(format!("error: failed to connect service at {addr:?}: {e}"))
        }
    };
    let connect = async {
        let mut pause = Duration::from_millis(50);
        loop {
            if let Ok(channel) = endpoint.connect().await {
                return channel;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    };
    let Ok(channel) = tokio::time::timeout_at(deadline, connect).await else {
        return Outcome::Failure(format!(
            "timeout: failed to connect service {addr:?} within {}: context deadline exceeded",
            go_duration(timeout)
        ));
    };
    let mut client = tonic::client::Grpc::new(channel);
    let check = async {
        client.ready().await.map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        let path = http::uri::PathAndQuery::from_static("/grpc.health.v1.Health/Check");
        let request = tonic::Request::new(HealthCheckRequest { service: service.to_string() });
        client
            .unary(
                request,
                path,
                tonic_prost::ProstCodec::<HealthCheckRequest, HealthCheckResponse>::default(),
            )
            .await
    };
    let response = match tokio::time::timeout_at(deadline, check).await {
        Err(_) => {
            return Outcome::Failure(format!(
                "timeout: health rpc did not complete within {}",
                go_duration(timeout)
            ))
        }
        Ok(Err(status)) => {
            return Outcome::Failure(match status.code() {
                tonic::Code::Unimplemented => format!(
                    "error: this server does not implement the grpc health protocol \
                     (grpc.health.v1.Health): {}",
                    status.message()
                ),
                tonic::Code::DeadlineExceeded => {
                    format!("timeout: health rpc did not complete within {}", go_duration(timeout))
                }
                code => format!(
                    "error: health rpc probe failed: rpc error: code = {code:?} desc = {}",
                    status.message()
                ),
            })
        }
        Ok(Ok(response)) => response.into_inner(),
    };
    if response.status != ServingStatus::Serving as i32 {
        return Outcome::Failure(format!(
            "service unhealthy (responded with {:?})",
            ServingStatus::proto_name(response.status)
        ));
    }
    Outcome::Success("service healthy".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn container() -> Container {
        serde_json::from_value(json!({
            "name": "c", "image": "busybox",
            "ports": [{"name": "web", "containerPort": 8080}]
        }))
        .unwrap()
    }

    fn action(value: serde_json::Value) -> HTTPGetAction {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn http_status_codes_map_as_upstream() {
        assert_eq!(http_outcome(200, "ok"), Outcome::Success("ok".into()));
        assert_eq!(http_outcome(204, ""), Outcome::Success("".into()));
        assert_eq!(
            http_outcome(302, "moved"),
            Outcome::Warning("Probe terminated redirects, Response body: moved".into())
        );
        assert_eq!(
            http_outcome(404, "nope"),
            Outcome::Failure("HTTP probe failed with statuscode: 404".into())
        );
        assert_eq!(
            http_outcome(500, ""),
            Outcome::Failure("HTTP probe failed with statuscode: 500".into())
        );
        assert_eq!(
            http_outcome(199, ""),
            Outcome::Failure("HTTP probe failed with statuscode: 199".into())
        );
    }

    #[test]
    fn requests_resolve_ports_hosts_and_headers_as_upstream() {
        let c = container();
        let r = http_request(
            &action(json!({"port": "web", "path": "/healthz"})),
            &c,
            "10.0.0.5",
            "probe",
        )
        .unwrap();
        assert_eq!(r.url(), "http://10.0.0.5:8080/healthz");
        assert_eq!(r.header("User-Agent"), Some("kube-probe/1.33"));
        assert_eq!(r.header("Accept"), Some("*/*"));
        let r = http_request(
            &action(json!({
                "port": 8443, "scheme": "HTTPS", "host": "127.0.0.1", "path": "ready?x=1",
                "httpHeaders": [{"name": "user-agent", "value": "mine"}, {"name": "Accept", "value": ""},
                                {"name": "x-custom", "value": "v"}]
            })),
            &c,
            "10.0.0.5",
            "lifecycle",
        )
        .unwrap();
        assert_eq!(r.url(), "https://127.0.0.1:8443/ready?x=1");
        assert_eq!(r.header("User-Agent"), Some("mine"));
        assert_eq!(r.header("Accept"), None, "an empty Accept removes it");
        assert_eq!(r.header("X-Custom"), Some("v"));
        assert!(r.headers.iter().any(|(n, _)| n == "X-Custom"), "canonical names: {r:?}");
        let r = http_request(&action(json!({"port": 80})), &c, "fd00::1", "lifecycle").unwrap();
        assert_eq!(r.url(), "http://[fd00::1]:80/");
        assert_eq!(r.header("User-Agent"), Some("kube-lifecycle/1.33"));
        // A number written as a string; a name the container lacks.
        assert_eq!(resolve_port(&IntOrString::String("9000".into()), &c), Ok(9000));
        assert_eq!(
            resolve_port(&IntOrString::String("nope".into()), &c),
            Err("strconv.Atoi: parsing \"nope\": invalid syntax".into())
        );
        assert_eq!(resolve_port(&IntOrString::Int(0), &c), Err("invalid port number: 0".into()));
    }

    #[test]
    fn locations_resolve_against_the_request() {
        let base = HttpRequest {
            https: false,
            host: "10.0.0.5".into(),
            port: 8080,
            path: "/a/b?q".into(),
            headers: vec![],
        };
        assert_eq!(resolve_location(&base, "/c").unwrap().url(), "http://10.0.0.5:8080/c");
        assert_eq!(resolve_location(&base, "c").unwrap().url(), "http://10.0.0.5:8080/a/c");
        let other = resolve_location(&base, "https://example.invalid/x").unwrap();
        assert_eq!(other.url(), "https://example.invalid:443/x");
        assert_eq!(resolve_location(&base, "//10.0.0.5:81").unwrap().url(), "http://10.0.0.5:81/");
    }

    /// A one-shot HTTP server on loopback: answers each connection from `respond(path)`.
    async fn serve(
        respond: impl Fn(&str) -> String + Send + Sync + 'static,
    ) -> (u16, tokio::sync::mpsc::UnboundedReceiver<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let respond = std::sync::Arc::new(respond);
        tokio::spawn(async move {
            for _ in 0..50 {
                let Ok((mut socket, _)) = listener.accept().await else { return };
                let mut buf = vec![0u8; 4096];
                let mut seen = Vec::new();
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&seen).to_string();
                let path = head.split(' ').nth(1).unwrap_or("").to_string();
                let _ = tx.send(head);
                let _ = socket.write_all(respond(&path).as_bytes()).await;
            }
        });
        (port, rx)
    }

    fn reply(status: &str, extra: &str, body: &str) -> String {
        format!("HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\n\r\n{body}", body.len())
    }

    fn local(port: u16, path: &str) -> HttpRequest {
        let a = action(json!({"port": port, "path": path, "host": "127.0.0.1",
                              "httpHeaders": [{"name": "X-Probe", "value": "yes"}]}));
        http_request(&a, &container(), "", "probe").unwrap()
    }

    #[tokio::test]
    async fn http_probes_against_a_local_server() {
        let (port, mut heads) = serve(|path| match path {
            "/ok" => reply("200 OK", "", "fine"),
            "/bad" => reply("500 Internal Server Error", "", "boom"),
            "/here" => reply("302 Found", "Location: /ok\r\n", ""),
            "/away" => reply("302 Found", "Location: http://127.0.0.2:1/x\r\n", "bye"),
            "/loop" => reply("302 Found", "Location: /loop\r\n", ""),
            "/big" => reply("200 OK", "", &"x".repeat(20_000)),
            _ => reply("404 Not Found", "", ""),
        })
        .await;
        let t = Duration::from_secs(5);
        assert_eq!(http_probe(&local(port, "/ok"), t).await, Outcome::Success("fine".into()));
        let head = heads.recv().await.unwrap();
        assert!(head.starts_with("GET /ok HTTP/1.1\r\n"), "{head}");
        assert!(head.contains("User-Agent: kube-probe/1.33\r\n"), "{head}");
        assert!(head.contains("Accept: */*\r\n"), "{head}");
        assert!(head.contains("X-Probe: yes\r\n"), "{head}");
        assert!(head.contains(&format!("Host: 127.0.0.1:{port}\r\n")), "{head}");
        assert_eq!(
            http_probe(&local(port, "/bad"), t).await,
            Outcome::Failure("HTTP probe failed with statuscode: 500".into())
        );
        // Same host: followed. Another host: not followed, a warning.
        assert_eq!(http_probe(&local(port, "/here"), t).await, Outcome::Success("fine".into()));
        assert_eq!(
            http_probe(&local(port, "/away"), t).await,
            Outcome::Warning("Probe terminated redirects, Response body: bye".into())
        );
        assert_eq!(
            http_probe(&local(port, "/loop"), t).await,
            Outcome::Failure(format!(
                "Get \"http://127.0.0.1:{port}/loop\": stopped after 10 redirects"
            ))
        );
        match http_probe(&local(port, "/big"), t).await {
            Outcome::Success(body) => assert_eq!(body.len(), MAX_OUTPUT),
            other => panic!("{other:?}"),
        }
        // Nothing listens: Go's words.
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        assert_eq!(
            http_probe(&local(closed, "/"), t).await,
            Outcome::Failure(format!(
                "Get \"http://127.0.0.1:{closed}/\": dial tcp 127.0.0.1:{closed}: connect: \
                 connection refused"
            ))
        );
        assert_eq!(
            tcp_probe("127.0.0.1", closed, t).await,
            Outcome::Failure(format!("dial tcp 127.0.0.1:{closed}: connect: connection refused"))
        );
        assert_eq!(tcp_probe("127.0.0.1", port, t).await, Outcome::Success(String::new()));
    }

    #[tokio::test]
    async fn http_probes_time_out() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        // Accepts and never answers.
        let hold = tokio::spawn(async move {
            let mut held = Vec::new();
            for _ in 0..5 {
                if let Ok((s, _)) = listener.accept().await {
                    held.push(s);
                }
            }
        });
        let outcome = http_probe(&local(port, "/slow"), Duration::from_millis(300)).await;
        assert_eq!(
            outcome,
            Outcome::Failure(format!(
                "Get \"http://127.0.0.1:{port}/slow\": context deadline exceeded \
                 (Client.Timeout exceeded while awaiting headers)"
            ))
        );
        hold.abort();
    }

    #[tokio::test]
    async fn https_probes_do_not_verify_certificates() {
        use openssl::ssl::{SslAcceptor, SslMethod};
        let (cert, key) =
            crate::server::self_signed_certificate("probe-test", IpAddr::from([127, 0, 0, 1]))
                .unwrap();
        let cert = openssl::x509::X509::from_pem(&cert).unwrap();
        let key = openssl::pkey::PKey::private_key_from_pem(&key).unwrap();
        let mut acceptor = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server()).unwrap();
        acceptor.set_certificate(&cert).unwrap();
        acceptor.set_private_key(&key).unwrap();
        let acceptor = acceptor.build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let Ok((socket, _)) = listener.accept().await else { return };
            let ssl = openssl::ssl::Ssl::new(acceptor.context()).unwrap();
            let mut stream = tokio_openssl::SslStream::new(ssl, socket).unwrap();
            if Pin::new(&mut stream).accept().await.is_err() {
                return;
            }
            let mut buf = vec![0u8; 4096];
            let _ = stream.read(&mut buf).await;
            let _ = stream.write_all(reply("200 OK", "", "secure").as_bytes()).await;
            let _ = stream.shutdown().await;
        });
        let a = action(json!({"port": port, "scheme": "HTTPS", "host": "127.0.0.1"}));
        let r = http_request(&a, &container(), "", "probe").unwrap();
        assert_eq!(http_probe(&r, Duration::from_secs(5)).await, Outcome::Success("secure".into()));
    }

    /// `grpc.health.v1.Health` on loopback: SERVING for "", NOT_SERVING for "down", and
    /// Unimplemented for every other method.
    #[derive(Clone)]
    struct Health;

    impl tonic::server::NamedService for Health {
        const NAME: &'static str = "grpc.health.v1.Health";
    }

    struct Check;

    impl tonic::server::UnaryService<HealthCheckRequest> for Check {
        type Response = HealthCheckResponse;
        type Future = futures::future::BoxFuture<
            'static,
            Result<tonic::Response<HealthCheckResponse>, tonic::Status>,
        >;
        fn call(&mut self, request: tonic::Request<HealthCheckRequest>) -> Self::Future {
            let status = match request.get_ref().service.as_str() {
                "" => ServingStatus::Serving,
                "down" => ServingStatus::NotServing,
                _ => return Box::pin(async { Err(tonic::Status::not_found("unknown service")) }),
            };
            Box::pin(async move {
                Ok(tonic::Response::new(HealthCheckResponse { status: status as i32 }))
            })
        }
    }

    impl tower::Service<http::Request<tonic::body::Body>> for Health {
        type Response = http::Response<tonic::body::Body>;
        type Error = std::convert::Infallible;
        type Future = futures::future::BoxFuture<'static, Result<Self::Response, Self::Error>>;

        fn poll_ready(
            &mut self,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), Self::Error>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
            Box::pin(async move {
                if request.uri().path() == "/grpc.health.v1.Health/Check" {
                    let codec =
                        tonic_prost::ProstCodec::<HealthCheckResponse, HealthCheckRequest>::default(
                        );
                    let mut grpc = tonic::server::Grpc::new(codec);
                    Ok(grpc.unary(Check, request).await)
                } else {
                    Ok(tonic::Status::unimplemented("").into_http())
                }
            })
        }
    }

    #[tokio::test]
    async fn grpc_probes_against_a_local_health_server() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        let server = tokio::spawn(
            tonic::transport::Server::builder().add_service(Health).serve_with_incoming(incoming),
        );
        let t = Duration::from_secs(5);
        assert_eq!(
            grpc_probe("127.0.0.1", port, "", t).await,
            Outcome::Success("service healthy".into())
        );
        assert_eq!(
            grpc_probe("127.0.0.1", port, "down", t).await,
            Outcome::Failure("service unhealthy (responded with \"NOT_SERVING\")".into())
        );
        match grpc_probe("127.0.0.1", port, "other", t).await {
            Outcome::Failure(m) => {
                assert!(m.starts_with("error: health rpc probe failed: rpc error:"), "{m}")
            }
            other => panic!("{other:?}"),
        }
        server.abort();
        // Nothing listens: the connection is retried until the timeout, as upstream's
        // blocking dial.
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        assert_eq!(
            grpc_probe("127.0.0.1", closed, "", Duration::from_millis(400)).await,
            Outcome::Failure(format!(
                "timeout: failed to connect service \"127.0.0.1:{closed}\" within 400ms: \
                 context deadline exceeded"
            ))
        );
    }

    #[test]
    fn go_words() {
        assert_eq!(go_duration(Duration::from_secs(1)), "1s");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(go_duration(Duration::from_millis(400)), "400ms");
        assert_eq!(
            timed_out(&["sh".into(), "-c".into(), "sleep 5".into()]),
            "command \"sh -c sleep 5\" timed out"
        );
        assert_eq!(ServingStatus::proto_name(3), "SERVICE_UNKNOWN");
        assert_eq!(canonical_header("x-forwarded-for"), "X-Forwarded-For");
    }
}
