//! Pruning: the fields a structural schema does not specify are dropped, as
//! apiextensions-apiserver's pruning does on every decode of a custom resource; their paths
//! are what `fieldValidation` reports (`unknown field "spec.foo"`).

use serde_json::Value;

use super::Props;

/// Prunes `obj` (a whole object: the root is an embedded resource, whose `apiVersion`,
/// `kind` and `metadata` are always kept) and answers the pruned fields' paths.
pub(super) fn prune(root: &Props, obj: &mut Value) -> Vec<String> {
    let mut pruned = Vec::new();
    fields(Some(root), obj, "", true, &mut pruned);
    // Sorted, for one order whatever order the object's fields came in.
    pruned.sort();
    pruned
}

/// Prunes a value of schema `s` (a sub-schema; `embedded` when the value stands for a whole
/// object, whose `apiVersion`, `kind` and `metadata` are kept) and answers the pruned paths.
pub(super) fn value(s: &Props, v: &mut Value, embedded: bool) -> Vec<String> {
    let mut pruned = Vec::new();
    fields(Some(s), v, "", embedded, &mut pruned);
    pruned.sort();
    pruned
}

/// The fields of ObjectMeta (meta/v1), the metadata of every object and embedded resource.
const OBJECT_META_FIELDS: &[&str] = &[
    "annotations",
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "finalizers",
    "generateName",
    "generation",
    "labels",
    "managedFields",
    "name",
    "namespace",
    "ownerReferences",
    "resourceVersion",
    "selfLink",
    "uid",
];

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn fields(s: Option<&Props>, value: &mut Value, path: &str, root: bool, pruned: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let Some(s) = s else {
                pruned.extend(map.keys().map(|k| child(path, k)));
                map.clear();
                return;
            };
            let embedded = root || s.embedded_resource;
            let additional = s.additional_properties.as_ref().and_then(|a| a.schema.as_deref());
            let mut dropped = Vec::new();
            for (k, v) in map.iter_mut() {
                if embedded {
                    let kept = match k.as_str() {
                        "apiVersion" | "kind" => v.is_string(),
                        // Metadata is not pruned by the schema: it is ObjectMeta, which
                        // drops (and reports) only what ObjectMeta does not have.
                        "metadata" => {
                            if let Value::Object(meta) = v {
                                let path = child(path, k);
                                meta.retain(|name, _| {
                                    let known = OBJECT_META_FIELDS.contains(&name.as_str());
                                    if !known {
                                        pruned.push(child(&path, name));
                                    }
                                    known
                                });
                                true
                            } else {
                                false
                            }
                        }
                        _ => false,
                    };
                    if kept {
                        continue;
                    }
                }
                if let Some(prop) = s.property(k) {
                    fields(Some(prop), v, &child(path, k), false, pruned);
                } else if let Some(extra) = additional {
                    fields(Some(extra), v, &child(path, k), false, pruned);
                } else if s.preserves_unknown() {
                    // Kept as it is, but embedded resources below are still pruned by
                    // their own schemas; without one, nothing below is known.
                } else {
                    dropped.push(k.clone());
                }
            }
            for k in dropped {
                map.remove(&k);
                pruned.push(child(path, &k));
            }
        }
        Value::Array(list) => {
            let items = s.and_then(Props::item_schema);
            if items.is_none() && s.is_some_and(Props::preserves_unknown) {
                return;
            }
            for (i, v) in list.iter_mut().enumerate() {
                fields(items, v, &format!("{path}[{i}]"), false, pruned);
            }
        }
        _ => {}
    }
}
