//! `PodSecurity`: the Pod Security Standards (privileged, baseline, restricted), applied
//! per namespace from its `pod-security.kubernetes.io/*` labels, as upstream's
//! pod-security-admission library does inside kube-apiserver.
//!
//! - Pods: a create, or an update that changes what the standards look at (a container's
//!   image, containers added, an ephemeral container), is refused when it violates the
//!   namespace's enforce level (`pods "x" is forbidden: violates PodSecurity
//!   "restricted:latest": <reason> (<detail>), ...`), and otherwise warned about when it
//!   violates the warn level (`would violate PodSecurity "baseline:latest": ...`). Status,
//!   binding, eviction and the other connect-style subresources are not checked.
//! - Workload resources ([`templates`]): their pod templates get the warnings, never a
//!   refusal (their pods are refused when they are made).
//! - Namespaces ([`namespace`]): labels that do not parse are refused (422); a stricter enforce
//!   level warns about the pods already there.
//!
//! - Audit annotations (the request's audit event), as upstream's: a pod checked gets
//!   `pod-security.kubernetes.io/enforce-policy` (`<level>:<version>` enforced, also when
//!   refused; `privileged:latest` for a namespace privileged in every mode), pods and workload
//!   resources get `pod-security.kubernetes.io/audit-violations` (`would violate PodSecurity
//!   "<audit level>:<version>": ...`) when they violate the audit level, and
//!   `pod-security.kubernetes.io/error` when the namespace's labels do not parse (`Failed to
//!   parse policy: ...`) or a workload's namespace cannot be read.
//!
//! Where to read: [`level`] (labels to a policy), [`evaluator`] (which checks a level at a
//! version runs, in which order) and [`checks`] (one module per rule, pure functions over a
//! [`pod::Pod`]).
//!
//! Unlike upstream, nothing is exempt: kube-apiserver's exemptions (users, namespaces, runtime
//! classes) and its defaults come from an AdmissionConfiguration file, which rkube has no flag
//! for, and upstream's defaults are privileged everywhere with no exemptions (so the
//! `pod-security.kubernetes.io/exempt` annotation never applies).

use k8s_openapi::api::core::v1::{Container, PodSpec};
use rkube_apis::go_quote;
use serde_json::Value;

use rkube_apis::validation::FieldError;

use crate::attributes::{Attributes, Operation};
use crate::error::AdmissionError;
use crate::state::{ClusterState, Freshness, GroupResource};
use crate::ValidatingPlugin;

pub mod checks;
pub mod evaluator;
pub mod level;
pub mod namespace;
pub mod pod;
pub mod templates;

use evaluator::evaluate;
use level::{Level, Policy};
use pod::Pod;

pub const NAME: &str = "PodSecurity";

const NAMESPACES: GroupResource<'static> = GroupResource::new("", "namespaces");

/// Pod subresources that cannot change what the standards look at.
const IGNORED_POD_SUBRESOURCES: &[&str] =
    &["exec", "attach", "binding", "eviction", "log", "portforward", "proxy", "status"];

#[derive(Clone, Copy, Debug, Default)]
pub struct PodSecurity;

#[async_trait::async_trait]
impl ValidatingPlugin for PodSecurity {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn validate(
        &self,
        a: &Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if !matches!(a.operation, Operation::Create | Operation::Update) {
            return Ok(());
        }
        let (group, resource) = (a.resource.group, a.resource.resource);
        if a.is("", "namespaces") {
            namespace::validate(a, state).await
        } else if a.is("", "pods") {
            validate_pod(a, state).await
        } else if templates::has_pod(group, resource) {
            validate_template(a, state).await;
            Ok(())
        } else {
            Ok(())
        }
    }
}

/// Where upstream's audit annotations are written: `pod-security.kubernetes.io/<key>`.
const ANNOTATION_PREFIX: &str = "pod-security.kubernetes.io/";

/// The policy of the request's namespace, with the errors of its labels; the reason when
/// the namespace cannot be read.
async fn namespace_policy(
    a: &Attributes<'_>,
    state: &dyn ClusterState,
) -> Result<(Policy, Vec<FieldError>), String> {
    let found = state.get(NAMESPACES, None, a.namespace, Freshness::Cached).await;
    let namespace = match found {
        Ok(Some(namespace)) => namespace,
        Ok(None) => return Err(format!("namespaces {} not found", go_quote(a.namespace))),
        Err(e) => return Err(e.to_string()),
    };
    Ok(Policy::from_labels(namespace.labels()))
}

/// Adds `pod-security.kubernetes.io/<key>` to the request's audit event.
fn annotate(a: &Attributes<'_>, key: &str, value: String) {
    let key = format!("{ANNOTATION_PREFIX}{key}");
    if let Err(e) = a.audit_annotations.add(key.as_str(), value.as_str()) {
        tracing::warn!("Failed to set annotations[{key:?}] to {value:?} for audit: {e}");
    }
}

