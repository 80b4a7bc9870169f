//! The apps workloads and ReplicationControllers: Deployments, ReplicaSets, StatefulSets,
//! DaemonSets; their counts, strategies, selectors and what an update may change.

use super::*;

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
        crate::defaults::workloads::stateful_set(o);
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

/// `ValidateReplicationControllerSpec`. Upstream defaults an empty selector to the
/// template's labels, so only a controller with neither is missing its selector.
pub fn replication_controller(obj: &Value) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let template = &spec["template"];
    let labels = &template["metadata"]["labels"];
    let selector = match &spec["selector"] {
        s if s.as_object().is_some_and(|m| !m.is_empty()) => s,
        _ => labels,
    };
    let mut errors = Vec::new();
    push(&mut errors, non_negative("spec.minReadySeconds", &spec["minReadySeconds"]));
    let selector_empty = selector.as_object().is_none_or(|m| m.is_empty());
    if selector_empty {
        errors.push(FieldError::required("spec.selector", ""));
    }
    push(&mut errors, non_negative("spec.replicas", &spec["replicas"]));
    if template.is_null() {
        errors.push(FieldError::required("spec.template", ""));
        return errors;
    }
    let matches = selector
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.get(k).is_some_and(|l| l == v));
    if !selector_empty && !matches {
        errors.push(template_mismatch(template, "spec.template"));
    }
    errors.extend(pod_template(template, "spec.template"));
    errors.extend(always_restarts(template, "spec.template", "ReplicationController"));
    errors
}
