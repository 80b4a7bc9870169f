//! Volume file modes, ownership and paths, asserted the way upstream's conformance tests
//! assert them (`ConfigMap`, `Secrets`, `Projected`, `Downward API volume`, `EmptyDir`,
//! `Subpath`, `Container Runtime` termination messages): each pod runs to completion and its
//! log says what the container saw (`stat -L -c %A` prints modes as agnhost's mounttest does,
//! e.g. `-r--r-----`).

use std::time::Duration;

use rkube_conformance::node::NodeServer;

const MANIFEST: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
data: {data-1: value-1, data-2: value-2}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {data-1: secret-1}
---
apiVersion: v1
kind: Pod
metadata: {name: cm-default}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "stat -L -c '%A' /etc/cm/data-1 && cat /etc/cm/data-1"]
    volumeMounts: [{name: cm, mountPath: /etc/cm}]
  volumes: [{name: cm, configMap: {name: cm}}]
---
apiVersion: v1
kind: Pod
metadata: {name: cm-non-root}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1000}
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "stat -L -c '%A' /etc/cm/data-1 && cat /etc/cm/data-1"]
    volumeMounts: [{name: cm, mountPath: /etc/cm}]
  volumes: [{name: cm, configMap: {name: cm}}]
---
apiVersion: v1
kind: Pod
metadata: {name: cm-default-mode}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "stat -L -c '%A' /etc/cm/data-1 && cat /etc/cm/data-1"]
    volumeMounts: [{name: cm, mountPath: /etc/cm}]
  volumes: [{name: cm, configMap: {name: cm, defaultMode: 0400}}]
---
apiVersion: v1
kind: Pod
metadata: {name: cm-items}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "stat -L -c '%A' /etc/cm/path/to/data-2 /etc/cm/data-1 && cat /etc/cm/path/to/data-2 && ls /etc/cm"]
    volumeMounts: [{name: cm, mountPath: /etc/cm}]
  volumes:
  - name: cm
    configMap:
      name: cm
      items: [{key: data-2, path: path/to/data-2, mode: 0400}, {key: data-1, path: data-1}]
---
apiVersion: v1
kind: Pod
metadata: {name: secret-fs-group}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1000, fsGroup: 1001}
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "stat -L -c '%A %g' /etc/sec/data-1 && cat /etc/sec/data-1 && echo && id -G"]
    volumeMounts: [{name: sec, mountPath: /etc/sec}]
  volumes: [{name: sec, secret: {secretName: sec, defaultMode: 0440}}]
---
apiVersion: v1
kind: Pod
metadata: {name: projected-fs-group}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1000, fsGroup: 1001}
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "stat -L -c '%A %g' /etc/projected/data-1 && cat /etc/projected/data-1"]
    volumeMounts: [{name: p, mountPath: /etc/projected}]
  volumes:
  - name: p
    projected: {defaultMode: 0440, sources: [{secret: {name: sec}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: downward-item-mode}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "stat -L -c '%A' /etc/podinfo/podname && cat /etc/podinfo/podname"]
    volumeMounts: [{name: podinfo, mountPath: /etc/podinfo}]
  volumes:
  - name: podinfo
    downwardAPI: {items: [{path: podname, fieldRef: {fieldPath: metadata.name}, mode: 0400}]}
---
apiVersion: v1
kind: Pod
metadata: {name: empty-dir-root}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command:
    - sh
    - -c
    - >-
      stat -c '%A' /disk /memory && stat -f -c '%T' /memory &&
      for m in 0644 0666 0777; do echo content > /disk/f$m && chmod $m /disk/f$m &&
      stat -c '%A' /disk/f$m; done && cat /disk/f0644
    volumeMounts: [{name: disk, mountPath: /disk}, {name: memory, mountPath: /memory}]
  volumes: [{name: disk, emptyDir: {}}, {name: memory, emptyDir: {medium: Memory}}]
---
apiVersion: v1
kind: Pod
metadata: {name: empty-dir-non-root}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1001}
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command:
    - sh
    - -c
    - >-
      for d in /disk /memory; do echo mine > $d/f && chmod 0666 $d/f && stat -c '%A %u' $d/f;
      done && cat /memory/f
    volumeMounts: [{name: disk, mountPath: /disk}, {name: memory, mountPath: /memory}]
  volumes: [{name: disk, emptyDir: {}}, {name: memory, emptyDir: {medium: Memory}}]
