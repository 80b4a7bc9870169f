//! The ReplicaSet controller, as kube-controller-manager's `replicaset-controller` and
//! `replicationcontroller-controller`: one mechanism for both kinds, which keeps as many pods
//! as an owner's `spec.replicas` asks for and reports how many exist, carry the template's
//! labels, are ready and are available in the owner's status.
//!
//! Start at [`run`], generic over [`Replicated`]: what the mechanism needs from a kind
//! (replicas, selector, pod template, status), implemented for apps/v1 ReplicaSets and
//! core/v1 ReplicationControllers. Then:
//!
//! - The event loop (`PodWatch`) turns owner and pod changes into owner keys
//!   (`namespace/name`) on a work queue: a pod's controller, or, for an orphan, every owner in
//!   its namespace whose selector matches it. It also tells the [expectations] what it saw.
//! - Each sync (`Controller::sync`) claims the owner's active pods (adopting matching
//!   orphans, releasing owned pods that no longer match), creates or deletes pods when the
//!   count is off and no earlier creates or deletes are still awaited, and writes the status
//!   (`status.rs`) when it changed. Pods to delete are chosen by [`pods_to_delete`]
//!   (`ranking.rs`).
//!
//! Creates go out in slow-start batches (1, 2, 4, ...) so that an owner that cannot create
//! pods (quota, admission) fails once instead of hundreds of times; at most 500 pods are
//! created or deleted per sync.
//!
//! [expectations]: rkube_runtime::expectations

mod ranking;
mod status;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ObjectReference, Pod, PodTemplateSpec, ReplicationController};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use k8s_openapi::serde::de::DeserializeOwned;
use k8s_openapi::serde::Serialize;
use k8s_openapi::NamespaceResourceScope;
use kube::api::{Api, DeleteParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, Resource};
use rkube_apis::selectors::{LabelSelector, SelectorError};
use rkube_runtime::store::Store;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::api_errors::message;
use crate::controller_ref::{self, controller_of, ClaimError};
use crate::pod_control::{self, CreateError};
use crate::pod_events::{PodEvents, PodHandler, SeenPod};
use crate::status_write::write_status;
use rkube_runtime::events::Recorder;
use rkube_runtime::expectations::Expectations;
use rkube_runtime::expectations::OwnerUids;
use rkube_runtime::informer::{self, Change};
use rkube_runtime::workqueue::WorkQueue;

pub use ranking::{pods_to_delete, DELETION_COST};
pub use status::{Condition, Failure, ReplicaStatus, REPLICA_FAILURE};

/// Most pods created or deleted in one sync (upstream's `BurstReplicas`).
pub const BURST_REPLICAS: usize = 500;
/// The first slow-start batch of creates; each next one is twice as large.
const SLOW_START_INITIAL_BATCH: usize = 1;
/// The longest back-off of an owner whose sync keeps failing (client-go's default).
const MAX_BACKOFF: Duration = Duration::from_secs(1000);
/// The longest one sync may take (its API calls included) before it is retried.
const SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// A kind that keeps a number of pods: ReplicaSets and ReplicationControllers.
pub trait Replicated:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + DeserializeOwned
    + Serialize
    + Send
    + Sync
    + 'static
{
    /// The component on the events this controller records (upstream's event source).
    const COMPONENT: &'static str;

    /// `spec.replicas`; 1 when unset.
    fn replicas(&self) -> i32;

    /// `spec.minReadySeconds`; 0 when unset.
    fn min_ready_seconds(&self) -> i32;

    /// The pods it selects. An invalid selector is an error; one that matches nothing is not.
    fn selector(&self) -> Result<LabelSelector, SelectorError>;

    /// `spec.template`.
    fn template(&self) -> Option<&PodTemplateSpec>;

    /// Its status, in the shape both kinds share.
    fn replica_status(&self) -> ReplicaStatus;

    /// Replaces its status; zero counters are left out, as upstream writes them.
    fn set_replica_status(&mut self, status: ReplicaStatus);
}

