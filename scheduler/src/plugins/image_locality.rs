//! `ImageLocality`: favours nodes that already have the pod's images, by their size, so
//! that big pulls are avoided; images found on few nodes count for less, so that pods do
//! not all crowd onto the one node that has them.
//!
//! An image's spread is the share of all the cluster's nodes (not only the feasible ones)
//! whose `status.images` list its name; [`ImageLocality`] counts them once per cycle in
//! `pre_score`, looking the pod's images up with [`NodeInfo::image_size`].

use k8s_openapi::api::core::v1::Pod;

use crate::framework::{CycleState, Next, NodeInfo, PodInfo, ScorePlugin, MAX_NODE_SCORE};

const PRE_SCORE_KEY: &str = "PreScoreImageLocality";

/// Each of the pod's containers' images (normalized), with the share of the cluster's
/// nodes that have it.
struct Spread {
    images: Vec<(String, f64)>,
}

const MB: i64 = 1024 * 1024;
/// Below this, what a node has counts as nothing (upstream's `minThreshold`).
pub const MIN_THRESHOLD: i64 = 23 * MB;
/// Above this per container, more makes no difference (upstream's `maxContainerThreshold`).
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

pub struct ImageLocality;

/// The name a node would report for the image: a reference without a tag gets `:latest`.
pub fn normalized_image_name(name: &str) -> String {
    let tag = name.rfind(':').map_or(-1, |i| i as i64);
    let slash = name.rfind('/').map_or(-1, |i| i as i64);
    if tag <= slash {
        format!("{name}:latest")
    } else {
        name.to_string()
    }
}

/// The size of the image on the node (`status.images`), if it has it.
fn image_size(node: &NodeInfo, image: &str) -> Option<i64> {
    node.image_size(image)
}

fn images(pod: &Pod) -> impl Iterator<Item = &str> {
    pod.spec.iter().flat_map(|s| {
        s.init_containers
            .iter()
            .flatten()
            .chain(s.containers.iter())
            .filter_map(|c| c.image.as_deref())
    })
}

fn containers(pod: &PodInfo) -> usize {
    pod.pod
        .spec
        .as_ref()
        .map_or(0, |s| s.containers.len() + s.init_containers.as_ref().map_or(0, Vec::len))
}

/// The sum over the pod's containers (init containers too) of the size of each image the
/// node has, each scaled by `spread(image)`: the share of the cluster's nodes that have it.
pub fn sum_image_scores(pod: &Pod, node: &NodeInfo, spread: impl Fn(&str) -> f64) -> i64 {
    images(pod)
        .filter_map(|image| {
            let name = normalized_image_name(image);
            image_size(node, &name).map(|size| (size as f64 * spread(&name)) as i64)
        })
        .sum()
}

/// The score for a sum of image scores: 0 below [`MIN_THRESHOLD`], 100 at
/// [`MAX_CONTAINER_THRESHOLD`] per container, linear between.
pub fn calculate_priority(sum: i64, containers: usize) -> i64 {
    let max = MAX_CONTAINER_THRESHOLD * containers as i64;
    let sum = sum.clamp(MIN_THRESHOLD, max.max(MIN_THRESHOLD));
    if max <= MIN_THRESHOLD {
        return 0;
    }
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max - MIN_THRESHOLD)
}

/// The score of a node given how widely each image is spread over the cluster.
pub fn score_with_spread(pod: &PodInfo, node: &NodeInfo, spread: impl Fn(&str) -> f64) -> i64 {
    calculate_priority(sum_image_scores(&pod.pod, node, spread), containers(pod))
}