---
apiVersion: v1
kind: Pod
metadata: {name: groups}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1000, supplementalGroups: [2000, 2001], fsGroup: 3000}
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "id -G && touch /scratch/f && stat -c '%A %g' /scratch /scratch/f"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes: [{name: scratch, emptyDir: {}}]
---
apiVersion: v1
kind: Pod
metadata: {name: read-only-content}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "touch /etc/cm/new 2>&1; rm /etc/cm/data-1 2>&1; cat /etc/cm/data-1"]
    volumeMounts: [{name: cm, mountPath: /etc/cm}]
  volumes: [{name: cm, configMap: {name: cm}}]
---
apiVersion: v1
kind: Pod
metadata: {name: sub-paths}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    command: ["sh", "-c", "cat /etc/one /etc/podname && echo here > /mine/f && ls /whole && cat /whole/sub-paths/f"]
    volumeMounts:
    - {name: cm, mountPath: /etc/one, subPath: data-1}
    - {name: podinfo, mountPath: /etc/podname, subPath: podname}
    - {name: scratch, mountPath: /mine, subPathExpr: "$(POD_NAME)"}
    - {name: scratch, mountPath: /whole}
  volumes:
  - {name: cm, configMap: {name: cm}}
  - {name: podinfo, downwardAPI: {items: [{path: podname, fieldRef: {fieldPath: metadata.name}}]}}
  - {name: scratch, emptyDir: {}}
---
apiVersion: v1
kind: Pod
metadata: {name: termination-message-non-root}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    securityContext: {runAsUser: 1000}
    terminationMessagePath: /dev/termination-custom-log
    command: ["sh", "-c", "printf DONE > /dev/termination-custom-log"]
"#;

