//! The DaemonSet controller, as kube-controller-manager's `daemonset-controller`: one pod of a
//! DaemonSet on every node that should run it, rolled to a new template node by node, with the
//! template's history kept in ControllerRevisions so that `kubectl rollout status|history|undo
//! ds/<name>` work.
//!
//! Start at [`run`]. Then:
//!
//! - The event loop (`Watch`) turns DaemonSet, pod, node and ControllerRevision changes into
//!   DaemonSet keys (`namespace/name`) on a work queue, and tells the [expectations] about pods
//!   it saw appear and go. Node changes count only when a node's name, labels or taints change
//!   (not its heartbeats).
//! - Each sync (`Controller::sync`) makes sure the current template has its revision
//!   ([`controller_history`]), claims the DaemonSet's pods, decides per node where pods belong
//!   ([`nodes`]: node name, selector, required node affinity, taints against tolerations),
//!   creates and deletes pods ([`plan::node_work`]), takes the next rolling update step
//!   ([`plan::rolling_update`]), trims the history, and writes the status ([`plan::status`]).
//!
//! Daemon pods are named `<daemonset>-<random>`, labelled with the revision's
//! `controller-revision-hash` and the `pod-template-generation`, get the tolerations every
//! daemon pod has, and a required node affinity `metadata.name In [<node>]` that the scheduler
//! honours. Failed pods are deleted (and made anew) with a per-node back-off.
//!
//! [expectations]: rkube_runtime::expectations
//! [`controller_history`]: crate::controller_history

pub mod nodes;
pub mod plan;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_apis::selectors::{LabelSelector, SelectorError};
use rkube_runtime::store::Store;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::api_errors::message;
use crate::controller_history::{self, REVISION_HASH_LABEL};
use crate::controller_ref::{self, ClaimError};
use crate::pod_control::{self, CreateError};
use crate::pod_events::{Owned, PodEvents, PodOwners};
use crate::status_write::write_status;
use nodes::Placement;
use plan::{Counts, NodePods, TEMPLATE_GENERATION_LABEL};
use rkube_runtime::backoff::Backoff;
use rkube_runtime::events::{object_reference, Recorder};
use rkube_runtime::expectations::Expectations;
use rkube_runtime::expectations::OwnerUids;
use rkube_runtime::informer::{self, Change};
use rkube_runtime::workqueue::WorkQueue;

pub use plan::{is_available, is_ready};

/// The component on the events this controller records.
const COMPONENT: &str = "daemonset-controller";
/// Most pods created or deleted in one sync (upstream's `BurstReplicas`).
const BURST_REPLICAS: usize = 250;
/// The longest back-off of a DaemonSet whose sync keeps failing (client-go's default).
const MAX_BACKOFF: Duration = Duration::from_secs(1000);
/// The longest one sync may take before it is retried.
const SYNC_TIMEOUT: Duration = Duration::from_secs(120);
/// Back-off before deleting a node's failed daemon pod again: from 1 s to 15 min.
const FAILED_POD_BACKOFF: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(15 * 60));

