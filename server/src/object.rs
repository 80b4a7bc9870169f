//! Reading and writing the `metadata` of objects held as JSON values.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// `metadata` as a map, created when missing (or not an object).
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    obj["metadata"].as_object_mut().expect("metadata is an object")
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str().filter(|s| !s.is_empty())
}

pub fn name(obj: &Value) -> Option<&str> {
    meta_str(obj, "name")
}

pub fn namespace(obj: &Value) -> Option<&str> {
    meta_str(obj, "namespace")
}

pub fn resource_version(obj: &Value) -> Option<&str> {
    meta_str(obj, "resourceVersion")
}

pub fn uid(obj: &Value) -> Option<&str> {
    meta_str(obj, "uid")
}

pub fn set_resource_version(obj: &mut Value, revision: i64) {
    meta_mut(obj).insert("resourceVersion".into(), Value::String(revision.to_string()));
}

/// The labels, as a sorted map (non-string values are skipped).
pub fn labels(obj: &Value) -> BTreeMap<String, String> {
    obj["metadata"]["labels"]
        .as_object()
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
        .unwrap_or_default()
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .map(|a| a.iter().filter_map(|f| f.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

pub fn is_terminating(obj: &Value) -> bool {
    meta_str(obj, "deletionTimestamp").is_some()
}

/// The current time as Kubernetes writes timestamps (RFC 3339, seconds, UTC).
pub fn now() -> String {
    use std::cell::RefCell;
    // Formatting with chrono costs about a microsecond, and every write asks (often twice):
    // each thread keeps the text of the current second.
    thread_local! {
        static LAST: RefCell<(i64, String)> = const { RefCell::new((i64::MIN, String::new())) };
    }
    let now = chrono::Utc::now();
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if last.0 != now.timestamp() {
            *last = (now.timestamp(), now.format("%Y-%m-%dT%H:%M:%SZ").to_string());
        }
        last.1.clone()
    })
}

/// A name from `generateName` (see [`rkube_apis::names`]).
pub use rkube_apis::names::generate_name;
