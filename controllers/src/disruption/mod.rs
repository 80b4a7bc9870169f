//! The disruption controller, as kube-controller-manager's `disruption-controller`: keeps
//! each PodDisruptionBudget's status (`currentHealthy`, `desiredHealthy`, `expectedPods`,
//! `disruptionsAllowed`, `observedGeneration`, the `DisruptionAllowed` condition) in line
//! with the pods it selects, which is what the `pods/eviction` handler of the API server
//! reads before it lets a pod go. It also drops the disruptions the eviction handler recorded
//! (`status.disruptedPods`) once the pod is seen being deleted or two minutes passed, and
//! sets back to `False` a pod's `DisruptionTarget` condition that stayed two minutes without
//! the pod being deleted.
//!
//! Start at [`run`]: informers for budgets (and, for their scale, ReplicationControllers,
//! ReplicaSets, Deployments and StatefulSets; pods come shared), a work queue of budget keys
//! fed by budget and pod changes, and one worker (as upstream) syncing a budget at a time
//! (`Controller::sync`). The counting is pure, in [`budget`]; the controllers' scale is
//! found by [`scale`]. A budget whose status cannot be worked out gets `disruptionsAllowed:
//! 0` and the condition `False` with reason `SyncFailed` (upstream's fail-safe), so that no
//! eviction passes on a guess.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, PodCondition, ReplicationController};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_apis::selectors::labels::LabelSelector;
use rkube_runtime::events::{object_reference, pod_reference, Recorder};
use rkube_runtime::informer::{self, Change};
use rkube_runtime::store::Store;
use rkube_runtime::workqueue::WorkQueue;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

pub mod budget;
pub mod scale;

use budget::CountError;
use scale::{Finders, ScaleError};

/// The component events name (upstream's disruption controller records as this).
const COMPONENT: &str = "controllermanager";
const NAME: &str = "disruption-controller";
/// The longest back-off of a failing key (client-go's default limiter's cap).
const MAX_BACKOFF: Duration = Duration::from_secs(1000);
/// A sync that takes longer is abandoned and retried (an API call hung).
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a pod may keep a `DisruptionTarget` condition without being deleted.
const STALE_DISRUPTION_TIMEOUT: SignedDuration = SignedDuration::from_secs(120);

