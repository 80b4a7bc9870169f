//! The API-only sig-network conformance cases, asserted the way the upstream e2e tests assert
//! them, on a control plane without a node: a Service's `/status` read, merge-patched and
//! replaced and the Service patched, each seen on a watch; Services removed by deletecollection
//! (and their cluster IPs and node ports released); the `kubernetes` Service found by a list
//! across namespaces; an Endpoints object created, relabelled, patched and deleted by
//! collection, seen on a watch; and the create/get/list/watch/patch/update/delete/
//! deletecollection round of EndpointSlices, Ingresses (with their `/status`) and
//! IngressClasses, after their discovery documents.

use std::time::Duration;

use futures_util::StreamExt;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    WatchEvent,
};
use rkube_conformance::cluster::{api_resource as resource, RkubeServer};
use rkube_conformance::dynamic::{
    annotations, api_error, labels, name, names, object, watch, Events,
};
use serde_json::{json, Value};

/// A control plane only: these tests need no node.
fn control_plane() -> RkubeServer {
    RkubeServer::start_with(&["--disable", "kubelet,scheduler"])
}

fn services() -> ApiResource {
    resource("", "v1", "Service", "services")
}

/// Reads `events` until one of type `kind` (ADDED, MODIFIED, DELETED) whose object passes
/// `check`, as upstream's `watchtools.Until`; fails after 20 s with every event seen.
async fn until(
    events: &mut Events,
    what: &str,
    kind: &str,
    check: impl Fn(&DynamicObject) -> bool,
) -> DynamicObject {
    let mut seen = Vec::new();
    let wait = async {
        while let Some(event) = events.next().await {
            let (event_kind, o) = match event.expect("watch event") {
                WatchEvent::Added(o) => ("ADDED", o),
                WatchEvent::Modified(o) => ("MODIFIED", o),
                WatchEvent::Deleted(o) => ("DELETED", o),
                WatchEvent::Bookmark(_) => continue,
                WatchEvent::Error(e) => panic!("{what}: watch error {e:?}"),
            };
            if event_kind == kind && check(&o) {
                return Some(o);
            }
            seen.push(format!("{event_kind} {}", serde_json::to_string(&o).unwrap_or_default()));
        }
        None
    };
    match tokio::time::timeout(Duration::from_secs(20), wait).await {
        Ok(Some(o)) => o,
        outcome => panic!(
            "{what}: no {kind} event ({}); seen:\n{}",
            if outcome.is_err() { "timed out" } else { "watch ended" },
            seen.join("\n")
        ),
    }
}

/// The `status` of an API error, or a failure if the call succeeded.
fn error_code<T: std::fmt::Debug>(result: kube::Result<T>) -> u16 {
    api_error(result).0
}

/// A merge patch of `/status` that upstream's validation refuses: 422 Invalid with `message`.
async fn refused_status_patch(api: &Api<DynamicObject>, name: &str, status: Value, message: &str) {
    let patch = json!({"status": status});
    let answer = api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await;
    let (code, reason, got) = api_error(answer);
    assert_eq!((code, reason.as_str(), got.as_str()), (422, "Invalid", message));
}

