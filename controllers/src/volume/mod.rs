//! The persistent volume controllers, as kube-controller-manager's:
//!
//! - `persistentvolume-binder-controller` ([`binder`]): binds claims to volumes (by class,
//!   size, access modes, selector, `volumeName` and pre-bound `claimRef`s), keeps both sides'
//!   phases, hands claims to external provisioners (`volume.kubernetes.io/storage-provisioner`)
//!   and leaves WaitForFirstConsumer claims to the scheduler until it picks a node; a released
//!   volume is kept (`Retain`) or deleted (`Delete`).
//! - `persistentvolumeclaim-protection-controller` ([`pvc_protection`]): a claim being
//!   deleted keeps its `kubernetes.io/pvc-protection` finalizer while a scheduled pod uses it.
//! - `persistentvolume-protection-controller` ([`pv_protection`]): a volume being deleted
//!   keeps its `kubernetes.io/pv-protection` finalizer while it is bound.
//!
//! How released volumes are deleted is [`reclaim`]. The matching rules themselves live in [`rkube_apis::persistent_volumes`], which the
//! scheduler's `VolumeBinding` plugin shares. Pods are found by the claims they use through
//! the shared pod informer's [`POD_CLAIMS`] index.

use k8s_openapi::api::core::v1::Pod;

pub mod binder;
pub mod pv_protection;
pub mod pvc_protection;
pub mod reclaim;

/// The index of pods by the claims their volumes name, as `namespace/claim`.
pub const POD_CLAIMS: &str = "pvc";

/// The [`POD_CLAIMS`] index function.
pub fn pod_claim_keys(pod: &Pod) -> Vec<String> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_deref()).unwrap_or(&[]);
    let mut keys: Vec<String> = volumes
        .iter()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| format!("{namespace}/{}", c.claim_name))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Whether the pod is done with its volumes for good (upstream's `IsPodTerminated`): it
/// succeeded or failed, or it is being deleted and none of its containers runs.
pub fn pod_terminated(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return true;
    }
    let running = status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()));
    pod.metadata.deletion_timestamp.is_some() && !running
}

/// `namespace/name`, the key claims are queued and indexed by.
pub fn claim_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pods_are_indexed_by_their_claims() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [], "volumes": [
                {"name": "a", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "b", "emptyDir": {}},
                {"name": "c", "persistentVolumeClaim": {"claimName": "data", "readOnly": true}},
                {"name": "d", "persistentVolumeClaim": {"claimName": "logs"}}
            ]}
        }))
        .unwrap();
        assert_eq!(pod_claim_keys(&pod), ["ns/data", "ns/logs"]);
        assert!(!pod_terminated(&pod));
        let done: Pod =
            serde_json::from_value(json!({"metadata": {}, "status": {"phase": "Succeeded"}}))
                .unwrap();
        assert!(pod_terminated(&done));
    }
}
