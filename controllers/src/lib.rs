//! The rkube controller manager: one module per controller, each over rkube-runtime (and
//! kube-runtime), reaching the API server only through its public API (the `kube` client),
//! never through the store, exactly as kube-controller-manager uses client-go.
//!
//! Start at [`run_leader_elected`]: it starts every enabled controller on one client with one
//! [`Config`] (kube-controller-manager's flags), while holding the controller manager's Lease
//! (with `leaderElect: false`, at once). The controllers, by upstream's names:
//!
//! - `garbage-collector-controller` ([`garbage_collector`]): deletes objects whose owners
//!   are gone, and carries out the `Orphan` and `Foreground` propagation policies of deletes.
//! - `namespace-controller` ([`namespace`]): empties a namespace being deleted, then
//!   finalizes it.
//! - `node-ipam-controller` ([`node_ipam`]): gives every Node a `spec.podCIDR` from the
//!   cluster CIDR (IPv4).
//! - `node-lifecycle-controller` ([`node_lifecycle`]): watches node heartbeats (Leases and the
//!   Ready condition), sets conditions to Unknown when they stop, and keeps the
//!   `node.kubernetes.io/*` taints in line with the conditions.
//! - `taint-eviction-controller` ([`taint_eviction`]): deletes pods from nodes with NoExecute
//!   taints they do not tolerate.
//! - `replicaset-controller` and `replicationcontroller-controller` ([`replica_set`], one
//!   mechanism for both kinds): keep the number of pods a ReplicaSet or ReplicationController
//!   asks for, and report their readiness in its status.
//! - `deployment-controller` ([`deployment`]): rolls a Deployment out through ReplicaSets
//!   (rolling update or recreate), keeps their revisions and history, reports progress.
//! - `job-controller` ([`job`]): runs a Job's pods to completion, within its parallelism,
//!   back-off limit, deadline and failure and success policies.
//! - `cronjob-controller` ([`cron_job`]): creates Jobs on a CronJob's schedule.
//! - `ttl-after-finished-controller` ([`ttl_after_finished`]): deletes finished Jobs once
//!   their `ttlSecondsAfterFinished` passed.
//! - `daemonset-controller` ([`daemon_set`]): one pod per eligible node, rolled by
//!   ControllerRevisions.
//! - `statefulset-controller` ([`stateful_set`]): ordered, stably named pods with their claims,
//!   rolled by ControllerRevisions.
//! - `endpointslice-controller` ([`endpoint_slice`]): EndpointSlices of the pods each Service
//!   selects, with their readiness, ports, nodes and zones.
//! - `endpoints-controller` ([`endpoints`]): the same as core/v1 Endpoints.
//! - `endpointslice-mirroring-controller` ([`endpoint_slice_mirroring`]): EndpointSlices
//!   mirroring the hand-written Endpoints of Services without a selector.
//! - `serviceaccount-controller` ([`service_account`]): the `default` ServiceAccount in every
//!   namespace; `root-ca-certificate-publisher-controller` ([`root_ca_publisher`]): the
//!   `kube-root-ca.crt` ConfigMap in every namespace (one mechanism for both,
//!   [`namespace_objects`]).
//! - `serviceaccount-token-controller` ([`service_account_token`]): legacy tokens in
//!   `kubernetes.io/service-account-token` Secrets, deleted with their account.
//! - `clusterrole-aggregation-controller` ([`cluster_role_aggregation`]): the rules of
//!   aggregated ClusterRoles (`admin`, `edit`, `view`).
//! - `horizontal-pod-autoscaler-controller` ([`horizontal_pod_autoscaler`]): scales each
//!   HorizontalPodAutoscaler's target through its `/scale` subresource by the metrics the API
//!   server serves (upstream's algorithm: tolerance, stabilization windows, behavior
//!   policies), and reports it in the HPA's status and events.
//! - `resourcequota-controller` ([`resource_quota`]): every ResourceQuota's `status.hard`
//!   and `status.used`, recounted on changes and every `--resource-quota-sync-period`.
//! - `service-lb-controller` ([`service_lb`]): LoadBalancer Services get the Ready nodes'
//!   addresses as their ingress, as k3s's ServiceLB (the proxy serves them there).
//! - `persistentvolume-binder-controller`, `persistentvolumeclaim-protection-controller`,
//!   `persistentvolume-protection-controller` ([`volume`]): claims bound to volumes (or
//!   handed to a provisioner), volumes released and reclaimed, and the protection finalizers
//!   of claims in use and bound volumes.
//!
//! - `disruption-controller` ([`disruption`]): the status of PodDisruptionBudgets (how many
//!   of their pods are healthy and how many may be disrupted), which the `pods/eviction`
//!   handler reads.
//! - `pod-garbage-collector-controller` ([`pod_gc`]): deletes terminated pods beyond
//!   `--terminated-pod-gc-threshold`, pods of nodes that are gone, and pods being deleted
//!   that no kubelet will finish.
//!
//! - `validatingadmissionpolicy-status-controller` ([`policy_status`]): type-checks each
//!   ValidatingAdmissionPolicy's expressions against the schemas of the kinds it matches and
//!   reports what does not check in its `status.typeChecking`.
//!
//! - `csrsigning-controller`, `csrapproving-controller`, `csrcleaner-controller`
//!   ([`certificates`]): sign approved CertificateSigningRequests with the cluster CA,
//!   approve kubelets' client certificate requests, delete requests done with.
//!
//! The controllers are built on [`rkube_runtime`], rkube's client runtime: they share one
//! Node and one Pod informer, whose caches are indexed (pods by owner uid, namespace and node,
//! so a sync looks up its own pods rather than scanning every pod); events are recorded with
//! its one recorder; work queues, expectations and back-offs are its, as client-go's are
//! kube-controller-manager's. The garbage collector and the namespace controller find the
//! served resources through [`discovery`]; owner references are claimed as client-go's
//! `ControllerRefManager` does ([`controller_ref`]); API errors are read as upstream reads
//! them ([`api_errors`]); pods are created as upstream's `PodControl` does ([`pod_control`]);
//! pod changes are read the same way by the controllers that own pods ([`pod_events`]), which
//! judge pods the same way ([`pod_state`]), and status is written as upstream does
//! ([`status_write`]).
//!
//! Several controller managers may run against one cluster: only the holder of the
//! `kube-system/kube-controller-manager` Lease runs the controllers, as with
//! kube-controller-manager; another takes over when it stops.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, Service};
use kube::api::Api;
use kube::runtime::watcher;
use rkube_runtime::informer;
use rkube_runtime::leader_election::{self, InvalidLeaderElection, LeaderElection, LeaderError};
use rkube_runtime::store::{self, Indexers};
use tokio::sync::mpsc;

