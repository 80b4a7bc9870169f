//! LimitRanges (`v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{TablePrinter, CREATED_AT};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct LimitRanges;

impl Strategy for LimitRanges {
    fn default(&self, obj: &mut Value) {
        defaults::core::limit_range(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::limit_range::limit_range(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &CREATED_AT
    }
}
