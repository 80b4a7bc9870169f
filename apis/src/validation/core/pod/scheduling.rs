//! Where a pod may run: `affinity` (node affinity, pod affinity and anti-affinity terms) and
//! `topologySpreadConstraints`, with upstream's messages, field paths and error order.
//!
//! Upstream (v1.33) checks label values in required node affinity on create (not in
//! preferred terms, which may still match a single node) and label selectors strictly; it
//! merges a pod's `matchLabelKeys` of affinity terms into their selectors before validating,
//! which rkube does not, so the "exists in both" check here sees only what the user wrote.

use super::*;
use crate::validation::values::label_selector;

const SPREAD_ACTIONS: [&str; 2] = ["DoNotSchedule", "ScheduleAnyway"];
const INCLUSION_POLICIES: [&str; 2] = ["Honor", "Ignore"];
const NOT_POSITIVE: &str = "must be greater than zero";
const WEIGHT_RANGE: &str = "must be in the range 1-100";
const KEYS_WITHOUT_SELECTOR: &str = "must not be specified when labelSelector is not set";
const IN_SELECTOR_TOO: &str = "exists in both matchLabelKeys and labelSelector";

/// The pod spec's `affinity` (`at` is the spec's path).
pub(super) fn affinity(spec: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let affinity = &spec["affinity"];
    if !affinity.is_object() {
        return;
    }
    let at = format!("{at}.affinity");
    let node = &affinity["nodeAffinity"];
    if node.is_object() {
        node_affinity(node, &format!("{at}.nodeAffinity"), errors);
    }
    for kind in ["podAffinity", "podAntiAffinity"] {
        let pods = &affinity[kind];
        if pods.is_object() {
            pod_affinity(pods, &format!("{at}.{kind}"), errors);
        }
    }
}

