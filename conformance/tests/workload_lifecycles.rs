//! The workload kinds through every verb upstream's sig-apps conformance tests send, asserted
//! the way those tests assert: the `/status` subresource read, replaced and patched (and the
//! change seen in a watch), `/scale` read and written, `deletecollection` by label, list
//! across namespaces, watches from a resourceVersion; and the controllers' answers to them:
//! ControllerRevisions numbered on, daemon pods following node labels, failed daemon pods
//! replaced, rollbacks that keep untouched pods, proportional scaling of a stuck rollout, a
//! rollover of an adopted ReplicaSet, canary and phased StatefulSet updates, orphans adopted,
//! StatefulSet pods rejected by the kubelet for a host port in use and made again.
//! The API-side tests run on simulated nodes (pods Running and Ready at once, no containers);
//! the serving, readiness and host-port ones on a real node (Docker). Watches are read from
//! a resourceVersion for a second (the server replays its window), so no test holds one open.

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

/// GET, change and PUT the object at `path`, again on a 409 Conflict (a controller wrote
/// in between) as client-go's RetryOnConflict; the PUT's answer.
fn update(s: &RkubeServer, path: &str, change: impl Fn(&mut Value)) -> Value {
    let mut last = String::new();
    for _ in 0..5 {
        let mut object = get(s, path);
        change(&mut object);
        let out = s.curl_body(&["-X", "PUT"], path, object.to_string().as_bytes());
        match out.code {
            200 => return serde_json::from_str(&out.body).expect("JSON"),
            409 => last = out.body,
            code => panic!("PUT {path}: {code} {}", out.body),
        }
    }
    panic!("PUT {path}: still conflicting: {last}")
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
    let updated = update(s, &status_path, |object| {
        let condition = json!({"type": "StatusUpdate", "status": "True", "reason": "E2E",
            "message": "Set from e2e test"});
        match object["status"]["conditions"].as_array_mut() {
            Some(list) => list.push(condition),
            None => object["status"]["conditions"] = json!([condition]),
        }
        // A spec change sent to /status is dropped.
        object["spec"]["minReadySeconds"] = json!(7);
    });
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
    let updated =
        update(&s, &current_path, |o| o["metadata"]["labels"][current] = json!("updated"));
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
    update(&s, &status_path, |pod| pod["status"]["phase"] = json!("Failed"));
    s.wait_until("the failed daemon pod replaced", WAIT, || {
        let now = pods(&s, selector);
        let replaced =
            now.iter().any(|p| p[1] == victim[1] && p[4] != victim[4] && p[2] == "Running")
                && now.iter().all(|p| p[4] != victim[4])
                && now.len() == 3;
        (replaced, format!("{now:?}"))
    });
    // DaemonSet-Creation's second half: a deleted daemon pod is revived on its node.
    let pods_now = wait_running(&s, selector, 3);
    let victim = &pods_now[1];
    call(&s, "DELETE", &format!("{CORE}/pods/{}", victim[0]), None, 200);
    s.wait_until("the deleted daemon pod revived", WAIT, || {
        let now = pods(&s, selector);
        let revived = now.len() == 3
            && now.iter().all(|p| p[4] != victim[4])
            && now.iter().any(|p| p[1] == victim[1] && p[2] == "Running" && p[3] == "True");
        (revived, format!("{now:?}"))
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

/// The resourceVersion of the collection at `path` now: where a watch of what follows starts.
fn collection_rv(s: &RkubeServer, path: &str) -> String {
    let list = get(s, &format!("{path}?limit=1"));
    list["metadata"]["resourceVersion"].as_str().expect("a list resourceVersion").to_string()
}

fn status_i64(object: &Value, field: &str) -> i64 {
    object["status"][field].as_i64().unwrap_or(0)
}

/// A ReplicaSet or ReplicationController of `replicas` busybox pods labelled `labels`.
fn replicated(kind: &str, name: &str, replicas: i64, labels: Value) -> Value {
    let api = if kind == "ReplicaSet" { "apps/v1" } else { "v1" };
    let selector =
        if kind == "ReplicaSet" { json!({"matchLabels": labels}) } else { labels.clone() };
    json!({
        "apiVersion": api, "kind": kind,
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": selector,
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "busybox:1.36",
                    "imagePullPolicy": "IfNotPresent"}]}
            }
        }
    })
}

