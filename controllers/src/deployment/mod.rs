//! The Deployment controller, as kube-controller-manager's `deployment-controller`: rolls
//! each Deployment out through ReplicaSets it owns (one per pod template, named
//! `<deployment>-<pod-template-hash>`), by rolling update or recreate, keeps their revisions
//! for `kubectl rollout history` and `undo`, scales them proportionally when the Deployment is
//! resized mid-rollout, deletes the oldest beyond `revisionHistoryLimit`, and reports
//! progress in the Deployment's status and conditions. The ReplicaSet controller makes the
//! pods; this one only sizes ReplicaSets and reads their status.
//!
//! Start at [`run`]: informers for Deployments and ReplicaSets (pods come shared), a work
//! queue of `namespace/name` keys fed by their changes, and workers that each sync one
//! Deployment at a time (`Controller::sync`). That claims the Deployment's ReplicaSets and
//! picks what to do, as upstream's `syncDeployment`:
//!
//! - `sync.rs`: finding the new ReplicaSet (creating it, with its revision) and the old ones;
//!   scaling when only the size changed or the Deployment is paused; history cleanup;
//! - `rolling.rs` and `recreate.rs`: the two strategies;
//! - `rollback.rs`: the deprecated rollback annotation (`kubectl rollout undo` patches the
//!   template itself, which needs nothing special);
//! - `progress.rs` and `status.rs`: conditions, the progress deadline, the status write;
//! - `hash.rs`, `annotations.rs`, `surge.rs`, `replica_sets.rs`: the pure parts.
//!
//! Each sync works from the informers' caches and writes ReplicaSets with the
//! resourceVersion it read, so a stale cache makes a write conflict and the key is retried,
//! never acted on twice.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_apis::selectors::labels::LabelSelector;
use rkube_runtime::store::Store;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::controller_ref::{self, controller_of, ClaimError};
use rkube_runtime::events::Recorder;
use rkube_runtime::informer::{self, Change};
use rkube_runtime::workqueue::WorkQueue;

mod annotations;
mod hash;
mod progress;
mod recreate;
mod replica_sets;
mod rollback;
mod rolling;
mod status;
pub(crate) mod surge;
mod sync;

#[cfg(test)]
mod fixtures;

const COMPONENT: &str = "deployment-controller";
/// The longest back-off of a failing key (client-go's default limiter's cap).
const MAX_BACKOFF: Duration = Duration::from_secs(1000);
/// A sync that takes longer is abandoned and retried (an API call hung).
const SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// Why a sync failed; the key is retried with back-off.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error(transparent)]
    Claim(#[from] ClaimError),
    #[error("deployment {0} has an invalid label selector: {1}")]
    Selector(String, String),
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    /// A write raced another (stale cache): routine, retried at once.
    fn is_conflict(&self) -> bool {
        matches!(self, Error::Api(kube::Error::Api(s)) if s.code == 409)
    }
}

/// Runs the controller until the task is aborted. `pods` is a shared, synced informer's
/// store and `pod_changes` its changes.
pub async fn run(
    client: Client,
    workers: usize,
    pods: Store<Pod>,
    mut pod_changes: mpsc::UnboundedReceiver<Change>,
) {
    let (deployment_tx, mut deployment_changes) = mpsc::unbounded_channel();
    let (replica_set_tx, mut replica_set_changes) = mpsc::unbounded_channel();
    let (deployments, _deployment_watch) = informer::start(
        Api::<Deployment>::all(client.clone()),
        watcher::Config::default(),
        vec![deployment_tx],
    );
    let (replica_sets, _replica_set_watch) = informer::start(
        Api::<ReplicaSet>::all(client.clone()),
        watcher::Config::default(),
        vec![replica_set_tx],
    );
    if deployments.wait_until_ready().await.is_err()
        || replica_sets.wait_until_ready().await.is_err()
        || pods.wait_until_ready().await.is_err()
    {
        return;
    }
    let ctl = Arc::new(Controller {
        recorder: Recorder::new(client.clone(), COMPONENT),
        client,
        deployments,
        replica_sets,
        pods,
        queue: WorkQueue::new(MAX_BACKOFF),
        owners: Mutex::new(Owners::default()),
    });
    tracing::info!(workers, "deployment controller started");
    // Stopped with this future: the workers with the set, the informers with their handles.
    let mut tasks = JoinSet::new();
    for _ in 0..workers.max(1) {
        tasks.spawn(work(ctl.clone()));
    }
    loop {
        tokio::select! {
            Some(change) = deployment_changes.recv() => {
                let (objects, synced) = informer::drain(change, &mut deployment_changes);
                for (namespace, name) in objects {
                    ctl.queue.add(format!("{}/{name}", namespace.unwrap_or_default()));
                }
                if synced {
                    ctl.enqueue_all(|_| true);
                }
            }
            Some(change) = replica_set_changes.recv() => {
                let (objects, synced) = informer::drain(change, &mut replica_set_changes);
                for (namespace, name) in objects {
                    ctl.replica_set_changed(&namespace.unwrap_or_default(), &name);
                }
                // A relist drops what was deleted meanwhile without telling: look at all.
                if synced {
                    ctl.enqueue_all(|_| true);
                }
            }
            Some(change) = pod_changes.recv() => {
                let (objects, synced) = informer::drain(change, &mut pod_changes);
                for (namespace, name) in objects {
                    ctl.pod_changed(&namespace.unwrap_or_default(), &name);
                }
                if synced {
                    ctl.pods_relisted();
                }
            }
            else => break,
        }
    }
}

