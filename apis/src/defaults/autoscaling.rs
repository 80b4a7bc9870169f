//! Defaults of `autoscaling` (v2 stored, v1 served from it; `pkg/apis/autoscaling/v*/defaults.go`
//! upstream): HorizontalPodAutoscalers.

use serde_json::{json, Map, Value};

use super::{default, field, is_empty_list};
use crate::convert::{self, BEHAVIOR_ANNOTATION, METRICS_ANNOTATION};

/// The CPU utilization an HPA without metrics aims for.
const HPA_DEFAULT_CPU_UTILIZATION: i64 = 80;

/// An autoscaling/v2 HorizontalPodAutoscaler's defaults (v1's are [`hpa_v1`]).
pub fn hpa_v2(obj: &mut Value) {
    field(obj, "spec").into_iter().for_each(hpa_v2_spec)
}

/// autoscaling/v2 (the stored version): one replica at least, an 80% CPU target when no
/// metric is given, and a `behavior` the client sent completed with the default rules.
fn hpa_v2_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default(spec, "minReplicas", json!(1));
    if is_empty_list(spec.get("metrics")) {
        spec["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": HPA_DEFAULT_CPU_UTILIZATION}}}]);
    }
    if let Some(behavior) = field(spec, "behavior") {
        hpa_behavior(behavior);
    }
}

/// autoscaling/v1 says in annotations what it has no fields for; the defaults v2 would apply
/// after conversion are applied to them, so the stored object is the same whichever version
/// the client used, and the annotations read as upstream writes them back (see
/// `crate::convert`). One Go cannot decode is dropped, as converting to v2 drops it.
pub fn hpa_v1(obj: &mut Value) {
    let Some(spec) = field(obj, "spec").filter(|s| s.is_object()) else { return };
    default(spec, "minReplicas", json!(1));
    let annotation = |obj: &Value, key: &str| -> Option<String> {
        obj["metadata"]["annotations"][key].as_str().map(str::to_string)
    };
    // Converted, a v1 HPA's metrics are those of the annotation and its CPU target.
    let other_metrics = annotation(obj, METRICS_ANNOTATION)
        .map(|text| convert::hpa_metrics_from_annotation(&text).filter(|m| !m.is_empty()));
    if let Some(other_metrics) = other_metrics {
        let text = other_metrics.as_deref().map(convert::hpa_metrics_annotation);
        set_annotation(obj, METRICS_ANNOTATION, text);
    }
    if annotation(obj, METRICS_ANNOTATION).is_none() {
        default(
            &mut obj["spec"],
            "targetCPUUtilizationPercentage",
            json!(HPA_DEFAULT_CPU_UTILIZATION),
        );
    }
    if let Some(text) = annotation(obj, BEHAVIOR_ANNOTATION) {
        let behavior = convert::hpa_behavior_from_annotation(&text).map(|mut behavior| {
            hpa_behavior(&mut behavior);
            convert::hpa_behavior_annotation(&behavior)
        });
        set_annotation(obj, BEHAVIOR_ANNOTATION, behavior);
    }
}

/// Sets (or, with `None`, removes) one of the object's annotations.
fn set_annotation(obj: &mut Value, key: &str, text: Option<String>) {
    let Some(annotations) = obj["metadata"]["annotations"].as_object_mut() else { return };
    match text {
        Some(text) => {
            annotations.insert(key.to_string(), json!(text));
        }
        None => {
            annotations.shift_remove(key);
            if annotations.is_empty() {
                if let Some(meta) = obj["metadata"].as_object_mut() {
                    meta.shift_remove("annotations");
                }
            }
        }
    }
}

/// Both directions of an HPA's `behavior` are filled in: scaling up by 4 pods or 100% every
/// 15s with no stabilization window, down by 100% every 15s (its window is left to the
/// controller's flag), taking the larger change. Keys go in upstream's field order.
fn hpa_behavior(behavior: &mut Value) {
    let Some(given) = behavior.as_object_mut() else { return };
    let up = scaling_rules(
        given.remove("scaleUp"),
        json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}]}),
    );
    let down = scaling_rules(
        given.remove("scaleDown"),
        json!({"selectPolicy": "Max", "policies": [
            {"type": "Percent", "value": 100, "periodSeconds": 15}]}),
    );
    let mut rebuilt =
        Map::from_iter([("scaleUp".to_string(), up), ("scaleDown".to_string(), down)]);
    rebuilt.append(given);
    *behavior = Value::Object(rebuilt);
}

