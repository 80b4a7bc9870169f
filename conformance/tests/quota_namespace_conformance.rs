//! Upstream's conformance tests of ResourceQuotas, Namespaces and LimitRanges, done as
//! upstream's e2e tests do them (client-go's calls, here kube-rs's, against the real `rkube
//! server` with its controllers): a quota's status written through `/status` while its spec
//! stays, and the resource quota controller putting `status.hard` back; object-count quotas
//! following the life of services, secrets, configmaps, replication controllers and replica
//! sets; BestEffort/NotBestEffort and Terminating/NotTerminating scopes choosing pods; a
//! quota's and a LimitRange's list, patch and delete-by-collection; a namespace's update,
//! patch, `/status` and `/finalize`; and a replication controller's ReplicaFailure condition
//! while a quota refuses its pods. Each test works in namespaces of its own.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{
    ConfigMap, LimitRange, Namespace, Pod, ReplicationController, ResourceQuota, Secret, Service,
};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::Client;
use rkube_apis::quantity::Quantity;
use rkube_conformance::cluster::RkubeServer;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

/// How long a wait for a controller may take (upstream allows a minute; rkube's controllers
/// react to each change).
const CONTROLLER_WAIT: Duration = Duration::from_secs(30);

/// A server with its controllers, and an admin kube-rs client of it.
async fn start() -> (RkubeServer, Client) {
    let s = tokio::task::spawn_blocking(RkubeServer::start).await.expect("server thread");
    let client = s.kube_client().await.expect("client");
    (s, client)
}

fn typed<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a typed object")
}

fn value_of<T: serde::Serialize>(obj: &T) -> Value {
    serde_json::to_value(obj).expect("JSON")
}

async fn create_namespace(client: &Client, name: &str) -> Namespace {
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &typed(json!({"metadata": {"name": name}})))
        .await
        .expect("namespace created")
}

/// Whether two resource lists (JSON maps) name the same resources with equal quantities, as
/// upstream's `quota.Equals` (so "1Gi" equals "1024Mi").
fn same_resources(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return false };
    a.len() == b.len()
        && a.iter().all(|(name, q)| {
            b.get(name).is_some_and(|other| Quantity::parse(q) == Quantity::parse(other))
        })
}

/// Whether `list` (a JSON map) holds each `(resource, quantity)` of `want`, by value.
fn holds(list: &Value, want: &[(&str, &str)]) -> bool {
    want.iter().all(|(name, q)| {
        list.get(*name).is_some_and(|got| Quantity::parse(got) == Quantity::parse(&json!(q)))
    })
}

fn resources(pairs: &[(&str, &str)]) -> Value {
    pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>().into()
}

