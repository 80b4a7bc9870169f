//! Which pods go first when an owner has too many: the ones whose loss hurts least, in
//! upstream's order (`ActivePodsWithRanks`), each rule deciding only when the ones before it
//! tie:
//!
//! 1. not scheduled to a node before scheduled;
//! 2. `Pending` before `Unknown` before `Running`;
//! 3. not ready before ready;
//! 4. lower `controller.kubernetes.io/pod-deletion-cost` before higher;
//! 5. on a node crowded with related pods before on a less crowded one;
//! 6. ready for a shorter time before a longer one;
//! 7. more container restarts before fewer;
//! 8. created more recently before earlier.
//!
//! Times (rules 6 and 8) compare by logarithmic age buckets, as upstream has since
//! `LogarithmicScaleDown` became the default: pods of about the same age (same power of two of
//! nanoseconds) are not told apart by age, so scale-down does not always pick the very newest.
//! Where upstream then breaks the tie by uid straight away, this order goes on to the next
//! rules and only ends with the uid: the same spread, but a total order, which Rust's sort
//! requires.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;

use super::status::{is_active, is_ready, ready_since};

/// The annotation by which users say which pods should go first (lower cost first).
pub const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The `count` pods (of `pods`, the owner's active pods) to delete first, ranked by the rules
/// above. `related` are the pods of the owner and its siblings (owners with the same
/// controller); those active on a pod's node make up that pod's crowding (rule 5).
pub fn pods_to_delete(
    pods: &[Arc<Pod>],
    related: &[Arc<Pod>],
    count: usize,
    now: Timestamp,
) -> Vec<Arc<Pod>> {
    if count >= pods.len() {
        return pods.to_vec();
    }
    let mut on_node: HashMap<&str, usize> = HashMap::new();
    for pod in related.iter().filter(|p| is_active(p)) {
        *on_node.entry(node_name(pod)).or_default() += 1;
    }
    let mut ranked: Vec<Ranked> = pods
        .iter()
        .map(|pod| Ranked::new(pod, on_node.get(node_name(pod)).copied().unwrap_or(0)))
        .collect();
    ranked.sort_by(|a, b| deleted_first(a, b, now));
    ranked.into_iter().take(count).map(|r| r.pod.clone()).collect()
}

fn node_name(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("")
}

/// What the rules look at, read once per pod.
struct Ranked<'a> {
    pod: &'a Arc<Pod>,
    assigned: bool,
    phase: u8,
    ready: bool,
    cost: i32,
    crowding: usize,
    ready_since: Option<Timestamp>,
    restarts: (i32, i32),
    created: Option<Timestamp>,
    uid: &'a str,
}

impl<'a> Ranked<'a> {
    fn new(pod: &'a Arc<Pod>, crowding: usize) -> Ranked<'a> {
        let phase = match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
            Some("Unknown") => 1,
            Some("Running") => 2,
            // Pending, and anything else as upstream: first.
            _ => 0,
        };
        let cost = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(DELETION_COST))
            .and_then(|v| v.parse::<i32>().ok())
            .unwrap_or(0);
        Ranked {
            pod,
            assigned: !node_name(pod).is_empty(),
            phase,
            ready: is_ready(pod),
            cost,
            crowding,
            ready_since: ready_since(pod),
            restarts: max_restarts(pod),
            created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
            uid: pod.metadata.uid.as_deref().unwrap_or(""),
        }
    }
}

/// The highest restart count of the pod's regular containers, then of its sidecars (init
/// containers with `restartPolicy: Always`).
fn max_restarts(pod: &Pod) -> (i32, i32) {
    let Some(status) = pod.status.as_ref() else { return (0, 0) };
    let regular = status.container_statuses.iter().flatten().map(|c| c.restart_count).max();
    let sidecars: Vec<&str> = pod
        .spec
        .iter()
        .flat_map(|s| s.init_containers.iter().flatten())
        .filter(|c| c.restart_policy.as_deref() == Some("Always"))
        .map(|c| c.name.as_str())
        .collect();
    let sidecar = status
        .init_container_statuses
        .iter()
        .flatten()
        .filter(|c| sidecars.contains(&c.name.as_str()))
        .map(|c| c.restart_count)
        .max();
    (regular.unwrap_or(0).max(0), sidecar.unwrap_or(0).max(0))
}

