//! Sidecar containers (init containers with `restartPolicy: Always`, GA in Kubernetes 1.33)
//! on a real Docker engine, as a user sees them through stock kubectl: a sidecar starts in
//! its turn among the init containers and the next one waits until it has started (its
//! startup probe passed); it keeps running beside the app, its readiness counts for the
//! pod's, and it is restarted whenever it ends, even in a pod that never restarts; a pod
//! whose app containers finished is stopped and completes whatever its sidecars do; on
//! deletion, the app containers stop first, then the sidecars, the last declared first.
//! The API server refuses what upstream refuses (probes on plain init containers, a
//! `restartPolicy` on app containers).

use std::time::Duration;

use rkube_conformance::cluster::jsonpath;
use rkube_conformance::node::NodeServer;

const BUSYBOX: &str = "image: \"busybox:1.36\"\n    imagePullPolicy: IfNotPresent";

fn get(n: &NodeServer, pod: &str, path: &str) -> String {
    n.server.ok(&["get", "pod", pod, "-o", &jsonpath(path)]).trim().to_string()
}

fn wait(
    n: &NodeServer,
    pod: &str,
    path: &str,
    seconds: u64,
    check: impl Fn(&str) -> bool,
) -> String {
    n.wait_for(&["get", "pod", pod, "-o", &jsonpath(path)], Duration::from_secs(seconds), |text| {
        check(text.trim())
    })
    .trim()
    .to_string()
}

/// The READY column of `kubectl get pod`.
fn ready_column(n: &NodeServer, pod: &str) -> String {
    let out = n.server.ok(&["get", "pod", pod, "--no-headers"]);
    out.split_whitespace().nth(1).unwrap_or_default().to_string()
}

#[test]
fn a_sidecar_starts_in_turn_and_its_readiness_counts() {
    let n = NodeServer::start();
    let s = &n.server;
    let manifest = format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: web}}
spec:
  volumes: [{{name: shared, emptyDir: {{}}}}]
  initContainers:
  - name: setup
    {BUSYBOX}
    command: ["sh", "-c", "date +%s > /shared/setup"]
    volumeMounts: [{{name: shared, mountPath: /shared}}]
  - name: proxy
    {BUSYBOX}
    restartPolicy: Always
    command: ["sh", "-c", "sleep 3; date +%s > /shared/proxy; exec sleep 3600"]
    volumeMounts: [{{name: shared, mountPath: /shared}}]
    startupProbe: {{exec: {{command: ["test", "-f", "/shared/proxy"]}}, periodSeconds: 1, failureThreshold: 30}}
    readinessProbe: {{exec: {{command: ["test", "-f", "/tmp/ready"]}}, periodSeconds: 1, failureThreshold: 1}}
  containers:
  - name: app
    {BUSYBOX}
    command: ["sh", "-c", "date +%s > /shared/app; exec sleep 3600"]
    volumeMounts: [{{name: shared, mountPath: /shared}}]
"#
    );
    s.ok_stdin(&["apply", "-f", "-"], &manifest);
    // While the sidecar's startup probe has not passed, the app waits.
    wait(&n, "web", "{.status.initContainerStatuses[1].state.running.startedAt}", 60, |t| {
        !t.is_empty()
    });
    let app_state = get(&n, "web", "{.status.containerStatuses[0].state.waiting.reason}");
    assert_eq!(app_state, "PodInitializing", "the app must wait for the sidecar to start");
    wait(&n, "web", "{.status.phase}", 60, |p| p == "Running");
    // The order, as the containers' own clocks saw it: setup, then the sidecar's start, then
    // the app.
    let times = s.ok(&[
        "exec",
        "web",
        "-c",
        "app",
        "--",
        "cat",
        "/shared/setup",
        "/shared/proxy",
        "/shared/app",
    ]);
    let times: Vec<u64> = times.split_whitespace().map(|t| t.parse().expect("a time")).collect();
    assert!(times[0] <= times[1] && times[1] <= times[2], "setup, proxy, app: {times:?}");
    assert!(
        times[1] >= times[0] + 2,
        "the sidecar's 3 s before its startup probe passed: {times:?}"
    );
    assert_eq!(
        get(&n, "web", "{.status.initContainerStatuses[0].state.terminated.reason}"),
        "Completed"
    );
    assert_eq!(get(&n, "web", "{.status.initContainerStatuses[1].started}"), "true");
    assert_eq!(get(&n, "web", "{.status.conditions[?(@.type==\"Initialized\")].status}"), "True");
    // Its readiness probe fails: the pod is not ready, and says which container.
    assert_eq!(get(&n, "web", "{.status.initContainerStatuses[1].ready}"), "false");
    let ready = get(&n, "web", "{.status.conditions[?(@.type==\"Ready\")].message}");
    assert_eq!(ready, "containers with unready status: [proxy]");
    assert_eq!(ready_column(&n, "web"), "1/2");
    s.ok(&["exec", "web", "-c", "proxy", "--", "touch", "/tmp/ready"]);
    wait(&n, "web", "{.status.conditions[?(@.type==\"Ready\")].status}", 30, |r| r == "True");
    assert_eq!(ready_column(&n, "web"), "2/2");
    assert_eq!(get(&n, "web", "{.status.initContainerStatuses[1].restartCount}"), "0");

    // What upstream's validation refuses.
    let bad = format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: bad}}
