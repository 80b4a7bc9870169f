//! ValidatingAdmissionPolicyBindings (`admissionregistration.k8s.io/v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct ValidatingAdmissionPolicyBindings;

impl Strategy for ValidatingAdmissionPolicyBindings {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        defaults::admissionregistration::validating_admission_policy_binding(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::admissionregistration::validating_admission_policy_binding(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::ValidatingAdmissionPolicyBinding
    }
}