/// A pod whose subPath leads out of its volume through a link another container left: the
/// container is refused, never given the node's root.
const ESCAPE: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: sub-path-escape}
spec:
  restartPolicy: Never
  initContainers:
  - name: link
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["ln", "-s", "/", "/scratch/escape"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["ls", "/host"]
    volumeMounts: [{name: scratch, mountPath: /host, subPath: escape}]
  volumes: [{name: scratch, emptyDir: {}}]
"#;

#[test]
fn volume_files_have_upstreams_modes_groups_and_paths() {
    let n = NodeServer::start();
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], MANIFEST);
    let pods = [
        "cm-default",
        "cm-non-root",
        "cm-default-mode",
        "cm-items",
        "secret-fs-group",
        "projected-fs-group",
        "downward-item-mode",
        "empty-dir-root",
        "empty-dir-non-root",
        "groups",
        "read-only-content",
        "sub-paths",
        "termination-message-non-root",
    ];
    let phase = ["get", "pod", "-o", "jsonpath={.status.phase}"];
    for pod in pods {
        let args: Vec<&str> = phase.iter().copied().chain([pod]).collect();
        n.wait_for(&args, Duration::from_secs(90), |p| p == "Succeeded" || p == "Failed");
    }
    let log = |pod: &str| s.ok(&["logs", pod]).trim_end().to_string();
    for pod in pods {
        let got = s.ok(&["get", "pod", pod, "-o", "jsonpath={.status.phase}"]);
        assert_eq!(got, "Succeeded", "{pod}: {}", log(pod));
    }

    // ConfigMap: 0644 by default, readable by any user; defaultMode; items with their own
    // paths and modes.
    assert_eq!(log("cm-default"), "-rw-r--r--\nvalue-1");
    assert_eq!(log("cm-non-root"), "-rw-r--r--\nvalue-1");
    assert_eq!(log("cm-default-mode"), "-r--------\nvalue-1");
    assert_eq!(log("cm-items"), "-r--------\n-rw-r--r--\nvalue-2data-1\npath");

    // Secrets and projected volumes with fsGroup: the group, group read, and the non-root
    // user reads through the group.
    let secret = log("secret-fs-group");
    let mut lines = secret.lines();
    assert_eq!(lines.next(), Some("-r--r----- 1001"), "{secret}");
    assert_eq!(lines.next(), Some("secret-1"), "{secret}");
    let groups: Vec<&str> = lines.next().unwrap_or("").split(' ').collect();
    assert!(groups.contains(&"1001"), "fsGroup is a supplementary group: {secret}");
    assert_eq!(log("projected-fs-group"), "-r--r----- 1001\nsecret-1");

    // Downward API: the item's mode.
    assert_eq!(log("downward-item-mode"), "-r--------\ndownward-item-mode");

    // emptyDir: 0777 on disk and in memory (a tmpfs); files keep the modes they are given,
    // by root and by other users.
    assert_eq!(
        log("empty-dir-root"),
        "drwxrwxrwx\ndrwxrwxrwx\ntmpfs\n-rw-r--r--\n-rw-rw-rw-\n-rwxrwxrwx\ncontent"
    );
    assert_eq!(log("empty-dir-non-root"), "-rw-rw-rw- 1001\n-rw-rw-rw- 1001\nmine");

    // supplementalGroups and fsGroup: the process's groups; an emptyDir is the fsGroup's,
    // setgid, so new files are too.
    let groups = log("groups");
    let mut lines = groups.lines();
    let ids: Vec<&str> = lines.next().unwrap_or("").split(' ').collect();
    for g in ["2000", "2001", "3000"] {
        assert!(ids.contains(&g), "{g} in {groups}");
    }
    assert_eq!(lines.next(), Some("drwxrwsrwx 3000"), "{groups}");
    assert_eq!(lines.next(), Some("-rw-r--r-- 3000"), "{groups}");

    // Content volumes are read-only in the container, whatever the mount says.
    let read_only = log("read-only-content");
    assert_eq!(read_only.matches("Read-only file system").count(), 2, "{read_only}");
    assert!(read_only.ends_with("value-1"), "{read_only}");

    // subPath of a configMap key and of a downward API file; subPathExpr from the env.
    assert_eq!(log("sub-paths"), "value-1sub-pathssub-paths\nhere");

    // A non-root container writes its termination message at a path of its own.
    let message = s.ok(&[
        "get",
        "pod",
        "termination-message-non-root",
        "-o",
        "jsonpath={.status.containerStatuses[0].state.terminated.message}",
    ]);
    assert_eq!(message, "DONE");

    // A subPath that leads out of the volume is refused: the container never starts.
    s.ok_stdin(&["apply", "-f", "-"], ESCAPE);
    let reason = n.wait_for(
        &[
            "get",
            "pod",
            "sub-path-escape",
            "-o",
            "jsonpath={.status.containerStatuses[0].state.waiting.reason}",
        ],
        Duration::from_secs(60),
        |r| r == "CreateContainerConfigError",
    );
    assert_eq!(reason, "CreateContainerConfigError");
    let message = s.ok(&[
        "get",
        "pod",
        "sub-path-escape",
        "-o",
        "jsonpath={.status.containerStatuses[0].state.waiting.message}",
    ]);
    assert!(message.contains("is not within volume path"), "{message}");
}

const CONTENTS: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
data: {data-1: value-1}
binaryData: {blob: AAEC}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {data-1: secret-1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: opt-update}
data: {data-1: value-1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: opt-delete}
data: {data-1: value-1}
---
apiVersion: v1
kind: Secret
metadata: {name: opt-update}
stringData: {data-1: value-1}
---
apiVersion: v1
kind: Secret
metadata: {name: opt-delete}
stringData: {data-1: value-1}
---
apiVersion: v1
kind: Pod
metadata: {name: resources}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    resources:
      limits: {cpu: 1250m, memory: 64Mi}
      requests: {cpu: 250m, memory: 32Mi}
    command: ["sh", "-c", "for d in /etc/podinfo /etc/projected; do cd $d && for f in cpu_limit memory_limit cpu_request memory_request cpu_request_m; do echo $f=$(cat $f); done; done"]
    volumeMounts: [{name: podinfo, mountPath: /etc/podinfo}, {name: projected, mountPath: /etc/projected}]
  volumes:
  - name: podinfo
    downwardAPI: &resources
      items:
      - {path: cpu_limit, resourceFieldRef: {containerName: c, resource: limits.cpu}}
      - {path: memory_limit, resourceFieldRef: {containerName: c, resource: limits.memory}}
      - {path: cpu_request, resourceFieldRef: {containerName: c, resource: requests.cpu}}
      - {path: memory_request, resourceFieldRef: {containerName: c, resource: requests.memory}}
      - {path: cpu_request_m, resourceFieldRef: {containerName: c, resource: requests.cpu, divisor: 1m}}
  - name: projected
    projected: {sources: [{downwardAPI: *resources}]}
