//! The rkube API server.
//!
//! This crate will hold the REST facade (axum) and the gRPC facade (tonic), authentication,
//! authorization, the request pipeline, the one generic registry over [`rkube-store`] with its
//! in-memory watch cache, discovery, OpenAPI, subresources and the proxy to kubelets. See
//! `ARCHITECTURE.md`, section "The request path".
//!
//! Not implemented yet: the API server core is issue 3.
