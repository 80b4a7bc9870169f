//! `seccompProfile_baseline` (baseline): a seccomp profile, where one is set, is
//! `RuntimeDefault` or `Localhost` (before v1.19: the alpha annotations say `runtime/default`,
//! `docker/default` or `localhost/*`). The restricted seccomp check replaces it.

use std::collections::BTreeSet;

use rkube_apis::go_quote;

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{containers_named, join_quote, pluralize, Pod};

pub const ID: &str = "seccompProfile_baseline";

pub const CHECK: Check = Check {
    id: ID,
    level: Level::Baseline,
    versions: &[
        Versioned { since: 0, check: v1_0, overrides: &[] },
        Versioned { since: 19, check: v1_19, overrides: &[] },
    ],
};

const POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const CONTAINER_ANNOTATION_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// A profile type the baseline (and restricted) level allows.
pub fn allowed_type(profile_type: &str) -> bool {
    matches!(profile_type, "RuntimeDefault" | "Localhost")
}

fn allowed_annotation(value: &str) -> bool {
    value == "runtime/default" || value == "docker/default" || value.starts_with("localhost/")
}

fn v1_0(pod: &Pod) -> Option<Violation> {
    let mut keys = vec![POD_ANNOTATION.to_string()];
    keys.extend(pod.containers().map(|c| format!("{CONTAINER_ANNOTATION_PREFIX}{}", c.name)));
    let forbidden: BTreeSet<String> = keys
        .iter()
        .filter_map(|key| {
            let value = pod.annotations.get(key)?;
            (!allowed_annotation(value)).then(|| format!("{key}={}", go_quote(value)))
        })
        .collect();
    (!forbidden.is_empty()).then(|| {
        let forbidden: Vec<String> = forbidden.into_iter().collect();
        Violation::new(
            "seccompProfile",
            format!(
                "forbidden {} {}",
                pluralize("annotation", "annotations", forbidden.len()),
                forbidden.join(", ")
            ),
        )
    })
}

fn v1_19(pod: &Pod) -> Option<Violation> {
    let mut setters = Vec::new();
    let mut values = BTreeSet::new();
    if let Some(profile) = pod.security_context().and_then(|sc| sc.seccomp_profile.as_ref()) {
        if !allowed_type(&profile.type_) {
            setters.push("pod".to_string());
            values.insert(profile.type_.as_str());
        }
    }
    let mut containers = Vec::new();
    for c in pod.containers() {
        if let Some(profile) = c.security_context.and_then(|sc| sc.seccomp_profile.as_ref()) {
            if !allowed_type(&profile.type_) {
                containers.push(c.name);
                values.insert(profile.type_.as_str());
            }
        }
    }
    if !containers.is_empty() {
        setters.push(containers_named(&containers));
    }
    (!setters.is_empty()).then(|| {
        let values: Vec<&str> = values.into_iter().collect();
        Violation::new(
            "seccompProfile",
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                setters.join(" and "),
                join_quote(&values)
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
    fn set_profiles_are_runtime_default_or_localhost() {
        let p = pod(json!({"spec": {
            "securityContext": {"seccompProfile": {"type": "Unconfined"}},
            "containers": [
                {"name": "a", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
                {"name": "b", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}},
                {"name": "c"},
            ],
        }}));
        assert_eq!(
            said(v1_19(&p)).as_deref(),
            Some("seccompProfile (pod and container \"a\" must not set securityContext.seccompProfile.type to \"Unconfined\")")
        );
        // Unset is fine at the baseline level.
        assert_eq!(v1_19(&pod(json!({"spec": {"containers": [{"name": "c"}]}}))), None);
    }

    #[test]
    fn before_v1_19_the_annotations_are_checked() {
        let p = pod(json!({
            "metadata": {"annotations": {
                "seccomp.security.alpha.kubernetes.io/pod": "unconfined",
                "container.seccomp.security.alpha.kubernetes.io/a": "localhost/x",
                "container.seccomp.security.alpha.kubernetes.io/b": "unconfined",
                "container.seccomp.security.alpha.kubernetes.io/gone": "unconfined"}},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
        }));
        assert_eq!(
            said(v1_0(&p)).as_deref(),
            Some(
                r#"seccompProfile (forbidden annotations container.seccomp.security.alpha.kubernetes.io/b="unconfined", seccomp.security.alpha.kubernetes.io/pod="unconfined")"#
            )
        );
        assert_eq!(v1_19(&p), None);
    }
}
