//! ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1): CEL policies and their
//! bindings, read from the watch caches, checked against every write in upstream's place in
//! the chain (after the mutating webhooks, before the validating ones).
//!
//! For each binding whose policy exists: the policy's `matchConstraints` and the binding's
//! `matchResources` must cover the request ([`matching`]); the binding's `paramRef` finds
//! the parameter objects of the policy's `paramKind` (the policy runs once per object found,
//! or not at all, or is refused, as `parameterNotFoundAction` says); then the policy's
//! `variables` are evaluated, its `matchConditions` must all hold, and each of its
//! `validations` that does not hold is a failure, which the binding's `validationActions`
//! turn into a refusal (`Deny`, with upstream's `ValidatingAdmissionPolicy 'p' with binding
//! 'b' denied request: ...` and the validation's `reason`), a `Warning` header (`Warn`) or the
//! audit annotation `validation.policy.admission.k8s.io/validation_failure` (`Audit`, a JSON
//! list of one failure; the first failure audited in a request is the one kept). A binding
//! that cannot be used (its params missing, the object not convertible) and an audit
//! annotation that fails refuse the request whatever its actions. An expression that fails
//! to compile or evaluate, and a binding that cannot be used, obey the policy's
//! `failurePolicy`. The policy's `auditAnnotations` that evaluate to a non-empty string
//! become `<policy name>/<key>` annotations (several bindings' distinct values of one key
//! joined by `, `; a null or empty value adds nothing). Expressions read `object`, `oldObject`,
//! `request`, `params`, `namespaceObject`, `authorizer` and `variables`, and each
//! evaluation is bounded by CEL's cost limits. Compiled policies are kept per policy
//! version ([`compiled`]).
//!
//! A policy whose rule names the resource in another version sees the request in that
//! version ([`matching`]); a conversion that fails obeys its `failurePolicy`.
//!
//! The policy's `status.typeChecking` is the controllers' (`validatingadmissionpolicy-status-
//! controller`), as upstream's: here expressions are compiled untyped, as upstream's plugin
//! does. Not yet: `authorizer.requestResource`.

mod compiled;
mod matching;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rkube_apis::resources::Resources;
use rkube_apis::selectors::LabelSelector;
use rkube_cel::library::authz::Principal;
use rkube_cel::{Activation, AuthorizerValue, EvalError, Value, PER_CALL_LIMIT, RUNTIME_BUDGET};
use serde_json::{json, Value as Json};

use crate::attributes::{go_marshal, Attributes};
use crate::authorizer::{AuthorizerSlot, ResourceCheck};
use crate::error::{AdmissionError, Cause, Refusal};
use crate::state::{ClusterState, Freshness, GroupResource};
use crate::webhook::matching::Invocation;
use crate::webhook::{Backend, BackendSlot};
use crate::{UserInfo, ValidatingPlugin};
use compiled::{Expression, Policy};
use matching::Versioned;

pub const NAME: &str = "ValidatingAdmissionPolicy";

const POLICIES: GroupResource<'static> =
    GroupResource::new("admissionregistration.k8s.io", "validatingadmissionpolicies");
const BINDINGS: GroupResource<'static> =
    GroupResource::new("admissionregistration.k8s.io", "validatingadmissionpolicybindings");
const NAMESPACES: GroupResource<'static> = GroupResource::new("", "namespaces");
const DEFINITIONS: GroupResource<'static> =
    GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");

/// The plugin: the chain's authorizer, the webhooks' backend (the live resource table and
/// the server's conversion), and the policies compiled so far.
#[derive(Debug, Default)]
pub struct ValidatingAdmissionPolicy {
    pub authorizer: AuthorizerSlot,
    backend: BackendSlot,
    compiled: Mutex<HashMap<String, Arc<Policy>>>,
}

/// What one policy said of the request through one binding.
#[derive(Debug)]
struct Failure {
    message: String,
    reason: &'static str,
    /// The validation that failed (0 for a matchCondition that could not be evaluated),
    /// whose failure the binding's actions decide on; `None` for a binding that cannot be
    /// used and an audit annotation that failed, which refuse the request whatever the
    /// actions (upstream's configuration errors).
    expression: Option<usize>,
}

impl Failure {
    fn of_binding(message: String) -> Failure {
        Failure { message, reason: "Invalid", expression: None }
    }
}

/// What evaluating a policy through a binding gave: its failures and its audit annotations'
/// values (key, value).
#[derive(Debug, Default)]
struct Outcome {
    failures: Vec<Failure>,
    annotations: Vec<(String, String)>,
}

