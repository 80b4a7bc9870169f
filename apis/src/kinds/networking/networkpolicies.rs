//! NetworkPolicies (`networking.k8s.io/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, at, format_label_selector, name, text, TablePrinter, AGE, NAME};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct NetworkPolicies;

impl Strategy for NetworkPolicies {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        defaults::networking::network_policy(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::networking::network_policy(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter =
    TablePrinter { columns: &[NAME, text("Pod-Selector", D_NETPOL_SELECTOR), AGE], row };

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    // The pod selector is not optional: a missing one is the empty selector.
    let selector = at(obj, &["spec", "podSelector"]).cloned().unwrap_or(Value::Null);
    let selector = if selector.is_null() { serde_json::json!({}) } else { selector };
    vec![name(obj), format_label_selector(Some(&selector)).into(), age(obj, now)]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_NETPOL_SELECTOR: &str = "podSelector selects the pods to which this NetworkPolicy object applies. The array of ingress rules is applied to any pods selected by this field. Multiple network policies can select the same set of pods. In this case, the ingress rules for each are combined additively. This field is NOT optional and follows standard label selector semantics. An empty podSelector matches all pods in this namespace.";
