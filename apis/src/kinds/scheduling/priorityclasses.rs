//! PriorityClasses (`scheduling.k8s.io/v1`): a generation of 1 that no update bumps, as
//! upstream.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, boolean, col, int, name, or, st, text, TablePrinter, AGE, NAME};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct PriorityClasses;

impl Strategy for PriorityClasses {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn bumps_generation(&self, _new: &Value, _old: &Value) -> bool {
        false
    }

    fn default(&self, obj: &mut Value) {
        defaults::scheduling::priority_class(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::scheduling::priority_class(obj, old)
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
        col("Value", "integer", D_PC_VALUE),
        col("Global-Default", "boolean", D_PC_DEFAULT),
        AGE,
        text("PreemptionPolicy", D_PC_PREEMPTION),
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(obj),
        int(obj, &["value"]).into(),
        boolean(obj, &["globalDefault"]).unwrap_or(false).into(),
        age(obj, now),
        or(st(obj, &["preemptionPolicy"]), "PreemptLowerPriority").into(),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_PC_VALUE: &str = "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.";
const D_PC_DEFAULT: &str = "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.";
const D_PC_PREEMPTION: &str = "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.";
