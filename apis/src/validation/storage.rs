//! Validation of storage.k8s.io/v1: StorageClasses, VolumeAttachments, CSIDrivers,
//! CSINodes and CSIStorageCapacities, with upstream's (v1.33) messages and field paths
//! (`ValidateStorageClass[Update]`, `ValidateVolumeAttachment[V1|Update]`,
//! `ValidateCSIDriver[Update]`, `ValidateCSINode[Update]`,
//! `ValidateCSIStorageCapacity[Update]`). A VolumeAttachment's inline volume spec is checked
//! by core's PersistentVolume checks (`super::core::persistent_volume`), as upstream does.
//!
//! Objects arrive after rkube's defaulting, which fills fewer fields than upstream's: a field
//! upstream defaults (a StorageClass's `reclaimPolicy` and `volumeBindingMode`, a CSIDriver's
//! booleans) is never an error when absent, and update checks compare such fields with their
//! defaults filled in. For CSINodes and CSIStorageCapacities an update gets the create checks
//! of the new object and then the update checks, as upstream's strategies run them.
//! Metadata is checked by the caller.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::core::persistent_volume::{csi_driver_name, name_rule, pv_spec, semantic, string};
use super::values::{
    invalid_each, items, label_selector, non_negative, one_of, one_of_or_empty, range_msg, str_of,
    text, IMMUTABLE,
};
use super::{name_problems, qualified_name_problems, FieldError, NameRule};
use crate::gofmt::{go_label_selector, go_pointer, go_quote, go_string_slice};
use crate::quantity::Quantity;

// ---------------------------------------------------------------------------------------
// StorageClasses

/// A StorageClass (`ValidateStorageClass`), and on update `ValidateStorageClassUpdate`:
/// parameters, provisioner and reclaimPolicy fixed, volumeBindingMode immutable.
pub fn storage_class(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let provisioner = str_of(&obj["provisioner"]);
    if provisioner.is_empty() {
        errors.push(FieldError::required("provisioner", ""));
    } else {
        let lower = provisioner.to_lowercase();
        for p in qualified_name_problems(&lower) {
            errors.push(FieldError::invalid("provisioner", &string(&lower), &p));
        }
    }
    errors.extend(parameters(&obj["parameters"], "parameters"));
    if let Some(e) = one_of_or_empty("reclaimPolicy", &obj["reclaimPolicy"], &["Delete", "Retain"])
    {
        errors.push(e);
    }
    if let Some(e) = one_of(
        "volumeBindingMode",
        &obj["volumeBindingMode"],
        &["Immediate", "WaitForFirstConsumer"],
    ) {
        errors.push(e);
    }
    errors.extend(allowed_topologies(&obj["allowedTopologies"], "allowedTopologies"));

    if let Some(old) = old {
        if semantic(&obj["parameters"]) != semantic(&old["parameters"]) {
            errors
                .push(FieldError::forbidden("parameters", "updates to parameters are forbidden."));
        }
        if obj["provisioner"] != old["provisioner"] {
            errors.push(FieldError::forbidden(
                "provisioner",
                "updates to provisioner are forbidden.",
            ));
        }
        let policy = |o: &Value| o["reclaimPolicy"].as_str().unwrap_or("Delete").to_string();
        if policy(obj) != policy(old) {
            errors.push(FieldError::forbidden(
                "reclaimPolicy",
                "updates to reclaimPolicy are forbidden.",
            ));
        }
        let mode = |o: &Value| string(o["volumeBindingMode"].as_str().unwrap_or("Immediate"));
        if mode(obj) != mode(old) {
            errors.push(FieldError::invalid("volumeBindingMode", &mode(obj), IMMUTABLE));
        }
    }
    errors
}

/// `validateParameters`: at most 512 entries, no empty key, 256 KiB in all.
fn parameters(params: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let Some(map) = params.as_object() else { return errors };
    if map.len() > 512 {
        return vec![FieldError::too_long(at, 512)];
    }
    let mut total = 0;
    for (k, v) in map {
        if k.is_empty() {
            errors.push(FieldError::invalid(at, &string(k), "field can not be empty."));
        }
        total += k.len() + str_of(v).len();
    }
    if total > 256 * 1024 {
        errors.push(FieldError::too_long(at, 256 * 1024));
    }
    errors
}

