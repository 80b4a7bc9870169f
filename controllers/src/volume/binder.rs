//! The `persistentvolume-binder-controller` (upstream's PersistentVolumeController, events
//! from `persistentvolume-controller`): the two-sided binding of claims and volumes.
//!
//! The binding is written in two steps, the volume's `claimRef` first and the claim's
//! `volumeName` second, each followed by its status (`Bound`), so an interrupted binding is
//! finished by the next sync of either side. A claim with `pv.kubernetes.io/bind-completed`
//! is read as bound from then on: losing its volume makes it `Lost`.
//!
//! Start at [`run`]. Claims and volumes have a queue each, with one worker each (a sync is
//! not reentrant), fed by their informers and by a resync every `--pvclaimbinder-sync-period`.
//! The controller keeps its own copy of every claim and volume, updated by the informers and
//! by its own writes, so that a stale informer event cannot undo a binding it just wrote
//! (an event older than the copy is skipped).
//!
//! - An unbound claim without `volumeName` gets the best match
//!   ([`find_best_match_for_claim`]); without one, a claim of a WaitForFirstConsumer class
//!   waits for the scheduler (`volume.kubernetes.io/selected-node`), a claim with a class is
//!   handed to the class's provisioner (the storage-provisioner annotations and an
//!   `ExternalProvisioning` event; rkube has no in-tree provisioners), and a claim without a
//!   class is told so. A claim with no class at all gets the default class once one exists.
//! - A claim naming a volume is bound to it if the volume is free and suits it, else waits.
//! - A volume whose claim is gone is `Released`, then kept (`Retain`), deleted (`Delete`:
//!   by its external provisioner, or for a hostPath under `/tmp` by removing the directory as
//!   upstream's host-path deleter does: [`super::reclaim`]) or failed (`Recycle`: rkube has
//!   no recycler).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimStatus, PersistentVolumeStatus,
    Pod,
};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_apis::persistent_volumes::{
    self as pv, claim_class, claim_has_class, find_best_match_for_claim, has_annotation,
    is_volume_bound_to_claim, ANN_BETA_STORAGE_PROVISIONER, ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER, ANN_DYNAMICALLY_PROVISIONED, ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
};
use rkube_runtime::events::{object_reference, Recorder};
use rkube_runtime::informer::{self, Change};
use rkube_runtime::store::Store;
use rkube_runtime::workqueue::WorkQueue;
use tokio::sync::mpsc;

use super::reclaim::{delete_host_path, deleter_of, DeleteError, Deleter};
use super::{claim_key, pod_terminated, POD_CLAIMS};
use crate::api_errors;

/// The component on the controller's events (upstream's).
pub const COMPONENT: &str = "persistentvolume-controller";
/// Its name in `--controllers`.
pub const NAME: &str = "persistentvolume-binder-controller";

/// The longest back-off of a sync that keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// The longest one sync may take.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

/// The controller's flags.
#[derive(Clone, Debug)]
pub struct Config {
    /// `--pvclaimbinder-sync-period`: how often every claim and volume is synced again.
    pub sync_period: Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config { sync_period: Duration::from_secs(15) }
    }
}

/// Why a sync failed (retried after a back-off, and at the next resync).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("VolumeBindingMode not set for StorageClass {0:?}")]
    NoBindingMode(String),
    #[error("invalid binding of claim {claim:?} to volume {volume:?}: volume already claimed by {other:?}")]
    Misbound { claim: String, volume: String, other: String },
    #[error("PersistentVolume {0:?} is without a storage capacity")]
    NoCapacity(String),
    #[error(transparent)]
    Delete(#[from] DeleteError),
}

/// Why a claim cannot have the volume it names (upstream's texts, in `VolumeMismatch` events).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    #[error("the volume is marked for deletion {0:?}")]
    BeingDeleted(String),
    #[error("requested PV is too small")]
    TooSmall,
    #[error("storageClassName does not match")]
    Class,
    #[error("incompatible volumeMode")]
    VolumeMode,
    #[error("incompatible accessMode")]
    AccessMode,
}

impl SyncError {
    /// A conflict with another writer: the next sync sees the newer object.
    fn routine(&self) -> bool {
        matches!(self, SyncError::Api(e) if api_errors::code(e) == Some(409))
    }
}

/// The informers' stores, the controller's own copies, the queues and the recorder.
pub struct Binder {
    volumes_api: Api<PersistentVolume>,
    client: Client,
    informer_volumes: Store<PersistentVolume>,
    informer_claims: Store<PersistentVolumeClaim>,
    classes: Store<StorageClass>,
    pods: Store<Pod>,
    /// The latest known version of each volume, by name.
    volumes: RwLock<HashMap<String, Arc<PersistentVolume>>>,
    /// The latest known version of each claim, by `namespace/name`.
    claims: RwLock<HashMap<String, Arc<PersistentVolumeClaim>>>,
    claim_queue: WorkQueue<String>,
    volume_queue: WorkQueue<String>,
    recorder: Recorder,
}