/// Waits until the quota's `status.used` holds `want` (upstream's `waitForResourceQuota`).
async fn wait_for_used(quotas: &Api<ResourceQuota>, name: &str, want: &[(&str, &str)]) {
    let deadline = Instant::now() + CONTROLLER_WAIT;
    loop {
        let quota = value_of(&quotas.get(name).await.expect("quota"));
        if holds(&quota["status"]["used"], want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "quota {name}: status.used is not {want:?} within {CONTROLLER_WAIT:?}: {}",
            quota["status"]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Reads a watch until `done` accepts an object of one of its events (upstream's
/// `watchtools.Until`), within [`CONTROLLER_WAIT`].
async fn watch_until<K>(api: &Api<K>, labels: &str, from: &str, done: impl Fn(&Value) -> bool)
where
    K: kube::Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
    K: Send + 'static,
{
    let params = WatchParams::default().labels(labels).timeout(CONTROLLER_WAIT.as_secs() as u32);
    let mut events = api.watch(&params, from).await.expect("watch").boxed();
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + CONTROLLER_WAIT;
    loop {
        let event = tokio::time::timeout_at(deadline, events.next()).await;
        let event = event.unwrap_or_else(|_| panic!("watch: not seen within the wait: {seen:#?}"));
        let event = event.expect("watch ended").expect("watch event");
        let object = match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => value_of(&o),
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Error(e) => panic!("watch error: {e:?}"),
        };
        if done(&object) {
            return;
        }
        seen.push(object);
    }
}

/// Upstream's `retry.RetryOnConflict`: `write` again (from a fresh read) while it loses a race.
async fn retry_on_conflict<T, F, Fut>(mut write: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = kube::Result<T>>,
{
    for _ in 0..10 {
        match write().await {
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            result => return result.expect("write"),
        }
    }
    panic!("ten conflicts in a row");
}

fn not_found(result: kube::Result<impl std::fmt::Debug>, what: &str) {
    match result {
        Err(kube::Error::Api(e)) => {
            assert_eq!((e.code, e.reason.as_str()), (404, "NotFound"), "{what}: {e:?}");
        }
        other => panic!("{what}: expected NotFound, got {other:?}"),
    }
}

// --- ResourceQuota status ------------------------------------------------------------------

/// "ResourceQuota, apply changes to a ResourceQuota status": `/status` takes an update and
/// strategic-merge patches of `status.hard` (seen by a watch) and never the spec; a write
/// of the main resource never changes the status; and the resource quota controller puts
/// `status.hard` back to `spec.hard` after someone else wrote it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_status_is_written_through_its_subresource_and_the_controller_restores_it() {
    let (_s, client) = start().await;
    let ns = "rq-status";
    create_namespace(&client, ns).await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), ns);
    let name = "e2e-rq-status";
    let labels = format!("e2e-rq-label={name}");
    let listed = Api::<ResourceQuota>::all(client.clone())
        .list(&ListParams::default().labels(&labels))
        .await
        .expect("list");
    let from = listed.metadata.resource_version.clone().expect("list resourceVersion");

    let quota = typed(json!({
        "metadata": {"name": name, "labels": {"e2e-rq-label": name}},
        "spec": {"hard": {"cpu": "500m", "memory": "500Mi"}}
    }));
    quotas.create(&PostParams::default(), &quota).await.expect("quota created");
    let initial = value_of(&quotas.get(name).await.expect("quota"));
    assert!(holds(&initial["spec"]["hard"], &[("cpu", "500m"), ("memory", "500Mi")]), "{initial}");

    // An update of /status with status.hard = spec.hard.
    let hard = initial["spec"]["hard"].clone();
    let updated = retry_on_conflict(|| async {
        let mut current = value_of(&quotas.get(name).await?);
        current["status"] = json!({"hard": hard});
        quotas.replace_status(name, &PostParams::default(), &typed(current)).await
    })
    .await;
    let updated = value_of(&updated);
    assert!(same_resources(&updated["status"]["hard"], &hard), "{updated}");
    watch_until(&quotas, &labels, &from, |q| {
        q["metadata"]["name"] == name && same_resources(&q["status"]["hard"], &hard)
    })
    .await;

    // A write of the main resource changes the spec and leaves the status alone (upstream's
    // strategy takes the status from the stored object).
    let from = quotas.list(&ListParams::default().labels(&labels)).await.unwrap();
    let from = from.metadata.resource_version.unwrap();
    let patched = quotas
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"hard": {"cpu": "1", "memory": "1Gi"}},
                                     "status": {"hard": {"cpu": "7"}}})),
        )
        .await
        .expect("spec patched");
    let patched = value_of(&patched);
    let new_hard = resources(&[("cpu", "1"), ("memory", "1Gi")]);
    assert!(same_resources(&patched["spec"]["hard"], &new_hard), "{patched}");
    assert!(
        !holds(&patched["status"]["hard"], &[("cpu", "7")]),
        "status changed by the main resource: {patched}"
    );

    // A strategic-merge patch of /status with the new hard values; one that also names the
    // spec leaves the spec as it was.
    let status_patch = json!({"status": {"hard": new_hard}, "spec": {"hard": {"cpu": "9"}}});
    let patched_status = quotas
        .patch_status(name, &PatchParams::default(), &Patch::Strategic(status_patch))
        .await
        .expect("status patched");
    let patched_status = value_of(&patched_status);
    assert!(same_resources(&patched_status["spec"]["hard"], &new_hard), "{patched_status}");
    assert!(same_resources(&patched_status["status"]["hard"], &new_hard), "{patched_status}");
    watch_until(&quotas, &labels, &from, |q| {
        q["metadata"]["name"] == name && same_resources(&q["status"]["hard"], &new_hard)
    })
    .await;

    // GET /status: the whole object, with the status hard values.
    let read = value_of(&quotas.get_status(name).await.expect("GET status"));
    assert_eq!(read["kind"], "ResourceQuota", "{read}");
    assert!(holds(&read["status"]["hard"], &[("cpu", "1"), ("memory", "1Gi")]), "{read}");

    // Patch /status to values the spec does not have: taken, the spec unchanged...
    let from = quotas.list(&ListParams::default().labels(&labels)).await.unwrap();
    let from = from.metadata.resource_version.unwrap();
    let repatched = quotas
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Strategic(json!({"status": {"hard": {"cpu": "2", "memory": "2Gi"}}})),
        )
        .await
        .expect("status repatched");
    let repatched = value_of(&repatched);
    assert!(holds(&repatched["status"]["hard"], &[("cpu", "2"), ("memory", "2Gi")]), "{repatched}");
    assert!(same_resources(&repatched["spec"]["hard"], &new_hard), "{repatched}");
    watch_until(&quotas, &labels, &from, |q| {
        holds(&q["status"]["hard"], &[("cpu", "2"), ("memory", "2Gi")])
    })
    .await;

    // A status of negative hard values is refused (upstream's
    // ValidateResourceQuotaStatusUpdate).
    let negative = Patch::Strategic(json!({"status": {"hard": {"cpu": "-1"}}}));
    match quotas.patch_status(name, &PatchParams::default(), &negative).await {
        Err(kube::Error::Api(e)) => assert_eq!(
            (e.code, e.reason.as_str(), e.message.as_str()),
            (422, "Invalid", "ResourceQuota \"e2e-rq-status\" is invalid: status.hard[cpu]: Invalid value: \"-1\": must be greater than or equal to 0")
        ),
        other => panic!("a negative status.hard: {other:?}"),
    }

    // ... and the controller puts status.hard back to spec.hard.
    let deadline = Instant::now() + CONTROLLER_WAIT;
    loop {
        let q = value_of(&quotas.get(name).await.expect("quota"));
        if same_resources(&q["spec"]["hard"], &new_hard)
            && same_resources(&q["status"]["hard"], &new_hard)
        {
            break;
        }
        assert!(Instant::now() < deadline, "status.hard not reset to the spec: {q}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

// --- ResourceQuota lifecycle and LimitRange collections --------------------------------------

/// "ResourceQuota, manage lifecycle of a ResourceQuota": create, get, list across namespaces
/// by label, strategic-merge patch of a label and one hard value, delete by collection with
/// the label (only the labelled quota goes), and the deleted quota is NotFound; then
/// "ResourceQuota, update and delete" (a PUT of cpu and memory, a delete).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_is_listed_by_label_patched_and_deleted_by_collection() {
    let (_s, client) = start().await;
    let (ns, other_ns) = ("rq-life", "rq-life-other");
    create_namespace(&client, ns).await;
    create_namespace(&client, other_ns).await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), ns);
    let name = "e2e-quota-life";
    let labels = format!("e2e-rq-label={name}");
    let quota = |name: &str, label: &str| -> ResourceQuota {
        typed(json!({
            "metadata": {"name": name, "labels": {"e2e-rq-label": label}},
            "spec": {"hard": {"cpu": "1", "memory": "500Mi"}}
        }))
    };
    quotas.create(&PostParams::default(), &quota(name, name)).await.expect("quota created");
    // Not selected: another label here, and another label in another namespace.
    quotas.create(&PostParams::default(), &quota("unlabelled", "other")).await.unwrap();
    Api::<ResourceQuota>::namespaced(client.clone(), other_ns)
        .create(&PostParams::default(), &quota(name, "elsewhere"))
        .await
        .unwrap();

    let got = value_of(&quotas.get(name).await.expect("quota"));
    assert!(holds(&got["spec"]["hard"], &[("cpu", "1"), ("memory", "500Mi")]), "{got}");
    let all = Api::<ResourceQuota>::all(client.clone());
    let listed = all.list(&ListParams::default().labels(&labels)).await.expect("list");
    let found: Vec<_> = listed
        .items
        .iter()
        .map(|q| (q.metadata.namespace.clone().unwrap(), q.metadata.name.clone().unwrap()))
        .collect();
    assert_eq!(found, [(ns.to_string(), name.to_string())]);

    let payload =
        json!({"metadata": {"labels": {name: "patched"}}, "spec": {"hard": {"memory": "750Mi"}}});
    let patched = quotas
        .patch(name, &PatchParams::default(), &Patch::Strategic(payload))
        .await
        .expect("patched");
    let patched = value_of(&patched);
    assert_eq!(patched["metadata"]["labels"][name], "patched", "{patched}");
    assert_eq!(patched["metadata"]["labels"]["e2e-rq-label"], name, "{patched}");
    // A strategic merge of the hard map: memory changed, cpu kept.
    assert!(
        same_resources(&patched["spec"]["hard"], &resources(&[("cpu", "1"), ("memory", "750Mi")])),
        "{patched}"
    );

    quotas
        .delete_collection(&DeleteParams::default(), &ListParams::default().labels(&labels))
        .await
        .expect("deletecollection");
    not_found(quotas.get(name).await, "the deleted quota");
    quotas.get("unlabelled").await.expect("the unlabelled quota stays");
    Api::<ResourceQuota>::namespaced(client.clone(), other_ns)
        .get(name)
        .await
        .expect("the other namespace's quota stays");

    // "ResourceQuota, update and delete": a PUT of new cpu and memory limits, read back, then
    // a delete.
    let mut quota: ResourceQuota = typed(json!({
        "metadata": {"name": "test-quota"}, "spec": {"hard": {"cpu": "1", "memory": "500Mi"}}
    }));
    quotas.create(&PostParams::default(), &quota).await.expect("quota created");
    let hard = resources(&[("cpu", "2"), ("memory", "1Gi")]);
    quota.spec.as_mut().unwrap().hard = Some(typed(hard.clone()));
    // Without a resourceVersion, as upstream's test sends it: an unconditional update.
    let updated = quotas.replace("test-quota", &PostParams::default(), &quota).await.expect("PUT");
    assert!(same_resources(&value_of(&updated)["spec"]["hard"], &hard), "{updated:?}");
    let read = value_of(&quotas.get("test-quota").await.unwrap());
    assert!(same_resources(&read["spec"]["hard"], &hard), "{read}");
    quotas.delete("test-quota", &DeleteParams::default()).await.expect("deleted");
    not_found(quotas.get("test-quota").await, "the deleted quota");
}

