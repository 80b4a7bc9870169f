//! `privileged` (baseline): no privileged containers.

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{containers_named, Pod};

pub const CHECK: Check = Check {
    id: "privileged",
    level: Level::Baseline,
    versions: &[Versioned { since: 0, check: v1_0, overrides: &[] }],
};

fn v1_0(pod: &Pod) -> Option<Violation> {
    let bad = pod.containers_where(|sc| sc.and_then(|sc| sc.privileged) == Some(true));
    (!bad.is_empty()).then(|| {
        Violation::new(
            "privileged",
            format!("{} must not set securityContext.privileged=true", containers_named(&bad)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_security::checks::{pod, said};
    use serde_json::json;

    #[test]
    fn no_privileged_containers_of_any_kind() {
        let p = pod(json!({"spec": {
            "initContainers": [{"name": "i", "securityContext": {"privileged": true}}],
            "containers": [{"name": "a", "securityContext": {"privileged": false}}, {"name": "b"}],
            "ephemeralContainers": [{"name": "e", "securityContext": {"privileged": true}}],
        }}));
        assert_eq!(
            said(v1_0(&p)).as_deref(),
            Some(
                "privileged (containers \"i\", \"e\" must not set securityContext.privileged=true)"
            )
        );
        assert_eq!(v1_0(&pod(json!({"spec": {"containers": [{"name": "b"}]}}))), None);
    }
}
