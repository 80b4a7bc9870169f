//! Custom resources: the resources a CustomResourceDefinition adds, one per served version,
//! built from the definition while the server runs ([`resources_of`]).
//!
//! What is served today: every served version with the definition's names, scope, short
//! names, categories and `status`/`scale` subresources; objects stored in the storage
//! version (conversion strategy `None`: versions differ by `apiVersion` only); a generation
//! as upstream's custom resource strategy keeps it; the version's `openAPIV3Schema` in the
//! OpenAPI documents (so `kubectl explain` works); tables of name and age. The version's
//! schema ([`Schema`], built once here) validates objects on every write (with upstream's
//! validation ratcheting on updates), prunes unknown fields when a request is decoded (they
//! are what `fieldValidation` reports) and when a stored object is read, and fills in its
//! defaults on both. The version's CEL rules (`x-kubernetes-validations`) are compiled once
//! here, by the engine the server installs (`crate::validation::rules`), and run after the
//! schema's checks. A version's `additionalPrinterColumns` are its table ([`columns`], read
//! with upstream's JSONPath, [`json_path`]), and its `selectableFields` the field selectors it
//! supports besides `metadata.name` and `metadata.namespace` (an absent field reads as the
//! empty string, as upstream). A definition with conversion strategy `Webhook` converts
//! between its versions through its webhook ([`conversion`]; the server makes the calls).
//!
//! Server-side apply merges and owns fields by the same schema, read once here as patch
//! metadata (`PatchSchema::from_structural`: structs, maps, list and map types).

pub mod conversion;

pub mod columns;
pub mod json_path;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use self::columns::PrinterColumns;
use crate::patch::{custom_definition_name, PatchSchema};
use crate::resources::{intern, intern_list, NormalizeFn, ResourceInfo, SchemaFn, STANDARD_VERBS};
use crate::strategy::{spec_differs, ScaleView, SelectableField, Strategy};
use crate::structural::Schema;
use crate::tables::Column;
use crate::validation::rules::{self, CompiledRules};
use crate::validation::FieldError;

/// The strategy of one custom resource.
#[derive(Debug)]
pub struct CustomResources {
    /// True when the definition gives the version a `status` subresource: the status is then
    /// written only there and does not count for the generation.
    status_subresource: bool,
    /// The version's `scale` subresource paths, when it has one.
    scale: Option<ScalePaths>,
    /// The version's `x-kubernetes-validations` rules, compiled once per definition.
    rules: Option<Arc<dyn CompiledRules>>,
    /// The version's structural schema.
    schema: Arc<Schema>,
    /// The same schema as server-side apply reads it, with the name of its root definition.
    apply_schema: (PatchSchema, String),
    /// The version's table.
    columns: PrinterColumns,
    /// The `selectableFields` of every served version, as field selectors name them
    /// (`spec.color`): the values each object's cache entry keeps, whichever version the
    /// watch cache was made for (versions differ by `apiVersion` only, so one path reads
    /// the same value in each).
    selectable: &'static [SelectableField],
    /// The field labels this version accepts: its own selectable fields.
    accepted: &'static [(&'static str, &'static str)],
    /// The definition's conversion webhook (strategy `Webhook`), the same for every version.
    conversion: Option<Arc<conversion::WebhookConversion>>,
}

/// A version's `selectableFields[].jsonPath`s (`.spec.color`) as field labels (`spec.color`).
fn selectable_paths(version: &Value) -> Vec<&str> {
    version["selectableFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["jsonPath"].as_str())
        .map(|p| p.trim_start_matches('.'))
        .filter(|p| !p.is_empty())
        .collect()
}

/// Field labels with the fields each reads. Kept once per distinct list for the life of the
/// process, as the names of resources added while the server runs are ([`intern`]).
fn interned_fields(labels: &[&str]) -> &'static [SelectableField] {
    if labels.is_empty() {
        return &[];
    }
    type Lists = HashMap<Vec<String>, &'static [SelectableField]>;
    static INTERNED: OnceLock<Mutex<Lists>> = OnceLock::new();
    let key: Vec<String> = labels.iter().map(|p| p.to_string()).collect();
    let mut lists = INTERNED.get_or_init(Default::default).lock().expect("intern lock");
    lists.entry(key).or_insert_with(|| {
        let fields: Vec<SelectableField> = labels
            .iter()
            .map(|p| (intern(p), intern_list(&p.split('.').collect::<Vec<_>>())))
            .collect();
        Box::leak(fields.into_boxed_slice())
    })
}

