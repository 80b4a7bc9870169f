//! A Job's `podFailurePolicy` (what a failed pod means: fail the Job, fail its index, ignore
//! the failure or count it) and `successPolicy` (which succeeded indexes make an Indexed Job
//! a success before all of them did), matched as upstream's job controller does.

use k8s_openapi::api::batch::v1::{
    PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern, SuccessPolicy,
};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodCondition};

use super::indexes::Intervals;

/// What a matching pod failure policy rule says to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    FailJob,
    FailIndex,
    Ignore,
    Count,
}

/// The outcome of matching a failed pod against a pod failure policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    /// The Job's failure message, when a `FailJob` rule matched.
    pub fail_job: Option<String>,
    /// Whether the failure counts towards `backoffLimit` (and `backoffLimitPerIndex`): not
    /// when an `Ignore` rule matched.
    pub counts: bool,
    /// The action of the rule that matched, if one did.
    pub action: Option<Action>,
}

impl Matched {
    const NONE: Matched = Matched { fail_job: None, counts: true, action: None };
}

/// Matches a failed pod against the rules in order; the first rule that matches decides. No
/// policy, or no matching rule, counts the failure.
pub fn match_pod_failure_policy(policy: Option<&PodFailurePolicy>, pod: &Pod) -> Matched {
    let Some(policy) = policy else { return Matched::NONE };
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    for (index, rule) in policy.rules.iter().enumerate() {
        let message = if let Some(requirement) = &rule.on_exit_codes {
            let Some(status) = match_on_exit_codes(pod, requirement) else { continue };
            let code = status
                .state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .map_or(0, |t| t.exit_code);
            format!(
                "Container {} for pod {namespace}/{name} failed with exit code {code} matching {} rule at index {index}",
                status.name, rule.action
            )
        } else if let Some(patterns) = &rule.on_pod_conditions {
            let Some(condition) = match_on_pod_conditions(pod, patterns) else { continue };
            format!(
                "Pod {namespace}/{name} has condition {} matching {} rule at index {index}",
                condition.type_, rule.action
            )
        } else {
            continue;
        };
        match rule.action.as_str() {
            "Ignore" => {
                return Matched { fail_job: None, counts: false, action: Some(Action::Ignore) }
            }
            "FailIndex" => {
                return Matched { fail_job: None, counts: true, action: Some(Action::FailIndex) }
            }
            "Count" => {
                return Matched { fail_job: None, counts: true, action: Some(Action::Count) }
            }
            "FailJob" => {
                return Matched {
                    fail_job: Some(message),
                    counts: true,
                    action: Some(Action::FailJob),
                }
            }
            // An action this version does not know: the rule is passed over, as upstream's
            // switch without a matching case falls through to the next rule.
            _ => {}
        }
    }
    Matched::NONE
}

/// The first terminated container (app containers before init containers) with a non-zero
/// exit code that the requirement matches.
fn match_on_exit_codes<'a>(
    pod: &'a Pod,
    requirement: &PodFailurePolicyOnExitCodesRequirement,
) -> Option<&'a ContainerStatus> {
    let status = pod.status.as_ref()?;
    let find = |list: Option<&'a Vec<ContainerStatus>>| {
        list.into_iter().flatten().find(|c| {
            let Some(terminated) = c.state.as_ref().and_then(|s| s.terminated.as_ref()) else {
                // Still terminating: there is no exit code to match yet.
                return false;
            };
            let named = requirement.container_name.as_deref().is_none_or(|n| n == c.name);
            named
                && terminated.exit_code != 0
                && exit_code_matches(terminated.exit_code, requirement)
        })
    };
    find(status.container_statuses.as_ref())
        .or_else(|| find(status.init_container_statuses.as_ref()))
}

fn exit_code_matches(code: i32, requirement: &PodFailurePolicyOnExitCodesRequirement) -> bool {
    match requirement.operator.as_str() {
        "In" => requirement.values.contains(&code),
        "NotIn" => !requirement.values.contains(&code),
        _ => false,
    }
}

fn match_on_pod_conditions<'a>(
    pod: &'a Pod,
    patterns: &[PodFailurePolicyOnPodConditionsPattern],
) -> Option<&'a PodCondition> {
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    conditions.iter().find(|c| patterns.iter().any(|p| p.type_ == c.type_ && p.status == c.status))
}

