//! JSON patch (RFC 6902, with kube-apiserver's evanphx/json-patch v4 behaviour), JSON merge
//! patch (RFC 7386), and patch types by Content-Type.

use rkube_apis::patch::{apply_patch, decode_patch_body, PatchError, PatchType};
use serde_json::{json, Value};

fn json_patch(original: Value, patch: Value) -> Result<Value, PatchError> {
    apply_patch(PatchType::Json, &original, &patch, None, "")
}

fn merge_patch(original: Value, patch: Value) -> Result<Value, PatchError> {
    apply_patch(PatchType::Merge, &original, &patch, None, "")
}

fn doc() -> Value {
    json!({"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": {"list": [1, 2, 3]}})
}

#[test]
fn json_patch_operations() {
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "add a key",
            json!([{"op": "add", "path": "/metadata/labels/b", "value": "2"}]),
            json!({"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}}, "spec": {"list": [1, 2, 3]}}),
        ),
        (
            "add at an index, at the end, with - and with a negative index",
            json!([
                {"op": "add", "path": "/spec/list/0", "value": 0},
                {"op": "add", "path": "/spec/list/4", "value": 4},
                {"op": "add", "path": "/spec/list/-", "value": 5},
                {"op": "add", "path": "/spec/list/-1", "value": 9}
            ]),
            json!({"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": {"list": [0, 1, 2, 3, 4, 5, 9]}}),
        ),
        (
            "add without a value adds null",
            json!([{"op": "add", "path": "/spec/x"}]),
            json!({"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": {"list": [1, 2, 3], "x": null}}),
        ),
        (
            "remove a key and a negative index",
            json!([{"op": "remove", "path": "/metadata/labels"}, {"op": "remove", "path": "/spec/list/-1"}]),
            json!({"metadata": {"name": "p"}, "spec": {"list": [1, 2]}}),
        ),
        (
            "replace an element, and a missing key (which adds it)",
            json!([{"op": "replace", "path": "/spec/list/1", "value": 20},
                   {"op": "replace", "path": "/metadata/namespace", "value": "ns"}]),
            json!({"metadata": {"name": "p", "namespace": "ns", "labels": {"a": "1"}}, "spec": {"list": [1, 20, 3]}}),
        ),
        (
            "move and copy",
            json!([{"op": "move", "from": "/metadata/labels", "path": "/spec/labels"},
                   {"op": "copy", "from": "/spec/list/0", "path": "/spec/first"}]),
            json!({"metadata": {"name": "p"}, "spec": {"list": [1, 2, 3], "labels": {"a": "1"}, "first": 1}}),
        ),
        (
            "copy from a missing key copies null",
            json!([{"op": "copy", "from": "/metadata/nope", "path": "/spec/copied"}]),
            json!({"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": {"list": [1, 2, 3], "copied": null}}),
        ),
        (
            "passing tests",
            json!([{"op": "test", "path": "/metadata/name", "value": "p"},
                   {"op": "test", "path": "/spec/list", "value": [1, 2, 3]},
                   {"op": "test", "path": "/metadata/missing", "value": null},
                   {"op": "test", "path": "", "value": doc()}]),
            doc(),
        ),
        ("a null patch", Value::Null, doc()),
        ("an empty patch", json!([]), doc()),
        (
            "replace of the whole document",
            json!([{"op": "replace", "path": "", "value": {"x": 1}}]),
            json!({"x": 1}),
        ),
    ];
    for (name, patch, want) in cases {
        assert_eq!(json_patch(doc(), patch).unwrap(), want, "{name}");
    }
}

