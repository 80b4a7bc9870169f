//! Endpoints (`v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Endpoints;

impl Strategy for Endpoints {
    fn default(&self, obj: &mut Value) {
        defaults::core::endpoints(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::endpoints::endpoints(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::Endpoints
    }
}
