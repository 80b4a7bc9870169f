//! `admissionregistration.k8s.io/v1`.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::tables::{age, arr, col, name, Column, TablePrinter, AGE, NAME};

mod mutatingwebhookconfigurations;
mod validatingadmissionpolicies;
mod validatingadmissionpolicybindings;
mod validatingwebhookconfigurations;

pub use mutatingwebhookconfigurations::MutatingWebhookConfigurations;
pub use validatingadmissionpolicies::ValidatingAdmissionPolicies;
pub use validatingadmissionpolicybindings::ValidatingAdmissionPolicyBindings;
pub use validatingwebhookconfigurations::ValidatingWebhookConfigurations;

/// The table `kubectl get` prints for both webhook configurations: upstream's columns and
/// each object's row of cells.
const WEBHOOK_PRINTER: TablePrinter =
    TablePrinter { columns: &[NAME, WEBHOOKS, AGE], row: webhook_row };

const WEBHOOKS: Column = col(
    "Webhooks",
    "integer",
    "Webhooks indicates the number of webhooks registered in this configuration",
);

fn webhook_row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![name(obj), (arr(obj, &["webhooks"]).len() as i64).into(), age(obj, now)]
}
