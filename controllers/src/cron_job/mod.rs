//! The `cronjob-controller`, as kube-controller-manager's (the v2 controller): creates a Job
//! from a CronJob's `jobTemplate` each time its schedule fires, keeps `status.active`,
//! `status.lastScheduleTime` and `status.lastSuccessfulTime`, and deletes finished Jobs beyond
//! the history limits.
//!
//! Start at [`run`]: it watches CronJobs and Jobs into local stores and turns their changes
//! into CronJob keys (`namespace/name`) on a work queue; a Job is routed to the CronJob its
//! controller reference names. Each sync (`Controller::sync`) then:
//!
//! 1. deletes the oldest finished Jobs past `successfulJobsHistoryLimit` /
//!    `failedJobsHistoryLimit` ([`history_to_delete`]);
//! 2. reconciles `status.active` with the Jobs that exist (finished ones leave, missing ones
//!    too, and a succeeded Job's completion time becomes `lastSuccessfulTime`);
//! 3. unless the CronJob is suspended or being deleted, finds the most recent missed firing
//!    ([`schedule::most_recent`]), and within `startingDeadlineSeconds` and the
//!    `concurrencyPolicy` creates its Job, named for the firing ([`job_name`]) so that a retry
//!    can never make a second one;
//! 4. writes the status through `/status` when it changed, and requeues the CronJob for just
//!    after its next firing ([`schedule::requeue_after`]).
//!
//! Schedules are parsed and walked by [`rkube_apis::cron`] (through [`schedule`]), over the
//! time zones of [`zone`]: a schedule without `spec.timeZone` follows the controller
//! manager's own zone (`TZ`, else `/etc/localtime`), as upstream's does.

pub mod schedule;
pub mod zone;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{CronJob, CronJobStatus, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, PostParams, PropagationPolicy};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_runtime::store::Store;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::api_errors::{message, namespace_terminating};
use crate::controller_ref::{controller_of, owner_reference};
use rkube_runtime::events::{object_reference, Recorder};
use rkube_runtime::informer::{self, Change};
use rkube_runtime::workqueue::WorkQueue;

use schedule::{most_recent, requeue_after};

/// The component on the events this controller records.
const COMPONENT: &str = "cronjob-controller";
/// The annotation a Job gets with the firing it was made for (RFC 3339, in the CronJob's zone).
pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";
/// Past this many missed firings a warning says that something is off (clock skew, an outage).
const TOO_MANY_MISSED: i64 = 100;
/// The longest back-off of a CronJob whose sync keeps failing (client-go's default).
const MAX_BACKOFF: Duration = Duration::from_secs(1000);
/// The longest one sync may take (its API calls included) before it is retried.
const SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs the controller with `workers` concurrent syncs until the task is aborted.
pub async fn run(client: Client, workers: usize) {
    let (cron_tx, mut cron_changes) = mpsc::unbounded_channel();
    let (job_tx, mut job_changes) = mpsc::unbounded_channel();
    let (cron_jobs, _cron_watch) = informer::start(
        Api::<CronJob>::all(client.clone()),
        watcher::Config::default(),
        vec![cron_tx],
    );
    let (jobs, _job_watch) =
        informer::start(Api::<Job>::all(client.clone()), watcher::Config::default(), vec![job_tx]);
    // Changes wait in their channels meanwhile: a Job can only be routed once CronJobs are known.
    if cron_jobs.wait_until_ready().await.is_err() || jobs.wait_until_ready().await.is_err() {
        return;
    }
    let ctl = Arc::new(Controller {
        recorder: Arc::new(Recorder::new(client.clone(), COMPONENT)),
        client,
        cron_jobs,
        jobs,
        queue: WorkQueue::new(MAX_BACKOFF),
    });
    let mut tasks = JoinSet::new();
    for _ in 0..workers.max(1) {
        tasks.spawn(work(ctl.clone()));
    }
    tracing::info!(workers, "{COMPONENT} started");
    let mut watch =
        Watch { ctl: ctl.clone(), cron_jobs: HashMap::new(), job_owners: HashMap::new() };
    loop {
        tokio::select! {
            Some(change) = cron_changes.recv() => watch.cron_job_changed(change),
            Some(change) = job_changes.recv() => watch.job_changed(change),
            else => break,
        }
    }
    ctl.queue.shut_down();
}

