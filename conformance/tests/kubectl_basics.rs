//! Stock kubectl against the real `rkube server`: what people do first with a cluster.

use rkube_conformance::cluster::RkubeServer;
use serde_json::Value;

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

#[test]
fn version_and_health() {
    let s = RkubeServer::start();
    let out = s.ok(&["version", "-o", "json"]);
    let v = json(&out);
    assert_eq!(v["serverVersion"]["gitVersion"], "v1.33.0");
    assert_eq!(v["serverVersion"]["major"], "1");
    assert_eq!(s.ok(&["get", "--raw", "/livez"]).trim(), "ok");
    let verbose = s.ok(&["get", "--raw", "/readyz?verbose"]);
    assert!(verbose.contains("[+]etcd ok") && verbose.contains("readyz check passed"), "{verbose}");
}

#[test]
fn discovery_lists_the_builtin_resources() {
    let s = RkubeServer::start();
    let resources = s.ok(&["api-resources", "--no-headers"]);
    for (name, short) in
        [("pods", "po"), ("services", "svc"), ("deployments", "deploy"), ("namespaces", "ns")]
    {
        let line = resources
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing:\n{resources}"));
        assert!(line.split_whitespace().any(|w| w == short), "{line}");
    }
    let versions = s.ok(&["api-versions"]);
    for gv in [
        "v1",
        "apps/v1",
        "batch/v1",
        "autoscaling/v2",
        "autoscaling/v1",
        "networking.k8s.io/v1",
        "rbac.authorization.k8s.io/v1",
    ] {
        assert!(versions.lines().any(|l| l == gv), "{gv} missing:\n{versions}");
    }
    let namespaced = s.ok(&["api-resources", "--namespaced=false", "-o", "name"]);
    assert!(namespaced.lines().any(|l| l == "nodes") && !namespaced.lines().any(|l| l == "pods"));
}

#[test]
fn default_namespaces_exist() {
    let s = RkubeServer::start();
    let out = s.ok(&["get", "namespaces", "-o", "name"]);
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(out.lines().any(|l| l == format!("namespace/{ns}")), "{ns} missing:\n{out}");
    }
    let ns = json(&s.ok(&["get", "ns", "default", "-o", "json"]));
    assert_eq!(ns["status"]["phase"], "Active");
    assert_eq!(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "default");
}

#[test]
fn create_get_and_delete_a_configmap() {
    let s = RkubeServer::start();
    assert_eq!(
        s.ok(&["create", "configmap", "app", "--from-literal=a=1", "--from-literal=b=2"]).trim(),
        "configmap/app created"
    );
    let cm = json(&s.ok(&["get", "cm", "app", "-o", "json"]));
    assert_eq!(cm["data"]["a"], "1");
    assert_eq!(cm["metadata"]["namespace"], "default");
    assert!(cm["metadata"]["uid"].as_str().is_some_and(|u| u.len() == 36));
    assert!(cm["metadata"]["resourceVersion"].as_str().is_some_and(|rv| rv.parse::<u64>().is_ok()));
    assert!(cm["metadata"]["creationTimestamp"].as_str().is_some_and(|t| t.ends_with('Z')));

    // kubectl's generators print API errors this way (as against kube-apiserver).
    let err = s.fails(&["create", "configmap", "app", "--from-literal=a=1"]);
    assert!(
        err.contains("error: failed to create configmap: configmaps \"app\" already exists"),
        "{err}"
    );
    let err = s.fails_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app"}}"#,
    );
    assert!(
        err.contains("Error from server (AlreadyExists): error when creating \"STDIN\": configmaps \"app\" already exists"),
        "{err}"
    );

    assert_eq!(s.ok(&["delete", "configmap", "app"]).trim(), "configmap \"app\" deleted");
    let err = s.fails(&["get", "configmap", "app"]);
    assert!(err.contains("Error from server (NotFound): configmaps \"app\" not found"), "{err}");
}

#[test]
fn objects_go_only_into_existing_namespaces() {
    let s = RkubeServer::start();
    let err = s.fails(&["create", "configmap", "x", "-n", "nope"]);
    assert!(err.contains("namespaces \"nope\" not found"), "{err}");
    s.ok(&["create", "namespace", "team-a"]);
    s.ok(&["create", "configmap", "x", "-n", "team-a"]);
    let all = s.ok(&["get", "configmaps", "-A", "-o", "name"]);
    assert!(all.lines().any(|l| l == "configmap/x"), "{all}");
}

