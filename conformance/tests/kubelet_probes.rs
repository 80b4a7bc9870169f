//! Probes and lifecycle hooks on a real Docker engine, seen as a user sees them through
//! stock kubectl: readiness (httpGet against busybox httpd, exec, tcpSocket) decides `READY`
//! and the pod's Ready condition and flips back; a startup probe holds liveness and readiness
//! back and sets `started`; failing liveness and startup probes restart the container with
//! upstream's `Unhealthy` and `Killing` events; postStart runs before the container is
//! reported running (and a failing one restarts it); preStop runs before the container stops
//! on deletion, and the pod object still goes.
//!
//! The kubelet probes the pods' IPs from the node: each is checked to be on a local bridge.

use std::time::{Duration, Instant};

use rkube_conformance::cluster::{jsonpath, RkubeServer};
use rkube_conformance::node::{assert_route_is_local, NodeServer};

/// Every event of the namespace: (involved object name, reason, message, count).
fn events(s: &RkubeServer) -> Vec<(String, String, String, i64)> {
    let out = s.ok(&["get", "events", "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&out).expect("events as JSON");
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["involvedObject"]["name"].as_str().unwrap_or("").to_string(),
                e["reason"].as_str().unwrap_or("").to_string(),
                e["message"].as_str().unwrap_or("").to_string(),
                e["count"].as_i64().unwrap_or(1),
            )
        })
        .collect()
}