/// Runs the controller with `workers` concurrent syncs until the task is aborted. `nodes` and
/// `pods` are shared, synced informers' stores with their change channels; the DaemonSet and
/// ControllerRevision informers are this controller's own.
pub async fn run(
    client: Client,
    workers: usize,
    nodes: Store<Node>,
    mut node_changes: mpsc::UnboundedReceiver<Change>,
    pods: Store<Pod>,
    mut pod_changes: mpsc::UnboundedReceiver<Change>,
) {
    let (tx, mut ds_changes) = mpsc::unbounded_channel();
    let (daemon_sets, _ds_watch) = informer::start(
        Api::<DaemonSet>::all(client.clone()),
        watcher::Config::default(),
        vec![tx],
    );
    let (tx, mut revision_changes) = mpsc::unbounded_channel();
    let (revisions, _revision_watch) = informer::start(
        Api::<ControllerRevision>::all(client.clone()),
        watcher::Config::default(),
        vec![tx],
    );
    if daemon_sets.wait_until_ready().await.is_err()
        || revisions.wait_until_ready().await.is_err()
        || nodes.wait_until_ready().await.is_err()
        || pods.wait_until_ready().await.is_err()
    {
        return;
    }
    let ctl = Arc::new(Controller {
        recorder: Recorder::new(client.clone(), COMPONENT),
        client,
        daemon_sets,
        nodes,
        pods,
        revisions,
        queue: WorkQueue::new(MAX_BACKOFF),
        expectations: Expectations::new(),
        failed_pods: Backoff::new(FAILED_POD_BACKOFF.0, FAILED_POD_BACKOFF.1),
    });
    let mut tasks = JoinSet::new();
    for _ in 0..workers.max(1) {
        tasks.spawn(work(ctl.clone()));
    }
    tracing::info!(workers, "{COMPONENT} started");
    let mut watch = Watch {
        ctl: ctl.clone(),
        pods: PodEvents::new(ctl.pods.clone()),
        nodes: HashMap::new(),
        revisions: controller_history::RevisionEvents::default(),
        ds_uids: OwnerUids::default(),
    };
    loop {
        tokio::select! {
            Some(change) = ds_changes.recv() => watch.ds_changed(change),
            Some(change) = pod_changes.recv() => watch.pod_changed(change),
            Some(change) = node_changes.recv() => watch.node_changed(change),
            Some(change) = revision_changes.recv() => watch.revision_changed(change),
            else => break,
        }
    }
    ctl.queue.shut_down();
}

struct Controller {
    client: Client,
    recorder: Recorder,
    daemon_sets: Store<DaemonSet>,
    nodes: Store<Node>,
    pods: Store<Pod>,
    revisions: Store<ControllerRevision>,
    queue: WorkQueue<String>,
    expectations: Expectations,
    failed_pods: Backoff,
}

/// Why a sync failed (it is retried with a back-off).
#[derive(Debug, thiserror::Error)]
enum SyncError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("claiming: {0}")]
    Claim(#[from] ClaimError),
    #[error("{0}")]
    Pods(String),
}

/// One worker: syncs keys from the queue until it shuts down.
async fn work(ctl: Arc<Controller>) {
    let sync = |key: String| {
        let ctl = ctl.clone();
        async move { ctl.sync(&key).await.map(|()| None) }
    };
    ctl.queue.work(COMPONENT, SYNC_TIMEOUT, sync, |_: &SyncError| false).await
}

fn key_of(meta: &ObjectMeta) -> String {
    format!("{}/{}", meta.namespace.as_deref().unwrap_or(""), meta.name.as_deref().unwrap_or(""))
}

fn labels_of(meta: &ObjectMeta) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    meta.labels.as_ref().unwrap_or(&EMPTY)
}

fn selector(ds: &DaemonSet) -> Result<LabelSelector, SelectorError> {
    let Some(spec) = ds.spec.as_ref() else { return Ok(LabelSelector::nothing()) };
    let value = serde_json::to_value(&spec.selector).unwrap_or(serde_json::Value::Null);
    LabelSelector::from_api(&value)
}

