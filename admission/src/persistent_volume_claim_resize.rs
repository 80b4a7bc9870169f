//! `PersistentVolumeClaimResize`: a claim may grow only once bound, and only when its class
//! (the same before and after) has `allowVolumeExpansion: true`; shrinking, and every other
//! update, is left to validation.

use rkube_apis::persistent_volumes::ANN_BETA_STORAGE_CLASS;
use rkube_apis::quantity::parse_units;
use serde_json::Value;

use crate::attributes::{Attributes, Operation};
use crate::default_storage_class::STORAGE_CLASSES;
use crate::error::AdmissionError;
use crate::state::{ClusterState, Freshness};
use crate::ValidatingPlugin;

pub const NAME: &str = "PersistentVolumeClaimResize";

pub struct PersistentVolumeClaimResize;

/// The claim's class (the beta annotation first), `""` without one.
fn class_of(claim: &Value) -> &str {
    claim["metadata"]["annotations"][ANN_BETA_STORAGE_CLASS]
        .as_str()
        .or_else(|| claim["spec"]["storageClassName"].as_str())
        .unwrap_or("")
}

fn requested(claim: &Value) -> i64 {
    claim["spec"]["resources"]["requests"]["storage"].as_str().and_then(parse_units).unwrap_or(0)
}

#[async_trait::async_trait]
impl ValidatingPlugin for PersistentVolumeClaimResize {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn validate(
        &self,
        a: &Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if !a.is("", "persistentvolumeclaims")
            || !a.subresource.is_empty()
            || a.operation != Operation::Update
        {
            return Ok(());
        }
        let (Some(new), Some(old)) = (a.object(), a.old_object) else { return Ok(()) };
        if requested(new) <= requested(old) {
            return Ok(());
        }
        if old["status"]["phase"] != "Bound" {
            return Err(AdmissionError::forbidden(
                a,
                "Only bound persistent volume claims can be expanded",
            ));
        }
        let (class, old_class) = (class_of(new), class_of(old));
        let allowed = if class.is_empty() || class != old_class {
            false
        } else {
            let found = state.get(STORAGE_CLASSES, None, class, Freshness::Cached).await?;
            found.is_some_and(|c| c.value()["allowVolumeExpansion"] == Value::Bool(true))
        };
        if !allowed {
            return Err(AdmissionError::forbidden(
                a,
                "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::*;
    use crate::state::Snapshot;
    use serde_json::json;

    fn claim(size: &str, class: &str, phase: &str) -> Value {
        json!({"metadata": {"name": "data", "namespace": "ns"},
               "spec": {"storageClassName": class, "resources": {"requests": {"storage": size}}},
               "status": {"phase": phase}})
    }

    async fn resize(state: &Snapshot, mut new: Value, old: Value) -> Result<(), AdmissionError> {
        let a = Attributes {
            operation: Operation::Update,
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
            object: Some(&mut new),
            old_object: Some(&old),
            dry_run: false,
            options: OperationOptions::None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        };
        PersistentVolumeClaimResize.validate(&a, state).await
    }

    #[tokio::test]
    async fn growing_needs_a_bound_claim_of_an_expandable_class() {
        let state = Snapshot::default()
            .with(
                "storage.k8s.io",
                "storageclasses",
                json!({"metadata": {"name": "local-path"}, "provisioner": "rancher.io/local-path"}),
            )
            .with(
                "storage.k8s.io",
                "storageclasses",
                json!({"metadata": {"name": "grows"}, "allowVolumeExpansion": true}),
            );
        let refused = resize(
            &state,
            claim("2Gi", "local-path", "Bound"),
            claim("1Gi", "local-path", "Bound"),
        )
        .await;
        assert_eq!(
            refused.unwrap_err().to_string(),
            "persistentvolumeclaims \"data\" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"
        );
        resize(&state, claim("2Gi", "grows", "Bound"), claim("1Gi", "grows", "Bound"))
            .await
            .unwrap();
        let pending =
            resize(&state, claim("2Gi", "grows", "Pending"), claim("1Gi", "grows", "Pending"))
                .await;
        assert_eq!(
            pending.unwrap_err().to_string(),
            "persistentvolumeclaims \"data\" is forbidden: Only bound persistent volume claims can be expanded"
        );
        // Not growing: not this plugin's business.
        resize(&state, claim("1Gi", "local-path", "Bound"), claim("1Gi", "local-path", "Bound"))
            .await
            .unwrap();
        resize(
            &state,
            claim("512Mi", "local-path", "Pending"),
            claim("1Gi", "local-path", "Pending"),
        )
        .await
        .unwrap();
        assert!(resize(&state, claim("2Gi", "", "Bound"), claim("1Gi", "", "Bound"))
            .await
            .is_err());
        assert!(resize(&state, claim("2Gi", "missing", "Bound"), claim("1Gi", "missing", "Bound"))
            .await
            .is_err());
    }
}
