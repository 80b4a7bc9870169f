//! What a write changed, as field sets: the paths it added, modified and removed. A write owns
//! what it added or modified, and takes it from every other manager.
//!
//! Leaves (scalars, atomic values, and objects or lists empty on both sides) are compared by
//! value. A granular object, list or list item that exists on one side only is itself added or
//! removed, besides what is in it: creating `data: {a: b}` adds `data` and `data.a`, which is
//! why an update's fields show `".": {}` where an apply's do not.
//!
//! Upstream compares objects decoded into Go structs, where some fields are never absent: a
//! struct held by value is at least `{}`, a few other fields at least `null`. A field of that
//! kind missing on one side is compared as that zero value (`GO_ZERO_VALUES`), so creating a
//! Deployment does not add `spec`, `spec.template` or `spec.strategy` themselves.

use serde_json::Value;

use super::fieldset::FieldSet;
use super::path::{values_equal, PathElement};
use super::types::{Shape, Ty, Types};
use crate::patch::ListType;

/// The paths a write from `old` to `new` added, modified and removed.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    /// The paths that now hold a new value.
    pub(crate) fn changed(&self) -> FieldSet {
        self.added.union(&self.modified)
    }

    /// Every path the write touched.
    pub(crate) fn touched(&self) -> FieldSet {
        self.changed().union(&self.removed)
    }
}

/// Fields Go never leaves out when it encodes a decoded object, with the value they then have
/// at least: structs held by value (`{}`) and fields encoded even when unset (`null`). Besides
/// these, every kind's top-level `metadata`, `spec` and `status` are structs held by value.
const GO_ZERO_VALUES: &[(&str, &str, GoZero)] = &[
    ("io.k8s.api.apps.v1.DaemonSetSpec", "template", GoZero::Struct),
    ("io.k8s.api.apps.v1.DaemonSetSpec", "updateStrategy", GoZero::Struct),
    ("io.k8s.api.apps.v1.DeploymentSpec", "strategy", GoZero::Struct),
    ("io.k8s.api.apps.v1.DeploymentSpec", "template", GoZero::Struct),
    ("io.k8s.api.apps.v1.ReplicaSetSpec", "template", GoZero::Struct),
    ("io.k8s.api.apps.v1.StatefulSetSpec", "template", GoZero::Struct),
    ("io.k8s.api.apps.v1.StatefulSetSpec", "updateStrategy", GoZero::Struct),
    ("io.k8s.api.batch.v1.CronJobSpec", "jobTemplate", GoZero::Struct),
    ("io.k8s.api.batch.v1.JobSpec", "template", GoZero::Struct),
    ("io.k8s.api.batch.v1.JobTemplateSpec", "metadata", GoZero::Struct),
    ("io.k8s.api.batch.v1.JobTemplateSpec", "spec", GoZero::Struct),
    ("io.k8s.api.core.v1.PodSpec", "containers", GoZero::Null),
    ("io.k8s.api.core.v1.PodTemplateSpec", "metadata", GoZero::Struct),
    ("io.k8s.api.core.v1.PodTemplateSpec", "spec", GoZero::Struct),
    ("io.k8s.api.core.v1.ServiceStatus", "loadBalancer", GoZero::Struct),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "creationTimestamp", GoZero::Null),
];

#[derive(Clone, Copy)]
enum GoZero {
    Struct,
    Null,
}

/// Compares two whole objects of the type `ty`.
pub(crate) fn compare_objects(
    types: Types<'_>,
    ty: Ty<'_>,
    old: &Value,
    new: &Value,
) -> Comparison {
    let mut walker = Walker { types, path: Vec::new(), comparison: Comparison::default() };
    walker.walk(ty, Some(old), Some(new));
    walker.comparison
}

struct Walker<'a> {
    types: Types<'a>,
    path: Vec<PathElement>,
    comparison: Comparison,
}

fn find<'v>(items: &[(PathElement, &'v Value)], element: &PathElement) -> Option<&'v Value> {
    items.iter().find(|(e, _)| e == element).map(|(_, v)| *v)
}

/// The container kind of a value: null stands for an empty container of the other side's kind.
#[derive(PartialEq, Clone, Copy)]
enum Kind {
    List,
    Object,
    Leaf,
}

