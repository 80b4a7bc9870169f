//! PodTemplates (`v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, disabled_fields, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct PodTemplates;

impl Strategy for PodTemplates {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn drop_disabled_fields(&self, obj: &mut Value, old: Option<&Value>) {
        disabled_fields::pod_spec_at(obj, old, disabled_fields::POD_TEMPLATE);
    }

    fn default(&self, obj: &mut Value) {
        defaults::core::pod_template_object(obj);
    }

    fn validate(&self, obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
        validation::core::pod::pod_spec(&obj["template"]["spec"], "template.spec")
    }

    fn printer(&self) -> Printer {
        Printer::PodTemplate
    }
}
