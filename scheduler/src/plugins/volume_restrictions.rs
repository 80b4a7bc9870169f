//! `VolumeRestrictions`: a pod may not share a node with another pod using the same disk
//! that cannot be attached twice: a GCE persistent disk or an RBD or iSCSI volume unless both
//! mount it read-only, an AWS EBS volume always (upstream's rules for in-tree volumes); and
//! a claim with the ReadWriteOncePod access mode ([`PodInfo::read_write_once_pod_claims`],
//! filled in by the scheduler from the claims it watches) serves one pod in the cluster.

use k8s_openapi::api::core::v1::Volume;

use crate::framework::{CycleState, FilterPlugin, Next, NodeInfo, PodInfo, Rejection};

pub struct VolumeRestrictions;

/// The reason upstream gives.
pub const REASON: &str = "node(s) had no available disk";
/// Upstream's reason when a ReadWriteOncePod claim is in use by another pod.
pub const REASON_READ_WRITE_ONCE_POD: &str =
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode";

const PRE_FILTER_KEY: &str = "PreFilterVolumeRestrictions";

/// How many other pods use the pod's ReadWriteOncePod claims (computed in PreFilter).
struct ClaimsInUse(usize);

/// The claim names a pod's volumes use.
fn claims(pod: &PodInfo) -> impl Iterator<Item = &str> {
    volumes(pod)
        .iter()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| c.claim_name.as_str())
}

fn volumes(pod: &PodInfo) -> &[Volume] {
    pod.pod.spec.as_ref().and_then(|s| s.volumes.as_deref()).unwrap_or(&[])
}

/// Whether the volume is of a kind that may conflict with another pod's.
fn restricted(v: &Volume) -> bool {
    v.gce_persistent_disk.is_some()
        || v.aws_elastic_block_store.is_some()
        || v.rbd.is_some()
        || v.iscsi.is_some()
}

/// Whether two volumes are the same disk and may not be used together.
fn conflict(a: &Volume, b: &Volume) -> bool {
    if let (Some(x), Some(y)) = (&a.gce_persistent_disk, &b.gce_persistent_disk) {
        let both_read_only = x.read_only.unwrap_or(false) && y.read_only.unwrap_or(false);
        return x.pd_name == y.pd_name && !both_read_only;
    }
    if let (Some(x), Some(y)) = (&a.aws_elastic_block_store, &b.aws_elastic_block_store) {
        return x.volume_id == y.volume_id;
    }
    if let (Some(x), Some(y)) = (&a.rbd, &b.rbd) {
        let shared_monitor = x.monitors.iter().any(|m| y.monitors.contains(m));
        let same_image = x.pool.as_deref().unwrap_or("rbd") == y.pool.as_deref().unwrap_or("rbd")
            && x.image == y.image;
        let both_read_only = x.read_only.unwrap_or(false) && y.read_only.unwrap_or(false);
        return shared_monitor && same_image && !both_read_only;
    }
    if let (Some(x), Some(y)) = (&a.iscsi, &b.iscsi) {
        let both_read_only = x.read_only.unwrap_or(false) && y.read_only.unwrap_or(false);
        return x.iqn == y.iqn && !both_read_only;
    }
    false
}

