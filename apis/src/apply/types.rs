//! What the schema says about a value in server-side apply: whether an object is a struct
//! (its keys are fields), a map (its keys are entries) or atomic (owned and replaced whole),
//! how a list is merged (atomic, set, or associative by key fields), and the path element of a
//! list item.
//!
//! The schema is the built-in kinds' or a custom resource's (built from its CRD's structural
//! schema, see `PatchSchema::from_structural`). What it does not describe is "deduced", as
//! upstream does for untyped values: objects are granular maps, lists are atomic, everything
//! else is a leaf.

use serde_json::Value;

use super::path::PathElement;
use crate::gofmt::go_quote;
use crate::patch::{FieldLookup, ListType, PatchSchema};

const MAP_PREFIX: &str = "map:";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
/// The type of an object whose kind the schema does not know (no schema was given): its
/// top-level keys are fields, its metadata is an ObjectMeta, the rest is deduced.
const UNTYPED_OBJECT: &str = "<untyped object>";

/// Defaults upstream declares for key fields of associative lists. The published OpenAPI v2
/// document leaves them out, but upstream keys an item that omits `protocol` as if it said
/// `TCP`, so a port applied without a protocol matches the defaulted one.
const KEY_FIELD_DEFAULTS: &[(&str, &str, &str)] = &[
    ("io.k8s.api.core.v1.ContainerPort", "protocol", "TCP"),
    ("io.k8s.api.core.v1.ServicePort", "protocol", "TCP"),
];

/// The type of a value: the definition (or `map:<values>`) it has, and the metadata of the
/// property it sits in (empty for map values, list items and the root).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Ty<'a> {
    type_ref: Option<&'a str>,
    field: FieldLookup<'a>,
}

/// How an object is handled.
pub(crate) enum Shape<'a> {
    /// Owned and replaced as a whole.
    Atomic,
    /// A struct: its keys are named fields of this definition.
    Struct(&'a str),
    /// A map: its keys are entries whose values have this type.
    Map(Ty<'a>),
}

/// The schema, read for server-side apply.
#[derive(Clone, Copy)]
pub(crate) struct Types<'a> {
    schema: &'a PatchSchema,
}

impl<'a> Types<'a> {
    pub(crate) fn new(schema: &'a PatchSchema) -> Types<'a> {
        Types { schema }
    }

    /// The type of a whole object of the definition `type_ref` (unknown: untyped).
    pub(crate) fn root(&self, type_ref: Option<&str>) -> Ty<'a> {
        let root = type_ref.and_then(|name| self.schema.root(name)).unwrap_or(UNTYPED_OBJECT);
        Ty { type_ref: Some(root), field: FieldLookup::default() }
    }

    /// Whether the object is of a Go type (a built-in kind), whose top-level structs are
    /// never left out; a custom resource's schema describes unstructured objects.
    pub(crate) fn is_typed(&self, ty: Ty<'a>) -> bool {
        !self.schema.is_unstructured() && ty.type_ref.is_some_and(|name| name != UNTYPED_OBJECT)
    }

