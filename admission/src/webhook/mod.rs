//! The admission webhooks: `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook`, which
//! send each write that a MutatingWebhookConfiguration or ValidatingWebhookConfiguration
//! (admissionregistration.k8s.io/v1) matches to a webhook over HTTPS as an admission.k8s.io
//! AdmissionReview, and act on its answer as kube-apiserver does.
//!
//! - [`config`]: the configurations, read from the watch caches through
//!   [`ClusterState`](crate::ClusterState), parsed once per resourceVersion.
//! - [`matching`]: which webhooks a request goes to (selectors, rules, `matchPolicy`), and
//!   how (the equivalent resource and kind).
//! - [`review`]: the AdmissionReview sent, the checks of the answer, the refusal.
//! - This module: the two plugins. Mutating webhooks are called one after the other, their
//!   JSON patches applied to the object (decoded into the kind and defaulted again, as
//!   upstream), and one that changes the object makes the chain run again for webhooks with
//!   `reinvocationPolicy: IfNeeded` ([`crate::reinvocation`]). Validating webhooks are
//!   called all at once. A call that fails obeys `failurePolicy`; a dry run is refused by
//!   webhooks whose `sideEffects` are not `None`/`NoneOnDryRun`; `warnings` become the
//!   request's warnings.
//!
//! The HTTPS itself is the server's: a [`Backend`] (its client reaches a `url`, or a Service
//! through its endpoints, verified against `caBundle` as `<service>.<namespace>.svc`), which
//! the server hands the chain with [`crate::Chain::set_webhook_backend`].
//!
//! `matchConditions` are CEL ([`rkube_cel`]) over `object`, `oldObject`, `request` and
//! `authorizer`. What the calls leave for the request's audit event (the webhooks' own
//! `auditAnnotations`, each mutation and patch, each call that failed open) is
//! [`annotations`].

mod annotations;
mod config;
pub(crate) mod matching;
mod review;

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rkube_apis::go_quote;
use rkube_apis::patch::{apply_patch, PatchType};
use rkube_apis::resources::{ResourceInfo, Resources};
use serde_json::Value;

pub use config::{ClientConfig, FailurePolicy, Rule, ServiceReference, Webhook};

use crate::attributes::Attributes;
use crate::authorizer::AuthorizerSlot;
use crate::error::AdmissionError;
use crate::reinvocation::Reinvocation;
use crate::state::ClusterState;
use crate::{MutatingPlugin, ValidatingPlugin};
use annotations::MutationAnnotator;
use config::Configurations;
use matching::{converted, Invocation};
use review::Verdict;

/// The mutating plugin's name, as the flags spell it.
pub const MUTATING: &str = "MutatingAdmissionWebhook";
/// The validating plugin's name.
pub const VALIDATING: &str = "ValidatingAdmissionWebhook";

/// Why a call gave no answer: the text Go's client would give (`Post "https://...": dial tcp
/// ...: connect: connection refused`, `... context deadline exceeded`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CallError(pub String);

/// What the webhooks need of the server.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// The resources served now (the live table): for `matchPolicy: Equivalent`, conversion
    /// and defaulting.
    fn resources(&self) -> Arc<Resources>;

    /// `object` (of `to`'s resource, in any of its versions) in `to`'s version, as the server
    /// converts it: by the resource's strategy, or through a custom resource's conversion
    /// webhook (upstream's `VersionedAttributes` convert with the server's converter). By
    /// default, the strategy alone.
    async fn convert(&self, object: Value, to: &ResourceInfo) -> Result<Value, CallError> {
        Ok(rkube_apis::convert::convert(object, to))
    }

    /// POSTs `body` (a JSON AdmissionReview) to the webhook `client` names and returns the
    /// answer's body, all within `timeout` (sent as the `timeout` query parameter too).
    async fn post(
        &self,
        client: &ClientConfig,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Vec<u8>, CallError>;
}

/// Where the plugins find the backend: filled once by the server.
#[derive(Clone, Default)]
pub struct BackendSlot(Arc<OnceLock<Arc<dyn Backend>>>);

impl BackendSlot {
    /// Fills the slot; a second call changes nothing.
    pub fn set(&self, backend: Arc<dyn Backend>) {
        let _ = self.0.set(backend);
    }

    pub(crate) fn get(&self) -> Option<&Arc<dyn Backend>> {
        self.0.get()
    }
}

