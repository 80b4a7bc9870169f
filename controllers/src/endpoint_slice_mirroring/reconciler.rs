//! The mirroring reconciler, as upstream's: from an Endpoints object and the slices mirrored
//! from it so far, the slices to create, update and delete. Pure: [`Mirror::reconcile`]
//! returns a [`MirrorPlan`].
//!
//! The Endpoints' subsets are repacked first; each subset's addresses (ready ones, then not
//! ready ones, at most `max_endpoints_per_subset` of them) become endpoints, grouped by
//! address type and ports. Each group is one slice: the first existing slice of the group is
//! kept (updated when its endpoints, labels or annotations differ), any others are deleted.
//! Slices to create take the names of slices to delete of the same address type.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{EndpointAddress, Endpoints};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::endpoint_slice::{
    same_beyond_identity, EndpointSet, PortKey, MANAGED_BY_LABEL, SERVICE_NAME_LABEL,
};
use crate::endpoints::subsets::repack;
use crate::service_pods::{self, LAST_CHANGE_TRIGGER_TIME};

/// kubectl's record of the last applied configuration: not mirrored.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The writes that mirror an Endpoints object, and what could not be mirrored.
#[derive(Debug, Default)]
pub struct MirrorPlan {
    pub create: Vec<EndpointSlice>,
    pub update: Vec<EndpointSlice>,
    pub delete: Vec<EndpointSlice>,
    /// Addresses that are not IP addresses.
    pub invalid: usize,
    /// Addresses left out: the invalid ones and those past the per-subset maximum.
    pub skipped: usize,
}

/// The mirroring reconciler's settings.
#[derive(Debug, Clone)]
pub struct Mirror {
    /// `--mirroring-max-endpoints-per-subset`.
    pub max_endpoints_per_subset: usize,
    /// The `endpointslice.kubernetes.io/managed-by` value of its slices.
    pub managed_by: &'static str,
}

type GroupKey = (String, PortKey);

impl Mirror {
    /// The plan mirroring `endpoints` given `existing` (the slices mirrored from it).
    pub fn reconcile(&self, endpoints: &Endpoints, existing: &[Arc<EndpointSlice>]) -> MirrorPlan {
        let mut plan = MirrorPlan::default();
        let max = self.max_endpoints_per_subset.max(1);
        let mut desired: BTreeMap<GroupKey, (Vec<EndpointPort>, EndpointSet)> = BTreeMap::new();
        for subset in repack(endpoints.subsets.as_deref().unwrap_or(&[])) {
            let ports: Vec<EndpointPort> = subset
                .ports
                .iter()
                .flatten()
                .map(|p| EndpointPort {
                    name: Some(p.name.clone().unwrap_or_default()),
                    port: Some(p.port),
                    protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".into())),
                    app_protocol: p.app_protocol.clone(),
                })
                .collect();
            let ready = subset.addresses.iter().flatten().map(|a| (a, true));
            let not_ready = subset.not_ready_addresses.iter().flatten().map(|a| (a, false));
            let (mut total, mut added) = (0, 0);
            for (address, ready) in ready.chain(not_ready) {
                total += 1;
                if added >= max {
                    continue;
                }
                match address_to_endpoint(address, ready) {
                    Some((address_type, endpoint)) => {
                        let key = (address_type, PortKey::of(&ports));
                        let (_, set) = desired
                            .entry(key)
                            .or_insert_with(|| (ports.clone(), EndpointSet::default()));
                        set.insert(endpoint);
                        added += 1;
                    }
                    None => plan.invalid += 1,
                }
            }
            plan.skipped += total - added;
        }

        let mut existing_by_key: BTreeMap<GroupKey, Vec<&EndpointSlice>> = BTreeMap::new();
        for slice in existing {
            let key =
                (slice.address_type.clone(), PortKey::of(slice.ports.as_deref().unwrap_or(&[])));
            existing_by_key.entry(key).or_default().push(slice);
        }
        for slices in existing_by_key.values_mut() {
            slices.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        }
        for (key, (ports, set)) in desired.iter() {
            let slices = existing_by_key.get(key).map_or(&[][..], Vec::as_slice);
            self.by_group(endpoints, slices, set.clone(), ports, &key.0, &mut plan);
        }
        for (key, slices) in &existing_by_key {
            if !desired.contains_key(key) {
                plan.delete.extend(slices.iter().map(|s| (*s).clone()));
            }
        }
        recycle(&mut plan);
        plan
    }

