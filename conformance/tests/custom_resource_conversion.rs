//! Conversion webhooks of CustomResourceDefinitions (`spec.conversion.strategy: Webhook`)
//! against a webhook written here (HTTPS with a CA the test makes) that converts Widgets
//! between `example.com/v1` (`spec.size`, an integer; the storage version) and
//! `example.com/v2` (`spec.length`, a string). Reached by `url` on loopback and by `service`
//! through a selector-less Service whose Endpoints name a local address of this machine.
//! kubectl reads, lists, watches and writes in both versions; what is stored is v1; a webhook
//! that fails, answers wrongly or is down gives upstream's errors; the definition's
//! conversion field is validated with upstream's messages.

use std::io::Read;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rkube_conformance::cluster::{stderr_of, stdout_of, RkubeServer};
use rkube_conformance::node::assert_route_is_local;
use rkube_conformance::webhook::{local_non_loopback_ipv4, Answer, Handler, TestCa, WebhookServer};
use serde_json::{json, Value};

/// How the test's webhook answers.
const CONVERT: usize = 0;
const FAIL: usize = 1;
const WRONG_UID: usize = 2;
const RENAME: usize = 3;
const SLOW: usize = 4;
/// How long the webhook takes in mode [`SLOW`].
const SLOW_DELAY: Duration = Duration::from_secs(3);

/// A Widget in `desired`: `spec.size` (v1, integer) and `spec.length` (v2, string) are one
/// field in two shapes.
fn convert_widget(obj: &Value, desired: &str) -> Value {
    let mut out = obj.clone();
    out["apiVersion"] = json!(desired);
    let spec = out["spec"].as_object_mut();
    if let Some(spec) = spec {
        match desired {
            "example.com/v2" => {
                if let Some(size) = spec.remove("size") {
                    spec.insert("length".into(), json!(size.to_string()));
                }
            }
            _ => {
                if let Some(length) = spec.remove("length") {
                    let size: i64 = length.as_str().and_then(|l| l.parse().ok()).unwrap_or(0);
                    spec.insert("size".into(), json!(size));
                }
            }
        }
    }
    out
}

/// The test's conversion webhook, answering as `mode` says.
fn converter(mode: Arc<AtomicUsize>) -> Handler {
    Arc::new(move |_path, request| {
        let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
        let objects = request["objects"].as_array().cloned().unwrap_or_default();
        let mut converted: Vec<Value> =
            objects.iter().map(|o| convert_widget(o, desired)).collect();
        let mut response = json!({"result": {"status": "Success"}});
        match mode.load(Ordering::SeqCst) {
            FAIL => {
                response["result"] =
                    json!({"status": "Failure", "message": "widgets are not convertible today"})
            }
            WRONG_UID => response["uid"] = json!("not-the-request-uid"),
            RENAME => {
                for obj in &mut converted {
                    obj["metadata"]["name"] = json!("renamed");
                }
            }
            _ => {}
        }
        response["convertedObjects"] = json!(converted);
        let slow = mode.load(Ordering::SeqCst) == SLOW;
        Answer { delay: if slow { SLOW_DELAY } else { Duration::ZERO }, response }
    })
}

/// The definition, converted by the webhook at `client_config`, which takes reviews in
/// `review_versions`.
fn definition(client_config: Value, review_versions: &[&str]) -> String {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "scope": "Namespaced",
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": client_config, "conversionReviewVersions": review_versions}},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": {"type": "object", "properties": {
                        "size": {"type": "integer"}}}}}}},
                {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": {"type": "object", "properties": {
                        "length": {"type": "string"}}}}}}},
            ],
        },
    })
    .to_string()
}

fn define(s: &RkubeServer, client_config: Value, review_versions: &[&str]) {
    define_as(s, &definition(client_config, review_versions));
}