impl std::fmt::Debug for BackendSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendSlot").field("set", &self.0.get().is_some()).finish()
    }
}

/// The webhook plugin's state across one request's two mutating rounds (upstream's
/// `webhookReinvokeContext`).
#[derive(Debug, Default)]
pub struct ReinvokeState {
    /// The object as the webhooks left it in the last round.
    last_output: Option<Value>,
    /// Webhooks with `reinvocationPolicy: IfNeeded` called since the last change.
    previously_invoked: BTreeSet<String>,
    /// Webhooks to call again in the second round.
    reinvoke: BTreeSet<String>,
}

impl ReinvokeState {
    /// The object changed: the webhooks that asked to see later changes will be called again.
    fn require_reinvoking(&mut self) {
        let previously = std::mem::take(&mut self.previously_invoked);
        self.reinvoke.extend(previously);
    }
}

/// How a call ended without an answer to act on.
enum Failure {
    /// Upstream's `ErrCallingWebhook` (the reason, after `failed calling webhook "x": `): the
    /// failure policy decides.
    Calling(String),
    /// A refusal, or an error that ends the request whatever the policy.
    Refused(AdmissionError),
}

/// What both plugins share: their configurations and the backend.
struct Dispatcher {
    configurations: Configurations,
    backend: BackendSlot,
    /// What `matchConditions` ask with `authorizer`.
    authorizer: AuthorizerSlot,
    mutating: bool,
}

impl Dispatcher {
    fn backend(&self) -> Option<&dyn Backend> {
        self.backend.get().map(|b| b.as_ref())
    }

    /// The request's object and old object in the invocation's version (upstream's
    /// `VersionedAttributes`, converted as the server converts: a custom resource's
    /// conversion webhook included); a conversion that fails is an internal error.
    async fn versioned(
        &self,
        a: &Attributes<'_>,
        invocation: &Invocation,
    ) -> Result<(Option<Value>, Option<Value>), Failure> {
        let internal = |e: CallError| Failure::Refused(AdmissionError::internal_error(e));
        let object = converted(a.object(), invocation, self.backend()).await.map_err(internal)?;
        let old = converted(a.old_object, invocation, self.backend()).await.map_err(internal)?;
        Ok((object, old))
    }

    fn resources(&self) -> Option<Arc<Resources>> {
        self.backend.get().map(|b| b.resources())
    }

    /// One call, up to a checked answer that allows the request.
    async fn call(
        &self,
        hook: &Webhook,
        invocation: &Invocation,
        a: &Attributes<'_>,
        object: Option<&Value>,
        old_object: Option<&Value>,
    ) -> Result<Verdict, Failure> {
        if a.dry_run {
            match hook.side_effects.as_deref() {
                None => return Err(Failure::Calling("Webhook SideEffects is nil".into())),
                Some("None" | "NoneOnDryRun") => {}
                Some(_) => {
                    return Err(Failure::Refused(AdmissionError::BadRequest(format!(
                        "admission webhook {} does not support dry run",
                        go_quote(&hook.name)
                    ))))
                }
            }
        }
        let Some(version) = review::negotiate(&hook.review_versions) else {
            return Err(Failure::Calling(
                "could not create admission objects: webhook does not accept v1 or v1beta1 AdmissionReview"
                    .into(),
            ));
        };
        let uid = uuid::Uuid::new_v4().to_string();
        let request = review::request(version, &uid, a, invocation, object, old_object);
        let body = serde_json::to_vec(&request).expect("JSON values serialize");
        let Some(backend) = self.backend.get() else {
            return Err(Failure::Calling("could not get REST client: no webhook transport".into()));
        };
        let answer = backend
            .post(&hook.client, body, hook.timeout)
            .await
            .map_err(|e| Failure::Calling(format!("failed to call webhook: {e}")))?;
        let verdict = review::verify(version, &uid, self.mutating, &answer)
            .map_err(|e| Failure::Calling(format!("received invalid webhook response: {e}")))?;
        annotations::from_answer(a, hook, self.mutating, &verdict.audit_annotations);
        for warning in &verdict.warnings {
            a.warnings.add(warning.clone());
        }
        if !verdict.allowed {
            return Err(Failure::Refused(review::denied(&hook.name, verdict.result.as_ref())));
        }
        Ok(verdict)
    }

