//! The rkube node agent. It registers its Node and keeps its heartbeat ([`node`]), runs the
//! pods bound to it on a container runtime ([`pods`] over the [`runtime::Runtime`] trait,
//! with Docker through bollard in [`runtime::docker`]), records events ([`events`]), and
//! serves the kubelet API the API server proxies logs, exec and attach to ([`server`]).
//!
//! It reaches the API server only through its public API (a kube-rs client), like any
//! other client: the same code runs inside `rkube server` and as `rkube kubelet` on another
//! machine.
//!
//! Start at [`run`]; one pod's life is in [`pods::sync`].

pub mod events;
pub mod net;
pub mod node;
pub mod pods;
pub mod runtime;
pub mod server;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;

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
) -> anyhow::Result<Kubelet> {
    std::fs::create_dir_all(&config.root_dir)?;
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
    node::register(&client, &config, runtime.as_ref()).await?;
    node::renew_lease(&client, &config).await?;
    let config = Arc::new(config);
    let pod_cache = pods::PodCache::default();
    let mut tasks =
        vec![tokio::spawn(node::heartbeat(client.clone(), config.clone(), runtime.clone()))];
    if let Some((listener, acceptor)) = api {
        let state = Arc::new(server::ServerState {
            config: config.clone(),
            runtime: runtime.clone(),
            pods: pod_cache.clone(),
        });
        tracing::info!(port = config.port, "kubelet API serving");
        tasks.push(tokio::spawn(server::serve(listener, acceptor, server::router(state))));
    }
    let cidr = node::wait_for_pod_cidr(&client, &config).await;
    runtime.ensure_network(&config.node_name, &cidr).await?;
    tracing::info!(node = config.node_name, cidr, "pod network ready");
    let syncer = Arc::new(pods::sync::Syncer {
        client: client.clone(),
        runtime: runtime.clone(),
        config: config.clone(),
        recorder: events::Recorder::new(client.clone(), &config.node_name),
    });
    syncer.recorder.node_event("Normal", "Starting", "Starting kubelet.").await;
    tasks.push(tokio::spawn(pods::run(syncer, pod_cache)));
    Ok(Kubelet { tasks })
}
