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
    format!("Measured {date} on {cores} cores, {memory} of memory (release build).")
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
