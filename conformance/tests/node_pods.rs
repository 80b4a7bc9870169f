//! Pod behaviours of upstream's sig-node conformance tests, asserted the way upstream's e2e
//! tests assert them, on one real node (Docker) with every pod run side by side: the downward
//! API in the environment (defaults from the node's allocatable, host IP(s), pod UID),
//! `$(VAR)` expansion in command and args, `subPathExpr` (refused absolute and `..`
//! expansions, writes through a subpath, a failed expansion that starts once its annotation
//! is set), service environment variables, an init container failing a `Never` pod, a
//! crash-looping pod deleted, a ConfigMap key mounted over `/etc/resolv.conf`, and the pods
//! API verbs upstream's Pods tests call (update, patching status, delete a collection, the
//! lifecycle with an image patch and a status update, the log over a WebSocket); and, on a
//! simulated node, a NoExecute taint removed before the pod's toleration ran out.

use std::time::Duration;

use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::node::{ensure_busybox_variant, NodeServer, SimulatedNodes};
use serde_json::{json, Value};

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

/// The waiting reason of the pod's container `index`.
fn waiting_reason(p: &Value, index: usize) -> &str {
    p["status"]["containerStatuses"][index]["state"]["waiting"]["reason"].as_str().unwrap_or("")
}

/// Upstream's TestContainerOutput: the pod Succeeded, then its log holds every expected line
/// (each a regular-expression-free substring here, or a whole `NAME=value` line).
fn succeeded_with_output(s: &RkubeServer, name: &str, expected: &[&str]) -> String {
    let p = wait_pod(s, name, 90, |p| matches!(phase(p), "Succeeded" | "Failed"));
    assert_eq!(phase(&p), "Succeeded", "{name}: {:#}", p["status"]);
    let log = s.ok(&["logs", name]);
    for line in expected {
        assert!(log.contains(line), "{name}: no {line:?} in its output:\n{log}");
    }
    log
}

/// The value of `NAME=` in `env` output.
fn env_value<'a>(log: &'a str, name: &str) -> &'a str {
    log.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} in:\n{log}"))
}

const PODS: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: dapi-defaults}
spec:
  restartPolicy: Never
  containers:
  - name: dapi-container
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "env"]
    env:
    - {name: CPU_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: MEMORY_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory}}}
---
apiVersion: v1
kind: Pod
metadata: {name: dapi-fields}
spec:
  restartPolicy: Never
  containers:
  - name: dapi-container
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "env"]
    resources:
      requests: {cpu: 250m, memory: 32Mi}
      limits: {cpu: 1250m, memory: 64Mi}
    env:
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: HOST_IPS, valueFrom: {fieldRef: {fieldPath: status.hostIPs}}}
    - {name: POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: CPU_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: MEMORY_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory}}}
    - {name: CPU_REQUEST, valueFrom: {resourceFieldRef: {resource: requests.cpu}}}
    - {name: MEMORY_REQUEST, valueFrom: {resourceFieldRef: {resource: requests.memory}}}
---
apiVersion: v1
kind: Pod
metadata: {name: expand-command}
spec:
  restartPolicy: Never
  containers:
  - name: dapi-container
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "TEST_VAR=wrong echo \"$(TEST_VAR)\""]
    env: [{name: TEST_VAR, value: test-value}]
---
apiVersion: v1
kind: Pod
metadata: {name: expand-args}
spec:
  restartPolicy: Never
  containers:
  - name: dapi-container
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c"]
    args: ["TEST_VAR=wrong echo \"$(TEST_VAR)\""]
    env: [{name: TEST_VAR, value: test-value}]
---
apiVersion: v1
kind: Pod
metadata: {name: subpath-absolute}
spec:
  restartPolicy: Never
  volumes: [{name: workdir1, emptyDir: {}}]
  containers:
  - name: dapi-container
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    env: [{name: POD_NAME, value: /tmp}]
    volumeMounts: [{name: workdir1, mountPath: /logscontainer, subPathExpr: "$(POD_NAME)"}]
