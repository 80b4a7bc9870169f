//! Serving TLS with client certificates, as the API server and the kubelet both do: the
//! acceptor (our certificate, client certificates requested and verified against a CA,
//! HTTP/2 or HTTP/1.1 by ALPN), the identity a verified client certificate carries, and the
//! accept loop that serves each connection with hyper ([`serve`]).

use openssl::nid::Nid;
use openssl::pkey::PKey;
use openssl::ssl::{AlpnError, SslAcceptor, SslMethod, SslRef, SslVerifyMode};
use openssl::x509::X509;

use crate::error::OsslContext;
use crate::issue::name_entries;
use crate::CertError;

/// The TLS acceptor for `cert_pem` (leaf first, then its chain) and `key_pem`, requesting
/// client certificates (not requiring them: the caller decides what an anonymous client
/// may do) and verifying them against `client_ca_pem`. `session_id_context` names the
/// server: clients resume TLS sessions, and with client certificates requested openssl
/// refuses a resumption (alert "internal error") unless it is set.
pub fn acceptor(
    cert_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: &[u8],
    session_id_context: &[u8],
) -> Result<SslAcceptor, CertError> {
    const ACTION: &str = "set up TLS";
    let mut builder = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server()).ossl(ACTION)?;
    let mut chain =
        X509::stack_from_pem(cert_pem).ossl("read the serving certificate")?.into_iter();
    let leaf =
        chain.next().ok_or_else(|| CertError::InvalidRequest("no serving certificate".into()))?;
    builder.set_certificate(&leaf).ossl(ACTION)?;
    for extra in chain {
        builder.add_extra_chain_cert(extra).ossl(ACTION)?;
    }
    let key = PKey::private_key_from_pem(key_pem).ossl("read the serving key")?;
    builder.set_private_key(&key).ossl(ACTION)?;
    builder.check_private_key().ossl("match the serving key to its certificate")?;
    let cas = X509::stack_from_pem(client_ca_pem).ossl("read the client CA")?;
    if cas.is_empty() {
        return Err(CertError::InvalidRequest("the client CA holds no certificate".into()));
    }
    let mut store = openssl::x509::store::X509StoreBuilder::new().ossl(ACTION)?;
    for ca in cas {
        store.add_cert(ca).ossl(ACTION)?;
    }
    builder.set_verify_cert_store(store.build()).ossl(ACTION)?;
    builder.set_verify(SslVerifyMode::PEER);
    builder.set_session_id_context(session_id_context).ossl(ACTION)?;
    builder.set_alpn_select_callback(|_, client| {
        openssl::ssl::select_next_proto(b"\x02h2\x08http/1.1", client).ok_or(AlpnError::NOACK)
    });
    Ok(builder.build())
}

/// Who a verified client certificate names: (CN, each O), Kubernetes' user and groups.
/// None without a certificate, or when it did not verify.
pub fn verified_peer(ssl: &SslRef) -> Option<(String, Vec<String>)> {
    let cert = ssl.peer_certificate()?;
    if ssl.verify_result() != openssl::x509::X509VerifyResult::OK {
        return None;
    }
    let name = name_entries(cert.subject_name(), Nid::COMMONNAME).into_iter().next()?;
    Some((name, name_entries(cert.subject_name(), Nid::ORGANIZATIONNAME)))
}

/// Who is at the other end of one connection.
#[derive(Clone, Debug)]
pub struct Peer {
    pub addr: std::net::SocketAddr,
    /// The (CN, O...) of a verified client certificate; `None` without one.
    pub certificate: Option<(String, Vec<String>)>,
    /// That certificate (when it verified), for a caller that trusts several CAs to tell
    /// which issued it.
    pub verified: Option<openssl::x509::X509>,
}

/// What one connection may cost the server, as Go's `http.Server` bounds it for
/// kube-apiserver: how long a client may take to send a request's headers, how long an
/// idle connection stays open, and how many HTTP/2 streams run at once on one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// The TLS handshake, and then each HTTP/1 request's head (from when the server is
    /// ready for it to its last header line), must arrive within this; an HTTP/2 connection
    /// must open its first stream within it. kube-apiserver: `ReadHeaderTimeout` 32 s (Go
    /// also bounds the handshake by it).
    pub header_read_timeout: std::time::Duration,
    /// A connection with no request in progress is closed after this (kube-apiserver:
    /// `IdleTimeout` 90 s; HTTP/2 gets a GOAWAY). HTTP/1 connections waiting for their next
    /// request are already closed by [`ConnectionLimits::header_read_timeout`].
    pub idle_timeout: std::time::Duration,
    /// The `SETTINGS_MAX_CONCURRENT_STREAMS` announced to HTTP/2 clients
    /// (kube-apiserver's `--http2-max-streams-per-connection`, 100 when unset).
    pub http2_max_concurrent_streams: u32,
}

