//! PersistentVolumes (`v1`): created `Pending` whatever status the creator sent (the binder
//! moves them on), with `status.lastPhaseTransitionTime` kept as upstream keeps it.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

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
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({"phase": "Pending", "lastPhaseTransitionTime": now()});
    }

    fn prepare_for_subresource_update(&self, new: &mut Value, old: &Value, sub: &str) {
        if sub == "status" {
            phase_transition_time(new, old);
        }
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

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Upstream's status strategy: a write that keeps the phase keeps its transition time (unless
/// it sets one); a write that changes the phase gets the time of the change, unless the
/// writer set a time of its own.
fn phase_transition_time(new: &mut Value, old: &Value) {
    const KEY: &str = "lastPhaseTransitionTime";
    let (old_status, new_status) = (&old["status"], &new["status"]);
    let given = new_status.get(KEY).filter(|t| !t.is_null()).cloned();
    let time = if old_status["phase"] == new_status["phase"] {
        given.or_else(|| old_status.get(KEY).filter(|t| !t.is_null()).cloned())
    } else if given.is_none() || given.as_ref() == old_status.get(KEY) {
        Some(json!(now()))
    } else {
        given
    };
    if !new["status"].is_object() {
        new["status"] = json!({});
    }
    let status = new["status"].as_object_mut().expect("an object");
    match time {
        Some(t) => status.insert(KEY.into(), t),
        None => status.remove(KEY),
    };
}

// Column descriptions: the API field documentation upstream takes them from.
const D_PV_CAPACITY: &str = "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity";
const D_PV_ACCESS: &str = "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes";
const D_PV_RECLAIM: &str = "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming";
const D_PV_PHASE: &str = "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase";
const D_PV_CLAIM: &str = "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding";
const D_PV_REASON: &str = "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.";
const D_PV_MODE: &str = "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_changes_stamp_the_transition_time() {
        let old = json!({"status": {"phase": "Available", "lastPhaseTransitionTime": "2020-01-01T00:00:00Z"}});
        let mut same = json!({"status": {"phase": "Available"}});
        phase_transition_time(&mut same, &old);
        assert_eq!(same["status"]["lastPhaseTransitionTime"], "2020-01-01T00:00:00Z");
        let mut bound = json!({"status": {"phase": "Bound", "lastPhaseTransitionTime": "2020-01-01T00:00:00Z"}});
        phase_transition_time(&mut bound, &old);
        assert_ne!(bound["status"]["lastPhaseTransitionTime"], "2020-01-01T00:00:00Z");
        let mut own = json!({"status": {"phase": "Bound", "lastPhaseTransitionTime": "2021-01-01T00:00:00Z"}});
        phase_transition_time(&mut own, &old);
        assert_eq!(own["status"]["lastPhaseTransitionTime"], "2021-01-01T00:00:00Z");
        let mut created = json!({"spec": {}, "status": {"phase": "Bound"}});
        PersistentVolumes.prepare_for_create(&mut created);
        assert_eq!(created["status"]["phase"], "Pending");
        assert!(created["status"]["lastPhaseTransitionTime"].is_string());
    }
}
