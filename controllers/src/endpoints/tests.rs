use super::*;
use serde_json::json;

fn service(spec: serde_json::Value) -> Service {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid", "labels": {"app": "web"},
            "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": spec,
    }))
    .unwrap()
}

fn pod(name: &str, ip: &str, ready: bool, extra: serde_json::Value) -> Arc<Pod> {
    let mut value = json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("{name}-uid"), "labels": {"app": "web"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
        "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
    });
    merge(&mut value, extra);
    Arc::new(serde_json::from_value(value).unwrap())
}

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

const PORTS: &str = r#"{"clusterIP": "10.43.0.5", "ipFamilies": ["IPv4"], "selector": {"app": "web"},
    "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]}"#;

fn spec(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn ready_pods_are_addresses_and_the_others_not_ready_addresses() {
    let svc = service(spec(PORTS));
    let pods = vec![
        pod("b", "10.0.0.2", true, json!({})),
        pod("a", "10.0.0.1", true, json!({})),
        pod("c", "10.0.0.3", false, json!({})),
        // Terminating: left out (the Service does not publish not-ready addresses).
        pod(
            "d",
            "10.0.0.4",
            true,
            json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}}),
        ),
        // Done, or without an IP: left out.
        pod("e", "10.0.0.5", false, json!({"status": {"phase": "Succeeded"}})),
        pod("f", "", false, json!({"status": {"podIPs": []}})),
    ];
    let subsets = desired_subsets(&svc, &pods);
    assert_eq!(
        serde_json::to_value(&subsets).unwrap(),
        json!([{
            "addresses": [
                {"ip": "10.0.0.1", "nodeName": "n1", "targetRef": {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "a-uid"}},
                {"ip": "10.0.0.2", "nodeName": "n1", "targetRef": {"kind": "Pod", "namespace": "ns", "name": "b", "uid": "b-uid"}},
            ],
            "notReadyAddresses": [
                {"ip": "10.0.0.3", "nodeName": "n1", "targetRef": {"kind": "Pod", "namespace": "ns", "name": "c", "uid": "c-uid"}},
            ],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        }])
    );
    // Publishing not-ready addresses: every pod ready, terminating ones included.
    let mut publish = spec(PORTS);
    publish["publishNotReadyAddresses"] = json!(true);
    let subsets = desired_subsets(&service(publish), &pods);
    assert_eq!(subsets.len(), 1);
    let ips: Vec<&str> = subsets[0].addresses.iter().flatten().map(|a| a.ip.as_str()).collect();
    assert_eq!(ips, ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]);
    assert!(subsets[0].not_ready_addresses.is_none());
}

#[test]
fn pods_without_the_named_port_are_left_out_and_hostnames_kept() {
    let svc = service(spec(PORTS));
    let pods = vec![
        pod("a", "10.0.0.1", true, json!({"spec": {"hostname": "a", "subdomain": "web"}})),
        pod("b", "10.0.0.2", true, json!({"spec": {"containers": [{"name": "c"}]}})),
    ];
    let subsets = desired_subsets(&svc, &pods);
    assert_eq!(subsets.len(), 1);
    let addresses = subsets[0].addresses.as_ref().unwrap();
    assert_eq!(addresses.len(), 1);
    assert_eq!(addresses[0].hostname.as_deref(), Some("a"));
    // A headless Service without ports lists every pod, without ports.
    let headless = service(json!({"clusterIP": "None", "selector": {"app": "web"}}));
    let subsets = desired_subsets(&headless, &pods);
    assert_eq!(subsets.len(), 1);
    assert!(subsets[0].ports.is_none());
    assert_eq!(subsets[0].addresses.as_ref().unwrap().len(), 2);
}

#[test]
fn the_object_carries_labels_annotations_and_is_only_written_when_it_changes() {
    let svc = service(spec(PORTS));
    let pods = vec![pod("a", "10.0.0.1", true, json!({}))];
    let trigger = "2024-01-01T00:00:00Z".parse().ok();
    let new = endpoints_to_write(None, &svc, desired_subsets(&svc, &pods), trigger).unwrap();
    assert_eq!(new.metadata.name.as_deref(), Some("web"));
    assert_eq!(new.metadata.namespace.as_deref(), Some("ns"));
    assert_eq!(new.metadata.labels, Some([("app".to_string(), "web".to_string())].into()));
    assert_eq!(
        new.metadata.annotations,
        Some([(LAST_CHANGE_TRIGGER_TIME.to_string(), "2024-01-01T00:00:00Z".to_string())].into())
    );
    assert!(new.metadata.owner_references.is_none());
    // The same again: nothing to write, whatever the trigger time.
    assert!(endpoints_to_write(Some(&new), &svc, desired_subsets(&svc, &pods), None).is_none());
    // The pod turns not ready: written, without a trigger time if none is given.
    let pods = vec![pod("a", "10.0.0.1", false, json!({}))];
    let next = endpoints_to_write(Some(&new), &svc, desired_subsets(&svc, &pods), None).unwrap();
    assert!(next.subsets.as_ref().unwrap()[0].addresses.is_none());
    assert_eq!(next.subsets.as_ref().unwrap()[0].not_ready_addresses.as_ref().unwrap().len(), 1);
    assert!(next.metadata.annotations.is_none());
    // The Service's labels change: written.
    let mut relabelled = svc.clone();
    relabelled.metadata.labels = Some([("tier".to_string(), "front".to_string())].into());
    let next =
        endpoints_to_write(Some(&new), &relabelled, desired_subsets(&svc, &[]), None).unwrap();
    assert_eq!(next.metadata.labels, Some([("tier".to_string(), "front".to_string())].into()));
    assert!(next.subsets.is_none(), "no pods: no subsets");
}

#[test]
fn headless_services_get_the_headless_label() {
    let svc =
        service(json!({"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80}]}));
    let new = endpoints_to_write(None, &svc, Vec::new(), None).unwrap();
    let labels = new.metadata.labels.clone().unwrap();
    assert_eq!(labels.get(HEADLESS_LABEL).map(String::as_str), Some(""));
    // The label alone is no difference to the Service's labels.
    assert!(endpoints_to_write(Some(&new), &svc, Vec::new(), None).is_none());
}

#[test]
fn more_than_1000_addresses_are_truncated_and_annotated() {
    let svc = service(spec(PORTS));
    let pods: Vec<Arc<Pod>> = (0..1100)
        .map(|i| pod(&format!("p{i}"), &format!("10.0.{}.{}", i / 250, i % 250), true, json!({})))
        .collect();
    let subsets = desired_subsets(&svc, &pods);
    let new = endpoints_to_write(None, &svc, subsets.clone(), None).unwrap();
    assert_eq!(subsets::count(new.subsets.as_deref().unwrap()), 1000);
    assert_eq!(
        new.metadata.annotations.as_ref().unwrap().get(OVER_CAPACITY).map(String::as_str),
        Some("truncated")
    );
    // The same truncated object again is no change.
    assert!(endpoints_to_write(Some(&new), &svc, subsets, None).is_none());
    // Back under capacity: the annotation goes.
    let fewer = desired_subsets(&svc, &pods[..10]);
    let next = endpoints_to_write(Some(&new), &svc, fewer, None).unwrap();
    assert!(next.metadata.annotations.is_none());
}
