//! `seccompProfile_restricted` (restricted, from v1.19): the pod, or every container, sets a
//! seccomp profile of type `RuntimeDefault` or `Localhost`, and nothing sets another type. It
//! replaces the baseline seccomp check; from v1.25 Windows pods pass.

use std::collections::BTreeSet;

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{containers_named, join_quote, Pod};

use super::seccomp_profile_baseline::{allowed_type, ID as BASELINE};

pub const CHECK: Check = Check {
    id: "seccompProfile_restricted",
    level: Level::Restricted,
    versions: &[
        Versioned { since: 19, check: v1_19, overrides: &[BASELINE] },
        Versioned { since: 25, check: v1_25, overrides: &[BASELINE] },
    ],
};

fn v1_19(pod: &Pod) -> Option<Violation> {
    let mut setters = Vec::new();
    let mut values = BTreeSet::new();
    let mut pod_set = false;
    if let Some(profile) = pod.security_context().and_then(|sc| sc.seccomp_profile.as_ref()) {
        if allowed_type(&profile.type_) {
            pod_set = true;
        } else {
            setters.push("pod".to_string());
            values.insert(profile.type_.as_str());
        }
    }
    let (mut explicit, mut implicit) = (Vec::new(), Vec::new());
    for c in pod.containers() {
        match c.security_context.and_then(|sc| sc.seccomp_profile.as_ref()) {
            Some(profile) if !allowed_type(&profile.type_) => {
                explicit.push(c.name);
                values.insert(profile.type_.as_str());
            }
            Some(_) => {}
            None if !pod_set => implicit.push(c.name),
            None => {}
        }
    }
    if !explicit.is_empty() {
        setters.push(containers_named(&explicit));
    }
    if !setters.is_empty() {
        let values: Vec<&str> = values.into_iter().collect();
        let detail = format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            setters.join(" and "),
            join_quote(&values)
        );
        return Some(Violation::new("seccompProfile", detail));
    }
    (!implicit.is_empty()).then(|| {
        Violation::new(
            "seccompProfile",
            format!(
                "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
                containers_named(&implicit)
            ),
        )
    })
}

fn v1_25(pod: &Pod) -> Option<Violation> {
    if pod.is_windows() {
        return None;
    }
    v1_19(pod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_security::checks::{pod, said};
    use serde_json::json;

    #[test]
    fn a_profile_must_be_set() {
        let unset = pod(json!({"spec": {"containers": [
            {"name": "a"}, {"name": "b", "securityContext": {"seccompProfile": {"type": "Localhost", "localhostProfile": "p"}}}]}}));
        assert_eq!(
            said(v1_25(&unset)).as_deref(),
            Some("seccompProfile (pod or container \"a\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")")
        );
        let pod_level =
            pod(json!({"spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "a"}]}}));
        assert_eq!(v1_25(&pod_level), None);
        let bad = pod(
            json!({"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}},
            "containers": [{"name": "a"}, {"name": "b", "securityContext": {"seccompProfile": {"type": "Unconfined"}}}]}}),
        );
        assert_eq!(
            said(v1_19(&bad)).as_deref(),
            Some("seccompProfile (pod and container \"b\" must not set securityContext.seccompProfile.type to \"Unconfined\")")
        );
        let windows =
            pod(json!({"spec": {"os": {"name": "windows"}, "containers": [{"name": "a"}]}}));
        assert_eq!(v1_25(&windows), None);
        assert!(v1_19(&windows).is_some());
    }
}
