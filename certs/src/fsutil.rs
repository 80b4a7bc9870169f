//! Small file helpers: optional reads, atomic writes with a given mode, private directories.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
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

/// Makes `path` a directory only its owner can enter: created (with any missing parents)
/// with mode 0700, or tightened to 0700, with one log line, when an older one is looser. For
/// the server's data dir and the kubelet's root, which hold keys, the store, Secrets and
/// service-account tokens.
pub fn ensure_private_dir(path: &Path) -> Result<(), CertError> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
        .map_err(io_err("create directory", path))?;
    let old = fs::metadata(path).map_err(io_err("inspect", path))?.permissions().mode() & 0o777;
    if old & !DIR_MODE != 0 {
        fs::set_permissions(path, fs::Permissions::from_mode(DIR_MODE))
            .map_err(io_err("restrict the permissions of", path))?;
        tracing::warn!(
            path = %path.display(),
            "tightened permissions from {old:04o} to {DIR_MODE:04o}: it holds private data"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn private_dirs_are_created_or_tightened_to_0700() {
        let tmp = tempfile::tempdir().unwrap();
        let fresh = tmp.path().join("a/b");
        ensure_private_dir(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
        let loose = tmp.path().join("loose");
        fs::create_dir(&loose).unwrap();
        fs::set_permissions(&loose, fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&loose).unwrap();
        assert_eq!(mode(&loose), 0o700);
        let tighter = tmp.path().join("tighter");
        fs::create_dir(&tighter).unwrap();
        fs::set_permissions(&tighter, fs::Permissions::from_mode(0o500)).unwrap();
        ensure_private_dir(&tighter).unwrap();
        assert_eq!(mode(&tighter), 0o500, "never widened");
    }
}
