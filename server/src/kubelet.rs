//! The subresources served by a node's kubelet, reached through this server as kube-apiserver
//! reaches them: `pods/log`, `pods/exec`, `pods/attach`, `pods/portforward` and `nodes/proxy`.
//!
//! Each request is checked and translated here (which pod and container, which node, which
//! kubelet address and port, which kubelet path and query: upstream's `LogLocation`,
//! `ExecLocation`, `AttachLocation`, `PortForwardLocation` and node `ResourceLocation`), then
//! sent with [`crate::proxy`] over HTTPS, presenting the API server's kubelet-client
//! certificate. `pods/proxy` ([`crate::pod_proxy`]) shares the forwarding of `nodes/proxy`. Logs stream back as they come; exec, attach and port-forward are connection
//! upgrades (WebSocket or SPDY) spliced through; `nodes/proxy` forwards anything.
//!
//! The kubelet-facing contract:
//!
//! | API request | kubelet request |
//! |---|---|
//! | `GET pods/{pod}/log?container&follow&previous&sinceSeconds&sinceTime&timestamps&tailLines&limitBytes` | `GET /containerLogs/{ns}/{pod}/{container}?follow=true&limitBytes=N&previous=true&sinceSeconds=N&sinceTime=RFC3339&tailLines=N&timestamps=true` |
//! | `GET/POST pods/{pod}/exec?container&command...&stdin&stdout&stderr&tty` (upgrade) | same method, `/exec/{ns}/{pod}/{container}?command=...&error=1&input=1&output=1&tty=1` |
//! | `GET/POST pods/{pod}/attach?container&stdin&stdout&stderr&tty` (upgrade) | same method, `/attach/{ns}/{pod}/{container}?error=1&input=1&output=1&tty=1` |
//! | `GET/POST pods/{pod}/portforward?ports=P` (upgrade) | same method, `/portForward/{ns}/{pod}?port=P1,P2` |
//! | `{any} nodes/{node}/proxy/{path}?{query}` | same method, `/{path}?{query}`, body and response passed through |
//!
//! Query parameters go out as Go's `url.Values.Encode` writes them (sorted by key).

use std::net::SocketAddr;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use http_body_util::BodyExt;
use hyper::upgrade::OnUpgrade;
use openssl::ssl::SslConnector;
use rkube_apis::validation::FieldError;
use serde_json::{json, Value};

use crate::api::ApiState;
use crate::proxy::{self, Endpoint, Tls};
use crate::request::ResourceRequest;
use crate::status::{ApiError, ApiResult};

/// The kubelet port when a Node does not report one (`--kubelet-port`).
pub const DEFAULT_KUBELET_PORT: u16 = 10250;

/// kube-apiserver's default `--kubelet-preferred-address-types`, in its order.
pub const DEFAULT_PREFERRED_ADDRESS_TYPES: [&str; 5] =
    ["Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP"];

/// How much of a kubelet's error body becomes the error message (upstream's maxReadLength).
const MAX_ERROR_BODY: usize = 50_000;

/// How the API server checks the kubelet's serving certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KubeletServerVerification {
    /// Not checked at all: kube-apiserver's behaviour when `--kubelet-certificate-authority`
    /// is not set. The connection is encrypted, but anyone at the node's address can answer.
    InsecureSkipVerify,
    /// `--kubelet-certificate-authority`: the kubelet's certificate must chain to one of these
    /// (PEM) and name the address dialed.
    CertificateAuthority(Vec<u8>),
}

/// How the API server reaches kubelets (`--kubelet-client-certificate`,
/// `--kubelet-client-key`, `--kubelet-certificate-authority`,
/// `--kubelet-preferred-address-types`, `--kubelet-port`).
#[derive(Clone)]
pub struct KubeletClientConfig {
    /// The certificate (chain) presented to kubelets, PEM: the cluster's
    /// `apiserver-kubelet-client.crt` (CN `kube-apiserver-kubelet-client`).
    pub client_cert_pem: Vec<u8>,
    pub client_key_pem: Vec<u8>,
    pub server_verification: KubeletServerVerification,
    /// Which of a Node's `status.addresses` to dial, first match wins.
    pub preferred_address_types: Vec<String>,
    /// The port when the Node's `status.daemonEndpoints.kubeletEndpoint.Port` is unset.
    pub default_port: u16,
}

impl KubeletClientConfig {
    /// Presents `client_cert_pem`/`client_key_pem`, with upstream's defaults for the rest
    /// (no verification of the kubelet's certificate, the default address order, port 10250).
    pub fn new(client_cert_pem: Vec<u8>, client_key_pem: Vec<u8>) -> KubeletClientConfig {
        KubeletClientConfig {
            client_cert_pem,
            client_key_pem,
            server_verification: KubeletServerVerification::InsecureSkipVerify,
            preferred_address_types: DEFAULT_PREFERRED_ADDRESS_TYPES
                .iter()
                .map(|t| t.to_string())
                .collect(),
            default_port: DEFAULT_KUBELET_PORT,
        }
    }
}

impl std::fmt::Debug for KubeletClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeletClientConfig")
            .field("server_verification", &self.server_verification)
            .field("preferred_address_types", &self.preferred_address_types)
            .field("default_port", &self.default_port)
            .finish_non_exhaustive()
    }
}

/// The TLS clients and address rules this server reaches kubelets with.
pub struct KubeletClient {
    /// With the kubelet-client certificate; `None` when none is configured.
    kubelet_tls: Option<SslConnector>,
    /// No client certificate, no verification: `nodes/{node}:{other port}/proxy` and
    /// `pods/https:{pod}:{port}/proxy` over https (upstream's proxy transport).
    pub(crate) anonymous_tls: SslConnector,
    preferred_address_types: Vec<String>,
    default_port: u16,
}

