//! The API server's own HTTPS client to a URL or to a Service: what kube-apiserver calls
//! admission webhooks with (and, with the same `clientConfig` shape, CRD conversion webhooks
//! and aggregated API servers).
//!
//! A [`Destination`] is a `url` (`https://host[:port]/path`, host by DNS or an IP), or a
//! Service reached as `https://<name>.<namespace>.svc:<port><path>`: each new connection
//! picks one of the Service's endpoints as `services/proxy` does
//! ([`crate::service_proxy::resolve`], upstream's endpoint resolver; an ExternalName
//! Service is reached at its `externalName` host, as upstream's default resolver does), and the TLS server is
//! verified against the configuration's CA bundle (the system's roots without one) under the
//! name `<name>.<namespace>.svc`. Connections are kept and reused per configuration (one
//! hyper pool per destination and CA bundle), over HTTP/2 when the server offers it by ALPN,
//! else HTTP/1.1. Errors read as Go's client prints them (`Post "https://...": dial tcp
//! 127.0.0.1:9: connect: connection refused`, `... context deadline exceeded`, `tls: failed
//! to verify certificate: x509: certificate signed by unknown authority`).
//!
//! [`ServiceClient::forward`] sends a whole request on, bodies streaming both ways (watches
//! too): the aggregator's proxy to extension API servers, which also present a client
//! certificate ([`ClientConfig::client_cert`]) and may skip verifying the server
//! (`insecureSkipTLSVerify`).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
use openssl::x509::{X509VerifyResult, X509};
use tokio::net::TcpStream;
use tokio_openssl::SslStream;

use crate::registry::Registry;

/// The most of an answer read (upstream reads webhook answers whole; this bounds memory).
const MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// How many configurations keep a pool; past it the pools start again (configurations are
/// few; this bounds what changed configurations leave behind).
const MAX_POOLS: usize = 256;

/// Where requests go.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Destination {
    /// `https://host[:port]/path`.
    Url(String),
    /// A Service's port, by number, and the path on it (`""`: `/`).
    Service { namespace: String, name: String, port: u16, path: String },
}

/// A destination and how to trust it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientConfig {
    pub destination: Destination,
    /// PEM certificates to verify the server with; empty for the system's roots.
    pub ca_bundle: Vec<u8>,
    /// The client certificate and key (PEM) this server presents, if any.
    pub client_cert: Option<ClientCert>,
    /// Do not verify the server at all (an APIService's `insecureSkipTLSVerify`).
    pub insecure_skip_tls_verify: bool,
}

/// A client certificate and its private key, both PEM.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ClientCert {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for ClientCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCert").field("key_pem", &"<redacted>").finish()
    }
}

impl Destination {
    /// Where a webhook's `clientConfig` points: its `url`, else its `service` (namespace,
    /// name, port, path).
    pub fn of_client_config(
        url: Option<&str>,
        service: Option<(&str, &str, u16, &str)>,
    ) -> Result<Destination, String> {
        match (url, service) {
            (Some(url), _) => Ok(Destination::Url(url.to_string())),
            (None, Some((namespace, name, port, path))) => Ok(Destination::Service {
                namespace: namespace.to_string(),
                name: name.to_string(),
                port,
                path: path.to_string(),
            }),
            (None, None) => Err("the webhook's clientConfig has no url and no service".into()),
        }
    }
}

impl ClientConfig {
    /// A configuration that verifies the server with `ca_bundle` and presents no certificate.
    pub fn new(destination: Destination, ca_bundle: Vec<u8>) -> ClientConfig {
        ClientConfig { destination, ca_bundle, client_cert: None, insecure_skip_tls_verify: false }
    }

    /// `https://host[:port]` of the destination, without a path.
    fn base_url(&self) -> String {
        match &self.destination {
            Destination::Url(url) => match url.parse::<Uri>() {
                Ok(uri) => format!("https://{}", authority(&uri)),
                Err(_) => url.clone(),
            },
            Destination::Service { namespace, name, port, .. } => {
                format!("https://{name}.{namespace}.svc:{port}")
            }
        }
    }

