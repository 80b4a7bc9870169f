//! The API-only sig-storage and sig-node conformance cases, asserted the way the upstream e2e
//! tests assert them, on a control plane without a node: the lifecycles of CSIDrivers,
//! CSINodes, StorageClasses and VolumeAttachments (with a VolumeAttachment's `/status`), of
//! PersistentVolumes and their claims (with both `/status`es), the API rounds of
//! CSIStorageCapacities and RuntimeClasses (discovery, a watch with no resourceVersion, every
//! verb), an immutable Secret and ConfigMap, and a Node made through the API; then the same
//! kinds created and updated in protobuf, as upstream's clientset sends them. Each step checks
//! what the upstream test checks, plus the error Statuses (code, reason, message) of what must
//! fail.

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::Method;
use k8s_pb::api::core::v1 as core_pb;
use k8s_pb::api::node::v1 as node_pb;
use k8s_pb::api::storage::v1 as storage_pb;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    WatchEvent,
};
use prost::Message;
use rkube_conformance::cluster::{api_resource as resource, RkubeServer};
use rkube_conformance::dynamic::{
    annotations, api_error, labels, name, names, object, watch, Events,
};
use rkube_conformance::h2::H2Client;
use serde_json::{json, Value};

/// A control plane only: these tests need no node (the controllers run: the volume binder
/// acts on the claims).
fn control_plane() -> RkubeServer {
    RkubeServer::start_with(&["--disable", "kubelet,scheduler"])
}

fn storage(kind: &str, plural: &str) -> ApiResource {
    resource("storage.k8s.io", "v1", kind, plural)
}

fn rv(o: &DynamicObject) -> u64 {
    o.metadata.resource_version.as_deref().unwrap_or_default().parse().expect("a numeric RV")
}

/// A short random suffix of lowercase letters and digits, as upstream's `utilrand.String`.
fn suffix(len: usize) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    hasher.write_u128(now.unwrap_or_default().as_nanos());
    let mut n = hasher.finish();
    let alphabet = b"bcdfghjklmnpqrstvwxz2456789";
    (0..len)
        .map(|_| {
            let c = alphabet[(n % alphabet.len() as u64) as usize] as char;
            n /= alphabet.len() as u64;
            c
        })
        .collect()
}

/// A fresh namespace (generateName), as upstream's framework makes one per test.
async fn fresh_namespace(client: &kube::Client, base: &str) -> String {
    let api: Api<DynamicObject> =
        Api::all_with(client.clone(), &resource("", "v1", "Namespace", "namespaces"));
    let ns = object(json!({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"generateName": format!("{base}-")}}));
    name(&api.create(&PostParams::default(), &ns).await.expect("a namespace"))
}

/// The next `n` events (bookmarks skipped) as (type, object); fails after 20 s.
async fn next_events(events: &mut Events, what: &str, n: usize) -> Vec<(String, DynamicObject)> {
    let mut seen = Vec::new();
    let read = async {
        while seen.len() < n {
            let Some(event) = events.next().await else { break };
            let (kind, o) = match event.expect("watch event") {
                WatchEvent::Added(o) => ("ADDED", o),
                WatchEvent::Modified(o) => ("MODIFIED", o),
                WatchEvent::Deleted(o) => ("DELETED", o),
                WatchEvent::Bookmark(_) => continue,
                WatchEvent::Error(e) => panic!("{what}: watch error {e:?}"),
            };
            seen.push((kind.to_string(), o));
        }
    };
    let timed_out = tokio::time::timeout(Duration::from_secs(20), read).await.is_err();
    let summary: Vec<String> = seen.iter().map(|(k, o)| format!("{k} {}", name(o))).collect();
    assert!(!timed_out && seen.len() == n, "{what}: {n} events wanted, saw {summary:?}");
    seen
}

/// `result` is upstream's NotFound for `resource` (e.g. `csidrivers.storage.k8s.io`) `name`.
fn assert_not_found<T: std::fmt::Debug>(result: kube::Result<T>, resource: &str, name: &str) {
    let (code, reason, message) = api_error(result);
    assert_eq!(
        (code, reason.as_str(), message),
        (404, "NotFound", format!("{resource} \"{name}\" not found"))
    );
}

/// `result` is upstream's AlreadyExists for `resource` `name`.
fn assert_already_exists<T: std::fmt::Debug>(result: kube::Result<T>, resource: &str, name: &str) {
    let (code, reason, message) = api_error(result);
    assert_eq!(
        (code, reason.as_str(), message),
        (409, "AlreadyExists", format!("{resource} \"{name}\" already exists"))
    );
}

/// `result` is upstream's 422 Invalid with `message`.
fn assert_invalid<T: std::fmt::Debug>(result: kube::Result<T>, message: &str) {
    let (code, reason, got) = api_error(result);
    assert_eq!((code, reason.as_str(), got.as_str()), (422, "Invalid", message));
}

/// The objects `api` lists with `selector`, by name.
async fn listed(api: &Api<DynamicObject>, selector: &str) -> Vec<String> {
    names(&api.list(&ListParams::default().labels(selector)).await.expect("list").items)
}

/// Sets label `key=value` by a get and a replace, again on a conflict (controllers write some
/// of these objects too), as upstream's update with RetryOnConflict. `only` replaces every
/// label.
async fn relabel(api: &Api<DynamicObject>, name: &str, key: &str, value: &str, only: bool) {
    for _ in 0..10 {
        let mut current = api.get(name).await.expect("get before update");
        let labels = current.metadata.labels.get_or_insert_with(Default::default);
        if only {
            labels.clear();
        }
        labels.insert(key.into(), value.into());
        match api.replace(name, &PostParams::default(), &current).await {
            Ok(updated) => {
                assert_eq!(self::labels(&updated).get(key).map(String::as_str), Some(value));
                assert!(rv(&updated) > rv(&current), "an update kept the resourceVersion");
                return;
            }
            Err(kube::Error::Api(e)) if e.code == 409 && e.reason == "Conflict" => continue,
            Err(e) => panic!("update of {name}: {e}"),
        }
    }
    panic!("{name} not updated within 10 tries");
}

