//! `batch/v1`.

mod cronjobs;
mod jobs;

pub use cronjobs::CronJobs;
pub use jobs::Jobs;
