//! JSON merge patch (RFC 7386) as evanphx/json-patch v4's `MergePatch` applies it for
//! kube-apiserver: objects merge recursively, `null` deletes, anything else replaces; a value
//! that is set whole has the `null` members of its objects pruned (also inside lists).

use serde_json::{Map, Value};

use super::PatchError;

/// The message for a patch that is `null`, a scalar, or not JSON at all.
pub(crate) const BAD_PATCH: &str = "Invalid JSON Patch";

pub(crate) fn apply(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    match patch {
        Value::Object(patch) => match original {
            Value::Object(doc) => {
                let mut doc = doc.clone();
                merge_objects(&mut doc, patch);
                Ok(Value::Object(doc))
            }
            // Not an object to merge into: the patch itself becomes the document.
            _ => Ok(pruned(Value::Object(patch.clone()))),
        },
        // A top-level list replaces the document, with nulls pruned from its objects.
        Value::Array(_) => Ok(pruned(patch.clone())),
        _ => Err(PatchError::BadRequest(BAD_PATCH.to_string())),
    }
}

fn merge_objects(doc: &mut Map<String, Value>, patch: &Map<String, Value>) {
    for (key, value) in patch {
        if value.is_null() {
            doc.remove(key);
            continue;
        }
        let merged = match doc.remove(key) {
            None | Some(Value::Null) => pruned(value.clone()),
            Some(current) => merge_value(current, value),
        };
        doc.insert(key.clone(), merged);
    }
}

/// Merges one member: objects into objects; an object replacing a non-object is pruned, any
/// other value replaces as it is.
fn merge_value(current: Value, patch: &Value) -> Value {
    match (current, patch) {
        (Value::Object(mut doc), Value::Object(patch)) => {
            merge_objects(&mut doc, patch);
            Value::Object(doc)
        }
        (Value::Object(_), other) => other.clone(),
        (_, other) => pruned(other.clone()),
    }
}

/// Drops `null` members of objects, recursively through objects and lists.
fn pruned(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, pruned(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(pruned).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merges_deletes_and_prunes() {
        let doc = json!({"a": {"b": 1, "c": 2}, "l": [1], "s": "x"});
        let patch =
            json!({"a": {"b": null, "d": {"e": null, "f": 1}}, "l": [{"x": null}], "s": null});
        assert_eq!(apply(&doc, &patch).unwrap(), json!({"a": {"c": 2, "d": {"f": 1}}, "l": [{}]}));
    }

    #[test]
    fn rejects_null_and_scalars() {
        for patch in [json!(null), json!(1), json!("x")] {
            assert_eq!(
                apply(&json!({}), &patch),
                Err(PatchError::BadRequest("Invalid JSON Patch".to_string()))
            );
        }
    }
}
