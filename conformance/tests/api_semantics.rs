//! API semantics as a user meets them: errors (status codes, reasons and messages as
//! kube-apiserver gives them), request options, watch-list and resource versions, through
//! stock kubectl and a raw HTTPS client.

use rkube_conformance::cluster::RkubeServer;

const POD_WITH_TYPO: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"typo"},"spec":{"bogus":true,"containers":[{"name":"c","image":"busybox:1.36"}]}}"#;

#[test]
fn field_validation_strict_warn_and_ignore() {
    let s = RkubeServer::start();
    let err = s.fails_stdin(&["create", "--validate=strict", "-f", "-"], POD_WITH_TYPO);
    assert!(
        err.contains(r#"Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.bogus""#),
        "{err}"
    );
    let out =
        s.kubectl_with(&s.kubectl, &["create", "--validate=warn", "-f", "-"], Some(POD_WITH_TYPO));
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(r#"Warning: unknown field "spec.bogus""#), "{stderr}");
    // The unknown field is dropped, as kube-apiserver does.
    let spec = s.ok(&["get", "pod", "typo", "-o", "jsonpath={.spec}"]);
    assert!(!spec.contains("bogus"), "{spec}");
    s.ok(&["delete", "pod", "typo"]);
    let out =
        s.kubectl_with(&s.kubectl, &["create", "--validate=false", "-f", "-"], Some(POD_WITH_TYPO));
    assert!(out.status.success() && !String::from_utf8_lossy(&out.stderr).contains("Warning"));
}

#[test]
fn server_dry_run_stores_nothing() {
    let s = RkubeServer::start();
    assert_eq!(
        s.ok(&["create", "configmap", "dry", "--dry-run=server"]).trim(),
        "configmap/dry created (server dry run)"
    );
    let err = s.fails(&["get", "configmap", "dry"]);
    assert!(err.contains("NotFound"), "{err}");
    s.ok(&["create", "configmap", "real"]);
    s.ok(&["delete", "configmap", "real", "--dry-run=server"]);
    s.ok(&["get", "configmap", "real"]);
}

#[test]
fn oversized_bodies_unknown_paths_and_verbs() {
    let s = RkubeServer::start();
    let big = s.data_dir.path().join("big.txt");
    std::fs::write(&big, vec![b'x'; 4 * 1024 * 1024]).unwrap();
    let err =
        s.fails(&["create", "configmap", "big", &format!("--from-file=data={}", big.display())]);
    assert!(err.contains("Request entity too large"), "{err}");

    let err = s.fails(&["get", "--raw", "/api/v1/nothing"]);
    assert!(err.contains("the server could not find the requested resource"), "{err}");
    let err = s.fails(&["get", "widgets"]);
    assert!(err.contains("the server doesn't have a resource type \"widgets\""), "{err}");

    // componentstatuses can be read, not created.
    let body = s.data_dir.path().join("cs.json");
    std::fs::write(
        &body,
        r#"{"apiVersion":"v1","kind":"ComponentStatus","metadata":{"name":"x"}}"#,
    )
    .unwrap();
    let err = s.fails(&[
        "create",
        "--raw",
        "/api/v1/componentstatuses",
        "-f",
        &body.display().to_string(),
    ]);
    assert!(
        err.contains("MethodNotAllowed") || err.contains("the server does not allow this method"),
        "{err}"
    );
}

#[test]
fn conflicts_on_stale_resource_versions() {
    let s = RkubeServer::start();
    s.ok(&["create", "configmap", "c", "--from-literal=a=1"]);
    let cm = s.ok(&["get", "configmap", "c", "-o", "json"]);
    // Someone else writes first.
    s.ok(&["label", "configmap", "c", "x=y"]);
    let err = s.fails_stdin(&["replace", "-f", "-"], &cm);
    assert!(
        err.contains("Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again"),
        "{err}"
    );
}

#[test]
fn anonymous_requests_are_forbidden_and_metrics_are_served() {
    let s = RkubeServer::start();
    // No client certificate and no token: the anonymous user.
    let out = std::process::Command::new("curl")
        .args(["-sk", &format!("https://127.0.0.1:{}/api/v1/namespaces/default/pods", s.port)])
        .output()
        .expect("curl");
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a Status");
    assert_eq!(status["code"], 403);
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "pods is forbidden: User \"system:anonymous\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    s.ok(&["get", "configmaps"]);
    let metrics = s.ok(&["get", "--raw", "/metrics"]);
    assert!(metrics.contains("apiserver_request_total{verb=\"LIST\",group=\"\",version=\"v1\",resource=\"configmaps\""), "{metrics}");
    assert!(metrics.contains("apiserver_storage_objects{resource=\"namespaces\"} 4"), "{metrics}");
}

#[test]
fn strict_validation_rejects_duplicate_fields() {
    let s = RkubeServer::start();
    // kubectl re-encodes manifests (dropping duplicates), so the body goes as it is.
    let body = s.data_dir.path().join("dup.json");
    std::fs::write(&body, r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","name":"dup"},"data":{"a":"1"}}"#).unwrap();
    let err = s.fails(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
        "-f",
        &body.display().to_string(),
    ]);
    assert!(
        err.contains(r#"strict decoding error: duplicate field \"name\""#)
            || err.contains(r#"strict decoding error: duplicate field "name""#),
        "{err}"
    );
}

/// A raw HTTPS GET with the admin certificate, returning the body whatever the status.
fn curl(s: &RkubeServer, path: &str) -> serde_json::Value {
    let answer = s.curl(&[], path);
    serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", answer.body))
}

#[test]
fn a_compacted_continue_token_gets_an_inconsistent_continuation() {
    let s = RkubeServer::start_with(&["--etcd-compaction-interval", "1s"]);
    for i in 0..6 {
        s.ok(&["create", "configmap", &format!("c{i}")]);
    }
    let first = curl(&s, "/api/v1/namespaces/default/configmaps?limit=2");
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    // Writes go on; two compactions later the first page's revision is gone.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let expired = loop {
        s.ok(&[
            "annotate",
            "configmap",
            "c5",
            "--overwrite",
            &format!("t={:?}", std::time::Instant::now()),
        ]);
        let page =
            curl(&s, &format!("/api/v1/namespaces/default/configmaps?limit=2&continue={token}"));
        if page["kind"] == "Status" {
            break page;
        }
        assert!(std::time::Instant::now() < deadline, "the continue token never expired");
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert_eq!(expired["code"], 410);
    assert_eq!(expired["reason"], "Expired");
    // The Status carries a token that lists the rest at the latest revision.
    let next = expired["metadata"]["continue"].as_str().expect("an inconsistent continue token");
    let rest = curl(&s, &format!("/api/v1/namespaces/default/configmaps?limit=10&continue={next}"));
    let names: Vec<&str> = rest["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        // The root CA publisher's ConfigMap is in every namespace, as upstream.
        .filter(|n| *n != "kube-root-ca.crt")
        .collect();
    assert_eq!(names, vec!["c2", "c3", "c4", "c5"]);
}

#[test]
fn media_types_we_cannot_speak_are_refused() {
    let s = RkubeServer::start();
    let url = "/api/v1/namespaces/default/configmaps";
    let call_at = |extra: &[&str], path: &str| -> serde_json::Value {
        let answer = s.curl(extra, path);
        serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("{e}: {}", answer.body))
    };
    let call = |extra: &[&str]| call_at(extra, url);
    let status = call(&["-H", "Accept: text/html"]);
    assert_eq!(
        (status["code"].as_i64(), status["reason"].as_str()),
        (Some(406), Some("NotAcceptable"))
    );
    let status = call(&["-X", "POST", "-H", "Content-Type: text/plain", "--data", "hello"]);
    assert_eq!(
        (status["code"].as_i64(), status["reason"].as_str()),
        (Some(415), Some("UnsupportedMediaType"))
    );
    let status =
        call(&["-X", "POST", "-H", "Content-Type: application/json", "--data", "{not json"]);
    assert_eq!(
        (status["code"].as_i64(), status["reason"].as_str()),
        (Some(400), Some("BadRequest"))
    );
    let status = call_at(
        &[
            "-X",
            "PUT",
            "-H",
            "Content-Type: application/json",
            "--data",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}"#,
        ],
        &format!("{url}/this"),
    );
    assert_eq!(status["code"], 400);
    assert_eq!(
        status["message"],
        "the name of the object (other) does not match the name on the URL (this)"
    );
}

#[test]
fn immutable_fields_stay() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\nimmutable: true\ndata:\n  a: \"1\"\n");
    let err =
        s.fails(&["patch", "configmap", "frozen", "--type=merge", "-p", r#"{"data":{"a":"2"}}"#]);
    assert!(err.contains("data: Forbidden: field is immutable when `immutable` is set"), "{err}");
    s.ok(&["create", "deployment", "web", "--image=busybox:1.36"]);
    let err = s.fails(&["patch", "deployment", "web", "--type=merge", "-p", r#"{"spec":{"selector":{"matchLabels":{"app":"other"}},"template":{"metadata":{"labels":{"app":"other"}}}}}"#]);
    assert!(
        err.contains("spec.selector: Invalid value") && err.contains("field is immutable"),
        "{err}"
    );
    s.ok(&["create", "secret", "generic", "s", "--from-literal=a=b"]);
    let err =
        s.fails(&["patch", "secret", "s", "--type=merge", "-p", r#"{"type":"kubernetes.io/tls"}"#]);
    assert!(
        err.contains("type: Invalid value: \"kubernetes.io/tls\": field is immutable"),
        "{err}"
    );
}

#[test]
fn watch_list_initial_events_bookmarks_and_gone() {
    let mut s = RkubeServer::start();
    s.ok(&["create", "configmap", "one"]);
    s.ok(&["create", "configmap", "two"]);
    // Watch-list: the current objects, then a bookmark marking the end of the initial events.
    let out = s.ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1",
    ]);
    let events: Vec<serde_json::Value> =
        out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "ADDED")
        .map(|e| e["object"]["metadata"]["name"].as_str().unwrap())
        // The root CA publisher's ConfigMap is in every namespace, as upstream.
        .filter(|n| *n != "kube-root-ca.crt")
        .collect();
    assert_eq!(names, vec!["one", "two"]);
    let bookmark = events.iter().find(|e| e["type"] == "BOOKMARK").expect("a bookmark");
    assert_eq!(bookmark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    // An exact-revision list shows the state at that revision.
    let rv = events.last().unwrap()["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    s.ok(&["create", "configmap", "three"]);
    let exact: serde_json::Value = serde_json::from_str(&s.ok(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/default/configmaps?resourceVersion={rv}&resourceVersionMatch=Exact&limit=10"),
    ]))
    .unwrap();
    let names: Vec<&str> = exact["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .filter(|n| *n != "kube-root-ca.crt")
        .collect();
    assert_eq!(names, ["one", "two"]);
    // After a restart the watch cache starts at the current revision: older ones are gone.
    s.restart();
    let out = s.ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=1&timeoutSeconds=1",
    ]);
    let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "ERROR");
    assert_eq!(first["object"]["code"], 410);
    assert_eq!(first["object"]["reason"], "Expired");
}

#[test]
fn status_writes_change_status_and_metadata_but_never_the_spec() {
    // As upstream's status strategies: the client's annotations (and labels, but a
    // Deployment's) come through `/status`; the spec and the generation do not change.
    let s = RkubeServer::start_with(&["--controllers", "*,-deployment-controller"]);
    s.ok(&["create", "deployment", "st", "--image=busybox:1.36", "--replicas=0"]);
    s.ok(&["create", "configmap", "cm"]);
    let patch = r#"{"metadata":{"annotations":{"note":"from-status"},"labels":{"extra":"yes"}},"spec":{"replicas":5},"status":{"observedGeneration":1,"replicas":0}}"#;
    s.ok(&["patch", "deployment", "st", "--subresource=status", "--type=merge", "-p", patch]);
    let got = s.ok(&["get", "deployment", "st", "-o", "jsonpath={.metadata.annotations.note} {.metadata.labels.extra}|{.spec.replicas} {.metadata.generation} {.status.observedGeneration}"]);
    assert_eq!(got, "from-status |0 1 1");
    // A ReplicationController's status write keeps its labels too (only Deployments reset
    // them), and removing the last annotation leaves none rather than `{}`.
    let rc = r#"{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"rc","annotations":{"only":"one"}},"spec":{"replicas":0,"selector":{"app":"rc"},"template":{"metadata":{"labels":{"app":"rc"}},"spec":{"containers":[{"name":"c","image":"busybox:1.36"}]}}}}"#;
    s.ok_stdin(&["create", "-f", "-"], rc);
    let patch = r#"{"metadata":{"annotations":{"only":null},"labels":{"extra":"yes"}}}"#;
    s.ok(&["patch", "rc", "rc", "--subresource=status", "--type=merge", "-p", patch]);
    let got = s.ok(&[
        "get",
        "rc",
        "rc",
        "-o",
        "jsonpath={.metadata.labels.extra} {.metadata.annotations}",
    ]);
    assert_eq!(got, "yes ");
}
