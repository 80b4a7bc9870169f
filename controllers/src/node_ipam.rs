//! The node IPAM controller, as kube-controller-manager's range allocator
//! (`--allocate-node-cidrs` with `--cluster-cidr` and `--node-cidr-mask-size`): every Node without
//! `spec.podCIDR` gets the next free subnet of the cluster CIDR, written with a patch to
//! `spec.podCIDR` and `spec.podCIDRs`.
//!
//! - [`CidrSet`] is the allocator: a subnet is never handed out twice; the search for the next
//!   free one goes on from after the last one given out (upstream's rotating candidate), so a
//!   released subnet is reused once the others are taken.
//! - At start (and after every relist of the watch), the allocator learns the subnets already
//!   taken from the node list; a deleted node's subnet becomes free.
//! - When no subnet is left, the node gets a `CIDRNotAvailable` event and waits: it is served as
//!   soon as a node is deleted.
//!
//! IPv4 only: an IPv6 or dual-stack `--cluster-cidr` is refused with a clear error.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::Ipv4Addr;
use std::time::Duration;

use futures::StreamExt;
pub use ipnet::Ipv4Net;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Client;
use serde_json::json;

use rkube_runtime::events::{node_reference, Recorder};

/// What is wrong with `--cluster-cidr` / `--node-cidr-mask-size`, or with a CIDR on a node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    #[error("invalid CIDR {0:?}: expected an IPv4 network such as 10.42.0.0/16")]
    Invalid(String),
    #[error("CIDR {0:?}: IPv6 and dual-stack cluster CIDRs are not supported yet (IPv4 only)")]
    Ipv6(String),
    #[error(
        "--node-cidr-mask-size {mask} does not fit in --cluster-cidr {cluster}: it must be between \
         {} and 32",
        .cluster.prefix_len()
    )]
    MaskSize { cluster: Ipv4Net, mask: u8 },
    #[error("CIDR {cidr} is outside the cluster CIDR {cluster}")]
    OutOfRange { cidr: Ipv4Net, cluster: Ipv4Net },
    #[error("no CIDR left in the cluster CIDR {0}")]
    Exhausted(Ipv4Net),
}

/// Reads an IPv4 CIDR as Go's `net.ParseCIDR` does for these flags: the host bits are
/// cleared, and an IPv6 or dual-stack value gets its own error.
pub fn parse_ipv4_net(s: &str) -> Result<Ipv4Net, CidrError> {
    let s = s.trim();
    if s.contains(':') {
        return Err(CidrError::Ipv6(s.to_string()));
    }
    let net: Ipv4Net = s.parse().map_err(|_| CidrError::Invalid(s.to_string()))?;
    Ok(net.trunc())
}

/// Parses `--cluster-cidr` (for clap's `value_parser`).
pub fn parse_cluster_cidr(s: &str) -> Result<Ipv4Net, CidrError> {
    if s.contains(',') {
        return Err(CidrError::Ipv6(s.to_string()));
    }
    parse_ipv4_net(s)
}

/// The subnets of a cluster CIDR, each given out at most once. Subnets are known by their
/// index in the cluster CIDR (the order `Ipv4Net::subnets` lists them), so a large range costs
/// nothing until its subnets are taken.
#[derive(Debug, Clone)]
pub struct CidrSet {
    cluster: Ipv4Net,
    mask: u8,
    /// How many subnets the cluster CIDR holds.
    max: u64,
    used: BTreeSet<u64>,
    /// Where the search for a free subnet starts: after the last one given out.
    next_candidate: u64,
}

impl CidrSet {
    /// Subnets of `mask` bits in `cluster`.
    pub fn new(cluster: Ipv4Net, mask: u8) -> Result<CidrSet, CidrError> {
        let cluster = cluster.trunc();
        cluster.subnets(mask).map_err(|_| CidrError::MaskSize { cluster, mask })?;
        Ok(CidrSet {
            cluster,
            mask,
            max: 1u64 << (mask - cluster.prefix_len()),
            used: BTreeSet::new(),
            next_candidate: 0,
        })
    }

