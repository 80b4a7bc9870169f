//! `rkube`: the single binary of rkube, with one subcommand per component.
//!
//! Today: `rkube server`, the API server on the embedded SQLite store (or etcd), with the
//! cluster PKI and an admin kubeconfig. The scheduler, controllers, kubelet and proxy join it
//! as their issues land (see docs/features.md).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

mod grpc;
mod healthz;
mod host_address;
mod identities;
mod killall;

use anyhow::Context;
use clap::{Parser, Subcommand};
use rkube_certs::{Pki, PkiOptions};
use rkube_store::{Compactor, EtcdOptions, EtcdStore, SqliteOptions, SqliteStore, Store};

/// mimalloc rather than glibc's malloc: the API server allocates and frees many small buffers
/// per request from every worker thread, and glibc's arenas spent about a sixth of its CPU on
/// them under load (see docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "rkube", version, about = "A Kubernetes-compatible cluster in one binary")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the cluster on this machine: the API server on the embedded store (or etcd).
    Server(Box<ServerArgs>),
    /// Run the scheduler alone against an API server.
    Scheduler(SchedulerArgs),
    /// Run the controller manager alone against an API server; several may run, one acts
    /// (leader-elected through the `kube-system/kube-controller-manager` Lease).
    ControllerManager(Box<ControllerManagerCommandArgs>),
    /// Run a node: the kubelet on the local Docker engine, against an API server.
    Kubelet(KubeletArgs),
    /// Run the service proxy (kube-proxy's iptables mode) against an API server; with
    /// `--cleanup`, remove its rules and routes and exit.
    Proxy(ProxyCommandArgs),
    /// Take rkube off this host (k3s's killall): stop its processes, remove its pods'
    /// containers, the pod network and every iptables chain and rule it made.
    Killall(killall::KillallArgs),
    /// Read and watch resources through the gRPC facade (`rkube grpc get pods -n default`,
    /// `rkube grpc watch configmaps`), with a kubeconfig's server and credentials.
    Grpc(grpc::GrpcArgs),
}

/// The proxy's flags (kube-proxy's names), shared by `rkube proxy` and the local node of
/// `rkube server`.
#[derive(clap::Args, Clone)]
struct ProxyArgs {
    /// The least time between two rewrites of the rules; changes in between are batched.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    iptables_min_sync_period: Duration,
    /// The longest time between two full rewrites of the rules.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    iptables_sync_period: Duration,
    /// The prefix of the proxy's iptables chains (`KUBE`: kube-proxy's names). Another one
    /// lets several rkube nodes share one host's tables (tests); 1 to 7 of A-Z, 0-9.
    #[arg(long, default_value = "KUBE")]
    iptables_chain_prefix: String,
    /// Where the proxy serves `/metrics` (kube-proxy's names), `/healthz` and `/proxyMode`;
    /// empty: nowhere.
    #[arg(long, default_value = "127.0.0.1:10249", value_parser = parse_optional_address)]
    metrics_bind_address: OptionalAddress,
}

/// A socket address that may be left empty (`--metrics-bind-address ""`).
#[derive(Clone, Copy, Debug)]
struct OptionalAddress(Option<SocketAddr>);

fn parse_optional_address(text: &str) -> Result<OptionalAddress, String> {
    if text.is_empty() {
        return Ok(OptionalAddress(None));
    }
    text.parse().map(|a| OptionalAddress(Some(a))).map_err(|_| {
        format!("{text:?} is not an address with a port (e.g. 127.0.0.1:10249), nor empty")
    })
}

/// The node's cluster DNS of `rkube proxy` (CoreDNS's part: names of `--cluster-domain`,
/// others forwarded to `--resolv-conf`'s resolvers). `rkube server` takes the kubelet's
/// flags of the same names for its local node's DNS and its `kube-dns` Service.
#[derive(clap::Args, Clone)]
struct DnsArgs {
    /// The cluster DNS Service's address (`kube-system/kube-dns`); default: the 10th address
    /// of the service CIDR (10.43.0.10).
    #[arg(long)]
    cluster_dns: Option<std::net::Ipv4Addr>,
    /// The cluster's DNS domain.
    #[arg(long, default_value = "cluster.local")]
    cluster_domain: String,
    /// The resolvers names outside the cluster are forwarded to ("" for none).
    #[arg(long, default_value = "/etc/resolv.conf")]
    resolv_conf: PathBuf,
    #[command(flatten)]
    port: DnsPortArg,
}

/// Where the node's DNS listens: its pod bridge's gateway, on this port.
#[derive(clap::Args, Clone)]
struct DnsPortArg {
    /// The port the node's cluster DNS serves on, at its pod bridge's gateway.
    #[arg(long, default_value_t = 53)]
    cluster_dns_port: u16,
}

/// The 10th address of the service CIDR: the `kube-dns` Service's by default, as k3s's.
fn default_cluster_dns(service_cidr: rkube_controllers::node_ipam::Ipv4Net) -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::from(u32::from(service_cidr.network()) + 10)
}

fn dns_config(
    node_name: String,
    cluster_dns: Option<std::net::Ipv4Addr>,
    domain: &str,
    resolv_conf: &std::path::Path,
    port: &DnsPortArg,
) -> rkube_proxy::dns::Config {
    rkube_proxy::dns::Config {
        node_name,
        domain: domain.to_string(),
        cluster_dns: cluster_dns.map(IpAddr::V4),
        resolv_conf: (!resolv_conf.as_os_str().is_empty()).then(|| resolv_conf.to_path_buf()),
        port: port.cluster_dns_port,
    }
}

#[derive(clap::Args)]
struct ProxyCommandArgs {
    /// The kubeconfig to reach the API server with.
    #[arg(long, required_unless_present = "cleanup")]
    kubeconfig: Option<PathBuf>,
    /// The node this proxy runs on (default: the host name).
    #[arg(long)]
    hostname_override: Option<String>,
    /// The pods' addresses: traffic to a cluster IP from elsewhere is masqueraded.
    #[arg(long)]
    cluster_cidr: Option<rkube_controllers::node_ipam::Ipv4Net>,
    /// The service CIDR, routed to a local dummy device so that packets to cluster IPs
    /// never leave the machine.
    #[arg(long, default_value = "10.43.0.0/16")]
    service_cluster_ip_range: rkube_controllers::node_ipam::Ipv4Net,
    /// Remove every rule, chain and route the proxy made, say what was removed, and exit.
    #[arg(long)]
    cleanup: bool,
    #[command(flatten)]
    proxy: ProxyArgs,
    #[command(flatten)]
    dns: DnsArgs,
}

/// The kubelet's flags, shared by `rkube kubelet` and the local node of `rkube server`.
#[derive(clap::Args, Clone)]
struct NodeArgs {
    /// The node's name (default: the host name).
    #[arg(long)]
    node_name: Option<String>,
    /// The node's InternalIP, pods' hostIP and where the API server reaches the kubelet.
    #[arg(long)]
    node_ip: Option<IpAddr>,
    /// The kubelet's HTTPS port.
    #[arg(long, default_value_t = 10250)]
    kubelet_port: u16,
    /// Where the kubelet keeps pod volumes.
    #[arg(long)]
    root_dir: Option<PathBuf>,
    /// The node's pod CIDR; without it, the one the node IPAM controller assigns.
    #[arg(long)]
    pod_cidr: Option<String>,
    /// Hard eviction thresholds, as upstream's kubelet flag.
    #[arg(
        long,
        default_value = "memory.available<100Mi,nodefs.available<10%",
        value_parser = rkube_kubelet::node::EvictionThresholds::parse
    )]
    eviction_hard: rkube_kubelet::node::EvictionThresholds,
    /// The CA bundle that clients of the kubelet API (the API server's kubelet-client
    /// certificate) must chain to; `rkube server` uses its cluster CA. Without it the kubelet
    /// serves no API (no logs, exec or attach).
    #[arg(long)]
    client_ca_file: Option<PathBuf>,
    /// A directory of static pod manifests: pods this kubelet runs without the API server,
    /// shown in the API as mirror pods.
    #[arg(long)]
    pod_manifest_path: Option<PathBuf>,
    /// How often the static pod manifests are read again even when no file changed.
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    file_check_frequency: Duration,
    /// The cluster DNS servers pods with dnsPolicy ClusterFirst use (comma-separated);
    /// `rkube server` defaults it to the 10th address of its service CIDR (10.43.0.10), and
    /// makes the `kube-dns` Service at the first one.
    #[arg(long = "cluster-dns", value_delimiter = ',', value_name = "CLUSTER_DNS")]
    kubelet_cluster_dns: Vec<IpAddr>,
    /// The cluster's DNS domain: pods search `<ns>.svc.<domain>`, `svc.<domain>`, `<domain>`.
    #[arg(long = "cluster-domain", default_value = "cluster.local", value_name = "CLUSTER_DOMAIN")]
    kubelet_cluster_domain: String,
    /// The node's resolver file, the base of pods' resolv.conf (dnsPolicy Default, and the
    /// search domains of ClusterFirst), and on `rkube server` where the node's cluster DNS
    /// forwards names outside the cluster; "" for none.
    #[arg(long, default_value = "/etc/resolv.conf")]
    resolv_conf: PathBuf,
}

