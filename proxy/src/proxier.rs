//! The proxy's loop: informers on Services and EndpointSlices (through the API server's
//! public API), and a sync whenever something changed, at most once per `min_sync_period`
//! (changes in between are batched). Syncs are partial (the changed Services' chains, see
//! [`crate::ruleset`]); at least once per `sync_period` a partial sync rewrites the shared
//! chains too, and once per [`FULL_SYNC_PERIOD`] (and after a failure) a full sync rewrites
//! everything and rereads the tables, so rules removed behind the proxy's back come back, as
//! kube-proxy does.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use ipnet::Ipv4Net;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::Client;
use rkube_runtime::informer::{Delta, Informer};
use rkube_runtime::store::Indexers;
use tokio::sync::mpsc;

use crate::conntrack::{self, ConntrackError};
use crate::device;
use crate::iptables::{self, IptablesError, SyncStats, Writer};
use crate::metrics::{self, Metrics, SyncRecord};
use crate::model::{self, SERVICE_NAME_LABEL};
use crate::rules::RuleConfig;
use crate::ruleset::{RuleSet, ServiceKey};

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
    /// `--metrics-bind-address`: where `/metrics` is served (None: nowhere).
    pub metrics_bind_address: Option<SocketAddr>,
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
    metrics_task: Option<tokio::task::JoinHandle<()>>,
    /// Where `/metrics` is served, when it is.
    pub metrics_address: Option<SocketAddr>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        if let Some(task) = &self.metrics_task {
            task.abort();
        }
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
    let metrics = Arc::new(Metrics::default());
    // A taken port costs only the metrics (as the components' `/healthz`), not the proxy.
    let served = match config.metrics_bind_address {
        Some(address) => match metrics::serve(address, metrics.clone()).await {
            Ok(served) => Some(served),
            Err(e) => {
                tracing::warn!(error = %e, %address, "no proxy metrics");
                None
            }
        },
        None => None,
    };
    let task = tokio::spawn(run(client, config, metrics));
    let (metrics_address, metrics_task) = served.unzip();
    Ok(Proxy { task, metrics_task, metrics_address })
}

/// The slices' index by the Service they belong to (`namespace/name`).
const SERVICE_INDEX: &str = "service";

/// The annotation with the time of the change an EndpointSlice carries (set by the endpoint
/// controllers): network programming latency is measured from it.
const TRIGGER_TIME_ANNOTATION: &str = "endpoints.kubernetes.io/last-change-trigger-time";

/// How often every rule is rewritten and the tables reread (kube-proxy's `FullSyncPeriod`).
pub const FULL_SYNC_PERIOD: Duration = Duration::from_secs(3600);

/// How soon a sync whose `iptables-restore` failed is tried again (as a full sync).
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The most trigger times kept between two syncs (each change adds one).
const MAX_PENDING_TRIGGERS: usize = 10_000;

fn slice_service(slice: &EndpointSlice) -> Option<ServiceKey> {
    let namespace = slice.metadata.namespace.clone().unwrap_or_default();
    let service = slice.metadata.labels.as_ref()?.get(SERVICE_NAME_LABEL)?;
    Some((namespace, service.clone()))
}

fn service_key(service: &Service) -> ServiceKey {
    let namespace = service.metadata.namespace.clone().unwrap_or_default();
    (namespace, service.metadata.name.clone().unwrap_or_default())
}

fn trigger_time(slice: &EndpointSlice) -> Option<SystemTime> {
    let text = slice.metadata.annotations.as_ref()?.get(TRIGGER_TIME_ANNOTATION)?;
    let time = k8s_openapi::jiff::Timestamp::from_str(text).ok()?;
    Some(SystemTime::from(time))
}

/// What changed since the last sync.
#[derive(Default)]
struct Pending {
    services: HashSet<ServiceKey>,
    service_changes: usize,
    endpoint_changes: usize,
    /// The trigger times of the endpoint changes, from after the proxy started.
    triggers: Vec<SystemTime>,
}

impl Pending {
    fn service(&mut self, delta: Delta<Service>) {
        match delta {
            Delta::Upserted { new, .. } => self.services.insert(service_key(&new)),
            Delta::Deleted(old) => self.services.insert(service_key(&old)),
            Delta::Synced => return,
        };
        self.service_changes += 1;
    }

    fn slice(&mut self, delta: Delta<EndpointSlice>, started: SystemTime) {
        let (old, new) = match delta {
            Delta::Upserted { old, new } => (old, Some(new)),
            Delta::Deleted(old) => (Some(old), None),
            Delta::Synced => return,
        };
        for slice in old.iter().chain(new.iter()) {
            if let Some(key) = slice_service(slice) {
                self.services.insert(key);
            }
        }
        self.endpoint_changes += 1;
        let trigger = new.as_deref().and_then(trigger_time);
        let before = old.as_deref().and_then(trigger_time);
        if let Some(t) = trigger.filter(|t| *t > started && Some(*t) != before) {
            if self.triggers.len() < MAX_PENDING_TRIGGERS {
                self.triggers.push(t);
            }
        }
    }
}

