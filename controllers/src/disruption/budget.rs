//! What a PodDisruptionBudget's status should say, worked out from its pods: how many are
//! expected and must stay healthy (`minAvailable`, or `maxUnavailable` against the pods'
//! controllers' scale), which recorded disruptions still stand, how many pods are healthy,
//! and the status that follows, as upstream's `getExpectedPodCount`, `buildDisruptedPodMap`,
//! `countHealthyPods` and `updatePdbStatus`. Pure: the controller supplies the pods, the
//! scale and the time.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::deployment::surge::scaled_value;
use crate::pod_state;

/// How long after the eviction API recorded a disruption the pod is expected to be seen
/// being deleted; past it, the disruption is dropped and the pod counts again (upstream's
/// `DeletionTimeout`).
pub const DELETION_TIMEOUT: SignedDuration = SignedDuration::from_secs(120);

/// The number of pods expected, the number that must stay healthy, and the pods without a
/// controller (which a percentage or `maxUnavailable` cannot account for).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Expected {
    pub expected_pods: i32,
    pub desired_healthy: i32,
    pub unmanaged: Vec<String>,
}

/// Why the expected count cannot be worked out.
#[derive(Debug, thiserror::Error)]
pub enum CountError<E> {
    /// The pods' controllers' scale could not be found.
    #[error(transparent)]
    Scale(E),
    #[error("invalid value for IntOrString: {0}")]
    Value(String),
}

/// The expected and desired-healthy counts of `pdb` with `pods` selected. `scale` is asked
/// only when the rule needs the pods' controllers' scale (`maxUnavailable`, or a
/// percentage `minAvailable`): it gives their summed scale and the unmanaged pods.
pub async fn expected_pod_count<E>(
    pdb: &PodDisruptionBudget,
    pods: usize,
    scale: impl AsyncFnOnce() -> Result<(i32, Vec<String>), E>,
) -> Result<Expected, CountError<E>> {
    let spec = pdb.spec.as_ref();
    let scaled = |value: &IntOrString, total: i32| {
        scaled_value(value, total, true).map_err(|e| CountError::Value(e.to_string()))
    };
    if let Some(max_unavailable) = spec.and_then(|s| s.max_unavailable.as_ref()) {
        let (expected_pods, unmanaged) = scale().await.map_err(CountError::Scale)?;
        let unavailable = scaled(max_unavailable, expected_pods)?;
        let desired_healthy = (expected_pods - unavailable).max(0);
        return Ok(Expected { expected_pods, desired_healthy, unmanaged });
    }
    match spec.and_then(|s| s.min_available.as_ref()) {
        Some(IntOrString::Int(n)) => Ok(Expected {
            expected_pods: i32::try_from(pods).unwrap_or(i32::MAX),
            desired_healthy: *n,
            unmanaged: Vec::new(),
        }),
        Some(percent) => {
            let (expected_pods, unmanaged) = scale().await.map_err(CountError::Scale)?;
            let desired_healthy = scaled(percent, expected_pods)?;
            Ok(Expected { expected_pods, desired_healthy, unmanaged })
        }
        None => Ok(Expected::default()),
    }
}

/// When a disruption recorded at `at` stops counting.
fn expires(at: &Time) -> Timestamp {
    at.0.checked_add(DELETION_TIMEOUT).unwrap_or(Timestamp::MAX)
}

/// The recorded disruptions that still stand: those of pods not yet being deleted whose
/// [`DELETION_TIMEOUT`] has not passed. Also when to look again (the earliest of their
/// timeouts) and the pods whose timeout passed without them being deleted.
pub fn disrupted_pods(
    pods: &[Arc<Pod>],
    pdb: &PodDisruptionBudget,
    now: Timestamp,
) -> (BTreeMap<String, Time>, Option<Timestamp>, Vec<Arc<Pod>>) {
    let mut standing = BTreeMap::new();
    let mut recheck: Option<Timestamp> = None;
    let mut not_deleted = Vec::new();
    let Some(recorded) = pdb.status.as_ref().and_then(|s| s.disrupted_pods.as_ref()) else {
        return (standing, recheck, not_deleted);
    };
    for pod in pods {
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let Some(at) = recorded.get(name) else { continue };
        let expected_deletion = expires(at);
        if expected_deletion < now {
            not_deleted.push(pod.clone());
        } else {
            recheck = Some(recheck.map_or(expected_deletion, |r| r.min(expected_deletion)));
            standing.insert(name.to_string(), at.clone());
        }
    }
    (standing, recheck, not_deleted)
}

