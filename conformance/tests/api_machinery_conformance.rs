//! Upstream conformance tests of the API machinery that no other rkube test covered, each
//! doing what upstream's e2e test does against the real binary: Table output refused for a
//! resource without a table (`API metadata HTTP return`), ConfigMap and Secret validation and
//! lifecycles, label-selected watches (several watchers, a watch restarted from the last
//! resourceVersion it saw, an object relabelled out of and back into a selector, concurrent
//! watches agreeing on one order), Leases and PodTemplates. Clients are kube-rs and raw HTTPS
//! with the admin certificate where only the wire shows the answer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, PodTemplate, Secret};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use rkube_conformance::cluster::RkubeServer;
use serde_json::{json, Value};

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

// --- Table output --------------------------------------------------------------------------

/// Upstream's "should return a 406 for a backend which does not implement metadata": a
/// SelfSubjectAccessReview asked for as a Table is refused with 406 NotAcceptable before it is
/// answered; offered JSON as well, the client gets the review as JSON.
#[test]
fn a_review_cannot_be_answered_as_a_table() {
    let s = RkubeServer::start();
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}},
    });
    let body = serde_json::to_vec(&review).unwrap();
    let path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let table = "Accept: application/json;as=Table;v=v1;g=meta.k8s.io";
    let refused = s.curl_body(&["-X", "POST", "-H", table], path, &body);
    assert_eq!(refused.code, 406, "{refused:?}");
    let status = json_of(&refused.body);
    assert_eq!(
        status,
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
            "reason": "NotAcceptable",
            "code": 406,
        })
    );
    // The same with JSON as a fallback: the review, answered.
    let fallback = format!("{table},application/json");
    let answered = s.curl_body(&["-X", "POST", "-H", &fallback], path, &body);
    assert_eq!(answered.code, 201, "{answered:?}");
    let answered = json_of(&answered.body);
    assert_eq!(answered["kind"], "SelfSubjectAccessReview");
    assert_eq!(answered["status"]["allowed"], true, "{answered}");
    // The other reviews have no table either; stored resources do.
    let token_review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": "not-a-token"}});
    let refused = s.curl_body(
        &["-X", "POST", "-H", table],
        "/apis/authentication.k8s.io/v1/tokenreviews",
        &serde_json::to_vec(&token_review).unwrap(),
    );
    assert_eq!(refused.code, 406, "{refused:?}");
    let listed = s.curl(&["-H", table], "/api/v1/namespaces/default/configmaps");
    assert_eq!(listed.code, 200, "{listed:?}");
    assert_eq!(json_of(&listed.body)["kind"], "Table");
    // A review has no metadata to give: kubectl's validation, from the server's OpenAPI
    // documents, does not ask for it (upstream's require metadata of core Events only).
    let manifest = "apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectAccessReview\nspec:\n  nonResourceAttributes: {path: /, verb: get}\n";
    let created = s.ok_stdin(&["create", "-f", "-", "-o", "json"], manifest);
    assert_eq!(json_of(&created)["status"]["allowed"], true, "{created}");
}

// --- ConfigMaps and Secrets ----------------------------------------------------------------

/// A raw POST of `object` to `path`: the code and the answer.
fn post(s: &RkubeServer, path: &str, object: &Value) -> (u16, Value) {
    let answer = s.curl_body(&["-X", "POST"], path, &serde_json::to_vec(object).unwrap());
    (answer.code, json_of(&answer.body))
}

/// Upstream's Status for an empty data key of a `kind` named `name`.
fn empty_key_refusal(kind: &str, name: &str) -> Value {
    let why = "Invalid value: \"\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format!("{kind} \"{name}\" is invalid: data[]: {why}"),
        "reason": "Invalid",
        "details": {
            "name": name,
            "kind": kind,
            "causes": [{"reason": "FieldValueInvalid", "message": why, "field": "data[]"}],
        },
        "code": 422,
    })
}

