//! `--authorization-mode=...,Webhook` (`--authorization-webhook-config-file`), as
//! kube-apiserver's webhook authorizer: each question is sent as a `SubjectAccessReview`
//! (`authorization.k8s.io/v1beta1`, upstream's default, or `v1` by
//! `--authorization-webhook-version`) to the server the kubeconfig names
//! ([`crate::kubeconfig_webhook`]): `status.allowed` allows, `status.denied` refuses, neither
//! has no opinion (the next mode is asked), with the answer's `reason`. As upstream:
//!
//! - answers are remembered by the review's spec: an allow for
//!   `--authorization-webhook-cache-authorized-ttl` (5m), anything else for
//!   `--authorization-webhook-cache-unauthorized-ttl` (30s);
//! - a call that fails (no connection, 429, a 5xx) is retried after 500 ms, 1.5 times longer
//!   each time, 5 tries in all; then the verdict is no opinion with the error, which makes a
//!   request no other mode allows a 500 rather than a 403;
//! - the webhook lists no rules: `SelfSubjectRulesReview` says its list is incomplete.
//!
//! Authorizers are synchronous ([`super::Authorizer`]). This one waits for its answer on the
//! calling thread, as upstream's blocks its goroutine: the call runs on the authorizer's own
//! small runtime, and a Tokio worker that waits hands its other tasks on first
//! (`block_in_place`). Cached answers cost a map lookup.

use std::time::Duration;

use serde_json::{json, Value};

use super::{Attributes, Authorizer, Decision, Rules, Verdict};
use crate::auth::UserInfo;
use crate::kubeconfig_webhook::KubeconfigWebhook;
use crate::ttl_cache::TtlCache;

/// The most answers remembered.
const MAX_CACHED: usize = 8192;
/// How long one call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The `--authorization-webhook-*` flags.
#[derive(Clone, Debug)]
pub struct WebhookOptions {
    pub remote: KubeconfigWebhook,
    /// `v1beta1` or `v1`.
    pub version: String,
    pub authorized_ttl: Duration,
    pub unauthorized_ttl: Duration,
}

/// The webhook authorizer.
pub struct WebhookAuthorizer {
    remote: KubeconfigWebhook,
    api_version: &'static str,
    authorized_ttl: Duration,
    unauthorized_ttl: Duration,
    cache: TtlCache<String, Verdict>,
    /// Where the calls run (one thread).
    runtime: Option<tokio::runtime::Runtime>,
}

impl WebhookAuthorizer {
    pub fn new(options: WebhookOptions) -> Result<WebhookAuthorizer, String> {
        let api_version = match options.version.as_str() {
            "v1beta1" => "authorization.k8s.io/v1beta1",
            "v1" => "authorization.k8s.io/v1",
            other => {
                return Err(format!(
                "unsupported webhook version {other:?}, supported versions are \"v1\", \"v1beta1\""
            ))
            }
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("authz-webhook")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the webhook's runtime: {e}"))?;
        Ok(WebhookAuthorizer {
            remote: options.remote,
            api_version,
            authorized_ttl: options.authorized_ttl,
            unauthorized_ttl: options.unauthorized_ttl,
            cache: TtlCache::new(MAX_CACHED),
            runtime: Some(runtime),
        })
    }

    /// The review's spec for `a`, in the version sent (v1beta1 names the groups `group`).
    fn spec(&self, a: &Attributes<'_>) -> Value {
        let mut spec = if a.resource_request {
            let mut attributes = json!({"verb": a.verb, "resource": a.resource});
            for (key, value) in [
                ("namespace", a.namespace),
                ("group", a.api_group),
                ("version", a.api_version),
                ("subresource", a.subresource),
                ("name", &a.name),
            ] {
                if !value.is_empty() {
                    attributes[key] = json!(value);
                }
            }
            json!({"resourceAttributes": attributes})
        } else {
            json!({"nonResourceAttributes": {"path": a.path, "verb": a.verb}})
        };
        spec["user"] = json!(a.user.name);
        let groups = if self.api_version.ends_with("v1beta1") { "group" } else { "groups" };
        spec[groups] = json!(a.user.groups);
        if !a.user.extra.is_empty() {
            spec["extra"] = json!(a.user.extra);
        }
        if !a.user.uid.is_empty() {
            spec["uid"] = json!(a.user.uid);
        }
        spec
    }

    /// Sends the review and waits for its answer (see the module doc).
    fn ask(&self, spec: Value) -> Result<Value, String> {
        let review = json!({"apiVersion": self.api_version, "kind": "SubjectAccessReview",
                            "metadata": {"creationTimestamp": null}, "spec": spec, "status": {"allowed": false}});
        let body = serde_json::to_vec(&review).unwrap_or_default();
        let remote = self.remote.clone();
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        let Some(runtime) = &self.runtime else { return Err("the webhook is stopped".into()) };
        runtime.spawn(async move {
            let _ = answer.send(remote.review(body, CALL_TIMEOUT, "authorization webhook").await);
        });
        let wait = move || {
            answered
                .recv()
                .unwrap_or_else(|_| Err("the webhook call ended without an answer".into()))
        };
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(wait),
            // The call runs on the authorizer's own runtime: waiting here blocks nothing it
            // needs.
            _ => wait(),
        }
    }
}

