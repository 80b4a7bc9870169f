//! Defaults of `batch/v1` (`pkg/apis/batch/v1/defaults.go` upstream): Jobs, and the nested
//! defaults of a CronJob's job template.

use serde_json::{json, Value};

use super::core::pod_template;
use super::{default, default_unset, field};

/// A Job's defaults.
pub fn job(obj: &mut Value) {
    field(obj, "spec").into_iter().for_each(job_spec);
    job_labels(obj);
}

/// A CronJob's defaults.
pub fn cron_job(obj: &mut Value) {
    if let Some(spec) = field(obj, "spec") {
        default_unset(spec, "concurrencyPolicy", json!("Allow"));
        default(spec, "suspend", json!(false));
        default(spec, "successfulJobsHistoryLimit", json!(3));
        default(spec, "failedJobsHistoryLimit", json!(1));
        // Upstream's Job defaults are for Jobs only: a template's job spec gets just
        // its nested defaults (pod failure policy, pod template), so `kubectl get
        // cronjob` shows no completions or backoffLimit there.
        if let Some(job) = field(spec, "jobTemplate").and_then(|t| field(t, "spec")) {
            field(job, "podFailurePolicy").into_iter().for_each(pod_failure_policy);
            field(job, "template").into_iter().for_each(pod_template);
        }
    }
}

fn job_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    if spec.get("completions").is_none_or(Value::is_null)
        && spec.get("parallelism").is_none_or(Value::is_null)
    {
        spec["completions"] = json!(1);
        spec["parallelism"] = json!(1);
    }
    default(spec, "parallelism", json!(1));
    // With a per-index limit, the global one is effectively unlimited.
    let per_index = spec.get("backoffLimitPerIndex").is_some_and(|v| !v.is_null());
    default(spec, "backoffLimit", json!(if per_index { i32::MAX } else { 6 }));
    default(spec, "completionMode", json!("NonIndexed"));
    default(spec, "suspend", json!(false));
    // JobPodReplacementPolicy is on in 1.33: with a pod failure policy, pods are replaced only
    // once they have failed.
    let failure_policy = spec.get("podFailurePolicy").is_some_and(|v| !v.is_null());
    default(
        spec,
        "podReplacementPolicy",
        json!(if failure_policy { "Failed" } else { "TerminatingOrFailed" }),
    );
    default(spec, "manualSelector", json!(false));
    field(spec, "podFailurePolicy").into_iter().for_each(pod_failure_policy);
    field(spec, "template").into_iter().for_each(pod_template);
}

/// A pod condition pattern of a pod failure policy rule matches a `True` condition unless it
/// says otherwise.
fn pod_failure_policy(policy: &mut Value) {
    let Some(rules) = policy.get_mut("rules").and_then(Value::as_array_mut) else { return };
    for rule in rules {
        let patterns = rule.get_mut("onPodConditions").and_then(Value::as_array_mut);
        for pattern in patterns.into_iter().flatten().filter(|p| p.is_object()) {
            default_unset(pattern, "status", json!("True"));
        }
    }
}

/// A Job without labels takes its pod template's.
fn job_labels(job: &mut Value) {
    let labels = &job["spec"]["template"]["metadata"]["labels"];
    if labels.as_object().is_none_or(|l| l.is_empty()) || !job["metadata"].is_object() {
        return;
    }
    if job["metadata"]["labels"].as_object().is_none_or(|l| l.is_empty()) {
        job["metadata"]["labels"] = labels.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::defaulted;
    use super::*;

    #[test]
    fn a_job_gets_every_default() {
        let job = defaulted(
            "batch",
            "jobs",
            json!({"metadata": {"name": "pi"}, "spec": {"template": {"spec": {}}}}),
        );
        let mut spec = job["spec"].clone();
        spec.as_object_mut().unwrap().remove("template");
        assert_eq!(
            spec,
            json!({"completions": 1, "parallelism": 1, "backoffLimit": 6,
                "completionMode": "NonIndexed", "suspend": false,
                "podReplacementPolicy": "TerminatingOrFailed", "manualSelector": false})
        );
        // No labels to copy: none added.
        assert_eq!(job["metadata"], json!({"name": "pi"}));
    }

    #[test]
    fn job_defaults_follow_the_fields_they_depend_on() {
        let job = defaulted(
            "batch",
            "jobs",
            json!({"metadata": {}, "spec": {"parallelism": 3, "backoffLimitPerIndex": 1,
                "completionMode": "Indexed", "completions": 5,
                "podFailurePolicy": {"rules": [
                    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"},
                        {"type": "Ready", "status": "False"}]},
                    {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}}}),
        );
        let spec = &job["spec"];
        assert_eq!(spec["completions"], 5);
        assert_eq!(spec["parallelism"], 3);
        assert_eq!(spec["backoffLimit"], 2147483647);
        assert_eq!(spec["podReplacementPolicy"], "Failed");
        assert_eq!(
            spec["podFailurePolicy"]["rules"],
            json!([
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"},
                    {"type": "Ready", "status": "False"}]},
                {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}])
        );
        // Parallelism alone leaves completions unset.
        let job = defaulted("batch", "jobs", json!({"spec": {"parallelism": 2}}));
        assert!(job["spec"].get("completions").is_none(), "{job}");
        // What the client set stays.
        let job = defaulted(
            "batch",
            "jobs",
            json!({"spec": {"podReplacementPolicy": "TerminatingOrFailed", "podFailurePolicy": {"rules": []}}}),
        );
        assert_eq!(job["spec"]["podReplacementPolicy"], "TerminatingOrFailed");
    }

    #[test]
    fn a_job_without_labels_takes_the_templates() {
        let template = json!({"metadata": {"labels": {"app": "pi"}}, "spec": {}});
        let job = defaulted(
            "batch",
            "jobs",
            json!({"metadata": {"name": "pi"}, "spec": {"template": template}}),
        );
        assert_eq!(job["metadata"]["labels"], json!({"app": "pi"}));
        let job = defaulted(
            "batch",
            "jobs",
            json!({"metadata": {"labels": {"team": "a"}}, "spec": {"template": template}}),
        );
        assert_eq!(job["metadata"]["labels"], json!({"team": "a"}));
        let job = defaulted(
            "batch",
            "jobs",
            json!({"metadata": {}, "spec": {"template": {"metadata": {"labels": {}}}}}),
        );
        assert_eq!(job["metadata"], json!({}));
    }

    #[test]
    fn a_cron_jobs_template_gets_no_job_defaults() {
        let cron = defaulted(
            "batch",
            "cronjobs",
            json!({"spec": {"schedule": "* * * * *", "concurrencyPolicy": "",
                "jobTemplate": {"spec": {
                    "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
                    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
        );
        let spec = &cron["spec"];
        assert_eq!(
            (
                &spec["concurrencyPolicy"],
                &spec["suspend"],
                &spec["successfulJobsHistoryLimit"],
                &spec["failedJobsHistoryLimit"]
            ),
            (&json!("Allow"), &json!(false), &json!(3), &json!(1))
        );
        let job = spec["jobTemplate"]["spec"].as_object().unwrap();
        let mut keys: Vec<&str> = job.keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(keys, ["podFailurePolicy", "template"]);
        assert_eq!(job["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"], "True");
        assert_eq!(job["template"]["spec"]["containers"][0]["imagePullPolicy"], "Always");
    }
}
