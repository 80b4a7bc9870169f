//! The pod garbage collector, as kube-controller-manager's `pod-garbage-collector-controller`
//! (`podgc`): every 20 seconds it force-deletes (grace period 0)
//!
//! - the oldest terminated pods (phase `Succeeded` or `Failed`) beyond
//!   `--terminated-pod-gc-threshold` (evicted ones first, then by creation; 0 turns this off);
//! - pods being deleted on a node that is not Ready and carries the
//!   `node.kubernetes.io/out-of-service` taint (no kubelet will finish them);
//! - pods bound to a node that no longer exists: a node missing from the cache is first held
//!   in quarantine for 40 seconds (it may be on its way), then confirmed gone by a read of the
//!   API server; its pods get the `DisruptionTarget` condition (reason `DeletionByPodGC`);
//! - pods being deleted that were never scheduled.
//!
//! A pod not yet finished is marked `Failed` (with the condition, where there is one) before
//! it is deleted, as upstream does, so that its controllers see why it went.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::Client;
use rkube_runtime::store::Store;
use serde_json::{json, Value};
use tokio::time::Instant;

/// The taint that says a node is out of service (its pods may go without its kubelet).
const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";
/// How many deletions of one pass run at once.
const PARALLEL_DELETES: usize = 32;

/// The collector's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// `--terminated-pod-gc-threshold`: terminated pods kept before the oldest are deleted;
    /// 0 keeps them all.
    pub terminated_pod_gc_threshold: i32,
    /// How often the collector looks (upstream's `gcCheckPeriod`).
    pub period: Duration,
    /// How long a node missing from the cache is waited for (upstream's `quarantineTime`).
    pub quarantine: Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            terminated_pod_gc_threshold: 12500,
            period: Duration::from_secs(20),
            quarantine: Duration::from_secs(40),
        }
    }
}

/// Runs the collector until the task is aborted; `nodes` and `pods` are shared informers'
/// stores.
pub async fn run(client: Client, config: Config, nodes: Store<Node>, pods: Store<Pod>) {
    if nodes.wait_until_ready().await.is_err() || pods.wait_until_ready().await.is_err() {
        return;
    }
    tracing::info!(threshold = config.terminated_pod_gc_threshold, "pod garbage collector started");
    let mut gc = PodGc { client, config, nodes, pods, quarantined: HashMap::new() };
    let mut tick = tokio::time::interval(gc.config.period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        gc.pass().await;
    }
}

struct PodGc {
    client: Client,
    config: Config,
    nodes: Store<Node>,
    pods: Store<Pod>,
    /// Nodes that pods are bound to but the cache does not have, with when they are checked.
    quarantined: HashMap<String, Instant>,
}

/// Whether the pod has finished (upstream counts any phase but Pending, Running, Unknown).
fn is_terminated(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("");
    !matches!(phase, "Pending" | "Running" | "Unknown")
}

/// Whether the kubelet evicted the pod (upstream's `PodIsEvicted`).
fn is_evicted(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|s| {
        s.phase.as_deref() == Some("Failed") && s.reason.as_deref() == Some("Evicted")
    })
}