/// The pod a DaemonSet runs on `node`: the template with the revision's hash and the template
/// generation as labels, the daemon tolerations, and pinned to the node.
pub fn daemon_pod(ds: &DaemonSet, node: &str, hash: &str) -> Pod {
    let template = ds.spec.as_ref().map(|s| s.template.clone()).unwrap_or_default();
    let meta = template.metadata.unwrap_or_default();
    let mut labels = meta.labels.unwrap_or_default();
    if let Some(generation) = plan::template_generation(ds) {
        labels.insert(TEMPLATE_GENERATION_LABEL.into(), generation.to_string());
    }
    if !hash.is_empty() {
        labels.insert(REVISION_HASH_LABEL.into(), hash.into());
    }
    let mut spec = template.spec.unwrap_or_default();
    spec.tolerations = Some(nodes::daemon_tolerations(&spec));
    spec.affinity = Some(nodes::pin_to_node(spec.affinity.take(), node));
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-", ds.metadata.name.as_deref().unwrap_or(""))),
            namespace: ds.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![controller_ref::owner_reference(ds)]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// The status to write: the counts (zeros left out where the API omits them), the observed
/// generation, and the collision count when there is one.
fn next_status(
    current: Option<&DaemonSetStatus>,
    counts: Counts,
    observed_generation: Option<i64>,
    collision_count: i32,
) -> DaemonSetStatus {
    let some = |n: i32| (n != 0).then_some(n);
    let previous_collisions = current.and_then(|s| s.collision_count);
    DaemonSetStatus {
        current_number_scheduled: counts.current,
        desired_number_scheduled: counts.desired,
        number_misscheduled: counts.misscheduled,
        number_ready: counts.ready,
        updated_number_scheduled: some(counts.updated),
        number_available: some(counts.available),
        number_unavailable: some(counts.unavailable),
        observed_generation: observed_generation.filter(|g| *g != 0),
        collision_count: previous_collisions
            .or((collision_count != 0).then_some(collision_count))
            .map(|c| c.max(collision_count)),
        conditions: current.and_then(|s| s.conditions.clone()),
    }
}

impl Controller {
    /// Brings the DaemonSet `key` in line: its revisions, its pods on each node, one rolling
    /// update step, its history and its status.
    async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some((namespace, name)) = key.split_once('/') else { return Ok(()) };
        let Some(ds) = self.daemon_sets.get(&ObjectRef::new(name).within(namespace)) else {
            tracing::debug!(daemonset = key, "gone");
            self.expectations.delete(key);
            return Ok(());
        };
        let selector = match selector(&ds) {
            Ok(selector) => selector,
            Err(e) => {
                // Retrying cannot help; a change to the DaemonSet queues it again.
                tracing::warn!(daemonset = key, error = %e, "invalid selector");
                return Ok(());
            }
        };
        if selector.is_empty() {
            let note = "This daemon set is selecting all pods. A non-empty selector is required.";
            self.recorder.record(&object_reference(&*ds), "Warning", "SelectingAll", note);
            return Ok(());
        }
        // Its pods and revisions may be going already (garbage collection), so a status would
        // be wrong: leave it.
        if ds.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let ds_api: Api<DaemonSet> = Api::namespaced(self.client.clone(), namespace);
        let revision_api: Api<ControllerRevision> = Api::namespaced(self.client.clone(), namespace);
        let pod_api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let template = ds.spec.as_ref().map(|s| s.template.clone()).unwrap_or_default();

        let owned = controller_history::claim(
            &ds_api,
            ds.as_ref(),
            &self.revisions,
            &revision_api,
            &selector,
        )
        .await?;
        let collisions = ds.status.as_ref().and_then(|s| s.collision_count).unwrap_or(0);
        let revisions = controller_history::sync_current(
            &revision_api,
            ds.as_ref(),
            &template,
            owned,
            collisions,
        )
        .await?;
        let hash = controller_history::revision_hash(&revisions.current);

        // Read before listing pods: pods seen after this point are in the list.
        let needs_sync = self.expectations.satisfied(key);
        // Every pod of the namespace, not only the owned ones: orphans may be adopted.
        let candidates = self.pods.in_namespace(namespace);
        let claimed = controller_ref::claim(&ds_api, ds.as_ref(), &pod_api, candidates, |p| {
            selector.matches(labels_of(&p.metadata))
        })
        .await?;
        let placements: BTreeMap<String, Placement> = self
            .nodes
            .state()
            .iter()
            .filter_map(|n| Some((n.metadata.name.clone()?, nodes::placement(&template, n))))
            .collect();
        let node_pods = group_by_node(&claimed, &placements);

        let mut result = Ok(());
        if needs_sync {
            result = self.manage(&ds, key, &node_pods, &placements, &hash, &pod_api).await;
            let rolling = ds
                .spec
                .as_ref()
                .and_then(|s| s.update_strategy.as_ref())
                .and_then(|s| s.type_.as_deref())
                .is_none_or(|t| t == "RollingUpdate");
            if result.is_ok() && rolling && self.expectations.satisfied(key) {
                let step =
                    plan::rolling_update(&ds, &node_pods, &placements, &hash, Timestamp::now());
                if !step.delete.is_empty() || !step.create_on.is_empty() {
                    tracing::info!(
                        daemonset = key,
                        delete = step.delete.len(),
                        create = step.create_on.len(),
                        "rolling update"
                    );
                }
                result =
                    self.sync_nodes(&ds, key, step.delete, step.create_on, &hash, &pod_api).await;
            }
            if result.is_ok() {
                result = self.trim_history(&ds, &revisions, &claimed, &revision_api).await;
            }
        }

        let counts = plan::status(&ds, &node_pods, &placements, &hash, Timestamp::now());
        let current = ds.status.as_ref();
        let observed = if needs_sync {
            ds.metadata.generation
        } else {
            current.and_then(|s| s.observed_generation)
        };
        let next = next_status(current, counts, observed, revisions.collision_count);
        if current != Some(&next) {
            write_status(&ds_api, &ds, |d| d.status = Some(next.clone())).await?;
        }
        let min_ready = ds.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0);
        if min_ready > 0 && counts.ready != counts.available {
            let delay = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0));
            self.queue.add_after(key.to_string(), delay);
        }
        result
    }

    /// Creates missing pods and deletes extra, misplaced and finished ones, node by node.
    async fn manage(
        &self,
        ds: &DaemonSet,
        key: &str,
        node_pods: &NodePods,
        placements: &BTreeMap<String, Placement>,
        hash: &str,
        pod_api: &Api<Pod>,
    ) -> Result<(), SyncError> {
        let allows_surge = plan::allows_surge(ds);
        let min_ready = ds.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0);
        let now = Timestamp::now();
        let target = object_reference(ds);
        let (mut create_on, mut delete) = (Vec::new(), Vec::new());
        for (node, placement) in placements {
            let pods = node_pods.get(node).filter(|p| !p.is_empty()).map(Vec::as_slice);
            let work = plan::node_work(*placement, pods, hash, allows_surge, min_ready, now);
            if work.create {
                create_on.push(node.clone());
            }
            delete.extend(work.delete);
            for pod in work.succeeded {
                let note = format!(
                    "Found succeeded daemon pod {}/{} on node {node}, will try to delete it",
                    pod.metadata.namespace.as_deref().unwrap_or(""),
                    pod.metadata.name.as_deref().unwrap_or("")
                );
                self.recorder.record(&target, "Normal", "SucceededDaemonPod", &note);
                delete.push(pod);
            }
            for pod in work.failed {
                // Kubelets that reject a pod make it fail at once: do not fight them hot.
                let backoff_key = format!(
                    "{}/{}/{node}",
                    ds.metadata.uid.as_deref().unwrap_or(""),
                    ds.status.as_ref().and_then(|s| s.observed_generation).unwrap_or(0)
                );
                if let Some(delay) =
                    self.failed_pods.in_backoff_since_update(&backoff_key, Instant::now())
                {
                    tracing::debug!(daemonset = key, node, ?delay, "failed pod: backing off");
                    self.queue.add_after(key.to_string(), delay);
                    continue;
                }
                self.failed_pods.next(&backoff_key, Instant::now());
                let note = format!(
                    "Found failed daemon pod {}/{} on node {node}, will try to kill it",
                    pod.metadata.namespace.as_deref().unwrap_or(""),
                    pod.metadata.name.as_deref().unwrap_or("")
                );
                self.recorder.record(&target, "Warning", "FailedDaemonPod", &note);
                delete.push(pod);
            }
        }
        // Unscheduled pods for nodes that are gone would never run nor be collected.
        for (node, pods) in node_pods {
            if !placements.contains_key(node) {
                delete.extend(
                    pods.iter()
                        .filter(|p| unscheduled(p) && p.metadata.deletion_timestamp.is_none())
                        .cloned(),
                );
            }
        }
        self.sync_nodes(ds, key, delete, create_on, hash, pod_api).await
    }

    /// Deletes `delete` and creates a pod on each of `create_on` (at most
    /// [`BURST_REPLICAS`] each), creates in slow-start batches, with expectations set first.
    async fn sync_nodes(
        &self,
        ds: &DaemonSet,
        key: &str,
        mut delete: Vec<Arc<Pod>>,
        mut create_on: Vec<String>,
        hash: &str,
        pod_api: &Api<Pod>,
    ) -> Result<(), SyncError> {
        create_on.truncate(BURST_REPLICAS);
        delete.truncate(BURST_REPLICAS);
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.expectations.expect(key, count(create_on.len()), count(delete.len()));
        if create_on.is_empty() && delete.is_empty() {
            return Ok(());
        }
        let target = object_reference(ds);
        let mut errors = Vec::new();
        let mut position = 0;
        let mut batch = 1;
        while position < create_on.len() {
            let end = (position + batch).min(create_on.len());
            let creates = create_on[position..end]
                .iter()
                .map(|node| self.create_pod(ds, &target, node, hash, pod_api));
            let failures: Vec<String> = futures::future::join_all(creates)
                .await
                .into_iter()
                .filter_map(Result::err)
                .collect();
            for _ in &failures {
                self.expectations.creation_observed(key);
            }
            let failed = !failures.is_empty();
            errors.extend(failures.into_iter().filter(|f| !f.is_empty()));
            position = end;
            if failed {
                // The rest would most likely fail alike: not attempted, not expected.
                for _ in position..create_on.len() {
                    self.expectations.creation_observed(key);
                }
                break;
            }
            batch *= 2;
        }
        let deletes = delete.iter().map(|pod| async {
            let name = pod.metadata.name.as_deref().unwrap_or("");
            match pod_api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {
                    tracing::debug!(daemonset = key, pod = name, "deleted pod");
                    let note = format!("Deleted pod: {name}");
                    self.recorder.record(&target, "Normal", "SuccessfulDelete", &note);
                    Ok(())
                }
                Err(e) => {
                    // The informer will not see this deletion: stop waiting for it.
                    self.expectations.deletion_observed(key);
                    if matches!(&e, kube::Error::Api(s) if s.code == 404) {
                        return Ok(());
                    }
                    let note = format!("Error deleting: {}", message(&e));
                    self.recorder.record(&target, "Warning", "FailedDelete", &note);
                    Err(format!("deleting pod {name}: {}", message(&e)))
                }
            }
        });
        errors.extend(futures::future::join_all(deletes).await.into_iter().filter_map(Result::err));
        if errors.is_empty() {
            Ok(())
        } else {
            Err(SyncError::Pods(errors.join("; ")))
        }
    }

    /// Creates the daemon pod for `node`. An error is its message, or empty when the namespace
    /// is being deleted (nothing to report or retry).
    async fn create_pod(
        &self,
        ds: &DaemonSet,
        target: &ObjectReference,
        node: &str,
        hash: &str,
        pod_api: &Api<Pod>,
    ) -> Result<(), String> {
        let pod = daemon_pod(ds, node, hash);
        match pod_control::create(pod_api, &self.recorder, target, &pod).await {
            Ok(_) => Ok(()),
            Err(CreateError::NamespaceTerminating(_)) => Err(String::new()),
            Err(CreateError::Failed(m)) => Err(format!("creating a pod for node {node}: {m}")),
        }
    }

    /// Deletes the revisions beyond `revisionHistoryLimit` that neither the current template
    /// nor any pod uses.
    async fn trim_history(
        &self,
        ds: &DaemonSet,
        revisions: &controller_history::Revisions,
        pods: &[Arc<Pod>],
        api: &Api<ControllerRevision>,
    ) -> Result<(), SyncError> {
        let limit = ds
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(controller_history::DEFAULT_HISTORY_LIMIT);
        let live_hashes: Vec<&str> = pods
            .iter()
            .filter_map(|p| labels_of(&p.metadata).get(REVISION_HASH_LABEL))
            .map(String::as_str)
            .collect();
        let current = revisions.current.metadata.name.clone();
        let stale = controller_history::stale(
            &revisions.all,
            |r| {
                r.metadata.name == current
                    || live_hashes.contains(&controller_history::revision_hash(r).as_str())
            },
            limit,
        );
        if !stale.is_empty() {
            tracing::debug!(daemonset = ?ds.metadata.name, count = stale.len(), "trimming history");
        }
        controller_history::delete(api, &stale).await?;
        Ok(())
    }

    /// The DaemonSet a controller reference names, if it is one of ours (same uid as the
    /// cached DaemonSet of that name).
    fn resolve(&self, namespace: &str, controller: &OwnerReference) -> Option<String> {
        if controller.kind != "DaemonSet" {
            return None;
        }
        let ds = self.daemon_sets.get(&ObjectRef::new(&controller.name).within(namespace))?;
        (ds.metadata.uid.as_deref() == Some(controller.uid.as_str())).then(|| key_of(&ds.metadata))
    }

    /// The DaemonSets in `namespace` whose selector matches `labels` (who may adopt an orphan).
    fn matching(&self, namespace: &str, labels: &BTreeMap<String, String>) -> Vec<String> {
        if labels.is_empty() {
            return Vec::new();
        }
        self.daemon_sets
            .in_namespace(namespace)
            .iter()
            .filter(|ds| selector(ds).is_ok_and(|s| !s.is_empty() && s.matches(labels)))
            .map(|ds| key_of(&ds.metadata))
            .collect()
    }
}

