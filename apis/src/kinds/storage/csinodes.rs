//! CSINodes (`storage.k8s.io/v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct CsiNodes;

impl Strategy for CsiNodes {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::storage::csi_node(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::CsiNode
    }
}
