//! EndpointSlices (`discovery.k8s.io/v1`): the generation also counts label changes (the
//! slice's service), as upstream.

use serde_json::Value;

use crate::strategy::{metadata_differs, spec_differs, Strategy};
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, disabled_fields, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct EndpointSlices;

impl Strategy for EndpointSlices {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn bumps_generation(&self, new: &Value, old: &Value) -> bool {
        spec_differs(new, old) || metadata_differs(new, old, "labels")
    }

    fn drop_disabled_fields(&self, obj: &mut Value, old: Option<&Value>) {
        disabled_fields::endpoint_slice(obj, old);
    }

    fn default(&self, obj: &mut Value) {
        defaults::cluster::endpoint_slice(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::discovery::endpoint_slice(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::EndpointSlice
    }
}
