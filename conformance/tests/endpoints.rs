//! The endpoint controllers as a user sees them through stock kubectl: a Deployment exposed
//! with `kubectl expose` gets Endpoints and EndpointSlices with its pods' IPs, which follow
//! scaling and readiness and go with the Service; `kubectl get endpoints,endpointslices`
//! prints upstream's columns. On simulated nodes: slices of at most
//! `--max-endpoints-per-slice`, zones from the nodes' labels, named ports resolved per pod,
//! headless Services. Without a node: a selector-less Service's hand-written Endpoints are
//! mirrored into an EndpointSlice, and `--controllers` turns the controllers off.

use std::collections::BTreeSet;
use std::time::Duration;

use rkube_conformance::cluster::{jsonpath, RkubeServer};
use rkube_conformance::node::{assert_route_is_local, NodeServer, SimulatedNodes};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(90);
const SERVICE_NAME: &str = "kubernetes.io/service-name";
const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";

/// The EndpointSlices of Service `service` in `namespace`.
fn slices(s: &RkubeServer, namespace: &str, service: &str) -> Vec<Value> {
    let selector = format!("{SERVICE_NAME}={service}");
    let out = s.ok(&["get", "endpointslices", "-n", namespace, "-l", &selector, "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("a list");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The Endpoints object `name` in `namespace`, if there is one.
fn endpoints(s: &RkubeServer, namespace: &str, name: &str) -> Option<Value> {
    let out = s.kubectl(&["get", "endpoints", name, "-n", namespace, "-o", "json"]);
    out.status.success().then(|| serde_json::from_slice(&out.stdout).expect("an object"))
}

/// The IPs of the addresses (`addresses` or `notReadyAddresses`) of every subset.
fn ips(endpoints: &Value, field: &str) -> BTreeSet<String> {
    let subsets = endpoints["subsets"].as_array().cloned().unwrap_or_default();
    subsets
        .iter()
        .flat_map(|s| s[field].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a["ip"].as_str().map(str::to_string))
        .collect()
}

/// `ip -> (ready, serving, terminating)` over every endpoint of `slices`.
fn slice_endpoints(slices: &[Value]) -> Vec<(String, Value)> {
    let mut all: Vec<(String, Value)> = slices
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .map(|e| (e["addresses"][0].as_str().unwrap_or("").to_string(), e))
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

/// The IPs of the Ready pods labelled `app=<app>` in `namespace`, checked to be local.
fn ready_pod_ips(s: &RkubeServer, namespace: &str, app: &str) -> BTreeSet<String> {
    let path = "{range .items[*]}{.status.podIP} {.status.conditions[?(@.type==\"Ready\")].status} {.metadata.deletionTimestamp}{\"\\n\"}{end}";
    let selector = format!("app={app}");
    let out = s.ok(&["get", "pods", "-n", namespace, "-l", &selector, "-o", &jsonpath(path)]);
    out.lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.split(' ').collect();
            (fields.len() == 3
                && fields[1] == "True"
                && fields[2].is_empty()
                && !fields[0].is_empty())
            .then(|| fields[0].to_string())
        })
        .collect()
}

/// The rows of a `kubectl get` table, split on runs of spaces.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

fn sorted_join(ips: &BTreeSet<String>, suffix: &str) -> String {
    ips.iter().map(|ip| format!("{ip}{suffix}")).collect::<Vec<_>>().join(",")
}

const WEB: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: app
        image: "busybox:1.36"
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "touch /tmp/ready; exec httpd -f -p 8080 -h /var/www"]
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {exec: {command: ["cat", "/tmp/ready"]}, periodSeconds: 1, failureThreshold: 1}
"#;

#[test]
fn an_exposed_deployment_gets_endpoints_and_slices_that_follow_its_pods() {
    let n = NodeServer::start();
    let s = &n.server;
    s.ok(&["create", "namespace", "shop"]);
    s.ok_stdin(&["apply", "-f", "-"], WEB);
    s.ok(&["expose", "deployment", "web", "-n", "shop", "--port=80", "--target-port=http"]);

    let pods = s.wait_until("two Ready pods", WAIT, || {
        let ips = ready_pod_ips(s, "shop", "web");
        (ips.len() == 2, format!("{ips:?}"))
    });
    let pod_ips = ready_pod_ips(s, "shop", "web");
    for ip in &pod_ips {
        assert_route_is_local(ip);
    }
    let _ = pods;

    // Endpoints: the pods' IPs with the named target port resolved, the Service's labels; no
    // owner.
    s.wait_until("Endpoints with both pods", WAIT, || {
        let e = endpoints(s, "shop", "web");
        let seen = e.as_ref().map(|e| ips(e, "addresses")).unwrap_or_default();
        (seen == pod_ips, format!("{e:#?}"))
    });
    let e = endpoints(s, "shop", "web").unwrap();
    assert_eq!(e["subsets"].as_array().unwrap().len(), 1, "{e:#}");
    assert_eq!(e["subsets"][0]["ports"], serde_json::json!([{"port": 8080, "protocol": "TCP"}]));
    let address = &e["subsets"][0]["addresses"][0];
    assert_eq!(address["nodeName"], n.node.as_str());
    assert_eq!(address["targetRef"]["kind"], "Pod");
    assert_eq!(e["metadata"]["labels"], serde_json::json!({"app": "web"}));
    assert!(e["metadata"].get("ownerReferences").is_none());

    // EndpointSlices: one, generated name, owned by the Service, labelled, each pod ready.
    s.wait_until("a slice with both pods", WAIT, || {
        let all = slices(s, "shop", "web");
        let seen: BTreeSet<String> = slice_endpoints(&all).into_iter().map(|(ip, _)| ip).collect();
        (seen == pod_ips, format!("{all:#?}"))
    });
    let all = slices(s, "shop", "web");
    assert_eq!(all.len(), 1, "{all:#?}");
    let slice = &all[0];
    let name = slice["metadata"]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("web-") && name.len() == "web-".len() + 5, "{name}");
    assert_eq!(slice["metadata"]["generateName"], "web-");
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(slice["ports"], serde_json::json!([{"name": "", "port": 8080, "protocol": "TCP"}]));
    assert_eq!(slice["metadata"]["labels"][MANAGED_BY], "endpointslice-controller.k8s.io");
    assert_eq!(slice["metadata"]["labels"]["app"], "web");
    let owner = &slice["metadata"]["ownerReferences"][0];
    assert_eq!((owner["kind"].as_str(), owner["name"].as_str()), (Some("Service"), Some("web")));
    assert_eq!(owner["controller"], true);
    for (_, endpoint) in slice_endpoints(&all) {
        assert_eq!(
            endpoint["conditions"],
            serde_json::json!({"ready": true, "serving": true, "terminating": false})
        );
        assert_eq!(endpoint["nodeName"], n.node.as_str());
        assert_eq!(endpoint["targetRef"]["kind"], "Pod");
        assert_eq!(endpoint["targetRef"]["namespace"], "shop");
    }

    // kubectl's tables: upstream's columns.
    let table = rows(&s.ok(&["get", "endpoints,endpointslices", "-n", "shop"]));
    assert_eq!(table[0], ["NAME", "ENDPOINTS", "AGE"], "{table:?}");
    assert_eq!(table[1][..2], ["endpoints/web".to_string(), sorted_join(&pod_ips, ":8080")]);
    assert_eq!(table[2], ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"], "{table:?}");
    // In the slice's own order.
    let slice_ips: Vec<&str> = all[0]["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["addresses"][0].as_str().unwrap())
        .collect();
    assert_eq!(
        table[3][..4],
        [
            format!("endpointslice.discovery.k8s.io/{name}"),
            "IPv4".into(),
            "8080".into(),
            slice_ips.join(",")
        ]
    );

    // Scaled up and down: both follow; the slice is updated in place.
    s.ok(&["scale", "deployment", "web", "-n", "shop", "--replicas=3"]);
    let check_follow = |count: usize| {
        s.wait_until(&format!("endpoints and slices with {count} pods"), WAIT, || {
            let pods = ready_pod_ips(s, "shop", "web");
            let e = endpoints(s, "shop", "web").map(|e| ips(&e, "addresses")).unwrap_or_default();
            let all = slices(s, "shop", "web");
            let sliced: BTreeSet<String> =
                slice_endpoints(&all).into_iter().map(|(ip, _)| ip).collect();
            let done = pods.len() == count && e == pods && sliced == pods;
            (done, format!("pods {pods:?}\nendpoints {e:?}\nslices {all:#?}"))
        });
    };
    check_follow(3);
    s.ok(&["scale", "deployment", "web", "-n", "shop", "--replicas=2"]);
    check_follow(2);
    let all = slices(s, "shop", "web");
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["metadata"]["name"], name.as_str(), "the same slice throughout");

    // A pod turns not ready: a not-ready address, and not ready nor serving in its slice.
    let pod_ips = ready_pod_ips(s, "shop", "web");
    let path = "{range .items[*]}{.metadata.name} {.status.podIP}{\"\\n\"}{end}";
    let listing = s.ok(&["get", "pods", "-n", "shop", "-l", "app=web", "-o", &jsonpath(path)]);
    let (victim, victim_ip) = listing
        .lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(_, ip)| pod_ips.contains(*ip))
        .map(|(n, ip)| (n.to_string(), ip.to_string()))
        .expect("a ready pod");
    s.ok(&["exec", "-n", "shop", &victim, "--", "rm", "/tmp/ready"]);
    s.wait_until("the pod's address not ready", WAIT, || {
        let e = endpoints(s, "shop", "web").unwrap_or_default();
        let not_ready = ips(&e, "notReadyAddresses");
        let ready = ips(&e, "addresses");
        let done = not_ready == BTreeSet::from([victim_ip.clone()])
            && !ready.contains(&victim_ip)
            && ready.len() == 1;
        (done, format!("{e:#}"))
    });
    s.wait_until("the pod's endpoint not ready in its slice", WAIT, || {
        let all = slices(s, "shop", "web");
        let endpoint = slice_endpoints(&all).into_iter().find(|(ip, _)| *ip == victim_ip);
        let conditions = endpoint.as_ref().map(|(_, e)| e["conditions"].clone());
        let want = serde_json::json!({"ready": false, "serving": false, "terminating": false});
        (conditions.as_ref() == Some(&want), format!("{all:#?}"))
    });
    // Both carry the time of the change that caused the write: the pod's readiness change
    // (or a later pod change written with it), in RFC 3339.
    let path = "{.status.conditions[?(@.type==\"Ready\")].lastTransitionTime}";
    let changed_at = s.ok(&["get", "pod", &victim, "-n", "shop", "-o", &jsonpath(path)]);
    let changed_at = changed_at.trim();
    const TRIGGER: &str = "endpoints.kubernetes.io/last-change-trigger-time";
    let e = endpoints(s, "shop", "web").unwrap();
    let all = slices(s, "shop", "web");
    for (what, meta) in [("Endpoints", &e["metadata"]), ("slice", &all[0]["metadata"])] {
        let at = meta["annotations"][TRIGGER].as_str().unwrap_or("");
        let valid = at.len() == changed_at.len() && at.ends_with('Z') && at >= changed_at;
        assert!(valid, "{what}: trigger time {at:?}, the pod turned not ready at {changed_at}");
    }
    let table = rows(&s.ok(&["get", "endpoints", "web", "-n", "shop"]));
    let ready_ip = ips(&endpoints(s, "shop", "web").unwrap(), "addresses");
    assert_eq!(table[1][1], sorted_join(&ready_ip, ":8080"), "only ready addresses are listed");

    // The Service goes: so do its Endpoints and slices.
    s.ok(&["delete", "service", "web", "-n", "shop"]);
    s.wait_until("Endpoints and slices gone", WAIT, || {
        let e = endpoints(s, "shop", "web");
        let all = slices(s, "shop", "web");
        (e.is_none() && all.is_empty(), format!("{e:?}\n{all:#?}"))
    });
}

