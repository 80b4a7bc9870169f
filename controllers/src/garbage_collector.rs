//! The garbage collector (kube-controller-manager's `garbage-collector-controller`): deletes
//! objects whose owners (`metadata.ownerReferences`) are all gone, and carries out the
//! `Orphan` and `Foreground` propagation policies of a delete, which the API server records
//! as the `orphan` and `foregroundDeletion` finalizers on the owner.
//!
//! As upstream's, in three parts:
//!
//! - *Monitors*: one watch per resource that supports list, watch and delete (Events aside),
//!   found by discovery and refreshed every 30 s so new kinds (CRDs) are picked up. What they
//!   see goes, through one bounded channel, to a single task that keeps the [`graph`]: every
//!   object by uid with its owners and dependents.
//! - *attempt to delete* workers: an object whose owner went (or was never there) is looked up
//!   live, its owners too (by apiVersion, kind and name, in its namespace or cluster-wide; a
//!   different uid counts as gone). With no owner left it is deleted in the background (or as
//!   its own finalizers ask); with some owner left, its references to the gone ones are
//!   removed. An owner deleted in the foreground loses its `foregroundDeletion` finalizer
//!   once no dependent with `blockOwnerDeletion` is left; its dependents are deleted, in the
//!   foreground themselves when they have dependents.
//! - *attempt to orphan* workers: an owner deleted with `orphan` has its reference removed
//!   from every dependent, then loses the finalizer.
//!
//! Writes never lose a concurrent change: deletes carry uid and resourceVersion
//! preconditions, and reference and finalizer removals are JSON patches that `test` the
//! values they replace, each retried a bounded number of times, then handed back to the work
//! queue with a back-off.

pub mod graph;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{
    Api, DeleteParams, DynamicObject, PartialObjectMeta, Patch, PatchParams, Preconditions,
    PropagationPolicy,
};
use kube::discovery::{verbs, ApiResource};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Client;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::discovery::{self, Mapper};
use graph::{
    AbsentOwners, Change, Decision, Effects, Graph, Identity, Item, Observed, OwnerState,
    Propagation, FOREGROUND, ORPHAN,
};
use rkube_runtime::events::Recorder;
use rkube_runtime::workqueue::WorkQueue;

/// The component name on the events it records.
const COMPONENT: &str = "garbage-collector-controller";
/// Resources never watched (as upstream: Events are many, and own nothing).
const IGNORED: [(&str, &str); 2] = [("", "events"), ("events.k8s.io", "events")];
/// How often discovery runs again to pick up new resources.
const DISCOVERY_PERIOD: Duration = Duration::from_secs(30);
/// How often owners with pending work and unverified owners are handed out again.
const RESYNC_PERIOD: Duration = Duration::from_secs(60);
/// How long the workers wait for the monitors' first lists before starting anyway.
const INITIAL_SYNC_TIMEOUT: Duration = Duration::from_secs(30);
/// Monitor events waiting for the graph task (monitors wait when it is full).
const CHANGES_CAPACITY: usize = 1024;
/// The longest back-off of an item that keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// The longest discovery may take.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest one item may take (its API calls included) before it is retried later.
const ITEM_TIMEOUT: Duration = Duration::from_secs(60);
/// Attempts of one guarded write that keeps meeting concurrent changes.
const WRITE_ATTEMPTS: usize = 5;
/// Absent owners remembered (as upstream).
const ABSENT_OWNERS: usize = 500;
/// The shortest time between two discoveries run because a kind was not known.
const REDISCOVERY_INTERVAL: Duration = Duration::from_secs(5);
/// Dependents orphaned at once for one owner.
const ORPHAN_CONCURRENCY: usize = 8;

