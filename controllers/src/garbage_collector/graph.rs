//! The garbage collector's dependency graph: every object the monitors have seen, keyed by uid,
//! with the owners its `metadata.ownerReferences` name and the dependents that name it.
//!
//! Owners that are referenced but not (yet) seen are *virtual* nodes: placeholders that a
//! worker checks against the API server. The graph is pure bookkeeping; every change it is
//! told about returns the [`Effects`] the controller must act on (which items to check for
//! deletion, which owners to orphan, what to record). The decision about one item, once its
//! owners have been looked up, is [`decide`].

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// Finalizer of an owner whose dependents must be orphaned before it goes.
pub const ORPHAN: &str = "orphan";
/// Finalizer of an owner whose blocking dependents must be deleted before it goes.
pub const FOREGROUND: &str = "foregroundDeletion";

/// Where an object is: an owner reference's coordinates plus a namespace (empty for
/// cluster-scoped objects, and for virtual owners whose scope is not known yet, the namespace
/// of the dependent that referenced them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub namespace: String,
}

impl Identity {
    /// The owner a reference names, as seen from a dependent in `namespace`.
    pub fn of_owner(owner: &OwnerReference, namespace: &str) -> Identity {
        Identity {
            api_version: owner.api_version.clone(),
            kind: owner.kind.clone(),
            name: owner.name.clone(),
            uid: owner.uid.clone(),
            namespace: namespace.to_string(),
        }
    }

    /// Whether `reference` names this object by the same apiVersion, kind, name and uid.
    pub fn same_coordinates(&self, reference: &OwnerReference) -> bool {
        self.uid == reference.uid
            && self.name == reference.name
            && self.kind == reference.kind
            && self.api_version == reference.api_version
    }

    /// Whether an absence verified for `self` also covers `other`: the same coordinates, and
    /// the same namespace unless `self` is cluster-scoped.
    fn covers(&self, other: &Identity) -> bool {
        self.uid == other.uid
            && self.name == other.name
            && self.kind == other.kind
            && self.api_version == other.api_version
            && (self.namespace.is_empty() || self.namespace == other.namespace)
    }
}

/// As upstream prints object references in events and logs.
impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}/{}, namespace: {}, name: {}, uid: {}]",
            self.api_version, self.kind, self.namespace, self.name, self.uid
        )
    }
}

/// What a monitor saw of one object.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    pub identity: Identity,
    pub owners: Vec<OwnerReference>,
    /// `metadata.deletionTimestamp` is set.
    pub being_deleted: bool,
    pub finalizers: Vec<String>,
}

impl Observed {
    fn has(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f == finalizer)
    }
}

/// A change to apply to the graph.
#[derive(Clone, Debug)]
pub enum Change {
    /// A monitor saw the object created or changed.
    Observed(Observed),
    /// A monitor saw the object go.
    Deleted(Identity),
    /// A worker found no object with these coordinates and uid (upstream's virtual delete).
    Absent(Identity),
}

/// What the controller must do after a change.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Items to check now: maybe garbage, or owners waiting for their dependents.
    pub attempt_to_delete: Vec<String>,
    /// Items to check again after a back-off.
    pub attempt_to_delete_later: Vec<String>,
    /// Owners whose dependents must be orphaned.
    pub attempt_to_orphan: Vec<String>,
    /// Owners known not to exist.
    pub absent: Vec<Identity>,
    /// Dependents that name an owner in another namespace: (dependent, owner as named).
    pub invalid_namespace: Vec<(Identity, Identity)>,
}

#[derive(Clone, Debug)]
struct Node {
    identity: Identity,
    owners: Vec<OwnerReference>,
    dependents: BTreeSet<String>,
    /// Seen by a monitor; false for a virtual node.
    observed: bool,
    being_deleted: bool,
    /// Waiting (foreground deletion) for its blocking dependents to go.
    deleting_dependents: bool,
    /// The deletion finalizers as last observed, to notice when a deletion starts.
    orphan: bool,
    foreground: bool,
}

impl Node {
    fn virtual_owner(identity: Identity) -> Node {
        Node {
            identity,
            owners: Vec::new(),
            dependents: BTreeSet::new(),
            observed: false,
            being_deleted: false,
            deleting_dependents: false,
            orphan: false,
            foreground: false,
        }
    }

    fn blocks(&self, owner_uid: &str) -> bool {
        self.owners.iter().any(|r| r.uid == owner_uid && r.block_owner_deletion == Some(true))
    }
}

