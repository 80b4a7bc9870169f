//! Writes `docs/conformance.md`, the conformance map: every upstream conformance test, the
//! rkube tests that check the same behaviour, and their result in the last suite run
//! (see `rkube_conformance::conformance_map`).
//!
//! ./scripts/test.sh    # the suite; nextest writes target/nextest/default/junit.xml
//! cargo run -p rkube-conformance --bin conformance-map
//!
//! Issue 22's figure (the suite covering the conformance behaviours, timed on its own):
//! cargo nextest run --workspace --all-features --test-threads 4 \
//!     -E "$(cargo run -q -p rkube-conformance --bin conformance-map -- --covering-filter)"
//! cargo run -p rkube-conformance --bin conformance-map

use std::path::PathBuf;

use anyhow::{Context, Result};
use rkube_conformance::conformance_map::{coverage, junit, report, upstream};

#[derive(clap::Parser)]
struct Cli {
    /// The upstream conformance tests
    #[arg(long, default_value = "conformance/map/upstream.tsv")]
    upstream: PathBuf,
    /// The coverage tables
    #[arg(long, default_value = "conformance/map/coverage")]
    coverage: PathBuf,
    /// The suite run's JUnit report
    #[arg(long, default_value = "target/nextest/default/junit.xml")]
    junit: PathBuf,
    /// Where the map goes
    #[arg(long, default_value = "docs/conformance.md")]
    output: PathBuf,
    /// Print the nextest filterset of the covering tests instead (for the figure's run)
    #[arg(long)]
    covering_filter: bool,
}

fn main() -> Result<()> {
    let cli: Cli = clap::Parser::parse();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let at = |p: &PathBuf| if p.is_absolute() { p.clone() } else { root.join(p) };
    let upstream = upstream::read(&at(&cli.upstream))?;
    let coverage = coverage::read_dir(&at(&cli.coverage))?;
    if cli.covering_filter {
        println!("{}", report::covering_filter(&coverage));
        return Ok(());
    }
    let run = junit::read(&at(&cli.junit))?;
    let (doc, missing) = report::render(&upstream, &coverage, &run)?;
    for test in &missing {
        eprintln!("warning: {test} covers an upstream test but the run did not report it");
    }
    let output = at(&cli.output);
    std::fs::write(&output, doc).with_context(|| format!("writing {}", output.display()))?;
    println!("wrote {}", output.display());
    Ok(())
}
