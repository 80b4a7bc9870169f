//! The writer thread: the only connection that writes, with group commit.
//!
//! It blocks for the next command, takes every other write already queued (up to
//! `max_batch`), applies them in order in one transaction, and commits. Only after the commit
//! is durable does it publish the batch's events to the watchers and answer the callers. A
//! guard that fails answers with the current value and takes no revision. If the commit
//! fails, every write of the batch fails and the revision counter goes back.

use std::fs::File;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;

use bytes::Bytes;
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use tokio::sync::oneshot;

use super::hub::Hub;

use super::schema::{self, db_error};
use crate::error::{Error, Result};
use crate::types::{Deleted, Event, EventKind, KeyValue, Revision};

/// A write the writer applies.
#[derive(Debug)]
pub(crate) enum WriteOp {
    Create { key: String, value: Bytes },
    Update { key: String, value: Bytes, expected: Revision },
    Delete { key: String, expected: Option<Revision> },
}

/// What a successful write did.
#[derive(Debug)]
pub(crate) enum WriteOutcome {
    Put(KeyValue),
    Deleted(Deleted),
}

/// What the store sends the writer.
pub(crate) enum Command {
    Write(WriteOp, oneshot::Sender<Result<WriteOutcome>>),
    Compact(Revision, oneshot::Sender<Result<()>>),
    Shutdown(oneshot::Sender<()>),
}

/// The events of one committed transaction, in revision order.
#[derive(Debug)]
pub(crate) struct Batch {
    pub events: Vec<Event>,
    /// The revision of the last write in the batch.
    pub last_revision: Revision,
}

pub(crate) struct Writer {
    conn: Connection,
    revision: Revision,
    max_batch: usize,
    hub: Arc<Hub>,
    /// Held while the writer runs; dropping it unlocks the data dir.
    _lock: File,
}

/// The latest row of a key.
struct Row {
    revision: Revision,
    created: Revision,
    version: i64,
    deleted: bool,
}

impl Writer {
    pub(crate) fn new(
        conn: Connection,
        revision: Revision,
        max_batch: usize,
        hub: Arc<Hub>,
        lock: File,
    ) -> Writer {
        Writer { conn, revision, max_batch: max_batch.max(1), hub, _lock: lock }
    }

    /// Serves commands until shut down or until every store handle is gone.
    pub(crate) fn run(mut self, commands: Receiver<Command>) {
        let mut pending = Vec::new();
        while let Ok(first) = commands.recv() {
            let mut next = Some(first);
            // Group commit: every write queued right now goes into one transaction.
            while let Some(command) = next.take() {
                match command {
                    Command::Write(op, reply) => {
                        pending.push((op, reply));
                        if pending.len() < self.max_batch {
                            match commands.try_recv() {
                                Ok(c) => next = Some(c),
                                Err(TryRecvError::Empty | TryRecvError::Disconnected) => {}
                            }
                        }
                    }
                    Command::Compact(revision, reply) => {
                        self.commit(&mut pending);
                        let _ = reply.send(self.compact(revision));
                    }
                    Command::Shutdown(reply) => {
                        self.commit(&mut pending);
                        self.hub.close();
                        drop(self);
                        let _ = reply.send(());
                        return;
                    }
                }
            }
            self.commit(&mut pending);
        }
        self.hub.close();
    }

    /// Applies the pending writes in one transaction, commits, publishes, answers.
    fn commit(&mut self, pending: &mut Vec<(WriteOp, oneshot::Sender<Result<WriteOutcome>>)>) {
        if pending.is_empty() {
            return;
        }
        let start = self.revision;
        let mut results = Vec::with_capacity(pending.len());
        let mut events = Vec::new();
        let committed = (|| -> Result<()> {
            let tx = self.conn.transaction().map_err(db_error)?;
            for (op, _) in pending.iter() {
                let result = apply(&tx, &mut self.revision, op)?;
                if let Ok((_, event)) = &result {
                    events.push(event.clone());
                }
                results.push(result.map(|(outcome, _)| outcome));
            }
            tx.commit().map_err(db_error)
        })();
        if let Err(e) = committed {
            tracing::error!(error = %e, "store commit failed");
            self.revision = start;
            for (_, reply) in pending.drain(..) {
                let _ = reply.send(Err(Error::Backend(format!("commit failed: {e}"))));
            }
            return;
        }
        if self.revision != start {
            self.hub.publish(&Arc::new(Batch { events, last_revision: self.revision }));
        }
        for ((_, reply), result) in pending.drain(..).zip(results) {
            let _ = reply.send(result);
        }
    }

    /// Drops history before `revision`, in chunks so that no transaction grows too large.
    fn compact(&mut self, revision: Revision) -> Result<()> {
        let compacted = schema::compact_revision(&self.conn)?;
        if revision <= compacted {
            return Err(Error::Compacted { requested: revision, compacted });
        }
        if revision > self.revision {
            return Err(Error::FutureRevision { requested: revision, current: self.revision });
        }
        const CHUNK: i64 = 10_000;
        let mut from = compacted.max(0);
        while from < revision {
            let to = (from + CHUNK).min(revision);
            let tx = self.conn.transaction().map_err(db_error)?;
            // A row before the compact revision goes when it is a deletion or when a newer row
            // of the same key, also before the compact revision, replaced it: the state just
            // before `revision` stays, so every later event keeps its previous value.
            tx.execute(
                "DELETE FROM kv WHERE revision >= ?1 AND revision < ?2 AND (deleted = 1 OR
                   EXISTS (SELECT 1 FROM kv AS newer WHERE newer.key = kv.key
                           AND newer.revision > kv.revision AND newer.revision < ?3))",
                params![from, to, revision],
            )
            .map_err(db_error)?;
            if to == revision {
                schema::set_meta(&tx, "compact_revision", revision)?;
            }
            tx.commit().map_err(db_error)?;
            from = to;
        }
        tracing::debug!(revision, "compacted store");
        Ok(())
    }
}

