//! The garbage collector inside `rkube server`, driven with stock kubectl the way users do:
//! owners and dependents (whose `metadata.ownerReferences` name the owner's uid) made with
//! `kubectl apply`, then `kubectl delete` with each `--cascade` mode. Background deletion
//! collects the dependents, `--cascade=orphan` and `--cascade=foreground` complete (kubectl
//! waits for the owner to go), a dependent with a live owner stays, dependents of owners that
//! never existed go, cluster-scoped owners own namespaced objects, and work left pending
//! while the garbage collector was not running, or across a restart of the server, is
//! finished when it starts.

use std::path::Path;
use std::time::{Duration, Instant};

use rkube_conformance::cluster::RkubeServer;
use serde_json::{json, Value};

/// An older stock kubectl, for at least one case each of orphan and foreground deletion.
const KUBECTL_1_29: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.29";
/// How long the garbage collector may take to act.
const LIMIT: Duration = Duration::from_secs(30);

/// An object that owns others, as an owner reference names it.
struct Owner {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
}

impl Owner {
    /// Reads `kind/name` (in `namespace`, when given) back from the server.
    fn get(s: &RkubeServer, kind: &str, name: &str, namespace: Option<&str>) -> Owner {
        let object = get_json(s, kind, name, namespace).expect("the owner exists");
        Owner {
            api_version: object["apiVersion"].as_str().unwrap().to_string(),
            kind: object["kind"].as_str().unwrap().to_string(),
            name: name.to_string(),
            uid: object["metadata"]["uid"].as_str().unwrap().to_string(),
        }
    }

    /// A reference to this owner, blocking its foreground deletion or not.
    fn reference(&self, block: bool) -> Value {
        json!({
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "blockOwnerDeletion": block,
        })
    }
}

/// A ConfigMap (or Secret, or ClusterRole: `kind`) with owner references and finalizers.
fn object(
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    owners: &[Value],
    finalizers: &[&str],
) -> Value {
    let api_version = if kind == "ClusterRole" { "rbac.authorization.k8s.io/v1" } else { "v1" };
    let mut object = json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "ownerReferences": owners},
    });
    if let Some(ns) = namespace {
        object["metadata"]["namespace"] = json!(ns);
    }
    if !finalizers.is_empty() {
        object["metadata"]["finalizers"] = json!(finalizers);
    }
    object
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
            },
        },
    })
}

/// A ReplicaSet of no pods, controlled by `owner`, with the labels its Deployment selects
/// (the Deployment controller releases a ReplicaSet its selector does not match).
fn replica_set(name: &str, owner: &Owner) -> Value {
    let mut reference = owner.reference(true);
    reference["controller"] = json!(true);
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "labels": {"app": owner.name, "rs": name},
            "ownerReferences": [reference],
        },
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": owner.name, "rs": name}},
            "template": {
                "metadata": {"labels": {"app": owner.name, "rs": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
            },
        },
    })
}

/// `kubectl apply -f -` of several objects at once.
fn apply(s: &RkubeServer, objects: &[Value]) {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    s.ok_stdin(&["apply", "-f", "-"], &list.to_string());
}

/// The object as JSON; `None` when it is not there.
fn get_json(s: &RkubeServer, kind: &str, name: &str, namespace: Option<&str>) -> Option<Value> {
    let mut args = vec!["get", kind, name, "--ignore-not-found", "-o", "json"];
    if let Some(ns) = namespace {
        args.extend(["-n", ns]);
    }
    let out = s.ok(&args);
    if out.trim().is_empty() {
        return None;
    }
    Some(serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}")))
}

fn exists(s: &RkubeServer, kind: &str, name: &str, namespace: Option<&str>) -> bool {
    get_json(s, kind, name, namespace).is_some()
}

/// The uids in the object's owner references.
fn owner_uids(object: &Value) -> Vec<String> {
    object["metadata"]["ownerReferences"]
        .as_array()
        .map(|refs| refs.iter().map(|r| r["uid"].as_str().unwrap_or("").to_string()).collect())
        .unwrap_or_default()
}

fn has_finalizer(object: &Value, finalizer: &str) -> bool {
    object["metadata"]["finalizers"].as_array().is_some_and(|f| f.iter().any(|x| x == finalizer))
}

