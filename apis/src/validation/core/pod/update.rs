//! What a pod update may change. A pod's spec is fixed once created except for container
//! images, a shorter `activeDeadlineSeconds`, added tolerations (or a changed
//! `tolerationSeconds`), removed scheduling gates and a negative grace period raised to 1.
//! While a pod still has scheduling gates, whoever holds a gate (a queueing system such as
//! Kueue) may also narrow where it runs: add to `nodeSelector` and to the expressions of its
//! required node affinity terms (upstream's KEP-3838).

use serde_json::{json, Map, Value};

use crate::gofmt::{go_requirements, go_slice, go_string_map};
use crate::validation::FieldError;

/// Upstream's list of what may change, in the message of a refused update.
const UPDATABLE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// What only a new pod is refused for: ephemeral containers (added later through their
/// subresource) and a node chosen while scheduling gates still hold it back.
pub fn pod_create(pod: &Value) -> Vec<FieldError> {
    let spec = &pod["spec"];
    let mut errors = Vec::new();
    if !list_of(&spec["ephemeralContainers"]).is_empty() {
        errors.push(FieldError::forbidden("spec.ephemeralContainers", "cannot be set on create"));
    }
    if spec["nodeName"].as_str().is_some_and(|n| !n.is_empty())
        && !list_of(&spec["schedulingGates"]).is_empty()
    {
        errors.push(FieldError::forbidden(
            "spec.nodeName",
            "cannot be set until all schedulingGates have been cleared",
        ));
    }
    errors
}