struct Controller {
    client: Client,
    recorder: Arc<Recorder>,
    cron_jobs: Store<CronJob>,
    jobs: Store<Job>,
    queue: WorkQueue<String>,
}

/// Why a sync failed (it is retried with a back-off).
#[derive(Debug, thiserror::Error)]
enum SyncError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("{0}")]
    Other(String),
}

/// One worker: syncs keys from the queue until it shuts down.
async fn work(ctl: Arc<Controller>) {
    let sync = |key: String| {
        let ctl = ctl.clone();
        async move { ctl.sync(&key).await }
    };
    // A conflict only means the cached CronJob was behind our own last write.
    let routine =
        |e: &SyncError| matches!(e, SyncError::Api(kube::Error::Api(s)) if s.is_conflict());
    ctl.queue.work(COMPONENT, SYNC_TIMEOUT, sync, routine).await
}

/// What the event loop remembers of a CronJob, to tell a schedule change from other changes.
struct SeenCronJob {
    uid: Option<String>,
    schedule: String,
    time_zone: Option<String>,
}

/// The event loop's state: turns CronJob and Job changes into queued CronJob keys, as
/// upstream's informer handlers do with old and new objects.
struct Watch {
    ctl: Arc<Controller>,
    cron_jobs: HashMap<String, SeenCronJob>,
    /// The CronJob each Job belonged to when last seen, so its deletion can wake that CronJob.
    job_owners: HashMap<(String, String), String>,
}

impl Watch {
    fn cron_job_changed(&mut self, change: Change) {
        let Change::Object { namespace, name } = change else { return };
        let namespace = namespace.unwrap_or_default();
        let key = format!("{namespace}/{name}");
        let Some(cj) = self.ctl.cron_jobs.get(&ObjectRef::new(&name).within(&namespace)) else {
            self.cron_jobs.remove(&key);
            self.ctl.queue.add(key);
            return;
        };
        let spec = cj.spec.as_ref();
        let seen = SeenCronJob {
            uid: cj.metadata.uid.clone(),
            schedule: spec.map(|s| s.schedule.clone()).unwrap_or_default(),
            time_zone: spec.and_then(|s| s.time_zone.clone()),
        };
        let rescheduled = self.cron_jobs.get(&key).is_some_and(|old| {
            old.uid == seen.uid
                && (old.schedule != seen.schedule || old.time_zone != seen.time_zone)
        });
        self.cron_jobs.insert(key.clone(), seen);
        if !rescheduled {
            self.ctl.queue.add(key);
            return;
        }
        // A new schedule: look again when it next fires (sooner than queued, or the queued
        // time comes first and finds nothing to do).
        let spec = format_schedule(&cj);
        match schedule::parse(&spec, &zone::local()) {
            Ok(schedule) => {
                let last = last_schedule_time(&cj);
                if let Some(after) = requeue_after(&schedule, created(&cj), last, Timestamp::now())
                {
                    self.ctl.queue.add_after(key, after);
                }
            }
            Err(e) => {
                tracing::debug!(key, error = e, "unparseable schedule");
                let note = format!(
                    "unparseable schedule for cronjob: {}",
                    cj.spec.as_ref().map_or("", |s| s.schedule.as_str())
                );
                let target = object_reference(&*cj);
                self.ctl.recorder.record(&target, "Warning", "UnParseableCronJobSchedule", &note);
            }
        }
    }

