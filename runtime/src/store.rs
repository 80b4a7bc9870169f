//! An informer's local cache with indexes, as client-go's `Indexer`: the objects of one
//! resource by namespace and name, plus any number of named indexes, each a function from an
//! object to the values it is filed under. Every cache has [`NAMESPACE`] and [`OWNER_UID`];
//! [`Indexers::with`] adds more (pods by [`NODE_NAME`] with [`pod_node_name`]). A controller
//! then looks up the pods of one owner, namespace or node instead of filtering every pod.
//!
//! [`Store`] is the read side that controllers share; the informer's task holds the only
//! [`Writer`], which applies watch events (a relist is built apart and swapped in whole, so
//! readers never see half a list) and tells what each did to the cache as [`Delta`]s, with
//! the objects, for subscribers that need an object's previous state or its last one.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::Hash;
use std::sync::{Arc, RwLock};

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::{Lookup, ObjectRef};
use kube::runtime::watcher;
use kube::Resource;
use tokio::sync::watch;

/// The index of objects by namespace (client-go's `cache.NamespaceIndex`); cluster-scoped
/// objects are in none.
pub const NAMESPACE: &str = "namespace";
/// The index of objects by the uid of each of their owners (`metadata.ownerReferences[].uid`).
pub const OWNER_UID: &str = "ownerUID";
/// The index of pods by `spec.nodeName` (unscheduled pods are in none); add it with
/// [`pod_node_name`].
pub const NODE_NAME: &str = "spec.nodeName";

/// An index function: the values an object is filed under (none, one or several).
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// The indexes a cache keeps, by name.
pub struct Indexers<K> {
    by_name: BTreeMap<String, IndexFn<K>>,
}

impl<K> Clone for Indexers<K> {
    fn clone(&self) -> Indexers<K> {
        Indexers { by_name: self.by_name.clone() }
    }
}

impl<K: Resource + 'static> Default for Indexers<K> {
    /// [`NAMESPACE`] and [`OWNER_UID`], which every cache has.
    fn default() -> Indexers<K> {
        let namespace = |o: &K| o.meta().namespace.iter().cloned().collect();
        let owners = |o: &K| {
            let refs = o.meta().owner_references.iter().flatten();
            let mut uids: Vec<String> = refs.map(|r| r.uid.clone()).collect();
            uids.sort_unstable();
            uids.dedup();
            uids
        };
        Indexers::none().with(NAMESPACE, namespace).with(OWNER_UID, owners)
    }
}

impl<K> Indexers<K> {
    /// No index at all: for a cache only looked up by key, or only kept for the old objects
    /// its [`Delta`]s carry (each index costs memory per object).
    pub fn none() -> Indexers<K> {
        Indexers { by_name: BTreeMap::new() }
    }

    /// Adds (or replaces) the index `name`.
    pub fn with(
        mut self,
        name: &str,
        index: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Indexers<K> {
        self.by_name.insert(name.to_string(), Arc::new(index));
        self
    }
}

/// The [`NODE_NAME`] index function: the node a pod is bound to.
pub fn pod_node_name(pod: &Pod) -> Vec<String> {
    let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
    node.filter(|n| !n.is_empty()).map(str::to_string).into_iter().collect()
}

/// A lookup in an index the cache does not keep.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the cache has no index {0:?}")]
pub struct UnknownIndex(pub String);

/// The informer stopped before its first list arrived.
#[derive(Debug, thiserror::Error)]
#[error("the informer stopped before its cache was filled")]
pub struct InformerStopped;

type Key<K> = ObjectRef<K>;

/// What applying a watch event did to the cache, with the objects (client-go's handler
/// `OnAdd`/`OnUpdate`/`OnDelete`). A subscriber hears these after the cache holds them.
#[derive(Debug, Clone)]
pub enum Delta<K> {
    /// `new` is in the cache now, in place of `old` (None: new to the cache). An object of
    /// another uid under the same name is another object: the old one is reported
    /// [`Delta::Deleted`] first and the new one comes with no `old`.
    Upserted { old: Option<Arc<K>>, new: Arc<K> },
    /// The object is gone: deleted (its final state, as the watch sent it) or missing from a
    /// relist (its last state in the cache).
    Deleted(Arc<K>),
    /// A (re)list is complete and the cache holds it whole; the deltas it made came before.
    Synced,
}

/// The objects and, for each index, each value's objects.
struct Contents<K: Lookup + 'static>
where
    K::DynamicType: Eq + Hash,
{
    objects: HashMap<Key<K>, Arc<K>>,
    indexes: HashMap<String, HashMap<String, HashSet<Key<K>>>>,
}

impl<K> Contents<K>
where
    K: Lookup + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    fn new(indexers: &Indexers<K>) -> Contents<K> {
        let indexes = indexers.by_name.keys().map(|n| (n.clone(), HashMap::new())).collect();
        Contents { objects: HashMap::new(), indexes }
    }

