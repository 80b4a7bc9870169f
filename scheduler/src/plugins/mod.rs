//! The default plugins, each named as its kube-scheduler counterpart.
//!
//! [`default_profile`] wires them up as kube-scheduler v1.33's default profile does (same
//! order, same score weights), leaving out the plugins rkube does not have yet
//! (NodeVolumeLimits, VolumeZone, dynamic resources).

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as ApiLabelSelector;
use rkube_apis::selectors::LabelSelector;

use crate::framework::{NodeInfo, PodInfo, Profile, Weighted, MAX_NODE_SCORE};

pub mod image_locality;
pub mod interpod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_balanced_allocation;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod pod_topology_spread;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;

pub use image_locality::ImageLocality;
pub use interpod_affinity::InterPodAffinity;
pub use node_affinity::NodeAffinity;
pub use node_name::NodeName;
pub use node_ports::NodePorts;
pub use node_resources_balanced_allocation::NodeResourcesBalancedAllocation;
pub use node_resources_fit::NodeResourcesFit;
pub use node_unschedulable::NodeUnschedulable;
pub use pod_topology_spread::PodTopologySpread;
pub use taint_toleration::TaintToleration;
pub use volume_binding::VolumeBinding;
pub use volume_restrictions::VolumeRestrictions;

/// The scheduler name pods get when they name none.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// kube-scheduler's default profile: filters in upstream's order (cheap, unresolvable checks
/// first), scores with upstream's weights.
pub fn default_profile() -> Profile {
    Profile {
        scheduler_name: DEFAULT_SCHEDULER_NAME.to_string(),
        filters: vec![
            Box::new(NodeUnschedulable),
            Box::new(NodeName),
            Box::new(TaintToleration),
            Box::new(NodeAffinity),
            Box::new(NodePorts),
            Box::new(NodeResourcesFit::default()),
            Box::new(VolumeRestrictions),
            Box::new(VolumeBinding),
            Box::new(PodTopologySpread),
            Box::new(InterPodAffinity),
        ],
        scores: vec![
            Weighted { plugin: Box::new(TaintToleration), weight: 3 },
            Weighted { plugin: Box::new(NodeAffinity), weight: 2 },
            Weighted { plugin: Box::new(NodeResourcesFit::default()), weight: 1 },
            Weighted { plugin: Box::new(PodTopologySpread), weight: 2 },
            Weighted { plugin: Box::new(InterPodAffinity), weight: 2 },
            Weighted { plugin: Box::new(NodeResourcesBalancedAllocation), weight: 1 },
            Weighted { plugin: Box::new(ImageLocality), weight: 1 },
        ],
        percentage_of_nodes_to_score: 0,
    }
}

pub use rkube_apis::taints::{tolerates, tolerations_tolerate};

/// The pod's labels (none when it has no `metadata.labels`).
pub fn pod_labels(pod: &PodInfo) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    pod.pod.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

/// A `metav1.LabelSelector` as upstream's `LabelSelectorAsSelector` reads it: absent matches
/// nothing, `{}` matches everything. `also` are labels the selector must require besides
/// (what `matchLabelKeys` adds); they are not added to an absent selector. A selector the
/// API server should have refused (bad operator or key) matches nothing.
pub fn label_selector(
    selector: Option<&ApiLabelSelector>,
    also: &BTreeMap<String, String>,
) -> LabelSelector {
    let Some(selector) = selector else { return LabelSelector::nothing() };
    let Ok(mut value) = serde_json::to_value(selector) else { return LabelSelector::nothing() };
    if !also.is_empty() {
        let extra = also
            .iter()
            .map(|(k, v)| serde_json::json!({"key": k, "operator": "In", "values": [v]}));
        let object = value.as_object_mut().expect("a label selector is an object");
        match object.get_mut("matchExpressions").and_then(|e| e.as_array_mut()) {
            Some(expressions) => expressions.extend(extra),
            None => {
                object.insert("matchExpressions".into(), extra.collect());
            }
        }
    }
    LabelSelector::from_api(&value).unwrap_or_else(|_| LabelSelector::nothing())
}

/// Amounts per topology domain: per topology key, per value of that label (matching pods
/// counted, or scores summed, in a cycle's PreFilter or PreScore). Looked up with a node's
/// labels without allocating, since that happens for every node.
#[derive(Debug, Default)]
pub struct TopologyCounts(HashMap<String, HashMap<String, i64>>);

