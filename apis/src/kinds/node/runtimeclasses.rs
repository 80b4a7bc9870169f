//! RuntimeClasses (`node.k8s.io/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, name, st, text, TablePrinter, AGE, NAME};
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct RuntimeClasses;

impl Strategy for RuntimeClasses {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::node::runtime_class(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    // Upstream documents this column with a field ObjectMeta does not have: empty.
    columns: &[NAME, text("Handler", ""), AGE],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![name(obj), st(obj, &["handler"]).into(), age(obj, now)]
}