/// Upstream's "ConfigMap, with empty-key" and "Secrets, with empty-key": a ConfigMap or a
/// Secret with an empty data key is refused with upstream's 422, and nothing is stored.
#[test]
fn configmaps_and_secrets_refuse_an_empty_key() {
    let s = RkubeServer::start();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "configmap-test-empty-key"}, "data": {"": "value-1"}});
    let (code, status) = post(&s, "/api/v1/namespaces/default/configmaps", &cm);
    assert_eq!(code, 422, "{status}");
    assert_eq!(status, empty_key_refusal("ConfigMap", "configmap-test-empty-key"));
    // "value-1\n", base64.
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "secret-emptykey-test"}, "data": {"": "dmFsdWUtMQo="}});
    let (code, status) = post(&s, "/api/v1/namespaces/default/secrets", &secret);
    assert_eq!(code, 422, "{status}");
    assert_eq!(status, empty_key_refusal("Secret", "secret-emptykey-test"));
    for path in [
        "/api/v1/namespaces/default/configmaps/configmap-test-empty-key",
        "/api/v1/namespaces/default/secrets/secret-emptykey-test",
    ] {
        assert_eq!(s.curl(&[], path).code, 404, "{path} was stored");
    }
}

/// A namespace of the test's own, as upstream's framework makes one per test.
async fn namespace(client: &kube::Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    namespaces.create(&PostParams::default(), &ns).await.unwrap();
}

fn names_in<K: kube::Resource>(items: &[K]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|o| {
            let meta = o.meta();
            (meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default())
        })
        .collect()
}

/// Upstream's "ConfigMap lifecycle", "ConfigMap Update" and "Secret patching": create, get,
/// strategic-merge patch (labels and data), list across namespaces by label, deletecollection
/// by label (only the namespace named, only the selected objects), and a PUT of a ConfigMap
/// without a resourceVersion that replaces its data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configmaps_and_secrets_through_their_lifecycles() {
    let s = tokio::task::spawn_blocking(RkubeServer::start).await.unwrap();
    let client = s.kube_client().await.unwrap();
    namespace(&client, "configmap-test").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "configmap-test");
    let all_cms: Api<ConfigMap> = Api::all(client.clone());

    // ConfigMap lifecycle. Another namespace's ConfigMap with the same static label is left
    // alone by the deletecollection.
    let other: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let bystander: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "bystander",
        "labels": {"test-configmap-static": "true"}}, "data": {"valueName": "value"}}))
    .unwrap();
    other.create(&PostParams::default(), &bystander).await.unwrap();
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "test-configmap",
        "labels": {"test-configmap-static": "true"}}, "data": {"valueName": "value"}}))
    .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let read = cms.get("test-configmap").await.unwrap();
    assert_eq!(read.data.as_ref().unwrap()["valueName"], "value");
    assert_eq!(read.metadata.labels.as_ref().unwrap()["test-configmap-static"], "true");
    let patch = json!({"metadata": {"labels": {"test-configmap": "patched"}},
        "data": {"valueName": "value1"}});
    cms.patch("test-configmap", &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    let listed =
        all_cms.list(&ListParams::default().labels("test-configmap=patched")).await.unwrap();
    assert_eq!(names_in(&listed.items), [("configmap-test".into(), "test-configmap".into())]);
    let found = &listed.items[0];
    let labels = found.metadata.labels.as_ref().unwrap();
    assert_eq!(
        (labels["test-configmap-static"].as_str(), labels["test-configmap"].as_str()),
        ("true", "patched")
    );
    assert_eq!(found.data.as_ref().unwrap()["valueName"], "value1");
    let static_label = ListParams::default().labels("test-configmap-static=true");
    cms.delete_collection(&DeleteParams::default(), &static_label).await.unwrap();
    assert!(cms.list(&static_label).await.unwrap().items.is_empty());
    let left = all_cms.list(&static_label).await.unwrap();
    assert_eq!(names_in(&left.items), [("default".into(), "bystander".into())]);

    // ConfigMap Update: the local object, with new data and no resourceVersion, PUT.
    let mut local: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "configmap-update",
        "namespace": "configmap-test"},
        "data": {"data-1": "value-1", "data-2": "value-2", "data-3": "value-3"}}))
        .unwrap();
    let created = cms.create(&PostParams::default(), &local).await.unwrap();
    local.data = Some([("data".to_string(), "value".to_string())].into());
    let updated = cms.replace("configmap-update", &PostParams::default(), &local).await.unwrap();
    let read = cms.get("configmap-update").await.unwrap();
    assert_eq!(read.data, local.data);
    assert_eq!(read.metadata.resource_version, updated.metadata.resource_version);
    assert_ne!(read.metadata.resource_version, created.metadata.resource_version);
    assert_eq!(read.metadata.uid, created.metadata.uid);
    assert_eq!(read.metadata.creation_timestamp, created.metadata.creation_timestamp);
    // The same PUT again changes nothing: no write, the same resourceVersion (what upstream's
    // watch-consistency writer relies on: its PUTs of an unchanged ConfigMap make no event).
    let again = cms.replace("configmap-update", &PostParams::default(), &local).await.unwrap();
    assert_eq!(again.metadata.resource_version, updated.metadata.resource_version);

    // Secret patching.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "configmap-test");
    let all_secrets: Api<Secret> = Api::all(client.clone());
    let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "test-secret",
        "labels": {"testsecret-constant": "true"}}, "data": {"key": "dmFsdWU="}, "type": "Opaque"}))
    .unwrap();
    secrets.create(&PostParams::default(), &secret).await.unwrap();
    let constant = ListParams::default().labels("testsecret-constant=true");
    let listed = all_secrets.list(&constant).await.unwrap();
    assert_eq!(names_in(&listed.items), [("configmap-test".into(), "test-secret".into())]);
    // As upstream's Go client marshals []byte("dmFsdWUx"): base64 of base64 of "value1".
    let patch = json!({"metadata": {"labels": {"testsecret": "true"}},
        "data": {"key": "ZG1Gc2RXVXg="}});
    secrets.patch("test-secret", &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    let read = secrets.get("test-secret").await.unwrap();
    let stored = &read.data.as_ref().unwrap()["key"].0;
    use base64::Engine;
    let decoded = base64::engine::general_purpose::STANDARD.decode(stored).unwrap();
    assert_eq!(decoded, b"value1");
    assert_eq!(read.type_.as_deref(), Some("Opaque"));
    let labels = read.metadata.labels.as_ref().unwrap();
    assert_eq!(
        (labels["testsecret-constant"].as_str(), labels["testsecret"].as_str()),
        ("true", "true")
    );
    secrets
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("testsecret=true"),
        )
        .await
        .unwrap();
    assert!(all_secrets.list(&constant).await.unwrap().items.is_empty());
}

