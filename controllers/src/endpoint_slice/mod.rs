//! The EndpointSlice controller, as kube-controller-manager's `endpointslice-controller`:
//! for each Service with a selector, `discovery.k8s.io/v1` EndpointSlices listing the pods
//! it selects (at most `--max-endpoints-per-slice` endpoints each, per address family),
//! named `<service>-<random>`, owned by the Service and labelled with its name and
//! `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`. Services
//! without a selector are left to [`crate::endpoint_slice_mirroring`].
//!
//! Start at [`run`]. The event loop turns Service, pod and slice changes into Service keys
//! on a work queue ([`crate::service_pods::PodChanges`], [`SliceEvents`]); a sync
//! (`Controller::sync`) asks the [`reconciler`] for a plan and carries it out, noting its
//! own writes in the [`Tracker`] so that a cache behind them is waited for rather than acted
//! on. The pure parts:
//!
//! - [`reconciler`]: which slices to create, update and delete, with minimal churn.
//! - `endpoint_set`: endpoints by identity, and the port sets slices are grouped by.
//! - `tracker` and `slice_events`: the controller's own writes, and the changes that are not.

mod endpoint_set;
pub mod reconciler;
mod slice_events;
mod tracker;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_runtime::events::{object_reference, Recorder};
use rkube_runtime::informer::{self, Change};
use rkube_runtime::store::{Indexers, Store};
use rkube_runtime::workqueue::WorkQueue;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::api_errors::{message, namespace_terminating};
use crate::service_pods::{self, PodChanges};
use crate::trigger_time::TriggerTimes;
pub(crate) use endpoint_set::{same_beyond_identity, EndpointSet, PortKey};
pub use reconciler::{NodeInfo, Plan, Reconciler, MANAGED_BY_LABEL, ZONE_LABEL};
pub(crate) use slice_events::{managed_index, SliceEvents};
pub use tracker::{Tracker, SERVICE_NAME_LABEL};

/// The `managed-by` value of this controller's slices.
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
/// The component on its events.
const COMPONENT: &str = "endpoint-slice-controller";
/// The index of slices by their Service's key (`namespace/name`).
pub(crate) const SERVICE_INDEX: &str = "service";
/// The longest back-off of a Service whose sync keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(1000);
/// The longest one sync may take (its API calls included) before it is retried.
const SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// The controller's flags.
#[derive(Debug, Clone)]
pub struct Config {
    /// `--concurrent-service-endpoint-syncs`.
    pub workers: usize,
    /// `--max-endpoints-per-slice`.
    pub max_endpoints_per_slice: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config { workers: 5, max_endpoints_per_slice: 100 }
    }
}

/// Runs the controller until the task is aborted. `services`, `pods` and `nodes` are shared,
/// synced informers' stores; the change channels are the Service and pod informers'.
pub async fn run(
    client: Client,
    config: Config,
    services: Store<Service>,
    mut service_changes: mpsc::UnboundedReceiver<Change>,
    pods: Store<Pod>,
    mut pod_changes: mpsc::UnboundedReceiver<Change>,
    nodes: Store<Node>,
) {
    let (tx, mut slice_changes) = mpsc::unbounded_channel();
    let (slices, _watch) = informer::start_indexed(
        Api::<EndpointSlice>::all(client.clone()),
        watcher::Config::default(),
        Indexers::default().with(SERVICE_INDEX, managed_index(MANAGED_BY)),
        vec![tx],
    );
    if slices.wait_until_ready().await.is_err() {
        return;
    }
    let ctl = Arc::new(Controller {
        recorder: Recorder::new(client.clone(), COMPONENT),
        client,
        reconciler: Reconciler {
            max_endpoints_per_slice: config.max_endpoints_per_slice,
            managed_by: MANAGED_BY,
        },
        services,
        pods,
        nodes,
        slices,
        queue: WorkQueue::new(MAX_BACKOFF),
        tracker: Tracker::default(),
        trigger_times: TriggerTimes::default(),
    });
    let mut tasks = JoinSet::new();
    for _ in 0..config.workers.max(1) {
        tasks.spawn(work(ctl.clone()));
    }
    tracing::info!(workers = config.workers, "endpointslice-controller started");
    let mut pod_events = PodChanges::default();
    let mut slice_events = SliceEvents::new(MANAGED_BY);
    loop {
        tokio::select! {
            Some(change) = service_changes.recv() => {
                if let Change::Object { namespace, name } = change {
                    ctl.queue.add(service_pods::key(namespace.as_deref().unwrap_or(""), &name));
                }
            }
            Some(change) = pod_changes.recv() => {
                for key in pod_events.services_for(change, &ctl.pods, &ctl.services) {
                    ctl.queue.add(key);
                }
            }
            Some(change) = slice_changes.recv() => {
                for key in slice_events.services_for(change, &ctl.slices, &ctl.tracker) {
                    ctl.queue.add(key);
                }
            }
            else => break,
        }
    }
    ctl.queue.shut_down();
}

