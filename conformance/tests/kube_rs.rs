//! kube-rs (the `kube` crate) against the real `rkube server`: typed Api calls, a watcher and
//! a reflector, as controllers written in Rust use them.

use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PartialObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use rkube_conformance::cluster::RkubeServer;

fn configmap(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "kube-rs"}},
        "data": {"value": value},
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_api_create_list_patch_delete() {
    let server = tokio::task::spawn_blocking(RkubeServer::start).await.unwrap();
    let client = server.kube_client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let created = api.create(&PostParams::default(), &configmap("a", "1")).await.unwrap();
    assert!(created.metadata.uid.is_some());
    let err = api.create(&PostParams::default(), &configmap("a", "1")).await.unwrap_err();
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 409);
            assert_eq!(status.reason, "AlreadyExists");
        }
        other => panic!("expected an API error, got {other}"),
    }
    api.create(&PostParams::default(), &configmap("b", "2")).await.unwrap();
    let listed = api.list(&ListParams::default().labels("app=kube-rs")).await.unwrap();
    assert_eq!(listed.items.len(), 2);
    let patch = serde_json::json!({"data": {"value": "patched"}});
    let patched = api.patch("a", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(patched.data.unwrap()["value"], "patched");
    api.delete("b", &DeleteParams::default()).await.unwrap();
    let err = api.get("b").await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 404), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_and_reflector_follow_changes() {
    let server = tokio::task::spawn_blocking(RkubeServer::start).await.unwrap();
    let client = server.kube_client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &configmap("before", "1")).await.unwrap();

    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream =
        reflector(writer, watcher(api.clone(), watcher::Config::default().labels("app=kube-rs")))
            .applied_objects()
            .boxed();
    let mut stream = stream;
    // The watcher lists first, then follows: create and modify after it started.
    let api2 = api.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        api2.create(&PostParams::default(), &configmap("after", "1")).await.unwrap();
        let patch = serde_json::json!({"data": {"value": "2"}});
        api2.patch("after", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let next =
            tokio::time::timeout_at(deadline, stream.try_next()).await.expect("watcher stalled");
        let cm = next.expect("watch error").expect("stream ended");
        if cm.metadata.name.as_deref() == Some("after")
            && cm.data.as_ref().is_some_and(|d| d["value"] == "2")
        {
            break;
        }
    }
    let mut names: Vec<String> =
        reader.state().iter().filter_map(|c| c.metadata.name.clone()).collect();
    names.sort();
    assert_eq!(names, vec!["after", "before"]);
}

/// Metadata-only reads, as client-go's metadata informers and kube-rs's `metadata_watcher`
/// make them (`as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`): the objects' metadata
/// and nothing else, for get, list and watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_get_list_and_watch() {
    let server = tokio::task::spawn_blocking(RkubeServer::start).await.unwrap();
    let client = server.kube_client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &configmap("first", "1")).await.unwrap();

    let one = api.get_metadata("first").await.unwrap();
    assert_eq!(one.types.as_ref().map(|t| t.kind.as_str()), Some("PartialObjectMetadata"));
    assert_eq!(one.metadata.name.as_deref(), Some("first"));
    assert!(one.metadata.uid.is_some());
    let list = api.list_metadata(&ListParams::default().labels("app=kube-rs")).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert!(list.metadata.resource_version.is_some());

    // The raw bodies carry no data: metadata alone.
    let request = http::Request::get("/api/v1/namespaces/default/configmaps")
        .header(
            "Accept",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
        )
        .body(Vec::new())
        .unwrap();
    let body: serde_json::Value =
        serde_json::from_str(&client.request_text(request).await.unwrap()).unwrap();
    assert_eq!(body["kind"], "PartialObjectMetadataList");
    assert_eq!(body["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(body["items"][0]["kind"], "PartialObjectMetadata");
    assert!(body["items"][0].get("data").is_none(), "{body}");

    // `Api<PartialObjectMeta<K>>` asks for metadata alone (kube-rs's metadata watcher).
    let metadata: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(client.clone(), "default");
    let mut stream = watcher(metadata, watcher::Config::default().labels("app=kube-rs"))
        .applied_objects()
        .boxed();
    let api2 = api.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        api2.create(&PostParams::default(), &configmap("second", "1")).await.unwrap();
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    while !seen.contains(&"second".to_string()) {
        let next =
            tokio::time::timeout_at(deadline, stream.try_next()).await.expect("watcher stalled");
        let meta = next.expect("watch error").expect("stream ended");
        seen.push(meta.metadata.name.clone().unwrap_or_default());
    }
    assert_eq!(seen, ["first", "second"]);
}