#[test]
fn replica_sets_and_replication_controllers_through_every_verb_on_simulated_nodes() {
    let s = RkubeServer::start();
    let nodes = SimulatedNodes::start(&s, 2, &[]);
    nodes.wait_ready(&s, 2, WAIT);
    let rs_path = format!("{APPS}/replicasets");
    let rc_path = format!("{CORE}/replicationcontrollers");

    // ReplicaSet, is created, Replaced and Patched.
    let rs = replicated("ReplicaSet", "test-rs", 1, json!({"name": "test-rs"}));
    call(&s, "POST", &rs_path, Some(rs), 201);
    wait_running(&s, "name%3Dtest-rs", 1);
    let path = format!("{rs_path}/test-rs");
    let replaced = update(&s, &path, |o| o["spec"]["replicas"] = json!(2));
    wait_for_event(&s, &path, &rv(&replaced), "MODIFIED", "test-rs ready 2", |o| {
        status_i64(o, "readyReplicas") == 2
    });
    let patch = json!({"metadata": {"labels": {"test-rs": "patched"}}, "spec": {"replicas": 3,
        "template": {"spec": {"terminationGracePeriodSeconds": 1,
            "containers": [{"name": "app", "image": "busybox:1.36-patched"}]}}}});
    let patched = call(&s, "PATCH", &path, Some(strategic(patch)), 200);
    assert_eq!(
        patched["spec"]["template"]["spec"]["containers"][0]["image"],
        "busybox:1.36-patched"
    );
    wait_for_event(&s, &path, &rv(&patched), "MODIFIED", "test-rs patched, ready 3", |o| {
        status_i64(o, "readyReplicas") == 3
            && status_i64(o, "availableReplicas") == 3
            && o["metadata"]["labels"]["test-rs"] == "patched"
            && o["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1.36-patched"
    });

    // ReplicaSet, status sub-resource; then GET and PUT of /scale, the condition surviving
    // the controller's status writes.
    status_subresource_round_trip(&s, &path, "ReplicaSet");
    let scale = get(&s, &format!("{path}/scale"));
    assert_eq!(
        (scale["kind"].as_str(), scale["apiVersion"].as_str()),
        (Some("Scale"), Some("autoscaling/v1"))
    );
    assert_eq!(
        (scale["spec"]["replicas"].as_i64(), scale["status"]["replicas"].as_i64()),
        (Some(3), Some(3))
    );
    let scaled = update(&s, &format!("{path}/scale"), |o| o["spec"]["replicas"] = json!(2));
    assert_eq!(scaled["spec"]["replicas"], 2);
    s.wait_until("test-rs scaled to 2", WAIT, || {
        let o = get(&s, &path);
        let ok = status_i64(&o, "replicas") == 2 && o["spec"]["replicas"] == 2;
        (ok, o["status"].to_string())
    });
    assert_eq!(pods(&s, "name%3Dtest-rs").len(), 2);
    assert!(has_condition(&get(&s, &path), "StatusPatched"), "the controller dropped a condition");

    // ReplicaSet, list and delete a collection of ReplicaSets.
    let coll = replicated("ReplicaSet", "coll-rs", 2, json!({"e2e": "coll-rs"}));
    call(&s, "POST", &rs_path, Some(coll), 201);
    wait_running(&s, "e2e%3Dcoll-rs", 2);
    assert_eq!(names(&s, "/apis/apps/v1/replicasets?labelSelector=e2e%3Dcoll-rs"), ["coll-rs"]);
    let gone = call(&s, "DELETE", &format!("{rs_path}?labelSelector=e2e%3Dcoll-rs"), None, 200);
    assert_eq!(gone["kind"], "ReplicaSetList", "{gone}");
    assert!(names(&s, "/apis/apps/v1/replicasets?labelSelector=e2e%3Dcoll-rs").is_empty());
    assert_eq!(names(&s, &rs_path), ["test-rs"], "deletecollection kept to its label");
    s.wait_until("coll-rs's pods gone", WAIT, || {
        let now = pods(&s, "e2e%3Dcoll-rs");
        (now.is_empty(), format!("{now:?}"))
    });

    // Replication Controller, adopt matching pods.
    let orphan = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "pod-adoption", "labels": {"name": "pod-adoption"}},
        "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]}});
    call(&s, "POST", &format!("{CORE}/pods"), Some(orphan), 201);
    wait_running(&s, "name%3Dpod-adoption", 1);
    let rc =
        replicated("ReplicationController", "pod-adoption", 1, json!({"name": "pod-adoption"}));
    let rc = call(&s, "POST", &rc_path, Some(rc), 201);
    s.wait_until("pod-adoption adopted", WAIT, || {
        let pod = get(&s, &format!("{CORE}/pods/pod-adoption"));
        let owner = &pod["metadata"]["ownerReferences"][0];
        let ok = owner["uid"] == rc["metadata"]["uid"] && owner["controller"] == true;
        (ok, pod["metadata"].to_string())
    });
    let rc_now = get(&s, &format!("{rc_path}/pod-adoption"));
    assert_eq!(status_i64(&rc_now, "replicas"), 1, "{rc_now}");
    assert_eq!(pods(&s, "name%3Dpod-adoption").len(), 1, "no second pod");

    // Replication Controller, lifecycle.
    let start = collection_rv(&s, &rc_path);
    let labels = json!({"test-rc-static": "true"});
    call(
        &s,
        "POST",
        &rc_path,
        Some(replicated("ReplicationController", "rc-test", 1, labels)),
        201,
    );
    let path = format!("{rc_path}/rc-test");
    wait_for_event(&s, &path, &start, "ADDED", "rc-test ADDED", |_| true);
    wait_for_event(&s, &path, &start, "MODIFIED", "rc-test ready", |o| {
        status_i64(o, "readyReplicas") == 1 && status_i64(o, "availableReplicas") == 1
    });
    let patched = call(
        &s,
        "PATCH",
        &path,
        Some(strategic(json!({"metadata": {"labels": {"rc": "patched"}}}))),
        200,
    );
    assert_eq!(patched["metadata"]["labels"]["rc"], "patched");
    let patch = json!({"status": {"readyReplicas": 0, "availableReplicas": 0}});
    let zeroed = call(&s, "PATCH", &format!("{path}/status"), Some(patch), 200);
    wait_for_event(
        &s,
        &path,
        &rv(&patched),
        "MODIFIED",
        "rc-test status patched to 0 ready",
        |o| status_i64(o, "readyReplicas") == 0 && o["metadata"]["labels"]["rc"] == "patched",
    );
    assert_eq!(status_i64(&zeroed, "readyReplicas"), 0, "{zeroed}");
    let scale = get(&s, &format!("{path}/scale"));
    assert_eq!(
        (scale["kind"].as_str(), scale["spec"]["replicas"].as_i64()),
        (Some("Scale"), Some(1))
    );
    let scaled =
        call(&s, "PATCH", &format!("{path}/scale"), Some(json!({"spec": {"replicas": 2}})), 200);
    assert_eq!(scaled["spec"]["replicas"], 2);
    wait_for_event(&s, &path, &rv(&zeroed), "MODIFIED", "rc-test scaled to 2 ready", |o| {
        status_i64(o, "readyReplicas") == 2 && o["spec"]["replicas"] == 2
    });
    status_subresource_round_trip(&s, &path, "ReplicationController");
    let listed = names(&s, "/api/v1/replicationcontrollers?labelSelector=test-rc-static%3Dtrue");
    assert_eq!(listed, ["rc-test"]);
    let before = rv(&get(&s, &path));
    let gone =
        call(&s, "DELETE", &format!("{rc_path}?labelSelector=test-rc-static%3Dtrue"), None, 200);
    assert_eq!(gone["kind"], "ReplicationControllerList", "{gone}");
    wait_for_event(&s, &path, &before, "DELETED", "rc-test DELETED", |_| true);
    assert_eq!(names(&s, &rc_path), ["pod-adoption"]);
}

