//! The workload kinds through every verb upstream's sig-apps conformance tests send, asserted
//! the way those tests assert: the `/status` subresource read, replaced and patched (and the
//! change seen in a watch), `/scale` read and written, `deletecollection` by label, list
//! across namespaces, watches from a resourceVersion; and the controllers' answers to them:
//! ControllerRevisions numbered on, daemon pods following node labels, failed daemon pods
//! replaced, rollbacks that keep untouched pods, proportional scaling of a stuck rollout, a
//! rollover of an adopted ReplicaSet, canary and phased StatefulSet updates, orphans adopted.
//! The API-side tests run on simulated nodes (pods Running and Ready at once, no containers);
//! the serving and readiness ones on a real node (Docker).

use std::time::Duration;

use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::node::SimulatedNodes;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(60);

const APPS: &str = "/apis/apps/v1/namespaces/default";
const CORE: &str = "/api/v1/namespaces/default";

/// A raw request with a JSON body (`None`: no body) that must answer `code`; its body.
fn call(s: &RkubeServer, method: &str, path: &str, body: Option<Value>, code: u16) -> Value {
    let args = ["-X", method];
    let out = match &body {
        Some(body) => {
            let content = if method == "PATCH" {
                if body.get("$strategic").is_some() {
                    "application/strategic-merge-patch+json"
                } else {
                    "application/merge-patch+json"
                }
            } else {
                "application/json"
            };
            let mut body = body.clone();
            if let Some(map) = body.as_object_mut() {
                map.remove("$strategic");
            }
            let header = format!("Content-Type: {content}");
            s.curl_body(&[&args[..], &["-H", &header]].concat(), path, body.to_string().as_bytes())
        }
        None => s.curl(&args, path),
    };
    assert_eq!(out.code, code, "{method} {path}: {}", out.body);
    serde_json::from_str(&out.body).unwrap_or(Value::Null)
}

fn get(s: &RkubeServer, path: &str) -> Value {
    call(s, "GET", path, None, 200)
}

/// A strategic merge patch body for [`call`].
fn strategic(mut patch: Value) -> Value {
    patch["$strategic"] = json!(true);
    patch
}

/// The watch events of the object `path` names since `rv`: the window the server replays,
/// read for one second.
fn events_since(s: &RkubeServer, path: &str, rv: &str) -> Vec<(String, Value)> {
    let (collection, name) = path.rsplit_once('/').expect("a named object's path");
    let query = format!(
        "{collection}?watch=1&resourceVersion={rv}&timeoutSeconds=1&fieldSelector=metadata.name%3D{name}"
    );
    let out = s.curl(&[], &query);
    assert_eq!(out.code, 200, "watch {query}: {}", out.body);
    out.body
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let event: Value = serde_json::from_str(l).expect("a watch event");
            (event["type"].as_str().unwrap_or_default().to_string(), event["object"].clone())
        })
        .collect()
}

/// Waits until a watch of `path` from `rv` shows an event of `kind` whose object passes `check`.
fn wait_for_event(
    s: &RkubeServer,
    path: &str,
    rv: &str,
    kind: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let mut found = Value::Null;
    s.wait_until(what, WAIT, || {
        let events = events_since(s, path, rv);
        match events.iter().find(|(t, o)| t == kind && check(o)) {
            Some((_, o)) => {
                found = o.clone();
                (true, String::new())
            }
            None => (false, format!("{:?}", events.iter().map(|(t, _)| t).collect::<Vec<_>>())),
        }
    });
    found
}

fn rv(object: &Value) -> String {
    object["metadata"]["resourceVersion"].as_str().expect("a resourceVersion").to_string()
}

