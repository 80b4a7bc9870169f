//! The scheduling loop: watches nodes and pods through the API, keeps a cache of nodes with
//! the pods on them, queues the pods waiting for a node, and for each runs the profile's
//! filters and scores, binds it through `pods/{name}/binding`, and records the outcome the
//! way kube-scheduler does (`PodScheduled` condition, `Scheduled` / `FailedScheduling`
//! events).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event as WatchEvent};
use kube::Client;
use rand::seq::IndexedRandom;
use serde_json::json;

use crate::framework::{CycleState, NodeInfo, PodInfo, Profile, MAX_NODE_SCORE};
use crate::queue::{PodKey, Queue};

/// The cluster as the scheduler sees it, kept up to date event by event: each node with the
/// pods on it (so a scheduling cycle copies nothing).
#[derive(Default)]
struct Cache {
    nodes: BTreeMap<String, NodeInfo>,
    /// Every pod with a node (bound, or assumed bound by us), by key.
    assigned: HashMap<PodKey, (String, Arc<PodInfo>)>,
    /// Pods waiting for a node, by key.
    pending: HashMap<PodKey, Arc<Pod>>,
    /// Pods whose binding is in flight: assumed on their node, not to be scheduled again.
    binding: std::collections::HashSet<PodKey>,
}

impl Cache {
    fn assign(&mut self, key: PodKey, node: String, pod: Arc<PodInfo>) {
        self.unassign(&key);
        if let Some(info) = self.nodes.get_mut(&node) {
            info.add_pod(pod.clone());
        }
        self.assigned.insert(key, (node, pod));
    }

    /// Returns true when the pod was on a node.
    fn unassign(&mut self, key: &PodKey) -> bool {
        match self.assigned.remove(key) {
            Some((node, _)) => {
                if let Some(info) = self.nodes.get_mut(&node) {
                    info.remove_pod(&key.namespace, &key.name);
                }
                true
            }
            None => false,
        }
    }

    fn set_node(&mut self, node: Node) {
        let name = node.metadata.name.clone().unwrap_or_default();
        let node = Arc::new(node);
        match self.nodes.get_mut(&name) {
            Some(info) => info.set_node(node),
            None => {
                // A new (or returning) node: gather the pods already bound to it.
                let mut info = NodeInfo::new(node);
                for (on, pod) in self.assigned.values() {
                    if *on == name {
                        info.add_pod(pod.clone());
                    }
                }
                self.nodes.insert(name, info);
            }
        }
    }
}

fn key_of(pod: &Pod) -> PodKey {
    PodKey {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone().unwrap_or_default(),
    }
}

/// True for a pod this scheduler should place.
fn wants_scheduling(pod: &Pod, scheduler_name: &str) -> bool {
    let spec = pod.spec.as_ref();
    let unassigned = spec.and_then(|s| s.node_name.as_deref()).is_none_or(str::is_empty);
    let ours = spec.and_then(|s| s.scheduler_name.as_deref()).unwrap_or("default-scheduler")
        == scheduler_name;
    let finished = matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    );
    unassigned && ours && !finished && pod.metadata.deletion_timestamp.is_none()
}

/// The result of a binding, reported back to the loop by the task that sent it.
struct BindResult {
    key: PodKey,
    pod: Arc<Pod>,
    node: String,
    error: Option<String>,
}

