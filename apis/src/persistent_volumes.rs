//! How a PersistentVolumeClaim and a PersistentVolume are matched and bound, as upstream's
//! `component-helpers/storage/volume` decides it. The PV binder in the controller manager and
//! the scheduler's `VolumeBinding` plugin share it, so the two cannot disagree on which
//! volume suits a claim, and the admission plugins and the binder agree on the default class.
//!
//! Start at [`find_matching_volume`]; the annotations both sides write are the constants below.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec,
};

use crate::node_selector;
use crate::quantity::parse_units;
use crate::selectors::LabelSelector;

/// On a claim: the binding has been set up once (its presence changes how the binder reads
/// the claim from then on).
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// On a claim or volume: the binder (not the user) wrote `volumeName` or `claimRef`.
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// On a claim: the node the scheduler chose, for a provisioner to make the volume on.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// On a claim: the provisioner expected to make its volume.
pub const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
/// The beta spelling of [`ANN_STORAGE_PROVISIONER`], still written beside it.
pub const ANN_BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
/// On a volume: the provisioner that made it.
pub const ANN_DYNAMICALLY_PROVISIONED: &str = "pv.kubernetes.io/provisioned-by";
/// The beta class annotation, which wins over `spec.storageClassName` where set.
pub const ANN_BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// A StorageClass with this annotation `"true"` is the default.
pub const ANN_IS_DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
/// The beta spelling of [`ANN_IS_DEFAULT_CLASS`].
pub const ANN_BETA_IS_DEFAULT_CLASS: &str = "storageclass.beta.kubernetes.io/is-default-class";
/// A class's provisioner that means "no dynamic provisioning".
pub const NOT_SUPPORTED_PROVISIONER: &str = "kubernetes.io/no-provisioner";
/// The finalizer that keeps a claim in use by a pod.
pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";
/// The finalizer that keeps a bound volume.
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";

fn annotation<'a>(annotations: Option<&'a BTreeMap<String, String>>, key: &str) -> Option<&'a str> {
    annotations.and_then(|a| a.get(key)).map(String::as_str)
}

/// Whether an object's annotations carry `key` (any value).
pub fn has_annotation(annotations: Option<&BTreeMap<String, String>>, key: &str) -> bool {
    annotation(annotations, key).is_some()
}

/// The claim's class: the beta annotation where set, else `spec.storageClassName`, else `""`.
pub fn claim_class(claim: &PersistentVolumeClaim) -> &str {
    if let Some(class) = annotation(claim.metadata.annotations.as_ref(), ANN_BETA_STORAGE_CLASS) {
        return class;
    }
    claim.spec.as_ref().and_then(|s| s.storage_class_name.as_deref()).unwrap_or("")
}

/// Whether the claim asked for a class at all (`storageClassName: ""` is asking for none).
pub fn claim_has_class(claim: &PersistentVolumeClaim) -> bool {
    has_annotation(claim.metadata.annotations.as_ref(), ANN_BETA_STORAGE_CLASS)
        || claim.spec.as_ref().is_some_and(|s| s.storage_class_name.is_some())
}

/// The volume's class: the beta annotation where set, else `spec.storageClassName`.
pub fn volume_class(volume: &PersistentVolume) -> &str {
    if let Some(class) = annotation(volume.metadata.annotations.as_ref(), ANN_BETA_STORAGE_CLASS) {
        return class;
    }
    volume.spec.as_ref().and_then(|s| s.storage_class_name.as_deref()).unwrap_or("")
}

/// Whether a StorageClass's annotations make it a default one.
pub fn is_default_class(annotations: Option<&BTreeMap<String, String>>) -> bool {
    annotation(annotations, ANN_IS_DEFAULT_CLASS) == Some("true")
        || annotation(annotations, ANN_BETA_IS_DEFAULT_CLASS) == Some("true")
}

/// Of several default classes, the one upstream picks: the newest, then by name.
/// `candidates` are (name, creationTimestamp as RFC 3339 or anything that orders the same).
pub fn pick_default_class<'a>(
    candidates: impl IntoIterator<Item = (&'a str, Option<i128>)>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .min_by(|(a_name, a_time), (b_name, b_time)| {
            b_time.unwrap_or(i128::MIN).cmp(&a_time.unwrap_or(i128::MIN)).then(a_name.cmp(b_name))
        })
        .map(|(name, _)| name)
}

