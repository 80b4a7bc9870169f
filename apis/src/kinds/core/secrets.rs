//! Secrets (`v1`): `stringData` is merged into `data` on every write, as upstream decodes it;
//! keys, size, immutability and a fixed type.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::strategy::{SelectableField, Strategy};
use crate::tables::{age, len, name, or, st, text, TablePrinter, AGE, NAME};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Secrets;

impl Strategy for Secrets {
    fn canonicalize(&self, obj: &mut Value) {
        merge_string_data(obj);
    }

    fn default(&self, obj: &mut Value) {
        defaults::core::secret(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::config::secret(obj, old)
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[("type", &["type"])]
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// A Secret's `stringData` merged into `data` (base64, overriding keys of the same name) and
/// dropped, as upstream does.
fn merge_string_data(obj: &mut Value) {
    use base64::Engine as _;
    let Some(strings) = obj.as_object_mut().and_then(|o| o.remove("stringData")) else {
        return;
    };
    let Some(strings) = strings.as_object().filter(|s| !s.is_empty()) else { return };
    if !obj["data"].is_object() {
        obj["data"] = json!({});
    }
    for (key, value) in strings {
        let text = value.as_str().unwrap_or_default();
        obj["data"][key] = json!(base64::engine::general_purpose::STANDARD.encode(text));
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[NAME, text("Type", D_SECRET_TYPE), text("Data", D_SECRET_DATA), AGE],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(obj),
        or(st(obj, &["type"]), "Opaque").into(),
        (len(obj, &["data"]) as i64).into(),
        age(obj, now),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_SECRET_TYPE: &str = "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types";
const D_SECRET_DATA: &str = "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4";
