//! `seLinuxOptions` (baseline): SELinux types only from the container ones (from v1.31 also
//! `container_engine_t`), and no SELinux user or role, on the pod or any container.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::SELinuxOptions;

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{containers_named, join_quote, pluralize, Pod};

pub const CHECK: Check = Check {
    id: "seLinuxOptions",
    level: Level::Baseline,
    versions: &[
        Versioned { since: 0, check: v1_0, overrides: &[] },
        Versioned { since: 31, check: v1_31, overrides: &[] },
    ],
};

const TYPES_1_0: &[&str] = &["", "container_t", "container_init_t", "container_kvm_t"];
const TYPES_1_31: &[&str] =
    &["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"];

fn v1_0(pod: &Pod) -> Option<Violation> {
    check(pod, TYPES_1_0)
}

fn v1_31(pod: &Pod) -> Option<Violation> {
    check(pod, TYPES_1_31)
}

/// What is wrong, gathered over the pod and all its containers.
#[derive(Default)]
struct Findings<'a> {
    types: BTreeSet<&'a str>,
    user: bool,
    role: bool,
}

impl<'a> Findings<'a> {
    /// Whether `options` are allowed; notes what is not.
    fn allowed(&mut self, options: &'a SELinuxOptions, types: &[&str]) -> bool {
        let mut ok = true;
        let selinux_type = options.type_.as_deref().unwrap_or("");
        if !types.contains(&selinux_type) {
            self.types.insert(selinux_type);
            ok = false;
        }
        if options.user.as_deref().is_some_and(|u| !u.is_empty()) {
            self.user = true;
            ok = false;
        }
        if options.role.as_deref().is_some_and(|r| !r.is_empty()) {
            self.role = true;
            ok = false;
        }
        ok
    }
}

fn check(pod: &Pod, types: &[&str]) -> Option<Violation> {
    let mut found = Findings::default();
    let mut setters = Vec::new();
    if let Some(options) = pod.security_context().and_then(|sc| sc.se_linux_options.as_ref()) {
        if !found.allowed(options, types) {
            setters.push("pod".to_string());
        }
    }
    let mut containers = Vec::new();
    for c in pod.containers() {
        if let Some(options) = c.security_context.and_then(|sc| sc.se_linux_options.as_ref()) {
            if !found.allowed(options, types) {
                containers.push(c.name);
            }
        }
    }
    if !containers.is_empty() {
        setters.push(containers_named(&containers));
    }
    if setters.is_empty() {
        return None;
    }
    let mut what = Vec::new();
    if !found.types.is_empty() {
        let bad: Vec<&str> = found.types.iter().copied().collect();
        what.push(format!("{} {}", pluralize("type", "types", bad.len()), join_quote(&bad)));
    }
    if found.user {
        what.push("user may not be set".to_string());
    }
    if found.role {
        what.push("role may not be set".to_string());
    }
    Some(Violation::new(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            setters.join(" and "),
            what.join("; ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_security::checks::{pod, said};
    use serde_json::json;

    #[test]
    fn container_types_only_and_no_user_or_role() {
        let p = pod(json!({"spec": {
            "securityContext": {"seLinuxOptions": {"type": "spc_t", "level": "s0:c1"}},
            "containers": [
                {"name": "a", "securityContext": {"seLinuxOptions": {"user": "u", "role": "r"}}},
                {"name": "b", "securityContext": {"seLinuxOptions": {"type": "container_t", "level": "s0"}}},
                {"name": "c", "securityContext": {"seLinuxOptions": {"type": "other_t"}}},
            ],
        }}));
        assert_eq!(
            said(v1_31(&p)).as_deref(),
            Some("seLinuxOptions (pod and containers \"a\", \"c\" set forbidden securityContext.seLinuxOptions: types \"other_t\", \"spc_t\"; user may not be set; role may not be set)")
        );
        let one = pod(json!({"spec": {"containers": [
            {"name": "a", "securityContext": {"seLinuxOptions": {"role": "r"}}}]}}));
        assert_eq!(
            said(v1_0(&one)).as_deref(),
            Some("seLinuxOptions (container \"a\" set forbidden securityContext.seLinuxOptions: role may not be set)")
        );
    }

    #[test]
    fn container_engine_t_from_v1_31() {
        let p = pod(
            json!({"spec": {"securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}}}),
        );
        assert_eq!(v1_31(&p), None);
        assert_eq!(
            said(v1_0(&p)).as_deref(),
            Some("seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type \"container_engine_t\")")
        );
    }
}
