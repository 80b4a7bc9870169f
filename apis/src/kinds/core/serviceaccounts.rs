//! ServiceAccounts (`v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, arr, name, text, TablePrinter, AGE, NAME};
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct ServiceAccounts;

impl Strategy for ServiceAccounts {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::service_account::service_account(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter =
    TablePrinter { columns: &[NAME, text("Secrets", D_SA_SECRETS), AGE], row };

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![name(obj), (arr(obj, &["secrets"]).len() as i64).into(), age(obj, now)]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_SA_SECRETS: &str = "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret";