// --- Watches -------------------------------------------------------------------------------

/// The label upstream's watch tests select ConfigMaps by.
const WATCH_LABEL: &str = "watch-this-configmap";

type Watch = BoxStream<'static, kube::Result<WatchEvent<ConfigMap>>>;

/// A watch of the namespace's ConfigMaps whose label is one of `values`, from
/// `resource_version` ("" for now), as upstream's `watchConfigMaps` makes one.
async fn watch_configmaps(cms: &Api<ConfigMap>, resource_version: &str, values: &[&str]) -> Watch {
    let selector = format!("{WATCH_LABEL} in ({})", values.join(","));
    let params = WatchParams::default().labels(&selector).timeout(120);
    cms.watch(&params, resource_version).await.expect("watch").boxed()
}

/// What a watch event says: its type, the object's name, resourceVersion and labelled value.
#[derive(Debug, PartialEq, Eq, Clone)]
struct Seen {
    kind: &'static str,
    name: String,
    resource_version: String,
    label: String,
}

impl Seen {
    fn of(kind: &'static str, cm: &ConfigMap) -> Seen {
        let label = cm.metadata.labels.as_ref().and_then(|l| l.get(WATCH_LABEL)).cloned();
        Seen {
            kind,
            name: cm.metadata.name.clone().unwrap_or_default(),
            resource_version: cm.metadata.resource_version.clone().unwrap_or_default(),
            label: label.unwrap_or_default(),
        }
    }
}

/// The next event of `watch` that is not a bookmark (10 s at most, as upstream's
/// `waitForNextConfigMapEvent`).
async fn next_event(watch: &mut Watch) -> Seen {
    loop {
        let next = tokio::time::timeout(Duration::from_secs(10), watch.next()).await;
        let event = next.expect("no watch event within 10 s").expect("the watch ended");
        return match event.expect("a watch event") {
            WatchEvent::Added(cm) => Seen::of("ADDED", &cm),
            WatchEvent::Modified(cm) => Seen::of("MODIFIED", &cm),
            WatchEvent::Deleted(cm) => Seen::of("DELETED", &cm),
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Error(e) => panic!("watch error: {e:?}"),
        };
    }
}

