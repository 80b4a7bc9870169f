//! Per-kind behaviour the generic registry calls, in the manner of kube-apiserver's REST
//! strategies: which name rule applies, what a create or update resets, defaulting,
//! validation beyond metadata, and the fields a field selector may use.
//!
//! Everything here is keyed on the resource (group and plural); a kind with no entry gets the
//! generic behaviour.

use serde_json::{json, Value};

use crate::resources::ResourceInfo;
use crate::validation::{validate_object_meta, FieldError, NameRule};

/// The name rule of a resource's objects.
pub fn name_rule(info: &ResourceInfo) -> NameRule {
    match (info.group, info.plural) {
        ("", "namespaces") => NameRule::Label,
        ("", "services") => NameRule::Dns1035Label,
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        _ => NameRule::Subdomain,
    }
}

/// True when objects of this resource keep `metadata.generation` (bumped on spec changes).
pub fn tracks_generation(info: &ResourceInfo) -> bool {
    !matches!(
        (info.group, info.plural),
        ("", "events")
            | ("events.k8s.io", "events")
            | ("", "configmaps")
            | ("", "secrets")
            | ("", "endpoints")
            | ("coordination.k8s.io", "leases")
    )
}

/// True when a create keeps the `status` the client sent. kube-apiserver resets status on
/// create for resources that have a status subresource, except the few whose status is
/// written by their creator.
pub fn keeps_status_on_create(info: &ResourceInfo) -> bool {
    !info.has_subresource("status")
        || matches!((info.group, info.plural), ("", "nodes") | ("", "persistentvolumes"))
}

/// What decoding a v1 object does on every write, create or update: a Secret's `stringData`
/// is merged into `data` (base64, overriding keys of the same name) and dropped, as upstream.
pub fn canonicalize(info: &ResourceInfo, obj: &mut Value) {
    if let ("", "secrets") = (info.group, info.plural) {
        use base64::Engine as _;
        let Some(strings) = obj.as_object_mut().and_then(|o| o.remove("stringData")) else {
            return;
        };
        let Some(strings) = strings.as_object().filter(|s| !s.is_empty()) else { return };
        if !obj["data"].is_object() {
            obj["data"] = json!({});
        }
        for (key, value) in strings {
            let text = value.as_str().unwrap_or_default();
            obj["data"][key] = json!(base64::engine::general_purpose::STANDARD.encode(text));
        }
    }
}

/// Fills in what a new object gets from the server: status for a few kinds, and defaults.
pub fn prepare_for_create(info: &ResourceInfo, obj: &mut Value) {
    canonicalize(info, obj);
    if !keeps_status_on_create(info) {
        if let Some(map) = obj.as_object_mut() {
            map.remove("status");
        }
    }
    match (info.group, info.plural) {
        ("", "namespaces") => {
            obj["status"] = json!({"phase": "Active"});
            let name = obj["metadata"]["name"].clone();
            if !obj["metadata"]["labels"].is_object() {
                obj["metadata"]["labels"] = json!({});
            }
            obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
            if !obj["spec"]["finalizers"].is_array() {
                obj["spec"] = json!({"finalizers": ["kubernetes"]});
            }
        }
        ("", "pods") => {
            obj["status"] = json!({"phase": "Pending", "qosClass": qos_class(obj)});
        }
        _ => {}
    }
    crate::defaults::apply(info, obj);
}

/// Validation of a new or updated object: its metadata, then its kind's own fields.
pub fn validate(info: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = validate_metadata(info, obj, old);
    errors.extend(crate::validation::validate(info, obj, old));
    errors
}

/// Validation of an object's metadata only (and, for an update, what may not change in it).
pub fn validate_metadata(info: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = validate_object_meta(obj, info.namespaced, name_rule(info));
    if let Some(old) = old {
        errors.extend(validate_immutable_meta(obj, old));
    }
    errors
}

fn validate_immutable_meta(obj: &Value, old: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for field in ["uid", "creationTimestamp"] {
        let (new, was) = (&obj["metadata"][field], &old["metadata"][field]);
        if !new.is_null() && new != was {
            errors.push(FieldError::invalid(
                format!("metadata.{field}"),
                new,
                "field is immutable",
            ));
        }
    }
    errors
}

/// The field values a field selector can match for an object of this resource: always
/// `metadata.name` and `metadata.namespace`, plus what upstream supports for the kind. A
/// field not in the list is "not supported" (400 on list and watch).
pub fn field_values(info: &ResourceInfo, obj: &Value) -> Vec<(&'static str, String)> {
    let s = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    };
    let mut fields = vec![
        ("metadata.name", s(&obj["metadata"]["name"])),
        ("metadata.namespace", s(&obj["metadata"]["namespace"])),
    ];
    for (name, path) in kind_fields(info) {
        let mut v = obj;
        for p in *path {
            v = &v[*p];
        }
        // Unset booleans read as false, as upstream's typed fields do.
        let value = match (v, *name) {
            (Value::Null, "spec.hostNetwork" | "spec.unschedulable") => "false".to_string(),
            _ => s(v),
        };
        fields.push((name, value));
    }
    fields
}