    /// The URL of a request with `query` (`timeout=10s`), as errors name it.
    fn url(&self, query: &str) -> String {
        let query = if query.is_empty() { String::new() } else { format!("?{query}") };
        match &self.destination {
            Destination::Url(url) => format!("{url}{query}"),
            Destination::Service { namespace, name, port, path } => {
                let path = if path.is_empty() { "/" } else { path };
                format!("https://{name}.{namespace}.svc:{port}{path}{query}")
            }
        }
    }
}

/// An answer.
#[derive(Debug)]
pub struct Response {
    pub status: StatusCode,
    pub body: Bytes,
}

/// Why a request got no answer: Go's `*url.Error` text, `Post "<url>": <cause>`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClientError(pub String);

/// Why a connection could not be made, as Go words it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct ConnectError(String);

/// The connections of one configuration.
type Pool = Client<Connector, axum::body::Body>;

/// The server's client to URLs and Services, shared by its callers.
pub struct ServiceClient {
    registry: Weak<Registry>,
    pools: Mutex<HashMap<ClientConfig, Pool>>,
}

/// Sends `request` and reads the whole answer (at most [`MAX_RESPONSE_BYTES`]) within
/// `timeout`; the cause of a failure as Go's client words it.
async fn exchange(
    client: &Pool,
    request: http::Request<axum::body::Body>,
    timeout: Duration,
) -> Result<Response, String> {
    let exchange = async {
        let response = client.request(request).await.map_err(|e| cause_of(&e))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok::<_, String>(Response { status, body })
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(answer) => answer,
        Err(_) => Err("context deadline exceeded".into()),
    }
}

impl ServiceClient {
    /// A client that finds Services' endpoints in `registry`.
    pub fn new(registry: Weak<Registry>) -> ServiceClient {
        ServiceClient { registry, pools: Mutex::default() }
    }

