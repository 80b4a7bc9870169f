//! The rkube node agent. It registers its Node and keeps its heartbeat ([`node`]), runs the
//! pods bound to it on a container runtime ([`pods`] over the [`runtime::Runtime`] trait:
//! Docker through bollard in [`runtime::docker`], or no containers at all in
//! [`runtime::sim`] for scale tests), runs static pods from manifest files with mirror pods
//! in the API ([`static_pods`]), records events (with [`rkube_runtime::events`]), and serves the kubelet API the
//! API server proxies logs, exec, attach and port-forward to ([`server`]; exec and attach
//! over WebSockets or SPDY in [`remotecommand`], port-forward in [`portforward`], both on
//! [`httpstream`] and [`spdy`]), with the node's and its pods' resource usage
//! ([`stats`]). Projected service-account tokens come from the TokenRequest API through its
//! token cache ([`tokens`]). Next to it runs the node's local-path provisioner
//! ([`local_path`]), which makes and removes the directories of `local-path` volumes.
//!
//! It reaches the API server only through its public API (a kube-rs client), like any
//! other client: the same code runs inside `rkube server` and as `rkube kubelet` on another
//! machine.
//!
//! Start at [`start`]; one pod's life is in [`pods::sync`], its probes in [`pods::probes`].

pub mod authz;
pub mod error;
pub mod httpstream;
pub mod local_path;
pub mod net;
pub mod node;
pub mod pods;
pub mod portforward;
pub mod remotecommand;
pub mod runtime;
pub mod server;
pub mod spdy;
pub mod static_pods;
pub mod stats;
pub mod tokens;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use rkube_runtime::events::Recorder;

pub use error::{Error, Result};

/// The version the kubelet reports (`nodeInfo.kubeletVersion`).
pub const KUBELET_VERSION: &str = "v1.33.0";

/// How the kubelet runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// `--node-name`.
    pub node_name: String,
    /// The node's InternalIP, and pods' hostIP.
    pub node_ip: IpAddr,
    /// The port of the kubelet's HTTPS API, written into the node's `daemonEndpoints`.
    pub port: u16,
    /// Where pod volumes live (`--root-dir`).
    pub root_dir: PathBuf,
    /// `--pod-cidr`; without it, the one the node IPAM controller gives the node.
    pub pod_cidr: Option<String>,
    pub max_pods: u32,
    /// `--node-status-update-frequency`.
    pub status_update_frequency: Duration,
    /// The node's allocatable resources (for `resourceFieldRef` without limits).
    pub allocatable: BTreeMap<String, String>,
    /// `--eviction-hard`.
    pub eviction: node::EvictionThresholds,
    /// `--client-ca-file`, read: the CA certificates (PEM) that clients of the kubelet API
    /// (the API server's kubelet-client certificate) must chain to. Without it the API is
    /// not served.
    pub client_ca_pem: Option<Vec<u8>>,
    /// `--pod-manifest-path`: a directory of static pod manifests ([`static_pods`]).
    pub pod_manifest_path: Option<PathBuf>,
    /// `--file-check-frequency`: how often the manifests are read even when no file changed.
    pub file_check_frequency: Duration,
    /// How often container and node usage is sampled for the stats API (upstream's
    /// housekeeping interval): CPU rates are measured between samples.
    pub housekeeping_interval: Duration,
    /// `--cluster-dns`, `--cluster-domain` and `--resolv-conf`: what pods' resolv.conf is
    /// made from ([`pods::dns`]).
    pub dns: pods::dns::DnsSettings,
}

impl Config {
    pub fn new(node_name: &str, node_ip: IpAddr, port: u16, root_dir: PathBuf) -> Config {
        let machine = node::Machine::read(&root_dir);
        let allocatable = BTreeMap::from([
            ("cpu".to_string(), machine.cpus.to_string()),
            ("memory".to_string(), machine.memory_bytes.to_string()),
        ]);
        Config {
            node_name: node_name.to_string(),
            node_ip,
            port,
            root_dir,
            pod_cidr: None,
            max_pods: 110,
            status_update_frequency: Duration::from_secs(10),
            allocatable,
            eviction: Default::default(),
            client_ca_pem: None,
            pod_manifest_path: None,
            file_check_frequency: Duration::from_secs(20),
            housekeeping_interval: Duration::from_secs(10),
            dns: Default::default(),
        }
    }

    #[cfg(test)]
    pub fn for_tests(node_name: &str) -> Config {
        Config::new(node_name, IpAddr::from([127, 0, 0, 1]), 10250, std::env::temp_dir())
    }
}

