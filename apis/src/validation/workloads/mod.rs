//! Workloads (deployments, replica sets, stateful sets, daemon sets, replication controllers,
//! jobs, cron jobs): counts, strategies, selectors against their pod templates, and what an
//! update may change, with upstream's (v1.33) messages and field paths.
//!
//! Where upstream shows a Go struct or map as the bad value (`map[string]string{...}`,
//! `v1.LabelSelector{...}`, `intstr.IntOrString{...}`), [`crate::gofmt`] prints it the way
//! Go's `%#v` does, so the line reads the same as against a real cluster. Cron schedules are
//! parsed in `super::cron`.
//!
//! A field upstream defaults is never an error when absent (it is read as its default),
//! whether or not rkube's defaulting (`crate::defaults`, on every write) filled it.

use serde_json::{json, Value};

use super::cron::parse_schedule;
use super::pod::pod_spec;
use super::values::{annotation_map, label_map, label_selector, non_negative};
use super::{name_problems, FieldError, NameRule};
use crate::gofmt::{
    go_int_or_string, go_label_selector, go_pointee, go_pointer, go_quote, go_string_map,
};

mod apps;
mod batch;

pub use apps::{daemon_set, deployment, replica_set, replication_controller, stateful_set};
pub use batch::{cron_job, job};

pub(super) const IMMUTABLE: &str = "field is immutable";

// ---------------------------------------------------------------------------------------
// Shared pieces.

pub(super) fn push(errors: &mut Vec<FieldError>, error: Option<FieldError>) {
    errors.extend(error);
}

