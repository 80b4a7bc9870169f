//! Reverse proxying to a backend (a kubelet) that understands connection upgrades, in the
//! manner of apimachinery's UpgradeAwareHandler: dial the backend (HTTPS with openssl, or plain
//! TCP), send it the request over HTTP/1.1 with hyper, and either stream its answer back or,
//! when it switches protocols (`101`: WebSocket, SPDY), answer `101` to the client too and
//! splice the two upgraded connections byte for byte until one side closes.
//!
//! Nothing here knows about pods or nodes: [`crate::kubelet`] decides where a request goes.

use std::net::IpAddr;
use std::pin::Pin;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::StatusCode;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use openssl::ssl::{Ssl, SslConnector, SslVerifyMode};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long dialing a backend (TCP connect and TLS handshake) may take: Go's default dialer
/// timeout, which kube-apiserver's kubelet transport uses.
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(30);

/// Once one direction of a spliced connection has ended, how long the other may still drain.
const SPLICE_DRAIN: Duration = Duration::from_secs(5);

/// Where a request goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// `https` or `http`.
    pub scheme: &'static str,
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    /// `host:port`, with IPv6 addresses in brackets (Go's net.JoinHostPort).
    pub fn authority(&self) -> String {
        join_host_port(&self.host, self.port)
    }

    /// The URL of `path_and_query` on this endpoint, as Go prints it in its errors.
    pub fn url(&self, path_and_query: &str) -> String {
        format!("{}://{}{path_and_query}", self.scheme, self.authority())
    }
}

/// `host:port`, with IPv6 addresses in brackets.
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// How to secure a connection: the TLS client (with its client certificate, if any, and its
/// verification policy), and whether to skip verifying the backend for this one request.
#[derive(Clone, Copy)]
pub struct Tls<'a> {
    pub connector: &'a SslConnector,
    /// Skip verifying the backend's certificate and name.
    pub skip_verify: bool,
}

/// Dials `endpoint` (TLS when `tls` is given) and starts an HTTP/1.1 client connection on
/// it, able to switch protocols. The error is the text Go would give (`dial tcp ...:
/// connect: connection refused`).
pub async fn connect(
    endpoint: &Endpoint,
    tls: Option<Tls<'_>>,
) -> Result<SendRequest<Body>, String> {
    match tokio::time::timeout(DIAL_TIMEOUT, connect_inner(endpoint, tls)).await {
        Ok(result) => result,
        Err(_) => Err(format!("dial tcp {}: i/o timeout", endpoint.authority())),
    }
}

async fn connect_inner(
    endpoint: &Endpoint,
    tls: Option<Tls<'_>>,
) -> Result<SendRequest<Body>, String> {
    let authority = endpoint.authority();
    let addrs: Vec<_> = tokio::net::lookup_host((endpoint.host.as_str(), endpoint.port))
        .await
        .map_err(|e| format!("dial tcp: lookup {}: {e}", endpoint.host))?
        .collect();
    let mut last = format!("dial tcp: lookup {}: no such host", endpoint.host);
    let mut tcp = None;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(stream) => {
                tcp = Some(stream);
                break;
            }
            Err(e) => last = dial_error(&authority, &e),
        }
    }
    let tcp = tcp.ok_or(last)?;
    let _ = tcp.set_nodelay(true);
    match tls {
        None => handshake(tcp).await,
        Some(tls) => {
            let ssl = client_ssl(tls, &endpoint.host)
                .map_err(|e| format!("cannot set up TLS to {authority}: {e}"))?;
            let mut stream = tokio_openssl::SslStream::new(ssl, tcp)
                .map_err(|e| format!("cannot set up TLS to {authority}: {e}"))?;
            Pin::new(&mut stream)
                .connect()
                .await
                .map_err(|e| format!("tls handshake with {authority}: {e}"))?;
            handshake(stream).await
        }
    }
}

fn client_ssl(tls: Tls<'_>, host: &str) -> Result<Ssl, openssl::error::ErrorStack> {
    let mut config = tls.connector.configure()?;
    if tls.skip_verify {
        config.set_verify_hostname(false);
        config.set_verify(SslVerifyMode::NONE);
    }
    config.into_ssl(host)
}

/// Starts an HTTP/1.1 client connection (able to switch protocols) on `stream`.
pub(crate) async fn handshake<S>(stream: S) -> Result<SendRequest<Body>, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::Builder::new()
        .handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("cannot start HTTP on the connection: {e}"))?;
    tokio::spawn(async move {
        if let Err(e) = connection.with_upgrades().await {
            tracing::debug!(error = %e, "backend connection ended");
        }
    });
    Ok(sender)
}

/// Go's wording for the common dial failures.
pub(crate) fn dial_error(authority: &str, e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    let what = match e.kind() {
        K::ConnectionRefused => "connect: connection refused".to_string(),
        K::TimedOut => "i/o timeout".to_string(),
        K::HostUnreachable => "connect: no route to host".to_string(),
        K::NetworkUnreachable => "connect: network is unreachable".to_string(),
        _ => e.to_string(),
    };
    format!("dial tcp {authority}: {what}")
}