    /// POSTs `body` (of `content_type`) to `config`'s destination with `query`, waiting at
    /// most `timeout` for the whole answer.
    pub async fn post(
        &self,
        config: &ClientConfig,
        query: &str,
        content_type: &str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Response, ClientError> {
        let url = config.url(query);
        let failed = |cause: String| ClientError(format!("Post {url:?}: {cause}"));
        let client = self.pool(config).map_err(failed)?;
        let request = http::Request::post(&url)
            .header(http::header::CONTENT_TYPE, content_type)
            .header(http::header::ACCEPT, "application/json, */*")
            .header(http::header::USER_AGENT, "kube-apiserver-admission")
            .body(axum::body::Body::new(Full::new(Bytes::from(body))))
            .map_err(|e| failed(e.to_string()))?;
        exchange(&client, request, timeout).await.map_err(failed)
    }

    /// GETs `path_and_query` from `config`'s destination (whose own path is ignored),
    /// waiting at most `timeout` for the whole answer. Errors as Go's: `Get "<url>": ...`.
    pub async fn get(
        &self,
        config: &ClientConfig,
        path_and_query: &str,
        accept: &str,
        timeout: Duration,
    ) -> Result<Response, ClientError> {
        let url = config.base_url() + path_and_query;
        let failed = |cause: String| ClientError(format!("Get {url:?}: {cause}"));
        let client = self.pool(config).map_err(failed)?;
        let request = http::Request::get(&url)
            .header(http::header::ACCEPT, accept)
            .header(http::header::USER_AGENT, "kube-apiserver")
            .body(axum::body::Body::empty())
            .map_err(|e| failed(e.to_string()))?;
        exchange(&client, request, timeout).await.map_err(failed)
    }

    /// Sends `request` (its method, path, query, headers and streaming body) on to
    /// `config`'s destination, whose own path is ignored, and returns the answer as it
    /// streams in. Hop-by-hop headers are the caller's to remove. No overall timeout (a watch
    /// lasts); dialing has [`crate::proxy::DIAL_TIMEOUT`].
    pub async fn forward(
        &self,
        config: &ClientConfig,
        mut request: http::Request<axum::body::Body>,
    ) -> Result<http::Response<hyper::body::Incoming>, ClientError> {
        let path =
            request.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
        let url = config.base_url() + &path;
        let method = request.method().as_str().to_string();
        let verb = method[..1].to_uppercase() + &method[1..].to_lowercase();
        let failed = |cause: String| ClientError(format!("{verb} {url:?}: {cause}"));
        let client = self.pool(config).map_err(failed)?;
        *request.uri_mut() =
            url.parse().map_err(|e: http::uri::InvalidUri| failed(e.to_string()))?;
        *request.version_mut() = http::Version::HTTP_11;
        client.request(request).await.map_err(|e| failed(cause_of(&e)))
    }

    /// A new HTTP/1.1 connection to `config`'s destination, able to switch protocols: for a
    /// connection upgrade through the aggregator. Dial errors as Go words them.
    pub async fn connect_upgradable(
        &self,
        config: &ClientConfig,
    ) -> Result<hyper::client::conn::http1::SendRequest<axum::body::Body>, ClientError> {
        let failed = |cause: String| ClientError(format!("error dialing backend: {cause}"));
        let target = Target {
            destination: config.destination.clone(),
            insecure: config.insecure_skip_tls_verify,
            tls: tls(config, ALPN_HTTP1).map_err(failed)?,
            registry: self.registry.clone(),
        };
        let uri: Uri =
            config.base_url().parse().map_err(|e: http::uri::InvalidUri| failed(e.to_string()))?;
        let conn =
            match tokio::time::timeout(crate::proxy::DIAL_TIMEOUT, connect(&target, &uri)).await {
                Ok(connected) => connected.map_err(|e| failed(e.0))?,
                Err(_) => return Err(failed(format!("dial tcp {}: i/o timeout", authority(&uri)))),
            };
        crate::proxy::handshake(conn.io.into_inner()).await.map_err(failed)
    }

    /// The pool of `config`, made on first use.
    fn pool(&self, config: &ClientConfig) -> Result<Pool, String> {
        let mut pools = self.pools.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = pools.get(config) {
            return Ok(client.clone());
        }
        let connector = Connector {
            target: Arc::new(Target {
                destination: config.destination.clone(),
                insecure: config.insecure_skip_tls_verify,
                tls: tls(config, ALPN_H2_HTTP1)?,
                registry: self.registry.clone(),
            }),
        };
        let client = Client::builder(TokioExecutor::new()).build(connector);
        if pools.len() >= MAX_POOLS {
            pools.clear();
        }
        pools.insert(config.clone(), client.clone());
        Ok(client)
    }
}

/// ALPN offering HTTP/2 and HTTP/1.1 (pools).
const ALPN_H2_HTTP1: &[u8] = b"\x02h2\x08http/1.1";

/// ALPN offering HTTP/1.1 only (upgrades exist only there).
const ALPN_HTTP1: &[u8] = b"\x08http/1.1";

/// The TLS client of one configuration (its CA bundle, client certificate, verification),
/// offering the protocols of `alpn`.
fn tls(config: &ClientConfig, alpn: &[u8]) -> Result<SslConnector, String> {
    let ca_bundle = &config.ca_bundle;
    let build = || -> Result<SslConnector, String> {
        let mut builder =
            SslConnector::builder(SslMethod::tls_client()).map_err(|e| e.to_string())?;
        if !ca_bundle.is_empty() {
            let certs = X509::stack_from_pem(ca_bundle)
                .ok()
                .filter(|c| !c.is_empty())
                .ok_or("unable to load root certificates: unable to parse bytes as PEM block")?;
            let mut store =
                openssl::x509::store::X509StoreBuilder::new().map_err(|e| e.to_string())?;
            for cert in certs {
                store.add_cert(cert).map_err(|e| e.to_string())?;
            }
            builder.set_verify_cert_store(store.build()).map_err(|e| e.to_string())?;
        }
        if let Some(client) = &config.client_cert {
            let cert = X509::from_pem(&client.cert_pem).map_err(|e| e.to_string())?;
            let key = openssl::pkey::PKey::private_key_from_pem(&client.key_pem)
                .map_err(|e| e.to_string())?;
            builder.set_certificate(&cert).map_err(|e| e.to_string())?;
            builder.set_private_key(&key).map_err(|e| e.to_string())?;
        }
        builder.set_verify(match config.insecure_skip_tls_verify {
            true => SslVerifyMode::NONE,
            false => SslVerifyMode::PEER,
        });
        builder.set_alpn_protos(alpn).map_err(|e| e.to_string())?;
        Ok(builder.build())
    };
    build()
}

/// The innermost cause of a client error that says something (the connector's own, else
/// hyper's).
fn cause_of(e: &hyper_util::client::legacy::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    let mut last = e.to_string();
    while let Some(s) = source {
        if let Some(connect) = s.downcast_ref::<ConnectError>() {
            return connect.0.clone();
        }
        last = s.to_string();
        source = s.source();
    }
    last
}

/// Where one pool connects, and how.
struct Target {
    destination: Destination,
    /// No verification of the server's name either.
    insecure: bool,
    tls: SslConnector,
    registry: Weak<Registry>,
}

/// Dials for a pool: resolves the destination for each new connection.
#[derive(Clone)]
struct Connector {
    target: Arc<Target>,
}

impl tower::Service<Uri> for Connector {
    type Response = Conn;
    type Error = ConnectError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, ConnectError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let target = self.target.clone();
        Box::pin(async move {
            match tokio::time::timeout(crate::proxy::DIAL_TIMEOUT, connect(&target, &uri)).await {
                Ok(connected) => connected,
                Err(_) => Err(ConnectError(format!("dial tcp {}: i/o timeout", authority(&uri)))),
            }
        })
    }
}

