//! Which checks a level at a version runs, in which order, and what their findings read
//! like together (upstream's check registry).
//!
//! Each [`Check`] belongs to one level and has one or more versions, each from a minimum
//! `v1.<minor>` on. A level at a version runs, of each check of its level (restricted: and of
//! the baseline level), the last version whose minimum is not past it; a check not yet
//! there at that version is not run, and `latest` runs the newest of each. A restricted
//! check may replace baseline ones (restricted volume types replace the hostPath check).
//! Findings come in one order: baseline checks by id, then restricted ones by id.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use super::checks;
use super::level::{Level, LevelVersion};
use super::pod::Pod;

/// What a check found wrong with a pod: a short reason and the detail (which containers,
/// which values).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub reason: String,
    pub detail: String,
}

impl Violation {
    pub fn new(reason: impl Into<String>, detail: impl Into<String>) -> Violation {
        Violation { reason: reason.into(), detail: detail.into() }
    }
}

/// One version of a check: it looks at a pod and says what is wrong, if anything.
pub type CheckFn = fn(&Pod) -> Option<Violation>;

/// A check from `v1.<since>` on.
#[derive(Clone, Copy, Debug)]
pub struct Versioned {
    pub since: u32,
    pub check: CheckFn,
    /// The baseline checks this one replaces at the restricted level.
    pub overrides: &'static [&'static str],
}

/// One rule of the standards, named by upstream's check id.
#[derive(Clone, Copy, Debug)]
pub struct Check {
    pub id: &'static str,
    pub level: Level,
    /// By strictly increasing `since`.
    pub versions: &'static [Versioned],
}

impl Check {
    /// The version of the check that `minor` runs, if it has one yet.
    fn at(&self, minor: u32) -> Option<&Versioned> {
        self.versions.iter().rev().find(|v| v.since <= minor)
    }
}

/// Every check, baseline ones by id then restricted ones by id (byte order, as upstream
/// sorts its ids).
fn ordered() -> &'static [Check] {
    static ORDERED: OnceLock<Vec<Check>> = OnceLock::new();
    ORDERED.get_or_init(|| {
        let mut all = checks::ALL.to_vec();
        all.sort_by_key(|c| (c.level == Level::Restricted, c.id));
        all
    })
}

/// The checks `policy` runs, by id, in order.
fn plan(policy: LevelVersion) -> Vec<(&'static str, &'static Versioned)> {
    let minor = policy.version.minor();
    let replaced: BTreeSet<&str> = match policy.level {
        Level::Restricted => ordered()
            .iter()
            .filter(|c| c.level == Level::Restricted)
            .filter_map(|c| c.at(minor))
            .flat_map(|v| v.overrides.iter().copied())
            .collect(),
        _ => BTreeSet::new(),
    };
    let runs = |c: &Check| match policy.level {
        Level::Privileged => false,
        Level::Baseline => c.level == Level::Baseline,
        Level::Restricted => !replaced.contains(c.id),
    };
    ordered().iter().filter(|c| runs(c)).filter_map(|c| Some((c.id, c.at(minor)?))).collect()
}

/// What `policy` finds wrong with `pod`, in order (nothing at the privileged level).
pub fn evaluate(policy: LevelVersion, pod: &Pod) -> Violations {
    Violations(plan(policy).into_iter().filter_map(|(_, v)| (v.check)(pod)).collect())
}

/// The findings of one level on one pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Violations(pub Vec<Violation>);

impl Violations {
    pub fn allowed(&self) -> bool {
        self.0.is_empty()
    }

    /// `reason (detail), reason (detail)`: what refusals and warnings say.
    pub fn detail(&self) -> String {
        let each = self.0.iter().map(|v| match v.detail.as_str() {
            "" => v.reason.clone(),
            detail => format!("{} ({detail})", v.reason),
        });
        each.collect::<Vec<_>>().join(", ")
    }

