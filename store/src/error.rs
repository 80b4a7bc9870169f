//! The errors of the store.

use crate::types::{KeyValue, Revision};

/// The result type of every store call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything a store call can fail with. Guard failures carry the current value, so a caller
/// can retry without reading again.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `create` of a key that exists.
    #[error("key {:?} already exists", current.key)]
    AlreadyExists { current: KeyValue },

    /// The guard on the key's `mod_revision` did not hold. `current` is the key now, `None`
    /// when it does not exist.
    #[error("{}", match current {
        Some(kv) => format!("key {:?} is at revision {}, not the expected one", kv.key, kv.mod_revision),
        None => "the key does not exist".to_string(),
    })]
    Conflict { current: Option<KeyValue> },

    /// `delete` without a guard of a key that does not exist.
    #[error("key {key:?} not found")]
    NotFound { key: String },

    /// The revision asked for (or the next event a watcher needs) has been compacted.
    #[error("revision {requested} has been compacted; the oldest available is {compacted}")]
    Compacted { requested: Revision, compacted: Revision },

    /// The revision asked for is newer than the store's current revision.
    #[error("revision {requested} is newer than the current revision {current}")]
    FutureRevision { requested: Revision, current: Revision },

    /// An empty or otherwise unusable key.
    #[error("invalid key {key:?}: {reason}")]
    InvalidKey { key: String, reason: &'static str },

    /// A value over [`MAX_VALUE_SIZE`](crate::MAX_VALUE_SIZE).
    #[error("value of {size} bytes for key {key:?} is over the limit of {limit} bytes")]
    ValueTooLarge { key: String, size: usize, limit: usize },

    /// The backend cannot be reached (etcd down, the writer thread gone).
    #[error("store unavailable: {0}")]
    Unavailable(String),

    /// The data dir or its database cannot be used: what is wrong and what to do.
    #[error("{0}")]
    Database(String),

    /// Any other failure of the backend.
    #[error("store backend error: {0}")]
    Backend(String),
}

impl Error {
    /// True for the errors that mean "try the same call again later".
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Unavailable(_))
    }
}
