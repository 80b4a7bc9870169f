//! ValidatingAdmissionPolicyBindings (`admissionregistration.k8s.io/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, at, name, st, text, TablePrinter, AGE, NAME};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct ValidatingAdmissionPolicyBindings;

impl Strategy for ValidatingAdmissionPolicyBindings {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        defaults::admissionregistration::validating_admission_policy_binding(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::admissionregistration::validating_admission_policy_binding(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[
        NAME,
        text(
            "PolicyName",
            "PolicyName indicates the policy definition which the policy binding binded to",
        ),
        text("ParamRef", "ParamRef indicates the param resource which sets the configration param"),
        AGE,
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(obj),
        st(obj, &["spec", "policyName"]).into(),
        param_ref(at(obj, &["spec", "paramRef"])).into(),
        age(obj, now),
    ]
}

fn param_ref(param_ref: Option<&Value>) -> String {
    let Some(p) = param_ref.filter(|p| p.is_object()) else {
        return "<unset>".to_string();
    };
    let (name, namespace) = (st(p, &["name"]), st(p, &["namespace"]));
    if !name.is_empty() {
        if namespace.is_empty() {
            // Cannot tell here whether the param is cluster-scoped.
            format!("*/{name}")
        } else {
            format!("{namespace}/{name}")
        }
    } else if let Some(selector) = at(p, &["selector"]).filter(|s| s.is_object()) {
        crate::selectors::labels::go_string(Some(selector))
    } else {
        "<unset>".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn param_ref_selectors_print_as_go_does() {
        let by_selector = json!({"selector": {"matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]}});
        assert_eq!(
            param_ref(Some(&by_selector)),
            "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}"
        );
        assert_eq!(param_ref(Some(&json!({"name": "p"}))), "*/p");
        assert_eq!(param_ref(Some(&json!({"name": "p", "namespace": "ns"}))), "ns/p");
        assert_eq!(param_ref(None), "<unset>");
    }
}