/// One item as a worker needs to see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub identity: Identity,
    pub observed: bool,
    pub being_deleted: bool,
    pub deleting_dependents: bool,
    pub has_dependents: bool,
    /// Some dependent is itself waiting for its dependents (a possible cycle).
    pub dependent_deleting_dependents: bool,
    /// Dependents whose reference to this item has `blockOwnerDeletion`, with whether each is
    /// itself waiting for its own dependents.
    pub blocking_dependents: Vec<(String, bool)>,
}

/// The graph.
#[derive(Debug, Default)]
pub struct Graph {
    nodes: HashMap<String, Node>,
}

impl Graph {
    pub fn new() -> Graph {
        Graph::default()
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn contains(&self, uid: &str) -> bool {
        self.nodes.contains_key(uid)
    }

    /// Applies one change and says what to do about it.
    pub fn apply(&mut self, change: Change) -> Effects {
        let mut effects = Effects::default();
        match change {
            Change::Observed(object) => self.observe(object, &mut effects),
            Change::Deleted(identity) => self.delete(&identity, false, &mut effects),
            Change::Absent(identity) => self.delete(&identity, true, &mut effects),
        }
        effects
    }

    fn observe(&mut self, object: Observed, effects: &mut Effects) {
        let uid = object.identity.uid.clone();
        if uid.is_empty() {
            return;
        }
        // Whether a monitor saw it being orphaned or deleted in the foreground before (never
        // for a virtual node: that is its first sighting).
        let (was_orphaning, was_foreground) =
            self.nodes.get(&uid).filter(|n| n.observed).map_or((false, false), |n| {
                (n.being_deleted && n.orphan, n.being_deleted && n.foreground)
            });

        if !self.nodes.contains_key(&uid) {
            let node = Node {
                identity: object.identity.clone(),
                owners: object.owners.clone(),
                dependents: BTreeSet::new(),
                observed: true,
                being_deleted: object.being_deleted,
                deleting_dependents: object.being_deleted && object.has(FOREGROUND),
                orphan: false,
                foreground: false,
            };
            self.nodes.insert(uid.clone(), node);
            self.add_dependent_to_owners(&uid, &object.owners, effects);
        } else {
            if !self.nodes[&uid].observed {
                // A virtual node seen for real: dependents that named it differently may
                // have named something that does not exist.
                if self.nodes[&uid].identity != object.identity {
                    let (_, mismatched) = self.partition_dependents(&uid, &object.identity);
                    for dependent in mismatched {
                        let dep = &self.nodes[&dependent];
                        if !object.identity.namespace.is_empty()
                            && dep.identity.namespace != object.identity.namespace
                        {
                            if let Some(named) = invalid_reference(dep, &uid) {
                                effects.invalid_namespace.push((dep.identity.clone(), named));
                            }
                        }
                        effects.attempt_to_delete.push(dependent);
                    }
                }
                let node = self.nodes.get_mut(&uid).expect("node");
                node.identity = object.identity.clone();
                node.observed = true;
            } else {
                // The same object served under another version (discovery changed).
                let node = self.nodes.get_mut(&uid).expect("node");
                node.identity.api_version = object.identity.api_version.clone();
                node.identity.kind = object.identity.kind.clone();
            }
            let old_owners = self.nodes[&uid].owners.clone();
            let (added, removed, changed) = reference_diffs(&old_owners, &object.owners);
            if !added.is_empty() || !removed.is_empty() || !changed.is_empty() {
                // Owners waiting for this dependent may now go.
                for reference in &removed {
                    if reference.block_owner_deletion == Some(true)
                        && self.nodes.contains_key(&reference.uid)
                    {
                        effects.attempt_to_delete.push(reference.uid.clone());
                    }
                }
                for (old, new) in &changed {
                    if old.block_owner_deletion == Some(true)
                        && new.block_owner_deletion != Some(true)
                        && self.nodes.contains_key(&new.uid)
                    {
                        effects.attempt_to_delete.push(new.uid.clone());
                    }
                }
                self.nodes.get_mut(&uid).expect("node").owners = object.owners.clone();
                self.add_dependent_to_owners(&uid, &added, effects);
                self.remove_dependent_from_owners(&uid, &removed);
            }
            if object.being_deleted {
                self.nodes.get_mut(&uid).expect("node").being_deleted = true;
            }
        }

        let node = self.nodes.get_mut(&uid).expect("node");
        node.orphan = object.has(ORPHAN);
        node.foreground = object.has(FOREGROUND);
        if object.being_deleted && object.has(ORPHAN) && !was_orphaning {
            effects.attempt_to_orphan.push(uid);
        } else if object.being_deleted && object.has(FOREGROUND) && !was_foreground {
            node.deleting_dependents = true;
            effects.attempt_to_delete.extend(node.dependents.iter().cloned());
            effects.attempt_to_delete.push(uid);
        }
    }

    /// Adds `dependent` to the dependents of each of `owners`, making virtual nodes for owners
    /// not seen yet (to be checked), and checking the dependent itself when a reference does
    /// not match what is known of its owner.
    fn add_dependent_to_owners(
        &mut self,
        dependent: &str,
        owners: &[OwnerReference],
        effects: &mut Effects,
    ) {
        let dep_identity = self.nodes[dependent].identity.clone();
        let mut suspicious = false;
        for reference in owners {
            match self.nodes.get_mut(&reference.uid) {
                None => {
                    let mut node =
                        Node::virtual_owner(Identity::of_owner(reference, &dep_identity.namespace));
                    node.dependents.insert(dependent.to_string());
                    self.nodes.insert(reference.uid.clone(), node);
                    effects.attempt_to_delete.push(reference.uid.clone());
                }
                Some(owner) => {
                    owner.dependents.insert(dependent.to_string());
                    if suspicious {
                        continue;
                    }
                    let owner_namespaced = !owner.identity.namespace.is_empty();
                    if owner_namespaced && owner.identity.namespace != dep_identity.namespace {
                        // Owners are in the dependent's namespace, or cluster-scoped.
                        if owner.observed {
                            effects.invalid_namespace.push((
                                dep_identity.clone(),
                                Identity::of_owner(reference, &dep_identity.namespace),
                            ));
                        }
                        suspicious = true;
                    } else if !owner.identity.same_coordinates(reference) {
                        suspicious = true;
                    } else if !owner_namespaced
                        && owner.identity.namespace != dep_identity.namespace
                        && !owner.observed
                    {
                        // A virtual cluster-scoped owner may be a namespaced kind wrongly
                        // referenced from a cluster-scoped dependent: check the dependent.
                        suspicious = true;
                    }
                }
            }
        }
        if suspicious {
            effects.attempt_to_delete.push(dependent.to_string());
        }
    }

    fn remove_dependent_from_owners(&mut self, dependent: &str, owners: &[OwnerReference]) {
        for reference in owners {
            if let Some(owner) = self.nodes.get_mut(&reference.uid) {
                owner.dependents.remove(dependent);
            }
        }
    }

    /// The dependents of `uid` whose references match `identity`, and those with a reference
    /// to the same uid that does not (a dependent can be in both).
    fn partition_dependents(&self, uid: &str, identity: &Identity) -> (Vec<String>, Vec<String>) {
        let (mut matching, mut mismatched) = (Vec::new(), Vec::new());
        let Some(node) = self.nodes.get(uid) else { return (matching, mismatched) };
        for dependent in &node.dependents {
            let Some(dep) = self.nodes.get(dependent) else { continue };
            let (mut found_match, mut found_mismatch) = (false, false);
            if !identity.namespace.is_empty() && identity.namespace != dep.identity.namespace {
                found_mismatch = true;
            } else {
                for reference in dep.owners.iter().filter(|r| r.uid == identity.uid) {
                    if identity.same_coordinates(reference) {
                        found_match = true;
                    } else {
                        found_mismatch = true;
                    }
                }
            }
            if found_match {
                matching.push(dependent.clone());
            }
            if found_mismatch {
                mismatched.push(dependent.clone());
            }
        }
        (matching, mismatched)
    }

    /// Another identity the `dependents` give the owner `absent.uid`, not covered by the
    /// verified absence of `absent`: the least one, so the choice is stable.
    fn alternate_identity(&self, dependents: &[String], absent: &Identity) -> Option<Identity> {
        let mut best: Option<Identity> = None;
        for dependent in dependents {
            let Some(dep) = self.nodes.get(dependent) else { continue };
            for reference in dep.owners.iter().filter(|r| r.uid == absent.uid) {
                let mut candidate = Identity::of_owner(reference, &dep.identity.namespace);
                if absent.namespace.is_empty()
                    && candidate.api_version == absent.api_version
                    && candidate.kind == absent.kind
                {
                    // That kind is cluster-scoped: the dependent's namespace is no part of it.
                    candidate.namespace.clear();
                }
                if absent.covers(&candidate) {
                    continue;
                }
                if best.as_ref().is_none_or(|b| candidate < *b) {
                    best = Some(candidate);
                }
            }
        }
        best
    }

    fn delete(&mut self, identity: &Identity, verified_absent: bool, effects: &mut Effects) {
        let uid = identity.uid.clone();
        let Some(node) = self.nodes.get(&uid) else { return };
        if verified_absent {
            if !node.observed {
                // Dependents may disagree on what this owner is: only those that named it
                // as verified lose it.
                let (matching, mismatched) = self.partition_dependents(&uid, identity);
                if !mismatched.is_empty() {
                    if !matching.is_empty() {
                        effects.absent.push(identity.clone());
                        effects.attempt_to_delete.extend(matching);
                    }
                    if identity.covers(&node.identity) {
                        if let Some(other) = self.alternate_identity(&mismatched, identity) {
                            self.nodes.get_mut(&uid).expect("node").identity = other;
                            effects.attempt_to_delete_later.push(uid);
                        }
                    }
                    return;
                }
            } else if !identity.covers(&node.identity) {
                // The object exists under other coordinates: only references with these go.
                let (matching, _) = self.partition_dependents(&uid, identity);
                if !matching.is_empty() {
                    effects.absent.push(identity.clone());
                    effects.attempt_to_delete.extend(matching);
                }
                return;
            }
        }
        let node = self.nodes.remove(&uid).expect("node");
        self.remove_dependent_from_owners(&uid, &node.owners);
        if !node.dependents.is_empty() {
            effects.absent.push(identity.clone());
        }
        effects.attempt_to_delete.extend(node.dependents.iter().cloned());
        // Owners waiting for this dependent may now go.
        for reference in &node.owners {
            if self.nodes.get(&reference.uid).is_some_and(|o| o.deleting_dependents) {
                effects.attempt_to_delete.push(reference.uid.clone());
            }
        }
    }

    /// The item `uid` as a worker sees it.
    pub fn item(&self, uid: &str) -> Option<Item> {
        let node = self.nodes.get(uid)?;
        let dependents: Vec<&Node> =
            node.dependents.iter().filter_map(|d| self.nodes.get(d)).collect();
        Some(Item {
            identity: node.identity.clone(),
            observed: node.observed,
            being_deleted: node.being_deleted,
            deleting_dependents: node.deleting_dependents,
            has_dependents: !dependents.is_empty(),
            dependent_deleting_dependents: dependents.iter().any(|d| d.deleting_dependents),
            blocking_dependents: dependents
                .iter()
                .filter(|d| d.blocks(uid))
                .map(|d| (d.identity.uid.clone(), d.deleting_dependents))
                .collect(),
        })
    }

    /// The owner `uid` and its dependents, for orphaning.
    pub fn dependents(&self, uid: &str) -> Option<(Identity, Vec<Identity>)> {
        let node = self.nodes.get(uid)?;
        let dependents =
            node.dependents.iter().filter_map(|d| self.nodes.get(d)).map(|d| d.identity.clone());
        Some((node.identity.clone(), dependents.collect()))
    }

    /// Work a periodic resync hands out again: owners waiting for their dependents and
    /// virtual nodes (to check), owners being orphaned.
    pub fn pending(&self) -> (Vec<String>, Vec<String>) {
        let (mut check, mut orphan) = (Vec::new(), Vec::new());
        for (uid, node) in &self.nodes {
            if node.deleting_dependents || !node.observed {
                check.push(uid.clone());
            } else if node.being_deleted && node.orphan {
                orphan.push(uid.clone());
            }
        }
        check.sort();
        orphan.sort();
        (check, orphan)
    }
}

/// The reference of `dependent` to `owner_uid`, as an identity in the dependent's namespace.
fn invalid_reference(dependent: &Node, owner_uid: &str) -> Option<Identity> {
    dependent
        .owners
        .iter()
        .find(|r| r.uid == owner_uid)
        .map(|r| Identity::of_owner(r, &dependent.identity.namespace))
}

/// References added, removed, and changed (old, new), by uid.
type Diffs = (Vec<OwnerReference>, Vec<OwnerReference>, Vec<(OwnerReference, OwnerReference)>);

fn reference_diffs(old: &[OwnerReference], new: &[OwnerReference]) -> Diffs {
    let (mut added, mut removed, mut changed) = (Vec::new(), Vec::new(), Vec::new());
    let old_by_uid: HashMap<&str, &OwnerReference> =
        old.iter().map(|r| (r.uid.as_str(), r)).collect();
    let mut kept = HashSet::new();
    for reference in new {
        match old_by_uid.get(reference.uid.as_str()) {
            Some(previous) => {
                kept.insert(reference.uid.as_str());
                if *previous != reference {
                    changed.push(((*previous).clone(), reference.clone()));
                }
            }
            None => added.push(reference.clone()),
        }
    }
    for reference in old {
        if !kept.contains(reference.uid.as_str()) {
            removed.push(reference.clone());
        }
    }
    (added, removed, changed)
}

/// What is known of one owner of an item after looking it up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerState {
    /// Not there, or another object (uid) under that name.
    Absent,
    /// There, being deleted in the foreground: waiting for its dependents.
    WaitingForDependents,
    /// There.
    Present,
}

