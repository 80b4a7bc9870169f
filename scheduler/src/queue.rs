//! The scheduling queue, in kube-scheduler's shape: an active queue of pods to try now, a
//! backoff queue of pods that failed and wait (1 s doubling to 10 s), and the unschedulable
//! pods, which move back when the cluster changes (a node added or changed, a pod deleted)
//! or after five minutes at the latest, not on a blind timer.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

/// A pod, by namespace and name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodKey {
    pub namespace: String,
    pub name: String,
}

impl fmt::Display for PodKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

const INITIAL_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(10);
const MAX_UNSCHEDULABLE: Duration = Duration::from_secs(300);

#[derive(Default)]
pub struct Queue {
    active: VecDeque<PodKey>,
    queued: HashSet<PodKey>,
    /// Pods waiting until the instant, after a failed attempt.
    backoff: HashMap<PodKey, Instant>,
    /// Pods that fit nowhere, since when.
    unschedulable: HashMap<PodKey, Instant>,
    attempts: HashMap<PodKey, u32>,
}

impl Queue {
    /// A new pod to schedule.
    pub fn add(&mut self, key: PodKey) {
        self.backoff.remove(&key);
        self.unschedulable.remove(&key);
        if self.queued.insert(key.clone()) {
            self.active.push_back(key);
        }
    }

    /// The pod changed: if it was waiting as unschedulable, try it again.
    pub fn pod_updated(&mut self, key: &PodKey) {
        if self.unschedulable.remove(key).is_some() {
            self.add(key.clone());
        }
    }

    pub fn has_ready(&self) -> bool {
        !self.active.is_empty()
    }

    /// The next pod to try.
    pub fn pop(&mut self) -> Option<PodKey> {
        while let Some(key) = self.active.pop_front() {
            // Keys no longer queued were left behind by `done`.
            if self.queued.remove(&key) {
                return Some(key);
            }
        }
        None
    }

    /// The pod was bound, or is gone: forget it.
    pub fn done(&mut self, key: &PodKey) {
        // Left in `active` for `pop` to skip: looking for it there would cost a walk over
        // the whole queue for every pod bound.
        self.queued.remove(key);
        self.backoff.remove(key);
        self.unschedulable.remove(key);
        self.attempts.remove(key);
    }

    fn backoff_for(&mut self, key: &PodKey) -> Duration {
        let attempts = self.attempts.entry(key.clone()).or_default();
        *attempts = attempts.saturating_add(1);
        rkube_runtime::backoff::exponential(INITIAL_BACKOFF, MAX_BACKOFF, *attempts)
    }

    /// The pod fits nowhere: it waits for the cluster to change.
    pub fn unschedulable(&mut self, key: PodKey) {
        self.unschedulable.insert(key, Instant::now());
    }

    /// Whether the pod waits for the cluster to change.
    #[cfg(test)]
    pub(crate) fn is_unschedulable(&self, key: &PodKey) -> bool {
        self.unschedulable.contains_key(key)
    }

    /// Binding failed: try again after a backoff.
    pub fn backoff(&mut self, key: PodKey) {
        let wait = self.backoff_for(&key);
        self.backoff.insert(key, Instant::now() + wait);
    }

    /// Something changed that may let unschedulable pods fit: they go through backoff.
    pub fn cluster_changed(&mut self) {
        let keys: Vec<PodKey> = self.unschedulable.drain().map(|(k, _)| k).collect();
        for key in keys {
            let wait = self.backoff_for(&key);
            self.backoff.insert(key, Instant::now() + wait);
        }
    }

    /// Moves pods whose backoff is over, and long-unschedulable ones, to the active queue.
    pub fn flush_backoff(&mut self) {
        let now = Instant::now();
        let ready: Vec<PodKey> =
            self.backoff.iter().filter(|(_, t)| **t <= now).map(|(k, _)| k.clone()).collect();
        for key in ready {
            self.backoff.remove(&key);
            if self.queued.insert(key.clone()) {
                self.active.push_back(key);
            }
        }
        let stale: Vec<PodKey> = self
            .unschedulable
            .iter()
            .filter(|(_, since)| now.duration_since(**since) >= MAX_UNSCHEDULABLE)
            .map(|(k, _)| k.clone())
            .collect();
        for key in stale {
            self.unschedulable.remove(&key);
            if self.queued.insert(key.clone()) {
                self.active.push_back(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: &str) -> PodKey {
        PodKey { namespace: "ns".into(), name: n.into() }
    }

    #[test]
    fn unschedulable_pods_come_back_only_when_the_cluster_changes() {
        let mut q = Queue::default();
        q.add(key("a"));
        assert_eq!(q.pop(), Some(key("a")));
        q.unschedulable(key("a"));
        q.flush_backoff();
        assert!(!q.has_ready(), "no blind retry");
        q.cluster_changed();
        // Through the backoff queue: after its first backoff (1 s).
        q.backoff.insert(key("a"), Instant::now());
        q.flush_backoff();
        assert_eq!(q.pop(), Some(key("a")));
    }

    #[test]
    fn backoff_doubles_up_to_ten_seconds() {
        let mut q = Queue::default();
        let waits: Vec<u64> = (0..6).map(|_| q.backoff_for(&key("b")).as_secs()).collect();
        assert_eq!(waits, vec![1, 2, 4, 8, 10, 10]);
    }

    #[test]
    fn done_pods_are_not_popped_and_may_come_back() {
        let mut q = Queue::default();
        for name in ["a", "b", "c"] {
            q.add(key(name));
        }
        q.done(&key("b"));
        assert_eq!(q.pop(), Some(key("a")));
        assert_eq!(q.pop(), Some(key("c")));
        assert_eq!(q.pop(), None);
        assert!(!q.has_ready());

        // Forgotten, then added again: popped once.
        q.add(key("d"));
        q.add(key("e"));
        q.done(&key("d"));
        q.add(key("d"));
        let mut popped = vec![q.pop().unwrap(), q.pop().unwrap()];
        popped.sort();
        assert_eq!(popped, [key("d"), key("e")]);
        assert_eq!(q.pop(), None);
    }
}
