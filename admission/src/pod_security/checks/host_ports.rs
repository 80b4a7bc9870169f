//! `hostPorts` (baseline): no container asks for a host port.

use std::collections::BTreeSet;

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{containers_named, pluralize, Pod};

pub const CHECK: Check = Check {
    id: "hostPorts",
    level: Level::Baseline,
    versions: &[Versioned { since: 0, check: v1_0, overrides: &[] }],
};

fn v1_0(pod: &Pod) -> Option<Violation> {
    let mut containers = Vec::new();
    // Listed as text, so sorted as text (upstream's string set: "8080" before "90").
    let mut ports = BTreeSet::new();
    for c in pod.containers() {
        let host: Vec<String> = c
            .ports
            .iter()
            .filter_map(|p| p.host_port.filter(|port| *port != 0))
            .map(|port| port.to_string())
            .collect();
        if !host.is_empty() {
            containers.push(c.name);
            ports.extend(host);
        }
    }
    (!containers.is_empty()).then(|| {
        let ports: Vec<String> = ports.into_iter().collect();
        Violation::new(
            "hostPort",
            format!(
                "{} {} {} {}",
                containers_named(&containers),
                pluralize("uses", "use", containers.len()),
                pluralize("hostPort", "hostPorts", ports.len()),
                ports.join(", ")
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_security::checks::{pod, said};
    use serde_json::json;

    #[test]
    fn no_host_ports() {
        let p = pod(json!({"spec": {"containers": [
            {"name": "a", "ports": [{"containerPort": 80, "hostPort": 90}, {"containerPort": 81, "hostPort": 8080}]},
            {"name": "b", "ports": [{"containerPort": 80}, {"containerPort": 82, "hostPort": 0}]},
            {"name": "c", "ports": [{"containerPort": 80, "hostPort": 90}]},
        ]}}));
        assert_eq!(
            said(v1_0(&p)).as_deref(),
            Some("hostPort (containers \"a\", \"c\" use hostPorts 8080, 90)")
        );
        let one = pod(json!({"spec": {"containers": [
            {"name": "a", "ports": [{"containerPort": 80, "hostPort": 80}]}]}}));
        assert_eq!(
            said(v1_0(&one)).as_deref(),
            Some("hostPort (container \"a\" uses hostPort 80)")
        );
        let ok =
            pod(json!({"spec": {"containers": [{"name": "b", "ports": [{"containerPort": 80}]}]}}));
        assert_eq!(v1_0(&ok), None);
    }
}
