//! CronJobs (`batch/v1`).

use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::Printer;
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

    fn printer(&self) -> Printer {
        Printer::CronJob
    }
}
