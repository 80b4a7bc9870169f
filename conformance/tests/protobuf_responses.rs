//! Responses in the Kubernetes protobuf encoding, as client-go asks for them
//! (`Accept: application/vnd.kubernetes.protobuf, application/json`), read over raw HTTP/2
//! with upstream's messages (k8s-pb): objects from get, create, patch and delete, lists with
//! limit and continue (and whole lists from the watch cache), `Status` errors, a watch's
//! length-prefixed `WatchEvent` frames (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR),
//! metadata-only lists, and custom resources, which have no protobuf message: JSON when the
//! client takes JSON too, 406 when it takes only protobuf. Every kubectl release still works.

use std::time::Duration;

use bytes::Bytes;
use http::Method;
use http_body_util::BodyExt;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::h2::H2Client;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const CLIENT_GO: &str = "application/vnd.kubernetes.protobuf, application/json";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {color: {type: string}}}
"#;

fn s(text: &str) -> Option<String> {
    Some(text.to_string())
}

/// A protobuf request body: the magic, then the runtime.Unknown around the message.
fn envelope(api_version: &str, kind: &str, object: &impl Message) -> Bytes {
    let unknown = Unknown {
        type_meta: Some(TypeMeta { api_version: s(api_version), kind: s(kind) }),
        raw: Some(object.encode_to_vec()),
        content_encoding: s(""),
        content_type: s(""),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    body.into()
}

/// A protobuf answer's kind and message bytes, read with prost.
fn unwrap(body: &[u8]) -> (String, String, Vec<u8>) {
    assert!(body.starts_with(b"k8s\0"), "not a protobuf body: {}", String::from_utf8_lossy(body));
    let unknown = Unknown::decode(&body[4..]).expect("a runtime.Unknown");
    let type_meta = unknown.type_meta.unwrap_or_default();
    (
        type_meta.api_version.unwrap_or_default(),
        type_meta.kind.unwrap_or_default(),
        unknown.raw.unwrap_or_default(),
    )
}

/// The answer's message of the kind expected, checking the envelope names it.
fn message<M: Message + Default>(body: &[u8], api_version: &str, kind: &str) -> M {
    let (v, k, raw) = unwrap(body);
    assert_eq!((v.as_str(), k.as_str()), (api_version, kind));
    M::decode(raw.as_slice()).unwrap_or_else(|e| panic!("{kind} does not decode: {e}"))
}

fn content_type(headers: &http::HeaderMap) -> &str {
    headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("")
}

fn configmap(name: &str, value: &str) -> core::ConfigMap {
    core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: s(name),
            labels: [("test".to_string(), "pb".to_string())].into(),
            ..Default::default()
        }),
        data: [("key".to_string(), value.to_string())].into(),
        ..Default::default()
    }
}

fn name_of(cm: &core::ConfigMap) -> &str {
    cm.metadata.as_ref().and_then(|m| m.name.as_deref()).unwrap_or("")
}