---
apiVersion: v1
kind: Pod
metadata: {name: subpath-backticks}
spec:
  restartPolicy: Never
  volumes: [{name: workdir1, emptyDir: {}}]
  containers:
  - name: dapi-container
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    env: [{name: POD_NAME, value: ".."}]
    volumeMounts: [{name: workdir1, mountPath: /logscontainer, subPathExpr: "$(POD_NAME)"}]
---
apiVersion: v1
kind: Pod
metadata:
  name: subpath-writes
  annotations: {mysubpath: mypath}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  volumes: [{name: workdir1, emptyDir: {}}]
  containers:
  - name: dapi-container
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "tail -f /dev/null"]
    env:
    - {name: POD_NAME, value: foo}
    - {name: ANNOTATION, valueFrom: {fieldRef: {fieldPath: "metadata.annotations['mysubpath']"}}}
    volumeMounts:
    - {name: workdir1, mountPath: /subpath_mount, subPathExpr: "$(ANNOTATION)/$(POD_NAME)"}
    - {name: workdir1, mountPath: /volume_mount}
---
apiVersion: v1
kind: Pod
metadata:
  name: subpath-retry
  annotations: {notmysubpath: mypath}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  volumes: [{name: workdir1, emptyDir: {}}]
  containers:
  - name: dapi-container
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "tail -f /dev/null"]
    env:
    - {name: POD_NAME, value: foo}
    - {name: ANNOTATION, valueFrom: {fieldRef: {fieldPath: "metadata.annotations['mysubpath']"}}}
    volumeMounts:
    - {name: workdir1, mountPath: /subpath_mount, subPathExpr: "$(ANNOTATION)/$(POD_NAME)"}
    - {name: workdir1, mountPath: /volume_mount}
---
apiVersion: v1
kind: Pod
metadata: {name: init-fails-never}
spec:
  restartPolicy: Never
  initContainers:
  - {name: init1, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["/bin/false"]}
  - {name: init2, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["/bin/true"]}
  containers:
  - {name: run1, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["/bin/true"]}
---
apiVersion: v1
kind: Pod
metadata: {name: bin-false}
spec:
  containers:
  - {name: bin-false, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["/bin/false"]}
---
apiVersion: v1
kind: Pod
metadata: {name: pod-logs-websocket}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo container is alive; sleep 10000"]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: my-configmap}
data: {configmap-key: configmap-value}
---
apiVersion: v1
kind: Pod
metadata: {name: subpath-configmap-resolv}
spec:
  restartPolicy: Never
  volumes: [{name: test-volume, configMap: {name: my-configmap}}]
  containers:
  - name: test-container-subpath
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["cat", "/etc/resolv.conf"]
    volumeMounts: [{name: test-volume, mountPath: /etc/resolv.conf, subPath: configmap-key}]
"#;

/// A running pod of the Pods tests.
fn running_pod(name: &str, labels: Value, grace: i64) -> String {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "terminationGracePeriodSeconds": grace,
            "containers": [{"name": "main", "image": "busybox:1.36",
                "imagePullPolicy": "IfNotPresent", "command": ["sleep", "3600"]}],
        },
    })
    .to_string()
}

