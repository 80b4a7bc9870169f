//! Upstream's probe, lifecycle-hook and init-container conformance tests that take time, on
//! one real node (Docker) with every pod run side by side, asserted as upstream asserts them:
//! liveness probes that must never restart their container (httpGet, tcpSocket, gRPC against
//! a local `grpc.health.v1` server), a gRPC liveness probe on a port where nothing listens
//! (restarted, with an `Unhealthy` event), an always-failing httpGet liveness probe whose
//! restart count rises monotonically to 5, a readiness probe with an initial delay, an init
//! container failing an `Always` pod, postStart/preStop httpGet hooks calling a handler pod
//! over the pod network, and (meanwhile) upstream's wrapped-volume race: 3 rounds of 5 pods
//! mounting the same 50 ConfigMaps.
//!
//! The kubelet probes the pods' IPs from the node, and the hooks call the handler pod's IP:
//! both checked to be on a local bridge.

use std::time::{Duration, Instant};

use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::node::{assert_route_is_local, ensure_image, NodeServer};
use serde_json::Value;

/// The local image with [`grpc-health-server`](../src/bin/grpc-health-server.rs) in it, at
/// [`GRPC_SERVER`] (the image holds a binary at the path it had here).
const GRPC_IMAGE: &str = "rkube-test-grpc-health:2";
const GRPC_SERVER: &str = "/tmp/rkube-test-grpc-health/grpc-health-server";

/// The pod as JSON (Null when it does not exist).
fn pod(s: &RkubeServer, name: &str) -> Value {
    s.pod(name)
}

/// Waits (bounded) until `check` accepts the pod; returns it.
fn wait_pod(s: &RkubeServer, name: &str, secs: u64, check: impl Fn(&Value) -> bool) -> Value {
    s.wait_pod(name, secs, check)
}

fn phase(p: &Value) -> &str {
    p["status"]["phase"].as_str().unwrap_or("")
}

fn restarts(p: &Value) -> i64 {
    p["status"]["containerStatuses"][0]["restartCount"].as_i64().unwrap_or(0)
}

fn condition(p: &Value, kind: &str) -> Value {
    p["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == kind).cloned())
        .unwrap_or_default()
}

/// Seconds since the epoch of an RFC 3339 UTC time as the API writes it
/// (`2006-01-02T15:04:05Z`).
fn time(value: &Value) -> i64 {
    let text = value.as_str().unwrap_or_else(|| panic!("a time: {value}"));
    let n = |range: std::ops::Range<usize>| -> i64 {
        text.get(range).and_then(|t| t.parse().ok()).unwrap_or_else(|| panic!("a time: {text}"))
    };
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19)
}

/// The (reason, message) of every event on `pod`.
fn events_of(s: &RkubeServer, pod: &str) -> Vec<(String, String)> {
    let selector = format!("involvedObject.name={pod}");
    let out = s.ok(&["get", "events", "--field-selector", &selector, "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("events");
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (text("reason"), text("message"))
        })
        .collect()
}

const PODS: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: liveness-http}
spec:
  containers:
  - name: test-webserver
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["httpd", "-f", "-p", "80", "-h", "/var/www"]
    livenessProbe:
      httpGet: {path: /, port: 80}
      initialDelaySeconds: 15
      periodSeconds: 3
      failureThreshold: 1
---
apiVersion: v1
kind: Pod
metadata: {name: liveness-tcp}
spec:
  containers:
  - name: agnhost-container
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["httpd", "-f", "-p", "8080", "-h", "/tmp"]
    livenessProbe:
      tcpSocket: {port: 8080}
      initialDelaySeconds: 15
      periodSeconds: 3
      failureThreshold: 1
---
apiVersion: v1
kind: Pod
metadata: {name: liveness-grpc}
spec:
  containers:
  - name: agnhost-container
    image: "rkube-test-grpc-health:2"
    imagePullPolicy: Never
    command: ["/tmp/rkube-test-grpc-health/grpc-health-server", "5000"]
    ports: [{containerPort: 5000}]
    livenessProbe:
      grpc: {port: 5000}
      initialDelaySeconds: 10
      periodSeconds: 3
      failureThreshold: 1
---
apiVersion: v1
kind: Pod
metadata: {name: liveness-grpc-fails}
spec:
  containers:
  - name: agnhost-container
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
    livenessProbe:
      grpc: {port: 2333}
      initialDelaySeconds: 10
      timeoutSeconds: 5
      failureThreshold: 1
---
apiVersion: v1
kind: Pod
metadata: {name: liveness-restarts}
spec:
  containers:
  - name: agnhost-container
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
    livenessProbe:
      httpGet: {path: /healthz, port: 8080}
      initialDelaySeconds: 5
      periodSeconds: 1
      failureThreshold: 1
---
apiVersion: v1
kind: Pod
metadata: {name: readiness-delay}
spec:
  containers:
  - name: test-webserver
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["httpd", "-f", "-p", "80", "-h", "/var/www"]
    readinessProbe:
      httpGet: {path: /, port: 80}
      initialDelaySeconds: 15
      periodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata: {name: init-fails-always}