/// The default class among StorageClasses as JSON (the admission plugin reads them so): the
/// newest of those annotated default, then by name.
pub fn default_class_of<'a>(
    classes: impl IntoIterator<Item = &'a serde_json::Value>,
) -> Option<String> {
    let defaults: Vec<(&str, Option<i128>)> = classes
        .into_iter()
        .filter(|c| {
            let annotations = c["metadata"]["annotations"].as_object();
            let is = |key: &str| {
                annotations.and_then(|a| a.get(key)).and_then(|v| v.as_str()) == Some("true")
            };
            is(ANN_IS_DEFAULT_CLASS) || is(ANN_BETA_IS_DEFAULT_CLASS)
        })
        .map(|c| {
            let created = c["metadata"]["creationTimestamp"]
                .as_str()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .and_then(|t| t.timestamp_nanos_opt())
                .map(i128::from);
            (c["metadata"]["name"].as_str().unwrap_or(""), created)
        })
        .collect();
    pick_default_class(defaults).map(String::from)
}

/// The claim's storage request in bytes (0 without one).
pub fn claim_request(claim: &PersistentVolumeClaim) -> i64 {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| parse_units(&q.0))
        .unwrap_or(0)
}

/// The volume's storage capacity in bytes (0 without one).
pub fn volume_capacity(volume: &PersistentVolume) -> i64 {
    volume
        .spec
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .and_then(|q| parse_units(&q.0))
        .unwrap_or(0)
}

/// Whether the claim's and the volume's `volumeMode` differ (unset is `Filesystem`).
pub fn volume_mode_mismatch(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    let mode = |m: Option<&String>| m.map(String::as_str).unwrap_or("Filesystem").to_string();
    mode(claim.spec.as_ref().and_then(|s| s.volume_mode.as_ref()))
        != mode(volume.spec.as_ref().and_then(|s| s.volume_mode.as_ref()))
}

/// Whether the volume offers every access mode the claim asks for.
pub fn access_modes_satisfied(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    let offered: HashSet<&str> = volume_access_modes(volume).collect();
    claim
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_ref())
        .into_iter()
        .flatten()
        .all(|m| offered.contains(m.as_str()))
}

/// The volume's access modes.
pub fn volume_access_modes(volume: &PersistentVolume) -> impl Iterator<Item = &str> {
    volume
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_ref())
        .into_iter()
        .flatten()
        .map(|m| m.as_str())
}

/// Whether the volume is pre-bound or bound to this claim: same namespace and name, and the
/// same uid when the volume names one.
pub fn is_volume_bound_to_claim(volume: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(r) = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else { return false };
    if r.name.as_deref() != claim.metadata.name.as_deref()
        || r.namespace.as_deref() != claim.metadata.namespace.as_deref()
    {
        return false;
    }
    let uid = r.uid.as_deref().unwrap_or("");
    uid.is_empty() || Some(uid) == claim.metadata.uid.as_deref()
}

/// Whether a node with these labels may use the volume: its required node affinity (if any)
/// matches them, as upstream's `CheckNodeAffinity` (labels only).
pub fn node_affinity_matches(volume: &PersistentVolume, labels: &BTreeMap<String, String>) -> bool {
    let required = volume
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref());
    match required {
        None => true,
        Some(required) => node_selector::matches_required(None, Some(required), labels, ""),
    }
}

/// A reference to the claim, as `claimRef` holds it.
pub fn claim_reference(claim: &PersistentVolumeClaim) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("PersistentVolumeClaim".into()),
        namespace: claim.metadata.namespace.clone(),
        name: claim.metadata.name.clone(),
        uid: claim.metadata.uid.clone(),
        resource_version: claim.metadata.resource_version.clone(),
        ..ObjectReference::default()
    }
}

