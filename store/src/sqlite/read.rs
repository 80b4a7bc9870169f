//! Reads: each runs in one read transaction, so it sees the store at one revision.

use bytes::Bytes;
use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::schema::{self, db_error};
use crate::error::{Error, Result};
use crate::keys::prefix_end;
use crate::types::{KeyValue, RangeRequest, RangeResponse, Revision};

/// A [`RangeRequest`] that can move to the blocking pool.
pub(crate) struct OwnedRange {
    prefix: Vec<u8>,
    start: Vec<u8>,
    limit: usize,
    revision: Option<Revision>,
}

impl From<&RangeRequest<'_>> for OwnedRange {
    fn from(r: &RangeRequest<'_>) -> Self {
        let prefix = r.prefix.as_bytes().to_vec();
        let start = match r.continue_from {
            Some(from) if from.as_bytes() > prefix.as_slice() => from.as_bytes().to_vec(),
            _ => prefix.clone(),
        };
        OwnedRange { prefix, start, limit: r.limit.unwrap_or(0), revision: r.revision }
    }
}

/// The revision a read is served at: the latest, or a past one that is still kept.
fn read_revision(tx: &Transaction<'_>, requested: Option<Revision>) -> Result<Revision> {
    let current = schema::current_revision(tx)?;
    match requested {
        None => Ok(current),
        Some(r) if r <= 0 => Ok(current),
        Some(r) if r > current => Err(Error::FutureRevision { requested: r, current }),
        Some(r) => {
            let compacted = schema::compact_revision(tx)?;
            if r < compacted {
                Err(Error::Compacted { requested: r, compacted })
            } else {
                Ok(r)
            }
        }
    }
}

pub(crate) fn get(
    conn: &mut Connection,
    key: &str,
    revision: Option<Revision>,
) -> Result<(Option<KeyValue>, Revision)> {
    let tx = conn.transaction().map_err(db_error)?;
    let at = read_revision(&tx, revision)?;
    let mut stmt = tx
        .prepare_cached(
            "SELECT revision, created, version, deleted, value FROM kv
             WHERE key = ?1 AND revision <= ?2 ORDER BY revision DESC LIMIT 1",
        )
        .map_err(db_error)?;
    let kv = stmt
        .query_row(params![key.as_bytes(), at], |r| {
            let deleted: bool = r.get(3)?;
            Ok((!deleted).then(|| -> rusqlite::Result<KeyValue> {
                Ok(KeyValue {
                    key: key.to_string(),
                    mod_revision: r.get(0)?,
                    create_revision: r.get(1)?,
                    version: r.get(2)?,
                    value: Bytes::from(r.get::<_, Vec<u8>>(4)?),
                })
            }))
        })
        .optional()
        .map_err(db_error)?
        .flatten()
        .transpose()
        .map_err(db_error)?;
    Ok((kv, at))
}

/// Walks the live keys of `[start, end)` at revision `at`, in key order, calling `visit` with
/// each key's row revision until it returns false. Reads the index only.
fn scan_live(
    tx: &Transaction<'_>,
    start: &[u8],
    end: Option<&[u8]>,
    at: Revision,
    mut visit: impl FnMut(Vec<u8>, Revision) -> bool,
) -> Result<()> {
    // The index orders each key's rows newest first: the first row at or before `at` is the
    // key's state then.
    let sql = if end.is_some() {
        "SELECT key, revision, deleted FROM kv INDEXED BY kv_key
         WHERE key >= ?1 AND key < ?2 AND revision <= ?3 ORDER BY key, revision DESC"
    } else {
        "SELECT key, revision, deleted FROM kv INDEXED BY kv_key
         WHERE key >= ?1 AND ?2 IS NULL AND revision <= ?3 ORDER BY key, revision DESC"
    };
    let mut stmt = tx.prepare_cached(sql).map_err(db_error)?;
    let mut rows = stmt.query(params![start, end, at]).map_err(db_error)?;
    let mut last_key: Option<Vec<u8>> = None;
    while let Some(row) = rows.next().map_err(db_error)? {
        let key: Vec<u8> = row.get(0).map_err(db_error)?;
        if last_key.as_deref() == Some(key.as_slice()) {
            continue; // an older row of a key already seen
        }
        let revision: Revision = row.get(1).map_err(db_error)?;
        let deleted: bool = row.get(2).map_err(db_error)?;
        last_key = Some(key.clone());
        if !deleted && !visit(key, revision) {
            break;
        }
    }
    Ok(())
}

pub(crate) fn range(conn: &mut Connection, request: &OwnedRange) -> Result<RangeResponse> {
    let tx = conn.transaction().map_err(db_error)?;
    let at = read_revision(&tx, request.revision)?;
    let end = prefix_end(&request.prefix);
    let limit = if request.limit == 0 { usize::MAX } else { request.limit };
    let mut found = Vec::new();
    let mut count = 0i64;
    scan_live(&tx, &request.start, end.as_deref(), at, |key, revision| {
        if found.len() < limit {
            found.push((key, revision));
        }
        count += 1;
        true
    })?;
    let more = (count as usize) > found.len();
    let mut stmt = tx
        .prepare_cached("SELECT created, version, value FROM kv WHERE revision = ?1")
        .map_err(db_error)?;
    let mut kvs = Vec::with_capacity(found.len());
    for (key, revision) in found {
        let (created, version, value): (Revision, i64, Vec<u8>) = stmt
            .query_row([revision], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(db_error)?;
        kvs.push(KeyValue {
            key: String::from_utf8(key).map_err(|e| Error::Backend(format!("bad key: {e}")))?,
            value: Bytes::from(value),
            create_revision: created,
            mod_revision: revision,
            version,
        });
    }
    Ok(RangeResponse { kvs, more, count, revision: at })
}

pub(crate) fn count(conn: &mut Connection, prefix: &str) -> Result<(i64, Revision)> {
    let tx = conn.transaction().map_err(db_error)?;
    let at = schema::current_revision(&tx)?;
    let end = prefix_end(prefix.as_bytes());
    let mut count = 0i64;
    scan_live(&tx, prefix.as_bytes(), end.as_deref(), at, |_, _| {
        count += 1;
        true
    })?;
    Ok((count, at))
}
