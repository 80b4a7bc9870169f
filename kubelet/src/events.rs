//! Events the kubelet records about pods and its node (`Pulling`, `Started`, `BackOff`, ...),
//! with `source.component: kubelet` and the node as host, as upstream's kubelet.

use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, PostParams};
use kube::Client;
use serde_json::json;

#[derive(Clone)]
pub struct Recorder {
    client: Client,
    node: String,
}

impl Recorder {
    pub fn new(client: Client, node: &str) -> Recorder {
        Recorder { client, node: node.to_string() }
    }

    /// Records an event on a pod.
    pub async fn pod_event(&self, pod: &Pod, kind: &str, reason: &str, message: &str) {
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
        .await;
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
    ) {
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
            Err(_) => return,
        };
        let events: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        if let Err(e) = events.create(&PostParams::default(), &event).await {
            tracing::debug!(error = %e, reason, "cannot record an event");
        }
    }
}
