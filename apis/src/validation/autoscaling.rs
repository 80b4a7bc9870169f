//! Validation of autoscaling: HorizontalPodAutoscalers (v2, and v1 as clients send it), with
//! upstream's (v1.33) messages and field paths (`ValidateHorizontalPodAutoscaler[Update]`):
//! replica bounds, the scale target, metrics and scaling behavior.
//!
//! Upstream validates its internal version, which has v2's shape, so a v1 object's CPU
//! target is checked as its CPU utilization metric. Objects arrive after rkube's defaulting,
//! which does not fill an HPA's defaults, so an absent field reads as the default upstream
//! would have given it (`minReplicas` of 1, ...). A `resource.Quantity` shown as the bad value
//! is rendered the way Go's `%#v` prints it.

use serde_json::{json, Value};

use super::values::{container_resource_name, items, one_of, path_segment, str_of};
use super::{name_problems, FieldError, NameRule};
use crate::gofmt::go_quantity;
use crate::quantity::Quantity;

/// The spec as upstream validates it (its internal version, which is v2's shape): a v1
/// object's `targetCPUUtilizationPercentage` becomes its CPU utilization metric.
fn hpa_spec(obj: &Value) -> Value {
    let mut spec = obj["spec"].clone();
    if obj["apiVersion"] == "autoscaling/v1" && spec.is_object() {
        let cpu = spec.as_object_mut().and_then(|s| s.remove("targetCPUUtilizationPercentage"));
        if let Some(cpu) = cpu.filter(|c| !c.is_null()) {
            spec["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": cpu}}}]);
        }
    }
    spec
}

