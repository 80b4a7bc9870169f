//! `sysctls` (baseline): only the sysctls that are namespaced and isolated from other pods,
//! a set that grew in v1.27, v1.29 and v1.32.

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::Pod;

pub const CHECK: Check = Check {
    id: "sysctls",
    level: Level::Baseline,
    versions: &[
        Versioned { since: 0, check: v1_0, overrides: &[] },
        Versioned { since: 27, check: v1_27, overrides: &[] },
        Versioned { since: 29, check: v1_29, overrides: &[] },
        Versioned { since: 32, check: v1_32, overrides: &[] },
    ],
};

/// The safe sysctls, each with the minor version it became safe in.
const SAFE: &[(&str, u32)] = &[
    ("kernel.shm_rmid_forced", 0),
    ("net.ipv4.ip_local_port_range", 0),
    ("net.ipv4.tcp_syncookies", 0),
    ("net.ipv4.ping_group_range", 0),
    ("net.ipv4.ip_unprivileged_port_start", 0),
    ("net.ipv4.ip_local_reserved_ports", 27),
    ("net.ipv4.tcp_keepalive_time", 29),
    ("net.ipv4.tcp_fin_timeout", 29),
    ("net.ipv4.tcp_keepalive_intvl", 29),
    ("net.ipv4.tcp_keepalive_probes", 29),
    ("net.ipv4.tcp_rmem", 32),
    ("net.ipv4.tcp_wmem", 32),
];

fn v1_0(pod: &Pod) -> Option<Violation> {
    check(pod, 0)
}

fn v1_27(pod: &Pod) -> Option<Violation> {
    check(pod, 27)
}

fn v1_29(pod: &Pod) -> Option<Violation> {
    check(pod, 29)
}

fn v1_32(pod: &Pod) -> Option<Violation> {
    check(pod, 32)
}

fn check(pod: &Pod, minor: u32) -> Option<Violation> {
    let safe = |name: &str| SAFE.iter().any(|(s, since)| *s == name && *since <= minor);
    let sysctls = pod.security_context().and_then(|sc| sc.sysctls.as_ref());
    let forbidden: Vec<&str> =
        sysctls.into_iter().flatten().map(|s| s.name.as_str()).filter(|n| !safe(n)).collect();
    (!forbidden.is_empty()).then(|| Violation::new("forbidden sysctls", forbidden.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_security::checks::{pod, said};
    use serde_json::json;

    #[test]
    fn only_safe_sysctls_as_of_each_version() {
        let p = pod(json!({"spec": {"securityContext": {"sysctls": [
            {"name": "net.ipv4.tcp_rmem", "value": "1"},
            {"name": "kernel.msgmax", "value": "1"},
            {"name": "net.ipv4.tcp_keepalive_time", "value": "1"},
            {"name": "net.ipv4.ip_local_reserved_ports", "value": "1"},
            {"name": "kernel.shm_rmid_forced", "value": "1"},
        ]}}}));
        assert_eq!(said(v1_32(&p)).as_deref(), Some("forbidden sysctls (kernel.msgmax)"));
        assert_eq!(
            said(v1_29(&p)).as_deref(),
            Some("forbidden sysctls (net.ipv4.tcp_rmem, kernel.msgmax)")
        );
        assert_eq!(
            said(v1_27(&p)).as_deref(),
            Some(
                "forbidden sysctls (net.ipv4.tcp_rmem, kernel.msgmax, net.ipv4.tcp_keepalive_time)"
            )
        );
        assert_eq!(
            said(v1_0(&p)).as_deref(),
            Some("forbidden sysctls (net.ipv4.tcp_rmem, kernel.msgmax, net.ipv4.tcp_keepalive_time, net.ipv4.ip_local_reserved_ports)")
        );
        assert_eq!(v1_0(&pod(json!({"spec": {"containers": []}}))), None);
    }
}
