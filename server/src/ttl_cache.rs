//! A bounded map whose entries expire: what the server remembers of answers it got elsewhere
//! or worked out at some cost (tokens that authenticated, the token and authorization
//! webhooks' answers). Each entry lives for the TTL it was put with; when the map is full,
//! expired entries go, then all of them, so memory stays bounded whatever callers send.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The map (see the module doc).
pub struct TtlCache<K, V> {
    entries: Mutex<HashMap<K, (V, Instant)>>,
    max: usize,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    /// A cache of at most `max` entries.
    pub fn new(max: usize) -> TtlCache<K, V> {
        TtlCache { entries: Mutex::default(), max }
    }

    /// The value kept for `key`, unless it has expired.
    pub fn get(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.get(key).filter(|(_, until)| Instant::now() < *until).map(|(v, _)| v.clone())
    }

    /// Keeps `value` for `ttl` (a zero TTL keeps nothing).
    pub fn insert(&self, key: K, value: V, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= self.max {
            entries.retain(|_, (_, until)| *until > now);
            if entries.len() >= self.max {
                entries.clear();
            }
        }
        entries.insert(key, (value, now + ttl));
    }

    /// How many entries are held, expired ones included.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Makes `key`'s entry expire now (tests).
    #[cfg(test)]
    pub fn expire(&self, key: &K) {
        if let Some(entry) = self.entries.lock().unwrap().get_mut(key) {
            entry.1 = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_the_map_stays_bounded() {
        let cache = TtlCache::new(4);
        cache.insert("a", 1, Duration::from_secs(60));
        cache.insert("b", 2, Duration::ZERO);
        assert_eq!((cache.get(&"a"), cache.get(&"b")), (Some(1), None));
        cache.expire(&"a");
        assert_eq!(cache.get(&"a"), None);
        for key in ["c", "d", "e", "f", "g"] {
            cache.insert(key, 0, Duration::from_secs(60));
        }
        assert!(cache.len() <= 4);
    }
}
