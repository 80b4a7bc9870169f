//! The log backend (`--audit-log-path` and the other `--audit-log-*` flags): each event a line
//! (JSON, or upstream's legacy text), appended to a file that is rotated as kube-apiserver's
//! (lumberjack) rotates it, or written to standard output for `-`.
//!
//! - The file and its directory are made readable by their owner only (0600, 0700): events
//!   may hold request and response bodies, Secrets' included.
//! - Rotation: before a write would take the file past `--audit-log-maxsize` megabytes (0:
//!   lumberjack's 100), the file is renamed `<name>-<UTC time>.<ext>` (time as
//!   `2006-01-02T15-04-05.000`) and a new one started; then backups beyond
//!   `--audit-log-maxbackup` (0: all kept) and older than `--audit-log-maxage` days (0: no
//!   limit) are removed, oldest first.
//! - Modes: `blocking` (the default) writes each event before the request goes on;
//!   `blocking-strict` also fails a request whose first event cannot be written; `batch`
//!   hands events to a writer thread through a bounded buffer
//!   (`--audit-log-batch-buffer-size`) and drops them when it is full, so a slow disk never
//!   holds requests up.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, NaiveDateTime, Utc};

use super::event::Event;
use super::Sink;

/// lumberjack's size when none is set.
const DEFAULT_MAX_MEGABYTES: u64 = 100;
/// How backups' times are written into their names.
const BACKUP_TIME: &str = "%Y-%m-%dT%H-%M-%S%.3f";

/// How events are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Legacy,
}

/// When a request waits for its events to be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Blocking,
    BlockingStrict,
    Batch,
}

/// The `--audit-log-*` flags.
#[derive(Clone, Debug)]
pub struct LogOptions {
    /// `-`: standard output.
    pub path: PathBuf,
    pub max_age_days: u64,
    pub max_backups: usize,
    pub max_size_megabytes: u64,
    pub format: Format,
    pub mode: Mode,
    pub batch_buffer_size: usize,
}

impl LogOptions {
    /// kube-apiserver's defaults for `path`.
    pub fn new(path: PathBuf) -> LogOptions {
        LogOptions {
            path,
            max_age_days: 0,
            max_backups: 0,
            max_size_megabytes: 0,
            format: Format::Json,
            mode: Mode::Blocking,
            batch_buffer_size: 10_000,
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "json" => Ok(Format::Json),
            "legacy" => Ok(Format::Legacy),
            other => Err(format!(
                "invalid audit log format {other}, allowed formats are \"legacy,json\""
            )),
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "blocking" => Ok(Mode::Blocking),
            "blocking-strict" => Ok(Mode::BlockingStrict),
            "batch" => Ok(Mode::Batch),
            other => Err(format!(
                "invalid audit log mode {other}, allowed modes are \"batch,blocking,blocking-strict\""
            )),
        }
    }
}

/// Where lines go.
enum Output {
    Stdout,
    File(RotatingFile),
}

impl Output {
    fn write(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self {
            Output::Stdout => std::io::stdout().lock().write_all(line),
            Output::File(f) => f.write(line),
        }
    }
}

/// The log backend.
pub struct LogBackend {
    format: Format,
    mode: Mode,
    output: Arc<Mutex<Output>>,
    /// Batch mode's buffer to the writer thread.
    batch: Option<SyncSender<Vec<u8>>>,
    dropped: AtomicU64,
}

impl LogBackend {
    /// Opens (or makes) the log file; an error names the path and why.
    pub fn open(options: &LogOptions) -> Result<LogBackend, String> {
        let output = if options.path == Path::new("-") {
            Output::Stdout
        } else {
            Output::File(RotatingFile::open(options).map_err(|e| {
                format!("cannot open the audit log {}: {e}", options.path.display())
            })?)
        };
        let output = Arc::new(Mutex::new(output));
        let batch = (options.mode == Mode::Batch).then(|| {
            let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(options.batch_buffer_size.max(1));
            let output = output.clone();
            std::thread::Builder::new()
                .name("audit-log".into())
                .spawn(move || {
                    for line in rx {
                        let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
                        if let Err(e) = out.write(&line) {
                            tracing::error!(error = %e, "cannot write the audit log");
                        }
                    }
                })
                .expect("spawn the audit log writer");
            tx
        });
        Ok(LogBackend {
            format: options.format,
            mode: options.mode,
            output,
            batch,
            dropped: AtomicU64::new(0),
        })
    }

    fn line(&self, event: &Event) -> Vec<u8> {
        match self.format {
            Format::Json => rkube_apis::go_json::to_vec(&event.to_json()),
            Format::Legacy => {
                let mut line = event.legacy_line().into_bytes();
                line.push(b'\n');
                line
            }
        }
    }
}

impl Sink for LogBackend {
    fn process(&self, event: &Event) -> bool {
        let line = self.line(event);
        if let Some(batch) = &self.batch {
            match batch.try_send(line) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                    let n = self.dropped.fetch_add(1, Ordering::Relaxed);
                    if n.is_multiple_of(1000) {
                        tracing::warn!(dropped = n + 1, "audit log buffer full: events dropped");
                    }
                }
            }
            return true;
        }
        let written = self.output.lock().unwrap_or_else(|e| e.into_inner()).write(&line);
        match written {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, audit_id = event.audit_id, "cannot write the audit log");
                self.mode != Mode::BlockingStrict
            }
        }
    }

    fn strict(&self) -> bool {
        self.mode == Mode::BlockingStrict
    }
}

