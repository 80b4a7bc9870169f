//! `NodeUnschedulable`: cordoned nodes (`spec.unschedulable`) take only pods that tolerate
//! the `node.kubernetes.io/unschedulable:NoSchedule` taint, as DaemonSet pods do.

use k8s_openapi::api::core::v1::Taint;

use crate::framework::{FilterPlugin, NodeInfo, PodInfo, Rejection};
use crate::plugins::tolerations_tolerate;

/// Upstream's reason for a cordoned node.
pub const ERR_REASON: &str = "node(s) were unschedulable";

/// The taint a cordoned node is treated as having.
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

pub struct NodeUnschedulable;

impl FilterPlugin for NodeUnschedulable {
    fn name(&self) -> &'static str {
        "NodeUnschedulable"
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo) -> Result<(), Rejection> {
        let cordoned = node.node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false);
        if !cordoned {
            return Ok(());
        }
        let taint = Taint {
            key: TAINT_NODE_UNSCHEDULABLE.to_string(),
            effect: "NoSchedule".to_string(),
            ..Default::default()
        };
        let tolerations =
            pod.pod.spec.as_ref().and_then(|s| s.tolerations.as_deref()).unwrap_or(&[]);
        if tolerations_tolerate(tolerations, &taint) {
            Ok(())
        } else {
            Err(Rejection::new(ERR_REASON))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugins::testing::{node, pod};

    fn cordoned(unschedulable: bool) -> NodeInfo {
        node(json!({
            "metadata": {"name": "worker-1"},
            "spec": {"unschedulable": unschedulable},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}
        }))
    }

    #[test]
    fn cordoned_nodes_reject_pods_that_do_not_tolerate_it() {
        let plain =
            pod(json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "app"}]}}));
        assert_eq!(NodeUnschedulable.filter(&plain, &cordoned(false)), Ok(()));
        assert_eq!(
            NodeUnschedulable.filter(&plain, &cordoned(true)),
            Err(Rejection::new("node(s) were unschedulable"))
        );

        // What the DaemonSet controller adds to its pods.
        let daemon = pod(json!({
            "metadata": {"name": "fluentd-x7k2p"},
            "spec": {
                "containers": [{"name": "fluentd"}],
                "tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
            }
        }));
        assert_eq!(NodeUnschedulable.filter(&daemon, &cordoned(true)), Ok(()));

        let tolerate_all = pod(json!({
            "metadata": {"name": "t"},
            "spec": {"containers": [{"name": "app"}], "tolerations": [{"operator": "Exists"}]}
        }));
        assert_eq!(NodeUnschedulable.filter(&tolerate_all, &cordoned(true)), Ok(()));

        let wrong_effect = pod(json!({
            "metadata": {"name": "t"},
            "spec": {
                "containers": [{"name": "app"}],
                "tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}]
            }
        }));
        assert!(NodeUnschedulable.filter(&wrong_effect, &cordoned(true)).is_err());
    }
}
