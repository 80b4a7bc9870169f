//! Events (`v1`), stored for both groups that serve them (events.k8s.io/v1 is converted
//! from and to this form).

use serde_json::Value;

use crate::strategy::{SelectableField, Strategy};
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{convert, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Events;

impl Strategy for Events {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::event::core_event(obj, old)
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[
            ("involvedObject.kind", &["involvedObject", "kind"]),
            ("involvedObject.namespace", &["involvedObject", "namespace"]),
            ("involvedObject.name", &["involvedObject", "name"]),
            ("involvedObject.uid", &["involvedObject", "uid"]),
            ("involvedObject.apiVersion", &["involvedObject", "apiVersion"]),
            ("involvedObject.resourceVersion", &["involvedObject", "resourceVersion"]),
            ("involvedObject.fieldPath", &["involvedObject", "fieldPath"]),
            ("reason", &["reason"]),
            ("reportingComponent", &["reportingComponent"]),
            ("source", &["source", "component"]),
            ("type", &["type"]),
        ]
    }

    fn printer(&self) -> Printer {
        Printer::Event
    }

    fn convert_from(&self, obj: Value, from: &str) -> Value {
        convert::event_to_core(obj, from)
    }
}
