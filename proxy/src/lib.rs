//! The rkube service proxy (iptables chains written with one iptables-restore call per sync)
//! and the cluster DNS server.
//!
//! It reaches the API server only through its public API. Not implemented yet.
