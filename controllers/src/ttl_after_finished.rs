//! The `ttl-after-finished-controller`, as kube-controller-manager's: deletes a finished Job
//! (condition `Complete` or `Failed` is `True`) once `spec.ttlSecondsAfterFinished` has passed
//! since it finished, its pods with it.
//!
//! Start at [`run`]: it watches Jobs and queues (`namespace/name`) every finished Job with a
//! TTL that is not being deleted. A sync (`Controller::process`) works out the expiry with
//! [`expiry`]; before it, the Job is queued again for that moment; after it, the Job is read
//! fresh from the API server (its TTL may have changed since the cache saw it), checked
//! again, and deleted with a precondition on its uid, so a Job made again under the same
//! name is never the one deleted. The delete uses foreground propagation, as upstream's: the
//! Job stays visible, being deleted, until the garbage collector has removed its pods.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Preconditions, PropagationPolicy};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_runtime::store::Store;
use tokio::task::JoinSet;

use rkube_runtime::informer::{self, Change};
use rkube_runtime::workqueue::WorkQueue;

/// The longest back-off of a Job whose cleanup keeps failing (client-go's default).
const MAX_BACKOFF: Duration = Duration::from_secs(1000);
/// The longest one sync may take before it is retried.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs the controller with `workers` concurrent syncs until the task is aborted.
pub async fn run(client: Client, workers: usize) {
    let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
    let (jobs, _watch) =
        informer::start(Api::<Job>::all(client.clone()), watcher::Config::default(), vec![tx]);
    if jobs.wait_until_ready().await.is_err() {
        return;
    }
    let ctl = Arc::new(Controller { client, jobs, queue: WorkQueue::new(MAX_BACKOFF) });
    let mut tasks = JoinSet::new();
    for _ in 0..workers.max(1) {
        tasks.spawn(work(ctl.clone()));
    }
    tracing::info!(workers, "ttl-after-finished-controller started");
    while let Some(change) = changes.recv().await {
        let Change::Object { namespace, name } = change else { continue };
        let namespace = namespace.unwrap_or_default();
        let Some(job) = ctl.jobs.get(&ObjectRef::new(&name).within(&namespace)) else { continue };
        if job.metadata.deletion_timestamp.is_none() && needs_cleanup(&job) {
            ctl.queue.add(format!("{namespace}/{name}"));
        }
    }
    ctl.queue.shut_down();
}

struct Controller {
    client: Client,
    jobs: Store<Job>,
    queue: WorkQueue<String>,
}

/// When a Job's TTL runs out, or why it cannot be told.
#[derive(Debug, Clone, PartialEq)]
pub enum Expiry {
    /// Not a candidate: no TTL, not finished, or already being deleted.
    Never,
    /// The TTL runs out at this time.
    At(Timestamp),
}

/// Whether a Job has a TTL and has finished.
fn needs_cleanup(job: &Job) -> bool {
    job.spec.as_ref().is_some_and(|s| s.ttl_seconds_after_finished.is_some())
        && finish_condition(job).is_some()
}

/// The `Complete` or `Failed` condition that is `True`.
fn finish_condition(job: &Job) -> Option<&k8s_openapi::api::batch::v1::JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
}

/// When `job`'s TTL runs out: the finish time (the finishing condition's
/// `lastTransitionTime`, else `status.completionTime`) plus `ttlSecondsAfterFinished`. An
/// error when a finished Job tells no finish time.
pub fn expiry(job: &Job) -> Result<Expiry, String> {
    if job.metadata.deletion_timestamp.is_some() || !needs_cleanup(job) {
        return Ok(Expiry::Never);
    }
    let ttl = job.spec.as_ref().and_then(|s| s.ttl_seconds_after_finished).unwrap_or(0);
    let finished = finish_condition(job)
        .and_then(|c| c.last_transition_time.as_ref())
        .or_else(|| job.status.as_ref()?.completion_time.as_ref())
        .map(|t| t.0)
        .ok_or_else(|| {
            format!(
                "unable to find the time when the Job {}/{} finished",
                job.metadata.namespace.as_deref().unwrap_or(""),
                job.metadata.name.as_deref().unwrap_or("")
            )
        })?;
    let at = finished.as_nanosecond() + i128::from(ttl) * 1_000_000_000;
    Ok(Expiry::At(Timestamp::from_nanosecond(at).unwrap_or(Timestamp::MAX)))
}

/// How long until `at`; `None` once it has passed.
pub fn time_left(at: Timestamp, now: Timestamp) -> Option<Duration> {
    let left = at.as_nanosecond() - now.as_nanosecond();
    (left > 0).then(|| Duration::from_nanos(u64::try_from(left).unwrap_or(u64::MAX)))
}

/// Why a sync failed (it is retried with a back-off).
#[derive(Debug, thiserror::Error)]
enum SyncError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("{0}")]
    Job(String),
}

