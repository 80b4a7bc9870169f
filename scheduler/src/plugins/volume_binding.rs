//! `VolumeBinding`: a pod's PersistentVolumeClaims decide where it may run, as upstream's
//! plugin and volume binder do.
//!
//! - PreFilter: a claim that does not exist, is being deleted or has lost its volume, or a
//!   claim of an Immediate class that is not bound yet, keeps the pod off every node
//!   ([`PodVolumeClaims::gather`], computed once per cycle by the scheduler, which watches
//!   claims, volumes and classes: [`PodInfo::volume_claims`]).
//! - Filter ([`find_pod_volumes`]): a bound claim's volume must allow the node (its node
//!   affinity); a WaitForFirstConsumer claim needs an Available volume that suits it and
//!   allows the node ([`find_matching_volume`]), or a class that can provision there (a
//!   provisioner other than `kubernetes.io/no-provisioner`, allowed topologies that include
//!   the node), and a claim already promised to a node (`selected-node`) fits only there.
//! - Once the node is chosen, the scheduler binds the static matches (the volume's
//!   `claimRef`), asks for the provisions (the claim's `volume.kubernetes.io/selected-node`)
//!   and waits for the binder to finish before it binds the pod (see `crate::volumes`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use rkube_apis::persistent_volumes::{
    claim_class, claim_request, find_matching_volume, has_annotation, node_affinity_matches,
    ANN_BIND_COMPLETED, ANN_SELECTED_NODE, NOT_SUPPORTED_PROVISIONER,
};

use crate::framework::{CycleState, FilterPlugin, Next, NodeInfo, PodInfo, Rejection};

pub struct VolumeBinding;

