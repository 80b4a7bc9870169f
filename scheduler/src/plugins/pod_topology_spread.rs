//! `PodTopologySpread`: keeps the pods a selector picks spread evenly over topology domains
//! (zones, nodes, ...) by the pod's `topologySpreadConstraints`. `DoNotSchedule` constraints
//! filter: a node is refused when placing the pod there would make its domain hold more than
//! `maxSkew` matching pods above the least-loaded eligible domain. `ScheduleAnyway`
//! constraints score: nodes whose domains hold fewer matching pods rank higher.
//!
//! Which nodes count as domains follows upstream: nodes that carry every constraint's topology
//! key, that match the pod's node selector / required node affinity (`nodeAffinityPolicy:
//! Honor`, the default) and, when `nodeTaintsPolicy: Honor` (default `Ignore`), whose
//! `NoSchedule`/`NoExecute` taints the pod tolerates. Only pods in the incoming pod's namespace
//! and not being deleted are counted. `minDomains` (default 1) makes the global minimum 0
//! while there are fewer eligible domains. `matchLabelKeys` adds the pod's values for those
//! keys to the selector.
//!
//! A pod without constraints of its own gets upstream's system defaults (hostname maxSkew 3,
//! zone maxSkew 5, both `ScheduleAnyway`), selecting the pods of the Services,
//! ReplicationControllers, ReplicaSets and StatefulSets that select it
//! ([`PodInfo::default_spread_selector`], filled in by the scheduler, which watches them);
//! with defaults, nodes lacking a topology key are not left out of scoring, as upstream.

use std::collections::{BTreeMap, HashMap, HashSet};

use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use rkube_apis::selectors::LabelSelector;

use crate::framework::{
    CycleState, FilterPlugin, Next, NodeInfo, PodInfo, Rejection, ScorePlugin, MAX_NODE_SCORE,
};
use crate::plugins::{label_selector, node_affinity, pod_labels, tolerations_tolerate};

/// Placing the pod on the node would exceed a constraint's `maxSkew`.
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
/// The node lacks the topology key of a `DoNotSchedule` constraint.
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
const PRE_FILTER_KEY: &str = "PreFilterPodTopologySpread";
const PRE_SCORE_KEY: &str = "PreScorePodTopologySpread";

pub struct PodTopologySpread;

/// One constraint, read for the incoming pod.
struct Constraint {
    max_skew: i64,
    topology_key: String,
    selector: LabelSelector,
    min_domains: i64,
    honor_node_affinity: bool,
    honor_node_taints: bool,
}

/// Upstream's system default constraints: (topology key, maxSkew), `ScheduleAnyway`.
const SYSTEM_DEFAULTS: [(&str, i64); 2] = [(HOSTNAME_LABEL, 3), ("topology.kubernetes.io/zone", 5)];

fn listed(pod: &PodInfo) -> &[TopologySpreadConstraint] {
    pod.pod.spec.as_ref().and_then(|s| s.topology_spread_constraints.as_deref()).unwrap_or(&[])
}

/// Whether the pod spreads by the system defaults: no constraints of its own, and
/// something that selects it.
fn system_defaulted(pod: &PodInfo) -> bool {
    listed(pod).is_empty() && pod.default_spread_selector.is_some()
}

/// Whether the pod has any constraint with the given `whenUnsatisfiable` (checked before
/// anything is computed, since most pods have none).
fn has_constraints(pod: &PodInfo, when_unsatisfiable: &str) -> bool {
    listed(pod).iter().any(|c| c.when_unsatisfiable == when_unsatisfiable)
        || (when_unsatisfiable == "ScheduleAnyway" && system_defaulted(pod))
}

/// The pod's constraints with the given `whenUnsatisfiable`.
fn constraints(pod: &PodInfo, when_unsatisfiable: &str) -> Vec<Constraint> {
    if when_unsatisfiable == "ScheduleAnyway" && system_defaulted(pod) {
        let selector = pod.default_spread_selector.clone().expect("defaulted");
        return SYSTEM_DEFAULTS
            .iter()
            .map(|(key, max_skew)| Constraint {
                max_skew: *max_skew,
                topology_key: key.to_string(),
                selector: selector.clone(),
                min_domains: 1,
                honor_node_affinity: true,
                honor_node_taints: false,
            })
            .collect();
    }
    let listed = listed(pod);
    let labels = pod_labels(pod);
    listed
        .iter()
        .filter(|c| c.when_unsatisfiable == when_unsatisfiable)
        .map(|c| {
            let also: BTreeMap<String, String> = c
                .match_label_keys
                .iter()
                .flatten()
                .filter_map(|k| labels.get(k).map(|v| (k.clone(), v.clone())))
                .collect();
            Constraint {
                max_skew: i64::from(c.max_skew),
                topology_key: c.topology_key.clone(),
                selector: label_selector(c.label_selector.as_ref(), &also),
                min_domains: c.min_domains.map_or(1, i64::from),
                honor_node_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
                honor_node_taints: c.node_taints_policy.as_deref() == Some("Honor"),
            }
        })
        .collect()
}

