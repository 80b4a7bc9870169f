//! Per-type patch metadata: for each OpenAPI struct definition, which properties lead to which
//! definitions and which carry `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key`
//! (strategic merge patch) or `x-kubernetes-list-type` / `x-kubernetes-list-map-keys` /
//! `x-kubernetes-map-type` (server-side apply), plus each definition's own
//! `x-kubernetes-map-type`.
//!
//! [`PatchSchema::builtin`] is compiled in from `apis/data/patch-schema.json`, a digest that
//! `apis/tools/gen-patch-schema.py` writes from the upstream OpenAPI v2 document;
//! [`PatchSchema::from_openapi_v2`] reads such a document directly.
//!
//! A type reference is a definition name (`io.k8s.api.core.v1.PodSpec`) or `map:` followed by
//! the type of a map's values. For a list property the reference names the items' type.
//! Only struct definitions (those with `properties`) are recorded: [`PatchSchema::is_struct`]
//! tells a struct, whose keys are fields, from everything else (scalars such as `Quantity`,
//! free-form objects such as `RawExtension`).

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde_json::{Map, Value};

const MAP_PREFIX: &str = "map:";
const REF_PREFIX: &str = "#/definitions/";

/// Patch metadata of one property of a definition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldPatchMeta {
    /// `x-kubernetes-patch-strategy`, e.g. `merge`, `retainKeys`, `merge,retainKeys`, `replace`.
    pub strategy: Option<String>,
    /// `x-kubernetes-patch-merge-key`, e.g. `name` for containers.
    pub merge_key: Option<String>,
    /// The type the value leads to (for lists: the items' type), when it is not a primitive.
    pub value_type: Option<String>,
    /// `x-kubernetes-list-type`: `atomic`, `set` or `map`.
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`, e.g. `["containerPort", "protocol"]`.
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type` of the property: `atomic` or `granular`.
    pub map_type: Option<String>,
    /// The property's `default`: server-side apply keys a list item that leaves out a key
    /// field by it.
    pub default: Option<Value>,
}

/// What a lookup of one key under a type reference finds (empty when nothing is known).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FieldLookup<'a> {
    /// The patch strategy string, if any.
    pub strategy: Option<&'a str>,
    /// The merge key, if any.
    pub merge_key: Option<&'a str>,
    /// The type reference of the value (list items for lists).
    pub value_type: Option<&'a str>,
    /// `x-kubernetes-list-type`, if any; see [`FieldLookup::effective_list_type`].
    pub list_type: Option<&'a str>,
    /// `x-kubernetes-list-map-keys` (empty when absent).
    pub list_map_keys: &'a [String],
    /// `x-kubernetes-map-type` of the property, if any.
    pub map_type: Option<&'a str>,
}

/// How server-side apply treats a list, as upstream derives it from the OpenAPI extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType<'a> {
    /// Replaced as a whole; owned as one field.
    Atomic,
    /// A set of scalars: items are owned and merged one by one by value.
    Set,
    /// An associative list: items are owned and merged one by one by these key fields.
    Map(Vec<&'a str>),
}

impl<'a> FieldLookup<'a> {
    /// The strategies, split on `,` as upstream does.
    pub fn strategies(&self) -> Vec<&'a str> {
        self.strategy.map(|s| s.split(',').collect()).unwrap_or_default()
    }

    /// The list type server-side apply uses for a list property: `x-kubernetes-list-type`
    /// (with `x-kubernetes-list-map-keys`) when present; otherwise a `merge` patch strategy
    /// makes a map keyed by the merge key, or a set without one; otherwise atomic, which is
    /// also what a property nothing is known about gets.
    pub fn effective_list_type(&self) -> ListType<'a> {
        match self.list_type {
            Some("set") => ListType::Set,
            Some("map") => ListType::Map(self.list_map_keys.iter().map(String::as_str).collect()),
            Some(_) => ListType::Atomic,
            None if self.strategies().contains(&"merge") => match self.merge_key {
                Some(key) => ListType::Map(vec![key]),
                None => ListType::Set,
            },
            None => ListType::Atomic,
        }
    }
}

/// A document that could not be read as an OpenAPI v2 document or a patch-schema digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid patch schema document: {0}")]
pub struct SchemaError(String);

/// Strategic-merge-patch metadata for a set of types, and the definition name of each kind.
///
/// A schema may sit on a base ([`PatchSchema::builtin`] for a custom resource's, see
/// [`PatchSchema::from_structural`]): definitions it does not have are looked up there, so a
/// custom resource's `metadata` is the built-in ObjectMeta.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchSchema {
    definitions: HashMap<String, BTreeMap<String, FieldPatchMeta>>,
    kinds: HashMap<String, String>,
    map_types: HashMap<String, String>,
    base: Option<&'static PatchSchema>,
    /// The objects are unstructured (a custom resource's): no field has a Go zero value that
    /// a typed object would always hold.
    unstructured: bool,
}

