//! The Recreate strategy: every old ReplicaSet goes to zero, and only once none of their
//! pods runs any more is the new ReplicaSet made (or grown) to the full size, so old and new
//! pods never run together.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;

use super::progress::complete;
use super::replica_sets::{active, actual_replica_count, deployment_replicas, uid};
use super::sync::all_of;
use super::{Error, Rollout};
use crate::controller_ref::controller_of;

/// Whether an old ReplicaSet still has pods, or a pod of one (`pods` are those of the
/// Deployment's ReplicaSets) has not finished: a pod being deleted still runs.
pub(super) fn old_pods_running(
    new: Option<&ReplicaSet>,
    old: &[ReplicaSet],
    pods: &[Arc<Pod>],
) -> bool {
    if actual_replica_count(old) > 0 {
        return true;
    }
    let new_uid = new.map(uid);
    pods.iter().any(|pod| {
        let Some(owner) = controller_of(&pod.metadata) else { return false };
        if Some(owner.uid.as_str()) == new_uid {
            return false;
        }
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        // Unknown (deprecated) counts as running: it cannot be known not to be.
        !matches!(phase, Some("Succeeded" | "Failed"))
    })
}

impl Rollout<'_> {
    pub(super) async fn rollout_recreate(&mut self) -> Result<(), Error> {
        // No new ReplicaSet yet: making it now would start new pods before the old stop.
        let (new, old) = self.get_all_replica_sets_and_sync_revision(false).await?;
        let mut scaled_down = false;
        for rs in active(&old) {
            scaled_down |= self.scale_replica_set_and_record_event(&rs, 0).await?.0;
        }
        if scaled_down || old_pods_running(new.as_ref(), &self.fresh_all(&old), &self.pods()) {
            let (new, old) = (new.map(|rs| self.fresh(&rs)), self.fresh_all(&old));
            return self.sync_rollout_status(&all_of(&old, new.as_ref()), new.as_ref()).await;
        }
        let (new, old) = match new {
            Some(new) => (new, old),
            None => {
                let (new, old) = self.get_all_replica_sets_and_sync_revision(true).await?;
                (new.ok_or_else(|| Error::Invalid("no new replica set was made".into()))?, old)
            }
        };
        let replicas = deployment_replicas(&self.d);
        self.scale_replica_set_and_record_event(&new, replicas).await?;
        if self.d.status.as_ref().is_some_and(|s| complete(&self.d, s)) {
            self.cleanup_deployment(&old).await?;
        }
        let (new, old) = (self.fresh(&new), self.fresh_all(&old));
        self.sync_rollout_status(&all_of(&old, Some(&new)), Some(&new)).await
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::rs;
    use super::*;
    use k8s_openapi::api::core::v1::PodStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    fn pod(owner: &str, phase: &str) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                owner_references: Some(vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "ReplicaSet".into(),
                    name: owner.into(),
                    uid: owner.into(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]),
                ..ObjectMeta::default()
            },
            spec: None,
            status: Some(PodStatus { phase: Some(phase.into()), ..PodStatus::default() }),
        })
    }

    #[test]
    fn old_pods_block_the_new_replica_set_until_they_finish() {
        let new = rs("new", 0, 0, 2);
        let old = [rs("old", 0, 0, 1)];
        assert!(!old_pods_running(Some(&new), &old, &[]));
        // The ReplicaSet still counts pods.
        let mut counting = old.clone();
        counting[0].status.as_mut().unwrap().replicas = 1;
        assert!(old_pods_running(Some(&new), &counting, &[]));
        // A pod of its own, running, pending or unknown (deleted or not).
        for phase in ["Running", "Pending", "Unknown"] {
            assert!(old_pods_running(Some(&new), &old, &[pod("old", phase)]), "{phase}");
        }
        // Finished pods and the new ReplicaSet's pods do not count.
        let finished = [pod("old", "Succeeded"), pod("old", "Failed"), pod("new", "Running")];
        assert!(!old_pods_running(Some(&new), &old, &finished));
        assert!(old_pods_running(None, &old, &[pod("new", "Running")]));
    }
}