/// Why a sync failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error(transparent)]
    Count(#[from] CountError<ScaleError>),
    #[error("{0}")]
    Selector(String),
    #[error(transparent)]
    Encode(#[from] serde_json::Error),
}

impl Error {
    /// A write raced another (a stale cache): retried, never worth the fail-safe.
    fn is_conflict(&self) -> bool {
        matches!(self, Error::Api(kube::Error::Api(s)) if s.code == 409)
    }
}

/// Runs the controller until the task is aborted. `pods` is a shared, synced informer's
/// store and `pod_changes` its changes.
pub async fn run(
    client: Client,
    pods: Store<Pod>,
    mut pod_changes: mpsc::UnboundedReceiver<Change>,
) {
    let (budget_tx, mut budget_changes) = mpsc::unbounded_channel();
    let (budgets, _budget_watch) = informer::start(
        Api::<PodDisruptionBudget>::all(client.clone()),
        watcher::Config::default(),
        vec![budget_tx],
    );
    let (rcs, _rc_watch) = informer::start(
        Api::<ReplicationController>::all(client.clone()),
        watcher::Config::default(),
        Vec::new(),
    );
    let (replica_sets, _rs_watch) = informer::start(
        Api::<ReplicaSet>::all(client.clone()),
        watcher::Config::default(),
        Vec::new(),
    );
    let (deployments, _deployment_watch) = informer::start(
        Api::<Deployment>::all(client.clone()),
        watcher::Config::default(),
        Vec::new(),
    );
    let (sets, _set_watch) = informer::start(
        Api::<StatefulSet>::all(client.clone()),
        watcher::Config::default(),
        Vec::new(),
    );
    for ready in [
        budgets.wait_until_ready().await,
        rcs.wait_until_ready().await,
        replica_sets.wait_until_ready().await,
        deployments.wait_until_ready().await,
        sets.wait_until_ready().await,
        pods.wait_until_ready().await,
    ] {
        if ready.is_err() {
            return;
        }
    }
    let ctl = Arc::new(Controller {
        recorder: Recorder::new(client.clone(), COMPONENT),
        finders: Finders::new(client.clone(), rcs, replica_sets, deployments, sets),
        client,
        budgets,
        pods,
        queue: WorkQueue::new(MAX_BACKOFF),
        stale: WorkQueue::new(MAX_BACKOFF),
    });
    tracing::info!("disruption controller started");
    let mut tasks = JoinSet::new();
    tasks.spawn(work(ctl.clone()));
    tasks.spawn(work_stale(ctl.clone()));
    loop {
        tokio::select! {
            Some(change) = budget_changes.recv() => {
                let (objects, synced) = informer::drain(change, &mut budget_changes);
                for (namespace, name) in objects {
                    ctl.queue.add(format!("{}/{name}", namespace.unwrap_or_default()));
                }
                if synced {
                    ctl.enqueue_all();
                }
            }
            Some(change) = pod_changes.recv() => {
                let (objects, synced) = informer::drain(change, &mut pod_changes);
                for (namespace, name) in objects {
                    ctl.pod_changed(&namespace.unwrap_or_default(), &name);
                }
                if synced {
                    ctl.enqueue_all();
                }
            }
            else => break,
        }
    }
    ctl.queue.shut_down();
    ctl.stale.shut_down();
}

struct Controller {
    client: Client,
    recorder: Recorder,
    budgets: Store<PodDisruptionBudget>,
    pods: Store<Pod>,
    finders: Finders,
    /// Budget keys (`namespace/name`) to sync.
    queue: WorkQueue<String>,
    /// Pod keys whose `DisruptionTarget` condition may have gone stale.
    stale: WorkQueue<String>,
}

/// The budget worker, until the queue shuts down.
async fn work(ctl: Arc<Controller>) {
    let sync = |key: String| {
        let ctl = ctl.clone();
        async move { ctl.sync(&key).await }
    };
    ctl.queue.work(NAME, SYNC_TIMEOUT, sync, Error::is_conflict).await
}

/// The worker of stale `DisruptionTarget` conditions.
async fn work_stale(ctl: Arc<Controller>) {
    let sync = |key: String| {
        let ctl = ctl.clone();
        async move { ctl.sync_stale(&key).await }
    };
    let routine = |e: &kube::Error| matches!(e, kube::Error::Api(s) if s.code == 409);
    ctl.stale.work(NAME, SYNC_TIMEOUT, sync, routine).await
}

fn split(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("", key))
}

/// A budget's selector (`null` selects nothing; `{}` every pod of its namespace).
fn selector(pdb: &PodDisruptionBudget) -> Result<LabelSelector, Error> {
    let selector = pdb.spec.as_ref().and_then(|s| s.selector.as_ref());
    let value = serde_json::to_value(selector).unwrap_or_default();
    LabelSelector::from_api(&value).map_err(|e| Error::Selector(e.to_string()))
}

fn labels(pod: &Pod) -> BTreeMap<String, String> {
    pod.metadata.labels.clone().unwrap_or_default()
}

impl Controller {
    fn enqueue_all(&self) {
        for pdb in self.budgets.state() {
            self.queue.add(key_of(&pdb.metadata));
        }
    }

    /// A pod changed: its budgets are synced again (every budget of its namespace when it is
    /// gone, its labels with it), and a stale `DisruptionTarget` condition is looked after.
    fn pod_changed(&self, namespace: &str, name: &str) {
        let Some(pod) = self.pods.get(&ObjectRef::new(name).within(namespace)) else {
            for pdb in self.budgets.in_namespace(namespace) {
                self.queue.add(key_of(&pdb.metadata));
            }
            return;
        };
        let matching: Vec<_> = self
            .budgets
            .in_namespace(namespace)
            .into_iter()
            .filter(|pdb| selector(pdb).is_ok_and(|s| s.matches(&labels(&pod))))
            .collect();
        if matching.len() > 1 {
            let chosen = matching[0].metadata.name.as_deref().unwrap_or("");
            let message = format!(
                "Pod {namespace:?}/{name:?} matches multiple PodDisruptionBudgets.  Chose {chosen:?} arbitrarily."
            );
            self.recorder.record(
                &pod_reference(&pod),
                "Warning",
                "MultiplePodDisruptionBudgets",
                &message,
            );
        }
        for pdb in &matching {
            self.queue.add(key_of(&pdb.metadata));
        }
        if let Some(wait) = stale_disruption_wait(&pod, Timestamp::now()) {
            self.stale.add_after(format!("{namespace}/{name}"), wait);
        }
    }

