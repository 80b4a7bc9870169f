//! Which webhooks a request goes to, as upstream decides (`ShouldCallHook`): the namespace
//! selector (the namespace's labels; a Namespace's own), the object selector (the new or the
//! old object's labels), the rules (operations, groups, versions, resources with their
//! subresources, scope), and with `matchPolicy: Equivalent` the same resource served in
//! another group or version (the invocation then names that resource and kind, and the object
//! is converted to it as the server converts it, [`converted`]: a custom resource's
//! conversion webhook included). The admission configuration objects themselves never go to
//! webhooks.

use std::collections::BTreeMap;
use std::sync::Arc;

use rkube_apis::resources::{ResourceInfo, Resources};
use rkube_apis::selectors::LabelSelector;
use serde_json::Value;

use super::config::{FailurePolicy, Rule, Webhook};
use super::{Backend, CallError};
use crate::attributes::{Attributes, Operation};
use crate::authorizer::AuthorizerSlot;
use crate::error::AdmissionError;
use crate::state::{ClusterState, Freshness, GroupResource};

/// Upstream's `IsExemptAdmissionConfigurationResource`: webhooks and policies are configured
/// without asking webhooks, so that a broken webhook cannot lock its own configuration.
pub(crate) fn exempt(a: &Attributes<'_>) -> bool {
    a.resource.group == "admissionregistration.k8s.io"
        && matches!(
            a.resource.resource,
            "validatingwebhookconfigurations"
                | "mutatingwebhookconfigurations"
                | "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
        )
}

/// A group, version and name (a resource's or a kind's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Gvn {
    pub group: String,
    pub version: String,
    pub name: String,
}

impl Gvn {
    fn of(group: &str, version: &str, name: &str) -> Gvn {
        Gvn { group: group.into(), version: version.into(), name: name.into() }
    }
}

/// How a webhook is called for a request.
#[derive(Clone, Debug)]
pub(crate) struct Invocation {
    pub resource: Gvn,
    pub kind: Gvn,
    /// The served resource the object is converted to when the invocation is for an
    /// equivalent of the requested one (and the object is of the resource's own kind).
    pub convert_to: Option<Arc<ResourceInfo>>,
}

fn listed(list: &[String], value: &str) -> bool {
    list.iter().any(|l| l == "*" || l == value)
}

/// Upstream's `rules.Matcher`: operation, group, version, resource/subresource, scope.
pub(crate) fn rule_matches(
    rule: &Rule,
    a: &Attributes<'_>,
    group: &str,
    version: &str,
    resource: &str,
) -> bool {
    let is_namespace = group.is_empty() && version == "v1" && resource == "namespaces";
    let scope = match rule.scope.as_str() {
        "Namespaced" => !is_namespace && !a.namespace.is_empty(),
        "Cluster" => is_namespace || a.namespace.is_empty(),
        _ => true,
    };
    let resource_matches = rule.resources.iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == resource) && (sub == "*" || sub == a.subresource)
    });
    scope
        && listed(&rule.operations, a.operation.as_str())
        && listed(&rule.api_groups, group)
        && listed(&rule.api_versions, version)
        && resource_matches
}

fn labels_of(object: &Value) -> BTreeMap<String, String> {
    object["metadata"]["labels"]
        .as_object()
        .map(|l| l.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect())
        .unwrap_or_default()
}

/// Upstream's namespace matcher: requests for cluster-scoped resources other than
/// namespaces always match; a Namespace being created or updated is matched by its own
/// labels, anything else by its namespace's (a namespace that does not exist is a 404).
async fn namespace_matches(
    hook: &Webhook,
    a: &Attributes<'_>,
    state: &dyn ClusterState,
) -> Result<bool, AdmissionError> {
    let is_namespace = a.resource.group.is_empty() && a.resource.resource == "namespaces";
    if a.namespace.is_empty() && !is_namespace {
        return Ok(true);
    }
    let selector = hook.namespace_selector.as_ref().map_err(AdmissionError::internal_error)?;
    if selector.is_empty() {
        return Ok(true);
    }
    let own = is_namespace
        && a.subresource.is_empty()
        && matches!(a.operation, Operation::Create | Operation::Update);
    if own {
        return Ok(selector.matches(&labels_of(a.object().unwrap_or(&Value::Null))));
    }
    // rkube's attributes have no namespace for a Namespace (upstream's name it).
    let name = if is_namespace { a.name } else { a.namespace };
    let namespaces = GroupResource::new("", "namespaces");
    match state.get(namespaces, None, name, Freshness::Cached).await? {
        Some(namespace) => Ok(selector.matches(namespace.labels())),
        None => Err(AdmissionError::not_found("", "namespaces", name)),
    }
}