impl ScorePlugin for ImageLocality {
    fn name(&self) -> &'static str {
        "ImageLocality"
    }

    /// Without the cycle's view of the cluster the image's spread is taken as 1 (as in a
    /// one-node cluster); the scheduler uses [`ScorePlugin::score_with_state`].
    fn score(&self, pod: &PodInfo, node: &NodeInfo) -> i64 {
        score_with_spread(pod, node, |_| 1.0)
    }

    /// Counts the nodes having each image. When no node has any, every node would score 0:
    /// the score is skipped.
    fn pre_score(
        &self,
        pod: &PodInfo,
        _feasible: &[&NodeInfo],
        state: &mut CycleState<'_>,
    ) -> Next {
        let names: Vec<String> = images(&pod.pod).map(normalized_image_name).collect();
        let mut distinct: Vec<(&str, usize)> = Vec::new();
        for name in &names {
            if !distinct.iter().any(|(n, _)| n == name) {
                distinct.push((name, 0));
            }
        }
        for node in state.nodes {
            if !node.has_images() {
                continue;
            }
            for (name, count) in distinct.iter_mut() {
                if node.image_size(name).is_some() {
                    *count += 1;
                }
            }
        }
        if distinct.iter().all(|(_, count)| *count == 0) {
            return Next::Skip;
        }
        let total = state.nodes.len().max(1) as f64;
        let spread = |name: &str| {
            distinct.iter().find(|(n, _)| *n == name).map_or(0, |(_, c)| *c) as f64 / total
        };
        let images = names.iter().map(|n| (n.clone(), spread(n))).collect();
        state.put(PRE_SCORE_KEY, Spread { images });
        Next::Run
    }

    /// Each image's size counts in proportion to the share of nodes that have it.
    fn score_with_state(&self, pod: &PodInfo, node: &NodeInfo, state: &CycleState<'_>) -> i64 {
        let Some(spread) = state.get::<Spread>(PRE_SCORE_KEY) else {
            return self.score(pod, node);
        };
        let sum = spread
            .images
            .iter()
            .filter_map(|(name, share)| {
                image_size(node, name).map(|size| (size as f64 * share) as i64)
            })
            .sum();
        calculate_priority(sum, containers(pod))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugins::testing::{node, pod};

    fn node_with_images(images: serde_json::Value) -> NodeInfo {
        node(json!({
            "metadata": {"name": "worker-1"},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}, "images": images}
        }))
    }

    fn pod_with_images(images: &[&str]) -> PodInfo {
        let containers: Vec<_> = images
            .iter()
            .enumerate()
            .map(|(i, img)| json!({"name": format!("c{i}"), "image": img}))
            .collect();
        pod(json!({"metadata": {"name": "p"}, "spec": {"containers": containers}}))
    }

    #[test]
    fn normalizes_untagged_references() {
        assert_eq!(normalized_image_name("nginx"), "nginx:latest");
        assert_eq!(normalized_image_name("nginx:1.27"), "nginx:1.27");
        assert_eq!(normalized_image_name("localhost:5000/app"), "localhost:5000/app:latest");
        assert_eq!(normalized_image_name("localhost:5000/app:v1"), "localhost:5000/app:v1");
        assert_eq!(
            normalized_image_name("registry.k8s.io/pause@sha256:abc"),
            "registry.k8s.io/pause@sha256:abc"
        );
    }

    #[test]
    fn scores_by_the_size_of_images_present() {
        let node = node_with_images(json!([
            {"names": ["docker.io/library/nginx:1.27", "docker.io/library/nginx@sha256:aaa"], "sizeBytes": 500 * MB},
            {"names": ["gcr.io/app:latest"], "sizeBytes": 300 * MB},
            {"names": ["tiny:1"], "sizeBytes": 10 * MB}
        ]));
        // One container, 500MB present: 100 * (500 - 23) / (1000 - 23) = 48.8 -> 48.
        assert_eq!(
            ImageLocality.score(&pod_with_images(&["docker.io/library/nginx:1.27"]), &node),
            48
        );
        // Two containers, 500 + 300 = 800MB of 2000MB: 100 * (800 - 23) / (2000 - 23) = 39.3 -> 39.
        assert_eq!(
            ImageLocality
                .score(&pod_with_images(&["docker.io/library/nginx:1.27", "gcr.io/app"]), &node),
            39
        );
        // Below the minimum threshold, and absent images, score 0.
        assert_eq!(ImageLocality.score(&pod_with_images(&["tiny:1"]), &node), 0);
        assert_eq!(ImageLocality.score(&pod_with_images(&["busybox"]), &node), 0);
        // An untagged reference matches only the :latest name the node reports.
        assert_eq!(ImageLocality.score(&pod_with_images(&["docker.io/library/nginx"]), &node), 0);
        // Above the per-container maximum it is capped at 100.
        let huge = node_with_images(json!([{"names": ["big:1"], "sizeBytes": 4000 * MB}]));
        assert_eq!(ImageLocality.score(&pod_with_images(&["big:1"]), &huge), 100);
    }

    #[test]
    fn spread_scales_each_image() {
        let node = node_with_images(json!([{"names": ["app:1"], "sizeBytes": 1000 * MB}]));
        // On 1 node of 4: 250MB counts -> 100 * (250 - 23) / 977 = 23.2 -> 23.
        assert_eq!(score_with_spread(&pod_with_images(&["app:1"]), &node, |_| 0.25), 23);
    }

    #[test]
    fn pre_score_counts_the_nodes_with_each_image() {
        use crate::framework::CycleState;
        let with = |name: &str, images: serde_json::Value| {
            node(json!({
                "metadata": {"name": name},
                "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}, "images": images}
            }))
        };
        let nodes = [
            with(
                "worker-1",
                json!([
                    {"names": ["registry.example/app:1"], "sizeBytes": 1000 * MB},
                    {"names": ["registry.example/sidecar:2"], "sizeBytes": 600 * MB}
                ]),
            ),
            with(
                "worker-2",
                json!([{"names": ["registry.example/sidecar:2"], "sizeBytes": 600 * MB}]),
            ),
            with("worker-3", json!([])),
            with("worker-4", json!([{"names": ["unrelated:1"], "sizeBytes": 900 * MB}])),
        ];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let pod = pod_with_images(&["registry.example/app:1", "registry.example/sidecar:2"]);
        let mut state = CycleState::new(&refs);
        // Only worker-1 and worker-2 passed the filters; all four count for the spread.
        assert_eq!(ImageLocality.pre_score(&pod, &refs[..2], &mut state), Next::Run);
        let scores: Vec<i64> =
            refs.iter().map(|n| ImageLocality.score_with_state(&pod, n, &state)).collect();
        // worker-1: 1000MB * 1/4 + 600MB * 2/4 = 550MB of 2 * 1000MB:
        //   100 * (550 - 23) / (2000 - 23) = 26.7 -> 26.
        // worker-2: 600MB * 2/4 = 300MB: 100 * (300 - 23) / 1977 = 14.01 -> 14.
        assert_eq!(scores, [26, 14, 0, 0]);
        // Without spread (every image taken as on every node) worker-1 would score
        // 100 * (1600 - 23) / 1977 = 79.
        assert_eq!(ImageLocality.score(&pod, &nodes[0]), 79);
    }

    #[test]
    fn no_node_with_the_images_skips_the_score() {
        use crate::framework::CycleState;
        let nodes = [
            node_with_images(json!([{"names": ["unrelated:1"], "sizeBytes": 900 * MB}])),
            node_with_images(json!([])),
        ];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let mut state = CycleState::new(&refs);
        assert_eq!(
            ImageLocality.pre_score(&pod_with_images(&["app:1"]), &refs, &mut state),
            Next::Skip
        );
        assert_eq!(
            ImageLocality.pre_score(&pod_with_images(&["unrelated:1"]), &refs, &mut state),
            Next::Run
        );
    }

    #[test]
    fn node_images_follow_node_updates() {
        let mut info = node_with_images(
            json!([{"names": ["app:1", "app@sha256:aaa"], "sizeBytes": 500 * MB}]),
        );
        assert_eq!(info.image_size("app@sha256:aaa"), Some(500 * MB));
        assert!(info.has_images());
        let mut updated = (*info.node).clone();
        updated.status.as_mut().unwrap().images = None;
        info.set_node(std::sync::Arc::new(updated));
        assert!(!info.has_images());
        assert_eq!(ImageLocality.score(&pod_with_images(&["app:1"]), &info), 0);
    }
}
