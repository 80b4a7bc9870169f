//! A shared informer, as client-go's: one watch per resource feeding a local, indexed cache
//! ([`Store`]) that several controllers read, each told which objects changed through its own
//! channel: by name ([`Change`], to look up in the store) or with the objects ([`Delta`], for
//! a subscriber that keeps its own view and needs what an update replaced or a deletion's
//! last state, as the scheduler's cache and the kubelet's pod workers do). The cache is
//! updated before the subscribers hear of a change. [`start`] watches every object of a
//! resource; [`Informer`] also takes a scoped watch (the kubelet's own pods), other indexes
//! and delta subscribers.

use std::fmt::Debug;
use std::hash::Hash;

use futures::{Stream, StreamExt};
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Resource;
use tokio::sync::mpsc;

pub use crate::store::Delta;
use crate::store::{self, Indexers, Store, Writer};

/// What a subscriber hears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// This object was added, changed or deleted: look it up in the store.
    Object { namespace: Option<String>, name: String },
    /// The watch (re)started and the store now holds a complete list.
    Synced,
}

impl Change {
    /// The reference to look the object up in the store with.
    pub fn object_ref<K>(&self) -> Option<ObjectRef<K>>
    where
        K: Resource<DynamicType = ()>,
    {
        match self {
            Change::Object { namespace, name } => {
                let r = ObjectRef::new(name);
                Some(match namespace {
                    Some(ns) => r.within(ns),
                    None => r,
                })
            }
            Change::Synced => None,
        }
    }
}

/// Starts watching `api` into a cache with the indexes every cache has (namespace, owner
/// uid); every change is sent to each subscriber.
pub fn start<K>(
    api: Api<K>,
    config: watcher::Config,
    subscribers: Vec<mpsc::UnboundedSender<Change>>,
) -> (Store<K>, Watch)
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    start_indexed(api, config, Indexers::default(), subscribers)
}

/// [`start`], keeping `indexers` (which should extend [`Indexers::default`]).
pub fn start_indexed<K>(
    api: Api<K>,
    config: watcher::Config,
    indexers: Indexers<K>,
    subscribers: Vec<mpsc::UnboundedSender<Change>>,
) -> (Store<K>, Watch)
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    let mut informer = Informer::new(api).config(config).indexers(indexers);
    informer.changes = subscribers;
    informer.start()
}

/// An informer to start, for the choices [`start`] does not offer: a watch scoped by a
/// field or label selector (the kubelet's `spec.nodeName=<node>`), other indexes, and
/// subscribers that hear [`Delta`]s (the objects, with the state an update replaced or a
/// deletion's last one) rather than [`Change`]s (names to look up).
pub struct Informer<K> {
    api: Api<K>,
    config: watcher::Config,
    indexers: Indexers<K>,
    changes: Vec<mpsc::UnboundedSender<Change>>,
    deltas: Vec<mpsc::UnboundedSender<Delta<K>>>,
}

impl<K> Informer<K>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    /// Every object of `api`, into a cache with [`Indexers::default`], with no subscriber.
    pub fn new(api: Api<K>) -> Informer<K> {
        Informer {
            api,
            config: watcher::Config::default(),
            indexers: Indexers::default(),
            changes: Vec::new(),
            deltas: Vec::new(),
        }
    }

    /// The watch's options (selectors, page size).
    pub fn config(mut self, config: watcher::Config) -> Informer<K> {
        self.config = config;
        self
    }

    /// The cache's indexes, instead of [`Indexers::default`].
    pub fn indexers(mut self, indexers: Indexers<K>) -> Informer<K> {
        self.indexers = indexers;
        self
    }

    /// A subscriber told the name of each object that changed.
    pub fn changes(mut self, subscriber: mpsc::UnboundedSender<Change>) -> Informer<K> {
        self.changes.push(subscriber);
        self
    }

    /// A subscriber told each [`Delta`], with the objects.
    pub fn deltas(mut self, subscriber: mpsc::UnboundedSender<Delta<K>>) -> Informer<K> {
        self.deltas.push(subscriber);
        self
    }

    /// Starts the watch; the cache fills (and subscribers hear) from the first list on.
    pub fn start(self) -> (Store<K>, Watch) {
        let (store, writer) = store::store(self.indexers);
        let events = watcher::watcher(self.api, self.config).default_backoff();
        let (changes, deltas) = (self.changes, self.deltas);
        let mut writer = writer;
        let task = tokio::spawn(async move { feed(events, &mut writer, &changes, &deltas).await });
        (store, Watch(task))
    }
}

