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
        ("networking.k8s.io", "ipaddresses") => NameRule::IpAddress,
        ("apiregistration.k8s.io", "apiservices") => NameRule::PathSegment,
        ("certificates.k8s.io", "certificatesigningrequests") => NameRule::Any,
        _ => NameRule::Subdomain,
    }
}

/// True when objects of this resource have a `metadata.generation`: 1 on create, one more on
/// each update that changes what the registry counts as the spec.
///
/// kube-apiserver's generic store never sets a generation itself; each resource's REST
/// strategy does, in its `PrepareForCreate` and `PrepareForUpdate`. This is the list of the
/// built-in resources whose strategies do so in v1.33 with default feature gates (the
/// `pkg/registry/<group>/<resource>/strategy.go` files of kubernetes/kubernetes, plus the CRD
/// strategy of apiextensions-apiserver). Every other resource keeps a generation of 0, which
/// is left out of its JSON. Pods have one from v1.33 on (not feature-gated); autoscaling's
/// HorizontalPodAutoscaler gets one only in later releases, behind a feature gate.
///
/// What bumps it on update is mostly a change outside `metadata` and `status`, but not
/// always: upstream also bumps a Deployment's on an annotation change and an EndpointSlice's
/// on a label change, and never bumps a PriorityClass's after create.
pub fn tracks_generation(info: &ResourceInfo) -> bool {
    matches!(
        (info.group, info.plural),
        ("", "pods" | "podtemplates" | "replicationcontrollers")
            | ("apps", "daemonsets" | "deployments" | "replicasets" | "statefulsets")
            | ("batch", "cronjobs" | "jobs")
            | ("policy", "poddisruptionbudgets")
            | ("networking.k8s.io", "ingressclasses" | "ingresses" | "networkpolicies")
            | ("discovery.k8s.io", "endpointslices")
            | ("storage.k8s.io", "csidrivers")
            | ("scheduling.k8s.io", "priorityclasses")
            | (
                "admissionregistration.k8s.io",
                "mutatingwebhookconfigurations"
                    | "validatingwebhookconfigurations"
                    | "validatingadmissionpolicies"
                    | "validatingadmissionpolicybindings"
            )
            | ("apiextensions.k8s.io", "customresourcedefinitions")
            | ("flowcontrol.apiserver.k8s.io", "flowschemas" | "prioritylevelconfigurations")
    )
}

/// Whether an update of `old` to `new` bumps the generation of a resource that tracks one:
/// a change outside `metadata` and `status` (what upstream's strategies compare as the spec),
/// plus a Deployment's annotations and an EndpointSlice's labels; never a PriorityClass's.
pub fn bumps_generation(info: &ResourceInfo, new: &Value, old: &Value) -> bool {
    // Compared in place, without copies: this runs on every update.
    let body_differs =
        || body(new).count() != body(old).count() || body(new).any(|(k, v)| old.get(k) != Some(v));
    let meta_differs = |field: &str| meta_field(new, field) != meta_field(old, field);
    match (info.group, info.plural) {
        ("scheduling.k8s.io", "priorityclasses") => false,
        ("apps", "deployments") => body_differs() || meta_differs("annotations"),
        ("discovery.k8s.io", "endpointslices") => body_differs() || meta_differs("labels"),
        _ => body_differs(),
    }
}

/// An object's fields other than metadata, status, apiVersion and kind.
fn body(obj: &Value) -> impl Iterator<Item = (&String, &Value)> {
    let fields = obj.as_object().into_iter().flatten();
    fields.filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind"))
}

fn meta_field<'a>(obj: &'a Value, field: &str) -> Option<&'a Value> {
    obj["metadata"].get(field).filter(|v| !v.is_null())
}

/// True when a create keeps the `status` the client sent. kube-apiserver resets status on
/// create for resources that have a status subresource, except the few whose status is
/// written by their creator.
pub fn keeps_status_on_create(info: &ResourceInfo) -> bool {
    !info.has_subresource("status")
        || matches!((info.group, info.plural), ("", "nodes") | ("", "persistentvolumes"))
}

