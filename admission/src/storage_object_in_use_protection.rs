//! `StorageObjectInUseProtection`: new PersistentVolumeClaims get the
//! `kubernetes.io/pvc-protection` finalizer and new PersistentVolumes the
//! `kubernetes.io/pv-protection` one, so that a claim in use by a pod, or a bound volume, is
//! not removed under it (the protection controllers remove the finalizers once it is safe).

use rkube_apis::persistent_volumes::{PVC_PROTECTION_FINALIZER, PV_PROTECTION_FINALIZER};
use serde_json::{json, Value};

use crate::attributes::{Attributes, Operation};
use crate::error::AdmissionError;
use crate::state::ClusterState;
use crate::MutatingPlugin;

pub const NAME: &str = "StorageObjectInUseProtection";

pub struct StorageObjectInUseProtection;

/// Adds `finalizer` to the object's finalizers unless it is there.
fn add_finalizer(object: &mut Value, finalizer: &str) {
    if !object["metadata"].is_object() {
        object["metadata"] = json!({});
    }
    let meta = &mut object["metadata"];
    if !meta["finalizers"].is_array() {
        meta["finalizers"] = json!([]);
    }
    let list = meta["finalizers"].as_array_mut().expect("an array");
    if !list.iter().any(|f| f == finalizer) {
        list.push(json!(finalizer));
    }
}

#[async_trait::async_trait]
impl MutatingPlugin for StorageObjectInUseProtection {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn admit(
        &self,
        a: &mut Attributes<'_>,
        _: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if a.operation != Operation::Create || !a.subresource.is_empty() {
            return Ok(());
        }
        let finalizer = if a.is("", "persistentvolumeclaims") {
            PVC_PROTECTION_FINALIZER
        } else if a.is("", "persistentvolumes") {
            PV_PROTECTION_FINALIZER
        } else {
            return Ok(());
        };
        if let Some(object) = a.object.as_deref_mut() {
            add_finalizer(object, finalizer);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::*;
    use crate::state::Snapshot;

    async fn admit(
        resource: &str,
        subresource: &str,
        operation: Operation,
        mut object: Value,
    ) -> Value {
        let mut a = Attributes {
            operation,
            user: UserInfo::default(),
            resource: GroupVersionResource { group: "", version: "v1", resource },
            subresource,
            kind: GroupVersionKind { group: "", version: "v1", kind: "" },
            namespace: "",
            name: "x",
            object: Some(&mut object),
            old_object: None,
            dry_run: false,
            options: OperationOptions::None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        };
        StorageObjectInUseProtection.admit(&mut a, &Snapshot::default()).await.unwrap();
        object
    }

    #[tokio::test]
    async fn new_claims_and_volumes_get_their_finalizer_once() {
        let claim =
            admit("persistentvolumeclaims", "", Operation::Create, json!({"metadata": {}})).await;
        assert_eq!(claim["metadata"]["finalizers"], json!([PVC_PROTECTION_FINALIZER]));
        let volume = admit(
            "persistentvolumes",
            "",
            Operation::Create,
            json!({"metadata": {"finalizers": ["example.com/keep", PV_PROTECTION_FINALIZER]}}),
        )
        .await;
        assert_eq!(
            volume["metadata"]["finalizers"],
            json!(["example.com/keep", PV_PROTECTION_FINALIZER])
        );
        let updated =
            admit("persistentvolumeclaims", "", Operation::Update, json!({"metadata": {}})).await;
        assert!(updated["metadata"].get("finalizers").is_none());
        let status =
            admit("persistentvolumes", "status", Operation::Create, json!({"metadata": {}})).await;
        assert!(status["metadata"].get("finalizers").is_none());
        let other = admit("configmaps", "", Operation::Create, json!({"metadata": {}})).await;
        assert!(other["metadata"].get("finalizers").is_none());
    }
}
