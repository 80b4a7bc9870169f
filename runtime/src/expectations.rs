//! Controller expectations, as client-go's `ControllerExpectations`: after a controller asks
//! for creates or deletes it does not act on the same owner again until its informer has seen
//! them all (or a timeout passes), so a cache that lags behind its own writes never makes it
//! create or delete twice.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long expectations hold before they are treated as met anyway (upstream: 5 minutes),
/// in case an event was missed.
pub const TIMEOUT: Duration = Duration::from_secs(5 * 60);

#[derive(Debug)]
struct Expected {
    adds: i64,
    deletes: i64,
    since: Instant,
}

/// Outstanding creates and deletes per owner key (`namespace/name`).
#[derive(Debug, Default)]
pub struct Expectations {
    by_key: Mutex<HashMap<String, Expected>>,
}

impl Expectations {
    pub fn new() -> Expectations {
        Expectations::default()
    }

    /// Whether `key` may be synced: nothing outstanding, expectations timed out, or none set.
    pub fn satisfied(&self, key: &str) -> bool {
        let by_key = self.by_key.lock().expect("expectations");
        match by_key.get(key) {
            None => true,
            Some(e) => (e.adds <= 0 && e.deletes <= 0) || e.since.elapsed() > TIMEOUT,
        }
    }

    /// Sets what `key` waits for (replacing anything before).
    pub fn expect(&self, key: &str, adds: i64, deletes: i64) {
        let entry = Expected { adds, deletes, since: Instant::now() };
        self.by_key.lock().expect("expectations").insert(key.to_string(), entry);
    }

    /// One create was seen (or will never happen: a failed create is lowered the same way).
    pub fn creation_observed(&self, key: &str) {
        if let Some(e) = self.by_key.lock().expect("expectations").get_mut(key) {
            e.adds -= 1;
        }
    }

    /// One delete was seen (or will never happen).
    pub fn deletion_observed(&self, key: &str) {
        if let Some(e) = self.by_key.lock().expect("expectations").get_mut(key) {
            e.deletes -= 1;
        }
    }

    /// Forgets `key` (its owner is gone).
    pub fn delete(&self, key: &str) {
        self.by_key.lock().expect("expectations").remove(key);
    }
}

/// Each owner's uid as last seen, to tell when expectations no longer apply: the owner is
/// gone, or was deleted and made again under its name (what was awaited was the old one's).
#[derive(Debug, Default)]
pub struct OwnerUids(HashMap<String, String>);

impl OwnerUids {
    /// Notes the owner at `key` (`None`: gone); true when its expectations must be dropped.
    pub fn changed(&mut self, key: &str, uid: Option<String>) -> bool {
        match uid {
            None => {
                self.0.remove(key);
                true
            }
            Some(uid) => self.0.insert(key.to_string(), uid.clone()).is_some_and(|old| old != uid),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_waits_until_every_expected_change_is_observed() {
        let e = Expectations::new();
        assert!(e.satisfied("ns/rs"));
        e.expect("ns/rs", 2, 0);
        assert!(!e.satisfied("ns/rs"));
        e.creation_observed("ns/rs");
        assert!(!e.satisfied("ns/rs"));
        e.creation_observed("ns/rs");
        assert!(e.satisfied("ns/rs"));
        e.expect("ns/rs", 0, 1);
        assert!(!e.satisfied("ns/rs"));
        e.deletion_observed("ns/rs");
        assert!(e.satisfied("ns/rs"));
        e.expect("ns/rs", 1, 0);
        e.delete("ns/rs");
        assert!(e.satisfied("ns/rs"));
    }

    #[test]
    fn an_owner_made_again_under_its_name_starts_afresh() {
        let mut uids = OwnerUids::default();
        assert!(!uids.changed("ns/rs", Some("u1".into())));
        assert!(!uids.changed("ns/rs", Some("u1".into())));
        assert!(uids.changed("ns/rs", Some("u2".into())));
        assert!(uids.changed("ns/rs", None));
        assert!(!uids.changed("ns/rs", Some("u3".into())));
    }
}
