//! The workload controllers as a user sees them through stock kubectl: Deployments rolled
//! out, updated, rolled back, paused, scaled and deleted; ReplicaSets and
//! ReplicationControllers keeping their pods, adopting orphans, releasing pods relabelled
//! away. One test runs on a real node (Docker), the others on simulated nodes, whose pods are
//! Running and Ready at once.

use std::time::Duration;

use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::node::{NodeServer, SimulatedNodes};

const WAIT: Duration = Duration::from_secs(90);

/// Pods selected by `selector` that are not being deleted: `name owner-kind/owner-name
/// phase ready` lines, sorted.
fn live_pods(server: &RkubeServer, selector: &str) -> Vec<String> {
    let path = "jsonpath={range .items[*]}{.metadata.name} {.metadata.ownerReferences[?(@.controller==true)].kind}/{.metadata.ownerReferences[?(@.controller==true)].name} {.status.phase} {.status.conditions[?(@.type==\"Ready\")].status} {.metadata.deletionTimestamp}{\"\\n\"}{end}";
    let out = server.ok(&["get", "pods", "-l", selector, "-o", path]);
    let mut pods: Vec<String> = out
        .lines()
        .filter(|l| l.split(' ').nth(4).unwrap_or_default().is_empty())
        .map(|l| l.split(' ').take(4).collect::<Vec<_>>().join(" "))
        .collect();
    pods.sort();
    pods
}

/// `name replicas ready revision hash` of each ReplicaSet `selector` selects, by name.
fn replica_sets(server: &RkubeServer, selector: &str) -> Vec<Vec<String>> {
    let path = "jsonpath={range .items[*]}{.metadata.name} {.spec.replicas} {.status.readyReplicas} {.metadata.annotations.deployment\\.kubernetes\\.io/revision} {.metadata.labels.pod-template-hash}{\"\\n\"}{end}";
    let out = server.ok(&["get", "rs", "-l", selector, "-o", path]);
    out.lines().map(|l| l.split(' ').map(str::to_string).collect()).collect()
}

/// The messages of the events `reason` recorded on the object `name`.
fn events(server: &RkubeServer, name: &str, reason: &str) -> Vec<String> {
    let selector = format!("involvedObject.name={name},reason={reason}");
    let path = "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}";
    let out = server.ok(&["get", "events", "--field-selector", &selector, "-o", path]);
    out.lines().map(str::to_string).collect()
}

const WEB: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - {name: app, image: "busybox:1.36", command: ["sleep", "3600"]}
"#;

