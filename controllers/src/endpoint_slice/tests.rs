//! The reconciler's decisions: endpoints and their conditions, the slices' metadata, packing
//! at most `max_endpoints_per_slice` per slice, minimal churn, ports resolved per pod, the
//! placeholder, hints.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::json;

use super::reconciler::{NodeInfo, Plan, Reconciler};

const R: Reconciler = Reconciler { max_endpoints_per_slice: 100, managed_by: super::MANAGED_BY };

fn merge(a: &mut serde_json::Value, b: serde_json::Value) {
    match (a, b) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

fn service(extra: serde_json::Value) -> Service {
    let mut value = json!({
        "metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid", "labels": {"app": "web"}},
        "spec": {"clusterIP": "10.43.0.5", "ipFamilies": ["IPv4"], "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]},
    });
    merge(&mut value, extra);
    serde_json::from_value(value).unwrap()
}

fn pod(i: usize, ready: bool, extra: serde_json::Value) -> Arc<Pod> {
    let ip = format!("10.0.{}.{}", i / 250, i % 250 + 1);
    let mut value = json!({
        "metadata": {"name": format!("p{i}"), "namespace": "ns", "uid": format!("uid-{i}"), "labels": {"app": "web"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
        "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
    });
    merge(&mut value, extra);
    Arc::new(serde_json::from_value(value).unwrap())
}

fn pods(range: std::ops::Range<usize>) -> Vec<Arc<Pod>> {
    range.map(|i| pod(i, true, json!({}))).collect()
}

fn zone_a(_: &str) -> NodeInfo {
    NodeInfo::Found { zone: Some("zone-a".into()) }
}

/// What the cluster holds after `plan` is carried out on `existing`: creates get names
/// `web-gN`, uids and generations.
fn carry_out(existing: &[Arc<EndpointSlice>], plan: Plan) -> Vec<Arc<EndpointSlice>> {
    let mut by_name: BTreeMap<String, EndpointSlice> =
        existing.iter().map(|s| (s.metadata.name.clone().unwrap(), s.as_ref().clone())).collect();
    for slice in &plan.delete {
        by_name.remove(slice.metadata.name.as_ref().unwrap());
    }
    for slice in plan.update {
        let name = slice.metadata.name.clone().unwrap();
        let mut slice = slice;
        slice.metadata.uid =
            by_name.get(&name).and_then(|s| s.metadata.uid.clone()).or(Some(name.clone()));
        by_name.insert(name, slice);
    }
    for (n, mut slice) in plan.create.into_iter().enumerate() {
        let name = format!("web-g{}{n}", by_name.len());
        slice.metadata.name = Some(name.clone());
        slice.metadata.uid = Some(name.clone());
        by_name.insert(name, slice);
    }
    by_name.into_values().map(Arc::new).collect()
}

fn sizes(slices: &[Arc<EndpointSlice>]) -> Vec<usize> {
    let mut sizes: Vec<usize> = slices.iter().map(|s| s.endpoints.len()).collect();
    sizes.sort_unstable();
    sizes
}

#[test]
fn a_pod_is_an_endpoint_with_its_conditions_node_zone_and_target() {
    let svc = service(json!({}));
    let going = json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}});
    let all = vec![pod(0, true, json!({})), pod(1, false, json!({})), pod(2, true, going.clone())];
    let plan = R.reconcile(&svc, &all, &zone_a, &[], None);
    assert_eq!(plan.create.len(), 1);
    let slice = serde_json::to_value(&plan.create[0]).unwrap();
    assert_eq!(
        slice["endpoints"],
        json!([
            {"addresses": ["10.0.0.1"], "conditions": {"ready": true, "serving": true, "terminating": false},
             "nodeName": "n1", "targetRef": {"kind": "Pod", "name": "p0", "namespace": "ns", "uid": "uid-0"},
             "zone": "zone-a"},
            {"addresses": ["10.0.0.2"], "conditions": {"ready": false, "serving": false, "terminating": false},
             "nodeName": "n1", "targetRef": {"kind": "Pod", "name": "p1", "namespace": "ns", "uid": "uid-1"},
             "zone": "zone-a"},
            {"addresses": ["10.0.0.3"], "conditions": {"ready": false, "serving": true, "terminating": true},
             "nodeName": "n1", "targetRef": {"kind": "Pod", "name": "p2", "namespace": "ns", "uid": "uid-2"},
             "zone": "zone-a"},
        ])
    );
    // publishNotReadyAddresses: every endpoint ready, terminating or not.
    let publish = service(json!({"spec": {"publishNotReadyAddresses": true}}));
    let plan = R.reconcile(&publish, &all, &zone_a, &[], None);
    let ready: Vec<Option<bool>> =
        plan.create[0].endpoints.iter().map(|e| e.conditions.as_ref().unwrap().ready).collect();
    assert_eq!(ready, [Some(true); 3]);
    // Hostnames under the governing Service only; pods without an IP or done are left out.
    let with_hostname = pod(3, true, json!({"spec": {"hostname": "web-3", "subdomain": "web"}}));
    let done = pod(4, true, json!({"status": {"phase": "Failed"}}));
    let plan = R.reconcile(&svc, &[with_hostname, done], &zone_a, &[], None);
    assert_eq!(plan.create[0].endpoints.len(), 1);
    assert_eq!(plan.create[0].endpoints[0].hostname.as_deref(), Some("web-3"));
}

