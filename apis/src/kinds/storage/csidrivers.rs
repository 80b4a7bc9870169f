//! CSIDrivers (`storage.k8s.io/v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct CsiDrivers;

impl Strategy for CsiDrivers {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        defaults::cluster::csi_driver(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::storage::csi_driver(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::CsiDriver
    }
}