static BUILTIN: OnceLock<PatchSchema> = OnceLock::new();

impl PatchSchema {
    /// The schema of every built-in type, from the compiled-in digest (parsed once).
    pub fn builtin() -> &'static PatchSchema {
        BUILTIN.get_or_init(|| {
            let text = include_str!("../../data/patch-schema.json");
            let digest: Value =
                serde_json::from_str(text).expect("apis/data/patch-schema.json is valid JSON");
            PatchSchema::from_digest(&digest).expect("apis/data/patch-schema.json is a digest")
        })
    }

    /// Reads an OpenAPI v2 document: `definitions` → `properties` → `$ref`, `items`,
    /// `additionalProperties`, `x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`,
    /// `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`, and
    /// each definition's `x-kubernetes-group-version-kind` and `x-kubernetes-map-type`.
    pub fn from_openapi_v2(document: &Value) -> Result<PatchSchema, SchemaError> {
        let definitions = document
            .get("definitions")
            .and_then(Value::as_object)
            .ok_or_else(|| SchemaError("no `definitions` object".to_string()))?;
        let mut schema = PatchSchema::default();
        for (name, definition) in definitions {
            if let Some(properties) = definition.get("properties").and_then(Value::as_object) {
                schema.definitions.insert(name.clone(), openapi_fields(properties));
            }
            if let Some(map_type) = string_at(definition, "x-kubernetes-map-type") {
                schema.map_types.insert(name.clone(), map_type);
            }
            for api_version_kind in openapi_kinds(definition) {
                schema.kinds.entry(api_version_kind).or_insert_with(|| name.clone());
            }
        }
        Ok(schema)
    }

    /// Reads the digest `apis/tools/gen-patch-schema.py` writes: `kinds` maps
    /// `apiVersion/Kind` to a definition name, `definitions` maps a struct definition's name to
    /// its properties, each with optional `type`, `strategy`, `mergeKey`, `listType`,
    /// `listMapKeys` and `mapType`, and the optional `mapTypes` maps a definition name to its
    /// own map type.
    pub fn from_digest(digest: &Value) -> Result<PatchSchema, SchemaError> {
        let object = |key: &str| {
            digest
                .get(key)
                .and_then(Value::as_object)
                .ok_or_else(|| SchemaError(format!("no `{key}` object")))
        };
        let mut schema = PatchSchema::default();
        for (key, name) in object("kinds")? {
            let name = name.as_str().ok_or_else(|| SchemaError(format!("kind {key}")))?;
            schema.kinds.insert(key.clone(), name.to_string());
        }
        for (name, properties) in object("definitions")? {
            let properties = properties
                .as_object()
                .ok_or_else(|| SchemaError(format!("definition {name} is not an object")))?;
            schema.definitions.insert(name.clone(), digest_fields(properties));
        }
        for (name, map_type) in
            digest.get("mapTypes").and_then(Value::as_object).into_iter().flatten()
        {
            let map_type =
                map_type.as_str().ok_or_else(|| SchemaError(format!("map type {name}")))?;
            schema.map_types.insert(name.clone(), map_type.to_string());
        }
        Ok(schema)
    }

    /// A schema of unstructured objects from its struct definitions and their own map types,
    /// falling back to `base` for the definitions it does not have.
    pub(super) fn assemble(
        definitions: impl IntoIterator<Item = (String, BTreeMap<String, FieldPatchMeta>)>,
        map_types: impl IntoIterator<Item = (String, String)>,
        base: &'static PatchSchema,
    ) -> PatchSchema {
        PatchSchema {
            definitions: definitions.into_iter().collect(),
            kinds: HashMap::new(),
            map_types: map_types.into_iter().collect(),
            base: Some(base),
            unstructured: true,
        }
    }

    /// The definition name of a kind, e.g. `("apps", "v1", "Deployment")` →
    /// `io.k8s.api.apps.v1.Deployment`; the core group is `""`.
    pub fn definition_for(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        let key = if group.is_empty() {
            format!("{version}/{kind}")
        } else {
            format!("{group}/{version}/{kind}")
        };
        match self.kinds.get(&key) {
            Some(name) => Some(name),
            None => self.base?.definition_for(group, version, kind),
        }
    }

    /// Every definition the schema records.
    pub fn definition_names(&self) -> impl Iterator<Item = &str> {
        self.definitions.keys().map(String::as_str)
    }

    /// Every kind the schema knows, as (`apiVersion/Kind`, definition name); the core group's
    /// apiVersion is just the version (`v1/Pod`).
    pub fn kinds(&self) -> impl Iterator<Item = (&str, &str)> {
        self.kinds.iter().map(|(kind, name)| (kind.as_str(), name.as_str()))
    }

    /// The properties recorded for a struct definition; absent for other definitions. The
    /// built-in digest only records properties that carry patch metadata or lead to a struct.
    pub fn fields(&self, definition: &str) -> Option<&BTreeMap<String, FieldPatchMeta>> {
        self.definition(definition).map(|(_, fields)| fields)
    }

    /// Whether a definition is a struct (it has `properties`): its keys are fields, not the
    /// entries of a map.
    pub fn is_struct(&self, definition: &str) -> bool {
        self.definition(definition).is_some()
    }

    /// Whether the schema describes unstructured objects (a custom resource's), whose
    /// fields have no Go zero values.
    pub fn is_unstructured(&self) -> bool {
        self.unstructured
    }

    /// The definition's own `x-kubernetes-map-type` (e.g. `atomic` for `LabelSelector`).
    pub fn definition_map_type(&self, definition: &str) -> Option<&str> {
        match self.map_types.get(definition) {
            Some(map_type) => Some(map_type),
            None => self.base?.definition_map_type(definition),
        }
    }

    /// The metadata of `key` under the type `type_ref` (a definition name or `map:<type>`);
    /// empty when the type or the key is unknown, as for primitives.
    pub fn lookup<'a>(&'a self, type_ref: Option<&'a str>, key: &str) -> FieldLookup<'a> {
        let Some(type_ref) = type_ref else { return FieldLookup::default() };
        if let Some(value_type) = type_ref.strip_prefix(MAP_PREFIX) {
            return FieldLookup { value_type: Some(value_type), ..FieldLookup::default() };
        }
        let Some(field) = self.fields(type_ref).and_then(|f| f.get(key)) else {
            return FieldLookup::default();
        };
        FieldLookup {
            strategy: field.strategy.as_deref(),
            merge_key: field.merge_key.as_deref(),
            value_type: field.value_type.as_deref(),
            list_type: field.list_type.as_deref(),
            list_map_keys: &field.list_map_keys,
            map_type: field.map_type.as_deref(),
        }
    }

    /// The schema's own copy of a definition name, so lookups can borrow from the schema.
    pub(crate) fn root<'a>(&'a self, definition: &str) -> Option<&'a str> {
        self.definition(definition).map(|(name, _)| name)
    }

    /// A definition's name and fields, from this schema or its base.
    fn definition<'a>(
        &'a self,
        definition: &str,
    ) -> Option<(&'a str, &'a BTreeMap<String, FieldPatchMeta>)> {
        match self.definitions.get_key_value(definition) {
            Some((name, fields)) => Some((name, fields)),
            None => self.base?.definition(definition),
        }
    }
}

