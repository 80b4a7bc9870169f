//! The EndpointSlice reconciler, as upstream's (`k8s.io/endpointslice`): from a Service, the
//! pods it selects and the slices it has, the slices to create, update and delete, with as
//! little churn as it can. Pure: [`Reconciler::reconcile`] returns a [`Plan`] the controller
//! carries out.
//!
//! Per address type of the Service (its IP families), pods become endpoints grouped by the
//! ports they resolve to ([`PortKey`]). For each group:
//!
//! 1. Existing slices keep the endpoints still wanted (updated in place when their
//!    conditions, node or zone changed); a slice left empty is deleted, a slice whose
//!    labels no longer follow the Service's is updated.
//! 2. New endpoints first fill the slices being updated anyway, fullest first.
//! 3. What is left goes into the unchanged slice it fits best (closest to full), else into
//!    new slices of at most `max_endpoints_per_slice`.
//!
//! A Service without endpoints keeps one empty placeholder slice per address type. Slices to
//! create take the names of slices to delete (an update instead of a delete and a create).
//! Creates and updates carry the last-change trigger time annotation.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ObjectReference, Pod, Service};
use k8s_openapi::api::discovery::v1::{
    Endpoint, EndpointConditions, EndpointHints, EndpointPort, EndpointSlice, ForZone,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;

use super::endpoint_set::{same_beyond_identity, EndpointSet, PortKey};
use super::tracker::SERVICE_NAME_LABEL;
use crate::controller_ref::owner_reference;
use crate::service_pods::{self, HEADLESS_LABEL, LAST_CHANGE_TRIGGER_TIME};
use crate::trigger_time::rfc3339_nano;

/// The label naming the controller that manages a slice.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// The zone label of nodes, copied onto their endpoints.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
const TOPOLOGY_MODE: &str = "service.kubernetes.io/topology-mode";
const TOPOLOGY_AWARE_HINTS: &str = "service.kubernetes.io/topology-aware-hints";

/// What the reconciler knows of a pod's node.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeInfo {
    /// Not in the cache.
    Missing,
    /// Known, with its `topology.kubernetes.io/zone` label.
    Found { zone: Option<String> },
}

/// The writes that bring a Service's slices in line.
#[derive(Debug, Default)]
pub struct Plan {
    pub create: Vec<EndpointSlice>,
    pub update: Vec<EndpointSlice>,
    pub delete: Vec<EndpointSlice>,
    /// Pods left out because their node is not known (the Service is synced again later).
    pub skipped: Vec<String>,
}

/// The writes for one group of ports, and the names of its slices left as they are.
struct PortPlan {
    create: Vec<EndpointSlice>,
    update: Vec<EndpointSlice>,
    delete: Vec<EndpointSlice>,
    unchanged: Vec<String>,
}

/// The reconciler's settings.
#[derive(Debug, Clone)]
pub struct Reconciler {
    /// `--max-endpoints-per-slice`.
    pub max_endpoints_per_slice: usize,
    /// The `endpointslice.kubernetes.io/managed-by` value of its slices.
    pub managed_by: &'static str,
}

impl Reconciler {
    /// The plan for `service` (which has a selector) with `pods` (those it selects), `nodes`
    /// to look their zones up, `existing` (the slices it manages for the Service, none being
    /// deleted) and the sync's trigger time.
    pub fn reconcile(
        &self,
        service: &Service,
        pods: &[Arc<Pod>],
        nodes: &dyn Fn(&str) -> NodeInfo,
        existing: &[Arc<EndpointSlice>],
        trigger: Option<Timestamp>,
    ) -> Plan {
        let types = address_types(service);
        let mut plan = Plan::default();
        let mut by_type: BTreeMap<&str, Vec<&EndpointSlice>> = BTreeMap::new();
        let mut unsupported = Vec::new();
        for slice in existing {
            if types.contains(&slice.address_type) {
                by_type.entry(slice.address_type.as_str()).or_default().push(slice);
            } else {
                unsupported.push(slice.as_ref().clone());
            }
        }
        for address_type in &types {
            let slices = by_type.get(address_type.as_str()).cloned().unwrap_or_default();
            let part = self.by_address_type(service, pods, nodes, &slices, trigger, address_type);
            plan.create.extend(part.create);
            plan.update.extend(part.update);
            plan.delete.extend(part.delete);
            plan.skipped.extend(part.skipped);
        }
        plan.delete.extend(unsupported);
        plan
    }