impl Replicated for ReplicaSet {
    const COMPONENT: &'static str = "replicaset-controller";

    fn replicas(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
    }

    fn min_ready_seconds(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0)
    }

    fn selector(&self) -> Result<LabelSelector, SelectorError> {
        let Some(spec) = self.spec.as_ref() else { return Ok(LabelSelector::nothing()) };
        // Serializing a k8s-openapi LabelSelector cannot fail; if it did, select nothing.
        let value = serde_json::to_value(&spec.selector).unwrap_or(serde_json::Value::Null);
        LabelSelector::from_api(&value)
    }

    fn template(&self) -> Option<&PodTemplateSpec> {
        self.spec.as_ref()?.template.as_ref()
    }

    fn replica_status(&self) -> ReplicaStatus {
        status::from_api(self.status.as_ref())
    }

    fn set_replica_status(&mut self, s: ReplicaStatus) {
        self.status = status::to_api(&s);
    }
}

impl Replicated for ReplicationController {
    /// Upstream's replication manager records events as `replication-controller`.
    const COMPONENT: &'static str = "replication-controller";

    fn replicas(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
    }

    fn min_ready_seconds(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0)
    }

    /// The map selector, or the template's labels when it is empty (the API's default); with
    /// neither, nothing, so that an RC never claims every pod of its namespace.
    fn selector(&self) -> Result<LabelSelector, SelectorError> {
        let spec = self.spec.as_ref();
        let selector = spec.and_then(|s| s.selector.as_ref()).filter(|s| !s.is_empty());
        let template_labels = || {
            spec.and_then(|s| s.template.as_ref())
                .and_then(|t| t.metadata.as_ref())
                .and_then(|m| m.labels.as_ref())
                .filter(|l| !l.is_empty())
        };
        Ok(selector
            .or_else(template_labels)
            .map_or_else(LabelSelector::nothing, LabelSelector::from_map))
    }

    fn template(&self) -> Option<&PodTemplateSpec> {
        self.spec.as_ref()?.template.as_ref()
    }

    fn replica_status(&self) -> ReplicaStatus {
        status::from_api(self.status.as_ref())
    }

    fn set_replica_status(&mut self, s: ReplicaStatus) {
        self.status = status::to_api(&s);
    }
}

/// Runs the controller for kind `K` with `workers` concurrent syncs, until the task is aborted.
/// `pods` is a shared, synced Pod informer's store and `pod_changes` its change channel.
pub async fn run<K: Replicated>(
    client: Client,
    workers: usize,
    pods: Store<Pod>,
    mut pod_changes: mpsc::UnboundedReceiver<Change>,
) {
    let kind = K::kind(&());
    let (tx, mut owner_changes) = mpsc::unbounded_channel();
    let (owners, _watch) =
        informer::start(Api::<K>::all(client.clone()), watcher::Config::default(), vec![tx]);
    // Changes wait in their channels meanwhile: a pod can only be matched to owners once the
    // owners are known.
    if owners.wait_until_ready().await.is_err() || pods.wait_until_ready().await.is_err() {
        return;
    }
    let ctl = Arc::new(Controller {
        recorder: Recorder::new(client.clone(), K::COMPONENT),
        client,
        owners,
        pods,
        queue: WorkQueue::new(MAX_BACKOFF),
        expectations: TrackedExpectations::default(),
    });
    let mut tasks = JoinSet::new();
    for _ in 0..workers.max(1) {
        tasks.spawn(work(ctl.clone()));
    }
    tracing::info!(kind = kind.as_ref(), workers, "{} controller started", K::COMPONENT);
    let mut watch = PodWatch {
        ctl: ctl.clone(),
        pods: PodEvents::new(ctl.pods.clone()).with_ready(status::is_ready),
        owner_uids: OwnerUids::default(),
    };
    loop {
        tokio::select! {
            Some(change) = owner_changes.recv() => watch.owner_changed(change),
            Some(change) = pod_changes.recv() => watch.pod_changed(change),
            else => break,
        }
    }
    ctl.queue.shut_down();
}