fn unscheduled(pod: &Pod) -> bool {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_none_or(str::is_empty)
}

/// The DaemonSet's pods by the node they are for, with an (empty) entry for every node that
/// should run one. Finished pods already being deleted are left out: nothing more to do with
/// them.
fn group_by_node(pods: &[Arc<Pod>], placements: &BTreeMap<String, Placement>) -> NodePods {
    let mut grouped: NodePods = placements
        .iter()
        .filter(|(_, p)| p.should_run)
        .map(|(node, _)| (node.clone(), Vec::new()))
        .collect();
    for pod in pods {
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded" | "Failed"))
            && pod.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        match nodes::target_node(pod) {
            Some(node) => grouped.entry(node).or_default().push(pod.clone()),
            None => tracing::debug!(pod = ?pod.metadata.name, "daemon pod without a target node"),
        }
    }
    grouped
}

impl PodOwners for Controller {
    fn expectations(&self) -> &Expectations {
        &self.expectations
    }

    fn resolve(&self, namespace: &str, controller: &OwnerReference) -> Option<String> {
        Controller::resolve(self, namespace, controller)
    }

    fn enqueue(&self, key: String) {
        self.queue.add(key);
    }

    fn enqueue_matching(&self, namespace: &str, labels: &BTreeMap<String, String>) {
        for key in self.matching(namespace, labels) {
            self.queue.add(key);
        }
    }
}

