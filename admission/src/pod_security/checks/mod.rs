//! The checks of the Pod Security Standards, one module each, named after upstream's check
//! ids (`privileged`, `runAsNonRoot`, ...), each a pure function over a [`Pod`] per version
//! of the standards where its rule changed. [`ALL`] lists them; the evaluator orders them.

use super::evaluator::Check;
#[cfg(test)]
use super::pod::Pod;

mod allow_privilege_escalation;
mod app_armor_profile;
mod capabilities_baseline;
mod capabilities_restricted;
mod host_namespaces;
mod host_path_volumes;
mod host_ports;
mod privileged;
mod proc_mount;
mod restricted_volumes;
mod run_as_non_root;
mod run_as_user;
mod se_linux_options;
mod seccomp_profile_baseline;
mod seccomp_profile_restricted;
mod sysctls;
mod windows_host_process;

/// Every check of v1.33's standards.
pub const ALL: &[Check] = &[
    allow_privilege_escalation::CHECK,
    app_armor_profile::CHECK,
    capabilities_baseline::CHECK,
    capabilities_restricted::CHECK,
    host_namespaces::CHECK,
    host_path_volumes::CHECK,
    host_ports::CHECK,
    privileged::CHECK,
    proc_mount::CHECK,
    restricted_volumes::CHECK,
    run_as_non_root::CHECK,
    run_as_user::CHECK,
    se_linux_options::CHECK,
    seccomp_profile_baseline::CHECK,
    seccomp_profile_restricted::CHECK,
    sysctls::CHECK,
    windows_host_process::CHECK,
];

/// A pod from its JSON (`spec`, and `metadata.annotations`), for the checks' tests.
#[cfg(test)]
fn pod(object: serde_json::Value) -> Pod {
    Pod::decode(&object).expect("a pod")
}

/// What a check said, as the refusal reads it (`reason (detail)`), or `None` when it let
/// the pod pass.
#[cfg(test)]
fn said(found: Option<super::evaluator::Violation>) -> Option<String> {
    found.map(|v| super::evaluator::Violations(vec![v]).detail())
}