#[test]
fn new_slices_are_named_labelled_owned_and_annotated_as_upstream() {
    let svc = service(json!({"metadata": {"labels": {
        "tier": "front", "endpointslice.kubernetes.io/managed-by": "someone"}}}));
    let trigger = "2024-01-01T00:00:00Z".parse().ok();
    let plan = R.reconcile(&svc, &pods(0..1), &zone_a, &[], trigger);
    let mut slice = serde_json::to_value(&plan.create[0]).unwrap();
    slice["endpoints"] = json!("...");
    assert_eq!(
        slice,
        json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {
                "generateName": "web-",
                "namespace": "ns",
                "labels": {"app": "web", "tier": "front",
                    "kubernetes.io/service-name": "web",
                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
                "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": "2024-01-01T00:00:00Z"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "svc-uid",
                    "controller": true, "blockOwnerDeletion": true}],
            },
            "addressType": "IPv4",
            "endpoints": "...",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        })
    );
    let headless = service(json!({"spec": {"clusterIP": "None"}}));
    let plan = R.reconcile(&headless, &pods(0..1), &zone_a, &[], None);
    let labels = plan.create[0].metadata.labels.clone().unwrap();
    assert_eq!(labels.get("service.kubernetes.io/headless").map(String::as_str), Some(""));
    assert!(plan.create[0].metadata.annotations.is_none(), "no trigger time, no annotation");
}

#[test]
fn slices_hold_at_most_the_maximum_per_address_family() {
    let svc = service(json!({}));
    let plan = R.reconcile(&svc, &pods(0..250), &zone_a, &[], None);
    assert_eq!(plan.create.len(), 3);
    let slices = carry_out(&[], plan);
    assert_eq!(sizes(&slices), [50, 100, 100]);
    // Dual-stack: one set of slices per family, each pod in both.
    let dual = service(json!({"spec": {"ipFamilies": ["IPv4", "IPv6"]}}));
    let both = |i: usize| {
        let v4 = format!("10.0.0.{}", i + 1);
        let v6 = format!("fd00::{}", i + 1);
        pod(i, true, json!({"status": {"podIPs": [{"ip": v4}, {"ip": v6}]}}))
    };
    let plan = R.reconcile(&dual, &[both(0), both(1)], &zone_a, &[], None);
    let mut types: Vec<(&str, usize)> =
        plan.create.iter().map(|s| (s.address_type.as_str(), s.endpoints.len())).collect();
    types.sort();
    assert_eq!(types, [("IPv4", 2), ("IPv6", 2)]);
    assert_eq!(plan.create[1].endpoints[0].addresses, ["fd00::1"]);
}

