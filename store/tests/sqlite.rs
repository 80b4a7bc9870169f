//! What only the embedded backend has: its data dir. Durability across reopen and across a
//! SIGKILL under load, and refusing data dirs and files it must not touch.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::next_events;
use rkube_store::{Error, RangeRequest, Revision, SqliteOptions, SqliteStore, Store};

fn open(dir: &Path) -> SqliteStore {
    SqliteStore::open(dir, SqliteOptions::default()).expect("open store")
}

fn database_error(result: rkube_store::Result<SqliteStore>) -> String {
    match result {
        Err(Error::Database(message)) => message,
        Err(e) => panic!("expected a Database error, got {e:?}"),
        Ok(_) => panic!("expected the open to fail"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_restores_everything() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let a = store.create("/x/a", Bytes::from("a1")).await.unwrap();
    store.update("/x/a", Bytes::from("a2"), a.mod_revision).await.unwrap();
    store.create("/x/b", Bytes::from("b1")).await.unwrap();
    store.delete("/x/b", None).await.unwrap();
    let c = store.create("/x/c", Bytes::from("c1")).await.unwrap();
    store.compact(c.mod_revision - 1).await.unwrap();
    let before = store.range(RangeRequest::prefix("/x/")).await.unwrap();
    let history = store.get("/x/a", Some(c.mod_revision - 1)).await.unwrap();
    store.close().await.unwrap();
    assert!(matches!(store.create("/x/e", Bytes::from("late")).await, Err(Error::Unavailable(_))));
    drop(store);

    let store = open(dir.path());
    let after = store.range(RangeRequest::prefix("/x/")).await.unwrap();
    assert_eq!(after.kvs, before.kvs);
    assert_eq!(after.revision, before.revision);
    assert_eq!(store.get("/x/a", Some(c.mod_revision - 1)).await.unwrap(), history);
    assert!(matches!(store.get("/x/a", Some(a.mod_revision)).await, Err(Error::Compacted { .. })));
    let d = store.create("/x/d", Bytes::from("d1")).await.unwrap();
    assert_eq!(d.mod_revision, before.revision + 1, "revisions go on where they stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_store_on_the_same_data_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let message = database_error(SqliteStore::open(dir.path(), SqliteOptions::default()));
    assert!(message.contains("in use by another rkube store"), "{message}");
    store.close().await.unwrap();
    // Once closed, the data dir can be opened again.
    drop(open(dir.path()));
}

#[test]
fn a_corrupt_database_file_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let garbage: Vec<u8> = (0..16384u32).map(|i| (i * 7919 % 251) as u8).collect();
    std::fs::write(&path, &garbage).unwrap();
    let message = database_error(SqliteStore::open(dir.path(), SqliteOptions::default()));
    assert!(message.contains("not an SQLite database") || message.contains("damaged"), "{message}");
    assert!(message.contains(&path.display().to_string()), "names the file: {message}");
    assert_eq!(std::fs::read(&path).unwrap(), garbage, "the file is untouched");
}

#[test]
fn a_foreign_sqlite_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('alice');")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let message = database_error(SqliteStore::open(dir.path(), SqliteOptions::default()));
    assert!(message.contains("another program"), "{message}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the file is untouched");
    assert!(!dir.path().join("state.db-wal").exists(), "no WAL was started on it");
}

#[test]
fn a_data_dir_that_is_a_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let message = database_error(SqliteStore::open(&file, SqliteOptions::default()));
    assert!(message.contains("cannot create data dir"), "{message}");
}