fn has_condition(object: &Value, kind: &str) -> bool {
    object["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == kind && c["status"] == "True"))
}

/// Upstream's status-subresource test, for any workload at `path`: GET `/status`; PUT
/// `/status` with a `StatusUpdate` condition added, seen in a MODIFIED event; PATCH `/status`
/// with a `StatusPatched` condition, seen in another. The spec is untouched by both.
fn status_subresource_round_trip(s: &RkubeServer, path: &str, kind: &str) {
    let status_path = format!("{path}/status");
    let current = get(s, &status_path);
    assert_eq!(current["kind"], kind, "{current}");
    let spec = current["spec"].clone();
    let mut updated = Value::Null;
    // The controller may write status in between: retry on conflict as RetryOnConflict does.
    for _ in 0..5 {
        let mut object = get(s, &status_path);
        let condition = json!({"type": "StatusUpdate", "status": "True", "reason": "E2E",
            "message": "Set from e2e test"});
        match object["status"]["conditions"].as_array_mut() {
            Some(list) => list.push(condition),
            None => object["status"]["conditions"] = json!([condition]),
        }
        // A spec change sent to /status is dropped.
        object["spec"]["minReadySeconds"] = json!(7);
        let body = object.to_string();
        let out = s.curl_body(&["-X", "PUT"], &status_path, body.as_bytes());
        if out.code == 409 {
            continue;
        }
        assert_eq!(out.code, 200, "PUT {status_path}: {}", out.body);
        updated = serde_json::from_str(&out.body).expect("JSON");
        break;
    }
    assert!(has_condition(&updated, "StatusUpdate"), "{updated}");
    assert_eq!(updated["spec"], spec, "a status update changed the spec");
    let seen = wait_for_event(s, path, &rv(&current), "MODIFIED", "the StatusUpdate event", |o| {
        o["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter().any(|c| {
                c["type"] == "StatusUpdate"
                    && c["reason"] == "E2E"
                    && c["message"] == "Set from e2e test"
            })
        })
    });
    assert_eq!(seen["metadata"]["name"], current["metadata"]["name"]);

    let patch = json!({"status": {"conditions": [{"type": "StatusPatched", "status": "True"}]}});
    let patched = call(s, "PATCH", &status_path, Some(patch), 200);
    assert!(has_condition(&patched, "StatusPatched"), "{patched}");
    wait_for_event(s, path, &rv(&updated), "MODIFIED", "the StatusPatched event", |o| {
        has_condition(o, "StatusPatched")
    });
    let read = get(s, &status_path);
    assert_eq!(read["spec"], spec, "a status patch changed the spec");
}

/// `name node phase ready uid` of the live pods `selector` selects, sorted.
fn pods(s: &RkubeServer, selector: &str) -> Vec<Vec<String>> {
    let list = get(s, &format!("{CORE}/pods?labelSelector={selector}"));
    let mut pods: Vec<Vec<String>> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| {
            let ready = p["status"]["conditions"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
                .map(|c| c["status"].as_str().unwrap_or_default().to_string())
                .unwrap_or_default();
            vec![
                p["metadata"]["name"].as_str().unwrap_or_default().to_string(),
                p["spec"]["nodeName"].as_str().unwrap_or_default().to_string(),
                p["status"]["phase"].as_str().unwrap_or_default().to_string(),
                ready,
                p["metadata"]["uid"].as_str().unwrap_or_default().to_string(),
                p["spec"]["containers"][0]["image"].as_str().unwrap_or_default().to_string(),
            ]
        })
        .collect();
    pods.sort();
    pods
}

/// Waits until the pods `selector` selects are `count`, all Running and Ready.
fn wait_running(s: &RkubeServer, selector: &str, count: usize) -> Vec<Vec<String>> {
    let mut seen = Vec::new();
    s.wait_until(&format!("{count} running pods of {selector}"), WAIT, || {
        seen = pods(s, selector);
        let ok = seen.len() == count && seen.iter().all(|p| p[2] == "Running" && p[3] == "True");
        (ok, format!("{seen:?}"))
    });
    seen
}

/// The names of the objects listed at `path` (a collection, with its query).
fn names(s: &RkubeServer, path: &str) -> Vec<String> {
    let list = get(s, path);
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap_or_default().to_string())
        .collect();
    names.sort();
    names
}

fn daemon_set(name: &str, extra_spec: Value) -> Value {
    let mut ds = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "labels": {"daemonset-name": name}},
        "spec": {
            "selector": {"matchLabels": {"daemonset-name": name}},
            "template": {
                "metadata": {"labels": {"daemonset-name": name}},
                "spec": {"containers": [{"name": "app", "image": "busybox:1.36",
                    "imagePullPolicy": "IfNotPresent"}]}
            }
        }
    });
    if let (Some(spec), Some(extra)) = (ds["spec"].as_object_mut(), extra_spec.as_object()) {
        spec.extend(extra.clone());
    }
    ds
}

/// The ControllerRevisions `selector` selects in the namespace: (name, revision, labels).
fn revisions(s: &RkubeServer, selector: &str) -> Vec<(String, i64, Value)> {
    let list = get(s, &format!("{APPS}/controllerrevisions?labelSelector={selector}"));
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["metadata"]["name"].as_str().unwrap_or_default().to_string(),
                r["revision"].as_i64().unwrap_or_default(),
                r["metadata"]["labels"].clone(),
            )
        })
        .collect()
}

