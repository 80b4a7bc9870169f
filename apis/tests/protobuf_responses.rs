//! What rkube answers in the Kubernetes protobuf encoding (lists, `Status`, watch frames),
//! read back with k8s-pb's prost types to prove the bytes are upstream's messages, and with
//! `protobuf::decode` to prove nothing is lost on the way.

// In a module named for the feature, so that `cargo test -p rkube-apis protobuf` runs these.
mod protobuf_responses {
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    use k8s_pb::apimachinery::pkg::runtime::Unknown;
    use prost::Message;
    use rkube_apis::protobuf;
    use serde_json::{json, Value};

    /// The envelope's type and raw message, read with prost.
    fn unwrap(body: &[u8]) -> (String, String, Vec<u8>) {
        assert_eq!(&body[..4], b"k8s\0", "the magic bytes");
        let unknown = Unknown::decode(&body[4..]).expect("the envelope is a runtime.Unknown");
        let type_meta = unknown.type_meta.expect("typeMeta");
        assert_eq!(unknown.content_encoding.as_deref(), Some(""));
        assert_eq!(unknown.content_type.as_deref(), Some(""));
        (
            type_meta.api_version.unwrap_or_default(),
            type_meta.kind.unwrap_or_default(),
            unknown.raw.unwrap_or_default(),
        )
    }

    fn configmap(name: &str, rv: &str) -> Value {
        json!({
            "metadata": {
                "name": name, "namespace": "default", "uid": format!("uid-{name}"),
                "resourceVersion": rv, "creationTimestamp": "2026-01-02T03:04:05Z",
                "labels": {"app": "web"},
            },
            "data": {"key": format!("value of {name}")},
        })
    }

