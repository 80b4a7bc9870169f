//! The EndpointSlice mirroring controller, as kube-controller-manager's
//! `endpointslice-mirroring-controller`: a Service without a selector gets its endpoints from
//! Endpoints written by hand (or by another tool); this mirrors them into EndpointSlices
//! labelled `endpointslice.kubernetes.io/managed-by: endpointslicemirroring-controller.k8s.io`
//! and owned by the Endpoints object, so that EndpointSlice readers (kube-proxy, DNS) see
//! them too. Endpoints labelled `endpointslice.kubernetes.io/skip-mirror: "true"` (as the
//! `kubernetes` Service's) or used as leader-election locks are not mirrored; mirrored slices
//! go when the Service or its Endpoints go, or the Service gains a selector.
//!
//! Start at [`run`]; the pure decisions are in [`reconciler`].

pub mod reconciler;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Endpoints, Service};
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
use crate::endpoint_slice::{managed_index, SliceEvents, Tracker, SERVICE_INDEX};
use crate::endpoints::LEADER_ANNOTATION;
use crate::service_pods;
pub use reconciler::{Mirror, MirrorPlan};

/// The `managed-by` value of mirrored slices.
pub const MANAGED_BY: &str = "endpointslicemirroring-controller.k8s.io";
/// The label that keeps an Endpoints object from being mirrored (value `"true"`).
pub const SKIP_MIRROR_LABEL: &str = "endpointslice.kubernetes.io/skip-mirror";
/// The component on its events.
const COMPONENT: &str = "endpoint-slice-mirroring-controller";
const MAX_BACKOFF: Duration = Duration::from_secs(1000);
const SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// The controller's flags.
#[derive(Debug, Clone)]
pub struct Config {
    /// `--mirroring-concurrent-service-endpoint-syncs`.
    pub workers: usize,
    /// `--mirroring-max-endpoints-per-subset`.
    pub max_endpoints_per_subset: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config { workers: 5, max_endpoints_per_subset: 1000 }
    }
}

/// Whether an Endpoints object is mirrored: not marked to skip, not a leader-election lock.
pub fn should_mirror(endpoints: &Endpoints) -> bool {
    let skip = endpoints
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(SKIP_MIRROR_LABEL))
        .is_some_and(|v| v == "true");
    let leader =
        endpoints.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(LEADER_ANNOTATION));
    !skip && !leader
}