/// Runs the controller until the task is aborted. `pods` is the shared pod informer, with
/// the [`POD_CLAIMS`] index.
pub async fn run(client: Client, config: Config, pods: Store<Pod>) {
    let (volume_tx, mut volume_rx) = mpsc::unbounded_channel();
    let (claim_tx, mut claim_rx) = mpsc::unbounded_channel();
    let (volumes, _volume_watch) = informer::start(
        Api::<PersistentVolume>::all(client.clone()),
        watcher::Config::default(),
        vec![volume_tx],
    );
    let (claims, _claim_watch) = informer::start(
        Api::<PersistentVolumeClaim>::all(client.clone()),
        watcher::Config::default(),
        vec![claim_tx],
    );
    let (classes, _class_watch) = informer::start(
        Api::<StorageClass>::all(client.clone()),
        watcher::Config::default(),
        Vec::new(),
    );
    for ready in [
        volumes.wait_until_ready().await,
        claims.wait_until_ready().await,
        classes.wait_until_ready().await,
    ] {
        if ready.is_err() {
            return;
        }
    }
    let binder = Arc::new(Binder {
        volumes_api: Api::all(client.clone()),
        recorder: Recorder::new(client.clone(), COMPONENT),
        client,
        informer_volumes: volumes,
        informer_claims: claims,
        classes,
        pods,
        volumes: RwLock::new(HashMap::new()),
        claims: RwLock::new(HashMap::new()),
        claim_queue: WorkQueue::new(MAX_BACKOFF),
        volume_queue: WorkQueue::new(MAX_BACKOFF),
    });
    binder.initialize_caches();
    let mut workers = tokio::task::JoinSet::new();
    for claims in [true, false] {
        let binder = binder.clone();
        workers.spawn(async move {
            let (queue, sync_binder) = if claims {
                (&binder.claim_queue, binder.clone())
            } else {
                (&binder.volume_queue, binder.clone())
            };
            let sync = |key: String| {
                let binder = sync_binder.clone();
                async move {
                    let result = if claims {
                        binder.sync_claim_key(&key).await
                    } else {
                        binder.sync_volume_key(&key).await
                    };
                    result.map(|()| None)
                }
            };
            queue.work(NAME, SYNC_TIMEOUT, sync, SyncError::routine).await
        });
    }
    tracing::info!("{NAME} started");
    let mut resync = tokio::time::interval(config.sync_period.max(Duration::from_secs(1)));
    resync.tick().await;
    loop {
        tokio::select! {
            change = volume_rx.recv() => match change {
                Some(Change::Object { name, .. }) => binder.volume_queue.add(name),
                Some(Change::Synced) => {}
                None => break,
            },
            change = claim_rx.recv() => match change {
                Some(Change::Object { namespace, name }) => {
                    binder.claim_queue.add(claim_key(namespace.as_deref().unwrap_or(""), &name))
                }
                Some(Change::Synced) => {}
                None => break,
            },
            _ = resync.tick() => binder.resync(),
        }
    }
    binder.claim_queue.shut_down();
    binder.volume_queue.shut_down();
}

/// Puts `new` in `cache` unless the cache holds a newer version; whether it did (upstream's
/// `storeObjectUpdate`: the same version passes, so periodic syncs happen).
fn store_update<K: kube::Resource>(
    cache: &RwLock<HashMap<String, Arc<K>>>,
    key: &str,
    new: Arc<K>,
) -> bool {
    let version = |o: &K| o.meta().resource_version.as_deref().and_then(|v| v.parse::<u64>().ok());
    let mut cache = cache.write().unwrap_or_else(|e| e.into_inner());
    if let Some(old) = cache.get(key) {
        if let (Some(old), Some(new)) = (version(old), version(&new)) {
            if old > new {
                return false;
            }
        }
    }
    cache.insert(key.to_string(), new);
    true
}

fn key_of_claim(claim: &PersistentVolumeClaim) -> String {
    claim_key(
        claim.metadata.namespace.as_deref().unwrap_or(""),
        claim.metadata.name.as_deref().unwrap_or(""),
    )
}

fn name_of(volume: &PersistentVolume) -> &str {
    volume.metadata.name.as_deref().unwrap_or("")
}

