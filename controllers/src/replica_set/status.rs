//! What a ReplicaSet or ReplicationController reports in its status, computed from the pods it
//! owns: one shape for both kinds ([`ReplicaStatus`]), converted to and from each kind's own
//! status type by its [`Replicated`](super::Replicated) implementation.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use rkube_apis::selectors::LabelSelector;

pub use crate::pod_state::{is_active, is_available, is_ready, ready_since};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The condition type reporting that pods could not be created or deleted.
pub const REPLICA_FAILURE: &str = "ReplicaFailure";

/// The status fields ReplicaSets and ReplicationControllers share, in their JSON shape (the
/// two kinds' status types have the same fields), so one conversion serves both
/// ([`from_api`], [`to_api`]); absent counters read as 0 and zeros are written by leaving them
/// out, as the API's `omitempty` counters are.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplicaStatus {
    pub replicas: i32,
    #[serde(skip_serializing_if = "is_zero")]
    pub fully_labeled_replicas: i32,
    #[serde(skip_serializing_if = "is_zero")]
    pub ready_replicas: i32,
    #[serde(skip_serializing_if = "is_zero")]
    pub available_replicas: i32,
    #[serde(skip_serializing_if = "is_zero")]
    pub observed_generation: i64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// A status condition (`ReplicaSetCondition` and `ReplicationControllerCondition` have the same
/// fields).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

fn is_zero<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// A kind's status (`ReplicaSetStatus`, `ReplicationControllerStatus`) in the shared shape.
pub fn from_api<T: Serialize>(status: Option<&T>) -> ReplicaStatus {
    status
        .and_then(|s| serde_json::to_value(s).ok())
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// The shared shape as a kind's status; the kind's other fields are left unset.
pub fn to_api<T: DeserializeOwned>(status: &ReplicaStatus) -> Option<T> {
    serde_json::to_value(status).ok().and_then(|v| serde_json::from_value(v).ok())
}

/// Why the last attempt to create or delete pods failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// `FailedCreate` or `FailedDelete`.
    pub reason: &'static str,
    pub message: String,
}

