//! Server-side apply and managed fields against the real `rkube server`: stock kubectl's
//! `apply --server-side` (create, change, remove, conflicts, `--force-conflicts`), the
//! managedFields every write leaves, and kube-rs's `Patch::Apply` on objects and status.

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use rkube_conformance::cluster::RkubeServer;
use serde_json::{json, Value};

fn deployment(replicas: u32, labels: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {labels}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: c
        image: busybox:1.36
        command: ["sleep", "3600"]
"#
    )
}

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

/// The object with its managedFields (kubectl hides them unless asked).
fn get(s: &RkubeServer, what: &[&str]) -> Value {
    let mut args = vec!["get", "-o", "json", "--show-managed-fields"];
    args.extend_from_slice(what);
    json(&s.ok(&args))
}

/// The managedFields entry of `manager` with `operation`.
fn entry<'a>(obj: &'a Value, manager: &str, operation: &str) -> Option<&'a Value> {
    obj["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
}

#[test]
fn kubectl_apply_server_side_creates_changes_and_removes() {
    let s = RkubeServer::start();
    let out =
        s.ok_stdin(&["apply", "--server-side", "-f", "-"], &deployment(2, "{tier: a, extra: z}"));
    assert_eq!(out.trim(), "deployment.apps/web serverside-applied");
    let d = get(&s, &["deployment", "web"]);
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["metadata"]["labels"], json!({"tier": "a", "extra": "z"}));
    // Defaults are filled in, and belong to nobody.
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
    let applied = entry(&d, "kubectl", "Apply").expect("kubectl's Apply entry");
    assert_eq!(applied["apiVersion"], "apps/v1");
    assert_eq!(applied["fieldsType"], "FieldsV1");
    let fields = &applied["fieldsV1"];
    assert_eq!(fields["f:spec"]["f:replicas"], json!({}));
    assert_eq!(fields["f:metadata"]["f:labels"]["f:tier"], json!({}));
    let container = &fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"];
    assert_eq!(container["f:image"], json!({}));
    assert!(fields["f:spec"].get("f:strategy").is_none(), "{fields}");

    // A second apply without label extra removes it; what it still says stays.
    let out = s.ok_stdin(&["apply", "--server-side", "-f", "-"], &deployment(3, "{tier: a}"));
    assert_eq!(out.trim(), "deployment.apps/web serverside-applied");
    let d = get(&s, &["deployment", "web"]);
    assert_eq!(d["metadata"]["labels"], json!({"tier": "a"}));
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["metadata"]["generation"], 2);

    // Another manager changes replicas: applying a different value now conflicts.
    s.ok(&["patch", "deployment", "web", "-p", r#"{"spec":{"replicas":5}}"#]);
    let d = get(&s, &["deployment", "web"]);
    let patcher = entry(&d, "kubectl-patch", "Update").expect("kubectl-patch's Update entry");
    assert_eq!(patcher["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    let applied = entry(&d, "kubectl", "Apply").unwrap();
    assert!(applied["fieldsV1"]["f:spec"].get("f:replicas").is_none(), "{applied}");
    let err = s.fails_stdin(&["apply", "--server-side", "-f", "-"], &deployment(3, "{tier: a}"));
    assert!(
        err.contains("Apply failed with 1 conflict: conflict with \"kubectl-patch\" using apps/v1")
            && err.contains(".spec.replicas")
            && err.contains("--force-conflicts"),
        "{err}"
    );
    assert_eq!(get(&s, &["deployment", "web"])["spec"]["replicas"], 5);
    // The same value is no conflict: both own it.
    s.ok_stdin(&["apply", "--server-side", "-f", "-"], &deployment(5, "{tier: a}"));
    let d = get(&s, &["deployment", "web"]);
    assert!(entry(&d, "kubectl-patch", "Update").is_some());
    assert_eq!(
        entry(&d, "kubectl", "Apply").unwrap()["fieldsV1"]["f:spec"]["f:replicas"],
        json!({})
    );
    // Forced, the applier takes the field over.
    s.ok_stdin(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        &deployment(1, "{tier: a}"),
    );
    let d = get(&s, &["deployment", "web"]);
    assert_eq!(d["spec"]["replicas"], 1);
    assert!(entry(&d, "kubectl-patch", "Update").is_none(), "{}", d["metadata"]["managedFields"]);

    // Dry run changes nothing.
    s.ok_stdin(
        &["apply", "--server-side", "--dry-run=server", "-f", "-"],
        &deployment(4, "{tier: b}"),
    );
    assert_eq!(get(&s, &["deployment", "web"])["spec"]["replicas"], 1);

    // From client-side to server-side apply: kubectl takes over what it applied before.
    let cm = |value: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: {value}\n")
    };
    s.ok_stdin(&["apply", "-f", "-"], &cm("v"));
    s.ok_stdin(&["apply", "--server-side", "-f", "-"], &cm("w"));
    let c = get(&s, &["configmap", "c"]);
    assert_eq!(c["data"]["k"], "w");
    assert_eq!(entry(&c, "kubectl", "Apply").unwrap()["fieldsV1"]["f:data"], json!({"f:k": {}}));
}

#[test]
fn every_write_is_recorded_in_managed_fields() {
    let s = RkubeServer::start();
    s.ok(&["create", "configmap", "c", "--from-literal=a=b"]);
    let c = get(&s, &["configmap", "c"]);
    let created = entry(&c, "kubectl-create", "Update").expect("kubectl-create's entry");
    assert_eq!(created["fieldsV1"], json!({"f:data": {".": {}, "f:a": {}}}));
    assert_eq!(created["apiVersion"], "v1");
    assert!(created["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    s.ok(&["label", "configmap", "c", "team=x"]);
    let c = get(&s, &["configmap", "c"]);
    let labeled = entry(&c, "kubectl-label", "Update").expect("kubectl-label's entry");
    assert_eq!(labeled["fieldsV1"], json!({"f:metadata": {"f:labels": {".": {}, "f:team": {}}}}));
    // kubectl hides managedFields unless asked.
    assert!(json(&s.ok(&["get", "configmap", "c", "-o", "json"]))["metadata"]
        .get("managedFields")
        .is_none());

    // Apply with no field manager, force on a plain patch, a kind that is not the endpoint's.
    let err = s.fails(&[
        "patch",
        "configmap",
        "c",
        "--type=merge",
        "-p",
        "{}",
        "--field-manager",
        &"m".repeat(129),
    ]);
    assert!(err.contains("fieldManager: Too long: may not be more than 128 bytes"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_patch_apply_on_objects_and_status() {
    let server = tokio::task::spawn_blocking(RkubeServer::start).await.unwrap();
    let api: Api<Deployment> = Api::namespaced(server.kube_client().await.unwrap(), "default");
    let config = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "op"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "op"}},
            "template": {"metadata": {"labels": {"app": "op"}},
                         "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}},
        },
    });
    let params = PatchParams::apply("my-operator");
    let created = api.patch("op", &params, &Patch::Apply(&config)).await.unwrap();
    assert_eq!(created.spec.as_ref().unwrap().replicas, Some(1));
    let managers: Vec<_> = created
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|e| (e.manager.clone(), e.operation.clone()))
        .collect();
    assert_eq!(managers, vec![(Some("my-operator".into()), Some("Apply".into()))]);

    // Status through its subresource: only the status changes, owned by the operator.
    let status = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "op"},
        "spec": {"replicas": 9},
        "status": {"observedGeneration": 1, "replicas": 1},
    });
    let patched = api.patch_status("op", &params, &Patch::Apply(&status)).await.unwrap();
    assert_eq!(patched.status.as_ref().unwrap().observed_generation, Some(1));
    assert_eq!(patched.spec.as_ref().unwrap().replicas, Some(1));

    // The errors upstream gives: no field manager (422), force on a merge patch (422), and a
    // conflict (409 with one FieldManagerConflict cause per field). kube-rs refuses the first
    // two itself, so they go as raw requests.
    let client = server.kube_client().await.unwrap();
    let raw = |query: &str, content_type: &str, body: &Value| {
        http::Request::patch(format!("/apis/apps/v1/namespaces/default/deployments/op{query}"))
            .header("Content-Type", content_type)
            .body(serde_json::to_vec(body).unwrap())
            .unwrap()
    };
    for (request, message) in [
        (
            raw("", "application/apply-patch+yaml", &config),
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        ),
        (
            raw("?force=true", "application/merge-patch+json", &json!({})),
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch",
        ),
    ] {
        match client.request::<Deployment>(request).await.unwrap_err() {
            kube::Error::Api(s) => {
                assert_eq!((s.code, s.reason.as_str(), s.message.as_str()), (422, "Invalid", message))
            }
            other => panic!("expected an API error, got {other}"),
        }
    }
    let mut other = config.clone();
    other["spec"]["replicas"] = json!(3);
    let rival = PatchParams::apply("rival");
    match api.patch("op", &rival, &Patch::Apply(&other)).await.unwrap_err() {
        kube::Error::Api(s) => {
            assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"), "{s:?}");
            assert_eq!(
                s.message,
                "Apply failed with 1 conflict: conflict with \"my-operator\": .spec.replicas"
            );
        }
        other => panic!("expected an API error, got {other}"),
    }
    let forced = api.patch("op", &rival.clone().force(), &Patch::Apply(&other)).await.unwrap();
    assert_eq!(forced.spec.unwrap().replicas, Some(3));
}

