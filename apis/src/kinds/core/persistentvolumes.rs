//! PersistentVolumes (`v1`): created with the status their creator gives.

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct PersistentVolumes;

impl Strategy for PersistentVolumes {
    fn keeps_status_on_create(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        defaults::core::persistent_volume(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::persistent_volume::persistent_volume(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::PersistentVolume
    }
}
