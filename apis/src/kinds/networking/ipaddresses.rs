//! IPAddresses (`networking.k8s.io/v1`): named by the address they hold.

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation;
use crate::validation::{FieldError, NameRule};

/// The strategy of this resource.
#[derive(Debug)]
pub struct IpAddresses;

impl Strategy for IpAddresses {
    fn name_rule(&self) -> NameRule {
        NameRule::IpAddress
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::networking::ip_address(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::IpAddress
    }
}
