//! The DaemonSet controller's decisions, pure functions of the DaemonSet, its nodes and its
//! pods grouped by node: what to create and delete on each node ([`node_work`], upstream's
//! `podsShouldBeOnNode`), which old pods a rolling update replaces next ([`rolling_update`]),
//! and the status ([`status`]).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use super::nodes::Placement;
use crate::controller_history::REVISION_HASH_LABEL;

/// The label with the DaemonSet generation a pod was made for.
pub const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";
/// The annotation older API servers keep the template generation in; when absent the
/// DaemonSet's `metadata.generation` stands for it.
const TEMPLATE_GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";

/// The pods of one DaemonSet by the node they are for.
pub type NodePods = BTreeMap<String, Vec<Arc<Pod>>>;

pub use crate::pod_state::{is_available, is_ready};

fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

fn deleting(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

fn label<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

/// The generation the DaemonSet's template is at, for the `pod-template-generation` label.
pub fn template_generation(ds: &DaemonSet) -> Option<i64> {
    let annotated = ds
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(TEMPLATE_GENERATION_ANNOTATION))
        .and_then(|g| g.parse().ok());
    annotated.or(ds.metadata.generation)
}

/// Whether the pod is of the current template: its revision hash is `hash`, or (pods of older
/// controllers) its template generation is the DaemonSet's (upstream's `IsPodUpdated`).
pub fn is_updated(pod: &Pod, hash: &str, generation: Option<i64>) -> bool {
    let by_hash = !hash.is_empty() && label(pod, REVISION_HASH_LABEL) == Some(hash);
    let by_generation = generation
        .is_some_and(|g| label(pod, TEMPLATE_GENERATION_LABEL) == Some(g.to_string().as_str()));
    by_hash || by_generation
}

/// Oldest first, scheduled pods before unscheduled ones, then by name (upstream's
/// `podByCreationTimestampAndPhase`).
fn oldest_first(a: &Arc<Pod>, b: &Arc<Pod>) -> Ordering {
    let scheduled = |p: &Pod| {
        p.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty())
    };
    let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
    scheduled(b)
        .cmp(&scheduled(a))
        .then_with(|| created(a).cmp(&created(b)))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// What happens on one node.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct NodeWork {
    /// A daemon pod is created there.
    pub create: bool,
    /// Pods to delete: extra ones, or all when the node should not run the DaemonSet.
    pub delete: Vec<Arc<Pod>>,
    /// Failed pods: deleted (to be made anew) unless their node's back-off says wait.
    pub failed: Vec<Arc<Pod>>,
    /// Succeeded pods: deleted, so a new one runs.
    pub succeeded: Vec<Arc<Pod>>,
}

/// What to do on a node with `pods` (`None`: no pod of ours targets it), as upstream's
/// `podsShouldBeOnNode`. With surge allowed, an old and a new pod may share a node while the
/// new one becomes available.
pub fn node_work(
    placement: Placement,
    pods: Option<&[Arc<Pod>]>,
    hash: &str,
    allows_surge: bool,
    min_ready_seconds: i32,
    now: Timestamp,
) -> NodeWork {
    let mut work = NodeWork::default();
    let Some(pods) = pods else {
        work.create = placement.should_run;
        return work;
    };
    if !placement.should_continue {
        work.delete = pods.iter().filter(|p| !deleting(p)).cloned().collect();
        return work;
    }
    let mut running = Vec::new();
    for pod in pods.iter().filter(|p| !deleting(p)) {
        match phase(pod) {
            "Failed" => work.failed.push(pod.clone()),
            "Succeeded" => work.succeeded.push(pod.clone()),
            _ => running.push(pod.clone()),
        }
    }
    running.sort_by(oldest_first);
    if !allows_surge {
        // All but the oldest go.
        work.delete.extend(running.into_iter().skip(1));
        return work;
    }
    if running.is_empty() {
        work.create = placement.should_run;
        return work;
    }
    // Surging: keep the oldest new pod and the oldest old one; the old one goes once the new
    // one is available, or at once if it is not ready anyway.
    let (mut oldest_new, mut oldest_old) = (None, None);
    for pod in running {
        let slot = if label(&pod, REVISION_HASH_LABEL) == Some(hash) {
            &mut oldest_new
        } else {
            &mut oldest_old
        };
        if slot.is_none() {
            *slot = Some(pod);
        } else {
            work.delete.push(pod);
        }
    }
    if let (Some(new), Some(old)) = (oldest_new, oldest_old) {
        if !is_ready(&old) || is_available(&new, min_ready_seconds, now) {
            work.delete.push(old);
        }
    }
    work
}