#[test]
fn changes_touch_as_few_slices_as_they_can() {
    let svc = service(json!({}));
    let slices = carry_out(&[], R.reconcile(&svc, &pods(0..150), &zone_a, &[], None));
    assert_eq!(sizes(&slices), [50, 100]);
    // Nothing changed: nothing to write.
    let plan = R.reconcile(&svc, &pods(0..150), &zone_a, &slices, None);
    assert!(plan.create.is_empty() && plan.update.is_empty() && plan.delete.is_empty(), "{plan:?}");
    // 30 more pods: into the half-full slice, no new slice.
    let plan = R.reconcile(&svc, &pods(0..180), &zone_a, &slices, None);
    assert!(plan.create.is_empty() && plan.delete.is_empty());
    assert_eq!(plan.update.len(), 1);
    assert_eq!(plan.update[0].endpoints.len(), 80);
    let slices = carry_out(&slices, plan);
    // One pod of the full slice turns not ready: that slice alone is updated.
    let mut changed = pods(0..180);
    let full = slices.iter().find(|s| s.endpoints.len() == 100).unwrap();
    let victim: usize =
        full.endpoints[7].target_ref.as_ref().unwrap().name.as_ref().unwrap()[1..].parse().unwrap();
    changed[victim] = pod(victim, false, json!({}));
    let plan = R.reconcile(&svc, &changed, &zone_a, &slices, None);
    assert_eq!(plan.update.len(), 1, "{plan:?}");
    assert_eq!(plan.update[0].metadata.name, full.metadata.name);
    assert!(plan.create.is_empty() && plan.delete.is_empty());
    // A pod of the full slice goes and 5 come: the updated slice is filled first (back to
    // 100), the other 4 go to the unchanged slice that fits them best.
    let mut next: Vec<Arc<Pod>> = pods(0..185);
    next.remove(victim);
    let plan = R.reconcile(&svc, &next, &zone_a, &slices, None);
    assert!(plan.create.is_empty() && plan.delete.is_empty(), "{plan:?}");
    assert_eq!(plan.update.len(), 2);
    let slices = carry_out(&slices, plan);
    assert_eq!(sizes(&slices), [84, 100]);
    // Every pod of the smaller slice goes: it is deleted, the other one left alone.
    let small = slices.iter().find(|s| s.endpoints.len() == 84).unwrap();
    let keep: Vec<Arc<Pod>> = next
        .iter()
        .filter(|p| {
            !small.endpoints.iter().any(|e| e.target_ref.as_ref().unwrap().name == p.metadata.name)
        })
        .cloned()
        .collect();
    let plan = R.reconcile(&svc, &keep, &zone_a, &slices, None);
    assert_eq!(plan.delete.len(), 1);
    assert_eq!(plan.delete[0].metadata.name, small.metadata.name);
    assert!(plan.create.is_empty() && plan.update.is_empty());
}