    /// How an object of this type is handled: the property's `x-kubernetes-map-type` first,
    /// then the definition's own.
    pub(crate) fn shape(&self, ty: Ty<'a>) -> Shape<'a> {
        let map_type = ty
            .field
            .map_type
            .or_else(|| ty.type_ref.and_then(|name| self.schema.definition_map_type(name)));
        if map_type == Some("atomic") {
            return Shape::Atomic;
        }
        match ty.type_ref {
            Some(UNTYPED_OBJECT) => Shape::Struct(UNTYPED_OBJECT),
            Some(name) => match name.strip_prefix(MAP_PREFIX) {
                Some(values) => Shape::Map(Ty { type_ref: Some(values), ..Ty::default() }),
                None if self.schema.is_struct(name) => Shape::Struct(name),
                None => Shape::Map(Ty::default()),
            },
            None => Shape::Map(Ty::default()),
        }
    }

    /// How a list of this type is merged.
    pub(crate) fn list_type(&self, ty: Ty<'a>) -> ListType<'a> {
        ty.field.effective_list_type()
    }

    /// The type of the field `key` of the struct `definition`.
    pub(crate) fn field(&self, definition: &'a str, key: &str) -> Ty<'a> {
        if definition == UNTYPED_OBJECT {
            let type_ref = (key == "metadata" && self.schema.is_struct(OBJECT_META))
                .then(|| self.schema.root(OBJECT_META))
                .flatten();
            return Ty { type_ref, ..Ty::default() };
        }
        let field = self.schema.lookup(Some(definition), key);
        Ty { type_ref: field.value_type, field }
    }

    /// The type of the value under `key` of an object of this type, and whether `key` is a
    /// named field (of a struct) rather than a map entry.
    pub(crate) fn entry(&self, ty: Ty<'a>, key: &str) -> (Ty<'a>, bool) {
        match self.shape(ty) {
            Shape::Struct(definition) => (self.field(definition, key), true),
            Shape::Map(values) => (values, false),
            Shape::Atomic => (Ty::default(), false),
        }
    }

    /// The type of the items of a list of this type.
    pub(crate) fn items(&self, ty: Ty<'a>) -> Ty<'a> {
        Ty { type_ref: ty.type_ref, ..Ty::default() }
    }

    /// The type below a path element of a value of this type.
    pub(crate) fn child(&self, ty: Ty<'a>, element: &PathElement) -> (Ty<'a>, bool) {
        match element {
            PathElement::Field(key) => self.entry(ty, key),
            _ => (self.items(ty), false),
        }
    }

    /// The path element of a list item: its key fields for an associative list, its value for
    /// a set. The error says why the item cannot be one (in upstream's words).
    pub(crate) fn item_element(
        &self,
        ty: Ty<'a>,
        list: &ListType<'a>,
        item: &Value,
    ) -> Result<PathElement, String> {
        match list {
            ListType::Atomic => Err("invalid indexing of non-associative list".to_string()),
            ListType::Set => match item {
                Value::Object(_) => {
                    Err("associative list without keys has an element that's a map type".into())
                }
                Value::Array(_) => {
                    Err("not supported: associative list with lists as elements".into())
                }
                Value::Null => {
                    Err("associative list without keys has an element that's an explicit null"
                        .into())
                }
                scalar => Ok(PathElement::Value(scalar.clone())),
            },
            ListType::Map(keys) => {
                let object = match item {
                    Value::Object(object) => object,
                    Value::Null => {
                        return Err("associative list with keys may not have a null element".into())
                    }
                    _ => {
                        return Err(
                            "associative list with keys may not have non-map elements".into()
                        )
                    }
                };
                let fields: Vec<(String, Value)> = keys
                    .iter()
                    .filter_map(|key| {
                        let value = object.get(*key).cloned().or_else(|| self.key_default(ty, key));
                        value.map(|value| (key.to_string(), value))
                    })
                    .collect();
                if fields.is_empty() {
                    let names: Vec<String> = keys.iter().map(|k| go_quote(k)).collect();
                    return Err(format!(
                        "associative list with keys has an element that omits all key fields \
                         [{}] (and doesn't have default values for any key fields)",
                        names.join(" ")
                    ));
                }
                Ok(PathElement::key(fields))
            }
        }
    }

    /// The default of a key field: the schema's (a custom resource's `default`), else
    /// upstream's for built-in types.
    fn key_default(&self, ty: Ty<'a>, key: &str) -> Option<Value> {
        let definition = ty.type_ref?;
        let declared = self.schema.fields(definition).and_then(|f| f.get(key)?.default.clone());
        if declared.is_some() {
            return declared;
        }
        KEY_FIELD_DEFAULTS
            .iter()
            .find(|(d, k, _)| *d == definition && *k == key)
            .map(|(_, _, value)| Value::String(value.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn types() -> Types<'static> {
        Types::new(PatchSchema::builtin())
    }

    #[test]
    fn structs_maps_and_atomic_objects() {
        let types = types();
        let deployment = types.root(Some("io.k8s.api.apps.v1.Deployment"));
        let (spec, named) = types.entry(deployment, "spec");
        assert!(named);
        assert!(matches!(types.shape(spec), Shape::Struct("io.k8s.api.apps.v1.DeploymentSpec")));
        // A LabelSelector is atomic by its definition.
        let (selector, _) = types.entry(spec, "selector");
        assert!(matches!(types.shape(selector), Shape::Atomic));
        // Labels are a map: its keys are entries, not fields.
        let (metadata, _) = types.entry(deployment, "metadata");
        let (labels, _) = types.entry(metadata, "labels");
        assert!(matches!(types.shape(labels), Shape::Map(_)));
        assert!(!types.entry(labels, "app").1);
        // A property's own map type wins over its definition's.
        let pv = types.root(Some("io.k8s.api.core.v1.PersistentVolume"));
        let (pv_spec, _) = types.entry(pv, "spec");
        let (claim_ref, _) = types.entry(pv_spec, "claimRef");
        assert!(matches!(types.shape(claim_ref), Shape::Struct(_)));
        // Unknown kinds: top-level keys are fields, metadata is an ObjectMeta.
        let untyped = types.root(Some("com.example.Unknown"));
        assert!(!types.is_typed(untyped));
        let (meta, named) = types.entry(untyped, "metadata");
        assert!(named);
        assert!(matches!(types.shape(meta), Shape::Struct(OBJECT_META)));
        let (spec, _) = types.entry(untyped, "spec");
        assert!(matches!(types.shape(spec), Shape::Map(_)));
    }

    #[test]
    fn list_items_are_named_by_their_keys() {
        let types = types();
        let service = types.root(Some("io.k8s.api.core.v1.Service"));
        let (spec, _) = types.entry(service, "spec");
        let (ports, _) = types.entry(spec, "ports");
        let list = types.list_type(ports);
        let items = types.items(ports);
        let element = types.item_element(items, &list, &json!({"port": 80})).unwrap();
        assert_eq!(element.to_key(), r#"k:{"port":80,"protocol":"TCP"}"#);
        // Only some keys given: the others take their defaults, or are left out.
        let element = types.item_element(items, &list, &json!({"name": "x"})).unwrap();
        assert_eq!(element.to_key(), r#"k:{"protocol":"TCP"}"#);
        let pod = types.root(Some("io.k8s.api.core.v1.Pod"));
        let (spec, _) = types.entry(pod, "spec");
        let (containers, _) = types.entry(spec, "containers");
        let error = types
            .item_element(types.items(containers), &types.list_type(containers), &json!({}))
            .unwrap_err();
        assert_eq!(
            error,
            r#"associative list with keys has an element that omits all key fields ["name"] (and doesn't have default values for any key fields)"#
        );
        assert!(types.item_element(items, &list, &json!(null)).is_err());
        assert!(types.item_element(items, &ListType::Set, &json!({})).is_err());
        let value = types.item_element(items, &ListType::Set, &json!("a")).unwrap();
        assert_eq!(value.to_key(), r#"v:"a""#);
    }
}