/// The longest audit annotation value kept, in bytes (upstream's 10 KiB).
const MAX_ANNOTATION_VALUE: usize = 10 * 1024;

/// One policy's audit annotations over all its bindings: each key's distinct values in order.
#[derive(Debug, Default)]
struct PolicyAnnotations(Vec<(String, Vec<String>)>);

impl PolicyAnnotations {
    fn add(&mut self, key: String, mut value: String) {
        if value.len() > MAX_ANNOTATION_VALUE {
            let mut end = MAX_ANNOTATION_VALUE;
            while !value.is_char_boundary(end) {
                end -= 1;
            }
            value.truncate(end);
        }
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, values)) if values.contains(&value) => {}
            Some((_, values)) => values.push(value),
            None => self.0.push((key, vec![value])),
        }
    }

    /// Each key as `<policy>/<key>`, its values joined by `, `.
    fn publish(self, policy: &str, a: &Attributes<'_>) {
        for (key, values) in self.0 {
            let value = values.join(", ");
            if let Err(e) = a.audit_annotations.add(format!("{policy}/{key}"), value.as_str()) {
                tracing::warn!("Failed to set admission audit annotation {key} to {value} for ValidatingAdmissionPolicy {policy}: {e}");
            }
        }
    }
}

/// The `Audit` action: the failure as upstream's `validation_failure` annotation.
fn audit_failure(
    a: &Attributes<'_>,
    policy: &str,
    binding: &str,
    actions: &[&str],
    failure: &Failure,
    index: usize,
) {
    const KEY: &str = "validation.policy.admission.k8s.io/validation_failure";
    let value = go_marshal(&json!([{
        "message": failure.message,
        "policy": policy,
        "binding": binding,
        "expressionIndex": index,
        "validationActions": actions,
    }]));
    if let Err(e) = a.audit_annotations.add(KEY, value.as_str()) {
        tracing::warn!("Failed to set admission audit annotation {KEY} to {value} for ValidatingAdmissionPolicy {policy} and ValidatingAdmissionPolicyBinding {binding}: {e}");
    }
}

/// The resource of a `paramKind`: where its objects are read and whether they are namespaced.
struct ParamResource {
    group: String,
    plural: String,
    namespaced: bool,
}

impl ValidatingAdmissionPolicy {
    /// The plugin, asking `authorizer` for the policies' `authorizer` checks.
    pub fn new(authorizer: AuthorizerSlot) -> ValidatingAdmissionPolicy {
        ValidatingAdmissionPolicy {
            authorizer,
            backend: BackendSlot::default(),
            compiled: Mutex::default(),
        }
    }

    /// The plugin finding equivalent resources in, and converting objects through, the
    /// backend the server gives the webhooks (until then: the built-in resources, converted
    /// by their strategies).
    pub fn with_backend(self, backend: BackendSlot) -> ValidatingAdmissionPolicy {
        ValidatingAdmissionPolicy { backend, ..self }
    }

    /// The policy compiled, from the cache while its version is the one compiled.
    fn policy(&self, object: &dyn crate::Object) -> Arc<Policy> {
        let version = object.resource_version();
        let mut compiled = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = compiled.get(object.name()).filter(|p| p.resource_version == version) {
            return p.clone();
        }
        let policy = Arc::new(Policy::compile(&object.value(), version));
        compiled.insert(object.name().to_string(), policy.clone());
        policy
    }
}

