//! Defaults of the apps and batch groups (`pkg/apis/apps/v1/defaults.go` and
//! `pkg/apis/batch/v1/defaults.go` upstream, with the nested defaults their generated
//! defaulters call).

use serde_json::{json, Value};

use super::core::pod_template;
use super::{default, default_unset, field};

/// A Deployment's defaults.
pub fn deployment(obj: &mut Value) {
    if let Some(spec) = field(obj, "spec") {
        default(spec, "replicas", json!(1));
        default(spec, "strategy", json!({}));
        rolling_update(&mut spec["strategy"], json!("25%"), json!("25%"));
        default(spec, "revisionHistoryLimit", json!(10));
        default(spec, "progressDeadlineSeconds", json!(600));
        field(spec, "template").into_iter().for_each(pod_template);
    }
}

/// A ReplicaSet's defaults.
pub fn replica_set(obj: &mut Value) {
    if let Some(spec) = field(obj, "spec") {
        default(spec, "replicas", json!(1));
        field(spec, "template").into_iter().for_each(pod_template);
    }
}

/// A StatefulSet's defaults.
pub fn stateful_set(obj: &mut Value) {
    field(obj, "spec").into_iter().for_each(stateful_set_spec)
}

/// A DaemonSet's defaults.
pub fn daemon_set(obj: &mut Value) {
    if let Some(spec) = field(obj, "spec") {
        default(spec, "updateStrategy", json!({}));
        rolling_update(&mut spec["updateStrategy"], json!(1), json!(0));
        default(spec, "revisionHistoryLimit", json!(10));
        field(spec, "template").into_iter().for_each(pod_template);
    }
}

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

/// A Deployment's `strategy` or a DaemonSet's `updateStrategy`: `RollingUpdate` when no type
/// is given, and then the rolling update's limits when they are missing.
fn rolling_update(strategy: &mut Value, max_unavailable: Value, max_surge: Value) {
    if !strategy.is_object() {
        return;
    }
    default_unset(strategy, "type", json!("RollingUpdate"));
    if strategy["type"] == "RollingUpdate" {
        default(strategy, "rollingUpdate", json!({}));
        if let Some(rolling) = field(strategy, "rollingUpdate") {
            default(rolling, "maxUnavailable", max_unavailable);
            default(rolling, "maxSurge", max_surge);
        }
    }
}

fn stateful_set_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default(spec, "replicas", json!(1));
    default_unset(spec, "podManagementPolicy", json!("OrderedReady"));
    default(spec, "updateStrategy", json!({}));
    if let Some(strategy) = field(spec, "updateStrategy").filter(|s| s.is_object()) {
        // Only a strategy without a type gets an empty rolling update to fill in; the
        // partition (not maxUnavailable: MaxUnavailableStatefulSet is alpha, off in 1.33)
        // goes into one the client sent.
        if strategy.get("type").is_none_or(|t| t.is_null() || t == "") {
            strategy["type"] = json!("RollingUpdate");
            default(strategy, "rollingUpdate", json!({}));
        }
        if strategy["type"] == "RollingUpdate" {
            field(strategy, "rollingUpdate")
                .into_iter()
                .for_each(|r| default(r, "partition", json!(0)));
        }
    }
    default(spec, "revisionHistoryLimit", json!(10));
    // StatefulSetAutoDeletePVC is on (GA): each policy is completed on its own.
    default(spec, "persistentVolumeClaimRetentionPolicy", json!({}));
    if let Some(policy) = field(spec, "persistentVolumeClaimRetentionPolicy") {
        if policy.is_object() {
            default_unset(policy, "whenDeleted", json!("Retain"));
            default_unset(policy, "whenScaled", json!("Retain"));
        }
    }
    field(spec, "template").into_iter().for_each(pod_template);
    if let Some(claims) = spec.get_mut("volumeClaimTemplates").and_then(Value::as_array_mut) {
        claims.iter_mut().for_each(claim_template);
    }
}

/// A StatefulSet's claim template gets a claim's defaults: a `Pending` status and a
/// filesystem volume.
fn claim_template(claim: &mut Value) {
    if !claim.is_object() {
        return;
    }
    if let Some(spec) = field(claim, "spec") {
        default(spec, "volumeMode", json!("Filesystem"));
    }
    default(claim, "status", json!({}));
    if let Some(status) = field(claim, "status").filter(|s| s.is_object()) {
        default_unset(status, "phase", json!("Pending"));
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
    use super::*;
    use crate::defaults::apply;
    use crate::resources::ResourceInfo;
    use crate::resources::Resources;

    fn info(group: &str, plural: &str) -> &'static ResourceInfo {
        Resources::builtin().get(group, "v1", plural).unwrap()
    }

    fn defaulted(group: &str, plural: &str, mut obj: Value) -> Value {
        apply(info(group, plural), &mut obj);
        obj
    }

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

    #[test]
    fn stateful_sets_get_upstream_defaults() {
        let sts = defaulted(
            "apps",
            "statefulsets",
            json!({"spec": {"serviceName": "db", "template": {"spec": {}},
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}),
        );
        let mut spec = sts["spec"].clone();
        spec.as_object_mut().unwrap().remove("template");
        assert_eq!(
            spec,
            json!({"serviceName": "db",
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                        "volumeMode": "Filesystem"},
                    "status": {"phase": "Pending"}}],
                "replicas": 1, "podManagementPolicy": "OrderedReady",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                "revisionHistoryLimit": 10,
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}})
        );
        // A partial retention policy is completed; an OnDelete strategy gets nothing.
        let sts = defaulted(
            "apps",
            "statefulsets",
            json!({"spec": {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"},
                "updateStrategy": {"type": "OnDelete"}}}),
        );
        assert_eq!(
            sts["spec"]["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Delete", "whenScaled": "Retain"})
        );
        assert_eq!(sts["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
        // A RollingUpdate type without a rollingUpdate gets none.
        let sts = defaulted(
            "apps",
            "statefulsets",
            json!({"spec": {"updateStrategy": {"type": "RollingUpdate"}}}),
        );
        assert_eq!(sts["spec"]["updateStrategy"], json!({"type": "RollingUpdate"}));
    }

    #[test]
    fn deployments_daemon_sets_and_replica_sets() {
        let d = defaulted("apps", "deployments", json!({"spec": {"strategy": {"type": ""}}}));
        assert_eq!(
            d["spec"],
            json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600})
        );
        let ds = defaulted("apps", "daemonsets", json!({"spec": {}}));
        assert_eq!(
            ds["spec"],
            json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                "revisionHistoryLimit": 10})
        );
        let ds = defaulted(
            "apps",
            "daemonsets",
            json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
        );
        assert_eq!(ds["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
        let rs = defaulted("apps", "replicasets", json!({"spec": {}}));
        assert_eq!(rs["spec"], json!({"replicas": 1}));
        // No spec: nothing to default, and nothing added.
        let rs = defaulted("apps", "replicasets", json!({"metadata": {}}));
        assert_eq!(rs, json!({"metadata": {}}));
    }
}
