//! The upstream conformance tests, as `conformance/map/upstream.tsv` lists them: one line
//! each after a header, tab-separated `area, section, testname, release, tags, file`.

use anyhow::{bail, Context, Result};

/// One upstream conformance test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamTest {
    /// `sig-node`, `sig-apps`, ...
    pub area: String,
    /// The e2e describe block (`Pods`, `Job`, ...).
    pub section: String,
    /// The test's conformance name, unique in the list.
    pub name: String,
    /// The release that promoted it (`v1.30`, or several: `v1.9, v1.18`).
    pub release: String,
    /// What it needs: `[api]` or `[node]`, then `[net]`, `[webhook]`, `[crd]`,
    /// `[aggregator]`, `{Serial}`, `{Slow}`, `{Disruptive}`, `{LinuxOnly}`.
    pub tags: String,
    /// The upstream e2e source file.
    pub file: String,
}

impl UpstreamTest {
    /// Whether the test needs a node that runs containers (tagged `[node]`).
    pub fn is_node(&self) -> bool {
        self.tags.contains("[node]")
    }
}

const HEADER: [&str; 6] = ["area", "section", "testname", "release", "tags", "file"];

/// Reads the list; every line must have the six columns and every name must be unique.
pub fn parse(text: &str) -> Result<Vec<UpstreamTest>> {
    let mut lines = text.lines().enumerate();
    let header: Vec<&str> = lines.next().map(|(_, l)| l.split('\t').collect()).unwrap_or_default();
    if header != HEADER {
        bail!("the header must be {:?}, not {header:?}", HEADER.join("\t"));
    }
    let mut tests = Vec::new();
    let mut names = std::collections::HashSet::new();
    for (n, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split('\t').collect();
        let [area, section, name, release, tags, file] = cells[..] else {
            bail!("line {}: {} columns, not 6", n + 1, cells.len());
        };
        if !names.insert(name.to_string()) {
            bail!("line {}: {name:?} is listed twice", n + 1);
        }
        tests.push(UpstreamTest {
            area: area.into(),
            section: section.into(),
            name: name.into(),
            release: release.into(),
            tags: tags.into(),
            file: file.into(),
        });
    }
    Ok(tests)
}

/// Reads the list from a file.
pub fn read(path: &std::path::Path) -> Result<Vec<UpstreamTest>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse(&text).with_context(|| format!("in {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_columns_and_refuses_a_name_twice() {
        let head = "area\tsection\ttestname\trelease\ttags\tfile\n";
        let one =
            "sig-node\tPods\tPods, assigned hostip\tv1.9\t[node]\ttest/e2e/common/node/pods.go\n";
        let tests = parse(&format!("{head}{one}")).unwrap();
        assert_eq!(tests[0].name, "Pods, assigned hostip");
        assert!(tests[0].is_node());
        assert!(parse(&format!("{head}{one}{one}")).unwrap_err().to_string().contains("twice"));
        assert!(parse("name\n").is_err());
        assert!(parse(&format!("{head}a\tb\n")).unwrap_err().to_string().contains("2 columns"));
    }
}
