//! The node lifecycle controller, as kube-controller-manager's (`nodelifecycle`, taint-based
//! eviction, lease-based health).
//!
//! - **Health.** Every `--node-monitor-period` each node is checked. A node is healthy while
//!   its heartbeat moves: its Lease in `kube-node-lease` (same name as the node) gets a later
//!   `spec.renewTime`, or its Ready condition a new `lastHeartbeatTime`. As upstream, what
//!   counts is when *this controller* saw the heartbeat move (its own clock), so clock skew
//!   between machines does not matter. When nothing moved for `--node-monitor-grace-period`
//!   (`--node-startup-grace-period` for a node that never posted a Ready condition), the
//!   conditions Ready, MemoryPressure, DiskPressure and PIDPressure become `Unknown` with
//!   reason `NodeStatusUnknown` and message `Kubelet stopped posting node status.` (conditions
//!   the kubelet never posted are added with `NodeStatusNeverUpdated`), through `nodes/status`.
//!   The transition is recorded as a `NodeNotReady` event on the node, and the pods on it get
//!   `Ready=False` with a `NodeNotReady` event each.
//! - **NoExecute taints.** A node whose Ready condition is `Unknown` gets
//!   `node.kubernetes.io/unreachable:NoExecute`, one whose Ready is `False` gets
//!   `node.kubernetes.io/not-ready:NoExecute` (the two swap at once); both go when Ready is
//!   `True` again. Adding them is rate-limited per zone (`--node-eviction-rate`, upstream's
//!   zone states: a zone with no Ready node, when every zone is like that, gets no NoExecute
//!   taint at all — "master disruption mode" — since the fault is then more likely the control
//!   plane's). The [`taint_eviction`](crate::taint_eviction) controller acts on them.
//! - **NoSchedule taints** (upstream's TaintNodesByCondition): on every node change, the
//!   conditions map to `node.kubernetes.io/{not-ready,unreachable,memory-pressure,
//!   disk-pressure,pid-pressure,network-unavailable}:NoSchedule`, and `spec.unschedulable` to
//!   `node.kubernetes.io/unschedulable:NoSchedule`; at once, without rate limit.
//! - `RegisteredNode` / `RemovingNode` events when a node appears or goes, and the beta OS and
//!   architecture labels kept equal to the stable ones.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Pod, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_runtime::store::Store;
use serde_json::json;
use tokio::sync::mpsc;

use rkube_runtime::events::{node_reference, pod_reference, Recorder};
use rkube_runtime::informer::{self, Change};

/// The namespace of the nodes' heartbeat Leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
pub const TAINT_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
pub const TAINT_NOT_READY: &str = "node.kubernetes.io/not-ready";
pub const TAINT_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
pub const TAINT_MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
pub const TAINT_DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
pub const TAINT_PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
pub const TAINT_NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";
/// Nodes with this label do not count in their zone's health.
const LABEL_EXCLUDE_DISRUPTION: &str = "node.kubernetes.io/exclude-disruption";
/// How often the rate-limited NoExecute tainting queue is served (upstream's
/// `nodeEvictionPeriod`).
const TAINTING_PERIOD: Duration = Duration::from_millis(100);
/// A status or taint update that conflicts is tried again this many times, on a fresh read.
const RETRIES: usize = 5;

/// The controller's settings (kube-controller-manager's flags of the same names).
#[derive(Debug, Clone)]
pub struct Config {
    /// `--node-monitor-period`: how often node health is checked.
    pub node_monitor_period: Duration,
    /// `--node-monitor-grace-period`: how long a heartbeat may stay still before the node's
    /// conditions become Unknown.
    pub node_monitor_grace_period: Duration,
    /// `--node-startup-grace-period`: the same for a node that never posted a Ready condition.
    pub node_startup_grace_period: Duration,
    /// `--node-eviction-rate`: nodes per second that get a NoExecute taint, per zone.
    pub node_eviction_rate: f64,
    /// `--secondary-node-eviction-rate`: the same in a partially disrupted large zone.
    pub secondary_node_eviction_rate: f64,
    /// `--unhealthy-zone-threshold`: the share of not-Ready nodes (at least 3) that makes a
    /// zone partially disrupted.
    pub unhealthy_zone_threshold: f64,
    /// `--large-cluster-size-threshold`: above this many nodes a partially disrupted zone keeps
    /// tainting at the secondary rate; at or below it, tainting stops.
    pub large_cluster_size_threshold: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            node_monitor_period: Duration::from_secs(5),
            node_monitor_grace_period: Duration::from_secs(40),
            node_startup_grace_period: Duration::from_secs(60),
            node_eviction_rate: 0.1,
            secondary_node_eviction_rate: 0.01,
            unhealthy_zone_threshold: 0.55,
            large_cluster_size_threshold: 50,
        }
    }
}

fn taint(key: &str, effect: &str) -> Taint {
    Taint { key: key.to_string(), effect: effect.to_string(), ..Default::default() }
}

fn matches(a: &Taint, b: &Taint) -> bool {
    a.key == b.key && a.effect == b.effect
}

fn has_taint(node: &Node, wanted: &Taint) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|taints| taints.iter().any(|t| matches(t, wanted)))
}

/// The NoSchedule taint a condition in a status maps to (upstream's
/// `nodeConditionToTaintKeyStatusMap`).
fn condition_taint(condition: &str, status: &str) -> Option<&'static str> {
    match (condition, status) {
        ("Ready", "False") => Some(TAINT_NOT_READY),
        ("Ready", "Unknown") => Some(TAINT_UNREACHABLE),
        ("MemoryPressure", "True") => Some(TAINT_MEMORY_PRESSURE),
        ("DiskPressure", "True") => Some(TAINT_DISK_PRESSURE),
        ("NetworkUnavailable", "True") => Some(TAINT_NETWORK_UNAVAILABLE),
        ("PIDPressure", "True") => Some(TAINT_PID_PRESSURE),
        _ => None,
    }
}