/// `validateAllowedTopologies`: each term's label requirements (values present and unique,
/// keys qualified names and unique), and no two terms alike.
fn allowed_topologies(list: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let terms = items(list);
    // Upstream starts its list of seen terms with one empty entry per term (its `make` with a
    // length), so an empty term is reported once per term as well.
    let mut seen: Vec<BTreeMap<String, BTreeSet<String>>> = vec![BTreeMap::new(); terms.len()];
    for (i, term) in terms.iter().enumerate() {
        let mut expressions: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (j, r) in items(&term["matchLabelExpressions"]).iter().enumerate() {
            let at = format!("{at}[{i}].matchLabelExpressions[{j}]");
            let values = items(&r["values"]);
            if values.is_empty() {
                errors.push(FieldError::required(format!("{at}.values"), ""));
            }
            let mut set = BTreeSet::new();
            for (k, v) in values.iter().enumerate() {
                if !set.insert(str_of(v).to_string()) {
                    errors.push(FieldError::duplicate(
                        format!("{at}.values[{k}]"),
                        &string(str_of(v)),
                    ));
                }
            }
            let key = str_of(&r["key"]);
            for p in qualified_name_problems(key) {
                errors.push(FieldError::invalid(format!("{at}.key"), &string(key), &p));
            }
            if expressions.contains_key(key) {
                errors.push(FieldError::duplicate(format!("{at}.key"), &string(key)));
            }
            expressions.insert(key.to_string(), set);
        }
        for earlier in &seen {
            if *earlier == expressions {
                errors.push(FieldError::duplicate(
                    format!("{at}[{i}].matchLabelExpressions"),
                    &json!(""),
                ));
            }
        }
        seen.push(expressions);
    }
    errors
}

// ---------------------------------------------------------------------------------------
// VolumeAttachments and CSIDrivers

/// A v1 VolumeAttachment (`ValidateVolumeAttachment` and `ValidateVolumeAttachmentV1`); on
/// update the spec may not change.
pub fn volume_attachment(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let spec = &obj["spec"];
    if str_of(&spec["attacher"]).is_empty() {
        errors.push(FieldError::required("spec.attacher", ""));
    }
    let source = &spec["source"];
    let (inline, pv) = (&source["inlineVolumeSpec"], &source["persistentVolumeName"]);
    const ONE: &str = "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
    match (inline.is_null(), pv.is_null()) {
        (true, true) => errors.push(FieldError::required("spec.source", ONE)),
        (false, false) => errors.push(FieldError::forbidden("spec.source", ONE)),
        (true, false) => {
            if str_of(pv).is_empty() {
                errors.push(FieldError::required(
                    "spec.source.persistentVolumeName",
                    "must specify non empty persistentVolumeName",
                ));
            }
        }
        (false, true) => errors.extend(pv_spec(inline, "", true, "spec.source.inlineVolumeSpec")),
    }
    name_rule(&spec["nodeName"], "spec.nodeName", NameRule::Subdomain, &mut errors);

    let status = &obj["status"];
    let metadata_size: usize = status["attachmentMetadata"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| k.len() + str_of(v).len())
        .sum();
    if metadata_size > 256 * 1024 {
        errors.push(FieldError::too_long("status.attachmentMetadata", 256 * 1024));
    }
    for which in ["attachError", "detachError"] {
        let e = &status[which];
        if str_of(&e["message"]).len() > 1024 {
            // Upstream reports the metadata limit here.
            errors.push(FieldError::too_long(format!("status.{which}.message"), 256 * 1024));
        }
        if let Some(code) = e["errorCode"].as_i64().filter(|c| *c < 0) {
            errors.push(FieldError::invalid(
                format!("status.{which}.errorCode"),
                &json!(code),
                &range_msg(0, i32::MAX.into()),
            ));
        }
    }

    csi_driver_name(&spec["attacher"], "spec.attacher", &mut errors);
    if pv.is_string() {
        name_rule(pv, "spec.source.persistentVolumeName", NameRule::Subdomain, &mut errors);
    }

    if let Some(old) = old {
        if semantic(spec) != semantic(&old["spec"]) {
            let shown = format!(
                "storage.VolumeAttachmentSpec{{Attacher:{}, Source:storage.VolumeAttachmentSource{{PersistentVolumeName:{}, InlineVolumeSpec:{}}}, NodeName:{}}}",
                go_quote(str_of(&spec["attacher"])),
                go_pointer("string", pv),
                go_pointer("core.PersistentVolumeSpec", inline),
                go_quote(str_of(&spec["nodeName"])),
            );
            errors.push(FieldError::invalid_shown("spec", &shown, IMMUTABLE));
        }
    }
    errors
}

