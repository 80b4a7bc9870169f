//! Checks of the compiled-in schema and of the decoder's defences. Transcoding of real objects
//! against prost's encoding is tested in `apis/tests/protobuf.rs`.

use serde_json::{json, Value};

use super::schema::{Kind, Schema, Shape, Special};
use super::wire::{put_bytes, put_key, put_varint, LEN, VARINT};
use super::*;

fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    put_bytes(&mut type_meta, 1, api_version.as_bytes());
    put_bytes(&mut type_meta, 2, kind.as_bytes());
    let mut out = MAGIC.to_vec();
    put_bytes(&mut out, 1, &type_meta);
    put_bytes(&mut out, 2, raw);
    out
}

#[test]
fn schema_loads_and_is_consistent() {
    let schema = Schema::get();
    assert!(schema.messages.len() > 500, "{} messages", schema.messages.len());
    for message in &schema.messages {
        if let Shape::Fields(fields) = &message.shape {
            for field in &fields.list {
                assert!(std::ptr::eq(fields.find(field.tag).unwrap(), field));
                if field.inline {
                    assert!(
                        matches!(field.kind, Kind::Message(_)),
                        "{}.{}",
                        message.name,
                        field.json
                    );
                }
            }
        }
    }
    let special = |name: &str| match &schema.messages[schema.message(name).unwrap()].shape {
        Shape::Special(special) => Some(*special),
        Shape::Fields(_) => None,
    };
    assert_eq!(special("k8s.io.apimachinery.pkg.apis.meta.v1.Time"), Some(Special::Time));
    assert_eq!(
        special("k8s.io.apimachinery.pkg.util.intstr.IntOrString"),
        Some(Special::IntOrString)
    );
    assert_eq!(special("k8s.io.api.authentication.v1.ExtraValue"), Some(Special::StringArray));
    assert_eq!(special("k8s.io.api.core.v1.ConfigMap"), None);
    for (api_version, kind) in [
        ("v1", "ConfigMap"),
        ("v1", "ConfigMapList"),
        ("apps/v1", "Deployment"),
        ("autoscaling/v1", "Scale"),
        ("policy/v1", "Eviction"),
        ("authentication.k8s.io/v1", "TokenRequest"),
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("apiregistration.k8s.io/v1", "APIService"),
        ("v1", "Status"),
        ("v1", "DeleteOptions"),
        ("apps/v1", "DeleteOptions"),
    ] {
        assert!(supports(api_version, kind), "{api_version} {kind}");
    }
    assert!(!supports("example.com/v1", "Widget"));
}

#[test]
fn every_kind_decodes_and_encodes_empty() {
    let schema = Schema::get();
    for (key, _) in schema.kinds() {
        let (api_version, kind) = key.rsplit_once('/').unwrap();
        let object = decode(&envelope(api_version, kind, &[])).unwrap();
        assert_eq!(object, json!({"apiVersion": api_version, "kind": kind}), "{key}");
        let bytes = encode(&object).unwrap();
        assert_eq!(decode(&bytes).unwrap(), object, "{key}");
    }
}

#[test]
fn failures_carry_the_json_path() {
    // ConfigMap.metadata (1) -> ObjectMeta.labels (11) -> entry {key "app", value: varint}.
    let mut entry = Vec::new();
    put_bytes(&mut entry, 1, b"app");
    put_key(&mut entry, 2, VARINT);
    put_varint(&mut entry, 1);
    let mut meta = Vec::new();
    put_bytes(&mut meta, 11, &entry);
    let mut raw = Vec::new();
    put_bytes(&mut raw, 1, &meta);
    let err = decode(&envelope("v1", "ConfigMap", &raw)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot decode the protobuf v1 ConfigMap at metadata.labels[app]: wire type 0 (varint) \
         where length-delimited was expected"
    );
}

#[test]
fn deep_nesting_is_refused() {
    // JSONSchemaProps.not (28) nested far beyond MAX_DEPTH, inside a CRD's validation.
    let mut props = Vec::new();
    for _ in 0..(MAX_DEPTH + 50) {
        let mut outer = Vec::new();
        put_bytes(&mut outer, 28, &props);
        props = outer;
    }
    let mut validation = Vec::new();
    put_bytes(&mut validation, 1, &props);
    let mut version = Vec::new();
    put_bytes(&mut version, 1, b"v1");
    put_bytes(&mut version, 4, &validation);
    let mut spec = Vec::new();
    put_bytes(&mut spec, 7, &version);
    let mut raw = Vec::new();
    put_bytes(&mut raw, 2, &spec);
    let err =
        decode(&envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", &raw)).unwrap_err();
    assert!(err.to_string().contains("nested more than"), "{err}");

    let mut deep = json!({});
    for _ in 0..(MAX_DEPTH + 50) {
        deep = json!({"not": deep});
    }
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": deep}}]},
    });
    assert!(matches!(encode(&crd), Err(ProtobufError::Unencodable { .. })));
}