/// How to delete an item that has no owner left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    Orphan,
    Background,
    Foreground,
}

/// What to do about an item, given its owners.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nothing: it has owners and none needs attention.
    Keep,
    /// It has a live owner: drop the references (uids) to absent owners and to owners
    /// waiting for their dependents (they must not wait for this one).
    RemoveReferences(Vec<String>),
    /// An owner waits for its dependents and this item has dependents of its own: delete it in
    /// the foreground, first making its references non-blocking when `unblock` (one of its
    /// dependents also waits: a possible cycle).
    DeleteForeground { unblock: bool },
    /// No live owner: delete it, propagating as its finalizers already ask or in the
    /// background.
    Delete(Propagation),
}

/// Upstream's rules: an item with a live owner stays (losing its references to absent or
/// waiting owners); one without is deleted.
pub fn decide(
    owners: &[(OwnerReference, OwnerState)],
    item: &Item,
    finalizers: &[String],
) -> Decision {
    let uids = |state: OwnerState| {
        owners.iter().filter(move |(_, s)| *s == state).map(|(r, _)| r.uid.clone())
    };
    let present = uids(OwnerState::Present).count();
    let absent: Vec<String> = uids(OwnerState::Absent).collect();
    let waiting: Vec<String> = uids(OwnerState::WaitingForDependents).collect();
    if present > 0 {
        if absent.is_empty() && waiting.is_empty() {
            return Decision::Keep;
        }
        return Decision::RemoveReferences(absent.into_iter().chain(waiting).collect());
    }
    if !waiting.is_empty() && item.has_dependents {
        return Decision::DeleteForeground { unblock: item.dependent_deleting_dependents };
    }
    let has = |f: &str| finalizers.iter().any(|x| x == f);
    Decision::Delete(if has(ORPHAN) {
        Propagation::Orphan
    } else if has(FOREGROUND) {
        Propagation::Foreground
    } else {
        Propagation::Background
    })
}