#[async_trait::async_trait]
impl ValidatingPlugin for ValidatingAdmissionPolicy {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn validate(
        &self,
        a: &Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        let everything = LabelSelector::everything();
        let bindings = state.list(BINDINGS, None, &everything, Freshness::Cached).await?;
        if bindings.is_empty() {
            return Ok(());
        }
        let backend = self.backend.get().map(|b| b.as_ref());
        let live = backend.map(|b| b.resources());
        let resources = live.as_deref().unwrap_or(Resources::builtin());
        let mut request =
            Request { a, state, namespace: None, resources, backend, versioned: Vec::new() };
        let mut refusal: Option<AdmissionError> = None;
        // Each policy's audit annotations, in the order the policies were first met.
        let mut annotations: Vec<(String, PolicyAnnotations)> = Vec::new();
        for binding in bindings {
            let binding = binding.value();
            let spec = &binding["spec"];
            let Some(policy_name) = spec["policyName"].as_str() else { continue };
            let Some(policy) = state.get(POLICIES, None, policy_name, Freshness::Cached).await?
            else {
                continue;
            };
            let policy = self.policy(policy.as_ref());
            // The policy's constraints say in which version it sees the request.
            let Some(invocation) = request.matches(&policy.spec["matchConstraints"]).await? else {
                continue;
            };
            if !spec["matchResources"].is_null()
                && request.matches(&spec["matchResources"]).await?.is_none()
            {
                continue;
            }
            let binding_name = binding["metadata"]["name"].as_str().unwrap_or_default();
            let mut outcome = Outcome::default();
            match request.params(&policy, spec).await? {
                Ok(params) if params.is_empty() => {}
                Ok(params) => match request.versioned(invocation).await {
                    Ok(versioned) => {
                        for params in params {
                            let one = request
                                .evaluate(&policy, &versioned, &params, &self.authorizer)
                                .await?;
                            outcome.failures.extend(one.failures);
                            outcome.annotations.extend(one.annotations);
                        }
                    }
                    Err(_) if policy.ignore_failures => {}
                    Err(e) => outcome.failures.push(Failure::of_binding(format!(
                        "failed to configure binding: failed to convert object version: {e}"
                    ))),
                },
                Err(_) if policy.ignore_failures => {}
                Err(failure) => outcome.failures.push(failure),
            }
            let published = match annotations.iter_mut().find(|(p, _)| *p == policy.name) {
                Some((_, published)) => published,
                None => {
                    annotations.push((policy.name.clone(), PolicyAnnotations::default()));
                    &mut annotations.last_mut().expect("just pushed").1
                }
            };
            for (key, value) in outcome.annotations {
                published.add(key, value);
            }
            let actions: Vec<&str> = spec["validationActions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Json::as_str)
                .collect();
            for failure in outcome.failures {
                let text = format!(
                    "ValidatingAdmissionPolicy '{}' with binding '{binding_name}' denied request: {}",
                    policy.name, failure.message
                );
                let Some(index) = failure.expression else {
                    refusal.get_or_insert_with(|| refused(a, text, failure.reason));
                    continue;
                };
                for action in &actions {
                    match *action {
                        "Deny" => {
                            refusal.get_or_insert_with(|| refused(a, text.clone(), failure.reason));
                        }
                        "Audit" => {
                            audit_failure(a, &policy.name, binding_name, &actions, &failure, index)
                        }
                        "Warn" => a.warnings.add(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{binding_name}': {}",
                            policy.name, failure.message
                        )),
                        _ => {}
                    }
                }
            }
        }
        // Annotated whether the request is refused or not.
        for (policy, published) in annotations {
            published.publish(&policy, a);
        }
        refusal.map_or(Ok(()), Err)
    }
}

/// Upstream's refusal: `NewForbidden`'s message and details, with the validation's reason
/// and its code, and the message again as the one cause.
fn refused(a: &Attributes<'_>, text: String, reason: &'static str) -> AdmissionError {
    let code = match reason {
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    match AdmissionError::forbidden(a, text.clone()) {
        AdmissionError::Forbidden { group, resource, name, .. } => {
            let message = AdmissionError::forbidden(a, text.clone()).to_string();
            AdmissionError::Refused(Box::new(Refusal {
                code,
                reason,
                group,
                resource,
                name,
                message,
                causes: vec![Cause { reason: "", message: text, field: String::new() }],
            }))
        }
        other => other,
    }
}

fn reason_of(reason: Option<&str>) -> &'static str {
    match reason {
        Some("Unauthorized") => "Unauthorized",
        Some("Forbidden") => "Forbidden",
        Some("RequestEntityTooLarge") => "RequestEntityTooLarge",
        _ => "Invalid",
    }
}

/// One request being checked, with what is read for it once.
struct Request<'r, 'a> {
    a: &'r Attributes<'a>,
    state: &'r dyn ClusterState,
    /// The request's namespace object, once read (`Some(Null)` for none).
    namespace: Option<Json>,
    /// The resources served now (for equivalents) and the server's conversion.
    resources: &'r Resources,
    backend: Option<&'r dyn Backend>,
    /// The request in each version a policy saw it in so far (converted once each).
    versioned: Vec<Arc<Versioned>>,
}

impl Request<'_, '_> {
    async fn namespace_object(&mut self) -> Result<&Json, AdmissionError> {
        if self.namespace.is_none() {
            let found = match self.a.namespace {
                "" => None,
                ns => self.state.get(NAMESPACES, None, ns, Freshness::Cached).await?,
            };
            self.namespace = Some(found.map(|o| o.value()).unwrap_or(Json::Null));
        }
        Ok(self.namespace.as_ref().expect("just read"))
    }

