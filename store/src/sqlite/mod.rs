//! The embedded backend: a revision log in one SQLite file, in the manner of k3s's kine.
//!
//! Every write appends one row to the table `kv` (revision, key, create revision, version,
//! deleted flag, the previous row's revision, value); the latest row of a key at or before a
//! revision is the key's state then. One writer thread ([`writer`]) owns the only writing
//! connection: it takes every write queued at that moment, applies them in one transaction,
//! commits (WAL with `synchronous=FULL`, so the commit is on disk), then publishes the events
//! to the watches they touch ([`hub`], [`watch`]) and acknowledges the callers. Reads ([`read`]) run on a small
//! pool of read connections, each in one read transaction, so a read sees one revision.
//!
//! A lock file keeps a second process (or a second store in this one) off the data dir. The
//! directory is 0700 and its files 0600 ([`private`]): they hold every Secret.

mod hub;
mod private;
mod read;
mod schema;
mod watch;
mod writer;

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::keys::{check_key, check_value};
use crate::types::{Deleted, KeyValue, RangeRequest, RangeResponse, Revision};
use crate::watch::WatchStream;
use crate::Store;

use writer::{Command, WriteOp, WriteOutcome};

/// The file name of the database inside the data dir.
pub const DB_FILE: &str = "state.db";
/// How many reads run at once, each on its own connection.
const MAX_READERS: usize = 8;
/// The lock file that keeps a second store off the data dir.
const LOCK_FILE: &str = "state.lock";

/// Tuning of the SQLite backend. The defaults suit the API server.
#[derive(Clone, Debug)]
pub struct SqliteOptions {
    /// At most this many writes go into one transaction.
    pub max_batch: usize,
    /// How many published write batches a watcher may fall behind before it catches up from
    /// the log instead.
    pub watch_channel_capacity: usize,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions { max_batch: 1024, watch_channel_capacity: 4096 }
    }
}

/// The embedded store. Cheap to clone: clones share one writer and one read pool.
#[derive(Clone)]
pub struct SqliteStore {
    shared: Arc<Shared>,
}

/// What the writer thread, the readers and the watchers share.
pub(crate) struct Shared {
    path: PathBuf,
    commands: std::sync::mpsc::Sender<Command>,
    /// Idle read connections.
    readers: Mutex<Vec<Connection>>,
    /// Bounds the reads running at once (and so the read connections open).
    read_slots: tokio::sync::Semaphore,
    /// Where the writer publishes each commit's events to the watches.
    hub: Arc<hub::Hub>,
    /// The revision of the last commit that was published; set by the hub as it publishes.
    current: Arc<AtomicI64>,
}

impl SqliteStore {
    /// Opens (or creates) the store in `dir`, creating the directory when missing.
    ///
    /// Fails with [`Error::Database`] and a message saying what to do when the directory cannot
    /// be used, the database file is corrupt or belongs to another program, or another store
    /// has the directory open. A failed open changes nothing on disk.
    pub fn open(dir: impl AsRef<Path>, options: SqliteOptions) -> Result<SqliteStore> {
        let dir = dir.as_ref();
        private::create_dir(dir)?;
        // The lock first: a directory this user cannot write is refused as such ("Permission
        // denied"), before any attempt to change its mode.
        let lock = lock_data_dir(dir)?;
        private::tighten(dir, private::DIR_MODE)?;
        let path = dir.join(DB_FILE);
        // The WAL and shared-memory files take the database file's mode when SQLite makes
        // them; ones left by an older, looser store are tightened here.
        private::private_file(&path)?;
        for suffix in ["-wal", "-shm"] {
            let mut name = path.clone().into_os_string();
            name.push(suffix);
            private::tighten(Path::new(&name), private::FILE_MODE)?;
        }
        let conn = schema::open_writer(&path)?;
        let current = schema::current_revision(&conn)?;
        let (commands, command_rx) = std::sync::mpsc::channel();
        let current = Arc::new(AtomicI64::new(current));
        let hub = Arc::new(hub::Hub::new(options.watch_channel_capacity, current.clone()));
        let shared = Arc::new(Shared {
            path: path.clone(),
            commands,
            readers: Mutex::new(Vec::new()),
            read_slots: tokio::sync::Semaphore::new(MAX_READERS),
            hub: hub.clone(),
            current: current.clone(),
        });
        let writer = writer::Writer::new(conn, shared.current(), options.max_batch, hub, lock);
        std::thread::Builder::new()
            .name("rkube-store-writer".into())
            .spawn(move || writer.run(command_rx))
            .map_err(|e| Error::Database(format!("cannot start the store writer thread: {e}")))?;
        tracing::info!(path = %path.display(), revision = shared.current(), "opened SQLite store");
        Ok(SqliteStore { shared })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Stops the writer after the writes already queued, and waits until the database is
    /// closed and the data dir unlocked. Later writes fail with [`Error::Unavailable`].
    pub async fn close(&self) -> Result<()> {
        let (reply, done) = oneshot::channel();
        if self.shared.commands.send(Command::Shutdown(reply)).is_err() {
            return Ok(()); // already closed
        }
        let _ = done.await;
        self.shared.readers.lock().expect("reader pool poisoned").clear();
        Ok(())
    }

    async fn write(&self, op: WriteOp) -> Result<WriteOutcome> {
        let (reply, outcome) = oneshot::channel();
        self.shared
            .commands
            .send(Command::Write(op, reply))
            .map_err(|_| Error::Unavailable("the store is closed".into()))?;
        outcome.await.map_err(|_| Error::Unavailable("the store writer stopped".into()))?
    }

    /// Runs `f` on a read connection from the pool, on the blocking thread pool.
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let shared = self.shared.clone();
        let _slot = self
            .shared
            .read_slots
            .acquire()
            .await
            .map_err(|_| Error::Unavailable("the store is closed".into()))?;
        tokio::task::spawn_blocking(move || {
            let mut conn = match shared.readers.lock().expect("reader pool poisoned").pop() {
                Some(conn) => conn,
                None => schema::open_reader(&shared.path)?,
            };
            let result = f(&mut conn);
            let mut pool = shared.readers.lock().expect("reader pool poisoned");
            if pool.len() < MAX_READERS {
                pool.push(conn);
            }
            result
        })
        .await
        .map_err(|e| Error::Backend(format!("read task failed: {e}")))?
    }
}

