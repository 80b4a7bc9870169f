//! Conditions, and how a rollout's progress is judged: `Progressing` is True while the new
//! ReplicaSet moves (its reason says how far), True `NewReplicaSetAvailable` once the rollout
//! is complete, False `ProgressDeadlineExceeded` when nothing moved for
//! `progressDeadlineSeconds`, Unknown while paused. `ReplicaFailure` mirrors the new
//! ReplicaSet's (pods it cannot create).

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::replica_sets::{deployment_replicas, name};
use super::status::{calculate_status, normalized, unchanged};
use super::{Error, Rollout};

pub(super) const AVAILABLE: &str = "Available";
pub(super) const PROGRESSING: &str = "Progressing";
pub(super) const REPLICA_FAILURE: &str = "ReplicaFailure";

pub(super) const MINIMUM_REPLICAS_AVAILABLE: &str = "MinimumReplicasAvailable";
pub(super) const MINIMUM_REPLICAS_UNAVAILABLE: &str = "MinimumReplicasUnavailable";
pub(super) const NEW_RS_CREATED: &str = "NewReplicaSetCreated";
pub(super) const FOUND_NEW_RS: &str = "FoundNewReplicaSet";
pub(super) const RS_UPDATED: &str = "ReplicaSetUpdated";
pub(super) const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
pub(super) const TIMED_OUT: &str = "ProgressDeadlineExceeded";
pub(super) const PAUSED: &str = "DeploymentPaused";
pub(super) const RESUMED: &str = "DeploymentResumed";
pub(super) const FAILED_RS_CREATE: &str = "ReplicaSetCreateError";

/// Now, to the second: the API stores times to the second, and a condition written with more
/// would never compare equal to itself read back.
pub(super) fn now() -> Time {
    let now = Timestamp::now();
    Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
}

pub(super) fn condition<'a>(
    status: Option<&'a DeploymentStatus>,
    type_: &str,
) -> Option<&'a DeploymentCondition> {
    status?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

pub(super) fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: impl Into<String>,
    now: &Time,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
    }
}

/// Sets a condition: nothing changes if one of its type has the same status and reason; one
/// with the same status keeps its lastTransitionTime. A replaced condition moves to the end.
pub(super) fn set_condition(status: &mut DeploymentStatus, mut new: DeploymentCondition) {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    if let Some(current) = conditions.iter().find(|c| c.type_ == new.type_) {
        if current.status == new.status && current.reason == new.reason {
            return;
        }
        if current.status == new.status {
            new.last_transition_time = current.last_transition_time.clone();
        }
    }
    conditions.retain(|c| c.type_ != new.type_);
    conditions.push(new);
}

pub(super) fn remove_condition(status: &mut DeploymentStatus, type_: &str) {
    if let Some(conditions) = status.conditions.as_mut() {
        conditions.retain(|c| c.type_ != type_);
    }
}

/// `progressDeadlineSeconds`, unless unset or "never" (MaxInt32).
fn deadline(d: &Deployment) -> Option<i32> {
    d.spec.as_ref()?.progress_deadline_seconds.filter(|s| *s != i32::MAX)
}

pub(super) fn has_progress_deadline(d: &Deployment) -> bool {
    deadline(d).is_some()
}

fn count(v: Option<i32>) -> i32 {
    v.unwrap_or(0)
}

/// Every pod is updated and available, none old is left, and this generation was seen.
pub(super) fn complete(d: &Deployment, status: &DeploymentStatus) -> bool {
    let replicas = deployment_replicas(d);
    count(status.updated_replicas) == replicas
        && count(status.replicas) == replicas
        && count(status.available_replicas) == replicas
        && status.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0)
}

/// Whether `new` moved on from the Deployment's current status: more updated, ready or
/// available pods, or fewer old ones.
pub(super) fn progressing(d: &Deployment, new: &DeploymentStatus) -> bool {
    let old = d.status.clone().unwrap_or_default();
    let old_old = count(old.replicas) - count(old.updated_replicas);
    let new_old = count(new.replicas) - count(new.updated_replicas);
    count(new.updated_replicas) > count(old.updated_replicas)
        || new_old < old_old
        || count(new.ready_replicas) > count(old.ready_replicas)
        || count(new.available_replicas) > count(old.available_replicas)
}

