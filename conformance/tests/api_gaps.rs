//! API details where rkube answered unlike kube-apiserver (issue 15): Events served by both
//! their groups from one storage, ComponentStatus, and the validation of what a request names
//! (the body's apiVersion, a path's namespace, resourceVersions ahead of the store, object
//! sizes, a certificate request's requester). Each test drives the real binary with stock
//! kubectl, kube-rs, or raw HTTPS with the admin certificate where only the wire shows it.

use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, ObjectReference};
use k8s_openapi::api::events::v1::Event as EventsV1Event;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::{watcher, WatchStreamExt};
use rkube_conformance::cluster::RkubeServer;
use serde_json::{json, Value};

/// A raw HTTPS request with the admin certificate (`curl`): the status code and the body.
fn curl(s: &RkubeServer, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let answer = match body {
        Some(body) => s.curl_body(&["-X", method], path, body.as_bytes()),
        None => s.curl(&["-X", method], path),
    };
    (answer.code, answer.body)
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

// --- Events ---------------------------------------------------------------------------------

/// An event written through either API is one object: listed, read and watched through both,
/// with upstream's field names in each, field selectors in each API's own names, and kube-rs's
/// Recorder (events.k8s.io/v1, a create then a merge patch of its series) seen by kubectl's
/// core-API `get events` and by `kubectl events`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_one_resource_in_two_groups() {
    let s = tokio::task::spawn_blocking(RkubeServer::start).await.unwrap();
    let client = s.kube_client().await.unwrap();
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    let v1: Api<EventsV1Event> = Api::namespaced(client.clone(), "default");

    // Watches of both groups, started before anything is written.
    let mut core_watch =
        watcher(core.clone(), watcher::Config::default()).applied_objects().boxed();
    let mut v1_watch = watcher(v1.clone(), watcher::Config::default()).applied_objects().boxed();

    // A core event, as the kubelet and client-go's legacy recorder write them.
    let core_event: CoreEvent = serde_json::from_value(json!({
        "metadata": {"name": "web.core"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "apiVersion": "v1"},
        "reason": "Started", "message": "Started container c", "type": "Normal",
        "source": {"component": "kubelet", "host": "n1"},
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:05Z",
        "count": 3, "reportingComponent": "kubelet", "reportingInstance": "n1"
    }))
    .unwrap();
    core.create(&PostParams::default(), &core_event).await.unwrap();

    // kube-rs's Recorder: events.k8s.io/v1, about a ConfigMap, published twice (a series).
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "settings"}, "data": {"a": "b"}}))
            .unwrap();
    let cm = cms.create(&PostParams::default(), &cm).await.unwrap();
    let reference = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        name: cm.metadata.name.clone(),
        namespace: Some("default".into()),
        uid: cm.metadata.uid.clone(),
        ..Default::default()
    };
    let reporter = Reporter { controller: "example.com/settings-ctl".into(), instance: None };
    let recorder = Recorder::new(client.clone(), reporter);
    let published = Event {
        type_: EventType::Warning,
        reason: "Misconfigured".into(),
        note: Some("key a is deprecated".into()),
        action: "Validate".into(),
        secondary: None,
    };
    recorder.publish(&published, &reference).await.unwrap();
    recorder.publish(&published, &reference).await.unwrap();

    // The core event through events.k8s.io/v1, in that API's names.
    let as_v1 = v1.get("web.core").await.unwrap();
    assert_eq!(as_v1.note.as_deref(), Some("Started container c"));
    assert_eq!(as_v1.regarding.as_ref().and_then(|r| r.name.as_deref()), Some("web"));
    assert_eq!(as_v1.deprecated_count, Some(3));
    assert_eq!(as_v1.deprecated_source.as_ref().and_then(|s| s.host.as_deref()), Some("n1"));
    assert_eq!(as_v1.reporting_controller.as_deref(), Some("kubelet"));
    // The Recorder's event through the core API, its series counted.
    let recorded =
        core.list(&ListParams::default().fields("involvedObject.kind=ConfigMap")).await.unwrap();
    assert_eq!(recorded.items.len(), 1, "{:?}", recorded.items);
    let recorded = &recorded.items[0];
    assert_eq!(recorded.message.as_deref(), Some("key a is deprecated"));
    assert_eq!(recorded.reporting_component.as_deref(), Some("example.com/settings-ctl"));
    assert_eq!(recorded.series.as_ref().and_then(|s| s.count), Some(2));
    assert_eq!(recorded.action.as_deref(), Some("Validate"));
    // events.k8s.io field selectors name the fields their way.
    let by_regarding = v1
        .list(&ListParams::default().fields("regarding.kind=Pod,reportingController=kubelet"))
        .await
        .unwrap();
    let names: Vec<_> = by_regarding.items.iter().filter_map(|e| e.metadata.name.clone()).collect();
    assert_eq!(names, ["web.core"]);
    let err = v1.list(&ListParams::default().fields("involvedObject.kind=Pod")).await.unwrap_err();
    assert!(matches!(&err, kube::Error::Api(s) if s.code == 400), "{err}");

    // Both watches saw both events.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut core_seen = Vec::new();
    while core_seen.len() < 2 {
        let next = tokio::time::timeout_at(deadline, core_watch.try_next()).await;
        let event = next.expect("core watch stalled").unwrap().expect("stream ended");
        let name = event.metadata.name.unwrap_or_default();
        if !core_seen.contains(&name) {
            core_seen.push(name);
        }
    }
    let mut v1_seen = Vec::new();
    while v1_seen.len() < 2 {
        let next = tokio::time::timeout_at(deadline, v1_watch.try_next()).await;
        let event = next.expect("events.k8s.io watch stalled").unwrap().expect("stream ended");
        assert!(event.regarding.is_some(), "an events.k8s.io event in that API's shape");
        let name = event.metadata.name.unwrap_or_default();
        if !v1_seen.contains(&name) {
            v1_seen.push(name);
        }
    }
    core_seen.sort();
    v1_seen.sort();
    assert_eq!(core_seen, v1_seen);

    // kubectl: the core API's table and `kubectl events` show both.
    let s = std::sync::Arc::new(s);
    let s2 = s.clone();
    let (table, events) = tokio::task::spawn_blocking(move || {
        (s2.ok(&["get", "events", "-n", "default"]), s2.ok(&["events", "-n", "default"]))
    })
    .await
    .unwrap();
    for out in [&table, &events] {
        assert!(out.contains("Started container c"), "{out}");
        assert!(out.contains("key a is deprecated"), "{out}");
    }
    assert!(table.contains("configmap/settings"), "{table}");
    assert!(events.contains("ConfigMap/settings"), "{events}");
}