/// Upstream's "Service, complete ServiceStatus lifecycle": a LoadBalancer Service's `/status` is read,
/// merge-patched (an annotation and a loadBalancer ingress; malformed entries, and ingress
/// on a ClusterIP Service, refused as upstream's validation refuses them) and replaced (a
/// condition added),
/// then the Service itself is patched and deleted; each write is seen on a label-selected
/// watch started at a list's resourceVersion.
#[tokio::test(flavor = "multi_thread")]
async fn service_status_is_read_patched_and_updated_and_each_change_is_watched() {
    let s = control_plane();
    let client = s.kube_client().await.unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &services());
    let all: Api<DynamicObject> = Api::all_with(client, &services());
    let selector = "test-service-static=true";
    let list = all.list(&ListParams::default().labels(selector)).await.unwrap();
    let rv = list.metadata.resource_version.clone().unwrap();
    let mut events = watch(&api, selector, &rv).await;

    let svc = object(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "test-service-lifecycle", "labels": {"test-service-static": "true"}},
        // A class of its own, as upstream's: no load-balancer controller takes it.
        "spec": {"type": "LoadBalancer", "loadBalancerClass": "example.com/internal-vip",
                 "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 80}]}
    }));
    let created = api.create(&PostParams::default(), &svc).await.unwrap();
    until(&mut events, "create", "ADDED", |o| labels(o)["test-service-static"] == "true").await;

    // GET /status: the whole Service, as upstream's dynamic client reads it.
    let status = api.get_status("test-service-lifecycle").await.unwrap();
    assert_eq!(status.types.as_ref().map(|t| t.kind.as_str()), Some("Service"));
    assert_eq!(status.metadata.uid, created.metadata.uid);

    let patch = json!({"metadata": {"annotations": {"patchedstatus": "true"}},
                       "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.1"}]}}});
    let patched = api
        .patch_status("test-service-lifecycle", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    // The ingress's ipMode defaults to VIP on a LoadBalancer Service (GA in 1.32).
    assert_eq!(
        patched.data["status"]["loadBalancer"],
        json!({"ingress": [{"ip": "203.0.113.1", "ipMode": "VIP"}]})
    );
    let seen = until(&mut events, "status patch", "MODIFIED", |o| {
        annotations(o).get("patchedstatus").map(String::as_str) == Some("true")
    })
    .await;
    assert_eq!(seen.data["status"]["loadBalancer"]["ingress"][0]["ip"], "203.0.113.1");
    // A status write keeps the spec: the allocated cluster IP stays.
    assert_eq!(seen.data["spec"]["clusterIP"], created.data["spec"]["clusterIP"]);

    // Upstream's ValidateLoadBalancerStatus on status writes.
    refused_status_patch(
        &api,
        "test-service-lifecycle",
        json!({"loadBalancer": {"ingress": [{"ip": "bogus"}, {"hostname": "1.2.3.4", "ipMode": "VIP"},
            {"ip": "203.0.113.2", "ipMode": "Bogus"}]}}),
        "Service \"test-service-lifecycle\" is invalid: [\
         status.loadBalancer.ingress[0].ip: Invalid value: \"bogus\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff), \
         status.loadBalancer.ingress[1].ipMode: Forbidden: may not be specified when `ip` is not set, \
         status.loadBalancer.ingress[1].hostname: Invalid value: \"1.2.3.4\": must be a DNS name, not an IP address, \
         status.loadBalancer.ingress[2].ipMode: Unsupported value: \"Bogus\": supported values: \"Proxy\", \"VIP\"]",
    )
    .await;
    let plain = object(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "test-service-plain"}, "spec": {"ports": [{"port": 80}]}}));
    api.create(&PostParams::default(), &plain).await.unwrap();
    refused_status_patch(
        &api,
        "test-service-plain",
        json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.1"}]}}),
        "Service \"test-service-plain\" is invalid: status.loadBalancer.ingress: Forbidden: may only be used when `spec.type` is 'LoadBalancer'",
    )
    .await;

    // PUT /status with a condition appended, as client-go sends a metav1.Condition whose
    // lastTransitionTime is unset (null).
    let mut to_update = api.get("test-service-lifecycle").await.unwrap();
    to_update.data["status"]["conditions"] = json!([{
        "type": "StatusUpdate", "status": "True", "lastTransitionTime": null,
        "reason": "E2E", "message": "Set from e2e test"}]);
    let updated = api
        .replace_status("test-service-lifecycle", &PostParams::default(), &to_update)
        .await
        .unwrap();
    assert_eq!(updated.data["status"]["conditions"][0]["reason"], "E2E");
    // Go decodes the null as the zero time and writes that back as null.
    assert_eq!(
        updated.data["status"]["conditions"][0].get("lastTransitionTime"),
        Some(&Value::Null)
    );
    until(&mut events, "status update", "MODIFIED", |o| {
        let conditions = o.data["status"]["conditions"].as_array().cloned().unwrap_or_default();
        annotations(o).contains_key("patchedstatus")
            && conditions.iter().any(|c| {
                c["type"] == "StatusUpdate"
                    && c["reason"] == "E2E"
                    && c["message"] == "Set from e2e test"
            })
    })
    .await;

    // A /status write keeps the stored spec, whatever spec it carries.
    let mut spec_change = api.get("test-service-lifecycle").await.unwrap();
    spec_change.data["spec"]["ports"][0]["port"] = json!(81);
    let kept = api
        .replace_status("test-service-lifecycle", &PostParams::default(), &spec_change)
        .await
        .unwrap();
    assert_eq!(kept.data["spec"]["ports"][0]["port"], 80, "a /status write changed the spec");

    let relabel = json!({"metadata": {"labels": {"test-service": "patched"}}});
    api.patch("test-service-lifecycle", &PatchParams::default(), &Patch::Strategic(&relabel))
        .await
        .unwrap();
    until(&mut events, "service patch", "MODIFIED", |o| {
        labels(o).get("test-service").map(String::as_str) == Some("patched")
    })
    .await;

    api.delete("test-service-lifecycle", &DeleteParams::default()).await.unwrap();
    until(&mut events, "delete", "DELETED", |o| {
        name(o) == "test-service-lifecycle" && labels(o)["test-service-static"] == "true"
    })
    .await;

    // Upstream watches again from the list's resourceVersion for each step: a new watch from
    // there replays the whole history, in order (the refused writes and the /status write
    // that changed nothing left no event).
    let mut replay = watch(&api, selector, &rv).await;
    let mut kinds = Vec::new();
    let read_all = async {
        while let Some(event) = replay.next().await {
            match event.expect("watch event") {
                WatchEvent::Added(_) => kinds.push("ADDED"),
                WatchEvent::Modified(_) => kinds.push("MODIFIED"),
                WatchEvent::Deleted(_) => {
                    kinds.push("DELETED");
                    break;
                }
                WatchEvent::Bookmark(_) => {}
                WatchEvent::Error(e) => panic!("replay: watch error {e:?}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read_all).await.expect("replay in time");
    assert_eq!(kinds, ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]);
}

/// Upstream's "Service, deletes a collection of services" (three Services, deletecollection
/// by label leaves the unlabelled one), plus what the Service registry's deletion must do for
/// every object of the collection: release its cluster IP and node port for reuse. And
/// "Find Kubernetes Service in default Namespace": a list across namespaces has it.
#[tokio::test(flavor = "multi_thread")]
async fn services_are_deleted_by_collection_and_the_kubernetes_service_is_listed() {
    let s = control_plane();
    let client = s.kube_client().await.unwrap();
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &services());
    let listed = all.list(&ListParams::default()).await.unwrap();
    assert!(
        listed
            .items
            .iter()
            .any(|o| name(o) == "kubernetes" && o.metadata.namespace.as_deref() == Some("default")),
        "no default/kubernetes in a list of every namespace's Services: {:?}",
        names(&listed.items)
    );

    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &services());
    let mut allocated = Vec::new();
    for (svc, label) in [("e2e-svc-a", true), ("e2e-svc-b", true), ("e2e-svc-c", false)] {
        let labels = if label { json!({"e2e-test-service": "delete"}) } else { json!({}) };
        let created = api
            .create(
                &PostParams::default(),
                &object(json!({
                    "apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": svc, "labels": labels},
                    "spec": {"type": "NodePort", "ports": [{"port": 8000, "targetPort": 8000}]}
                })),
            )
            .await
            .unwrap();
        if label {
            let ip = created.data["spec"]["clusterIP"].as_str().unwrap().to_string();
            let node_port = created.data["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
            allocated.push((ip, node_port));
        }
    }
    let selector = ListParams::default().labels("e2e-test-service=delete");
    let before = api.list(&selector).await.unwrap();
    assert_eq!(names(&before.items), ["e2e-svc-a", "e2e-svc-b"]);

    api.delete_collection(&DeleteParams::default(), &selector).await.unwrap();
    let left = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&left.items), ["e2e-svc-c", "kubernetes"]);

    // The deleted Services' addresses are free again: a new Service may ask for each.
    for (i, (ip, node_port)) in allocated.into_iter().enumerate() {
        let again = object(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("e2e-svc-reuse-{i}")},
            "spec": {"type": "NodePort", "clusterIP": ip,
                     "ports": [{"port": 8000, "targetPort": 8000, "nodePort": node_port}]}
        }));
        let made = api.create(&PostParams::default(), &again).await;
        let made = made.unwrap_or_else(|e| {
            panic!("{ip}/{node_port} of a Service deleted by collection not released: {e}")
        });
        assert_eq!(made.data["spec"]["clusterIP"], json!(ip));
    }
}