/// Evicted pods first, then the oldest, then by name (upstream's
/// `byEvictionAndCreationTimestamp`).
fn sort_for_deletion(pods: &mut [Arc<Pod>]) {
    pods.sort_by(|a, b| {
        let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
        is_evicted(b)
            .cmp(&is_evicted(a))
            .then_with(|| created(a).cmp(&created(b)))
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
}

/// The terminated pods beyond `threshold`, the ones to go first first.
fn terminated_over(pods: &[Arc<Pod>], threshold: i32) -> Vec<Arc<Pod>> {
    let mut terminated: Vec<Arc<Pod>> = pods.iter().filter(|p| is_terminated(p)).cloned().collect();
    let over = terminated.len().saturating_sub(usize::try_from(threshold).unwrap_or(0));
    if over == 0 {
        return Vec::new();
    }
    sort_for_deletion(&mut terminated);
    terminated.truncate(over);
    terminated
}

fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Pods being deleted on a node that is not Ready and is tainted out of service.
fn terminating_out_of_service(
    pods: &[Arc<Pod>],
    nodes: &HashMap<String, Arc<Node>>,
) -> Vec<Arc<Pod>> {
    let mut found: Vec<Arc<Pod>> = pods
        .iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_some())
        .filter(|pod| {
            let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("");
            nodes.get(node).is_some_and(|node| {
                let taints = node.spec.as_ref().and_then(|s| s.taints.as_ref());
                !is_ready(node) && taints.is_some_and(|t| t.iter().any(|t| t.key == OUT_OF_SERVICE))
            })
        })
        .cloned()
        .collect();
    sort_for_deletion(&mut found);
    found
}

/// Pods being deleted that no node was ever given.
fn unscheduled_terminating(pods: &[Arc<Pod>]) -> Vec<Arc<Pod>> {
    pods.iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_some())
        .filter(|pod| {
            pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("").is_empty()
        })
        .cloned()
        .collect()
}

fn node_of(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("")
}

fn key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or(""),
        pod.metadata.name.as_deref().unwrap_or("")
    )
}

impl PodGc {
    async fn pass(&mut self) {
        let pods = self.pods.state();
        let nodes: HashMap<String, Arc<Node>> = self
            .nodes
            .state()
            .into_iter()
            .map(|n| (n.metadata.name.clone().unwrap_or_default(), n))
            .collect();
        let threshold = self.config.terminated_pod_gc_threshold;
        if threshold > 0 {
            let over = terminated_over(&pods, threshold);
            if !over.is_empty() {
                tracing::info!(pods = over.len(), "garbage collecting terminated pods");
                self.delete_all(over, None).await;
            }
        }
        let stranded = terminating_out_of_service(&pods, &nodes);
        self.delete_all(stranded, None).await;
        let orphaned = self.orphaned(&pods, &nodes).await;
        let condition = json!({
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "DeletionByPodGC",
            "message": "PodGC: node no longer exists",
        });
        for pod in &orphaned {
            tracing::info!(
                pod = key(pod),
                node = node_of(pod),
                "found an orphaned pod, deleting it"
            );
        }
        self.delete_all(orphaned, Some(condition)).await;
        self.delete_all(unscheduled_terminating(&pods), None).await;
    }

    /// The pods bound to nodes confirmed gone: missing from the cache for the quarantine,
    /// then not found by the API server.
    async fn orphaned(
        &mut self,
        pods: &[Arc<Pod>],
        nodes: &HashMap<String, Arc<Node>>,
    ) -> Vec<Arc<Pod>> {
        let now = Instant::now();
        for pod in pods {
            let node = node_of(pod);
            if !node.is_empty() && !nodes.contains_key(node) {
                self.quarantined.entry(node.to_string()).or_insert(now + self.config.quarantine);
            }
        }
        let due: Vec<String> =
            self.quarantined.iter().filter(|(_, at)| **at <= now).map(|(n, _)| n.clone()).collect();
        let mut deleted = HashSet::new();
        let api: Api<Node> = Api::all(self.client.clone());
        for node in due {
            self.quarantined.remove(&node);
            if nodes.contains_key(&node) {
                continue;
            }
            // A later pass quarantines it again if its pods are still there.
            match api.get_opt(&node).await {
                Ok(None) => {
                    deleted.insert(node);
                }
                Ok(Some(_)) => {}
                Err(e) => tracing::warn!(node, error = %e, "cannot tell whether the node exists"),
            }
        }
        pods.iter().filter(|pod| deleted.contains(node_of(pod))).cloned().collect()
    }

    async fn delete_all(&self, pods: Vec<Arc<Pod>>, condition: Option<Value>) {
        futures::stream::iter(pods)
            .for_each_concurrent(PARALLEL_DELETES, |pod| {
                let condition = condition.clone();
                async move {
                    if let Err(e) = self.mark_failed_and_delete(&pod, condition).await {
                        tracing::warn!(pod = key(&pod), error = %e, "cannot delete the pod");
                    }
                }
            })
            .await;
    }

