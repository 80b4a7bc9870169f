//! Defaulting: the schema's `default`s filled in where a field is missing (or `null` and not
//! nullable), inside `items` and `additionalProperties` too, then the remaining `null`s of
//! fields that are neither nullable nor defaulted dropped, as upstream's defaulter does on
//! every decode of a custom resource (requests and reads from storage).

use serde_json::Value;

use super::Props;

pub(super) fn default(root: &Props, obj: &mut Value) {
    apply(root, obj);
    drop_nulls(root, obj);
}

/// A `null` the schema does not allow but can replace with its default.
fn replaceable_null(value: &Value, s: &Props) -> bool {
    value.is_null() && !s.nullable && s.default.is_some()
}

fn apply(s: &Props, value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, prop) in s.properties() {
                let Some(default) = &prop.default else { continue };
                if map.get(k).is_none_or(|v| replaceable_null(v, prop)) {
                    map.insert(k.clone(), default.clone());
                }
            }
            let additional = s.additional_properties.as_ref().and_then(|a| a.schema.as_deref());
            for (k, v) in map.iter_mut() {
                if let Some(prop) = s.property(k) {
                    apply(prop, v);
                } else if let Some(extra) = additional {
                    if replaceable_null(v, extra) {
                        *v = extra.default.clone().unwrap_or_default();
                    }
                    apply(extra, v);
                }
            }
        }
        Value::Array(list) => {
            let Some(items) = s.item_schema() else { return };
            for v in list.iter_mut() {
                if replaceable_null(v, items) {
                    *v = items.default.clone().unwrap_or_default();
                }
                apply(items, v);
            }
        }
        _ => {}
    }
}

/// `PruneNonNullableNullsWithoutDefaults`.
fn drop_nulls(s: &Props, value: &mut Value) {
    match value {
        Value::Object(map) => {
            let additional = s.additional_properties.as_ref().and_then(|a| a.schema.as_deref());
            map.retain(|k, v| {
                let Some(prop) = s.property(k).or(additional) else { return true };
                if v.is_null() {
                    return prop.nullable || prop.default.is_some();
                }
                drop_nulls(prop, v);
                true
            });
        }
        Value::Array(list) => {
            if let Some(items) = s.item_schema() {
                list.iter_mut().for_each(|v| drop_nulls(items, v));
            }
        }
        _ => {}
    }
}
