//! ValidatingAdmissionPolicies (`admissionregistration.k8s.io/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::{Strategy, RESET_FOR_STATUS};
use crate::tables::{age, arr, at, col, name, st, text, TablePrinter, AGE, NAME};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct ValidatingAdmissionPolicies;

impl Strategy for ValidatingAdmissionPolicies {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn metadata_kept_on_status_write(&self) -> &'static [&'static str] {
        RESET_FOR_STATUS
    }

    fn default(&self, obj: &mut Value) {
        defaults::admissionregistration::validating_admission_policy(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::admissionregistration::validating_admission_policy(obj, old)
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
        col(
            "Validations",
            "integer",
            "Validations indicates the number of validation rules defined in this configuration",
        ),
        text(
            "ParamKind",
            "ParamKind specifies the kind of resources used to parameterize this policy",
        ),
        AGE,
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let param_kind = match at(obj, &["spec", "paramKind"]) {
        Some(p) if p.is_object() => {
            format!("{}/{}", st(p, &["apiVersion"]), st(p, &["kind"]))
        }
        _ => "<unset>".to_string(),
    };
    vec![
        name(obj),
        (arr(obj, &["spec", "validations"]).len() as i64).into(),
        param_kind.into(),
        age(obj, now),
    ]
}