#[test]
fn pod_environment_expansion_subpaths_and_api_verbs_as_upstream() {
    let n = NodeServer::start();
    let s = &n.server;
    let alternative = "rkube-test/busybox-alt:1";
    ensure_busybox_variant(alternative, &["ENV ALT=1"]);

    // Pods, service environment variables: the service exists before the pod.
    s.ok_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"fooservice","labels":{"name":"fooservice"}},
            "spec":{"ports":[{"port":8765,"targetPort":8080}],"selector":{"name":"serverx"}}}"#,
    );
    s.ok_stdin(&["apply", "-f", "-"], PODS);
    s.ok_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"client-envvars"},
            "spec":{"restartPolicy":"Never","containers":[{"name":"env3cont","image":"busybox:1.36",
            "imagePullPolicy":"IfNotPresent","command":["sh","-c","env"]}]}}"#,
    );
    // Pods API verbs: running pods to update, patch, and delete by collection.
    for (name, labels) in [
        ("pod-update", json!({"name": "pod-update", "time": "1"})),
        ("pod-status", json!({"name": "pod-status"})),
        ("pod-lifecycle", json!({"test-pod-static": "true"})),
        ("pod-collection-0", json!({"type": "Testing"})),
        ("pod-collection-1", json!({"type": "Testing"})),
        ("pod-collection-2", json!({"type": "Testing"})),
    ] {
        s.ok_stdin(&["create", "-f", "-"], &running_pod(name, labels, 1));
    }

    // DownwardAPI, environment for default CPU and memory limits and requests: without
    // limits, the node's allocatable (upstream expects `[1-9]`).
    let log = succeeded_with_output(s, "dapi-defaults", &[]);
    for var in ["CPU_LIMIT", "MEMORY_LIMIT"] {
        let value = env_value(&log, var);
        assert!(
            value.starts_with(|c: char| ('1'..='9').contains(&c))
                && value.chars().all(|c| c.is_ascii_digit()),
            "{var}={value}"
        );
    }
    // Host IP, host IPs, pod UID, and the limits and requests rounded up as upstream's.
    let p = pod(s, "dapi-fields");
    let log = succeeded_with_output(
        s,
        "dapi-fields",
        &[
            "CPU_LIMIT=2",
            "MEMORY_LIMIT=67108864",
            "CPU_REQUEST=1",
            "MEMORY_REQUEST=33554432",
            "POD_NAME=dapi-fields",
            "POD_NAMESPACE=default",
        ],
    );
    let p = if p["status"]["hostIP"].is_string() { p } else { pod(s, "dapi-fields") };
    let host_ip = env_value(&log, "HOST_IP");
    assert!(host_ip.parse::<std::net::IpAddr>().is_ok(), "HOST_IP={host_ip}");
    assert_eq!(p["status"]["hostIP"], host_ip);
    let host_ips: Vec<&str> = env_value(&log, "HOST_IPS").split(',').collect();
    let status_ips: Vec<&str> = p["status"]["hostIPs"]
        .as_array()
        .expect("status.hostIPs")
        .iter()
        .map(|ip| ip["ip"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(host_ips, status_ips, "HOST_IPS is status.hostIPs joined by commas");
    let uid = env_value(&log, "POD_UID");
    assert_eq!(p["metadata"]["uid"], uid);
    let shape: Vec<usize> = uid.split('-').map(str::len).collect();
    assert_eq!(shape, [8, 4, 4, 4, 12], "POD_UID={uid}");
    let pod_ip = env_value(&log, "POD_IP");
    assert!(pod_ip.parse::<std::net::IpAddr>().is_ok(), "POD_IP={pod_ip}");

    // Environment variables, command expansion and command argument expansion.
    succeeded_with_output(s, "expand-command", &["test-value"]);
    succeeded_with_output(s, "expand-args", &["test-value"]);

    // VolumeSubpathEnvExpansion, subpath with absolute path / with backticks (`..`):
    // upstream's WaitForPodContainerToFail, the container waiting in
    // CreateContainerConfigError, and never started.
    for name in ["subpath-absolute", "subpath-backticks"] {
        let p = wait_pod(s, name, 60, |p| waiting_reason(p, 0) == "CreateContainerConfigError");
        assert_eq!(phase(&p), "Pending", "{name}");
        assert!(p["status"]["containerStatuses"][0]["lastState"]["terminated"].is_null());
    }

    // VolumeSubpathEnvExpansion, subpath test writes.
    wait_pod(s, "subpath-writes", 60, |p| phase(p) == "Running");
    s.ok(&["exec", "subpath-writes", "--", "sh", "-c", "touch /volume_mount/mypath/foo/test.log"]);
    s.ok(&["exec", "subpath-writes", "--", "sh", "-c", "test -f /subpath_mount/test.log"]);
    s.ok(&["annotate", "pod", "subpath-writes", "--overwrite", "mysubpath=mynewpath"]);
    let p = wait_pod(s, "subpath-writes", 30, |p| phase(p) == "Running");
    assert_eq!(p["metadata"]["annotations"]["mysubpath"], "mynewpath");

    // VolumeSubpathEnvExpansion, subpath ready from failed state: not running while the
    // annotation is missing (the expansion is absolute), running once it is set.
    let p =
        wait_pod(s, "subpath-retry", 60, |p| waiting_reason(p, 0) == "CreateContainerConfigError");
    assert_ne!(phase(&p), "Running");
    s.ok(&["annotate", "pod", "subpath-retry", "mysubpath=mypath"]);
    wait_pod(s, "subpath-retry", 60, |p| phase(p) == "Running");

    // Both subpath pods deleted gracefully, and gone.
    s.ok(&["delete", "pod", "subpath-writes", "subpath-retry", "--wait=true", "--timeout=60s"]);
    for name in ["subpath-writes", "subpath-retry"] {
        assert!(pod(s, name).is_null(), "{name} still there");
    }

    // Pods, service environment variables.
    let service = s.ok(&["get", "service", "fooservice", "-o", "json"]);
    let service: Value = serde_json::from_str(&service).expect("service JSON");
    let cluster_ip = service["spec"]["clusterIP"].as_str().expect("clusterIP").to_string();
    succeeded_with_output(
        s,
        "client-envvars",
        &[
            &format!("FOOSERVICE_SERVICE_HOST={cluster_ip}"),
            "FOOSERVICE_SERVICE_PORT=8765",
            &format!("FOOSERVICE_PORT=tcp://{cluster_ip}:8765"),
            &format!("FOOSERVICE_PORT_8765_TCP=tcp://{cluster_ip}:8765"),
            "FOOSERVICE_PORT_8765_TCP_PROTO=tcp",
            "FOOSERVICE_PORT_8765_TCP_PORT=8765",
            &format!("FOOSERVICE_PORT_8765_TCP_ADDR={cluster_ip}"),
        ],
    );

    // init-container-fails-stops-app-restartnever-pod: Failed, init1 terminated non-zero,
    // init2 and the app never started, Initialized False.
    let p = wait_pod(s, "init-fails-never", 60, |p| phase(p) == "Failed");
    let inits = &p["status"]["initContainerStatuses"];
    assert_ne!(inits[0]["state"]["terminated"]["exitCode"].as_i64().unwrap_or(0), 0, "{inits:#}");
    assert!(inits[1]["state"]["waiting"].is_object(), "init2 never ran: {inits:#}");
    let app = &p["status"]["containerStatuses"][0];
    assert!(app["state"]["waiting"].is_object(), "the app never ran: {app:#}");
    assert_eq!(app["ready"], false);
    let initialized = p["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Initialized").cloned())
        .expect("Initialized condition");
    assert_eq!(initialized["status"], "False", "{initialized:#}");

    // SubPath: Reading content from a configmap volume. #2 (over /etc/resolv.conf).
    let log = succeeded_with_output(s, "subpath-configmap-resolv", &[]);
    assert_eq!(log.trim_end(), "configmap-value");

    // Kubelet, failed pod, delete: a crash-looping pod deleted, and gone.
    wait_pod(s, "bin-false", 60, |p| {
        p["status"]["containerStatuses"][0]["state"]["terminated"].is_object()
            || p["status"]["containerStatuses"][0]["lastState"]["terminated"].is_object()
    });
    s.ok(&["delete", "pod", "bin-false", "--wait=true", "--timeout=60s"]);
    assert!(pod(s, "bin-false").is_null());

    logs_over_websockets(s);
    pods_api_verbs(s, alternative);
}

