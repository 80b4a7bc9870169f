//! The Job controller, as kube-controller-manager's `job-controller`: runs a Job's pods to
//! completion within its parallelism, back-off limit, deadline, and failure and success
//! policies, and reports what happened in its status, so that `kubectl wait
//! --for=condition=complete`, the COMPLETIONS and STATUS columns of `kubectl get jobs` and
//! `kubectl logs job/<name>` work as on a real cluster.
//!
//! Start at [`run`]. Then:
//!
//! - The event loop (`watch.rs`) turns Job and pod changes into Job keys (`namespace/name`)
//!   on a work queue, pod changes being batched for a second as upstream does, and tells the
//!   expectations what it saw.
//! - Each sync (`Controller::sync`) claims the Job's pods, counts the finished ones it has not
//!   counted yet, decides whether the Job failed (back-off limit, deadline, pod failure policy,
//!   failed indexes) or succeeded (completions, success policy), and otherwise creates or
//!   deletes pods (`Controller::manage`): `min(parallelism, remaining completions)` active,
//!   none while suspended, new ones only after the failure back-off (`backoff.rs`).
//! - Pods are counted exactly once through upstream's two-phase accounting
//!   (`Controller::track`): every pod carries the `batch.kubernetes.io/job-tracking`
//!   finalizer; a finished pod's uid first goes to `status.uncountedTerminatedPods`, then its
//!   finalizer is removed, then it moves into `status.succeeded` or `status.failed`. A pod
//!   without the finalizer is never counted again, so the status is the tally even across
//!   crashes and restarts.
//! - A finishing Job first gets the interim condition `SuccessCriteriaMet` or `FailureTarget`
//!   and loses its active pods; `Complete` or `Failed` follows once no pod is terminating or
//!   uncounted any more.
//! - A second queue (the orphan queue) removes the finalizer from pods whose Job is gone or
//!   finished.
//!
//! Indexed Jobs (`indexes.rs`) give each pod a completion index (annotation, label,
//! `JOB_COMPLETION_INDEX`, hostname `<job>-<index>`) and report `completedIndexes` and, with
//! `backoffLimitPerIndex`, `failedIndexes`. Pod failure and success policies are matched in
//! `policy.rs`, conditions written in `conditions.rs`, pods made and ranked in `pods.rs`.
//!
//! Not done (as upstream's metrics): the `job_*` Prometheus metrics.

mod backoff;
mod conditions;
mod indexes;
mod pods;
mod policy;
mod watch;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::{
    Job, JobCondition, JobStatus, PodFailurePolicy, SuccessPolicy, UncountedTerminatedPods,
};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
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
use crate::controller_ref::{self, controller_of, ClaimError};
use crate::pod_control::{self, CreateError};
use rkube_runtime::events::{object_reference, Recorder};
use rkube_runtime::expectations::Expectations;
use rkube_runtime::informer::{self, Change};
use rkube_runtime::workqueue::WorkQueue;

use conditions::{
    COMPLETE, FAILED, FAILURE_TARGET, REASON_BACKOFF_LIMIT_EXCEEDED, REASON_COMPLETIONS_REACHED,
    REASON_DEADLINE_EXCEEDED, REASON_FAILED_INDEXES, REASON_MAX_FAILED_INDEXES_EXCEEDED,
    REASON_POD_FAILURE_POLICY, REASON_SUCCESS_POLICY, SUCCESS_CRITERIA_MET, SUSPENDED,
};
use indexes::Intervals;
use pods::IndexOf;

/// The component on the events this controller records.
const COMPONENT: &str = "job-controller";
/// The `spec.managedBy` of Jobs this controller manages (also when unset).
const MANAGED_BY: &str = "kubernetes.io/job-controller";
/// How long pod changes are batched before the Job is synced (upstream's
/// `syncJobBatchPeriod`).
const SYNC_BATCH_PERIOD: Duration = Duration::from_secs(1);
/// The longest back-off of a Job whose sync keeps failing (upstream's `MaxJobApiBackOff`).
const MAX_API_BACKOFF: Duration = Duration::from_secs(60);
/// Most pods created or deleted in one sync.
const MAX_POD_CREATE_DELETE_PER_SYNC: usize = 500;
/// Most uids in `status.uncountedTerminatedPods` (keeps the status below about 20 KB).
const MAX_UNCOUNTED_PODS: usize = 500;
/// The longest one sync may take before it is retried.
const SYNC_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a status this controller wrote may take to reach the Job informer before a sync
/// goes ahead with the older copy anyway.
const OWN_WRITE_WAIT: Duration = Duration::from_secs(30);

/// Runs the controller with `workers` concurrent syncs until the task is aborted. `pods` is a
/// shared, synced Pod informer's store (all namespaces) and `pod_changes` its change channel.
pub async fn run(
    client: Client,
    workers: usize,
    pods: Store<Pod>,
    mut pod_changes: mpsc::UnboundedReceiver<Change>,
) {
    let (tx, mut job_changes) = mpsc::unbounded_channel();
    let (jobs, _watch) =
        informer::start(Api::<Job>::all(client.clone()), watcher::Config::default(), vec![tx]);
    // Pod changes wait in their channel meanwhile: they can only be matched to known Jobs.
    if jobs.wait_until_ready().await.is_err() || pods.wait_until_ready().await.is_err() {
        return;
    }
    let ctl = Arc::new(Controller {
        recorder: Recorder::new(client.clone(), COMPONENT),
        client,
        jobs,
        pods,
        queue: WorkQueue::new(MAX_API_BACKOFF),
        orphans: WorkQueue::new(MAX_API_BACKOFF),
        expectations: Expectations::new(),
        finalizers: FinalizerExpectations::default(),
        backoffs: Mutex::new(HashMap::new()),
        own_writes: Mutex::new(HashMap::new()),
    });
    let mut tasks = JoinSet::new();
    for _ in 0..workers.max(1) {
        tasks.spawn(work(ctl.clone()));
    }
    tasks.spawn(work_orphans(ctl.clone()));
    tracing::info!(workers, "job controller started");
    let mut watch = watch::Watch::new(ctl.clone());
    loop {
        tokio::select! {
            Some(change) = job_changes.recv() => watch.job_changed(change),
            Some(change) = pod_changes.recv() => watch.pod_changed(change),
            else => break,
        }
    }
    ctl.queue.shut_down();
    ctl.orphans.shut_down();
}

/// The pods whose finalizer removal each Job waits to see (upstream's
/// `uidTrackingExpectations`): until then such a pod counts as counted, even if the informer
/// still shows the finalizer.
#[derive(Default)]
struct FinalizerExpectations {
    by_key: Mutex<HashMap<String, HashSet<String>>>,
}

impl FinalizerExpectations {
    fn expect(&self, key: &str, uids: impl IntoIterator<Item = String>) {
        let mut by_key = self.by_key.lock().expect("finalizer expectations");
        by_key.entry(key.to_string()).or_default().extend(uids);
    }

    fn observed(&self, key: &str, uid: &str) {
        let mut by_key = self.by_key.lock().expect("finalizer expectations");
        if let Some(uids) = by_key.get_mut(key) {
            uids.remove(uid);
            if uids.is_empty() {
                by_key.remove(key);
            }
        }
    }

    fn expected(&self, key: &str) -> HashSet<String> {
        self.by_key.lock().expect("finalizer expectations").get(key).cloned().unwrap_or_default()
    }

    fn forget(&self, key: &str) {
        self.by_key.lock().expect("finalizer expectations").remove(key);
    }
}

struct Controller {
    client: Client,
    recorder: Recorder,
    jobs: Store<Job>,
    pods: Store<Pod>,
    queue: WorkQueue<String>,
    /// Pods (`namespace/name`) whose tracking finalizer no Job sync will remove.
    orphans: WorkQueue<String>,
    expectations: Expectations,
    finalizers: FinalizerExpectations,
    /// Each Job's failure back-off, updated when its status is written.
    backoffs: Mutex<HashMap<String, backoff::Record>>,
    /// The resourceVersions each Job's status writes replaced, while the informer may still
    /// show one of them: a sync on such a copy would count from a stale status.
    own_writes: Mutex<HashMap<String, (HashSet<String>, Instant)>>,
}

