//! The proxy's loop: informers on Services and EndpointSlices (through the API server's
//! public API), and a sync of every rule whenever something changed, at most once per
//! `min_sync_period` (changes in between are batched) and at least once per `sync_period`
//! (a full resync that also rereads the tables, so rules removed behind the proxy's back
//! come back).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ipnet::Ipv4Net;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::Api;
use kube::runtime::watcher;
use kube::Client;
use rkube_runtime::informer;
use tokio::sync::mpsc;

use crate::device;
use crate::iptables::{self, IptablesError, SyncStats, Writer};
use crate::model::{self, ServicePort, SERVICE_NAME_LABEL};
use crate::rules::{self, RuleConfig};

const BRIDGE_NF_CALL_IPTABLES: &str = "/proc/sys/net/bridge/bridge-nf-call-iptables";

/// How a proxy runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// The node this proxy runs on (for `externalTrafficPolicy`/`internalTrafficPolicy`
    /// Local).
    pub node_name: String,
    pub rules: RuleConfig,
    /// Routed to a dummy device (see [`crate::device`]); None leaves routing alone.
    pub service_cidr: Option<Ipv4Net>,
    /// `--iptables-min-sync-period`.
    pub min_sync_period: Duration,
    /// `--iptables-sync-period`.
    pub sync_period: Duration,
}

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Iptables(#[from] IptablesError),
    #[error(transparent)]
    Device(#[from] device::DeviceError),
}

/// A running proxy; dropping it stops the loop (the rules stay, as kube-proxy's do).
pub struct Proxy {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Checks that the rules can be written (saying plainly why not), routes the service CIDR
/// and starts the loop.
pub async fn start(client: Client, config: Config) -> Result<Proxy, StartError> {
    tokio::task::spawn_blocking(iptables::check_available)
        .await
        .map_err(|e| IptablesError::Failed { program: "iptables", message: e.to_string() })??;
    // Replies between pods on one bridge must pass the nat table to be translated back
    // (a pod reaching another through a cluster IP); k3s turns this on too.
    let bridged = std::path::Path::new(BRIDGE_NF_CALL_IPTABLES);
    if bridged.exists() && std::fs::read_to_string(bridged).is_ok_and(|v| v.trim() == "0") {
        if let Err(e) = std::fs::write(bridged, "1") {
            tracing::warn!(error = %e, "cannot set {BRIDGE_NF_CALL_IPTABLES}: pods may not reach Services on their own node");
        }
    }
    if let Some(cidr) = config.service_cidr {
        let name = device::device_name(&config.rules.prefix);
        tokio::task::spawn_blocking(move || device::route_to_dummy(&name, cidr))
            .await
            .map_err(|e| IptablesError::Failed { program: "ip", message: e.to_string() })??;
    }
    let task = tokio::spawn(run(client, config));
    Ok(Proxy { task })
}

/// The ports of every Service, with their endpoints.
pub fn service_ports(
    services: &[Arc<Service>],
    slices: &[Arc<EndpointSlice>],
    node: &str,
) -> Vec<ServicePort> {
    let mut by_service: HashMap<(&str, &str), Vec<&EndpointSlice>> = HashMap::new();
    for slice in slices {
        let namespace = slice.metadata.namespace.as_deref().unwrap_or("");
        let labels = slice.metadata.labels.as_ref();
        let Some(service) = labels.and_then(|l| l.get(SERVICE_NAME_LABEL)) else { continue };
        by_service.entry((namespace, service.as_str())).or_default().push(slice);
    }
    let mut ports = Vec::new();
    for service in services {
        let namespace = service.metadata.namespace.as_deref().unwrap_or("");
        let name = service.metadata.name.as_deref().unwrap_or("");
        let slices = by_service.get(&(namespace, name)).map(Vec::as_slice).unwrap_or(&[]);
        ports.extend(model::service_ports(service, slices, node));
    }
    ports.sort_by(|a, b| (&a.name, a.protocol).cmp(&(&b.name, b.protocol)));
    ports
}

async fn run(client: Client, config: Config) {
    let (tx, mut changes) = mpsc::unbounded_channel();
    let (services, _services_watch) = informer::start(
        Api::<Service>::all(client.clone()),
        watcher::Config::default(),
        vec![tx.clone()],
    );
    let (slices, _slices_watch) =
        informer::start(Api::<EndpointSlice>::all(client), watcher::Config::default(), vec![tx]);
    if services.wait_until_ready().await.is_err() || slices.wait_until_ready().await.is_err() {
        return;
    }
    let mut writer = Writer::new(config.rules.clone());
    let mut last_full = None::<Instant>;
    let mut last_sync = None::<Instant>;
    loop {
        let full = last_full.is_none_or(|t: Instant| t.elapsed() >= config.sync_period);
        if let Some(last) = last_sync {
            // Batch what comes in the minimum period.
            let wait = config.min_sync_period.saturating_sub(last.elapsed());
            tokio::time::sleep(wait).await;
        }
        while changes.try_recv().is_ok() {}
        let started = Instant::now();
        let ports = service_ports(&services.state(), &slices.state(), &config.node_name);
        let tables = rules::render(writer.config(), &ports);
        let synced = tokio::task::spawn_blocking(move || {
            let result = writer.sync(&tables, full);
            (writer, result)
        })
        .await;
        let Ok((returned, result)) = synced else { return };
        writer = returned;
        last_sync = Some(Instant::now());
        match result {
            Ok(stats) => {
                if full {
                    last_full = last_sync;
                }
                log_sync(&stats, full, started.elapsed());
            }
            Err(e) => tracing::warn!(error = %e, "proxy rules not written; retrying"),
        }
        // Wait for a change, or the next full resync.
        let until_full =
            config.sync_period.saturating_sub(last_full.map_or(Duration::ZERO, |t| t.elapsed()));
        tokio::select! {
            change = changes.recv() => if change.is_none() { return },
            _ = tokio::time::sleep(until_full) => {}
        }
    }
}

fn log_sync(stats: &SyncStats, full: bool, took: Duration) {
    tracing::debug!(
        rules = stats.rules,
        chains = stats.chains,
        stale = stats.stale_chains,
        bytes = stats.restore_bytes,
        full,
        ms = took.as_secs_f64() * 1e3,
        "proxy rules synced"
    );
}