/// The field labels one version accepts (its own selectable fields, the name and the
/// namespace), each read from the label of the same name. Kept as [`interned_fields`].
fn interned_labels(labels: &[&str]) -> &'static [(&'static str, &'static str)] {
    type Lists = HashMap<Vec<String>, &'static [(&'static str, &'static str)]>;
    static INTERNED: OnceLock<Mutex<Lists>> = OnceLock::new();
    let mut all = vec!["metadata.name", "metadata.namespace"];
    all.extend(labels.iter().filter(|l| !all.contains(l)).collect::<Vec<_>>());
    let key: Vec<String> = all.iter().map(|p| p.to_string()).collect();
    let mut lists = INTERNED.get_or_init(Default::default).lock().expect("intern lock");
    lists.entry(key).or_insert_with(|| {
        let pairs: Vec<(&'static str, &'static str)> =
            all.iter().map(|l| (intern(l), intern(l))).collect();
        Box::leak(pairs.into_boxed_slice())
    })
}

/// Where a custom resource keeps what its `/scale` subresource shows (the definition's
/// `specReplicasPath`, `statusReplicasPath` and `labelSelectorPath`, split into fields).
#[derive(Debug, Clone, Default)]
struct ScalePaths {
    spec_replicas: Vec<String>,
    status_replicas: Vec<String>,
    label_selector: Vec<String>,
}

impl ScalePaths {
    fn of(scale: &Value) -> ScalePaths {
        // `.spec.replicas` -> ["spec", "replicas"], as upstream's `ToFieldPath`.
        let path = |key: &str| -> Vec<String> {
            match scale[key].as_str().map(|p| p.trim_start_matches('.')) {
                Some(p) if !p.is_empty() => p.split('.').map(String::from).collect(),
                _ => Vec::new(),
            }
        };
        ScalePaths {
            spec_replicas: path("specReplicasPath"),
            status_replicas: path("statusReplicasPath"),
            label_selector: path("labelSelectorPath"),
        }
    }
}

/// The value at `path` in `obj` (none for an empty path).
fn at_path<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    if path.is_empty() {
        return None;
    }
    path.iter().try_fold(obj, |v, key| v.get(key))
}

impl CustomResources {
    /// The schema's errors, then the CEL rules' (upstream's custom resource strategy): the
    /// rules are not run on an object whose schema errors make them meaningless (a missing,
    /// mistyped, unsupported or too large value), which is said instead.
    fn with_rules(
        &self,
        mut errors: Vec<FieldError>,
        obj: &Value,
        old: Option<&Value>,
    ) -> Vec<FieldError> {
        let Some(rules) = &self.rules else { return errors };
        const BLOCKING: &[&str] = &[
            "FieldValueNotSupported",
            "FieldValueRequired",
            "FieldValueTooLong",
            "FieldValueTooMany",
            "FieldValueTypeInvalid",
        ];
        if errors.iter().any(|e| BLOCKING.contains(&e.reason)) {
            errors.push(FieldError::invalid(
                "<nil>",
                &Value::Null,
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ));
        } else {
            errors.extend(rules.validate(obj, old));
        }
        errors
    }
}

impl Strategy for CustomResources {
    fn tracks_generation(&self) -> bool {
        true
    }

    /// Upstream bumps the generation on any change but metadata; with a status subresource,
    /// on any change but metadata and status.
    fn bumps_generation(&self, new: &Value, old: &Value) -> bool {
        spec_differs(new, old) || (!self.status_subresource && new["status"] != old["status"])
    }

    fn accepts_strategic_merge_patch(&self) -> bool {
        false
    }

    fn apply_schema(&self) -> Option<(&PatchSchema, &str)> {
        Some((&self.apply_schema.0, &self.apply_schema.1))
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        self.selectable
    }

