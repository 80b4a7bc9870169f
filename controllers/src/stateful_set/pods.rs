//! A StatefulSet's pods and claims by identity: pod `<set>-<ordinal>` with its name and index
//! labels, hostname and subdomain; claim `<template>-<set>-<ordinal>` for each of the set's
//! `volumeClaimTemplates`, mounted by the pod; and the claims' owner references under the
//! set's `persistentVolumeClaimRetentionPolicy` (upstream's `stateful_set_utils.go`).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::controller_history::REVISION_HASH_LABEL;
use crate::controller_ref;

/// The label with the pod's name, so a Service can select one pod of the set.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label with the pod's ordinal.
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

const RETAIN: &str = "Retain";
const DELETE: &str = "Delete";

fn set_name(set: &StatefulSet) -> &str {
    set.metadata.name.as_deref().unwrap_or("")
}

/// The parent name and ordinal a pod name carries (`web-3` is `web`, 3), as upstream's
/// `^(.*)-([0-9]+)$`; `None` when the name has no such suffix or it overflows.
pub fn parent_and_ordinal(name: &str) -> Option<(&str, i32)> {
    let (parent, digits) = name.rsplit_once('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((parent, digits.parse().ok()?))
}

/// The pod's ordinal if it is a member of `set` by name.
pub fn ordinal_in(set: &StatefulSet, pod: &Pod) -> Option<i32> {
    let (parent, ordinal) = parent_and_ordinal(pod.metadata.name.as_deref()?)?;
    (parent == set_name(set)).then_some(ordinal)
}

/// `spec.ordinals.start`, 0 by default.
pub fn start_ordinal(set: &StatefulSet) -> i32 {
    set.spec.as_ref().and_then(|s| s.ordinals.as_ref()).and_then(|o| o.start).unwrap_or(0)
}

/// `spec.replicas`, 1 by default.
pub fn replicas(set: &StatefulSet) -> i32 {
    set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1).max(0)
}

/// Whether the ordinal is one the set keeps (`start <= ordinal < start + replicas`).
pub fn in_range(set: &StatefulSet, ordinal: i32) -> bool {
    let start = start_ordinal(set);
    ordinal >= start && i64::from(ordinal) < i64::from(start) + i64::from(replicas(set))
}

pub fn pod_name(set: &StatefulSet, ordinal: i32) -> String {
    format!("{}-{ordinal}", set_name(set))
}

pub fn claim_name(template: &str, set: &StatefulSet, ordinal: i32) -> String {
    format!("{template}-{}-{ordinal}", set_name(set))
}

/// The revision a pod was made from (its `controller-revision-hash` label).
pub fn revision_of(pod: &Pod) -> &str {
    pod.metadata.labels.as_ref().and_then(|l| l.get(REVISION_HASH_LABEL)).map_or("", String::as_str)
}

/// The claims of the pod with `ordinal`, by the name of the volume that mounts each: the
/// set's claim templates named for the pod, labelled as the template and the set's selector's
/// `matchLabels`.
pub fn claims(set: &StatefulSet, ordinal: i32) -> Vec<(String, PersistentVolumeClaim)> {
    let Some(spec) = set.spec.as_ref() else { return Vec::new() };
    let selector_labels = spec.selector.match_labels.clone().unwrap_or_default();
    spec.volume_claim_templates
        .iter()
        .flatten()
        .map(|template| {
            let volume = template.metadata.name.clone().unwrap_or_default();
            let mut claim = template.clone();
            claim.status = None;
            let mut labels = claim.metadata.labels.take().unwrap_or_default();
            labels.extend(selector_labels.clone());
            claim.metadata = ObjectMeta {
                name: Some(claim_name(&volume, set, ordinal)),
                namespace: set.metadata.namespace.clone(),
                labels: Some(labels),
                annotations: claim.metadata.annotations.take(),
                finalizers: claim.metadata.finalizers.take(),
                ..ObjectMeta::default()
            };
            (volume, claim)
        })
        .collect()
}

