//! Persistent volumes as a user meets them with stock kubectl, on a real node (Docker): the
//! default `local-path` StorageClass, a claim that binds once a pod uses it (the scheduler
//! picks the node, the node's provisioner makes the directory, the binder binds), its data
//! kept for the next pod, the claim kept while a pod uses it, the volume and its directory
//! gone with the claim; a static volume chosen by a claim's selector; a StatefulSet whose
//! claims come from its volumeClaimTemplates.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rkube_conformance::cluster::{jsonpath, RkubeServer};
use rkube_conformance::node::NodeServer;

const WAIT: Duration = Duration::from_secs(60);

/// A field of an object, by JSONPath (empty when kubectl fails, e.g. it is gone).
fn field(s: &RkubeServer, kind: &str, name: &str, path: &str) -> String {
    let out = s.kubectl(&["get", kind, name, "-o", &jsonpath(path)]);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Waits until `kind/name` no longer exists.
fn wait_gone(node: &NodeServer, kind: &str, name: &str) {
    node.server.wait_until(&format!("{kind}/{name} gone"), WAIT, || {
        let out = node.server.kubectl(&["get", kind, name, "-o", "name"]);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        (!out.status.success() && err.contains("NotFound"), err)
    });
}

/// The messages of the events `reason` recorded on the object `name`.
fn events(s: &RkubeServer, name: &str, reason: &str) -> String {
    let selector = format!("involvedObject.name={name},reason={reason}");
    let path = "{range .items[*]}{.source.component}: {.message}{\"\\n\"}{end}";
    s.ok(&["get", "events", "--field-selector", &selector, "-o", &jsonpath(path)])
}

const CLAIM: &str = r#"
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
"#;

fn pod(name: &str, script: &str, restart: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  restartPolicy: {restart}
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "{script}"]
    volumeMounts: [{{name: data, mountPath: /data}}]
  volumes:
  - name: data
    persistentVolumeClaim: {{claimName: data}}
"#
    )
}