/// A rolling update's limits for `desired` scheduled pods: (maxSurge, maxUnavailable), both
/// rounded up from percentages; both zero would stall, so unavailability becomes 1.
pub fn surge_and_unavailable(ds: &DaemonSet, desired: i32) -> (i32, i32) {
    let strategy = ds.spec.as_ref().and_then(|s| s.update_strategy.as_ref());
    if strategy.and_then(|s| s.type_.as_deref()).is_some_and(|t| t != "RollingUpdate") {
        return (0, 0);
    }
    let rolling = strategy.and_then(|s| s.rolling_update.as_ref());
    let surge = rolling.and_then(|r| r.max_surge.as_ref()).map_or(0, |v| scaled(v, desired));
    let unavailable =
        rolling.and_then(|r| r.max_unavailable.as_ref()).map_or(1, |v| scaled(v, desired));
    if desired > 0 && surge == 0 && unavailable == 0 {
        return (0, 1);
    }
    (surge, unavailable)
}

/// Whether the DaemonSet rolls by surging: a new pod starts beside the old one.
pub fn allows_surge(ds: &DaemonSet) -> bool {
    surge_and_unavailable(ds, 1).0 > 0
}

/// A number as is, or a percentage of `total` rounded up; a malformed one counts as 0.
fn scaled(value: &IntOrString, total: i32) -> i32 {
    match value {
        IntOrString::Int(n) => *n,
        IntOrString::String(s) => {
            s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()).map_or(0, |p| {
                ((p * i64::from(total) + 99) / 100).clamp(0, i64::from(i32::MAX)) as i32
            })
        }
    }
}

/// A node's pod of the current revision and its pod of an older one.
type NewAndOld = (Option<Arc<Pod>>, Option<Arc<Pod>>);

/// The new and the old pod on a node (not counting pods being deleted), or `None` when there
/// are several of either: the core loop removes extras first (upstream's
/// `findUpdatedPodsOnNode`).
fn new_and_old(pods: &[Arc<Pod>], hash: &str, generation: Option<i64>) -> Option<NewAndOld> {
    let (mut new, mut old) = (None, None);
    for pod in pods.iter().filter(|p| !deleting(p)) {
        let slot = if is_updated(pod, hash, generation) { &mut new } else { &mut old };
        if slot.is_some() {
            return None;
        }
        *slot = Some(pod.clone());
    }
    Some((new, old))
}

/// What a rolling update step does: delete these old pods, and (surging) create pods on these
/// nodes beside the old ones.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RollingStep {
    pub delete: Vec<Arc<Pod>>,
    pub create_on: Vec<String>,
}

/// The DaemonSet's rolling update at this point, as upstream's `rollingUpdate`. `pods` has an
/// entry for every node that should run a pod and every node one of ours targets;
/// `placements` says where pods belong.
pub fn rolling_update(
    ds: &DaemonSet,
    pods: &NodePods,
    placements: &BTreeMap<String, Placement>,
    hash: &str,
    now: Timestamp,
) -> RollingStep {
    let generation = template_generation(ds);
    let min_ready = ds.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0);
    let desired = placements.values().filter(|p| p.should_run).count();
    let desired = i32::try_from(desired).unwrap_or(i32::MAX);
    let (max_surge, max_unavailable) = surge_and_unavailable(ds, desired);
    let available = |p: &Pod| is_available(p, min_ready, now);
    let should_run = |node: &str| placements.get(node).is_some_and(|p| p.should_run);
    let mut step = RollingStep::default();

    if max_surge == 0 {
        // Delete just enough old pods to stay within maxUnavailable; the core loop makes
        // their replacements. Old pods that are unavailable anyway go at once.
        let mut unavailable = 0;
        let mut candidates = Vec::new();
        for node_pods in pods.values() {
            let Some((new, old)) = new_and_old(node_pods, hash, generation) else {
                unavailable += 1;
                continue;
            };
            match (new, old) {
                (None, None) | (Some(_), Some(_)) => unavailable += 1,
                (Some(new), None) => {
                    if !available(&new) {
                        unavailable += 1;
                    }
                }
                (None, Some(old)) => {
                    if !available(&old) {
                        step.delete.push(old);
                    } else if unavailable < max_unavailable {
                        candidates.push(old);
                    }
                }
            }
        }
        let room = usize::try_from(max_unavailable - unavailable).unwrap_or(0);
        step.delete.extend(candidates.into_iter().take(room));
        return step;
    }

    // Surging: a new pod starts beside each old one, at most maxSurge at a time; an old pod
    // goes once the new one beside it is available.
    let (mut surging, mut available_count) = (0, 0);
    let mut candidates = Vec::new();
    let mut misplaced = Vec::new();
    for (node, node_pods) in pods {
        let Some((new, old)) = new_and_old(node_pods, hash, generation) else {
            surging += 1;
            continue;
        };
        if let Some(pod) = old.as_ref().or(new.as_ref()) {
            if available(pod) {
                available_count += 1;
            }
        }
        match (new, old) {
            (_, None) => {}
            (None, Some(old)) => {
                if !available(&old) {
                    if should_run(node) {
                        step.create_on.push(node.clone());
                    } else {
                        step.delete.push(old);
                    }
                } else if !should_run(node) {
                    misplaced.push(old);
                } else if surging < max_surge {
                    candidates.push(node.clone());
                }
            }
            (Some(new), Some(old)) => {
                if available(&new) {
                    step.delete.push(old);
                } else {
                    surging += 1;
                }
            }
        }
    }
    // Pods on nodes that no longer fit go only while enough others are available.
    let deletable = usize::try_from(available_count - desired).unwrap_or(0);
    step.delete.extend(misplaced.into_iter().take(deletable));
    let room = usize::try_from(max_surge - surging).unwrap_or(0);
    step.create_on.extend(candidates.into_iter().take(room));
    step
}