    /// How the `MatchResources` `m` covers the request, if it does.
    async fn matches(&mut self, m: &Json) -> Result<Option<Invocation>, AdmissionError> {
        if m.is_null() || !matching::object_matches(m, self.a) {
            return Ok(None);
        }
        let Some(invocation) = matching::rules_match(m, self.a, self.resources) else {
            return Ok(None);
        };
        let Some(selector) = matching::selector(m, "namespaceSelector") else { return Ok(None) };
        if selector.is_empty() || !matching::namespace_labels_needed(self.a) {
            return Ok(Some(invocation));
        }
        let labels = if self.a.is("", "namespaces") {
            matching::namespace_request_labels(self.a)
        } else {
            matching::labels_of(Some(self.namespace_object().await?))
        };
        Ok(selector.matches(&labels).then_some(invocation))
    }

    /// The object and old object in the invocation's version (converted once per version).
    async fn versioned(
        &mut self,
        invocation: Invocation,
    ) -> Result<Arc<Versioned>, crate::webhook::CallError> {
        if let Some(v) =
            self.versioned.iter().find(|v| v.invocation.resource == invocation.resource)
        {
            return Ok(v.clone());
        }
        let versioned = Arc::new(Versioned::of(self.a, invocation, self.backend).await?);
        self.versioned.push(versioned.clone());
        Ok(versioned)
    }

    /// The resource of the policy's `paramKind`: a built-in kind, else a custom resource's
    /// definition.
    async fn param_resource(&self, kind: &Json) -> Result<Option<ParamResource>, AdmissionError> {
        let (api_version, kind) =
            (kind["apiVersion"].as_str().unwrap_or(""), kind["kind"].as_str().unwrap_or(""));
        if let Some(info) = Resources::builtin().kind_in(api_version, kind) {
            return Ok(Some(ParamResource {
                group: info.group.to_string(),
                plural: info.plural.to_string(),
                namespaced: info.namespaced,
            }));
        }
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let everything = LabelSelector::everything();
        let definitions =
            self.state.list(DEFINITIONS, None, &everything, Freshness::Cached).await?;
        Ok(definitions.iter().map(|d| d.value()).find_map(|d| {
            let spec = &d["spec"];
            (spec["group"] == group && spec["names"]["kind"] == kind).then(|| ParamResource {
                group: group.to_string(),
                plural: spec["names"]["plural"].as_str().unwrap_or_default().to_string(),
                namespaced: spec["scope"] != "Cluster",
            })
        }))
    }

    /// The parameter objects the policy runs with through a binding (`[null]` for a policy
    /// without `paramKind`), or the failure of finding none where the binding says deny.
    async fn params(
        &self,
        policy: &Policy,
        binding: &Json,
    ) -> Result<Result<Vec<Json>, Failure>, AdmissionError> {
        let kind = &policy.spec["paramKind"];
        if kind.is_null() {
            return Ok(Ok(vec![Json::Null]));
        }
        let failure = Failure::of_binding;
        let param_ref = &binding["paramRef"];
        if param_ref.is_null() {
            return Ok(Err(failure(format!(
                "failed to configure binding: paramRef is required when policy '{}' has paramKind",
                policy.name
            ))));
        }
        let Some(resource) = self.param_resource(kind).await? else {
            return Ok(Err(failure(format!(
                "failed to configure binding: failed to find resource referenced by paramKind: '{}, Kind={}'",
                kind["apiVersion"].as_str().unwrap_or(""),
                kind["kind"].as_str().unwrap_or("")
            ))));
        };
        let namespace = match (resource.namespaced, param_ref["namespace"].as_str()) {
            (false, _) => None,
            (true, Some(ns)) if !ns.is_empty() => Some(ns.to_string()),
            (true, _) if !self.a.namespace.is_empty() => Some(self.a.namespace.to_string()),
            (true, _) => {
                return Ok(Err(failure(
                    "failed to configure binding: cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".to_string(),
                )))
            }
        };
        let gr = GroupResource::new(&resource.group, &resource.plural);
        let found: Vec<Json> = match param_ref["name"].as_str().filter(|n| !n.is_empty()) {
            Some(name) => self
                .state
                .get(gr, namespace.as_deref(), name, Freshness::Cached)
                .await?
                .map(|o| o.value())
                .into_iter()
                .collect(),
            None => {
                let selector = match &param_ref["selector"] {
                    Json::Null => LabelSelector::everything(),
                    s => LabelSelector::from_api(s).unwrap_or_else(|_| LabelSelector::nothing()),
                };
                let listed =
                    self.state.list(gr, namespace.as_deref(), &selector, Freshness::Cached).await?;
                listed.iter().map(|o| o.value()).collect()
            }
        };
        if found.is_empty() && param_ref["parameterNotFoundAction"] != "Allow" {
            return Ok(Err(failure(
                "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction".to_string(),
            )));
        }
        Ok(Ok(found))
    }

