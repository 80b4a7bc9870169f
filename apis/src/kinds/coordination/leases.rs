//! Leases (`coordination.k8s.io/v1`): `strategy` and `preferredHolder`
//! (CoordinatedLeaderElection, off in v1.33) are dropped.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, name, st, text, TablePrinter, AGE, NAME};
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

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter =
    TablePrinter { columns: &[NAME, text("Holder", D_LEASE_HOLDER), AGE], row };

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![name(obj), st(obj, &["spec", "holderIdentity"]).into(), age(obj, now)]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_LEASE_HOLDER: &str = "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.";
