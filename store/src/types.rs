//! The values the [`Store`](crate::Store) trait takes and returns.

use bytes::Bytes;

/// A store revision: one global counter, incremented by every write. The API server's
/// `resourceVersion` is its decimal string.
pub type Revision = i64;

/// The largest value a key may hold: 3 MiB, above etcd's default request limit of 1.5 MiB
/// so that anything etcd takes, the embedded store takes too.
pub const MAX_VALUE_SIZE: usize = 3 * 1024 * 1024;

/// A key with its value and revisions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Bytes,
    /// The revision that created the key.
    pub create_revision: Revision,
    /// The revision of the key's last write.
    pub mod_revision: Revision,
    /// 1 when created, +1 on every update.
    pub version: i64,
}

/// What a successful delete returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deleted {
    /// The revision of the delete itself.
    pub revision: Revision,
    /// The key as it was just before the delete.
    pub prev: KeyValue,
}

/// A read of many keys: every key starting with `prefix`, from `continue_from` on.
#[derive(Clone, Debug, Default)]
pub struct RangeRequest<'a> {
    /// Keys that start with this. An empty prefix means every key.
    pub prefix: &'a str,
    /// Where to start (inclusive); must start with `prefix`. `None` starts at the prefix.
    pub continue_from: Option<&'a str>,
    /// At most this many keys; `None` or 0 means no limit.
    pub limit: Option<usize>,
    /// Read at this past revision; `None` reads the latest.
    pub revision: Option<Revision>,
}

impl<'a> RangeRequest<'a> {
    /// Every key under `prefix`, at the latest revision.
    pub fn prefix(prefix: &'a str) -> Self {
        RangeRequest { prefix, ..Default::default() }
    }

    /// At most `limit` keys.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Starting at `key` (inclusive).
    pub fn continue_from(mut self, key: &'a str) -> Self {
        self.continue_from = Some(key);
        self
    }

    /// At a past revision.
    pub fn at_revision(mut self, revision: Revision) -> Self {
        self.revision = Some(revision);
        self
    }
}

/// A page of keys.
#[derive(Clone, Debug, Default)]
pub struct RangeResponse {
    /// The keys, in ascending byte order.
    pub kvs: Vec<KeyValue>,
    /// True when keys beyond the limit are left.
    pub more: bool,
    /// How many keys there are from the start of this page to the end of the prefix (this page
    /// included), at `revision`. The API server's `remainingItemCount` is `count - kvs.len()`.
    pub count: i64,
    /// The revision the read was served at: ask for the next page at this revision.
    pub revision: Revision,
}

/// Whether an event wrote or deleted a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Put,
    Delete,
}

/// One change to one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    /// For a put, the key as written. For a delete, the key with an empty value, its
    /// `mod_revision` the revision of the delete, and `create_revision` and `version` 0 (as
    /// etcd reports them).
    pub kv: KeyValue,
    /// The key before this event, when it existed.
    pub prev: Option<KeyValue>,
}

impl Event {
    /// The revision of the write this event reports.
    pub fn revision(&self) -> Revision {
        self.kv.mod_revision
    }
}

/// One message of a watch: a run of events in revision order, or, with no events, a progress
/// notification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchResponse {
    pub events: Vec<Event>,
    /// For a progress notification: the watcher has now seen every event up to this revision.
    /// For events: the revision of the last event.
    pub revision: Revision,
}

impl WatchResponse {
    /// True for a progress notification (no events).
    pub fn is_progress(&self) -> bool {
        self.events.is_empty()
    }
}