/// Whether the node carries every constraint's topology key.
fn has_all_keys(node: &NodeInfo, constraints: &[Constraint]) -> bool {
    constraints.iter().all(|c| node.labels().contains_key(&c.topology_key))
}

/// Whether the node counts as part of the constraint's domains (upstream's node inclusion
/// policies).
fn included(c: &Constraint, pod: &PodInfo, node: &NodeInfo) -> bool {
    if c.honor_node_affinity && !node_affinity::matches_required(pod, node) {
        return false;
    }
    if c.honor_node_taints {
        let tolerations =
            pod.pod.spec.as_ref().and_then(|s| s.tolerations.as_deref()).unwrap_or(&[]);
        let taints = node.node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or(&[]);
        if taints.iter().any(|t| {
            matches!(t.effect.as_str(), "NoSchedule" | "NoExecute")
                && !tolerations_tolerate(tolerations, t)
        }) {
            return false;
        }
    }
    true
}

/// The node's pods in `namespace` that the selector matches, leaving out pods being
/// deleted. An empty selector counts none, as upstream.
fn count_matching(node: &NodeInfo, selector: &LabelSelector, namespace: &str) -> i64 {
    if selector.is_empty() {
        return 0;
    }
    node.pods
        .iter()
        .filter(|p| {
            p.pod.metadata.deletion_timestamp.is_none()
                && p.namespace() == namespace
                && selector.matches(pod_labels(p))
        })
        .count() as i64
}

/// What the filter needs: per constraint, matching pods per eligible domain.
struct FilterState {
    constraints: Vec<Constraint>,
    counts: Vec<HashMap<String, i64>>,
}

impl FilterState {
    /// The fewest matching pods in an eligible domain, or 0 while there are fewer eligible
    /// domains than `minDomains`.
    fn min_match(&self, i: usize) -> i64 {
        let counts = &self.counts[i];
        if (counts.len() as i64) < self.constraints[i].min_domains {
            return 0;
        }
        counts.values().copied().min().unwrap_or(0)
    }
}

fn pre_filter_state(pod: &PodInfo, nodes: &[&NodeInfo]) -> FilterState {
    let constraints = constraints(pod, "DoNotSchedule");
    let mut counts = vec![HashMap::new(); constraints.len()];
    for node in nodes {
        if !has_all_keys(node, &constraints) {
            continue;
        }
        for (i, c) in constraints.iter().enumerate() {
            if !included(c, pod, node) {
                continue;
            }
            let value = node.labels()[&c.topology_key].clone();
            *counts[i].entry(value).or_default() +=
                count_matching(node, &c.selector, pod.namespace());
        }
    }
    FilterState { constraints, counts }
}

/// What the score needs.
struct ScoreState {
    constraints: Vec<Constraint>,
    /// Feasible nodes lacking a topology key: they score 0.
    ignored: HashSet<String>,
    /// Per constraint (other than by hostname), matching pods per domain of a feasible node.
    counts: Vec<HashMap<String, i64>>,
    /// Per constraint, `ln(domains + 2)`: spreading over more domains weighs more.
    weights: Vec<f64>,
}

