//! `hostNamespaces` (baseline): no sharing of the host's network, PID or IPC namespace.

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::Pod;

pub const CHECK: Check = Check {
    id: "hostNamespaces",
    level: Level::Baseline,
    versions: &[Versioned { since: 0, check: v1_0, overrides: &[] }],
};

fn v1_0(pod: &Pod) -> Option<Violation> {
    let spec = &pod.spec;
    let shared: Vec<&str> = [
        (spec.host_network, "hostNetwork=true"),
        (spec.host_pid, "hostPID=true"),
        (spec.host_ipc, "hostIPC=true"),
    ]
    .into_iter()
    .filter(|(set, _)| *set == Some(true))
    .map(|(_, text)| text)
    .collect();
    (!shared.is_empty()).then(|| Violation::new("host namespaces", shared.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_security::checks::{pod, said};
    use serde_json::json;

    #[test]
    fn no_host_namespaces() {
        let p = pod(
            json!({"spec": {"hostIPC": true, "hostNetwork": true, "hostPID": false, "containers": []}}),
        );
        assert_eq!(
            said(v1_0(&p)).as_deref(),
            Some("host namespaces (hostNetwork=true, hostIPC=true)")
        );
        let all = pod(json!({"spec": {"hostIPC": true, "hostNetwork": true, "hostPID": true}}));
        assert_eq!(
            said(v1_0(&all)).as_deref(),
            Some("host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)")
        );
        assert_eq!(v1_0(&pod(json!({"spec": {"hostNetwork": false}}))), None);
    }
}