impl NodeArgs {
    /// The pods' DNS settings from these flags.
    fn dns(&self) -> rkube_kubelet::pods::dns::DnsSettings {
        rkube_kubelet::pods::dns::DnsSettings {
            cluster_dns: self.kubelet_cluster_dns.clone(),
            cluster_domain: self.kubelet_cluster_domain.clone(),
            resolv_conf: (!self.resolv_conf.as_os_str().is_empty())
                .then(|| self.resolv_conf.clone()),
        }
    }
}

#[derive(clap::Args)]
struct KubeletArgs {
    /// The kubeconfig to reach the API server with.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// The container runtime: `docker` (the local engine), or `simulated` (no containers:
    /// pods run on paper, for scale tests; see `--nodes`).
    #[arg(long, default_value = "docker", value_parser = ["docker", "simulated"])]
    runtime: String,
    /// With `--runtime simulated`: how many nodes this process runs, named
    /// `<node-name>-0000`, `<node-name>-0001`, ... (`--node-name` defaults to `sim` here).
    #[arg(long, default_value_t = 1)]
    nodes: u32,
    #[command(flatten)]
    node: NodeArgs,
}

#[derive(clap::Args)]
struct SchedulerArgs {
    /// The kubeconfig to reach the API server with.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// A KubeSchedulerConfiguration file (profiles, plugins, leader election).
    #[arg(long)]
    config: Option<PathBuf>,
    /// The loopback HTTPS port of `/healthz` (kube-scheduler's), which the API server's
    /// ComponentStatus probes; 0 serves none.
    #[arg(long, default_value_t = 10259)]
    secure_port: u16,
}

#[derive(clap::Args)]
struct ControllerManagerCommandArgs {
    /// The kubeconfig to reach the API server with.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// The loopback HTTPS port of `/healthz` (kube-controller-manager's), which the API
    /// server's ComponentStatus probes; 0 serves none.
    #[arg(long, default_value_t = 10257)]
    secure_port: u16,
    /// The controllers' flags (kube-controller-manager's names).
    #[command(flatten)]
    controller_manager: ControllerManagerArgs,
}

#[derive(clap::Args)]
struct ServerArgs {
    /// Where the store, the PKI and the admin kubeconfig live.
    #[arg(long, default_value = "/var/lib/rkube")]
    data_dir: PathBuf,
    /// etcd client URLs (comma-separated); without it, the embedded SQLite store in the data dir.
    #[arg(long, value_delimiter = ',')]
    etcd_servers: Vec<String>,
    /// The address to listen on.
    #[arg(long, default_value = "0.0.0.0")]
    bind_address: IpAddr,
    /// The HTTPS port.
    #[arg(long, default_value_t = 6443)]
    secure_port: u16,
    /// A port serving only the gRPC facade (on `--bind-address`); it is served on
    /// `--secure-port` too.
    #[arg(long)]
    grpc_port: Option<u16>,
    /// The loopback HTTPS port of the scheduler's `/healthz` (kube-scheduler's): served by
    /// the scheduler run here, probed by ComponentStatus (also when it runs on its own).
    #[arg(long, default_value_t = 10259)]
    scheduler_secure_port: u16,
    /// The loopback HTTPS port of the controller-manager's `/healthz`
    /// (kube-controller-manager's), as `--scheduler-secure-port`.
    #[arg(long, default_value_t = 10257)]
    controller_manager_secure_port: u16,
    /// The address written into the admin kubeconfig and served in `/api`.
    #[arg(long, default_value = "127.0.0.1")]
    advertise_address: IpAddr,
    /// The service CIDR; its first address is the `kubernetes` service's and is in the
    /// serving certificate.
    #[arg(long, default_value = "10.43.0.0/16")]
    service_cluster_ip_range: String,
    /// The NodePort range.
    #[arg(long, default_value = "30000-32767", value_parser = parse_port_range)]
    service_node_port_range: (u16, u16),
    /// Extra names or IPs for the serving certificate (comma-separated).
    #[arg(long, value_delimiter = ',')]
    tls_san: Vec<String>,
    /// Components not to run here (comma-separated): `controllers`, `scheduler`, `kubelet`,
    /// `proxy`, `local-storage` (the `local-path` StorageClass and the node's provisioner).
    #[arg(long, value_delimiter = ',')]
    disable: Vec<String>,
    /// Where the local node's `local-path` volumes are made (default: DATA_DIR/storage).
    #[arg(long)]
    default_local_storage_path: Option<PathBuf>,
    /// How long a pod tolerates its node being not ready, unless it says: the
    /// `DefaultTolerationSeconds` admission plugin's `NoExecute` toleration.
    #[arg(long, default_value_t = 300)]
    default_not_ready_toleration_seconds: i64,
    /// How long a pod tolerates its node being unreachable, unless it says.
    #[arg(long, default_value_t = 300)]
    default_unreachable_toleration_seconds: i64,
    /// Admission plugins to enable besides the default ones (comma-separated,
    /// kube-apiserver's names). The order does not matter: they run in kube-apiserver's.
    #[arg(long, value_delimiter = ',')]
    enable_admission_plugins: Vec<String>,
    /// Default admission plugins not to run (comma-separated).
    #[arg(long, value_delimiter = ',')]
    disable_admission_plugins: Vec<String>,
    /// A KubeSchedulerConfiguration file for the scheduler run here.
    #[arg(long)]
    scheduler_config: Option<PathBuf>,
    /// How often old revisions are compacted.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    etcd_compaction_interval: Duration,
    /// The controllers' flags (kube-controller-manager's names).
    #[command(flatten)]
    controller_manager: Box<ControllerManagerArgs>,
    /// Service-account tokens (kube-apiserver's flag names).
    #[command(flatten)]
    service_accounts: ServiceAccountArgs,
    /// The authorizers asked, in order (comma-separated): `AllowAuthenticated` (rkube's
    /// default until RBAC: authenticated users may do anything, anonymous ones only read
    /// the health, version, metrics and OpenAPI endpoints), `AlwaysAllow`, `AlwaysDeny`.
    /// Members of `system:masters` are always allowed, as upstream.
    #[arg(long, value_delimiter = ',', default_value = rkube_server::authz::modes::DEFAULT)]
    authorization_mode: Vec<String>,
    /// The `Webhook` mode's remote: a kubeconfig naming the service SubjectAccessReviews are
    /// POSTed to.
    #[arg(long)]
    authorization_webhook_config_file: Option<PathBuf>,
    /// The SubjectAccessReview version sent to the webhook: `v1beta1` or `v1`.
    #[arg(long, default_value = "v1beta1")]
    authorization_webhook_version: String,
    /// How long the webhook's allows are remembered.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    authorization_webhook_cache_authorized_ttl: Duration,
    /// How long its other answers are remembered.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    authorization_webhook_cache_unauthorized_ttl: Duration,
    /// Authentication besides certificates and service-account tokens (kube-apiserver's
    /// flag names).
    #[command(flatten)]
    authentication: AuthenticationArgs,
    /// The audit log (kube-apiserver's flag names).
    #[command(flatten)]
    audit: AuditArgs,
    /// Limits on what clients may cost the server.
    #[command(flatten)]
    serving: ServingArgs,
    /// The local node (when a Docker engine is reachable).
    #[command(flatten)]
    node: NodeArgs,
    /// The local node's service proxy.
    #[command(flatten)]
    proxy: ProxyArgs,
    /// The local node's cluster DNS (its address, domain and resolvers are the kubelet's
    /// `--cluster-dns`, `--cluster-domain` and `--resolv-conf`).
    #[command(flatten)]
    dns: DnsPortArg,
}

/// kube-apiserver's serving limits (its flag names, defaults and meaning of 0), and the
/// connection timeouts Go's server has fixed there, as flags so that they can be tuned.
#[derive(clap::Args)]
struct ServingArgs {
    /// The most read-only requests (get, list) in progress at once; more get 429. Watches
    /// and other long-running requests do not count. 0: no limit.
    #[arg(long, default_value_t = 400)]
    max_requests_inflight: usize,
    /// The most mutating requests in progress at once; more get 429. 0: no limit.
    #[arg(long, default_value_t = 200)]
    max_mutating_requests_inflight: usize,
    /// The most concurrent streams an HTTP/2 client may open on one connection. 0: 100, as
    /// kube-apiserver.
    #[arg(long, default_value_t = 0)]
    http2_max_streams_per_connection: u32,
    /// How long a client may take over its TLS handshake and over each request's headers
    /// (kube-apiserver: 32s).
    #[arg(long, default_value = "32s", value_parser = parse_duration)]
    read_header_timeout: Duration,
    /// How long a connection with no request in progress stays open (kube-apiserver: 90s).
    #[arg(long, default_value = "90s", value_parser = parse_duration)]
    idle_timeout: Duration,
}

impl ServingArgs {
    fn limits(&self) -> rkube_server::ServingLimits {
        let defaults = rkube_server::ServingLimits::default();
        rkube_server::ServingLimits {
            connection: rkube_certs::tls::ConnectionLimits {
                header_read_timeout: self.read_header_timeout,
                idle_timeout: self.idle_timeout,
                http2_max_concurrent_streams: match self.http2_max_streams_per_connection {
                    0 => defaults.connection.http2_max_concurrent_streams,
                    n => n,
                },
            },
            max_requests_inflight: self.max_requests_inflight,
            max_mutating_requests_inflight: self.max_mutating_requests_inflight,
        }
    }
}

