//! Conversion between the served versions of one resource. Objects are stored in one version
//! (see `ResourceInfo::storage_version`) and served in any; today only autoscaling has two
//! versions of one kind (HorizontalPodAutoscaler v1 and v2), converted as upstream does for
//! the fields v1 has. What v1 cannot say (metrics other than CPU utilization, `behavior`) is
//! kept in the annotations upstream uses, so a round trip through v1 loses nothing.

use serde_json::{json, Map, Value};

use crate::resources::ResourceInfo;

const METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const BEHAVIOR_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// `obj` (of any served version of `to`'s resource) in `to`'s version.
pub fn convert(mut obj: Value, to: &ResourceInfo) -> Value {
    if !obj.is_object() {
        return obj;
    }
    let from_version =
        obj["apiVersion"].as_str().and_then(|v| v.rsplit('/').next()).unwrap_or("").to_string();
    if (to.group, to.plural) == ("autoscaling", "horizontalpodautoscalers") {
        obj = match (from_version.as_str(), to.version) {
            ("v1", "v2") => hpa_v1_to_v2(obj),
            ("v2", "v1") => hpa_v2_to_v1(obj),
            _ => obj,
        };
    }
    obj["apiVersion"] = json!(to.api_version());
    obj["kind"] = json!(to.kind);
    obj
}

fn annotations(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj["metadata"]["annotations"].is_object() {
        obj["metadata"]["annotations"] = json!({});
    }
    obj["metadata"]["annotations"].as_object_mut().expect("annotations object")
}

fn take(obj: &mut Value, section: &str, field: &str) -> Option<Value> {
    obj.get_mut(section)?.as_object_mut()?.remove(field)
}

fn hpa_v1_to_v2(mut obj: Value) -> Value {
    let mut metrics: Vec<Value> = Vec::new();
    let kept = annotations(&mut obj).remove(METRICS_ANNOTATION);
    if let Some(extra) =
        kept.and_then(|a| a.as_str().and_then(|s| serde_json::from_str::<Vec<Value>>(s).ok()))
    {
        metrics.extend(extra);
    }
    if let Some(cpu) = take(&mut obj, "spec", "targetCPUUtilizationPercentage") {
        metrics.insert(
            0,
            json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu}}}),
        );
    }
    if !metrics.is_empty() {
        obj["spec"]["metrics"] = Value::Array(metrics);
    }
    if let Some(behavior) = annotations(&mut obj).remove(BEHAVIOR_ANNOTATION) {
        if let Some(b) = behavior.as_str().and_then(|s| serde_json::from_str::<Value>(s).ok()) {
            obj["spec"]["behavior"] = b;
        }
    }
    let mut current: Vec<Value> = Vec::new();
    let kept = annotations(&mut obj).remove(CURRENT_METRICS_ANNOTATION);
    if let Some(extra) =
        kept.and_then(|a| a.as_str().and_then(|s| serde_json::from_str::<Vec<Value>>(s).ok()))
    {
        current.extend(extra);
    }
    if let Some(cpu) = take(&mut obj, "status", "currentCPUUtilizationPercentage") {
        current.insert(0, json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": cpu}}}));
    }
    if !current.is_empty() {
        obj["status"]["currentMetrics"] = Value::Array(current);
    }
    drop_empty_annotations(&mut obj);
    obj
}

fn is_cpu_utilization(metric: &Value, target: &str) -> bool {
    metric["type"] == "Resource"
        && metric["resource"]["name"] == "cpu"
        && (target == "current" || metric["resource"]["target"]["type"] == "Utilization")
        && !metric["resource"][target]["averageUtilization"].is_null()
}

fn hpa_v2_to_v1(mut obj: Value) -> Value {
    if let Some(metrics) = take(&mut obj, "spec", "metrics").and_then(|m| m.as_array().cloned()) {
        let (cpu, other): (Vec<Value>, Vec<Value>) =
            metrics.into_iter().partition(|m| is_cpu_utilization(m, "target"));
        if let Some(cpu) = cpu.first() {
            obj["spec"]["targetCPUUtilizationPercentage"] =
                cpu["resource"]["target"]["averageUtilization"].clone();
        }
        if !other.is_empty() {
            annotations(&mut obj)
                .insert(METRICS_ANNOTATION.into(), json!(Value::Array(other).to_string()));
        }
    }
    if let Some(behavior) = take(&mut obj, "spec", "behavior") {
        annotations(&mut obj).insert(BEHAVIOR_ANNOTATION.into(), json!(behavior.to_string()));
    }
    if let Some(current) =
        take(&mut obj, "status", "currentMetrics").and_then(|m| m.as_array().cloned())
    {
        let (cpu, other): (Vec<Value>, Vec<Value>) =
            current.into_iter().partition(|m| is_cpu_utilization(m, "current"));
        if let Some(cpu) = cpu.first() {
            obj["status"]["currentCPUUtilizationPercentage"] =
                cpu["resource"]["current"]["averageUtilization"].clone();
        }
        if !other.is_empty() {
            annotations(&mut obj)
                .insert(CURRENT_METRICS_ANNOTATION.into(), json!(Value::Array(other).to_string()));
        }
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        status.remove("conditions");
    }
    drop_empty_annotations(&mut obj);
    obj
}

fn drop_empty_annotations(obj: &mut Value) {
    if obj["metadata"]["annotations"].as_object().is_some_and(|a| a.is_empty()) {
        if let Some(meta) = obj["metadata"].as_object_mut() {
            meta.remove("annotations");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;

    #[test]
    fn hpa_round_trips_through_v1() {
        let r = Resources::builtin();
        let v1 = r.get("autoscaling", "v1", "horizontalpodautoscalers").unwrap();
        let v2 = r.get("autoscaling", "v2", "horizontalpodautoscalers").unwrap();
        let original = json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"}, "minReplicas": 1, "maxReplicas": 5,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}},
        });
        let as_v1 = convert(original.clone(), v1);
        assert_eq!(as_v1["apiVersion"], "autoscaling/v1");
        assert_eq!(as_v1["spec"]["targetCPUUtilizationPercentage"], 70);
        assert!(as_v1["spec"].get("metrics").is_none());
        assert!(as_v1["metadata"]["annotations"][METRICS_ANNOTATION]
            .as_str()
            .unwrap()
            .contains("memory"));
        let back = convert(as_v1, v2);
        assert_eq!(back, original);
    }

    #[test]
    fn a_v1_hpa_becomes_a_cpu_metric() {
        let v2 = Resources::builtin().get("autoscaling", "v2", "horizontalpodautoscalers").unwrap();
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
            "spec": {"maxReplicas": 3, "targetCPUUtilizationPercentage": 50}});
        let out = convert(v1, v2);
        assert_eq!(out["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 50);
        assert!(out["metadata"].get("annotations").is_none());
    }
}
