//! ResourceQuotas (`v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct ResourceQuotas;

impl Strategy for ResourceQuotas {
    fn default(&self, obj: &mut Value) {
        defaults::core::resource_quota(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::resource_quota::resource_quota(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::ResourceQuota
    }
}
