//! IPAddresses (`networking.k8s.io/v1`): named by the address they hold.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{at, name, st, text, TablePrinter, NAME};
use crate::validation;
use crate::validation::{FieldError, NameRule};

/// The strategy of this resource.
#[derive(Debug)]
pub struct IpAddresses;

impl Strategy for IpAddresses {
    fn name_rule(&self) -> NameRule {
        NameRule::IpAddress
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::networking::ip_address(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    // Upstream prints no Age for IP addresses.
    columns: &[NAME, text("ParentRef", D_IP_PARENT)],
    row,
};

fn row(obj: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let parent = match at(obj, &["spec", "parentRef"]) {
        Some(p) if p.is_object() => {
            let (group, resource) = (st(p, &["group"]), st(p, &["resource"]));
            let mut s = if group.is_empty() {
                resource.to_lowercase()
            } else {
                format!("{resource}.{group}").to_lowercase()
            };
            let namespace = st(p, &["namespace"]);
            if !namespace.is_empty() {
                s = format!("{s}/{namespace}");
            }
            format!("{s}/{}", st(p, &["name"]))
        }
        _ => "<none>".to_string(),
    };
    vec![name(obj), parent.into()]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_IP_PARENT: &str = "ParentRef references the resource that an IPAddress is attached to. An IPAddress must reference a parent object.";