pub mod api_errors;
pub mod certificates;
pub mod client_builder;
pub mod cluster_role_aggregation;
pub mod controller_history;
pub mod controller_ref;
pub mod cron_job;
pub mod daemon_set;
pub mod deployment;
pub mod discovery;
pub mod disruption;
pub mod endpoint_slice;
pub mod endpoint_slice_mirroring;
pub mod endpoints;
pub mod garbage_collector;
pub mod horizontal_pod_autoscaler;
pub mod job;
pub mod namespace;
pub mod namespace_objects;
pub mod node_ipam;
pub mod node_lifecycle;
pub mod pod_control;
pub mod pod_events;
pub mod pod_gc;
pub mod pod_state;
pub mod policy_status;
pub mod replica_set;
pub mod resource_quota;
pub mod root_ca_publisher;
pub mod service_account;
pub mod service_account_token;
pub mod service_lb;
pub mod service_pods;
pub mod stateful_set;
pub mod status_write;
pub mod taint_eviction;
pub mod trigger_time;
pub mod ttl_after_finished;
pub mod volume;

pub use client_builder::ClientBuilder;

/// The controllers, by upstream's names, with the older short names `--controllers` also
/// accepts.
pub const CONTROLLERS: [(&str, &str); 32] = [
    ("clusterrole-aggregation-controller", "clusterrole-aggregation"),
    ("cronjob-controller", "cronjob"),
    ("csrapproving-controller", "csrapproving"),
    ("csrcleaner-controller", "csrcleaner"),
    ("csrsigning-controller", "csrsigning"),
    ("daemonset-controller", "daemonset"),
    ("deployment-controller", "deployment"),
    ("disruption-controller", "disruption"),
    ("endpoints-controller", "endpoint"),
    ("endpointslice-controller", "endpointslice"),
    ("endpointslice-mirroring-controller", "endpointslicemirroring"),
    ("garbage-collector-controller", "garbagecollector"),
    ("horizontal-pod-autoscaler-controller", "horizontalpodautoscaling"),
    ("job-controller", "job"),
    ("namespace-controller", "namespace"),
    ("node-ipam-controller", "nodeipam"),
    ("node-lifecycle-controller", "nodelifecycle"),
    ("pod-garbage-collector-controller", "podgc"),
    ("persistentvolume-binder-controller", "persistentvolume-binder"),
    ("persistentvolume-protection-controller", "pv-protection"),
    ("persistentvolumeclaim-protection-controller", "pvc-protection"),
    ("replicaset-controller", "replicaset"),
    ("replicationcontroller-controller", "replicationcontroller"),
    ("resourcequota-controller", "resourcequota"),
    ("root-ca-certificate-publisher-controller", "root-ca-cert-publisher"),
    ("serviceaccount-controller", "serviceaccount"),
    ("serviceaccount-token-controller", "serviceaccount-token"),
    ("service-lb-controller", "service-lb-controller"),
    ("statefulset-controller", "statefulset"),
    ("taint-eviction-controller", "taint-eviction-controller"),
    ("ttl-after-finished-controller", "ttl-after-finished"),
    ("validatingadmissionpolicy-status-controller", "validatingadmissionpolicy-status"),
];