fn authority(uri: &Uri) -> String {
    uri.authority().map(|a| a.to_string()).unwrap_or_default()
}

/// The host a URI names, without IPv6 brackets: what the certificate must be for.
fn host_of(uri: &Uri) -> &str {
    uri.host().unwrap_or("").trim_start_matches('[').trim_end_matches(']')
}

/// Where a Service's port is reached, as upstream's default service resolver
/// (`ResolveCluster`) has it for an ExternalName Service: its `externalName` host and the
/// port asked for; else one of its endpoints ([`crate::service_proxy::resolve`]).
async fn resolve(
    registry: &Registry,
    namespace: &str,
    name: &str,
    port: u16,
) -> Result<(String, u16), String> {
    let info = rkube_apis::resources::Resources::builtin()
        .get("", "v1", "services")
        .expect("services are built in");
    if let Ok(service) = registry.get(info, Some(namespace), name).await {
        if service["spec"]["type"] == "ExternalName" {
            let host = service["spec"]["externalName"].as_str().unwrap_or("");
            return Ok((host.trim_end_matches('.').to_string(), port));
        }
    }
    crate::service_proxy::resolve(registry, namespace, name, port).await
}

async fn connect(target: &Target, uri: &Uri) -> Result<Conn, ConnectError> {
    let host = host_of(uri);
    let (address, port) = match &target.destination {
        Destination::Url(_) => (host.to_string(), uri.port_u16().unwrap_or(443)),
        Destination::Service { namespace, name, port, .. } => {
            let registry = target
                .registry
                .upgrade()
                .ok_or_else(|| ConnectError("the API server is shutting down".to_string()))?;
            resolve(&registry, namespace, name, *port).await.map_err(ConnectError)?
        }
    };
    let dialed = crate::proxy::join_host_port(&address, port);
    let addrs: Vec<_> = tokio::net::lookup_host((address.as_str(), port))
        .await
        .map_err(|e| ConnectError(format!("dial tcp: lookup {address}: {e}")))?
        .collect();
    let mut last = ConnectError(format!("dial tcp: lookup {address}: no such host"));
    let mut tcp = None;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(stream) => {
                tcp = Some(stream);
                break;
            }
            Err(e) => last = ConnectError(crate::proxy::dial_error(&dialed, &e)),
        }
    }
    let tcp = tcp.ok_or(last)?;
    let _ = tcp.set_nodelay(true);
    let setup = |e: openssl::error::ErrorStack| ConnectError(format!("tls: {e}"));
    let mut configuration = target.tls.configure().map_err(setup)?;
    if target.insecure {
        configuration.set_verify_hostname(false);
    }
    let ssl = configuration.into_ssl(host).map_err(setup)?;
    let mut stream = SslStream::new(ssl, tcp).map_err(setup)?;
    if let Err(e) = Pin::new(&mut stream).connect().await {
        return Err(ConnectError(handshake_error(&stream, host, &e)));
    }
    let h2 = stream.ssl().selected_alpn_protocol() == Some(b"h2");
    Ok(Conn { io: TokioIo::new(stream), h2 })
}