/// Runs the scheduler until the task is aborted.
pub async fn run(client: Client, profile: Profile) {
    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::all(client.clone());
    let mut node_events = watcher::watcher(nodes, watcher::Config::default()).boxed();
    let mut pod_events = watcher::watcher(pods, watcher::Config::default()).boxed();
    let mut cache = Cache::default();
    let mut queue = Queue::default();
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    // Bindings run in the background, as kube-scheduler's binding cycle does: the pod is
    // assumed on its node at once, so the next cycle already counts it.
    let (bound_tx, mut bound_rx) = tokio::sync::mpsc::unbounded_channel::<BindResult>();
    loop {
        tokio::select! {
            biased;
            event = node_events.next() => match event {
                Some(Ok(e)) => {
                    on_node_event(&mut cache, e);
                    // A node appeared or changed: pods that fit nowhere may fit now.
                    queue.cluster_changed();
                }
                Some(Err(e)) => tracing::warn!(error = %e, "node watch"),
                None => return,
            },
            event = pod_events.next() => match event {
                Some(Ok(e)) => on_pod_event(&mut cache, &mut queue, &profile.scheduler_name, e),
                Some(Err(e)) => tracing::warn!(error = %e, "pod watch"),
                None => return,
            },
            Some(result) = bound_rx.recv() => {
                cache.binding.remove(&result.key);
                if let Some(error) = result.error {
                    // Forget the assumption and try again later.
                    tracing::warn!(pod = %result.key, node = result.node, error, "binding failed; backing off");
                    cache.unassign(&result.key);
                    cache.pending.insert(result.key.clone(), result.pod);
                    queue.backoff(result.key);
                }
            }
            _ = tick.tick() => queue.flush_backoff(),
            _ = std::future::ready(()), if queue.has_ready() => {
                let Some(key) = queue.pop() else { continue };
                let Some(pod) = cache.pending.get(&key).cloned() else { continue };
                let info = PodInfo::new(pod.clone());
                let nodes: Vec<&NodeInfo> = cache.nodes.values().collect();
                match decide(&profile, &info, &nodes) {
                    Ok(node) => {
                        cache.pending.remove(&key);
                        cache.assign(key.clone(), node.clone(), Arc::new(info));
                        cache.binding.insert(key.clone());
                        queue.done(&key);
                        let (client, tx) = (client.clone(), bound_tx.clone());
                        tokio::spawn(async move {
                            let error = match bind(&client, &pod, &node).await {
                                Ok(()) => {
                                    record_scheduled(&client, &pod, &node).await;
                                    None
                                }
                                Err(e) => Some(e.to_string()),
                            };
                            let _ = tx.send(BindResult { key, pod, node, error });
                        });
                    }
                    Err(message) => {
                        tracing::debug!(pod = %key, message, "unschedulable");
                        let preemption = (info.may_preempt() && info.priority() > 0)
                            .then(|| crate::preemption::find(&profile, &info, &nodes))
                            .flatten();
                        queue.unschedulable(key);
                        let client = client.clone();
                        tokio::spawn(async move {
                            record_unschedulable(&client, &pod, &message).await;
                            if let Some(plan) = preemption {
                                crate::preemption::carry_out(&client, &pod, plan).await;
                            }
                        });
                    }
                }
            }
        }
    }
}

fn on_node_event(cache: &mut Cache, event: WatchEvent<Node>) {
    match event {
        WatchEvent::Apply(node) | WatchEvent::InitApply(node) => cache.set_node(node),
        WatchEvent::Delete(node) => {
            cache.nodes.remove(node.metadata.name.as_deref().unwrap_or(""));
        }
        WatchEvent::Init => cache.nodes.clear(),
        WatchEvent::InitDone => {}
    }
}

fn on_pod_event(
    cache: &mut Cache,
    queue: &mut Queue,
    scheduler_name: &str,
    event: WatchEvent<Pod>,
) {
    match event {
        WatchEvent::Apply(pod) | WatchEvent::InitApply(pod) => {
            let key = key_of(&pod);
            let node =
                pod.spec.as_ref().and_then(|s| s.node_name.clone()).filter(|n| !n.is_empty());
            let finished = matches!(
                pod.status.as_ref().and_then(|s| s.phase.as_deref()),
                Some("Succeeded" | "Failed")
            );
            match node {
                Some(node) if !finished => {
                    cache.pending.remove(&key);
                    queue.done(&key);
                    cache.assign(key, node, Arc::new(PodInfo::new(Arc::new(pod))));
                }
                Some(_) => {
                    // A finished pod frees its node's resources.
                    if cache.unassign(&key) {
                        queue.cluster_changed();
                    }
                }
                None if cache.binding.contains(&key) => {}
                None if wants_scheduling(&pod, scheduler_name) => {
                    let known = cache.pending.insert(key.clone(), Arc::new(pod)).is_some();
                    if !known {
                        queue.add(key);
                    } else {
                        // The pod changed (labels, tolerations, ...): try it again.
                        queue.pod_updated(&key);
                    }
                }
                None => {
                    cache.pending.remove(&key);
                    queue.done(&key);
                }
            }
        }
        WatchEvent::Delete(pod) => {
            let key = key_of(&pod);
            cache.pending.remove(&key);
            queue.done(&key);
            if cache.unassign(&key) {
                // Room freed on a node.
                queue.cluster_changed();
            }
        }
        WatchEvent::Init => {
            let keys: Vec<PodKey> = cache.assigned.keys().cloned().collect();
            for key in keys {
                cache.unassign(&key);
            }
            cache.pending.clear();
        }
        WatchEvent::InitDone => {}
    }
}