/// Who controlled what when last seen: a deleted or released object is gone from the
/// cache, but its controller must still hear of it.
#[derive(Default)]
struct Owners {
    /// ReplicaSet (namespace, name) -> the Deployment controlling it.
    replica_sets: HashMap<(String, String), String>,
    /// Pod (namespace, name) -> the ReplicaSet controlling it.
    pods: HashMap<(String, String), String>,
}

pub(crate) struct Controller {
    client: Client,
    recorder: Recorder,
    deployments: Store<Deployment>,
    replica_sets: Store<ReplicaSet>,
    pods: Store<Pod>,
    queue: WorkQueue<String>,
    owners: Mutex<Owners>,
}

/// One worker, until the task is aborted.
async fn work(ctl: Arc<Controller>) {
    let sync = |key: String| {
        let ctl = ctl.clone();
        async move { ctl.sync(&key).await.map(|()| None) }
    };
    ctl.queue.work(COMPONENT, SYNC_TIMEOUT, sync, Error::is_conflict).await
}

fn labels(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    meta.labels.as_ref().unwrap_or(&EMPTY)
}

/// The Deployment's selector; `None` for one that cannot be parsed.
fn selector(d: &Deployment) -> Option<LabelSelector> {
    let spec = d.spec.as_ref()?;
    LabelSelector::from_api(&serde_json::to_value(&spec.selector).ok()?).ok()
}