/// Owners known not to exist (a uid never comes back), so dependents need not look them up
/// again; bounded, the oldest forgotten first.
#[derive(Debug)]
pub struct AbsentOwners {
    capacity: usize,
    known: HashSet<Identity>,
    order: VecDeque<Identity>,
}

impl AbsentOwners {
    pub fn new(capacity: usize) -> AbsentOwners {
        AbsentOwners { capacity, known: HashSet::new(), order: VecDeque::new() }
    }

    pub fn add(&mut self, identity: Identity) {
        if self.capacity == 0 || !self.known.insert(identity.clone()) {
            return;
        }
        self.order.push_back(identity);
        while self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.known.remove(&old);
            }
        }
    }

    pub fn contains(&self, identity: &Identity) -> bool {
        self.known.contains(identity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(kind: &str, name: &str, uid: &str, namespace: &str) -> Identity {
        let api_version = if kind == "Deployment" { "apps/v1" } else { "v1" };
        Identity {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            namespace: namespace.into(),
        }
    }

    fn reference(owner: &Identity, block: bool) -> OwnerReference {
        OwnerReference {
            api_version: owner.api_version.clone(),
            kind: owner.kind.clone(),
            name: owner.name.clone(),
            uid: owner.uid.clone(),
            block_owner_deletion: block.then_some(true),
            controller: None,
        }
    }

    fn seen(identity: &Identity, owners: Vec<OwnerReference>) -> Change {
        Change::Observed(Observed { identity: identity.clone(), owners, ..Default::default() })
    }

    fn deleting(identity: &Identity, owners: Vec<OwnerReference>, finalizer: &str) -> Change {
        Change::Observed(Observed {
            identity: identity.clone(),
            owners,
            being_deleted: true,
            finalizers: vec![finalizer.to_string()],
        })
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_deleted_owner_hands_its_dependents_to_the_workers() {
        let mut g = Graph::new();
        let owner = id("ConfigMap", "owner", "u-owner", "default");
        let a = id("ConfigMap", "a", "u-a", "default");
        let b = id("Secret", "b", "u-b", "default");
        assert_eq!(g.apply(seen(&owner, vec![])), Effects::default());
        assert_eq!(g.apply(seen(&a, vec![reference(&owner, false)])), Effects::default());
        assert_eq!(g.apply(seen(&b, vec![reference(&owner, true)])), Effects::default());
        assert_eq!(g.dependents("u-owner").unwrap().1, vec![a.clone(), b.clone()]);

        let effects = g.apply(Change::Deleted(owner.clone()));
        assert_eq!(effects.attempt_to_delete, strings(&["u-a", "u-b"]));
        assert_eq!(effects.absent, vec![owner]);
        assert!(!g.contains("u-owner"));
        // Dependents going: nothing left to do.
        assert_eq!(g.apply(Change::Deleted(a)), Effects::default());
        assert_eq!(g.apply(Change::Deleted(b)), Effects::default());
        assert!(g.is_empty());
    }

    #[test]
    fn an_unseen_owner_is_a_virtual_node_to_check() {
        let mut g = Graph::new();
        let ghost = id("ConfigMap", "ghost", "u-ghost", "default");
        let dep = id("ConfigMap", "dep", "u-dep", "default");
        let effects = g.apply(seen(&dep, vec![reference(&ghost, false)]));
        assert_eq!(effects.attempt_to_delete, strings(&["u-ghost"]));
        let item = g.item("u-ghost").unwrap();
        assert!(!item.observed);
        assert_eq!(item.identity, ghost);
        assert_eq!(g.pending().0, strings(&["u-ghost"]));

        // Verified absent: the virtual node goes, its dependent is checked.
        let effects = g.apply(Change::Absent(ghost.clone()));
        assert_eq!(effects.attempt_to_delete, strings(&["u-dep"]));
        assert_eq!(effects.absent, vec![ghost]);
        assert!(!g.contains("u-ghost"));
    }

    #[test]
    fn a_virtual_node_seen_for_real_becomes_observed() {
        let mut g = Graph::new();
        let owner = id("ConfigMap", "owner", "u-owner", "default");
        let dep = id("ConfigMap", "dep", "u-dep", "default");
        g.apply(seen(&dep, vec![reference(&owner, false)]));
        assert_eq!(g.apply(seen(&owner, vec![])), Effects::default());
        assert!(g.item("u-owner").unwrap().observed);
        assert!(g.pending().0.is_empty());
        // A late "absent" with other coordinates leaves the observed node alone.
        let mut other = owner.clone();
        other.kind = "Secret".into();
        assert_eq!(g.apply(Change::Absent(other)), Effects::default());
        assert!(g.contains("u-owner"));
    }

    #[test]
    fn dependents_that_disagree_about_a_virtual_owner_keep_it() {
        let mut g = Graph::new();
        let as_cm = id("ConfigMap", "x", "u-x", "default");
        let mut as_secret = as_cm.clone();
        as_secret.kind = "Secret".into();
        let d1 = id("ConfigMap", "d1", "u-d1", "default");
        let d2 = id("ConfigMap", "d2", "u-d2", "default");
        g.apply(seen(&d1, vec![reference(&as_cm, false)]));
        // d2 names the same uid differently: d2 is checked too.
        let effects = g.apply(seen(&d2, vec![reference(&as_secret, false)]));
        assert_eq!(effects.attempt_to_delete, strings(&["u-d2"]));

        let effects = g.apply(Change::Absent(as_cm.clone()));
        assert_eq!(effects.attempt_to_delete, strings(&["u-d1"]));
        assert_eq!(effects.absent, vec![as_cm]);
        // The node stays, now as the other identity, checked again later.
        assert_eq!(effects.attempt_to_delete_later, strings(&["u-x"]));
        assert_eq!(g.item("u-x").unwrap().identity, as_secret);

        // d1 is collected (its only owner is absent); then the other identity is absent too.
        g.apply(Change::Deleted(d1));
        let effects = g.apply(Change::Absent(as_secret));
        assert_eq!(effects.attempt_to_delete, strings(&["u-d2"]));
        assert!(!g.contains("u-x"));
    }

    #[test]
    fn a_cluster_scoped_owner_verified_absent_covers_every_namespace() {
        let mut g = Graph::new();
        let role = id("ClusterRole", "r", "u-r", "");
        let d1 = id("ConfigMap", "d1", "u-d1", "a");
        let d2 = id("ConfigMap", "d2", "u-d2", "b");
        g.apply(seen(&d1, vec![reference(&role, false)]));
        g.apply(seen(&d2, vec![reference(&role, false)]));
        // The worker knows ClusterRoles are cluster-scoped: it reports no namespace.
        let effects = g.apply(Change::Absent(role));
        assert_eq!(effects.attempt_to_delete, strings(&["u-d1", "u-d2"]));
        assert!(!g.contains("u-r"));
    }

    #[test]
    fn an_owner_in_another_namespace_is_reported() {
        let mut g = Graph::new();
        let owner = id("ConfigMap", "owner", "u-owner", "a");
        let stray = id("ConfigMap", "stray", "u-stray", "b");
        let role = id("ClusterRole", "role", "u-role", "");
        g.apply(seen(&owner, vec![]));
        let effects = g.apply(seen(&stray, vec![reference(&owner, false)]));
        assert_eq!(effects.attempt_to_delete, strings(&["u-stray"]));
        assert_eq!(
            effects.invalid_namespace,
            vec![(stray, Identity::of_owner(&reference(&owner, false), "b"))]
        );
        // A cluster-scoped dependent of a namespaced owner, too.
        let effects = g.apply(seen(&role, vec![reference(&owner, false)]));
        assert_eq!(effects.attempt_to_delete, strings(&["u-role"]));
        assert_eq!(effects.invalid_namespace.len(), 1);
        assert_eq!(
            effects.invalid_namespace[0].1.to_string(),
            "[v1/ConfigMap, namespace: , name: owner, uid: u-owner]"
        );
    }

    #[test]
    fn a_bad_child_seen_before_its_owner_is_reported_when_the_owner_shows_up() {
        let mut g = Graph::new();
        let owner = id("ConfigMap", "owner", "u-owner", "a");
        let stray = id("ConfigMap", "stray", "u-stray", "b");
        g.apply(seen(&stray, vec![reference(&owner, false)]));
        let effects = g.apply(seen(&owner, vec![]));
        assert_eq!(effects.attempt_to_delete, strings(&["u-stray"]));
        assert_eq!(effects.invalid_namespace.len(), 1);
    }

    #[test]
    fn orphan_deletion_starts_once() {
        let mut g = Graph::new();
        let owner = id("ConfigMap", "owner", "u-owner", "default");
        let dep = id("ConfigMap", "dep", "u-dep", "default");
        g.apply(seen(&owner, vec![]));
        g.apply(seen(&dep, vec![reference(&owner, false)]));
        let effects = g.apply(deleting(&owner, vec![], ORPHAN));
        assert_eq!(effects.attempt_to_orphan, strings(&["u-owner"]));
        assert!(effects.attempt_to_delete.is_empty());
        // The same state again (a relist): no new work; a resync hands it out.
        assert_eq!(g.apply(deleting(&owner, vec![], ORPHAN)), Effects::default());
        assert_eq!(g.pending().1, strings(&["u-owner"]));
        // Seen first while already being orphaned (a restarted controller): orphaned.
        let mut fresh = Graph::new();
        let effects = fresh.apply(deleting(&owner, vec![], ORPHAN));
        assert_eq!(effects.attempt_to_orphan, strings(&["u-owner"]));
    }

    #[test]
    fn foreground_deletion_waits_for_blocking_dependents() {
        let mut g = Graph::new();
        let owner = id("Deployment", "web", "u-web", "default");
        let blocking = id("ConfigMap", "blocking", "u-blocking", "default");
        let free = id("ConfigMap", "free", "u-free", "default");
        g.apply(seen(&owner, vec![]));
        g.apply(seen(&blocking, vec![reference(&owner, true)]));
        g.apply(seen(&free, vec![reference(&owner, false)]));
        let effects = g.apply(deleting(&owner, vec![], FOREGROUND));
        assert_eq!(effects.attempt_to_delete, strings(&["u-blocking", "u-free", "u-web"]));
        let item = g.item("u-web").unwrap();
        assert!(item.deleting_dependents);
        assert_eq!(item.blocking_dependents, vec![("u-blocking".to_string(), false)]);
        assert_eq!(g.pending().0, strings(&["u-web"]));

        // Any dependent going has the waiting owner looked at again.
        let effects = g.apply(Change::Deleted(free));
        assert_eq!(effects.attempt_to_delete, strings(&["u-web"]));
        assert_eq!(g.item("u-web").unwrap().blocking_dependents.len(), 1);
        let effects = g.apply(Change::Deleted(blocking.clone()));
        assert_eq!(effects.attempt_to_delete, strings(&["u-web"]));
        assert!(g.item("u-web").unwrap().blocking_dependents.is_empty());
    }

    #[test]
    fn unblocking_a_reference_wakes_the_waiting_owner() {
        let mut g = Graph::new();
        let owner = id("ConfigMap", "owner", "u-owner", "default");
        let dep = id("ConfigMap", "dep", "u-dep", "default");
        g.apply(seen(&owner, vec![]));
        g.apply(seen(&dep, vec![reference(&owner, true)]));
        g.apply(deleting(&owner, vec![], FOREGROUND));
        let effects = g.apply(seen(&dep, vec![reference(&owner, false)]));
        assert_eq!(effects.attempt_to_delete, strings(&["u-owner"]));
        let effects = g.apply(seen(&dep, vec![]));
        assert!(effects.attempt_to_delete.is_empty(), "a non-blocking reference went");
        assert!(!g.item("u-owner").unwrap().has_dependents);
    }

    #[test]
    fn changed_owner_references_move_the_dependent() {
        let mut g = Graph::new();
        let a = id("ConfigMap", "a", "u-a", "default");
        let b = id("ConfigMap", "b", "u-b", "default");
        let dep = id("ConfigMap", "dep", "u-dep", "default");
        g.apply(seen(&a, vec![]));
        g.apply(seen(&b, vec![]));
        g.apply(seen(&dep, vec![reference(&a, false)]));
        g.apply(seen(&dep, vec![reference(&b, false)]));
        assert!(g.dependents("u-a").unwrap().1.is_empty());
        assert_eq!(g.dependents("u-b").unwrap().1, vec![dep.clone()]);
        // Two owners: deleting one hands the dependent to the workers, which keep it.
        g.apply(seen(&dep, vec![reference(&a, false), reference(&b, false)]));
        let effects = g.apply(Change::Deleted(a));
        assert_eq!(effects.attempt_to_delete, strings(&["u-dep"]));
        assert_eq!(g.dependents("u-b").unwrap().1, vec![dep]);
    }

    #[test]
    fn decisions_follow_upstream() {
        let owner = |uid: &str| OwnerReference { uid: uid.into(), ..Default::default() };
        let item = Item {
            identity: id("ConfigMap", "x", "u-x", "default"),
            observed: true,
            being_deleted: false,
            deleting_dependents: false,
            has_dependents: false,
            dependent_deleting_dependents: false,
            blocking_dependents: vec![],
        };
        use OwnerState::*;
        assert_eq!(decide(&[(owner("a"), Present)], &item, &[]), Decision::Keep);
        assert_eq!(
            decide(
                &[(owner("a"), Present), (owner("b"), Absent), (owner("c"), WaitingForDependents)],
                &item,
                &[]
            ),
            Decision::RemoveReferences(strings(&["b", "c"]))
        );
        assert_eq!(
            decide(&[(owner("a"), Absent)], &item, &[]),
            Decision::Delete(Propagation::Background)
        );
        assert_eq!(
            decide(&[(owner("a"), Absent)], &item, &strings(&[ORPHAN])),
            Decision::Delete(Propagation::Orphan)
        );
        assert_eq!(
            decide(&[(owner("a"), WaitingForDependents)], &item, &[]),
            Decision::Delete(Propagation::Background)
        );
        let parent = Item { has_dependents: true, ..item.clone() };
        assert_eq!(
            decide(&[(owner("a"), WaitingForDependents)], &parent, &[]),
            Decision::DeleteForeground { unblock: false }
        );
        let cycle = Item { dependent_deleting_dependents: true, ..parent };
        assert_eq!(
            decide(&[(owner("a"), WaitingForDependents), (owner("b"), Absent)], &cycle, &[]),
            Decision::DeleteForeground { unblock: true }
        );
        assert_eq!(
            decide(&[(owner("a"), Absent)], &item, &strings(&[FOREGROUND])),
            Decision::Delete(Propagation::Foreground)
        );
    }

    #[test]
    fn absent_owners_are_remembered_up_to_a_bound() {
        let mut cache = AbsentOwners::new(2);
        let a = id("ConfigMap", "a", "u-a", "");
        let b = id("ConfigMap", "b", "u-b", "");
        let c = id("ConfigMap", "c", "u-c", "");
        cache.add(a.clone());
        cache.add(b.clone());
        cache.add(a.clone());
        assert!(cache.contains(&a) && cache.contains(&b));
        cache.add(c.clone());
        assert!(!cache.contains(&a) && cache.contains(&b) && cache.contains(&c));
    }
}
