//! The HTTPS listener: TLS with openssl (HTTP/2 by ALPN, HTTP/1.1 otherwise), the client
//! certificate read into the caller's identity, and each connection served by hyper with the
//! axum router. There is no plain-HTTP port.

use axum::Router;
use openssl::ssl::SslAcceptor;
use tokio::net::TcpListener;
use tower::ServiceExt;

use std::sync::Arc;

use crate::auth::UserInfo;
use crate::authn::requestheader::{Outcome, RequestHeader};

/// The certificates the server presents and the CA it trusts for client certificates.
#[derive(Clone)]
pub struct TlsMaterial {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
    pub client_ca_pem: Vec<u8>,
}

/// Builds the TLS acceptor: our serving certificate, client certificates requested (not
/// required: bearer tokens and anonymous requests come without one) and verified against the
/// cluster CA, or the requestheader CA (`extra_ca_pem`) of front proxies.
pub fn acceptor(tls: &TlsMaterial, extra_ca_pem: &[u8]) -> crate::error::StartResult<SslAcceptor> {
    let mut cas = tls.client_ca_pem.clone();
    if !extra_ca_pem.is_empty() {
        cas.push(b'\n');
        cas.extend_from_slice(extra_ca_pem);
    }
    Ok(rkube_certs::tls::acceptor(&tls.cert_pem, &tls.key_pem, &cas, b"rkube-apiserver")?)
}

/// Accepts connections until the task is aborted, each within `limits` (header-read and idle
/// timeouts, HTTP/2 streams); each request carries the caller's identity from its
/// certificate (anonymous without one) and its address.
///
/// A certificate the requestheader CA issued (`requestheader`) is a front proxy's: each of
/// its requests is the user its headers name, or 401 from the authentication layer
/// ([`RequestHeader`], [`crate::authn::RequestHeaderRefused`]).
pub async fn serve(
    listener: TcpListener,
    acceptor: SslAcceptor,
    limits: rkube_certs::tls::ConnectionLimits,
    router: Router,
    requestheader: Option<Arc<RequestHeader>>,
) {
    rkube_certs::tls::serve_with_limits(listener, acceptor, "API server", limits, move |peer| {
        let router = router.clone();
        let proxy = match (&requestheader, &peer.verified) {
            (Some(auth), Some(cert)) if auth.issued(cert) => Some((auth.clone(), cert.clone())),
            _ => None,
        };
        let user = match proxy {
            Some(_) => None,
            None => peer.certificate.map(|(name, groups)| UserInfo::authenticated(name, groups)),
        };
        hyper::service::service_fn(move |mut request: http::Request<hyper::body::Incoming>| {
            let router = router.clone();
            let user = match &proxy {
                Some((auth, cert)) => match auth.authenticate(cert, request.headers_mut()) {
                    Outcome::User(user) => Some(user),
                    // Refused by the authentication layer, which audits it.
                    Outcome::Unauthenticated => {
                        request.extensions_mut().insert(crate::authn::RequestHeaderRefused);
                        None
                    }
                },
                None => user.clone(),
            };
            request.extensions_mut().insert(user.unwrap_or_else(UserInfo::anonymous));
            request.extensions_mut().insert(peer.addr);
            async move { router.oneshot(request.map(axum::body::Body::new)).await }
        })
    })
    .await
}