/// Whether a taint key is one the conditions map to.
fn is_condition_taint(key: &str) -> bool {
    [
        TAINT_NOT_READY,
        TAINT_UNREACHABLE,
        TAINT_MEMORY_PRESSURE,
        TAINT_DISK_PRESSURE,
        TAINT_NETWORK_UNAVAILABLE,
        TAINT_PID_PRESSURE,
    ]
    .contains(&key)
}

/// The NoSchedule taints a node should carry for its conditions and `spec.unschedulable`, and
/// those it carries that it should not: (to add, to remove).
pub fn no_schedule_taint_changes(node: &Node) -> (Vec<Taint>, Vec<Taint>) {
    let mut wanted: Vec<Taint> = Vec::new();
    for c in node.status.as_ref().and_then(|s| s.conditions.as_ref()).into_iter().flatten() {
        if let Some(key) = condition_taint(&c.type_, &c.status) {
            wanted.push(taint(key, "NoSchedule"));
        }
    }
    if node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false) {
        wanted.push(taint(TAINT_UNSCHEDULABLE, "NoSchedule"));
    }
    let present: Vec<Taint> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|t| {
            t.effect == "NoSchedule" && (t.key == TAINT_UNSCHEDULABLE || is_condition_taint(&t.key))
        })
        .collect();
    let add = wanted.iter().filter(|w| !present.iter().any(|p| matches(p, w))).cloned().collect();
    let remove =
        present.iter().filter(|p| !wanted.iter().any(|w| matches(p, w))).cloned().collect();
    (add, remove)
}

fn condition<'a>(node: &'a Node, type_: &str) -> Option<&'a NodeCondition> {
    node.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

/// The node's zone, as upstream's `GetZoneKey`: region and zone from the topology labels (or
/// their deprecated beta forms), empty when neither is set.
pub fn zone_key(node: &Node) -> String {
    let labels = node.metadata.labels.as_ref();
    let label = |stable: &str, beta: &str| {
        labels.and_then(|l| l.get(stable).or_else(|| l.get(beta))).cloned().unwrap_or_default()
    };
    let zone = label("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone");
    let region = label("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region");
    if zone.is_empty() && region.is_empty() {
        return String::new();
    }
    format!("{region}:\0:{zone}")
}

/// What the controller last saw of a node's heartbeat, on its own monotonic clock.
#[derive(Debug, Clone)]
pub struct NodeHealth {
    /// When the heartbeat was last seen to move.
    probe: Instant,
    /// When the Ready condition was last seen to change.
    ready_transition: Instant,
    /// The Ready condition as last seen (`None`: the node never posted one).
    ready: Option<NodeCondition>,
    /// The Lease's `renewTime` as last seen (`None`: no Lease seen yet).
    lease: Option<Option<Timestamp>>,
}

/// The outcome of looking at one node's heartbeat.
#[derive(Debug, Clone)]
pub struct Assessment {
    pub health: NodeHealth,
    /// The node's Ready condition as it is now (a stand-in `Unknown` one, dated at the node's
    /// creation, when it has none).
    pub observed: NodeCondition,
    /// The grace period the node is entitled to.
    pub grace: Duration,
}

impl Assessment {
    /// Whether the heartbeat stood still for longer than the grace period.
    pub fn stale(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.health.probe) > self.grace
    }
}

/// The instant `at` (a wall-clock time) was, on the monotonic clock; no later than `now`.
fn instant_of(at: Option<&Time>, now: Instant, wall_now: Timestamp) -> Instant {
    let ago = at
        .map(|t| wall_now.duration_since(t.0))
        .and_then(|d| Duration::try_from(d).ok())
        .unwrap_or_default();
    now.checked_sub(ago).unwrap_or(now)
}

/// Upstream's `tryUpdateNodeHealth` bookkeeping: compares the node's Ready condition and its
/// Lease with what was seen before and moves the probe time when either moved.
pub fn assess(
    saved: Option<&NodeHealth>,
    node: &Node,
    lease_renew: Option<Option<Timestamp>>,
    now: Instant,
    wall_now: Timestamp,
    config: &Config,
) -> Assessment {
    let current = condition(node, "Ready");
    let saved_lease = saved.and_then(|h| h.lease);
    let (observed, grace, mut health) = match current {
        None => {
            let created = node.metadata.creation_timestamp.clone();
            let observed = NodeCondition {
                type_: "Ready".into(),
                status: "Unknown".into(),
                last_heartbeat_time: created.clone(),
                last_transition_time: created.clone(),
                ..Default::default()
            };
            let health = match saved {
                Some(h) => NodeHealth { ready: None, ..h.clone() },
                None => {
                    let at = instant_of(created.as_ref(), now, wall_now);
                    NodeHealth { probe: at, ready_transition: at, ready: None, lease: None }
                }
            };
            (observed, config.node_startup_grace_period, health)
        }
        Some(current) => {
            let fresh = |lease| NodeHealth {
                probe: now,
                ready_transition: now,
                ready: Some(current.clone()),
                lease,
            };
            let health = match saved {
                None => fresh(None),
                Some(h) => match &h.ready {
                    // First Ready condition seen (or a restarted controller): start counting.
                    None => fresh(h.lease),
                    Some(before) if before.last_heartbeat_time != current.last_heartbeat_time => {
                        let ready_transition =
                            if before.last_transition_time != current.last_transition_time {
                                now
                            } else {
                                h.ready_transition
                            };
                        NodeHealth {
                            probe: now,
                            ready_transition,
                            ready: Some(current.clone()),
                            lease: h.lease,
                        }
                    }
                    Some(_) => h.clone(),
                },
            };
            (current.clone(), config.node_monitor_grace_period, health)
        }
    };
    // A renewed Lease always counts as a heartbeat.
    if let Some(renew) = lease_renew {
        let renewed = match saved_lease {
            None => true,
            Some(before) => matches!((before, renew), (Some(b), Some(r)) if b < r),
        };
        if renewed {
            health.lease = Some(renew);
            health.probe = now;
        }
    }
    Assessment { health, observed, grace }
}