    #[test]
    fn a_list_is_upstreams_list_message() {
        let list = json!({
            "kind": "ConfigMapList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "42", "continue": "token", "remainingItemCount": 3},
            "items": [configmap("a", "40"), configmap("b", "41")],
        });
        let body = protobuf::encode(&list).unwrap();
        let (api_version, kind, raw) = unwrap(&body);
        assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "ConfigMapList"));
        let decoded = core::ConfigMapList::decode(raw.as_slice()).unwrap();
        let list_meta = decoded.metadata.unwrap();
        assert_eq!(list_meta.resource_version.as_deref(), Some("42"));
        assert_eq!(list_meta.r#continue.as_deref(), Some("token"));
        assert_eq!(list_meta.remaining_item_count, Some(3));
        assert_eq!(decoded.items.len(), 2);
        let b = &decoded.items[1];
        let b_meta = b.metadata.as_ref().unwrap();
        assert_eq!(b_meta.name.as_deref(), Some("b"));
        assert_eq!(b_meta.resource_version.as_deref(), Some("41"));
        assert_eq!(b_meta.labels.get("app").map(String::as_str), Some("web"));
        assert_eq!(b.data.get("key").map(String::as_str), Some("value of b"));
        let created = b_meta.creation_timestamp.as_ref().unwrap();
        assert_eq!(created.seconds, Some(1_767_323_045));

        // And back: the same JSON, nothing lost.
        assert_eq!(protobuf::decode(&body).unwrap(), list);
    }

    #[test]
    fn an_empty_list_keeps_its_resource_version() {
        let list = json!({"kind": "PodList", "apiVersion": "v1",
            "metadata": {"resourceVersion": "7"}, "items": []});
        let (_, kind, raw) = unwrap(&protobuf::encode(&list).unwrap());
        assert_eq!(kind, "PodList");
        let decoded = core::PodList::decode(raw.as_slice()).unwrap();
        assert_eq!(decoded.metadata.unwrap().resource_version.as_deref(), Some("7"));
        assert!(decoded.items.is_empty());
    }

    #[test]
    fn a_ten_thousand_item_list_encodes() {
        let items: Vec<Value> = (0..10_000).map(|i| configmap(&format!("cm-{i}"), "5")).collect();
        let list = json!({"kind": "ConfigMapList", "apiVersion": "v1",
            "metadata": {"resourceVersion": "9"}, "items": items});
        let started = std::time::Instant::now();
        let body = protobuf::encode(&list).unwrap();
        let took = started.elapsed();
        let (_, _, raw) = unwrap(&body);
        let decoded = core::ConfigMapList::decode(raw.as_slice()).unwrap();
        assert_eq!(decoded.items.len(), 10_000);
        assert_eq!(
            decoded.items[9_999].metadata.as_ref().unwrap().name.as_deref(),
            Some("cm-9999")
        );
        // Generous for a debug build on a shared machine; a per-item re-parse of the schema
        // or quadratic copying would take far longer.
        eprintln!("10k items encoded in {took:?}");
        assert!(took < std::time::Duration::from_secs(10), "took {took:?}");
    }

    #[test]
    fn a_status_is_upstreams_status_message() {
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": "configmaps \"x\" not found", "reason": "NotFound",
            "details": {"name": "x", "kind": "configmaps",
                "causes": [{"reason": "FieldValueInvalid", "message": "bad", "field": "data"}]},
            "code": 404,
        });
        let body = protobuf::encode(&status).unwrap();
        let (api_version, kind, raw) = unwrap(&body);
        assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "Status"));
        let decoded = meta::Status::decode(raw.as_slice()).unwrap();
        assert_eq!(decoded.code, Some(404));
        assert_eq!(decoded.reason.as_deref(), Some("NotFound"));
        assert_eq!(decoded.status.as_deref(), Some("Failure"));
        assert_eq!(decoded.message.as_deref(), Some("configmaps \"x\" not found"));
        let details = decoded.details.unwrap();
        assert_eq!(details.name.as_deref(), Some("x"));
        assert_eq!(details.causes[0].field.as_deref(), Some("data"));
        assert_eq!(protobuf::decode(&body).unwrap(), status);
    }

    /// The frames of a stream: (event type, object body).
    fn frames(mut stream: &[u8]) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        while !stream.is_empty() {
            let len = u32::from_be_bytes(stream[..4].try_into().unwrap()) as usize;
            let event = meta::WatchEvent::decode(&stream[4..4 + len]).unwrap();
            out.push((event.r#type.unwrap(), event.object.unwrap().raw.unwrap()));
            stream = &stream[4 + len..];
        }
        out
    }

    #[test]
    fn watch_frames_are_length_prefixed_watch_events() {
        let mut added = configmap("a", "10");
        added["kind"] = json!("ConfigMap");
        added["apiVersion"] = json!("v1");
        let bookmark = json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"resourceVersion": "12", "creationTimestamp": null,
                "annotations": {"k8s.io/initial-events-end": "true"}}});
        let gone = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": "too old resource version: 1 (5)",
            "reason": "Expired", "code": 410});
        let mut stream = Vec::new();
        for (kind, object) in [("ADDED", &added), ("BOOKMARK", &bookmark), ("ERROR", &gone)] {
            stream.extend(protobuf::watch_frame(kind, object).unwrap());
        }
        let frames = frames(&stream);
        let kinds: Vec<&str> = frames.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kinds, ["ADDED", "BOOKMARK", "ERROR"]);

        // Each object is a whole protobuf body, envelope and all.
        let (_, kind, raw) = unwrap(&frames[0].1);
        assert_eq!(kind, "ConfigMap");
        let cm = core::ConfigMap::decode(raw.as_slice()).unwrap();
        assert_eq!(cm.metadata.unwrap().resource_version.as_deref(), Some("10"));
        assert_eq!(protobuf::decode(&frames[0].1).unwrap(), added);

        let (_, _, raw) = unwrap(&frames[1].1);
        let marked = core::ConfigMap::decode(raw.as_slice()).unwrap().metadata.unwrap();
        assert_eq!(marked.resource_version.as_deref(), Some("12"));
        assert_eq!(
            marked.annotations.get("k8s.io/initial-events-end").map(String::as_str),
            Some("true")
        );
        // A null member is Go's zero value: nothing on the wire, nothing read back.
        let mut expected = bookmark.clone();
        expected["metadata"].as_object_mut().unwrap().remove("creationTimestamp");
        assert_eq!(protobuf::decode(&frames[1].1).unwrap(), expected);

        let (_, kind, raw) = unwrap(&frames[2].1);
        assert_eq!(kind, "Status");
        assert_eq!(meta::Status::decode(raw.as_slice()).unwrap().code, Some(410));
    }

    #[test]
    fn kinds_without_a_message_are_refused() {
        let custom = json!({"kind": "Widget", "apiVersion": "example.com/v1",
            "metadata": {"name": "w"}});
        assert!(!protobuf::supports("example.com/v1", "Widget"));
        assert!(matches!(
            protobuf::encode(&custom),
            Err(protobuf::ProtobufError::UnknownKind { .. })
        ));
        assert!(protobuf::watch_frame("ADDED", &custom).is_err());
    }
}