/// "LimitRange, list, patch and delete a LimitRange by collection": the same LimitRange in
/// two namespaces, both found by a list across namespaces with their label; a strategic-merge
/// patch of a label and the limits (sent with the object's creationTimestamp, as upstream's
/// client does) takes and raises the resourceVersion; a delete by collection with the new
/// label in the first namespace removes that one only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_ranges_are_listed_patched_and_deleted_by_collection() {
    let (_s, client) = start().await;
    let name = "e2e-limitrange-conf";
    let (ns, other_ns) = ("lr-one", name);
    create_namespace(&client, ns).await;
    let e2e_labels = format!("e2e-test={name}");
    let patched_labels = format!("{name}=patched");
    let list = |cpu: &str, memory: &str, storage: &str| json!({"cpu": cpu, "memory": memory, "ephemeral-storage": storage});
    let limit_range: LimitRange = typed(json!({
        "metadata": {"name": name, "labels": {"e2e-test": name, name: "created"}},
        "spec": {"limits": [{
            "type": "Container",
            "min": list("50m", "100Mi", "100Gi"),
            "max": list("500m", "500Mi", "500Gi"),
            "default": list("500m", "500Mi", "500Gi"),
            "defaultRequest": list("100m", "200Mi", "200Gi"),
        }]}
    }));
    let ranges: Api<LimitRange> = Api::namespaced(client.clone(), ns);
    let created = ranges.create(&PostParams::default(), &limit_range).await.expect("created");
    create_namespace(&client, other_ns).await;
    Api::<LimitRange>::namespaced(client.clone(), other_ns)
        .create(&PostParams::default(), &limit_range)
        .await
        .expect("created in the other namespace");

    let all = Api::<LimitRange>::all(client.clone());
    let listed = all.list(&ListParams::default().labels(&e2e_labels)).await.expect("list");
    assert_eq!(listed.items.len(), 2, "{:?}", listed.items);

    let mut limits = value_of(&created)["spec"]["limits"].clone();
    let new_min = list("9m", "49Mi", "49Gi");
    limits[0]["min"] = new_min.clone();
    let payload = json!({
        "metadata": {
            "creationTimestamp": value_of(&created)["metadata"]["creationTimestamp"],
            "labels": {name: "patched"},
        },
        "spec": {"limits": limits},
    });
    let patched = ranges
        .patch(name, &PatchParams::default(), &Patch::Strategic(payload))
        .await
        .expect("patched");
    let patched_value = value_of(&patched);
    assert_eq!(patched_value["metadata"]["labels"][name], "patched", "{patched_value}");
    assert!(
        same_resources(&patched_value["spec"]["limits"][0]["min"], &new_min),
        "{patched_value}"
    );
    let version = |v: &Option<String>| v.as_deref().unwrap_or_default().parse::<u64>().unwrap();
    assert!(
        version(&patched.metadata.resource_version) > version(&created.metadata.resource_version),
        "the patch did not raise the resourceVersion"
    );

    ranges
        .delete_collection(&DeleteParams::default(), &ListParams::default().labels(&patched_labels))
        .await
        .expect("deletecollection");
    let left = ranges.list(&ListParams::default().labels(&patched_labels)).await.unwrap();
    assert!(left.items.is_empty(), "{:?}", left.items);
    let listed = all.list(&ListParams::default().labels(&e2e_labels)).await.expect("list");
    let namespaces: Vec<_> =
        listed.items.iter().map(|l| l.metadata.namespace.clone().unwrap()).collect();
    assert_eq!(namespaces, [other_ns]);
}