#[derive(clap::Args)]
struct ControllerManagerArgs {
    /// The controllers to run (comma-separated): `*` for all, `name` to enable one, `-name`
    /// to disable one (clusterrole-aggregation-controller, cronjob-controller,
    /// daemonset-controller, deployment-controller, disruption-controller,
    /// endpoints-controller, endpointslice-controller, endpointslice-mirroring-controller,
    /// garbage-collector-controller, horizontal-pod-autoscaler-controller, job-controller,
    /// namespace-controller, node-ipam-controller, node-lifecycle-controller,
    /// pod-garbage-collector-controller, replicaset-controller, resourcequota-controller,
    /// replicationcontroller-controller, root-ca-certificate-publisher-controller,
    /// serviceaccount-controller, serviceaccount-token-controller, statefulset-controller,
    /// taint-eviction-controller,
    /// ttl-after-finished-controller, validatingadmissionpolicy-status-controller).
    /// `rkube server --disable NAME` turns one off too.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    controllers: Vec<String>,
    /// The CIDR nodes' pod CIDRs come from (IPv4).
    #[arg(long, default_value = "10.42.0.0/16", value_parser = rkube_controllers::node_ipam::parse_cluster_cidr)]
    cluster_cidr: rkube_controllers::node_ipam::Ipv4Net,
    /// The prefix length of each node's pod CIDR.
    #[arg(long, default_value_t = 24)]
    node_cidr_mask_size: u8,
    /// How often the node lifecycle controller checks node health.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    node_monitor_period: Duration,
    /// How long a node's heartbeat (Lease, Ready condition) may stand still before its
    /// conditions become Unknown and it is tainted unreachable.
    #[arg(long, default_value = "40s", value_parser = parse_duration)]
    node_monitor_grace_period: Duration,
    /// The same for a node that never posted its status.
    #[arg(long, default_value = "1m", value_parser = parse_duration)]
    node_startup_grace_period: Duration,
    /// How many garbage collector workers run (of each kind: deleting, orphaning).
    #[arg(long, default_value_t = 20)]
    concurrent_gc_syncs: usize,
    /// How many ReplicaSets are synced at once.
    #[arg(long, default_value_t = 5)]
    concurrent_replicaset_syncs: usize,
    /// How many ReplicationControllers are synced at once.
    #[arg(long, default_value_t = 5)]
    concurrent_rc_syncs: usize,
    /// How many Deployments are synced at once.
    #[arg(long, default_value_t = 5)]
    concurrent_deployment_syncs: usize,
    /// How many Jobs are synced at once.
    #[arg(long, default_value_t = 5)]
    concurrent_job_syncs: usize,
    /// How many CronJobs are synced at once.
    #[arg(long, default_value_t = 5)]
    concurrent_cron_job_syncs: usize,
    /// How many finished Jobs are checked for their TTL at once.
    #[arg(long, default_value_t = 5)]
    concurrent_ttl_after_finished_syncs: usize,
    /// How many DaemonSets are synced at once.
    #[arg(long, default_value_t = 2)]
    concurrent_daemonset_syncs: usize,
    /// How many StatefulSets are synced at once.
    #[arg(long, default_value_t = 5)]
    concurrent_statefulset_syncs: usize,
    /// How many Services' Endpoints are synced at once.
    #[arg(long, default_value_t = 5)]
    concurrent_endpoint_syncs: usize,
    /// How many terminated pods may exist before the pod garbage collector deletes the
    /// oldest; 0 or less turns that off.
    #[arg(long, default_value_t = 12500, allow_negative_numbers = true)]
    terminated_pod_gc_threshold: i32,
    /// How many Services' EndpointSlices are synced at once.
    #[arg(long, default_value_t = 5)]
    concurrent_service_endpoint_syncs: usize,
    /// The most endpoints an EndpointSlice holds (1 to 1000).
    #[arg(long, default_value_t = 100)]
    max_endpoints_per_slice: usize,
    /// How many Services' Endpoints are mirrored to EndpointSlices at once.
    #[arg(long, default_value_t = 5)]
    mirroring_concurrent_service_endpoint_syncs: usize,
    /// The most addresses of one Endpoints subset mirrored to an EndpointSlice (1 to 1000).
    #[arg(long, default_value_t = 1000)]
    mirroring_max_endpoints_per_subset: usize,
    /// How many namespaces' ResourceQuotas are recounted at once.
    #[arg(long, default_value_t = 5)]
    concurrent_resource_quota_syncs: usize,
    /// How often every ResourceQuota's usage is recounted, changes or not.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    resource_quota_sync_period: Duration,
    /// How often each HorizontalPodAutoscaler is reconciled (its metrics read, its target
    /// scaled).
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    horizontal_pod_autoscaler_sync_period: Duration,
    /// How far from the target a metric's ratio must be before the autoscaler scales.
    #[arg(long, default_value_t = 0.1)]
    horizontal_pod_autoscaler_tolerance: f64,
    /// How long the autoscaler looks back before scaling down (the highest recommendation of
    /// that window wins), for HPAs without `spec.behavior.scaleDown.stabilizationWindowSeconds`.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    horizontal_pod_autoscaler_downscale_stabilization: Duration,
    /// How long after a pod starts its CPU samples count only once it has been ready for a
    /// whole sample window.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    horizontal_pod_autoscaler_cpu_initialization_period: Duration,
    /// How long after a pod starts a not-ready pod counts as never having been ready.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    horizontal_pod_autoscaler_initial_readiness_delay: Duration,
    /// How many HorizontalPodAutoscalers are reconciled at once.
    #[arg(long, default_value_t = 5)]
    concurrent_horizontal_pod_autoscaler_syncs: usize,
    /// The CA certificate (PEM) the csrsigning-controller signs CertificateSigningRequests
    /// with (`rkube server`: the cluster CA).
    #[arg(long)]
    cluster_signing_cert_file: Option<std::path::PathBuf>,
    /// The CA's private key (PEM) (`rkube server`: the cluster CA's).
    #[arg(long)]
    cluster_signing_key_file: Option<std::path::PathBuf>,
    /// The longest validity of the certificates it signs (a request's
    /// `spec.expirationSeconds` may ask for less).
    #[arg(long, default_value = "8760h", value_parser = parse_duration)]
    cluster_signing_duration: Duration,
    /// How often the PV binder syncs every claim and volume again.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pvclaimbinder_sync_period: Duration,
    /// Run each controller as its own service account in kube-system (bound by the
    /// bootstrap policy to `system:controller:<name>`), as upstream's flag; the controller
    /// manager's own credentials then need only `system:kube-controller-manager`. On by
    /// default in `rkube server` (as kubeadm and k3s set it), off in `rkube controller-manager`.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    use_service_account_credentials: Option<bool>,
    /// The cluster CA bundle (PEM) published as `kube-root-ca.crt` in every namespace and as
    /// `ca.crt` in service-account token Secrets (`rkube server`: the PKI's ca.crt).
    #[arg(long)]
    root_ca_file: Option<PathBuf>,
    /// The private key (PEM, RSA) that signs the legacy tokens of service-account token
    /// Secrets; without it the token controller does not run (`rkube server`: the
    /// service-account signing key).
    #[arg(long)]
    service_account_private_key_file: Option<PathBuf>,
    /// Run the controllers only while holding the leader Lease, so that of several
    /// controller managers one acts (`--leader-elect=false`: always act).
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    leader_elect: bool,
    /// How long others wait, from when they last saw the Lease renewed, before taking it.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    leader_elect_lease_duration: Duration,
    /// How long the leader keeps retrying to renew before it stops the controllers.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    leader_elect_renew_deadline: Duration,
    /// How long to wait between tries to acquire or renew the Lease.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    leader_elect_retry_period: Duration,
    /// The leader Lease's name.
    #[arg(long, default_value = rkube_controllers::LEASE_NAME)]
    leader_elect_resource_name: String,
    /// The leader Lease's namespace.
    #[arg(long, default_value = rkube_controllers::LEASE_NAMESPACE)]
    leader_elect_resource_namespace: String,
}

