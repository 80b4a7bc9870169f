//! StorageClasses (`storage.k8s.io/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, at, boolean, or, st, text, TablePrinter, AGE, NAME};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct StorageClasses;

impl Strategy for StorageClasses {
    fn default(&self, obj: &mut Value) {
        defaults::storage::storage_class(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::storage::storage_class(obj, old)
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
        text("Provisioner", D_SC_PROVISIONER),
        text("ReclaimPolicy", D_SC_RECLAIM),
        text("VolumeBindingMode", D_SC_BINDING),
        text("AllowVolumeExpansion", D_SC_EXPANSION),
        AGE,
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut display = st(obj, &["metadata", "name"]).to_string();
    let annotations = ["metadata", "annotations"];
    let is_default = |key: &str| {
        at(obj, &annotations).and_then(|a| a.get(key)).and_then(Value::as_str) == Some("true")
    };
    if is_default("storageclass.kubernetes.io/is-default-class")
        || is_default("storageclass.beta.kubernetes.io/is-default-class")
    {
        display.push_str(" (default)");
    }
    vec![
        display.into(),
        st(obj, &["provisioner"]).into(),
        or(st(obj, &["reclaimPolicy"]), "Delete").into(),
        or(st(obj, &["volumeBindingMode"]), "Immediate").into(),
        boolean(obj, &["allowVolumeExpansion"]).unwrap_or(false).into(),
        age(obj, now),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_SC_PROVISIONER: &str = "provisioner indicates the type of the provisioner.";
const D_SC_RECLAIM: &str = "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.";
const D_SC_BINDING: &str = "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.";
const D_SC_EXPANSION: &str =
    "allowVolumeExpansion shows whether the storage class allow volume expand.";
