//! `VolumeRestrictions`: a pod may not share a node with another pod using the same disk
//! that cannot be attached twice: a GCE persistent disk or an RBD or iSCSI volume unless both
//! mount it read-only, an AWS EBS volume always (upstream's rules for in-tree volumes). The
//! ReadWriteOncePod check on claims needs the claims themselves and is not done here.

use k8s_openapi::api::core::v1::Volume;

use crate::framework::{CycleState, FilterPlugin, Next, NodeInfo, PodInfo, Rejection};

pub struct VolumeRestrictions;

/// The reason upstream gives.
pub const REASON: &str = "node(s) had no available disk";

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

    /// Nothing to check for a pod without disks of the restricted kinds (upstream skips it).
    fn pre_filter(&self, pod: &PodInfo, _state: &mut CycleState<'_>) -> Result<Next, Rejection> {
        Ok(if volumes(pod).iter().any(restricted) { Next::Run } else { Next::Skip })
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
