//! Resource lists (`{"pods": "2", "requests.cpu": "500m"}`) and upstream's arithmetic on them
//! (`quota.Add`, `Mask`, `LessThanOrEqual`, ...): exact, in each quantity's own format.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::quantity::Quantity;

/// Quantities by resource name, in name order.
pub type ResourceList = BTreeMap<String, Quantity>;

/// The list a JSON object holds (`spec.hard`, `status.used`); values that are not quantities
/// are left out (validation keeps them out of the store).
pub fn from_json(v: &Value) -> ResourceList {
    v.as_object()
        .map(|m| m.iter().filter_map(|(k, q)| Some((k.clone(), Quantity::parse(q)?))).collect())
        .unwrap_or_default()
}

/// The list as JSON, each quantity in its canonical form.
pub fn to_json(list: &ResourceList) -> Value {
    Value::Object(
        list.iter().map(|(k, q)| (k.clone(), Value::String(q.canonical()))).collect::<Map<_, _>>(),
    )
}

/// `a + b`, name by name.
pub fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    add_into(&mut out, b);
    out
}

/// Adds each of `more` into `list` (upstream's `addResourceList`).
pub fn add_into(list: &mut ResourceList, more: &ResourceList) {
    for (name, q) in more {
        let sum = list.get(name).map_or(*q, |have| have.add(q));
        list.insert(name.clone(), sum);
    }
}

/// Raises each of `list`'s quantities to `other`'s where that is greater (upstream's
/// `maxResourceList`).
pub fn max_into(list: &mut ResourceList, other: &ResourceList) {
    for (name, q) in other {
        if list.get(name).is_none_or(|have| q > have) {
            list.insert(name.clone(), *q);
        }
    }
}

/// `a - b`, name by name, never below zero (upstream's `SubtractWithNonNegativeResult`).
pub fn subtract_non_negative(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let zero = Quantity::count(0);
    a.iter()
        .map(|(name, q)| {
            let diff = b.get(name).map_or(*q, |other| q.sub(other));
            (name.clone(), if diff.nanos() < 0 { zero } else { diff })
        })
        .collect()
}

/// The entries of `list` whose names are in `names`.
pub fn mask<S: AsRef<str>>(list: &ResourceList, names: &[S]) -> ResourceList {
    list.iter()
        .filter(|(name, _)| names.iter().any(|n| n.as_ref() == name.as_str()))
        .map(|(name, q)| (name.clone(), *q))
        .collect()
}

/// The names in `a` whose quantity is above `b`'s (names `b` lacks are not limited).
pub fn exceeded(a: &ResourceList, b: &ResourceList) -> Vec<String> {
    a.iter()
        .filter(|(name, q)| b.get(*name).is_some_and(|limit| *q > limit))
        .map(|(n, _)| n.clone())
        .collect()
}

/// The list without its zero quantities.
pub fn remove_zeros(list: &ResourceList) -> ResourceList {
    list.iter().filter(|(_, q)| !q.is_zero()).map(|(n, q)| (n.clone(), *q)).collect()
}

/// The names whose quantity is negative.
pub fn negative(list: &ResourceList) -> Vec<String> {
    list.iter().filter(|(_, q)| q.nanos() < 0).map(|(n, _)| n.clone()).collect()
}

/// Whether both hold the same names with equal quantities.
pub fn equals(a: &ResourceList, b: &ResourceList) -> bool {
    a.len() == b.len() && a.iter().all(|(name, q)| b.get(name) == Some(q))
}

/// Upstream's `prettyPrint` in quota messages: `cpu=1,memory=1Gi`, in name order.
pub fn pretty(list: &ResourceList) -> String {
    list.iter().map(|(name, q)| format!("{name}={q}")).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(v: Value) -> ResourceList {
        from_json(&v)
    }

    #[test]
    fn arithmetic_is_exact_and_keeps_formats() {
        let used = list(json!({"pods": "1", "requests.memory": "1Gi", "requests.cpu": "500m"}));
        let more = list(
            json!({"pods": "1", "requests.memory": "512Mi", "requests.cpu": "500m", "limits.cpu": "2"}),
        );
        let sum = add(&used, &more);
        assert_eq!(
            to_json(&sum),
            json!({"pods": "2", "requests.memory": "1536Mi", "requests.cpu": "1", "limits.cpu": "2"})
        );
        // Zero takes the other's format: 0 + 1Gi prints 1Gi.
        let zero = list(json!({"requests.memory": "0"}));
        assert_eq!(
            to_json(&add(&zero, &list(json!({"requests.memory": "1Gi"})))),
            json!({"requests.memory": "1Gi"})
        );
        assert_eq!(
            to_json(&subtract_non_negative(&more, &sum)),
            json!({"pods": "0", "requests.memory": "0", "requests.cpu": "0", "limits.cpu": "0"})
        );
        let hard = list(json!({"pods": "2", "requests.cpu": "800m"}));
        assert_eq!(exceeded(&sum, &hard), ["requests.cpu"]);
        assert_eq!(to_json(&mask(&sum, &["pods", "nope"])), json!({"pods": "2"}));
        assert_eq!(pretty(&mask(&sum, &["requests.cpu", "pods"])), "pods=2,requests.cpu=1");
        assert!(equals(&list(json!({"cpu": "1000m"})), &list(json!({"cpu": "1"}))));
        assert!(!equals(&list(json!({"cpu": "1"})), &list(json!({"cpu": "1", "pods": "0"}))));
        assert_eq!(remove_zeros(&list(json!({"cpu": "0", "pods": "1"}))).len(), 1);
        assert_eq!(negative(&list(json!({"cpu": "-1", "pods": "1"}))), ["cpu"]);
    }
}