fn openapi_fields(properties: &Map<String, Value>) -> BTreeMap<String, FieldPatchMeta> {
    properties
        .iter()
        .filter_map(|(name, property)| {
            let meta = FieldPatchMeta {
                strategy: string_at(property, "x-kubernetes-patch-strategy"),
                merge_key: string_at(property, "x-kubernetes-patch-merge-key"),
                value_type: openapi_value_type(property),
                list_type: string_at(property, "x-kubernetes-list-type"),
                list_map_keys: strings_at(property, "x-kubernetes-list-map-keys"),
                map_type: string_at(property, "x-kubernetes-map-type"),
                default: property.get("default").cloned(),
            };
            (meta != FieldPatchMeta::default()).then(|| (name.clone(), meta))
        })
        .collect()
}

/// The definition a property leads to: its `$ref`, its items' type for arrays (none for lists
/// of lists), `map:` + the values' type for maps; none for primitives.
fn openapi_value_type(property: &Value) -> Option<String> {
    if let Some(reference) = property.get("$ref").and_then(Value::as_str) {
        return Some(reference.strip_prefix(REF_PREFIX).unwrap_or(reference).to_string());
    }
    if property.get("type").and_then(Value::as_str) == Some("array") {
        let items = property.get("items")?;
        if items.get("type").and_then(Value::as_str) == Some("array") {
            return None;
        }
        return openapi_value_type(items);
    }
    let values = property.get("additionalProperties").filter(|v| v.is_object())?;
    openapi_value_type(values).map(|inner| format!("{MAP_PREFIX}{inner}"))
}