    fn by_group(
        &self,
        endpoints: &Endpoints,
        existing: &[&EndpointSlice],
        mut desired: EndpointSet,
        ports: &[EndpointPort],
        address_type: &str,
        plan: &mut MirrorPlan,
    ) {
        let mut name = None;
        if let Some((first, others)) = existing.split_first() {
            plan.delete.extend(others.iter().map(|s| (*s).clone()));
            let mut labels = first.metadata.labels.clone().unwrap_or_default();
            labels.remove(MANAGED_BY_LABEL);
            labels.remove(SERVICE_NAME_LABEL);
            let same_labels = labels == endpoints.metadata.labels.clone().unwrap_or_default();
            let same_annotations = mirrored_annotations(endpoints)
                == first.metadata.annotations.clone().unwrap_or_default();
            if same_labels && same_annotations && same_endpoints(first, &desired) {
                return;
            }
            name = first.metadata.name.clone();
        }
        let mut slice = self.new_slice(endpoints, ports.to_vec(), address_type, name);
        while slice.endpoints.len() < self.max_endpoints_per_subset.max(1) {
            let Some(endpoint) = desired.pop() else { break };
            slice.endpoints.push(endpoint);
        }
        if slice.metadata.name.is_some() {
            plan.update.push(slice);
        } else {
            plan.create.push(slice);
        }
    }

    /// A slice mirroring `endpoints`: owned by it, with its labels (and the Service's name
    /// and managing controller) and annotations.
    fn new_slice(
        &self,
        endpoints: &Endpoints,
        ports: Vec<EndpointPort>,
        address_type: &str,
        name: Option<String>,
    ) -> EndpointSlice {
        let endpoints_name = endpoints.metadata.name.clone().unwrap_or_default();
        let mut labels = endpoints.metadata.labels.clone().unwrap_or_default();
        labels.insert(SERVICE_NAME_LABEL.into(), endpoints_name.clone());
        labels.insert(MANAGED_BY_LABEL.into(), self.managed_by.into());
        let annotations = mirrored_annotations(endpoints);
        EndpointSlice {
            metadata: ObjectMeta {
                generate_name: name.is_none().then(|| format!("{endpoints_name}-")),
                name,
                namespace: endpoints.metadata.namespace.clone(),
                labels: Some(labels),
                annotations: (!annotations.is_empty()).then_some(annotations),
                owner_references: Some(vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "Endpoints".into(),
                    name: endpoints_name,
                    uid: endpoints.metadata.uid.clone().unwrap_or_default(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]),
                ..ObjectMeta::default()
            },
            address_type: address_type.to_string(),
            endpoints: Vec::new(),
            ports: Some(ports),
        }
    }
}

/// The Endpoints' annotations a mirrored slice carries: all but the trigger time and kubectl's
/// last applied configuration.
fn mirrored_annotations(endpoints: &Endpoints) -> BTreeMap<String, String> {
    let mut annotations = endpoints.metadata.annotations.clone().unwrap_or_default();
    annotations.remove(LAST_CHANGE_TRIGGER_TIME);
    annotations.remove(LAST_APPLIED);
    annotations
}

/// Whether `slice` holds exactly the `desired` endpoints, each as desired.
fn same_endpoints(slice: &EndpointSlice, desired: &EndpointSet) -> bool {
    let mut matched = 0;
    for endpoint in &slice.endpoints {
        match desired.get(endpoint) {
            Some(wanted) if same_beyond_identity(wanted, endpoint) => matched += 1,
            _ => return false,
        }
    }
    matched == desired.len()
}

/// An Endpoints address as a slice endpoint, with its address type; `None` when it is not
/// an IP address.
fn address_to_endpoint(address: &EndpointAddress, ready: bool) -> Option<(String, Endpoint)> {
    let (v6, ip) = service_pods::canonical_ip(&address.ip)?;
    let endpoint = Endpoint {
        addresses: vec![ip],
        conditions: Some(EndpointConditions { ready: Some(ready), ..Default::default() }),
        target_ref: address.target_ref.clone(),
        node_name: address.node_name.clone().filter(|n| !n.is_empty()),
        hostname: address.hostname.clone().filter(|h| !h.is_empty()),
        ..Endpoint::default()
    };
    Some((if v6 { "IPv6" } else { "IPv4" }.to_string(), endpoint))
}

