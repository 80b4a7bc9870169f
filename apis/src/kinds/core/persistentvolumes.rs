//! PersistentVolumes (`v1`): created with the status their creator gives.

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
pub struct PersistentVolumes;

impl Strategy for PersistentVolumes {
    fn keeps_status_on_create(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        defaults::core::persistent_volume(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::persistent_volume::persistent_volume(obj, old)
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
        text("Capacity", D_PV_CAPACITY),
        text("Access Modes", D_PV_ACCESS),
        text("Reclaim Policy", D_PV_RECLAIM),
        text("Status", D_PV_PHASE),
        text("Claim", D_PV_CLAIM),
        text("StorageClass", "StorageClass of the pv"),
        text("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
        text("Reason", D_PV_REASON),
        AGE,
        wide("VolumeMode", "string", D_PV_MODE),
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let claim = match at(obj, &["spec", "claimRef"]) {
        Some(c) if c.is_object() => format!("{}/{}", st(c, &["namespace"]), st(c, &["name"])),
        _ => String::new(),
    };
    let phase = if at(obj, &["metadata", "deletionTimestamp"]).is_some_and(|d| !d.is_null()) {
        "Terminating"
    } else {
        st(obj, &["status", "phase"])
    };
    let class = match annotation(obj, "volume.beta.kubernetes.io/storage-class") {
        Some(c) => c,
        None => st(obj, &["spec", "storageClassName"]),
    };
    vec![
        st(obj, &["metadata", "name"]).into(),
        quantity_or_zero(at(obj, &["spec", "capacity", "storage"])).into(),
        access_modes(at(obj, &["spec", "accessModes"])).into(),
        st(obj, &["spec", "persistentVolumeReclaimPolicy"]).into(),
        phase.into(),
        claim.into(),
        class.into(),
        or_unset(at(obj, &["spec", "volumeAttributesClassName"])).into(),
        st(obj, &["status", "reason"]).into(),
        since(time(obj, &["metadata", "creationTimestamp"]), now).into(),
        or_unset(at(obj, &["spec", "volumeMode"])).into(),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_PV_CAPACITY: &str = "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity";
const D_PV_ACCESS: &str = "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes";
const D_PV_RECLAIM: &str = "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming";
const D_PV_PHASE: &str = "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase";
const D_PV_CLAIM: &str = "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding";
const D_PV_REASON: &str = "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.";
const D_PV_MODE: &str = "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.";