impl Default for ConnectionLimits {
    /// kube-apiserver's values.
    fn default() -> Self {
        ConnectionLimits {
            header_read_timeout: std::time::Duration::from_secs(32),
            idle_timeout: std::time::Duration::from_secs(90),
            http2_max_concurrent_streams: 100,
        }
    }
}

/// Accepts connections on `listener` until the task is aborted, with the default
/// [`ConnectionLimits`]; see [`serve_with_limits`].
pub async fn serve<F, S, B>(
    listener: tokio::net::TcpListener,
    acceptor: SslAcceptor,
    what: &'static str,
    service_for: F,
) where
    F: Fn(Peer) -> S + Send + Sync + 'static,
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    serve_with_limits(listener, acceptor, what, ConnectionLimits::default(), service_for).await
}

/// Accepts connections on `listener` until the task is aborted: TLS with `acceptor`, then
/// HTTP/2 or HTTP/1.1 (with upgrades) as ALPN chose, served by hyper within `limits`, each
/// request going to the service `service_for` makes for the connection's [`Peer`]. `what`
/// names the server in logs.
pub async fn serve_with_limits<F, S, B>(
    listener: tokio::net::TcpListener,
    acceptor: SslAcceptor,
    what: &'static str,
    limits: ConnectionLimits,
    service_for: F,
) where
    F: Fn(Peer) -> S + Send + Sync + 'static,
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let acceptor = std::sync::Arc::new(acceptor);
    let service_for = std::sync::Arc::new(service_for);
    loop {
        let (tcp, addr) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                tracing::warn!(error = %e, "{what}: accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let (acceptor, service_for) = (acceptor.clone(), service_for.clone());
        tokio::spawn(async move {
            let served = async {
                let ssl = openssl::ssl::Ssl::new(acceptor.context())?;
                let mut stream = tokio_openssl::SslStream::new(ssl, tcp)?;
                tokio::time::timeout(
                    limits.header_read_timeout,
                    std::pin::Pin::new(&mut stream).accept(),
                )
                .await
                .map_err(|_| "TLS handshake timed out")??;
                let certificate = verified_peer(stream.ssl());
                let verified = certificate.as_ref().and_then(|_| stream.ssl().peer_certificate());
                let peer = Peer { addr, certificate, verified };
                let http2 = stream.ssl().selected_alpn_protocol() == Some(b"h2");
                serve_connection(stream, http2, limits, service_for(peer)).await
            };
            let result: Result<(), Box<dyn std::error::Error + Send + Sync>> = served.await;
            if let Err(e) = result {
                tracing::debug!(peer = %addr, error = %e, "{what}: connection ended");
            }
        });
    }
}

/// Serves one connection in the protocol ALPN chose (so that a client that sends nothing
/// meets hyper's header timeout rather than a wait for bytes to guess the protocol from),
/// closing it gracefully once it has been idle too long.
async fn serve_connection<S, B>(
    stream: tokio_openssl::SslStream<tokio::net::TcpStream>,
    http2: bool,
    limits: ConnectionLimits,
    service: S,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
where
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut builder =
        hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
    if http2 {
        builder = builder.http2_only();
    } else {
        builder = builder.http1_only();
    }
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder
        .http2()
        .timer(hyper_util::rt::TokioTimer::new())
        .max_concurrent_streams(limits.http2_max_concurrent_streams);
    let activity = crate::idle::Activity::new();
    let service = crate::idle::Tracked::new(service, activity.clone());
    let connection =
        builder.serve_connection_with_upgrades(hyper_util::rt::TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => return result,
        () = activity.idle_for(limits.header_read_timeout, limits.idle_timeout) => {}
    }
    connection.as_mut().graceful_shutdown();
    connection.await
}