    /// The `request` variable: the AdmissionRequest's fields, `kind` and `resource` those the
    /// policy matched (upstream's `CreateAdmissionRequest` with the equivalent kind and
    /// resource), `requestKind` and `requestResource` the request's.
    fn request_value(&self, invocation: &Invocation) -> Json {
        let a = self.a;
        let request_kind =
            json!({"group": a.kind.group, "version": a.kind.version, "kind": a.kind.kind});
        let request_resource = json!({"group": a.resource.group, "version": a.resource.version,
                                      "resource": a.resource.resource});
        let (k, r) = (&invocation.kind, &invocation.resource);
        let kind = json!({"group": k.group, "version": k.version, "kind": k.name});
        let resource = json!({"group": r.group, "version": r.version, "resource": r.name});
        let extra = a.user.extra.map(|e| json!(e)).unwrap_or_else(|| json!({}));
        json!({
            "kind": kind, "resource": resource, "subResource": a.subresource,
            "requestKind": request_kind, "requestResource": request_resource,
            "requestSubResource": a.subresource,
            "name": a.name, "namespace": a.namespace, "operation": a.operation.as_str(),
            "userInfo": {"username": a.user.name, "uid": a.user.uid, "groups": a.user.groups,
                         "extra": extra},
            "dryRun": a.dry_run, "options": a.options.to_json(a.dry_run),
        })
    }

    /// The policy's failures on the request (in the version it matched) with `params`, and
    /// its audit annotations.
    async fn evaluate(
        &mut self,
        policy: &Policy,
        versioned: &Versioned,
        params: &Json,
        authorizer: &AuthorizerSlot,
    ) -> Result<Outcome, AdmissionError> {
        let a = self.a;
        let mut activation = Activation::new();
        activation.json("object", &versioned.object);
        activation.json("oldObject", &versioned.old_object);
        activation.json("request", &self.request_value(&versioned.invocation));
        activation.json("params", params);
        let namespace = self.namespace_object().await?.clone();
        activation.json("namespaceObject", &namespace);
        let principal = Principal {
            name: a.user.name.to_string(),
            uid: a.user.uid.to_string(),
            groups: a.user.groups.to_vec(),
        };
        let asker = Arc::new(SlotAuthorizer(authorizer.clone()));
        activation.authorizer("authorizer", AuthorizerValue::new(asker, principal));

        let mut budget = RUNTIME_BUDGET;
        let mut run = |e: &Expression, activation: &Activation| -> Result<Value, String> {
            let program = e.program.as_ref().map_err(|err| format!("compilation error: {err}"))?;
            match program.evaluate(activation, PER_CALL_LIMIT.min(budget)) {
                Ok((value, cost)) => {
                    budget = budget.saturating_sub(cost);
                    Ok(value)
                }
                Err(err) => Err(err.to_string()),
            }
        };

        // Variables, in order, each seeing those before it.
        let mut variables: Vec<(String, Value)> = Vec::new();
        let mut variable_errors: Vec<(String, String)> = Vec::new();
        for v in &policy.variables {
            activation.value("variables", rkube_cel::map_value(variables.clone()));
            match run(&v.expression, &activation) {
                Ok(value) => variables.push((v.name.clone(), value)),
                Err(e) => variable_errors.push((v.name.clone(), e)),
            }
        }
        activation.value("variables", rkube_cel::map_value(variables));
        // An expression that reads a variable whose evaluation failed fails with its error.
        let explain = |e: String| -> String {
            variable_errors
                .iter()
                .find(|(name, _)| e == format!("no such key: {name}"))
                .map_or(e, |(_, err)| err.clone())
        };
        let failure_of = |message: String, index: usize| Failure {
            message,
            reason: "Invalid",
            expression: Some(index),
        };

        for condition in &policy.match_conditions {
            match run(&condition.expression, &activation).map_err(explain) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => return Ok(Outcome::default()),
                Ok(_) | Err(_) if policy.ignore_failures => return Ok(Outcome::default()),
                Ok(other) => {
                    let message = format!(
                        "failed to evaluate matchCondition '{}': expected bool but got {}",
                        condition.name,
                        other.type_of()
                    );
                    return Ok(Outcome {
                        failures: vec![failure_of(message, 0)],
                        ..Outcome::default()
                    });
                }
                Err(e) => {
                    let message =
                        format!("failed to evaluate matchCondition '{}': {e}", condition.name);
                    return Ok(Outcome {
                        failures: vec![failure_of(message, 0)],
                        ..Outcome::default()
                    });
                }
            }
        }

