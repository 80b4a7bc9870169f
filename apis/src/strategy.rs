//! What the generic registry does with a resource's objects, in the manner of kube-apiserver's
//! REST strategies: the [`Strategy`] trait every resource implements (its name rule, what a
//! create or update resets, defaults, validation, the fields a field selector may use, its
//! table's columns and cells, conversion between its served versions), and the generic steps
//! around it that every resource shares ([`prepare_for_create`], [`prepare_for_update`],
//! [`validate`], [`field_values`], ...).
//!
//! Each built-in resource's strategy is in `crate::kinds::<group>::<resource>`; the table in
//! `crate::resources` maps resources to strategies. Nothing outside those matches on a kind's
//! name: everything per-kind is a method here, with the generic behaviour as its default.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use serde_json::Value;

use crate::patch::PatchSchema;
use crate::resources::ResourceInfo;
use crate::selectors::LabelSelector;
use crate::tables::{Column, TablePrinter, NAME_AGE};
use crate::validation::{validate_object_meta, FieldError, NameRule};

/// A field a field selector may name, and where its value is read: `("spec.nodeName",
/// &["spec", "nodeName"])`.
pub type SelectableField = (&'static str, &'static [&'static str]);

/// Everything that differs between resources. Each method's default is the generic
/// behaviour, so a resource implements only what it does differently.
pub trait Strategy: Debug + Send + Sync {
    /// The rule the names of this resource's objects follow.
    fn name_rule(&self) -> NameRule {
        NameRule::Subdomain
    }

    /// True when objects have a `metadata.generation`: 1 on create, one more on each update
    /// that [`Strategy::bumps_generation`].
    ///
    /// kube-apiserver's generic store never sets a generation itself; each resource's REST
    /// strategy does, in its `PrepareForCreate` and `PrepareForUpdate` (v1.33, default feature
    /// gates). Every other resource keeps a generation of 0, which is left out of its JSON.
    fn tracks_generation(&self) -> bool {
        false
    }

    /// Whether an update of `old` to `new` bumps the generation (of a resource that
    /// [tracks one](Strategy::tracks_generation)): by default a change outside `metadata` and
    /// `status`, what upstream's strategies compare as the spec.
    fn bumps_generation(&self, new: &Value, old: &Value) -> bool {
        spec_differs(new, old)
    }

    /// True when a create keeps the `status` the client sent although the resource has a
    /// status subresource (whose creator writes the status).
    fn keeps_status_on_create(&self) -> bool {
        false
    }

    /// What decoding does to this kind on every write, besides dropping empty metadata.
    fn canonicalize(&self, _obj: &mut Value) {}

    /// Drops the fields of features kube-apiserver v1.33 has off by default, unless `old`
    /// already uses them (see `crate::disabled_fields`).
    fn drop_disabled_fields(&self, _obj: &mut Value, _old: Option<&Value>) {}

    /// Fills in the defaults of fields a client left out (see `crate::defaults`).
    fn default(&self, _obj: &mut Value) {}

    /// What a new object gets from the server besides metadata, after its status was reset:
    /// a namespace's phase, a pod's pending status, a Job's selector.
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// Records who made a create (a certificate request's `spec.username`, ...).
    fn record_requester(&self, _obj: &mut Value, _requester: Option<&Requester>) {}

    /// What an update (of the main resource, or through `subresource`) keeps of `old`
    /// besides metadata and status: a namespace's finalizers, a certificate request's spec.
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value, _subresource: Option<&str>) {}

    /// What a write through a status-like subresource (`status`, a certificate request's
    /// `approval`) keeps of `old`, after the registry took the new status and kept the rest:
    /// a certificate request's approval conditions on a status write, its certificate on
    /// an approval.
    fn prepare_for_subresource_update(&self, _new: &mut Value, _old: &Value, _sub: &str) {}

    /// Validation of a write through a status-like subresource, beyond its metadata
    /// (upstream's status strategies mostly check nothing more).
    fn validate_subresource_update(
        &self,
        _new: &Value,
        _old: &Value,
        _sub: &str,
    ) -> Vec<FieldError> {
        Vec::new()
    }

    /// The metadata fields a write to the `status` subresource may not change (upstream's
    /// status strategies: a Deployment's labels, a pod's owner references; all of
    /// [`RESET_FOR_STATUS`] where upstream calls `ResetObjectMetaForStatus`).
    fn metadata_kept_on_status_write(&self) -> &'static [&'static str] {
        &[]
    }

    /// Validation of the kind's own fields (beyond metadata), on create (`old` is `None`)
    /// and update.
    fn validate(&self, _obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
        Vec::new()
    }

    /// The field selectors the kind supports beyond `metadata.name` and
    /// `metadata.namespace`, with where each reads its value.
    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[]
    }

    /// For a resource stored with another resource: each field label its API accepts, with
    /// the storage's label holding the value (upstream's field label conversion functions).
    fn field_label_conversions(&self) -> Option<&'static [(&'static str, &'static str)]> {
        None
    }

    /// How `kubectl get` prints the kind: its table's columns and the function building an
    /// object's row (see `crate::tables`); name and age by default.
    fn printer(&self) -> &'static TablePrinter {
        &NAME_AGE
    }

    /// The columns of the kind's table, in order, wide ones included: the
    /// [printer's](Strategy::printer) by default; a kind whose columns are only known while
    /// the server runs (a custom resource's `additionalPrinterColumns`) gives its own.
    fn table_columns(&self) -> Vec<Column> {
        self.printer().columns.to_vec()
    }

    /// An object's row of cells in the order of [`Strategy::table_columns`]; `now` is what
    /// ages count from.
    fn table_cells(&self, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
        (self.printer().row)(obj, now)
    }

    /// `obj`, an object of the same resource in the served form `from` (its `apiVersion`),
    /// in this resource's form, but for `apiVersion` and `kind` (the caller sets those).
    fn convert_from(&self, obj: Value, _from: &str) -> Value {
        obj
    }

    /// The webhook that converts between the resource's versions instead of
    /// [`Strategy::convert_from`] (a custom resource with conversion strategy `Webhook`).
    fn conversion_webhook(
        &self,
    ) -> Option<&Arc<crate::kinds::custom::conversion::WebhookConversion>> {
        None
    }

    /// False for the resources upstream refuses strategic merge patches for (custom
    /// resources: there is no Go type to read the patch strategy from).
    fn accepts_strategic_merge_patch(&self) -> bool {
        true
    }

    /// The schema server-side apply merges this resource's objects by, and the definition of
    /// its kind in it, when it is not the built-in one (a custom resource's, from its
    /// definition's structural schema).
    fn apply_schema(&self) -> Option<(&PatchSchema, &str)> {
        None
    }

    /// True when a delete answers with the deleted object rather than a `Status`.
    fn returns_deleted_object(&self) -> bool {
        false
    }

    /// True when the object has finalizers of its own, besides `metadata.finalizers`, that
    /// hold its deletion (a namespace's `spec.finalizers`).
    fn has_own_finalizers(&self, _obj: &Value) -> bool {
        false
    }

    /// How long a delete waits for the object to go (graceful deletion), given the grace
    /// period the client asked for; 0 deletes it at once.
    fn grace_period_seconds(&self, _obj: &Value, _requested: Option<i64>) -> i64 {
        0
    }

    /// The finalizers a delete adds, for what must happen before the object goes (a
    /// CustomResourceDefinition's objects are deleted first).
    fn finalizers_on_delete(&self) -> &'static [&'static str] {
        &[]
    }

    /// What marking the object for deletion changes besides its metadata (a namespace's
    /// phase becomes `Terminating`).
    fn mark_for_deletion(&self, _obj: &mut Value) {}

    /// What the `/scale` subresource of a scalable kind shows: a built-in workload's
    /// `spec.replicas`, `status.replicas` and `spec.selector` (a label selector, or a
    /// ReplicationController's map of labels) in its string form.
    fn scale(&self, obj: &Value) -> ScaleView {
        let selector = &obj["spec"]["selector"];
        let is_label_selector = selector
            .as_object()
            .is_some_and(|m| m.keys().all(|k| k == "matchLabels" || k == "matchExpressions"));
        let selector = if is_label_selector {
            LabelSelector::from_api(selector).map(|s| s.to_string()).unwrap_or_default()
        } else {
            let labels: BTreeMap<String, String> = selector
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect();
            LabelSelector::from_map(&labels).to_string()
        };
        ScaleView {
            spec_replicas: obj["spec"]["replicas"].as_i64().unwrap_or(0),
            status_replicas: obj["status"]["replicas"].as_i64().unwrap_or(0),
            selector,
        }
    }

    /// Sets the replicas a `/scale` write asks for.
    fn set_scale_replicas(&self, obj: &mut Value, replicas: i64) {
        obj["spec"]["replicas"] = replicas.into();
    }
}

