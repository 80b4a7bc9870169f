//! ClusterRoleBindings (`rbac.authorization.k8s.io/v1`): names are path segments.

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{text, wide, TablePrinter, AGE, NAME};
use crate::validation::{FieldError, NameRule};
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct ClusterRoleBindings;

impl Strategy for ClusterRoleBindings {
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn default(&self, obj: &mut Value) {
        defaults::rbac::role_binding(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::rbac::cluster_role_binding(obj, old)
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
        text("Role", D_CRB_ROLE),
        AGE,
        wide("Users", "string", "Users in the clusterRoleBinding"),
        wide("Groups", "string", "Groups in the clusterRoleBinding"),
        wide("ServiceAccounts", "string", "ServiceAccounts in the clusterRoleBinding"),
    ],
    row: super::rolebindings::row,
};

// Column descriptions: the API field documentation upstream takes them from.
const D_CRB_ROLE: &str = "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable.";