#[test]
fn json_patch_errors_read_as_upstream() {
    let cases: Vec<(Value, u16, &str)> = vec![
        (json!({"op": "add"}), 400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
        (json!(["add"]), 400, "json: cannot unmarshal string into Go value of type jsonpatch.Operation"),
        (json!([{"op": "frobnicate", "path": "/a"}]), 422, "Unexpected kind: frobnicate"),
        (json!([null]), 422, "Unexpected kind: unknown"),
        (json!([{"op": "add", "value": 1}]), 422, "add operation failed to decode path: missing value"),
        (
            json!([{"op": "add", "path": "/nope/x", "value": 1}]),
            422,
            "add operation does not apply: doc is missing path: \"/nope/x\": missing value",
        ),
        (
            json!([{"op": "add", "path": "/spec/list/7", "value": 1}]),
            422,
            "error in add for path: '/spec/list/7': Unable to access invalid index: 7: invalid index referenced",
        ),
        (
            json!([{"op": "add", "path": "/spec/list/x", "value": 1}]),
            422,
            "error in add for path: '/spec/list/x': value was not a proper array index: 'x': strconv.Atoi: parsing \"x\": invalid syntax",
        ),
        (
            json!([{"op": "remove", "path": "/metadata/nope"}]),
            422,
            "error in remove for path: '/metadata/nope': Unable to remove nonexistent key: nope: missing value",
        ),
        (
            json!([{"op": "remove", "path": "/spec/list/3"}]),
            422,
            "error in remove for path: '/spec/list/3': Unable to access invalid index: 3: invalid index referenced",
        ),
        (
            json!([{"op": "replace", "path": "/spec/list/3", "value": 1}]),
            422,
            "replace operation does not apply: doc is missing key: /spec/list/3: missing value",
        ),
        (
            json!([{"op": "replace", "path": "/nope/x", "value": 1}]),
            422,
            "replace operation does not apply: doc is missing path: /nope/x: missing value",
        ),
        (
            json!([{"op": "move", "from": "/metadata/nope", "path": "/x"}]),
            422,
            "error in move for path: 'nope': Unable to remove nonexistent key: nope: missing value",
        ),
        (
            json!([{"op": "copy", "path": "/x"}]),
            422,
            "copy operation failed to decode from: operation, missing from field: missing value",
        ),
        (
            json!([{"op": "test", "path": "/metadata/name", "value": "q"}]),
            422,
            "testing value /metadata/name failed: test failed",
        ),
        (
            json!([{"op": "test", "path": "/nope/x", "value": 1}]),
            422,
            "test operation does not apply: is missing path: /nope/x: missing value",
        ),
    ];
    for (patch, status, message) in cases {
        let error = json_patch(doc(), patch.clone()).expect_err("the patch should fail");
        assert_eq!((error.status_code(), error.to_string().as_str()), (status, message), "{patch}");
    }
}

#[test]
fn json_patch_failures_answer_422_with_upstreams_generic_message() {
    let error = json_patch(doc(), json!([{"op": "test", "path": "/metadata/name", "value": "q"}]));
    let error = error.unwrap_err();
    assert_eq!(error.status_code(), 422);
    assert_eq!(error.reason(), "Invalid");
    assert_eq!(
        error.status_message(),
        "the server rejected our request due to an error in our request"
    );
}

#[test]
fn json_patch_operation_limit() {
    let ops: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/metadata/name", "value": "p"}))
        .collect();
    let error = json_patch(doc(), Value::Array(ops)).unwrap_err();
    assert_eq!(error.status_code(), 413);
    assert_eq!(error.reason(), "RequestEntityTooLarge");
    assert_eq!(
        error.status_message(),
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    );
}

#[test]
fn merge_patch_cases() {
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "merge, delete with null, replace lists",
            json!({"metadata": {"labels": {"a": null, "b": "2"}}, "spec": {"list": [9]}}),
            json!({"metadata": {"name": "p", "labels": {"b": "2"}}, "spec": {"list": [9]}}),
        ),
        (
            "new values have their nulls pruned, also in objects inside lists",
            json!({"status": {"x": null, "y": [{"z": null, "w": 1}, null]}}),
            json!({"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": {"list": [1, 2, 3]}, "status": {"y": [{"w": 1}, null]}}),
        ),
        (
            "an object replacing a scalar is pruned",
            json!({"metadata": {"name": {"first": "p", "last": null}}}),
            json!({"metadata": {"name": {"first": "p"}, "labels": {"a": "1"}}, "spec": {"list": [1, 2, 3]}}),
        ),
        ("an empty patch", json!({}), doc()),
    ];
    for (name, patch, want) in cases {
        assert_eq!(merge_patch(doc(), patch).unwrap(), want, "{name}");
    }
    let error = merge_patch(doc(), Value::Null).unwrap_err();
    assert_eq!(
        (error.status_code(), error.status_message()),
        (400, "Invalid JSON Patch".to_string())
    );
}