/// A Deployment of `replicas` busybox pods labelled `name=<name>`.
fn deployment(name: &str, replicas: i64, extra_spec: Value) -> Value {
    let mut d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"name": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"name": name}},
            "template": {
                "metadata": {"labels": {"name": name}},
                "spec": {"containers": [{"name": "app", "image": "busybox:1.36",
                    "imagePullPolicy": "IfNotPresent"}]}
            }
        }
    });
    if let (Some(spec), Some(extra)) = (d["spec"].as_object_mut(), extra_spec.as_object()) {
        spec.extend(extra.clone());
    }
    d
}

/// `(name, spec.replicas, status.replicas, revision)` of the ReplicaSets `selector` selects.
fn replica_sets(s: &RkubeServer, selector: &str) -> Vec<(String, i64, i64, String)> {
    let list = get(s, &format!("{APPS}/replicasets?labelSelector={selector}"));
    let mut sets: Vec<_> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["metadata"]["name"].as_str().unwrap_or_default().to_string(),
                r["spec"]["replicas"].as_i64().unwrap_or(0),
                status_i64(r, "replicas"),
                r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    sets.sort();
    sets
}

#[test]
fn deployments_through_every_verb_scale_proportionally_and_roll_over_on_simulated_nodes() {
    let s = RkubeServer::start();
    let nodes = SimulatedNodes::start(&s, 2, &[]);
    nodes.wait_ready(&s, 2, WAIT);
    let d_path = format!("{APPS}/deployments");

    // Deployment, completes the lifecycle of a Deployment.
    let start = collection_rv(&s, &d_path);
    let mut d = deployment("test-deployment", 2, json!({}));
    d["metadata"]["labels"]["test-deployment-static"] = json!("true");
    call(&s, "POST", &d_path, Some(d), 201);
    let path = format!("{d_path}/test-deployment");
    wait_for_event(&s, &path, &start, "ADDED", "test-deployment ADDED", |_| true);
    wait_for_event(&s, &path, &start, "MODIFIED", "test-deployment ready 2", |o| {
        status_i64(o, "readyReplicas") == 2 && status_i64(o, "availableReplicas") == 2
    });
    let patch = json!({"metadata": {"labels": {"test-deployment": "patched"}}, "spec": {
        "replicas": 1, "template": {"spec": {"terminationGracePeriodSeconds": 1,
            "containers": [{"name": "app", "image": "busybox:1.36-patched"}]}}}});
    let patched = call(&s, "PATCH", &path, Some(strategic(patch)), 200);
    wait_for_event(
        &s,
        &path,
        &rv(&patched),
        "MODIFIED",
        "test-deployment patched, rolled out",
        |o| {
            o["metadata"]["labels"]["test-deployment"] == "patched"
                && status_i64(o, "readyReplicas") == 1
                && status_i64(o, "updatedReplicas") == 1
                && status_i64(o, "availableReplicas") == 1
                && status_i64(o, "replicas") == 1
                && status_i64(o, "unavailableReplicas") == 0
                && o["status"]["observedGeneration"] == o["metadata"]["generation"]
        },
    );
    let listed = names(&s, "/apis/apps/v1/deployments?labelSelector=test-deployment-static%3Dtrue");
    assert_eq!(listed, ["test-deployment"]);
    let updated = update(&s, &path, |o| {
        o["spec"]["replicas"] = json!(2);
        o["spec"]["template"]["spec"]["containers"][0]["image"] = json!("busybox:1.36-updated");
    });
    wait_for_event(
        &s,
        &path,
        &rv(&updated),
        "MODIFIED",
        "test-deployment updated, rolled out",
        |o| {
            status_i64(o, "readyReplicas") == 2
                && status_i64(o, "updatedReplicas") == 2
                && status_i64(o, "replicas") == 2
                && o["status"]["observedGeneration"] == o["metadata"]["generation"]
        },
    );
    let running = wait_running(&s, "name%3Dtest-deployment", 2);
    assert!(running.iter().all(|p| p[5] == "busybox:1.36-updated"), "{running:?}");
    status_subresource_round_trip(&s, &path, "Deployment");
    let before = rv(&get(&s, &path));
    let gone = call(
        &s,
        "DELETE",
        &format!("{d_path}?labelSelector=test-deployment-static%3Dtrue"),
        None,
        200,
    );
    assert_eq!(gone["kind"], "DeploymentList", "{gone}");
    wait_for_event(&s, &path, &before, "DELETED", "test-deployment DELETED", |_| true);
    s.wait_until("test-deployment's pods gone", WAIT, || {
        let now = pods(&s, "name%3Dtest-deployment");
        (now.is_empty(), format!("{now:?}"))
    });

    // Deployment, status sub-resource; the condition survives the controller's next status
    // write (a scale through GET and PUT of /scale).
    call(&s, "POST", &d_path, Some(deployment("status-d", 1, json!({}))), 201);
    let path = format!("{d_path}/status-d");
    wait_running(&s, "name%3Dstatus-d", 1);
    status_subresource_round_trip(&s, &path, "Deployment");
    let scale = get(&s, &format!("{path}/scale"));
    assert_eq!(
        (scale["spec"]["replicas"].as_i64(), scale["status"]["replicas"].as_i64()),
        (Some(1), Some(1))
    );
    update(&s, &format!("{path}/scale"), |o| o["spec"]["replicas"] = json!(2));
    let after = s.wait_until("status-d scaled to 2", WAIT, || {
        let o = get(&s, &path);
        (status_i64(&o, "availableReplicas") == 2, o.to_string())
    });
    let after: Value = serde_json::from_str(&after).unwrap();
    assert!(has_condition(&after, "StatusPatched"), "the controller dropped a condition: {after}");
    assert!(has_condition(&after, "Available"), "{after}");

    // Deployment Proportional Scaling: a rollout stuck on an image that never starts,
    // scaled from 10 to 30, grows both ReplicaSets in proportion.
    let strategy = json!({"strategy": {"type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}});
    call(&s, "POST", &d_path, Some(deployment("webserver", 10, strategy)), 201);
    let path = format!("{d_path}/webserver");
    s.wait_until("webserver available 10", WAIT, || {
        let o = get(&s, &path);
        (status_i64(&o, "availableReplicas") == 10, o["status"].to_string())
    });
    let stuck = json!({"spec": {"template": {"spec": {"containers": [{"name": "app",
        "image": "busybox:not-here", "imagePullPolicy": "Never"}]}}}});
    call(&s, "PATCH", &path, Some(strategic(stuck)), 200);
    let sets = s.wait_until("old ReplicaSet 8, new 5", WAIT, || {
        let sets = replica_sets(&s, "name%3Dwebserver");
        let ok = sets.len() == 2
            && sets.iter().any(|r| r.3 == "1" && r.1 == 8 && r.2 == 8)
            && sets.iter().any(|r| r.3 == "2" && r.1 == 5 && r.2 == 5);
        (ok, format!("{sets:?}"))
    });
    let d = get(&s, &path);
    assert_eq!(status_i64(&d, "availableReplicas"), 8, "{sets}");
    update(&s, &path, |o| o["spec"]["replicas"] = json!(30));
    s.wait_until("old ReplicaSet 20, new 13", WAIT, || {
        let sets = replica_sets(&s, "name%3Dwebserver");
        let ok = sets.iter().any(|r| r.3 == "1" && r.1 == 20)
            && sets.iter().any(|r| r.3 == "2" && r.1 == 13);
        (ok, format!("{sets:?}"))
    });

    // Deployment Rollover: a Deployment adopts a ReplicaSet it did not make, gets stuck on a
    // bad image, then rolls over both to a good one.
    let bare = replicated(
        "ReplicaSet",
        "test-rollover-controller",
        1,
        json!({"name": "rollover-pod", "pod": "httpd"}),
    );
    call(&s, "POST", &format!("{APPS}/replicasets"), Some(bare), 201);
    wait_running(&s, "name%3Drollover-pod", 1);
    let mut d = deployment(
        "test-rollover-deployment",
        1,
        json!({"minReadySeconds": 10,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}),
    );
    d["spec"]["selector"] = json!({"matchLabels": {"name": "rollover-pod"}});
    d["spec"]["template"] = json!({"metadata": {"labels": {"name": "rollover-pod"}},
        "spec": {"containers": [{"name": "app", "image": "busybox:not-here", "imagePullPolicy": "Never"}]}});
    call(&s, "POST", &d_path, Some(d), 201);
    let path = format!("{d_path}/test-rollover-deployment");
    let sets = s.wait_until("both ReplicaSets have 1 replica, revision 1", WAIT, || {
        let d = get(&s, &path);
        let sets = replica_sets(&s, "name%3Drollover-pod");
        let ok = d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
            && sets.len() == 2
            && sets.iter().all(|r| r.1 == 1 && r.2 == 1)
            && status_i64(&d, "updatedReplicas") >= 1;
        (ok, format!("{sets:?} {}", d["metadata"]))
    });
    let d = get(&s, &path);
    let owner = get(&s, &format!("{APPS}/replicasets/test-rollover-controller"));
    assert_eq!(
        owner["metadata"]["ownerReferences"][0]["uid"], d["metadata"]["uid"],
        "adopted: {sets}"
    );
    let good = json!({"spec": {"template": {"spec": {"containers": [{"name": "app",
        "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent"}]}}}});
    call(&s, "PATCH", &path, Some(strategic(good)), 200);
    s.wait_until("rolled over to revision 2", Duration::from_secs(90), || {
        let d = get(&s, &path);
        let ok = d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
            && d["status"]["observedGeneration"] == d["metadata"]["generation"]
            && status_i64(&d, "updatedReplicas") == 1
            && status_i64(&d, "availableReplicas") == 1
            && status_i64(&d, "replicas") == 1;
        (ok, d["status"].to_string())
    });
    let sets = replica_sets(&s, "name%3Drollover-pod");
    assert_eq!(sets.len(), 3, "{sets:?}");
    let old: Vec<_> = sets.iter().filter(|r| r.3 != "2").collect();
    assert_eq!(old.len(), 2, "{sets:?}");
    assert!(old.iter().all(|r| r.1 == 0 && r.2 == 0), "old ReplicaSets emptied: {sets:?}");
    let running = wait_running(&s, "name%3Drollover-pod", 1);
    assert_eq!(running[0][5], "busybox:1.36");
}

/// A StatefulSet of `replicas` busybox pods labelled `name=<name>`.
fn stateful_set(name: &str, replicas: i64, extra_spec: Value) -> Value {
    let mut ss = json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "labels": {"name": name}},
        "spec": {
            "replicas": replicas,
            "serviceName": "test",
            "selector": {"matchLabels": {"name": name}},
            "template": {
                "metadata": {"labels": {"name": name}},
                "spec": {"containers": [{"name": "app", "image": "busybox:1.36",
                    "imagePullPolicy": "IfNotPresent"}]}
            }
        }
    });
    if let (Some(spec), Some(extra)) = (ss["spec"].as_object_mut(), extra_spec.as_object()) {
        spec.extend(extra.clone());
    }
    ss
}

