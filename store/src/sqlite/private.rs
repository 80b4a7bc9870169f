//! The store's directory and files are private to the server's user: every Secret is in the
//! database and in its write-ahead log, so no other local user may read them. A new store is
//! created that way; an older one that is looser is tightened, with one log line.

use std::fs::{DirBuilder, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::error::{Error, Result};

/// Mode of the store's directory.
pub(crate) const DIR_MODE: u32 = 0o700;
/// Mode of the database, its WAL, shared-memory index and lock file.
pub(crate) const FILE_MODE: u32 = 0o600;

/// Creates `dir` (and its parents) with mode 0700 when missing; an existing one is left as
/// it is (see [`tighten`]).
pub(crate) fn create_dir(dir: &Path) -> Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|e| Error::Database(format!("cannot create data dir {}: {e}", dir.display())))
}

/// Creates `path` empty with mode 0600 when it does not exist (SQLite gives its WAL and
/// shared-memory files the database file's mode), or tightens an existing one.
pub(crate) fn private_file(path: &Path) -> Result<()> {
    match OpenOptions::new().write(true).create_new(true).mode(FILE_MODE).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => tighten(path, FILE_MODE),
        Err(e) => Err(Error::Database(format!("cannot create {}: {e}", path.display()))),
    }
}

/// Tightens `path` to `mode` when it grants more than that, saying so once.
pub(crate) fn tighten(path: &Path, mode: u32) -> Result<()> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::Database(format!("cannot inspect {}: {e}", path.display()))),
    };
    let old = meta.permissions().mode() & 0o777;
    if old & !mode == 0 {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(|e| {
        Error::Database(format!("cannot restrict the permissions of {}: {e}", path.display()))
    })?;
    tracing::warn!(
        path = %path.display(),
        "tightened permissions from {old:04o} to {mode:04o}: the store holds Secrets"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_dirs_and_files_are_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        create_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        let file = dir.join("f");
        private_file(&file).unwrap();
        assert_eq!(mode(&file), 0o600);
    }

    #[test]
    fn loose_ones_are_tightened_and_tight_ones_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let file = dir.join("f");
        std::fs::write(&file, b"secret").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        create_dir(&dir).unwrap();
        tighten(&dir, DIR_MODE).unwrap();
        private_file(&file).unwrap();
        assert_eq!((mode(&dir), mode(&file)), (0o700, 0o600));
        assert_eq!(std::fs::read(&file).unwrap(), b"secret", "the contents are kept");
        // Tighter than asked is fine: nothing widens.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o400)).unwrap();
        private_file(&file).unwrap();
        assert_eq!(mode(&file), 0o400);
    }
}
