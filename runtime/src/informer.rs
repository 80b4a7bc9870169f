//! A shared informer, as client-go's: one watch per resource feeding a local, indexed cache
//! ([`Store`]) that several controllers read, each told which objects changed through its own
//! channel. The cache is updated before the subscribers hear of a change.

use std::fmt::Debug;
use std::hash::Hash;

use futures::StreamExt;
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Resource;
use tokio::sync::mpsc;

use crate::store::{self, Indexers, Store};

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
    let (store, mut writer) = store::store(indexers);
    let task = tokio::spawn(async move {
        let stream = watcher::watcher(api, config).default_backoff();
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            if let Ok(event) = &event {
                writer.apply(event);
            }
            let change = match event {
                Ok(Event::Apply(o) | Event::Delete(o) | Event::InitApply(o)) => Change::Object {
                    namespace: o.meta().namespace.clone(),
                    name: o.meta().name.clone().unwrap_or_default(),
                },
                Ok(Event::InitDone) => Change::Synced,
                Ok(Event::Init) => continue,
                Err(e) => {
                    tracing::debug!(error = %e, kind = K::kind(&()).as_ref(), "informer watch");
                    continue;
                }
            };
            for subscriber in &subscribers {
                let _ = subscriber.send(change.clone());
            }
        }
    });
    (store, Watch(task))
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