/// The pods that count as healthy: ready, not being deleted, and not disrupted within
/// the last [`DELETION_TIMEOUT`].
pub fn healthy_pods(pods: &[Arc<Pod>], disrupted: &BTreeMap<String, Time>, now: Timestamp) -> i32 {
    let count = pods
        .iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| {
            let name = pod.metadata.name.as_deref().unwrap_or("");
            disrupted.get(name).is_none_or(|at| expires(at) <= now)
        })
        .filter(|pod| pod_state::is_ready(pod))
        .count();
    i32::try_from(count).unwrap_or(i32::MAX)
}

/// The status these counts give (`disruptionsAllowed` is zero while no pod is expected, so
/// that a budget whose first pods appear before its status does is safe), or `None` when
/// the budget's status says so already.
pub fn new_status(
    pdb: &PodDisruptionBudget,
    current_healthy: i32,
    expected: &Expected,
    disrupted: BTreeMap<String, Time>,
) -> Option<PodDisruptionBudgetStatus> {
    let mut allowed = current_healthy - expected.desired_healthy;
    if expected.expected_pods <= 0 || allowed <= 0 {
        allowed = 0;
    }
    let generation = pdb.metadata.generation.unwrap_or(0);
    let old = pdb.status.clone().unwrap_or_default();
    let old_disrupted = old.disrupted_pods.clone().unwrap_or_default();
    let same = old.current_healthy == current_healthy
        && old.desired_healthy == expected.desired_healthy
        && old.expected_pods == expected.expected_pods
        && old.disruptions_allowed == allowed
        && old_disrupted == disrupted
        && old.observed_generation.unwrap_or(0) == generation
        && conditions_up_to_date(pdb);
    if same {
        return None;
    }
    Some(PodDisruptionBudgetStatus {
        current_healthy,
        desired_healthy: expected.desired_healthy,
        expected_pods: expected.expected_pods,
        disruptions_allowed: allowed,
        disrupted_pods: (!disrupted.is_empty()).then_some(disrupted),
        observed_generation: Some(generation).filter(|g| *g != 0),
        conditions: old.conditions,
    })
}