    fn by_address_type(
        &self,
        service: &Service,
        pods: &[Arc<Pod>],
        nodes: &dyn Fn(&str) -> NodeInfo,
        existing: &[&EndpointSlice],
        trigger: Option<Timestamp>,
        address_type: &str,
    ) -> Plan {
        let mut plan = Plan::default();
        let mut existing_by_ports: BTreeMap<PortKey, Vec<&EndpointSlice>> = BTreeMap::new();
        for slice in existing {
            if owned_by(slice, service) {
                existing_by_ports.entry(PortKey::of(ports_of(slice))).or_default().push(slice);
            } else {
                plan.delete.push((*slice).clone());
            }
        }

        let mut desired: BTreeMap<PortKey, (Vec<EndpointPort>, EndpointSet)> = BTreeMap::new();
        let publish_not_ready = service_pods::publish_not_ready(service);
        for pod in pods {
            if !service_pods::should_be_in_endpoints(pod, true) {
                continue;
            }
            let ports = endpoint_ports(service, pod);
            let (_, endpoints) = desired
                .entry(PortKey::of(&ports))
                .or_insert_with(|| (ports, EndpointSet::default()));
            let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("");
            let zone = match nodes(node) {
                NodeInfo::Found { zone } => zone,
                // A pod on an unknown node is left out (and the Service synced again), unless
                // the Service publishes every address anyway.
                NodeInfo::Missing if !publish_not_ready => {
                    plan.skipped.push(format!(
                        "skipping Pod {} for Service {}/{}: Node {node} Not Found",
                        pod.metadata.name.as_deref().unwrap_or(""),
                        service.metadata.namespace.as_deref().unwrap_or(""),
                        service.metadata.name.as_deref().unwrap_or(""),
                    ));
                    continue;
                }
                NodeInfo::Missing => None,
            };
            let endpoint = pod_to_endpoint(pod, zone, service, address_type);
            if !endpoint.addresses.is_empty() {
                endpoints.insert(endpoint);
            }
        }

        let mut unchanged_names = BTreeSet::new();
        for (key, (ports, endpoints)) in desired.iter() {
            let slices = existing_by_ports.get(key).map_or(&[][..], Vec::as_slice);
            let part =
                self.by_port_mapping(service, slices, endpoints.clone(), ports, address_type);
            plan.create.extend(part.create);
            plan.update.extend(part.update);
            plan.delete.extend(part.delete);
            unchanged_names.extend(part.unchanged);
        }
        for (key, slices) in &existing_by_ports {
            if !desired.contains_key(key) {
                plan.delete.extend(slices.iter().map(|s| (*s).clone()));
            }
        }

        // A Service without endpoints keeps one empty slice (per address type).
        if existing.len() == plan.delete.len() && plan.create.is_empty() {
            let placeholder = self.new_slice(service, Vec::new(), address_type);
            if plan.delete.len() == 1 && is_placeholder_like(&plan.delete[0], &placeholder, service)
            {
                plan.delete.clear();
            } else {
                plan.create.push(placeholder);
            }
        }

        let unchanged: Vec<&EndpointSlice> = existing
            .iter()
            .filter(|s| s.metadata.name.as_ref().is_some_and(|n| unchanged_names.contains(n)))
            .copied()
            .collect();
        reconcile_hints(service, &mut plan, &unchanged);
        recycle(service, &mut plan);
        for slice in plan.create.iter_mut().chain(plan.update.iter_mut()) {
            set_trigger_time(&mut slice.metadata, trigger);
        }
        plan
    }

