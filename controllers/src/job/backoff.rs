//! The back-off before a failed pod is replaced: 10 s after the first failure since the last
//! success, doubling with each further one, at most 10 minutes (upstream's
//! `DefaultJobPodFailureBackOff` and `MaxJobPodFailureBackOff`), counted from when the last
//! failed pod finished.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use rkube_runtime::backoff::exponential;

/// The back-off after the first failure.
pub const DEFAULT_POD_FAILURE_BACKOFF: Duration = Duration::from_secs(10);
/// The longest back-off.
pub const MAX_POD_FAILURE_BACKOFF: Duration = Duration::from_secs(10 * 60);

/// What a Job's back-off is computed from: consecutive failures since the last success and
/// when the last of them happened. Kept in memory only, as upstream does: after a restart the
/// controller starts without back-off.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    pub failures_after_last_success: i32,
    pub last_failure: Option<Timestamp>,
}

impl Record {
    /// The record after pods newly finished (their finish times): any success resets the
    /// count to the failures after the last success.
    pub fn next(&self, mut succeeded: Vec<Timestamp>, mut failed: Vec<Timestamp>) -> Record {
        succeeded.sort_unstable();
        failed.sort_unstable();
        let Some(last_success) = succeeded.last() else {
            let Some(last_failure) = failed.last() else { return self.clone() };
            let more = i32::try_from(failed.len()).unwrap_or(i32::MAX);
            return Record {
                failures_after_last_success: self.failures_after_last_success.saturating_add(more),
                last_failure: Some(*last_failure),
            };
        };
        let after: Vec<&Timestamp> = failed.iter().filter(|f| *f > last_success).collect();
        Record {
            failures_after_last_success: i32::try_from(after.len()).unwrap_or(i32::MAX),
            last_failure: after.last().map(|t| **t),
        }
    }

    /// How long pod creation must still wait at `now`.
    pub fn remaining(&self, now: Timestamp) -> Duration {
        remaining(self.failures_after_last_success, self.last_failure, now)
    }
}

/// How long to wait at `now` after `failures` consecutive failures, the last at
/// `last_failure`.
pub fn remaining(failures: i32, last_failure: Option<Timestamp>, now: Timestamp) -> Duration {
    let Some(last) = last_failure.filter(|_| failures > 0) else { return Duration::ZERO };
    let failures = u32::try_from(failures).unwrap_or(0);
    let backoff = exponential(DEFAULT_POD_FAILURE_BACKOFF, MAX_POD_FAILURE_BACKOFF, failures);
    let elapsed_ms = now.as_millisecond().saturating_sub(last.as_millisecond());
    let elapsed = Duration::from_millis(u64::try_from(elapsed_ms).unwrap_or(0));
    backoff.saturating_sub(elapsed)
}

/// When a pod finished: the last of its containers' finish times when all of them finished,
/// else when it turned not ready, else when it was deleted (less its grace period), else when
/// it was created.
pub fn finished_time(pod: &Pod) -> Timestamp {
    let status = pod.status.as_ref();
    let containers = status.and_then(|s| s.container_statuses.as_ref());
    let mut from_containers: Option<Timestamp> = None;
    let mut all_finished = containers.is_some_and(|c| !c.is_empty());
    for c in containers.into_iter().flatten() {
        match c
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .and_then(|t| t.finished_at.as_ref())
        {
            Some(at) => from_containers = Some(from_containers.map_or(at.0, |t| t.max(at.0))),
            None => all_finished = false,
        }
    }
    if let Some(at) = from_containers.filter(|_| all_finished) {
        return at;
    }
    let not_ready = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .filter(|c| c.status == "False")
        .and_then(|c| c.last_transition_time.as_ref());
    if let Some(at) = not_ready {
        return at.0;
    }
    if let Some(deleted) = &pod.metadata.deletion_timestamp {
        let grace = pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
        let at = deleted.0.as_second().saturating_sub(grace);
        return Timestamp::from_second(at).unwrap_or(deleted.0);
    }
    pod.metadata.creation_timestamp.as_ref().map_or(Timestamp::UNIX_EPOCH, |t| t.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    #[test]
    fn back_off_doubles_from_ten_seconds_up_to_ten_minutes() {
        let now = at(1000);
        assert_eq!(remaining(0, Some(now), now), Duration::ZERO);
        assert_eq!(remaining(1, None, now), Duration::ZERO);
        assert_eq!(remaining(1, Some(now), now), Duration::from_secs(10));
        assert_eq!(remaining(2, Some(now), now), Duration::from_secs(20));
        assert_eq!(remaining(3, Some(at(990)), now), Duration::from_secs(30));
        assert_eq!(remaining(7, Some(now), now), Duration::from_secs(600));
        assert_eq!(remaining(i32::MAX, Some(now), now), Duration::from_secs(600));
        assert_eq!(remaining(1, Some(at(900)), now), Duration::ZERO);
    }

    #[test]
    fn a_success_resets_the_failure_count() {
        let r = Record::default().next(vec![], vec![at(5), at(3)]);
        assert_eq!(r, Record { failures_after_last_success: 2, last_failure: Some(at(5)) });
        assert_eq!(r.next(vec![], vec![]), r);
        let r = r.next(vec![], vec![at(7)]);
        assert_eq!(r, Record { failures_after_last_success: 3, last_failure: Some(at(7)) });
        let r = r.next(vec![at(10)], vec![at(9), at(11), at(12)]);
        assert_eq!(r, Record { failures_after_last_success: 2, last_failure: Some(at(12)) });
        assert_eq!(r.next(vec![at(20)], vec![]), Record::default());
    }
}
