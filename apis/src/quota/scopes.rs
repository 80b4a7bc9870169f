//! Quota scopes: which pods a scoped quota counts (`Terminating`, `NotTerminating`,
//! `BestEffort`, `NotBestEffort`, `PriorityClass`, `CrossNamespacePodAffinity`), from its
//! `spec.scopes` and `spec.scopeSelector`, as upstream's pod evaluator matches them.

use serde_json::Value;

/// One scope requirement (a `spec.scopes` entry is `Exists`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeSelector {
    pub scope: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    pub values: Vec<String>,
}

/// The scope requirements of a ResourceQuota: its `spec.scopes`, then its
/// `spec.scopeSelector.matchExpressions`.
pub fn of_quota(quota: &Value) -> Vec<ScopeSelector> {
    let spec = &quota["spec"];
    let mut out: Vec<ScopeSelector> = spec["scopes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| ScopeSelector { scope: s.to_string(), operator: "Exists".into(), values: vec![] })
        .collect();
    for e in spec["scopeSelector"]["matchExpressions"].as_array().into_iter().flatten() {
        out.push(ScopeSelector {
            scope: e["scopeName"].as_str().unwrap_or("").to_string(),
            operator: e["operator"].as_str().unwrap_or("").to_string(),
            values: e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
        });
    }
    out
}

/// Whether `pod` falls under `selector`.
pub fn pod_matches(selector: &ScopeSelector, pod: &Value) -> bool {
    match selector.scope.as_str() {
        "Terminating" => is_terminating(pod),
        "NotTerminating" => !is_terminating(pod),
        "BestEffort" => is_best_effort(pod),
        "NotBestEffort" => !is_best_effort(pod),
        "PriorityClass" => {
            let class = pod["spec"]["priorityClassName"].as_str().unwrap_or("");
            // As a label selector on {PriorityClass: <class>}, the label absent without one.
            match selector.operator.as_str() {
                "Exists" => !class.is_empty(),
                "DoesNotExist" => class.is_empty(),
                "In" => !class.is_empty() && selector.values.iter().any(|v| v == class),
                "NotIn" => class.is_empty() || !selector.values.iter().any(|v| v == class),
                _ => false,
            }
        }
        "CrossNamespacePodAffinity" => uses_cross_namespace_affinity(pod),
        _ => false,
    }
}

/// A pod with an active deadline (upstream's `Terminating` scope).
fn is_terminating(pod: &Value) -> bool {
    pod["spec"]["activeDeadlineSeconds"].as_i64().is_some_and(|s| s >= 0)
}

/// A pod whose containers request and limit no CPU or memory (the BestEffort QoS class).
pub fn is_best_effort(pod: &Value) -> bool {
    let spec = &pod["spec"];
    let containers = ["containers", "initContainers"]
        .iter()
        .flat_map(|list| spec[*list].as_array().into_iter().flatten());
    !containers.into_iter().any(|c| {
        ["requests", "limits"].iter().any(|kind| {
            c["resources"][*kind].as_object().is_some_and(|r| {
                r.iter().any(|(name, q)| {
                    (name == "cpu" || name == "memory")
                        && crate::quantity::Quantity::parse(q).is_some_and(|q| !q.is_zero())
                })
            })
        })
    })
}

/// Whether any pod (anti-)affinity term names other namespaces (`namespaces` or a
/// `namespaceSelector`).
fn uses_cross_namespace_affinity(pod: &Value) -> bool {
    let affinity = &pod["spec"]["affinity"];
    let cross = |term: &Value| {
        term["namespaces"].as_array().is_some_and(|n| !n.is_empty())
            || term.get("namespaceSelector").is_some_and(|s| !s.is_null())
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let a = &affinity[*kind];
        let required = a["requiredDuringSchedulingIgnoredDuringExecution"].as_array();
        let preferred = a["preferredDuringSchedulingIgnoredDuringExecution"].as_array();
        required.into_iter().flatten().any(cross)
            || preferred.into_iter().flatten().any(|w| cross(&w["podAffinityTerm"]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sel(scope: &str, op: &str, values: &[&str]) -> ScopeSelector {
        ScopeSelector {
            scope: scope.into(),
            operator: op.into(),
            values: values.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn pods_match_scopes_as_upstream() {
        let best_effort = json!({"spec": {"containers": [{"name": "c"}]}});
        let burstable = json!({"spec": {"activeDeadlineSeconds": 30, "priorityClassName": "high",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}});
        assert!(pod_matches(&sel("BestEffort", "Exists", &[]), &best_effort));
        assert!(!pod_matches(&sel("BestEffort", "Exists", &[]), &burstable));
        assert!(pod_matches(&sel("NotBestEffort", "Exists", &[]), &burstable));
        assert!(pod_matches(&sel("Terminating", "Exists", &[]), &burstable));
        assert!(pod_matches(&sel("NotTerminating", "Exists", &[]), &best_effort));
        assert!(pod_matches(&sel("PriorityClass", "In", &["high", "mid"]), &burstable));
        assert!(!pod_matches(&sel("PriorityClass", "In", &["high"]), &best_effort));
        assert!(pod_matches(&sel("PriorityClass", "NotIn", &["high"]), &best_effort));
        assert!(pod_matches(&sel("PriorityClass", "DoesNotExist", &[]), &best_effort));
        assert!(pod_matches(&sel("PriorityClass", "Exists", &[]), &burstable));
        let cross = json!({"spec": {"affinity": {"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1,
                "podAffinityTerm": {"topologyKey": "k", "namespaceSelector": {}}}]}}}});
        assert!(pod_matches(&sel("CrossNamespacePodAffinity", "Exists", &[]), &cross));
        assert!(!pod_matches(&sel("CrossNamespacePodAffinity", "Exists", &[]), &burstable));
        // Zero requests are still BestEffort.
        let zero =
            json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "0"}}}]}});
        assert!(is_best_effort(&zero));
        let quota = json!({"spec": {"scopes": ["BestEffort"], "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}});
        assert_eq!(
            of_quota(&quota),
            [sel("BestEffort", "Exists", &[]), sel("PriorityClass", "In", &["high"])]
        );
    }
}