    /// Steps 1 to 3 of the module doc for one group of ports.
    fn by_port_mapping(
        &self,
        service: &Service,
        existing: &[&EndpointSlice],
        mut desired: EndpointSet,
        ports: &[EndpointPort],
        address_type: &str,
    ) -> PortPlan {
        let max = self.max_endpoints_per_slice.max(1);
        let mut by_name: BTreeMap<String, EndpointSlice> = BTreeMap::new();
        let (mut unchanged, mut to_update, mut to_delete) =
            (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());

        // 1. Keep what is still wanted, as it is wanted now.
        for slice in existing {
            let name = slice.metadata.name.clone().unwrap_or_default();
            let mut kept = Vec::new();
            let mut changed = false;
            for endpoint in &slice.endpoints {
                if let Some(wanted) = desired.get(endpoint) {
                    changed |= !same_beyond_identity(wanted, endpoint);
                    kept.push(wanted.clone());
                    desired.remove(endpoint);
                }
            }
            let (labels, labels_changed) = self.labels(slice.metadata.labels.as_ref(), service);
            let mut copy = (*slice).clone();
            if changed || kept.len() != slice.endpoints.len() {
                if kept.is_empty() {
                    to_delete.insert(name.clone());
                } else {
                    copy.endpoints = kept;
                    copy.metadata.labels = Some(labels);
                    to_update.insert(name.clone());
                }
            } else if labels_changed {
                copy.metadata.labels = Some(labels);
                to_update.insert(name.clone());
            } else {
                unchanged.insert(name.clone());
            }
            by_name.insert(name, copy);
        }

        // 2. Fill the slices being updated anyway, fullest first.
        if !desired.is_empty() && !to_update.is_empty() {
            let mut names: Vec<&String> = to_update.iter().collect();
            names.sort_by_key(|n| std::cmp::Reverse(by_name[*n].endpoints.len()));
            for name in names {
                let slice = by_name.get_mut(name).expect("a slice being updated");
                fill(slice, &mut desired, max);
            }
        }

        // 3. The rest into the unchanged slice it fits best, else into new slices.
        let mut create = Vec::new();
        while !desired.is_empty() {
            let best = if desired.len() < max {
                slice_to_fill(unchanged.iter().map(|n| (n, &by_name[n])), desired.len(), max)
            } else {
                None
            };
            match best {
                Some(name) => {
                    let slice = by_name.get_mut(&name).expect("an unchanged slice");
                    fill(slice, &mut desired, max);
                    unchanged.remove(&name);
                    to_update.insert(name);
                }
                None => {
                    let mut slice = self.new_slice(service, ports.to_vec(), address_type);
                    fill(&mut slice, &mut desired, max);
                    create.push(slice);
                }
            }
        }

        let take = |names: &BTreeSet<String>| names.iter().map(|n| by_name[n].clone()).collect();
        PortPlan {
            create,
            update: take(&to_update),
            delete: take(&to_delete),
            unchanged: unchanged.into_iter().collect(),
        }
    }

    /// A new slice of `service` for `ports` and `address_type`, without endpoints.
    fn new_slice(
        &self,
        service: &Service,
        ports: Vec<EndpointPort>,
        address_type: &str,
    ) -> EndpointSlice {
        let name = service.metadata.name.as_deref().unwrap_or("");
        EndpointSlice {
            metadata: ObjectMeta {
                generate_name: Some(format!("{name}-")),
                namespace: service.metadata.namespace.clone(),
                labels: Some(self.labels(None, service).0),
                owner_references: Some(vec![owner_reference(service)]),
                ..ObjectMeta::default()
            },
            address_type: address_type.to_string(),
            endpoints: Vec::new(),
            ports: Some(ports),
        }
    }

