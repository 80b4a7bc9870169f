//! ReplicationControllers (`v1`).

use serde_json::Value;

use crate::strategy::{SelectableField, Strategy};
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, disabled_fields, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct ReplicationControllers;

impl Strategy for ReplicationControllers {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn drop_disabled_fields(&self, obj: &mut Value, old: Option<&Value>) {
        disabled_fields::pod_spec_at(obj, old, disabled_fields::WORKLOAD);
    }

    fn default(&self, obj: &mut Value) {
        defaults::core::replication_controller(obj);
    }

    fn validate(&self, obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
        validation::core::replication_controller::replication_controller(obj)
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[("status.replicas", &["status", "replicas"])]
    }

    fn printer(&self) -> Printer {
        Printer::ReplicationController
    }
}