/// Applies watch events to the cache and tells the subscribers, until the events end.
async fn feed<K, S>(
    events: S,
    writer: &mut Writer<K>,
    changes: &[mpsc::UnboundedSender<Change>],
    deltas: &[mpsc::UnboundedSender<Delta<K>>],
) where
    K: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone,
    S: Stream<Item = Result<Event<K>, watcher::Error>>,
{
    futures::pin_mut!(events);
    let mut send = |delta: Delta<K>| {
        for subscriber in deltas {
            let _ = subscriber.send(delta.clone());
        }
    };
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                tracing::debug!(error = %e, kind = K::kind(&()).as_ref(), "informer watch");
                continue;
            }
        };
        // Named before the event's object moves into the cache.
        let change = match &event {
            Event::Apply(o) | Event::Delete(o) | Event::InitApply(o) => Some(Change::Object {
                namespace: o.meta().namespace.clone(),
                name: o.meta().name.clone().unwrap_or_default(),
            }),
            Event::InitDone => Some(Change::Synced),
            Event::Init => None,
        };
        let emit: Option<&mut dyn FnMut(Delta<K>)> =
            if deltas.is_empty() { None } else { Some(&mut send) };
        writer.apply_owned(event, emit);
        if let Some(change) = change {
            for subscriber in changes {
                let _ = subscriber.send(change.clone());
            }
        }
    }
}

/// The informer's watch task; dropping it stops the watch.
pub struct Watch(tokio::task::JoinHandle<()>);

