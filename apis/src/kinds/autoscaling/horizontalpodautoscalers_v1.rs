//! autoscaling/v1 HorizontalPodAutoscalers, served from the v2 storage: what v1 cannot say
//! travels in annotations, and the status ones are status (kept from the old object).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::TablePrinter;
use crate::validation::FieldError;
use crate::{convert, defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct HorizontalPodAutoscalersV1;

impl Strategy for HorizontalPodAutoscalersV1 {
    fn prepare_for_create(&self, obj: &mut Value) {
        convert::keep_hpa_v1_status(obj, None);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value, _subresource: Option<&str>) {
        convert::keep_hpa_v1_status(new, Some(old));
    }

    fn default(&self, obj: &mut Value) {
        defaults::autoscaling::hpa_v1(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::autoscaling::horizontal_pod_autoscaler(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &super::horizontalpodautoscalers::PRINTER
    }

    fn convert_from(&self, obj: Value, from: &str) -> Value {
        convert::hpa_to_v1(obj, from)
    }
}
