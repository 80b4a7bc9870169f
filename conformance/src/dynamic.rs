//! Helpers for tests that drive kinds as kube-rs dynamic objects (upstream's API-operation
//! conformance tests): building and reading objects, label-selected watches, and API errors.
//! [`crate::cluster::api_resource`] names the resource.

use std::collections::BTreeMap;

use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use kube::api::{Api, DynamicObject, WatchEvent, WatchParams};
use serde_json::Value;

/// `value` as a dynamic object.
pub fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).expect("a DynamicObject")
}

pub fn labels(o: &DynamicObject) -> BTreeMap<String, String> {
    o.metadata.labels.clone().unwrap_or_default()
}

pub fn annotations(o: &DynamicObject) -> BTreeMap<String, String> {
    o.metadata.annotations.clone().unwrap_or_default()
}

pub fn name(o: &DynamicObject) -> String {
    o.metadata.name.clone().unwrap_or_default()
}

/// The objects' names, sorted.
pub fn names(list: &[DynamicObject]) -> Vec<String> {
    let mut names: Vec<String> = list.iter().map(name).collect();
    names.sort();
    names
}

/// A watch's events.
pub type Events = BoxStream<'static, kube::Result<WatchEvent<DynamicObject>>>;

/// A watch of `api`'s objects with `labels`, from `resource_version` (a list's; "" for none:
/// the watch then starts with the current objects, as ADDED events), for at most 60 s.
pub async fn watch(api: &Api<DynamicObject>, labels: &str, resource_version: &str) -> Events {
    let params = WatchParams::default().labels(labels).timeout(60);
    api.watch(&params, resource_version).await.expect("watch").boxed()
}

/// An API error's code, reason and message, or a failure if the call succeeded.
pub fn api_error<T: std::fmt::Debug>(result: kube::Result<T>) -> (u16, String, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.reason, status.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}