/// Pods, logs from websockets: `pods/log` upgraded to a WebSocket, the messages
/// concatenated until the server closes, exactly the log; binary messages with
/// `binary.k8s.io` (upstream's e2e), base64 text with `base64.binary.k8s.io`.
fn logs_over_websockets(s: &RkubeServer) {
    use base64::Engine;
    use rkube_conformance::streaming::{WebSocketClient, BINARY, TEXT};
    wait_pod(s, "pod-logs-websocket", 60, |p| phase(p) == "Running");
    s.wait_until("the log written", Duration::from_secs(30), || {
        let log = s.ok(&["logs", "pod-logs-websocket"]);
        (log == "container is alive\n", log)
    });
    let path = "/api/v1/namespaces/default/pods/pod-logs-websocket/log?container=main";
    for (protocol, opcode) in [("binary.k8s.io", BINARY), ("base64.binary.k8s.io", TEXT)] {
        let mut socket = WebSocketClient::connect(s, path, protocol);
        assert_eq!(socket.status, 101, "{}", socket.head);
        assert_eq!(socket.protocol().as_deref(), Some(protocol), "{}", socket.head);
        let mut log = Vec::new();
        for (kind, payload) in socket.read_to_close() {
            assert_eq!(kind, opcode, "{protocol}: message kind");
            if opcode == TEXT {
                let text = String::from_utf8(payload).expect("base64 text");
                let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim());
                log.extend(bytes.expect("base64"));
            } else {
                log.extend(payload);
            }
        }
        assert_eq!(String::from_utf8_lossy(&log), "container is alive\n", "{protocol}");
    }
    // A log that cannot be read is an error before any upgrade.
    let bad = "/api/v1/namespaces/default/pods/pod-logs-websocket/log?container=nope";
    let socket = WebSocketClient::connect(s, bad, "binary.k8s.io");
    assert_eq!(socket.status, 400, "{}", socket.head);
}