---
apiVersion: v1
kind: Pod
metadata: {name: allocatable-defaults}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "cat /etc/podinfo/cpu_limit; echo; cat /etc/podinfo/memory_limit; echo; cat /etc/projected/cpu_limit; echo; cat /etc/projected/memory_limit"]
    volumeMounts: [{name: podinfo, mountPath: /etc/podinfo}, {name: projected, mountPath: /etc/projected}]
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - {path: cpu_limit, resourceFieldRef: {containerName: c, resource: limits.cpu}}
      - {path: memory_limit, resourceFieldRef: {containerName: c, resource: limits.memory}}
  - name: projected
    projected:
      sources:
      - downwardAPI:
          items:
          - {path: cpu_limit, resourceFieldRef: {containerName: c, resource: limits.cpu}}
          - {path: memory_limit, resourceFieldRef: {containerName: c, resource: limits.memory}}
---
apiVersion: v1
kind: Pod
metadata: {name: many-sources}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command:
    - sh
    - -c
    - >-
      cat /etc/cm-1/data-1 /etc/cm-2/data-1 && echo &&
      cat /etc/all/cm-data /etc/all/secret-data /etc/all/podname && echo &&
      od -An -tx1 /etc/cm-1/blob && cat /etc/secret-one /etc/projected-one &&
      cat /etc/p-cm-1/data-1 /etc/p-cm-2/data-1 /etc/p-sec-1/data-1 /etc/p-sec-2/data-1
    volumeMounts:
    - {name: cm-1, mountPath: /etc/cm-1}
    - {name: cm-2, mountPath: /etc/cm-2}
    - {name: all, mountPath: /etc/all}
    - {name: sec, mountPath: /etc/secret-one, subPath: data-1}
    - {name: all, mountPath: /etc/projected-one, subPath: cm-data}
    - {name: p-cm-1, mountPath: /etc/p-cm-1}
    - {name: p-cm-2, mountPath: /etc/p-cm-2}
    - {name: p-sec-1, mountPath: /etc/p-sec-1}
    - {name: p-sec-2, mountPath: /etc/p-sec-2}
  volumes:
  - {name: p-cm-1, projected: {sources: [{configMap: {name: cm}}]}}
  - {name: p-cm-2, projected: {sources: [{configMap: {name: cm}}]}}
  - {name: p-sec-1, projected: {sources: [{secret: {name: sec}}]}}
  - {name: p-sec-2, projected: {sources: [{secret: {name: sec}}]}}
  - {name: cm-1, configMap: {name: cm}}
  - {name: cm-2, configMap: {name: cm}}
  - {name: sec, secret: {secretName: sec}}
  - name: all
    projected:
      sources:
      - configMap: {name: cm, items: [{key: data-1, path: cm-data}]}
      - secret: {name: sec, items: [{key: data-1, path: secret-data}]}
      - downwardAPI: {items: [{path: podname, fieldRef: {fieldPath: metadata.name}}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: follower
  labels: {a: one}
  annotations: {b: two}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: podinfo, mountPath: /etc/podinfo}
    - {name: update, mountPath: /etc/update}
    - {name: delete, mountPath: /etc/delete}
    - {name: create, mountPath: /etc/create}
    - {name: secret-update, mountPath: /etc/secret/update}
    - {name: secret-delete, mountPath: /etc/secret/delete}
    - {name: secret-create, mountPath: /etc/secret/create}
    - {name: projected-cm, mountPath: /etc/projected-cm}
    - {name: projected-secret, mountPath: /etc/projected-secret}
    - {name: projected-podinfo, mountPath: /etc/projected-podinfo}
  volumes:
  - name: podinfo
    downwardAPI: &podinfo
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: annotations, fieldRef: {fieldPath: metadata.annotations}}
  - {name: projected-podinfo, projected: {sources: [{downwardAPI: *podinfo}]}}
  - {name: secret-update, secret: {secretName: opt-update, optional: true}}
  - {name: secret-delete, secret: {secretName: opt-delete, optional: true}}
  - {name: secret-create, secret: {secretName: opt-create, optional: true}}
  - name: projected-cm
    projected:
      sources:
      - configMap: {name: opt-update, optional: true, items: [{key: data-1, path: update/data-1}]}
      - configMap: {name: opt-delete, optional: true, items: [{key: data-1, path: delete/data-1}]}
      - configMap: {name: opt-create, optional: true, items: [{key: data-1, path: create/data-1}]}
  - name: projected-secret
    projected:
      sources:
      - secret: {name: opt-update, optional: true, items: [{key: data-1, path: update/data-1}]}
      - secret: {name: opt-delete, optional: true, items: [{key: data-1, path: delete/data-1}]}
      - secret: {name: opt-create, optional: true, items: [{key: data-1, path: create/data-1}]}
  - {name: update, configMap: {name: opt-update, optional: true}}
  - {name: delete, configMap: {name: opt-delete, optional: true}}
  - {name: create, configMap: {name: opt-create, optional: true}}