fn pre_score_state(pod: &PodInfo, feasible: &[&NodeInfo], nodes: &[&NodeInfo]) -> ScoreState {
    let constraints = constraints(pod, "ScheduleAnyway");
    // With the system defaults a node may lack a key (no zones): it is not left out.
    let require_all_keys = !system_defaulted(pod);
    let mut ignored = HashSet::new();
    let mut counts: Vec<HashMap<String, i64>> = vec![HashMap::new(); constraints.len()];
    for node in feasible {
        if require_all_keys && !has_all_keys(node, &constraints) {
            ignored.insert(node.name().to_string());
            continue;
        }
        for (i, c) in constraints.iter().enumerate() {
            if c.topology_key == HOSTNAME_LABEL {
                continue;
            }
            if let Some(value) = node.labels().get(&c.topology_key) {
                counts[i].entry(value.clone()).or_insert(0);
            }
        }
    }
    let weights = constraints
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let size = if c.topology_key == HOSTNAME_LABEL {
                feasible.len() - ignored.len()
            } else {
                counts[i].len()
            };
            ((size + 2) as f64).ln()
        })
        .collect();
    // Pods on every node count towards the domains of the feasible ones.
    for node in nodes {
        if require_all_keys && !has_all_keys(node, &constraints) {
            continue;
        }
        for (i, c) in constraints.iter().enumerate() {
            if c.topology_key == HOSTNAME_LABEL || !included(c, pod, node) {
                continue;
            }
            let Some(value) = node.labels().get(&c.topology_key) else { continue };
            if let Some(count) = counts[i].get_mut(value) {
                *count += count_matching(node, &c.selector, pod.namespace());
            }
        }
    }
    ScoreState { constraints, ignored, counts, weights }
}

impl FilterPlugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        "PodTopologySpread"
    }

    /// The filter as if the node were the whole cluster; the scheduler uses
    /// [`FilterPlugin::filter_with_state`], which sees every node.
    fn filter(&self, pod: &PodInfo, node: &NodeInfo) -> Result<(), Rejection> {
        crate::framework::filter_alone(self, pod, node)
    }

    /// Skips pods without `DoNotSchedule` constraints, as upstream does.
    fn pre_filter(&self, pod: &PodInfo, state: &mut CycleState<'_>) -> Result<Next, Rejection> {
        if !has_constraints(pod, "DoNotSchedule") {
            return Ok(Next::Skip);
        }
        let computed = pre_filter_state(pod, state.nodes);
        state.put(PRE_FILTER_KEY, computed);
        Ok(Next::Run)
    }

    fn filter_with_state(
        &self,
        pod: &PodInfo,
        node: &NodeInfo,
        state: &CycleState<'_>,
    ) -> Result<(), Rejection> {
        let Some(state) = state.get::<FilterState>(PRE_FILTER_KEY) else {
            return self.filter(pod, node);
        };
        let labels = pod_labels(pod);
        for (i, c) in state.constraints.iter().enumerate() {
            let Some(value) = node.labels().get(&c.topology_key) else {
                return Err(Rejection::new(ERR_REASON_NODE_LABEL_NOT_MATCH));
            };
            let self_match = i64::from(c.selector.matches(labels));
            let matching = state.counts[i].get(value).copied().unwrap_or(0);
            if matching + self_match - state.min_match(i) > c.max_skew {
                return Err(Rejection::new(ERR_REASON_CONSTRAINTS_NOT_MATCH));
            }
        }
        Ok(())
    }
}