/// Upstream's "Endpoint resource lifecycle": an Endpoints object is created (watched),
/// found by a label selector across namespaces, relabelled by an update, given another
/// address and port by a strategic patch (watched, then read back) and deleted by a
/// deletecollection with its label (watched, and gone from a list).
#[tokio::test(flavor = "multi_thread")]
async fn endpoints_are_created_relabelled_patched_and_deleted_by_collection() {
    let s = control_plane();
    let client = s.kube_client().await.unwrap();
    let endpoints = resource("", "v1", "Endpoints", "endpoints");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &endpoints);
    let all: Api<DynamicObject> = Api::all_with(client, &endpoints);
    let selector = "test-endpoint-static=true";
    let list = all.list(&ListParams::default().labels(selector)).await.unwrap();
    let mut events =
        watch(&api, selector, list.metadata.resource_version.as_deref().unwrap()).await;

    let ep = object(json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "e2e-endpoint", "labels": {"test-endpoint-static": "true"}},
        "subsets": [{"addresses": [{"ip": "10.0.0.24"}],
                     "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}]
    }));
    api.create(&PostParams::default(), &ep).await.unwrap();
    until(&mut events, "create", "ADDED", |o| name(o) == "e2e-endpoint").await;

    let found = all.list(&ListParams::default().labels(selector)).await.unwrap();
    assert_eq!(names(&found.items), ["e2e-endpoint"]);

    let mut relabelled = api.get("e2e-endpoint").await.unwrap();
    relabelled
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("test-service".into(), "updated".into());
    api.replace("e2e-endpoint", &PostParams::default(), &relabelled).await.unwrap();
    until(&mut events, "update", "MODIFIED", |o| {
        labels(o).get("test-service").map(String::as_str) == Some("updated")
    })
    .await;

    let patch = json!({
        "metadata": {"labels": {"test-service": "patched"}},
        "subsets": [{"addresses": [{"ip": "10.0.0.25"}],
                     "ports": [{"name": "http-test", "port": 8080}]}]
    });
    api.patch("e2e-endpoint", &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    until(&mut events, "patch", "MODIFIED", |o| {
        labels(o).get("test-service").map(String::as_str) == Some("patched")
    })
    .await;
    let read = api.get("e2e-endpoint").await.unwrap();
    assert_eq!(read.data["subsets"][0]["addresses"], json!([{"ip": "10.0.0.25"}]));
    // The port's protocol is defaulted (TCP) as upstream's defaulting does.
    assert_eq!(
        read.data["subsets"][0]["ports"],
        json!([{"name": "http-test", "port": 8080, "protocol": "TCP"}])
    );

    api.delete_collection(&DeleteParams::default(), &ListParams::default().labels(selector))
        .await
        .unwrap();
    until(&mut events, "deletecollection", "DELETED", |o| name(o) == "e2e-endpoint").await;
    let gone = all.list(&ListParams::default().labels(selector)).await.unwrap();
    assert!(gone.items.is_empty(), "left after deletecollection: {:?}", names(&gone.items));
}

