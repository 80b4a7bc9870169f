//! The selectors of what owns or fronts pods (Services, ReplicationControllers, ReplicaSets,
//! StatefulSets), read from informer caches (indexed by namespace) so that a pod without
//! spread constraints of its own gets upstream's system defaults with upstream's
//! `DefaultSelector`: the union of the selectors of everything in its namespace that selects
//! it.

use std::collections::BTreeMap;
use std::fmt::Debug;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{ReplicationController, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as ApiLabelSelector;
use kube::api::Api;
use kube::Client;
use rkube_apis::selectors::LabelSelector;
use rkube_runtime::informer::{Informer, Watch};
use rkube_runtime::store::Store;
use serde::de::DeserializeOwned;

use crate::framework::PodInfo;
use crate::plugins::{label_selector, pod_labels};

/// One kind's cache, with what its objects select pods with.
struct Selecting<K: kube::Resource<DynamicType = ()> + 'static> {
    store: Store<K>,
    /// The object's selector; None when it selects nothing.
    selector: fn(&K) -> Option<ApiLabelSelector>,
}

impl<K> Selecting<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    fn in_namespace(&self, namespace: &str) -> impl Iterator<Item = ApiLabelSelector> + '_ {
        let objects = self.store.in_namespace(namespace);
        objects.into_iter().filter_map(|o| (self.selector)(&o))
    }
}

/// The caches of the four kinds, watched for as long as this lives.
pub struct Workloads {
    services: Selecting<Service>,
    replication_controllers: Selecting<ReplicationController>,
    replica_sets: Selecting<ReplicaSet>,
    stateful_sets: Selecting<StatefulSet>,
    _watches: Vec<Watch>,
}

impl Workloads {
    /// Starts the four informers.
    pub fn start(client: &Client) -> Workloads {
        let (services, service_watch) = Informer::new(Api::all(client.clone())).start();
        let (controllers, controller_watch) = Informer::new(Api::all(client.clone())).start();
        let (replica_sets, replica_set_watch) = Informer::new(Api::all(client.clone())).start();
        let (sets, set_watch) = Informer::new(Api::all(client.clone())).start();
        let watches = vec![service_watch, controller_watch, replica_set_watch, set_watch];
        Workloads::from_stores(services, controllers, replica_sets, sets, watches)
    }

    fn from_stores(
        services: Store<Service>,
        replication_controllers: Store<ReplicationController>,
        replica_sets: Store<ReplicaSet>,
        stateful_sets: Store<StatefulSet>,
        watches: Vec<Watch>,
    ) -> Workloads {
        Workloads {
            services: Selecting {
                store: services,
                selector: |s| from_map(s.spec.as_ref().and_then(|s| s.selector.clone())),
            },
            replication_controllers: Selecting {
                store: replication_controllers,
                selector: |r| from_map(r.spec.as_ref().and_then(|s| s.selector.clone())),
            },
            replica_sets: Selecting {
                store: replica_sets,
                selector: |r| r.spec.as_ref().map(|s| s.selector.clone()),
            },
            stateful_sets: Selecting {
                store: stateful_sets,
                selector: |s| s.spec.as_ref().map(|s| s.selector.clone()),
            },
            _watches: watches,
        }
    }

    /// Upstream's `DefaultSelector`: the labels and expressions of every selector in the
    /// pod's namespace that selects it, together; None when nothing does.
    pub fn default_spread_selector(&self, pod: &PodInfo) -> Option<LabelSelector> {
        let namespace = pod.namespace();
        let selectors = self
            .services
            .in_namespace(namespace)
            .chain(self.replication_controllers.in_namespace(namespace))
            .chain(self.replica_sets.in_namespace(namespace))
            .chain(self.stateful_sets.in_namespace(namespace));
        let labels = pod_labels(pod);
        let mut merged = ApiLabelSelector::default();
        for selector in selectors {
            let parsed = label_selector(Some(&selector), &BTreeMap::new());
            if parsed.is_empty() || !parsed.matches(labels) {
                continue;
            }
            if let Some(more) = selector.match_labels {
                merged.match_labels.get_or_insert_with(Default::default).extend(more);
            }
            if let Some(more) = selector.match_expressions {
                merged.match_expressions.get_or_insert_with(Vec::new).extend(more);
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kube::runtime::watcher::Event;
    use rkube_runtime::store::{self, Indexers, Writer};
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

    fn object<K: DeserializeOwned>(namespace: &str, name: &str, spec: serde_json::Value) -> K {
        let object = json!({"metadata": {"name": name, "namespace": namespace}, "spec": spec});
        serde_json::from_value(object).unwrap()
    }

    fn service(namespace: &str, name: &str, selector: serde_json::Value) -> Service {
        object(namespace, name, json!({"selector": selector}))
    }

    fn replica_set(namespace: &str, name: &str, selector: serde_json::Value) -> ReplicaSet {
        object(namespace, name, json!({"selector": selector, "template": {}}))
    }

    fn empty<K>() -> (Store<K>, Writer<K>)
    where
        K: kube::Resource<DynamicType = ()> + Clone + 'static,
    {
        let (store, mut writer) = store::store(Indexers::default());
        writer.apply(&Event::InitDone);
        (store, writer)
    }

    #[test]
    fn the_default_selector_joins_everything_that_selects_the_pod() {
        let (services, mut service_writer) = empty();
        let (replica_sets, mut replica_set_writer) = empty();
        let w = Workloads::from_stores(services, empty().0, replica_sets, empty().0, Vec::new());
        let web = pod(json!({"app": "web", "tier": "front"}));
        assert!(w.default_spread_selector(&web).is_none());
        service_writer.apply(&Event::Apply(service("default", "web", json!({"app": "web"}))));
        replica_set_writer.apply(&Event::Apply(replica_set(
            "default",
            "web-1",
            json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]}),
        )));
        // Another namespace's, and one that does not select the pod, do not count.
        service_writer.apply(&Event::Apply(service("other", "web", json!({"app": "web"}))));
        service_writer.apply(&Event::Apply(service("default", "db", json!({"app": "db"}))));
        let merged = w.default_spread_selector(&web).unwrap();
        assert!(merged.matches(&BTreeMap::from([
            ("app".to_string(), "web".to_string()),
            ("tier".to_string(), "front".to_string()),
        ])));
        assert!(!merged.matches(&BTreeMap::from([("app".to_string(), "web".to_string())])));
        // A relist without the ReplicaSet, and the Service deleted.
        replica_set_writer.apply(&Event::Init);
        replica_set_writer.apply(&Event::InitDone);
        service_writer.apply(&Event::Delete(service("default", "web", json!({"app": "web"}))));
        assert!(w.default_spread_selector(&web).is_none());
    }
}