/// Applies the definition `crd` and waits until both versions are served.
fn define_as(s: &RkubeServer, crd: &str) {
    s.ok_stdin(&["apply", "-f", "-"], crd);
    s.ok(&["wait", "--for=condition=Established", "--timeout=20s", "crd/widgets.example.com"]);
    s.wait_until("both versions in discovery", Duration::from_secs(20), || {
        let out = s.kubectl(&["get", "--raw", "/apis/example.com/v2"]);
        (out.status.success(), stderr_of(&out))
    });
}

/// The reviews the webhook got since the `from`th that convert `name` to `desired`
/// (controllers may list the resource meanwhile: assertions look for the test's own).
fn reviews_of(webhook: &WebhookServer, from: usize, name: &str, desired: &str) -> Vec<Value> {
    let reviews = webhook.reviews_to("/convert");
    reviews[from.min(reviews.len())..]
        .iter()
        .filter(|r| r["request"]["desiredAPIVersion"] == desired)
        .filter(|r| {
            let objects = r["request"]["objects"].as_array().into_iter().flatten();
            objects.into_iter().any(|o| o["metadata"]["name"] == name)
        })
        .cloned()
        .collect()
}

fn json_of(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

/// `kubectl get widgets.<version>.example.com <name> -o json`.
fn get(s: &RkubeServer, version: &str, name: &str) -> Value {
    json_of(&s.ok(&["get", &format!("widgets.{version}.example.com"), name, "-o", "json"]))
}

/// The stderr of a kubectl command that must fail.
fn fails(s: &RkubeServer, args: &[&str]) -> String {
    let out = s.kubectl(args);
    assert!(!out.status.success(), "kubectl {args:?} succeeded:\n{}", stdout_of(&out));
    stderr_of(&out)
}

/// A `kubectl get widgets.<version>.example.com -w -o json` whose output arrives on a channel.
struct Watch {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    seen: String,
}

impl Watch {
    fn start(s: &RkubeServer, version: &str) -> Watch {
        Watch::start_with(s, version, &[])
    }

    /// A watch with more arguments (selectors).
    fn start_with(s: &RkubeServer, version: &str, args: &[&str]) -> Watch {
        let resource = format!("widgets.{version}.example.com");
        let mut child = s
            .kubectl_command(&s.kubectl)
            .args(["get", &resource, "-w", "--output-watch-events", "-o", "json"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        let (tx, lines) = std::sync::mpsc::channel();
        for mut pipe in [
            Box::new(child.stdout.take().expect("piped")) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().expect("piped")),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 || tx.send(String::from_utf8_lossy(&buf[..n]).into_owned()).is_err() {
                        break;
                    }
                }
            });
        }
        Watch { child, lines, seen: String::new() }
    }

    /// Waits (20 s at most) until the output holds `what`.
    fn wait_for(&mut self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.seen.contains(what) {
            assert!(Instant::now() < deadline, "no {what:?} in the watch output:\n{}", self.seen);
            if let Ok(chunk) = self.lines.recv_timeout(Duration::from_millis(100)) {
                self.seen.push_str(&chunk);
            }
        }
    }

    /// Whatever output arrived by now.
    fn drain(&mut self) -> &str {
        while let Ok(chunk) = self.lines.try_recv() {
            self.seen.push_str(&chunk);
        }
        &self.seen
    }

    /// True when kubectl exits (its watch ended) within `timeout`.
    fn ends_within(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                while let Ok(chunk) = self.lines.recv_timeout(Duration::from_millis(200)) {
                    self.seen.push_str(&chunk);
                }
                return true;
            }
            if let Ok(chunk) = self.lines.recv_timeout(Duration::from_millis(100)) {
                self.seen.push_str(&chunk);
            }
        }
        false
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_url_webhook_converts_reads_lists_watches_and_writes() {
    let s = RkubeServer::start();
    let ca = TestCa::new("rkube conversion test CA");
    let mode = Arc::new(AtomicUsize::new(CONVERT));
    let webhook = WebhookServer::start(&ca, &[], converter(mode.clone()));
    define(
        &s,
        json!({"url": webhook.url("/convert"), "caBundle": ca.bundle()}),
        &["v1", "v1beta1"],
    );

    // Created in the storage version: no conversion; read in v2 through the webhook.
    let w1 = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": "w1", "namespace": "default", "labels": {"a": "b"}},
                    "spec": {"size": 3}});
    s.ok_stdin(&["create", "-f", "-"], &w1.to_string());
    assert!(reviews_of(&webhook, 0, "w1", "example.com/v1").is_empty(), "nothing to convert");
    let v2 = get(&s, "v2", "w1");
    assert_eq!(v2["apiVersion"], "example.com/v2");
    assert_eq!(v2["spec"], json!({"length": "3"}));
    assert_eq!(v2["metadata"]["labels"], json!({"a": "b"}));
    let reviews = reviews_of(&webhook, 0, "w1", "example.com/v2");
    let review = reviews.last().expect("the webhook was asked");
    assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1", "the first version it takes");
    assert_eq!(review["kind"], "ConversionReview");
    assert_eq!(review["request"]["desiredAPIVersion"], "example.com/v2");
    assert_eq!(review["request"]["objects"][0]["apiVersion"], "example.com/v1");
    assert!(review["request"]["uid"].as_str().is_some_and(|u| !u.is_empty()));

    // Created in v2: validated and given its managedFields in v2 (as upstream's handler of
    // that version holds it), converted to v1 to be stored; the answer is v2.
    let w2 = json!({"apiVersion": "example.com/v2", "kind": "Widget",
                    "metadata": {"name": "w2", "namespace": "default"}, "spec": {"length": "7"}});
    let created = json_of(
        &s.ok_stdin(&["create", "-f", "-", "-o", "json", "--show-managed-fields"], &w2.to_string()),
    );
    assert_eq!(created["apiVersion"], "example.com/v2");
    assert_eq!(created["spec"], json!({"length": "7"}));
    let managed = &created["metadata"]["managedFields"][0];
    assert_eq!(managed["apiVersion"], "example.com/v2", "{created}");
    assert!(managed["fieldsV1"]["f:spec"].get("f:length").is_some(), "{created}");
    let before = webhook.reviews_to("/convert").len();
    let wrong = json!({"apiVersion": "example.com/v2", "kind": "Widget",
                       "metadata": {"name": "w-wrong", "namespace": "default"},
                       "spec": {"length": 7}});
    let err = s.fails_stdin(&["create", "-f", "-"], &wrong.to_string());
    assert!(
        err.contains(
            r#"spec.length: Invalid value: "integer": spec.length in body must be of type string"#
        ),
        "v2's schema decides: {err}"
    );
    assert!(reviews_of(&webhook, before, "w-wrong", "example.com/v1").is_empty(), "not converted");
    let before = webhook.reviews_to("/convert").len();
    let stored = get(&s, "v1", "w2");
    assert_eq!(stored["spec"], json!({"size": 7}), "stored as v1");
    assert!(reviews_of(&webhook, before, "w2", "example.com/v1").is_empty(), "read as stored");
    // What the storage version's endpoint gives as it is.
    let raw = s.ok(&["get", "--raw", "/apis/example.com/v1/namespaces/default/widgets/w2"]);
    assert_eq!(json_of(&raw)["spec"], json!({"size": 7}));

    // A list in v2 is one review for the whole page.
    let before = webhook.reviews_to("/convert").len();
    let list = json_of(&s.ok(&["get", "widgets.v2.example.com", "-o", "json"]));
    let lengths: Vec<&Value> =
        list["items"].as_array().unwrap().iter().map(|i| &i["spec"]["length"]).collect();
    assert_eq!(lengths, vec![&json!("3"), &json!("7")]);
    let reviews = reviews_of(&webhook, before, "w1", "example.com/v2");
    let sizes: Vec<usize> =
        reviews.iter().map(|r| r["request"]["objects"].as_array().map_or(0, Vec::len)).collect();
    assert!(sizes.contains(&2) && !sizes.contains(&1), "one review for the list: {sizes:?}");
    let table = s.ok(&["get", "widgets.v2.example.com"]);
    assert!(table.contains("w1") && table.contains("w2"), "{table}");

    // A patch in v2 is applied to the v2 object and stored as v1.
    s.ok(&[
        "patch",
        "widgets.v2.example.com",
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"length":"9"}}"#,
    ]);
    assert_eq!(get(&s, "v1", "w1")["spec"], json!({"size": 9}));
    assert_eq!(get(&s, "v1", "w1")["metadata"]["generation"], 2);

    // A watch in v2 sees changes made in v1, converted.
    let mut watch = Watch::start(&s, "v2");
    watch.wait_for(r#""length":"9""#);
    s.ok(&[
        "patch",
        "widgets.v1.example.com",
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":11}}"#,
    ]);
    watch.wait_for(r#""length":"11""#);

    // A slow webhook holds up only the watches that need it: one in the storage version
    // sees the change while the v2 one still waits for its conversion.
    let mut stored_watch = Watch::start(&s, "v1");
    stored_watch.wait_for(r#""size":11"#);
    mode.store(SLOW, Ordering::SeqCst);
    let patched = Instant::now();
    s.ok(&[
        "patch",
        "widgets.v1.example.com",
        "w2",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":8}}"#,
    ]);
    stored_watch.wait_for(r#""size":8"#);
    if patched.elapsed() < SLOW_DELAY {
        assert!(
            !watch.drain().contains(r#""length":"8""#),
            "converted before the webhook answered"
        );
    }
    watch.wait_for(r#""length":"8""#);
    drop(stored_watch);
    mode.store(CONVERT, Ordering::SeqCst);

    // A webhook that says it failed: its message, upstream's way; the watch ends with it.
    mode.store(FAIL, Ordering::SeqCst);
    let err = fails(&s, &["get", "widgets.v2.example.com", "w1"]);
    assert!(
        err.contains("Error from server: conversion webhook for example.com/v1, Kind=Widget failed: widgets are not convertible today"),
        "{err}"
    );
    s.ok(&[
        "patch",
        "widgets.v1.example.com",
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":12}}"#,
    ]);
    assert!(watch.ends_within(Duration::from_secs(20)), "the watch goes on:\n{}", watch.seen);
    assert!(watch.seen.contains("widgets are not convertible today"), "{}", watch.seen);
    // The storage version needs no webhook.
    assert_eq!(get(&s, "v1", "w1")["spec"], json!({"size": 12}));
    let err = fails(&s, &["get", "widgets.v2.example.com"]);
    assert!(err.contains("widgets are not convertible today"), "{err}");
    // A write in v2 cannot be converted to be stored: upstream's 500 from its storage.
    let w3 = json!({"apiVersion": "example.com/v2", "kind": "Widget",
                    "metadata": {"name": "w3", "namespace": "default"}, "spec": {"length": "1"}});
    let err = s.fails_stdin(&["create", "-f", "-"], &w3.to_string());
    assert!(
        err.contains(r#"Error from server: error when creating "STDIN": conversion webhook for example.com/v2, Kind=Widget failed: widgets are not convertible today"#),
        "{err}"
    );
    assert!(
        !stdout_of(&s.kubectl(&["get", "widgets.v1.example.com"])).contains("w3"),
        "nothing stored"
    );

    // Answers that are no conversion are refused as upstream.
    mode.store(WRONG_UID, Ordering::SeqCst);
    let err = fails(&s, &["get", "widgets.v2.example.com", "w1"]);
    assert!(
        err.contains(r#"failed: expected response.uid="#)
            && err.contains(r#"got "not-the-request-uid""#),
        "{err}"
    );
    mode.store(RENAME, Ordering::SeqCst);
    let err = fails(&s, &["get", "widgets.v2.example.com", "w1"]);
    assert!(
        err.contains("conversion webhook for example.com/v1, Kind=Widget returned invalid converted object at index 0: must have the same name: w1 != renamed"),
        "{err}"
    );

    // The storage version moves to v2: what was stored as v1 stays so, and is converted on
    // every read in v2 too (no cached bytes go out as they are).
    mode.store(CONVERT, Ordering::SeqCst);
    let mut crd = json_of(&definition(
        json!({"url": webhook.url("/convert"), "caBundle": ca.bundle()}),
        &["v1", "v1beta1"],
    ));
    crd["spec"]["versions"][0]["storage"] = json!(false);
    crd["spec"]["versions"][1]["storage"] = json!(true);
    s.ok_stdin(&["apply", "-f", "-"], &crd.to_string());
    s.wait_until("v2 is stored", Duration::from_secs(20), || {
        let stored =
            s.ok(&["get", "crd", "widgets.example.com", "-o", "jsonpath={.status.storedVersions}"]);
        (stored.contains("v2"), stored)
    });
    let list = json_of(&s.ok(&["get", "widgets.v2.example.com", "-o", "json"]));
    let specs: Vec<&Value> = list["items"].as_array().unwrap().iter().map(|i| &i["spec"]).collect();
    assert_eq!(specs, vec![&json!({"length": "12"}), &json!({"length": "8"})]);
    assert!(list["items"].as_array().unwrap().iter().all(|i| i["apiVersion"] == "example.com/v2"));
    let before = webhook.reviews_to("/convert").len();
    let w4 = json!({"apiVersion": "example.com/v2", "kind": "Widget",
                    "metadata": {"name": "w4", "namespace": "default"}, "spec": {"length": "2"}});
    s.ok_stdin(&["create", "-f", "-"], &w4.to_string());
    let sent = reviews_of(&webhook, before, "w4", "example.com/v1");
    assert!(sent.is_empty(), "created in the storage version: {sent:?}");
    assert_eq!(get(&s, "v1", "w4")["spec"], json!({"size": 2}));
    // A delete in v1 (held by a finalizer) answers with the object converted to v1; the
    // finalizer's removal in v1 is converted back and ends the delete.
    s.ok(&[
        "patch",
        "widgets.v2.example.com",
        "w4",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
    ]);
    let deleted = s.curl(&["-X", "DELETE"], "/apis/example.com/v1/namespaces/default/widgets/w4");
    assert_eq!(deleted.code, 200, "{}", deleted.body);
    let deleted = json_of(&deleted.body);
    assert_eq!(
        (deleted["apiVersion"].as_str(), deleted["kind"].as_str()),
        (Some("example.com/v1"), Some("Widget"))
    );
    assert_eq!(deleted["spec"], json!({"size": 2}));
    assert!(deleted["metadata"]["deletionTimestamp"].is_string(), "{deleted}");
    s.ok(&[
        "patch",
        "widgets.v1.example.com",
        "w4",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    let gone = s.kubectl(&["get", "widgets.v2.example.com", "w4"]);
    assert!(stderr_of(&gone).contains("NotFound"), "{}", stderr_of(&gone));

    // A webhook that is down: Go's dial error, with upstream's timeout in the URL.
    let port = webhook.addr.port();
    drop(webhook);
    let err = fails(&s, &["get", "widgets.v2.example.com", "w1"]);
    let expected = format!(
        "conversion webhook for example.com/v1, Kind=Widget failed: Post \"https://127.0.0.1:{port}/convert?timeout=30s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
    );
    assert!(err.contains(&expected), "{err}");
    let raw = s.curl(&[], "/apis/example.com/v2/namespaces/default/widgets/w1");
    let status = json_of(&raw.body);
    assert_eq!(raw.code, 500, "{status}");
    assert_eq!((status["code"].as_i64(), status.get("reason")), (Some(500), None), "{status}");
    assert_eq!(get(&s, "v1", "w2")["spec"], json!({"size": 8}));
}

#[test]
fn a_service_webhook_converts_and_the_definition_is_validated() {
    let s = RkubeServer::start();
    let ca = TestCa::new("rkube conversion test CA");
    let ip = local_non_loopback_ipv4().expect("this machine has a non-loopback IPv4 address");
    assert_route_is_local(&ip.to_string());
    let mode = Arc::new(AtomicUsize::new(CONVERT));
    let webhook = WebhookServer::start_on(ip, &ca, &["conv.conversion.svc"], converter(mode));
    s.ok(&["create", "namespace", "conversion"]);
    let port = webhook.addr.port();
    let service = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "conv", "namespace": "conversion"},
         "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}},
        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "conv", "namespace": "conversion"},
         "subsets": [{"addresses": [{"ip": ip.to_string()}], "ports": [{"name": "https", "port": port}]}]},
    ]});
    s.ok_stdin(&["apply", "-f", "-"], &service.to_string());
    define(
        &s,
        json!({"service": {"namespace": "conversion", "name": "conv", "path": "/convert"},
               "caBundle": ca.bundle()}),
        &["v1beta1", "v1"],
    );
    let w = json!({"apiVersion": "example.com/v2", "kind": "Widget",
                   "metadata": {"name": "w", "namespace": "default"}, "spec": {"length": "4"}});
    s.ok_stdin(&["create", "-f", "-"], &w.to_string());
    assert_eq!(get(&s, "v1", "w")["spec"], json!({"size": 4}));
    assert_eq!(get(&s, "v2", "w")["spec"], json!({"length": "4"}));
    let reviews = webhook.reviews_to("/convert");
    assert!(reviews.len() >= 2, "reached through the Service");
    assert!(
        reviews.iter().all(|r| r["apiVersion"] == "apiextensions.k8s.io/v1beta1"),
        "the first version it takes"
    );

    // The conversion field, checked with upstream's messages.
    let mut crd = json_of(&definition(json!({"url": "https://127.0.0.1:1/convert"}), &["v1"]));
    crd["metadata"]["name"] = json!("gadgets.example.com");
    crd["spec"]["names"] = json!({"plural": "gadgets", "kind": "Gadget"});
    let refused = |crd: &Value| s.fails_stdin(&["create", "-f", "-"], &crd.to_string());
    let mut no_webhook = crd.clone();
    no_webhook["spec"]["conversion"] = json!({"strategy": "Webhook"});
    let err = refused(&no_webhook);
    assert!(
        err.contains("spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"),
        "{err}"
    );
    let mut both = crd.clone();
    both["spec"]["conversion"]["webhook"]["clientConfig"]["service"] =
        json!({"namespace": "conversion", "name": "conv"});
    let err = refused(&both);
    assert!(
        err.contains("spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"),
        "{err}"
    );
    let mut unknown_reviews = crd.clone();
    unknown_reviews["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = json!(["v9"]);
    let err = refused(&unknown_reviews);
    assert!(
        err.contains(r#"spec.conversion.conversionReviewVersions: Invalid value: []string{"v9"}: must include at least one of v1, v1beta1"#),
        "{err}"
    );
    let mut none_with_webhook = crd.clone();
    none_with_webhook["spec"]["conversion"]["strategy"] = json!("None");
    let err = refused(&none_with_webhook);
    assert!(
        err.contains("spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook"),
        "{err}"
    );
}

/// Field selectors on a version the webhook converts read that version's objects, as
/// upstream's watch cache per served version holds them converted: v2's selectable field
/// `spec.length` exists only once the stored v1 objects (`spec.size`) are converted.
#[test]
fn selectors_on_a_converted_version_read_the_converted_objects() {
    let s = RkubeServer::start();
    let ca = TestCa::new("rkube conversion test CA");
    let webhook = WebhookServer::start(&ca, &[], converter(Arc::new(AtomicUsize::new(CONVERT))));
    let mut crd = json_of(&definition(
        json!({"url": webhook.url("/convert"), "caBundle": ca.bundle()}),
        &["v1"],
    ));
    crd["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.size"}]);
    crd["spec"]["versions"][1]["selectableFields"] = json!([{"jsonPath": ".spec.length"}]);
    define_as(&s, &crd.to_string());
    for (name, size) in [("w1", 3), ("w2", 5), ("w3", 3)] {
        let w = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": name, "namespace": "default"}, "spec": {"size": size}});
        s.ok_stdin(&["create", "-f", "-"], &w.to_string());
    }
    let names = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["-o", "jsonpath={.items[*].metadata.name}"]);
        s.ok(&all)
    };

    // Whole lists (the watch cache) and pages (the store), in both versions.
    assert_eq!(
        names(&["get", "widgets.v2.example.com", "--field-selector", "spec.length=3"]),
        "w1 w3"
    );
    assert_eq!(
        names(&[
            "get",
            "widgets.v2.example.com",
            "--field-selector",
            "spec.length=3",
            "--chunk-size=1"
        ]),
        "w1 w3"
    );
    assert_eq!(
        names(&["get", "widgets.v2.example.com", "--field-selector", "spec.length!=3"]),
        "w2"
    );
    assert_eq!(
        names(&["get", "widgets.v1.example.com", "--field-selector", "spec.size=3"]),
        "w1 w3"
    );
    let err = fails(&s, &["get", "widgets.v2.example.com", "--field-selector", "spec.size=3"]);
    assert!(err.contains("field label not supported: spec.size"), "{err}");
    // A page counts the objects left only when nothing is selected (upstream's store counts
    // keys, not matches).
    let page = json_of(&s.ok(&[
        "get",
        "--raw",
        "/apis/example.com/v2/namespaces/default/widgets?limit=1",
    ]));
    assert_eq!(page["metadata"]["remainingItemCount"], 2, "{page}");
    let page = json_of(&s.ok(&[
        "get",
        "--raw",
        "/apis/example.com/v2/namespaces/default/widgets?limit=1&fieldSelector=spec.length%3D3",
    ]));
    assert!(page["metadata"].get("remainingItemCount").is_none(), "{page}");
    assert_eq!(page["items"][0]["metadata"]["name"], "w1", "{page}");

    // A watch in v2: the initial state, an object moving into the selection (ADDED) and one
    // moving out of it (DELETED, carrying the object as it was before the change, as
    // upstream's watch cache sends it), each decided on the converted objects.
    let mut watch = Watch::start_with(&s, "v2", &["--field-selector", "spec.length=5"]);
    watch.wait_for(r#""name":"w2""#);
    s.ok(&[
        "patch",
        "widgets.v1.example.com",
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":5}}"#,
    ]);
    watch.wait_for(r#""name":"w1""#);
    s.ok(&[
        "patch",
        "widgets.v1.example.com",
        "w2",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":7}}"#,
    ]);
    watch.wait_for(r#""type":"DELETED""#);
    let seen = watch.drain().to_string();
    assert_eq!(seen.matches(r#""type":"ADDED""#).count(), 2, "{seen}");
    assert_eq!(seen.matches(r#""type":"DELETED""#).count(), 1, "{seen}");
    let deleted = &seen[seen.find(r#""type":"DELETED""#).expect("a DELETED event")..];
    assert!(deleted.contains(r#""name":"w2""#), "{seen}");
    assert!(deleted.contains(r#""length":"5""#), "{seen}");
    assert!(!deleted.contains(r#""length":"7""#), "{seen}");
    assert!(!seen.contains(r#""name":"w3""#), "{seen}");
}