/// Reads watch frames from `body` until `want` events came (or 20 s passed).
async fn frames(
    body: &mut hyper::body::Incoming,
    buffer: &mut Vec<u8>,
    want: usize,
) -> Vec<(String, Vec<u8>)> {
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while events.len() < want {
        while buffer.len() >= 4 {
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
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    buffer.extend_from_slice(&data);
                }
            }
            Ok(other) => panic!("the watch ended after {} events: {other:?}", events.len()),
            Err(_) => panic!("{} of {want} events in 20 s: {events:?}", events.len()),
        }
    }
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_in_kinds_answer_in_protobuf() {
    let server = RkubeServer::start();
    let client = H2Client::connect(server.data_dir.path(), server.port).await.unwrap();
    let pb_body = [("content-type", PROTOBUF), ("accept", CLIENT_GO)];

    // Create, sent and answered in protobuf.
    let body = envelope("v1", "ConfigMap", &configmap("pb-a", "one"));
    let (code, headers, answer) =
        client.request(Method::POST, CONFIGMAPS, &pb_body, body).await.unwrap();
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&answer));
    assert_eq!(content_type(&headers), PROTOBUF);
    let created: core::ConfigMap = message(&answer, "v1", "ConfigMap");
    let created_meta = created.metadata.clone().unwrap();
    assert_eq!(created_meta.name.as_deref(), Some("pb-a"));
    assert!(created_meta.uid.as_deref().is_some_and(|u| !u.is_empty()));
    assert!(created_meta.creation_timestamp.and_then(|t| t.seconds).unwrap_or(0) > 0);
    let created_rv = created_meta.resource_version.unwrap();

    // A JSON body, answered in protobuf all the same.
    for name in ["pb-b", "pb-c", "pb-d"] {
        let json = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","labels":{{"test":"pb"}}}},"data":{{"key":"{name}"}}}}"#
        );
        let headers = [("content-type", "application/json"), ("accept", PROTOBUF)];
        let (code, _, answer) =
            client.request(Method::POST, CONFIGMAPS, &headers, json.into()).await.unwrap();
        assert_eq!(code, 201);
        let cm: core::ConfigMap = message(&answer, "v1", "ConfigMap");
        assert_eq!(name_of(&cm), name);
    }

    // Get.
    let path = format!("{CONFIGMAPS}/pb-a");
    let (code, headers, answer) =
        client.request(Method::GET, &path, &[("accept", CLIENT_GO)], Bytes::new()).await.unwrap();
    assert_eq!(code, 200);
    assert_eq!(content_type(&headers), PROTOBUF);
    let got: core::ConfigMap = message(&answer, "v1", "ConfigMap");
    assert_eq!(got, created, "get answers the object create answered");

    // Pages: limit and continue, each a ConfigMapList with its ListMeta.
    let page = |query: String| {
        let client = client.clone();
        async move {
            let path = format!("{CONFIGMAPS}?labelSelector=test%3Dpb{query}");
            let (code, headers, answer) = client
                .request(Method::GET, &path, &[("accept", PROTOBUF)], Bytes::new())
                .await
                .unwrap();
            assert_eq!(code, 200, "{}", String::from_utf8_lossy(&answer));
            assert_eq!(content_type(&headers), PROTOBUF);
            message::<core::ConfigMapList>(&answer, "v1", "ConfigMapList")
        }
    };
    let first = page("&limit=3".to_string()).await;
    let first_meta = first.metadata.clone().unwrap();
    let token = first_meta.r#continue.clone().expect("a continue token");
    // A page with a selector has no count of what is left (the store counts keys, not
    // matches), as upstream's.
    assert_eq!(first_meta.remaining_item_count, None);
    let names: Vec<&str> = first.items.iter().map(name_of).collect();
    assert_eq!(names, ["pb-a", "pb-b", "pb-c"]);
    let rest = page(format!("&limit=3&continue={token}")).await;
    let names: Vec<&str> = rest.items.iter().map(name_of).collect();
    assert_eq!(names, ["pb-d"]);
    assert!(rest.metadata.unwrap().r#continue.unwrap_or_default().is_empty());
    // The whole list, from the watch cache.
    let all = page(String::new()).await;
    assert_eq!(all.items.len(), 4);
    let list_rv = all.metadata.unwrap().resource_version.unwrap();
    assert!(list_rv.parse::<i64>().unwrap() >= created_rv.parse::<i64>().unwrap());
    assert_eq!(all.items[0].data.get("key").map(String::as_str), Some("one"));

    // Errors are protobuf Status messages.
    let (code, headers, answer) = client
        .request(
            Method::GET,
            &format!("{CONFIGMAPS}/missing"),
            &[("accept", CLIENT_GO)],
            Bytes::new(),
        )
        .await
        .unwrap();
    assert_eq!(code, 404);
    assert_eq!(content_type(&headers), PROTOBUF);
    let status: meta::Status = message(&answer, "v1", "Status");
    assert_eq!(status.code, Some(404));
    assert_eq!(status.reason.as_deref(), Some("NotFound"));
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(status.message.as_deref(), Some("configmaps \"missing\" not found"));
    let details = status.details.unwrap();
    assert_eq!(
        (details.name.as_deref(), details.kind.as_deref()),
        (Some("missing"), Some("configmaps"))
    );
    // Bad protobuf input: a 400 Status, in protobuf.
    let (code, _, answer) = client
        .request(Method::POST, CONFIGMAPS, &pb_body, Bytes::from_static(b"k8s\0\x0a\xff"))
        .await
        .unwrap();
    assert_eq!(code, 400);
    let status: meta::Status = message(&answer, "v1", "Status");
    assert_eq!(status.reason.as_deref(), Some("BadRequest"));

    // A watch: the initial state, its end bookmark, then changes as they happen.
    let watch = format!(
        "{CONFIGMAPS}?watch=1&labelSelector=test%3Dpb&sendInitialEvents=true\
         &resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=60"
    );
    let response =
        client.send(Method::GET, &watch, &[("accept", CLIENT_GO)], Bytes::new()).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        content_type(response.headers()),
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut body = response.into_body();
    let mut buffer = Vec::new();
    let initial = frames(&mut body, &mut buffer, 5).await;
    let kinds: Vec<&str> = initial.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["ADDED", "ADDED", "ADDED", "ADDED", "BOOKMARK"]);
    let added: core::ConfigMap = message(&initial[0].1, "v1", "ConfigMap");
    assert_eq!(name_of(&added), "pb-a");
    let bookmark: core::ConfigMap = message(&initial[4].1, "v1", "ConfigMap");
    let marked = bookmark.metadata.unwrap();
    assert_eq!(
        marked.annotations.get("k8s.io/initial-events-end").map(String::as_str),
        Some("true")
    );
    assert!(marked.resource_version.is_some_and(|rv| !rv.is_empty()));

    let patch = [("content-type", "application/merge-patch+json"), ("accept", CLIENT_GO)];
    let (code, _, answer) = client
        .request(Method::PATCH, &path, &patch, Bytes::from_static(br#"{"data":{"key":"two"}}"#))
        .await
        .unwrap();
    assert_eq!(code, 200);
    let patched: core::ConfigMap = message(&answer, "v1", "ConfigMap");
    assert_eq!(patched.data.get("key").map(String::as_str), Some("two"));
    let (code, headers, answer) = client
        .request(Method::DELETE, &path, &[("accept", CLIENT_GO)], Bytes::new())
        .await
        .unwrap();
    assert_eq!(code, 200);
    assert_eq!(content_type(&headers), PROTOBUF);
    // What a delete answers (the object or a success Status) is a protobuf message too.
    match unwrap(&answer).1.as_str() {
        "ConfigMap" => assert_eq!(name_of(&message(&answer, "v1", "ConfigMap")), "pb-a"),
        _ => {
            let status: meta::Status = message(&answer, "v1", "Status");
            assert_eq!(status.status.as_deref(), Some("Success"));
        }
    }
    let changes = frames(&mut body, &mut buffer, 2).await;
    assert_eq!(changes[0].0, "MODIFIED");
    let modified: core::ConfigMap = message(&changes[0].1, "v1", "ConfigMap");
    assert_eq!(modified.data.get("key").map(String::as_str), Some("two"));
    assert_eq!(changes[1].0, "DELETED");
    assert_eq!(name_of(&message(&changes[1].1, "v1", "ConfigMap")), "pb-a");
    drop(body);

    // A watch from a revision the cache will not reach in time ends with an ERROR event.
    let ahead = format!("{CONFIGMAPS}?watch=1&resourceVersion=999999999&timeoutSeconds=30");
    let response =
        client.send(Method::GET, &ahead, &[("accept", PROTOBUF)], Bytes::new()).await.unwrap();
    let mut body = response.into_body();
    let error = frames(&mut body, &mut Vec::new(), 1).await;
    assert_eq!(error[0].0, "ERROR");
    let status: meta::Status = message(&error[0].1, "v1", "Status");
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert!(status.code.unwrap_or(0) >= 400, "{status:?}");

    // Tables have no protobuf message: the JSON Table asked for next.
    let table = format!(
        "{PROTOBUF};as=Table;g=meta.k8s.io;v=v1, application/json;as=Table;g=meta.k8s.io;v=v1"
    );
    let (code, headers, answer) =
        client.request(Method::GET, CONFIGMAPS, &[("accept", &table)], Bytes::new()).await.unwrap();
    assert_eq!(code, 200);
    assert_eq!(content_type(&headers), "application/json");
    let table: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(table["kind"], "Table");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_fall_back_to_json() {
    let server = RkubeServer::start();
    server.define_crd(CRD, "widgets.example.com");
    server.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, labels: {test: pb}}\nspec: {color: red}\n",
    );
    let client = H2Client::connect(server.data_dir.path(), server.port).await.unwrap();
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";

    // client-go's default: JSON, since a custom resource has no protobuf message.
    let path = format!("{widgets}/w1");
    let (code, headers, answer) =
        client.request(Method::GET, &path, &[("accept", CLIENT_GO)], Bytes::new()).await.unwrap();
    assert_eq!(code, 200);
    assert_eq!(content_type(&headers), "application/json");
    let widget: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(widget["spec"]["color"], "red");
    let (code, headers, _) =
        client.request(Method::GET, widgets, &[("accept", CLIENT_GO)], Bytes::new()).await.unwrap();
    assert_eq!((code.as_u16(), content_type(&headers)), (200, "application/json"));

    // Protobuf alone: 406, its Status in the encoding the client asked for, as upstream.
    let (code, _, answer) =
        client.request(Method::GET, &path, &[("accept", PROTOBUF)], Bytes::new()).await.unwrap();
    assert_eq!(code, 406);
    let status: meta::Status = message(&answer, "v1", "Status");
    assert_eq!(status.reason.as_deref(), Some("NotAcceptable"));
    assert_eq!(
        status.message.as_deref(),
        Some("only the following media types are accepted: application/json, application/yaml")
    );

    // Metadata has a message whatever the kind: a protobuf PartialObjectMetadataList.
    let accept = format!("{PROTOBUF};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1");
    let (code, headers, answer) =
        client.request(Method::GET, widgets, &[("accept", &accept)], Bytes::new()).await.unwrap();
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&answer));
    assert_eq!(content_type(&headers), PROTOBUF);
    let list: meta::PartialObjectMetadataList =
        message(&answer, "meta.k8s.io/v1", "PartialObjectMetadataList");
    let names: Vec<&str> =
        list.items.iter().filter_map(|i| i.metadata.as_ref()?.name.as_deref()).collect();
    assert_eq!(names, ["w1"]);

    // A metadata watch (client-go's metadata informers) streams PartialObjectMetadata frames.
    let accept = format!("{PROTOBUF};as=PartialObjectMetadata;g=meta.k8s.io;v=v1");
    let watch = format!("{widgets}?watch=1&timeoutSeconds=30");
    let response =
        client.send(Method::GET, &watch, &[("accept", &accept)], Bytes::new()).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        content_type(response.headers()),
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut body = response.into_body();
    let events = frames(&mut body, &mut Vec::new(), 1).await;
    assert_eq!(events[0].0, "ADDED");
    let object: meta::PartialObjectMetadata =
        message(&events[0].1, "meta.k8s.io/v1", "PartialObjectMetadata");
    let labels = object.metadata.unwrap().labels;
    assert_eq!(labels.get("test").map(String::as_str), Some("pb"));
}