/// Builds a TLS client: `client` is the certificate (chain) and key PEM to present, `ca` the
/// certificates to verify the backend with; `None` skips verification.
pub fn tls_connector(
    client: Option<(&[u8], &[u8])>,
    ca: Option<&[u8]>,
) -> crate::error::StartResult<SslConnector> {
    use openssl::ssl::SslMethod;
    use openssl::x509::X509;
    let mut builder = SslConnector::builder(SslMethod::tls_client())?;
    if let Some((cert_pem, key_pem)) = client {
        let mut chain = X509::stack_from_pem(cert_pem)?.into_iter();
        let leaf = chain.next().ok_or(crate::error::StartError::NoClientCertificate)?;
        builder.set_certificate(&leaf)?;
        for extra in chain {
            builder.add_extra_chain_cert(extra)?;
        }
        let key = openssl::pkey::PKey::private_key_from_pem(key_pem)?;
        builder.set_private_key(&key)?;
        builder.check_private_key()?;
    }
    match ca {
        Some(ca) => {
            let mut store = openssl::x509::store::X509StoreBuilder::new()?;
            for cert in X509::stack_from_pem(ca)? {
                store.add_cert(cert)?;
            }
            builder.set_verify_cert_store(store.build())?;
            builder.set_verify(SslVerifyMode::PEER);
        }
        None => builder.set_verify(SslVerifyMode::NONE),
    }
    // Upgrades (exec, attach, port-forward) exist only in HTTP/1.1.
    builder.set_alpn_protos(b"\x08http/1.1")?;
    Ok(builder.build())
}

/// Sends `request` on a fresh connection.
pub async fn send(
    mut sender: SendRequest<Body>,
    request: http::Request<Body>,
) -> Result<http::Response<Incoming>, String> {
    sender.ready().await.map_err(|e| e.to_string())?;
    sender.send_request(request).await.map_err(|e| e.to_string())
}

/// True when the request asks to switch protocols (`Connection: Upgrade`), as
/// httpstream.IsUpgradeRequest reads it.
pub fn is_upgrade_request(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"))
}

/// Headers that describe one hop, not the request (RFC 9110 7.6.1), as Go's reverse proxy
/// drops them.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The client's headers as they go on to the backend: hop-by-hop headers dropped (for an
/// upgrade, `Connection: Upgrade` and `Upgrade` kept: they are the request), the caller's
/// credentials and impersonation dropped (the backend trusts this server's own certificate,
/// not what the client sent us), `Host` left to the caller, and the client's address appended
/// to `X-Forwarded-For`.
pub fn forwarded_headers(headers: &HeaderMap, upgrade: bool, peer: Option<IpAddr>) -> HeaderMap {
    let listed: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty() && t != "upgrade")
        .collect();
    let mut out = HeaderMap::new();
    for (name, value) in headers {
        let n = name.as_str();
        let dropped = HOP_BY_HOP.contains(&n)
            || listed.iter().any(|l| l == n)
            || n == "host"
            || n == "authorization"
            || n.starts_with("impersonate-");
        if !dropped {
            out.append(name.clone(), value.clone());
        }
    }
    if upgrade {
        out.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        for value in headers.get_all(header::UPGRADE) {
            out.append(header::UPGRADE, value.clone());
        }
    }
    if let Some(ip) = peer {
        let prior: Vec<&str> =
            headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).collect();
        let value =
            if prior.is_empty() { ip.to_string() } else { format!("{}, {ip}", prior.join(", ")) };
        if let Ok(value) = HeaderValue::from_str(&value) {
            out.insert(HeaderName::from_static("x-forwarded-for"), value);
        }
    }
    out
}

/// The backend's response as the client gets it: status, end-to-end headers, and the body
/// streamed as it arrives.
pub fn passthrough(response: http::Response<Incoming>) -> Response {
    let (parts, body) = response.into_parts();
    let mut out = Response::new(Body::new(body));
    *out.status_mut() = parts.status;
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            out.headers_mut().append(name.clone(), value.clone());
        }
    }
    out
}

/// The backend switched protocols: the client gets the same `101` with the backend's headers
/// (`Upgrade`, `Sec-WebSocket-Accept`, `Sec-WebSocket-Protocol`, `X-Stream-Protocol-Version`,
/// ...). Once both connections are upgraded, bytes flow both ways until one side closes.
pub fn switch_protocols(client: OnUpgrade, mut backend: http::Response<Incoming>) -> Response {
    let backend_upgrade = hyper::upgrade::on(&mut backend);
    let mut out = Response::new(Body::empty());
    *out.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    *out.headers_mut() = backend.headers().clone();
    tokio::spawn(async move {
        match tokio::try_join!(client, backend_upgrade) {
            Ok((client, backend)) => splice(TokioIo::new(client), TokioIo::new(backend)).await,
            Err(e) => tracing::debug!(error = %e, "upgrade did not complete"),
        }
    });
    out
}