/// The group/version's discovery document lists `resources` (and `/apis` and the group's
/// document list the version), and so does the aggregated `/apis`.
fn assert_discovered(s: &RkubeServer, group: &str, version: &str, resources: &[&str]) {
    let apis = s.curl(&[], "/apis");
    assert_eq!(apis.code, 200, "/apis: {}", apis.body);
    let apis: Value = serde_json::from_str(&apis.body).unwrap();
    let listed = apis["groups"].as_array().unwrap().iter().any(|g| {
        g["name"] == group
            && g["versions"].as_array().unwrap().iter().any(|v| v["version"] == version)
    });
    assert!(listed, "/apis lacks {group}/{version}");
    let group_doc = s.curl(&[], &format!("/apis/{group}"));
    assert_eq!(group_doc.code, 200, "/apis/{group}: {}", group_doc.body);
    let path = format!("/apis/{group}/{version}");
    let doc = s.curl(&[], &path);
    assert_eq!(doc.code, 200, "{path}: {}", doc.body);
    let doc: Value = serde_json::from_str(&doc.body).unwrap();
    for wanted in resources {
        assert!(
            doc["resources"].as_array().unwrap().iter().any(|r| r["name"] == *wanted),
            "{path} lacks {wanted}: {doc}"
        );
    }
    // The aggregated document client-go reads first (apidiscovery.k8s.io/v2).
    let accept = "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let aggregated = s.curl(&["-H", accept], "/apis");
    assert_eq!(aggregated.code, 200, "aggregated /apis: {}", aggregated.body);
    let aggregated: Value = serde_json::from_str(&aggregated.body).unwrap();
    let groups = aggregated["items"].as_array().unwrap();
    let group_doc = groups.iter().find(|g| g["metadata"]["name"] == group);
    let version_doc = group_doc
        .and_then(|g| g["versions"].as_array())
        .and_then(|vs| vs.iter().find(|v| v["version"] == version))
        .unwrap_or_else(|| panic!("aggregated /apis lacks {group}/{version}"));
    for wanted in resources {
        let (resource, sub) = wanted.split_once('/').unwrap_or((wanted, ""));
        let found = version_doc["resources"].as_array().unwrap().iter().any(|r| {
            r["resource"] == resource
                && (sub.is_empty()
                    || r["subresources"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|s| s["subresource"] == sub))
        });
        assert!(found, "aggregated /apis lacks {wanted}: {version_doc}");
    }
}

