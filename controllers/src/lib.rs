//! The rkube controller manager: one module per controller (Deployments, ReplicaSets,
//! StatefulSets, DaemonSets, Jobs, CronJobs, garbage collection, EndpointSlices, node
//! lifecycle, service-account tokens, ...) over kube-runtime informers.
//!
//! Controllers reach the API server only through its public API (the `kube` client), never
//! through the store. Not implemented yet.
