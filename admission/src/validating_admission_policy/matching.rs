//! Which requests a policy or binding applies to (upstream's `matching.Matcher` over
//! `MatchResources`): `resourceRules` and `excludeResourceRules` (operations, API groups
//! and versions, resources with their subresources, scope, resource names), with
//! `matchPolicy: Equivalent` taking a rule for a resource in one version as a rule for it in
//! every version the server serves it in, and the `namespaceSelector` and `objectSelector`.

use std::collections::BTreeMap;

use rkube_apis::selectors::LabelSelector;
use serde_json::Value;

use crate::attributes::{Attributes, Operation};

/// Whether `rule` (a `NamedRuleWithOperations`) covers the request; `equivalent` lets any
/// version of the rule's resources match.
fn rule_matches(rule: &Value, a: &Attributes<'_>, equivalent: bool) -> bool {
    let list = |key: &str| -> Vec<&str> {
        rule[key].as_array().into_iter().flatten().filter_map(Value::as_str).collect()
    };
    let any = |values: &[&str], wanted: &str| values.iter().any(|v| *v == "*" || *v == wanted);
    let operations = list("operations");
    if !any(&operations, a.operation.as_str()) {
        return false;
    }
    if !any(&list("apiGroups"), a.resource.group) {
        return false;
    }
    if !equivalent && !any(&list("apiVersions"), a.resource.version) {
        return false;
    }
    let resource_ok = list("resources").iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        let res_ok = res == "*" || res == a.resource.resource;
        let sub_ok = match (sub, a.subresource) {
            ("", "") => true,
            ("*", _) => true,
            (s, actual) => s == actual,
        };
        // `*` alone covers resources, not their subresources.
        res_ok && sub_ok && !(res == "*" && sub.is_empty() && !a.subresource.is_empty())
    });
    if !resource_ok {
        return false;
    }
    let scope = rule["scope"].as_str().unwrap_or("*");
    let namespaced = !a.namespace.is_empty();
    let scope_ok = match scope {
        "Cluster" => !namespaced,
        "Namespaced" => namespaced,
        _ => true,
    };
    let names = list("resourceNames");
    scope_ok && (names.is_empty() || names.contains(&a.name))
}

/// Whether the `MatchResources` `m` covers the request's kind of object (its rules, not its
/// selectors). Without `resourceRules` (a binding's), every kind is covered.
pub(crate) fn rules_match(m: &Value, a: &Attributes<'_>) -> bool {
    let equivalent = m["matchPolicy"].as_str().unwrap_or("Equivalent") == "Equivalent";
    let rules = |key: &str| m[key].as_array().into_iter().flatten();
    // A binding's `matchResources` without rules leaves the policy's to decide.
    let unconstrained = m["resourceRules"].as_array().is_none_or(|r| r.is_empty());
    let included = unconstrained || rules("resourceRules").any(|r| rule_matches(r, a, equivalent));
    included && !rules("excludeResourceRules").any(|r| rule_matches(r, a, equivalent))
}

/// The labels of a JSON object.
pub(crate) fn labels_of(object: Option<&Value>) -> BTreeMap<String, String> {
    object
        .and_then(|o| o["metadata"]["labels"].as_object())
        .map(|l| l.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect())
        .unwrap_or_default()
}

/// A selector of a `MatchResources` (absent: everything); `None` when it does not parse.
pub(crate) fn selector(m: &Value, key: &str) -> Option<LabelSelector> {
    match &m[key] {
        Value::Null => Some(LabelSelector::everything()),
        s => LabelSelector::from_api(s).ok(),
    }
}

/// Whether the `objectSelector` takes the object or the old object.
pub(crate) fn object_matches(m: &Value, a: &Attributes<'_>) -> bool {
    let Some(selector) = selector(m, "objectSelector") else { return false };
    if selector.is_empty() {
        return true;
    }
    [a.object(), a.old_object].into_iter().flatten().any(|o| selector.matches(&labels_of(Some(o))))
}

/// Whether a request's namespace is looked at by the `namespaceSelector`: the namespace of a
/// namespaced request, a Namespace itself; other cluster-scoped requests match whatever it
/// says.
pub(crate) fn namespace_labels_needed(a: &Attributes<'_>) -> bool {
    !a.namespace.is_empty() || a.is("", "namespaces")
}

/// The labels the `namespaceSelector` reads for a Namespace request: the object's own.
pub(crate) fn namespace_request_labels(a: &Attributes<'_>) -> BTreeMap<String, String> {
    let object = match a.operation {
        Operation::Delete => a.old_object,
        _ => a.object().or(a.old_object),
    };
    labels_of(object)
}
