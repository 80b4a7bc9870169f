//! Cluster DNS, served by rkube on each node as CoreDNS serves a cluster: names of the
//! cluster zone ([`records`]) answered from an in-memory index built from informers on
//! Services, EndpointSlices and Namespaces (through the API server's public API), other
//! names forwarded to the node's resolvers ([`forward`]), ExternalName CNAMEs followed to
//! addresses ([`chase`]), over UDP and TCP ([`server`]).
//!
//! Where it listens: on the node's pod bridge gateway (the first address of the Node's
//! `spec.podCIDR`), port 53. Pods reach it through the `kube-dns` Service in kube-system
//! (its cluster IP is `--cluster-dns`; the API server makes the Service), which has no
//! selector and `internalTrafficPolicy: Local`: each node's DNS keeps an EndpointSlice of
//! its own for it ([`SLICE_MANAGER`]), so a pod's queries go to its own node's DNS.
//!
//! Start at [`start`]; [`serve_zone`] serves a given address without the node's part
//! (tests and `dns-bench`).

pub mod chase;
pub mod forward;
pub mod records;
pub mod server;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use hickory_proto::rr::Name;
use k8s_openapi::api::core::v1::{Namespace, Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher;
use kube::Client;
use rkube_runtime::informer;
use tokio::sync::mpsc;

use crate::model::SERVICE_NAME_LABEL;
use forward::Forwarder;
use records::{Zone, ZoneConfig};
use server::{Handler, Listening, SharedZone};

/// The `endpointslice.kubernetes.io/managed-by` value of the node DNS's own slices: neither
/// the EndpointSlice controller's nor the mirroring controller's, so both leave them alone.
pub const SLICE_MANAGER: &str = "cluster-dns.rkube.io";

/// The Service pods reach the cluster DNS through.
pub const SERVICE_NAME: &str = "kube-dns";
pub const SERVICE_NAMESPACE: &str = "kube-system";

/// How long forwarded queries may take before the client gets SERVFAIL.
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(2);

/// How long to wait for the Node's pod CIDR and its gateway on the host.
const LISTEN_WAIT: Duration = Duration::from_secs(300);

/// The least time between two rebuilds of the zone.
const MIN_REBUILD_PERIOD: Duration = Duration::from_millis(100);

/// How often the node's EndpointSlice is written again (it comes back if deleted).
const SLICE_RESYNC: Duration = Duration::from_secs(30);

/// How a node's DNS runs.
#[derive(Clone, Debug)]
pub struct Config {
    pub node_name: String,
    /// `--cluster-domain`.
    pub domain: String,
    /// `--cluster-dns`: the `kube-dns` Service's address.
    pub cluster_dns: Option<IpAddr>,
    /// `--resolv-conf`: the node's resolvers, for names outside the cluster (None: names
    /// outside get SERVFAIL).
    pub resolv_conf: Option<PathBuf>,
    /// The port to serve on (53).
    pub port: u16,
}

/// Why the DNS could not start.
#[derive(Debug, thiserror::Error)]
pub enum DnsError {
    #[error("invalid cluster domain {domain:?}: {message}")]
    Domain { domain: String, message: String },
    #[error("cannot read the resolvers in {path}: {error}")]
    ResolvConf { path: PathBuf, error: std::io::Error },
    #[error("cannot serve DNS on {addr}: {error}")]
    Listen { addr: SocketAddr, error: std::io::Error },
}

/// The zone's fixed part from the flags.
pub fn zone_config(domain: &str, cluster_dns: Option<IpAddr>) -> Result<ZoneConfig, DnsError> {
    let invalid = |message: String| DnsError::Domain { domain: domain.to_string(), message };
    let mut name =
        Name::from_ascii(domain.trim_end_matches('.')).map_err(|e| invalid(e.to_string()))?;
    if name.num_labels() == 0 {
        return Err(invalid("the root is not a cluster domain".into()));
    }
    name.set_fqdn(true);
    Ok(ZoneConfig { domain: name, dns_ip: cluster_dns })
}

/// A cluster DNS server on `addr` with its zone kept current from the API server, without
/// the node's part (listen address from the Node, the `kube-dns` EndpointSlice).
pub struct ZoneServer {
    pub listening: Listening,
    _feed: tokio::task::JoinHandle<()>,
}

impl Drop for ZoneServer {
    fn drop(&mut self) {
        self._feed.abort();
    }
}

/// Serves the cluster zone of `client`'s cluster on `addr`, forwarding with `forwarder`.
pub async fn serve_zone(
    client: Client,
    zone: ZoneConfig,
    forwarder: Forwarder,
    addr: SocketAddr,
) -> Result<ZoneServer, DnsError> {
    let shared = SharedZone::new(Zone::empty(&zone));
    let handler = Handler { zone: shared.clone(), forwarder };
    let listening =
        server::serve(addr, handler).await.map_err(|error| DnsError::Listen { addr, error })?;
    let feed = tokio::spawn(feed(client, zone, shared));
    Ok(ZoneServer { listening, _feed: feed })
}

/// Rebuilds the zone whenever a Service, EndpointSlice or Namespace changes (a burst of
/// changes makes one rebuild, at most one per [`MIN_REBUILD_PERIOD`]).
async fn feed(client: Client, config: ZoneConfig, zone: SharedZone) {
    let (tx, mut changes) = mpsc::unbounded_channel();
    let (services, _w1) = informer::start(
        Api::<Service>::all(client.clone()),
        watcher::Config::default(),
        vec![tx.clone()],
    );
    let (slices, _w2) = informer::start(
        Api::<EndpointSlice>::all(client.clone()),
        watcher::Config::default(),
        vec![tx.clone()],
    );
    let (namespaces, _w3) =
        informer::start(Api::<Namespace>::all(client), watcher::Config::default(), vec![tx]);
    for store in [services.wait_until_ready().await, slices.wait_until_ready().await] {
        if store.is_err() {
            return;
        }
    }
    if namespaces.wait_until_ready().await.is_err() {
        return;
    }
    let mut last = None::<tokio::time::Instant>;
    loop {
        // Changes within the minimum period after a rebuild wait for the next one, so that
        // churn in a large cluster costs at most a few rebuilds a second.
        if let Some(last) = last {
            tokio::time::sleep_until(last + MIN_REBUILD_PERIOD).await;
        }
        while changes.try_recv().is_ok() {}
        last = Some(tokio::time::Instant::now());
        let (s, e, n) = (services.state(), slices.state(), namespaces.state());
        let config = config.clone();
        // Building 10,000 Services' names takes milliseconds: off the serving threads.
        let Ok(built) = tokio::task::spawn_blocking(move || Zone::build(&config, &s, &e, &n)).await
        else {
            return;
        };
        tracing::debug!(names = built.len(), "cluster DNS zone rebuilt");
        zone.set(built);
        if changes.recv().await.is_none() {
            return;
        }
    }
}

/// A node's DNS: its server and the task that keeps its EndpointSlice.
pub struct NodeDns {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for NodeDns {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts the node's DNS: waits (in the background, bounded) for the Node's pod CIDR and
/// its gateway on the host, serves there, and keeps the node's `kube-dns` EndpointSlice.
pub async fn start(client: Client, config: Config) -> Result<NodeDns, DnsError> {
    let zone = zone_config(&config.domain, config.cluster_dns)?;
    // Read now, so that a wrong `--resolv-conf` is said at startup.
    let exclude: Vec<IpAddr> = config.cluster_dns.into_iter().collect();
    let forwarder = match &config.resolv_conf {
        Some(path) => Forwarder::from_resolv_conf(path, &exclude, FORWARD_TIMEOUT)
            .map_err(|error| DnsError::ResolvConf { path: path.clone(), error })?,
        None => Forwarder::new(Vec::new(), FORWARD_TIMEOUT),
    };
    if forwarder.upstreams().is_empty() {
        tracing::warn!("no nameserver to forward to: names outside the cluster get SERVFAIL");
    }
    let task = tokio::spawn(async move {
        if let Err(e) = run_node(client, config, zone, forwarder).await {
            tracing::error!("no cluster DNS on this node: {e}");
        }
    });
    Ok(NodeDns { task })
}

#[derive(Debug, thiserror::Error)]
enum NodeError {
    #[error(
        "the Node {node} got no pod CIDR (and gateway on this host) within {LISTEN_WAIT:?}: {last}"
    )]
    NoGateway { node: String, last: String },
    #[error(transparent)]
    Dns(#[from] DnsError),
}

async fn run_node(
    client: Client,
    config: Config,
    zone: ZoneConfig,
    forwarder: Forwarder,
) -> Result<(), NodeError> {
    let (node, server) = listen_on_gateway(&client, &config, zone, forwarder).await?;
    let addr = server.listening.addr;
    tracing::info!(%addr, "cluster DNS serving");
    let slices = Api::<EndpointSlice>::namespaced(client.clone(), SERVICE_NAMESPACE);
    let nodes = Api::<Node>::all(client);
    let params = PatchParams::apply(SLICE_MANAGER).force();
    let mut node = node;
    loop {
        let slice = node_slice(&node, addr);
        let name = slice.metadata.name.clone().unwrap_or_default();
        if let Err(e) = slices.patch(&name, &params, &Patch::Apply(&slice)).await {
            tracing::warn!(error = %e, slice = name, "cannot write the node's kube-dns EndpointSlice");
        }
        tokio::time::sleep(SLICE_RESYNC).await;
        // A Node made again has another uid: the slice's owner reference follows it, or the
        // garbage collector would remove the slice.
        if let Ok(current) = nodes.get(&config.node_name).await {
            node = current;
        }
    }
}

/// Waits for the Node's pod CIDR and for its gateway to be on this host (the kubelet makes
/// the bridge), then serves there.
async fn listen_on_gateway(
    client: &Client,
    config: &Config,
    zone: ZoneConfig,
    forwarder: Forwarder,
) -> Result<(Node, ZoneServer), NodeError> {
    let nodes = Api::<Node>::all(client.clone());
    let deadline = tokio::time::Instant::now() + LISTEN_WAIT;
    let mut last = String::from("not tried");
    while tokio::time::Instant::now() < deadline {
        match nodes.get(&config.node_name).await {
            Ok(node) => match gateway_of(&node) {
                Some(ip) => {
                    let addr = SocketAddr::new(ip, config.port);
                    let exclude = [ip];
                    let forwarder = Forwarder::new(
                        forwarder
                            .upstreams()
                            .iter()
                            .copied()
                            .filter(|u| !exclude.contains(&u.ip()))
                            .collect(),
                        FORWARD_TIMEOUT,
                    );
                    match serve_zone(client.clone(), zone.clone(), forwarder, addr).await {
                        Ok(server) => return Ok((node, server)),
                        // The bridge is not there yet.
                        Err(DnsError::Listen { error, .. })
                            if error.kind() == std::io::ErrorKind::AddrNotAvailable =>
                        {
                            last = format!("{ip} is not on this host yet");
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
                None => last = "no spec.podCIDR yet".into(),
            },
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Err(NodeError::NoGateway { node: config.node_name.clone(), last })
}

/// The first address of the Node's pod CIDR: its bridge's gateway.
pub fn gateway_of(node: &Node) -> Option<IpAddr> {
    let cidr = node.spec.as_ref()?.pod_cidr.as_deref()?;
    match cidr.parse::<ipnet::IpNet>().ok()? {
        ipnet::IpNet::V4(net) => {
            Some(IpAddr::V4(std::net::Ipv4Addr::from(u32::from(net.network()) + 1)))
        }
        ipnet::IpNet::V6(net) => {
            Some(IpAddr::V6(std::net::Ipv6Addr::from(u128::from(net.network()) + 1)))
        }
    }
}

/// The node's EndpointSlice of the `kube-dns` Service: its DNS's address, on this node,
/// ready; owned by the Node, so that it goes with it.
pub fn node_slice(node: &Node, addr: SocketAddr) -> EndpointSlice {
    let node_name = node.metadata.name.clone().unwrap_or_default();
    let labels = BTreeMap::from([
        (SERVICE_NAME_LABEL.to_string(), SERVICE_NAME.to_string()),
        ("endpointslice.kubernetes.io/managed-by".to_string(), SLICE_MANAGER.to_string()),
    ]);
    let owner = k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: node_name.clone(),
        uid: node.metadata.uid.clone().unwrap_or_default(),
        ..Default::default()
    };
    let port = |name: &str, protocol: &str| k8s_openapi::api::discovery::v1::EndpointPort {
        name: Some(name.into()),
        port: Some(i32::from(addr.port())),
        protocol: Some(protocol.into()),
        ..Default::default()
    };
    EndpointSlice {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{SERVICE_NAME}-{node_name}")),
            namespace: Some(SERVICE_NAMESPACE.into()),
            labels: Some(labels),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        address_type: if addr.is_ipv4() { "IPv4" } else { "IPv6" }.into(),
        endpoints: vec![k8s_openapi::api::discovery::v1::Endpoint {
            addresses: vec![addr.ip().to_string()],
            conditions: Some(k8s_openapi::api::discovery::v1::EndpointConditions {
                ready: Some(true),
                serving: Some(true),
                terminating: Some(false),
            }),
            node_name: Some(node_name),
            ..Default::default()
        }],
        ports: Some(vec![port("dns", "UDP"), port("dns-tcp", "TCP")]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cidr: &str) -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n1", "uid": "u-1"}, "spec": {"podCIDR": cidr}
        }))
        .unwrap()
    }

    #[test]
    fn listens_on_the_first_address_of_the_pod_cidr() {
        assert_eq!(gateway_of(&node("10.42.3.0/24")), Some("10.42.3.1".parse().unwrap()));
        assert_eq!(gateway_of(&node("10.42.3.7/24")), Some("10.42.3.1".parse().unwrap()));
        assert_eq!(gateway_of(&node("fd00:1::/64")), Some("fd00:1::1".parse().unwrap()));
        assert_eq!(gateway_of(&Node::default()), None);
    }

    #[test]
    fn the_node_slice_is_ours_on_this_node_and_owned_by_it() {
        let slice = node_slice(&node("10.42.3.0/24"), "10.42.3.1:53".parse().unwrap());
        let value = serde_json::to_value(&slice).unwrap();
        assert_eq!(value["apiVersion"], "discovery.k8s.io/v1");
        assert_eq!(value["kind"], "EndpointSlice");
        assert_eq!(value["metadata"]["name"], "kube-dns-n1");
        assert_eq!(value["metadata"]["namespace"], "kube-system");
        let labels = &value["metadata"]["labels"];
        assert_eq!(labels["kubernetes.io/service-name"], "kube-dns");
        assert_eq!(labels["endpointslice.kubernetes.io/managed-by"], SLICE_MANAGER);
        assert_eq!(value["metadata"]["ownerReferences"][0]["uid"], "u-1");
        assert_eq!(value["endpoints"][0]["addresses"][0], "10.42.3.1");
        assert_eq!(value["endpoints"][0]["nodeName"], "n1");
        assert_eq!(value["endpoints"][0]["conditions"]["ready"], true);
        assert_eq!(
            value["ports"],
            serde_json::json!([{"name": "dns", "port": 53, "protocol": "UDP"},
                               {"name": "dns-tcp", "port": 53, "protocol": "TCP"}])
        );
    }

    #[test]
    fn the_domain_must_be_a_name_below_the_root() {
        assert_eq!(
            zone_config("cluster.local", None).unwrap().domain.to_string(),
            "cluster.local."
        );
        assert_eq!(
            zone_config("cluster.local.", None).unwrap().domain.to_string(),
            "cluster.local."
        );
        assert!(zone_config(".", None).is_err());
    }
}
