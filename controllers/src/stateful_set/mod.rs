//! The StatefulSet controller, as kube-controller-manager's `statefulset-controller`: stably
//! named pods `<set>-<ordinal>` with their own claims, made, removed and updated in order (or
//! all at once), with the template's history kept in ControllerRevisions so that `kubectl
//! rollout status|history|undo sts/<name>` work.
//!
//! Start at [`run`]. Then:
//!
//! - The event loop (`Watch`) turns StatefulSet, pod and ControllerRevision changes into set
//!   keys (`namespace/name`) on a work queue, and tells the [expectations] about pods it saw
//!   appear and go.
//! - Each sync (`Controller::sync`) claims the set's revisions and pods (a pod is the set's
//!   when its selector matches and its name is `<set>-<number>`), makes sure the current
//!   template has its revision (the update revision; [`controller_history`]), describes the
//!   pods to the planner ([`plan::plan`], where the ordering lives), carries out its steps
//!   (claims before pods: [`pods`]), trims the history, and writes the status.
//!
//! Pods below the rolling update's partition are made from the current revision's template
//! (`status.currentRevision`), the others from the update revision's; once every pod is of
//! the update revision and ready, it becomes the current one.
//!
//! [expectations]: rkube_runtime::expectations
//! [`controller_history`]: crate::controller_history

pub mod plan;
pub mod pods;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_apis::selectors::{LabelSelector, SelectorError};
use rkube_runtime::store::Store;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::api_errors::message;
use crate::controller_history;
use crate::controller_ref::{self, ClaimError};
use crate::daemon_set::{is_available, is_ready};
use crate::pod_events::{Owned, PodEvents, PodOwners};
use crate::status_write::write_status;
use plan::{Finished, PodView, Revision, Step, Why};
use rkube_runtime::events::{object_reference, Recorder};
use rkube_runtime::expectations::Expectations;
use rkube_runtime::expectations::OwnerUids;
use rkube_runtime::informer::{self, Change};
use rkube_runtime::workqueue::WorkQueue;

/// The component on the events this controller records.
const COMPONENT: &str = "statefulset-controller";
/// The longest back-off of a set whose sync keeps failing (client-go's default).
const MAX_BACKOFF: Duration = Duration::from_secs(1000);
/// The longest one sync may take before it is retried.
const SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs the controller with `workers` concurrent syncs until the task is aborted. `pods` is a
/// shared, synced Pod informer's store and `pod_changes` its change channel; the StatefulSet,
/// ControllerRevision and PersistentVolumeClaim informers are this controller's own.
pub async fn run(
    client: Client,
    workers: usize,
    pods: Store<Pod>,
    mut pod_changes: mpsc::UnboundedReceiver<Change>,
) {
    let (tx, mut set_changes) = mpsc::unbounded_channel();
    let (sets, _set_watch) = informer::start(
        Api::<StatefulSet>::all(client.clone()),
        watcher::Config::default(),
        vec![tx],
    );
    let (tx, mut revision_changes) = mpsc::unbounded_channel();
    let (revisions, _revision_watch) = informer::start(
        Api::<ControllerRevision>::all(client.clone()),
        watcher::Config::default(),
        vec![tx],
    );
    // Claims are only read (to tell whether they exist and whom they belong to).
    let (claims, _claim_watch) = informer::start(
        Api::<PersistentVolumeClaim>::all(client.clone()),
        watcher::Config::default(),
        Vec::new(),
    );
    if sets.wait_until_ready().await.is_err()
        || revisions.wait_until_ready().await.is_err()
        || claims.wait_until_ready().await.is_err()
        || pods.wait_until_ready().await.is_err()
    {
        return;
    }
    let ctl = Arc::new(Controller {
        recorder: Recorder::new(client.clone(), COMPONENT),
        client,
        sets,
        pods,
        revisions,
        claims,
        queue: WorkQueue::new(MAX_BACKOFF),
        expectations: Expectations::new(),
    });
    let mut tasks = JoinSet::new();
    for _ in 0..workers.max(1) {
        tasks.spawn(work(ctl.clone()));
    }
    tracing::info!(workers, "{COMPONENT} started");
    let mut watch = Watch {
        ctl: ctl.clone(),
        pods: PodEvents::new(ctl.pods.clone()).with_ready(is_ready),
        revisions: controller_history::RevisionEvents::default(),
        set_uids: OwnerUids::default(),
    };
    loop {
        tokio::select! {
            Some(change) = set_changes.recv() => watch.set_changed(change),
            Some(change) = pod_changes.recv() => watch.pod_changed(change),
            Some(change) = revision_changes.recv() => watch.revision_changed(change),
            else => break,
        }
    }
    ctl.queue.shut_down();
}