/// A scalable object as its `autoscaling/v1 Scale` shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScaleView {
    pub spec_replicas: i64,
    pub status_replicas: i64,
    /// The pods' label selector in its string form (`app=web,tier in (a,b)`).
    pub selector: String,
}

/// The strategy of a resource that does nothing of its own.
#[derive(Debug)]
pub struct Generic;

impl Strategy for Generic {}

/// Whether an object's fields other than metadata, status, apiVersion and kind differ.
pub fn spec_differs(new: &Value, old: &Value) -> bool {
    // Compared in place, without copies: this runs on every update.
    body(new).count() != body(old).count() || body(new).any(|(k, v)| old.get(k) != Some(v))
}

/// Whether a metadata field (`labels`, `annotations`, ...) differs.
pub fn metadata_differs(new: &Value, old: &Value, field: &str) -> bool {
    meta_field(new, field) != meta_field(old, field)
}

/// An object's fields other than metadata, status, apiVersion and kind.
fn body(obj: &Value) -> impl Iterator<Item = (&String, &Value)> {
    let fields = obj.as_object().into_iter().flatten();
    fields.filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind"))
}

fn meta_field<'a>(obj: &'a Value, field: &str) -> Option<&'a Value> {
    obj["metadata"].get(field).filter(|v| !v.is_null())
}

