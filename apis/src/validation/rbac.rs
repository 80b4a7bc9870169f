//! Validation of rbac.authorization.k8s.io/v1: Roles, ClusterRoles (with their aggregation
//! rules), RoleBindings and ClusterRoleBindings, with upstream's (v1.33) messages and field
//! paths. An absent `roleRef.apiGroup` reads as the RBAC group upstream defaults it to, and
//! a `rbac.RoleRef` shown as the bad value is rendered the way Go's `%#v` prints it.

use serde_json::{json, Value};

use super::values::{items, label_selector, path_segment, str_of, strings};
use super::{name_problems, FieldError, NameRule};
use crate::gofmt::{go_quote, go_string_slice};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// `ValidateRole`: each rule (a Role's rules cannot name non-resource URLs).
pub fn role(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, rule) in items(&obj["rules"]).iter().enumerate() {
        policy_rule(rule, true, &format!("rules[{i}]"), &mut errors);
    }
    errors
}

/// `ValidateClusterRole`: each rule, and the aggregation rule's selectors.
pub fn cluster_role(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, rule) in items(&obj["rules"]).iter().enumerate() {
        policy_rule(rule, false, &format!("rules[{i}]"), &mut errors);
    }
    let aggregation = &obj["aggregationRule"];
    if aggregation.is_object() {
        let selectors = items(&aggregation["clusterRoleSelectors"]);
        if selectors.is_empty() {
            errors.push(FieldError::required(
                "aggregationRule.clusterRoleSelectors",
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ));
        }
        for (i, selector) in selectors.iter().enumerate() {
            let at = format!("aggregationRule.clusterRoleSelectors[{i}]");
            let problems = label_selector(&at, selector);
            // What the selector fails on also fails its conversion, whose nil result is
            // the bad value.
            let unusable = !problems.is_empty();
            errors.extend(problems);
            if unusable {
                errors.push(FieldError::invalid(&at, &json!("null"), "invalid label selector."));
            }
        }
    }
    errors
}

