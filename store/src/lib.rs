//! Revisioned key-value storage with watch, with etcd's semantics, for the rkube API server.
//!
//! Start at the [`Store`] trait: it states every guarantee a backend gives, one by one. Two
//! backends implement it:
//!
//! - [`SqliteStore`] (the default, embedded): a revision log in one SQLite file, in the manner
//!   of k3s's kine, written by one writer thread that batches concurrent writes into one durable
//!   transaction (group commit). Watch events come straight from that writer.
//! - [`EtcdStore`]: a real etcd cluster through `etcd-client`, with transactions comparing
//!   `mod_revision` and watches with previous values.
//!
//! The store knows keys, bytes and revisions only; it knows nothing of Kubernetes objects. The
//! API server maps `resourceVersion` to [`Revision`] and keys to
//! `/registry/<resource>/<namespace>/<name>`.
//!
//! [`Compactor`] compacts any backend on a timer. With the `testing` feature,
//! [`testing::EtcdServer`] starts a real etcd on loopback ports for tests and benchmarks.
//!
//! The same contract suite (`tests/contract.rs`) runs against both backends.

mod compactor;
mod error;
mod etcd;
mod keys;
mod sqlite;
mod types;
mod watch;

#[cfg(feature = "testing")]
pub mod testing;

pub use compactor::Compactor;
pub use error::{Error, Result};
pub use etcd::{EtcdOptions, EtcdStore};
pub use keys::prefix_end;
pub use sqlite::{SqliteOptions, SqliteStore};
pub use types::{
    Deleted, Event, EventKind, KeyValue, RangeRequest, RangeResponse, Revision, WatchResponse,
    MAX_VALUE_SIZE,
};
pub use watch::WatchStream;

use async_trait::async_trait;
use bytes::Bytes;

/// A revisioned key-value store with watch: the contract every backend keeps.
///
/// # Revisions
///
/// - There is one global revision for the whole store. Every successful write (create, update,
///   delete) increments it by exactly one; failed writes (a guard that does not hold) and reads
///   leave it unchanged. A new store is at revision 1 (as etcd), with no keys.
/// - Each live key carries `create_revision` (the revision that created it), `mod_revision`
///   (the revision of its last write) and `version` (1 on create, +1 on every update; a delete
///   ends the key, and a later create starts again at 1).
///
/// # Reads
///
/// - [`get`](Store::get) and [`range`](Store::range) read the latest state, or the state at a
///   past revision. A revision older than the last compaction fails with
///   [`Error::Compacted`]; one newer than the current revision fails with
///   [`Error::FutureRevision`].
/// - A range over a prefix returns keys in ascending byte order, at most `limit` of them, and
///   says whether there are more. To read the next page, ask again from the key after the
///   last one returned ([`RangeRequest::continue_from`]) at the revision the first page
///   returned: every page then shows the store at that one revision, whatever is written in
///   between (until that revision is compacted).
///
/// # Writes
///
/// - [`create`](Store::create) fails with [`Error::AlreadyExists`] (carrying the current
///   value) when the key exists.
/// - [`update`](Store::update) and [`delete`](Store::delete) are compare-and-swap on the key's
///   `mod_revision`: when the guard fails they change nothing and return
///   [`Error::Conflict`] with the current value (or `None` when the key does not exist), so a
///   caller can retry without another read. Of many concurrent writers guarding on the same
///   revision exactly one wins.
/// - A write is acknowledged only once it is durable: after a crash every acknowledged write is
///   there, with the revision it was acknowledged with.
/// - Keys must be non-empty; values are at most [`MAX_VALUE_SIZE`] bytes. Bad input fails
///   with [`Error::InvalidKey`] or [`Error::ValueTooLarge`] and writes nothing.
///
/// # Watch
///
/// - [`watch`](Store::watch) streams every event on keys under a prefix (or one key) with
///   revision `>= start_revision`, in revision order, with no gaps and no duplicates; each
///   event carries the previous value of the key when there was one. `start_revision` 0 means
///   "from the next write on".
/// - A start revision that is older than the last compaction fails with
///   [`Error::Compacted`] (the API server answers 410 Gone). A watcher that falls so far
///   behind that the events it still needs were compacted receives `Err(Error::Compacted)` as
///   the last item of its stream.
/// - [`WatchStream::request_progress`] asks for a progress notification: a response with no
///   events whose revision tells the watcher it has seen every event up to that revision (the
///   API server turns it into a bookmark).
///
/// # Compaction
///
/// - [`compact`](Store::compact) drops the history older than a revision: the state at that
///   revision and every later one stays readable and watchable. Compacting to a revision not
///   newer than the last compaction fails with [`Error::Compacted`]; to one newer than the
///   current revision with [`Error::FutureRevision`].
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The key at the latest revision (`revision` = `None`) or at a past one. Returns the
    /// value, if the key existed then, and the revision the read was served at.
    async fn get(
        &self,
        key: &str,
        revision: Option<Revision>,
    ) -> Result<(Option<KeyValue>, Revision)>;

    /// A page of keys under a prefix, see [`RangeRequest`].
    async fn range(&self, request: RangeRequest<'_>) -> Result<RangeResponse>;

    /// How many keys live under `prefix` now, and the revision of that answer.
    async fn count(&self, prefix: &str) -> Result<(i64, Revision)>;

    /// The current revision of the store.
    async fn current_revision(&self) -> Result<Revision>;

    /// Creates `key`; fails with [`Error::AlreadyExists`] when it exists.
    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue>;

    /// Replaces the value of `key` if its `mod_revision` is `expected`; otherwise
    /// [`Error::Conflict`] with the current value.
    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<KeyValue>;

    /// Deletes `key`, if its `mod_revision` is `expected` (when given). Fails with
    /// [`Error::NotFound`] when the key does not exist and no guard was given, with
    /// [`Error::Conflict`] when the guard does not hold.
    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted>;

    /// Watches `key`, or every key under it when `prefix` is true, from `start_revision`.
    async fn watch(&self, key: &str, prefix: bool, start_revision: Revision)
        -> Result<WatchStream>;

    /// Drops history older than `revision`.
    async fn compact(&self, revision: Revision) -> Result<()>;
}