fn openapi_kinds(definition: &Value) -> Vec<String> {
    let Some(gvks) = definition.get("x-kubernetes-group-version-kind").and_then(Value::as_array)
    else {
        return Vec::new();
    };
    gvks.iter()
        .filter_map(|gvk| {
            let group = gvk.get("group").and_then(Value::as_str).unwrap_or_default();
            let version = gvk.get("version").and_then(Value::as_str)?;
            let kind = gvk.get("kind").and_then(Value::as_str)?;
            Some(if group.is_empty() {
                format!("{version}/{kind}")
            } else {
                format!("{group}/{version}/{kind}")
            })
        })
        .collect()
}

fn digest_fields(properties: &Map<String, Value>) -> BTreeMap<String, FieldPatchMeta> {
    properties
        .iter()
        .map(|(name, entry)| {
            let meta = FieldPatchMeta {
                strategy: string_at(entry, "strategy"),
                merge_key: string_at(entry, "mergeKey"),
                value_type: string_at(entry, "type"),
                list_type: string_at(entry, "listType"),
                list_map_keys: strings_at(entry, "listMapKeys"),
                map_type: string_at(entry, "mapType"),
                default: entry.get("default").cloned(),
            };
            (name.clone(), meta)
        })
        .collect()
}

fn string_at(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

fn strings_at(value: &Value, key: &str) -> Vec<String> {
    let Some(items) = value.get(key).and_then(Value::as_array) else { return Vec::new() };
    items.iter().filter_map(Value::as_str).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_answers_common_questions() {
        let schema = PatchSchema::builtin();
        assert_eq!(schema.definition_for("", "v1", "Pod"), Some("io.k8s.api.core.v1.Pod"));
        assert_eq!(
            schema.definition_for("apps", "v1", "Deployment"),
            Some("io.k8s.api.apps.v1.Deployment")
        );
        let containers = schema.lookup(Some("io.k8s.api.core.v1.PodSpec"), "containers");
        assert_eq!(containers.strategy, Some("merge"));
        assert_eq!(containers.merge_key, Some("name"));
        assert_eq!(containers.value_type, Some("io.k8s.api.core.v1.Container"));
        let map = schema.lookup(Some("map:io.k8s.api.core.v1.Container"), "anything");
        assert_eq!(map.value_type, Some("io.k8s.api.core.v1.Container"));
        assert_eq!(schema.lookup(None, "x"), FieldLookup::default());
    }

    #[test]
    fn builtin_answers_server_side_apply_questions() {
        let schema = PatchSchema::builtin();
        let list = |definition: &'static str, field: &str| {
            schema.lookup(Some(definition), field).effective_list_type()
        };
        assert_eq!(
            list("io.k8s.api.core.v1.ServiceSpec", "ports"),
            ListType::Map(vec!["port", "protocol"])
        );
        assert_eq!(list("io.k8s.api.core.v1.PodSpec", "containers"), ListType::Map(vec!["name"]));
        assert_eq!(
            list("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers"),
            ListType::Set
        );
        assert_eq!(list("io.k8s.api.core.v1.Container", "command"), ListType::Atomic);
        // An explicit list type wins over the patch strategy.
        assert_eq!(list("io.k8s.api.batch.v1.JobStatus", "conditions"), ListType::Atomic);
        assert_eq!(list("io.k8s.api.core.v1.PodSpec", "unknown"), ListType::Atomic);
        let selector = schema.lookup(Some("io.k8s.api.core.v1.PodSpec"), "nodeSelector");
        assert_eq!(selector.map_type, Some("atomic"));
        assert_eq!(
            schema.definition_map_type("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"),
            Some("atomic")
        );
        assert!(schema.is_struct("io.k8s.api.apps.v1.DeploymentStrategy"));
        assert!(!schema.is_struct("io.k8s.apimachinery.pkg.api.resource.Quantity"));
    }

    #[test]
    fn list_types_follow_the_patch_strategy_when_not_given() {
        let keys = vec!["a".to_string()];
        let lookup = |strategy, merge_key, list_type| FieldLookup {
            strategy,
            merge_key,
            list_type,
            list_map_keys: &keys,
            ..FieldLookup::default()
        };
        assert_eq!(
            lookup(Some("merge"), Some("k"), None).effective_list_type(),
            ListType::Map(vec!["k"])
        );
        assert_eq!(
            lookup(Some("merge,retainKeys"), None, None).effective_list_type(),
            ListType::Set
        );
        assert_eq!(lookup(Some("retainKeys"), None, None).effective_list_type(), ListType::Atomic);
        assert_eq!(lookup(None, None, Some("map")).effective_list_type(), ListType::Map(vec!["a"]));
    }
}