/// A labelled ConfigMap, created.
async fn create_labelled(cms: &Api<ConfigMap>, name: &str, label: &str) -> ConfigMap {
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": {WATCH_LABEL: label}}}))
            .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap()
}

/// Upstream's `updateConfigMap`: read, change, PUT (with the resourceVersion read).
async fn update(cms: &Api<ConfigMap>, name: &str, change: impl Fn(&mut ConfigMap)) -> ConfigMap {
    let mut cm = cms.get(name).await.unwrap();
    change(&mut cm);
    cms.replace(name, &PostParams::default(), &cm).await.unwrap()
}

fn mutation(value: &str) -> impl Fn(&mut ConfigMap) + '_ {
    move |cm| {
        cm.data.get_or_insert_with(Default::default).insert("mutation".into(), value.into());
    }
}

fn relabel(value: &str) -> impl Fn(&mut ConfigMap) + '_ {
    move |cm| {
        cm.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(WATCH_LABEL.into(), value.into());
    }
}

async fn delete(cms: &Api<ConfigMap>, name: &str) {
    cms.delete(name, &DeleteParams::default()).await.unwrap();
}

/// A DELETED event of `name` (whose resourceVersion only the watch tells) with `label`.
fn deleted(name: &str, label: &str, seen: &Seen) -> Seen {
    assert!(!seen.resource_version.is_empty());
    Seen {
        kind: "DELETED",
        name: name.into(),
        resource_version: seen.resource_version.clone(),
        label: label.into(),
    }
}