/// Upstream's object matcher: the new object's labels or the old one's.
fn object_matches(hook: &Webhook, a: &Attributes<'_>) -> Result<bool, AdmissionError> {
    let selector: &LabelSelector =
        hook.object_selector.as_ref().map_err(AdmissionError::internal_error)?;
    if selector.is_empty() {
        return Ok(true);
    }
    let matches = |o: Option<&Value>| o.is_some_and(|o| selector.matches(&labels_of(o)));
    Ok(matches(a.object()) || matches(a.old_object))
}

/// The served resources that hold the same objects as the requested one (other versions,
/// and for events the other group), that have the subresource, in the table's order.
fn equivalents<'r>(
    resources: &'r Resources,
    requested: &ResourceInfo,
    subresource: &str,
) -> Vec<&'r Arc<ResourceInfo>> {
    resources
        .all()
        .iter()
        .filter(|r| r.storage_resource == requested.storage_resource)
        .filter(|r| (r.group, r.version) != (requested.group, requested.version))
        .filter(|r| subresource.is_empty() || r.has_subresource(subresource))
        .collect()
}

/// Whether `hook` is called for the request, and how (upstream's `ShouldCallHook`).
pub(crate) async fn should_call(
    hook: &Webhook,
    a: &Attributes<'_>,
    state: &dyn ClusterState,
    resources: Option<&Resources>,
    backend: Option<&dyn Backend>,
    authorizer: &AuthorizerSlot,
) -> Result<Option<Invocation>, AdmissionError> {
    // A selector error counts only for a webhook whose rules match the request.
    let namespace = namespace_matches(hook, a, state).await;
    if matches!(namespace, Ok(false)) {
        return Ok(None);
    }
    let object = object_matches(hook, a);
    if matches!(object, Ok(false)) {
        return Ok(None);
    }
    let (group, version, resource) = (a.resource.group, a.resource.version, a.resource.resource);
    let mut invocation = hook
        .rules
        .iter()
        .any(|r| rule_matches(r, a, group, version, resource))
        .then(|| requested_invocation(a));
    if invocation.is_none() && hook.equivalent {
        invocation = resources.and_then(|r| {
            equivalent_invocation(a, r, &hook.rules, |rule, e| {
                rule_matches(rule, a, e.group, e.version, e.plural)
            })
        });
    }
    let Some(invocation) = invocation else { return Ok(None) };
    namespace?;
    object?;
    if !hook.match_conditions.is_empty()
        && !conditions_hold(hook, a, &invocation, backend, authorizer).await?
    {
        return Ok(None);
    }
    Ok(Some(invocation))
}

/// The invocation for the first of `rules` (in order) that an equivalent of the requested
/// resource matches (`matches` says whether a rule covers a served resource): shared by
/// the webhooks and the ValidatingAdmissionPolicies' `matchPolicy: Equivalent`.
pub(crate) fn equivalent_invocation<'r, R>(
    a: &Attributes<'_>,
    resources: &Resources,
    rules: impl IntoIterator<Item = &'r R>,
    matches: impl Fn(&R, &ResourceInfo) -> bool,
) -> Option<Invocation>
where
    R: 'r,
{
    let requested = resources.get(a.resource.group, a.resource.version, a.resource.resource)?;
    let equivalents = equivalents(resources, requested, a.subresource);
    let found = rules
        .into_iter()
        .find_map(|rule| equivalents.iter().find(|e| matches(rule, e.as_ref())))?;
    // An object of the resource's own kind becomes the equivalent's kind; a subresource's
    // other kinds (Scale, Binding, ...) stay what they are.
    let own_kind = (a.kind.group, a.kind.kind) == (requested.group, requested.kind);
    let kind = match own_kind {
        true => Gvn::of(found.group, found.version, found.kind),
        false => Gvn::of(a.kind.group, a.kind.version, a.kind.kind),
    };
    Some(Invocation {
        resource: Gvn::of(found.group, found.version, found.plural),
        kind,
        convert_to: own_kind.then(|| (*found).clone()),
    })
}