#[test]
fn a_local_path_claim_binds_on_first_use_keeps_its_data_and_goes_with_its_volume() {
    let node = NodeServer::start();
    let s = &node.server;

    // The default class, as k3s ships it.
    let classes = s.ok(&["get", "storageclass"]);
    let row: Vec<&str> = classes.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(
        row[..6],
        [
            "local-path",
            "(default)",
            "rancher.io/local-path",
            "Delete",
            "WaitForFirstConsumer",
            "false"
        ],
        "{classes}"
    );

    // A claim that names no class gets the default one, and waits for a consumer.
    s.ok_stdin(&["apply", "-f", "-"], CLAIM);
    assert_eq!(field(s, "pvc", "data", "{.spec.storageClassName}"), "local-path");
    assert_eq!(
        field(s, "pvc", "data", "{.metadata.finalizers}"),
        r#"["kubernetes.io/pvc-protection"]"#
    );
    node.wait_for(
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=data,reason=WaitForFirstConsumer",
            "-o",
            "name",
        ],
        WAIT,
        |out| !out.trim().is_empty(),
    );
    assert!(
        events(s, "data", "WaitForFirstConsumer").contains(
            "persistentvolume-controller: waiting for first consumer to be created before binding"
        ),
        "{}",
        events(s, "data", "WaitForFirstConsumer")
    );
    assert_eq!(field(s, "pvc", "data", "{.status.phase}"), "Pending");
    assert!(s.ok(&["get", "pv", "-o", "name"]).trim().is_empty());

    // The first pod that uses it binds it on its node, and writes into it.
    s.ok_stdin(
        &["apply", "-f", "-"],
        &pod("writer", "echo hello-from-writer > /data/file", "Never"),
    );
    node.wait_for(&["get", "pod", "writer", "-o", &jsonpath("{.status.phase}")], WAIT, |p| {
        p == "Succeeded"
    });
    assert_eq!(field(s, "pvc", "data", "{.status.phase}"), "Bound");
    let uid = field(s, "pvc", "data", "{.metadata.uid}");
    let volume = format!("pvc-{uid}");
    assert_eq!(field(s, "pvc", "data", "{.spec.volumeName}"), volume);
    let annotations = field(s, "pvc", "data", "{.metadata.annotations}");
    for (key, value) in [
        ("volume.kubernetes.io/selected-node", node.node.as_str()),
        ("volume.kubernetes.io/storage-provisioner", "rancher.io/local-path"),
        ("pv.kubernetes.io/bind-completed", "yes"),
        ("pv.kubernetes.io/bound-by-controller", "yes"),
    ] {
        assert!(annotations.contains(&format!("\"{key}\":\"{value}\"")), "{key} in {annotations}");
    }
    assert_eq!(field(s, "pvc", "data", "{.status.capacity.storage}"), "1Gi");
    let claims = s.ok(&["get", "pvc", "data"]);
    let row: Vec<&str> = claims.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(
        row[..6],
        ["data", "Bound", volume.as_str(), "1Gi", "RWO", "local-path"],
        "{claims}"
    );
    let pvs = s.ok(&["get", "pv"]);
    let row: Vec<&str> = pvs.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(
        row[..7],
        [volume.as_str(), "1Gi", "RWO", "Delete", "Bound", "default/data", "local-path"],
        "{pvs}"
    );
    assert_eq!(
        field(
            s,
            "pv",
            &volume,
            "{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}"
        ),
        node.node
    );
    assert_eq!(
        field(s, "pv", &volume, "{.metadata.finalizers}"),
        r#"["kubernetes.io/pv-protection"]"#
    );
    let dir = PathBuf::from(field(s, "pv", &volume, "{.spec.hostPath.path}"));
    let storage = s.data_dir.path().join("storage");
    let expected = storage.join(format!("{volume}_default_data"));
    assert_eq!(dir.canonicalize().unwrap(), expected.canonicalize().unwrap());
    assert_eq!(std::fs::read_to_string(dir.join("file")).unwrap(), "hello-from-writer\n");
    for reason in ["ExternalProvisioning", "Provisioning", "ProvisioningSucceeded"] {
        assert!(!events(s, "data", reason).is_empty(), "no {reason} event");
    }
    assert!(
        events(s, "data", "ProvisioningSucceeded")
            .contains(&format!("Successfully provisioned volume {volume}")),
        "{}",
        events(s, "data", "ProvisioningSucceeded")
    );

    // A class that does not allow expansion refuses a bigger claim, as upstream.
    let resize = s.fails(&[
        "patch",
        "pvc",
        "data",
        "-p",
        r#"{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}"#,
    ]);
    assert!(
        resize.contains("persistentvolumeclaims \"data\" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"),
        "{resize}"
    );

    // The next pod, after the first is gone, reads what it wrote.
    s.ok(&["delete", "pod", "writer"]);
    s.ok_stdin(&["apply", "-f", "-"], &pod("reader", "cat /data/file; sleep 3600", "Always"));
    node.wait_for(&["get", "pod", "reader", "-o", &jsonpath("{.status.phase}")], WAIT, |p| {
        p == "Running"
    });
    node.wait_for(&["logs", "reader"], WAIT, |log| log.contains("hello-from-writer"));

    // A claim in use is not removed until its pod is gone.
    s.ok(&["delete", "pvc", "data", "--wait=false"]);
    assert!(!field(s, "pvc", "data", "{.metadata.deletionTimestamp}").is_empty());
    let table = s.ok(&["get", "pvc", "data"]);
    assert!(table.lines().nth(1).unwrap_or_default().contains("Terminating"), "{table}");
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        assert_eq!(
            field(s, "pvc", "data", "{.metadata.finalizers}"),
            r#"["kubernetes.io/pvc-protection"]"#
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(dir.join("file").exists());

    // The pod goes: the claim goes, and with it (reclaim policy Delete) the volume and its
    // directory.
    s.ok(&["delete", "pod", "reader", "--wait=false"]);
    wait_gone(&node, "pvc", "data");
    wait_gone(&node, "pv", &volume);
    assert!(!dir.exists(), "{} is still there", dir.display());
    assert!(storage.exists());
}

const STATIC_VOLUMES: &str = r#"
apiVersion: v1
kind: PersistentVolume
metadata: {name: fast-disk, labels: {speed: fast}}
spec:
  storageClassName: manual
  capacity: {storage: 2Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: PATH/fast}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: slow-disk, labels: {speed: slow}}
spec:
  storageClassName: manual
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: PATH/slow}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: picky}
spec:
  storageClassName: manual
  selector: {matchLabels: {speed: fast}}
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
"#;

