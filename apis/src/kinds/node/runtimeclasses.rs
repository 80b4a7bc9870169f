//! RuntimeClasses (`node.k8s.io/v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct RuntimeClasses;

impl Strategy for RuntimeClasses {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::node::runtime_class(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::RuntimeClass
    }
}