/// Upstream's watch-configmaps-with-multiple-watchers, watch-configmaps-closed-and-restarted,
/// watch-configmaps-from-resource-version and watch-configmaps-label-changed, with
/// label-selected kube-rs watches. Where upstream
/// waits 10 s to see that a watcher gets no event, the watcher's next event is checked to be
/// a later one instead (events of one resource come in revision order), so nothing sleeps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_selected_watches_as_upstream() {
    let s = tokio::task::spawn_blocking(RkubeServer::start).await.unwrap();
    let client = s.kube_client().await.unwrap();
    namespace(&client, "watch").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "watch");

    // Multiple watchers: A, B, and A-or-B.
    let (a, b) = ("multiple-watchers-A", "multiple-watchers-B");
    let mut watch_a = watch_configmaps(&cms, "", &[a]).await;
    let mut watch_b = watch_configmaps(&cms, "", &[b]).await;
    let mut watch_ab = watch_configmaps(&cms, "", &[a, b]).await;
    let name_a = "e2e-watch-test-configmap-a";
    let name_b = "e2e-watch-test-configmap-b";
    let created = create_labelled(&cms, name_a, a).await;
    let first = update(&cms, name_a, mutation("1")).await;
    let second = update(&cms, name_a, mutation("2")).await;
    delete(&cms, name_a).await;
    let created_b = create_labelled(&cms, name_b, b).await;
    delete(&cms, name_b).await;
    // A last A object: watch A's next event after A's deletion must be this one, not B's.
    let last_a = create_labelled(&cms, "e2e-watch-test-configmap-a2", a).await;
    let mut a_events = Vec::new();
    for _ in 0..5 {
        a_events.push(next_event(&mut watch_a).await);
    }
    let a_deleted = deleted(name_a, a, &a_events[3]);
    let expected_a = vec![
        Seen::of("ADDED", &created),
        Seen::of("MODIFIED", &first),
        Seen::of("MODIFIED", &second),
        a_deleted.clone(),
        Seen::of("ADDED", &last_a),
    ];
    assert_eq!(a_events, expected_a);
    let b_first = next_event(&mut watch_b).await;
    assert_eq!(b_first, Seen::of("ADDED", &created_b), "watch B saw A's events");
    let b_deleted = next_event(&mut watch_b).await;
    assert_eq!(b_deleted, deleted(name_b, b, &b_deleted));
    let mut ab_events = Vec::new();
    for _ in 0..7 {
        ab_events.push(next_event(&mut watch_ab).await);
    }
    let mut expected_ab = expected_a[..4].to_vec();
    expected_ab.extend([b_first, b_deleted, Seen::of("ADDED", &last_a)]);
    assert_eq!(ab_events, expected_ab);
    drop((watch_a, watch_b, watch_ab));

    // Closed and restarted: a watch closed after the first modification, reopened at the last
    // resourceVersion it saw, gets exactly what happened since.
    let restarted = "watch-closed-and-restarted";
    let name = "e2e-watch-test-watch-closed";
    let mut broken = watch_configmaps(&cms, "", &[restarted]).await;
    let created = create_labelled(&cms, name, restarted).await;
    let first = update(&cms, name, mutation("1")).await;
    assert_eq!(next_event(&mut broken).await, Seen::of("ADDED", &created));
    let last = next_event(&mut broken).await;
    assert_eq!(last, Seen::of("MODIFIED", &first));
    drop(broken);
    let second = update(&cms, name, mutation("2")).await;
    let mut resumed = watch_configmaps(&cms, &last.resource_version, &[restarted]).await;
    delete(&cms, name).await;
    assert_eq!(next_event(&mut resumed).await, Seen::of("MODIFIED", &second));
    let gone = next_event(&mut resumed).await;
    assert_eq!(gone, deleted(name, restarted, &gone));
    assert!(
        gone.resource_version.parse::<u64>().unwrap()
            > second.metadata.resource_version.as_deref().unwrap().parse().unwrap()
    );
    drop(resumed);

    // From a resource version: modified twice and deleted, then watched from the first
    // modification: exactly the second modification and the deletion.
    let from = "from-resource-version";
    let name = "e2e-watch-test-resource-version";
    create_labelled(&cms, name, from).await;
    let first = update(&cms, name, mutation("1")).await;
    let second = update(&cms, name, mutation("2")).await;
    delete(&cms, name).await;
    let rv = first.metadata.resource_version.clone().unwrap();
    let mut watch = watch_configmaps(&cms, &rv, &[from]).await;
    assert_eq!(next_event(&mut watch).await, Seen::of("MODIFIED", &second));
    let gone = next_event(&mut watch).await;
    assert_eq!(gone, deleted(name, from, &gone));
    drop(watch);

    // Label changed: relabelled out of the selection (DELETED, of the object as it was, at
    // the relabelling's resourceVersion), changed unseen, relabelled back (ADDED).
    let changing = "label-changed-and-restored";
    let name = "e2e-watch-test-label-changed";
    let mut watch = watch_configmaps(&cms, "", &[changing]).await;
    let created = create_labelled(&cms, name, changing).await;
    let first = update(&cms, name, mutation("1")).await;
    let relabelled = update(&cms, name, relabel("wrong-value")).await;
    assert_eq!(next_event(&mut watch).await, Seen::of("ADDED", &created));
    assert_eq!(next_event(&mut watch).await, Seen::of("MODIFIED", &first));
    let left = next_event(&mut watch).await;
    let mut expected_left = Seen::of("DELETED", &relabelled);
    expected_left.label = changing.into();
    assert_eq!(left, expected_left, "the object leaving the selection");
    update(&cms, name, mutation("2")).await;
    let restored = update(&cms, name, relabel(changing)).await;
    let third = update(&cms, name, mutation("3")).await;
    delete(&cms, name).await;
    assert_eq!(
        next_event(&mut watch).await,
        Seen::of("ADDED", &restored),
        "the second change was seen"
    );
    assert_eq!(next_event(&mut watch).await, Seen::of("MODIFIED", &third));
    let gone = next_event(&mut watch).await;
    assert_eq!(gone, deleted(name, changing, &gone));
}

/// The resourceVersion of `watch`'s next event (10 s at most).
async fn next_resource_version(watch: &mut Watch) -> String {
    next_event(watch).await.resource_version
}

/// Upstream's `produceConfigMapEvents`: every 5 ms, create a ConfigMap, or update or delete a
/// random one of those there are, until `stop`. Updates change the data (upstream PUTs the same
/// empty ConfigMap, a no-op that makes no event), so each write is an event.
async fn produce_configmap_events(cms: Api<ConfigMap>, stop: Arc<AtomicBool>) -> usize {
    let mut random = 0x9e37_79b9_7f4a_7c15_u64 ^ std::process::id() as u64;
    let mut next = move |n: usize| {
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        (random % n as u64) as usize
    };
    let (mut existing, mut created, mut writes) = (Vec::<usize>::new(), 0, 0);
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    // Bounded: the test stops it well before.
    while !stop.load(Ordering::Relaxed) && writes < 20_000 {
        tick.tick().await;
        let op = if existing.is_empty() { 0 } else { next(3) };
        match op {
            0 => {
                let cm: ConfigMap =
                    serde_json::from_value(json!({"metadata": {"name": format!("cm-{created}")}}))
                        .unwrap();
                cms.create(&PostParams::default(), &cm).await.unwrap();
                existing.push(created);
                created += 1;
            }
            1 => {
                let name = format!("cm-{}", existing[next(existing.len())]);
                let cm: ConfigMap = serde_json::from_value(
                    json!({"metadata": {"name": name}, "data": {"write": writes.to_string()}}),
                )
                .unwrap();
                cms.replace(&name, &PostParams::default(), &cm).await.unwrap();
            }
            _ => {
                let i = existing.remove(next(existing.len()));
                cms.delete(&format!("cm-{i}"), &DeleteParams::default()).await.unwrap();
            }
        }
        writes += 1;
    }
    writes
}