    fn job_changed(&mut self, change: Change) {
        let Change::Object { namespace, name } = change else { return };
        let namespace = namespace.unwrap_or_default();
        let job = self.ctl.jobs.get(&ObjectRef::new(&name).within(&namespace));
        let owner = job.as_ref().and_then(|j| self.ctl.resolve(&namespace, &j.metadata));
        let id = (namespace, name);
        let previous = match &owner {
            Some(key) => self.job_owners.insert(id, key.clone()),
            None => self.job_owners.remove(&id),
        };
        // Wake the CronJob it left (controller reference changed, or the Job is gone) too.
        if let Some(previous) = previous.filter(|p| Some(p) != owner.as_ref()) {
            self.ctl.queue.add(previous);
        }
        if let Some(owner) = owner {
            self.ctl.queue.add(owner);
        }
    }
}

impl Controller {
    /// The key of the cached CronJob a Job's controller reference names (same name and uid).
    fn resolve(&self, namespace: &str, job: &ObjectMeta) -> Option<String> {
        let controller = controller_of(job)?;
        if controller.kind != "CronJob" {
            return None;
        }
        let cj = self.cron_jobs.get(&ObjectRef::new(&controller.name).within(namespace))?;
        (cj.metadata.uid.as_deref() == Some(controller.uid.as_str()))
            .then(|| format!("{namespace}/{}", controller.name))
    }

    /// Brings the CronJob `key` up to date (see the module docs); returns when to look again.
    async fn sync(&self, key: &str) -> Result<Option<Duration>, SyncError> {
        let Some((namespace, name)) = key.split_once('/') else { return Ok(None) };
        let Some(cached) = self.cron_jobs.get(&ObjectRef::new(name).within(namespace)) else {
            tracing::debug!(key, "cron job gone");
            return Ok(None);
        };
        let uid = cached.metadata.uid.clone().unwrap_or_default();
        // Jobs whose controller is this CronJob, labels or not.
        let mut jobs = self.jobs.owned_by(&uid);
        jobs.retain(|j| {
            j.metadata.namespace.as_deref() == Some(namespace)
                && controller_of(&j.metadata)
                    .is_some_and(|c| c.kind == "CronJob" && c.name == name && c.uid == uid)
        });
        let mut work = Work { written: cached.status.clone(), cj: cached.as_ref().clone() };
        self.cleanup_finished_jobs(&mut work.cj, &jobs).await;
        let result = self.sync_cron_job(&mut work, &jobs, Timestamp::now()).await;
        if let Err(e) = &result {
            tracing::debug!(key, error = %e, "reconciling cron job");
        }
        if normalized(&work.cj.status) != normalized(&work.written) {
            // Upstream's empty list is left out of the JSON (omitempty).
            if let Some(status) = work.cj.status.as_mut() {
                status.active = status.active.take().filter(|a| !a.is_empty());
            }
            let api: Api<CronJob> = Api::namespaced(self.client.clone(), namespace);
            api.replace_status(name, &PostParams::default(), &work.cj).await?;
        }
        result
    }

    /// Deletes finished Jobs beyond the history limits, oldest first. A limit left unset keeps
    /// every Job of its kind (the API defaults them to 3 and 1).
    async fn cleanup_finished_jobs(&self, cj: &mut CronJob, jobs: &[Arc<Job>]) {
        let spec = cj.spec.as_ref();
        let limits = [
            ("Complete", spec.and_then(|s| s.successful_jobs_history_limit)),
            ("Failed", spec.and_then(|s| s.failed_jobs_history_limit)),
        ];
        for (condition, limit) in limits {
            let Some(limit) = limit else { continue };
            let finished: Vec<&Job> = jobs
                .iter()
                .map(AsRef::as_ref)
                .filter(|j| finished_condition(j) == Some(condition))
                .collect();
            for job in history_to_delete(finished, limit) {
                self.delete_job(cj, job).await;
            }
        }
    }