// --- Validation of what a request names ---------------------------------------------------

/// The body's apiVersion and kind are checked as upstream's decoding checks them.
#[test]
fn a_body_of_another_version_or_kind_is_a_400() {
    let s = RkubeServer::start();
    let cms = "/api/v1/namespaces/default/configmaps";
    let cases = [
        (
            cms,
            r#"{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"a"}}"#,
            r#"ConfigMap in version "v2" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "v2" in scheme "pkg/api/legacyscheme/scheme.go:30""#,
        ),
        (
            "/api/v1/namespaces/default/events",
            r#"{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e"}}"#,
            "the API version in the data (events.k8s.io/v1) does not match the expected API version (v1)",
        ),
        (
            cms,
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}"#,
            r#"Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion"#,
        ),
    ];
    for (path, sent, message) in cases {
        let (code, body) = curl(&s, "POST", path, Some(sent));
        assert_eq!(code, 400, "{body}");
        assert_eq!(json_of(&body)["message"], message);
    }
    // Nothing was created.
    assert_eq!(curl(&s, "GET", &format!("{cms}/a"), None).0, 404);
}

/// ConfigMaps and Secrets hold at most 1 MiB of data (kubectl shows upstream's 422).
#[test]
fn configmaps_and_secrets_over_one_mebibyte_are_invalid() {
    let s = RkubeServer::start();
    let dir = s.data_dir.path().join("big");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("value");
    std::fs::write(&file, "x".repeat(1024 * 1024 + 1)).unwrap();
    let from = format!("--from-file=v={}", file.display());
    let err = s.fails(&["create", "configmap", "big", &from]);
    assert!(
        err.contains(
            r#"ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes"#
        ),
        "{err}"
    );
    let err = s.fails(&["create", "secret", "generic", "big", &from]);
    assert!(
        err.contains(
            r#"Secret "big" is invalid: data: Too long: may not be more than 1048576 bytes"#
        ),
        "{err}"
    );
    std::fs::write(&file, "x".repeat(1024 * 1024)).unwrap();
    s.ok(&["create", "configmap", "big", &from]);
}