async fn run(client: Client, config: Config, metrics: Arc<Metrics>) {
    let started = SystemTime::now();
    let (services_tx, mut service_deltas) = mpsc::unbounded_channel();
    let (slices_tx, mut slice_deltas) = mpsc::unbounded_channel();
    let (services, _services_watch) = Informer::new(Api::<Service>::all(client.clone()))
        .indexers(Indexers::none())
        .deltas(services_tx)
        .start();
    let by_service = |slice: &EndpointSlice| {
        slice_service(slice).map(|(ns, name)| format!("{ns}/{name}")).into_iter().collect()
    };
    let (slices, _slices_watch) = Informer::new(Api::<EndpointSlice>::all(client))
        .indexers(Indexers::none().with(SERVICE_INDEX, by_service))
        .deltas(slices_tx)
        .start();
    if services.wait_until_ready().await.is_err() || slices.wait_until_ready().await.is_err() {
        return;
    }
    let mut set = RuleSet::new(config.rules.clone());
    let mut writer = Some(Writer::new(config.rules.clone()));
    let mut pending = Pending::default();
    let mut last_full = None::<Instant>;
    let mut last_sync = None::<Instant>;
    let mut warned_conntrack = false;
    loop {
        if let Some(last) = last_sync {
            // Batch what comes in the minimum period.
            let wait = config.min_sync_period.saturating_sub(last.elapsed());
            tokio::time::sleep(wait).await;
        }
        while let Ok(delta) = service_deltas.try_recv() {
            pending.service(delta);
        }
        while let Ok(delta) = slice_deltas.try_recv() {
            pending.slice(delta, started);
        }
        let Some(mut w) = writer.take() else { return };
        let full = w.needs_full() || last_full.is_none_or(|t| t.elapsed() >= FULL_SYNC_PERIOD);
        let periodic = last_sync.is_none_or(|t| t.elapsed() >= config.sync_period);
        let began = Instant::now();
        let node = &config.node_name;
        for (namespace, name) in pending.services.drain() {
            let service = services.get(&ObjectRef::new(&name).within(&namespace));
            let ports = match service {
                Some(service) => {
                    let slices = slices.by_index(SERVICE_INDEX, &format!("{namespace}/{name}"));
                    let slices = slices.unwrap_or_default();
                    let slices: Vec<&EndpointSlice> = slices.iter().map(|s| s.as_ref()).collect();
                    model::service_ports(&service, &slices, node)
                }
                None => Vec::new(),
            };
            set.update((namespace, name), ports);
        }
        metrics.queued(pending.service_changes, pending.endpoint_changes);
        let triggers = std::mem::take(&mut pending.triggers);
        pending = Pending::default();
        let mut retry = false;
        let work = if full {
            Some((set.full(), Default::default()))
        } else if set.has_changes() || periodic {
            let partial = set.partial();
            Some((partial.tables, partial.deleted))
        } else {
            None
        };
        if work.is_none() {
            // Nothing to write: what the changes ask for is in place already.
            metrics.programmed(&triggers);
        }
        if let Some((tables, deleted)) = work {
            let (filter_rules, nat_rules) = set.rule_counts();
            let synced = tokio::task::spawn_blocking(move || {
                let result = match full {
                    true => w.sync(&tables, true),
                    false => w.sync_partial(&tables, &deleted, periodic),
                };
                (w, result)
            })
            .await;
            let Ok((returned, result)) = synced else { return };
            w = returned;
            last_sync = Some(Instant::now());
            match result {
                Ok(stats) => {
                    let took = began.elapsed();
                    let flows = set.synced();
                    if !flows.is_empty() {
                        let flushed = tokio::task::spawn_blocking(move || conntrack::flush(&flows));
                        match flushed.await {
                            Ok(Ok(())) => {}
                            Ok(Err(e @ ConntrackError::Missing(_))) if !warned_conntrack => {
                                warned_conntrack = true;
                                tracing::warn!(error = %e, "stale UDP flows not deleted");
                            }
                            Ok(Err(ConntrackError::Missing(_))) => {}
                            Ok(Err(e)) => tracing::warn!(error = %e, "stale UDP flows not deleted"),
                            Err(_) => return,
                        }
                    }
                    if full {
                        last_full = last_sync;
                    }
                    log_sync(&stats, full, took);
                    metrics.synced(SyncRecord { full, took, filter_rules, nat_rules, triggers });
                }
                Err(e) => {
                    metrics.failed(full);
                    // Timed when they are in place, by the full sync that follows soon.
                    pending.triggers = triggers;
                    retry = true;
                    tracing::warn!(error = %e, full, "proxy rules not written; a full sync follows");
                }
            }
        }
        writer = Some(w);
        // Wait for a change, or the next periodic sync (soon after a failed one).
        let until_full = match retry {
            true => RETRY_AFTER,
            false => {
                config.sync_period.saturating_sub(last_sync.map_or(Duration::ZERO, |t| t.elapsed()))
            }
        };
        tokio::select! {
            delta = service_deltas.recv() => match delta {
                Some(delta) => pending.service(delta),
                None => return,
            },
            delta = slice_deltas.recv() => match delta {
                Some(delta) => pending.slice(delta, started),
                None => return,
            },
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
