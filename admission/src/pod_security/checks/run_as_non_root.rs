//! `runAsNonRoot` (restricted): the pod sets `runAsNonRoot=true`, or every container does;
//! nothing sets it false. (Upstream relaxes it for pods in a user namespace only behind a
//! feature gate that v1.33 has off.)

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{containers_named, Pod};

pub const CHECK: Check = Check {
    id: "runAsNonRoot",
    level: Level::Restricted,
    versions: &[Versioned { since: 0, check: v1_0, overrides: &[] }],
};

fn v1_0(pod: &Pod) -> Option<Violation> {
    let mut setters = Vec::new();
    let pod_level = pod.security_context().and_then(|sc| sc.run_as_non_root);
    if pod_level == Some(false) {
        setters.push("pod".to_string());
    }
    let (mut explicit, mut implicit) = (Vec::new(), Vec::new());
    for c in pod.containers() {
        match c.security_context.and_then(|sc| sc.run_as_non_root) {
            Some(false) => explicit.push(c.name),
            Some(true) => {}
            None if pod_level != Some(true) => implicit.push(c.name),
            None => {}
        }
    }
    if !explicit.is_empty() {
        setters.push(containers_named(&explicit));
    }
    if !setters.is_empty() {
        let detail =
            format!("{} must not set securityContext.runAsNonRoot=false", setters.join(" and "));
        return Some(Violation::new("runAsNonRoot != true", detail));
    }
    (!implicit.is_empty()).then(|| {
        Violation::new(
            "runAsNonRoot != true",
            format!(
                "pod or {} must set securityContext.runAsNonRoot=true",
                containers_named(&implicit)
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
    fn pod_or_every_container_runs_as_non_root() {
        let unset = pod(json!({"spec": {"containers": [
            {"name": "a"}, {"name": "b", "securityContext": {"runAsNonRoot": true}}, {"name": "c"}]}}));
        assert_eq!(
            said(v1_0(&unset)).as_deref(),
            Some("runAsNonRoot != true (pod or containers \"a\", \"c\" must set securityContext.runAsNonRoot=true)")
        );
        let pod_true = pod(json!({"spec": {"securityContext": {"runAsNonRoot": true},
            "containers": [{"name": "a"}]}}));
        assert_eq!(v1_0(&pod_true), None);
        // Explicit falses win over the implicit ones.
        let falses = pod(json!({"spec": {"securityContext": {"runAsNonRoot": false},
            "containers": [{"name": "a", "securityContext": {"runAsNonRoot": false}}, {"name": "b"}]}}));
        assert_eq!(
            said(v1_0(&falses)).as_deref(),
            Some("runAsNonRoot != true (pod and container \"a\" must not set securityContext.runAsNonRoot=false)")
        );
        let container_false = pod(json!({"spec": {"securityContext": {"runAsNonRoot": true},
            "containers": [{"name": "a", "securityContext": {"runAsNonRoot": false}}]}}));
        assert_eq!(
            said(v1_0(&container_false)).as_deref(),
            Some("runAsNonRoot != true (container \"a\" must not set securityContext.runAsNonRoot=false)")
        );
    }
}