/// `(name, controller-revision-hash, image)` of the pods of `set`, by name; only Running
/// and Ready pods count when `running`.
fn set_pods(s: &RkubeServer, set: &str) -> Vec<(String, String, String)> {
    let list = get(s, &format!("{CORE}/pods?labelSelector=name%3D{set}"));
    let mut pods: Vec<_> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            p["metadata"]["deletionTimestamp"].is_null() && p["status"]["phase"] == "Running"
        })
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap_or_default().to_string(),
                p["metadata"]["labels"]["controller-revision-hash"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                p["spec"]["containers"][0]["image"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    pods.sort();
    pods
}

#[test]
fn stateful_sets_through_every_verb_and_partitioned_updates_on_simulated_nodes() {
    let s = RkubeServer::start();
    let nodes = SimulatedNodes::start(&s, 2, &[]);
    nodes.wait_ready(&s, 2, WAIT);
    let ss_path = format!("{APPS}/statefulsets");

    // StatefulSet, Rolling Update with Partition: no pod changes while the partition is above
    // every ordinal, a canary at partition 2, deleted pods come back at their own revision,
    // then a phased rollout from the highest ordinal down.
    let strategy = json!({"updateStrategy": {"type": "RollingUpdate",
        "rollingUpdate": {"partition": 3}}});
    call(&s, "POST", &ss_path, Some(stateful_set("ss2", 3, strategy)), 201);
    let path = format!("{ss_path}/ss2");
    let ss = s.wait_until("ss2 running, current = update revision", WAIT, || {
        let ss = get(&s, &path);
        let ok = status_i64(&ss, "readyReplicas") == 3
            && ss["status"]["currentRevision"].is_string()
            && ss["status"]["currentRevision"] == ss["status"]["updateRevision"];
        (ok, ss.to_string())
    });
    let ss: Value = serde_json::from_str(&ss).unwrap();
    let old_rev = ss["status"]["currentRevision"].as_str().unwrap().to_string();
    // A StatefulSet's pods carry the revision's name (not its hash) in controller-revision-hash.
    let old_hash = old_rev.clone();
    let sp = set_pods(&s, "ss2");
    assert_eq!(sp.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(), ["ss2-0", "ss2-1", "ss2-2"]);
    assert!(sp.iter().all(|p| p.1 == old_hash), "{sp:?}");
    let new_image = json!({"spec": {"template": {"spec": {"containers": [{"name": "app",
        "image": "busybox:1.36-new"}]}}}});
    call(&s, "PATCH", &path, Some(strategic(new_image)), 200);
    let ss = s.wait_until("a new update revision", WAIT, || {
        let ss = get(&s, &path);
        let ok = ss["status"]["observedGeneration"] == 2
            && ss["status"]["updateRevision"].is_string()
            && ss["status"]["updateRevision"] != old_rev.as_str();
        (ok, ss.to_string())
    });
    let ss: Value = serde_json::from_str(&ss).unwrap();
    assert_eq!(ss["status"]["currentRevision"], old_rev.as_str(), "{ss}");
    let new_hash = ss["status"]["updateRevision"].as_str().unwrap().to_string();
    let sp = set_pods(&s, "ss2");
    assert!(
        sp.iter().all(|p| p.1 == old_hash && p.2 == "busybox:1.36"),
        "no update above the partition: {sp:?}"
    );
    let partition = |p: i64| {
        let patch = json!({"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": p}}}});
        call(&s, "PATCH", &path, Some(strategic(patch)), 200);
    };
    // The pods at or above `from` on the new revision and image, the others on the old.
    let wait_split = |from: usize, what: &str| {
        s.wait_until(what, WAIT, || {
            let sp = set_pods(&s, "ss2");
            let ok = sp.len() == 3
                && sp.iter().enumerate().all(|(i, p)| {
                    if i >= from {
                        p.1 == new_hash && p.2 == "busybox:1.36-new"
                    } else {
                        p.1 == old_hash && p.2 == "busybox:1.36"
                    }
                });
            (ok, format!("{sp:?}"))
        });
    };
    partition(2);
    wait_split(2, "the canary ss2-2 updated, ss2-0 and ss2-1 not");
    let uids = |names: &[&str]| -> Vec<String> {
        names
            .iter()
            .map(|n| {
                get(&s, &format!("{CORE}/pods/{n}"))["metadata"]["uid"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let before = uids(&["ss2-0", "ss2-2"]);
    call(&s, "DELETE", &format!("{CORE}/pods/ss2-0"), None, 200);
    call(&s, "DELETE", &format!("{CORE}/pods/ss2-2"), None, 200);
    s.wait_until("ss2-0 and ss2-2 made again", WAIT, || {
        let now: Vec<String> = ["ss2-0", "ss2-2"]
            .iter()
            .map(|n| {
                let p = s.curl(&[], &format!("{CORE}/pods/{n}"));
                let p: Value = serde_json::from_str(&p.body).unwrap_or(Value::Null);
                p["metadata"]["uid"].as_str().unwrap_or_default().to_string()
            })
            .collect();
        let ok = now.iter().zip(&before).all(|(n, b)| !n.is_empty() && n != b);
        (ok, format!("{now:?}"))
    });
    wait_split(2, "deleted pods back at their own revision");
    partition(1);
    wait_split(1, "phased: ss2-1 updated");
    partition(0);
    wait_split(0, "phased: ss2-0 updated");
    s.wait_until("current revision caught up", WAIT, || {
        let ss = get(&s, &path);
        let ok = ss["status"]["currentRevision"] == ss["status"]["updateRevision"]
            && status_i64(&ss, "updatedReplicas") == 3
            && status_i64(&ss, "currentReplicas") == 3;
        (ok, ss["status"].to_string())
    });

    // StatefulSet, status sub-resource; GET and PUT of /scale.
    status_subresource_round_trip(&s, &path, "StatefulSet");
    let scale = get(&s, &format!("{path}/scale"));
    assert_eq!(
        (
            scale["kind"].as_str(),
            scale["spec"]["replicas"].as_i64(),
            scale["status"]["replicas"].as_i64()
        ),
        (Some("Scale"), Some(3), Some(3))
    );
    update(&s, &format!("{path}/scale"), |o| o["spec"]["replicas"] = json!(2));
    s.wait_until("ss2 scaled to 2", WAIT, || {
        let sp = set_pods(&s, "ss2");
        let ss = get(&s, &path);
        let ok = sp.len() == 2 && status_i64(&ss, "replicas") == 2;
        (ok, format!("{sp:?}"))
    });
    assert!(has_condition(&get(&s, &path), "StatusPatched"), "the controller dropped a condition");

    // StatefulSet, list, patch and delete a collection of StatefulSets.
    call(&s, "POST", &ss_path, Some(stateful_set("ss-coll", 1, json!({}))), 201);
    wait_running(&s, "name%3Dss-coll", 1);
    assert_eq!(names(&s, "/apis/apps/v1/statefulsets?labelSelector=name%3Dss-coll"), ["ss-coll"]);
    let patch = json!({"metadata": {"labels": {"test-ss": "patched"}}, "spec": {"template": {"spec": {
        "terminationGracePeriodSeconds": 1, "containers": [{"name": "app", "image": "busybox:1.36-patched"}]}}}});
    let patched = call(&s, "PATCH", &format!("{ss_path}/ss-coll"), Some(strategic(patch)), 200);
    assert_eq!(patched["metadata"]["labels"]["test-ss"], "patched");
    assert_eq!(
        patched["spec"]["template"]["spec"]["containers"][0]["image"],
        "busybox:1.36-patched"
    );
    let gone = call(&s, "DELETE", &format!("{ss_path}?labelSelector=test-ss%3Dpatched"), None, 200);
    assert_eq!(gone["kind"], "StatefulSetList", "{gone}");
    assert!(names(&s, "/apis/apps/v1/statefulsets?labelSelector=test-ss%3Dpatched").is_empty());
    assert_eq!(names(&s, &ss_path), ["ss2"], "deletecollection kept to its label");
    s.wait_until("ss-coll's pods gone", WAIT, || {
        let now = pods(&s, "name%3Dss-coll");
        (now.is_empty(), format!("{now:?}"))
    });
}

/// The watch events of the pods `selector` selects since `rv`, read for one second:
/// `(type, name, ready)`.
fn pod_events_since(s: &RkubeServer, selector: &str, rv: &str) -> Vec<(String, String, bool)> {
    let query = format!(
        "{CORE}/pods?watch=1&resourceVersion={rv}&timeoutSeconds=1&labelSelector={selector}"
    );
    let out = s.curl(&[], &query);
    assert_eq!(out.code, 200, "watch {query}: {}", out.body);
    out.body
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let event: Value = serde_json::from_str(l).expect("a watch event");
            let o = &event["object"];
            let ready = o["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
            (
                event["type"].as_str().unwrap_or_default().to_string(),
                o["metadata"]["name"].as_str().unwrap_or_default().to_string(),
                ready,
            )
        })
        .collect()
}

/// busybox httpd serving the pod's hostname (its name) on port 9376, Ready while
/// `/srv/index.html` is there (upstream's serve-hostname and its httpGet probe).
fn serve_hostname_template(labels: Value) -> Value {
    json!({
        "metadata": {"labels": labels},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "app", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", "mkdir -p /srv && hostname > /srv/index.html && exec httpd -f -p 9376 -h /srv"],
                "ports": [{"containerPort": 9376}],
                "readinessProbe": {"httpGet": {"path": "/index.html", "port": 9376},
                    "periodSeconds": 1, "failureThreshold": 1, "successThreshold": 1}}]
        }
    })
}