/// The status an owner should report, given its current status and the active pods it owns.
///
/// The `ReplicaFailure` condition is added (with `now` as its transition time) when `failure`
/// is set and there is none yet, kept as it is while failures go on, and removed once a
/// sync manages its pods without one.
pub fn compute(
    current: &ReplicaStatus,
    generation: i64,
    template_labels: &BTreeMap<String, String>,
    min_ready_seconds: i32,
    pods: &[Arc<Pod>],
    failure: Option<&Failure>,
    now: Timestamp,
) -> ReplicaStatus {
    let template = LabelSelector::from_map(template_labels);
    let mut status = ReplicaStatus {
        replicas: count(pods.len()),
        fully_labeled_replicas: count(
            pods.iter()
                .filter(|p| {
                    template.matches(p.metadata.labels.as_ref().unwrap_or(&BTreeMap::new()))
                })
                .count(),
        ),
        ready_replicas: count(pods.iter().filter(|p| is_ready(p)).count()),
        available_replicas: count(
            pods.iter().filter(|p| is_available(p, min_ready_seconds, now)).count(),
        ),
        observed_generation: generation,
        conditions: current.conditions.clone(),
    };
    let failing = status.conditions.iter().any(|c| c.type_ == REPLICA_FAILURE);
    match failure {
        Some(failure) if !failing => status.conditions.push(Condition {
            type_: REPLICA_FAILURE.into(),
            status: "True".into(),
            reason: Some(failure.reason.into()),
            message: Some(failure.message.clone()),
            last_transition_time: Some(Time(now)),
        }),
        None if failing => status.conditions.retain(|c| c.type_ != REPLICA_FAILURE),
        _ => {}
    }
    status
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    pub(crate) fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    /// A running pod with these labels, ready since `ready` (not ready when `None`).
    pub(crate) fn pod(name: &str, labels: &[(&str, &str)], ready: Option<Timestamp>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some(format!("uid-{name}")),
                labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                ..ObjectMeta::default()
            },
            status: Some(PodStatus {
                phase: Some("Running".into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready.is_some() { "True" } else { "False" }.into(),
                    last_transition_time: ready.map(Time),
                    ..PodCondition::default()
                }]),
                ..PodStatus::default()
            }),
            ..Pod::default()
        }
    }

    fn template() -> BTreeMap<String, String> {
        [("app", "web"), ("tier", "front")].map(|(k, v)| (k.to_string(), v.to_string())).into()
    }

    #[test]
    fn active_pods_are_neither_finished_nor_being_deleted() {
        let mut p = pod("a", &[], None);
        assert!(is_active(&p));
        p.status.as_mut().unwrap().phase = Some("Succeeded".into());
        assert!(!is_active(&p));
        p.status.as_mut().unwrap().phase = Some("Failed".into());
        assert!(!is_active(&p));
        p.status.as_mut().unwrap().phase = Some("Pending".into());
        p.metadata.deletion_timestamp = Some(Time(at(0)));
        assert!(!is_active(&p));
        assert!(is_active(&Pod::default()));
    }

    #[test]
    fn counters_from_labels_readiness_and_min_ready_seconds() {
        let now = at(100);
        let pods: Vec<Arc<Pod>> = [
            pod("full-ready-long", &[("app", "web"), ("tier", "front"), ("x", "y")], Some(at(0))),
            pod("full-ready-short", &[("app", "web"), ("tier", "front")], Some(at(95))),
            pod("partial-ready", &[("app", "web")], Some(at(89))),
            pod("partial-unready", &[("app", "web")], None),
        ]
        .map(Arc::new)
        .into();
        let s = compute(&ReplicaStatus::default(), 7, &template(), 10, &pods, None, now);
        assert_eq!(
            s,
            ReplicaStatus {
                replicas: 4,
                fully_labeled_replicas: 2,
                ready_replicas: 3,
                // Ready since 89 with 10 s needed: available once 99 has passed (upstream
                // compares with a strict `Before`).
                available_replicas: 2,
                observed_generation: 7,
                conditions: vec![],
            }
        );
        let s = compute(&ReplicaStatus::default(), 7, &template(), 0, &pods, None, now);
        assert_eq!(s.available_replicas, 3);
        // A ready pod without a transition time is never available when minReadySeconds > 0.
        let mut p = pod("no-time", &[], Some(at(0)));
        p.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].last_transition_time = None;
        assert!(!is_available(&p, 10, now));
        assert!(is_available(&p, 0, now));
        // No template labels: every pod is fully labeled.
        let s = compute(&ReplicaStatus::default(), 1, &BTreeMap::new(), 0, &pods, None, now);
        assert_eq!(s.fully_labeled_replicas, 4);
    }

    #[test]
    fn replica_failure_is_added_once_kept_and_removed() {
        let failure = Failure { reason: "FailedCreate", message: "quota".into() };
        let first =
            compute(&ReplicaStatus::default(), 1, &template(), 0, &[], Some(&failure), at(1));
        assert_eq!(
            first.conditions,
            vec![Condition {
                type_: "ReplicaFailure".into(),
                status: "True".into(),
                reason: Some("FailedCreate".into()),
                message: Some("quota".into()),
                last_transition_time: Some(Time(at(1))),
            }]
        );
        // Still failing (even otherwise): the condition stays as it was, time included.
        let other = Failure { reason: "FailedDelete", message: "boom".into() };
        let again = compute(&first, 1, &template(), 0, &[], Some(&other), at(5));
        assert_eq!(again.conditions, first.conditions);
        let ok = compute(&again, 1, &template(), 0, &[], None, at(9));
        assert!(ok.conditions.is_empty());
        // Other conditions are left alone.
        let mut foreign = ReplicaStatus::default();
        foreign.conditions.push(Condition { type_: "Other".into(), ..Condition::default() });
        assert_eq!(compute(&foreign, 1, &template(), 0, &[], None, at(9)).conditions.len(), 1);
    }
}