impl Drop for Watch {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Takes every change waiting in `rx` (after a first one was received), so a burst is handled
/// in one go; `Synced` among them is reported as `true`.
pub fn drain(
    first: Change,
    rx: &mut mpsc::UnboundedReceiver<Change>,
) -> (std::collections::BTreeSet<(Option<String>, String)>, bool) {
    let mut objects = std::collections::BTreeSet::new();
    let mut synced = false;
    let mut next = Some(first);
    while let Some(change) = next {
        match change {
            Change::Object { namespace, name } => {
                objects.insert((namespace, name));
            }
            Change::Synced => synced = true,
        }
        next = rx.try_recv().ok();
    }
    (objects, synced)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn pod(name: &str, uid: &str, version: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some("default".into()),
                name: Some(name.into()),
                uid: Some(uid.into()),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    /// A delta as `(kind, name, old version, new version)`, for comparing.
    fn describe(delta: &Delta<Pod>) -> (&'static str, String, String, String) {
        let name = |p: &Pod| p.metadata.name.clone().unwrap_or_default();
        let id = |p: &Pod| {
            let m = &p.metadata;
            format!(
                "{}@{}",
                m.uid.as_deref().unwrap_or(""),
                m.resource_version.as_deref().unwrap_or("")
            )
        };
        match delta {
            Delta::Upserted { old, new } => {
                ("upserted", name(new), old.as_deref().map(id).unwrap_or_default(), id(new))
            }
            Delta::Deleted(gone) => ("deleted", name(gone), id(gone), String::new()),
            Delta::Synced => ("synced", String::new(), String::new(), String::new()),
        }
    }

    type Heard = (&'static str, String, String, String);

    /// Feeds each step's events to an informer's cache with one delta and one change
    /// subscriber; what each heard, the deltas of each step sorted (a list's order is the
    /// map's).
    async fn run(
        steps: Vec<Vec<Result<Event<Pod>, watcher::Error>>>,
    ) -> (Store<Pod>, Vec<Heard>, Vec<Change>) {
        let (store, mut writer) = store::store(Indexers::default());
        let (delta_tx, mut delta_rx) = mpsc::unbounded_channel();
        let (change_tx, mut change_rx) = mpsc::unbounded_channel();
        let (delta_txs, change_txs) = ([delta_tx], [change_tx]);
        let mut deltas = Vec::new();
        for events in steps {
            let stream = futures::stream::iter(events);
            feed(stream, &mut writer, &change_txs, &delta_txs).await;
            let mut step = Vec::new();
            while let Ok(delta) = delta_rx.try_recv() {
                step.push(describe(&delta));
            }
            step.sort();
            deltas.append(&mut step);
        }
        let mut changes = Vec::new();
        while let Ok(change) = change_rx.try_recv() {
            changes.push(change);
        }
        (store, deltas, changes)
    }

    fn entry(
        kind: &'static str,
        name: &str,
        old: &str,
        new: &str,
    ) -> (&'static str, String, String, String) {
        (kind, name.into(), old.into(), new.into())
    }

    #[tokio::test]
    async fn delta_subscribers_hear_each_object_with_what_it_replaced() {
        let (store, deltas, _) = run(vec![
            vec![
                Ok(Event::Init),
                Ok(Event::InitApply(pod("a", "ua", "1"))),
                Ok(Event::InitApply(pod("b", "ub", "2"))),
                Ok(Event::InitApply(pod("c", "uc", "3"))),
            ],
            // The first list is heard once it is whole.
            vec![Ok(Event::InitDone)],
            vec![Ok(Event::Apply(pod("a", "ua", "4")))],
            vec![Ok(Event::Delete(pod("b", "ub", "5")))],
            // A relist (the watch expired): `c` went meanwhile, `d` came, `a` changed.
            vec![
                Ok(Event::Init),
                Ok(Event::InitApply(pod("a", "ua", "6"))),
                Ok(Event::InitApply(pod("d", "ud", "7"))),
            ],
            vec![Ok(Event::InitDone)],
        ])
        .await;
        assert_eq!(
            deltas,
            [
                entry("synced", "", "", ""),
                entry("upserted", "a", "", "ua@1"),
                entry("upserted", "b", "", "ub@2"),
                entry("upserted", "c", "", "uc@3"),
                entry("upserted", "a", "ua@1", "ua@4"),
                // A deletion carries the final state the watch sent.
                entry("deleted", "b", "ub@5", ""),
                // The relist: what it lacks is deleted (its last state), the rest updated.
                entry("deleted", "c", "uc@3", ""),
                entry("synced", "", "", ""),
                entry("upserted", "a", "ua@4", "ua@6"),
                entry("upserted", "d", "", "ud@7"),
            ]
        );
        let mut names: Vec<_> =
            store.state().iter().map(|p| p.metadata.name.clone().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["a", "d"]);
    }

    #[tokio::test]
    async fn a_new_uid_under_a_known_name_is_a_deletion_then_an_addition() {
        let (_, deltas, _) = run(vec![
            vec![
                Ok(Event::Init),
                Ok(Event::InitApply(pod("web", "old", "1"))),
                Ok(Event::InitDone),
            ],
            // Deleted and created again, the deletion missed.
            vec![Ok(Event::Apply(pod("web", "new", "3")))],
            // The same again, across a relist.
            vec![Ok(Event::Init), Ok(Event::InitApply(pod("web", "newer", "5")))],
            vec![Ok(Event::InitDone)],
            // A deletion of another uid than the cache has: both are gone.
            vec![Ok(Event::Delete(pod("web", "newest", "7")))],
        ])
        .await;
        assert_eq!(
            deltas,
            [
                entry("synced", "", "", ""),
                entry("upserted", "web", "", "old@1"),
                entry("deleted", "web", "old@1", ""),
                entry("upserted", "web", "", "new@3"),
                entry("deleted", "web", "new@3", ""),
                entry("synced", "", "", ""),
                entry("upserted", "web", "", "newer@5"),
                entry("deleted", "web", "newer@5", ""),
                entry("deleted", "web", "newest@7", ""),
            ]
        );
    }

    #[tokio::test]
    async fn change_subscribers_hear_names_as_events_arrive_and_errors_are_skipped() {
        let error = watcher::Error::NoResourceVersion;
        let (store, _, changes) = run(vec![vec![
            Ok(Event::Init),
            Ok(Event::InitApply(pod("a", "ua", "1"))),
            Err(error),
            Ok(Event::InitDone),
            Ok(Event::Delete(pod("a", "ua", "2"))),
        ]])
        .await;
        let a = Change::Object { namespace: Some("default".into()), name: "a".into() };
        assert_eq!(changes, [a.clone(), Change::Synced, a]);
        assert!(store.is_empty());
        assert!(store.wait_until_ready().await.is_ok());
    }

    #[tokio::test]
    async fn without_delta_subscribers_the_cache_keeps_the_objects_it_was_sent() {
        let (store, writer) = store::store(Indexers::none());
        let (change_tx, mut change_rx) = mpsc::unbounded_channel();
        let events = vec![Ok(Event::InitDone), Ok(Event::Apply(pod("a", "ua", "1")))];
        let mut writer = writer;
        feed(futures::stream::iter(events), &mut writer, &[change_tx], &[]).await;
        assert_eq!(change_rx.try_recv(), Ok(Change::Synced));
        let a: Arc<Pod> = store.get(&ObjectRef::new("a").within("default")).unwrap();
        assert_eq!(a.metadata.resource_version.as_deref(), Some("1"));
        // No index kept.
        assert!(store.by_index(store::NAMESPACE, "default").is_err());
    }
}