/// Upstream's watch-consistency: while ConfigMaps are written in the background, 100 watches
/// are opened one after another, each at the resourceVersion of the last event the first
/// watch delivered; every watch's next event has the same resourceVersion as the first's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_watches_see_events_in_one_order() {
    const ITERATIONS: usize = 100;
    let s = tokio::task::spawn_blocking(RkubeServer::start).await.unwrap();
    let client = s.kube_client().await.unwrap();
    namespace(&client, "watch-consistency").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "watch-consistency");
    let listed = cms.list(&ListParams::default()).await.unwrap();
    let mut resource_version = listed.metadata.resource_version.expect("a list's resourceVersion");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn(produce_configmap_events(cms.clone(), stop.clone()));
    let params = WatchParams::default().timeout(120);
    let mut watches: Vec<Watch> = Vec::new();
    for i in 0..ITERATIONS {
        watches.push(cms.watch(&params, &resource_version).await.expect("watch").boxed());
        resource_version = next_resource_version(&mut watches[0]).await;
        for (n, watch) in watches.iter_mut().enumerate().skip(1) {
            let seen = next_resource_version(watch).await;
            assert_eq!(seen, resource_version, "iteration {i}: watch {n} out of order");
        }
    }
    stop.store(true, Ordering::Relaxed);
    let writes = writer.await.expect("the writer failed");
    assert!(writes >= ITERATIONS, "{writes} writes");
}

// --- Leases and PodTemplates ---------------------------------------------------------------

/// A Lease spec as upstream's test writes them: times counted from Go's zero time.
fn lease_spec(holder: &str, duration: i32, acquired: u32, renewed: u32, transitions: i32) -> Value {
    let at = |secs: u32| format!("0001-01-01T00:{:02}:{:02}.000000Z", secs / 60, secs % 60);
    json!({"holderIdentity": holder, "leaseDurationSeconds": duration,
        "acquireTime": at(acquired), "renewTime": at(renewed), "leaseTransitions": transitions})
}

fn spec_of(lease: &Lease) -> Value {
    serde_json::to_value(lease.spec.as_ref().expect("a spec")).unwrap()
}

/// Upstream's "lease API should be available": create, get, update, strategic-merge patch
/// (each read back with the spec written), list, deletecollection by label (only the
/// labelled lease), delete (then 404), list across namespaces.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_api_as_upstream() {
    let s = tokio::task::spawn_blocking(RkubeServer::start).await.unwrap();
    let client = s.kube_client().await.unwrap();
    namespace(&client, "lease-test").await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "lease-test");
    let spec = lease_spec("holder", 30, 2, 5, 0);
    let lease: Lease =
        serde_json::from_value(json!({"metadata": {"name": "lease"}, "spec": spec})).unwrap();
    let mut created = leases.create(&PostParams::default(), &lease).await.unwrap();
    assert_eq!(spec_of(&leases.get("lease").await.unwrap()), spec_of(&lease));

    let spec = lease_spec("holder2", 30, 20, 50, 1);
    created.spec = serde_json::from_value(spec).unwrap();
    leases.replace("lease", &PostParams::default(), &created).await.unwrap();
    let read = leases.get("lease").await.unwrap();
    assert_eq!(spec_of(&read), spec_of(&created));

    let spec = lease_spec("holder3", 60, 50, 70, 2);
    let patch = json!({"spec": spec});
    leases.patch("lease", &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    let read = leases.get("lease").await.unwrap();
    assert_eq!(spec_of(&read), spec);

    let lease2: Lease = serde_json::from_value(json!({"metadata": {"name": "lease2",
        "labels": {"deletecollection": "true"}}, "spec": lease_spec("holder", 30, 2, 5, 0)}))
    .unwrap();
    leases.create(&PostParams::default(), &lease2).await.unwrap();
    let listed = leases.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 2);
    leases
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("deletecollection=true"),
        )
        .await
        .unwrap();
    let listed = leases.list(&ListParams::default()).await.unwrap();
    assert_eq!(names_in(&listed.items), [("lease-test".into(), "lease".into())]);
    leases.delete("lease", &DeleteParams::default()).await.unwrap();
    let err = leases.get("lease").await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 404 && s.reason == "NotFound"),
        "{err}"
    );
    let all: Api<Lease> = Api::all(client.clone());
    all.list(&ListParams::default()).await.unwrap();
}

