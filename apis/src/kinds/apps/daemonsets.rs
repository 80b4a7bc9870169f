//! DaemonSets (`apps/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{
    age, at, col, containers, format_label_selector, format_labels, int, name, text, wide,
    TablePrinter, AGE, CONTAINERS, IMAGES, NAME,
};
use crate::validation::FieldError;
use crate::{defaults, disabled_fields, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct DaemonSets;

impl Strategy for DaemonSets {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn drop_disabled_fields(&self, obj: &mut Value, old: Option<&Value>) {
        disabled_fields::pod_spec_at(obj, old, disabled_fields::WORKLOAD);
    }

    fn default(&self, obj: &mut Value) {
        defaults::apps::daemon_set(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::apps::daemon_set(obj, old)
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
        col("Desired", "integer", D_DS_DESIRED),
        col("Current", "integer", D_DS_CURRENT),
        col("Ready", "integer", D_DS_READY),
        col("Up-to-date", "integer", D_DS_UPDATED),
        col("Available", "integer", D_DS_AVAILABLE),
        text("Node Selector", D_NODE_SELECTOR),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_DS_SELECTOR),
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = containers(at(obj, &["spec", "template", "spec", "containers"]));
    vec![
        name(obj),
        int(obj, &["status", "desiredNumberScheduled"]).into(),
        int(obj, &["status", "currentNumberScheduled"]).into(),
        int(obj, &["status", "numberReady"]).into(),
        int(obj, &["status", "updatedNumberScheduled"]).into(),
        int(obj, &["status", "numberAvailable"]).into(),
        format_labels(at(obj, &["spec", "template", "spec", "nodeSelector"])).into(),
        age(obj, now),
        names.into(),
        images.into(),
        format_label_selector(at(obj, &["spec", "selector"])).into(),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_DS_DESIRED: &str = "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/";
const D_DS_CURRENT: &str = "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/";
const D_DS_READY: &str = "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.";
const D_DS_UPDATED: &str = "The total number of nodes that are running updated daemon pod";
const D_DS_AVAILABLE: &str = "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)";
const D_NODE_SELECTOR: &str = "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/";
const D_DS_SELECTOR: &str = "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