    /// What a failed call means: nothing (failing open, which `failed_open` notes for the
    /// audit event) or the request's error.
    fn settle(
        hook: &Webhook,
        failure: Failure,
        failed_open: impl FnOnce(),
    ) -> Result<(), AdmissionError> {
        match failure {
            Failure::Calling(reason) => {
                let error = format!("failed calling webhook {}: {reason}", go_quote(&hook.name));
                if hook.failure_policy == FailurePolicy::Ignore {
                    tracing::warn!(webhook = %hook.name, %error, "Failed calling webhook, failing open");
                    failed_open();
                    return Ok(());
                }
                tracing::warn!(webhook = %hook.name, %error, "Failed calling webhook, failing closed");
                Err(AdmissionError::internal_error(error))
            }
            Failure::Refused(e) => Err(e),
        }
    }
}

/// `MutatingAdmissionWebhook`.
pub struct MutatingWebhooks {
    dispatcher: Dispatcher,
}

impl MutatingWebhooks {
    pub fn new(backend: BackendSlot, authorizer: AuthorizerSlot) -> MutatingWebhooks {
        MutatingWebhooks {
            dispatcher: Dispatcher {
                configurations: Configurations::new("mutatingwebhookconfigurations"),
                backend,
                authorizer,
                mutating: true,
            },
        }
    }

    async fn dispatch(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
        hooks: &[Arc<Webhook>],
        reinvocation: &mut Reinvocation,
    ) -> Result<(), AdmissionError> {
        let resources = self.dispatcher.resources();
        let round = u8::from(reinvocation.is_reinvoke());
        for (index, hook) in hooks.iter().enumerate() {
            let Some(invocation) = matching::should_call(
                hook,
                a,
                state,
                resources.as_deref(),
                self.dispatcher.backend(),
                &self.dispatcher.authorizer,
            )
            .await?
            else {
                continue;
            };
            // A second round calls only those that asked to see later changes.
            if reinvocation.is_reinvoke() && !reinvocation.webhooks.reinvoke.contains(&hook.uid) {
                continue;
            }
            let annotator = MutationAnnotator::new(round, index, hook);
            let outcome = self.call(hook, &invocation, a, resources.as_deref(), &annotator).await;
            if matches!(outcome, Ok(true)) {
                reinvocation.webhooks.require_reinvoking();
                reinvocation.set_should_reinvoke();
            }
            if hook.reinvoke_if_needed {
                reinvocation.webhooks.previously_invoked.insert(hook.uid.clone());
            }
            if let Err(failure) = outcome {
                Dispatcher::settle(hook, failure, || annotator.failed_open(a))?;
            }
        }
        Ok(())
    }

    /// Calls one webhook and applies its patch: whether the object changed. Every call that
    /// gets the request in the webhook's version is noted for the audit event, with whether
    /// it changed the object.
    async fn call(
        &self,
        hook: &Webhook,
        invocation: &Invocation,
        a: &mut Attributes<'_>,
        resources: Option<&Resources>,
        annotator: &MutationAnnotator<'_>,
    ) -> Result<bool, Failure> {
        let (object, old) = self.dispatcher.versioned(a, invocation).await?;
        let outcome = self.patch(hook, invocation, a, resources, annotator, object, old).await;
        annotator.mutation(a, matches!(outcome, Ok(true)));
        outcome
    }

