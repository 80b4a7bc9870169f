//! Recording `v1` Events the way client-go's recorder does: one Event per object, reason and
//! message, named `<object>.<hex nanoseconds>`, in the object's namespace (`default` for
//! cluster-scoped objects such as Nodes); a repeat bumps `count` and `lastTimestamp` of the
//! same Event instead of creating another one.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{Event, Node, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::json;

/// How many distinct events a recorder remembers for aggregation (client-go keeps 4096).
const REMEMBERED: usize = 4096;

#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    namespace: Option<String>,
    kind: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    kind_of_event: String,
    reason: String,
    message: String,
}

struct Seen {
    namespace: String,
    name: String,
    count: i32,
}

/// Records events as one component (`source.component` and `reportingComponent`).
pub struct Recorder {
    client: Client,
    component: String,
    seen: Mutex<HashMap<Key, Seen>>,
}

impl Recorder {
    pub fn new(client: Client, component: &str) -> Recorder {
        Recorder { client, component: component.to_string(), seen: Mutex::new(HashMap::new()) }
    }

    /// Records `reason` and `message` on `target`; `kind` is `Normal` or `Warning`. Failures
    /// are logged only: an event is never worth failing a controller's work.
    pub async fn record(&self, target: &ObjectReference, kind: &str, reason: &str, message: &str) {
        let key = Key {
            namespace: target.namespace.clone(),
            kind: target.kind.clone(),
            name: target.name.clone(),
            uid: target.uid.clone(),
            kind_of_event: kind.to_string(),
            reason: reason.to_string(),
            message: message.to_string(),
        };
        let now = Time(Timestamp::now());
        let repeat = self
            .seen
            .lock()
            .expect("event cache")
            .get(&key)
            .map(|s| (s.namespace.clone(), s.name.clone(), s.count + 1));
        if let Some((namespace, name, count)) = repeat {
            let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
            let patch = json!({"count": count, "lastTimestamp": now});
            match events.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => {
                    if let Some(seen) = self.seen.lock().expect("event cache").get_mut(&key) {
                        seen.count = count;
                    }
                    return;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "cannot update event {name}; recording a new one")
                }
            }
        }
        let namespace =
            target.namespace.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| "default".into());
        let object = target.name.clone().unwrap_or_default();
        let nanos = now.0.as_nanosecond();
        let event = Event {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(format!("{object}.{nanos:x}")),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            involved_object: target.clone(),
            reason: Some(reason.to_string()),
            message: Some(message.to_string()),
            type_: Some(kind.to_string()),
            source: Some(k8s_openapi::api::core::v1::EventSource {
                component: Some(self.component.clone()),
                host: None,
            }),
            reporting_component: Some(self.component.clone()),
            reporting_instance: None,
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            count: Some(1),
            ..Default::default()
        };
        let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        match events.create(&PostParams::default(), &event).await {
            Ok(created) => {
                let mut seen = self.seen.lock().expect("event cache");
                if seen.len() >= REMEMBERED {
                    seen.clear();
                }
                let name = created.metadata.name.unwrap_or_default();
                seen.insert(key, Seen { namespace, name, count: 1 });
            }
            Err(e) => tracing::debug!(error = %e, reason, "cannot record event"),
        }
    }
}

/// A Node as events name it: kind, name and uid (no namespace).
pub fn node_reference(node: &Node) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: node.metadata.name.clone(),
        uid: node.metadata.uid.clone(),
        ..Default::default()
    }
}

/// A Pod as events name it, uid and resourceVersion included (client-go's `GetReference`).
pub fn pod_reference(pod: &Pod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
        ..Default::default()
    }
}