/// A CSIDriver's spec (`validateCSIDriverSpec`); on update `attachRequired` and
/// `volumeLifecycleModes` are fixed (reported at upstream's `spec.attachedRequired`).
pub fn csi_driver(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let spec = &obj["spec"];
    if let Some(e) = one_of(
        "spec.fsGroupPolicy",
        &spec["fsGroupPolicy"],
        &["File", "None", "ReadWriteOnceWithFSType"],
    ) {
        errors.push(e);
    }
    let mut audiences = BTreeSet::new();
    for (i, t) in items(&spec["tokenRequests"]).iter().enumerate() {
        let at = format!("spec.tokenRequests[{i}]");
        let audience = str_of(&t["audience"]);
        if !audiences.insert(audience) {
            errors.push(FieldError::duplicate(format!("{at}.audience"), &string(audience)));
            continue;
        }
        let Some(seconds) = t["expirationSeconds"].as_i64() else { continue };
        if seconds < 600 {
            errors.push(FieldError::invalid(
                format!("{at}.expirationSeconds"),
                &json!(seconds),
                "may not specify a duration less than 10 minutes",
            ));
        }
        if seconds > 1 << 32 {
            errors.push(FieldError::invalid(
                format!("{at}.expirationSeconds"),
                &json!(seconds),
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
    }
    for mode in items(&spec["volumeLifecycleModes"]) {
        if !(mode == "Persistent" || mode == "Ephemeral") {
            errors.push(FieldError::unsupported(
                "spec.volumeLifecycleModes",
                mode,
                &["Persistent", "Ephemeral"],
            ));
        }
    }

    if let Some(old) = old {
        let attach = |o: &Value| o["spec"]["attachRequired"].as_bool().unwrap_or(true);
        if attach(obj) != attach(old) {
            errors.push(FieldError::invalid(
                "spec.attachedRequired",
                &json!(attach(obj)),
                IMMUTABLE,
            ));
        }
        let modes = |o: &Value| -> Vec<String> {
            // Upstream defaults an empty list to Persistent alone.
            match o["spec"]["volumeLifecycleModes"].as_array() {
                Some(list) if !list.is_empty() => {
                    list.iter().map(|m| str_of(m).to_string()).collect()
                }
                _ => vec!["Persistent".to_string()],
            }
        };
        if modes(obj) != modes(old) {
            let quoted: Vec<String> = modes(obj).iter().map(|m| go_quote(m)).collect();
            errors.push(FieldError::invalid_shown(
                "spec.volumeLifecycleModes",
                &format!("[]storage.VolumeLifecycleMode{{{}}}", quoted.join(", ")),
                IMMUTABLE,
            ));
        }
    }
    errors
}

// ---------------------------------------------------------------------------------------
// CSINodes

/// A CSINode driver's node ID, with `AllowLongNodeID` (always on since v1.22).
const CSI_NODE_ID_MAX: usize = 192;

/// `ValidateCSINode`; on update the strategy runs it, then `ValidateCSINodeUpdate` (which
/// runs it again, then refuses any change to a driver that keeps its name).
pub fn csi_node(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = csi_node_drivers(obj);
    if let Some(old) = old {
        errors.extend(csi_node_drivers(obj));
        for was in items(&old["spec"]["drivers"]) {
            for now in items(&obj["spec"]["drivers"]) {
                if str_of(&was["name"]) == str_of(&now["name"]) && !same_driver(was, now) {
                    errors.push(FieldError::invalid_shown(
                        "spec.drivers",
                        &go_csi_node_driver(now),
                        IMMUTABLE,
                    ));
                }
            }
        }
    }
    errors
}

/// Each driver: a CSI driver name, used once; a node ID; a non-negative volume count;
/// topology keys that are qualified names, each once.
fn csi_node_drivers(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut names = BTreeSet::new();
    for (i, d) in items(&obj["spec"]["drivers"]).iter().enumerate() {
        let at = format!("spec.drivers[{i}]");
        let name = str_of(&d["name"]);
        csi_driver_name(&d["name"], &format!("{at}.name"), &mut errors);
        let node_id = str_of(&d["nodeID"]);
        if node_id.is_empty() {
            errors.push(FieldError::required(format!("{at}.nodeID"), ""));
        }
        if node_id.len() > CSI_NODE_ID_MAX {
            errors.push(FieldError::invalid(
                format!("{at}.nodeID"),
                &text(node_id),
                &format!("must be {CSI_NODE_ID_MAX} characters or less"),
            ));
        }
        errors.extend(non_negative(&format!("{at}.allocatable.count"), &d["allocatable"]["count"]));
        if !names.insert(name) {
            errors.push(FieldError::duplicate(format!("{at}.name"), &text(name)));
        }
        let mut keys = BTreeSet::new();
        for key in items(&d["topologyKeys"]).iter().map(str_of) {
            if key.is_empty() {
                errors.push(FieldError::required(&at, ""));
            }
            if !keys.insert(key) {
                errors.push(FieldError::duplicate(&at, &text(key)));
            }
            invalid_each(qualified_name_problems(key), &at, key, &mut errors);
        }
    }
    errors
}

/// Two drivers as `Semantic.DeepEqual` compares them: an empty key list is an absent one,
/// but an empty `allocatable` is not an absent one (it is a pointer).
fn same_driver(a: &Value, b: &Value) -> bool {
    let keys = |d: &Value| -> Vec<String> {
        items(&d["topologyKeys"]).iter().map(|k| str_of(k).to_string()).collect()
    };
    let allocatable = |d: &Value| {
        let a = &d["allocatable"];
        (!a.is_null()).then(|| a["count"].as_i64())
    };
    str_of(&a["nodeID"]) == str_of(&b["nodeID"])
        && keys(a) == keys(b)
        && allocatable(a) == allocatable(b)
}

/// A `storage.CSINodeDriver` as `%#v` prints it.
fn go_csi_node_driver(d: &Value) -> String {
    let keys: Option<Vec<&str>> =
        d["topologyKeys"].as_array().map(|list| list.iter().map(str_of).collect());
    format!(
        "storage.CSINodeDriver{{Name:{}, NodeID:{}, TopologyKeys:{}, Allocatable:{}}}",
        go_quote(str_of(&d["name"])),
        go_quote(str_of(&d["nodeID"])),
        go_string_slice(keys.as_deref()),
        go_pointer("storage.VolumeNodeResources", &d["allocatable"])
    )
}

// ---------------------------------------------------------------------------------------
// CSIStorageCapacities

const NEGATIVE: &str = "must be greater than or equal to 0";

/// `ValidateCSIStorageCapacity` (the node topology a label selector, the class name a DNS
/// subdomain, the capacity not negative); on update also `ValidateCSIStorageCapacityUpdate`
/// (topology and class fixed). An update may keep label values in the selector's expressions
/// that are invalid when the stored selector already has an error.
pub fn csi_storage_capacity(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let topology = &obj["nodeTopology"];
    let mut errors = label_selector("nodeTopology", topology);
    if old.is_some_and(|o| !label_selector("nodeTopology", &o["nodeTopology"]).is_empty()) {
        let value_check = |e: &FieldError| {
            e.field.starts_with("nodeTopology.matchExpressions[") && e.field.contains("].values[")
        };
        errors.retain(|e| !value_check(e));
    }
    let class = str_of(&obj["storageClassName"]);
    invalid_each(name_problems(class, NameRule::Subdomain), "storageClassName", class, &mut errors);
    if let Some(q) = Quantity::parse(&obj["capacity"]).filter(|q| q.nanos < 0) {
        errors.push(FieldError::invalid("capacity", &text(&q.canonical()), NEGATIVE));
    }
    if let Some(old) = old {
        if semantic_selector(topology) != semantic_selector(&old["nodeTopology"]) {
            errors.push(FieldError::invalid_shown(
                "nodeTopology",
                &go_label_selector(topology),
                IMMUTABLE,
            ));
        }
        if class != str_of(&old["storageClassName"]) {
            errors.push(FieldError::invalid("storageClassName", &text(class), IMMUTABLE));
        }
    }
    errors
}

/// A label selector as `Semantic.DeepEqual` compares it: `None` when absent, and empty maps
/// and lists the same as absent ones inside.
fn semantic_selector(sel: &Value) -> Option<Value> {
    if sel.is_null() {
        return None;
    }
    let labels = sel["matchLabels"].as_object().filter(|m| !m.is_empty()).cloned();
    let expressions: Vec<Value> = items(&sel["matchExpressions"])
        .iter()
        .map(|e| {
            let values: Vec<&str> = items(&e["values"]).iter().map(str_of).collect();
            json!([str_of(&e["key"]), str_of(&e["operator"]), values])
        })
        .collect();
    Some(json!([labels, expressions]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    fn standard() -> Value {
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "standard",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "rancher.io/local-path", "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer"})
    }

    fn class_with(extra: Value) -> Value {
        let mut c = standard();
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                c.as_object_mut().unwrap().remove(k);
            } else {
                c[k] = v.clone();
            }
        }
        c
    }

    #[test]
    fn storage_classes() {
        assert!(lines(storage_class(&standard(), None)).is_empty());
        // Upstream defaults both; rkube may store them unset.
        let bare = class_with(json!({"reclaimPolicy": null, "volumeBindingMode": null,
            "parameters": {"type": "gp3"}, "allowedTopologies": [{"matchLabelExpressions": [
                {"key": "topology.kubernetes.io/zone", "values": ["a", "b"]}]}]}));
        assert!(lines(storage_class(&bare, None)).is_empty());
        assert_eq!(
            lines(storage_class(&class_with(json!({"provisioner": null})), None)),
            ["provisioner: Required value"]
        );
        assert_eq!(
            lines(storage_class(&class_with(json!({"provisioner": "My Provisioner"})), None)),
            ["provisioner: Invalid value: \"my provisioner\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]
        );
        assert_eq!(
            lines(storage_class(&class_with(json!({"reclaimPolicy": "Recycle", "volumeBindingMode": "Later"})), None)),
            [
                "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"",
                "volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\"",
            ]
        );
        assert_eq!(
            lines(storage_class(&class_with(json!({"parameters": {"": "x"}})), None)),
            ["parameters: Invalid value: \"\": field can not be empty."]
        );
        assert_eq!(
            lines(storage_class(
                &class_with(json!({"allowedTopologies": [
                {"matchLabelExpressions": [{"key": "zone", "values": ["a", "a"]}, {"key": "zone", "values": []}]},
                {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]},
                {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]})),
                None
            )),
            [
                "allowedTopologies[0].matchLabelExpressions[0].values[1]: Duplicate value: \"a\"",
                "allowedTopologies[0].matchLabelExpressions[1].values: Required value",
                "allowedTopologies[0].matchLabelExpressions[1].key: Duplicate value: \"zone\"",
                "allowedTopologies[2].matchLabelExpressions: Duplicate value: \"\"",
            ]
        );
    }

    #[test]
    fn storage_class_updates() {
        let old = standard();
        let relabelled =
            class_with(json!({"metadata": {"name": "standard", "labels": {"a": "b"}}}));
        assert!(lines(storage_class(&relabelled, Some(&old))).is_empty());
        let changed =
            class_with(json!({"provisioner": "ebs.csi.aws.com", "parameters": {"type": "gp3"},
            "reclaimPolicy": "Retain", "volumeBindingMode": "Immediate"}));
        assert_eq!(
            lines(storage_class(&changed, Some(&old))),
            [
                "parameters: Forbidden: updates to parameters are forbidden.",
                "provisioner: Forbidden: updates to provisioner are forbidden.",
                "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
                "volumeBindingMode: Invalid value: \"Immediate\": field is immutable",
            ]
        );
        // Unset means upstream's defaults.
        let bare = class_with(json!({"reclaimPolicy": null, "volumeBindingMode": null}));
        let explicit =
            class_with(json!({"reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}));
        assert!(lines(storage_class(&explicit, Some(&bare))).is_empty());
    }

    #[test]
    fn volume_attachments() {
        let va = json!({"metadata": {"name": "csi-123"}, "spec": {"attacher": "ebs.csi.aws.com",
            "nodeName": "node-1", "source": {"persistentVolumeName": "pv-1"}}});
        assert!(lines(volume_attachment(&va, None)).is_empty());
        let bad = json!({"metadata": {"name": "csi-123"}, "spec": {"attacher": "", "nodeName": "node-1",
            "source": {}}});
        assert_eq!(
            lines(volume_attachment(&bad, None)),
            [
                "spec.attacher: Required value".to_string(),
                "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName".to_string(),
                "spec.attacher: Required value".to_string(),
                format!("spec.attacher: Invalid value: \"\": {SUBDOMAIN}"),
            ]
        );
        let mut moved = va.clone();
        moved["spec"]["nodeName"] = json!("node-2");
        assert_eq!(
            lines(volume_attachment(&moved, Some(&va))),
            ["spec: Invalid value: storage.VolumeAttachmentSpec{Attacher:\"ebs.csi.aws.com\", Source:storage.VolumeAttachmentSource{PersistentVolumeName:(*string)(0xc000a1c000), InlineVolumeSpec:(*core.PersistentVolumeSpec)(nil)}, NodeName:\"node-2\"}: field is immutable"]
        );
        let inline = json!({"metadata": {"name": "csi-123"}, "spec": {"attacher": "ebs.csi.aws.com",
            "nodeName": "node-1", "source": {"inlineVolumeSpec": {"accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": "/d"}, "persistentVolumeReclaimPolicy": "Delete"}}}});
        assert_eq!(
            lines(volume_attachment(&inline, None)),
            [
                "spec.source.inlineVolumeSpec.csi: Required value: has to be specified in the context of inline volumes",
                "spec.source.inlineVolumeSpec.persistentVolumeReclaimPolicy: Forbidden: may only be Retain in the context of inline volumes",
            ]
        );
    }

    #[test]
    fn csi_drivers() {
        let d = json!({"metadata": {"name": "ebs.csi.aws.com"}, "spec": {"attachRequired": true,
            "fsGroupPolicy": "File", "volumeLifecycleModes": ["Persistent", "Ephemeral"],
            "tokenRequests": [{"audience": "sts.amazonaws.com", "expirationSeconds": 3600}]}});
        assert!(lines(csi_driver(&d, None)).is_empty());
        assert!(lines(csi_driver(&json!({"spec": {}}), None)).is_empty());
        let bad = json!({"spec": {"fsGroupPolicy": "Sometimes", "volumeLifecycleModes": ["Forever"],
            "tokenRequests": [{"audience": "a", "expirationSeconds": 60}, {"audience": "a"}]}});
        assert_eq!(
            lines(csi_driver(&bad, None)),
            [
                "spec.fsGroupPolicy: Unsupported value: \"Sometimes\": supported values: \"File\", \"None\", \"ReadWriteOnceWithFSType\"",
                "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
                "spec.tokenRequests[1].audience: Duplicate value: \"a\"",
                "spec.volumeLifecycleModes: Unsupported value: \"Forever\": supported values: \"Persistent\", \"Ephemeral\"",
            ]
        );
        let changed =
            json!({"spec": {"attachRequired": false, "volumeLifecycleModes": ["Ephemeral"]}});
        assert_eq!(
            lines(csi_driver(&changed, Some(&d))),
            [
                "spec.attachedRequired: Invalid value: false: field is immutable",
                "spec.volumeLifecycleModes: Invalid value: []storage.VolumeLifecycleMode{\"Ephemeral\"}: field is immutable",
            ]
        );
        // Unset is upstream's default: attachment required, persistent volumes only.
        let defaults =
            json!({"spec": {"attachRequired": true, "volumeLifecycleModes": ["Persistent"]}});
        assert!(lines(csi_driver(&defaults, Some(&json!({"spec": {}})))).is_empty());
    }

    #[test]
    fn csi_nodes() {
        let n = json!({"spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1",
            "topologyKeys": ["topology.ebs.csi.aws.com/zone"], "allocatable": {"count": 25}}]}});
        assert!(csi_node(&n, None).is_empty());
        assert!(csi_node(&n, Some(&n)).is_empty());
        let bad = json!({"spec": {"drivers": [
            {"name": "Bad_Driver", "nodeID": "x".repeat(193), "topologyKeys": ["", "a", "a"],
                "allocatable": {"count": -1}},
            {"name": "Bad_Driver"}]}});
        assert_eq!(
            lines(csi_node(&bad, None)),
            [
                "spec.drivers[0].name: Invalid value: \"Bad_Driver\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string(),
                format!("spec.drivers[0].nodeID: Invalid value: \"{}\": must be 192 characters or less", "x".repeat(193)),
                "spec.drivers[0].allocatable.count: Invalid value: -1: must be greater than or equal to 0".to_string(),
                "spec.drivers[0]: Required value".to_string(),
                "spec.drivers[0]: Invalid value: \"\": name part must be non-empty".to_string(),
                "spec.drivers[0]: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_string(),
                "spec.drivers[0]: Duplicate value: \"a\"".to_string(),
                "spec.drivers[1].name: Invalid value: \"Bad_Driver\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string(),
                "spec.drivers[1].nodeID: Required value".to_string(),
                "spec.drivers[1].name: Duplicate value: \"Bad_Driver\"".to_string(),
            ]
        );
        let moved = json!({"spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-2",
            "topologyKeys": ["topology.ebs.csi.aws.com/zone"]}]}});
        assert_eq!(
            lines(csi_node(&moved, Some(&n))),
            ["spec.drivers: Invalid value: storage.CSINodeDriver{Name:\"ebs.csi.aws.com\", NodeID:\"i-2\", TopologyKeys:[]string{\"topology.ebs.csi.aws.com/zone\"}, Allocatable:(*storage.VolumeNodeResources)(nil)}: field is immutable"]
        );
    }

    #[test]
    fn csi_storage_capacities() {
        let c = json!({"storageClassName": "standard", "capacity": "10Gi", "maximumVolumeSize": "1Gi",
            "nodeTopology": {"matchLabels": {"topology.hostpath.csi/node": "n1"}}});
        assert!(csi_storage_capacity(&c, None).is_empty());
        assert!(csi_storage_capacity(&c, Some(&c)).is_empty());
        let bad = json!({"storageClassName": "Std", "capacity": "-1Gi",
            "nodeTopology": {"matchExpressions": [{"key": "k", "operator": "In", "values": ["-"]}]}});
        assert_eq!(
            lines(csi_storage_capacity(&bad, Some(&c))),
            [
                "nodeTopology.matchExpressions[0].values[0]: Invalid value: \"-\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "storageClassName: Invalid value: \"Std\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "capacity: Invalid value: \"-1Gi\": must be greater than or equal to 0",
                "nodeTopology: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:\"k\", Operator:\"In\", Values:[]string{\"-\"}}}}: field is immutable",
                "storageClassName: Invalid value: \"Std\": field is immutable",
            ]
        );
        // A stored selector that is already invalid lets its label values through.
        assert_eq!(
            lines(csi_storage_capacity(&bad, Some(&bad)))[0],
            "storageClassName: Invalid value: \"Std\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        let mut dropped = c.clone();
        dropped["nodeTopology"] = Value::Null;
        assert_eq!(
            lines(csi_storage_capacity(&dropped, Some(&c))),
            ["nodeTopology: Invalid value: \"null\": field is immutable"]
        );
    }
}