pub const NAME: &str = "VolumeBinding";
/// A WaitForFirstConsumer claim finds neither a volume nor a way to provision one here.
pub const REASON_BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// A bound claim's volume does not allow the node.
pub const REASON_NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";
/// A bound claim's volume does not exist.
pub const REASON_PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
/// Claims of Immediate classes must be bound before the pod is scheduled.
pub const REASON_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// What the plugin reads of the cluster (the scheduler's volume cache implements it).
pub trait VolumeLookup {
    fn claim(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>>;
    fn volume(&self, name: &str) -> Option<Arc<PersistentVolume>>;
    fn class(&self, name: &str) -> Option<Arc<StorageClass>>;
    /// The volumes of a class (by [`rkube_apis::persistent_volumes::volume_class`]).
    fn volumes_of_class(&self, class: &str) -> Vec<Arc<PersistentVolume>>;
}

/// A pod's claims, sorted for the plugin (upstream's PodVolumeClaims).
#[derive(Debug, Default)]
pub struct PodVolumeClaims {
    /// Bound claims, each with its volume (None: it does not exist).
    pub bound: Vec<(Arc<PersistentVolumeClaim>, Option<Arc<PersistentVolume>>)>,
    /// Unbound claims of WaitForFirstConsumer classes.
    pub delayed: Vec<Arc<PersistentVolumeClaim>>,
    /// The volumes of the delayed claims' classes, by class.
    pub candidates: HashMap<String, Vec<Arc<PersistentVolume>>>,
    /// The delayed claims' classes, by name.
    pub classes: HashMap<String, Arc<StorageClass>>,
}

/// What the pod needs done once its node is chosen.
#[derive(Debug, Default)]
pub struct PodVolumes {
    /// Claims to bind to these existing volumes.
    pub static_bindings: Vec<(Arc<PersistentVolumeClaim>, Arc<PersistentVolume>)>,
    /// Claims to provision a volume for on the node.
    pub dynamic_provisions: Vec<Arc<PersistentVolumeClaim>>,
}

impl PodVolumes {
    pub fn is_empty(&self) -> bool {
        self.static_bindings.is_empty() && self.dynamic_provisions.is_empty()
    }
}

/// Whether the claim is bound for good: it names its volume and the binder finished.
pub fn fully_bound(claim: &PersistentVolumeClaim) -> bool {
    let named =
        claim.spec.as_ref().and_then(|s| s.volume_name.as_deref()).is_some_and(|v| !v.is_empty());
    named && has_annotation(claim.metadata.annotations.as_ref(), ANN_BIND_COMPLETED)
}

impl PodVolumeClaims {
    /// The pod's claims: `None` when it uses none, an error (the reason the pod fits no
    /// node) when one is missing, being deleted, lost, or unbound in an Immediate class.
    pub fn gather(pod: &Pod, lookup: &dyn VolumeLookup) -> Option<Result<PodVolumeClaims, String>> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let names: Vec<&str> = pod
            .spec
            .as_ref()
            .and_then(|s| s.volumes.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .map(|c| c.claim_name.as_str())
            .collect();
        if names.is_empty() {
            return None;
        }
        let mut claims = Vec::with_capacity(names.len());
        for name in names {
            let Some(claim) = lookup.claim(namespace, name) else {
                return Some(Err(format!("persistentvolumeclaim {name:?} not found")));
            };
            let phase = claim.status.as_ref().and_then(|s| s.phase.as_deref());
            if phase == Some("Lost") {
                let volume =
                    claim.spec.as_ref().and_then(|s| s.volume_name.as_deref()).unwrap_or("");
                return Some(Err(format!(
                    "persistentvolumeclaim {name:?} bound to non-existent persistentvolume {volume:?}"
                )));
            }
            if claim.metadata.deletion_timestamp.is_some() {
                return Some(Err(format!("persistentvolumeclaim {name:?} is being deleted")));
            }
            claims.push(claim);
        }
        let mut out = PodVolumeClaims::default();
        let mut immediate = 0;
        for claim in claims {
            if fully_bound(&claim) {
                let volume_name =
                    claim.spec.as_ref().and_then(|s| s.volume_name.as_deref()).unwrap_or("");
                let volume = lookup.volume(volume_name);
                out.bound.push((claim, volume));
                continue;
            }
            let class_name = claim_class(&claim);
            let class = (!class_name.is_empty()).then(|| lookup.class(class_name)).flatten();
            let delayed = match &class {
                None => false,
                Some(class) => match class.volume_binding_mode.as_deref() {
                    Some(mode) => mode == "WaitForFirstConsumer",
                    None => {
                        return Some(Err(format!(
                            "VolumeBindingMode not set for StorageClass {class_name:?}"
                        )))
                    }
                },
            };
            let named = claim
                .spec
                .as_ref()
                .and_then(|s| s.volume_name.as_deref())
                .is_some_and(|v| !v.is_empty());
            if delayed && !named {
                let class = class.expect("a delayed claim has a class");
                out.candidates
                    .entry(class_name.to_string())
                    .or_insert_with(|| lookup.volumes_of_class(class_name));
                out.classes.insert(class_name.to_string(), class);
                out.delayed.push(claim);
            } else {
                // Pre-bound claims are treated as Immediate ones: the binder binds them.
                immediate += 1;
            }
        }
        if immediate > 0 {
            return Some(Err(REASON_UNBOUND_IMMEDIATE.to_string()));
        }
        Some(Ok(out))
    }
}

/// Whether the node's labels satisfy a class's `allowedTopologies` (none: every node).
fn topology_allows(class: &StorageClass, labels: &BTreeMap<String, String>) -> bool {
    let terms = class.allowed_topologies.as_deref().unwrap_or(&[]);
    terms.is_empty()
        || terms.iter().any(|term| {
            term.match_label_expressions.iter().flatten().all(|e| {
                labels.get(&e.key).is_some_and(|v| e.values.iter().any(|allowed| allowed == v))
            })
        })
}

/// What the pod's claims need on `node`, or why the node cannot serve them (upstream's
/// `FindPodVolumes`; reasons in its order).
pub fn find_pod_volumes(
    claims: &PodVolumeClaims,
    node: &NodeInfo,
) -> Result<PodVolumes, Vec<String>> {
    let labels = node.labels();
    let (mut bound_ok, mut unbound_ok, mut pvs_found) = (true, true, true);
    let mut out = PodVolumes::default();
    for (_, volume) in &claims.bound {
        match volume {
            None => {
                pvs_found = false;
                break;
            }
            Some(volume) if !node_affinity_matches(volume, labels) => {
                bound_ok = false;
                break;
            }
            Some(_) => {}
        }
    }
    'delayed: {
        if claims.delayed.is_empty() {
            break 'delayed;
        }
        let mut to_provision = Vec::new();
        let mut to_match = Vec::new();
        for claim in &claims.delayed {
            match claim.metadata.annotations.as_ref().and_then(|a| a.get(ANN_SELECTED_NODE)) {
                Some(selected) if selected != node.name() => {
                    unbound_ok = false;
                    break 'delayed;
                }
                Some(_) => to_provision.push(claim.clone()),
                None => to_match.push(claim.clone()),
            }
        }
        // The smallest requests choose first.
        to_match.sort_by_key(|c| claim_request(c));
        let mut chosen = HashSet::new();
        for claim in to_match {
            let candidates =
                claims.candidates.get(claim_class(&claim)).map(Vec::as_slice).unwrap_or(&[]);
            match find_matching_volume(&claim, candidates, Some(labels), &chosen, true) {
                Some(volume) => {
                    chosen.insert(volume.metadata.name.clone().unwrap_or_default());
                    out.static_bindings.push((claim, volume.clone()));
                }
                None => {
                    unbound_ok = false;
                    to_provision.push(claim);
                }
            }
        }
        if !to_provision.is_empty() {
            unbound_ok = to_provision.iter().all(|claim| {
                let Some(class) = claims.classes.get(claim_class(claim)) else { return false };
                let provisioner = class.provisioner.as_str();
                !provisioner.is_empty()
                    && provisioner != NOT_SUPPORTED_PROVISIONER
                    && topology_allows(class, labels)
            });
            if unbound_ok {
                out.dynamic_provisions = to_provision;
            }
        }
    }
    let mut reasons = Vec::new();
    if !bound_ok {
        reasons.push(REASON_NODE_CONFLICT.to_string());
    }
    if !unbound_ok {
        reasons.push(REASON_BIND_CONFLICT.to_string());
    }
    if !pvs_found {
        reasons.push(REASON_PV_NOT_EXIST.to_string());
    }
    if reasons.is_empty() {
        Ok(out)
    } else {
        Err(reasons)
    }
}