/// The counts a DaemonSet's status reports.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub desired: i32,
    pub current: i32,
    pub misscheduled: i32,
    pub ready: i32,
    pub updated: i32,
    pub available: i32,
    pub unavailable: i32,
}

/// The status counts, as upstream's `updateDaemonSetStatus`: for each node that should run a
/// pod, its oldest pod tells whether one is scheduled, ready, available and up to date; pods on
/// other nodes are misscheduled.
pub fn status(
    ds: &DaemonSet,
    pods: &NodePods,
    placements: &BTreeMap<String, Placement>,
    hash: &str,
    now: Timestamp,
) -> Counts {
    let generation = template_generation(ds);
    let min_ready = ds.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0);
    let mut counts = Counts::default();
    for (node, placement) in placements {
        let mut node_pods: Vec<Arc<Pod>> = pods.get(node).cloned().unwrap_or_default();
        if !placement.should_run {
            if !node_pods.is_empty() {
                counts.misscheduled += 1;
            }
            continue;
        }
        counts.desired += 1;
        node_pods.sort_by(oldest_first);
        let Some(pod) = node_pods.first() else { continue };
        counts.current += 1;
        if is_ready(pod) {
            counts.ready += 1;
            if is_available(pod, min_ready, now) {
                counts.available += 1;
            }
        }
        if is_updated(pod, hash, generation) {
            counts.updated += 1;
        }
    }
    counts.unavailable = counts.desired - counts.available;
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_000_000;

    fn now() -> Timestamp {
        Timestamp::from_second(NOW).unwrap()
    }

    /// A pod on `node` of revision `hash`, created at `created` seconds, in `phase`, ready
    /// since `ready` seconds before now (`None`: not ready).
    fn pod(name: &str, node: &str, hash: &str, created: i64, ready: Option<i64>) -> Arc<Pod> {
        let ready_at = |ago: i64| Timestamp::from_second(NOW - ago).unwrap().to_string();
        let conditions = match ready {
            Some(ago) => {
                json!([{"type": "Ready", "status": "True", "lastTransitionTime": ready_at(ago)}])
            }
            None => json!([{"type": "Ready", "status": "False"}]),
        };
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": {"controller-revision-hash": hash},
                    "creationTimestamp": Timestamp::from_second(created).unwrap().to_string()},
                "spec": {"nodeName": node, "containers": []},
                "status": {"phase": "Running", "conditions": conditions},
            }))
            .unwrap(),
        )
    }

    fn with_phase(pod: &Arc<Pod>, phase: &str) -> Arc<Pod> {
        let mut p = (**pod).clone();
        p.status.as_mut().unwrap().phase = Some(phase.into());
        Arc::new(p)
    }

    fn deleted(pod: &Arc<Pod>) -> Arc<Pod> {
        let mut p = (**pod).clone();
        p.metadata.deletion_timestamp = p.metadata.creation_timestamp.clone();
        Arc::new(p)
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<String> {
        pods.iter().map(|p| p.metadata.name.clone().unwrap()).collect()
    }

    fn ds(strategy: serde_json::Value) -> DaemonSet {
        serde_json::from_value(json!({
            "metadata": {"name": "d", "generation": 2},
            "spec": {"selector": {}, "template": {}, "updateStrategy": strategy},
        }))
        .unwrap()
    }

    fn rolling(unavailable: serde_json::Value, surge: serde_json::Value) -> DaemonSet {
        ds(json!({"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": unavailable, "maxSurge": surge}}))
    }

    const RUN: Placement = Placement { should_run: true, should_continue: true };
    const STAY: Placement = Placement { should_run: false, should_continue: true };
    const AWAY: Placement = Placement { should_run: false, should_continue: false };

    #[test]
    fn a_node_gets_one_pod_and_loses_extras_and_misplaced_ones() {
        assert!(node_work(RUN, None, "h", false, 0, now()).create);
        assert!(!node_work(STAY, None, "h", false, 0, now()).create);
        let a = pod("a", "n", "h", 10, Some(5));
        let b = pod("b", "n", "h", 20, Some(5));
        let c = pod("c", "n", "h", 5, None);
        let work = node_work(RUN, Some(&[a.clone(), b.clone(), c.clone()]), "h", false, 0, now());
        assert!(!work.create);
        assert_eq!(names(&work.delete), ["a", "b"], "the oldest stays");
        let work = node_work(AWAY, Some(&[a.clone(), deleted(&b)]), "h", false, 0, now());
        assert_eq!(names(&work.delete), ["a"], "pods already going are left alone");
        let work = node_work(STAY, Some(std::slice::from_ref(&a)), "h", false, 0, now());
        assert_eq!(work, NodeWork::default(), "NoSchedule taints do not evict");
        // Only deleting pods there: wait for them to go before making another.
        let work = node_work(RUN, Some(&[deleted(&a)]), "h", false, 0, now());
        assert_eq!(work, NodeWork::default());
    }

    #[test]
    fn finished_pods_are_replaced() {
        let failed = with_phase(&pod("f", "n", "h", 1, None), "Failed");
        let done = with_phase(&pod("s", "n", "h", 2, None), "Succeeded");
        let live = pod("l", "n", "h", 3, Some(1));
        let work = node_work(RUN, Some(&[failed, done, live]), "h", false, 0, now());
        assert_eq!(
            (names(&work.failed), names(&work.succeeded)),
            (vec!["f".into()], vec!["s".into()])
        );
        assert!(work.delete.is_empty() && !work.create);
    }

    #[test]
    fn surging_keeps_an_old_pod_until_the_new_one_is_available() {
        let old = pod("old", "n", "h1", 1, Some(100));
        let new_unready = pod("new", "n", "h2", 2, None);
        let work = node_work(RUN, Some(&[old.clone(), new_unready]), "h2", true, 0, now());
        assert!(work.delete.is_empty());
        let new_ready = pod("new", "n", "h2", 2, Some(5));
        let work = node_work(RUN, Some(&[old.clone(), new_ready.clone()]), "h2", true, 10, now());
        assert!(work.delete.is_empty(), "not available for minReadySeconds yet");
        let work = node_work(RUN, Some(&[old.clone(), new_ready]), "h2", true, 0, now());
        assert_eq!(names(&work.delete), ["old"]);
        let work = node_work(RUN, Some(&[deleted(&old)]), "h2", true, 0, now());
        assert!(work.create, "surging makes a pod while the old one terminates");
    }

    #[test]
    fn limits_come_from_the_strategy() {
        assert_eq!(surge_and_unavailable(&rolling(json!(1), json!(0)), 10), (0, 1));
        assert_eq!(surge_and_unavailable(&rolling(json!("25%"), json!(0)), 10), (0, 3));
        assert_eq!(surge_and_unavailable(&rolling(json!(0), json!("10%")), 3), (1, 0));
        assert_eq!(surge_and_unavailable(&rolling(json!(0), json!(0)), 3), (0, 1));
        assert_eq!(surge_and_unavailable(&ds(json!({"type": "OnDelete"})), 3), (0, 0));
        assert!(allows_surge(&rolling(json!(0), json!("1%"))));
        assert!(!allows_surge(&rolling(json!(1), json!(0))));
    }

    fn nodes(names: &[&str], placement: Placement) -> BTreeMap<String, Placement> {
        names.iter().map(|n| (n.to_string(), placement)).collect()
    }

    fn by_node(pods: &[Arc<Pod>], all_nodes: &[&str]) -> NodePods {
        let mut map: NodePods = all_nodes.iter().map(|n| (n.to_string(), Vec::new())).collect();
        for p in pods {
            let node = p.spec.as_ref().unwrap().node_name.clone().unwrap();
            map.entry(node).or_default().push(p.clone());
        }
        map
    }

    #[test]
    fn rolling_updates_replace_old_pods_within_max_unavailable() {
        let all = ["a", "b", "c"];
        let placements = nodes(&all, RUN);
        let old = |n: &str| pod(&format!("{n}-old"), n, "h1", 1, Some(100));
        let ds1 = rolling(json!(1), json!(0));
        let pods = by_node(&[old("a"), old("b"), old("c")], &all);
        let step = rolling_update(&ds1, &pods, &placements, "h2", now());
        assert_eq!(names(&step.delete), ["a-old"]);
        assert!(step.create_on.is_empty());
        // "a" is being replaced (no pod yet): that is the one unavailable pod allowed.
        let pods = by_node(&[old("b"), old("c")], &all);
        assert!(rolling_update(&ds1, &pods, &placements, "h2", now()).delete.is_empty());
        // "a" runs the new revision, not ready yet: still waiting.
        let new_a = pod("a-new", "a", "h2", 2, None);
        let pods = by_node(&[new_a, old("b"), old("c")], &all);
        assert!(rolling_update(&ds1, &pods, &placements, "h2", now()).delete.is_empty());
        // Ready: the next one goes.
        let new_a = pod("a-new", "a", "h2", 2, Some(1));
        let pods = by_node(&[new_a.clone(), old("b"), old("c")], &all);
        assert_eq!(names(&rolling_update(&ds1, &pods, &placements, "h2", now()).delete), ["b-old"]);
        // An old pod that is unavailable anyway goes beside the one maxUnavailable allows.
        let broken = pod("c-old", "c", "h1", 1, None);
        let pods = by_node(&[new_a, old("b"), broken], &all);
        let step = rolling_update(&rolling(json!(1), json!(0)), &pods, &placements, "h2", now());
        assert_eq!(names(&step.delete), ["c-old", "b-old"]);
        // The template generation label counts as up to date too.
        let mut by_generation = (*old("a")).clone();
        by_generation
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert(TEMPLATE_GENERATION_LABEL.into(), "2".into());
        assert!(is_updated(&by_generation, "h2", template_generation(&ds1)));
    }

    #[test]
    fn surging_updates_start_new_pods_beside_old_ones() {
        let all = ["a", "b", "c"];
        let placements = nodes(&all, RUN);
        let old = |n: &str| pod(&format!("{n}-old"), n, "h1", 1, Some(100));
        let ds1 = rolling(json!(0), json!(1));
        let pods = by_node(&[old("a"), old("b"), old("c")], &all);
        let step = rolling_update(&ds1, &pods, &placements, "h2", now());
        assert_eq!(step.create_on, ["a"]);
        assert!(step.delete.is_empty());
        let new_a = pod("a-new", "a", "h2", 2, None);
        let pods = by_node(&[old("a"), new_a, old("b"), old("c")], &all);
        let step = rolling_update(&ds1, &pods, &placements, "h2", now());
        assert_eq!(step, RollingStep::default(), "one surge at a time");
        let new_a = pod("a-new", "a", "h2", 2, Some(1));
        let pods = by_node(&[old("a"), new_a, old("b"), old("c")], &all);
        let step = rolling_update(&ds1, &pods, &placements, "h2", now());
        assert_eq!(names(&step.delete), ["a-old"]);
        assert_eq!(step.create_on, ["b"]);
    }

    #[test]
    fn status_counts_the_oldest_pod_of_each_node() {
        let all = ["a", "b", "c", "d"];
        let mut placements = nodes(&all, RUN);
        placements.insert("d".into(), AWAY);
        let ds1 = rolling(json!(1), json!(0));
        let pods = by_node(
            &[
                pod("a1", "a", "h2", 1, Some(100)),
                pod("b1", "b", "h1", 1, Some(100)),
                pod("b2", "b", "h2", 2, None),
                pod("d1", "d", "h2", 1, Some(100)),
            ],
            &all,
        );
        let counts = status(&ds1, &pods, &placements, "h2", now());
        assert_eq!(
            counts,
            Counts {
                desired: 3,
                current: 2,
                misscheduled: 1,
                ready: 2,
                updated: 1,
                available: 2,
                unavailable: 1
            }
        );
        let mut slow = ds1.clone();
        slow.spec.as_mut().unwrap().min_ready_seconds = Some(200);
        let counts = status(&slow, &pods, &placements, "h2", now());
        assert_eq!((counts.ready, counts.available, counts.unavailable), (2, 0, 3));
    }
}
