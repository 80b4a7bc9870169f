//! PriorityClasses (`scheduling.k8s.io/v1`): a generation of 1 that no update bumps, as
//! upstream.

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct PriorityClasses;

impl Strategy for PriorityClasses {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn bumps_generation(&self, _new: &Value, _old: &Value) -> bool {
        false
    }

    fn default(&self, obj: &mut Value) {
        defaults::scheduling::priority_class(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::scheduling::priority_class(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::PriorityClass
    }
}
