//! PersistentVolumeClaims and PersistentVolumes, with upstream's (v1.33) messages and field
//! paths (`ValidatePersistentVolumeClaim[Update]`, `ValidatePersistentVolume[Spec|Update]`).
//! The volume spec checks and the semantic comparison are shared with storage.k8s.io's
//! VolumeAttachments (`super::super::storage`), as upstream's are.
//!
//! Objects arrive after rkube's defaulting, which fills fewer fields than upstream's: a field
//! upstream defaults (an azureDisk's `kind`, ...) is never an error when absent, and update
//! checks compare such fields with their defaults filled in. Metadata is checked by the
//! caller. Upstream appends a `cmp.Diff` of the specs to its "immutable after creation"
//! messages; go-cmp randomises that output on purpose, so rkube gives the first line only (as
//! `super::pod`'s update check does).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::gofmt::{go_pointee, go_pointer, go_quantity, go_quote, go_string_slice};
use crate::quantity::Quantity;
use crate::validation::values::{
    items, label_selector, no_backsteps, one_of, range_msg, str_of, HOST_PATH_TYPES, IMMUTABLE,
};
use crate::validation::{name_problems, qualified_name_problems, FieldError, NameRule};

/// `sets.List(supportedAccessModes)`: sorted.
const ACCESS_MODES: [&str; 4] =
    ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];
const PV_RECLAIM_POLICIES: [&str; 3] = ["Delete", "Recycle", "Retain"];
const VOLUME_MODES: [&str; 2] = ["Block", "Filesystem"];
const NOT_POSITIVE: &str = "must be greater than zero";
const MORE_THAN_ONE: &str = "may not specify more than 1 volume type";
const INLINE: &str = "may not be specified in the context of inline volumes";
/// The annotation that named a claim's class before `storageClassName` existed.
const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
/// Node label keys a PV's node affinity may be moved from (beta) to (GA) after creation.
const BETA_TO_GA_LABELS: [(&str, &str); 5] = [
    ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone"),
    ("failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region"),
    ("beta.kubernetes.io/os", "kubernetes.io/os"),
    ("beta.kubernetes.io/arch", "kubernetes.io/arch"),
    ("beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type"),
];

pub(crate) fn string(s: &str) -> Value {
    Value::String(s.to_string())
}

pub(crate) fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn required_str(s: &Value, at: &str, field: &str, errors: &mut Vec<FieldError>) {
    if str_of(&s[field]).is_empty() {
        errors.push(FieldError::required(format!("{at}.{field}"), ""));
    }
}

pub(crate) fn name_rule(v: &Value, at: &str, rule: NameRule, errors: &mut Vec<FieldError>) {
    for p in name_problems(str_of(v), rule) {
        errors.push(FieldError::invalid(at, &string(str_of(v)), &p));
    }
}

/// Upstream's `apiequality.Semantic.DeepEqual` on decoded JSON, near enough: nulls and empty
/// lists and maps are the same as absent ones, and resource quantities compare by value.
pub(crate) fn semantic(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                let v = if matches!(k.as_str(), "requests" | "limits" | "capacity") {
                    quantities(v)
                } else {
                    semantic(v)
                };
                let container = v.is_array() || v.is_object();
                if !(v.is_null() || container && is_empty(&v)) {
                    out.insert(k.clone(), v);
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(semantic).collect()),
        other => other.clone(),
    }
}

/// A resource list with each quantity replaced by its exact value.
fn quantities(list: &Value) -> Value {
    match list {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, q)| {
                    let exact =
                        Quantity::parse(q).map_or(q.clone(), |q| json!(q.nanos.to_string()));
                    (k.clone(), exact)
                })
                .collect(),
        ),
        other => semantic(other),
    }
}

/// A quantity's value in billionths; absent (or unparsable, which decoding refuses) is zero.
fn nanos(q: &Value) -> i128 {
    Quantity::parse(q).map_or(0, |q| q.nanos)
}

// ---------------------------------------------------------------------------------------
// PersistentVolumeClaims

/// A PersistentVolumeClaim's spec, and on update the rules of `ValidatePersistentVolumeClaimUpdate`.
pub fn persistent_volume_claim(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = claim_spec(&obj["spec"], "spec");
    if let Some(old) = old {
        errors.extend(claim_update(obj, old));
    }
    errors
}

