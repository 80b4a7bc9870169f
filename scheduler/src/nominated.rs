//! Pods waiting for the node preemption nominated them to (`status.nominatedNodeName`),
//! upstream's nominator: while a preemptor waits for its victims to go, the room they free
//! is its. A pod of lower priority is filtered against each such node as if the nominated
//! pods of equal or higher priority were on it already (upstream's
//! `RunFilterPluginsWithNominatedPods`), so that it cannot take the freed room first: without
//! this, a victim's ReplicaSet makes a new pod that lands where the victim was, the
//! preemptor preempts again, and so on.
//!
//! Simplified: the views add the nominated pods to the node for the filters; the cycle's
//! pre-filter state (inter-pod affinity and topology spread counts) does not include them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use crate::framework::{NodeInfo, PodInfo};
use crate::queue::PodKey;

/// The nominated pods, by key.
#[derive(Default)]
pub struct Nominated {
    pods: HashMap<PodKey, (String, Arc<PodInfo>)>,
}

impl Nominated {
    /// A pod waiting for a node: kept when it has a nominated node, forgotten otherwise.
    pub fn pending(&mut self, key: &PodKey, pod: &Arc<Pod>) {
        let node = pod.status.as_ref().and_then(|s| s.nominated_node_name.as_deref());
        match node.filter(|n| !n.is_empty()) {
            Some(node) => {
                self.pods
                    .insert(key.clone(), (node.to_string(), Arc::new(PodInfo::new(pod.clone()))));
            }
            None => self.forget(key),
        }
    }

    /// The pod got a node, or is gone.
    pub fn forget(&mut self, key: &PodKey) {
        self.pods.remove(key);
    }

    /// For `pod`, the nodes that have nominated pods of at least its priority (other than
    /// itself), each with those pods added. Empty (and nothing copied) in the common case.
    pub fn views(
        &self,
        pod: &PodInfo,
        nodes: &BTreeMap<String, NodeInfo>,
    ) -> HashMap<String, NodeInfo> {
        let mut views: HashMap<String, NodeInfo> = HashMap::new();
        for (key, (node, nominated)) in &self.pods {
            if nominated.priority() < pod.priority() || pod.is(&key.namespace, &key.name) {
                continue;
            }
            let Some(info) = nodes.get(node) else { continue };
            views.entry(node.clone()).or_insert_with(|| info.clone()).add_pod(nominated.clone());
        }
        views
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{node_with, pod};
    use serde_json::json;

    fn nominated_pod(name: &str, priority: i32, node: &str) -> Arc<Pod> {
        let mut p: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"priority": priority, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"nominatedNodeName": node}
        }))
        .unwrap();
        p.status.get_or_insert_default();
        Arc::new(p)
    }

    fn key(name: &str) -> PodKey {
        PodKey { namespace: "default".into(), name: name.into() }
    }

    #[test]
    fn pods_of_lower_priority_see_the_nominated_pods_on_their_node() {
        let mut nodes = BTreeMap::new();
        nodes.insert("n1".to_string(), node_with("n1", json!({"cpu": "2"}), vec![]));
        nodes.insert("n2".to_string(), node_with("n2", json!({"cpu": "2"}), vec![]));
        let mut nominated = Nominated::default();
        nominated.pending(&key("preemptor"), &nominated_pod("preemptor", 100, "n1"));

        let low = pod(
            json!({"metadata": {"name": "low", "namespace": "default"}, "spec": {"priority": 1, "containers": []}}),
        );
        let views = nominated.views(&low, &nodes);
        assert_eq!(views.keys().collect::<Vec<_>>(), ["n1"]);
        assert_eq!(views["n1"].pods.len(), 1);
        assert_eq!(views["n1"].requested.milli_cpu, 1000);

        // Not for pods of higher priority, nor for the nominated pod itself.
        let high = pod(
            json!({"metadata": {"name": "high", "namespace": "default"}, "spec": {"priority": 1000, "containers": []}}),
        );
        assert!(nominated.views(&high, &nodes).is_empty());
        let itself = PodInfo::new(nominated_pod("preemptor", 100, "n1"));
        assert!(nominated.views(&itself, &nodes).is_empty());

        // Bound or no longer nominated: forgotten.
        let mut plain = (*nominated_pod("preemptor", 100, "n1")).clone();
        plain.status = None;
        nominated.pending(&key("preemptor"), &Arc::new(plain));
        assert!(nominated.views(&low, &nodes).is_empty());
    }
}
