//! The rolling update: the new ReplicaSet grows while the total stays within
//! `replicas + maxSurge`, old ones shrink while the available pods stay at least
//! `replicas - maxUnavailable`. Each sync takes one step (grow, else shrink) and lets the
//! ReplicaSets' status changes bring it back for the next.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::progress::complete;
use super::replica_sets::{
    active, available_replica_count, available_replicas, by_creation, deployment_replicas,
    replica_count, spec_replicas,
};
use super::surge::{max_unavailable, strategy_type, surge_only, RECREATE, ROLLING_UPDATE};
use super::sync::all_of;
use super::{Error, Rollout};

/// The size the new ReplicaSet may have now: for a rolling update, as much more as keeps the
/// total within `replicas + maxSurge` (never beyond `replicas`); for Recreate, everything.
pub(super) fn new_rs_new_replicas(
    d: &Deployment,
    all: &[ReplicaSet],
    new: &ReplicaSet,
) -> Result<i32, Error> {
    let replicas = deployment_replicas(d);
    match strategy_type(d) {
        ROLLING_UPDATE => {
            let surge = surge_only(d).map_err(Error::Invalid)?;
            let max_total = replicas + surge;
            let current = replica_count(all);
            if current >= max_total {
                return Ok(spec_replicas(new));
            }
            let up = (max_total - current).min(replicas - spec_replicas(new));
            Ok(spec_replicas(new) + up)
        }
        RECREATE => Ok(replicas),
        other => Err(Error::Invalid(format!("deployment type {other} isn't supported"))),
    }
}

/// How many old pods may go now: what the total exceeds the minimum available by, less the
/// new pods not available yet (they may never be, and must not be counted on).
pub(super) fn max_scaled_down(d: &Deployment, all: &[ReplicaSet], new: &ReplicaSet) -> i32 {
    let min_available = deployment_replicas(d) - max_unavailable(d);
    let new_unavailable = spec_replicas(new) - available_replicas(new);
    replica_count(all) - min_available - new_unavailable
}

/// New sizes of the old ReplicaSets (oldest first) after removing up to `budget` of their
/// unavailable pods: those cost no availability, and left alone they could block the rollout.
pub(super) fn cleanup_unhealthy_sizes(old: &[ReplicaSet], budget: i32) -> Vec<i32> {
    let mut removed = 0;
    old.iter()
        .map(|rs| {
            let (size, available) = (spec_replicas(rs), available_replicas(rs));
            if removed >= budget || size == 0 || size <= available {
                return size;
            }
            let down = (budget - removed).min(size - available);
            removed += down;
            size - down
        })
        .collect()
}

/// New sizes of the old ReplicaSets (oldest first) taking away what the available pods
/// (`available` in all) exceed `min_available` by.
pub(super) fn scale_down_sizes(old: &[ReplicaSet], available: i32, min_available: i32) -> Vec<i32> {
    let budget = available - min_available;
    let mut removed = 0;
    old.iter()
        .map(|rs| {
            let size = spec_replicas(rs);
            if budget <= 0 || removed >= budget || size == 0 {
                return size;
            }
            let down = size.min(budget - removed);
            removed += down;
            size - down
        })
        .collect()
}

