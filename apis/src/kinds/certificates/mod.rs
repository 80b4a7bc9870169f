//! `certificates.k8s.io/v1`.

mod certificatesigningrequests;

pub use certificatesigningrequests::CertificateSigningRequests;