impl ControllerManagerArgs {
    fn config(&self) -> rkube_controllers::Config {
        rkube_controllers::Config {
            controllers: self.controllers.clone(),
            cluster_cidr: self.cluster_cidr,
            node_cidr_mask_size: self.node_cidr_mask_size,
            node_lifecycle: rkube_controllers::node_lifecycle::Config {
                node_monitor_period: self.node_monitor_period,
                node_monitor_grace_period: self.node_monitor_grace_period,
                node_startup_grace_period: self.node_startup_grace_period,
                ..Default::default()
            },
            concurrent_gc_syncs: self.concurrent_gc_syncs,
            concurrent_replicaset_syncs: self.concurrent_replicaset_syncs,
            concurrent_rc_syncs: self.concurrent_rc_syncs,
            concurrent_deployment_syncs: self.concurrent_deployment_syncs,
            concurrent_job_syncs: self.concurrent_job_syncs,
            concurrent_cron_job_syncs: self.concurrent_cron_job_syncs,
            concurrent_ttl_after_finished_syncs: self.concurrent_ttl_after_finished_syncs,
            concurrent_daemonset_syncs: self.concurrent_daemonset_syncs,
            concurrent_statefulset_syncs: self.concurrent_statefulset_syncs,
            concurrent_endpoint_syncs: self.concurrent_endpoint_syncs,
            endpoint_slice: rkube_controllers::endpoint_slice::Config {
                workers: self.concurrent_service_endpoint_syncs,
                max_endpoints_per_slice: self.max_endpoints_per_slice,
            },
            endpoint_slice_mirroring: rkube_controllers::endpoint_slice_mirroring::Config {
                workers: self.mirroring_concurrent_service_endpoint_syncs,
                max_endpoints_per_subset: self.mirroring_max_endpoints_per_subset,
            },
            resource_quota: rkube_controllers::resource_quota::Config {
                workers: self.concurrent_resource_quota_syncs,
                resync: self.resource_quota_sync_period,
            },
            horizontal_pod_autoscaler: rkube_controllers::horizontal_pod_autoscaler::Config {
                sync_period: self.horizontal_pod_autoscaler_sync_period,
                tolerance: self.horizontal_pod_autoscaler_tolerance,
                downscale_stabilization: self.horizontal_pod_autoscaler_downscale_stabilization,
                cpu_initialization_period: self.horizontal_pod_autoscaler_cpu_initialization_period,
                initial_readiness_delay: self.horizontal_pod_autoscaler_initial_readiness_delay,
                workers: self.concurrent_horizontal_pod_autoscaler_syncs,
            },
            root_ca_file: self.root_ca_file.clone(),
            service_account_private_key_file: self.service_account_private_key_file.clone(),
            cluster_signing: rkube_controllers::certificates::signer::Config {
                cert_file: self.cluster_signing_cert_file.clone(),
                key_file: self.cluster_signing_key_file.clone(),
                duration: self.cluster_signing_duration,
            },
            terminated_pod_gc_threshold: self.terminated_pod_gc_threshold,
            volume_binder: rkube_controllers::volume::binder::Config {
                sync_period: self.pvclaimbinder_sync_period,
            },
        }
    }

    fn leader_election(&self) -> rkube_runtime::leader_election::LeaderElection {
        rkube_runtime::leader_election::LeaderElection {
            leader_elect: self.leader_elect,
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
            resource_name: self.leader_elect_resource_name.clone(),
            resource_namespace: self.leader_elect_resource_namespace.clone(),
        }
    }

    /// Starts the controller manager (leader-elected unless `--leader-elect=false`) with
    /// `identity`, after checking its flags; it gives its Lease up when `stop` turns true.
    /// When it loses the Lease it stops its controllers and, with `campaign_again`, waits for
    /// the Lease again (inside `rkube server`, which keeps serving); else the task ends with
    /// the error (`rkube controller-manager` then exits, as upstream's does).
    /// Each controller's client: its own account's with `--use-service-account-credentials`
    /// (`default` when the flag is not given), tokens kept under `token_dir`.
    async fn clients(
        &self,
        kubeconfig: &std::path::Path,
        default: bool,
        token_dir: PathBuf,
    ) -> anyhow::Result<Arc<rkube_controllers::ClientBuilder>> {
        let config = config_from(kubeconfig).await?;
        let root = kube::Client::try_from(config.clone())?;
        Ok(Arc::new(match self.use_service_account_credentials.unwrap_or(default) {
            true => rkube_controllers::ClientBuilder::service_accounts(root, config, token_dir),
            false => rkube_controllers::ClientBuilder::shared(root),
        }))
    }

    fn spawn(
        &self,
        clients: Arc<rkube_controllers::ClientBuilder>,
        identity: String,
        stop: tokio::sync::watch::Receiver<bool>,
        campaign_again: bool,
    ) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<()>>> {
        let config = self.config();
        config.validate()?;
        let election = self.leader_election();
        election.validate().context("--leader-elect-*")?;
        eprintln!(
            "rkube: controller manager {identity} {}",
            match election.leader_elect {
                true => format!(
                    "waits for the leader Lease {}/{}",
                    election.resource_namespace, election.resource_name
                ),
                false => "runs without leader election".to_string(),
            }
        );
        Ok(tokio::spawn(async move {
            loop {
                let mut stop = stop.clone();
                let stopped = async move {
                    let _ = stop.wait_for(|s| *s).await;
                };
                let result = rkube_controllers::run_leader_elected(
                    clients.clone(),
                    config.clone(),
                    &election,
                    identity.clone(),
                    stopped,
                )
                .await;
                match result {
                    Err(rkube_controllers::RunError::Lost(e)) if campaign_again => {
                        eprintln!("rkube: controller manager: {e}; waiting for the Lease again");
                    }
                    other => return Ok(other?),
                }
            }
        }))
    }
}

