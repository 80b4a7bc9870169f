//! Merging an applied configuration into the live object: the configuration's value wins for
//! every leaf; granular objects merge key by key; associative lists and sets merge item by
//! item, matched by key fields or value; atomic lists and objects are replaced whole.
//!
//! Item order follows upstream: items the configuration names come in its order, and live
//! items it does not name stay where they were relative to them. New object keys come after
//! the live object's keys, in the configuration's order.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::path::PathElement;
use super::types::{Shape, Ty, Types};
use crate::patch::ListType;

/// `live` with `config` merged in. A `null` in the configuration stays null here; the caller
/// drops it once ownership is settled (see [`drop_applied_nulls`]).
pub(crate) fn merge(types: Types<'_>, ty: Ty<'_>, live: Option<&Value>, config: &Value) -> Value {
    let Some(live) = live else { return config.clone() };
    match (live, config) {
        (Value::Array(old), Value::Array(new)) if !(old.is_empty() && new.is_empty()) => {
            match types.list_type(ty) {
                ListType::Atomic => config.clone(),
                list => Value::Array(merge_items(types, ty, &list, old, new)),
            }
        }
        (Value::Object(old), Value::Object(new)) if !(old.is_empty() && new.is_empty()) => {
            match types.shape(ty) {
                Shape::Atomic => config.clone(),
                _ => Value::Object(merge_entries(types, ty, old, new)),
            }
        }
        _ => config.clone(),
    }
}

fn merge_entries(
    types: Types<'_>,
    ty: Ty<'_>,
    live: &Map<String, Value>,
    config: &Map<String, Value>,
) -> Map<String, Value> {
    let mut out = live.clone();
    for (key, value) in config {
        let (child_ty, _) = types.entry(ty, key);
        let merged = merge(types, child_ty, live.get(key), value);
        // Inserting an existing key keeps its place; new keys go last.
        out.insert(key.clone(), merged);
    }
    out
}

/// Merges list items matched by path element. Walks both lists at once: matching items merge
/// in place; a live item the configuration does not name is kept where it is; a live item it
/// names waits for its turn in the configuration's order; configuration items come in order.
fn merge_items<'a>(
    types: Types<'a>,
    ty: Ty<'a>,
    list: &ListType<'a>,
    live: &[Value],
    config: &[Value],
) -> Vec<Value> {
    let item_ty = types.items(ty);
    let element = |item: &Value| types.item_element(item_ty, list, item).ok();
    let live_keys: Vec<Option<PathElement>> = live.iter().map(element).collect();
    let config_keys: Vec<Option<PathElement>> = config.iter().map(element).collect();
    let in_config = |key: &Option<PathElement>| key.is_some() && config_keys.contains(key);
    let live_item = |key: &Option<PathElement>| {
        key.as_ref()
            .and_then(|k| live_keys.iter().position(|l| l.as_ref() == Some(k)).map(|i| &live[i]))
    };
    // The configuration's items that are also live, in its order: the next one to place.
    let mut shared = config_keys.iter().filter(|k| k.is_some() && live_keys.contains(k)).peekable();
    let mut merged: BTreeSet<PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(live.len().max(config.len()));
    let (mut l, mut c) = (0, 0);
    while l < live.len() || c < config.len() {
        let before = (l, c);
        if l < live.len() && c < config.len() {
            if live_keys[l].is_some() && live_keys[l] == config_keys[c] {
                out.push(merge(types, item_ty, Some(&live[l]), &config[c]));
                merged.extend(config_keys[c].clone());
                l += 1;
                c += 1;
                shared.next();
                continue;
            }
            if in_config(&live_keys[l]) && shared.peek().is_some_and(|next| **next != live_keys[l])
            {
                // Named later by the configuration: placed when its turn comes.
                l += 1;
                continue;
            }
        }
        if l < live.len() {
            if !in_config(&live_keys[l]) {
                out.push(live[l].clone());
                l += 1;
                continue;
            }
            if live_keys[l].as_ref().is_some_and(|k| merged.contains(k)) {
                l += 1;
            }
        }
        if c < config.len() {
            let key = &config_keys[c];
            out.push(merge(types, item_ty, live_item(key), &config[c]));
            merged.extend(key.clone());
            if shared.peek().is_some_and(|next| *next == key) {
                shared.next();
            }
            c += 1;
        }
        if (l, c) == before {
            // Cannot happen with a configuration free of repeated keys; never loop on one.
            l += 1;
        }
    }
    out
}

