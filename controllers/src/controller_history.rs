//! ControllerRevision history, shared by the DaemonSet and StatefulSet controllers: one
//! mechanism, as upstream's `controller/history` package with the two controllers' use of it.
//!
//! A revision snapshots an owner's pod template as the strategic merge patch that restores it,
//! `{"spec":{"template":{...,"$patch":"replace"}}}` ([`template_data`]), which is exactly what
//! `kubectl rollout undo` applies to the owner and what `kubectl rollout history` prints. Each
//! revision carries the template's labels (so the owner's selector finds it), the owner's
//! annotations (`kubernetes.io/change-cause` shows in `rollout history`), a controller reference
//! to the owner, a `revision` number, and is named `<owner>-<hash>` ([`hash`],
//! [`revision_name`]), the hash also in its `controller-revision-hash` label.
//!
//! Start at [`sync_current`]: each sync of an owner claims its revisions ([`claim`]), then finds
//! the revision equal to the current template or makes it. A revision equal to the template but
//! older than others (a rollback) gets the next number ([`find_current`]); a new one is created,
//! a name clash with different data bumping the owner's `collisionCount` ([`create`]). After
//! the owner's pods were handled, [`stale`] picks the revisions beyond `revisionHistoryLimit`
//! that no pod and no current revision uses, oldest first, and [`delete`] removes them.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::serde::de::DeserializeOwned;
use k8s_openapi::NamespaceResourceScope;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::Resource;
use rkube_apis::selectors::LabelSelector;
use rkube_runtime::store::Store;
use serde_json::{json, Map, Value};

use crate::controller_ref::{self, controller_of, ClaimError};
use crate::pod_events::PodOwners;
use rkube_runtime::informer::Change;

/// The label naming a revision's hash (on revisions, and on the pods made from them).
pub const REVISION_HASH_LABEL: &str = "controller-revision-hash";

/// `revisionHistoryLimit` when the owner does not say (the API's default).
pub const DEFAULT_HISTORY_LIMIT: i32 = 10;

/// The longest owner name kept in a revision name, so that `<owner>-<hash>` stays a valid
/// object name (upstream's limit).
const MAX_NAME_PREFIX: usize = 223;

/// Creates attempted with ever higher collision counts before giving up on one sync.
const MAX_COLLISIONS: usize = 100;

/// Upstream's "safe" alphabet: no vowels (no words in names) and no look-alike characters.
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
const FNV32_OFFSET: u32 = 0x811c_9dc5;
const FNV32_PRIME: u32 = 0x0100_0193;

/// The data of a revision of `template`: the strategic merge patch that puts it back in place
/// of an owner's template, keys sorted at every level (as Go writes maps), so equal templates
/// give equal bytes.
pub fn template_data(template: &PodTemplateSpec) -> Value {
    // Serializing a k8s-openapi struct cannot fail (no non-string map keys).
    let mut template = serde_json::to_value(template).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut template {
        // Go writes an unset creation time as null: with it, the data is byte for byte what
        // kubectl computes from the owner, so `rollout undo` to the current revision is
        // recognised and skipped.
        let metadata = map.entry("metadata").or_insert_with(|| json!({}));
        if let Value::Object(metadata) = metadata {
            metadata.entry("creationTimestamp").or_insert(Value::Null);
        }
        map.insert("$patch".into(), json!("replace"));
    }
    canonical(json!({"spec": {"template": template}}))
}

/// The template a revision's data restores (upstream's `ApplyRevision` for the template, the
/// only thing a revision holds); `None` when the data is not such a patch.
pub fn template_from_data(data: &Value) -> Option<PodTemplateSpec> {
    let mut template = data.get("spec")?.get("template")?.clone();
    template.as_object_mut()?.remove("$patch");
    serde_json::from_value(template).ok()
}

/// The template `revision` restores.
pub fn template_of(revision: &ControllerRevision) -> Option<PodTemplateSpec> {
    template_from_data(&revision.data.as_ref()?.0)
}

