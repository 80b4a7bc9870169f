//! The selectors of what owns or fronts pods (Services, ReplicationControllers, ReplicaSets,
//! StatefulSets), watched so that a pod without spread constraints of its own gets
//! upstream's system defaults with upstream's `DefaultSelector`: the union of the selectors
//! of everything in its namespace that selects it.

use std::collections::BTreeMap;

use futures::stream::{BoxStream, StreamExt};
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{ReplicationController, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as ApiLabelSelector;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use kube::Client;
use rkube_apis::selectors::LabelSelector;

use crate::framework::PodInfo;
use crate::plugins::{label_selector, pod_labels};

/// One change to the selectors the scheduler knows.
pub enum Update {
    /// `(kind, namespace, name)` now selects with this selector (None: gone or selects
    /// nothing).
    Set(&'static str, String, String, Option<ApiLabelSelector>),
    /// A relist of one kind starts: forget its selectors.
    Clear(&'static str),
}

/// The selectors, by namespace, then (kind, name).
#[derive(Default)]
pub struct Workloads {
    by_namespace: BTreeMap<String, BTreeMap<(&'static str, String), ApiLabelSelector>>,
}

impl Workloads {
    pub fn apply(&mut self, update: Update) {
        match update {
            Update::Set(kind, namespace, name, Some(selector)) => {
                self.by_namespace.entry(namespace).or_default().insert((kind, name), selector);
            }
            Update::Set(kind, namespace, name, None) => {
                if let Some(selectors) = self.by_namespace.get_mut(&namespace) {
                    selectors.remove(&(kind, name));
                }
            }
            Update::Clear(kind) => {
                for selectors in self.by_namespace.values_mut() {
                    selectors.retain(|(k, _), _| *k != kind);
                }
            }
        }
    }

    /// Upstream's `DefaultSelector`: the labels and expressions of every selector in the
    /// pod's namespace that selects it, together; None when nothing does.
    pub fn default_spread_selector(&self, pod: &PodInfo) -> Option<LabelSelector> {
        let selectors = self.by_namespace.get(pod.namespace())?;
        let labels = pod_labels(pod);
        let mut merged = ApiLabelSelector::default();
        for selector in selectors.values() {
            let parsed = label_selector(Some(selector), &BTreeMap::new());
            if parsed.is_empty() || !parsed.matches(labels) {
                continue;
            }
            if let Some(more) = &selector.match_labels {
                merged.match_labels.get_or_insert_with(Default::default).extend(more.clone());
            }
            if let Some(more) = &selector.match_expressions {
                merged.match_expressions.get_or_insert_with(Vec::new).extend(more.clone());
            }
        }
        if merged.match_labels.is_none() && merged.match_expressions.is_none() {
            return None;
        }
        Some(label_selector(Some(&merged), &BTreeMap::new()))
    }
}

/// A selector written as a map (Services, ReplicationControllers); an empty one selects
/// nothing here.
fn from_map(map: Option<BTreeMap<String, String>>) -> Option<ApiLabelSelector> {
    map.filter(|m| !m.is_empty())
        .map(|m| ApiLabelSelector { match_labels: Some(m), match_expressions: None })
}

/// One kind's watch as selector updates.
fn updates<K>(
    api: Api<K>,
    kind: &'static str,
    selector: fn(&K) -> Option<ApiLabelSelector>,
) -> BoxStream<'static, Update>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let key = |k: &K| {
        let meta = k.meta();
        (meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default())
    };
    watcher::watcher(api, watcher::Config::default())
        .filter_map(move |event| async move {
            match event {
                Ok(Event::Apply(k) | Event::InitApply(k)) => {
                    let (namespace, name) = key(&k);
                    Some(Update::Set(kind, namespace, name, selector(&k)))
                }
                Ok(Event::Delete(k)) => {
                    let (namespace, name) = key(&k);
                    Some(Update::Set(kind, namespace, name, None))
                }
                Ok(Event::Init) => Some(Update::Clear(kind)),
                Ok(Event::InitDone) => None,
                Err(e) => {
                    tracing::warn!(kind, error = %e, "watch");
                    None
                }
            }
        })
        .boxed()
}

/// The four watches, merged.
pub fn watch(client: &Client) -> BoxStream<'static, Update> {
    futures::stream::select_all([
        updates(Api::<Service>::all(client.clone()), "Service", |s| {
            from_map(s.spec.as_ref().and_then(|s| s.selector.clone()))
        }),
        updates(Api::<ReplicationController>::all(client.clone()), "ReplicationController", |r| {
            from_map(r.spec.as_ref().and_then(|s| s.selector.clone()))
        }),
        updates(Api::<ReplicaSet>::all(client.clone()), "ReplicaSet", |r| {
            r.spec.as_ref().map(|s| s.selector.clone())
        }),
        updates(Api::<StatefulSet>::all(client.clone()), "StatefulSet", |s| {
            s.spec.as_ref().map(|s| s.selector.clone())
        }),
    ])
    .boxed()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn pod(labels: serde_json::Value) -> PodInfo {
        PodInfo::new(Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": "p", "namespace": "default", "labels": labels},
                "spec": {"containers": []}
            }))
            .unwrap(),
        ))
    }

    fn selector(value: serde_json::Value) -> Option<ApiLabelSelector> {
        Some(serde_json::from_value(value).unwrap())
    }

    #[test]
    fn the_default_selector_joins_everything_that_selects_the_pod() {
        let mut w = Workloads::default();
        let web = pod(json!({"app": "web", "tier": "front"}));
        assert!(w.default_spread_selector(&web).is_none());
        w.apply(Update::Set(
            "Service",
            "default".into(),
            "web".into(),
            selector(json!({"matchLabels": {"app": "web"}})),
        ));
        w.apply(Update::Set(
            "ReplicaSet",
            "default".into(),
            "web-1".into(),
            selector(json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]})),
        ));
        // Another namespace's, and one that does not select the pod, do not count.
        w.apply(Update::Set(
            "Service",
            "other".into(),
            "web".into(),
            selector(json!({"matchLabels": {"app": "web"}})),
        ));
        w.apply(Update::Set(
            "Service",
            "default".into(),
            "db".into(),
            selector(json!({"matchLabels": {"app": "db"}})),
        ));
        let merged = w.default_spread_selector(&web).unwrap();
        assert!(merged.matches(&BTreeMap::from([
            ("app".to_string(), "web".to_string()),
            ("tier".to_string(), "front".to_string()),
        ])));
        assert!(!merged.matches(&BTreeMap::from([("app".to_string(), "web".to_string())])));
        w.apply(Update::Clear("ReplicaSet"));
        w.apply(Update::Set("Service", "default".into(), "web".into(), None));
        assert!(w.default_spread_selector(&web).is_none());
    }
}