/// The round upstream's API-operations tests make on one kind: create three objects of
/// `template` (generateName, labelled), get one, list them by label in the namespace and
/// cluster-wide, watch from the list while one is patched and updated (annotations), delete
/// one, then deletecollection the rest by label. Returns the first object for more checks.
async fn crud_round(
    client: &kube::Client,
    resource: &ApiResource,
    namespaced: bool,
    template: Value,
    label: &str,
) -> (Api<DynamicObject>, Vec<String>) {
    let api: Api<DynamicObject> = if namespaced {
        Api::namespaced_with(client.clone(), "default", resource)
    } else {
        Api::all_with(client.clone(), resource)
    };
    let all: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    let selector = format!("special-label={label}");
    let mut made = Vec::new();
    for _ in 0..3 {
        let created = api.create(&PostParams::default(), &object(template.clone())).await.unwrap();
        made.push(name(&created));
    }
    let got = api.get(&made[0]).await.unwrap();
    assert!(got.metadata.uid.is_some(), "no uid: {got:?}");
    assert_eq!(labels(&got)["special-label"], label);
    let list = api.list(&ListParams::default().labels(&selector)).await.unwrap();
    assert_eq!(list.items.len(), 3, "listed in the namespace: {:?}", names(&list.items));
    let cluster = all.list(&ListParams::default().labels(&selector)).await.unwrap();
    assert_eq!(cluster.items.len(), 3, "listed cluster-wide: {:?}", names(&cluster.items));

    let rv = list.metadata.resource_version.clone().unwrap();
    let mut events = watch(&api, &selector, &rv).await;
    let patch = json!({"metadata": {"annotations": {"patched": "true"}}});
    let patched =
        api.patch(&made[0], &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(annotations(&patched)["patched"], "true");
    let mut to_update = patched.clone();
    to_update
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert("updated".into(), "true".into());
    let updated = api.replace(&made[0], &PostParams::default(), &to_update).await.unwrap();
    assert_eq!(annotations(&updated)["updated"], "true");
    until(&mut events, "patch and update", "MODIFIED", |o| {
        let a = annotations(o);
        name(o) == made[0] && a.contains_key("patched") && a.contains_key("updated")
    })
    .await;

    api.delete(&made[1], &DeleteParams::default()).await.unwrap();
    assert_eq!(error_code(api.get(&made[1]).await), 404);
    until(&mut events, "delete", "DELETED", |o| name(o) == made[1]).await;
    let list = api.list(&ListParams::default().labels(&selector)).await.unwrap();
    assert_eq!(list.items.len(), 2, "after one delete: {:?}", names(&list.items));

    api.delete_collection(&DeleteParams::default(), &ListParams::default().labels(&selector))
        .await
        .unwrap();
    let list = api.list(&ListParams::default().labels(&selector)).await.unwrap();
    assert!(list.items.is_empty(), "after deletecollection: {:?}", names(&list.items));
    (api, made)
}

/// Upstream's "EndpointSlice API" #4 (API operations): discovery.k8s.io/v1 lists
/// endpointslices, and EndpointSlices go through the create/get/list/watch/patch/update/
/// delete/deletecollection round.
#[tokio::test(flavor = "multi_thread")]
async fn endpoint_slices_are_discovered_and_go_through_every_api_operation() {
    let s = control_plane();
    assert_discovered(&s, "discovery.k8s.io", "v1", &["endpointslices"]);
    let client = s.kube_client().await.unwrap();
    let slices = resource("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices");
    let template = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"generateName": "e2e-example-ing", "labels": {"special-label": "e2e-slices"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["1.2.3.4", "5.6.7.8"]}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]
    });
    crud_round(&client, &slices, true, template, "e2e-slices").await;
}

