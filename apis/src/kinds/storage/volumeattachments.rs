//! VolumeAttachments (`storage.k8s.io/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::{Strategy, RESET_FOR_STATUS};
use crate::tables::{age, boolean, col, name, st, text, Column, TablePrinter, AGE, NAME};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct VolumeAttachments;

impl Strategy for VolumeAttachments {
    fn default(&self, obj: &mut Value) {
        defaults::storage::volume_attachment(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::storage::volume_attachment(obj, old)
    }

    fn metadata_kept_on_status_write(&self) -> &'static [&'static str] {
        RESET_FOR_STATUS
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
        Column { format: "name", ..text("Attacher", D_VA_ATTACHER) },
        text("PV", D_VA_PV),
        text("Node", D_VA_NODE),
        col("Attached", "boolean", D_VA_ATTACHED),
        AGE,
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(obj),
        st(obj, &["spec", "attacher"]).into(),
        st(obj, &["spec", "source", "persistentVolumeName"]).into(),
        st(obj, &["spec", "nodeName"]).into(),
        boolean(obj, &["status", "attached"]).unwrap_or(false).into(),
        age(obj, now),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_VA_ATTACHER: &str = "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().";
const D_VA_PV: &str =
    "persistentVolumeName represents the name of the persistent volume to attach.";
const D_VA_NODE: &str = "nodeName represents the node that the volume should be attached to.";
const D_VA_ATTACHED: &str = "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.";
