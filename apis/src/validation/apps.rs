//! Validation of apps/v1: Deployments, ReplicaSets, StatefulSets, DaemonSets and
//! ControllerRevisions, with upstream's (v1.33) messages and field paths: their counts,
//! strategies, selectors against their pod templates (`super::templates`), and what an
//! update may change.
//!
//! Where upstream shows a Go struct or map as the bad value (`map[string]string{...}`,
//! `v1.LabelSelector{...}`, `intstr.IntOrString{...}`), [`crate::gofmt`] prints it the way
//! Go's `%#v` does, so the line reads the same as against a real cluster.
//!
//! A field upstream defaults is never an error when absent (it is read as its default),
//! whether or not rkube's defaulting (`crate::defaults`, on every write) filled it.

use serde_json::{json, Value};

use super::templates::{
    always_restarts, pod_template, push, selector_is_empty, selector_matches, selector_parses,
    template_mismatch,
};
use super::values::{
    int_or_percent_value, label_selector, non_negative, not_over_100_percent,
    positive_int_or_percent, IMMUTABLE,
};
use super::FieldError;
use crate::gofmt::{go_int_or_string, go_label_selector, go_pointer, go_quote};

/// `ValidateDeploymentSpec` plus the apps/v1 selector immutability.
pub fn deployment(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let mut errors = Vec::new();
    push(&mut errors, non_negative("spec.replicas", &spec["replicas"]));
    errors.extend(required_selector(spec, "empty selector is invalid for deployment"));
    errors.extend(replica_set_template(spec));
    errors.extend(deployment_strategy(&spec["strategy"]));
    push(&mut errors, non_negative("spec.minReadySeconds", &spec["minReadySeconds"]));
    push(&mut errors, non_negative("spec.revisionHistoryLimit", &spec["revisionHistoryLimit"]));
    let deadline = &spec["progressDeadlineSeconds"];
    if let Some(seconds) = deadline.as_i64() {
        push(&mut errors, non_negative("spec.progressDeadlineSeconds", deadline));
        if seconds <= spec["minReadySeconds"].as_i64().unwrap_or(0) {
            errors.push(FieldError::invalid(
                "spec.progressDeadlineSeconds",
                deadline,
                "must be greater than minReadySeconds",
            ));
        }
    }
    push(&mut errors, immutable_selector(obj, old));
    errors
}

