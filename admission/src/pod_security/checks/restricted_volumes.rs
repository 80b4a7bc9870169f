//! `restrictedVolumes` (restricted): only volume types that carry no host or network
//! storage access of their own (configMap, csi, downwardAPI, emptyDir, ephemeral, image,
//! persistentVolumeClaim, projected, secret). It replaces the baseline hostPath check.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Volume;

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{join_quote, pluralize, Pod};

use super::host_path_volumes;

pub const CHECK: Check = Check {
    id: "restrictedVolumes",
    level: Level::Restricted,
    versions: &[Versioned { since: 0, check: v1_0, overrides: &[host_path_volumes::ID] }],
};

fn allowed(v: &Volume) -> bool {
    v.config_map.is_some()
        || v.csi.is_some()
        || v.downward_api.is_some()
        || v.empty_dir.is_some()
        || v.ephemeral.is_some()
        || v.image.is_some()
        || v.persistent_volume_claim.is_some()
        || v.projected.is_some()
        || v.secret.is_some()
}

/// The restricted type of a volume, as upstream names it.
fn restricted_type(v: &Volume) -> &'static str {
    let types = [
        (v.host_path.is_some(), "hostPath"),
        (v.gce_persistent_disk.is_some(), "gcePersistentDisk"),
        (v.aws_elastic_block_store.is_some(), "awsElasticBlockStore"),
        (v.git_repo.is_some(), "gitRepo"),
        (v.nfs.is_some(), "nfs"),
        (v.iscsi.is_some(), "iscsi"),
        (v.glusterfs.is_some(), "glusterfs"),
        (v.rbd.is_some(), "rbd"),
        (v.flex_volume.is_some(), "flexVolume"),
        (v.cinder.is_some(), "cinder"),
        (v.cephfs.is_some(), "cephfs"),
        (v.flocker.is_some(), "flocker"),
        (v.fc.is_some(), "fc"),
        (v.azure_file.is_some(), "azureFile"),
        (v.vsphere_volume.is_some(), "vsphereVolume"),
        (v.quobyte.is_some(), "quobyte"),
        (v.azure_disk.is_some(), "azureDisk"),
        (v.photon_persistent_disk.is_some(), "photonPersistentDisk"),
        (v.portworx_volume.is_some(), "portworxVolume"),
        (v.scale_io.is_some(), "scaleIO"),
        (v.storageos.is_some(), "storageos"),
    ];
    types.into_iter().find(|(set, _)| *set).map_or("unknown", |(_, name)| name)
}

fn v1_0(pod: &Pod) -> Option<Violation> {
    let bad: Vec<&Volume> = pod.spec.volumes.iter().flatten().filter(|v| !allowed(v)).collect();
    (!bad.is_empty()).then(|| {
        let names: Vec<&str> = bad.iter().map(|v| v.name.as_str()).collect();
        let types: Vec<&str> =
            bad.iter().map(|v| restricted_type(v)).collect::<BTreeSet<_>>().into_iter().collect();
        Violation::new(
            "restricted volume types",
            format!(
                "{} {} {} {} {}",
                pluralize("volume", "volumes", names.len()),
                join_quote(&names),
                pluralize("uses", "use", names.len()),
                pluralize("restricted volume type", "restricted volume types", types.len()),
                join_quote(&types)
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_security::checks::{pod, said};
    use serde_json::json;

    #[test]
    fn only_the_allowed_volume_types() {
        let p = pod(json!({"spec": {"volumes": [
            {"name": "cm", "configMap": {"name": "x"}},
            {"name": "h", "hostPath": {"path": "/"}},
            {"name": "n", "nfs": {"server": "s", "path": "/"}},
            {"name": "g", "gitRepo": {"repository": "r"}},
            {"name": "h2", "hostPath": {"path": "/x"}},
            {"name": "pvc", "persistentVolumeClaim": {"claimName": "c"}},
            {"name": "e", "emptyDir": {}},
            {"name": "s", "secret": {"secretName": "s"}},
            {"name": "p", "projected": {"sources": []}},
            {"name": "d", "downwardAPI": {}},
            {"name": "csi", "csi": {"driver": "d"}},
            {"name": "eph", "ephemeral": {}},
            {"name": "img", "image": {"reference": "r"}},
        ]}}));
        assert_eq!(
            said(v1_0(&p)).as_deref(),
            Some("restricted volume types (volumes \"h\", \"n\", \"g\", \"h2\" use restricted volume types \"gitRepo\", \"hostPath\", \"nfs\")")
        );
        let one = pod(json!({"spec": {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}}));
        assert_eq!(
            said(v1_0(&one)).as_deref(),
            Some("restricted volume types (volume \"h\" uses restricted volume type \"hostPath\")")
        );
        // A source rkube does not know of is "unknown".
        let unknown = pod(json!({"spec": {"volumes": [{"name": "u", "somethingNew": {}}]}}));
        assert_eq!(
            said(v1_0(&unknown)).as_deref(),
            Some("restricted volume types (volume \"u\" uses restricted volume type \"unknown\")")
        );
        assert_eq!(v1_0(&pod(json!({"spec": {"volumes": [{"name": "e", "emptyDir": {}}]}}))), None);
    }
}
