//! What upstream's sig-cli conformance tests do with stock kubectl, against rkube:
//! - a ReplicationController of two busybox `httpd` pods serving a `data.json` (upstream's
//!   update-demo): its pods answer through `pods/<pod>/proxy`, `kubectl scale` takes it to
//!   one and back to two; `kubectl describe` of a pod, the RC, a Service, the node and the
//!   namespace prints what upstream's test looks for, line by line in order; `kubectl label`
//!   adds and removes a label seen with `-L`; `kubectl patch` annotates every pod;
//!   `kubectl replace --force` swaps a pod's image (upstream's "describe pod or rc",
//!   "replication controller", "scale replication controller", "label update", "patch to
//!   annotate", "replace");
//! - `kubectl proxy` on a unix socket and on port 0 serves `/api/` (API only).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rkube_conformance::cluster::{jsonpath, RkubeServer};
use rkube_conformance::node::{ensure_tools_image, NodeServer, BUSYBOX, TOOLS};
use rkube_conformance::streaming::Streaming;

/// Upstream's `checkOutput`: the lines of `output` hold each group in order, each group's
/// first string finding its line (at or after the previous group's) and the others being on
/// that same line.
fn check_output(output: &str, required: &[&[&str]]) {
    let lines: Vec<&str> = output.lines().collect();
    let mut current = 0;
    for group in required {
        while current < lines.len() && !lines[current].contains(group[0]) {
            current += 1;
        }
        assert!(current < lines.len(), "no {:?} (in order) in:\n{output}", group[0]);
        for item in &group[1..] {
            assert!(
                lines[current].contains(item),
                "no {item:?} on {:?} in:\n{output}",
                lines[current]
            );
        }
    }
}

const UPDATE_DEMO: &str = r#"
apiVersion: v1
kind: ReplicationController
metadata:
  name: update-demo-nautilus
  labels: {name: update-demo}
