//! Stock kubectl workflows against the real `rkube server`: watching, describing, editing,
//! diffing, waiting, deleting; and the same basics with other kubectl versions.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rkube_conformance::cluster::RkubeServer;
use serde_json::Value;

const POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: c
    image: busybox:1.36
    command: ["sleep", "3600"]
"#;

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

#[test]
fn get_watch_streams_changes() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], POD);
    let mut watch = Command::new(&s.kubectl)
        .args(["get", "pods", "-w", "--output-watch-events"])
        .env("KUBECONFIG", &s.kubeconfig)
        .env("HOME", s.data_dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the initial row before changing anything.
    let mut stdout = watch.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(String::from_utf8_lossy(&buf[..n]).into_owned()).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let wait_for = |seen: &mut String, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !seen.contains(what) {
            assert!(Instant::now() < deadline, "no {what:?} in the watch output:\n{seen}");
            if let Ok(chunk) = rx.recv_timeout(Duration::from_millis(100)) {
                seen.push_str(&chunk);
            }
        }
    };
    wait_for(&mut seen, "ADDED");
    s.ok(&["label", "pod", "web", "tier=front"]);
    wait_for(&mut seen, "MODIFIED");
    s.ok(&["delete", "pod", "web"]);
    wait_for(&mut seen, "DELETED");
    let _ = watch.kill();
    let _ = watch.wait();
    let header = seen.lines().next().unwrap_or("");
    assert!(
        header.split_whitespace().collect::<Vec<_>>()
            == ["EVENT", "NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "{seen}"
    );
}

#[test]
fn watch_from_an_old_resource_version_is_gone() {
    let s = RkubeServer::start();
    // Within the window: the events after the resourceVersion come back.
    s.ok(&["create", "namespace", "w"]);
    let rv = json(&s.ok(&["get", "ns", "w", "-o", "json"]))["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    s.ok_stdin(&["apply", "-n", "w", "-f", "-"], POD);
    let out = s.ok(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/w/pods?watch=true&resourceVersion={rv}&timeoutSeconds=1"),
    ]);
    let first: Value = json(out.lines().next().unwrap());
    assert_eq!(first["type"], "ADDED");
    assert_eq!(first["object"]["metadata"]["name"], "web");
}

#[test]
fn describe_shows_the_object() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], POD);
    let out = s.ok(&["describe", "pod", "web"]);
    // Column widths depend on the sections shown: compare with whitespace folded.
    let folded: String = out.split_whitespace().collect::<Vec<_>>().join(" ");
    for line in [
        "Name: web",
        "Namespace: default",
        "Status: Pending",
        "Image: busybox:1.36",
        "QoS Class: BestEffort",
    ] {
        assert!(folded.contains(line), "{line:?} missing:\n{out}");
    }
    let out = s.ok(&["describe", "namespace", "default"]);
    assert!(out.contains("Status:       Active"), "{out}");
}

#[test]
fn edit_diff_set_image_and_wait() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], POD);
    let editor = s.data_dir.path().join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nsed -i 's/app: web/app: edited/' \"$1\"\n").unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = Command::new(&s.kubectl)
        .args(["edit", "pod", "web"])
        .env("KUBECONFIG", &s.kubeconfig)
        .env("HOME", s.data_dir.path())
        .env("KUBE_EDITOR", &editor)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(s.ok(&["get", "pod", "web", "-o", "jsonpath={.metadata.labels.app}"]), "edited");

    // diff exits 1 and shows the change; the live object is untouched (server dry-run).
    let changed = POD.replace("busybox:1.36", "busybox:1.37");
    let out = s.kubectl_with(&s.kubectl, &["diff", "-f", "-"], Some(&changed));
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(
        diff.contains("-    image: busybox:1.36") && diff.contains("+    image: busybox:1.37"),
        "{diff}"
    );
    assert_eq!(
        s.ok(&["get", "pod", "web", "-o", "jsonpath={.spec.containers[0].image}"]),
        "busybox:1.36"
    );

    s.ok(&["set", "image", "pod/web", "c=busybox:1.38"]);
    s.ok(&[
        "wait",
        "--for=jsonpath={.spec.containers[0].image}=busybox:1.38",
        "pod/web",
        "--timeout=10s",
    ]);
    let err = s.fails(&[
        "wait",
        "--for=jsonpath={.spec.containers[0].image}=nope",
        "pod/web",
        "--timeout=1s",
    ]);
    assert!(err.contains("timed out"), "{err}");
}

