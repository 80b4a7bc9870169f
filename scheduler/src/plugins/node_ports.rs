//! `NodePorts`: a pod asking for host ports fits only where no pod already holds the same
//! port for the same protocol on an overlapping host IP (`0.0.0.0` overlaps every address).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ContainerPort, Pod};

use crate::framework::{FilterPlugin, NodeInfo, PodInfo, Rejection};

/// Upstream's reason when a host port is taken.
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";

const ALL_ADDRESSES: &str = "0.0.0.0";

pub struct NodePorts;

/// The host ports in use, by host IP, as (protocol, port); empty IP and protocol are
/// written as upstream defaults them (`0.0.0.0`, `TCP`).
#[derive(Default, Debug)]
pub struct HostPorts(BTreeMap<String, BTreeSet<(String, i32)>>);

fn host_ports(pod: &Pod) -> impl Iterator<Item = &ContainerPort> {
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .flat_map(|c| c.ports.iter().flatten())
        .filter(|p| p.host_port.unwrap_or(0) > 0)
}

fn sanitize(port: &ContainerPort) -> (String, String, i32) {
    let ip = port.host_ip.as_deref().filter(|ip| !ip.is_empty()).unwrap_or(ALL_ADDRESSES);
    let protocol = port.protocol.as_deref().filter(|p| !p.is_empty()).unwrap_or("TCP");
    (ip.to_string(), protocol.to_string(), port.host_port.unwrap_or(0))
}

impl HostPorts {
    pub fn of_node(node: &NodeInfo) -> HostPorts {
        let mut used = HostPorts::default();
        for port in node.pods.iter().flat_map(|p| host_ports(&p.pod)) {
            let (ip, protocol, port) = sanitize(port);
            used.0.entry(ip).or_default().insert((protocol, port));
        }
        used
    }

    /// Whether the port clashes with one in use: the same IP, or either side on all
    /// addresses.
    pub fn conflicts(&self, port: &ContainerPort) -> bool {
        let (ip, protocol, port) = sanitize(port);
        let key = (protocol, port);
        if ip == ALL_ADDRESSES {
            return self.0.values().any(|ports| ports.contains(&key));
        }
        [ip.as_str(), ALL_ADDRESSES]
            .iter()
            .any(|ip| self.0.get(*ip).is_some_and(|ports| ports.contains(&key)))
    }
}

impl FilterPlugin for NodePorts {
    fn name(&self) -> &'static str {
        "NodePorts"
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo) -> Result<(), Rejection> {
        let mut wanted = host_ports(&pod.pod).peekable();
        if wanted.peek().is_none() {
            return Ok(());
        }
        let used = HostPorts::of_node(node);
        if wanted.any(|p| used.conflicts(p)) {
            Err(Rejection::new(ERR_REASON))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
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
}
