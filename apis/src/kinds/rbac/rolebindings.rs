//! RoleBindings (`rbac.authorization.k8s.io/v1`): names are path segments.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, arr, name, st, text, wide, TablePrinter, AGE, NAME};
use crate::validation::{FieldError, NameRule};
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct RoleBindings;

impl Strategy for RoleBindings {
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn default(&self, obj: &mut Value) {
        defaults::rbac::role_binding(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::rbac::role_binding(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[
        NAME,
        text("Role", D_RB_ROLE),
        AGE,
        wide("Users", "string", "Users in the roleBinding"),
        wide("Groups", "string", "Groups in the roleBinding"),
        wide("ServiceAccounts", "string", "ServiceAccounts in the roleBinding"),
    ],
    row,
};

/// A binding's row; ClusterRoleBindings print the same cells.
pub(super) fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let role = format!("{}/{}", st(obj, &["roleRef", "kind"]), st(obj, &["roleRef", "name"]));
    let (users, groups, sas) = subjects(arr(obj, &["subjects"]));
    vec![name(obj), role.into(), age(obj, now), users.into(), groups.into(), sas.into()]
}

/// Users, groups and service accounts (`namespace/name`) a binding names, each `, `-joined.
fn subjects(subjects: &[Value]) -> (String, String, String) {
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for s in subjects {
        match st(s, &["kind"]) {
            "ServiceAccount" => sas.push(format!("{}/{}", st(s, &["namespace"]), st(s, &["name"]))),
            "User" => users.push(st(s, &["name"]).to_string()),
            "Group" => groups.push(st(s, &["name"]).to_string()),
            _ => {}
        }
    }
    (users.join(", "), groups.join(", "), sas.join(", "))
}

// Column descriptions: the API field documentation upstream takes them from.
const D_RB_ROLE: &str = "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable.";