/// Waits (at most `timeout`) for an event on `pod` with `reason` whose message `check`
/// accepts; returns the message.
fn wait_for_event(
    n: &NodeServer,
    pod: &str,
    reason: &str,
    timeout: Duration,
    check: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + timeout;
    loop {
        let all = events(&n.server);
        if let Some(e) = all.iter().find(|e| e.0 == pod && e.1 == reason && check(&e.2)) {
            return e.2.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no {reason} event on {pod} as expected; events: {all:#?}\n{}",
            n.server.log()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The pod's IP once it has one, checked to be local.
fn local_pod_ip(n: &NodeServer, pod: &str) -> String {
    let ip = n.wait_for(
        &["get", "pod", pod, "-o", &jsonpath("{.status.podIP}")],
        Duration::from_secs(40),
        |ip| !ip.trim().is_empty(),
    );
    let ip = ip.trim().to_string();
    assert_route_is_local(&ip);
    ip
}

fn condition(n: &NodeServer, pod: &str, kind: &str) -> serde_json::Value {
    let path = format!("{{.status.conditions[?(@.type==\"{kind}\")]}}");
    let text = n.server.ok(&["get", "pod", pod, "-o", &jsonpath(&path)]);
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
}

const STATUS: &str = "{.status.containerStatuses[0].ready}/{.status.containerStatuses[0].started}";

#[test]
fn readiness_and_startup_probes_decide_ready_and_started() {
    let n = NodeServer::start();
    let s = &n.server;
    let manifest = r#"
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /www && echo hi > /www/index.html && exec httpd -f -p 8080 -h /www"]
    ports: [{name: http, containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /ready, port: http, httpHeaders: [{name: X-Probe, value: "yes"}]}
      periodSeconds: 1
      failureThreshold: 1
---
apiVersion: v1
kind: Pod
metadata: {name: execready}
spec:
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "sleep 3; touch /tmp/ready; exec sleep 3600"]
    readinessProbe: {exec: {command: ["cat", "/tmp/ready"]}, periodSeconds: 1, failureThreshold: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: tcpready}
spec:
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "sleep 3; exec httpd -f -p 9000 -h /var/www"]
    readinessProbe: {tcpSocket: {port: 9000}, periodSeconds: 1, failureThreshold: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: starter}
spec:
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "sleep 6; touch /tmp/started; exec sleep 3600"]
    startupProbe: {exec: {command: ["cat", "/tmp/started"]}, periodSeconds: 1, failureThreshold: 30}
    # Would kill the container at once if it ran before the startup probe succeeded.
    livenessProbe: {exec: {command: ["cat", "/tmp/started"]}, periodSeconds: 1, failureThreshold: 1}
    readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1}
"#;
    s.ok_stdin(&["apply", "-f", "-"], manifest);
    let minute = Duration::from_secs(60);

    // The startup probe holds everything back: running, not started, not ready.
    n.wait_for(
        &["get", "pod", "starter", "-o", &jsonpath(&format!("{{.status.phase}}/{STATUS}"))],
        minute,
        |v| v == "Running/false/false",
    );
    local_pod_ip(&n, "starter");

    // httpGet: httpd answers 404 for /ready until the file exists.
    local_pod_ip(&n, "web");
    n.wait_for(
        &["get", "pod", "web", "-o", &jsonpath(&format!("{{.status.phase}}/{STATUS}"))],
        minute,
        |v| v == "Running/false/true",
    );
    let ready = condition(&n, "web", "Ready");
    assert_eq!(ready["status"], "False", "{ready}");
    assert_eq!(ready["reason"], "ContainersNotReady", "{ready}");
    assert_eq!(ready["message"], "containers with unready status: [app]", "{ready}");
    assert_eq!(condition(&n, "web", "ContainersReady")["reason"], "ContainersNotReady");
    let table = s.ok(&["get", "pod", "web"]);
    assert!(table.contains("0/1") && table.contains("Running"), "{table}");
    wait_for_event(&n, "web", "Unhealthy", minute, |m| {
        m == "Readiness probe failed: HTTP probe failed with statuscode: 404"
    });
    s.ok(&["exec", "web", "--", "touch", "/www/ready"]);
    n.wait_for(&["get", "pod", "web", "-o", &jsonpath(STATUS)], minute, |v| v == "true/true");
    let table = s.ok(&["get", "pod", "web"]);
    assert!(table.contains("1/1") && table.contains("Running"), "{table}");
    assert_eq!(condition(&n, "web", "Ready")["status"], "True");
    assert_eq!(condition(&n, "web", "ContainersReady")["status"], "True");
    // Ready flips back when the probe fails again.
    s.ok(&["exec", "web", "--", "rm", "/www/ready"]);
    n.wait_for(&["get", "pod", "web", "-o", &jsonpath(STATUS)], minute, |v| v == "false/true");
    let ready = condition(&n, "web", "Ready");
    assert_eq!(ready["status"], "False", "{ready}");
    assert_eq!(ready["reason"], "ContainersNotReady", "{ready}");
    // The repeated failure is one event counted up, as upstream aggregates it.
    let deadline = Instant::now() + minute;
    loop {
        let all = events(s);
        let failures: Vec<_> = all
            .iter()
            .filter(|e| e.0 == "web" && e.1 == "Unhealthy" && e.2.ends_with("statuscode: 404"))
            .collect();
        if failures.len() == 1 && failures[0].3 >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "404 failures not counted up: {failures:?}");
        std::thread::sleep(Duration::from_millis(250));
    }

    // exec and tcpSocket: not ready until the file exists / the port listens.
    n.wait_for(&["get", "pod", "execready", "-o", &jsonpath(STATUS)], minute, |v| v == "true/true");
    wait_for_event(&n, "execready", "Unhealthy", minute, |m| {
        m.starts_with("Readiness probe failed: cat: can't open '/tmp/ready'")
    });
    let tcp_ip = local_pod_ip(&n, "tcpready");
    n.wait_for(&["get", "pod", "tcpready", "-o", &jsonpath(STATUS)], minute, |v| v == "true/true");
    wait_for_event(&n, "tcpready", "Unhealthy", minute, |m| {
        m == format!("Readiness probe failed: dial tcp {tcp_ip}:9000: connect: connection refused")
    });

    // Startup: once the file exists, started and then ready; liveness never fired.
    n.wait_for(&["get", "pod", "starter", "-o", &jsonpath(STATUS)], minute, |v| v == "true/true");
    let restarts = s.ok(&[
        "get",
        "pod",
        "starter",
        "-o",
        &jsonpath("{.status.containerStatuses[0].restartCount}"),
    ]);
    assert_eq!(restarts.trim(), "0", "liveness ran before the startup probe succeeded");
    let starter_events = events(s);
    assert!(
        starter_events.iter().any(|e| e.0 == "starter"
            && e.1 == "Unhealthy"
            && e.2.starts_with("Startup probe failed: cat: can't open '/tmp/started'")),
        "{starter_events:#?}"
    );
    assert!(
        !starter_events.iter().any(|e| e.0 == "starter" && e.2.starts_with("Liveness probe")),
        "{starter_events:#?}"
    );
}