    /// Marks a pod that has not finished `Failed` (with `condition`), then deletes it with a
    /// grace period of 0 (upstream's `markFailedAndDeletePodWithCondition`).
    async fn mark_failed_and_delete(
        &self,
        pod: &Pod,
        condition: Option<Value>,
    ) -> Result<(), kube::Error> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        tracing::info!(pod = key(pod), "PodGC is force deleting Pod");
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if !matches!(phase, Some("Succeeded" | "Failed")) {
            let mut status = json!({"phase": "Failed"});
            if let Some(mut condition) = condition {
                condition["lastTransitionTime"] = json!(Time(Timestamp::now()));
                status["conditions"] = json!([condition]);
            }
            // The uid names this very pod, as upstream's status patch does.
            let patch = json!({"metadata": {"uid": pod.metadata.uid}, "status": status});
            match api.patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch)).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        match api.delete(name, &DeleteParams::default().grace_period(0)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, created: &str, phase: &str) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
                "spec": {"nodeName": "n", "containers": []},
                "status": {"phase": phase},
            }))
            .unwrap(),
        )
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<&str> {
        pods.iter().map(|p| p.metadata.name.as_deref().unwrap()).collect()
    }

    #[test]
    fn the_oldest_terminated_pods_beyond_the_threshold_go_evicted_first() {
        let mut evicted = (*pod("evicted", "2025-01-01T00:09:00Z", "Failed")).clone();
        evicted.status.as_mut().unwrap().reason = Some("Evicted".into());
        let pods = vec![
            pod("young", "2025-01-01T00:08:00Z", "Succeeded"),
            pod("running", "2025-01-01T00:00:00Z", "Running"),
            pod("old-b", "2025-01-01T00:01:00Z", "Failed"),
            pod("old-a", "2025-01-01T00:01:00Z", "Succeeded"),
            Arc::new(evicted),
            pod("pending", "2025-01-01T00:00:00Z", "Pending"),
        ];
        assert_eq!(names(&terminated_over(&pods, 2)), ["evicted", "old-a"]);
        assert_eq!(names(&terminated_over(&pods, 1)), ["evicted", "old-a", "old-b"]);
        assert!(terminated_over(&pods, 4).is_empty());
    }

    #[test]
    fn terminating_pods_on_out_of_service_nodes_and_unscheduled_ones() {
        let node = |name: &str, ready: &str, taint: bool| {
            let mut node = json!({"metadata": {"name": name},
                "status": {"conditions": [{"type": "Ready", "status": ready}]}});
            if taint {
                node["spec"] = json!({"taints": [{"key": OUT_OF_SERVICE, "effect": "NoExecute"}]});
            }
            let node: Node = serde_json::from_value(node).unwrap();
            (name.to_string(), Arc::new(node))
        };
        let nodes: HashMap<_, _> = [
            node("down", "False", true),
            node("up", "True", true),
            node("untainted", "Unknown", false),
        ]
        .into_iter()
        .collect();
        let on = |name: &str, node: &str, deleting: bool| {
            let mut p = (*pod(name, "2025-01-01T00:00:00Z", "Running")).clone();
            p.spec.as_mut().unwrap().node_name = Some(node.to_string()).filter(|n| !n.is_empty());
            if deleting {
                p.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
            }
            Arc::new(p)
        };
        let pods = vec![
            on("stuck", "down", true),
            on("alive", "down", false),
            on("ready-node", "up", true),
            on("untainted", "untainted", true),
            on("never-placed", "", true),
            on("waiting", "", false),
        ];
        assert_eq!(names(&terminating_out_of_service(&pods, &nodes)), ["stuck"]);
        assert_eq!(names(&unscheduled_terminating(&pods)), ["never-placed"]);
    }
}