    /// Upstream's `syncCronJob`: reconciles `status.active` with `jobs` and creates the Job of
    /// the most recent missed firing when one is due. Changes the status in `work` only; the
    /// caller writes it.
    async fn sync_cron_job(
        &self,
        work: &mut Work,
        jobs: &[Arc<Job>],
        now: Timestamp,
    ) -> Result<Option<Duration>, SyncError> {
        let namespace = work.cj.metadata.namespace.clone().unwrap_or_default();
        let name = work.cj.metadata.name.clone().unwrap_or_default();
        let cron_api: Api<CronJob> = Api::namespaced(self.client.clone(), &namespace);
        let job_api: Api<Job> = Api::namespaced(self.client.clone(), &namespace);

        let mut children = BTreeSet::new();
        for job in jobs {
            let job_uid = job.metadata.uid.clone().unwrap_or_default();
            let job_name = job.metadata.name.as_deref().unwrap_or("");
            children.insert(job_uid.clone());
            let found = in_active(&work.cj, &job_uid);
            let finished = finished_condition(job);
            if !found && finished.is_none() {
                // Our cached CronJob may predate the status write that listed this Job.
                let fresh = cron_api.get(&name).await?;
                if in_active(&fresh, &job_uid) {
                    work.written = fresh.status.clone();
                    work.cj = fresh;
                    continue;
                }
                let note =
                    format!("Saw a job that the controller did not create or forgot: {job_name}");
                self.event(&work.cj, "Warning", "UnexpectedJob", &note).await;
            } else if let Some(condition) = finished {
                if found {
                    remove_active(&mut work.cj, &job_uid);
                    let note = format!("Saw completed job: {job_name}, condition: {condition}");
                    self.event(&work.cj, "Normal", "SawCompletedJob", &note).await;
                }
                if condition == "Complete" {
                    let completed = job.status.as_ref().and_then(|s| s.completion_time.clone());
                    let status = work.cj.status.get_or_insert_with(Default::default);
                    let later = match (&status.last_successful_time, &completed) {
                        (None, _) => true,
                        (Some(last), Some(done)) => done.0 > last.0,
                        (Some(_), None) => false,
                    };
                    if later {
                        status.last_successful_time = completed;
                    }
                }
            }
        }

        // Active Jobs that no longer exist (checked with the API: the Job store may lag).
        for active in active_refs(&work.cj) {
            if active.uid.as_ref().is_some_and(|u| children.contains(u)) {
                continue;
            }
            let active_name = active.name.clone().unwrap_or_default();
            if job_api.get_opt(&active_name).await?.is_none() {
                let note = format!("Active job went missing: {active_name}");
                self.event(&work.cj, "Normal", "MissingJob", &note).await;
                remove_active(&mut work.cj, active.uid.as_deref().unwrap_or(""));
            }
        }

        if work.cj.metadata.deletion_timestamp.is_some() {
            return Ok(None);
        }
        let spec = work.cj.spec.clone().unwrap_or_default();
        if let Some(tz) = &spec.time_zone {
            if let Err(e) = zone::load_location(tz) {
                tracing::debug!(cron_job = name, tz, error = e, "not starting job: bad time zone");
                let note = format!("invalid timeZone: {tz:?}: {e}");
                self.event(&work.cj, "Warning", "UnknownTimeZone", &note).await;
                return Ok(None);
            }
        }
        if spec.suspend == Some(true) {
            return Ok(None);
        }
        if spec.schedule.contains("TZ") {
            let note = format!(
                "CRON_TZ or TZ used in schedule {:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
                spec.schedule
            );
            self.event(&work.cj, "Warning", "UnsupportedSchedule", &note).await;
        }
        let schedule = match schedule::parse(&format_schedule(&work.cj), &zone::local()) {
            Ok(schedule) => schedule,
            Err(e) => {
                // A user error no retry can fix: wait for the spec to change.
                let note = format!("unparseable schedule: {:?} : {e}", spec.schedule);
                self.event(&work.cj, "Warning", "UnparseableSchedule", &note).await;
                return Ok(None);
            }
        };
        let created = created(&work.cj);
        let last = last_schedule_time(&work.cj);
        let deadline = spec.starting_deadline_seconds;
        let missed = match most_recent(&schedule, created, last, deadline, now) {
            Ok(missed) => missed,
            Err(e) => {
                let note = format!("invalid schedule: {} : {e}", spec.schedule);
                self.event(&work.cj, "Warning", "InvalidSchedule", &note).await;
                return Ok(None);
            }
        };
        let Some(scheduled) = missed.most_recent else {
            // Nothing due: woken early (a change, or a restart).
            return Ok(requeue_after(&schedule, created, last, now));
        };
        if missed.count > TOO_MANY_MISSED {
            let note = "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew";
            self.event(&work.cj, "Warning", "TooManyMissedTimes", note).await;
        }
        let requeue = |cj: &CronJob| requeue_after(&schedule, created, last_schedule_time(cj), now);

        let too_late = deadline.is_some_and(|d| {
            scheduled.as_nanosecond() + i128::from(d) * 1_000_000_000 < now.as_nanosecond()
        });
        if too_late {
            let note =
                format!("Missed scheduled time to start a job: {}", zone::rfc1123z_utc(scheduled));
            self.event(&work.cj, "Warning", "MissSchedule", &note).await;
            return Ok(requeue(&work.cj));
        }
        let job_name = job_name(&name, scheduled);
        let already = active_refs(&work.cj).iter().any(|r| r.name.as_deref() == Some(&job_name))
            || last == Some(scheduled);
        if already {
            return Ok(requeue(&work.cj));
        }
        let policy = spec.concurrency_policy.as_deref().unwrap_or("Allow");
        if policy == "Forbid" && !active_refs(&work.cj).is_empty() {
            let note = "Not starting job because prior execution is running and concurrency policy is Forbid";
            self.event(&work.cj, "Normal", "JobAlreadyActive", note).await;
            return Ok(requeue(&work.cj));
        }
        if policy == "Replace" {
            for active in active_refs(&work.cj) {
                let active_name = active.name.clone().unwrap_or_default();
                let job = match job_api.get(&active_name).await {
                    Ok(job) => job,
                    Err(e) => {
                        let note = format!("Get job: {}", message(&e));
                        self.event(&work.cj, "Warning", "FailedGet", &note).await;
                        return Err(e.into());
                    }
                };
                if !self.delete_job(&mut work.cj, &job).await {
                    return Err(SyncError::Other(format!(
                        "could not replace job {namespace}/{active_name}"
                    )));
                }
            }
        }

        let job = job_from_template(&work.cj, scheduled).map_err(SyncError::Other)?;
        let made = match job_api.create(&PostParams::default(), &job).await {
            Ok(made) => {
                let note = format!("Created job {}", made.metadata.name.as_deref().unwrap_or(""));
                self.event(&work.cj, "Normal", "SuccessfulCreate", &note).await;
                made
            }
            Err(e) if namespace_terminating(&e) => return Err(e.into()),
            Err(kube::Error::Api(status)) if status.is_already_exists() => {
                // Made by an earlier sync whose status write was lost, or by someone else.
                let existing = job_api.get(&job_name).await?;
                let ours = controller_of(&existing.metadata)
                    .is_some_and(|c| Some(&c.uid) == work.cj.metadata.uid.as_ref());
                let uid = existing.metadata.uid.as_deref().unwrap_or("");
                if !ours || in_active(&work.cj, uid) {
                    return Ok(None);
                }
                tracing::info!(cron_job = name, job = job_name, "job already exists");
                existing
            }
            Err(e) => {
                let note = format!("Error creating job: {}", message(&e));
                self.event(&work.cj, "Warning", "FailedCreate", &note).await;
                return Err(e.into());
            }
        };
        let status = work.cj.status.get_or_insert_with(Default::default);
        status.active.get_or_insert_with(Vec::new).push(job_reference(&made));
        status.last_schedule_time = Some(Time(scheduled));
        Ok(requeue(&work.cj))
    }