impl KubeletClient {
    /// `None`: no kubelet access (requests that need a kubelet get a 503 saying so).
    pub fn new(config: Option<&KubeletClientConfig>) -> crate::error::StartResult<KubeletClient> {
        let kubelet_tls = match config {
            Some(c) => {
                let ca = match &c.server_verification {
                    KubeletServerVerification::InsecureSkipVerify => None,
                    KubeletServerVerification::CertificateAuthority(pem) => Some(pem.as_slice()),
                };
                Some(
                    proxy::tls_connector(Some((&c.client_cert_pem, &c.client_key_pem)), ca)
                        .map_err(|e| crate::error::StartError::KubeletClient(Box::new(e)))?,
                )
            }
            None => None,
        };
        Ok(KubeletClient {
            kubelet_tls,
            anonymous_tls: proxy::tls_connector(None, None)?,
            preferred_address_types: config
                .map(|c| c.preferred_address_types.clone())
                .unwrap_or_else(|| DEFAULT_PREFERRED_ADDRESS_TYPES.map(String::from).to_vec()),
            default_port: config.map(|c| c.default_port).unwrap_or(DEFAULT_KUBELET_PORT),
        })
    }

    fn kubelet_tls(&self, node: &str, skip_verify: bool) -> ApiResult<Tls<'_>> {
        match &self.kubelet_tls {
            Some(connector) => Ok(Tls { connector, skip_verify }),
            None => Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailable",
                format!(
                    "cannot reach the kubelet of node {node:?}: this API server has no kubelet \
                     client certificate configured (--kubelet-client-certificate, \
                     --kubelet-client-key)"
                ),
            )),
        }
    }

    /// GETs `path_and_query` from the kubelet of `node` (a Node object) with the
    /// kubelet-client certificate, at the node's preferred address and kubelet port: the
    /// status code and at most `limit` bytes of the body. The error is a message for logs.
    pub async fn get(
        &self,
        node: &Value,
        path_and_query: &str,
        limit: usize,
    ) -> Result<(u16, bytes::Bytes), String> {
        let name = node["metadata"]["name"].as_str().unwrap_or("");
        let host = preferred_address(node, &self.preferred_address_types)?;
        let endpoint =
            Endpoint { scheme: "https", host, port: kubelet_port(node, self.default_port) };
        let tls = self.kubelet_tls(name, false).map_err(|e| e.message)?;
        let failed = |e: String| format!("Get {:?}: {e}", endpoint.url(path_and_query));
        let sender = proxy::connect(&endpoint, Some(tls)).await.map_err(failed)?;
        let request = http::Request::get(path_and_query)
            .header(http::header::HOST, endpoint.authority())
            .header(http::header::USER_AGENT, "rkube-apiserver")
            .body(Body::empty())
            .map_err(|e| e.to_string())?;
        let response = proxy::send(sender, request).await.map_err(failed)?;
        let code = response.status().as_u16();
        let body = http_body_util::Limited::new(response.into_body(), limit)
            .collect()
            .await
            .map_err(|e| failed(format!("reading the body: {e}")))?
            .to_bytes();
        Ok((code, body))
    }
}

/// What a kubelet subresource needs of the request besides its parsed target: the URI (for
/// the repeated query parameters and the proxied path), the body unread, hyper's handle on
/// the connection upgrade, and the client's address.
pub struct RawRequest {
    pub method: Method,
    pub headers: HeaderMap,
    pub uri: Uri,
    pub body: Body,
    pub upgrade: Option<OnUpgrade>,
    pub peer: Option<SocketAddr>,
}

/// A connect handler of the subresource table (`crate::subresources`): serves one request
/// that goes on to a kubelet, with its connection.
pub type Connect = for<'a> fn(&'a ApiState, &'a ResourceRequest, RawRequest) -> Connected<'a>;

/// What a connect handler returns: the response, once the request has been passed on.
pub type Connected<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = ApiResult<Response>> + Send + 'a>>;

/// The request's name, namespace and query.
fn target<'a>(r: &'a ResourceRequest, raw: &RawRequest) -> ApiResult<(&'a str, &'a str, Params)> {
    let name = r.name.as_deref().ok_or_else(ApiError::path_not_found)?;
    Ok((r.namespace.as_deref().unwrap_or(""), name, Params::parse(raw.uri.query())))
}

/// `pods/log`: the container's log from the node's kubelet, over a WebSocket when asked.
pub fn pod_log<'a>(state: &'a ApiState, r: &'a ResourceRequest, raw: RawRequest) -> Connected<'a> {
    Box::pin(async move {
        let (ns, name, params) = target(r, &raw)?;
        if raw.method != Method::GET {
            return Err(method_not_allowed());
        }
        let log = read_pod_log(state, ns, name, &params).await?;
        // Upstream streams the log over a WebSocket when the client asks for one.
        if !crate::websocket_stream::is_websocket_request(&raw.headers) {
            return Ok(log);
        }
        let body = log.into_body();
        crate::websocket_stream::serve(&raw.method, &raw.uri, &raw.headers, raw.upgrade, body).await
    })
}

/// `pods/exec` and `pods/attach`: a stream session with a container, upgraded through to
/// the kubelet.
pub fn pod_stream<'a>(
    state: &'a ApiState,
    r: &'a ResourceRequest,
    raw: RawRequest,
) -> Connected<'a> {
    Box::pin(async move {
        let (ns, name, params) = target(r, &raw)?;
        let sub = r.subresource.as_deref().unwrap_or("");
        let pod = upgradable_pod(state, ns, name, &raw.method).await?;
        let container = choose_container(&pod, params.first("container"))?;
        let path = format!("/{sub}/{}/{}/{}", segment(ns), segment(name), segment(&container));
        let query = stream_query(&params, sub == "exec");
        upgrade_to_kubelet(state, &pod, name, with_query(path, &query), raw).await
    })
}

/// `pods/portforward`: forwarded ports, upgraded through to the kubelet.
pub fn pod_port_forward<'a>(
    state: &'a ApiState,
    r: &'a ResourceRequest,
    raw: RawRequest,
) -> Connected<'a> {
    Box::pin(async move {
        let (ns, name, params) = target(r, &raw)?;
        let ports = forward_ports(&params)?;
        let pod = upgradable_pod(state, ns, name, &raw.method).await?;
        let path = format!("/portForward/{}/{}", segment(ns), segment(name));
        let query = if ports.is_empty() {
            String::new()
        } else {
            let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
            go_encode(vec![("port", ports.join(","))])
        };
        upgrade_to_kubelet(state, &pod, name, with_query(path, &query), raw).await
    })
}

