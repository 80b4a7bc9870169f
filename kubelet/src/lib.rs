//! The rkube node agent: a container-runtime trait with a Docker (bollard) implementation and
//! a simulated one for scale tests, pod reconciliation, probes, volumes, and the kubelet HTTPS
//! API (logs, exec, attach, port-forward, stats).
//!
//! It reaches the API server only through its public API. Not implemented yet (issue 5).