/// Removes from `merged` the fields the configuration set to `null` (they are owned, but left
/// unset, as upstream's decoding of such an object leaves them).
pub(crate) fn drop_applied_nulls(types: Types<'_>, ty: Ty<'_>, merged: &mut Value, config: &Value) {
    match (merged, config) {
        (Value::Object(merged), Value::Object(config)) => {
            if matches!(types.shape(ty), Shape::Atomic) {
                return;
            }
            for (key, value) in config {
                if value.is_null() {
                    if merged.get(key).is_some_and(Value::is_null) {
                        merged.shift_remove(key);
                    }
                } else if let Some(child) = merged.get_mut(key) {
                    let (child_ty, _) = types.entry(ty, key);
                    drop_applied_nulls(types, child_ty, child, value);
                }
            }
        }
        (Value::Array(merged), Value::Array(config)) => {
            let list = types.list_type(ty);
            if !matches!(list, ListType::Map(_)) {
                return;
            }
            let item_ty = types.items(ty);
            for item in config {
                let Ok(element) = types.item_element(item_ty, &list, item) else { continue };
                let target = merged
                    .iter_mut()
                    .find(|m| types.item_element(item_ty, &list, m).is_ok_and(|e| e == element));
                if let Some(target) = target {
                    drop_applied_nulls(types, item_ty, target, item);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::PatchSchema;
    use serde_json::json;

    const POD: &str = "io.k8s.api.core.v1.Pod";

    fn merged(live: Value, config: Value) -> Value {
        let types = Types::new(PatchSchema::builtin());
        let ty = types.root(Some(POD));
        let mut out = merge(types, ty, Some(&live), &config);
        drop_applied_nulls(types, ty, &mut out, &config);
        out
    }

    fn names(pod: &Value) -> Vec<&str> {
        pod["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect()
    }

    fn containers(names: &[&str]) -> Value {
        let items: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
        json!({"spec": {"containers": items}})
    }

    #[test]
    fn items_follow_the_configuration_and_live_items_stay_in_place() {
        let cases: [(&[&str], &[&str], &[&str]); 5] = [
            (&["a", "b"], &["b", "c"], &["a", "b", "c"]),
            (&["a", "b", "c"], &["c", "a"], &["b", "c", "a"]),
            (&["a", "x", "b"], &["n", "b"], &["a", "x", "n", "b"]),
            (&[], &["a"], &["a"]),
            (&["a"], &["b"], &["a", "b"]),
        ];
        for (live, config, expected) in cases {
            let out = merged(containers(live), containers(config));
            assert_eq!(names(&out), expected, "{live:?} + {config:?}");
        }
    }

    #[test]
    fn leaves_win_atomic_values_are_replaced_and_nulls_unset() {
        let live = json!({
            "metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
            "spec": {
                "nodeSelector": {"disk": "ssd", "zone": "a"},
                "containers": [{"name": "c", "image": "old", "command": ["a", "b"], "tty": true}]
            }
        });
        let config = json!({
            "metadata": {"labels": {"b": "3", "c": "4"}, "finalizers": ["y", "x"]},
            "spec": {
                "nodeSelector": {"zone": "b"},
                "containers": [{"name": "c", "image": "new", "command": ["z"], "tty": null}]
            }
        });
        assert_eq!(
            merged(live, config),
            json!({
                "metadata": {"labels": {"a": "1", "b": "3", "c": "4"}, "finalizers": ["y", "x"]},
                "spec": {
                    "nodeSelector": {"zone": "b"},
                    "containers": [{"name": "c", "image": "new", "command": ["z"]}]
                }
            })
        );
    }
}
