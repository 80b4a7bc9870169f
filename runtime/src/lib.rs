//! rkube's client runtime, as kube-runtime is kube-rs's and client-go's `tools` are
//! Kubernetes': the machinery every component that talks to the API server shares: the
//! controllers, the scheduler, the kubelet (and the proxy to come). It reaches the API server
//! only through the `kube` client, never through the store.
//!
//! | module | what it holds | upstream's counterpart |
//! |---|---|---|
//! | [`informer`] | one watch per resource (or per selector: the kubelet's own pods) feeding a shared cache, changes fanned out to subscribers as names or as [`store::Delta`]s with the objects | `SharedInformer` |
//! | [`store`] | the informer's cache, indexed by namespace, owner uid and any [`store::Indexers`] (pods by node) | `cache.Indexer` |
//! | [`workqueue`] | keys queued once, never worked on twice at a time, retried after a back-off | `workqueue` |
//! | [`expectations`] | creates and deletes a controller waits to see before acting again | `ControllerExpectations` |
//! | [`events`] | one event recorder: queued, posted in order, repeats counted up | `record.EventRecorder` |
//! | [`backoff`] | exponential back-off, by failure count or per key | `flowcontrol.Backoff` |
//! | [`leader_election`] | one active instance through a `coordination.k8s.io` Lease | `leaderelection` |
//!
//! Start at [`informer::start`] (or [`informer::Informer`]) and [`store::Store`] for reading
//! the cluster, and [`workqueue::WorkQueue::work`] for a controller's workers.

pub mod backoff;
pub mod events;
pub mod expectations;
pub mod informer;
pub mod leader_election;
pub mod metrics;
pub mod store;
pub mod workqueue;
