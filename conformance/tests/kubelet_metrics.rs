//! Resource metrics on a real Docker node, as a user sees them: `kubectl top pod` and `kubectl
//! top node` (stock kubectl) through the API server's `metrics.k8s.io/v1beta1`, which reads
//! the kubelets' `/stats/summary`; and the kubelet's own `/stats/summary` and
//! `/metrics/resource` through `nodes/proxy`. A pod that burns CPU and one that holds 64 MiB
//! in a memory-backed emptyDir show up with the figures they should.

use std::time::Duration;

use rkube_conformance::node::NodeServer;
use serde_json::Value;

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// `995m` as millicores.
fn millicores(cell: &str) -> u64 {
    cell.strip_suffix('m').and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("CPU {cell:?}"))
}

/// `64Mi` as MiB.
fn mebibytes(cell: &str) -> u64 {
    cell.strip_suffix("Mi")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("memory {cell:?}"))
}

/// The rows of a `kubectl top` table (header first), split into cells.
fn rows(table: &str) -> Vec<Vec<String>> {
    table.lines().map(|l| l.split_whitespace().map(str::to_string).collect()).collect()
}

/// The row whose first cells are `key`.
fn row<'a>(rows: &'a [Vec<String>], key: &[&str]) -> Option<&'a Vec<String>> {
    rows.iter().find(|r| r.len() >= key.len() && r.iter().zip(key).all(|(a, b)| a == b))
}