// --- Object count quotas ---------------------------------------------------------------------

/// Upstream's `newTestResourceQuota`: limits on every kind of resource the tests below count.
fn test_quota(name: &str, configmaps: usize, secrets: usize) -> ResourceQuota {
    typed(json!({
        "metadata": {"name": name},
        "spec": {"hard": {
            "pods": "5",
            "services": "10",
            "services.nodeports": "1",
            "services.loadbalancers": "1",
            "replicationcontrollers": "10",
            "resourcequotas": "1",
            "cpu": "1",
            "memory": "500Mi",
            "configmaps": configmaps.to_string(),
            "secrets": secrets.to_string(),
            "persistentvolumeclaims": "10",
            "requests.storage": "10Gi",
            "ephemeral-storage": "50Gi",
            "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "10",
            "gold.storageclass.storage.k8s.io/requests.storage": "10Gi",
            "count/replicasets.apps": "5",
            "requests.example.com/dongle": "3",
        }}
    }))
}

/// "ResourceQuota, object count quota, service", "secret" and "configmap", one after the
/// other under upstream's quota: each creation is counted in `status.used` (an over-quota
/// NodePort LoadBalancer and an over-quota secret and configmap are refused with upstream's
/// 403) and each deletion is given back by the resource quota controller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_count_quotas_follow_services_secrets_and_configmaps() {
    let (_s, client) = start().await;
    let ns = "rq-counts";
    create_namespace(&client, ns).await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), ns);
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    // What the namespace has of its own: the root CA's ConfigMap (once published), no secret.
    let deadline = Instant::now() + CONTROLLER_WAIT;
    while configmaps.get_opt("kube-root-ca.crt").await.unwrap().is_none() {
        assert!(Instant::now() < deadline, "kube-root-ca.crt never published");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let default_configmaps = configmaps.list(&ListParams::default()).await.unwrap().items.len();
    let default_secrets = secrets.list(&ListParams::default()).await.unwrap().items.len();
    let (cms, secs) = (default_configmaps.to_string(), default_secrets.to_string());
    let (cms_full, secs_full) =
        ((default_configmaps + 1).to_string(), (default_secrets + 1).to_string());

    let quota = "test-quota";
    quotas
        .create(
            &PostParams::default(),
            &test_quota(quota, default_configmaps + 1, default_secrets + 1),
        )
        .await
        .expect("quota created");
    wait_for_used(
        &quotas,
        quota,
        &[
            ("resourcequotas", "1"),
            ("configmaps", &cms),
            ("secrets", &secs),
            ("services", "0"),
            ("services.nodeports", "0"),
            ("replicationcontrollers", "0"),
            ("count/replicasets.apps", "0"),
        ],
    )
    .await;

    // Services: a ClusterIP and a NodePort one fit; a LoadBalancer with a node port would
    // exceed services.nodeports.
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let service = |name: &str, type_: &str| -> Service {
        let mut spec = json!({"type": type_, "ports": [{"port": 80, "targetPort": 80}]});
        if type_ == "LoadBalancer" {
            spec["allocateLoadBalancerNodePorts"] = json!(true);
        }
        typed(json!({"metadata": {"name": name}, "spec": spec}))
    };
    services.create(&PostParams::default(), &service("test-service", "ClusterIP")).await.unwrap();
    services.create(&PostParams::default(), &service("test-service-np", "NodePort")).await.unwrap();
    match services.create(&PostParams::default(), &service("test-service-lb", "LoadBalancer")).await
    {
        Err(kube::Error::Api(e)) => {
            assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"), "{e:?}");
            assert_eq!(
                e.message,
                "services \"test-service-lb\" is forbidden: exceeded quota: test-quota, requested: services.nodeports=1, used: services.nodeports=1, limited: services.nodeports=1"
            );
        }
        other => panic!("an over-quota LoadBalancer service: {other:?}"),
    }
    wait_for_used(
        &quotas,
        quota,
        &[("services", "2"), ("services.nodeports", "1"), ("services.loadbalancers", "0")],
    )
    .await;
    for name in ["test-service", "test-service-np"] {
        services.delete(name, &DeleteParams::default()).await.expect("service deleted");
    }
    wait_for_used(&quotas, quota, &[("services", "0"), ("services.nodeports", "0")]).await;

    // Secrets: one more fits, the next does not; the deleted one is given back.
    let secret = |name: &str| -> Secret {
        typed(json!({"metadata": {"name": name},
                     "data": {"data-1": "dmFsdWUtMQo=", "data-2": "dmFsdWUtMgo=", "data-3": "dmFsdWUtMwo="}}))
    };
    secrets.create(&PostParams::default(), &secret("test-secret")).await.expect("secret");
    wait_for_used(&quotas, quota, &[("secrets", &secs_full)]).await;
    match secrets.create(&PostParams::default(), &secret("over-quota")).await {
        Err(kube::Error::Api(e)) => assert_eq!(
            (e.code, e.message.as_str()),
            (403, format!("secrets \"over-quota\" is forbidden: exceeded quota: test-quota, requested: secrets=1, used: secrets={secs_full}, limited: secrets={secs_full}").as_str())
        ),
        other => panic!("an over-quota secret: {other:?}"),
    }
    secrets.delete("test-secret", &DeleteParams::default()).await.expect("secret deleted");
    wait_for_used(&quotas, quota, &[("secrets", &secs)]).await;

    // ConfigMaps, the same.
    let configmap = |name: &str| -> ConfigMap {
        typed(json!({"metadata": {"name": name}, "data": {"a": "b"}}))
    };
    configmaps.create(&PostParams::default(), &configmap("test-configmap")).await.unwrap();
    wait_for_used(&quotas, quota, &[("resourcequotas", "1"), ("configmaps", &cms_full)]).await;
    match configmaps.create(&PostParams::default(), &configmap("over-quota")).await {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 403, "{e:?}"),
        other => panic!("an over-quota configmap: {other:?}"),
    }
    configmaps.delete("test-configmap", &DeleteParams::default()).await.unwrap();
    wait_for_used(&quotas, quota, &[("configmaps", &cms)]).await;
}