fn volume_phase(volume: &PersistentVolume) -> &str {
    volume.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

fn claim_phase(claim: &PersistentVolumeClaim) -> &str {
    claim.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

fn volume_name_of(claim: &PersistentVolumeClaim) -> &str {
    claim.spec.as_ref().and_then(|s| s.volume_name.as_deref()).unwrap_or("")
}

fn claim_ref_of(volume: &PersistentVolume) -> Option<&k8s_openapi::api::core::v1::ObjectReference> {
    volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref())
}

fn reclaim_policy(volume: &PersistentVolume) -> &str {
    volume.spec.as_ref().and_then(|s| s.persistent_volume_reclaim_policy.as_deref()).unwrap_or("")
}

/// Why the claim cannot have the volume it asked for (upstream's `checkVolumeSatisfyClaim`).
pub fn check_volume_satisfies_claim(
    volume: &PersistentVolume,
    claim: &PersistentVolumeClaim,
) -> Result<(), Mismatch> {
    if volume.metadata.deletion_timestamp.is_some() {
        return Err(Mismatch::BeingDeleted(name_of(volume).to_string()));
    }
    if pv::volume_capacity(volume) < pv::claim_request(claim) {
        return Err(Mismatch::TooSmall);
    }
    if pv::volume_class(volume) != claim_class(claim) {
        return Err(Mismatch::Class);
    }
    if pv::volume_mode_mismatch(claim, volume) {
        return Err(Mismatch::VolumeMode);
    }
    if !pv::access_modes_satisfied(claim, volume) {
        return Err(Mismatch::AccessMode);
    }
    Ok(())
}

/// The claim's status after a sync: phase, and the volume's access modes and (when the
/// claim becomes bound) capacity, or none of them without a volume. `None` when unchanged.
pub fn claim_status(
    claim: &PersistentVolumeClaim,
    phase: &str,
    volume: Option<&PersistentVolume>,
) -> Result<Option<PersistentVolumeClaimStatus>, SyncError> {
    let mut status = claim.status.clone().unwrap_or_default();
    let mut dirty = false;
    if status.phase.as_deref() != Some(phase) {
        status.phase = Some(phase.to_string());
        dirty = true;
    }
    match volume {
        None => {
            if status.access_modes.take().is_some() {
                dirty = true;
            }
            if status.capacity.take().is_some() {
                dirty = true;
            }
        }
        Some(volume) => {
            let modes = volume.spec.as_ref().and_then(|s| s.access_modes.clone());
            if status.access_modes != modes {
                status.access_modes = modes;
                dirty = true;
            }
            if claim_phase(claim) != phase {
                let capacity = volume
                    .spec
                    .as_ref()
                    .and_then(|s| s.capacity.as_ref())
                    .and_then(|c| c.get("storage"))
                    .ok_or_else(|| SyncError::NoCapacity(name_of(volume).to_string()))?;
                let current = status.capacity.as_ref().and_then(|c| c.get("storage"));
                let same = current.is_some_and(|c| {
                    rkube_apis::quantity::parse_units(&c.0)
                        == rkube_apis::quantity::parse_units(&capacity.0)
                });
                if !same {
                    status.capacity = volume.spec.as_ref().and_then(|s| s.capacity.clone());
                    dirty = true;
                }
            }
        }
    }
    Ok(dirty.then_some(status))
}

/// What the binder does with a claim that has no volume yet and no match (the first three
/// cases of upstream's `syncUnboundClaim` switch).
#[derive(Debug, PartialEq, Eq)]
pub enum Unmatched {
    /// WaitForFirstConsumer, and the scheduler has not chosen a node.
    WaitForConsumer,
    /// A class to provision from.
    Provision,
    /// Nothing to do but say so.
    NoClass,
}

/// See [`Unmatched`].
pub fn unmatched(claim: &PersistentVolumeClaim, delay_binding: bool) -> Unmatched {
    let selected = has_annotation(claim.metadata.annotations.as_ref(), ANN_SELECTED_NODE);
    if delay_binding && !selected {
        Unmatched::WaitForConsumer
    } else if !claim_class(claim).is_empty() {
        Unmatched::Provision
    } else {
        Unmatched::NoClass
    }
}

/// The message of the `ExternalProvisioning` event.
pub fn external_provisioning_message(provisioner: &str) -> String {
    format!(
        "Waiting for a volume to be created either by the external provisioner '{provisioner}' or \
         manually by the system administrator. If volume creation is delayed, please verify that \
         the provisioner is running and correctly registered."
    )
}

impl Binder {
    /// Fills the controller's copies from the informers.
    fn initialize_caches(&self) {
        for volume in self.informer_volumes.state() {
            store_update(&self.volumes, name_of(&volume), volume.clone());
        }
        for claim in self.informer_claims.state() {
            store_update(&self.claims, &key_of_claim(&claim), claim.clone());
        }
    }

    fn resync(&self) {
        for claim in self.informer_claims.state() {
            self.claim_queue.add(key_of_claim(&claim));
        }
        for volume in self.informer_volumes.state() {
            self.volume_queue.add(name_of(&volume).to_string());
        }
    }

    fn cached_volume(&self, name: &str) -> Option<Arc<PersistentVolume>> {
        self.volumes.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }

    fn cached_claim(&self, key: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.claims.read().unwrap_or_else(|e| e.into_inner()).get(key).cloned()
    }

    fn all_volumes(&self) -> Vec<Arc<PersistentVolume>> {
        let mut all: Vec<_> =
            self.volumes.read().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
        // A stable order, so that equal candidates are chosen the same way every time.
        all.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        all
    }

    fn claims_api(&self, namespace: &str) -> Api<PersistentVolumeClaim> {
        Api::namespaced(self.client.clone(), namespace)
    }

    fn store_volume(&self, volume: PersistentVolume) -> Arc<PersistentVolume> {
        let volume = Arc::new(volume);
        store_update(&self.volumes, name_of(&volume), volume.clone());
        volume
    }

    fn store_claim(&self, claim: PersistentVolumeClaim) -> Arc<PersistentVolumeClaim> {
        let claim = Arc::new(claim);
        store_update(&self.claims, &key_of_claim(&claim), claim.clone());
        claim
    }

    async fn sync_claim_key(&self, key: &str) -> Result<(), SyncError> {
        let Some((namespace, name)) = key.split_once('/') else { return Ok(()) };
        match self.informer_claims.get(&ObjectRef::new(name).within(namespace)) {
            Some(claim) => {
                if !store_update(&self.claims, key, claim.clone()) {
                    return Ok(());
                }
                self.sync_claim(claim).await
            }
            None => {
                // Gone: the volume it was bound to may be released now.
                let gone = self.claims.write().unwrap_or_else(|e| e.into_inner()).remove(key);
                if let Some(claim) = gone {
                    let volume = volume_name_of(&claim);
                    if !volume.is_empty() {
                        self.volume_queue.add(volume.to_string());
                    }
                }
                Ok(())
            }
        }
    }

    async fn sync_volume_key(&self, name: &str) -> Result<(), SyncError> {
        match self.informer_volumes.get(&ObjectRef::new(name)) {
            Some(volume) => {
                if !store_update(&self.volumes, name, volume.clone()) {
                    return Ok(());
                }
                self.sync_volume(volume).await
            }
            None => {
                // Gone: its claim is synced at once rather than at the next resync (Lost).
                let gone = self.volumes.write().unwrap_or_else(|e| e.into_inner()).remove(name);
                if let Some(r) = gone.as_deref().and_then(claim_ref_of) {
                    let key = claim_key(
                        r.namespace.as_deref().unwrap_or(""),
                        r.name.as_deref().unwrap_or(""),
                    );
                    self.claim_queue.add(key);
                }
                Ok(())
            }
        }
    }

    async fn sync_claim(&self, claim: Arc<PersistentVolumeClaim>) -> Result<(), SyncError> {
        if has_annotation(claim.metadata.annotations.as_ref(), ANN_BIND_COMPLETED) {
            self.sync_bound_claim(claim).await
        } else {
            self.sync_unbound_claim(claim).await
        }
    }

    /// Whether the claim's class binds only once a pod is scheduled.
    fn delay_binding(&self, claim: &PersistentVolumeClaim) -> Result<bool, SyncError> {
        let class = claim_class(claim);
        if class.is_empty() {
            return Ok(false);
        }
        let Some(class) = self.classes.get(&ObjectRef::new(class)) else { return Ok(false) };
        match class.volume_binding_mode.as_deref() {
            None => Err(SyncError::NoBindingMode(claim_class(claim).to_string())),
            Some(mode) => Ok(mode == "WaitForFirstConsumer"),
        }
    }

    async fn sync_unbound_claim(&self, claim: Arc<PersistentVolumeClaim>) -> Result<(), SyncError> {
        let requested = volume_name_of(&claim).to_string();
        if requested.is_empty() {
            let delay = self.delay_binding(&claim)?;
            let volumes = self.all_volumes();
            let found = find_best_match_for_claim(&claim, &volumes, delay).cloned();
            if let Some(volume) = found {
                return self.bind(volume, claim).await;
            }
            if self.assign_default_class(&claim).await? {
                return Ok(());
            }
            match unmatched(&claim, delay) {
                Unmatched::WaitForConsumer => self.event_for_unbound_delayed_claim(&claim),
                Unmatched::Provision => return self.provision_claim(&claim).await,
                Unmatched::NoClass => self.recorder.record(
                    &object_reference(claim.as_ref()),
                    "Normal",
                    "FailedBinding",
                    "no persistent volumes available for this claim and no storage class is set",
                ),
            }
            self.update_claim_status(&claim, "Pending", None).await?;
            return Ok(());
        }
        // The user asked for a particular volume.
        let Some(volume) = self.cached_volume(&requested) else {
            self.update_claim_status(&claim, "Pending", None).await?;
            return Ok(());
        };
        if claim_ref_of(&volume).is_none() {
            if let Err(why) = check_volume_satisfies_claim(&volume, &claim) {
                let message = format!("Cannot bind to requested volume {requested:?}: {why}");
                self.recorder.record(
                    &object_reference(claim.as_ref()),
                    "Warning",
                    "VolumeMismatch",
                    &message,
                );
                self.update_claim_status(&claim, "Pending", None).await?;
                return Ok(());
            }
            return self.bind(volume, claim).await;
        }
        if is_volume_bound_to_claim(&volume, &claim) {
            return self.bind(volume, claim).await;
        }
        let message = format!("volume {requested:?} already bound to a different claim.");
        self.recorder.record(
            &object_reference(claim.as_ref()),
            "Warning",
            "FailedBinding",
            &message,
        );
        if !has_annotation(claim.metadata.annotations.as_ref(), ANN_BOUND_BY_CONTROLLER) {
            self.update_claim_status(&claim, "Pending", None).await?;
            return Ok(());
        }
        let other = claim_ref_of(&volume).map_or(String::new(), |r| {
            claim_key(r.namespace.as_deref().unwrap_or(""), r.name.as_deref().unwrap_or(""))
        });
        Err(SyncError::Misbound { claim: key_of_claim(&claim), volume: requested, other })
    }

    async fn sync_bound_claim(&self, claim: Arc<PersistentVolumeClaim>) -> Result<(), SyncError> {
        let name = volume_name_of(&claim).to_string();
        if name.is_empty() {
            let message =
                "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!";
            return self.claim_status_with_event(&claim, "Lost", "ClaimLost", message).await;
        }
        let Some(volume) = self.cached_volume(&name) else {
            let message = "Bound claim has lost its PersistentVolume. Data on the volume is lost!";
            return self.claim_status_with_event(&claim, "Lost", "ClaimLost", message).await;
        };
        match claim_ref_of(&volume) {
            // Unbound since, or not seen bound yet: bind again.
            None => self.bind(volume, claim).await,
            Some(r) if r.uid == claim.metadata.uid => self.bind(volume, claim).await,
            Some(_) => {
                let message =
                    "Two claims are bound to the same volume, this one is bound incorrectly";
                self.claim_status_with_event(&claim, "Lost", "ClaimMisbound", message).await
            }
        }
    }

    async fn sync_volume(&self, volume: Arc<PersistentVolume>) -> Result<(), SyncError> {
        let Some(claim_ref) = claim_ref_of(&volume).cloned() else {
            self.update_volume_phase(&volume, "Available", "").await?;
            return Ok(());
        };
        if claim_ref.uid.as_deref().unwrap_or("").is_empty() {
            // Reserved for a claim that is not bound yet: the claim's sync binds it.
            self.update_volume_phase(&volume, "Available", "").await?;
            return Ok(());
        }
        let namespace = claim_ref.namespace.clone().unwrap_or_default();
        let name = claim_ref.name.clone().unwrap_or_default();
        let key = claim_key(&namespace, &name);
        let mut claim = self.cached_claim(&key);
        let phase = volume_phase(&volume);
        if claim.is_none() && phase != "Released" && phase != "Failed" {
            // A provisioner or the scheduler may have written the volume before this
            // controller saw the claim: look harder before releasing anything.
            claim = self.informer_claims.get(&ObjectRef::new(&name).within(&namespace));
            if claim.is_none() {
                claim = self.claims_api(&namespace).get_opt(&name).await?.map(Arc::new);
            }
        }
        if claim.as_ref().is_some_and(|c| c.metadata.uid != claim_ref.uid) {
            // The cached claim may be older than the volume's reference.
            claim = self.claims_api(&namespace).get_opt(&name).await?.map(Arc::new);
            if claim.as_ref().is_some_and(|c| c.metadata.uid != claim_ref.uid) {
                claim = None;
            }
        }
        let Some(claim) = claim else {
            let volume = if phase != "Released" && phase != "Failed" {
                self.update_volume_phase(&volume, "Released", "").await?
            } else {
                volume
            };
            return self.reclaim_volume(&volume).await;
        };
        let bound_to = volume_name_of(&claim);
        if bound_to.is_empty() {
            if pv::volume_mode_mismatch(&claim, &volume) {
                let claim_name = claim.metadata.name.as_deref().unwrap_or("");
                let volume_message = format!(
                    "Cannot bind PersistentVolume to requested PersistentVolumeClaim {claim_name:?} due to incompatible volumeMode."
                );
                self.recorder.record(
                    &object_reference(volume.as_ref()),
                    "Warning",
                    "VolumeMismatch",
                    &volume_message,
                );
                let claim_message = format!(
                    "Cannot bind PersistentVolume {:?} to requested PersistentVolumeClaim due to incompatible volumeMode.",
                    name_of(&volume)
                );
                self.recorder.record(
                    &object_reference(claim.as_ref()),
                    "Warning",
                    "VolumeMismatch",
                    &claim_message,
                );
                return Ok(());
            }
            // The volume is bound and the claim not yet: the claim's sync finishes it, soon.
            self.claim_queue.add(key);
            return Ok(());
        }
        if bound_to == name_of(&volume) {
            self.update_volume_phase(&volume, "Bound", "").await?;
            return Ok(());
        }
        // The claim is bound to another volume.
        let provisioned =
            has_annotation(volume.metadata.annotations.as_ref(), ANN_DYNAMICALLY_PROVISIONED);
        if provisioned && reclaim_policy(&volume) == "Delete" {
            let volume = if phase != "Released" && phase != "Failed" {
                self.update_volume_phase(&volume, "Released", "").await?
            } else {
                volume
            };
            return self.reclaim_volume(&volume).await;
        }
        // Bound by this controller (its binding lost), or by the user (keep the claimRef,
        // drop the uid): either way the volume is free again.
        self.unbind_volume(&volume).await
    }

    /// Writes the claim's status if it changed.
    async fn update_claim_status(
        &self,
        claim: &PersistentVolumeClaim,
        phase: &str,
        volume: Option<&PersistentVolume>,
    ) -> Result<Arc<PersistentVolumeClaim>, SyncError> {
        let Some(status) = claim_status(claim, phase, volume)? else {
            return Ok(Arc::new(claim.clone()));
        };
        let mut updated = claim.clone();
        updated.status = Some(status);
        let namespace = claim.metadata.namespace.as_deref().unwrap_or("");
        let name = claim.metadata.name.as_deref().unwrap_or("");
        let written = self
            .claims_api(namespace)
            .replace_status(name, &PostParams::default(), &updated)
            .await?;
        tracing::debug!(claim = %key_of_claim(claim), phase, "claim entered phase");
        Ok(self.store_claim(written))
    }

    /// The claim's new phase with an event, both only when the phase changes.
    async fn claim_status_with_event(
        &self,
        claim: &PersistentVolumeClaim,
        phase: &str,
        reason: &str,
        message: &str,
    ) -> Result<(), SyncError> {
        if claim_phase(claim) == phase {
            return Ok(());
        }
        let written = self.update_claim_status(claim, phase, None).await?;
        self.recorder.record(&object_reference(written.as_ref()), "Warning", reason, message);
        Ok(())
    }

    async fn update_volume_phase(
        &self,
        volume: &Arc<PersistentVolume>,
        phase: &str,
        message: &str,
    ) -> Result<Arc<PersistentVolume>, SyncError> {
        if volume_phase(volume) == phase {
            return Ok(volume.clone());
        }
        let mut updated = volume.as_ref().clone();
        let status = updated.status.get_or_insert_with(PersistentVolumeStatus::default);
        status.phase = Some(phase.to_string());
        status.message = (!message.is_empty()).then(|| message.to_string());
        let written = self
            .volumes_api
            .replace_status(name_of(volume), &PostParams::default(), &updated)
            .await?;
        tracing::debug!(volume = name_of(volume), phase, "volume entered phase");
        Ok(self.store_volume(written))
    }

    /// The volume's new phase with a warning event, both only when the phase changes.
    async fn volume_phase_with_event(
        &self,
        volume: &Arc<PersistentVolume>,
        phase: &str,
        reason: &str,
        message: &str,
    ) -> Result<(), SyncError> {
        if volume_phase(volume) == phase {
            return Ok(());
        }
        let written = self.update_volume_phase(volume, phase, message).await?;
        self.recorder.record(&object_reference(written.as_ref()), "Warning", reason, message);
        Ok(())
    }

    /// Gives a claim that asked for no class at all the default class (upstream's
    /// retroactive default StorageClass assignment); whether it did.
    async fn assign_default_class(&self, claim: &PersistentVolumeClaim) -> Result<bool, SyncError> {
        if claim_has_class(claim) {
            return Ok(false);
        }
        let classes = self.classes.state();
        let defaults =
            classes.iter().filter(|c| pv::is_default_class(c.metadata.annotations.as_ref()));
        let candidates = defaults.map(|c| {
            let created = c.metadata.creation_timestamp.as_ref().map(|t| t.0.as_nanosecond());
            (c.metadata.name.as_deref().unwrap_or(""), created)
        });
        let Some(class) = pv::pick_default_class(candidates) else { return Ok(false) };
        let mut updated = claim.clone();
        updated.spec.get_or_insert_with(Default::default).storage_class_name =
            Some(class.to_string());
        let namespace = claim.metadata.namespace.as_deref().unwrap_or("");
        let name = claim.metadata.name.as_deref().unwrap_or("");
        let written =
            self.claims_api(namespace).replace(name, &PostParams::default(), &updated).await?;
        self.store_claim(written);
        Ok(true)
    }

    /// The event on a WaitForFirstConsumer claim no pod has been scheduled with yet.
    fn event_for_unbound_delayed_claim(&self, claim: &PersistentVolumeClaim) {
        let waiting: Vec<String> = self
            .pods
            .by_index(POD_CLAIMS, &key_of_claim(claim))
            .unwrap_or_default()
            .into_iter()
            .filter(|p| !pod_terminated(p))
            .filter(|p| {
                p.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("").is_empty()
            })
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        let (reason, message) = match waiting.as_slice() {
            [] => (
                "WaitForFirstConsumer",
                "waiting for first consumer to be created before binding".to_string(),
            ),
            [one] => ("WaitForPodScheduled", format!("waiting for pod {one} to be scheduled")),
            many => (
                "WaitForPodScheduled",
                format!("waiting for pods {} to be scheduled", many.join(",")),
            ),
        };
        self.recorder.record(&object_reference(claim), "Normal", reason, &message);
    }

    /// Hands the claim to its class's provisioner: rkube has no in-tree ones, so an
    /// external provisioner is told through the claim's annotations.
    async fn provision_claim(&self, claim: &PersistentVolumeClaim) -> Result<(), SyncError> {
        let class_name = claim_class(claim);
        let reference = object_reference(claim);
        let Some(class) = self.classes.get(&ObjectRef::new(class_name)) else {
            let message = format!("storageclass.storage.k8s.io {class_name:?} not found");
            self.recorder.record(&reference, "Warning", "ProvisioningFailed", &message);
            return Ok(());
        };
        let provisioner = class.provisioner.as_str();
        if provisioner.starts_with("kubernetes.io/") {
            // An in-tree plugin name, which rkube does not have.
            self.recorder.record(
                &reference,
                "Warning",
                "ProvisioningFailed",
                "no provisionable volume plugin matched",
            );
            return Ok(());
        }
        let annotations = claim.metadata.annotations.as_ref();
        let claim = if annotations.and_then(|a| a.get(ANN_STORAGE_PROVISIONER)).map(String::as_str)
            == Some(provisioner)
        {
            Arc::new(claim.clone())
        } else {
            let mut updated = claim.clone();
            let annotations = updated.metadata.annotations.get_or_insert_with(Default::default);
            annotations.insert(ANN_BETA_STORAGE_PROVISIONER.into(), provisioner.into());
            annotations.insert(ANN_STORAGE_PROVISIONER.into(), provisioner.into());
            let namespace = claim.metadata.namespace.as_deref().unwrap_or("");
            let name = claim.metadata.name.as_deref().unwrap_or("");
            match self.claims_api(namespace).replace(name, &PostParams::default(), &updated).await {
                Ok(written) => self.store_claim(written),
                Err(e) => {
                    let message = format!("Error saving claim: {}", api_errors::message(&e));
                    self.recorder.record(&reference, "Warning", "ProvisioningFailed", &message);
                    return Err(e.into());
                }
            }
        };
        let message = external_provisioning_message(provisioner);
        self.recorder.record(
            &object_reference(claim.as_ref()),
            "Normal",
            "ExternalProvisioning",
            &message,
        );
        Ok(())
    }

    /// Binds both sides: the volume's claimRef and phase, then the claim's volumeName,
    /// annotations and phase; the first failure stops it (the next sync goes on).
    async fn bind(
        &self,
        volume: Arc<PersistentVolume>,
        claim: Arc<PersistentVolumeClaim>,
    ) -> Result<(), SyncError> {
        let volume = match pv::bind_volume_to_claim(&volume, &claim) {
            Some(bound) => {
                let written = self
                    .volumes_api
                    .replace(name_of(&volume), &PostParams::default(), &bound)
                    .await?;
                tracing::debug!(volume = name_of(&volume), claim = %key_of_claim(&claim), "claim bound to volume");
                self.store_volume(written)
            }
            None => volume,
        };
        let volume = self.update_volume_phase(&volume, "Bound", "").await?;
        let claim = self.bind_claim_to_volume(&claim, &volume).await?;
        self.update_claim_status(&claim, "Bound", Some(&volume)).await?;
        Ok(())
    }

    async fn bind_claim_to_volume(
        &self,
        claim: &Arc<PersistentVolumeClaim>,
        volume: &PersistentVolume,
    ) -> Result<Arc<PersistentVolumeClaim>, SyncError> {
        let mut updated = claim.as_ref().clone();
        let mut dirty = false;
        let annotations = updated.metadata.annotations.get_or_insert_with(Default::default);
        if volume_name_of(claim) != name_of(volume) {
            annotations.entry(ANN_BOUND_BY_CONTROLLER.into()).or_insert_with(|| "yes".into());
            dirty = true;
        }
        if !annotations.contains_key(ANN_BIND_COMPLETED) {
            annotations.insert(ANN_BIND_COMPLETED.into(), "yes".into());
            dirty = true;
        }
        if !dirty {
            return Ok(claim.clone());
        }
        updated.spec.get_or_insert_with(Default::default).volume_name =
            Some(name_of(volume).to_string());
        let namespace = claim.metadata.namespace.as_deref().unwrap_or("");
        let name = claim.metadata.name.as_deref().unwrap_or("");
        let written =
            self.claims_api(namespace).replace(name, &PostParams::default(), &updated).await?;
        tracing::debug!(volume = name_of(volume), claim = %key_of_claim(claim), "volume bound to claim");
        Ok(self.store_claim(written))
    }

    /// Undoes a binding of the volume: the controller's own binding entirely, a user's
    /// pre-binding down to its claim's name; the volume is Available again.
    async fn unbind_volume(&self, volume: &Arc<PersistentVolume>) -> Result<(), SyncError> {
        let mut updated = volume.as_ref().clone();
        let by_controller =
            has_annotation(volume.metadata.annotations.as_ref(), ANN_BOUND_BY_CONTROLLER);
        if by_controller {
            if let Some(spec) = updated.spec.as_mut() {
                spec.claim_ref = None;
            }
            if let Some(annotations) = updated.metadata.annotations.as_mut() {
                annotations.remove(ANN_BOUND_BY_CONTROLLER);
                if annotations.is_empty() {
                    updated.metadata.annotations = None;
                }
            }
        } else if let Some(r) = updated.spec.as_mut().and_then(|s| s.claim_ref.as_mut()) {
            r.uid = None;
        }
        let written =
            self.volumes_api.replace(name_of(volume), &PostParams::default(), &updated).await?;
        let written = self.store_volume(written);
        self.update_volume_phase(&written, "Available", "").await?;
        Ok(())
    }

    /// Carries out the volume's reclaim policy.
    async fn reclaim_volume(&self, volume: &Arc<PersistentVolume>) -> Result<(), SyncError> {
        match reclaim_policy(volume) {
            "Retain" => Ok(()),
            "Recycle" => {
                // The Recycle policy is deprecated; rkube has no recycler plugin.
                self.volume_phase_with_event(
                    volume,
                    "Failed",
                    "VolumeFailedRecycle",
                    "No recycler plugin found for the volume!",
                )
                .await
            }
            "Delete" => self.delete_volume(volume).await,
            _ => {
                self.volume_phase_with_event(
                    volume,
                    "Failed",
                    "VolumeUnknownReclaimPolicy",
                    "Volume has unrecognized PersistentVolumeReclaimPolicy",
                )
                .await
            }
        }
    }

    /// Whether the volume is still released (its claim gone, or bound elsewhere).
    fn is_released(&self, volume: &PersistentVolume) -> bool {
        let Some(r) = claim_ref_of(volume) else { return false };
        if r.uid.as_deref().unwrap_or("").is_empty() {
            return false;
        }
        let key = claim_key(r.namespace.as_deref().unwrap_or(""), r.name.as_deref().unwrap_or(""));
        match self.cached_claim(&key) {
            Some(claim) if claim.metadata.uid == r.uid => {
                let bound_to = volume_name_of(&claim);
                !bound_to.is_empty() && bound_to != name_of(volume)
            }
            _ => true,
        }
    }

    /// The Delete policy: the volume's deleter removes the storage, then the PV object goes;
    /// an external provisioner does both itself.
    async fn delete_volume(&self, volume: &Arc<PersistentVolume>) -> Result<(), SyncError> {
        // Another sync may have moved it on meanwhile.
        let Some(fresh) = self.volumes_api.get_opt(name_of(volume)).await? else { return Ok(()) };
        if !self.is_released(&fresh) {
            return Ok(());
        }
        let outcome = match deleter_of(&fresh) {
            Ok(Deleter::External) => return Ok(()),
            Ok(Deleter::HostPath(path)) => {
                tokio::task::spawn_blocking(move || delete_host_path(&path))
                    .await
                    .unwrap_or_else(|e| Err(DeleteError::Io(e.to_string())))
            }
            Err(e) => Err(e),
        };
        if let Err(e) = outcome {
            let message = e.to_string();
            self.volume_phase_with_event(volume, "Failed", "VolumeFailedDelete", &message).await?;
            return Err(e.into());
        }
        match self.volumes_api.delete(name_of(volume), &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(e) if api_errors::code(&e) == Some(404) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    fn claim(extra: serde_json::Value) -> PersistentVolumeClaim {
        let mut c = json!({
            "metadata": {"name": "data", "namespace": "app", "uid": "c1"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending"},
        });
        for (k, v) in extra.as_object().unwrap() {
            match k.as_str() {
                "annotations" => c["metadata"]["annotations"] = v.clone(),
                "phase" => c["status"]["phase"] = v.clone(),
                _ => c["spec"][k] = v.clone(),
            }
        }
        serde_json::from_value(c).unwrap()
    }

    /// A volume `pv1` (2Gi, ReadWriteOnce, Retain, Available) with `extra`'s annotations and
    /// spec fields.
    pub(crate) fn volume(extra: serde_json::Value) -> PersistentVolume {
        let mut v = json!({
            "metadata": {"name": "pv1"},
            "spec": {"capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain"},
            "status": {"phase": "Available"},
        });
        for (k, val) in extra.as_object().unwrap() {
            match k.as_str() {
                "annotations" => v["metadata"]["annotations"] = val.clone(),
                _ => v["spec"][k] = val.clone(),
            }
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_requested_volume_must_suit_the_claim() {
        let c = claim(json!({"storageClassName": ""}));
        assert_eq!(check_volume_satisfies_claim(&volume(json!({})), &c), Ok(()));
        let small = volume(json!({"capacity": {"storage": "512Mi"}}));
        assert_eq!(check_volume_satisfies_claim(&small, &c), Err(Mismatch::TooSmall));
        let fast = volume(json!({"storageClassName": "fast"}));
        assert_eq!(check_volume_satisfies_claim(&fast, &c), Err(Mismatch::Class));
        let rox = volume(json!({"accessModes": ["ReadOnlyMany"]}));
        assert_eq!(check_volume_satisfies_claim(&rox, &c), Err(Mismatch::AccessMode));
        let block = volume(json!({"volumeMode": "Block"}));
        assert_eq!(check_volume_satisfies_claim(&block, &c), Err(Mismatch::VolumeMode));
    }

    #[test]
    fn claim_status_follows_the_volume() {
        let c = claim(json!({}));
        let v = volume(json!({}));
        let bound = claim_status(&c, "Bound", Some(&v)).unwrap().unwrap();
        assert_eq!(bound.phase.as_deref(), Some("Bound"));
        assert_eq!(bound.access_modes, Some(vec!["ReadWriteOnce".to_string()]));
        assert_eq!(bound.capacity.unwrap()["storage"].0, "2Gi");
        // Nothing to write twice.
        let mut again = c.clone();
        again.status = Some(claim_status(&c, "Bound", Some(&v)).unwrap().unwrap());
        assert!(claim_status(&again, "Bound", Some(&v)).unwrap().is_none());
        // Lost: the volume's modes and capacity go.
        let lost = claim_status(&again, "Lost", None).unwrap().unwrap();
        assert!(lost.access_modes.is_none() && lost.capacity.is_none());
        let no_capacity = volume(json!({"capacity": null}));
        assert!(matches!(
            claim_status(&c, "Bound", Some(&no_capacity)),
            Err(SyncError::NoCapacity(_))
        ));
    }

    #[test]
    fn unmatched_claims_wait_provision_or_say_why() {
        assert_eq!(
            unmatched(&claim(json!({"storageClassName": "local-path"})), true),
            Unmatched::WaitForConsumer
        );
        let selected = claim(json!({"storageClassName": "local-path",
                                    "annotations": {ANN_SELECTED_NODE: "n1"}}));
        assert_eq!(unmatched(&selected, true), Unmatched::Provision);
        assert_eq!(
            unmatched(&claim(json!({"storageClassName": "fast"})), false),
            Unmatched::Provision
        );
        assert_eq!(unmatched(&claim(json!({"storageClassName": ""})), false), Unmatched::NoClass);
        assert!(external_provisioning_message("rancher.io/local-path").starts_with(
            "Waiting for a volume to be created either by the external provisioner 'rancher.io/local-path' or manually"
        ));
    }

    #[test]
    fn stale_versions_do_not_replace_newer_ones() {
        let cache = RwLock::new(HashMap::new());
        let at = |rv: &str| {
            let mut v = volume(json!({}));
            v.metadata.resource_version = Some(rv.into());
            Arc::new(v)
        };
        assert!(store_update(&cache, "pv1", at("10")));
        assert!(!store_update(&cache, "pv1", at("9")));
        assert!(store_update(&cache, "pv1", at("10")), "the same version passes (resync)");
        assert!(store_update(&cache, "pv1", at("11")));
    }
}
