//! The annotations a Deployment and its ReplicaSets carry: each ReplicaSet's revision (what
//! `kubectl rollout history` and `undo` list), the revisions it had before a rollback, and the
//! Deployment size it was last scaled for (what proportional scaling divides by). The
//! Deployment's other annotations (`kubernetes.io/change-cause`, ...) are copied to its
//! newest ReplicaSet, so each revision keeps the ones it was made with.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

pub(super) const REVISION: &str = "deployment.kubernetes.io/revision";
pub(super) const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
pub(super) const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub(super) const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// The extensions/v1beta1 rollback request, still honoured as upstream does.
pub(super) const ROLLBACK_TO: &str = "deprecated.deployment.rollback.to";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// How long `revision-history` may grow; the oldest entries give way.
const MAX_REVISION_HISTORY_CHARS: usize = 2000;

/// Annotations that belong to the object they are on and are never copied between a
/// Deployment and its ReplicaSets.
pub(super) fn skip_copy(key: &str) -> bool {
    matches!(
        key,
        LAST_APPLIED | REVISION | REVISION_HISTORY | DESIRED_REPLICAS | MAX_REPLICAS | ROLLBACK_TO
    )
}

fn annotation<'a>(annotations: &'a Option<BTreeMap<String, String>>, key: &str) -> Option<&'a str> {
    annotations.as_ref()?.get(key).map(String::as_str)
}

/// A ReplicaSet's revision: 0 without the annotation, an error when it is not a number.
pub(super) fn revision(rs: &ReplicaSet) -> Result<i64, String> {
    match annotation(&rs.metadata.annotations, REVISION) {
        None => Ok(0),
        Some(v) => v.parse().map_err(|_| format!("revision {v:?} is not a number")),
    }
}

/// The highest revision; unreadable ones are skipped.
pub(super) fn max_revision(rss: &[ReplicaSet]) -> i64 {
    rss.iter().filter_map(|rs| revision(rs).ok()).max().unwrap_or(0)
}

/// The second highest revision (the one before the current), 0 if none.
pub(super) fn last_revision(rss: &[ReplicaSet]) -> i64 {
    let (mut max, mut second) = (0, 0);
    for v in rss.iter().filter_map(|rs| revision(rs).ok()) {
        if v >= max {
            second = max;
            max = v;
        } else if v > second {
            second = v;
        }
    }
    second
}

fn parse_i32(annotations: &Option<BTreeMap<String, String>>, key: &str) -> Option<i32> {
    annotation(annotations, key)?.parse().ok()
}

/// The Deployment size the ReplicaSet was last scaled for.
pub(super) fn desired_replicas(rs: &ReplicaSet) -> Option<i32> {
    parse_i32(&rs.metadata.annotations, DESIRED_REPLICAS)
}

/// The Deployment's size plus its surge when the ReplicaSet was last scaled.
pub(super) fn max_replicas(rs: &ReplicaSet) -> Option<i32> {
    parse_i32(&rs.metadata.annotations, MAX_REPLICAS)
}

/// Whether the replica annotations differ from `desired` and `max`.
pub(super) fn replicas_annotations_need_update(rs: &ReplicaSet, desired: i32, max: i32) -> bool {
    let annotations = &rs.metadata.annotations;
    annotation(annotations, DESIRED_REPLICAS) != Some(desired.to_string().as_str())
        || annotation(annotations, MAX_REPLICAS) != Some(max.to_string().as_str())
}

/// Sets the replica annotations; true when they changed.
pub(super) fn set_replicas_annotations(rs: &mut ReplicaSet, desired: i32, max: i32) -> bool {
    let annotations = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut changed = false;
    for (key, value) in [(DESIRED_REPLICAS, desired), (MAX_REPLICAS, max)] {
        let value = value.to_string();
        if annotations.get(key) != Some(&value) {
            annotations.insert(key.to_string(), value);
            changed = true;
        }
    }
    changed
}

/// Copies the Deployment's own annotations onto the ReplicaSet (adding or overwriting, never
/// removing); true when something changed.
fn copy_deployment_annotations(d: &Deployment, rs: &mut ReplicaSet) -> bool {
    let annotations = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut changed = false;
    for (key, value) in d.metadata.annotations.iter().flatten() {
        if skip_copy(key) || annotations.get(key) == Some(value) {
            continue;
        }
        annotations.insert(key.clone(), value.clone());
        changed = true;
    }
    changed
}

