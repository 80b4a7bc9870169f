//! `procMount` (baseline): containers keep the default masked `/proc`. (Upstream relaxes it
//! for pods in a user namespace only behind the `UserNamespacesPodSecurityStandards`
//! feature gate, off by default in v1.33, as it is here.)

use std::collections::BTreeSet;

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{containers_named, join_quote, Pod};

pub const CHECK: Check = Check {
    id: "procMount",
    level: Level::Baseline,
    versions: &[Versioned { since: 0, check: v1_0, overrides: &[] }],
};

fn v1_0(pod: &Pod) -> Option<Violation> {
    let mut containers = Vec::new();
    let mut types = BTreeSet::new();
    for c in pod.containers() {
        match c.security_context.and_then(|sc| sc.proc_mount.as_deref()) {
            Some(mount) if mount != "Default" => {
                containers.push(c.name);
                types.insert(mount);
            }
            _ => {}
        }
    }
    (!containers.is_empty()).then(|| {
        let types: Vec<&str> = types.into_iter().collect();
        Violation::new(
            "procMount",
            format!(
                "{} must not set securityContext.procMount to {}",
                containers_named(&containers),
                join_quote(&types)
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
    fn only_the_default_proc_mount() {
        let p = pod(json!({"spec": {"hostUsers": false, "containers": [
            {"name": "a", "securityContext": {"procMount": "Unmasked"}},
            {"name": "b", "securityContext": {"procMount": "Default"}},
            {"name": "c", "securityContext": {"procMount": "Other"}},
            {"name": "d", "securityContext": {}},
        ]}}));
        assert_eq!(
            said(v1_0(&p)).as_deref(),
            Some("procMount (containers \"a\", \"c\" must not set securityContext.procMount to \"Other\", \"Unmasked\")")
        );
        let ok = pod(
            json!({"spec": {"containers": [{"name": "b", "securityContext": {"procMount": "Default"}}]}}),
        );
        assert_eq!(v1_0(&ok), None);
    }
}
