//! The HTTPS listener: TLS with openssl (HTTP/2 by ALPN, HTTP/1.1 otherwise), the client
//! certificate read into the caller's identity, and each connection served by hyper with the
//! axum router. There is no plain-HTTP port.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use openssl::ssl::{Ssl, SslAcceptor};
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
pub fn acceptor(tls: &TlsMaterial) -> anyhow::Result<SslAcceptor> {
    Ok(rkube_certs::tls::acceptor(
        &tls.cert_pem,
        &tls.key_pem,
        &tls.client_ca_pem,
        b"rkube-apiserver",
    )?)
}

/// The user a verified client certificate names: CN is the user, each O a group.
fn user_from_certificate(ssl: &openssl::ssl::SslRef) -> Option<UserInfo> {
    rkube_certs::tls::verified_peer(ssl).map(|(name, groups)| UserInfo::authenticated(name, groups))
}

/// Accepts connections until the task is aborted.
pub async fn serve(listener: TcpListener, acceptor: SslAcceptor, router: Router) {
    let acceptor = Arc::new(acceptor);
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let (acceptor, router) = (acceptor.clone(), router.clone());
        tokio::spawn(async move {
            if let Err(e) = serve_connection(tcp, peer, &acceptor, router).await {
                tracing::debug!(%peer, error = %e, "connection ended");
            }
        });
    }
}

async fn serve_connection(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    acceptor: &SslAcceptor,
    router: Router,
) -> anyhow::Result<()> {
    let ssl = Ssl::new(acceptor.context())?;
    let mut stream = tokio_openssl::SslStream::new(ssl, tcp)?;
    Pin::new(&mut stream).accept().await?;
    let user = user_from_certificate(stream.ssl());
    let service =
        hyper::service::service_fn(move |mut request: http::Request<hyper::body::Incoming>| {
            let router = router.clone();
            request.extensions_mut().insert(user.clone().unwrap_or_else(UserInfo::anonymous));
            request.extensions_mut().insert(peer);
            async move { router.oneshot(request.map(axum::body::Body::new)).await }
        });
    auto::Builder::new(TokioExecutor::new())
        .serve_connection_with_upgrades(TokioIo::new(stream), service)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))
}