#[test]
fn failing_liveness_and_startup_probes_restart_the_container() {
    let n = NodeServer::start();
    let s = &n.server;
    let manifest = r#"
apiVersion: v1
kind: Pod
metadata: {name: live}
spec:
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "touch /tmp/healthy; sleep 2; rm /tmp/healthy; exec sleep 3600"]
    livenessProbe:
      exec: {command: ["cat", "/tmp/healthy"]}
      periodSeconds: 1
      failureThreshold: 2
      terminationGracePeriodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata: {name: deadport}
spec:
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    livenessProbe:
      httpGet: {path: /healthz, port: 8081}
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 1
      terminationGracePeriodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata: {name: stuck}
spec:
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    startupProbe:
      exec: {command: ["sh", "-c", "echo not yet; exit 1"]}
      periodSeconds: 1
      failureThreshold: 2
      terminationGracePeriodSeconds: 1
"#;
    s.ok_stdin(&["apply", "-f", "-"], manifest);
    let minute = Duration::from_secs(60);
    let restart_count = "{.status.containerStatuses[0].restartCount}";

    // Liveness (exec): killed when the file goes, restarted, the exit is the kill's.
    local_pod_ip(&n, "live");
    n.wait_for(&["get", "pod", "live", "-o", &jsonpath(restart_count)], minute, |c| {
        c.parse::<u32>().unwrap_or(0) >= 1
    });
    wait_for_event(&n, "live", "Unhealthy", minute, |m| {
        m.starts_with("Liveness probe failed: cat: can't open '/tmp/healthy'")
    });
    wait_for_event(&n, "live", "Killing", minute, |m| {
        m == "Container app failed liveness probe, will be restarted"
    });
    let last = s.ok(&[
        "get",
        "pod",
        "live",
        "-o",
        &jsonpath("{.status.containerStatuses[0].lastState.terminated.exitCode}"),
    ]);
    assert_eq!(last.trim(), "137", "SIGKILLed after the probe's 1 s grace period");
    let describe = s.ok(&["describe", "pod", "live"]);
    for text in [
        "Unhealthy",
        "Liveness probe failed: cat: can't open '/tmp/healthy'",
        "Killing",
        "Container app failed liveness probe, will be restarted",
        "Liveness:",
    ] {
        assert!(describe.contains(text), "no {text:?} in:\n{describe}");
    }
    let listed = s.ok(&["get", "events"]);
    assert!(listed.contains("Unhealthy") && listed.contains("failed liveness probe"), "{listed}");

    // Liveness (httpGet) with nothing listening: Go's words for the refused connection.
    let ip = local_pod_ip(&n, "deadport");
    wait_for_event(&n, "deadport", "Unhealthy", minute, |m| {
        m == format!(
            "Liveness probe failed: Get \"http://{ip}:8081/healthz\": dial tcp {ip}:8081: \
             connect: connection refused"
        )
    });
    n.wait_for(&["get", "pod", "deadport", "-o", &jsonpath(restart_count)], minute, |c| {
        c.parse::<u32>().unwrap_or(0) >= 1
    });

    // Startup probe that never succeeds: killed and restarted, never started meanwhile.
    local_pod_ip(&n, "stuck");
    wait_for_event(&n, "stuck", "Unhealthy", minute, |m| m == "Startup probe failed: not yet\n");
    wait_for_event(&n, "stuck", "Killing", minute, |m| {
        m == "Container app failed startup probe, will be restarted"
    });
    n.wait_for(&["get", "pod", "stuck", "-o", &jsonpath(restart_count)], minute, |c| {
        c.parse::<u32>().unwrap_or(0) >= 1
    });
    let started = s.ok(&[
        "get",
        "pod",
        "stuck",
        "-o",
        &jsonpath("{.status.containerStatuses[0].started}/{.status.containerStatuses[0].ready}"),
    ]);
    assert_eq!(started.trim(), "false/false");
}