/// Why a sync failed (it is retried with a back-off).
#[derive(Debug, thiserror::Error)]
enum SyncError {
    #[error("{0}: {1}")]
    Api(&'static str, kube::Error),
    #[error("claiming pods: {0}")]
    Claim(#[from] ClaimError),
    #[error("{0}")]
    Manage(#[from] ManageError),
}

impl SyncError {
    /// A stale copy (conflict) or a namespace going away: retried without alarm.
    fn is_routine(&self) -> bool {
        match self {
            SyncError::Api(_, kube::Error::Api(s)) => s.code == 409,
            SyncError::Manage(ManageError::NamespaceTerminating(_)) => true,
            _ => false,
        }
    }
}

/// Why creating, deleting or releasing pods failed.
#[derive(Debug, thiserror::Error)]
enum ManageError {
    #[error("{0}")]
    Failed(String),
    /// The namespace is being deleted: no create can succeed, nothing worth reporting.
    #[error("{0}")]
    NamespaceTerminating(String),
}

async fn work(ctl: Arc<Controller>) {
    let sync = |key: String| {
        let ctl = ctl.clone();
        async move { ctl.sync(&key).await.map(|()| None) }
    };
    ctl.queue.work(COMPONENT, SYNC_TIMEOUT, sync, SyncError::is_routine).await
}

async fn work_orphans(ctl: Arc<Controller>) {
    while let Some(key) = ctl.orphans.get().await {
        match ctl.sync_orphan(&key).await {
            Ok(()) => ctl.orphans.forget(&key),
            Err(e) => {
                tracing::warn!(pod = key, error = %e, "removing the job tracking finalizer failed");
                ctl.orphans.add_rate_limited(key.clone());
            }
        }
        ctl.orphans.done(&key);
    }
}

fn key_of(job: &Job) -> String {
    let meta = &job.metadata;
    format!("{}/{}", meta.namespace.as_deref().unwrap_or(""), meta.name.as_deref().unwrap_or(""))
}

fn uid_of(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

/// The Job's pod selector; no selector selects nothing.
fn selector_of(job: &Job) -> Result<LabelSelector, SelectorError> {
    let Some(selector) = job.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
        return Ok(LabelSelector::nothing());
    };
    // Serializing a k8s-openapi LabelSelector cannot fail; if it did, select nothing.
    let value = serde_json::to_value(selector).unwrap_or(serde_json::Value::Null);
    LabelSelector::from_api(&value)
}

/// Whether another controller manages the Job (`spec.managedBy`).
fn managed_elsewhere(job: &Job) -> Option<&str> {
    let by = job.spec.as_ref()?.managed_by.as_deref()?;
    (by != MANAGED_BY).then_some(by)
}

fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// Now, to the second: what the API keeps of a time, so that comparing a time written with
/// one read back does not see a change.
fn now() -> Timestamp {
    Timestamp::from_second(Timestamp::now().as_second()).unwrap_or_else(|_| Timestamp::now())
}

fn count(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

/// The sizes of the slow-start batches creating `count` pods: 1, 2, 4, ...
fn slow_start_batches(count: usize) -> Vec<usize> {
    let mut batches = Vec::new();
    let (mut remaining, mut size) = (count, 1usize);
    while remaining > 0 {
        let batch = size.min(remaining);
        batches.push(batch);
        remaining -= batch;
        size = size.saturating_mul(2);
    }
    batches
}

/// The distinct completion indexes of `pods`, lowest first.
fn sorted_indexes<'a>(pods: impl Iterator<Item = &'a Arc<Pod>>) -> Vec<i32> {
    let mut list: Vec<i32> = pods.filter_map(|p| pods::completion_index(p)).collect();
    list.sort_unstable();
    list.dedup();
    list
}

/// How many pods should be active: `min(parallelism, remaining completions)`; without
/// completions (a work queue) `parallelism` until any pod succeeded, then no new ones.
fn wanted_active(spec: &Spec, active: i32, succeeded: i32) -> i32 {
    match spec.completions {
        None if succeeded > 0 => active,
        None => spec.parallelism,
        Some(completions) => completions.saturating_sub(succeeded).min(spec.parallelism).max(0),
    }
}

/// The strategic merge patch that removes the tracking finalizer and nothing else.
fn remove_finalizer_patch() -> serde_json::Value {
    json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [pods::TRACKING_FINALIZER]}})
}

/// The parts of a Job's spec a sync needs, with the API's defaults where unset.
#[derive(Debug, Clone, Default)]
struct Spec {
    completions: Option<i32>,
    parallelism: i32,
    backoff_limit: i32,
    backoff_limit_per_index: Option<i32>,
    max_failed_indexes: Option<i32>,
    indexed: bool,
    suspended: bool,
    active_deadline_seconds: Option<i64>,
    /// Pods are replaced only once they failed, not while terminating
    /// (`podReplacementPolicy: Failed`, implied by a pod failure policy).
    only_replace_failed: bool,
    restart_on_failure: bool,
    pod_failure_policy: Option<PodFailurePolicy>,
    success_policy: Option<SuccessPolicy>,
}

impl Spec {
    fn of(job: &Job) -> Spec {
        let Some(spec) = job.spec.as_ref() else { return Spec::default() };
        Spec {
            completions: spec.completions,
            parallelism: spec.parallelism.unwrap_or(1).max(0),
            backoff_limit: spec.backoff_limit.unwrap_or(6),
            backoff_limit_per_index: spec.backoff_limit_per_index,
            max_failed_indexes: spec.max_failed_indexes,
            indexed: spec.completion_mode.as_deref() == Some("Indexed"),
            suspended: spec.suspend == Some(true),
            active_deadline_seconds: spec.active_deadline_seconds,
            only_replace_failed: spec.pod_replacement_policy.as_deref() == Some("Failed")
                || spec.pod_failure_policy.is_some(),
            restart_on_failure: spec
                .template
                .spec
                .as_ref()
                .and_then(|s| s.restart_policy.as_deref())
                == Some("OnFailure"),
            pod_failure_policy: spec.pod_failure_policy.clone(),
            success_policy: spec.success_policy.clone(),
        }
    }

    /// `spec.completions` of an Indexed Job, the bound of its indexes.
    fn indexed_completions(&self) -> Option<i32> {
        self.indexed.then(|| self.completions.unwrap_or(0))
    }

    fn is_failed(&self, pod: &Pod) -> bool {
        pods::is_failed(pod, self.only_replace_failed)
    }

    /// Whether the pod carries a completion index the Job can have.
    fn valid_index(&self, pod: &Pod) -> Option<i32> {
        pods::completion_index(pod).filter(|i| *i < self.completions.unwrap_or(0))
    }
}

/// What one sync works with and on (upstream's `syncJobCtx`).
struct Ctx {
    key: String,
    /// The Job as it will be written.
    job: Job,
    /// The pods the Job controls, finished ones included.
    pods: Vec<Arc<Pod>>,
    active_pods: Vec<Arc<Pod>>,
    /// The condition the Job is finishing with: interim (`SuccessCriteriaMet`,
    /// `FailureTarget`) until written, then the terminal one it leads to.
    finished: Option<JobCondition>,
    succeeded: i32,
    failed: i32,
    prev_succeeded_indexes: Intervals,
    succeeded_indexes: Intervals,
    failed_indexes: Option<Intervals>,
    new_backoff: backoff::Record,
    /// Pods whose finalizer this controller removed without seeing it gone yet.
    expected_removals: HashSet<String>,
    uncounted_succeeded: HashSet<String>,
    uncounted_failed: HashSet<String>,
    /// With `backoffLimitPerIndex`: the failed pod of each index kept until its replacement
    /// exists, which inherits its failure count.
    delayed_deletion: HashMap<i32, Arc<Pod>>,
    terminating: i32,
    ready: i32,
}

