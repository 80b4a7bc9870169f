//! The database file: its schema, opening it safely, and the revisions kept in it.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::error::{Error, Result};
use crate::types::Revision;

/// `PRAGMA application_id` of an rkube store ("rkub"), so a foreign SQLite file is recognised.
const APPLICATION_ID: i64 = 0x726b_7562;
/// `PRAGMA user_version`: the schema version this code writes and reads.
const SCHEMA_VERSION: i64 = 1;

/// The revision log. `revision` is the global revision of the write (the rowid, so lookups by
/// revision are direct). `prev_revision` is the row this write replaced (0 for a create), for
/// the previous value in watch events. A delete appends a row with `deleted = 1`.
/// The index serves "latest row of a key at or before a revision" and range scans in key order
/// without touching the table.
const SCHEMA: &str = "
CREATE TABLE kv (
    revision      INTEGER PRIMARY KEY,
    key           BLOB    NOT NULL,
    created       INTEGER NOT NULL,
    version       INTEGER NOT NULL,
    deleted       INTEGER NOT NULL,
    prev_revision INTEGER NOT NULL,
    value         BLOB    NOT NULL
);
CREATE INDEX kv_key ON kv (key, revision DESC, deleted);
CREATE TABLE meta (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (name, value) VALUES ('compact_revision', 0), ('revision', 1);
";

/// Maps an SQLite error to a store error.
pub(crate) fn db_error(e: rusqlite::Error) -> Error {
    Error::Backend(format!("sqlite: {e}"))
}

/// Opens the writing connection, creating the schema in a new file. A file that is not an
/// rkube store is left exactly as it was.
pub(crate) fn open_writer(path: &Path) -> Result<Connection> {
    let existed = std::fs::metadata(path).map(|m| m.len() > 0).unwrap_or(false);
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| open_error(path, e))?;
    if existed {
        check_ours(path, &conn)?;
    }
    // Durable on commit: WAL, and fsync of the WAL at every commit.
    conn.pragma_update(None, "journal_mode", "WAL").map_err(|e| open_error(path, e))?;
    conn.pragma_update(None, "synchronous", "FULL").map_err(|e| open_error(path, e))?;
    conn.busy_timeout(std::time::Duration::from_secs(10)).map_err(db_error)?;
    let has_schema: bool = conn
        .query_row("SELECT COUNT(*) > 0 FROM sqlite_master WHERE name = 'kv'", [], |r| r.get(0))
        .map_err(|e| open_error(path, e))?;
    if !has_schema {
        let tx = conn.unchecked_transaction().map_err(db_error)?;
        tx.execute_batch(SCHEMA).map_err(|e| open_error(path, e))?;
        tx.pragma_update(None, "application_id", APPLICATION_ID).map_err(db_error)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION).map_err(db_error)?;
        tx.commit().map_err(|e| open_error(path, e))?;
    }
    Ok(conn)
}

/// Opens a connection for reads; the writer must have opened the file first.
pub(crate) fn open_reader(path: &Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| open_error(path, e))?;
    conn.pragma_update(None, "query_only", true).map_err(db_error)?;
    conn.busy_timeout(std::time::Duration::from_secs(10)).map_err(db_error)?;
    Ok(conn)
}

/// Refuses a corrupt file, a foreign SQLite database and a newer schema, before anything is
/// written to it.
fn check_ours(path: &Path, conn: &Connection) -> Result<()> {
    let app_id: i64 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(|e| open_error(path, e))?;
    let tables: i64 = conn
        .query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(|e| open_error(path, e))?;
    if app_id == 0 && tables == 0 {
        return Ok(()); // an empty database: a first start that stopped before the schema
    }
    if app_id != APPLICATION_ID {
        return Err(Error::Database(format!(
            "{} is an SQLite database of another program (application_id {app_id:#x}), not an \
             rkube store; move it away or choose another --data-dir",
            path.display()
        )));
    }
    let version: i64 =
        conn.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(db_error)?;
    if version != SCHEMA_VERSION {
        return Err(Error::Database(format!(
            "{} has store schema version {version}; this rkube reads version {SCHEMA_VERSION}",
            path.display()
        )));
    }
    let quick: String = conn
        .query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
        .map_err(|e| open_error(path, e))?;
    if quick != "ok" {
        return Err(Error::Database(format!(
            "{} is damaged ({quick}); restore it from a backup or choose another --data-dir",
            path.display()
        )));
    }
    Ok(())
}

fn open_error(path: &Path, e: rusqlite::Error) -> Error {
    let hint = match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => {
            "it is not an SQLite database; move it away or choose another --data-dir"
        }
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
            "it is damaged; restore it from a backup or choose another --data-dir"
        }
        Some(rusqlite::ErrorCode::CannotOpen)
        | Some(rusqlite::ErrorCode::PermissionDenied)
        | Some(rusqlite::ErrorCode::ReadOnly) => {
            "check that the data dir exists and that this user may write to it"
        }
        Some(rusqlite::ErrorCode::DatabaseBusy) | Some(rusqlite::ErrorCode::DatabaseLocked) => {
            "another program holds it"
        }
        _ => "",
    };
    let sep = if hint.is_empty() { "" } else { "; " };
    Error::Database(format!("cannot open store {}: {e}{sep}{hint}", path.display()))
}

/// The store's current revision: the newest write, or the recorded one when there is none.
/// Call inside a transaction to pair it with other reads.
pub(crate) fn current_revision(conn: &Connection) -> Result<Revision> {
    let newest: Option<Revision> =
        conn.query_row("SELECT MAX(revision) FROM kv", [], |r| r.get(0)).map_err(db_error)?;
    Ok(newest.unwrap_or(0).max(meta(conn, "revision")?))
}

/// The last compaction's revision (0 when never compacted).
pub(crate) fn compact_revision(conn: &Connection) -> Result<Revision> {
    meta(conn, "compact_revision")
}

pub(crate) fn meta(conn: &Connection, name: &str) -> Result<i64> {
    conn.query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| r.get(0))
        .optional()
        .map_err(db_error)
        .map(|v| v.unwrap_or(0))
}

pub(crate) fn set_meta(conn: &Connection, name: &str, value: i64) -> Result<()> {
    conn.execute(
        "INSERT INTO meta (name, value) VALUES (?1, ?2)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        rusqlite::params![name, value],
    )
    .map_err(db_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_commits_durably() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open_writer(&dir.path().join("state.db")).unwrap();
        let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).unwrap();
        let sync: i64 = conn.pragma_query_value(None, "synchronous", |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        assert_eq!(sync, 2, "synchronous=FULL: the WAL is fsync'd at every commit");
        assert_eq!(current_revision(&conn).unwrap(), 1, "a new store is at revision 1");
    }
}