fn kind(value: &Value) -> Kind {
    match value {
        Value::Array(_) => Kind::List,
        Value::Object(_) => Kind::Object,
        _ => Kind::Leaf,
    }
}

fn is_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Array(items)) => items.is_empty(),
        Some(Value::Object(map)) => map.is_empty(),
        Some(_) => false,
    }
}

impl<'a> Walker<'a> {
    fn walk(&mut self, ty: Ty<'a>, old: Option<&Value>, new: Option<&Value>) {
        let kinds: Vec<Kind> =
            old.into_iter().chain(new).filter(|v| !v.is_null()).map(kind).collect();
        let container = match kinds.as_slice() {
            [] => Kind::Leaf,
            [only] => *only,
            [a, b] if a == b => *a,
            _ => Kind::Leaf,
        };
        let both_empty = is_empty(old) && is_empty(new);
        match container {
            Kind::List if !both_empty => match self.types.list_type(ty) {
                ListType::Atomic => self.leaf(old, new),
                list => self.items(ty, &list, old, new),
            },
            Kind::Object if !both_empty => match self.types.shape(ty) {
                Shape::Atomic => self.leaf(old, new),
                _ => self.entries(ty, old, new),
            },
            _ => self.leaf(old, new),
        }
    }

    fn leaf(&mut self, old: Option<&Value>, new: Option<&Value>) {
        match (old, new) {
            (None, Some(_)) => self.comparison.added.insert(&self.path),
            (Some(_), None) => self.comparison.removed.insert(&self.path),
            (Some(old), Some(new)) if !values_equal(old, new) => {
                self.comparison.modified.insert(&self.path)
            }
            _ => {}
        }
    }

    /// A granular container on one side only is added or removed as a whole too.
    fn container(&mut self, old: Option<&Value>, new: Option<&Value>) {
        match (old, new) {
            (None, Some(_)) => self.comparison.added.insert(&self.path),
            (Some(_), None) => self.comparison.removed.insert(&self.path),
            _ => {}
        }
    }

    fn entries(&mut self, ty: Ty<'a>, old: Option<&Value>, new: Option<&Value>) {
        let old_map = old.and_then(Value::as_object);
        let new_map = new.and_then(Value::as_object);
        let mut keys: Vec<&String> = old_map.into_iter().flat_map(|m| m.keys()).collect();
        if let Some(new_map) = new_map {
            keys.extend(new_map.keys().filter(|k| !old_map.is_some_and(|m| m.contains_key(*k))));
        }
        for key in keys {
            let (child_ty, _) = self.types.entry(ty, key);
            let (mut old_value, mut new_value) =
                (old_map.and_then(|m| m.get(key)), new_map.and_then(|m| m.get(key)));
            let zero = match (old_value, new_value) {
                (None, Some(_)) | (Some(_), None) => self.go_zero(ty, key),
                _ => None,
            };
            if zero.is_some() {
                old_value = old_value.or(zero.as_ref());
                new_value = new_value.or(zero.as_ref());
            }
            self.path.push(PathElement::Field(key.clone()));
            self.walk(child_ty, old_value, new_value);
            self.path.pop();
        }
        self.container(old, new);
    }

    /// The value Go gives the field `key` of an object of type `ty` when it is unset, for the
    /// fields it never leaves out.
    fn go_zero(&self, ty: Ty<'a>, key: &str) -> Option<Value> {
        let Shape::Struct(definition) = self.types.shape(ty) else { return None };
        let top_level = self.path.is_empty() && matches!(key, "metadata" | "spec" | "status");
        let zero = if top_level && self.types.is_typed(ty) {
            GoZero::Struct
        } else {
            GO_ZERO_VALUES.iter().find(|(d, k, _)| *d == definition && *k == key)?.2
        };
        Some(match zero {
            GoZero::Struct => Value::Object(Default::default()),
            GoZero::Null => Value::Null,
        })
    }