#[test]
fn deployments_roll_out_update_roll_back_scale_and_time_out_on_a_real_node() {
    let node = NodeServer::start();
    let s = &node.server;
    s.ok_stdin(&["apply", "-f", "-"], WEB);
    let out = s.ok(&["rollout", "status", "deployment/web", "--timeout=90s"]);
    assert!(out.contains("deployment \"web\" successfully rolled out"), "{out}");

    // One ReplicaSet named for its template's hash, owning three running pods named for it.
    let sets = replica_sets(s, "app=web");
    assert_eq!(sets.len(), 1, "{sets:?}");
    let first = sets[0].clone();
    assert_eq!(first[0], format!("web-{}", first[4]), "{first:?}");
    assert_eq!(&first[1..4], ["3", "3", "1"], "{first:?}");
    let pods = live_pods(s, "app=web");
    assert_eq!(pods.len(), 3, "{pods:?}");
    for pod in &pods {
        assert!(pod.starts_with(&format!("{}-", first[0])), "{pod}");
        assert!(pod.ends_with(&format!(" ReplicaSet/{} Running True", first[0])), "{pod}");
    }
    let table = s.ok(&["get", "deployment", "web"]);
    let row: Vec<&str> = table.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row[..4], ["web", "3/3", "3", "3"], "{table}");
    let status = s.ok(&["get", "deployment", "web", "-o", "jsonpath={.metadata.generation} {.status.observedGeneration} {.status.replicas} {.status.updatedReplicas} {.status.readyReplicas} {.status.availableReplicas} {.status.conditions[?(@.type==\"Available\")].reason} {.status.conditions[?(@.type==\"Progressing\")].reason}"]);
    assert_eq!(status, "1 1 3 3 3 3 MinimumReplicasAvailable NewReplicaSetAvailable");
    let scaled = events(s, "web", "ScalingReplicaSet");
    assert_eq!(scaled, [format!("Scaled up replica set {} to 3", first[0])]);

    // A template change rolls out through a second ReplicaSet; the first is kept at 0.
    s.ok(&["set", "env", "deployment/web", "STAGE=two"]);
    let out = s.ok(&["rollout", "status", "deployment/web", "--timeout=90s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    let sets = replica_sets(s, "app=web");
    assert_eq!(sets.len(), 2, "{sets:?}");
    let second = sets.iter().find(|rs| rs[0] != first[0]).unwrap().clone();
    let old = sets.iter().find(|rs| rs[0] == first[0]).unwrap();
    assert_eq!(old[1], "0", "{sets:?}");
    assert_eq!(&second[1..4], ["3", "3", "2"], "{sets:?}");
    s.wait_until("the old pods gone", WAIT, || {
        let pods = live_pods(s, "app=web");
        let new = pods.iter().filter(|p| p.contains(&format!("ReplicaSet/{} ", second[0])));
        (pods.len() == 3 && new.count() == 3, pods.join("\n"))
    });
    let history = s.ok(&["rollout", "history", "deployment/web"]);
    let revisions: Vec<&str> =
        history.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(revisions.ends_with(&["1", "2"]), "{history}");

    // Undo: back to the first template, which becomes revision 3.
    let out = s.ok(&["rollout", "undo", "deployment/web"]);
    assert!(out.contains("deployment.apps/web rolled back"), "{out}");
    s.ok(&["rollout", "status", "deployment/web", "--timeout=90s"]);
    let sets = replica_sets(s, "app=web");
    let back = sets.iter().find(|rs| rs[0] == first[0]).unwrap();
    assert_eq!(&back[1..4], ["3", "3", "3"], "{sets:?}");
    let env = s.ok(&["get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].env}{.metadata.annotations.deployment\\.kubernetes\\.io/revision}"]);
    assert_eq!(env, "3");
    let history = s.ok(&["rollout", "history", "deployment/web"]);
    let revisions: Vec<&str> =
        history.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(revisions.ends_with(&["2", "3"]), "{history}");

    // Scaled down: the ReplicaSet deletes two pods.
    s.ok(&["scale", "deployment/web", "--replicas=1"]);
    s.wait_until("one pod left", WAIT, || {
        let pods = live_pods(s, "app=web");
        let status = s.ok(&["get", "deployment", "web", "-o", "jsonpath={.status.replicas}"]);
        (pods.len() == 1 && status == "1", format!("{pods:?} {status}"))
    });

    // A rollout that cannot progress (the image is never pulled) hits its deadline.
    let stuck = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck}
spec:
  replicas: 1
  progressDeadlineSeconds: 3
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec:
      containers:
      - {name: app, image: "busybox:not-here", imagePullPolicy: Never}
"#;
    s.ok_stdin(&["apply", "-f", "-"], stuck);
    let out = s.kubectl(&["rollout", "status", "deployment/stuck", "--timeout=60s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("error: deployment \"stuck\" exceeded its progress deadline"),
        "{stderr}"
    );
    let condition = s.ok(&["get", "deployment", "stuck", "-o", "jsonpath={.status.conditions[?(@.type==\"Progressing\")].status} {.status.conditions[?(@.type==\"Progressing\")].reason} {.status.conditions[?(@.type==\"Available\")].status}"]);
    assert_eq!(condition, "False ProgressDeadlineExceeded False");

    // Deleted: the garbage collector takes the ReplicaSets and their pods.
    s.ok(&["delete", "deployment", "web", "stuck"]);
    s.wait_until("everything gone", WAIT, || {
        let out = s.ok(&["get", "rs,pods", "-o", "name"]);
        (out.trim().is_empty(), out)
    });
}