spec:
  replicas: 2
  selector: {name: update-demo, version: nautilus}
  template:
    metadata:
      labels: {name: update-demo, version: nautilus}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: update-demo
        image: "busybox:1.36"
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "mkdir -p /www && echo '{\"image\": \"nautilus.jpg\"}' > /www/data.json && exec httpd -f -p 80 -h /www"]
        ports: [{containerPort: 80}]
        readinessProbe: {tcpSocket: {port: 80}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata:
  name: update-demo
  labels: {name: update-demo, role: demo}
spec:
  selector: {name: update-demo}
  ports: [{port: 6379, targetPort: 80}]
"#;

/// The names of the RC's pods once exactly `count` of them are ready and none is going away.
fn serving_pods(node: &NodeServer, count: usize) -> Vec<String> {
    let path = jsonpath(
        "{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp} {.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}",
    );
    let text = node.wait_for(
        &["get", "pods", "-l", "name=update-demo", "-o", &path],
        Duration::from_secs(90),
        |t| {
            let lines: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
            lines.len() == count
                && lines.iter().all(|l| l.split_whitespace().count() == 2 && l.ends_with(" True"))
        },
    );
    text.lines().filter_map(|l| l.split_whitespace().next()).map(String::from).collect()
}

/// Each pod's `data.json`, through the API server's pod proxy (upstream's check).
fn check_data_json(server: &RkubeServer, pods: &[String]) {
    for pod in pods {
        let path = format!("/api/v1/namespaces/default/pods/{pod}/proxy/data.json");
        let got = server.curl(&[], &path);
        assert_eq!(got.code, 200, "{path}: {}", got.body);
        let data: serde_json::Value = serde_json::from_str(&got.body).expect("JSON");
        assert_eq!(data["image"], "nautilus.jpg", "{pod}");
    }
}

#[test]
fn an_rc_is_described_scaled_labelled_annotated_and_a_pod_replaced() {
    ensure_tools_image();
    let node = NodeServer::start();
    let server = &node.server;
    server.ok_stdin(&["create", "-f", "-"], UPDATE_DEMO);
    let pods = serving_pods(&node, 2);
    let images = server.ok(&[
        "get",
        "pods",
        "-l",
        "name=update-demo",
        "-o",
        "jsonpath={.items[*].spec.containers[0].image}",
    ]);
    assert_eq!(images, format!("{BUSYBOX} {BUSYBOX}"));
    check_data_json(server, &pods);

    // Scale down to one and up to two again, each time waiting for the pods that serve.
    server.ok(&["scale", "rc", "update-demo-nautilus", "--replicas=1", "--timeout=5m"]);
    let one = serving_pods(&node, 1);
    check_data_json(server, &one);
    server.ok(&["scale", "rc", "update-demo-nautilus", "--replicas=2", "--timeout=5m"]);
    let pods = serving_pods(&node, 2);
    check_data_json(server, &pods);

    // kubectl describe, with upstream's expected lines.
    let pod = &pods[0];
    check_output(
        &server.ok(&["describe", "pod", pod]),
        &[
            &["Name:", "update-demo-nautilus-"],
            &["Namespace:", "default"],
            &["Node:", &node.node],
            &["Labels:", "name=update-demo"],
            &["version=nautilus"],
            &["Annotations:"],
            &["Status:", "Running"],
            &["IP:"],
            &["Controlled By:", "ReplicationController/update-demo-nautilus"],
            &["Image:", BUSYBOX],
            &["State:", "Running"],
            &["QoS Class:", "BestEffort"],
        ],
    );
    check_output(
        &server.ok(&["describe", "rc", "update-demo-nautilus"]),
        &[
            &["Name:", "update-demo-nautilus"],
            &["Namespace:", "default"],
            &["Selector:", "name=update-demo,version=nautilus"],
            &["Labels:", "name=update-demo"],
            &["Annotations:"],
            &["Replicas:", "2 current", "2 desired"],
            &["Pods Status:", "2 Running", "0 Waiting", "0 Succeeded", "0 Failed"],
            &["Pod Template:"],
            &["Image:", BUSYBOX],
            &["Events:"],
            &["SuccessfulCreate"],
        ],
    );
    check_output(
        &server.ok(&["describe", "service", "update-demo"]),
        &[
            &["Name:", "update-demo"],
            &["Namespace:", "default"],
            &["Labels:", "name=update-demo"],
            &["role=demo"],
            &["Annotations:"],
            &["Selector:", "name=update-demo"],
            &["Type:", "ClusterIP"],
            &["IP:"],
            &["Port:", "<unset>", "6379/TCP"],
            &["Endpoints:", ":80"],
            &["Session Affinity:", "None"],
        ],
    );
    check_output(
        &server.ok(&["describe", "node", &node.node]),
        &[
            &["Name:", &node.node],
            &["Labels:"],
            &["Annotations:"],
            &["CreationTimestamp:"],
            &["Conditions:"],
            &["Type", "Status", "LastHeartbeatTime", "LastTransitionTime", "Reason", "Message"],
            &["Addresses:"],
            &["Capacity:"],
            &["Version:"],
            &["Kernel Version:"],
            &["OS Image:"],
            &["Container Runtime Version:", "docker://"],
            &["Kubelet Version:", "v1."],
            &["Kube-Proxy Version:"],
            &["Pods:"],
        ],
    );
    check_output(
        &server.ok(&["describe", "namespace", "default"]),
        &[&["Name:", "default"], &["Labels:"], &["Annotations:"], &["Status:", "Active"]],
    );

    // Label update: added, seen in the -L column, removed.
    server.ok(&["label", "pods", pod, "testing-label=testing-label-value"]);
    let column = server.ok(&["get", "pod", pod, "-L", "testing-label"]);
    assert!(column.lines().nth(1).is_some_and(|l| l.ends_with("testing-label-value")), "{column}");
    server.ok(&["label", "pods", pod, "testing-label-"]);
    let column = server.ok(&["get", "pod", pod, "-L", "testing-label"]);
    assert!(
        column.contains("TESTING-LABEL") && !column.contains("testing-label-value"),
        "{column}"
    );

    // Patch to annotate every pod of the RC.
    for pod in &pods {
        server.ok(&["patch", "pod", pod, "-p", r#"{"metadata":{"annotations":{"x":"y"}}}"#]);
    }
    let annotations = server.ok(&[
        "get",
        "pods",
        "-l",
        "name=update-demo",
        "-o",
        "jsonpath={.items[*].metadata.annotations.x}",
    ]);
    assert_eq!(annotations, "y y");

    // Replace --force: a pod of its own, its image changed in its JSON, deleted and made
    // again with the new image, which runs.
    server.ok(&[
        "run",
        "httpd",
        "--image",
        BUSYBOX,
        "--image-pull-policy",
        "IfNotPresent",
        "--",
        "httpd",
        "-f",
        "-p",
        "80",
    ]);
    node.wait_for(
        &["get", "pod", "httpd", "-o", "jsonpath={.status.phase}"],
        Duration::from_secs(90),
        |p| p == "Running",
    );
    let uid = server.ok(&["get", "pod", "httpd", "-o", "jsonpath={.metadata.uid}"]);
    let json = server.ok(&["get", "pod", "httpd", "-o", "json"]);
    let replaced =
        json.replace(&format!("\"image\": \"{BUSYBOX}\""), &format!("\"image\": \"{TOOLS}\""));
    assert_ne!(json, replaced, "the image is in the JSON");
    let out = server.ok_stdin(&["replace", "--force", "-f", "-"], &replaced);
    assert!(out.contains("pod \"httpd\" deleted") && out.contains("pod/httpd replaced"), "{out}");
    let path = jsonpath("{.metadata.uid} {.spec.containers[0].image} {.status.phase}");
    node.wait_for(&["get", "pod", "httpd", "-o", &path], Duration::from_secs(90), |t| {
        !t.starts_with(uid.trim()) && t.ends_with(&format!("{TOOLS} Running"))
    });
}

/// GET `/api/` from a `kubectl proxy` with curl `args` (a socket or a port), expecting the
/// APIVersions with v1.
fn proxied_api(args: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out =
            Command::new("curl").args(["-s", "--max-time", "5"]).args(args).output().expect("curl");
        let body = String::from_utf8_lossy(&out.stdout).to_string();
        if let Ok(versions) = serde_json::from_str::<serde_json::Value>(&body) {
            assert_eq!(versions["kind"], "APIVersions", "{body}");
            assert_eq!(versions["versions"][0], "v1", "{body}");
            return;
        }
        assert!(Instant::now() < deadline, "no APIVersions from kubectl proxy ({args:?}): {body}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn kubectl_proxy_serves_the_api_on_a_unix_socket_and_on_port_zero() {
    let server = RkubeServer::start_with(&["--disable", "scheduler,controllers"]);
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("kubectl-proxy.sock");
    let socket_arg = format!("--unix-socket={}", socket.display());
    let mut on_socket =
        Streaming::start(server.kubectl_command(&server.kubectl).args(["proxy", &socket_arg]));
    on_socket.wait_for_line(|l| l.starts_with("Starting to serve on"), Duration::from_secs(20));
    assert!(Path::new(&socket).exists());
    proxied_api(&["--unix-socket", &socket.to_string_lossy(), "http://localhost/api/"]);

    let mut on_port = Streaming::start(server.kubectl_command(&server.kubectl).args([
        "proxy",
        "-p",
        "0",
        "--disable-filter",
    ]));
    let line = on_port.wait_for_line(
        |l| l.starts_with("Starting to serve on 127.0.0.1:"),
        Duration::from_secs(20),
    );
    let port: u16 = line.rsplit(':').next().unwrap().trim().parse().expect("a port");
    assert_ne!(port, 0);
    proxied_api(&[&format!("http://127.0.0.1:{port}/api/")]);
}
