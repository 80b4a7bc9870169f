//! PodTemplates (`v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{at, containers, format_labels, name, text, TablePrinter, NAME};
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

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[
        NAME,
        text("Containers", "Names of each container in the template."),
        text("Images", "Images referenced by each container in the template."),
        text("Pod Labels", "The labels for the pod template."),
    ],
    row,
};

fn row(obj: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = containers(at(obj, &["template", "spec", "containers"]));
    vec![
        name(obj),
        names.into(),
        images.into(),
        format_labels(at(obj, &["template", "metadata", "labels"])).into(),
    ]
}