/// What decides where daemon pods belong: a node's labels and taints.
#[derive(Debug, Clone, PartialEq)]
struct SeenNode {
    labels: BTreeMap<String, String>,
    taints: Vec<Taint>,
}

impl SeenNode {
    fn of(node: &Node) -> SeenNode {
        SeenNode {
            labels: labels_of(&node.metadata).clone(),
            taints: node.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default(),
        }
    }
}

/// The event loop's state: turns changes into queued DaemonSet keys and observed
/// expectations, as upstream's event handlers do with old and new objects.
struct Watch {
    ctl: Arc<Controller>,
    pods: PodEvents,
    nodes: HashMap<String, SeenNode>,
    revisions: controller_history::RevisionEvents,
    /// Each DaemonSet's uid, so that one deleted and made again under its name starts afresh.
    ds_uids: OwnerUids,
}

impl Watch {
    fn ds_changed(&mut self, change: Change) {
        let Change::Object { namespace, name } = change else { return };
        let namespace = namespace.unwrap_or_default();
        let key = format!("{namespace}/{name}");
        let current = self.ctl.daemon_sets.get(&ObjectRef::new(&name).within(&namespace));
        if self.ds_uids.changed(&key, current.and_then(|ds| ds.metadata.uid.clone())) {
            self.ctl.expectations.delete(&key);
        }
        self.ctl.queue.add(key);
    }