/// A create's managedFields hold what the client sent (with the API's defaults), not what
/// the strategy and the admission plugins add after it (the service account's volume and
/// mounts, tolerations, priority, the pod's status), as kube-apiserver records them before
/// either runs: `kubectl run` gives upstream's familiar entry.
#[test]
fn a_creates_managed_fields_are_what_the_client_sent() {
    let s = RkubeServer::start();
    s.ok(&["run", "web", "--image=busybox:1.36", "--", "sleep", "3600"]);
    let pod = get(&s, &["pod", "web"]);
    // The plugins did their work ...
    assert!(pod["spec"]["volumes"][0]["name"].as_str().unwrap().starts_with("kube-api-access-"));
    assert_eq!(pod["status"]["phase"], "Pending");
    // ... and none of it is kubectl-run's.
    let run = entry(&pod, "kubectl-run", "Update").expect("kubectl-run's entry");
    assert_eq!(
        run["fieldsV1"],
        json!({
            "f:metadata": {"f:labels": {".": {}, "f:run": {}}},
            "f:spec": {
                "f:containers": {"k:{\"name\":\"web\"}": {
                    ".": {}, "f:args": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                    "f:resources": {}, "f:terminationMessagePath": {},
                    "f:terminationMessagePolicy": {}}},
                "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {},
                "f:schedulerName": {}, "f:securityContext": {},
                "f:terminationGracePeriodSeconds": {}
            }
        }),
        "{:#}",
        pod["metadata"]["managedFields"]
    );
}