/// Slices to create take the names of slices to delete of the same address type.
fn recycle(plan: &mut MirrorPlan) {
    let mut i = 0;
    while i < plan.create.len() {
        let address_type = &plan.create[i].address_type;
        match plan.delete.iter().position(|d| &d.address_type == address_type) {
            Some(j) => {
                let doomed = plan.delete.remove(j);
                let mut slice = plan.create.remove(i);
                slice.metadata.name = doomed.metadata.name;
                slice.metadata.generate_name = None;
                plan.update.push(slice);
            }
            None => i += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MIRROR: Mirror = Mirror { max_endpoints_per_subset: 1000, managed_by: "mirror" };

    fn endpoints(value: serde_json::Value) -> Endpoints {
        let mut base = json!({"metadata": {"name": "ext", "namespace": "ns", "uid": "ep-uid",
            "labels": {"team": "a"},
            "annotations": {"note": "x", LAST_APPLIED: "{}", LAST_CHANGE_TRIGGER_TIME: "t"}}});
        base["subsets"] = value;
        serde_json::from_value(base).unwrap()
    }

    fn existing(plan: &MirrorPlan, name: &str) -> Vec<Arc<EndpointSlice>> {
        plan.create
            .iter()
            .chain(&plan.update)
            .map(|s| {
                let mut s = s.clone();
                s.metadata.name = Some(name.to_string());
                s.metadata.generate_name = None;
                Arc::new(s)
            })
            .collect()
    }

    #[test]
    fn endpoints_are_mirrored_into_one_slice_per_address_type_and_ports() {
        let e = endpoints(json!([
            {"addresses": [{"ip": "10.0.0.1", "nodeName": "n1"}, {"ip": "fd00::1"}],
             "notReadyAddresses": [{"ip": "10.0.0.2", "hostname": "h"}, {"ip": "not-an-ip"}],
             "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
        ]));
        let plan = MIRROR.reconcile(&e, &[]);
        assert_eq!((plan.invalid, plan.skipped), (1, 1));
        assert_eq!(plan.create.len(), 2);
        let v4 = plan.create.iter().find(|s| s.address_type == "IPv4").unwrap();
        assert_eq!(
            serde_json::to_value(v4).unwrap(),
            json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {
                    "generateName": "ext-", "namespace": "ns",
                    "labels": {"team": "a", SERVICE_NAME_LABEL: "ext", MANAGED_BY_LABEL: "mirror"},
                    "annotations": {"note": "x"},
                    "ownerReferences": [{"apiVersion": "v1", "kind": "Endpoints", "name": "ext",
                        "uid": "ep-uid", "controller": true, "blockOwnerDeletion": true}],
                },
                "addressType": "IPv4",
                "endpoints": [
                    {"addresses": ["10.0.0.1"], "conditions": {"ready": true}, "nodeName": "n1"},
                    {"addresses": ["10.0.0.2"], "conditions": {"ready": false}, "hostname": "h"},
                ],
                "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
            })
        );
        // Mirrored already: nothing to do.
        let slices = existing(&plan, "ext-v4");
        let v4_only: Vec<_> = slices.into_iter().filter(|s| s.address_type == "IPv4").collect();
        let again = MIRROR.reconcile(&e, &v4_only);
        assert!(again.update.is_empty() && again.delete.is_empty(), "{again:?}");
        assert_eq!(again.create.len(), 1, "the IPv6 slice is still missing");
    }

    #[test]
    fn changes_update_the_slice_in_place_and_new_ports_reuse_the_old_slice() {
        let e = endpoints(
            json!([{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80, "protocol": "TCP"}]}]),
        );
        let first = MIRROR.reconcile(&e, &[]);
        let slices = existing(&first, "ext-abc");
        let e2 = endpoints(
            json!([{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.3"}], "ports": [{"port": 80, "protocol": "TCP"}]}]),
        );
        let plan = MIRROR.reconcile(&e2, &slices);
        assert_eq!(plan.update.len(), 1);
        assert_eq!(plan.update[0].metadata.name.as_deref(), Some("ext-abc"));
        assert_eq!(plan.update[0].endpoints.len(), 2);
        // Other ports: a new group, whose slice takes the old slice's name.
        let e3 = endpoints(
            json!([{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 81, "protocol": "TCP"}]}]),
        );
        let plan = MIRROR.reconcile(&e3, &slices);
        assert!(plan.create.is_empty() && plan.delete.is_empty(), "{plan:?}");
        assert_eq!(plan.update[0].metadata.name.as_deref(), Some("ext-abc"));
        assert_eq!(plan.update[0].ports.as_ref().unwrap()[0].port, Some(81));
        // The labels change: the slice follows.
        let mut e4 = e.clone();
        e4.metadata.labels = Some([("team".to_string(), "b".to_string())].into());
        let plan = MIRROR.reconcile(&e4, &slices);
        assert_eq!(plan.update.len(), 1);
        // No addresses: the slice goes.
        let plan = MIRROR.reconcile(&endpoints(json!([])), &slices);
        assert_eq!(plan.delete.len(), 1);
    }

    #[test]
    fn at_most_the_maximum_per_subset_is_mirrored() {
        let addresses: Vec<_> = (0..5).map(|i| json!({"ip": format!("10.0.0.{i}")})).collect();
        let e = endpoints(json!([{"addresses": addresses, "ports": [{"port": 80}]}]));
        let small = Mirror { max_endpoints_per_subset: 3, managed_by: "mirror" };
        let plan = small.reconcile(&e, &[]);
        assert_eq!(plan.create[0].endpoints.len(), 3);
        assert_eq!((plan.invalid, plan.skipped), (0, 2));
    }
}