#[test]
fn slices_are_packed_zoned_and_split_by_resolved_ports_on_simulated_nodes() {
    let s = RkubeServer::start_with(&["--max-endpoints-per-slice", "5"]);
    let nodes = SimulatedNodes::start(&s, 2, &[]);
    nodes.wait_ready(&s, 2, WAIT);
    s.ok(&["label", "node", "sim-0000", "topology.kubernetes.io/zone=zone-a"]);
    s.ok(&["label", "node", "sim-0001", "topology.kubernetes.io/zone=zone-b"]);
    // Two Deployments behind one Service, whose named target port resolves differently.
    let manifest = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: api-a}
spec:
  replicas: 8
  selector: {matchLabels: {app: api, v: a}}
  template:
    metadata: {labels: {app: api, v: a}}
    spec:
      containers:
      - {name: app, image: "busybox:1.36", ports: [{name: http, containerPort: 8080}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api-b}
spec:
  replicas: 4
  selector: {matchLabels: {app: api, v: b}}
  template:
    metadata: {labels: {app: api, v: b}}
    spec:
      containers:
      - {name: app, image: "busybox:1.36", ports: [{name: http, containerPort: 9090}]}
---
apiVersion: v1
kind: Service
metadata: {name: api}
spec:
  selector: {app: api}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: api-headless}