/// The Deployment controlling `meta`'s object, by name and uid.
fn deployment_owner(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<(&str, &str)> {
    let r = controller_of(meta)?;
    (r.kind == "Deployment" && r.api_version.starts_with("apps/"))
        .then_some((r.name.as_str(), r.uid.as_str()))
}

/// A Deployment as events name it (client-go's `GetReference`).
fn deployment_reference(d: &Deployment) -> ObjectReference {
    ObjectReference {
        api_version: Some("apps/v1".into()),
        kind: Some("Deployment".into()),
        namespace: d.metadata.namespace.clone(),
        name: d.metadata.name.clone(),
        uid: d.metadata.uid.clone(),
        resource_version: d.metadata.resource_version.clone(),
        ..Default::default()
    }
}

impl Controller {
    fn deployment(&self, namespace: &str, name: &str) -> Option<Arc<Deployment>> {
        self.deployments.get(&ObjectRef::new(name).within(namespace))
    }

    fn enqueue_all(&self, which: impl Fn(&Deployment) -> bool) {
        for d in self.deployments.state() {
            if which(&d) {
                let namespace = d.metadata.namespace.as_deref().unwrap_or_default();
                let name = d.metadata.name.as_deref().unwrap_or_default();
                self.queue.add(format!("{namespace}/{name}"));
            }
        }
    }

    /// Wakes the ReplicaSet's controller (also its former one, if it changed or the
    /// ReplicaSet is gone), or for an orphan every Deployment that could adopt it.
    fn replica_set_changed(&self, namespace: &str, name: &str) {
        let key = (namespace.to_string(), name.to_string());
        let current = self.replica_sets.get(&ObjectRef::new(name).within(namespace));
        let mut owners = self.owners.lock().expect("owners");
        let previous = owners.replica_sets.remove(&key);
        let owner = current.as_ref().and_then(|rs| deployment_owner(&rs.metadata));
        if let Some(previous) = previous.filter(|p| Some(p.as_str()) != owner.map(|o| o.0)) {
            self.queue.add(format!("{namespace}/{previous}"));
        }
        let Some(rs) = current.as_ref() else { return };
        match owner {
            Some((owner, uid)) => {
                owners.replica_sets.insert(key, owner.to_string());
                let same = self
                    .deployment(namespace, owner)
                    .is_some_and(|d| d.metadata.uid.as_deref() == Some(uid));
                if same {
                    self.queue.add(format!("{namespace}/{owner}"));
                }
            }
            None if rs.metadata.deletion_timestamp.is_none() => {
                drop(owners);
                let rs_labels = labels(&rs.metadata);
                if rs_labels.is_empty() {
                    return;
                }
                self.enqueue_all(|d| {
                    d.metadata.namespace.as_deref() == Some(namespace)
                        && selector(d).is_some_and(|s| !s.is_empty() && s.matches(rs_labels))
                });
            }
            None => {}
        }
    }

    /// Remembers which ReplicaSet controls the pod; a pod of a Recreate Deployment that is
    /// gone or finished may be the one the rollout waits for.
    fn pod_changed(&self, namespace: &str, name: &str) {
        let key = (namespace.to_string(), name.to_string());
        let current = self.pods.get(&ObjectRef::new(name).within(namespace));
        let owner = current
            .as_ref()
            .and_then(|pod| controller_of(&pod.metadata))
            .filter(|r| r.kind == "ReplicaSet")
            .map(|r| r.name.clone());
        let previous = {
            let mut owners = self.owners.lock().expect("owners");
            match &owner {
                Some(rs) => owners.pods.insert(key, rs.clone()),
                None => owners.pods.remove(&key),
            }
        };
        let finished = current.as_ref().is_none_or(|pod| {
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            matches!(phase, Some("Succeeded" | "Failed"))
        });
        if finished || owner.is_none() {
            if let Some(rs) = previous.or(owner) {
                self.wake_recreate(namespace, &rs);
            }
        }
    }

    /// After a relist of pods: forgets the pods that are gone, and looks at every Recreate
    /// Deployment (one may wait for a pod whose deletion was missed).
    fn pods_relisted(&self) {
        let present: std::collections::HashSet<(String, String)> = self
            .pods
            .state()
            .iter()
            .map(|p| {
                (
                    p.metadata.namespace.clone().unwrap_or_default(),
                    p.metadata.name.clone().unwrap_or_default(),
                )
            })
            .collect();
        self.owners.lock().expect("owners").pods.retain(|k, _| present.contains(k));
        self.enqueue_all(|d| surge::strategy_type(d) == surge::RECREATE);
    }

    /// Queues the Deployment controlling the ReplicaSet if it uses the Recreate strategy.
    fn wake_recreate(&self, namespace: &str, replica_set: &str) {
        let Some(rs) = self.replica_sets.get(&ObjectRef::new(replica_set).within(namespace)) else {
            return;
        };
        let Some((name, uid)) = deployment_owner(&rs.metadata) else { return };
        if let Some(d) = self.deployment(namespace, name) {
            if d.metadata.uid.as_deref() == Some(uid) && surge::strategy_type(&d) == surge::RECREATE
            {
                self.queue.add(format!("{namespace}/{name}"));
            }
        }
    }

    /// Syncs one Deployment, as upstream's `syncDeployment`.
    async fn sync(&self, key: &str) -> Result<(), Error> {
        let Some((namespace, name)) = key.split_once('/') else { return Ok(()) };
        let Some(cached) = self.deployment(namespace, name) else {
            tracing::debug!(deployment = key, "deployment has been deleted");
            return Ok(());
        };
        let d = (*cached).clone();
        if d.spec.is_none() {
            return Ok(());
        }
        let selector = selector(&d).ok_or_else(|| {
            let raw =
                serde_json::to_string(&d.spec.as_ref().map(|s| &s.selector)).unwrap_or_default();
            Error::Selector(key.to_string(), raw)
        })?;
        let mut rollout = Rollout {
            ctl: self,
            deployments: Api::namespaced(self.client.clone(), namespace),
            replica_sets: Api::namespaced(self.client.clone(), namespace),
            key: key.to_string(),
            selector,
            d,
            rss: Vec::new(),
        };
        if rollout.selector.is_empty() {
            return rollout.selecting_all().await;
        }
        // Every ReplicaSet of the namespace, not only the owned ones: orphans may be adopted.
        let candidates: Vec<Arc<ReplicaSet>> = self.replica_sets.in_namespace(namespace);
        let claimed = controller_ref::claim(
            &rollout.deployments,
            &rollout.d,
            &rollout.replica_sets,
            candidates,
            |rs| rollout.selector.matches(labels(&rs.metadata)),
        )
        .await?;
        rollout.rss = claimed.iter().map(|rs| (**rs).clone()).collect();

        if rollout.d.metadata.deletion_timestamp.is_some() {
            return rollout.sync_status_only().await;
        }
        rollout.check_paused_conditions().await?;
        if rollout.paused() {
            return rollout.sync().await;
        }
        if rollback::rollback_to(&rollout.d).is_some() {
            return rollout.rollback().await;
        }
        if rollout.is_scaling_event().await? {
            return rollout.sync().await;
        }
        match surge::strategy_type(&rollout.d) {
            surge::RECREATE => rollout.rollout_recreate().await,
            surge::ROLLING_UPDATE => rollout.rollout_rolling().await,
            other => Err(Error::Invalid(format!("unexpected deployment strategy type: {other}"))),
        }
    }
}

/// One sync of one Deployment: the Deployment and the ReplicaSets it controls, both kept
/// current with every write made along the way.
struct Rollout<'a> {
    ctl: &'a Controller,
    deployments: Api<Deployment>,
    replica_sets: Api<ReplicaSet>,
    key: String,
    selector: LabelSelector,
    d: Deployment,
    rss: Vec<ReplicaSet>,
}