/// A strategic merge patch of label `key=value`, as upstream's lifecycle tests send it; the
/// patched object has the label and a larger resourceVersion.
async fn patch_label(api: &Api<DynamicObject>, before: &DynamicObject, key: &str, value: &str) {
    let patch = json!({"metadata": {"labels": {key: value}}});
    let patched = api
        .patch(&name(before), &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .expect("strategic patch");
    assert_eq!(labels(&patched).get(key).map(String::as_str), Some(value));
    assert!(rv(&patched) > rv(before), "patched object should have a larger resource version");
}

/// Upstream's "CSIDriver, lifecycle", "CSINode, lifecycle" and "StorageClass, lifecycle":
/// each cluster-scoped kind is created (a second create of the same name refused with
/// AlreadyExists), read, labelled by a strategic patch and by an update, listed by label,
/// deleted (then NotFound) and deleted by collection with a label selector that leaves the
/// other objects. What upstream's validation keeps fixed is refused with its Status.
#[tokio::test(flavor = "multi_thread")]
async fn csi_drivers_csi_nodes_and_storage_classes_go_through_their_lifecycles() {
    let s = control_plane();
    let client = s.kube_client().await.unwrap();

    // CSIDriver: two drivers, the first Ephemeral only, the second both modes.
    let drivers: Api<DynamicObject> =
        Api::all_with(client.clone(), &storage("CSIDriver", "csidrivers"));
    let unique = format!("csiinlinevolumes-{}", suffix(5));
    let selector = format!("e2e-test={unique}");
    let driver = |modes: Value| {
        object(json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": format!("inline-driver-{}", suffix(12)), "labels": {"e2e-test": unique}},
            "spec": {"volumeLifecycleModes": modes, "fsGroupPolicy": "ReadWriteOnceWithFSType"}}))
    };
    let (d1, d2) = (driver(json!(["Ephemeral"])), driver(json!(["Persistent", "Ephemeral"])));
    let created1 = drivers.create(&PostParams::default(), &d1).await.unwrap();
    let created2 = drivers.create(&PostParams::default(), &d2).await.unwrap();
    let (n1, n2) = (name(&created1), name(&created2));
    assert_already_exists(
        drivers.create(&PostParams::default(), &d1).await,
        "csidrivers.storage.k8s.io",
        &n1,
    );
    // Upstream's defaults: attachRequired and storageCapacity, podInfoOnMount, requiresRepublish
    // and seLinuxMount.
    assert_eq!(
        created2.data["spec"],
        json!({"attachRequired": true, "podInfoOnMount": false,
               "volumeLifecycleModes": ["Persistent", "Ephemeral"], "storageCapacity": false,
               "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": false,
               "seLinuxMount": false})
    );
    assert_eq!(drivers.get(&n1).await.unwrap().metadata.uid, created1.metadata.uid);
    let got2 = drivers.get(&n2).await.unwrap();
    assert_eq!(got2.metadata.uid, created2.metadata.uid);
    patch_label(&drivers, &got2, &n2, "patched").await;
    relabel(&drivers, &n2, &n2, "updated", false).await;
    assert_eq!(listed(&drivers, &selector).await, names(&[created1.clone(), created2.clone()]));
    // attachRequired and volumeLifecycleModes are immutable (upstream's error names the first
    // `spec.attachedRequired`).
    let mut changed = drivers.get(&n2).await.unwrap();
    changed.data["spec"]["attachRequired"] = json!(false);
    changed.data["spec"]["volumeLifecycleModes"] = json!(["Ephemeral"]);
    assert_invalid(
        drivers.replace(&n2, &PostParams::default(), &changed).await,
        &format!("CSIDriver.storage.k8s.io \"{n2}\" is invalid: [spec.attachedRequired: Invalid value: false: field is immutable, spec.volumeLifecycleModes: Invalid value: []storage.VolumeLifecycleMode{{\"Ephemeral\"}}: field is immutable]"),
    );
    drivers.delete(&n1, &DeleteParams::default()).await.unwrap();
    assert_not_found(drivers.get(&n1).await, "csidrivers.storage.k8s.io", &n1);
    drivers
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(&format!("{n2}=updated")),
        )
        .await
        .unwrap();
    assert_not_found(drivers.get(&n2).await, "csidrivers.storage.k8s.io", &n2);
    assert!(listed(&drivers, &selector).await.is_empty());

    // CSINode: client-go sends `drivers: null` for an empty spec.
    let nodes: Api<DynamicObject> = Api::all_with(client.clone(), &storage("CSINode", "csinodes"));
    let csinode = |n: &str| {
        object(json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                      "metadata": {"name": n, "creationTimestamp": null}, "spec": {"drivers": null}}))
    };
    let first = format!("e2e-csinode-{}", suffix(5));
    let made = nodes.create(&PostParams::default(), &csinode(&first)).await.unwrap();
    assert_eq!(made.data["spec"], json!({"drivers": null}));
    let got = nodes.get(&first).await.unwrap();
    assert_eq!(name(&got), first);
    patch_label(&nodes, &got, &first, "patched").await;
    assert_eq!(listed(&nodes, &format!("{first}=patched")).await, [first.as_str()]);
    nodes.delete(&first, &DeleteParams::default()).await.unwrap();
    assert!(listed(&nodes, &format!("{first}=patched")).await.is_empty());
    assert_not_found(nodes.get(&first).await, "csinodes.storage.k8s.io", &first);
    let second = format!("e2e-csinode-{}", suffix(6));
    nodes.create(&PostParams::default(), &csinode(&second)).await.unwrap();
    assert_eq!(name(&nodes.get(&second).await.unwrap()), second);
    relabel(&nodes, &second, &second, "updated", true).await;
    // A driver's nodeID may not change (upstream's ValidateCSINodeUpdate); drivers may be added.
    let driver_entry = json!({"name": "e2e.example.com", "nodeID": "node-1", "topologyKeys": null});
    let patch = json!({"spec": {"drivers": [driver_entry]}});
    let with_driver =
        nodes.patch(&second, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(with_driver.data["spec"]["drivers"][0]["nodeID"], "node-1");
    let patch = json!({"spec": {"drivers": [{"name": "e2e.example.com", "nodeID": "node-2"}]}});
    assert_invalid(
        nodes.patch(&second, &PatchParams::default(), &Patch::Merge(&patch)).await,
        &format!("CSINode.storage.k8s.io \"{second}\" is invalid: spec.drivers: Invalid value: storage.CSINodeDriver{{Name:\"e2e.example.com\", NodeID:\"node-2\", TopologyKeys:[]string(nil), Allocatable:(*storage.VolumeNodeResources)(nil)}}: field is immutable"),
    );
    nodes
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(&format!("{second}=updated")),
        )
        .await
        .unwrap();
    assert!(listed(&nodes, &format!("{second}=updated")).await.is_empty());
    assert_not_found(nodes.get(&second).await, "csinodes.storage.k8s.io", &second);

    // StorageClass: generated names, a replacement after the delete.
    let classes: Api<DynamicObject> =
        Api::all_with(client.clone(), &storage("StorageClass", "storageclasses"));
    let class = |prefix: &str| {
        object(json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                      "metadata": {"generateName": prefix}, "provisioner": "e2e-fake-provisioner"}))
    };
    let made = classes.create(&PostParams::default(), &class("e2e-")).await.unwrap();
    let first = name(&made);
    assert!(first.starts_with("e2e-") && first.len() == "e2e-".len() + 5, "{first}");
    // Upstream's defaults.
    assert_eq!(made.data["reclaimPolicy"], "Delete");
    assert_eq!(made.data["volumeBindingMode"], "Immediate");
    let got = classes.get(&first).await.unwrap();
    patch_label(&classes, &got, &first, "patched").await;
    classes.delete(&first, &DeleteParams::default()).await.unwrap();
    assert!(listed(&classes, &format!("{first}=patched")).await.is_empty());
    let replacement = classes.create(&PostParams::default(), &class("e2e-v2-")).await.unwrap();
    let second = name(&replacement);
    relabel(&classes, &second, &second, "updated", true).await;
    assert_eq!(listed(&classes, &format!("{second}=updated")).await, [second.as_str()]);
    let mut changed = classes.get(&second).await.unwrap();
    changed.data["parameters"] = json!({"type": "fast"});
    changed.data["provisioner"] = json!("other-provisioner");
    assert_invalid(
        classes.replace(&second, &PostParams::default(), &changed).await,
        &format!("StorageClass.storage.k8s.io \"{second}\" is invalid: [parameters: Forbidden: updates to parameters are forbidden., provisioner: Forbidden: updates to provisioner are forbidden.]"),
    );
    classes
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(&format!("{second}=updated")),
        )
        .await
        .unwrap();
    assert!(listed(&classes, &format!("{second}=updated")).await.is_empty());
    assert_not_found(classes.get(&second).await, "storageclasses.storage.k8s.io", &second);
}

/// A VolumeAttachment as upstream's `NewVolumeAttachment` makes it: the client sets the uid
/// (the server replaces it) and a status (the server resets it on create).
fn volume_attachment(node: &str, attached: bool) -> (String, DynamicObject) {
    let id = format!("e2e-{}", suffix(5));
    let va = format!("va-{id}");
    let obj = object(json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
        "metadata": {"name": va, "uid": va, "creationTimestamp": null},
        "spec": {"attacher": "e2e-test.storage.k8s.io", "nodeName": node,
                 "source": {"persistentVolumeName": format!("pv-{id}")}},
        "status": {"attached": attached}}));
    (va, obj)
}