    fn field_label_conversions(&self) -> Option<&'static [(&'static str, &'static str)]> {
        Some(self.accepted)
    }

    fn table_columns(&self) -> Vec<Column> {
        self.columns.columns()
    }

    fn table_cells(&self, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
        self.columns.cells(obj, now)
    }

    fn conversion_webhook(&self) -> Option<&Arc<conversion::WebhookConversion>> {
        self.conversion.as_ref()
    }

    fn default(&self, obj: &mut Value) {
        self.schema.default(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        self.with_rules(ratchet(self.schema.validate(obj), obj, old), obj, old)
    }

    /// Upstream's status strategy validates the whole object against the schema too.
    fn validate_subresource_update(&self, new: &Value, old: &Value, _sub: &str) -> Vec<FieldError> {
        self.with_rules(ratchet(self.schema.validate(new), new, Some(old)), new, Some(old))
    }

    /// A stored object as upstream's storage decoder reads it: pruned by the schema, then
    /// defaulted (so objects stored before a default or a field removal read as the schema
    /// now says).
    fn convert_from(&self, mut obj: Value, _from: &str) -> Value {
        self.schema.prune(&mut obj);
        self.schema.default(&mut obj);
        obj
    }

    /// The replicas at the definition's paths, and the selector string at its
    /// `labelSelectorPath` as the object holds it (empty without one), as upstream's custom
    /// resource scale.
    fn scale(&self, obj: &Value) -> ScaleView {
        let paths = self.scale.clone().unwrap_or_default();
        let int = |path: &[String]| at_path(obj, path).and_then(Value::as_i64).unwrap_or(0);
        ScaleView {
            spec_replicas: int(&paths.spec_replicas),
            status_replicas: int(&paths.status_replicas),
            selector: at_path(obj, &paths.label_selector)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        }
    }

    /// Sets the replicas at the definition's `specReplicasPath`, making the fields on the way.
    fn set_scale_replicas(&self, obj: &mut Value, replicas: i64) {
        let Some(paths) = &self.scale else { return };
        let Some((last, parents)) = paths.spec_replicas.split_last() else { return };
        let mut at = obj;
        for key in parents {
            if !at[key.as_str()].is_object() {
                at[key.as_str()] = json!({});
            }
            at = &mut at[key.as_str()];
        }
        at[last.as_str()] = json!(replicas);
    }
}

/// The resources a CustomResourceDefinition serves, one per served version; `Err` when the
/// definition cannot be served (it names no group, plural or kind).
pub fn resources_of(crd: &Value) -> Result<Vec<ResourceInfo>, String> {
    let spec = &crd["spec"];
    let names = &spec["names"];
    let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(intern);
    let (Some(group), Some(plural), Some(kind)) =
        (text(&spec["group"]), text(&names["plural"]), text(&names["kind"]))
    else {
        return Err("the definition names no group, plural or kind".to_string());
    };
    let singular = names["singular"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(String::from)
        .unwrap_or_else(|| kind.to_ascii_lowercase());
    let list_kind = text(&names["listKind"]).unwrap_or_else(|| intern(&format!("{kind}List")));
    let strings = |v: &Value| -> &'static [&'static str] {
        let list: Vec<&str> =
            v.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        intern_list(&list)
    };
    let short_names = strings(&names["shortNames"]);
    let categories = strings(&names["categories"]);
    let namespaced = spec["scope"] != "Cluster";
    let mut every_version: Vec<&str> = Vec::new();
    for version in spec["versions"].as_array().into_iter().flatten() {
        if version["served"] == true {
            for label in selectable_paths(version) {
                if !every_version.contains(&label) {
                    every_version.push(label);
                }
            }
        }
    }
    let selectable = interned_fields(&every_version);
    let webhook = conversion::WebhookConversion::of(crd);
    let mut served = Vec::new();
    for version in spec["versions"].as_array().into_iter().flatten() {
        let Some(name) = text(&version["name"]) else { continue };
        if version["served"] != true {
            continue;
        }
        let status = version["subresources"].get("status").is_some_and(|s| !s.is_null());
        let scale = version["subresources"].get("scale").is_some_and(|s| !s.is_null());
        let subresources: &'static [&'static str] = match (scale, status) {
            (true, true) => &["scale", "status"],
            (true, false) => &["scale"],
            (false, true) => &["status"],
            (false, false) => &[],
        };
        let schema = version["schema"]["openAPIV3Schema"].clone();
        let compiled_rules = rules::engine().and_then(|e| e.compile(&schema));
        let structural = Arc::new(Schema::new(&schema));
        let root = custom_definition_name(group, name, kind);
        let apply_schema = (PatchSchema::from_structural(structural.props(), &root), root);
        served.push(ResourceInfo {
            group,
            version: name,
            kind,
            list_kind,
            plural,
            singular: singular.clone(),
            namespaced,
            verbs: STANDARD_VERBS,
            short_names,
            categories,
            subresources,
            storage_version: version["storage"] == true,
            storage_resource: (group, plural),
            normalize: pruning(structural.clone()),
            schema: schema_of(group, name, kind, schema),
            strategy: Arc::new(CustomResources {
                status_subresource: status,
                scale: scale.then(|| ScalePaths::of(&version["subresources"]["scale"])),
                rules: compiled_rules,
                schema: structural,
                apply_schema,
                columns: PrinterColumns::of(version),
                selectable,
                accepted: interned_labels(&selectable_paths(version)),
                conversion: webhook.clone(),
            }),
        });
    }
    Ok(served)
}

