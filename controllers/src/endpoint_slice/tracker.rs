//! What a slice controller last wrote, as upstream's `EndpointSliceTracker`: the generation
//! of each slice it created or updated, and the slices it deleted, per Service. It tells
//! when the informer's cache has not caught up with the controller's own writes (a sync
//! then waits and retries rather than act on old slices), and which slice events are the
//! controller's own (not worth a sync) and which are someone else's.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::discovery::v1::EndpointSlice;

/// The label naming a slice's Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// A deletion the controller asked for.
const DELETION_EXPECTED: i64 = -1;

#[derive(Default)]
struct Inner {
    /// Generations by slice uid, by Service key.
    generations: HashMap<String, HashMap<String, i64>>,
    /// Each tracked Service's uid.
    service_uids: HashMap<String, String>,
}

/// Slice generations written, by Service (`namespace/name`).
#[derive(Default)]
pub struct Tracker(Mutex<Inner>);

/// The key of the Service a slice belongs to, by its label.
pub fn service_key(slice: &EndpointSlice) -> String {
    let service = slice.metadata.labels.as_ref().and_then(|l| l.get(SERVICE_NAME_LABEL));
    format!(
        "{}/{}",
        slice.metadata.namespace.as_deref().unwrap_or(""),
        service.map_or("", String::as_str)
    )
}

fn uid(slice: &EndpointSlice) -> String {
    slice.metadata.uid.clone().unwrap_or_default()
}

fn generation(slice: &EndpointSlice) -> i64 {
    slice.metadata.generation.unwrap_or(0)
}

impl Tracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().expect("slice tracker")
    }

    /// Whether the slice is tracked.
    pub fn has(&self, slice: &EndpointSlice) -> bool {
        let inner = self.lock();
        inner.generations.get(&service_key(slice)).is_some_and(|g| g.contains_key(&uid(slice)))
    }

    /// Whether an event about `slice` needs a sync: it is not one the controller wrote
    /// (untracked, or newer than what it wrote).
    pub fn should_sync(&self, slice: &EndpointSlice) -> bool {
        let inner = self.lock();
        let Some(generations) = inner.generations.get(&service_key(slice)) else { return true };
        generations.get(&uid(slice)).is_none_or(|g| generation(slice) > *g)
    }

    /// Whether `slices` (the cache's, for the Service `key` with `service_uid`) lag behind
    /// what the controller wrote: a slice older than written, one expected deleted, or one
    /// written that is missing. A Service made again under its name starts afresh.
    pub fn stale(
        &self,
        key: &str,
        service_uid: &str,
        slices: &[std::sync::Arc<EndpointSlice>],
    ) -> bool {
        let mut inner = self.lock();
        let previous = inner.service_uids.insert(key.to_string(), service_uid.to_string());
        if previous.is_some_and(|p| !p.is_empty() && !service_uid.is_empty() && p != service_uid) {
            inner.generations.remove(key);
        }
        let Some(generations) = inner.generations.get(key) else { return false };
        let mut provided = HashMap::new();
        for slice in slices {
            provided.insert(uid(slice), ());
            if let Some(g) = generations.get(&uid(slice)) {
                if *g == DELETION_EXPECTED || *g > generation(slice) {
                    return true;
                }
            }
        }
        generations.iter().any(|(uid, g)| *g != DELETION_EXPECTED && !provided.contains_key(uid))
    }

    /// Notes a slice the controller created or updated (as the API returned it).
    pub fn update(&self, slice: &EndpointSlice) {
        let mut inner = self.lock();
        inner
            .generations
            .entry(service_key(slice))
            .or_default()
            .insert(uid(slice), generation(slice));
    }

    /// Notes a slice the controller deleted.
    pub fn expect_deletion(&self, slice: &EndpointSlice) {
        let mut inner = self.lock();
        inner
            .generations
            .entry(service_key(slice))
            .or_default()
            .insert(uid(slice), DELETION_EXPECTED);
    }

    /// A tracked slice is gone: true when the controller deleted it, false when someone else
    /// did (then its Service needs a sync).
    pub fn handle_deletion(&self, slice: &EndpointSlice) -> bool {
        let mut inner = self.lock();
        let Some(generations) = inner.generations.get_mut(&service_key(slice)) else { return true };
        match generations.remove(&uid(slice)) {
            Some(g) => g == DELETION_EXPECTED,
            None => true,
        }
    }

    /// Forgets a Service.
    pub fn delete_service(&self, key: &str) {
        let mut inner = self.lock();
        inner.generations.remove(key);
        inner.service_uids.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn slice(uid: &str, generation: i64) -> EndpointSlice {
        serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "ns", "uid": uid, "generation": generation,
                "labels": {SERVICE_NAME_LABEL: "web"}},
            "addressType": "IPv4", "endpoints": [],
        }))
        .unwrap()
    }

    #[test]
    fn a_cache_behind_the_controllers_writes_is_stale() {
        let t = Tracker::default();
        assert!(!t.stale("ns/web", "s1", &[]));
        t.update(&slice("a", 2));
        assert!(t.stale("ns/web", "s1", &[]), "a written slice is missing");
        assert!(t.stale("ns/web", "s1", &[Arc::new(slice("a", 1))]), "older than written");
        assert!(!t.stale("ns/web", "s1", &[Arc::new(slice("a", 2))]));
        assert!(!t.should_sync(&slice("a", 2)), "its own write");
        assert!(t.should_sync(&slice("a", 3)), "someone else's");
        t.expect_deletion(&slice("a", 2));
        assert!(t.stale("ns/web", "s1", &[Arc::new(slice("a", 2))]), "deleted yet listed");
        assert!(!t.stale("ns/web", "s1", &[]));
        assert!(t.handle_deletion(&slice("a", 2)));
        t.update(&slice("b", 1));
        assert!(!t.handle_deletion(&slice("b", 1)), "deleted by someone else");
        t.update(&slice("c", 1));
        // Made again under its name: what was written for the old one does not count.
        assert!(!t.stale("ns/web", "s2", &[]));
    }
}