/// What decoding a v1 object does on every write, create or update: empty metadata maps and
/// lists are dropped (upstream's are `omitempty`: a patch that removes the last owner
/// reference leaves none, not `[]`), and a Secret's `stringData` is merged into `data`
/// (base64, overriding keys of the same name) and dropped, as upstream.
pub fn canonicalize(info: &ResourceInfo, obj: &mut Value) {
    drop_empty_metadata(obj);
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

/// Drops the metadata maps and lists that are empty or null, as upstream's `omitempty` does.
pub fn drop_empty_metadata(obj: &mut Value) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    meta.retain(|field, value| {
        let listed = ["labels", "annotations", "finalizers", "ownerReferences", "managedFields"];
        let empty = match value {
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            Value::Null => true,
            _ => false,
        };
        !(empty && listed.contains(&field.as_str()))
    });
}

/// Fills in what a new object gets from the server: status for a few kinds, and defaults.
pub fn prepare_for_create(info: &ResourceInfo, obj: &mut Value) {
    canonicalize(info, obj);
    crate::disabled_fields::drop(info, obj, None);
    crate::convert::keep_hpa_v1_status(info, obj, None);
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
            if obj["spec"]["schedulingGates"].as_array().is_some_and(|g| !g.is_empty()) {
                obj["status"]["conditions"] = json!([{
                    "type": "PodScheduled",
                    "status": "False",
                    "lastProbeTime": null,
                    "lastTransitionTime": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                }]);
            }
            merge_label_keys_into_affinity(obj);
        }
        ("batch", "jobs") if obj["spec"]["manualSelector"] != true => generate_job_selector(obj),
        _ => {}
    }
    crate::defaults::apply(info, obj);
}

/// Who made a request (upstream's `user.Info`), for the strategies that record it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requester {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

/// What a create records of who made it: a CertificateSigningRequest's `spec.username`,
/// `uid`, `groups` and `extra` are its requester's, whatever the body said, as upstream's
/// strategy sets them (nothing at all for a create nobody made, such as the server's own).
pub fn record_requester(info: &ResourceInfo, obj: &mut Value, requester: Option<&Requester>) {
    if (info.group, info.plural) != ("certificates.k8s.io", "certificatesigningrequests") {
        return;
    }
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    for field in ["username", "uid", "groups", "extra"] {
        spec.shift_remove(field);
    }
    let Some(requester) = requester else { return };
    // As Go writes the fields: empty strings and lists are left out.
    if !requester.name.is_empty() {
        spec.insert("username".into(), json!(requester.name));
    }
    if !requester.uid.is_empty() {
        spec.insert("uid".into(), json!(requester.uid));
    }
    if !requester.groups.is_empty() {
        spec.insert("groups".into(), json!(requester.groups));
    }
    if !requester.extra.is_empty() {
        spec.insert("extra".into(), json!(requester.extra));
    }
}

/// The metadata fields a write to the `status` subresource may not change for this kind
/// (upstream's status strategies: a Deployment's labels, a pod's owner references); its other
/// labels, annotations, finalizers and owner references are the client's.
pub fn metadata_kept_on_status_write(info: &ResourceInfo) -> &'static [&'static str] {
    match (info.group, info.plural) {
        ("apps", "deployments") => &["labels"],
        ("", "pods") => &["ownerReferences"],
        _ => &[],
    }
}

/// What an update of `old` to `new` (a main-resource write, or `subresource` such as
/// `finalize` or `binding`) gets from the server besides its metadata and status: defaults on
/// every write, as upstream's decoding does (a container added by an update gets its pull
/// policy like one created with the object), disabled features' fields dropped, and the parts
/// a kind keeps fixed put back: a namespace's `spec.finalizers` (changed only through
/// `/finalize`), a certificate request's spec (what its requester signed for), an
/// autoscaling/v1 HPA's status annotations.
pub fn prepare_for_update(
    info: &ResourceInfo,
    new: &mut Value,
    old: &Value,
    subresource: Option<&str>,
) {
    crate::disabled_fields::drop(info, new, Some(old));
    crate::convert::keep_hpa_v1_status(info, new, Some(old));
    crate::defaults::apply(info, new);
    canonicalize(info, new);
    let fixed_spec = match (info.group, info.plural) {
        ("", "namespaces") => subresource != Some("finalize"),
        ("certificates.k8s.io", "certificatesigningrequests") => true,
        _ => false,
    };
    if fixed_spec {
        new["spec"] = old["spec"].clone();
    }
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

/// The field label of the stored objects (see [`field_values`] of the resource `info` is
/// stored with) that a field selector's `label` on `info` reads; `None` when `info` does not
/// support it (400 on list and watch). A resource stored with another has its labels
/// converted, as upstream's field label conversion functions do; any other reads its own.
pub fn storage_field_label(info: &ResourceInfo, label: &str) -> Option<&'static str> {
    match field_label_conversions(info) {
        Some(conversions) => conversions.iter().find(|(l, _)| *l == label).map(|(_, s)| *s),
        None => field_values(info, &Value::Null).into_iter().map(|(f, _)| f).find(|f| *f == label),
    }
}

