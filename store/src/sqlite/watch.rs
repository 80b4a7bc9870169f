//! Watches on the embedded store.
//!
//! Each watch is a task. It subscribes to the writer's batches first, then reads any history
//! it needs from the log, then follows the batches, skipping what it already delivered. A
//! watcher that falls behind the batch channel (its consumer is slow) catches up from the log
//! again, so no event is lost and none is sent twice: the task delivers by revision and only
//! ever moves forward.

use bytes::Bytes;
use rusqlite::{params, Connection};

use super::hub::{Batches, KeyRange};
use super::schema::{self, db_error};
use super::writer::Batch;
use super::SqliteStore;
use crate::error::{Error, Result};
use crate::types::{Event, EventKind, KeyValue, Revision, WatchResponse};
use crate::watch::{WatchSender, WatchStream};

/// How many log rows one catch-up read returns.
const CATCH_UP_PAGE: i64 = 1000;

pub(super) async fn start(
    store: SqliteStore,
    key: &str,
    prefix: bool,
    start_revision: Revision,
) -> Result<WatchStream> {
    let range = KeyRange::new(key, prefix);
    // Subscribe before reading anything, so that every batch committed after the reads below
    // is also in the channel.
    let (batches, current) = store.shared.hub.subscribe(range.clone());
    let next = if start_revision <= 0 {
        current + 1
    } else {
        let compacted = store.read(|conn| schema::compact_revision(conn)).await?;
        if start_revision < compacted {
            return Err(Error::Compacted { requested: start_revision, compacted });
        }
        start_revision
    };
    // Only history up to the current revision is read from the log; anything newer arrives
    // in the batches.
    let behind = next <= current;
    let (sender, stream) = WatchStream::channel();
    tokio::spawn(Watcher { store, range, next, sender }.run(batches, behind));
    Ok(stream)
}

struct Watcher {
    store: SqliteStore,
    range: KeyRange,
    /// The lowest revision not yet delivered.
    next: Revision,
    sender: WatchSender,
}

impl Watcher {
    async fn run(mut self, mut batches: Batches, mut behind: bool) {
        let progress = self.sender.progress.clone();
        // Catch up from the log first when asked for history (and again whenever the batch
        // channel overflowed).
        loop {
            if behind {
                match self.catch_up().await {
                    Ok(true) => behind = false,
                    Ok(false) => return, // the consumer went away
                    Err(e) => {
                        let _ = self.sender.tx.send(Err(e)).await;
                        return;
                    }
                }
            }
            tokio::select! {
                batch = batches.recv() => match batch {
                    // Batches left out before this one are read from the log first.
                    Some(_) if batches.take_lagged() => behind = true,
                    Some(batch) => {
                        if !self.deliver(&batch).await {
                            return;
                        }
                    }
                    None => {
                        let _ = self.sender.tx.send(Err(Error::Unavailable("the store is closed".into()))).await;
                        return;
                    }
                },
                _ = progress.notified() => {
                    // Batches that do not touch this watch never reach it: it has seen every
                    // revision the store has published once those queued are delivered.
                    let seen = self.store.shared.current();
                    let mut lagged = false;
                    while let Some(batch) = batches.try_recv() {
                        if batches.take_lagged() {
                            lagged = true;
                            break;
                        }
                        if !self.deliver(&batch).await {
                            return;
                        }
                    }
                    if lagged {
                        // Answered after catching up from the log.
                        behind = true;
                        progress.notify_one();
                        continue;
                    }
                    self.next = self.next.max(seen + 1);
                    let response = WatchResponse { events: Vec::new(), revision: self.next - 1 };
                    if self.sender.tx.send(Ok(response)).await.is_err() {
                        return;
                    }
                }
                _ = self.sender.tx.closed() => return,
            }
        }
    }