fn access_modes(spec: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let modes = items(&spec["accessModes"]);
    let path = format!("{at}.accessModes");
    let (mut rwop, mut other) = (false, false);
    for m in modes {
        let supported = ACCESS_MODES.contains(&str_of(m)) && m.is_string();
        if !supported {
            errors.push(FieldError::unsupported(&path, m, &ACCESS_MODES));
        } else if m == "ReadWriteOncePod" {
            rwop = true;
        } else {
            other = true;
        }
    }
    if rwop && other {
        errors.push(FieldError::forbidden(
            &path,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
}

/// `ValidatePersistentVolumeClaimSpec` (also used for claim templates by the caller's choice
/// of `at`).
pub fn claim_spec(spec: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if items(&spec["accessModes"]).is_empty() {
        errors.push(FieldError::required(
            format!("{at}.accessModes"),
            "at least 1 access mode is required",
        ));
    }
    if !spec["selector"].is_null() {
        errors.extend(label_selector(&format!("{at}.selector"), &spec["selector"]));
    }
    access_modes(spec, at, &mut errors);

    let storage_at = format!("{at}.resources[storage]");
    let storage = &spec["resources"]["requests"]["storage"];
    if storage.is_null() {
        errors.push(FieldError::required(&storage_at, ""));
    } else if let Some(q) = Quantity::parse(storage) {
        if q.nanos <= 0 {
            errors.push(FieldError::invalid(&storage_at, &json!(q.canonical()), NOT_POSITIVE));
        }
    }

    let class = str_of(&spec["storageClassName"]);
    if !class.is_empty() {
        name_rule(
            &spec["storageClassName"],
            &format!("{at}.storageClassName"),
            NameRule::Subdomain,
            &mut errors,
        );
    }
    if let Some(e) = one_of(&format!("{at}.volumeMode"), &spec["volumeMode"], &VOLUME_MODES) {
        errors.push(e);
    }

    let source = &spec["dataSource"];
    let source_ref = &spec["dataSourceRef"];
    if !source.is_null() {
        data_source(source, &format!("{at}.dataSource"), false, &mut errors);
    }
    if !source_ref.is_null() {
        data_source(source_ref, &format!("{at}.dataSourceRef"), true, &mut errors);
    }
    if !str_of(&source_ref["namespace"]).is_empty() {
        if !source.is_null() {
            // Upstream passes the `*field.Path` itself as the bad value.
            errors.push(FieldError::invalid_shown(
                at,
                &format!(
                    "field.Path{{name:\"dataSource\", index:\"\", parent:{}}}",
                    go_pointer("field.Path", &json!({}))
                ),
                "may not be specified when dataSourceRef.namespace is specified",
            ));
        }
    } else if !source.is_null() && !source_ref.is_null() {
        let same = source["apiGroup"] == source_ref["apiGroup"]
            && source["kind"] == source_ref["kind"]
            && source["name"] == source_ref["name"];
        if !same {
            errors.push(FieldError::invalid_shown(
                at,
                &format!(
                    "field.Path{{name:\"dataSource\", index:\"\", parent:{}}}",
                    go_pointer("field.Path", &json!({}))
                ),
                "must match dataSourceRef",
            ));
        }
    }
    errors
}

/// `validateDataSource` and `validateDataSourceRef`.
fn data_source(s: &Value, at: &str, is_ref: bool, errors: &mut Vec<FieldError>) {
    required_str(s, at, "name", errors);
    required_str(s, at, "kind", errors);
    let group = str_of(&s["apiGroup"]);
    if group.is_empty() && s["kind"] != "PersistentVolumeClaim" {
        errors.push(FieldError::invalid(
            at,
            &string(str_of(&s["kind"])),
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ));
    }
    if !group.is_empty() {
        name_rule(&s["apiGroup"], &format!("{at}.apiGroup"), NameRule::Subdomain, errors);
    }
    if is_ref && !str_of(&s["namespace"]).is_empty() {
        name_rule(&s["namespace"], &format!("{at}.namespace"), NameRule::Label, errors);
    }
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj["metadata"]["annotations"][key].as_str()
}

/// `ValidatePersistentVolumeClaimUpdate` after the new object's own validation: the spec is
/// fixed except for binding (`volumeName` once), setting a class that was unset, and for
/// bound claims `resources.requests.storage`.
fn claim_update(obj: &Value, old: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut new_spec = obj["spec"].clone();
    let mut old_spec = old["spec"].clone();
    if !new_spec.is_object() {
        new_spec = json!({});
    }
    if !old_spec.is_object() {
        old_spec = json!({});
    }
    if str_of(&old["spec"]["volumeName"]).is_empty() {
        old_spec["volumeName"] = obj["spec"]["volumeName"].clone();
    }

    let old_annotation = annotation(old, BETA_CLASS_ANNOTATION);
    let new_annotation = annotation(obj, BETA_CLASS_ANNOTATION);
    let old_class = old["spec"]["storageClassName"].as_str();
    let new_class = obj["spec"]["storageClassName"].as_str();
    let from_annotation = old_annotation.is_some()
        && old_class.is_none()
        && new_class.is_some()
        && new_class == old_annotation
        && (new_annotation.is_none() || new_annotation == old_annotation);
    if from_annotation {
        new_spec["storageClassName"] = Value::Null;
    } else {
        if new_annotation.unwrap_or_default() != old_annotation.unwrap_or_default() {
            errors.push(FieldError::invalid(
                format!("metadata.annotations.{BETA_CLASS_ANNOTATION}"),
                &string(new_annotation.unwrap_or_default()),
                IMMUTABLE,
            ));
        }
        // Setting a class on a claim that had none (a default class arriving later).
        if new_class.is_some()
            && old_class.is_none()
            && (old_annotation.is_none() || new_class == old_annotation)
        {
            new_spec["storageClassName"] = Value::Null;
        }
    }

    // The claim's status is the old one on a spec update (upstream's PrepareForUpdate).
    let bound = old["status"]["phase"] == "Bound";
    if bound && new_spec["resources"]["requests"].is_object() {
        new_spec["resources"]["requests"]["storage"] =
            old["spec"]["resources"]["requests"]["storage"].clone();
    }
    new_spec["volumeAttributesClassName"] = Value::Null;
    old_spec["volumeAttributesClassName"] = Value::Null;

    if semantic(&new_spec) != semantic(&old_spec) {
        errors.push(FieldError::forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }

    // RecoverVolumeExpansionFailure is on by default in v1.33: a request may shrink, but not
    // to the size the volume already has.
    let new_size = nanos(&obj["spec"]["resources"]["requests"]["storage"]);
    let old_size = nanos(&old["spec"]["resources"]["requests"]["storage"]);
    let status_size = nanos(&old["status"]["capacity"]["storage"]);
    if new_size < old_size && new_size <= status_size {
        errors.push(FieldError::forbidden(
            "spec.resources.requests.storage",
            "field can not be less than status.capacity",
        ));
    }

    if obj["spec"]["volumeMode"] != old["spec"]["volumeMode"] {
        errors.push(FieldError::invalid(
            "volumeMode",
            &go_pointee(&obj["spec"]["volumeMode"]),
            IMMUTABLE,
        ));
    }
    errors
}

// ---------------------------------------------------------------------------------------
// PersistentVolumes

/// A PersistentVolume's spec, and on update the rules of `ValidatePersistentVolumeUpdate`.
pub fn persistent_volume(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let name = str_of(&obj["metadata"]["name"]);
    let mut errors = pv_spec(&obj["spec"], name, false, "spec");
    if let Some(old) = old {
        errors.extend(pv_update(obj, old));
    }
    errors
}

/// The volume sources of a `PersistentVolumeSource` in upstream's order: the JSON key, the
/// name in "may not specify more than 1 volume type" (upstream's spelling), and the path its
/// own checks report under (upstream's, including `persistentDisk`).
const PV_SOURCES: [(&str, &str, &str); 22] = [
    ("hostPath", "hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk", "persistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs", "glusterfs"),
    ("flocker", "flocker", "flocker"),
    ("nfs", "nfs", "nfs"),
    ("rbd", "rbd", "rbd"),
    ("quobyte", "quobyte", "quobyte"),
    ("cephfs", "cephFS", "cephfs"),
    ("iscsi", "iscsi", "iscsi"),
    ("cinder", "cinder", "cinder"),
    ("fc", "fc", "fc"),
    ("flexVolume", "flexVolume", "flexVolume"),
    ("azureFile", "azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO", "scaleIO"),
    ("local", "local", "local"),
    ("storageos", "storageos", "storageos"),
    ("csi", "csi", "csi"),
];

/// `ValidatePersistentVolumeSpec`; `inline` for the spec a VolumeAttachment carries.
pub(crate) fn pv_spec(spec: &Value, pv_name: &str, inline: bool, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let path = |f: &str| format!("{at}.{f}");
    if inline {
        if !spec["claimRef"].is_null() {
            errors.push(FieldError::forbidden(path("claimRef"), INLINE));
        }
        if !is_empty(&spec["capacity"]) {
            errors.push(FieldError::forbidden(path("capacity"), INLINE));
        }
        if spec["csi"].is_null() {
            errors.push(FieldError::required(
                path("csi"),
                "has to be specified in the context of inline volumes",
            ));
        }
    }

    if items(&spec["accessModes"]).is_empty() {
        errors.push(FieldError::required(path("accessModes"), ""));
    }
    access_modes(spec, at, &mut errors);

    if !inline {
        let capacity = spec["capacity"].as_object();
        let count = capacity.map_or(0, Map::len);
        if count == 0 {
            errors.push(FieldError::required(path("capacity"), ""));
        }
        if !capacity.is_some_and(|c| c.contains_key("storage")) || count > 1 {
            errors.push(FieldError::unsupported_shown(
                path("capacity"),
                &go_resource_list(&spec["capacity"]),
                &["storage"],
            ));
        }
        for (r, q) in capacity.into_iter().flatten() {
            let at = format!("{at}.capacity[{r}]");
            let Some(parsed) = Quantity::parse(q) else { continue };
            if parsed.nanos < 0 {
                // `Quantity.Value()`: whole units, rounded away from zero.
                let units = (parsed.nanos - 999_999_999) / 1_000_000_000;
                errors.push(FieldError::invalid(
                    &at,
                    &json!(units as i64),
                    "must be a valid resource quantity",
                ));
            }
            if parsed.nanos <= 0 {
                errors.push(FieldError::invalid(&at, &json!(parsed.canonical()), NOT_POSITIVE));
            }
        }
    }

    let policy = &spec["persistentVolumeReclaimPolicy"];
    if !str_of(policy).is_empty() {
        if inline {
            if policy != "Retain" {
                errors.push(FieldError::forbidden(
                    path("persistentVolumeReclaimPolicy"),
                    "may only be Retain in the context of inline volumes",
                ));
            }
        } else if let Some(e) =
            one_of(&path("persistentVolumeReclaimPolicy"), policy, &PV_RECLAIM_POLICIES)
        {
            errors.push(e);
        }
    }

    let mut affinity_set = false;
    let affinity = &spec["nodeAffinity"];
    if !affinity.is_null() {
        if inline {
            errors.push(FieldError::forbidden(path("nodeAffinity"), INLINE));
        } else {
            affinity_set = true;
            if affinity["required"].is_null() {
                errors.push(FieldError::required(
                    format!("{at}.nodeAffinity.required"),
                    "must specify required node constraints",
                ));
            } else {
                node_selector(
                    &affinity["required"],
                    &format!("{at}.nodeAffinity.required"),
                    &mut errors,
                );
            }
        }
    }

    let mut count = 0;
    for (key, name, check_at) in PV_SOURCES {
        let s = &spec[key];
        if s.is_null() {
            continue;
        }
        // Upstream counts flexVolume without the "more than 1" check.
        if count > 0 && key != "flexVolume" {
            errors.push(FieldError::forbidden(path(name), MORE_THAN_ONE));
            continue;
        }
        count += 1;
        pv_source(key, s, &path(check_at), pv_name, &mut errors);
        if key == "local" && !affinity_set {
            errors.push(FieldError::required(
                path("nodeAffinity"),
                "Local volume requires node affinity",
            ));
        }
    }
    if count == 0 {
        errors.push(FieldError::required(at, "must specify a volume type"));
    }

    let host_path = &spec["hostPath"]["path"];
    if host_path.is_string() && clean_is_root(str_of(host_path)) && policy == "Recycle" {
        errors.push(FieldError::forbidden(
            path("persistentVolumeReclaimPolicy"),
            "may not be 'recycle' for a hostPath mount of '/'",
        ));
    }

    if !str_of(&spec["storageClassName"]).is_empty() {
        if inline {
            errors.push(FieldError::forbidden(path("storageClassName"), INLINE));
        } else {
            name_rule(
                &spec["storageClassName"],
                &path("storageClassName"),
                NameRule::Subdomain,
                &mut errors,
            );
        }
    }
    let mode = &spec["volumeMode"];
    if !mode.is_null() {
        if inline {
            if mode != "Filesystem" {
                errors.push(FieldError::forbidden(
                    path("volumeMode"),
                    "may not specify volumeMode other than Filesystem in the context of inline volumes",
                ));
            }
        } else if let Some(e) = one_of(&path("volumeMode"), mode, &VOLUME_MODES) {
            errors.push(e);
        }
    }
    errors
}

/// Whether Go's `path.Clean(p)` is `/`: an absolute path whose `..` steps undo every name.
fn clean_is_root(p: &str) -> bool {
    let mut depth = 0usize;
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => depth = depth.saturating_sub(1),
            _ => depth += 1,
        }
    }
    p.starts_with('/') && depth == 0
}

/// The checks of one volume source (`validate*PersistentVolumeSource` and friends).
fn pv_source(key: &str, s: &Value, at: &str, pv_name: &str, errors: &mut Vec<FieldError>) {
    let req = |f: &str, errors: &mut Vec<FieldError>| required_str(s, at, f, errors);
    match key {
        "hostPath" | "local" => {
            if str_of(&s["path"]).is_empty() {
                errors.push(FieldError::required(format!("{at}.path"), ""));
                return;
            }
            no_backsteps(str_of(&s["path"]), &format!("{at}.path"), errors);
            if key == "hostPath" && !s["type"].is_null() {
                let t = &s["type"];
                if !t.is_string() || !HOST_PATH_TYPES.contains(&str_of(t)) {
                    errors.push(FieldError::unsupported(format!("{at}.type"), t, &HOST_PATH_TYPES));
                }
            }
        }
        "gcePersistentDisk" | "awsElasticBlockStore" => {
            req(if key == "gcePersistentDisk" { "pdName" } else { "volumeID" }, errors);
            let partition = s["partition"].as_i64().unwrap_or(0);
            if !(0..=255).contains(&partition) {
                errors.push(FieldError::invalid(
                    format!("{at}.partition"),
                    &json!(partition),
                    &range_msg(1, 255),
                ));
            }
        }
        "glusterfs" => {
            req("endpoints", errors);
            req("path", errors);
            let ns = &s["endpointsNamespace"];
            if ns.is_string() {
                if str_of(ns).is_empty() {
                    errors.push(FieldError::invalid(
                        format!("{at}.endpointsNamespace"),
                        ns,
                        "if the endpointnamespace is set, it must be a valid namespace name",
                    ));
                } else {
                    name_rule(ns, &format!("{at}.endpointsNamespace"), NameRule::Label, errors);
                }
            }
        }
        "flocker" => {
            let (name, uuid) = (str_of(&s["datasetName"]), str_of(&s["datasetUUID"]));
            if name.is_empty() && uuid.is_empty() {
                errors.push(FieldError::required(
                    at,
                    "one of datasetName and datasetUUID is required",
                ));
            }
            if !name.is_empty() && !uuid.is_empty() {
                errors.push(FieldError::invalid(
                    at,
                    &json!("resource"),
                    "datasetName and datasetUUID can not be specified simultaneously",
                ));
            }
            if name.contains('/') {
                errors.push(FieldError::invalid(
                    format!("{at}.datasetName"),
                    &string(name),
                    "must not contain '/'",
                ));
            }
        }
        "nfs" => {
            req("server", errors);
            req("path", errors);
            if !str_of(&s["path"]).starts_with('/') {
                errors.push(FieldError::invalid(
                    format!("{at}.path"),
                    &string(str_of(&s["path"])),
                    "must be an absolute path",
                ));
            }
        }
        "rbd" | "cephfs" => {
            if items(&s["monitors"]).is_empty() {
                errors.push(FieldError::required(format!("{at}.monitors"), ""));
            }
            if key == "rbd" {
                req("image", errors);
            }
        }
        "quobyte" => {
            const PAIRS: &str = "must be a host:port pair or multiple pairs separated by commas";
            let registry = str_of(&s["registry"]);
            if registry.is_empty() {
                errors.push(FieldError::required(format!("{at}.registry"), PAIRS));
            } else if str_of(&s["tenant"]).len() >= 65 {
                errors.push(FieldError::required(
                    format!("{at}.tenant"),
                    "must be a UUID and may not exceed a length of 64 characters",
                ));
            } else {
                for pair in registry.split(',') {
                    if !is_host_port(pair) {
                        errors.push(FieldError::invalid(
                            format!("{at}.registry"),
                            &string(registry),
                            PAIRS,
                        ));
                    }
                }
            }
            req("volume", errors);
        }
        "iscsi" => iscsi(s, at, pv_name, errors),
        "cinder" | "storageos" => {
            if key == "cinder" {
                req("volumeID", errors);
            } else {
                let name = &s["volumeName"];
                if str_of(name).is_empty() {
                    errors.push(FieldError::required(format!("{at}.volumeName"), ""));
                } else {
                    name_rule(name, &format!("{at}.volumeName"), NameRule::Label, errors);
                }
                if !str_of(&s["volumeNamespace"]).is_empty() {
                    name_rule(
                        &s["volumeNamespace"],
                        &format!("{at}.volumeNamespace"),
                        NameRule::Label,
                        errors,
                    );
                }
            }
            let secret = &s["secretRef"];
            if !secret.is_null() {
                required_str(secret, &format!("{at}.secretRef"), "name", errors);
                required_str(secret, &format!("{at}.secretRef"), "namespace", errors);
            }
        }
        "fc" => {
            let wwns = items(&s["targetWWNs"]);
            let wwids = items(&s["wwids"]);
            if wwns.is_empty() && wwids.is_empty() {
                errors.push(FieldError::required(
                    format!("{at}.targetWWNs"),
                    "must specify either targetWWNs or wwids, but not both",
                ));
            }
            if !wwns.is_empty() && !wwids.is_empty() {
                let list: Vec<&str> = wwns.iter().map(str_of).collect();
                errors.push(FieldError::invalid_shown(
                    format!("{at}.targetWWNs"),
                    &go_string_slice(Some(&list[..])),
                    "targetWWNs and wwids can not be specified simultaneously",
                ));
            }
            if !wwns.is_empty() {
                match s["lun"].as_i64() {
                    None => errors.push(FieldError::required(
                        format!("{at}.lun"),
                        "lun is required if targetWWNs is specified",
                    )),
                    Some(lun) if !(0..=255).contains(&lun) => errors.push(FieldError::invalid(
                        format!("{at}.lun"),
                        &json!(lun),
                        &range_msg(0, 255),
                    )),
                    Some(_) => {}
                }
            }
        }
        "flexVolume" => {
            req("driver", errors);
            for k in s["options"].as_object().into_iter().flatten().map(|(k, _)| k) {
                let namespace = k.split_once('/').map_or(k.as_str(), |(ns, _)| ns);
                let normalized = format!(".{}", namespace.to_lowercase());
                if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
                    errors.push(FieldError::invalid(
                        format!("{at}.options[{k}]"),
                        &string(k),
                        "kubernetes.io and k8s.io namespaces are reserved",
                    ));
                }
            }
        }
        "azureFile" => {
            req("secretName", errors);
            req("shareName", errors);
            if s["secretNamespace"] == "" {
                errors.push(FieldError::required(format!("{at}.secretNamespace"), ""));
            }
        }
        "azureDisk" => azure_disk(s, at, errors),
        "vsphereVolume" => req("volumePath", errors),
        "photonPersistentDisk" => req("pdID", errors),
        "portworxVolume" => req("volumeID", errors),
        "scaleIO" => {
            req("gateway", errors);
            req("system", errors);
            req("volumeName", errors);
        }
        "csi" => {
            csi_driver_name(&s["driver"], &format!("{at}.driver"), errors);
            req("volumeHandle", errors);
            for secret in [
                "controllerPublishSecretRef",
                "controllerExpandSecretRef",
                "nodePublishSecretRef",
                "nodeExpandSecretRef",
            ] {
                let r = &s[secret];
                if r.is_null() {
                    continue;
                }
                let at = format!("{at}.{secret}");
                if str_of(&r["name"]).is_empty() {
                    errors.push(FieldError::required(format!("{at}.name"), ""));
                } else {
                    name_rule(&r["name"], &format!("{at}.name"), NameRule::Subdomain, errors);
                }
                if str_of(&r["namespace"]).is_empty() {
                    errors.push(FieldError::required(format!("{at}.namespace"), ""));
                } else {
                    name_rule(&r["namespace"], &format!("{at}.namespace"), NameRule::Label, errors);
                }
            }
        }
        _ => {}
    }
}

/// Go's `net.SplitHostPort` succeeding: `host:port` or `[v6]:port`.
fn is_host_port(pair: &str) -> bool {
    if let Some(rest) = pair.strip_prefix('[') {
        return rest.split_once(']').is_some_and(|(h, p)| {
            !h.contains(['[', ']']) && p.starts_with(':') && !p[1..].contains([':', '[', ']'])
        });
    }
    pair.matches(':').count() == 1 && !pair.contains(['[', ']'])
}

/// The iSCSI checks without upstream's IQN/EUI/NAA format regexes (only their prefixes).
fn iscsi(s: &Value, at: &str, pv_name: &str, errors: &mut Vec<FieldError>) {
    const FORMAT: &str = "must be valid format";
    let portal = str_of(&s["targetPortal"]);
    if portal.is_empty() {
        errors.push(FieldError::required(format!("{at}.targetPortal"), ""));
    }
    if !s["initiatorName"].is_null() && pv_name.len() + 1 + portal.len() > 64 {
        errors.push(FieldError::invalid(
            format!("{at}.targetportal"),
            &string(portal),
            "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
        ));
    }
    let known = |v: &str| ["iqn", "eui", "naa"].iter().any(|p| v.starts_with(p));
    let iqn = str_of(&s["iqn"]);
    if iqn.is_empty() {
        errors.push(FieldError::required(format!("{at}.iqn"), ""));
    } else if !known(iqn) {
        errors.push(FieldError::invalid(format!("{at}.iqn"), &string(iqn), FORMAT));
    }
    let lun = s["lun"].as_i64().unwrap_or(0);
    if !(0..=255).contains(&lun) {
        errors.push(FieldError::invalid(format!("{at}.lun"), &json!(lun), &range_msg(0, 255)));
    }
    let chap = s["chapAuthDiscovery"] == true || s["chapAuthSession"] == true;
    if chap && s["secretRef"].is_null() {
        errors.push(FieldError::required(format!("{at}.secretRef"), ""));
    }
    if !s["secretRef"].is_null() && str_of(&s["secretRef"]["name"]).is_empty() {
        errors.push(FieldError::required(format!("{at}.secretRef.name"), ""));
    }
    if let Some(initiator) = s["initiatorName"].as_str() {
        if !known(initiator) {
            errors.push(FieldError::invalid(
                format!("{at}.initiatorname"),
                &string(initiator),
                FORMAT,
            ));
        }
    }
}

fn azure_disk(s: &Value, at: &str, errors: &mut Vec<FieldError>) {
    required_str(s, at, "diskName", errors);
    required_str(s, at, "diskURI", errors);
    if let Some(e) =
        one_of(&format!("{at}.cachingMode"), &s["cachingMode"], &["None", "ReadOnly", "ReadWrite"])
    {
        errors.push(e);
    }
    if let Some(e) = one_of(&format!("{at}.kind"), &s["kind"], &["Dedicated", "Managed", "Shared"])
    {
        errors.push(e);
    }
    // Upstream defaults `kind` to Shared, a blob disk.
    let uri = str_of(&s["diskURI"]);
    let kind = s["kind"].as_str().unwrap_or("Shared");
    if kind == "Managed" && !uri.starts_with("/subscriptions/") {
        errors.push(FieldError::unsupported(
            format!("{at}.diskURI"),
            &string(uri),
            &["/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"],
        ));
    }
    if kind != "Managed" && !uri.starts_with("https://") {
        errors.push(FieldError::unsupported(
            format!("{at}.diskURI"),
            &string(uri),
            &["https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"],
        ));
    }
}

/// Core validation's `ValidateCSIDriverName`: required, at most 63 characters, and (lower
/// cased) a DNS subdomain.
pub(crate) fn csi_driver_name(v: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let name = str_of(v);
    if name.is_empty() {
        errors.push(FieldError::required(at, ""));
    }
    if name.len() > 63 {
        errors.push(FieldError::too_long(at, 63));
    }
    for p in name_problems(&name.to_lowercase(), NameRule::Subdomain) {
        errors.push(FieldError::invalid(at, &string(name), &p));
    }
}

/// `ValidateNodeSelector`: at least one term; each term's expressions (label keys) and
/// fields (`metadata.name` only).
fn node_selector(sel: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let terms = items(&sel["nodeSelectorTerms"]);
    let terms_at = format!("{at}.nodeSelectorTerms");
    if terms.is_empty() {
        errors.push(FieldError::required(terms_at, "must have at least one node selector term"));
        return;
    }
    for (i, term) in terms.iter().enumerate() {
        for (j, r) in items(&term["matchExpressions"]).iter().enumerate() {
            let at = format!("{terms_at}[{i}].matchExpressions[{j}]");
            let values = items(&r["values"]).len();
            match str_of(&r["operator"]) {
                "In" | "NotIn" if values == 0 => errors.push(FieldError::required(
                    format!("{at}.values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                )),
                "Exists" | "DoesNotExist" if values > 0 => errors.push(FieldError::forbidden(
                    format!("{at}.values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )),
                "Gt" | "Lt" if values != 1 => errors.push(FieldError::required(
                    format!("{at}.values"),
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                )),
                "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
                _ => errors.push(FieldError::invalid(
                    format!("{at}.operator"),
                    &string(str_of(&r["operator"])),
                    "not a valid selector operator",
                )),
            }
            for p in qualified_name_problems(str_of(&r["key"])) {
                errors.push(FieldError::invalid(
                    format!("{at}.key"),
                    &string(str_of(&r["key"])),
                    &p,
                ));
            }
        }
        for (j, r) in items(&term["matchFields"]).iter().enumerate() {
            let at = format!("{terms_at}[{i}].matchFields[{j}]");
            match str_of(&r["operator"]) {
                "In" | "NotIn" => {
                    if items(&r["values"]).len() != 1 {
                        errors.push(FieldError::required(
                            format!("{at}.values"),
                            "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                        ));
                    }
                }
                _ => errors.push(FieldError::invalid(
                    format!("{at}.operator"),
                    &string(str_of(&r["operator"])),
                    "not a valid selector operator",
                )),
            }
            if r["key"] != "metadata.name" {
                errors.push(FieldError::invalid(
                    format!("{at}.key"),
                    &string(str_of(&r["key"])),
                    "not a valid field selector key",
                ));
            } else {
                for (k, v) in items(&r["values"]).iter().enumerate() {
                    name_rule(v, &format!("{at}.values[{k}]"), NameRule::Subdomain, errors);
                }
            }
        }
    }
}

/// `ValidatePersistentVolumeUpdate` after the new object's own validation.
fn pv_update(obj: &Value, old: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let (new_spec, old_spec) = (&obj["spec"], &old["spec"]);
    let source = |spec: &Value| -> Value {
        let mut s = Map::new();
        for (key, _, _) in PV_SOURCES {
            if !spec[key].is_null() {
                s.insert(key.to_string(), spec[key].clone());
            }
        }
        Value::Object(s)
    };
    let mut new_source = source(new_spec);
    // A CSI volume may gain a controllerExpandSecretRef it did not have.
    if !old_spec["csi"].is_null()
        && old_spec["csi"]["controllerExpandSecretRef"].is_null()
        && !new_spec["csi"].is_null()
    {
        if let Some(csi) = new_source["csi"].as_object_mut() {
            csi.remove("controllerExpandSecretRef");
        }
    }
    if semantic(&new_source) != semantic(&source(old_spec)) {
        errors.push(FieldError::forbidden(
            "spec.persistentvolumesource",
            "spec.persistentvolumesource is immutable after creation",
        ));
    }
    if new_spec["volumeMode"] != old_spec["volumeMode"] {
        errors.push(FieldError::invalid(
            "volumeMode",
            &go_pointee(&new_spec["volumeMode"]),
            IMMUTABLE,
        ));
    }
    let old_affinity = &old_spec["nodeAffinity"];
    if !old_affinity.is_null() {
        let new_affinity = &new_spec["nodeAffinity"];
        let masked = beta_keys_moved_to(old_affinity, new_affinity);
        if semantic(new_affinity) != semantic(&masked) {
            let shown = if new_affinity.is_null() {
                go_quote("null")
            } else {
                format!(
                    "core.VolumeNodeAffinity{{Required:{}}}",
                    go_pointer("core.NodeSelector", &new_affinity["required"])
                )
            };
            errors.push(FieldError::invalid_shown(
                "nodeAffinity",
                &shown,
                "field is immutable, except for updating from beta label to GA",
            ));
        }
    }
    errors
}

/// The old node affinity with each beta label key replaced by the GA key the new affinity
/// uses in the same place (the one change upstream allows).
fn beta_keys_moved_to(old: &Value, new: &Value) -> Value {
    let mut masked = old.clone();
    let terms = masked["required"]["nodeSelectorTerms"].as_array_mut();
    for (i, term) in terms.into_iter().flatten().enumerate() {
        for list in ["matchExpressions", "matchFields"] {
            let reqs = term[list].as_array_mut();
            for (j, r) in reqs.into_iter().flatten().enumerate() {
                let new_key = &new["required"]["nodeSelectorTerms"][i][list][j]["key"];
                let moved =
                    BETA_TO_GA_LABELS.iter().any(|(beta, ga)| r["key"] == *beta && new_key == *ga);
                if moved {
                    r["key"] = new_key.clone();
                }
            }
        }
    }
    masked
}

/// A `core.ResourceList` as `%#v` prints it (a nil map, or each quantity's struct).
fn go_resource_list(list: &Value) -> String {
    let Some(map) = list.as_object() else { return "core.ResourceList(nil)".to_string() };
    let sorted: BTreeMap<&String, &Value> = map.iter().collect();
    let entries: Vec<String> =
        sorted.iter().map(|(k, q)| format!("{}:{}", go_quote(k), go_quantity(q, false))).collect();
    format!("core.ResourceList{{{}}}", entries.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    /// A claim as users write it, after rkube's defaulting, with `spec` fields merged in.
    fn claim(extra: Value) -> Value {
        let mut c = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"}});
        for (k, v) in extra.as_object().unwrap() {
            c["spec"][k] = v.clone();
        }
        c
    }

    fn pvc_lines(extra: Value) -> Vec<String> {
        lines(persistent_volume_claim(&claim(extra), None))
    }

    #[test]
    fn a_realistic_claim_is_valid() {
        assert!(pvc_lines(json!({})).is_empty());
        assert!(pvc_lines(json!({"accessModes": ["ReadWriteOncePod"], "volumeMode": "Block",
            "selector": {"matchLabels": {"tier": "db"}},
            "dataSource": {"kind": "VolumeSnapshot", "apiGroup": "snapshot.storage.k8s.io", "name": "snap"}}))
        .is_empty());
        // An empty class name asks for no class at all.
        assert!(pvc_lines(json!({"storageClassName": ""})).is_empty());
    }

    #[test]
    fn claim_access_modes() {
        assert_eq!(
            pvc_lines(json!({"accessModes": null})),
            ["spec.accessModes: Required value: at least 1 access mode is required"]
        );
        assert_eq!(
            pvc_lines(json!({"accessModes": ["ReadWriteSometimes"]})),
            ["spec.accessModes: Unsupported value: \"ReadWriteSometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\""]
        );
        assert_eq!(
            pvc_lines(json!({"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"]})),
            ["spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"]
        );
    }

    #[test]
    fn claim_storage_request() {
        assert_eq!(
            pvc_lines(json!({"resources": {"limits": {"storage": "1Gi"}}})),
            ["spec.resources[storage]: Required value"]
        );
        assert_eq!(
            pvc_lines(json!({"resources": {"requests": {"storage": "0Gi"}}})),
            ["spec.resources[storage]: Invalid value: \"0\": must be greater than zero"]
        );
        assert_eq!(
            pvc_lines(json!({"resources": {"requests": {"storage": "-1.5Gi"}}})),
            ["spec.resources[storage]: Invalid value: \"-1536Mi\": must be greater than zero"]
        );
    }

    #[test]
    fn claim_mode_class_selector_and_data_source() {
        assert_eq!(
            pvc_lines(json!({"volumeMode": "Raw"})),
            ["spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\""]
        );
        assert_eq!(
            pvc_lines(json!({"storageClassName": "Fast_SSD"})),
            [format!("spec.storageClassName: Invalid value: \"Fast_SSD\": {SUBDOMAIN}")]
        );
        assert_eq!(
            pvc_lines(json!({"selector": {"matchExpressions": [{"key": "tier", "operator": "Equals"}]}})),
            ["spec.selector.matchExpressions[0].operator: Invalid value: \"Equals\": not a valid selector operator"]
        );
        assert_eq!(
            pvc_lines(json!({"dataSource": {"kind": "VolumeSnapshot", "name": ""}})),
            [
                "spec.dataSource.name: Required value",
                "spec.dataSource: Invalid value: \"VolumeSnapshot\": must be 'PersistentVolumeClaim' when referencing the default apiGroup",
            ]
        );
        assert_eq!(
            pvc_lines(json!({"dataSource": {"kind": "PersistentVolumeClaim", "name": "a"},
                "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "b"}})),
            ["spec: Invalid value: field.Path{name:\"dataSource\", index:\"\", parent:(*field.Path)(0xc000a1c000)}: must match dataSourceRef"]
        );
    }

    fn bound(mut c: Value, capacity: &str) -> Value {
        c["spec"]["volumeName"] = json!("pvc-1234");
        c["status"] = json!({"phase": "Bound", "capacity": {"storage": capacity}});
        c
    }

    #[test]
    fn bound_claims_may_be_resized() {
        let old = bound(claim(json!({})), "1Gi");
        let new =
            claim(json!({"resources": {"requests": {"storage": "2Gi"}}, "volumeName": "pvc-1234"}));
        assert!(lines(persistent_volume_claim(&new, Some(&old))).is_empty());
        // The same size written another way is no change.
        let same = claim(
            json!({"resources": {"requests": {"storage": "1024Mi"}}, "volumeName": "pvc-1234"}),
        );
        assert!(lines(persistent_volume_claim(&same, Some(&old))).is_empty());
        // Shrinking is allowed down to (not to) what the volume already has.
        let old = bound(claim(json!({"resources": {"requests": {"storage": "4Gi"}}})), "1Gi");
        let smaller =
            claim(json!({"resources": {"requests": {"storage": "1Gi"}}, "volumeName": "pvc-1234"}));
        assert_eq!(
            lines(persistent_volume_claim(&smaller, Some(&old))),
            ["spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]
        );
        let between =
            claim(json!({"resources": {"requests": {"storage": "2Gi"}}, "volumeName": "pvc-1234"}));
        assert!(lines(persistent_volume_claim(&between, Some(&old))).is_empty());
    }

    #[test]
    fn claim_specs_are_otherwise_immutable() {
        const IMMUTABLE_SPEC: &str = "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims";
        let old = claim(json!({}));
        // Unbound: not even the size.
        let resized = claim(json!({"resources": {"requests": {"storage": "2Gi"}}}));
        assert_eq!(lines(persistent_volume_claim(&resized, Some(&old))), [IMMUTABLE_SPEC]);
        let modes = claim(json!({"accessModes": ["ReadWriteMany"]}));
        assert_eq!(lines(persistent_volume_claim(&modes, Some(&old))), [IMMUTABLE_SPEC]);
        let block = claim(json!({"volumeMode": "Block"}));
        assert_eq!(
            lines(persistent_volume_claim(&block, Some(&old))),
            [IMMUTABLE_SPEC, "volumeMode: Invalid value: \"Block\": field is immutable"]
        );
        let class = claim(json!({"storageClassName": "fast"}));
        assert_eq!(lines(persistent_volume_claim(&class, Some(&old))), [IMMUTABLE_SPEC]);
        // Binding sets volumeName once; a class may be set where there was none.
        let binding = claim(json!({"volumeName": "pvc-1"}));
        assert!(lines(persistent_volume_claim(&binding, Some(&old))).is_empty());
        let mut no_class = claim(json!({}));
        no_class["spec"].as_object_mut().unwrap().remove("storageClassName");
        assert!(lines(persistent_volume_claim(&old, Some(&no_class))).is_empty());
        // The beta class annotation is fixed.
        let mut annotated = old.clone();
        annotated["metadata"]["annotations"] = json!({BETA_CLASS_ANNOTATION: "fast"});
        assert_eq!(
            lines(persistent_volume_claim(&annotated, Some(&old))),
            ["metadata.annotations.volume.beta.kubernetes.io/storage-class: Invalid value: \"fast\": field is immutable"]
        );
    }

    /// A PV after rkube's defaulting, with `spec` fields merged in.
    fn volume(extra: Value) -> Value {
        let mut v = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"}});
        for (k, x) in extra.as_object().unwrap() {
            if x.is_null() {
                v["spec"].as_object_mut().unwrap().remove(k);
            } else {
                v["spec"][k] = x.clone();
            }
        }
        v
    }

    fn pv_lines(extra: Value) -> Vec<String> {
        lines(persistent_volume(&volume(extra), None))
    }

    fn local_affinity(node: &str) -> Value {
        json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}})
    }

    #[test]
    fn realistic_volumes_are_valid() {
        assert!(pv_lines(json!({"hostPath": {"path": "/mnt/data", "type": "DirectoryOrCreate"},
            "storageClassName": "manual"}))
        .is_empty());
        assert!(pv_lines(
            json!({"local": {"path": "/mnt/disks/ssd1"}, "storageClassName": "local-storage",
            "nodeAffinity": local_affinity("node-1"), "persistentVolumeReclaimPolicy": "Delete"})
        )
        .is_empty());
        assert!(pv_lines(json!({"nfs": {"server": "10.0.0.2", "path": "/exports"},
            "accessModes": ["ReadWriteMany", "ReadOnlyMany"], "mountOptions": ["nfsvers=4.1"]}))
        .is_empty());
        assert!(pv_lines(json!({"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1",
            "nodePublishSecretRef": {"name": "creds", "namespace": "kube-system"}}}))
        .is_empty());
    }

    #[test]
    fn volume_capacity_and_access_modes() {
        assert_eq!(
            pv_lines(json!({"capacity": null, "accessModes": null, "hostPath": {"path": "/d"}})),
            [
                "spec.accessModes: Required value",
                "spec.capacity: Required value",
                "spec.capacity: Unsupported value: core.ResourceList(nil): supported values: \"storage\"",
            ]
        );
        assert_eq!(
            pv_lines(json!({"capacity": {"storage": "0"}, "hostPath": {"path": "/d"}})),
            ["spec.capacity[storage]: Invalid value: \"0\": must be greater than zero"]
        );
        assert_eq!(
            pv_lines(json!({"capacity": {"storage": "-1Gi"}, "hostPath": {"path": "/d"}})),
            [
                "spec.capacity[storage]: Invalid value: -1073741824: must be a valid resource quantity",
                "spec.capacity[storage]: Invalid value: \"-1Gi\": must be greater than zero",
            ]
        );
        assert_eq!(
            pv_lines(json!({"capacity": {"cpu": "1"}, "hostPath": {"path": "/d"}})),
            ["spec.capacity: Unsupported value: core.ResourceList{\"cpu\":resource.Quantity{i:resource.int64Amount{value:1, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1\", Format:\"DecimalSI\"}}: supported values: \"storage\""]
        );
    }

    #[test]
    fn volume_sources() {
        assert_eq!(pv_lines(json!({})), ["spec: Required value: must specify a volume type"]);
        assert_eq!(
            pv_lines(json!({"hostPath": {"path": "/d"}, "nfs": {"server": "s", "path": "/e"}})),
            ["spec.nfs: Forbidden: may not specify more than 1 volume type"]
        );
        assert_eq!(
            pv_lines(json!({"hostPath": {"path": "/data/../etc", "type": "Dir"}})),
            [
                "spec.hostPath.path: Invalid value: \"/data/../etc\": must not contain '..'",
                "spec.hostPath.type: Unsupported value: \"Dir\": supported values: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\"",
            ]
        );
        assert_eq!(
            pv_lines(json!({"hostPath": {"path": ""}})),
            ["spec.hostPath.path: Required value"]
        );
        assert_eq!(
            pv_lines(json!({"nfs": {"server": "", "path": "exports"}})),
            [
                "spec.nfs.server: Required value",
                "spec.nfs.path: Invalid value: \"exports\": must be an absolute path",
            ]
        );
        assert_eq!(
            pv_lines(json!({"gcePersistentDisk": {"pdName": "d", "partition": 300}})),
            ["spec.persistentDisk.partition: Invalid value: 300: must be between 1 and 255, inclusive"]
        );
        assert_eq!(
            pv_lines(json!({"csi": {"driver": "", "volumeHandle": ""}})),
            [
                "spec.csi.driver: Required value".to_string(),
                format!("spec.csi.driver: Invalid value: \"\": {SUBDOMAIN}"),
                "spec.csi.volumeHandle: Required value".to_string(),
            ]
        );
    }

    #[test]
    fn local_volumes_need_node_affinity() {
        assert_eq!(
            pv_lines(json!({"local": {"path": "/mnt/disks/ssd1"}})),
            ["spec.nodeAffinity: Required value: Local volume requires node affinity"]
        );
        assert_eq!(
            pv_lines(json!({"local": {"path": "/mnt/disks/ssd1"}, "nodeAffinity": {}})),
            ["spec.nodeAffinity.required: Required value: must specify required node constraints"]
        );
        assert_eq!(
            pv_lines(json!({"local": {"path": "/mnt"}, "nodeAffinity": {"required": {"nodeSelectorTerms": []}}})),
            ["spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node selector term"]
        );
        assert_eq!(
            pv_lines(json!({"local": {"path": "/mnt"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In"}],
                 "matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["a"]}]}]}}})),
            [
                "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.nodeAffinity.required.nodeSelectorTerms[0].matchFields[0].key: Invalid value: \"metadata.uid\": not a valid field selector key",
            ]
        );
    }

    #[test]
    fn volume_policy_mode_and_class() {
        assert_eq!(
            pv_lines(json!({"hostPath": {"path": "/d"}, "persistentVolumeReclaimPolicy": "Keep"})),
            ["spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \"Recycle\", \"Retain\""]
        );
        assert_eq!(
            pv_lines(json!({"hostPath": {"path": "//./"}, "persistentVolumeReclaimPolicy": "Recycle"})),
            ["spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'"]
        );
        assert_eq!(
            pv_lines(json!({"hostPath": {"path": "/d"}, "volumeMode": "Raw", "storageClassName": "Slow"})),
            [
                format!("spec.storageClassName: Invalid value: \"Slow\": {SUBDOMAIN}"),
                "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"".to_string(),
            ]
        );
    }

    #[test]
    fn volume_updates() {
        let old =
            volume(json!({"local": {"path": "/mnt/a"}, "nodeAffinity": local_affinity("node-1")}));
        // Capacity, class and reclaim policy may change.
        let grown =
            volume(json!({"local": {"path": "/mnt/a"}, "nodeAffinity": local_affinity("node-1"),
            "capacity": {"storage": "20Gi"}, "persistentVolumeReclaimPolicy": "Delete"}));
        assert!(lines(persistent_volume(&grown, Some(&old))).is_empty());
        let moved =
            volume(json!({"local": {"path": "/mnt/b"}, "nodeAffinity": local_affinity("node-2")}));
        assert_eq!(
            lines(persistent_volume(&moved, Some(&old))),
            [
                "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation",
                "nodeAffinity: Invalid value: core.VolumeNodeAffinity{Required:(*core.NodeSelector)(0xc000a1c000)}: field is immutable, except for updating from beta label to GA",
            ]
        );
        let zone = |key: &str| {
            volume(
                json!({"local": {"path": "/mnt/a"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": key, "operator": "In", "values": ["z1"]}]}]}}}),
            )
        };
        let beta = zone("failure-domain.beta.kubernetes.io/zone");
        assert!(
            lines(persistent_volume(&zone("topology.kubernetes.io/zone"), Some(&beta))).is_empty()
        );
        let block =
            volume(json!({"local": {"path": "/mnt/a"}, "nodeAffinity": local_affinity("node-1"),
            "volumeMode": "Block"}));
        assert_eq!(
            lines(persistent_volume(&block, Some(&old))),
            ["volumeMode: Invalid value: \"Block\": field is immutable"]
        );
    }
}
