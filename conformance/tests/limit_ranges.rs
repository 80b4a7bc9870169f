//! LimitRanges as a user meets them through stock kubectl against `rkube server`: a new pod's
//! containers get the namespace's default requests and limits (and the pod the
//! `kubernetes.io/limit-ranger` annotation saying so), a pod or claim outside a minimum or
//! maximum is refused with kube-apiserver's 403 and message, and a pod already running is not
//! touched by a LimitRange created after it.

use rkube_conformance::cluster::RkubeServer;

const LIMITS: &str = "apiVersion: v1
kind: LimitRange
metadata:
  name: limits
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 256Mi}
    defaultRequest: {cpu: 100m, memory: 128Mi}
    max: {cpu: \"1\", memory: 1Gi}
    min: {cpu: 50m}
    maxLimitRequestRatio: {cpu: \"10\"}
  - type: Pod
    max: {cpu: \"2\"}
  - type: PersistentVolumeClaim
    min: {storage: 1Gi}
    max: {storage: 2Gi}
";

/// A pod whose containers ask for `resources` (YAML flow maps, one per container).
fn pod(name: &str, resources: &[&str]) -> String {
    let containers: String = resources
        .iter()
        .enumerate()
        .map(|(i, r)| format!("  - name: c{i}\n    image: busybox:1.36\n    resources: {r}\n"))
        .collect();
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n{containers}"
    )
}

fn claim(name: &str, size: &str) -> String {
    format!(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: {name}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: {size}\n"
    )
}

fn refusal(s: &RkubeServer, manifest: &str) -> String {
    s.fails_stdin(&["create", "-f", "-"], manifest).trim_end().to_string()
}

#[test]
fn new_pods_get_the_defaults_and_the_annotation() {
    let s = RkubeServer::start_with(&["--disable", "kubelet"]);
    s.ok_stdin(&["create", "-f", "-"], &pod("before", &["{}"]));
    // Created just before the pod: it applies to it.
    s.ok_stdin(&["create", "-f", "-"], LIMITS);
    s.ok_stdin(&["create", "-f", "-"], &pod("plain", &["{}"]));
    let yaml = s.ok(&["get", "pod", "plain", "-o", "yaml"]);
    assert!(
        yaml.contains(
            "    kubernetes.io/limit-ranger: 'LimitRanger plugin set: cpu, memory request for container\n      c0; cpu, memory limit for container c0'\n"
        ),
        "{yaml}"
    );
    assert!(
        yaml.contains(
            "    resources:\n      limits:\n        cpu: 500m\n        memory: 256Mi\n      requests:\n        cpu: 100m\n        memory: 128Mi\n"
        ),
        "{yaml}"
    );
    // What a container sets is kept; only what it lacks is filled in (a limit alone is also
    // its request, by the pod's own defaults, before LimitRanger runs).
    let partial = pod("partial", &["{limits: {cpu: 800m}}"]);
    s.ok_stdin(&["create", "-f", "-"], &partial);
    let resources = s.ok(&[
        "get",
        "pod",
        "partial",
        "-o",
        "jsonpath={.spec.containers[0].resources}|{.metadata.annotations.kubernetes\\.io/limit-ranger}",
    ]);
    assert_eq!(
        resources,
        r#"{"limits":{"cpu":"800m","memory":"256Mi"},"requests":{"cpu":"800m","memory":"128Mi"}}|LimitRanger plugin set: memory request for container c0; memory limit for container c0"#
    );
    // The pod created before the LimitRange is as it was.
    let before = s.ok(&[
        "get",
        "pod",
        "before",
        "-o",
        "jsonpath={.spec.containers[0].resources}|{.metadata.annotations}",
    ]);
    assert_eq!(before, "{}|");
}

#[test]
fn pods_and_claims_outside_the_limits_are_refused_as_upstream() {
    let s = RkubeServer::start_with(&["--disable", "kubelet"]);
    s.ok_stdin(&["create", "-f", "-"], LIMITS);
    let prefix = "Error from server (Forbidden): error when creating \"STDIN\": ";
    assert_eq!(
        refusal(&s, &pod("big", &["{limits: {cpu: \"2\"}}"])),
        format!("{prefix}pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2")
    );
    assert_eq!(
        refusal(&s, &pod("bigger", &["{limits: {cpu: \"2\", memory: 2Gi}, requests: {cpu: 20m}}"])),
        format!("{prefix}pods \"bigger\" is forbidden: [minimum cpu usage per Container is 50m, but request is 20m, maximum cpu usage per Container is 1, but limit is 2, maximum memory usage per Container is 1Gi, but limit is 2Gi, cpu max limit to request ratio per Container is 10, but provided ratio is 100.000000]")
    );
    // Each container within its limits, the pod as a whole over its own.
    let three = ["{limits: {cpu: 800m}}"; 3];
    assert_eq!(
        refusal(&s, &pod("crowd", &three)),
        format!("{prefix}pods \"crowd\" is forbidden: maximum cpu usage per Pod is 2, but limit is 2400m")
    );
    s.ok_stdin(&["create", "-f", "-"], &pod("pair", &three[..2]));

    assert_eq!(
        refusal(&s, &claim("huge", "5Gi")),
        format!("{prefix}persistentvolumeclaims \"huge\" is forbidden: maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi")
    );
    assert_eq!(
        refusal(&s, &claim("tiny", "500Mi")),
        format!("{prefix}persistentvolumeclaims \"tiny\" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi")
    );
    s.ok_stdin(&["create", "-f", "-"], &claim("fits", "1536Mi"));
    // Nothing refused was stored.
    assert_eq!(
        s.ok(&["get", "pods,pvc", "-o", "name"]).trim(),
        "pod/pair\npersistentvolumeclaim/fits"
    );
}

#[test]
fn without_the_plugin_nothing_is_defaulted_or_refused() {
    let s = RkubeServer::start_with(&[
        "--disable",
        "kubelet",
        "--disable-admission-plugins=LimitRanger",
    ]);
    s.ok_stdin(&["create", "-f", "-"], LIMITS);
    s.ok_stdin(&["create", "-f", "-"], &pod("big", &["{limits: {cpu: \"2\"}}"]));
    let resources = s.ok(&["get", "pod", "big", "-o", "jsonpath={.spec.containers[0].resources}"]);
    assert_eq!(resources, r#"{"limits":{"cpu":"2"},"requests":{"cpu":"2"}}"#);
}
