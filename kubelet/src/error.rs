//! What can keep the kubelet from starting or from reporting its node: the API server, the
//! root directory and TLS material, the kubelet's port, the container runtime. Each message is
//! the one of the part that failed; the binary adds its own context.

use std::net::SocketAddr;

use crate::runtime::RuntimeError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused a request or could not be reached.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// An object the kubelet built does not fit its Kubernetes type.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The root directory, the serving certificate or the TLS set-up.
    #[error(transparent)]
    Certs(#[from] rkube_certs::CertError),
    /// The kubelet API's port is taken or not ours to bind. The cause is part of the message
    /// (as upstream words it), so it is not repeated as a source.
    #[error("cannot listen on {addr} for the kubelet API: {error}")]
    Listen { addr: SocketAddr, error: std::io::Error },
    /// The container runtime (the pod network).
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_taken_port_is_named_once_with_its_cause() {
        let taken = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let mut config = crate::Config::for_tests("node-a");
        config.port = taken.local_addr().unwrap().port();
        let err = crate::server::bind(&config).await.unwrap_err();
        let message = err.to_string();
        let expected = format!("cannot listen on 0.0.0.0:{} for the kubelet API: ", config.port);
        assert!(message.starts_with(&expected), "{message}");
        assert!(message.contains("in use"), "{message}");
        // The binary prints the whole chain: the cause must not show up twice.
        assert!(std::error::Error::source(&err).is_none());
    }
}
