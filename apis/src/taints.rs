//! Taints and tolerations: upstream's matching rule, shared by the scheduler's
//! TaintToleration plugin and the taint-eviction controller.

use k8s_openapi::api::core::v1::{Taint, Toleration};

/// Whether one toleration tolerates the taint, by upstream's rule: an empty effect or key
/// matches any, an empty operator means `Equal`, and `Exists` ignores the value.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let effect = toleration.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("") {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        "Exists" => true,
        _ => false,
    }
}

/// Whether any of the tolerations tolerates the taint.
pub fn tolerations_tolerate(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| tolerates(t, taint))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(json: serde_json::Value) -> Taint {
        serde_json::from_value(json).unwrap()
    }

    fn toleration(json: serde_json::Value) -> Toleration {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn toleration_matching_follows_upstream() {
        use serde_json::json;
        let t = taint(json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}));
        assert!(tolerates(&toleration(json!({"key": "dedicated", "value": "gpu"})), &t));
        assert!(tolerates(
            &toleration(
                json!({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"})
            ),
            &t
        ));
        assert!(!tolerates(&toleration(json!({"key": "dedicated", "value": "cpu"})), &t));
        assert!(tolerates(&toleration(json!({"key": "dedicated", "operator": "Exists"})), &t));
        assert!(tolerates(&toleration(json!({"operator": "Exists"})), &t), "tolerates everything");
        assert!(!tolerates(
            &toleration(json!({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"})),
            &t
        ));
        assert!(!tolerates(&toleration(json!({"key": "other", "operator": "Exists"})), &t));
        assert!(!tolerates(
            &toleration(json!({"key": "dedicated", "operator": "Gt", "value": "gpu"})),
            &t
        ));
    }
}
