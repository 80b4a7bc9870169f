//! Ephemeral containers, as `kubectl debug` uses them: the `pods/ephemeralcontainers`
//! subresource (get, update, patch) with upstream's validation, and the kubelet on Docker
//! starting them in the pod's network and IPC namespaces and in their target's process
//! namespace, once, reporting them in `ephemeralContainerStatuses`. Stock kubectl 1.33 and
//! 1.27 drive it.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rkube_conformance::cluster::{jsonpath, stderr_of, RkubeServer};
use rkube_conformance::node::NodeServer;
use rkube_conformance::streaming::Streaming;
use serde_json::{json, Value};

const KUBECTL_127: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.27";

/// A pod whose container `c` serves busybox's page on 127.0.0.1:8080 (and the pod IP).
const WEB: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  initContainers:
  - {name: setup, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["true"]}
  containers:
  - {name: c, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["httpd", "-f", "-p", "8080", "-h", "/var/www"]}
"#;

fn pod(s: &RkubeServer) -> Value {
    serde_json::from_str(&s.ok(&["get", "pod", "web", "-o", "json"])).expect("pod JSON")
}

fn ephemeral_status<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    pod["status"]["ephemeralContainerStatuses"].as_array()?.iter().find(|s| s["name"] == name)
}

/// Waits until the ephemeral container `name` has terminated; its status entry.
fn wait_terminated(s: &RkubeServer, name: &str) -> Value {
    let mut last = Value::Null;
    s.wait_until(
        &format!("ephemeral container {name} terminated"),
        Duration::from_secs(60),
        || {
            last = ephemeral_status(&pod(s), name).cloned().unwrap_or(Value::Null);
            (!last["state"]["terminated"].is_null(), last.to_string())
        },
    );
    last
}

#[test]
fn kubectl_debug_runs_in_the_pods_namespaces_once() {
    let n = NodeServer::start();
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], WEB);
    s.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"]);
    let uid = pod(s)["metadata"]["uid"].as_str().unwrap().to_string();

    // `kubectl debug -it` with a shell, driven through a pipe: kubectl attaches once the
    // container runs (it warns that its stdin is no terminal, the container has a TTY).
    let mut shell = Streaming::start_interactive(s.kubectl_command(&s.kubectl).args([
        "debug",
        "-it",
        "web",
        "--image=busybox:1.36",
        "--image-pull-policy=IfNotPresent",
        "--target=c",
        "-c",
        "shell",
        "--",
        "sh",
    ]));
    // What is written before the attach is up waits in kubectl's stdin pipe.
    let wait = Duration::from_secs(60);
    shell.send("echo hi-$((6*7))\n");
    shell.wait_for_line(|l| l.trim_end() == "hi-42", wait);
    // The pod's network namespace: its container's server on the loopback address.
    shell.send("wget -qO- http://127.0.0.1:8080/\n");
    shell.wait_for_line(|l| l.trim_end() == "hello from busybox", wait);
    // The target's process namespace: its server is a process here.
    shell.send("ps\n");
    shell.wait_for_line(|l| l.contains("httpd -f -p 8080"), wait);
    shell.send("exit 3\n");
    assert!(shell.wait_exit(wait).is_some(), "kubectl debug did not end with the shell");
    let status = wait_terminated(s, "shell");
    assert_eq!(status["state"]["terminated"]["exitCode"], 3, "{status}");
    assert_eq!(status["ready"], false);
    assert_eq!(status["restartCount"], 0);
    assert_eq!(status["image"], "busybox:1.36");
    assert!(status.get("started").is_none(), "ephemeral containers have no `started`: {status}");
    assert!(status["containerID"].as_str().unwrap().starts_with("docker://"), "{status}");

    // Non-interactive, from kubectl 1.27 too: with a target the container sees its
    // processes, without one only its own.
    for (kubectl, name, target) in [
        (s.kubectl.as_path(), "ps133", Some("c")),
        (Path::new(KUBECTL_127), "ps127", Some("c")),
        (s.kubectl.as_path(), "alone", None),
    ] {
        let mut args = vec![
            "debug",
            "web",
            "--image=busybox:1.36",
            "--image-pull-policy=IfNotPresent",
            "-c",
            name,
        ];
        let target = target.map(|t| format!("--target={t}"));
        args.extend(target.as_deref());
        args.extend(["--", "ps"]);
        s.ok_with(kubectl, &args, None);
        let status = wait_terminated(s, name);
        assert_eq!(status["state"]["terminated"]["exitCode"], 0, "{status}");
        let logs = s.ok(&["logs", "web", "-c", name]);
        assert_eq!(logs.contains("httpd -f -p 8080"), target.is_some(), "{name}: {logs}");
    }

    // The statuses are listed by name, as upstream sorts them; the spec keeps the order of
    // addition with kubectl's fields.
    let p = pod(s);
    let names: Vec<&str> = p["status"]["ephemeralContainerStatuses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alone", "ps127", "ps133", "shell"]);
    let spec = &p["spec"]["ephemeralContainers"][0];
    assert_eq!(
        (&spec["name"], &spec["targetContainerName"], &spec["stdin"], &spec["tty"]),
        (&json!("shell"), &json!("c"), &json!(true), &json!(true))
    );
    // The pod itself is untouched: still running and ready.
    assert_eq!(p["status"]["phase"], "Running");

    // Never restarted: every later sync (one per container added above) left the shell's one
    // Docker container alone.
    let made = Command::new("docker")
        .args(["ps", "-a", "-q", "--filter"])
        .arg(format!("label=io.kubernetes.pod.uid={uid}"))
        .args(["--filter", "label=io.kubernetes.container.name=shell"])
        .output()
        .expect("docker ps");
    assert_eq!(String::from_utf8_lossy(&made.stdout).lines().count(), 1);
}

