//! `validatingadmissionpolicy-status-controller`, as kube-controller-manager's: each
//! ValidatingAdmissionPolicy's `status.typeChecking.expressionWarnings` says which of its
//! expressions do not type-check against the kinds its `matchConstraints` match, and
//! `status.observedGeneration` which generation was checked.
//!
//! Start at [`run`]: policies are the queue (kube-runtime's `Controller`); a policy whose
//! generation was not yet observed has its kinds found ([`schemas`]: discovery and the
//! OpenAPI v3 documents, through the public API only), its expressions checked
//! ([`typecheck`]) and its status written through the `status` subresource.
//!
//! As upstream: rules with wildcard groups or versions are skipped, as are wildcard and
//! subresource names; at most [`schemas::MAX_TYPES`] kinds are checked; a kind without a
//! published schema is not checked; a policy is checked again when its generation changes
//! (not when a definition it matches does).

pub mod schemas;
pub mod typecheck;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::{json, Value};

use schemas::{Schemas, MAX_TYPES};
use typecheck::Target;

/// The controller's name, as upstream's.
pub const NAME: &str = "validatingadmissionpolicy-status-controller";

/// Why a sync failed (it is retried).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("policy: {0}")]
    Json(#[from] serde_json::Error),
}

/// Runs the controller until the task is aborted.
pub async fn run(client: Client) {
    let api = Api::<ValidatingAdmissionPolicy>::all(client.clone());
    Controller::new(api, watcher::Config::default())
        .run(reconcile, error_policy, Arc::new(client))
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "{NAME} reconcile");
            }
        })
        .await;
}

fn error_policy(_: Arc<ValidatingAdmissionPolicy>, error: &Error, _: Arc<Client>) -> Action {
    tracing::warn!(%error, "{NAME}");
    Action::requeue(Duration::from_secs(1))
}

async fn reconcile(
    policy: Arc<ValidatingAdmissionPolicy>,
    client: Arc<Client>,
) -> Result<Action, Error> {
    let generation = policy.metadata.generation.unwrap_or_default();
    let observed = policy.status.as_ref().and_then(|s| s.observed_generation).unwrap_or(0);
    if generation <= observed {
        return Ok(Action::await_change());
    }
    let value = serde_json::to_value(&*policy)?;
    let mut schemas = Schemas::new((*client).clone());
    let targets = targets(&value, &mut schemas).await;
    let params = match parse_api_version(&value["spec"]["paramKind"]) {
        Some((group, version, kind)) => schemas.schema(&group, &version, &kind).await,
        None => None,
    };
    let warnings = typecheck::expression_warnings(&value, &targets, params.as_ref());
    let status = json!({"status": {
        "observedGeneration": generation,
        "typeChecking": {"expressionWarnings": if warnings.is_empty() { Value::Null } else { Value::Array(warnings) }},
    }});
    let api = Api::<ValidatingAdmissionPolicy>::all((*client).clone());
    let params = PatchParams { field_manager: Some(NAME.into()), ..Default::default() };
    match api.patch_status(&policy.name_any(), &params, &Patch::Merge(&status)).await {
        Ok(_) => tracing::debug!(policy = policy.name_any(), generation, "type checked"),
        Err(e) if crate::api_errors::code(&e) == Some(404) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(Action::await_change())
}

/// A `paramKind`'s group, version and kind.
fn parse_api_version(param_kind: &Value) -> Option<(String, String, String)> {
    let api_version = param_kind["apiVersion"].as_str()?;
    let kind = param_kind["kind"].as_str().filter(|k| !k.is_empty())?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    Some((group.to_string(), version.to_string(), kind.to_string()))
}

/// The group, version and resource names of a rule, sorted, or `None` for a rule upstream
/// skips (a wildcard group or version).
fn rule_names(rule: &Value) -> Option<(Vec<String>, Vec<String>, Vec<String>)> {
    let names = |key: &str| -> Vec<String> {
        let mut names: Vec<String> = rule[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect();
        names.sort();
        names
    };
    let (groups, versions) = (names("apiGroups"), names("apiVersions"));
    if groups.iter().chain(&versions).any(|n| n.contains('*')) {
        return None;
    }
    let resources: Vec<String> =
        names("resources").into_iter().filter(|r| !r.contains(['*', '/'])).collect();
    Some((groups, versions, resources))
}

/// The kinds the policy's `matchConstraints` match, with their schemas, sorted by group,
/// version and kind.
async fn targets(policy: &Value, schemas: &mut Schemas) -> Vec<Target> {
    let mut kinds = BTreeSet::new();
    let rules = policy["spec"]["matchConstraints"]["resourceRules"].as_array();
    'rules: for rule in rules.into_iter().flatten() {
        let Some((groups, versions, resources)) = rule_names(rule) else { continue };
        for group in &groups {
            for version in &versions {
                for resource in &resources {
                    if let Some(kind) = schemas.kind_of(group, version, resource).await {
                        kinds.insert((group.clone(), version.clone(), kind));
                        if kinds.len() == MAX_TYPES {
                            break 'rules;
                        }
                    }
                }
            }
        }
    }
    let mut targets = Vec::new();
    for (group, version, kind) in kinds {
        if let Some(schema) = schemas.schema(&group, &version, &kind).await {
            targets.push(Target { group, version, kind, schema });
        }
    }
    targets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_skip_wildcards_and_subresources() {
        let rule = json!({"apiGroups": ["apps", ""], "apiVersions": ["v1"],
            "resources": ["deployments", "pods/status", "*", "replicasets"]});
        assert_eq!(
            rule_names(&rule),
            Some((
                vec!["".into(), "apps".into()],
                vec!["v1".into()],
                vec!["deployments".into(), "replicasets".into()]
            ))
        );
        assert_eq!(rule_names(&json!({"apiGroups": ["*"], "apiVersions": ["v1"]})), None);
        assert_eq!(
            parse_api_version(&json!({"apiVersion": "v1", "kind": "ConfigMap"})),
            Some(("".into(), "v1".into(), "ConfigMap".into()))
        );
        assert_eq!(
            parse_api_version(&json!({"apiVersion": "example.com/v1", "kind": "Limit"})),
            Some(("example.com".into(), "v1".into(), "Limit".into()))
        );
    }
}
