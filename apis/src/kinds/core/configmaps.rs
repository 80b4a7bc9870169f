//! ConfigMaps (`v1`): keys, size, and immutability.

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct ConfigMaps;

impl Strategy for ConfigMaps {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::config::config_map(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::ConfigMap
    }
}
