//! The Deployment's status: the counts summed over its ReplicaSets, the `Available`
//! condition, and writing it through `/status` only when it changed.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::PostParams;

use super::progress::{
    new_condition, set_condition, AVAILABLE, MINIMUM_REPLICAS_AVAILABLE,
    MINIMUM_REPLICAS_UNAVAILABLE,
};
use super::replica_sets::{
    actual_replica_count, available_replica_count, deployment_replicas, ready_replica_count,
    replica_count, status_replicas,
};
use super::surge::max_unavailable;
use super::{Error, Rollout};

/// The status `all` (the new ReplicaSet among them) give the Deployment, keeping its
/// conditions and collision count and setting `Available`.
pub(super) fn calculate_status(
    all: &[ReplicaSet],
    new: Option<&ReplicaSet>,
    d: &Deployment,
    now: &Time,
) -> DeploymentStatus {
    let available = available_replica_count(all);
    let current = d.status.clone().unwrap_or_default();
    let mut status = DeploymentStatus {
        observed_generation: d.metadata.generation,
        replicas: Some(actual_replica_count(all)),
        updated_replicas: Some(new.map_or(0, status_replicas)),
        ready_replicas: Some(ready_replica_count(all)),
        available_replicas: Some(available),
        // More available than asked for happens while scaling down: none unavailable then.
        unavailable_replicas: Some((replica_count(all) - available).max(0)),
        collision_count: current.collision_count,
        conditions: current.conditions,
        terminating_replicas: None,
    };
    let condition = if available >= deployment_replicas(d) - max_unavailable(d) {
        let message = "Deployment has minimum availability.";
        new_condition(AVAILABLE, "True", MINIMUM_REPLICAS_AVAILABLE, message, now)
    } else {
        let message = "Deployment does not have minimum availability.";
        new_condition(AVAILABLE, "False", MINIMUM_REPLICAS_UNAVAILABLE, message, now)
    };
    set_condition(&mut status, condition);
    normalized(status)
}

/// Zero counts and empty conditions absent, as the API returns them (Go's `omitempty`), so
/// a computed status compares equal to the stored one.
pub(super) fn normalized(mut status: DeploymentStatus) -> DeploymentStatus {
    for count in [
        &mut status.replicas,
        &mut status.updated_replicas,
        &mut status.ready_replicas,
        &mut status.available_replicas,
        &mut status.unavailable_replicas,
    ] {
        if *count == Some(0) {
            *count = None;
        }
    }
    if status.observed_generation == Some(0) {
        status.observed_generation = None;
    }
    if status.conditions.as_ref().is_some_and(Vec::is_empty) {
        status.conditions = None;
    }
    status
}

/// Whether the Deployment already has this status.
pub(super) fn unchanged(d: &Deployment, status: &DeploymentStatus) -> bool {
    normalized(d.status.clone().unwrap_or_default()) == normalized(status.clone())
}

impl Rollout<'_> {
    /// Writes the status computed from `all` when it changed (scaling, paused, deleting).
    pub(super) async fn sync_deployment_status(
        &mut self,
        all: &[ReplicaSet],
        new: Option<&ReplicaSet>,
    ) -> Result<(), Error> {
        let status = calculate_status(all, new, &self.d, &super::progress::now());
        if unchanged(&self.d, &status) {
            return Ok(());
        }
        self.d.status = Some(status);
        self.update_status().await
    }

    /// Writes the Deployment's status (and its revision annotation, which upstream writes
    /// through `/status` too); the Deployment then carries the new resourceVersion, so a
    /// later write of this sync does not conflict with this one.
    pub(super) async fn update_status(&mut self) -> Result<(), Error> {
        let name = self.d.metadata.name.clone().unwrap_or_default();
        let written =
            self.deployments.replace_status(&name, &PostParams::default(), &self.d).await?;
        self.d.metadata.resource_version = written.metadata.resource_version;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{deployment, rs};
    use super::super::progress::{condition, now};
    use super::*;

    #[test]
    fn counts_over_all_replica_sets() {
        let d = deployment(4); // may have 1 unavailable
        let old = rs("old", 2, 2, 0);
        let mut new = rs("new", 3, 1, 1);
        new.status.as_mut().unwrap().ready_replicas = Some(2);
        let status = calculate_status(&[old, new.clone()], Some(&new), &d, &now());
        assert_eq!(status.observed_generation, Some(1));
        assert_eq!(status.replicas, Some(5));
        assert_eq!(status.updated_replicas, Some(3));
        assert_eq!(status.ready_replicas, Some(4));
        assert_eq!(status.available_replicas, Some(3));
        assert_eq!(status.unavailable_replicas, Some(2));
        let available = condition(Some(&status), AVAILABLE).unwrap();
        assert_eq!(available.status, "True");
        assert_eq!(available.reason.as_deref(), Some(MINIMUM_REPLICAS_AVAILABLE));
        assert_eq!(available.message.as_deref(), Some("Deployment has minimum availability."));
    }

    #[test]
    fn availability_needs_replicas_less_max_unavailable() {
        let d = deployment(4);
        let all = [rs("new", 4, 2, 0)];
        let status = calculate_status(&all, Some(&all[0]), &d, &now());
        let available = condition(Some(&status), AVAILABLE).unwrap();
        assert_eq!(available.status, "False");
        assert_eq!(available.reason.as_deref(), Some(MINIMUM_REPLICAS_UNAVAILABLE));
        assert_eq!(
            available.message.as_deref(),
            Some("Deployment does not have minimum availability.")
        );
        // More available than asked for (scaling down): none unavailable.
        let all = [rs("new", 1, 3, 0)];
        let status = calculate_status(&all, Some(&all[0]), &d, &now());
        assert_eq!(status.unavailable_replicas, None);
    }

    #[test]
    fn zero_counts_are_absent_and_an_unchanged_status_is_not_rewritten() {
        let mut d = deployment(0);
        let status = calculate_status(&[], None, &d, &now());
        assert_eq!(status.replicas, None);
        assert_eq!(status.updated_replicas, None);
        assert!(!unchanged(&d, &status));
        d.status = Some(status.clone());
        // Recomputed later: the condition keeps its times, so nothing changes.
        let later = calculate_status(
            &[],
            None,
            &d,
            &Time(now().0 + k8s_openapi::jiff::SignedDuration::from_secs(5)),
        );
        assert!(unchanged(&d, &later));
        // Explicit zeros equal absent ones.
        let mut explicit = later.clone();
        explicit.replicas = Some(0);
        explicit.conditions.as_mut().unwrap();
        assert!(unchanged(&d, &explicit));
    }
}
