//! [`Compactor`]: compacts a store on a timer, the way kube-apiserver does.

use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;
use crate::types::Revision;
use crate::Store;

/// Compacts a store every `interval` to the revision it had one interval earlier, so that
/// watchers and paged lists always have at least one interval of history to resume from.
///
/// The task stops when the [`Compactor`] is dropped.
pub struct Compactor {
    task: tokio::task::JoinHandle<()>,
}

impl Compactor {
    /// Starts compacting `store` every `interval` (kube-apiserver's default is 5 minutes).
    pub fn spawn(store: Arc<dyn Store>, interval: Duration) -> Compactor {
        let task = tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut previous: Option<Revision> = None;
            loop {
                ticker.tick().await;
                let current = match store.current_revision().await {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::warn!(error = %e, "compactor cannot read the store revision");
                        continue;
                    }
                };
                if let Some(target) = previous.filter(|&p| p > 1) {
                    match store.compact(target).await {
                        Ok(()) => tracing::debug!(revision = target, "compacted"),
                        // Another API server (on the same etcd) compacted already.
                        Err(Error::Compacted { .. }) => {}
                        Err(e) => {
                            tracing::warn!(error = %e, revision = target, "compaction failed")
                        }
                    }
                }
                previous = Some(current);
            }
        });
        Compactor { task }
    }
}

impl Drop for Compactor {
    fn drop(&mut self) {
        self.task.abort();
    }
}
