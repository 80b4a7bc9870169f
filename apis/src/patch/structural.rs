//! A custom resource's structural schema read as patch metadata, so server-side apply merges
//! and owns its fields the way upstream builds its type from the CustomResourceDefinition:
//! objects with `properties` are structs, objects with `additionalProperties` are maps,
//! `x-kubernetes-list-type` (with `x-kubernetes-list-map-keys`) and `x-kubernetes-map-type`
//! say how lists and objects merge, and what the schema leaves open
//! (`x-kubernetes-preserve-unknown-fields`) is deduced. The root's `metadata` (and an
//! embedded resource's) is the built-in ObjectMeta.
//!
//! Definitions are named by their path below the root's name (`<root>/spec/items[]`), so each
//! schema node has one, and they cannot meet the built-in names the schema falls back to.

use std::collections::BTreeMap;

use super::schema::{FieldPatchMeta, PatchSchema};
use crate::structural::{Items, Props};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

impl PatchSchema {
    /// The patch metadata of one custom resource version's schema, its root definition
    /// named `root` (see [`custom_definition_name`]), on top of [`PatchSchema::builtin`].
    pub fn from_structural(props: &Props, root: &str) -> PatchSchema {
        let mut builder = Builder::default();
        builder.structure(props, root, true);
        PatchSchema::assemble(builder.definitions, builder.map_types, PatchSchema::builtin())
    }
}

/// The name of the root definition of a custom resource's schema: it cannot be one of the
/// built-in definitions (`io.k8s...`), as it has a `/` in it.
pub fn custom_definition_name(group: &str, version: &str, kind: &str) -> String {
    format!("{group}/{version}/{kind}")
}

#[derive(Default)]
struct Builder {
    definitions: BTreeMap<String, BTreeMap<String, FieldPatchMeta>>,
    map_types: BTreeMap<String, String>,
}

impl Builder {
    /// Records the struct `props` as the definition `name`; `resource` when it is an object
    /// with `apiVersion`, `kind` and `metadata` (the root or an embedded resource).
    fn structure(&mut self, props: &Props, name: &str, resource: bool) {
        let mut fields = BTreeMap::new();
        for (key, child) in props.properties() {
            let meta = FieldPatchMeta {
                value_type: self.value_type(child, &format!("{name}/{}", escape(key))),
                list_type: child.list_type.clone(),
                list_map_keys: child.list_map_keys.clone().unwrap_or_default(),
                map_type: child.map_type.clone(),
                default: child.default.clone(),
                ..FieldPatchMeta::default()
            };
            if meta != FieldPatchMeta::default() {
                fields.insert(key.clone(), meta);
            }
        }
        if resource {
            let metadata = fields.entry("metadata".to_string()).or_default();
            metadata.value_type = Some(OBJECT_META.to_string());
        }
        if let Some(map_type) = &props.map_type {
            self.map_types.insert(name.to_string(), map_type.clone());
        }
        self.definitions.insert(name.to_string(), fields);
    }

    /// The type a value of this schema has, `name` being the definition it gets if it is a
    /// struct: for lists the items' type, `map:<values>` for maps, none when it is a scalar
    /// or its content is left open (deduced).
    fn value_type(&mut self, props: &Props, name: &str) -> Option<String> {
        // An atomic object gets a definition too, so its map type holds where no property
        // carries it (a list item, a map value).
        let atomic = props.type_ == "object" && props.map_type.as_deref() == Some("atomic");
        if props.has_properties() || props.embedded_resource || atomic {
            self.structure(props, name, props.embedded_resource);
            return Some(name.to_string());
        }
        if let Some(Items::Schema(items)) = &props.items {
            // A list of lists is atomic in its items, as for built-in types.
            if items.type_ == "array" {
                return None;
            }
            return self.value_type(items, &format!("{name}[]"));
        }
        let values = props.additional_properties.as_ref()?.schema.as_deref()?;
        let values = self.value_type(values, &format!("{name}{{}}"))?;
        Some(format!("map:{values}"))
    }
}

/// A property name as a path segment that cannot be mistaken for the separators.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1").replace('[', "~2").replace('{', "~3")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::ListType;
    use serde_json::json;

    #[test]
    fn list_and_map_types_come_from_the_schema() {
        let props = Props::parse(&json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": {
                    "replicas": {"type": "integer"},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map",
                              "x-kubernetes-list-map-keys": ["name"],
                              "items": {"type": "object", "properties": {
                                  "name": {"type": "string", "default": "main"},
                                  "port": {"type": "integer"}}}},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set",
                             "items": {"type": "string"}},
                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                                 "properties": {"app": {"type": "string"}}},
                    "limits": {"type": "object", "additionalProperties": {
                        "type": "object", "properties": {"max": {"type": "integer"}}}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "labelSets": {"type": "array", "items": {
                        "type": "object", "x-kubernetes-map-type": "atomic",
                        "additionalProperties": {"type": "string"}}}
                }}
            }
        }));
        let root = custom_definition_name("example.com", "v1", "Widget");
        let schema = PatchSchema::from_structural(&props, &root);
        assert!(schema.is_unstructured());
        let meta = schema.lookup(Some(&root), "metadata");
        assert_eq!(meta.value_type, Some(OBJECT_META));
        assert!(schema.is_struct(OBJECT_META), "ObjectMeta comes from the built-in schema");
        let spec = schema.lookup(Some(&root), "spec").value_type.unwrap();
        assert!(schema.is_struct(spec));
        let ports = schema.lookup(Some(spec), "ports");
        assert_eq!(ports.effective_list_type(), ListType::Map(vec!["name"]));
        let port = ports.value_type.unwrap();
        assert!(schema.is_struct(port));
        assert_eq!(schema.fields(port).unwrap()["name"].default, Some(json!("main")));
        assert_eq!(schema.lookup(Some(spec), "tags").effective_list_type(), ListType::Set);
        assert_eq!(schema.lookup(Some(spec), "selector").map_type, Some("atomic"));
        let limits = schema.lookup(Some(spec), "limits").value_type.unwrap();
        let values = limits.strip_prefix("map:").unwrap();
        assert!(schema.is_struct(values));
        assert_eq!(schema.lookup(Some(spec), "free").value_type, None);
        let label_set = schema.lookup(Some(spec), "labelSets").value_type.unwrap();
        assert_eq!(schema.definition_map_type(label_set), Some("atomic"));
        assert_eq!(schema.lookup(Some(spec), "replicas"), Default::default());
    }
}