/// `ValidateDeploymentStrategy`; an absent type or rolling-update field reads as upstream's
/// default (RollingUpdate, 25%, 25%).
fn deployment_strategy(strategy: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let rolling = &strategy["rollingUpdate"];
    match strategy["type"].as_str().unwrap_or("") {
        "Recreate" => {
            if !rolling.is_null() {
                errors.push(FieldError::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" | "" => {
            let default = json!("25%");
            let unavailable = or_default(&rolling["maxUnavailable"], &default);
            let surge = or_default(&rolling["maxSurge"], &default);
            let path = "spec.strategy.rollingUpdate";
            push(
                &mut errors,
                positive_int_or_percent(&format!("{path}.maxUnavailable"), unavailable),
            );
            push(&mut errors, positive_int_or_percent(&format!("{path}.maxSurge"), surge));
            if int_or_percent_value(unavailable) == 0 && int_or_percent_value(surge) == 0 {
                errors.push(FieldError::invalid_shown(
                    format!("{path}.maxUnavailable"),
                    &go_int_or_string(unavailable),
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
            push(&mut errors, not_over_100_percent(&format!("{path}.maxUnavailable"), unavailable));
        }
        other => {
            let shown = format!(
                "apps.DeploymentStrategy{{Type:{}, RollingUpdate:{}}}",
                go_quote(other),
                go_pointer("apps.RollingUpdateDeployment", rolling)
            );
            errors.push(FieldError::unsupported_shown(
                "spec.strategy",
                &shown,
                &["Recreate", "RollingUpdate"],
            ));
        }
    }
    errors
}

/// `ValidateReplicaSetSpec` plus the apps/v1 selector immutability. (Upstream's message for
/// an empty selector says "deployment" for replica sets too.)
pub fn replica_set(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let mut errors = Vec::new();
    push(&mut errors, non_negative("spec.replicas", &spec["replicas"]));
    push(&mut errors, non_negative("spec.minReadySeconds", &spec["minReadySeconds"]));
    errors.extend(required_selector(spec, "empty selector is invalid for deployment"));
    errors.extend(replica_set_template(spec));
    push(&mut errors, immutable_selector(obj, old));
    errors
}

/// `ValidateStatefulSetSpec`, and on update `ValidateStatefulSetUpdate` (only a few spec
/// fields may change).
pub fn stateful_set(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let mut errors = Vec::new();
    let policy = &spec["podManagementPolicy"];
    if policy.as_str().is_some_and(|p| !matches!(p, "" | "OrderedReady" | "Parallel")) {
        errors.push(FieldError::invalid(
            "spec.podManagementPolicy",
            policy,
            "must be 'OrderedReady' or 'Parallel'",
        ));
    }
    errors.extend(stateful_set_strategy(&spec["updateStrategy"]));
    let retention = &spec["persistentVolumeClaimRetentionPolicy"];
    for when in ["whenDeleted", "whenScaled"] {
        let v = &retention[when];
        if v.as_str().is_some_and(|p| !matches!(p, "Retain" | "Delete")) {
            errors.push(FieldError::unsupported(
                format!("spec.persistentVolumeClaimRetentionPolicy.{when}"),
                v,
                &["Retain", "Delete"],
            ));
        }
    }
    push(&mut errors, non_negative("spec.replicas", &spec["replicas"]));
    push(&mut errors, non_negative("spec.minReadySeconds", &spec["minReadySeconds"]));
    push(&mut errors, non_negative("spec.ordinals.start", &spec["ordinals"]["start"]));
    errors.extend(required_selector(spec, "empty selector is invalid for statefulset"));
    let (sel, template) = (&spec["selector"], &spec["template"]);
    if !selector_parses(sel) {
        errors.push(FieldError::invalid_shown("spec.selector", &go_label_selector(sel), ""));
    } else {
        if !selector_matches(sel, &template["metadata"]["labels"]) {
            errors.push(template_mismatch(template, "spec.template"));
        }
        // Upstream checks only the template's metadata here; rkube also checks the pod spec
        // so that a broken template is refused rather than failing pod by pod, with the
        // volumes each pod gets from `volumeClaimTemplates` (which its mounts may name).
        errors.extend(pod_template(&with_claim_volumes(template, spec), "spec.template"));
    }
    errors.extend(always_restarts(template, "spec.template", "StatefulSet"));
    if let Some(old) = old {
        errors.extend(stateful_set_update(obj, old));
    }
    errors
}

/// The template as the StatefulSet's pods get it: a `persistentVolumeClaim` volume for each
/// claim template not already among its volumes.
fn with_claim_volumes(template: &Value, spec: &Value) -> Value {
    let mut template = template.clone();
    for claim in spec["volumeClaimTemplates"].as_array().into_iter().flatten() {
        let Some(name) = claim["metadata"]["name"].as_str() else { continue };
        if !template["spec"]["volumes"].is_array() {
            template["spec"]["volumes"] = serde_json::json!([]);
        }
        let volumes = template["spec"]["volumes"].as_array_mut().expect("an array");
        if !volumes.iter().any(|v| v["name"] == name) {
            volumes.push(
                serde_json::json!({"name": name, "persistentVolumeClaim": {"claimName": name}}),
            );
        }
    }
    template
}

fn stateful_set_strategy(strategy: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let rolling = &strategy["rollingUpdate"];
    let path = "spec.updateStrategy";
    match strategy["type"].as_str().unwrap_or("") {
        "OnDelete" => {
            if !rolling.is_null() {
                let shown = format!(
                    "apps.RollingUpdateStatefulSetStrategy{{Partition:{}, MaxUnavailable:{}}}",
                    rolling["partition"].as_i64().unwrap_or(0),
                    go_pointer("intstr.IntOrString", &rolling["maxUnavailable"])
                );
                errors.push(FieldError::invalid_shown(
                    format!("{path}.rollingUpdate"),
                    &shown,
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" | "" => {
            let at = format!("{path}.rollingUpdate");
            push(&mut errors, non_negative(&format!("{at}.partition"), &rolling["partition"]));
            let unavailable = &rolling["maxUnavailable"];
            if !unavailable.is_null() {
                let field = format!("{at}.maxUnavailable");
                push(&mut errors, positive_int_or_percent(&field, unavailable));
                if int_or_percent_value(unavailable) == 0 {
                    errors.push(FieldError::invalid_shown(
                        &field,
                        &go_int_or_string(unavailable),
                        "cannot be 0",
                    ));
                }
                push(&mut errors, not_over_100_percent(&field, unavailable));
            }
        }
        other => {
            let shown = format!(
                "apps.StatefulSetUpdateStrategy{{Type:{}, RollingUpdate:{}}}",
                go_quote(other),
                go_pointer("apps.RollingUpdateStatefulSetStrategy", rolling)
            );
            errors.push(FieldError::invalid_shown(
                path,
                &shown,
                "must be 'RollingUpdate' or 'OnDelete'",
            ));
        }
    }
    errors
}

fn stateful_set_update(obj: &Value, old: &Value) -> Vec<FieldError> {
    // Compare with defaults filled in on both sides, as upstream compares decoded objects:
    // a replace that leaves out a defaulted field changes nothing.
    let mut specs = [obj.clone(), old.clone()];
    for o in &mut specs {
        crate::defaults::apps::stateful_set(o);
        if let Some(m) = o["spec"].as_object_mut() {
            for f in [
                "replicas",
                "ordinals",
                "template",
                "updateStrategy",
                "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds",
            ] {
                m.remove(f);
            }
        }
    }
    if specs[0]["spec"] == specs[1]["spec"] {
        return Vec::new();
    }
    vec![FieldError::forbidden("spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")]
}

/// `ValidateDaemonSetSpec` plus the apps/v1 selector immutability.
pub fn daemon_set(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let (sel, template) = (&spec["selector"], &spec["template"]);
    let mut errors = label_selector("spec.selector", sel);
    // An empty selector matches everything; a missing one nothing.
    if selector_parses(sel) && !selector_matches(sel, &template["metadata"]["labels"]) {
        errors.push(template_mismatch(template, "spec.template"));
    }
    if !sel.is_null() && selector_is_empty(sel) {
        errors.push(FieldError::invalid_shown(
            "spec.selector",
            &go_label_selector(sel),
            "empty selector is invalid for daemonset",
        ));
    }
    errors.extend(pod_template(template, "spec.template"));
    errors.extend(always_restarts(template, "spec.template", "DaemonSet"));
    push(&mut errors, non_negative("spec.minReadySeconds", &spec["minReadySeconds"]));
    push(&mut errors, non_negative("spec.templateGeneration", &spec["templateGeneration"]));
    errors.extend(daemon_set_strategy(&spec["updateStrategy"]));
    push(&mut errors, non_negative("spec.revisionHistoryLimit", &spec["revisionHistoryLimit"]));
    push(&mut errors, immutable_selector(obj, old));
    errors
}

/// `ValidateDaemonSetUpdateStrategy`; absent fields read as upstream's defaults
/// (RollingUpdate, maxUnavailable 1, maxSurge 0).
fn daemon_set_strategy(strategy: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let rolling = &strategy["rollingUpdate"];
    match strategy["type"].as_str().unwrap_or("") {
        "OnDelete" => {}
        "RollingUpdate" | "" => {
            let (one, zero) = (json!(1), json!(0));
            let unavailable = or_default(&rolling["maxUnavailable"], &one);
            let surge = or_default(&rolling["maxSurge"], &zero);
            let path = "spec.updateStrategy.rollingUpdate";
            let (u_path, s_path) = (format!("{path}.maxUnavailable"), format!("{path}.maxSurge"));
            push(&mut errors, positive_int_or_percent(&u_path, unavailable));
            push(&mut errors, positive_int_or_percent(&s_path, surge));
            push(&mut errors, not_over_100_percent(&u_path, unavailable));
            push(&mut errors, not_over_100_percent(&s_path, surge));
            let has_unavailable = int_or_percent_value(unavailable) != 0;
            let has_surge = int_or_percent_value(surge) != 0;
            if has_unavailable && has_surge {
                errors.push(FieldError::invalid_shown(
                    s_path,
                    &go_int_or_string(surge),
                    "may not be set when maxUnavailable is non-zero",
                ));
            } else if !has_unavailable && !has_surge {
                errors.push(FieldError::required(u_path, "cannot be 0 when maxSurge is 0"));
            }
        }
        other => {
            let shown = format!(
                "apps.DaemonSetUpdateStrategy{{Type:{}, RollingUpdate:{}}}",
                go_quote(other),
                go_pointer("apps.RollingUpdateDaemonSet", rolling)
            );
            errors.push(FieldError::unsupported_shown(
                "spec.updateStrategy",
                &shown,
                &["RollingUpdate", "OnDelete"],
            ));
        }
    }
    errors
}

/// `selector` (required) with its syntax and the kind's message for an empty one.
fn required_selector(spec: &Value, empty_message: &str) -> Vec<FieldError> {
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
fn replica_set_template(spec: &Value) -> Vec<FieldError> {
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

/// The value of a field, or the default upstream fills in when it is absent.
fn or_default<'a>(v: &'a Value, default: &'a Value) -> &'a Value {
    if v.is_null() {
        default
    } else {
        v
    }
}

/// The update forbids changes to the selector (apps/v1 deployments, replica sets, daemon
/// sets).
fn immutable_selector(obj: &Value, old: Option<&Value>) -> Option<FieldError> {
    let old = old?;
    let sel = &obj["spec"]["selector"];
    (sel != &old["spec"]["selector"])
        .then(|| FieldError::invalid_shown("spec.selector", &go_label_selector(sel), IMMUTABLE))
}

// ---------------------------------------------------------------------------------------
// ControllerRevision

/// `ValidateControllerRevision`: data required, revision not negative; on update the data
/// is fixed (upstream compares it, not the revision).
pub fn controller_revision(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let data = &obj["data"];
    if data.is_null() {
        errors.push(FieldError::required("data", "data is mandatory"));
    }
    errors.extend(non_negative("revision", &obj["revision"]));
    if let Some(old) = old {
        if data != &old["data"] {
            errors.push(FieldError::invalid_shown("data", &go_raw_object(data), IMMUTABLE));
        }
    }
    errors
}

/// The `runtime.Object` a ControllerRevision's `data` decodes to, as `%#v` prints it: a
/// `runtime.Unknown` holding the JSON text (compact, keys in the order given), or `"null"`.
fn go_raw_object(data: &Value) -> String {
    if data.is_null() {
        return "\"null\"".to_string();
    }
    let raw = serde_json::to_string(data).unwrap_or_default();
    let bytes: Vec<String> = raw.bytes().map(|b| format!("{b:#x}")).collect();
    format!(
        "runtime.Unknown{{TypeMeta:runtime.TypeMeta{{APIVersion:\"\", Kind:\"\"}}, Raw:[]uint8{{{}}}, ContentEncoding:\"\", ContentType:\"application/json\"}}",
        bytes.join(", ")
    )
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
    fn replica_sets() {
        let mut rs = deployment_obj();
        rs["spec"]["selector"] = json!({"matchLabels": {}});
        assert_eq!(
            lines(replica_set(&rs, None)),
            ["spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment"]
        );
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
    fn controller_revisions() {
        let r = json!({"data": {"spec": {"template": {}}}, "revision": 2});
        assert!(controller_revision(&r, None).is_empty());
        let bumped = json!({"data": {"spec": {"template": {}}}, "revision": 3});
        assert!(controller_revision(&bumped, Some(&r)).is_empty());
        assert_eq!(
            lines(controller_revision(&json!({"revision": -1}), None)),
            [
                "data: Required value: data is mandatory",
                "revision: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        assert_eq!(
            lines(controller_revision(&json!({"data": {"a": 1}, "revision": 2}), Some(&r))),
            ["data: Invalid value: runtime.Unknown{TypeMeta:runtime.TypeMeta{APIVersion:\"\", Kind:\"\"}, Raw:[]uint8{0x7b, 0x22, 0x61, 0x22, 0x3a, 0x31, 0x7d}, ContentEncoding:\"\", ContentType:\"application/json\"}: field is immutable"]
        );
    }
}
