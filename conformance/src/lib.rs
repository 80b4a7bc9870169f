//! rkube's end-to-end checks and benchmark programs.
//!
//! The system tests (in `tests/`) start the real `rkube` binary and drive it the way users
//! do: stock `kubectl`, kube-rs, real etcd and Docker. The benchmark programs (in `src/bin/`)
//! print a table of figures and write it to their section of `docs/benchmarks.md`; start with
//! `store-bench` for the storage layer. [`report`] holds what they share.
//!
//! What the tests share: [`cluster`] starts a server and runs kubectl against it, [`dynamic`] drives kinds as
//! dynamic objects, [`node`]
//! adds a kubelet on Docker, [`streaming`] follows a kubectl that keeps running, and
//! [`traffic`] sends connections and datagrams through Services, [`webhook`] is an admission webhook server with a CA of its own, [`extension_server`] an
//! aggregated API server behind it.
//!
//! [`conformance_map`] joins the upstream conformance tests to the rkube tests that cover
//! them (`docs/conformance.md`).

pub mod cluster;
pub mod conformance_map;
pub mod dns;
pub mod dynamic;
pub mod extension_server;
pub mod h2;
pub mod identity;
pub mod load;
pub mod node;
pub mod report;
pub mod streaming;
pub mod traffic;
pub mod webhook;
