//! The Endpoints controller, as kube-controller-manager's `endpoints-controller`: for each
//! Service with a selector, a core/v1 Endpoints object of the same name listing the pods it
//! selects: ready ones under `addresses`, the others under `notReadyAddresses` (all of them
//! ready with `publishNotReadyAddresses`), grouped into subsets by the ports they serve
//! ([`subsets::repack`]). It carries the Service's labels (and `service.kubernetes.io/headless`
//! for a headless Service), the last-change trigger time, and at most 1000 addresses
//! (`endpoints.kubernetes.io/over-capacity: truncated` beyond). The Endpoints object goes
//! when its Service does; Endpoints without a Service are removed when the controller
//! starts. Services without a selector keep whatever Endpoints were written by hand.
//!
//! Start at [`run`]; a sync is `Controller::sync`, whose decisions are the pure
//! [`desired_subsets`] and [`endpoints_to_write`].

pub mod subsets;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort, EndpointSubset, Endpoints, ObjectReference, Pod, Service,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_runtime::events::{object_reference, Recorder};
use rkube_runtime::informer::{self, Change};
use rkube_runtime::store::Store;
use rkube_runtime::workqueue::WorkQueue;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::api_errors::{message, namespace_terminating};
use crate::service_pods::{self, PodChanges, HEADLESS_LABEL, LAST_CHANGE_TRIGGER_TIME};
use crate::trigger_time::{rfc3339_nano, TriggerTimes};

/// The annotation of an Endpoints object cut down to [`subsets::MAX_CAPACITY`] addresses.
pub const OVER_CAPACITY: &str = "endpoints.kubernetes.io/over-capacity";
/// Endpoints used as a leader-election lock (old style): never touched.
pub const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";
/// The component on its events.
const COMPONENT: &str = "endpoint-controller";
const MAX_BACKOFF: Duration = Duration::from_secs(1000);
const SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs the controller with `workers` concurrent syncs (`--concurrent-endpoint-syncs`) until
/// the task is aborted. `services` and `pods` are shared, synced informers' stores with their
/// change channels.
pub async fn run(
    client: Client,
    workers: usize,
    services: Store<Service>,
    mut service_changes: mpsc::UnboundedReceiver<Change>,
    pods: Store<Pod>,
    mut pod_changes: mpsc::UnboundedReceiver<Change>,
) {
    let (tx, mut endpoints_changes) = mpsc::unbounded_channel();
    let (endpoints, _watch) = informer::start(
        Api::<Endpoints>::all(client.clone()),
        watcher::Config::default(),
        vec![tx],
    );
    if endpoints.wait_until_ready().await.is_err() {
        return;
    }
    let ctl = Arc::new(Controller {
        recorder: Recorder::new(client.clone(), COMPONENT),
        client,
        services,
        pods,
        endpoints,
        queue: WorkQueue::new(MAX_BACKOFF),
        trigger_times: TriggerTimes::default(),
        stale: Mutex::new(HashMap::new()),
    });
    // Endpoints left behind by Services deleted while no controller ran.
    for e in ctl.endpoints.state() {
        let leader =
            e.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(LEADER_ANNOTATION));
        if !leader {
            let namespace = e.metadata.namespace.as_deref().unwrap_or("");
            ctl.queue.add(service_pods::key(namespace, e.metadata.name.as_deref().unwrap_or("")));
        }
    }
    let mut tasks = JoinSet::new();
    for _ in 0..workers.max(1) {
        tasks.spawn(work(ctl.clone()));
    }
    tracing::info!(workers, "endpoints-controller started");
    let mut pod_events = PodChanges::default();
    loop {
        tokio::select! {
            Some(change) = service_changes.recv() => {
                if let Change::Object { namespace, name } = change {
                    ctl.queue.add(service_pods::key(namespace.as_deref().unwrap_or(""), &name));
                }
            }
            Some(change) = pod_changes.recv() => {
                for key in pod_events.services_for(change, &ctl.pods, &ctl.services) {
                    ctl.queue.add(key);
                }
            }
            Some(change) = endpoints_changes.recv() => {
                // A deleted Endpoints object is made again if its Service wants one.
                if let Some(r) = change.object_ref::<Endpoints>() {
                    if ctl.endpoints.get(&r).is_none() {
                        ctl.queue.add(service_pods::key(r.namespace.as_deref().unwrap_or(""), &r.name));
                    }
                }
            }
            else => break,
        }
    }
    ctl.queue.shut_down();
}

struct Controller {
    client: Client,
    recorder: Recorder,
    services: Store<Service>,
    pods: Store<Pod>,
    endpoints: Store<Endpoints>,
    queue: WorkQueue<String>,
    trigger_times: TriggerTimes,
    /// The resourceVersion each Endpoints object had before the controller's last update of
    /// it: seeing it in the cache again means the cache is behind.
    stale: Mutex<HashMap<String, String>>,
}