/// The invocation of the request as it is (its own resource and kind).
pub(crate) fn requested_invocation(a: &Attributes<'_>) -> Invocation {
    Invocation {
        resource: Gvn::of(a.resource.group, a.resource.version, a.resource.resource),
        kind: Gvn::of(a.kind.group, a.kind.version, a.kind.kind),
        convert_to: None,
    }
}

/// `object` in the invocation's version as the server converts it ([`Backend::convert`]:
/// through a custom resource's conversion webhook when it has one), when the invocation is
/// for an equivalent resource; as it is otherwise.
pub(crate) async fn converted(
    object: Option<&Value>,
    invocation: &Invocation,
    backend: Option<&dyn Backend>,
) -> Result<Option<Value>, CallError> {
    let Some(object) = object else { return Ok(None) };
    match (&invocation.convert_to, backend) {
        (Some(info), Some(backend)) => backend.convert(object.clone(), info).await.map(Some),
        (Some(info), None) => Ok(Some(rkube_apis::convert::convert(object.clone(), info))),
        (None, _) => Ok(Some(object.clone())),
    }
}

/// Upstream's match-condition matcher: every condition is evaluated (CEL, on the object in
/// the invocation's version); one that is false means the webhook is not called. Errors
/// (a condition that does not compile or evaluate, or is not a bool) follow the failure
/// policy: Ignore skips the webhook, Fail refuses the request (403, the errors).
async fn conditions_hold(
    hook: &Webhook,
    a: &Attributes<'_>,
    invocation: &Invocation,
    backend: Option<&dyn Backend>,
    authorizer: &AuthorizerSlot,
) -> Result<bool, AdmissionError> {
    use rkube_cel::library::authz::Principal;
    use rkube_cel::{Activation, AuthorizerValue, Value as Cel, PER_CALL_LIMIT, RUNTIME_BUDGET};
    let object = match a.operation {
        Operation::Delete => None,
        _ => a.object(),
    };
    // Upstream's `VersionedAttribute`: a conversion that fails is an internal error.
    let object =
        converted(object, invocation, backend).await.map_err(AdmissionError::internal_error)?;
    let old = converted(a.old_object, invocation, backend)
        .await
        .map_err(AdmissionError::internal_error)?;
    let mut activation = Activation::new();
    activation.json("object", object.as_ref().unwrap_or(&Value::Null));
    activation.json("oldObject", old.as_ref().unwrap_or(&Value::Null));
    let review = super::review::request("v1", "", a, invocation, None, None);
    activation.json("request", &review["request"]);
    let principal = Principal {
        name: a.user.name.to_string(),
        uid: a.user.uid.to_string(),
        groups: a.user.groups.to_vec(),
    };
    let asker = Arc::new(crate::validating_admission_policy::SlotAuthorizer(authorizer.clone()));
    activation.authorizer("authorizer", AuthorizerValue::new(asker, principal));
    let mut budget = RUNTIME_BUDGET;
    let mut errors = Vec::new();
    for condition in &hook.match_conditions {
        let evaluated = match &condition.program {
            Err(e) => Err(format!("compilation error: {e}")),
            Ok(program) => match program.evaluate(&activation, PER_CALL_LIMIT.min(budget)) {
                Ok((value, cost)) => {
                    budget = budget.saturating_sub(cost);
                    Ok(value)
                }
                Err(e) => Err(e.to_string()),
            },
        };
        let source = &condition.expression;
        match evaluated {
            Ok(Cel::Bool(true)) => {}
            Ok(Cel::Bool(false)) => return Ok(false),
            Ok(other) => errors.push(format!(
                "expression '{source}' resulted in error: expected bool but got {}",
                other.type_of()
            )),
            Err(e) => errors.push(format!("expression '{source}' resulted in error: {e}")),
        }
    }
    if errors.is_empty() {
        return Ok(true);
    }
    match hook.failure_policy {
        FailurePolicy::Ignore => Ok(false),
        FailurePolicy::Fail => Err(AdmissionError::Forbidden {
            group: a.resource.group.to_string(),
            resource: a.resource.resource.to_string(),
            name: a.name.to_string(),
            // Upstream's aggregate: one error as it is, several in brackets.
            reason: match errors.len() {
                1 => errors.remove(0),
                _ => format!("[{}]", errors.join(", ")),
            },
            causes: Vec::new(),
        }),
    }
}