/// The pod of an exec, attach or port-forward (asked with GET or POST).
async fn upgradable_pod(
    state: &ApiState,
    ns: &str,
    name: &str,
    method: &Method,
) -> ApiResult<Value> {
    if !matches!(*method, Method::GET | Method::POST) {
        return Err(method_not_allowed());
    }
    get_pod(state, ns, name).await
}

/// The request upgraded through to `path` on the kubelet of the pod's node.
async fn upgrade_to_kubelet(
    state: &ApiState,
    pod: &Value,
    name: &str,
    path: String,
    raw: RawRequest,
) -> ApiResult<Response> {
    let node = assigned_node(pod, name)?;
    let endpoint = kubelet_endpoint(state, node).await?;
    let tls = state.kubelet.kubelet_tls(node, false).map(Some);
    let (method, headers) = (raw.method.clone(), raw.headers.clone());
    upgrade(&method, &headers, &endpoint, tls, &path, raw).await
}

/// `nodes/proxy`: any request, passed on to the node's kubelet.
pub fn node_proxy_connect<'a>(
    state: &'a ApiState,
    r: &'a ResourceRequest,
    raw: RawRequest,
) -> Connected<'a> {
    Box::pin(async move {
        let (_, name, _) = target(r, &raw)?;
        let (method, headers) = (&raw.method.clone(), &raw.headers.clone());
        node_proxy(state, method, headers, name, r, raw).await
    })
}

/// `pods/proxy`: any request, passed on to the pod over the pod network.
pub fn pod_proxy_connect<'a>(
    state: &'a ApiState,
    r: &'a ResourceRequest,
    raw: RawRequest,
) -> Connected<'a> {
    namespaced_proxy(state, r, raw, ProxyTarget::Pod)
}

/// `services/proxy`: any request, passed on to one of the Service's endpoints.
pub fn service_proxy_connect<'a>(
    state: &'a ApiState,
    r: &'a ResourceRequest,
    raw: RawRequest,
) -> Connected<'a> {
    namespaced_proxy(state, r, raw, ProxyTarget::Service)
}

/// What a namespaced `proxy` subresource reaches.
enum ProxyTarget {
    Pod,
    Service,
}

fn namespaced_proxy<'a>(
    state: &'a ApiState,
    r: &'a ResourceRequest,
    raw: RawRequest,
    to: ProxyTarget,
) -> Connected<'a> {
    Box::pin(async move {
        let (ns, name, _) = target(r, &raw)?;
        let (method, headers) = (&raw.method.clone(), &raw.headers.clone());
        match to {
            ProxyTarget::Pod => {
                crate::pod_proxy::serve(state, method, headers, ns, name, r, raw).await
            }
            ProxyTarget::Service => {
                crate::service_proxy::serve(state, method, headers, ns, name, r, raw).await
            }
        }
    })
}

fn method_not_allowed() -> ApiError {
    ApiError::method_not_allowed("the server does not allow this method on the requested resource")
}

/// An error kube-apiserver would answer from a plain Go error: 500, no reason.
fn unknown(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "", message)
}

async fn get_pod(state: &ApiState, ns: &str, name: &str) -> ApiResult<Value> {
    let pods = rkube_apis::resources::Resources::builtin()
        .get("", "v1", "pods")
        .expect("pods are built in");
    state.registry.get(pods, Some(ns), name).await
}

fn node_name(pod: &Value) -> Option<&str> {
    pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty())
}

fn assigned_node<'a>(pod: &'a Value, name: &str) -> ApiResult<&'a str> {
    node_name(pod)
        .ok_or_else(|| ApiError::bad_request(format!("pod {name} does not have a host assigned")))
}

/// Where the node's kubelet listens: its preferred address and its reported port.
async fn kubelet_endpoint(state: &ApiState, node: &str) -> ApiResult<Endpoint> {
    let nodes = rkube_apis::resources::Resources::builtin()
        .get("", "v1", "nodes")
        .expect("nodes are built in");
    let node = state.registry.get(nodes, None, node).await?;
    let host = preferred_address(&node, &state.kubelet.preferred_address_types).map_err(unknown)?;
    Ok(Endpoint { scheme: "https", host, port: kubelet_port(&node, state.kubelet.default_port) })
}

/// The first of the node's `status.addresses` of the first preferred type that has one; for
/// `Hostname`, the `kubernetes.io/hostname` label when no such address is listed (upstream's
/// GetPreferredNodeAddress).
pub fn preferred_address(node: &Value, preferred_types: &[String]) -> Result<String, String> {
    let addresses: &[Value] = node["status"]["addresses"].as_array().map_or(&[], Vec::as_slice);
    for wanted in preferred_types {
        let found = addresses.iter().find(|a| a["type"].as_str() == Some(wanted.as_str()));
        if let Some(address) = found.and_then(|a| a["address"].as_str()) {
            return Ok(address.to_string());
        }
        if wanted == "Hostname" {
            if let Some(h) = node["metadata"]["labels"]["kubernetes.io/hostname"].as_str() {
                if !h.is_empty() {
                    return Ok(h.to_string());
                }
            }
        }
    }
    let known: Vec<String> = addresses
        .iter()
        .map(|a| {
            format!(
                "{{{} {}}}",
                a["type"].as_str().unwrap_or(""),
                a["address"].as_str().unwrap_or("")
            )
        })
        .collect();
    Err(format!("no preferred addresses found; known addresses: [{}]", known.join(" ")))
}

/// `status.daemonEndpoints.kubeletEndpoint.Port`, or `default` when unset or not positive.
pub fn kubelet_port(node: &Value, default: u16) -> u16 {
    node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
        .as_i64()
        .filter(|p| *p > 0)
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or(default)
}