spec:
  restartPolicy: Always
  initContainers:
  - {name: init1, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["/bin/false"]}
  - {name: init2, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["/bin/true"]}
  containers:
  - {name: run1, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: pod-handle-http-request}
spec:
  containers:
  - name: container-handle-http-request
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    ports: [{containerPort: 8080}]
    command:
    - sh
    - -c
    - |
      printf '#!/bin/sh\nread line\necho "$line" >&2\nprintf "HTTP/1.0 200 OK\\r\\nContent-Length: 0\\r\\n\\r\\n"\n' > /tmp/handle
      chmod +x /tmp/handle
      exec nc -ll -p 8080 -e /tmp/handle
"#;

/// Upstream's testNoWrappedVolumeRace with its 50 ConfigMaps, 5 pods and 3 iterations.
fn wrapped_volume_race(n: &NodeServer) {
    let s = &n.server;
    let count = 50;
    let mut items = Vec::new();
    for i in 0..count {
        items.push(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("racey-configmap-{i}")},
            "data": {"data-1": "value-1"}}));
    }
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    s.ok_stdin(&["create", "-f", "-"], &list.to_string());
    let volumes: Vec<Value> = (0..count)
        .map(|i| {
            serde_json::json!({"name": format!("racey-configmap-{i}"),
            "configMap": {"name": format!("racey-configmap-{i}"),
                "items": [{"key": "data-1", "path": "data-1"}]}})
        })
        .collect();
    let mounts: Vec<Value> = (0..count)
        .map(|i| {
            serde_json::json!({"name": format!("racey-configmap-{i}"),
            "mountPath": format!("/etc/config-{i}")})
        })
        .collect();
    for iteration in 0..3 {
        let name = format!("wrapped-volume-race-{iteration}");
        let rc = serde_json::json!({
            "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name},
            "spec": {"replicas": 5, "selector": {"name": name}, "template": {
                "metadata": {"labels": {"name": name}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname",
                            "operator": "In", "values": [n.node]}]}]}}},
                    "volumes": volumes,
                    "containers": [{"name": "test-container", "image": "busybox:1.36",
                        "imagePullPolicy": "IfNotPresent", "command": ["sleep", "10000"],
                        "volumeMounts": mounts}],
                },
            }},
        });
        s.ok_stdin(&["create", "-f", "-"], &rc.to_string());
        let selector = format!("name={name}");
        s.wait_until(&format!("{name}: 5 pods Running"), Duration::from_secs(120), || {
            let phases = s.ok(&[
                "get",
                "pods",
                "-l",
                &selector,
                "-o",
                "jsonpath={range .items[*]}{.status.phase} {end}",
            ]);
            (phases.split_whitespace().filter(|p| *p == "Running").count() == 5, phases)
        });
        // Every pod sees all 50 files.
        let pods =
            s.ok(&["get", "pods", "-l", &selector, "-o", "jsonpath={.items[*].metadata.name}"]);
        for pod in pods.split_whitespace() {
            let seen = s.ok(&[
                "exec",
                pod,
                "--",
                "sh",
                "-c",
                "grep -l value-1 /etc/config-*/data-1 | wc -l",
            ]);
            assert_eq!(seen.trim(), count.to_string(), "{pod}");
        }
        s.ok(&["delete", "rc", &name, "--wait=true", "--timeout=60s"]);
        s.wait_until(&format!("{name}: pods gone"), Duration::from_secs(60), || {
            let left = s.ok(&["get", "pods", "-l", &selector, "-o", "name"]);
            (left.trim().is_empty(), left)
        });
    }
}

/// A pod whose `hook` (postStart or preStop) calls the handler at `ip`.
fn hooked_pod(name: &str, hook: &str, msg: &str, ip: &str) -> String {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"terminationGracePeriodSeconds": 30, "containers": [{
            "name": name, "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent",
            "command": ["sleep", "3600"],
            "lifecycle": {hook: {"httpGet": {"path": format!("/echo?msg={msg}"), "host": ip, "port": 8080}}},
        }]},
    })
    .to_string()
}

