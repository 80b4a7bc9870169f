//! What a namespace asks of its pods: the Pod Security Standards level (privileged, baseline,
//! restricted) at a version of the standards, for each of the three modes (enforce, audit,
//! warn), read from the namespace's `pod-security.kubernetes.io/<mode>[-version]` labels.
//!
//! As upstream: a label that does not parse is an error the namespace's own writes are
//! refused for, and when it is already there (written while the plugin was off) it is read
//! failing closed for enforce (`restricted`, `latest`) and open for audit and warn
//! (`privileged`). A namespace that sets an enforce level stricter than its warn level warns
//! at the enforce level too.

use std::collections::BTreeMap;
use std::fmt;

use rkube_apis::validation::FieldError;
use serde_json::json;

pub const ENFORCE_LEVEL: &str = "pod-security.kubernetes.io/enforce";
pub const ENFORCE_VERSION: &str = "pod-security.kubernetes.io/enforce-version";
pub const AUDIT_LEVEL: &str = "pod-security.kubernetes.io/audit";
pub const AUDIT_VERSION: &str = "pod-security.kubernetes.io/audit-version";
pub const WARN_LEVEL: &str = "pod-security.kubernetes.io/warn";
pub const WARN_VERSION: &str = "pod-security.kubernetes.io/warn-version";

/// A Pod Security Standards level; ordered from the least strict to the strictest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    /// A label's level; what does not parse is an error with upstream's detail.
    pub fn parse(text: &str) -> Result<Level, &'static str> {
        match text {
            "privileged" => Ok(Level::Privileged),
            "baseline" => Ok(Level::Baseline),
            "restricted" => Ok(Level::Restricted),
            _ => Err("must be one of privileged, baseline, restricted"),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// A version of the standards: `v1.<minor>`, or `latest` (newer than every other).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    V1(u32),
    Latest,
}

impl Version {
    /// A label's version: `latest` or `v1.<minor>` without leading zeros.
    pub fn parse(text: &str) -> Result<Version, &'static str> {
        const BAD: &str = "must be \"latest\" or \"v1.x\"";
        if text == "latest" {
            return Ok(Version::Latest);
        }
        let minor = text.strip_prefix("v1.").unwrap_or("");
        let digits = !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit());
        let leading_zero = minor.len() > 1 && minor.starts_with('0');
        match minor.parse::<u32>() {
            Ok(minor) if digits && !leading_zero => Ok(Version::V1(minor)),
            _ => Err(BAD),
        }
    }

    /// The minor version the checks are chosen by: `latest` is past every one.
    pub fn minor(self) -> u32 {
        match self {
            Version::V1(minor) => minor,
            Version::Latest => u32::MAX,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::V1(minor) => write!(f, "v1.{minor}"),
            Version::Latest => f.write_str("latest"),
        }
    }
}

/// A level at a version: `restricted:latest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LevelVersion {
    pub level: Level,
    pub version: Version,
}

impl LevelVersion {
    pub const PRIVILEGED: LevelVersion =
        LevelVersion { level: Level::Privileged, version: Version::Latest };
}

impl fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level.as_str(), self.version)
    }
}

/// What a namespace asks for in each mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub enforce: LevelVersion,
    pub audit: LevelVersion,
    pub warn: LevelVersion,
}

/// Upstream's default configuration: privileged at the latest version in every mode.
impl Default for Policy {
    fn default() -> Self {
        let p = LevelVersion::PRIVILEGED;
        Policy { enforce: p, audit: p, warn: p }
    }
}

impl Policy {
    /// The policy of a namespace's labels over the defaults, and the labels that do not
    /// parse (as `metadata.labels[<label>]` field errors, in upstream's order).
    pub fn from_labels(labels: &BTreeMap<String, String>) -> (Policy, Vec<FieldError>) {
        let mut read = Labels { labels, errors: Vec::new() };
        let mut policy = Policy::default();
        // Enforce fails closed, audit and warn open.
        let enforce_level = read.level(ENFORCE_LEVEL, Level::Restricted);
        if let Some((level, _)) = enforce_level {
            policy.enforce.level = level;
        }
        if let Some(version) = read.version(ENFORCE_VERSION) {
            policy.enforce.version = version;
        }
        if let Some((level, _)) = read.level(AUDIT_LEVEL, Level::Privileged) {
            policy.audit.level = level;
        }
        if let Some(version) = read.version(AUDIT_VERSION) {
            policy.audit.version = version;
        }
        let warn_level = read.level(WARN_LEVEL, Level::Privileged);
        if let Some((level, _)) = warn_level {
            policy.warn.level = level;
        }
        let warn_version = read.version(WARN_VERSION);
        if let Some(version) = warn_version {
            policy.warn.version = version;
        }
        // Warn at the enforce level when that is explicitly (and validly) stricter.
        let explicit_enforce = matches!(enforce_level, Some((_, true)));
        if warn_level.is_none() && explicit_enforce && policy.enforce.level > policy.warn.level {
            policy.warn.level = policy.enforce.level;
            if warn_version.is_none() {
                policy.warn.version = policy.enforce.version;
            }
        }
        (policy, read.errors)
    }

