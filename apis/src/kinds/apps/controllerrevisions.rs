//! ControllerRevisions (`apps/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, arr, boolean, int, name, st, text, TablePrinter, AGE, NAME};
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct ControllerRevisions;

impl Strategy for ControllerRevisions {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::apps::controller_revision(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[
        NAME,
        text("Controller", "Controller of the object"),
        text("Revision", D_CR_REVISION),
        AGE,
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let owner = arr(obj, &["metadata", "ownerReferences"])
        .iter()
        .find(|o| boolean(o, &["controller"]) == Some(true));
    let controller = match owner {
        Some(o) => {
            // `group/version` or `version`; the group is what names the kind.
            let api_version = st(o, &["apiVersion"]);
            let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
            let kind = st(o, &["kind"]);
            let name = st(o, &["name"]);
            match (kind, group) {
                ("", "") => name.to_string(),
                (kind, "") => format!("{}/{name}", kind.to_lowercase()),
                (kind, group) => {
                    format!("{}/{name}", format!("{kind}.{group}").to_lowercase())
                }
            }
        }
        None => "<none>".to_string(),
    };
    vec![name(obj), controller.into(), int(obj, &["revision"]).into(), age(obj, now)]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_CR_REVISION: &str = "Revision indicates the revision of the state represented by Data.";