    fn pod_changed(&mut self, change: Change) {
        self.pods.change(change, &Owned(&*self.ctl));
    }

    /// A node appeared, went, or changed its labels or taints: every DaemonSet looks again.
    fn node_changed(&mut self, change: Change) {
        let Change::Object { name, .. } = change else { return };
        let current = self.ctl.nodes.get(&ObjectRef::new(&name)).map(|n| SeenNode::of(&n));
        let changed = match &current {
            Some(now) => self.nodes.insert(name.clone(), now.clone()).as_ref() != Some(now),
            None => self.nodes.remove(&name).is_some(),
        };
        if changed {
            for ds in self.ctl.daemon_sets.state() {
                self.ctl.queue.add(key_of(&ds.metadata));
            }
        }
    }

    fn revision_changed(&mut self, change: Change) {
        self.revisions.change(&self.ctl.revisions, change, &*self.ctl);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ds() -> DaemonSet {
        serde_json::from_value(json!({
            "metadata": {"name": "logs", "namespace": "ns", "uid": "u1", "generation": 4},
            "spec": {
                "selector": {"matchLabels": {"app": "logs"}},
                "template": {
                    "metadata": {"labels": {"app": "logs"}, "annotations": {"a": "b"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}],
                        "tolerations": [{"key": "mine", "operator": "Exists"}]}
                }
            }
        }))
        .unwrap()
    }

