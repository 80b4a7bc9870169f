//! CronJobs (`batch/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{
    age, arr, at, boolean, col, containers, format_label_selector, name, since, st, text, time,
    wide, TablePrinter, AGE, CONTAINERS, IMAGES, NAME,
};
use crate::validation::FieldError;
use crate::{defaults, disabled_fields, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct CronJobs;

impl Strategy for CronJobs {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn drop_disabled_fields(&self, obj: &mut Value, old: Option<&Value>) {
        disabled_fields::pod_spec_at(obj, old, disabled_fields::CRON_JOB);
    }

    fn default(&self, obj: &mut Value) {
        defaults::batch::cron_job(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::batch::cron_job(obj, old)
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
        text("Schedule", D_CJ_SCHEDULE),
        text("Timezone", D_CJ_TIMEZONE),
        col("Suspend", "boolean", D_CJ_SUSPEND),
        col("Active", "integer", D_CJ_ACTIVE),
        text("Last Schedule", D_CJ_LAST),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", super::jobs::D_JOB_SELECTOR),
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let last = match time(obj, &["status", "lastScheduleTime"]) {
        Some(t) => since(Some(t), now),
        None => "<none>".to_string(),
    };
    let template = &["spec", "jobTemplate", "spec", "template", "spec", "containers"];
    let (names, images) = containers(at(obj, template));
    vec![
        name(obj),
        st(obj, &["spec", "schedule"]).into(),
        at(obj, &["spec", "timeZone"]).and_then(Value::as_str).unwrap_or("<none>").into(),
        // Defaulted to false when stored.
        if boolean(obj, &["spec", "suspend"]).unwrap_or(false) { "True" } else { "False" }.into(),
        (arr(obj, &["status", "active"]).len() as i64).into(),
        last.into(),
        age(obj, now),
        names.into(),
        images.into(),
        format_label_selector(at(obj, &["spec", "jobTemplate", "spec", "selector"])).into(),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_CJ_SCHEDULE: &str = "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.";
const D_CJ_TIMEZONE: &str = "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones";
const D_CJ_SUSPEND: &str = "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.";
const D_CJ_ACTIVE: &str = "A list of pointers to currently running jobs.";
const D_CJ_LAST: &str = "Information when was the last time the job was successfully scheduled.";