/// Sets Ready, MemoryPressure, DiskPressure and PIDPressure to `Unknown` as upstream does when
/// the kubelet stopped posting status; conditions already Unknown keep their times.
pub fn mark_unknown(node: &mut Node, now: &Time) {
    let created = node.metadata.creation_timestamp.clone();
    let conditions =
        node.status.get_or_insert_with(Default::default).conditions.get_or_insert_with(Vec::new);
    for type_ in ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"] {
        match conditions.iter_mut().find(|c| c.type_ == type_) {
            None => conditions.push(NodeCondition {
                type_: type_.into(),
                status: "Unknown".into(),
                reason: Some("NodeStatusNeverUpdated".into()),
                message: Some("Kubelet never posted node status.".into()),
                last_heartbeat_time: created.clone(),
                last_transition_time: Some(now.clone()),
            }),
            Some(c) if c.status != "Unknown" => {
                c.status = "Unknown".into();
                c.reason = Some("NodeStatusUnknown".into());
                c.message = Some("Kubelet stopped posting node status.".into());
                c.last_transition_time = Some(now.clone());
            }
            Some(_) => {}
        }
    }
}

/// A zone's health (upstream's zone states).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneState {
    Initial,
    Normal,
    PartialDisruption,
    FullDisruption,
}

/// Upstream's `ComputeZoneState` over the zone's Ready statuses (`None`: no Ready condition).
pub fn zone_state(ready: &[Option<String>], unhealthy_threshold: f64) -> ZoneState {
    let ready_nodes = ready.iter().filter(|s| s.as_deref() == Some("True")).count();
    let not_ready = ready.len() - ready_nodes;
    if ready_nodes == 0 && not_ready > 0 {
        ZoneState::FullDisruption
    } else if not_ready > 2 && not_ready as f64 / ready.len() as f64 >= unhealthy_threshold {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    }
}

/// A token bucket with a burst of one (client-go's `flowcontrol` limiter as the node
/// controller uses it); a rate of zero never lets anything through.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    qps: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    pub fn new(qps: f64, now: Instant) -> TokenBucket {
        TokenBucket { qps, tokens: 1.0, last: now }
    }

    fn refill(&mut self, now: Instant) {
        if self.qps > 0.0 {
            let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
            self.tokens = (self.tokens + elapsed * self.qps).min(1.0);
        }
        self.last = now;
    }

    pub fn try_accept(&mut self, now: Instant) -> bool {
        if self.qps <= 0.0 {
            return false;
        }
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// A new rate; as upstream, the new bucket starts empty when the old one had no token.
    pub fn swap(&mut self, qps: f64, now: Instant) {
        if (qps - self.qps).abs() < f64::EPSILON {
            return;
        }
        let had_token = self.try_accept(now);
        *self = TokenBucket { qps, tokens: if had_token { 1.0 } else { 0.0 }, last: now };
    }
}

/// A zone's rate-limited queue of nodes to give a NoExecute taint (upstream's
/// `RateLimitedTimedQueue`): a node stays in the set after it was tainted, so it is not
/// queued again until it is removed (healthy again, or its taint went away).
#[derive(Debug)]
struct TaintQueue {
    set: HashSet<String>,
    queue: VecDeque<String>,
    limiter: TokenBucket,
}

impl TaintQueue {
    fn add(&mut self, name: &str) -> bool {
        if !self.set.insert(name.to_string()) {
            return false;
        }
        self.queue.push_back(name.to_string());
        true
    }

    fn remove(&mut self, name: &str) -> bool {
        self.queue.retain(|n| n != name);
        self.set.remove(name)
    }
}

struct Zone {
    state: ZoneState,
    queue: TaintQueue,
}

struct Controller {
    client: Client,
    config: Config,
    nodes: Store<Node>,
    leases: Store<Lease>,
    pods: Store<Pod>,
    recorder: Recorder,
    known: HashMap<String, Arc<Node>>,
    health: HashMap<String, NodeHealth>,
    zones: HashMap<String, Zone>,
    nodes_to_retry: HashSet<String>,
    /// The node each pod was last seen bound to.
    pod_nodes: HashMap<(String, String), String>,
}