/// The container a log, exec or attach request is for: the one named (any of init, regular
/// and ephemeral containers), or the only container; otherwise upstream's BadRequest.
pub fn choose_container(pod: &Value, requested: Option<&str>) -> ApiResult<String> {
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    let names = |field: &str| -> Vec<String> {
        pod["spec"][field]
            .as_array()
            .map(|cs| cs.iter().filter_map(|c| c["name"].as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    let containers = names("containers");
    // The order podutil.VisitContainers walks them in.
    let all: Vec<String> = names("initContainers")
        .into_iter()
        .chain(containers.iter().cloned())
        .chain(names("ephemeralContainers"))
        .collect();
    match requested.filter(|c| !c.is_empty()) {
        Some(c) if all.iter().any(|n| n == c) => Ok(c.to_string()),
        Some(c) => Err(ApiError::bad_request(format!("container {c} is not valid for pod {name}"))),
        None => match containers.len() {
            1 => Ok(containers[0].clone()),
            0 => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            _ => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                all.join(" ")
            ))),
        },
    }
}

/// The query parameters, every value of each, in order.
#[derive(Debug, Default)]
pub struct Params(Vec<(String, String)>);

impl Params {
    pub fn parse(query: Option<&str>) -> Params {
        Params(
            query
                .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
                .unwrap_or_default(),
        )
    }

    pub fn first(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    pub fn all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0.iter().filter(move |(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// A boolean option as apimachinery converts query values: absent is false, and so are
    /// `0` and `false` (any case); anything else, even empty, is true.
    pub fn flag(&self, key: &str) -> bool {
        self.first(key).is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
    }

    fn int(&self, key: &str) -> ApiResult<Option<i64>> {
        match self.first(key) {
            None => Ok(None),
            Some(v) => v.parse::<i64>().map(Some).map_err(|e| {
                let why = match e.kind() {
                    std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                        "value out of range"
                    }
                    _ => "invalid syntax",
                };
                ApiError::bad_request(format!("strconv.ParseInt: parsing {v:?}: {why}"))
            }),
        }
    }
}

/// `PodLogOptions` as read from the query.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LogOptions {
    pub container: Option<String>,
    pub follow: bool,
    pub previous: bool,
    pub timestamps: bool,
    pub since_seconds: Option<i64>,
    /// RFC 3339, in UTC, whole seconds (as Go formats `time.RFC3339`).
    pub since_time: Option<String>,
    pub tail_lines: Option<i64>,
    pub limit_bytes: Option<i64>,
    pub insecure_skip_tls_verify_backend: bool,
    pub stream: Option<String>,
}

impl LogOptions {
    /// Decodes the options; a value that is not of its type is a 400, as upstream.
    pub fn parse(params: &Params) -> ApiResult<LogOptions> {
        let since_time = match params.first("sinceTime").filter(|t| !t.is_empty() && *t != "null") {
            None => None,
            Some(t) => Some(
                chrono::DateTime::parse_from_rfc3339(t)
                    .map_err(|e| {
                        ApiError::bad_request(format!(
                            "parsing time {t:?} as \"2006-01-02T15:04:05Z07:00\": {e}"
                        ))
                    })?
                    .to_utc()
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            ),
        };
        Ok(LogOptions {
            container: params.first("container").filter(|c| !c.is_empty()).map(String::from),
            follow: params.flag("follow"),
            previous: params.flag("previous"),
            timestamps: params.flag("timestamps"),
            since_seconds: params.int("sinceSeconds")?,
            since_time,
            tail_lines: params.int("tailLines")?,
            limit_bytes: params.int("limitBytes")?,
            insecure_skip_tls_verify_backend: params.flag("insecureSkipTLSVerifyBackend"),
            stream: params.first("stream").map(String::from),
        })
    }

    /// upstream's ValidatePodLogOptions (with the PodLogsQuerySplitStreams gate off, as in
    /// v1.33 by default).
    pub fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(n) = self.tail_lines.filter(|n| *n < 0) {
            errors.push(FieldError::invalid(
                "tailLines",
                &json!(n),
                "must be greater than or equal to 0",
            ));
        }
        if let Some(n) = self.limit_bytes.filter(|n| *n < 1) {
            errors.push(FieldError::invalid("limitBytes", &json!(n), "must be greater than 0"));
        }
        match (self.since_seconds, &self.since_time) {
            (Some(_), Some(_)) => errors.push(FieldError::forbidden(
                "",
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            )),
            (Some(n), None) if n < 1 => errors.push(FieldError::invalid(
                "sinceSeconds",
                &json!(n),
                "must be greater than 0",
            )),
            _ => {}
        }
        if self.stream.is_some() {
            errors.push(FieldError::forbidden("stream", "may not be specified"));
        }
        errors
    }

    /// The kubelet's `/containerLogs` query.
    pub fn kubelet_query(&self) -> String {
        let mut params = Vec::new();
        let mut flag = |on: bool, key: &'static str| {
            if on {
                params.push((key, "true".to_string()));
            }
        };
        flag(self.follow, "follow");
        flag(self.previous, "previous");
        flag(self.timestamps, "timestamps");
        if let Some(n) = self.since_seconds {
            params.push(("sinceSeconds", n.to_string()));
        }
        if let Some(t) = &self.since_time {
            params.push(("sinceTime", t.clone()));
        }
        if let Some(n) = self.tail_lines {
            params.push(("tailLines", n.to_string()));
        }
        if let Some(n) = self.limit_bytes {
            params.push(("limitBytes", n.to_string()));
        }
        go_encode(params)
    }
}

/// The kubelet query of an exec (or attach, without `command`): upstream's streamParams.
pub fn stream_query(params: &Params, exec: bool) -> String {
    let mut out = Vec::new();
    for (option, kubelet) in
        [("stdin", "input"), ("stdout", "output"), ("stderr", "error"), ("tty", "tty")]
    {
        if params.flag(option) {
            out.push((kubelet, "1".to_string()));
        }
    }
    if exec {
        out.extend(params.all("command").map(|c| ("command", c.to_string())));
    }
    go_encode(out)
}

/// The `ports` of a port-forward: repeated, or comma-separated, each a port number.
pub fn forward_ports(params: &Params) -> ApiResult<Vec<u16>> {
    let mut ports = Vec::new();
    for value in params.all("ports") {
        for p in value.split(',') {
            let port = p.parse::<u16>().map_err(|e| {
                let why = match e.kind() {
                    std::num::IntErrorKind::PosOverflow => "value out of range",
                    _ => "invalid syntax",
                };
                ApiError::bad_request(format!(
                    "cannot convert to []int32: strconv.ParseUint: parsing {p:?}: {why}"
                ))
            })?;
            ports.push(port);
        }
    }
    Ok(ports)
}

