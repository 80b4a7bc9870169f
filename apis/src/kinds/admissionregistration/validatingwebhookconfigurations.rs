//! ValidatingWebhookConfigurations (`admissionregistration.k8s.io/v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::TablePrinter;
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct ValidatingWebhookConfigurations;

impl Strategy for ValidatingWebhookConfigurations {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        defaults::admissionregistration::validating_webhook_configuration(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::admissionregistration::validating_webhook_configuration(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &super::WEBHOOK_PRINTER
    }
}
