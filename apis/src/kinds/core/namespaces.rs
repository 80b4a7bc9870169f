//! Namespaces (`v1`): created `Active` with the `kubernetes` finalizer and their name label;
//! `spec.finalizers` change only through `/finalize` and hold the deletion, which marks the
//! namespace `Terminating`.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::strategy::{SelectableField, Strategy};
use crate::tables::{age, name, or, st, text, TablePrinter, AGE, NAME};
use crate::validation::{FieldError, NameRule};
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Namespaces;

impl Strategy for Namespaces {
    fn name_rule(&self) -> NameRule {
        NameRule::Label
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({"phase": "Active"});
        let name = obj["metadata"]["name"].clone();
        if !obj["metadata"]["labels"].is_object() {
            obj["metadata"]["labels"] = json!({});
        }
        obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
        if !obj["spec"]["finalizers"].is_array() {
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value, subresource: Option<&str>) {
        if subresource != Some("finalize") {
            new["spec"] = old["spec"].clone();
        }
    }

    fn default(&self, obj: &mut Value) {
        defaults::core::namespace(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::namespace::namespace(obj, old)
    }

    fn validate_subresource_update(
        &self,
        new: &Value,
        _old: &Value,
        _sub: &str,
    ) -> Vec<FieldError> {
        validation::core::namespace::namespace_status(new)
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[("status.phase", &["status", "phase"])]
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }

    fn has_own_finalizers(&self, obj: &Value) -> bool {
        obj["spec"]["finalizers"].as_array().is_some_and(|f| !f.is_empty())
    }

    fn mark_for_deletion(&self, obj: &mut Value) {
        obj["status"]["phase"] = json!("Terminating");
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter =
    TablePrinter { columns: &[NAME, text("Status", "The status of the namespace"), AGE], row };

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![name(obj), or(st(obj, &["status", "phase"]), "Active").into(), age(obj, now)]
}