/// Upstream's "Ingress API": networking.k8s.io/v1 lists ingresses and ingresses/status;
/// Ingresses go through the API round, and an Ingress's `/status` is merge-patched, replaced
/// and read.
#[tokio::test(flavor = "multi_thread")]
async fn ingresses_are_discovered_and_their_status_is_patched_and_updated() {
    let s = control_plane();
    assert_discovered(&s, "networking.k8s.io", "v1", &["ingresses", "ingresses/status"]);
    let client = s.kube_client().await.unwrap();
    let ingresses = resource("networking.k8s.io", "v1", "Ingress", "ingresses");
    let backend = |name: &str| json!({"service": {"name": name, "port": {"number": 8080}}});
    let template = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"generateName": "e2e-example-ing", "labels": {"special-label": "e2e-ing"}},
        "spec": {"defaultBackend": backend("default-backend"),
                 "rules": [{"host": "foo.bar.com", "http": {"paths": [
                     {"path": "/", "pathType": "Prefix", "backend": backend("test-backend")}]}}]}
    });
    let (api, _) = crud_round(&client, &ingresses, true, template.clone(), "e2e-ing").await;

    let ing = api.create(&PostParams::default(), &object(template)).await.unwrap();
    let ing_name = name(&ing);
    let patch = json!({"metadata": {"annotations": {"patchedstatus": "true"}},
                       "status": {"loadBalancer": {"ingress": [{"ip": "169.1.1.1"}]}}});
    let patched =
        api.patch_status(&ing_name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(patched.data["status"]["loadBalancer"], json!({"ingress": [{"ip": "169.1.1.1"}]}));
    assert_eq!(annotations(&patched)["patchedstatus"], "true");

    let mut to_update = api.get(&ing_name).await.unwrap();
    to_update.data["status"]["loadBalancer"] = json!({"ingress": [{"ip": "169.1.1.2"}]});
    let updated = api.replace_status(&ing_name, &PostParams::default(), &to_update).await.unwrap();
    assert_eq!(updated.data["status"]["loadBalancer"], json!({"ingress": [{"ip": "169.1.1.2"}]}));

    refused_status_patch(
        &api,
        &ing_name,
        json!({"loadBalancer": {"ingress": [{"ip": "bogus"}]}}),
        &format!("Ingress.networking.k8s.io \"{ing_name}\" is invalid: status.loadBalancer.ingress[0].ip: Invalid value: \"bogus\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"),
    )
    .await;

    let status = api.get_status(&ing_name).await.unwrap();
    assert_eq!(status.metadata.uid, ing.metadata.uid);
    assert_eq!(status.data["status"]["loadBalancer"]["ingress"][0]["ip"], "169.1.1.2");

    // A main-resource write does not change the status (upstream's status strategy split).
    let mut spec_write = api.get(&ing_name).await.unwrap();
    spec_write.data["status"]["loadBalancer"] = json!({"ingress": [{"ip": "169.1.1.9"}]});
    let written = api.replace(&ing_name, &PostParams::default(), &spec_write).await.unwrap();
    assert_eq!(written.data["status"]["loadBalancer"]["ingress"][0]["ip"], "169.1.1.2");
    api.delete(&ing_name, &DeleteParams::default()).await.unwrap();
}

/// Upstream's "IngressClass API": networking.k8s.io/v1 lists ingressclasses, and the
/// cluster-scoped IngressClasses go through the API round.
#[tokio::test(flavor = "multi_thread")]
async fn ingress_classes_are_discovered_and_go_through_every_api_operation() {
    let s = control_plane();
    assert_discovered(&s, "networking.k8s.io", "v1", &["ingressclasses"]);
    let client = s.kube_client().await.unwrap();
    let classes = resource("networking.k8s.io", "v1", "IngressClass", "ingressclasses");
    let template = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"generateName": "ingressclass-", "labels": {"special-label": "e2e-class"}},
        "spec": {"controller": "example.com/controller"}
    });
    crud_round(&client, &classes, false, template, "e2e-class").await;
}
