//! ConfigMaps and Secrets: data keys and immutability, with upstream's messages.

use serde_json::Value;

use super::values::config_key_problems;
use super::FieldError;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