/// Upstream's "VolumeAttachment, lifecycle" and "VolumeAttachment, apply changes to a
/// volumeattachment status": VolumeAttachments are created (uid and status from the server),
/// read, labelled by a merge patch and by updates, listed by label, deleted and deleted by
/// collection; a VolumeAttachment's `/status` is read, merge-patched (attached) and replaced
/// (detached), each status write leaving the spec and metadata, each main write leaving the
/// status, and a spec change refused as upstream's validation refuses it.
#[tokio::test(flavor = "multi_thread")]
async fn volume_attachments_go_through_their_lifecycle_and_status_writes() {
    let s = control_plane();
    let client = s.kube_client().await.unwrap();
    let api: Api<DynamicObject> =
        Api::all_with(client.clone(), &storage("VolumeAttachment", "volumeattachments"));
    // Upstream picks a node of the cluster; the attachment does not need it to exist.
    let node = "e2e-fake-node";

    // Lifecycle.
    let (first, va) = volume_attachment(node, true);
    let created = api.create(&PostParams::default(), &va).await.unwrap();
    assert_eq!(name(&created), first);
    assert_ne!(created.metadata.uid.as_deref(), Some(first.as_str()), "the client's uid was kept");
    assert_eq!(created.data["status"], json!({"attached": false}), "status kept on create");
    let got = api.get(&first).await.unwrap();
    assert_eq!(name(&got), first);
    let patch = json!({"metadata": {"labels": {first.as_str(): "patched"}}});
    let patched = api.patch(&first, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(labels(&patched)[&first], "patched");
    let patched_selector = format!("{first}=patched");
    assert_eq!(listed(&api, &patched_selector).await, [first.as_str()]);
    api.delete(&first, &DeleteParams::default()).await.unwrap();
    assert!(listed(&api, &patched_selector).await.is_empty());
    assert_not_found(api.get(&first).await, "volumeattachments.storage.k8s.io", &first);

    let mut updated = Vec::new();
    for _ in 0..2 {
        let (va_name, va) = volume_attachment(node, false);
        api.create(&PostParams::default(), &va).await.unwrap();
        relabel(&api, &va_name, "va-e2e", "updated", true).await;
        updated.push(va_name);
    }
    updated.sort();
    let (kept, va) = volume_attachment(node, false);
    api.create(&PostParams::default(), &va).await.unwrap();
    assert_eq!(listed(&api, "va-e2e=updated").await, updated);
    api.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("va-e2e=updated"),
    )
    .await
    .unwrap();
    assert!(listed(&api, "va-e2e=updated").await.is_empty());
    assert_eq!(listed(&api, "").await, [kept.as_str()], "deletecollection went past its selector");
    api.delete(&kept, &DeleteParams::default()).await.unwrap();

    // Status.
    let (va_name, va) = volume_attachment(node, false);
    api.create(&PostParams::default(), &va).await.unwrap();
    let patch = json!({"metadata": {"labels": {va_name.as_str(): "patched"}}});
    api.patch(&va_name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    let status = api.get_status(&va_name).await.unwrap();
    assert_eq!(status.types.as_ref().map(|t| t.kind.as_str()), Some("VolumeAttachment"));
    assert_eq!(status.data["status"]["attached"], false);
    // The metadata a /status write carries is not taken (upstream's ResetObjectMetaForStatus).
    let patch = json!({"metadata": {"labels": {"status-write": "true"}, "annotations": {"a": "b"},
                                    "finalizers": ["example.com/f"]},
                       "status": {"attached": true}});
    let attached =
        api.patch_status(&va_name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(attached.data["status"]["attached"], true);
    assert_eq!(labels(&attached), [(va_name.clone(), "patched".to_string())].into());
    assert!(attached.metadata.annotations.is_none(), "{:?}", attached.metadata);
    assert!(attached.metadata.finalizers.is_none(), "{:?}", attached.metadata);
    // A main-resource write leaves the status, and the spec may not change.
    let mut main_write = api.get(&va_name).await.unwrap();
    main_write.data["status"]["attached"] = json!(false);
    let written = api.replace(&va_name, &PostParams::default(), &main_write).await.unwrap();
    assert_eq!(written.data["status"]["attached"], true, "a main write changed the status");
    let patch = json!({"spec": {"nodeName": "other-node"}});
    let (code, reason, message) =
        api_error(api.patch(&va_name, &PatchParams::default(), &Patch::Merge(&patch)).await);
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    let prefix = format!("VolumeAttachment.storage.k8s.io \"{va_name}\" is invalid: spec: Invalid value: storage.VolumeAttachmentSpec{{Attacher:\"e2e-test.storage.k8s.io\", Source:storage.VolumeAttachmentSource{{PersistentVolumeName:(*string)(0x");
    assert!(message.starts_with(&prefix), "{message}");
    assert!(message.ends_with(", NodeName:\"other-node\"}: field is immutable"), "{message}");

    let mut to_update = api.get(&va_name).await.unwrap();
    to_update.data["status"]["attached"] = json!(false);
    to_update.data["spec"]["nodeName"] = json!("ignored-node");
    let detached = api.replace_status(&va_name, &PostParams::default(), &to_update).await.unwrap();
    assert_eq!(detached.data["status"]["attached"], false);
    assert_eq!(detached.data["spec"]["nodeName"], node, "a /status write changed the spec");
    api.delete(&va_name, &DeleteParams::default()).await.unwrap();
    assert!(listed(&api, &format!("{va_name}=patched")).await.is_empty());
}

/// A PersistentVolume and a claim as upstream's `CreatePVsPVCs` makes them for its CSI
/// conformance tests: a CSI volume of 2Gi (Retain) and a claim of 2Gi, both of the class
/// named after the namespace, so that the binder binds them to each other.
async fn volume_and_claim(
    volumes: &Api<DynamicObject>,
    claims: &Api<DynamicObject>,
    ns: &str,
    driver: &str,
) -> (DynamicObject, DynamicObject) {
    let pv = object(json!({"apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"generateName": format!("{ns}-"), "labels": {"e2e-pv-pool": ns},
                     "annotations": {"pv.beta.kubernetes.io/gid": "777"}},
        "spec": {"persistentVolumeReclaimPolicy": "Retain", "capacity": {"storage": "2Gi"},
                 "csi": {"driver": driver, "volumeHandle": "e2e-conformance"},
                 "accessModes": ["ReadWriteOnce"], "storageClassName": ns}}));
    let pvc = object(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"generateName": "pvc-"},
        "spec": {"accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "2Gi"}}, "storageClassName": ns}}));
    let pv = volumes.create(&PostParams::default(), &pv).await.expect("a PV");
    let pvc = claims.create(&PostParams::default(), &pvc).await.expect("a PVC");
    (pv, pvc)
}

/// Upstream's "PersistentVolumes(Claims), lifecycle" and "PersistentVolumes(Claims), apply
/// changes to a pv/pvc status", in a fresh namespace: a PV and a PVC are created, listed
/// (by label; in the namespace), labelled by strategic patches, read, deleted (the claim
/// first) and made again, labelled by updates, the claim listed across namespaces, and both
/// deleted by collection. Then a new pair's `/status`es are read (phases upstream allows),
/// the claim's merge-patched with a condition and the volume's with a reason and message,
/// then both replaced with more, each write kept while the binder runs.
#[tokio::test(flavor = "multi_thread")]
async fn persistent_volumes_and_claims_go_through_their_lifecycle_and_status_writes() {
    let s = control_plane();
    let client = s.kube_client().await.unwrap();
    let ns = fresh_namespace(&client, "pv").await;
    let pv_resource = resource("", "v1", "PersistentVolume", "persistentvolumes");
    let pvc_resource = resource("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims");
    let volumes: Api<DynamicObject> = Api::all_with(client.clone(), &pv_resource);
    let claims: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &pvc_resource);
    let all_claims: Api<DynamicObject> = Api::all_with(client.clone(), &pvc_resource);
    let pool = format!("e2e-pv-pool={ns}");

    // Lifecycle.
    let driver = format!("inline-driver-{}", suffix(12));
    let (pv, pvc) = volume_and_claim(&volumes, &claims, &ns, &driver).await;
    let pv_list = volumes.list(&ListParams::default().labels(&pool)).await.unwrap();
    assert_eq!(names(&pv_list.items), [name(&pv)]);
    let pvc_list = claims.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&pvc_list.items), [name(&pvc)]);
    let (pv_name, pvc_name) = (name(&pv), name(&pvc));
    patch_label(&volumes, &pv_list.items[0], &pv_name, "patched").await;
    patch_label(&claims, &pvc_list.items[0], &pvc_name, "patched").await;
    assert_eq!(volumes.get(&pv_name).await.unwrap().metadata.uid, pv.metadata.uid);
    assert_eq!(claims.get(&pvc_name).await.unwrap().metadata.uid, pvc.metadata.uid);
    claims.delete(&pvc_name, &DeleteParams::default()).await.unwrap();
    s.wait_until("the claim deleted", Duration::from_secs(30), || {
        let out = s.kubectl(&["get", "pvc", "-n", &ns, "-o", "name"]);
        let seen = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && seen.trim().is_empty(), seen)
    });
    volumes.delete(&pv_name, &DeleteParams::default()).await.unwrap();
    s.wait_until("the volume deleted", Duration::from_secs(30), || {
        let out = s.kubectl(&["get", "pv", "-l", &pool, "-o", "name"]);
        let seen = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && seen.trim().is_empty(), seen)
    });

    let (pv, pvc) = volume_and_claim(&volumes, &claims, &ns, &driver).await;
    let (pv_name, pvc_name) = (name(&pv), name(&pvc));
    relabel(&volumes, &pv_name, &pv_name, "updated", false).await;
    relabel(&claims, &pvc_name, &pvc_name, "updated", true).await;
    let pvc_selector = format!("{pvc_name}=updated");
    assert_eq!(listed(&all_claims, &pvc_selector).await, [pvc_name.as_str()]);
    claims
        .delete_collection(&DeleteParams::default(), &ListParams::default().labels(&pvc_selector))
        .await
        .unwrap();
    s.wait_until("the claim deleted by collection", Duration::from_secs(30), || {
        let out = s.kubectl(&["get", "pvc", "-n", &ns, "-l", &pvc_selector, "-o", "name"]);
        let seen = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && seen.trim().is_empty(), seen)
    });
    let pv_selector = format!("{pv_name}=updated");
    volumes
        .delete_collection(&DeleteParams::default(), &ListParams::default().labels(&pv_selector))
        .await
        .unwrap();
    s.wait_until("the volume deleted by collection", Duration::from_secs(30), || {
        let out = s.kubectl(&["get", "pv", "-l", &pv_selector, "-o", "name"]);
        let seen = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && seen.trim().is_empty(), seen)
    });

    // Status.
    let driver = format!("e2e-driver-{}", suffix(12));
    let (pv, pvc) = volume_and_claim(&volumes, &claims, &ns, &driver).await;
    let (pv_name, pvc_name) = (name(&pv), name(&pvc));
    assert_eq!(listed(&volumes, &pool).await, [pv_name.as_str()]);
    let pvc_status = claims.get_status(&pvc_name).await.unwrap();
    let phase = pvc_status.data["status"]["phase"].as_str().unwrap_or_default().to_string();
    assert!(["Pending", "Bound"].contains(&phase.as_str()), "claim phase {phase:?}");
    let pv_status = volumes.get_status(&pv_name).await.unwrap();
    let phase = pv_status.data["status"]["phase"].as_str().unwrap_or_default().to_string();
    assert!(["Available", "Bound", "Pending"].contains(&phase.as_str()), "volume phase {phase:?}");

    let patch = json!({"status": {"conditions": [{"type": "StatusPatched", "status": "True",
        "reason": "E2E patchedStatus", "message": "Set from e2e test"}]}});
    let patched = claims
        .patch_status(&pvc_name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let has = |o: &DynamicObject, kind: &str, reason: &str| {
        o.data["status"]["conditions"].as_array().into_iter().flatten().any(|c| {
            c["type"] == kind && c["reason"] == reason && c["message"] == "Set from e2e test"
        })
    };
    assert!(has(&patched, "StatusPatched", "E2E patchedStatus"), "{}", patched.data["status"]);
    let patch = json!({"status": {"message": "StatusPatched", "reason": "E2E patchStatus"}});
    let patched = volumes
        .patch_status(&pv_name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(
        (&patched.data["status"]["reason"], &patched.data["status"]["message"]),
        (&json!("E2E patchStatus"), &json!("StatusPatched"))
    );

    // The updates: a get and a replace of /status, again on a conflict (the binder writes
    // both objects while it binds them), as upstream's RetryOnConflict.
    let mut updated_claim = None;
    for _ in 0..10 {
        let mut claim = claims.get(&pvc_name).await.unwrap();
        let conditions = claim.data["status"]["conditions"].as_array_mut().expect("conditions");
        conditions.push(json!({"type": "StatusUpdated", "status": "True",
                               "reason": "E2E updateStatus", "message": "Set from e2e test"}));
        match claims.replace_status(&pvc_name, &PostParams::default(), &claim).await {
            Ok(done) => {
                updated_claim = Some(done);
                break;
            }
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => panic!("update of the claim's status: {e}"),
        }
    }
    let updated_claim = updated_claim.expect("the claim's status updated within 10 tries");
    assert!(has(&updated_claim, "StatusUpdated", "E2E updateStatus"), "{}", updated_claim.data);
    let mut updated_volume = None;
    for _ in 0..10 {
        let mut volume = volumes.get(&pv_name).await.unwrap();
        volume.data["status"]["reason"] = json!("E2E updateStatus");
        volume.data["status"]["message"] = json!("StatusUpdated");
        match volumes.replace_status(&pv_name, &PostParams::default(), &volume).await {
            Ok(done) => {
                updated_volume = Some(done);
                break;
            }
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => panic!("update of the volume's status: {e}"),
        }
    }
    let updated_volume = updated_volume.expect("the volume's status updated within 10 tries");
    assert_eq!(updated_volume.data["status"]["reason"], "E2E updateStatus");
    assert_eq!(updated_volume.data["status"]["message"], "StatusUpdated");
    // What was written stays: the binder binds the pair (both Bound) and keeps the rest.
    s.wait_until("the pair bound", Duration::from_secs(30), || {
        let out =
            s.kubectl(&["get", "pvc", &pvc_name, "-n", &ns, "-o", "jsonpath={.status.phase}"]);
        let phase = String::from_utf8_lossy(&out.stdout).to_string();
        (phase == "Bound", phase)
    });
    let claim = claims.get(&pvc_name).await.unwrap();
    assert!(has(&claim, "StatusPatched", "E2E patchedStatus"), "{}", claim.data["status"]);
    assert!(has(&claim, "StatusUpdated", "E2E updateStatus"), "{}", claim.data["status"]);
    let volume = volumes.get(&pv_name).await.unwrap();
    assert_eq!(volume.data["spec"]["claimRef"]["name"], pvc_name.as_str());
}

/// The group/version's discovery: `/apis` lists the group with `version`, the group's own
/// document lists the version, and the version's document lists `resource`.
fn assert_discovered(s: &RkubeServer, group: &str, version: &str, resource: &str) {
    let apis: Value = serde_json::from_str(&s.curl(&[], "/apis").body).unwrap();
    let in_apis = apis["groups"].as_array().unwrap().iter().any(|g| {
        g["name"] == group
            && g["versions"].as_array().unwrap().iter().any(|v| v["version"] == version)
    });
    assert!(in_apis, "/apis lacks {group}/{version}");
    let group_doc: Value =
        serde_json::from_str(&s.curl(&[], &format!("/apis/{group}")).body).unwrap();
    let listed = group_doc["versions"].as_array().unwrap().iter().any(|v| v["version"] == version);
    assert!(listed, "/apis/{group} lacks {version}: {group_doc}");
    let doc: Value =
        serde_json::from_str(&s.curl(&[], &format!("/apis/{group}/{version}")).body).unwrap();
    let listed = doc["resources"].as_array().unwrap().iter().any(|r| r["name"] == resource);
    assert!(listed, "/apis/{group}/{version} lacks {resource}: {doc}");
}

/// The round upstream's "CSIStorageCapacity API" and "RuntimeClass API" make: three objects
/// made (a second create of the first refused), watches with no resourceVersion started
/// after two (on `apis`), then get, list, a merge patch and an update; each watch first
/// replays the two as ADDED, then sees the third ADDED and the two MODIFIED; one delete,
/// then deletecollection by label.
async fn api_round(
    api: &Api<DynamicObject>,
    watched: &[&Api<DynamicObject>],
    resource: &str,
    lists: &[&Api<DynamicObject>],
    made: [DynamicObject; 3],
    selector: &str,
) {
    let created = api.create(&PostParams::default(), &made[0]).await.unwrap();
    let first = name(&created);
    assert_already_exists(api.create(&PostParams::default(), &made[0]).await, resource, &first);
    api.create(&PostParams::default(), &made[1]).await.unwrap();
    let mut watches = Vec::new();
    for w in watched {
        watches.push(watch(w, selector, "").await);
    }
    api.create(&PostParams::default(), &made[2]).await.unwrap();
    let got = api.get(&first).await.unwrap();
    assert_eq!(got.metadata.uid, created.metadata.uid);
    let mut all_names: Vec<String> = made.iter().map(name).collect();
    all_names.sort();
    for list in lists {
        assert_eq!(listed(list, selector).await, all_names);
    }
    let patch = json!({"metadata": {"annotations": {"patched": "true"}}});
    let patched = api.patch(&first, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(annotations(&patched)["patched"], "true");
    let mut to_update = patched.clone();
    to_update
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert("updated".into(), "true".into());
    let updated = api.replace(&first, &PostParams::default(), &to_update).await.unwrap();
    assert_eq!(annotations(&updated)["updated"], "true");

    for (i, events) in watches.iter_mut().enumerate() {
        let what = format!("{resource} watch {i}");
        let seen = next_events(events, &what, 5).await;
        let kinds: Vec<&str> = seen.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kinds, ["ADDED", "ADDED", "ADDED", "MODIFIED", "MODIFIED"], "{what}");
        let mut initial: Vec<String> = seen[..2].iter().map(|(_, o)| name(o)).collect();
        initial.sort();
        let mut expected = vec![first.clone(), name(&made[1])];
        expected.sort();
        assert_eq!(initial, expected, "{what}: the initial ADDED events");
        assert_eq!(name(&seen[2].1), name(&made[2]), "{what}");
        assert_eq!(annotations(&seen[3].1).get("patched").map(String::as_str), Some("true"));
        assert_eq!(annotations(&seen[4].1).get("updated").map(String::as_str), Some("true"));
    }

    api.delete(&first, &DeleteParams::default()).await.unwrap();
    assert_not_found(api.get(&first).await, resource, &first);
    assert_eq!(listed(api, selector).await.len(), 2);
    api.delete_collection(&DeleteParams::default(), &ListParams::default().labels(selector))
        .await
        .unwrap();
    assert!(listed(api, selector).await.is_empty());
}

/// Upstream's "CSIStorageCapacity API" (in a fresh namespace, watched in it and across
/// namespaces) and "RuntimeClass API": discovery of each, then the API round.
#[tokio::test(flavor = "multi_thread")]
async fn csi_storage_capacities_and_runtime_classes_go_through_every_api_operation() {
    let s = control_plane();
    let client = s.kube_client().await.unwrap();

    assert_discovered(&s, "storage.k8s.io", "v1", "csistoragecapacities");
    let ns = fresh_namespace(&client, "csistoragecapacity").await;
    let capacities = storage("CSIStorageCapacity", "csistoragecapacities");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &capacities);
    let everywhere: Api<DynamicObject> = Api::all_with(client.clone(), &capacities);
    let capacity = |n: &str| {
        object(json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                      "metadata": {"name": format!("{ns}{n}"), "labels": {"test": ns}},
                      "storageClassName": "e2e.example.com"}))
    };
    let made = [capacity("-csc1"), capacity("-csc2"), capacity("-csc3")];
    let selector = format!("test={ns}");
    api_round(
        &api,
        &[&api, &everywhere],
        "csistoragecapacities.storage.k8s.io",
        &[&api, &everywhere],
        made,
        &selector,
    )
    .await;

    assert_discovered(&s, "node.k8s.io", "v1", "runtimeclasses");
    let unique = format!("runtimeclass-{}", suffix(5));
    let classes: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &resource("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses"),
    );
    let class = |n: &str| {
        object(json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                      "metadata": {"name": format!("{unique}-handler{n}"), "labels": {"test": unique}},
                      "handler": format!("{unique}-conformance-runtime-class{n}")}))
    };
    let made = [class(""), class("2"), class("3")];
    let selector = format!("test={unique}");
    api_round(&classes, &[&classes], "runtimeclasses.node.k8s.io", &[&classes], made, &selector)
        .await;
    // The handler is immutable (upstream's ValidateRuntimeClassUpdate).
    let mut again = class("4");
    let made = classes.create(&PostParams::default(), &again).await.unwrap();
    again.metadata.resource_version = made.metadata.resource_version.clone();
    again.data["handler"] = json!("other");
    let n = name(&made);
    assert_invalid(
        classes.replace(&n, &PostParams::default(), &again).await,
        &format!("RuntimeClass.node.k8s.io \"{n}\" is invalid: handler: Invalid value: \"other\": field is immutable"),
    );
}

