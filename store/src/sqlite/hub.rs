//! Where the writer hands each committed batch: to the watches whose key range it touches.
//!
//! A server watches one prefix per resource, so most batches concern a few of many watches;
//! matching here, in the writer, means a watch's task wakes only for its own keys. A watch
//! that falls more than the channel's capacity behind is marked as lagged instead of being
//! sent the batch, and catches up from the log.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::writer::Batch;
use crate::keys::prefix_end;
use crate::types::Revision;

/// The keys a watch covers: `[start, end)`.
#[derive(Clone)]
pub(super) struct KeyRange {
    pub start: Vec<u8>,
    /// `None`: to the end of the keyspace.
    pub end: Option<Vec<u8>>,
}

impl KeyRange {
    pub fn new(key: &str, prefix: bool) -> KeyRange {
        let start = key.as_bytes().to_vec();
        let end = if prefix {
            prefix_end(&start)
        } else {
            let mut end = start.clone();
            end.push(0);
            Some(end)
        };
        KeyRange { start, end }
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && self.end.as_deref().is_none_or(|end| key < end)
    }
}

struct Subscription {
    range: KeyRange,
    batches: mpsc::Sender<Arc<Batch>>,
    lagged: Arc<AtomicBool>,
}

/// The batches of one watch.
pub(super) struct Batches {
    batches: mpsc::Receiver<Arc<Batch>>,
    lagged: Arc<AtomicBool>,
}

impl Batches {
    /// The next batch touching the watch's range; `None` once the store is closed.
    pub async fn recv(&mut self) -> Option<Arc<Batch>> {
        self.batches.recv().await
    }

    /// The next batch already queued, without waiting.
    pub fn try_recv(&mut self) -> Option<Arc<Batch>> {
        self.batches.try_recv().ok()
    }

    /// Whether batches were left out since the last call (the watch must read the log).
    pub fn take_lagged(&self) -> bool {
        self.lagged.swap(false, Ordering::AcqRel)
    }
}

pub(super) struct Hub {
    capacity: usize,
    /// The revision of the last batch published, set under the lock below: a watch that
    /// subscribes gets every batch after the revision it reads.
    current: Arc<AtomicI64>,
    /// `None` once the store is closed.
    subscriptions: Mutex<Option<Vec<Subscription>>>,
}

impl Hub {
    pub fn new(capacity: usize, current: Arc<AtomicI64>) -> Hub {
        Hub { capacity: capacity.max(1), current, subscriptions: Mutex::new(Some(Vec::new())) }
    }

    /// Every batch published after the revision returned that touches `range`.
    pub fn subscribe(&self, range: KeyRange) -> (Batches, Revision) {
        let (sender, batches) = mpsc::channel(self.capacity);
        let lagged = Arc::new(AtomicBool::new(false));
        let subscription = Subscription { range, batches: sender, lagged: lagged.clone() };
        let mut guard = self.subscriptions.lock().expect("hub poisoned");
        if let Some(subscriptions) = guard.as_mut() {
            subscriptions.push(subscription);
        }
        (Batches { batches, lagged }, self.current.load(Ordering::SeqCst))
    }

    /// Sends `batch` to each watch it touches, forgetting the watches that ended, and makes
    /// its revision the store's current one.
    pub fn publish(&self, batch: &Arc<Batch>) {
        let mut guard = self.subscriptions.lock().expect("hub poisoned");
        // Once `current` says a revision, every watch it touches has its batch queued.
        self.current.store(batch.last_revision, Ordering::SeqCst);
        let Some(subscriptions) = guard.as_mut() else { return };
        subscriptions.retain(|s| {
            if !batch.events.iter().any(|e| s.range.contains(e.kv.key.as_bytes())) {
                return !s.batches.is_closed();
            }
            match s.batches.try_send(batch.clone()) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    s.lagged.store(true, Ordering::Release);
                    true
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
    }

    /// Ends every watch: their channels close.
    pub fn close(&self) {
        self.subscriptions.lock().expect("hub poisoned").take();
    }
}
