//! StorageClasses (`storage.k8s.io/v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct StorageClasses;

impl Strategy for StorageClasses {
    fn default(&self, obj: &mut Value) {
        defaults::cluster::storage_class(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::storage::storage_class(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::StorageClass
    }
}
