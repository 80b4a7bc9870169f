//! `docs/conformance.md`: every upstream test with its covering rkube tests and their result,
//! the totals per area, and how long the suite took ([`suite_time`]: issue 22's figure, the
//! whole suite against a tenth of upstream's conformance run).

use std::collections::BTreeMap;
use std::fmt::Write;

use anyhow::{bail, Result};

use super::coverage::{self, Coverage};
use super::junit::{Outcome, Run};
use super::upstream::UpstreamTest;

/// Where an upstream test stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Covered, and every covering test passed.
    Pass,
    /// Covered, and a covering test failed or was skipped.
    Fail,
    /// No covering test, or one the run did not report (the names of those).
    NotCovered { missing: Vec<String> },
    /// Needs an upstream image no local build stands in for.
    NeedsImage(String),
    /// Needs something this machine refuses.
    Cannot(String),
}

impl Status {
    fn column(&self) -> usize {
        match self {
            Status::Pass => 0,
            Status::Fail => 1,
            Status::NotCovered { .. } => 2,
            Status::NeedsImage(_) => 3,
            Status::Cannot(_) => 4,
        }
    }

    fn word(&self) -> &'static str {
        ["pass", "fail", "not covered", "needs a registry image", "cannot run here"][self.column()]
    }
}

/// Where one upstream test stands in `run`.
pub fn status(entry: Option<&Coverage>, run: &Run) -> Status {
    let Some(entry) = entry else { return Status::NotCovered { missing: Vec::new() } };
    if let Some(why) = &entry.needs_image {
        return Status::NeedsImage(why.clone());
    }
    if let Some(why) = &entry.cannot {
        return Status::Cannot(why.clone());
    }
    let missing: Vec<String> =
        entry.tests.iter().filter(|t| !run.outcomes.contains_key(*t)).cloned().collect();
    if !missing.is_empty() {
        return Status::NotCovered { missing };
    }
    if entry.tests.iter().all(|t| run.outcomes[t] == Outcome::Passed) {
        Status::Pass
    } else {
        Status::Fail
    }
}

/// Counts by status: pass, fail, not covered, needs an image, cannot.
type Totals = [usize; 5];

