//! `NodeResourcesBalancedAllocation`: favours nodes whose CPU and memory would be used in
//! the same proportion with the pod on them, so neither runs out while the other idles.

use crate::framework::{CycleState, Next, NodeInfo, PodInfo, ScorePlugin, MAX_NODE_SCORE};

pub struct NodeResourcesBalancedAllocation;

fn best_effort(pod: &PodInfo) -> bool {
    pod.requests.milli_cpu == 0 && pod.requests.memory == 0
}

impl ScorePlugin for NodeResourcesBalancedAllocation {
    fn name(&self) -> &'static str {
        "NodeResourcesBalancedAllocation"
    }

    /// Pods requesting neither CPU nor memory are not scored (upstream skips them, so they
    /// do not all pile onto one node).
    fn pre_score(
        &self,
        pod: &PodInfo,
        _feasible: &[&NodeInfo],
        _state: &mut CycleState<'_>,
    ) -> Next {
        if best_effort(pod) {
            Next::Skip
        } else {
            Next::Run
        }
    }

    /// `(1 - std) * 100` over the requested fractions of CPU and memory (each capped at 1),
    /// counting requests as they are (no non-zero defaults). For two resources the standard
    /// deviation is `|f_cpu - f_mem| / 2`. Best-effort pods score 0 (see `pre_score`).
    fn score(&self, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let want = &pod.requests;
        if best_effort(pod) {
            return 0;
        }
        let pairs = [
            (node.requested.milli_cpu + want.milli_cpu, node.allocatable.milli_cpu),
            (node.requested.memory + want.memory, node.allocatable.memory),
        ];
        // Only the resources the node has count; runs per node, so no allocation.
        let mut fractions = [0f64; 2];
        let mut n = 0;
        for (req, alloc) in pairs {
            if alloc != 0 {
                fractions[n] = (req as f64 / alloc as f64).min(1.0);
                n += 1;
            }
        }
        let std = if n == 2 { ((fractions[0] - fractions[1]) / 2.0).abs() } else { 0.0 };
        ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugins::testing::{node_with, pod_requesting, small_node};

    #[test]
    fn balanced_nodes_score_higher() {
        let plugin = NodeResourcesBalancedAllocation;
        // Node 2000m / 4Gi with 1000m / 1Gi requested; pod 500m / 1Gi.
        //   cpu 1500/2000 = 0.75, memory 2Gi/4Gi = 0.5, std = 0.125 -> 87.5 -> 87.
        let busy =
            small_node("busy", vec![pod_requesting("db", json!({"cpu": "1", "memory": "1Gi"}))]);
        let web = pod_requesting("web", json!({"cpu": "500m", "memory": "1Gi"}));
        assert_eq!(plugin.score(&web, &busy), 87);
        // Empty node: 0.25 and 0.25 -> std 0 -> 100.
        assert_eq!(plugin.score(&web, &small_node("idle", vec![])), 100);
        // CPU-only pod on an empty node: 1000/2000 = 0.5, memory 0 -> std 0.25 -> 75.
        let cpu_only = pod_requesting("batch", json!({"cpu": "1"}));
        assert_eq!(plugin.score(&cpu_only, &small_node("idle", vec![])), 75);
        // Fractions are capped at 1: cpu 4000/2000 -> 1, memory 0.25 -> std 0.375 -> 62.5 -> 62.
        let big = pod_requesting("big", json!({"cpu": "4", "memory": "1Gi"}));
        assert_eq!(plugin.score(&big, &small_node("idle", vec![])), 62);
    }

    #[test]
    fn best_effort_pods_and_unknown_allocatable() {
        let plugin = NodeResourcesBalancedAllocation;
        assert_eq!(plugin.score(&pod_requesting("be", json!({})), &small_node("idle", vec![])), 0);
        // Only memory is known: one fraction, std 0 -> 100.
        let node = node_with("m", json!({"memory": "4Gi", "pods": "110"}), vec![]);
        assert_eq!(
            plugin.score(&pod_requesting("p", json!({"cpu": "1", "memory": "3Gi"})), &node),
            100
        );
    }

    #[test]
    fn best_effort_pods_skip_the_score() {
        use crate::framework::CycleState;
        let nodes = [small_node("idle", vec![])];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let mut state = CycleState::new(&refs);
        let plugin = NodeResourcesBalancedAllocation;
        assert_eq!(
            plugin.pre_score(&pod_requesting("be", json!({})), &refs, &mut state),
            Next::Skip
        );
        let web = pod_requesting("web", json!({"cpu": "100m"}));
        assert_eq!(plugin.pre_score(&web, &refs, &mut state), Next::Run);
    }
}