/// Upstream's "Secrets Volume, immutability" and "ConfigMap Volume, immutability", each in a
/// fresh namespace: the object's data can be changed until it is marked immutable; then a
/// data change and un-marking (by an update, and by a merge patch dropping `immutable`) are
/// refused (422 Invalid, upstream's field errors), a label change is accepted, and it can be
/// deleted.
#[tokio::test(flavor = "multi_thread")]
async fn immutable_secrets_and_config_maps_refuse_data_changes_and_can_be_relabelled_and_deleted() {
    let s = control_plane();
    let client = s.kube_client().await.unwrap();
    let b64 = |v: &str| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(v)
    };
    let ns = fresh_namespace(&client, "secrets").await;
    let secrets = resource("", "v1", "Secret", "secrets");
    immutability_round(&Api::namespaced_with(client.clone(), &ns, &secrets), "Secret", &b64).await;
    let ns = fresh_namespace(&client, "configmap").await;
    let config_maps = resource("", "v1", "ConfigMap", "configmaps");
    let plain = |v: &str| v.to_string();
    immutability_round(
        &Api::namespaced_with(client.clone(), &ns, &config_maps),
        "ConfigMap",
        &plain,
    )
    .await;
}

/// The immutability round on `api`'s kind, its data values written by `encode`.
async fn immutability_round(api: &Api<DynamicObject>, kind: &str, encode: &dyn Fn(&str) -> String) {
    let invalid = |field: &str| {
        format!("{kind} \"immutable\" is invalid: {field}: Forbidden: field is immutable when `immutable` is set")
    };
    let made = object(json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": "immutable"},
        "data": {"data-1": encode("value-1\n"), "data-2": encode("value-2\n"),
                 "data-3": encode("value-3\n")}}));
    let mut current = api.create(&PostParams::default(), &made).await.unwrap();
    current.data["data"]["data-4"] = json!(encode("value-4\n"));
    let mut current = api.replace("immutable", &PostParams::default(), &current).await.unwrap();
    current.data["immutable"] = json!(true);
    let mut current = api.replace("immutable", &PostParams::default(), &current).await.unwrap();
    assert_eq!(current.data["immutable"], true);

    current.data["data"]["data-5"] = json!(encode("value-5\n"));
    assert_invalid(
        api.replace("immutable", &PostParams::default(), &current).await,
        &invalid("data"),
    );
    let mut current = api.get("immutable").await.unwrap();
    assert_eq!(current.data["immutable"], true);
    assert!(current.data["data"].get("data-5").is_none(), "the refused data change was kept");
    current.data["immutable"] = json!(false);
    assert_invalid(
        api.replace("immutable", &PostParams::default(), &current).await,
        &invalid("immutable"),
    );
    // A merge patch that drops `immutable` is the same change.
    let patch = json!({"immutable": null});
    assert_invalid(
        api.patch("immutable", &PatchParams::default(), &Patch::Merge(&patch)).await,
        &invalid("immutable"),
    );

    let mut current = api.get("immutable").await.unwrap();
    current.metadata.labels = Some([("label1".to_string(), "value1".to_string())].into());
    let relabelled = api.replace("immutable", &PostParams::default(), &current).await.unwrap();
    assert_eq!(labels(&relabelled)["label1"], "value1");
    api.delete("immutable", &DeleteParams::default()).await.unwrap();
    let plural = format!("{}s", kind.to_ascii_lowercase());
    assert_not_found(api.get("immutable").await, &plural, "immutable");
}