#[test]
fn every_kubectl_release_still_works() {
    let server = RkubeServer::start();
    let releases: Vec<_> = std::fs::read_dir("/usr/lib/google-cloud-sdk/bin")
        .map(|dir| {
            dir.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("kubectl.1."))
                })
                .collect()
        })
        .unwrap_or_default();
    let kubectls: Vec<_> =
        std::iter::once(rkube_conformance::cluster::kubectl_binary()).chain(releases).collect();
    for (i, kubectl) in kubectls.iter().enumerate() {
        let name = format!("k{i}");
        // kubectl 1.32 and later send the new object in protobuf.
        server.ok_with(kubectl, &["create", "configmap", &name, "--from-literal=a=b"], None);
        let got =
            server.ok_with(kubectl, &["get", "configmap", &name, "-o", "jsonpath={.data.a}"], None);
        assert_eq!(got.trim(), "b", "{}", kubectl.display());
        let table = server.ok_with(kubectl, &["get", "configmaps"], None);
        assert!(table.contains(&name), "{}: {table}", kubectl.display());
        server.ok_with(kubectl, &["delete", "configmap", &name], None);
    }
}

/// A list of thousands of objects in protobuf, from the watch cache and in pages: every item
/// there, smaller than the JSON, in bounded time. Prints the figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_list_in_protobuf() {
    const COUNT: usize = 3000;
    let server = RkubeServer::start();
    let client = H2Client::connect(server.data_dir.path(), server.port).await.unwrap();
    let headers = [("content-type", PROTOBUF), ("accept", PROTOBUF)];
    let started = std::time::Instant::now();
    for chunk in (0..COUNT).collect::<Vec<_>>().chunks(50) {
        let creates = chunk.iter().map(|i| {
            let body = envelope("v1", "ConfigMap", &configmap(&format!("big-{i:05}"), "a value"));
            client.request(Method::POST, CONFIGMAPS, &headers, body)
        });
        for answer in futures_util::future::join_all(creates).await {
            assert_eq!(answer.unwrap().0, 201);
        }
    }
    eprintln!("{COUNT} protobuf creates in {:?}", started.elapsed());
    let path = format!("{CONFIGMAPS}?labelSelector=test%3Dpb");
    let mut timings = Vec::new();
    for accept in [PROTOBUF, "application/json"] {
        let started = std::time::Instant::now();
        let (code, headers, answer) =
            client.request(Method::GET, &path, &[("accept", accept)], Bytes::new()).await.unwrap();
        let took = started.elapsed();
        assert_eq!(code, 200);
        assert_eq!(content_type(&headers), accept);
        eprintln!("list of {COUNT} as {accept}: {} bytes in {took:?}", answer.len());
        timings.push((took, answer.len()));
        if accept == PROTOBUF {
            let list: core::ConfigMapList = message(&answer, "v1", "ConfigMapList");
            assert_eq!(list.items.len(), COUNT);
            assert_eq!(name_of(&list.items[COUNT - 1]), format!("big-{:05}", COUNT - 1));
        }
    }
    let ((pb_time, pb_bytes), (_, json_bytes)) = (timings[0], timings[1]);
    assert!(pb_bytes < json_bytes, "protobuf {pb_bytes} bytes, JSON {json_bytes}");
    // JSON's whole list copies the cached bytes; protobuf's parses and encodes each item once
    // (about 0.1 ms an item in a debug build). Generous, for shared cores: a per-item cost
    // that grew with the list (re-parsing or copying the whole) would blow far past it.
    assert!(pb_time < Duration::from_secs(5), "{pb_time:?} for {COUNT} items");
    // Pages of 1000, at one revision.
    let mut token = String::new();
    let mut seen = 0;
    for _ in 0..10 {
        let page = format!("{path}&limit=1000&continue={token}");
        let (_, _, answer) = client
            .request(Method::GET, &page, &[("accept", PROTOBUF)], Bytes::new())
            .await
            .unwrap();
        let list: core::ConfigMapList = message(&answer, "v1", "ConfigMapList");
        seen += list.items.len();
        token = list.metadata.and_then(|m| m.r#continue).unwrap_or_default();
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(seen, COUNT);
}
