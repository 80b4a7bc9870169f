//! What upstream's SchedulerPredicates and SchedulerPreemption conformance tests check, on
//! nodes that are only API objects (no kubelet: a pod is placed when its `nodeName` is set):
//! - a pod whose node selector matches no node stays pending with the scheduler's
//!   FailedScheduling event ("node selector not matching");
//! - PriorityClasses: their value cannot be patched or replaced, their description can
//!   ("PriorityClass endpoints");
//! - ReplicaSets of three priorities on a node with an extended resource: the higher ones'
//!   pods preempt the lower ones' and each ReplicaSet ends with the pods the resource allows
//!   ("Pod preemption verification", upstream's PreemptionExecutionPath);
//! - a `system-cluster-critical` pod in kube-system preempts a lower-priority pod from a full
//!   node ("Preemption for critical pod").

use std::time::{Duration, Instant};

use rkube_conformance::cluster::{jsonpath, RkubeServer};

const RESOURCE: &str = "example.com/fakecpu";

/// A Ready node of `cpu` CPUs with `fakecpu` of the extended resource.
fn node(name: &str, fakecpu: u32) -> String {
    format!(
        r#"
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: "{name}"}}}}
status:
  capacity: {{cpu: "4", memory: 4Gi, pods: "110", {RESOURCE}: "{fakecpu}"}}
  allocatable: {{cpu: "4", memory: 4Gi, pods: "110", {RESOURCE}: "{fakecpu}"}}
  conditions: [{{type: Ready, status: "True"}}]
"#
    )
}

/// Polls `check` every 250 ms until it gives a value (at most 30 s).
fn poll<T>(server: &RkubeServer, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within 30 s\n{}", server.cluster_state());
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn a_pod_whose_node_selector_matches_no_node_stays_pending() {
    let server = RkubeServer::start();
    server.ok_stdin(&["apply", "-f", "-"], &node("only", 0));
    // A new node is tainted not-ready until the node lifecycle controller sees it Ready.
    poll(&server, "the node untainted", || {
        let taints = server.ok(&["get", "node", "only", "-o", "jsonpath={.spec.taints}"]);
        taints.is_empty().then_some(())
    });
    server.ok_stdin(
        &["apply", "-f", "-"],
        r#"
apiVersion: v1
kind: Pod
metadata: {name: restricted-pod}
spec:
  nodeSelector: {label: nonempty}
  containers: [{name: c, image: "busybox:1.36"}]
"#,
    );
    let path = jsonpath("{.items[*].message}");
    let message = poll(&server, "a FailedScheduling event", || {
        let got = server.ok(&[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=restricted-pod,reason=FailedScheduling",
            "-o",
            &path,
        ]);
        (!got.is_empty()).then_some(got)
    });
    assert_eq!(
        message,
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    );
    assert_eq!(server.ok(&["get", "pod", "restricted-pod", "-o", "jsonpath={.spec.nodeName}"]), "");
}

#[test]
fn priority_classes_keep_their_value_and_take_a_new_description() {
    let server = RkubeServer::start_with(&["--disable", "scheduler,controllers"]);
    for (i, value) in [1, 10, 100, 1000].iter().enumerate() {
        server.ok(&["create", "priorityclass", &format!("p{i}"), &format!("--value={value}")]);
        server.ok(&["label", "priorityclass", &format!("p{i}"), "e2e=endpoints"]);
    }
    let patch_value = server.fails(&["patch", "priorityclass", "p0", "-p", r#"{"value":10}"#]);
    assert!(
        patch_value.contains("value: Forbidden: may not be changed in an update."),
        "{patch_value}"
    );
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&server.ok(&["get", "priorityclass", name, "-o", "json"])).unwrap()
    };
    let mut changed = read("p1");
    changed["value"] = serde_json::json!(100);
    let replace_value = server.fails_stdin(&["replace", "-f", "-"], &changed.to_string());
    assert!(
        replace_value.contains("value: Forbidden: may not be changed in an update."),
        "{replace_value}"
    );

    let before =
        server.ok(&["get", "priorityclass", "p0", "-o", "jsonpath={.metadata.resourceVersion}"]);
    server.ok(&["patch", "priorityclass", "p0", "-p", r#"{"description":"updated description"}"#]);
    let mut described = read("p1");
    described["description"] = serde_json::json!("updated description");
    server.ok_stdin(&["replace", "-f", "-"], &described.to_string());
    let listed = server.ok(&[
        "get",
        "priorityclass",
        "-l",
        "e2e=endpoints",
        "-o",
        &jsonpath("{range .items[*]}{.metadata.name}={.value}:{.description};{end}"),
    ]);
    assert_eq!(listed, "p0=1:updated description;p1=10:updated description;p2=100:;p3=1000:;");
    let after =
        server.ok(&["get", "priorityclass", "p0", "-o", "jsonpath={.metadata.resourceVersion}"]);
    assert!(after.parse::<u64>().unwrap() > before.parse::<u64>().unwrap(), "{before} {after}");
    server.ok(&["delete", "priorityclass", "-l", "e2e=endpoints"]);
    assert_eq!(server.ok(&["get", "priorityclass", "-l", "e2e=endpoints", "-o", "name"]), "");
}

/// A ReplicaSet of `replicas` pods of priority class `class`, each asking for `fakecpu`.
fn replica_set(name: &str, class: &str, replicas: u32, fakecpu: u32) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: ReplicaSet
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{rs: {name}}}}}
  template:
    metadata: {{labels: {{rs: {name}}}}}
    spec:
      priorityClassName: {class}
      terminationGracePeriodSeconds: 0
      containers:
      - name: c
        image: "busybox:1.36"
        resources: {{requests: {{{RESOURCE}: "{fakecpu}"}}, limits: {{{RESOURCE}: "{fakecpu}"}}}}