#[test]
fn named_ports_resolved_differently_go_to_different_slices() {
    let svc = service(json!({}));
    let other_port = |i: usize| {
        pod(
            i,
            true,
            json!({"spec": {"containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 9090}]}]}}),
        )
    };
    let no_port = pod(9, true, json!({"spec": {"containers": [{"name": "c"}]}}));
    let all = vec![pod(0, true, json!({})), other_port(1), other_port(2), no_port];
    let plan = R.reconcile(&svc, &all, &zone_a, &[], None);
    let mut groups: Vec<(Vec<Option<i32>>, usize)> = plan
        .create
        .iter()
        .map(|s| (s.ports.iter().flatten().map(|p| p.port).collect(), s.endpoints.len()))
        .collect();
    groups.sort();
    // The pod without the port gets a slice without ports, as upstream.
    assert_eq!(groups, [(vec![], 1), (vec![Some(8080)], 1), (vec![Some(9090)], 2)]);
}

#[test]
fn a_service_without_endpoints_keeps_one_placeholder() {
    let svc = service(json!({}));
    let plan = R.reconcile(&svc, &[], &zone_a, &[], None);
    assert_eq!(plan.create.len(), 1);
    assert!(plan.create[0].endpoints.is_empty());
    assert_eq!(plan.create[0].ports.as_deref(), Some(&[][..]));
    let slices = carry_out(&[], plan);
    // Already there: kept.
    let plan = R.reconcile(&svc, &[], &zone_a, &slices, None);
    assert!(plan.create.is_empty() && plan.update.is_empty() && plan.delete.is_empty());
    // Pods come: the placeholder becomes their slice (an update, not a delete and a create).
    let plan = R.reconcile(&svc, &pods(0..2), &zone_a, &slices, None);
    assert!(plan.create.is_empty() && plan.delete.is_empty(), "{plan:?}");
    assert_eq!(plan.update[0].metadata.name, slices[0].metadata.name);
    assert_eq!(plan.update[0].endpoints.len(), 2);
    let slices = carry_out(&slices, plan);
    // They go: back to a placeholder, in the same slice.
    let plan = R.reconcile(&svc, &[], &zone_a, &slices, None);
    assert!(plan.create.is_empty() && plan.delete.is_empty(), "{plan:?}");
    assert_eq!(plan.update.len(), 1);
    assert!(plan.update[0].endpoints.is_empty());
}

#[test]
fn foreign_stale_and_unsupported_slices_go() {
    let svc = service(json!({}));
    let slices = carry_out(&[], R.reconcile(&svc, &pods(0..3), &zone_a, &[], None));
    // The Service was made again (another uid): its old slices are not its own.
    let again = service(json!({"metadata": {"uid": "other"}}));
    let plan = R.reconcile(&again, &pods(0..3), &zone_a, &slices, None);
    assert_eq!(plan.delete.len(), 1);
    assert_eq!(plan.create.len(), 1);
    // A slice of a family the Service no longer has.
    let mut v6 = slices[0].as_ref().clone();
    v6.address_type = "IPv6".into();
    v6.metadata.name = Some("web-v6".into());
    let mut with_v6 = slices.clone();
    with_v6.push(Arc::new(v6));
    let plan = R.reconcile(&svc, &pods(0..3), &zone_a, &with_v6, None);
    assert_eq!(plan.delete.len(), 1);
    assert_eq!(plan.delete[0].metadata.name.as_deref(), Some("web-v6"));
    assert!(plan.update.is_empty() && plan.create.is_empty());
    // The Service's labels change: the slices follow, their endpoints untouched.
    let relabelled = service(json!({"metadata": {"labels": {"app": "web", "v": "2"}}}));
    let plan = R.reconcile(&relabelled, &pods(0..3), &zone_a, &slices, None);
    assert_eq!(plan.update.len(), 1);
    assert_eq!(
        plan.update[0].metadata.labels.as_ref().unwrap().get("v").map(String::as_str),
        Some("2")
    );
    assert_eq!(plan.update[0].endpoints, slices[0].endpoints);
}

#[test]
fn pods_on_unknown_nodes_wait_unless_every_address_is_published() {
    let svc = service(json!({}));
    let missing = |_: &str| NodeInfo::Missing;
    let plan = R.reconcile(&svc, &pods(0..2), &missing, &[], None);
    assert_eq!(plan.skipped.len(), 2);
    assert!(plan.skipped[0].contains("Node n1 Not Found"), "{:?}", plan.skipped);
    assert!(plan.create[0].endpoints.is_empty(), "a placeholder meanwhile");
    let publish = service(json!({"spec": {"publishNotReadyAddresses": true}}));
    let plan = R.reconcile(&publish, &pods(0..2), &missing, &[], None);
    assert!(plan.skipped.is_empty());
    assert_eq!(plan.create[0].endpoints.len(), 2);
    assert!(plan.create[0].endpoints[0].zone.is_none());
}

#[test]
fn prefer_close_hints_each_ready_endpoint_to_its_zone() {
    let svc = service(json!({"spec": {"trafficDistribution": "PreferClose"}}));
    let all = vec![pod(0, true, json!({})), pod(1, false, json!({}))];
    let plan = R.reconcile(&svc, &all, &zone_a, &[], None);
    let hints: Vec<serde_json::Value> =
        plan.create[0].endpoints.iter().map(|e| serde_json::to_value(&e.hints).unwrap()).collect();
    assert_eq!(hints, [json!({"forZones": [{"name": "zone-a"}]}), json!(null)]);
    // Without it, existing hints are removed.
    let slices = carry_out(&[], plan);
    let plan = R.reconcile(&service(json!({})), &all, &zone_a, &slices, None);
    assert_eq!(plan.update.len(), 1);
    assert!(plan.update[0].endpoints.iter().all(|e| e.hints.is_none()));
}
