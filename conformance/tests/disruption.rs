//! Disruption budgets and the pod garbage collector as a user meets them with stock kubectl:
//! `kubectl get pdb` shows what a budget allows, `kubectl drain` waits on a budget that
//! allows nothing and evicts once it does, an eviction over budget is a 429 on the wire,
//! and terminated pods beyond `--terminated-pod-gc-threshold` and pods of a node that is gone
//! are deleted. The budget tests run pods on a real node (Docker).

use std::time::Duration;

use rkube_conformance::cluster::{stderr_of, stdout_of, RkubeServer};
use rkube_conformance::node::NodeServer;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(90);

const WEB: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: app, image: "busybox:1.36", command: ["sleep", "3600"]}
"#;

/// The names of the running, ready pods of the Deployment, sorted.
fn ready_pods(s: &RkubeServer) -> Vec<String> {
    let path = "jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type==\"Ready\")].status} {.metadata.deletionTimestamp}{\"\\n\"}{end}";
    let out = s.ok(&["get", "pods", "-l", "app=web", "-o", path]);
    let mut pods: Vec<String> = out
        .lines()
        .filter(|l| l.ends_with(" True "))
        .map(|l| l.split(' ').next().unwrap_or_default().to_string())
        .collect();
    pods.sort();
    pods
}

fn budget(s: &RkubeServer, name: &str) -> Value {
    serde_json::from_str(&s.ok(&["get", "pdb", name, "-o", "json"])).expect("a budget as JSON")
}

/// POSTs an Eviction of `pod` (policy/v1) with the admin's certificate.
fn evict(s: &RkubeServer, pod: &str, query: &str) -> rkube_conformance::cluster::Curl {
    let body = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": pod, "namespace": "default"}});
    s.curl_body(
        &["-X", "POST"],
        &format!("/api/v1/namespaces/default/pods/{pod}/eviction{query}"),
        body.to_string().as_bytes(),
    )
}