/// The rules the client gave for one direction, each missing field taken from `defaults`.
fn scaling_rules(given: Option<Value>, defaults: Value) -> Value {
    let mut given = match given {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(other) => return other,
    };
    let mut rules = Map::new();
    for key in ["stabilizationWindowSeconds", "selectPolicy", "policies", "tolerance"] {
        let value =
            given.remove(key).filter(|v| !v.is_null()).or_else(|| defaults.get(key).cloned());
        if let Some(value) = value {
            rules.insert(key.to_string(), value);
        }
    }
    rules.extend(given.into_iter().filter(|(_, v)| !v.is_null()));
    Value::Object(rules)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::defaulted_in as defaulted;
    use super::*;

    fn cpu(utilization: i64) -> Value {
        json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": utilization}}})
    }

    #[test]
    fn a_v2_hpa_gets_a_cpu_target_and_no_behavior() {
        let ref_ = json!({"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"});
        let hpa = defaulted(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            json!({"spec": {"scaleTargetRef": ref_, "maxReplicas": 5, "metrics": []}}),
        );
        assert_eq!(
            hpa["spec"],
            json!({"scaleTargetRef": ref_, "maxReplicas": 5, "metrics": [cpu(80)], "minReplicas": 1})
        );
        let memory = json!({"type": "Resource", "resource": {"name": "memory",
            "target": {"type": "AverageValue", "averageValue": "100Mi"}}});
        let hpa = defaulted(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            json!({"spec": {"minReplicas": 2, "metrics": [memory]}}),
        );
        assert_eq!(hpa["spec"], json!({"minReplicas": 2, "metrics": [memory]}));
    }

    #[test]
    fn a_v2_hpas_behavior_is_completed() {
        let hpa = defaulted(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            json!({"spec": {"metrics": [cpu(50)], "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
        );
        let behavior = &hpa["spec"]["behavior"];
        assert_eq!(
            behavior,
            &json!({
                "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
                    {"type": "Pods", "value": 4, "periodSeconds": 15},
                    {"type": "Percent", "value": 100, "periodSeconds": 15}]},
                "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
                    {"type": "Percent", "value": 100, "periodSeconds": 15}]}})
        );
        // In upstream's field order.
        let keys: Vec<&String> = behavior.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["scaleUp", "scaleDown"]);
        let given = json!({"selectPolicy": "Disabled", "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]});
        let hpa = defaulted(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            json!({"spec": {"behavior": {"scaleDown": given}}}),
        );
        assert_eq!(hpa["spec"]["behavior"]["scaleDown"], given);
    }

    #[test]
    fn a_v1_hpa_gets_what_v2_would_give_it() {
        let hpa = defaulted(
            "autoscaling",
            "v1",
            "horizontalpodautoscalers",
            json!({"metadata": {"name": "h"}, "spec": {"maxReplicas": 3}}),
        );
        assert_eq!(
            hpa,
            json!({"metadata": {"name": "h"},
                "spec": {"maxReplicas": 3, "minReplicas": 1, "targetCPUUtilizationPercentage": 80}})
        );
        // Other metrics kept in the annotation: no CPU target added; the annotation reads as
        // upstream writes it back. The behavior there, in either case, is completed.
        let completed = concat!(
            r#"{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Min","Policies":["#,
            r#"{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}],"#,
            r#""Tolerance":null},"ScaleDown":{"StabilizationWindowSeconds":null,"SelectPolicy":"Max","#,
            r#""Policies":[{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null}}"#,
        );
        for behavior in [
            r#"{"scaleUp":{"selectPolicy":"Min"}}"#,
            r#"{"ScaleUp":{"StabilizationWindowSeconds":null,"SelectPolicy":"Min","Policies":null,"Tolerance":null},"ScaleDown":null}"#,
            completed,
        ] {
            let hpa = defaulted(
                "autoscaling",
                "v1",
                "horizontalpodautoscalers",
                json!({"metadata": {"annotations": {
                        METRICS_ANNOTATION: r#"[{"type":"Pods","pods":{"targetAverageValue":"1e1","metricName":"qps"}}]"#,
                        BEHAVIOR_ANNOTATION: behavior}},
                    "spec": {"maxReplicas": 3, "minReplicas": 2}}),
            );
            assert_eq!(hpa["spec"], json!({"maxReplicas": 3, "minReplicas": 2}));
            assert_eq!(
                hpa["metadata"]["annotations"],
                json!({METRICS_ANNOTATION: r#"[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]"#,
                    BEHAVIOR_ANNOTATION: completed}),
                "{behavior}"
            );
        }
        // What upstream could not decode is dropped, and counts for nothing.
        let hpa = defaulted(
            "autoscaling",
            "v1",
            "horizontalpodautoscalers",
            json!({"metadata": {"annotations": {METRICS_ANNOTATION: "[]",
                    BEHAVIOR_ANNOTATION: r#"{"scaleUp":{"policies":"many"}}"#}},
                "spec": {"maxReplicas": 3}}),
        );
        assert_eq!(
            hpa,
            json!({"metadata": {},
                "spec": {"maxReplicas": 3, "minReplicas": 1, "targetCPUUtilizationPercentage": 80}})
        );
    }
}