/// `Less` when `a` is to be deleted before `b`.
fn deleted_first(a: &Ranked, b: &Ranked, now: Timestamp) -> Ordering {
    a.assigned
        .cmp(&b.assigned)
        .then(a.phase.cmp(&b.phase))
        .then(a.ready.cmp(&b.ready))
        .then(a.cost.cmp(&b.cost))
        .then(b.crowding.cmp(&a.crowding))
        .then_with(|| {
            if a.ready && b.ready {
                newer_first(a.ready_since, b.ready_since, now)
            } else {
                Ordering::Equal
            }
        })
        .then(b.restarts.0.cmp(&a.restarts.0))
        .then(b.restarts.1.cmp(&a.restarts.1))
        .then_with(|| newer_first(a.created, b.created, now))
        .then_with(|| a.uid.cmp(b.uid))
}

/// Missing times first (as upstream's zero times), then younger age buckets first.
fn newer_first(a: Option<Timestamp>, b: Option<Timestamp>, now: Timestamp) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => age_bucket(a, now).cmp(&age_bucket(b, now)),
        _ => a.is_some().cmp(&b.is_some()),
    }
}

/// The power of two of the nanoseconds since `t` (-1 for `t` not in the past).
fn age_bucket(t: Timestamp, now: Timestamp) -> i64 {
    let nanos = now.duration_since(t).as_nanos();
    if nanos <= 0 {
        -1
    } else {
        i64::from(127 - nanos.leading_zeros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replica_set::status::tests::{at, pod};
    use k8s_openapi::api::core::v1::{Container, ContainerStatus, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn on(node: &str, mut p: Pod) -> Pod {
        p.spec = Some(PodSpec { node_name: Some(node.into()), ..PodSpec::default() });
        p
    }

    fn phase(phase: &str, mut p: Pod) -> Pod {
        p.status.as_mut().unwrap().phase = Some(phase.into());
        p
    }

    fn created(t: Timestamp, mut p: Pod) -> Pod {
        p.metadata.creation_timestamp = Some(Time(t));
        p
    }

    fn cost(c: &str, mut p: Pod) -> Pod {
        p.metadata.annotations = Some([(DELETION_COST.to_string(), c.to_string())].into());
        p
    }

    fn restarts(n: i32, mut p: Pod) -> Pod {
        let status = ContainerStatus { name: "c".into(), restart_count: n, ..Default::default() };
        p.status.as_mut().unwrap().container_statuses = Some(vec![status]);
        p
    }

    /// The names in deletion order (all of them ranked).
    fn order(pods: Vec<Pod>, related: Vec<Pod>, now: Timestamp) -> Vec<String> {
        let pods: Vec<Arc<Pod>> = pods.into_iter().map(Arc::new).collect();
        let related: Vec<Arc<Pod>> = related.into_iter().map(Arc::new).collect();
        // One less than all, so the ranking runs; the last is appended by elimination.
        let mut first: Vec<String> = pods_to_delete(&pods, &related, pods.len() - 1, now)
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        let last =
            pods.iter().map(|p| p.metadata.name.clone().unwrap()).find(|n| !first.contains(n));
        first.extend(last);
        first
    }

    #[test]
    fn unassigned_then_phase_then_readiness() {
        let now = at(1000);
        let pods = vec![
            on("n1", phase("Running", pod("running-ready", &[], Some(at(0))))),
            on("n1", phase("Running", pod("running-unready", &[], None))),
            on("n1", phase("Unknown", pod("unknown", &[], Some(at(0))))),
            on("n1", phase("Pending", pod("pending", &[], None))),
            phase("Running", pod("unassigned", &[], Some(at(0)))),
        ];
        assert_eq!(
            order(pods, vec![], now),
            ["unassigned", "pending", "unknown", "running-unready", "running-ready"]
        );
    }

    #[test]
    fn deletion_cost_then_crowding() {
        let now = at(1000);
        let pods = vec![
            on("n1", cost("10", pod("expensive", &[], Some(at(0))))),
            on("n1", cost("-5", pod("cheap", &[], Some(at(0))))),
            on("n1", cost("not a number", pod("invalid-cost", &[], Some(at(0))))),
            on("n2", pod("crowded", &[], Some(at(0)))),
        ];
        // n2 holds three active related pods (one finished one does not count), n1 one.
        let mut finished = on("n2", pod("done", &[], None));
        finished.status.as_mut().unwrap().phase = Some("Succeeded".into());
        let related = vec![
            on("n1", pod("x1", &[], None)),
            on("n2", pod("x2", &[], None)),
            on("n2", pod("x3", &[], None)),
            on("n2", pod("x4", &[], None)),
            finished,
        ];
        assert_eq!(order(pods, related, now), ["cheap", "crowded", "invalid-cost", "expensive"]);
    }

    #[test]
    fn shorter_readiness_then_restarts_then_newer_creation() {
        let now = at(100_000);
        let pods = vec![
            on("n", pod("ready-long", &[], Some(at(0)))),
            on("n", pod("ready-short", &[], Some(at(99_990)))),
            // Same readiness bucket as ready-long's neighbour below, told apart by restarts.
            on("n", restarts(3, pod("restarted", &[], Some(at(50_000))))),
            on("n", restarts(0, created(at(50), pod("old", &[], Some(at(50_000)))))),
            on("n", restarts(0, created(at(90_000), pod("new", &[], Some(at(50_000)))))),
        ];
        assert_eq!(
            order(pods, vec![], now),
            ["ready-short", "restarted", "new", "old", "ready-long"]
        );
    }

    #[test]
    fn ages_compare_by_power_of_two_buckets() {
        let now = at(1000);
        // 1000 s and 900 s ago are both in the 2^39..2^40 ns bucket; 10 s ago is younger.
        assert_eq!(age_bucket(at(0), now), age_bucket(at(100), now));
        assert!(age_bucket(at(990), now) < age_bucket(at(0), now));
        assert_eq!(age_bucket(now, now), -1);
        assert_eq!(age_bucket(at(2000), now), -1);
        assert_eq!(newer_first(None, Some(at(0)), now), Ordering::Less);
        assert_eq!(newer_first(Some(at(990)), Some(at(0)), now), Ordering::Less);
        // Same bucket: left to the later rules, ending with the uid.
        let a = created(at(0), pod("a", &[], None));
        let b = created(at(100), pod("b", &[], None));
        assert_eq!(order(vec![b, a], vec![], now), ["a", "b"]);
    }

    #[test]
    fn sidecar_restarts_break_ties_after_regular_ones() {
        let mut p = restarts(2, pod("p", &[], None));
        p.spec = Some(PodSpec {
            init_containers: Some(vec![
                Container {
                    name: "sidecar".into(),
                    restart_policy: Some("Always".into()),
                    ..Container::default()
                },
                Container { name: "init".into(), ..Container::default() },
            ]),
            ..PodSpec::default()
        });
        p.status.as_mut().unwrap().init_container_statuses = Some(vec![
            ContainerStatus { name: "sidecar".into(), restart_count: 4, ..Default::default() },
            ContainerStatus { name: "init".into(), restart_count: 9, ..Default::default() },
        ]);
        assert_eq!(max_restarts(&p), (2, 4));
        assert_eq!(max_restarts(&Pod::default()), (0, 0));
    }

    #[test]
    fn all_pods_when_count_covers_them() {
        let pods: Vec<Arc<Pod>> =
            vec![Arc::new(pod("a", &[], None)), Arc::new(pod("b", &[], None))];
        assert_eq!(pods_to_delete(&pods, &[], 5, at(0)).len(), 2);
        assert!(pods_to_delete(&pods, &[], 0, at(0)).is_empty());
    }
}
