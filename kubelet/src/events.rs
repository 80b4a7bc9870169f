//! Events the kubelet records about pods and its node (`Pulling`, `Started`, `BackOff`, ...),
//! with `source.component: kubelet` and the node as host, as upstream's kubelet.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::json;
use tokio::sync::mpsc;

/// How many repeated events the poster remembers.
const SERIES_LIMIT: usize = 4096;
/// Events waiting to be posted at most; beyond it new ones are dropped, as upstream's
/// event broadcaster drops them when its queue is full.
const QUEUE: usize = 1000;

/// What a repeating event says: (pod uid, type, reason, message).
type SeriesKey = (String, String, String, String);
/// Each repeating event's Event: (namespace, name, count).
type Series = HashMap<SeriesKey, (String, String, i32)>;

/// What the poster is asked to do, in order.
enum Job {
    Record(Box<Record>),
    /// The pod is gone: its repeated events are forgotten.
    Forget(String),
}

/// One event to post.
struct Record {
    namespace: String,
    name: String,
    involved: serde_json::Value,
    kind: String,
    reason: String,
    message: String,
    /// Set for an event that may repeat: counted up in its first Event.
    series: Option<SeriesKey>,
    /// When it happened, as the Event's timestamps say it.
    at: String,
}

/// Records events without waiting for the API: they are queued and posted in order by a
/// task of their own, so a pod's start is not held up by its `Created` and `Started` events.
#[derive(Clone)]
pub struct Recorder {
    node: String,
    jobs: mpsc::Sender<Job>,
}

impl Recorder {
    /// Starts the poster (on the current Tokio runtime); it ends with the last recorder.
    pub fn new(client: Client, node: &str) -> Recorder {
        let (jobs, queue) = mpsc::channel(QUEUE);
        let poster = Poster { client, node: node.to_string(), series: Series::new() };
        tokio::spawn(poster.run(queue));
        Recorder { node: node.to_string(), jobs }
    }

    fn send(&self, job: Job) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.jobs.try_send(job) {
            tracing::warn!("the event queue is full: an event is dropped");
        }
    }

    /// Records an event on a pod that may happen again and again (a probe failing every
    /// period): the first time an Event is made, later the same one counts up with a new
    /// `lastTimestamp`, as upstream's event correlator aggregates them (`kubectl describe`
    /// shows `(x5 over 10s)`).
    pub fn pod_event_repeated(&self, pod: &Pod, kind: &str, reason: &str, message: &str) {
        let key = (
            pod.metadata.uid.clone().unwrap_or_default(),
            kind.to_string(),
            reason.to_string(),
            message.to_string(),
        );
        self.send(Self::on_pod(pod, kind, reason, message, Some(key)));
    }

    /// Forgets the repeated events of a pod that is gone.
    pub fn forget_pod(&self, uid: &str) {
        self.send(Job::Forget(uid.to_string()));
    }

    /// Records an event on a pod.
    pub fn pod_event(&self, pod: &Pod, kind: &str, reason: &str, message: &str) {
        self.send(Self::on_pod(pod, kind, reason, message, None));
    }

    fn on_pod(
        pod: &Pod,
        kind: &str,
        reason: &str,
        message: &str,
        series: Option<SeriesKey>,
    ) -> Job {
        let namespace = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let involved = json!({
            "apiVersion": "v1", "kind": "Pod", "namespace": namespace,
            "name": pod.metadata.name, "uid": pod.metadata.uid,
            "resourceVersion": pod.metadata.resource_version,
        });
        Job::Record(Box::new(Record {
            namespace,
            name: pod.metadata.name.clone().unwrap_or_default(),
            involved,
            kind: kind.into(),
            reason: reason.into(),
            message: message.into(),
            series,
            at: now(),
        }))
    }

    /// Records an event on the node (in `default`, as upstream).
    pub fn node_event(&self, kind: &str, reason: &str, message: &str) {
        let involved = json!({"kind": "Node", "name": self.node, "uid": self.node});
        self.send(Job::Record(Box::new(Record {
            namespace: "default".into(),
            name: self.node.clone(),
            involved,
            kind: kind.into(),
            reason: reason.into(),
            message: message.into(),
            series: None,
            at: now(),
        })));
    }
}

fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The task that posts the recorders' events.
struct Poster {
    client: Client,
    node: String,
    /// Events that may repeat, by what they say.
    series: Series,
}

impl Poster {
    async fn run(mut self, mut queue: mpsc::Receiver<Job>) {
        while let Some(job) = queue.recv().await {
            match job {
                Job::Forget(uid) => self.series.retain(|k, _| k.0 != uid),
                Job::Record(record) => {
                    let Record { namespace, name, involved, kind, reason, message, series, at } =
                        *record;
                    if let Some(key) = &series {
                        if self.count_up(key, &at).await {
                            continue;
                        }
                    }
                    let made = self
                        .create(&namespace, &name, involved, &kind, &reason, &message, &at)
                        .await;
                    if let (Some(key), Some(made)) = (series, made) {
                        if self.series.len() >= SERIES_LIMIT {
                            self.series.clear();
                        }
                        self.series.insert(key, (namespace, made, 1));
                    }
                }
            }
        }
    }

    /// Counts up the Event made for `key` earlier; false when there is none (or it is gone).
    async fn count_up(&mut self, key: &SeriesKey, at: &str) -> bool {
        let Some((namespace, name, count)) = self.series.get(key).cloned() else {
            return false;
        };
        let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let patch = json!({"count": count + 1, "lastTimestamp": at});
        match events.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => {
                self.series.insert(key.clone(), (namespace, name, count + 1));
                true
            }
            Err(e) => {
                tracing::debug!(error = %e, reason = key.2, "cannot count an event up");
                false
            }
        }
    }

    /// Makes an Event; its name.
    #[allow(clippy::too_many_arguments)]
    async fn create(
        &self,
        namespace: &str,
        name: &str,
        involved: serde_json::Value,
        kind: &str,
        reason: &str,
        message: &str,
        now: &str,
    ) -> Option<String> {
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