#[test]
fn probes_hooks_and_init_back_off_as_upstream() {
    let server = std::path::Path::new(GRPC_SERVER);
    std::fs::create_dir_all(server.parent().expect("a directory")).expect("its directory");
    std::fs::copy(env!("CARGO_BIN_EXE_grpc-health-server"), server).expect("copy the server");
    ensure_image(GRPC_IMAGE, &[GRPC_SERVER]);
    let n = NodeServer::start();
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], PODS);
    let start = Instant::now();

    // Pod Lifecycle, post start http hook / prestop http hook: the hooks call the handler
    // pod, whose log shows each request line.
    let handler = wait_pod(s, "pod-handle-http-request", 60, |p| phase(p) == "Running");
    let ip = handler["status"]["podIP"].as_str().expect("handler IP").to_string();
    assert_route_is_local(&ip);
    let handler_log = |text: &str| {
        s.wait_until(&format!("the handler saw {text}"), Duration::from_secs(30), || {
            let log = s.ok(&["logs", "pod-handle-http-request"]);
            (log.contains(text), log)
        });
    };
    s.ok_stdin(
        &["create", "-f", "-"],
        &hooked_pod("pod-with-poststart-http-hook", "postStart", "poststart", &ip),
    );
    s.ok_stdin(
        &["create", "-f", "-"],
        &hooked_pod("pod-with-prestop-http-hook", "preStop", "prestop", &ip),
    );
    wait_pod(s, "pod-with-poststart-http-hook", 60, |p| phase(p) == "Running");
    handler_log("GET /echo?msg=poststart HTTP/1.1");
    wait_pod(s, "pod-with-prestop-http-hook", 60, |p| phase(p) == "Running");
    let log = s.ok(&["logs", "pod-handle-http-request"]);
    assert!(!log.contains("msg=prestop"), "preStop ran before the deletion:\n{log}");
    s.ok(&[
        "delete",
        "pod",
        "pod-with-poststart-http-hook",
        "pod-with-prestop-http-hook",
        "--wait=true",
        "--timeout=60s",
    ]);
    handler_log("GET /echo?msg=prestop HTTP/1.1");
    assert!(pod(s, "pod-with-prestop-http-hook").is_null());

    // Pod readiness probe, with initial delay: not Ready before the delay, then Ready, the
    // transition at least the delay after the container started, never restarted.
    let p = wait_pod(s, "readiness-delay", 90, |p| condition(p, "Ready")["status"] == "True");
    let status = &p["status"]["containerStatuses"][0];
    let started = time(&status["state"]["running"]["startedAt"]);
    let ready_at = time(&condition(&p, "Ready")["lastTransitionTime"]);
    assert!(
        ready_at - started >= 15,
        "Ready at {ready_at}, started at {started}: before the initial delay"
    );
    assert_eq!(status["restartCount"], 0);

    // Pod liveness probe, using grpc call, failure: restarted, with upstream's event.
    let p = wait_pod(s, "liveness-grpc-fails", 90, |p| restarts(p) >= 1);
    assert_eq!(phase(&p), "Running");
    let events = events_of(s, "liveness-grpc-fails");
    assert!(
        events.iter().any(|(r, m)| r == "Unhealthy" && m.starts_with("Liveness probe failed")),
        "{events:#?}"
    );

    // init-container-fails-stops-app-restartalways-pod: init1 restarted at least 3 times,
    // init2 and the app never started, the pod Pending and not Initialized.
    let p = wait_pod(s, "init-fails-always", 180, |p| {
        p["status"]["initContainerStatuses"][0]["restartCount"].as_i64().unwrap_or(0) >= 3
    });
    assert_eq!(phase(&p), "Pending");
    let init2 = &p["status"]["initContainerStatuses"][1];
    assert!(init2["state"]["waiting"].is_object(), "init2: {init2:#}");
    assert_eq!(init2["restartCount"], 0);
    let app = &p["status"]["containerStatuses"][0];
    assert!(app["state"]["waiting"].is_object(), "app: {app:#}");
    assert_eq!(condition(&p, "Initialized")["status"], "False");

    // EmptyDir Wrapper Volume, ConfigMap volumes, no race: while the probes above keep
    // going, three times a ReplicationController of 5 pods pinned to the node, each
    // mounting the same 50 ConfigMaps, all Running, then deleted.
    wrapped_volume_race(&n);

    // Pod liveness probe, using http endpoint, multiple restarts (slow): the restart count
    // sampled until 5, never going down.
    let mut seen = Vec::new();
    s.wait_until("5 restarts", Duration::from_secs(300), || {
        let count = restarts(&pod(s, "liveness-restarts"));
        if let Some(last) = seen.last() {
            assert!(count >= *last, "the restart count went down: {seen:?} then {count}");
        }
        if seen.last() != Some(&count) {
            eprintln!("{:?}: restartCount {count}", start.elapsed());
        }
        seen.push(count);
        std::thread::sleep(Duration::from_millis(750));
        (count >= 5, format!("{seen:?}"))
    });

    // Pod liveness probe, using http endpoint, failure / using tcp socket, no restart /
    // using grpc call, success: all that time, probed and never restarted.
    assert!(start.elapsed() > Duration::from_secs(60), "observed long enough");
    for name in ["liveness-http", "liveness-tcp", "liveness-grpc"] {
        let p = pod(s, name);
        assert_eq!(phase(&p), "Running", "{name}");
        assert_eq!(restarts(&p), 0, "{name}: {:#}", p["status"]);
        let events = events_of(s, name);
        assert!(!events.iter().any(|(r, _)| r == "Unhealthy"), "{name}: {events:#?}");
    }
    // The gRPC probes reached the server (it prints one line per Check).
    let log = s.ok(&["logs", "liveness-grpc"]);
    assert!(log.matches("check").count() >= 3, "gRPC checks seen:\n{log}");
}
