//! The scheduler's configuration file, as kube-scheduler's `--config` reads it: a
//! `KubeSchedulerConfiguration` of `kubescheduler.config.k8s.io/v1`, in YAML or JSON.
//!
//! Start at [`load`] / [`from_str`]; they return the [`Profile`]s to run and the
//! [`LeaderElection`] settings. Plugins are merged onto kube-scheduler's defaults (those of
//! [`default_profile`]) the way upstream merges them:
//!
//! - `multiPoint` is merged with the default multi-point set: a default named in `disabled`
//!   (or all of them, with `*`) is dropped, a default named again in `enabled` keeps its
//!   place with the new weight, other `enabled` plugins follow in order.
//! - `filter` and `score` then take what they want from that set: a plugin named in a
//!   point's own `enabled` list wins over its multi-point entry (and runs first), one named
//!   in the point's `disabled` list (or `*`) is left out there.
//!
//! `percentageOfNodesToScore` (top level, or per profile overriding it) sets how many
//! feasible nodes a cycle looks for before it stops filtering (see
//! [`crate::framework::num_feasible_nodes_to_find`]).
//!
//! Decoding is strict as upstream's: an unknown field is an error. Fields rkube does not act
//! on (`clientConnection`, `parallelism`, the other extension points, extenders, ...) are
//! accepted and ignored.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::Duration;

pub use rkube_runtime::leader_election::LeaderElection;
use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::framework::{FilterPlugin, Profile, ScorePlugin, Weighted};
use crate::plugins::node_resources_fit::ScoringStrategy;
use crate::plugins::{
    default_profile, ImageLocality, InterPodAffinity, NodeAffinity, NodeName, NodePorts,
    NodeResourcesBalancedAllocation, NodeResourcesFit, NodeUnschedulable, PodTopologySpread,
    TaintToleration, VolumeBinding, VolumeRestrictions, DEFAULT_SCHEDULER_NAME,
};

/// The only API version kube-scheduler v1.33 reads.
pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
pub const KIND: &str = "KubeSchedulerConfiguration";

/// Why a configuration file could not be used. The message fits on one line and names the
/// field at fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read scheduler configuration {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("invalid scheduler configuration: {0}")]
    Syntax(String),
    #[error("invalid scheduler configuration: {0}")]
    Invalid(String),
}

fn invalid(message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid(message.into())
}

/// What a configuration file asks for.
pub struct Config {
    /// One per `profiles[]` entry (or the default profile when there are none), each with
    /// a distinct scheduler name.
    pub profiles: Vec<Profile>,
    pub leader_election: LeaderElection,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.profiles.iter().map(|p| &p.scheduler_name).collect();
        f.debug_struct("Config")
            .field("profiles", &names)
            .field("leader_election", &self.leader_election)
            .finish()
    }
}

/// kube-scheduler's leader election when its configuration says nothing: the
/// `kube-system/kube-scheduler` Lease, upstream's timing.
pub fn default_leader_election() -> LeaderElection {
    LeaderElection::new("kube-system", "kube-scheduler")
}

/// Reads and checks a configuration file.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| ConfigError::Read { path: path.display().to_string(), source })?;
    from_str(&text)
}

/// Parses and checks a configuration (YAML or JSON).
pub fn from_str(text: &str) -> Result<Config, ConfigError> {
    // A first, loose pass so that a wrong apiVersion or kind is reported as such rather
    // than as whatever field the other version does not have.
    let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).map_err(syntax)?;
    if !value.is_mapping() {
        return Err(ConfigError::Syntax(format!("expected a {KIND} object")));
    }
    let field = |name: &str| value.get(name).and_then(|v| v.as_str()).unwrap_or("");
    match field("apiVersion") {
        API_VERSION => {}
        "" => return Err(invalid(format!("apiVersion is missing: expected {API_VERSION:?}"))),
        other => {
            return Err(invalid(format!(
                "apiVersion {other:?} is not supported: expected {API_VERSION:?}"
            )))
        }
    }
    match field("kind") {
        KIND => {}
        "" => return Err(invalid(format!("kind is missing: expected {KIND:?}"))),
        other => {
            return Err(invalid(format!("kind {other:?} is not supported: expected {KIND:?}")))
        }
    }
    let file: File = serde_yaml_ng::from_str(text).map_err(syntax)?;
    let leader_election = leader_election(file.leader_election.unwrap_or_default())?;
    let profiles =
        if file.profiles.is_empty() { vec![FileProfile::default()] } else { file.profiles };
    let percentage = percentage_of_nodes_to_score(
        "percentageOfNodesToScore",
        file.percentage_of_nodes_to_score,
    )?
    .unwrap_or(0);
    let mut names = BTreeSet::new();
    let mut built = Vec::new();
    for (i, profile) in profiles.into_iter().enumerate() {
        let profile = build_profile(&format!("profiles[{i}]"), profile, percentage)?;
        if !names.insert(profile.scheduler_name.clone()) {
            return Err(invalid(format!(
                "profiles[{i}].schedulerName: duplicate value {:?}",
                profile.scheduler_name
            )));
        }
        built.push(profile);
    }
    Ok(Config { profiles: built, leader_election })
}