/// Whether `name` is one of [`CONTROLLERS`], by either of its names.
pub fn is_controller(name: &str) -> bool {
    CONTROLLERS.iter().any(|(n, a)| name == *n || name == *a)
}

/// Everything the controllers are configured with.
#[derive(Debug, Clone)]
pub struct Config {
    /// `--controllers`: `*` for all, a name to enable one, `-name` to disable one.
    pub controllers: Vec<String>,
    /// `--cluster-cidr`: where nodes' pod CIDRs come from.
    pub cluster_cidr: node_ipam::Ipv4Net,
    /// `--node-cidr-mask-size`: the prefix length of each node's pod CIDR.
    pub node_cidr_mask_size: u8,
    /// The node lifecycle controller's periods, grace periods and eviction rates.
    pub node_lifecycle: node_lifecycle::Config,
    /// `--concurrent-gc-syncs`: the garbage collector's workers (of each kind).
    pub concurrent_gc_syncs: usize,
    /// `--concurrent-replicaset-syncs`: ReplicaSets synced at once.
    pub concurrent_replicaset_syncs: usize,
    /// `--concurrent-rc-syncs`: ReplicationControllers synced at once.
    pub concurrent_rc_syncs: usize,
    /// `--concurrent-deployment-syncs`: Deployments synced at once.
    pub concurrent_deployment_syncs: usize,
    /// `--concurrent-job-syncs`: Jobs synced at once.
    pub concurrent_job_syncs: usize,
    /// `--concurrent-cron-job-syncs`: CronJobs synced at once.
    pub concurrent_cron_job_syncs: usize,
    /// `--concurrent-ttl-after-finished-syncs`: finished Jobs checked at once.
    pub concurrent_ttl_after_finished_syncs: usize,
    /// `--concurrent-daemonset-syncs`: DaemonSets synced at once.
    pub concurrent_daemonset_syncs: usize,
    /// `--concurrent-statefulset-syncs`: StatefulSets synced at once.
    pub concurrent_statefulset_syncs: usize,
    /// `--concurrent-endpoint-syncs`: Services whose Endpoints are synced at once.
    pub concurrent_endpoint_syncs: usize,
    /// `--concurrent-service-endpoint-syncs` and `--max-endpoints-per-slice`: the
    /// EndpointSlice controller's.
    pub endpoint_slice: endpoint_slice::Config,
    /// `--mirroring-concurrent-service-endpoint-syncs` and
    /// `--mirroring-max-endpoints-per-subset`: the mirroring controller's.
    pub endpoint_slice_mirroring: endpoint_slice_mirroring::Config,
    /// `--concurrent-resource-quota-syncs` and `--resource-quota-sync-period`: the resource
    /// quota controller's.
    pub resource_quota: resource_quota::Config,
    /// The `--horizontal-pod-autoscaler-*` flags and `--concurrent-horizontal-pod-autoscaler-syncs`.
    pub horizontal_pod_autoscaler: horizontal_pod_autoscaler::Config,
    /// `--root-ca-file`: the CA bundle published in `kube-root-ca.crt` and token Secrets
    /// (without it the root CA publisher does not run and token Secrets get no `ca.crt`).
    pub root_ca_file: Option<PathBuf>,
    /// `--service-account-private-key-file`: the key legacy tokens are signed with (without
    /// it the token controller does not run, as upstream's).
    pub service_account_private_key_file: Option<PathBuf>,
    /// `--cluster-signing-cert-file`, `--cluster-signing-key-file` and
    /// `--cluster-signing-duration`: the CA the `csrsigning-controller` signs with.
    pub cluster_signing: certificates::signer::Config,
    /// `--terminated-pod-gc-threshold`: terminated pods kept before the pod garbage collector
    /// deletes the oldest (0: never).
    pub terminated_pod_gc_threshold: i32,
    /// `--pvclaimbinder-sync-period`: the PV binder's.
    pub volume_binder: volume::binder::Config,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            controllers: vec!["*".into()],
            cluster_cidr: "10.42.0.0/16".parse().expect("default cluster CIDR"),
            node_cidr_mask_size: 24,
            node_lifecycle: node_lifecycle::Config::default(),
            concurrent_gc_syncs: garbage_collector::Config::default().workers,
            concurrent_replicaset_syncs: 5,
            concurrent_rc_syncs: 5,
            concurrent_deployment_syncs: 5,
            concurrent_job_syncs: 5,
            concurrent_cron_job_syncs: 5,
            concurrent_ttl_after_finished_syncs: 5,
            concurrent_daemonset_syncs: 2,
            concurrent_statefulset_syncs: 5,
            concurrent_endpoint_syncs: 5,
            endpoint_slice: endpoint_slice::Config::default(),
            endpoint_slice_mirroring: endpoint_slice_mirroring::Config::default(),
            resource_quota: resource_quota::Config::default(),
            horizontal_pod_autoscaler: horizontal_pod_autoscaler::Config::default(),
            root_ca_file: None,
            service_account_private_key_file: None,
            cluster_signing: certificates::signer::Config::default(),
            terminated_pod_gc_threshold: pod_gc::Config::default().terminated_pod_gc_threshold,
            volume_binder: volume::binder::Config::default(),
        }
    }
}

