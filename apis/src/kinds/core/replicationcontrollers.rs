//! ReplicationControllers (`v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::{SelectableField, Strategy};
use crate::tables::{
    age, at, col, containers, format_labels, int, int_or, name, wide, TablePrinter, AGE,
    CONTAINERS, IMAGES, NAME,
};
use crate::validation::FieldError;
use crate::{defaults, disabled_fields, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct ReplicationControllers;

impl Strategy for ReplicationControllers {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn drop_disabled_fields(&self, obj: &mut Value, old: Option<&Value>) {
        disabled_fields::pod_spec_at(obj, old, disabled_fields::WORKLOAD);
    }

    fn default(&self, obj: &mut Value) {
        defaults::core::replication_controller(obj);
    }

    fn validate(&self, obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
        validation::core::replication_controller::replication_controller(obj)
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[("status.replicas", &["status", "replicas"])]
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
        col("Desired", "integer", D_RC_REPLICAS),
        col("Current", "integer", D_RC_CURRENT),
        col("Ready", "integer", D_RC_READY),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_RC_SELECTOR),
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = containers(at(obj, &["spec", "template", "spec", "containers"]));
    vec![
        name(obj),
        int_or(obj, &["spec", "replicas"], 1).into(),
        int(obj, &["status", "replicas"]).into(),
        int(obj, &["status", "readyReplicas"]).into(),
        age(obj, now),
        names.into(),
        images.into(),
        format_labels(at(obj, &["spec", "selector"])).into(),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_RC_REPLICAS: &str = "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller";
const D_RC_CURRENT: &str = "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller";
const D_RC_READY: &str = "The number of ready replicas for this replication controller.";
const D_RC_SELECTOR: &str = "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
