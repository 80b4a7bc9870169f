//! Defaults of `storage.k8s.io/v1` (`pkg/apis/storage/v1/defaults.go` upstream): StorageClasses,
//! CSIDrivers and VolumeAttachments.

use serde_json::{json, Value};

use super::{default, field, is_empty_list};

/// A StorageClass's defaults.
pub fn storage_class(obj: &mut Value) {
    default(obj, "reclaimPolicy", json!("Delete"));
    default(obj, "volumeBindingMode", json!("Immediate"));
}

/// A CSIDriver's defaults.
pub fn csi_driver(obj: &mut Value) {
    field(obj, "spec").into_iter().for_each(csi_driver_spec)
}

/// A VolumeAttachment's defaults: an inline (migrated in-tree) volume gets its volume
/// source's core defaults.
pub fn volume_attachment(obj: &mut Value) {
    let source = field(obj, "spec").and_then(|s| field(s, "source"));
    if let Some(pv) = source.and_then(|s| field(s, "inlineVolumeSpec")) {
        super::core::volume_plugins(pv);
    }
}

/// A CSI driver needs attaching, gets no pod info, publishes no capacity, is never
/// republished, serves persistent volumes, applies fsGroup for ReadWriteOnce volumes with a
/// filesystem type, and does not mount with SELinux contexts (SELinuxMountReadWriteOncePod is
/// on in 1.33).
fn csi_driver_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default(spec, "attachRequired", json!(true));
    default(spec, "podInfoOnMount", json!(false));
    default(spec, "storageCapacity", json!(false));
    default(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    if is_empty_list(spec.get("volumeLifecycleModes")) {
        spec["volumeLifecycleModes"] = json!(["Persistent"]);
    }
    default(spec, "requiresRepublish", json!(false));
    default(spec, "seLinuxMount", json!(false));
}

#[cfg(test)]
mod tests {
    use super::super::test_support::defaulted_in as defaulted;
    use super::*;

    #[test]
    fn storage_classes_and_csi_drivers() {
        let class = defaulted(
            "storage.k8s.io",
            "v1",
            "storageclasses",
            json!({"metadata": {"name": "standard"}, "provisioner": "example.com/disk"}),
        );
        assert_eq!(
            class,
            json!({"metadata": {"name": "standard"}, "provisioner": "example.com/disk",
                "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"})
        );
        let driver = defaulted(
            "storage.k8s.io",
            "v1",
            "csidrivers",
            json!({"spec": {"attachRequired": false}}),
        );
        assert_eq!(
            driver["spec"],
            json!({"attachRequired": false, "podInfoOnMount": false, "storageCapacity": false,
                "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
                "requiresRepublish": false, "seLinuxMount": false})
        );
        let driver = defaulted(
            "storage.k8s.io",
            "v1",
            "csidrivers",
            json!({"spec": {"volumeLifecycleModes": ["Ephemeral"], "fsGroupPolicy": "File"}}),
        );
        assert_eq!(driver["spec"]["volumeLifecycleModes"], json!(["Ephemeral"]));
        assert_eq!(driver["spec"]["fsGroupPolicy"], "File");
    }

    #[test]
    fn volume_attachments_default_only_an_inline_volume() {
        let attachment = json!({"spec": {"attacher": "a", "nodeName": "n", "source": {"persistentVolumeName": "pv"}}});
        assert_eq!(
            defaulted("storage.k8s.io", "v1", "volumeattachments", attachment.clone()),
            attachment
        );
        let attachment = defaulted(
            "storage.k8s.io",
            "v1",
            "volumeattachments",
            json!({"spec": {"source": {"inlineVolumeSpec": {"azureDisk": {"diskName": "d", "diskURI": "u"},
                "capacity": {"storage": "1Gi"}}}}}),
        );
        assert_eq!(
            attachment["spec"]["source"]["inlineVolumeSpec"],
            json!({"azureDisk": {"diskName": "d", "diskURI": "u", "cachingMode": "ReadWrite",
                "kind": "Shared", "fsType": "ext4", "readOnly": false}, "capacity": {"storage": "1Gi"}})
        );
    }
}
