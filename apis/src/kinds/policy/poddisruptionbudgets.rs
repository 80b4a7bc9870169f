//! PodDisruptionBudgets (`policy/v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct PodDisruptionBudgets;

impl Strategy for PodDisruptionBudgets {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::policy::pod_disruption_budget(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::PodDisruptionBudget
    }
}
