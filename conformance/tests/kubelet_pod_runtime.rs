//! What a container runs as and how it ends, asserted the way upstream's conformance tests
//! (`Security Context`, `Sysctls`, `Container Runtime`, `Containers`, `Pods`, `ConfigMap`,
//! `Secrets`) assert it: each pod runs to its end and its log or status says what happened.

use std::time::Duration;

use rkube_conformance::node::{ensure_busybox_variant, NodeServer, BUSYBOX};

/// An image with both an ENTRYPOINT and a CMD, as upstream's entrypoint-tester.
const ENTRYPOINT_IMAGE: &str = "rkube-test-entrypoint:1";

/// The objects the pods read, the pods that run to their end, and one that keeps running.
fn manifest() -> String {
    let mut manifest = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: env-cm}\n\
         data: {data-1: value-1, data-2: value-2}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {name: env-secret}\nstringData: {secret-1: s1}\n",
    );
    // (name, pod fields, container fields) of busybox pods that run to their end.
    let pods: [(&str, &str, &str); 12] = [
        (
            "sysctls",
            r#"securityContext: {sysctls: [{name: kernel.shm_rmid_forced, value: "1"}]}"#,
            r#"command: ["sysctl", "kernel.shm_rmid_forced"]"#,
        ),
        (
            "fallback-failing",
            "",
            r#"terminationMessagePolicy: FallbackToLogsOnError, command: ["sh", "-c", "echo -n DONE; false"]"#,
        ),
        (
            "fallback-succeeding",
            "",
            r#"terminationMessagePolicy: FallbackToLogsOnError, command: ["sh", "-c", "echo -n OK"]"#,
        ),
        (
            "no-escalation",
            "",
            r#"securityContext: {runAsUser: 1000, allowPrivilegeEscalation: false}, command: ["grep", "NoNewPrivs", "/proc/self/status"]"#,
        ),
        (
            "escalation-allowed",
            "",
            r#"securityContext: {runAsUser: 1000, allowPrivilegeEscalation: true}, command: ["grep", "NoNewPrivs", "/proc/self/status"]"#,
        ),
        ("run-as-nobody", "", r#"securityContext: {runAsUser: 65534}, command: ["id", "-u"]"#),
        (
            "run-as-group",
            "",
            r#"securityContext: {runAsUser: 1001, runAsGroup: 2002}, command: ["sh", "-c", "id -u; id -G"]"#,
        ),
        (
            "run-as-group-pod-level",
            "securityContext: {runAsUser: 1001, runAsGroup: 2002}",
            r#"command: ["sh", "-c", "id -u; id -G"]"#,
        ),
        (
            "read-only-root",
            "",
            r#"securityContext: {readOnlyRootFilesystem: true}, command: ["sh", "-c", "echo test > /file"]"#,
        ),
        (
            "writable-root",
            "",
            r#"securityContext: {readOnlyRootFilesystem: false}, command: ["sh", "-c", "touch /checkfile && echo written"]"#,
        ),
        (
            "unprivileged",
            "",
            r#"securityContext: {privileged: false}, command: ["sh", "-c", "ip link add dummy0 type dummy 2>&1 || true"]"#,
        ),
        (
            "env-from",
            "",
            // Not through sh: Debian's busybox sh drops variables whose names are not
            // identifiers.
            r#"envFrom: [{configMapRef: {name: env-cm}}, {prefix: p-, configMapRef: {name: env-cm}}, {secretRef: {name: env-secret}}], command: ["env"]"#,
        ),
    ];
    for (name, pod, container) in pods {
        manifest.push_str(&pod_yaml(name, pod, "Never", BUSYBOX, container));
    }
    // command and args over the image's ENTRYPOINT and CMD.
    for (name, container) in [
        ("image-defaults", ""),
        ("args-only", "args: [override, arguments]"),
        ("command-only", r#"command: ["/bin/echo", "from", "command"]"#),
        ("command-and-args", r#"command: ["/bin/echo"], args: [override, arguments]"#),
    ] {
        manifest.push_str(&pod_yaml(name, "", "Never", ENTRYPOINT_IMAGE, container));
    }
    let deadline = r#"command: ["sleep", "3600"]"#;
    manifest.push_str(&pod_yaml(
        "deadline",
        "terminationGracePeriodSeconds: 1",
        "Always",
        BUSYBOX,
        deadline,
    ));
    manifest
}

/// A pod of one container `c` (pulled only when missing) as YAML: `pod` and `container` are
/// more fields of each, in flow style (either may be empty).
fn pod_yaml(name: &str, pod: &str, restart: &str, image: &str, container: &str) -> String {
    let container = if container.is_empty() { String::new() } else { format!(", {container}") };
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  \
         restartPolicy: {restart}\n  {pod}\n  containers:\n  \
         - {{name: c, image: \"{image}\", imagePullPolicy: IfNotPresent{container}}}\n"
    )
}

#[test]
fn containers_run_as_their_security_context_entrypoint_and_policies_say() {
    ensure_busybox_variant(
        ENTRYPOINT_IMAGE,
        &[r#"ENTRYPOINT ["/bin/echo", "entrypoint"]"#, r#"CMD ["default", "args"]"#],
    );
    let n = NodeServer::start();
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], &manifest());
    let phase_of = |pod: &str| s.ok(&["get", "pod", pod, "-o", "jsonpath={.status.phase}"]);
    let ends = |pod: &str| {
        n.wait_for(
            &["get", "pod", pod, "-o", "jsonpath={.status.phase}"],
            Duration::from_secs(90),
            |p| p == "Succeeded" || p == "Failed",
        )
    };
    let log = |pod: &str| s.ok(&["logs", pod]).trim_end().to_string();
    let succeeded = |pod: &str| -> String {
        assert_eq!(ends(pod), "Succeeded", "{pod}: {}", log(pod));
        log(pod)
    };

    // activeDeadlineSeconds added to a running pod: it is stopped and Failed.
    n.wait_for(
        &["get", "pod", "deadline", "-o", "jsonpath={.status.phase}"],
        Duration::from_secs(90),
        |p| p == "Running",
    );
    s.ok(&["patch", "pod", "deadline", "-p", r#"{"spec":{"activeDeadlineSeconds":5}}"#]);

    // Sysctls set in the pod's namespaces.
    assert_eq!(succeeded("sysctls"), "kernel.shm_rmid_forced = 1");

    // FallbackToLogsOnError: the log's end when the container fails, nothing when it
    // succeeds.
    let message = |pod: &str| {
        s.ok(&[
            "get",
            "pod",
            pod,
            "-o",
            "jsonpath={.status.containerStatuses[0].state.terminated.message}",
        ])
    };
    assert_eq!(ends("fallback-failing"), "Failed");
    assert_eq!(message("fallback-failing"), "DONE");
    assert_eq!(succeeded("fallback-succeeding"), "OK");
    assert_eq!(message("fallback-succeeding"), "");

    // allowPrivilegeEscalation: false sets no_new_privs; true leaves it off.
    assert_eq!(succeeded("no-escalation"), "NoNewPrivs:\t1");
    assert_eq!(succeeded("escalation-allowed"), "NoNewPrivs:\t0");

    // runAsUser and runAsGroup, on the container and on the pod.
    assert_eq!(succeeded("run-as-nobody"), "65534");
    assert_eq!(succeeded("run-as-group"), "1001\n2002");
    assert_eq!(succeeded("run-as-group-pod-level"), "1001\n2002");

    // readOnlyRootFilesystem, both ways; no privileges unless asked.
    assert_eq!(ends("read-only-root"), "Failed");
    assert!(log("read-only-root").contains("Read-only file system"), "{}", log("read-only-root"));
    assert_eq!(succeeded("writable-root"), "written");
    let unprivileged = succeeded("unprivileged");
    assert!(unprivileged.contains("Operation not permitted"), "{unprivileged}");

    // envFrom: a configMap, with and without a prefix, and a secret.
    let env = succeeded("env-from");
    let mut from: Vec<&str> = env
        .lines()
        .filter(|l| ["data-", "p-data-", "secret-"].iter().any(|p| l.starts_with(p)))
        .collect();
    from.sort();
    assert_eq!(
        from,
        ["data-1=value-1", "data-2=value-2", "p-data-1=value-1", "p-data-2=value-2", "secret-1=s1"],
        "{env}"
    );

    // command and args over the image's ENTRYPOINT and CMD.
    assert_eq!(succeeded("image-defaults"), "entrypoint default args");
    assert_eq!(succeeded("args-only"), "entrypoint override arguments");
    assert_eq!(succeeded("command-only"), "from command");
    assert_eq!(succeeded("command-and-args"), "override arguments");

    // The deadline passed long ago by now.
    let phase = n.wait_for(
        &["get", "pod", "deadline", "-o", "jsonpath={.status.phase}"],
        Duration::from_secs(60),
        |p| p == "Failed",
    );
    assert_eq!(phase, "Failed");
    let reason = s.ok(&["get", "pod", "deadline", "-o", "jsonpath={.status.reason}"]);
    assert_eq!(reason, "DeadlineExceeded");
    let message = s.ok(&["get", "pod", "deadline", "-o", "jsonpath={.status.message}"]);
    assert_eq!(message, "Pod was active on the node longer than the specified deadline");
    assert_eq!(phase_of("deadline"), "Failed");
}