#[test]
fn replica_sets_and_replication_controllers_keep_adopt_and_release_pods() {
    let s = RkubeServer::start();
    let nodes = SimulatedNodes::start(&s, 2, &[]);
    nodes.wait_ready(&s, 2, WAIT);

    // An orphan that matches is adopted; the ReplicaSet makes the rest.
    s.ok(&["run", "stray", "--image=busybox:1.36", "--labels=app=kept"]);
    let rs = r#"
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: kept}
spec:
  replicas: 3
  selector: {matchLabels: {app: kept}}
  template:
    metadata: {labels: {app: kept, tier: back}}
    spec:
      containers:
      - {name: app, image: "busybox:1.36"}
"#;
    s.ok_stdin(&["apply", "-f", "-"], rs);
    let pods = s.wait_until("three pods of kept, Ready", WAIT, || {
        let pods = live_pods(&s, "app=kept");
        let ok =
            pods.len() == 3 && pods.iter().all(|p| p.ends_with(" ReplicaSet/kept Running True"));
        (ok, pods.join("\n"))
    });
    assert!(pods.lines().any(|p| p.starts_with("stray ")), "{pods}");
    assert_eq!(pods.lines().filter(|p| p.starts_with("kept-")).count(), 2, "{pods}");
    let status = s.wait_until("status", WAIT, || {
        let out = s.ok(&["get", "rs", "kept", "-o", "jsonpath={.status.replicas} {.status.fullyLabeledReplicas} {.status.readyReplicas} {.status.availableReplicas} {.status.observedGeneration}"]);
        // The adopted pod lacks the template's `tier` label: not fully labeled.
        (out == "3 2 3 3 1", out)
    });
    assert_eq!(status, "3 2 3 3 1");
    let table = s.ok(&["get", "rs", "kept"]);
    let row: Vec<&str> = table.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row[..4], ["kept", "3", "3", "3"], "{table}");
    s.wait_until("two SuccessfulCreate events", WAIT, || {
        let created = events(&s, "kept", "SuccessfulCreate");
        (created.len() >= 2, format!("{created:?}"))
    });
    let created = events(&s, "kept", "SuccessfulCreate");
    assert_eq!(created.len(), 2, "{created:?}");
    assert!(created.iter().all(|m| m.starts_with("Created pod: kept-")), "{created:?}");

    // Relabelled away, a pod is released and replaced.
    s.ok(&["label", "pod", "stray", "app=gone", "--overwrite"]);
    s.wait_until("stray released and replaced", WAIT, || {
        let stray = s.ok(&["get", "pod", "stray", "-o", "jsonpath={.metadata.ownerReferences}"]);
        let pods = live_pods(&s, "app=kept");
        (stray.is_empty() && pods.len() == 3, format!("stray owners {stray:?}; {pods:?}"))
    });

    // Scaled down, it deletes two of its pods (and never the released one).
    s.ok(&["scale", "rs", "kept", "--replicas=1"]);
    s.wait_until("one pod of kept", WAIT, || {
        let pods = live_pods(&s, "app=kept");
        (pods.len() == 1, pods.join("\n"))
    });
    s.ok(&["get", "pod", "stray"]);
    // The events are recorded after the deletes (and may trail them under load).
    s.wait_until("two SuccessfulDelete events", WAIT, || {
        let deleted = events(&s, "kept", "SuccessfulDelete");
        (deleted.len() >= 2, format!("{deleted:?}"))
    });
    let deleted = events(&s, "kept", "SuccessfulDelete");
    assert_eq!(deleted.len(), 2, "{deleted:?}");
    assert!(deleted.iter().all(|m| m.starts_with("Deleted pod: kept-")), "{deleted:?}");

    // A ReplicationController goes through the same mechanism.
    let rc = r#"
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy}
spec:
  replicas: 2
  selector: {app: legacy}
  template:
    metadata: {labels: {app: legacy}}
    spec:
      containers:
      - {name: app, image: "busybox:1.36"}