    pub fn cluster(&self) -> Ipv4Net {
        self.cluster
    }

    /// How many subnets are taken.
    pub fn allocated(&self) -> u64 {
        self.used.len() as u64
    }

    /// The size of one subnet, as a power of two.
    fn host_bits(&self) -> u32 {
        32 - u32::from(self.mask)
    }

    fn subnet(&self, index: u64) -> Ipv4Net {
        let base = u64::from(u32::from(self.cluster.network()));
        let network = Ipv4Addr::from((base + (index << self.host_bits())) as u32);
        Ipv4Net::new(network, self.mask).expect("the mask was checked in CidrSet::new")
    }

    /// The next free subnet, marked as taken.
    pub fn allocate_next(&mut self) -> Result<Ipv4Net, CidrError> {
        if self.allocated() >= self.max {
            return Err(CidrError::Exhausted(self.cluster));
        }
        // The first free index at or after the candidate, wrapping around.
        let mut candidate = self.next_candidate;
        for taken in self.used.range(candidate..) {
            if *taken != candidate {
                break;
            }
            candidate += 1;
        }
        if candidate >= self.max {
            candidate = 0;
            for taken in self.used.iter() {
                if *taken != candidate {
                    break;
                }
                candidate += 1;
            }
        }
        self.used.insert(candidate);
        self.next_candidate = (candidate + 1) % self.max;
        Ok(self.subnet(candidate))
    }

    /// The indexes of the subnets `cidr` overlaps.
    fn indexes(&self, cidr: Ipv4Net) -> Result<std::ops::RangeInclusive<u64>, CidrError> {
        let first = cidr.network().max(self.cluster.network());
        let last = cidr.broadcast().min(self.cluster.broadcast());
        if first > last {
            return Err(CidrError::OutOfRange { cidr, cluster: self.cluster });
        }
        let base = u64::from(u32::from(self.cluster.network()));
        let index = |addr: Ipv4Addr| (u64::from(u32::from(addr)) - base) >> self.host_bits();
        Ok(index(first)..=index(last))
    }

    /// Marks the subnets `cidr` overlaps as taken (a node that already has its CIDR).
    pub fn occupy(&mut self, cidr: Ipv4Net) -> Result<(), CidrError> {
        for index in self.indexes(cidr)? {
            self.used.insert(index);
        }
        Ok(())
    }

    /// Frees the subnets `cidr` overlaps.
    pub fn release(&mut self, cidr: Ipv4Net) -> Result<(), CidrError> {
        for index in self.indexes(cidr)? {
            self.used.remove(&index);
        }
        Ok(())
    }

    /// Forgets every subnet taken (before learning them again from a fresh node list); where
    /// the search goes on is kept.
    fn clear(&mut self) {
        self.used.clear();
    }
}

/// The node's pod CIDRs in our range, parsed (the first one only: IPv4 single-stack).
fn node_cidr(node: &Node) -> Option<Result<Ipv4Net, CidrError>> {
    let spec = node.spec.as_ref()?;
    let cidr = spec
        .pod_cidrs
        .as_ref()
        .and_then(|c| c.first())
        .or(spec.pod_cidr.as_ref())
        .filter(|c| !c.is_empty())?;
    Some(parse_ipv4_net(cidr))
}

fn node_name(node: &Node) -> String {
    node.metadata.name.clone().unwrap_or_default()
}

/// The allocator's view of the cluster: which node holds which subnet.
struct Allocator {
    set: CidrSet,
    /// Node name to the subnet it holds (set on the node, or patched by us and not seen yet).
    assigned: HashMap<String, Ipv4Net>,
    /// Nodes waiting for a subnet (none left, or the patch failed), oldest first.
    waiting: BTreeMap<(String, String), Node>,
    /// Nodes already told that no CIDR is left (one event per node until it gets one).
    told: BTreeSet<String>,
}

impl Allocator {
    fn new(set: CidrSet) -> Allocator {
        Allocator { set, assigned: HashMap::new(), waiting: BTreeMap::new(), told: BTreeSet::new() }
    }

