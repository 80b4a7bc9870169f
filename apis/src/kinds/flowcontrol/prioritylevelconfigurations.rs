//! PriorityLevelConfigurations (`flowcontrol.apiserver.k8s.io/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::{Strategy, RESET_FOR_STATUS};
use crate::tables::{age, at, int_or, name, st, text, TablePrinter, AGE, NAME};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct PriorityLevelConfigurations;

impl Strategy for PriorityLevelConfigurations {
    fn tracks_generation(&self) -> bool {
        true
    }

    // Upstream's status strategy puts the old ObjectMeta back whole (managedFields aside).
    fn metadata_kept_on_status_write(&self) -> &'static [&'static str] {
        RESET_FOR_STATUS
    }

    fn default(&self, obj: &mut Value) {
        defaults::flowcontrol::priority_level_configuration(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::flowcontrol::priority_level_configuration(obj, old)
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
        text("Type", D_PL_TYPE),
        text("NominalConcurrencyShares", D_PL_SHARES),
        text("Queues", D_PL_QUEUES),
        text("HandSize", D_PL_HAND),
        text("QueueLengthLimit", D_PL_QLIMIT),
        AGE,
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let none = || Value::from("<none>");
    let (mut shares, mut queues, mut hand, mut limit) = (none(), none(), none(), none());
    if let Some(limited) = at(obj, &["spec", "limited"]).filter(|l| l.is_object()) {
        // v1 defaults, applied when stored.
        shares = int_or(limited, &["nominalConcurrencyShares"], 30).into();
        if let Some(q) = at(limited, &["limitResponse", "queuing"]).filter(|q| q.is_object()) {
            queues = int_or(q, &["queues"], 64).into();
            hand = int_or(q, &["handSize"], 8).into();
            limit = int_or(q, &["queueLengthLimit"], 50).into();
        }
    }
    vec![name(obj), st(obj, &["spec", "type"]).into(), shares, queues, hand, limit, age(obj, now)]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_PL_TYPE: &str = "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required.";
const D_PL_SHARES: &str = "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level. This is used both for requests dispatched from this priority level as well as requests dispatched from other priority levels borrowing seats from this level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum\\[priority level k\\] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense of every other priority level.\n\nIf not specified, this field defaults to a value of 30.\n\nSetting this field to zero supports the construction of a \"jail\" for this priority level that is used to hold some request(s)";
const D_PL_QUEUES: &str = "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.";
const D_PL_HAND: &str = "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on setting this field.  This field has a default value of 8.";
const D_PL_QLIMIT: &str = "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.";