/// Expectations with the pods awaited for deletion tracked by uid (as client-go's
/// `UIDTrackingControllerExpectations`): a pod marked for deletion and later gone counts once,
/// and pods deleted by someone else do not count at all.
#[derive(Default)]
struct TrackedExpectations {
    counts: Expectations,
    deleting: Mutex<HashMap<String, HashSet<String>>>,
}

impl TrackedExpectations {
    fn satisfied(&self, key: &str) -> bool {
        self.counts.satisfied(key)
    }

    fn expect_creations(&self, key: &str, adds: usize) {
        self.deleting.lock().expect("expectations").remove(key);
        self.counts.expect(key, i64::try_from(adds).unwrap_or(i64::MAX), 0);
    }

    fn expect_deletions(&self, key: &str, uids: HashSet<String>) {
        let deletes = i64::try_from(uids.len()).unwrap_or(i64::MAX);
        self.deleting.lock().expect("expectations").insert(key.to_string(), uids);
        self.counts.expect(key, 0, deletes);
    }

    fn creation_observed(&self, key: &str) {
        self.counts.creation_observed(key);
    }

    fn deletion_observed(&self, key: &str, uid: &str) {
        let awaited = self
            .deleting
            .lock()
            .expect("expectations")
            .get_mut(key)
            .is_some_and(|uids| uids.remove(uid));
        if awaited {
            self.counts.deletion_observed(key);
        }
    }

    fn forget(&self, key: &str) {
        self.deleting.lock().expect("expectations").remove(key);
        self.counts.delete(key);
    }
}

struct Controller<K: Replicated> {
    client: Client,
    recorder: Recorder,
    owners: Store<K>,
    pods: Store<Pod>,
    queue: WorkQueue<String>,
    expectations: TrackedExpectations,
}

/// Why a sync failed (it is retried with a back-off).
#[derive(Debug, thiserror::Error)]
enum SyncError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("claiming pods: {0}")]
    Claim(#[from] ClaimError),
    #[error("{0}")]
    Manage(#[from] ManageError),
}

/// Why creating or deleting pods failed.
#[derive(Debug, thiserror::Error)]
enum ManageError {
    /// Reported in the `ReplicaFailure` condition (reason `FailedCreate` or `FailedDelete`).
    #[error("{message}")]
    Failed { reason: &'static str, message: String },
    /// The namespace is being deleted: no create can succeed, nothing worth reporting.
    #[error("{0}")]
    NamespaceTerminating(String),
}

/// One worker: syncs keys from the queue until it shuts down.
async fn work<K: Replicated>(ctl: Arc<Controller<K>>) {
    let sync = |key: String| {
        let ctl = ctl.clone();
        async move { ctl.sync(&key).await.map(|()| None) }
    };
    let routine =
        |e: &SyncError| matches!(e, SyncError::Manage(ManageError::NamespaceTerminating(_)));
    ctl.queue.work(K::COMPONENT, SYNC_TIMEOUT, sync, routine).await
}

fn labels_of(pod: &Pod) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    pod.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

fn key_of(meta: &ObjectMeta) -> String {
    format!("{}/{}", meta.namespace.as_deref().unwrap_or(""), meta.name.as_deref().unwrap_or(""))
}

/// An owner as events name it, resourceVersion included (client-go's `GetReference`).
fn reference<K: Replicated>(owner: &K) -> ObjectReference {
    ObjectReference {
        resource_version: owner.meta().resource_version.clone(),
        ..owner.object_ref(&())
    }
}

/// The sizes of the slow-start batches creating `count` pods: 1, 2, 4, ... (the last one
/// smaller when `count` runs out).
fn slow_start_batches(count: usize) -> Vec<usize> {
    let mut batches = Vec::new();
    let (mut remaining, mut size) = (count, SLOW_START_INITIAL_BATCH);
    while remaining > 0 {
        let batch = size.min(remaining);
        batches.push(batch);
        remaining -= batch;
        size = size.saturating_mul(2);
    }
    batches
}

/// The pod an owner creates: named `<owner>-<random>`, with the template's labels,
/// annotations, finalizers and spec, and the owner as controller.
fn pod_from_template(
    template: Option<&PodTemplateSpec>,
    namespace: &str,
    owner_name: &str,
    controller: OwnerReference,
) -> Pod {
    let meta = template.and_then(|t| t.metadata.as_ref());
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{owner_name}-")),
            namespace: Some(namespace.to_string()),
            labels: meta.and_then(|m| m.labels.clone()),
            annotations: meta.and_then(|m| m.annotations.clone()),
            finalizers: meta.and_then(|m| m.finalizers.clone()),
            owner_references: Some(vec![controller]),
            ..ObjectMeta::default()
        },
        spec: template.and_then(|t| t.spec.clone()),
        status: None,
    }
}

