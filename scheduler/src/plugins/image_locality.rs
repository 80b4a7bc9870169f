//! `ImageLocality`: favours nodes that already have the pod's images, by their size, so
//! that big pulls are avoided; images found on few nodes count for less, so that pods do
//! not all crowd onto the one node that has them.

use k8s_openapi::api::core::v1::Pod;

use crate::framework::{NodeInfo, PodInfo, ScorePlugin, MAX_NODE_SCORE};

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
    node.node
        .status
        .as_ref()?
        .images
        .as_ref()?
        .iter()
        .find(|i| i.names.iter().flatten().any(|n| n == image))
        .map(|i| i.size_bytes.unwrap_or(0))
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
    let containers = pod
        .pod
        .spec
        .as_ref()
        .map_or(0, |s| s.containers.len() + s.init_containers.as_ref().map_or(0, Vec::len));
    calculate_priority(sum_image_scores(&pod.pod, node, spread), containers)
}

impl ScorePlugin for ImageLocality {
    fn name(&self) -> &'static str {
        "ImageLocality"
    }

    /// The framework gives a score plugin one node at a time, so the image's spread over the
    /// cluster is not known here and is taken as 1 (as in a one-node cluster). Callers with
    /// the whole snapshot can use [`score_with_spread`].
    fn score(&self, pod: &PodInfo, node: &NodeInfo) -> i64 {
        score_with_spread(pod, node, |_| 1.0)
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
}
