//! autoscaling/v2 HorizontalPodAutoscalers (the stored version).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{convert, defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct HorizontalPodAutoscalers;

impl Strategy for HorizontalPodAutoscalers {
    fn default(&self, obj: &mut Value) {
        defaults::autoscaling::hpa_v2(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::autoscaling::horizontal_pod_autoscaler(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::HorizontalPodAutoscaler
    }

    fn convert_from(&self, obj: Value, from: &str) -> Value {
        convert::hpa_to_v2(obj, from)
    }
}
