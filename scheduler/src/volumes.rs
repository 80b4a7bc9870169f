//! The scheduler's side of volume binding (upstream's volume binder): a cache of claims,
//! volumes and classes kept from their informers' deltas, in which the volumes and claims a
//! pod was promised are "assumed" (held at their promised state) until the informer brings a
//! newer version, so the next pod is not promised the same volume; and the binding step run
//! once a pod's node is chosen, before the pod itself is bound ([`bind_pod_volumes`], upstream's
//! PreBind): each static match's volume gets its `claimRef`, each claim to provision gets
//! `volume.kubernetes.io/selected-node`, and the step waits until the PV binder has bound
//! every claim (at most `bindTimeoutSeconds`, 600 s), failing when a provisioner gave up
//! (it removes the annotation) or a binding was undone.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, PostParams};
use kube::Client;
use rkube_apis::persistent_volumes::{
    bind_volume_to_claim, node_affinity_matches, volume_class, ANN_SELECTED_NODE,
};
use rkube_runtime::store::Delta;

use crate::plugins::volume_binding::{fully_bound, PodVolumes, VolumeLookup};

/// How long the binding step waits for the binder (upstream's default `bindTimeoutSeconds`).
pub const BIND_TIMEOUT: Duration = Duration::from_secs(600);
/// How often it looks.
const POLL: Duration = Duration::from_secs(1);

fn version(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> u64 {
    meta.resource_version.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Objects of one kind by key, with assumed versions over them.
struct Assumable<K> {
    objects: HashMap<String, Arc<K>>,
    assumed: HashMap<String, Arc<K>>,
}

impl<K> Default for Assumable<K> {
    fn default() -> Self {
        Assumable { objects: HashMap::new(), assumed: HashMap::new() }
    }
}

impl<K: kube::Resource> Assumable<K> {
    fn get(&self, key: &str) -> Option<Arc<K>> {
        self.assumed.get(key).or_else(|| self.objects.get(key)).cloned()
    }

    /// The informer's version: it replaces an assumption made on an older one.
    fn upsert(&mut self, key: String, object: Arc<K>) {
        if self.assumed.get(&key).is_some_and(|a| version(object.meta()) > version(a.meta())) {
            self.assumed.remove(&key);
        }
        self.objects.insert(key, object);
    }

    fn delete(&mut self, key: &str) {
        self.objects.remove(key);
        self.assumed.remove(key);
    }
}

/// Claims, volumes and classes as the scheduler sees them.
#[derive(Default)]
pub struct VolumeCache {
    claims: Assumable<PersistentVolumeClaim>,
    volumes: Assumable<PersistentVolume>,
    classes: HashMap<String, Arc<StorageClass>>,
}

fn claim_key_of(claim: &PersistentVolumeClaim) -> String {
    format!(
        "{}/{}",
        claim.metadata.namespace.as_deref().unwrap_or(""),
        claim.metadata.name.as_deref().unwrap_or("")
    )
}

fn name_of<K: kube::Resource>(object: &K) -> String {
    object.meta().name.clone().unwrap_or_default()
}

impl VolumeCache {
    /// A claim delta; true when it may let a waiting pod fit.
    pub fn on_claim(&mut self, delta: &Delta<PersistentVolumeClaim>) -> bool {
        match delta {
            Delta::Upserted { new, .. } => self.claims.upsert(claim_key_of(new), new.clone()),
            Delta::Deleted(gone) => self.claims.delete(&claim_key_of(gone)),
            Delta::Synced => return false,
        }
        true
    }

    pub fn on_volume(&mut self, delta: &Delta<PersistentVolume>) -> bool {
        match delta {
            Delta::Upserted { new, .. } => self.volumes.upsert(name_of(new.as_ref()), new.clone()),
            Delta::Deleted(gone) => self.volumes.delete(&name_of(gone.as_ref())),
            Delta::Synced => return false,
        }
        true
    }

    pub fn on_class(&mut self, delta: &Delta<StorageClass>) -> bool {
        match delta {
            Delta::Upserted { new, .. } => {
                self.classes.insert(name_of(new.as_ref()), new.clone());
            }
            Delta::Deleted(gone) => {
                self.classes.remove(&name_of(gone.as_ref()));
            }
            Delta::Synced => return false,
        }
        true
    }

    /// Holds the promises of `plan` on `node` until the informers catch up: each volume
    /// bound to its claim, each claim to provision with the node. Returns the plan with the
    /// objects to write (the assumed ones).
    pub fn assume(&mut self, plan: &PodVolumes, node: &str) -> PodVolumes {
        let mut assumed = PodVolumes::default();
        for (claim, volume) in &plan.static_bindings {
            let bound =
                bind_volume_to_claim(volume, claim).map(Arc::new).unwrap_or_else(|| volume.clone());
            self.volumes.assumed.insert(name_of(volume.as_ref()), bound.clone());
            assumed.static_bindings.push((claim.clone(), bound));
        }
        for claim in &plan.dynamic_provisions {
            let mut promised = claim.as_ref().clone();
            promised
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(ANN_SELECTED_NODE.into(), node.to_string());
            let promised = Arc::new(promised);
            self.claims.assumed.insert(claim_key_of(claim), promised.clone());
            assumed.dynamic_provisions.push(promised);
        }
        assumed
    }

    /// Drops the promises of `plan` (its binding failed).
    pub fn forget(&mut self, plan: &PodVolumes) {
        for (_, volume) in &plan.static_bindings {
            self.volumes.assumed.remove(&name_of(volume.as_ref()));
        }
        for claim in &plan.dynamic_provisions {
            self.claims.assumed.remove(&claim_key_of(claim));
        }
    }
}

impl VolumeLookup for VolumeCache {
    fn claim(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.claims.get(&format!("{namespace}/{name}"))
    }

    fn volume(&self, name: &str) -> Option<Arc<PersistentVolume>> {
        self.volumes.get(name)
    }

    fn class(&self, name: &str) -> Option<Arc<StorageClass>> {
        self.classes.get(name).cloned()
    }

    fn volumes_of_class(&self, class: &str) -> Vec<Arc<PersistentVolume>> {
        let mut list: Vec<Arc<PersistentVolume>> = self
            .volumes
            .objects
            .keys()
            .filter_map(|name| self.volumes.get(name))
            .filter(|v| volume_class(v) == class)
            .collect();
        list.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        list
    }
}

/// Why binding a pod's volumes failed (the pod goes back to the queue).
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("pod does not exist any more")]
    PodGone,
    #[error("ClaimRef got reset for pv {0:?}")]
    ClaimRefReset(String),
    #[error("provisioning failed for PVC {0:?}")]
    ProvisioningFailed(String),
    #[error("selectedNode annotation reset for PVC {0:?}")]
    SelectedNodeReset(String),
    #[error("pv {volume:?} node affinity doesn't match node {node:?}")]
    NodeAffinity { volume: String, node: String },
    #[error("failed to get node {0:?}")]
    NoNode(String),
    #[error("context deadline exceeded")]
    Timeout,
}

