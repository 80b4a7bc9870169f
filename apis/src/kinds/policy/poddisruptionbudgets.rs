//! PodDisruptionBudgets (`policy/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, at, col, int, int_or_string, name, text, TablePrinter, AGE, NAME};
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct PodDisruptionBudgets;

impl Strategy for PodDisruptionBudgets {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::policy::pod_disruption_budget(obj, old)
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
        text("Min Available", "The minimum number of pods that must be available."),
        text("Max Unavailable", "The maximum number of pods that may be unavailable."),
        col(
            "Allowed Disruptions",
            "integer",
            "Calculated number of pods that may be disrupted at this time.",
        ),
        AGE,
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(obj),
        int_or_string(at(obj, &["spec", "minAvailable"])).into(),
        int_or_string(at(obj, &["spec", "maxUnavailable"])).into(),
        int(obj, &["status", "disruptionsAllowed"]).into(),
        age(obj, now),
    ]
}
