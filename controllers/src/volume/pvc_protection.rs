//! The `persistentvolumeclaim-protection-controller`: a claim being deleted stays (its
//! `kubernetes.io/pvc-protection` finalizer stays) for as long as a pod scheduled to a node
//! names it in its volumes, whatever that pod's phase; it goes once the last such pod is gone.
//! A claim without the finalizer gets it (claims made before the StorageObjectInUseProtection
//! admission plugin ran).
//!
//! Start at [`run`]. Every claim that needs the finalizer or is a deletion candidate is
//! queued; a pod change queues the deletion candidates of its namespace. Before the finalizer
//! is removed, the pods of the namespace are listed from the API server: a pod the cache has
//! not seen yet must not lose its volume.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_apis::persistent_volumes::PVC_PROTECTION_FINALIZER;
use rkube_runtime::informer::{self, Change};
use rkube_runtime::store::Store;
use rkube_runtime::workqueue::WorkQueue;
use tokio::sync::mpsc;

use super::{claim_key, POD_CLAIMS};
use crate::api_errors;

/// Its name in `--controllers`.
pub const NAME: &str = "persistentvolumeclaim-protection-controller";

const MAX_BACKOFF: Duration = Duration::from_secs(300);
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

fn has_finalizer(claim: &PersistentVolumeClaim) -> bool {
    claim.metadata.finalizers.iter().flatten().any(|f| f == PVC_PROTECTION_FINALIZER)
}

/// Being deleted, and held by the finalizer.
pub fn deletion_candidate(claim: &PersistentVolumeClaim) -> bool {
    claim.metadata.deletion_timestamp.is_some() && has_finalizer(claim)
}

/// Not being deleted, and without the finalizer.
pub fn needs_finalizer(claim: &PersistentVolumeClaim) -> bool {
    claim.metadata.deletion_timestamp.is_none() && !has_finalizer(claim)
}

/// Whether `pod` keeps `claim` (upstream's `podUsesPVC`): it is scheduled and a volume names
/// the claim. The kubelet will not start a pod whose claim is being deleted, so unscheduled
/// pods do not count.
pub fn pod_uses_claim(pod: &Pod, claim: &PersistentVolumeClaim) -> bool {
    let scheduled =
        pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty());
    let name = claim.metadata.name.as_deref().unwrap_or("");
    scheduled
        && pod.metadata.namespace == claim.metadata.namespace
        && pod
            .spec
            .as_ref()
            .and_then(|s| s.volumes.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .any(|c| c.claim_name == name)
}

struct Controller {
    client: Client,
    claims: Store<PersistentVolumeClaim>,
    pods: Store<Pod>,
    queue: WorkQueue<String>,
}

/// Runs the controller until the task is aborted; `pods` is the shared pod informer (with
/// the [`POD_CLAIMS`] index) and `pod_rx` its changes.
pub async fn run(client: Client, pods: Store<Pod>, mut pod_rx: mpsc::UnboundedReceiver<Change>) {
    let (claim_tx, mut claim_rx) = mpsc::unbounded_channel();
    let (claims, _watch) = informer::start(
        Api::<PersistentVolumeClaim>::all(client.clone()),
        watcher::Config::default(),
        vec![claim_tx],
    );
    if claims.wait_until_ready().await.is_err() {
        return;
    }
    let ctl = Arc::new(Controller { client, claims, pods, queue: WorkQueue::new(MAX_BACKOFF) });
    let worker = {
        let ctl = ctl.clone();
        tokio::spawn(async move {
            let sync = |key: String| {
                let ctl = ctl.clone();
                async move { ctl.process(&key).await.map(|()| None) }
            };
            let routine = |e: &kube::Error| api_errors::code(e) == Some(409);
            ctl.queue.work(NAME, SYNC_TIMEOUT, sync, routine).await
        })
    };
    tracing::info!("{NAME} started");
    loop {
        tokio::select! {
            change = claim_rx.recv() => match change {
                Some(Change::Object { namespace, name }) => {
                    let namespace = namespace.unwrap_or_default();
                    let found = ctl.claims.get(&ObjectRef::new(&name).within(&namespace));
                    if found.is_some_and(|c| needs_finalizer(&c) || deletion_candidate(&c)) {
                        ctl.queue.add(claim_key(&namespace, &name));
                    }
                }
                Some(Change::Synced) => {}
                None => break,
            },
            change = pod_rx.recv() => match change {
                // A pod came, changed or went: the claims of its namespace waiting to go
                // may go now.
                Some(Change::Object { namespace: Some(namespace), .. }) => {
                    for claim in ctl.claims.in_namespace(&namespace) {
                        if deletion_candidate(&claim) {
                            ctl.queue.add(claim_key(&namespace, claim.metadata.name.as_deref().unwrap_or("")));
                        }
                    }
                }
                Some(_) => {}
                None => break,
            },
        }
    }
    ctl.queue.shut_down();
    worker.abort();
}