/// `value` with every object's keys in sorted order.
fn canonical(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries.into_iter().map(|(k, v)| (k, canonical(v))).collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

/// FNV-1a, 32 bits, continuing from `hash`.
fn fnv32a(hash: u32, bytes: &[u8]) -> u32 {
    bytes.iter().fold(hash, |h, b| (h ^ u32::from(*b)).wrapping_mul(FNV32_PRIME))
}

/// Maps each byte of `s` into the safe alphabet (upstream's `rand.SafeEncodeString`).
fn safe_encode(s: &str) -> String {
    s.bytes().map(|b| char::from(ALPHABET[usize::from(b) % ALPHABET.len()])).collect()
}

/// The hash naming a revision with `data`, as upstream's `HashControllerRevision`: FNV-32a
/// over the data's JSON (keys sorted) and the owner's collision count in decimal, the sum
/// written in decimal and mapped into the safe alphabet.
pub fn hash(data: &Value, collision_count: i32) -> String {
    let bytes = serde_json::to_vec(&canonical(data.clone())).unwrap_or_default();
    let sum = fnv32a(fnv32a(FNV32_OFFSET, &bytes), collision_count.to_string().as_bytes());
    safe_encode(&sum.to_string())
}

/// `<owner>-<hash>`, the owner's name cut to 223 characters.
pub fn revision_name(owner: &str, hash: &str) -> String {
    let mut end = owner.len().min(MAX_NAME_PREFIX);
    while !owner.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}-{hash}", &owner[..end])
}

/// A revision's hash: its `controller-revision-hash` label, else (a revision someone else made)
/// its name.
pub fn revision_hash(revision: &ControllerRevision) -> String {
    revision
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(REVISION_HASH_LABEL))
        .cloned()
        .unwrap_or_else(|| revision.metadata.name.clone().unwrap_or_default())
}

/// Whether `revision` holds `data` (compared as JSON, so key order does not matter).
pub fn holds(revision: &ControllerRevision, data: &Value) -> bool {
    revision.data.as_ref().is_some_and(|d| d.0 == *data)
}

/// The revision number after every one in `revisions` (1 for the first).
pub fn next_revision(revisions: &[Arc<ControllerRevision>]) -> i64 {
    revisions.iter().map(|r| r.revision).max().unwrap_or(0) + 1
}

/// Sorts revisions oldest first: by number, then creation time, then name (upstream's order).
pub fn sort(revisions: &mut [Arc<ControllerRevision>]) {
    revisions.sort_by(|a, b| {
        let created = |r: &ControllerRevision| r.metadata.creation_timestamp.as_ref().map(|t| t.0);
        a.revision
            .cmp(&b.revision)
            .then_with(|| created(a).cmp(&created(b)))
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
}

/// A new revision of `owner`'s `template` numbered `revision`, named for its data and
/// `collision_count`; labelled as the template, annotated as the owner, controlled by it.
pub fn new_revision<O: Resource<DynamicType = ()>>(
    owner: &O,
    template: &PodTemplateSpec,
    revision: i64,
    collision_count: i32,
) -> ControllerRevision {
    let data = template_data(template);
    let hash = hash(&data, collision_count);
    let meta = owner.meta();
    let mut labels: BTreeMap<String, String> =
        template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
    labels.insert(REVISION_HASH_LABEL.into(), hash.clone());
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(revision_name(meta.name.as_deref().unwrap_or(""), &hash)),
            namespace: meta.namespace.clone(),
            labels: Some(labels),
            annotations: meta.annotations.clone().filter(|a| !a.is_empty()),
            owner_references: Some(vec![controller_ref::owner_reference(owner)]),
            ..ObjectMeta::default()
        },
        data: Some(RawExtension(data)),
        revision,
    }
}

/// Which revision is the current template's, decided from the owner's revisions (sorted by
/// [`sort`]) and the template's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Current {
    /// `revisions[index]` holds the template and is the newest: nothing to do.
    Found(usize),
    /// `revisions[index]` holds the template but others are newer (a rollback): it gets
    /// number `revision`, after theirs.
    Renumber { index: usize, revision: i64 },
    /// No revision holds the template: make one numbered `revision`.
    Create { revision: i64 },
}

/// Finds the revision equal to the template's `data` among `revisions` (sorted); of several
/// equal ones, the newest counts.
pub fn find_current(revisions: &[Arc<ControllerRevision>], data: &Value) -> Current {
    let Some(index) = revisions.iter().rposition(|r| holds(r, data)) else {
        return Current::Create { revision: next_revision(revisions) };
    };
    let newest_other =
        revisions.iter().filter(|r| !holds(r, data)).map(|r| r.revision).max().unwrap_or(0);
    if revisions[index].revision > newest_other {
        Current::Found(index)
    } else {
        Current::Renumber { index, revision: newest_other + 1 }
    }
}