    /// Takes note of a node that has its CIDR.
    fn learn(&mut self, name: &str, cidr: Ipv4Net) {
        if let Some(old) = self.assigned.get(name) {
            if *old == cidr {
                return;
            }
            // Not ours after all (someone else set it first): give ours back.
            let _ = self.set.release(*old);
        }
        if let Some((other, _)) = self.assigned.iter().find(|(n, c)| **c == cidr && *n != name) {
            tracing::warn!(node = name, other, %cidr, "two nodes have the same podCIDR");
        }
        match self.set.occupy(cidr) {
            Ok(()) => {}
            Err(e) => {
                tracing::warn!(node = name, error = %e, "podCIDR not in the cluster CIDR: ignored")
            }
        }
        self.assigned.insert(name.to_string(), cidr);
    }

    fn forget(&mut self, name: &str) {
        if let Some(cidr) = self.assigned.remove(name) {
            // Another node with the same CIDR (set by hand) keeps it taken.
            if !self.assigned.values().any(|c| *c == cidr) {
                let _ = self.set.release(cidr);
            }
        }
        self.waiting.retain(|(_, n), _| n != name);
        self.told.remove(name);
    }
}

fn waiting_key(node: &Node) -> (String, String) {
    let created =
        node.metadata.creation_timestamp.as_ref().map(|t| t.0.as_second()).unwrap_or_default();
    (format!("{created:020}"), node_name(node))
}

/// Runs the controller until the task is aborted.
pub async fn run(client: Client, set: CidrSet) {
    let recorder = Recorder::new(client.clone(), "cidrAllocator");
    let nodes: Api<Node> = Api::all(client.clone());
    let mut allocator = Allocator::new(set);
    let mut listed: Vec<Node> = Vec::new();
    let mut stream = node_watch(nodes.clone()).boxed();
    let mut retry = tokio::time::interval(Duration::from_secs(30));
    retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tracing::info!(cluster_cidr = %allocator.set.cluster(), mask = allocator.set.mask, "node IPAM controller started");
    loop {
        let event = tokio::select! {
            event = stream.next() => match event {
                Some(Ok(event)) => event,
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "node IPAM watch");
                    continue;
                }
                None => return,
            },
            _ = retry.tick() => {
                serve_waiting(&nodes, &recorder, &mut allocator).await;
                continue;
            }
        };
        match event {
            Event::Init => listed.clear(),
            Event::InitApply(node) => listed.push(node),
            Event::InitDone => {
                // Learn what is taken from the full list; nodes we patched that the list does
                // not show with their CIDR yet keep theirs.
                let patched = std::mem::take(&mut allocator.assigned);
                allocator.set.clear();
                allocator.waiting.clear();
                let mut without = Vec::new();
                for node in listed.drain(..) {
                    let name = node_name(&node);
                    match node_cidr(&node) {
                        Some(Ok(cidr)) => allocator.learn(&name, cidr),
                        Some(Err(e)) => tracing::warn!(node = name, error = %e, "bad podCIDR"),
                        None => match patched.get(&name) {
                            Some(cidr) => allocator.learn(&name, *cidr),
                            None => without.push(node),
                        },
                    }
                }
                let known: BTreeSet<String> = allocator.assigned.keys().cloned().collect();
                allocator.told.retain(|n| !known.contains(n));
                for node in without {
                    allocator.waiting.insert(waiting_key(&node), node);
                }
                tracing::info!(
                    taken = allocator.set.allocated(),
                    "node IPAM learned the CIDRs in use"
                );
                serve_waiting(&nodes, &recorder, &mut allocator).await;
            }
            Event::Apply(node) => {
                let name = node_name(&node);
                match node_cidr(&node) {
                    Some(Ok(cidr)) => {
                        allocator.learn(&name, cidr);
                        allocator.waiting.retain(|(_, n), _| *n != name);
                        allocator.told.remove(&name);
                    }
                    Some(Err(e)) => tracing::warn!(node = name, error = %e, "bad podCIDR"),
                    None if allocator.assigned.contains_key(&name) => {} // our patch is on its way
                    None => {
                        allocator.waiting.retain(|(_, n), _| *n != name);
                        allocator.waiting.insert(waiting_key(&node), node);
                        serve_waiting(&nodes, &recorder, &mut allocator).await;
                    }
                }
            }
            Event::Delete(node) => {
                allocator.forget(&node_name(&node));
                serve_waiting(&nodes, &recorder, &mut allocator).await;
            }
        }
    }
}