/// "ResourceQuota, object count quota, replicationController" and "replicaSet": a
/// ReplicationController and a ReplicaSet of no replicas are counted (the latter as
/// `count/replicasets.apps`, a resource the controller watches only once a quota counts it)
/// and given back once deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_count_quotas_follow_replication_controllers_and_replica_sets() {
    let (_s, client) = start().await;
    let ns = "rq-controllers";
    create_namespace(&client, ns).await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), ns);
    let quota = "test-quota";
    quotas.create(&PostParams::default(), &test_quota(quota, 2, 10)).await.expect("quota created");
    wait_for_used(
        &quotas,
        quota,
        &[
            ("resourcequotas", "1"),
            ("replicationcontrollers", "0"),
            ("count/replicasets.apps", "0"),
        ],
    )
    .await;

    // A ReplicationController of no replicas, deleted in the background (as upstream).
    let rcs: Api<ReplicationController> = Api::namespaced(client.clone(), ns);
    let template = |name: &str| {
        json!({"metadata": {"labels": {"name": name}},
               "spec": {"terminationGracePeriodSeconds": 0,
                        "containers": [{"name": name, "image": "nginx"}]}})
    };
    let rc: ReplicationController = typed(json!({
        "metadata": {"name": "test-rc"},
        "spec": {"replicas": 0, "selector": {"name": "test-rc"}, "template": template("test-rc")}
    }));
    rcs.create(&PostParams::default(), &rc).await.expect("rc created");
    wait_for_used(&quotas, quota, &[("replicationcontrollers", "1")]).await;
    rcs.delete("test-rc", &DeleteParams::background()).await.expect("rc deleted");
    wait_for_used(&quotas, quota, &[("replicationcontrollers", "0")]).await;

    // A ReplicaSet, counted as count/replicasets.apps.
    let replica_sets: Api<ReplicaSet> = Api::namespaced(client.clone(), ns);
    let rs: ReplicaSet = typed(json!({
        "metadata": {"name": "test-rs"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"name": "test-rs"}},
                 "template": template("test-rs")}
    }));
    replica_sets.create(&PostParams::default(), &rs).await.expect("rs created");
    wait_for_used(&quotas, quota, &[("count/replicasets.apps", "1")]).await;
    replica_sets.delete("test-rs", &DeleteParams::default()).await.expect("rs deleted");
    wait_for_used(&quotas, quota, &[("count/replicasets.apps", "0")]).await;
}

// --- Quota scopes ------------------------------------------------------------------------------

/// Upstream's `newTestResourceQuotaWithScope`.
fn scoped_quota(name: &str, scope: &str) -> ResourceQuota {
    let mut hard = json!({"pods": "5"});
    if scope.ends_with("Terminating") {
        hard = json!({"pods": "5", "requests.cpu": "1", "requests.memory": "500Mi",
                      "limits.cpu": "2", "limits.memory": "1Gi"});
    }
    typed(json!({"metadata": {"name": name}, "spec": {"hard": hard, "scopes": [scope]}}))
}

/// A pod of one `pause` container with these requests and limits, and `extra` in its spec.
fn quota_pod(name: &str, requests: Value, limits: Value, extra: Value) -> Pod {
    let mut pod = json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": requests, "limits": limits}}]}
    });
    pod["spec"].as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
    typed(pod)
}

/// Upstream's pod of 500m/200Mi requests and 1/400Mi limits.
fn sized() -> (Value, Value) {
    (json!({"cpu": "500m", "memory": "200Mi"}), json!({"cpu": "1", "memory": "400Mi"}))
}

/// Upstream's `NewDeleteOptions(0)`.
fn now() -> DeleteParams {
    DeleteParams { grace_period_seconds: Some(0), ..DeleteParams::default() }
}

