//! The admission chain of `rkube server`: kube-apiserver's default plugins that rkube has
//! (NamespaceLifecycle, Priority, DefaultTolerationSeconds, RuntimeClass, DefaultIngressClass,
//! TaintNodesByCondition, ...) run unless `--disable-admission-plugins` names them, and a
//! plugin name kube-apiserver would not know stops the server before it starts, with
//! kube-apiserver's message.

use std::time::{Duration, Instant};

use rkube_conformance::cluster::{rkube_binary, wait_with_timeout, RkubeServer};

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: plain\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n";

#[test]
fn the_default_plugins_protect_namespaces_and_default_pods() {
    let s = RkubeServer::start();
    let err = s.fails(&["delete", "namespace", "kube-public"]);
    assert!(
        err.contains(
            "Error from server (Forbidden): namespaces \"kube-public\" is forbidden: this namespace may not be deleted"
        ),
        "{err}"
    );
    assert_eq!(
        s.ok(&["get", "namespace", "kube-public", "-o", "jsonpath={.status.phase}"]),
        "Active"
    );
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: nowhere\n";
    let err = s.fails_stdin(&["create", "-f", "-"], cm);
    assert!(
        err.contains("Error from server (NotFound): error when creating \"STDIN\": namespaces \"nowhere\" not found"),
        "{err}"
    );
    s.ok_stdin(&["create", "-f", "-"], POD);
    let tolerations = s.ok(&["get", "pod", "plain", "-o", "jsonpath={.spec.tolerations[*].key}"]);
    assert_eq!(tolerations, "node.kubernetes.io/not-ready node.kubernetes.io/unreachable");
}

#[test]
fn disabled_plugins_leave_requests_alone() {
    let s = RkubeServer::start_with(&[
        "--disable-admission-plugins=DefaultTolerationSeconds,NamespaceLifecycle",
    ]);
    // DefaultTolerationSeconds is off: the pod keeps the tolerations it has (none); Priority
    // still runs.
    s.ok_stdin(&["create", "-f", "-"], POD);
    let spec = s.ok(&[
        "get",
        "pod",
        "plain",
        "-o",
        "jsonpath={.spec.tolerations}|{.spec.priority}|{.spec.preemptionPolicy}",
    ]);
    assert_eq!(spec, "|0|PreemptLowerPriority");
    // NamespaceLifecycle is off: as with kube-apiserver, nothing else checks that the
    // namespace exists.
    assert_eq!(s.ok(&["create", "configmap", "c", "-n", "nowhere"]).trim(), "configmap/c created");
    assert_eq!(s.ok(&["get", "configmap", "-n", "nowhere", "-o", "name"]).trim(), "configmap/c");
}

#[test]
fn unknown_plugin_names_stop_the_server_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let port = rkube_store::testing::free_port().to_string();
    let run = |extra: &[&str]| {
        let child = std::process::Command::new(rkube_binary())
            .arg("server")
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--bind-address", "127.0.0.1", "--secure-port", &port, "--disable", "kubelet"])
            .args(extra)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait_with_timeout(child, Duration::from_secs(60));
        assert!(!out.status.success(), "rkube server accepted {extra:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert_eq!(
        run(&["--enable-admission-plugins=Bogus"]),
        "rkube: enable-admission-plugins plugin \"Bogus\" is unknown\n"
    );
    assert_eq!(
        run(&["--disable-admission-plugins", "Priority,namespacelifecycle"]),
        "rkube: disable-admission-plugins plugin \"namespacelifecycle\" is unknown\n"
    );
    assert_eq!(
        run(&["--enable-admission-plugins=Priority", "--disable-admission-plugins=Priority"]),
        "rkube: [Priority] in enable-admission-plugins and disable-admission-plugins overlapped\n"
    );
    // kube-apiserver has it, rkube does not: refused rather than silently not enforced.
    let missing = run(&["--enable-admission-plugins=AlwaysPullImages"]);
    assert!(
        missing.starts_with(
            "rkube: enable-admission-plugins plugin \"AlwaysPullImages\" is not implemented by rkube"
        ) && missing.lines().count() == 1,
        "{missing}"
    );
    // Nothing was started: the store was never opened.
    assert!(!dir.path().join("db").exists());
}

/// (kubectl_workflows has the user's round trip; here: the whole message, the Status's cause,
/// and the other namespaces that may not be deleted.)
#[test]
fn nothing_new_goes_into_a_namespace_being_deleted() {
    let s = RkubeServer::start_with(&["--disable", "kubelet"]);
    s.ok(&["create", "namespace", "closing"]);
    // A finalizer nothing removes keeps the namespace Terminating until the test lets go.
    let held = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: closing\n  finalizers: [example.com/hold]\n";
    s.ok_stdin(&["create", "-f", "-"], held);
    s.ok(&["delete", "namespace", "closing", "--wait=false"]);
    let phase =
        |s: &RkubeServer| s.ok(&["get", "namespace", "closing", "-o", "jsonpath={.status.phase}"]);
    s.wait_until("the namespace is Terminating", Duration::from_secs(30), || {
        let phase = phase(&s);
        (phase == "Terminating", phase)
    });
    let err = s.fails(&["create", "configmap", "late", "-n", "closing"]);
    assert_eq!(
        err.trim_end(),
        "error: failed to create configmap: configmaps \"late\" is forbidden: unable to create new content in namespace closing because it is being terminated"
    );
    // The Status carries upstream's cause.
    let refused = s.curl_body(
        &["-X", "POST"],
        "/api/v1/namespaces/closing/configmaps",
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late"}}"#,
    );
    assert_eq!(refused.code, 403, "{}", refused.body);
    let status: serde_json::Value = serde_json::from_str(&refused.body).unwrap();
    assert_eq!(
        status["details"]["causes"],
        serde_json::json!([{"reason": "NamespaceTerminating",
            "message": "namespace closing is being terminated", "field": "metadata.namespace"}])
    );
    for name in ["default", "kube-system"] {
        let err = s.fails(&["delete", "namespace", name]);
        assert!(
            err.contains(&format!(
                "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
            )),
            "{err}"
        );
    }
}