/// Copies bytes both ways. When one direction ends, the other side's write half is shut down
/// and the other direction gets a moment to drain; then both connections close (upstream
/// closes both as soon as either direction ends).
pub async fn splice<A, B>(a: A, b: B)
where
    A: AsyncRead + AsyncWrite + Send + 'static,
    B: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut a_read, mut a_write) = tokio::io::split(a);
    let (mut b_read, mut b_write) = tokio::io::split(b);
    let a_to_b = async move {
        let copied = tokio::io::copy(&mut a_read, &mut b_write).await;
        let _ = b_write.shutdown().await;
        copied
    };
    let b_to_a = async move {
        let copied = tokio::io::copy(&mut b_read, &mut a_write).await;
        let _ = a_write.shutdown().await;
        copied
    };
    tokio::pin!(a_to_b, b_to_a);
    tokio::select! {
        _ = &mut a_to_b => { let _ = tokio::time::timeout(SPLICE_DRAIN, b_to_a).await; }
        _ = &mut b_to_a => { let _ = tokio::time::timeout(SPLICE_DRAIN, a_to_b).await; }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn upgrade_requests_are_read_from_connection() {
        assert!(is_upgrade_request(&headers(&[("connection", "Upgrade")])));
        assert!(is_upgrade_request(&headers(&[("connection", "keep-alive, upgrade")])));
        assert!(!is_upgrade_request(&headers(&[("upgrade", "websocket")])));
        assert!(!is_upgrade_request(&headers(&[("connection", "close")])));
    }

    #[test]
    fn an_upgrade_keeps_its_headers_and_loses_the_callers_credentials() {
        let h = headers(&[
            ("connection", "Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("sec-websocket-version", "13"),
            ("sec-websocket-protocol", "v5.channel.k8s.io, v4.channel.k8s.io"),
            ("x-stream-protocol-version", "v4.channel.k8s.io"),
            ("x-stream-protocol-version", "v3.channel.k8s.io"),
            ("authorization", "Bearer secret"),
            ("impersonate-user", "someone"),
            ("host", "apiserver:6443"),
        ]);
        let out = forwarded_headers(&h, true, Some("10.0.0.9".parse().unwrap()));
        assert_eq!(out["connection"], "Upgrade");
        assert_eq!(out["upgrade"], "websocket");
        assert_eq!(out["sec-websocket-key"], "dGhlIHNhbXBsZSBub25jZQ==");
        assert_eq!(out["sec-websocket-protocol"], "v5.channel.k8s.io, v4.channel.k8s.io");
        assert_eq!(out.get_all("x-stream-protocol-version").iter().count(), 2);
        assert_eq!(out["x-forwarded-for"], "10.0.0.9");
        for gone in ["authorization", "impersonate-user", "host"] {
            assert!(out.get(gone).is_none(), "{gone} forwarded");
        }
    }

    #[test]
    fn a_plain_request_loses_hop_by_hop_headers() {
        let h = headers(&[
            ("connection", "keep-alive, x-private"),
            ("keep-alive", "timeout=5"),
            ("x-private", "1"),
            ("transfer-encoding", "chunked"),
            ("accept", "text/plain"),
            ("x-forwarded-for", "192.0.2.1"),
        ]);
        let out = forwarded_headers(&h, false, Some("127.0.0.1".parse().unwrap()));
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out["accept"], "text/plain");
        assert_eq!(out["x-forwarded-for"], "192.0.2.1, 127.0.0.1");
    }

    #[test]
    fn endpoints_print_as_go_does() {
        let e = Endpoint { scheme: "https", host: "fd00::1".into(), port: 10250 };
        assert_eq!(e.url("/healthz"), "https://[fd00::1]:10250/healthz");
        let e = Endpoint { scheme: "https", host: "127.0.0.1".into(), port: 1 };
        assert_eq!(e.authority(), "127.0.0.1:1");
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(
            dial_error("127.0.0.1:1", &refused),
            "dial tcp 127.0.0.1:1: connect: connection refused"
        );
    }

    #[tokio::test]
    async fn splice_copies_both_ways_and_ends_when_one_side_closes() {
        use tokio::io::AsyncReadExt;
        let (client, mut client_peer) = tokio::io::duplex(64);
        let (backend, mut backend_peer) = tokio::io::duplex(64);
        let task = tokio::spawn(splice(client, backend));
        client_peer.write_all(b"stdin").await.unwrap();
        let mut buf = [0u8; 5];
        backend_peer.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"stdin");
        backend_peer.write_all(b"out").await.unwrap();
        let mut buf = [0u8; 3];
        client_peer.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"out");
        drop(backend_peer);
        // The client sees the end, and the splice finishes.
        let mut rest = Vec::new();
        client_peer.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
        drop(client_peer);
        tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap();
    }
}
