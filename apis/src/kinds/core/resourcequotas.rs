//! ResourceQuotas (`v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, at, name, quantity, quantity_or_zero, text, TablePrinter, AGE, NAME};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct ResourceQuotas;

impl Strategy for ResourceQuotas {
    fn default(&self, obj: &mut Value) {
        defaults::core::resource_quota(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::resource_quota::resource_quota(obj, old)
    }

    fn validate_subresource_update(
        &self,
        new: &Value,
        _old: &Value,
        _sub: &str,
    ) -> Vec<FieldError> {
        validation::core::resource_quota::resource_quota_status(new)
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
            text(
                "Request",
                "Request represents a minimum amount of cpu/memory that a container may consume.",
            ),
            text(
                "Limit",
                "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
            ),
            AGE,
        ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (request, limit) = resource_quota(obj);
    vec![name(obj), request.into(), limit.into(), age(obj, now)]
}

/// `Request` and `Limit` of a quota: `resource: used/hard` pairs, sorted by resource, the
/// `limits.*` ones in the second.
fn resource_quota(obj: &Value) -> (String, String) {
    let Some(hard) = at(obj, &["status", "hard"]).and_then(Value::as_object) else {
        return (String::new(), String::new());
    };
    let mut names: Vec<&String> = hard.keys().collect();
    names.sort();
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for name in names {
        let used = quantity_or_zero(at(obj, &["status", "used", name]));
        let entry = format!("{name}: {used}/{}", quantity(&hard[name]));
        let pieces: Vec<&str> = name.split('.').collect();
        if pieces.len() > 1 && pieces[0] == "limits" {
            limits.push(entry);
        } else {
            requests.push(entry);
        }
    }
    (requests.join(", "), limits.join(", "))
}
