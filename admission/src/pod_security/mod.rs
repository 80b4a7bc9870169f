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
//! Where to read: [`level`] (labels to a policy), [`evaluator`] (which checks a level at a
//! version runs, in which order) and [`checks`] (one module per rule, pure functions over a
//! [`pod::Pod`]).
//!
//! Unlike upstream, nothing is exempt: kube-apiserver's exemptions (users, namespaces, runtime
//! classes) and its defaults come from an AdmissionConfiguration file, which rkube has no flag
//! for, and upstream's defaults are privileged everywhere with no exemptions. Audit mode is
//! read but has no effect: upstream writes its findings as audit annotations, and rkube has no
//! audit log.

use k8s_openapi::api::core::v1::{Container, PodSpec};
use rkube_apis::go_quote;
use serde_json::Value;

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

/// The policy of the request's namespace, with whether its labels all parsed; `None` when
/// the namespace cannot be read.
async fn namespace_policy(a: &Attributes<'_>, state: &dyn ClusterState) -> Option<(Policy, bool)> {
    let found = state.get(NAMESPACES, None, a.namespace, Freshness::Cached).await;
    let namespace = found.ok().flatten()?;
    let (policy, errors) = Policy::from_labels(namespace.labels());
    Some((policy, errors.is_empty()))
}

async fn validate_pod(a: &Attributes<'_>, state: &dyn ClusterState) -> Result<(), AdmissionError> {
    if IGNORED_POD_SUBRESOURCES.contains(&a.subresource) {
        return Ok(());
    }
    let Some((policy, valid)) = namespace_policy(a, state).await else {
        return Err(AdmissionError::Internal(format!(
            "Internal error occurred: failed to lookup namespace {}",
            go_quote(a.namespace)
        )));
    };
    if valid && policy.fully_privileged() {
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
    let enforced = evaluate(policy.enforce, &pod);
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
    let warned = if policy.warn == policy.enforce { enforced } else { evaluate(policy.warn, &pod) };
    warn(a, &policy, &warned);
    Ok(())
}

/// A workload resource's pod template gets the warnings; there is nothing to refuse, and a
/// namespace or template that cannot be read lets it through.
async fn validate_template(a: &Attributes<'_>, state: &dyn ClusterState) {
    if !a.subresource.is_empty() {
        return;
    }
    let Some((policy, _)) = namespace_policy(a, state).await else { return };
    // Audit would look too, but its findings have nowhere to go (no audit log).
    if policy.warn.level == Level::Privileged {
        return;
    }
    let template =
        a.object().and_then(|o| templates::pod_of(a.resource.group, a.resource.resource, o));
    let Some(Ok(pod)) = template.map(Pod::decode) else { return };
    warn(a, &policy, &evaluate(policy.warn, &pod));
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