impl FilterPlugin for VolumeRestrictions {
    fn name(&self) -> &'static str {
        "VolumeRestrictions"
    }

    /// Nothing to check for a pod without disks of the restricted kinds or ReadWriteOncePod
    /// claims (upstream skips it); for the claims, the other pods using them, cluster-wide.
    fn pre_filter(&self, pod: &PodInfo, state: &mut CycleState<'_>) -> Result<Next, Rejection> {
        let exclusive = &pod.read_write_once_pod_claims;
        if !exclusive.is_empty() {
            let in_use = state
                .nodes
                .iter()
                .flat_map(|n| n.pods.iter())
                .filter(|other| {
                    other.namespace() == pod.namespace()
                        && other.pod.metadata.uid != pod.pod.metadata.uid
                        && claims(other).any(|c| exclusive.iter().any(|e| e == c))
                })
                .count();
            state.put(PRE_FILTER_KEY, ClaimsInUse(in_use));
            return Ok(Next::Run);
        }
        Ok(if volumes(pod).iter().any(restricted) { Next::Run } else { Next::Skip })
    }

    fn filter_with_state(
        &self,
        pod: &PodInfo,
        node: &NodeInfo,
        state: &CycleState<'_>,
    ) -> Result<(), Rejection> {
        if state.get::<ClaimsInUse>(PRE_FILTER_KEY).is_some_and(|c| c.0 > 0) {
            return Err(Rejection::new(REASON_READ_WRITE_ONCE_POD));
        }
        self.filter(pod, node)
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo) -> Result<(), Rejection> {
        let mine = volumes(pod);
        if !mine.iter().any(restricted) {
            return Ok(());
        }
        for other in &node.pods {
            for theirs in volumes(other) {
                if mine.iter().any(|v| conflict(v, theirs)) {
                    return Err(Rejection::new(REASON));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn pod(volume: serde_json::Value) -> Arc<PodInfo> {
        let pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c"}], "volumes": [volume]},
        }))
        .unwrap();
        Arc::new(PodInfo::new(Arc::new(pod)))
    }

    fn node_with(existing: Arc<PodInfo>) -> NodeInfo {
        let node = serde_json::from_value(serde_json::json!({"metadata": {"name": "n"}})).unwrap();
        let mut info = NodeInfo::new(Arc::new(node));
        info.add_pod(existing);
        info
    }

    #[test]
    fn the_same_disk_twice_conflicts_unless_both_read_only() {
        let rw = serde_json::json!({"name": "d", "gcePersistentDisk": {"pdName": "disk-1"}});
        let ro = serde_json::json!({"name": "d", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": true}});
        let other = serde_json::json!({"name": "d", "gcePersistentDisk": {"pdName": "disk-2"}});
        let node = node_with(pod(rw.clone()));
        assert_eq!(VolumeRestrictions.filter(&pod(rw), &node), Err(Rejection::new(REASON)));
        assert_eq!(VolumeRestrictions.filter(&pod(other), &node), Ok(()));
        let node = node_with(pod(ro.clone()));
        assert_eq!(VolumeRestrictions.filter(&pod(ro), &node), Ok(()));
        let ebs = serde_json::json!({"name": "e", "awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": true}});
        let node = node_with(pod(ebs.clone()));
        assert_eq!(VolumeRestrictions.filter(&pod(ebs), &node), Err(Rejection::new(REASON)));
    }

    #[test]
    fn a_read_write_once_pod_claim_serves_one_pod() {
        let claim =
            serde_json::json!({"name": "data", "persistentVolumeClaim": {"claimName": "db"}});
        let holder = pod(claim.clone());
        let elsewhere = node_with(holder);
        let empty = NodeInfo::new(Arc::new(
            serde_json::from_value(serde_json::json!({"metadata": {"name": "m"}})).unwrap(),
        ));
        let mut second = (*pod(claim)).clone();
        second.pod = Arc::new({
            let mut p = (*second.pod).clone();
            p.metadata.name = Some("second".into());
            p.metadata.uid = Some("uid-2".into());
            p
        });
        let refs = [&elsewhere, &empty];
        // Without the access mode, two pods may share the claim.
        let mut state = CycleState::new(&refs);
        assert_eq!(VolumeRestrictions.pre_filter(&second, &mut state), Ok(Next::Skip));
        second.read_write_once_pod_claims = vec!["db".into()];
        let mut state = CycleState::new(&refs);
        assert_eq!(VolumeRestrictions.pre_filter(&second, &mut state), Ok(Next::Run));
        for node in refs {
            assert_eq!(
                VolumeRestrictions.filter_with_state(&second, node, &state),
                Err(Rejection::new(REASON_READ_WRITE_ONCE_POD))
            );
        }
        // Alone in the cluster, it fits.
        let refs = [&empty];
        let mut state = CycleState::new(&refs);
        assert_eq!(VolumeRestrictions.pre_filter(&second, &mut state), Ok(Next::Run));
        assert_eq!(VolumeRestrictions.filter_with_state(&second, &empty, &state), Ok(()));
    }

    #[test]
    fn pods_without_restricted_disks_skip_the_filter() {
        let node = node_with(pod(
            serde_json::json!({"name": "d", "gcePersistentDisk": {"pdName": "disk-1"}}),
        ));
        let refs = [&node];
        let mut state = CycleState::new(&refs);
        let config = pod(serde_json::json!({"name": "c", "configMap": {"name": "settings"}}));
        assert_eq!(VolumeRestrictions.pre_filter(&config, &mut state), Ok(Next::Skip));
        assert_eq!(VolumeRestrictions.filter(&config, &node), Ok(()));
        let disk = pod(
            serde_json::json!({"name": "d", "iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:storage", "lun": 0}}),
        );
        assert_eq!(VolumeRestrictions.pre_filter(&disk, &mut state), Ok(Next::Run));
    }
}