"#;
    s.ok_stdin(&["apply", "-f", "-"], rc);
    s.wait_until("two pods of legacy", WAIT, || {
        let pods = live_pods(&s, "app=legacy");
        let ok = pods.len() == 2
            && pods.iter().all(|p| p.ends_with(" ReplicationController/legacy Running True"));
        (ok, pods.join("\n"))
    });
    s.wait_until("rc table", WAIT, || {
        let table = s.ok(&["get", "rc", "legacy"]);
        let row: Vec<String> = table
            .lines()
            .nth(1)
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        (row[..4] == ["legacy", "2", "2", "2"], table)
    });

    // Deleting the owners takes their pods along.
    s.ok(&["delete", "rs", "kept"]);
    s.ok(&["delete", "rc", "legacy"]);
    s.wait_until("owned pods gone", WAIT, || {
        let out = s.ok(&["get", "pods", "-o", "name"]);
        (out.trim() == "pod/stray", out)
    });
}

#[test]
fn recreate_pause_resume_restart_and_history_limit_on_simulated_nodes() {
    let s = RkubeServer::start();
    let nodes = SimulatedNodes::start(&s, 2, &[]);
    nodes.wait_ready(&s, 2, WAIT);
    let manifest = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
spec:
  replicas: 2
  revisionHistoryLimit: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - {name: app, image: "busybox:1.36"}
"#;
    s.ok_stdin(&["apply", "-f", "-"], manifest);
    s.ok(&["rollout", "status", "deployment/db", "--timeout=60s"]);
    let first = replica_sets(&s, "app=db")[0][0].clone();

    // Paused: a template change waits.
    s.ok(&["rollout", "pause", "deployment/db"]);
    s.ok(&["set", "env", "deployment/db", "MODE=b"]);
    s.wait_until("paused condition", WAIT, || {
        let out = s.ok(&["get", "deployment", "db", "-o", "jsonpath={.metadata.generation} {.status.observedGeneration} {.status.conditions[?(@.type==\"Progressing\")].reason}"]);
        let fields: Vec<&str> = out.split(' ').collect();
        (fields.len() == 3 && fields[0] == fields[1] && fields[2] == "DeploymentPaused", out)
    });
    assert_eq!(replica_sets(&s, "app=db").len(), 1);

    // Resumed: Recreate scales the old set to 0 before the new one comes up.
    s.ok(&["rollout", "resume", "deployment/db"]);
    s.ok(&["rollout", "status", "deployment/db", "--timeout=60s"]);
    let sets = replica_sets(&s, "app=db");
    assert_eq!(sets.len(), 2, "{sets:?}");
    let second = sets.iter().find(|rs| rs[0] != first).unwrap()[0].clone();
    let scaled = events(&s, "db", "ScalingReplicaSet");
    assert!(scaled.contains(&format!("Scaled down replica set {first} to 0 from 2")), "{scaled:?}");
    assert!(scaled.contains(&format!("Scaled up replica set {second} to 2")), "{scaled:?}");

    // A restart makes a third revision; the history limit of 1 drops the first set.
    s.ok(&["rollout", "restart", "deployment/db"]);
    s.ok(&["rollout", "status", "deployment/db", "--timeout=60s"]);
    s.wait_until("history limited to one old set", WAIT, || {
        let sets = replica_sets(&s, "app=db");
        let names: Vec<&str> = sets.iter().map(|rs| rs[0].as_str()).collect();
        (sets.len() == 2 && !names.contains(&first.as_str()), format!("{sets:?}"))
    });
}