/// Why a sync failed (it is retried with a back-off).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("endpoints informer cache is out of date, resource version {0} already processed")]
    Stale(String),
    #[error("{0}")]
    Api(String),
}

async fn work(ctl: Arc<Controller>) {
    let sync = |key: String| {
        let ctl = ctl.clone();
        async move { ctl.sync(&key).await.map(|()| None) }
    };
    let routine = |e: &SyncError| matches!(e, SyncError::Stale(_));
    ctl.queue.work("endpoints-controller", SYNC_TIMEOUT, sync, routine).await
}

impl Controller {
    async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some((namespace, name)) = key.split_once('/') else { return Ok(()) };
        let api: Api<Endpoints> = Api::namespaced(self.client.clone(), namespace);
        let Some(service) = self.services.get(&ObjectRef::new(name).within(namespace)) else {
            // The Service is gone: so are its Endpoints.
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(SyncError::Api(message(&e))),
            }
            self.trigger_times.forget(key);
            self.stale.lock().expect("stale endpoints").remove(key);
            return Ok(());
        };
        if service_pods::is_external_name(&service) || service_pods::selector(&service).is_none() {
            return Ok(());
        }
        let pods = service_pods::selected_pods(&service, self.pods.in_namespace(namespace));
        // Computed on every sync, so that a sync that writes nothing still moves it on.
        let trigger = self.trigger_times.compute(key, &service, &pods);
        let subsets = desired_subsets(&service, &pods);
        let current = self.endpoints.get(&ObjectRef::new(name).within(namespace));
        if let Some(current) = &current {
            let rv = current.metadata.resource_version.clone().unwrap_or_default();
            if self.stale.lock().expect("stale endpoints").get(key) == Some(&rv) {
                return Err(SyncError::Stale(rv));
            }
        }
        let Some(new) = endpoints_to_write(current.as_deref(), &service, subsets, trigger) else {
            return Ok(());
        };
        let result = match &current {
            None => api.create(&PostParams::default(), &new).await,
            Some(_) => api.replace(name, &PostParams::default(), &new).await,
        };
        match result {
            Ok(written) => {
                if let Some(current) = &current {
                    let old = current.metadata.resource_version.clone().unwrap_or_default();
                    if written.metadata.resource_version.as_deref() != Some(old.as_str()) {
                        self.stale.lock().expect("stale endpoints").insert(key.to_string(), old);
                    }
                }
                Ok(())
            }
            // Every later create fails too.
            Err(e) if current.is_none() && namespace_terminating(&e) => Ok(()),
            Err(e) => {
                let (reason, note) = match current {
                    None => (
                        "FailedToCreateEndpoint",
                        format!("Failed to create endpoint for service {key}: {}", message(&e)),
                    ),
                    Some(_) => (
                        "FailedToUpdateEndpoint",
                        format!("Failed to update endpoint {key}: {}", message(&e)),
                    ),
                };
                self.recorder.record(&object_reference(&new), "Warning", reason, &note);
                Err(SyncError::Api(message(&e)))
            }
        }
    }
}

/// The subsets of `service`'s Endpoints with `pods` (those it selects): one address per pod
/// that belongs in endpoints (terminating ones only when not-ready addresses are published),
/// of the Service's first IP family, with each Service port the pod has.
pub fn desired_subsets(service: &Service, pods: &[Arc<Pod>]) -> Vec<EndpointSubset> {
    let publish = service_pods::publish_not_ready(service);
    let spec = service.spec.as_ref();
    let ports = spec.and_then(|s| s.ports.as_deref()).unwrap_or(&[]);
    let headless = spec.and_then(|s| s.cluster_ip.as_deref()) == Some("None");
    let mut subsets = Vec::new();
    for pod in pods {
        if !service_pods::should_be_in_endpoints(pod, publish) {
            continue;
        }
        let Some(mut address) = address_for(service, pod) else { continue };
        if service_pods::should_set_hostname(pod, service) {
            address.hostname = pod.spec.as_ref().and_then(|s| s.hostname.clone());
        }
        let ready = publish || service_pods::is_pod_ready(pod);
        let subset = |ports: Option<Vec<EndpointPort>>| {
            let list = Some(vec![address.clone()]);
            if ready {
                EndpointSubset { addresses: list, ports, ..EndpointSubset::default() }
            } else {
                EndpointSubset { not_ready_addresses: list, ports, ..EndpointSubset::default() }
            }
        };
        if ports.is_empty() {
            // A headless Service may have no ports.
            if headless {
                subsets.push(subset(None));
            }
            continue;
        }
        for port in ports {
            let Some(number) = service_pods::find_port(pod, port) else { continue };
            subsets.push(subset(Some(vec![EndpointPort {
                name: port.name.clone().filter(|n| !n.is_empty()),
                port: number,
                protocol: Some(service_pods::protocol(port)),
                app_protocol: port.app_protocol.clone(),
            }])));
        }
    }
    subsets::repack(&subsets)
}

