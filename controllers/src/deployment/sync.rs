//! Finding (and making) the Deployment's new ReplicaSet and its old ones, keeping revisions,
//! scaling (proportionally while a rollout is under way), deleting history beyond
//! `revisionHistoryLimit`, and the syncs that only scale (a resize, a paused Deployment) or
//! only report (a Deployment being deleted).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::reflector::ObjectRef;

use super::annotations::{
    desired_replicas, max_replicas, max_revision, replicas_annotations_need_update,
    set_deployment_revision, set_new_replica_set_annotations, set_replicas_annotations, REVISION,
};
use super::hash::{compute_hash, equal_ignore_hash, POD_TEMPLATE_HASH};
use super::progress::{
    condition, has_progress_deadline, new_condition, now, set_condition, FAILED_RS_CREATE,
    FOUND_NEW_RS, NEW_RS_CREATED, PROGRESSING,
};
use super::replica_sets::{
    active, available_replicas, by_creation, by_revision, by_size_newer, by_size_older,
    deployment_replicas, find_new, find_old, name, replica_count, set_spec_replicas, spec_replicas,
    status_replicas, uid,
};
use super::surge::{is_rolling_update, max_surge};
use super::{deployment_owner, rollback, rolling, Error, Rollout};
use crate::api_errors::{message, namespace_terminating};
use crate::controller_ref::owner_reference;

/// The old ReplicaSets followed by the new one.
pub(super) fn all_of(old: &[ReplicaSet], new: Option<&ReplicaSet>) -> Vec<ReplicaSet> {
    old.iter().chain(new).cloned().collect()
}

