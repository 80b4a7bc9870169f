//! `capabilities_restricted` (restricted, from v1.22): every container drops `ALL` and adds
//! nothing but `NET_BIND_SERVICE`; it replaces the baseline capabilities check. From v1.25
//! Windows pods pass.

use std::collections::BTreeSet;

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{containers_named, join_quote, Pod};

use super::capabilities_baseline;

pub const CHECK: Check = Check {
    id: "capabilities_restricted",
    level: Level::Restricted,
    versions: &[
        Versioned { since: 22, check: v1_22, overrides: &[capabilities_baseline::ID] },
        Versioned { since: 25, check: v1_25, overrides: &[capabilities_baseline::ID] },
    ],
};

fn v1_22(pod: &Pod) -> Option<Violation> {
    let mut missing_drop_all = Vec::new();
    let mut adding = Vec::new();
    let mut forbidden = BTreeSet::new();
    for c in pod.containers() {
        let Some(caps) = c.security_context.and_then(|sc| sc.capabilities.as_ref()) else {
            missing_drop_all.push(c.name);
            continue;
        };
        if !caps.drop.iter().flatten().any(|cap| cap == "ALL") {
            missing_drop_all.push(c.name);
        }
        let extra: Vec<&String> =
            caps.add.iter().flatten().filter(|cap| *cap != "NET_BIND_SERVICE").collect();
        if !extra.is_empty() {
            adding.push(c.name);
            forbidden.extend(extra);
        }
    }
    let mut details = Vec::new();
    if !missing_drop_all.is_empty() {
        details.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            containers_named(&missing_drop_all)
        ));
    }
    if !adding.is_empty() {
        let forbidden: Vec<&String> = forbidden.into_iter().collect();
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_named(&adding),
            join_quote(&forbidden)
        ));
    }
    (!details.is_empty()).then(|| Violation::new("unrestricted capabilities", details.join("; ")))
}

fn v1_25(pod: &Pod) -> Option<Violation> {
    if pod.is_windows() {
        return None;
    }
    v1_22(pod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_security::checks::{pod, said};
    use serde_json::json;

    #[test]
    fn drop_all_and_add_only_net_bind_service() {
        let p = pod(json!({"spec": {"containers": [
            {"name": "a"},
            {"name": "b", "securityContext": {"capabilities": {"drop": ["NET_RAW"]}}},
            {"name": "c", "securityContext": {"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}},
            {"name": "d", "securityContext": {"capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN", "CHOWN"]}}},
        ]}}));
        assert_eq!(
            said(v1_25(&p)).as_deref(),
            Some("unrestricted capabilities (containers \"a\", \"b\" must set securityContext.capabilities.drop=[\"ALL\"]; container \"d\" must not include \"CHOWN\", \"SYS_ADMIN\" in securityContext.capabilities.add)")
        );
        let ok = pod(json!({"spec": {"containers": [
            {"name": "c", "securityContext": {"capabilities": {"drop": ["ALL"]}}}]}}));
        assert_eq!(v1_22(&ok), None);
        let windows =
            pod(json!({"spec": {"os": {"name": "windows"}, "containers": [{"name": "a"}]}}));
        assert_eq!(v1_25(&windows), None);
        assert!(v1_22(&windows).is_some());
    }
}