impl Ctx {
    fn status(&mut self) -> &mut JobStatus {
        self.job.status.get_or_insert_with(JobStatus::default)
    }

    fn uncounted(&mut self) -> &mut UncountedTerminatedPods {
        self.status().uncounted_terminated_pods.get_or_insert_with(Default::default)
    }

    /// Pods with the finalizer, not yet being un-finalized, with a valid index for Indexed
    /// Jobs, not in `skip`, that pass `filter` (upstream's `getValidPodsWithFilter`).
    fn countable<'a>(
        &'a self,
        spec: &'a Spec,
        skip: Option<&'a HashSet<String>>,
        filter: impl Fn(&Pod) -> bool + 'a,
    ) -> impl Iterator<Item = &'a Arc<Pod>> + 'a {
        self.pods.iter().filter(move |p| {
            let uid = p.metadata.uid.as_deref().unwrap_or("");
            pods::has_tracking_finalizer(p)
                && !skip.is_some_and(|s| s.contains(uid))
                && !self.expected_removals.contains(uid)
                && (!spec.indexed || spec.valid_index(p).is_some())
                && filter(p)
        })
    }
}

fn counter(value: Option<i32>) -> i32 {
    value.unwrap_or(0)
}

/// Moves the uncounted pods whose finalizer is gone into the counters. Whether the status
/// changed.
fn clean_uncounted(status: &mut JobStatus, with_finalizer: &HashSet<String>) -> bool {
    let uncounted = status.uncounted_terminated_pods.get_or_insert_with(Default::default);
    let mut moved = (0, 0);
    for (list, moved) in
        [(&mut uncounted.succeeded, &mut moved.0), (&mut uncounted.failed, &mut moved.1)]
    {
        if let Some(uids) = list.as_mut() {
            let before = uids.len();
            uids.retain(|uid| with_finalizer.contains(uid));
            *moved = count(before - uids.len());
            if uids.is_empty() {
                *list = None;
            }
        }
    }
    status.succeeded = Some(counter(status.succeeded).saturating_add(moved.0));
    status.failed = Some(counter(status.failed).saturating_add(moved.1));
    moved != (0, 0)
}

/// The status as the API writes it: zero counters, empty lists and strings left out.
fn normalize(status: &mut JobStatus) {
    for field in [&mut status.active, &mut status.succeeded, &mut status.failed] {
        if *field == Some(0) {
            *field = None;
        }
    }
    if status.completed_indexes.as_deref() == Some("") {
        status.completed_indexes = None;
    }
    if status.conditions.as_ref().is_some_and(Vec::is_empty) {
        status.conditions = None;
    }
    let uncounted = status.uncounted_terminated_pods.get_or_insert_with(Default::default);
    for list in [&mut uncounted.succeeded, &mut uncounted.failed] {
        if list.as_ref().is_some_and(Vec::is_empty) {
            *list = None;
        }
    }
}

/// How many failures of a replaced pod's index there were, counting the pod's own: the
/// annotations of the pod the new one replaces, plus one in the right column.
fn index_failure_counts(spec: &Spec, replaced: Option<&Pod>) -> (i32, i32) {
    let Some(pod) = replaced else { return (0, 0) };
    let annotations = pod.metadata.annotations.as_ref();
    let counted = indexes::count_annotation(annotations, indexes::INDEX_FAILURE_COUNT);
    let ignored = indexes::count_annotation(annotations, indexes::INDEX_IGNORED_FAILURE_COUNT);
    if policy::match_pod_failure_policy(spec.pod_failure_policy.as_ref(), pod).counts {
        (counted.saturating_add(1), ignored)
    } else {
        (counted, ignored.saturating_add(1))
    }
}

/// Whether the pod's index failed for good under `backoffLimitPerIndex`.
fn index_failed(spec: &Spec, pod: &Pod) -> bool {
    if !spec.is_failed(pod) {
        return false;
    }
    let matched = policy::match_pod_failure_policy(spec.pod_failure_policy.as_ref(), pod);
    if matched.action == Some(policy::Action::FailIndex) {
        return true;
    }
    let failures =
        indexes::count_annotation(pod.metadata.annotations.as_ref(), indexes::INDEX_FAILURE_COUNT);
    matched.counts && failures >= spec.backoff_limit_per_index.unwrap_or(i32::MAX)
}

/// Restarts of the containers of a Job's running pods exceed the back-off limit (only
/// `restartPolicy: OnFailure` pods restart in place).
fn past_backoff_limit_on_failure(spec: &Spec, pods: &[Arc<Pod>]) -> bool {
    if !spec.restart_on_failure {
        return false;
    }
    let restarts: i64 = pods
        .iter()
        .filter(|p| matches!(pods::phase(p), "Running" | "Pending"))
        .map(|p| pods::restarts(p))
        .sum();
    if spec.backoff_limit == 0 {
        restarts > 0
    } else {
        restarts >= i64::from(spec.backoff_limit)
    }
}

/// How long the Job has been active at `now`, in milliseconds.
fn active_for_ms(job: &Job, now: Timestamp) -> Option<i64> {
    let start = job.status.as_ref()?.start_time.as_ref()?;
    Some(now.as_millisecond().saturating_sub(start.0.as_millisecond()))
}

impl Controller {
    /// Brings the Job `key` (`namespace/name`) in line with its spec and pods.
    async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some((namespace, name)) = key.split_once('/') else { return Ok(()) };
        let Some(shared) = self.jobs.get(&ObjectRef::new(name).within(namespace)) else {
            tracing::debug!(job = key, "deleted");
            self.forget(key);
            return Ok(());
        };
        if let Some(by) = managed_elsewhere(&shared) {
            tracing::debug!(job = key, managed_by = by, "managed by another controller; skipped");
            return Ok(());
        }
        if self.stale(key, &shared) {
            // Our own status write is on its way to the informer; its event syncs again.
            self.queue.add_after(key.to_string(), SYNC_BATCH_PERIOD);
            return Ok(());
        }
        if conditions::is_finished(&shared) {
            self.backoffs.lock().expect("backoffs").remove(key);
            // Normally none are left: a Job finishes only once its pods were counted.
            self.release_finished_pods(&shared);
            return Ok(());
        }
        let spec = Spec::of(&shared);
        if let Some(mode) = shared.spec.as_ref().and_then(|s| s.completion_mode.as_deref()) {
            if mode != "NonIndexed" && mode != "Indexed" {
                let note = "Skipped Job sync because completion mode is unknown";
                self.recorder.record(
                    &object_reference(&*shared),
                    "Warning",
                    "UnknownCompletionMode",
                    note,
                );
                return Ok(());
            }
        }
        if spec.indexed && spec.completions.is_none() {
            tracing::warn!(job = key, "an Indexed Job without completions; skipped");
            return Ok(());
        }
        let selector = match selector_of(&shared) {
            Ok(selector) => selector,
            Err(e) => {
                // Retrying cannot help; a change to the Job queues it again.
                tracing::warn!(job = key, error = %e, "invalid selector");
                return Ok(());
            }
        };
        // Read before listing pods: pods seen after this point are in the list.
        let satisfied = self.expectations.satisfied(key);
        let pods = self.pods_for_job(&shared, &selector).await?;
        let now_ts = now();

