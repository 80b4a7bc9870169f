//! `NodeResourcesFit`: the pod's requests must fit in what the node has left (allocatable
//! minus what its pods request), and, as a score, nodes are ranked by how much of their CPU
//! and memory would be requested with the pod on them: `LeastAllocated` (the default, which
//! spreads pods) or `MostAllocated` (which packs them).

use crate::framework::{FilterPlugin, NodeInfo, PodInfo, Rejection, ScorePlugin, MAX_NODE_SCORE};

pub use crate::resources::{non_zero_requests, DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST};

/// How `NodeResourcesFit` scores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScoringStrategy {
    /// Favour nodes with the most room left.
    #[default]
    LeastAllocated,
    /// Favour nodes that are already the fullest (bin packing).
    MostAllocated,
}

/// The resources scored and their weights: upstream's default, CPU and memory at 1 each.
const SCORED: [(Scored, i64); 2] = [(Scored::Cpu, 1), (Scored::Memory, 1)];

#[derive(Clone, Copy)]
enum Scored {
    Cpu,
    Memory,
}

#[derive(Clone, Debug, Default)]
pub struct NodeResourcesFit {
    pub strategy: ScoringStrategy,
}

impl NodeResourcesFit {
    pub fn least_allocated() -> NodeResourcesFit {
        NodeResourcesFit { strategy: ScoringStrategy::LeastAllocated }
    }

    pub fn most_allocated() -> NodeResourcesFit {
        NodeResourcesFit { strategy: ScoringStrategy::MostAllocated }
    }
}

/// Every reason the pod does not fit, in upstream's order: pod count, cpu, memory,
/// ephemeral storage, then extended resources by name.
pub fn insufficient_resources(pod: &PodInfo, node: &NodeInfo) -> Vec<String> {
    let mut reasons = Vec::new();
    let (want, alloc, used) = (&pod.requests, &node.allocatable, &node.requested);
    if node.pods.len() as i64 + 1 > alloc.pods {
        reasons.push("Too many pods".to_string());
    }
    if want.milli_cpu > 0 && want.milli_cpu > alloc.milli_cpu - used.milli_cpu {
        reasons.push("Insufficient cpu".to_string());
    }
    if want.memory > 0 && want.memory > alloc.memory - used.memory {
        reasons.push("Insufficient memory".to_string());
    }
    if want.ephemeral_storage > 0
        && want.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage
    {
        reasons.push("Insufficient ephemeral-storage".to_string());
    }
    for (name, &amount) in &want.scalar {
        if amount == 0 {
            continue;
        }
        let free = alloc.scalar.get(name).copied().unwrap_or(0)
            - used.scalar.get(name).copied().unwrap_or(0);
        if amount > free {
            reasons.push(format!("Insufficient {name}"));
        }
    }
    reasons
}

impl FilterPlugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        "NodeResourcesFit"
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo) -> Result<(), Rejection> {
        let reasons = insufficient_resources(pod, node);
        if reasons.is_empty() {
            Ok(())
        } else {
            Err(Rejection { reasons })
        }
    }
}

