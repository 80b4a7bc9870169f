//! The scheduling loop: watches nodes and pods through the API, keeps a cache of nodes with
//! the pods on them, queues the pods waiting for a node, and for each runs the profile's
//! filters and scores, binds it through `pods/{name}/binding`, and records the outcome the
//! way kube-scheduler does (`PodScheduled` condition, `Scheduled` / `FailedScheduling`
//! events).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod, Taint};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event as WatchEvent};
use kube::Client;
use rand::seq::IndexedRandom;
use rkube_runtime::events::{pod_reference, Recorder, Source};
use serde_json::json;

use crate::framework::{
    num_feasible_nodes_to_find, CycleState, FilterPlugin, Next, NodeInfo, PodInfo, Profile,
    MAX_NODE_SCORE,
};
use crate::queue::{PodKey, Queue};

/// The cluster as the scheduler sees it, kept up to date event by event: each node with the
/// pods on it (so a scheduling cycle copies nothing).
#[derive(Default)]
struct Cache {
    nodes: BTreeMap<String, NodeInfo>,
    /// Pods bound to nodes there is no Node object for (not seen yet, deleted, or gone in a
    /// relist), by node name: taken up again when the node (re)appears, without looking
    /// through every pod.
    detached: HashMap<String, NodeInfo>,
    /// Every pod with a node (bound, or assumed bound by us), by key.
    assigned: HashMap<PodKey, (String, Arc<PodInfo>)>,
    /// Pods waiting for a node, by key.
    pending: HashMap<PodKey, Arc<Pod>>,
    /// Pods whose binding is in flight: assumed on their node, not to be scheduled again.
    binding: std::collections::HashSet<PodKey>,
    /// PodDisruptionBudgets by namespace and name.
    budgets: BTreeMap<(String, String), Arc<PodDisruptionBudget>>,
    /// Claims with the ReadWriteOncePod access mode, by namespace and name.
    exclusive_claims: std::collections::HashSet<(String, String)>,
    /// The selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets.
    workloads: crate::workloads::Workloads,
}

/// A stand-in for a node known only from the pods bound to it.
fn placeholder_node(name: &str) -> Arc<Node> {
    let mut node = Node::default();
    node.metadata.name = Some(name.to_string());
    Arc::new(node)
}

impl Cache {
    /// The pod's claims that have the ReadWriteOncePod access mode.
    fn read_write_once_pod_claims(&self, pod: &PodInfo) -> Vec<String> {
        let volumes = pod.pod.spec.as_ref().and_then(|s| s.volumes.as_deref()).unwrap_or(&[]);
        volumes
            .iter()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .map(|c| c.claim_name.clone())
            .filter(|c| self.exclusive_claims.contains(&(pod.namespace().to_string(), c.clone())))
            .collect()
    }

    /// The node's entry, attached or not (created detached when unknown).
    fn node_mut(&mut self, name: &str) -> &mut NodeInfo {
        if self.nodes.contains_key(name) {
            return self.nodes.get_mut(name).expect("present");
        }
        self.detached
            .entry(name.to_string())
            .or_insert_with(|| NodeInfo::new(placeholder_node(name)))
    }

    fn assign(&mut self, key: PodKey, node: String, pod: Arc<PodInfo>) {
        self.unassign(&key);
        self.node_mut(&node).add_pod(pod.clone());
        self.assigned.insert(key, (node, pod));
    }

    /// Returns true when the pod was on a node.
    fn unassign(&mut self, key: &PodKey) -> bool {
        let Some((node, _)) = self.assigned.remove(key) else { return false };
        if let Some(info) = self.nodes.get_mut(&node) {
            info.remove_pod(&key.namespace, &key.name);
        } else if let Some(info) = self.detached.get_mut(&node) {
            info.remove_pod(&key.namespace, &key.name);
            if info.pods.is_empty() {
                self.detached.remove(&node);
            }
        }
        true
    }

    /// A node was added or changed. Returns whether that may let a pod that fit nowhere fit
    /// now: a new node, or a change to what scheduling looks at (not a heartbeat).
    fn set_node(&mut self, node: Node) -> bool {
        let name = node.metadata.name.clone().unwrap_or_default();
        let node = Arc::new(node);
        if let Some(info) = self.nodes.get_mut(&name) {
            let changed = scheduling_properties_changed(&info.node, &node);
            info.set_node(node);
            return changed;
        }
        // A new (or returning) node, with the pods already bound to it if any.
        let mut info = self.detached.remove(&name).unwrap_or_else(|| NodeInfo::new(node.clone()));
        info.set_node(node);
        self.nodes.insert(name, info);
        true
    }