#[test]
fn a_budget_holds_a_drain_until_it_allows_the_evictions() {
    let node = NodeServer::start();
    let s = &node.server;
    s.ok_stdin(&["apply", "-f", "-"], WEB);
    s.wait_until("two ready pods", WAIT, || {
        let pods = ready_pods(s);
        (pods.len() == 2, format!("{pods:?}"))
    });
    s.ok(&["create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=2"]);

    // The controller fills the status in: two healthy of two wanted, none to spare.
    let seen = s.wait_until("the budget's status", WAIT, || {
        let status = budget(s, "web")["status"].clone();
        (status["observedGeneration"] == 1 && status["currentHealthy"] == 2, status.to_string())
    });
    let status: Value = serde_json::from_str(&seen).unwrap();
    assert_eq!(
        (
            &status["currentHealthy"],
            &status["desiredHealthy"],
            &status["expectedPods"],
            &status["disruptionsAllowed"]
        ),
        (&json!(2), &json!(2), &json!(2), &json!(0)),
        "{status}"
    );
    let condition = &status["conditions"][0];
    assert_eq!(condition["type"], "DisruptionAllowed", "{status}");
    assert_eq!(condition["status"], "False", "{status}");
    assert_eq!(condition["reason"], "InsufficientPods", "{status}");
    let table = s.ok(&["get", "pdb"]);
    let lines: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        lines[0],
        ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"],
        "{table}"
    );
    assert_eq!(lines[1][..4], ["web", "2", "N/A", "0"], "{table}");

    // On the wire: 429 with upstream's message and cause, nothing recorded or deleted.
    let pods = ready_pods(s);
    let refused = evict(s, &pods[0], "");
    assert_eq!(refused.code, 429, "{}", refused.body);
    let body: Value = serde_json::from_str(&refused.body).expect("a Status");
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Cannot evict pod as it would violate the pod's disruption budget.",
            "reason": "TooManyRequests",
            "details": {"causes": [{"reason": "DisruptionBudget",
                "message": "The disruption budget web needs 2 healthy pods and has 2 currently"}]},
            "code": 429})
    );
    assert_eq!(ready_pods(s), pods, "a refused eviction deleted a pod");

    // Two budgets over one pod: upstream's 500.
    // (That one counts the Deployment's replicas: half may be unavailable, rounded up.)
    s.ok(&["create", "pdb", "web-too", "--selector=app=web", "--max-unavailable=50%"]);
    let seen = s.wait_until("the second budget's status", WAIT, || {
        let status = budget(s, "web-too")["status"].clone();
        (status["observedGeneration"] == 1, status.to_string())
    });
    let status: Value = serde_json::from_str(&seen).unwrap();
    assert_eq!(
        (&status["expectedPods"], &status["desiredHealthy"], &status["disruptionsAllowed"]),
        (&json!(2), &json!(1), &json!(1)),
        "{status}"
    );
    let twice = evict(s, &pods[0], "");
    assert_eq!(twice.code, 500, "{}", twice.body);
    let body: Value = serde_json::from_str(&twice.body).expect("a Status");
    assert_eq!(
        body["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
    s.ok(&["delete", "pdb", "web-too"]);

    // kubectl drain cordons the node, is refused, retries, and gives up at its timeout.
    let out = s.kubectl(&["drain", &node.node, "--ignore-daemonsets", "--timeout=12s"]);
    let (stdout, stderr) = (stdout_of(&out), stderr_of(&out));
    assert!(
        !out.status.success(),
        "drain went through a budget allowing nothing:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(&format!("node/{} cordoned", node.node)), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("(will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget."),
        "{stderr}"
    );
    let gave_up = format!(
        "There are pending pods in node {:?} when an error occurred: [error when evicting pods/",
        node.node
    );
    assert!(stderr.contains(&gave_up), "{stderr}");
    assert!(stderr.contains("global timeout reached: 12s"), "{stderr}");
    assert!(stderr.contains(&format!("error: unable to drain node {:?}", node.node)), "{stderr}");
    assert_eq!(ready_pods(s), pods, "a pod went despite the budget");

    // The budget relents: the drain evicts both pods (their replacements wait, the node
    // being cordoned).
    s.ok(&["patch", "pdb", "web", "--type=merge", "-p", r#"{"spec":{"minAvailable":0}}"#]);
    s.wait_until("the budget allows two disruptions", WAIT, || {
        let status = budget(s, "web")["status"].clone();
        (status["disruptionsAllowed"] == 2 && status["observedGeneration"] == 2, status.to_string())
    });
    // A dry run evicts nothing and leaves the budget as it was.
    let dry = evict(s, &pods[0], "?dryRun=All");
    assert_eq!(dry.code, 201, "{}", dry.body);
    assert_eq!(budget(s, "web")["status"]["disruptionsAllowed"], 2);
    assert_eq!(ready_pods(s), pods);

    let out = s.ok(&["drain", &node.node, "--ignore-daemonsets", "--timeout=60s"]);
    for pod in &pods {
        assert!(out.contains(&format!("pod/{pod} evicted")), "{out}");
    }
    assert!(out.contains(&format!("node/{} drained", node.node)), "{out}");
    assert!(ready_pods(s).is_empty(), "{:?}", ready_pods(s));
    // The evictions are recorded for the controller until it sees the pods go.
    s.wait_until("the disruptions cleared", WAIT, || {
        let status = budget(s, "web")["status"].clone();
        (status["disruptedPods"].is_null() && status["expectedPods"] == 2, status.to_string())
    });
}

const BUSY: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: "busybox:1.36", command: ["true"]}
"#;

/// A pod the garbage collector should meet: held by a finalizer so that what it did before
/// deleting it can be seen.
fn held(name: &str, node: Option<&str>) -> String {
    let placement = match node {
        Some(node) => format!("  nodeName: {node}\n"),
        None => "  nodeSelector: {nowhere: \"true\"}\n".to_string(),
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  finalizers: [example.com/hold]\nspec:\n{placement}  containers:\n  - {{name: app, image: \"busybox:1.36\"}}\n"
    )
}

#[test]
fn the_pod_garbage_collector_deletes_terminated_orphaned_and_unscheduled_pods() {
    let node = NodeServer::start_with(&["--terminated-pod-gc-threshold=2"]);
    let s = &node.server;
    for name in ["done-1", "done-2", "done-3", "done-4"] {
        s.ok_stdin(&["apply", "-f", "-"], &BUSY.replace("NAME", name));
    }
    // Four pods finish; the two oldest beyond the threshold of two are deleted.
    let left = s.wait_until("two terminated pods kept", WAIT, || {
        let out = s.ok(&[
            "get",
            "pods",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.status.phase}{\"\\n\"}{end}",
        ]);
        let done: Vec<&str> = out.lines().filter(|l| l.starts_with("done-")).collect();
        (done.len() == 2 && done.iter().all(|l| l.ends_with(" Succeeded")), out)
    });
    assert!(left.contains("done-3") && left.contains("done-4"), "{left}");

    // A pod bound to a node that does not exist: after the quarantine, failed with upstream's
    // condition and deleted; a pod being deleted that was never scheduled is failed and
    // deleted at once.
    s.ok_stdin(&["apply", "-f", "-"], &held("orphan", Some("no-such-node")));
    s.ok_stdin(&["apply", "-f", "-"], &held("unplaced", None));
    s.ok(&["delete", "pod", "unplaced", "--wait=false"]);
    let path = "jsonpath={.status.phase} {.metadata.deletionTimestamp}";
    s.wait_until("the unscheduled pod failed and deleted", WAIT, || {
        let out = s.ok(&["get", "pod", "unplaced", "-o", path]);
        (out.starts_with("Failed ") && out.len() > "Failed ".len(), out)
    });
    let orphan =
        s.wait_until("the orphaned pod failed and deleted", Duration::from_secs(120), || {
            let out = s.ok(&["get", "pod", "orphan", "-o", "json"]);
            let pod: Value = serde_json::from_str(&out).unwrap();
            (pod["metadata"]["deletionTimestamp"].is_string(), out)
        });
    let orphan: Value = serde_json::from_str(&orphan).unwrap();
    assert_eq!(orphan["status"]["phase"], "Failed", "{orphan}");
    let conditions = orphan["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let target =
        conditions.iter().find(|c| c["type"] == "DisruptionTarget").expect("DisruptionTarget");
    assert_eq!(target["status"], "True");
    assert_eq!(target["reason"], "DeletionByPodGC");
    assert_eq!(target["message"], "PodGC: node no longer exists");
    for pod in ["orphan", "unplaced"] {
        s.ok(&["patch", "pod", pod, "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    }
}

/// A Node that is only an API object (no kubelet): 2 CPUs.
const FULL_NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: full\n  labels:\n    kubernetes.io/hostname: full\nstatus:\n  allocatable: {cpu: \"2\", memory: 4Gi, pods: \"110\"}\n  capacity: {cpu: \"2\", memory: 4Gi, pods: \"110\"}\n  conditions:\n  - {type: Ready, status: \"True\"}\n";

fn priority_pod(name: &str, app: &str, class: &str, finalizer: bool) -> String {
    let finalizers = if finalizer { "  finalizers: [example.com/hold]\n" } else { "" };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels: {{app: {app}}}\n{finalizers}spec:\n  priorityClassName: {class}\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: c\n    image: busybox:1.36\n    resources:\n      requests: {{cpu: \"1\"}}\n"
    )
}

#[test]
fn preemption_reads_the_budgets_the_controller_keeps_and_marks_its_victim() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], FULL_NODE);
    s.ok(&["create", "priorityclass", "low", "--value=10"]);
    s.ok(&["create", "priorityclass", "high", "--value=1000"]);
    // Bound in this order, with budgets that both allowed nothing the pod bound last would be
    // the victim; the controller finds that the web budget can spare its pod.
    for (name, app) in [("free", "web"), ("guarded", "db")] {
        s.ok_stdin(&["apply", "-f", "-"], &priority_pod(name, app, "low", name == "free"));
        s.wait_until("the pod bound", WAIT, || {
            let node = s.ok(&["get", "pod", name, "-o", "jsonpath={.spec.nodeName}"]);
            (node == "full", node)
        });
        // No kubelet runs there: the pod is made running and ready by hand.
        let ready =
            r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#;
        s.ok(&["patch", "pod", name, "--subresource=status", "--type=merge", "-p", ready]);
    }
    s.ok(&["create", "poddisruptionbudget", "db", "--selector=app=db", "--min-available=1"]);
    s.ok(&["create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=0"]);
    s.wait_until("the budgets' status", WAIT, || {
        let allowed = s.ok(&[
            "get",
            "pdb",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.status.disruptionsAllowed} {end}",
        ]);
        (allowed == "db=0 web=1 ", allowed)
    });

    s.ok_stdin(&["apply", "-f", "-"], &priority_pod("urgent", "x", "high", false));
    // The victim is marked before it is deleted (its finalizer holds it for us to see).
    let seen = s.wait_until("the victim marked and deleted", WAIT, || {
        let out = s.ok(&["get", "pod", "free", "-o", "json"]);
        let pod: Value = serde_json::from_str(&out).unwrap();
        (pod["metadata"]["deletionTimestamp"].is_string(), out)
    });
    let pod: Value = serde_json::from_str(&seen).unwrap();
    let conditions = pod["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let target =
        conditions.iter().find(|c| c["type"] == "DisruptionTarget").expect("DisruptionTarget");
    assert_eq!(target["reason"], "PreemptionByScheduler", "{target}");
    assert_eq!(
        target["message"],
        "default-scheduler: preempting to accommodate a higher priority pod"
    );
    s.ok(&["patch", "pod", "free", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    s.wait_until("the preemptor bound", WAIT, || {
        let node = s.ok(&["get", "pod", "urgent", "-o", "jsonpath={.spec.nodeName}"]);
        (node == "full", node)
    });
    let left = s.ok(&["get", "pods", "-o", "name"]);
    assert!(left.contains("pod/guarded"), "the budget's pod was preempted:\n{left}");
}

/// A pod of app `web` bound to the node `full` (no kubelet there), made `phase` and ready or
/// not by hand.
fn bound_pod(s: &RkubeServer, name: &str, phase: &str, ready: bool) {
    let pod = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels: {{app: web}}\n  finalizers: [example.com/hold]\nspec:\n  nodeName: full\n  containers:\n  - {{name: c, image: \"busybox:1.36\"}}\n"
    );
    s.ok_stdin(&["apply", "-f", "-"], &pod);
    if phase != "Pending" {
        let status = json!({"status": {"phase": phase, "conditions": [
            {"type": "Ready", "status": if ready { "True" } else { "False" }}]}});
        s.ok(&[
            "patch",
            "pod",
            name,
            "--subresource=status",
            "--type=merge",
            "-p",
            &status.to_string(),
        ]);
    }
}

fn pod_json(s: &RkubeServer, name: &str) -> Value {
    serde_json::from_str(&s.ok(&["get", "pod", name, "-o", "json"])).expect("a pod as JSON")
}

fn evict_with(
    s: &RkubeServer,
    pod: &str,
    delete_options: Value,
) -> rkube_conformance::cluster::Curl {
    let body = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": pod, "namespace": "default"}, "deleteOptions": delete_options});
    s.curl_body(
        &["-X", "POST"],
        &format!("/api/v1/namespaces/default/pods/{pod}/eviction"),
        body.to_string().as_bytes(),
    )
}

/// Waits until the budget `web` says `allowed` at its current generation.
fn budget_allows(s: &RkubeServer, allowed: i64) -> Value {
    let seen = s.wait_until("the budget's status", WAIT, || {
        let pdb = budget(s, "web");
        let status = &pdb["status"];
        let current = status["observedGeneration"] == pdb["metadata"]["generation"];
        (current && status["disruptionsAllowed"] == allowed, pdb.to_string())
    });
    serde_json::from_str(&seen).unwrap()
}

#[test]
fn evictions_follow_the_budget_the_pods_state_and_the_delete_options() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], FULL_NODE);
    bound_pod(&s, "ready-1", "Running", true);
    bound_pod(&s, "ready-2", "Running", true);
    bound_pod(&s, "unready-1", "Running", false);
    bound_pod(&s, "unready-2", "Running", false);
    bound_pod(&s, "pending", "Pending", false);
    bound_pod(&s, "pending-2", "Pending", false);
    s.ok(&["create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=2"]);
    let pdb = budget_allows(&s, 0);
    assert_eq!(pdb["status"]["currentHealthy"], 2, "{pdb}");
    assert_eq!(pdb["status"]["expectedPods"], 6, "{pdb}");

    // A ready pod is held by the budget.
    assert_eq!(evict(&s, "ready-1", "").code, 429);
    // A pod not yet running goes without the budget, marked as evicted.
    let gone = evict(&s, "pending", "");
    assert_eq!(gone.code, 201, "{}", gone.body);
    assert_eq!(
        serde_json::from_str::<Value>(&gone.body).unwrap(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
    let pod = pod_json(&s, "pending");
    assert!(pod["metadata"]["deletionTimestamp"].is_string(), "{pod}");
    let conditions = pod["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let target = conditions.iter().find(|c| c["type"] == "DisruptionTarget").expect("marked");
    assert_eq!(
        (&target["reason"], &target["message"]),
        (&json!("EvictionByEvictionAPI"), &json!("Eviction API: evicting"))
    );
    // An unready pod goes while the budget is met anyway (IfHealthyBudget).
    assert_eq!(evict(&s, "unready-1", "").code, 201);
    assert!(pod_json(&s, "unready-1")["metadata"]["deletionTimestamp"].is_string());

    // Not met (three wanted, two healthy): the unready pod is held, unless the policy says
    // AlwaysAllow.
    s.ok(&["patch", "pdb", "web", "--type=merge", "-p", r#"{"spec":{"minAvailable":3}}"#]);
    budget_allows(&s, 0);
    let held = evict(&s, "unready-2", "");
    assert_eq!(held.code, 429, "{}", held.body);
    assert!(
        held.body.contains("The disruption budget web needs 3 healthy pods and has 2 currently"),
        "{}",
        held.body
    );
    s.ok(&[
        "patch",
        "pdb",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"unhealthyPodEvictionPolicy":"AlwaysAllow"}}"#,
    ]);
    budget_allows(&s, 0);
    assert_eq!(evict(&s, "unready-2", "").code, 201);

    // Delete options: a uid precondition that does not hold is a conflict; a grace period
    // is the delete's.
    let uid = pod_json(&s, "pending-2")["metadata"]["resourceVersion"].clone();
    let wrong = evict_with(
        &s,
        "pending-2",
        json!({"preconditions": {"uid": "not-its-uid", "resourceVersion": uid}}),
    );
    assert_eq!(wrong.code, 409, "{}", wrong.body);
    assert!(
        wrong.body.contains("Operation cannot be fulfilled on Pod \\\"pending-2\\\": the UID in the precondition (not-its-uid) does not match the UID in record"),
        "{}",
        wrong.body
    );
    assert!(pod_json(&s, "pending-2")["metadata"]["deletionTimestamp"].is_null());
    assert_eq!(evict_with(&s, "pending-2", json!({"gracePeriodSeconds": 7})).code, 201);
    assert_eq!(pod_json(&s, "pending-2")["metadata"]["deletionGracePeriodSeconds"], 7);

    // A budget that allows one: the eviction takes it and records the pod for the controller.
    s.ok(&["patch", "pdb", "web", "--type=merge", "-p", r#"{"spec":{"minAvailable":1}}"#]);
    let before = budget_allows(&s, 1)["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    assert_eq!(evict(&s, "ready-1", "").code, 201);
    // The eviction's own write, read back from the watch (the controller may already have
    // dropped the record, seeing the pod being deleted).
    let watch = s.curl(
        &[],
        &format!("/apis/policy/v1/namespaces/default/poddisruptionbudgets?watch=1&resourceVersion={before}&timeoutSeconds=1"),
    );
    // The controller may write the budget's status first: the eviction's write is the one
    // that records the pod.
    let first: Value = watch
        .body
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["object"]["status"]["disruptedPods"]["ready-1"].is_string())
        .unwrap_or_else(|| panic!("no watch event records the eviction: {}", watch.body));
    assert_eq!(first["type"], "MODIFIED", "{}", watch.body);
    let managers =
        first["object"]["metadata"]["managedFields"].as_array().cloned().unwrap_or_default();
    assert!(
        managers.iter().any(|m| m["manager"] == "kube-apiserver" && m["subresource"] == "status"),
        "{managers:?}"
    );
    let status = first["object"]["status"].clone();
    assert_eq!(status["disruptionsAllowed"], 0, "{status}");
    assert!(status["disruptedPods"]["ready-1"].is_string(), "{status}");
    let condition = &status["conditions"][0];
    assert_eq!(
        (&condition["status"], &condition["reason"]),
        (&json!("False"), &json!("InsufficientPods"))
    );
    assert_eq!(evict(&s, "ready-2", "").code, 429);
    // The controller sees the pod being deleted: the record goes, the count stays.
    s.wait_until("the disruption record dropped", WAIT, || {
        let status = budget(&s, "web")["status"].clone();
        (status["disruptedPods"].is_null() && status["currentHealthy"] == 1, status.to_string())
    });
    for pod in ["ready-1", "ready-2", "unready-1", "unready-2", "pending", "pending-2"] {
        s.ok(&["patch", "pod", pod, "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    }
}

fn crd(kind: &str, plural: &str, scale: bool) -> String {
    let subresources = if scale {
        "    subresources:\n      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}\n"
    } else {
        ""
    };
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: {plural}.example.com}}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {{plural: {plural}, singular: {singular}, kind: {kind}}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}\n{subresources}",
        singular = kind.to_lowercase()
    )
}

/// A pod of app `app` controlled by the custom object `kind`/`name` (of uid `uid`).
fn owned_pod(name: &str, app: &str, owner: Option<(&str, &str, &str)>) -> String {
    let owners = match owner {
        Some((kind, owner, uid)) => format!(
            "  ownerReferences:\n  - {{apiVersion: example.com/v1, kind: {kind}, name: {owner}, uid: {uid}, controller: true}}\n"
        ),
        None => String::new(),
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels: {{app: {app}}}\n{owners}spec:\n  nodeSelector: {{nowhere: \"true\"}}\n  containers:\n  - {{name: c, image: \"busybox:1.36\"}}\n"
    )
}

#[test]
fn a_percentage_counts_the_scale_of_any_controller_and_a_budget_that_cannot_is_failed_safe() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], &crd("Pool", "pools", true));
    s.ok_stdin(&["apply", "-f", "-"], &crd("Thing", "things", false));
    let uid_of = |kind: &str, name: &str| {
        s.wait_until("the custom resource served", WAIT, || {
            let manifest = format!("apiVersion: example.com/v1\nkind: {kind}\nmetadata: {{name: {name}}}\nspec: {{replicas: 4}}\n");
            let out = s.kubectl_with(&s.kubectl, &["apply", "-f", "-"], Some(&manifest));
            (out.status.success(), stderr_of(&out))
        });
        s.ok(&["get", &kind.to_lowercase(), name, "-o", "jsonpath={.metadata.uid}"])
    };
    let pool = uid_of("Pool", "p");
    let thing = uid_of("Thing", "t");
    for name in ["pool-a", "pool-b"] {
        s.ok_stdin(&["apply", "-f", "-"], &owned_pod(name, "pool", Some(("Pool", "p", &pool))));
    }
    s.ok_stdin(&["apply", "-f", "-"], &owned_pod("thing-a", "thing", Some(("Thing", "t", &thing))));
    s.ok_stdin(&["apply", "-f", "-"], &owned_pod("bare", "bare", None));

    // Half of the Pool's four replicas (its scale subresource), whatever the pods present.
    s.ok(&["create", "poddisruptionbudget", "pool", "--selector=app=pool", "--min-available=50%"]);
    let seen = s.wait_until("the pool budget's status", WAIT, || {
        let status = budget(&s, "pool")["status"].clone();
        (status["observedGeneration"] == 1, status.to_string())
    });
    let status: Value = serde_json::from_str(&seen).unwrap();
    assert_eq!(
        (&status["expectedPods"], &status["desiredHealthy"]),
        (&json!(4), &json!(2)),
        "{status}"
    );

    // No scale subresource: the budget cannot be worked out and allows nothing.
    s.ok(&[
        "create",
        "poddisruptionbudget",
        "thing",
        "--selector=app=thing",
        "--max-unavailable=1",
    ]);
    let seen = s.wait_until("the thing budget failed safe", WAIT, || {
        let status = budget(&s, "thing")["status"].clone();
        (status["conditions"][0]["reason"] == "SyncFailed", status.to_string())
    });
    let status: Value = serde_json::from_str(&seen).unwrap();
    let condition = &status["conditions"][0];
    assert_eq!(condition["status"], "False", "{status}");
    assert_eq!(condition["message"], "things.example.com does not implement the scale subresource");
    assert_eq!(status["disruptionsAllowed"], 0);
    let events = s.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=thing,reason=CalculateExpectedPodCountFailed",
        "-o",
        "jsonpath={.items[*].message}",
    ]);
    assert_eq!(events, "Failed to calculate the number of expected pods: things.example.com does not implement the scale subresource");

    // A pod with no controller cannot be counted against a percentage: said in an event.
    s.ok(&[
        "create",
        "poddisruptionbudget",
        "bare",
        "--selector=app=bare",
        "--max-unavailable=50%",
    ]);
    let events = s.wait_until("the UnmanagedPods event", WAIT, || {
        let out = s.ok(&[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=bare,reason=UnmanagedPods",
            "-o",
            "jsonpath={.items[*].message}",
        ]);
        (!out.is_empty(), out)
    });
    assert_eq!(
        events,
        "Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:map[string]string{app: bare,},MatchExpressions:[]LabelSelectorRequirement{},}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value."
    );
}
