//! Removing what an applier stopped applying. A field, map entry or list item goes when the
//! manager's previous apply had it, its new apply does not, and no manager (the applier
//! included, any operation) owns it or anything below it.
//!
//! "Anything below" works through named fields: a set holding `spec.template.spec.x` also
//! counts as owning the struct fields `spec`, `spec.template` and `spec.template.spec`
//! ([`with_named_fields`]), so a struct stays while anyone owns something in it. Map entries
//! and list items are not counted that way: an item no longer applied and not owned as an item
//! by anyone is removed whole, even when another manager owns a field inside it (as upstream).

use serde_json::Value;

use super::fieldset::FieldSet;
use super::path::PathElement;
use super::types::{Shape, Ty, Types};
use crate::patch::ListType;

/// The paths to remove from the merged object: those of `last_applied` no manager still owns.
/// `owned` is the union of every manager's set, with the applier's new (unstripped) set.
pub(crate) fn removed_fields(
    types: Types<'_>,
    ty: Ty<'_>,
    last_applied: &FieldSet,
    owned: &FieldSet,
) -> FieldSet {
    with_named_fields(types, ty, last_applied).difference(&with_named_fields(types, ty, owned))
}

/// The set plus every struct field that leads to one of its paths.
pub(crate) fn with_named_fields(types: Types<'_>, ty: Ty<'_>, set: &FieldSet) -> FieldSet {
    let mut out = FieldSet::new();
    add_named(types, ty, set, &mut Vec::new(), &mut out);
    out
}

fn add_named<'a>(
    types: Types<'a>,
    ty: Ty<'a>,
    set: &FieldSet,
    path: &mut Vec<PathElement>,
    out: &mut FieldSet,
) {
    for member in set.members() {
        path.push(member.clone());
        out.insert(path);
        path.pop();
    }
    for (element, child) in set.children() {
        let (child_ty, named) = types.child(ty, element);
        path.push(element.clone());
        if named {
            out.insert(path);
        }
        add_named(types, child_ty, child, path, out);
        path.pop();
    }
}

/// Removes the paths of `set` from `value`. An object or list left empty by the removal goes
/// too (upstream leaves it null, which decoding drops).
pub(crate) fn remove_fields(types: Types<'_>, ty: Ty<'_>, value: &mut Value, set: &FieldSet) {
    match value {
        Value::Object(object) => {
            if matches!(types.shape(ty), Shape::Atomic) {
                return;
            }
            let keys: Vec<String> = object.keys().cloned().collect();
            for key in keys {
                let element = PathElement::Field(key.clone());
                if set.has_member(&element) {
                    object.shift_remove(&key);
                } else if let Some(below) = set.child(&element) {
                    let (child_ty, _) = types.entry(ty, &key);
                    let child = object.get_mut(&key).expect("key listed above");
                    if remove_below(types, child_ty, child, below) {
                        object.shift_remove(&key);
                    }
                }
            }
        }
        Value::Array(items) => {
            let list = types.list_type(ty);
            if matches!(list, ListType::Atomic) {
                return;
            }
            let item_ty = types.items(ty);
            items.retain_mut(|item| {
                let Ok(element) = types.item_element(item_ty, &list, item) else { return true };
                if set.has_member(&element) {
                    return false;
                }
                if let Some(below) = set.child(&element) {
                    remove_fields(types, item_ty, item, below);
                }
                true
            });
        }
        _ => {}
    }
}

/// Removes paths below a container; true when that emptied it.
fn remove_below(types: Types<'_>, ty: Ty<'_>, value: &mut Value, set: &FieldSet) -> bool {
    let was_empty = is_empty_container(value);
    remove_fields(types, ty, value, set);
    !was_empty && is_empty_container(value)
}

fn is_empty_container(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::PatchSchema;
    use serde_json::json;

    fn set(fields_v1: Value) -> FieldSet {
        FieldSet::from_fields_v1(&fields_v1).unwrap()
    }

    #[test]
    fn struct_fields_on_the_way_are_named() {
        let types = Types::new(PatchSchema::builtin());
        let ty = types.root(Some("io.k8s.api.core.v1.Pod"));
        let named = with_named_fields(
            types,
            ty,
            &set(json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {"f:containers": {
                "k:{\"name\":\"c\"}": {"f:image": {}}
            }}})),
        );
        assert_eq!(
            named.to_fields_v1(),
            json!({
                "f:metadata": {".": {}, "f:labels": {".": {}, "f:a": {}}},
                "f:spec": {".": {}, "f:containers": {".": {}, "k:{\"name\":\"c\"}": {"f:image": {}}}}
            })
        );
    }

    #[test]
    fn removal_drops_emptied_containers() {
        let types = Types::new(PatchSchema::builtin());
        let ty = types.root(Some("io.k8s.api.core.v1.Pod"));
        let mut pod = json!({
            "metadata": {"name": "p", "labels": {"a": "1"}, "annotations": {}},
            "spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d"}]}
        });
        let gone = set(json!({
            "f:metadata": {"f:labels": {"f:a": {}}, "f:annotations": {"f:x": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"d\"}": {}, "k:{\"name\":\"c\"}": {"f:image": {}}}}
        }));
        remove_fields(types, ty, &mut pod, &gone);
        assert_eq!(
            pod,
            json!({"metadata": {"name": "p", "annotations": {}}, "spec": {"containers": [{"name": "c"}]}})
        );
    }
}
