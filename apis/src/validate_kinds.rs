//! Validation of the kinds' own fields (beyond metadata), with upstream's messages and field
//! paths. Covers what users trip over most; see docs/features.md for what is checked.

use serde_json::Value;

use crate::resources::ResourceInfo;
use crate::validation::{name_problems, FieldError, NameRule};

pub fn validate(info: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    match (info.group, info.plural) {
        ("", "pods") => {
            let mut errors = pod_spec(&obj["spec"], "spec");
            if let Some(old) = old {
                errors.extend(pod_update(obj, old));
            }
            errors
        }
        ("", "podtemplates") => pod_spec(&obj["template"]["spec"], "template.spec"),
        ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets") => {
            let mut errors = selector_matches_template(&obj["spec"]);
            errors.extend(pod_spec(&obj["spec"]["template"]["spec"], "spec.template.spec"));
            if let (Some(old), "statefulsets") = (old, info.plural) {
                let mut a = obj["spec"].clone();
                let mut b = old["spec"].clone();
                for spec in [&mut a, &mut b] {
                    if let Some(m) = spec.as_object_mut() {
                        for f in [
                            "replicas",
                            "ordinals",
                            "template",
                            "updateStrategy",
                            "persistentVolumeClaimRetentionPolicy",
                            "minReadySeconds",
                        ] {
                            m.remove(f);
                        }
                    }
                }
                if a != b {
                    errors.push(FieldError::forbidden("spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"));
                }
            }
            if let Some(old) = old {
                if old["spec"]["selector"] != obj["spec"]["selector"] {
                    errors.push(FieldError::invalid(
                        "spec.selector",
                        &obj["spec"]["selector"],
                        "field is immutable",
                    ));
                }
            }
            errors
        }
        ("", "services") => service(obj, old),
        ("", "configmaps") | ("", "secrets") => {
            let mut errors = data_keys(obj);
            if let Some(old) = old {
                errors.extend(immutable_data(obj, old));
                if info.plural == "secrets" && obj["type"] != old["type"] {
                    errors.push(FieldError::invalid("type", &obj["type"], "field is immutable"));
                }
            }
            errors
        }
        ("batch", "jobs") => {
            let mut errors = pod_spec(&obj["spec"]["template"]["spec"], "spec.template.spec");
            if let Some(old) = old {
                if obj["spec"]["selector"] != old["spec"]["selector"] {
                    errors.push(FieldError::invalid(
                        "spec.selector",
                        &obj["spec"]["selector"],
                        "field is immutable",
                    ));
                }
                if obj["spec"]["completions"] != old["spec"]["completions"]
                    && obj["spec"]["completionMode"] == "Indexed"
                {
                    errors.push(FieldError::invalid(
                        "spec.completions",
                        &obj["spec"]["completions"],
                        "field is immutable",
                    ));
                }
            }
            errors
        }
        _ => Vec::new(),
    }
}

fn pod_spec(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let containers = spec["containers"].as_array();
    if containers.is_none_or(|c| c.is_empty()) {
        errors.push(FieldError::required(format!("{path}.containers"), ""));
    }
    let mut names = std::collections::HashSet::new();
    for list in ["initContainers", "containers"] {
        for (i, c) in spec[list].as_array().into_iter().flatten().enumerate() {
            let at = format!("{path}.{list}[{i}]");
            match c["name"].as_str() {
                None | Some("") => errors.push(FieldError::required(format!("{at}.name"), "")),
                Some(name) => {
                    for p in name_problems(name, NameRule::Label) {
                        errors.push(FieldError::invalid(format!("{at}.name"), &c["name"], &p));
                    }
                    if !names.insert(name.to_string()) {
                        errors.push(FieldError::duplicate(format!("{at}.name"), &c["name"]));
                    }
                }
            }
            if c["image"].as_str().is_none_or(|i| i.trim().is_empty()) {
                errors.push(FieldError::required(format!("{at}.image"), ""));
            }
            errors.extend(container_restart_policy(c, list == "initContainers", &at));
            for (j, p) in c["ports"].as_array().into_iter().flatten().enumerate() {
                let port = p["containerPort"].as_i64().unwrap_or(0);
                if !(1..=65535).contains(&port) {
                    errors.push(FieldError::invalid(
                        format!("{at}.ports[{j}].containerPort"),
                        &p["containerPort"],
                        "must be between 1 and 65535, inclusive",
                    ));
                }
            }
        }
    }
    if let Some(policy) = spec["restartPolicy"].as_str() {
        if !matches!(policy, "Always" | "OnFailure" | "Never") {
            errors.push(FieldError::unsupported(
                format!("{path}.restartPolicy"),
                &spec["restartPolicy"],
                &["Always", "OnFailure", "Never"],
            ));
        }
    }
    errors
}