    /// The call itself, and the patch applied.
    #[allow(clippy::too_many_arguments)]
    async fn patch(
        &self,
        hook: &Webhook,
        invocation: &Invocation,
        a: &mut Attributes<'_>,
        resources: Option<&Resources>,
        annotator: &MutationAnnotator<'_>,
        object: Option<Value>,
        old: Option<Value>,
    ) -> Result<bool, Failure> {
        let verdict =
            self.dispatcher.call(hook, invocation, a, object.as_ref(), old.as_ref()).await?;
        if verdict.patch.is_empty() {
            return Ok(false);
        }
        let patch: Value = serde_json::from_slice(&verdict.patch).map_err(|e| {
            Failure::Calling(format!("received undecodable patch in webhook response: {e}"))
        })?;
        if patch.as_array().is_some_and(Vec::is_empty) {
            return Ok(false);
        }
        let internal = |e: String| Failure::Refused(AdmissionError::internal_error(e));
        let Some(object) = object else {
            return Err(internal(format!(
                "admission webhook {} attempted to modify the object, which is not supported for this operation",
                go_quote(&hook.name)
            )));
        };
        if verdict.patch_type != "JSONPatch" {
            return Err(Failure::Calling(format!(
                "unsupported patch type {}",
                go_quote(&verdict.patch_type)
            )));
        }
        let patched = apply_patch(PatchType::Json, &object, &patch, None, "")
            .map_err(|e| internal(e.to_string()))?;
        // Decoded into the kind (unknown fields dropped, wrong types refused) and defaulted
        // again, as upstream decodes the patched JSON into its Go type.
        let requested = resources
            .and_then(|r| r.get(a.resource.group, a.resource.version, a.resource.resource))
            .filter(|r| (r.group, r.kind) == (a.kind.group, a.kind.kind))
            .cloned();
        let info = invocation.convert_to.clone().or(requested.clone());
        let mut patched = match &info {
            Some(info) => (info.normalize)(&patched).map(|(v, _)| v).map_err(internal)?,
            None => patched,
        };
        let changed = patched != object;
        annotator.patch(a, &patch);
        if let Some(info) = &info {
            info.strategy.default(&mut patched);
        }
        let patched = match (&invocation.convert_to, &requested) {
            (Some(_), Some(requested)) => {
                let back = Invocation { convert_to: Some(requested.clone()), ..invocation.clone() };
                converted(Some(&patched), &back, self.dispatcher.backend())
                    .await
                    .map_err(|e| internal(e.0))?
                    .unwrap_or(patched)
            }
            _ => patched,
        };
        if let Some(target) = a.object.as_deref_mut() {
            *target = patched;
        }
        Ok(changed)
    }
}

#[async_trait::async_trait]
impl MutatingPlugin for MutatingWebhooks {
    fn name(&self) -> &'static str {
        MUTATING
    }

    async fn admit(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        self.admit_in(a, state, &mut Reinvocation::default()).await
    }

    async fn admit_in(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
        reinvocation: &mut Reinvocation,
    ) -> Result<(), AdmissionError> {
        if matching::exempt(a) {
            return Ok(());
        }
        let hooks = self.dispatcher.configurations.load(state).await?;
        if hooks.is_empty() {
            return Ok(());
        }
        // The in-tree plugins changed the object in the second round: every webhook that
        // asked to see changes is called again.
        if reinvocation.is_reinvoke() && reinvocation.webhooks.last_output.as_ref() != a.object() {
            reinvocation.webhooks.require_reinvoking();
        }
        let result = self.dispatch(a, state, &hooks, reinvocation).await;
        reinvocation.webhooks.last_output = a.object().cloned();
        result
    }
}

/// `ValidatingAdmissionWebhook`.
pub struct ValidatingWebhooks {
    dispatcher: Dispatcher,
}

impl ValidatingWebhooks {
    pub fn new(backend: BackendSlot, authorizer: AuthorizerSlot) -> ValidatingWebhooks {
        ValidatingWebhooks {
            dispatcher: Dispatcher {
                configurations: Configurations::new("validatingwebhookconfigurations"),
                backend,
                authorizer,
                mutating: false,
            },
        }
    }
}

#[async_trait::async_trait]
impl ValidatingPlugin for ValidatingWebhooks {
    fn name(&self) -> &'static str {
        VALIDATING
    }

    async fn validate(
        &self,
        a: &Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if matching::exempt(a) {
            return Ok(());
        }
        let hooks = self.dispatcher.configurations.load(state).await?;
        if hooks.is_empty() {
            return Ok(());
        }
        let resources = self.dispatcher.resources();
        let mut calls = Vec::new();
        for hook in &hooks {
            if let Some(invocation) = matching::should_call(
                hook,
                a,
                state,
                resources.as_deref(),
                self.dispatcher.backend(),
                &self.dispatcher.authorizer,
            )
            .await?
            {
                calls.push((hook, invocation));
            }
        }
        // All at once, as upstream; the first failure in order decides.
        let results = futures::future::join_all(calls.iter().map(|(hook, invocation)| async {
            let (object, old) = self.dispatcher.versioned(a, invocation).await?;
            self.dispatcher.call(hook, invocation, a, object.as_ref(), old.as_ref()).await
        }))
        .await;
        let mut refusal = None;
        for (index, ((hook, _), result)) in calls.iter().zip(results).enumerate() {
            if let Err(failure) = result {
                let failed_open = || annotations::validating_failed_open(a, index, hook);
                if let Err(e) = Dispatcher::settle(hook, failure, failed_open) {
                    refusal.get_or_insert(e);
                }
            }
        }
        if let Some(e) = refusal {
            return Err(e);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