#[test]
fn output_formats() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], POD);
    let wide = s.ok(&["get", "pods", "-o", "wide"]);
    let header: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED",
            "NODE",
            "READINESS",
            "GATES"
        ]
    );
    assert!(wide.lines().nth(1).unwrap().starts_with("web "), "{wide}");
    assert_eq!(s.ok(&["get", "pods", "-o", "name"]).trim(), "pod/web");
    let yaml = s.ok(&["get", "pod", "web", "-o", "yaml"]);
    assert!(yaml.contains("kind: Pod") && yaml.contains("restartPolicy: Always"), "{yaml}");
    let all = s.ok(&["get", "all"]);
    assert!(all.contains("pod/web") && all.contains("service/kubernetes"), "{all}");
    let svc = s.ok(&["get", "svc", "kubernetes", "--no-headers"]);
    let cells: Vec<&str> = svc.split_whitespace().collect();
    assert_eq!(&cells[..5], ["kubernetes", "ClusterIP", "10.43.0.1", "<none>", "443/TCP"], "{svc}");
}

#[test]
fn delete_with_wait_and_cascade_flags() {
    let s = RkubeServer::start();
    s.ok(&["create", "namespace", "gone"]);
    for name in ["a", "b", "c"] {
        let manifest = POD.replace("name: web", &format!("name: {name}"));
        s.ok_stdin(&["apply", "-f", "-"], &manifest);
    }
    // Background (the default) deletes at once, and --wait sees it gone.
    let out = s.ok(&["delete", "pod", "a", "--cascade=background", "--wait=true", "--timeout=20s"]);
    assert_eq!(out.trim(), "pod \"a\" deleted");
    // Orphan and foreground put their finalizer on the object; the garbage collector removes
    // it, and kubectl, waiting, sees the object go (tests/garbage_collector.rs has the rest).
    let out = s.ok(&["delete", "pod", "b", "--cascade=orphan", "--timeout=20s"]);
    assert_eq!(out.trim(), "pod \"b\" deleted");
    let out = s.ok(&["delete", "pod", "c", "--cascade=foreground", "--timeout=20s"]);
    assert_eq!(out.trim(), "pod \"c\" deleted");
    for pod in ["a", "b", "c"] {
        let err = s.fails(&["get", "pod", pod]);
        assert!(err.contains("NotFound"), "{err}");
    }
}

#[test]
fn explain_uses_the_openapi_document() {
    let s = RkubeServer::start();
    let out = s.ok(&["explain", "deployment.spec.strategy"]);
    assert!(
        out.contains("KIND:       Deployment")
            && out.contains("FIELD: strategy <DeploymentStrategy>"),
        "{out}"
    );
    let out = s.ok(&["explain", "pods.spec.containers.image"]);
    assert!(out.contains("FIELD: image <string>"), "{out}");
}