/// "ResourceQuota, quota scope, BestEffort and NotBestEffort scope": a pod without requests
/// or limits is counted by the BestEffort quota and not by the NotBestEffort one, a sized pod
/// the other way round, and each is given back when deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn best_effort_scopes_count_only_the_pods_of_their_qos() {
    let (_s, client) = start().await;
    let now = now();
    let ns = "rq-besteffort";
    create_namespace(&client, ns).await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let (best, not_best) = ("quota-besteffort", "quota-not-besteffort");
    quotas.create(&PostParams::default(), &scoped_quota(best, "BestEffort")).await.unwrap();
    wait_for_used(&quotas, best, &[("pods", "0")]).await;
    quotas.create(&PostParams::default(), &scoped_quota(not_best, "NotBestEffort")).await.unwrap();
    wait_for_used(&quotas, not_best, &[("pods", "0")]).await;

    pods.create(&PostParams::default(), &quota_pod("pfpod", json!({}), json!({}), json!({})))
        .await
        .expect("best-effort pod");
    wait_for_used(&quotas, best, &[("pods", "1")]).await;
    wait_for_used(&quotas, not_best, &[("pods", "0")]).await;
    pods.delete("pfpod", &now).await.expect("pod deleted");
    wait_for_used(&quotas, best, &[("pods", "0")]).await;

    let (requests, limits) = sized();
    pods.create(&PostParams::default(), &quota_pod("burstable-pod", requests, limits, json!({})))
        .await
        .expect("burstable pod");
    wait_for_used(&quotas, not_best, &[("pods", "1")]).await;
    wait_for_used(&quotas, best, &[("pods", "0")]).await;
    pods.delete("burstable-pod", &now).await.expect("pod deleted");
    wait_for_used(&quotas, not_best, &[("pods", "0")]).await;
}

/// "ResourceQuota, quota scope, Terminating and NotTerminating scope": a pod without
/// activeDeadlineSeconds is counted, with its requests and limits, by the NotTerminating
/// quota and not by the Terminating one, a pod with it the other way round, and each is given
/// back when deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminating_scopes_count_only_the_pods_with_their_deadline() {
    let (_s, client) = start().await;
    let now = now();
    let ns = "rq-terminating";
    create_namespace(&client, ns).await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let (term, not_term) = ("quota-terminating", "quota-not-terminating");
    quotas.create(&PostParams::default(), &scoped_quota(term, "Terminating")).await.unwrap();
    wait_for_used(&quotas, term, &[("pods", "0")]).await;
    quotas.create(&PostParams::default(), &scoped_quota(not_term, "NotTerminating")).await.unwrap();
    wait_for_used(&quotas, not_term, &[("pods", "0")]).await;
    let counted = [
        ("pods", "1"),
        ("requests.cpu", "500m"),
        ("requests.memory", "200Mi"),
        ("limits.cpu", "1"),
        ("limits.memory", "400Mi"),
    ];
    let nothing = [
        ("pods", "0"),
        ("requests.cpu", "0"),
        ("requests.memory", "0"),
        ("limits.cpu", "0"),
        ("limits.memory", "0"),
    ];

    let (requests, limits) = sized();
    pods.create(&PostParams::default(), &quota_pod("test-pod", requests, limits, json!({})))
        .await
        .expect("long-running pod");
    wait_for_used(&quotas, not_term, &counted).await;
    wait_for_used(&quotas, term, &nothing).await;
    pods.delete("test-pod", &now).await.expect("pod deleted");
    wait_for_used(&quotas, not_term, &nothing).await;

    let (requests, limits) = sized();
    let terminating =
        quota_pod("terminating-pod", requests, limits, json!({"activeDeadlineSeconds": 3600}));
    pods.create(&PostParams::default(), &terminating).await.expect("terminating pod");
    wait_for_used(&quotas, term, &counted).await;
    wait_for_used(&quotas, not_term, &nothing).await;
    pods.delete("terminating-pod", &now).await.expect("pod deleted");
    wait_for_used(&quotas, term, &nothing).await;
}

// --- Namespaces ----------------------------------------------------------------------------------

