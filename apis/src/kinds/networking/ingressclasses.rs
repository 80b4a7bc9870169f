//! IngressClasses (`networking.k8s.io/v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct IngressClasses;

impl Strategy for IngressClasses {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        defaults::cluster::ingress_class(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::networking::ingress_class(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::IngressClass
    }
}