/// Runs the controller until the task is aborted. `nodes` and `pods` are shared informers'
/// stores; `node_changes` and `pod_changes` say what changed in them.
/// `informer_client` reads the nodes' Leases (the controller manager's own client, as
/// upstream's shared informer: the node controller's role does not read Leases); `client`
/// writes.
pub async fn run(
    client: Client,
    informer_client: Client,
    config: Config,
    nodes: Store<Node>,
    mut node_changes: mpsc::UnboundedReceiver<Change>,
    pods: Store<Pod>,
    mut pod_changes: mpsc::UnboundedReceiver<Change>,
) {
    let (leases, _lease_informer) = informer::start(
        Api::<Lease>::namespaced(informer_client, NODE_LEASE_NAMESPACE),
        watcher::Config::default(),
        Vec::new(),
    );
    for ready in [
        nodes.wait_until_ready().await,
        pods.wait_until_ready().await,
        leases.wait_until_ready().await,
    ] {
        if ready.is_err() {
            return;
        }
    }
    tracing::info!(
        grace = ?config.node_monitor_grace_period,
        period = ?config.node_monitor_period,
        "node lifecycle controller started"
    );
    let mut monitor = tokio::time::interval(config.node_monitor_period);
    monitor.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut tainting = tokio::time::interval(TAINTING_PERIOD);
    tainting.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ctl = Controller {
        recorder: Recorder::new(client.clone(), "node-controller"),
        client,
        config,
        nodes,
        leases,
        pods,
        known: HashMap::new(),
        health: HashMap::new(),
        zones: HashMap::new(),
        nodes_to_retry: HashSet::new(),
        pod_nodes: HashMap::new(),
    };
    loop {
        tokio::select! {
            _ = monitor.tick() => ctl.monitor_node_health().await,
            _ = tainting.tick() => ctl.no_execute_tainting_pass().await,
            Some(change) = node_changes.recv() => {
                let (changed, _) = informer::drain(change, &mut node_changes);
                for (_, name) in changed {
                    if let Some(node) = ctl.nodes.get(&ObjectRef::new(&name)) {
                        ctl.node_changed(&node).await;
                    }
                }
            }
            Some(change) = pod_changes.recv() => {
                let (changed, _) = informer::drain(change, &mut pod_changes);
                for (namespace, name) in changed {
                    ctl.pod_changed(namespace.unwrap_or_default(), name).await;
                }
            }
            else => return,
        }
    }
}

fn name_of(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or("")
}

impl Controller {
    fn lease_renew_time(&self, node: &str) -> Option<Option<Timestamp>> {
        let lease = self.leases.get(&ObjectRef::new(node).within(NODE_LEASE_NAMESPACE))?;
        Some(lease.spec.as_ref().and_then(|s| s.renew_time.as_ref()).map(|t| t.0))
    }

    fn add_zone(&mut self, node: &Node) {
        let now = Instant::now();
        let qps = self.config.node_eviction_rate;
        self.zones.entry(zone_key(node)).or_insert_with(|| Zone {
            state: ZoneState::Initial,
            queue: TaintQueue {
                set: HashSet::new(),
                queue: VecDeque::new(),
                limiter: TokenBucket::new(qps, now),
            },
        });
    }