/// The revisions to delete so that at most `limit` old ones remain: of those `live` does not
/// keep (the current ones, those pods still run), the oldest first. `revisions` are sorted.
pub fn stale(
    revisions: &[Arc<ControllerRevision>],
    live: impl Fn(&ControllerRevision) -> bool,
    limit: i32,
) -> Vec<Arc<ControllerRevision>> {
    let historic: Vec<_> = revisions.iter().filter(|r| !live(r)).cloned().collect();
    let limit = usize::try_from(limit).unwrap_or(0);
    let excess = historic.len().saturating_sub(limit);
    historic.into_iter().take(excess).collect()
}

/// The revisions of `owner`: those in its namespace that it controls and its selector matches,
/// after adopting matching orphans and releasing owned ones it no longer matches (as
/// upstream's `ClaimControllerRevisions`). Sorted oldest first.
pub async fn claim<O>(
    owner_api: &Api<O>,
    owner: &O,
    revisions: &Store<ControllerRevision>,
    api: &Api<ControllerRevision>,
    selector: &LabelSelector,
) -> Result<Vec<Arc<ControllerRevision>>, ClaimError>
where
    O: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let namespace = owner.meta().namespace.as_deref().unwrap_or("");
    let candidates = revisions.in_namespace(namespace);
    let empty = BTreeMap::new();
    let mut claimed = controller_ref::claim(owner_api, owner, api, candidates, |r| {
        selector.matches(r.metadata.labels.as_ref().unwrap_or(&empty))
    })
    .await?;
    sort(&mut claimed);
    Ok(claimed)
}

/// The owner's revisions after [`sync_current`], and which is current.
#[derive(Debug, Clone)]
pub struct Revisions {
    /// Every revision of the owner, sorted oldest first, the current one included.
    pub all: Vec<Arc<ControllerRevision>>,
    /// The revision of the owner's current template (a StatefulSet's update revision).
    pub current: Arc<ControllerRevision>,
    /// The owner's collision count, raised if a new revision's name was taken.
    pub collision_count: i32,
}

/// Makes sure the owner's current `template` has a revision, newest of all: finds it among
/// `owned` (the owner's revisions, from [`claim`]), renumbers it after a rollback, or creates
/// it, bumping `collision_count` past names taken by different data.
pub async fn sync_current<O>(
    api: &Api<ControllerRevision>,
    owner: &O,
    template: &PodTemplateSpec,
    owned: Vec<Arc<ControllerRevision>>,
    collision_count: i32,
) -> Result<Revisions, kube::Error>
where
    O: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
{
    let mut all = owned;
    sort(&mut all);
    let data = template_data(template);
    let mut collision_count = collision_count;
    let current = match find_current(&all, &data) {
        Current::Found(index) => all[index].clone(),
        Current::Renumber { index, revision } => {
            let name = all[index].metadata.name.clone().unwrap_or_default();
            tracing::info!(revision = name, number = revision, "revision is current again");
            let renumbered = Arc::new(renumber(api, &name, revision).await?);
            all[index] = renumbered.clone();
            renumbered
        }
        Current::Create { revision } => {
            let wanted = new_revision(owner, template, revision, collision_count);
            let owner_uid = owner.meta().uid.clone().unwrap_or_default();
            let created = Arc::new(create(api, wanted, &owner_uid, &mut collision_count).await?);
            all.retain(|r| r.metadata.name != created.metadata.name);
            all.push(created.clone());
            created
        }
    };
    sort(&mut all);
    Ok(Revisions { all, current, collision_count })
}

/// Creates `revision`; a name already taken by the same data (not controlled by another
/// owner) is that revision, one taken by different data raises `collision_count` and tries the
/// name that gives, as upstream's `CreateControllerRevision`.
pub async fn create(
    api: &Api<ControllerRevision>,
    revision: ControllerRevision,
    owner_uid: &str,
    collision_count: &mut i32,
) -> Result<ControllerRevision, kube::Error> {
    let data = revision.data.as_ref().map(|d| d.0.clone()).unwrap_or(Value::Null);
    let owner = revision
        .metadata
        .owner_references
        .as_ref()
        .and_then(|refs| refs.first())
        .map(|r| r.name.clone())
        .unwrap_or_default();
    let mut revision = revision;
    let mut attempts = 0;
    loop {
        let hash = hash(&data, *collision_count);
        let name = revision_name(&owner, &hash);
        revision.metadata.name = Some(name.clone());
        revision
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(REVISION_HASH_LABEL.into(), hash);
        match api.create(&PostParams::default(), &revision).await {
            Ok(created) => {
                tracing::debug!(revision = name, "created revision");
                return Ok(created);
            }
            Err(kube::Error::Api(e)) if e.code == 409 && attempts < MAX_COLLISIONS => {
                attempts += 1;
                let existing = api.get(&name).await?;
                let controller = controller_of(&existing.metadata).map(|c| c.uid.as_str());
                if holds(&existing, &data) && controller.is_none_or(|uid| uid == owner_uid) {
                    return Ok(existing);
                }
                tracing::info!(
                    revision = name,
                    "revision name taken by other data; raising the collision count"
                );
                *collision_count = collision_count.saturating_add(1);
            }
            Err(e) => return Err(e),
        }
    }
}

