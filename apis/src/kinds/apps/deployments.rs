//! Deployments (`apps/v1`): the generation also counts annotation changes (a rollout
//! trigger upstream); a status write keeps the labels.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::{metadata_differs, spec_differs, Strategy};
use crate::tables::{
    age, at, containers, int, int_or, label_selector, name, text, wide, TablePrinter, AGE,
    CONTAINERS, IMAGES, NAME,
};
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

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[
        NAME,
        text("Ready", "Number of the pod with ready state"),
        text("Up-to-date", D_DEPLOY_UPDATED),
        text("Available", D_DEPLOY_AVAILABLE),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_DEPLOY_SELECTOR),
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = containers(at(obj, &["spec", "template", "spec", "containers"]));
    let ready = format!(
        "{}/{}",
        int(obj, &["status", "readyReplicas"]),
        int_or(obj, &["spec", "replicas"], 1)
    );
    let selector = match label_selector(at(obj, &["spec", "selector"])) {
        Ok(s) => s,
        Err(()) => "<invalid>".to_string(),
    };
    vec![
        name(obj),
        ready.into(),
        int(obj, &["status", "updatedReplicas"]).into(),
        int(obj, &["status", "availableReplicas"]).into(),
        age(obj, now),
        names.into(),
        images.into(),
        selector.into(),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_DEPLOY_UPDATED: &str = "Total number of non-terminating pods targeted by this deployment that have the desired template spec.";
const D_DEPLOY_AVAILABLE: &str = "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.";
const D_DEPLOY_SELECTOR: &str = "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.";