/// The garbage collector's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// `--concurrent-gc-syncs`: workers of each kind.
    pub workers: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config { workers: 20 }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("no served resource has apiVersion {api_version:?} and kind {kind:?}")]
    UnknownKind { api_version: String, kind: String },
    #[error("cluster-scoped objects cannot refer to namespaced owners")]
    NamespacedOwnerOfClusterScopedObject,
    #[error("{0} kept changing under {WRITE_ATTEMPTS} attempts to update it; will retry later")]
    TooManyConflicts(Identity),
    #[error("gave up after {0:?}; will retry later")]
    Timeout(Duration),
}

/// What a worker's queue does with the item next.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Done,
    /// Again after a back-off (a virtual node not yet seen by a monitor).
    Again,
}

/// What the monitors tell the graph task.
enum Message {
    Change(Change),
    /// A monitor's (re)list is complete: once this is processed, the graph holds it all.
    Synced(Arc<AtomicBool>),
}

struct Gc {
    client: Client,
    graph: Mutex<Graph>,
    absent: Mutex<AbsentOwners>,
    mapper: RwLock<Mapper>,
    /// When discovery last ran for an unknown kind; held while it runs.
    rediscovered: tokio::sync::Mutex<Option<Instant>>,
    attempt_to_delete: WorkQueue<String>,
    attempt_to_orphan: WorkQueue<String>,
    changes: mpsc::Sender<Message>,
    recorder: Recorder,
}