/// The top-level fields of an object that [`field_values`] reads, besides `metadata`.
pub fn field_value_sources(info: &ResourceInfo) -> impl Iterator<Item = &'static str> {
    let fields = kind_fields(info);
    fields.iter().enumerate().filter_map(|(i, (_, path))| {
        // Each top-level field once.
        let seen = fields[..i].iter().any(|(_, earlier)| earlier[0] == path[0]);
        (!seen).then_some(path[0])
    })
}

/// The field selectors a kind supports beyond metadata's, with where each reads its value.
fn kind_fields(info: &ResourceInfo) -> &'static [(&'static str, &'static [&'static str])] {
    match (info.group, info.plural) {
        ("", "pods") => &[
            ("spec.nodeName", &["spec", "nodeName"]),
            ("spec.restartPolicy", &["spec", "restartPolicy"]),
            ("spec.schedulerName", &["spec", "schedulerName"]),
            ("spec.serviceAccountName", &["spec", "serviceAccountName"]),
            ("spec.hostNetwork", &["spec", "hostNetwork"]),
            ("status.phase", &["status", "phase"]),
            ("status.podIP", &["status", "podIP"]),
            ("status.nominatedNodeName", &["status", "nominatedNodeName"]),
        ],
        ("", "events") => &[
            ("involvedObject.kind", &["involvedObject", "kind"]),
            ("involvedObject.namespace", &["involvedObject", "namespace"]),
            ("involvedObject.name", &["involvedObject", "name"]),
            ("involvedObject.uid", &["involvedObject", "uid"]),
            ("involvedObject.apiVersion", &["involvedObject", "apiVersion"]),
            ("involvedObject.resourceVersion", &["involvedObject", "resourceVersion"]),
            ("involvedObject.fieldPath", &["involvedObject", "fieldPath"]),
            ("reason", &["reason"]),
            ("reportingComponent", &["reportingComponent"]),
            ("source", &["source", "component"]),
            ("type", &["type"]),
        ],
        ("events.k8s.io", "events") => &[
            ("regarding.kind", &["regarding", "kind"]),
            ("regarding.namespace", &["regarding", "namespace"]),
            ("regarding.name", &["regarding", "name"]),
            ("regarding.uid", &["regarding", "uid"]),
            ("reason", &["reason"]),
            ("type", &["type"]),
        ],
        ("", "secrets") => &[("type", &["type"])],
        ("", "nodes") => &[("spec.unschedulable", &["spec", "unschedulable"])],
        ("", "namespaces") => &[("status.phase", &["status", "phase"])],
        ("", "replicationcontrollers") | ("apps", "replicasets") => {
            &[("status.replicas", &["status", "replicas"])]
        }
        ("batch", "jobs") => &[("status.successful", &["status", "successful"])],
        ("certificates.k8s.io", "certificatesigningrequests") => {
            &[("spec.signerName", &["spec", "signerName"])]
        }
        ("", "services") => {
            &[("spec.clusterIP", &["spec", "clusterIP"]), ("spec.type", &["spec", "type"])]
        }
        _ => &[],
    }
}

/// The pod's quality-of-service class from its containers' requests and limits.
pub fn qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|f| pod["spec"][f].as_array())
        .flatten()
        .collect();
    let mut any = false;
    let mut guaranteed = true;
    for c in &containers {
        let requests = c["resources"]["requests"].as_object();
        let limits = c["resources"]["limits"].as_object();
        if requests.is_some_and(|r| !r.is_empty()) || limits.is_some_and(|l| !l.is_empty()) {
            any = true;
        }
        for resource in ["cpu", "memory"] {
            let limit = limits.and_then(|l| l.get(resource));
            let request = requests.and_then(|r| r.get(resource)).or(limit);
            if limit.is_none() || request != limit {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed && !containers.is_empty() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;

    #[test]
    fn secret_string_data_is_merged_into_data() {
        let secrets = Resources::builtin().get("", "v1", "secrets").unwrap();
        let mut secret =
            json!({"data": {"a": "b2xk", "keep": "eA=="}, "stringData": {"a": "new", "b": "two"}});
        canonicalize(secrets, &mut secret);
        assert_eq!(secret, json!({"data": {"a": "bmV3", "keep": "eA==", "b": "dHdv"}}));
        let mut only = json!({"stringData": {"k": "v"}});
        prepare_for_create(secrets, &mut only);
        assert_eq!(only["data"], json!({"k": "dg=="}));
        assert!(only.get("stringData").is_none());
    }

    #[test]
    fn pods_get_pending_status_and_qos() {
        let pods = Resources::builtin().get("", "v1", "pods").unwrap();
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}, "status": {"phase": "Running"}});
        prepare_for_create(pods, &mut pod);
        assert_eq!(pod["status"], json!({"phase": "Pending", "qosClass": "BestEffort"}));
        let limited = json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}});
        assert_eq!(qos_class(&limited), "Guaranteed");
        let requested =
            json!({"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}});
        assert_eq!(qos_class(&requested), "Burstable");
    }

    #[test]
    fn field_values_include_the_kinds_fields() {
        let pods = Resources::builtin().get("", "v1", "pods").unwrap();
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        let fields = field_values(pods, &pod);
        assert!(fields.contains(&("spec.nodeName", "n1".to_string())));
        assert!(fields.contains(&("status.phase", "Running".to_string())));
        assert!(fields.contains(&("spec.hostNetwork", "false".to_string())));
    }
}
