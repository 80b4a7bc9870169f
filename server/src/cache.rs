//! The watch cache: one per resource, in memory, fed by one store watch.
//!
//! Each cache holds the current objects of its resource and a window of recent events.
//! Lists without a limit are answered from it (after it has caught up with the store, so a
//! client reads its own writes), and every watch is served from it: one store watch per
//! resource however many clients watch, each event decoded once and shared.
//!
//! Objects are kept as their JSON bytes (resourceVersion included, ready to send) plus what
//! selectors need (labels and the kind's field values), which keeps the memory per object
//! close to its JSON size.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use bytes::Bytes;
use rkube_apis::resources::ResourceInfo;
use rkube_apis::strategy;
use rkube_store::{EventKind, KeyValue, RangeRequest, Revision, Store};
use serde_json::Value;
use tokio::sync::{broadcast, watch, Notify};

use crate::object;
use crate::status::{ApiError, ApiResult};

/// How many recent events a cache keeps for watches that resume.
const WINDOW: usize = 10_000;
/// How many events a watcher may fall behind before it is ended (it then resumes).
const WATCHER_BUFFER: usize = 4_096;
/// How often the cache asks the store how far it has seen (for bookmarks and fresh reads).
const PROGRESS_INTERVAL: Duration = Duration::from_secs(5);
/// How often a consistent read that waits asks the store for progress again.
const PROGRESS_RETRY: Duration = Duration::from_millis(100);

/// One object as the cache holds it.
#[derive(Debug)]
pub struct CachedObject {
    pub key: String,
    pub name: String,
    pub namespace: String,
    pub revision: Revision,
    /// The object's JSON, `metadata.resourceVersion` set.
    pub json: Bytes,
    pub labels: BTreeMap<String, String>,
    pub fields: Vec<(&'static str, String)>,
    /// False for an object stored in another version than the resource's storage version
    /// now (a custom resource written before its definition changed storage version): its
    /// bytes cannot be served as they are, it must be converted.
    pub in_storage_version: bool,
}

impl CachedObject {
    fn from_value(
        info: &ResourceInfo,
        key: &str,
        mut value: Value,
        revision: Revision,
    ) -> CachedObject {
        object::set_resource_version(&mut value, revision);
        let mut json = Vec::with_capacity(512);
        rkube_apis::go_json::write(&value, Default::default(), &mut json);
        Self::new(info, key, revision, &value, json)
    }

    /// This object as it is served at another `revision` (a watch's DELETED of an object
    /// that left the watch's selection: the object before the change, at the change's).
    pub fn at_revision(&self, info: &ResourceInfo, revision: Revision) -> CachedObject {
        CachedObject::from_value(info, &self.key, self.value(), revision)
    }

    /// `view` holds at least the metadata and the fields the kind's selectors read.
    fn new(
        info: &ResourceInfo,
        key: &str,
        revision: Revision,
        view: &Value,
        json: Vec<u8>,
    ) -> CachedObject {
        CachedObject {
            key: key.to_string(),
            name: object::name(view).unwrap_or("").to_string(),
            namespace: object::namespace(view).unwrap_or("").to_string(),
            revision,
            labels: object::labels(view),
            fields: strategy::field_values(info, view),
            json: Bytes::from(json),
            in_storage_version: view["apiVersion"].as_str() == Some(&info.api_version()),
        }
    }