/// A `percentageOfNodesToScore`, checked as upstream does: 0 to 100.
fn percentage_of_nodes_to_score(at: &str, value: Option<i64>) -> Result<Option<u32>, ConfigError> {
    match value {
        None => Ok(None),
        Some(p @ 0..=100) => Ok(Some(p as u32)),
        Some(p) => Err(invalid(format!("{at}: invalid value {p}: not in valid range [0-100]"))),
    }
}

fn syntax(e: serde_yaml_ng::Error) -> ConfigError {
    // serde_yaml_ng puts the location on the same line; keep the message to one line.
    ConfigError::Syntax(e.to_string().replace('\n', " "))
}

// ---- The file as written -------------------------------------------------------------

// The ignored fields are there so that strict decoding accepts them.
#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    api_version: String,
    kind: String,
    #[serde(default)]
    leader_election: Option<FileLeaderElection>,
    #[serde(default)]
    profiles: Vec<FileProfile>,
    percentage_of_nodes_to_score: Option<i64>,
    // Accepted, not acted on.
    parallelism: Option<IgnoredAny>,
    client_connection: Option<IgnoredAny>,
    enable_profiling: Option<IgnoredAny>,
    enable_contention_profiling: Option<IgnoredAny>,
    pod_initial_backoff_seconds: Option<IgnoredAny>,
    pod_max_backoff_seconds: Option<IgnoredAny>,
    extenders: Option<IgnoredAny>,
    delay_cache_until_active: Option<IgnoredAny>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileLeaderElection {
    leader_elect: Option<bool>,
    lease_duration: Option<String>,
    renew_deadline: Option<String>,
    retry_period: Option<String>,
    resource_lock: Option<String>,
    resource_name: Option<String>,
    resource_namespace: Option<String>,
}

#[allow(dead_code)]
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileProfile {
    scheduler_name: Option<String>,
    #[serde(default)]
    plugins: Option<FilePlugins>,
    #[serde(default)]
    plugin_config: Vec<FilePluginConfig>,
    percentage_of_nodes_to_score: Option<i64>,
}

#[allow(dead_code)]
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FilePlugins {
    #[serde(default)]
    multi_point: FilePluginSet,
    #[serde(default)]
    filter: FilePluginSet,
    #[serde(default)]
    score: FilePluginSet,
    // Extension points rkube folds into its filters and scores, or does not have.
    pre_enqueue: Option<IgnoredAny>,
    queue_sort: Option<IgnoredAny>,
    pre_filter: Option<IgnoredAny>,
    post_filter: Option<IgnoredAny>,
    pre_score: Option<IgnoredAny>,
    reserve: Option<IgnoredAny>,
    permit: Option<IgnoredAny>,
    pre_bind: Option<IgnoredAny>,
    bind: Option<IgnoredAny>,
    post_bind: Option<IgnoredAny>,
}

#[derive(Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FilePluginSet {
    #[serde(default)]
    enabled: Vec<FilePlugin>,
    #[serde(default)]
    disabled: Vec<FilePlugin>,
}