impl FilterPlugin for VolumeBinding {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_filter(&self, pod: &PodInfo, _state: &mut CycleState<'_>) -> Result<Next, Rejection> {
        match &pod.volume_claims {
            None => Ok(Next::Skip),
            Some(Err(reason)) => Err(Rejection::new(reason.clone())),
            Some(Ok(_)) => Ok(Next::Run),
        }
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo) -> Result<(), Rejection> {
        match &pod.volume_claims {
            Some(Ok(claims)) => {
                find_pod_volumes(claims, node).map(|_| ()).map_err(|reasons| Rejection { reasons })
            }
            Some(Err(reason)) => Err(Rejection::new(reason.clone())),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::plugins::testing::{filter_nodes, node, pod};
    use serde_json::json;

    /// A lookup over fixed objects.
    #[derive(Default)]
    pub struct Fixed {
        pub claims: Vec<Arc<PersistentVolumeClaim>>,
        pub volumes: Vec<Arc<PersistentVolume>>,
        pub classes: Vec<Arc<StorageClass>>,
    }

    impl VolumeLookup for Fixed {
        fn claim(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
            self.claims
                .iter()
                .find(|c| {
                    c.metadata.namespace.as_deref() == Some(namespace)
                        && c.metadata.name.as_deref() == Some(name)
                })
                .cloned()
        }
        fn volume(&self, name: &str) -> Option<Arc<PersistentVolume>> {
            self.volumes.iter().find(|v| v.metadata.name.as_deref() == Some(name)).cloned()
        }
        fn class(&self, name: &str) -> Option<Arc<StorageClass>> {
            self.classes.iter().find(|c| c.metadata.name.as_deref() == Some(name)).cloned()
        }
        fn volumes_of_class(&self, class: &str) -> Vec<Arc<PersistentVolume>> {
            self.volumes
                .iter()
                .filter(|v| rkube_apis::persistent_volumes::volume_class(v) == class)
                .cloned()
                .collect()
        }
    }

    pub fn claim(name: &str, class: &str, extra: serde_json::Value) -> Arc<PersistentVolumeClaim> {
        let mut c = json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
            "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending"},
        });
        for (k, v) in extra.as_object().unwrap() {
            match k.as_str() {
                "annotations" | "deletionTimestamp" => c["metadata"][k] = v.clone(),
                "phase" => c["status"]["phase"] = v.clone(),
                _ => c["spec"][k] = v.clone(),
            }
        }
        Arc::new(serde_json::from_value(c).unwrap())
    }

    pub fn volume_on(name: &str, class: &str, node: Option<&str>) -> Arc<PersistentVolume> {
        let mut v = json!({
            "metadata": {"name": name},
            "spec": {"storageClassName": class, "capacity": {"storage": "1Gi"},
                     "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/x"}},
            "status": {"phase": "Available"},
        });
        if let Some(node) = node {
            v["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}});
        }
        Arc::new(serde_json::from_value(v).unwrap())
    }

    pub fn class(name: &str, mode: &str, provisioner: &str) -> Arc<StorageClass> {
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name}, "provisioner": provisioner,
                                          "volumeBindingMode": mode}))
            .unwrap(),
        )
    }

    fn pod_with(claims: &[&str]) -> Pod {
        let volumes: Vec<_> = claims
            .iter()
            .map(|c| json!({"name": c, "persistentVolumeClaim": {"claimName": c}}))
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "busybox"}], "volumes": volumes},
        }))
        .unwrap()
    }

    fn host(name: &str) -> NodeInfo {
        node(json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                    "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}))
    }

    fn info(p: Pod, lookup: &Fixed) -> PodInfo {
        let mut info = pod(serde_json::to_value(&p).unwrap());
        info.volume_claims = PodVolumeClaims::gather(&p, lookup).map(|r| r.map(Arc::new));
        info
    }

    #[test]
    fn claims_that_cannot_be_used_keep_the_pod_off_every_node() {
        let bound = claim(
            "bound",
            "",
            json!({"volumeName": "pv1",
            "annotations": {ANN_BIND_COMPLETED: "yes"}, "phase": "Bound"}),
        );
        let lookup = Fixed {
            claims: vec![
                claim("gone", "", json!({"deletionTimestamp": "2025-01-01T00:00:00Z"})),
                claim("lost", "", json!({"volumeName": "pv9", "phase": "Lost"})),
                claim("waiting", "standard", json!({})),
                bound,
            ],
            volumes: vec![volume_on("pv1", "", None)],
            classes: vec![class("standard", "Immediate", "example.com/disk")],
        };
        let reason = |claims: &[&str]| match PodVolumeClaims::gather(&pod_with(claims), &lookup) {
            Some(Err(reason)) => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(reason(&["missing"]), "persistentvolumeclaim \"missing\" not found");
        assert_eq!(reason(&["gone"]), "persistentvolumeclaim \"gone\" is being deleted");
        assert_eq!(
            reason(&["lost"]),
            "persistentvolumeclaim \"lost\" bound to non-existent persistentvolume \"pv9\""
        );
        assert_eq!(reason(&["bound", "waiting"]), REASON_UNBOUND_IMMEDIATE);
        assert!(PodVolumeClaims::gather(&pod_with(&[]), &lookup).is_none());
        let p = info(pod_with(&["bound"]), &lookup);
        let nodes = [&host("n1")];
        assert_eq!(filter_nodes(&VolumeBinding, &p, &nodes), [None]);
    }

    #[test]
    fn a_pre_filter_refusal_is_reported_without_node_counts() {
        let lookup = Fixed::default();
        let mut profile = crate::plugins::default_profile();
        profile.filters.retain(|f| f.name() == NAME);
        let p = info(pod_with(&["missing"]), &lookup);
        let (n1, n2) = (host("n1"), host("n2"));
        let message = crate::scheduler::decide(&profile, &p, &[&n1, &n2], &mut 0).unwrap_err();
        assert_eq!(
            message,
            "0/2 nodes are available: persistentvolumeclaim \"missing\" not found. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        );
    }

    #[test]
    fn bound_volumes_pin_the_pod_to_their_nodes() {
        let done = json!({"annotations": {ANN_BIND_COMPLETED: "yes"}, "phase": "Bound"});
        let mut on_n1 = done.clone();
        on_n1["volumeName"] = json!("pv1");
        let mut missing = done;
        missing["volumeName"] = json!("nope");
        let lookup = Fixed {
            claims: vec![claim("data", "", on_n1), claim("orphan", "", missing)],
            volumes: vec![volume_on("pv1", "", Some("n1"))],
            classes: vec![],
        };
        let (n1, n2) = (host("n1"), host("n2"));
        let nodes = [&n1, &n2];
        let p = info(pod_with(&["data"]), &lookup);
        assert_eq!(
            filter_nodes(&VolumeBinding, &p, &nodes),
            [None, Some(REASON_NODE_CONFLICT.into())]
        );
        let p = info(pod_with(&["orphan"]), &lookup);
        assert_eq!(
            filter_nodes(&VolumeBinding, &p, &nodes),
            [Some(REASON_PV_NOT_EXIST.into()), Some(REASON_PV_NOT_EXIST.into())]
        );
    }

    #[test]
    fn delayed_claims_match_volumes_on_the_node_or_provision_there() {
        let lookup = Fixed {
            claims: vec![
                claim("local", "local-storage", json!({})),
                claim("dynamic", "local-path", json!({})),
                claim("promised", "local-path", json!({"annotations": {ANN_SELECTED_NODE: "n2"}})),
            ],
            volumes: vec![volume_on("disk-n1", "local-storage", Some("n1"))],
            classes: vec![
                class("local-storage", "WaitForFirstConsumer", NOT_SUPPORTED_PROVISIONER),
                class("local-path", "WaitForFirstConsumer", "rancher.io/local-path"),
            ],
        };
        let (n1, n2) = (host("n1"), host("n2"));
        let nodes = [&n1, &n2];
        // A static volume on n1 only: no provisioner elsewhere.
        let p = info(pod_with(&["local"]), &lookup);
        assert_eq!(
            filter_nodes(&VolumeBinding, &p, &nodes),
            [None, Some(REASON_BIND_CONFLICT.into())]
        );
        let Some(Ok(claims)) = &p.volume_claims else { panic!() };
        let plan = find_pod_volumes(claims, &n1).unwrap();
        assert_eq!(plan.static_bindings.len(), 1);
        assert!(plan.dynamic_provisions.is_empty());
        // A provisioner can make one anywhere.
        let p = info(pod_with(&["dynamic"]), &lookup);
        assert_eq!(filter_nodes(&VolumeBinding, &p, &nodes), [None, None]);
        let Some(Ok(claims)) = &p.volume_claims else { panic!() };
        assert_eq!(find_pod_volumes(claims, &n2).unwrap().dynamic_provisions.len(), 1);
        // Promised to n2 already.
        let p = info(pod_with(&["promised"]), &lookup);
        assert_eq!(
            filter_nodes(&VolumeBinding, &p, &nodes),
            [Some(REASON_BIND_CONFLICT.into()), None]
        );
    }

    #[test]
    fn allowed_topologies_limit_provisioning() {
        let mut zoned = (*class("zoned", "WaitForFirstConsumer", "example.com/disk")).clone();
        zoned.allowed_topologies = serde_json::from_value(json!([{"matchLabelExpressions": [
            {"key": "kubernetes.io/hostname", "values": ["n2"]}]}]))
        .unwrap();
        let lookup = Fixed {
            claims: vec![claim("data", "zoned", json!({}))],
            volumes: vec![],
            classes: vec![Arc::new(zoned)],
        };
        let (n1, n2) = (host("n1"), host("n2"));
        let p = info(pod_with(&["data"]), &lookup);
        assert_eq!(
            filter_nodes(&VolumeBinding, &p, &[&n1, &n2]),
            [Some(REASON_BIND_CONFLICT.into()), None]
        );
    }
}
