//! EndpointSlice changes as a slice controller reads them (upstream's `onEndpointSlice*`
//! handlers): a slice it manages that someone else made, changed or deleted sends its
//! Service to a sync; its own writes, known to the [`Tracker`], do not. Shared by the
//! EndpointSlice and the mirroring controllers, each with its `managed-by` value.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::runtime::reflector::ObjectRef;
use rkube_runtime::informer::Change;
use rkube_runtime::store::Store;

use super::reconciler::MANAGED_BY_LABEL;
use super::tracker::{service_key, Tracker, SERVICE_NAME_LABEL};

/// The slices as last seen, to compare a change with.
pub struct SliceEvents {
    managed_by: &'static str,
    seen: HashMap<(String, String), Arc<EndpointSlice>>,
}

fn label<'a>(slice: &'a EndpointSlice, key: &str) -> Option<&'a str> {
    slice.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

/// The index of the slices `managed_by` manages, by their Service's key (`namespace/name`).
pub fn managed_index(managed_by: &'static str) -> impl Fn(&EndpointSlice) -> Vec<String> {
    move |slice| {
        let service = label(slice, SERVICE_NAME_LABEL).unwrap_or("");
        if label(slice, MANAGED_BY_LABEL) == Some(managed_by) && !service.is_empty() {
            vec![service_key(slice)]
        } else {
            Vec::new()
        }
    }
}

impl SliceEvents {
    pub fn new(managed_by: &'static str) -> SliceEvents {
        SliceEvents { managed_by, seen: HashMap::new() }
    }

    fn managed(&self, slice: &EndpointSlice) -> bool {
        label(slice, MANAGED_BY_LABEL) == Some(self.managed_by)
    }

    /// The keys of the Services to sync after `change` (a slice's).
    pub fn services_for(
        &mut self,
        change: Change,
        slices: &Store<EndpointSlice>,
        tracker: &Tracker,
    ) -> BTreeSet<String> {
        let mut keys = BTreeSet::new();
        let Change::Object { namespace, name } = change else { return keys };
        let namespace = namespace.unwrap_or_default();
        let current = slices.get(&ObjectRef::new(&name).within(&namespace));
        let at = (namespace, name);
        let old = match &current {
            Some(now) => self.seen.insert(at, now.clone()),
            None => self.seen.remove(&at),
        };
        match (old, current) {
            (None, Some(now)) => {
                if self.managed(&now) && tracker.should_sync(&now) {
                    keys.insert(service_key(&now));
                }
            }
            (Some(old), Some(now)) => {
                if label(&old, SERVICE_NAME_LABEL) != label(&now, SERVICE_NAME_LABEL) {
                    // Moved to another Service by hand: both need a look.
                    keys.insert(service_key(&old));
                    keys.insert(service_key(&now));
                } else if self.managed(&old) != self.managed(&now)
                    || (self.managed(&now) && tracker.should_sync(&now))
                {
                    keys.insert(service_key(&now));
                }
            }
            (Some(old), None) => {
                // Deleted by someone else: made again.
                if self.managed(&old) && tracker.has(&old) && !tracker.handle_deletion(&old) {
                    keys.insert(service_key(&old));
                }
            }
            (None, None) => {}
        }
        keys.retain(|k| !k.ends_with('/'));
        keys
    }
}
