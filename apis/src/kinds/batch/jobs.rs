//! Jobs (`batch/v1`): unless `manualSelector`, a Job selects its pods by its own uid.

use serde_json::{json, Value};

use crate::strategy::{SelectableField, Strategy};
use crate::tables::Printer;
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

    fn printer(&self) -> Printer {
        Printer::Job
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