/// Every other stock kubectl on the machine does the basics too. kubectl 1.27 and 1.28
/// validate `apply` against the protobuf form of `/openapi/v2`; 1.29 and later use `/openapi/v3`.
#[test]
fn other_kubectl_versions() {
    let s = RkubeServer::start();
    let mut tried = 0;
    for minor in 27..=33 {
        let kubectl =
            std::path::PathBuf::from(format!("/usr/lib/google-cloud-sdk/bin/kubectl.1.{minor}"));
        if !kubectl.exists() {
            continue;
        }
        tried += 1;
        let run = |args: &[&str], stdin: Option<&str>| {
            let out = s.kubectl_with(&kubectl, args, stdin);
            assert!(
                out.status.success(),
                "kubectl 1.{minor} {} failed:\n{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let ns = format!("v{minor}");
        run(&["create", "namespace", &ns], None);
        run(&["apply", "-n", &ns, "-f", "-"], Some(POD));
        let table = run(&["get", "pods", "-n", &ns], None);
        assert!(table.lines().nth(1).is_some_and(|l| l.starts_with("web ")), "1.{minor}:\n{table}");
        run(&["label", "-n", &ns, "pod", "web", "v=1"], None);
        // A second apply patches (the strategic-merge keys come from the OpenAPI document).
        run(
            &["apply", "-n", &ns, "-f", "-"],
            Some(POD.replace("app: web", "app: web\n    tier: front").as_str()),
        );
        let labels =
            run(&["get", "-n", &ns, "pod", "web", "-o", "jsonpath={.metadata.labels}"], None);
        assert_eq!(json(&labels), serde_json::json!({"app": "web", "tier": "front", "v": "1"}));
        run(&["create", "configmap", "-n", &ns, "cm", "--from-literal=a=b"], None);
        // Every version finds server-side field validation in the OpenAPI document and has
        // the server refuse an unknown field.
        let bogus = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bogus\nbogus: 1\n";
        let out = s.kubectl_with(&kubectl, &["apply", "-n", &ns, "-f", "-"], Some(bogus));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success()
                && stderr.contains(r#"strict decoding error: unknown field "bogus""#),
            "1.{minor}: {stderr}"
        );
        let version = json(&run(&["version", "-o", "json"], None));
        assert_eq!(version["serverVersion"]["gitVersion"], "v1.33.0");
        run(&["delete", "-n", &ns, "pod", "web"], None);
    }
    assert!(
        tried >= 2,
        "fewer than two other kubectl versions found under /usr/lib/google-cloud-sdk/bin"
    );
}

#[test]
fn deleting_a_namespace_deletes_its_content() {
    let s = RkubeServer::start();
    s.ok(&["create", "namespace", "doomed"]);
    s.ok(&["create", "configmap", "a", "-n", "doomed"]);
    s.ok(&["create", "deployment", "d", "--image=busybox:1.36", "-n", "doomed"]);
    s.ok_stdin(&["apply", "-n", "doomed", "-f", "-"], POD);
    // kubectl waits until the namespace is gone: the namespace controller empties it, then
    // finalizes it, and the API server deletes it.
    assert_eq!(
        s.ok(&["delete", "namespace", "doomed", "--timeout=60s"]).trim(),
        "namespace \"doomed\" deleted"
    );
    let err = s.fails(&["get", "namespace", "doomed"]);
    assert!(err.contains("namespaces \"doomed\" not found"), "{err}");
    let left = s.ok(&["get", "configmaps,deployments,pods", "-n", "doomed", "-o", "name"]);
    assert_eq!(left.trim(), "", "objects left in a deleted namespace");
    // A new namespace of the same name starts empty (but for the root CA publisher's
    // ConfigMap, which every namespace gets).
    s.ok(&["create", "namespace", "doomed"]);
    let fresh = s.ok(&["get", "configmaps", "-n", "doomed", "-o", "name"]);
    let fresh: Vec<&str> = fresh.lines().filter(|l| *l != "configmap/kube-root-ca.crt").collect();
    assert!(fresh.is_empty(), "{fresh:?}");
}

#[test]
fn creating_in_a_terminating_namespace_is_forbidden() {
    let s = RkubeServer::start();
    s.ok(&["create", "namespace", "closing"]);
    // A finalizer of our own keeps the namespace Terminating.
    s.ok(&["create", "configmap", "held", "-n", "closing"]);
    s.ok(&[
        "patch",
        "configmap",
        "held",
        "-n",
        "closing",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
    ]);
    s.ok(&["delete", "namespace", "closing", "--wait=false"]);
    let phase = s.ok(&["get", "namespace", "closing", "-o", "jsonpath={.status.phase}"]);
    assert_eq!(phase, "Terminating");
    let err = s.fails(&["create", "configmap", "new", "-n", "closing"]);
    assert!(
        err.contains(
            "unable to create new content in namespace closing because it is being terminated"
        ),
        "{err}"
    );
    // Releasing the finalizer lets the namespace go.
    s.ok(&[
        "patch",
        "configmap",
        "held",
        "-n",
        "closing",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    s.ok(&["wait", "--for=delete", "namespace/closing", "--timeout=60s"]);
}

#[test]
fn autoscalers_are_served_in_both_versions() {
    let s = RkubeServer::start();
    s.ok(&["create", "deployment", "web", "--image=busybox:1.36"]);
    s.ok(&["autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=70"]);
    let v2 = json(&s.ok(&[
        "get",
        "--raw",
        "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web",
    ]));
    assert_eq!(v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 70);
    let v1 = json(&s.ok(&[
        "get",
        "--raw",
        "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web",
    ]));
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
    assert_eq!(v1["spec"]["maxReplicas"], 5);
    let table = s.ok(&["get", "hpa", "web", "--no-headers"]);
    assert!(table.starts_with("web ") && table.contains("Deployment/web"), "{table}");
}

#[test]
fn auth_whoami_can_i_and_binding() {
    let s = RkubeServer::start();
    let who = s.ok(&["auth", "whoami", "-o", "json"]);
    let who = json(&who);
    assert_eq!(who["status"]["userInfo"]["username"], "system:admin");
    assert!(who["status"]["userInfo"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g == "system:masters"));
    assert_eq!(s.ok(&["auth", "can-i", "delete", "deployments"]).trim(), "yes");
    // Binding a pod to a node, as the scheduler does.
    s.ok_stdin(&["apply", "-f", "-"], POD);
    let binding = s.data_dir.path().join("binding.json");
    std::fs::write(&binding, r#"{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"},"target":{"kind":"Node","name":"node-1"}}"#).unwrap();
    s.ok(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/pods/web/binding",
        "-f",
        &binding.display().to_string(),
    ]);
    assert_eq!(s.ok(&["get", "pod", "web", "-o", "jsonpath={.spec.nodeName}"]), "node-1");
    // A bound pod is not bound again.
    let err = s.fails(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/pods/web/binding",
        "-f",
        &binding.display().to_string(),
    ]);
    assert!(err.contains("is already assigned to node"), "{err}");
    // A scheduled pod is deleted gracefully: marked, then removed by its kubelet (not built
    // yet); a zero grace period removes it at once.
    s.ok(&["delete", "pod", "web", "--wait=false"]);
    let pod = json(&s.ok(&["get", "pod", "web", "-o", "json"]));
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 30);
    s.ok(&["delete", "pod", "web", "--grace-period=0", "--force"]);
    assert!(s.fails(&["get", "pod", "web"]).contains("NotFound"));
}