/// `name node revision-hash` of each live pod `selector` selects, sorted.
fn placed_pods(server: &RkubeServer, selector: &str) -> Vec<String> {
    let path = "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.metadata.labels.controller-revision-hash} {.status.phase} {.metadata.deletionTimestamp}{\"\\n\"}{end}";
    let out = server.ok(&["get", "pods", "-l", selector, "-o", path]);
    let mut pods: Vec<String> = out
        .lines()
        .filter(|l| l.split(' ').nth(4).unwrap_or_default().is_empty())
        .map(|l| l.split(' ').take(4).collect::<Vec<_>>().join(" "))
        .collect();
    pods.sort();
    pods
}

/// The revision numbers `kubectl rollout history` lists for `what`.
fn history(server: &RkubeServer, what: &str) -> Vec<String> {
    let out = server.ok(&["rollout", "history", what]);
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.parse::<u32>().is_ok())
        .map(str::to_string)
        .collect()
}

#[test]
fn daemon_sets_run_one_pod_per_node_and_roll_by_revision() {
    let s = RkubeServer::start();
    let nodes = SimulatedNodes::start(&s, 3, &[]);
    nodes.wait_ready(&s, 3, WAIT);
    let ds = r#"
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
      - {name: agent, image: "busybox:1.36"}
"#;
    s.ok_stdin(&["apply", "-f", "-"], ds);
    s.ok(&["rollout", "status", "ds/agent", "--timeout=60s"]);
    let pods = placed_pods(&s, "app=agent");
    let nodes_used: std::collections::BTreeSet<&str> =
        pods.iter().map(|p| p.split(' ').nth(1).unwrap()).collect();
    assert_eq!((pods.len(), nodes_used.len()), (3, 3), "{pods:?}");
    let status = s.ok(&["get", "ds", "agent", "-o", "jsonpath={.status.desiredNumberScheduled} {.status.currentNumberScheduled} {.status.numberReady} {.status.updatedNumberScheduled} {.status.numberAvailable} {.status.observedGeneration}"]);
    assert_eq!(status, "3 3 3 3 3 1");
    let table = s.ok(&["get", "ds", "agent"]);
    let row: Vec<&str> = table.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row[..6], ["agent", "3", "3", "3", "3", "3"], "{table}");

    // A template change replaces every pod with one of the new revision.
    let first_hash = pods[0].split(' ').nth(2).unwrap().to_string();
    s.ok(&["set", "env", "ds/agent", "MODE=two"]);
    s.ok(&["rollout", "status", "ds/agent", "--timeout=60s"]);
    let pods = s.wait_until("new revision on every node", WAIT, || {
        let pods = placed_pods(&s, "app=agent");
        let ok = pods.len() == 3 && pods.iter().all(|p| !p.contains(&first_hash));
        (ok, pods.join("\n"))
    });
    assert!(pods.lines().all(|p| p.ends_with(" Running")), "{pods}");
    assert_eq!(history(&s, "ds/agent"), ["1", "2"]);
    let out = s.ok(&["rollout", "undo", "ds/agent"]);
    assert!(out.contains("daemonset.apps/agent rolled back"), "{out}");
    s.ok(&["rollout", "status", "ds/agent", "--timeout=60s"]);
    s.wait_until("back on the first revision", WAIT, || {
        let pods = placed_pods(&s, "app=agent");
        let ok = pods.len() == 3 && pods.iter().all(|p| p.contains(&first_hash));
        (ok, pods.join("\n"))
    });
    assert_eq!(history(&s, "ds/agent"), ["2", "3"]);
    s.ok(&["delete", "ds", "agent"]);
    s.wait_until("its pods gone", WAIT, || {
        let pods = placed_pods(&s, "app=agent");
        (pods.is_empty(), pods.join("\n"))
    });
}

