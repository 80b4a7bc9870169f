//! Small file helpers: optional reads, atomic writes with a given mode, private directories.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::CertError;

/// Mode of private keys and kubeconfigs (they hold credentials).
pub(crate) const SECRET_MODE: u32 = 0o600;
/// Mode of certificates and public keys.
pub(crate) const PUBLIC_MODE: u32 = 0o644;
/// Mode of the PKI directory.
pub(crate) const DIR_MODE: u32 = 0o700;

pub(crate) fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> CertError {
    let path = path.to_path_buf();
    move |source| CertError::Io { action, path, source }
}

/// Reads a file; `None` when it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, CertError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("read", path)(e)),
    }
}

/// True when `path` exists (as anything).
pub(crate) fn exists(path: &Path) -> Result<bool, CertError> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_err("inspect", path)(e)),
    }
}

/// The directory holding `path` ("." for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A fresh random name next to `path`, for temp files and directories.
pub(crate) fn temp_sibling(path: &Path) -> Result<PathBuf, CertError> {
    let mut rnd = [0u8; 8];
    openssl::rand::rand_bytes(&mut rnd)
        .map_err(|source| CertError::Openssl { action: "generate random bytes", source })?;
    let suffix: String = rnd.iter().map(|b| format!("{b:02x}")).collect();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(parent_dir(path).join(format!(".{name}.tmp-{suffix}")))
}

/// Writes `contents` to `path` atomically: a temp file in the same directory, created with
/// `mode`, flushed to disk, then renamed over `path`. Readers see the old or the new file,
/// never a torn one, and a secret is never readable by others, not even briefly.
pub(crate) fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> Result<(), CertError> {
    let dir = parent_dir(path);
    let tmp = temp_sibling(path)?;
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)
            .map_err(io_err("create", &tmp))?;
        file.write_all(contents).map_err(io_err("write", &tmp))?;
        file.sync_all().map_err(io_err("sync", &tmp))?;
        fs::rename(&tmp, path).map_err(io_err("replace", path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    sync_dir(&dir)
}

/// Flushes a directory entry change (create, rename) to disk.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), CertError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_err("sync directory", dir))
}

/// Creates one directory with mode 0700 (its parent must exist).
pub(crate) fn create_private_dir(path: &Path) -> Result<(), CertError> {
    DirBuilder::new().mode(DIR_MODE).create(path).map_err(io_err("create directory", path))
}