impl BindError {
    /// The message of the scheduling failure, as upstream's PreBind step words it.
    pub fn message(&self) -> String {
        match self {
            BindError::Api(e) => format!("running PreBind plugin \"VolumeBinding\": {e}"),
            other => format!("running PreBind plugin \"VolumeBinding\": binding volumes: {other}"),
        }
    }
}

/// Writes the promises of `plan` and waits until every claim of it is bound (upstream's
/// `BindPodVolumes`), at most `timeout`.
pub async fn bind_pod_volumes(
    client: &Client,
    pod: &Pod,
    node: &str,
    plan: &PodVolumes,
    timeout: Duration,
) -> Result<(), BindError> {
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
    for (_, volume) in &plan.static_bindings {
        volumes.replace(&name_of(volume.as_ref()), &PostParams::default(), volume).await?;
    }
    for claim in &plan.dynamic_provisions {
        claims.replace(&name_of(claim.as_ref()), &PostParams::default(), claim).await?;
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let nodes: Api<Node> = Api::all(client.clone());
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check_bindings(&pods, &nodes, &volumes, &claims, pod, node, plan).await? {
            return Ok(());
        }
        if tokio::time::Instant::now() + POLL > deadline {
            return Err(BindError::Timeout);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether every claim of `plan` is bound, or why the binding cannot succeed.
async fn check_bindings(
    pods: &Api<Pod>,
    nodes: &Api<Node>,
    volumes: &Api<PersistentVolume>,
    claims: &Api<PersistentVolumeClaim>,
    pod: &Pod,
    node_name: &str,
    plan: &PodVolumes,
) -> Result<bool, BindError> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or("");
    if pods.get_opt(pod_name).await?.is_none_or(|p| p.metadata.uid != pod.metadata.uid) {
        return Err(BindError::PodGone);
    }
    let node =
        nodes.get_opt(node_name).await?.ok_or_else(|| BindError::NoNode(node_name.into()))?;
    let labels = node.metadata.labels.unwrap_or_default();
    let affinity = |volume: &PersistentVolume| {
        if node_affinity_matches(volume, &labels) {
            Ok(())
        } else {
            Err(BindError::NodeAffinity { volume: name_of(volume), node: node_name.into() })
        }
    };
    for (claim, promised) in &plan.static_bindings {
        let name = name_of(promised.as_ref());
        let Some(volume) = volumes.get_opt(&name).await? else { return Ok(false) };
        affinity(&volume)?;
        let reset = volume
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.as_ref())
            .is_none_or(|r| r.uid.as_deref().unwrap_or("").is_empty());
        if reset && version(&volume.metadata) > version(&promised.metadata) {
            return Err(BindError::ClaimRefReset(name));
        }
        let Some(current) = claims.get_opt(&name_of(claim.as_ref())).await? else {
            return Ok(false);
        };
        if !fully_bound(&current) {
            return Ok(false);
        }
    }
    for promised in &plan.dynamic_provisions {
        let name = name_of(promised.as_ref());
        let Some(claim) = claims.get_opt(&name).await? else { return Ok(false) };
        let selected = claim.metadata.annotations.as_ref().and_then(|a| a.get(ANN_SELECTED_NODE));
        match selected {
            None if claim.metadata.annotations.is_none() => {
                return Err(BindError::SelectedNodeReset(name))
            }
            Some(node) if node == node_name => {}
            _ => return Err(BindError::ProvisioningFailed(name)),
        }
        let volume_name =
            claim.spec.as_ref().and_then(|s| s.volume_name.clone()).unwrap_or_default();
        if !volume_name.is_empty() {
            let Some(volume) = volumes.get_opt(&volume_name).await? else { return Ok(false) };
            affinity(&volume)?;
        }
        if !fully_bound(&claim) {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::volume_binding::tests::{claim, volume_on};

    fn at(volume: &Arc<PersistentVolume>, rv: &str) -> Arc<PersistentVolume> {
        let mut v = volume.as_ref().clone();
        v.metadata.resource_version = Some(rv.into());
        Arc::new(v)
    }

    #[test]
    fn promises_hold_until_the_informer_catches_up() {
        let mut cache = VolumeCache::default();
        let pv = at(&volume_on("pv1", "local", None), "5");
        cache.on_volume(&Delta::Upserted { old: None, new: pv.clone() });
        let data = claim("data", "local", serde_json::json!({}));
        let plan = PodVolumes {
            static_bindings: vec![(data.clone(), pv.clone())],
            dynamic_provisions: vec![],
        };
        let assumed = cache.assume(&plan, "n1");
        let held = cache.volume("pv1").unwrap();
        assert_eq!(
            held.spec.as_ref().unwrap().claim_ref.as_ref().unwrap().name.as_deref(),
            Some("data")
        );
        assert_eq!(cache.volumes_of_class("local").len(), 1);
        // An echo of the old version changes nothing; a newer one replaces the promise.
        cache.on_volume(&Delta::Upserted { old: None, new: pv.clone() });
        assert!(cache.volume("pv1").unwrap().spec.as_ref().unwrap().claim_ref.is_some());
        cache.on_volume(&Delta::Upserted { old: None, new: at(&pv, "6") });
        assert!(cache.volume("pv1").unwrap().spec.as_ref().unwrap().claim_ref.is_none());
        // A failed binding forgets its promises.
        cache.assume(&plan, "n1");
        cache.forget(&assumed);
        assert!(cache.volume("pv1").unwrap().spec.as_ref().unwrap().claim_ref.is_none());

        let provision =
            PodVolumes { static_bindings: vec![], dynamic_provisions: vec![data.clone()] };
        cache.on_claim(&Delta::Upserted { old: None, new: data });
        let assumed = cache.assume(&provision, "n2");
        let promised = cache.claim("default", "data").unwrap();
        assert_eq!(promised.metadata.annotations.as_ref().unwrap()[ANN_SELECTED_NODE], "n2");
        assert_eq!(assumed.dynamic_provisions.len(), 1);
    }
}