    /// Files `object` under `key`; returns what it replaced.
    fn insert(&mut self, indexers: &Indexers<K>, key: Key<K>, object: Arc<K>) -> Option<Arc<K>> {
        let old = self.objects.insert(key.clone(), object.clone());
        if let Some(old) = &old {
            self.unindex(indexers, &key, old);
        }
        for (name, index) in &indexers.by_name {
            let values = self.indexes.entry(name.clone()).or_default();
            for value in index(&object) {
                values.entry(value).or_default().insert(key.clone());
            }
        }
        old
    }

    /// Takes the object at `key` out; returns it.
    fn remove(&mut self, indexers: &Indexers<K>, key: &Key<K>) -> Option<Arc<K>> {
        let old = self.objects.remove(key);
        if let Some(old) = &old {
            self.unindex(indexers, key, old);
        }
        old
    }

    fn unindex(&mut self, indexers: &Indexers<K>, key: &Key<K>, old: &K) {
        for (name, index) in &indexers.by_name {
            let Some(values) = self.indexes.get_mut(name) else { continue };
            for value in index(old) {
                if let Some(keys) = values.get_mut(&value) {
                    keys.remove(key);
                    if keys.is_empty() {
                        values.remove(&value);
                    }
                }
            }
        }
    }
}

/// The read side of an informer's cache; clones share it.
pub struct Store<K: Lookup + 'static>
where
    K::DynamicType: Eq + Hash,
{
    contents: Arc<RwLock<Contents<K>>>,
    ready: watch::Receiver<bool>,
}

impl<K: Lookup + 'static> Clone for Store<K>
where
    K::DynamicType: Eq + Hash,
{
    fn clone(&self) -> Store<K> {
        Store { contents: self.contents.clone(), ready: self.ready.clone() }
    }
}

impl<K> Store<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Contents<K>> {
        // A writer that panicked left whole entries (each change is applied under one lock).
        self.contents.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until the first complete list is in the cache (for every waiter at once).
    pub async fn wait_until_ready(&self) -> Result<(), InformerStopped> {
        let mut ready = self.ready.clone();
        ready.wait_for(|r| *r).await.map(|_| ()).map_err(|_| InformerStopped)
    }

    /// The object at `key`; a cluster-scoped object is found whatever namespace `key` names.
    pub fn get(&self, key: &ObjectRef<K>) -> Option<Arc<K>> {
        let contents = self.read();
        contents
            .objects
            .get(key)
            .or_else(|| {
                let mut cluster = key.clone();
                cluster.namespace = None;
                contents.objects.get(&cluster)
            })
            .cloned()
    }

    /// Every object.
    pub fn state(&self) -> Vec<Arc<K>> {
        self.read().objects.values().cloned().collect()
    }

    /// The objects for which `predicate` holds (evaluated under the cache's read lock).
    pub fn state_filter(&self, predicate: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        self.read().objects.values().filter(|o| predicate(o)).cloned().collect()
    }