/// A request's object pruned by the schema, with the paths of what was pruned (only a JSON
/// object is one).
fn pruning(schema: Arc<Schema>) -> NormalizeFn {
    Arc::new(move |obj: &Value| match obj {
        Value::Object(_) => {
            let mut obj = obj.clone();
            let pruned = schema.prune(&mut obj);
            Ok((obj, pruned))
        }
        _ => Err("the object is not a JSON object".to_string()),
    })
}

/// Validation ratcheting (upstream's, on by default since v1.33): on an update, an error in
/// a value the update leaves as it was is not reported, so objects stored under an older
/// schema can still be changed elsewhere.
fn ratchet(errors: Vec<FieldError>, new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let Some(old) = old else { return errors };
    errors
        .into_iter()
        .filter(|e| {
            // A missing field's error belongs to the object holding it.
            let path = match e.reason {
                "FieldValueRequired" => parent_path(&e.field),
                _ => e.field.as_str(),
            };
            match (value_at(new, path), value_at(old, path)) {
                (Some(a), Some(b)) => a != b,
                _ => true,
            }
        })
        .collect()
}

fn parent_path(path: &str) -> &str {
    let cut = path.rfind(['.', '[']).unwrap_or(0);
    &path[..cut]
}

/// The value at a field path as validation writes it (`spec.ports[0].name`).
fn value_at<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut at = obj;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            at = at.get(key)?;
        }
        for index in indexes.split('[').filter(|i| !i.is_empty()) {
            at = at.get(index.trim_end_matches(']').parse::<usize>().ok()?)?;
        }
    }
    Some(at)
}

