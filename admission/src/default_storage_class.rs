//! `DefaultStorageClass`: a new PersistentVolumeClaim that asks for no class at all (neither
//! `spec.storageClassName`, not even `""`, nor the beta class annotation) gets the cluster's
//! default StorageClass: the one annotated `storageclass.kubernetes.io/is-default-class:
//! "true"`, the newest of several. Without a default class the claim is left alone.

use rkube_apis::persistent_volumes::{default_class_of, ANN_BETA_STORAGE_CLASS};
use rkube_apis::selectors::LabelSelector;
use serde_json::{json, Value};

use crate::attributes::{Attributes, Operation};
use crate::error::AdmissionError;
use crate::state::{ClusterState, Freshness, GroupResource};
use crate::MutatingPlugin;

pub const NAME: &str = "DefaultStorageClass";

/// StorageClasses.
pub const STORAGE_CLASSES: GroupResource<'static> =
    GroupResource::new("storage.k8s.io", "storageclasses");

/// Whether a claim (as JSON) asked for a class, `""` included.
pub fn claim_has_class(claim: &Value) -> bool {
    claim["metadata"]["annotations"].get(ANN_BETA_STORAGE_CLASS).is_some()
        || claim["spec"].get("storageClassName").is_some_and(|c| !c.is_null())
}

pub struct DefaultStorageClass;

#[async_trait::async_trait]
impl MutatingPlugin for DefaultStorageClass {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn admit(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if !a.is("", "persistentvolumeclaims")
            || !a.subresource.is_empty()
            || a.operation != Operation::Create
        {
            return Ok(());
        }
        if a.object().is_none_or(claim_has_class) {
            return Ok(());
        }
        let classes = state
            .list(STORAGE_CLASSES, None, &LabelSelector::everything(), Freshness::Cached)
            .await?;
        let values: Vec<Value> = classes.iter().map(|c| c.value()).collect();
        let Some(class) = default_class_of(&values) else { return Ok(()) };
        if let Some(claim) = a.object.as_deref_mut() {
            if !claim["spec"].is_object() {
                claim["spec"] = json!({});
            }
            claim["spec"]["storageClassName"] = json!(class);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::*;
    use crate::state::Snapshot;

    async fn admit(state: &Snapshot, operation: Operation, mut claim: Value) -> Value {
        let mut a = Attributes {
            operation,
            user: UserInfo::default(),
            resource: GroupVersionResource {
                group: "",
                version: "v1",
                resource: "persistentvolumeclaims",
            },
            subresource: "",
            kind: GroupVersionKind { group: "", version: "v1", kind: "PersistentVolumeClaim" },
            namespace: "ns",
            name: "data",
            object: Some(&mut claim),
            old_object: None,
            dry_run: false,
            options: OperationOptions::None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        };
        DefaultStorageClass.admit(&mut a, state).await.unwrap();
        claim
    }

    fn class(name: &str, created: &str, default: bool) -> Value {
        json!({"metadata": {"name": name, "creationTimestamp": created,
                            "annotations": {"storageclass.kubernetes.io/is-default-class": default.to_string()}},
               "provisioner": "rancher.io/local-path"})
    }

    #[tokio::test]
    async fn claims_without_a_class_get_the_newest_default() {
        let state = Snapshot::default()
            .with(
                "storage.k8s.io",
                "storageclasses",
                class("local-path", "2024-01-01T00:00:00Z", true),
            )
            .with("storage.k8s.io", "storageclasses", class("fast", "2025-01-01T00:00:00Z", false));
        let claim = admit(&state, Operation::Create, json!({"spec": {}})).await;
        assert_eq!(claim["spec"]["storageClassName"], "local-path");
        // Asking for no class (`""`), or through the beta annotation, is asking.
        let none =
            admit(&state, Operation::Create, json!({"spec": {"storageClassName": ""}})).await;
        assert_eq!(none["spec"]["storageClassName"], "");
        let beta =
            json!({"metadata": {"annotations": {ANN_BETA_STORAGE_CLASS: "fast"}}, "spec": {}});
        assert!(admit(&state, Operation::Create, beta).await["spec"]
            .get("storageClassName")
            .is_none());
        // Updates are left alone (the binder assigns a default class to old claims).
        let update = admit(&state, Operation::Update, json!({"spec": {}})).await;
        assert!(update["spec"].get("storageClassName").is_none());
        let newer = state.with(
            "storage.k8s.io",
            "storageclasses",
            class("new", "2024-06-01T00:00:00Z", true),
        );
        assert_eq!(
            admit(&newer, Operation::Create, json!({"spec": {}})).await["spec"]["storageClassName"],
            "new"
        );
        let no_default = Snapshot::default().with(
            "storage.k8s.io",
            "storageclasses",
            class("fast", "2025-01-01T00:00:00Z", false),
        );
        assert!(admit(&no_default, Operation::Create, json!({"spec": {}})).await["spec"]
            .get("storageClassName")
            .is_none());
    }
}