/// The controller manager's identity inside `rkube server`: `<hostname>_<uuid>` as
/// upstream's, with the uuid kept in the data dir, so that a restarted server takes its own
/// Lease back at once instead of waiting out the lease of its previous run.
fn server_controller_manager_identity(data_dir: &std::path::Path) -> anyhow::Result<String> {
    let path = data_dir.join("controller-manager.id");
    let kept = std::fs::read_to_string(&path).ok().map(|s| s.trim().to_string());
    let uuid = match kept.filter(|s| s.len() == 36) {
        Some(uuid) => uuid,
        None => {
            let uuid = rkube_runtime::leader_election::random_uuid();
            std::fs::write(&path, &uuid)
                .with_context(|| format!("cannot write {}", path.display()))?;
            uuid
        }
    };
    Ok(format!("{}_{uuid}", rkube_runtime::leader_election::hostname()))
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (number, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 =
        number.parse().map_err(|_| format!("invalid duration {s:?} (e.g. 500ms, 30s, 5m, 1h)"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" | "" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        "h" => Ok(Duration::from_secs(n * 3600)),
        _ => Err(format!("invalid duration {s:?} (e.g. 500ms, 30s, 5m, 1h)")),
    }
}

fn parse_port_range(s: &str) -> Result<(u16, u16), String> {
    let bad = || format!("invalid port range {s:?} (e.g. 30000-32767)");
    let (low, high) = s.split_once('-').ok_or_else(bad)?;
    let (low, high): (u16, u16) =
        (low.parse().map_err(|_| bad())?, high.parse().map_err(|_| bad())?);
    if low == 0 || low > high {
        return Err(bad());
    }
    Ok((low, high))
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // hickory-server logs every DNS query at info.
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,hickory_server=warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Server(args) => server(*args).await,
        Command::Scheduler(args) => scheduler(args).await,
        Command::ControllerManager(args) => controller_manager(*args).await,
        Command::Kubelet(args) => kubelet(args).await,
        Command::Proxy(args) => proxy(args).await,
        Command::Killall(args) => killall::run(args, host_name().ok()).await,
        Command::Grpc(args) => grpc::run(args).await,
    };
    if let Err(e) = result {
        eprintln!("rkube: {e:#}");
        std::process::exit(1);
    }
}

async fn server(mut args: ServerArgs) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    // `--disable NAME` of one controller (by its `--controllers` name) turns just it off.
    let off = args.disable.iter().filter(|d| rkube_controllers::is_controller(d));
    let off: Vec<String> = off.map(|d| format!("-{d}")).collect();
    args.controller_manager.controllers.extend(off);
    let authorization_modes = rkube_server::authz::Mode::parse_list(&args.authorization_mode)?;
    let authorization_webhook = authorization_webhook(&args, &authorization_modes)?;
    let authentication = args.authentication.options()?;
    let (auditor, audit_webhook) = args.audit.auditor()?;
    // Checked before anything starts, as kube-apiserver validates its flags.
    let admission = rkube_server::rkube_admission::Chain::from_flags(
        &args.enable_admission_plugins,
        &args.disable_admission_plugins,
        rkube_server::rkube_admission::Settings {
            default_toleration_seconds: rkube_server::DefaultTolerationSeconds {
                not_ready: args.default_not_ready_toleration_seconds,
                unreachable: args.default_unreachable_toleration_seconds,
            },
        },
    )?;
    eprintln!("rkube: admission plugins: {}", admission.names().join(","));
    // The data dir holds the cluster's keys, the store and the kubelet's secret volumes.
    rkube_certs::ensure_private_dir(&args.data_dir)
        .with_context(|| format!("cannot create data dir {}", args.data_dir.display()))?;
    let store: Arc<dyn Store> = if args.etcd_servers.is_empty() {
        eprintln!("rkube: opening the embedded store in {}", args.data_dir.join("db").display());
        Arc::new(SqliteStore::open(args.data_dir.join("db"), SqliteOptions::default())?)
    } else {
        eprintln!("rkube: connecting to etcd at {}", args.etcd_servers.join(","));
        Arc::new(EtcdStore::connect(EtcdOptions::new(args.etcd_servers.clone())).await?)
    };
    let _compactor = Compactor::spawn(store.clone(), args.etcd_compaction_interval);

    let mut pki_options = PkiOptions::new(args.data_dir.join("pki"));
    let service_ranges = rkube_server::services::ServiceRanges::parse(
        &args.service_cluster_ip_range,
        args.service_node_port_range,
    )?;
    pki_options.service_ip = IpAddr::V4(service_ranges.first());
    let service_network = service_ranges.network;
    // The kube-dns Service's address: the kubelet's first `--cluster-dns`, else the 10th of
    // the service CIDR; none when it is not an address of the CIDR (pods may be pointed at a
    // DNS server elsewhere).
    let cluster_dns = match args.node.kubelet_cluster_dns.first() {
        None => Some(default_cluster_dns(service_network)),
        Some(IpAddr::V4(ip)) => Some(*ip),
        Some(IpAddr::V6(_)) => None,
    }
    .filter(|ip| service_network.contains(ip) && *ip != service_ranges.first());
    if cluster_dns.is_none() {
        eprintln!(
            "rkube: no kube-dns Service: the cluster DNS address is not one of the service CIDR {service_network}"
        );
    }
    pki_options.extra_sans = args.tls_san.clone();
    let endpoint_address = endpoint_address(args.advertise_address, args.bind_address);
    for address in [args.advertise_address, endpoint_address] {
        if !address.is_loopback() && !pki_options.extra_sans.contains(&address.to_string()) {
            pki_options.extra_sans.push(address.to_string());
        }
    }
    if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let host = host.trim().to_ascii_lowercase();
        if !host.is_empty() && rkube_certs::San::parse(&host).is_ok() {
            pki_options.extra_sans.push(host);
        }
    }
    let pki = Pki::load_or_create(&pki_options)?;
    for change in pki.changes() {
        eprintln!("rkube: {change}");
    }
    // The controllers publish the cluster CA and sign legacy tokens with the API server's
    // service-account key, unless told otherwise.
    let cm = &mut args.controller_manager;
    cm.root_ca_file.get_or_insert_with(|| pki.path(rkube_certs::files::CA_CERT));
    let sa_key = args.service_accounts.service_account_signing_key_file.clone();
    cm.service_account_private_key_file
        .get_or_insert_with(|| sa_key.unwrap_or_else(|| pki.path(rkube_certs::files::SA_KEY)));

    let bind = SocketAddr::new(args.bind_address, args.secure_port);
    let advertise = SocketAddr::new(args.advertise_address, args.secure_port);
    let server = rkube_server::Server::start(rkube_server::ServerConfig {
        bind,
        grpc_bind: args.grpc_port.map(|port| SocketAddr::new(args.bind_address, port)),
        advertise_address: advertise.to_string(),
        endpoint_address,
        tls: rkube_server::TlsMaterial {
            cert_pem: pki.apiserver().cert_pem.as_bytes().to_vec(),
            key_pem: pki.apiserver().key_pem.as_bytes().to_vec(),
            client_ca_pem: pki.ca_cert_pem().as_bytes().to_vec(),
        },
        store,
        service_ranges,
        cluster_dns,
        front_proxy: Some(args.authentication.proxy_client(&pki)?),
        requestheader: Some(args.authentication.requestheader(&pki)?),
        admission,
        kubelet_client: Some(rkube_server::KubeletClientConfig {
            // As k3s: node names need not resolve, so the InternalIP comes first.
            preferred_address_types: ["InternalIP", "ExternalIP", "Hostname"]
                .map(String::from)
                .to_vec(),
            ..rkube_server::KubeletClientConfig::new(
                pki.kubelet_client().cert_pem.as_bytes().to_vec(),
                pki.kubelet_client().key_pem.as_bytes().to_vec(),
            )
        }),
        service_account_tokens: args.service_accounts.options(&pki)?,
        limits: args.serving.limits(),
        component_ports: rkube_server::component_status::ComponentPorts {
            scheduler: args.scheduler_secure_port,
            controller_manager: args.controller_manager_secure_port,
        },
        authorization_modes,
        authorization_webhook,
        authentication,
        auditor,
        audit_webhook,
    })
    .await?;

    let port = server.local_addr.port();
    let url = match advertise.ip() {
        IpAddr::V6(ip) => format!("https://[{ip}]:{port}"),
        IpAddr::V4(ip) => format!("https://{ip}:{port}"),
    };
    let kubeconfig = args.data_dir.join("admin.kubeconfig");
    rkube_certs::write_kubeconfig(&kubeconfig, &pki.admin_kubeconfig(&url))?;
    let kubeconfig = std::fs::canonicalize(&kubeconfig).unwrap_or(kubeconfig);
    // The controllers, the scheduler, the kubelet, the proxy and the DNS reach the API server
    // like any client: over HTTPS, each as its upstream counterpart's user; none is
    // system:masters.
    let component =
        |file: &str, user: &str| identities::write(&pki, &args.data_dir, &url, file, user, &[]);
    let scheduler_client =
        client_from(&component("scheduler.kubeconfig", identities::SCHEDULER)?).await?;
    let proxy_client = client_from(&component("proxy.kubeconfig", identities::PROXY)?).await?;
    let dns_client = client_from(&component("dns.kubeconfig", identities::DNS)?).await?;
    let disabled = |c: &str| args.disable.iter().any(|d| d == c);
    // Set on shutdown: the controller manager gives its Lease up, for another server's.
    let (stop_controllers, controllers_stopped) = tokio::sync::watch::channel(false);
    let controllers = match disabled("controllers") {
        true => None,
        false => {
            let identity = server_controller_manager_identity(&args.data_dir)?;
            let stop = controllers_stopped.clone();
            let kubeconfig =
                component("controller-manager.kubeconfig", identities::CONTROLLER_MANAGER)?;
            let token_dir = args.data_dir.join("controller-tokens");
            // The cluster CA signs CertificateSigningRequests unless told otherwise.
            let cm = &mut args.controller_manager;
            if cm.cluster_signing_cert_file.is_none() && cm.cluster_signing_key_file.is_none() {
                cm.cluster_signing_cert_file = Some(pki.path(rkube_certs::files::CA_CERT));
                cm.cluster_signing_key_file = Some(pki.path(rkube_certs::files::CA_KEY));
            }
            let clients = args.controller_manager.clients(&kubeconfig, true, token_dir).await?;
            Some(args.controller_manager.spawn(clients, identity, stop, true)?)
        }
    };
    let scheduler_config = scheduler_config(args.scheduler_config.as_deref())?;
    let _scheduler = (!disabled("scheduler")).then(|| {
        // A stable identity: after a restart this server takes its own Lease back at once.
        let identity = format!("rkube-server-{port}");
        let client = scheduler_client.clone();
        tokio::spawn(async move {
            if let Err(e) =
                rkube_scheduler::run_with_config(client, scheduler_config, identity).await
            {
                eprintln!("rkube: scheduler stopped: {e}");
            }
        })
    });
    // Each component answers `/healthz` for itself, as upstream's do on their own ports. A
    // port that is taken (another rkube server on this machine) costs only that.
    let mut _health = Vec::new();
    for (check, port, component) in [
        (
            controllers.as_ref().map(|t| healthz::task_check(t, "controller-manager")),
            args.controller_manager_secure_port,
            "controller-manager",
        ),
        (
            _scheduler.as_ref().map(|t| healthz::task_check(t, "scheduler")),
            args.scheduler_secure_port,
            "scheduler",
        ),
    ] {
        let Some(check) = check.filter(|_| port != 0) else { continue };
        match healthz::serve(port, component, check).await {
            Ok(served) => _health.push(served),
            Err(e) => eprintln!("rkube: no /healthz for the {component}: {e:#}"),
        }
    }
    eprintln!(
        "rkube: API server ready at {url} (started in {:.1}s)",
        started.elapsed().as_secs_f64()
    );
    let _kubelet = if disabled("kubelet") {
        None
    } else {
        let mut node = args.node.clone();
        node.client_ca_file.get_or_insert_with(|| pki.path(rkube_certs::files::CA_CERT));
        if node.kubelet_cluster_dns.is_empty() {
            // As k3s: the 10th address of the service CIDR, where the kube-dns Service is.
            let range: Option<rkube_controllers::node_ipam::Ipv4Net> =
                args.service_cluster_ip_range.parse().ok();
            node.kubelet_cluster_dns.extend(
                range.map(|r| IpAddr::from(std::net::Ipv4Addr::from(u32::from(r.network()) + 10))),
            );
        }
        let root = node.root_dir.clone().unwrap_or_else(|| args.data_dir.join("kubelet"));
        let default_ip = args.advertise_address;
        let kubelet_client =
            match identities::kubelet(&pki, &args.data_dir, &url, &node_name(&node)?) {
                Ok(path) => client_from(&path).await,
                Err(e) => Err(e),
            };
        let started = match kubelet_client {
            Ok(kubelet_client) => start_kubelet(kubelet_client, node, root, default_ip).await,
            Err(e) => Err(e),
        };
        match started {
            Ok(kubelet) => Some(kubelet),
            Err(e) => {
                eprintln!("rkube: no local node: {e:#}");
                eprintln!("rkube: pods stay Pending until a node joins (start a Docker engine, or run `rkube kubelet` elsewhere)");
                None
            }
        }
    };
    // As k3s: the default StorageClass `local-path`, and the node's provisioner of it.
    let _local_path = match (&_kubelet, disabled("local-storage")) {
        (Some(_), false) => {
            let path = args
                .default_local_storage_path
                .clone()
                .unwrap_or_else(|| args.data_dir.join("storage"));
            let path = std::path::absolute(&path).unwrap_or(path);
            let admin = client_from(&kubeconfig).await?;
            if let Err(e) = rkube_kubelet::local_path::ensure_storage_class(admin).await {
                eprintln!("rkube: no local-path StorageClass: {e}");
            }
            let client = client_from(&component(
                "local-path-provisioner.kubeconfig",
                identities::LOCAL_PATH,
            )?)
            .await?;
            let config =
                rkube_kubelet::local_path::Config { node_name: node_name(&args.node)?, path };
            Some(rkube_kubelet::local_path::start(client, config))
        }
        _ => None,
    };
    let _proxy = match (&_kubelet, disabled("proxy")) {
        (Some(_), false) => {
            let config = proxy_config(
                node_name(&args.node)?,
                &args.proxy,
                Some(args.controller_manager.cluster_cidr),
                args.service_cluster_ip_range.parse().ok(),
            )?;
            match rkube_proxy::proxier::start(proxy_client.clone(), config).await {
                Ok(proxy) => Some(proxy),
                Err(e) => {
                    eprintln!("rkube: no service proxy on the local node: {e}");
                    None
                }
            }
        }
        _ => None,
    };
    // The node's cluster DNS runs with its proxy, whose rules bring pods' queries to the
    // `kube-dns` Service here.
    let _dns = match (&_kubelet, disabled("proxy")) {
        (Some(_), false) => {
            let config = dns_config(
                node_name(&args.node)?,
                cluster_dns,
                &args.node.kubelet_cluster_domain,
                &args.node.resolv_conf,
                &args.dns,
            );
            match rkube_proxy::dns::start(dns_client.clone(), config).await {
                Ok(dns) => Some(dns),
                Err(e) => {
                    eprintln!("rkube: no cluster DNS on the local node: {e}");
                    None
                }
            }
        }
        _ => None,
    };
    println!("export KUBECONFIG={}", kubeconfig.display());

    shutdown_signal().await;
    eprintln!("rkube: shutting down");
    stop_controllers.send_replace(true);
    if let Some(task) = controllers {
        // The Lease is given up through the API server, which is still serving.
        let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
    }
    server.stop();
    Ok(())
}

