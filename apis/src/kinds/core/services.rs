//! Services (`v1`): names are DNS-1035 labels; a delete answers with the Service. The
//! cluster IPs and node ports are allocated by the API server's registry (a side effect with
//! storage of its own).

use serde_json::Value;

use crate::strategy::{SelectableField, Strategy};
use crate::tables::Printer;
use crate::validation::{FieldError, NameRule};
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Services;

impl Strategy for Services {
    fn name_rule(&self) -> NameRule {
        NameRule::Dns1035Label
    }

    fn default(&self, obj: &mut Value) {
        defaults::core::service(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::service::service(obj, old)
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[("spec.clusterIP", &["spec", "clusterIP"]), ("spec.type", &["spec", "type"])]
    }

    fn printer(&self) -> Printer {
        Printer::Service
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }
}