"#;

#[test]
fn volume_contents_follow_the_pod_its_resources_and_the_api() {
    let n = NodeServer::start();
    let s = &n.server;
    // `create`, not `apply`: the pod's annotations are only the manifest's.
    s.ok_stdin(&["create", "-f", "-"], CONTENTS);
    let log = |pod: &str| s.ok(&["logs", pod]).trim_end().to_string();
    for pod in ["resources", "allocatable-defaults", "many-sources"] {
        let phase = n.wait_for(
            &["get", "pod", pod, "-o", "jsonpath={.status.phase}"],
            Duration::from_secs(90),
            |p| p == "Succeeded" || p == "Failed",
        );
        assert_eq!(phase, "Succeeded", "{pod}: {}", log(pod));
    }

    // Resources in the divisor's units, rounded up; limits a container does not set are the
    // node's allocatable.
    let resources =
        "cpu_limit=2\nmemory_limit=67108864\ncpu_request=1\nmemory_request=33554432\ncpu_request_m=250";
    assert_eq!(log("resources"), format!("{resources}\n{resources}"), "plain, then projected");
    let defaults = log("allocatable-defaults");
    let values: Vec<u64> = defaults.lines().map(|l| l.parse().unwrap_or(0)).collect();
    assert_eq!(values.len(), 4, "{defaults}");
    assert!(values.iter().all(|v| *v >= 1), "the node's allocatable: {defaults}");
    assert_eq!(values[..2], values[2..], "plain and projected agree: {defaults}");

    // One configMap in two volumes, binaryData, a projected volume of three sources, and
    // subPaths of a secret and of a projected volume.
    assert_eq!(
        log("many-sources"),
        "value-1value-1\nvalue-1secret-1many-sources\n 00 01 02\nsecret-1value-1value-1value-1secret-1secret-1"
    );

    // A running pod's files follow its labels and annotations, and its optional configMaps
    // as they are updated, deleted and created.
    n.wait_for(
        &["get", "pod", "follower", "-o", "jsonpath={.status.phase}"],
        Duration::from_secs(90),
        |p| p == "Running",
    );
    let files = "/etc/podinfo/labels /etc/podinfo/annotations /etc/projected-podinfo/labels \
                 /etc/projected-podinfo/annotations";
    let read = || {
        let out = s.kubectl(&["exec", "follower", "--", "sh", "-c", &format!("cat {files}")]);
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    assert_eq!(read(), "a=\"one\"b=\"two\"".repeat(2));
    // Each optional kind: a configMap, a secret, and both projected (by item paths).
    let optional = "for d in /etc /etc/secret /etc/projected-cm /etc/projected-secret; do \
                    for k in update delete create; do \
                    if [ -f $d/$k/data-1 ]; then echo $k=$(cat $d/$k/data-1); else echo $k=-; fi; \
                    done; done";
    let listing = s.ok(&["exec", "follower", "--", "sh", "-c", optional]);
    assert_eq!(listing, "update=value-1\ndelete=value-1\ncreate=-\n".repeat(4));

    s.ok(&["label", "pod", "follower", "a=uno", "--overwrite"]);
    s.ok(&["annotate", "pod", "follower", "b=dos", "--overwrite"]);
    s.ok(&["patch", "configmap", "opt-update", "-p", r#"{"data":{"data-1":"value-2"}}"#]);
    s.ok(&["patch", "secret", "opt-update", "-p", r#"{"stringData":{"data-1":"value-2"}}"#]);
    for kind in ["configmap", "secret"] {
        s.ok(&["delete", kind, "opt-delete"]);
    }
    s.ok(&["create", "configmap", "opt-create", "--from-literal=data-1=value-3"]);
    s.ok(&["create", "secret", "generic", "opt-create", "--from-literal=data-1=value-3"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let expected = "update=value-2\ndelete=-\ncreate=value-3\n".repeat(4);
    loop {
        let out = s.kubectl(&["exec", "follower", "--", "sh", "-c", optional]);
        let now = String::from_utf8_lossy(&out.stdout).to_string();
        if read() == "a=\"uno\"b=\"dos\"".repeat(2) && now == expected {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the files did not follow: {:?} and {now:?}",
            read()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// One pod of the volume matrix: its name, the volume's source (`secret: {...}`), the
/// pod's `securityContext`, the file it reads under `/v` and what its log must be.
struct Case {
    name: String,
    volume: String,
    security: &'static str,
    file: &'static str,
    expected: String,
}

/// A content source: its name, its volume source given extra fields, the value it holds.
type Source<'a> = (&'a str, &'a dyn Fn(&str) -> String, &'a str);

/// Every content source (configMap, secret, and each projected) in each of upstream's
/// variants: defaults, `defaultMode` 0400, mapped by items, mapped with an item mode 0400,
/// a non-root reader, mapped for a non-root reader.
fn matrix() -> Vec<Case> {
    let sources: [Source; 4] = [
        ("cm", &|extra| format!("configMap: {{name: cm{extra}}}"), "value-1"),
        ("secret", &|extra| format!("secret: {{secretName: sec{extra}}}"), "secret-1"),
        ("projected-cm", &|extra| projected("configMap: {name: cm", extra), "value-1"),
        ("projected-secret", &|extra| projected("secret: {name: sec", extra), "secret-1"),
    ];
    let mut cases = Vec::new();
    for (kind, volume, value) in sources {
        let mapped = ", items: [{key: data-1, path: path/to/data-2}]";
        let mapped_0400 = ", items: [{key: data-1, path: path/to/data-2, mode: 0400}]";
        let variants: [(&str, String, &str, &str, &str); 6] = [
            ("default", volume(""), "{}", "data-1", "-rw-r--r--"),
            ("mode", volume(", defaultMode: 0400"), "{}", "data-1", "-r--------"),
            ("mapped", volume(mapped), "{}", "path/to/data-2", "-rw-r--r--"),
            ("mapped-mode", volume(mapped_0400), "{}", "path/to/data-2", "-r--------"),
            ("non-root", volume(""), "{runAsUser: 1000}", "data-1", "-rw-r--r--"),
            (
                "mapped-non-root",
                volume(mapped),
                "{runAsUser: 1000}",
                "path/to/data-2",
                "-rw-r--r--",
            ),
        ];
        for (variant, volume, security, file, mode) in variants {
            cases.push(Case {
                name: format!("{kind}-{variant}"),
                volume,
                security,
                file,
                expected: format!("{mode}\n{value}"),
            });
        }
    }
    // Downward API files with a volume mode and an item mode, plain and projected.
    let name_item =
        |mode: &str| format!("{{path: data-1, fieldRef: {{fieldPath: metadata.name}}{mode}}}");
    for (name, volume) in [
        (
            "downward-mode",
            format!("downwardAPI: {{defaultMode: 0400, items: [{}]}}", name_item("")),
        ),
        (
            "projected-downward-mode",
            format!(
                "projected: {{defaultMode: 0400, sources: [{{downwardAPI: {{items: [{}]}}}}]}}",
                name_item("")
            ),
        ),
        (
            "projected-downward-item-mode",
            format!(
                "projected: {{sources: [{{downwardAPI: {{items: [{}]}}}}]}}",
                name_item(", mode: 0400")
            ),
        ),
    ] {
        cases.push(Case {
            name: name.into(),
            volume,
            security: "{}",
            file: "data-1",
            // The pod the case lands in: its name is the file.
            expected: "-r--------\n{pod}".into(),
        });
    }
    cases
}

/// A projected volume of one source (`source` is its opening, e.g. `secret: {name: sec`),
/// with `extra` items; a `defaultMode` in `extra` goes to the volume, as upstream has it.
fn projected(source: &str, extra: &str) -> String {
    let (mode, items) = match extra.strip_prefix(", defaultMode: ") {
        Some(mode) => (format!("defaultMode: {mode}, "), ""),
        None => (String::new(), extra),
    };
    ["projected: {", &mode, "sources: [{", source, items, "}}]}"].concat()
}

#[test]
fn every_content_volume_honours_modes_mappings_and_users() {
    let n = NodeServer::start();
    let s = &n.server;
    let mut manifest = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {data-1: value-1}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {name: sec}\nstringData: {data-1: secret-1}\n---\n\
         apiVersion: v1\nkind: Namespace\nmetadata: {name: elsewhere}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {name: sec, namespace: elsewhere}\n\
         stringData: {data-1: not-this-one}\n",
    );
    // One pod for the cases that run as the same user: each case a volume of its own.
    let cases = matrix();
    let mut pods: Vec<(String, &str, Vec<&Case>)> = Vec::new();
    for case in &cases {
        let user = if case.security == "{}" { "root" } else { "non-root" };
        let pod = format!("{}-{user}", case.name.split('-').next().unwrap_or(""));
        match pods.iter_mut().find(|(name, _, _)| *name == pod) {
            Some((_, _, members)) => members.push(case),
            None => pods.push((pod, case.security, vec![case])),
        }
    }
    for (pod, security, members) in &pods {
        let reads: Vec<String> = members
            .iter()
            .map(|c| {
                format!("stat -L -c %A /{n}/{f} && cat /{n}/{f} && echo", n = c.name, f = c.file)
            })
            .collect();
        let mounts: Vec<String> =
            members.iter().map(|c| format!("{{name: {n}, mountPath: /{n}}}", n = c.name)).collect();
        let volumes: String =
            members.iter().map(|c| format!("  - name: {}\n    {}\n", c.name, c.volume)).collect();
        manifest.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {pod}}}\nspec:\n  restartPolicy: Never\n  \
             securityContext: {security}\n  containers:\n  - name: c\n    image: \"busybox:1.36\"\n    \
             imagePullPolicy: IfNotPresent\n    command: [\"sh\", \"-c\", \"{}\"]\n    \
             volumeMounts: [{}]\n  volumes:\n{volumes}",
            reads.join(" && "),
            mounts.join(", "),
        ));
    }
    // The same secret in two volumes of one pod.
    manifest.push_str(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: two-volumes}\nspec:\n  restartPolicy: Never\n  \
         containers:\n  - name: c\n    image: \"busybox:1.36\"\n    imagePullPolicy: IfNotPresent\n    \
         command: [\"sh\", \"-c\", \"cat /one/data-1 /two/data-1\"]\n    \
         volumeMounts: [{name: one, mountPath: /one}, {name: two, mountPath: /two}]\n  volumes:\n  \
         - {name: one, secret: {secretName: sec}}\n  - {name: two, secret: {secretName: sec}}\n",
    );
    s.ok_stdin(&["create", "-f", "-"], &manifest);
    let log = |pod: &str| s.ok(&["logs", pod]);
    let names: Vec<&str> = pods.iter().map(|(p, _, _)| p.as_str()).chain(["two-volumes"]).collect();
    for pod in &names {
        let phase = n.wait_for(
            &["get", "pod", pod, "-o", "jsonpath={.status.phase}"],
            Duration::from_secs(90),
            |p| p == "Succeeded" || p == "Failed",
        );
        assert_eq!(phase, "Succeeded", "{pod}: {}", log(pod));
    }
    for (pod, _, members) in &pods {
        let got = log(pod);
        let mut lines = got.lines();
        for case in members {
            let seen: Vec<&str> = lines.by_ref().take(2).collect();
            let expected = case.expected.replace("{pod}", pod);
            assert_eq!(seen.join("\n"), expected, "{}: {}\n{got}", case.name, case.volume);
        }
    }
    // Its own namespace's secret, though another namespace has one of the same name.
    assert_eq!(log("two-volumes"), "secret-1secret-1");
}