#[test]
fn nested_envelopes_count_towards_the_depth() {
    // A RawExtension holding an envelope holding a RawExtension ... (ControllerRevision.data).
    let mut body = envelope("apps/v1", "ControllerRevision", &[]);
    for _ in 0..(MAX_DEPTH + 10) {
        let mut raw_extension = Vec::new();
        put_bytes(&mut raw_extension, 1, &body);
        let mut revision = Vec::new();
        put_bytes(&mut revision, 2, &raw_extension);
        body = envelope("apps/v1", "ControllerRevision", &revision);
    }
    assert!(decode(&body).is_err());
}

#[test]
fn unknown_fields_and_groups_are_skipped() {
    let mut raw = Vec::new();
    put_key(&mut raw, 99, VARINT);
    put_varint(&mut raw, 5);
    put_bytes(&mut raw, 98, b"future");
    put_key(&mut raw, 97, 3); // start group
    put_key(&mut raw, 1, VARINT);
    put_varint(&mut raw, 1);
    put_key(&mut raw, 97, 4); // end group
    put_key(&mut raw, 4, VARINT); // immutable
    put_varint(&mut raw, 1);
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", &raw)).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "immutable": true})
    );
    let _ = LEN;
}

#[test]
fn special_messages_decode_like_upstream() {
    let schema = Schema::get();
    let decoder = decode::Decoder { schema };
    let id = |name: &str| schema.message(name).unwrap();
    let meta = "k8s.io.apimachinery.pkg.apis.meta.v1.";
    let run = |name: &str, raw: &[u8]| decoder.message(id(name), raw, 0).unwrap();

    let mut time = Vec::new();
    put_key(&mut time, 1, VARINT);
    put_varint(&mut time, 1_795_248_923);
    put_key(&mut time, 2, VARINT);
    put_varint(&mut time, 123_456_789);
    assert_eq!(run(&format!("{meta}Time"), &time), json!("2026-11-21T08:15:23Z"));
    assert_eq!(run(&format!("{meta}MicroTime"), &time), json!("2026-11-21T08:15:23.123456Z"));
    assert_eq!(run(&format!("{meta}Time"), &[]), Value::Null);

    let mut duration = Vec::new();
    put_key(&mut duration, 1, VARINT);
    put_varint(&mut duration, 3_723_000_000_000);
    assert_eq!(run(&format!("{meta}Duration"), &duration), json!("1h2m3s"));

    let mut fields = Vec::new();
    put_bytes(&mut fields, 1, br#"{"f:data":{".":{}}}"#);
    assert_eq!(run(&format!("{meta}FieldsV1"), &fields), json!({"f:data": {".": {}}}));

    let mut verbs = Vec::new();
    put_bytes(&mut verbs, 1, b"get");
    put_bytes(&mut verbs, 1, b"list");
    assert_eq!(run(&format!("{meta}Verbs"), &verbs), json!(["get", "list"]));

    let quantity = "k8s.io.apimachinery.pkg.api.resource.Quantity";
    assert_eq!(run(quantity, &[]), json!("0"));

    let ext = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.";
    let mut or_bool = Vec::new();
    put_key(&mut or_bool, 1, VARINT);
    put_varint(&mut or_bool, 0);
    assert_eq!(run(&format!("{ext}JSONSchemaPropsOrBool"), &or_bool), json!(false));
    let mut schema_props = Vec::new();
    put_bytes(&mut schema_props, 5, b"string");
    put_bytes(&mut or_bool, 2, &schema_props);
    assert_eq!(run(&format!("{ext}JSONSchemaPropsOrBool"), &or_bool), json!({"type": "string"}));

    let mut or_strings = Vec::new();
    put_bytes(&mut or_strings, 2, b"a");
    put_bytes(&mut or_strings, 2, b"b");
    assert_eq!(run(&format!("{ext}JSONSchemaPropsOrStringArray"), &or_strings), json!(["a", "b"]));
    assert_eq!(run(&format!("{ext}JSONSchemaPropsOrArray"), &[]), Value::Null);
    let mut or_array = Vec::new();
    put_bytes(&mut or_array, 1, &schema_props);
    assert_eq!(run(&format!("{ext}JSONSchemaPropsOrArray"), &or_array), json!({"type": "string"}));

    let mut int_or_string = Vec::new();
    put_key(&mut int_or_string, 1, VARINT);
    put_varint(&mut int_or_string, 2);
    let err = decoder
        .message(id("k8s.io.apimachinery.pkg.util.intstr.IntOrString"), &int_or_string, 0)
        .unwrap_err();
    assert!(err.reason.contains("IntOrString type 2"), "{}", err.reason);
}
