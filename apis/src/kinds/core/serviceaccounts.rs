//! ServiceAccounts (`v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct ServiceAccounts;

impl Strategy for ServiceAccounts {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::service_account::service_account(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::ServiceAccount
    }
}