    /// Syncs one budget; asks to be synced again when a recorded disruption times out.
    async fn sync(&self, key: &str) -> Result<Option<Duration>, Error> {
        let (namespace, name) = split(key);
        let Some(pdb) = self.budgets.get(&ObjectRef::new(name).within(namespace)) else {
            return Ok(None);
        };
        match self.try_sync(&pdb).await {
            Err(e) if e.is_conflict() => Err(e),
            Err(e) => {
                tracing::warn!(budget = key, error = %e, "cannot work out the budget's status");
                self.fail_safe(&pdb, &e).await.map(|()| None)
            }
            ok => ok,
        }
    }

    async fn try_sync(&self, pdb: &PodDisruptionBudget) -> Result<Option<Duration>, Error> {
        let reference = object_reference(pdb);
        let namespace = pdb.metadata.namespace.as_deref().unwrap_or("");
        let selector = selector(pdb).inspect_err(|e| {
            let message = format!("Failed to get pods: {e}");
            self.recorder.record(&reference, "Warning", "NoPods", &message);
        })?;
        let mut pods: Vec<Arc<Pod>> = self
            .pods
            .in_namespace(namespace)
            .into_iter()
            .filter(|pod| selector.matches(&labels(pod)))
            .collect();
        pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        if pods.is_empty() {
            self.recorder.record(&reference, "Normal", "NoPods", "No matching pods found");
        }
        let expected = budget::expected_pod_count(pdb, pods.len(), async || {
            self.finders.expected_scale(&pods).await
        })
        .await
        .inspect_err(|e| {
            let message = format!("Failed to calculate the number of expected pods: {e}");
            self.recorder.record(
                &reference,
                "Warning",
                "CalculateExpectedPodCountFailed",
                &message,
            );
        })?;
        if !expected.unmanaged.is_empty() {
            tracing::debug!(pods = ?expected.unmanaged, "unmanaged pods selected by a budget");
            let shown = serde_json::to_value(pdb.spec.as_ref().and_then(|s| s.selector.as_ref()))
                .unwrap_or_default();
            let message = format!(
                "Pods selected by this PodDisruptionBudget (selector: {}) were found to be unmanaged. \
                 As a result, the status of the PDB cannot be calculated correctly, which may result in \
                 undefined behavior. To account for these pods please set \".spec.minAvailable\" field \
                 of the PDB to an integer value.",
                rkube_apis::selectors::labels::go_string(Some(&shown))
            );
            self.recorder.record(&reference, "Warning", "UnmanagedPods", &message);
        }
        let now = Timestamp::now();
        let (disrupted, recheck, not_deleted) = budget::disrupted_pods(&pods, pdb, now);
        for pod in not_deleted {
            // Upstream's message names the budget's namespace twice (a slip kept as is).
            let message = format!(
                "Pod was expected by PDB {namespace}/{namespace} to be deleted but it wasn't"
            );
            self.recorder.record(&pod_reference(&pod), "Warning", "NotDeleted", &message);
        }
        let healthy = budget::healthy_pods(&pods, &disrupted, now);
        if let Some(status) = budget::new_status(pdb, healthy, &expected, disrupted) {
            let mut updated = pdb.clone();
            let mut value = serde_json::to_value(&status)?;
            rkube_apis::kinds::policy::update_disruption_allowed_condition(
                &mut value,
                &now_text(now),
            );
            updated.status = Some(serde_json::from_value(value)?);
            self.write_status(&updated).await?;
        }
        Ok(recheck.map(|at| {
            let wait = at.duration_since(now);
            Duration::try_from(wait).unwrap_or_default()
        }))
    }

    /// Upstream's fail-safe: no disruption allowed, and why in the condition.
    async fn fail_safe(&self, pdb: &PodDisruptionBudget, error: &Error) -> Result<(), Error> {
        let mut updated = pdb.clone();
        let mut status = serde_json::to_value(pdb.status.clone().unwrap_or_default())?;
        status["disruptionsAllowed"] = serde_json::json!(0);
        let generation = status["observedGeneration"].as_i64().filter(|g| *g != 0);
        rkube_apis::kinds::policy::set_condition(
            &mut status,
            rkube_apis::kinds::policy::DISRUPTION_ALLOWED,
            "False",
            "SyncFailed",
            &error.to_string(),
            generation,
            &now_text(Timestamp::now()),
        );
        updated.status = Some(serde_json::from_value(status)?);
        if updated.status == pdb.status {
            return Ok(());
        }
        self.write_status(&updated).await
    }