impl TopologyCounts {
    /// Adds `amount` to the domain `key=value`.
    pub fn add(&mut self, key: &str, value: &str, amount: i64) {
        if !self.0.contains_key(key) {
            self.0.insert(key.to_string(), HashMap::new());
        }
        let values = self.0.get_mut(key).expect("just inserted");
        match values.get_mut(value) {
            Some(total) => *total += amount,
            None => {
                values.insert(value.to_string(), amount);
            }
        }
    }

    /// The amount for the domain `key=value` (0 when nothing was added).
    pub fn get(&self, key: &str, value: &str) -> i64 {
        self.0.get(key).and_then(|values| values.get(value)).copied().unwrap_or(0)
    }

    /// True when nothing was added to any domain.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether one of the domains the node is in has a positive amount.
    pub fn any_positive(&self, node: &NodeInfo) -> bool {
        let labels = node.labels();
        self.0.iter().any(|(key, values)| {
            labels.get(key).and_then(|v| values.get(v)).is_some_and(|amount| *amount > 0)
        })
    }

    /// The sum of the amounts of the domains the node is in.
    pub fn sum_for(&self, node: &NodeInfo) -> i64 {
        let labels = node.labels();
        self.0.iter().filter_map(|(key, values)| labels.get(key).and_then(|v| values.get(v))).sum()
    }
}

