//! kube-rs (the `kube` crate) against the real `rkube server`: typed Api calls, a watcher and
//! a reflector, as controllers written in Rust use them.

use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Client, Config};
use rkube_conformance::cluster::RkubeServer;

async fn client(server: &RkubeServer) -> Client {
    let kubeconfig =
        kube::config::Kubeconfig::read_from(&server.kubeconfig).expect("read kubeconfig");
    let config =
        Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.expect("config");
    Client::try_from(config).expect("client")
}

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
    let client = client(&server).await;
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
    let client = client(&server).await;
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
