//! What the controller reads off ReplicaSets: sizes and counts, the orders it scales them in,
//! and which of a Deployment's ReplicaSets is the new one (its template is the Deployment's)
//! and which are old.

use std::cmp::Ordering;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::annotations;
use super::hash;

/// `spec.replicas` of a Deployment (the API defaults it to 1).
pub(super) fn deployment_replicas(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// `spec.replicas` of a ReplicaSet (the API defaults it to 1).
pub(super) fn spec_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// Sets `spec.replicas`.
pub(super) fn set_spec_replicas(rs: &mut ReplicaSet, replicas: i32) {
    rs.spec.get_or_insert_with(Default::default).replicas = Some(replicas);
}

pub(super) fn status_replicas(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().map_or(0, |s| s.replicas)
}

pub(super) fn available_replicas(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0)
}

pub(super) fn ready_replicas(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0)
}

pub(super) fn uid(rs: &ReplicaSet) -> &str {
    rs.metadata.uid.as_deref().unwrap_or_default()
}

pub(super) fn name(rs: &ReplicaSet) -> &str {
    rs.metadata.name.as_deref().unwrap_or_default()
}

/// Pods the ReplicaSets ask for.
pub(super) fn replica_count(rss: &[ReplicaSet]) -> i32 {
    rss.iter().map(spec_replicas).sum()
}

/// Pods the ReplicaSets have.
pub(super) fn actual_replica_count(rss: &[ReplicaSet]) -> i32 {
    rss.iter().map(status_replicas).sum()
}

pub(super) fn available_replica_count(rss: &[ReplicaSet]) -> i32 {
    rss.iter().map(available_replicas).sum()
}

pub(super) fn ready_replica_count(rss: &[ReplicaSet]) -> i32 {
    rss.iter().map(ready_replicas).sum()
}

/// The ReplicaSets that ask for pods.
pub(super) fn active(rss: &[ReplicaSet]) -> Vec<ReplicaSet> {
    rss.iter().filter(|rs| spec_replicas(rs) > 0).cloned().collect()
}

/// Oldest first; the name breaks ties.
pub(super) fn by_creation(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    let created = |rs: &ReplicaSet| rs.metadata.creation_timestamp.as_ref().map(|t| t.0);
    created(a).cmp(&created(b)).then_with(|| name(a).cmp(name(b)))
}

/// Largest first; among equals the oldest first (whom scaling down takes first).
pub(super) fn by_size_older(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    spec_replicas(b).cmp(&spec_replicas(a)).then_with(|| by_creation(a, b))
}

/// Largest first; among equals the newest first (whom scaling up takes first).
pub(super) fn by_size_newer(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    let created = |rs: &ReplicaSet| rs.metadata.creation_timestamp.as_ref().map(|t| t.0);
    spec_replicas(b).cmp(&spec_replicas(a)).then_with(|| created(b).cmp(&created(a)))
}

/// Lowest revision first (unreadable ones count as 0); the oldest among equals.
pub(super) fn by_revision(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    let revision = |rs: &ReplicaSet| annotations::revision(rs).unwrap_or(0);
    revision(a).cmp(&revision(b)).then_with(|| by_creation(a, b))
}

/// The ReplicaSet whose template is the Deployment's; the oldest if several are (which can
/// happen after an upgrade changed the hash).
pub(super) fn find_new(d: &Deployment, rss: &[ReplicaSet]) -> Option<ReplicaSet> {
    let template = &d.spec.as_ref()?.template;
    let mut matching: Vec<&ReplicaSet> = rss
        .iter()
        .filter(|rs| {
            rs.spec
                .as_ref()
                .and_then(|s| s.template.as_ref())
                .is_some_and(|t| hash::equal_ignore_hash(t, template))
        })
        .collect();
    matching.sort_by(|a, b| by_creation(a, b));
    matching.first().map(|rs| (*rs).clone())
}

/// Every ReplicaSet but the new one.
pub(super) fn find_old(d: &Deployment, rss: &[ReplicaSet]) -> Vec<ReplicaSet> {
    let new = find_new(d, rss);
    let new_uid = new.as_ref().map(uid);
    rss.iter().filter(|rs| Some(uid(rs)) != new_uid).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{deployment, rs, template};
    use super::*;

    fn names(rss: &[ReplicaSet]) -> Vec<&str> {
        rss.iter().map(name).collect()
    }

    #[test]
    fn orders() {
        let mut rss = vec![rs("c", 2, 0, 3), rs("a", 5, 0, 2), rs("b", 2, 0, 1), rs("d", 2, 0, 1)];
        rss.sort_by(by_creation);
        assert_eq!(names(&rss), ["b", "d", "a", "c"]);
        rss.sort_by(by_size_older);
        assert_eq!(names(&rss), ["a", "b", "d", "c"]);
        rss.sort_by(by_size_newer);
        assert_eq!(names(&rss), ["a", "c", "b", "d"]);
    }

    #[test]
    fn counts() {
        let mut a = rs("a", 3, 2, 0);
        a.status.as_mut().unwrap().replicas = 4;
        a.status.as_mut().unwrap().ready_replicas = Some(3);
        // Scaled to zero, one pod still going.
        let mut b = rs("b", 0, 1, 1);
        b.status.as_mut().unwrap().replicas = 1;
        let rss = [a, b];
        assert_eq!(replica_count(&rss), 3);
        assert_eq!(actual_replica_count(&rss), 5);
        assert_eq!(available_replica_count(&rss), 3);
        assert_eq!(ready_replica_count(&rss), 4);
        assert_eq!(names(&active(&rss)), ["a"]);
    }

    #[test]
    fn the_new_replica_set_has_the_deployments_template() {
        let d = deployment(3); // template("nginx:1.0")
        let mut old = rs("web-old", 1, 1, 0);
        old.spec.as_mut().unwrap().template = Some(template("nginx:0.9"));
        let new_late = rs("web-late", 1, 1, 5);
        let new_early = rs("web-early", 1, 1, 2);
        let rss = vec![old, new_late, new_early];
        assert_eq!(find_new(&d, &rss).map(|r| name(&r).to_string()).as_deref(), Some("web-early"));
        assert_eq!(names(&find_old(&d, &rss)), ["web-old", "web-late"]);
        assert!(find_new(&d, &rss[..1]).is_none());
        assert_eq!(find_old(&d, &rss[..1]).len(), 1);
    }
}
