//! Nodes (`v1`): a kubelet registers its node with its status.

use serde_json::Value;

use crate::strategy::{SelectableField, Strategy};
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Nodes;

impl Strategy for Nodes {
    fn keeps_status_on_create(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        defaults::core::node(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::node::node(obj, old)
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[("spec.unschedulable", &["spec", "unschedulable"])]
    }

    fn printer(&self) -> Printer {
        Printer::Node
    }
}