    /// The objects filed under `value` in the index `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, UnknownIndex> {
        let contents = self.read();
        let index = contents.indexes.get(name).ok_or_else(|| UnknownIndex(name.to_string()))?;
        let keys = index.get(value).into_iter().flatten();
        Ok(keys.filter_map(|k| contents.objects.get(k)).cloned().collect())
    }

    /// The objects in `namespace`.
    pub fn in_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        self.by_index(NAMESPACE, namespace).unwrap_or_default()
    }

    /// The objects with an owner reference to `uid`.
    pub fn owned_by(&self, uid: &str) -> Vec<Arc<K>> {
        self.by_index(OWNER_UID, uid).unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Store<Pod> {
    /// The pods bound to `node`: looked up in the [`NODE_NAME`] index when the cache keeps it,
    /// else found by going through every pod.
    pub fn on_node(&self, node: &str) -> Vec<Arc<Pod>> {
        self.by_index(NODE_NAME, node).unwrap_or_else(|_| {
            self.state_filter(|p| {
                p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node)
            })
        })
    }
}

/// The write side of a cache: applies an informer's watch events.
pub struct Writer<K: Lookup + 'static>
where
    K::DynamicType: Eq + Hash,
{
    contents: Arc<RwLock<Contents<K>>>,
    indexers: Indexers<K>,
    /// A relist being received, swapped in whole when it is complete.
    relist: Option<Contents<K>>,
    ready: watch::Sender<bool>,
    dyntype: K::DynamicType,
}

/// A new, empty cache keeping `indexers`.
pub fn store<K>(indexers: Indexers<K>) -> (Store<K>, Writer<K>)
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone + Default,
{
    let contents = Arc::new(RwLock::new(Contents::new(&indexers)));
    let (ready, ready_rx) = watch::channel(false);
    let writer = Writer {
        contents: contents.clone(),
        indexers,
        relist: None,
        ready,
        dyntype: K::DynamicType::default(),
    };
    (Store { contents, ready: ready_rx }, writer)
}

