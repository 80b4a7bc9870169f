//! PersistentVolumeClaims (`v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct PersistentVolumeClaims;

impl Strategy for PersistentVolumeClaims {
    fn default(&self, obj: &mut Value) {
        defaults::core::persistent_volume_claim(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::persistent_volume::persistent_volume_claim(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::PersistentVolumeClaim
    }
}
