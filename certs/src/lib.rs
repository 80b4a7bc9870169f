//! The cluster PKI of rkube, with openssl: the CA, serving and client certificates, the
//! service-account signing keys, and kubeconfig files.
//!
//! Not implemented yet: the API server core (issue 3) generates the PKI on first start.