    /// Deletes a Job (its pods in the background) and drops it from `status.active`; false
    /// when the delete failed.
    async fn delete_job(&self, cj: &mut CronJob, job: &Job) -> bool {
        let namespace = job.metadata.namespace.as_deref().unwrap_or("");
        let name = job.metadata.name.as_deref().unwrap_or("");
        let api: Api<Job> = Api::namespaced(self.client.clone(), namespace);
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        if let Err(e) = api.delete(name, &params).await {
            tracing::warn!(job = name, error = %e, "deleting job of cron job");
            let note = format!("Deleted job: {}", message(&e));
            self.event(cj, "Warning", "FailedDelete", &note).await;
            return false;
        }
        remove_active(cj, job.metadata.uid.as_deref().unwrap_or(""));
        self.event(cj, "Normal", "SuccessfulDelete", &format!("Deleted job {name}")).await;
        true
    }

    async fn event(&self, cj: &CronJob, kind: &str, reason: &str, message: &str) {
        self.recorder.record(&object_reference(cj), kind, reason, message);
    }
}

/// A CronJob being synced: the copy whose status the sync changes, and the status last read
/// from the API server with its resourceVersion (what a write would replace).
struct Work {
    cj: CronJob,
    written: Option<CronJobStatus>,
}

/// The status with an empty active list the same as none (Go's omitempty), for comparing.
fn normalized(status: &Option<CronJobStatus>) -> CronJobStatus {
    let mut status = status.clone().unwrap_or_default();
    if status.active.as_ref().is_some_and(Vec::is_empty) {
        status.active = None;
    }
    status
}