    /// One pass over every node (upstream's `monitorNodeHealth`).
    async fn monitor_node_health(&mut self) {
        let nodes = self.nodes.state();
        let names: HashSet<&str> = nodes.iter().map(|n| name_of(n)).collect();
        for node in &nodes {
            let name = name_of(node).to_string();
            if self.known.contains_key(&name) {
                if !self.zones.contains_key(&zone_key(node)) {
                    self.add_zone(node);
                }
                continue;
            }
            tracing::info!(node = name, "controller observed a new node");
            let message = format!("Node {name} event: Registered Node {name} in Controller");
            self.recorder.record(&node_reference(node), "Normal", "RegisteredNode", &message);
            self.known.insert(name, node.clone());
            self.add_zone(node);
            self.mark_node_as_reachable(node).await;
        }
        let deleted: Vec<Arc<Node>> =
            self.known.values().filter(|n| !names.contains(name_of(n))).cloned().collect();
        for node in deleted {
            let name = name_of(&node).to_string();
            tracing::info!(node = name, "controller observed a node deletion");
            let message = format!("Node {name} event: Removing Node {name} from Controller");
            self.recorder.record(&node_reference(&node), "Normal", "RemovingNode", &message);
            self.known.remove(&name);
            self.health.remove(&name);
            self.nodes_to_retry.remove(&name);
        }

        let mut zone_ready: HashMap<String, Vec<Option<String>>> = HashMap::new();
        for node in &nodes {
            let name = name_of(node).to_string();
            let Some((node, observed, current)) = self.update_node_health(node).await else {
                continue;
            };
            let excluded = node
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(LABEL_EXCLUDE_DISRUPTION));
            if !excluded {
                zone_ready
                    .entry(zone_key(&node))
                    .or_default()
                    .push(current.as_ref().map(|c| c.status.clone()));
            }
            if let Some(current) = current {
                self.process_taint_based_eviction(&node, &observed).await;
                let became_not_ready = current.status != "True" && observed.status == "True";
                if became_not_ready {
                    tracing::info!(node = name, status = current.status, "node is not ready");
                    let message = format!("Node {name} status is now: NodeNotReady");
                    self.recorder.record(
                        &node_reference(&node),
                        "Normal",
                        "NodeNotReady",
                        &message,
                    );
                }
                if became_not_ready
                    || (self.nodes_to_retry.contains(&name) && observed.status != "True")
                {
                    let pods = self.pods_on(&name);
                    if let Err(e) = self.mark_pods_not_ready(&pods, &name).await {
                        tracing::warn!(node = name, error = %e, "cannot mark the node's pods not ready; will retry");
                        self.nodes_to_retry.insert(name);
                        continue;
                    }
                }
            }
            self.nodes_to_retry.remove(&name);
        }
        self.handle_disruption(zone_ready, &nodes).await;
    }

    fn pods_on(&self, node: &str) -> Vec<Arc<Pod>> {
        self.pods.on_node(node)
    }

    /// Checks one node's heartbeat and posts Unknown conditions when it stood still; returns
    /// the node as updated, its Ready condition before and after. Conflicts are retried on a
    /// fresh read.
    async fn update_node_health(
        &mut self,
        cached: &Node,
    ) -> Option<(Node, NodeCondition, Option<NodeCondition>)> {
        let api: Api<Node> = Api::all(self.client.clone());
        let name = name_of(cached).to_string();
        let mut node = cached.clone();
        for attempt in 0..RETRIES {
            match self.try_update_node_health(&mut node).await {
                Ok((observed, current)) => return Some((node, observed, current)),
                Err(e) => {
                    tracing::debug!(node = name, attempt, error = %e, "cannot update node health");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    match api.get(&name).await {
                        Ok(fresh) => node = fresh,
                        Err(e) => {
                            tracing::debug!(node = name, error = %e, "node gone while updating its health");
                            return None;
                        }
                    }
                }
            }
        }
        tracing::warn!(
            node = name,
            "cannot update the node's health; no pods will be evicted this time"
        );
        None
    }

    async fn try_update_node_health(
        &mut self,
        node: &mut Node,
    ) -> Result<(NodeCondition, Option<NodeCondition>), kube::Error> {
        let name = name_of(node).to_string();
        let now = Instant::now();
        let wall_now = Timestamp::now();
        let lease = self.lease_renew_time(&name);
        let assessment = assess(self.health.get(&name), node, lease, now, wall_now, &self.config);
        let stale = assessment.stale(now);
        let Assessment { mut health, observed, .. } = assessment;
        let mut current = condition(node, "Ready").cloned();
        if stale {
            mark_unknown(node, &Time(wall_now));
            current = condition(node, "Ready").cloned();
            if current.as_ref() != Some(&observed) {
                tracing::info!(
                    node = name,
                    since = ?now.saturating_duration_since(health.probe),
                    "node stopped posting status: conditions set to Unknown"
                );
                let api: Api<Node> = Api::all(self.client.clone());
                let result = api.replace_status(&name, &PostParams::default(), node).await;
                match result {
                    Ok(updated) => {
                        *node = updated;
                        health.ready = current.clone();
                        health.ready_transition = now;
                        self.health.insert(name, health);
                    }
                    Err(e) => {
                        self.health.insert(name, health);
                        return Err(e);
                    }
                }
                return Ok((observed, current));
            }
        }
        self.health.insert(name, health);
        Ok((observed, current))
    }

    /// Queues, swaps or removes the NoExecute taints for the Ready condition as it was
    /// observed (upstream's `processTaintBaseEviction`).
    async fn process_taint_based_eviction(&mut self, node: &Node, observed: &NodeCondition) {
        let unreachable = taint(TAINT_UNREACHABLE, "NoExecute");
        let not_ready = taint(TAINT_NOT_READY, "NoExecute");
        let name = name_of(node);
        match observed.status.as_str() {
            "False" | "Unknown" => {
                let (wanted, opposite) = if observed.status == "False" {
                    (not_ready, unreachable)
                } else {
                    (unreachable, not_ready)
                };
                if has_taint(node, &opposite) {
                    // The other one is there: swap at once, no rate limit.
                    if let Err(e) = self.swap_taints(node, vec![wanted], vec![opposite]).await {
                        tracing::warn!(node = name, error = %e, "cannot swap the NoExecute taints; will try again");
                    }
                } else {
                    let zone = zone_key(node);
                    if let Some(zone) = self.zones.get_mut(&zone) {
                        if !has_taint(node, &wanted) {
                            zone.queue.remove(name);
                        }
                        if zone.queue.add(name) {
                            tracing::info!(
                                node = name,
                                status = observed.status,
                                "node queued for a NoExecute taint"
                            );
                        }
                    }
                }
            }
            "True" => {
                let removed = self.mark_node_as_reachable(node).await;
                if removed {
                    tracing::info!(node = name, "node is healthy again: NoExecute taints removed");
                }
            }
            _ => {}
        }
    }

    /// Removes the unreachable and not-ready NoExecute taints and takes the node out of the
    /// tainting queue; true when it was queued.
    async fn mark_node_as_reachable(&mut self, node: &Node) -> bool {
        let remove =
            vec![taint(TAINT_UNREACHABLE, "NoExecute"), taint(TAINT_NOT_READY, "NoExecute")];
        if let Err(e) = self.swap_taints(node, Vec::new(), remove).await {
            tracing::warn!(node = name_of(node), error = %e, "cannot remove the NoExecute taints");
            return false;
        }
        self.zones.get_mut(&zone_key(node)).is_some_and(|z| z.queue.remove(name_of(node)))
    }

    /// Adds taints (stamped with `timeAdded`) and removes others, by key and effect, with a
    /// patch that carries the resourceVersion it was computed from; a conflict is retried on a
    /// fresh read. True when the node changed.
    async fn swap_taints(
        &self,
        cached: &Node,
        add: Vec<Taint>,
        remove: Vec<Taint>,
    ) -> Result<bool, kube::Error> {
        let api: Api<Node> = Api::all(self.client.clone());
        let name = name_of(cached).to_string();
        let now = Time(Timestamp::now());
        let mut node = cached.clone();
        for attempt in 0.. {
            let before = node.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
            let mut taints: Vec<Taint> =
                before.iter().filter(|t| !remove.iter().any(|r| matches(t, r))).cloned().collect();
            for a in &add {
                if !taints.iter().any(|t| matches(t, a)) {
                    taints.push(Taint { time_added: Some(now.clone()), ..a.clone() });
                }
            }
            if taints == before {
                return Ok(false);
            }
            // No taint left: no `taints` field either (null removes it), as upstream's patch.
            let list = if taints.is_empty() { serde_json::Value::Null } else { json!(taints) };
            let patch = json!({
                "metadata": {"resourceVersion": node.metadata.resource_version},
                "spec": {"taints": list},
            });
            match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => {
                    tracing::debug!(node = name, ?add, ?remove, "node taints changed");
                    return Ok(true);
                }
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(false),
                Err(kube::Error::Api(s)) if s.code == 409 && attempt + 1 < RETRIES => {
                    node = match api.get_opt(&name).await? {
                        Some(n) => n,
                        None => return Ok(false),
                    };
                }
                Err(e) => return Err(e),
            }
        }
        unreachable!("the loop returns")
    }

    /// Serves the zones' tainting queues within their rate limits (upstream's
    /// `doNoExecuteTaintingPass`).
    async fn no_execute_tainting_pass(&mut self) {
        let zones: Vec<String> = self.zones.keys().cloned().collect();
        for zone in zones {
            loop {
                let now = Instant::now();
                let Some(z) = self.zones.get_mut(&zone) else { break };
                let Some(name) = z.queue.queue.front().cloned() else { break };
                if !z.queue.limiter.try_accept(now) {
                    break;
                }
                z.queue.queue.pop_front();
                if !self.taint_from_queue(&name).await {
                    // Try again on a later pass (still in the set).
                    if let Some(z) = self.zones.get_mut(&zone) {
                        if z.queue.set.contains(&name) {
                            z.queue.queue.push_back(name);
                        }
                    }
                    break;
                }
            }
        }
    }

    /// Gives a queued node the NoExecute taint for its Ready condition now; true when done
    /// (or no longer needed).
    async fn taint_from_queue(&self, name: &str) -> bool {
        let Some(node) = self.nodes.get(&ObjectRef::new(name)) else { return true };
        let Some(ready) = condition(&node, "Ready") else { return true };
        let (wanted, opposite) = match ready.status.as_str() {
            "False" => (TAINT_NOT_READY, TAINT_UNREACHABLE),
            "Unknown" => (TAINT_UNREACHABLE, TAINT_NOT_READY),
            _ => return true, // ready again
        };
        match self
            .swap_taints(
                &node,
                vec![taint(wanted, "NoExecute")],
                vec![taint(opposite, "NoExecute")],
            )
            .await
        {
            Ok(_) => {
                tracing::info!(node = name, taint = wanted, "node tainted NoExecute");
                true
            }
            Err(e) => {
                tracing::warn!(node = name, error = %e, "cannot taint the node");
                false
            }
        }
    }

    /// Zone states and the tainting rate limits (upstream's `handleDisruption`).
    async fn handle_disruption(
        &mut self,
        zone_ready: HashMap<String, Vec<Option<String>>>,
        nodes: &[Arc<Node>],
    ) {
        let threshold = self.config.unhealthy_zone_threshold;
        let mut new_states: HashMap<String, ZoneState> = HashMap::new();
        let mut all_are_fully_disrupted = true;
        for (zone, ready) in &zone_ready {
            let state = zone_state(ready, threshold);
            if state != ZoneState::FullDisruption {
                all_are_fully_disrupted = false;
            }
            new_states.insert(zone.clone(), state);
        }
        // Zones with no node left are forgotten.
        self.zones.retain(|zone, _| zone_ready.contains_key(zone));
        let all_were_fully_disrupted =
            self.zones.values().all(|z| z.state == ZoneState::FullDisruption);
        if all_are_fully_disrupted && all_were_fully_disrupted {
            return;
        }
        let now = Instant::now();
        if all_are_fully_disrupted {
            tracing::warn!("no node is Ready: entering master disruption mode (no NoExecute taints, no evictions)");
            for node in nodes {
                self.mark_node_as_reachable(node).await;
            }
            for zone in self.zones.values_mut() {
                zone.queue.limiter.swap(0.0, now);
                zone.state = ZoneState::FullDisruption;
            }
            return;
        }
        if all_were_fully_disrupted {
            tracing::info!("some nodes are Ready: leaving master disruption mode");
            // Every node gets a fresh grace period.
            for health in self.health.values_mut() {
                health.probe = now;
                health.ready_transition = now;
            }
        }
        let zones: Vec<String> = self.zones.keys().cloned().collect();
        for key in zones {
            let state = new_states.get(&key).copied().unwrap_or(ZoneState::Normal);
            let size = zone_ready.get(&key).map_or(0, |r| r.len());
            let qps = match state {
                ZoneState::PartialDisruption if size > self.config.large_cluster_size_threshold => {
                    self.config.secondary_node_eviction_rate
                }
                ZoneState::PartialDisruption => 0.0,
                _ => self.config.node_eviction_rate,
            };
            let Some(zone) = self.zones.get_mut(&key) else { continue };
            if all_were_fully_disrupted || zone.state != state {
                if !all_were_fully_disrupted {
                    tracing::info!(zone = key, ?state, "zone is now in a new state");
                }
                zone.queue.limiter.swap(qps, now);
                zone.state = state;
            }
        }
    }

    /// Sets `Ready=False` on the pods' Ready condition and records `NodeNotReady` on each
    /// (upstream's `MarkPodsNotReady`).
    async fn mark_pods_not_ready(&self, pods: &[Arc<Pod>], node: &str) -> Result<(), kube::Error> {
        for pod in pods {
            if pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) != Some(node) {
                continue;
            }
            let mut updated = (**pod).clone();
            let Some(ready) = updated
                .status
                .as_mut()
                .and_then(|s| s.conditions.as_mut())
                .and_then(|c| c.iter_mut().find(|c| c.type_ == "Ready"))
            else {
                continue;
            };
            if ready.status == "False" {
                continue;
            }
            ready.status = "False".into();
            ready.last_transition_time = Some(Time(Timestamp::now()));
            let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
            let name = pod.metadata.name.as_deref().unwrap_or("");
            let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
            match api.replace_status(name, &PostParams::default(), &updated).await {
                Ok(_) => self.recorder.record(
                    &pod_reference(pod),
                    "Warning",
                    "NodeNotReady",
                    "Node is not ready",
                ),
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// A node changed: its NoSchedule taints follow its conditions at once, and its beta
    /// labels follow the stable ones (upstream's `doNodeProcessingPassWorker`).
    async fn node_changed(&mut self, node: &Node) {
        let name = name_of(node);
        let (add, remove) = no_schedule_taint_changes(node);
        if !add.is_empty() || !remove.is_empty() {
            match self.swap_taints(node, add, remove).await {
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(node = name, error = %e, "cannot update the NoSchedule taints")
                }
            }
        }
        let labels = node.metadata.labels.clone().unwrap_or_default();
        let mut fix = serde_json::Map::new();
        for (stable, beta) in [
            ("kubernetes.io/os", "beta.kubernetes.io/os"),
            ("kubernetes.io/arch", "beta.kubernetes.io/arch"),
        ] {
            if let Some(value) = labels.get(stable) {
                if labels.get(beta) != Some(value) {
                    fix.insert(beta.to_string(), value.clone().into());
                }
            }
        }
        if !fix.is_empty() {
            let api: Api<Node> = Api::all(self.client.clone());
            let patch = json!({"metadata": {"labels": fix}});
            if let Err(e) = api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                tracing::debug!(node = name, error = %e, "cannot reconcile the node's labels");
            }
        }
    }

    /// A pod changed: one newly bound to a node that is not Ready is marked not ready
    /// (upstream's `processPod`).
    async fn pod_changed(&mut self, namespace: String, name: String) {
        let key = (namespace, name);
        let Some(pod) = self.pods.get(&ObjectRef::new(&key.1).within(&key.0)) else {
            self.pod_nodes.remove(&key);
            return;
        };
        let Some(node) =
            pod.spec.as_ref().and_then(|s| s.node_name.clone()).filter(|n| !n.is_empty())
        else {
            return;
        };
        if self.pod_nodes.get(&key) == Some(&node) {
            return;
        }
        self.pod_nodes.insert(key, node.clone());
        let Some(health) = self.health.get(&node) else { return };
        let ready = health.ready.as_ref().map(|c| c.status.as_str());
        if ready.is_some_and(|s| s != "True") {
            if let Err(e) = self.mark_pods_not_ready(&[pod], &node).await {
                tracing::debug!(node, error = %e, "cannot mark a pod not ready");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(ready: Option<(&str, i64)>) -> Node {
        let conditions = ready.map(|(status, heartbeat)| {
            json!([{"type": "Ready", "status": status,
                    "lastHeartbeatTime": ts(heartbeat), "lastTransitionTime": ts(0)}])
        });
        serde_json::from_value(json!({
            "metadata": {"name": "n", "creationTimestamp": ts(0)},
            "status": {"conditions": conditions.unwrap_or(json!([]))},
        }))
        .unwrap()
    }

    fn ts(second: i64) -> String {
        Timestamp::from_second(1_700_000_000 + second).unwrap().to_string()
    }

    fn wall(second: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + second).unwrap()
    }

    fn config() -> Config {
        Config {
            node_monitor_grace_period: Duration::from_secs(40),
            node_startup_grace_period: Duration::from_secs(60),
            ..Config::default()
        }
    }

    #[test]
    fn a_moving_heartbeat_keeps_a_node_healthy_and_a_still_one_goes_stale() {
        let base = Instant::now();
        let at = |s: u64| base + Duration::from_secs(s);
        let cfg = config();
        let first = assess(None, &node(Some(("True", 0))), None, at(0), wall(0), &cfg);
        assert!(!first.stale(at(40)));
        assert!(first.stale(at(41)));
        // A new heartbeat moves the probe time.
        let second =
            assess(Some(&first.health), &node(Some(("True", 30))), None, at(30), wall(30), &cfg);
        assert!(!second.stale(at(70)));
        // The same heartbeat again does not.
        let third =
            assess(Some(&second.health), &node(Some(("True", 30))), None, at(60), wall(60), &cfg);
        assert!(third.stale(at(71)));
    }

    #[test]
    fn a_renewed_lease_counts_as_a_heartbeat() {
        let base = Instant::now();
        let at = |s: u64| base + Duration::from_secs(s);
        let cfg = config();
        let n = node(Some(("True", 0)));
        let first = assess(None, &n, Some(Some(wall(0))), at(0), wall(0), &cfg);
        let renewed = assess(Some(&first.health), &n, Some(Some(wall(35))), at(35), wall(35), &cfg);
        assert!(!renewed.stale(at(75)));
        let same = assess(Some(&renewed.health), &n, Some(Some(wall(35))), at(70), wall(70), &cfg);
        assert!(same.stale(at(76)));
        // The Lease's own clock does not matter, only that its time moved on (clock skew).
        let skewed = assess(None, &n, Some(Some(wall(-500))), at(80), wall(80), &cfg);
        let still =
            assess(Some(&skewed.health), &n, Some(Some(wall(-500))), at(121), wall(121), &cfg);
        assert!(still.stale(at(121)));
        let moved =
            assess(Some(&still.health), &n, Some(Some(wall(-499))), at(122), wall(122), &cfg);
        assert!(!moved.stale(at(123)));
        // Going back in time is not a renewal.
        let back =
            assess(Some(&moved.health), &n, Some(Some(wall(-600))), at(170), wall(170), &cfg);
        assert!(back.stale(at(170)));
    }

    #[test]
    fn a_node_without_status_gets_the_startup_grace_from_its_creation() {
        let base = Instant::now() + Duration::from_secs(1000);
        let cfg = config();
        // Created 50 s ago, never posted a Ready condition: 10 s left.
        let a = assess(None, &node(None), None, base, wall(50), &cfg);
        assert_eq!(a.observed.status, "Unknown");
        assert_eq!(a.grace, Duration::from_secs(60));
        assert!(!a.stale(base + Duration::from_secs(9)));
        assert!(a.stale(base + Duration::from_secs(11)));
    }

    #[test]
    fn stale_conditions_become_unknown_with_upstreams_wording() {
        let mut n = node(Some(("True", 0)));
        let now = Time(wall(100));
        mark_unknown(&mut n, &now);
        let conditions = n.status.unwrap().conditions.unwrap();
        assert_eq!(conditions.len(), 4);
        let ready = &conditions[0];
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_deref(), ready.message.as_deref()),
            ("Unknown", Some("NodeStatusUnknown"), Some("Kubelet stopped posting node status."))
        );
        assert_eq!(ready.last_transition_time, Some(now.clone()));
        assert_eq!(ready.last_heartbeat_time.as_ref().unwrap().0, wall(0));
        let memory = conditions.iter().find(|c| c.type_ == "MemoryPressure").unwrap();
        assert_eq!(memory.reason.as_deref(), Some("NodeStatusNeverUpdated"));
        assert_eq!(memory.message.as_deref(), Some("Kubelet never posted node status."));
        // Already Unknown: nothing moves.
        let mut again = Node { status: Some(Default::default()), ..node(None) };
        again.status.as_mut().unwrap().conditions = Some(conditions.clone());
        mark_unknown(&mut again, &Time(wall(200)));
        assert_eq!(again.status.unwrap().conditions.unwrap(), conditions);
    }

    #[test]
    fn no_schedule_taints_follow_conditions_and_cordon() {
        let mut n: Node = serde_json::from_value(json!({
            "metadata": {"name": "n"},
            "spec": {"unschedulable": true, "taints": [
                {"key": TAINT_NOT_READY, "effect": "NoSchedule"},
                {"key": TAINT_NOT_READY, "effect": "NoExecute"},
                {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
            ]},
            "status": {"conditions": [
                {"type": "Ready", "status": "Unknown"},
                {"type": "DiskPressure", "status": "True"},
                {"type": "MemoryPressure", "status": "False"},
            ]},
        }))
        .unwrap();
        let (add, remove) = no_schedule_taint_changes(&n);
        let keys = |t: &[Taint]| t.iter().map(|t| t.key.clone()).collect::<Vec<_>>();
        assert_eq!(keys(&add), [TAINT_UNREACHABLE, TAINT_DISK_PRESSURE, TAINT_UNSCHEDULABLE]);
        assert!(add.iter().all(|t| t.effect == "NoSchedule"));
        // The NoExecute one and the user's taint are not this path's business.
        assert_eq!(keys(&remove), [TAINT_NOT_READY]);
        assert_eq!(remove[0].effect, "NoSchedule");
        n.spec.as_mut().unwrap().unschedulable = None;
        n.status = None;
        let (add, remove) = no_schedule_taint_changes(&n);
        assert!(add.is_empty());
        assert_eq!(keys(&remove), [TAINT_NOT_READY]);
    }

    #[test]
    fn zone_states_as_upstream() {
        let s = |v: &[Option<&str>]| {
            zone_state(&v.iter().map(|s| s.map(String::from)).collect::<Vec<_>>(), 0.55)
        };
        assert_eq!(s(&[Some("True"), Some("Unknown")]), ZoneState::Normal);
        assert_eq!(s(&[Some("Unknown"), None]), ZoneState::FullDisruption);
        assert_eq!(s(&[Some("False"), Some("Unknown"), Some("True")]), ZoneState::Normal);
        assert_eq!(
            s(&[Some("False"), Some("Unknown"), Some("Unknown"), Some("True")]),
            ZoneState::PartialDisruption
        );
        assert_eq!(s(&[]), ZoneState::Normal);
    }

    #[test]
    fn the_token_bucket_lets_one_through_then_waits() {
        let base = Instant::now();
        let mut b = TokenBucket::new(0.1, base);
        assert!(b.try_accept(base));
        assert!(!b.try_accept(base + Duration::from_secs(5)));
        assert!(b.try_accept(base + Duration::from_secs(10)));
        b.swap(0.0, base + Duration::from_secs(100));
        assert!(!b.try_accept(base + Duration::from_secs(1000)));
        // Coming back from a stop, the new bucket starts empty.
        b.swap(0.1, base + Duration::from_secs(1000));
        assert!(!b.try_accept(base + Duration::from_secs(1001)));
        assert!(b.try_accept(base + Duration::from_secs(1010)));
    }

    #[test]
    fn zone_keys_from_topology_labels() {
        let n = |labels: serde_json::Value| -> Node {
            serde_json::from_value(json!({"metadata": {"name": "n", "labels": labels}})).unwrap()
        };
        assert_eq!(zone_key(&n(json!({}))), "");
        assert_eq!(
            zone_key(&n(
                json!({"topology.kubernetes.io/zone": "a", "topology.kubernetes.io/region": "r"})
            )),
            "r:\0:a"
        );
        assert_eq!(zone_key(&n(json!({"failure-domain.beta.kubernetes.io/zone": "b"}))), ":\0:b");
    }
}