    /// Sends the events of a batch this watch covers and has not sent yet.
    async fn deliver(&mut self, batch: &Batch) -> bool {
        if batch.last_revision < self.next {
            return true;
        }
        let events: Vec<Event> = batch
            .events
            .iter()
            .filter(|e| e.revision() >= self.next && self.range.contains(e.kv.key.as_bytes()))
            .cloned()
            .collect();
        self.next = batch.last_revision + 1;
        if events.is_empty() {
            return true;
        }
        let revision = events.last().map(Event::revision).unwrap_or(self.next - 1);
        self.sender.tx.send(Ok(WatchResponse { events, revision })).await.is_ok()
    }

    /// Reads and sends the logged events from `next` to the newest commit. Returns false when
    /// the consumer went away.
    async fn catch_up(&mut self) -> Result<bool> {
        loop {
            let (range, from) = (self.range.clone(), self.next);
            let (events, newest) =
                self.store.read(move |conn| read_log(conn, &range, from)).await?;
            let done = events.len() < CATCH_UP_PAGE as usize;
            if let Some(last) = events.last() {
                let revision = last.revision();
                self.next = revision + 1;
                if self.sender.tx.send(Ok(WatchResponse { events, revision })).await.is_err() {
                    return Ok(false);
                }
            }
            if done {
                self.next = self.next.max(newest + 1);
                return Ok(true);
            }
        }
    }
}

/// Up to a page of logged events in `range` from revision `from` on, and the newest revision
/// of the snapshot they were read from.
fn read_log(
    conn: &mut Connection,
    range: &KeyRange,
    from: Revision,
) -> Result<(Vec<Event>, Revision)> {
    let tx = conn.transaction().map_err(db_error)?;
    let compacted = schema::compact_revision(&tx)?;
    if from < compacted {
        return Err(Error::Compacted { requested: from, compacted });
    }
    let newest = schema::current_revision(&tx)?;
    let mut stmt = tx
        .prepare_cached(
            "SELECT e.revision, e.key, e.created, e.version, e.deleted, e.value,
                    p.revision, p.created, p.version, p.deleted, p.value
             FROM kv AS e LEFT JOIN kv AS p ON p.revision = e.prev_revision
             WHERE e.revision >= ?1 AND e.key >= ?2 AND (?3 IS NULL OR e.key < ?3)
             ORDER BY e.revision LIMIT ?4",
        )
        .map_err(db_error)?;
    let mut rows =
        stmt.query(params![from, range.start, range.end, CATCH_UP_PAGE]).map_err(db_error)?;
    let mut events = Vec::new();
    while let Some(r) = rows.next().map_err(db_error)? {
        let revision: Revision = r.get(0).map_err(db_error)?;
        let key = String::from_utf8(r.get::<_, Vec<u8>>(1).map_err(db_error)?)
            .map_err(|e| Error::Backend(format!("bad key in log: {e}")))?;
        let deleted: bool = r.get(4).map_err(db_error)?;
        let prev_revision: Option<Revision> = r.get(6).map_err(db_error)?;
        let prev_deleted: Option<bool> = r.get(9).map_err(db_error)?;
        let prev = match (prev_revision, prev_deleted) {
            (Some(rev), Some(false)) => Some(KeyValue {
                key: key.clone(),
                value: Bytes::from(r.get::<_, Vec<u8>>(10).map_err(db_error)?),
                create_revision: r.get(7).map_err(db_error)?,
                mod_revision: rev,
                version: r.get(8).map_err(db_error)?,
            }),
            _ => None,
        };
        let kv = if deleted {
            KeyValue {
                key,
                value: Bytes::new(),
                create_revision: 0,
                mod_revision: revision,
                version: 0,
            }
        } else {
            KeyValue {
                key,
                value: Bytes::from(r.get::<_, Vec<u8>>(5).map_err(db_error)?),
                create_revision: r.get(2).map_err(db_error)?,
                mod_revision: revision,
                version: r.get(3).map_err(db_error)?,
            }
        };
        let kind = if deleted { EventKind::Delete } else { EventKind::Put };
        events.push(Event { kind, kv, prev });
    }
    Ok((events, newest))
}
