//! Leases (`coordination.k8s.io/v1`): `strategy` and `preferredHolder`
//! (CoordinatedLeaderElection, off in v1.33) are dropped.

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{disabled_fields, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Leases;

impl Strategy for Leases {
    fn drop_disabled_fields(&self, obj: &mut Value, _old: Option<&Value>) {
        disabled_fields::lease(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::coordination::lease(obj, old)
    }

    fn printer(&self) -> Printer {
        Printer::Lease
    }
}