/// The message of the first success policy rule the succeeded indexes meet (`Matched rules
/// at index <i>`), if any.
pub fn match_success_policy(
    policy: Option<&SuccessPolicy>,
    completions: i32,
    succeeded: &Intervals,
) -> Option<String> {
    let policy = policy?;
    if succeeded.is_empty() {
        return None;
    }
    for (index, rule) in policy.rules.iter().enumerate() {
        let met = if let Some(text) = &rule.succeeded_indexes {
            let required = Intervals::parse(text, completions);
            // A rule whose indexes cannot be read never matches.
            if required.is_empty() {
                continue;
            }
            let shared = required.overlap(succeeded);
            shared == required.total() || rule.succeeded_count.is_some_and(|c| shared >= c)
        } else if let Some(count) = rule.succeeded_count {
            succeeded.total() >= count
        } else {
            false
        };
        if met {
            return Some(format!("Matched rules at index {index}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::{PodFailurePolicyRule, SuccessPolicyRule};
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn terminated(name: &str, code: i32) -> ContainerStatus {
        ContainerStatus {
            name: name.into(),
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: code,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn failed_pod(containers: Vec<ContainerStatus>, conditions: &[(&str, &str)]) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some("job-abc".into()),
                ..Default::default()
            },
            spec: None,
            status: Some(PodStatus {
                phase: Some("Failed".into()),
                container_statuses: Some(containers),
                conditions: Some(
                    conditions
                        .iter()
                        .map(|(t, s)| PodCondition {
                            type_: t.to_string(),
                            status: s.to_string(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
        }
    }

    fn exit_rule(
        action: &str,
        container: Option<&str>,
        op: &str,
        values: &[i32],
    ) -> PodFailurePolicyRule {
        PodFailurePolicyRule {
            action: action.into(),
            on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                container_name: container.map(str::to_string),
                operator: op.into(),
                values: values.to_vec(),
            }),
            on_pod_conditions: None,
        }
    }

    fn condition_rule(action: &str, type_: &str) -> PodFailurePolicyRule {
        PodFailurePolicyRule {
            action: action.into(),
            on_exit_codes: None,
            on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
                type_: type_.into(),
                status: "True".into(),
            }]),
        }
    }

    #[test]
    fn pod_failure_policy_rules_match_in_order() {
        let pod = failed_pod(vec![terminated("main", 42)], &[("DisruptionTarget", "True")]);
        assert_eq!(match_pod_failure_policy(None, &pod), Matched::NONE);
        let policy = PodFailurePolicy {
            rules: vec![
                condition_rule("Ignore", "ConfigIssue"),
                exit_rule("FailJob", Some("main"), "In", &[42]),
                condition_rule("Ignore", "DisruptionTarget"),
            ],
        };
        let m = match_pod_failure_policy(Some(&policy), &pod);
        assert_eq!(m.action, Some(Action::FailJob));
        assert_eq!(
            m.fail_job.as_deref(),
            Some("Container main for pod ns/job-abc failed with exit code 42 matching FailJob rule at index 1")
        );
        // Another container name, or a listed code with NotIn: the next rule decides.
        let policy = PodFailurePolicy {
            rules: vec![
                exit_rule("FailJob", Some("sidecar"), "In", &[42]),
                exit_rule("FailJob", None, "NotIn", &[42]),
                condition_rule("Ignore", "DisruptionTarget"),
            ],
        };
        let m = match_pod_failure_policy(Some(&policy), &pod);
        assert_eq!((m.action, m.counts, m.fail_job), (Some(Action::Ignore), false, None));
        let policy =
            PodFailurePolicy { rules: vec![condition_rule("FailJob", "DisruptionTarget")] };
        assert_eq!(
            match_pod_failure_policy(Some(&policy), &pod).fail_job.as_deref(),
            Some("Pod ns/job-abc has condition DisruptionTarget matching FailJob rule at index 0")
        );
        // Exit code 0 never matches, not even NotIn.
        let ok = failed_pod(vec![terminated("main", 0)], &[]);
        let policy = PodFailurePolicy { rules: vec![exit_rule("Count", None, "NotIn", &[1])] };
        assert_eq!(match_pod_failure_policy(Some(&policy), &ok), Matched::NONE);
        let policy = PodFailurePolicy { rules: vec![exit_rule("FailIndex", None, "In", &[42])] };
        let m = match_pod_failure_policy(Some(&policy), &pod);
        assert_eq!((m.action, m.counts), (Some(Action::FailIndex), true));
        let policy = PodFailurePolicy { rules: vec![exit_rule("Count", None, "In", &[42])] };
        assert_eq!(match_pod_failure_policy(Some(&policy), &pod).action, Some(Action::Count));
    }

    #[test]
    fn success_policies_need_their_indexes_or_counts() {
        let rule = |indexes: Option<&str>, count: Option<i32>| SuccessPolicyRule {
            succeeded_indexes: indexes.map(str::to_string),
            succeeded_count: count,
        };
        let policy = SuccessPolicy { rules: vec![rule(Some("0,2-3"), None), rule(None, Some(3))] };
        let done = |s: &str| match_success_policy(Some(&policy), 10, &Intervals::parse(s, 10));
        assert_eq!(done(""), None);
        assert_eq!(done("0,2"), None);
        assert_eq!(done("0-3").as_deref(), Some("Matched rules at index 0"));
        assert_eq!(done("5-7").as_deref(), Some("Matched rules at index 1"));
        let policy = SuccessPolicy { rules: vec![rule(Some("0-4"), Some(2))] };
        let done = |s: &str| match_success_policy(Some(&policy), 10, &Intervals::parse(s, 10));
        assert_eq!(done("4,7").as_deref(), None);
        assert_eq!(done("3,4,7").as_deref(), Some("Matched rules at index 0"));
        assert_eq!(match_success_policy(None, 10, &Intervals::parse("0-9", 10)), None);
    }
}