/// A started kubelet: its tasks end when this is dropped or stopped.
pub struct Kubelet {
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Kubelet {
    pub fn stop(&self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Registers the node and starts the heartbeat and the pod workers on the given runtime.
pub async fn start(
    client: Client,
    config: Config,
    runtime: Arc<dyn runtime::Runtime>,
) -> Result<Kubelet> {
    // Secret, ConfigMap and token volumes live under the root: only root may look in. The
    // containers see their volumes through bind mounts, which the parents' mode does not gate.
    rkube_certs::ensure_private_dir(&config.root_dir)?;
    // The port first: a kubelet that cannot serve its API should say so before it registers.
    let api = match &config.client_ca_pem {
        Some(ca) => {
            let (cert, key) = server::self_signed_certificate(&config.node_name, config.node_ip)?;
            let acceptor = server::acceptor(&cert, &key, ca)?;
            Some((server::bind(&config).await?, acceptor))
        }
        None => {
            tracing::warn!(
                "no client CA (--client-ca-file): the kubelet API (logs, exec, attach) is off"
            );
            None
        }
    };
    // As upstream's kubelet: registration is tried again until the API server takes it.
    let mut delay = Duration::from_millis(200);
    loop {
        let registered = match node::register(&client, &config, runtime.as_ref()).await {
            Ok(()) => node::renew_lease(&client, &config).await,
            Err(e) => Err(e),
        };
        match registered {
            Ok(()) => break,
            Err(e) => {
                tracing::warn!(node = config.node_name, error = %e, "unable to register the node; trying again");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(7));
            }
        }
    }
    let config = Arc::new(config);
    let pod_cache = pods::PodCache::default();
    // The node turns Ready once its pod network exists.
    let (network_ready, network_rx) = tokio::sync::watch::channel(false);
    let mut tasks = vec![tokio::spawn(node::heartbeat(
        client.clone(),
        config.clone(),
        runtime.clone(),
        network_rx,
    ))];
    if let Some((listener, acceptor)) = api {
        // Usage is sampled only for the API that serves it.
        let stats = Arc::new(stats::StatsProvider::new(
            runtime.clone(),
            &config.node_name,
            &config.root_dir,
            pod_cache.clone(),
        ));
        tasks.push(tokio::spawn(stats.clone().run(config.housekeeping_interval)));
        let state = Arc::new(server::ServerState {
            config: config.clone(),
            runtime: runtime.clone(),
            pods: pod_cache.clone(),
            stats,
        });
        tracing::info!(port = config.port, "kubelet API serving");
        let authorizer =
            Arc::new(authz::KubeletAuthorizer::new(client.clone(), config.node_name.clone()));
        tasks.push(tokio::spawn(server::serve(
            listener,
            acceptor,
            server::router(state),
            authorizer,
        )));
    }
    let cidr = node::wait_for_pod_cidr(&client, &config).await;
    runtime.ensure_network(&config.node_name, &cidr).await?;
    network_ready.send_replace(true);
    tracing::info!(node = config.node_name, cidr, "pod network ready");
    let syncer = Arc::new(pods::sync::Syncer {
        client: client.clone(),
        runtime: runtime.clone(),
        config: config.clone(),
        recorder: Recorder::on_host(client.clone(), "kubelet", &config.node_name),
        tokens: Default::default(),
    });
    // The kubelet names its node by name, with the name as uid, as upstream's does.
    let node = k8s_openapi::api::core::v1::ObjectReference {
        kind: Some("Node".into()),
        name: Some(config.node_name.clone()),
        uid: Some(config.node_name.clone()),
        ..Default::default()
    };
    syncer.recorder.record(&node, "Normal", "Starting", "Starting kubelet.");
    match pods::dns::host_resolv_conf(&config.dns) {
        Ok(host) => {
            if let Some(problem) = pods::dns::check_host_limits(&config.dns, &host) {
                syncer.recorder.record(&node, "Warning", "CheckLimitsForResolvConf", &problem);
            }
        }
        Err(e) => {
            syncer.recorder.record(&node, "Warning", "CheckLimitsForResolvConf", &e.to_string())
        }
    }
    let statics = config.pod_manifest_path.clone().map(|dir| {
        let initial = static_pods::read_now(&dir, &config.node_name, &Default::default());
        let (tx, rx) = tokio::sync::watch::channel(initial);
        let mirror_changed = Arc::new(tokio::sync::Notify::new());
        tracing::info!(dir = %dir.display(), "static pods");
        tasks.push(tokio::spawn(static_pods::watch_dir(
            dir,
            config.node_name.clone(),
            config.file_check_frequency,
            tx,
        )));
        tasks.push(tokio::spawn(static_pods::mirror(
            client.clone(),
            config.node_name.clone(),
            rx.clone(),
            mirror_changed.clone(),
        )));
        pods::StaticSource { pods: rx, mirror_changed }
    });
    tasks.push(tokio::spawn(pods::run(syncer, pod_cache, statics)));
    Ok(Kubelet { tasks })
}
