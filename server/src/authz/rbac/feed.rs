//! Keeps the RBAC [`Index`](super::Index) current: one task per RBAC resource follows the
//! resource's watch cache (the same events every watcher gets) and puts each change into
//! the index. A task that falls behind the cache loads its resource again.

use std::sync::Arc;

use tokio::sync::broadcast::error::RecvError;

use super::{Kind, SharedIndex};
use crate::cache::{Cache, CacheEvent, EventType};
use crate::registry::Registry;
use crate::status::{ApiError, ApiResult};

pub const GROUP: &str = "rbac.authorization.k8s.io";

fn apply(index: &SharedIndex, kind: Kind, event: &CacheEvent) {
    let object = &event.object;
    let mut index = index.write().expect("rbac index lock");
    match event.kind {
        EventType::Deleted => index.remove(kind, &object.namespace, &object.name),
        EventType::Added | EventType::Modified => match serde_json::from_slice(&object.json) {
            Ok(value) => index.put(kind, &value),
            Err(e) => tracing::warn!(name = object.name, error = %e, "unreadable RBAC object"),
        },
    }
}

/// Loads every object of `kind` from `cache` into the index, and returns the revision and
/// the events that follow.
fn load(
    cache: &Cache,
    index: &SharedIndex,
    kind: Kind,
) -> ApiResult<(i64, tokio::sync::broadcast::Receiver<Arc<CacheEvent>>)> {
    let prefix = cache.info().key_prefix();
    let start = cache.watch(None, &prefix)?;
    {
        let mut locked = index.write().expect("rbac index lock");
        locked.clear(kind);
    }
    for event in &start.initial {
        apply(index, kind, event);
    }
    Ok((start.revision, start.live))
}

/// Fills `index` from the registry's RBAC caches (after they caught up with the store, so
/// that what was written before is there) and keeps following them.
pub async fn start(registry: Arc<Registry>, index: SharedIndex) -> ApiResult<()> {
    let resources = registry.resources();
    for kind in Kind::ALL {
        let info = resources
            .get(GROUP, "v1", kind.plural())
            .ok_or_else(|| ApiError::internal(format!("no {} resource", kind.plural())))?;
        let cache = registry.cache(info)?;
        cache.wait_fresh(registry.store.as_ref()).await?;
        let (mut revision, mut live) = load(&cache, &index, kind)?;
        let index = index.clone();
        tokio::spawn(async move {
            loop {
                match live.recv().await {
                    Ok(event) if event.revision > revision => {
                        revision = event.revision;
                        apply(&index, kind, &event);
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => match load(&cache, &index, kind) {
                        Ok((r, l)) => (revision, live) = (r, l),
                        Err(e) => {
                            tracing::error!(
                                resource = kind.plural(),
                                error = e.message,
                                "RBAC index stopped"
                            );
                            return;
                        }
                    },
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }
    Ok(())
}