    /// An object from its stored JSON (which has no resourceVersion), parsing only what the
    /// cache looks at: metadata's name, namespace and labels, and the top-level fields the
    /// kind's field selectors read (not managedFields, nor the object's data). The JSON kept
    /// is the stored text with the resourceVersion put into its metadata, so an object is
    /// never decoded and encoded again.
    fn from_stored(
        info: &ResourceInfo,
        key: &str,
        stored: &[u8],
        revision: Revision,
    ) -> serde_json::Result<CachedObject> {
        use serde_json::value::RawValue;
        let top: BTreeMap<String, &RawValue> = serde_json::from_slice(stored)?;
        let mut view = serde_json::Map::new();
        for field in std::iter::once("apiVersion").chain(strategy::field_value_sources(info)) {
            if let Some(raw) = top.get(field) {
                view.insert(field.to_string(), serde_json::from_str(raw.get())?);
            }
        }
        let metadata = top.get("metadata").and_then(|raw| {
            let fields = serde_json::from_str::<BTreeMap<String, &RawValue>>(raw.get()).ok()?;
            Some((raw.get(), fields))
        });
        let json = match metadata {
            // The metadata's text is a slice of `stored`: its offset is where to insert.
            Some((text, fields)) if !fields.contains_key("resourceVersion") => {
                let mut meta = serde_json::Map::new();
                for field in ["name", "namespace", "labels"] {
                    if let Some(raw) = fields.get(field) {
                        meta.insert(field.to_string(), serde_json::from_str(raw.get())?);
                    }
                }
                view.insert("metadata".to_string(), Value::Object(meta));
                // Where Go writes it: after the last member that comes before it (the stored
                // metadata is in Go's order), else first.
                let typed = rkube_apis::go_json::is_typed(
                    top.get("apiVersion").map_or("", |v| v.get().trim_matches('"')),
                    top.get("kind").map_or("", |v| v.get().trim_matches('"')),
                );
                let after = fields
                    .iter()
                    .filter(|(k, _)| rkube_apis::go_json::precedes_resource_version(typed, k))
                    .map(|(_, raw)| offset_of(raw.get(), stored) + raw.get().len())
                    .max();
                let (at, insert) = match after {
                    Some(end) => (end, format!(",\"resourceVersion\":\"{revision}\"")),
                    None => {
                        let comma = if fields.is_empty() { "" } else { "," };
                        (
                            offset_of(text, stored) + 1,
                            format!("\"resourceVersion\":\"{revision}\"{comma}"),
                        )
                    }
                };
                let mut json = Vec::with_capacity(stored.len() + insert.len());
                json.extend_from_slice(&stored[..at]);
                json.extend_from_slice(insert.as_bytes());
                json.extend_from_slice(&stored[at..]);
                json
            }
            // Not as this server stores objects: decode and encode it whole.
            _ => return Ok(Self::from_value(info, key, serde_json::from_slice(stored)?, revision)),
        };
        Ok(Self::new(info, key, revision, &Value::Object(view), json))
    }

    /// The object as a JSON value.
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.json).unwrap_or(Value::Null)
    }

    pub fn view(&self) -> FilterView<'_> {
        FilterView { name: &self.name, labels: &self.labels, fields: &self.fields }
    }
}

/// Where `text`, a slice of `whole`, starts in it.
fn offset_of(text: &str, whole: &[u8]) -> usize {
    text.as_ptr() as usize - whole.as_ptr() as usize
}

/// What a label or field selector looks at.
pub struct FilterView<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub fields: &'a [(&'static str, String)],
}