/// The pod of `set` with `ordinal`, made from `template` (the template of `revision`): named
/// and labelled for its identity and revision, with the set as controller, `hostname` and
/// `subdomain` set, mounting its claims.
pub fn new_pod(set: &StatefulSet, template: &PodTemplateSpec, ordinal: i32, revision: &str) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    let name = pod_name(set, ordinal);
    let mut labels = meta.labels.unwrap_or_default();
    labels.insert(POD_NAME_LABEL.into(), name.clone());
    labels.insert(POD_INDEX_LABEL.into(), ordinal.to_string());
    labels.insert(REVISION_HASH_LABEL.into(), revision.into());
    let mut spec = template.spec.clone().unwrap_or_default();
    spec.hostname = Some(name.clone());
    spec.subdomain =
        set.spec.as_ref().and_then(|s| s.service_name.clone()).filter(|s| !s.is_empty());
    // The claims' volumes first, then the template's other volumes (one of the same name as a
    // claim is replaced by it).
    let claims = claims(set, ordinal);
    let mut volumes: Vec<Volume> = claims
        .iter()
        .map(|(volume, claim)| Volume {
            name: volume.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.metadata.name.clone().unwrap_or_default(),
                read_only: None,
            }),
            ..Volume::default()
        })
        .collect();
    volumes.extend(
        spec.volumes
            .take()
            .into_iter()
            .flatten()
            .filter(|v| claims.iter().all(|(n, _)| *n != v.name)),
    );
    spec.volumes = (!volumes.is_empty()).then_some(volumes);
    Pod {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: set.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![controller_ref::owner_reference(set)]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// The identity labels the pod lacks or has wrong (upstream's `identityMatches` fixed by
/// `updateIdentity`); empty when its identity is right.
pub fn identity_fix(set: &StatefulSet, pod: &Pod, ordinal: i32) -> BTreeMap<String, String> {
    let name = pod_name(set, ordinal);
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    [(POD_NAME_LABEL, name), (POD_INDEX_LABEL, ordinal.to_string())]
        .into_iter()
        .filter(|(k, v)| labels.get(*k) != Some(v))
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// `(whenDeleted, whenScaled)`, each `Retain` unless `Delete`.
fn retention(set: &StatefulSet) -> (&str, &str) {
    let policy =
        set.spec.as_ref().and_then(|s| s.persistent_volume_claim_retention_policy.as_ref());
    let of =
        |v: Option<&String>| if v.map(String::as_str) == Some(DELETE) { DELETE } else { RETAIN };
    (
        of(policy.and_then(|p| p.when_deleted.as_ref())),
        of(policy.and_then(|p| p.when_scaled.as_ref())),
    )
}

/// Whether claims of scaled-down pods may be left behind for a pod made again later: under
/// `whenScaled: Delete` a claim still owned by a previous pod of the same name is on its way
/// out and must be waited for.
pub fn claims_outlive_pods(set: &StatefulSet) -> bool {
    retention(set).1 == RETAIN
}

/// Who a claim's owner reference is to, by what upstream's `matchesRef` compares.
#[derive(Clone, Copy)]
struct Owner<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    uid: &'a str,
}

impl Owner<'_> {
    fn named_by(&self, r: &OwnerReference) -> bool {
        r.api_version == self.api_version && r.kind == self.kind && r.name == self.name
    }

    fn referenced(&self, refs: &[OwnerReference]) -> bool {
        refs.iter().any(|r| r.uid == self.uid)
    }

    /// A reference by name and kind with another uid: left by an earlier object of the name.
    fn stale_in(&self, refs: &[OwnerReference]) -> bool {
        refs.iter().find(|r| self.named_by(r)).is_some_and(|r| r.uid != self.uid)
    }

    fn controller_ref(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.into(),
            kind: self.kind.into(),
            name: self.name.into(),
            uid: self.uid.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }
}

/// Whether a claim still belongs to a previous pod of the same name (under `whenScaled:
/// Delete`): the new pod must wait until it is gone (upstream's `PodClaimIsStale`).
pub fn claim_is_stale(claim: &PersistentVolumeClaim, pod_name: &str, pod_uid: &str) -> bool {
    let pod = Owner { api_version: "v1", kind: "Pod", name: pod_name, uid: pod_uid };
    pod.stale_in(claim.metadata.owner_references.as_deref().unwrap_or(&[]))
}

