//! ControllerRevisions (`apps/v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct ControllerRevisions;

impl Strategy for ControllerRevisions {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::apps::controller_revision(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::ControllerRevision
    }
}
