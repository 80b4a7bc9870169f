//! Static pods on a real Docker engine: a manifest in `--pod-manifest-path` runs as a pod the
//! kubelet owns, shown in the API as a mirror pod that kubectl lists, describes and reads logs
//! of; deleting the mirror does not stop the pod, editing the file replaces it, removing the
//! file stops it.

use std::time::Duration;

use rkube_conformance::cluster::jsonpath;
use rkube_conformance::node::NodeServer;

const MANIFEST: &str = "
apiVersion: v1
kind: Pod
metadata:
  name: static-web
  labels: {tier: static}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: busybox:1.36
    imagePullPolicy: IfNotPresent
    command: [sh, -c, 'echo serving version 1; exec httpd -f -p 80 -h /var/www']
";

#[test]
fn static_pods_run_from_files_with_mirror_pods_in_the_api() {
    let manifests = tempfile::tempdir().unwrap();
    std::fs::write(manifests.path().join("web.yaml"), MANIFEST).unwrap();
    // An editor's swap file and a broken manifest are not pods.
    std::fs::write(manifests.path().join(".web.yaml.swp"), "junk").unwrap();
    std::fs::write(manifests.path().join("broken.yaml"), "kind: Pod\napiVersion: v1\n").unwrap();
    let dir = manifests.path().to_str().unwrap();
    let n = NodeServer::start_with(&["--pod-manifest-path", dir]);
    let s = &n.server;
    let name = format!("static-web-{}", n.node);

    // The mirror pod: Running, controlled by the node, with the static pod's hash.
    let running = n.wait_for(
        &["get", "pod", &name, "-o", &jsonpath("{.status.phase} {.status.podIP}")],
        Duration::from_secs(60),
        |out| out.starts_with("Running ") && out.len() > "Running ".len(),
    );
    let pod: serde_json::Value =
        serde_json::from_str(&s.ok(&["get", "pod", &name, "-o", "json"])).unwrap();
    let annotations = &pod["metadata"]["annotations"];
    let hash = annotations["kubernetes.io/config.mirror"].as_str().unwrap().to_string();
    assert_eq!(annotations["kubernetes.io/config.hash"], hash.as_str());
    assert_eq!(annotations["kubernetes.io/config.source"], "file");
    assert_ne!(pod["metadata"]["uid"], hash.as_str(), "the mirror has the API server's uid");
    let owner = &pod["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].as_str(), owner["name"].as_str()),
        (Some("Node"), Some(n.node.as_str()))
    );
    assert_eq!(owner["controller"], true);
    assert_eq!(pod["spec"]["nodeName"], n.node.as_str());
    assert_eq!(pod["metadata"]["labels"]["tier"], "static");
    let describe = s.ok(&["describe", "pod", &name]);
    assert!(describe.contains(&format!("Controlled By:  Node/{}", n.node)), "{describe}");
    assert!(!s.ok(&["get", "pods", "-o", "name"]).contains("broken"));

    // Logs reach the static pod's container through the kubelet.
    let logs = s.ok(&["logs", &name]);
    assert_eq!(logs.trim(), "serving version 1");

    // Deleting the mirror pod does not stop the pod: a new mirror appears, same containers.
    let containers = n.containers_of(&hash);
    assert_eq!(containers.len(), 2, "sandbox and app container: {containers:?}");
    let old_uid = pod["metadata"]["uid"].as_str().unwrap().to_string();
    s.ok(&["delete", "pod", &name, "--wait=false"]);
    n.wait_for(
        &["get", "pod", &name, "-o", &jsonpath("{.metadata.uid} {.status.phase}")],
        Duration::from_secs(30),
        |out| !out.starts_with(&old_uid) && out.ends_with(" Running"),
    );
    assert_eq!(n.containers_of(&hash), containers, "the containers kept running");
    let restarts = s.ok(&[
        "get",
        "pod",
        &name,
        "-o",
        &jsonpath("{.status.containerStatuses[0].restartCount}"),
    ]);
    assert_eq!(restarts.trim(), "0");

    // A restarted kubelet adopts the static pod's containers instead of starting new ones.
    let mut n = n;
    n.server.restart();
    let s = &n.server;
    n.wait_for(
        &["get", "pod", &name, "-o", &jsonpath("{.status.phase}")],
        Duration::from_secs(30),
        |out| out == "Running",
    );
    assert_eq!(n.containers_of(&hash), containers, "adopted after a restart");

    // An edit makes a new static pod: the old containers go, the mirror follows the new hash.
    std::fs::write(manifests.path().join("web.yaml"), MANIFEST.replace("version 1", "version 2"))
        .unwrap();
    n.wait_for(
        &[
            "get",
            "pod",
            &name,
            "-o",
            &jsonpath("{.metadata.annotations.kubernetes\\.io/config\\.mirror} {.status.phase}"),
        ],
        Duration::from_secs(60),
        |out| !out.starts_with(&hash) && out.ends_with(" Running"),
    );
    n.wait_for(&["logs", &name], Duration::from_secs(30), |out| out.trim() == "serving version 2");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !n.containers_of(&hash).is_empty() {
        assert!(std::time::Instant::now() < deadline, "the old static pod's containers stayed");
        std::thread::sleep(Duration::from_millis(250));
    }

    // The file goes: so do the pod and its mirror.
    let new_hash = s.ok(&[
        "get",
        "pod",
        &name,
        "-o",
        &jsonpath("{.metadata.annotations.kubernetes\\.io/config\\.hash}"),
    ]);
    std::fs::remove_file(manifests.path().join("web.yaml")).unwrap();
    n.wait_for(&["get", "pods", "-o", "name"], Duration::from_secs(30), |out| !out.contains(&name));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !n.containers_of(new_hash.trim()).is_empty() {
        assert!(std::time::Instant::now() < deadline, "the static pod's containers stayed");
        std::thread::sleep(Duration::from_millis(250));
    }
    let _ = running;
}