/// A configuration the controllers cannot start with.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Cidr(#[from] node_ipam::CidrError),
    #[error("--controllers: unknown controller {name:?} (known: {known})")]
    UnknownController { name: String, known: String },
    #[error("--{flag} must be more than zero")]
    Zero { flag: &'static str },
    #[error("--{flag} must be between 1 and 1000, got {value}")]
    OutOfRange { flag: &'static str, value: usize },
    #[error("--{flag}: cannot read {}: {error}", path.display())]
    File { flag: &'static str, path: PathBuf, error: std::io::Error },
    #[error("--service-account-private-key-file: {0}")]
    Key(#[from] rkube_certs::jose::KeyError),
    #[error("--cluster-signing-cert-file and --cluster-signing-key-file: {0}")]
    Signing(#[from] rkube_certs::CertError),
}

impl Config {
    /// Whether the controller `name` runs, by upstream's `--controllers` rules: an explicit
    /// `name` or `-name` decides, else `*` enables it.
    pub fn enabled(&self, name: &str) -> bool {
        let alias = CONTROLLERS.iter().find(|(n, _)| *n == name).map_or(name, |(_, a)| *a);
        let mut star = false;
        for item in &self.controllers {
            let item = item.trim();
            if item == name || item == alias {
                return true;
            }
            if let Some(off) = item.strip_prefix('-') {
                if off == name || off == alias {
                    return false;
                }
            }
            star |= item == "*";
        }
        star
    }

    /// Checks the flags: controller names, CIDRs, periods.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for item in &self.controllers {
            let item = item.trim();
            let name = item.strip_prefix('-').unwrap_or(item);
            if item != "*" && !CONTROLLERS.iter().any(|(n, a)| name == *n || name == *a) {
                let known = CONTROLLERS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
                return Err(ConfigError::UnknownController { name: item.to_string(), known });
            }
        }
        node_ipam::CidrSet::new(self.cluster_cidr, self.node_cidr_mask_size)?;
        let lifecycle = &self.node_lifecycle;
        for (flag, value) in [
            ("node-monitor-period", lifecycle.node_monitor_period),
            ("node-monitor-grace-period", lifecycle.node_monitor_grace_period),
            ("node-startup-grace-period", lifecycle.node_startup_grace_period),
            ("resource-quota-sync-period", self.resource_quota.resync),
            ("horizontal-pod-autoscaler-sync-period", self.horizontal_pod_autoscaler.sync_period),
            ("pvclaimbinder-sync-period", self.volume_binder.sync_period),
        ] {
            if value == Duration::ZERO {
                return Err(ConfigError::Zero { flag });
            }
        }
        for (flag, value) in [
            ("concurrent-gc-syncs", self.concurrent_gc_syncs),
            ("concurrent-replicaset-syncs", self.concurrent_replicaset_syncs),
            ("concurrent-rc-syncs", self.concurrent_rc_syncs),
            ("concurrent-deployment-syncs", self.concurrent_deployment_syncs),
            ("concurrent-job-syncs", self.concurrent_job_syncs),
            ("concurrent-cron-job-syncs", self.concurrent_cron_job_syncs),
            ("concurrent-ttl-after-finished-syncs", self.concurrent_ttl_after_finished_syncs),
            ("concurrent-daemonset-syncs", self.concurrent_daemonset_syncs),
            ("concurrent-statefulset-syncs", self.concurrent_statefulset_syncs),
            ("concurrent-endpoint-syncs", self.concurrent_endpoint_syncs),
            ("concurrent-service-endpoint-syncs", self.endpoint_slice.workers),
            ("mirroring-concurrent-service-endpoint-syncs", self.endpoint_slice_mirroring.workers),
            ("concurrent-resource-quota-syncs", self.resource_quota.workers),
            ("concurrent-horizontal-pod-autoscaler-syncs", self.horizontal_pod_autoscaler.workers),
        ] {
            if value == 0 {
                return Err(ConfigError::Zero { flag });
            }
        }
        for (flag, value) in [
            ("max-endpoints-per-slice", self.endpoint_slice.max_endpoints_per_slice),
            (
                "mirroring-max-endpoints-per-subset",
                self.endpoint_slice_mirroring.max_endpoints_per_subset,
            ),
        ] {
            if !(1..=1000).contains(&value) {
                return Err(ConfigError::OutOfRange { flag, value });
            }
        }
        self.files()?;
        Ok(())
    }

    /// The root CA bundle and the token signing key, read from their files.
    fn files(
        &self,
    ) -> Result<(Option<String>, Option<rkube_certs::jose::RsaSigningKey>), ConfigError> {
        let read = |flag: &'static str, path: &Option<PathBuf>| {
            path.as_ref()
                .map(|p| {
                    std::fs::read(p).map_err(|error| ConfigError::File {
                        flag,
                        path: p.clone(),
                        error,
                    })
                })
                .transpose()
        };
        let ca = read("root-ca-file", &self.root_ca_file)?;
        let ca = ca.map(|pem| String::from_utf8_lossy(&pem).into_owned());
        let key = read("service-account-private-key-file", &self.service_account_private_key_file)?;
        let key = key.map(|pem| rkube_certs::jose::RsaSigningKey::from_pem(&pem)).transpose()?;
        Ok((ca, key))
    }
}

/// kube-controller-manager's Lease, whose holder runs the controllers (upstream's timing
/// is [`LeaderElection::new`]'s).
pub const LEASE_NAMESPACE: &str = "kube-system";
/// See [`LEASE_NAMESPACE`].
pub const LEASE_NAME: &str = "kube-controller-manager";

/// Why the controller manager stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("--leader-elect-*: {0}")]
    LeaderElection(#[from] InvalidLeaderElection),
    #[error(transparent)]
    Lost(#[from] LeaderError),
}

/// Runs the controllers only while holding the Lease `election` names, as
/// kube-controller-manager does: waits for it, runs every enabled controller while renewing
/// it, and gives it up when `stop` completes (returning `Ok`). When renewal fails for the
/// renew deadline the controllers are stopped and [`RunError::Lost`] returned (upstream's
/// component then exits). A bad configuration is an error before anything starts.
pub async fn run_leader_elected(
    clients: std::sync::Arc<ClientBuilder>,
    config: Config,
    election: &LeaderElection,
    identity: String,
    stop: impl std::future::Future,
) -> Result<(), RunError> {
    election.validate()?;
    let client = clients.root();
    let controllers = controllers(clients, config)?;
    let lease = format!("{}/{}", election.resource_namespace, election.resource_name);
    tracing::info!(identity, lease, "controller manager campaigning");
    leader_election::run_as_leader_until(client, election, identity, controllers, stop).await?;
    Ok(())
}

/// Every enabled controller, as one future (dropping it stops them all).
fn controllers(
    clients: std::sync::Arc<ClientBuilder>,
    config: Config,
) -> Result<impl std::future::Future<Output = ()> + Send + 'static, ConfigError> {
    config.validate()?;
    let cidrs = node_ipam::CidrSet::new(config.cluster_cidr, config.node_cidr_mask_size)?;
    let (root_ca, token_key) = config.files()?;
    let signing = &config.cluster_signing;
    let ca = match (&signing.cert_file, &signing.key_file) {
        (Some(cert), Some(key)) if config.enabled("csrsigning-controller") => {
            Some(rkube_certs::csr::Signer::load(cert, key)?)
        }
        _ => None,
    };
    // The shared informers read as the controller manager; each controller writes (and
    // watches what it watches itself) as its own account.
    let client = clients.root();
    Ok(async move {
        let mut tasks = tokio::task::JoinSet::new();
        if config.enabled("serviceaccount-controller") {
            let ensured = service_account::DefaultServiceAccount;
            let writer = clients.client("serviceaccount-controller").await;
            tasks.spawn(namespace_objects::run(client.clone(), writer, ensured));
        }
        if config.enabled("root-ca-certificate-publisher-controller") {
            match &root_ca {
                Some(ca) => {
                    let ensured = root_ca_publisher::RootCa { ca_pem: ca.clone() };
                    let writer = clients.client("root-ca-certificate-publisher-controller").await;
                    tasks.spawn(namespace_objects::run(client.clone(), writer, ensured));
                }
                None => tracing::warn!(
                    "root-ca-certificate-publisher-controller not started: no --root-ca-file"
                ),
            }
        }
        if config.enabled("serviceaccount-token-controller") {
            match token_key {
                Some(key) => {
                    let root_ca = root_ca.map(String::into_bytes);
                    let tokens = service_account_token::Config { key, root_ca };
                    tasks.spawn(service_account_token::run(client.clone(), tokens));
                }
                None => tracing::warn!(
                    "serviceaccount-token-controller not started: no --service-account-private-key-file"
                ),
            }
        }
        if config.enabled("clusterrole-aggregation-controller") {
            let writer = clients.client("clusterrole-aggregation-controller").await;
            tasks.spawn(cluster_role_aggregation::run(writer));
        }
        if config.enabled("garbage-collector-controller") {
            let gc = garbage_collector::Config { workers: config.concurrent_gc_syncs };
            tasks.spawn(garbage_collector::run(
                clients.client("garbage-collector-controller").await,
                gc,
            ));
        }
        if let Some(ca) = ca {
            let signer =
                certificates::signer::Signer { ca, duration: config.cluster_signing.duration };
            let client = clients.client("csrsigning-controller").await;
            tasks.spawn(certificates::run("csrsigning-controller", client, signer));
        } else if config.enabled("csrsigning-controller") {
            tracing::warn!("csrsigning-controller not started: no --cluster-signing-cert-file and --cluster-signing-key-file");
        }
        if config.enabled("csrapproving-controller") {
            let client = clients.client("csrapproving-controller").await;
            let approver = certificates::approver::Approver { reviews: Api::all(client.clone()) };
            tasks.spawn(certificates::run("csrapproving-controller", client, approver));
        }
        if config.enabled("csrcleaner-controller") {
            let client = clients.client("csrcleaner-controller").await;
            tasks.spawn(certificates::run(
                "csrcleaner-controller",
                client,
                certificates::cleaner::Cleaner,
            ));
        }
        if config.enabled(policy_status::NAME) {
            tasks.spawn(policy_status::run(clients.client(policy_status::NAME).await));
        }
        if config.enabled("namespace-controller") {
            tasks.spawn(namespace::run(clients.client("namespace-controller").await));
        }
        if config.enabled("node-ipam-controller") {
            tasks.spawn(node_ipam::run(clients.client("node-ipam-controller").await, cidrs));
        }
        if config.enabled("cronjob-controller") {
            tasks.spawn(cron_job::run(
                clients.client("cronjob-controller").await,
                config.concurrent_cron_job_syncs,
            ));
        }
        if config.enabled("ttl-after-finished-controller") {
            let workers = config.concurrent_ttl_after_finished_syncs;
            tasks.spawn(ttl_after_finished::run(
                clients.client("ttl-after-finished-controller").await,
                workers,
            ));
        }
        let lifecycle = config.enabled("node-lifecycle-controller");
        let eviction = config.enabled("taint-eviction-controller");
        let replica_sets = config.enabled("replicaset-controller");
        let replication_controllers = config.enabled("replicationcontroller-controller");
        let deployments = config.enabled("deployment-controller");
        let jobs = config.enabled("job-controller");
        let daemon_sets = config.enabled("daemonset-controller");
        let stateful_sets = config.enabled("statefulset-controller");
        let disruption = config.enabled("disruption-controller");
        let pod_gc = config.enabled("pod-garbage-collector-controller");
        // Shared informers: kept here so they stop with the controllers. Each controller that
        // reads nodes or pods gets its own channel of changes.
        let mut _informers = Vec::new();
        let (mut node_txs, mut pod_txs) = (Vec::new(), Vec::new());
        let channel = |txs: &mut Vec<_>| {
            let (tx, rx) = mpsc::unbounded_channel();
            txs.push(tx);
            rx
        };
        let lifecycle_rx = lifecycle.then(|| (channel(&mut node_txs), channel(&mut pod_txs)));
        let eviction_rx = eviction.then(|| (channel(&mut node_txs), channel(&mut pod_txs)));
        let replica_set_rx = replica_sets.then(|| channel(&mut pod_txs));
        let replication_controller_rx = replication_controllers.then(|| channel(&mut pod_txs));
        let deployment_rx = deployments.then(|| channel(&mut pod_txs));
        let job_rx = jobs.then(|| channel(&mut pod_txs));
        let daemon_set_rx = daemon_sets.then(|| (channel(&mut node_txs), channel(&mut pod_txs)));
        let stateful_set_rx = stateful_sets.then(|| channel(&mut pod_txs));
        let resource_quota_rx = config.enabled(resource_quota::NAME).then(|| channel(&mut pod_txs));
        // The autoscaler reads the pod cache only; it is not woken by pod changes.
        let autoscaler = config.enabled(horizontal_pod_autoscaler::NAME);
        let disruption_rx = disruption.then(|| channel(&mut pod_txs));
        let volume_binder = config.enabled("persistentvolume-binder-controller");
        let pvc_protection_rx = config
            .enabled("persistentvolumeclaim-protection-controller")
            .then(|| channel(&mut pod_txs));
        if config.enabled("persistentvolume-protection-controller") {
            tasks.spawn(volume::pv_protection::run(
                clients.client("persistentvolume-protection-controller").await,
            ));
        }
        // The endpoint controllers share a Service informer too.
        let mut service_txs = Vec::new();
        let endpoints_rx = config
            .enabled("endpoints-controller")
            .then(|| (channel(&mut service_txs), channel(&mut pod_txs)));
        let endpoint_slice_rx = config
            .enabled("endpointslice-controller")
            .then(|| (channel(&mut service_txs), channel(&mut pod_txs)));
        let mirroring_rx =
            config.enabled("endpointslice-mirroring-controller").then(|| channel(&mut service_txs));
        let service_lb_rx = config
            .enabled("service-lb-controller")
            .then(|| (channel(&mut service_txs), channel(&mut node_txs)));
        let services = (!service_txs.is_empty()).then(|| {
            let (services, watch) = informer::start(
                Api::<Service>::all(client.clone()),
                watcher::Config::default(),
                service_txs,
            );
            _informers.push(watch);
            services
        });
        if let Some(services) = &services {
            if services.wait_until_ready().await.is_err() {
                return;
            }
        }
        if let (Some(services), Some(service_rx)) = (&services, mirroring_rx) {
            tasks.spawn(endpoint_slice_mirroring::run(
                clients.client("endpointslice-mirroring-controller").await,
                config.endpoint_slice_mirroring.clone(),
                services.clone(),
                service_rx,
            ));
        }
        // The pod garbage collector, the autoscaler and the volume binder read the caches.
        if !node_txs.is_empty() || !pod_txs.is_empty() || pod_gc || autoscaler || volume_binder {
            let (nodes, node_watch) = informer::start(
                Api::<Node>::all(client.clone()),
                watcher::Config::default(),
                node_txs,
            );
            let (pods, pod_watch) = informer::start_indexed(
                Api::<Pod>::all(client.clone()),
                watcher::Config::default(),
                Indexers::default()
                    .with(store::NODE_NAME, store::pod_node_name)
                    .with(volume::POD_CLAIMS, volume::pod_claim_keys),
                pod_txs,
            );
            _informers.push(node_watch);
            _informers.push(pod_watch);
            // Waited for here, once: a store wakes only one of several tasks waiting for its
            // first list at the same time.
            if nodes.wait_until_ready().await.is_err() || pods.wait_until_ready().await.is_err() {
                return;
            }
            if autoscaler {
                tasks.spawn(horizontal_pod_autoscaler::run(
                    clients.client(horizontal_pod_autoscaler::NAME).await,
                    config.horizontal_pod_autoscaler.clone(),
                    pods.clone(),
                ));
            }
            if let Some(pod_rx) = resource_quota_rx {
                tasks.spawn(resource_quota::run(
                    clients.client(resource_quota::NAME).await,
                    config.resource_quota.clone(),
                    pods.clone(),
                    pod_rx,
                ));
            }
            if let Some((node_rx, pod_rx)) = lifecycle_rx {
                tasks.spawn(node_lifecycle::run(
                    clients.client("node-lifecycle-controller").await,
                    client.clone(),
                    config.node_lifecycle.clone(),
                    nodes.clone(),
                    node_rx,
                    pods.clone(),
                    pod_rx,
                ));
            }
            if let Some((node_rx, pod_rx)) = eviction_rx {
                tasks.spawn(taint_eviction::run(
                    clients.client("taint-eviction-controller").await,
                    nodes.clone(),
                    node_rx,
                    pods.clone(),
                    pod_rx,
                ));
            }
            if let Some(pod_rx) = replica_set_rx {
                tasks.spawn(replica_set::run::<k8s_openapi::api::apps::v1::ReplicaSet>(
                    clients.client("replicaset-controller").await,
                    config.concurrent_replicaset_syncs,
                    pods.clone(),
                    pod_rx,
                ));
            }
            if let Some(pod_rx) = replication_controller_rx {
                tasks.spawn(replica_set::run::<k8s_openapi::api::core::v1::ReplicationController>(
                    clients.client("replicationcontroller-controller").await,
                    config.concurrent_rc_syncs,
                    pods.clone(),
                    pod_rx,
                ));
            }
            if let Some(pod_rx) = deployment_rx {
                tasks.spawn(deployment::run(
                    clients.client("deployment-controller").await,
                    config.concurrent_deployment_syncs,
                    pods.clone(),
                    pod_rx,
                ));
            }
            if let Some(pod_rx) = job_rx {
                let workers = config.concurrent_job_syncs;
                tasks.spawn(job::run(
                    clients.client("job-controller").await,
                    workers,
                    pods.clone(),
                    pod_rx,
                ));
            }
            if let Some((node_rx, pod_rx)) = daemon_set_rx {
                tasks.spawn(daemon_set::run(
                    clients.client("daemonset-controller").await,
                    config.concurrent_daemonset_syncs,
                    nodes.clone(),
                    node_rx,
                    pods.clone(),
                    pod_rx,
                ));
            }
            if volume_binder {
                tasks.spawn(volume::binder::run(
                    clients.client("persistentvolume-binder-controller").await,
                    config.volume_binder.clone(),
                    pods.clone(),
                ));
            }
            if let Some(pod_rx) = pvc_protection_rx {
                tasks.spawn(volume::pvc_protection::run(
                    clients.client("persistentvolumeclaim-protection-controller").await,
                    pods.clone(),
                    pod_rx,
                ));
            }
            if let Some(pod_rx) = stateful_set_rx {
                let workers = config.concurrent_statefulset_syncs;
                tasks.spawn(stateful_set::run(
                    clients.client("statefulset-controller").await,
                    workers,
                    pods.clone(),
                    pod_rx,
                ));
            }
            if let Some(pod_rx) = disruption_rx {
                tasks.spawn(disruption::run(
                    clients.client("disruption-controller").await,
                    pods.clone(),
                    pod_rx,
                ));
            }
            if pod_gc {
                let gc = pod_gc::Config {
                    terminated_pod_gc_threshold: config.terminated_pod_gc_threshold,
                    ..pod_gc::Config::default()
                };
                tasks.spawn(pod_gc::run(
                    clients.client("pod-garbage-collector-controller").await,
                    gc,
                    nodes.clone(),
                    pods.clone(),
                ));
            }
            if let (Some(services), Some((service_rx, pod_rx))) = (&services, endpoints_rx) {
                tasks.spawn(endpoints::run(
                    clients.client("endpoints-controller").await,
                    config.concurrent_endpoint_syncs,
                    services.clone(),
                    service_rx,
                    pods.clone(),
                    pod_rx,
                ));
            }
            if let (Some(services), Some((service_rx, node_rx))) = (&services, service_lb_rx) {
                tasks.spawn(service_lb::run(
                    clients.client("service-lb-controller").await,
                    services.clone(),
                    service_rx,
                    nodes.clone(),
                    node_rx,
                ));
            }
            if let (Some(services), Some((service_rx, pod_rx))) = (&services, endpoint_slice_rx) {
                tasks.spawn(endpoint_slice::run(
                    clients.client("endpointslice-controller").await,
                    config.endpoint_slice.clone(),
                    services.clone(),
                    service_rx,
                    pods,
                    pod_rx,
                    nodes,
                ));
            }
        }
        while tasks.join_next().await.is_some() {}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(controllers: &[&str]) -> Config {
        Config {
            controllers: controllers.iter().map(|s| s.to_string()).collect(),
            ..Config::default()
        }
    }

    #[test]
    fn controllers_flag_as_upstream() {
        let all = with(&["*"]);
        assert!(CONTROLLERS.iter().all(|(n, _)| all.enabled(n)));
        let some = with(&["*", "-node-lifecycle-controller", "-nodeipam"]);
        assert!(!some.enabled("node-lifecycle-controller"));
        assert!(!some.enabled("node-ipam-controller"));
        assert!(some.enabled("namespace-controller"));
        let only = with(&["namespace"]);
        assert!(only.enabled("namespace-controller"));
        assert!(!only.enabled("garbage-collector-controller"));
        assert!(with(&["*", "-garbagecollector"]).enabled("namespace-controller"));
        assert!(!with(&["*", "-garbagecollector"]).enabled("garbage-collector-controller"));
        assert!(with(&["garbage-collector-controller"]).validate().is_ok());
        assert!(!only.enabled("taint-eviction-controller"));
        assert!(with(&["*"]).validate().is_ok());
        let endpoints = with(&["*", "-endpointslicemirroring", "-endpoint"]);
        assert!(!endpoints.enabled("endpointslice-mirroring-controller"));
        assert!(!endpoints.enabled("endpoints-controller"));
        assert!(endpoints.enabled("endpointslice-controller"));
        assert!(is_controller("endpointslice") && is_controller("endpoints-controller"));
        assert!(!is_controller("controllers") && !is_controller("kubelet"));
        assert!(is_controller("podgc") && is_controller("disruption"));
        assert!(!with(&["*", "-podgc"]).enabled("pod-garbage-collector-controller"));
        assert!(with(&["*", "-podgc"]).enabled("disruption-controller"));
        for (name, short) in [
            ("serviceaccount-controller", "serviceaccount"),
            ("serviceaccount-token-controller", "serviceaccount-token"),
            ("root-ca-certificate-publisher-controller", "root-ca-cert-publisher"),
            ("clusterrole-aggregation-controller", "clusterrole-aggregation"),
        ] {
            assert!(all.enabled(name) && is_controller(short));
            assert!(!with(&["*", &format!("-{short}")]).enabled(name));
        }
        let missing = Config {
            service_account_private_key_file: Some("/nonexistent/sa.key".into()),
            ..Config::default()
        };
        assert!(
            missing.validate().unwrap_err().to_string().starts_with(
                "--service-account-private-key-file: cannot read /nonexistent/sa.key:"
            ),
            "{:?}",
            missing.validate()
        );
        let too_many = Config {
            endpoint_slice: endpoint_slice::Config { workers: 1, max_endpoints_per_slice: 1001 },
            ..Config::default()
        };
        assert_eq!(
            too_many.validate().unwrap_err().to_string(),
            "--max-endpoints-per-slice must be between 1 and 1000, got 1001"
        );
        let err = with(&["*", "-nosuch"]).validate().unwrap_err();
        assert!(
            err.to_string().starts_with("--controllers: unknown controller \"-nosuch\""),
            "{err}"
        );
    }

    #[test]
    fn bad_cidr_settings_are_refused() {
        let config = Config { node_cidr_mask_size: 12, ..Config::default() };
        assert_eq!(
            config.validate().unwrap_err().to_string(),
            "--node-cidr-mask-size 12 does not fit in --cluster-cidr 10.42.0.0/16: it must be \
             between 16 and 32"
        );
        let mut config = Config::default();
        config.node_lifecycle.node_monitor_period = Duration::ZERO;
        assert_eq!(
            config.validate().unwrap_err().to_string(),
            "--node-monitor-period must be more than zero"
        );
    }
}
