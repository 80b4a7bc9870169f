//! Roles (`rbac.authorization.k8s.io/v1`): names are path segments.

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{TablePrinter, CREATED_AT};
use crate::validation;
use crate::validation::{FieldError, NameRule};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Roles;

impl Strategy for Roles {
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::rbac::role(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &CREATED_AT
    }
}