struct Controller {
    client: Client,
    recorder: Recorder,
    reconciler: Reconciler,
    services: Store<Service>,
    pods: Store<Pod>,
    nodes: Store<Node>,
    slices: Store<EndpointSlice>,
    queue: WorkQueue<String>,
    tracker: Tracker,
    trigger_times: TriggerTimes,
}

/// Why a sync failed (it is retried with a back-off).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The cache has not caught up with the controller's own writes yet.
    #[error("EndpointSlice informer cache is out of date")]
    Stale,
    #[error("failed to create EndpointSlice for Service {service}: {message}")]
    Create { service: String, message: String },
    #[error("failed to update {slice} EndpointSlice for Service {service}: {message}")]
    Update { slice: String, service: String, message: String },
    #[error("failed to delete {slice} EndpointSlice for Service {service}: {message}")]
    Delete { slice: String, service: String, message: String },
    /// Pods left out for now (their nodes are not known yet).
    #[error("{0}")]
    Skipped(String),
}

impl SyncError {
    /// Failures that only mean "not yet": retried quietly.
    fn routine(&self) -> bool {
        match self {
            SyncError::Stale => true,
            SyncError::Update { message, .. } => message.contains("the object has been modified"),
            _ => false,
        }
    }
}

async fn work(ctl: Arc<Controller>) {
    let sync = |key: String| {
        let ctl = ctl.clone();
        async move { ctl.sync(&key).await.map(|()| None) }
    };
    ctl.queue.work("endpointslice-controller", SYNC_TIMEOUT, sync, SyncError::routine).await
}

impl Controller {
    async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some((namespace, name)) = key.split_once('/') else { return Ok(()) };
        let Some(service) = self.services.get(&ObjectRef::new(name).within(namespace)) else {
            // Its slices go with it (they are owned by it).
            self.trigger_times.forget(key);
            self.tracker.delete_service(key);
            return Ok(());
        };
        if service_pods::is_external_name(&service) || service_pods::selector(&service).is_none() {
            return Ok(());
        }
        let pods = service_pods::selected_pods(&service, self.pods.in_namespace(namespace));
        let mut slices = self.slices.by_index(SERVICE_INDEX, key).unwrap_or_default();
        slices.retain(|s| s.metadata.deletion_timestamp.is_none());
        let uid = service.metadata.uid.as_deref().unwrap_or("");
        if self.tracker.stale(key, uid, &slices) {
            return Err(SyncError::Stale);
        }
        let trigger = self.trigger_times.compute(key, &service, &pods);
        let nodes = |node: &str| match self.nodes.get(&ObjectRef::new(node)) {
            Some(node) => NodeInfo::Found {
                zone: node.metadata.labels.as_ref().and_then(|l| l.get(ZONE_LABEL)).cloned(),
            },
            None => NodeInfo::Missing,
        };
        let plan = self.reconciler.reconcile(&service, &pods, &nodes, &slices, trigger);
        let skipped = plan.skipped.join("; ");
        let result = match self.apply(&service, key, plan).await {
            Ok(()) if skipped.is_empty() => Ok(()),
            Ok(()) => Err(SyncError::Skipped(skipped)),
            Err(e) => Err(e),
        };
        if let Err(e) = &result {
            if !matches!(e, SyncError::Stale) {
                let note = format!("Error updating Endpoint Slices for Service {key}: {e}");
                self.recorder.record(
                    &object_reference(&*service),
                    "Warning",
                    "FailedToUpdateEndpointSlices",
                    &note,
                );
            }
        }
        result
    }

    /// Creates (unless the Service is being deleted: the garbage collector is removing its
    /// slices), updates and deletes as planned, noting each write in the tracker.
    async fn apply(&self, service: &Service, key: &str, plan: Plan) -> Result<(), SyncError> {
        let namespace = service.metadata.namespace.as_deref().unwrap_or("");
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), namespace);
        if service.metadata.deletion_timestamp.is_none() {
            for slice in &plan.create {
                match api.create(&PostParams::default(), slice).await {
                    Ok(created) => self.tracker.update(&created),
                    // Every later create fails too; nothing to retry.
                    Err(e) if namespace_terminating(&e) => return Ok(()),
                    Err(e) => {
                        return Err(SyncError::Create {
                            service: key.to_string(),
                            message: message(&e),
                        })
                    }
                }
            }
        }
        for slice in &plan.update {
            let name = slice.metadata.name.as_deref().unwrap_or("");
            match api.replace(name, &PostParams::default(), slice).await {
                Ok(updated) => self.tracker.update(&updated),
                Err(e) => {
                    return Err(SyncError::Update {
                        slice: name.to_string(),
                        service: key.to_string(),
                        message: message(&e),
                    })
                }
            }
        }
        for slice in &plan.delete {
            let name = slice.metadata.name.as_deref().unwrap_or("");
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => self.tracker.expect_deletion(slice),
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    return Err(SyncError::Delete {
                        slice: name.to_string(),
                        service: key.to_string(),
                        message: message(&e),
                    })
                }
            }
        }
        if !(plan.create.is_empty() && plan.update.is_empty() && plan.delete.is_empty()) {
            tracing::debug!(
                service = key,
                created = plan.create.len(),
                updated = plan.update.len(),
                deleted = plan.delete.len(),
                "endpoint slices written"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
