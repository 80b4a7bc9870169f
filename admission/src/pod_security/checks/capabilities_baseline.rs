//! `capabilities_baseline` (baseline): containers may add only capabilities of the default
//! set a container runtime grants anyway.

use std::collections::BTreeSet;

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{containers_named, join_quote, Pod};

pub const ID: &str = "capabilities_baseline";

pub const CHECK: Check = Check {
    id: ID,
    level: Level::Baseline,
    versions: &[Versioned { since: 0, check: v1_0, overrides: &[] }],
};

/// The capabilities containers get by default.
const ALLOWED: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

fn v1_0(pod: &Pod) -> Option<Violation> {
    let mut containers = Vec::new();
    let mut added = BTreeSet::new();
    for c in pod.containers() {
        let add = c.security_context.and_then(|sc| sc.capabilities.as_ref()?.add.as_ref());
        let extra: Vec<&String> =
            add.into_iter().flatten().filter(|cap| !ALLOWED.contains(&cap.as_str())).collect();
        if !extra.is_empty() {
            containers.push(c.name);
            added.extend(extra);
        }
    }
    (!containers.is_empty()).then(|| {
        let added: Vec<&String> = added.into_iter().collect();
        Violation::new(
            "non-default capabilities",
            format!(
                "{} must not include {} in securityContext.capabilities.add",
                containers_named(&containers),
                join_quote(&added)
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
    fn only_default_capabilities_may_be_added() {
        let p = pod(json!({"spec": {"containers": [
            {"name": "a", "securityContext": {"capabilities": {"add": ["NET_ADMIN", "CHOWN"]}}},
            {"name": "b", "securityContext": {"capabilities": {"add": ["SYS_TIME", "NET_ADMIN"], "drop": ["ALL"]}}},
            {"name": "c", "securityContext": {"capabilities": {"add": ["KILL", "NET_BIND_SERVICE"]}}},
            {"name": "d"},
        ]}}));
        assert_eq!(
            said(v1_0(&p)).as_deref(),
            Some("non-default capabilities (containers \"a\", \"b\" must not include \"NET_ADMIN\", \"SYS_TIME\" in securityContext.capabilities.add)")
        );
        let ok = pod(json!({"spec": {"containers": [
            {"name": "a", "securityContext": {"capabilities": {"add": ["SETUID"]}}}]}}));
        assert_eq!(v1_0(&ok), None);
    }
}
