//! Secrets (`v1`): `stringData` is merged into `data` on every write, as upstream decodes it;
//! keys, size, immutability and a fixed type.

use serde_json::{json, Value};

use crate::strategy::{SelectableField, Strategy};
use crate::tables::Printer;
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

    fn printer(&self) -> Printer {
        Printer::Secret
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
