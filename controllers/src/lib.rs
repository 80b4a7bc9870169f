//! The rkube controller manager: one module per controller, each over kube-runtime, reaching
//! the API server only through its public API (the `kube` client), never through the store,
//! exactly as kube-controller-manager uses client-go.
//!
//! Start at [`run`]: it starts every controller on one client. Today: [`namespace`], which
//! empties a namespace being deleted and then finalizes it. The workload, garbage-collection,
//! endpoint and node controllers come with their issues.

pub mod namespace;

/// Runs every controller until the returned task is aborted.
pub fn run(client: kube::Client) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        namespace::run(client).await;
    })
}