    /// A slice's labels: the Service's (but the reserved ones), the headless label for a
    /// headless Service, the Service's name and the managing controller. Also whether the
    /// slice's own labels (`current`) differ from the Service's.
    fn labels(
        &self,
        current: Option<&BTreeMap<String, String>>,
        service: &Service,
    ) -> (BTreeMap<String, String>, bool) {
        let reserved = |k: &String| {
            k.as_str() == SERVICE_NAME_LABEL
                || k.as_str() == MANAGED_BY_LABEL
                || k.as_str() == HEADLESS_LABEL
        };
        let unreserved = |labels: Option<&BTreeMap<String, String>>| -> BTreeMap<String, String> {
            labels
                .into_iter()
                .flatten()
                .filter(|(k, _)| !reserved(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        let mut labels = unreserved(service.metadata.labels.as_ref());
        let changed = unreserved(current) != labels;
        if !service_pods::is_service_ip_set(service) {
            labels.insert(HEADLESS_LABEL.into(), String::new());
        }
        labels.insert(SERVICE_NAME_LABEL.into(), service.metadata.name.clone().unwrap_or_default());
        labels.insert(MANAGED_BY_LABEL.into(), self.managed_by.into());
        (labels, changed)
    }
}

fn ports_of(slice: &EndpointSlice) -> &[EndpointPort] {
    slice.ports.as_deref().unwrap_or(&[])
}

fn fill(slice: &mut EndpointSlice, desired: &mut EndpointSet, max: usize) {
    while slice.endpoints.len() < max {
        let Some(endpoint) = desired.pop() else { break };
        slice.endpoints.push(endpoint);
    }
}

/// The slice that ends up closest to full when `count` endpoints are added to it (and does
/// not overflow).
fn slice_to_fill<'a>(
    slices: impl Iterator<Item = (&'a String, &'a EndpointSlice)>,
    count: usize,
    max: usize,
) -> Option<String> {
    slices
        .filter(|(_, s)| s.endpoints.len() + count <= max)
        .min_by_key(|(name, s)| (max - (s.endpoints.len() + count), *name))
        .map(|(name, _)| name.clone())
}

/// The slice is owned by `service` (a controller reference to its uid).
pub fn owned_by(slice: &EndpointSlice, service: &Service) -> bool {
    let uid = service.metadata.uid.as_deref().unwrap_or("");
    slice
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == uid && o.kind == "Service" && o.api_version == "v1")
}

/// Whether an existing slice is already the placeholder the Service needs: owned, same
/// namespace, labels and address type, no endpoints, no ports.
fn is_placeholder_like(
    slice: &EndpointSlice,
    placeholder: &EndpointSlice,
    service: &Service,
) -> bool {
    let labels = |s: &EndpointSlice| s.metadata.labels.clone().unwrap_or_default();
    owned_by(slice, service)
        && slice.metadata.namespace == placeholder.metadata.namespace
        && labels(slice) == labels(placeholder)
        && slice.address_type == placeholder.address_type
        && slice.endpoints.is_empty()
        && ports_of(slice).is_empty()
}

/// The address types a Service's slices carry: those of its IP families; without any, the
/// family of its cluster IP, or both for a headless Service.
pub fn address_types(service: &Service) -> Vec<String> {
    let spec = service.spec.as_ref();
    let mut types: Vec<String> = spec
        .and_then(|s| s.ip_families.as_ref())
        .into_iter()
        .flatten()
        .filter(|f| *f == "IPv4" || *f == "IPv6")
        .cloned()
        .collect();
    types.sort();
    types.dedup();
    if !types.is_empty() {
        return types;
    }
    if service_pods::is_service_ip_set(service) {
        let ip = spec.and_then(|s| s.cluster_ip.as_deref()).unwrap_or("");
        let v6 = service_pods::canonical_ip(ip).is_some_and(|(v6, _)| v6);
        return vec![if v6 { "IPv6" } else { "IPv4" }.to_string()];
    }
    vec!["IPv4".to_string(), "IPv6".to_string()]
}

/// The ports a pod's endpoint has for `service`: each Service port whose target the pod has,
/// resolved on this pod. A headless Service may have none.
pub fn endpoint_ports(service: &Service, pod: &Pod) -> Vec<EndpointPort> {
    let ports = service.spec.as_ref().and_then(|s| s.ports.as_deref()).unwrap_or(&[]);
    ports
        .iter()
        .filter_map(|port| {
            let number = service_pods::find_port(pod, port)?;
            Some(EndpointPort {
                name: Some(port.name.clone().unwrap_or_default()),
                port: Some(number),
                protocol: Some(service_pods::protocol(port)),
                app_protocol: port.app_protocol.clone(),
            })
        })
        .collect()
}

/// A pod's endpoint in a slice of `address_type`: its addresses of that family, whether it
/// is serving (Ready), terminating (being deleted) and ready (serving and not terminating, or
/// the Service publishes not-ready addresses), its node and zone, the pod as target, and its
/// hostname under its governing Service.
pub fn pod_to_endpoint(
    pod: &Pod,
    zone: Option<String>,
    service: &Service,
    address_type: &str,
) -> Endpoint {
    let serving = service_pods::is_pod_ready(pod);
    let terminating = pod.metadata.deletion_timestamp.is_some();
    let ready = service_pods::publish_not_ready(service) || (serving && !terminating);
    let want_v6 = address_type == "IPv6";
    let addresses = service_pods::pod_ips(pod)
        .iter()
        .filter_map(|ip| service_pods::canonical_ip(ip))
        .filter(|(v6, _)| *v6 == want_v6)
        .map(|(_, ip)| ip)
        .collect();
    let spec = pod.spec.as_ref();
    Endpoint {
        addresses,
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        }),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            ..ObjectReference::default()
        }),
        node_name: spec.and_then(|s| s.node_name.clone()).filter(|n| !n.is_empty()),
        zone: zone.filter(|z| !z.is_empty()),
        hostname: service_pods::should_set_hostname(pod, service)
            .then(|| spec.and_then(|s| s.hostname.clone()))
            .flatten(),
        ..Endpoint::default()
    }
}