spec:
  clusterIP: None
  selector: {app: api}
  ports: [{port: 80, targetPort: http}]
"#;
    s.ok_stdin(&["apply", "-f", "-"], manifest);
    // 8 pods on 8080 in slices of at most 5 (two of them), 4 on 9090 (4): three slices.
    let seen = s.wait_until("three slices for 12 pods", WAIT, || {
        let all = slices(&s, "default", "api");
        let mut shape: Vec<(i64, usize)> = all
            .iter()
            .map(|sl| {
                let port = sl["ports"][0]["port"].as_i64().unwrap_or(0);
                (port, sl["endpoints"].as_array().map_or(0, Vec::len))
            })
            .collect();
        shape.sort();
        // 5 + 3 or 4 + 4 for 8080, by the batches the pods arrive in: upstream's reconciler
        // puts new endpoints into an existing slice only when they all fit.
        let fits =
            matches!(shape.as_slice(), [(8080, a), (8080, b), (9090, 4)] if a + b == 8 && *b <= 5);
        (fits, format!("{shape:?}"))
    });
    let _ = seen;
    // Each endpoint's zone is its node's.
    let path = "{range .items[*]}{.status.podIP} {.spec.nodeName}{\"\\n\"}{end}";
    let placed = s.ok(&["get", "pods", "-l", "app=api", "-o", &jsonpath(path)]);
    let node_of: std::collections::BTreeMap<String, String> = placed
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(ip, node)| (ip.to_string(), node.to_string()))
        .collect();
    for (ip, endpoint) in slice_endpoints(&slices(&s, "default", "api")) {
        let node = &node_of[&ip];
        let zone = if node == "sim-0000" { "zone-a" } else { "zone-b" };
        assert_eq!(
            (endpoint["nodeName"].as_str(), endpoint["zone"].as_str()),
            (Some(node.as_str()), Some(zone))
        );
    }
    // The Endpoints object: one subset per port.
    let e = endpoints(&s, "default", "api").expect("Endpoints api");
    let mut subsets: Vec<(i64, usize)> = e["subsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|sub| {
            (sub["ports"][0]["port"].as_i64().unwrap(), sub["addresses"].as_array().unwrap().len())
        })
        .collect();
    subsets.sort();
    assert_eq!(subsets, [(8080, 8), (9090, 4)]);
    // The headless Service's are marked so.
    s.wait_until("the headless Service's endpoints", WAIT, || {
        let e = endpoints(&s, "default", "api-headless");
        let all = slices(&s, "default", "api-headless");
        let label = |v: &Value| v["metadata"]["labels"]["service.kubernetes.io/headless"] == "";
        let done = e.as_ref().is_some_and(label) && !all.is_empty() && all.iter().all(label);
        (done, format!("{e:#?}\n{all:#?}"))
    });

    // Scaled down to 2 + 1: the slices shrink in place (a slice is only deleted once empty;
    // like upstream, they are not merged), no new slice is made.
    let before: BTreeSet<String> = slices(&s, "default", "api")
        .iter()
        .map(|sl| sl["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    s.ok(&["scale", "deployment", "api-a", "--replicas=2"]);
    s.ok(&["scale", "deployment", "api-b", "--replicas=1"]);
    let per_port = |all: &[Value]| {
        let mut counts = std::collections::BTreeMap::new();
        for sl in all {
            let port = sl["ports"][0]["port"].as_i64().unwrap_or(0);
            *counts.entry(port).or_insert(0) += sl["endpoints"].as_array().map_or(0, Vec::len);
        }
        counts.into_iter().collect::<Vec<(i64, usize)>>()
    };
    s.wait_until("slices for 3 pods", WAIT, || {
        let all = slices(&s, "default", "api");
        (per_port(&all) == [(8080, 2), (9090, 1)], format!("{all:#?}"))
    });
    let after: BTreeSet<String> = slices(&s, "default", "api")
        .iter()
        .map(|sl| sl["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(after.is_subset(&before), "no new slice: {before:?} -> {after:?}");

    // Without pods: one empty placeholder slice and an Endpoints object without subsets.
    s.ok(&["scale", "deployment", "api-a", "api-b", "--replicas=0"]);
    s.wait_until("a placeholder slice", WAIT, || {
        let all = slices(&s, "default", "api");
        let e = endpoints(&s, "default", "api").unwrap_or_default();
        let done = all.len() == 1
            && all[0]["endpoints"].as_array().is_none_or(Vec::is_empty)
            && e.get("subsets").is_none();
        (done, format!("{all:#?}\n{e:#}"))
    });
    let table = rows(&s.ok(&["get", "endpointslices", "-l", "kubernetes.io/service-name=api"]));
    assert_eq!(table[1][1..4], ["IPv4", "<unset>", "<unset>"], "{table:?}");
    let table = rows(&s.ok(&["get", "endpoints", "api"]));
    assert_eq!(table[1][1], "<none>", "{table:?}");
}

#[test]
fn hand_written_endpoints_of_a_selectorless_service_are_mirrored() {
    // The two pod-reading controllers off, by `--controllers` (kube-controller-manager's) and
    // by `--disable`.
    let s =
        RkubeServer::start_with(&["--controllers", "*,-endpointslice", "--disable", "endpoint"]);
    // Documentation addresses (TEST-NET-1): nothing is ever sent to them.
    let manifest = r#"
apiVersion: v1
kind: Service
metadata: {name: ext, labels: {team: a}}
spec:
  ports: [{name: web, port: 80, targetPort: 9376}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: ext, labels: {team: a}, annotations: {note: kept}}
subsets:
- addresses: [{ip: 192.0.2.10}, {ip: 192.0.2.11}]
  notReadyAddresses: [{ip: 192.0.2.12}]
  ports: [{name: web, port: 9376}]
"#;
    s.ok_stdin(&["apply", "-f", "-"], manifest);
    s.wait_until("a mirrored slice", WAIT, || {
        let all = slices(&s, "default", "ext");
        (
            all.len() == 1 && all[0]["endpoints"].as_array().is_some_and(|e| e.len() == 3),
            format!("{all:#?}"),
        )
    });
    let slice = slices(&s, "default", "ext").remove(0);
    let name = slice["metadata"]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("ext-"), "{name}");
    let labels = &slice["metadata"]["labels"];
    assert_eq!(labels[MANAGED_BY], "endpointslicemirroring-controller.k8s.io");
    assert_eq!(labels["team"], "a");
    assert_eq!(slice["metadata"]["annotations"]["note"], "kept");
    assert!(slice["metadata"]["annotations"]
        .get("kubectl.kubernetes.io/last-applied-configuration")
        .is_none());
    let owner = &slice["metadata"]["ownerReferences"][0];
    assert_eq!((owner["kind"].as_str(), owner["name"].as_str()), (Some("Endpoints"), Some("ext")));
    assert_eq!(
        slice["ports"],
        serde_json::json!([{"name": "web", "port": 9376, "protocol": "TCP"}])
    );
    let ready: Vec<(String, Value)> = slice_endpoints(std::slice::from_ref(&slice))
        .into_iter()
        .map(|(ip, e)| (ip, e["conditions"]["ready"].clone()))
        .collect();
    assert_eq!(
        ready,
        [
            ("192.0.2.10".to_string(), Value::Bool(true)),
            ("192.0.2.11".to_string(), Value::Bool(true)),
            ("192.0.2.12".to_string(), Value::Bool(false)),
        ]
    );
    // The hand-written Endpoints are left as they were.
    let e = endpoints(&s, "default", "ext").unwrap();
    assert_eq!(ips(&e, "addresses"), BTreeSet::from(["192.0.2.10".into(), "192.0.2.11".into()]));
    // The `kubernetes` Service's slice is the API server's, not mirrored (nor removed).
    let kubernetes = slices(&s, "default", "kubernetes");
    assert_eq!(kubernetes.len(), 1, "{kubernetes:#?}");
    assert_eq!(kubernetes[0]["metadata"]["name"], "kubernetes");

    // An address goes: the same slice, updated.
    s.ok(&[
        "patch",
        "endpoints",
        "ext",
        "--type=json",
        "-p",
        r#"[{"op": "replace", "path": "/subsets/0/addresses", "value": [{"ip": "192.0.2.10"}]}]"#,
    ]);
    s.wait_until("the mirrored slice updated", WAIT, || {
        let all = slices(&s, "default", "ext");
        let ips: Vec<String> = slice_endpoints(&all).into_iter().map(|(ip, _)| ip).collect();
        (
            all.len() == 1
                && all[0]["metadata"]["name"] == name.as_str()
                && ips == ["192.0.2.10", "192.0.2.12"],
            format!("{all:#?}"),
        )
    });
    // skip-mirror: the mirrored slice goes.
    s.ok(&["label", "endpoints", "ext", "endpointslice.kubernetes.io/skip-mirror=true"]);
    s.wait_until("the mirrored slice removed", WAIT, || {
        let all = slices(&s, "default", "ext");
        (all.is_empty(), format!("{all:#?}"))
    });
    s.ok(&["label", "endpoints", "ext", "endpointslice.kubernetes.io/skip-mirror-"]);
    s.wait_until("mirrored again", WAIT, || {
        let all = slices(&s, "default", "ext");
        (all.len() == 1, format!("{all:#?}"))
    });
    // The Endpoints go: so does the slice.
    s.ok(&["delete", "endpoints", "ext"]);
    s.wait_until("the slice gone with its Endpoints", WAIT, || {
        let all = slices(&s, "default", "ext");
        (all.is_empty(), format!("{all:#?}"))
    });

    // The EndpointSlice and Endpoints controllers were turned off: a Service with a selector
    // gets neither (the mirroring controller, running, leaves it alone too).
    let log = s.log();
    assert!(log.contains("endpointslice-mirroring-controller started"), "{}", s.log_tail(40));
    assert!(!log.contains("endpointslice-controller started"), "{}", s.log_tail(40));
    assert!(!log.contains("endpoints-controller started"), "{}", s.log_tail(40));
    // `kubectl create service` sets a selector (app=sel): neither mirrored nor made from pods.
    s.ok(&["create", "service", "clusterip", "sel", "--tcp=80:80"]);
    assert!(endpoints(&s, "default", "sel").is_none());
    assert!(slices(&s, "default", "sel").is_empty());
}