/// Labels that do not parse: the `error` annotation, as Go prints the error list (one error
/// alone, else `[a, b]` without repeats).
fn annotate_label_errors(a: &Attributes<'_>, errors: &[FieldError]) {
    if errors.is_empty() {
        return;
    }
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let text = format!("{}: {}", e.field, e.message);
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    let text = match seen.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    annotate(a, "error", format!("Failed to parse policy: {text}"));
}

/// The audit level's findings, if the pod violates it.
fn annotate_audit(a: &Attributes<'_>, policy: &Policy, found: &evaluator::Violations) {
    if !found.allowed() {
        let text = format!(
            "would violate PodSecurity {}: {}",
            go_quote(&policy.audit.to_string()),
            found.detail()
        );
        annotate(a, "audit-violations", text);
    }
}

async fn validate_pod(a: &Attributes<'_>, state: &dyn ClusterState) -> Result<(), AdmissionError> {
    if IGNORED_POD_SUBRESOURCES.contains(&a.subresource) {
        return Ok(());
    }
    let Ok((policy, errors)) = namespace_policy(a, state).await else {
        return Err(AdmissionError::Internal(format!(
            "Internal error occurred: failed to lookup namespace {}",
            go_quote(a.namespace)
        )));
    };
    if errors.is_empty() && policy.fully_privileged() {
        annotate(a, "enforce-policy", "privileged:latest".to_string());
        return Ok(());
    }
    let decode = |object: Option<&Value>, what: &str| {
        object
            .and_then(|o| Pod::decode(o).ok())
            .ok_or_else(|| AdmissionError::BadRequest(format!("failed to decode {what}")))
    };
    let pod = decode(a.object(), "pod")?;
    if a.operation == Operation::Update {
        let old = decode(a.old_object, "old pod")?;
        if !significant_update(&pod, &old) {
            return Ok(());
        }
    }
    annotate_label_errors(a, &errors);
    annotate(a, "enforce-policy", policy.enforce.to_string());
    let enforced = evaluate(policy.enforce, &pod);
    let audited = if policy.audit == policy.enforce {
        enforced.clone()
    } else {
        evaluate(policy.audit, &pod)
    };
    annotate_audit(a, &policy, &audited);
    if !enforced.allowed() {
        return Err(AdmissionError::Forbidden {
            group: a.resource.group.to_string(),
            resource: a.resource.resource.to_string(),
            // The request's name (a create's generated one by now), never a generateName.
            name: a.name.to_string(),
            reason: format!(
                "violates PodSecurity {}: {}",
                go_quote(&policy.enforce.to_string()),
                enforced.detail()
            ),
            causes: Vec::new(),
        });
    }
    let warned = match policy.warn {
        warn if warn == policy.enforce => enforced,
        warn if warn == policy.audit => audited,
        warn => evaluate(warn, &pod),
    };
    warn(a, &policy, &warned);
    Ok(())
}

/// A workload resource's pod template gets the warnings and the audit annotations; there is
/// nothing to refuse, and a namespace or template that cannot be read lets it through.
async fn validate_template(a: &Attributes<'_>, state: &dyn ClusterState) {
    if !a.subresource.is_empty() {
        return;
    }
    let (policy, errors) = match namespace_policy(a, state).await {
        Ok(found) => found,
        Err(e) => {
            let text = format!("failed to lookup namespace {}: {e}", go_quote(a.namespace));
            return annotate(a, "error", text);
        }
    };
    if errors.is_empty()
        && policy.warn.level == Level::Privileged
        && policy.audit.level == Level::Privileged
    {
        return;
    }
    let template =
        a.object().and_then(|o| templates::pod_of(a.resource.group, a.resource.resource, o));
    let Some(Ok(pod)) = template.map(Pod::decode) else { return };
    annotate_label_errors(a, &errors);
    let audited = evaluate(policy.audit, &pod);
    annotate_audit(a, &policy, &audited);
    let warned = if policy.warn == policy.audit { audited } else { evaluate(policy.warn, &pod) };
    warn(a, &policy, &warned);
}

fn warn(a: &Attributes<'_>, policy: &Policy, found: &evaluator::Violations) {
    if !found.allowed() {
        a.warnings.add(format!(
            "would violate PodSecurity {}: {}",
            go_quote(&policy.warn.to_string()),
            found.detail()
        ));
    }
}

/// Whether a pod update changes what the standards look at: the only such fields a pod
/// update may change are container images, and ephemeral containers may be added.
fn significant_update(new: &Pod, old: &Pod) -> bool {
    fn images(containers: &[Container]) -> Vec<&str> {
        containers.iter().map(|c| c.image.as_deref().unwrap_or("")).collect()
    }
    fn init(spec: &PodSpec) -> Vec<&str> {
        images(spec.init_containers.as_deref().unwrap_or_default())
    }
    let (new, old) = (&new.spec, &old.spec);
    if images(&new.containers) != images(&old.containers) || init(new) != init(old) {
        return true;
    }
    new.ephemeral_containers.iter().flatten().any(|c| {
        let was = old.ephemeral_containers.iter().flatten().find(|o| o.name == c.name);
        was.is_none_or(|o| o.image.as_deref().unwrap_or("") != c.image.as_deref().unwrap_or(""))
    })
}

#[cfg(test)]
mod tests;
