//! API details where rkube answered unlike kube-apiserver (issue 15): Events served by both
//! their groups from one storage, ComponentStatus, and the validation of what a request names
//! (the body's apiVersion, a path's namespace, resourceVersions ahead of the store, object
//! sizes, a certificate request's requester). Each test drives the real binary with stock
//! kubectl, kube-rs, or raw HTTPS with the admin certificate where only the wire shows it.

use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, ObjectReference};
use k8s_openapi::api::events::v1::Event as EventsV1Event;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::{watcher, WatchStreamExt};
use rkube_conformance::cluster::RkubeServer;
use serde_json::json;

// --- Events ---------------------------------------------------------------------------------

/// An event written through either API is one object: listed, read and watched through both,
/// with upstream's field names in each, field selectors in each API's own names, and kube-rs's
/// Recorder (events.k8s.io/v1, a create then a merge patch of its series) seen by kubectl's
/// core-API `get events` and by `kubectl events`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_one_resource_in_two_groups() {
    let s = tokio::task::spawn_blocking(RkubeServer::start).await.unwrap();
    let client = s.kube_client().await.unwrap();
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    let v1: Api<EventsV1Event> = Api::namespaced(client.clone(), "default");

    // Watches of both groups, started before anything is written.
    let mut core_watch =
        watcher(core.clone(), watcher::Config::default()).applied_objects().boxed();
    let mut v1_watch = watcher(v1.clone(), watcher::Config::default()).applied_objects().boxed();

    // A core event, as the kubelet and client-go's legacy recorder write them.
    let core_event: CoreEvent = serde_json::from_value(json!({
        "metadata": {"name": "web.core"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "apiVersion": "v1"},
        "reason": "Started", "message": "Started container c", "type": "Normal",
        "source": {"component": "kubelet", "host": "n1"},
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:05Z",
        "count": 3, "reportingComponent": "kubelet", "reportingInstance": "n1"
    }))
    .unwrap();
    core.create(&PostParams::default(), &core_event).await.unwrap();

    // kube-rs's Recorder: events.k8s.io/v1, about a ConfigMap, published twice (a series).
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "settings"}, "data": {"a": "b"}}))
            .unwrap();
    let cm = cms.create(&PostParams::default(), &cm).await.unwrap();
    let reference = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        name: cm.metadata.name.clone(),
        namespace: Some("default".into()),
        uid: cm.metadata.uid.clone(),
        ..Default::default()
    };
    let reporter = Reporter { controller: "example.com/settings-ctl".into(), instance: None };
    let recorder = Recorder::new(client.clone(), reporter);
    let published = Event {
        type_: EventType::Warning,
        reason: "Misconfigured".into(),
        note: Some("key a is deprecated".into()),
        action: "Validate".into(),
        secondary: None,
    };
    recorder.publish(&published, &reference).await.unwrap();
    recorder.publish(&published, &reference).await.unwrap();

    // The core event through events.k8s.io/v1, in that API's names.
    let as_v1 = v1.get("web.core").await.unwrap();
    assert_eq!(as_v1.note.as_deref(), Some("Started container c"));
    assert_eq!(as_v1.regarding.as_ref().and_then(|r| r.name.as_deref()), Some("web"));
    assert_eq!(as_v1.deprecated_count, Some(3));
    assert_eq!(as_v1.deprecated_source.as_ref().and_then(|s| s.host.as_deref()), Some("n1"));
    assert_eq!(as_v1.reporting_controller.as_deref(), Some("kubelet"));
    // The Recorder's event through the core API, its series counted.
    let recorded =
        core.list(&ListParams::default().fields("involvedObject.kind=ConfigMap")).await.unwrap();
    assert_eq!(recorded.items.len(), 1, "{:?}", recorded.items);
    let recorded = &recorded.items[0];
    assert_eq!(recorded.message.as_deref(), Some("key a is deprecated"));
    assert_eq!(recorded.reporting_component.as_deref(), Some("example.com/settings-ctl"));
    assert_eq!(recorded.series.as_ref().and_then(|s| s.count), Some(2));
    assert_eq!(recorded.action.as_deref(), Some("Validate"));
    // events.k8s.io field selectors name the fields their way.
    let by_regarding = v1
        .list(&ListParams::default().fields("regarding.kind=Pod,reportingController=kubelet"))
        .await
        .unwrap();
    let names: Vec<_> = by_regarding.items.iter().filter_map(|e| e.metadata.name.clone()).collect();
    assert_eq!(names, ["web.core"]);
    let err = v1.list(&ListParams::default().fields("involvedObject.kind=Pod")).await.unwrap_err();
    assert!(matches!(&err, kube::Error::Api(s) if s.code == 400), "{err}");

    // Both watches saw both events.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut core_seen = Vec::new();
    while core_seen.len() < 2 {
        let next = tokio::time::timeout_at(deadline, core_watch.try_next()).await;
        let event = next.expect("core watch stalled").unwrap().expect("stream ended");
        let name = event.metadata.name.unwrap_or_default();
        if !core_seen.contains(&name) {
            core_seen.push(name);
        }
    }
    let mut v1_seen = Vec::new();
    while v1_seen.len() < 2 {
        let next = tokio::time::timeout_at(deadline, v1_watch.try_next()).await;
        let event = next.expect("events.k8s.io watch stalled").unwrap().expect("stream ended");
        assert!(event.regarding.is_some(), "an events.k8s.io event in that API's shape");
        let name = event.metadata.name.unwrap_or_default();
        if !v1_seen.contains(&name) {
            v1_seen.push(name);
        }
    }
    core_seen.sort();
    v1_seen.sort();
    assert_eq!(core_seen, v1_seen);

    // kubectl: the core API's table and `kubectl events` show both.
    let s = std::sync::Arc::new(s);
    let s2 = s.clone();
    let (table, events) = tokio::task::spawn_blocking(move || {
        (s2.ok(&["get", "events", "-n", "default"]), s2.ok(&["events", "-n", "default"]))
    })
    .await
    .unwrap();
    for out in [&table, &events] {
        assert!(out.contains("Started container c"), "{out}");
        assert!(out.contains("key a is deprecated"), "{out}");
    }
    assert!(table.contains("configmap/settings"), "{table}");
    assert!(events.contains("ConfigMap/settings"), "{events}");
}
