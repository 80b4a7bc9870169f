//! The one error type of this crate.

use std::io;
use std::path::PathBuf;

use openssl::error::ErrorStack;

/// What went wrong while loading, creating or writing certificates, keys and kubeconfigs.
///
/// Every message names the file involved and, where the user has to act, says what to do.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// A file or directory could not be read, written or created.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What we were doing, e.g. "read" or "create directory".
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// A file exists but its content cannot be used (not PEM, wrong key type, a key that does
    /// not belong to its certificate, ...). The file is left as it is.
    #[error("{}: {problem}; {remedy}", path.display())]
    InvalidFile { path: PathBuf, problem: String, remedy: String },

    /// The PKI directory is in a state we refuse to repair on our own, because repairing it
    /// would silently replace the cluster's identity (for example: certificates exist but the
    /// CA key that signed them is gone).
    #[error("the cluster PKI in {} is incomplete: {problem}; {remedy}", dir.display())]
    Incomplete { dir: PathBuf, problem: String, remedy: String },

    /// A subject alternative name is neither an IP address nor a valid DNS name.
    #[error("invalid subject alternative name {name:?}: {reason}")]
    InvalidSan { name: String, reason: String },

    /// A caller asked for something that cannot be issued (empty common name, zero days, ...).
    #[error("invalid certificate request: {0}")]
    InvalidRequest(String),

    /// OpenSSL itself failed (out of memory, broken installation, ...).
    #[error("openssl failed to {action}: {source}")]
    Openssl {
        action: &'static str,
        #[source]
        source: ErrorStack,
    },

    /// The kubeconfig could not be rendered as YAML.
    #[error("cannot render kubeconfig YAML: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
}

/// Attaches what we were doing to an OpenSSL error.
pub(crate) trait OsslContext<T> {
    fn ossl(self, action: &'static str) -> Result<T, CertError>;
}

impl<T> OsslContext<T> for Result<T, ErrorStack> {
    fn ossl(self, action: &'static str) -> Result<T, CertError> {
        self.map_err(|source| CertError::Openssl { action, source })
    }
}

/// The first reason OpenSSL gives, for short messages about unparseable files.
pub(crate) fn short_reason(err: &ErrorStack) -> String {
    err.errors()
        .iter()
        .find_map(|e| e.reason())
        .map(str::to_owned)
        .unwrap_or_else(|| "no PEM data found".to_owned())
}
