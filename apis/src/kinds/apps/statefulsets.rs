//! StatefulSets (`apps/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{
    age, at, containers, int, int_or, name, text, TablePrinter, AGE, CONTAINERS, IMAGES, NAME,
};
use crate::validation::FieldError;
use crate::{defaults, disabled_fields, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct StatefulSets;

impl Strategy for StatefulSets {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn drop_disabled_fields(&self, obj: &mut Value, old: Option<&Value>) {
        disabled_fields::pod_spec_at(obj, old, disabled_fields::WORKLOAD);
    }

    fn default(&self, obj: &mut Value) {
        defaults::apps::stateful_set(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::apps::stateful_set(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[NAME, text("Ready", "Number of the pod with ready state"), AGE, CONTAINERS, IMAGES],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = containers(at(obj, &["spec", "template", "spec", "containers"]));
    let ready = format!(
        "{}/{}",
        int(obj, &["status", "readyReplicas"]),
        int_or(obj, &["spec", "replicas"], 1)
    );
    vec![name(obj), ready.into(), age(obj, now), names.into(), images.into()]
}