impl Rollout<'_> {
    pub(super) async fn rollout_rolling(&mut self) -> Result<(), Error> {
        let (new, old) = self.get_all_replica_sets_and_sync_revision(true).await?;
        let new = new.ok_or_else(|| Error::Invalid("no new replica set was made".into()))?;
        if self.reconcile_new_replica_set(&all_of(&old, Some(&new)), &new).await? {
            return self.sync_rolling_status(&old, &new).await;
        }
        let new = self.fresh(&new);
        if self.reconcile_old_replica_sets(&all_of(&old, Some(&new)), &active(&old), &new).await? {
            return self.sync_rolling_status(&old, &new).await;
        }
        if self.d.status.as_ref().is_some_and(|s| complete(&self.d, s)) {
            self.cleanup_deployment(&old).await?;
        }
        self.sync_rolling_status(&old, &new).await
    }

    async fn sync_rolling_status(
        &mut self,
        old: &[ReplicaSet],
        new: &ReplicaSet,
    ) -> Result<(), Error> {
        let (old, new) = (self.fresh_all(old), self.fresh(new));
        self.sync_rollout_status(&all_of(&old, Some(&new)), Some(&new)).await
    }

    /// Grows the new ReplicaSet as far as the surge allows (or shrinks it to the
    /// Deployment's size); true when it was scaled.
    async fn reconcile_new_replica_set(
        &mut self,
        all: &[ReplicaSet],
        new: &ReplicaSet,
    ) -> Result<bool, Error> {
        let replicas = deployment_replicas(&self.d);
        let size = spec_replicas(new);
        if size == replicas {
            return Ok(false);
        }
        let target =
            if size > replicas { replicas } else { new_rs_new_replicas(&self.d, all, new)? };
        Ok(self.scale_replica_set_and_record_event(new, target).await?.0)
    }

    /// Shrinks old ReplicaSets as far as availability allows: unavailable pods first, then
    /// the oldest ReplicaSets' pods. True when something was scaled.
    async fn reconcile_old_replica_sets(
        &mut self,
        all: &[ReplicaSet],
        old: &[ReplicaSet],
        new: &ReplicaSet,
    ) -> Result<bool, Error> {
        if replica_count(old) == 0 {
            return Ok(false);
        }
        let budget = max_scaled_down(&self.d, all, new);
        if budget <= 0 {
            return Ok(false);
        }
        let mut old = old.to_vec();
        old.sort_by(by_creation);
        let mut scaled = false;
        for (i, size) in cleanup_unhealthy_sizes(&old, budget).into_iter().enumerate() {
            let (was_scaled, updated) =
                self.scale_replica_set_and_record_event(&old[i], size).await?;
            scaled |= was_scaled;
            old[i] = updated;
        }
        let min_available = deployment_replicas(&self.d) - max_unavailable(&self.d);
        let available = available_replica_count(&all_of(&old, Some(new)));
        for (i, size) in scale_down_sizes(&old, available, min_available).into_iter().enumerate() {
            scaled |= self.scale_replica_set_and_record_event(&old[i].clone(), size).await?.0;
        }
        Ok(scaled)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{deployment, rolling, rs};
    use super::*;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::{self, Int};

    fn d(replicas: i32, surge: IntOrString, unavailable: IntOrString) -> Deployment {
        rolling(deployment(replicas), surge, unavailable)
    }

    /// Upstream's reconcileNewReplicaSet cases: (replicas, maxSurge, old size, new size,
    /// expected new size).
    #[test]
    fn the_new_replica_set_grows_within_the_surge() {
        let cases = [
            (1, 0, 10, 0, 0),
            (10, 0, 10, 0, 0),
            (10, 2, 10, 0, 2),
            (10, 2, 5, 0, 7),
            (10, 2, 10, 2, 2),
            (3, 1, 3, 1, 1),
            (3, 1, 2, 1, 2),
            (3, 5, 0, 0, 3), // never beyond the Deployment's size
        ];
        for (replicas, surge, old_size, new_size, expected) in cases {
            let d = d(replicas, Int(surge), Int(0));
            let new = rs("new", new_size, 0, 2);
            let all = [rs("old", old_size, old_size, 1), new.clone()];
            assert_eq!(
                new_rs_new_replicas(&d, &all, &new).unwrap(),
                expected,
                "{replicas} replicas, surge {surge}, old {old_size}, new {new_size}"
            );
        }
        let percent = d(10, IntOrString::String("25%".into()), Int(0));
        let new = rs("new", 0, 0, 2);
        assert_eq!(
            new_rs_new_replicas(&percent, &[rs("old", 10, 10, 1), new.clone()], &new).unwrap(),
            3
        );
        let mut recreate = deployment(4);
        recreate.spec.as_mut().unwrap().strategy.as_mut().unwrap().type_ = Some(RECREATE.into());
        assert_eq!(new_rs_new_replicas(&recreate, std::slice::from_ref(&new), &new).unwrap(), 4);
        recreate.spec.as_mut().unwrap().strategy.as_mut().unwrap().type_ = Some("Other".into());
        assert!(new_rs_new_replicas(&recreate, std::slice::from_ref(&new), &new).is_err());
    }

    /// Upstream's reconcileOldReplicaSets cases, through the budget and both steps:
    /// (replicas, maxUnavailable, old size, new size, old available, new available,
    /// expected old size).
    #[test]
    fn old_replica_sets_shrink_within_availability() {
        let cases = [
            (10, 0, 10, 0, 10, 0, 9), // maxSurge 0 too: one may be unavailable
            (10, 2, 10, 0, 10, 0, 8),
            (10, 2, 10, 0, 8, 0, 8),  // the unavailable ones go first...
            (10, 2, 10, 0, 9, 0, 8),  // ...then available ones
            (10, 2, 8, 2, 8, 0, 8),   // new pods not yet available hold the rest back
            (10, 2, 8, 4, 8, 4, 4),   // (2 spare + 4 new available)
            (10, 0, 0, 10, 0, 10, 0), // nothing old left
        ];
        for (replicas, unavailable, old_size, new_size, old_ready, new_ready, expected) in cases {
            let d = d(replicas, Int(0), Int(unavailable));
            let old = [rs("old", old_size, old_ready, 1)];
            let new = rs("new", new_size, new_ready, 2);
            let all = all_of(&old, Some(&new));
            let budget = max_scaled_down(&d, &all, &new);
            let mut sizes = vec![old_size];
            if replica_count(&old) > 0 && budget > 0 {
                sizes = cleanup_unhealthy_sizes(&old, budget);
                let mut cleaned = old.clone();
                super::super::replica_sets::set_spec_replicas(&mut cleaned[0], sizes[0]);
                let min_available = replicas - max_unavailable(&d);
                let available = available_replica_count(&all_of(&cleaned, Some(&new)));
                sizes = scale_down_sizes(&cleaned, available, min_available);
            }
            assert_eq!(sizes, [expected], "{replicas} replicas, {unavailable} unavailable, old {old_size}/{old_ready}, new {new_size}/{new_ready}");
        }
    }

    /// Upstream's cleanupUnhealthyReplicas cases: (size, available, budget, removed).
    #[test]
    fn unhealthy_pods_are_removed_within_the_budget() {
        for (size, available, budget, removed) in
            [(10, 8, 1, 1), (10, 8, 3, 2), (10, 8, 0, 0), (10, 10, 3, 0)]
        {
            let sizes = cleanup_unhealthy_sizes(&[rs("old", size, available, 1)], budget);
            assert_eq!(sizes, [size - removed], "{size}/{available} within {budget}");
        }
        // Oldest first, across ReplicaSets; more available than asked for is healthy.
        let old = [rs("a", 3, 1, 1), rs("b", 3, 0, 2), rs("c", 2, 4, 3)];
        assert_eq!(cleanup_unhealthy_sizes(&old, 4), [1, 1, 2]);
    }

    /// Upstream's scaleDownOldReplicaSetsForRollingUpdate cases, and the order.
    #[test]
    fn available_pods_above_the_minimum_are_taken_oldest_first() {
        assert_eq!(scale_down_sizes(&[rs("old", 10, 10, 1)], 10, 9), [9]);
        assert_eq!(scale_down_sizes(&[rs("old", 10, 10, 1)], 10, 8), [8]);
        assert_eq!(scale_down_sizes(&[rs("old", 10, 8, 1)], 8, 8), [10]);
        assert_eq!(scale_down_sizes(&[rs("old", 0, 0, 1)], 0, 8), [0]);
        let old = [rs("a", 2, 2, 1), rs("b", 0, 0, 2), rs("c", 3, 3, 3)];
        assert_eq!(scale_down_sizes(&old, 9, 5), [0, 0, 1]);
    }
}
