//! Defaults of `rbac.authorization.k8s.io/v1` (`pkg/apis/rbac/v1/defaults.go` upstream): the
//! subjects of RoleBindings and ClusterRoleBindings.

use serde_json::{json, Value};

use super::{default_unset, field, items};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The role and the user and group subjects of a binding belong to the RBAC group; a
/// service account's group stays empty (and so absent).
pub fn role_binding(binding: &mut Value) {
    if let Some(role_ref) = field(binding, "roleRef").filter(|r| r.is_object()) {
        default_unset(role_ref, "apiGroup", json!(RBAC_GROUP));
    }
    for subject in items(binding, "subjects") {
        if matches!(subject["kind"].as_str(), Some("User" | "Group")) {
            default_unset(subject, "apiGroup", json!(RBAC_GROUP));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::defaulted_in as defaulted;
    use super::*;

    #[test]
    fn bindings_get_api_groups() {
        for plural in ["rolebindings", "clusterrolebindings"] {
            let binding = defaulted(
                "rbac.authorization.k8s.io",
                "v1",
                plural,
                json!({"roleRef": {"apiGroup": "", "kind": "ClusterRole", "name": "view"}, "subjects": [
                    {"kind": "User", "name": "jane"}, {"kind": "Group", "name": "devs"},
                    {"kind": "ServiceAccount", "name": "default", "namespace": "default"}]}),
            );
            assert_eq!(
                binding,
                json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view"}, "subjects": [
                    {"kind": "User", "name": "jane", "apiGroup": RBAC_GROUP},
                    {"kind": "Group", "name": "devs", "apiGroup": RBAC_GROUP},
                    {"kind": "ServiceAccount", "name": "default", "namespace": "default"}]})
            );
        }
        let role = json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        assert_eq!(defaulted("rbac.authorization.k8s.io", "v1", "roles", role.clone()), role);
    }
}
