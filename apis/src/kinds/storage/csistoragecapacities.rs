//! CSIStorageCapacities (`storage.k8s.io/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{at, name, quantity, st, text, TablePrinter, NAME};
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct CsiStorageCapacities;

impl Strategy for CsiStorageCapacities {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::storage::csi_storage_capacity(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[NAME, text("StorageClassName", D_CSISC_CLASS), text("Capacity", D_CSISC_CAPACITY)],
    row,
};

fn row(obj: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let capacity = match at(obj, &["capacity"]) {
        Some(q) if !q.is_null() => quantity(q),
        _ => "<unset>".to_string(),
    };
    vec![name(obj), st(obj, &["storageClassName"]).into(), capacity.into()]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_CSISC_CLASS: &str = "storageClassName represents the name of the StorageClass that the reported capacity applies to. It must meet the same requirements as the name of a StorageClass object (non-empty, DNS subdomain). If that object no longer exists, the CSIStorageCapacity object is obsolete and should be removed by its creator. This field is immutable.";
const D_CSISC_CAPACITY: &str = "capacity is the value reported by the CSI driver in its GetCapacityResponse for a GetCapacityRequest with topology and parameters that match the previous fields.\n\nThe semantic is currently (CSI spec 1.2) defined as: The available capacity, in bytes, of the storage that can be used to provision volumes. If not set, that information is currently unavailable.";
