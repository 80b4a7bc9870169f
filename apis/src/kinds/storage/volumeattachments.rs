//! VolumeAttachments (`storage.k8s.io/v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct VolumeAttachments;

impl Strategy for VolumeAttachments {
    fn default(&self, obj: &mut Value) {
        defaults::cluster::volume_attachment(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::storage::volume_attachment(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::VolumeAttachment
    }
}
