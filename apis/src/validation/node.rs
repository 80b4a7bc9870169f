//! Validation of node.k8s.io/v1: RuntimeClasses (`ValidateRuntimeClass[Update]`), with
//! upstream's (v1.33) messages and field paths: the handler, the pod overhead and the
//! scheduling constraints; on update the handler is fixed.

use std::collections::BTreeSet;

use serde_json::Value;

use super::core::pod::go_toleration;
use super::values::{
    container_resource_name, invalid_each, items, label_map, quantity_value, str_of, text,
    IMMUTABLE,
};
use super::{name_problems, FieldError, NameRule};
use crate::quantity::Quantity;

/// `ValidateRuntimeClass`: the handler a DNS label, the pod overhead as a container's limits,
/// the scheduling node selector and tolerations; on update the handler is fixed.
pub fn runtime_class(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let handler = str_of(&obj["handler"]);
    invalid_each(name_problems(handler, NameRule::Label), "handler", handler, &mut errors);
    let overhead = &obj["overhead"];
    if !overhead.is_null() {
        overhead_limits(&overhead["podFixed"], "overhead", &mut errors);
    }
    let scheduling = &obj["scheduling"];
    if !scheduling.is_null() {
        if !scheduling["nodeSelector"].is_null() {
            errors.extend(label_map("scheduling.nodeSelector", &scheduling["nodeSelector"]));
        }
        tolerations(items(&scheduling["tolerations"]), "scheduling.tolerations", &mut errors);
    }
    if let Some(old) = old {
        if handler != str_of(&old["handler"]) {
            errors.push(FieldError::invalid("handler", &text(handler), IMMUTABLE));
        }
    }
    errors
}

/// Upstream checks a RuntimeClass's `podFixed` as a container's limits (so the errors are
/// at `overhead.limits[<name>]`): names, quantities, whole hugepages, hugepages with cpu or
/// memory.
fn overhead_limits(list: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let (mut hugepages, mut cpu_or_memory) = (false, false);
    for (name, q) in list.as_object().into_iter().flatten() {
        let field = format!("{at}.limits[{name}]");
        container_resource_name(name, &field, errors);
        quantity_value(name, q, &field, errors);
        if let Some(page) = name.strip_prefix("hugepages-") {
            hugepages = true;
            if let Some(q) = Quantity::parse(q).filter(|q| !divides(page, q.nanos)) {
                let shown = q.canonical();
                let detail = format!("{shown} is not positive integer multiple of {name}");
                errors.push(FieldError::invalid(&field, &text(&shown), &detail));
            }
        }
        cpu_or_memory |= name == "cpu" || name == "memory";
    }
    if hugepages && !cpu_or_memory {
        errors.push(FieldError::forbidden(at, "HugePages require cpu or memory"));
    }
}

/// `IsHugePageResourceValueDivisible`: the amount (rounded up to a whole number) a multiple
/// of the page size named after `hugepages-`.
fn divides(page: &str, nanos: i128) -> bool {
    const NANO: i128 = 1_000_000_000;
    let Some(size) = Quantity::parse(&text(page)).map(|p| p.nanos) else { return false };
    if size <= 0 || size % NANO != 0 {
        return false;
    }
    let whole = nanos.div_euclid(NANO) + i128::from(nanos.rem_euclid(NANO) != 0);
    whole % (size / NANO) == 0
}

/// A RuntimeClass's tolerations: core's `ValidateTolerations` (which v1.33 is handed the path
/// `<at>.tolerations`), then one toleration per key, operator, value and effect.
fn tolerations(list: &[Value], at: &str, errors: &mut Vec<FieldError>) {
    super::core::pod::tolerations(
        &Value::from(list.to_vec()),
        &format!("{at}.tolerations"),
        errors,
    );
    let mut seen = BTreeSet::new();
    for (i, t) in list.iter().enumerate() {
        let key = ["key", "operator", "value", "effect"].map(|f| str_of(&t[f]));
        if !seen.insert(key) {
            errors.push(FieldError::duplicate_shown(format!("{at}[{i}]"), &go_toleration(t)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    #[test]
    fn runtime_classes() {
        let rc = json!({"handler": "runc", "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
            "scheduling": {"nodeSelector": {"runtime": "kata"},
                "tolerations": [{"key": "kata", "operator": "Exists", "effect": "NoSchedule"}]}});
        assert!(runtime_class(&rc, None).is_empty());
        assert!(runtime_class(&rc, Some(&rc)).is_empty());
        let bad = json!({"handler": "Run_C",
            "overhead": {"podFixed": {"pods": "1", "hugepages-2Mi": "3Mi", "memory": "-1"}},
            "scheduling": {"nodeSelector": {"a": "-"},
                "tolerations": [{"operator": "Equal", "value": "v"},
                    {"key": "k", "operator": "Exists", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 5},
                    {"key": "k", "operator": "In", "effect": "Never"},
                    {"key": "k", "operator": "In", "effect": "Never"}]}});
        assert_eq!(
            lines(runtime_class(&bad, Some(&rc))),
            [
                "handler: Invalid value: \"Run_C\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "overhead.limits[pods]: Invalid value: \"pods\": must be a standard resource for containers",
                "overhead.limits[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi",
                "overhead.limits[memory]: Invalid value: \"-1\": must be greater than or equal to 0",
                "scheduling.nodeSelector: Invalid value: \"-\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "scheduling.tolerations.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                "scheduling.tolerations.tolerations[1].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
                "scheduling.tolerations.tolerations[1].operator: Invalid value: core.Toleration{Key:\"k\", Operator:\"Exists\", Value:\"v\", Effect:\"NoSchedule\", TolerationSeconds:(*int64)(0xc000a1c000)}: value must be empty when `operator` is 'Exists'",
                "scheduling.tolerations.tolerations[2].operator: Unsupported value: \"In\": supported values: \"Equal\", \"Exists\"",
                "scheduling.tolerations.tolerations[2].effect: Unsupported value: \"Never\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                "scheduling.tolerations.tolerations[3].operator: Unsupported value: \"In\": supported values: \"Equal\", \"Exists\"",
                "scheduling.tolerations.tolerations[3].effect: Unsupported value: \"Never\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                "scheduling.tolerations[3]: Duplicate value: core.Toleration{Key:\"k\", Operator:\"In\", Value:\"\", Effect:\"Never\", TolerationSeconds:(*int64)(nil)}",
                "handler: Invalid value: \"Run_C\": field is immutable",
            ]
        );
        assert_eq!(
            lines(runtime_class(&json!({"overhead": {"podFixed": {"hugepages-1Gi": "1Gi"}}}), None)),
            [
                "handler: Invalid value: \"\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "overhead: Forbidden: HugePages require cpu or memory",
            ]
        );
    }
}