/// The schedule as the parser gets it: `spec.timeZone` becomes a `TZ=` prefix (unless the
/// schedule has its own, or the zone is unknown, which the sync reports).
fn format_schedule(cj: &CronJob) -> String {
    let Some(spec) = cj.spec.as_ref() else { return String::new() };
    match &spec.time_zone {
        Some(tz) if !spec.schedule.contains("TZ") && zone::load_location(tz).is_ok() => {
            format!("TZ={tz} {}", spec.schedule)
        }
        _ => spec.schedule.clone(),
    }
}

fn created(cj: &CronJob) -> Timestamp {
    cj.metadata.creation_timestamp.as_ref().map_or(Timestamp::UNIX_EPOCH, |t| t.0)
}

fn last_schedule_time(cj: &CronJob) -> Option<Timestamp> {
    cj.status.as_ref()?.last_schedule_time.as_ref().map(|t| t.0)
}

fn active_refs(cj: &CronJob) -> Vec<ObjectReference> {
    cj.status.as_ref().and_then(|s| s.active.clone()).unwrap_or_default()
}

fn in_active(cj: &CronJob, uid: &str) -> bool {
    active_refs(cj).iter().any(|r| r.uid.as_deref() == Some(uid))
}

fn remove_active(cj: &mut CronJob, uid: &str) {
    if let Some(active) = cj.status.as_mut().and_then(|s| s.active.as_mut()) {
        active.retain(|r| r.uid.as_deref() != Some(uid));
    }
}

/// `Complete` or `Failed` when the Job has finished (that condition is `True`).
pub fn finished_condition(job: &Job) -> Option<&'static str> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions.iter().filter(|c| c.status == "True").find_map(|c| match c.type_.as_str() {
        "Complete" => Some("Complete"),
        "Failed" => Some("Failed"),
        _ => None,
    })
}

/// The name of the Job for the firing at `scheduled`: the CronJob's name and the firing in
/// minutes since the epoch, the same on every retry.
pub fn job_name(cron_job: &str, scheduled: Timestamp) -> String {
    format!("{cron_job}-{}", scheduled.as_second() / 60)
}