async fn work(ctl: Arc<Controller>) {
    let sync = |key: String| {
        let ctl = ctl.clone();
        async move { ctl.process(&key).await.map(|()| None) }
    };
    ctl.queue.work("ttl-after-finished-controller", SYNC_TIMEOUT, sync, |_: &SyncError| false).await
}

impl Controller {
    /// Deletes the Job `key` if its TTL has run out, else queues it for when it will.
    async fn process(&self, key: &str) -> Result<(), SyncError> {
        let Some((namespace, name)) = key.split_once('/') else { return Ok(()) };
        let Some(cached) = self.jobs.get(&ObjectRef::new(name).within(namespace)) else {
            return Ok(());
        };
        if !self.expired(key, &cached)? {
            return Ok(());
        }
        // The cache may be behind: someone may have raised the TTL, or made the Job again.
        let api: Api<Job> = Api::namespaced(self.client.clone(), namespace);
        let Some(fresh) = api.get_opt(name).await? else { return Ok(()) };
        if !self.expired(key, &fresh)? {
            return Ok(());
        }
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Foreground),
            preconditions: Some(Preconditions {
                uid: fresh.metadata.uid.clone(),
                ..Default::default()
            }),
            ..DeleteParams::default()
        };
        tracing::debug!(key, "deleting job: its ttlSecondsAfterFinished has passed");
        match api.delete(name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether `job`'s TTL has run out; if it will later, the Job is queued for then.
    fn expired(&self, key: &str, job: &Job) -> Result<bool, SyncError> {
        let Expiry::At(at) = expiry(job).map_err(SyncError::Job)? else { return Ok(false) };
        let now = Timestamp::now();
        match time_left(at, now) {
            None => Ok(true),
            Some(left) => {
                self.queue.add_after(key.to_string(), left);
                Ok(false)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn job(ttl: Option<i32>, status: serde_json::Value) -> Job {
        serde_json::from_value(json!({
            "metadata": {"name": "pi", "namespace": "default", "uid": "u1"},
            "spec": {"ttlSecondsAfterFinished": ttl, "template": {}},
            "status": status,
        }))
        .unwrap()
    }

    fn complete_at(t: &str) -> serde_json::Value {
        json!({"conditions": [
            {"type": "Complete", "status": "True", "lastTransitionTime": t}
        ], "completionTime": "2000-01-01T00:00:00Z"})
    }

    #[test]
    fn expiry_is_the_finish_time_plus_the_ttl() {
        let finished = job(Some(100), complete_at("2024-01-01T10:00:00Z"));
        assert_eq!(expiry(&finished), Ok(Expiry::At(ts("2024-01-01T10:01:40Z"))));
        let failed = job(
            Some(0),
            json!({"conditions": [
                {"type": "FailureTarget", "status": "True", "lastTransitionTime": "2024-01-01T09:00:00Z"},
                {"type": "Failed", "status": "True", "lastTransitionTime": "2024-01-01T09:00:05Z"}
            ]}),
        );
        assert_eq!(expiry(&failed), Ok(Expiry::At(ts("2024-01-01T09:00:05Z"))));
        // Without the condition's time, the completion time.
        let no_transition = job(
            Some(10),
            json!({"conditions": [{"type": "Complete", "status": "True"}],
                   "completionTime": "2024-01-01T08:00:00Z"}),
        );
        assert_eq!(expiry(&no_transition), Ok(Expiry::At(ts("2024-01-01T08:00:10Z"))));
        let no_time =
            job(Some(10), json!({"conditions": [{"type": "Complete", "status": "True"}]}));
        assert_eq!(
            expiry(&no_time),
            Err("unable to find the time when the Job default/pi finished".into())
        );
    }

    #[test]
    fn only_finished_jobs_with_a_ttl_that_are_not_being_deleted_expire() {
        assert_eq!(expiry(&job(None, complete_at("2024-01-01T10:00:00Z"))), Ok(Expiry::Never));
        let running = job(Some(0), json!({"active": 1}));
        assert_eq!(expiry(&running), Ok(Expiry::Never));
        let not_yet = job(
            Some(0),
            json!({"conditions": [{"type": "Complete", "status": "False",
                                   "lastTransitionTime": "2024-01-01T10:00:00Z"}]}),
        );
        assert_eq!(expiry(&not_yet), Ok(Expiry::Never));
        let mut deleting = job(Some(0), complete_at("2024-01-01T10:00:00Z"));
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts("2024-01-01T10:00:01Z")));
        assert_eq!(expiry(&deleting), Ok(Expiry::Never));
    }

    #[test]
    fn time_left_until_expiry() {
        let at = ts("2024-01-01T10:01:40Z");
        assert_eq!(time_left(at, ts("2024-01-01T10:00:00Z")), Some(Duration::from_secs(100)));
        assert_eq!(time_left(at, ts("2024-01-01T10:01:39.5Z")), Some(Duration::from_millis(500)));
        assert_eq!(time_left(at, at), None);
        assert_eq!(time_left(at, ts("2024-01-02T00:00:00Z")), None);
    }
}