#[test]
fn patch_types_by_content_type() {
    let cases = [
        ("application/json-patch+json", Some(PatchType::Json)),
        ("application/merge-patch+json", Some(PatchType::Merge)),
        ("application/strategic-merge-patch+json", Some(PatchType::StrategicMerge)),
        ("application/strategic-merge-patch+json; charset=utf-8", Some(PatchType::StrategicMerge)),
        ("application/apply-patch+yaml", Some(PatchType::ApplyYaml)),
        ("application/apply-patch+cbor", Some(PatchType::ApplyCbor)),
        ("application/json", None),
        ("", None),
    ];
    for (content_type, want) in cases {
        assert_eq!(PatchType::from_content_type(content_type), want, "{content_type:?}");
    }
    for patch_type in PatchType::ALL {
        assert_eq!(PatchType::from_content_type(patch_type.content_type()), Some(patch_type));
    }
}

#[test]
fn apply_patches_are_a_distinct_unsupported_error() {
    let error = apply_patch(PatchType::ApplyYaml, &doc(), &json!({}), None, "").unwrap_err();
    assert_eq!(error, PatchError::ApplyNotSupported(PatchType::ApplyYaml));
    assert_eq!(error.status_code(), 415);
    assert_eq!(error.reason(), "UnsupportedMediaType");
}

#[test]
fn decoding_patch_bodies() {
    assert_eq!(decode_patch_body(PatchType::Json, b"[]").unwrap(), json!([]));
    let error = decode_patch_body(PatchType::Merge, b"{nope").unwrap_err();
    assert_eq!((error.status_code(), error.to_string()), (400, "Invalid JSON Patch".to_string()));
    assert_eq!(decode_patch_body(PatchType::StrategicMerge, b"{").unwrap_err().status_code(), 400);
}

/// `copy` operations that double the document: upstream stops them once the bytes copied in
/// one patch pass `JSONPatchMaxCopyBytes` (3 MiB), before the copy is made.
#[test]
fn json_patch_copies_are_bounded() {
    let mut ops = vec![json!({"op": "add", "path": "/data", "value": {"k": "x".repeat(1000)}})];
    for i in 0..25 {
        ops.push(json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")}));
    }
    let started = std::time::Instant::now();
    let err = json_patch(json!({"metadata": {"name": "a"}}), Value::Array(ops)).unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(err.status_code(), 422);
    let PatchError::Unprocessable(detail) = &err else { panic!("{err:?}") };
    assert!(
        detail
            .starts_with("Unable to complete the copy, the accumulated size increase of copy is ")
            && detail.ends_with(", exceeding the limit 3145728"),
        "{detail}"
    );

    // As upstream's own test: each copy of a 49-character string adds 51 bytes (the quotes
    // count), and the sum is what is limited, not each copy.
    let big = "A".repeat(3 * 1024 * 1024 / 2);
    let copy = json!({"op": "copy", "path": "/foo/-", "from": "/foo/1"});
    let once = json_patch(json!({"foo": ["A", big]}), json!([copy])).unwrap();
    assert_eq!(once["foo"].as_array().unwrap().len(), 3);
    let err = json_patch(json!({"foo": ["A", big]}), json!([copy, copy])).unwrap_err();
    assert_eq!(err.status_code(), 422, "{err:?}");
}
