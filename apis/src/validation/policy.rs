//! Validation of policy/v1: PodDisruptionBudgets (`ValidatePodDisruptionBudget`), with
//! upstream's (v1.33) messages and field paths. Where upstream prints the spec as the bad
//! value it is rendered the way Go's `%#v` prints it.

use serde_json::Value;

use super::values::{label_selector, not_over_100_percent, one_of, positive_int_or_percent};
use super::FieldError;
use crate::gofmt::go_pointer;

/// `ValidatePodDisruptionBudget` (also on update: upstream lets the spec change).
pub fn pod_disruption_budget(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let mut errors = Vec::new();
    let (min, max) = (&spec["minAvailable"], &spec["maxUnavailable"]);
    if !min.is_null() && !max.is_null() {
        let shown = format!(
            "policy.PodDisruptionBudgetSpec{{MinAvailable:{}, Selector:{}, MaxUnavailable:{}, UnhealthyPodEvictionPolicy:{}}}",
            go_pointer("intstr.IntOrString", min),
            go_pointer("v1.LabelSelector", &spec["selector"]),
            go_pointer("intstr.IntOrString", max),
            go_pointer("policy.UnhealthyPodEvictionPolicyType", &spec["unhealthyPodEvictionPolicy"]),
        );
        errors.push(FieldError::invalid_shown(
            "spec",
            &shown,
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (name, v) in [("minAvailable", min), ("maxUnavailable", max)] {
        if !v.is_null() {
            let at = format!("spec.{name}");
            errors.extend(positive_int_or_percent(&at, v));
            errors.extend(not_over_100_percent(&at, v));
        }
    }
    errors.extend(label_selector("spec.selector", &spec["selector"]));
    errors.extend(one_of(
        "spec.unhealthyPodEvictionPolicy",
        &spec["unhealthyPodEvictionPolicy"],
        &["AlwaysAllow", "IfHealthyBudget"],
    ));
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    fn pdb(spec: Value) -> Value {
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"}, "spec": spec})
    }

    #[test]
    fn pdbs_from_kubectl_are_valid() {
        // kubectl create pdb web --selector=app=web --min-available=1 / --max-unavailable=25%
        for spec in [
            json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}),
            json!({"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"}}}),
            json!({"minAvailable": "100%", "selector": {}, "unhealthyPodEvictionPolicy": "AlwaysAllow"}),
        ] {
            assert!(pod_disruption_budget(&pdb(spec.clone()), None).is_empty(), "{spec}");
        }
    }

    #[test]
    fn pdb_errors_read_like_upstream() {
        assert_eq!(
            lines(pod_disruption_budget(
                &pdb(json!({"minAvailable": 1, "maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}})),
                None
            )),
            ["spec: Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)(0xc000a1c000), Selector:(*v1.LabelSelector)(0xc000a1c000), MaxUnavailable:(*intstr.IntOrString)(0xc000a1c000), UnhealthyPodEvictionPolicy:(*policy.UnhealthyPodEvictionPolicyType)(nil)}: minAvailable and maxUnavailable cannot be both set"]
        );
        assert_eq!(
            lines(pod_disruption_budget(&pdb(json!({"minAvailable": -1})), None)),
            ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"]
        );
        assert_eq!(
            lines(pod_disruption_budget(&pdb(json!({"maxUnavailable": "half"})), None)),
            ["spec.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"half\"}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"]
        );
        assert_eq!(
            lines(pod_disruption_budget(&pdb(json!({"minAvailable": "150%"})), None)),
            ["spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}: must not be greater than 100%"]
        );
        assert_eq!(
            lines(pod_disruption_budget(
                &pdb(json!({"minAvailable": 1, "unhealthyPodEvictionPolicy": "Never"})),
                None
            )),
            ["spec.unhealthyPodEvictionPolicy: Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\""]
        );
        assert_eq!(
            lines(pod_disruption_budget(
                &pdb(json!({"minAvailable": 1, "selector": {"matchExpressions": [{"key": "app", "operator": "In"}]}})),
                None
            )),
            ["spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"]
        );
    }
}