/// The errors of an update of `old` to `new` (both whole pods), in upstream's order.
pub fn pod_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let (spec, was) = (&new["spec"], &old["spec"]);
    let mut errors = Vec::new();
    for list in ["containers", "initContainers"] {
        let (now, before) = (list_of(&spec[list]), list_of(&was[list]));
        if now.len() != before.len() {
            errors.push(FieldError::forbidden(
                format!("spec.{list}"),
                "pod updates may not add or remove containers",
            ));
            return errors;
        }
        for (i, c) in now.iter().enumerate() {
            let image = c["image"].as_str().unwrap_or("");
            if image.is_empty() {
                errors.push(FieldError::required(format!("spec.{list}[{i}].image"), ""));
            } else if image.trim() != image {
                errors.push(FieldError::invalid(
                    format!("spec.{list}[{i}].image"),
                    &c["image"],
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    if let Some(error) =
        active_deadline(&spec["activeDeadlineSeconds"], &was["activeDeadlineSeconds"])
    {
        errors.push(error);
        if !spec["activeDeadlineSeconds"].is_null() {
            return errors;
        }
    }
    errors.extend(only_added_tolerations(&spec["tolerations"], &was["tolerations"]));
    errors.extend(only_deleted_gates(&spec["schedulingGates"], &was["schedulingGates"]));

    let mut munged = spec.clone();
    let before = normalized(was);
    if normalized(&munged) == before {
        return errors;
    }
    for list in ["containers", "initContainers"] {
        if let Some(cs) = munged.get_mut(list).and_then(Value::as_array_mut) {
            for (c, old) in cs.iter_mut().zip(list_of(&was[list])) {
                c["image"] = old["image"].clone();
            }
        }
    }
    for field in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
        set_or_remove(&mut munged, field, &was[field]);
    }
    let old_grace = was["terminationGracePeriodSeconds"].as_i64();
    if old_grace.is_some_and(|g| g < 0) && munged["terminationGracePeriodSeconds"] == 1 {
        munged["terminationGracePeriodSeconds"] = json!(old_grace);
    }
    // Binding (pods/binding) sets nodeName once.
    if was["nodeName"].as_str().is_none_or(str::is_empty) {
        set_or_remove(&mut munged, "nodeName", &was["nodeName"]);
    }
    if !list_of(&was["schedulingGates"]).is_empty() {
        errors.extend(narrowed_placement(&mut munged, was));
    }
    if normalized(&munged) != before {
        errors.push(FieldError::forbidden("spec", UPDATABLE));
    }
    errors
}

fn list_of(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// The spec with null fields dropped: a patch that sets a field to null means absent.
fn normalized(spec: &Value) -> Value {
    match spec {
        Value::Object(m) => Value::Object(
            m.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), v.clone())).collect(),
        ),
        other => other.clone(),
    }
}

fn set_or_remove(spec: &mut Value, field: &str, value: &Value) {
    if let Some(m) = spec.as_object_mut() {
        if value.is_null() {
            m.remove(field);
        } else {
            m.insert(field.to_string(), value.clone());
        }
    }
}

/// `activeDeadlineSeconds` may only shrink, and may not be removed once set.
fn active_deadline(new: &Value, old: &Value) -> Option<FieldError> {
    const PATH: &str = "spec.activeDeadlineSeconds";
    if new.is_null() {
        return (!old.is_null()).then(|| {
            FieldError::invalid(
                PATH,
                &json!(null),
                "must not update from a positive integer to nil value",
            )
        });
    }
    let value = new.as_i64().unwrap_or(-1);
    if !(0..=i64::from(i32::MAX)).contains(&value) {
        return Some(FieldError::invalid(
            PATH,
            new,
            &format!("must be between 0 and {}, inclusive", i32::MAX),
        ));
    }
    old.as_i64()
        .filter(|&old| old < value)
        .map(|_| FieldError::invalid(PATH, new, "must be less than or equal to previous value"))
}

/// Every old toleration must still be there; only its `tolerationSeconds` may differ.
fn only_added_tolerations(new: &Value, old: &Value) -> Option<FieldError> {
    let without_seconds = |t: &Value| {
        let mut t = normalized(t);
        t.as_object_mut().map(|m| m.remove("tolerationSeconds"));
        t
    };
    let new: Vec<Value> = list_of(new).iter().map(without_seconds).collect();
    list_of(old).iter().any(|t| !new.contains(&without_seconds(t))).then(|| {
        FieldError::forbidden(
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        )
    })
}

/// Scheduling gates may be removed, never added.
fn only_deleted_gates(new: &Value, old: &Value) -> Vec<FieldError> {
    let old: Vec<&Value> = list_of(old).iter().map(|g| &g["name"]).collect();
    list_of(new)
        .iter()
        .enumerate()
        .filter(|(_, g)| !old.contains(&&g["name"]))
        .map(|(i, g)| {
            FieldError::forbidden(
                format!("spec.schedulingGates[{i}].name"),
                &format!(
                    "only deletion is allowed, but found new scheduling gate '{}'",
                    g["name"].as_str().unwrap_or_default()
                ),
            )
        })
        .collect()
}

/// A gated pod's `nodeSelector` and required node affinity may grow: checks that they only
/// grew and takes them back from `old` into `munged`, so that what is left to compare is the
/// rest of the spec.
fn narrowed_placement(munged: &mut Value, old: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let selector = munged["nodeSelector"].clone();
    if normalized(&selector) != normalized(&old["nodeSelector"]) {
        let kept = old["nodeSelector"]
            .as_object()
            .is_none_or(|m| m.iter().all(|(k, v)| selector.get(k) == Some(v)));
        if !kept {
            errors.push(FieldError::invalid_shown(
                "spec.nodeSelector",
                &go_string_map(&selector),
                "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
            ));
        }
        set_or_remove(munged, "nodeSelector", &old["nodeSelector"]);
    }
    let old_affinity = &old["affinity"]["nodeAffinity"];
    if munged["affinity"]["nodeAffinity"] != *old_affinity {
        errors.extend(node_affinity_additions(&munged["affinity"]["nodeAffinity"], old_affinity));
        if old_affinity.is_null() {
            if let Some(a) = munged.get_mut("affinity").and_then(Value::as_object_mut) {
                a.remove("nodeAffinity");
            }
        } else {
            if !munged["affinity"].is_object() {
                munged["affinity"] = json!({});
            }
            munged["affinity"]["nodeAffinity"] = old_affinity.clone();
        }
        // An affinity left empty by taking node affinity out is the absent one it was.
        if old["affinity"].is_null() && munged["affinity"].as_object().is_some_and(Map::is_empty) {
            set_or_remove(munged, "affinity", &Value::Null);
        }
    }
    errors
}

/// Upstream's `validateNodeAffinityMutation`: the required terms, once there are some, keep
/// their number, and each term keeps its expressions and fields as a prefix.
fn node_affinity_additions(new: &Value, old: &Value) -> Vec<FieldError> {
    const PATH: &str =
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    let required = &old["requiredDuringSchedulingIgnoredDuringExecution"];
    let old_terms = list_of(&required["nodeSelectorTerms"]);
    if required.is_null() || old_terms.is_empty() {
        return Vec::new();
    }
    let new_terms_value =
        &new["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    let new_terms = list_of(new_terms_value);
    if new_terms.len() != old_terms.len() {
        let shown = go_slice("core.NodeSelectorTerm", new_terms_value, go_term);
        return vec![FieldError::invalid_shown(
            PATH,
            &shown,
            "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
        )];
    }
    old_terms
        .iter()
        .zip(new_terms)
        .enumerate()
        .filter(|(_, (old, new))| !only_additions(new, old))
        .map(|(i, (_, new))| {
            FieldError::invalid_shown(
                format!("{PATH}[{i}]"),
                &go_term(new),
                "only additions are allowed (no mutations or deletions)",
            )
        })
        .collect()
}

/// Whether `new` keeps `old`'s match expressions and fields, in order, as its first entries.
fn only_additions(new: &Value, old: &Value) -> bool {
    let (old_exprs, old_fields) = (list_of(&old["matchExpressions"]), list_of(&old["matchFields"]));
    let (new_exprs, new_fields) = (list_of(&new["matchExpressions"]), list_of(&new["matchFields"]));
    // An empty term matches nothing; filling it in would widen the placement.
    if old_exprs.is_empty() && old_fields.is_empty() {
        return new_exprs.is_empty() && new_fields.is_empty();
    }
    new_exprs.starts_with(old_exprs) && new_fields.starts_with(old_fields)
}

/// A `core.NodeSelectorTerm` as Go's `%#v` prints it.
fn go_term(term: &Value) -> String {
    const REQUIREMENT: &str = "core.NodeSelectorRequirement";
    format!(
        "core.NodeSelectorTerm{{MatchExpressions:{}, MatchFields:{}}}",
        go_requirements(&term["matchExpressions"], REQUIREMENT),
        go_requirements(&term["matchFields"], REQUIREMENT)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(spec: Value) -> Value {
        let mut spec = spec;
        spec["containers"] = json!([{"name": "c", "image": "busybox:1.36"}]);
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    fn lines(new: Value, old: Value) -> Vec<String> {
        pod_update(&pod(new), &pod(old)).iter().map(FieldError::line).collect()
    }

    #[test]
    fn new_pods_may_not_be_placed_while_gated() {
        let mut new = pod(json!({"nodeName": "n1", "schedulingGates": [{"name": "g"}]}));
        new["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox"}]);
        assert_eq!(
            pod_create(&new).iter().map(FieldError::line).collect::<Vec<_>>(),
            [
                "spec.ephemeralContainers: Forbidden: cannot be set on create",
                "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"
            ]
        );
        assert!(pod_create(&pod(json!({"nodeName": "n1"}))).is_empty());
    }

    #[test]
    fn images_deadlines_and_grace_periods() {
        let mut new = pod(json!({}));
        new["spec"]["containers"][0]["image"] = json!("busybox:1.37");
        assert!(pod_update(&new, &pod(json!({}))).is_empty());
        assert!(lines(json!({"activeDeadlineSeconds": 5}), json!({"activeDeadlineSeconds": 10}))
            .is_empty());
        assert_eq!(
            lines(json!({"activeDeadlineSeconds": 20}), json!({"activeDeadlineSeconds": 10})),
            ["spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal to previous value"]
        );
        assert_eq!(
            lines(json!({}), json!({"activeDeadlineSeconds": 10})),
            ["spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value"]
        );
        assert!(lines(
            json!({"terminationGracePeriodSeconds": 1}),
            json!({"terminationGracePeriodSeconds": -5})
        )
        .is_empty());
        assert_eq!(
            lines(
                json!({"terminationGracePeriodSeconds": 2}),
                json!({"terminationGracePeriodSeconds": 30})
            ),
            [format!("spec: Forbidden: {UPDATABLE}")]
        );
        let mut two = pod(json!({}));
        two["spec"]["containers"] =
            json!([{"name": "c", "image": "a"}, {"name": "d", "image": "b"}]);
        assert_eq!(
            pod_update(&two, &pod(json!({}))).iter().map(FieldError::line).collect::<Vec<_>>(),
            ["spec.containers: Forbidden: pod updates may not add or remove containers"]
        );
    }

    #[test]
    fn tolerations_may_be_added_and_their_seconds_changed() {
        let t = json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10});
        let other = json!({"key": "o", "operator": "Exists"});
        let mut longer = t.clone();
        longer["tolerationSeconds"] = json!(60);
        assert!(
            lines(json!({"tolerations": [other, longer]}), json!({"tolerations": [t]})).is_empty()
        );
        assert_eq!(
            lines(json!({"tolerations": [{"key": "k2", "operator": "Exists"}]}), json!({"tolerations": [t]})),
            ["spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"]
        );
    }

    #[test]
    fn gates_may_only_be_removed_and_gated_pods_may_narrow_their_placement() {
        let gated = |extra: Value| {
            let mut spec = json!({"schedulingGates": [{"name": "g1"}, {"name": "g2"}]});
            spec.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            spec
        };
        assert!(lines(json!({"schedulingGates": [{"name": "g2"}]}), gated(json!({}))).is_empty());
        assert!(lines(json!({}), gated(json!({}))).is_empty());
        assert_eq!(
            lines(json!({"schedulingGates": [{"name": "g1"}, {"name": "g3"}]}), gated(json!({}))),
            ["spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'g3'"]
        );
        // Without gates, nothing about placement may change.
        assert_eq!(
            lines(json!({"nodeSelector": {"a": "b"}}), json!({})),
            [format!("spec: Forbidden: {UPDATABLE}")]
        );
        assert!(lines(
            gated(json!({"nodeSelector": {"a": "b", "c": "d"}})),
            gated(json!({"nodeSelector": {"a": "b"}}))
        )
        .is_empty());
        assert_eq!(
            lines(
                gated(json!({"nodeSelector": {"a": "z"}})),
                gated(json!({"nodeSelector": {"a": "b"}}))
            ),
            [
                r#"spec.nodeSelector: Invalid value: map[string]string{"a":"z"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"#
            ]
        );
        let term = |exprs: Value| json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}});
        let a = json!({"key": "a", "operator": "Exists"});
        let b = json!({"key": "b", "operator": "In", "values": ["x"]});
        assert!(lines(
            gated(json!({"affinity": term(json!([a, b]))})),
            gated(json!({"affinity": term(json!([a]))}))
        )
        .is_empty());
        // Setting node affinity where there was none is fine too.
        assert!(lines(gated(json!({"affinity": term(json!([a]))})), gated(json!({}))).is_empty());
        assert_eq!(
            lines(
                gated(json!({"affinity": term(json!([b]))})),
                gated(json!({"affinity": term(json!([a]))}))
            ),
            [
                r#"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]: Invalid value: core.NodeSelectorTerm{MatchExpressions:[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{Key:"b", Operator:"In", Values:[]string{"x"}}}, MatchFields:[]core.NodeSelectorRequirement(nil)}: only additions are allowed (no mutations or deletions)"#
            ]
        );
        assert_eq!(
            lines(gated(json!({})), gated(json!({"affinity": term(json!([a]))}))),
            ["spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Invalid value: []core.NodeSelectorTerm(nil): no additions/deletions to non-empty NodeSelectorTerms list are allowed"]
        );
    }
}