impl Drop for WebhookAuthorizer {
    fn drop(&mut self) {
        // A runtime may not be dropped inside another's context; this one needs no waiting.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The verdict a SubjectAccessReview answer gives.
fn verdict_of(answer: &Value) -> Verdict {
    let status = &answer["status"];
    let reason = status["reason"].as_str().unwrap_or("").to_string();
    let evaluation_error =
        status["evaluationError"].as_str().filter(|e| !e.is_empty()).map(String::from);
    let decision = if status["allowed"] == json!(true) {
        Decision::Allow
    } else if status["denied"] == json!(true) {
        Decision::Deny
    } else {
        Decision::NoOpinion
    };
    // As upstream: an allow or deny stands; an evaluation error matters only otherwise.
    let evaluation_error = if decision == Decision::NoOpinion { evaluation_error } else { None };
    Verdict { decision, reason, evaluation_error }
}

impl Authorizer for WebhookAuthorizer {
    fn authorize(&self, a: &Attributes<'_>) -> Verdict {
        let spec = self.spec(a);
        let key = spec.to_string();
        if let Some(verdict) = self.cache.get(&key) {
            return verdict;
        }
        match self.ask(spec) {
            Ok(answer) => {
                let verdict = verdict_of(&answer);
                let ttl =
                    if verdict.is_allowed() { self.authorized_ttl } else { self.unauthorized_ttl };
                self.cache.insert(key, verdict.clone(), ttl);
                verdict
            }
            Err(error) => {
                tracing::warn!(%error, "authorization webhook: no answer");
                Verdict {
                    decision: Decision::NoOpinion,
                    reason: String::new(),
                    evaluation_error: Some(error),
                }
            }
        }
    }

    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Rules {
        // Upstream's webhook cannot list what it allows.
        Rules { incomplete: true, ..Rules::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_decide_as_upstream_reads_them() {
        let allow = verdict_of(&json!({"status": {"allowed": true, "reason": "ok"}}));
        assert_eq!((allow.decision, allow.reason.as_str()), (Decision::Allow, "ok"));
        let deny =
            verdict_of(&json!({"status": {"allowed": false, "denied": true, "reason": "no"}}));
        assert_eq!(deny.decision, Decision::Deny);
        let none = verdict_of(&json!({"status": {"allowed": false, "evaluationError": "boom"}}));
        assert_eq!(
            (none.decision, none.evaluation_error.as_deref()),
            (Decision::NoOpinion, Some("boom"))
        );
    }
}
