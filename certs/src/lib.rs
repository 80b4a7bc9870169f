//! The cluster PKI of rkube and its kubeconfig files, built with OpenSSL (the `openssl` crate
//! over the system library).
//!
//! The API server calls [`Pki::load_or_create`] on every start of `rkube server --data-dir DIR`
//! with `DIR/pki`. The first start generates the cluster's CA and the certificates below; later
//! starts load the same files byte for byte, re-issue a leaf certificate only when it has to
//! (expiring within [`RENEW_BEFORE_DAYS`], or the serving certificate lacks a name now
//! required), and refuse to guess when something essential is gone (a missing CA key is an
//! error, never a silent new CA). Then it writes the administrator's kubeconfig with
//! [`write_kubeconfig`] and [`Pki::admin_kubeconfig`].
//!
//! # Files in the PKI directory
//!
//! The directory is created with mode 0700; private keys are mode 0600, certificates and the
//! public key 0644. Names as in [`files`] (the same names kubeadm uses):
//!
//! | file | what |
//! |------|------|
//! | `ca.crt`, `ca.key` | the cluster CA: self-signed, CN `rkube-ca`, 10 years, `CA:TRUE` (critical), keyUsage keyCertSign + cRLSign, subjectKeyIdentifier |
//! | `apiserver.crt`, `apiserver.key` | the API server's serving certificate: CN `kube-apiserver`, serverAuth, SANs `127.0.0.1`, `::1`, the service IP, `localhost`, `kubernetes`, `kubernetes.default`, `kubernetes.default.svc`, `kubernetes.default.svc.<cluster domain>` and the extra SANs |
//! | `admin.crt`, `admin.key` | the administrator: CN `system:admin`, O `system:masters`, clientAuth |
//! | `apiserver-kubelet-client.crt`, `apiserver-kubelet-client.key` | the API server towards kubelets: CN `kube-apiserver-kubelet-client` (no group: RBAC binds it to `system:kubelet-api-admin`), clientAuth |
//! | `sa.key`, `sa.pub` | the service-account token signing key pair (RS256) |
//! | `front-proxy-ca.crt`, `front-proxy-ca.key` | the front-proxy CA: a second CA (CN `rkube-front-proxy-ca`) that signs only the client certificate below; aggregated API servers trust it for the `X-Remote-*` headers. Made on the next start of a PKI that predates it |
//! | `front-proxy-client.crt`, `front-proxy-client.key` | the API server towards aggregated API servers: CN `front-proxy-client`, clientAuth |
//!
//! # Keys and validity
//!
//! - TLS keys (CA and leaves) are ECDSA P-256, stored as PKCS#8 PEM (`BEGIN PRIVATE KEY`);
//!   signatures are ECDSA with SHA-256.
//! - The service-account key is RSA 2048: `sa.key` PKCS#8 PEM, `sa.pub` SubjectPublicKeyInfo
//!   PEM (`BEGIN PUBLIC KEY`).
//! - The CA is valid for [`CA_VALIDITY_DAYS`] (10 years), the leaves for
//!   [`LEAF_VALIDITY_DAYS`] (1 year); validity starts 5 minutes in the past to absorb clock
//!   skew. Serial numbers are random 128-bit. Leaves carry basicConstraints `CA:FALSE`,
//!   keyUsage digitalSignature, one extended key usage, subject and authority key identifiers.
//!
//! # Where to start reading
//!
//! - [`jose`]: openssl as jsonwebtoken's RS256 provider, for service-account tokens.
//! - [`pki`]: [`PkiOptions`], [`Pki`] and the load/repair rules on [`Pki::load_or_create`];
//!   [`Pki::issue_client_cert`] and [`Pki::issue_serving_cert`] for node certificates.
//! - [`kubeconfig`]: [`KubeconfigSpec`], [`TokenKubeconfigSpec`] and their writers.
//! - [`tls`]: the TLS acceptor with client certificates the API server and the kubelet
//!   serve with, and the identity a verified client certificate carries.
//! - [`csr`]: certificate signing requests read and signed with the cluster CA (the
//!   controller manager's signer).
//! - `issue` (private): the X.509 building blocks; `fsutil` (private): atomic writes and
//!   [`ensure_private_dir`], which the server's data dir and the kubelet's root use too.
//! - `tests/tls.rs` shows the material in use: a real mutual-TLS handshake with
//!   `openssl::ssl`.
#![deny(clippy::all)]

pub mod csr;
mod error;
mod fsutil;
mod idle;
mod issue;
pub mod jose;
pub mod kubeconfig;
pub mod pki;
mod san;
pub mod tls;

pub use error::CertError;
pub use fsutil::ensure_private_dir;
pub use kubeconfig::{
    write_kubeconfig, write_token_kubeconfig, KubeconfigSpec, TokenKubeconfigSpec,
};
pub use pki::{
    files, CertKeyPair, Pki, PkiOptions, CA_VALIDITY_DAYS, LEAF_VALIDITY_DAYS, RENEW_BEFORE_DAYS,
};
pub use san::San;
