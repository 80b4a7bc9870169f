//! The HTTPS listener: TLS with openssl (HTTP/2 by ALPN, HTTP/1.1 otherwise), the client
//! certificate read into the caller's identity, and each connection served by hyper with the
//! axum router. There is no plain-HTTP port.

use axum::Router;
use openssl::ssl::SslAcceptor;
use tokio::net::TcpListener;
use tower::ServiceExt;

use crate::auth::UserInfo;

/// The certificates the server presents and the CA it trusts for client certificates.
#[derive(Clone)]
pub struct TlsMaterial {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
    pub client_ca_pem: Vec<u8>,
}

/// Builds the TLS acceptor: our serving certificate, client certificates requested (not
/// required: bearer tokens and anonymous requests come without one) and verified against the
/// cluster CA.
pub fn acceptor(tls: &TlsMaterial) -> crate::error::StartResult<SslAcceptor> {
    Ok(rkube_certs::tls::acceptor(
        &tls.cert_pem,
        &tls.key_pem,
        &tls.client_ca_pem,
        b"rkube-apiserver",
    )?)
}

/// Accepts connections until the task is aborted, each within `limits` (header-read and idle
/// timeouts, HTTP/2 streams); each request carries the caller's identity from its
/// certificate (anonymous without one) and its address.
pub async fn serve(
    listener: TcpListener,
    acceptor: SslAcceptor,
    limits: rkube_certs::tls::ConnectionLimits,
    router: Router,
) {
    rkube_certs::tls::serve_with_limits(listener, acceptor, "API server", limits, move |peer| {
        let router = router.clone();
        let user = peer.certificate.map(|(name, groups)| UserInfo::authenticated(name, groups));
        hyper::service::service_fn(move |mut request: http::Request<hyper::body::Incoming>| {
            let router = router.clone();
            request.extensions_mut().insert(user.clone().unwrap_or_else(UserInfo::anonymous));
            request.extensions_mut().insert(peer.addr);
            async move { router.oneshot(request.map(axum::body::Body::new)).await }
        })
    })
    .await
}