const ORPHAN: &str = r#"
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: orphan}
spec:
  storageClassName: absent
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: stuck}
spec:
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"],
     volumeMounts: [{name: data, mountPath: /data}]}
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: orphan}
"#;

const STATEFUL_SET: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: "busybox:1.36"
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "hostname > /data/host; sleep 3600"]
        readinessProbe:
          exec: {command: ["test", "-s", "/data/host"]}
          periodSeconds: 1
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 100Mi}}
"#;

#[test]
fn a_static_volume_binds_by_selector_and_a_stateful_set_gets_its_claims_with_no_setup() {
    let node = NodeServer::start();
    let s = &node.server;

    // Static volumes of a class with no StorageClass object: bound at once, by the selector
    // (the smaller volume would otherwise fit better).
    let path = s.data_dir.path().join("static");
    let manifests = STATIC_VOLUMES.replace("PATH", &path.display().to_string());
    s.ok_stdin(&["apply", "-f", "-"], &manifests);
    node.wait_for(&["get", "pvc", "picky", "-o", &jsonpath("{.status.phase}")], WAIT, |p| {
        p == "Bound"
    });
    assert_eq!(field(s, "pvc", "picky", "{.spec.volumeName}"), "fast-disk");
    assert_eq!(field(s, "pvc", "picky", "{.status.capacity.storage}"), "2Gi");
    node.wait_for(&["get", "pv", "fast-disk", "-o", &jsonpath("{.status.phase}")], WAIT, |p| {
        p == "Bound"
    });
    assert_eq!(field(s, "pv", "fast-disk", "{.spec.claimRef.name}"), "picky");
    assert_eq!(
        field(
            s,
            "pv",
            "fast-disk",
            "{.metadata.annotations.pv\\.kubernetes\\.io/bound-by-controller}"
        ),
        "yes"
    );
    assert_eq!(field(s, "pv", "slow-disk", "{.status.phase}"), "Available");
    // Manually made volumes are retained: the claim goes, the volume is Released, its
    // directory stays.
    s.ok(&["delete", "pvc", "picky"]);
    node.wait_for(&["get", "pv", "fast-disk", "-o", &jsonpath("{.status.phase}")], WAIT, |p| {
        p == "Released"
    });
    let pvs = s.ok(&["get", "pv", "fast-disk"]);
    assert!(pvs.lines().nth(1).unwrap_or_default().contains("Retain"), "{pvs}");

    // A claim of a class that does not exist binds to nothing: its pod waits, with
    // upstream's reason, and the binder says why.
    s.ok_stdin(&["apply", "-f", "-"], ORPHAN);
    let message = node.wait_for(
        &[
            "get",
            "pod",
            "stuck",
            "-o",
            &jsonpath("{.status.conditions[?(@.type==\"PodScheduled\")].message}"),
        ],
        WAIT,
        |m| !m.is_empty(),
    );
    assert_eq!(
        message,
        "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    );
    node.wait_for(
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=orphan,reason=ProvisioningFailed",
            "-o",
            &jsonpath("{.items[*].message}"),
        ],
        WAIT,
        |m| m.contains("storageclass.storage.k8s.io \"absent\" not found"),
    );
    s.ok(&["delete", "pod", "stuck", "--wait=false"]);

    // A StatefulSet's claims come from its templates, bind to local-path volumes on the node
    // its pods are scheduled to, and its pods become Ready.
    s.ok_stdin(&["apply", "-f", "-"], STATEFUL_SET);
    let out = s.ok(&["rollout", "status", "statefulset/web", "--timeout=120s"]);
    assert!(
        out.contains("partitioned roll out complete") || out.contains("rolling update complete"),
        "{out}"
    );
    for ordinal in 0..2 {
        let claim = format!("data-web-{ordinal}");
        assert_eq!(field(s, "pvc", &claim, "{.status.phase}"), "Bound");
        assert_eq!(field(s, "pvc", &claim, "{.spec.storageClassName}"), "local-path");
        let volume = field(s, "pvc", &claim, "{.spec.volumeName}");
        let dir = PathBuf::from(field(s, "pv", &volume, "{.spec.hostPath.path}"));
        assert_eq!(
            std::fs::read_to_string(dir.join("host")).unwrap().trim(),
            format!("web-{ordinal}")
        );
    }
    let ready = field(s, "statefulset", "web", "{.status.readyReplicas}");
    assert_eq!(ready, "2");
}
