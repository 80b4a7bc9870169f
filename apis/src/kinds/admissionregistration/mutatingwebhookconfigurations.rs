//! MutatingWebhookConfigurations (`admissionregistration.k8s.io/v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::TablePrinter;
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct MutatingWebhookConfigurations;

impl Strategy for MutatingWebhookConfigurations {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        defaults::admissionregistration::mutating_webhook_configuration(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::admissionregistration::mutating_webhook_configuration(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &super::WEBHOOK_PRINTER
    }
}
