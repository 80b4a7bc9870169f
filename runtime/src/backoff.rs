//! Exponential back-off, the one mechanism behind every retry delay in rkube, in its two
//! shapes:
//!
//! - [`exponential`]: the delay after so many consecutive failures, a start doubled with each
//!   further one up to a cap. The work queue's per-key retries (client-go's
//!   `ItemExponentialFailureRateLimiter`), the scheduler's backoff queue and the Job
//!   controller's pod-failure back-off count failures and ask it.
//! - [`Backoff`]: client-go's `flowcontrol.Backoff`, per-key delays stepped by [`Backoff::next`]
//!   and forgotten once a key was left alone for twice the cap. The kubelet's crash-loop and
//!   image-pull back-offs (counted from when the container ended or the pull failed) and the
//!   DaemonSet controller's failed-pod back-off (counted from the last step) use it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The delay after `failures` consecutive failures: none for none, `initial` for the first,
/// doubling with each further one, at most `max`.
pub fn exponential(initial: Duration, max: Duration, failures: u32) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let factor = 1u32.checked_shl(failures - 1).unwrap_or(u32::MAX);
    initial.saturating_mul(factor).min(max)
}

/// Per-key exponential back-off, as client-go's `flowcontrol.Backoff`: each [`next`] doubles
/// a key's delay (the first sets `initial`), up to `max`; a key not stepped for twice `max`
/// starts over, and is then forgotten.
///
/// [`next`]: Backoff::next
#[derive(Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    /// Each key's delay and when it was last stepped.
    entries: Mutex<HashMap<String, (Duration, Instant)>>,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff { initial, max, entries: Mutex::new(HashMap::new()) }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Duration, Instant)>> {
        // Every change is one insert or retain: a panicking holder leaves whole entries.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn expired(&self, stepped: Instant, now: Instant) -> bool {
        now.saturating_duration_since(stepped) > 2 * self.max
    }

    /// `key`'s current delay (zero when it has none).
    pub fn get(&self, key: &str) -> Duration {
        self.entries().get(key).map_or(Duration::ZERO, |(delay, _)| *delay)
    }

    /// Steps `key`'s back-off at `now`: `initial` the first time (or after it expired), else
    /// twice the last delay, at most `max`. Expired keys are forgotten on the way.
    pub fn next(&self, key: &str, now: Instant) {
        let mut entries = self.entries();
        entries.retain(|_, (_, stepped)| !self.expired(*stepped, now));
        let delay = match entries.get(key) {
            Some((delay, _)) => (*delay * 2).min(self.max),
            None => self.initial,
        };
        entries.insert(key.to_string(), (delay, now));
    }

    /// `key`'s delay, when less than that has passed at `now` since `event` (client-go's
    /// `IsInBackOffSince`: the kubelet counts from when the container ended).
    pub fn in_backoff_since(&self, key: &str, event: Instant, now: Instant) -> Option<Duration> {
        let (delay, _) = *self.entries().get(key)?;
        (now.saturating_duration_since(event) < delay).then_some(delay)
    }

    /// `key`'s delay, when less than that has passed at `now` since it was last stepped
    /// (client-go's `IsInBackOffSinceUpdate`).
    pub fn in_backoff_since_update(&self, key: &str, now: Instant) -> Option<Duration> {
        let (delay, stepped) = *self.entries().get(key)?;
        (now.saturating_duration_since(stepped) < delay).then_some(delay)
    }

    /// How much of `key`'s delay is left at `now`, counting from `event`; `None` when none.
    pub fn remaining_since(&self, key: &str, event: Instant, now: Instant) -> Option<Duration> {
        let (delay, _) = *self.entries().get(key)?;
        delay.checked_sub(now.saturating_duration_since(event)).filter(|d| !d.is_zero())
    }

    /// Forgets `key`.
    pub fn reset(&self, key: &str) {
        self.entries().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn exponential_doubles_from_the_first_failure_and_is_capped() {
        let ms = Duration::from_millis;
        let delays: Vec<_> = (0..=5).map(|n| exponential(ms(5), ms(40), n)).collect();
        assert_eq!(delays, [0, 5, 10, 20, 40, 40].map(ms));
        assert_eq!(exponential(ms(5), ms(40), u32::MAX), ms(40));
        assert_eq!(exponential(S(10), S(600), 40), S(600));
    }

    #[test]
    fn steps_double_and_reset_after_twice_the_cap() {
        let b = Backoff::new(S(1), S(4));
        let t0 = Instant::now();
        assert_eq!(b.in_backoff_since_update("k", t0), None);
        assert_eq!(b.get("k"), Duration::ZERO);
        b.next("k", t0);
        assert_eq!(b.in_backoff_since_update("k", t0), Some(S(1)));
        assert_eq!(b.in_backoff_since_update("k", t0 + S(1)), None);
        b.next("k", t0 + S(1));
        assert_eq!(b.in_backoff_since_update("k", t0 + S(2)), Some(S(2)));
        b.next("k", t0 + S(3));
        b.next("k", t0 + S(7));
        assert_eq!(b.in_backoff_since_update("k", t0 + S(8)), Some(S(4)), "capped");
        b.next("k", t0 + S(20));
        assert_eq!(b.in_backoff_since_update("k", t0 + S(20)), Some(S(1)), "reset");
        b.reset("k");
        assert_eq!(b.get("k"), Duration::ZERO);
    }

    #[test]
    fn counting_from_an_event_as_the_kubelet_does() {
        // The kubelet's crash-loop back-off: 10 s doubling to 5 min, the first restart at once.
        let b = Backoff::new(S(10), S(300));
        let now = Instant::now();
        let exited = now - S(3);
        assert_eq!(b.in_backoff_since("c", exited, now), None, "the first restart is at once");
        b.next("c", now);
        assert_eq!(b.get("c"), S(10));
        assert_eq!(b.in_backoff_since("c", exited, now), Some(S(10)));
        assert_eq!(b.remaining_since("c", exited, now), Some(S(7)));
        b.next("c", now);
        assert_eq!(b.get("c"), S(20));
        for _ in 0..10 {
            b.next("c", now);
        }
        assert_eq!(b.get("c"), S(300));
        let long_ago = now - S(400);
        assert_eq!(b.in_backoff_since("c", long_ago, now), None);
        assert_eq!(b.remaining_since("c", long_ago, now), None);
    }

    #[test]
    fn keys_left_alone_are_forgotten() {
        let b = Backoff::new(S(1), S(4));
        let t0 = Instant::now();
        b.next("old", t0);
        b.next("new", t0 + S(9));
        assert_eq!(b.entries().len(), 1);
        assert_eq!(b.get("new"), S(1));
    }
}