impl<K> Writer<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    /// Applies one watch event.
    pub fn apply(&mut self, event: &watcher::Event<K>) {
        self.apply_owned(event.clone(), None);
    }

    /// Applies one watch event, keeping its object (no copy), and hands what it changed to
    /// `deltas` when given, after the cache holds the change.
    pub fn apply_owned(
        &mut self,
        event: watcher::Event<K>,
        deltas: Option<&mut dyn FnMut(Delta<K>)>,
    ) {
        match event {
            watcher::Event::Apply(o) => {
                let key = self.key(&o);
                let new = Arc::new(o);
                let old = self.write().insert(&self.indexers, key, new.clone());
                if let Some(emit) = deltas {
                    upserted(old, new, emit);
                }
            }
            watcher::Event::Delete(o) => {
                let key = self.key(&o);
                let old = self.write().remove(&self.indexers, &key);
                if let Some(emit) = deltas {
                    let gone = Arc::new(o);
                    // Missed events left another object under this name: it is gone too.
                    if let Some(old) = old.filter(|old| !same_uid(&**old, &*gone)) {
                        emit(Delta::Deleted(old));
                    }
                    emit(Delta::Deleted(gone));
                }
            }
            watcher::Event::Init => self.relist = Some(Contents::new(&self.indexers)),
            watcher::Event::InitApply(o) => {
                let key = self.key(&o);
                let relist = self.relist.get_or_insert_with(|| Contents::new(&self.indexers));
                relist.insert(&self.indexers, key, Arc::new(o));
            }
            watcher::Event::InitDone => {
                let relist = self.relist.take().unwrap_or_else(|| Contents::new(&self.indexers));
                let old = std::mem::replace(&mut *self.write(), relist);
                self.ready.send_replace(true);
                let Some(emit) = deltas else { return };
                // As client-go's Replace: what the list no longer has is deleted, the rest
                // is added or updated.
                let contents = self.contents.read().unwrap_or_else(|e| e.into_inner());
                for (key, gone) in &old.objects {
                    if !contents.objects.contains_key(key) {
                        emit(Delta::Deleted(gone.clone()));
                    }
                }
                for (key, new) in &contents.objects {
                    upserted(old.objects.get(key).cloned(), new.clone(), &mut *emit);
                }
                emit(Delta::Synced);
            }
        }
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Contents<K>> {
        // A writer that panicked left whole entries (each change is applied under one lock).
        self.contents.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The cache's key: namespace and name only (a reference's resourceVersion and uid would
    /// be kept again in every index the object is in).
    fn key(&self, o: &K) -> Key<K> {
        let name = o.name().unwrap_or_default();
        let key = ObjectRef::new_with(&name, self.dyntype.clone());
        match o.namespace() {
            Some(namespace) => key.within(&namespace),
            None => key,
        }
    }
}

fn same_uid<K: Lookup>(a: &K, b: &K) -> bool {
    match (a.uid(), b.uid()) {
        (Some(a), Some(b)) => a == b,
        // An object without a uid (a test's, or a partial one) is taken to be the same.
        _ => true,
    }
}

/// Reports `new` replacing `old` in the cache: as an update when they are one object, as a
/// deletion and an addition when the name now belongs to an object of another uid.
fn upserted<K: Lookup>(old: Option<Arc<K>>, new: Arc<K>, emit: &mut dyn FnMut(Delta<K>)) {
    match old {
        Some(old) if !same_uid(&*old, &*new) => {
            emit(Delta::Deleted(old));
            emit(Delta::Upserted { old: None, new });
        }
        old => emit(Delta::Upserted { old, new }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
    use watcher::Event;

    fn pod(namespace: &str, name: &str, owners: &[&str], node: Option<&str>) -> Pod {
        let owner = |uid: &&str| OwnerReference {
            uid: uid.to_string(),
            name: format!("owner-{uid}"),
            kind: "ReplicaSet".into(),
            api_version: "apps/v1".into(),
            ..OwnerReference::default()
        };
        Pod {
            metadata: ObjectMeta {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                owner_references: Some(owners.iter().map(owner).collect()),
                ..ObjectMeta::default()
            },
            spec: Some(k8s_openapi::api::core::v1::PodSpec {
                node_name: node.map(String::from),
                ..Default::default()
            }),
            status: None,
        }
    }

    fn names(mut pods: Vec<Arc<Pod>>) -> Vec<String> {
        pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        pods.iter().map(|p| p.metadata.name.clone().unwrap()).collect()
    }

    fn pods_store() -> (Store<Pod>, Writer<Pod>) {
        store(Indexers::default().with(NODE_NAME, pod_node_name))
    }

    #[test]
    fn objects_are_found_by_namespace_owner_and_node() {
        let (pods, mut writer) = pods_store();
        writer.apply(&Event::Init);
        writer.apply(&Event::InitApply(pod("a", "p1", &["rs1"], Some("n1"))));
        writer.apply(&Event::InitApply(pod("a", "p2", &["rs1", "rs2"], None)));
        writer.apply(&Event::InitApply(pod("b", "p3", &["rs2"], Some("n1"))));
        // Not visible until the list is complete.
        assert!(pods.is_empty());
        writer.apply(&Event::InitDone);
        assert_eq!(pods.len(), 3);
        assert_eq!(names(pods.in_namespace("a")), ["p1", "p2"]);
        assert_eq!(names(pods.in_namespace("b")), ["p3"]);
        assert!(pods.in_namespace("c").is_empty());
        assert_eq!(names(pods.owned_by("rs1")), ["p1", "p2"]);
        assert_eq!(names(pods.owned_by("rs2")), ["p2", "p3"]);
        assert_eq!(names(pods.by_index(NODE_NAME, "n1").unwrap()), ["p1", "p3"]);
        assert_eq!(names(pods.on_node("n1")), ["p1", "p3"]);
        assert!(pods.by_index(NODE_NAME, "").unwrap().is_empty(), "unscheduled: in no node");
        assert_eq!(pods.by_index("nosuch", "x").unwrap_err(), UnknownIndex("nosuch".into()));
        let p1 = pods.get(&ObjectRef::new("p1").within("a")).unwrap();
        assert_eq!(p1.metadata.name.as_deref(), Some("p1"));
        assert!(pods.get(&ObjectRef::new("p1").within("b")).is_none());
    }

    #[test]
    fn changes_move_objects_between_index_values() {
        let (pods, mut writer) = pods_store();
        writer.apply(&Event::Init);
        writer.apply(&Event::InitDone);
        writer.apply(&Event::Apply(pod("a", "p1", &["rs1"], None)));
        assert_eq!(names(pods.owned_by("rs1")), ["p1"]);
        // Bound, and orphaned then adopted by another owner.
        writer.apply(&Event::Apply(pod("a", "p1", &["rs2"], Some("n2"))));
        assert!(pods.owned_by("rs1").is_empty());
        assert_eq!(names(pods.owned_by("rs2")), ["p1"]);
        assert_eq!(names(pods.by_index(NODE_NAME, "n2").unwrap()), ["p1"]);
        writer.apply(&Event::Delete(pod("a", "p1", &["rs2"], Some("n2"))));
        assert!(pods.owned_by("rs2").is_empty());
        assert!(pods.by_index(NODE_NAME, "n2").unwrap().is_empty());
        assert!(pods.in_namespace("a").is_empty());
        // Emptied values are dropped, not kept as empty sets.
        let contents = pods.read();
        assert!(contents.indexes.values().all(|values| values.is_empty()));
    }

    #[test]
    fn a_relist_replaces_the_cache_and_its_indexes() {
        let (pods, mut writer) = pods_store();
        writer.apply(&Event::Init);
        writer.apply(&Event::InitApply(pod("a", "gone", &["rs1"], Some("n1"))));
        writer.apply(&Event::InitDone);
        writer.apply(&Event::Init);
        writer.apply(&Event::InitApply(pod("a", "new", &["rs1"], Some("n1"))));
        // The old list stays readable while the new one arrives.
        assert_eq!(names(pods.owned_by("rs1")), ["gone"]);
        writer.apply(&Event::InitDone);
        assert_eq!(names(pods.owned_by("rs1")), ["new"]);
        assert_eq!(names(pods.by_index(NODE_NAME, "n1").unwrap()), ["new"]);
    }

    #[test]
    fn custom_indexes_may_file_an_object_under_several_values() {
        let parts = |p: &Pod| -> Vec<String> {
            p.metadata.name.iter().flat_map(|n| n.split('-')).map(String::from).collect()
        };
        let indexers = Indexers::default().with("parts", parts);
        let (pods, mut writer) = store(indexers);
        writer.apply(&Event::InitDone);
        writer.apply(&Event::Apply(pod("a", "x-y", &[], None)));
        writer.apply(&Event::Apply(pod("a", "y-z", &[], None)));
        assert_eq!(names(pods.by_index("parts", "y").unwrap()), ["x-y", "y-z"]);
        assert_eq!(names(pods.by_index("parts", "z").unwrap()), ["y-z"]);
        assert_eq!(pods.by_index(NODE_NAME, "n").unwrap_err(), UnknownIndex(NODE_NAME.into()));
        // Without the index, pods on a node are still found.
        writer.apply(&Event::Apply(pod("a", "bound", &[], Some("n"))));
        assert_eq!(names(pods.on_node("n")), ["bound"]);
    }

    #[tokio::test]
    async fn every_waiter_wakes_when_the_first_list_is_in() {
        let (pods, mut writer) = pods_store();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let pods = pods.clone();
                tokio::spawn(async move { pods.wait_until_ready().await.is_ok() })
            })
            .collect();
        tokio::task::yield_now().await;
        writer.apply(&Event::Init);
        writer.apply(&Event::InitDone);
        for waiter in waiters {
            let ready = tokio::time::timeout(std::time::Duration::from_secs(5), waiter).await;
            assert!(ready.unwrap().unwrap());
        }
        let (never, writer) = pods_store();
        drop(writer);
        assert!(never.wait_until_ready().await.is_err());
    }
}
