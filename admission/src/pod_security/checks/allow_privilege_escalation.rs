//! `allowPrivilegeEscalation` (restricted): every container sets
//! `securityContext.allowPrivilegeEscalation=false` (from v1.8; from v1.25 Windows pods, where
//! the field does not apply, pass).

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{containers_named, Pod};

pub const CHECK: Check = Check {
    id: "allowPrivilegeEscalation",
    level: Level::Restricted,
    versions: &[
        Versioned { since: 8, check: v1_8, overrides: &[] },
        Versioned { since: 25, check: v1_25, overrides: &[] },
    ],
};

fn v1_8(pod: &Pod) -> Option<Violation> {
    let bad =
        pod.containers_where(|sc| sc.and_then(|sc| sc.allow_privilege_escalation) != Some(false));
    (!bad.is_empty()).then(|| {
        Violation::new(
            "allowPrivilegeEscalation != false",
            format!(
                "{} must set securityContext.allowPrivilegeEscalation=false",
                containers_named(&bad)
            ),
        )
    })
}

fn v1_25(pod: &Pod) -> Option<Violation> {
    if pod.is_windows() {
        return None;
    }
    v1_8(pod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_security::checks::{pod, said};
    use serde_json::json;

    #[test]
    fn containers_must_set_it_false() {
        let p = pod(json!({"spec": {
            "initContainers": [{"name": "i", "securityContext": {"allowPrivilegeEscalation": false}}],
            "containers": [
                {"name": "a"},
                {"name": "b", "securityContext": {}},
                {"name": "c", "securityContext": {"allowPrivilegeEscalation": true}},
                {"name": "d", "securityContext": {"allowPrivilegeEscalation": false}},
            ],
        }}));
        assert_eq!(
            said(v1_25(&p)).as_deref(),
            Some("allowPrivilegeEscalation != false (containers \"a\", \"b\", \"c\" must set securityContext.allowPrivilegeEscalation=false)")
        );
        let one = pod(json!({"spec": {"containers": [{"name": "a"}]}}));
        assert_eq!(
            said(v1_8(&one)).as_deref(),
            Some("allowPrivilegeEscalation != false (container \"a\" must set securityContext.allowPrivilegeEscalation=false)")
        );
        let ok = pod(json!({"spec": {"containers": [
            {"name": "a", "securityContext": {"allowPrivilegeEscalation": false}}]}}));
        assert_eq!(v1_8(&ok), None);
    }

    #[test]
    fn windows_pods_pass_from_v1_25() {
        let p = pod(json!({"spec": {"os": {"name": "windows"}, "containers": [{"name": "a"}]}}));
        assert_eq!(v1_25(&p), None);
        assert!(v1_8(&p).is_some());
    }
}