/// Zone hints: with `trafficDistribution: PreferClose` every ready endpoint with a zone is
/// hinted to its zone; otherwise no endpoint carries hints. Unchanged slices whose hints are
/// wrong are updated too. (The topology-mode annotation would need upstream's topology
/// cache, which rkube does not keep: with it, hints are removed, as upstream does without
/// its cache.)
fn reconcile_hints(service: &Service, plan: &mut Plan, unchanged: &[&EndpointSlice]) {
    let annotations = service.metadata.annotations.as_ref();
    let auto = |key: &str| annotations.and_then(|a| a.get(key)).map(String::as_str);
    let hints_annotation =
        matches!(auto(TOPOLOGY_AWARE_HINTS).or_else(|| auto(TOPOLOGY_MODE)), Some("Auto" | "auto"));
    let prefer_close = service.spec.as_ref().and_then(|s| s.traffic_distribution.as_deref())
        == Some("PreferClose")
        && !hints_annotation;
    let wanted = |e: &Endpoint| -> Option<EndpointHints> {
        let zone = e.zone.clone()?;
        Some(EndpointHints { for_zones: Some(vec![ForZone { name: zone }]), ..Default::default() })
    };
    let ready = |e: &Endpoint| e.conditions.as_ref().and_then(|c| c.ready) == Some(true);
    let needs_update = |s: &EndpointSlice| {
        s.endpoints.iter().any(|e| {
            if prefer_close {
                ready(e) && e.hints != wanted(e)
            } else {
                e.hints.is_some()
            }
        })
    };
    for slice in unchanged {
        if needs_update(slice) {
            plan.update.push((*slice).clone());
        }
    }
    for slice in plan.create.iter_mut().chain(plan.update.iter_mut()) {
        for endpoint in &mut slice.endpoints {
            if !prefer_close {
                endpoint.hints = None;
            } else if ready(endpoint) {
                endpoint.hints = wanted(endpoint);
            }
        }
    }
}

/// Turns creates into updates of slices that would be deleted (same address type, owned by
/// the Service): fewer writes and fewer names that come and go.
fn recycle(service: &Service, plan: &mut Plan) {
    let mut i = 0;
    while i < plan.delete.len() && !plan.create.is_empty() {
        let doomed = &plan.delete[i];
        let last = plan.create.last().expect("a slice to create");
        if doomed.address_type == last.address_type && owned_by(doomed, service) {
            let mut slice = plan.create.pop().expect("a slice to create");
            slice.metadata.name = doomed.metadata.name.clone();
            plan.update.push(slice);
            plan.delete.remove(i);
        } else {
            i += 1;
        }
    }
}

/// Sets (or, without a trigger time, removes) the last-change trigger time annotation.
fn set_trigger_time(meta: &mut ObjectMeta, trigger: Option<Timestamp>) {
    let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
    match trigger {
        Some(at) => {
            annotations.insert(LAST_CHANGE_TRIGGER_TIME.into(), rfc3339_nano(at));
        }
        None => {
            annotations.remove(LAST_CHANGE_TRIGGER_TIME);
        }
    }
    if annotations.is_empty() {
        meta.annotations = None;
    }
}