    async fn write_status(&self, pdb: &PodDisruptionBudget) -> Result<(), Error> {
        let namespace = pdb.metadata.namespace.as_deref().unwrap_or("");
        let name = pdb.metadata.name.as_deref().unwrap_or("");
        let api: Api<PodDisruptionBudget> = Api::namespaced(self.client.clone(), namespace);
        api.replace_status(name, &PostParams::default(), pdb).await?;
        Ok(())
    }

    /// Sets a pod's stale `DisruptionTarget` condition to `False`, or waits until it is stale.
    async fn sync_stale(&self, key: &str) -> Result<Option<Duration>, kube::Error> {
        let (namespace, name) = split(key);
        let Some(pod) = self.pods.get(&ObjectRef::new(name).within(namespace)) else {
            return Ok(None);
        };
        match stale_disruption_wait(&pod, Timestamp::now()) {
            None => return Ok(None),
            Some(wait) if !wait.is_zero() => return Ok(Some(wait)),
            Some(_) => {}
        }
        let mut updated = (*pod).clone();
        let status = updated.status.get_or_insert_with(Default::default);
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        let reset = PodCondition {
            type_: "DisruptionTarget".into(),
            status: "False".into(),
            last_transition_time: Some(Time(Timestamp::now())),
            ..Default::default()
        };
        match conditions.iter_mut().find(|c| c.type_ == "DisruptionTarget") {
            Some(c) => *c = reset,
            None => return Ok(None),
        }
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        api.replace_status(name, &PostParams::default(), &updated).await?;
        tracing::info!(pod = key, "reset a stale DisruptionTarget condition to False");
        Ok(None)
    }
}

fn key_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    format!("{}/{}", meta.namespace.as_deref().unwrap_or(""), meta.name.as_deref().unwrap_or(""))
}

fn now_text(now: Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// How long until a pod's `DisruptionTarget` condition counts as stale (zero: it is), or
/// `None` when it cannot: the pod is being deleted or has finished, or the condition is not
/// `True` or is the kubelet's (which may take any time to act).
fn stale_disruption_wait(pod: &Pod, now: Timestamp) -> Option<Duration> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let status = pod.status.as_ref()?;
    if matches!(status.phase.as_deref(), Some("Succeeded" | "Failed")) {
        return None;
    }
    let condition = status.conditions.as_ref()?.iter().find(|c| c.type_ == "DisruptionTarget")?;
    if condition.status != "True" || condition.reason.as_deref() == Some("TerminationByKubelet") {
        return None;
    }
    let since = condition.last_transition_time.as_ref().map_or(now, |t| t.0);
    let left = STALE_DISRUPTION_TIMEOUT - now.duration_since(since);
    Some(Duration::try_from(left).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(condition: serde_json::Value, phase: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default"},
            "status": {"phase": phase, "conditions": [condition]},
        }))
        .unwrap()
    }

    #[test]
    fn a_disruption_target_goes_stale_after_two_minutes() {
        let now: Timestamp = "2025-01-01T00:10:00Z".parse().unwrap();
        let evicting = json!({"type": "DisruptionTarget", "status": "True",
            "reason": "EvictionByEvictionAPI", "lastTransitionTime": "2025-01-01T00:09:00Z"});
        assert_eq!(
            stale_disruption_wait(&pod(evicting.clone(), "Running"), now),
            Some(Duration::from_secs(60))
        );
        let old = json!({"type": "DisruptionTarget", "status": "True",
            "reason": "EvictionByEvictionAPI", "lastTransitionTime": "2025-01-01T00:00:00Z"});
        assert_eq!(stale_disruption_wait(&pod(old.clone(), "Running"), now), Some(Duration::ZERO));
        // Never stale: the kubelet's, a finished pod's, a False one, a pod being deleted.
        let kubelet = json!({"type": "DisruptionTarget", "status": "True",
            "reason": "TerminationByKubelet", "lastTransitionTime": "2025-01-01T00:00:00Z"});
        assert_eq!(stale_disruption_wait(&pod(kubelet, "Running"), now), None);
        assert_eq!(stale_disruption_wait(&pod(old.clone(), "Failed"), now), None);
        let off = json!({"type": "DisruptionTarget", "status": "False"});
        assert_eq!(stale_disruption_wait(&pod(off, "Running"), now), None);
        let mut deleting = pod(old, "Running");
        deleting.metadata.deletion_timestamp = Some(Time(now));
        assert_eq!(stale_disruption_wait(&deleting, now), None);
    }
}
