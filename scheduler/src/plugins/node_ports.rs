//! `NodePorts`: a pod asking for host ports fits only where no pod already holds the same
//! port for the same protocol on an overlapping host IP (`0.0.0.0` overlaps every address).
//!
//! The ports a node's pods hold are kept on the node ([`NodeInfo::used_ports`]) as pods come
//! and go, so a filter call looks up only the incoming pod's ports.

use crate::framework::{CycleState, FilterPlugin, Next, NodeInfo, PodInfo, Rejection};

/// Upstream's reason when a host port is taken.
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";

pub struct NodePorts;

impl FilterPlugin for NodePorts {
    fn name(&self) -> &'static str {
        "NodePorts"
    }

    /// Nothing to check for a pod without host ports (upstream skips it too).
    fn pre_filter(&self, pod: &PodInfo, _state: &mut CycleState<'_>) -> Result<Next, Rejection> {
        Ok(if pod.host_ports.is_empty() { Next::Skip } else { Next::Run })
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo) -> Result<(), Rejection> {
        if node.used_ports.is_empty() {
            return Ok(());
        }
        if pod.host_ports.iter().any(|p| node.used_ports.conflicts(p)) {
            Err(Rejection::new(ERR_REASON))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use std::sync::Arc;

    use super::*;
    use crate::framework::HostPort;
    use crate::plugins::testing::{pod, small_node};

    fn with_ports(name: &str, ports: serde_json::Value) -> PodInfo {
        pod(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "nginx", "ports": ports}]}
        }))
    }

    #[test]
    fn host_ports_conflict_by_protocol_ip_and_port() {
        let node = small_node(
            "worker-1",
            vec![
                with_ports("ingress", json!([{"containerPort": 80, "hostPort": 80}])),
                with_ports(
                    "dns",
                    json!([{"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.5"}]),
                ),
                with_ports("plain", json!([{"containerPort": 8080}])),
            ],
        );
        let check = |ports: serde_json::Value| NodePorts.filter(&with_ports("new", ports), &node);
        let taken =
            Err(Rejection::new("node(s) didn't have free ports for the requested pod ports"));

        assert_eq!(check(json!([{"containerPort": 80, "hostPort": 80}])), taken);
        assert_eq!(
            check(
                json!([{"containerPort": 80, "hostPort": 80, "protocol": "TCP", "hostIP": "10.0.0.9"}])
            ),
            taken
        );
        assert_eq!(
            check(json!([{"containerPort": 80, "hostPort": 80, "protocol": "UDP"}])),
            Ok(())
        );
        assert_eq!(check(json!([{"containerPort": 80, "hostPort": 81}])), Ok(()));
        // Container ports without host ports never conflict.
        assert_eq!(check(json!([{"containerPort": 8080}])), Ok(()));
        // 53/UDP is held on 10.0.0.5 only.
        assert_eq!(
            check(
                json!([{"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.6"}])
            ),
            Ok(())
        );
        assert_eq!(
            check(
                json!([{"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.5"}])
            ),
            taken
        );
        assert_eq!(check(json!([{"containerPort": 53, "hostPort": 53, "protocol": "UDP"}])), taken);
        assert_eq!(check(json!([{"containerPort": 53, "hostPort": 53}])), Ok(()));
        // One clash among several ports is enough.
        assert_eq!(
            check(
                json!([{"containerPort": 1, "hostPort": 9000}, {"containerPort": 2, "hostPort": 80}])
            ),
            taken
        );
    }

    #[test]
    fn ports_are_released_when_their_pod_leaves() {
        let http = json!([{"containerPort": 80, "hostPort": 80}]);
        let mut node = small_node("worker-1", vec![]);
        // Two pods hold 80/TCP on the same address (say, one leaving while the other came).
        node.add_pod(Arc::new(with_ports("a", http.clone())));
        node.add_pod(Arc::new(with_ports("b", http.clone())));
        node.add_pod(Arc::new(with_ports("plain", json!([{"containerPort": 8080}]))));
        let incoming = with_ports("new", http);
        let taken = Err(Rejection::new(ERR_REASON));
        assert_eq!(NodePorts.filter(&incoming, &node), taken);
        node.remove_pod("default", "a");
        assert_eq!(NodePorts.filter(&incoming, &node), taken, "b still holds it");
        node.remove_pod("default", "b");
        assert_eq!(NodePorts.filter(&incoming, &node), Ok(()));
        assert!(node.used_ports.is_empty());
        assert_eq!(
            incoming.host_ports,
            [HostPort { ip: "0.0.0.0".into(), protocol: "TCP".into(), port: 80 }]
        );
    }

    #[test]
    fn pods_without_host_ports_skip_the_filter() {
        let mut state_nodes = [small_node("worker-1", vec![])];
        state_nodes[0].add_pod(Arc::new(with_ports(
            "ingress",
            json!([{"containerPort": 80, "hostPort": 80}]),
        )));
        let refs: Vec<&NodeInfo> = state_nodes.iter().collect();
        let mut state = CycleState::new(&refs);
        let plain = with_ports("web", json!([{"containerPort": 80}]));
        assert_eq!(NodePorts.pre_filter(&plain, &mut state), Ok(Next::Skip));
        let wants = with_ports("web", json!([{"containerPort": 80, "hostPort": 8080}]));
        assert_eq!(NodePorts.pre_filter(&wants, &mut state), Ok(Next::Run));
    }
}