/// Runs the garbage collector until the task is aborted.
pub async fn run(client: Client, config: Config) {
    let (changes, changes_rx) = mpsc::channel(CHANGES_CAPACITY);
    let gc = Arc::new(Gc {
        recorder: Recorder::new(client.clone(), COMPONENT),
        client,
        graph: Mutex::new(Graph::new()),
        absent: Mutex::new(AbsentOwners::new(ABSENT_OWNERS)),
        mapper: RwLock::new(Mapper::default()),
        rediscovered: tokio::sync::Mutex::new(None),
        attempt_to_delete: WorkQueue::new(MAX_BACKOFF),
        attempt_to_orphan: WorkQueue::new(MAX_BACKOFF),
        changes,
    });
    // Everything below stops when this future is dropped: the tasks with the set, the
    // monitors with their map.
    let mut tasks = JoinSet::new();
    let (synced_tx, synced_rx) = watch::channel(0u64);
    tasks.spawn(process_graph_changes(gc.clone(), changes_rx, synced_tx));
    let mut monitors = Monitors::default();
    while let Err(e) = gc.sync_monitors(&mut monitors).await {
        tracing::warn!(error = %e, "garbage collector: discovery failed; retrying in 5 s");
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    monitors.wait_until_synced(synced_rx, INITIAL_SYNC_TIMEOUT).await;
    tracing::info!(graph = gc.graph.lock().expect("graph").len(), "garbage collector started");
    for _ in 0..config.workers.max(1) {
        tasks.spawn(work(gc.clone(), Queue::Delete));
        tasks.spawn(work(gc.clone(), Queue::Orphan));
    }
    let mut rediscover =
        tokio::time::interval_at(Instant::now() + DISCOVERY_PERIOD, DISCOVERY_PERIOD);
    let mut resync = tokio::time::interval_at(Instant::now() + RESYNC_PERIOD, RESYNC_PERIOD);
    for interval in [&mut rediscover, &mut resync] {
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    }
    loop {
        tokio::select! {
            _ = rediscover.tick() => {
                if let Err(e) = gc.sync_monitors(&mut monitors).await {
                    tracing::debug!(error = %e, "garbage collector: discovery failed");
                }
            }
            _ = resync.tick() => gc.resync(),
        }
    }
}

/// The watches, by resource (apiVersion and plural).
#[derive(Default)]
struct Monitors {
    running: HashMap<(String, String), Monitor>,
}

struct Monitor {
    task: tokio::task::JoinHandle<()>,
    synced: Arc<AtomicBool>,
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Monitors {
    fn all_synced(&self) -> bool {
        self.running.values().all(|m| m.synced.load(Ordering::Acquire))
    }

    /// Waits until every monitor's first list is in the graph, or `limit` passed.
    async fn wait_until_synced(&self, mut synced: watch::Receiver<u64>, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.all_synced() {
            match tokio::time::timeout_at(deadline, synced.changed()).await {
                Ok(Ok(())) => {}
                _ => {
                    tracing::warn!("garbage collector: not all resources listed in time; starting");
                    return;
                }
            }
        }
    }
}

/// The resources to watch: at their preferred version, with list, watch and delete.
fn deletable_resources(discovery: &kube::Discovery) -> HashMap<(String, String), ApiResource> {
    discovery::preferred_resources(discovery)
        .into_iter()
        .filter(|(resource, caps)| {
            [verbs::LIST, verbs::WATCH, verbs::DELETE].iter().all(|v| caps.supports_operation(v))
                && !IGNORED.contains(&(resource.group.as_str(), resource.plural.as_str()))
        })
        .map(|(resource, _)| ((resource.api_version.clone(), resource.plural.clone()), resource))
        .collect()
}

impl Gc {
    /// Runs discovery: refreshes the kinds known and starts and stops monitors to match.
    async fn sync_monitors(self: &Arc<Self>, monitors: &mut Monitors) -> Result<(), Error> {
        let discovery = self.discover().await?;
        *self.mapper.write().expect("mapper") = Mapper::new(&discovery);
        let wanted = deletable_resources(&discovery);
        if wanted.is_empty() {
            // Never stop watching everything because of one odd answer.
            return Ok(());
        }
        let before = monitors.running.len();
        monitors.running.retain(|key, _| wanted.contains_key(key));
        let removed = before - monitors.running.len();
        let mut added = 0;
        for (key, resource) in wanted {
            if monitors.running.contains_key(&key) {
                continue;
            }
            let synced = Arc::new(AtomicBool::new(false));
            let task = tokio::spawn(monitor(
                self.client.clone(),
                resource,
                self.changes.clone(),
                synced.clone(),
            ));
            monitors.running.insert(key, Monitor { task, synced });
            added += 1;
        }
        if added > 0 || removed > 0 {
            tracing::info!(
                added,
                removed,
                watched = monitors.running.len(),
                "garbage collector: resources synced"
            );
        }
        Ok(())
    }

    /// Runs discovery, for at most [`DISCOVERY_TIMEOUT`].
    async fn discover(&self) -> Result<kube::Discovery, Error> {
        match tokio::time::timeout(DISCOVERY_TIMEOUT, discovery::run(&self.client)).await {
            Ok(discovered) => Ok(discovered?),
            Err(_) => Err(Error::Timeout(DISCOVERY_TIMEOUT)),
        }
    }

    /// Hands out again the work a lost event would leave undone.
    fn resync(&self) {
        let (check, orphan) = self.graph.lock().expect("graph").pending();
        for uid in check {
            self.attempt_to_delete.add(uid);
        }
        for uid in orphan {
            self.attempt_to_orphan.add(uid);
        }
    }

    async fn act_on(&self, effects: Effects) {
        for uid in effects.attempt_to_delete {
            self.attempt_to_delete.add(uid);
        }
        for uid in effects.attempt_to_delete_later {
            self.attempt_to_delete.add_rate_limited(uid);
        }
        for uid in effects.attempt_to_orphan {
            self.attempt_to_orphan.add(uid);
        }
        if !effects.absent.is_empty() {
            let mut absent = self.absent.lock().expect("absent owners");
            for identity in effects.absent {
                absent.add(identity);
            }
        }
        for (dependent, owner) in effects.invalid_namespace {
            tracing::info!(%dependent, %owner, "garbage collector: owner reference to another namespace");
            let reference = ObjectReference {
                api_version: Some(dependent.api_version.clone()),
                kind: Some(dependent.kind.clone()),
                namespace: Some(dependent.namespace.clone()).filter(|n| !n.is_empty()),
                name: Some(dependent.name.clone()),
                uid: Some(dependent.uid.clone()),
                ..Default::default()
            };
            let message =
                format!("ownerRef {owner} does not exist in namespace {:?}", dependent.namespace);
            self.recorder.record(&reference, "Warning", "OwnerRefInvalidNamespace", &message);
        }
    }

    /// The resource serving `api_version` and `kind`, and whether it is namespaced; runs
    /// discovery again (not more often than every few seconds) for a kind not known yet.
    async fn resolve(&self, api_version: &str, kind: &str) -> Result<(ApiResource, bool), Error> {
        if let Some(found) = self.mapper.read().expect("mapper").resolve(api_version, kind) {
            return Ok(found);
        }
        {
            let mut last = self.rediscovered.lock().await;
            if last.is_none_or(|at| at.elapsed() >= REDISCOVERY_INTERVAL) {
                *last = Some(Instant::now());
                if let Ok(discovery) = self.discover().await {
                    *self.mapper.write().expect("mapper") = Mapper::new(&discovery);
                }
            }
        }
        self.mapper.read().expect("mapper").resolve(api_version, kind).ok_or_else(|| {
            Error::UnknownKind { api_version: api_version.into(), kind: kind.into() }
        })
    }

    fn api(&self, resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
            None => Api::all_with(self.client.clone(), resource),
        }
    }

    /// The object at `identity`'s coordinates (whatever its uid), if there is one.
    async fn get(&self, identity: &Identity) -> Result<Option<DynamicObject>, Error> {
        let (resource, namespaced) = self.resolve(&identity.api_version, &identity.kind).await?;
        if namespaced && identity.namespace.is_empty() {
            return Ok(None);
        }
        let api = self.api(&resource, namespaced.then_some(identity.namespace.as_str()));
        Ok(api.get_opt(&identity.name).await?)
    }

    /// Tells the graph that nothing exists at `identity` (upstream's virtual delete event). An
    /// identity without a namespace stands for a cluster-scoped object, so that of a
    /// cluster-scoped kind loses the namespace a dependent gave it, and a namespaced kind
    /// without one (only an invalid cluster-scoped dependent names it so) is not reported:
    /// it says nothing about the owner in any namespace.
    async fn report_absent(&self, mut identity: Identity) {
        let namespaced = self
            .mapper
            .read()
            .expect("mapper")
            .resolve(&identity.api_version, &identity.kind)
            .map(|(_, namespaced)| namespaced);
        match namespaced {
            Some(false) => identity.namespace.clear(),
            Some(true) if identity.namespace.is_empty() => return,
            _ => {}
        }
        let _ = self.changes.send(Message::Change(Change::Absent(identity))).await;
    }

    /// Looks up the owner `reference` of the item at `item`.
    async fn classify(
        &self,
        reference: &OwnerReference,
        item: &Identity,
    ) -> Result<OwnerState, Error> {
        let mut key = Identity::of_owner(reference, "");
        {
            let absent = self.absent.lock().expect("absent owners");
            if absent.contains(&key) {
                return Ok(OwnerState::Absent);
            }
            key.namespace = item.namespace.clone();
            if absent.contains(&key) {
                return Ok(OwnerState::Absent);
            }
        }
        let (resource, namespaced) = self.resolve(&reference.api_version, &reference.kind).await?;
        if !namespaced {
            key.namespace.clear();
        } else if item.namespace.is_empty() {
            return Err(Error::NamespacedOwnerOfClusterScopedObject);
        }
        let api = self.api(&resource, namespaced.then_some(item.namespace.as_str()));
        match api.get_opt(&reference.name).await? {
            Some(owner) if owner.metadata.uid.as_deref() == Some(reference.uid.as_str()) => {
                let waiting = owner.metadata.deletion_timestamp.is_some()
                    && owner.metadata.finalizers.iter().flatten().any(|f| f == FOREGROUND);
                Ok(if waiting { OwnerState::WaitingForDependents } else { OwnerState::Present })
            }
            _ => {
                self.absent.lock().expect("absent owners").add(key);
                Ok(OwnerState::Absent)
            }
        }
    }

    /// Upstream's attemptToDeleteItem.
    async fn attempt_to_delete_item(&self, uid: &str) -> Result<Outcome, Error> {
        let Some(item) = self.graph.lock().expect("graph").item(uid) else {
            return Ok(Outcome::Done);
        };
        let done = if item.observed { Outcome::Done } else { Outcome::Again };
        // Being deleted is a one-way trip: its dependents are looked at once it is gone.
        if item.being_deleted && !item.deleting_dependents {
            return Ok(Outcome::Done);
        }
        let latest = match self.get(&item.identity).await? {
            Some(latest) if latest.metadata.uid.as_deref() == Some(uid) => latest,
            _ => {
                self.report_absent(item.identity).await;
                return Ok(Outcome::Done);
            }
        };
        if item.deleting_dependents {
            self.process_deleting_dependents(&item).await?;
            return Ok(done);
        }
        let references = latest.metadata.owner_references.clone().unwrap_or_default();
        if references.is_empty() {
            return Ok(done);
        }
        let mut owners = Vec::with_capacity(references.len());
        for reference in &references {
            owners.push((reference.clone(), self.classify(reference, &item.identity).await?));
        }
        let finalizers = latest.metadata.finalizers.clone().unwrap_or_default();
        let resource_version = latest.metadata.resource_version.clone();
        let propagation = match graph::decide(&owners, &item, &finalizers) {
            Decision::Keep => return Ok(done),
            Decision::RemoveReferences(uids) => {
                tracing::info!(item = %item.identity, owners = ?uids, "garbage collector: removing references to absent or waiting owners");
                self.update_references(&item.identity, |refs| without(refs, &uids)).await?;
                return Ok(done);
            }
            Decision::DeleteForeground { unblock } => {
                if unblock {
                    // A dependent waits too: a cycle could block both forever.
                    self.update_references(&item.identity, unblocked).await?;
                }
                Propagation::Foreground
            }
            Decision::Delete(propagation) => propagation,
        };
        tracing::info!(item = %item.identity, ?propagation, "garbage collector: deleting an object whose owners are gone");
        let found = self.delete(&item.identity, resource_version, &references, propagation).await?;
        if !found {
            self.report_absent(item.identity).await;
            return Ok(Outcome::Done);
        }
        Ok(done)
    }

    /// An owner deleted in the foreground: done once no blocking dependent is left, else its
    /// blocking dependents are looked at.
    async fn process_deleting_dependents(&self, item: &Item) -> Result<(), Error> {
        if item.blocking_dependents.is_empty() {
            tracing::info!(owner = %item.identity, "garbage collector: dependents gone; removing the foregroundDeletion finalizer");
            return self.remove_finalizer(&item.identity, FOREGROUND).await;
        }
        for (dependent, deleting_dependents) in &item.blocking_dependents {
            if !deleting_dependents {
                self.attempt_to_delete.add(dependent.clone());
            }
        }
        Ok(())
    }

    /// Upstream's attemptToOrphanWorker: the owner's reference goes from every dependent,
    /// then its `orphan` finalizer.
    async fn attempt_to_orphan(&self, uid: &str) -> Result<Outcome, Error> {
        let Some((owner, dependents)) = self.graph.lock().expect("graph").dependents(uid) else {
            return Ok(Outcome::Done);
        };
        let owner_uid = [uid.to_string()];
        let results: Vec<Result<(), Error>> =
            futures::stream::iter(dependents)
                .map(|dependent| {
                    let owner_uid = &owner_uid;
                    async move {
                        self.update_references(&dependent, |refs| without(refs, owner_uid)).await
                    }
                })
                .buffer_unordered(ORPHAN_CONCURRENCY)
                .collect()
                .await;
        if let Some(error) = results.into_iter().find_map(Result::err) {
            return Err(error);
        }
        tracing::info!(%owner, "garbage collector: dependents orphaned; removing the orphan finalizer");
        self.remove_finalizer(&owner, ORPHAN).await?;
        Ok(Outcome::Done)
    }

    /// Rewrites the owner references of the object at `identity` (if it is still that
    /// object) with `change`, which says `None` when there is nothing to change.
    async fn update_references(
        &self,
        identity: &Identity,
        change: impl Fn(&[OwnerReference]) -> Option<Vec<OwnerReference>>,
    ) -> Result<(), Error> {
        self.guarded_patch(identity, |object| {
            let references = object.metadata.owner_references.clone().unwrap_or_default();
            let new = change(&references)?;
            Some(replace_ops(
                "/metadata/ownerReferences",
                json!(references),
                json!(new),
                new.is_empty(),
            ))
        })
        .await
    }

    /// Removes `finalizer` from the object at `identity` (if it is still that object).
    async fn remove_finalizer(&self, identity: &Identity, finalizer: &str) -> Result<(), Error> {
        self.guarded_patch(identity, |object| {
            let finalizers = object.metadata.finalizers.clone().unwrap_or_default();
            if !finalizers.iter().any(|f| f == finalizer) {
                return None;
            }
            let kept: Vec<&String> = finalizers.iter().filter(|f| *f != finalizer).collect();
            Some(replace_ops(
                "/metadata/finalizers",
                json!(finalizers),
                json!(kept),
                kept.is_empty(),
            ))
        })
        .await
    }

    /// Reads the object and applies the JSON patch `ops` makes of it (after a test of its
    /// uid), again from a fresh read when a concurrent change fails the patch's tests; a
    /// bounded number of times. A missing object, or `ops` saying `None`, is success.
    async fn guarded_patch(
        &self,
        identity: &Identity,
        ops: impl Fn(&DynamicObject) -> Option<Vec<Value>>,
    ) -> Result<(), Error> {
        let (resource, namespaced) = self.resolve(&identity.api_version, &identity.kind).await?;
        for _ in 0..WRITE_ATTEMPTS {
            let Some(object) = self.get(identity).await? else { return Ok(()) };
            if object.metadata.uid.as_deref() != Some(identity.uid.as_str()) {
                return Ok(());
            }
            let Some(ops) = ops(&object) else { return Ok(()) };
            let mut patch =
                vec![json!({"op": "test", "path": "/metadata/uid", "value": identity.uid})];
            patch.extend(ops);
            let patch: json_patch::Patch =
                serde_json::from_value(Value::Array(patch)).expect("a JSON patch");
            let api = self.api(&resource, namespaced.then_some(identity.namespace.as_str()));
            match api
                .patch(&identity.name, &PatchParams::default(), &Patch::<()>::Json(patch))
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(()),
                // A failed test (422) or a lost race (409): read again.
                Err(kube::Error::Api(status)) if status.code == 409 || status.code == 422 => {}
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::TooManyConflicts(identity.clone()))
    }

    /// Deletes the object at `identity` with uid and resourceVersion preconditions; when only
    /// the resourceVersion is stale and the owner references are as they were, again without
    /// it. `false` when the object is not there.
    async fn delete(
        &self,
        identity: &Identity,
        resource_version: Option<String>,
        references: &[OwnerReference],
        propagation: Propagation,
    ) -> Result<bool, Error> {
        let (resource, namespaced) = self.resolve(&identity.api_version, &identity.kind).await?;
        let api = self.api(&resource, namespaced.then_some(identity.namespace.as_str()));
        let mut precondition = resource_version;
        loop {
            let params = DeleteParams {
                propagation_policy: Some(match propagation {
                    Propagation::Orphan => PropagationPolicy::Orphan,
                    Propagation::Background => PropagationPolicy::Background,
                    Propagation::Foreground => PropagationPolicy::Foreground,
                }),
                preconditions: Some(Preconditions {
                    uid: Some(identity.uid.clone()),
                    resource_version: precondition.clone(),
                }),
                ..DeleteParams::default()
            };
            let error = match api.delete(&identity.name, &params).await {
                Ok(_) => return Ok(true),
                Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(false),
                Err(e) => e,
            };
            let stale = matches!(&error, kube::Error::Api(s) if s.is_conflict());
            let Some(rv) = precondition.take().filter(|_| stale) else { return Err(error.into()) };
            match api.get_opt(&identity.name).await? {
                None => return Ok(true),
                Some(live)
                    if live.metadata.uid.as_deref() == Some(identity.uid.as_str())
                        && live.metadata.resource_version.as_deref() != Some(rv.as_str())
                        && live.metadata.owner_references.clone().unwrap_or_default()
                            == references => {}
                Some(_) => return Err(error.into()),
            }
        }
    }
}

/// `references` without those to `uids`; `None` when there is none of them.
fn without(references: &[OwnerReference], uids: &[String]) -> Option<Vec<OwnerReference>> {
    let kept: Vec<OwnerReference> =
        references.iter().filter(|r| !uids.contains(&r.uid)).cloned().collect();
    (kept.len() != references.len()).then_some(kept)
}

/// `references` with `blockOwnerDeletion` cleared; `None` when none was set.
fn unblocked(references: &[OwnerReference]) -> Option<Vec<OwnerReference>> {
    if !references.iter().any(|r| r.block_owner_deletion == Some(true)) {
        return None;
    }
    let mut new = references.to_vec();
    for reference in &mut new {
        if reference.block_owner_deletion == Some(true) {
            reference.block_owner_deletion = Some(false);
        }
    }
    Some(new)
}

/// JSON patch operations replacing the value at `path` (tested to be `old`) with `new`, or
/// removing it when `remove`.
fn replace_ops(path: &str, old: Value, new: Value, remove: bool) -> Vec<Value> {
    let test = json!({"op": "test", "path": path, "value": old});
    if remove {
        vec![test, json!({"op": "remove", "path": path})]
    } else {
        vec![test, json!({"op": "replace", "path": path, "value": new})]
    }
}

/// Watches one resource into the graph. A relist (after the watch could not resume) reports
/// the objects it no longer has as deleted.
async fn monitor(
    client: Client,
    resource: ApiResource,
    changes: mpsc::Sender<Message>,
    synced: Arc<AtomicBool>,
) {
    // Metadata alone (`PartialObjectMetadata`): owners, finalizers and identity are all the
    // graph needs, as upstream's metadata informers.
    let api: Api<PartialObjectMeta<DynamicObject>> = Api::all_with(client, &resource);
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    // uid -> (namespace, name) of what the graph was told exists.
    let mut known: HashMap<String, (String, String)> = HashMap::new();
    let mut relisted: Option<std::collections::HashSet<String>> = None;
    while let Some(event) = stream.next().await {
        let message = match event {
            Ok(Event::Init) => {
                relisted = Some(Default::default());
                continue;
            }
            Ok(Event::InitApply(object)) | Ok(Event::Apply(object)) => {
                let observed = to_observed(&resource, object.metadata);
                let uid = observed.identity.uid.clone();
                if let Some(seen) = relisted.as_mut() {
                    seen.insert(uid.clone());
                }
                let place = (observed.identity.namespace.clone(), observed.identity.name.clone());
                known.insert(uid, place);
                Message::Change(Change::Observed(observed))
            }
            Ok(Event::Delete(object)) => {
                let identity = to_observed(&resource, object.metadata).identity;
                known.remove(&identity.uid);
                Message::Change(Change::Deleted(identity))
            }
            Ok(Event::InitDone) => {
                let seen = relisted.take().unwrap_or_default();
                let gone: Vec<String> =
                    known.keys().filter(|u| !seen.contains(*u)).cloned().collect();
                for uid in gone {
                    let Some((namespace, name)) = known.remove(&uid) else { continue };
                    let identity = Identity {
                        api_version: resource.api_version.clone(),
                        kind: resource.kind.clone(),
                        name,
                        uid,
                        namespace,
                    };
                    if changes.send(Message::Change(Change::Deleted(identity))).await.is_err() {
                        return;
                    }
                }
                Message::Synced(synced.clone())
            }
            Err(e) => {
                tracing::debug!(error = %e, resource = %resource.plural, "garbage collector watch");
                continue;
            }
        };
        if changes.send(message).await.is_err() {
            return;
        }
    }
}

/// What the graph needs of an object.
fn to_observed(resource: &ApiResource, meta: ObjectMeta) -> Observed {
    Observed {
        identity: Identity {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
            name: meta.name.unwrap_or_default(),
            uid: meta.uid.unwrap_or_default(),
            namespace: meta.namespace.unwrap_or_default(),
        },
        owners: meta.owner_references.unwrap_or_default(),
        being_deleted: meta.deletion_timestamp.is_some(),
        finalizers: meta.finalizers.unwrap_or_default(),
    }
}

/// The single task that owns graph changes (upstream's processGraphChanges).
async fn process_graph_changes(
    gc: Arc<Gc>,
    mut changes: mpsc::Receiver<Message>,
    synced: watch::Sender<u64>,
) {
    while let Some(message) = changes.recv().await {
        match message {
            Message::Synced(flag) => {
                flag.store(true, Ordering::Release);
                synced.send_modify(|n| *n += 1);
            }
            Message::Change(change) => {
                let effects = gc.graph.lock().expect("graph").apply(change);
                gc.act_on(effects).await;
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Queue {
    Delete,
    Orphan,
}

/// One worker on one queue, until the queue shuts down (or the task is aborted).
async fn work(gc: Arc<Gc>, queue: Queue) {
    let q = match queue {
        Queue::Delete => &gc.attempt_to_delete,
        Queue::Orphan => &gc.attempt_to_orphan,
    };
    while let Some(uid) = q.get().await {
        let attempt = async {
            match queue {
                Queue::Delete => gc.attempt_to_delete_item(&uid).await,
                Queue::Orphan => gc.attempt_to_orphan(&uid).await,
            }
        };
        let outcome = tokio::time::timeout(ITEM_TIMEOUT, attempt)
            .await
            .unwrap_or(Err(Error::Timeout(ITEM_TIMEOUT)));
        match outcome {
            Ok(Outcome::Done) => q.forget(&uid),
            Ok(Outcome::Again) => q.add_rate_limited(uid.clone()),
            Err(Error::NamespacedOwnerOfClusterScopedObject) => {
                // Will not resolve by retrying.
                tracing::info!(
                    uid,
                    "garbage collector: a cluster-scoped object names a namespaced owner"
                );
                q.forget(&uid);
            }
            Err(e) => {
                tracing::warn!(uid, error = %e, "garbage collector");
                q.add_rate_limited(uid.clone());
            }
        }
        q.done(&uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(uid: &str, block: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: uid.into(),
            uid: uid.into(),
            block_owner_deletion: block,
            controller: None,
        }
    }

    #[test]
    fn reference_rewrites() {
        let refs = [reference("a", Some(true)), reference("b", None)];
        assert_eq!(without(&refs, &["a".into()]), Some(vec![reference("b", None)]));
        assert_eq!(without(&refs, &["c".into()]), None);
        assert_eq!(unblocked(&refs), Some(vec![reference("a", Some(false)), reference("b", None)]));
        assert_eq!(unblocked(&[reference("b", Some(false))]), None);
    }

    #[test]
    fn patches_test_what_they_replace() {
        let ops = replace_ops("/metadata/finalizers", json!(["orphan", "x"]), json!(["x"]), false);
        assert_eq!(
            Value::Array(ops),
            json!([
                {"op": "test", "path": "/metadata/finalizers", "value": ["orphan", "x"]},
                {"op": "replace", "path": "/metadata/finalizers", "value": ["x"]},
            ])
        );
        let ops = replace_ops("/metadata/finalizers", json!(["orphan"]), json!([]), true);
        assert_eq!(ops[1], json!({"op": "remove", "path": "/metadata/finalizers"}));
        let patch: Result<json_patch::Patch, _> = serde_json::from_value(Value::Array(ops));
        assert!(patch.is_ok());
    }
}