fn node_affinity(na: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let required = &na["requiredDuringSchedulingIgnoredDuringExecution"];
    if !required.is_null() {
        let at = format!("{at}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
        let terms = required["nodeSelectorTerms"].as_array().map(Vec::as_slice).unwrap_or_default();
        if terms.is_empty() {
            errors.push(FieldError::required(&at, "must have at least one node selector term"));
        }
        for (i, term) in terms.iter().enumerate() {
            node_selector_term(term, &format!("{at}[{i}]"), true, errors);
        }
    }
    let preferred = &na["preferredDuringSchedulingIgnoredDuringExecution"];
    for (i, term) in items(preferred).iter().enumerate() {
        let at = format!("{at}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
        weight(term, &at, errors);
        // Preferred terms keep invalid values: they can still match when there is one node.
        node_selector_term(&term["preference"], &format!("{at}.preference"), false, errors);
    }
}

/// A node selector term: label expressions (their values checked only for required terms)
/// and field expressions (only `metadata.name`, with one value).
fn node_selector_term(term: &Value, at: &str, check_values: bool, errors: &mut Vec<FieldError>) {
    for (j, r) in items(&term["matchExpressions"]).iter().enumerate() {
        let at = format!("{at}.matchExpressions[{j}]");
        let values = items(&r["values"]);
        match str_of(&r["operator"]) {
            "In" | "NotIn" if values.is_empty() => errors.push(FieldError::required(
                format!("{at}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errors.push(FieldError::forbidden(
                format!("{at}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "Gt" | "Lt" if values.len() != 1 => errors.push(FieldError::required(
                format!("{at}.values"),
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
            _ => errors.push(FieldError::invalid(
                format!("{at}.operator"),
                &string(&r["operator"]),
                "not a valid selector operator",
            )),
        }
        label_name(&r["key"], &format!("{at}.key"), errors);
        if check_values {
            for (k, v) in values.iter().enumerate() {
                for p in label_value_problems(str_of(v)) {
                    errors.push(FieldError::invalid(format!("{at}.values[{k}]"), &string(v), &p));
                }
            }
        }
    }
    for (j, r) in items(&term["matchFields"]).iter().enumerate() {
        let at = format!("{at}.matchFields[{j}]");
        let values = items(&r["values"]);
        match str_of(&r["operator"]) {
            "In" | "NotIn" if values.len() != 1 => errors.push(FieldError::required(
                format!("{at}.values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            )),
            "In" | "NotIn" => {}
            _ => errors.push(FieldError::invalid(
                format!("{at}.operator"),
                &string(&r["operator"]),
                "not a valid selector operator",
            )),
        }
        if str_of(&r["key"]) == "metadata.name" {
            for (k, v) in values.iter().enumerate() {
                for p in name_problems(str_of(v), NameRule::Subdomain) {
                    errors.push(FieldError::invalid(format!("{at}.values[{k}]"), &string(v), &p));
                }
            }
        } else {
            errors.push(FieldError::invalid(
                format!("{at}.key"),
                &string(&r["key"]),
                "not a valid field selector key",
            ));
        }
    }
}

/// `podAffinity` or `podAntiAffinity`: required terms, then weighted preferred terms.
fn pod_affinity(pods: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let required = &pods["requiredDuringSchedulingIgnoredDuringExecution"];
    for (i, term) in items(required).iter().enumerate() {
        pod_affinity_term(
            term,
            &format!("{at}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"),
            errors,
        );
    }
    let preferred = &pods["preferredDuringSchedulingIgnoredDuringExecution"];
    for (i, term) in items(preferred).iter().enumerate() {
        let at = format!("{at}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
        weight(term, &at, errors);
        pod_affinity_term(&term["podAffinityTerm"], &format!("{at}.podAffinityTerm"), errors);
    }
}

/// One pod affinity term, in upstream's order: selectors, namespaces, label keys, topology key.
fn pod_affinity_term(term: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let selector = &term["labelSelector"];
    errors.extend(label_selector(&format!("{at}.labelSelector"), selector));
    errors.extend(label_selector(&format!("{at}.namespaceSelector"), &term["namespaceSelector"]));
    // Upstream reports every bad namespace at `namespace` (singular, no index).
    for ns in items(&term["namespaces"]) {
        for p in name_problems(str_of(ns), NameRule::Label) {
            errors.push(FieldError::invalid(format!("{at}.namespace"), &string(ns), &p));
        }
    }

    let match_keys = items(&term["matchLabelKeys"]);
    let mismatch_keys = items(&term["mismatchLabelKeys"]);
    for (field, keys) in [("matchLabelKeys", match_keys), ("mismatchLabelKeys", mismatch_keys)] {
        if keys.is_empty() {
            continue;
        }
        if selector.is_null() {
            errors.push(FieldError::forbidden(format!("{at}.{field}"), KEYS_WITHOUT_SELECTOR));
            continue;
        }
        for (i, key) in keys.iter().enumerate() {
            label_name(key, &format!("{at}.{field}[{i}]"), errors);
        }
    }
    if !selector.is_null() {
        // A matchLabelKeys key the selector already names, found when an expression repeats
        // a key seen before (upstream expects the merged expressions here). Upstream's path
        // lacks the `matchLabelKeys` step; kept as it prints it.
        let last_index = |key: &str| match_keys.iter().rposition(|k| str_of(k) == key);
        let mut seen: HashSet<&str> = selector["matchLabels"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k.as_str())
            .collect();
        for e in items(&selector["matchExpressions"]) {
            let key = str_of(&e["key"]);
            if let (Some(i), true) = (last_index(key), seen.contains(key)) {
                errors.push(FieldError::invalid(
                    format!("{at}[{i}]"),
                    &string(&e["key"]),
                    IN_SELECTOR_TOO,
                ));
            }
            seen.insert(key);
        }
    }
    let mismatch: HashSet<&str> = mismatch_keys.iter().map(str_of).collect();
    for (i, key) in match_keys.iter().enumerate() {
        if mismatch.contains(str_of(key)) {
            errors.push(FieldError::invalid(
                format!("{at}.matchLabelKeys[{i}]"),
                &string(key),
                "exists in both matchLabelKeys and mismatchLabelKeys",
            ));
        }
    }

    let topology_key = &term["topologyKey"];
    if str_of(topology_key).is_empty() {
        errors.push(FieldError::required(format!("{at}.topologyKey"), "can not be empty"));
    }
    label_name(topology_key, &format!("{at}.topologyKey"), errors);
}

/// The pod spec's `topologySpreadConstraints` (`at` is the spec's path).
pub(super) fn topology_spread_constraints(spec: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let constraints = items(&spec["topologySpreadConstraints"]);
    for (i, c) in constraints.iter().enumerate() {
        let at = format!("{at}.topologySpreadConstraints[{i}]");
        let max_skew = c["maxSkew"].as_i64().unwrap_or(0);
        if max_skew <= 0 {
            errors.push(FieldError::invalid(
                format!("{at}.maxSkew"),
                &max_skew.into(),
                NOT_POSITIVE,
            ));
        }
        let key = str_of(&c["topologyKey"]);
        if key.is_empty() {
            errors.push(FieldError::required(format!("{at}.topologyKey"), "can not be empty"));
        }
        let action = str_of(&c["whenUnsatisfiable"]);
        if !SPREAD_ACTIONS.contains(&action) {
            errors.push(FieldError::unsupported(
                format!("{at}.whenUnsatisfiable"),
                &string(&c["whenUnsatisfiable"]),
                &SPREAD_ACTIONS,
            ));
        }
        // Reported at the first of each repeated {topologyKey, whenUnsatisfiable} pair.
        let repeated = constraints[i + 1..].iter().any(|other| {
            str_of(&other["topologyKey"]) == key && str_of(&other["whenUnsatisfiable"]) == action
        });
        if repeated {
            errors.push(FieldError::duplicate(
                format!("{at}.{{topologyKey, whenUnsatisfiable}}"),
                &Value::String(format!("{{{key}, {action}}}")),
            ));
        }
        if let Some(min) = c["minDomains"].as_i64() {
            let shown: Value = min.into();
            if min <= 0 {
                errors.push(FieldError::invalid(format!("{at}.minDomains"), &shown, NOT_POSITIVE));
            }
            if action != "DoNotSchedule" {
                errors.push(FieldError::invalid(
                    format!("{at}.minDomains"),
                    &shown,
                    &format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                    ),
                ));
            }
        }
        for policy in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            errors.extend(one_of(&format!("{at}.{policy}"), &c[policy], &INCLUSION_POLICIES));
        }
        let selector = &c["labelSelector"];
        let keys = items(&c["matchLabelKeys"]);
        if !keys.is_empty() {
            let at = format!("{at}.matchLabelKeys");
            if selector.is_null() {
                errors.push(FieldError::forbidden(&at, KEYS_WITHOUT_SELECTOR));
            }
            let in_selector: HashSet<&str> = selector["matchLabels"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k.as_str())
                .chain(items(&selector["matchExpressions"]).iter().map(|e| str_of(&e["key"])))
                .collect();
            for (j, key) in keys.iter().enumerate() {
                label_name(key, &format!("{at}[{j}]"), errors);
                if in_selector.contains(str_of(key)) {
                    errors.push(FieldError::invalid(
                        format!("{at}[{j}]"),
                        &string(key),
                        IN_SELECTOR_TOO,
                    ));
                }
            }
        }
        errors.extend(label_selector(&format!("{at}.labelSelector"), selector));
    }
}

/// A preferred term's weight: 1 to 100 (unset is 0).
fn weight(term: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let weight = term["weight"].as_i64().unwrap_or(0);
    if !(1..=100).contains(&weight) {
        errors.push(FieldError::invalid(format!("{at}.weight"), &weight.into(), WEIGHT_RANGE));
    }
}

/// A label key (upstream's `ValidateLabelName`): one error per problem, unset shown as `""`.
fn label_name(key: &Value, at: &str, errors: &mut Vec<FieldError>) {
    for p in qualified_name_problems(str_of(key)) {
        errors.push(FieldError::invalid(at, &string(key), &p));
    }
}

#[cfg(test)]
mod tests {
    use super::super::pod_spec;
    use super::*;
    use serde_json::json;

    const LABEL: &str = crate::validation::meta::LABEL_MSG;
    const SUBDOMAIN: &str = crate::validation::meta::SUBDOMAIN_MSG;
    const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    /// A pod spec as `kubectl apply` sends it after defaulting, with `extra` merged in.
    fn spec(extra: Value) -> Value {
        let mut spec = json!({"containers": [{"name": "app", "image": "nginx:1.27",
            "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File", "resources": {}}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "securityContext": {}, "schedulerName": "default-scheduler",
            "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority"});
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        spec
    }

    fn lines(extra: Value) -> Vec<String> {
        pod_spec(&spec(extra), "spec").iter().map(FieldError::line).collect()
    }

    fn node_terms(terms: Value) -> Value {
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": terms}}}})
    }

    #[test]
    fn realistic_scheduling_constraints_are_valid() {
        let extra = json!({
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["a", "b"]}]},
                        {"matchExpressions": [{"key": "node.kubernetes.io/gpu-count", "operator": "Gt", "values": ["1"]},
                                              {"key": "spot", "operator": "DoesNotExist"}],
                         "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}]}]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 50, "preference": {"matchExpressions": [
                            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a"]}]}}]},
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "cache"}},
                        "namespaces": ["default", "cache-system"],
                        "topologyKey": "kubernetes.io/hostname"}}]},
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "namespaceSelector": {},
                        "matchLabelKeys": ["pod-template-hash"],
                        "mismatchLabelKeys": ["tenant"],
                        "topologyKey": "kubernetes.io/hostname"}]}},
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                 "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}},
                 "minDomains": 3, "nodeAffinityPolicy": "Honor", "nodeTaintsPolicy": "Ignore",
                 "matchLabelKeys": ["pod-template-hash"]},
                {"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone",
                 "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}]
        });
        assert_eq!(lines(extra.clone()), Vec::<String>::new());
        assert!(pod_spec(&spec(extra), "spec.template.spec").is_empty());
        // The manifests of the scheduler's system tests.
        assert_eq!(
            lines(
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "NotIn", "values": ["ssd"]}]}]}}}})
            ),
            Vec::<String>::new()
        );
        assert_eq!(lines(json!({"affinity": {}})), Vec::<String>::new());
    }

    #[test]
    fn node_selector_requirements() {
        let req = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
        assert_eq!(
            lines(node_terms(json!([]))),
            [format!("{req}: Required value: must have at least one node selector term")]
        );
        assert_eq!(
            lines(
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}})
            ),
            [format!("{req}: Required value: must have at least one node selector term")]
        );
        let terms = json!([
            {"matchExpressions": [
                {"key": "zone", "operator": "In"},
                {"key": "zone", "operator": "Exists", "values": ["a"]},
                {"key": "cpus", "operator": "Gt", "values": ["1", "2"]},
                {"key": "cpus", "operator": "Lt"}]},
            {"matchExpressions": [
                {"key": "bad key", "operator": "Equals", "values": ["-a", "ok"]},
                {"operator": "DoesNotExist"}]}]);
        let p = format!("{req}[0].matchExpressions");
        let q = format!("{req}[1].matchExpressions");
        assert_eq!(
            lines(node_terms(terms)),
            [
                format!("{p}[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
                format!("{p}[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
                format!("{p}[2].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"),
                format!("{p}[3].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"),
                format!("{q}[0].operator: Invalid value: \"Equals\": not a valid selector operator"),
                format!("{q}[0].key: Invalid value: \"bad key\": {NAME_PART}"),
                format!("{q}[0].values[0]: Invalid value: \"-a\": {LABEL_VALUE}"),
                format!("{q}[1].key: Invalid value: \"\": name part must be non-empty"),
                format!("{q}[1].key: Invalid value: \"\": {NAME_PART}"),
            ]
        );
    }

    #[test]
    fn node_selector_field_requirements() {
        let terms = json!([{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["a", "b"]},
            {"key": "metadata.namespace", "operator": "Exists"},
            {"key": "metadata.name", "operator": "NotIn", "values": ["Node_1"]}]}]);
        let p = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields";
        assert_eq!(
            lines(node_terms(terms)),
            [
                format!("{p}[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector"),
                format!("{p}[1].operator: Invalid value: \"Exists\": not a valid selector operator"),
                format!("{p}[1].key: Invalid value: \"metadata.namespace\": not a valid field selector key"),
                format!("{p}[2].values[0]: Invalid value: \"Node_1\": {SUBDOMAIN}"),
            ]
        );
    }

    #[test]
    fn preferred_node_terms_check_weight_but_not_values() {
        let extra = json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 0, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["-a"]}]}},
            {"weight": 101, "preference": {"matchExpressions": [{"key": "zone", "operator": "Lt"}]}},
            {"preference": {}}]}}});
        let p = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution";
        assert_eq!(
            lines(extra),
            [
                format!("{p}[0].weight: Invalid value: 0: must be in the range 1-100"),
                format!("{p}[1].weight: Invalid value: 101: must be in the range 1-100"),
                format!("{p}[1].preference.matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"),
                format!("{p}[2].weight: Invalid value: 0: must be in the range 1-100"),
            ]
        );
    }

    #[test]
    fn pod_affinity_terms() {
        let extra = json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "-web"},
                               "matchExpressions": [{"key": "tier", "operator": "Is"}]},
             "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["x"]}]},
             "namespaces": ["default", "Team_A"],
             "topologyKey": "kubernetes.io/hostname"},
            {"labelSelector": {"matchLabels": {"app": "web"}}}]}}});
        let p = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution";
        assert_eq!(
            lines(extra),
            [
                format!("{p}[0].labelSelector.matchLabels: Invalid value: \"-web\": {LABEL_VALUE}"),
                format!("{p}[0].labelSelector.matchExpressions[0].operator: Invalid value: \"Is\": not a valid selector operator"),
                format!("{p}[0].namespaceSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
                format!("{p}[0].namespace: Invalid value: \"Team_A\": {LABEL}"),
                format!("{p}[1].topologyKey: Required value: can not be empty"),
                format!("{p}[1].topologyKey: Invalid value: \"\": name part must be non-empty"),
                format!("{p}[1].topologyKey: Invalid value: \"\": {NAME_PART}"),
            ]
        );
    }

    #[test]
    fn pod_anti_affinity_weights_and_label_keys() {
        let extra = json!({"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"matchLabelKeys": ["pod-template-hash"], "mismatchLabelKeys": ["tenant"],
                 "topologyKey": "zone"},
                {"labelSelector": {"matchLabels": {"app": "web"},
                                   "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                 "matchLabelKeys": ["bad key", "app", "tenant"], "mismatchLabelKeys": ["tenant"],
                 "topologyKey": "zone"}],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 200, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname/x"}}]}}});
        let p = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution";
        let w = "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]";
        assert_eq!(
            lines(extra),
            [
                format!("{p}[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"),
                format!("{p}[0].mismatchLabelKeys: Forbidden: must not be specified when labelSelector is not set"),
                format!("{p}[1].matchLabelKeys[0]: Invalid value: \"bad key\": {NAME_PART}"),
                // Upstream's path for this one has no `matchLabelKeys` step.
                format!("{p}[1][1]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector"),
                format!("{p}[1].matchLabelKeys[2]: Invalid value: \"tenant\": exists in both matchLabelKeys and mismatchLabelKeys"),
                format!("{w}.weight: Invalid value: 200: must be in the range 1-100"),
                format!("{w}.podAffinityTerm.topologyKey: Invalid value: \"kubernetes.io/hostname/x\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"),
            ]
        );
    }

    #[test]
    fn topology_spread_constraint_fields() {
        let extra = json!({"topologySpreadConstraints": [
            {"maxSkew": 0, "whenUnsatisfiable": "Never", "nodeAffinityPolicy": "Always",
             "nodeTaintsPolicy": "honor"},
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 0},
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "minDomains": -1,
             "labelSelector": {"matchLabels": {"app": "web"}}},
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["we b"]}]}}]});
        let p = "spec.topologySpreadConstraints";
        assert_eq!(
            lines(extra),
            [
                format!("{p}[0].maxSkew: Invalid value: 0: must be greater than zero"),
                format!("{p}[0].topologyKey: Required value: can not be empty"),
                format!("{p}[0].whenUnsatisfiable: Unsupported value: \"Never\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""),
                format!("{p}[0].nodeAffinityPolicy: Unsupported value: \"Always\": supported values: \"Honor\", \"Ignore\""),
                format!("{p}[0].nodeTaintsPolicy: Unsupported value: \"honor\": supported values: \"Honor\", \"Ignore\""),
                format!("{p}[1].minDomains: Invalid value: 0: must be greater than zero"),
                format!("{p}[1].minDomains: Invalid value: 0: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"),
                format!("{p}[2].{{topologyKey, whenUnsatisfiable}}: Duplicate value: \"{{zone, DoNotSchedule}}\""),
                format!("{p}[2].minDomains: Invalid value: -1: must be greater than zero"),
                format!("{p}[3].labelSelector.matchExpressions[0].values[0]: Invalid value: \"we b\": {LABEL_VALUE}"),
            ]
        );
        // A missing whenUnsatisfiable is shown as "" (and named so in the minDomains message).
        assert_eq!(
            lines(json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "minDomains": 2}]})),
            [
                format!("{p}[0].whenUnsatisfiable: Unsupported value: \"\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""),
                format!("{p}[0].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not "),
            ]
        );
    }

    #[test]
    fn topology_spread_match_label_keys() {
        let extra = json!({"topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "matchLabelKeys": ["pod-template-hash", "/x"]},
            {"maxSkew": 1, "topologyKey": "host", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "web"},
                               "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
             "matchLabelKeys": ["app", "tier", "pod-template-hash"]}]});
        let p = "spec.topologySpreadConstraints";
        assert_eq!(
            lines(extra),
            [
                format!("{p}[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"),
                format!("{p}[0].matchLabelKeys[1]: Invalid value: \"/x\": prefix part must be non-empty"),
                format!("{p}[1].matchLabelKeys[0]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector"),
                format!("{p}[1].matchLabelKeys[1]: Invalid value: \"tier\": exists in both matchLabelKeys and labelSelector"),
            ]
        );
    }

    #[test]
    fn errors_keep_upstream_pod_spec_order() {
        // nodeSelector, securityContext, affinity, dnsConfig, topologySpreadConstraints,
        // serviceAccountName.
        let extra = json!({
            "serviceAccountName": "Default",
            "topologySpreadConstraints": [{"maxSkew": -1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
            "dnsPolicy": "None",
            "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{}]}},
            "nodeSelector": {"a": "-"}});
        let fields: Vec<String> = lines(extra)
            .iter()
            .map(|l| l.split(": ").next().unwrap_or_default().to_string())
            .collect();
        assert_eq!(
            fields,
            [
                "spec.nodeSelector",
                "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
                "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
                "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
                "spec.dnsConfig",
                "spec.topologySpreadConstraints[0].maxSkew",
                "spec.serviceAccountName",
            ]
        );
        // Templates get the same checks at their own path.
        let errors = pod_spec(
            &spec(json!({"topologySpreadConstraints": [{"maxSkew": 1}]})),
            "spec.template.spec",
        );
        assert_eq!(errors[0].field, "spec.template.spec.topologySpreadConstraints[0].topologyKey");
    }
}
