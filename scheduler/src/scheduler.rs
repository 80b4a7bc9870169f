//! The scheduling loop: watches nodes and pods through the API (with
//! [`rkube_runtime::informer`]s, whose deltas it applies), keeps a cache of nodes with
//! the pods on them, queues the pods waiting for a node, and for each runs the profile's
//! filters and scores, binds it through `pods/{name}/binding`, and records the outcome the
//! way kube-scheduler does (`PodScheduled` condition, `Scheduled` / `FailedScheduling`
//! events).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod, Taint};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use rand::seq::IndexedRandom;
use rkube_runtime::events::{pod_reference, Recorder, Source};
use rkube_runtime::informer::{Delta, Informer};
use rkube_runtime::store::Indexers;
use serde_json::json;

use crate::framework::{
    num_feasible_nodes_to_find, CycleState, FilterPlugin, Next, NodeInfo, PodInfo, Profile,
    MAX_NODE_SCORE,
};
use crate::nominated::Nominated;
use crate::plugins::volume_binding::{self, PodVolumeClaims, PodVolumes};
use crate::queue::{PodKey, Queue};
use crate::volumes::{self, VolumeCache};

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
    /// Claims with the ReadWriteOncePod access mode, by namespace and name.
    exclusive_claims: std::collections::HashSet<(String, String)>,
    /// Claims, volumes and classes, for VolumeBinding.
    volumes: VolumeCache,
    /// Pending pods with a nominated node.
    nominated: Nominated,
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
    fn set_node(&mut self, node: Arc<Node>) -> bool {
        let name = node.metadata.name.clone().unwrap_or_default();
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
    /// The volumes promised to the pod, to forget when the binding failed.
    volumes: PodVolumes,
}

/// The component on the scheduler's events.
const COMPONENT: &str = "default-scheduler";