/// Upstream's breakHTTPProbe / restoreHTTPProbe: moves the index page away or back.
fn set_probe(s: &RkubeServer, pod: &str, healthy: bool) {
    let script = if healthy {
        "mv -v /tmp/index.html /srv/ || true"
    } else {
        "mv -v /srv/index.html /tmp/ || true"
    };
    s.ok(&["exec", pod, "--", "sh", "-c", script]);
}

/// `name ready` of the running, live pods `selector` selects.
fn readiness(s: &RkubeServer, selector: &str) -> Vec<(String, bool)> {
    pods(s, selector).into_iter().map(|p| (p[0].clone(), p[3] == "True")).collect()
}

/// Holds for `window` that the live pods `selector` selects stay exactly `expected`.
fn stays(s: &RkubeServer, selector: &str, expected: &[&str], window: Duration) {
    let end = std::time::Instant::now() + window;
    while std::time::Instant::now() < end {
        let now: Vec<String> = pods(s, selector).into_iter().map(|p| p[0].clone()).collect();
        assert_eq!(now, expected, "the controller did not halt");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn basic_images_serve_and_stateful_sets_scale_by_readiness_on_a_real_node() {
    use rkube_conformance::node::{assert_route_is_local, NodeServer};
    let node = NodeServer::start();
    let s = &node.server;

    // Replica Set / Replication Controller, run basic image: each pod answers its own name
    // through the API server's pod proxy. The StatefulSets start at the same time.
    for (kind, path, name) in [
        ("ReplicaSet", format!("{APPS}/replicasets"), "basic-rs"),
        ("ReplicationController", format!("{CORE}/replicationcontrollers"), "basic-rc"),
    ] {
        let mut object = replicated(kind, name, 1, json!({"name": name}));
        object["spec"]["template"] = serve_hostname_template(json!({"name": name}));
        call(s, "POST", &path, Some(object), 201);
    }
    let ordered = json!({"template": serve_hostname_template(json!({"name": "ss"}))});
    call(s, "POST", &format!("{APPS}/statefulsets"), Some(stateful_set("ss", 1, ordered)), 201);
    let burst = json!({"podManagementPolicy": "Parallel",
        "template": serve_hostname_template(json!({"name": "burst"}))});
    call(s, "POST", &format!("{APPS}/statefulsets"), Some(stateful_set("burst", 1, burst)), 201);
    for name in ["basic-rs", "basic-rc"] {
        let running = wait_running(s, &format!("name%3D{name}"), 1);
        let pod = &running[0][0];
        let ip =
            get(s, &format!("{CORE}/pods/{pod}"))["status"]["podIP"].as_str().unwrap().to_string();
        assert_route_is_local(&ip);
        let proxied = s.curl(&[], &format!("{CORE}/pods/{pod}:9376/proxy/"));
        assert_eq!((proxied.code, proxied.body.trim()), (200, pod.as_str()), "{name}");
        let owner =
            get(s, &format!("{CORE}/pods/{pod}"))["metadata"]["ownerReferences"][0]["name"].clone();
        assert_eq!(owner, name);
    }

    // StatefulSet, Burst Scaling: with Parallel pod management, an unready pod halts neither
    // scaling up nor scaling down.
    wait_running(s, "name%3Dburst", 1);
    set_probe(s, "burst-0", false);
    s.wait_until("burst-0 unready", WAIT, || {
        let now = readiness(s, "name%3Dburst");
        (now == [("burst-0".to_string(), false)], format!("{now:?}"))
    });
    let scale = json!({"spec": {"replicas": 3}});
    call(s, "PATCH", &format!("{APPS}/statefulsets/burst/scale"), Some(scale), 200);
    s.wait_until("burst-1 and burst-2 made while burst-0 is unready", WAIT, || {
        let now = pods(s, "name%3Dburst");
        let ok = now.len() == 3 && now.iter().all(|p| p[2] == "Running") && now[0][3] != "True";
        (ok, format!("{now:?}"))
    });
    for pod in ["burst-1", "burst-2"] {
        s.wait_until(&format!("{pod} ready"), WAIT, || {
            let now = readiness(s, "name%3Dburst");
            (now.iter().any(|p| p.0 == pod && p.1), format!("{now:?}"))
        });
        set_probe(s, pod, false);
    }
    s.wait_until("all burst pods unready", WAIT, || {
        let now = readiness(s, "name%3Dburst");
        (now.len() == 3 && now.iter().all(|p| !p.1), format!("{now:?}"))
    });
    let scale = json!({"spec": {"replicas": 0}});
    call(s, "PATCH", &format!("{APPS}/statefulsets/burst/scale"), Some(scale), 200);
    s.wait_until("burst scaled to 0 with unready pods", WAIT, || {
        let now = pods(s, "name%3Dburst");
        let ss = get(s, &format!("{APPS}/statefulsets/burst"));
        (now.is_empty() && status_i64(&ss, "replicas") == 0, format!("{now:?}"))
    });

    // StatefulSet, Scaling: with OrderedReady, an unready pod halts scaling up; once ready,
    // pods are made in order, each after the one before is Ready.
    wait_running(s, "name%3Dss", 1);
    set_probe(s, "ss-0", false);
    s.wait_until("ss-0 unready", WAIT, || {
        let now = readiness(s, "name%3Dss");
        (now == [("ss-0".to_string(), false)], format!("{now:?}"))
    });
    let start = collection_rv(s, &format!("{CORE}/pods"));
    call(
        s,
        "PATCH",
        &format!("{APPS}/statefulsets/ss/scale"),
        Some(json!({"spec": {"replicas": 3}})),
        200,
    );
    stays(s, "name%3Dss", &["ss-0"], Duration::from_secs(3));
    set_probe(s, "ss-0", true);
    wait_running(s, "name%3Dss", 3);
    let events = pod_events_since(s, "name%3Dss", &start);
    let added: Vec<&str> = events.iter().filter(|e| e.0 == "ADDED").map(|e| e.1.as_str()).collect();
    assert_eq!(added, ["ss-1", "ss-2"], "{events:?}");
    for (pod, before) in [("ss-1", "ss-0"), ("ss-2", "ss-1")] {
        let made = events.iter().position(|e| e.0 == "ADDED" && e.1 == pod).unwrap();
        let ready = events.iter().position(|e| e.1 == before && e.2);
        assert!(
            ready.is_some_and(|r| r < made),
            "{pod} made before {before} was Ready: {events:?}"
        );
    }

    // ... and halts scaling down while a pod is unready; once all are ready, pods go in
    // reverse order, each once the one after it is gone.
    for pod in ["ss-0", "ss-1", "ss-2"] {
        set_probe(s, pod, false);
    }
    s.wait_until("all ss pods unready", WAIT, || {
        let now = readiness(s, "name%3Dss");
        (now.len() == 3 && now.iter().all(|p| !p.1), format!("{now:?}"))
    });
    let start = collection_rv(s, &format!("{CORE}/pods"));
    call(
        s,
        "PATCH",
        &format!("{APPS}/statefulsets/ss/scale"),
        Some(json!({"spec": {"replicas": 0}})),
        200,
    );
    stays(s, "name%3Dss", &["ss-0", "ss-1", "ss-2"], Duration::from_secs(3));
    // From the top: the first unhealthy pod may go while unready (as upstream), so ss-2
    // would be deleted under an exec restoring it after ss-0 and ss-1.
    for pod in ["ss-2", "ss-1", "ss-0"] {
        set_probe(s, pod, true);
    }
    let mut events = Vec::new();
    s.wait_until("ss scaled to 0, every pod gone", Duration::from_secs(90), || {
        events = pod_events_since(s, "name%3Dss", &start);
        let gone = events.iter().filter(|e| e.0 == "DELETED").count();
        (gone == 3, format!("{events:?}"))
    });
    let deleted: Vec<&str> =
        events.iter().filter(|e| e.0 == "DELETED").map(|e| e.1.as_str()).collect();
    assert_eq!(deleted, ["ss-2", "ss-1", "ss-0"], "{events:?}");

    // StatefulSet, Recreate Failed Pod: a pod bound to the node whose host port another pod
    // holds is rejected by the kubelet (Failed), deleted and made again by the controller,
    // until the port is free and it runs.
    let holder = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "test-pod", "labels": {"name": "test-pod"}},
        "spec": {"nodeName": node.node, "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "app", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent",
                "command": ["sleep", "3600"], "ports": [{"containerPort": 21017, "hostPort": 21017}]}]}});
    call(s, "POST", &format!("{CORE}/pods"), Some(holder), 201);
    wait_running(s, "name%3Dtest-pod", 1);
    let start = collection_rv(s, &format!("{CORE}/pods"));
    let template = json!({"template": {"metadata": {"labels": {"name": "ss-recreate"}},
        "spec": {"nodeName": node.node, "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "app", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent",
                "command": ["sleep", "3600"], "ports": [{"containerPort": 21017, "hostPort": 21017}]}]}}});
    call(
        s,
        "POST",
        &format!("{APPS}/statefulsets"),
        Some(stateful_set("ss-recreate", 1, template)),
        201,
    );
    s.wait_until("ss-recreate-0 Failed, then deleted", WAIT, || {
        let query = format!("{CORE}/pods?watch=1&resourceVersion={start}&timeoutSeconds=1&fieldSelector=metadata.name%3Dss-recreate-0");
        let out = s.curl(&[], &query);
        let events: Vec<Value> =
            out.body.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let failed = events.iter().position(|e| {
            e["object"]["status"]["phase"] == "Failed"
                && e["object"]["status"]["reason"] == "NodePorts"
                && e["object"]["status"]["message"]
                    == "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
        });
        let deleted = events.iter().rposition(|e| e["type"] == "DELETED");
        let summary: Vec<String> = events
            .iter()
            .map(|e| format!("{} {} {}", e["type"], e["object"]["status"]["phase"], e["object"]["status"]["reason"]))
            .collect();
        (failed.zip(deleted).is_some_and(|(f, d)| f < d), summary.join("\n"))
    });
    call(s, "DELETE", &format!("{CORE}/pods/test-pod"), None, 200);
    let running = wait_running(s, "name%3Dss-recreate", 1);
    assert_eq!(running[0][0], "ss-recreate-0");
}
