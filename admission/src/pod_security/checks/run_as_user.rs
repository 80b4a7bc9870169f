//! `runAsUser` (restricted, from v1.23): neither the pod nor a container sets `runAsUser=0`.

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{containers_named, Pod};

pub const CHECK: Check = Check {
    id: "runAsUser",
    level: Level::Restricted,
    versions: &[Versioned { since: 23, check: v1_23, overrides: &[] }],
};

fn v1_23(pod: &Pod) -> Option<Violation> {
    let mut setters = Vec::new();
    if pod.security_context().and_then(|sc| sc.run_as_user) == Some(0) {
        setters.push("pod".to_string());
    }
    let root = pod.containers_where(|sc| sc.and_then(|sc| sc.run_as_user) == Some(0));
    if !root.is_empty() {
        setters.push(containers_named(&root));
    }
    (!setters.is_empty()).then(|| {
        Violation::new("runAsUser=0", format!("{} must not set runAsUser=0", setters.join(" and ")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_security::checks::{pod, said};
    use serde_json::json;

    #[test]
    fn nothing_runs_as_uid_0() {
        let p = pod(json!({"spec": {"securityContext": {"runAsUser": 0}, "containers": [
            {"name": "a", "securityContext": {"runAsUser": 0}},
            {"name": "b", "securityContext": {"runAsUser": 1000}},
            {"name": "c", "securityContext": {"runAsUser": 0}}]}}));
        assert_eq!(
            said(v1_23(&p)).as_deref(),
            Some("runAsUser=0 (pod and containers \"a\", \"c\" must not set runAsUser=0)")
        );
        let ok = pod(
            json!({"spec": {"securityContext": {"runAsUser": 1}, "containers": [{"name": "a"}]}}),
        );
        assert_eq!(v1_23(&ok), None);
    }
}
