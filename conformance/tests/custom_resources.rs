//! Resources added while the server runs: a CustomResourceDefinition's resource joins the live
//! resource table (watch cache, discovery, OpenAPI) and is driven with stock kubectl, kube-rs
//! and raw HTTPS; deleting the definition deletes its objects, ends its watches and takes it
//! out of discovery again.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rkube_conformance::cluster::{stderr_of, stdout_of, RkubeServer};
use serde_json::Value;

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd], categories: [all]}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        description: A widget of the test.
        properties:
          spec:
            type: object
            description: What the widget should be.
            properties:
              size: {type: integer, description: How big the widget is.}
              color: {type: string}
          status:
            type: object
            properties:
              ready: {type: boolean}
"#;

const WIDGET: &str = r#"
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: 3, color: blue}
"#;

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

/// A `kubectl get widgets -w --output-watch-events` whose output lines arrive on a channel.
struct KubectlWatch {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    seen: String,
}

impl KubectlWatch {
    fn start(s: &RkubeServer, extra: &[&str]) -> KubectlWatch {
        let mut child = s
            .kubectl_command(&s.kubectl)
            .args(["get", "widgets", "-w", "--output-watch-events"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl runs");
        let mut stdout = child.stdout.take().expect("piped");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 || tx.send(String::from_utf8_lossy(&buf[..n]).into_owned()).is_err() {
                    break;
                }
            }
        });
        KubectlWatch { child, lines, seen: String::new() }
    }

    /// Waits (20 s at most) until the output holds `what` `count` times.
    fn wait_for(&mut self, what: &str, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.seen.matches(what).count() < count {
            assert!(Instant::now() < deadline, "no {what:?} in the watch output:\n{}", self.seen);
            if let Ok(chunk) = self.lines.recv_timeout(Duration::from_millis(100)) {
                self.seen.push_str(&chunk);
            }
        }
    }
}

impl KubectlWatch {
    /// True when kubectl exits (its watch ended) within `timeout`.
    fn ends_within(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return true;
            }
            if let Ok(chunk) = self.lines.recv_timeout(Duration::from_millis(100)) {
                self.seen.push_str(&chunk);
            }
        }
        false
    }
}