/// The pod's address for the Service: its IP of the Service's (first) family, with its node
/// and the pod as target.
fn address_for(service: &Service, pod: &Pod) -> Option<EndpointAddress> {
    let spec = service.spec.as_ref();
    let family = spec.and_then(|s| s.ip_families.as_ref()).and_then(|f| f.first()).cloned();
    let ips = service_pods::pod_ips(pod);
    let want_v6 = match family.as_deref() {
        Some(family) => family == "IPv6",
        None if service_pods::is_service_ip_set(service) => {
            let ip = spec.and_then(|s| s.cluster_ip.as_deref()).unwrap_or("");
            service_pods::canonical_ip(ip).is_some_and(|(v6, _)| v6)
        }
        // Headless, from an old API server: the pod's own family.
        None => ips.first().and_then(|ip| service_pods::canonical_ip(ip)).is_some_and(|(v6, _)| v6),
    };
    let ip = ips
        .iter()
        .find(|ip| service_pods::canonical_ip(ip).is_some_and(|(v6, _)| v6 == want_v6))?;
    Some(EndpointAddress {
        ip: ip.clone(),
        node_name: Some(pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default()),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            ..ObjectReference::default()
        }),
        hostname: None,
    })
}

/// Subsets compared as upstream compares them: empty lists and unset ones alike, targets'
/// resourceVersions ignored.
fn comparable(subsets: Option<&Vec<EndpointSubset>>) -> Vec<EndpointSubset> {
    let addresses = |list: &Option<Vec<EndpointAddress>>| {
        let list: Vec<EndpointAddress> = list
            .iter()
            .flatten()
            .map(|a| EndpointAddress {
                hostname: a.hostname.clone().filter(|h| !h.is_empty()),
                target_ref: a
                    .target_ref
                    .clone()
                    .map(|t| ObjectReference { resource_version: None, ..t }),
                ..a.clone()
            })
            .collect();
        (!list.is_empty()).then_some(list)
    };
    subsets
        .into_iter()
        .flatten()
        .map(|s| EndpointSubset {
            addresses: addresses(&s.addresses),
            not_ready_addresses: addresses(&s.not_ready_addresses),
            ports: s.ports.clone().filter(|p| !p.is_empty()),
        })
        .collect()
}

fn non_empty(map: BTreeMap<String, String>) -> Option<BTreeMap<String, String>> {
    (!map.is_empty()).then_some(map)
}

/// The Endpoints object to write for `service` with `subsets`, given the `current` one; `None`
/// when the current one is already right.
pub fn endpoints_to_write(
    current: Option<&Endpoints>,
    service: &Service,
    subsets: Vec<EndpointSubset>,
    trigger: Option<Timestamp>,
) -> Option<Endpoints> {
    let service_labels = service.metadata.labels.clone().unwrap_or_default();
    if let Some(current) = current {
        let mut labels = current.metadata.labels.clone().unwrap_or_default();
        labels.remove(HEADLESS_LABEL);
        let annotations = current.metadata.annotations.as_ref();
        let capacity_ok = subsets::count(current.subsets.as_deref().unwrap_or(&[]))
            <= subsets::MAX_CAPACITY
            && !annotations.is_some_and(|a| a.contains_key(OVER_CAPACITY));
        if comparable(current.subsets.as_ref()) == comparable(Some(&subsets))
            && labels == service_labels
            && capacity_ok
        {
            return None;
        }
    }
    let mut new = current.cloned().unwrap_or_else(|| Endpoints {
        metadata: ObjectMeta {
            name: service.metadata.name.clone(),
            namespace: service.metadata.namespace.clone(),
            ..ObjectMeta::default()
        },
        ..Endpoints::default()
    });
    let mut subsets = subsets;
    let truncated = subsets::truncate(&mut subsets);
    new.subsets = (!subsets.is_empty()).then_some(subsets);
    let mut annotations = new.metadata.annotations.take().unwrap_or_default();
    match trigger {
        Some(at) => annotations.insert(LAST_CHANGE_TRIGGER_TIME.into(), rfc3339_nano(at)),
        None => annotations.remove(LAST_CHANGE_TRIGGER_TIME),
    };
    if truncated {
        annotations.insert(OVER_CAPACITY.into(), "truncated".into());
    } else {
        annotations.remove(OVER_CAPACITY);
    }
    new.metadata.annotations = non_empty(annotations);
    let mut labels = service_labels;
    if service_pods::is_service_ip_set(service) {
        labels.remove(HEADLESS_LABEL);
    } else {
        labels.insert(HEADLESS_LABEL.into(), String::new());
    }
    new.metadata.labels = non_empty(labels);
    // A truncated object rewritten with the same content is no change either.
    if current.is_some_and(|c| {
        c.subsets == new.subsets
            && c.metadata.labels == new.metadata.labels
            && c.metadata.annotations == new.metadata.annotations
    }) {
        return None;
    }
    Some(new)
}

#[cfg(test)]
mod tests;