/// The volume bound to the claim (`claimRef` to it, and `bound-by-controller` when the
/// binding is not the user's pre-binding), or `None` when it already is.
pub fn bind_volume_to_claim(
    volume: &PersistentVolume,
    claim: &PersistentVolumeClaim,
) -> Option<PersistentVolume> {
    let set_by_controller = !is_volume_bound_to_claim(volume, claim);
    let mut clone = volume.clone();
    let mut dirty = false;
    let current = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
    let same = current.is_some_and(|r| {
        r.name == claim.metadata.name
            && r.namespace == claim.metadata.namespace
            && r.uid == claim.metadata.uid
    });
    if !same {
        clone.spec.get_or_insert_with(PersistentVolumeSpec::default).claim_ref =
            Some(claim_reference(claim));
        dirty = true;
    }
    let annotations = clone.metadata.annotations.get_or_insert_with(BTreeMap::new);
    if set_by_controller && !annotations.contains_key(ANN_BOUND_BY_CONTROLLER) {
        annotations.insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
        dirty = true;
    }
    if annotations.is_empty() {
        clone.metadata.annotations = None;
    }
    dirty.then_some(clone)
}

/// The claim's `spec.selector` as a label selector (`None` without one; a selector the API
/// server should have refused matches nothing).
fn claim_selector(claim: &PersistentVolumeClaim) -> Option<LabelSelector> {
    let selector = claim.spec.as_ref()?.selector.as_ref()?;
    let value = serde_json::to_value(selector).ok()?;
    Some(LabelSelector::from_api(&value).unwrap_or_else(|_| LabelSelector::nothing()))
}

/// The best volume for the claim among `volumes`, as upstream's `FindMatchingVolume`: a
/// volume pre-bound to the claim (big enough) wins; otherwise the smallest Available,
/// unclaimed volume of the claim's class, volume mode and (for the scheduler) access modes
/// and node affinity, whose labels the claim's selector matches and that is big enough.
///
/// `node_labels` is given by the scheduler only: then the volume's node affinity must match
/// the node, and a pre-bound volume that does not match means no volume at all.
/// `delay_binding` is the binder's view of a WaitForFirstConsumer claim: only pre-bound
/// volumes are returned, the scheduler binds the rest. `excluded` are volumes already chosen
/// for other claims of the same pod.
pub fn find_matching_volume<'a, V: Borrow<PersistentVolume>>(
    claim: &PersistentVolumeClaim,
    volumes: &'a [V],
    node_labels: Option<&BTreeMap<String, String>>,
    excluded: &HashSet<String>,
    delay_binding: bool,
) -> Option<&'a V> {
    let requested = claim_request(claim);
    let class = claim_class(claim);
    let selector = claim_selector(claim);
    let mut smallest: Option<(&V, i64)> = None;
    for candidate in volumes {
        let volume = candidate.borrow();
        let name = volume.metadata.name.as_deref().unwrap_or("");
        if excluded.contains(name) || volume_mode_mismatch(claim, volume) {
            continue;
        }
        if volume.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let capacity = volume_capacity(volume);
        let affinity_ok = node_labels.is_none_or(|labels| node_affinity_matches(volume, labels));
        if is_volume_bound_to_claim(volume, claim) {
            if capacity < requested {
                continue;
            }
            return affinity_ok.then_some(candidate);
        }
        if node_labels.is_none() && delay_binding {
            continue;
        }
        let phase = volume.status.as_ref().and_then(|s| s.phase.as_deref());
        if phase != Some("Available") || volume.spec.as_ref().is_some_and(|s| s.claim_ref.is_some())
        {
            continue;
        }
        let labels = volume.metadata.labels.clone().unwrap_or_default();
        if selector.as_ref().is_some_and(|s| !s.matches(&labels)) {
            continue;
        }
        if volume_class(volume) != class || !affinity_ok {
            continue;
        }
        if node_labels.is_some() && !access_modes_satisfied(claim, volume) {
            continue;
        }
        if capacity >= requested && smallest.is_none_or(|(_, size)| size > capacity) {
            smallest = Some((candidate, capacity));
        }
    }
    smallest.map(|(v, _)| v)
}

