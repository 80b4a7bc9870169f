//! Why the API server could not start (requests are answered with `crate::status::ApiError`).

use std::net::SocketAddr;

/// A reason `Server::start` (or one of the parts it builds) failed.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("invalid service CIDR {0:?}")]
    ServiceCidr(String),
    #[error("service CIDR {0:?} must have a prefix between /8 and /30")]
    ServiceCidrPrefix(String),
    #[error("cannot start the watch caches: {0}")]
    Caches(String),
    /// The service-account token keys or options.
    #[error("{0}")]
    Tokens(String),
    #[error("cannot listen on {addr}: {error}")]
    Listen { addr: SocketAddr, error: std::io::Error },
    #[error("cannot create {resource} {name}: {message}")]
    Bootstrap { resource: &'static str, name: String, message: String },
    #[error(transparent)]
    Certificate(#[from] rkube_certs::CertError),
    #[error("cannot use the kubelet client certificate: {0}")]
    KubeletClient(Box<StartError>),
    #[error("no client certificate in the PEM")]
    NoClientCertificate,
    #[error(transparent)]
    Tls(#[from] openssl::error::ErrorStack),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What starting the server answers.
pub type StartResult<T> = Result<T, StartError>;
