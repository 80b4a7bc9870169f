//! Whether a node matches a pod's `nodeSelector` and required node affinity, as upstream's
//! `nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)` decides it. The scheduler's
//! `NodeAffinity` plugin and the DaemonSet controller (which must place daemon pods on exactly
//! the nodes the scheduler would accept) share it, so the two cannot disagree on a node.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};

/// The only node field a `matchFields` requirement can name.
pub const NODE_NAME_FIELD: &str = "metadata.name";

/// Whether a node with `labels` and name `node_name` has every label of `node_selector` and
/// matches one term of the `required` node affinity. Terms are ORed; a selector with no terms
/// matches no node, and a malformed term matches nothing.
pub fn matches_required(
    node_selector: Option<&BTreeMap<String, String>>,
    required: Option<&NodeSelector>,
    labels: &BTreeMap<String, String>,
    node_name: &str,
) -> bool {
    if let Some(selector) = node_selector {
        if !selector.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            return false;
        }
    }
    required.is_none_or(|r| {
        r.node_selector_terms.iter().any(|t| term_matches(t, labels, node_name) == Some(true))
    })
}

/// Whether a node selector term matches the node: its label expressions and its field
/// expressions all hold. An empty term matches nothing, and so (as upstream) does a term
/// that is malformed (`None`).
pub fn term_matches(
    term: &NodeSelectorTerm,
    labels: &BTreeMap<String, String>,
    node_name: &str,
) -> Option<bool> {
    let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
    let fields = term.match_fields.as_deref().unwrap_or(&[]);
    if exprs.is_empty() && fields.is_empty() {
        return Some(false);
    }
    let mut all = true;
    for req in exprs {
        all &= label_requirement_matches(req, labels)?;
    }
    for req in fields {
        all &= field_requirement_matches(req, node_name)?;
    }
    Some(all)
}

/// One label requirement, with the validation upstream's label selectors apply: `None` when
/// it is malformed (missing values for In/NotIn, values for Exists/DoesNotExist, a non-integer
/// or not exactly one value for Gt/Lt, an unknown operator).
fn label_requirement_matches(
    req: &NodeSelectorRequirement,
    labels: &BTreeMap<String, String>,
) -> Option<bool> {
    let values = req.values.as_deref().unwrap_or(&[]);
    let value = labels.get(&req.key);
    match req.operator.as_str() {
        "In" | "NotIn" if values.is_empty() => None,
        "In" => Some(value.is_some_and(|v| values.contains(v))),
        "NotIn" => Some(value.is_none_or(|v| !values.contains(v))),
        "Exists" | "DoesNotExist" if !values.is_empty() => None,
        "Exists" => Some(value.is_some()),
        "DoesNotExist" => Some(value.is_none()),
        op @ ("Gt" | "Lt") => {
            let [bound] = values else { return None };
            let bound: i64 = bound.parse().ok()?;
            let Some(Ok(actual)) = value.map(|v| v.parse::<i64>()) else { return Some(false) };
            Some(if op == "Gt" { actual > bound } else { actual < bound })
        }
        _ => None,
    }
}

/// One field requirement: only `In`/`NotIn` with exactly one value. The node's only field is
/// `metadata.name`; other keys read as empty, as upstream's field sets do.
fn field_requirement_matches(req: &NodeSelectorRequirement, node_name: &str) -> Option<bool> {
    let [wanted] = req.values.as_deref().unwrap_or(&[]) else { return None };
    let actual = if req.key == NODE_NAME_FIELD { node_name } else { "" };
    match req.operator.as_str() {
        "In" => Some(actual == wanted),
        "NotIn" => Some(actual != wanted),
        _ => None,
    }
}
