//! ReplicationControllers: counts, the selector (defaulted from the template's labels) against
//! the template, and the template's restart policy, with upstream's messages
//! (`ValidateReplicationControllerSpec`).

use serde_json::Value;

use crate::validation::templates::{always_restarts, pod_template, push, template_mismatch};
use crate::validation::values::non_negative;
use crate::validation::FieldError;

/// `ValidateReplicationControllerSpec`. Upstream defaults an empty selector to the
/// template's labels, so only a controller with neither is missing its selector.
pub fn replication_controller(obj: &Value) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let template = &spec["template"];
    let labels = &template["metadata"]["labels"];
    let selector = match &spec["selector"] {
        s if s.as_object().is_some_and(|m| !m.is_empty()) => s,
        _ => labels,
    };
    let mut errors = Vec::new();
    push(&mut errors, non_negative("spec.minReadySeconds", &spec["minReadySeconds"]));
    let selector_empty = selector.as_object().is_none_or(|m| m.is_empty());
    if selector_empty {
        errors.push(FieldError::required("spec.selector", ""));
    }
    push(&mut errors, non_negative("spec.replicas", &spec["replicas"]));
    if template.is_null() {
        errors.push(FieldError::required("spec.template", ""));
        return errors;
    }
    let matches = selector
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.get(k).is_some_and(|l| l == v));
    if !selector_empty && !matches {
        errors.push(template_mismatch(template, "spec.template"));
    }
    errors.extend(pod_template(template, "spec.template"));
    errors.extend(always_restarts(template, "spec.template", "ReplicationController"));
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    fn info(group: &str, plural: &str) -> &'static crate::resources::ResourceInfo {
        Resources::builtin().get(group, "v1", plural).unwrap()
    }

    /// The pod template of `kubectl create deployment web --image=nginx`.
    fn template() -> Value {
        json!({"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}})
    }

    #[test]
    fn realistic_replication_controllers_are_valid() {
        let mut rc = json!({"metadata": {"name": "old"}, "spec": {"template": template()}});
        crate::defaults::apply(info("", "replicationcontrollers"), &mut rc);
        assert_eq!(lines(replication_controller(&rc)), Vec::<String>::new());
    }

    #[test]
    fn replication_controllers() {
        let rc = json!({"spec": {"replicas": -1, "selector": {"app": "x"},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "i"}]}}}});
        assert_eq!(
            lines(replication_controller(&rc)),
            [
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
                "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
            ]
        );
        let rc =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        assert_eq!(lines(replication_controller(&rc)), ["spec.selector: Required value"]);
    }
}
