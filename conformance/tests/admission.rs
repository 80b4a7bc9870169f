//! The admission chain of `rkube server`: kube-apiserver's default plugins that rkube has
//! (NamespaceLifecycle, Priority, DefaultTolerationSeconds) run unless
//! `--disable-admission-plugins` names them, and a plugin name kube-apiserver would not know
//! stops the server before it starts, with kube-apiserver's message.

use std::time::Duration;

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
