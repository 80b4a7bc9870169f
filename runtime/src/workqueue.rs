//! A work queue as client-go's: each key is queued at most once however often it is added,
//! is never handed to two workers at once (added while being worked on, it comes back once
//! the worker is done), and can be added again after a per-key exponential back-off. So the
//! queue never holds more than one entry per key, and workers wait without spinning.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// Back-off of a key's first retry; it doubles with each further failure.
const BASE_DELAY: Duration = Duration::from_millis(5);

pub struct WorkQueue<K> {
    state: Mutex<State<K>>,
    wake: Notify,
    max_delay: Duration,
}

struct State<K> {
    queue: VecDeque<K>,
    /// Keys waiting in `queue`, or to be queued again once their worker is done.
    dirty: HashSet<K>,
    processing: HashSet<K>,
    /// Keys to add later, soonest first; an entry whose time is not the key's in
    /// `delayed_keys` was superseded by an earlier one and is skipped.
    delayed: BinaryHeap<Reverse<(Instant, K)>>,
    /// When each delayed key is due (the earliest of its delays).
    delayed_keys: HashMap<K, Instant>,
    failures: HashMap<K, u32>,
    shut_down: bool,
}

impl<K: Clone + Eq + Hash + Ord> WorkQueue<K> {
    /// A queue whose back-off stops growing at `max_delay`.
    pub fn new(max_delay: Duration) -> WorkQueue<K> {
        WorkQueue {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashSet::new(),
                delayed: BinaryHeap::new(),
                delayed_keys: HashMap::new(),
                failures: HashMap::new(),
                shut_down: false,
            }),
            wake: Notify::new(),
            max_delay,
        }
    }

    /// Queues `key` (once).
    pub fn add(&self, key: K) {
        let mut state = self.state.lock().expect("work queue");
        if state.add(key) {
            drop(state);
            self.wake.notify_one();
        }
    }

    /// Queues `key` after `delay`; a key already waiting keeps the sooner of the two times.
    pub fn add_after(&self, key: K, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let at = Instant::now() + delay;
        let mut state = self.state.lock().expect("work queue");
        if state.shut_down || state.delayed_keys.get(&key).is_some_and(|due| *due <= at) {
            return;
        }
        state.delayed_keys.insert(key.clone(), at);
        state.delayed.push(Reverse((at, key)));
        drop(state);
        // A worker may be sleeping until a later deadline.
        self.wake.notify_one();
    }

    /// Queues `key` after its back-off, which doubles with each call until [`forget`].
    ///
    /// [`forget`]: WorkQueue::forget
    pub fn add_rate_limited(&self, key: K) {
        let failures = {
            let mut state = self.state.lock().expect("work queue");
            let failures = state.failures.entry(key.clone()).or_insert(0);
            *failures = failures.saturating_add(1);
            *failures
        };
        self.add_after(key, self.backoff(failures));
    }

    fn backoff(&self, failures: u32) -> Duration {
        crate::backoff::exponential(BASE_DELAY, self.max_delay, failures)
    }

    /// Clears `key`'s back-off.
    pub fn forget(&self, key: &K) {
        self.state.lock().expect("work queue").failures.remove(key);
    }

    /// The next key to work on, waiting for one; `None` once the queue is shut down. The
    /// caller must call [`done`] with it.
    ///
    /// [`done`]: WorkQueue::done
    pub async fn get(&self) -> Option<K> {
        loop {
            let wake = self.wake.notified();
            tokio::pin!(wake);
            wake.as_mut().enable();
            let next_deadline = {
                let mut state = self.state.lock().expect("work queue");
                if state.shut_down {
                    return None;
                }
                state.promote_due(Instant::now());
                if let Some(key) = state.queue.pop_front() {
                    state.dirty.remove(&key);
                    state.processing.insert(key.clone());
                    let more = !state.queue.is_empty();
                    drop(state);
                    if more {
                        // Pass the wake-up on: another worker may take the next key.
                        self.wake.notify_one();
                    }
                    return Some(key);
                }
                state.delayed.peek().map(|Reverse((at, _))| *at)
            };
            match next_deadline {
                Some(at) => {
                    tokio::select! {
                        _ = &mut wake => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                None => wake.await,
            }
        }
    }

    /// Marks `key` as no longer being worked on; if it was added meanwhile, it is queued.
    pub fn done(&self, key: &K) {
        let mut state = self.state.lock().expect("work queue");
        state.processing.remove(key);
        if state.dirty.contains(key) && !state.shut_down {
            state.queue.push_back(key.clone());
            drop(state);
            self.wake.notify_one();
        }
    }

    /// Stops the queue: waiting and future [`get`]s return `None`.
    ///
    /// [`get`]: WorkQueue::get
    pub fn shut_down(&self) {
        self.state.lock().expect("work queue").shut_down = true;
        self.wake.notify_waiters();
    }

    /// How many keys are queued (not counting delayed ones).
    pub fn len(&self) -> usize {
        self.state.lock().expect("work queue").queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl WorkQueue<String> {
    /// One worker of a controller, until the queue shuts down: each key is synced (for
    /// `timeout` at most), forgotten when that succeeds (and queued again after the delay the
    /// sync may ask for), retried after its back-off when it fails. `routine` tells the
    /// failures worth only a debug line (a conflict with the controller's own last write, a
    /// namespace being deleted) from the ones worth a warning.
    pub async fn work<E, Fut>(
        &self,
        controller: &'static str,
        timeout: Duration,
        sync: impl Fn(String) -> Fut,
        routine: impl Fn(&E) -> bool,
    ) where
        Fut: std::future::Future<Output = Result<Option<Duration>, E>>,
        E: std::fmt::Display,
    {
        while let Some(key) = self.get().await {
            let started = Instant::now();
            match tokio::time::timeout(timeout, sync(key.clone())).await {
                Ok(Ok(after)) => {
                    self.forget(&key);
                    if let Some(after) = after {
                        self.add_after(key.clone(), after);
                    }
                }
                Ok(Err(e)) if routine(&e) => {
                    tracing::debug!(controller, key, error = %e, "sync failed; retrying");
                    self.add_rate_limited(key.clone());
                }
                Ok(Err(e)) => {
                    tracing::warn!(controller, key, error = %e, "sync failed; retrying");
                    self.add_rate_limited(key.clone());
                }
                Err(_) => {
                    tracing::warn!(controller, key, ?timeout, "sync gave up; retrying");
                    self.add_rate_limited(key.clone());
                }
            }
            tracing::debug!(controller, key, elapsed = ?started.elapsed(), "synced");
            self.done(&key);
        }
    }
}

impl<K: Clone + Eq + Hash + Ord> State<K> {
    /// Whether the key was queued (it was neither queued nor being worked on).
    fn add(&mut self, key: K) -> bool {
        if self.shut_down || !self.dirty.insert(key.clone()) {
            return false;
        }
        if self.processing.contains(&key) {
            return false;
        }
        self.queue.push_back(key);
        true
    }

    fn promote_due(&mut self, now: Instant) {
        while self.delayed.peek().is_some_and(|Reverse((at, _))| *at <= now) {
            let Some(Reverse((at, key))) = self.delayed.pop() else { break };
            if self.delayed_keys.get(&key) == Some(&at) {
                self.delayed_keys.remove(&key);
                self.add(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_key_is_queued_once_and_never_worked_on_twice() {
        let q = WorkQueue::new(Duration::from_secs(1));
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        assert_eq!(q.get().await, Some("a"));
        // Added while being worked on: back after `done`, not before.
        q.add("a");
        assert_eq!(q.get().await, Some("b"));
        assert!(q.is_empty());
        q.done(&"a");
        assert_eq!(q.get().await, Some("a"));
        q.done(&"a");
        q.done(&"b");
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn back_off_doubles_and_is_capped() {
        let q = WorkQueue::new(Duration::from_millis(40));
        assert_eq!(
            (1..=5).map(|n| q.backoff(n)).collect::<Vec<_>>(),
            [5, 10, 20, 40, 40].map(Duration::from_millis)
        );
        assert_eq!(q.backoff(u32::MAX), Duration::from_millis(40));
        let start = Instant::now();
        q.add_rate_limited("a");
        q.add_rate_limited("a"); // already waiting, sooner: no second entry
        assert!(q.is_empty());
        assert_eq!(q.state.lock().unwrap().delayed.len(), 1);
        assert_eq!(q.get().await, Some("a"));
        assert!(start.elapsed() >= Duration::from_millis(5));
        q.done(&"a");
        assert!(q.is_empty());
        assert_eq!(q.state.lock().unwrap().failures.get("a"), Some(&2));
        q.forget(&"a");
        assert!(q.state.lock().unwrap().failures.is_empty());
    }

    #[tokio::test]
    async fn waiting_workers_wake_up_for_new_keys_and_shut_down() {
        let q = std::sync::Arc::new(WorkQueue::new(Duration::from_secs(1)));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let worker = {
            let q = q.clone();
            tokio::spawn(async move {
                while let Some(key) = q.get().await {
                    tx.send(key).unwrap();
                    q.done(&key);
                }
            })
        };
        tokio::task::yield_now().await;
        q.add_after(2, Duration::from_millis(20));
        q.add(1);
        let limit = Duration::from_secs(5);
        assert_eq!(tokio::time::timeout(limit, rx.recv()).await.unwrap(), Some(1));
        assert_eq!(tokio::time::timeout(limit, rx.recv()).await.unwrap(), Some(2));
        // A sooner delay replaces a later one; the later one's entry is then skipped.
        q.add_after(3, Duration::from_secs(60));
        q.add_after(3, Duration::from_millis(10));
        assert_eq!(tokio::time::timeout(limit, rx.recv()).await.unwrap(), Some(3));
        q.add(4);
        assert_eq!(tokio::time::timeout(limit, rx.recv()).await.unwrap(), Some(4));
        q.shut_down();
        tokio::time::timeout(limit, worker).await.unwrap().unwrap();
        assert_eq!(q.get().await, None);
    }
}
