//! IngressClasses (`networking.k8s.io/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, at, name, st, text, TablePrinter, AGE, NAME};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct IngressClasses;

impl Strategy for IngressClasses {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        defaults::networking::ingress_class(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::networking::ingress_class(obj, old)
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
        text("Controller", "Controller that is responsible for handling this class"),
        text("Parameters", "A reference to a resource with additional parameters"),
        AGE,
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let parameters = match at(obj, &["spec", "parameters"]) {
        Some(p) if p.is_object() => {
            let mut s = st(p, &["kind"]).to_string();
            if let Some(group) = at(p, &["apiGroup"]).and_then(Value::as_str) {
                s = format!("{s}.{group}");
            }
            format!("{s}/{}", st(p, &["name"]))
        }
        _ => "<none>".to_string(),
    };
    vec![name(obj), st(obj, &["spec", "controller"]).into(), parameters.into(), age(obj, now)]
}