/// Go's `url.Values.Encode`: sorted by key (stable, so repeated keys keep their order),
/// `QueryEscape`d.
pub fn go_encode(mut params: Vec<(&str, String)>) -> String {
    params.sort_by(|a, b| a.0.cmp(b.0));
    params
        .iter()
        .map(|(k, v)| format!("{}={}", query_escape(k), query_escape(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Go's `url.QueryEscape`: unreserved bytes as they are, space as `+`, the rest `%XX`.
fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// One path segment, escaped.
fn segment(s: &str) -> String {
    const SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~')
        .remove(b':')
        .remove(b'@');
    percent_encoding::utf8_percent_encode(s, SET).to_string()
}

fn with_query(path: String, query: &str) -> String {
    if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    }
}

/// `pods/{pod}/log`: upstream's LogREST and LocationStreamer.
async fn read_pod_log(
    state: &ApiState,
    ns: &str,
    name: &str,
    params: &Params,
) -> ApiResult<Response> {
    let options = LogOptions::parse(params)?;
    let problems = options.validate();
    if !problems.is_empty() {
        return Err(ApiError::invalid("", "PodLogOptions", name, problems));
    }
    let pod = get_pod(state, ns, name).await?;
    let container = choose_container(&pod, options.container.as_deref())?;
    let Some(node) = node_name(&pod) else {
        // Not scheduled yet: nothing to read (upstream answers with an empty location).
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let endpoint = kubelet_endpoint(state, node).await?;
    let tls = state.kubelet.kubelet_tls(node, options.insecure_skip_tls_verify_backend)?;
    let path = format!("/containerLogs/{}/{}/{}", segment(ns), segment(name), segment(&container));
    let path_and_query = with_query(path, &options.kubelet_query());
    let failed = |e: String| unknown(format!("Get {:?}: {e}", endpoint.url(&path_and_query)));
    let sender = proxy::connect(&endpoint, Some(tls)).await.map_err(failed)?;
    let request = http::Request::get(path_and_query.as_str())
        .header(http::header::HOST, endpoint.authority())
        .header(http::header::USER_AGENT, "rkube-apiserver")
        .body(Body::empty())
        .map_err(|e| unknown(e.to_string()))?;
    let response = proxy::send(sender, request).await.map_err(failed)?;
    let code = response.status().as_u16();
    if !(200..=206).contains(&code) {
        let body = read_error_body(response.into_body()).await;
        return Err(kubelet_error(code, &body, "pods/log", name));
    }
    let mut out = Response::new(Body::new(response.into_body()));
    out.headers_mut().insert(http::header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(out)
}

/// The start of an error body (the kubelet writes short plain-text errors).
async fn read_error_body(mut body: hyper::body::Incoming) -> String {
    let mut bytes = Vec::new();
    let read = async {
        while bytes.len() < MAX_ERROR_BODY {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        bytes.extend_from_slice(data);
                    }
                }
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), read).await;
    bytes.truncate(MAX_ERROR_BODY);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A kubelet's error answer as upstream's GenericHttpResponseChecker reports it: its text as
/// the message of a 500 or 400; otherwise apimachinery's generic message for the code, with
/// the kubelet's text as the cause.
pub fn kubelet_error(code: u16, body: &str, resource: &str, name: &str) -> ApiError {
    match code {
        500 => {
            let mut e = ApiError::internal(format!("Internal error occurred: {body}"));
            e.details.causes =
                vec![FieldError { reason: "", message: body.into(), field: "".into() }];
            e
        }
        400 => ApiError::bad_request(body),
        _ => {
            let (reason, message) = match code {
                409 => ("Conflict", "the server reported a conflict".to_string()),
                404 => ("NotFound", "the server could not find the requested resource".into()),
                401 => {
                    ("Unauthorized", "the server has asked for the client to provide credentials".into())
                }
                403 => ("Forbidden", body.to_string()),
                405 => (
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource".into(),
                ),
                406 => ("NotAcceptable", body.to_string()),
                415 => ("UnsupportedMediaType", body.to_string()),
                422 => ("Invalid", "the server rejected our request due to an error in our request".into()),
                429 => (
                    "TooManyRequests",
                    "the server has received too many requests and has asked us to try again later"
                        .into(),
                ),
                503 => ("ServiceUnavailable", "the server is currently unable to handle the request".into()),
                504 => (
                    "Timeout",
                    "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
                ),
                c if c >= 500 => (
                    "InternalError",
                    format!("an error on the server ({body:?}) has prevented the request from succeeding"),
                ),
                c => ("", format!("the server responded with the status code {c} but did not return more information")),
            };
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut e = ApiError::new(status, reason, format!("{message} ( {resource} {name})"));
            e.details.name = Some(name.to_string());
            e.details.kind = Some(resource.to_string());
            e.details.causes = vec![FieldError {
                reason: "UnexpectedServerResponse",
                message: body.to_string(),
                field: String::new(),
            }];
            e
        }
    }
}

/// An upgrade (exec, attach, port-forward, or an upgrading `nodes/proxy` request) through to
/// the kubelet: upstream's UpgradeAwareHandler.tryUpgrade.
async fn upgrade(
    method: &Method,
    headers: &HeaderMap,
    endpoint: &Endpoint,
    tls: ApiResult<Option<Tls<'_>>>,
    path_and_query: &str,
    raw: RawRequest,
) -> ApiResult<Response> {
    let Some(client) = raw.upgrade.filter(|_| proxy::is_upgrade_request(headers)) else {
        return Err(ApiError::bad_request("Upgrade request required"));
    };
    let sender = proxy::connect(endpoint, tls?)
        .await
        .map_err(|e| unknown(format!("error dialing backend: {e}")))?;
    let mut request = http::Request::builder()
        .method(method.clone())
        .uri(path_and_query)
        .body(raw.body)
        .map_err(|e| unknown(e.to_string()))?;
    *request.headers_mut() = proxy::forwarded_headers(headers, true, raw.peer.map(|p| p.ip()));
    set_host(&mut request, endpoint);
    let response = proxy::send(sender, request)
        .await
        .map_err(|e| unknown(format!("error sending request: {e}")))?;
    match response.status() {
        StatusCode::SWITCHING_PROTOCOLS => Ok(proxy::switch_protocols(client, response)),
        // The kubelet's own refusal reaches the client as it is.
        s if s.as_u16() >= 400 => Ok(proxy::passthrough(response)),
        s => Err(unknown(format!("invalid upgrade response: status code {}", s.as_u16()))),
    }
}

fn set_host(request: &mut http::Request<Body>, endpoint: &Endpoint) {
    if let Ok(host) = HeaderValue::from_str(&endpoint.authority()) {
        request.headers_mut().insert(http::header::HOST, host);
    }
}

/// `nodes/{name}/proxy/{path}`: anything, to the node's kubelet (or, for `{node}:{port}`
/// with another port, to that port).
async fn node_proxy(
    state: &ApiState,
    method: &Method,
    headers: &HeaderMap,
    id: &str,
    r: &ResourceRequest,
    raw: RawRequest,
) -> ApiResult<Response> {
    check_proxy_method(method)?;
    let (scheme, node, port) = split_scheme_name_port(id)
        .ok_or_else(|| ApiError::bad_request(format!("invalid node request {id:?}")))?;
    let kubelet = kubelet_endpoint(state, node).await?;
    let (endpoint, tls) = match port {
        Some(p) if p != kubelet.port.to_string() => {
            let port = p
                .parse::<u16>()
                .map_err(|_| ApiError::bad_request(format!("invalid node request {id:?}")))?;
            let https = scheme == "https";
            let endpoint =
                Endpoint { scheme: if https { "https" } else { "http" }, host: kubelet.host, port };
            let tls =
                https.then_some(Tls { connector: &state.kubelet.anonymous_tls, skip_verify: true });
            (endpoint, Ok(tls))
        }
        _ => (kubelet, state.kubelet.kubelet_tls(node, false).map(Some)),
    };
    forward(method, headers, &endpoint, tls, &proxy_path(raw.uri.path(), r), raw).await
}

/// The methods a `proxy` subresource passes on (upstream's proxy REST handlers).
pub(crate) fn check_proxy_method(method: &Method) -> ApiResult<()> {
    match *method {
        Method::GET
        | Method::POST
        | Method::PUT
        | Method::PATCH
        | Method::DELETE
        | Method::HEAD
        | Method::OPTIONS => Ok(()),
        _ => Err(method_not_allowed()),
    }
}

/// A `proxy` subresource's request on to `endpoint` (upstream's UpgradeAwareHandler over its
/// proxy transport): an upgrade spliced through; `.../proxy` alone redirected to
/// `.../proxy/`; anything else sent with `path` (after `.../proxy`, see [`proxy_path`]) and
/// the query, its answer streamed back. A backend out of reach is upstream's 503.
pub(crate) async fn forward(
    method: &Method,
    headers: &HeaderMap,
    endpoint: &Endpoint,
    tls: ApiResult<Option<Tls<'_>>>,
    path: &str,
    raw: RawRequest,
) -> ApiResult<Response> {
    let path = path.to_string();
    let query = raw.uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    if proxy::is_upgrade_request(headers) && raw.upgrade.is_some() {
        let path = if path.is_empty() { "/" } else { path.as_str() };
        return upgrade(method, headers, endpoint, tls, &format!("{path}{query}"), raw).await;
    }
    if path.is_empty() && matches!(*method, Method::GET | Method::HEAD) {
        // Upstream redirects `.../proxy` to `.../proxy/`.
        let location = format!("{}/{query}", raw.uri.path());
        let mut response = StatusCode::MOVED_PERMANENTLY.into_response();
        if let Ok(location) = HeaderValue::from_str(&location) {
            response.headers_mut().insert(http::header::LOCATION, location);
        }
        return Ok(response);
    }
    let path = if path.is_empty() { "/".to_string() } else { path };
    let sender = proxy::connect(endpoint, tls?).await.map_err(unreachable)?;
    let mut request = http::Request::builder()
        .method(method.clone())
        .uri(format!("{path}{query}"))
        .body(raw.body)
        .map_err(|e| unknown(e.to_string()))?;
    *request.headers_mut() = proxy::forwarded_headers(headers, false, raw.peer.map(|p| p.ip()));
    set_host(&mut request, endpoint);
    let response = proxy::send(sender, request).await.map_err(unreachable)?;
    Ok(proxy::passthrough(response))
}

/// A proxied backend out of reach: upstream's proxy transport's 503.
pub(crate) fn unreachable(e: String) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "ServiceUnavailable",
        format!("error trying to reach service: {e}"),
    )
}

/// `name`, `name:port` or `scheme:name:port` (upstream's SplitSchemeNamePort).
pub fn split_scheme_name_port(id: &str) -> Option<(&str, &str, Option<&str>)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, None),
        [name, port] => ("", *name, Some(*port)),
        [scheme, name, port] => (*scheme, *name, Some(*port)),
        _ => return None,
    };
    let port = port.filter(|p| !p.is_empty());
    (!name.is_empty() && matches!(scheme, "" | "http" | "https")).then_some((scheme, name, port))
}

