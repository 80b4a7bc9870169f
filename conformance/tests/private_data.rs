//! Private data stays private on disk: the data dir is 0700, the embedded store's directory
//! 0700 and its files (database, WAL, shared-memory index, lock) 0600, created that way and
//! tightened when an older data dir is looser; the kubelet's root, which holds the pods'
//! Secret and token volumes, is 0700. Checked as another local user would try: `nobody`
//! cannot read the WAL that holds a Secret's bytes.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use rkube_conformance::cluster::{jsonpath, RkubeServer};
use rkube_conformance::node::NodeServer;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The store's directory and the files in it.
fn store_files(data_dir: &Path) -> (PathBuf, Vec<PathBuf>) {
    let db = data_dir.join("db");
    let files: Vec<PathBuf> = std::fs::read_dir(&db).unwrap().map(|e| e.unwrap().path()).collect();
    (db, files)
}

/// Whether the user `nobody` can read `path` (util-linux's setpriv drops to it).
fn nobody_can_read(path: &Path) -> bool {
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "cat"])
        .arg(path)
        .output()
        .expect("run setpriv (util-linux)");
    out.status.success()
}

fn assert_private(data_dir: &Path) {
    assert_eq!(mode(data_dir), 0o700, "the data dir");
    let (db, files) = store_files(data_dir);
    assert_eq!(mode(&db), 0o700, "the store's directory");
    let names: Vec<String> =
        files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for want in ["state.db", "state.db-wal", "state.lock"] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
}

#[test]
fn the_store_is_private_from_the_start_and_an_older_looser_one_is_tightened() {
    let mut s = RkubeServer::start();
    s.ok(&["create", "secret", "generic", "pw", "--from-literal=password=hunter2-on-disk"]);
    let dir = s.data_dir.path().to_path_buf();
    assert_private(&dir);
    let wal = dir.join("db/state.db-wal");
    let bytes = std::fs::read(&wal).unwrap();
    assert!(
        bytes.windows(b"aHVudGVyMi1vbi1kaXNr".len()).any(|w| w == b"aHVudGVyMi1vbi1kaXNr"),
        "the WAL holds the Secret (base64), so it must be private"
    );
    // Even with a readable parent chain, another local user gets nothing.
    set_mode(&dir, 0o755);
    set_mode(&dir.join("db"), 0o755);
    assert!(!nobody_can_read(&wal), "nobody reads the WAL of a fresh store");

    // A data dir from an older rkube, world-readable throughout: the next start tightens it
    // and says so, and everything is still there.
    for file in store_files(&dir).1 {
        set_mode(&file, 0o644);
    }
    assert!(nobody_can_read(&wal), "the loosened WAL is readable before the restart");
    s.restart();
    assert_private(&dir);
    assert!(!nobody_can_read(&wal));
    assert!(s.log().contains("tightened permissions"), "one log line says so:\n{}", s.log_tail(40));
    let pw = s.ok(&["get", "secret", "pw", "-o", &jsonpath("{.data.password}")]);
    assert_eq!(pw.trim(), "aHVudGVyMi1vbi1kaXNr");
}

#[test]
fn the_kubelet_keeps_secret_volumes_out_of_other_users_reach() {
    let n = NodeServer::start();
    let s = &n.server;
    s.ok(&["create", "secret", "generic", "vol", "--from-literal=token=hunter2-in-a-volume"]);
    s.ok_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"reader"},
            "spec":{"containers":[{"name":"c","image":"busybox:1.36","imagePullPolicy":"IfNotPresent",
              "command":["sleep","3600"],
              "volumeMounts":[{"name":"s","mountPath":"/s"}]}],
              "volumes":[{"name":"s","secret":{"secretName":"vol"}}]}}"#,
    );
    s.ok(&["wait", "--for=condition=Ready", "pod/reader", "--timeout=60s"]);
    // The container reads its volume (a bind mount: the parents' mode does not gate it).
    let inside = s.ok(&["exec", "reader", "--", "cat", "/s/token"]);
    assert_eq!(inside, "hunter2-in-a-volume");

    let root = s.data_dir.path().join("kubelet");
    assert_eq!(mode(&root), 0o700, "the kubelet's root");
    let found = find_file_holding(&root, b"hunter2-in-a-volume", 8).expect("the volume's file");
    // Even with the data dir opened up, the kubelet's root stops another local user.
    std::fs::set_permissions(s.data_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(!nobody_can_read(&found), "nobody reads {}", found.display());
}

/// The first file under `dir` (at most `depth` levels down) whose contents are `want`.
fn find_file_holding(dir: &Path, want: &[u8], depth: usize) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        let kind = entry.file_type().ok()?;
        if kind.is_file() && std::fs::read(entry.path()).ok().as_deref() == Some(want) {
            return Some(entry.path());
        }
        if kind.is_dir() && depth > 0 {
            if let Some(found) = find_file_holding(&entry.path(), want, depth - 1) {
                return Some(found);
            }
        }
    }
    None
}