/// "Namespace, apply update to a namespace", "Namespace patching", "Namespace, apply changes
/// to a namespace status" and "Namespace, apply finalizer to a namespace": an update of a
/// label, a strategic-merge patch of a label (a higher resourceVersion, read back), `/status`
/// read (Active), merge-patched (a condition and an annotation) and updated (a second
/// condition), and a spec finalizer added and removed through `/finalize` (which an update of
/// the namespace itself cannot do).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_take_updates_patches_status_and_finalizers() {
    let (_s, client) = start().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());

    // Update: a label.
    let ns = "ns-update";
    create_namespace(&client, ns).await;
    let updated = retry_on_conflict(|| async {
        let mut current = namespaces.get(ns).await?;
        current
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(ns.into(), "updated".into());
        namespaces.replace(ns, &PostParams::default(), &current).await
    })
    .await;
    assert_eq!(updated.metadata.labels.unwrap().get(ns).map(String::as_str), Some("updated"));

    // Patch: a label, with a higher resourceVersion.
    let ns = "nspatchtest";
    let created = create_namespace(&client, ns).await;
    let patched = namespaces
        .patch(
            ns,
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"testLabel": "testValue"}}})),
        )
        .await
        .expect("namespace patched");
    let version = |v: &Option<String>| v.as_deref().unwrap_or_default().parse::<u64>().unwrap();
    assert!(
        version(&patched.metadata.resource_version) > version(&created.metadata.resource_version)
    );
    let read = value_of(&namespaces.get(ns).await.unwrap());
    assert_eq!(read["metadata"]["labels"]["testLabel"], "testValue", "{read}");

    // Status: read, patched, updated.
    let ns = "ns-status";
    create_namespace(&client, ns).await;
    let status = value_of(&namespaces.get_status(ns).await.expect("GET status"));
    assert_eq!(status["status"]["phase"], "Active", "{status}");
    let condition = json!({"type": "StatusPatch", "status": "True", "reason": "E2E",
                           "message": "Patched by an e2e test"});
    let patch = json!({"metadata": {"annotations": {"e2e-patched-ns-status": ns}},
                       "status": {"conditions": [condition]}});
    let patched = namespaces
        .patch_status(ns, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("status patched");
    let patched = value_of(&patched);
    assert_eq!(patched["metadata"]["annotations"]["e2e-patched-ns-status"], ns, "{patched}");
    let conditions = patched["status"]["conditions"].as_array().expect("conditions");
    let last = conditions.last().unwrap();
    assert_eq!(
        (&last["reason"], &last["message"]),
        (&json!("E2E"), &json!("Patched by an e2e test"))
    );
    let updated = retry_on_conflict(|| async {
        let mut current = value_of(&namespaces.get_status(ns).await?);
        current["status"]["conditions"].as_array_mut().unwrap().push(json!({
            "type": "StatusUpdate", "status": "True", "reason": "E2E",
            "message": "Updated by an e2e test"
        }));
        namespaces.replace_status(ns, &PostParams::default(), &typed(current)).await
    })
    .await;
    let updated = value_of(&updated);
    let types: Vec<_> = updated["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(types, ["StatusPatch", "StatusUpdate"], "{updated}");
    let last = updated["status"]["conditions"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["message"], "Updated by an e2e test");
    assert_eq!(updated["status"]["phase"], "Active", "{updated}");
    // A live namespace's phase is Active (upstream's ValidateNamespaceStatusUpdate).
    let terminating = Patch::Merge(json!({"status": {"phase": "Terminating"}}));
    match namespaces.patch_status(ns, &PatchParams::default(), &terminating).await {
        Err(kube::Error::Api(e)) => assert_eq!(
            (e.code, e.reason.as_str(), e.message.as_str()),
            (422, "Invalid", "Namespace \"ns-status\" is invalid: status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty")
        ),
        other => panic!("a live namespace's status Terminating: {other:?}"),
    }
    // A patch of the namespace itself leaves its status alone.
    let ignored = namespaces
        .patch(
            ns,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Terminating", "conditions": null}})),
        )
        .await
        .expect("namespace patched");
    let ignored = value_of(&ignored);
    assert_eq!(ignored["status"]["phase"], "Active", "{ignored}");
    assert_eq!(ignored["status"]["conditions"].as_array().map(Vec::len), Some(2), "{ignored}");

    // Finalize: a fake finalizer added and removed.
    let ns = "e2e-ns-finalize";
    let created = create_namespace(&client, ns).await;
    assert_eq!(value_of(&created)["spec"]["finalizers"], json!(["kubernetes"]), "{created:?}");
    let fake = "e2e.example.com/fakeFinalizer";
    let finalizers = |n: &Value| -> Vec<String> {
        n["spec"]["finalizers"]
            .as_array()
            .map(|a| a.iter().map(|f| f.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    // An update of the namespace itself leaves spec.finalizers alone.
    let mut current = value_of(&namespaces.get(ns).await.unwrap());
    current["spec"]["finalizers"] = json!(["kubernetes", fake]);
    let replaced = namespaces.replace(ns, &PostParams::default(), &typed(current)).await.unwrap();
    assert_eq!(finalizers(&value_of(&replaced)), ["kubernetes"]);
    // /finalize validates the names as upstream: one without a domain must be a standard one.
    let mut current = value_of(&namespaces.get(ns).await.unwrap());
    current["spec"]["finalizers"] = json!(["kubernetes", "fakefinalizer"]);
    match namespaces.replace_subresource("finalize", ns, &PostParams::default(), &current).await {
        Err(kube::Error::Api(e)) => assert_eq!(
            (e.code, e.reason.as_str(), e.message.as_str()),
            (422, "Invalid", "Namespace \"e2e-ns-finalize\" is invalid: spec.finalizers[1]: Invalid value: \"fakefinalizer\": name is neither a standard finalizer name nor is it fully qualified")
        ),
        other => panic!("an unqualified finalizer: {other:?}"),
    }
    let added = retry_on_conflict(|| async {
        let mut current = value_of(&namespaces.get(ns).await?);
        current["spec"]["finalizers"].as_array_mut().unwrap().push(json!(fake));
        namespaces.replace_subresource("finalize", ns, &PostParams::default(), &current).await
    })
    .await;
    assert_eq!(finalizers(&value_of(&added)), ["kubernetes", fake]);
    assert_eq!(finalizers(&value_of(&namespaces.get(ns).await.unwrap())), ["kubernetes", fake]);
    let removed = retry_on_conflict(|| async {
        let mut current = value_of(&namespaces.get(ns).await?);
        current["spec"]["finalizers"] =
            json!(finalizers(&current).into_iter().filter(|f| f != fake).collect::<Vec<_>>());
        namespaces.replace_subresource("finalize", ns, &PostParams::default(), &current).await
    })
    .await;
    assert_eq!(finalizers(&value_of(&removed)), ["kubernetes"]);
    assert_eq!(finalizers(&value_of(&namespaces.get(ns).await.unwrap())), ["kubernetes"]);
}

// --- A replication controller over quota -------------------------------------------------------

/// "Replication Controller, check for issues like exceeding allocated quota": under a quota
/// of two pods, a ReplicationController of three gets the ReplicaFailure condition (reason
/// FailedCreate, the quota's refusal as its message) once its controller observed it, and
/// loses it once scaled down to two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replication_controller_over_quota_reports_replica_failure_until_scaled_down() {
    let (_s, client) = start().await;
    let ns = "rc-quota";
    create_namespace(&client, ns).await;
    let name = "condition-test";
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), ns);
    let quota = typed(json!({"metadata": {"name": name}, "spec": {"hard": {"pods": "2"}}}));
    quotas.create(&PostParams::default(), &quota).await.expect("quota created");
    let deadline = Instant::now() + CONTROLLER_WAIT;
    while !holds(&value_of(&quotas.get(name).await.unwrap())["status"]["hard"], &[("pods", "2")]) {
        assert!(Instant::now() < deadline, "resource quota {name} never synced");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let rcs: Api<ReplicationController> = Api::namespaced(client.clone(), ns);
    let rc: ReplicationController = typed(json!({
        "metadata": {"name": name},
        "spec": {"replicas": 3, "selector": {"name": name},
                 "template": {"metadata": {"labels": {"name": name}},
                              "spec": {"containers": [{"name": "httpd", "image": "httpd"}]}}}
    }));
    let created = rcs.create(&PostParams::default(), &rc).await.expect("rc created");
    // The condition, once the controller has seen this generation.
    let failure = |rc: &Value| {
        rc["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "ReplicaFailure").cloned())
    };
    let observed = |rc: &Value, generation: i64| {
        rc["status"]["observedGeneration"].as_i64().unwrap_or(0) >= generation
    };
    let generation = created.metadata.generation.unwrap_or(0);
    let deadline = Instant::now() + CONTROLLER_WAIT;
    let condition = loop {
        let rc = value_of(&rcs.get(name).await.unwrap());
        if let Some(condition) = failure(&rc).filter(|_| observed(&rc, generation)) {
            break condition;
        }
        assert!(Instant::now() < deadline, "no ReplicaFailure condition: {}", rc["status"]);
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        (&condition["status"], &condition["reason"]),
        (&json!("True"), &json!("FailedCreate"))
    );
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!("pods \"{name}-"))
            && message.ends_with(&format!(
                "\" is forbidden: exceeded quota: {name}, requested: pods=1, used: pods=2, limited: pods=2"
            )),
        "{condition}"
    );

    let scaled = retry_on_conflict(|| async {
        let mut rc = rcs.get(name).await?;
        rc.spec.as_mut().unwrap().replicas = Some(2);
        rcs.replace(name, &PostParams::default(), &rc).await
    })
    .await;
    let generation = scaled.metadata.generation.unwrap_or(0);
    let deadline = Instant::now() + CONTROLLER_WAIT;
    loop {
        let rc = value_of(&rcs.get(name).await.unwrap());
        if observed(&rc, generation) && failure(&rc).is_none() {
            break;
        }
        assert!(Instant::now() < deadline, "the ReplicaFailure condition stays: {}", rc["status"]);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// "ResourceQuota, object count quota, pod", as upstream: under upstream's quota a pod
/// requesting cpu, memory, ephemeral storage and an extended resource is charged for each;
/// a pod over the cpu left and one over the extended resource (and ephemeral storage) left
/// are refused with upstream's messages; the pod's
/// resources cannot be updated (and the usage stays); its deletion gives everything back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_is_charged_for_compute_storage_and_extended_resources() {
    let (_s, client) = start().await;
    let ns = "rq-pod";
    create_namespace(&client, ns).await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let quota = "test-quota";
    quotas.create(&PostParams::default(), &test_quota(quota, 2, 10)).await.expect("quota created");
    wait_for_used(&quotas, quota, &[("resourcequotas", "1"), ("pods", "0")]).await;

    let requests = json!({"cpu": "500m", "memory": "252Mi", "ephemeral-storage": "30Gi",
                          "example.com/dongle": "2"});
    let limits = json!({"example.com/dongle": "2"});
    let pod = quota_pod("test-pod", requests, limits.clone(), json!({}));
    pods.create(&PostParams::default(), &pod).await.expect("pod that fits");
    let charged = [
        ("resourcequotas", "1"),
        ("pods", "1"),
        ("cpu", "500m"),
        ("memory", "252Mi"),
        ("ephemeral-storage", "30Gi"),
        ("requests.example.com/dongle", "2"),
    ];
    wait_for_used(&quotas, quota, &charged).await;

    let refused = |result: kube::Result<Pod>, what: &str, exceeded: &str| match result {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 403, "{what}: {e:?}");
            assert!(e.message.contains(exceeded), "{what}: {}", e.message);
        }
        other => panic!("{what}: {other:?}"),
    };
    let over_cpu =
        quota_pod("fail-pod", json!({"cpu": "600m", "memory": "100Mi"}), json!({}), json!({}));
    refused(
        pods.create(&PostParams::default(), &over_cpu).await,
        "a pod over the cpu left",
        "exceeded quota: test-quota, requested: cpu=600m, used: cpu=500m, limited: cpu=1",
    );
    let over_dongle = quota_pod(
        "fail-pod-for-extended-resource",
        json!({"cpu": "500m", "memory": "100Mi", "ephemeral-storage": "30Gi",
               "example.com/dongle": "2"}),
        limits,
        json!({}),
    );
    refused(
        pods.create(&PostParams::default(), &over_dongle).await,
        "a pod over the extended resource left",
        "exceeded quota: test-quota, requested: ephemeral-storage=30Gi,requests.example.com/dongle=2, used: ephemeral-storage=30Gi,requests.example.com/dongle=2, limited: ephemeral-storage=50Gi,requests.example.com/dongle=3",
    );

    // A pod's resources are fixed (through the pod itself).
    let mut current = pods.get("test-pod").await.unwrap();
    current.spec.as_mut().unwrap().containers[0].resources = Some(typed(json!({
        "requests": {"cpu": "100m", "memory": "100Mi", "ephemeral-storage": "10Gi"}
    })));
    match pods.replace("test-pod", &PostParams::default(), &current).await {
        Err(kube::Error::Api(e)) => {
            assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{e:?}")
        }
        other => panic!("a pod's resources updated: {other:?}"),
    }
    wait_for_used(&quotas, quota, &charged).await;

    pods.delete("test-pod", &now()).await.expect("pod deleted");
    wait_for_used(
        &quotas,
        quota,
        &[
            ("resourcequotas", "1"),
            ("pods", "0"),
            ("cpu", "0"),
            ("memory", "0"),
            ("ephemeral-storage", "0"),
            ("requests.example.com/dongle", "0"),
        ],
    )
    .await;
}