fn policy_rule(rule: &Value, namespaced: bool, at: &str, errors: &mut Vec<FieldError>) {
    let empty = |field: &str| items(&rule[field]).is_empty();
    if empty("verbs") {
        errors.push(FieldError::required(
            format!("{at}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    if !empty("nonResourceURLs") {
        let urls = go_string_slice(strings(&rule["nonResourceURLs"]).as_deref());
        if namespaced {
            errors.push(FieldError::invalid_shown(
                format!("{at}.nonResourceURLs"),
                &urls,
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !empty("apiGroups") || !empty("resources") || !empty("resourceNames") {
            errors.push(FieldError::invalid_shown(
                format!("{at}.nonResourceURLs"),
                &urls,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if empty("apiGroups") {
        errors.push(FieldError::required(
            format!("{at}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if empty("resources") {
        errors.push(FieldError::required(
            format!("{at}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
}

/// A binding's roleRef with its API group defaulted.
fn role_ref(obj: &Value) -> (&str, &str, &str) {
    let r = &obj["roleRef"];
    let group = match str_of(&r["apiGroup"]) {
        "" => RBAC_GROUP,
        g => g,
    };
    (group, str_of(&r["kind"]), str_of(&r["name"]))
}

fn binding(obj: &Value, old: Option<&Value>, kinds: &[&str], namespaced: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let (group, kind, name) = role_ref(obj);
    if group != RBAC_GROUP {
        errors.push(FieldError::unsupported("roleRef.apiGroup", &json!(group), &[RBAC_GROUP]));
    }
    if !kinds.contains(&kind) {
        errors.push(FieldError::unsupported("roleRef.kind", &json!(kind), kinds));
    }
    path_segment("roleRef.name", &json!(name), &mut errors);
    for (i, subject) in items(&obj["subjects"]).iter().enumerate() {
        binding_subject(subject, namespaced, &format!("subjects[{i}]"), &mut errors);
    }
    if let Some(old) = old {
        if role_ref(old) != (group, kind, name) {
            let shown = format!(
                "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
                go_quote(group),
                go_quote(kind),
                go_quote(name)
            );
            errors.push(FieldError::invalid_shown("roleRef", &shown, "cannot change roleRef"));
        }
    }
    errors
}

/// `ValidateRoleBindingSubject`, with the API group defaulted as upstream's v1 defaulting
/// does ("" for service accounts, the RBAC group for users and groups).
fn binding_subject(s: &Value, namespaced: bool, at: &str, errors: &mut Vec<FieldError>) {
    let name = str_of(&s["name"]);
    if name.is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), ""));
    }
    let kind = str_of(&s["kind"]);
    let group = match (str_of(&s["apiGroup"]), kind) {
        ("", "User" | "Group") => RBAC_GROUP,
        (g, _) => g,
    };
    match kind {
        "ServiceAccount" => {
            if !name.is_empty() {
                for p in name_problems(name, NameRule::Subdomain) {
                    errors.push(FieldError::invalid(format!("{at}.name"), &s["name"], &p));
                }
            }
            if !group.is_empty() {
                errors.push(FieldError::unsupported(
                    format!("{at}.apiGroup"),
                    &json!(group),
                    &[""],
                ));
            }
            if !namespaced && str_of(&s["namespace"]).is_empty() {
                errors.push(FieldError::required(format!("{at}.namespace"), ""));
            }
        }
        "User" | "Group" => {
            if group != RBAC_GROUP {
                errors.push(FieldError::unsupported(
                    format!("{at}.apiGroup"),
                    &json!(group),
                    &[RBAC_GROUP],
                ));
            }
        }
        _ => errors.push(FieldError::unsupported(
            format!("{at}.kind"),
            &json!(kind),
            &["ServiceAccount", "User", "Group"],
        )),
    }
}

/// `ValidateRoleBinding` (and its update: the roleRef is fixed).
pub fn role_binding(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    binding(obj, old, &["Role", "ClusterRole"], true)
}

/// `ValidateClusterRoleBinding`: only ClusterRoles, and service accounts need a namespace.
pub fn cluster_role_binding(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    binding(obj, old, &["ClusterRole"], false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    #[test]
    fn rbac_objects_from_kubectl_are_valid() {
        // kubectl create role pod-reader --verb=get,list,watch --resource=pods
        let r = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "pod-reader", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]});
        assert!(role(&r, None).is_empty());
        // kubectl create clusterrole logs --verb=get --non-resource-url=/logs/*
        let cr = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "logs"}, "rules": [{"nonResourceURLs": ["/logs/*"], "verbs": ["get"]},
                {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"], "verbs": ["*"]}]});
        assert!(cluster_role(&cr, None).is_empty());
        let aggregated = json!({"metadata": {"name": "monitoring"}, "aggregationRule":
            {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}]}});
        assert!(cluster_role(&aggregated, None).is_empty());
        // kubectl create rolebinding admin --clusterrole=admin --user=bob --serviceaccount=ns:sa
        let rb = json!({"metadata": {"name": "admin", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"},
                {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}, {"kind": "Group", "name": "devs"}]});
        assert!(role_binding(&rb, None).is_empty());
        assert!(role_binding(&rb, Some(&rb)).is_empty());
        let crb = json!({"metadata": {"name": "admin"},
            "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]});
        assert!(cluster_role_binding(&crb, None).is_empty());
    }

    #[test]
    fn rbac_rule_errors_read_like_upstream() {
        let r = json!({"rules": [{"resources": ["pods"]}, {"nonResourceURLs": ["/healthz"], "verbs": ["get"]},
            {"apiGroups": [""], "verbs": ["get"]}]});
        assert_eq!(
            lines(role(&r, None)),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[1].nonResourceURLs: Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs",
                "rules[2].resources: Required value: resource rules must supply at least one resource",
            ]
        );
        let cr = json!({"rules": [{"nonResourceURLs": ["/metrics"], "resources": ["pods"], "verbs": ["get"]}],
            "aggregationRule": {"clusterRoleSelectors": []}});
        assert_eq!(
            lines(cluster_role(&cr, None)),
            [
                "rules[0].nonResourceURLs: Invalid value: []string{\"/metrics\"}: rules cannot apply to both regular resources and non-resource URLs",
                "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil",
            ]
        );
    }

    #[test]
    fn binding_errors_read_like_upstream() {
        let rb = json!({"roleRef": {"apiGroup": "rbac", "kind": "Clusterrole"},
            "subjects": [{"kind": "user", "name": "bob"}, {"kind": "ServiceAccount", "name": "Bad_SA", "apiGroup": "rbac.authorization.k8s.io"},
                {"kind": "Group", "apiGroup": "x"}]});
        assert_eq!(
            lines(role_binding(&rb, None)),
            [
                "roleRef.apiGroup: Unsupported value: \"rbac\": supported values: \"rbac.authorization.k8s.io\"",
                "roleRef.kind: Unsupported value: \"Clusterrole\": supported values: \"Role\", \"ClusterRole\"",
                "roleRef.name: Required value",
                "subjects[0].kind: Unsupported value: \"user\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
                "subjects[1].name: Invalid value: \"Bad_SA\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "subjects[1].apiGroup: Unsupported value: \"rbac.authorization.k8s.io\": supported values: \"\"",
                "subjects[2].name: Required value",
                "subjects[2].apiGroup: Unsupported value: \"x\": supported values: \"rbac.authorization.k8s.io\"",
            ]
        );
        let crb = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "default"}]});
        assert_eq!(
            lines(cluster_role_binding(&crb, None)),
            [
                "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "subjects[0].namespace: Required value",
            ]
        );
        let old = json!({"roleRef": {"kind": "ClusterRole", "name": "view"}});
        let new = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}});
        assert_eq!(
            lines(role_binding(&new, Some(&old))),
            ["roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: cannot change roleRef"]
        );
        // Only the defaulted apiGroup differs: no change.
        let same = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}});
        assert!(role_binding(&same, Some(&old)).is_empty());
    }
}