/// Polls `check` until it holds, for at most [`LIMIT`].
fn wait_for(s: &RkubeServer, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !check() {
        assert!(
            Instant::now() < deadline,
            "waited {LIMIT:?} for {what}\nserver log:\n{}",
            s.log_tail(40)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn wait_gone(s: &RkubeServer, kind: &str, name: &str, namespace: Option<&str>) {
    wait_for(s, &format!("{kind} {name} to be deleted"), || !exists(s, kind, name, namespace));
}

#[test]
fn background_deletion_collects_the_dependents() {
    let s = RkubeServer::start();
    s.ok(&["create", "configmap", "owner"]);
    s.ok(&["create", "configmap", "bystander"]);
    let owner = Owner::get(&s, "configmap", "owner", None);
    apply(
        &s,
        &[
            object("ConfigMap", "dep-cm", None, &[owner.reference(false)], &[]),
            object("Secret", "dep-secret", None, &[owner.reference(true)], &[]),
            deployment("web"),
        ],
    );
    let web = Owner::get(&s, "deployment", "web", None);
    apply(&s, &[replica_set("web-1", &web), replica_set("web-2", &web)]);

    // kubectl's default: background. The owner goes at once, the dependents after it.
    s.ok(&["delete", "configmap", "owner"]);
    assert!(!exists(&s, "configmap", "owner", None));
    wait_gone(&s, "configmap", "dep-cm", None);
    wait_gone(&s, "secret", "dep-secret", None);
    assert!(exists(&s, "configmap", "bystander", None), "an object without owners stays");

    s.ok(&["delete", "deployment", "web"]);
    wait_gone(&s, "replicaset", "web-1", None);
    wait_gone(&s, "replicaset", "web-2", None);
}

#[test]
fn orphan_deletion_completes_and_the_dependents_stay_without_the_reference() {
    let s = RkubeServer::start();
    for name in ["owner", "other", "owner-129"] {
        s.ok(&["create", "configmap", name]);
    }
    let owner = Owner::get(&s, "configmap", "owner", None);
    let other = Owner::get(&s, "configmap", "other", None);
    let owner_129 = Owner::get(&s, "configmap", "owner-129", None);
    apply(
        &s,
        &[
            object("ConfigMap", "only-owner", None, &[owner.reference(true)], &[]),
            object(
                "Secret",
                "two-owners",
                None,
                &[owner.reference(false), other.reference(false)],
                &[],
            ),
            object("ConfigMap", "dep-129", None, &[owner_129.reference(false)], &[]),
        ],
    );

    // kubectl waits for the owner to be gone: the garbage collector must finish the orphan.
    s.ok(&["delete", "configmap", "owner", "--cascade=orphan", "--timeout=60s"]);
    assert!(!exists(&s, "configmap", "owner", None));
    let only = get_json(&s, "configmap", "only-owner", None).expect("an orphan stays");
    assert!(owner_uids(&only).is_empty(), "{only}");
    let two = get_json(&s, "secret", "two-owners", None).expect("an orphan stays");
    assert_eq!(owner_uids(&two), vec![other.uid.clone()], "{two}");

    // The same with kubectl 1.29.
    s.ok_with(
        Path::new(KUBECTL_1_29),
        &["delete", "configmap", "owner-129", "--cascade=orphan", "--timeout=60s"],
        None,
    );
    assert!(!exists(&s, "configmap", "owner-129", None));
    let dep = get_json(&s, "configmap", "dep-129", None).expect("an orphan stays");
    assert!(owner_uids(&dep).is_empty(), "{dep}");

    // Orphans are no one's garbage: still there once the collector has handled later work.
    s.ok(&["delete", "configmap", "other"]);
    wait_gone(&s, "secret", "two-owners", None);
    assert!(exists(&s, "configmap", "only-owner", None));
    assert!(exists(&s, "configmap", "dep-129", None));
}

#[test]
fn foreground_deletion_deletes_the_dependents_before_the_owner() {
    let mut s = RkubeServer::start();
    apply(&s, &[deployment("web")]);
    let web = Owner::get(&s, "deployment", "web", None);
    apply(&s, &[replica_set("web-1", &web), replica_set("web-2", &web)]);
    // kubectl waits for the Deployment, which goes only after its blocking dependents.
    s.ok(&["delete", "deployment", "web", "--cascade=foreground", "--timeout=60s"]);
    assert!(!exists(&s, "deployment", "web", None));
    assert!(!exists(&s, "replicaset", "web-1", None));
    assert!(!exists(&s, "replicaset", "web-2", None));

    // A blocking dependent held by a finalizer of its own holds the owner (kubectl 1.29).
    s.ok(&["create", "configmap", "owner"]);
    let owner = Owner::get(&s, "configmap", "owner", None);
    apply(
        &s,
        &[
            object("ConfigMap", "free", None, &[owner.reference(true)], &[]),
            object("ConfigMap", "loose", None, &[owner.reference(false)], &[]),
            object("ConfigMap", "held", None, &[owner.reference(true)], &["example.com/hold"]),
        ],
    );
    s.ok_with(
        Path::new(KUBECTL_1_29),
        &["delete", "configmap", "owner", "--cascade=foreground", "--wait=false"],
        None,
    );
    wait_gone(&s, "configmap", "free", None);
    wait_gone(&s, "configmap", "loose", None);
    let held = get_json(&s, "configmap", "held", None).expect("held by its finalizer");
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    let waiting = get_json(&s, "configmap", "owner", None).expect("the owner waits for `held`");
    assert!(waiting["metadata"]["deletionTimestamp"].is_string(), "{waiting}");
    assert!(has_finalizer(&waiting, "foregroundDeletion"), "{waiting}");

    // A restarted server (and collector) keeps the owner waiting for `held`...
    s.restart();
    let waiting = get_json(&s, "configmap", "owner", None).expect("still waiting for `held`");
    assert!(has_finalizer(&waiting, "foregroundDeletion"), "{waiting}");
    // ...until `held` goes: the owner follows.
    s.ok(&[
        "patch",
        "configmap",
        "held",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    wait_gone(&s, "configmap", "held", None);
    wait_gone(&s, "configmap", "owner", None);
}

#[test]
fn a_dependent_with_two_owners_survives_the_deletion_of_one() {
    let s = RkubeServer::start();
    s.ok(&["create", "configmap", "first"]);
    s.ok(&["create", "secret", "generic", "second"]);
    let first = Owner::get(&s, "configmap", "first", None);
    let second = Owner::get(&s, "secret", "second", None);
    apply(
        &s,
        &[object(
            "ConfigMap",
            "shared",
            None,
            &[first.reference(false), second.reference(false)],
            &[],
        )],
    );
    s.ok(&["delete", "configmap", "first"]);
    // The collector keeps it and drops the reference to the owner that is gone (as upstream).
    wait_for(&s, "the reference to the deleted owner to go", || {
        get_json(&s, "configmap", "shared", None).map(|o| owner_uids(&o))
            == Some(vec![second.uid.clone()])
    });
    s.ok(&["delete", "secret", "second"]);
    wait_gone(&s, "configmap", "shared", None);
}

#[test]
fn dependents_of_owners_that_never_existed_are_collected() {
    let s = RkubeServer::start();
    s.ok(&["create", "configmap", "real"]);
    let real = Owner::get(&s, "configmap", "real", None);
    let ghost = Owner {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "ghost".into(),
        uid: "6f1c2a7e-0000-4000-8000-00000000dead".into(),
    };
    // The right name with another uid, or another kind, is not the owner either.
    let impostor = Owner {
        uid: "6f1c2a7e-0000-4000-8000-00000000beef".into(),
        ..Owner::get(&s, "configmap", "real", None)
    };
    let wrong_kind = Owner { kind: "Secret".into(), ..Owner::get(&s, "configmap", "real", None) };
    apply(
        &s,
        &[
            object("ConfigMap", "of-ghost", None, &[ghost.reference(false)], &[]),
            object("ConfigMap", "of-impostor", None, &[impostor.reference(false)], &[]),
            object("Secret", "of-wrong-kind", None, &[wrong_kind.reference(false)], &[]),
            object("ConfigMap", "of-real", None, &[real.reference(false)], &[]),
        ],
    );
    wait_gone(&s, "configmap", "of-ghost", None);
    wait_gone(&s, "configmap", "of-impostor", None);
    wait_gone(&s, "secret", "of-wrong-kind", None);
    assert!(exists(&s, "configmap", "real", None));
    assert!(exists(&s, "configmap", "of-real", None), "a dependent of a live owner stays");
}

#[test]
fn cluster_scoped_owners_own_namespaced_objects() {
    let s = RkubeServer::start();
    s.ok(&["create", "namespace", "gc-a"]);
    s.ok(&["create", "namespace", "gc-b"]);
    s.ok(&["create", "clusterrole", "gc-owner", "--verb=get", "--resource=pods"]);
    s.ok(&["create", "configmap", "ns-owner"]);
    let role = Owner::get(&s, "clusterrole", "gc-owner", None);
    let namespace = Owner::get(&s, "namespace", "gc-b", None);
    let ns_owner = Owner::get(&s, "configmap", "ns-owner", None);
    apply(
        &s,
        &[
            object("ConfigMap", "of-role", Some("default"), &[role.reference(false)], &[]),
            object("ConfigMap", "of-role", Some("gc-a"), &[role.reference(false)], &[]),
            object("ClusterRole", "gc-child", None, &[role.reference(false)], &[]),
            object("ConfigMap", "of-namespace", Some("gc-a"), &[namespace.reference(false)], &[]),
            // Invalid: a cluster-scoped object cannot have a namespaced owner, nor can an
            // object in one namespace have an owner in another.
            object("ClusterRole", "gc-bad-child", None, &[ns_owner.reference(false)], &[]),
            object("ConfigMap", "stray", Some("gc-a"), &[ns_owner.reference(false)], &[]),
        ],
    );
    // Upstream's warning event on each invalid dependent; the namespaced one is collected
    // (its owner is not in its namespace), the cluster-scoped one is left alone.
    wait_for(&s, "OwnerRefInvalidNamespace events", || {
        let events = s.ok(&["get", "events", "-A", "-o", "json"]);
        let events: Value = serde_json::from_str(&events).unwrap();
        let named: Vec<&str> = events["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["reason"] == "OwnerRefInvalidNamespace" && e["type"] == "Warning")
            .filter_map(|e| e["involvedObject"]["name"].as_str())
            .collect();
        named.contains(&"gc-bad-child") && named.contains(&"stray")
    });
    wait_gone(&s, "configmap", "stray", Some("gc-a"));

    s.ok(&["delete", "clusterrole", "gc-owner"]);
    wait_gone(&s, "configmap", "of-role", Some("default"));
    wait_gone(&s, "configmap", "of-role", Some("gc-a"));
    wait_gone(&s, "clusterrole", "gc-child", None);
    assert!(exists(&s, "configmap", "of-namespace", Some("gc-a")));

    // A Namespace owning an object in another namespace.
    s.ok(&["delete", "namespace", "gc-b", "--timeout=60s"]);
    wait_gone(&s, "configmap", "of-namespace", Some("gc-a"));

    assert!(
        exists(&s, "clusterrole", "gc-bad-child", None),
        "an invalid reference is not a reason to delete"
    );
}

#[test]
fn work_left_pending_is_finished_when_the_collector_starts() {
    let mut s = RkubeServer::start_with(&["--controllers", "*,-garbage-collector-controller"]);
    for name in ["orphan-owner", "fg-owner", "bg-owner"] {
        s.ok(&["create", "configmap", name]);
    }
    let orphan_owner = Owner::get(&s, "configmap", "orphan-owner", None);
    let fg_owner = Owner::get(&s, "configmap", "fg-owner", None);
    let bg_owner = Owner::get(&s, "configmap", "bg-owner", None);
    apply(
        &s,
        &[
            object("ConfigMap", "orphan-dep", None, &[orphan_owner.reference(true)], &[]),
            object("ConfigMap", "fg-dep", None, &[fg_owner.reference(true)], &[]),
            object("ConfigMap", "bg-dep", None, &[bg_owner.reference(false)], &[]),
        ],
    );
    s.ok(&["delete", "configmap", "orphan-owner", "--cascade=orphan", "--wait=false"]);
    s.ok(&["delete", "configmap", "fg-owner", "--cascade=foreground", "--wait=false"]);
    s.ok(&["delete", "configmap", "bg-owner"]);
    // Without a garbage collector the owners wait with their finalizers.
    let waiting = get_json(&s, "configmap", "orphan-owner", None).expect("waits to be orphaned");
    assert!(has_finalizer(&waiting, "orphan"), "{waiting}");
    let waiting = get_json(&s, "configmap", "fg-owner", None).expect("waits for its dependents");
    assert!(has_finalizer(&waiting, "foregroundDeletion"), "{waiting}");
    assert!(exists(&s, "configmap", "bg-dep", None));

    // The same server again, with every controller: the pending work gets done.
    s.restart_with(&[]);
    wait_gone(&s, "configmap", "orphan-owner", None);
    let orphan = get_json(&s, "configmap", "orphan-dep", None).expect("an orphan stays");
    assert!(owner_uids(&orphan).is_empty(), "{orphan}");
    wait_gone(&s, "configmap", "fg-dep", None);
    wait_gone(&s, "configmap", "fg-owner", None);
    wait_gone(&s, "configmap", "bg-dep", None);
}