impl Rollout<'_> {
    fn name(&self) -> &str {
        self.d.metadata.name.as_deref().unwrap_or_default()
    }

    fn paused(&self) -> bool {
        self.d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false)
    }

    async fn event(&self, kind: &str, reason: &str, message: &str) {
        self.ctl.recorder.record(&deployment_reference(&self.d), kind, reason, message);
    }

    /// Replaces the cached copy of a ReplicaSet just written (or adds one just created).
    fn remember(&mut self, rs: &ReplicaSet) {
        match self.rss.iter_mut().find(|r| r.metadata.uid == rs.metadata.uid) {
            Some(slot) => *slot = rs.clone(),
            None => self.rss.push(rs.clone()),
        }
    }

    /// A Deployment selecting every pod would fight every other controller: it is only
    /// reported, as upstream does.
    async fn selecting_all(&mut self) -> Result<(), Error> {
        self.event(
            "Warning",
            "SelectingAll",
            "This deployment is selecting all pods. A non-empty selector is required.",
        )
        .await;
        let observed = self.d.status.as_ref().and_then(|s| s.observed_generation).unwrap_or(0);
        let generation = self.d.metadata.generation.unwrap_or(0);
        if observed >= generation {
            return Ok(());
        }
        self.d.status.get_or_insert_with(Default::default).observed_generation = Some(generation);
        self.update_status().await
    }

    /// The Deployment's pods controlled by one of its ReplicaSets.
    fn pods(&self) -> Vec<Arc<Pod>> {
        let namespace = self.d.metadata.namespace.as_deref();
        let uids: std::collections::HashSet<&str> =
            self.rss.iter().map(replica_sets::uid).collect();
        // The pods each ReplicaSet controls, by owner uid (a pod has one controller: each is
        // found once).
        let controlled = uids.iter().flat_map(|uid| {
            let pods = self.ctl.pods.owned_by(uid);
            pods.into_iter()
                .filter(move |p| controller_of(&p.metadata).is_some_and(|r| r.uid == *uid))
        });
        controlled
            .filter(|p| p.metadata.namespace.as_deref() == namespace)
            .filter(|p| self.selector.matches(labels(&p.metadata)))
            .collect()
    }
}