async fn config_from(kubeconfig: &std::path::Path) -> anyhow::Result<kube::Config> {
    let raw = kube::config::Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("cannot read {}", kubeconfig.display()))?;
    Ok(kube::Config::from_custom_kubeconfig(raw, &Default::default()).await?)
}

async fn client_from(kubeconfig: &std::path::Path) -> anyhow::Result<kube::Client> {
    Ok(kube::Client::try_from(config_from(kubeconfig).await?)?)
}

/// `rkube scheduler`: the scheduler alone, against any API server.
async fn scheduler(args: SchedulerArgs) -> anyhow::Result<()> {
    let config = scheduler_config(args.config.as_deref())?;
    let client = client_from(&args.kubeconfig).await?;
    eprintln!("rkube: scheduler running against the API server in {}", args.kubeconfig.display());
    let identity = rkube_runtime::leader_election::default_identity();
    let task = tokio::spawn(rkube_scheduler::run_with_config(client, config, identity));
    let _health = match args.secure_port {
        0 => None,
        port => {
            let check = healthz::task_check(&task, "scheduler");
            Some(healthz::serve(port, "scheduler", check).await?)
        }
    };
    tokio::select! {
        result = task => result??,
        _ = shutdown_signal() => eprintln!("rkube: shutting down"),
    }
    Ok(())
}

/// `rkube controller-manager`: the controllers alone, against any API server, leader-elected
/// as kube-controller-manager is: of several, one acts; when it stops, another takes over.
async fn controller_manager(args: ControllerManagerCommandArgs) -> anyhow::Result<()> {
    let token_dir =
        std::env::temp_dir().join(format!("rkube-controller-tokens-{}", std::process::id()));
    let clients = args.controller_manager.clients(&args.kubeconfig, false, token_dir).await?;
    eprintln!(
        "rkube: controller manager running against the API server in {}",
        args.kubeconfig.display()
    );
    let identity = rkube_runtime::leader_election::default_identity();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut task = args.controller_manager.spawn(clients, identity, stopped, false)?;
    let _health = match args.secure_port {
        0 => None,
        port => {
            let check = healthz::task_check(&task, "controller-manager");
            Some(healthz::serve(port, "controller-manager", check).await?)
        }
    };
    tokio::select! {
        result = &mut task => result??,
        _ = shutdown_signal() => {
            eprintln!("rkube: shutting down");
            // Give the Lease up so that another controller manager takes over at once.
            stop.send_replace(true);
            if let Ok(result) = tokio::time::timeout(Duration::from_secs(5), task).await {
                result??;
            }
        }
    }
    Ok(())
}

/// `rkube kubelet`: a node against any API server.
async fn kubelet(args: KubeletArgs) -> anyhow::Result<()> {
    let client = client_from(&args.kubeconfig).await?;
    let root =
        args.node.root_dir.clone().unwrap_or_else(|| PathBuf::from("/var/lib/rkube/kubelet"));
    let node_ip = args.node.node_ip.unwrap_or(IpAddr::from([127, 0, 0, 1]));
    if args.runtime == "simulated" {
        let _nodes = start_simulated_nodes(client, &args, root, node_ip).await?;
        shutdown_signal().await;
        eprintln!("rkube: shutting down");
        return Ok(());
    }
    anyhow::ensure!(args.nodes == 1, "--nodes needs --runtime simulated");
    let _kubelet = start_kubelet(client, args.node, root, node_ip).await?;
    shutdown_signal().await;
    eprintln!("rkube: shutting down");
    Ok(())
}

/// The node's name: `--node-name`, or the host name.
fn node_name(node: &NodeArgs) -> anyhow::Result<String> {
    match &node.node_name {
        Some(name) => Ok(name.clone()),
        None => host_name().context("cannot read the host name: pass --node-name"),
    }
}

/// The API server's address in the `kubernetes` Service's endpoints, where pods reach it:
/// `--advertise-address` when it is not loopback, else the address it is bound to, else
/// (bound to every address) the host's primary one. Bound to loopback only, pods cannot
/// reach it: the endpoint is then 127.0.0.1, as before, and the log says so.
fn endpoint_address(advertise: IpAddr, bind: IpAddr) -> IpAddr {
    if !advertise.is_loopback() {
        return advertise;
    }
    if bind.is_unspecified() {
        if let Some(primary) = host_address::primary_ipv4() {
            return IpAddr::V4(primary);
        }
        eprintln!("rkube: no default route: the kubernetes Service's endpoint is 127.0.0.1, which pods cannot reach (set --advertise-address)");
    } else if !bind.is_loopback() {
        return bind;
    } else {
        eprintln!("rkube: bound to {bind} only: pods cannot reach the API server through the kubernetes Service");
    }
    advertise
}

fn host_name() -> std::io::Result<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_ascii_lowercase())
}

fn proxy_config(
    node_name: String,
    args: &ProxyArgs,
    cluster_cidr: Option<rkube_controllers::node_ipam::Ipv4Net>,
    service_cidr: Option<rkube_controllers::node_ipam::Ipv4Net>,
) -> anyhow::Result<rkube_proxy::proxier::Config> {
    Ok(rkube_proxy::proxier::Config {
        node_name,
        rules: rkube_proxy::rules::RuleConfig::new(&args.iptables_chain_prefix, cluster_cidr)?,
        service_cidr,
        min_sync_period: args.iptables_min_sync_period,
        sync_period: args.iptables_sync_period,
        metrics_bind_address: args.metrics_bind_address.0,
    })
}

/// Removes everything a proxy with chain prefix `prefix` made (its rules, chains, and
/// service device with its route); what it removed, one line each.
fn proxy_cleanup(prefix: &str) -> anyhow::Result<Vec<String>> {
    let rules = rkube_proxy::rules::RuleConfig::new(prefix, None)?;
    let mut removed = rkube_proxy::iptables::cleanup(&rules)?;
    let device = rkube_proxy::device::device_name(&rules.prefix);
    if rkube_proxy::device::remove(&device)? {
        removed.push(format!("device: {device} (and its route)"));
    }
    Ok(removed)
}

/// `rkube proxy`: the service proxy alone, or (`--cleanup`) the removal of what it made.
async fn proxy(args: ProxyCommandArgs) -> anyhow::Result<()> {
    let node = match args.hostname_override.clone() {
        Some(name) => name,
        None => host_name().context("cannot read the host name: pass --hostname-override")?,
    };
    let config =
        proxy_config(node, &args.proxy, args.cluster_cidr, Some(args.service_cluster_ip_range))?;
    if args.cleanup {
        let prefix = args.proxy.iptables_chain_prefix.clone();
        let removed = tokio::task::spawn_blocking(move || proxy_cleanup(&prefix)).await??;
        for line in &removed {
            println!("removed {line}");
        }
        if removed.is_empty() {
            println!("nothing to remove");
        }
        return Ok(());
    }
    let kubeconfig = args.kubeconfig.expect("clap requires --kubeconfig without --cleanup");
    let client = client_from(&kubeconfig).await?;
    let cluster_dns =
        args.dns.cluster_dns.unwrap_or_else(|| default_cluster_dns(args.service_cluster_ip_range));
    let dns = dns_config(
        config.node_name.clone(),
        Some(cluster_dns),
        &args.dns.cluster_domain,
        &args.dns.resolv_conf,
        &args.dns.port,
    );
    let _dns = rkube_proxy::dns::start(client.clone(), dns).await?;
    let _proxy = rkube_proxy::proxier::start(client, config).await?;
    eprintln!("rkube: proxy running against the API server in {}", kubeconfig.display());
    shutdown_signal().await;
    eprintln!("rkube: shutting down");
    Ok(())
}