    /// Nothing is checked in any mode.
    pub fn fully_privileged(&self) -> bool {
        [self.enforce, self.audit, self.warn].iter().all(|lv| lv.level == Level::Privileged)
    }
}

/// The labels being read, and the errors found so far.
struct Labels<'a> {
    labels: &'a BTreeMap<String, String>,
    errors: Vec<FieldError>,
}

impl Labels<'_> {
    fn invalid(&mut self, label: &str, value: &str, detail: &str) {
        let field = format!("metadata.labels[{label}]");
        self.errors.push(FieldError::invalid(field, &json!(value), detail));
    }

    /// The level of `label` if it is there, and whether it parsed (else it is `failed`).
    fn level(&mut self, label: &str, failed: Level) -> Option<(Level, bool)> {
        let value = self.labels.get(label)?;
        match Level::parse(value) {
            Ok(level) => Some((level, true)),
            Err(detail) => {
                self.invalid(label, value, detail);
                Some((failed, false))
            }
        }
    }

    /// The version of `label` if it is there (`latest` when it does not parse).
    fn version(&mut self, label: &str) -> Option<Version> {
        let value = self.labels.get(label)?;
        Some(Version::parse(value).unwrap_or_else(|detail| {
            self.invalid(label, value, detail);
            Version::Latest
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn lv(level: Level, version: Version) -> LevelVersion {
        LevelVersion { level, version }
    }

    #[test]
    fn versions_parse_as_upstream() {
        assert_eq!(Version::parse("latest"), Ok(Version::Latest));
        assert_eq!(Version::parse("v1.0"), Ok(Version::V1(0)));
        assert_eq!(Version::parse("v1.25"), Ok(Version::V1(25)));
        for bad in ["v1.05", "v1.", "v2.1", "1.25", "v1.2x", "Latest", "v1.99999999999"] {
            assert_eq!(Version::parse(bad), Err("must be \"latest\" or \"v1.x\""), "{bad}");
        }
        assert_eq!(Version::V1(3).to_string(), "v1.3");
        assert_eq!(lv(Level::Baseline, Version::Latest).to_string(), "baseline:latest");
    }

    #[test]
    fn labels_make_the_policy_with_upstream_defaults() {
        let (p, errors) = Policy::from_labels(&labels(&[]));
        assert_eq!((p, errors.len()), (Policy::default(), 0));
        assert!(p.fully_privileged());

        // An explicit enforce level stricter than warn is warned at too, at its version.
        let (p, errors) = Policy::from_labels(&labels(&[
            (ENFORCE_LEVEL, "baseline"),
            (ENFORCE_VERSION, "v1.22"),
        ]));
        assert!(errors.is_empty());
        assert_eq!(p.enforce, lv(Level::Baseline, Version::V1(22)));
        assert_eq!(p.warn, lv(Level::Baseline, Version::V1(22)));
        assert_eq!(p.audit, LevelVersion::PRIVILEGED);
        // ... unless warn is set, or its version only.
        let (p, _) = Policy::from_labels(&labels(&[
            (ENFORCE_LEVEL, "restricted"),
            (WARN_LEVEL, "privileged"),
        ]));
        assert_eq!(p.warn, LevelVersion::PRIVILEGED);
        let (p, _) =
            Policy::from_labels(&labels(&[(ENFORCE_LEVEL, "restricted"), (WARN_VERSION, "v1.2")]));
        assert_eq!(p.warn, lv(Level::Restricted, Version::V1(2)));
        // An enforce version alone leaves enforce privileged, warn untouched.
        let (p, _) = Policy::from_labels(&labels(&[(ENFORCE_VERSION, "v1.2")]));
        assert_eq!(p.enforce, lv(Level::Privileged, Version::V1(2)));
        assert_eq!(p.warn, LevelVersion::PRIVILEGED);
    }

    #[test]
    fn bad_labels_fail_closed_for_enforce_and_open_for_audit_and_warn() {
        let (p, errors) = Policy::from_labels(&labels(&[
            (ENFORCE_LEVEL, "strict"),
            (ENFORCE_VERSION, "v1.x"),
            (AUDIT_LEVEL, "nope"),
            (WARN_LEVEL, "bogus"),
            (WARN_VERSION, "1.2"),
        ]));
        assert_eq!(p.enforce, lv(Level::Restricted, Version::Latest));
        assert_eq!(p.audit, LevelVersion::PRIVILEGED);
        assert_eq!(p.warn, LevelVersion::PRIVILEGED);
        let lines: Vec<String> = errors.iter().map(FieldError::line).collect();
        assert_eq!(
            lines,
            [
                "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted",
                "metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: \"v1.x\": must be \"latest\" or \"v1.x\"",
                "metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: \"nope\": must be one of privileged, baseline, restricted",
                "metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: \"bogus\": must be one of privileged, baseline, restricted",
                "metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: \"1.2\": must be \"latest\" or \"v1.x\"",
            ]
        );
        // A bad enforce level does not make warn follow it.
        let (p, _) = Policy::from_labels(&labels(&[(ENFORCE_LEVEL, "strict")]));
        assert_eq!(p.warn, LevelVersion::PRIVILEGED);
    }
}