/// A log file that rotates by size and keeps a bounded set of backups.
struct RotatingFile {
    path: PathBuf,
    file: File,
    size: u64,
    max_size: u64,
    max_backups: usize,
    max_age_days: u64,
}

impl RotatingFile {
    fn open(options: &LogOptions) -> std::io::Result<RotatingFile> {
        if let Some(dir) = options.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        }
        let file = open_append(&options.path)?;
        let size = file.metadata()?.len();
        let megabytes = match options.max_size_megabytes {
            0 => DEFAULT_MAX_MEGABYTES,
            n => n,
        };
        Ok(RotatingFile {
            path: options.path.clone(),
            file,
            size,
            max_size: megabytes * 1024 * 1024,
            max_backups: options.max_backups,
            max_age_days: options.max_age_days,
        })
    }

    fn write(&mut self, line: &[u8]) -> std::io::Result<()> {
        if self.size > 0 && self.size + line.len() as u64 > self.max_size {
            self.rotate(Utc::now())?;
        }
        self.file.write_all(line)?;
        self.size += line.len() as u64;
        Ok(())
    }

    fn rotate(&mut self, now: DateTime<Utc>) -> std::io::Result<()> {
        let backup = self.backup_name(now);
        std::fs::rename(&self.path, &backup)?;
        self.file = open_append(&self.path)?;
        self.size = 0;
        self.remove_old_backups(now);
        Ok(())
    }

    /// `<dir>/<stem>-<time><.ext>`.
    fn backup_name(&self, t: DateTime<Utc>) -> PathBuf {
        let (stem, ext) = self.stem_and_ext();
        self.path.with_file_name(format!("{stem}-{}{ext}", t.format(BACKUP_TIME)))
    }

    fn stem_and_ext(&self) -> (String, String) {
        let name =
            self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match name.rfind('.') {
            Some(i) if i > 0 => (name[..i].to_string(), name[i..].to_string()),
            _ => (name, String::new()),
        }
    }

    /// The backups in the file's directory with their times, newest first.
    fn backups(&self) -> Vec<(DateTime<Utc>, PathBuf)> {
        let (stem, ext) = self.stem_and_ext();
        let dir =
            self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
        let mut found: Vec<(DateTime<Utc>, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let time = name.strip_prefix(&format!("{stem}-"))?.strip_suffix(ext.as_str())?;
                let time = NaiveDateTime::parse_from_str(time, BACKUP_TIME).ok()?.and_utc();
                Some((time, e.path()))
            })
            .collect();
        found.sort_by_key(|b| std::cmp::Reverse(b.0));
        found
    }

    fn remove_old_backups(&self, now: DateTime<Utc>) {
        let cutoff = now - chrono::Duration::days(self.max_age_days as i64);
        for (i, (time, path)) in self.backups().into_iter().enumerate() {
            let too_many = self.max_backups > 0 && i >= self.max_backups;
            let too_old = self.max_age_days > 0 && time < cutoff;
            if too_many || too_old {
                if let Err(e) = std::fs::remove_file(&path) {
                    tracing::warn!(path = %path.display(), error = %e, "cannot remove an old audit log");
                }
            }
        }
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).mode(0o600).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn options(dir: &Path) -> LogOptions {
        LogOptions {
            max_size_megabytes: 1,
            max_backups: 2,
            ..LogOptions::new(dir.join("logs/audit.log"))
        }
    }

    #[test]
    fn the_file_is_private_and_rotates_keeping_the_newest_backups() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = RotatingFile::open(&options(dir.path())).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("logs/audit.log")), 0o600);
        assert_eq!(mode(&dir.path().join("logs")), 0o700);
        let line = vec![b'x'; 400 * 1024];
        let t0: DateTime<Utc> = "2026-11-29T10:00:00Z".parse().unwrap();
        for i in 0..4 {
            file.write(&line).unwrap();
            file.write(&line).unwrap();
            // A third line would pass 1 MiB: rotate at a known time.
            file.rotate(t0 + chrono::Duration::seconds(i)).unwrap();
        }
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join("logs"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["audit-2026-11-29T10-00-02.000.log", "audit-2026-11-29T10-00-03.000.log", "audit.log"]
        );
        // Writing past the size rotates by itself.
        file.write(&line).unwrap();
        file.write(&line).unwrap();
        file.write(&line).unwrap();
        assert_eq!(std::fs::metadata(dir.path().join("logs/audit.log")).unwrap().len(), 400 * 1024);
    }

    #[test]
    fn flag_values_are_checked() {
        assert_eq!("json".parse::<Format>(), Ok(Format::Json));
        assert!("xml".parse::<Format>().unwrap_err().contains("allowed formats are"));
        assert_eq!("blocking-strict".parse::<Mode>(), Ok(Mode::BlockingStrict));
        assert!("async".parse::<Mode>().is_err());
    }
}
