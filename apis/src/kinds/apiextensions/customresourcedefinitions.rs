//! CustomResourceDefinitions (`apiextensions.k8s.io/v1`): a delete first deletes the
//! definition's objects (the API server serves them: `rkube_server::custom_resources`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{TablePrinter, CREATED_AT};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct CustomResourceDefinitions;

impl Strategy for CustomResourceDefinitions {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        defaults::apiextensions::custom_resource_definition(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::apiextensions::custom_resource_definition(obj, old)
    }

    /// Its objects are deleted before it is (apiextensions-apiserver's cleanup finalizer).
    fn finalizers_on_delete(&self) -> &'static [&'static str] {
        &["customresourcecleanup.apiextensions.k8s.io"]
    }

    fn printer(&self) -> &'static TablePrinter {
        &CREATED_AT
    }
}
