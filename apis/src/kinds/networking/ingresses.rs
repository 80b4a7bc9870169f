//! Ingresses (`networking.k8s.io/v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct Ingresses;

impl Strategy for Ingresses {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::networking::ingress(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::Ingress
    }
}