/// A watch or read from a resourceVersion ahead of the store is answered within seconds
/// with upstream's Timeout (ResourceVersionTooLarge), not left hanging.
#[test]
fn resource_versions_ahead_of_the_store_are_too_large() {
    let s = RkubeServer::start();
    let started = std::time::Instant::now();
    let (code, body) = curl(
        &s,
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=999999&timeoutSeconds=60",
        None,
    );
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    assert_eq!(code, 200, "{body}");
    let event = json_of(body.lines().next().unwrap_or(""));
    assert_eq!(event["type"], "ERROR", "{body}");
    let status = &event["object"];
    assert_eq!((status["code"].as_i64(), status["reason"].as_str()), (Some(504), Some("Timeout")));
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .starts_with("Timeout: Too large resource version: 999999, current: "),
        "{status}"
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}])
    );
    assert_eq!(status["details"]["retryAfterSeconds"], 1);
    for path in [
        "/api/v1/namespaces/default/configmaps?resourceVersion=999999",
        "/api/v1/namespaces/default/configmaps/kube-root-ca.crt?resourceVersion=999999",
    ] {
        let (code, body) = curl(&s, "GET", path, None);
        assert_eq!(code, 504, "{path}: {body}");
        assert_eq!(json_of(&body)["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
    }
}

/// A namespace or name in the path that cannot be a store key gets upstream's answer, not
/// a list of nothing; a valid namespace that does not exist lists nothing, as upstream.
#[test]
fn path_names_that_are_not_path_segments() {
    let s = RkubeServer::start();
    // curl would clean `..` out of the path: send it as written.
    let raw = |path: &str| {
        let answer = s.curl(&["--path-as-is"], path);
        (answer.code, json_of(&answer.body))
    };
    let (code, status) = raw("/api/v1/namespaces/../configmaps");
    assert_eq!(code, 500, "{status}");
    assert_eq!(status["message"], r#"invalid key: "/configmaps/..""#);
    assert!(status.get("reason").is_none(), "{status}");
    let (code, status) = raw("/api/v1/namespaces/default/configmaps/..");
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["message"], r#"Name parameter invalid: "..": may not be '..'"#);
    let (code, list) = raw("/api/v1/namespaces/Foo/configmaps");
    assert_eq!(code, 200);
    assert_eq!(list["items"], json!([]));
    let err = s.fails(&["create", "configmap", "x", "-n", "Foo"]);
    assert!(err.contains(r#"namespaces "Foo" not found"#), "{err}");
}

/// A certificate request records who asked for it, whatever its body claimed.
#[test]
fn a_csr_records_its_requester() {
    let s = RkubeServer::start();
    let dir = s.data_dir.path();
    let key = dir.join("csr.key");
    let out = rkube_conformance::cluster::run_command(
        std::process::Command::new("openssl")
            .args(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"])
            .args(["-nodes", "-subj", "/CN=someone", "-keyout"])
            .arg(&key),
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let encoded = rkube_conformance::cluster::run_command(
        std::process::Command::new("openssl").args(["base64", "-A"]),
        Some(&out.stdout),
    );
    let csr = json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "forged"},
        "spec": {
            "request": rkube_conformance::cluster::stdout_of(&encoded).trim(),
            "signerName": "example.com/signer",
            "usages": ["client auth"],
            "username": "root", "uid": "0", "groups": ["system:masters", "forged"],
            "extra": {"scopes": ["everything"]}
        }
    });
    s.ok_stdin(&["create", "-f", "-"], &csr.to_string());
    let spec = json_of(&s.ok(&["get", "csr", "forged", "-o", "jsonpath={.spec}"]));
    let whoami = json_of(&s.ok(&["auth", "whoami", "-o", "json"]));
    let me = &whoami["status"]["userInfo"];
    assert_eq!(spec["username"], me["username"], "{spec}");
    assert_eq!(spec["groups"], me["groups"], "{spec}");
    assert!(spec.get("uid").is_none() && spec.get("extra").is_none(), "{spec}");
    // A create by server-side apply records the requester too.
    let mut applied = csr.clone();
    applied["metadata"]["name"] = json!("applied");
    s.ok_stdin(&["apply", "--server-side", "-f", "-"], &applied.to_string());
    let spec = json_of(&s.ok(&["get", "csr", "applied", "-o", "jsonpath={.spec}"]));
    assert_eq!(spec["username"], me["username"], "{spec}");
    assert_eq!(spec["groups"], me["groups"], "{spec}");
    assert!(spec.get("uid").is_none() && spec.get("extra").is_none(), "{spec}");
}
