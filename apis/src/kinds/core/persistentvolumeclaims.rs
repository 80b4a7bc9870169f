//! PersistentVolumeClaims (`v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{
    access_modes, annotation, at, or_unset, quantity_or_zero, since, st, text, time, wide,
    TablePrinter, AGE, NAME,
};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct PersistentVolumeClaims;

impl Strategy for PersistentVolumeClaims {
    fn default(&self, obj: &mut Value) {
        defaults::core::persistent_volume_claim(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::persistent_volume::persistent_volume_claim(obj, old)
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
        text("Status", D_PVC_PHASE),
        text("Volume", D_PVC_VOLUME),
        text("Capacity", D_PVC_CAPACITY),
        text("Access Modes", D_PVC_ACCESS),
        text("StorageClass", "StorageClass of the pvc"),
        text("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
        AGE,
        wide("VolumeMode", "string", D_PVC_MODE),
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let phase = if at(obj, &["metadata", "deletionTimestamp"]).is_some_and(|d| !d.is_null()) {
        "Terminating"
    } else {
        st(obj, &["status", "phase"])
    };
    let volume = st(obj, &["spec", "volumeName"]);
    // Capacity and access modes are the bound volume's; none before binding.
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity_or_zero(at(obj, &["status", "capacity", "storage"])),
            access_modes(at(obj, &["status", "accessModes"])),
        )
    };
    let class = match annotation(obj, "volume.beta.kubernetes.io/storage-class") {
        Some(c) => c,
        None => st(obj, &["spec", "storageClassName"]),
    };
    vec![
        st(obj, &["metadata", "name"]).into(),
        phase.into(),
        volume.into(),
        capacity.into(),
        modes.into(),
        class.into(),
        or_unset(at(obj, &["spec", "volumeAttributesClassName"])).into(),
        since(time(obj, &["metadata", "creationTimestamp"]), now).into(),
        or_unset(at(obj, &["spec", "volumeMode"])).into(),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_PVC_PHASE: &str = "phase represents the current phase of PersistentVolumeClaim.";
const D_PVC_VOLUME: &str =
    "volumeName is the binding reference to the PersistentVolume backing this claim.";
const D_PVC_CAPACITY: &str = "capacity represents the actual resources of the underlying volume.";
const D_PVC_ACCESS: &str = "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1";
const D_PVC_MODE: &str = "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.";
