//! A Job's status conditions, as upstream's job controller writes them: a condition gets
//! `lastProbeTime` and `lastTransitionTime` when it is added or changes, and is never added
//! as `False` (going from nothing to `False` says nothing).

use k8s_openapi::api::batch::v1::{Job, JobCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

pub const COMPLETE: &str = "Complete";
pub const FAILED: &str = "Failed";
pub const SUSPENDED: &str = "Suspended";
/// The interim condition of a Job that will fail once its pods are gone.
pub const FAILURE_TARGET: &str = "FailureTarget";
/// The interim condition of a Job that will complete once its pods are gone.
pub const SUCCESS_CRITERIA_MET: &str = "SuccessCriteriaMet";

pub const REASON_BACKOFF_LIMIT_EXCEEDED: &str = "BackoffLimitExceeded";
pub const REASON_DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
pub const REASON_POD_FAILURE_POLICY: &str = "PodFailurePolicy";
pub const REASON_FAILED_INDEXES: &str = "FailedIndexes";
pub const REASON_MAX_FAILED_INDEXES_EXCEEDED: &str = "MaxFailedIndexesExceeded";
pub const REASON_COMPLETIONS_REACHED: &str = "CompletionsReached";
pub const REASON_SUCCESS_POLICY: &str = "SuccessPolicy";

/// A condition as of `now`; an empty reason or message is left out.
pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> JobCondition {
    let text = |s: &str| (!s.is_empty()).then(|| s.to_string());
    JobCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: text(reason),
        message: text(message),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

pub fn find<'a>(conditions: &'a [JobCondition], type_: &str) -> Option<&'a JobCondition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The condition of that type when it is `True`.
pub fn find_true<'a>(conditions: &'a [JobCondition], type_: &str) -> Option<&'a JobCondition> {
    find(conditions, type_).filter(|c| c.status == "True")
}

/// Sets the condition of `type_` to status, reason and message: replaced (with new times)
/// when any of them differs, added when missing unless it would be `False`. Whether the list
/// changed.
pub fn ensure(
    conditions: &mut Vec<JobCondition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> bool {
    let fresh = new_condition(type_, status, reason, message, now);
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) => {
            let same = existing.status == fresh.status
                && existing.reason == fresh.reason
                && existing.message == fresh.message;
            if !same {
                *existing = fresh;
            }
            !same
        }
        None if status != "False" => {
            conditions.push(fresh);
            true
        }
        None => false,
    }
}

/// Whether the Job finished: `Complete` or `Failed` is `True`.
pub fn is_finished(job: &Job) -> bool {
    let conditions = job.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default();
    conditions.iter().any(|c| (c.type_ == COMPLETE || c.type_ == FAILED) && c.status == "True")
}

/// The final condition an interim one leads to: `FailureTarget` to `Failed`,
/// `SuccessCriteriaMet` to `Complete`, with the same reason and message.
pub fn terminal_for(interim: &JobCondition, now: Timestamp) -> JobCondition {
    let type_ = if interim.type_ == SUCCESS_CRITERIA_MET { COMPLETE } else { FAILED };
    new_condition(
        type_,
        "True",
        interim.reason.as_deref().unwrap_or(""),
        interim.message.as_deref().unwrap_or(""),
        now,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::JobStatus;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    #[test]
    fn conditions_keep_their_times_until_they_change() {
        let mut list = Vec::new();
        assert!(!ensure(&mut list, SUSPENDED, "False", "JobResumed", "Job resumed", at(1)));
        assert!(list.is_empty());
        assert!(ensure(&mut list, SUSPENDED, "True", "JobSuspended", "Job suspended", at(2)));
        assert_eq!(list[0].last_transition_time, Some(Time(at(2))));
        assert_eq!(list[0].last_probe_time, Some(Time(at(2))));
        assert!(!ensure(&mut list, SUSPENDED, "True", "JobSuspended", "Job suspended", at(3)));
        assert_eq!(list[0].last_transition_time, Some(Time(at(2))));
        assert!(ensure(&mut list, SUSPENDED, "False", "JobResumed", "Job resumed", at(4)));
        assert_eq!(
            (list.len(), list[0].status.as_str(), list[0].reason.as_deref()),
            (1, "False", Some("JobResumed"))
        );
        assert_eq!(list[0].last_transition_time, Some(Time(at(4))));
        let c = new_condition(COMPLETE, "True", "", "", at(5));
        assert_eq!((c.reason, c.message), (None, None));
    }

    #[test]
    fn interim_conditions_lead_to_terminal_ones() {
        let target =
            new_condition(FAILURE_TARGET, "True", REASON_BACKOFF_LIMIT_EXCEEDED, "m", at(1));
        let failed = terminal_for(&target, at(2));
        assert_eq!(
            (failed.type_.as_str(), failed.reason.as_deref()),
            (FAILED, Some("BackoffLimitExceeded"))
        );
        let met =
            new_condition(SUCCESS_CRITERIA_MET, "True", REASON_COMPLETIONS_REACHED, "m", at(1));
        let complete = terminal_for(&met, at(2));
        assert_eq!((complete.type_.as_str(), complete.message.as_deref()), (COMPLETE, Some("m")));
        let mut job = Job::default();
        assert!(!is_finished(&job));
        job.status =
            Some(JobStatus { conditions: Some(vec![met, complete]), ..Default::default() });
        assert!(is_finished(&job));
        job.status.as_mut().unwrap().conditions.as_mut().unwrap()[1].status = "False".into();
        assert!(!is_finished(&job));
    }
}
