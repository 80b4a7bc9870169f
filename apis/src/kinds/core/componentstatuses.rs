//! ComponentStatuses (`v1`): read-only, answered by probing the components.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{arr, name, st, text, TablePrinter, NAME};

/// The strategy of this resource.
#[derive(Debug)]
pub struct ComponentStatuses;

impl Strategy for ComponentStatuses {
    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[
        NAME,
        text("Status", "Status of the component conditions"),
        text("Message", "Message of the component conditions"),
        text("Error", "Error of the component conditions"),
    ],
    row,
};

fn row(obj: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let (mut status, mut message, mut error) = ("Unknown", "", "");
    if let Some(c) = arr(obj, &["conditions"]).iter().find(|c| st(c, &["type"]) == "Healthy") {
        status = if st(c, &["status"]) == "True" { "Healthy" } else { "Unhealthy" };
        message = st(c, &["message"]);
        error = st(c, &["error"]);
    }
    vec![name(obj), status.into(), message.into(), error.into()]
}
