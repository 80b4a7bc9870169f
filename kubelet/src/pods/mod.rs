//! The pods of this node: an informer ([`rkube_runtime::informer`]) on `spec.nodeName=<node>`,
//! whose deltas carry each pod as it is and each deleted one, one worker task per pod that
//! syncs it ([`sync`]) whenever the pod object changes, one of its containers starts or
//! stops ([`pleg`]), one of its probes changes its mind ([`probes`]), or its resync period
//! passes;
//! and the clean-up of containers whose pod is gone.
//! The pods seen are kept in a [`PodCache`] for the kubelet API ([`crate::server`]).

pub mod admission;
pub mod dns;
pub mod handlers;
pub mod hooks;
pub mod pleg;
pub mod probes;
pub mod spec;
pub mod status;
pub mod sync;
pub mod volumes;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::watcher;
use rkube_runtime::informer::{Delta, Informer};
use rkube_runtime::store::Indexers;
use tokio::sync::{mpsc, watch, Notify};

use crate::static_pods;
use sync::{Next, PodState, Syncer};

/// The pods bound to this node as the watch last saw them, by uid: the kubelet's pod
/// manager, which its API answers from (`/pods`, and which pod a log or exec request means).
#[derive(Clone, Default)]
pub struct PodCache(Arc<RwLock<HashMap<String, Arc<Pod>>>>);

impl PodCache {
    /// The pod `namespace/name`; while an old pod of that name is being deleted and a new one
    /// exists, the new one.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        let pods = self.0.read().unwrap_or_else(|e| e.into_inner());
        pods.values()
            .filter(|p| {
                p.metadata.namespace.as_deref() == Some(namespace)
                    && p.metadata.name.as_deref() == Some(name)
            })
            .min_by_key(|p| p.metadata.deletion_timestamp.is_some())
            .cloned()
    }

    /// Every pod, ordered by namespace and name.
    pub fn list(&self) -> Vec<Arc<Pod>> {
        let pods = self.0.read().unwrap_or_else(|e| e.into_inner());
        let mut all: Vec<Arc<Pod>> = pods.values().cloned().collect();
        all.sort_by(|a, b| {
            (&a.metadata.namespace, &a.metadata.name)
                .cmp(&(&b.metadata.namespace, &b.metadata.name))
        });
        all
    }

    pub fn insert(&self, pod: Arc<Pod>) {
        self.0.write().unwrap_or_else(|e| e.into_inner()).insert(uid(&pod), pod);
    }

    pub fn remove(&self, uid: &str) {
        self.0.write().unwrap_or_else(|e| e.into_inner()).remove(uid);
    }

    fn retain(&self, live: &HashSet<String>) {
        self.0.write().unwrap_or_else(|e| e.into_inner()).retain(|uid, _| live.contains(uid));
    }
}