/// The path after `.../{name}/proxy` of the request, cleaned as Go's path.Join cleans it
/// (`.` and `..` resolved, repeated slashes merged), with its trailing slash kept; empty when
/// the request names no path at all.
pub fn proxy_path(request_path: &str, r: &ResourceRequest) -> String {
    // `/api/v1` or `/apis/{group}/{version}`, `namespaces/{ns}`, then `{resource}/{name}/proxy`.
    let prefix =
        if r.group.is_empty() { 2 } else { 3 } + if r.namespace.is_some() { 2 } else { 0 } + 3;
    let segments: Vec<&str> = request_path.split('/').filter(|s| !s.is_empty()).collect();
    let rest = segments.get(prefix..).unwrap_or(&[]);
    if rest.is_empty() {
        return if request_path.ends_with('/') { "/".to_string() } else { String::new() };
    }
    let mut cleaned: Vec<&str> = Vec::new();
    for s in rest {
        match *s {
            "." => {}
            ".." => {
                cleaned.pop();
            }
            s => cleaned.push(s),
        }
    }
    let mut path = format!("/{}", cleaned.join("/"));
    if request_path.ends_with('/') && !path.ends_with('/') {
        path.push('/');
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(containers: &[&str], init: &[&str], ephemeral: &[&str]) -> Value {
        let list = |names: &[&str]| -> Value {
            Value::Array(names.iter().map(|n| json!({"name": n, "image": "busybox"})).collect())
        };
        json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "containers": list(containers),
                "initContainers": list(init),
                "ephemeralContainers": list(ephemeral),
            },
        })
    }

    #[test]
    fn the_only_container_is_the_default() {
        assert_eq!(choose_container(&pod(&["app"], &["setup"], &[]), None).unwrap(), "app");
        assert_eq!(choose_container(&pod(&["app"], &[], &[]), Some("")).unwrap(), "app");
    }

    #[test]
    fn a_named_container_may_be_any_kind_of_container() {
        let p = pod(&["a", "b"], &["init"], &["debugger"]);
        for c in ["a", "b", "init", "debugger"] {
            assert_eq!(choose_container(&p, Some(c)).unwrap(), c);
        }
        let e = choose_container(&p, Some("nope")).unwrap_err();
        assert_eq!((e.code.as_u16(), e.reason), (400, "BadRequest"));
        assert_eq!(e.message, "container nope is not valid for pod web");
    }

    #[test]
    fn several_containers_need_a_name_with_upstreams_message() {
        let e = choose_container(&pod(&["a", "b"], &[], &[]), None).unwrap_err();
        assert_eq!(
            e.message,
            "a container name must be specified for pod web, choose one of: [a b]"
        );
        // Init and ephemeral containers are listed too, in VisitContainers' order.
        let e = choose_container(&pod(&["a", "b"], &["i"], &["d"]), None).unwrap_err();
        assert_eq!(
            e.message,
            "a container name must be specified for pod web, choose one of: [i a b d]"
        );
        let e = choose_container(&pod(&[], &[], &[]), None).unwrap_err();
        assert_eq!(e.message, "a container name must be specified for pod web");
    }

    fn node(addresses: &[(&str, &str)], port: Option<i64>) -> Value {
        let addresses: Vec<Value> =
            addresses.iter().map(|(t, a)| json!({"type": t, "address": a})).collect();
        let mut n = json!({"metadata": {"name": "n1"}, "status": {"addresses": addresses}});
        if let Some(p) = port {
            n["status"]["daemonEndpoints"] = json!({"kubeletEndpoint": {"Port": p}});
        }
        n
    }

    fn defaults() -> Vec<String> {
        DEFAULT_PREFERRED_ADDRESS_TYPES.map(String::from).to_vec()
    }

    #[test]
    fn addresses_are_chosen_in_upstreams_default_order() {
        let n = node(
            &[("ExternalIP", "203.0.113.5"), ("InternalIP", "10.0.0.5"), ("Hostname", "n1")],
            None,
        );
        assert_eq!(preferred_address(&n, &defaults()).unwrap(), "n1");
        let n = node(&[("ExternalIP", "203.0.113.5"), ("InternalIP", "10.0.0.5")], None);
        assert_eq!(preferred_address(&n, &defaults()).unwrap(), "10.0.0.5");
        let n = node(&[("ExternalIP", "203.0.113.5")], None);
        assert_eq!(preferred_address(&n, &defaults()).unwrap(), "203.0.113.5");
        // A configured order wins.
        let n = node(&[("Hostname", "n1"), ("InternalIP", "10.0.0.5")], None);
        let ip_first = vec!["InternalIP".to_string(), "Hostname".to_string()];
        assert_eq!(preferred_address(&n, &ip_first).unwrap(), "10.0.0.5");
    }

    #[test]
    fn the_hostname_label_stands_in_for_a_hostname_address() {
        let mut n = node(&[("ExternalIP", "203.0.113.5")], None);
        n["metadata"]["labels"] = json!({"kubernetes.io/hostname": "worker-1"});
        assert_eq!(preferred_address(&n, &defaults()).unwrap(), "worker-1");
    }

    #[test]
    fn no_usable_address_is_an_error_listing_the_known_ones() {
        let n = node(&[("InternalIP", "10.0.0.5")], None);
        let e = preferred_address(&n, &["ExternalIP".to_string()]).unwrap_err();
        assert_eq!(e, "no preferred addresses found; known addresses: [{InternalIP 10.0.0.5}]");
        assert_eq!(
            preferred_address(&node(&[], None), &defaults()).unwrap_err(),
            "no preferred addresses found; known addresses: []"
        );
    }

    #[test]
    fn the_kubelet_port_defaults_to_10250() {
        assert_eq!(kubelet_port(&node(&[], Some(12345)), 10250), 12345);
        assert_eq!(kubelet_port(&node(&[], None), 10250), 10250);
        assert_eq!(kubelet_port(&node(&[], Some(0)), 10250), 10250);
    }

    fn params(q: &str) -> Params {
        Params::parse(Some(q))
    }

    #[test]
    fn log_options_reach_the_kubelet_as_upstream_encodes_them() {
        let o = LogOptions::parse(&params(
            "container=app&follow=true&tailLines=2&timestamps=1&limitBytes=100&previous=false",
        ))
        .unwrap();
        assert_eq!(o.container.as_deref(), Some("app"));
        assert!(o.validate().is_empty());
        assert_eq!(o.kubelet_query(), "follow=true&limitBytes=100&tailLines=2&timestamps=true");
        let o = LogOptions::parse(&params("sinceTime=2024-05-01T12:00:00.5%2B02:00")).unwrap();
        assert_eq!(o.kubelet_query(), "sinceTime=2024-05-01T10%3A00%3A00Z");
        assert_eq!(LogOptions::parse(&params("")).unwrap().kubelet_query(), "");
    }

    #[test]
    fn bad_log_options_are_rejected_as_upstream() {
        let e = LogOptions::parse(&params("tailLines=abc")).unwrap_err();
        assert_eq!(
            (e.code.as_u16(), e.message.as_str()),
            (400, "strconv.ParseInt: parsing \"abc\": invalid syntax")
        );
        assert!(LogOptions::parse(&params("sinceTime=yesterday")).is_err());

        let o = LogOptions::parse(&params("tailLines=-1&limitBytes=0&sinceSeconds=0")).unwrap();
        let lines: Vec<String> = o.validate().iter().map(FieldError::line).collect();
        assert_eq!(
            lines,
            [
                "tailLines: Invalid value: -1: must be greater than or equal to 0",
                "limitBytes: Invalid value: 0: must be greater than 0",
                "sinceSeconds: Invalid value: 0: must be greater than 0",
            ]
        );
        let o =
            LogOptions::parse(&params("sinceSeconds=10&sinceTime=2024-05-01T10:00:00Z")).unwrap();
        let errors = o.validate();
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].line(),
            ": Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
        );
        let e = ApiError::invalid("", "PodLogOptions", "web", o.validate());
        assert_eq!(e.code.as_u16(), 422);
        assert_eq!(
            e.message,
            "PodLogOptions \"web\" is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
        );
    }

    #[test]
    fn exec_and_attach_queries_are_translated_as_upstream() {
        let p = params("command=sh&command=-c&command=echo%20hi%26bye&container=c&stdin=true&stdout=true&stderr=false&tty=1");
        assert_eq!(
            stream_query(&p, true),
            "command=sh&command=-c&command=echo+hi%26bye&input=1&output=1&tty=1"
        );
        assert_eq!(stream_query(&p, false), "input=1&output=1&tty=1");
        // Present-but-empty is true for apimachinery's boolean conversion.
        assert_eq!(stream_query(&params("stderr=&stdout=FALSE"), false), "error=1");
    }

    #[test]
    fn port_forward_ports_are_joined_into_port() {
        let ports = forward_ports(&params("ports=8080&ports=9090,53")).unwrap();
        assert_eq!(ports, [8080, 9090, 53]);
        let joined: Vec<String> = ports.iter().map(u16::to_string).collect();
        assert_eq!(go_encode(vec![("port", joined.join(","))]), "port=8080%2C9090%2C53");
        let e = forward_ports(&params("ports=http")).unwrap_err();
        assert_eq!(
            e.message,
            "cannot convert to []int32: strconv.ParseUint: parsing \"http\": invalid syntax"
        );
        assert!(forward_ports(&params("ports=70000")).is_err());
    }

    #[test]
    fn node_proxy_ids_and_paths() {
        assert_eq!(split_scheme_name_port("n1"), Some(("", "n1", None)));
        assert_eq!(split_scheme_name_port("n1:10255"), Some(("", "n1", Some("10255"))));
        assert_eq!(split_scheme_name_port("https:n1:443"), Some(("https", "n1", Some("443"))));
        assert_eq!(split_scheme_name_port("ftp:n1:21"), None);
        assert_eq!(split_scheme_name_port("a:b:c:d"), None);

        let r = ResourceRequest {
            verb: "get",
            group: String::new(),
            version: "v1".into(),
            namespace: None,
            resource: "nodes".into(),
            name: Some("n1".into()),
            subresource: Some("proxy".into()),
        };
        assert_eq!(proxy_path("/api/v1/nodes/n1/proxy/healthz", &r), "/healthz");
        assert_eq!(proxy_path("/api/v1/nodes/n1/proxy/stats/summary/", &r), "/stats/summary/");
        assert_eq!(proxy_path("/api/v1/nodes/n1/proxy/a//b/../c", &r), "/a/c");
        assert_eq!(proxy_path("/api/v1/nodes/n1/proxy/../../etc", &r), "/etc");
        assert_eq!(proxy_path("/api/v1/nodes/n1/proxy/", &r), "/");
        assert_eq!(proxy_path("/api/v1/nodes/n1/proxy", &r), "");
        // A node may be called `proxy`.
        let mut r = r;
        r.name = Some("proxy".into());
        assert_eq!(proxy_path("/api/v1/nodes/proxy/proxy/proxy", &r), "/proxy");
    }

    #[test]
    fn kubelet_errors_become_upstreams_statuses() {
        let e = kubelet_error(
            400,
            "container \"app\" in pod \"web\" is waiting to start",
            "pods/log",
            "web",
        );
        assert_eq!((e.code.as_u16(), e.reason), (400, "BadRequest"));
        assert_eq!(e.message, "container \"app\" in pod \"web\" is waiting to start");
        let e = kubelet_error(500, "boom", "pods/log", "web");
        assert_eq!(
            (e.reason, e.message.as_str()),
            ("InternalError", "Internal error occurred: boom")
        );
        let e = kubelet_error(404, "no such container", "pods/log", "web");
        assert_eq!(e.reason, "NotFound");
        assert_eq!(e.message, "the server could not find the requested resource ( pods/log web)");
        assert_eq!(e.details.causes[0].message, "no such container");
        let e = kubelet_error(
            403,
            "Forbidden (user=x, verb=get, resource=nodes, subresource=log)",
            "pods/log",
            "web",
        );
        assert_eq!(
            e.message,
            "Forbidden (user=x, verb=get, resource=nodes, subresource=log) ( pods/log web)"
        );
    }

    #[test]
    fn without_a_client_certificate_kubelets_are_out_of_reach() {
        let client = KubeletClient::new(None).unwrap();
        let e = client.kubelet_tls("n1", false).err().expect("no kubelet access");
        assert_eq!((e.code.as_u16(), e.reason), (503, "ServiceUnavailable"));
        assert!(e.message.contains("no kubelet client certificate configured"), "{}", e.message);
        assert!(KubeletClient::new(Some(&KubeletClientConfig::new(
            b"junk".to_vec(),
            b"junk".to_vec()
        )))
        .is_err());
    }

    #[test]
    fn query_escaping_matches_go() {
        assert_eq!(query_escape("a b+c/d:e~f*"), "a+b%2Bc%2Fd%3Ae~f%2A");
        assert_eq!(segment("web-1.x"), "web-1.x");
        assert_eq!(segment("a b/c"), "a%20b%2Fc");
    }
}