/// Taint, Pod Eviction on taint removal: a pod tolerating a NoExecute taint for a while is
/// marked for deletion when the taint comes and not deleted once it goes, past its
/// toleration. On a simulated node (the taint eviction controller's behaviour).
#[test]
fn removing_a_noexecute_taint_cancels_the_pods_eviction() {
    let s = RkubeServer::start();
    let nodes = SimulatedNodes::start(&s, 1, &[]);
    nodes.wait_ready(&s, 1, Duration::from_secs(60));
    let node = s.ok(&["get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"]);
    let node = node.trim();
    let key = "kubernetes.io/e2e-evict-taint-key";
    let toleration = 15;
    let manifest = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "taint-eviction-4"},
        "spec": {
            "nodeName": node,
            "tolerations": [{"key": key, "operator": "Equal", "value": "evictTaintVal",
                "effect": "NoExecute", "tolerationSeconds": toleration}],
            "containers": [{"name": "pause", "image": "busybox:1.36"}],
        },
    });
    s.ok_stdin(&["create", "-f", "-"], &manifest.to_string());
    wait_pod(&s, "taint-eviction-4", 60, |p| phase(p) == "Running");
    let taint = format!("{key}=evictTaintVal:NoExecute");
    s.ok(&["taint", "node", node, &taint]);
    let tainted = std::time::Instant::now();
    // Upstream waits a short time so that the pod is queued for deletion (nothing shows it
    // before it is called off: the cancel event below proves it was).
    std::thread::sleep(Duration::from_secs(3));
    s.ok(&["taint", "node", node, &format!("{key}:NoExecute-")]);
    // Past the toleration with a margin, the pod is never marked for deletion.
    let until = tainted + Duration::from_secs(toleration + 10);
    while std::time::Instant::now() < until {
        let p = pod(&s, "taint-eviction-4");
        assert!(p["metadata"]["deletionTimestamp"].is_null(), "the pod was evicted: {p:#}");
        assert_eq!(phase(&p), "Running");
        std::thread::sleep(Duration::from_millis(500));
    }
    let events = s.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=taint-eviction-4,reason=TaintManagerEviction",
        "-o",
        "jsonpath={.items[*].message}",
    ]);
    assert!(events.contains("Cancelling deletion of Pod default/taint-eviction-4"), "{events}");
}

