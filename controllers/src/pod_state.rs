//! What the workload controllers read off a pod, one definition for all of them: whether it
//! still counts (not finished, not being deleted), whether it is ready, and whether it has
//! been ready long enough to be available (upstream's `IsPodActive`, `IsPodReady`,
//! `IsPodAvailable`).

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// Whether the pod still counts: not finished and not being deleted.
pub fn is_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    !matches!(phase, Some("Succeeded" | "Failed")) && pod.metadata.deletion_timestamp.is_none()
}

/// The pod's `Ready` condition when it is `True`.
fn ready_condition(pod: &Pod) -> Option<&PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == "True")
}

/// Whether the pod has the condition `Ready=True`.
pub fn is_ready(pod: &Pod) -> bool {
    ready_condition(pod).is_some()
}

/// Since when the pod is ready: the `Ready` condition's lastTransitionTime (`None` when the pod
/// is not ready or the time is missing).
pub fn ready_since(pod: &Pod) -> Option<Timestamp> {
    ready_condition(pod)?.last_transition_time.as_ref().map(|t| t.0)
}

/// Whether the pod has been ready for more than `min_ready_seconds` at `now`.
pub fn is_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    if !is_ready(pod) {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    ready_since(pod).is_some_and(|since| {
        since
            .checked_add(SignedDuration::from_secs(i64::from(min_ready_seconds)))
            .is_ok_and(|at| at < now)
    })
}