        let mut job = (*shared).clone();
        let status = job.status.get_or_insert_with(JobStatus::default);
        status.uncounted_terminated_pods.get_or_insert_with(Default::default);
        let uncounted = status.uncounted_terminated_pods.clone().unwrap_or_default();
        let active_pods: Vec<Arc<Pod>> =
            pods.iter().filter(|p| pods::is_active(p)).cloned().collect();
        let mut ctx = Ctx {
            key: key.to_string(),
            ready: count(active_pods.iter().filter(|p| pods::is_ready(p)).count()),
            terminating: count(pods.iter().filter(|p| pods::is_terminating(p)).count()),
            active_pods,
            pods,
            job,
            finished: None,
            succeeded: 0,
            failed: 0,
            prev_succeeded_indexes: Intervals::default(),
            succeeded_indexes: Intervals::default(),
            failed_indexes: None,
            new_backoff: backoff::Record::default(),
            expected_removals: self.finalizers.expected(key),
            uncounted_succeeded: uncounted.succeeded.into_iter().flatten().collect(),
            uncounted_failed: uncounted.failed.into_iter().flatten().collect(),
            delayed_deletion: HashMap::new(),
        };
        let mut active = count(ctx.active_pods.len());

        // The finished pods not counted yet, and what they do to the counters and back-off.
        let new_succeeded: Vec<Arc<Pod>> = ctx
            .countable(&spec, Some(&ctx.uncounted_succeeded), pods::succeeded)
            .cloned()
            .collect();
        let new_failed: Vec<Arc<Pod>> = ctx
            .countable(&spec, Some(&ctx.uncounted_failed), |p| spec.is_failed(p))
            .cloned()
            .collect();
        let counted_failures = new_failed
            .iter()
            .filter(|p| {
                policy::match_pod_failure_policy(spec.pod_failure_policy.as_ref(), p).counts
            })
            .count();
        let status = ctx.status().clone();
        ctx.succeeded = counter(status.succeeded)
            .saturating_add(count(new_succeeded.len()))
            .saturating_add(count(ctx.uncounted_succeeded.len()));
        ctx.failed = counter(status.failed)
            .saturating_add(count(counted_failures))
            .saturating_add(count(ctx.uncounted_failed.len()));
        // First start; a suspended Job has not started.
        if status.start_time.is_none() && !spec.suspended {
            ctx.status().start_time = Some(Time(now_ts));
        }
        let record = self.backoffs.lock().expect("backoffs").get(key).cloned().unwrap_or_default();
        ctx.new_backoff = record.next(
            new_succeeded.iter().map(|p| backoff::finished_time(p)).collect(),
            new_failed.iter().map(|p| backoff::finished_time(p)).collect(),
        );

        // Whether the Job is finishing, and how.
        let conds = status.conditions.clone().unwrap_or_default();
        ctx.finished = conditions::find_true(&conds, SUCCESS_CRITERIA_MET).cloned();
        if ctx.finished.is_none() {
            // Once success criteria were met, failures no longer matter.
            if let Some(target) = conditions::find_true(&conds, FAILURE_TARGET) {
                ctx.finished = Some(conditions::terminal_for(target, now_ts));
            } else if let Some(message) = self.fail_job_message(&spec, &ctx.pods) {
                ctx.finished = Some(conditions::new_condition(
                    FAILURE_TARGET,
                    "True",
                    REASON_POD_FAILURE_POLICY,
                    &message,
                    now_ts,
                ));
            }
        }
        if ctx.finished.is_none() {
            let failure = |reason, message| {
                Some(conditions::new_condition(FAILURE_TARGET, "True", reason, message, now_ts))
            };
            if ctx.failed > spec.backoff_limit || past_backoff_limit_on_failure(&spec, &ctx.pods) {
                ctx.finished = failure(
                    REASON_BACKOFF_LIMIT_EXCEEDED,
                    "Job has reached the specified backoff limit",
                );
            } else if let Some(deadline) = spec.active_deadline_seconds.filter(|_| !spec.suspended)
            {
                let elapsed = active_for_ms(&ctx.job, Timestamp::now()).unwrap_or(0);
                let left = deadline.saturating_mul(1000).saturating_sub(elapsed);
                if left <= 0 {
                    ctx.finished = failure(
                        REASON_DEADLINE_EXCEEDED,
                        "Job was active longer than specified deadline",
                    );
                } else {
                    let left = Duration::from_millis(u64::try_from(left).unwrap_or(0));
                    self.queue.add_after(key.to_string(), left);
                }
            }
        }
        if spec.indexed {
            self.index_accounting(&mut ctx, &spec, now_ts);
        }

        let mut suspend_changed = false;
        let mut manage_result = Ok(());
        if ctx.finished.is_some() {
            // Finishing: no pod may keep running.
            let doomed = ctx.active_pods.clone();
            let (deleted_ready, deleted, result) = self.delete_active_pods(&ctx.job, &doomed).await;
            if deleted != active || !satisfied {
                // Pods may remain, or be in flight unseen: not finished yet.
                ctx.finished = None;
            }
            active -= deleted;
            ctx.terminating += deleted;
            ctx.ready -= deleted_ready;
            manage_result = result;
        } else {
            let mut managed = false;
            if satisfied && ctx.job.metadata.deletion_timestamp.is_none() {
                let (now_active, result) = self.manage(&mut ctx, &spec).await;
                active = now_active;
                manage_result = result;
                managed = true;
            }
            let complete = match spec.completions {
                // A work queue: done when any pod succeeded and none still runs.
                None => ctx.succeeded > 0 && active == 0,
                Some(completions) => ctx.succeeded >= completions && active == 0,
            };
            if complete {
                ctx.finished = Some(conditions::new_condition(
                    SUCCESS_CRITERIA_MET,
                    "True",
                    REASON_COMPLETIONS_REACHED,
                    "Reached expected number of succeeded pods",
                    now_ts,
                ));
            } else if managed {
                suspend_changed = self.suspend_condition(&mut ctx, &spec, now_ts).await;
            }
        }