/// Brings the annotations of the Deployment's new ReplicaSet up to date: the Deployment's
/// annotations, the revision `new_revision` unless it already has a higher one (a rollback to
/// it keeps its previous revisions in `revision-history`), and for a ReplicaSet about to be
/// created (`exists` false) the replica annotations. True when something changed.
pub(super) fn set_new_replica_set_annotations(
    d: &Deployment,
    rs: &mut ReplicaSet,
    new_revision: i64,
    exists: bool,
) -> bool {
    let mut changed = copy_deployment_annotations(d, rs);
    let annotations = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let old = annotations.get(REVISION).cloned();
    let old_revision = match old.as_deref() {
        None | Some("") => 0,
        Some(v) => match v.parse::<i64>() {
            Ok(n) => n,
            Err(_) => {
                tracing::info!(revision = v, "replica set revision is not a number; left alone");
                return false;
            }
        },
    };
    if old_revision < new_revision {
        annotations.insert(REVISION.into(), new_revision.to_string());
        changed = true;
        // It had a revision: this is a rollback to it, so remember the revisions it had.
        if let Some(old) = old {
            let history = annotations.get(REVISION_HISTORY).cloned().unwrap_or_default();
            if let Some(history) = append_history(&history, &old) {
                annotations.insert(REVISION_HISTORY.into(), history);
            }
        }
    }
    if !exists {
        let replicas = super::replica_sets::deployment_replicas(d);
        changed |= set_replicas_annotations(rs, replicas, replicas + super::surge::max_surge(d));
    }
    changed
}

/// `history` with `revision` appended, dropping the oldest entries to stay within the limit;
/// `None` when even that cannot make it fit.
fn append_history(history: &str, revision: &str) -> Option<String> {
    if history.is_empty() {
        return Some(revision.to_string());
    }
    let entries: Vec<&str> = history.split(',').collect();
    let mut total = history.len() + revision.len() + 1;
    let mut start = 0;
    while total > MAX_REVISION_HISTORY_CHARS && start < entries.len() {
        total -= entries[start].len() + 1;
        start += 1;
    }
    if total > MAX_REVISION_HISTORY_CHARS {
        tracing::info!("revision history is at its length limit; revision {revision} not added");
        return None;
    }
    let mut kept = entries[start..].to_vec();
    kept.push(revision);
    Some(kept.join(","))
}

/// Sets the Deployment's revision annotation; true when it changed.
pub(super) fn set_deployment_revision(d: &mut Deployment, revision: &str) -> bool {
    let annotations = d.metadata.annotations.get_or_insert_with(BTreeMap::new);
    if annotations.get(REVISION).map(String::as_str) == Some(revision) {
        return false;
    }
    annotations.insert(REVISION.into(), revision.to_string());
    true
}

/// The Deployment's revision annotation.
#[cfg(test)]
fn deployment_revision(d: &Deployment) -> Option<&str> {
    annotation(&d.metadata.annotations, REVISION)
}

