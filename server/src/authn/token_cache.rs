//! Remembers the bearer tokens that authenticated, as kube-apiserver's cached token
//! authenticator: a token seen in the last [`SUCCESS_TTL`] is not verified again (no
//! signature check, no lookups), so a client that sends the same token with every request
//! pays for its verification once per TTL. Failures are not remembered (upstream's default),
//! so a token that starts to work does so at once. As upstream, a revoked token (its Secret,
//! account or pod deleted) may keep working until its entry expires.
//!
//! Keys are the SHA-256 of the token (the token itself is not kept); at most [`MAX_ENTRIES`]
//! are held: when full, expired entries go, then all.

use std::time::Duration;

use crate::auth::UserInfo;
use crate::ttl_cache::TtlCache;

/// How long a successful authentication is remembered (upstream's `TokenSuccessCacheTTL`).
pub const SUCCESS_TTL: Duration = Duration::from_secs(10);
/// The most tokens remembered.
pub const MAX_ENTRIES: usize = 4096;

/// The cache (see the module doc).
pub struct TokenCache {
    entries: TtlCache<[u8; 32], UserInfo>,
}

impl Default for TokenCache {
    fn default() -> Self {
        TokenCache { entries: TtlCache::new(MAX_ENTRIES) }
    }
}

/// A token's SHA-256: how caches key tokens without keeping them.
pub fn digest(token: &str) -> [u8; 32] {
    // The incremental hasher, not `openssl::sha::sha256`: OpenSSL 3 implements the one-shot
    // function by fetching the digest from its providers on every call, which cost more than
    // hashing the token itself (profiled under api-bench --rbac).
    let mut hasher = openssl::sha::Sha256::new();
    hasher.update(token.as_bytes());
    hasher.finish()
}

impl TokenCache {
    /// The user `token` authenticated as within the TTL, if any.
    pub fn get(&self, token: &str) -> Option<UserInfo> {
        self.entries.get(&digest(token))
    }

    /// Remembers that `token` authenticated as `user`.
    pub fn put(&self, token: &str, user: &UserInfo) {
        self.entries.insert(digest(token), user.clone(), SUCCESS_TTL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_successes_for_the_ttl_within_a_bound() {
        let cache = TokenCache::default();
        let jane = UserInfo::authenticated("jane".into(), vec![]);
        assert_eq!(cache.get("t"), None);
        cache.put("t", &jane);
        assert_eq!(cache.get("t"), Some(jane.clone()));
        assert_eq!(cache.get("u"), None);
        // Expired entries are not answered.
        cache.entries.expire(&digest("t"));
        assert_eq!(cache.get("t"), None);
        for i in 0..MAX_ENTRIES + 10 {
            cache.put(&format!("token-{i}"), &jane);
        }
        assert!(cache.entries.len() <= MAX_ENTRIES);
    }
}