#[test]
fn invalid_objects_are_refused_with_field_errors() {
    let s = RkubeServer::start();
    let err = s.fails(&["create", "configmap", "Bad_Name"]);
    assert!(
        err.contains("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"),
        "{err}"
    );
    let err = s.fails_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}"#,
    );
    assert!(
        err.contains("The ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value"),
        "{err}"
    );
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]}}"#;
    let err = String::from_utf8_lossy(
        &s.kubectl_with(&s.kubectl, &["create", "-f", "-"], Some(pod)).stderr,
    )
    .into_owned();
    assert!(err.contains("spec.containers[0].image: Required value"), "{err}");
}

#[test]
fn apply_creates_then_patches() {
    let s = RkubeServer::start();
    let manifest = |replicas: u32, image: &str| {
        format!(
            r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: blue
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: {image}
        ports:
        - containerPort: 80
"#
        )
    };
    let out = s.ok_stdin(&["apply", "-f", "-"], &manifest(1, "busybox:1.36"));
    assert!(
        out.contains("configmap/settings created") && out.contains("deployment.apps/web created"),
        "{out}"
    );
    let out = s.ok_stdin(&["apply", "-f", "-"], &manifest(3, "busybox:1.37"));
    assert!(
        out.contains("configmap/settings unchanged")
            && out.contains("deployment.apps/web configured"),
        "{out}"
    );
    let d = json(&s.ok(&["get", "deploy", "web", "-o", "json"]));
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "busybox:1.37");
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"], 80);
    assert_eq!(d["metadata"]["generation"], 2);
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
    assert!(d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .is_string());
}

#[test]
fn label_annotate_patch_and_scale() {
    let s = RkubeServer::start();
    s.ok(&["create", "deployment", "web", "--image=busybox:1.36", "--replicas=1"]);
    s.ok(&["label", "deployment", "web", "tier=front"]);
    s.ok(&["annotate", "deployment", "web", "note=hello"]);
    s.ok(&[
        "patch",
        "deployment",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"minReadySeconds":5}}"#,
    ]);
    s.ok(&[
        "patch",
        "deployment",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/revisionHistoryLimit","value":4}]"#,
    ]);
    s.ok(&["patch", "deployment", "web", "-p", r#"{"spec":{"template":{"spec":{"containers":[{"name":"busybox","image":"busybox:1.37"}]}}}}"#]);
    s.ok(&["scale", "deployment", "web", "--replicas=4"]);
    let d = json(&s.ok(&["get", "deployment", "web", "-o", "json"]));
    assert_eq!(d["metadata"]["labels"]["tier"], "front");
    assert_eq!(d["metadata"]["annotations"]["note"], "hello");
    assert_eq!(d["spec"]["minReadySeconds"], 5);
    assert_eq!(d["spec"]["revisionHistoryLimit"], 4);
    assert_eq!(d["spec"]["replicas"], 4);
    let containers = d["spec"]["template"]["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1, "strategic merge patch merged by name");
    assert_eq!(containers[0]["image"], "busybox:1.37");
    let selected = s.ok(&["get", "deployments", "-l", "tier=front", "-o", "name"]);
    assert_eq!(selected.trim(), "deployment.apps/web");
    let none = s.ok(&["get", "deployments", "-l", "tier in (back)", "-o", "name"]);
    assert_eq!(none.trim(), "");
}

#[test]
fn field_selectors_and_unsupported_fields() {
    let s = RkubeServer::start();
    s.ok(&["create", "configmap", "one"]);
    s.ok(&["create", "configmap", "two"]);
    let out = s.ok(&["get", "cm", "--field-selector", "metadata.name=two", "-o", "name"]);
    assert_eq!(out.trim(), "configmap/two");
    let err = s.fails(&["get", "cm", "--field-selector", "spec.bogus=1"]);
    assert!(err.contains("field label not supported: spec.bogus"), "{err}");
}

#[test]
fn chunked_lists_return_everything() {
    let s = RkubeServer::start();
    s.wait_until("the root CA publisher's ConfigMap", std::time::Duration::from_secs(20), || {
        let out = s.kubectl(&["get", "configmap", "kube-root-ca.crt"]);
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    });
    for i in 0..12 {
        s.ok(&["create", "configmap", &format!("cm-{i:02}")]);
    }
    let out = s.ok(&["get", "cm", "--chunk-size=5", "-o", "name"]);
    let names: Vec<&str> = out.lines().filter(|l| l.starts_with("configmap/cm-")).collect();
    assert_eq!(names.len(), 12, "{out}");
    let raw = json(&s.ok(&["get", "--raw", "/api/v1/namespaces/default/configmaps?limit=5"]));
    assert_eq!(raw["items"].as_array().unwrap().len(), 5);
    assert!(raw["metadata"]["continue"].is_string());
    // 12 of ours and the root CA publisher's ConfigMap, which every namespace has.
    assert_eq!(raw["metadata"]["remainingItemCount"], 8);
}
