//! Deployments (`apps/v1`): the generation also counts annotation changes (a rollout
//! trigger upstream); a status write keeps the labels.

use serde_json::Value;

use crate::strategy::{metadata_differs, spec_differs, Strategy};
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, disabled_fields, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Deployments;

impl Strategy for Deployments {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn bumps_generation(&self, new: &Value, old: &Value) -> bool {
        spec_differs(new, old) || metadata_differs(new, old, "annotations")
    }

    fn drop_disabled_fields(&self, obj: &mut Value, old: Option<&Value>) {
        disabled_fields::pod_spec_at(obj, old, disabled_fields::WORKLOAD);
    }

    fn default(&self, obj: &mut Value) {
        defaults::apps::deployment(obj);
    }

    fn metadata_kept_on_status_write(&self) -> &'static [&'static str] {
        &["labels"]
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::apps::deployment(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::Deployment
    }
}