const MANIFEST: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: burner, labels: {app: burn}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: burn, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "while :; do :; done"]}
---
apiVersion: v1
kind: Pod
metadata: {name: hog, labels: {app: hog}}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: mem, emptyDir: {medium: Memory}}]
  containers:
  - name: hold
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    volumeMounts: [{name: mem, mountPath: /mem}]
    command: ["sh", "-c", "dd if=/dev/zero of=/mem/x bs=1M count=64 && exec sleep 3600"]
  - {name: idle, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: v1
kind: Pod
metadata: {name: quiet, namespace: other, labels: {app: quiet}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
"#;

#[test]
fn kubectl_top_pods_and_nodes_from_the_kubelets_stats() {
    let n = NodeServer::start();
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], MANIFEST);
    let minute = Duration::from_secs(60);
    for (ns, pod) in [("default", "burner"), ("default", "hog"), ("other", "quiet")] {
        n.wait_for(&["get", "pod", pod, "-n", ns, "-o", "jsonpath={.status.phase}"], minute, |p| {
            p == "Running"
        });
    }

    // `kubectl top pod`: once the kubelet has two readings of each container, and the
    // tmpfs is written, the burner uses hundreds of millicores and the hog its 64 MiB.
    let top = n.wait_for(&["top", "pod"], Duration::from_secs(90), |t| {
        let rows = rows(t);
        let burner = row(&rows, &["burner"]).map(|r| millicores(&r[1]));
        let hog = row(&rows, &["hog"]).map(|r| mebibytes(&r[2]));
        burner.is_some_and(|m| m >= 200) && hog.is_some_and(|m| m >= 50)
    });
    let table = rows(&top);
    assert_eq!(table[0], ["NAME", "CPU(cores)", "MEMORY(bytes)"], "{top}");
    assert_eq!(table.len(), 3, "only this namespace's pods: {top}");
    let hog = row(&table, &["hog"]).expect("hog");
    assert!(millicores(&hog[1]) < 100, "the hog is idle: {top}");
    let burner = row(&table, &["burner"]).expect("burner");
    assert!(mebibytes(&burner[2]) < 50, "the burner holds little memory: {top}");
    eprintln!("kubectl top pod:\n{top}");

    // Per container.
    let containers = s.ok(&["top", "pod", "--containers"]);
    let table = rows(&containers);
    assert_eq!(table[0], ["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"], "{containers}");
    assert!(millicores(&row(&table, &["burner", "burn"]).expect("burn")[2]) >= 100, "{containers}");
    assert!(mebibytes(&row(&table, &["hog", "hold"]).expect("hold")[3]) >= 50, "{containers}");
    assert!(mebibytes(&row(&table, &["hog", "idle"]).expect("idle")[3]) < 50, "{containers}");
    assert_eq!(table.len(), 4, "no sandbox among the containers: {containers}");

    // Every namespace, and a label selector.
    let all =
        n.wait_for(&["top", "pod", "-A"], minute, |t| row(&rows(t), &["other", "quiet"]).is_some());
    let table = rows(&all);
    assert_eq!(table[0], ["NAMESPACE", "NAME", "CPU(cores)", "MEMORY(bytes)"], "{all}");
    assert!(
        row(&table, &["default", "burner"]).is_some() && row(&table, &["default", "hog"]).is_some(),
        "{all}"
    );
    let selected = s.ok(&["top", "pod", "-l", "app=hog"]);
    let names: Vec<String> = rows(&selected).iter().skip(1).map(|r| r[0].clone()).collect();
    assert_eq!(names, ["hog"], "{selected}");
    let one = s.ok(&["top", "pod", "quiet", "-n", "other"]);
    assert_eq!(rows(&one).len(), 2, "{one}");
    let e = s.fails(&["top", "pod", "nope"]);
    assert!(e.contains(r#"pods "nope" not found"#), "{e}");

    // `kubectl top node`: the node's own figures, the burner's core inside them.
    let node_top = s.ok(&["top", "node"]);
    let table = rows(&node_top);
    assert_eq!(
        table[0],
        ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"],
        "{node_top}"
    );
    let line = row(&table, &[n.node.as_str()]).unwrap_or_else(|| panic!("{node_top}"));
    assert!(millicores(&line[1]) >= 200, "{node_top}");
    let percent = |cell: &str| -> u64 {
        cell.trim_end_matches('%').parse().unwrap_or_else(|_| panic!("{cell}"))
    };
    assert!((1..=110).contains(&percent(&line[2])), "{node_top}");
    assert!(mebibytes(&line[3]) >= 64, "{node_top}");
    assert!((1..=100).contains(&percent(&line[4])), "{node_top}");
    eprintln!("kubectl top node:\n{node_top}");

    // The API objects, as metrics-server shapes them.
    let nodes = json(&s.ok(&["get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes"]));
    assert_eq!(nodes["kind"], "NodeMetricsList");
    assert_eq!(nodes["apiVersion"], "metrics.k8s.io/v1beta1");
    let item = &nodes["items"][0];
    assert_eq!(item["metadata"]["name"], n.node.as_str());
    assert_eq!(item["metadata"]["labels"]["kubernetes.io/hostname"], n.node.as_str());
    assert_eq!(item["window"], "10s");
    assert!(item["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{item}");
    let cpu = item["usage"]["cpu"].as_str().unwrap_or("");
    // Nanocores as a canonical quantity: `123456789n`, or `2001491u` when the nanocores
    // end in 000, as upstream's Quantity writes them.
    let digits = cpu.trim_end_matches(['n', 'u', 'm']);
    assert!(
        !digits.is_empty() && digits.len() + 1 >= cpu.len() && digits.parse::<u64>().is_ok(),
        "{item}"
    );
    assert!(
        item["usage"]["memory"].as_str().is_some_and(|m| m.ends_with("Ki") || m.ends_with("Mi")),
        "{item}"
    );
    let hog =
        json(&s.ok(&["get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/hog"]));
    assert_eq!(hog["kind"], "PodMetrics");
    assert_eq!(hog["metadata"]["labels"]["app"], "hog");
    let names: Vec<&str> =
        hog["containers"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["hold", "idle"]);
    let listed = json(&s.ok(&[
        "get",
        "--raw",
        "/apis/metrics.k8s.io/v1beta1/pods?labelSelector=app%3Dquiet",
    ]));
    assert_eq!(listed["kind"], "PodMetricsList");
    assert_eq!(listed["items"][0]["metadata"]["namespace"], "other");
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    let e = s.fails(&["get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes?watch=true"]);
    assert!(e.contains("MethodNotAllowed") || e.contains("not supported"), "{e}");
    let e = s.fails(&["get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/nope"]);
    assert!(e.contains("NotFound"), "{e}");
    let resources = s.ok(&["api-resources", "--api-group=metrics.k8s.io", "--no-headers"]);
    assert!(
        resources.lines().any(|l| l.starts_with("nodes ") && l.ends_with("NodeMetrics")),
        "{resources}"
    );
    assert!(
        resources.lines().any(|l| l.starts_with("pods ") && l.ends_with("PodMetrics")),
        "{resources}"
    );
    let tabled = s.ok(&["get", "podmetrics", "hog"]);
    assert!(tabled.starts_with("NAME") && tabled.contains("hog"), "{tabled}");

    // The kubelet's Summary API through nodes/proxy.
    let summary_path = format!("/api/v1/nodes/{}/proxy/stats/summary", n.node);
    let summary = json(&s.ok(&["get", "--raw", &summary_path]));
    let node = &summary["node"];
    assert_eq!(node["nodeName"], n.node.as_str());
    assert!(node["cpu"]["usageCoreNanoSeconds"].as_u64().unwrap_or(0) > 0, "{node}");
    assert!(node["memory"]["workingSetBytes"].as_u64().unwrap_or(0) > 0, "{node}");
    assert!(node["memory"]["availableBytes"].as_u64().is_some(), "{node}");
    assert!(node["fs"]["capacityBytes"].as_u64().unwrap_or(0) > 0, "{node}");
    let pod = |name: &str| -> Value {
        summary["pods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["podRef"]["name"] == name)
            .unwrap_or_else(|| panic!("{name} not in the summary: {summary}"))
            .clone()
    };
    let burner = pod("burner");
    assert_eq!(burner["podRef"]["namespace"], "default");
    assert!(burner["podRef"]["uid"].as_str().is_some_and(|u| !u.is_empty()));
    assert_eq!(burner["containers"][0]["name"], "burn");
    assert!(
        burner["containers"][0]["cpu"]["usageNanoCores"].as_u64().unwrap_or(0) >= 100_000_000,
        "{burner}"
    );
    assert!(burner["containers"][0]["startTime"].is_string(), "{burner}");
    let hog = pod("hog");
    let hold = hog["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "hold")
        .expect("hold")
        .clone();
    assert!(hold["memory"]["workingSetBytes"].as_u64().unwrap_or(0) >= 50 << 20, "{hold}");
    assert!(
        hog["memory"]["workingSetBytes"].as_u64() >= hold["memory"]["workingSetBytes"].as_u64(),
        "{hog}"
    );

    // The same in Prometheus form.
    let metrics_path = format!("/api/v1/nodes/{}/proxy/metrics/resource", n.node);
    let text = s.ok(&["get", "--raw", &metrics_path]);
    let value = |prefix: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix}:\n{text}"));
        line[prefix.len()..]
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{line}"))
    };
    assert!(
        value(
            r#"container_cpu_usage_seconds_total{container="burn",namespace="default",pod="burner"} "#
        ) > 0.1
    );
    assert!(
        value(
            r#"container_memory_working_set_bytes{container="hold",namespace="default",pod="hog"} "#
        ) >= (50 << 20) as f64
    );
    assert!(
        value(r#"container_start_time_seconds{container="app",namespace="other",pod="quiet"} "#)
            > 1.5e9
    );
    assert!(
        value(r#"pod_memory_working_set_bytes{namespace="default",pod="hog"} "#)
            >= (50 << 20) as f64
    );
    assert!(value("node_cpu_usage_seconds_total ") > 0.0);
    assert!(value("node_memory_working_set_bytes ") > 0.0);
    assert_eq!(value("resource_scrape_error "), 0.0);
    assert!(text.contains("# TYPE container_cpu_usage_seconds_total counter\n"), "{text}");

    // A deleted pod leaves the metrics.
    s.ok(&["delete", "pod", "burner", "--wait=false"]);
    n.wait_for(&["top", "pod"], minute, |t| row(&rows(t), &["burner"]).is_none());
}
