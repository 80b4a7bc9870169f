//! APIServices (`apiregistration.k8s.io/v1`): names are path segments.

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation::{FieldError, NameRule};
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct ApiServices;

impl Strategy for ApiServices {
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn default(&self, obj: &mut Value) {
        defaults::apiregistration::api_service(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::apiregistration::api_service(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::ApiService
    }
}
