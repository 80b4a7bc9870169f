//! ServiceCIDRs (`networking.k8s.io/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::{Strategy, RESET_FOR_STATUS};
use crate::tables::{age, at, name, strings, text, TablePrinter, AGE, NAME};
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct ServiceCidrs;

impl Strategy for ServiceCidrs {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::networking::service_cidr(obj, old)
    }

    fn metadata_kept_on_status_write(&self) -> &'static [&'static str] {
        RESET_FOR_STATUS
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter =
    TablePrinter { columns: &[NAME, text("CIDRs", D_SCIDR_CIDRS), AGE], row };

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![name(obj), strings(at(obj, &["spec", "cidrs"])).join(",").into(), age(obj, now)]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_SCIDR_CIDRS: &str = "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable.";
