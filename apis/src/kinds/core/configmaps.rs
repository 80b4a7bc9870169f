//! ConfigMaps (`v1`): keys, size, and immutability.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, len, name, text, TablePrinter, AGE, NAME};
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct ConfigMaps;

impl Strategy for ConfigMaps {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::config::config_map(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter { columns: &[NAME, text("Data", D_CM_DATA), AGE], row };

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let n = len(obj, &["data"]) + len(obj, &["binaryData"]);
    vec![name(obj), (n as i64).into(), age(obj, now)]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_CM_DATA: &str = "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.";