/// A pod's worker: the latest pod object (None once deleted from the API) and a poke for
/// runtime events.
struct Worker {
    pod: watch::Sender<Option<Arc<Pod>>>,
    /// Rejected at admission ([`admission`]): never run, holds nothing.
    rejected: bool,
    poke: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

fn uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

async fn work(
    syncer: Arc<Syncer>,
    mut pod: watch::Receiver<Option<Arc<Pod>>>,
    poke: Arc<Notify>,
    uid: String,
    rejected: bool,
) {
    let mut state = PodState::new(poke.clone(), pod.clone());
    let mut last: Option<Arc<Pod>> = None;
    loop {
        let current = pod.borrow_and_update().clone();
        let next = match current {
            // A rejected pod is only reported Failed; once deleted, synced as any pod.
            Some(p) if rejected && p.metadata.deletion_timestamp.is_none() => {
                syncer.reject(&p, &mut state).await;
                last = Some(p);
                Next::After(Duration::from_secs(30))
            }
            Some(p) => {
                let next = syncer.sync(&p, &mut state).await;
                last = Some(p);
                next
            }
            None => match last.as_deref().filter(|p| static_pods::is_static(p)) {
                // A static pod whose file went: stopped as a deleted pod is, with its grace
                // period and preStop hooks.
                Some(gone) => {
                    syncer.kill(Some(gone), &uid, sync::termination_grace(gone)).await;
                    Next::Done
                }
                // Deleted from the API without us (force delete): stop what runs.
                None => {
                    syncer.kill(None, &uid, Duration::from_secs(2)).await;
                    Next::Done
                }
            },
        };
        let delay = match next {
            Next::Done => return,
            Next::After(delay) => delay,
        };
        tokio::select! {
            changed = pod.changed() => if changed.is_err() { return },
            _ = poke.notified() => {}
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// Hands a pod to its worker, starting one when it has none.
fn dispatch(workers: &mut HashMap<String, Worker>, syncer: &Arc<Syncer>, pod: Arc<Pod>) {
    let uid = uid(&pod);
    match workers.get(&uid).filter(|w| !w.task.is_finished()) {
        Some(worker) => {
            // The worker sees the newest object, but is woken only when more than its status
            // changed: as upstream's pod config, the kubelet's own status updates coming back
            // through the watch do not sync the pod again.
            worker.pod.send_if_modified(|current| {
                let wake = current.as_deref().is_none_or(|c| !same_but_status(c, &pod));
                *current = Some(pod);
                wake
            });
        }
        None => {
            // Admission, for a pod not taken up yet: its host ports against the pods admitted.
            let rejected = !admission::started(&pod)
                && !admission::finished(&pod)
                && pod.metadata.deletion_timestamp.is_none()
                && {
                    let admitted: Vec<Arc<Pod>> = workers
                        .values()
                        .filter(|w| !w.rejected && !w.task.is_finished())
                        .filter_map(|w| w.pod.borrow().clone())
                        .collect();
                    admission::host_port_conflict(&pod, admitted.iter().map(|p| p.as_ref()))
                };
            let (tx, rx) = watch::channel(Some(pod));
            let poke = Arc::new(Notify::new());
            let task = tokio::spawn(work(syncer.clone(), rx, poke.clone(), uid.clone(), rejected));
            workers.insert(uid, Worker { pod: tx, rejected, poke, task });
        }
    }
}

/// Whether two versions of a pod differ in their status (and resourceVersion and managed
/// fields) only.
fn same_but_status(a: &Pod, b: &Pod) -> bool {
    let meta = |p: &Pod| {
        let mut m = p.metadata.clone();
        m.resource_version = None;
        m.managed_fields = None;
        m
    };
    a.spec == b.spec && meta(a) == meta(b)
}

/// Where pods come from besides the API: the static pods of `--pod-manifest-path`
/// ([`crate::static_pods`]), and a poke for their mirror pods' keeper when a mirror pod
/// changes in the API.
pub struct StaticSource {
    pub pods: watch::Receiver<Vec<Arc<Pod>>>,
    pub mirror_changed: Arc<Notify>,
}

/// Watches this node's pods and keeps one worker per pod (and `cache` up to date) until the
/// task is aborted. Pods come from the API and, with `statics`, from manifest files; the
/// API's mirror pods are not run (their static pods are).
pub async fn run(syncer: Arc<Syncer>, cache: PodCache, mut statics: Option<StaticSource>) {
    let node = syncer.config.node_name.clone();
    let config = watcher::Config::default().fields(&format!("spec.nodeName={node}"));
    let (delta_tx, mut deltas) = mpsc::unbounded_channel();
    // Looked up by uid in `cache` (the pod manager, static pods too), not in the informer's
    // cache: it needs no index.
    let (pods, _watch) = Informer::new(Api::<Pod>::all(syncer.client.clone()))
        .config(config)
        .indexers(Indexers::none())
        .deltas(delta_tx)
        .start();
    let mut runtime_events = pleg::watch(syncer.runtime.clone(), node.clone());
    let mut workers: HashMap<String, Worker> = HashMap::new();
    // The uids of the static pods now.
    let mut static_uids: HashSet<String> = HashSet::new();
    // The static pods read at start count before the API's list: their containers are not
    // orphans.
    if let Some(source) = statics.as_mut() {
        let now = source.pods.borrow_and_update().clone();
        apply_statics(now, &mut static_uids, &mut workers, &syncer, &cache);
    }
    loop {
        let statics_changed = async {
            match statics.as_mut() {
                Some(source) => source.pods.changed().await.is_ok(),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            delta = deltas.recv() => match delta {
                Some(Delta::Upserted { new: pod, .. }) if static_pods::is_mirror(&pod) => {
                    if let Some(source) = &statics { source.mirror_changed.notify_one(); }
                }
                Some(Delta::Upserted { new: pod, .. }) => {
                    cache.insert(pod.clone());
                    dispatch(&mut workers, &syncer, pod);
                }
                Some(Delta::Deleted(pod)) if static_pods::is_mirror(&pod) => {
                    if let Some(source) = &statics { source.mirror_changed.notify_one(); }
                }
                // Deleted, or missing from a relist (deleted while the watch was down).
                Some(Delta::Deleted(pod)) => {
                    cache.remove(&uid(&pod));
                    if let Some(worker) = workers.get(&uid(&pod)) {
                        worker.pod.send_replace(None);
                    }
                }
                Some(Delta::Synced) => {
                    // A (re)list is in: what runs for no pod it lists (nor any static pod)
                    // belongs to pods deleted while the kubelet was down.
                    let mut live: HashSet<String> = pods
                        .state_filter(|p| !static_pods::is_mirror(p))
                        .iter()
                        .map(|p| uid(p))
                        .collect();
                    live.extend(static_uids.iter().cloned());
                    cache.retain(&live);
                    remove_orphans(&syncer, &live).await;
                    for (uid, worker) in &workers {
                        if !live.contains(uid) { worker.pod.send_replace(None); }
                    }
                }
                None => return,
            },
            true = statics_changed => {
                if let Some(source) = statics.as_mut() {
                    let now = source.pods.borrow_and_update().clone();
                    apply_statics(now, &mut static_uids, &mut workers, &syncer, &cache);
                }
            }
            Some(uid) = runtime_events.recv() => {
                if let Some(worker) = workers.get(&uid) {
                    worker.poke.notify_one();
                }
            }
        }
        workers.retain(|_, w| !w.task.is_finished());
    }
}

/// Starts workers for new static pods and stops those of static pods that are gone.
fn apply_statics(
    now: Vec<Arc<Pod>>,
    static_uids: &mut HashSet<String>,
    workers: &mut HashMap<String, Worker>,
    syncer: &Arc<Syncer>,
    cache: &PodCache,
) {
    let uids: HashSet<String> = now.iter().map(|p| uid(p)).collect();
    for gone in static_uids.difference(&uids) {
        cache.remove(gone);
        if let Some(worker) = workers.get(gone) {
            worker.pod.send_replace(None);
        }
    }
    for pod in now {
        // A static pod's object never changes under the same uid.
        if !static_uids.contains(&uid(&pod)) {
            cache.insert(pod.clone());
            dispatch(workers, syncer, pod);
        }
    }
    *static_uids = uids;
}

/// Containers of pods this node no longer has (deleted while the kubelet was down).
async fn remove_orphans(syncer: &Syncer, live: &HashSet<String>) {
    let Ok(records) = syncer.runtime.list(&syncer.config.node_name, None).await else { return };
    let orphans: std::collections::BTreeSet<String> = records
        .iter()
        .map(|r| r.label(crate::runtime::labels::POD_UID).to_string())
        .filter(|uid| !uid.is_empty() && !live.contains(uid))
        .collect();
    for uid in orphans {
        tracing::info!(uid, "removing the containers of a pod that is gone");
        syncer.kill(None, &uid, Duration::from_secs(2)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn only_changes_beyond_the_status_wake_a_pods_worker() {
        let base = pod(serde_json::json!({
            "metadata": {"name": "p", "uid": "u", "resourceVersion": "1"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }));
        let status_only = pod(serde_json::json!({
            "metadata": {"name": "p", "uid": "u", "resourceVersion": "2"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running"},
        }));
        assert!(same_but_status(&base, &status_only));
        let deleted = pod(serde_json::json!({
            "metadata": {"name": "p", "uid": "u", "resourceVersion": "3",
                         "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }));
        assert!(!same_but_status(&base, &deleted));
        let new_image = pod(serde_json::json!({
            "metadata": {"name": "p", "uid": "u", "resourceVersion": "4"},
            "spec": {"containers": [{"name": "c", "image": "j"}]},
        }));
        assert!(!same_but_status(&base, &new_image));
    }
}