/// Gives the Deployment the annotations of the ReplicaSet it rolls back to, keeping its own
/// ones that are never copied.
pub(super) fn set_deployment_annotations_to(d: &mut Deployment, rs: &ReplicaSet) {
    let mut annotations: BTreeMap<String, String> = d
        .metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| skip_copy(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (key, value) in rs.metadata.annotations.iter().flatten() {
        if !skip_copy(key) {
            annotations.insert(key.clone(), value.clone());
        }
    }
    d.metadata.annotations = Some(annotations);
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{deployment, rs};
    use super::*;

    fn with_annotations(mut r: ReplicaSet, pairs: &[(&str, &str)]) -> ReplicaSet {
        r.metadata.annotations =
            Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        r
    }

    #[test]
    fn revisions_max_and_last() {
        let rss = [
            with_annotations(rs("a", 1, 1, 0), &[(REVISION, "3")]),
            with_annotations(rs("b", 1, 1, 1), &[(REVISION, "x")]),
            rs("c", 1, 1, 2),
            with_annotations(rs("d", 1, 1, 3), &[(REVISION, "7")]),
            with_annotations(rs("e", 1, 1, 4), &[(REVISION, "5")]),
        ];
        assert_eq!(revision(&rss[2]), Ok(0));
        assert!(revision(&rss[1]).is_err());
        assert_eq!(max_revision(&rss), 7);
        assert_eq!(last_revision(&rss), 5);
        assert_eq!(max_revision(&[]), 0);
        assert_eq!(last_revision(&rss[..1]), 0);
    }

    #[test]
    fn a_new_replica_set_gets_the_next_revision_and_the_deployments_annotations() {
        let mut d = deployment(3);
        d.metadata.annotations = Some(
            [
                ("kubernetes.io/change-cause", "kubectl set image"),
                (LAST_APPLIED, "{}"),
                (REVISION, "4"),
                (ROLLBACK_TO, "2"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        );
        let mut r = rs("web-abc", 0, 0, 0);
        assert!(set_new_replica_set_annotations(&d, &mut r, 5, false));
        let a = r.metadata.annotations.clone().unwrap();
        let expected: BTreeMap<String, String> = [
            ("kubernetes.io/change-cause", "kubectl set image"),
            (REVISION, "5"),
            (DESIRED_REPLICAS, "3"),
            (MAX_REPLICAS, "4"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(a, expected);
        // Nothing more to do the second time, for an existing one.
        assert!(!set_new_replica_set_annotations(&d, &mut r, 5, true));
        // A lower revision never replaces a higher one.
        assert!(!set_new_replica_set_annotations(&d, &mut r, 3, true));
        assert_eq!(revision(&r), Ok(5));
    }

    #[test]
    fn a_rollback_keeps_the_revisions_the_replica_set_had() {
        let d = deployment(1);
        let mut r = with_annotations(rs("web-abc", 0, 0, 0), &[(REVISION, "1")]);
        assert!(set_new_replica_set_annotations(&d, &mut r, 3, true));
        let a = r.metadata.annotations.clone().unwrap();
        assert_eq!((a[REVISION].as_str(), a[REVISION_HISTORY].as_str()), ("3", "1"));
        assert!(set_new_replica_set_annotations(&d, &mut r, 5, true));
        let a = r.metadata.annotations.clone().unwrap();
        assert_eq!((a[REVISION].as_str(), a[REVISION_HISTORY].as_str()), ("5", "1,3"));
        // An existing one does not get replica annotations from here.
        assert!(!a.contains_key(DESIRED_REPLICAS));
        // A revision that is not a number is left alone.
        let mut bad = with_annotations(rs("bad", 0, 0, 0), &[(REVISION, "x")]);
        assert!(!set_new_replica_set_annotations(&d, &mut bad, 2, true));
    }

    #[test]
    fn revision_history_stays_within_its_limit() {
        assert_eq!(append_history("", "4").as_deref(), Some("4"));
        assert_eq!(append_history("1,2", "4").as_deref(), Some("1,2,4"));
        let long = vec!["123456789"; 200].join(","); // 1999 characters
        let appended = append_history(&long, "77").unwrap();
        assert!(appended.len() <= MAX_REVISION_HISTORY_CHARS);
        assert!(appended.ends_with(",77") && appended.starts_with("123456789,"));
        assert_eq!(appended.split(',').count(), 200);
        assert_eq!(append_history(&long, &"9".repeat(MAX_REVISION_HISTORY_CHARS + 1)), None);
    }

    #[test]
    fn replica_annotations() {
        let mut r = rs("a", 1, 1, 0);
        assert!(replicas_annotations_need_update(&r, 3, 4));
        assert!(set_replicas_annotations(&mut r, 3, 4));
        assert!(!replicas_annotations_need_update(&r, 3, 4));
        assert!(!set_replicas_annotations(&mut r, 3, 4));
        assert_eq!((desired_replicas(&r), max_replicas(&r)), (Some(3), Some(4)));
        assert!(replicas_annotations_need_update(&r, 3, 5));
    }

    #[test]
    fn deployment_revision_and_rollback_annotations() {
        let mut d = deployment(1);
        assert!(set_deployment_revision(&mut d, "2"));
        assert!(!set_deployment_revision(&mut d, "2"));
        assert_eq!(deployment_revision(&d), Some("2"));
        d.metadata.annotations.as_mut().unwrap().insert("note".into(), "now".into());
        let r = with_annotations(
            rs("a", 1, 1, 0),
            &[(REVISION, "1"), ("note", "then"), ("kubernetes.io/change-cause", "v1")],
        );
        set_deployment_annotations_to(&mut d, &r);
        let a = d.metadata.annotations.unwrap();
        assert_eq!(a[REVISION], "2");
        assert_eq!(a["note"], "then");
        assert_eq!(a["kubernetes.io/change-cause"], "v1");
    }
}