/// The Job for the firing at `scheduled`: the template's labels, annotations and spec, the
/// scheduled-timestamp annotation (in `spec.timeZone`, UTC without one), the CronJob as
/// controller.
pub fn job_from_template(cj: &CronJob, scheduled: Timestamp) -> Result<Job, String> {
    let spec = cj.spec.as_ref();
    let template = spec.map(|s| &s.job_template);
    let meta = template.and_then(|t| t.metadata.as_ref());
    let tz = spec.and_then(|s| s.time_zone.as_deref()).unwrap_or("");
    let zone = zone::load_location(tz)?;
    let mut annotations = meta.and_then(|m| m.annotations.clone()).unwrap_or_default();
    annotations.insert(SCHEDULED_TIMESTAMP.to_string(), zone::rfc3339(scheduled, &zone));
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(job_name(cj.metadata.name.as_deref().unwrap_or(""), scheduled)),
            namespace: cj.metadata.namespace.clone(),
            labels: meta.and_then(|m| m.labels.clone()).filter(|l| !l.is_empty()),
            annotations: Some(annotations),
            owner_references: Some(vec![owner_reference(cj)]),
            ..ObjectMeta::default()
        },
        spec: template.and_then(|t| t.spec.clone()),
        status: None,
    })
}

/// The finished Jobs (all `Complete` or all `Failed`) to delete so that `limit` remain: the
/// ones that started first (never-started ones count as newest), by name among equals.
pub fn history_to_delete(mut finished: Vec<&Job>, limit: i32) -> Vec<&Job> {
    let keep = usize::try_from(limit).unwrap_or(0);
    if finished.len() <= keep {
        return Vec::new();
    }
    let started = |j: &Job| j.status.as_ref().and_then(|s| s.start_time.as_ref()).map(|t| t.0);
    finished.sort_by(|a, b| {
        let order = match (started(a), started(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        };
        order.then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    finished.truncate(finished.len() - keep);
    finished
}

/// A Job as `status.active` lists it (client-go's `GetReference`).
fn job_reference(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".into()),
        kind: Some("Job".into()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        resource_version: job.metadata.resource_version.clone(),
        ..ObjectReference::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::{
        CronJobSpec, JobCondition, JobSpec, JobStatus, JobTemplateSpec,
    };
    use serde_json::json;
    use std::collections::BTreeMap;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn cron_job(time_zone: Option<&str>) -> CronJob {
        serde_json::from_value(json!({
            "metadata": {"name": "backup", "namespace": "ops", "uid": "cj-uid",
                         "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {
                "schedule": "0 9 * * *",
                "timeZone": time_zone,
                "jobTemplate": {
                    "metadata": {"labels": {"app": "backup"}, "annotations": {"team": "ops"}},
                    "spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                        "containers": [{"name": "c", "image": "busybox"}]}}}
                }
            }
        }))
        .unwrap()
    }

    fn finished_job(name: &str, condition: &str, start: Option<&str>) -> Job {
        Job {
            metadata: ObjectMeta { name: Some(name.into()), ..ObjectMeta::default() },
            spec: Some(JobSpec::default()),
            status: Some(JobStatus {
                start_time: start.map(|s| Time(ts(s))),
                conditions: Some(vec![JobCondition {
                    type_: condition.into(),
                    status: "True".into(),
                    ..JobCondition::default()
                }]),
                ..JobStatus::default()
            }),
        }
    }

    #[test]
    fn job_names_are_minutes_since_the_epoch() {
        assert_eq!(job_name("hello", ts("2024-01-01T10:05:00Z")), "hello-28401725");
        // Any instant within the same minute names the same Job.
        assert_eq!(job_name("hello", ts("2024-01-01T10:05:59Z")), "hello-28401725");
        assert_eq!(job_name("hello", ts("1970-01-01T00:01:00Z")), "hello-1");
    }

    #[test]
    fn jobs_come_from_the_template() {
        let cj = cron_job(None);
        let job = job_from_template(&cj, ts("2024-03-10T09:00:00Z")).unwrap();
        assert_eq!(job.metadata.name.as_deref(), Some("backup-28501020"));
        assert_eq!(job.metadata.namespace.as_deref(), Some("ops"));
        assert_eq!(
            job.metadata.labels,
            Some(BTreeMap::from([("app".to_string(), "backup".to_string())]))
        );
        let annotations = job.metadata.annotations.unwrap();
        assert_eq!(annotations["team"], "ops");
        assert_eq!(annotations[SCHEDULED_TIMESTAMP], "2024-03-10T09:00:00Z");
        let owner = &job.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (owner.api_version.as_str(), owner.kind.as_str(), owner.name.as_str()),
            ("batch/v1", "CronJob", "backup")
        );
        assert_eq!((owner.uid.as_str(), owner.controller), ("cj-uid", Some(true)));
        assert_eq!(owner.block_owner_deletion, Some(true));
        assert_eq!(job.spec, cj.spec.unwrap().job_template.spec);
        // In the CronJob's zone when it has one.
        if zone::test_zone("Europe/Paris").is_some() {
            let cj = cron_job(Some("Europe/Paris"));
            let job = job_from_template(&cj, ts("2024-07-01T07:00:00Z")).unwrap();
            let annotations = job.metadata.annotations.unwrap();
            assert_eq!(annotations[SCHEDULED_TIMESTAMP], "2024-07-01T09:00:00+02:00");
        }
        // A template without metadata still gets the annotation and no labels.
        let mut bare = cron_job(None);
        bare.spec = Some(CronJobSpec {
            schedule: "* * * * *".into(),
            job_template: JobTemplateSpec::default(),
            ..CronJobSpec::default()
        });
        let job = job_from_template(&bare, ts("2024-03-10T09:00:00Z")).unwrap();
        assert_eq!(job.metadata.labels, None);
        assert_eq!(job.metadata.annotations.unwrap().len(), 1);
    }

    #[test]
    fn schedules_take_the_time_zone_field() {
        assert_eq!(format_schedule(&cron_job(None)), "0 9 * * *");
        assert_eq!(format_schedule(&cron_job(Some("Mars/Olympus"))), "0 9 * * *");
        if zone::test_zone("Asia/Tokyo").is_some() {
            assert_eq!(format_schedule(&cron_job(Some("Asia/Tokyo"))), "TZ=Asia/Tokyo 0 9 * * *");
        }
    }

    #[test]
    fn history_keeps_the_newest() {
        let jobs = [
            finished_job("d", "Complete", None),
            finished_job("c", "Complete", Some("2024-01-01T10:03:00Z")),
            finished_job("a", "Complete", Some("2024-01-01T10:01:00Z")),
            finished_job("b2", "Complete", Some("2024-01-01T10:02:00Z")),
            finished_job("b1", "Complete", Some("2024-01-01T10:02:00Z")),
        ];
        let names = |limit| {
            history_to_delete(jobs.iter().collect(), limit)
                .iter()
                .map(|j| j.metadata.name.clone().unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(3), ["a", "b1"]);
        assert_eq!(names(1), ["a", "b1", "b2", "c"]);
        assert_eq!(names(0), ["a", "b1", "b2", "c", "d"]);
        assert!(names(5).is_empty());
        assert!(names(10).is_empty());
    }

    #[test]
    fn finished_means_complete_or_failed_true() {
        assert_eq!(finished_condition(&finished_job("a", "Complete", None)), Some("Complete"));
        assert_eq!(finished_condition(&finished_job("a", "Failed", None)), Some("Failed"));
        assert_eq!(finished_condition(&finished_job("a", "Suspended", None)), None);
        let mut pending = finished_job("a", "Complete", None);
        pending.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
        assert_eq!(finished_condition(&pending), None);
    }

    #[test]
    fn an_empty_active_list_is_no_change() {
        let none = None;
        let empty = Some(CronJobStatus { active: Some(vec![]), ..CronJobStatus::default() });
        assert_eq!(normalized(&none), normalized(&empty));
    }
}