impl ScorePlugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        "PodTopologySpread"
    }

    /// The score as if the node were the whole cluster; the scheduler uses
    /// [`ScorePlugin::score_with_state`].
    fn score(&self, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let nodes = [node];
        let mut state = CycleState::new(&nodes);
        match self.pre_score(pod, &nodes, &mut state) {
            Next::Skip => 0,
            Next::Run => self.score_with_state(pod, node, &state),
        }
    }

    /// Skips pods without `ScheduleAnyway` constraints, as upstream does.
    fn pre_score(&self, pod: &PodInfo, feasible: &[&NodeInfo], state: &mut CycleState<'_>) -> Next {
        if !has_constraints(pod, "ScheduleAnyway") {
            return Next::Skip;
        }
        let computed = pre_score_state(pod, feasible, state.nodes);
        state.put(PRE_SCORE_KEY, computed);
        Next::Run
    }

    /// The sum over constraints of `matching pods in the node's domain × domain weight +
    /// (maxSkew − 1)`, rounded: lower is better, [`ScorePlugin::normalize`] turns it around.
    /// A node lacking a topology key scores -1, which normalizing turns into 0 (the
    /// framework's normalize sees scores only, not node names).
    fn score_with_state(&self, pod: &PodInfo, node: &NodeInfo, state: &CycleState<'_>) -> i64 {
        let Some(state) = state.get::<ScoreState>(PRE_SCORE_KEY) else {
            return self.score(pod, node);
        };
        if state.ignored.contains(node.name()) {
            return -1;
        }
        let mut score = 0f64;
        for (i, c) in state.constraints.iter().enumerate() {
            let Some(value) = node.labels().get(&c.topology_key) else { continue };
            let count = if c.topology_key == HOSTNAME_LABEL {
                count_matching(node, &c.selector, pod.namespace())
            } else {
                state.counts[i].get(value).copied().unwrap_or(0)
            };
            score += count as f64 * state.weights[i] + (c.max_skew - 1) as f64;
        }
        score.round() as i64
    }

    /// Upstream's reversal: `100 × (max + min − score) / max` over the nodes not ignored;
    /// ignored nodes (negative raw score) get 0, and all get 100 when the maximum is 0.
    fn normalize(&self, _pod: &PodInfo, scores: &mut [i64]) {
        let counted = || scores.iter().copied().filter(|s| *s >= 0);
        let min = counted().min().unwrap_or(0);
        let max = counted().max().unwrap_or(0);
        for s in scores.iter_mut() {
            *s = if *s < 0 {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - *s) / max
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugins::testing::{filter_nodes, labelled_pod, pod, score_nodes, zone_node};

    const ZONE: &str = "topology.kubernetes.io/zone";
    const SPREAD: Option<&str> = Some(ERR_REASON_CONSTRAINTS_NOT_MATCH);

    fn web(name: &str) -> PodInfo {
        labelled_pod(name, json!({"app": "web"}), json!({}))
    }

    /// A web pod with these constraints (each gets `labelSelector: app=web` unless it has one).
    fn spread(
        labels: serde_json::Value,
        constraints: serde_json::Value,
        extra: serde_json::Value,
    ) -> PodInfo {
        let mut constraints = constraints;
        for c in constraints.as_array_mut().unwrap() {
            if c.get("labelSelector").is_none() {
                c["labelSelector"] = json!({"matchLabels": {"app": "web"}});
            }
        }
        let mut spec = json!({"topologySpreadConstraints": constraints});
        for (k, v) in extra.as_object().into_iter().flatten() {
            spec[k] = v.clone();
        }
        labelled_pod("web-new", labels, spec)
    }

    fn zone_constraint(extra: serde_json::Value) -> serde_json::Value {
        let mut c =
            json!({"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"});
        for (k, v) in extra.as_object().into_iter().flatten() {
            c[k] = v.clone();
        }
        c
    }

    fn verdicts(pod: &PodInfo, nodes: &[NodeInfo]) -> Vec<Option<String>> {
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        filter_nodes(&PodTopologySpread, pod, &refs)
    }

    fn owned(v: &[Option<&str>]) -> Vec<Option<String>> {
        v.iter().map(|r| r.map(str::to_string)).collect()
    }

    #[test]
    fn max_skew_against_the_emptiest_zone() {
        let other_ns = pod(json!({
            "metadata": {"name": "web-x", "namespace": "other", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}
        }));
        let deleting = pod(json!({
            "metadata": {"name": "web-d", "namespace": "default", "labels": {"app": "web"},
                         "deletionTimestamp": "2025-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}
        }));
        let nodes = [
            zone_node("node-1", "zone-a", vec![web("web-0"), web("web-1")]),
            zone_node("node-2", "zone-a", vec![]),
            zone_node("node-3", "zone-b", vec![web("web-2"), other_ns]),
            // Neither the pod in another namespace nor the one being deleted counts: zone-c
            // holds 0, so the minimum is 0.
            zone_node("node-4", "zone-c", vec![deleting]),
            zone_node("node-5", "", vec![]),
        ];
        let pod = spread(json!({"app": "web"}), json!([zone_constraint(json!({}))]), json!({}));
        // zone-a: 2 + 1 - 0 = 3 > 1; zone-b: 1 + 1 - 0 = 2 > 1; zone-c: 0 + 1 - 0 = 1.
        assert_eq!(
            verdicts(&pod, &nodes),
            owned(&[SPREAD, SPREAD, SPREAD, None, Some(ERR_REASON_NODE_LABEL_NOT_MATCH)])
        );
        // maxSkew 2 lets zone-b in.
        let pod = spread(
            json!({"app": "web"}),
            json!([zone_constraint(json!({"maxSkew": 2}))]),
            json!({}),
        );
        assert_eq!(verdicts(&pod, &nodes)[..4], owned(&[SPREAD, SPREAD, None, None])[..]);
        // A pod the selector does not match adds nothing to its own domain: 2 + 0 - 0 > 1
        // still, 1 + 0 - 0 = 1 passes.
        let pod = spread(json!({"app": "api"}), json!([zone_constraint(json!({}))]), json!({}));
        assert_eq!(verdicts(&pod, &nodes)[..4], owned(&[SPREAD, SPREAD, None, None])[..]);
        // ScheduleAnyway constraints do not filter.
        let pod = spread(
            json!({"app": "web"}),
            json!([zone_constraint(json!({"whenUnsatisfiable": "ScheduleAnyway"}))]),
            json!({}),
        );
        assert_eq!(verdicts(&pod, &nodes), owned(&[None; 5]));
    }

    #[test]
    fn min_domains_zeroes_the_minimum_while_domains_are_missing() {
        let nodes = [
            zone_node("node-1", "zone-a", vec![web("web-0")]),
            zone_node("node-2", "zone-b", vec![web("web-1")]),
        ];
        // Two domains with one each: 1 + 1 - 1 = 1.
        let pod = spread(json!({"app": "web"}), json!([zone_constraint(json!({}))]), json!({}));
        assert_eq!(verdicts(&pod, &nodes), owned(&[None, None]));
        // minDomains 3 with only two zones: the minimum counts as 0, 1 + 1 - 0 = 2 > 1.
        let pod = spread(
            json!({"app": "web"}),
            json!([zone_constraint(json!({"minDomains": 3}))]),
            json!({}),
        );
        assert_eq!(verdicts(&pod, &nodes), owned(&[SPREAD, SPREAD]));
    }

    #[test]
    fn node_inclusion_policies_decide_which_zones_count() {
        let mut ssd = zone_node("node-1", "zone-a", vec![web("web-0")]);
        let mut node = (*ssd.node).clone();
        node.metadata.labels.as_mut().unwrap().insert("disktype".into(), "ssd".into());
        ssd.set_node(std::sync::Arc::new(node));
        let nodes = [ssd, zone_node("node-2", "zone-b", vec![])];
        let selector = json!({"nodeSelector": {"disktype": "ssd"}});
        // Honor (default): zone-b's node does not match the pod's nodeSelector, so zone-a is
        // the only domain, its minimum 1: 1 + 1 - 1 = 1 on node-1.
        let pod =
            spread(json!({"app": "web"}), json!([zone_constraint(json!({}))]), selector.clone());
        assert_eq!(verdicts(&pod, &nodes)[0], None);
        // Ignore: zone-b counts with 0, 1 + 1 - 0 = 2 > 1.
        let pod = spread(
            json!({"app": "web"}),
            json!([zone_constraint(json!({"nodeAffinityPolicy": "Ignore"}))]),
            selector,
        );
        assert_eq!(verdicts(&pod, &nodes)[0].as_deref(), SPREAD);

        // Taints are ignored by default; with Honor an untolerated NoSchedule taint leaves
        // the node's zone out.
        let tainted = crate::plugins::testing::node(json!({
            "metadata": {"name": "node-2", "labels": {"kubernetes.io/hostname": "node-2", ZONE: "zone-b"}},
            "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}
        }));
        let nodes = [zone_node("node-1", "zone-a", vec![web("web-0")]), tainted];
        let pod = spread(json!({"app": "web"}), json!([zone_constraint(json!({}))]), json!({}));
        assert_eq!(verdicts(&pod, &nodes)[0].as_deref(), SPREAD);
        let pod = spread(
            json!({"app": "web"}),
            json!([zone_constraint(json!({"nodeTaintsPolicy": "Honor"}))]),
            json!({}),
        );
        assert_eq!(verdicts(&pod, &nodes)[0], None);
        // ... unless the pod tolerates it.
        let pod = spread(
            json!({"app": "web"}),
            json!([zone_constraint(json!({"nodeTaintsPolicy": "Honor"}))]),
            json!({"tolerations": [{"key": "dedicated", "operator": "Exists"}]}),
        );
        assert_eq!(verdicts(&pod, &nodes)[0].as_deref(), SPREAD);
    }

    #[test]
    fn match_label_keys_count_only_the_same_revision() {
        let old =
            |name| labelled_pod(name, json!({"app": "web", "pod-template-hash": "v1"}), json!({}));
        let nodes = [
            zone_node("node-1", "zone-a", vec![old("web-0"), old("web-1")]),
            zone_node("node-2", "zone-b", vec![]),
        ];
        let labels = json!({"app": "web", "pod-template-hash": "v2"});
        let pod = spread(labels.clone(), json!([zone_constraint(json!({}))]), json!({}));
        assert_eq!(verdicts(&pod, &nodes), owned(&[SPREAD, None]));
        let pod = spread(
            labels,
            json!([zone_constraint(json!({"matchLabelKeys": ["pod-template-hash"]}))]),
            json!({}),
        );
        assert_eq!(verdicts(&pod, &nodes), owned(&[None, None]));
    }

    #[test]
    fn schedule_anyway_scores_emptier_domains_higher() {
        let nodes = [
            zone_node("node-1", "zone-a", vec![web("web-0"), web("web-1")]),
            zone_node("node-2", "zone-a", vec![]),
            zone_node("node-3", "zone-b", vec![web("web-2")]),
            // No zone label: ignored, scores 0.
            zone_node("node-4", "", vec![]),
            // Not feasible, but its pods count for zone-b.
            zone_node("node-5", "zone-b", vec![web("web-3"), web("web-4"), web("web-5")]),
        ];
        let pod = spread(
            json!({"app": "web"}),
            json!([
                {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
                {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}
            ]),
            json!({}),
        );
        let all: Vec<&NodeInfo> = nodes.iter().collect();
        let (raw, normalized) = score_nodes(&PodTopologySpread, &pod, &all, &all[..4]);
        // Zone weight ln(2 zones + 2), hostname weight ln(3 counted nodes + 2):
        // node-1: 2*ln4 + 2*ln5 = 5.99 -> 6; node-2: 2*ln4 = 2.77 -> 3;
        // node-3: (1 + 3)*ln4 + 1*ln5 = 7.15 -> 7.
        assert_eq!(raw, [6, 3, 7, -1]);
        // 100 * (max + min - s) / max with min 3, max 7: 400/7, 700/7, 300/7.
        assert_eq!(normalized, [57, 100, 42, 0]);

        // maxSkew - 1 is added to every node's score, damping the differences.
        let pod = spread(
            json!({"app": "web"}),
            json!([{"maxSkew": 3, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}]),
            json!({}),
        );
        let (raw, normalized) = score_nodes(&PodTopologySpread, &pod, &all, &all[..3]);
        // ln4 = 1.386: node-1/2: 2*1.386 + 2 = 4.77 -> 5; node-3: 4*1.386 + 2 = 7.55 -> 8.
        assert_eq!(raw, [5, 5, 8]);
        // min 5, max 8: 100 * 8 / 8, 100 * 5 / 8.
        assert_eq!(normalized, [100, 100, 62]);

        // No constraints: not scored (upstream's Skip), every node the same.
        let (_, normalized) = score_nodes(&PodTopologySpread, &web("web-9"), &all, &all);
        assert_eq!(normalized, [0; 5]);
    }

    #[test]
    fn pods_without_constraints_of_a_kind_skip_that_extension_point() {
        let nodes = [zone_node("node-1", "zone-a", vec![web("web-0")])];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let mut state = CycleState::new(&refs);
        let plain = web("web-1");
        assert_eq!(PodTopologySpread.pre_filter(&plain, &mut state), Ok(Next::Skip));
        assert_eq!(PodTopologySpread.pre_score(&plain, &refs, &mut state), Next::Skip);
        let hard = spread(json!({"app": "web"}), json!([zone_constraint(json!({}))]), json!({}));
        assert_eq!(PodTopologySpread.pre_filter(&hard, &mut state), Ok(Next::Run));
        assert_eq!(PodTopologySpread.pre_score(&hard, &refs, &mut state), Next::Skip);
        let soft = spread(
            json!({"app": "web"}),
            json!([zone_constraint(json!({"whenUnsatisfiable": "ScheduleAnyway"}))]),
            json!({}),
        );
        assert_eq!(PodTopologySpread.pre_filter(&soft, &mut state), Ok(Next::Skip));
        assert_eq!(PodTopologySpread.pre_score(&soft, &refs, &mut state), Next::Run);
        // The single-node forms agree.
        assert_eq!(PodTopologySpread.filter(&plain, &nodes[0]), Ok(()));
        assert_eq!(PodTopologySpread.score(&plain, &nodes[0]), 0);
    }
}