fn pod_template(name: &str, labels: Value, spec: Value) -> PodTemplate {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels},
        "template": {"spec": spec}}))
    .unwrap()
}

/// Upstream's "PodTemplate lifecycle", "PodTemplate, delete a collection" and "PodTemplate,
/// replace".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_templates_as_upstream() {
    let s = tokio::task::spawn_blocking(RkubeServer::start).await.unwrap();
    let client = s.kube_client().await.unwrap();
    namespace(&client, "podtemplate").await;
    let templates: Api<PodTemplate> = Api::namespaced(client.clone(), "podtemplate");
    let all: Api<PodTemplate> = Api::all(client.clone());

    // Lifecycle.
    let static_label = ListParams::default().labels("podtemplate-static=true");
    assert!(all.list(&static_label).await.unwrap().items.is_empty());
    let nginx = json!({"containers": [{"name": "nginx", "image": "nginx"}]});
    let name = "nginx-pod-template";
    let template = pod_template(name, json!({"podtemplate-static": "true"}), nginx);
    templates.create(&PostParams::default(), &template).await.unwrap();
    assert_eq!(templates.get(name).await.unwrap().metadata.name.as_deref(), Some(name));
    let patch = json!({"metadata": {"labels": {"podtemplate": "patched"}}});
    templates.patch(name, &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    let read = templates.get(name).await.unwrap();
    let labels = read.metadata.labels.unwrap();
    assert_eq!(
        (labels["podtemplate"].as_str(), labels["podtemplate-static"].as_str()),
        ("patched", "true")
    );
    templates.delete(name, &DeleteParams::default()).await.unwrap();
    assert!(all.list(&static_label).await.unwrap().items.is_empty());

    // Delete a collection.
    let names = ["test-podtemplate-1", "test-podtemplate-2", "test-podtemplate-3"];
    let agnhost = json!({"containers": [{"name": "token-test", "image": "registry.k8s.io/e2e-test-images/agnhost:2.53"}]});
    for name in names {
        let template = pod_template(name, json!({"podtemplate-set": "true"}), agnhost.clone());
        templates.create(&PostParams::default(), &template).await.unwrap();
    }
    let set = ListParams::default().labels("podtemplate-set=true");
    let listed = templates.list(&set).await.unwrap();
    let listed: Vec<_> = names_in(&listed.items).into_iter().map(|(_, n)| n).collect();
    assert_eq!(listed, names);
    templates.delete_collection(&DeleteParams::default(), &set).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !templates.list(&set).await.unwrap().items.is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "pod templates left after deletecollection"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Replace: a new annotation, PUT, kept.
    let name = "podtemplate-replace";
    let spec = json!({"terminationGracePeriodSeconds": 1,
        "containers": [{"name": "e2e-test", "image": "registry.k8s.io/e2e-test-images/agnhost:2.53"}]});
    templates.create(&PostParams::default(), &pod_template(name, json!({}), spec)).await.unwrap();
    let mut read = templates.get(name).await.unwrap();
    read.metadata.annotations = Some([("updated".to_string(), "true".to_string())].into());
    let replaced = templates.replace(name, &PostParams::default(), &read).await.unwrap();
    assert_eq!(replaced.metadata.annotations.as_ref().unwrap()["updated"], "true");
    let read = templates.get(name).await.unwrap();
    assert_eq!(read.metadata.annotations.unwrap()["updated"], "true");
    let grace = read.template.and_then(|t| t.spec).and_then(|s| s.termination_grace_period_seconds);
    assert_eq!(grace, Some(1));
}
