//! Pod admission on the node, as upstream's kubelet admits a pod it has not run yet: a pod
//! whose `hostPort`s clash with a pod already admitted here is rejected (phase Failed,
//! reason `NodePorts`) rather than started. The scheduler checks the same, but a pod bound
//! by `spec.nodeName` skips it, and the kubelet is the last word.

use k8s_openapi::api::core::v1::Pod;

/// Upstream's reason and message for a pod rejected for its host ports.
pub const NODE_PORTS_REASON: &str = "NodePorts";
pub const NODE_PORTS_MESSAGE: &str =
    "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports";

/// `(protocol, host IP, host port)` of every container port the pod publishes on the node.
fn host_ports(pod: &Pod) -> Vec<(String, String, i32)> {
    let Some(spec) = pod.spec.as_ref() else { return Vec::new() };
    spec.init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .flat_map(|c| c.ports.iter().flatten())
        .filter(|p| p.host_port.is_some_and(|h| h > 0))
        .map(|p| {
            let ip = p.host_ip.clone().filter(|ip| !ip.is_empty());
            (
                p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                ip.unwrap_or_else(|| "0.0.0.0".into()),
                p.host_port.unwrap_or_default(),
            )
        })
        .collect()
}

/// Whether the pod has been taken up by the kubelet already (it has a start time): such a
/// pod was admitted before, by this kubelet or one before a restart, and is not judged again.
pub fn started(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|s| s.start_time.is_some())
}

/// Whether the pod has finished (and so holds no ports).
pub fn finished(pod: &Pod) -> bool {
    matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"))
}

/// Whether `pod` asks for a host port one of the `admitted` pods holds: same protocol and
/// port, and addresses that overlap (equal, or either the wildcard).
pub fn host_port_conflict<'a>(pod: &Pod, admitted: impl IntoIterator<Item = &'a Pod>) -> bool {
    let wanted = host_ports(pod);
    if wanted.is_empty() {
        return false;
    }
    let wildcard = |ip: &str| ip == "0.0.0.0" || ip == "::";
    admitted.into_iter().filter(|p| !finished(p)).any(|other| {
        host_ports(other).iter().any(|(proto, ip, port)| {
            wanted.iter().any(|(p2, ip2, port2)| {
                proto == p2 && port == port2 && (ip == ip2 || wildcard(ip) || wildcard(ip2))
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(ports: serde_json::Value, phase: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "ports": ports}]},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    #[test]
    fn host_ports_clash_by_protocol_port_and_overlapping_address() {
        let held = pod(json!([{"containerPort": 80, "hostPort": 21017}]), "Running");
        let same = pod(json!([{"containerPort": 81, "hostPort": 21017}]), "Pending");
        assert!(host_port_conflict(&same, [&held]));
        let udp =
            pod(json!([{"containerPort": 80, "hostPort": 21017, "protocol": "UDP"}]), "Pending");
        assert!(!host_port_conflict(&udp, [&held]));
        let other = pod(json!([{"containerPort": 80, "hostPort": 21018}]), "Pending");
        assert!(!host_port_conflict(&other, [&held]));
        let no_host_port = pod(json!([{"containerPort": 21017}]), "Pending");
        assert!(!host_port_conflict(&no_host_port, [&held]));
        let on_ip = pod(
            json!([{"containerPort": 80, "hostPort": 21017, "hostIP": "127.0.0.1"}]),
            "Pending",
        );
        assert!(host_port_conflict(&on_ip, [&held]), "the wildcard covers every address");
        let other_ip = pod(
            json!([{"containerPort": 80, "hostPort": 21017, "hostIP": "127.0.0.2"}]),
            "Pending",
        );
        assert!(!host_port_conflict(&other_ip, [&on_ip]));
        let done = pod(json!([{"containerPort": 80, "hostPort": 21017}]), "Failed");
        assert!(!host_port_conflict(&same, [&done]), "a finished pod holds no port");
    }
}