/// Runs filters and scores over the nodes; the chosen node, or upstream's message for why
/// there is none (`0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had ...`).
pub fn decide(profile: &Profile, pod: &PodInfo, nodes: &[&NodeInfo]) -> Result<String, String> {
    if nodes.is_empty() {
        return Err("no nodes available to schedule pods".to_string());
    }
    let mut state = CycleState::new(nodes);
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let unschedulable = |reasons: &BTreeMap<String, usize>| {
        let listed: Vec<String> =
            reasons.iter().map(|(reason, n)| format!("{n} {reason}")).collect();
        format!(
            "0/{} nodes are available: {}. preemption: 0/{} nodes are available: {} Preemption is not helpful for scheduling.",
            nodes.len(),
            listed.join(", "),
            nodes.len(),
            nodes.len()
        )
    };
    for filter in &profile.filters {
        if let Err(rejection) = filter.pre_filter(pod, &mut state) {
            // The pod fits no node at all, for the same reasons everywhere.
            for reason in rejection.reasons {
                *reasons.entry(reason).or_default() += nodes.len();
            }
            return Err(unschedulable(&reasons));
        }
    }
    let mut feasible: Vec<&NodeInfo> = Vec::new();
    for node in nodes.iter().copied() {
        let rejected =
            profile.filters.iter().find_map(|f| f.filter_with_state(pod, node, &state).err());
        match rejected {
            None => feasible.push(node),
            Some(r) => {
                for reason in r.reasons {
                    *reasons.entry(reason).or_default() += 1;
                }
            }
        }
    }
    if feasible.is_empty() {
        return Err(unschedulable(&reasons));
    }
    if feasible.len() == 1 {
        return Ok(feasible[0].name().to_string());
    }
    let mut totals = vec![0i64; feasible.len()];
    for weighted in &profile.scores {
        weighted.plugin.pre_score(pod, &feasible, &mut state);
        let mut scores: Vec<i64> =
            feasible.iter().map(|n| weighted.plugin.score_with_state(pod, n, &state)).collect();
        weighted.plugin.normalize(pod, &mut scores);
        for (total, score) in totals.iter_mut().zip(scores) {
            *total += score.clamp(0, MAX_NODE_SCORE) * weighted.weight;
        }
    }
    let best = totals.iter().copied().max().unwrap_or(0);
    let winners: Vec<&NodeInfo> =
        feasible.iter().zip(&totals).filter(|(_, t)| **t == best).map(|(n, _)| *n).collect();
    // Ties are broken at random, as upstream does.
    let chosen = winners.choose(&mut rand::rng()).expect("at least one winner");
    Ok(chosen.name().to_string())
}

async fn bind(client: &Client, pod: &Pod, node: &str) -> Result<(), kube::Error> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let binding = json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace, "uid": pod.metadata.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    });
    let _: serde_json::Value =
        pods.create_subresource("binding", name, &PostParams::default(), &binding).await?;
    Ok(())
}

fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `PodScheduled=False` with the reason, and a `FailedScheduling` event.
async fn record_unschedulable(client: &Client, pod: &Pod, message: &str) {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let already =
        pod.status.as_ref().and_then(|s| s.conditions.as_ref()).into_iter().flatten().any(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.message.as_deref() == Some(message)
        });
    if !already {
        let patch = json!({"status": {"conditions": [{
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastProbeTime": null,
            "lastTransitionTime": now(),
        }]}});
        if let Err(e) =
            pods.patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch)).await
        {
            tracing::debug!(error = %e, "cannot update the PodScheduled condition");
        }
        event(client, pod, "Warning", "FailedScheduling", message).await;
    }
}

async fn record_scheduled(client: &Client, pod: &Pod, node: &str) {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let message = format!("Successfully assigned {namespace}/{name} to {node}");
    event(client, pod, "Normal", "Scheduled", &message).await;
}

pub(crate) async fn event(client: &Client, pod: &Pod, kind: &str, reason: &str, message: &str) {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let event: Event = match serde_json::from_value(json!({
        "metadata": {"generateName": format!("{name}."), "namespace": namespace},
        "involvedObject": {
            "apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name,
            "uid": pod.metadata.uid, "resourceVersion": pod.metadata.resource_version,
        },
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": "default-scheduler"},
        "reportingComponent": "default-scheduler",
        "reportingInstance": "default-scheduler",
        "firstTimestamp": now(),
        "lastTimestamp": now(),
        "count": 1,
    })) {
        Ok(e) => e,
        Err(_) => return,
    };
    if let Err(e) = events.create(&PostParams::default(), &event).await {
        tracing::debug!(error = %e, "cannot record event");
    }
}
