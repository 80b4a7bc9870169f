//! The audit annotations the webhook plugins leave on a request, as kube-apiserver's:
//!
//! - a webhook's own `auditAnnotations` as `<webhook name>/<key>` (a key that does not make a
//!   qualified name, or a second value for a key, is logged and dropped);
//! - per mutating webhook called, `mutation.webhook.admission.k8s.io/round_<r>_index_<i>`:
//!   `{"configuration":...,"webhook":...,"mutated":...}`, and when it sent a patch that was
//!   applied, `patch.webhook.admission.k8s.io/round_<r>_index_<i>` (only on events of level
//!   Request or more): `{"configuration":...,"webhook":...,"patch":[...],"patchType":"JSONPatch"}`.
//!   The round is 0, or 1 when reinvoked; the index is the webhook's place among all mutating
//!   webhooks, called or not;
//! - per webhook whose call failed and was ignored (`failurePolicy: Ignore`),
//!   `failed-open.mutation.webhook.admission.k8s.io/round_<r>_index_<i>` or
//!   `failed-open.validating.webhook.admission.k8s.io/round_0_index_<i>` (the index among the
//!   validating webhooks called) with the webhook's name.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::Webhook;
use crate::attributes::{go_marshal, Attributes, AuditLevel};

const MUTATION: &str = "mutation.webhook.admission.k8s.io/";
const PATCH: &str = "patch.webhook.admission.k8s.io/";
const FAILED_OPEN_MUTATION: &str = "failed-open.mutation.webhook.admission.k8s.io/";
const FAILED_OPEN_VALIDATING: &str = "failed-open.validating.webhook.admission.k8s.io/";

/// A webhook answer's `auditAnnotations`, each as `<webhook name>/<key>`.
pub(super) fn from_answer(
    a: &Attributes<'_>,
    hook: &Webhook,
    mutating: bool,
    annotations: &BTreeMap<String, String>,
) {
    let kind = if mutating { "mutating" } else { "validating" };
    for (key, value) in annotations {
        let key = format!("{}/{key}", hook.name);
        if let Err(e) = a.audit_annotations.add(key.as_str(), value.as_str()) {
            tracing::warn!(
                "Failed to set admission audit annotation {key} to {value} for {kind} webhook {}: {e}",
                hook.name
            );
        }
    }
}

/// Where one call of a mutating webhook leaves its annotations.
pub(super) struct MutationAnnotator<'h> {
    suffix: String,
    hook: &'h Webhook,
}

impl<'h> MutationAnnotator<'h> {
    pub(super) fn new(round: u8, index: usize, hook: &'h Webhook) -> MutationAnnotator<'h> {
        MutationAnnotator { suffix: format!("round_{round}_index_{index}"), hook }
    }

    /// Whether the call changed the object.
    pub(super) fn mutation(&self, a: &Attributes<'_>, mutated: bool) {
        let key = format!("{MUTATION}{}", self.suffix);
        let value = json!({
            "configuration": self.hook.configuration,
            "webhook": self.hook.name,
            "mutated": mutated,
        });
        let value = go_marshal(&value);
        if let Err(e) = a.audit_annotations.add(key.as_str(), value.as_str()) {
            tracing::warn!(
                "failed to set mutation annotation for mutating webhook key {key} to {value}: {e}"
            );
        }
    }

    /// The JSON patch the call applied (from level Request on: it shows request content).
    pub(super) fn patch(&self, a: &Attributes<'_>, patch: &Value) {
        let key = format!("{PATCH}{}", self.suffix);
        let value = json!({
            "configuration": self.hook.configuration,
            "webhook": self.hook.name,
            "patch": go_patch(patch),
            "patchType": "JSONPatch",
        });
        if a.audit_annotations
            .add_with_level(key.as_str(), go_marshal(&value), AuditLevel::Request)
            .is_err()
        {
            // Not the patch itself: it may hold what the log should not show.
            tracing::warn!(
                "failed to set patch annotation for mutating webhook key {key}; confugiration name: {}, webhook name: {}",
                self.hook.configuration,
                self.hook.name
            );
        }
    }

    /// The call failed and the failure policy let the request through.
    pub(super) fn failed_open(&self, a: &Attributes<'_>) {
        failed_open(a, format!("{FAILED_OPEN_MUTATION}{}", self.suffix), self.hook, "mutating");
    }
}

/// A validating webhook's call (the `index`th of those called) failed and was ignored.
pub(super) fn validating_failed_open(a: &Attributes<'_>, index: usize, hook: &Webhook) {
    failed_open(a, format!("{FAILED_OPEN_VALIDATING}round_0_index_{index}"), hook, "validating");
}

fn failed_open(a: &Attributes<'_>, key: String, hook: &Webhook, kind: &str) {
    if let Err(e) = a.audit_annotations.add(key.as_str(), hook.name.as_str()) {
        tracing::warn!(
            "Failed to set admission audit annotation {key} to {} for {kind} webhook {}: {e}",
            hook.name,
            hook.name
        );
    }
}

/// The patch as Go writes the decoded one: each operation a map (keys sorted), each member's
/// value kept as the webhook wrote it.
fn go_patch(patch: &Value) -> Value {
    let Some(operations) = patch.as_array() else { return patch.clone() };
    let sorted = operations.iter().map(|op| match op.as_object() {
        Some(members) => {
            let mut keys: Vec<&String> = members.keys().collect();
            keys.sort();
            let sorted: Map<String, Value> =
                keys.into_iter().map(|k| (k.clone(), members[k].clone())).collect();
            Value::Object(sorted)
        }
        None => op.clone(),
    });
    Value::Array(sorted.collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_operations_are_written_with_their_keys_sorted() {
        let patch: Value = serde_json::from_str(
            r#"[{"path":"/metadata/labels/a","value":{"z":"<1>","b":2},"op":"add"}]"#,
        )
        .unwrap();
        assert_eq!(
            go_marshal(&go_patch(&patch)),
            r#"[{"op":"add","path":"/metadata/labels/a","value":{"z":"\u003c1\u003e","b":2}}]"#
        );
    }
}
