//! The scheduling framework: what a plugin sees (the pod, and each node with the pods already
//! on it) and the two plugin kinds the scheduler runs for every pod, in the manner of
//! kube-scheduler's framework: filters decide which nodes can take the pod, scores rank the
//! ones that can.
//!
//! What plugins ask of every pod on every node in every cycle is computed once, when the pod
//! or node enters the cache, not per cycle: a [`PodInfo`] carries the pod's requests, host
//! ports and parsed affinity terms, and a [`NodeInfo`] keeps running sums and indexes over
//! its pods (upstream's NodeInfo does the same), so a cycle costs what the incoming pod
//! needs, not what the cluster holds.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ContainerPort, Node, Pod};

use crate::plugins::interpod_affinity::AffinityTerms;
use crate::plugins::volume_binding::PodVolumeClaims;
use crate::resources::{non_zero_requests, Resources};

/// A pod with what the plugins ask of it, computed once.
#[derive(Clone, Debug)]
pub struct PodInfo {
    pub pod: Arc<Pod>,
    /// What the pod requests: the larger of its containers' sum and any one init container,
    /// plus overhead (upstream's rule).
    pub requests: Resources,
    /// CPU (millicores) and memory (bytes) the pod counts for when scoring, with the
    /// defaults for containers that request none (upstream's non-zero requests).
    pub non_zero_requests: (i64, i64),
    /// The host ports its containers ask for.
    pub host_ports: Vec<HostPort>,
    /// Its pod affinity and anti-affinity terms, parsed.
    pub affinity: AffinityTerms,
    /// The claims it uses that have the ReadWriteOncePod access mode (set by the scheduler,
    /// which knows the claims; empty otherwise).
    pub read_write_once_pod_claims: Vec<String>,
    /// What upstream's system default spread constraints select for it: the pods of the
    /// Services, ReplicationControllers, ReplicaSets and StatefulSets that select it (set
    /// by the scheduler, which watches them; None when nothing does).
    pub default_spread_selector: Option<rkube_apis::selectors::LabelSelector>,
    /// The pod's PersistentVolumeClaims for `VolumeBinding` (set by the scheduler, which
    /// watches claims, volumes and classes): None when it uses none, else the claims or why
    /// no node can take the pod.
    pub volume_claims: Option<Result<Arc<PodVolumeClaims>, String>>,
}

impl PodInfo {
    pub fn new(pod: Arc<Pod>) -> PodInfo {
        let requests = Resources::pod_requests(&pod);
        let non_zero_requests = non_zero_requests(&pod);
        let host_ports = HostPort::of_pod(&pod);
        let affinity = AffinityTerms::of(&pod);
        PodInfo {
            pod,
            requests,
            non_zero_requests,
            host_ports,
            affinity,
            read_write_once_pod_claims: Vec::new(),
            default_spread_selector: None,
            volume_claims: None,
        }
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

    pub(crate) fn is(&self, namespace: &str, name: &str) -> bool {
        self.namespace() == namespace && self.name() == name
    }
}

/// The address a host port binds to when it names none.
pub const ALL_ADDRESSES: &str = "0.0.0.0";

/// One host port a container asks for, with upstream's defaults filled in: no `hostIP` is
/// every address (`0.0.0.0`), no protocol is `TCP`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostPort {
    pub ip: String,
    pub protocol: String,
    pub port: i32,
}

impl HostPort {
    pub fn new(port: &ContainerPort) -> HostPort {
        let ip = port.host_ip.as_deref().filter(|ip| !ip.is_empty()).unwrap_or(ALL_ADDRESSES);
        let protocol = port.protocol.as_deref().filter(|p| !p.is_empty()).unwrap_or("TCP");
        HostPort {
            ip: ip.to_string(),
            protocol: protocol.to_string(),
            port: port.host_port.unwrap_or(0),
        }
    }

    /// The host ports of the pod's containers (ports without a host port are left out).
    pub fn of_pod(pod: &Pod) -> Vec<HostPort> {
        pod.spec
            .iter()
            .flat_map(|s| s.containers.iter())
            .flat_map(|c| c.ports.iter().flatten())
            .filter(|p| p.host_port.unwrap_or(0) > 0)
            .map(HostPort::new)
            .collect()
    }
}

/// The host ports the pods on a node hold: per port and protocol, how many pods hold it on
/// each host IP, so that taking a pod off releases exactly what it held (upstream's
/// HostPortInfo).
#[derive(Clone, Debug, Default)]
pub struct HostPortInfo(HashMap<i32, HashMap<String, HashMap<String, usize>>>);

impl HostPortInfo {
    pub fn add(&mut self, port: &HostPort) {
        let ips = self.0.entry(port.port).or_default().entry(port.protocol.clone()).or_default();
        *ips.entry(port.ip.clone()).or_default() += 1;
    }