impl<K: Replicated> Controller<K> {
    /// Brings the owner `key` (`namespace/name`) in line: claims its pods, creates or deletes
    /// pods when needed, writes its status.
    async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some((namespace, name)) = key.split_once('/') else { return Ok(()) };
        let Some(owner) = self.owners.get(&ObjectRef::new(name).within(namespace)) else {
            tracing::debug!(kind = K::kind(&()).as_ref(), key, "gone");
            self.expectations.forget(key);
            return Ok(());
        };
        // Read before listing pods: pods seen after this point are in the list.
        let needs_sync = self.expectations.satisfied(key);
        let selector = match owner.selector() {
            Ok(selector) => selector,
            Err(e) => {
                // Retrying cannot help; a change to the owner queues it again.
                tracing::warn!(kind = K::kind(&()).as_ref(), key, error = %e, "invalid selector");
                return Ok(());
            }
        };
        // Every active pod of the namespace, not only the owned ones: orphans may be adopted.
        let mut active = self.pods.in_namespace(namespace);
        active.retain(|p| status::is_active(p));
        let owner_api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        let pod_api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let owned = controller_ref::claim(&owner_api, owner.as_ref(), &pod_api, active, |p| {
            selector.matches(labels_of(p))
        })
        .await?;

        let mut managed = Ok(());
        if needs_sync && owner.meta().deletion_timestamp.is_none() {
            managed = self.manage(&owner, key, &owned, &pod_api).await;
        }

