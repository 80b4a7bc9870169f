//! Recording `v1` Events the way client-go's recorder does, for every rkube component (the
//! controllers, the kubelet, the scheduler): one Event per object, reason and message, named
//! `<object>.<hex nanoseconds>`, in the object's namespace (`default` for cluster-scoped
//! objects such as Nodes), with the component as `source.component` and
//! `reportingComponent` (and, for the kubelet, its node as `source.host` and
//! `reportingInstance`).
//!
//! Recording never waits for the API server: events are queued and posted in order by a task
//! of their own, as upstream's broadcaster does, so a pod's start is not held up by its
//! `Created` and `Started` events; when the queue is full new events are dropped. A repeat of
//! an event (same object, type, reason and message) counts up the Event made the first time
//! (`count` and `lastTimestamp`, what `kubectl describe` shows as `(x5 over 10s)`), as
//! upstream's event correlator aggregates them; what was recorded about an object that is
//! gone can be forgotten with [`Recorder::forget`].

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Event, EventSource, Node, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::json;
use tokio::sync::mpsc;

/// How many distinct events a recorder remembers for aggregation (client-go keeps 4096).
const REMEMBERED: usize = 4096;
/// Events waiting to be posted at most; beyond it new ones are dropped, as upstream's
/// broadcaster drops them when its queue is full.
const QUEUE: usize = 1000;

/// What makes two events the same one (client-go's aggregation key, less the source, which
/// is one recorder's own).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    namespace: Option<String>,
    kind: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    type_: String,
    reason: String,
    message: String,
}

/// The Event made for a key: where it is and how often it was counted.
struct Seen {
    namespace: String,
    name: String,
    count: i32,
}

/// What the poster is asked to do, in order.
enum Job {
    Record(Box<Record>),
    /// The object with this uid is gone: what was recorded about it is forgotten.
    Forget(String),
}

struct Record {
    target: ObjectReference,
    key: Key,
    at: Timestamp,
}

/// Who records: `source.component` (also `reportingComponent`), the node it runs on
/// (`source.host`) and which instance of it (`reportingInstance`).
#[derive(Clone, Debug, Default)]
pub struct Source {
    pub component: String,
    pub host: Option<String>,
    pub instance: Option<String>,
}

/// Records events as one component; clones share the queue and the poster, which ends with
/// the last clone.
#[derive(Clone)]
pub struct Recorder {
    jobs: mpsc::Sender<Job>,
}

impl Recorder {
    /// A recorder for `component` (e.g. `replicaset-controller`); starts the poster on the
    /// current Tokio runtime.
    pub fn new(client: Client, component: &str) -> Recorder {
        Recorder::with_source(client, Source { component: component.into(), ..Source::default() })
    }

    /// A recorder for `component` running on node `host`, the instance there (the kubelet).
    pub fn on_host(client: Client, component: &str, host: &str) -> Recorder {
        let (host, instance) = (Some(host.to_string()), Some(host.to_string()));
        Recorder::with_source(client, Source { component: component.into(), host, instance })
    }

    /// A recorder for `source`.
    pub fn with_source(client: Client, source: Source) -> Recorder {
        let (jobs, queue) = mpsc::channel(QUEUE);
        let poster = Poster { client, source, seen: HashMap::new() };
        tokio::spawn(poster.run(queue));
        Recorder { jobs }
    }

    fn send(&self, job: Job) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.jobs.try_send(job) {
            tracing::warn!("the event queue is full: an event is dropped");
        }
    }

    /// Records `reason` and `message` on `target`; `type_` is `Normal` or `Warning`. Failures
    /// are logged only: an event is never worth failing a component's work.
    pub fn record(&self, target: &ObjectReference, type_: &str, reason: &str, message: &str) {
        let key = Key {
            namespace: target.namespace.clone(),
            kind: target.kind.clone(),
            name: target.name.clone(),
            uid: target.uid.clone(),
            type_: type_.to_string(),
            reason: reason.to_string(),
            message: message.to_string(),
        };
        let record = Record { target: target.clone(), key, at: Timestamp::now() };
        self.send(Job::Record(Box::new(record)));
    }

    /// Forgets the events recorded about the object with `uid` (it is gone): a later repeat
    /// makes a new Event.
    pub fn forget(&self, uid: &str) {
        self.send(Job::Forget(uid.to_string()));
    }
}

/// The task that posts a recorder's events.
struct Poster {
    client: Client,
    source: Source,
    seen: HashMap<Key, Seen>,
}

impl Poster {
    async fn run(mut self, mut queue: mpsc::Receiver<Job>) {
        while let Some(job) = queue.recv().await {
            match job {
                Job::Forget(uid) => self.seen.retain(|k, _| k.uid.as_deref() != Some(&uid)),
                Job::Record(record) => self.post(*record).await,
            }
        }
    }

    async fn post(&mut self, Record { target, key, at }: Record) {
        if let Some(seen) = self.seen.get(&key) {
            let events: Api<Event> = Api::namespaced(self.client.clone(), &seen.namespace);
            let count = seen.count + 1;
            let patch = json!({"count": count, "lastTimestamp": Time(at)});
            match events.patch(&seen.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => {
                    if let Some(seen) = self.seen.get_mut(&key) {
                        seen.count = count;
                    }
                    return;
                }
                Err(e) => tracing::debug!(
                    error = %e, reason = key.reason,
                    "cannot count an event up; recording a new one"
                ),
            }
        }
        let namespace =
            target.namespace.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| "default".into());
        let object = target.name.clone().unwrap_or_default();
        let event = Event {
            metadata: ObjectMeta {
                name: Some(format!("{object}.{:x}", at.as_nanosecond())),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            involved_object: target,
            reason: Some(key.reason.clone()),
            message: Some(key.message.clone()),
            type_: Some(key.type_.clone()),
            source: Some(EventSource {
                component: Some(self.source.component.clone()),
                host: self.source.host.clone(),
            }),
            reporting_component: Some(self.source.component.clone()),
            reporting_instance: self.source.instance.clone(),
            first_timestamp: Some(Time(at)),
            last_timestamp: Some(Time(at)),
            count: Some(1),
            ..Default::default()
        };
        let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        match events.create(&PostParams::default(), &event).await {
            Ok(created) => {
                if self.seen.len() >= REMEMBERED {
                    self.seen.clear();
                }
                let name = created.metadata.name.unwrap_or_default();
                self.seen.insert(key, Seen { namespace, name, count: 1 });
            }
            Err(e) => tracing::debug!(error = %e, reason = key.reason, "cannot record an event"),
        }
    }
}

/// An object as events name it, uid and resourceVersion included (client-go's
/// `GetReference`).
pub fn object_reference<K: kube::Resource<DynamicType = ()>>(object: &K) -> ObjectReference {
    ObjectReference {
        resource_version: object.meta().resource_version.clone(),
        ..object.object_ref(&())
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