    #[test]
    fn daemon_pods_are_labelled_tolerant_and_pinned() {
        let pod = daemon_pod(&ds(), "n1", "abc");
        let value = serde_json::to_value(&pod).unwrap();
        assert_eq!(value["metadata"]["generateName"], "logs-");
        assert_eq!(value["metadata"]["namespace"], "ns");
        assert_eq!(
            value["metadata"]["labels"],
            json!({"app": "logs", "controller-revision-hash": "abc", "pod-template-generation": "4"})
        );
        assert_eq!(value["metadata"]["annotations"], json!({"a": "b"}));
        assert_eq!(value["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
        assert_eq!(value["metadata"]["ownerReferences"][0]["controller"], true);
        let tolerations = value["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(tolerations[0]["key"], "mine");
        assert_eq!(tolerations.len(), 7);
        assert_eq!(
            value["spec"]["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
                ["matchFields"][0]["values"],
            json!(["n1"])
        );
        assert_eq!(nodes::target_node(&pod).as_deref(), Some("n1"));
    }

    #[test]
    fn status_leaves_out_zeros_the_api_omits() {
        let counts = Counts {
            desired: 3,
            current: 3,
            ready: 3,
            available: 3,
            updated: 3,
            ..Counts::default()
        };
        let status = next_status(None, counts, Some(4), 0);
        assert_eq!(
            serde_json::to_value(&status).unwrap(),
            json!({"currentNumberScheduled": 3, "desiredNumberScheduled": 3,
                "numberMisscheduled": 0, "numberReady": 3, "updatedNumberScheduled": 3,
                "numberAvailable": 3, "observedGeneration": 4})
        );
        let status = next_status(Some(&status), Counts::default(), Some(4), 2);
        assert_eq!(
            serde_json::to_value(&status).unwrap(),
            json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0,
                "numberMisscheduled": 0, "numberReady": 0, "observedGeneration": 4,
                "collisionCount": 2})
        );
    }

    #[test]
    fn pods_are_grouped_by_target_node() {
        let placements: BTreeMap<String, Placement> = [
            ("a".to_string(), Placement { should_run: true, should_continue: true }),
            ("b".to_string(), Placement { should_run: false, should_continue: false }),
        ]
        .into();
        let on = |node: &str, phase: &str, deleting: bool| {
            let mut pod = daemon_pod(&ds(), node, "h");
            pod.status = Some(serde_json::from_value(json!({"phase": phase})).unwrap());
            if deleting {
                pod.metadata.deletion_timestamp =
                    Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::now()));
            }
            Arc::new(pod)
        };
        let grouped = group_by_node(
            &[on("c", "Running", false), on("a", "Failed", true), on("a", "Running", true)],
            &placements,
        );
        assert_eq!(grouped.keys().collect::<Vec<_>>(), ["a", "c"]);
        assert_eq!(grouped["a"].len(), 1, "finished and going: left out");
        assert_eq!(grouped["c"].len(), 1);
    }
}