struct Controller {
    client: Client,
    recorder: Recorder,
    sets: Store<StatefulSet>,
    pods: Store<Pod>,
    revisions: Store<ControllerRevision>,
    claims: Store<PersistentVolumeClaim>,
    queue: WorkQueue<String>,
    expectations: Expectations,
}

/// Why a sync failed (it is retried with a back-off).
#[derive(Debug, thiserror::Error)]
enum SyncError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("claiming: {0}")]
    Claim(#[from] ClaimError),
    #[error("{0}")]
    Step(String),
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

fn selector(set: &StatefulSet) -> Result<LabelSelector, SelectorError> {
    let Some(spec) = set.spec.as_ref() else { return Ok(LabelSelector::nothing()) };
    let value = serde_json::to_value(&spec.selector).unwrap_or(serde_json::Value::Null);
    LabelSelector::from_api(&value)
}

fn is_code(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

/// The planner's policy for `set`.
pub fn policy(set: &StatefulSet) -> plan::Policy {
    let spec = set.spec.as_ref();
    let strategy = spec.and_then(|s| s.update_strategy.as_ref());
    let rolling = strategy.and_then(|s| s.rolling_update.as_ref());
    let replicas = pods::replicas(set);
    let max_unavailable = rolling.and_then(|r| r.max_unavailable.as_ref()).map(|v| match v {
        IntOrString::Int(n) => *n,
        IntOrString::String(s) => s
            .strip_suffix('%')
            .and_then(|p| p.parse::<i64>().ok())
            .map_or(1, |p| (p * i64::from(replicas) / 100).clamp(0, i64::from(i32::MAX)) as i32),
    });
    plan::Policy {
        start: pods::start_ordinal(set),
        replicas,
        ordered: spec.and_then(|s| s.pod_management_policy.as_deref()) != Some("Parallel"),
        on_delete: strategy.and_then(|s| s.type_.as_deref()) == Some("OnDelete"),
        partition: rolling.and_then(|r| r.partition).unwrap_or(0),
        max_unavailable: max_unavailable.map(|m| m.max(1)),
        deleting: set.metadata.deletion_timestamp.is_some(),
        has_claims: spec
            .and_then(|s| s.volume_claim_templates.as_ref())
            .is_some_and(|t| !t.is_empty()),
    }
}

/// The status to write (zeros left out where the API omits them); when every pod is of the
/// update revision and ready, the update revision becomes the current one (upstream's
/// `completeRollingUpdate`).
fn next_status(
    set: &StatefulSet,
    counts: plan::Counts,
    observed_generation: Option<i64>,
    current_revision: &str,
    update_revision: &str,
    collision_count: i32,
) -> StatefulSetStatus {
    let some = |n: i32| (n != 0).then_some(n);
    let rolling = !policy(set).on_delete;
    let mut current = (counts.current, current_revision.to_string());
    if rolling && counts.updated == counts.replicas && counts.ready == counts.replicas {
        current = (counts.updated, update_revision.to_string());
    }
    StatefulSetStatus {
        replicas: counts.replicas,
        ready_replicas: some(counts.ready),
        available_replicas: Some(counts.available),
        current_replicas: some(current.0),
        updated_replicas: some(counts.updated),
        current_revision: Some(current.1).filter(|r| !r.is_empty()),
        update_revision: Some(update_revision.to_string()).filter(|r| !r.is_empty()),
        observed_generation: observed_generation.filter(|g| *g != 0),
        collision_count: Some(collision_count),
        conditions: set.status.as_ref().and_then(|s| s.conditions.clone()),
    }
}

impl Controller {
    /// Brings the set `key` in line: its revisions, the next steps for its pods, its history
    /// and its status.
    async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some((namespace, name)) = key.split_once('/') else { return Ok(()) };
        let Some(set) = self.sets.get(&ObjectRef::new(name).within(namespace)) else {
            tracing::debug!(statefulset = key, "gone");
            self.expectations.delete(key);
            return Ok(());
        };
        let selector = match selector(&set) {
            Ok(selector) => selector,
            Err(e) => {
                // Retrying cannot help; a change to the set queues it again.
                tracing::warn!(statefulset = key, error = %e, "invalid selector");
                return Ok(());
            }
        };
        let set_api: Api<StatefulSet> = Api::namespaced(self.client.clone(), namespace);
        let revision_api: Api<ControllerRevision> = Api::namespaced(self.client.clone(), namespace);
        let pod_api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let template = set.spec.as_ref().map(|s| s.template.clone()).unwrap_or_default();

        let owned = controller_history::claim(
            &set_api,
            set.as_ref(),
            &self.revisions,
            &revision_api,
            &selector,
        )
        .await?;
        // Read before listing pods: pods seen after this point are in the list.
        let needs_sync = self.expectations.satisfied(key);
        // Every pod of the namespace, not only the owned ones: orphans may be adopted.
        let candidates = self.pods.in_namespace(namespace);
        let claimed = controller_ref::claim(&set_api, set.as_ref(), &pod_api, candidates, |p| {
            selector.matches(labels_of(&p.metadata)) && pods::ordinal_in(&set, p).is_some()
        })
        .await?;
        let collisions = set.status.as_ref().and_then(|s| s.collision_count).unwrap_or(0);
        let revisions = controller_history::sync_current(
            &revision_api,
            set.as_ref(),
            &template,
            owned,
            collisions,
        )
        .await?;
        let update = revisions.current.clone();
        let update_name = update.metadata.name.clone().unwrap_or_default();
        let recorded = set.status.as_ref().and_then(|s| s.current_revision.as_deref());
        let current = revisions
            .all
            .iter()
            .find(|r| r.metadata.name.as_deref().is_some_and(|n| Some(n) == recorded))
            .cloned()
            .unwrap_or_else(|| update.clone());
        let current_name = current.metadata.name.clone().unwrap_or_default();

        let min_ready = set.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0);
        let now = Timestamp::now();
        let mut by_ordinal: BTreeMap<i32, Arc<Pod>> = BTreeMap::new();
        let mut views = Vec::new();
        for pod in &claimed {
            let Some(ordinal) = pods::ordinal_in(&set, pod) else { continue };
            views.push(self.view(&set, pod, ordinal, min_ready, now));
            by_ordinal.insert(ordinal, pod.clone());
        }

        let mut result = Ok(());
        if needs_sync {
            let policy = policy(&set);
            let stale = self.stale_claims(&set, &policy, &by_ordinal);
            let steps = plan::plan(&policy, &views, &current_name, &update_name, &stale);
            if !steps.is_empty() {
                tracing::debug!(statefulset = key, ?steps, "steps");
            }
            result =
                self.carry_out(&set, key, &steps, &by_ordinal, &current, &update, &pod_api).await;
        }

        let counts = plan::count(&views, &current_name, &update_name);
        let observed = if needs_sync {
            set.metadata.generation
        } else {
            set.status.as_ref().and_then(|s| s.observed_generation)
        };
        let next = next_status(
            &set,
            counts,
            observed,
            &current_name,
            &update_name,
            revisions.collision_count,
        );
        if set.status.as_ref() != Some(&next) {
            write_status(&set_api, &set, |s| s.status = Some(next.clone())).await?;
        }
        // The history, keeping the current and update revisions and those pods run.
        let limit = set
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(controller_history::DEFAULT_HISTORY_LIMIT);
        let live: BTreeSet<String> = views
            .iter()
            .map(|v| v.revision.clone())
            .chain([
                current_name.clone(),
                update_name.clone(),
                next.current_revision.clone().unwrap_or_default(),
            ])
            .collect();
        let stale = controller_history::stale(
            &revisions.all,
            |r| r.metadata.name.as_ref().is_some_and(|n| live.contains(n)),
            limit,
        );
        controller_history::delete(&revision_api, &stale).await?;

        let replicas = pods::replicas(&set);
        if min_ready > 0 && counts.available != replicas {
            let delay = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0));
            self.queue.add_after(key.to_string(), delay);
        }
        result
    }

    /// What the planner needs to know of one pod.
    fn view(
        &self,
        set: &StatefulSet,
        pod: &Pod,
        ordinal: i32,
        min_ready: i32,
        now: Timestamp,
    ) -> PodView {
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("");
        let running_ready = phase == "Running" && is_ready(pod);
        let needs_update = if pods::in_range(set, ordinal) {
            !pods::identity_fix(set, pod, ordinal).is_empty()
                || !self.claims_to_fix(set, pod, ordinal).is_empty()
        } else {
            !self.claims_to_fix(set, pod, ordinal).is_empty()
        };
        PodView {
            ordinal,
            revision: pods::revision_of(pod).to_string(),
            finished: match phase {
                "Failed" => Some(Finished::Failed),
                "Succeeded" => Some(Finished::Succeeded),
                _ => None,
            },
            pending: phase == "Pending",
            running_ready,
            available: is_available(pod, min_ready, now),
            terminating: pod.metadata.deletion_timestamp.is_some(),
            needs_update,
        }
    }

    /// The claims of the pod whose owner references do not follow the retention policy, with
    /// the references they should have.
    fn claims_to_fix(
        &self,
        set: &StatefulSet,
        pod: &Pod,
        ordinal: i32,
    ) -> Vec<(Arc<PersistentVolumeClaim>, Vec<OwnerReference>)> {
        let namespace = set.metadata.namespace.as_deref().unwrap_or("");
        let pod_name = pod.metadata.name.as_deref().unwrap_or("");
        let pod_uid = pod.metadata.uid.as_deref().unwrap_or("");
        let scaled_down = !pods::in_range(set, ordinal);
        pods::claims(set, ordinal)
            .into_iter()
            .filter_map(|(_, wanted)| {
                let name = wanted.metadata.name.as_deref().unwrap_or("");
                let claim = self.claims.get(&ObjectRef::new(name).within(namespace))?;
                let refs = pods::claim_owner_refs(set, &claim, pod_name, pod_uid, scaled_down)?;
                Some((claim, refs))
            })
            .collect()
    }

    /// The missing ordinals whose claims still belong to a previous pod of the name.
    fn stale_claims(
        &self,
        set: &StatefulSet,
        policy: &plan::Policy,
        by_ordinal: &BTreeMap<i32, Arc<Pod>>,
    ) -> BTreeSet<i32> {
        if pods::claims_outlive_pods(set) || !policy.has_claims {
            return BTreeSet::new();
        }
        let namespace = set.metadata.namespace.as_deref().unwrap_or("");
        (0..policy.replicas)
            .map(|i| policy.start + i)
            .filter(|ordinal| !by_ordinal.contains_key(ordinal))
            .filter(|ordinal| {
                let pod_name = pods::pod_name(set, *ordinal);
                pods::claims(set, *ordinal).iter().any(|(_, wanted)| {
                    let name = wanted.metadata.name.as_deref().unwrap_or("");
                    self.claims
                        .get(&ObjectRef::new(name).within(namespace))
                        .is_some_and(|c| pods::claim_is_stale(&c, &pod_name, ""))
                })
            })
            .collect()
    }

    /// Carries out the planner's steps in order, stopping at the first failure.
    #[allow(clippy::too_many_arguments)]
    async fn carry_out(
        &self,
        set: &StatefulSet,
        key: &str,
        steps: &[Step],
        by_ordinal: &BTreeMap<i32, Arc<Pod>>,
        current: &ControllerRevision,
        update: &ControllerRevision,
        pod_api: &Api<Pod>,
    ) -> Result<(), SyncError> {
        let creates = steps.iter().filter(|s| matches!(s, Step::Create { .. })).count();
        let deletes = steps.iter().filter(|s| matches!(s, Step::Delete { .. })).count();
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.expectations.expect(key, count(creates), count(deletes));
        let (mut creates_left, mut deletes_left) = (creates, deletes);
        let mut outcome = Ok(());
        for step in steps {
            let result = match *step {
                Step::Create { ordinal, revision } => {
                    creates_left -= 1;
                    // The update revision is the set's own template; the current one is the
                    // template its revision restores.
                    let (revision, restored) = match revision {
                        Revision::Current => (current, controller_history::template_of(current)),
                        Revision::Update => (update, None),
                    };
                    let template = restored.unwrap_or_else(|| {
                        set.spec.as_ref().map(|s| s.template.clone()).unwrap_or_default()
                    });
                    let name = revision.metadata.name.as_deref().unwrap_or("");
                    let pod = pods::new_pod(set, &template, ordinal, name);
                    let result = self.create_pod(set, pod, pod_api).await;
                    if result.is_err() {
                        self.expectations.creation_observed(key);
                    }
                    result
                }
                Step::Delete { ordinal, why } => {
                    deletes_left -= 1;
                    let Some(pod) = by_ordinal.get(&ordinal) else { continue };
                    let result = self.delete_pod(set, pod, why, pod_api).await;
                    if result.is_err() {
                        self.expectations.deletion_observed(key);
                    }
                    result
                }
                Step::EnsureClaims { ordinal } => {
                    let name = pods::pod_name(set, ordinal);
                    self.create_claims(set, &name, ordinal).await
                }
                Step::Update { ordinal } => match by_ordinal.get(&ordinal) {
                    Some(pod) => self.update_pod(set, pod, ordinal, pod_api).await,
                    None => Ok(()),
                },
            };
            if let Err(e) = result {
                outcome = Err(SyncError::Step(e));
                break;
            }
        }
        // Steps not taken are not awaited.
        for _ in 0..creates_left {
            self.expectations.creation_observed(key);
        }
        for _ in 0..deletes_left {
            self.expectations.deletion_observed(key);
        }
        outcome
    }

    /// Creates the pod's claims, then the pod, then gives the claims their owners (as
    /// upstream's `CreateStatefulPod`). Errors are messages, also recorded as events.
    async fn create_pod(
        &self,
        set: &StatefulSet,
        pod: Pod,
        pod_api: &Api<Pod>,
    ) -> Result<(), String> {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let set_name = set.metadata.name.as_deref().unwrap_or("");
        let ordinal = pods::ordinal_in(set, &pod).unwrap_or(0);
        let target = object_reference(set);
        if let Err(e) = self.create_claims(set, &name, ordinal).await {
            let note = format!("create Pod {name} in StatefulSet {set_name} failed error: {e}");
            self.recorder.record(&target, "Warning", "FailedCreate", &note);
            return Err(e);
        }
        match pod_api.create(&PostParams::default(), &pod).await {
            Ok(created) => {
                tracing::info!(statefulset = set_name, pod = name, "created pod");
                let note = format!("create Pod {name} in StatefulSet {set_name} successful");
                self.recorder.record(&target, "Normal", "SuccessfulCreate", &note);
                self.fix_claims(set, &created, ordinal).await
            }
            // Not in the cache yet (or not ours): retried with a back-off, as upstream.
            Err(e) if is_code(&e, 409) => Err(format!("pod {name} already exists")),
            Err(e) => {
                let note = format!(
                    "create Pod {name} in StatefulSet {set_name} failed error: {}",
                    message(&e)
                );
                self.recorder.record(&target, "Warning", "FailedCreate", &note);
                Err(format!("creating pod {name}: {}", message(&e)))
            }
        }
    }

    /// Creates the claims of pod `pod_name` that do not exist; one being deleted is an error
    /// (the pod must wait for it to go).
    async fn create_claims(
        &self,
        set: &StatefulSet,
        pod_name: &str,
        ordinal: i32,
    ) -> Result<(), String> {
        let namespace = set.metadata.namespace.as_deref().unwrap_or("");
        let set_name = set.metadata.name.as_deref().unwrap_or("");
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), namespace);
        let target = object_reference(set);
        let mut errors = Vec::new();
        for (_, mut claim) in pods::claims(set, ordinal) {
            let name = claim.metadata.name.clone().unwrap_or_default();
            let existing = match self.claims.get(&ObjectRef::new(&name).within(namespace)) {
                Some(existing) => Some((*existing).clone()),
                None => match api.get_opt(&name).await {
                    Ok(found) => found,
                    Err(e) => {
                        errors.push(format!("failed to retrieve PVC {name}: {}", message(&e)));
                        continue;
                    }
                },
            };
            match existing {
                Some(existing) if existing.metadata.deletion_timestamp.is_some() => {
                    errors.push(format!("pvc {name} is being deleted"));
                }
                Some(_) => {}
                None => {
                    // Owners as the retention policy wants them from the start.
                    claim.metadata.owner_references =
                        pods::claim_owner_refs(set, &claim, pod_name, "", false)
                            .filter(|refs| !refs.is_empty());
                    match api.create(&PostParams::default(), &claim).await {
                        Ok(_) => {
                            let note = format!("create Claim {name} Pod {pod_name} in StatefulSet {set_name} success");
                            self.recorder.record(&target, "Normal", "SuccessfulCreate", &note);
                        }
                        Err(e) if is_code(&e, 409) => {}
                        Err(e) => {
                            let note = format!(
                                "create Claim {name} for Pod {pod_name} in StatefulSet {set_name} failed error: {}",
                                message(&e)
                            );
                            self.recorder.record(&target, "Warning", "FailedCreate", &note);
                            errors.push(format!("failed to create PVC {name}: {}", message(&e)));
                        }
                    }
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }

    /// Gives the pod's claims the owners the retention policy wants.
    async fn fix_claims(&self, set: &StatefulSet, pod: &Pod, ordinal: i32) -> Result<(), String> {
        let namespace = set.metadata.namespace.as_deref().unwrap_or("");
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), namespace);
        for (claim, refs) in self.claims_to_fix(set, pod, ordinal) {
            let name = claim.metadata.name.clone().unwrap_or_default();
            let mut updated = (*claim).clone();
            updated.metadata.owner_references = Some(refs);
            if let Err(e) = api.replace(&name, &PostParams::default(), &updated).await {
                return Err(format!(
                    "could not update claim {name} for delete policy ownerRefs: {}",
                    message(&e)
                ));
            }
            tracing::debug!(claim = name, "claim owners follow the retention policy");
        }
        Ok(())
    }

    /// Fixes a pod's identity labels and its claims' owners (upstream's `UpdateStatefulPod`;
    /// a pod's volumes cannot change, so storage is not touched).
    async fn update_pod(
        &self,
        set: &StatefulSet,
        pod: &Pod,
        ordinal: i32,
        pod_api: &Api<Pod>,
    ) -> Result<(), String> {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let set_name = set.metadata.name.as_deref().unwrap_or("");
        let labels = if pods::in_range(set, ordinal) {
            pods::identity_fix(set, pod, ordinal)
        } else {
            BTreeMap::new()
        };
        if !labels.is_empty() {
            let patch = json!({"metadata": {"labels": labels}});
            if let Err(e) =
                pod_api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await
            {
                let note = format!(
                    "update Pod {name} in StatefulSet {set_name} failed error: {}",
                    message(&e)
                );
                self.recorder.record(&object_reference(set), "Warning", "FailedUpdate", &note);
                return Err(format!("updating pod {name}: {}", message(&e)));
            }
            let note = format!("update Pod {name} in StatefulSet {set_name} successful");
            self.recorder.record(&object_reference(set), "Normal", "SuccessfulUpdate", &note);
        }
        self.fix_claims(set, pod, ordinal).await
    }

    async fn delete_pod(
        &self,
        set: &StatefulSet,
        pod: &Pod,
        why: Why,
        pod_api: &Api<Pod>,
    ) -> Result<(), String> {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let namespace = set.metadata.namespace.as_deref().unwrap_or("");
        let set_name = set.metadata.name.as_deref().unwrap_or("");
        let target = object_reference(set);
        match why {
            Why::Finished(Finished::Failed) => {
                let note =
                    format!("StatefulSet {namespace}/{set_name} is recreating failed Pod {name}");
                self.recorder.record(&target, "Warning", "RecreatingFailedPod", &note);
            }
            Why::Finished(Finished::Succeeded) => {
                let note = format!(
                    "StatefulSet {namespace}/{set_name} is recreating terminated Pod {name}"
                );
                self.recorder.record(&target, "Normal", "RecreatingTerminatedPod", &note);
            }
            Why::ScaleDown => {
                tracing::info!(statefulset = set_name, pod = name, "deleting pod for scale down")
            }
            Why::Update => {
                tracing::info!(statefulset = set_name, pod = name, "deleting pod for update")
            }
        }
        match pod_api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {
                let note = format!("delete Pod {name} in StatefulSet {set_name} successful");
                self.recorder.record(&target, "Normal", "SuccessfulDelete", &note);
                Ok(())
            }
            Err(e) if is_code(&e, 404) => Ok(()),
            Err(e) => {
                let note = format!(
                    "delete Pod {name} in StatefulSet {set_name} failed error: {}",
                    message(&e)
                );
                self.recorder.record(&target, "Warning", "FailedDelete", &note);
                Err(format!("deleting pod {name}: {}", message(&e)))
            }
        }
    }

    /// The set a controller reference names, if it is one of ours (same uid as the cached set
    /// of that name).
    fn resolve(&self, namespace: &str, controller: &OwnerReference) -> Option<String> {
        if controller.kind != "StatefulSet" {
            return None;
        }
        let set = self.sets.get(&ObjectRef::new(&controller.name).within(namespace))?;
        (set.metadata.uid.as_deref() == Some(controller.uid.as_str()))
            .then(|| key_of(&set.metadata))
    }

    /// The sets in `namespace` whose selector matches `labels` (who may adopt an orphan).
    fn matching(&self, namespace: &str, labels: &BTreeMap<String, String>) -> Vec<String> {
        if labels.is_empty() {
            return Vec::new();
        }
        self.sets
            .in_namespace(namespace)
            .iter()
            .filter(|s| selector(s).is_ok_and(|sel| !sel.is_empty() && sel.matches(labels)))
            .map(|s| key_of(&s.metadata))
            .collect()
    }
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

    /// It turns available minReadySeconds later, with no event then.
    fn became_ready(&self, namespace: &str, controller: &OwnerReference, key: String) {
        let set = self.sets.get(&ObjectRef::new(&controller.name).within(namespace));
        let min_ready = set.and_then(|s| s.spec.as_ref()?.min_ready_seconds).unwrap_or(0);
        if min_ready > 0 {
            let delay = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0) + 1);
            self.queue.add_after(key, delay);
        }
    }
}