/// Pods, update / patching status / delete a collection / completes the lifecycle of a Pod
/// and the PodStatus.
fn pods_api_verbs(s: &RkubeServer, alternative: &str) {
    // Pods, update: the label changed through an update (GET then PUT, retried on a
    // conflict), then found by a selector on the new value.
    wait_pod(s, "pod-update", 60, |p| phase(p) == "Running");
    let mut replaced = false;
    for _ in 0..5 {
        let mut p = pod(s, "pod-update");
        p["metadata"]["labels"]["time"] = json!("2");
        let out = s.kubectl_with(&s.kubectl, &["replace", "-f", "-"], Some(&p.to_string()));
        if out.status.success() {
            replaced = true;
            break;
        }
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(err.contains("the object has been modified"), "{err}");
    }
    assert!(replaced, "the update kept conflicting");
    let found = s.ok(&["get", "pods", "-l", "time=2", "-o", "name"]);
    assert_eq!(found.trim(), "pod/pod-update");
    let p = wait_pod(s, "pod-update", 30, |p| phase(p) == "Running");
    assert_eq!(p["status"]["containerStatuses"][0]["restartCount"], 0);

    // Pods, patching status: a strategic-merge patch of the status subresource, with an
    // annotation; the reply has all three.
    wait_pod(s, "pod-status", 60, |p| phase(p) == "Running");
    let patched = s.ok(&[
        "patch",
        "pod",
        "pod-status",
        "--subresource=status",
        "--type=strategic",
        "-o",
        "json",
        "-p",
        r#"{"metadata":{"annotations":{"patchedstatus":"true"}},"status":{"message":"Patched by e2e test","reason":"E2E"}}"#,
    ]);
    let patched: Value = serde_json::from_str(&patched).expect("patched pod");
    assert_eq!(patched["metadata"]["annotations"]["patchedstatus"], "true");
    assert_eq!(patched["status"]["message"], "Patched by e2e test");
    assert_eq!(patched["status"]["reason"], "E2E");

    // Pods, completes the lifecycle of a Pod and the PodStatus.
    wait_pod(s, "pod-lifecycle", 60, |p| phase(p) == "Running");
    let patch = json!({"metadata": {"labels": {"test-pod": "patched"}},
        "spec": {"containers": [{"name": "main", "image": alternative}]}});
    s.ok(&["patch", "pod", "pod-lifecycle", "--type=strategic", "-p", &patch.to_string()]);
    let p = pod(s, "pod-lifecycle");
    assert_eq!(p["metadata"]["labels"]["test-pod"], "patched");
    assert_eq!(p["spec"]["containers"][0]["image"], alternative);
    // The kubelet restarts the container with the new image.
    wait_pod(s, "pod-lifecycle", 60, |p| {
        let c = &p["status"]["containerStatuses"][0];
        c["image"] == alternative && c["state"]["running"].is_object()
    });
    // UpdateStatus: Ready and ContainersReady False in what comes back.
    let mut p = pod(s, "pod-lifecycle");
    for condition in p["status"]["conditions"].as_array_mut().expect("conditions") {
        if condition["type"] == "Ready" || condition["type"] == "ContainersReady" {
            condition["status"] = json!("False");
        }
    }
    let name = "/api/v1/namespaces/default/pods/pod-lifecycle/status";
    let reply = s.curl_body(&["-X", "PUT"], name, p.to_string().as_bytes());
    assert_eq!(reply.code, 200, "{}", reply.body);
    let reply: Value = serde_json::from_str(&reply.body).expect("status reply");
    for kind in ["Ready", "ContainersReady"] {
        let c = reply["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == kind).cloned())
            .unwrap_or_default();
        assert_eq!(c["status"], "False", "{kind}: {:#}", reply["status"]);
    }
    // DeleteCollection by label (grace 1), then the pod is gone.
    let collection = "/api/v1/namespaces/default/pods?labelSelector=test-pod-static%3Dtrue";
    let body = br#"{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":1}"#;
    let deleted = s.curl_body(&["-X", "DELETE"], collection, body);
    assert_eq!(deleted.code, 200, "{}", deleted.body);

    // Pods, delete a collection: three running pods, DeleteCollection with grace 1 by
    // label, then none left with the label.
    for i in 0..3 {
        wait_pod(s, &format!("pod-collection-{i}"), 60, |p| phase(p) == "Running");
    }
    let collection = "/api/v1/namespaces/default/pods?labelSelector=type%3DTesting";
    let deleted = s.curl_body(&["-X", "DELETE"], collection, body);
    assert_eq!(deleted.code, 200, "{}", deleted.body);
    let list: Value = serde_json::from_str(&deleted.body).expect("the deleted pods");
    assert_eq!(list["kind"], "PodList");
    s.wait_until("the collection gone", Duration::from_secs(60), || {
        let left = s.ok(&["get", "pods", "-l", "type=Testing", "-o", "name"]);
        (left.trim().is_empty(), left)
    });
    s.wait_until("pod-lifecycle gone", Duration::from_secs(60), || {
        let out = s.kubectl(&["get", "pod", "pod-lifecycle"]);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        (err.contains("NotFound"), err)
    });
}