/// Runs the controller until the task is aborted. `services` is a shared, synced informer's
/// store with its change channel.
pub async fn run(
    client: Client,
    config: Config,
    services: Store<Service>,
    mut service_changes: mpsc::UnboundedReceiver<Change>,
) {
    let (tx, mut endpoints_changes) = mpsc::unbounded_channel();
    let (endpoints, _endpoints_watch) = informer::start(
        Api::<Endpoints>::all(client.clone()),
        watcher::Config::default(),
        vec![tx],
    );
    let (tx, mut slice_changes) = mpsc::unbounded_channel();
    let (slices, _slices_watch) = informer::start_indexed(
        Api::<EndpointSlice>::all(client.clone()),
        watcher::Config::default(),
        Indexers::default().with(SERVICE_INDEX, managed_index(MANAGED_BY)),
        vec![tx],
    );
    if endpoints.wait_until_ready().await.is_err() || slices.wait_until_ready().await.is_err() {
        return;
    }
    let ctl = Arc::new(Controller {
        recorder: Recorder::new(client.clone(), COMPONENT),
        client,
        mirror: Mirror {
            max_endpoints_per_subset: config.max_endpoints_per_subset,
            managed_by: MANAGED_BY,
        },
        services,
        endpoints,
        slices,
        queue: WorkQueue::new(MAX_BACKOFF),
        tracker: Tracker::default(),
    });
    let mut tasks = JoinSet::new();
    for _ in 0..config.workers.max(1) {
        tasks.spawn(work(ctl.clone()));
    }
    tracing::info!(workers = config.workers, "endpointslice-mirroring-controller started");
    // Whether each Endpoints object was mirrored when last seen.
    let mut mirrored: HashMap<(String, String), bool> = HashMap::new();
    let mut slice_events = SliceEvents::new(MANAGED_BY);
    loop {
        tokio::select! {
            Some(change) = service_changes.recv() => {
                if let Change::Object { namespace, name } = change {
                    ctl.queue.add(service_pods::key(namespace.as_deref().unwrap_or(""), &name));
                }
            }
            Some(change) = endpoints_changes.recv() => {
                let Some(r) = change.object_ref::<Endpoints>() else { continue };
                let at = (r.namespace.clone().unwrap_or_default(), r.name.clone());
                let now = ctl.endpoints.get(&r).map(|e| should_mirror(&e));
                let before = match now {
                    Some(now) => mirrored.insert(at.clone(), now),
                    None => mirrored.remove(&at),
                };
                if now == Some(true) || before == Some(true) {
                    ctl.queue.add(service_pods::key(&at.0, &at.1));
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
    mirror: Mirror,
    services: Store<Service>,
    endpoints: Store<Endpoints>,
    slices: Store<EndpointSlice>,
    queue: WorkQueue<String>,
    tracker: Tracker,
}

/// Why a sync failed (it is retried with a back-off).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("EndpointSlice informer cache is out of date")]
    Stale,
    #[error("failed to {action} EndpointSlice for Endpoints {key}: {message}")]
    Api { action: &'static str, key: String, message: String },
}

async fn work(ctl: Arc<Controller>) {
    let sync = |key: String| {
        let ctl = ctl.clone();
        async move { ctl.sync(&key).await.map(|()| None) }
    };
    let routine = |e: &SyncError| matches!(e, SyncError::Stale);
    ctl.queue.work("endpointslice-mirroring-controller", SYNC_TIMEOUT, sync, routine).await
}

impl Controller {
    async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some((namespace, name)) = key.split_once('/') else { return Ok(()) };
        let service = self.services.get(&ObjectRef::new(name).within(namespace));
        let endpoints = self.endpoints.get(&ObjectRef::new(name).within(namespace));
        let mirror = match (&service, &endpoints) {
            (Some(service), Some(endpoints)) => {
                service_pods::selector(service).is_none() && should_mirror(endpoints)
            }
            _ => false,
        };
        let (Some(endpoints), true) = (endpoints, mirror) else {
            self.tracker.delete_service(key);
            return self.delete_mirrored(namespace, key).await;
        };
        let slices = self.slices.by_index(SERVICE_INDEX, key).unwrap_or_default();
        let uid = service.as_ref().and_then(|s| s.metadata.uid.as_deref()).unwrap_or("");
        if self.tracker.stale(key, uid, &slices) {
            return Err(SyncError::Stale);
        }
        let plan = self.mirror.reconcile(&endpoints, &slices);
        let target = object_reference(&*endpoints);
        if plan.invalid > 0 {
            let note = format!(
                "Skipped {} invalid IP addresses when mirroring to EndpointSlices",
                plan.invalid
            );
            self.recorder.record(&target, "Warning", "InvalidIPAddress", &note);
        }
        if plan.skipped > plan.invalid {
            let note = format!(
                "A max of {} addresses can be mirrored to EndpointSlices per Endpoints subset. {} addresses were skipped",
                self.mirror.max_endpoints_per_subset, plan.skipped
            );
            self.recorder.record(&target, "Warning", "TooManyAddressesToMirror", &note);
        }
        self.apply(&endpoints, key, plan).await
    }

    async fn apply(
        &self,
        endpoints: &Endpoints,
        key: &str,
        plan: MirrorPlan,
    ) -> Result<(), SyncError> {
        let namespace = endpoints.metadata.namespace.as_deref().unwrap_or("");
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), namespace);
        let failed = |action, e: &kube::Error| SyncError::Api {
            action,
            key: key.to_string(),
            message: message(e),
        };
        // Not while the Endpoints object is being deleted: its slices go with it.
        if endpoints.metadata.deletion_timestamp.is_none() {
            for slice in &plan.create {
                match api.create(&PostParams::default(), slice).await {
                    Ok(created) => self.tracker.update(&created),
                    Err(e) if namespace_terminating(&e) => return Ok(()),
                    Err(e) => return Err(failed("create", &e)),
                }
            }
        }
        for slice in &plan.update {
            let name = slice.metadata.name.as_deref().unwrap_or("");
            match api.replace(name, &PostParams::default(), slice).await {
                Ok(updated) => self.tracker.update(&updated),
                Err(e) => return Err(failed("update", &e)),
            }
        }
        for slice in &plan.delete {
            let name = slice.metadata.name.as_deref().unwrap_or("");
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => self.tracker.expect_deletion(slice),
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(failed("delete", &e)),
            }
        }
        Ok(())
    }

    /// Deletes every slice mirrored for `key`.
    async fn delete_mirrored(&self, namespace: &str, key: &str) -> Result<(), SyncError> {
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), namespace);
        for slice in self.slices.by_index(SERVICE_INDEX, key).unwrap_or_default() {
            let name = slice.metadata.name.as_deref().unwrap_or("");
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    return Err(SyncError::Api {
                        action: "delete",
                        key: key.to_string(),
                        message: message(&e),
                    })
                }
            }
        }
        Ok(())
    }
}
