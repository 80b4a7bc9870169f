//! Shared pieces of the benchmark programs: percentiles, Markdown tables, the machine line,
//! and updating one program's section of `docs/benchmarks.md` without touching the others.

use std::path::Path;
use std::time::Duration;

/// The `p`th percentile (0-100) of sorted samples (nearest rank); zero when there are none.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A duration in milliseconds with two decimals, e.g. `1.25 ms`.
pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// A Markdown table.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table { header: header.iter().map(|h| h.to_string()).collect(), rows: Vec::new() }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn markdown(&self) -> String {
        let line = |cells: &[String]| format!("| {} |", cells.join(" | "));
        let mut out = vec![line(&self.header), line(&vec!["---".to_string(); self.header.len()])];
        out.extend(self.rows.iter().map(|r| line(r)));
        out.join("\n")
    }
}

/// One line saying what the figures were measured on.
pub fn machine() -> String {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines().next().map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_string())
        })
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| format!("{:.0} GiB", kb as f64 / 1024.0 / 1024.0))
        .unwrap_or_default();
    let date = std::process::Command::new("date")
        .arg("-u")
        .arg("+%Y-%m-%d")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let build = if cfg!(debug_assertions) { "debug build" } else { "release build" };
    format!("Measured {date} on {cores} cores, {memory} of memory ({build}).")
}

/// `docs/benchmarks.md` of the workspace this program was built from.
pub fn default_benchmarks_file() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/benchmarks.md")
        .to_string_lossy()
        .into_owned()
}

/// Replaces the section between `<!-- NAME:start -->` and `<!-- NAME:end -->` in `file` with
/// `content` (appending it when missing), leaving the rest of the file as it was.
/// Prints a benchmark's section and, unless the run was `--quick`, writes it into `file`
/// as the section `name` (see [`write_section`]).
pub fn publish(file: &str, name: &str, markdown: &str, quick: bool) -> anyhow::Result<()> {
    println!("{markdown}");
    if !quick {
        write_section(file, name, markdown).map_err(|e| anyhow::anyhow!("writing {file}: {e}"))?;
        eprintln!("wrote {file}");
    }
    Ok(())
}

pub fn write_section(file: &str, name: &str, content: &str) -> std::io::Result<()> {
    let start = format!("<!-- {name}:start -->");
    let end = format!("<!-- {name}:end -->");
    let existing = std::fs::read_to_string(file).unwrap_or_else(|_| "# Benchmarks\n".to_string());
    let block = format!("{start}\n{}\n{end}", content.trim_end());
    let updated = match (existing.find(&start), existing.find(&end)) {
        (Some(s), Some(e)) if e > s => {
            format!("{}{block}{}", &existing[..s], &existing[e + end.len()..])
        }
        _ => format!("{}\n{block}\n", existing.trim_end()),
    };
    std::fs::write(file, updated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_uses_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&samples, 50.0), Duration::from_millis(50));
        assert_eq!(percentile(&samples, 99.0), Duration::from_millis(99));
        assert_eq!(percentile(&samples, 100.0), Duration::from_millis(100));
        assert_eq!(percentile(&[], 99.0), Duration::ZERO);
    }

    #[test]
    fn write_section_replaces_only_its_own_section() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("b.md");
        let file = file.to_str().unwrap();
        std::fs::write(
            file,
            "# Benchmarks\n\nintro\n<!-- other:start -->\nkeep\n<!-- other:end -->\n",
        )
        .unwrap();
        write_section(file, "mine", "first").unwrap();
        write_section(file, "mine", "second").unwrap();
        let text = std::fs::read_to_string(file).unwrap();
        assert!(text.contains("intro"));
        assert!(text.contains("<!-- other:start -->\nkeep\n<!-- other:end -->"));
        assert!(text.contains("<!-- mine:start -->\nsecond\n<!-- mine:end -->"));
        assert!(!text.contains("first"));
    }
}

/// What every benchmark program takes: `--quick` (a small run that only prints) and
/// `--output FILE` (where the figures go; `docs/benchmarks.md` by default). A program
/// flattens it into its own `clap` parser, so `--help` prints its usage and an unknown
/// option is an error rather than a full run.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A smaller, faster run that only prints its figures (nothing is written)
    #[arg(long)]
    pub quick: bool,
    /// The Markdown file whose section for this benchmark gets the figures
    #[arg(long, value_name = "FILE", default_value_t = default_benchmarks_file())]
    pub output: String,
}

impl Args {
    /// The options of a benchmark that has none of its own.
    pub fn parse() -> Args {
        <OnlyArgs as clap::Parser>::parse().args
    }
}

/// An rkube benchmark program: it prints a table of figures and writes them to the
/// benchmarks page.
#[derive(clap::Parser)]
struct OnlyArgs {
    #[command(flatten)]
    args: Args,
}

/// A process's resident memory in KiB (`/proc/PID/status`): total, anonymous, file-backed.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rss {
    pub total: u64,
    pub anon: u64,
    pub file: u64,
}

pub fn rss(pid: u32) -> anyhow::Result<Rss> {
    use anyhow::Context;
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let field = |name: &str| -> anyhow::Result<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse().ok())
            .with_context(|| format!("no {name} in {path}"))
    };
    Ok(Rss { total: field("VmRSS:")?, anon: field("RssAnon:")?, file: field("RssFile:")? })
}

/// CPU time (user + system) a process has used so far.
pub fn cpu_time(pid: &str) -> anyhow::Result<Duration> {
    use anyhow::Context;
    static TICKS_PER_SEC: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let ticks_per_sec = *TICKS_PER_SEC.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100)
    });
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    // Fields after the command name (which may hold spaces): state is the first, utime and
    // stime the 12th and 13th.
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, f)| f).unwrap_or("").split_whitespace().collect();
    let ticks: u64 = fields
        .get(11..13)
        .with_context(|| format!("short {path}"))?
        .iter()
        .map(|f| f.parse::<u64>().unwrap_or(0))
        .sum();
    Ok(Duration::from_secs_f64(ticks as f64 / ticks_per_sec as f64))
}

/// A create of a new key straight on etcd, as the benchmarks' "raw etcd" figures make it: the
/// same create-if-absent transaction rkube's etcd store sends. Fails when the key exists.
pub async fn raw_etcd_create(
    kv: &mut etcd_client::KvClient,
    key: &str,
    value: Vec<u8>,
) -> anyhow::Result<()> {
    use etcd_client::{Compare, CompareOp, Txn, TxnOp};
    let txn = Txn::new()
        .when(vec![Compare::create_revision(key, CompareOp::Equal, 0)])
        .and_then(vec![TxnOp::put(key, value, None)])
        .or_else(vec![TxnOp::get(key, None)]);
    if !kv.txn(txn).await?.succeeded() {
        anyhow::bail!("key {key} exists");
    }
    Ok(())
}