/// Runs the scheduler until the task is aborted.
pub async fn run(client: Client, profile: Profile) {
    // The scheduler keeps its own view of nodes and pods (each node with its pods), built
    // from the informers' deltas; their caches keep no index, as nothing looks them up.
    let (node_tx, mut node_deltas) = tokio::sync::mpsc::unbounded_channel();
    let (_, _node_watch) = Informer::new(Api::<Node>::all(client.clone()))
        .indexers(Indexers::none())
        .deltas(node_tx)
        .start();
    let (pod_tx, mut pod_deltas) = tokio::sync::mpsc::unbounded_channel();
    let (_, _pod_watch) = Informer::new(Api::<Pod>::all(client.clone()))
        .indexers(Indexers::none())
        .deltas(pod_tx)
        .start();
    // PodDisruptionBudgets, which preemption respects where it can: read from the cache.
    let (budgets, _budget_watch) =
        Informer::new(Api::<PodDisruptionBudget>::all(client.clone())).start();
    // Claims (for the ReadWriteOncePod access mode and VolumeBinding), volumes and classes.
    let (claim_tx, mut claim_deltas) = tokio::sync::mpsc::unbounded_channel();
    let (_, _claim_watch) = Informer::new(Api::<PersistentVolumeClaim>::all(client.clone()))
        .indexers(Indexers::none())
        .deltas(claim_tx)
        .start();
    let (volume_tx, mut volume_deltas) = tokio::sync::mpsc::unbounded_channel();
    let (_, _volume_watch) = Informer::new(Api::<PersistentVolume>::all(client.clone()))
        .indexers(Indexers::none())
        .deltas(volume_tx)
        .start();
    let (class_tx, mut class_deltas) = tokio::sync::mpsc::unbounded_channel();
    let (_, _class_watch) = Informer::new(Api::<StorageClass>::all(client.clone()))
        .indexers(Indexers::none())
        .deltas(class_tx)
        .start();
    let binds_volumes = profile.filters.iter().any(|f| f.name() == volume_binding::NAME);
    // What selects pods, for the default topology spread constraints.
    let workloads = crate::workloads::Workloads::start(&client);
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
            delta = node_deltas.recv() => match delta {
                Some(delta) => {
                    if on_node_delta(&mut cache, delta) {
                        // A node appeared, went or changed: pods that fit nowhere may fit now.
                        queue.cluster_changed();
                    }
                }
                None => return,
            },
            delta = pod_deltas.recv() => match delta {
                Some(delta) => on_pod_delta(&mut cache, &mut queue, &profile.scheduler_name, delta),
                None => return,
            },
            Some(delta) = claim_deltas.recv() => {
                // A claim came, changed (bound, access modes) or went: pods waiting on it
                // may fit.
                let volumes_changed = cache.volumes.on_claim(&delta);
                if on_claim_delta(&mut cache, delta) || volumes_changed {
                    queue.cluster_changed();
                }
            }
            Some(delta) = volume_deltas.recv() => {
                if cache.volumes.on_volume(&delta) {
                    queue.cluster_changed();
                }
            }
            Some(delta) = class_deltas.recv() => {
                if cache.volumes.on_class(&delta) {
                    queue.cluster_changed();
                }
            }
            Some(result) = bound_rx.recv() => {
                cache.binding.remove(&result.key);
                if let Some(error) = result.error {
                    // Forget the assumption and try again later.
                    tracing::warn!(pod = %result.key, node = result.node, error, "binding failed; backing off");
                    cache.volumes.forget(&result.volumes);
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
                info.default_spread_selector = workloads.default_spread_selector(&info);
                if binds_volumes {
                    info.volume_claims = PodVolumeClaims::gather(&pod, &cache.volumes)
                        .map(|claims| claims.map(Arc::new));
                }
                let nodes: Vec<&NodeInfo> = cache.nodes.values().collect();
                let nominated = cache.nominated.views(&info, &cache.nodes);
                match decide_with(&profile, &info, &nodes, &nominated, &mut next_start) {
                    Ok(node) => {
                        // What the pod's claims need on the node, promised at once.
                        let plan = match (&info.volume_claims, cache.nodes.get(&node)) {
                            (Some(Ok(claims)), Some(node_info)) => {
                                volume_binding::find_pod_volumes(claims, node_info).unwrap_or_default()
                            }
                            _ => PodVolumes::default(),
                        };
                        let promised = cache.volumes.assume(&plan, &node);
                        cache.pending.remove(&key);
                        cache.nominated.forget(&key);
                        cache.assign(key.clone(), node.clone(), Arc::new(info));
                        cache.binding.insert(key.clone());
                        queue.done(&key);
                        let (client, tx) = (client.clone(), bound_tx.clone());
                        let recorder = recorder.clone();
                        tokio::spawn(async move {
                            let bound_volumes = match promised.is_empty() {
                                true => Ok(()),
                                false => volumes::bind_pod_volumes(&client, &pod, &node, &promised, volumes::BIND_TIMEOUT).await,
                            };
                            let error = match bound_volumes {
                                Err(e) => {
                                    let message = e.message();
                                    record_failure(&client, &recorder, &pod, "SchedulerError", &message).await;
                                    Some(message)
                                }
                                Ok(()) => match bind(&client, &pod, &node).await {
                                    Ok(()) => {
                                        record_scheduled(&recorder, &pod, &node);
                                        None
                                    }
                                    Err(e) => Some(e.to_string()),
                                },
                            };
                            let _ = tx.send(BindResult { key, pod, node, error, volumes: promised });
                        });
                    }
                    Err(message) => {
                        tracing::debug!(pod = %key, message, "unschedulable");
                        let preemption = (info.may_preempt() && info.priority() > 0)
                            .then(|| {
                                let budgets = budgets.state();
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

/// Applies a claim delta; true when a claim stopped being exclusive.
fn on_claim_delta(cache: &mut Cache, delta: Delta<PersistentVolumeClaim>) -> bool {
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
    match delta {
        Delta::Upserted { new: c, .. } => {
            if exclusive(&c) {
                cache.exclusive_claims.insert(key(&c));
                false
            } else {
                cache.exclusive_claims.remove(&key(&c))
            }
        }
        Delta::Deleted(c) => cache.exclusive_claims.remove(&key(&c)),
        Delta::Synced => false,
    }
}

/// Applies a node delta to the cache; true when it may let unschedulable pods fit. A relist
/// comes as deltas too: nodes it no longer lists are deleted, the others updated.
fn on_node_delta(cache: &mut Cache, delta: Delta<Node>) -> bool {
    match delta {
        Delta::Upserted { new: node, .. } => cache.set_node(node),
        Delta::Deleted(node) => {
            // Fewer nodes can change topology spread domains (upstream requeues on it too).
            cache.detach_node(node.metadata.name.as_deref().unwrap_or(""));
            true
        }
        Delta::Synced => false,
    }
}

fn on_pod_delta(cache: &mut Cache, queue: &mut Queue, scheduler_name: &str, delta: Delta<Pod>) {
    match delta {
        Delta::Upserted { new: pod, .. } => {
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
                    cache.nominated.forget(&key);
                    queue.done(&key);
                    cache.assign(key, node, Arc::new(PodInfo::new(pod)));
                }
                Some(_) => {
                    // A finished pod frees its node's resources.
                    if cache.unassign(&key) {
                        queue.cluster_changed();
                    }
                }
                None if cache.binding.contains(&key) => {}
                None if wants_scheduling(&pod, scheduler_name) => {
                    cache.nominated.pending(&key, &pod);
                    let known = cache.pending.insert(key.clone(), pod).is_some();
                    if !known {
                        queue.add(key);
                    } else {
                        // The pod changed (labels, tolerations, ...): try it again.
                        queue.pod_updated(&key);
                    }
                }
                None => {
                    cache.pending.remove(&key);
                    cache.nominated.forget(&key);
                    queue.done(&key);
                }
            }
        }
        Delta::Deleted(pod) => {
            let key = key_of(&pod);
            cache.pending.remove(&key);
            cache.nominated.forget(&key);
            queue.done(&key);
            if cache.unassign(&key) {
                // Room freed on a node.
                queue.cluster_changed();
            }
        }
        Delta::Synced => {}
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
    decide_with(profile, pod, nodes, &HashMap::new(), next_start)
}

/// [`decide`], with the nodes that have pods nominated to them seen both with those pods
/// (`nominated`, from [`Nominated::views`]) and without: a node passes only when both pass,
/// as upstream's `RunFilterPluginsWithNominatedPods`.
pub fn decide_with(
    profile: &Profile,
    pod: &PodInfo,
    nodes: &[&NodeInfo],
    nominated: &HashMap<String, NodeInfo>,
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
                // The pod fits no node at all, for the same reasons everywhere: upstream
                // gives the PreFilter's reasons without counting nodes.
                return Err(format!(
                    "0/{} nodes are available: {}. preemption: 0/{} nodes are available: {} Preemption is not helpful for scheduling.",
                    nodes.len(),
                    rejection.reasons.join(", "),
                    nodes.len(),
                    nodes.len()
                ));
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
        let filtered = |view: &NodeInfo| {
            filters.iter().find_map(|f| f.filter_with_state(pod, view, &state).err())
        };
        let rejected = nominated.get(node.name()).and_then(filtered).or_else(|| filtered(node));
        match rejected {
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

/// `PodScheduled=False` with the reason `Unschedulable`, and a `FailedScheduling` event.
async fn record_unschedulable(client: &Client, recorder: &Recorder, pod: &Pod, message: &str) {
    record_failure(client, recorder, pod, "Unschedulable", message).await
}

/// `PodScheduled=False` with `reason` (`Unschedulable`, or `SchedulerError` when the
/// binding cycle failed), and a `FailedScheduling` event.
async fn record_failure(
    client: &Client,
    recorder: &Recorder,
    pod: &Pod,
    reason: &str,
    message: &str,
) {
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
            "reason": reason,
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

    use kube::runtime::watcher::Event as WatchEvent;
    use rkube_runtime::store::{self, Writer};

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

    /// A watch event as the scheduler hears it: the deltas of its informer's cache.
    fn deltas<K>(writer: &mut Writer<K>, event: WatchEvent<K>) -> Vec<Delta<K>>
    where
        K: kube::runtime::reflector::Lookup + Clone + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone,
    {
        let mut heard = Vec::new();
        writer.apply_owned(event, Some(&mut |delta| heard.push(delta)));
        heard
    }

    fn on_node_event(cache: &mut Cache, nodes: &mut Writer<Node>, event: WatchEvent<Node>) -> bool {
        let mut may_fit = false;
        for delta in deltas(nodes, event) {
            may_fit |= on_node_delta(cache, delta);
        }
        may_fit
    }

    fn on_pod_event(
        cache: &mut Cache,
        queue: &mut Queue,
        scheduler_name: &str,
        pods: &mut Writer<Pod>,
        event: WatchEvent<Pod>,
    ) {
        for delta in deltas(pods, event) {
            on_pod_delta(cache, queue, scheduler_name, delta);
        }
    }

    fn key(name: &str) -> PodKey {
        PodKey { namespace: "default".into(), name: name.into() }
    }

    #[test]
    fn pods_stay_with_their_node_while_it_is_away() {
        let mut cache = Cache::default();
        let mut queue = Queue::default();
        let (_, mut nodes) = store::store(Indexers::none());
        let (_, mut pods) = store::store(Indexers::none());
        // Bound to a node the scheduler has not seen yet.
        let event = WatchEvent::Apply(bound_pod("web", "node-1", "Running"));
        on_pod_event(&mut cache, &mut queue, "default-scheduler", &mut pods, event);
        assert!(on_node_event(
            &mut cache,
            &mut nodes,
            WatchEvent::Apply(node_object("node-1", json!({})))
        ));
        assert_eq!(cache.nodes["node-1"].requested.milli_cpu, 500);
        // Deleted and back: its pods come back with it.
        assert!(on_node_event(
            &mut cache,
            &mut nodes,
            WatchEvent::Delete(node_object("node-1", json!({})))
        ));
        assert!(cache.nodes.is_empty());
        assert!(on_node_event(
            &mut cache,
            &mut nodes,
            WatchEvent::Apply(node_object("node-1", json!({})))
        ));
        assert_eq!(cache.nodes["node-1"].pods.len(), 1);
        // A relist that still lists it.
        on_node_event(&mut cache, &mut nodes, WatchEvent::Init);
        on_node_event(
            &mut cache,
            &mut nodes,
            WatchEvent::InitApply(node_object("node-1", json!({}))),
        );
        on_node_event(&mut cache, &mut nodes, WatchEvent::InitDone);
        assert_eq!(cache.nodes["node-1"].non_zero_requested.0, 500);
        // The pod goes while the node is away: nothing is left behind.
        on_node_event(&mut cache, &mut nodes, WatchEvent::Delete(node_object("node-1", json!({}))));
        on_pod_event(
            &mut cache,
            &mut queue,
            "",
            &mut pods,
            WatchEvent::Delete(bound_pod("web", "node-1", "Running")),
        );
        assert!(cache.detached.is_empty() && cache.assigned.is_empty());
    }

    #[test]
    fn only_node_changes_that_scheduling_sees_count() {
        let mut cache = Cache::default();
        assert!(cache.set_node(Arc::new(node_object("node-1", json!({})))), "a new node");
        let heartbeat = node_object(
            "node-1",
            json!({"status": {
                "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2025-01-01T00:00:10Z"}]
            }}),
        );
        assert!(!cache.set_node(Arc::new(heartbeat)));
        let not_ready = node_object(
            "node-1",
            json!({"status": {
                "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "False"}]
            }}),
        );
        assert!(cache.set_node(Arc::new(not_ready)));
        let mut labelled = node_object("node-1", json!({}));
        labelled.metadata.labels.as_mut().unwrap().insert("disktype".into(), "ssd".into());
        assert!(cache.set_node(Arc::new(labelled.clone())));
        assert!(!cache.set_node(Arc::new(labelled.clone())));
        let cordoned = node_object("node-1", json!({"spec": {"unschedulable": true}}));
        assert!(cache.set_node(Arc::new(cordoned)));
        let tainted = node_object(
            "node-1",
            json!({"spec": {"taints": [{"key": "dedicated", "effect": "NoSchedule"}]}}),
        );
        assert!(cache.set_node(Arc::new(tainted)));
        let bigger = node_object(
            "node-1",
            json!({"status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "110"}}}),
        );
        assert!(cache.set_node(Arc::new(bigger)));
    }

    #[test]
    fn a_relist_forgets_what_it_no_longer_lists() {
        let mut cache = Cache::default();
        let mut queue = Queue::default();
        let (_, mut nodes) = store::store(Indexers::none());
        let (_, mut pods) = store::store(Indexers::none());
        for name in ["node-1", "node-2"] {
            on_node_event(
                &mut cache,
                &mut nodes,
                WatchEvent::InitApply(node_object(name, json!({}))),
            );
        }
        assert!(on_node_event(&mut cache, &mut nodes, WatchEvent::InitDone));
        let event = WatchEvent::Apply(bound_pod("web", "node-1", "Running"));
        on_pod_event(&mut cache, &mut queue, "default-scheduler", &mut pods, event);
        queue.unschedulable(key("stuck"));
        // The watches expired; meanwhile node-2 and the pod went.
        on_node_event(&mut cache, &mut nodes, WatchEvent::Init);
        on_node_event(
            &mut cache,
            &mut nodes,
            WatchEvent::InitApply(node_object("node-1", json!({}))),
        );
        assert!(on_node_event(&mut cache, &mut nodes, WatchEvent::InitDone), "a node went");
        assert_eq!(cache.nodes.keys().collect::<Vec<_>>(), ["node-1"]);
        assert_eq!(cache.nodes["node-1"].pods.len(), 1, "until the pods' relist");
        for event in [WatchEvent::Init, WatchEvent::InitDone] {
            on_pod_event(&mut cache, &mut queue, "default-scheduler", &mut pods, event);
        }
        assert!(cache.assigned.is_empty() && cache.nodes["node-1"].pods.is_empty());
        assert!(!queue.is_unschedulable(&key("stuck")), "room was freed");
    }

    #[test]
    fn bound_pods_coming_back_do_not_requeue_unschedulable_ones() {
        let mut cache = Cache::default();
        let mut queue = Queue::default();
        let (_, mut pods) = store::store(Indexers::none());
        cache.set_node(Arc::new(node_object("node-1", json!({}))));
        queue.unschedulable(key("stuck"));
        // Our own binding (or anyone's) arriving through the watch.
        for phase in ["Pending", "Running"] {
            let event = WatchEvent::Apply(bound_pod("web", "node-1", phase));
            on_pod_event(&mut cache, &mut queue, "default-scheduler", &mut pods, event);
        }
        assert!(queue.is_unschedulable(&key("stuck")));
        assert_eq!(cache.nodes["node-1"].pods.len(), 1);
        // A pod that finished frees room: try again.
        let event = WatchEvent::Apply(bound_pod("web", "node-1", "Succeeded"));
        on_pod_event(&mut cache, &mut queue, "default-scheduler", &mut pods, event);
        assert!(!queue.is_unschedulable(&key("stuck")));
        assert!(cache.nodes["node-1"].pods.is_empty());
        // So does a deleted one.
        queue.unschedulable(key("stuck"));
        let event = WatchEvent::Apply(bound_pod("db", "node-1", "Running"));
        on_pod_event(&mut cache, &mut queue, "default-scheduler", &mut pods, event);
        assert!(queue.is_unschedulable(&key("stuck")));
        let event = WatchEvent::Delete(bound_pod("db", "node-1", "Running"));
        on_pod_event(&mut cache, &mut queue, "default-scheduler", &mut pods, event);
        assert!(!queue.is_unschedulable(&key("stuck")));
    }
}