/// Applies one write inside the batch's transaction. The outer error aborts the batch (an
/// SQLite failure); the inner one is the caller's answer (a guard that did not hold).
#[allow(clippy::type_complexity)]
fn apply(
    tx: &Transaction<'_>,
    revision: &mut Revision,
    op: &WriteOp,
) -> Result<Result<(WriteOutcome, Event)>> {
    let key = match op {
        WriteOp::Create { key, .. } | WriteOp::Update { key, .. } | WriteOp::Delete { key, .. } => {
            key
        }
    };
    let latest = latest_row(tx, key)?.filter(|row| !row.deleted);
    match (op, latest) {
        (WriteOp::Create { key, value }, None) => {
            let next = *revision + 1;
            insert(tx, next, key, next, 1, false, 0, value)?;
            *revision = next;
            let kv = KeyValue {
                key: key.clone(),
                value: value.clone(),
                create_revision: next,
                mod_revision: next,
                version: 1,
            };
            let event = Event { kind: EventKind::Put, kv: kv.clone(), prev: None };
            Ok(Ok((WriteOutcome::Put(kv), event)))
        }
        (WriteOp::Create { .. }, Some(row)) => {
            Ok(Err(Error::AlreadyExists { current: load(tx, key, &row)? }))
        }
        (WriteOp::Update { key, value, expected }, Some(row)) if row.revision == *expected => {
            let prev = load(tx, key, &row)?;
            let next = *revision + 1;
            insert(tx, next, key, row.created, row.version + 1, false, row.revision, value)?;
            *revision = next;
            let kv = KeyValue {
                key: key.clone(),
                value: value.clone(),
                create_revision: row.created,
                mod_revision: next,
                version: row.version + 1,
            };
            let event = Event { kind: EventKind::Put, kv: kv.clone(), prev: Some(prev) };
            Ok(Ok((WriteOutcome::Put(kv), event)))
        }
        (WriteOp::Delete { key, expected }, Some(row))
            if expected.is_none_or(|e| e == row.revision) =>
        {
            let prev = load(tx, key, &row)?;
            let next = *revision + 1;
            insert(tx, next, key, row.created, row.version, true, row.revision, &Bytes::new())?;
            *revision = next;
            let event = Event {
                kind: EventKind::Delete,
                kv: KeyValue {
                    key: key.clone(),
                    value: Bytes::new(),
                    create_revision: 0,
                    mod_revision: next,
                    version: 0,
                },
                prev: Some(prev.clone()),
            };
            Ok(Ok((WriteOutcome::Deleted(Deleted { revision: next, prev }), event)))
        }
        (WriteOp::Delete { key, expected: None }, None) => {
            Ok(Err(Error::NotFound { key: key.clone() }))
        }
        (_, Some(row)) => Ok(Err(Error::Conflict { current: Some(load(tx, key, &row)?) })),
        (_, None) => Ok(Err(Error::Conflict { current: None })),
    }
}

fn latest_row(tx: &Transaction<'_>, key: &str) -> Result<Option<Row>> {
    let mut stmt = tx
        .prepare_cached(
            "SELECT revision, created, version, deleted FROM kv
             WHERE key = ?1 ORDER BY revision DESC LIMIT 1",
        )
        .map_err(db_error)?;
    stmt.query_row([key.as_bytes()], |r| {
        Ok(Row { revision: r.get(0)?, created: r.get(1)?, version: r.get(2)?, deleted: r.get(3)? })
    })
    .optional()
    .map_err(db_error)
}

/// The full key-value of a row found by [`latest_row`].
fn load(tx: &Transaction<'_>, key: &str, row: &Row) -> Result<KeyValue> {
    let mut stmt =
        tx.prepare_cached("SELECT value FROM kv WHERE revision = ?1").map_err(db_error)?;
    let value: Vec<u8> = stmt.query_row([row.revision], |r| r.get(0)).map_err(db_error)?;
    Ok(KeyValue {
        key: key.to_string(),
        value: Bytes::from(value),
        create_revision: row.created,
        mod_revision: row.revision,
        version: row.version,
    })
}

#[allow(clippy::too_many_arguments)]
fn insert(
    tx: &Transaction<'_>,
    revision: Revision,
    key: &str,
    created: Revision,
    version: i64,
    deleted: bool,
    prev_revision: Revision,
    value: &Bytes,
) -> Result<()> {
    let mut stmt = tx
        .prepare_cached(
            "INSERT INTO kv (revision, key, created, version, deleted, prev_revision, value)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .map_err(db_error)?;
    stmt.execute(params![
        revision,
        key.as_bytes(),
        created,
        version,
        deleted,
        prev_revision,
        value.as_ref()
    ])
    .map_err(db_error)?;
    Ok(())
}