/// The name rule of a resource's objects.
/// The schema server-side apply and field ownership read the resource's objects by, and the
/// definition of its kind there: the resource's own (a custom resource's), else the built-in
/// one (`None` when that does not know the kind: everything is deduced).
pub fn apply_schema(info: &ResourceInfo) -> (&PatchSchema, Option<&str>) {
    match info.strategy.apply_schema() {
        Some((schema, root)) => (schema, Some(root)),
        None => {
            let schema = PatchSchema::builtin();
            (schema, schema.definition_for(info.group, info.version, info.kind))
        }
    }
}

pub fn name_rule(info: &ResourceInfo) -> NameRule {
    info.strategy.name_rule()
}

/// See [`Strategy::tracks_generation`].
pub fn tracks_generation(info: &ResourceInfo) -> bool {
    info.strategy.tracks_generation()
}

/// See [`Strategy::bumps_generation`].
pub fn bumps_generation(info: &ResourceInfo, new: &Value, old: &Value) -> bool {
    info.strategy.bumps_generation(new, old)
}

/// True when a create keeps the `status` the client sent. kube-apiserver resets status on
/// create for resources that have a status subresource, except the few whose status is
/// written by their creator.
pub fn keeps_status_on_create(info: &ResourceInfo) -> bool {
    !info.has_subresource("status") || info.strategy.keeps_status_on_create()
}

/// What decoding a v1 object does on every write, create or update: empty metadata maps and
/// lists are dropped (upstream's are `omitempty`: a patch that removes the last owner
/// reference leaves none, not `[]`), then the kind's own canonical form (a Secret's
/// `stringData` merged into `data`).
pub fn canonicalize(info: &ResourceInfo, obj: &mut Value) {
    drop_empty_metadata(obj);
    info.strategy.canonicalize(obj);
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

/// A new object as the client sent it with the API's defaults filled in, as kube-apiserver
/// has it when it decodes the request: what the client owns in its managedFields, before
/// [`prepare_for_create`] and the admission plugins add what is not the client's.
pub fn with_defaults(info: &ResourceInfo, obj: &mut Value) {
    canonicalize(info, obj);
    info.strategy.default(obj);
}

/// Fills in what a new object gets from the server before it is admitted and validated: its
/// canonical form, no disabled fields, a reset status, the kind's own preparation, and
/// defaults (again, for what preparing added).
pub fn prepare_for_create(info: &ResourceInfo, obj: &mut Value) {
    canonicalize(info, obj);
    info.strategy.drop_disabled_fields(obj, None);
    if !keeps_status_on_create(info) {
        if let Some(map) = obj.as_object_mut() {
            map.remove("status");
        }
    }
    info.strategy.prepare_for_create(obj);
    info.strategy.default(obj);
}

/// Who made a request (upstream's `user.Info`), for the strategies that record it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requester {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

/// See [`Strategy::record_requester`].
pub fn record_requester(info: &ResourceInfo, obj: &mut Value, requester: Option<&Requester>) {
    info.strategy.record_requester(obj, requester);
}

/// The metadata upstream's `metav1.ResetObjectMetaForStatus` puts back on a `status` write
/// (besides the deletion timestamp and generation, which no status write changes here): the
/// status strategies of VolumeAttachments, ServiceCIDRs and ValidatingAdmissionPolicies call
/// it, and those of FlowSchemas and PriorityLevelConfigurations keep the old metadata whole.
pub const RESET_FOR_STATUS: &[&str] = &["labels", "annotations", "finalizers", "ownerReferences"];

/// See [`Strategy::metadata_kept_on_status_write`].
pub fn metadata_kept_on_status_write(info: &ResourceInfo) -> &'static [&'static str] {
    info.strategy.metadata_kept_on_status_write()
}

