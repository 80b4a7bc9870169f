//! FlowSchemas (`flowcontrol.apiserver.k8s.io/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::{Strategy, RESET_FOR_STATUS};
use crate::tables::{age, arr, at, int, name, st, text, TablePrinter, AGE, NAME};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct FlowSchemas;

impl Strategy for FlowSchemas {
    fn tracks_generation(&self) -> bool {
        true
    }

    // Upstream's status strategy puts the old ObjectMeta back whole (managedFields aside).
    fn metadata_kept_on_status_write(&self) -> &'static [&'static str] {
        RESET_FOR_STATUS
    }

    fn default(&self, obj: &mut Value) {
        defaults::flowcontrol::flow_schema(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::flowcontrol::flow_schema(obj, old)
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
        text("PriorityLevel", D_FS_PL),
        text("MatchingPrecedence", D_FS_PRECEDENCE),
        text("DistinguisherMethod", D_FS_DISTINGUISHER),
        AGE,
        text("MissingPL", "references a broken or non-existent PriorityLevelConfiguration"),
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let distinguisher = match at(obj, &["spec", "distinguisherMethod"]) {
        Some(d) if d.is_object() => st(d, &["type"]).to_string(),
        _ => "<none>".to_string(),
    };
    let missing = arr(obj, &["status", "conditions"])
        .iter()
        .find(|c| st(c, &["type"]) == "Dangling")
        .map(|c| st(c, &["status"]))
        .unwrap_or("?");
    vec![
        name(obj),
        st(obj, &["spec", "priorityLevelConfiguration", "name"]).into(),
        int(obj, &["spec", "matchingPrecedence"]).into(),
        distinguisher.into(),
        age(obj, now),
        missing.into(),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_FS_PL: &str =
    "`name` is the name of the priority level configuration being referenced Required.";
const D_FS_PRECEDENCE: &str = "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in \\[1,10000\\]. Note that if the precedence is not specified, it will be set to 1000 as default.";
const D_FS_DISTINGUISHER: &str = "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.";