/// `ValidatePodTemplateSpec`: the template's labels and annotations and its pod spec.
pub(super) fn pod_template(template: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = label_map(&format!("{path}.labels"), &template["metadata"]["labels"]);
    errors.extend(annotation_map(
        &format!("{path}.annotations"),
        &template["metadata"]["annotations"],
    ));
    errors.extend(pod_spec(&template["spec"], &format!("{path}.spec")));
    if template["spec"]["ephemeralContainers"].as_array().is_some_and(|e| !e.is_empty()) {
        errors.push(FieldError::forbidden(
            format!("{path}.spec.ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errors
}

/// Controllers whose pods run forever: restartPolicy `Always` (the default when absent),
/// and no activeDeadlineSeconds.
pub(super) fn always_restarts(template: &Value, path: &str, kind: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let policy = &template["spec"]["restartPolicy"];
    if policy.as_str().is_some_and(|p| p != "Always") {
        errors.push(FieldError::unsupported(
            format!("{path}.spec.restartPolicy"),
            policy,
            &["Always"],
        ));
    }
    if !template["spec"]["activeDeadlineSeconds"].is_null() {
        errors.push(FieldError::forbidden(
            format!("{path}.spec.activeDeadlineSeconds"),
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    errors
}

/// Whether `LabelSelectorAsSelector` accepts the selector: exactly when it validates (a null
/// selector is "nothing", which it accepts).
pub(super) fn selector_parses(sel: &Value) -> bool {
    label_selector("", sel).is_empty()
}

pub(super) fn selector_is_empty(sel: &Value) -> bool {
    sel["matchLabels"].as_object().is_none_or(|m| m.is_empty())
        && sel["matchExpressions"].as_array().is_none_or(|e| e.is_empty())
}

/// Whether a parsed selector selects `labels`: null selects nothing, empty selects all.
pub(super) fn selector_matches(sel: &Value, labels: &Value) -> bool {
    if sel.is_null() {
        return false;
    }
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let by_labels = sel["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k).is_some_and(|l| Some(l) == v.as_str()));
    let by_expressions = sel["matchExpressions"].as_array().into_iter().flatten().all(|e| {
        let have = label(e["key"].as_str().unwrap_or_default());
        let listed =
            |l: &str| e["values"].as_array().into_iter().flatten().any(|v| v.as_str() == Some(l));
        match e["operator"].as_str() {
            Some("In") => have.is_some_and(listed),
            Some("NotIn") => !have.is_some_and(listed),
            Some("Exists") => have.is_some(),
            Some("DoesNotExist") => have.is_none(),
            _ => false,
        }
    });
    by_labels && by_expressions
}

pub(super) fn template_mismatch(template: &Value, path: &str) -> FieldError {
    FieldError::invalid_shown(
        format!("{path}.metadata.labels"),
        &go_string_map(&template["metadata"]["labels"]),
        "`selector` does not match template `labels`",
    )
}

/// `selector` (required) with its syntax and the kind's message for an empty one.
pub(super) fn required_selector(spec: &Value, empty_message: &str) -> Vec<FieldError> {
    let sel = &spec["selector"];
    if sel.is_null() {
        return vec![FieldError::required("spec.selector", "")];
    }
    let mut errors = label_selector("spec.selector", sel);
    if selector_is_empty(sel) {
        errors.push(FieldError::invalid_shown(
            "spec.selector",
            &go_label_selector(sel),
            empty_message,
        ));
    }
    errors
}

/// `ValidatePodTemplateSpecForReplicaSet` (deployments and replica sets), after the
/// selector has parsed.
pub(super) fn replica_set_template(spec: &Value) -> Vec<FieldError> {
    let (sel, template) = (&spec["selector"], &spec["template"]);
    if !selector_parses(sel) {
        return vec![FieldError::invalid_shown(
            "spec.selector",
            &go_label_selector(sel),
            "invalid label selector",
        )];
    }
    let mut errors = Vec::new();
    if !selector_matches(sel, &template["metadata"]["labels"]) {
        errors.push(template_mismatch(template, "spec.template"));
    }
    errors.extend(pod_template(template, "spec.template"));
    errors.extend(always_restarts(template, "spec.template", "ReplicaSet"));
    errors
}

/// `IsValidPercent`: the number of a `NN%` string.
pub(super) fn percent(s: &str) -> Option<i64> {
    let digits = s.strip_suffix('%')?;
    let ok = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    ok.then(|| digits.parse().unwrap_or(i64::MAX))
}

/// `getIntOrPercentValue`: a percent's number, else the value as an integer (a string that
/// is no number counts as 0).
pub(super) fn int_or_percent_value(v: &Value) -> i64 {
    match v {
        Value::String(s) => percent(s).unwrap_or_else(|| s.parse().unwrap_or(0)),
        other => other.as_i64().unwrap_or(0),
    }
}

pub(super) const PERCENT_MSG: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// `ValidatePositiveIntOrPercent`.
pub(super) fn positive_int_or_percent(field: &str, v: &Value) -> Option<FieldError> {
    match v {
        Value::String(s) if percent(s).is_none() => {
            Some(FieldError::invalid_shown(field, &go_int_or_string(v), PERCENT_MSG))
        }
        Value::String(_) => None,
        other => non_negative(field, other),
    }
}

/// `IsNotMoreThan100Percent`.
pub(super) fn not_over_100_percent(field: &str, v: &Value) -> Option<FieldError> {
    let over = v.as_str().and_then(percent).is_some_and(|p| p > 100);
    over.then(|| {
        FieldError::invalid_shown(field, &go_int_or_string(v), "must not be greater than 100%")
    })
}

/// The value of a field, or the default upstream fills in when it is absent.
pub(super) fn or_default<'a>(v: &'a Value, default: &'a Value) -> &'a Value {
    if v.is_null() {
        default
    } else {
        v
    }
}

/// The update forbids changes to the selector (apps/v1 deployments, replica sets, daemon
/// sets).
pub(super) fn immutable_selector(obj: &Value, old: Option<&Value>) -> Option<FieldError> {
    let old = old?;
    let sel = &obj["spec"]["selector"];
    (sel != &old["spec"]["selector"])
        .then(|| FieldError::invalid_shown("spec.selector", &go_label_selector(sel), IMMUTABLE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    fn info(group: &str, plural: &str) -> &'static crate::resources::ResourceInfo {
        Resources::builtin().get(group, "v1", plural).unwrap()
    }

    /// As `kubectl create deployment web --image=nginx` sends it, after defaulting.
    fn deployment_obj() -> Value {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "strategy": {},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}}}});
        crate::defaults::apply(info("apps", "deployments"), &mut d);
        d
    }

    fn job_obj() -> Value {
        let mut j = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "pi", "namespace": "default"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "pi", "image": "perl:5.34.0", "command": ["perl", "-e", "print 1"]}]}}}});
        crate::defaults::apply(info("batch", "jobs"), &mut j);
        j
    }

    fn cron_job_obj() -> Value {
        let mut c = json!({"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "hello", "namespace": "default"},
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "hello", "image": "busybox:1.36", "command": ["date"]}]}}}}}});
        crate::defaults::apply(info("batch", "cronjobs"), &mut c);
        c
    }

    #[test]
    fn realistic_workloads_are_valid() {
        // `kubectl create deployment` sends an empty strategy object.
        let d = deployment_obj();
        assert_eq!(lines(deployment(&d, None)), Vec::<String>::new());
        assert_eq!(lines(deployment(&d, Some(&d))), Vec::<String>::new());
        let mut rs = d.clone();
        rs["spec"].as_object_mut().unwrap().remove("strategy");
        assert_eq!(lines(replica_set(&rs, None)), Vec::<String>::new());
        let mut sts = json!({"metadata": {"name": "db"}, "spec": {"serviceName": "db",
            "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]},
            "template": d["spec"]["template"].clone()}});
        sts["spec"]["template"]["metadata"]["labels"]["app"] = json!("db");
        crate::defaults::apply(info("apps", "statefulsets"), &mut sts);
        assert_eq!(lines(stateful_set(&sts, None)), Vec::<String>::new());
        // A replace without the defaulted fields is no forbidden change.
        let mut replaced = sts.clone();
        replaced["spec"].as_object_mut().unwrap().remove("revisionHistoryLimit");
        replaced["spec"]["replicas"] = json!(3);
        assert_eq!(lines(stateful_set(&replaced, Some(&sts))), Vec::<String>::new());
        let mut ds = json!({"metadata": {"name": "agent"}, "spec": {
            "selector": {"matchLabels": {"app": "web"}}, "template": d["spec"]["template"].clone()}});
        crate::defaults::apply(info("apps", "daemonsets"), &mut ds);
        assert_eq!(lines(daemon_set(&ds, None)), Vec::<String>::new());
        let mut rc = json!({"metadata": {"name": "old"}, "spec": {"template": d["spec"]["template"].clone()}});
        crate::defaults::apply(info("", "replicationcontrollers"), &mut rc);
        assert_eq!(lines(replication_controller(&rc)), Vec::<String>::new());
        let j = job_obj();
        assert_eq!(lines(job(&j, None)), Vec::<String>::new());
        let mut replaced = j.clone();
        replaced["spec"].as_object_mut().unwrap().remove("completions");
        replaced["spec"].as_object_mut().unwrap().remove("parallelism");
        assert_eq!(lines(job(&replaced, Some(&j))), Vec::<String>::new());
        let c = cron_job_obj();
        assert_eq!(lines(cron_job(&c, None)), Vec::<String>::new());
    }

    #[test]
    fn deployment_counts_and_selector() {
        let mut d = deployment_obj();
        d["spec"]["replicas"] = json!(-1);
        d["spec"]["minReadySeconds"] = json!(-5);
        d["spec"]["revisionHistoryLimit"] = json!(-1);
        d["spec"]["template"]["metadata"]["labels"] = json!({"app": "other", "tier": "fe"});
        assert_eq!(
            lines(deployment(&d, None)),
            [
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"other\", \"tier\":\"fe\"}: `selector` does not match template `labels`",
                "spec.minReadySeconds: Invalid value: -5: must be greater than or equal to 0",
                "spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        let mut d = deployment_obj();
        d["spec"]["selector"] = json!({});
        assert_eq!(
            lines(deployment(&d, None)),
            ["spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment"]
        );
        d["spec"].as_object_mut().unwrap().remove("selector");
        assert_eq!(
            lines(deployment(&d, None)),
            [
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
            ]
        );
        let mut d = deployment_obj();
        d["spec"]["selector"] = json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "bad value"]}]});
        assert_eq!(
            lines(deployment(&d, None)),
            [
                "spec.selector.matchExpressions[0].values[1]: Invalid value: \"bad value\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:\"app\", Operator:\"In\", Values:[]string{\"web\", \"bad value\"}}}}: invalid label selector",
            ]
        );
        // NotIn / DoesNotExist select the template too.
        d["spec"]["selector"] = json!({"matchLabels": {"app": "web"}, "matchExpressions": [
            {"key": "tier", "operator": "NotIn", "values": ["db"]},
            {"key": "legacy", "operator": "DoesNotExist"}]});
        assert_eq!(lines(deployment(&d, None)), Vec::<String>::new());
        // Selector changes are refused on update.
        let old = deployment_obj();
        let mut d = deployment_obj();
        d["spec"]["selector"]["matchLabels"]["tier"] = json!("fe");
        d["spec"]["template"]["metadata"]["labels"]["tier"] = json!("fe");
        assert_eq!(
            lines(deployment(&d, Some(&old))),
            ["spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web\", \"tier\":\"fe\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"]
        );
    }

    #[test]
    fn deployment_template_and_strategy() {
        let mut d = deployment_obj();
        d["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        d["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(10);
        d["spec"]["template"]["metadata"]["labels"]["bad key!"] = json!("x");
        d["spec"]["progressDeadlineSeconds"] = json!(5);
        d["spec"]["minReadySeconds"] = json!(10);
        assert_eq!(
            lines(deployment(&d, None)),
            [
                "spec.template.labels: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
                "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported",
                "spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds",
            ]
        );
        let strategy = |s: Value| {
            let mut d = deployment_obj();
            d["spec"]["strategy"] = s;
            lines(deployment(&d, None))
        };
        assert_eq!(
            strategy(json!({"type": "BlueGreen"})),
            ["spec.strategy: Unsupported value: apps.DeploymentStrategy{Type:\"BlueGreen\", RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: supported values: \"Recreate\", \"RollingUpdate\""]
        );
        assert_eq!(
            strategy(json!({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}})),
            ["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"]
        );
        assert_eq!(
            strategy(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}})),
            ["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"0%\"}: may not be 0 when `maxSurge` is 0"]
        );
        assert_eq!(
            strategy(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": -1, "maxUnavailable": "150%"}})),
            [
                "spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0",
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}: must not be greater than 100%",
            ]
        );
        assert_eq!(
            strategy(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "abc", "maxUnavailable": 1}})),
            ["spec.strategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"abc\"}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"]
        );
        // Only a rolling update given: its missing fields are upstream's defaults.
        assert_eq!(strategy(json!({"rollingUpdate": {"maxSurge": 1}})), Vec::<String>::new());
    }

    #[test]
    fn replica_sets_and_controllers() {
        let mut rs = deployment_obj();
        rs["spec"]["selector"] = json!({"matchLabels": {}});
        assert_eq!(
            lines(replica_set(&rs, None)),
            ["spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment"]
        );
        let rc = json!({"spec": {"replicas": -1, "selector": {"app": "x"},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "i"}]}}}});
        assert_eq!(
            lines(replication_controller(&rc)),
            [
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
                "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
            ]
        );
        let rc =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        assert_eq!(lines(replication_controller(&rc)), ["spec.selector: Required value"]);
    }

    #[test]
    fn stateful_sets() {
        let sts_info = info("apps", "statefulsets");
        let base = || {
            let d = deployment_obj();
            let mut s = json!({"metadata": {"name": "db"}, "spec": {"selector": d["spec"]["selector"].clone(),
                "template": d["spec"]["template"].clone()}});
            crate::defaults::apply(sts_info, &mut s);
            s
        };
        let mut s = base();
        s["spec"]["podManagementPolicy"] = json!("Sometimes");
        s["spec"]["updateStrategy"] = json!({"type": "Rolling"});
        s["spec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"] = json!("Keep");
        s["spec"]["ordinals"] = json!({"start": -1});
        assert_eq!(
            lines(stateful_set(&s, None)),
            [
                "spec.podManagementPolicy: Invalid value: \"Sometimes\": must be 'OrderedReady' or 'Parallel'",
                "spec.updateStrategy: Invalid value: apps.StatefulSetUpdateStrategy{Type:\"Rolling\", RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}: must be 'RollingUpdate' or 'OnDelete'",
                "spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: \"Keep\": supported values: \"Retain\", \"Delete\"",
                "spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        let mut s = base();
        s["spec"]["updateStrategy"] =
            json!({"type": "OnDelete", "rollingUpdate": {"partition": 2}});
        s["spec"]["selector"] = json!({});
        assert_eq!(
            lines(stateful_set(&s, None)),
            [
                "spec.updateStrategy.rollingUpdate: Invalid value: apps.RollingUpdateStatefulSetStrategy{Partition:2, MaxUnavailable:(*intstr.IntOrString)(nil)}: only allowed for updateStrategy 'RollingUpdate'",
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for statefulset",
            ]
        );
        let mut s = base();
        s["spec"]["updateStrategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"partition": -1, "maxUnavailable": 0}});
        assert_eq!(
            lines(stateful_set(&s, None)),
            [
                "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0",
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: cannot be 0",
            ]
        );
        let old = base();
        let mut s = base();
        s["spec"]["serviceName"] = json!("other");
        assert_eq!(
            lines(stateful_set(&s, Some(&old))),
            ["spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"]
        );
    }

    #[test]
    fn daemon_sets() {
        let base = || {
            let d = deployment_obj();
            let mut s = json!({"metadata": {"name": "agent"}, "spec": {"selector": d["spec"]["selector"].clone(),
                "template": d["spec"]["template"].clone()}});
            crate::defaults::apply(info("apps", "daemonsets"), &mut s);
            s
        };
        let mut ds = base();
        ds["spec"]["updateStrategy"] =
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}});
        assert_eq!(
            lines(daemon_set(&ds, None)),
            ["spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:0, IntVal:1, StrVal:\"\"}: may not be set when maxUnavailable is non-zero"]
        );
        ds["spec"]["updateStrategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}});
        assert_eq!(
            lines(daemon_set(&ds, None)),
            ["spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"]
        );
        ds["spec"]["updateStrategy"] = json!({"type": "Surge"});
        assert_eq!(
            lines(daemon_set(&ds, None)),
            ["spec.updateStrategy: Unsupported value: apps.DaemonSetUpdateStrategy{Type:\"Surge\", RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: supported values: \"RollingUpdate\", \"OnDelete\""]
        );
        let mut ds = base();
        ds["spec"].as_object_mut().unwrap().remove("selector");
        ds["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        assert_eq!(
            lines(daemon_set(&ds, None)),
            [
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            ]
        );
    }

    #[test]
    fn jobs() {
        let mut j = job_obj();
        j["spec"]["parallelism"] = json!(-1);
        j["spec"]["backoffLimit"] = json!(-2);
        j["spec"]["ttlSecondsAfterFinished"] = json!(-3);
        j["spec"]["completionMode"] = json!("Sometimes");
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(
            lines(job(&j, None)),
            [
                "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
                "spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0",
                "spec.ttlSecondsAfterFinished: Invalid value: -3: must be greater than or equal to 0",
                "spec.completionMode: Unsupported value: \"Sometimes\": supported values: \"NonIndexed\", \"Indexed\"",
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            ]
        );
        let mut j = job_obj();
        j["spec"]["selector"] = json!({"matchLabels": {"app": "x"}});
        j["spec"]["backoffLimitPerIndex"] = json!(1);
        assert_eq!(
            lines(job(&j, None)),
            [
                "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
                "spec.template.metadata.labels: Invalid value: map[string]string(nil): `selector` does not match template `labels`",
            ]
        );
        let mut j = job_obj();
        j["metadata"]["name"] = json!("a".repeat(62));
        j["spec"]["completionMode"] = json!("Indexed");
        j["spec"]["completions"] = json!(10);
        assert_eq!(
            lines(job(&j, None)),
            [format!("metadata.name: Invalid value: \"{0}\": will not able to create pod with invalid DNS label: {0}-9", "a".repeat(62))]
        );
        // Updates: completions and the template are fixed.
        let old = job_obj();
        let mut j = job_obj();
        j["spec"]["completions"] = json!(3);
        j["spec"]["template"]["spec"]["containers"][0]["image"] = json!("perl:5.36");
        let got = lines(job(&j, Some(&old)));
        assert_eq!(got[0], "spec.completions: Invalid value: 3: field is immutable");
        assert!(
            got[1].starts_with("spec.template: Invalid value: ")
                && got[1].ends_with(": field is immutable")
        );
        // A suspended job that never started may change its scheduling directives.
        let mut old = job_obj();
        old["spec"]["suspend"] = json!(true);
        let mut j = old.clone();
        j["spec"]["template"]["spec"]["nodeSelector"] = json!({"disk": "ssd"});
        assert_eq!(lines(job(&j, Some(&old))), Vec::<String>::new());
    }

    #[test]
    fn cron_jobs() {
        let schedule = |s: &str| {
            let mut c = cron_job_obj();
            c["spec"]["schedule"] = json!(s);
            lines(cron_job(&c, None))
        };
        assert_eq!(
            schedule("*/5 * * *"),
            ["spec.schedule: Invalid value: \"*/5 * * *\": expected exactly 5 fields, found 4: [*/5 * * *]"]
        );
        assert_eq!(
            schedule("61 * * * *"),
            ["spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61"]
        );
        assert_eq!(
            schedule("x * * * *"),
            ["spec.schedule: Invalid value: \"x * * * *\": failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"]
        );
        assert_eq!(
            schedule("@often"),
            ["spec.schedule: Invalid value: \"@often\": unrecognized descriptor: @often"]
        );
        assert_eq!(
            schedule("@every 1d"),
            ["spec.schedule: Invalid value: \"@every 1d\": failed to parse duration @every 1d: time: unknown unit \"d\" in duration \"1d\""]
        );
        assert_eq!(
            schedule("CRON_TZ=UTC * * * * *"),
            ["spec.schedule: Invalid value: \"CRON_TZ=UTC * * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"]
        );
        assert_eq!(schedule(""), ["spec.schedule: Required value"]);

        let mut c = cron_job_obj();
        c["spec"]["concurrencyPolicy"] = json!("Never");
        c["spec"]["startingDeadlineSeconds"] = json!(-1);
        c["spec"]["successfulJobsHistoryLimit"] = json!(-1);
        c["spec"]["timeZone"] = json!("Local");
        c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        c["spec"]["jobTemplate"]["spec"]["selector"] = json!({"matchLabels": {"a": "b"}});
        c["metadata"]["name"] = json!("n".repeat(53));
        assert_eq!(
            lines(cron_job(&c, None)),
            [
                "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
                "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
                "spec.concurrencyPolicy: Unsupported value: \"Never\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
                "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
                "spec.jobTemplate.spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"b\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be auto-generated",
                "spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
                &format!("metadata.name: Invalid value: \"{}\": must be no more than 52 characters", "n".repeat(53)),
            ]
        );
    }
}
