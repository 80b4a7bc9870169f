//! What a container runs as and how it ends, asserted the way upstream's conformance tests
//! (`Security Context`, `Sysctls`, `Container Runtime`, `Containers`, `Pods`, `ConfigMap`,
//! `Secrets`) assert it: each pod runs to its end and its log or status says what happened.

use std::time::Duration;

use rkube_conformance::node::{ensure_busybox_variant, NodeServer};

/// An image with both an ENTRYPOINT and a CMD, as upstream's entrypoint-tester.
const ENTRYPOINT_IMAGE: &str = "rkube-test-entrypoint:1";

const MANIFEST: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: env-cm}
data: {data-1: value-1, data-2: value-2}
---
apiVersion: v1
kind: Secret
metadata: {name: env-secret}
stringData: {secret-1: s1}
---
apiVersion: v1
kind: Pod
metadata: {name: sysctls}
spec:
  restartPolicy: Never
  securityContext:
    sysctls: [{name: kernel.shm_rmid_forced, value: "1"}]
  containers:
  - {name: c, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sysctl", "kernel.shm_rmid_forced"]}
---
apiVersion: v1
kind: Pod
metadata: {name: fallback-failing}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: "busybox:1.36", imagePullPolicy: IfNotPresent, terminationMessagePolicy: FallbackToLogsOnError, command: ["sh", "-c", "echo -n DONE; false"]}
---
apiVersion: v1
kind: Pod
metadata: {name: fallback-succeeding}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: "busybox:1.36", imagePullPolicy: IfNotPresent, terminationMessagePolicy: FallbackToLogsOnError, command: ["sh", "-c", "echo -n OK"]}
---
apiVersion: v1
kind: Pod
metadata: {name: no-escalation}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    securityContext: {runAsUser: 1000, allowPrivilegeEscalation: false}
    command: ["grep", "NoNewPrivs", "/proc/self/status"]
---
apiVersion: v1
kind: Pod
metadata: {name: escalation-allowed}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    securityContext: {runAsUser: 1000, allowPrivilegeEscalation: true}
    command: ["grep", "NoNewPrivs", "/proc/self/status"]
---
apiVersion: v1
kind: Pod
metadata: {name: run-as-nobody}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: "busybox:1.36", imagePullPolicy: IfNotPresent, securityContext: {runAsUser: 65534}, command: ["id", "-u"]}
---
apiVersion: v1
kind: Pod
metadata: {name: run-as-group}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    securityContext: {runAsUser: 1001, runAsGroup: 2002}
    command: ["sh", "-c", "id -u; id -G"]
---
apiVersion: v1
kind: Pod
metadata: {name: run-as-group-pod-level}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1001, runAsGroup: 2002}
  containers:
  - {name: c, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "id -u; id -G"]}
---
apiVersion: v1
kind: Pod
metadata: {name: read-only-root}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    securityContext: {readOnlyRootFilesystem: true}
    command: ["sh", "-c", "echo test > /file"]
---
apiVersion: v1
kind: Pod
metadata: {name: writable-root}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    securityContext: {readOnlyRootFilesystem: false}
    command: ["sh", "-c", "touch /checkfile && echo written"]
---
apiVersion: v1
kind: Pod
metadata: {name: unprivileged}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    securityContext: {privileged: false}
    command: ["sh", "-c", "ip link add dummy0 type dummy 2>&1 || true"]
---
apiVersion: v1
kind: Pod
metadata: {name: env-from}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    envFrom:
    - configMapRef: {name: env-cm}
    - {prefix: p-, configMapRef: {name: env-cm}}
    - secretRef: {name: env-secret}
    # Not through sh: Debian's busybox sh drops variables whose names are not identifiers.
    command: ["env"]
---
apiVersion: v1
kind: Pod
metadata: {name: image-defaults}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: "rkube-test-entrypoint:1", imagePullPolicy: IfNotPresent}
---
apiVersion: v1
kind: Pod
metadata: {name: args-only}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: "rkube-test-entrypoint:1", imagePullPolicy: IfNotPresent, args: [override, arguments]}
---
apiVersion: v1
kind: Pod
metadata: {name: command-only}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: "rkube-test-entrypoint:1", imagePullPolicy: IfNotPresent, command: ["/bin/echo", "from", "command"]}
---
apiVersion: v1
kind: Pod
metadata: {name: command-and-args}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: "rkube-test-entrypoint:1", imagePullPolicy: IfNotPresent, command: ["/bin/echo"], args: [override, arguments]}
---
apiVersion: v1
kind: Pod
metadata: {name: deadline}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
"#;

#[test]
fn containers_run_as_their_security_context_entrypoint_and_policies_say() {
    ensure_busybox_variant(
        ENTRYPOINT_IMAGE,
        &[r#"ENTRYPOINT ["/bin/echo", "entrypoint"]"#, r#"CMD ["default", "args"]"#],
    );
    let n = NodeServer::start();
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], MANIFEST);
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