    pub fn remove(&mut self, port: &HostPort) {
        let Some(protocols) = self.0.get_mut(&port.port) else { return };
        let Some(ips) = protocols.get_mut(&port.protocol) else { return };
        if let Some(count) = ips.get_mut(&port.ip) {
            *count -= 1;
            if *count == 0 {
                ips.remove(&port.ip);
            }
        }
        if ips.is_empty() {
            protocols.remove(&port.protocol);
        }
        if protocols.is_empty() {
            self.0.remove(&port.port);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the port clashes with one in use: the same protocol and port on the same IP,
    /// or with either side on all addresses.
    pub fn conflicts(&self, port: &HostPort) -> bool {
        let Some(ips) = self.0.get(&port.port).and_then(|p| p.get(&port.protocol)) else {
            return false;
        };
        port.ip == ALL_ADDRESSES || ips.contains_key(&port.ip) || ips.contains_key(ALL_ADDRESSES)
    }
}

/// A node and the pods assigned to it, with what plugins need of those pods kept up to date
/// by [`NodeInfo::add_pod`] and [`NodeInfo::remove_pod`] (change the pods only through them).
#[derive(Clone, Debug)]
pub struct NodeInfo {
    pub node: Arc<Node>,
    pub pods: Vec<Arc<PodInfo>>,
    /// Its pods with pod affinity or anti-affinity terms (upstream's PodsWithAffinity).
    pub pods_with_affinity: Vec<Arc<PodInfo>>,
    /// Its pods with required pod anti-affinity terms (PodsWithRequiredAntiAffinity).
    pub pods_with_required_anti_affinity: Vec<Arc<PodInfo>>,
    /// What the node offers (`status.allocatable`).
    pub allocatable: Resources,
    /// The sum of what its pods request.
    pub requested: Resources,
    /// The sum of its pods' [`PodInfo::non_zero_requests`] (upstream's NonZeroRequested).
    pub non_zero_requested: (i64, i64),
    /// The host ports its pods hold.
    pub used_ports: HostPortInfo,
    /// The images the node has (`status.images`): each of their names, with the size; see
    /// [`NodeInfo::image_size`]. Shared, so that copying the node (as preemption does)
    /// copies no image list, and `None` when there are none, so that a walk over all nodes
    /// can pass over those without following a pointer.
    images: Option<Arc<HashMap<String, i64>>>,
}

impl NodeInfo {
    pub fn new(node: Arc<Node>) -> NodeInfo {
        let mut info = NodeInfo {
            node: Arc::new(Node::default()),
            pods: Vec::new(),
            pods_with_affinity: Vec::new(),
            pods_with_required_anti_affinity: Vec::new(),
            allocatable: Resources::default(),
            requested: Resources::default(),
            non_zero_requested: (0, 0),
            used_ports: HostPortInfo::default(),
            images: None,
        };
        info.set_node(node);
        info
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
        self.non_zero_requested.0 += pod.non_zero_requests.0;
        self.non_zero_requested.1 += pod.non_zero_requests.1;
        for port in &pod.host_ports {
            self.used_ports.add(port);
        }
        if !pod.affinity.is_empty() {
            self.pods_with_affinity.push(pod.clone());
        }
        if !pod.affinity.required_anti_affinity.is_empty() {
            self.pods_with_required_anti_affinity.push(pod.clone());
        }
        self.pods.push(pod);
    }

    /// Takes a pod (by namespace and name) off the node.
    pub fn remove_pod(&mut self, namespace: &str, name: &str) {
        let Some(i) = self.pods.iter().position(|p| p.is(namespace, name)) else { return };
        let pod = self.pods.swap_remove(i);
        self.requested.subtract(&pod.requests);
        self.non_zero_requested.0 -= pod.non_zero_requests.0;
        self.non_zero_requested.1 -= pod.non_zero_requests.1;
        for port in &pod.host_ports {
            self.used_ports.remove(port);
        }
        for list in [&mut self.pods_with_affinity, &mut self.pods_with_required_anti_affinity] {
            if let Some(i) = list.iter().position(|p| Arc::ptr_eq(p, &pod)) {
                list.swap_remove(i);
            }
        }
    }

    /// The node object changed (labels, taints, allocatable, images): its pods stay.
    pub fn set_node(&mut self, node: Arc<Node>) {
        let status = node.status.as_ref();
        self.allocatable = Resources::from_quantities(status.and_then(|s| s.allocatable.as_ref()));
        let mut image_sizes = HashMap::new();
        for image in status.and_then(|s| s.images.as_ref()).into_iter().flatten() {
            for name in image.names.iter().flatten() {
                // The first image listing a name is the one a lookup by name finds.
                image_sizes.entry(name.clone()).or_insert(image.size_bytes.unwrap_or(0));
            }
        }
        self.images = (!image_sizes.is_empty()).then(|| Arc::new(image_sizes));
        self.node = node;
    }

    /// Whether the node reports any image.
    pub fn has_images(&self) -> bool {
        self.images.is_some()
    }

    /// The size of the image on the node, looked up by any of its names, if the node has it.
    pub fn image_size(&self, name: &str) -> Option<i64> {
        self.images.as_ref().and_then(|images| images.get(name)).copied()
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

/// What a PreFilter or PreScore step tells the scheduler (upstream's Success and Skip):
/// `Skip` when the plugin has nothing to check or score for this pod, so that its Filter
/// (or Score and NormalizeScore) is not run in this cycle. A skipped score adds nothing to
/// any node's total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Next {
    Run,
    Skip,
}

/// A filter: may the pod run on this node?
pub trait FilterPlugin: Send + Sync {
    fn name(&self) -> &'static str;
    fn filter(&self, pod: &PodInfo, node: &NodeInfo) -> Result<(), Rejection>;

    /// Runs once per pod before any node is filtered: computes what the plugin needs from
    /// the whole cluster (into `state`), rejects the pod outright, or says the filter has
    /// nothing to check for this pod ([`Next::Skip`]).
    fn pre_filter(&self, _pod: &PodInfo, _state: &mut CycleState<'_>) -> Result<Next, Rejection> {
        Ok(Next::Run)
    }

    /// The filter with the cycle's state; plugins that look across nodes override this.
    /// Not called when [`FilterPlugin::pre_filter`] skipped.
    fn filter_with_state(
        &self,
        pod: &PodInfo,
        node: &NodeInfo,
        _state: &CycleState<'_>,
    ) -> Result<(), Rejection> {
        self.filter(pod, node)
    }
}

/// A filter that looks across nodes, run on one node as if it were the whole cluster
/// (pre-filter, then filter): what [`FilterPlugin::filter`] means for such plugins.
pub fn filter_alone<P: FilterPlugin + ?Sized>(
    plugin: &P,
    pod: &PodInfo,
    node: &NodeInfo,
) -> Result<(), Rejection> {
    let nodes = [node];
    let mut state = CycleState::new(&nodes);
    match plugin.pre_filter(pod, &mut state)? {
        Next::Skip => Ok(()),
        Next::Run => plugin.filter_with_state(pod, node, &state),
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
    /// passed the filters; `state.nodes` are all nodes). [`Next::Skip`] when the plugin has
    /// nothing to score this pod by: it then adds nothing to any node.
    fn pre_score(
        &self,
        _pod: &PodInfo,
        _feasible: &[&NodeInfo],
        _state: &mut CycleState<'_>,
    ) -> Next {
        Next::Run
    }

    /// The score with the cycle's state; plugins that look across nodes override this.
    /// Not called when [`ScorePlugin::pre_score`] skipped.
    fn score_with_state(&self, pod: &PodInfo, node: &NodeInfo, _state: &CycleState<'_>) -> i64 {
        self.score(pod, node)
    }
}

/// A score plugin and its weight.
pub struct Weighted {
    pub plugin: Box<dyn ScorePlugin>,
    pub weight: i64,
}

/// The plugins the scheduler runs, in order, and how many nodes it looks for.
pub struct Profile {
    pub scheduler_name: String,
    pub filters: Vec<Box<dyn FilterPlugin>>,
    pub scores: Vec<Weighted>,
    /// `percentageOfNodesToScore`: once this share of the nodes has passed the filters, the
    /// rest are not looked at in this cycle (see [`num_feasible_nodes_to_find`]). 0, the
    /// default, lets the share shrink as the cluster grows; 100 looks at every node.
    pub percentage_of_nodes_to_score: u32,
}

/// Below this many nodes every node is filtered, and at least this many feasible nodes are
/// looked for (upstream's `minFeasibleNodesToFind`).
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// The adaptive percentage never goes below this (`minFeasibleNodesPercentageToFind`).
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: usize = 5;

/// How many feasible nodes a cycle looks for among `nodes` (upstream's
/// `numFeasibleNodesToFind`): all of them below [`MIN_FEASIBLE_NODES_TO_FIND`] nodes or at
/// 100%; otherwise `percentage` of them (0 meaning `50 - nodes/125`, at least 5%), and never
/// fewer than [`MIN_FEASIBLE_NODES_TO_FIND`].
pub fn num_feasible_nodes_to_find(percentage: u32, nodes: usize) -> usize {
    if nodes < MIN_FEASIBLE_NODES_TO_FIND || percentage >= 100 {
        return nodes;
    }
    let percentage = match percentage as usize {
        0 => 50usize.saturating_sub(nodes / 125).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND),
        p => p,
    };
    (nodes * percentage / 100).max(MIN_FEASIBLE_NODES_TO_FIND)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugins::testing::{labelled_pod, pod, pod_requesting, small_node};

    #[test]
    fn feasible_nodes_to_find_as_upstream() {
        // Small clusters, and 100%: every node.
        assert_eq!(num_feasible_nodes_to_find(0, 0), 0);
        assert_eq!(num_feasible_nodes_to_find(0, 99), 99);
        assert_eq!(num_feasible_nodes_to_find(10, 99), 99);
        assert_eq!(num_feasible_nodes_to_find(100, 5000), 5000);
        // Adaptive: 50 - nodes/125 percent, at least 5%, at least 100 nodes.
        assert_eq!(num_feasible_nodes_to_find(0, 100), 100);
        assert_eq!(num_feasible_nodes_to_find(0, 300), 144);
        assert_eq!(num_feasible_nodes_to_find(0, 1000), 420);
        assert_eq!(num_feasible_nodes_to_find(0, 5000), 500);
        assert_eq!(num_feasible_nodes_to_find(0, 6000), 300);
        assert_eq!(num_feasible_nodes_to_find(0, 20_000), 1000);
        // Configured.
        assert_eq!(num_feasible_nodes_to_find(30, 1000), 300);
        assert_eq!(num_feasible_nodes_to_find(5, 1000), 100);
        assert_eq!(num_feasible_nodes_to_find(1, 50_000), 500);
    }

    fn with_ports(name: &str, ports: serde_json::Value) -> Arc<PodInfo> {
        Arc::new(pod(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "nginx", "ports": ports}]}
        })))
    }

    #[test]
    fn pod_info_computes_what_plugins_ask_once() {
        let p = pod(json!({
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {
                "containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "250m"}},
                     "ports": [{"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.1"},
                               {"containerPort": 53, "hostPort": 53, "protocol": "UDP"},
                               {"containerPort": 9090}]},
                    {"name": "b"}
                ],
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
                ]}}
            }
        }));
        // a: 250m and the 200Mi default; b: both defaults.
        assert_eq!(p.non_zero_requests, (350, 400 << 20));
        assert_eq!(
            p.host_ports,
            [
                HostPort { ip: "10.0.0.1".into(), protocol: "TCP".into(), port: 8080 },
                HostPort { ip: ALL_ADDRESSES.into(), protocol: "UDP".into(), port: 53 },
            ]
        );
        assert_eq!(p.affinity.required_anti_affinity.len(), 1);
        assert!(p.affinity.required_affinity.is_empty());
        assert!(pod_requesting("plain", json!({})).affinity.is_empty());
    }

    #[test]
    fn node_info_keeps_sums_and_indexes_as_pods_come_and_go() {
        let mut node = small_node("worker-1", vec![]);
        let anti = Arc::new(labelled_pod(
            "db-0",
            json!({"app": "db"}),
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
            ]}}}),
        ));
        let preferring = Arc::new(labelled_pod(
            "web-0",
            json!({"app": "web"}),
            json!({"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}}
            ]}}}),
        ));
        let sized = Arc::new(pod_requesting("batch", json!({"cpu": "1", "memory": "1Gi"})));
        let ingress = with_ports("ingress", json!([{"containerPort": 80, "hostPort": 80}]));
        for p in [&anti, &preferring, &sized, &ingress] {
            node.add_pod(p.clone());
        }
        let names = |list: &[Arc<PodInfo>]| {
            let mut names: Vec<String> = list.iter().map(|p| p.name().to_string()).collect();
            names.sort();
            names
        };
        assert_eq!(names(&node.pods_with_affinity), ["db-0", "web-0"]);
        assert_eq!(names(&node.pods_with_required_anti_affinity), ["db-0"]);
        // Three containers without requests (100m / 200Mi each) and 1 CPU / 1Gi.
        assert_eq!(node.non_zero_requested, (1300, (600 << 20) + (1 << 30)));
        assert_eq!(node.requested.milli_cpu, 1000);
        let http = HostPort { ip: ALL_ADDRESSES.into(), protocol: "TCP".into(), port: 80 };
        assert!(node.used_ports.conflicts(&http));

        node.remove_pod("default", "db-0");
        node.remove_pod("default", "ingress");
        node.remove_pod("default", "no-such-pod");
        assert_eq!(names(&node.pods_with_affinity), ["web-0"]);
        assert!(node.pods_with_required_anti_affinity.is_empty());
        assert_eq!(node.non_zero_requested, (1100, (200 << 20) + (1 << 30)));
        assert!(!node.used_ports.conflicts(&http));
        assert!(node.used_ports.is_empty());
        node.remove_pod("default", "web-0");
        node.remove_pod("default", "batch");
        assert_eq!(node.non_zero_requested, (0, 0));
        assert_eq!(node.requested, Resources { pods: 0, ..Default::default() });
        assert!(node.pods.is_empty() && node.pods_with_affinity.is_empty());
    }
}