fn least_requested(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

fn most_requested(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested.min(capacity) * MAX_NODE_SCORE / capacity
}

impl ScorePlugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        "NodeResourcesFit"
    }

    /// The weighted mean of the per-resource scores over the resources the node has,
    /// counting what the node's pods and this pod request with the non-zero defaults.
    fn score(&self, pod: &PodInfo, node: &NodeInfo) -> i64 {
        // Both computed when the pods entered the cache, not per cycle.
        let pod_req = pod.non_zero_requests;
        let node_req = node.non_zero_requested;
        let (mut total, mut weights) = (0, 0);
        for (resource, weight) in SCORED {
            let (alloc, requested) = match resource {
                Scored::Cpu => (node.allocatable.milli_cpu, node_req.0 + pod_req.0),
                Scored::Memory => (node.allocatable.memory, node_req.1 + pod_req.1),
            };
            if alloc == 0 {
                continue;
            }
            let score = match self.strategy {
                ScoringStrategy::LeastAllocated => least_requested(requested, alloc),
                ScoringStrategy::MostAllocated => most_requested(requested, alloc),
            };
            total += score * weight;
            weights += weight;
        }
        if weights == 0 {
            0
        } else {
            total / weights
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugins::testing::{node_with, pod, pod_requesting, small_node};

    fn reject(reasons: &[&str]) -> Result<(), Rejection> {
        Err(Rejection { reasons: reasons.iter().map(|r| r.to_string()).collect() })
    }

    #[test]
    fn fits_what_is_left_after_the_pods_already_there() {
        // 2 CPUs / 4Gi, with 1500m and 3Gi already requested: 500m and 1Gi are left.
        let node = small_node(
            "worker-1",
            vec![
                pod_requesting("db", json!({"cpu": "1", "memory": "2Gi"})),
                pod_requesting("cache", json!({"cpu": "500m", "memory": "1Gi"})),
            ],
        );
        let fit = NodeResourcesFit::default();
        let exact = pod_requesting("web", json!({"cpu": "500m", "memory": "1Gi"}));
        assert_eq!(fit.filter(&exact, &node), Ok(()));
        let cpu = pod_requesting("web", json!({"cpu": "501m", "memory": "1Gi"}));
        assert_eq!(fit.filter(&cpu, &node), reject(&["Insufficient cpu"]));
        let both = pod_requesting("web", json!({"cpu": "1", "memory": "1025Mi"}));
        assert_eq!(fit.filter(&both, &node), reject(&["Insufficient cpu", "Insufficient memory"]));
        // A pod without requests fits wherever a pod slot is free.
        let best_effort = pod_requesting("web", json!({}));
        assert_eq!(fit.filter(&best_effort, &node), Ok(()));
    }

    #[test]
    fn counts_pod_slots_and_reports_every_shortage() {
        let full = node_with(
            "tiny",
            json!({"cpu": "1", "memory": "1Gi", "pods": "2", "ephemeral-storage": "10Gi"}),
            vec![
                pod_requesting("a", json!({})),
                pod_requesting("b", json!({"ephemeral-storage": "8Gi"})),
            ],
        );
        let fit = NodeResourcesFit::default();
        let greedy = pod_requesting(
            "greedy",
            json!({"cpu": "2", "memory": "2Gi", "ephemeral-storage": "4Gi", "example.com/foo": "1"}),
        );
        assert_eq!(
            fit.filter(&greedy, &full),
            reject(&[
                "Too many pods",
                "Insufficient cpu",
                "Insufficient memory",
                "Insufficient ephemeral-storage",
                "Insufficient example.com/foo"
            ])
        );
        let small = pod_requesting("small", json!({}));
        assert_eq!(fit.filter(&small, &full), reject(&["Too many pods"]));
    }

    #[test]
    fn extended_resources_count_against_allocatable() {
        let gpu_node = node_with(
            "gpu-1",
            json!({"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "2"}),
            vec![pod_requesting("train", json!({"nvidia.com/gpu": "1"}))],
        );
        let fit = NodeResourcesFit::default();
        assert_eq!(
            fit.filter(&pod_requesting("a", json!({"nvidia.com/gpu": "1"})), &gpu_node),
            Ok(())
        );
        assert_eq!(
            fit.filter(&pod_requesting("b", json!({"nvidia.com/gpu": "2"})), &gpu_node),
            reject(&["Insufficient nvidia.com/gpu"])
        );
        // A zero request for a resource the node lacks is no request.
        assert_eq!(
            fit.filter(&pod_requesting("c", json!({"example.com/foo": "0"})), &gpu_node),
            Ok(())
        );
    }

    #[test]
    fn non_zero_requests_fill_in_missing_container_requests() {
        let p = pod(json!({
            "metadata": {"name": "p"},
            "spec": {
                "containers": [
                    {"name": "a"},
                    {"name": "b", "resources": {"requests": {"cpu": "250m"}}},
                    {"name": "c", "resources": {"requests": {"cpu": "0", "memory": "0"}}}
                ],
                "overhead": {"cpu": "10m", "memory": "1Mi"}
            }
        }));
        // a: 100m/200Mi defaults, b: 250m/200Mi default, c: explicit zeros stay zero.
        assert_eq!(non_zero_requests(&p.pod), (100 + 250 + 10, (400 + 1) << 20));
    }

    #[test]
    fn least_allocated_scores_by_room_left() {
        // Node: 2000m / 4Gi, pods there request 1000m / 1Gi. Incoming pod 500m / 1Gi.
        //   cpu:    (2000 - 1500) * 100 / 2000 = 25
        //   memory: (4Gi - 2Gi) * 100 / 4Gi    = 50
        //   (25 + 50) / 2 = 37
        let busy =
            small_node("busy", vec![pod_requesting("db", json!({"cpu": "1", "memory": "1Gi"}))]);
        let web = pod_requesting("web", json!({"cpu": "500m", "memory": "1Gi"}));
        let fit = NodeResourcesFit::default();
        assert_eq!(fit.score(&web, &busy), 37);
        // Empty node: cpu (2000-500)*100/2000 = 75, memory 75 -> 75.
        assert_eq!(fit.score(&web, &small_node("idle", vec![])), 75);
    }

    #[test]
    fn least_allocated_counts_best_effort_pods_at_the_defaults() {
        // Two best-effort pods on the node count 200m / 400Mi; the incoming best-effort pod
        // 100m / 200Mi. cpu: (2000-300)*100/2000 = 85; memory: (4096-600)*100/4096 = 85.35 -> 85.
        let node =
            small_node("w", vec![pod_requesting("a", json!({})), pod_requesting("b", json!({}))]);
        let incoming = pod_requesting("c", json!({}));
        assert_eq!(NodeResourcesFit::default().score(&incoming, &node), 85);
    }

    #[test]
    fn least_allocated_gives_zero_for_overcommitted_resources() {
        // cpu requested 3000m > 2000m: 0; memory (4Gi - 1Gi)*100/4Gi = 75 -> (0 + 75) / 2 = 37.
        let node =
            small_node("w", vec![pod_requesting("a", json!({"cpu": "2", "memory": "512Mi"}))]);
        let incoming = pod_requesting("b", json!({"cpu": "1", "memory": "512Mi"}));
        assert_eq!(NodeResourcesFit::default().score(&incoming, &node), 37);
    }

    #[test]
    fn most_allocated_scores_by_how_full_the_node_gets() {
        // Node 2000m / 4Gi with 1000m / 1Gi requested; pod 500m / 1Gi.
        //   cpu 1500*100/2000 = 75, memory 2Gi*100/4Gi = 50 -> 62.
        let busy =
            small_node("busy", vec![pod_requesting("db", json!({"cpu": "1", "memory": "1Gi"}))]);
        let web = pod_requesting("web", json!({"cpu": "500m", "memory": "1Gi"}));
        let fit = NodeResourcesFit::most_allocated();
        assert_eq!(fit.score(&web, &busy), 62);
        assert_eq!(fit.score(&web, &small_node("idle", vec![])), 25);
        // Overcommit is capped at 100: cpu 3000 -> 100, memory 1Gi+512Mi... (1.5Gi*100/4Gi = 37.5 -> 37).
        let over = small_node("w", vec![pod_requesting("a", json!({"cpu": "2", "memory": "1Gi"}))]);
        let p = pod_requesting("b", json!({"cpu": "1", "memory": "512Mi"}));
        assert_eq!(fit.score(&p, &over), (100 + 37) / 2);
    }

    #[test]
    fn nodes_without_allocatable_resources_are_skipped_in_the_mean() {
        // Only memory is known: (4Gi - 1Gi)*100/4Gi = 75.
        let node = node_with("m", json!({"memory": "4Gi", "pods": "110"}), vec![]);
        let p = pod_requesting("b", json!({"cpu": "1", "memory": "1Gi"}));
        assert_eq!(NodeResourcesFit::default().score(&p, &node), 75);
        let nothing = node_with("n", json!({}), vec![]);
        assert_eq!(NodeResourcesFit::default().score(&p, &nothing), 0);
    }
}
