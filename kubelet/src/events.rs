//! Events the kubelet records about pods and its node (`Pulling`, `Started`, `BackOff`, ...),
//! with `source.component: kubelet` and the node as host, as upstream's kubelet.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::json;

/// How many repeated events [`Recorder::pod_event_repeated`] remembers.
const SERIES_LIMIT: usize = 4096;

/// (pod uid, type, reason, message) -> (namespace, event name, count).
type Series = HashMap<(String, String, String, String), (String, String, i32)>;

#[derive(Clone)]
pub struct Recorder {
    client: Client,
    node: String,
    /// Events recorded by [`Recorder::pod_event_repeated`].
    series: Arc<Mutex<Series>>,
}

impl Recorder {
    pub fn new(client: Client, node: &str) -> Recorder {
        Recorder { client, node: node.to_string(), series: Default::default() }
    }

    /// Records an event on a pod that may happen again and again (a probe failing every
    /// period): the first time an Event is made, later the same one counts up with a new
    /// `lastTimestamp`, as upstream's event correlator aggregates them (`kubectl describe`
    /// shows `(x5 over 10s)`).
    pub async fn pod_event_repeated(&self, pod: &Pod, kind: &str, reason: &str, message: &str) {
        let key = (
            pod.metadata.uid.clone().unwrap_or_default(),
            kind.to_string(),
            reason.to_string(),
            message.to_string(),
        );
        let known = self.series.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
        if let Some((namespace, name, count)) = known {
            let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
            let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
            let patch = json!({"count": count + 1, "lastTimestamp": now});
            match events.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => {
                    let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
                    series.insert(key, (namespace, name, count + 1));
                    return;
                }
                Err(e) => tracing::debug!(error = %e, reason, "cannot count an event up"),
            }
        }
        let namespace = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        if let Some(name) = self.pod_event_named(pod, kind, reason, message).await {
            let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
            if series.len() >= SERIES_LIMIT {
                series.clear();
            }
            series.insert(key, (namespace, name, 1));
        }
    }

    /// Forgets the repeated events of a pod that is gone.
    pub fn forget_pod(&self, uid: &str) {
        self.series.lock().unwrap_or_else(|e| e.into_inner()).retain(|k, _| k.0 != uid);
    }

    /// Records an event on a pod.
    pub async fn pod_event(&self, pod: &Pod, kind: &str, reason: &str, message: &str) {
        self.pod_event_named(pod, kind, reason, message).await;
    }

    /// Records an event on a pod; the event's name when it was made.
    async fn pod_event_named(
        &self,
        pod: &Pod,
        kind: &str,
        reason: &str,
        message: &str,
    ) -> Option<String> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let involved = json!({
            "apiVersion": "v1", "kind": "Pod", "namespace": namespace,
            "name": pod.metadata.name, "uid": pod.metadata.uid,
            "resourceVersion": pod.metadata.resource_version,
        });
        self.record(
            namespace,
            pod.metadata.name.as_deref().unwrap_or(""),
            involved,
            kind,
            reason,
            message,
        )
        .await
    }

    /// Records an event on the node (in `default`, as upstream).
    pub async fn node_event(&self, kind: &str, reason: &str, message: &str) {
        let involved = json!({"kind": "Node", "name": self.node, "uid": self.node});
        let node = self.node.clone();
        self.record("default", &node, involved, kind, reason, message).await;
    }

    async fn record(
        &self,
        namespace: &str,
        name: &str,
        involved: serde_json::Value,
        kind: &str,
        reason: &str,
        message: &str,
    ) -> Option<String> {
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let event: Event = match serde_json::from_value(json!({
            "metadata": {"generateName": format!("{name}."), "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": kind,
            "source": {"component": "kubelet", "host": self.node},
            "reportingComponent": "kubelet",
            "reportingInstance": self.node,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        })) {
            Ok(e) => e,
            Err(_) => return None,
        };
        let events: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        match events.create(&PostParams::default(), &event).await {
            Ok(made) => made.metadata.name,
            Err(e) => {
                tracing::debug!(error = %e, reason, "cannot record an event");
                None
            }
        }
    }
}