/// What an update of `old` to `new` (a main-resource write, or `subresource` such as
/// `finalize` or `binding`) gets from the server besides its metadata and status: defaults on
/// every write, as upstream's decoding does (a container added by an update gets its pull
/// policy like one created with the object), disabled features' fields dropped, and the parts
/// a kind keeps fixed put back ([`Strategy::prepare_for_update`]).
pub fn prepare_for_update(
    info: &ResourceInfo,
    new: &mut Value,
    old: &Value,
    subresource: Option<&str>,
) {
    info.strategy.drop_disabled_fields(new, Some(old));
    info.strategy.default(new);
    canonicalize(info, new);
    info.strategy.prepare_for_update(new, old, subresource);
}

/// See [`Strategy::prepare_for_subresource_update`].
pub fn prepare_for_subresource_update(
    info: &ResourceInfo,
    new: &mut Value,
    old: &Value,
    sub: &str,
) {
    info.strategy.prepare_for_subresource_update(new, old, sub);
}

/// Validation of a write through a status-like subresource: its metadata, then what the
/// kind checks of such writes ([`Strategy::validate_subresource_update`]).
pub fn validate_subresource_update(
    info: &ResourceInfo,
    new: &Value,
    old: &Value,
    sub: &str,
) -> Vec<FieldError> {
    let mut errors = validate_metadata(info, new, Some(old));
    errors.extend(info.strategy.validate_subresource_update(new, old, sub));
    errors
}

/// Validation of a new or updated object: its metadata, then its kind's own fields.
pub fn validate(info: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = validate_metadata(info, obj, old);
    errors.extend(info.strategy.validate(obj, old));
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
    for (name, path) in info.strategy.selectable_fields() {
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
/// converted ([`Strategy::field_label_conversions`]); any other reads its own.
pub fn storage_field_label(info: &ResourceInfo, label: &str) -> Option<&'static str> {
    match info.strategy.field_label_conversions() {
        Some(conversions) => conversions.iter().find(|(l, _)| *l == label).map(|(_, s)| *s),
        None => field_values(info, &Value::Null).into_iter().map(|(f, _)| f).find(|f| *f == label),
    }
}

/// The top-level fields of an object that [`field_values`] reads, besides `metadata`.
pub fn field_value_sources(info: &ResourceInfo) -> impl Iterator<Item = &'static str> {
    let fields = info.strategy.selectable_fields();
    fields.iter().enumerate().filter_map(|(i, (_, path))| {
        // Each top-level field once.
        let seen = fields[..i].iter().any(|(_, earlier)| earlier[0] == path[0]);
        (!seen).then_some(path[0])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::core::qos_class;
    use crate::resources::Resources;
    use serde_json::json;

    #[test]
    fn status_writes_keep_the_metadata_where_upstreams_status_strategy_does() {
        let resets = [
            ("storage.k8s.io", "volumeattachments"),
            ("networking.k8s.io", "servicecidrs"),
            ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
            ("flowcontrol.apiserver.k8s.io", "flowschemas"),
            ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"),
        ];
        for (group, plural) in resets {
            let info = Resources::builtin().get(group, "v1", plural).unwrap();
            assert_eq!(metadata_kept_on_status_write(info), RESET_FOR_STATUS, "{plural}");
        }
        // A Service's and a PV's status writes take the metadata, as upstream's.
        for plural in ["services", "persistentvolumes", "persistentvolumeclaims"] {
            let info = Resources::builtin().get("", "v1", plural).unwrap();
            assert!(metadata_kept_on_status_write(info).is_empty(), "{plural}");
        }
    }

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

    #[test]
    fn scale_views_of_built_in_workloads() {
        let resources = Resources::builtin();
        let deployments = resources.get("apps", "v1", "deployments").unwrap();
        let deployment = json!({
            "spec": {"replicas": 3, "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]}},
            "status": {"replicas": 2}});
        let view = deployments.strategy.scale(&deployment);
        assert_eq!(
            view,
            ScaleView {
                spec_replicas: 3,
                status_replicas: 2,
                selector: "app=web,tier in (a,b)".into()
            }
        );
        let controllers = resources.get("", "v1", "replicationcontrollers").unwrap();
        let rc = json!({"spec": {"replicas": 1, "selector": {"b": "2", "a": "1"}}});
        assert_eq!(controllers.strategy.scale(&rc).selector, "a=1,b=2");
        let mut rc = rc;
        controllers.strategy.set_scale_replicas(&mut rc, 5);
        assert_eq!(rc["spec"]["replicas"], 5);
    }
}
