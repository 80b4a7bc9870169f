//! Which rkube tests cover an upstream conformance test: the tables in
//! `conformance/map/coverage/*.toml`, one file per area, one table per upstream test:
//!
//! ```toml
//! ["Pods, assigned hostip"]
//! tests = ["rkube-conformance::kubelet the_pod_network_gives_addresses_host_ports_and_name_files"]
//!
//! ["Pods, ServiceAccountIssuerDiscovery"]
//! needs_image = "agnhost's test-service-account-issuer-discovery command"
//! ```
//!
//! A test is named as nextest names it: the binary (`rkube-conformance::kubelet`), a space,
//! the test function. An entry has covering `tests`, or says why none can run here:
//! `needs_image` (an upstream test image no local build stands in for) or `cannot` (a mode
//! this machine or its Docker refuses). `note` says what the covering tests leave out.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// What covers one upstream test.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Coverage {
    /// The rkube tests that check the same behaviour, each as `binary test`.
    #[serde(default)]
    pub tests: Vec<String>,
    /// Why no rkube test can: an upstream image this machine cannot build.
    pub needs_image: Option<String>,
    /// Why no rkube test can: something this machine refuses.
    pub cannot: Option<String>,
    /// What the covering tests leave out, if anything.
    pub note: Option<String>,
}

/// Every entry, by upstream test name.
pub type Map = BTreeMap<String, Coverage>;

/// Reads one table file; an entry must say exactly one of `tests`, `needs_image`, `cannot`.
pub fn parse(text: &str) -> Result<Map> {
    let map: Map = toml::from_str(text)?;
    for (name, entry) in &map {
        let given = [!entry.tests.is_empty(), entry.needs_image.is_some(), entry.cannot.is_some()];
        if given.iter().filter(|g| **g).count() != 1 {
            bail!("{name:?}: give exactly one of tests, needs_image and cannot");
        }
        if let Some(bad) = entry.tests.iter().find(|t| t.split_once(' ').is_none()) {
            bail!("{name:?}: {bad:?} is not a test as nextest names it (binary, space, test)");
        }
    }
    Ok(map)
}

/// Reads every `*.toml` in `dir`; an upstream test in two files is an error.
pub fn read_dir(dir: &Path) -> Result<Map> {
    let mut all = Map::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        let map = parse(&text).with_context(|| format!("in {}", file.display()))?;
        for (name, entry) in map {
            if all.insert(name.clone(), entry).is_some() {
                bail!("{name:?} is covered in two files (the second: {})", file.display());
            }
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_says_one_thing() {
        let map = parse(
            "[\"A, b\"]\ntests = [\"rkube-conformance::kubelet runs\"]\nnote = \"x\"\n\
             [C]\nneeds_image = \"agnhost\"\n",
        )
        .unwrap();
        assert_eq!(map["A, b"].tests, ["rkube-conformance::kubelet runs"]);
        assert_eq!(map["C"].needs_image.as_deref(), Some("agnhost"));
        assert!(parse("[A]\n").is_err());
        assert!(parse("[A]\ntests = [\"t\"]\ncannot = \"no\"\n").is_err());
        assert!(parse("[A]\ntests = [\"no_binary\"]\n").is_err());
        assert!(parse("[A]\ntest = [\"a b\"]\n").is_err());
    }
}
