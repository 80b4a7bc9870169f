//! Jobs (`batch/v1`): unless `manualSelector`, a Job selects its pods by its own uid.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::strategy::{SelectableField, Strategy};
use crate::tables::{
    arr, at, containers, format_label_selector, human_duration, int, opt_int, since, st, text,
    time, wide, TablePrinter, AGE, CONTAINERS, IMAGES, NAME,
};
use crate::validation::FieldError;
use crate::{defaults, disabled_fields, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Jobs;

impl Strategy for Jobs {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if obj["spec"]["manualSelector"] != true {
            generate_selector(obj);
        }
    }

    fn drop_disabled_fields(&self, obj: &mut Value, old: Option<&Value>) {
        disabled_fields::pod_spec_at(obj, old, disabled_fields::WORKLOAD);
    }

    fn default(&self, obj: &mut Value) {
        defaults::batch::job(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::batch::job(obj, old)
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[("status.successful", &["status", "successful"])]
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// A Job selects its pods by its own uid unless it asks to choose the selector itself
/// (`manualSelector`): the pod template gets the job-name and controller-uid labels (both the
/// `batch.kubernetes.io/` ones and the legacy unprefixed ones) and the selector matches the
/// uid. Labels the client set are kept; a conflicting one fails validation, as upstream.
fn generate_selector(job: &mut Value) {
    let name = job["metadata"]["name"].clone();
    let uid = job["metadata"]["uid"].clone();
    if !job["spec"].is_object() || uid.is_null() {
        return;
    }
    let template = &mut job["spec"]["template"];
    if !template["metadata"]["labels"].is_object() {
        template["metadata"]["labels"] = json!({});
    }
    let labels = template["metadata"]["labels"].as_object_mut().expect("labels object");
    for (key, value) in [
        ("job-name", &name),
        ("batch.kubernetes.io/job-name", &name),
        ("controller-uid", &uid),
        ("batch.kubernetes.io/controller-uid", &uid),
    ] {
        labels.entry(key).or_insert_with(|| value.clone());
    }
    let selector = &mut job["spec"]["selector"];
    if !selector["matchLabels"].is_object() {
        selector["matchLabels"] = json!({});
    }
    let match_labels = selector["matchLabels"].as_object_mut().expect("matchLabels object");
    match_labels.entry("batch.kubernetes.io/controller-uid").or_insert(uid);
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[
        NAME,
        text("Status", "Status of the job."),
        text("Completions", D_JOB_SUCCEEDED),
        text("Duration", "Time required to complete the job."),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_JOB_SELECTOR),
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let succeeded = int(obj, &["status", "succeeded"]);
    let completions = match opt_int(obj, &["spec", "completions"]) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int(obj, &["spec", "parallelism"]) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration =
        match (time(obj, &["status", "startTime"]), time(obj, &["status", "completionTime"])) {
            (None, _) => String::new(),
            (Some(start), None) => human_duration(now - start),
            (Some(start), Some(end)) => human_duration(end - start),
        };
    // The first condition of a type decides whether the job has it.
    let conditions = arr(obj, &["status", "conditions"]);
    let has = |kind: &str| {
        conditions
            .iter()
            .find(|c| st(c, &["type"]) == kind)
            .is_some_and(|c| st(c, &["status"]) == "True")
    };
    let status = if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if at(obj, &["metadata", "deletionTimestamp"]).is_some_and(|d| !d.is_null()) {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = containers(at(obj, &["spec", "template", "spec", "containers"]));
    vec![
        st(obj, &["metadata", "name"]).into(),
        status.into(),
        completions.into(),
        duration.into(),
        since(time(obj, &["metadata", "creationTimestamp"]), now).into(),
        names.into(),
        images.into(),
        format_label_selector(at(obj, &["spec", "selector"])).into(),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_JOB_SUCCEEDED: &str = "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.";
pub(super) const D_JOB_SELECTOR: &str = "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