/// `ValidateHorizontalPodAutoscaler` and its update: replica bounds, the scale target, the
/// metrics and the scaling behavior. `minReplicas` may be 0 only when it already was (the
/// HPAScaleToZero gate is off in v1.33).
pub fn horizontal_pod_autoscaler(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = hpa_spec(obj);
    let mut errors = Vec::new();
    let lower = if old.is_some_and(|o| o["spec"]["minReplicas"] == 0) { 0 } else { 1 };
    // minReplicas defaults to 1.
    let min = spec["minReplicas"].as_i64().unwrap_or(1);
    if !spec["minReplicas"].is_null() && min < lower {
        errors.push(FieldError::invalid(
            "spec.minReplicas",
            &spec["minReplicas"],
            &format!("must be greater than or equal to {lower}"),
        ));
    }
    let max = json!(spec["maxReplicas"].as_i64().unwrap_or(0));
    if max.as_i64() < Some(1) {
        errors.push(FieldError::invalid("spec.maxReplicas", &max, "must be greater than 0"));
    }
    if max.as_i64() < Some(min) {
        errors.push(FieldError::invalid(
            "spec.maxReplicas",
            &max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    object_reference(&spec["scaleTargetRef"], "spec.scaleTargetRef", &mut errors);
    let metrics = items(&spec["metrics"]);
    let mut scales_on_objects = false;
    for (i, m) in metrics.iter().enumerate() {
        metric_spec(m, &format!("spec.metrics[{i}]"), &mut errors);
        scales_on_objects |= m["type"] == "Object" || m["type"] == "External";
    }
    // An empty list is defaulted to CPU utilization (which cannot scale to zero either).
    if min == 0 && !scales_on_objects {
        errors.push(FieldError::forbidden(
            "spec.metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
    let behavior = &spec["behavior"];
    if behavior.is_object() {
        for direction in ["scaleUp", "scaleDown"] {
            scaling_rules(&behavior[direction], &format!("spec.behavior.{direction}"), &mut errors);
        }
    }
    errors
}

/// `ValidateCrossVersionObjectReference`: kind and name.
fn object_reference(r: &Value, at: &str, errors: &mut Vec<FieldError>) {
    path_segment(&format!("{at}.kind"), &r["kind"], errors);
    path_segment(&format!("{at}.name"), &r["name"], errors);
}

/// Rules the defaulting left alone: a missing direction or policy list is filled in, an
/// explicitly empty list is not.
fn scaling_rules(rules: &Value, at: &str, errors: &mut Vec<FieldError>) {
    if !rules.is_object() {
        return;
    }
    let window = &rules["stabilizationWindowSeconds"];
    if let Some(w) = window.as_i64() {
        if w < 0 {
            errors.push(FieldError::invalid(
                format!("{at}.stabilizationWindowSeconds"),
                window,
                "must be greater than or equal to zero",
            ));
        }
        if w > 3600 {
            errors.push(FieldError::invalid(
                format!("{at}.stabilizationWindowSeconds"),
                window,
                "must be less than or equal to 3600",
            ));
        }
    }
    errors.extend(one_of(
        &format!("{at}.selectPolicy"),
        &rules["selectPolicy"],
        &["Disabled", "Max", "Min"],
    ));
    if rules["policies"].as_array().is_some_and(Vec::is_empty) {
        errors.push(FieldError::required(
            format!("{at}.policies"),
            "must specify at least one Policy",
        ));
    }
    for (i, p) in items(&rules["policies"]).iter().enumerate() {
        let at = format!("{at}.policies[{i}]");
        if p["type"] != "Pods" && p["type"] != "Percent" {
            let t = if p["type"].is_string() { p["type"].clone() } else { json!("") };
            errors.push(FieldError::unsupported(format!("{at}.type"), &t, &["Percent", "Pods"]));
        }
        for field in ["value", "periodSeconds"] {
            let v = json!(p[field].as_i64().unwrap_or(0));
            if v.as_i64() <= Some(0) {
                errors.push(FieldError::invalid(
                    format!("{at}.{field}"),
                    &v,
                    "must be greater than zero",
                ));
            }
        }
        let period = json!(p["periodSeconds"].as_i64().unwrap_or(0));
        if period.as_i64() > Some(1800) {
            errors.push(FieldError::invalid(
                format!("{at}.periodSeconds"),
                &period,
                "must be less than or equal to 1800",
            ));
        }
    }
}

const METRIC_TYPES: [&str; 5] = ["ContainerResource", "External", "Object", "Pods", "Resource"];

/// `validateMetricSpec`: the type, the one source it names (only the first source present
/// is checked further), and no other sources.
fn metric_spec(m: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let kind = str_of(&m["type"]);
    let shown = json!(kind);
    if kind.is_empty() {
        errors
            .push(FieldError::required(format!("{at}.type"), "must specify a metric source type"));
    }
    if !METRIC_TYPES.contains(&kind) {
        errors.push(FieldError::unsupported(format!("{at}.type"), &shown, &METRIC_TYPES));
    }
    let mut present: Vec<&str> = Vec::new();
    for source in ["object", "external", "pods", "resource", "containerResource"] {
        let s = &m[source];
        if s.is_null() {
            continue;
        }
        present.push(source);
        if present.len() > 1 {
            continue;
        }
        let at = format!("{at}.{source}");
        match source {
            "object" => object_source(s, &at, errors),
            "external" => external_source(s, &at, errors),
            "pods" => pods_source(s, &at, errors),
            "resource" => resource_source(s, &at, false, errors),
            _ => resource_source(s, &at, true, errors),
        }
    }
    let expected = match kind {
        "Object" => "object",
        "Pods" => "pods",
        "Resource" => "resource",
        "External" => "external",
        "ContainerResource" => "containerResource",
        _ => {
            errors.push(FieldError::unsupported(format!("{at}.type"), &shown, &METRIC_TYPES));
            ""
        }
    };
    if !expected.is_empty() && m[expected].is_null() {
        errors.push(FieldError::required(
            format!("{at}.{expected}"),
            "must populate information for the given metric source",
        ));
    }
    if present.len() != 1 {
        present.sort_unstable();
        for source in present.into_iter().filter(|s| *s != expected) {
            errors.push(FieldError::forbidden(
                format!("{at}.{source}"),
                "must populate the given metric source only",
            ));
        }
    }
}

fn metric_identifier(id: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let name = &id["name"];
    if str_of(name).is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), "must specify a metric name"));
    } else {
        path_segment(&format!("{at}.name"), name, errors);
    }
}

/// `validateMetricTarget`: the target type and positive values.
fn metric_target(t: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let kind = str_of(&t["type"]);
    if kind.is_empty() {
        errors
            .push(FieldError::required(format!("{at}.type"), "must specify a metric target type"));
    }
    if !matches!(kind, "Utilization" | "Value" | "AverageValue") {
        errors.push(FieldError::invalid(
            format!("{at}.type"),
            &json!(kind),
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    for field in ["value", "averageValue"] {
        let v = &t[field];
        if Quantity::parse(v).is_some_and(|q| q.nanos <= 0) {
            errors.push(FieldError::invalid_shown(
                format!("{at}.{field}"),
                &go_quantity(v, false),
                "must be positive",
            ));
        }
    }
    let utilization = &t["averageUtilization"];
    if utilization.as_i64().is_some_and(|u| u < 1) {
        errors.push(FieldError::invalid(
            format!("{at}.averageUtilization"),
            utilization,
            "must be greater than 0",
        ));
    }
}

fn object_source(s: &Value, at: &str, errors: &mut Vec<FieldError>) {
    object_reference(&s["describedObject"], &format!("{at}.describedObject"), errors);
    metric_identifier(&s["metric"], &format!("{at}.metric"), errors);
    let target = &s["target"];
    metric_target(target, &format!("{at}.target"), errors);
    if target["value"].is_null() && target["averageValue"].is_null() {
        errors.push(FieldError::required(
            format!("{at}.target.averageValue"),
            "must set either a target value or averageValue",
        ));
    }
}

fn external_source(s: &Value, at: &str, errors: &mut Vec<FieldError>) {
    metric_identifier(&s["metric"], &format!("{at}.metric"), errors);
    let target = &s["target"];
    metric_target(target, &format!("{at}.target"), errors);
    let (value, average) = (target["value"].is_null(), target["averageValue"].is_null());
    if value && average {
        errors.push(FieldError::required(
            format!("{at}.target.averageValue"),
            "must set either a target value for metric or a per-pod target",
        ));
    }
    if !value && !average {
        errors.push(FieldError::forbidden(
            format!("{at}.target.value"),
            "may not set both a target value for metric and a per-pod target",
        ));
    }
}

fn pods_source(s: &Value, at: &str, errors: &mut Vec<FieldError>) {
    metric_identifier(&s["metric"], &format!("{at}.metric"), errors);
    let target = &s["target"];
    metric_target(target, &format!("{at}.target"), errors);
    if target["averageValue"].is_null() {
        errors.push(FieldError::required(
            format!("{at}.target.averageValue"),
            "must specify a positive target averageValue",
        ));
    }
}

/// `Resource` and `ContainerResource` sources: the resource (and container) name, and a
/// utilization or an average value, not both.
fn resource_source(s: &Value, at: &str, container: bool, errors: &mut Vec<FieldError>) {
    let name = str_of(&s["name"]);
    if name.is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), "must specify a resource name"));
    } else if container {
        container_resource_name(name, &format!("{at}.name"), errors);
    }
    if container {
        let c = str_of(&s["container"]);
        if c.is_empty() {
            errors
                .push(FieldError::required(format!("{at}.container"), "must specify a container"));
        } else {
            for p in name_problems(c, NameRule::Label) {
                errors.push(FieldError::invalid(format!("{at}.container"), &s["container"], &p));
            }
        }
    }
    let target = &s["target"];
    metric_target(target, &format!("{at}.target"), errors);
    let (utilization, average) =
        (target["averageUtilization"].is_null(), target["averageValue"].is_null());
    if utilization && average {
        errors.push(FieldError::required(
            format!("{at}.target.averageUtilization"),
            "must set either a target raw value or a target utilization",
        ));
    }
    if !utilization && !average {
        errors.push(FieldError::forbidden(
            format!("{at}.target.averageValue"),
            "may not set both a target raw value and a target utilization",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    fn hpa(spec: Value) -> Value {
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"}, "spec": spec})
    }

    fn target() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"})
    }

    #[test]
    fn hpas_from_kubectl_and_docs_are_valid() {
        // kubectl autoscale deployment web --min=2 --max=5 --cpu-percent=80 (autoscaling/v1)
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": target(), "minReplicas": 2, "maxReplicas": 5,
                "targetCPUUtilizationPercentage": 80}});
        assert!(horizontal_pod_autoscaler(&v1, None).is_empty());
        let v2 = hpa(json!({"scaleTargetRef": target(), "minReplicas": 1, "maxReplicas": 10,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                {"type": "Pods", "pods": {"metric": {"name": "packets-per-second"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
                {"type": "Object", "object": {"metric": {"name": "requests-per-second"},
                    "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main-route"},
                    "target": {"type": "Value", "value": "10k"}}},
                {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "application",
                    "target": {"type": "Utilization", "averageUtilization": 60}}},
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300,
                "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
                "scaleUp": {"selectPolicy": "Max"}}}));
        assert!(horizontal_pod_autoscaler(&v2, None).is_empty());
        // No minReplicas (defaults to 1), no metrics (defaults to CPU).
        assert!(horizontal_pod_autoscaler(
            &hpa(json!({"scaleTargetRef": target(), "maxReplicas": 3})),
            None
        )
        .is_empty());
    }

    #[test]
    fn hpa_replica_bounds_and_target() {
        assert_eq!(
            lines(horizontal_pod_autoscaler(
                &hpa(json!({"scaleTargetRef": target(), "minReplicas": 0, "maxReplicas": 3})),
                None
            )),
            [
                "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
                "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
            ]
        );
        assert_eq!(
            lines(horizontal_pod_autoscaler(
                &hpa(json!({"scaleTargetRef": target(), "minReplicas": 5, "maxReplicas": 3})),
                None
            )),
            ["spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`"]
        );
        assert_eq!(
            lines(horizontal_pod_autoscaler(&hpa(json!({"scaleTargetRef": target(), "maxReplicas": 0})), None)),
            [
                "spec.maxReplicas: Invalid value: 0: must be greater than 0",
                "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`",
            ]
        );
        assert_eq!(
            lines(horizontal_pod_autoscaler(
                &hpa(json!({"scaleTargetRef": {"name": "a/b"}, "maxReplicas": 2})),
                None
            )),
            [
                "spec.scaleTargetRef.kind: Required value",
                "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'",
            ]
        );
        // An HPA that already scales to zero may keep doing so.
        let zero = hpa(json!({"scaleTargetRef": target(), "minReplicas": 0, "maxReplicas": 3,
            "metrics": [{"type": "External", "external": {"metric": {"name": "queue"},
                "target": {"type": "AverageValue", "averageValue": "30"}}}]}));
        assert!(horizontal_pod_autoscaler(&zero, Some(&zero)).is_empty());
    }

    #[test]
    fn hpa_v1_cpu_target_is_checked_as_its_metric() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": target(), "maxReplicas": 5, "targetCPUUtilizationPercentage": 0}});
        assert_eq!(
            lines(horizontal_pod_autoscaler(&v1, None)),
            ["spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"]
        );
    }

    #[test]
    fn hpa_metric_errors_read_like_upstream() {
        let with = |metric: Value| {
            lines(horizontal_pod_autoscaler(
                &hpa(json!({"scaleTargetRef": target(), "maxReplicas": 3, "metrics": [metric]})),
                None,
            ))
        };
        assert_eq!(
            with(json!({"type": "Cpu"})),
            [
                "spec.metrics[0].type: Unsupported value: \"Cpu\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
                "spec.metrics[0].type: Unsupported value: \"Cpu\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
            ]
        );
        assert_eq!(
            with(json!({"type": "Resource"})),
            ["spec.metrics[0].resource: Required value: must populate information for the given metric source"]
        );
        assert_eq!(
            with(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"averageUtilization": 50}}})),
            [
                "spec.metrics[0].resource.target.type: Required value: must specify a metric target type",
                "spec.metrics[0].resource.target.type: Invalid value: \"\": must be either Utilization, Value, or AverageValue",
            ]
        );
        assert_eq!(
            with(json!({"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue"}}})),
            ["spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or a target utilization"]
        );
        assert_eq!(
            with(json!({"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50, "averageValue": "100m"}}})),
            ["spec.metrics[0].resource.target.averageValue: Forbidden: may not set both a target raw value and a target utilization"]
        );
        assert_eq!(
            with(json!({"type": "External", "external": {"metric": {"name": "queue"},
                "target": {"type": "AverageValue", "averageValue": "0"}}})),
            ["spec.metrics[0].external.target.averageValue: Invalid value: resource.Quantity{i:resource.int64Amount{value:0, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"0\", Format:\"DecimalSI\"}: must be positive"]
        );
        assert_eq!(
            with(json!({"type": "Pods", "pods": {"metric": {}, "target": {"type": "Value", "value": "-500m"}}})),
            [
                "spec.metrics[0].pods.metric.name: Required value: must specify a metric name",
                "spec.metrics[0].pods.target.value: Invalid value: resource.Quantity{i:resource.int64Amount{value:-500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"-500m\", Format:\"DecimalSI\"}: must be positive",
                "spec.metrics[0].pods.target.averageValue: Required value: must specify a positive target averageValue",
            ]
        );
        assert_eq!(
            with(json!({"type": "Object", "object": {"metric": {"name": "rps"}, "describedObject": {"kind": "Ingress"},
                "target": {"type": "Value"}}})),
            [
                "spec.metrics[0].object.describedObject.name: Required value",
                "spec.metrics[0].object.target.averageValue: Required value: must set either a target value or averageValue",
            ]
        );
        assert_eq!(
            with(json!({"type": "Pods", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 5}}})),
            ["spec.metrics[0].pods: Required value: must populate information for the given metric source"]
        );
        assert_eq!(
            with(
                json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 5}},
                "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1"}}})
            ),
            ["spec.metrics[0].pods: Forbidden: must populate the given metric source only"]
        );
        assert_eq!(
            with(json!({"type": "ContainerResource", "containerResource": {"name": "gpu", "container": "App",
                "target": {"type": "Utilization", "averageUtilization": 5}}})),
            [
                "spec.metrics[0].containerResource.name: Invalid value: \"gpu\": must be a standard resource type or fully qualified",
                "spec.metrics[0].containerResource.name: Invalid value: \"gpu\": must be a standard resource for containers",
                "spec.metrics[0].containerResource.container: Invalid value: \"App\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ]
        );
    }

    #[test]
    fn hpa_behavior_errors_read_like_upstream() {
        let with = |behavior: Value| {
            lines(horizontal_pod_autoscaler(
                &hpa(json!({"scaleTargetRef": target(), "maxReplicas": 3, "behavior": behavior})),
                None,
            ))
        };
        assert_eq!(
            with(json!({"scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Fastest", "policies": []}})),
            [
                "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
                "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Fastest\": supported values: \"Disabled\", \"Max\", \"Min\"",
                "spec.behavior.scaleUp.policies: Required value: must specify at least one Policy",
            ]
        );
        assert_eq!(
            with(json!({"scaleDown": {"stabilizationWindowSeconds": -1,
                "policies": [{"type": "Replicas", "value": 0, "periodSeconds": 3600}]}})),
            [
                "spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: -1: must be greater than or equal to zero",
                "spec.behavior.scaleDown.policies[0].type: Unsupported value: \"Replicas\": supported values: \"Percent\", \"Pods\"",
                "spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero",
                "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 3600: must be less than or equal to 1800",
            ]
        );
    }
}