    /// The node is gone: its pods stay known (until their own deletions arrive).
    fn detach_node(&mut self, name: &str) {
        if let Some(info) = self.nodes.remove(name) {
            if !info.pods.is_empty() {
                self.detached.insert(name.to_string(), info);
            }
        }
    }
}

/// Whether a node update changes anything scheduling looks at (upstream's
/// `nodeSchedulingPropertiesChange`): `spec.unschedulable`, allocatable, labels, taints,
/// the status of its conditions, annotations. A heartbeat changes none of them.
fn scheduling_properties_changed(old: &Node, new: &Node) -> bool {
    fn unschedulable(n: &Node) -> bool {
        n.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false)
    }
    fn taints(n: &Node) -> &[Taint] {
        n.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or(&[])
    }
    fn allocatable(n: &Node) -> Option<&BTreeMap<String, Quantity>> {
        n.status.as_ref().and_then(|s| s.allocatable.as_ref()).filter(|a| !a.is_empty())
    }
    fn conditions(n: &Node) -> BTreeMap<&str, &str> {
        let list = n.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or(&[]);
        list.iter().map(|c| (c.type_.as_str(), c.status.as_str())).collect()
    }
    fn or_empty(map: Option<&BTreeMap<String, String>>) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        map.unwrap_or(&EMPTY)
    }
    unschedulable(old) != unschedulable(new)
        || allocatable(old) != allocatable(new)
        || or_empty(old.metadata.labels.as_ref()) != or_empty(new.metadata.labels.as_ref())
        || taints(old) != taints(new)
        || conditions(old) != conditions(new)
        || or_empty(old.metadata.annotations.as_ref())
            != or_empty(new.metadata.annotations.as_ref())
}

fn key_of(pod: &Pod) -> PodKey {
    PodKey {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone().unwrap_or_default(),
    }
}