/// Upstream's "Node, resource lifecycle": a Node made through the API (unschedulable, with a
/// Ready condition in the status it is created with) is read, labelled by a strategic patch
/// (a larger resourceVersion) and found by that label alone, labelled by an update, and
/// deleted.
#[tokio::test(flavor = "multi_thread")]
async fn a_node_made_through_the_api_goes_through_its_lifecycle() {
    let s = control_plane();
    let client = s.kube_client().await.unwrap();
    let api: Api<DynamicObject> =
        Api::all_with(client.clone(), &resource("", "v1", "Node", "nodes"));
    let node_name = format!("e2e-fake-node-{}", suffix(5));
    let node = object(json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node_name, "creationTimestamp": null},
        "spec": {"unschedulable": true},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
            "lastHeartbeatTime": null, "lastTransitionTime": null,
            "reason": "E2E", "message": "Set from e2e test"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}, "nodeInfo": {
            "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "", "osImage": "",
            "containerRuntimeVersion": "", "kubeletVersion": "", "kubeProxyVersion": "",
            "operatingSystem": "", "architecture": ""}}}));
    let created = api.create(&PostParams::default(), &node).await.unwrap();
    assert_eq!(name(&created), node_name);
    assert!(rv(&created) > 0);
    // Nodes keep the status they are created with (upstream's node strategy).
    assert_eq!(created.data["status"]["conditions"][0]["reason"], "E2E");
    let got = api.get(&node_name).await.unwrap();
    assert_eq!(name(&got), node_name);
    patch_label(&api, &created, &node_name, "patched").await;
    assert_eq!(listed(&api, &format!("{node_name}=patched")).await, [node_name.as_str()]);
    relabel(&api, &node_name, &node_name, "updated", false).await;
    api.delete(&node_name, &DeleteParams::default()).await.unwrap();
    s.wait_until("the node deleted", Duration::from_secs(30), || {
        let out = s.kubectl(&["get", "node", &node_name, "-o", "name"]);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        (!out.status.success() && err.contains("NotFound"), err)
    });
    assert_not_found(api.get(&node_name).await, "nodes", &node_name);
}

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A protobuf body as client-go sends it: the magic, then the runtime.Unknown around the
/// object's message.
fn envelope(api_version: &str, kind: &str, object: &impl Message) -> Bytes {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(object.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    body.into()
}

/// The message of a protobuf answer, checking the envelope names `kind`.
fn unwrap_message<M: Message + Default>(body: &[u8], kind: &str) -> M {
    assert!(body.starts_with(b"k8s\0"), "not protobuf: {}", String::from_utf8_lossy(body));
    let unknown = Unknown::decode(&body[4..]).expect("a runtime.Unknown");
    let got = unknown.type_meta.and_then(|t| t.kind).unwrap_or_default();
    assert_eq!(got, kind, "the answer's kind");
    M::decode(unknown.raw.unwrap_or_default().as_slice()).expect("the object's message")
}

/// The object at `path` as JSON (what a JSON client reads), and its resourceVersion.
fn json_view(s: &RkubeServer, path: &str) -> (Value, String) {
    let got = s.curl(&[], path);
    assert_eq!(got.code, 200, "GET {path}: {}", got.body);
    without_version(serde_json::from_str(&got.body).unwrap())
}

/// An object without what every write changes (resourceVersion, managedFields), and its
/// resourceVersion.
fn without_version(mut v: Value) -> (Value, String) {
    let meta = v["metadata"].as_object_mut().unwrap();
    let rv = meta.remove("resourceVersion").and_then(|v| v.as_str().map(String::from));
    meta.remove("managedFields");
    (v, rv.unwrap_or_default())
}

/// Sets label `key=value` in a message's metadata.
fn pb_label(meta: &mut Option<ObjectMeta>, key: &str, value: &str) {
    meta.get_or_insert_with(Default::default).labels.insert(key.into(), value.into());
}

/// Adds label `key=value` to a JSON object.
fn json_label(v: &mut Value, key: &str, value: &str) {
    let meta = v["metadata"].as_object_mut().unwrap();
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    labels[key] = json!(value);
}

/// What upstream's e2e clients do on every update (their clientset speaks protobuf): read the
/// object at `path` in protobuf, `change` it, and put it back in protobuf (to `path/status`
/// for `status`). The object the write answers (in JSON) is the JSON view before it with
/// `expect` applied: the protobuf decoding and encoding lose and invent nothing. Again when a
/// controller wrote the object in between (a read of another version, a 409).
#[allow(clippy::too_many_arguments)]
async fn protobuf_update<M: Message + Default>(
    s: &RkubeServer,
    client: &H2Client,
    path: &str,
    status: bool,
    api_version: &str,
    kind: &str,
    mut change: impl FnMut(&mut M),
    mut expect: impl FnMut(&mut Value),
) -> Value {
    let target = if status { format!("{path}/status") } else { path.to_string() };
    for _ in 0..5 {
        let (mut expected, before) = json_view(s, path);
        let (code, _, body) =
            client.request(Method::GET, path, &[("accept", PROTOBUF)], Bytes::new()).await.unwrap();
        assert_eq!(code, 200, "protobuf GET {path}");
        if json_view(s, path).1 != before {
            continue;
        }
        let mut object: M = unwrap_message(&body, kind);
        change(&mut object);
        let headers = [("content-type", PROTOBUF), ("accept", "application/json")];
        let body = envelope(api_version, kind, &object);
        let (code, _, answer) = client.request(Method::PUT, &target, &headers, body).await.unwrap();
        match code.as_u16() {
            200 => {}
            409 => continue,
            _ => panic!("protobuf PUT {target}: {code} {}", String::from_utf8_lossy(&answer)),
        }
        let (written, _) = without_version(serde_json::from_slice(&answer).unwrap());
        expect(&mut expected);
        assert_eq!(
            written, expected,
            "{kind} after a protobuf update (left: written, right: wanted)"
        );
        return written;
    }
    panic!("{kind} {path}: no protobuf update in 5 tries");
}

/// The first `want` frames of a protobuf watch (length-prefixed `WatchEvent`s): each event's
/// type and object bytes; fails after 20 s.
async fn watch_frames(body: &mut hyper::body::Incoming, want: usize) -> Vec<(String, Vec<u8>)> {
    use http_body_util::BodyExt;
    let mut buffer = Vec::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while events.len() < want {
        while buffer.len() >= 4 && events.len() < want {
            let len = u32::from_be_bytes(buffer[..4].try_into().unwrap()) as usize;
            if buffer.len() < 4 + len {
                break;
            }
            let event = meta::WatchEvent::decode(&buffer[4..4 + len]).expect("a WatchEvent");
            buffer.drain(..4 + len);
            let object = event.object.and_then(|o| o.raw).unwrap_or_default();
            events.push((event.r#type.unwrap_or_default(), object));
        }
        if events.len() >= want {
            break;
        }
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(frame))) => buffer.extend_from_slice(&frame.into_data().unwrap_or_default()),
            Ok(other) => panic!("the watch ended after {} events: {other:?}", events.len()),
            Err(_) => panic!("{} of {want} watch events in 20 s", events.len()),
        }
    }
    events
}

