//! Which requests a policy or binding applies to (upstream's `matching.Matcher` over
//! `MatchResources`): `resourceRules` and `excludeResourceRules` (operations, API groups
//! and versions, resources with their subresources, scope, resource names), with
//! `matchPolicy: Equivalent` taking a rule for a resource in another version or group that
//! the server serves the same objects in (the webhooks' equivalents,
//! [`crate::webhook::matching::equivalent_invocation`]), and the `namespaceSelector` and
//! `objectSelector`. A match says how the policy sees the request ([`Versioned`]): its own
//! resource and kind, or the equivalent's that a rule names, with `object` and `oldObject`
//! then converted to it as the server converts them (a custom resource's conversion webhook
//! included: the webhooks' [`Backend`]); `request.kind`/`request.resource` name it and
//! `request.requestKind`/`request.requestResource` the request's, as upstream's
//! `CreateAdmissionRequest` with the equivalent kind and resource.

use std::collections::BTreeMap;

use rkube_apis::resources::Resources;
use rkube_apis::selectors::LabelSelector;
use serde_json::Value;

use crate::attributes::{Attributes, Operation};
use crate::webhook::matching::{
    converted, equivalent_invocation, requested_invocation, Invocation,
};
use crate::webhook::{Backend, CallError};

/// Whether `rule` (a `NamedRuleWithOperations`) covers the request, as a request for
/// `group`/`version`/`resource`.
fn rule_matches(
    rule: &Value,
    a: &Attributes<'_>,
    group: &str,
    version: &str,
    resource: &str,
) -> bool {
    let list = |key: &str| -> Vec<&str> {
        rule[key].as_array().into_iter().flatten().filter_map(Value::as_str).collect()
    };
    let any = |values: &[&str], wanted: &str| values.iter().any(|v| *v == "*" || *v == wanted);
    let operations = list("operations");
    if !any(&operations, a.operation.as_str()) {
        return false;
    }
    if !any(&list("apiGroups"), group) || !any(&list("apiVersions"), version) {
        return false;
    }
    let resource_ok = list("resources").iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        let res_ok = res == "*" || res == resource;
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

/// Upstream's `matchesResourceRules`: the first of `rules` that covers the request as it is,
/// else (`equivalent`) the first that covers an equivalent of its resource in `resources`.
fn rules_invocation(
    rules: &[Value],
    a: &Attributes<'_>,
    equivalent: bool,
    resources: &Resources,
) -> Option<Invocation> {
    let (group, version, resource) = (a.resource.group, a.resource.version, a.resource.resource);
    if rules.iter().any(|r| rule_matches(r, a, group, version, resource)) {
        return Some(requested_invocation(a));
    }
    if !equivalent {
        return None;
    }
    equivalent_invocation(a, resources, rules, |rule, e| {
        rule_matches(rule, a, e.group, e.version, e.plural)
    })
}

/// How the `MatchResources` `m` covers the request's kind of object (its rules, not its
/// selectors), if it does: the request's own resource and kind, or an equivalent's. Without
/// `resourceRules` (a binding's), every kind is covered as it is.
pub(crate) fn rules_match(
    m: &Value,
    a: &Attributes<'_>,
    resources: &Resources,
) -> Option<Invocation> {
    let equivalent = m["matchPolicy"].as_str().unwrap_or("Equivalent") == "Equivalent";
    let rules = |key: &str| m[key].as_array().map(Vec::as_slice).unwrap_or_default();
    if rules_invocation(rules("excludeResourceRules"), a, equivalent, resources).is_some() {
        return None;
    }
    // A binding's `matchResources` without rules leaves the policy's to decide.
    match rules("resourceRules") {
        [] => Some(requested_invocation(a)),
        included => rules_invocation(included, a, equivalent, resources),
    }
}

/// The request as a policy sees it: in the version its rules name.
pub(crate) struct Versioned {
    pub invocation: Invocation,
    pub object: Value,
    pub old_object: Value,
}

impl Versioned {
    /// The request's object (none for a delete) and old object in the invocation's version.
    pub(crate) async fn of(
        a: &Attributes<'_>,
        invocation: Invocation,
        backend: Option<&dyn Backend>,
    ) -> Result<Versioned, CallError> {
        let object = match a.operation {
            Operation::Delete => None,
            _ => a.object(),
        };
        let object = converted(object, &invocation, backend).await?;
        let old_object = converted(a.old_object, &invocation, backend).await?;
        Ok(Versioned {
            invocation,
            object: object.unwrap_or(Value::Null),
            old_object: old_object.unwrap_or(Value::Null),
        })
    }
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