/// True for a pod this scheduler should place. A pod with scheduling gates waits until
/// whoever set them removes them (upstream's `SchedulingGates` pre-enqueue check): the update
/// that removes the last one brings it to the queue.
fn wants_scheduling(pod: &Pod, scheduler_name: &str) -> bool {
    let spec = pod.spec.as_ref();
    if spec.and_then(|s| s.scheduling_gates.as_ref()).is_some_and(|g| !g.is_empty()) {
        return false;
    }
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

/// The component on the scheduler's events.
const COMPONENT: &str = "default-scheduler";

/// Runs the scheduler until the task is aborted.
pub async fn run(client: Client, profile: Profile) {
    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::all(client.clone());
    let mut node_events = watcher::watcher(nodes, watcher::Config::default()).boxed();
    let mut pod_events = watcher::watcher(pods, watcher::Config::default()).boxed();
    // PodDisruptionBudgets, which preemption respects where it can.
    let budgets: Api<PodDisruptionBudget> = Api::all(client.clone());
    let mut budget_events = watcher::watcher(budgets, watcher::Config::default()).boxed();
    // Claims, for the ReadWriteOncePod access mode.
    let claims: Api<PersistentVolumeClaim> = Api::all(client.clone());
    let mut claim_events = watcher::watcher(claims, watcher::Config::default()).boxed();
    // What selects pods, for the default topology spread constraints.
    let mut workload_events = crate::workloads::watch(&client);
    // Events name the scheduler as upstream's does (`reportingInstance` too).
    let source =
        Source { component: COMPONENT.into(), host: None, instance: Some(COMPONENT.into()) };
    let recorder = Recorder::with_source(client.clone(), source);
    let mut cache = Cache::default();
    let mut queue = Queue::default();
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    // Where the next cycle starts filtering (upstream's nextStartNodeIndex).
    let mut next_start = 0;
    // Bindings run in the background, as kube-scheduler's binding cycle does: the pod is
    // assumed on its node at once, so the next cycle already counts it.
    let (bound_tx, mut bound_rx) = tokio::sync::mpsc::unbounded_channel::<BindResult>();
    loop {
        tokio::select! {
            biased;
            event = node_events.next() => match event {
                Some(Ok(e)) => {
                    if on_node_event(&mut cache, e) {
                        // A node appeared, went or changed: pods that fit nowhere may fit now.
                        queue.cluster_changed();
                    }
                }
                Some(Err(e)) => tracing::warn!(error = %e, "node watch"),
                None => return,
            },
            event = pod_events.next() => match event {
                Some(Ok(e)) => on_pod_event(&mut cache, &mut queue, &profile.scheduler_name, e),
                Some(Err(e)) => tracing::warn!(error = %e, "pod watch"),
                None => return,
            },
            Some(event) = budget_events.next() => match event {
                Ok(e) => on_budget_event(&mut cache, e),
                Err(e) => tracing::warn!(error = %e, "PodDisruptionBudget watch"),
            },
            Some(event) = claim_events.next() => match event {
                Ok(e) => {
                    if on_claim_event(&mut cache, e) {
                        // A claim changed access modes or went: pods waiting on it may fit.
                        queue.cluster_changed();
                    }
                }
                Err(e) => tracing::warn!(error = %e, "PersistentVolumeClaim watch"),
            },
            Some(update) = workload_events.next() => cache.workloads.apply(update),
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
                let mut info = PodInfo::new(pod.clone());
                info.read_write_once_pod_claims = cache.read_write_once_pod_claims(&info);
                info.default_spread_selector = cache.workloads.default_spread_selector(&info);
                let nodes: Vec<&NodeInfo> = cache.nodes.values().collect();
                match decide(&profile, &info, &nodes, &mut next_start) {
                    Ok(node) => {
                        cache.pending.remove(&key);
                        cache.assign(key.clone(), node.clone(), Arc::new(info));
                        cache.binding.insert(key.clone());
                        queue.done(&key);
                        let (client, tx) = (client.clone(), bound_tx.clone());
                        let recorder = recorder.clone();
                        tokio::spawn(async move {
                            let error = match bind(&client, &pod, &node).await {
                                Ok(()) => {
                                    record_scheduled(&recorder, &pod, &node);
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
                            .then(|| {
                                let budgets: Vec<_> = cache.budgets.values().cloned().collect();
                                crate::preemption::find(&profile, &info, &nodes, &budgets)
                            })
                            .flatten();
                        queue.unschedulable(key);
                        let (client, recorder) = (client.clone(), recorder.clone());
                        tokio::spawn(async move {
                            record_unschedulable(&client, &recorder, &pod, &message).await;
                            if let Some(plan) = preemption {
                                crate::preemption::carry_out(&client, &recorder, &pod, plan).await;
                            }
                        });
                    }
                }
                // One cycle done: let the watches and the rest of the task make progress
                // before the next one, so a long queue cannot starve them.
                tokio::task::yield_now().await;
            }
        }
    }
}

/// Applies a claim event; true when a claim stopped being exclusive.
fn on_claim_event(cache: &mut Cache, event: WatchEvent<PersistentVolumeClaim>) -> bool {
    let key = |c: &PersistentVolumeClaim| {
        (
            c.metadata.namespace.clone().unwrap_or_default(),
            c.metadata.name.clone().unwrap_or_default(),
        )
    };
    let exclusive = |c: &PersistentVolumeClaim| {
        c.spec
            .as_ref()
            .and_then(|s| s.access_modes.as_ref())
            .is_some_and(|m| m.iter().any(|m| m == "ReadWriteOncePod"))
    };
    match event {
        WatchEvent::Apply(c) | WatchEvent::InitApply(c) => {
            if exclusive(&c) {
                cache.exclusive_claims.insert(key(&c));
                false
            } else {
                cache.exclusive_claims.remove(&key(&c))
            }
        }
        WatchEvent::Delete(c) => cache.exclusive_claims.remove(&key(&c)),
        WatchEvent::Init => {
            cache.exclusive_claims.clear();
            false
        }
        WatchEvent::InitDone => false,
    }
}

fn on_budget_event(cache: &mut Cache, event: WatchEvent<PodDisruptionBudget>) {
    let key = |b: &PodDisruptionBudget| {
        (
            b.metadata.namespace.clone().unwrap_or_default(),
            b.metadata.name.clone().unwrap_or_default(),
        )
    };
    match event {
        WatchEvent::Apply(b) | WatchEvent::InitApply(b) => {
            cache.budgets.insert(key(&b), Arc::new(b));
        }
        WatchEvent::Delete(b) => {
            cache.budgets.remove(&key(&b));
        }
        WatchEvent::Init => cache.budgets.clear(),
        WatchEvent::InitDone => {}
    }
}

/// Applies a node event to the cache; true when it may let unschedulable pods fit.
fn on_node_event(cache: &mut Cache, event: WatchEvent<Node>) -> bool {
    match event {
        WatchEvent::Apply(node) | WatchEvent::InitApply(node) => cache.set_node(node),
        WatchEvent::Delete(node) => {
            // Fewer nodes can change topology spread domains (upstream requeues on it too).
            cache.detach_node(node.metadata.name.as_deref().unwrap_or(""));
            true
        }
        WatchEvent::Init => {
            // A relist: nodes it no longer lists are gone, the others come back as they are.
            let names: Vec<String> = cache.nodes.keys().cloned().collect();
            for name in names {
                cache.detach_node(&name);
            }
            false
        }
        WatchEvent::InitDone => false,
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
///
/// As upstream, filtering stops once [`num_feasible_nodes_to_find`] nodes have passed
/// (the profile's `percentageOfNodesToScore`), and starts where the previous cycle
/// stopped: `next_start` (upstream's `nextStartNodeIndex`) is advanced by the number of
/// nodes looked at, so that every node gets its turn. When fewer nodes pass, every node has
/// been looked at and the message counts them all. PreFilter and PreScore plugins see every
/// node.
pub fn decide(
    profile: &Profile,
    pod: &PodInfo,
    nodes: &[&NodeInfo],
    next_start: &mut usize,
) -> Result<String, String> {
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
    let mut filters: Vec<&dyn FilterPlugin> = Vec::with_capacity(profile.filters.len());
    for filter in &profile.filters {
        match filter.pre_filter(pod, &mut state) {
            Ok(Next::Run) => filters.push(filter.as_ref()),
            Ok(Next::Skip) => {}
            Err(rejection) => {
                // The pod fits no node at all, for the same reasons everywhere.
                for reason in rejection.reasons {
                    *reasons.entry(reason).or_default() += nodes.len();
                }
                return Err(unschedulable(&reasons));
            }
        }
    }
    let all = nodes.len();
    let wanted = num_feasible_nodes_to_find(profile.percentage_of_nodes_to_score, all);
    let start = *next_start % all;
    let mut feasible: Vec<&NodeInfo> = Vec::with_capacity(wanted);
    let mut looked_at = 0;
    for i in 0..all {
        let node = nodes[(start + i) % all];
        looked_at += 1;
        match filters.iter().find_map(|f| f.filter_with_state(pod, node, &state).err()) {
            None => {
                feasible.push(node);
                if feasible.len() >= wanted {
                    break;
                }
            }
            Some(r) => {
                for reason in r.reasons {
                    *reasons.entry(reason).or_default() += 1;
                }
            }
        }
    }
    *next_start = (start + looked_at) % all;
    if feasible.is_empty() {
        return Err(unschedulable(&reasons));
    }
    if feasible.len() == 1 {
        return Ok(feasible[0].name().to_string());
    }
    let mut totals = vec![0i64; feasible.len()];
    let mut scores = vec![0i64; feasible.len()];
    for weighted in &profile.scores {
        if weighted.plugin.pre_score(pod, &feasible, &mut state) == Next::Skip {
            // Not scored: adds nothing to any node.
            continue;
        }
        for (score, node) in scores.iter_mut().zip(&feasible) {
            *score = weighted.plugin.score_with_state(pod, node, &state);
        }
        weighted.plugin.normalize(pod, &mut scores);
        for (total, score) in totals.iter_mut().zip(&scores) {
            *total += score.clamp(&0, &MAX_NODE_SCORE) * weighted.weight;
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
async fn record_unschedulable(client: &Client, recorder: &Recorder, pod: &Pod, message: &str) {
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
        recorder.record(&pod_reference(pod), "Warning", "FailedScheduling", message);
    }
}

fn record_scheduled(recorder: &Recorder, pod: &Pod, node: &str) {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let message = format!("Successfully assigned {namespace}/{name} to {node}");
    recorder.record(&pod_reference(pod), "Normal", "Scheduled", &message);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugins::default_profile;
    use crate::plugins::testing::{node_with, pod_requesting, small_node};

    fn names(nodes: &[NodeInfo]) -> Vec<&str> {
        nodes.iter().map(NodeInfo::name).collect()
    }

    fn cluster(n: usize) -> Vec<NodeInfo> {
        (0..n).map(|i| small_node(&format!("node-{i:03}"), vec![])).collect()
    }

    #[test]
    fn filtering_stops_at_the_share_of_nodes_and_starts_where_it_stopped() {
        // 300 nodes: the adaptive share is 48%, 144 nodes.
        let nodes = cluster(300);
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let all = names(&nodes);
        let profile = default_profile();
        let pod = pod_requesting("web", json!({"cpu": "100m"}));
        let mut next_start = 0;
        let chosen = decide(&profile, &pod, &refs, &mut next_start).unwrap();
        assert!(all[..144].contains(&chosen.as_str()), "{chosen}");
        assert_eq!(next_start, 144);
        let chosen = decide(&profile, &pod, &refs, &mut next_start).unwrap();
        assert!(all[144..288].contains(&chosen.as_str()), "{chosen}");
        assert_eq!(next_start, 288);
        // Round the end of the list.
        let chosen = decide(&profile, &pod, &refs, &mut next_start).unwrap();
        assert!(
            all[288..].contains(&chosen.as_str()) || all[..132].contains(&chosen.as_str()),
            "{chosen}"
        );
        assert_eq!(next_start, 132);

        // The profile's percentage: 100 looks at every node, 10% of 300 is raised to 100.
        let mut every = default_profile();
        every.percentage_of_nodes_to_score = 100;
        let mut next_start = 7;
        decide(&every, &pod, &refs, &mut next_start).unwrap();
        assert_eq!(next_start, 7);
        let mut few = default_profile();
        few.percentage_of_nodes_to_score = 10;
        let mut next_start = 0;
        decide(&few, &pod, &refs, &mut next_start).unwrap();
        assert_eq!(next_start, 100);
    }

    #[test]
    fn every_node_is_looked_at_when_too_few_fit() {
        // 150 nodes, 100 wanted, one fits: it is found wherever the cycle starts.
        let tiny = json!({"cpu": "100m", "memory": "4Gi", "pods": "110"});
        let mut nodes: Vec<NodeInfo> =
            (0..149).map(|i| node_with(&format!("node-{i:03}"), tiny.clone(), vec![])).collect();
        nodes.insert(20, small_node("node-020-big", vec![]));
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let profile = default_profile();
        let mut next_start = 70;
        let pod = pod_requesting("web", json!({"cpu": "500m"}));
        assert_eq!(decide(&profile, &pod, &refs, &mut next_start).unwrap(), "node-020-big");
        assert_eq!(next_start, 70, "all 150 looked at");
        // Fitting nowhere: the message counts every node, as before sampling.
        let greedy = pod_requesting("greedy", json!({"cpu": "3"}));
        assert_eq!(
            decide(&profile, &greedy, &refs, &mut next_start),
            Err("0/150 nodes are available: 150 Insufficient cpu. preemption: 0/150 nodes are \
                 available: 150 Preemption is not helpful for scheduling."
                .to_string())
        );
        assert_eq!(next_start, 70);
    }

    fn node_object(name: &str, extra: serde_json::Value) -> Node {
        let mut node = json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {
                "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2025-01-01T00:00:00Z"}]
            }
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            node[k] = v.clone();
        }
        serde_json::from_value(node).unwrap()
    }

    fn bound_pod(name: &str, node: &str, phase: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "app", "image": "nginx",
                "resources": {"requests": {"cpu": "500m"}}}]},
            "status": {"phase": phase}
        }))
        .unwrap()
    }

    fn key(name: &str) -> PodKey {
        PodKey { namespace: "default".into(), name: name.into() }
    }

    #[test]
    fn pods_stay_with_their_node_while_it_is_away() {
        let mut cache = Cache::default();
        let mut queue = Queue::default();
        // Bound to a node the scheduler has not seen yet.
        let event = WatchEvent::Apply(bound_pod("web", "node-1", "Running"));
        on_pod_event(&mut cache, &mut queue, "default-scheduler", event);
        assert!(on_node_event(&mut cache, WatchEvent::Apply(node_object("node-1", json!({})))));
        assert_eq!(cache.nodes["node-1"].requested.milli_cpu, 500);
        // Deleted and back: its pods come back with it.
        assert!(on_node_event(&mut cache, WatchEvent::Delete(node_object("node-1", json!({})))));
        assert!(cache.nodes.is_empty());
        assert!(on_node_event(&mut cache, WatchEvent::Apply(node_object("node-1", json!({})))));
        assert_eq!(cache.nodes["node-1"].pods.len(), 1);
        // A relist that still lists it.
        on_node_event(&mut cache, WatchEvent::Init);
        on_node_event(&mut cache, WatchEvent::InitApply(node_object("node-1", json!({}))));
        on_node_event(&mut cache, WatchEvent::InitDone);
        assert_eq!(cache.nodes["node-1"].non_zero_requested.0, 500);
        // The pod goes while the node is away: nothing is left behind.
        on_node_event(&mut cache, WatchEvent::Delete(node_object("node-1", json!({}))));
        on_pod_event(
            &mut cache,
            &mut queue,
            "",
            WatchEvent::Delete(bound_pod("web", "node-1", "Running")),
        );
        assert!(cache.detached.is_empty() && cache.assigned.is_empty());
    }

    #[test]
    fn only_node_changes_that_scheduling_sees_count() {
        let mut cache = Cache::default();
        assert!(cache.set_node(node_object("node-1", json!({}))), "a new node");
        let heartbeat = node_object(
            "node-1",
            json!({"status": {
                "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2025-01-01T00:00:10Z"}]
            }}),
        );
        assert!(!cache.set_node(heartbeat));
        let not_ready = node_object(
            "node-1",
            json!({"status": {
                "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "False"}]
            }}),
        );
        assert!(cache.set_node(not_ready));
        let mut labelled = node_object("node-1", json!({}));
        labelled.metadata.labels.as_mut().unwrap().insert("disktype".into(), "ssd".into());
        assert!(cache.set_node(labelled.clone()));
        assert!(!cache.set_node(labelled.clone()));
        let cordoned = node_object("node-1", json!({"spec": {"unschedulable": true}}));
        assert!(cache.set_node(cordoned));
        let tainted = node_object(
            "node-1",
            json!({"spec": {"taints": [{"key": "dedicated", "effect": "NoSchedule"}]}}),
        );
        assert!(cache.set_node(tainted));
        let bigger = node_object(
            "node-1",
            json!({"status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "110"}}}),
        );
        assert!(cache.set_node(bigger));
    }

    #[test]
    fn bound_pods_coming_back_do_not_requeue_unschedulable_ones() {
        let mut cache = Cache::default();
        let mut queue = Queue::default();
        cache.set_node(node_object("node-1", json!({})));
        queue.unschedulable(key("stuck"));
        // Our own binding (or anyone's) arriving through the watch.
        for phase in ["Pending", "Running"] {
            let event = WatchEvent::Apply(bound_pod("web", "node-1", phase));
            on_pod_event(&mut cache, &mut queue, "default-scheduler", event);
        }
        assert!(queue.is_unschedulable(&key("stuck")));
        assert_eq!(cache.nodes["node-1"].pods.len(), 1);
        // A pod that finished frees room: try again.
        let event = WatchEvent::Apply(bound_pod("web", "node-1", "Succeeded"));
        on_pod_event(&mut cache, &mut queue, "default-scheduler", event);
        assert!(!queue.is_unschedulable(&key("stuck")));
        assert!(cache.nodes["node-1"].pods.is_empty());
        // So does a deleted one.
        queue.unschedulable(key("stuck"));
        let event = WatchEvent::Apply(bound_pod("db", "node-1", "Running"));
        on_pod_event(&mut cache, &mut queue, "default-scheduler", event);
        assert!(queue.is_unschedulable(&key("stuck")));
        let event = WatchEvent::Delete(bound_pod("db", "node-1", "Running"));
        on_pod_event(&mut cache, &mut queue, "default-scheduler", event);
        assert!(!queue.is_unschedulable(&key("stuck")));
    }
}