#[test]
fn runtime_classes_and_default_ingress_classes_apply_to_new_objects() {
    let s = RkubeServer::start_with(&["--disable", "kubelet"]);
    let class = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: sandboxed\nhandler: runsc\noverhead:\n  podFixed: {cpu: 250m, memory: 0.125Gi}\nscheduling:\n  nodeSelector: {sandbox: \"true\"}\n  tolerations:\n  - {key: sandbox, operator: Exists, effect: NoSchedule}\n";
    s.ok_stdin(&["create", "-f", "-"], class);
    let pod = |name: &str, class: &str, extra: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  runtimeClassName: {class}\n{extra}  containers:\n  - name: c\n    image: busybox:1.36\n")
    };
    s.ok_stdin(
        &["create", "-f", "-"],
        &pod("sandboxed", "sandboxed", "  nodeSelector: {disk: ssd}\n"),
    );
    let spec = s.ok(&[
        "get",
        "pod",
        "sandboxed",
        "-o",
        "jsonpath={.spec.overhead}|{.spec.nodeSelector}|{.spec.tolerations[*].key}",
    ]);
    assert_eq!(
        spec,
        r#"{"cpu":"250m","memory":"128Mi"}|{"disk":"ssd","sandbox":"true"}|node.kubernetes.io/not-ready node.kubernetes.io/unreachable sandbox"#
    );
    let prefix = "Error from server (Forbidden): error when creating \"STDIN\": pods";
    assert_eq!(
        s.fails_stdin(&["create", "-f", "-"], &pod("lost", "gvisor", "")).trim_end(),
        format!("{prefix} \"lost\" is forbidden: pod rejected: RuntimeClass \"gvisor\" not found")
    );
    assert_eq!(
        s.fails_stdin(&["create", "-f", "-"], &pod("own", "sandboxed", "  overhead: {cpu: \"1\"}\n")).trim_end(),
        format!("{prefix} \"own\" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
    );

    // Two default IngressClasses: the newer one is chosen (its name sorts last, so the name
    // is not what decides). Creation times are whole seconds: the second is created once the
    // clock has moved past the first's.
    let ingress_class = |name: &str| {
        format!("apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: {name}\n  annotations:\n    ingressclass.kubernetes.io/is-default-class: \"true\"\nspec:\n  controller: example.com/ingress\n")
    };
    let created = s.ok_stdin(
        &["create", "-f", "-", "-o", "jsonpath={.metadata.creationTimestamp}"],
        &ingress_class("a-older"),
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while now_seconds() <= created {
        assert!(Instant::now() < deadline, "the clock did not pass {created}");
        std::thread::sleep(Duration::from_millis(100));
    }
    s.ok_stdin(&["create", "-f", "-"], &ingress_class("b-newer"));
    let ingress = |name: &str, class: &str| {
        format!("apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: {name}\nspec:\n{class}  defaultBackend:\n    service: {{name: web, port: {{number: 80}}}}\n")
    };
    let class_of = |manifest: String| {
        s.ok_stdin(&["create", "-f", "-", "-o", "jsonpath={.spec.ingressClassName}"], &manifest)
    };
    assert_eq!(class_of(ingress("plain", "")), "b-newer");
    assert_eq!(class_of(ingress("named", "  ingressClassName: a-older\n")), "a-older");
}

/// Now as RFC 3339 in UTC to the second, as creation timestamps are written.
fn now_seconds() -> String {
    let out =
        std::process::Command::new("date").args(["-u", "+%Y-%m-%dT%H:%M:%SZ"]).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn new_nodes_are_not_ready_until_their_condition_says_otherwise() {
    let s = RkubeServer::start_with(&["--disable", "kubelet"]);
    let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: fresh\nspec:\n  taints:\n  - {key: dedicated, value: db, effect: NoSchedule}\nstatus:\n  conditions:\n  - {type: Ready, status: \"True\"}\n";
    // The object as created, before any controller has seen it.
    let taints = s.ok_stdin(&["create", "-f", "-", "-o", "jsonpath={.spec.taints}"], node);
    assert_eq!(
        taints,
        r#"[{"effect":"NoSchedule","key":"dedicated","value":"db"},{"effect":"NoSchedule","key":"node.kubernetes.io/not-ready"}]"#
    );
    // The node lifecycle controller takes it off: the node is Ready.
    s.wait_until("the not-ready taint goes", Duration::from_secs(30), || {
        let taints = s.ok(&["get", "node", "fresh", "-o", "jsonpath={.spec.taints[*].key}"]);
        (taints == "dedicated", taints)
    });
}
