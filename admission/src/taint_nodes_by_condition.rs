//! `TaintNodesByCondition`: a new Node gets the `node.kubernetes.io/not-ready:NoSchedule`
//! taint, so that nothing is scheduled to it before its kubelet reports it ready; the node
//! lifecycle controller takes the taint off once the node's Ready condition is True.

use serde_json::{json, Value};

use crate::attributes::{Attributes, Operation};
use crate::error::AdmissionError;
use crate::state::ClusterState;
use crate::MutatingPlugin;

pub const NAME: &str = "TaintNodesByCondition";

/// The taint a node carries while it is not ready.
pub const NOT_READY: &str = "node.kubernetes.io/not-ready";

#[derive(Clone, Copy, Debug, Default)]
pub struct TaintNodesByCondition;

/// Adds the not-ready NoSchedule taint unless the node has one of that key and effect.
fn add_not_ready_taint(node: &mut Value) {
    let Some(node) = node.as_object_mut() else { return };
    let spec = node.entry("spec").or_insert_with(|| json!({}));
    let Some(spec) = spec.as_object_mut() else { return };
    let taints = spec.entry("taints").or_insert_with(|| json!([]));
    if !taints.is_array() {
        *taints = json!([]);
    }
    let Some(taints) = taints.as_array_mut() else { return };
    if !taints.iter().any(|t| t["key"] == NOT_READY && t["effect"] == "NoSchedule") {
        taints.push(json!({"key": NOT_READY, "effect": "NoSchedule"}));
    }
}

#[async_trait::async_trait]
impl MutatingPlugin for TaintNodesByCondition {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn admit(
        &self,
        a: &mut Attributes<'_>,
        _: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if a.operation == Operation::Create && a.subresource.is_empty() && a.is("", "nodes") {
            if let Some(node) = a.object.as_deref_mut() {
                add_not_ready_taint(node);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::*;
    use crate::state::Snapshot;

    async fn admit(operation: Operation, node: &mut Value) {
        let mut a = Attributes {
            operation,
            user: UserInfo::default(),
            resource: GroupVersionResource { group: "", version: "v1", resource: "nodes" },
            subresource: "",
            kind: GroupVersionKind { group: "", version: "v1", kind: "Node" },
            namespace: "",
            name: "n1",
            object: Some(node),
            old_object: None,
            dry_run: false,
            options: OperationOptions::None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        };
        TaintNodesByCondition.admit(&mut a, &Snapshot::default()).await.unwrap();
    }

    #[tokio::test]
    async fn new_nodes_are_tainted_not_ready_once() {
        let mut bare = json!({"metadata": {"name": "n1"}});
        admit(Operation::Create, &mut bare).await;
        assert_eq!(bare["spec"], json!({"taints": [{"key": NOT_READY, "effect": "NoSchedule"}]}));
        let gpu = json!({"key": "gpu", "value": "a", "effect": "NoSchedule"});
        let mut tainted = json!({"metadata": {"name": "n1"}, "spec": {"taints": [gpu.clone()]}});
        admit(Operation::Create, &mut tainted).await;
        assert_eq!(
            tainted["spec"]["taints"],
            json!([gpu, {"key": NOT_READY, "effect": "NoSchedule"}])
        );
        // Already there (with a value even): not added twice.
        let mut already =
            json!({"spec": {"taints": [{"key": NOT_READY, "value": "x", "effect": "NoSchedule"}]}});
        let before = already.clone();
        admit(Operation::Create, &mut already).await;
        assert_eq!(already, before);
        // Another effect of the same key is another taint.
        let mut no_execute =
            json!({"spec": {"taints": [{"key": NOT_READY, "effect": "NoExecute"}]}});
        admit(Operation::Create, &mut no_execute).await;
        assert_eq!(no_execute["spec"]["taints"].as_array().map(Vec::len), Some(2));
        // Updates are left alone.
        let mut updated = json!({"metadata": {"name": "n1"}, "spec": {}});
        admit(Operation::Update, &mut updated).await;
        assert_eq!(updated["spec"], json!({}));
    }
}