/// Starts the kubelet on the local Docker engine, or says why it cannot.
async fn start_kubelet(
    client: kube::Client,
    node: NodeArgs,
    root_dir: PathBuf,
    default_ip: IpAddr,
) -> anyhow::Result<rkube_kubelet::Kubelet> {
    let docker = rkube_kubelet::runtime::docker::DockerRuntime::connect().await?;
    eprintln!("rkube: preparing the pause image");
    docker.ensure_pause_image().await?;
    let name = node_name(&node)?;
    let mut config = rkube_kubelet::Config::new(
        &name,
        node.node_ip.unwrap_or(default_ip),
        node.kubelet_port,
        root_dir,
    );
    config.dns = node.dns();
    config.pod_cidr = node.pod_cidr;
    config.eviction = node.eviction_hard;
    config.pod_manifest_path = node.pod_manifest_path;
    config.file_check_frequency = node.file_check_frequency;
    // Without one the kubelet serves no API, and says so.
    config.client_ca_pem = match &node.client_ca_file {
        Some(path) => Some(
            std::fs::read(path)
                .with_context(|| format!("cannot read the client CA file {}", path.display()))?,
        ),
        None => None,
    };
    let kubelet = rkube_kubelet::start(client, config, Arc::new(docker)).await?;
    eprintln!("rkube: node {name} is up (Docker)");
    Ok(kubelet)
}

/// `rkube kubelet --runtime simulated --nodes N`: N kubelets in this process sharing one
/// simulated runtime, each a full node to the API server (registration, lease, status, pods
/// watched and run on paper). They serve no kubelet API.
async fn start_simulated_nodes(
    client: kube::Client,
    args: &KubeletArgs,
    root_dir: PathBuf,
    node_ip: IpAddr,
) -> anyhow::Result<Vec<rkube_kubelet::Kubelet>> {
    anyhow::ensure!(args.nodes >= 1, "--nodes must be at least 1");
    anyhow::ensure!(
        args.node.pod_cidr.is_none() || args.nodes == 1,
        "--pod-cidr names one node's range: leave it out with --nodes, the node IPAM controller assigns each its own"
    );
    let prefix = args.node.node_name.clone().unwrap_or_else(|| "sim".into());
    let runtime = Arc::new(rkube_kubelet::runtime::sim::SimulatedRuntime::new());
    eprintln!("rkube: starting {} simulated node(s) named {prefix}-NNNN", args.nodes);
    let starts = (0..args.nodes).map(|i| {
        let name = format!("{prefix}-{i:04}");
        let mut config = rkube_kubelet::Config::new(
            &name,
            node_ip,
            args.node.kubelet_port,
            root_dir.join(&name),
        );
        config.pod_cidr = args.node.pod_cidr.clone();
        config.eviction = args.node.eviction_hard.clone();
        config.dns = args.node.dns();
        let runtime: Arc<dyn rkube_kubelet::runtime::Runtime> = runtime.clone();
        rkube_kubelet::start(client.clone(), config, runtime)
    });
    let kubelets = futures::future::try_join_all(starts).await?;
    eprintln!("rkube: {} simulated node(s) are up", kubelets.len());
    Ok(kubelets)
}

