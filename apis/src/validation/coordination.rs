//! Validation of coordination.k8s.io/v1: Leases (`ValidateLease[Update]`), with upstream's
//! (v1.33) messages and field paths. The `strategy` and `preferredHolder` fields, dropped
//! by upstream with their feature gates off (as they are by default in v1.33), are not
//! checked here; metadata is checked by the caller.

use serde_json::Value;

use super::FieldError;

/// A Lease: a positive duration and a non-negative transition count when set (upstream
/// checks the same on update).
pub fn lease(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let mut errors = Vec::new();
    let duration = &spec["leaseDurationSeconds"];
    if duration.as_i64().is_some_and(|d| d <= 0) {
        errors.push(FieldError::invalid(
            "spec.leaseDurationSeconds",
            duration,
            "must be greater than 0",
        ));
    }
    let transitions = &spec["leaseTransitions"];
    if transitions.as_i64().is_some_and(|t| t < 0) {
        errors.push(FieldError::invalid(
            "spec.leaseTransitions",
            transitions,
            "must be greater than or equal to 0",
        ));
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

    #[test]
    fn leases() {
        let good = json!({"spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40,
            "renewTime": "2025-05-01T10:00:00.000000Z", "leaseTransitions": 0}});
        assert!(lease(&good, None).is_empty());
        assert!(lease(&json!({"spec": {}}), None).is_empty());
        let bad = json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}});
        assert_eq!(
            lines(lease(&bad, Some(&good))),
            [
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
    }
}
