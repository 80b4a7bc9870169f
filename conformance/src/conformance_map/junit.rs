//! The results of a suite run, from nextest's JUnit report (`target/nextest/default/junit.xml`,
//! written because `.config/nextest.toml` asks for it): each test as `binary test`, passed or
//! failed.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use quick_xml::events::Event;
use quick_xml::Reader;

/// How one test ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Failed,
    /// Reported as skipped (`#[ignore]`, or skipped by the test itself).
    Skipped,
}

/// A run: every reported test's outcome and time, when the report was written and how long
/// the whole run took.
#[derive(Debug, Default)]
pub struct Run {
    pub outcomes: HashMap<String, Outcome>,
    /// The report's `timestamp`, as written.
    pub timestamp: String,
    /// The run's wall time in seconds (the report's `time`), if given.
    pub wall_seconds: Option<f64>,
    /// Each test's own time in seconds, where given.
    pub seconds: HashMap<String, f64>,
}

/// Reads a JUnit report: `<testsuite name=BINARY>` holding `<testcase name=TEST>`, failed
/// when the case holds a `<failure>` or `<error>`, skipped with `<skipped>`.
pub fn parse(xml: &str) -> Result<Run> {
    let mut reader = Reader::from_str(xml);
    let mut run = Run::default();
    let mut suite = String::new();
    let mut case: Option<(String, Outcome)> = None;
    loop {
        let event = reader.read_event().context("reading the JUnit report")?;
        match &event {
            Event::Start(e) | Event::Empty(e) => {
                let attr = |key: &[u8]| -> Result<String> {
                    match e.try_get_attribute(key)? {
                        Some(a) => Ok(a.unescape_value()?.into_owned()),
                        None => Ok(String::new()),
                    }
                };
                match e.name().as_ref() {
                    b"testsuites" => {
                        run.timestamp = attr(b"timestamp")?;
                        run.wall_seconds = attr(b"time")?.parse().ok();
                    }
                    b"testsuite" => suite = attr(b"name")?,
                    b"testcase" => {
                        let name = format!("{suite} {}", attr(b"name")?);
                        if let Ok(seconds) = attr(b"time")?.parse::<f64>() {
                            run.seconds.insert(name.clone(), seconds);
                        }
                        if matches!(event, Event::Empty(_)) {
                            run.outcomes.insert(name, Outcome::Passed);
                        } else {
                            case = Some((name, Outcome::Passed));
                        }
                    }
                    b"failure" | b"error" => {
                        if let Some((_, outcome)) = case.as_mut() {
                            *outcome = Outcome::Failed;
                        }
                    }
                    b"skipped" => {
                        if let Some((_, outcome)) = case.as_mut() {
                            if *outcome == Outcome::Passed {
                                *outcome = Outcome::Skipped;
                            }
                        }
                    }
                    _ => {}
                }
            }
            Event::End(e) if e.name().as_ref() == b"testcase" => {
                if let Some((name, outcome)) = case.take() {
                    run.outcomes.insert(name, outcome);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if run.outcomes.is_empty() {
        bail!("the JUnit report names no tests");
    }
    Ok(run)
}

/// Reads a JUnit report from a file.
pub fn read(path: &Path) -> Result<Run> {
    let xml = std::fs::read_to_string(path).with_context(|| {
        format!("reading {} (run the suite with scripts/test.sh first)", path.display())
    })?;
    parse(&xml).with_context(|| format!("in {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passed_failed_and_skipped_cases() {
        let run = parse(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="nextest-run" tests="4" failures="1" errors="0" timestamp="2026-11-29T07:00:00Z" time="12.5">
  <testsuite name="rkube-conformance::kubelet" tests="3">
    <testcase name="runs" classname="rkube-conformance::kubelet" time="1.0"></testcase>
    <testcase name="breaks" classname="rkube-conformance::kubelet" time="1.0">
      <failure type="test failure">panicked &lt;here&gt;</failure><system-out>x</system-out>
    </testcase>
    <testcase name="skips" classname="rkube-conformance::kubelet"><skipped/></testcase>
  </testsuite>
  <testsuite name="rkube-store::sqlite"><testcase name="a::b" classname="c"/></testsuite>
</testsuites>"#,
        )
        .unwrap();
        assert_eq!(run.outcomes["rkube-conformance::kubelet runs"], Outcome::Passed);
        assert_eq!(run.outcomes["rkube-conformance::kubelet breaks"], Outcome::Failed);
        assert_eq!(run.outcomes["rkube-conformance::kubelet skips"], Outcome::Skipped);
        assert_eq!(run.outcomes["rkube-store::sqlite a::b"], Outcome::Passed);
        assert_eq!(run.timestamp, "2026-11-29T07:00:00Z");
        assert_eq!(run.wall_seconds, Some(12.5));
        assert_eq!(run.seconds["rkube-conformance::kubelet breaks"], 1.0);
        assert!(!run.seconds.contains_key("rkube-conformance::kubelet skips"));
        assert!(parse("<testsuites/>").is_err());
        assert!(parse("<testsuites><testsuite").is_err());
    }
}