/// The scheduler's configuration: the file, or the default profile.
fn scheduler_config(
    path: Option<&std::path::Path>,
) -> anyhow::Result<rkube_scheduler::config::Config> {
    Ok(match path {
        Some(path) => rkube_scheduler::config::load(path)?,
        None => rkube_scheduler::config::Config {
            profiles: vec![rkube_scheduler::plugins::default_profile()],
            leader_election: rkube_scheduler::config::default_leader_election(),
        },
    })
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// kube-apiserver's authentication flags.
#[derive(clap::Args)]
struct AuthenticationArgs {
    /// Requests without credentials are served as `system:anonymous`; false: they get 401.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    anonymous_auth: bool,
    /// A CSV file of static bearer tokens: `token,user,uid,"group1,group2"` per line.
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// Accept bootstrap tokens (`<id>.<secret>`, kube-system Secrets of type
    /// `bootstrap.kubernetes.io/token`). On by default here, as k3s (kube-apiserver: off).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    enable_bootstrap_token_auth: bool,
    /// A kubeconfig naming a webhook that authenticates bearer tokens no other authenticator
    /// accepts (a TokenReview POSTed to its server).
    #[arg(long)]
    authentication_token_webhook_config_file: Option<PathBuf>,
    /// How long the webhook's answers are remembered.
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    authentication_token_webhook_cache_ttl: Duration,
    /// The TokenReview version sent to the webhook: `v1beta1` or `v1`.
    #[arg(long, default_value = "v1beta1")]
    authentication_token_webhook_version: String,
    /// The `jwks_uri` of `/.well-known/openid-configuration` (default:
    /// `https://<advertise address>:<port>/openid/v1/jwks`).
    #[arg(long)]
    service_account_jwks_uri: Option<String>,
    /// The CA of front proxies' client certificates, whose requests are the user their
    /// headers name (default: the PKI's front-proxy CA).
    #[arg(long)]
    requestheader_client_ca_file: Option<PathBuf>,
    /// Common names a front proxy's certificate may have (comma-separated; empty: any).
    #[arg(long, value_delimiter = ',', default_value = rkube_certs::pki::FRONT_PROXY_CLIENT_USER)]
    requestheader_allowed_names: Vec<String>,
    /// The headers naming the user (the first non-empty one counts).
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-User")]
    requestheader_username_headers: Vec<String>,
    /// The headers naming the user's groups.
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-Group")]
    requestheader_group_headers: Vec<String>,
    /// The prefixes of headers carrying the user's extra (`<prefix><key>: <value>`).
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-Extra-")]
    requestheader_extra_headers_prefix: Vec<String>,
    /// The client certificate presented to aggregated API servers (default: the PKI's
    /// front-proxy client certificate).
    #[arg(long, requires = "proxy_client_key_file")]
    proxy_client_cert_file: Option<PathBuf>,
    /// Its key.
    #[arg(long, requires = "proxy_client_cert_file")]
    proxy_client_key_file: Option<PathBuf>,
}

impl AuthenticationArgs {
    /// `--requestheader-*`, defaults from `pki`.
    fn requestheader(
        &self,
        pki: &Pki,
    ) -> anyhow::Result<rkube_server::authn::requestheader::RequestHeaderOptions> {
        let ca_pem = match &self.requestheader_client_ca_file {
            Some(path) => std::fs::read(path)
                .with_context(|| format!("cannot read --requestheader-client-ca-file {path:?}"))?,
            None => pki.front_proxy_ca_cert_pem().as_bytes().to_vec(),
        };
        let list = |v: &[String]| -> Vec<String> {
            v.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
        };
        Ok(rkube_server::authn::requestheader::RequestHeaderOptions {
            ca_pem,
            allowed_names: list(&self.requestheader_allowed_names),
            username_headers: list(&self.requestheader_username_headers),
            group_headers: list(&self.requestheader_group_headers),
            extra_headers_prefix: list(&self.requestheader_extra_headers_prefix),
        })
    }

    /// `--proxy-client-cert-file`/`--proxy-client-key-file`, default from `pki`.
    fn proxy_client(&self, pki: &Pki) -> anyhow::Result<rkube_server::aggregator::FrontProxy> {
        let (cert_pem, key_pem) = match (&self.proxy_client_cert_file, &self.proxy_client_key_file)
        {
            (Some(cert), Some(key)) => (
                std::fs::read(cert)
                    .with_context(|| format!("cannot read --proxy-client-cert-file {cert:?}"))?,
                std::fs::read(key)
                    .with_context(|| format!("cannot read --proxy-client-key-file {key:?}"))?,
            ),
            _ => (
                pki.front_proxy_client().cert_pem.as_bytes().to_vec(),
                pki.front_proxy_client().key_pem.as_bytes().to_vec(),
            ),
        };
        Ok(rkube_server::aggregator::FrontProxy {
            client: rkube_server::service_client::ClientCert { cert_pem, key_pem },
        })
    }
}

impl AuthenticationArgs {
    fn options(&self) -> anyhow::Result<rkube_server::authn::AuthenticationOptions> {
        let token_file = match &self.token_auth_file {
            Some(path) => {
                let text = std::fs::read_to_string(path).with_context(|| {
                    format!("--token-auth-file: cannot read {}", path.display())
                })?;
                let file = rkube_server::authn::token_file::TokenFile::parse(&text)
                    .with_context(|| format!("--token-auth-file {}", path.display()))?;
                Some(file)
            }
            None => None,
        };
        let token_webhook = match &self.authentication_token_webhook_config_file {
            Some(path) => {
                let remote = rkube_server::kubeconfig_webhook::KubeconfigWebhook::from_file(path)
                    .map_err(|e| {
                    anyhow::anyhow!("--authentication-token-webhook-config-file: {e}")
                })?;
                let webhook = rkube_server::authn::token_webhook::TokenWebhook::new(
                    remote,
                    &self.authentication_token_webhook_version,
                    self.authentication_token_webhook_cache_ttl,
                )
                .map_err(|e| anyhow::anyhow!("--authentication-token-webhook-version: {e}"))?;
                Some(std::sync::Arc::new(webhook))
            }
            None => None,
        };
        Ok(rkube_server::authn::AuthenticationOptions {
            token_webhook,
            anonymous: self.anonymous_auth,
            token_file,
            bootstrap_tokens: self.enable_bootstrap_token_auth,
            jwks_uri: self.service_account_jwks_uri.clone(),
        })
    }
}

/// The `Webhook` authorization mode's authorizer, from its flags (upstream's checks: the
/// mode and the configuration file go together).
fn authorization_webhook(
    args: &ServerArgs,
    modes: &[rkube_server::authz::Mode],
) -> anyhow::Result<Option<std::sync::Arc<rkube_server::authz::webhook::WebhookAuthorizer>>> {
    use rkube_server::authz::webhook::{WebhookAuthorizer, WebhookOptions};
    let wanted = modes.contains(&rkube_server::authz::Mode::Webhook);
    let Some(path) = &args.authorization_webhook_config_file else {
        if wanted {
            anyhow::bail!("authorization-mode Webhook's authorization config file not passed");
        }
        return Ok(None);
    };
    if !wanted {
        anyhow::bail!("cannot specify --authorization-webhook-config-file without mode Webhook");
    }
    let remote = rkube_server::kubeconfig_webhook::KubeconfigWebhook::from_file(path)
        .map_err(|e| anyhow::anyhow!("--authorization-webhook-config-file: {e}"))?;
    let webhook = WebhookAuthorizer::new(WebhookOptions {
        remote,
        version: args.authorization_webhook_version.clone(),
        authorized_ttl: args.authorization_webhook_cache_authorized_ttl,
        unauthorized_ttl: args.authorization_webhook_cache_unauthorized_ttl,
    })
    .map_err(|e| anyhow::anyhow!("--authorization-webhook-version: {e}"))?;
    Ok(Some(std::sync::Arc::new(webhook)))
}

/// kube-apiserver's audit flags (the log and webhook backends).
#[derive(clap::Args)]
struct AuditArgs {
    /// The audit policy (an `audit.k8s.io/v1` Policy, YAML or JSON): which requests are
    /// recorded, at which level. Without it nothing is recorded.
    #[arg(long)]
    audit_policy_file: Option<PathBuf>,
    /// Where audit events are written (`-`: standard output).
    #[arg(long)]
    audit_log_path: Option<PathBuf>,
    /// Days to keep rotated audit logs (0: no limit).
    #[arg(long, default_value_t = 0)]
    audit_log_maxage: u64,
    /// Rotated audit logs to keep (0: all).
    #[arg(long, default_value_t = 0)]
    audit_log_maxbackup: usize,
    /// Megabytes an audit log may reach before it is rotated (0: 100).
    #[arg(long, default_value_t = 0)]
    audit_log_maxsize: u64,
    /// `json` (one `audit.k8s.io/v1` Event a line) or `legacy` (a text line).
    #[arg(long, default_value = "json")]
    audit_log_format: String,
    /// `blocking` (a request waits for its events to be written), `blocking-strict` (and
    /// fails when its first cannot be) or `batch` (a writer thread; dropped when its buffer is
    /// full).
    #[arg(long, default_value = "blocking")]
    audit_log_mode: String,
    /// Events the log's batch mode buffers before it drops them.
    #[arg(long, default_value_t = 10_000)]
    audit_log_batch_buffer_size: usize,
    /// A kubeconfig naming the receiver audit events are POSTed to (as `EventList`s).
    #[arg(long)]
    audit_webhook_config_file: Option<PathBuf>,
    /// The webhook's mode: only `batch` (kube-apiserver's default) is supported.
    #[arg(long, default_value = "batch")]
    audit_webhook_mode: String,
    /// Events the webhook buffers before it drops them.
    #[arg(long, default_value_t = 10_000)]
    audit_webhook_batch_buffer_size: usize,
    /// The most events in one POST.
    #[arg(long, default_value_t = 400)]
    audit_webhook_batch_max_size: usize,
    /// How long a batch waits for more events after its first.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    audit_webhook_batch_max_wait: Duration,
    /// The wait before a failed POST is retried (then 1.5 times longer each time, 5 tries).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    audit_webhook_initial_backoff: Duration,
    /// The API version of the events sent: only `audit.k8s.io/v1`.
    #[arg(long, default_value = "audit.k8s.io/v1")]
    audit_webhook_version: String,
}

impl AuditArgs {
    /// The auditor the flags describe and the webhook backend's options (started with the
    /// server); an error names the flag and why.
    fn auditor(
        &self,
    ) -> anyhow::Result<(
        rkube_server::audit::Auditor,
        Option<rkube_server::audit::webhook::WebhookOptions>,
    )> {
        use rkube_server::audit::log_file::{LogBackend, LogOptions};
        use rkube_server::audit::webhook::WebhookOptions;
        use rkube_server::audit::Auditor;
        use rkube_server::kubeconfig_webhook::KubeconfigWebhook;
        let format = self
            .audit_log_format
            .parse()
            .map_err(|e: String| anyhow::anyhow!("--audit-log-format: {e}"))?;
        let mode = self
            .audit_log_mode
            .parse()
            .map_err(|e: String| anyhow::anyhow!("--audit-log-mode: {e}"))?;
        if self.audit_webhook_mode != "batch" {
            anyhow::bail!(
                "--audit-webhook-mode: {} is not supported by rkube: only batch (the default) is",
                self.audit_webhook_mode
            );
        }
        if self.audit_webhook_version != "audit.k8s.io/v1" {
            anyhow::bail!(
                "--audit-webhook-version: invalid audit webhook version {}, only audit.k8s.io/v1 is supported",
                self.audit_webhook_version
            );
        }
        let backends = self.audit_log_path.is_some() || self.audit_webhook_config_file.is_some();
        let Some(policy_file) = &self.audit_policy_file else {
            if backends {
                eprintln!("rkube: no audit policy file provided, no events will be recorded");
            }
            return Ok((Auditor::disabled(), None));
        };
        let text = std::fs::read(policy_file).with_context(|| {
            format!("--audit-policy-file: cannot read {}", policy_file.display())
        })?;
        let policy = rkube_server::audit::Policy::parse(&text).map_err(|e| {
            anyhow::anyhow!("--audit-policy-file: {e}: from file {}", policy_file.display())
        })?;
        if !backends {
            eprintln!("rkube: no audit backend (--audit-log-path, --audit-webhook-config-file): no events will be recorded");
        }
        let mut auditor = Auditor::new(policy, Vec::new());
        if let Some(path) = &self.audit_log_path {
            let options = LogOptions {
                max_age_days: self.audit_log_maxage,
                max_backups: self.audit_log_maxbackup,
                max_size_megabytes: self.audit_log_maxsize,
                format,
                mode,
                batch_buffer_size: self.audit_log_batch_buffer_size,
                ..LogOptions::new(path.clone())
            };
            let backend =
                LogBackend::open(&options).map_err(|e| anyhow::anyhow!("--audit-log-path: {e}"))?;
            auditor.add_sink(std::sync::Arc::new(backend));
        }
        let webhook = match &self.audit_webhook_config_file {
            Some(path) => {
                let receiver = KubeconfigWebhook::from_file(path)
                    .map_err(|e| anyhow::anyhow!("--audit-webhook-config-file: {e}"))?;
                Some(WebhookOptions {
                    buffer_size: self.audit_webhook_batch_buffer_size,
                    max_batch_size: self.audit_webhook_batch_max_size.max(1),
                    max_wait: self.audit_webhook_batch_max_wait,
                    initial_backoff: self.audit_webhook_initial_backoff,
                    ..WebhookOptions::new(receiver)
                })
            }
            None => None,
        };
        Ok((auditor, webhook))
    }
}

/// kube-apiserver's service-account token flags.
#[derive(clap::Args)]
struct ServiceAccountArgs {
    /// The issuer (`iss`) of service-account tokens; repeat it to accept tokens of earlier
    /// issuers too (the first one signs new tokens).
    #[arg(long, default_value = rkube_server::authn::DEFAULT_ISSUER)]
    service_account_issuer: Vec<String>,
    /// The private key (PEM) that signs service-account tokens (default: the PKI's sa.key).
    #[arg(long)]
    service_account_signing_key_file: Option<PathBuf>,
    /// PEM files of the keys that verify service-account tokens (public or private keys,
    /// certificates; repeatable). Default: the signing key's, else the PKI's sa.pub.
    #[arg(long)]
    service_account_key_file: Vec<PathBuf>,
    /// The audiences of this API (comma-separated): a token must be for one of them.
    /// Default: the issuers.
    #[arg(long, value_delimiter = ',')]
    api_audiences: Vec<String>,
    /// The longest token the TokenRequest API gives (0: no limit); longer requests are
    /// shortened, with a warning.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    service_account_max_token_expiration: Duration,
    /// Give pod-bound tokens of the admission plugin's 3607 s a year instead, reporting them
    /// as stale after the 3607 s (upstream's safe rollout of bound tokens).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    service_account_extend_token_expiration: bool,
}

impl ServiceAccountArgs {
    fn options(&self, pki: &Pki) -> anyhow::Result<rkube_server::authn::TokenOptions> {
        let read = |path: &std::path::Path| {
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
        };
        let (signing_key, default_keys) = match &self.service_account_signing_key_file {
            Some(path) => (read(path)?, Vec::new()),
            None => (
                pki.sa_private_key_pem().as_bytes().to_vec(),
                vec![pki.sa_public_key_pem().as_bytes().to_vec()],
            ),
        };
        let mut keys = self
            .service_account_key_file
            .iter()
            .map(|p| read(p))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if keys.is_empty() {
            keys = default_keys;
        }
        let mut options = rkube_server::authn::TokenOptions::new(signing_key, keys);
        options.issuers = self.service_account_issuer.clone();
        options.api_audiences = self.api_audiences.clone();
        options.max_expiration_seconds = self.service_account_max_token_expiration.as_secs() as i64;
        options.extend_expiration = self.service_account_extend_token_expiration;
        Ok(options)
    }
}