        let (ready, terminating) = (ctx.ready, ctx.terminating);
        let status = ctx.status();
        let needs_update = suspend_changed
            || active != counter(status.active)
            || status.ready != Some(ready)
            || status.terminating != Some(terminating);
        status.active = Some(active);
        status.ready = Some(ready);
        status.terminating = Some(terminating);
        self.track(&mut ctx, &spec, needs_update).await?;
        Ok(manage_result?)
    }

    /// Forgets everything about a Job that is gone.
    fn forget(&self, key: &str) {
        self.expectations.delete(key);
        self.finalizers.forget(key);
        self.backoffs.lock().expect("backoffs").remove(key);
        self.own_writes.lock().expect("own writes").remove(key);
    }

    /// Whether the informer still shows a Job status this controller has since replaced.
    fn stale(&self, key: &str, job: &Job) -> bool {
        let mut own = self.own_writes.lock().expect("own writes");
        let Some((replaced, since)) = own.get(key) else { return false };
        let rv = job.metadata.resource_version.as_deref().unwrap_or("");
        if replaced.contains(rv) && since.elapsed() < OWN_WRITE_WAIT {
            return true;
        }
        own.remove(key);
        false
    }

    /// Sets the `Suspended` condition after pods were managed, with its event; a resumed Job
    /// starts its deadline afresh. Whether the condition changed.
    async fn suspend_condition(&self, ctx: &mut Ctx, spec: &Spec, now: Timestamp) -> bool {
        let (status, reason, message, event, note) = if spec.suspended {
            ("True", "JobSuspended", "Job suspended", "Suspended", "Job suspended")
        } else {
            ("False", "JobResumed", "Job resumed", "Resumed", "Job resumed")
        };
        let conds = ctx.status().conditions.get_or_insert_with(Vec::new);
        let changed = conditions::ensure(conds, SUSPENDED, status, reason, message, now);
        if changed {
            if !spec.suspended {
                // The deadline counts the time a Job is continuously active.
                ctx.status().start_time = Some(Time(now));
            }
            self.recorder.record(&object_reference(&ctx.job), "Normal", event, note);
        }
        changed
    }

    /// The Job's pods: the ones it controls, after adopting matching orphans and releasing
    /// the ones that no longer match. Adopted pods get the tracking finalizer, as upstream's
    /// adoption adds it.
    async fn pods_for_job(
        &self,
        job: &Job,
        selector: &LabelSelector,
    ) -> Result<Vec<Arc<Pod>>, SyncError> {
        let namespace = job.metadata.namespace.as_deref().unwrap_or("");
        // Every pod of the namespace, not only the owned ones: orphans may be adopted.
        let candidates = self.pods.in_namespace(namespace);
        let orphans: HashSet<String> = candidates
            .iter()
            .filter(|p| controller_of(&p.metadata).is_none())
            .map(|p| uid_of(p))
            .collect();
        let job_api: Api<Job> = Api::namespaced(self.client.clone(), namespace);
        let pod_api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let labels = |p: &Pod| p.metadata.labels.clone().unwrap_or_default();
        let claimed = controller_ref::claim_releasing(
            &job_api,
            job,
            &pod_api,
            candidates,
            |p| selector.matches(&labels(p)),
            &[pods::TRACKING_FINALIZER],
        )
        .await?;
        let mut out = Vec::with_capacity(claimed.len());
        for pod in claimed {
            if !orphans.contains(&uid_of(&pod)) || pods::has_tracking_finalizer(&pod) {
                out.push(pod);
                continue;
            }
            let name = pod.metadata.name.as_deref().unwrap_or("");
            let add = if pod.metadata.finalizers.as_ref().is_none_or(Vec::is_empty) {
                json!({"op": "add", "path": "/metadata/finalizers", "value": [pods::TRACKING_FINALIZER]})
            } else {
                json!({"op": "add", "path": "/metadata/finalizers/-", "value": pods::TRACKING_FINALIZER})
            };
            // The uid test keeps the patch off a pod re-made under the same name.
            let ops = json!([{"op": "test", "path": "/metadata/uid", "value": uid_of(&pod)}, add]);
            let patch: json_patch::Patch = serde_json::from_value(ops).unwrap_or_default();
            match pod_api.patch(name, &PatchParams::default(), &Patch::<()>::Json(patch)).await {
                Ok(patched) => out.push(Arc::new(patched)),
                Err(e) if not_found(&e) => {}
                Err(e) => return Err(SyncError::Api("adding the tracking finalizer", e)),
            }
        }
        Ok(out)
    }

    /// The Job failure message of the first failed pod a `FailJob` rule matches.
    fn fail_job_message(&self, spec: &Spec, pods: &[Arc<Pod>]) -> Option<String> {
        let policy = spec.pod_failure_policy.as_ref()?;
        pods.iter()
            .filter(|p| spec.is_failed(p))
            .find_map(|p| policy::match_pod_failure_policy(Some(policy), p).fail_job)
    }

    /// Succeeded and failed indexes of an Indexed Job, and the failures and successes they
    /// amount to.
    fn index_accounting(&self, ctx: &mut Ctx, spec: &Spec, now: Timestamp) {
        let completions = spec.completions.unwrap_or(0);
        let status = ctx.status().clone();
        ctx.prev_succeeded_indexes =
            Intervals::parse(status.completed_indexes.as_deref().unwrap_or(""), completions);
        let mut new: Vec<i32> = ctx
            .pods
            .iter()
            .filter(|p| pods::succeeded(p) && pods::has_tracking_finalizer(p))
            .filter_map(|p| spec.valid_index(p))
            .collect();
        new.sort_unstable();
        new.dedup();
        ctx.succeeded_indexes = ctx.prev_succeeded_indexes.with_indexes(&new);
        ctx.succeeded = ctx.succeeded_indexes.total();
        if spec.backoff_limit_per_index.is_some() {
            let prev =
                Intervals::parse(status.failed_indexes.as_deref().unwrap_or(""), completions);
            let mut failed: Vec<i32> = ctx
                .pods
                .iter()
                .filter(|p| pods::has_tracking_finalizer(p) && index_failed(spec, p))
                .filter_map(|p| spec.valid_index(p))
                .collect();
            failed.sort_unstable();
            failed.dedup();
            let failed = prev.with_indexes(&failed);
            if ctx.finished.is_none() {
                let failure = |reason, message| {
                    Some(conditions::new_condition(FAILURE_TARGET, "True", reason, message, now))
                };
                if spec.max_failed_indexes.is_some_and(|max| failed.total() > max) {
                    ctx.finished = failure(
                        REASON_MAX_FAILED_INDEXES_EXCEEDED,
                        "Job has exceeded the specified maximal number of failed indexes",
                    );
                } else if failed.total() > 0
                    && failed.total().saturating_add(ctx.succeeded_indexes.total()) >= completions
                {
                    ctx.finished = failure(REASON_FAILED_INDEXES, "Job has failed indexes");
                }
            }
            ctx.failed_indexes = Some(failed);
            ctx.delayed_deletion = self.pods_with_delayed_deletion(ctx, spec);
        }
        if ctx.finished.is_none() {
            let met = policy::match_success_policy(
                spec.success_policy.as_ref(),
                completions,
                &ctx.succeeded_indexes,
            );
            if let Some(message) = met {
                ctx.finished = Some(conditions::new_condition(
                    SUCCESS_CRITERIA_MET,
                    "True",
                    REASON_SUCCESS_POLICY,
                    &message,
                    now,
                ));
            }
        }
    }

    /// For each index without an active pod, neither succeeded nor failed for good: its last
    /// failed pod, kept (finalizer on) until a replacement carrying its failure count exists.
    fn pods_with_delayed_deletion(&self, ctx: &Ctx, spec: &Spec) -> HashMap<i32, Arc<Pod>> {
        let active: HashSet<i32> =
            ctx.active_pods.iter().filter_map(|p| pods::completion_index(p)).collect();
        let failed_indexes = ctx.failed_indexes.clone().unwrap_or_default();
        let absolute = |p: &Pod| {
            let a = p.metadata.annotations.as_ref();
            indexes::count_annotation(a, indexes::INDEX_FAILURE_COUNT)
                .saturating_add(indexes::count_annotation(a, indexes::INDEX_IGNORED_FAILURE_COUNT))
        };
        let mut out: HashMap<i32, Arc<Pod>> = HashMap::new();
        for pod in ctx.countable(spec, None, |p| spec.is_failed(p)) {
            let Some(index) = spec.valid_index(pod) else { continue };
            if ctx.succeeded_indexes.has(index)
                || failed_indexes.has(index)
                || active.contains(&index)
            {
                continue;
            }
            let newer = out.get(&index).is_none_or(|last| {
                absolute(last) <= absolute(pod)
                    && backoff::finished_time(pod) >= backoff::finished_time(last)
            });
            if newer {
                out.insert(index, pod.clone());
            }
        }
        out
    }

    /// Creates or deletes pods so that the Job runs as many as it should. Returns how many
    /// are active afterwards.
    async fn manage(&self, ctx: &mut Ctx, spec: &Spec) -> (i32, Result<(), ManageError>) {
        let mut active = count(ctx.active_pods.len());
        let key = ctx.key.clone();
        if spec.suspended {
            let doomed = pods::active_pods_for_removal(
                &ctx.active_pods,
                spec.indexed_completions(),
                ctx.active_pods.len(),
            );
            return self.delete_surplus(ctx, &key, &doomed, active).await;
        }
        let want = wanted_active(spec, active, ctx.succeeded);
        let surplus = usize::try_from(active - want).unwrap_or(0);
        let mut doomed =
            pods::active_pods_for_removal(&ctx.active_pods, spec.indexed_completions(), surplus);
        doomed.truncate(MAX_POD_CREATE_DELETE_PER_SYNC);
        if !doomed.is_empty() {
            // Deleting takes precedence: one or the other per sync.
            tracing::debug!(job = key, deleting = doomed.len(), want, "too many pods running");
            return self.delete_surplus(ctx, &key, &doomed, active).await;
        }
        // With podReplacementPolicy Failed, terminating pods still hold their place.
        let terminating = if spec.only_replace_failed { ctx.terminating } else { 0 };
        let missing = want - terminating - active;
        if missing <= 0 {
            return (active, Ok(()));
        }
        if spec.backoff_limit_per_index.is_none() {
            let wait = ctx.new_backoff.remaining(Timestamp::now());
            if !wait.is_zero() {
                tracing::debug!(job = key, ?wait, "waiting out the pod failure back-off");
                self.queue.add_after(key, wait.max(SYNC_BATCH_PERIOD));
                return (active, Ok(()));
            }
        }
        let mut creations =
            usize::try_from(missing).unwrap_or(0).min(MAX_POD_CREATE_DELETE_PER_SYNC);
        let mut to_create: Vec<Option<i32>> = vec![None; creations];
        if let Some(completions) = spec.indexed_completions() {
            let mut pending = self.first_pending_indexes(ctx, spec, creations, completions);
            if spec.backoff_limit_per_index.is_some() {
                let (ready, wait) = self.indexes_ready_to_create(ctx, &pending);
                if !wait.is_zero() {
                    self.queue.add_after(key, wait.max(SYNC_BATCH_PERIOD));
                    return (active, Ok(()));
                }
                pending = ready;
            }
            creations = pending.len();
            to_create = pending.into_iter().map(Some).collect();
        }
        if creations == 0 {
            return (active, Ok(()));
        }
        tracing::debug!(job = key, creating = creations, want, "too few pods running");
        self.expectations.expect(&key, i64::try_from(creations).unwrap_or(i64::MAX), 0);
        active = active.saturating_add(count(creations));
        let job = &ctx.job;
        let template = pods::base_template(job, spec.indexed);
        let name = job.metadata.name.as_deref().unwrap_or("");
        let namespace = job.metadata.namespace.as_deref().unwrap_or("");
        let owner = controller_ref::owner_reference(job);
        let target = object_reference(job);
        let pod_api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let mut queue = to_create.into_iter();
        let mut first_error = None;
        for batch in slow_start_batches(creations) {
            let attempts: Vec<_> = queue
                .by_ref()
                .take(batch)
                .map(|index| {
                    let index = index.map(|index| IndexOf {
                        index,
                        failures: spec.backoff_limit_per_index.map(|_| {
                            index_failure_counts(
                                spec,
                                ctx.delayed_deletion.get(&index).map(|p| &**p),
                            )
                        }),
                    });
                    let pod = pods::new_pod(&template, name, namespace, owner.clone(), index);
                    self.create_pod(&target, pod, &pod_api)
                })
                .collect();
            let results = futures::future::join_all(attempts).await;
            for result in results {
                if let Err(e) = result {
                    // The informer will not see this pod.
                    self.expectations.creation_observed(&key);
                    active -= 1;
                    first_error.get_or_insert(e);
                }
            }
            if first_error.is_some() {
                // Slow start: the pods not tried are not expected either; a later sync retries.
                let skipped = queue.len();
                for _ in 0..skipped {
                    self.expectations.creation_observed(&key);
                }
                active -= count(skipped);
                break;
            }
        }
        (active, first_error.map_or(Ok(()), Err))
    }

    /// Deletes surplus active pods (their finalizer first: pods deleted on purpose are not
    /// failures), expecting the deletions.
    async fn delete_surplus(
        &self,
        ctx: &mut Ctx,
        key: &str,
        doomed: &[Arc<Pod>],
        active: i32,
    ) -> (i32, Result<(), ManageError>) {
        self.expectations.expect(key, 0, i64::try_from(doomed.len()).unwrap_or(i64::MAX));
        let target = object_reference(&ctx.job);
        let namespace = ctx.job.metadata.namespace.clone().unwrap_or_default();
        let pod_api: Api<Pod> = Api::namespaced(self.client.clone(), &namespace);
        let deletes = doomed.iter().map(|pod| {
            let (pod_api, target) = (&pod_api, &target);
            async move {
                let name = pod.metadata.name.as_deref().unwrap_or("");
                let failed = |e: kube::Error| {
                    // The informer will not see this deletion.
                    self.expectations.deletion_observed(key);
                    if not_found(&e) {
                        Ok(())
                    } else {
                        Err(e)
                    }
                };
                if pods::has_tracking_finalizer(pod) {
                    let patch = remove_finalizer_patch();
                    if let Err(e) = pod_api
                        .patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
                        .await
                    {
                        return failed(e).map_err(|e| {
                            ManageError::Failed(format!(
                                "removing completion finalizer: {}",
                                message(&e)
                            ))
                        });
                    }
                }
                self.delete_pod(target, pod_api, name).await.or_else(failed).map_err(|e| {
                    ManageError::Failed(format!("unable to delete pods: {}", message(&e)))
                })
            }
        });
        let results = futures::future::join_all(deletes).await;
        let mut removed = 0;
        let mut removed_ready = 0;
        let mut first_error = None;
        for (pod, result) in doomed.iter().zip(results) {
            match result {
                Ok(()) => {
                    removed += 1;
                    if pods::is_ready(pod) {
                        removed_ready += 1;
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        ctx.terminating += removed;
        ctx.ready -= removed_ready;
        (active - removed, first_error.map_or(Ok(()), Err))
    }

    /// Deletes the active pods of a finishing Job, keeping their finalizers so that they are
    /// counted. Returns the ready and all pods deleted.
    async fn delete_active_pods(
        &self,
        job: &Job,
        doomed: &[Arc<Pod>],
    ) -> (i32, i32, Result<(), ManageError>) {
        let target = object_reference(job);
        let namespace = job.metadata.namespace.clone().unwrap_or_default();
        let pod_api: Api<Pod> = Api::namespaced(self.client.clone(), &namespace);
        let deletes = doomed.iter().map(|pod| {
            let name = pod.metadata.name.as_deref().unwrap_or("");
            self.delete_pod(&target, &pod_api, name)
        });
        let results = futures::future::join_all(deletes).await;
        let (mut deleted, mut deleted_ready, mut first_error) = (0, 0, None);
        for (pod, result) in doomed.iter().zip(results) {
            match result {
                Ok(()) => deleted += 1,
                Err(e) if not_found(&e) => deleted += 1,
                Err(e) => {
                    first_error.get_or_insert(ManageError::Failed(format!(
                        "unable to delete pods: {}",
                        message(&e)
                    )));
                    continue;
                }
            }
            if pods::is_ready(pod) {
                deleted_ready += 1;
            }
        }
        (deleted_ready, deleted, first_error.map_or(Ok(()), Err))
    }

    /// Deletes one pod with its events, as client-go's `PodControl`: a pod already gone is
    /// an error without event.
    async fn delete_pod(
        &self,
        target: &ObjectReference,
        pod_api: &Api<Pod>,
        name: &str,
    ) -> Result<(), kube::Error> {
        match pod_api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                tracing::debug!(job = ?target.name, pod = name, "deleted pod");
                let note = format!("Deleted pod: {name}");
                self.recorder.record(target, "Normal", "SuccessfulDelete", &note);
                Ok(())
            }
            Err(e) if not_found(&e) => Err(e),
            Err(e) => {
                let note = format!("Error deleting: {}", message(&e));
                self.recorder.record(target, "Warning", "FailedDelete", &note);
                Err(e)
            }
        }
    }

    async fn create_pod(
        &self,
        target: &ObjectReference,
        pod: Pod,
        pod_api: &Api<Pod>,
    ) -> Result<(), ManageError> {
        match pod_control::create(pod_api, &self.recorder, target, &pod).await {
            Ok(_) => Ok(()),
            Err(CreateError::NamespaceTerminating(m)) => Err(ManageError::NamespaceTerminating(m)),
            Err(CreateError::Failed(m)) => Err(ManageError::Failed(m)),
        }
    }

    /// The first `count` indexes that have no active pod and neither succeeded nor failed
    /// (nor, with podReplacementPolicy Failed, a terminating pod).
    fn first_pending_indexes(
        &self,
        ctx: &Ctx,
        spec: &Spec,
        count: usize,
        completions: i32,
    ) -> Vec<i32> {
        let mut taken = ctx.succeeded_indexes.with_indexes(&sorted_indexes(ctx.active_pods.iter()));
        if spec.only_replace_failed {
            let terminating = sorted_indexes(ctx.pods.iter().filter(|p| pods::is_terminating(p)));
            taken = taken.with_indexes(&terminating);
        }
        if let Some(failed) = &ctx.failed_indexes {
            taken = taken.merge(failed);
        }
        indexes::first_pending(count, completions, &taken)
    }

    /// With `backoffLimitPerIndex`: the indexes whose own back-off passed, or, if none did,
    /// how long until the first one does.
    fn indexes_ready_to_create(&self, ctx: &Ctx, pending: &[i32]) -> (Vec<i32>, Duration) {
        let now = Timestamp::now();
        let mut ready = Vec::new();
        let mut soonest: Option<Duration> = None;
        for index in pending {
            let wait = ctx.delayed_deletion.get(index).map_or(Duration::ZERO, |last| {
                let a = last.metadata.annotations.as_ref();
                let failures = indexes::count_annotation(a, indexes::INDEX_FAILURE_COUNT)
                    .saturating_add(indexes::count_annotation(
                        a,
                        indexes::INDEX_IGNORED_FAILURE_COUNT,
                    ))
                    .saturating_add(1);
                backoff::remaining(failures, Some(backoff::finished_time(last)), now)
            });
            if wait.is_zero() {
                ready.push(*index);
            } else {
                soonest = Some(soonest.map_or(wait, |s| s.min(wait)));
            }
        }
        if !ready.is_empty() {
            return (ready, Duration::ZERO);
        }
        (ready, soonest.unwrap_or(Duration::ZERO))
    }

    /// Whether a finished pod's finalizer may go: always once the Job is going away or
    /// finishing, or the pod succeeded; for a failed pod, unless it is kept until its index
    /// has a replacement.
    fn can_remove_finalizer(&self, ctx: &Ctx, spec: &Spec, pod: &Pod, failed: bool) -> bool {
        if ctx.job.metadata.deletion_timestamp.is_some()
            || ctx.finished.is_some()
            || pods::succeeded(pod)
        {
            return true;
        }
        if !failed {
            return false;
        }
        if spec.backoff_limit_per_index.is_some() {
            if let Some(index) = pods::completion_index(pod) {
                let kept = ctx.delayed_deletion.get(&index);
                if kept.is_some_and(|p| p.metadata.uid == pod.metadata.uid) {
                    return false;
                }
            }
        }
        true
    }

    /// Counts finished pods into the status and removes their finalizers, in upstream's two
    /// phases: (1) new finished pods into `uncountedTerminatedPods` (and the interim
    /// condition, if finishing) written; (2) their finalizers removed; (3) the pods whose
    /// finalizer is gone moved into the counters, and the terminal condition added once
    /// nothing is left uncounted or terminating, written.
    async fn track(
        &self,
        ctx: &mut Ctx,
        spec: &Spec,
        mut needs_flush: bool,
    ) -> Result<(), SyncError> {
        let mut pods = ctx.pods.clone();
        if spec.indexed {
            // Completed indexes come in order.
            pods.sort_by_key(|p| pods::completion_index(p).unwrap_or(-1));
        }
        let mut with_finalizer: HashSet<String> = pods
            .iter()
            .filter(|p| pods::has_tracking_finalizer(p))
            .map(|p| uid_of(p))
            .filter(|uid| !ctx.expected_removals.contains(uid))
            .collect();
        if clean_uncounted(ctx.status(), &with_finalizer) {
            needs_flush = true;
        }
        let failing = ctx
            .finished
            .as_ref()
            .is_some_and(|c| !(c.type_ == SUCCESS_CRITERIA_MET && c.status == "True"));
        let mut to_release: Vec<Arc<Pod>> = Vec::new();
        let mut new_succeeded_indexes: Vec<i32> = Vec::new();
        let mut reached_max = false;
        for pod in &pods {
            let uid = uid_of(pod);
            if !pods::has_tracking_finalizer(pod) || ctx.expected_removals.contains(&uid) {
                // Counted in an earlier sync.
                continue;
            }
            let failed = spec.is_failed(pod);
            if !self.can_remove_finalizer(ctx, spec, pod, failed) {
                continue;
            }
            to_release.push(pod.clone());
            if pods::succeeded(pod) && !ctx.uncounted_failed.contains(&uid) {
                if spec.indexed {
                    // The index is enough not to count a success twice.
                    if let Some(index) = spec.valid_index(pod) {
                        if !ctx.prev_succeeded_indexes.has(index) {
                            new_succeeded_indexes.push(index);
                            needs_flush = true;
                        }
                    }
                } else if !ctx.uncounted_succeeded.contains(&uid) {
                    needs_flush = true;
                    ctx.uncounted().succeeded.get_or_insert_with(Vec::new).push(uid.clone());
                }
            } else if failed || failing {
                // A finishing Job counts every pod it did not see succeed as failed.
                let index_ok = !spec.indexed || spec.valid_index(pod).is_some();
                if !ctx.uncounted_failed.contains(&uid) && index_ok {
                    let policy = spec.pod_failure_policy.as_ref();
                    if policy::match_pod_failure_policy(policy, pod).counts {
                        needs_flush = true;
                        ctx.uncounted().failed.get_or_insert_with(Vec::new).push(uid.clone());
                    }
                }
            }
            let uncounted = ctx.uncounted();
            let listed = uncounted.succeeded.as_ref().map_or(0, Vec::len)
                + uncounted.failed.as_ref().map_or(0, Vec::len)
                + new_succeeded_indexes.len();
            if listed >= MAX_UNCOUNTED_PODS {
                // The status would grow too large, and big Jobs would starve the others: the
                // status and pod updates queue the Job again for the rest.
                reached_max = true;
                break;
            }
        }
        if spec.indexed {
            new_succeeded_indexes.sort_unstable();
            ctx.succeeded_indexes = ctx.succeeded_indexes.with_indexes(&new_succeeded_indexes);
            let completed = ctx.succeeded_indexes.to_string();
            let total = ctx.succeeded_indexes.total();
            let failed_indexes = ctx.failed_indexes.as_ref().map(Intervals::to_string);
            let status = ctx.status();
            if completed != status.completed_indexes.clone().unwrap_or_default() {
                needs_flush = true;
            }
            status.succeeded = Some(total);
            status.completed_indexes = Some(completed);
            if status.failed_indexes != failed_indexes {
                status.failed_indexes = failed_indexes;
                needs_flush = true;
            }
        }
        let now_ts = now();
        if let Some(finished) = ctx.finished.clone() {
            let conds = ctx.status().conditions.get_or_insert_with(Vec::new);
            if finished.type_ == FAILURE_TARGET {
                // Written before the finalizers go, so the failure is known should we crash.
                conds.push(finished.clone());
                needs_flush = true;
                ctx.finished = Some(conditions::terminal_for(&finished, now_ts));
            } else if finished.type_ == SUCCESS_CRITERIA_MET && finished.status == "True" {
                if conditions::find_true(conds, SUCCESS_CRITERIA_MET).is_none() {
                    conds.push(finished.clone());
                    needs_flush = true;
                }
                ctx.finished = Some(conditions::terminal_for(&finished, now_ts));
            }
        }
        needs_flush =
            self.flush_and_release(ctx, &to_release, &mut with_finalizer, needs_flush).await?;
        let finished = !reached_max && self.enact_finished(ctx);
        if finished {
            needs_flush = true;
        }
        if needs_flush {
            ctx.job = self
                .write_status(ctx)
                .await
                .map_err(|e| SyncError::Api("removing uncounted pods from status", e))?;
            if finished {
                self.record_finished(ctx).await;
            }
        }
        Ok(())
    }

    /// Phase (1) and (2) of [`track`](Controller::track): writes the status if it changed,
    /// removes the finalizers, moves the pods released into the counters. Whether the status
    /// still needs writing.
    async fn flush_and_release(
        &self,
        ctx: &mut Ctx,
        to_release: &[Arc<Pod>],
        with_finalizer: &mut HashSet<String>,
        mut needs_flush: bool,
    ) -> Result<bool, SyncError> {
        if needs_flush {
            ctx.job = self
                .write_status(ctx)
                .await
                .map_err(|e| SyncError::Api("adding uncounted pods to status", e))?;
            self.backoffs
                .lock()
                .expect("backoffs")
                .insert(ctx.key.clone(), ctx.new_backoff.clone());
            needs_flush = false;
        }
        let mut release_error = None;
        if !to_release.is_empty() {
            let (released, error) = self.remove_tracking_finalizers(&ctx.key, to_release).await;
            for uid in released {
                with_finalizer.remove(&uid);
            }
            release_error = error;
        }
        if clean_uncounted(ctx.status(), with_finalizer) {
            needs_flush = true;
        }
        if let Some(e) = release_error {
            // Keep what was done: the pods released are counted.
            if needs_flush {
                ctx.job = self
                    .write_status(ctx)
                    .await
                    .map_err(|e| SyncError::Api("removing uncounted pods from status", e))?;
            }
            return Err(SyncError::Api("removing tracking finalizers", e));
        }
        Ok(needs_flush)
    }

    /// Removes the tracking finalizer from the pods; a pod already gone counts as released.
    /// Returns the uids released and the first error.
    async fn remove_tracking_finalizers(
        &self,
        key: &str,
        pods: &[Arc<Pod>],
    ) -> (Vec<String>, Option<kube::Error>) {
        self.finalizers.expect(key, pods.iter().map(|p| uid_of(p)));
        let patch = remove_finalizer_patch();
        let removals = pods.iter().map(|pod| {
            let patch = &patch;
            async move {
                let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
                let name = pod.metadata.name.as_deref().unwrap_or("");
                let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
                match api.patch(name, &PatchParams::default(), &Patch::Strategic(patch)).await {
                    Ok(_) => Ok(()),
                    Err(e) => {
                        // No update will show this removal.
                        self.finalizers.observed(key, &uid_of(pod));
                        if not_found(&e) {
                            Ok(())
                        } else {
                            Err(e)
                        }
                    }
                }
            }
        });
        let results = futures::future::join_all(removals).await;
        let mut released = Vec::new();
        let mut first_error = None;
        for (pod, result) in pods.iter().zip(results) {
            match result {
                Ok(()) => released.push(uid_of(pod)),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        (released, first_error)
    }

    /// Adds the terminal condition (and `completionTime`) once every pod is counted and none
    /// is terminating. Whether the Job finished.
    fn enact_finished(&self, ctx: &mut Ctx) -> bool {
        let Some(finished) = ctx.finished.clone() else { return false };
        let uncounted = ctx.uncounted();
        let left = uncounted.succeeded.as_ref().map_or(0, Vec::len)
            + uncounted.failed.as_ref().map_or(0, Vec::len);
        if left > 0 {
            tracing::debug!(job = ctx.key, left, "not finished yet: pods left uncounted");
            return false;
        }
        if ctx.terminating > 0 {
            tracing::debug!(
                job = ctx.key,
                terminating = ctx.terminating,
                "not finished yet: pods terminating"
            );
            return false;
        }
        let at = finished.last_transition_time.as_ref().map_or_else(now, |t| t.0);
        let status = ctx.status();
        let conds = status.conditions.get_or_insert_with(Vec::new);
        conditions::ensure(
            conds,
            &finished.type_,
            &finished.status,
            finished.reason.as_deref().unwrap_or(""),
            finished.message.as_deref().unwrap_or(""),
            at,
        );
        if finished.type_ == COMPLETE {
            status.completion_time = Some(Time(at));
        }
        true
    }

    async fn record_finished(&self, ctx: &Ctx) {
        let Some(finished) = &ctx.finished else { return };
        let target = object_reference(&ctx.job);
        if finished.type_ == COMPLETE {
            let completions = ctx.job.spec.as_ref().and_then(|s| s.completions);
            let succeeded = ctx.job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0);
            if completions.is_some_and(|c| succeeded > c) {
                let note = "Too many succeeded pods running after completion count reached";
                self.recorder.record(&target, "Warning", "TooManySucceededPods", note);
            }
            self.recorder.record(&target, "Normal", "Completed", "Job completed");
        } else if finished.type_ == FAILED {
            let reason = finished.reason.as_deref().unwrap_or("");
            let note = finished.message.as_deref().unwrap_or("");
            self.recorder.record(&target, "Warning", reason, note);
        }
    }

    /// Replaces the Job's status with `ctx.job`'s through `/status`; a concurrent change is a
    /// conflict, retried by a later sync on a fresh copy.
    async fn write_status(&self, ctx: &mut Ctx) -> Result<Job, kube::Error> {
        normalize(ctx.status());
        let job = &ctx.job;
        let namespace = job.metadata.namespace.as_deref().unwrap_or("");
        let name = job.metadata.name.as_deref().unwrap_or("");
        let api: Api<Job> = Api::namespaced(self.client.clone(), namespace);
        let written = api.replace_status(name, &PostParams::default(), job).await?;
        if let Some(rv) = job.metadata.resource_version.clone() {
            let mut own = self.own_writes.lock().expect("own writes");
            let entry =
                own.entry(ctx.key.clone()).or_insert_with(|| (HashSet::new(), Instant::now()));
            entry.0.insert(rv);
            entry.1 = Instant::now();
        }
        Ok(written)
    }

    /// The pods a finished Job still holds with its finalizer go to the orphan worker.
    fn release_finished_pods(&self, job: &Job) {
        let uid = job.metadata.uid.as_deref().unwrap_or("");
        let namespace = job.metadata.namespace.as_deref();
        let owned = self.pods.owned_by(uid).into_iter().filter(|p| {
            p.metadata.namespace.as_deref() == namespace
                && pods::has_tracking_finalizer(p)
                && controller_of(&p.metadata).is_some_and(|c| c.uid == uid)
        });
        for pod in owned {
            let name = pod.metadata.name.as_deref().unwrap_or("");
            self.orphans.add(format!("{}/{name}", namespace.unwrap_or("")));
        }
    }

    /// Removes the tracking finalizer from a pod no Job sync will: its Job is gone or
    /// finished, or it has none.
    async fn sync_orphan(&self, key: &str) -> Result<(), kube::Error> {
        let Some((namespace, name)) = key.split_once('/') else { return Ok(()) };
        let Some(pod) = self.pods.get(&ObjectRef::new(name).within(namespace)) else {
            return Ok(());
        };
        if let Some(controller) = controller_of(&pod.metadata) {
            if controller.kind != "Job" || controller.api_version != "batch/v1" {
                // Not ours to touch.
                return Ok(());
            }
            if let Some(job) = self.resolve(namespace, controller) {
                if managed_elsewhere(&job).is_some() || !conditions::is_finished(&job) {
                    return Ok(());
                }
            }
        }
        if !pods::has_tracking_finalizer(&pod) {
            return Ok(());
        }
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let patch = remove_finalizer_patch();
        match api.patch(name, &PatchParams::default(), &Patch::Strategic(&patch)).await {
            Ok(_) => Ok(()),
            Err(e) if not_found(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The Job a pod's controller reference names, if it is one in the cache (same kind,
    /// same uid).
    fn resolve(&self, namespace: &str, controller: &OwnerReference) -> Option<Arc<Job>> {
        if controller.kind != "Job" {
            return None;
        }
        let job = self.jobs.get(&ObjectRef::new(&controller.name).within(namespace))?;
        (job.metadata.uid.as_deref() == Some(controller.uid.as_str())).then_some(job)
    }
}

#[cfg(test)]
mod tests;