/// The binder's search (upstream's `findBestMatchForClaim`): volumes are grouped by their
/// set of access modes, and the groups that offer every mode the claim asks for are tried
/// from the fewest modes up, so a claim gets the least capable volume that serves it.
pub fn find_best_match_for_claim<'a, V: Borrow<PersistentVolume>>(
    claim: &PersistentVolumeClaim,
    volumes: &'a [V],
    delay_binding: bool,
) -> Option<&'a V> {
    let mut groups: Vec<(Vec<String>, Vec<&'a V>)> = Vec::new();
    for v in volumes {
        let mut modes: Vec<String> = volume_access_modes(v.borrow()).map(String::from).collect();
        modes.sort();
        modes.dedup();
        if !access_modes_satisfied(claim, v.borrow()) {
            continue;
        }
        match groups.iter_mut().find(|(m, _)| *m == modes) {
            Some((_, list)) => list.push(v),
            None => groups.push((modes, vec![v])),
        }
    }
    groups.sort_by_key(|(modes, _)| modes.len());
    for (_, group) in groups {
        let refs: Vec<&PersistentVolume> = group.iter().map(|v| (*v).borrow()).collect();
        if let Some(found) =
            find_matching_volume(claim, &refs, None, &HashSet::new(), delay_binding)
        {
            let name = found.metadata.name.as_deref();
            return group.into_iter().find(|v| (*v).borrow().metadata.name.as_deref() == name);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(spec: serde_json::Value) -> PersistentVolumeClaim {
        serde_json::from_value(json!({
            "metadata": {"name": "data", "namespace": "app", "uid": "c-1"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn volume(name: &str, size: &str, extra: serde_json::Value) -> PersistentVolume {
        let mut pv = json!({
            "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"]},
            "status": {"phase": "Available"},
        });
        for (k, v) in extra.as_object().unwrap() {
            match k.as_str() {
                "labels" | "annotations" => pv["metadata"][k] = v.clone(),
                "phase" => pv["status"]["phase"] = v.clone(),
                _ => pv["spec"][k] = v.clone(),
            }
        }
        serde_json::from_value(pv).unwrap()
    }

    fn names<V: Borrow<PersistentVolume>>(v: Option<&V>) -> Option<&str> {
        v.map(|v| v.borrow().metadata.name.as_deref().unwrap())
    }

    fn request(size: &str) -> serde_json::Value {
        json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
               "storageClassName": ""})
    }

    #[test]
    fn the_smallest_fitting_volume_of_the_class_wins() {
        let volumes = vec![
            volume("big", "10Gi", json!({})),
            volume("small", "1Gi", json!({})),
            volume("fits", "2Gi", json!({})),
            volume("other-class", "2Gi", json!({"storageClassName": "fast"})),
            volume("bound", "2Gi", json!({"claimRef": {"namespace": "x", "name": "y"}})),
            volume("released", "2Gi", json!({"phase": "Released"})),
            volume("block", "2Gi", json!({"volumeMode": "Block"})),
        ];
        let c = claim(request("1500Mi"));
        let none = HashSet::new();
        assert_eq!(names(find_matching_volume(&c, &volumes, None, &none, false)), Some("fits"));
        let excluded: HashSet<String> = ["fits".to_string()].into();
        assert_eq!(names(find_matching_volume(&c, &volumes, None, &excluded, false)), Some("big"));
        // A WaitForFirstConsumer claim is left to the scheduler by the binder.
        assert_eq!(names(find_matching_volume(&c, &volumes, None, &none, true)), None);
        let fast = claim(json!({"resources": {"requests": {"storage": "1Gi"}},
                                "storageClassName": "fast"}));
        assert_eq!(
            names(find_matching_volume(&fast, &volumes, None, &none, false)),
            Some("other-class")
        );
    }

    #[test]
    fn selectors_pre_binding_and_node_affinity() {
        let affinity = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}});
        let volumes = vec![
            volume("plain", "1Gi", json!({})),
            volume("ssd", "5Gi", json!({"labels": {"disk": "ssd"}})),
            volume("on-n1", "1Gi", json!({"nodeAffinity": affinity, "labels": {"disk": "ssd"}})),
        ];
        let none = HashSet::new();
        let mut spec = request("1Gi");
        spec["selector"] = json!({"matchLabels": {"disk": "ssd"}});
        let c = claim(spec);
        assert_eq!(names(find_matching_volume(&c, &volumes, None, &none, false)), Some("on-n1"));
        let n2: BTreeMap<String, String> =
            [("kubernetes.io/hostname".to_string(), "n2".to_string())].into();
        assert_eq!(names(find_matching_volume(&c, &volumes, Some(&n2), &none, true)), Some("ssd"));

        // Pre-bound to this claim: chosen even when delayed, unless too small.
        let pre = volume(
            "reserved",
            "3Gi",
            json!({"claimRef": {"namespace": "app", "name": "data"},
                                                  "phase": "Available"}),
        );
        let c = claim(request("2Gi"));
        let list = vec![volume("plain", "2Gi", json!({})), pre.clone()];
        assert_eq!(names(find_matching_volume(&c, &list, None, &none, true)), Some("reserved"));
        assert_eq!(
            names(find_matching_volume(&claim(request("4Gi")), &list, None, &none, false)),
            None
        );
        // ...but not when bound to another claim of that name (another uid).
        let mut other = pre;
        other.spec.as_mut().unwrap().claim_ref.as_mut().unwrap().uid = Some("old".into());
        assert!(!is_volume_bound_to_claim(&other, &c));
    }

    #[test]
    fn the_binder_prefers_the_fewest_access_modes() {
        let volumes = vec![
            volume("rwx", "1Gi", json!({"accessModes": ["ReadWriteOnce", "ReadWriteMany"]})),
            volume("rwo", "5Gi", json!({})),
            volume("rox", "1Gi", json!({"accessModes": ["ReadOnlyMany"]})),
        ];
        let c = claim(request("1Gi"));
        assert_eq!(names(find_best_match_for_claim(&c, &volumes, false)), Some("rwo"));
        let mut spec = request("1Gi");
        spec["accessModes"] = json!(["ReadWriteMany"]);
        assert_eq!(names(find_best_match_for_claim(&claim(spec), &volumes, false)), Some("rwx"));
    }

    #[test]
    fn binding_a_volume_marks_who_bound_it() {
        let c = claim(request("1Gi"));
        let free = volume("pv", "1Gi", json!({}));
        let bound = bind_volume_to_claim(&free, &c).unwrap();
        let r = bound.spec.as_ref().unwrap().claim_ref.as_ref().unwrap();
        assert_eq!((r.name.as_deref(), r.uid.as_deref()), (Some("data"), Some("c-1")));
        assert_eq!(r.kind.as_deref(), Some("PersistentVolumeClaim"));
        assert!(has_annotation(bound.metadata.annotations.as_ref(), ANN_BOUND_BY_CONTROLLER));
        assert!(bind_volume_to_claim(&bound, &c).is_none(), "already bound");
        // The user's pre-binding gets the uid, not the annotation.
        let pre = volume("pv", "1Gi", json!({"claimRef": {"namespace": "app", "name": "data"}}));
        let bound = bind_volume_to_claim(&pre, &c).unwrap();
        assert_eq!(bound.spec.unwrap().claim_ref.unwrap().uid.as_deref(), Some("c-1"));
        assert!(bound.metadata.annotations.is_none());
    }

    #[test]
    fn classes_and_defaults() {
        let mut c = claim(json!({}));
        assert!(!claim_has_class(&c));
        assert_eq!(claim_class(&c), "");
        c.spec.as_mut().unwrap().storage_class_name = Some(String::new());
        assert!(claim_has_class(&c));
        c.metadata.annotations = Some([(ANN_BETA_STORAGE_CLASS.into(), "old".into())].into());
        assert_eq!(claim_class(&c), "old");
        let yes: BTreeMap<String, String> =
            [(ANN_BETA_IS_DEFAULT_CLASS.into(), "true".into())].into();
        assert!(is_default_class(Some(&yes)));
        assert!(!is_default_class(None));
        assert_eq!(
            pick_default_class([
                ("b", Some(5)),
                ("a", Some(5)),
                ("new", Some(9)),
                ("old", Some(1))
            ]),
            Some("new")
        );
        assert_eq!(pick_default_class([("b", Some(5)), ("a", Some(5))]), Some("a"));
        assert_eq!(pick_default_class(std::iter::empty()), None);
        let class = |name: &str, created: &str, default: &str| {
            json!({"metadata": {"name": name, "creationTimestamp": created,
                                "annotations": {ANN_IS_DEFAULT_CLASS: default}}})
        };
        let classes = [
            class("old", "2024-01-01T00:00:00Z", "true"),
            class("newer", "2024-06-01T00:00:00Z", "true"),
            class("newest-not-default", "2025-01-01T00:00:00Z", "false"),
        ];
        assert_eq!(default_class_of(&classes).as_deref(), Some("newer"));
        assert_eq!(default_class_of(&classes[2..]), None);
    }
}