/// Whether the deadline passed since the Progressing condition last moved.
pub(super) fn timed_out(d: &Deployment, new: &DeploymentStatus, now: &Time) -> bool {
    let Some(seconds) = deadline(d) else { return false };
    let Some(c) = condition(Some(new), PROGRESSING) else { return false };
    match c.reason.as_deref() {
        // A finished rollout does not time out until a new one starts.
        Some(NEW_RS_AVAILABLE) => false,
        Some(TIMED_OUT) => true,
        // A condition without a time is as old as can be (Go's zero time).
        _ => c.last_update_time.as_ref().is_none_or(|from| {
            from.0
                .checked_add(SignedDuration::from_secs(seconds.into()))
                .is_ok_and(|due| due < now.0)
        }),
    }
}

/// The Progressing condition for pausing and resuming (so the time spent paused does not
/// count against the deadline); true when the status changed. A deadline already exceeded
/// stays reported.
pub(super) fn set_paused_condition(d: &mut Deployment, now: &Time) -> bool {
    if !has_progress_deadline(d) {
        return false;
    }
    let reason = condition(d.status.as_ref(), PROGRESSING).and_then(|c| c.reason.clone());
    if reason.as_deref() == Some(TIMED_OUT) {
        return false;
    }
    let paused_reported = reason.as_deref() == Some(PAUSED);
    let paused = d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false);
    let condition = if paused && !paused_reported {
        new_condition(PROGRESSING, "Unknown", PAUSED, "Deployment is paused", now)
    } else if !paused && paused_reported {
        new_condition(PROGRESSING, "Unknown", RESUMED, "Deployment is resumed", now)
    } else {
        return false;
    };
    set_condition(d.status.get_or_insert_with(Default::default), condition);
    true
}

/// The first ReplicaFailure condition of the new ReplicaSet, else of any other.
pub(super) fn replica_failure(
    all: &[ReplicaSet],
    new: Option<&ReplicaSet>,
) -> Option<DeploymentCondition> {
    let failure = |rs: &ReplicaSet| {
        let c =
            rs.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == REPLICA_FAILURE)?;
        Some(DeploymentCondition {
            type_: c.type_.clone(),
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
            last_update_time: c.last_transition_time.clone(),
            last_transition_time: c.last_transition_time.clone(),
        })
    };
    new.and_then(failure).or_else(|| all.iter().find_map(failure))
}

/// The status of a Deployment rolling out: counts, `Available`, and `Progressing` judged
/// against the status it has now.
pub(super) fn rollout_status(
    d: &Deployment,
    all: &[ReplicaSet],
    new: Option<&ReplicaSet>,
    now: &Time,
) -> DeploymentStatus {
    let mut status = calculate_status(all, new, d, now);
    if !has_progress_deadline(d) {
        remove_condition(&mut status, PROGRESSING);
    }
    let current = condition(d.status.as_ref(), PROGRESSING);
    // Only one ReplicaSet and already reported complete: a resync, nothing to judge.
    let already_complete = status.replicas == status.updated_replicas
        && current.is_some_and(|c| c.reason.as_deref() == Some(NEW_RS_AVAILABLE));
    if has_progress_deadline(d) && !already_complete {
        let deployment = d.metadata.name.as_deref().unwrap_or_default();
        let subject = match new {
            Some(rs) => format!("ReplicaSet {:?}", name(rs)),
            None => format!("Deployment {deployment:?}"),
        };
        if complete(d, &status) {
            let message = format!("{subject} has successfully progressed.");
            set_condition(
                &mut status,
                new_condition(PROGRESSING, "True", NEW_RS_AVAILABLE, message, now),
            );
        } else if progressing(d, &status) {
            // Progress moves lastUpdateTime even with the same reason (which set_condition
            // would not), and keeps lastTransitionTime while the status stays True.
            let message = format!("{subject} is progressing.");
            let mut c = new_condition(PROGRESSING, "True", RS_UPDATED, message, now);
            if let Some(current) = current {
                if current.status == "True" {
                    c.last_transition_time = current.last_transition_time.clone();
                }
                remove_condition(&mut status, PROGRESSING);
            }
            set_condition(&mut status, c);
        } else if timed_out(d, &status, now) {
            let message = format!("{subject} has timed out progressing.");
            set_condition(
                &mut status,
                new_condition(PROGRESSING, "False", TIMED_OUT, message, now),
            );
        }
    }
    match replica_failure(all, new) {
        Some(c) => set_condition(&mut status, c),
        None => remove_condition(&mut status, REPLICA_FAILURE),
    }
    normalized(status)
}