/// As root, permissions do not stop us: the check runs in a child process as `nobody`.
#[test]
fn a_data_dir_without_write_permission_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o555)).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args(["--exact", "unwritable_data_dir_child", "--ignored", "--nocapture"])
        .env("RKUBE_TEST_DATA_DIR", &data);
    if is_root() {
        child.uid(65534).gid(65534);
    }
    let output = child.output().expect("run the child test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("REFUSED:"),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("Permission denied") || stdout.contains("readonly"), "{stdout}");
    assert_eq!(std::fs::read_dir(&data).unwrap().count(), 0, "nothing was created");
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

#[test]
#[ignore = "run by a_data_dir_without_write_permission_is_refused"]
fn unwritable_data_dir_child() {
    let Some(dir) = std::env::var_os("RKUBE_TEST_DATA_DIR") else {
        return;
    };
    let message = database_error(SqliteStore::open(&dir, SqliteOptions::default()));
    println!("REFUSED: {message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_overflows_the_event_channel_catches_up_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions { watch_channel_capacity: 2, ..Default::default() };
    let store = Arc::new(SqliteStore::open(dir.path(), options).unwrap());
    let mut watch = store.watch("/lag/", true, 0).await.unwrap();
    let mut acked = Vec::new();
    for i in 0..600 {
        acked.push(
            store.create(&format!("/lag/{i:04}"), Bytes::from("x")).await.unwrap().mod_revision,
        );
    }
    let mut seen: Vec<Revision> = Vec::new();
    while seen.len() < acked.len() {
        seen.extend(next_events(&mut watch).await.events.iter().map(|e| e.revision()));
    }
    assert_eq!(seen, acked);
}

/// How many acknowledged writes each crash round waits for before the SIGKILL.
const ACKS_PER_ROUND: usize = 3000;

/// A child process writes under load and prints each acknowledged write; it is killed with
/// SIGKILL mid-stream; the reopened store must hold every acknowledged write at the revision
/// it was acknowledged with. Three rounds on one data dir.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut all_acked: BTreeMap<(String, Revision), String> = BTreeMap::new();
    let mut last_max: Revision = 0;
    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "crash_writer_child", "--ignored", "--nocapture"])
            .env("RKUBE_CRASH_DIR", dir.path())
            .env("RKUBE_CRASH_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the writer child");
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut acked = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.strip_prefix("ACK ") {
                    let mut parts = rest.splitn(3, ' ');
                    let key = parts.next().unwrap().to_string();
                    let revision: Revision = parts.next().unwrap().parse().unwrap();
                    let value = parts.next().unwrap().to_string();
                    acked.push((key, revision, value));
                }
            }
            acked
        });
        // Kill once enough writes were acknowledged (the reader counts them as they come).
        let deadline = Instant::now() + Duration::from_secs(60);
        let count_file = dir.path().join(format!("acks-{round}"));
        loop {
            assert!(Instant::now() < deadline, "the writer child made too little progress");
            let n: usize = std::fs::read_to_string(&count_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0);
            if n >= ACKS_PER_ROUND {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the writer child exited early: {status}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        child.kill().expect("SIGKILL the child"); // Child::kill sends SIGKILL
        child.wait().unwrap();
        let acked = reader.join().unwrap();
        assert!(acked.len() >= ACKS_PER_ROUND, "round {round}: only {} acks read", acked.len());

        let store = open(dir.path());
        let current = store.current_revision().await.unwrap();
        let round_min = acked.iter().map(|a| a.1).min().unwrap();
        let round_max = acked.iter().map(|a| a.1).max().unwrap();
        assert!(round_min > last_max, "revisions are never reused after a crash");
        assert!(current >= round_max, "current revision {current} < acknowledged {round_max}");
        last_max = current;
        for (key, revision, value) in acked {
            all_acked.insert((key, revision), value);
        }
        // Every acknowledged write of every round, at its revision.
        for ((key, revision), value) in &all_acked {
            let (kv, _) = store.get(key, Some(*revision)).await.unwrap();
            let kv = kv.unwrap_or_else(|| panic!("acknowledged write {key}@{revision} is missing"));
            assert_eq!(kv.mod_revision, *revision, "{key}");
            assert_eq!(kv.value, Bytes::from(value.clone()), "{key}@{revision}");
        }
        store.close().await.unwrap();
    }
}

#[test]
#[ignore = "run by sigkill_under_load_loses_no_acknowledged_write"]
fn crash_writer_child() {
    use std::io::Write;
    let Some(dir) = std::env::var_os("RKUBE_CRASH_DIR") else {
        return;
    };
    let round = std::env::var("RKUBE_CRASH_ROUND").unwrap();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async move {
        let store = Arc::new(open(Path::new(&dir)));
        let acks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count_file = Path::new(&dir).join(format!("acks-{round}"));
        let mut tasks = Vec::new();
        for w in 0..32 {
            let (store, acks, round, count_file) =
                (store.clone(), acks.clone(), round.clone(), count_file.clone());
            tasks.push(tokio::spawn(async move {
                // Each writer creates keys and keeps updating one key of its own.
                let counter = format!("/crash/{round}/w{w}/counter");
                let mut kv = store.create(&counter, Bytes::from("0")).await.unwrap();
                for i in 0u64.. {
                    let (key, value, result) = if i % 2 == 0 {
                        let key = format!("/crash/{round}/w{w}/k{i}");
                        let value = format!("{key}={}", "p".repeat(200));
                        let result = store.create(&key, Bytes::from(value.clone())).await;
                        (key, value, result)
                    } else {
                        let value = format!("{counter}={i}");
                        let result = store
                            .update(&counter, Bytes::from(value.clone()), kv.mod_revision)
                            .await;
                        if let Ok(new) = &result {
                            kv = new.clone();
                        }
                        (counter.clone(), value, result)
                    };
                    let written = result.expect("write failed");
                    // One line per acknowledged write, flushed before the next write.
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "ACK {key} {} {value}", written.mod_revision).unwrap();
                    out.flush().unwrap();
                    drop(out);
                    let n = acks.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    if n % 500 == 0 {
                        let _ = std::fs::write(&count_file, n.to_string());
                    }
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    });
}
