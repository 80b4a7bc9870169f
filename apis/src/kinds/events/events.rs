//! events.k8s.io/v1 Events: core v1 Events under other names, stored as those; field
//! selectors use this API's names for the core fields.

use serde_json::Value;

use crate::kinds::core;
use crate::strategy::Strategy;
use crate::tables::TablePrinter;
use crate::validation::FieldError;
use crate::{convert, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Events;

impl Strategy for Events {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::event::event(obj, old)
    }

    fn field_label_conversions(&self) -> Option<&'static [(&'static str, &'static str)]> {
        Some(&[
            ("metadata.name", "metadata.name"),
            ("metadata.namespace", "metadata.namespace"),
            ("reason", "reason"),
            ("regarding.kind", "involvedObject.kind"),
            ("regarding.namespace", "involvedObject.namespace"),
            ("regarding.name", "involvedObject.name"),
            ("regarding.uid", "involvedObject.uid"),
            ("regarding.apiVersion", "involvedObject.apiVersion"),
            ("regarding.resourceVersion", "involvedObject.resourceVersion"),
            ("regarding.fieldPath", "involvedObject.fieldPath"),
            ("reportingController", "reportingComponent"),
            ("source", "source"),
            ("type", "type"),
        ])
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }

    fn convert_from(&self, obj: Value, from: &str) -> Value {
        convert::event_from_core(obj, from)
    }
}

/// The table `kubectl get` prints: core Events' columns, with the cells read from this API's
/// field names.
const PRINTER: TablePrinter =
    TablePrinter { columns: core::EVENT_COLUMNS, row: |obj, now| core::event_row(true, obj, now) };
