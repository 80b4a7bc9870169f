//! APIServices (`apiregistration.k8s.io/v1`): names are path segments.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, arr, at, name, st, text, TablePrinter, AGE, NAME};
use crate::validation::{FieldError, NameRule};
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct ApiServices;

impl Strategy for ApiServices {
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn default(&self, obj: &mut Value) {
        defaults::apiregistration::api_service(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::apiregistration::api_service(obj, old)
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
        text("Service", "The reference to the service that hosts this API endpoint."),
        text("Available", "Whether this service is available."),
        AGE,
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let service = match at(obj, &["spec", "service"]) {
        Some(s) if s.is_object() => {
            format!("{}/{}", st(s, &["namespace"]), st(s, &["name"]))
        }
        _ => "Local".to_string(),
    };
    let available = arr(obj, &["status", "conditions"])
        .iter()
        .find(|c| st(c, &["type"]) == "Available")
        .map(|c| {
            let (status, reason) = (st(c, &["status"]), st(c, &["reason"]));
            if status == "True" || reason.is_empty() {
                status.to_string()
            } else {
                format!("{status} ({reason})")
            }
        })
        .unwrap_or_else(|| "Unknown".to_string());
    vec![name(obj), service.into(), available.into(), age(obj, now)]
}