/// The field labels of a resource stored with another resource: each label its API accepts,
/// with the storage's label holding the value.
fn field_label_conversions(info: &ResourceInfo) -> Option<&'static [(&'static str, &'static str)]> {
    match (info.group, info.plural) {
        // events.k8s.io/v1 names the core fields its own way.
        ("events.k8s.io", "events") => Some(&[
            ("metadata.name", "metadata.name"),
            ("metadata.namespace", "metadata.namespace"),
            ("reason", "reason"),
            ("regarding.kind", "involvedObject.kind"),
            ("regarding.namespace", "involvedObject.namespace"),
            ("regarding.name", "involvedObject.name"),
            ("regarding.uid", "involvedObject.uid"),
            ("regarding.apiVersion", "involvedObject.apiVersion"),
            ("regarding.resourceVersion", "involvedObject.resourceVersion"),
            ("regarding.fieldPath", "involvedObject.fieldPath"),
            ("reportingController", "reportingComponent"),
            ("source", "source"),
            ("type", "type"),
        ]),
        _ => None,
    }
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

/// A Job selects its pods by its own uid unless it asks to choose the selector itself
/// (`manualSelector`): the pod template gets the job-name and controller-uid labels (both the
/// `batch.kubernetes.io/` ones and the legacy unprefixed ones) and the selector matches the
/// uid. Labels the client set are kept; a conflicting one fails validation, as upstream.
fn generate_job_selector(job: &mut Value) {
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

/// A pod (anti-)affinity term's `matchLabelKeys` and `mismatchLabelKeys` become `key in
/// (value)` and `key notin (value)` requirements of its label selector, with the values of the
/// new pod's own labels, as upstream's API server does when a pod is created (the scheduler
/// reads only the selector). A term without a selector matches nothing and is left alone.
fn merge_label_keys_into_affinity(pod: &mut Value) {
    let labels = pod["metadata"]["labels"].clone();
    let Some(affinity) = pod.get_mut("spec").and_then(|s| s.get_mut("affinity")) else { return };
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(section) = affinity.get_mut(kind).filter(|v| v.is_object()) else { continue };
        for (list, nested) in [
            ("requiredDuringSchedulingIgnoredDuringExecution", false),
            ("preferredDuringSchedulingIgnoredDuringExecution", true),
        ] {
            let Some(terms) = section.get_mut(list).and_then(Value::as_array_mut) else { continue };
            for term in terms {
                let term = if nested { &mut term["podAffinityTerm"] } else { term };
                if !term["labelSelector"].is_object() {
                    continue;
                }
                for (keys, operator) in [("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")] {
                    let keys: Vec<String> = term[keys]
                        .as_array()
                        .map(|k| k.iter().filter_map(|k| k.as_str().map(String::from)).collect())
                        .unwrap_or_default();
                    for key in keys {
                        let Some(value) = labels.get(&key).filter(|v| v.is_string()) else {
                            continue;
                        };
                        let selector = &mut term["labelSelector"];
                        if !selector["matchExpressions"].is_array() {
                            selector["matchExpressions"] = json!([]);
                        }
                        let requirement =
                            json!({"key": key, "operator": operator, "values": [value]});
                        selector["matchExpressions"]
                            .as_array_mut()
                            .expect("a list")
                            .push(requirement);
                    }
                }
            }
        }
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
    fn a_certificate_request_records_its_requester() {
        let csrs =
            Resources::builtin().get("certificates.k8s.io", "v1", "certificatesigningrequests");
        let csrs = csrs.unwrap();
        let mut csr = json!({"spec": {"request": "UEVN", "signerName": "s", "username": "root",
            "uid": "0", "groups": ["system:masters"], "extra": {"a": ["b"]}}});
        let requester = Requester {
            name: "alice".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            ..Default::default()
        };
        record_requester(csrs, &mut csr, Some(&requester));
        assert_eq!(
            csr["spec"],
            json!({"request": "UEVN", "signerName": "s", "username": "alice",
                "groups": ["dev", "system:authenticated"]})
        );
        record_requester(csrs, &mut csr, None);
        assert_eq!(csr["spec"], json!({"request": "UEVN", "signerName": "s"}));
        // Other kinds keep what they were given.
        let pods = Resources::builtin().get("", "v1", "pods").unwrap();
        let mut pod = json!({"spec": {"username": "x"}});
        record_requester(pods, &mut pod, Some(&requester));
        assert_eq!(pod["spec"]["username"], "x");
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
    fn gated_pods_say_so_and_label_keys_join_affinity_selectors() {
        let pods = Resources::builtin().get("", "v1", "pods").unwrap();
        let term = |extra: Value| {
            let mut t = json!({"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}});
            t.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            t
        };
        let mut pod = json!({
            "metadata": {"name": "p", "labels": {"app": "web", "pod-template-hash": "abc", "tenant": "t1"}},
            "spec": {
                "containers": [{"name": "c", "image": "busybox"}],
                "schedulingGates": [{"name": "example.com/quota"}],
                "affinity": {
                    "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        term(json!({"matchLabelKeys": ["pod-template-hash", "missing"]})),
                        {"topologyKey": "zone", "matchLabelKeys": ["tenant"]}
                    ]},
                    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 5, "podAffinityTerm": term(json!({"mismatchLabelKeys": ["tenant"]}))}
                    ]}
                }
            }
        });
        prepare_for_create(pods, &mut pod);
        let condition = &pod["status"]["conditions"][0];
        assert_eq!(
            (&condition["type"], &condition["status"], &condition["reason"]),
            (&json!("PodScheduled"), &json!("False"), &json!("SchedulingGated"))
        );
        let affinity = &pod["spec"]["affinity"];
        assert_eq!(
            affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
                ["labelSelector"],
            json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "pod-template-hash", "operator": "In", "values": ["abc"]}]})
        );
        // No selector: the term matches nothing, and stays so.
        assert!(affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][1]
            .get("labelSelector")
            .is_none());
        assert_eq!(
            affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
                ["podAffinityTerm"]["labelSelector"]["matchExpressions"],
            json!([{"key": "tenant", "operator": "NotIn", "values": ["t1"]}])
        );
        let mut plain = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}});
        prepare_for_create(pods, &mut plain);
        assert!(
            plain["status"].get("conditions").is_none() && plain["spec"].get("affinity").is_none()
        );
    }

    #[test]
    fn what_bumps_a_generation() {
        let r = Resources::builtin();
        let deployments = r.get("apps", "v1", "deployments").unwrap();
        let old = json!({"metadata": {"name": "d", "labels": {"a": "1"}}, "spec": {"replicas": 1}, "status": {"replicas": 0}});
        let mut new = old.clone();
        new["status"]["replicas"] = json!(1);
        new["metadata"]["labels"]["a"] = json!("2");
        assert!(!bumps_generation(deployments, &new, &old));
        new["metadata"]["annotations"] = json!({"kubernetes.io/change-cause": "x"});
        assert!(bumps_generation(deployments, &new, &old));
        let slices = r.get("discovery.k8s.io", "v1", "endpointslices").unwrap();
        let old = json!({"metadata": {"name": "s"}, "addressType": "IPv4", "endpoints": []});
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"kubernetes.io/service-name": "web"});
        assert!(bumps_generation(slices, &new, &old));
        new = old.clone();
        new["endpoints"] = json!([{"addresses": ["10.0.0.1"]}]);
        assert!(bumps_generation(slices, &new, &old));
        let classes = r.get("scheduling.k8s.io", "v1", "priorityclasses").unwrap();
        let old = json!({"metadata": {"name": "p"}, "value": 1, "description": "a"});
        assert!(!bumps_generation(
            classes,
            &json!({"metadata": {"name": "p"}, "value": 1, "description": "b"}),
            &old
        ));
    }

    #[test]
    fn jobs_select_their_pods_by_uid() {
        let jobs = Resources::builtin().get("batch", "v1", "jobs").unwrap();
        let mut job = json!({"metadata": {"name": "pi", "uid": "0f6c"}, "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}});
        prepare_for_create(jobs, &mut job);
        let labels = json!({"batch.kubernetes.io/controller-uid": "0f6c", "batch.kubernetes.io/job-name": "pi", "controller-uid": "0f6c", "job-name": "pi"});
        assert_eq!(job["spec"]["template"]["metadata"]["labels"], labels);
        assert_eq!(job["metadata"]["labels"], labels);
        assert_eq!(
            job["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "0f6c"}})
        );
        let mut manual = json!({"metadata": {"name": "m", "uid": "1"}, "spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}}}});
        prepare_for_create(jobs, &mut manual);
        assert_eq!(manual["spec"]["selector"], json!({"matchLabels": {"a": "b"}}));
        assert_eq!(manual["spec"]["template"]["metadata"]["labels"], json!({"a": "b"}));
    }

    #[test]
    fn generation_is_kept_by_the_resources_whose_upstream_strategy_sets_it() {
        let resources = Resources::builtin();
        let mut tracked: Vec<(&str, &str)> = resources
            .all()
            .iter()
            .filter(|info| tracks_generation(info))
            .map(|info| (info.group, info.plural))
            .collect();
        // Served versions of one resource share the answer.
        tracked.sort();
        tracked.dedup();
        let mut expected = vec![
            ("", "pods"),
            ("", "podtemplates"),
            ("", "replicationcontrollers"),
            ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
            ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
            ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
            ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
            ("apiextensions.k8s.io", "customresourcedefinitions"),
            ("apps", "daemonsets"),
            ("apps", "deployments"),
            ("apps", "replicasets"),
            ("apps", "statefulsets"),
            ("batch", "cronjobs"),
            ("batch", "jobs"),
            ("discovery.k8s.io", "endpointslices"),
            ("flowcontrol.apiserver.k8s.io", "flowschemas"),
            ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"),
            ("networking.k8s.io", "ingressclasses"),
            ("networking.k8s.io", "ingresses"),
            ("networking.k8s.io", "networkpolicies"),
            ("policy", "poddisruptionbudgets"),
            ("scheduling.k8s.io", "priorityclasses"),
            ("storage.k8s.io", "csidrivers"),
        ];
        expected.sort();
        assert_eq!(tracked, expected);
        // Every name in the list is a resource rkube serves (no typo hides one).
        for (group, plural) in &expected {
            assert!(resources.all().iter().any(|i| (i.group, i.plural) == (*group, *plural)));
        }
    }

    #[test]
    fn generation_is_left_out_for_kinds_upstream_gives_none() {
        let resources = Resources::builtin();
        for (group, version, plural) in [
            ("", "v1", "services"),
            ("", "v1", "namespaces"),
            ("", "v1", "nodes"),
            ("", "v1", "serviceaccounts"),
            ("", "v1", "persistentvolumes"),
            ("", "v1", "persistentvolumeclaims"),
            ("", "v1", "configmaps"),
            ("", "v1", "secrets"),
            ("", "v1", "events"),
            ("autoscaling", "v1", "horizontalpodautoscalers"),
            ("autoscaling", "v2", "horizontalpodautoscalers"),
            ("apps", "v1", "controllerrevisions"),
            ("rbac.authorization.k8s.io", "v1", "roles"),
            ("rbac.authorization.k8s.io", "v1", "clusterrolebindings"),
            ("storage.k8s.io", "v1", "storageclasses"),
            ("storage.k8s.io", "v1", "volumeattachments"),
            ("networking.k8s.io", "v1", "servicecidrs"),
            ("coordination.k8s.io", "v1", "leases"),
            ("certificates.k8s.io", "v1", "certificatesigningrequests"),
            ("apiregistration.k8s.io", "v1", "apiservices"),
        ] {
            let info = resources.get(group, version, plural).unwrap();
            assert!(!tracks_generation(info), "{group}/{plural}");
        }
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