    /// `reason, reason`: what the warnings about a namespace's existing pods say.
    pub fn reasons(&self) -> String {
        self.0.iter().map(|v| v.reason.as_str()).collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_security::level::Version;
    use serde_json::json;

    fn at(level: Level, version: Version) -> LevelVersion {
        LevelVersion { level, version }
    }

    fn ids(level: Level, version: Version) -> Vec<&'static str> {
        plan(at(level, version)).into_iter().map(|(id, _)| id).collect()
    }

    #[test]
    fn the_registry_is_well_formed() {
        let mut seen = BTreeSet::new();
        for c in checks::ALL {
            assert!(seen.insert(c.id), "{} twice", c.id);
            assert!(!c.versions.is_empty(), "{}", c.id);
            assert!(c.versions.windows(2).all(|w| w[0].since < w[1].since), "{}", c.id);
            for v in c.versions {
                if !v.overrides.is_empty() {
                    assert_eq!(c.level, Level::Restricted, "{}", c.id);
                }
                for o in v.overrides {
                    let target = checks::ALL.iter().find(|t| t.id == *o).expect(o);
                    assert_eq!(target.level, Level::Baseline, "{} overrides {o}", c.id);
                }
            }
        }
        assert_eq!(checks::ALL.len(), 17);
    }

    #[test]
    fn levels_run_upstreams_checks_in_upstreams_order() {
        let baseline = [
            "appArmorProfile",
            "capabilities_baseline",
            "hostNamespaces",
            "hostPathVolumes",
            "hostPorts",
            "privileged",
            "procMount",
            "seLinuxOptions",
            "seccompProfile_baseline",
            "sysctls",
            "windowsHostProcess",
        ];
        assert_eq!(ids(Level::Baseline, Version::Latest), baseline);
        assert_eq!(ids(Level::Baseline, Version::V1(0)), baseline);
        assert!(ids(Level::Privileged, Version::Latest).is_empty());
        assert_eq!(
            ids(Level::Restricted, Version::Latest),
            [
                "appArmorProfile",
                "hostNamespaces",
                "hostPorts",
                "privileged",
                "procMount",
                "seLinuxOptions",
                "sysctls",
                "windowsHostProcess",
                "allowPrivilegeEscalation",
                "capabilities_restricted",
                "restrictedVolumes",
                "runAsNonRoot",
                "runAsUser",
                "seccompProfile_restricted",
            ]
        );
        // Before v1.8 there is no allowPrivilegeEscalation, before v1.19 the baseline
        // seccomp check (annotations) stands, before v1.22 the baseline capabilities one,
        // before v1.23 no runAsUser.
        assert_eq!(
            ids(Level::Restricted, Version::V1(7)),
            [
                "appArmorProfile",
                "capabilities_baseline",
                "hostNamespaces",
                "hostPorts",
                "privileged",
                "procMount",
                "seLinuxOptions",
                "seccompProfile_baseline",
                "sysctls",
                "windowsHostProcess",
                "restrictedVolumes",
                "runAsNonRoot",
            ]
        );
        let v22 = ids(Level::Restricted, Version::V1(22));
        assert!(v22.contains(&"capabilities_restricted") && !v22.contains(&"runAsUser"));
        assert!(!v22.contains(&"capabilities_baseline"));
    }

    #[test]
    fn findings_read_as_upstreams() {
        let pod = Pod::decode(&json!({"spec": {
            "hostNetwork": true,
            "containers": [{"name": "c", "securityContext": {"privileged": true}}],
        }}))
        .unwrap();
        let baseline = evaluate(at(Level::Baseline, Version::Latest), &pod);
        assert_eq!(
            baseline.detail(),
            "host namespaces (hostNetwork=true), privileged (container \"c\" must not set securityContext.privileged=true)"
        );
        let restricted = evaluate(at(Level::Restricted, Version::Latest), &pod);
        assert_eq!(
            restricted.reasons(),
            "host namespaces, privileged, allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile"
        );
        assert!(evaluate(at(Level::Privileged, Version::Latest), &pod).allowed());
        let empty = Violations(vec![Violation::new("r", ""), Violation::new("s", "d")]);
        assert_eq!(empty.detail(), "r, s (d)");
    }
}