fn conditions_up_to_date(pdb: &PodDisruptionBudget) -> bool {
    serde_json::to_value(pdb)
        .is_ok_and(|pdb| rkube_apis::kinds::policy::disruption_allowed_condition_up_to_date(&pdb))
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use serde_json::json;

    use super::*;

    fn pdb(spec: serde_json::Value, status: serde_json::Value) -> PodDisruptionBudget {
        serde_json::from_value(json!({
            "metadata": {"name": "db", "namespace": "default", "generation": 1},
            "spec": spec, "status": status,
        }))
        .unwrap()
    }

    fn pod(name: &str, ready: bool, deleting: bool) -> Arc<Pod> {
        let mut pod = json!({
            "metadata": {"name": name, "namespace": "default"},
            "status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": if ready { "True" } else { "False" }}
            ]},
        });
        if deleting {
            pod["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
        }
        Arc::new(serde_json::from_value(pod).unwrap())
    }

    async fn count(spec: serde_json::Value, pods: usize, scale: i32) -> Expected {
        let pdb = pdb(spec, json!({}));
        let unmanaged = vec!["bare".to_string()];
        expected_pod_count(&pdb, pods, async || Ok::<_, Infallible>((scale, unmanaged)))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn min_available_and_max_unavailable_as_numbers_and_percentages() {
        // A number: the pods selected, whatever their controllers say.
        let e = count(json!({"minAvailable": 2}), 3, 10).await;
        assert_eq!((e.expected_pods, e.desired_healthy), (3, 2));
        assert!(e.unmanaged.is_empty(), "the scale is not asked for");
        // A percentage of the controllers' scale, rounded up.
        let e = count(json!({"minAvailable": "50%"}), 3, 5).await;
        assert_eq!((e.expected_pods, e.desired_healthy, e.unmanaged.len()), (5, 3, 1));
        // maxUnavailable rounds up what may be missing, so fewer must stay.
        let e = count(json!({"maxUnavailable": "30%"}), 3, 5).await;
        assert_eq!((e.expected_pods, e.desired_healthy), (5, 3));
        let e = count(json!({"maxUnavailable": 7}), 3, 5).await;
        assert_eq!((e.expected_pods, e.desired_healthy), (5, 0));
        let e = count(json!({}), 3, 5).await;
        assert_eq!((e.expected_pods, e.desired_healthy), (0, 0));
    }

    #[tokio::test]
    async fn a_scale_error_is_reported() {
        let pdb = pdb(json!({"maxUnavailable": 1}), json!({}));
        let err = expected_pod_count(&pdb, 1, async || Err("found no controllers for pod \"x\""))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "found no controllers for pod \"x\"");
    }

    #[test]
    fn disruptions_stand_for_two_minutes_unless_the_pod_is_being_deleted() {
        let now: Timestamp = "2025-01-01T00:10:00Z".parse().unwrap();
        let budget = pdb(
            json!({"minAvailable": 1}),
            json!({"disruptedPods": {
                "recent": "2025-01-01T00:09:00Z",
                "old": "2025-01-01T00:07:00Z",
                "going": "2025-01-01T00:09:30Z",
                "gone": "2025-01-01T00:09:30Z",
            }}),
        );
        let pods = [pod("recent", true, false), pod("old", true, false), pod("going", true, true)];
        let (standing, recheck, not_deleted) = disrupted_pods(&pods, &budget, now);
        assert_eq!(standing.keys().collect::<Vec<_>>(), ["recent"]);
        assert_eq!(recheck, Some("2025-01-01T00:11:00Z".parse().unwrap()));
        assert_eq!(not_deleted[0].metadata.name.as_deref(), Some("old"));
        // Healthy: ready, not deleting, not disrupted.
        let pods = [
            pod("recent", true, false),
            pod("old", true, false),
            pod("going", true, true),
            pod("unready", false, false),
        ];
        assert_eq!(healthy_pods(&pods, &standing, now), 1);
    }

    #[test]
    fn the_status_allows_what_is_healthy_beyond_the_desired_count() {
        let budget = pdb(json!({"minAvailable": 2}), json!({}));
        let expected = Expected { expected_pods: 3, desired_healthy: 2, unmanaged: vec![] };
        let status = new_status(&budget, 3, &expected, BTreeMap::new()).unwrap();
        assert_eq!(
            (status.current_healthy, status.desired_healthy, status.expected_pods),
            (3, 2, 3)
        );
        assert_eq!(status.disruptions_allowed, 1);
        assert_eq!(status.observed_generation, Some(1));
        assert!(status.disrupted_pods.is_none());
        // Nothing expected yet: nothing allowed, however healthy.
        let none = Expected { expected_pods: 0, desired_healthy: 0, unmanaged: vec![] };
        assert_eq!(new_status(&budget, 3, &none, BTreeMap::new()).unwrap().disruptions_allowed, 0);
        let short = new_status(&budget, 1, &expected, BTreeMap::new()).unwrap();
        assert_eq!(short.disruptions_allowed, 0);
    }

    #[test]
    fn an_up_to_date_status_is_not_written_again() {
        let status = json!({"currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3,
            "disruptionsAllowed": 1, "observedGeneration": 1,
            "conditions": [{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods",
                            "message": "", "observedGeneration": 1,
                            "lastTransitionTime": "2025-01-01T00:00:00Z"}]});
        let budget = pdb(json!({"minAvailable": 2}), status);
        let expected = Expected { expected_pods: 3, desired_healthy: 2, unmanaged: vec![] };
        assert!(new_status(&budget, 3, &expected, BTreeMap::new()).is_none());
        assert!(new_status(&budget, 2, &expected, BTreeMap::new()).is_some());
        // A new generation is observed even when the counts stay.
        let mut newer = budget.clone();
        newer.metadata.generation = Some(2);
        assert!(new_status(&newer, 3, &expected, BTreeMap::new()).is_some());
    }
}