        let failure = match &managed {
            Err(ManageError::Failed { reason, message }) => {
                Some(Failure { reason, message: message.clone() })
            }
            _ => None,
        };
        let current = owner.replica_status();
        let template_labels = owner
            .template()
            .and_then(|t| t.metadata.as_ref())
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        let min_ready_seconds = owner.min_ready_seconds();
        let next = status::compute(
            &current,
            owner.meta().generation.unwrap_or(0),
            &template_labels,
            min_ready_seconds,
            &owned,
            failure.as_ref(),
            Timestamp::now(),
        );
        if next != current {
            write_status(&owner_api, &owner, |o| o.set_replica_status(next.clone())).await?;
        }
        // Nothing else will happen when the pods turn available: look again then.
        if managed.is_ok() && min_ready_seconds > 0 && next.ready_replicas > next.available_replicas
        {
            let delay = Duration::from_secs(u64::try_from(min_ready_seconds).unwrap_or(0));
            self.queue.add_after(key.to_string(), delay);
        }
        Ok(managed?)
    }

    /// Creates or deletes pods so that `pods` (the owner's active pods) reach its replicas.
    async fn manage(
        &self,
        owner: &K,
        key: &str,
        pods: &[Arc<Pod>],
        pod_api: &Api<Pod>,
    ) -> Result<(), ManageError> {
        let wanted = usize::try_from(owner.replicas()).unwrap_or(0);
        let kind = K::kind(&());
        if pods.len() < wanted {
            let count = (wanted - pods.len()).min(BURST_REPLICAS);
            tracing::info!(kind = kind.as_ref(), key, wanted, "too few replicas, creating {count}");
            self.expectations.expect_creations(key, count);
            self.create_pods(owner, key, count, pod_api).await
        } else if pods.len() > wanted {
            let count = (pods.len() - wanted).min(BURST_REPLICAS);
            tracing::info!(
                kind = kind.as_ref(),
                key,
                wanted,
                "too many replicas, deleting {count}"
            );
            let related = self.related_pods(owner);
            let doomed = pods_to_delete(pods, &related, count, Timestamp::now());
            let uids = doomed.iter().filter_map(|p| p.metadata.uid.clone()).collect();
            self.expectations.expect_deletions(key, uids);
            self.delete_pods(owner, key, &doomed, pod_api).await
        } else {
            Ok(())
        }
    }

    /// Creates `count` pods in slow-start batches; the first batch with a failure is the last,
    /// and the pods not created are no longer expected.
    async fn create_pods(
        &self,
        owner: &K,
        key: &str,
        count: usize,
        pod_api: &Api<Pod>,
    ) -> Result<(), ManageError> {
        let meta = owner.meta();
        let namespace = meta.namespace.as_deref().unwrap_or("");
        let pod = pod_from_template(
            owner.template(),
            namespace,
            meta.name.as_deref().unwrap_or(""),
            controller_ref::owner_reference(owner),
        );
        let target = reference(owner);
        let mut created = 0;
        let mut failed = None;
        for batch in slow_start_batches(count) {
            let attempts = (0..batch).map(|_| self.create_pod(&target, &pod, pod_api));
            let results = futures::future::join_all(attempts).await;
            created += results.iter().filter(|r| r.is_ok()).count();
            if let Some(e) = results.into_iter().find_map(Result::err) {
                failed = Some(e);
                break;
            }
        }
        let skipped = count - created;
        if skipped > 0 {
            tracing::debug!(key, skipped, "slow-start failure: not expecting the pods not created");
            for _ in 0..skipped {
                self.expectations.creation_observed(key);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    async fn create_pod(
        &self,
        target: &ObjectReference,
        pod: &Pod,
        pod_api: &Api<Pod>,
    ) -> Result<(), ManageError> {
        match pod_control::create(pod_api, &self.recorder, target, pod).await {
            Ok(_) => Ok(()),
            Err(CreateError::NamespaceTerminating(m)) => Err(ManageError::NamespaceTerminating(m)),
            Err(CreateError::Failed(message)) => {
                Err(ManageError::Failed { reason: "FailedCreate", message })
            }
        }
    }

    /// Deletes `doomed` concurrently; a pod already gone counts as deleted.
    async fn delete_pods(
        &self,
        owner: &K,
        key: &str,
        doomed: &[Arc<Pod>],
        pod_api: &Api<Pod>,
    ) -> Result<(), ManageError> {
        let target = reference(owner);
        let deletes = doomed.iter().map(|pod| async {
            let name = pod.metadata.name.as_deref().unwrap_or("");
            let uid = pod.metadata.uid.as_deref().unwrap_or("");
            match pod_api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {
                    tracing::debug!(owner = key, pod = name, "deleted pod");
                    let note = format!("Deleted pod: {name}");
                    self.recorder.record(&target, "Normal", "SuccessfulDelete", &note);
                    Ok(())
                }
                Err(e) => {
                    // The informer will not see this deletion: stop waiting for it.
                    self.expectations.deletion_observed(key, uid);
                    if matches!(&e, kube::Error::Api(s) if s.code == 404) {
                        return Ok(());
                    }
                    let message = message(&e);
                    let note = format!("Error deleting: {message}");
                    self.recorder.record(&target, "Warning", "FailedDelete", &note);
                    let message = format!("unable to delete pods: {message}");
                    Err(ManageError::Failed { reason: "FailedDelete", message })
                }
            }
        });
        let results = futures::future::join_all(deletes).await;
        results.into_iter().find_map(Result::err).map_or(Ok(()), Err)
    }

    /// The pods selected by the owner and by its siblings (owners in the namespace with the
    /// same controller, as a Deployment's ReplicaSets), which tell how crowded each node is.
    fn related_pods(&self, owner: &K) -> Vec<Arc<Pod>> {
        let meta = owner.meta();
        let namespace = meta.namespace.clone();
        let siblings = match controller_of(meta) {
            None => vec![owner.clone()],
            Some(controller) => self
                .owners
                .owned_by(&controller.uid)
                .iter()
                .filter(|o| {
                    o.meta().namespace == namespace
                        && controller_of(o.meta()).is_some_and(|c| c.uid == controller.uid)
                })
                .map(|o| o.as_ref().clone())
                .collect(),
        };
        let selectors: Vec<LabelSelector> =
            siblings.iter().filter_map(|o| o.selector().ok()).collect();
        let Some(namespace) = namespace.as_deref() else { return Vec::new() };
        let mut pods = self.pods.in_namespace(namespace);
        pods.retain(|p| selectors.iter().any(|s| s.matches(labels_of(p))));
        pods
    }

    /// The owner a pod's controller reference names, if it is one of ours (same kind, same
    /// uid as the cached owner of that name).
    fn resolve(&self, namespace: &str, controller: &OwnerReference) -> Option<String> {
        if controller.kind != K::kind(&()) {
            return None;
        }
        let owner = self.owners.get(&ObjectRef::new(&controller.name).within(namespace))?;
        (owner.meta().uid.as_deref() == Some(controller.uid.as_str())).then(|| key_of(owner.meta()))
    }

    /// The owners in `namespace` whose (non-empty) selector matches `labels`: who might adopt an
    /// orphan with them.
    fn matching_owners(&self, namespace: &str, labels: &BTreeMap<String, String>) -> Vec<Arc<K>> {
        if labels.is_empty() {
            return Vec::new();
        }
        let mut owners = self.owners.in_namespace(namespace);
        owners.retain(|o| o.selector().is_ok_and(|s| !s.is_empty() && s.matches(labels)));
        owners
    }
}

/// The event loop's state: turns changes into queued owner keys and observed expectations,
/// the way upstream's add/update/delete handlers do with old and new objects (the old one is
/// what was seen last, [`SeenPod`]).
struct PodWatch<K: Replicated> {
    ctl: Arc<Controller<K>>,
    pods: PodEvents,
    /// Each owner's uid, so that one deleted and made again under its name starts afresh.
    owner_uids: OwnerUids,
}

impl<K: Replicated> PodWatch<K> {
    fn owner_changed(&mut self, change: Change) {
        let Change::Object { namespace, name } = change else { return };
        let key = format!("{}/{name}", namespace.as_deref().unwrap_or(""));
        let current =
            self.ctl.owners.get(&ObjectRef::new(&name).within(namespace.as_deref().unwrap_or("")));
        if self.owner_uids.changed(&key, current.and_then(|o| o.meta().uid.clone())) {
            self.ctl.expectations.forget(&key);
        }
        self.ctl.queue.add(key);
    }

    fn pod_changed(&mut self, change: Change) {
        self.pods.change(change, &*self.ctl);
    }
}

/// Pod changes as upstream's ReplicaSet handlers read them: a deletion counts by uid (so
/// once however often it is seen), a pod seen going is deleted at once.
impl<K: Replicated> PodHandler for Controller<K> {
    fn added(&self, namespace: &str, name: &str, pod: &SeenPod) {
        if pod.deleting {
            // Seen for the first time already going (e.g. after a restart): not a creation.
            self.gone(namespace, name, pod);
            return;
        }
        if let Some(controller) = &pod.controller {
            if let Some(key) = self.resolve(namespace, controller) {
                self.expectations.creation_observed(&key);
                self.queue.add(key);
            }
            return;
        }
        self.enqueue_matching(namespace, &pod.labels);
    }

    fn updated(&self, namespace: &str, name: &str, old: &SeenPod, pod: &SeenPod) {
        let labels_changed = old.labels != pod.labels;
        if pod.deleting {
            self.gone(namespace, name, pod);
            if labels_changed {
                self.gone(namespace, name, old);
            }
            return;
        }
        let controller_changed = old.controller != pod.controller;
        if controller_changed {
            if let Some(key) = old.controller.as_ref().and_then(|c| self.resolve(namespace, c)) {
                self.queue.add(key);
            }
        }
        if let Some(controller) = &pod.controller {
            let Some(key) = self.resolve(namespace, controller) else { return };
            self.queue.add(key.clone());
            // Just turned ready: it turns available minReadySeconds later, with no event then.
            if !old.ready && pod.ready {
                let owner = self.owners.get(&ObjectRef::new(&controller.name).within(namespace));
                let min_ready = owner.map_or(0, |o| o.min_ready_seconds());
                if min_ready > 0 {
                    let delay = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0) + 1);
                    self.queue.add_after(key, delay);
                }
            }
            return;
        }
        if labels_changed || controller_changed {
            self.enqueue_matching(namespace, &pod.labels);
        }
    }

    fn gone(&self, namespace: &str, _name: &str, pod: &SeenPod) {
        let Some(controller) = &pod.controller else { return };
        if let Some(key) = self.resolve(namespace, controller) {
            self.expectations.deletion_observed(&key, &pod.uid);
            self.queue.add(key);
        }
    }
}