impl Controller {
    async fn process(&self, key: &str) -> Result<(), kube::Error> {
        let Some((namespace, name)) = key.split_once('/') else { return Ok(()) };
        let Some(claim) = self.claims.get(&ObjectRef::new(name).within(namespace)) else {
            return Ok(());
        };
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), namespace);
        if deletion_candidate(&claim) {
            if self.in_use(&claim).await? {
                tracing::debug!(claim = key, "keeping the claim: a pod uses it");
                return Ok(());
            }
            let mut updated = claim.as_ref().clone();
            if let Some(finalizers) = updated.metadata.finalizers.as_mut() {
                finalizers.retain(|f| f != PVC_PROTECTION_FINALIZER);
            }
            api.replace(name, &PostParams::default(), &updated).await?;
            tracing::info!(claim = key, "removed the protection finalizer: no pod uses the claim");
            return Ok(());
        }
        if needs_finalizer(&claim) {
            let mut updated = claim.as_ref().clone();
            updated
                .metadata
                .finalizers
                .get_or_insert_with(Vec::new)
                .push(PVC_PROTECTION_FINALIZER.into());
            api.replace(name, &PostParams::default(), &updated).await?;
        }
        Ok(())
    }

    /// Whether a pod uses the claim: the cache first, then (to be sure) a live list.
    async fn in_use(&self, claim: &PersistentVolumeClaim) -> Result<bool, kube::Error> {
        let namespace = claim.metadata.namespace.as_deref().unwrap_or("");
        let key = claim_key(namespace, claim.metadata.name.as_deref().unwrap_or(""));
        let cached = self.pods.by_index(POD_CLAIMS, &key).unwrap_or_default();
        if cached.iter().any(|p| pod_uses_claim(p, claim)) {
            return Ok(true);
        }
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let live = pods.list(&ListParams::default()).await?;
        Ok(live.items.iter().any(|p| pod_uses_claim(p, claim)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(deleting: bool, finalizers: &[&str]) -> PersistentVolumeClaim {
        serde_json::from_value(json!({
            "metadata": {"name": "data", "namespace": "app", "finalizers": finalizers,
                         "deletionTimestamp": deleting.then_some("2025-01-01T00:00:00Z")},
            "spec": {},
        }))
        .unwrap()
    }

    fn pod(node: Option<&str>, claim: &str, phase: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "app"},
            "spec": {"nodeName": node, "containers": [],
                     "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    #[test]
    fn candidates_and_claims_missing_the_finalizer() {
        assert!(deletion_candidate(&claim(true, &[PVC_PROTECTION_FINALIZER])));
        assert!(!deletion_candidate(&claim(true, &["other"])));
        assert!(needs_finalizer(&claim(false, &[])));
        assert!(!needs_finalizer(&claim(false, &[PVC_PROTECTION_FINALIZER])));
        assert!(!needs_finalizer(&claim(true, &[])));
    }

    #[test]
    fn only_scheduled_pods_keep_a_claim_whatever_their_phase() {
        let c = claim(true, &[PVC_PROTECTION_FINALIZER]);
        assert!(pod_uses_claim(&pod(Some("n1"), "data", "Running"), &c));
        assert!(pod_uses_claim(&pod(Some("n1"), "data", "Succeeded"), &c));
        assert!(!pod_uses_claim(&pod(None, "data", "Pending"), &c));
        assert!(!pod_uses_claim(&pod(Some("n1"), "other", "Running"), &c));
    }
}