/// The one ReplicaSet to give all pods to when at most one has any: the active one, else the
/// new one, else the newest old one. `None` while several have pods.
pub(super) fn find_active_or_latest(
    new: Option<&ReplicaSet>,
    old: &[ReplicaSet],
) -> Option<ReplicaSet> {
    let mut old = old.to_vec();
    old.sort_by(|a, b| by_creation(b, a));
    let all = active(&all_of(&old, new));
    match all.as_slice() {
        [] => new.cloned().or_else(|| old.first().cloned()),
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// The new ReplicaSet has all its pods, available, for the Deployment's current size.
pub(super) fn is_saturated(d: &Deployment, new: Option<&ReplicaSet>) -> bool {
    let Some(rs) = new else { return false };
    let replicas = deployment_replicas(d);
    spec_replicas(rs) == replicas
        && desired_replicas(rs) == Some(replicas)
        && available_replicas(rs) == replicas
}

/// What scaling a Deployment does to its ReplicaSets.
#[derive(Debug)]
pub(super) struct ScalePlan {
    /// Each ReplicaSet with its size.
    pub sizes: Vec<(ReplicaSet, i32)>,
    /// Proportional scaling ("up" or "down", empty when the total stays): every ReplicaSet is
    /// written, for its annotations too.
    pub proportional: Option<&'static str>,
}

/// Sizes for the Deployment's size (upstream's `scale`): with at most one active
/// ReplicaSet, it gets everything; with a saturated new one, the old ones get nothing;
/// otherwise, in a rolling update, the pods added or removed are shared in proportion to each
/// ReplicaSet's size, the rounding left over going to the largest.
pub(super) fn scale_plan(
    d: &Deployment,
    new: Option<&ReplicaSet>,
    old: &[ReplicaSet],
) -> ScalePlan {
    let replicas = deployment_replicas(d);
    if let Some(rs) = find_active_or_latest(new, old) {
        return ScalePlan { sizes: vec![(rs, replicas)], proportional: None };
    }
    if is_saturated(d, new) {
        let sizes = active(old).into_iter().map(|rs| (rs, 0)).collect();
        return ScalePlan { sizes, proportional: None };
    }
    if !is_rolling_update(d) {
        return ScalePlan { sizes: Vec::new(), proportional: None };
    }
    let mut all = active(&all_of(old, new));
    let allowed = if replicas > 0 { replicas + max_surge(d) } else { 0 };
    let to_add = allowed - replica_count(&all);
    // Among equals, scaling up favours the newer and scaling down takes from the older.
    let operation = match to_add.signum() {
        1 => {
            all.sort_by(by_size_newer);
            "up"
        }
        -1 => {
            all.sort_by(by_size_older);
            "down"
        }
        _ => "",
    };
    let mut added = 0;
    let mut sizes: Vec<i32> = all
        .iter()
        .map(|rs| {
            let share = proportion(rs, d, to_add, added);
            added += share;
            spec_replicas(rs) + share
        })
        .collect();
    if let Some(largest) = sizes.first_mut() {
        *largest = (*largest + to_add - added).max(0);
    }
    ScalePlan { sizes: all.into_iter().zip(sizes).collect(), proportional: Some(operation) }
}

/// The ReplicaSet's share of `to_add` pods, `added` of which are given out already.
fn proportion(rs: &ReplicaSet, d: &Deployment, to_add: i32, added: i32) -> i32 {
    if spec_replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = fraction(rs, d);
    let allowed = to_add - added;
    // Never beyond what is left to give out (or take).
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

/// How many pods the ReplicaSet gains (or loses) if it keeps its share of the Deployment:
/// its size times the new maximum over the maximum it was last scaled for.
fn fraction(rs: &ReplicaSet, d: &Deployment) -> i32 {
    let replicas = deployment_replicas(d);
    if replicas == 0 {
        return -spec_replicas(rs);
    }
    let max_now = replicas + max_surge(d);
    // Without the annotation (edited by hand, or scaled from zero), the Deployment's current
    // size stands in.
    let max_before = max_replicas(rs)
        .filter(|m| *m != 0)
        .unwrap_or_else(|| d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0));
    if max_before == 0 {
        return 0;
    }
    let size = f64::from(spec_replicas(rs)) * f64::from(max_now) / f64::from(max_before);
    size.round() as i32 - spec_replicas(rs)
}

/// `revisionHistoryLimit`, unless unset or "unlimited" (MaxInt32).
fn revision_history_limit(d: &Deployment) -> Option<i32> {
    d.spec.as_ref()?.revision_history_limit.filter(|l| *l != i32::MAX)
}

/// The old ReplicaSets to delete: the lowest revisions beyond the limit, of those not being
/// deleted already, that have no pods and whose size the ReplicaSet controller has seen.
pub(super) fn cleanup_victims(old: &[ReplicaSet], limit: i32) -> Vec<ReplicaSet> {
    let mut cleanable: Vec<&ReplicaSet> =
        old.iter().filter(|rs| rs.metadata.deletion_timestamp.is_none()).collect();
    let excess = cleanable.len().saturating_sub(usize::try_from(limit).unwrap_or(0));
    cleanable.sort_by(|a, b| by_revision(a, b));
    cleanable
        .into_iter()
        .take(excess)
        .filter(|rs| {
            let observed = rs.status.as_ref().and_then(|s| s.observed_generation).unwrap_or(0);
            status_replicas(rs) == 0
                && spec_replicas(rs) == 0
                && rs.metadata.generation.unwrap_or(0) <= observed
        })
        .cloned()
        .collect()
}

impl Rollout<'_> {
    /// This sync's latest copy of a ReplicaSet (it may have been written since it was read).
    pub(super) fn fresh(&self, rs: &ReplicaSet) -> ReplicaSet {
        self.rss.iter().find(|r| r.metadata.uid == rs.metadata.uid).unwrap_or(rs).clone()
    }

    pub(super) fn fresh_all(&self, rss: &[ReplicaSet]) -> Vec<ReplicaSet> {
        rss.iter().map(|rs| self.fresh(rs)).collect()
    }

    /// The new ReplicaSet (made if `create` and missing) with its revision brought up to
    /// date, and the old ones.
    pub(super) async fn get_all_replica_sets_and_sync_revision(
        &mut self,
        create: bool,
    ) -> Result<(Option<ReplicaSet>, Vec<ReplicaSet>), Error> {
        let old = find_old(&self.d, &self.rss);
        let new = self.get_new_replica_set(&old, create).await?;
        Ok((new, old))
    }

    async fn get_new_replica_set(
        &mut self,
        old: &[ReplicaSet],
        create: bool,
    ) -> Result<Option<ReplicaSet>, Error> {
        let new_revision = max_revision(old) + 1;
        let Some(existing) = find_new(&self.d, &self.rss) else {
            if !create {
                return Ok(None);
            }
            return self.create_new_replica_set(old, new_revision).await.map(Some);
        };
        // Bring its annotations (revision, the Deployment's own) and minReadySeconds up to
        // date; the Deployment follows on the next sync, which this write causes.
        let mut rs = existing.clone();
        let annotations_changed =
            set_new_replica_set_annotations(&self.d, &mut rs, new_revision, true);
        let min_ready = self.d.spec.as_ref().and_then(|s| s.min_ready_seconds);
        let spec = rs.spec.get_or_insert_with(Default::default);
        if annotations_changed || spec.min_ready_seconds.unwrap_or(0) != min_ready.unwrap_or(0) {
            spec.min_ready_seconds = min_ready;
            let updated =
                self.replica_sets.replace(name(&existing), &PostParams::default(), &rs).await?;
            self.remember(&updated);
            return Ok(Some(updated));
        }
        let revision = rs
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION))
            .cloned()
            .unwrap_or_default();
        let mut needs_update = set_deployment_revision(&mut self.d, &revision);
        // A Deployment that had no Progressing condition yet (its deadline was just set):
        // its progress counts from now.
        if has_progress_deadline(&self.d)
            && condition(self.d.status.as_ref(), PROGRESSING).is_none()
        {
            let message = format!("Found new replica set {:?}", name(&rs));
            let c = new_condition(PROGRESSING, "True", FOUND_NEW_RS, message, &now());
            set_condition(self.d.status.get_or_insert_with(Default::default), c);
            needs_update = true;
        }
        if needs_update {
            self.update_status().await?;
        }
        Ok(Some(rs))
    }

    /// Creates `<deployment>-<hash>` for the Deployment's template, as large as the strategy
    /// allows now.
    async fn create_new_replica_set(
        &mut self,
        old: &[ReplicaSet],
        new_revision: i64,
    ) -> Result<ReplicaSet, Error> {
        let spec = self.d.spec.clone().unwrap_or_default();
        let hash =
            compute_hash(&spec.template, self.d.status.as_ref().and_then(|s| s.collision_count));
        let mut template = spec.template.clone();
        let labels = {
            let meta = template.metadata.get_or_insert_with(Default::default);
            let labels = meta.labels.get_or_insert_with(BTreeMap::new);
            labels.insert(POD_TEMPLATE_HASH.into(), hash.clone());
            labels.clone()
        };
        let mut selector = spec.selector.clone();
        selector
            .match_labels
            .get_or_insert_with(BTreeMap::new)
            .insert(POD_TEMPLATE_HASH.into(), hash.clone());
        let mut rs = ReplicaSet {
            metadata: ObjectMeta {
                // Deterministic, so a repeated create finds the first one.
                name: Some(format!("{}-{hash}", self.name())),
                namespace: self.d.metadata.namespace.clone(),
                owner_references: Some(vec![owner_reference(&self.d)]),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(0),
                min_ready_seconds: spec.min_ready_seconds,
                selector,
                template: Some(template),
            }),
            status: None,
        };
        let replicas = rolling::new_rs_new_replicas(&self.d, &all_of(old, Some(&rs)), &rs)?;
        set_spec_replicas(&mut rs, replicas);
        set_new_replica_set_annotations(&self.d, &mut rs, new_revision, false);
        let rs_name = name(&rs).to_string();
        let (created, already_existed) = match self
            .replica_sets
            .create(&PostParams::default(), &rs)
            .await
        {
            Ok(created) => (created, false),
            Err(kube::Error::Api(e)) if e.code == 409 && e.reason == "AlreadyExists" => {
                let namespace = self.d.metadata.namespace.clone().unwrap_or_default();
                let Some(existing) =
                    self.ctl.replica_sets.get(&ObjectRef::new(&rs_name).within(&namespace))
                else {
                    // Made by an earlier sync, not yet in the cache: look again later.
                    return Err(kube::Error::Api(e).into());
                };
                let ours = deployment_owner(&existing.metadata)
                    .is_some_and(|(_, uid)| Some(uid) == self.d.metadata.uid.as_deref());
                let same = existing
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.as_ref())
                    .is_some_and(|t| equal_ignore_hash(t, &spec.template));
                if ours && same {
                    ((*existing).clone(), true)
                } else {
                    // A hash collision: the next sync hashes with a higher count.
                    let status = self.d.status.get_or_insert_with(Default::default);
                    let count = status.collision_count.unwrap_or(0).saturating_add(1);
                    status.collision_count = Some(count);
                    if self.update_status().await.is_ok() {
                        tracing::info!(
                            deployment = self.key,
                            collision_count = count,
                            "hash collision; collisionCount bumped"
                        );
                    }
                    return Err(kube::Error::Api(e).into());
                }
            }
            Err(e) if namespace_terminating(&e) => return Err(e.into()),
            Err(e) => {
                let message =
                    format!("Failed to create new replica set {rs_name:?}: {}", message(&e));
                if has_progress_deadline(&self.d) {
                    let c = new_condition(
                        PROGRESSING,
                        "False",
                        FAILED_RS_CREATE,
                        message.clone(),
                        &now(),
                    );
                    set_condition(self.d.status.get_or_insert_with(Default::default), c);
                    // The failure to report matters more than a failure to report it.
                    if let Err(e) = self.update_status().await {
                        tracing::debug!(deployment = self.key, error = %e, "cannot report the failed create");
                    }
                }
                self.event("Warning", FAILED_RS_CREATE, &message).await;
                return Err(e.into());
            }
        };
        self.remember(&created);
        if !already_existed && replicas > 0 {
            let message = format!("Scaled up replica set {} to {replicas}", name(&created));
            self.event("Normal", "ScalingReplicaSet", &message).await;
        }
        let mut needs_update = set_deployment_revision(&mut self.d, &new_revision.to_string());
        if !already_existed && has_progress_deadline(&self.d) {
            let message = format!("Created new replica set {:?}", name(&created));
            let c = new_condition(PROGRESSING, "True", NEW_RS_CREATED, message, &now());
            set_condition(self.d.status.get_or_insert_with(Default::default), c);
            needs_update = true;
        }
        if needs_update {
            self.update_status().await?;
        }
        Ok(created)
    }

    /// A resize (some active ReplicaSet was last scaled for another Deployment size), rather
    /// than a template change.
    pub(super) async fn is_scaling_event(&mut self) -> Result<bool, Error> {
        let (new, old) = self.get_all_replica_sets_and_sync_revision(false).await?;
        let replicas = deployment_replicas(&self.d);
        let all = active(&all_of(&old, new.as_ref()));
        Ok(all.iter().any(|rs| desired_replicas(rs).is_some_and(|desired| desired != replicas)))
    }

    /// Scales without rolling out (a resize, or a paused Deployment), then reports.
    pub(super) async fn sync(&mut self) -> Result<(), Error> {
        let (new, old) = self.get_all_replica_sets_and_sync_revision(false).await?;
        self.scale(new.as_ref(), &old).await?;
        // A paused Deployment keeps its history in bounds too (a rollout would, on
        // completion), unless a rollback is about to need it.
        if self.paused() && rollback::rollback_to(&self.d).is_none() {
            self.cleanup_deployment(&old).await?;
        }
        let (new, old) = (new.map(|rs| self.fresh(&rs)), self.fresh_all(&old));
        self.sync_deployment_status(&all_of(&old, new.as_ref()), new.as_ref()).await
    }

    /// Only reports (the Deployment is being deleted).
    pub(super) async fn sync_status_only(&mut self) -> Result<(), Error> {
        let (new, old) = self.get_all_replica_sets_and_sync_revision(false).await?;
        self.sync_deployment_status(&all_of(&old, new.as_ref()), new.as_ref()).await
    }

    /// Gives the ReplicaSets the sizes of [`scale_plan`].
    pub(super) async fn scale(
        &mut self,
        new: Option<&ReplicaSet>,
        old: &[ReplicaSet],
    ) -> Result<(), Error> {
        let plan = scale_plan(&self.d, new, old);
        for (rs, size) in plan.sizes {
            match plan.proportional {
                Some(operation) => self.scale_replica_set(&rs, size, operation).await?,
                None => self.scale_replica_set_and_record_event(&rs, size).await?,
            };
        }
        Ok(())
    }

    /// Scales one ReplicaSet to `size` if it is not that size; returns whether it was scaled
    /// and the ReplicaSet as it is now.
    pub(super) async fn scale_replica_set_and_record_event(
        &mut self,
        rs: &ReplicaSet,
        size: i32,
    ) -> Result<(bool, ReplicaSet), Error> {
        if spec_replicas(rs) == size {
            return Ok((false, rs.clone()));
        }
        let operation = if spec_replicas(rs) < size { "up" } else { "down" };
        self.scale_replica_set(rs, size, operation).await
    }

    /// Writes the ReplicaSet's size and replica annotations when either differs, with the
    /// resourceVersion it was read at (a stale one conflicts rather than scale twice).
    pub(super) async fn scale_replica_set(
        &mut self,
        rs: &ReplicaSet,
        size: i32,
        operation: &str,
    ) -> Result<(bool, ReplicaSet), Error> {
        let replicas = deployment_replicas(&self.d);
        let max = replicas + max_surge(&self.d);
        let resize = spec_replicas(rs) != size;
        if !resize && !replicas_annotations_need_update(rs, replicas, max) {
            return Ok((false, rs.clone()));
        }
        let before = spec_replicas(rs);
        let mut copy = rs.clone();
        set_spec_replicas(&mut copy, size);
        set_replicas_annotations(&mut copy, replicas, max);
        let updated = self.replica_sets.replace(name(rs), &PostParams::default(), &copy).await?;
        self.remember(&updated);
        if resize {
            let message = format!(
                "Scaled {operation} replica set {} to {size} from {before}",
                name(&updated)
            );
            self.event("Normal", "ScalingReplicaSet", &message).await;
        }
        Ok((resize, updated))
    }

    /// Deletes old ReplicaSets beyond `revisionHistoryLimit` ([`cleanup_victims`]).
    pub(super) async fn cleanup_deployment(&mut self, old: &[ReplicaSet]) -> Result<(), Error> {
        let Some(limit) = revision_history_limit(&self.d) else { return Ok(()) };
        for rs in cleanup_victims(&self.fresh_all(old), limit) {
            tracing::debug!(
                deployment = self.key,
                replica_set = name(&rs),
                uid = uid(&rs),
                "deleting old replica set"
            );
            match self.replica_sets.delete(name(&rs), &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{deployment, rolling, rs};
    use super::*;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    /// A ReplicaSet last scaled for a Deployment of `desired` (max `max`).
    fn scaled_for(mut r: ReplicaSet, desired: i32, max: i32) -> ReplicaSet {
        set_replicas_annotations(&mut r, desired, max);
        r
    }

    fn sizes(plan: &ScalePlan) -> Vec<(String, i32)> {
        let mut sizes: Vec<(String, i32)> =
            plan.sizes.iter().map(|(rs, n)| (name(rs).to_string(), *n)).collect();
        sizes.sort();
        sizes
    }

    fn pairs(expected: &[(&str, i32)]) -> Vec<(String, i32)> {
        let mut v: Vec<(String, i32)> = expected.iter().map(|(n, s)| (n.to_string(), *s)).collect();
        v.sort();
        v
    }

    /// A ReplicaSet in a scaling case: name, size, created (all pods available).
    type Rs = (&'static str, i32, i64);

    /// Scales a Deployment of `before` (size, surge) to `now` and checks every ReplicaSet's
    /// size; the ReplicaSets were last scaled for `before`.
    fn scales(
        title: &str,
        before: (i32, i32),
        now: (i32, i32),
        new: Option<Rs>,
        old: &[Rs],
        expected: &[(&str, i32)],
    ) {
        let d = rolling(deployment(now.0), IntOrString::Int(now.1), IntOrString::Int(1));
        let make = |&(n, size, created): &Rs| {
            scaled_for(rs(n, size, size, created), before.0, before.0 + before.1)
        };
        let new = new.as_ref().map(make);
        let old: Vec<ReplicaSet> = old.iter().map(make).collect();
        let plan = scale_plan(&d, new.as_ref(), &old);
        let mut got = sizes(&plan);
        // ReplicaSets the plan leaves out keep their size.
        for rs in all_of(&old, new.as_ref()) {
            if !got.iter().any(|(n, _)| n == name(&rs)) {
                got.push((name(&rs).to_string(), spec_replicas(&rs)));
            }
        }
        got.sort();
        assert_eq!(got, pairs(expected), "{title}");
    }

    /// Upstream's scaling cases.
    #[test]
    fn proportional_scaling_as_upstream() {
        scales("10 -> 12", (10, 0), (12, 0), Some(("v1", 10, 5)), &[], &[("v1", 12)]);
        scales("10 -> 5", (10, 0), (5, 0), Some(("v1", 10, 5)), &[], &[("v1", 5)]);
        let old = [("v1", 3, 1)];
        scales("5 -> 10", (5, 0), (10, 0), Some(("v2", 2, 5)), &old, &[("v2", 4), ("v1", 6)]);
        scales("5 -> 3", (5, 0), (3, 0), Some(("v2", 2, 5)), &old, &[("v2", 1), ("v1", 2)]);
        let old = [("v1", 1, 1)];
        scales("9 -> 4", (9, 0), (4, 0), Some(("v2", 8, 5)), &old, &[("v2", 4), ("v1", 0)]);
        let (new, old) = (Some(("v3", 2, 5)), [("v2", 3, 3), ("v1", 2, 1)]);
        scales("7 -> 10", (7, 0), (10, 0), new, &old, &[("v3", 3), ("v2", 4), ("v1", 3)]);
        let (new, old) = (Some(("v3", 2, 5)), [("v2", 8, 3), ("v1", 3, 1)]);
        scales("13 -> 8", (13, 0), (8, 0), new, &old, &[("v3", 1), ("v2", 5), ("v1", 2)]);
        // Leftovers go to the largest; among equals the newest when growing...
        let (new, old) = (Some(("v3", 1, 5)), [("v2", 1, 3), ("v1", 1, 1)]);
        scales("3 -> 4", (3, 0), (4, 0), new, &old, &[("v3", 2), ("v2", 1), ("v1", 1)]);
        // ...and the oldest when shrinking.
        scales("3 -> 2", (3, 0), (2, 0), new, &old, &[("v3", 1), ("v2", 1), ("v1", 0)]);
        let old = [("v2", 2, 3), ("v1", 2, 1)];
        scales("no new: 4 -> 5", (4, 0), (5, 0), None, &old, &[("v2", 3), ("v1", 2)]);
        let (new, old) = (Some(("v3", 3, 5)), [("v2", 2, 3), ("v1", 1, 1)]);
        scales("6 -> 0", (6, 0), (0, 0), new, &old, &[("v3", 0), ("v2", 0), ("v1", 0)]);
        let (new, old) = (Some(("v2", 6, 5)), [("v1", 6, 1)]);
        scales("with surge: 10 -> 20", (10, 2), (20, 2), new, &old, &[("v2", 11), ("v1", 11)]);
        let (new, old) = (Some(("v2", 5, 5)), [("v1", 8, 1)]);
        scales("size and surge", (10, 3), (50, 6), new, &old, &[("v2", 22), ("v1", 34)]);
    }

    #[test]
    fn scaling_from_zero_goes_to_the_new_replica_set() {
        let d = rolling(deployment(6), IntOrString::Int(0), IntOrString::Int(1));
        let new = rs("v3", 0, 0, 5);
        let old = [rs("v2", 0, 0, 3), rs("v1", 0, 0, 1)];
        let plan = scale_plan(&d, Some(&new), &old);
        assert_eq!(sizes(&plan), pairs(&[("v3", 6)]));
        assert_eq!(plan.proportional, None);
        // No new one: the newest old one.
        let plan = scale_plan(&d, None, &old);
        assert_eq!(sizes(&plan), pairs(&[("v2", 6)]));
    }

    #[test]
    fn without_the_max_annotation_the_deployments_current_size_stands_in() {
        // "change both size and template": 10 -> 12, the new template has no ReplicaSet yet.
        let mut d = rolling(deployment(12), IntOrString::Int(0), IntOrString::Int(1));
        d.status = Some(k8s_openapi::api::apps::v1::DeploymentStatus {
            replicas: Some(10),
            ..Default::default()
        });
        let old = [rs("v2", 7, 7, 3), rs("v1", 3, 3, 1)];
        let plan = scale_plan(&d, None, &old);
        assert_eq!(sizes(&plan), pairs(&[("v2", 8), ("v1", 4)]));
        assert_eq!(plan.proportional, Some("up"));
    }

    #[test]
    fn a_saturated_new_replica_set_takes_everything_a_broken_one_nothing() {
        let d = rolling(deployment(2), IntOrString::Int(1), IntOrString::Int(1));
        let new = scaled_for(rs("v2", 2, 2, 5), 2, 3);
        let old = [scaled_for(rs("v1", 1, 1, 1), 2, 3)];
        assert_eq!(sizes(&scale_plan(&d, Some(&new), &old)), pairs(&[("v1", 0)]));
        // Same sizes but nothing available: not saturated, and the total is right already.
        let broken = scaled_for(rs("v2", 2, 0, 5), 2, 3);
        let plan = scale_plan(&d, Some(&broken), &old);
        assert_eq!(sizes(&plan), pairs(&[("v2", 2), ("v1", 1)]));
        assert_eq!(plan.proportional, Some(""));
        assert!(is_saturated(&d, Some(&new)) && !is_saturated(&d, Some(&broken)));
        assert!(!is_saturated(&d, None));
    }

    #[test]
    fn active_or_latest() {
        let new = rs("new", 0, 0, 5);
        let old = [rs("a", 0, 0, 1), rs("b", 0, 0, 3)];
        let pick = |new: Option<&ReplicaSet>, old: &[ReplicaSet]| {
            find_active_or_latest(new, old).map(|r| name(&r).to_string())
        };
        assert_eq!(pick(Some(&new), &old).as_deref(), Some("new"));
        assert_eq!(pick(None, &old).as_deref(), Some("b"));
        let old = [rs("a", 2, 0, 1), rs("b", 0, 0, 3)];
        assert_eq!(pick(Some(&new), &old).as_deref(), Some("a"));
        let busy = rs("new", 1, 0, 5);
        assert_eq!(pick(Some(&busy), &old), None);
        assert_eq!(pick(None, &[]), None);
    }

    #[test]
    fn history_cleanup_deletes_the_lowest_revisions_beyond_the_limit() {
        let revisioned = |n: &str, revision: &str, size: i32, created: i64| {
            let mut r = rs(n, size, size, created);
            r.metadata.annotations = Some([(REVISION.to_string(), revision.to_string())].into());
            r
        };
        let old = vec![
            revisioned("r3", "3", 0, 3),
            revisioned("r1", "1", 0, 1),
            revisioned("r2", "2", 0, 2),
            revisioned("r4", "4", 0, 4),
        ];
        let names = |v: Vec<ReplicaSet>| v.iter().map(|r| name(r).to_string()).collect::<Vec<_>>();
        assert_eq!(names(cleanup_victims(&old, 2)), ["r1", "r2"]);
        assert_eq!(names(cleanup_victims(&old, 4)), Vec::<String>::new());
        assert_eq!(names(cleanup_victims(&old, 0)), ["r1", "r2", "r3", "r4"]);
        // One with pods, one not yet observed and one being deleted are kept; the one being
        // deleted does not count towards the limit either.
        let mut old = old;
        old[1] = revisioned("r1", "1", 1, 1);
        old[2].metadata.generation = Some(2);
        old[0].metadata.deletion_timestamp = Some(now());
        assert_eq!(names(cleanup_victims(&old, 1)), Vec::<String>::new());
        assert_eq!(names(cleanup_victims(&old, 0)), ["r4"]);
        let mut pods_left = revisioned("r5", "5", 0, 5);
        pods_left.status.as_mut().unwrap().replicas = 1;
        assert!(cleanup_victims(&[pods_left], 0).is_empty());
    }
}