#[test]
fn post_start_and_pre_stop_hooks() {
    let n = NodeServer::start();
    let s = &n.server;
    let host_dir = tempfile::Builder::new().prefix("rkube-prestop-").tempdir().expect("temp dir");
    let manifest = format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: hooked}}
spec:
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "while [ ! -f /tmp/poststart ]; do sleep 0.1; done; cat /tmp/poststart; exec sleep 3600"]
    lifecycle:
      postStart: {{exec: {{command: ["sh", "-c", "sleep 2; echo hello > /tmp/poststart"]}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: badhook}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    lifecycle:
      postStart: {{exec: {{command: ["sh", "-c", "echo oops; exit 3"]}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: bye}}
spec:
  terminationGracePeriodSeconds: 20
  volumes: [{{name: host, hostPath: {{path: "{dir}"}}}}]
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
    volumeMounts: [{{name: host, mountPath: /host}}]
    lifecycle:
      preStop: {{exec: {{command: ["sh", "-c", "echo bye from prestop > /host/prestop"]}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: napper}}
spec:
  terminationGracePeriodSeconds: 20
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
    lifecycle:
      preStop: {{sleep: {{seconds: 3}}}}
"#,
        dir = host_dir.path().display()
    );
    s.ok_stdin(&["apply", "-f", "-"], &manifest);
    let minute = Duration::from_secs(60);

    // postStart: the container is reported running only once the hook is done, so the file
    // the hook writes is there as soon as it is.
    n.wait_for(
        &["get", "pod", "hooked", "-o", &jsonpath("{.status.containerStatuses[0].state.running}")],
        minute,
        |r| r.contains("startedAt"),
    );
    assert_eq!(s.ok(&["exec", "hooked", "--", "cat", "/tmp/poststart"]), "hello\n");
    n.wait_for(&["logs", "hooked"], minute, |l| l == "hello\n");

    // A failing postStart: FailedPostStartHook, the container killed and restarted.
    let uid = s.ok(&["get", "pod", "badhook", "-o", &jsonpath("{.metadata.uid}")]);
    let uid = uid.trim();
    let message = wait_for_event(&n, "badhook", "FailedPostStartHook", minute, |_| true);
    assert_eq!(
        message,
        format!(
            "Exec lifecycle hook ([sh -c echo oops; exit 3]) for Container \"app\" in Pod \
             \"badhook_default({uid})\" failed - error: command 'sh -c echo oops; exit 3' exited \
             with 3: , message: \"oops\\n\""
        )
    );
    wait_for_event(&n, "badhook", "Killing", minute, |m| m == "FailedPostStartHook");
    n.wait_for(
        &["get", "pod", "badhook", "-o", &jsonpath("{.status.containerStatuses[0].restartCount}")],
        minute,
        |c| c.parse::<u32>().unwrap_or(0) >= 1,
    );
    let describe = s.ok(&["describe", "pod", "badhook"]);
    assert!(describe.contains("FailedPostStartHook"), "{describe}");

    // preStop: runs before the stop signal when the pod is deleted, and the object goes.
    n.wait_for(
        &["get", "pod", "bye", "napper", "-o", &jsonpath("{.items[*].status.phase}")],
        minute,
        |p| p == "Running Running",
    );
    let started = Instant::now();
    s.ok(&["delete", "pod", "bye", "napper", "--timeout=50s"]);
    let took = started.elapsed();
    let written = std::fs::read_to_string(host_dir.path().join("prestop")).unwrap_or_default();
    assert_eq!(written, "bye from prestop\n", "the preStop hook wrote to the hostPath volume");
    assert!(took >= Duration::from_secs(3), "the preStop sleep of 3 s delays deletion: {took:?}");
    assert!(took < Duration::from_secs(20), "the container stopped after its hook: {took:?}");
    for pod in ["bye", "napper"] {
        let e = s.fails(&["get", "pod", pod]);
        assert!(e.contains("NotFound") || e.contains("not found"), "{e}");
    }
    let all = events(s);
    assert!(
        all.iter().any(|e| e.0 == "bye" && e.1 == "Killing" && e.2 == "Stopping container app"),
        "{all:#?}"
    );
    assert!(!all.iter().any(|e| e.1 == "FailedPreStopHook"), "{all:#?}");
}
