//! Pod changes as the controllers that own pods see them: what a pod looked like when last
//! seen ([`SeenPod`]), and the add/update/gone diff that upstream's informer handlers get as
//! old and new objects ([`PodEvents`]). The informer only says which pod changed, so the old
//! object is what was remembered from the last look.
//!
//! What a change means is up to the controller ([`PodHandler`]); most read it the same way
//! ([`Owned`] over [`PodOwners`]): creations and deletions observed on the owner's
//! expectations, and the owner named by the controller reference (or, for an orphan, every
//! owner whose selector matches its labels) queued.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::runtime::reflector::ObjectRef;
use rkube_runtime::store::Store;

use crate::controller_ref::controller_of;
use rkube_runtime::expectations::Expectations;
use rkube_runtime::informer::Change;

/// What a pod looked like when last seen, to tell what changed when it changes again.
#[derive(Debug, Clone, PartialEq)]
pub struct SeenPod {
    pub uid: String,
    pub resource_version: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub controller: Option<OwnerReference>,
    pub deleting: bool,
    /// Ready, by the controller's own reading (false when it does not care).
    pub ready: bool,
    /// Carries the controller's finalizer (false when it has none).
    pub finalizer: bool,
}

/// What a controller does with a pod's changes.
pub trait PodHandler {
    /// A pod seen for the first time (or made again under a name whose pod went).
    fn added(&self, namespace: &str, name: &str, pod: &SeenPod);
    /// The same pod changed; only called when its resourceVersion did.
    fn updated(&self, namespace: &str, name: &str, old: &SeenPod, pod: &SeenPod);
    /// The pod is gone from the store (`pod` is how it was last seen).
    fn gone(&self, namespace: &str, name: &str, pod: &SeenPod);
}

/// The pods last seen, by namespace and name, and how to read a pod into a [`SeenPod`].
pub struct PodEvents {
    store: Store<Pod>,
    seen: HashMap<(String, String), SeenPod>,
    ready: fn(&Pod) -> bool,
    finalizer: fn(&Pod) -> bool,
}

impl PodEvents {
    /// Tracks the pods of `store`, neither reading readiness nor a finalizer.
    pub fn new(store: Store<Pod>) -> PodEvents {
        PodEvents { store, seen: HashMap::new(), ready: |_| false, finalizer: |_| false }
    }

    /// Reads [`SeenPod::ready`] with `ready`.
    pub fn with_ready(self, ready: fn(&Pod) -> bool) -> PodEvents {
        PodEvents { ready, ..self }
    }

    /// Reads [`SeenPod::finalizer`] with `finalizer`.
    pub fn with_finalizer(self, finalizer: fn(&Pod) -> bool) -> PodEvents {
        PodEvents { finalizer, ..self }
    }

    fn see(&self, pod: &Pod) -> SeenPod {
        SeenPod {
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            resource_version: pod.metadata.resource_version.clone(),
            labels: pod.metadata.labels.clone().unwrap_or_default(),
            controller: controller_of(&pod.metadata).cloned(),
            deleting: pod.metadata.deletion_timestamp.is_some(),
            ready: (self.ready)(pod),
            finalizer: (self.finalizer)(pod),
        }
    }

    /// Looks the changed pod up in the store and tells `handler` what changed since the last
    /// look.
    pub fn change(&mut self, change: Change, handler: &impl PodHandler) {
        let Change::Object { namespace, name } = change else { return };
        let namespace = namespace.unwrap_or_default();
        let current = self.store.get(&ObjectRef::new(&name).within(&namespace));
        let at = (namespace, name);
        let old = self.seen.remove(&at);
        let Some(current) = current else {
            if let Some(old) = old {
                handler.gone(&at.0, &at.1, &old);
            }
            return;
        };
        let now = self.see(&current);
        match &old {
            Some(old) if old.uid == now.uid => {
                if old.resource_version != now.resource_version {
                    handler.updated(&at.0, &at.1, old, &now);
                }
            }
            Some(old) => {
                // Deleted and made again under the same name between two looks.
                handler.gone(&at.0, &at.1, old);
                handler.added(&at.0, &at.1, &now);
            }
            None => handler.added(&at.0, &at.1, &now),
        }
        self.seen.insert(at, now);
    }
}

/// A controller that owns pods through controller references and awaits their creations and
/// deletions with [`Expectations`], keyed by its owners' `namespace/name`.
pub trait PodOwners {
    fn expectations(&self) -> &Expectations;
    /// The key of the owner `controller` names, if it is one of ours (same kind and uid).
    fn resolve(&self, namespace: &str, controller: &OwnerReference) -> Option<String>;
    fn enqueue(&self, key: String);
    /// Queues the owners that might adopt an orphan with these labels.
    fn enqueue_matching(&self, namespace: &str, labels: &BTreeMap<String, String>);
    /// The pod of the owner `key` just turned ready (the owner was queued already).
    fn became_ready(&self, _namespace: &str, _controller: &OwnerReference, _key: String) {}
}

/// Reads pod changes for a [`PodOwners`].
pub struct Owned<'a, O>(pub &'a O);

impl<O: PodOwners> PodHandler for Owned<'_, O> {
    fn added(&self, namespace: &str, _name: &str, pod: &SeenPod) {
        let owners = self.0;
        match &pod.controller {
            Some(controller) => {
                let Some(key) = owners.resolve(namespace, controller) else { return };
                if pod.deleting {
                    // Seen first already going (e.g. after a restart): not a creation.
                    owners.expectations().deletion_observed(&key);
                } else {
                    owners.expectations().creation_observed(&key);
                }
                owners.enqueue(key);
            }
            None if !pod.deleting => owners.enqueue_matching(namespace, &pod.labels),
            None => {}
        }
    }

    fn updated(&self, namespace: &str, _name: &str, old: &SeenPod, pod: &SeenPod) {
        let owners = self.0;
        if old.controller != pod.controller {
            if let Some(key) = old.controller.as_ref().and_then(|c| owners.resolve(namespace, c)) {
                owners.enqueue(key);
            }
        }
        match &pod.controller {
            Some(controller) => {
                let Some(key) = owners.resolve(namespace, controller) else { return };
                if pod.deleting && !old.deleting {
                    owners.expectations().deletion_observed(&key);
                }
                owners.enqueue(key.clone());
                if !old.ready && pod.ready {
                    owners.became_ready(namespace, controller, key);
                }
            }
            None => {
                if old.labels != pod.labels || old.controller.is_some() {
                    owners.enqueue_matching(namespace, &pod.labels);
                }
            }
        }
    }

    /// A deletion, unless it was already counted as one when the pod started going; its owner
    /// looks again either way (it may make a new one now).
    fn gone(&self, namespace: &str, _name: &str, pod: &SeenPod) {
        let owners = self.0;
        let Some(controller) = &pod.controller else { return };
        if let Some(key) = owners.resolve(namespace, controller) {
            if !pod.deleting {
                owners.expectations().deletion_observed(&key);
            }
            owners.enqueue(key);
        }
    }
}