/// A container's own `restartPolicy`: only init containers have one, and only `Always` (a
/// sidecar); lifecycle hooks and probes are for sidecars among the init containers.
fn container_restart_policy(c: &Value, init: bool, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let policy = &c["restartPolicy"];
    if !init {
        if !policy.is_null() {
            errors.push(FieldError::forbidden(
                format!("{at}.restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
        return errors;
    }
    match policy.as_str() {
        Some("Always") => {}
        Some(_) => {
            errors.push(FieldError::unsupported(format!("{at}.restartPolicy"), policy, &["Always"]))
        }
        None => {
            for field in ["lifecycle", "livenessProbe", "readinessProbe", "startupProbe"] {
                if !c[field].is_null() {
                    errors.push(FieldError::forbidden(
                        format!("{at}.{field}"),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
    errors
}

/// Pod updates may change only a few spec fields (upstream's message lists them).
fn pod_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut a = new["spec"].clone();
    let mut b = old["spec"].clone();
    // Mutable: container images, activeDeadlineSeconds, tolerations (additions), and
    // terminationGracePeriodSeconds; compare the rest.
    for spec in [&mut a, &mut b] {
        for list in ["initContainers", "containers"] {
            if let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) {
                for c in cs {
                    if let Some(m) = c.as_object_mut() {
                        m.remove("image");
                    }
                }
            }
        }
        if let Some(m) = spec.as_object_mut() {
            for f in ["activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"] {
                m.remove(f);
            }
        }
    }
    // Binding sets nodeName once.
    if old["spec"]["nodeName"].is_null() {
        for spec in [&mut a, &mut b] {
            if let Some(m) = spec.as_object_mut() {
                m.remove("nodeName");
            }
        }
    }
    if a == b {
        Vec::new()
    } else {
        vec![FieldError::forbidden(
            "spec",
            "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
        )]
    }
}

fn selector_matches_template(spec: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let selector = &spec["selector"];
    if selector.is_null() {
        errors.push(FieldError::required("spec.selector", ""));
        return errors;
    }
    let match_labels = selector["matchLabels"].as_object();
    let has_expressions = selector["matchExpressions"].as_array().is_some_and(|e| !e.is_empty());
    if match_labels.is_none_or(|m| m.is_empty()) && !has_expressions {
        errors.push(FieldError::invalid(
            "spec.selector",
            selector,
            "empty selector is invalid for deployment",
        ));
        return errors;
    }
    let labels = &spec["template"]["metadata"]["labels"];
    let matches =
        match_labels.into_iter().flatten().all(|(k, v)| labels.get(k).is_some_and(|l| l == v));
    if !matches {
        errors.push(FieldError::invalid(
            "spec.template.metadata.labels",
            labels,
            "`selector` does not match template `labels`",
        ));
    }
    errors
}

fn service(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let spec = &obj["spec"];
    let kind = spec["type"].as_str().unwrap_or("ClusterIP");
    if !matches!(kind, "ClusterIP" | "NodePort" | "LoadBalancer" | "ExternalName") {
        errors.push(FieldError::unsupported(
            "spec.type",
            &spec["type"],
            &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
        ));
    }
    let headless = spec["clusterIP"] == "None";
    let ports = spec["ports"].as_array();
    if kind != "ExternalName" && !headless && ports.is_none_or(|p| p.is_empty()) {
        errors.push(FieldError::required("spec.ports", ""));
    }
    for (i, p) in ports.into_iter().flatten().enumerate() {
        let port = p["port"].as_i64().unwrap_or(0);
        if !(1..=65535).contains(&port) {
            errors.push(FieldError::invalid(
                format!("spec.ports[{i}].port"),
                &p["port"],
                "must be between 1 and 65535, inclusive",
            ));
        }
        if ports.is_some_and(|all| all.len() > 1) && p["name"].as_str().is_none_or(str::is_empty) {
            errors.push(FieldError::required(format!("spec.ports[{i}].name"), ""));
        }
    }
    errors
}

/// ConfigMaps and Secrets marked `immutable: true` keep their data (and the mark).
fn immutable_data(obj: &Value, old: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if old["immutable"] != Value::Bool(true) {
        return errors;
    }
    const DETAIL: &str = "field is immutable when `immutable` is set";
    if obj["immutable"] != Value::Bool(true) {
        errors.push(FieldError::forbidden("immutable", DETAIL));
    }
    for field in ["data", "binaryData", "stringData"] {
        if obj[field] != old[field] {
            errors.push(FieldError::forbidden(field, DETAIL));
        }
    }
    errors
}

fn data_keys(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for field in ["data", "binaryData", "stringData"] {
        for key in obj[field].as_object().into_iter().flatten().map(|(k, _)| k) {
            let ok = !key.is_empty()
                && key.len() <= 253
                && key
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
                && key != "."
                && key != ".."
                && !key.starts_with("..");
            if !ok {
                errors.push(FieldError::invalid(
                    format!("{field}[{key}]"),
                    &Value::String(key.clone()),
                    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                ));
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(spec: Value) -> Vec<String> {
        pod_spec(&spec, "spec").iter().map(FieldError::line).collect()
    }

    #[test]
    fn container_restart_policies() {
        let sidecar = json!({"initContainers": [{"name": "s", "image": "i", "restartPolicy": "Always",
            "readinessProbe": {"exec": {"command": ["true"]}}, "lifecycle": {"preStop": {"sleep": {"seconds": 1}}}}],
            "containers": [{"name": "a", "image": "i"}]});
        assert_eq!(lines(sidecar), Vec::<String>::new());
        let wrong = json!({"initContainers": [{"name": "s", "image": "i", "restartPolicy": "Never"}],
            "containers": [{"name": "a", "image": "i", "restartPolicy": "Always"}]});
        assert_eq!(
            lines(wrong),
            [
                "spec.initContainers[0].restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
                "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
            ]
        );
        let plain = json!({"initContainers": [{"name": "s", "image": "i",
            "livenessProbe": {"exec": {"command": ["true"]}}, "lifecycle": {}}],
            "containers": [{"name": "a", "image": "i"}]});
        assert_eq!(
            lines(plain),
            [
                "spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always",
                "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
            ]
        );
    }
}
