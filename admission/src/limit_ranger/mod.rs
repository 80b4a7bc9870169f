//! `LimitRanger`: the namespace's LimitRanges applied to what is created in it.
//!
//! - A new pod's containers and init containers get the `default` (limits) and
//!   `defaultRequest` (requests) of the LimitRanges' Container items where they set none, and
//!   the pod the `kubernetes.io/limit-ranger` annotation saying what was set ([`defaults`]).
//! - A new pod is then checked against every item's `min`, `max` and `maxLimitRequestRatio`:
//!   Container items per container and init container, Pod items on the pod's totals; a new
//!   or updated PersistentVolumeClaim against the PersistentVolumeClaim items' `min` and
//!   `max` of its storage request ([`constraints`]). A violation is refused with upstream's
//!   403 and message, every violation of the first LimitRange that has some in one message.
//!
//! As upstream: pod updates are left alone (a pod's containers' resources do not change
//! through an update), and so is every subresource, `pods/ephemeralcontainers` included
//! (ephemeral containers may not set resources at all); an object already being deleted is
//! not checked. LimitRanges are read from the watch cache; when it has none for the
//! namespace, they are read at their latest state and that answer is kept for 30 s
//! (upstream's live lookup), so a LimitRange created just before a pod still applies to it.

pub mod constraints;
pub mod defaults;
pub mod resources;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rkube_apis::selectors::LabelSelector;

use crate::attributes::{Attributes, Operation};
use crate::error::AdmissionError;
use crate::state::{ClusterState, Freshness, GroupResource, Object};
use crate::{MutatingPlugin, ValidatingPlugin};

use resources::LimitRange;

pub const NAME: &str = "LimitRanger";

const LIMIT_RANGES: GroupResource<'static> = GroupResource::new("", "limitranges");

/// How long a live read of a namespace without cached LimitRanges is trusted (upstream's 30 s).
const LIVE_LOOKUP_FOR: Duration = Duration::from_secs(30);
/// How many namespaces' live reads, and how many decoded LimitRanges, are kept at most
/// (upstream keeps 10000 live reads).
const KEPT_MAX: usize = 10_000;

/// What a request is to LimitRanger.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    NewPod,
    Claim,
}

/// A namespace's LimitRanges, by name.
type Ranges = Arc<Vec<Arc<LimitRange>>>;

/// A live read: until when it is trusted, and what it found.
type LiveRead = (Instant, Ranges);

/// A decoded LimitRange by namespace and name, with the version it was decoded at.
type Decoded = HashMap<(String, String), (String, Arc<LimitRange>)>;

/// The plugin, with what it has read: the live reads of namespaces the cache had no
/// LimitRanges for, and each LimitRange decoded once per version.
#[derive(Default)]
pub struct LimitRanger {
    live: Mutex<HashMap<String, LiveRead>>,
    decoded: Mutex<Decoded>,
}

/// Which requests the plugin looks at (upstream's `SupportsAttributes`, and its skipping of
/// objects marked for deletion).
fn target(a: &Attributes<'_>) -> Option<Target> {
    if !a.subresource.is_empty() || !a.kind.group.is_empty() {
        return None;
    }
    let deleting = a.old_object.is_some_and(|old| !old["metadata"]["deletionTimestamp"].is_null());
    if deleting {
        return None;
    }
    match (a.kind.kind, a.operation) {
        ("Pod", Operation::Create) => Some(Target::NewPod),
        ("PersistentVolumeClaim", Operation::Create | Operation::Update) => Some(Target::Claim),
        _ => None,
    }
}

impl LimitRanger {
    /// `object` as a [`LimitRange`], decoded only when it changed since the last read.
    fn decode(&self, object: &dyn Object) -> Arc<LimitRange> {
        let version = object.resource_version();
        if version.is_empty() {
            return Arc::new(LimitRange::read(&object.value()));
        }
        let key = (object.namespace().to_string(), object.name().to_string());
        let mut decoded = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((seen, limit_range)) = decoded.get(&key) {
            if *seen == version {
                return limit_range.clone();
            }
        }
        let limit_range = Arc::new(LimitRange::read(&object.value()));
        if decoded.len() >= KEPT_MAX {
            decoded.clear();
        }
        decoded.insert(key, (version, limit_range.clone()));
        limit_range
    }

    /// The LimitRanges of the request's namespace, ordered by name.
    async fn limit_ranges(
        &self,
        a: &Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<Ranges, AdmissionError> {
        let everything = LabelSelector::everything();
        let namespace = Some(a.namespace);
        let cached =
            state.list(LIMIT_RANGES, namespace, &everything, Freshness::Cached).await.map_err(|_| {
                let reason = format!(
                    "unable to {} {}/{}, Resource={} at this time because there was an error enforcing limit ranges",
                    a.operation.as_str(),
                    a.resource.group,
                    a.resource.version,
                    a.resource.resource
                );
                AdmissionError::forbidden(a, reason)
            })?;
        if !cached.is_empty() {
            return Ok(Arc::new(cached.iter().map(|o| self.decode(o.as_ref())).collect()));
        }
        let now = Instant::now();
        if let Some((until, found)) = self.live_lock().get(a.namespace) {
            if *until > now {
                return Ok(found.clone());
            }
        }
        let latest = state
            .list(LIMIT_RANGES, namespace, &everything, Freshness::Latest)
            .await
            .map_err(|e| AdmissionError::forbidden(a, e.to_string()))?;
        let found: Ranges = Arc::new(latest.iter().map(|o| self.decode(o.as_ref())).collect());
        let mut live = self.live_lock();
        if live.len() >= KEPT_MAX {
            live.retain(|_, (until, _)| *until > now);
            if live.len() >= KEPT_MAX {
                live.clear();
            }
        }
        live.insert(a.namespace.to_string(), (now + LIVE_LOOKUP_FOR, found.clone()));
        Ok(found)
    }

    fn live_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, LiveRead>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait::async_trait]
impl MutatingPlugin for LimitRanger {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn admit(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        // Claims get no defaults: their storage request is required.
        if target(a) != Some(Target::NewPod) {
            return Ok(());
        }
        let limit_ranges = self.limit_ranges(a, state).await?;
        if let Some(pod) = a.object.as_deref_mut() {
            for limit_range in limit_ranges.iter() {
                defaults::apply(pod, limit_range);
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl ValidatingPlugin for LimitRanger {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn validate(
        &self,
        a: &Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        let Some(target) = target(a) else { return Ok(()) };
        let Some(object) = a.object() else { return Ok(()) };
        for limit_range in self.limit_ranges(a, state).await?.iter() {
            let violations = match target {
                Target::NewPod => constraints::pod_violations(limit_range, object),
                Target::Claim => constraints::claim_violations(limit_range, object),
            };
            if !violations.is_empty() {
                return Err(AdmissionError::forbidden(a, constraints::aggregate(&violations)));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
