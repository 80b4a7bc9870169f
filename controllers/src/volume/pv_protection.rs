//! The `persistentvolume-protection-controller`: a volume being deleted keeps its
//! `kubernetes.io/pv-protection` finalizer while it is `Bound` (the binder writes the phase),
//! and loses it once it is not; a volume without the finalizer gets it.
//!
//! Start at [`run`].

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::PersistentVolume;
use kube::api::{Api, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_apis::persistent_volumes::PV_PROTECTION_FINALIZER;
use rkube_runtime::informer::{self, Change};
use rkube_runtime::store::Store;
use rkube_runtime::workqueue::WorkQueue;
use tokio::sync::mpsc;

use crate::api_errors;

/// Its name in `--controllers`.
pub const NAME: &str = "persistentvolume-protection-controller";

const MAX_BACKOFF: Duration = Duration::from_secs(300);
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

fn has_finalizer(volume: &PersistentVolume) -> bool {
    volume.metadata.finalizers.iter().flatten().any(|f| f == PV_PROTECTION_FINALIZER)
}

/// What the controller does with a volume.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    AddFinalizer,
    RemoveFinalizer,
    Nothing,
}

/// See [`Action`]: a volume in use is one the binder has `Bound`.
pub fn action(volume: &PersistentVolume) -> Action {
    let deleting = volume.metadata.deletion_timestamp.is_some();
    let bound = volume.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
    match (deleting, has_finalizer(volume)) {
        (true, true) if !bound => Action::RemoveFinalizer,
        (false, false) => Action::AddFinalizer,
        _ => Action::Nothing,
    }
}

/// Runs the controller until the task is aborted.
pub async fn run(client: Client) {
    let (tx, mut changes) = mpsc::unbounded_channel();
    let (volumes, _watch) = informer::start(
        Api::<PersistentVolume>::all(client.clone()),
        watcher::Config::default(),
        vec![tx],
    );
    if volumes.wait_until_ready().await.is_err() {
        return;
    }
    let queue = Arc::new(WorkQueue::new(MAX_BACKOFF));
    let worker = {
        let (queue, volumes, api) = (queue.clone(), volumes.clone(), Api::all(client));
        tokio::spawn(async move {
            let sync = |name: String| {
                let (volumes, api) = (volumes.clone(), api.clone());
                async move { process(&api, &volumes, &name).await.map(|()| None) }
            };
            let routine = |e: &kube::Error| api_errors::code(e) == Some(409);
            queue.work(NAME, SYNC_TIMEOUT, sync, routine).await
        })
    };
    tracing::info!("{NAME} started");
    while let Some(change) = changes.recv().await {
        if let Change::Object { name, .. } = change {
            if volumes.get(&ObjectRef::new(&name)).is_some_and(|v| action(&v) != Action::Nothing) {
                queue.add(name);
            }
        }
    }
    queue.shut_down();
    worker.abort();
}

async fn process(
    api: &Api<PersistentVolume>,
    volumes: &Store<PersistentVolume>,
    name: &str,
) -> Result<(), kube::Error> {
    let Some(volume) = volumes.get(&ObjectRef::new(name)) else { return Ok(()) };
    let mut updated = volume.as_ref().clone();
    match action(&volume) {
        Action::Nothing => return Ok(()),
        Action::AddFinalizer => {
            updated
                .metadata
                .finalizers
                .get_or_insert_with(Vec::new)
                .push(PV_PROTECTION_FINALIZER.into());
        }
        Action::RemoveFinalizer => {
            if let Some(finalizers) = updated.metadata.finalizers.as_mut() {
                finalizers.retain(|f| f != PV_PROTECTION_FINALIZER);
            }
            tracing::info!(
                volume = name,
                "removed the protection finalizer: the volume is not bound"
            );
        }
    }
    api.replace(name, &PostParams::default(), &updated).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn volume(deleting: bool, finalizer: bool, phase: &str) -> PersistentVolume {
        let finalizers: Vec<&str> = if finalizer { vec![PV_PROTECTION_FINALIZER] } else { vec![] };
        serde_json::from_value(json!({
            "metadata": {"name": "pv", "finalizers": finalizers,
                         "deletionTimestamp": deleting.then_some("2025-01-01T00:00:00Z")},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    #[test]
    fn bound_volumes_keep_the_finalizer() {
        assert_eq!(action(&volume(true, true, "Bound")), Action::Nothing);
        assert_eq!(action(&volume(true, true, "Released")), Action::RemoveFinalizer);
        assert_eq!(action(&volume(true, true, "Available")), Action::RemoveFinalizer);
        assert_eq!(action(&volume(false, false, "Available")), Action::AddFinalizer);
        assert_eq!(action(&volume(false, true, "Bound")), Action::Nothing);
        assert_eq!(action(&volume(true, false, "Bound")), Action::Nothing);
    }
}
