//! ConfigMaps and Secrets: data keys, total size and immutability, with upstream's messages.

use serde_json::Value;

use crate::validation::values::config_key_problems;
use crate::validation::FieldError;

/// A ConfigMap: its keys, its size, and on update its immutability.
pub fn config_map(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = data_keys(obj);
    errors.extend(config_map_size(obj));
    if let Some(old) = old {
        errors.extend(immutable_data(obj, old));
    }
    errors
}

/// A Secret: its keys, its size, and on update its immutability and its type.
pub fn secret(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = data_keys(obj);
    errors.extend(secret_size(obj));
    if let Some(old) = old {
        errors.extend(immutable_data(obj, old));
        if obj["type"] != old["type"] {
            errors.push(FieldError::invalid("type", &obj["type"], "field is immutable"));
        }
    }
    errors
}

/// ConfigMaps and Secrets marked `immutable: true` keep their data (and the mark).
pub fn immutable_data(obj: &Value, old: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if old["immutable"] != Value::Bool(true) {
        return errors;
    }
    const DETAIL: &str = "field is immutable when `immutable` is set";
    if obj["immutable"] != Value::Bool(true) {
        errors.push(FieldError::forbidden("immutable", DETAIL));
    }
    for field in ["data", "binaryData", "stringData"] {
        if obj[field] != old[field] {
            errors.push(FieldError::forbidden(field, DETAIL));
        }
    }
    errors
}

/// The keys of `data`, `binaryData` and `stringData`, as upstream's `IsConfigMapKey`, one
/// error per problem at `<field>[<key>]`.
pub fn data_keys(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for field in ["data", "binaryData", "stringData"] {
        for key in obj[field].as_object().into_iter().flatten().map(|(k, _)| k) {
            for p in config_key_problems(key) {
                errors.push(FieldError::invalid(
                    format!("{field}[{key}]"),
                    &Value::String(key.clone()),
                    &p,
                ));
            }
        }
    }
    errors
}

/// The most data a ConfigMap or a Secret may hold, in bytes (upstream's `MaxSecretSize`).
pub const MAX_DATA_SIZE: usize = 1024 * 1024;

/// A ConfigMap's values (`data` as text, `binaryData` decoded) may hold at most 1 MiB; over
/// that, one error for the whole object (upstream's empty field path prints as `[]`).
pub fn config_map_size(obj: &Value) -> Option<FieldError> {
    let text: usize = values(&obj["data"]).map(str::len).sum();
    let binary: usize = values(&obj["binaryData"]).map(decoded_len).sum();
    (text + binary > MAX_DATA_SIZE).then(|| FieldError::too_long("[]", MAX_DATA_SIZE))
}

/// A Secret's `data` (decoded, `stringData` already merged in) may hold at most 1 MiB.
pub fn secret_size(obj: &Value) -> Option<FieldError> {
    let total: usize = values(&obj["data"]).map(decoded_len).sum();
    (total > MAX_DATA_SIZE).then(|| FieldError::too_long("data", MAX_DATA_SIZE))
}

fn values(map: &Value) -> impl Iterator<Item = &str> {
    map.as_object().into_iter().flatten().filter_map(|(_, v)| v.as_str())
}

/// The bytes a base64 value holds (what it decodes to; a value that does not decode was
/// refused when the object was read).
fn decoded_len(text: &str) -> usize {
    let padding = text.bytes().rev().take_while(|b| *b == b'=').count();
    (text.len() / 4 * 3 + (text.len() % 4) * 3 / 4).saturating_sub(padding.min(2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn data_is_at_most_one_mebibyte() {
        let big = "x".repeat(MAX_DATA_SIZE);
        assert!(config_map_size(&json!({"data": {"a": big}})).is_none());
        let over = config_map_size(&json!({"data": {"a": big, "b": "y"}})).unwrap();
        assert_eq!(over.line(), "[]: Too long: may not be more than 1048576 bytes");
        // binaryData counts decoded: 4 base64 characters are 3 bytes.
        let binary = "QUJD".repeat(MAX_DATA_SIZE / 3);
        assert!(config_map_size(&json!({"binaryData": {"b": binary}})).is_none());
        assert!(
            config_map_size(&json!({"binaryData": {"b": binary}, "data": {"c": "xy"}})).is_some()
        );
        assert_eq!(decoded_len("QQ=="), 1);
        assert_eq!(decoded_len("QUI="), 2);
        assert_eq!(decoded_len("QUJD"), 3);
        let secret = json!({"data": {"a": "QUJD".repeat(MAX_DATA_SIZE / 3 + 1)}});
        assert_eq!(
            secret_size(&secret).unwrap().line(),
            "data: Too long: may not be more than 1048576 bytes"
        );
        assert!(secret_size(&json!({"data": {"a": "QUJD"}})).is_none());
    }

    #[test]
    fn data_keys_read_like_upstream() {
        let lines = |obj: Value| data_keys(&obj).iter().map(FieldError::line).collect::<Vec<_>>();
        assert_eq!(
            lines(json!({"data": {"a b": "x", "ok.key": "y"}, "binaryData": {"..": ""}})),
            [
                "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                "binaryData[..]: Invalid value: \"..\": must not be '..'",
            ]
        );
    }
}
