//! Validation of scheduling.k8s.io/v1: PriorityClasses (`ValidatePriorityClass[Update]`),
//! with upstream's (v1.33) messages and field paths.

use serde_json::{json, Value};

use super::values::{one_of, str_of};
use super::FieldError;

const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;

/// `ValidatePriorityClass`, or on update only `ValidatePriorityClassUpdate` (value and
/// preemption policy fixed).
pub fn priority_class(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let value = obj["value"].as_i64().unwrap_or(0);
    // preemptionPolicy defaults to PreemptLowerPriority.
    let policy = |o: &Value| match &o["preemptionPolicy"] {
        Value::Null => json!("PreemptLowerPriority"),
        p => p.clone(),
    };
    if let Some(old) = old {
        if value != old["value"].as_i64().unwrap_or(0) {
            errors.push(FieldError::forbidden("value", "may not be changed in an update."));
        }
        if policy(obj) != policy(old) {
            errors.push(FieldError::invalid(
                "preemptionPolicy",
                &policy(obj),
                "field is immutable",
            ));
        }
        return errors;
    }
    let name = str_of(&obj["metadata"]["name"]);
    if name.starts_with("system-") {
        let global_default = obj["globalDefault"].as_bool().unwrap_or(false);
        let known = match name {
            "system-node-critical" => Some(2_000_001_000),
            "system-cluster-critical" => Some(2_000_000_000),
            _ => None,
        };
        let problem = match known {
            None => Some(format!("{name} is not a known system priority class")),
            Some(v) if v != value => Some(format!("value of {name} PriorityClass must be {v}")),
            Some(_) if global_default => {
                Some(format!("globalDefault of {name} PriorityClass must be false"))
            }
            Some(_) => None,
        };
        if let Some(problem) = problem {
            errors.push(FieldError::forbidden(
                "metadata.name",
                &format!("priority class names with 'system-' prefix are reserved for system use only. error: {problem}"),
            ));
        }
    } else if value > HIGHEST_USER_PRIORITY {
        errors.push(FieldError::forbidden(
            "value",
            &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        ));
    }
    match &obj["preemptionPolicy"] {
        Value::Null => {}
        p if p == "" => errors.push(FieldError::required("preemptionPolicy", "")),
        p => {
            errors.extend(one_of("preemptionPolicy", p, &["PreemptLowerPriority", "PreemptNever"]))
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    fn pc(name: &str, extra: Value) -> Value {
        let mut obj = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": 1000});
        for (k, v) in extra.as_object().into_iter().flatten() {
            obj[k] = v.clone();
        }
        obj
    }

    #[test]
    fn priority_classes_from_kubectl_are_valid() {
        // kubectl create priorityclass high --value=1000 --description="high priority"
        let high = pc(
            "high",
            json!({"globalDefault": false, "description": "high priority",
            "preemptionPolicy": "PreemptLowerPriority"}),
        );
        assert!(priority_class(&high, None).is_empty());
        assert!(priority_class(&pc("low", json!({"preemptionPolicy": "PreemptNever"})), None)
            .is_empty());
        let system = pc("system-node-critical", json!({"value": 2000001000}));
        assert!(priority_class(&system, None).is_empty());
        // Absent preemptionPolicy reads as its default.
        assert!(priority_class(&high, Some(&pc("high", json!({})))).is_empty());
    }

    #[test]
    fn priority_class_errors_read_like_upstream() {
        assert_eq!(
            lines(priority_class(&pc("huge", json!({"value": 2000000000})), None)),
            ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
        );
        assert_eq!(
            lines(priority_class(&pc("system-high", json!({})), None)),
            ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-high is not a known system priority class"]
        );
        assert_eq!(
            lines(priority_class(&pc("system-cluster-critical", json!({})), None)),
            ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-cluster-critical PriorityClass must be 2000000000"]
        );
        assert_eq!(
            lines(priority_class(&pc("p", json!({"preemptionPolicy": "Always"})), None)),
            ["preemptionPolicy: Unsupported value: \"Always\": supported values: \"PreemptLowerPriority\", \"PreemptNever\""]
        );
        assert_eq!(
            lines(priority_class(
                &pc("p", json!({"value": 5, "preemptionPolicy": "PreemptNever"})),
                Some(&pc("p", json!({})))
            )),
            [
                "value: Forbidden: may not be changed in an update.",
                "preemptionPolicy: Invalid value: \"PreemptNever\": field is immutable",
            ]
        );
    }
}