#[test]
fn stateful_sets_make_ordered_named_pods_claims_and_roll_from_the_top() {
    let s = RkubeServer::start();
    let nodes = SimulatedNodes::start(&s, 2, &[]);
    nodes.wait_ready(&s, 2, WAIT);
    let sts = r#"
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - {name: db, image: "busybox:1.36"}
"#;
    s.ok_stdin(&["apply", "-f", "-"], sts);
    s.ok(&["rollout", "status", "sts/db", "--timeout=60s"]);
    let got = s.ok(&["get", "pods", "-l", "app=db", "-o", "jsonpath={range .items[*]}{.metadata.name} {.spec.hostname} {.spec.subdomain} {.metadata.labels.apps\\.kubernetes\\.io/pod-index}{\"\\n\"}{end}"]);
    let mut lines: Vec<&str> = got.lines().collect();
    lines.sort();
    assert_eq!(lines, ["db-0 db-0 db 0", "db-1 db-1 db 1", "db-2 db-2 db 2"]);
    // Created in order: each only after the one before was Ready.
    let created = s.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=db,reason=SuccessfulCreate",
        "--sort-by=.metadata.creationTimestamp",
        "-o",
        "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}",
    ]);
    assert_eq!(
        created.lines().collect::<Vec<_>>(),
        [
            "create Pod db-0 in StatefulSet db successful",
            "create Pod db-1 in StatefulSet db successful",
            "create Pod db-2 in StatefulSet db successful"
        ]
    );
    let status = s.ok(&["get", "sts", "db", "-o", "jsonpath={.status.replicas} {.status.readyReplicas} {.status.currentReplicas} {.status.updatedReplicas} {.status.observedGeneration}"]);
    assert_eq!(status, "3 3 3 3 1");

    // An update rolls from the highest ordinal down, to a new revision.
    let first = s.ok(&["get", "sts", "db", "-o", "jsonpath={.status.currentRevision}"]);
    s.ok(&["set", "env", "sts/db", "MODE=two"]);
    s.ok(&["rollout", "status", "sts/db", "--timeout=90s"]);
    let revisions = s.wait_until("update complete", WAIT, || {
        let got = s.ok(&[
            "get",
            "sts",
            "db",
            "-o",
            "jsonpath={.status.currentRevision} {.status.updateRevision} {.status.updatedReplicas}",
        ]);
        let f: Vec<&str> = got.split(' ').collect();
        (f.len() == 3 && f[0] == f[1] && f[0] != first && f[2] == "3", got)
    });
    let new = revisions.split(' ').next().unwrap().to_string();
    let pods = placed_pods(&s, "app=db");
    assert!(pods.iter().all(|p| new.ends_with(p.split(' ').nth(2).unwrap())), "{pods:?} {new}");
    assert_eq!(history(&s, "sts/db"), ["1", "2"]);

    // Scaled down from the top.
    s.ok(&["scale", "sts", "db", "--replicas=1"]);
    s.wait_until("only db-0", WAIT, || {
        let pods = placed_pods(&s, "app=db");
        (pods.len() == 1 && pods[0].starts_with("db-0 "), pods.join("\n"))
    });

    // Claims from the templates, named for the pod, made before it.
    let with_claims = r#"
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 2
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: "busybox:1.36"
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
"#;
    s.ok_stdin(&["apply", "-f", "-"], with_claims);
    s.wait_until("claims and pods of web", WAIT, || {
        let claims = s.ok(&["get", "pvc", "-o", "jsonpath={.items[*].metadata.name}"]);
        let pods = s.ok(&["get", "pods", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.metadata.name}:{.spec.volumes[?(@.name==\"data\")].persistentVolumeClaim.claimName} {end}"]);
        (claims == "data-web-0 data-web-1" && pods.trim() == "web-0:data-web-0 web-1:data-web-1", format!("{claims} | {pods}"))
    });
}