        let mut failures = Vec::new();
        for (index, validation) in policy.validations.iter().enumerate() {
            let source = validation.expression.source.trim();
            match run(&validation.expression, &activation).map_err(explain) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => {
                    let message = if !validation.message.trim().is_empty() {
                        validation.message.trim().to_string()
                    } else {
                        validation
                            .message_expression
                            .as_ref()
                            .and_then(|m| match run(m, &activation) {
                                Ok(Value::String(s)) if !s.trim().is_empty() => {
                                    Some(s.trim().to_string())
                                }
                                _ => None,
                            })
                            .unwrap_or_else(|| format!("failed expression: {source}"))
                    };
                    failures.push(Failure {
                        message,
                        reason: reason_of(validation.reason.as_deref()),
                        expression: Some(index),
                    });
                }
                _ if policy.ignore_failures => {}
                Ok(other) => failures.push(failure_of(
                    format!(
                        "expression '{source}' resulted in error: {}",
                        EvalError::WrongType { want: "bool", got: other.type_of().to_string() }
                    ),
                    index,
                )),
                Err(e) => failures.push(failure_of(
                    format!("expression '{source}' resulted in error: {e}"),
                    index,
                )),
            }
        }
        // Audit annotations: a string (trimmed) is kept unless empty, null adds nothing, any
        // other type refuses the request; one that fails to evaluate obeys the failure policy.
        let mut annotations = Vec::new();
        for annotation in &policy.audit_annotations {
            let source = &annotation.expression.source;
            let failed = |message: String| Failure::of_binding(message);
            let value = match &annotation.expression.program {
                Err(e) => Err(format!("compilation error: {e}")),
                Ok(_) => run(&annotation.expression, &activation)
                    .map_err(explain)
                    .map_err(|e| format!("expression '{source}' resulted in error: {e}")),
            };
            match value {
                Ok(Value::String(value)) if !value.trim().is_empty() => {
                    annotations.push((annotation.name.clone(), value.trim().to_string()))
                }
                Ok(Value::String(_) | Value::Null) => {}
                Ok(other) => failures.push(failed(format!(
                    "valueExpression '{source}' resulted in unsupported return type: {}. Return type must be either string or null.",
                    other.type_of()
                ))),
                Err(_) if policy.ignore_failures => {}
                Err(e) => failures.push(failed(e)),
            }
        }
        Ok(Outcome { failures, annotations })
    }
}

/// The chain's authorizer as CEL's `authorizer` asks it.
pub(crate) struct SlotAuthorizer(pub(crate) AuthorizerSlot);

impl rkube_cel::Authorizer for SlotAuthorizer {
    fn authorize(
        &self,
        who: &Principal,
        attributes: &rkube_cel::ResourceAttributes,
    ) -> rkube_cel::Decision {
        let user = UserInfo { name: &who.name, uid: &who.uid, groups: &who.groups, extra: None };
        if let Some(path) = &attributes.path {
            return match self.0.allowed_path(&user, &attributes.verb, path) {
                true => rkube_cel::Decision::Allow(String::new()),
                false => rkube_cel::Decision::NoOpinion(String::new()),
            };
        }
        // The subresource travels as RBAC reads it, `<resource>/<subresource>`.
        let resource = match attributes.subresource.as_str() {
            "" => attributes.resource.clone(),
            sub => format!("{}/{sub}", attributes.resource),
        };
        let check = ResourceCheck {
            verb: &attributes.verb,
            group: &attributes.group,
            resource: &resource,
            namespace: &attributes.namespace,
            name: &attributes.name,
        };
        if self.0.allowed(&user, &check) {
            rkube_cel::Decision::Allow(String::new())
        } else {
            rkube_cel::Decision::NoOpinion(String::new())
        }
    }
}

#[cfg(test)]
mod tests;