"#
    )
}

/// How many of the pods labelled `rs=<name>` are placed on a node and not going away.
fn placed(server: &RkubeServer, name: &str) -> usize {
    let path =
        jsonpath("{range .items[*]}{.spec.nodeName}/{.metadata.deletionTimestamp}{\"\\n\"}{end}");
    let listed = server.ok(&["get", "pods", "-l", &format!("rs={name}"), "-o", &path]);
    listed.lines().filter(|l| l.len() > 1 && l.ends_with('/')).count()
}

#[test]
fn replica_sets_of_higher_priority_preempt_their_way_onto_a_full_node() {
    let server = RkubeServer::start();
    server.ok_stdin(&["apply", "-f", "-"], &node("fake", 200));
    for (class, value) in [("p1", 1), ("p2", 2), ("p3", 3), ("p4", 4)] {
        server.ok(&["create", "priorityclass", class, &format!("--value={value}")]);
    }
    // Upstream's path: rs1 (p1, 1 pod of 40%), rs2 (p2, 1 of 40%), rs3 (p3, 1 of 40%):
    // the third preempts the first; rs4 (p4, 1 of 50%) then preempts the second.
    server.ok_stdin(&["apply", "-f", "-"], &replica_set("rs1", "p1", 1, 80));
    poll(&server, "rs1 placed", || (placed(&server, "rs1") == 1).then_some(()));
    server.ok_stdin(&["apply", "-f", "-"], &replica_set("rs2", "p2", 1, 80));
    poll(&server, "rs2 placed", || (placed(&server, "rs2") == 1).then_some(()));
    server.ok_stdin(&["apply", "-f", "-"], &replica_set("rs3", "p3", 1, 80));
    poll(&server, "rs3 placed, rs1 preempted", || {
        (placed(&server, "rs3") == 1 && placed(&server, "rs1") == 0 && placed(&server, "rs2") == 1)
            .then_some(())
    });
    server.ok_stdin(&["apply", "-f", "-"], &replica_set("rs4", "p4", 1, 100));
    poll(&server, "rs4 placed, rs2 preempted", || {
        let counts = ["rs1", "rs2", "rs3", "rs4"].map(|rs| placed(&server, rs));
        (counts == [0, 0, 1, 1]).then_some(())
    });
    // The preempted ReplicaSets made new pods, which wait for room.
    for rs in ["rs1", "rs2"] {
        let pending = server.ok(&[
            "get",
            "pods",
            "-l",
            &format!("rs={rs}"),
            "-o",
            "jsonpath={.items[*].status.phase}",
        ]);
        assert_eq!(pending, "Pending", "{rs}");
    }
    let events = server.ok(&[
        "get",
        "events",
        "--field-selector",
        "reason=Preempted",
        "-o",
        "jsonpath={.items[*].message}",
    ]);
    assert_eq!(events.matches("Preempted by pod").count(), 2, "{events}");
}

#[test]
fn a_critical_pod_preempts_a_lower_priority_one() {
    let server = RkubeServer::start();
    server.ok_stdin(&["apply", "-f", "-"], &node("full", 1));
    server.ok(&["create", "priorityclass", "low", "--value=1"]);
    let pod = |name: &str, namespace: &str, class: &str| {
        format!(
            r#"
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  priorityClassName: {class}
  terminationGracePeriodSeconds: 0
  containers:
  - {{name: c, image: "busybox:1.36", resources: {{requests: {{{RESOURCE}: "1"}}, limits: {{{RESOURCE}: "1"}}}}}}
"#
        )
    };
    server.ok_stdin(&["apply", "-f", "-"], &pod("low", "default", "low"));
    poll(&server, "the low pod placed", || {
        (server.ok(&["get", "pod", "low", "-o", "jsonpath={.spec.nodeName}"]) == "full")
            .then_some(())
    });
    server.ok_stdin(
        &["apply", "-f", "-"],
        &pod("critical", "kube-system", "system-cluster-critical"),
    );
    poll(&server, "the critical pod placed, the low one preempted", || {
        let critical = server.ok(&[
            "get",
            "pod",
            "critical",
            "-n",
            "kube-system",
            "-o",
            "jsonpath={.spec.nodeName}",
        ]);
        let low = server.kubectl(&["get", "pod", "low", "-o", "name"]);
        (critical == "full" && !low.status.success()).then_some(())
    });
    let priority = server.ok(&[
        "get",
        "pod",
        "critical",
        "-n",
        "kube-system",
        "-o",
        "jsonpath={.spec.priority}",
    ]);
    assert_eq!(priority, "2000000000");
}