impl Drop for KubectlWatch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_custom_resource_is_served_to_kubectl_like_a_built_in_one() {
    let s = RkubeServer::start();
    // Not served before its definition.
    let before = s.fails(&["get", "widgets"]);
    assert!(before.contains("the server doesn't have a resource type \"widgets\""), "{before}");
    s.define_crd(CRD, "widgets.example.com");
    let crd = json(&s.ok(&["get", "crd", "widgets.example.com", "-o", "json"]));
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "Widget");
    assert_eq!(crd["status"]["acceptedNames"]["listKind"], "WidgetList");
    assert_eq!(crd["status"]["storedVersions"], serde_json::json!(["v1"]));

    // Discovery, legacy and aggregated (kubectl api-resources reads the latter).
    let resources = s.ok(&["api-resources", "--api-group=example.com"]);
    let line = resources.lines().find(|l| l.starts_with("widgets")).expect(&resources);
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words, ["widgets", "wd", "example.com/v1", "true", "Widget"], "{resources}");
    let list = json(&s.ok(&["get", "--raw", "/apis/example.com/v1"]));
    assert_eq!(list["kind"], "APIResourceList");
    let names: Vec<&str> =
        list["resources"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["widgets", "widgets/status"]);
    let group = json(&s.ok(&["get", "--raw", "/apis/example.com"]));
    assert_eq!(group["preferredVersion"]["groupVersion"], "example.com/v1");
    assert!(s.ok(&["api-versions"]).lines().any(|l| l == "example.com/v1"));

    // Create, get as a table, list, patch, status.
    let mut watch = KubectlWatch::start(&s, &[]);
    s.ok_stdin(&["apply", "-f", "-"], WIDGET);
    watch.wait_for("ADDED", 1);
    let table = s.ok(&["get", "wd"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "AGE"], "{table}");
    assert!(table.lines().nth(1).unwrap().starts_with("w1 "), "{table}");
    let listed = json(&s.ok(&["get", "widgets", "-o", "json"]));
    assert_eq!(listed["kind"], "List");
    assert_eq!(listed["items"][0]["spec"], serde_json::json!({"size": 3, "color": "blue"}));
    assert_eq!(listed["items"][0]["metadata"]["generation"], 1);
    s.ok(&["patch", "widget", "w1", "--type", "merge", "-p", r#"{"spec":{"size":4}}"#]);
    watch.wait_for("MODIFIED", 1);
    let patched = json(&s.ok(&["get", "widget", "w1", "-o", "json"]));
    assert_eq!(
        (patched["spec"]["size"].as_i64(), patched["metadata"]["generation"].as_i64()),
        (Some(4), Some(2))
    );
    // Custom resources take no strategic merge patch (kubectl's default), as upstream.
    let refused = s.fails(&["patch", "widget", "w1", "-p", r#"{"spec":{"size":5}}"#]);
    assert!(
        refused.contains("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"),
        "{refused}"
    );
    // A status subresource: the status is written there only, and leaves the generation.
    s.ok(&[
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"ready":true}}"#,
    ]);
    let with_status = json(&s.ok(&["get", "widget", "w1", "-o", "json"]));
    assert_eq!(with_status["status"]["ready"], true);
    assert_eq!(with_status["metadata"]["generation"], 2);
    s.ok(&["patch", "widget", "w1", "--type", "merge", "-p", r#"{"status":{"ready":false}}"#]);
    assert_eq!(json(&s.ok(&["get", "widget", "w1", "-o", "json"]))["status"]["ready"], true);

    // explain reads the definition's schema from the OpenAPI v3 document.
    let explained = s.ok(&["explain", "widget.spec"]);
    for expected in [
        "KIND:       Widget",
        "What the widget should be.",
        "size\t<integer>",
        "How big the widget is.",
    ] {
        assert!(explained.contains(expected), "{expected:?} not in:\n{explained}");
    }
    let index = json(&s.ok(&["get", "--raw", "/openapi/v3"]));
    assert!(index["paths"].get("apis/example.com/v1").is_some(), "{index}");

    // Delete.
    s.ok(&["delete", "widget", "w1"]);
    watch.wait_for("DELETED", 1);
    assert!(s.ok(&["get", "widgets", "-o", "name"]).trim().is_empty());
}

#[test]
fn deleting_the_definition_deletes_its_objects_and_ends_its_watches() {
    let s = RkubeServer::start();
    s.define_crd(CRD, "widgets.example.com");
    // The definition's group/version has its Local APIService, as upstream's crd-autoregister
    // makes it, put back when deleted by hand.
    let api_service = || {
        let out = s.kubectl(&["get", "apiservice", "v1.example.com", "-o", "json"]);
        let text = stdout_of(&out) + &stderr_of(&out);
        (out.status.success(), text)
    };
    let local = |(found, text): (bool, String)| {
        let ok = found && {
            let a = json(&text);
            a["spec"]["groupPriorityMinimum"] == 1000
                && a["spec"]["versionPriority"] == 100
                && a["spec"].get("service").is_none()
                && a["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"] == "true"
                && a["status"]["conditions"][0]["reason"] == "Local"
        };
        (ok, text)
    };
    s.wait_until("the Local APIService", Duration::from_secs(20), || local(api_service()));
    let listed = s.ok(&["get", "apiservice", "v1.example.com"]);
    let row: Vec<&str> = listed.lines().nth(1).unwrap_or("").split_whitespace().collect();
    assert_eq!(row[..3], ["v1.example.com", "Local", "True"], "{listed}");
    s.ok(&["delete", "apiservice", "v1.example.com"]);
    s.wait_until("the Local APIService back", Duration::from_secs(20), || local(api_service()));
    s.ok_stdin(&["apply", "-f", "-"], WIDGET);
    s.ok(&["create", "namespace", "other"]);
    s.ok_stdin(&["apply", "-n", "other", "-f", "-"], WIDGET);
    assert_eq!(s.ok(&["get", "widgets", "-A", "-o", "name"]).lines().count(), 2);
    // A watch across namespaces sees the objects go, then ends with its resource.
    let mut watch = KubectlWatch::start(&s, &["-A"]);
    watch.wait_for("ADDED", 2);
    s.ok(&["delete", "crd", "widgets.example.com", "--timeout=30s"]);
    watch.wait_for("DELETED", 2);
    s.wait_until("the Local APIService gone", Duration::from_secs(20), || {
        let (found, text) = api_service();
        (!found && text.contains("NotFound"), text)
    });
    let ended = watch.ends_within(Duration::from_secs(20));
    assert!(ended, "the watch outlived its resource:\n{}", watch.seen);
    // Gone from discovery, and a new definition of the same names starts empty.
    assert!(s.fails(&["get", "--raw", "/apis/example.com/v1"]).contains("NotFound"));
    let resources = s.ok(&["api-resources", "--api-group=example.com", "--no-headers"]);
    assert!(resources.trim().is_empty(), "{resources}");
    s.define_crd(CRD, "widgets.example.com");
    assert!(s.ok(&["get", "widgets", "-A", "-o", "name"]).trim().is_empty());
}

#[tokio::test]
async fn kube_rs_drives_a_custom_resource_through_discovery() {
    use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
    use kube::discovery::{Discovery, Scope};
    let s = RkubeServer::start();
    s.define_crd(CRD, "widgets.example.com");
    let client = s.kube_client().await.unwrap();
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let (resource, capabilities) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| r.group == "example.com" && r.kind == "Widget")
        .expect("widgets discovered");
    assert_eq!(
        (resource.plural.as_str(), capabilities.scope.clone()),
        ("widgets", Scope::Namespaced)
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &resource);
    let widget: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1"}, "spec": {"size": 3, "color": "blue"},
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &widget).await.unwrap();
    assert_eq!(created.data["spec"]["size"], 3);
    let patch = serde_json::json!({"spec": {"color": "red"}});
    let patched = api.patch("w1", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(patched.data["spec"]["color"], "red");
    let listed = api.list(&Default::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].metadata.name.as_deref(), Some("w1"));
    api.delete("w1", &Default::default()).await.unwrap();
    assert!(api.list(&Default::default()).await.unwrap().items.is_empty());
}