/// The whole document, and the covering tests the run did not report (to warn of).
pub fn render(
    upstream: &[UpstreamTest],
    coverage: &coverage::Map,
    run: &Run,
) -> Result<(String, Vec<String>)> {
    let known: std::collections::HashSet<&str> = upstream.iter().map(|t| t.name.as_str()).collect();
    if let Some(unknown) = coverage.keys().find(|k| !known.contains(k.as_str())) {
        bail!("the coverage tables name {unknown:?}, which is not an upstream conformance test");
    }
    let mut areas: Vec<&str> = Vec::new();
    let mut totals: BTreeMap<&str, Totals> = BTreeMap::new();
    let mut node_totals: BTreeMap<&str, Totals> = BTreeMap::new();
    let mut sections = String::new();
    let mut missing_everywhere = Vec::new();
    for (i, test) in upstream.iter().enumerate() {
        if !areas.contains(&test.area.as_str()) {
            areas.push(&test.area);
            let _ = write!(
                sections,
                "\n## {}\n\n| # | upstream test | tags | rkube tests | result |\n|---:|---|---|---|---|\n",
                test.area
            );
        }
        let entry = coverage.get(&test.name);
        let status = status(entry, run);
        totals.entry(&test.area).or_default()[status.column()] += 1;
        if test.is_node() {
            node_totals.entry(&test.area).or_default()[status.column()] += 1;
        }
        let tests = entry
            .map(|e| e.tests.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join("<br>"))
            .unwrap_or_default();
        let mut result = status.word().to_string();
        match &status {
            Status::NotCovered { missing } if !missing.is_empty() => {
                let _ = write!(result, ": the run did not report {}", missing.join(", "));
                missing_everywhere.extend(missing.iter().cloned());
            }
            Status::NeedsImage(why) | Status::Cannot(why) => {
                let _ = write!(result, ": {why}");
            }
            _ => {}
        }
        if let Some(note) = entry.and_then(|e| e.note.as_deref()) {
            let _ = write!(result, " ({note})");
        }
        let _ = writeln!(
            sections,
            "| {} | {} | {} | {} | {} |",
            i + 1,
            cell(&test.name),
            cell(&test.tags),
            tests,
            cell(&result)
        );
    }
    let newest = upstream.iter().map(|t| newest_release(&t.release)).max().unwrap_or_default();
    let mut doc = String::new();
    let _ = write!(
        doc,
        "# Conformance map\n\n\
         Written by `conformance-map` (`cargo run -p rkube-conformance --bin conformance-map`) \
         from three inputs: the upstream conformance tests (`conformance/map/upstream.tsv`, \
         {} tests, promoted up to v1.{}), the tables saying which rkube tests check the same \
         behaviour (`conformance/map/coverage/`), and the results of the suite run of {} \
         (nextest's JUnit report). Do not edit it by hand: change the tables and run the \
         program after a suite run.\n\n\
         A test is *pass* when every covering rkube test passed in that run; a covering test \
         the run did not report (renamed, deleted) leaves it *not covered*. Tags as in the \
         upstream digest: `[api]` needs only the control plane, `[node]` a node that runs \
         containers, `[net]` pod networking, `[webhook]`/`[aggregator]` servers in the cluster.\n",
        upstream.len(),
        newest.1,
        if run.timestamp.is_empty() { "(no timestamp)" } else { &run.timestamp },
    );
    doc.push_str("\n## Totals\n\n");
    doc.push_str(&totals_table(&areas, &totals));
    doc.push_str("\nTests tagged `[node]` only:\n\n");
    let node_areas: Vec<&str> =
        areas.iter().copied().filter(|a| node_totals.contains_key(a)).collect();
    doc.push_str(&totals_table(&node_areas, &node_totals));
    let _ = write!(doc, "\n## Suite time\n\n{}\n", suite_time(coverage, run));
    doc.push_str(&sections);
    missing_everywhere.sort();
    missing_everywhere.dedup();
    Ok((doc, missing_everywhere))
}