/// Gives the revision `name` the number `revision` (revisions are immutable but for it).
pub async fn renumber(
    api: &Api<ControllerRevision>,
    name: &str,
    revision: i64,
) -> Result<ControllerRevision, kube::Error> {
    api.patch(name, &PatchParams::default(), &Patch::Merge(&json!({"revision": revision}))).await
}

/// Deletes `doomed`; one already gone is fine.
pub async fn delete(
    api: &Api<ControllerRevision>,
    doomed: &[Arc<ControllerRevision>],
) -> Result<(), kube::Error> {
    for revision in doomed {
        let name = revision.metadata.name.as_deref().unwrap_or("");
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => tracing::debug!(revision = name, "deleted old revision"),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Turns ControllerRevision changes into owner keys, as upstream's revision handlers do: a
/// revision's controller is queued (also after the revision is gone, which is why each one's
/// controller is remembered), an orphan wakes the owners whose selector matches it.
#[derive(Debug, Default)]
pub struct RevisionEvents {
    owners: HashMap<(String, String), Option<OwnerReference>>,
}

impl RevisionEvents {
    pub fn change(
        &mut self,
        revisions: &Store<ControllerRevision>,
        change: Change,
        owners: &impl PodOwners,
    ) {
        let Change::Object { namespace, name } = change else { return };
        let at = (namespace.unwrap_or_default(), name);
        let Some(revision) = revisions.get(&ObjectRef::new(&at.1).within(&at.0)) else {
            let owner = self.owners.remove(&at).flatten();
            if let Some(key) = owner.and_then(|c| owners.resolve(&at.0, &c)) {
                owners.enqueue(key);
            }
            return;
        };
        let controller = controller_of(&revision.metadata).cloned();
        match &controller {
            Some(c) => {
                if let Some(key) = owners.resolve(&at.0, c) {
                    owners.enqueue(key);
                }
            }
            None => {
                let labels = revision.metadata.labels.clone().unwrap_or_default();
                owners.enqueue_matching(&at.0, &labels);
            }
        }
        self.owners.insert(at, controller);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::DaemonSet;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    fn template(image: &str) -> PodTemplateSpec {
        serde_json::from_value(json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": image}]}
        }))
        .unwrap()
    }

    fn revision(name: &str, number: i64, image: &str) -> Arc<ControllerRevision> {
        Arc::new(ControllerRevision {
            metadata: ObjectMeta { name: Some(name.into()), ..ObjectMeta::default() },
            data: Some(RawExtension(template_data(&template(image)))),
            revision: number,
        })
    }

    #[test]
    fn data_is_a_replace_patch_of_the_template_with_sorted_keys() {
        let data = template_data(&template("nginx"));
        assert_eq!(
            serde_json::to_string(&data).unwrap(),
            r#"{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"web"}},"spec":{"containers":[{"image":"nginx","name":"c"}]}}}}"#
        );
        assert_eq!(template_from_data(&data), Some(template("nginx")));
        assert_eq!(template_from_data(&json!({"spec": {}})), None);
    }

    #[test]
    fn equal_data_is_compared_regardless_of_key_order() {
        let rev = revision("web-a", 1, "nginx");
        let mut reordered = Map::new();
        let data = template_data(&template("nginx"));
        // Insertion order reversed: a server that kept another order still matches.
        for (k, v) in data["spec"]["template"].as_object().unwrap().iter().rev() {
            reordered.insert(k.clone(), v.clone());
        }
        assert!(holds(&rev, &json!({"spec": {"template": reordered}})));
        assert!(!holds(&rev, &template_data(&template("httpd"))));
    }

    #[test]
    fn hashes_use_the_safe_alphabet_and_the_collision_count() {
        let data = template_data(&template("nginx"));
        let h0 = hash(&data, 0);
        assert_eq!(h0, hash(&data, 0), "stable");
        assert_ne!(h0, hash(&data, 1));
        assert_ne!(h0, hash(&template_data(&template("httpd")), 0));
        assert!(h0.bytes().all(|b| ALPHABET.contains(&b)), "{h0}");
        // A 32-bit sum has at most 10 decimal digits, one character each.
        assert!((1..=10).contains(&h0.len()));
        // Digits map by their byte value modulo 27: '0' (48) to '4', '6' (54) to 'b'.
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
        assert_eq!(fnv32a(FNV32_OFFSET, b""), 0x811c_9dc5);
        assert_eq!(fnv32a(FNV32_OFFSET, b"a"), 0xe40c_292c);
    }

    #[test]
    fn names_are_owner_dash_hash_with_the_owner_cut() {
        assert_eq!(revision_name("web", "abc"), "web-abc");
        let long = "x".repeat(300);
        assert_eq!(revision_name(&long, "h").len(), 223 + 2);
    }

    #[test]
    fn new_revisions_carry_labels_annotations_and_the_owner() {
        let ds: DaemonSet = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "u1",
                "annotations": {"kubernetes.io/change-cause": "v2"}},
        }))
        .unwrap();
        let rev = new_revision(&ds, &template("nginx"), 3, 0);
        let hash = hash(&template_data(&template("nginx")), 0);
        assert_eq!(rev.metadata.name, Some(format!("web-{hash}")));
        assert_eq!(rev.metadata.namespace.as_deref(), Some("ns"));
        let labels = rev.metadata.labels.clone().unwrap();
        assert_eq!(labels.get("app").map(String::as_str), Some("web"));
        assert_eq!(labels.get(REVISION_HASH_LABEL), Some(&hash));
        assert_eq!(revision_hash(&rev), hash);
        assert_eq!(
            rev.metadata.annotations.as_ref().unwrap().get("kubernetes.io/change-cause").unwrap(),
            "v2"
        );
        let owner = controller_of(&rev.metadata).unwrap();
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("DaemonSet", "u1"));
        assert_eq!(rev.revision, 3);
    }

    #[test]
    fn the_current_revision_is_found_renumbered_or_created() {
        let data = |image| template_data(&template(image));
        assert_eq!(find_current(&[], &data("a")), Current::Create { revision: 1 });
        let history = vec![revision("w-1", 1, "a"), revision("w-2", 2, "b")];
        assert_eq!(find_current(&history, &data("b")), Current::Found(1));
        assert_eq!(find_current(&history, &data("c")), Current::Create { revision: 3 });
        // A rollback to "a": its revision becomes the newest.
        assert_eq!(find_current(&history, &data("a")), Current::Renumber { index: 0, revision: 3 });
        // Two equal revisions (a collision): the newer one counts.
        let dup = vec![revision("w-1", 1, "a"), revision("w-2", 2, "b"), revision("w-3", 3, "a")];
        assert_eq!(find_current(&dup, &data("a")), Current::Found(2));
        assert_eq!(next_revision(&dup), 4);
    }

    #[test]
    fn revisions_sort_by_number_then_age_then_name() {
        let at = |s| Some(Time(Timestamp::from_second(s).unwrap()));
        let mut b = (*revision("b", 2, "x")).clone();
        b.metadata.creation_timestamp = at(5);
        let mut a = (*revision("a", 2, "x")).clone();
        a.metadata.creation_timestamp = at(9);
        let mut revs = vec![Arc::new(a), revision("c", 1, "x"), Arc::new(b), revision("d", 2, "x")];
        sort(&mut revs);
        let names: Vec<_> = revs.iter().map(|r| r.metadata.name.clone().unwrap()).collect();
        // No timestamp sorts first, as Go's zero time does.
        assert_eq!(names, ["c", "d", "b", "a"]);
    }

    #[test]
    fn history_is_truncated_oldest_first_keeping_live_revisions() {
        let revs: Vec<_> = (1..=6).map(|n| revision(&format!("r{n}"), n, &n.to_string())).collect();
        let live = |r: &ControllerRevision| matches!(r.metadata.name.as_deref(), Some("r1" | "r6"));
        let names = |v: Vec<Arc<ControllerRevision>>| {
            v.iter().map(|r| r.metadata.name.clone().unwrap()).collect::<Vec<_>>()
        };
        // Historic: r2..r5; keep two.
        assert_eq!(names(stale(&revs, live, 2)), ["r2", "r3"]);
        assert!(stale(&revs, live, 10).is_empty());
        assert_eq!(names(stale(&revs, live, 0)), ["r2", "r3", "r4", "r5"]);
        assert_eq!(names(stale(&revs, |_| false, -1)).len(), 6);
    }
}
