//! RoleBindings (`rbac.authorization.k8s.io/v1`): names are path segments.

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
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

    fn printer(&self) -> Printer {
        Printer::RoleBinding
    }
}