#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FilePlugin {
    name: String,
    weight: Option<i32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FilePluginConfig {
    name: String,
    #[serde(default)]
    args: Option<serde_yaml_ng::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FitArgs {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    ignored_resources: Vec<String>,
    #[serde(default)]
    ignored_resource_groups: Vec<String>,
    scoring_strategy: Option<FitScoringStrategy>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FitScoringStrategy {
    #[serde(rename = "type")]
    kind: Option<String>,
    resources: Option<Vec<FitResource>>,
    requested_to_capacity_ratio: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FitResource {
    name: String,
    weight: Option<i64>,
}

// ---- Leader election -----------------------------------------------------------------

fn leader_election(file: FileLeaderElection) -> Result<LeaderElection, ConfigError> {
    let mut out = default_leader_election();
    let duration = |field: &str, text: Option<String>, default: Duration| match text {
        None => Ok(default),
        Some(text) => parse_duration(&text)
            .ok_or_else(|| invalid(format!("leaderElection.{field}: invalid duration {text:?}"))),
    };
    out.lease_duration = duration("leaseDuration", file.lease_duration, out.lease_duration)?;
    out.renew_deadline = duration("renewDeadline", file.renew_deadline, out.renew_deadline)?;
    out.retry_period = duration("retryPeriod", file.retry_period, out.retry_period)?;
    if let Some(v) = file.leader_elect {
        out.leader_elect = v;
    }
    if let Some(v) = file.resource_name {
        out.resource_name = v;
    }
    if let Some(v) = file.resource_namespace {
        out.resource_namespace = v;
    }
    if let Some(lock) = file.resource_lock {
        if lock != "leases" {
            return Err(invalid(format!(
                "leaderElection.resourceLock: unsupported value {lock:?}: supported values: \"leases\""
            )));
        }
    }
    out.validate().map_err(|e| invalid(format!("leaderElection.{e}")))?;
    Ok(out)
}

/// A Go duration (`metav1.Duration`): `15s`, `1m30s`, `1.5h`, `250ms`, `0`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let rest = text.strip_prefix('+').unwrap_or(text);
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    if rest.is_empty() || rest.starts_with('-') {
        return None;
    }
    let mut total = 0f64;
    let mut s = rest;
    while !s.is_empty() {
        let number_len = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
        let (number, after) = s.split_at(number_len);
        if number.is_empty() || number == "." {
            return None;
        }
        let number: f64 = number.parse().ok()?;
        let unit_len = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let seconds = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * seconds;
        s = after;
    }
    Duration::try_from_secs_f64(total).ok()
}

// ---- Plugins -------------------------------------------------------------------------

/// What a plugin is configured with through `pluginConfig`.
#[derive(Clone, Debug, Default)]
pub struct PluginArgs {
    /// `NodeResourcesFit`'s `scoringStrategy.type`.
    pub fit_strategy: ScoringStrategy,
}

/// The plugin registry: the filter called `name`, if rkube has one.
pub fn new_filter(name: &str, args: &PluginArgs) -> Option<Box<dyn FilterPlugin>> {
    Some(match name {
        "NodeUnschedulable" => Box::new(NodeUnschedulable),
        "NodeName" => Box::new(NodeName),
        "TaintToleration" => Box::new(TaintToleration),
        "NodeAffinity" => Box::new(NodeAffinity),
        "NodePorts" => Box::new(NodePorts),
        "NodeResourcesFit" => Box::new(NodeResourcesFit { strategy: args.fit_strategy }),
        "PodTopologySpread" => Box::new(PodTopologySpread),
        "InterPodAffinity" => Box::new(InterPodAffinity),
        "VolumeRestrictions" => Box::new(VolumeRestrictions),
        "VolumeBinding" => Box::new(VolumeBinding),
        _ => return None,
    })
}

/// The plugin registry: the score called `name`, if rkube has one.
pub fn new_score(name: &str, args: &PluginArgs) -> Option<Box<dyn ScorePlugin>> {
    Some(match name {
        "TaintToleration" => Box::new(TaintToleration),
        "NodeAffinity" => Box::new(NodeAffinity),
        "NodeResourcesFit" => Box::new(NodeResourcesFit { strategy: args.fit_strategy }),
        "NodeResourcesBalancedAllocation" => Box::new(NodeResourcesBalancedAllocation),
        "ImageLocality" => Box::new(ImageLocality),
        "PodTopologySpread" => Box::new(PodTopologySpread),
        "InterPodAffinity" => Box::new(InterPodAffinity),
        _ => return None,
    })
}

fn is_registered(name: &str) -> bool {
    let args = PluginArgs::default();
    new_filter(name, &args).is_some() || new_score(name, &args).is_some()
}

/// kube-scheduler's in-tree plugins that rkube does not have (yet), so that enabling one is
/// reported as missing here rather than as a typo.
const UPSTREAM_ONLY: &[&str] = &[
    "PrioritySort",
    "NodeVolumeLimits",
    "VolumeZone",
    "DefaultPreemption",
    "DefaultBinder",
    "DynamicResources",
];

/// The default multi-point set, (name, weight), derived from [`default_profile`]: the
/// filters in order, then the plugins that only score (upstream's order).
fn default_multi_point() -> Vec<FilePlugin> {
    let profile = default_profile();
    let weight = |name: &str| {
        profile.scores.iter().find(|w| w.plugin.name() == name).map(|w| w.weight as i32)
    };
    let mut out: Vec<FilePlugin> = profile
        .filters
        .iter()
        .map(|f| FilePlugin { name: f.name().to_string(), weight: weight(f.name()) })
        .collect();
    for w in &profile.scores {
        if !out.iter().any(|p| p.name == w.plugin.name()) {
            out.push(FilePlugin {
                name: w.plugin.name().to_string(),
                weight: Some(w.weight as i32),
            });
        }
    }
    out
}

/// Upstream's merge of a user's plugin set onto a default one.
fn merge(defaults: &[FilePlugin], custom: &FilePluginSet) -> Vec<FilePlugin> {
    let disabled: BTreeSet<&str> = custom.disabled.iter().map(|p| p.name.as_str()).collect();
    let mut replaced = BTreeSet::new();
    let mut out = Vec::new();
    if !disabled.contains("*") {
        for default in defaults {
            if disabled.contains(default.name.as_str()) {
                continue;
            }
            match custom.enabled.iter().position(|p| p.name == default.name) {
                Some(i) => {
                    replaced.insert(i);
                    out.push(custom.enabled[i].clone());
                }
                None => out.push(default.clone()),
            }
        }
    }
    out.extend(
        custom
            .enabled
            .iter()
            .enumerate()
            .filter(|(i, _)| !replaced.contains(i))
            .map(|(_, p)| p.clone()),
    );
    out
}

/// Which plugins run at one extension point, in order, with their configured weights:
/// upstream's multi-point expansion.
fn expand(
    at: &str,
    point: &FilePluginSet,
    multi_point: &[FilePlugin],
    implements: impl Fn(&str) -> bool,
) -> Result<Vec<FilePlugin>, ConfigError> {
    let mut specific: Vec<&FilePlugin> = Vec::new();
    for (i, p) in point.enabled.iter().enumerate() {
        if !implements(&p.name) {
            return Err(invalid(format!(
                "{at}.enabled[{i}]: plugin {:?} does not extend the {} extension point",
                p.name,
                at.rsplit('.').next().unwrap_or(at)
            )));
        }
        if specific.iter().any(|s| s.name == p.name) {
            return Err(invalid(format!("{at}.enabled[{i}]: plugin {:?} is listed twice", p.name)));
        }
        specific.push(p);
    }
    let disabled: BTreeSet<&str> = point.disabled.iter().map(|p| p.name.as_str()).collect();
    if disabled.contains("*") {
        return Ok(specific.into_iter().cloned().collect());
    }
    let mut overridden: BTreeSet<&str> = BTreeSet::new();
    let mut from_multi_point: Vec<&FilePlugin> = Vec::new();
    for p in multi_point {
        if !implements(&p.name) || disabled.contains(p.name.as_str()) {
            continue;
        }
        if specific.iter().any(|s| s.name == p.name) {
            overridden.insert(&p.name);
            continue;
        }
        if from_multi_point.iter().any(|m| m.name == p.name) {
            return Err(invalid(format!(
                "plugins.multiPoint: plugin {:?} is enabled twice",
                p.name
            )));
        }
        from_multi_point.push(p);
    }
    // Explicit re-configurations first, then the multi-point set, then the rest.
    let mut out: Vec<FilePlugin> = specific
        .iter()
        .filter(|s| overridden.contains(s.name.as_str()))
        .map(|s| (*s).clone())
        .collect();
    out.extend(from_multi_point.into_iter().cloned());
    out.extend(
        specific.iter().filter(|s| !overridden.contains(s.name.as_str())).map(|s| (*s).clone()),
    );
    Ok(out)
}

/// Plugins every rkube profile runs outside the filter and score lists (a gated pod is not
/// queued at all): naming one in a configuration is accepted and changes nothing.
const ALWAYS_ON: &[&str] = &["SchedulingGates"];

fn check_names(at: &str, set: &FilePluginSet) -> Result<(), ConfigError> {
    for (i, p) in set.enabled.iter().enumerate() {
        if ALWAYS_ON.contains(&p.name.as_str()) {
            continue;
        }
        if is_registered(&p.name) {
            if let Some(w) = p.weight {
                if w < 0 {
                    return Err(invalid(format!(
                        "{at}.enabled[{i}].weight: must not be negative, got {w}"
                    )));
                }
            }
            continue;
        }
        if UPSTREAM_ONLY.contains(&p.name.as_str()) {
            return Err(invalid(format!(
                "{at}.enabled[{i}]: plugin {:?} is not available in rkube",
                p.name
            )));
        }
        return Err(invalid(format!("{at}.enabled[{i}]: unknown plugin {:?}", p.name)));
    }
    Ok(())
}

fn plugin_args(at: &str, configs: Vec<FilePluginConfig>) -> Result<PluginArgs, ConfigError> {
    let mut args = PluginArgs::default();
    let mut seen = BTreeSet::new();
    for (i, config) in configs.into_iter().enumerate() {
        let at = format!("{at}.pluginConfig[{i}]");
        if !seen.insert(config.name.clone()) {
            return Err(invalid(format!("{at}.name: duplicate value {:?}", config.name)));
        }
        // Other plugins' arguments are accepted and not acted on.
        if config.name != "NodeResourcesFit" {
            continue;
        }
        let Some(value) = config.args else { continue };
        let fit: FitArgs = serde_yaml_ng::from_value(value)
            .map_err(|e| invalid(format!("{at}.args: {}", e.to_string().replace('\n', " "))))?;
        if let Some(v) = fit.api_version.as_deref().filter(|v| *v != API_VERSION) {
            return Err(invalid(format!(
                "{at}.args.apiVersion: expected {API_VERSION:?}, got {v:?}"
            )));
        }
        if let Some(k) = fit.kind.as_deref().filter(|k| *k != "NodeResourcesFitArgs") {
            return Err(invalid(format!(
                "{at}.args.kind: expected \"NodeResourcesFitArgs\", got {k:?}"
            )));
        }
        if !fit.ignored_resources.is_empty() || !fit.ignored_resource_groups.is_empty() {
            return Err(invalid(format!(
                "{at}.args: ignoredResources and ignoredResourceGroups are not supported by rkube"
            )));
        }
        let Some(strategy) = fit.scoring_strategy else { continue };
        if strategy.requested_to_capacity_ratio.is_some() {
            return Err(invalid(format!(
                "{at}.args.scoringStrategy.requestedToCapacityRatio: not supported by rkube"
            )));
        }
        if let Some(resources) = &strategy.resources {
            // rkube scores cpu and memory at weight 1 each, upstream's default.
            let default = resources.len() == 2
                && resources
                    .iter()
                    .all(|r| (r.name == "cpu" || r.name == "memory") && r.weight.unwrap_or(1) == 1)
                && resources[0].name != resources[1].name;
            if !default {
                return Err(invalid(format!(
                    "{at}.args.scoringStrategy.resources: only cpu and memory at weight 1 are supported by rkube"
                )));
            }
        }
        args.fit_strategy = match strategy.kind.as_deref() {
            None | Some("LeastAllocated") => ScoringStrategy::LeastAllocated,
            Some("MostAllocated") => ScoringStrategy::MostAllocated,
            Some("RequestedToCapacityRatio") => {
                return Err(invalid(format!(
                    "{at}.args.scoringStrategy.type: \"RequestedToCapacityRatio\" is not supported by rkube"
                )))
            }
            Some(other) => {
                return Err(invalid(format!(
                    "{at}.args.scoringStrategy.type: unsupported value {other:?}: supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\""
                )))
            }
        };
    }
    Ok(args)
}

/// One profile; `percentage` is the top-level `percentageOfNodesToScore`, for a profile that
/// sets none.
fn build_profile(at: &str, file: FileProfile, percentage: u32) -> Result<Profile, ConfigError> {
    let scheduler_name = file.scheduler_name.unwrap_or_else(|| DEFAULT_SCHEDULER_NAME.to_string());
    if scheduler_name.is_empty() {
        return Err(invalid(format!("{at}.schedulerName: must not be empty")));
    }
    let plugins = file.plugins.unwrap_or_default();
    for (point, set) in [
        ("multiPoint", &plugins.multi_point),
        ("filter", &plugins.filter),
        ("score", &plugins.score),
    ] {
        check_names(&format!("{at}.plugins.{point}"), set)?;
    }
    let percentage_of_nodes_to_score = percentage_of_nodes_to_score(
        &format!("{at}.percentageOfNodesToScore"),
        file.percentage_of_nodes_to_score,
    )?
    .unwrap_or(percentage);
    let args = plugin_args(at, file.plugin_config)?;
    let multi_point = merge(&default_multi_point(), &plugins.multi_point);
    let none = PluginArgs::default();
    let filter_names =
        expand(&format!("{at}.plugins.filter"), &plugins.filter, &multi_point, |n| {
            new_filter(n, &none).is_some()
        })?;
    let score_names = expand(&format!("{at}.plugins.score"), &plugins.score, &multi_point, |n| {
        new_score(n, &none).is_some()
    })?;
    let filters = filter_names
        .iter()
        .map(|p| new_filter(&p.name, &args).expect("checked against the registry"))
        .collect();
    // A score's own weight wins over its multi-point one; no weight (or 0) means 1.
    let mut weights: HashMap<&str, i64> = HashMap::new();
    for p in plugins.score.enabled.iter().chain(multi_point.iter()) {
        weights.entry(&p.name).or_insert(i64::from(p.weight.unwrap_or(0)).max(1));
    }
    let scores = score_names
        .iter()
        .map(|p| Weighted {
            plugin: new_score(&p.name, &args).expect("checked against the registry"),
            weight: weights.get(p.name.as_str()).copied().unwrap_or(1),
        })
        .collect();
    Ok(Profile { scheduler_name, filters, scores, percentage_of_nodes_to_score })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filters(p: &Profile) -> Vec<&'static str> {
        p.filters.iter().map(|f| f.name()).collect()
    }

    fn scores(p: &Profile) -> Vec<(&'static str, i64)> {
        p.scores.iter().map(|w| (w.plugin.name(), w.weight)).collect()
    }

    fn one(text: &str) -> Profile {
        let mut config = from_str(text).unwrap();
        assert_eq!(config.profiles.len(), 1);
        config.profiles.remove(0)
    }

    fn err(text: &str) -> String {
        let e = from_str(text).unwrap_err().to_string();
        assert!(!e.contains('\n'), "one line: {e}");
        e
    }

    const HEAD: &str =
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

    #[test]
    fn minimal_file_gives_the_default_profile_and_leader_election() {
        let config = from_str(HEAD).unwrap();
        let def = default_profile();
        assert_eq!(config.profiles.len(), 1);
        let p = &config.profiles[0];
        assert_eq!(p.scheduler_name, "default-scheduler");
        assert_eq!(filters(p), filters(&def));
        assert_eq!(scores(p), scores(&def));
        assert_eq!(config.leader_election, default_leader_election());
        let le = &config.leader_election;
        assert!(le.leader_elect);
        assert_eq!(
            (le.lease_duration, le.renew_deadline, le.retry_period),
            (Duration::from_secs(15), Duration::from_secs(10), Duration::from_secs(2))
        );
        assert_eq!(
            (le.resource_name.as_str(), le.resource_namespace.as_str()),
            ("kube-scheduler", "kube-system")
        );
    }

    #[test]
    fn json_is_read_too() {
        let config = from_str(
            r#"{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "json-scheduler"}]}"#,
        )
        .unwrap();
        assert_eq!(config.profiles[0].scheduler_name, "json-scheduler");
    }

    #[test]
    fn several_profiles_with_their_names() {
        let config = from_str(&format!(
            "{HEAD}profiles:\n- schedulerName: default-scheduler\n- schedulerName: no-scoring\n  plugins:\n    score:\n      disabled:\n      - name: '*'\n"
        ))
        .unwrap();
        let names: Vec<_> = config.profiles.iter().map(|p| p.scheduler_name.as_str()).collect();
        assert_eq!(names, ["default-scheduler", "no-scoring"]);
        assert_eq!(scores(&config.profiles[0]).len(), 7);
        assert!(config.profiles[1].scores.is_empty());
        assert_eq!(filters(&config.profiles[1]), filters(&default_profile()));
    }

    #[test]
    fn duplicate_or_missing_scheduler_names_are_rejected() {
        let e = err(&format!("{HEAD}profiles:\n- schedulerName: a\n- schedulerName: a\n"));
        assert!(e.contains("profiles[1].schedulerName: duplicate value \"a\""), "{e}");
        // Two unnamed profiles both default to default-scheduler.
        let e = err(&format!("{HEAD}profiles:\n- {{}}\n- {{}}\n"));
        assert!(e.contains("duplicate value \"default-scheduler\""), "{e}");
    }

    #[test]
    fn score_weight_is_overridden_in_place() {
        let p = one(&format!(
            "{HEAD}profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: ImageLocality\n        weight: 5\n"
        ));
        assert_eq!(
            scores(&p),
            [
                ("TaintToleration", 3),
                ("NodeAffinity", 2),
                ("NodeResourcesFit", 1),
                ("PodTopologySpread", 2),
                ("InterPodAffinity", 2),
                ("NodeResourcesBalancedAllocation", 1),
                ("ImageLocality", 5)
            ]
        );
        // Through the score point: the explicitly configured plugin moves first.
        let p = one(&format!(
            "{HEAD}profiles:\n- plugins:\n    score:\n      enabled:\n      - name: NodeResourcesBalancedAllocation\n        weight: 7\n"
        ));
        assert_eq!(
            scores(&p),
            [
                ("NodeResourcesBalancedAllocation", 7),
                ("TaintToleration", 3),
                ("NodeAffinity", 2),
                ("NodeResourcesFit", 1),
                ("PodTopologySpread", 2),
                ("InterPodAffinity", 2),
                ("ImageLocality", 1)
            ]
        );
    }

    #[test]
    fn disabling_plugins() {
        let p = one(&format!(
            "{HEAD}profiles:\n- plugins:\n    score:\n      disabled:\n      - name: ImageLocality\n      - name: TaintToleration\n    filter:\n      disabled:\n      - name: NodePorts\n"
        ));
        assert_eq!(
            scores(&p),
            [
                ("NodeAffinity", 2),
                ("NodeResourcesFit", 1),
                ("PodTopologySpread", 2),
                ("InterPodAffinity", 2),
                ("NodeResourcesBalancedAllocation", 1)
            ]
        );
        assert_eq!(
            filters(&p),
            [
                "NodeUnschedulable",
                "NodeName",
                "TaintToleration",
                "NodeAffinity",
                "NodeResourcesFit",
                "VolumeRestrictions",
                "VolumeBinding",
                "PodTopologySpread",
                "InterPodAffinity"
            ]
        );
        // Disabled through multiPoint: gone from every point.
        let p = one(&format!(
            "{HEAD}profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: TaintToleration\n"
        ));
        assert!(!filters(&p).contains(&"TaintToleration"));
        assert!(!scores(&p).iter().any(|(n, _)| *n == "TaintToleration"));
        // Disabling a plugin rkube does not have is fine (upstream configs do it).
        one(&format!(
            "{HEAD}profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: VolumeZone\n"
        ));
    }

    #[test]
    fn disable_all_then_enable_in_order() {
        let p = one(&format!(
            "{HEAD}profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: NodeResourcesFit\n        weight: 2\n      - name: NodeName\n"
        ));
        assert_eq!(filters(&p), ["NodeResourcesFit", "NodeName"]);
        assert_eq!(scores(&p), [("NodeResourcesFit", 2)]);

        let p = one(&format!(
            "{HEAD}profiles:\n- plugins:\n    filter:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: NodeName\n    score:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: ImageLocality\n        weight: 4\n"
        ));
        assert_eq!(filters(&p), ["NodeName"]);
        assert_eq!(scores(&p), [("ImageLocality", 4)]);
    }

    #[test]
    fn most_allocated_strategy() {
        let p = one(&format!(
            "{HEAD}profiles:\n- schedulerName: bin-packing\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n        resources:\n        - name: cpu\n          weight: 1\n        - name: memory\n          weight: 1\n"
        ));
        assert_eq!(p.scheduler_name, "bin-packing");
        // The configured plugin scores as MostAllocated: fuller node wins.
        use crate::plugins::testing::{pod_requesting, small_node};
        let pod = pod_requesting("p", serde_json::json!({"cpu": "100m", "memory": "100Mi"}));
        let busy = small_node(
            "busy",
            vec![pod_requesting("q", serde_json::json!({"cpu": "1", "memory": "2Gi"}))],
        );
        let idle = small_node("idle", vec![]);
        let fit = p.scores.iter().find(|w| w.plugin.name() == "NodeResourcesFit").unwrap();
        assert!(fit.plugin.score(&pod, &busy) > fit.plugin.score(&pod, &idle));
        let least = default_profile();
        let fit = least.scores.iter().find(|w| w.plugin.name() == "NodeResourcesFit").unwrap();
        assert!(fit.plugin.score(&pod, &busy) < fit.plugin.score(&pod, &idle));
    }

    #[test]
    fn bad_scoring_strategy() {
        let e = err(&format!(
            "{HEAD}profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: Packed\n"
        ));
        assert!(e.contains("profiles[0].pluginConfig[0].args.scoringStrategy.type: unsupported value \"Packed\""), "{e}");
        let e = err(&format!(
            "{HEAD}profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: RequestedToCapacityRatio\n"
        ));
        assert!(e.contains("not supported by rkube"), "{e}");
        let e = err(&format!(
            "{HEAD}profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringstrategy: {{}}\n"
        ));
        assert!(e.contains("unknown field `scoringstrategy`"), "{e}");
    }

    #[test]
    fn unknown_plugins_are_named() {
        let e = err(&format!(
            "{HEAD}profiles:\n- plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n      - name: NodeResourceFit\n"
        ));
        assert!(
            e.contains("profiles[0].plugins.score.enabled[1]: unknown plugin \"NodeResourceFit\""),
            "{e}"
        );
        let e = err(&format!(
            "{HEAD}profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: VolumeZone\n"
        ));
        assert!(e.contains("plugin \"VolumeZone\" is not available in rkube"), "{e}");
        let e = err(&format!(
            "{HEAD}profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: ImageLocality\n"
        ));
        assert!(e.contains("does not extend the filter extension point"), "{e}");
    }

    #[test]
    fn wrong_version_kind_and_syntax() {
        let e = err(
            "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
        );
        assert!(
            e.contains("apiVersion \"kubescheduler.config.k8s.io/v1beta3\" is not supported"),
            "{e}"
        );
        let e = err("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeletConfiguration\n");
        assert!(e.contains("kind \"KubeletConfiguration\" is not supported"), "{e}");
        let e = err("kind: KubeSchedulerConfiguration\n");
        assert!(e.contains("apiVersion is missing"), "{e}");
        let e = err(&format!("{HEAD}profiles: [\n"));
        assert!(e.starts_with("invalid scheduler configuration:"), "{e}");
        let e = err(&format!("{HEAD}profile: []\n"));
        assert!(e.contains("unknown field `profile`"), "{e}");
        let e = err("- just a list\n");
        assert!(e.contains("expected a KubeSchedulerConfiguration"), "{e}");
    }

    #[test]
    fn ignored_upstream_fields_are_accepted() {
        one(&format!(
            "{HEAD}parallelism: 16\nclientConnection:\n  kubeconfig: /etc/kubernetes/scheduler.conf\n  qps: 50\npercentageOfNodesToScore: 0\npodInitialBackoffSeconds: 1\npodMaxBackoffSeconds: 10\nenableProfiling: true\nprofiles:\n- schedulerName: default-scheduler\n  percentageOfNodesToScore: 50\n  plugins:\n    queueSort:\n      enabled:\n      - name: PrioritySort\n  pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n"
        ));
    }

    #[test]
    fn percentage_of_nodes_to_score_per_profile_or_from_the_top() {
        let config = from_str(&format!(
            "{HEAD}percentageOfNodesToScore: 30\nprofiles:\n- schedulerName: a\n- schedulerName: b\n  percentageOfNodesToScore: 70\n- schedulerName: c\n  percentageOfNodesToScore: 0\n"
        ))
        .unwrap();
        let got: Vec<u32> =
            config.profiles.iter().map(|p| p.percentage_of_nodes_to_score).collect();
        assert_eq!(got, [30, 70, 0]);
        // Unset everywhere: 0, upstream's adaptive default.
        assert_eq!(from_str(HEAD).unwrap().profiles[0].percentage_of_nodes_to_score, 0);
        let e = err(&format!("{HEAD}percentageOfNodesToScore: 101\n"));
        assert!(
            e.contains("percentageOfNodesToScore: invalid value 101: not in valid range [0-100]"),
            "{e}"
        );
        let e = err(&format!("{HEAD}profiles:\n- percentageOfNodesToScore: -1\n"));
        assert!(e.contains("profiles[0].percentageOfNodesToScore: invalid value -1"), "{e}");
        let e = err(&format!("{HEAD}percentageOfNodesToScore: half\n"));
        assert!(e.starts_with("invalid scheduler configuration:"), "{e}");
    }

    #[test]
    fn leader_election_fields() {
        let config = from_str(&format!(
            "{HEAD}leaderElection:\n  leaderElect: true\n  leaseDuration: 30s\n  renewDeadline: 20s\n  retryPeriod: 500ms\n  resourceLock: leases\n  resourceName: my-scheduler\n  resourceNamespace: scheduling\n"
        ))
        .unwrap();
        assert_eq!(
            config.leader_election,
            LeaderElection {
                leader_elect: true,
                lease_duration: Duration::from_secs(30),
                renew_deadline: Duration::from_secs(20),
                retry_period: Duration::from_millis(500),
                resource_name: "my-scheduler".into(),
                resource_namespace: "scheduling".into(),
            }
        );
        let off = from_str(&format!("{HEAD}leaderElection:\n  leaderElect: false\n")).unwrap();
        assert!(!off.leader_election.leader_elect);
    }

    #[test]
    fn leader_election_is_checked() {
        let e = err(&format!("{HEAD}leaderElection:\n  leaseDuration: 10s\n"));
        assert!(e.contains("leaseDuration: must be greater than renewDeadline"), "{e}");
        let e = err(&format!("{HEAD}leaderElection:\n  retryPeriod: 9s\n"));
        assert!(e.contains("renewDeadline: must be greater than retryPeriod*1.2"), "{e}");
        let e = err(&format!("{HEAD}leaderElection:\n  retryPeriod: 2 seconds\n"));
        assert!(e.contains("leaderElection.retryPeriod: invalid duration \"2 seconds\""), "{e}");
        let e = err(&format!("{HEAD}leaderElection:\n  resourceLock: endpoints\n"));
        assert!(e.contains("resourceLock: unsupported value \"endpoints\""), "{e}");
        // Not checked when not electing.
        from_str(&format!("{HEAD}leaderElection:\n  leaderElect: false\n  leaseDuration: 1s\n"))
            .unwrap();
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("15s"), Some(Duration::from_secs(15)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("0"), Some(Duration::ZERO));
        for bad in ["", "15", "s", "-1s", "1d", "1.2.3s"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn load_reports_the_path() {
        let dir = std::env::temp_dir().join(format!("rkube-sched-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.yaml");
        std::fs::write(&path, HEAD).unwrap();
        assert_eq!(load(&path).unwrap().profiles.len(), 1);
        let missing = dir.join("missing.yaml");
        let e = load(&missing).unwrap_err().to_string();
        assert!(e.contains("missing.yaml"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