fn totals_table(areas: &[&str], totals: &BTreeMap<&str, Totals>) -> String {
    let mut out = String::from(
        "| area | tests | pass | fail | not covered | needs a registry image | cannot run here |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut all = Totals::default();
    for area in areas {
        let t = totals.get(area).copied().unwrap_or_default();
        for (sum, n) in all.iter_mut().zip(t) {
            *sum += n;
        }
        let _ = writeln!(
            out,
            "| {area} | {} | {} | {} | {} | {} | {} |",
            t.iter().sum::<usize>(),
            t[0],
            t[1],
            t[2],
            t[3],
            t[4]
        );
    }
    let _ = writeln!(
        out,
        "| **all** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** |",
        all.iter().sum::<usize>(),
        all[0],
        all[1],
        all[2],
        all[3],
        all[4]
    );
    out
}

/// `v1.9, v1.18` as (1, 18).
fn newest_release(release: &str) -> (u32, u32) {
    release
        .split(',')
        .filter_map(|r| {
            let (major, minor) = r.trim().trim_start_matches('v').split_once('.')?;
            Some((major.parse().ok()?, minor.parse().ok()?))
        })
        .max()
        .unwrap_or_default()
}

/// Upstream's conformance run on k3s, the figure's anchor: about 1 h 50 min.
pub const UPSTREAM_RUN_SECONDS: f64 = 110.0 * 60.0;

/// The run's wall time against a tenth of upstream's conformance run (the figure: run just
/// the covering tests, see `conformance/map/README.md`), and what the tests covering
/// upstream's took (each test's time, summed once per test).
pub fn suite_time(coverage: &coverage::Map, run: &Run) -> String {
    let Some(wall) = run.wall_seconds else {
        return "The report gives no wall time for the run.".to_string();
    };
    let covering: std::collections::BTreeSet<&String> =
        coverage.values().flat_map(|c| c.tests.iter()).collect();
    let covering_seconds: f64 = covering.iter().filter_map(|t| run.seconds.get(*t)).sum();
    let all_seconds: f64 = run.seconds.values().sum();
    let target = UPSTREAM_RUN_SECONDS / 10.0;
    format!(
        "That run ({} tests) took **{wall:.0} s** of wall time, against \
         a target of under {target:.0} s (a tenth of upstream's conformance run on k3s, about \
         1 h 50 min): {}. Its tests took {all_seconds:.0} s between them (nextest runs \
         several at a time); the {} rkube tests that cover upstream conformance tests took \
         {covering_seconds:.0} s of that.",
        run.outcomes.len(),
        if wall < target { "met" } else { "NOT met" },
        covering.len(),
    )
}

/// A nextest filterset selecting exactly the rkube tests the tables name (`binary test`,
/// the binary `package::name` or the package's unit tests), to time the suite covering the
/// upstream conformance tests on its own.
pub fn covering_filter(coverage: &coverage::Map) -> String {
    let mut by_binary: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for test in coverage.values().flat_map(|c| c.tests.iter()) {
        if let Some((binary, name)) = test.split_once(' ') {
            let names = by_binary.entry(binary).or_default();
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    let parts: Vec<String> = by_binary
        .iter()
        .map(|(binary, names)| {
            let which = match binary.split_once("::") {
                Some((package, name)) => format!("package({package}) & binary(={name})"),
                None => format!("package({binary}) & kind(lib)"),
            };
            let tests: Vec<String> = names.iter().map(|n| format!("test(={n})")).collect();
            format!("({which} & ({}))", tests.join(" | "))
        })
        .collect();
    parts.join(" | ")
}

/// Text safe in a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test(name: &str, tags: &str) -> UpstreamTest {
        UpstreamTest {
            area: "sig-node".into(),
            section: "Pods".into(),
            name: name.into(),
            release: "v1.9, v1.18".into(),
            tags: tags.into(),
            file: "pods.go".into(),
        }
    }

    #[test]
    fn a_missing_covering_test_never_passes() {
        let run = Run {
            outcomes: [
                ("b ok".to_string(), Outcome::Passed),
                ("b bad".to_string(), Outcome::Failed),
            ]
            .into(),
            timestamp: "t".into(),
            ..Run::default()
        };
        let covered = |tests: &[&str]| Coverage {
            tests: tests.iter().map(|t| t.to_string()).collect(),
            ..Coverage::default()
        };
        assert_eq!(status(Some(&covered(&["b ok"])), &run), Status::Pass);
        assert_eq!(status(Some(&covered(&["b ok", "b bad"])), &run), Status::Fail);
        assert_eq!(
            status(Some(&covered(&["b ok", "b renamed"])), &run),
            Status::NotCovered { missing: vec!["b renamed".into()] }
        );
        assert_eq!(status(None, &run), Status::NotCovered { missing: vec![] });

        let upstream = [test("A", "[node]"), test("B", "[api]"), test("C", "[node]")];
        let map: coverage::Map =
            [("A".to_string(), covered(&["b ok"])), ("C".to_string(), covered(&["b gone"]))].into();
        let (doc, missing) = render(&upstream, &map, &run).unwrap();
        assert_eq!(missing, ["b gone"]);
        assert!(doc.contains("| sig-node | 3 | 1 | 0 | 2 | 0 | 0 |"), "{doc}");
        assert!(doc.contains("| sig-node | 2 | 1 | 0 | 1 | 0 | 0 |"), "[node] only: {doc}");
        assert!(doc.contains("promoted up to v1.18"), "{doc}");
        let unknown: coverage::Map = [("Z".to_string(), covered(&["b ok"]))].into();
        assert!(render(&upstream, &unknown, &run).is_err());
    }
}