/// Upstream's `DefaultNormalizeScore`: scales scores so the highest becomes
/// [`MAX_NODE_SCORE`], and with `reverse` turns them around so that the lowest raw score
/// wins. All-zero scores stay zero, or all become the maximum when reversed.
pub fn default_normalize(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0).max(0);
    if max == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = MAX_NODE_SCORE);
        }
        return;
    }
    for s in scores.iter_mut() {
        let scaled = MAX_NODE_SCORE * *s / max;
        *s = if reverse { MAX_NODE_SCORE - scaled } else { scaled };
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Builders for realistic objects from JSON, as a user would write them.

    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{Node, Pod};

    use crate::framework::{CycleState, FilterPlugin, Next, NodeInfo, PodInfo, ScorePlugin};

    pub fn pod(value: serde_json::Value) -> PodInfo {
        let pod: Pod = serde_json::from_value(value).expect("valid pod");
        PodInfo::new(Arc::new(pod))
    }

    /// A pod with one container `app` requesting the given resources.
    pub fn pod_requesting(name: &str, requests: serde_json::Value) -> PodInfo {
        pod(serde_json::json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27", "resources": {"requests": requests}}]}
        }))
    }

    pub fn node(value: serde_json::Value) -> NodeInfo {
        let node: Node = serde_json::from_value(value).expect("valid node");
        NodeInfo::new(Arc::new(node))
    }

    /// A node named `name` with the given allocatable resources and these pods on it.
    pub fn node_with(name: &str, allocatable: serde_json::Value, pods: Vec<PodInfo>) -> NodeInfo {
        let mut info = node(serde_json::json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": allocatable, "capacity": allocatable}
        }));
        for p in pods {
            info.add_pod(Arc::new(p));
        }
        info
    }

    /// The usual small worker: 2 CPUs, 4Gi memory, 110 pods.
    pub fn small_node(name: &str, pods: Vec<PodInfo>) -> NodeInfo {
        node_with(name, serde_json::json!({"cpu": "2", "memory": "4Gi", "pods": "110"}), pods)
    }

    /// A small worker in `zone` (`topology.kubernetes.io/zone`; none when empty).
    pub fn zone_node(name: &str, zone: &str, pods: Vec<PodInfo>) -> NodeInfo {
        let mut labels = serde_json::json!({"kubernetes.io/hostname": name});
        if !zone.is_empty() {
            labels["topology.kubernetes.io/zone"] = zone.into();
        }
        let allocatable = serde_json::json!({"cpu": "2", "memory": "4Gi", "pods": "110"});
        let mut info = node(serde_json::json!({
            "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": allocatable, "capacity": allocatable}
        }));
        for p in pods {
            info.add_pod(Arc::new(p));
        }
        info
    }

    /// A pod in `default` with these labels, one `nginx` container and `spec` merged in.
    pub fn labelled_pod(name: &str, labels: serde_json::Value, spec: serde_json::Value) -> PodInfo {
        let mut full = serde_json::json!({"containers": [{"name": "app", "image": "nginx:1.27"}]});
        for (k, v) in spec.as_object().into_iter().flatten() {
            full[k] = v.clone();
        }
        pod(serde_json::json!({
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": full
        }))
    }

    /// A filter's verdict on each node as a cycle reaches it (pre-filter over all nodes):
    /// `None` when the node passes (every node, when the plugin skips the pod), else its
    /// first reason.
    pub fn filter_nodes(
        plugin: &dyn FilterPlugin,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
    ) -> Vec<Option<String>> {
        let mut state = CycleState::new(nodes);
        if plugin.pre_filter(pod, &mut state).expect("pre-filter passes") == Next::Skip {
            // Nothing to check: every node passes.
            return vec![None; nodes.len()];
        }
        nodes
            .iter()
            .map(|n| plugin.filter_with_state(pod, n, &state).err().map(|r| r.reasons.join("; ")))
            .collect()
    }

    /// A score's raw and normalized values for the `feasible` nodes, with `nodes` the
    /// whole cluster; all 0 when the plugin skips the pod.
    pub fn score_nodes(
        plugin: &dyn ScorePlugin,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        feasible: &[&NodeInfo],
    ) -> (Vec<i64>, Vec<i64>) {
        let mut state = CycleState::new(nodes);
        if plugin.pre_score(pod, feasible, &mut state) == Next::Skip {
            // Not scored: the plugin adds nothing to any node.
            return (vec![0; feasible.len()], vec![0; feasible.len()]);
        }
        let raw: Vec<i64> =
            feasible.iter().map(|n| plugin.score_with_state(pod, n, &state)).collect();
        let mut normalized = raw.clone();
        plugin.normalize(pod, &mut normalized);
        (raw, normalized)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_profile_matches_kube_scheduler() {
        let profile = default_profile();
        assert_eq!(profile.scheduler_name, "default-scheduler");
        let filters: Vec<_> = profile.filters.iter().map(|f| f.name()).collect();
        assert_eq!(
            filters,
            [
                "NodeUnschedulable",
                "NodeName",
                "TaintToleration",
                "NodeAffinity",
                "NodePorts",
                "NodeResourcesFit",
                "VolumeRestrictions",
                "VolumeBinding",
                "PodTopologySpread",
                "InterPodAffinity"
            ]
        );
        let scores: Vec<_> = profile.scores.iter().map(|w| (w.plugin.name(), w.weight)).collect();
        assert_eq!(
            scores,
            [
                ("TaintToleration", 3),
                ("NodeAffinity", 2),
                ("NodeResourcesFit", 1),
                ("PodTopologySpread", 2),
                ("InterPodAffinity", 2),
                ("NodeResourcesBalancedAllocation", 1),
                ("ImageLocality", 1)
            ]
        );
    }

    #[test]
    fn topology_counts_look_up_a_node_by_its_labels() {
        use crate::plugins::testing::zone_node;
        let mut counts = TopologyCounts::default();
        assert!(counts.is_empty());
        counts.add("topology.kubernetes.io/zone", "zone-a", 2);
        counts.add("topology.kubernetes.io/zone", "zone-a", -2);
        counts.add("topology.kubernetes.io/zone", "zone-b", 3);
        counts.add("kubernetes.io/hostname", "node-1", 1);
        assert!(!counts.is_empty());
        assert_eq!(counts.get("topology.kubernetes.io/zone", "zone-a"), 0);
        assert_eq!(counts.get("topology.kubernetes.io/zone", "zone-c"), 0);
        let (a1, a2, b3) = (
            zone_node("node-1", "zone-a", vec![]),
            zone_node("node-2", "zone-a", vec![]),
            zone_node("node-3", "zone-b", vec![]),
        );
        assert_eq!((counts.sum_for(&a1), counts.sum_for(&a2), counts.sum_for(&b3)), (1, 0, 3));
        assert!(counts.any_positive(&a1) && !counts.any_positive(&a2) && counts.any_positive(&b3));
    }

    #[test]
    fn default_normalize_scales_and_reverses() {
        let mut s = [0, 5, 10];
        default_normalize(&mut s, false);
        assert_eq!(s, [0, 50, 100]);
        let mut s = [0, 1, 3];
        default_normalize(&mut s, true);
        // 100*1/3 = 33 -> 67; 3 -> 0.
        assert_eq!(s, [100, 67, 0]);
        let mut s = [0, 0];
        default_normalize(&mut s, true);
        assert_eq!(s, [100, 100]);
        let mut s = [0, 0];
        default_normalize(&mut s, false);
        assert_eq!(s, [0, 0]);
    }
}
