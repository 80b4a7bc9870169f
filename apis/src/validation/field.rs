//! One thing wrong with one field ([`FieldError`], upstream's `field.Error`): its reason,
//! field path and message, with constructors for each of upstream's error types and the
//! line kubectl prints (`field: message`).

use serde_json::Value;

use crate::gofmt::go_quote;

/// One thing wrong with one field, as upstream's `field.Error`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// `FieldValueRequired`, `FieldValueInvalid`, `FieldValueNotSupported`, ...
    pub reason: &'static str,
    pub message: String,
    /// The field path, e.g. `metadata.name` or `spec.containers[0].image`.
    pub field: String,
}

/// A bad value as `field.Error` prints it: strings quoted as Go's `%q`, other values as JSON.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        other => other.to_string(),
    }
}

impl FieldError {
    pub fn required(field: impl Into<String>, detail: &str) -> FieldError {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        FieldError { reason: "FieldValueRequired", message, field: field.into() }
    }

    /// `Invalid value: "x": detail`.
    pub fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> FieldError {
        FieldError::invalid_shown(field, &shown(value), detail)
    }

    /// [`FieldError::invalid`] for a value already printed the Go way (a struct or map as
    /// `%#v`, see [`crate::gofmt`]); without a detail the line ends at the value, as upstream's.
    pub(crate) fn invalid_shown(field: impl Into<String>, shown: &str, detail: &str) -> FieldError {
        let message = if detail.is_empty() {
            format!("Invalid value: {shown}")
        } else {
            format!("Invalid value: {shown}: {detail}")
        };
        FieldError { reason: "FieldValueInvalid", message, field: field.into() }
    }

    /// Upstream's `field.NotFound`: `Not found: "x"`.
    pub fn not_found(field: impl Into<String>, value: &Value) -> FieldError {
        FieldError {
            reason: "FieldValueNotFound",
            message: format!("Not found: {}", shown(value)),
            field: field.into(),
        }
    }

    pub fn forbidden(field: impl Into<String>, detail: &str) -> FieldError {
        FieldError {
            reason: "FieldValueForbidden",
            message: format!("Forbidden: {detail}"),
            field: field.into(),
        }
    }

    pub fn unsupported(field: impl Into<String>, value: &Value, supported: &[&str]) -> FieldError {
        FieldError::unsupported_shown(field, &shown(value), supported)
    }

    /// [`FieldError::unsupported`] for a value already printed the Go way.
    pub(crate) fn unsupported_shown(
        field: impl Into<String>,
        shown: &str,
        supported: &[&str],
    ) -> FieldError {
        let list: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        FieldError {
            reason: "FieldValueNotSupported",
            message: format!("Unsupported value: {shown}: supported values: {}", list.join(", ")),
            field: field.into(),
        }
    }

    pub fn duplicate(field: impl Into<String>, value: &Value) -> FieldError {
        FieldError::duplicate_shown(field, &shown(value))
    }

    /// [`FieldError::duplicate`] for a value already printed the Go way.
    pub(crate) fn duplicate_shown(field: impl Into<String>, shown: &str) -> FieldError {
        FieldError {
            reason: "FieldValueDuplicate",
            message: format!("Duplicate value: {shown}"),
            field: field.into(),
        }
    }

    pub fn too_long(field: impl Into<String>, max: usize) -> FieldError {
        FieldError {
            reason: "FieldValueTooLong",
            message: format!("Too long: may not be more than {max} bytes"),
            field: field.into(),
        }
    }

    /// Upstream's `field.TooMany`: `Too many: 9: must have at most 8 items`.
    pub fn too_many(field: impl Into<String>, actual: usize, max: usize) -> FieldError {
        FieldError {
            reason: "FieldValueTooMany",
            message: format!("Too many: {actual}: must have at most {max} items"),
            field: field.into(),
        }
    }

    /// The line upstream prints: `field: message`.
    pub fn line(&self) -> String {
        format!("{}: {}", self.field, self.message)
    }
}