/// Takes the data dir's lock file, so that two stores never write one database.
fn lock_data_dir(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    private::tighten(&path, private::FILE_MODE)?;
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(private::FILE_MODE)
        .open(&path)
        .map_err(|e| Error::Database(format!("cannot use data dir {}: {e}", dir.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Database(format!(
            "data dir {} is in use by another rkube store (lock {} is held); stop it or choose \
             another --data-dir",
            dir.display(),
            path.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(Error::Database(format!("cannot lock {}: {e}", path.display())))
        }
    }
}

fn unexpected(outcome: WriteOutcome) -> Error {
    Error::Backend(format!("unexpected writer outcome {outcome:?}"))
}

#[async_trait]
impl Store for SqliteStore {
    async fn get(
        &self,
        key: &str,
        revision: Option<Revision>,
    ) -> Result<(Option<KeyValue>, Revision)> {
        let key = key.to_string();
        self.read(move |conn| read::get(conn, &key, revision)).await
    }

    async fn range(&self, request: RangeRequest<'_>) -> Result<RangeResponse> {
        let request = read::OwnedRange::from(&request);
        self.read(move |conn| read::range(conn, &request)).await
    }

    async fn count(&self, prefix: &str) -> Result<(i64, Revision)> {
        let prefix = prefix.to_string();
        self.read(move |conn| read::count(conn, &prefix)).await
    }

    async fn current_revision(&self) -> Result<Revision> {
        self.read(|conn| {
            let tx = conn.transaction().map_err(schema::db_error)?;
            schema::current_revision(&tx)
        })
        .await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue> {
        check_key(key)?;
        check_value(key, &value)?;
        match self.write(WriteOp::Create { key: key.to_string(), value }).await? {
            WriteOutcome::Put(kv) => Ok(kv),
            other => Err(unexpected(other)),
        }
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<KeyValue> {
        check_key(key)?;
        check_value(key, &value)?;
        match self.write(WriteOp::Update { key: key.to_string(), value, expected }).await? {
            WriteOutcome::Put(kv) => Ok(kv),
            other => Err(unexpected(other)),
        }
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted> {
        check_key(key)?;
        match self.write(WriteOp::Delete { key: key.to_string(), expected }).await? {
            WriteOutcome::Deleted(deleted) => Ok(deleted),
            other => Err(unexpected(other)),
        }
    }

    async fn watch(
        &self,
        key: &str,
        prefix: bool,
        start_revision: Revision,
    ) -> Result<WatchStream> {
        if !prefix {
            check_key(key)?;
        }
        watch::start(self.clone(), key, prefix, start_revision).await
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let (reply, outcome) = oneshot::channel();
        self.shared
            .commands
            .send(Command::Compact(revision, reply))
            .map_err(|_| Error::Unavailable("the store is closed".into()))?;
        outcome.await.map_err(|_| Error::Unavailable("the store writer stopped".into()))?
    }
}

impl Shared {
    fn current(&self) -> Revision {
        self.current.load(Ordering::SeqCst)
    }
}