/// The definition's schema under upstream's name for it (`com.example.v1.Widget` for
/// `example.com/v1` Widgets), with `metadata` as ObjectMeta.
fn schema_of(group: &str, version: &str, kind: &str, mut schema: Value) -> SchemaFn {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    let name = format!("{}.{version}.{kind}", reversed.join("."));
    if !schema.is_object() {
        schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    }
    Arc::new(move |generator| {
        let meta =
            generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>();
        let mut schema = schema.clone();
        if schema["properties"].is_object() || schema.get("properties").is_none() {
            schema["properties"]["metadata"] = meta.to_value();
        }
        for (field, description) in [
            (
                "apiVersion",
                "APIVersion defines the versioned schema of this representation of an object.",
            ),
            (
                "kind",
                "Kind is a string value representing the REST resource this object represents.",
            ),
        ] {
            if schema["properties"].get(field).is_none() {
                schema["properties"][field] = json!({"type": "string", "description": description});
            }
        }
        generator.definitions_mut().insert(name.clone(), schema);
        schemars::Schema::try_from(json!({"$ref": format!("#/components/schemas/{name}")}))
            .expect("a $ref is a schema")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widgets() -> Value {
        json!({"spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "subresources": {"status": {}},
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}}},
                {"name": "v1beta1", "served": false, "storage": false},
            ],
        }})
    }

    #[test]
    fn a_definition_serves_its_served_versions() {
        let served = resources_of(&widgets()).unwrap();
        assert_eq!(served.len(), 1);
        let w = &served[0];
        assert_eq!(
            (w.group, w.version, w.plural, w.kind),
            ("example.com", "v1", "widgets", "Widget")
        );
        assert_eq!((w.list_kind, w.singular.as_str()), ("WidgetList", "widget"));
        assert_eq!(w.short_names, &["wd"]);
        assert!(w.namespaced && w.storage_version && w.has_subresource("status"));
        assert_eq!(w.key(Some("ns"), "a"), "/registry/example.com/widgets/ns/a");
        assert!((w.normalize)(&json!([])).is_err());
        assert!(resources_of(&json!({"spec": {}})).is_err());
    }

    #[test]
    fn the_generation_counts_status_only_without_a_status_subresource() {
        let served = resources_of(&widgets()).unwrap();
        let strategy = &served[0].strategy;
        let old = json!({"spec": {"a": 1}, "status": {"b": 1}});
        assert!(!strategy.bumps_generation(&json!({"spec": {"a": 1}, "status": {"b": 2}}), &old));
        assert!(strategy.bumps_generation(&json!({"spec": {"a": 2}, "status": {"b": 1}}), &old));
        let plain = CustomResources {
            status_subresource: false,
            scale: None,
            rules: None,
            schema: Arc::new(Schema::new(&Value::Null)),
            apply_schema: (PatchSchema::default(), String::new()),
            columns: PrinterColumns::of(&Value::Null),
            selectable: &[],
            accepted: interned_labels(&[]),
            conversion: None,
        };
        assert!(plain.bumps_generation(&json!({"spec": {"a": 1}, "status": {"b": 2}}), &old));
    }

    #[test]
    fn selectable_fields_are_field_labels_and_absent_ones_read_empty() {
        let mut crd = widgets();
        crd["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}, {"jsonPath": ".spec.on"}]);
        let served = resources_of(&crd).unwrap();
        let info = &served[0];
        let obj = json!({"metadata": {"name": "w", "namespace": "ns"}, "spec": {"color": "blue", "size": 3, "on": true}});
        let fields = crate::strategy::field_values(info, &obj);
        assert_eq!(
            fields,
            vec![
                ("metadata.name", "w".to_string()),
                ("metadata.namespace", "ns".to_string()),
                ("spec.color", "blue".to_string()),
                ("spec.size", "3".to_string()),
                ("spec.on", "true".to_string()),
            ]
        );
        let bare = crate::strategy::field_values(info, &json!({"metadata": {"name": "x"}}));
        assert_eq!(bare[2], ("spec.color", String::new()));
        assert_eq!(crate::strategy::storage_field_label(info, "spec.color"), Some("spec.color"));
        assert_eq!(crate::strategy::storage_field_label(info, "spec.shape"), None);
        // Without selectable fields only the name and namespace are.
        let plain = resources_of(&widgets()).unwrap();
        assert_eq!(crate::strategy::storage_field_label(&plain[0], "spec.color"), None);
        assert_eq!(
            crate::strategy::storage_field_label(&plain[0], "metadata.name"),
            Some("metadata.name")
        );
        // Each version accepts its own; every version's values are kept, whichever version
        // the watch cache reads objects with.
        crd["spec"]["versions"][1]["served"] = json!(true);
        crd["spec"]["versions"][1]["selectableFields"] = json!([{"jsonPath": ".spec.shape"}]);
        let served = resources_of(&crd).unwrap();
        let (v1, beta) = (&served[0], &served[1]);
        assert_eq!(crate::strategy::storage_field_label(v1, "spec.shape"), None);
        assert_eq!(crate::strategy::storage_field_label(beta, "spec.shape"), Some("spec.shape"));
        assert_eq!(crate::strategy::storage_field_label(beta, "spec.color"), None);
        let shaped = json!({"metadata": {"name": "w"}, "spec": {"shape": "round"}});
        let kept = crate::strategy::field_values(v1, &shaped);
        assert!(kept.contains(&("spec.shape", "round".to_string())), "{kept:?}");
    }

    #[test]
    fn the_table_is_the_versions_printer_columns() {
        let mut crd = widgets();
        crd["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"name": "Color", "type": "string", "jsonPath": ".spec.color"}]);
        let served = resources_of(&crd).unwrap();
        let names: Vec<&str> = crate::tables::columns(&served[0]).iter().map(|c| c.name).collect();
        assert_eq!(names, ["Name", "Color"]);
        let obj = json!({"metadata": {"name": "w"}, "spec": {"color": "blue"}});
        let cells = crate::tables::cells(&served[0], &obj, chrono::Utc::now());
        assert_eq!(cells, vec![json!("w"), json!("blue")]);
    }

    #[test]
    fn the_schema_goes_into_the_documents_under_upstreams_name() {
        let served = resources_of(&widgets()).unwrap();
        let mut generator = schemars::generate::SchemaSettings::openapi3().into_generator();
        let reference = (served[0].schema)(&mut generator);
        assert_eq!(reference.get("$ref").unwrap(), "#/components/schemas/com.example.v1.Widget");
        let defined = &generator.definitions()["com.example.v1.Widget"];
        assert_eq!(defined["properties"]["spec"], json!({"type": "object"}));
        assert!(defined["properties"]["metadata"]["$ref"].is_string());
    }

    #[test]
    fn the_scale_subresource_reads_and_writes_the_definitions_paths() {
        let mut crd = widgets();
        crd["spec"]["versions"][0]["subresources"]["scale"] = json!({
            "specReplicasPath": ".spec.size", "statusReplicasPath": ".status.count",
            "labelSelectorPath": ".status.selector"});
        let served = resources_of(&crd).unwrap();
        let strategy = &served[0].strategy;
        let mut obj = json!({"spec": {"size": 2}, "status": {"count": 1, "selector": "app=w"}});
        let view = strategy.scale(&obj);
        assert_eq!((view.spec_replicas, view.status_replicas), (2, 1));
        assert_eq!(view.selector, "app=w");
        strategy.set_scale_replicas(&mut obj, 4);
        assert_eq!(obj["spec"]["size"], 4);
        let mut bare = json!({});
        strategy.set_scale_replicas(&mut bare, 3);
        assert_eq!(bare, json!({"spec": {"size": 3}}));
        assert_eq!(strategy.scale(&bare).selector, "", "no selector yet");
    }

    #[test]
    fn objects_are_validated_pruned_and_defaulted_by_the_versions_schema() {
        let mut crd = widgets();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = json!({
            "type": "object",
            "properties": {
                "size": {"type": "integer", "maximum": 5},
                "mode": {"type": "string", "default": "fast"},
            },
        });
        let served = resources_of(&crd).unwrap();
        let info = &served[0];
        let (mut obj, unknown) =
            (info.normalize)(&json!({"spec": {"size": 9, "foo": 1}, "bar": 2})).unwrap();
        assert_eq!(unknown, vec!["bar", "spec.foo"]);
        info.strategy.default(&mut obj);
        assert_eq!(obj, json!({"spec": {"size": 9, "mode": "fast"}}));
        let lines: Vec<String> =
            info.strategy.validate(&obj, None).iter().map(FieldError::line).collect();
        assert_eq!(
            lines,
            vec![
                "spec.size: Invalid value: 9: spec.size in body should be less than or equal to 5"
            ]
        );
        // Ratcheting: an update that leaves the bad value alone is not refused for it.
        let mut changed = obj.clone();
        changed["spec"]["mode"] = json!("slow");
        assert!(info.strategy.validate(&changed, Some(&obj)).is_empty());
        changed["spec"]["size"] = json!(8);
        assert_eq!(info.strategy.validate(&changed, Some(&obj)).len(), 1);
        // A stored object is read pruned and defaulted.
        let read = info.strategy.convert_from(json!({"spec": {"x": 1}}), "example.com/v1");
        assert_eq!(read, json!({"spec": {"mode": "fast"}}));
    }
}