fn wait_revisions(s: &RkubeServer, selector: &str, count: usize) -> Vec<(String, i64, Value)> {
    let mut seen = Vec::new();
    s.wait_until(&format!("{count} ControllerRevisions of {selector}"), WAIT, || {
        seen = revisions(s, selector);
        (seen.len() == count, format!("{seen:?}"))
    });
    seen
}

#[test]
fn daemon_sets_and_controller_revisions_through_every_verb_on_simulated_nodes() {
    let s = RkubeServer::start();
    let nodes = SimulatedNodes::start(&s, 3, &[]);
    nodes.wait_ready(&s, 3, WAIT);
    let ds_path = format!("{APPS}/daemonsets");

    // ControllerRevision, resource lifecycle.
    let ds = call(&s, "POST", &ds_path, Some(daemon_set("cr-ds", json!({}))), 201);
    let selector = "daemonset-name%3Dcr-ds";
    let running = wait_running(&s, selector, 3);
    let on: std::collections::BTreeSet<&str> = running.iter().map(|p| p[1].as_str()).collect();
    assert_eq!(on.len(), 3, "one daemon pod per node: {running:?}");
    let listed = names(&s, &format!("/apis/apps/v1/daemonsets?labelSelector={selector}"));
    assert_eq!(listed, ["cr-ds"]);
    let all = get(&s, &format!("/apis/apps/v1/controllerrevisions?labelSelector={selector}"));
    let items = all["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{all}");
    let initial = items[0].clone();
    let owner = &initial["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].as_str(), owner["uid"].as_str()),
        (Some("DaemonSet"), ds["metadata"]["uid"].as_str())
    );
    assert_eq!(initial["revision"], 1);
    let initial_name = initial["metadata"]["name"].as_str().unwrap().to_string();
    let cr_path = format!("{APPS}/controllerrevisions/{initial_name}");
    let patched = call(
        &s,
        "PATCH",
        &cr_path,
        Some(strategic(json!({"metadata": {"labels": {&initial_name: "patched"}}}))),
        200,
    );
    assert_eq!(patched["metadata"]["labels"][&initial_name], "patched");
    // A hand-made revision of the DaemonSet (same data, revision 2, the DS as controller).
    let mut labels = ds["spec"]["template"]["metadata"]["labels"].clone();
    labels["controller-revision-hash"] = json!("handmade");
    let handmade = json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": "cr-ds-handmade", "labels": labels,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "cr-ds",
                "uid": ds["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}]},
        "data": initial["data"],
        "revision": 2,
    });
    call(&s, "POST", &format!("{APPS}/controllerrevisions"), Some(handmade), 201);
    wait_revisions(&s, selector, 2);
    call(&s, "DELETE", &cr_path, None, 200);
    let left = wait_revisions(&s, selector, 1);
    let current = &left[0].0;
    let current_path = format!("{APPS}/controllerrevisions/{current}");
    let mut object = get(&s, &current_path);
    object["metadata"]["labels"][current] = json!("updated");
    let updated = call(&s, "PUT", &current_path, Some(object), 200);
    assert_eq!(updated["metadata"]["labels"][current], "updated");
    call(
        &s,
        "PATCH",
        &format!("{ds_path}/cr-ds"),
        Some(strategic(
            json!({"spec": {"template": {"spec": {"terminationGracePeriodSeconds": 1}}}}),
        )),
        200,
    );
    wait_revisions(&s, selector, 2);
    let gone = call(
        &s,
        "DELETE",
        &format!("{APPS}/controllerrevisions?labelSelector={current}%3Dupdated"),
        None,
        200,
    );
    assert_eq!(gone["kind"], "ControllerRevisionList", "{gone}");
    let left = wait_revisions(&s, selector, 1);
    assert_eq!(left[0].1, 3, "the new template's revision: {left:?}");

    // DaemonSet, status sub-resource; the controller keeps conditions it does not own.
    status_subresource_round_trip(&s, &format!("{ds_path}/cr-ds"), "DaemonSet");

    // DaemonSet-FailedPodCreation: a failed daemon pod is deleted and made again.
    let pods_now = wait_running(&s, selector, 3);
    let victim = &pods_now[0];
    let status_path = format!("{CORE}/pods/{}/status", victim[0]);
    let mut pod = get(&s, &status_path);
    pod["status"]["phase"] = json!("Failed");
    call(&s, "PUT", &status_path, Some(pod), 200);
    s.wait_until("the failed daemon pod replaced", WAIT, || {
        let now = pods(&s, selector);
        let replaced =
            now.iter().any(|p| p[1] == victim[1] && p[4] != victim[4] && p[2] == "Running")
                && now.iter().all(|p| p[4] != victim[4])
                && now.len() == 3;
        (replaced, format!("{now:?}"))
    });
    let ds_now = get(&s, &format!("{ds_path}/cr-ds"));
    assert!(
        has_condition(&ds_now, "StatusPatched"),
        "the controller dropped a condition: {ds_now}"
    );

    // DaemonSet-NodeSelection: pods follow the node's labels and the DaemonSet's selector.
    let sel = daemon_set(
        "sel-ds",
        json!({"template": {
        "metadata": {"labels": {"daemonset-name": "sel-ds"}},
        "spec": {"nodeSelector": {"color": "blue"}, "containers": [{"name": "app",
            "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent"}]}}}),
    );
    call(&s, "POST", &ds_path, Some(sel), 201);
    let sel_selector = "daemonset-name%3Dsel-ds";
    s.wait_until("sel-ds observed with no pods", WAIT, || {
        let ds = get(&s, &format!("{ds_path}/sel-ds"));
        let ok =
            ds["status"]["observedGeneration"] == 1 && ds["status"]["desiredNumberScheduled"] == 0;
        (ok, ds["status"].to_string())
    });
    assert!(pods(&s, sel_selector).is_empty());
    s.ok(&["label", "node", "sim-0001", "color=blue"]);
    let blue = wait_running(&s, sel_selector, 1);
    assert_eq!(blue[0][1], "sim-0001");
    s.ok(&["label", "node", "sim-0001", "color=green", "--overwrite"]);
    s.wait_until("no pods once the node is green", WAIT, || {
        let now = pods(&s, sel_selector);
        (now.is_empty(), format!("{now:?}"))
    });
    call(
        &s,
        "PATCH",
        &format!("{ds_path}/sel-ds"),
        Some(strategic(
            json!({"spec": {"template": {"spec": {"nodeSelector": {"color": "green"}}},
            "updateStrategy": {"type": "RollingUpdate"}}}),
        )),
        200,
    );
    let green = wait_running(&s, sel_selector, 1);
    assert_eq!(green[0][1], "sim-0001");

    // DaemonSet-Rollback: a rollout stuck on an image that never starts, rolled back, replaces
    // only the stuck pod; the pods still on the old template are never restarted.
    call(&s, "POST", &ds_path, Some(daemon_set("roll-ds", json!({}))), 201);
    let roll_selector = "daemonset-name%3Droll-ds";
    let before = wait_running(&s, roll_selector, 3);
    let stuck_image = json!({"spec": {"template": {"spec": {"containers": [{"name": "app",
        "image": "busybox:not-here", "imagePullPolicy": "Never"}]}}}});
    call(&s, "PATCH", &format!("{ds_path}/roll-ds"), Some(strategic(stuck_image)), 200);
    let stuck = s.wait_until("one pod on the new, failing template", WAIT, || {
        let now = pods(&s, roll_selector);
        let new: Vec<_> = now.iter().filter(|p| p[5] == "busybox:not-here").collect();
        let ok = new.len() == 1 && new[0][3] != "True" && now.len() == 3;
        (ok, format!("{now:?}"))
    });
    let back = json!({"spec": {"template": {"spec": {"containers": [{"name": "app",
        "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent"}]}}}});
    call(&s, "PATCH", &format!("{ds_path}/roll-ds"), Some(strategic(back)), 200);
    let after = s.wait_until("rolled back", WAIT, || {
        let now = pods(&s, roll_selector);
        let ok = now.len() == 3
            && now.iter().all(|p| p[5] == "busybox:1.36" && p[2] == "Running" && p[3] == "True");
        (ok, format!("{now:?}"))
    });
    let kept = before.iter().filter(|p| after.contains(p[4].as_str())).count();
    assert_eq!(kept, 2, "the two pods never updated keep running:\n{before:?}\n{after}\n{stuck}");

    // DaemonSet, list and delete a collection: by label, across namespaces.
    let listed = names(&s, "/apis/apps/v1/daemonsets?labelSelector=daemonset-name");
    assert_eq!(listed, ["cr-ds", "roll-ds", "sel-ds"]);
    let gone = call(&s, "DELETE", &format!("{ds_path}?labelSelector=daemonset-name"), None, 200);
    assert_eq!(gone["kind"], "DaemonSetList", "{gone}");
    assert!(names(&s, "/apis/apps/v1/daemonsets?labelSelector=daemonset-name").is_empty());
    s.wait_until("the daemon pods gone", WAIT, || {
        let now = pods(&s, "daemonset-name");
        (now.is_empty(), format!("{now:?}"))
    });
}
