//! The scheduling framework: what a plugin sees (the pod, and each node with the pods already
//! on it) and the two plugin kinds the scheduler runs for every pod, in the manner of
//! kube-scheduler's framework: filters decide which nodes can take the pod, scores rank the
//! ones that can.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::resources::Resources;

/// A pod with what the plugins ask of it, computed once.
#[derive(Clone, Debug)]
pub struct PodInfo {
    pub pod: Arc<Pod>,
    /// What the pod requests: the larger of its containers' sum and any one init container,
    /// plus overhead (upstream's rule).
    pub requests: Resources,
}

impl PodInfo {
    pub fn new(pod: Arc<Pod>) -> PodInfo {
        let requests = Resources::pod_requests(&pod);
        PodInfo { pod, requests }
    }

    pub fn namespace(&self) -> &str {
        self.pod.metadata.namespace.as_deref().unwrap_or("default")
    }

    pub fn name(&self) -> &str {
        self.pod.metadata.name.as_deref().unwrap_or("")
    }

    /// `spec.priority`, set from the pod's PriorityClass by the API server; 0 when unset.
    pub fn priority(&self) -> i32 {
        self.pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
    }

    /// Whether the pod may evict lower-priority pods (`preemptionPolicy` is not `Never`).
    pub fn may_preempt(&self) -> bool {
        self.pod.spec.as_ref().and_then(|s| s.preemption_policy.as_deref()) != Some("Never")
    }
}

/// A node and the pods assigned to it.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    pub node: Arc<Node>,
    pub pods: Vec<Arc<PodInfo>>,
    /// What the node offers (`status.allocatable`).
    pub allocatable: Resources,
    /// The sum of what its pods request.
    pub requested: Resources,
}

impl NodeInfo {
    pub fn new(node: Arc<Node>) -> NodeInfo {
        let allocatable =
            Resources::from_quantities(node.status.as_ref().and_then(|s| s.allocatable.as_ref()));
        NodeInfo { node, pods: Vec::new(), allocatable, requested: Resources::default() }
    }

    pub fn name(&self) -> &str {
        self.node.metadata.name.as_deref().unwrap_or("")
    }

    pub fn labels(&self) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        self.node.metadata.labels.as_ref().unwrap_or(&EMPTY)
    }

    pub fn add_pod(&mut self, pod: Arc<PodInfo>) {
        self.requested.add(&pod.requests);
        self.pods.push(pod);
    }

    /// Takes a pod (by namespace and name) off the node.
    pub fn remove_pod(&mut self, namespace: &str, name: &str) {
        if let Some(i) =
            self.pods.iter().position(|p| p.namespace() == namespace && p.name() == name)
        {
            let pod = self.pods.swap_remove(i);
            self.requested.subtract(&pod.requests);
        }
    }

    /// The node object changed (labels, taints, allocatable): its pods stay.
    pub fn set_node(&mut self, node: Arc<Node>) {
        self.allocatable =
            Resources::from_quantities(node.status.as_ref().and_then(|s| s.allocatable.as_ref()));
        self.node = node;
    }
}

/// Why a filter rejected a node: the reason as upstream words it, e.g. `Insufficient cpu`
/// or `node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }`. Reasons are
/// counted across nodes into the pod's `PodScheduled` message.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rejection {
    pub reasons: Vec<String>,
}

impl Rejection {
    pub fn new(reason: impl Into<String>) -> Rejection {
        Rejection { reasons: vec![reason.into()] }
    }
}

/// What one scheduling cycle knows beyond a single node: every node (with its pods), and
/// what plugins computed for this pod before looking at nodes one by one (upstream's
/// CycleState, filled in PreFilter and PreScore).
pub struct CycleState<'a> {
    pub nodes: &'a [&'a NodeInfo],
    data: HashMap<&'static str, Box<dyn Any + Send + Sync>>,
}

impl<'a> CycleState<'a> {
    pub fn new(nodes: &'a [&'a NodeInfo]) -> CycleState<'a> {
        CycleState { nodes, data: HashMap::new() }
    }

    /// Stores a plugin's data for this cycle under its name.
    pub fn put<T: Any + Send + Sync>(&mut self, plugin: &'static str, value: T) {
        self.data.insert(plugin, Box::new(value));
    }

    /// A plugin's data for this cycle.
    pub fn get<T: Any + Send + Sync>(&self, plugin: &'static str) -> Option<&T> {
        self.data.get(plugin).and_then(|v| v.downcast_ref())
    }
}

/// A filter: may the pod run on this node?
pub trait FilterPlugin: Send + Sync {
    fn name(&self) -> &'static str;
    fn filter(&self, pod: &PodInfo, node: &NodeInfo) -> Result<(), Rejection>;

    /// Runs once per pod before any node is filtered: computes what the plugin needs from
    /// the whole cluster (into `state`), or rejects the pod outright.
    fn pre_filter(&self, _pod: &PodInfo, _state: &mut CycleState<'_>) -> Result<(), Rejection> {
        Ok(())
    }

    /// The filter with the cycle's state; plugins that look across nodes override this.
    fn filter_with_state(
        &self,
        pod: &PodInfo,
        node: &NodeInfo,
        _state: &CycleState<'_>,
    ) -> Result<(), Rejection> {
        self.filter(pod, node)
    }
}

/// The highest score a plugin gives a node (upstream's `MaxNodeScore`).
pub const MAX_NODE_SCORE: i64 = 100;

/// A score: how good is this node for the pod, 0..=MAX_NODE_SCORE after normalizing.
pub trait ScorePlugin: Send + Sync {
    fn name(&self) -> &'static str;
    fn score(&self, pod: &PodInfo, node: &NodeInfo) -> i64;
    /// Rescales the raw scores of all feasible nodes (upstream's NormalizeScore); by default
    /// they are taken as they are.
    fn normalize(&self, _pod: &PodInfo, _scores: &mut [i64]) {}

    /// Runs once per pod before the feasible nodes are scored (`feasible` are the nodes that
    /// passed the filters; `state.nodes` are all nodes).
    fn pre_score(&self, _pod: &PodInfo, _feasible: &[&NodeInfo], _state: &mut CycleState<'_>) {}

    /// The score with the cycle's state; plugins that look across nodes override this.
    fn score_with_state(&self, pod: &PodInfo, node: &NodeInfo, _state: &CycleState<'_>) -> i64 {
        self.score(pod, node)
    }
}

/// A score plugin and its weight.
pub struct Weighted {
    pub plugin: Box<dyn ScorePlugin>,
    pub weight: i64,
}

/// The plugins the scheduler runs, in order.
pub struct Profile {
    pub scheduler_name: String,
    pub filters: Vec<Box<dyn FilterPlugin>>,
    pub scores: Vec<Weighted>,
}