    fn items(&mut self, ty: Ty<'a>, list: &ListType<'a>, old: Option<&Value>, new: Option<&Value>) {
        let item_ty = self.types.items(ty);
        let old_items = self.index(item_ty, list, old);
        let new_items = self.index(item_ty, list, new);
        let mut elements: Vec<&PathElement> = old_items.iter().map(|(e, _)| e).collect();
        elements.extend(
            new_items.iter().map(|(e, _)| e).filter(|e| !old_items.iter().any(|(o, _)| o == *e)),
        );
        for element in elements {
            let (old_item, new_item) = (find(&old_items, element), find(&new_items, element));
            self.path.push(element.clone());
            self.walk(item_ty, old_item, new_item);
            self.path.pop();
        }
        self.container(old, new);
    }

    /// The items of a list by path element; items without one, and repeats, are left out.
    fn index<'v>(
        &self,
        item_ty: Ty<'a>,
        list: &ListType<'a>,
        value: Option<&'v Value>,
    ) -> Vec<(PathElement, &'v Value)> {
        let mut out: Vec<(PathElement, &'v Value)> = Vec::new();
        for item in value.and_then(Value::as_array).into_iter().flatten() {
            if let Ok(element) = self.types.item_element(item_ty, list, item) {
                if !out.iter().any(|(e, _)| *e == element) {
                    out.push((element, item));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::PatchSchema;
    use serde_json::json;

    fn compare(type_ref: Option<&str>, old: Value, new: Value) -> [Value; 3] {
        let types = Types::new(PatchSchema::builtin());
        let c = compare_objects(types, types.root(type_ref), &old, &new);
        [c.added.to_fields_v1(), c.modified.to_fields_v1(), c.removed.to_fields_v1()]
    }

    #[test]
    fn added_containers_are_members_too() {
        let [added, modified, removed] = compare(
            Some("io.k8s.api.core.v1.ConfigMap"),
            json!({"metadata": {"name": "c", "labels": {"a": "1"}}, "data": {"x": "1"}}),
            json!({"metadata": {"name": "c"}, "data": {"x": "2", "y": "3"}, "binaryData": {"b": ""}}),
        );
        assert_eq!(added, json!({"f:binaryData": {".": {}, "f:b": {}}, "f:data": {"f:y": {}}}));
        assert_eq!(modified, json!({"f:data": {"f:x": {}}}));
        assert_eq!(removed, json!({"f:metadata": {"f:labels": {".": {}, "f:a": {}}}}));
    }

    #[test]
    fn structs_go_never_leaves_out_are_never_added_whole() {
        let deployment = json!({"spec": {
            "replicas": 1,
            "strategy": {"rollingUpdate": {"maxSurge": 1}},
            "template": {
                "metadata": {"creationTimestamp": null},
                "spec": {"containers": [{"name": "c"}]}
            }
        }});
        let [added, ..] =
            compare(Some("io.k8s.api.apps.v1.Deployment"), json!({}), deployment.clone());
        assert_eq!(
            added,
            json!({"f:spec": {
                "f:replicas": {},
                "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}}},
                "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"c\"}": {".": {}, "f:name": {}}
                }}}
            }})
        );
        // Unknown kinds are not Go structs: everything new is added whole.
        let [added, ..] = compare(None, json!({}), json!({"spec": {"replicas": 1}}));
        assert_eq!(added, json!({"f:spec": {".": {}, "f:replicas": {}}}));
    }

    #[test]
    fn list_items_and_atomic_lists() {
        let [added, modified, removed] = compare(
            Some("io.k8s.api.core.v1.Pod"),
            json!({"spec": {"containers": [{"name": "a", "command": ["x"]}, {"name": "b"}]}}),
            json!({"spec": {"containers": [{"name": "a", "command": ["y"]}, {"name": "c"}]}}),
        );
        let c = "k:{\"name\":\"c\"}";
        let b = "k:{\"name\":\"b\"}";
        let a = "k:{\"name\":\"a\"}";
        assert_eq!(added, json!({"f:spec": {"f:containers": {c: {".": {}, "f:name": {}}}}}));
        assert_eq!(modified, json!({"f:spec": {"f:containers": {a: {"f:command": {}}}}}));
        assert_eq!(removed, json!({"f:spec": {"f:containers": {b: {".": {}, "f:name": {}}}}}));
    }
}