/// When to look at a Deployment again to notice its deadline passing.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Requeue {
    /// Less than a second left: soon, rate-limited.
    Soon,
    After(Duration),
}

/// For a rollout in progress (not complete, not timed out), when its deadline is due.
pub(super) fn deadline_requeue(
    d: &Deployment,
    new: &DeploymentStatus,
    now: &Time,
) -> Option<Requeue> {
    let seconds = deadline(d)?;
    let current = condition(d.status.as_ref(), PROGRESSING)?;
    if complete(d, new) || current.reason.as_deref() == Some(TIMED_OUT) {
        return None;
    }
    let from = current.last_update_time.as_ref().map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    let due = from.checked_add(SignedDuration::from_secs(seconds.into())).ok()?;
    let left = Duration::try_from(due.duration_since(now.0)).unwrap_or_default();
    if left < Duration::from_secs(1) {
        return Some(Requeue::Soon);
    }
    // A second more, so the check does not come a little early.
    Some(Requeue::After(left + Duration::from_secs(1)))
}

impl Rollout<'_> {
    /// Reports pausing and resuming in the Progressing condition.
    pub(super) async fn check_paused_conditions(&mut self) -> Result<(), Error> {
        if !set_paused_condition(&mut self.d, &now()) {
            return Ok(());
        }
        self.update_status().await
    }

    /// Writes the rollout's status when it changed; otherwise makes sure the deadline will be
    /// checked in time.
    pub(super) async fn sync_rollout_status(
        &mut self,
        all: &[ReplicaSet],
        new: Option<&ReplicaSet>,
    ) -> Result<(), Error> {
        let now = now();
        let status = rollout_status(&self.d, all, new, &now);
        if unchanged(&self.d, &status) {
            match deadline_requeue(&self.d, &status, &now) {
                Some(Requeue::Soon) => self.ctl.queue.add_rate_limited(self.key.clone()),
                Some(Requeue::After(after)) => self.ctl.queue.add_after(self.key.clone(), after),
                None => {}
            }
            return Ok(());
        }
        self.d.status = Some(status);
        self.update_status().await
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{deployment, rs};
    use super::*;
    use k8s_openapi::api::apps::v1::{ReplicaSetCondition, ReplicaSetStatus};

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap())
    }

    fn progressing_condition(d: &Deployment) -> (String, String, Option<Time>, Option<Time>) {
        let c = condition(d.status.as_ref(), PROGRESSING).unwrap();
        (
            c.status.clone(),
            c.reason.clone().unwrap(),
            c.last_update_time.clone(),
            c.last_transition_time.clone(),
        )
    }

    #[test]
    fn set_condition_keeps_transition_time_and_ignores_repeats() {
        let mut status = DeploymentStatus::default();
        set_condition(&mut status, new_condition(AVAILABLE, "True", "A", "a", &at(1)));
        set_condition(&mut status, new_condition(PROGRESSING, "True", "P", "p", &at(1)));
        // Same status and reason: nothing changes, not even the time.
        set_condition(&mut status, new_condition(AVAILABLE, "True", "A", "other", &at(5)));
        let a = condition(Some(&status), AVAILABLE).unwrap();
        assert_eq!((a.message.as_deref(), a.last_update_time.clone()), (Some("a"), Some(at(1))));
        // Same status, new reason: transition time kept, moved to the end.
        set_condition(&mut status, new_condition(AVAILABLE, "True", "B", "b", &at(7)));
        let conditions = status.conditions.clone().unwrap();
        assert_eq!(conditions[1].type_, AVAILABLE);
        assert_eq!(conditions[1].last_update_time, Some(at(7)));
        assert_eq!(conditions[1].last_transition_time, Some(at(1)));
        // New status: both times new.
        set_condition(&mut status, new_condition(AVAILABLE, "False", "C", "c", &at(9)));
        let a = condition(Some(&status), AVAILABLE).unwrap();
        assert_eq!(a.last_transition_time, Some(at(9)));
        remove_condition(&mut status, AVAILABLE);
        assert!(condition(Some(&status), AVAILABLE).is_none());
        assert_eq!(status.conditions.unwrap().len(), 1);
    }

    #[test]
    fn a_rollout_moves_from_created_to_progressing_to_complete() {
        let mut d = deployment(2);
        let mut status = DeploymentStatus::default();
        set_condition(
            &mut status,
            new_condition(
                PROGRESSING,
                "True",
                NEW_RS_CREATED,
                "Created new replica set \"web-1\"",
                &at(10),
            ),
        );
        d.status = Some(status);
        // Two pods created, none available yet: progress.
        let new = rs("web-1", 2, 0, 0);
        let status = rollout_status(&d, std::slice::from_ref(&new), Some(&new), &at(20));
        d.status = Some(status);
        let (s, reason, update, transition) = progressing_condition(&d);
        assert_eq!((s.as_str(), reason.as_str()), ("True", RS_UPDATED));
        assert_eq!((update, transition), (Some(at(20)), Some(at(10))));
        let message = condition(d.status.as_ref(), PROGRESSING).unwrap().message.clone();
        assert_eq!(message.as_deref(), Some("ReplicaSet \"web-1\" is progressing."));
        // Nothing moved: nothing changes.
        let again = rollout_status(&d, std::slice::from_ref(&new), Some(&new), &at(30));
        assert!(unchanged(&d, &again));
        assert_eq!(
            deadline_requeue(&d, &again, &at(30)),
            Some(Requeue::After(Duration::from_secs(591)))
        );
        // All available: complete.
        let new = rs("web-1", 2, 2, 0);
        let status = rollout_status(&d, std::slice::from_ref(&new), Some(&new), &at(40));
        d.status = Some(status.clone());
        let (s, reason, _, transition) = progressing_condition(&d);
        assert_eq!(
            (s.as_str(), reason.as_str(), transition),
            ("True", NEW_RS_AVAILABLE, Some(at(10)))
        );
        let message = condition(d.status.as_ref(), PROGRESSING).unwrap().message.clone();
        assert_eq!(message.as_deref(), Some("ReplicaSet \"web-1\" has successfully progressed."));
        assert_eq!(deadline_requeue(&d, &status, &at(40)), None);
        // A resync of a complete rollout changes nothing, long after the deadline too.
        let later = rollout_status(&d, std::slice::from_ref(&new), Some(&new), &at(4000));
        assert!(unchanged(&d, &later));
    }

    #[test]
    fn no_progress_past_the_deadline_times_out() {
        let mut d = deployment(2);
        let new = rs("web-1", 2, 0, 0);
        let mut status = calculate_status(std::slice::from_ref(&new), Some(&new), &d, &at(100));
        set_condition(&mut status, new_condition(PROGRESSING, "True", RS_UPDATED, "x", &at(100)));
        d.status = Some(status);
        // Not yet: 600 s from 100 is 700.
        let status = rollout_status(&d, std::slice::from_ref(&new), Some(&new), &at(700));
        assert!(unchanged(&d, &status));
        let two = Duration::from_secs(2);
        assert_eq!(deadline_requeue(&d, &status, &at(699)), Some(Requeue::After(two)));
        assert_eq!(deadline_requeue(&d, &status, &at(700)), Some(Requeue::Soon));
        let status = rollout_status(&d, std::slice::from_ref(&new), Some(&new), &at(701));
        d.status = Some(status.clone());
        let (s, reason, _, transition) = progressing_condition(&d);
        assert_eq!((s.as_str(), reason.as_str(), transition), ("False", TIMED_OUT, Some(at(701))));
        let message = condition(d.status.as_ref(), PROGRESSING).unwrap().message.clone();
        assert_eq!(message.as_deref(), Some("ReplicaSet \"web-1\" has timed out progressing."));
        // Timed out stays so, with no requeue, until progress is made.
        assert_eq!(deadline_requeue(&d, &status, &at(800)), None);
        let new = rs("web-1", 2, 1, 0);
        let status = rollout_status(&d, std::slice::from_ref(&new), Some(&new), &at(900));
        d.status = Some(status);
        let (s, reason, _, transition) = progressing_condition(&d);
        assert_eq!((s.as_str(), reason.as_str(), transition), ("True", RS_UPDATED, Some(at(900))));
    }

    #[test]
    fn without_a_deadline_there_is_no_progressing_condition() {
        let mut d = deployment(1);
        d.spec.as_mut().unwrap().progress_deadline_seconds = Some(i32::MAX);
        let mut status = DeploymentStatus::default();
        set_condition(&mut status, new_condition(PROGRESSING, "True", RS_UPDATED, "x", &at(1)));
        d.status = Some(status);
        let new = rs("web-1", 1, 1, 0);
        let status = rollout_status(&d, std::slice::from_ref(&new), Some(&new), &at(2));
        assert!(condition(Some(&status), PROGRESSING).is_none());
        assert!(condition(Some(&status), AVAILABLE).is_some());
        assert!(!set_paused_condition(&mut d, &at(2)));
    }

    #[test]
    fn pausing_and_resuming_are_reported_unless_timed_out() {
        let mut d = deployment(1);
        d.spec.as_mut().unwrap().paused = Some(true);
        assert!(set_paused_condition(&mut d, &at(1)));
        let (s, reason, _, _) = progressing_condition(&d);
        assert_eq!((s.as_str(), reason.as_str()), ("Unknown", PAUSED));
        let message = condition(d.status.as_ref(), PROGRESSING).unwrap().message.clone();
        assert_eq!(message.as_deref(), Some("Deployment is paused"));
        assert!(!set_paused_condition(&mut d, &at(2)));
        d.spec.as_mut().unwrap().paused = Some(false);
        assert!(set_paused_condition(&mut d, &at(3)));
        let (s, reason, _, transition) = progressing_condition(&d);
        assert_eq!((s.as_str(), reason.as_str(), transition), ("Unknown", RESUMED, Some(at(1))));
        assert!(!set_paused_condition(&mut d, &at(4)));
        // The deadline counts from the resume, not from before the pause.
        assert!(!timed_out(&d, d.status.as_ref().unwrap(), &at(603)));
        assert!(timed_out(&d, d.status.as_ref().unwrap(), &at(604)));
        let mut timed_out = d.clone();
        set_condition(
            timed_out.status.as_mut().unwrap(),
            new_condition(PROGRESSING, "False", TIMED_OUT, "x", &at(5)),
        );
        timed_out.spec.as_mut().unwrap().paused = Some(true);
        assert!(!set_paused_condition(&mut timed_out, &at(6)));
    }

    #[test]
    fn replica_failures_come_from_the_new_replica_set_first() {
        let failing = |name: &str, message: &str| {
            let mut r = rs(name, 1, 0, 0);
            r.status = Some(ReplicaSetStatus {
                conditions: Some(vec![ReplicaSetCondition {
                    type_: REPLICA_FAILURE.into(),
                    status: "True".into(),
                    reason: Some("FailedCreate".into()),
                    message: Some(message.into()),
                    last_transition_time: Some(at(3)),
                }]),
                ..ReplicaSetStatus::default()
            });
            r
        };
        let old = failing("old", "old failure");
        let new = failing("new", "forbidden: exceeded quota");
        let all = [old.clone(), new.clone()];
        let c = replica_failure(&all, Some(&new)).unwrap();
        assert_eq!(c.message.as_deref(), Some("forbidden: exceeded quota"));
        assert_eq!(
            (c.last_update_time.clone(), c.last_transition_time),
            (Some(at(3)), Some(at(3)))
        );
        let healthy = rs("new", 1, 1, 0);
        let c = replica_failure(&[old.clone(), healthy.clone()], Some(&healthy)).unwrap();
        assert_eq!(c.message.as_deref(), Some("old failure"));
        assert!(replica_failure(std::slice::from_ref(&healthy), Some(&healthy)).is_none());
        let mut d = deployment(1);
        let status = rollout_status(&d, &all, Some(&new), &at(4));
        assert_eq!(
            condition(Some(&status), REPLICA_FAILURE).unwrap().reason.as_deref(),
            Some("FailedCreate")
        );
        d.status = Some(status);
        let status = rollout_status(&d, std::slice::from_ref(&healthy), Some(&healthy), &at(5));
        assert!(condition(Some(&status), REPLICA_FAILURE).is_none());
    }
}
