//! ReplicaSets (`apps/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::{SelectableField, Strategy};
use crate::tables::{
    age, at, col, containers, format_label_selector, int, int_or, name, wide, TablePrinter, AGE,
    CONTAINERS, IMAGES, NAME,
};
use crate::validation::FieldError;
use crate::{defaults, disabled_fields, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct ReplicaSets;

impl Strategy for ReplicaSets {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn drop_disabled_fields(&self, obj: &mut Value, old: Option<&Value>) {
        disabled_fields::pod_spec_at(obj, old, disabled_fields::WORKLOAD);
    }

    fn default(&self, obj: &mut Value) {
        defaults::apps::replica_set(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::apps::replica_set(obj, old)
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
        col("Desired", "integer", D_RS_REPLICAS),
        col("Current", "integer", D_RS_CURRENT),
        col("Ready", "integer", D_RS_READY),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_RS_SELECTOR),
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
        format_label_selector(at(obj, &["spec", "selector"])).into(),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_RS_REPLICAS: &str = "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset";
const D_RS_CURRENT: &str = "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset";
const D_RS_READY: &str =
    "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.";
const D_RS_SELECTOR: &str = "Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