/// The owner references a claim of pod `pod_name`/`pod_uid` should have under the set's
/// retention policy, or `None` when it has them (or is not ours to touch). As upstream:
/// `whenDeleted: Delete` makes the set a controller of the claims of pods it keeps,
/// `whenScaled: Delete` makes the pod the controller of the claim of a scaled-down pod; stale
/// references (an earlier set or pod of the name) leave the claim alone; a claim controlled
/// by something else only loses references to the set and pod.
pub fn claim_owner_refs(
    set: &StatefulSet,
    claim: &PersistentVolumeClaim,
    pod_name: &str,
    pod_uid: &str,
    scaled_down: bool,
) -> Option<Vec<OwnerReference>> {
    let refs = claim.metadata.owner_references.clone().unwrap_or_default();
    let owner = Owner {
        api_version: "apps/v1",
        kind: "StatefulSet",
        name: set_name(set),
        uid: set.metadata.uid.as_deref().unwrap_or(""),
    };
    let pod = Owner { api_version: "v1", kind: "Pod", name: pod_name, uid: pod_uid };
    if owner.stale_in(&refs) || pod.stale_in(&refs) {
        return None;
    }
    let (when_deleted, when_scaled) = retention(set);
    let unexpected_controller = (when_deleted, when_scaled) != (RETAIN, RETAIN)
        && refs.iter().any(|r| {
            let ours = owner.named_by(r) || pod.named_by(r);
            !ours && r.controller == Some(true)
        });
    let scrubbed: Vec<OwnerReference> =
        refs.iter().filter(|r| !owner.named_by(r) && !pod.named_by(r)).cloned().collect();
    if unexpected_controller {
        return (owner.referenced(&refs) || pod.referenced(&refs)).then_some(scrubbed);
    }
    let want_set = when_deleted == DELETE && !(when_scaled == DELETE && scaled_down);
    let want_pod = when_scaled == DELETE && scaled_down;
    let non_controller =
        refs.iter().any(|r| (r.uid == owner.uid || r.uid == pod.uid) && r.controller != Some(true));
    let up_to_date =
        !non_controller && owner.referenced(&refs) == want_set && pod.referenced(&refs) == want_pod;
    if up_to_date {
        return None;
    }
    let mut wanted = scrubbed;
    if want_set {
        wanted.push(owner.controller_ref());
    }
    if want_pod {
        wanted.push(pod.controller_ref());
    }
    Some(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(extra: serde_json::Value) -> StatefulSet {
        let mut spec = json!({
            "replicas": 3,
            "serviceName": "web-svc",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}],
                    "volumes": [{"name": "data", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}]}
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data", "labels": {"tier": "db"}},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                "status": {"phase": "Pending"}
            }]
        });
        spec.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "set-uid"},
            "spec": spec
        }))
        .unwrap()
    }

    #[test]
    fn ordinals_come_from_the_name_suffix() {
        assert_eq!(parent_and_ordinal("web-0"), Some(("web", 0)));
        assert_eq!(parent_and_ordinal("my-web-12"), Some(("my-web", 12)));
        assert_eq!(parent_and_ordinal("web"), None);
        assert_eq!(parent_and_ordinal("web-"), None);
        assert_eq!(parent_and_ordinal("web-1a"), None);
        assert_eq!(parent_and_ordinal("web-99999999999"), None, "beyond int32");
        let s = set(json!({"ordinals": {"start": 5}}));
        assert_eq!(start_ordinal(&s), 5);
        assert!(!in_range(&s, 4) && in_range(&s, 5) && in_range(&s, 7) && !in_range(&s, 8));
        let pod = |name: &str| Pod {
            metadata: ObjectMeta { name: Some(name.into()), ..ObjectMeta::default() },
            ..Pod::default()
        };
        assert_eq!(ordinal_in(&s, &pod("web-6")), Some(6));
        assert_eq!(ordinal_in(&s, &pod("webx-6")), None);
    }

    #[test]
    fn pods_get_their_identity_revision_and_claims() {
        let s = set(json!({}));
        let template = s.spec.as_ref().unwrap().template.clone();
        let pod = new_pod(&s, &template, 2, "web-abc");
        let value = serde_json::to_value(&pod).unwrap();
        assert_eq!(value["metadata"]["name"], "web-2");
        assert_eq!(value["metadata"]["namespace"], "ns");
        assert_eq!(
            value["metadata"]["labels"],
            json!({"app": "web", "controller-revision-hash": "web-abc",
                "statefulset.kubernetes.io/pod-name": "web-2", "apps.kubernetes.io/pod-index": "2"})
        );
        assert_eq!(value["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
        assert_eq!(value["spec"]["hostname"], "web-2");
        assert_eq!(value["spec"]["subdomain"], "web-svc");
        // The claim replaces the template's volume of the same name.
        assert_eq!(
            value["spec"]["volumes"],
            json!([{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-2"}},
                {"name": "tmp", "emptyDir": {}}])
        );
        assert_eq!(revision_of(&pod), "web-abc");
        assert!(identity_fix(&s, &pod, 2).is_empty());
        let mut stripped = pod.clone();
        stripped.metadata.labels.as_mut().unwrap().remove(POD_INDEX_LABEL);
        assert_eq!(
            identity_fix(&s, &stripped, 2),
            [(POD_INDEX_LABEL.to_string(), "2".to_string())].into()
        );
    }

    #[test]
    fn claims_are_named_and_labelled_for_the_pod() {
        let s = set(json!({}));
        let claims = claims(&s, 1);
        assert_eq!(claims.len(), 1);
        let (volume, claim) = &claims[0];
        assert_eq!(volume, "data");
        let value = serde_json::to_value(claim).unwrap();
        assert_eq!(
            value["metadata"],
            json!({"name": "data-web-1", "namespace": "ns",
            "labels": {"app": "web", "tier": "db"}})
        );
        assert_eq!(value["spec"]["resources"]["requests"]["storage"], "1Gi");
        assert!(value.get("status").is_none());
    }

    fn claim(refs: serde_json::Value) -> PersistentVolumeClaim {
        serde_json::from_value(json!({"metadata": {"name": "data-web-1", "ownerReferences": refs}}))
            .unwrap()
    }

    fn policy(deleted: &str, scaled: &str) -> StatefulSet {
        set(
            json!({"persistentVolumeClaimRetentionPolicy": {"whenDeleted": deleted, "whenScaled": scaled}}),
        )
    }

    fn uids(refs: Option<Vec<OwnerReference>>) -> Option<Vec<(String, bool)>> {
        refs.map(|r| r.into_iter().map(|r| (r.uid, r.controller == Some(true))).collect())
    }

    #[test]
    fn claim_owners_follow_the_retention_policy() {
        let none = claim(json!([]));
        // Retain, Retain: no owners.
        assert_eq!(
            claim_owner_refs(&policy("Retain", "Retain"), &none, "web-1", "p1", false),
            None
        );
        // Delete with the set: the set controls the claims of the pods it keeps.
        let s = policy("Delete", "Retain");
        let refs = claim_owner_refs(&s, &none, "web-1", "p1", false);
        assert_eq!(uids(refs.clone()), Some(vec![("set-uid".into(), true)]));
        let owned = claim(serde_json::to_value(refs.unwrap()).unwrap());
        assert_eq!(claim_owner_refs(&s, &owned, "web-1", "p1", false), None, "up to date");
        // Changing back to Retain removes it.
        assert_eq!(
            uids(claim_owner_refs(&policy("Retain", "Retain"), &owned, "web-1", "p1", false)),
            Some(vec![])
        );
        // Delete when scaled: the scaled-down pod takes over the claim.
        let s = policy("Delete", "Delete");
        assert_eq!(
            uids(claim_owner_refs(&s, &owned, "web-1", "p1", true)),
            Some(vec![("p1".into(), true)])
        );
        assert_eq!(
            uids(claim_owner_refs(&policy("Retain", "Delete"), &none, "web-1", "p1", false)),
            None
        );
        // A non-controller reference to the set is made a controller one.
        let plain = claim(
            json!([{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "set-uid"}]),
        );
        assert_eq!(
            uids(claim_owner_refs(&policy("Delete", "Retain"), &plain, "web-1", "p1", false)),
            Some(vec![("set-uid".into(), true)])
        );
    }

    #[test]
    fn claims_of_others_and_stale_claims_are_left_alone() {
        let s = policy("Delete", "Delete");
        let stale_set = claim(
            json!([{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "old", "controller": true}]),
        );
        assert_eq!(claim_owner_refs(&s, &stale_set, "web-1", "p1", false), None);
        let stale_pod = claim(
            json!([{"apiVersion": "v1", "kind": "Pod", "name": "web-1", "uid": "old-pod", "controller": true}]),
        );
        assert_eq!(claim_owner_refs(&s, &stale_pod, "web-1", "p1", false), None);
        assert!(claim_is_stale(&stale_pod, "web-1", ""));
        assert!(!claim_is_stale(&stale_pod, "web-1", "old-pod"));
        assert!(!claim_is_stale(&claim(json!([])), "web-1", ""));
        let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "cm", "controller": true});
        let mine = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "set-uid", "controller": true});
        assert_eq!(
            claim_owner_refs(&s, &claim(json!([other.clone()])), "web-1", "p1", false),
            None
        );
        assert_eq!(
            uids(claim_owner_refs(&s, &claim(json!([other, mine])), "web-1", "p1", false)),
            Some(vec![("cm".into(), true)])
        );
        assert!(claims_outlive_pods(&policy("Delete", "Retain")));
        assert!(!claims_outlive_pods(&s));
    }
}