fn node_watch(
    nodes: Api<Node>,
) -> impl futures::Stream<Item = Result<Event<Node>, watcher::Error>> {
    watcher::watcher(nodes, watcher::Config::default()).default_backoff()
}

/// Gives every waiting node a subnet, oldest first, until none is left.
async fn serve_waiting(nodes: &Api<Node>, recorder: &Recorder, allocator: &mut Allocator) {
    while let Some((key, node)) = allocator.waiting.pop_first() {
        let name = node_name(&node);
        let cidr = match allocator.set.allocate_next() {
            Ok(cidr) => cidr,
            Err(e) => {
                if allocator.told.insert(name.clone()) {
                    tracing::warn!(node = name, error = %e, "no CIDR for the node");
                    let message = format!("Node {name} status is now: CIDRNotAvailable");
                    recorder.record(&node_reference(&node), "Normal", "CIDRNotAvailable", &message);
                }
                allocator.waiting.insert(key, node);
                return;
            }
        };
        let patch = json!({"spec": {"podCIDR": cidr.to_string(), "podCIDRs": [cidr.to_string()]}});
        match nodes.patch(&name, &PatchParams::default(), &Patch::Strategic(&patch)).await {
            Ok(_) => {
                tracing::info!(node = name, %cidr, "set node PodCIDR");
                allocator.assigned.insert(name.clone(), cidr);
                allocator.told.remove(&name);
            }
            Err(e) => {
                let _ = allocator.set.release(cidr);
                match &e {
                    // Gone: nothing to do. Invalid: it got a CIDR from someone else; its
                    // update shows which.
                    kube::Error::Api(s) if s.code == 404 || s.code == 422 => {
                        tracing::debug!(node = name, error = %e, "node CIDR not set");
                    }
                    _ => {
                        tracing::warn!(node = name, error = %e, "cannot set the node's PodCIDR; will retry");
                        allocator.waiting.insert(key, node);
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> Ipv4Net {
        parse_ipv4_net(s).unwrap()
    }

    #[test]
    fn hands_out_the_next_free_subnet_in_order() {
        let mut set = CidrSet::new(net("10.42.0.0/16"), 24).unwrap();
        assert_eq!(set.allocate_next().unwrap().to_string(), "10.42.0.0/24");
        assert_eq!(set.allocate_next().unwrap().to_string(), "10.42.1.0/24");
        assert_eq!(set.allocate_next().unwrap().to_string(), "10.42.2.0/24");
        assert_eq!(set.allocated(), 3);
    }

    #[test]
    fn a_released_subnet_is_reused_and_never_given_twice() {
        let mut set = CidrSet::new(net("10.42.0.0/22"), 24).unwrap();
        let all: Vec<_> = (0..4).map(|_| set.allocate_next().unwrap()).collect();
        assert_eq!(all.iter().collect::<BTreeSet<_>>().len(), 4, "{all:?}");
        set.release(net("10.42.1.0/24")).unwrap();
        assert_eq!(set.allocate_next().unwrap().to_string(), "10.42.1.0/24");
        assert!(matches!(set.allocate_next(), Err(CidrError::Exhausted(_))));
        // The search goes on after the last one given out (upstream's rotation).
        set.release(net("10.42.0.0/24")).unwrap();
        set.release(net("10.42.3.0/24")).unwrap();
        assert_eq!(set.allocate_next().unwrap().to_string(), "10.42.3.0/24");
        assert_eq!(set.allocate_next().unwrap().to_string(), "10.42.0.0/24");
    }

    #[test]
    fn exhaustion_is_an_error_until_something_is_freed() {
        let mut set = CidrSet::new(net("10.42.0.0/23"), 24).unwrap();
        set.allocate_next().unwrap();
        set.allocate_next().unwrap();
        let err = set.allocate_next().unwrap_err();
        assert_eq!(err.to_string(), "no CIDR left in the cluster CIDR 10.42.0.0/23");
        set.release(net("10.42.0.0/24")).unwrap();
        assert_eq!(set.allocate_next().unwrap().to_string(), "10.42.0.0/24");
    }

    #[test]
    fn learns_subnets_already_taken() {
        let mut set = CidrSet::new(net("10.42.0.0/16"), 24).unwrap();
        set.occupy(net("10.42.0.0/24")).unwrap();
        set.occupy(net("10.42.2.0/23")).unwrap(); // a bigger one covers two subnets
        set.occupy(net("10.42.5.128/25")).unwrap(); // a smaller one takes its subnet
        let got: Vec<String> = (0..3).map(|_| set.allocate_next().unwrap().to_string()).collect();
        assert_eq!(got, ["10.42.1.0/24", "10.42.4.0/24", "10.42.6.0/24"]);
        let err = set.occupy(net("10.43.0.0/24")).unwrap_err();
        assert_eq!(err.to_string(), "CIDR 10.43.0.0/24 is outside the cluster CIDR 10.42.0.0/16");
    }

    #[test]
    fn the_allocator_learns_and_forgets_nodes() {
        let mut a = Allocator::new(CidrSet::new(net("10.42.0.0/22"), 24).unwrap());
        a.learn("a", net("10.42.0.0/24"));
        a.learn("b", net("10.42.1.0/24"));
        assert_eq!(a.set.allocate_next().unwrap().to_string(), "10.42.2.0/24");
        a.forget("a");
        assert_eq!(a.set.allocate_next().unwrap().to_string(), "10.42.3.0/24");
        assert_eq!(a.set.allocate_next().unwrap().to_string(), "10.42.0.0/24");
        assert!(a.set.allocate_next().is_err());
    }

    #[test]
    fn bad_flags_give_clear_errors() {
        assert_eq!(
            parse_cluster_cidr("10.42.0.0").unwrap_err().to_string(),
            "invalid CIDR \"10.42.0.0\": expected an IPv4 network such as 10.42.0.0/16"
        );
        assert!(matches!(parse_cluster_cidr("10.42.0.0/33"), Err(CidrError::Invalid(_))));
        assert!(matches!(parse_cluster_cidr("10.42.0.300/16"), Err(CidrError::Invalid(_))));
        assert!(matches!(parse_cluster_cidr("10.42.0.0/+8"), Err(CidrError::Invalid(_))));
        assert!(matches!(parse_cluster_cidr("fd00::/48"), Err(CidrError::Ipv6(_))));
        assert!(matches!(parse_cluster_cidr("10.42.0.0/16,fd00::/48"), Err(CidrError::Ipv6(_))));
        // Host bits are cleared, as Go's net.ParseCIDR does.
        assert_eq!(parse_cluster_cidr("10.42.7.1/16").unwrap().to_string(), "10.42.0.0/16");
        let err = CidrSet::new(net("10.42.0.0/16"), 8).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--node-cidr-mask-size 8 does not fit in --cluster-cidr 10.42.0.0/16: it must be \
             between 16 and 32"
        );
        assert!(CidrSet::new(net("10.42.0.0/16"), 33).is_err());
        assert!(CidrSet::new(net("10.42.0.0/16"), 16).is_ok());
    }

    #[test]
    fn large_ranges_do_not_cost_memory_up_front() {
        let mut set = CidrSet::new(net("10.0.0.0/8"), 32).unwrap();
        assert_eq!(set.allocate_next().unwrap().to_string(), "10.0.0.0/32");
        assert_eq!(set.allocate_next().unwrap().to_string(), "10.0.0.1/32");
    }
}
