//! `NodeName`: a pod that names its node (`spec.nodeName`) fits only that node.

use crate::framework::{FilterPlugin, NodeInfo, PodInfo, Rejection};

/// Upstream's reason when the pod asks for another node.
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

pub struct NodeName;

impl FilterPlugin for NodeName {
    fn name(&self) -> &'static str {
        "NodeName"
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo) -> Result<(), Rejection> {
        match pod.pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
            None | Some("") => Ok(()),
            Some(wanted) if wanted == node.name() => Ok(()),
            Some(_) => Err(Rejection::new(ERR_REASON)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugins::testing::{pod, small_node};

    #[test]
    fn only_the_named_node_fits() {
        let named = pod(json!({
            "metadata": {"name": "web"},
            "spec": {"nodeName": "worker-1", "containers": [{"name": "app", "image": "nginx"}]}
        }));
        assert_eq!(NodeName.filter(&named, &small_node("worker-1", vec![])), Ok(()));
        assert_eq!(
            NodeName.filter(&named, &small_node("worker-2", vec![])),
            Err(Rejection::new("node(s) didn't match the requested node name"))
        );
        let unnamed =
            pod(json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "app"}]}}));
        assert_eq!(NodeName.filter(&unnamed, &small_node("worker-2", vec![])), Ok(()));
    }
}