/// The event loop's state: turns changes into queued set keys and observed expectations, as
/// upstream's event handlers do with old and new objects.
struct Watch {
    ctl: Arc<Controller>,
    pods: PodEvents,
    revisions: controller_history::RevisionEvents,
    /// Each set's uid, so that one deleted and made again under its name starts afresh.
    set_uids: OwnerUids,
}

impl Watch {
    fn set_changed(&mut self, change: Change) {
        let Change::Object { namespace, name } = change else { return };
        let namespace = namespace.unwrap_or_default();
        let key = format!("{namespace}/{name}");
        let current = self.ctl.sets.get(&ObjectRef::new(&name).within(&namespace));
        if self.set_uids.changed(&key, current.and_then(|s| s.metadata.uid.clone())) {
            self.ctl.expectations.delete(&key);
        }
        self.ctl.queue.add(key);
    }

    fn pod_changed(&mut self, change: Change) {
        self.pods.change(change, &Owned(&*self.ctl));
    }

    fn revision_changed(&mut self, change: Change) {
        self.revisions.change(&self.ctl.revisions, change, &*self.ctl);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(spec: serde_json::Value) -> StatefulSet {
        serde_json::from_value(
            json!({"metadata": {"name": "web", "namespace": "ns"}, "spec": spec}),
        )
        .unwrap()
    }

    #[test]
    fn policies_come_from_the_spec() {
        let defaults = policy(&set(json!({"selector": {}, "template": {}})));
        assert_eq!(
            defaults,
            plan::Policy {
                start: 0,
                replicas: 1,
                ordered: true,
                on_delete: false,
                partition: 0,
                max_unavailable: None,
                deleting: false,
                has_claims: false
            }
        );
        let custom = policy(&set(json!({
            "selector": {}, "template": {}, "replicas": 10, "ordinals": {"start": 3},
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 4, "maxUnavailable": "25%"}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}}]
        })));
        assert_eq!((custom.start, custom.replicas, custom.ordered), (3, 10, false));
        assert_eq!(
            (custom.partition, custom.max_unavailable, custom.has_claims),
            (4, Some(2), true)
        );
        let on_delete = policy(&set(
            json!({"selector": {}, "template": {}, "updateStrategy": {"type": "OnDelete"}}),
        ));
        assert!(on_delete.on_delete);
        let tiny = policy(&set(json!({"selector": {}, "template": {}, "replicas": 2,
            "updateStrategy": {"rollingUpdate": {"maxUnavailable": "10%"}}})));
        assert_eq!(tiny.max_unavailable, Some(1), "never below one");
    }

    #[test]
    fn the_update_revision_becomes_current_when_all_pods_are_updated_and_ready() {
        let s = set(json!({"selector": {}, "template": {}, "replicas": 3}));
        let midway = plan::Counts { replicas: 3, ready: 3, available: 3, current: 2, updated: 1 };
        let status = next_status(&s, midway, Some(2), "web-a", "web-b", 0);
        assert_eq!(
            serde_json::to_value(&status).unwrap(),
            json!({"replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "currentReplicas": 2,
                "updatedReplicas": 1, "currentRevision": "web-a", "updateRevision": "web-b",
                "observedGeneration": 2, "collisionCount": 0})
        );
        let done = plan::Counts { replicas: 3, ready: 3, available: 3, current: 0, updated: 3 };
        let status = next_status(&s, done, Some(2), "web-a", "web-b", 0);
        assert_eq!(
            (status.current_replicas, status.current_revision.as_deref()),
            (Some(3), Some("web-b"))
        );
        let unready = plan::Counts { ready: 2, ..done };
        let status = next_status(&s, unready, Some(2), "web-a", "web-b", 0);
        assert_eq!(
            (status.current_replicas, status.current_revision.as_deref()),
            (None, Some("web-a"))
        );
        // OnDelete: the current revision stays until someone deletes the pods.
        let on_delete =
            set(json!({"selector": {}, "template": {}, "updateStrategy": {"type": "OnDelete"}}));
        let status = next_status(&on_delete, done, Some(2), "web-a", "web-b", 0);
        assert_eq!(status.current_revision.as_deref(), Some("web-a"));
        let empty = next_status(&s, plan::Counts::default(), None, "web-a", "web-a", 1);
        assert_eq!(
            serde_json::to_value(&empty).unwrap(),
            json!({"replicas": 0, "availableReplicas": 0, "currentRevision": "web-a",
                "updateRevision": "web-a", "collisionCount": 1})
        );
    }
}