/// Decides whether an object is in a list or watch.
#[derive(Clone)]
pub struct Filter {
    test: Arc<dyn Fn(&FilterView<'_>) -> bool + Send + Sync>,
    /// Whether it can leave anything out (upstream's predicate is not empty): a list with
    /// such a filter has no `remainingItemCount`, and a version a webhook converts is
    /// filtered after its conversion.
    selective: bool,
}

impl Filter {
    /// A filter that leaves objects out by what `test` says of them.
    pub fn new(test: impl Fn(&FilterView<'_>) -> bool + Send + Sync + 'static) -> Filter {
        Filter { test: Arc::new(test), selective: true }
    }

    /// The filter that passes everything.
    pub fn everything() -> Filter {
        Filter { test: Arc::new(|_| true), selective: false }
    }

    pub fn matches(&self, view: &FilterView<'_>) -> bool {
        !self.selective || (self.test)(view)
    }

    /// Whether it can leave anything out (see [`Filter::everything`]).
    pub fn is_selective(&self) -> bool {
        self.selective
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One change, with the object before it (for selectors that stop or start matching).
#[derive(Debug)]
pub struct CacheEvent {
    pub revision: Revision,
    pub kind: EventType,
    pub object: Arc<CachedObject>,
    pub prev: Option<Arc<CachedObject>>,
}

struct State {
    objects: BTreeMap<String, Arc<CachedObject>>,
    window: VecDeque<Arc<CacheEvent>>,
    /// Every event up to this revision has been applied.
    revision: Revision,
    /// Every event after this revision is in the window.
    oldest: Revision,
}

/// The cache of one resource (its storage version).
pub struct Cache {
    info: Arc<ResourceInfo>,
    prefix: String,
    state: RwLock<State>,
    events: broadcast::Sender<Arc<CacheEvent>>,
    revision: watch::Sender<Revision>,
    progress: Arc<Notify>,
    /// True once the cache stopped (its resource is no longer served): watches end.
    stopped: watch::Sender<bool>,
}

/// How a watch starts: the events to send first, and the live ones after them.
pub struct WatchStart {
    pub initial: Vec<Arc<CacheEvent>>,
    /// The revision the initial events bring the watcher to.
    pub revision: Revision,
    pub live: broadcast::Receiver<Arc<CacheEvent>>,
}

impl Cache {
    /// Lists the resource from the store and starts following it.
    pub async fn start(store: Arc<dyn Store>, info: Arc<ResourceInfo>) -> ApiResult<Arc<Cache>> {
        let prefix = info.key_prefix();
        let (events, _) = broadcast::channel(WATCHER_BUFFER);
        let (revision, _) = watch::channel(0);
        let cache = Arc::new(Cache {
            info,
            prefix,
            state: RwLock::new(State {
                objects: BTreeMap::new(),
                window: VecDeque::new(),
                revision: 0,
                oldest: 0,
            }),
            events,
            revision,
            progress: Arc::new(Notify::new()),
            stopped: watch::Sender::new(false),
        });
        let listed = cache.relist(store.as_ref()).await?;
        tokio::spawn(cache.clone().follow(store, listed));
        Ok(cache)
    }

    /// Replaces the contents with a fresh list; returns its revision.
    async fn relist(&self, store: &dyn Store) -> ApiResult<Revision> {
        let page = store.range(RangeRequest::prefix(&self.prefix)).await?;
        let mut objects = BTreeMap::new();
        for kv in &page.kvs {
            if let Some(obj) = self.decode(kv) {
                objects.insert(kv.key.clone(), Arc::new(obj));
            }
        }
        let mut state = self.state.write().expect("cache lock");
        state.objects = objects;
        state.window.clear();
        state.revision = page.revision;
        state.oldest = page.revision;
        self.revision.send_replace(page.revision);
        Ok(page.revision)
    }

    fn decode(&self, kv: &KeyValue) -> Option<CachedObject> {
        match CachedObject::from_stored(&self.info, &kv.key, &kv.value, kv.mod_revision) {
            Ok(object) => Some(object),
            Err(e) => {
                tracing::error!(key = kv.key, error = %e, "stored object is not JSON; left out of the cache");
                None
            }
        }
    }

    /// Stops following the store and ends every watch (the resource is no longer served).
    pub fn stop(&self) {
        self.stopped.send_replace(true);
    }

    /// Resolves once the cache stopped.
    pub async fn stopped(&self) {
        let mut stopped = self.stopped.subscribe();
        let _ = stopped.wait_for(|s| *s).await;
    }

    /// Follows the store from `from` until stopped.
    async fn follow(self: Arc<Cache>, store: Arc<dyn Store>, from: Revision) {
        let this = self.clone();
        tokio::select! {
            _ = this.stopped() => {}
            _ = self.follow_store(store, from) => {}
        }
    }

    /// Follows the store from `from`, relisting when the store compacted past it.
    async fn follow_store(self: Arc<Cache>, store: Arc<dyn Store>, mut from: Revision) {
        loop {
            match store.watch(&self.prefix, true, from + 1).await {
                Ok(mut stream) => {
                    let mut ticker = tokio::time::interval(PROGRESS_INTERVAL);
                    loop {
                        tokio::select! {
                            _ = ticker.tick() => stream.request_progress(),
                            _ = self.progress.notified() => stream.request_progress(),
                            response = stream.recv() => match response {
                                Some(Ok(r)) if r.is_progress() => {
                                    self.advance(r.revision);
                                }
                                Some(Ok(r)) => {
                                    for event in r.events {
                                        self.apply(event);
                                    }
                                    from = self.state.read().expect("cache lock").revision;
                                }
                                Some(Err(e)) => {
                                    tracing::warn!(resource = self.info.plural, error = %e, "cache watch ended; restarting");
                                    break;
                                }
                                None => break,
                            },
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(resource = self.info.plural, error = %e, "cache watch failed; retrying")
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            if let Ok(revision) = self.relist(store.as_ref()).await {
                from = revision;
            }
        }
    }

    /// Notes that every event up to `revision` has been applied.
    fn advance(&self, revision: Revision) {
        let mut state = self.state.write().expect("cache lock");
        if revision > state.revision {
            state.revision = revision;
            self.revision.send_replace(revision);
        }
    }

    fn apply(&self, event: rkube_store::Event) {
        let revision = event.revision();
        let mut state = self.state.write().expect("cache lock");
        if revision <= state.revision {
            return;
        }
        let prev = state.objects.get(&event.kv.key).cloned();
        let cache_event = match event.kind {
            EventKind::Put => {
                let Some(obj) = self.decode(&event.kv) else { return };
                let obj = Arc::new(obj);
                state.objects.insert(event.kv.key.clone(), obj.clone());
                let kind = if prev.is_some() { EventType::Modified } else { EventType::Added };
                CacheEvent { revision, kind, object: obj, prev }
            }
            EventKind::Delete => {
                state.objects.remove(&event.kv.key);
                let Some(prev) = prev else { return };
                // The deleted object, as it was, at the revision of its deletion.
                let obj = CachedObject::from_value(&self.info, &prev.key, prev.value(), revision);
                CacheEvent {
                    revision,
                    kind: EventType::Deleted,
                    object: Arc::new(obj),
                    prev: Some(prev),
                }
            }
        };
        let cache_event = Arc::new(cache_event);
        state.window.push_back(cache_event.clone());
        if state.window.len() > WINDOW {
            if let Some(dropped) = state.window.pop_front() {
                state.oldest = dropped.revision;
            }
        }
        state.revision = revision;
        // Sent under the lock: a watcher that subscribed under it sees no gap and no repeat.
        let _ = self.events.send(cache_event);
        self.revision.send_replace(revision);
    }

    /// Waits until the cache has applied everything the store had when this was called
    /// (consistent reads), asking the store for progress; 3 s at most.
    pub async fn wait_fresh(&self, store: &dyn Store) -> ApiResult<Revision> {
        let target = store.current_revision().await?;
        self.wait_for(target).await
    }

    /// Waits until the cache reaches `target`; 3 s at most, as upstream. Progress is asked
    /// for again every [`PROGRESS_RETRY`] while the revision stands still: the store may
    /// show a commit to readers just before it publishes it to watches, and a progress
    /// answer given in between does not reach `target` nor move the cache.
    pub async fn wait_for(&self, target: Revision) -> ApiResult<Revision> {
        let mut revision = self.revision.subscribe();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        loop {
            let now = *revision.borrow_and_update();
            if now >= target {
                return Ok(now);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ApiError::too_large_resource_version(target, now));
            }
            self.progress.notify_one();
            let retry = (tokio::time::Instant::now() + PROGRESS_RETRY).min(deadline);
            if let Ok(Err(_)) = tokio::time::timeout_at(retry, revision.changed()).await {
                return Err(ApiError::too_large_resource_version(target, now));
            }
        }
    }

    /// The objects under `prefix` that pass `filter`, and the revision they are at.
    pub fn list(&self, prefix: &str, filter: &Filter) -> (Vec<Arc<CachedObject>>, Revision) {
        let state = self.state.read().expect("cache lock");
        let items = state
            .objects
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter(|(_, o)| filter.matches(&o.view()))
            .map(|(_, o)| o.clone())
            .collect();
        (items, state.revision)
    }

    /// Starts a watch: from the current state (`from` = None: every object as ADDED) or
    /// after revision `from` (the window's events after it). Too old: 410 Gone.
    pub fn watch(&self, from: Option<Revision>, prefix: &str) -> ApiResult<WatchStart> {
        let state = self.state.read().expect("cache lock");
        let live = self.events.subscribe();
        match from {
            None => {
                let initial = state
                    .objects
                    .range(prefix.to_string()..)
                    .take_while(|(k, _)| k.starts_with(prefix))
                    .map(|(_, o)| {
                        Arc::new(CacheEvent {
                            revision: o.revision,
                            kind: EventType::Added,
                            object: o.clone(),
                            prev: None,
                        })
                    })
                    .collect();
                Ok(WatchStart { initial, revision: state.revision, live })
            }
            Some(from) if from < state.oldest => Err(ApiError::gone(format!(
                "too old resource version: {from} ({})",
                state.oldest + 1
            ))),
            Some(from) => {
                let initial = state
                    .window
                    .iter()
                    .filter(|e| e.revision > from && e.object.key.starts_with(prefix))
                    .cloned()
                    .collect();
                Ok(WatchStart { initial, revision: state.revision.max(from), live })
            }
        }
    }

    /// One object, if the cache has it.
    pub fn get(&self, key: &str) -> Option<Arc<CachedObject>> {
        self.state.read().expect("cache lock").objects.get(key).cloned()
    }

    /// The revision the cache has applied everything up to.
    pub fn current(&self) -> Revision {
        *self.revision.borrow()
    }

    pub fn info(&self) -> &Arc<ResourceInfo> {
        &self.info
    }

    /// How many objects the cache holds, and their JSON bytes.
    pub fn size(&self) -> (usize, usize) {
        let state = self.state.read().expect("cache lock");
        (state.objects.len(), state.objects.values().map(|o| o.json.len()).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkube_apis::resources::Resources;
    use serde_json::json;

    fn full_json(obj: &Value, revision: i64) -> Vec<u8> {
        let mut obj = obj.clone();
        object::set_resource_version(&mut obj, revision);
        let mut out = Vec::new();
        rkube_apis::go_json::write(&obj, Default::default(), &mut out);
        out
    }

    #[test]
    fn stored_objects_are_read_as_a_full_decode_would_read_them() {
        let pods = Resources::builtin().get("", "v1", "pods").unwrap();
        let stored = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "x"},
                         "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
            "status": {"phase": "Running"}
        });
        let mut bytes = Vec::new();
        rkube_apis::go_json::write(
            &stored,
            rkube_apis::go_json::Options { stored: true },
            &mut bytes,
        );
        let read = CachedObject::from_stored(pods, "/k", &bytes, 7).unwrap();
        // The version goes where Go writes it, so the bytes go out as a response would.
        assert_eq!(&read.json[..], &full_json(&stored, 7)[..]);
        let full = CachedObject::from_value(pods, "/k", stored.clone(), 7);
        assert_eq!(read.value(), full.value());
        assert_eq!(read.value()["metadata"]["resourceVersion"], "7");
        assert_eq!((read.name.as_str(), read.namespace.as_str()), ("p", "ns"));
        assert_eq!(read.labels, full.labels);
        assert_eq!(read.fields, full.fields);
        // Empty metadata, and metadata that already has a resourceVersion.
        let bare = CachedObject::from_stored(pods, "/k", br#"{"metadata":{}}"#, 3).unwrap();
        assert_eq!(bare.value(), json!({"metadata": {"resourceVersion": "3"}}));
        let odd = br#"{"metadata":{"resourceVersion":"1","name":"q"}}"#;
        let odd = CachedObject::from_stored(pods, "/k", odd, 4).unwrap();
        assert_eq!(odd.value()["metadata"], json!({"resourceVersion": "4", "name": "q"}));
    }
    /// A bare cache of pods at `revision`, following no store.
    fn cache_at(revision: Revision) -> Arc<Cache> {
        let pods = Resources::builtin().get("", "v1", "pods").unwrap().clone();
        Arc::new(Cache {
            prefix: pods.key_prefix(),
            info: pods,
            state: RwLock::new(State {
                objects: BTreeMap::new(),
                window: VecDeque::new(),
                revision,
                oldest: revision,
            }),
            events: broadcast::channel(8).0,
            revision: watch::channel(revision).0,
            progress: Arc::new(Notify::new()),
            stopped: watch::Sender::new(false),
        })
    }

    #[tokio::test]
    async fn a_consistent_read_asks_again_when_a_progress_answer_falls_short() {
        let cache = cache_at(5);
        // The store's first answer is the revision the cache has (the commit not yet
        // published); the next one has the commit.
        let store = cache.clone();
        tokio::spawn(async move {
            store.progress.notified().await;
            store.advance(5);
            store.progress.notified().await;
            store.advance(7);
        });
        let reached = tokio::time::timeout(Duration::from_secs(2), cache.wait_for(7)).await;
        assert_eq!(reached.expect("not stuck until the 3 s deadline").unwrap(), 7);
        // Never reached: 504 after 3 s, as upstream.
        let cache = cache_at(5);
        let err = cache.wait_for(9).await.unwrap_err();
        assert!(format!("{err:?}").contains("Too large resource version"), "{err:?}");
    }
}