/// A failed handshake as Go's TLS client reports it.
fn handshake_error(stream: &SslStream<TcpStream>, host: &str, e: &openssl::ssl::Error) -> String {
    let verify = stream.ssl().verify_result();
    if verify == X509VerifyResult::OK {
        return format!("remote error: tls: {e}");
    }
    let unknown_authority = [2, 18, 19, 20, 21, 27];
    let x509 = match verify.as_raw() {
        code if unknown_authority.contains(&code) => {
            "x509: certificate signed by unknown authority".to_string()
        }
        // Hostname or IP address mismatch.
        62 | 64 => {
            let names =
                stream.ssl().peer_certificate().map(|c| subject_names(&c)).unwrap_or_default();
            match names.is_empty() {
                true => format!(
                    "x509: certificate is not valid for any names, but wanted to match {host}"
                ),
                false => format!("x509: certificate is valid for {}, not {host}", names.join(", ")),
            }
        }
        9 | 10 => "x509: certificate has expired or is not yet valid".to_string(),
        _ => format!("x509: {}", verify.error_string()),
    };
    format!("tls: failed to verify certificate: {x509}")
}

/// A certificate's DNS names and IP addresses, as Go lists them.
fn subject_names(cert: &X509) -> Vec<String> {
    let mut names = Vec::new();
    for name in cert.subject_alt_names().into_iter().flatten() {
        if let Some(dns) = name.dnsname() {
            names.push(dns.to_string());
        } else if let Some(ip) = name.ipaddress() {
            let ip = match ip.len() {
                4 => <[u8; 4]>::try_from(ip).map(|b| std::net::IpAddr::from(b).to_string()).ok(),
                16 => <[u8; 16]>::try_from(ip).map(|b| std::net::IpAddr::from(b).to_string()).ok(),
                _ => None,
            };
            names.extend(ip);
        }
    }
    names
}

/// A TLS connection, telling the pool whether it speaks HTTP/2.
struct Conn {
    io: TokioIo<SslStream<TcpStream>>,
    h2: bool,
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        match self.h2 {
            true => Connected::new().negotiated_h2(),
            false => Connected::new(),
        }
    }
}

impl hyper::rt::Read for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A non-2xx answer as client-go's REST client reports it (the Status's message when the
/// body is one, else its generic text for the code): for callers that expect an object back
/// (webhooks).
pub fn rest_error(status: StatusCode, body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
        if value["kind"] == "Status" {
            if let Some(message) = value["message"].as_str().filter(|m| !m.is_empty()) {
                return message.to_string();
            }
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match status.as_u16() {
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "Unauthorized".into(),
        403 => format!("forbidden: {text}"),
        404 => "the server could not find the requested resource".into(),
        409 => "the server reported a conflict".into(),
        429 => "the server has received too many requests and has asked us to try again later".into(),
        503 => "the server is currently unable to handle the request".into(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        code if code >= 500 => format!(
            "an error on the server ({}) has prevented the request from succeeding",
            rkube_apis::go_quote(text)
        ),
        code => format!("an error on the server ({}) has prevented the request from succeeding (code {code})", rkube_apis::go_quote(text)),
    }
}