/// A PUT of `pod` to `pods/web/ephemeralcontainers`: kubectl's stdout, or its stderr.
fn put(s: &RkubeServer, pod: &Value) -> Result<String, String> {
    let path = "/api/v1/namespaces/default/pods/web/ephemeralcontainers";
    let out =
        s.kubectl_with(&s.kubectl, &["replace", "--raw", path, "-f", "-"], Some(&pod.to_string()));
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        false => Err(stderr_of(&out)),
    }
}

#[test]
fn the_ephemeralcontainers_subresource_validates_as_upstream() {
    let s = RkubeServer::start();
    // No node: the pod stays pending, which ephemeral containers do not mind.
    s.ok_stdin(&["apply", "-f", "-"], WEB);

    // Read: the pod.
    let got: Value = serde_json::from_str(&s.ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/web/ephemeralcontainers",
    ]))
    .unwrap();
    assert_eq!((&got["kind"], &got["metadata"]["name"]), (&json!("Pod"), &json!("web")));

    // kubectl debug (a strategic merge patch of the subresource), 1.33 and 1.27.
    s.ok(&["debug", "web", "--image=busybox:1.36", "-c", "d1", "--target=c", "--", "true"]);
    s.ok_with(Path::new(KUBECTL_127), &["debug", "web", "--image=busybox:1.36", "-c", "d2"], None);
    let names =
        s.ok(&["get", "pod", "web", "-o", &jsonpath("{.spec.ephemeralContainers[*].name}")]);
    assert_eq!(names, "d1 d2");

    // Upstream's refusals, with its field paths.
    let e = s.fails(&["debug", "web", "--image=busybox:1.36", "-c", "d3", "--target=nope"]);
    assert!(
        e.contains(r#"The Pod "web" is invalid: spec.ephemeralContainers[2].targetContainerName: Not found: "nope""#),
        "{e}"
    );
    let e = s.fails(&["debug", "web", "--image=busybox:1.36", "-c", "setup"]);
    assert!(e.contains(r#"spec.ephemeralContainers[2].name: Duplicate value: "setup""#), "{e}");
    // The target must not be an ephemeral container.
    let e = s.fails(&["debug", "web", "--image=busybox:1.36", "-c", "d3", "--target=d1"]);
    assert!(e.contains(r#"targetContainerName: Not found: "d1""#), "{e}");

    // Through update: no ports, probes or resources; existing ones neither changed nor
    // removed; metadata is not this subresource's to change.
    let mut p = pod(&s);
    let mut added = json!({"name": "d3", "image": "busybox:1.36", "ports": [{"containerPort": 80}],
        "readinessProbe": {"exec": {"command": ["true"]}}, "resources": {"limits": {"cpu": "1"}}});
    p["spec"]["ephemeralContainers"].as_array_mut().unwrap().push(added.clone());
    let e = put(&s, &p).unwrap_err();
    for line in [
        "spec.ephemeralContainers[2].ports: Forbidden: cannot be set for an Ephemeral Container",
        "spec.ephemeralContainers[2].resources: Forbidden: cannot be set for an Ephemeral Container",
        "spec.ephemeralContainers[2].readinessProbe: Forbidden: cannot be set for an Ephemeral Container",
    ] {
        assert!(e.contains(line), "{line} not in {e}");
    }
    let mut p = pod(&s);
    p["spec"]["ephemeralContainers"] = json!([p["spec"]["ephemeralContainers"][1]]);
    p["spec"]["ephemeralContainers"][0]["image"] = json!("busybox:2");
    let e = put(&s, &p).unwrap_err();
    assert!(e.contains(r#"existing ephemeral containers "d2" may not be changed"#), "{e}");
    assert!(e.contains(r#"existing ephemeral containers "d1" may not be removed"#), "{e}");

    let mut p = pod(&s);
    added = json!({"name": "d3", "image": "busybox:1.36"});
    p["spec"]["ephemeralContainers"].as_array_mut().unwrap().push(added);
    p["metadata"]["labels"] = json!({"changed": "yes"});
    p["spec"]["containers"][0]["image"] = json!("busybox:other");
    let updated: Value = serde_json::from_str(&put(&s, &p).unwrap()).unwrap();
    assert_eq!(updated["spec"]["ephemeralContainers"][2]["name"], "d3");
    assert_eq!(updated["spec"]["ephemeralContainers"][2]["terminationMessagePolicy"], "File");
    assert!(updated["metadata"]["labels"].is_null(), "{}", updated["metadata"]);
    assert_eq!(updated["spec"]["containers"][0]["image"], "busybox:1.36");
    // A stale resourceVersion is a conflict.
    let e = put(&s, &p).unwrap_err();
    assert!(e.contains("the object has been modified"), "{e}");

    // The pod itself may not add them, on create or update.
    let e = s.fails(&[
        "patch",
        "pod",
        "web",
        "-p",
        r#"{"spec":{"ephemeralContainers":[{"name":"d4","image":"busybox:1.36"}]}}"#,
    ]);
    assert!(e.contains("Forbidden: pod updates may not change fields"), "{e}");
    let e = s.fails_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"other"},"spec":{"containers":[{"name":"c","image":"busybox"}],"ephemeralContainers":[{"name":"d","image":"busybox"}]}}"#,
    );
    assert!(e.contains("spec.ephemeralContainers: Forbidden: cannot be set on create"), "{e}");
    // Everything else about the pod still updates.
    s.ok(&["label", "pod", "web", "still=works"]);
}