spec:
  initContainers:
  - name: plain
    {BUSYBOX}
    livenessProbe: {{exec: {{command: ["true"]}}}}
  - name: wrong
    {BUSYBOX}
    restartPolicy: Never
  containers:
  - name: app
    {BUSYBOX}
    restartPolicy: Always
"#
    );
    let err = s.fails_stdin(&["apply", "-f", "-"], &bad);
    for line in [
        "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
        "spec.initContainers[1].restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
        "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
    ] {
        assert!(err.contains(line), "{line:?} missing from {err}");
    }
}

#[test]
fn sidecars_restart_always_and_do_not_keep_a_finished_pod_running() {
    let n = NodeServer::start();
    let s = &n.server;
    let pod = |name: &str, sidecar: &str, app: &str| {
        format!(
            r#"
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 20
  initContainers:
  - name: side
    {BUSYBOX}
    restartPolicy: Always
    command: ["sh", "-c", {sidecar:?}]
  containers:
  - name: main
    {BUSYBOX}
    command: ["sh", "-c", {app:?}]
---"#
        )
    };
    let manifests = [
        // A sidecar that crashes is restarted, though the pod's policy is Never.
        pod("crashy", "sleep 1; exit 3", "sleep 3600"),
        // The app ends: the sidecar is stopped (it exits on SIGTERM) and the pod completes.
        pod("job", "trap 'exit 0' TERM; sleep 3600 & wait", "sleep 3; exit 0"),
        pod("failing", "trap 'exit 0' TERM; sleep 3600 & wait", "sleep 3; exit 4"),
    ]
    .concat();
    s.ok_stdin(&["apply", "-f", "-"], &manifests);
    let restarts = "{.status.initContainerStatuses[0].restartCount}";
    wait(&n, "crashy", restarts, 60, |c| c.parse::<u32>().is_ok_and(|c| c >= 1));
    assert_eq!(get(&n, "crashy", "{.status.phase}"), "Running");
    assert_eq!(get(&n, "crashy", "{.status.containerStatuses[0].restartCount}"), "0");
    let last =
        get(&n, "crashy", "{.status.initContainerStatuses[0].lastState.terminated.exitCode}");
    let now = get(&n, "crashy", "{.status.initContainerStatuses[0].state.terminated.exitCode}");
    assert!(last == "3" || now == "3", "the sidecar's exit code: last {last:?}, now {now:?}");

    // Well within the 20 s grace period: the sidecar went at the SIGTERM.
    wait(&n, "job", "{.status.phase}", 40, |p| p == "Succeeded");
    assert_eq!(get(&n, "job", "{.status.containerStatuses[0].state.terminated.exitCode}"), "0");
    assert_eq!(get(&n, "job", "{.status.initContainerStatuses[0].state.terminated.exitCode}"), "0");
    assert_eq!(get(&n, "job", "{.status.initContainerStatuses[0].restartCount}"), "0");
    wait(&n, "failing", "{.status.phase}", 40, |p| p == "Failed");
    assert_eq!(get(&n, "failing", "{.status.containerStatuses[0].state.terminated.exitCode}"), "4");
    let out = s.ok(&["get", "pods", "job", "failing", "--no-headers"]);
    assert!(out.contains("Completed") && out.contains("Error"), "{out}");
}

#[test]
fn deletion_stops_the_app_first_then_the_sidecars_last_first() {
    let n = NodeServer::start();
    let s = &n.server;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let log = dir.path().join("order");
    // Each writes its name when it gets SIGTERM; the app takes a second about it.
    let on_term = |name: &str, delay: &str| {
        format!("trap '{delay}echo {name} >> /log/order; exit 0' TERM; sleep 3600 & wait")
    };
    let manifest = format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: ordered}}
spec:
  terminationGracePeriodSeconds: 20
  volumes: [{{name: log, hostPath: {{path: {dir:?}, type: Directory}}}}]
  initContainers:
  - name: first
    {BUSYBOX}
    restartPolicy: Always
    command: ["sh", "-c", {first:?}]
    volumeMounts: [{{name: log, mountPath: /log}}]
  - name: second
    {BUSYBOX}
    restartPolicy: Always
    command: ["sh", "-c", {second:?}]
    volumeMounts: [{{name: log, mountPath: /log}}]
  containers:
  - name: app
    {BUSYBOX}
    command: ["sh", "-c", {app:?}]
    volumeMounts: [{{name: log, mountPath: /log}}]
"#,
        dir = dir.path().display().to_string(),
        first = on_term("first", ""),
        second = on_term("second", ""),
        app = on_term("app", "sleep 1; "),
    );
    s.ok_stdin(&["apply", "-f", "-"], &manifest);
    wait(&n, "ordered", "{.status.phase}", 60, |p| p == "Running");
    // kubectl waits for the pod object to go, which the kubelet deletes last.
    s.ok(&["delete", "pod", "ordered", "--timeout=60s"]);
    let order = std::fs::read_to_string(&log).expect("the containers wrote their names");
    assert_eq!(order, "app\nsecond\nfirst\n", "stop order");
}