/// A protobuf create of `object` at `path`, answered in JSON: what the server made of it.
async fn protobuf_create(
    client: &H2Client,
    path: &str,
    api_version: &str,
    kind: &str,
    object: &impl Message,
) -> Value {
    let headers = [("content-type", PROTOBUF), ("accept", "application/json")];
    let body = envelope(api_version, kind, object);
    let (code, _, answer) = client.request(Method::POST, path, &headers, body).await.unwrap();
    assert_eq!(code, 201, "protobuf POST {path}: {}", String::from_utf8_lossy(&answer));
    serde_json::from_slice(&answer).unwrap()
}

/// ObjectMeta as go-to-protobuf writes it for a new object: every non-pointer field, the
/// zero creationTimestamp as an empty Time.
fn go_meta(name: &str) -> Option<ObjectMeta> {
    Some(ObjectMeta {
        name: Some(name.into()),
        generate_name: Some(String::new()),
        namespace: Some(String::new()),
        self_link: Some(String::new()),
        uid: Some(String::new()),
        resource_version: Some(String::new()),
        generation: Some(0),
        creation_timestamp: Some(meta::Time::default()),
        ..Default::default()
    })
}

/// The creates upstream's tests send in protobuf, as go-to-protobuf writes them (every
/// non-pointer field, zero or not): upstream's fake Node (its status kept, the zero times
/// `null`, the not-ready taint added on create as TaintNodesByCondition adds it), and a
/// CSINode without drivers (Go's nil slice: `drivers: null`).
#[tokio::test(flavor = "multi_thread")]
async fn protobuf_creates_are_stored_as_go_decodes_them() {
    let s = control_plane();
    let client = H2Client::connect(s.data_dir.path(), s.port).await.unwrap();
    let empty = || Some(String::new());
    let node = core_pb::Node {
        metadata: go_meta("e2e-fake-node-pb"),
        spec: Some(core_pb::NodeSpec {
            pod_cidr: empty(),
            provider_id: empty(),
            unschedulable: Some(true),
            external_id: empty(),
            ..Default::default()
        }),
        status: Some(core_pb::NodeStatus {
            phase: Some("Running".into()),
            conditions: vec![core_pb::NodeCondition {
                r#type: Some("Ready".into()),
                status: Some("True".into()),
                last_heartbeat_time: Some(meta::Time::default()),
                last_transition_time: Some(meta::Time::default()),
                reason: Some("E2E".into()),
                message: Some("Set from e2e test".into()),
            }],
            daemon_endpoints: Some(core_pb::NodeDaemonEndpoints {
                kubelet_endpoint: Some(core_pb::DaemonEndpoint { port: Some(0) }),
            }),
            node_info: Some(core_pb::NodeSystemInfo {
                machine_id: empty(),
                system_uuid: empty(),
                boot_id: empty(),
                kernel_version: empty(),
                os_image: empty(),
                container_runtime_version: empty(),
                kubelet_version: empty(),
                kube_proxy_version: empty(),
                operating_system: empty(),
                architecture: empty(),
                swap: None,
            }),
            ..Default::default()
        }),
    };
    let made = protobuf_create(&client, "/api/v1/nodes", "v1", "Node", &node).await;
    assert_eq!(
        made["spec"],
        json!({"unschedulable": true,
               "taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]})
    );
    let info = [
        "machineID",
        "systemUUID",
        "bootID",
        "kernelVersion",
        "osImage",
        "containerRuntimeVersion",
        "kubeletVersion",
        "kubeProxyVersion",
        "operatingSystem",
        "architecture",
    ];
    assert_eq!(
        made["status"],
        json!({"phase": "Running",
               "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": null,
                   "lastTransitionTime": null, "reason": "E2E", "message": "Set from e2e test"}],
               "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
               "nodeInfo": info.iter().map(|k| (k.to_string(), json!(""))).collect::<serde_json::Map<_, _>>()})
    );

    let csinode = storage_pb::CSINode {
        metadata: go_meta("pb-csinode"),
        spec: Some(storage_pb::CSINodeSpec { drivers: Vec::new() }),
    };
    let path = "/apis/storage.k8s.io/v1/csinodes";
    let made = protobuf_create(&client, path, "storage.k8s.io/v1", "CSINode", &csinode).await;
    assert_eq!(made["spec"], json!({"drivers": null}));
    assert_eq!(json_view(&s, &format!("{path}/pb-csinode")).0["spec"], json!({"drivers": null}));
    // A JSON create of the same: the same object.
    let json_made = s.curl_body(&["-X", "POST"], path,
        br#"{"apiVersion":"storage.k8s.io/v1","kind":"CSINode","metadata":{"name":"json-csinode"},"spec":{}}"#);
    assert_eq!(json_made.code, 201, "{}", json_made.body);
    assert_eq!(json_view(&s, &format!("{path}/json-csinode")).0["spec"], json!({"drivers": null}));
}

/// What the upstream tests send, in the encoding their clientset uses (protobuf): each kind
/// of these tests read, changed (labels, `/status`) and written back, and the JSON view
/// after equal to the one before with just that change; an immutable Secret's refusal as a
/// protobuf Status.
#[tokio::test(flavor = "multi_thread")]
async fn protobuf_updates_of_every_kind_keep_every_field() {
    let s = control_plane();
    let client = H2Client::connect(s.data_dir.path(), s.port).await.unwrap();
    let kube = s.kube_client().await.unwrap();
    let ns = fresh_namespace(&kube, "protobuf").await;
    let create = |path: &str, obj: Value| {
        let got = s.curl_body(&["-X", "POST"], path, obj.to_string().as_bytes());
        assert_eq!(got.code, 201, "POST {path}: {}", got.body);
        serde_json::from_str::<Value>(&got.body).unwrap()
    };

    // VolumeAttachment: /status attached, then detached (`attached: false` is no omitempty).
    let (va_name, va) = volume_attachment("e2e-fake-node", false);
    create("/apis/storage.k8s.io/v1/volumeattachments", serde_json::to_value(&va).unwrap());
    let path = format!("/apis/storage.k8s.io/v1/volumeattachments/{va_name}");
    for attached in [true, false] {
        protobuf_update(
            &s,
            &client,
            &path,
            true,
            "storage.k8s.io/v1",
            "VolumeAttachment",
            |va: &mut storage_pb::VolumeAttachment| {
                va.status.get_or_insert_with(Default::default).attached = Some(attached);
            },
            |v| v["status"]["attached"] = json!(attached),
        )
        .await;
    }
    assert_eq!(json_view(&s, &path).0["status"], json!({"attached": false}));

    // A PV and its claim: /status reason and message, a condition.
    let pv = create(
        "/api/v1/persistentvolumes",
        json!({"apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"generateName": format!("{ns}-"), "labels": {"e2e-pv-pool": ns},
                     "annotations": {"pv.beta.kubernetes.io/gid": "777"}},
        "spec": {"persistentVolumeReclaimPolicy": "Retain", "capacity": {"storage": "2Gi"},
                 "csi": {"driver": "e2e.example.com", "volumeHandle": "e2e-status-conformance"},
                 "accessModes": ["ReadWriteOnce"], "storageClassName": ns}}),
    );
    let pv_path = format!("/api/v1/persistentvolumes/{}", pv["metadata"]["name"].as_str().unwrap());
    protobuf_update(
        &s,
        &client,
        &pv_path,
        true,
        "v1",
        "PersistentVolume",
        |pv: &mut core_pb::PersistentVolume| {
            let status = pv.status.get_or_insert_with(Default::default);
            status.reason = Some("E2E updateStatus".into());
            status.message = Some("StatusUpdated".into());
        },
        |v| {
            v["status"]["reason"] = json!("E2E updateStatus");
            v["status"]["message"] = json!("StatusUpdated");
        },
    )
    .await;
    // A claim the binder leaves alone (no volume of its class fits): its status is ours.
    let pvc = create(
        &format!("/api/v1/namespaces/{ns}/persistentvolumeclaims"),
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"generateName": "pvc-"},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "5Gi"}},
                 "storageClassName": format!("{ns}-none")}}),
    );
    let pvc_path = format!(
        "/api/v1/namespaces/{ns}/persistentvolumeclaims/{}",
        pvc["metadata"]["name"].as_str().unwrap()
    );
    protobuf_update(
        &s,
        &client,
        &pvc_path,
        true,
        "v1",
        "PersistentVolumeClaim",
        |pvc: &mut core_pb::PersistentVolumeClaim| {
            // As client-go sends a condition: every non-pointer field, zero times included
            // (an empty Time message: Go's Time marshals the zero time to no bytes).
            let zero = || Some(meta::Time::default());
            pvc.status.get_or_insert_with(Default::default).conditions.push(
                core_pb::PersistentVolumeClaimCondition {
                    r#type: Some("StatusUpdated".into()),
                    status: Some("True".into()),
                    last_probe_time: zero(),
                    last_transition_time: zero(),
                    reason: Some("E2E updateStatus".into()),
                    message: Some("Set from e2e test".into()),
                },
            );
        },
        |v| {
            v["status"]["conditions"] = json!([{"type": "StatusUpdated", "status": "True",
                "lastProbeTime": null, "lastTransitionTime": null,
                "reason": "E2E updateStatus", "message": "Set from e2e test"}]);
        },
    )
    .await;
    protobuf_update(
        &s,
        &client,
        &pvc_path,
        false,
        "v1",
        "PersistentVolumeClaim",
        |pvc: &mut core_pb::PersistentVolumeClaim| pb_label(&mut pvc.metadata, "pvc", "updated"),
        |v| json_label(v, "pvc", "updated"),
    )
    .await;

    // A Node made with a status, relabelled.
    let node_name = format!("e2e-fake-node-{}", suffix(5));
    create(
        "/api/v1/nodes",
        json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node_name}, "spec": {"unschedulable": true},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
            "lastHeartbeatTime": null, "lastTransitionTime": null,
            "reason": "E2E", "message": "Set from e2e test"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}}}),
    );
    protobuf_update(
        &s,
        &client,
        &format!("/api/v1/nodes/{node_name}"),
        false,
        "v1",
        "Node",
        |node: &mut core_pb::Node| pb_label(&mut node.metadata, &node_name, "updated"),
        |v| json_label(v, &node_name, "updated"),
    )
    .await;

    // The cluster-scoped storage kinds and RuntimeClasses, and a CSIStorageCapacity.
    create(
        "/apis/storage.k8s.io/v1/csidrivers",
        json!({"apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver", "metadata": {"name": "pb.example.com"},
        "spec": {"volumeLifecycleModes": ["Persistent", "Ephemeral"],
                 "fsGroupPolicy": "ReadWriteOnceWithFSType"}}),
    );
    protobuf_update(
        &s,
        &client,
        "/apis/storage.k8s.io/v1/csidrivers/pb.example.com",
        false,
        "storage.k8s.io/v1",
        "CSIDriver",
        |d: &mut storage_pb::CSIDriver| pb_label(&mut d.metadata, "pb", "updated"),
        |v| json_label(v, "pb", "updated"),
    )
    .await;
    create(
        "/apis/storage.k8s.io/v1/csinodes",
        json!({"apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode", "metadata": {"name": "pb-csinode"}, "spec": {"drivers": null}}),
    );
    protobuf_update(
        &s,
        &client,
        "/apis/storage.k8s.io/v1/csinodes/pb-csinode",
        false,
        "storage.k8s.io/v1",
        "CSINode",
        |n: &mut storage_pb::CSINode| pb_label(&mut n.metadata, "pb", "updated"),
        |v| json_label(v, "pb", "updated"),
    )
    .await;
    create(
        "/apis/storage.k8s.io/v1/storageclasses",
        json!({"apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass", "metadata": {"name": "pb-class"},
        "provisioner": "e2e-fake-provisioner"}),
    );
    protobuf_update(
        &s,
        &client,
        "/apis/storage.k8s.io/v1/storageclasses/pb-class",
        false,
        "storage.k8s.io/v1",
        "StorageClass",
        |c: &mut storage_pb::StorageClass| pb_label(&mut c.metadata, "pb", "updated"),
        |v| json_label(v, "pb", "updated"),
    )
    .await;
    create(
        "/apis/node.k8s.io/v1/runtimeclasses",
        json!({"apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass", "metadata": {"name": "pb-runtime"}, "handler": "pb-handler"}),
    );
    // Watched in protobuf with no resourceVersion, as upstream's RuntimeClass test watches.
    let watch = "/apis/node.k8s.io/v1/runtimeclasses?watch=1&fieldSelector=metadata.name%3Dpb-runtime&timeoutSeconds=30";
    let accept = [("accept", "application/vnd.kubernetes.protobuf, application/json")];
    let response = client.send(Method::GET, watch, &accept, Bytes::new()).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    protobuf_update(
        &s,
        &client,
        "/apis/node.k8s.io/v1/runtimeclasses/pb-runtime",
        false,
        "node.k8s.io/v1",
        "RuntimeClass",
        |c: &mut node_pb::RuntimeClass| pb_label(&mut c.metadata, "pb", "updated"),
        |v| json_label(v, "pb", "updated"),
    )
    .await;
    let events = watch_frames(&mut body, 2).await;
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["ADDED", "MODIFIED"]);
    let modified: node_pb::RuntimeClass = unwrap_message(&events[1].1, "RuntimeClass");
    assert_eq!(modified.handler.as_deref(), Some("pb-handler"));
    let labels = modified.metadata.map(|m| m.labels).unwrap_or_default();
    assert_eq!(labels.get("pb").map(String::as_str), Some("updated"));
    drop(body);
    let capacities = format!("/apis/storage.k8s.io/v1/namespaces/{ns}/csistoragecapacities");
    create(
        &capacities,
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
        "metadata": {"name": "pb-capacity"}, "storageClassName": "e2e.example.com"}),
    );
    protobuf_update(
        &s,
        &client,
        &format!("{capacities}/pb-capacity"),
        false,
        "storage.k8s.io/v1",
        "CSIStorageCapacity",
        |c: &mut storage_pb::CSIStorageCapacity| pb_label(&mut c.metadata, "pb", "updated"),
        |v| json_label(v, "pb", "updated"),
    )
    .await;

    // An immutable Secret: relabelled in protobuf; un-marking it refused with upstream's Status.
    let secrets = format!("/api/v1/namespaces/{ns}/secrets");
    create(
        &secrets,
        json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "immutable"}, "data": {"data-1": "dmFsdWUtMQo="}, "immutable": true}),
    );
    let path = format!("{secrets}/immutable");
    protobuf_update(
        &s,
        &client,
        &path,
        false,
        "v1",
        "Secret",
        |secret: &mut core_pb::Secret| pb_label(&mut secret.metadata, "label1", "value1"),
        |v| json_label(v, "label1", "value1"),
    )
    .await;
    let (_, _, body) =
        client.request(Method::GET, &path, &[("accept", PROTOBUF)], Bytes::new()).await.unwrap();
    let mut secret: core_pb::Secret = unwrap_message(&body, "Secret");
    secret.immutable = Some(false);
    let headers = [("content-type", PROTOBUF), ("accept", PROTOBUF)];
    let (code, _, answer) = client
        .request(Method::PUT, &path, &headers, envelope("v1", "Secret", &secret))
        .await
        .unwrap();
    assert_eq!(code, 422);
    let status: meta::Status = unwrap_message(&answer, "Status");
    assert_eq!(
        (status.reason.as_deref(), status.message.as_deref()),
        (
            Some("Invalid"),
            Some("Secret \"immutable\" is invalid: immutable: Forbidden: field is immutable when `immutable` is set")
        )
    );
    let cause = &status.details.as_ref().expect("details").causes[0];
    assert_eq!(
        (cause.reason.as_deref(), cause.field.as_deref()),
        (Some("FieldValueForbidden"), Some("immutable"))
    );
}
