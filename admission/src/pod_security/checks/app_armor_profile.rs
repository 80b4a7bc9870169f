//! `appArmorProfile` (baseline): the pod and its containers may set an AppArmor profile of
//! type `RuntimeDefault` or `Localhost` only, and the deprecated
//! `container.apparmor.security.beta.kubernetes.io/*` annotations may say only
//! `runtime/default`, `localhost/*` or nothing.

use std::collections::BTreeSet;

use rkube_apis::go_quote;

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{containers_named, join_quote, pluralize, Pod};

pub const CHECK: Check = Check {
    id: "appArmorProfile",
    level: Level::Baseline,
    versions: &[Versioned { since: 0, check: v1_0, overrides: &[] }],
};

const ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

fn allowed_type(profile_type: &str) -> bool {
    matches!(profile_type, "RuntimeDefault" | "Localhost")
}

fn allowed_annotation(value: &str) -> bool {
    value.is_empty() || value == "runtime/default" || value.starts_with("localhost/")
}

fn v1_0(pod: &Pod) -> Option<Violation> {
    let mut setters = Vec::new();
    let mut values = BTreeSet::new();
    if let Some(profile) = pod.security_context().and_then(|sc| sc.app_armor_profile.as_ref()) {
        if !allowed_type(&profile.type_) {
            setters.push("pod".to_string());
            values.insert(profile.type_.clone());
        }
    }
    let mut containers = Vec::new();
    for c in pod.containers() {
        if let Some(profile) = c.security_context.and_then(|sc| sc.app_armor_profile.as_ref()) {
            if !allowed_type(&profile.type_) {
                containers.push(c.name);
                values.insert(profile.type_.clone());
            }
        }
    }
    if !containers.is_empty() {
        setters.push(containers_named(&containers));
    }
    let mut values: Vec<String> = values.into_iter().collect();
    // Annotations are listed after the types, sorted.
    let annotations: Vec<String> = pod
        .annotations
        .iter()
        .filter(|(k, v)| k.starts_with(ANNOTATION_PREFIX) && !allowed_annotation(v))
        .map(|(k, v)| format!("{k}={}", go_quote(v)))
        .collect();
    if !annotations.is_empty() {
        setters.push(pluralize("annotation", "annotations", annotations.len()).to_string());
        values.extend(annotations);
    }
    (!setters.is_empty()).then(|| {
        Violation::new(
            pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", values.len()),
            format!(
                "{} must not set AppArmor profile type to {}",
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
    fn only_runtime_default_and_localhost_profiles() {
        let ok = pod(json!({
            "metadata": {"annotations": {
                "container.apparmor.security.beta.kubernetes.io/a": "runtime/default",
                "container.apparmor.security.beta.kubernetes.io/b": "localhost/x",
                "container.apparmor.security.beta.kubernetes.io/c": "",
                "other": "unconfined"}},
            "spec": {
                "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
                "containers": [{"name": "a", "securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}}}],
            }
        }));
        assert_eq!(v1_0(&ok), None);

        let bad = pod(json!({
            "spec": {
                "securityContext": {"appArmorProfile": {"type": "Unconfined"}},
                "containers": [
                    {"name": "a", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}},
                    {"name": "b", "securityContext": {"appArmorProfile": {"type": "Other"}}},
                ],
            }
        }));
        assert_eq!(
            said(v1_0(&bad)).as_deref(),
            Some("forbidden AppArmor profiles (pod and containers \"a\", \"b\" must not set AppArmor profile type to \"Other\", \"Unconfined\")")
        );
    }

    #[test]
    fn annotations_are_listed_after_the_types() {
        let p = pod(json!({
            "metadata": {"annotations": {
                "container.apparmor.security.beta.kubernetes.io/z": "unconfined",
                "container.apparmor.security.beta.kubernetes.io/a": "bad\"one"}},
            "spec": {"containers": [
                {"name": "a", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}]}
        }));
        assert_eq!(
            said(v1_0(&p)).as_deref(),
            Some(
                r#"forbidden AppArmor profiles (container "a" and annotations must not set AppArmor profile type to "Unconfined", "container.apparmor.security.beta.kubernetes.io/a="bad\"one"", "container.apparmor.security.beta.kubernetes.io/z="unconfined"")"#
            )
        );
        let one = pod(json!({
            "metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/z": "unconfined"}},
            "spec": {"containers": [{"name": "z"}]}
        }));
        assert_eq!(
            said(v1_0(&one)).as_deref(),
            Some(
                r#"forbidden AppArmor profile (annotation must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/z="unconfined"")"#
            )
        );
    }
}
