//! What the validations of the controllers that stamp out pods share (apps workloads, Jobs
//! and CronJobs, ReplicationControllers): upstream's `ValidatePodTemplateSpec`, the
//! restart policy of pods that run forever, and label selectors against the template's
//! labels. Where upstream shows a Go struct or map as the bad value (`map[string]string{...}`,
//! `v1.LabelSelector{...}`), [`crate::gofmt`] prints it the way Go's `%#v` does.

use serde_json::Value;

use super::core::pod::pod_spec;
use super::values::{annotation_map, label_map, label_selector};
use super::FieldError;
use crate::gofmt::go_string_map;

pub(super) fn push(errors: &mut Vec<FieldError>, error: Option<FieldError>) {
    errors.extend(error);
}

/// `ValidatePodTemplateSpec`: the template's labels and annotations and its pod spec.
pub(super) fn pod_template(template: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = label_map(&format!("{path}.labels"), &template["metadata"]["labels"]);
    errors.extend(annotation_map(
        &format!("{path}.annotations"),
        &template["metadata"]["annotations"],
    ));
    errors.extend(pod_spec(&template["spec"], &format!("{path}.spec")));
    if template["spec"]["ephemeralContainers"].as_array().is_some_and(|e| !e.is_empty()) {
        errors.push(FieldError::forbidden(
            format!("{path}.spec.ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errors
}

/// Controllers whose pods run forever: restartPolicy `Always` (the default when absent),
/// and no activeDeadlineSeconds.
pub(super) fn always_restarts(template: &Value, path: &str, kind: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let policy = &template["spec"]["restartPolicy"];
    if policy.as_str().is_some_and(|p| p != "Always") {
        errors.push(FieldError::unsupported(
            format!("{path}.spec.restartPolicy"),
            policy,
            &["Always"],
        ));
    }
    if !template["spec"]["activeDeadlineSeconds"].is_null() {
        errors.push(FieldError::forbidden(
            format!("{path}.spec.activeDeadlineSeconds"),
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    errors
}

/// Whether `LabelSelectorAsSelector` accepts the selector: exactly when it validates (a null
/// selector is "nothing", which it accepts).
pub(super) fn selector_parses(sel: &Value) -> bool {
    label_selector("", sel).is_empty()
}

pub(super) fn selector_is_empty(sel: &Value) -> bool {
    sel["matchLabels"].as_object().is_none_or(|m| m.is_empty())
        && sel["matchExpressions"].as_array().is_none_or(|e| e.is_empty())
}

/// Whether a parsed selector selects `labels`: null selects nothing, empty selects all.
pub(super) fn selector_matches(sel: &Value, labels: &Value) -> bool {
    if sel.is_null() {
        return false;
    }
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let by_labels = sel["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k).is_some_and(|l| Some(l) == v.as_str()));
    let by_expressions = sel["matchExpressions"].as_array().into_iter().flatten().all(|e| {
        let have = label(e["key"].as_str().unwrap_or_default());
        let listed =
            |l: &str| e["values"].as_array().into_iter().flatten().any(|v| v.as_str() == Some(l));
        match e["operator"].as_str() {
            Some("In") => have.is_some_and(listed),
            Some("NotIn") => !have.is_some_and(listed),
            Some("Exists") => have.is_some(),
            Some("DoesNotExist") => have.is_none(),
            _ => false,
        }
    });
    by_labels && by_expressions
}

pub(super) fn template_mismatch(template: &Value, path: &str) -> FieldError {
    FieldError::invalid_shown(
        format!("{path}.metadata.labels"),
        &go_string_map(&template["metadata"]["labels"]),
        "`selector` does not match template `labels`",
    )
}