impl<K: Replicated> Controller<K> {
    fn enqueue_matching(&self, namespace: &str, labels: &BTreeMap<String, String>) {
        for owner in self.matching_owners(namespace, labels) {
            self.queue.add(key_of(owner.meta()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::ReplicaSetSpec;
    use k8s_openapi::api::core::v1::{Container, PodSpec, ReplicationControllerSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelectorRequirement, Time};
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn template(pairs: &[(&str, &str)]) -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(labels(pairs)),
                annotations: Some(labels(&[("note", "kept")])),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    image: Some("i".into()),
                    ..Default::default()
                }],
                ..PodSpec::default()
            }),
        }
    }

    fn rc(
        selector: Option<&[(&str, &str)]>,
        template_labels: &[(&str, &str)],
    ) -> ReplicationController {
        ReplicationController {
            spec: Some(ReplicationControllerSpec {
                selector: selector.map(labels),
                template: Some(template(template_labels)),
                ..ReplicationControllerSpec::default()
            }),
            ..ReplicationController::default()
        }
    }

    #[test]
    fn replica_set_selectors_are_label_selectors() {
        let mut rs = ReplicaSet {
            spec: Some(ReplicaSetSpec {
                selector: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                    match_labels: Some(labels(&[("app", "web")])),
                    match_expressions: Some(vec![LabelSelectorRequirement {
                        key: "tier".into(),
                        operator: "NotIn".into(),
                        values: Some(vec!["db".into()]),
                    }]),
                },
                ..ReplicaSetSpec::default()
            }),
            ..ReplicaSet::default()
        };
        let s = rs.selector().unwrap();
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "front")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "db")])));
        assert!(!s.matches(&labels(&[("app", "api")])));
        rs.spec.as_mut().unwrap().selector.match_expressions.as_mut().unwrap()[0].operator =
            "Bogus".into();
        assert!(rs.selector().is_err());
        assert!(ReplicaSet::default().selector().unwrap().is_nothing());
        assert_eq!((rs.replicas(), rs.min_ready_seconds()), (1, 0));
    }

    #[test]
    fn replication_controller_selectors_default_to_template_labels() {
        let explicit =
            rc(Some(&[("app", "web")]), &[("app", "web"), ("v", "2")]).selector().unwrap();
        assert!(explicit.matches(&labels(&[("app", "web")])));
        let defaulted = rc(None, &[("app", "web"), ("v", "2")]).selector().unwrap();
        assert!(!defaulted.matches(&labels(&[("app", "web")])));
        assert!(defaulted.matches(&labels(&[("app", "web"), ("v", "2"), ("x", "y")])));
        let empty = rc(Some(&[]), &[("app", "web")]).selector().unwrap();
        assert!(empty.matches(&labels(&[("app", "web")])));
        assert!(rc(None, &[]).selector().unwrap().is_nothing());
        assert!(ReplicationController::default().selector().unwrap().is_nothing());
    }

    #[test]
    fn zero_counters_are_left_out_of_the_status() {
        let mut rs = ReplicaSet::default();
        rs.set_replica_status(ReplicaStatus { observed_generation: 3, ..ReplicaStatus::default() });
        assert_eq!(
            serde_json::to_value(&rs).unwrap()["status"],
            json!({"replicas": 0, "observedGeneration": 3})
        );
        let full = ReplicaStatus {
            replicas: 3,
            fully_labeled_replicas: 3,
            ready_replicas: 2,
            available_replicas: 1,
            observed_generation: 4,
            conditions: vec![Condition {
                type_: "ReplicaFailure".into(),
                status: "True".into(),
                reason: Some("FailedCreate".into()),
                message: Some("m".into()),
                last_transition_time: Some(Time(Timestamp::from_second(0).unwrap())),
            }],
        };
        let mut rc = ReplicationController::default();
        rc.set_replica_status(full.clone());
        assert_eq!(
            serde_json::to_value(&rc).unwrap()["status"],
            json!({
                "replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 2,
                "availableReplicas": 1, "observedGeneration": 4,
                "conditions": [{"type": "ReplicaFailure", "status": "True",
                    "reason": "FailedCreate", "message": "m",
                    "lastTransitionTime": "1970-01-01T00:00:00Z"}],
            })
        );
        assert_eq!(rc.replica_status(), full);
        rs.set_replica_status(full.clone());
        assert_eq!(rs.replica_status(), full);
    }

    #[test]
    fn slow_start_doubles_each_batch() {
        assert_eq!(slow_start_batches(0), Vec::<usize>::new());
        assert_eq!(slow_start_batches(1), [1]);
        assert_eq!(slow_start_batches(10), [1, 2, 4, 3]);
        assert_eq!(slow_start_batches(15), [1, 2, 4, 8]);
        assert_eq!(slow_start_batches(500).iter().sum::<usize>(), 500);
    }

    #[test]
    fn pods_are_made_from_the_template() {
        let owner = OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "web".into(),
            uid: "u1".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let t = template(&[("app", "web")]);
        let pod = pod_from_template(Some(&t), "ns", "web", owner.clone());
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(pod.metadata.labels, Some(labels(&[("app", "web")])));
        assert_eq!(pod.metadata.annotations, Some(labels(&[("note", "kept")])));
        assert_eq!(pod.metadata.owner_references, Some(vec![owner]));
        assert_eq!(pod.spec, t.spec);
        assert!(pod.metadata.name.is_none());
    }

    #[test]
    fn deletions_count_once_and_only_for_awaited_pods() {
        let e = TrackedExpectations::default();
        e.expect_deletions("ns/rs", ["a".to_string(), "b".to_string()].into());
        e.deletion_observed("ns/rs", "someone-elses");
        e.deletion_observed("ns/rs", "a");
        e.deletion_observed("ns/rs", "a");
        assert!(!e.satisfied("ns/rs"));
        e.deletion_observed("ns/rs", "b");
        assert!(e.satisfied("ns/rs"));
        e.expect_creations("ns/rs", 1);
        assert!(!e.satisfied("ns/rs"));
        e.creation_observed("ns/rs");
        assert!(e.satisfied("ns/rs"));
        e.expect_creations("ns/rs", 2);
        e.forget("ns/rs");
        assert!(e.satisfied("ns/rs"));
    }
}
