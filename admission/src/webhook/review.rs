//! The admission.k8s.io AdmissionReview a webhook is sent and answers with: the request (v1,
//! or v1beta1 for a webhook that lists only that), upstream's checks of the answer
//! (`VerifyAdmissionResponse`) and its refusal (`ToStatusErr`).

use std::collections::BTreeMap;

use base64::Engine;
use rkube_apis::go_quote;
use serde_json::{json, Map, Value};

use super::matching::{Gvn, Invocation};
use crate::attributes::Attributes;
use crate::error::{AdmissionError, Status};

/// The AdmissionReview versions rkube sends, in no order of preference: the webhook's list
/// decides (its first one rkube has).
pub(crate) const VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// The version to send a webhook that accepts `accepted`, in its order.
pub(crate) fn negotiate(accepted: &[String]) -> Option<&'static str> {
    accepted.iter().find_map(|v| VERSIONS.iter().copied().find(|known| known == v))
}

fn gvk(g: &Gvn) -> Value {
    json!({"group": g.group, "version": g.version, "kind": g.name})
}

fn gvr(g: &Gvn) -> Value {
    json!({"group": g.group, "version": g.version, "resource": g.name})
}

/// The AdmissionReview for one call, field by field in the Go structs' order.
pub(crate) fn request(
    version: &str,
    uid: &str,
    a: &Attributes<'_>,
    invocation: &Invocation,
    object: Option<&Value>,
    old_object: Option<&Value>,
) -> Value {
    let mut r = Map::new();
    r.insert("uid".into(), json!(uid));
    r.insert("kind".into(), gvk(&invocation.kind));
    r.insert("resource".into(), gvr(&invocation.resource));
    if !a.subresource.is_empty() {
        r.insert("subResource".into(), json!(a.subresource));
    }
    r.insert(
        "requestKind".into(),
        json!({"group": a.kind.group, "version": a.kind.version, "kind": a.kind.kind}),
    );
    r.insert(
        "requestResource".into(),
        json!({"group": a.resource.group, "version": a.resource.version,
               "resource": a.resource.resource}),
    );
    if !a.subresource.is_empty() {
        r.insert("requestSubResource".into(), json!(a.subresource));
    }
    if !a.name.is_empty() {
        r.insert("name".into(), json!(a.name));
    }
    if !a.namespace.is_empty() {
        r.insert("namespace".into(), json!(a.namespace));
    }
    r.insert("operation".into(), json!(a.operation.as_str()));
    let mut user = Map::new();
    if !a.user.name.is_empty() {
        user.insert("username".into(), json!(a.user.name));
    }
    if !a.user.uid.is_empty() {
        user.insert("uid".into(), json!(a.user.uid));
    }
    if !a.user.groups.is_empty() {
        user.insert("groups".into(), json!(a.user.groups));
    }
    if let Some(extra) = a.user.extra.filter(|e| !e.is_empty()) {
        user.insert("extra".into(), json!(extra));
    }
    r.insert("userInfo".into(), Value::Object(user));
    r.insert("object".into(), object.cloned().unwrap_or(Value::Null));
    r.insert("oldObject".into(), old_object.cloned().unwrap_or(Value::Null));
    r.insert("dryRun".into(), json!(a.dry_run));
    r.insert("options".into(), a.options.to_json(a.dry_run));
    json!({
        "kind": "AdmissionReview",
        "apiVersion": format!("admission.k8s.io/{version}"),
        "request": Value::Object(r),
    })
}

/// What a webhook answered, checked.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    pub allowed: bool,
    /// The JSON patch, decoded from base64 (empty for none).
    pub patch: Vec<u8>,
    pub patch_type: String,
    /// The `status` (a `metav1.Status`) a refusal carries.
    pub result: Option<Value>,
    pub warnings: Vec<String>,
    pub audit_annotations: BTreeMap<String, String>,
}

/// Upstream's `VerifyAdmissionResponse`, with its messages; `body` answers a request of
/// `version` with `uid`.
pub(crate) fn verify(
    version: &str,
    uid: &str,
    mutating: bool,
    body: &[u8],
) -> Result<Verdict, String> {
    let review: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let kind = review["kind"].as_str().unwrap_or("");
    let api_version = review["apiVersion"].as_str().unwrap_or("");
    if kind.is_empty() {
        return Err(format!("Object 'Kind' is missing in '{}'", String::from_utf8_lossy(body)));
    }
    let response = &review["response"];
    if response.is_null() {
        return Err("webhook response was absent".into());
    }
    if version == "v1" {
        let got = response["uid"].as_str().unwrap_or("");
        if got != uid {
            return Err(format!("expected response.uid={}, got {}", go_quote(uid), go_quote(got)));
        }
        if (api_version, kind) != ("admission.k8s.io/v1", "AdmissionReview") {
            let (group, v) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            return Err(format!(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{v}, Kind={kind}"
            ));
        }
    }
    let patch = match response["patch"].as_str() {
        Some(p) => base64::engine::general_purpose::STANDARD
            .decode(p)
            .map_err(|e| format!("illegal base64 data in response.patch: {e}"))?,
        None => Vec::new(),
    };
    let patch_type = response["patchType"].as_str().unwrap_or("").to_string();
    if version == "v1" {
        if mutating && !patch.is_empty() && patch_type.is_empty() {
            return Err("webhook returned response.patch but not response.patchType".into());
        }
        if mutating && patch.is_empty() && !patch_type.is_empty() {
            return Err("webhook returned response.patchType but not response.patch".into());
        }
        if !mutating && !patch.is_empty() {
            return Err("validating webhook may not return response.patch".into());
        }
        if !mutating && !patch_type.is_empty() {
            return Err("validating webhook may not return response.patchType".into());
        }
    }
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
            .unwrap_or_default()
    };
    Ok(Verdict {
        allowed: response["allowed"].as_bool().unwrap_or(false),
        patch,
        patch_type,
        result: Some(response["status"].clone()).filter(|s| s.is_object()),
        warnings: strings(&response["warnings"]),
        audit_annotations: response["auditAnnotations"]
            .as_object()
            .map(|m| {
                m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect()
            })
            .unwrap_or_default(),
    })
}

/// Upstream's `ToStatusErr`: the webhook's own Status, at least a 400 and a Failure, its
/// message prefixed with who refused.
pub(crate) fn denied(webhook: &str, result: Option<&Value>) -> AdmissionError {
    let denied_by = format!("admission webhook {} denied the request", go_quote(webhook));
    let empty = Value::Null;
    let result = result.unwrap_or(&empty);
    let text = |field: &str| result[field].as_str().unwrap_or("").to_string();
    let code = result["code"].as_u64().filter(|c| *c >= 400 && *c <= 599).unwrap_or(400) as u16;
    let (message, reason) = (text("message"), text("reason"));
    let message = match (message.is_empty(), reason.is_empty()) {
        (false, _) => format!("{denied_by}: {message}"),
        (true, false) => format!("{denied_by}: {reason}"),
        (true, true) => format!("{denied_by} without explanation"),
    };
    AdmissionError::Status(Box::new(Status {
        code,
        reason,
        message,
        details: result["details"].clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_the_webhooks_first_known_one() {
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(negotiate(&list(&["v2", "v1beta1", "v1"])), Some("v1beta1"));
        assert_eq!(negotiate(&list(&["v1", "v1beta1"])), Some("v1"));
        assert_eq!(negotiate(&list(&["v2"])), None);
    }

    #[test]
    fn answers_are_checked_as_upstream() {
        let ok = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,"warnings":["w"]}}"#;
        let v = verify("v1", "u", false, ok).unwrap();
        assert!(v.allowed);
        assert_eq!(v.warnings, ["w"]);
        assert_eq!(
            verify("v1", "x", false, ok).unwrap_err(),
            "expected response.uid=\"x\", got \"u\""
        );
        let beta = br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","response":{"uid":"u","allowed":true}}"#;
        assert_eq!(
            verify("v1", "u", false, beta).unwrap_err(),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview"
        );
        assert!(verify("v1beta1", "other", false, beta).unwrap().allowed);
        let patched = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,"patch":"W10="}}"#;
        assert_eq!(
            verify("v1", "u", true, patched).unwrap_err(),
            "webhook returned response.patch but not response.patchType"
        );
        assert_eq!(
            verify("v1", "u", false, patched).unwrap_err(),
            "validating webhook may not return response.patch"
        );
        assert_eq!(
            verify("v1", "u", false, b"{\"response\":{}}").unwrap_err(),
            "Object 'Kind' is missing in '{\"response\":{}}'"
        );
    }

    #[test]
    fn refusals_carry_the_webhooks_status() {
        let e = denied(
            "deny.example.com",
            Some(&json!({"code": 403, "reason": "Forbidden",
            "message": "no pods named bad"})),
        );
        assert_eq!(
            e,
            AdmissionError::Status(Box::new(Status {
                code: 403,
                reason: "Forbidden".into(),
                message:
                    "admission webhook \"deny.example.com\" denied the request: no pods named bad"
                        .into(),
                details: Value::Null,
            }))
        );
        let AdmissionError::Status(status) = denied("w", None) else { panic!() };
        let Status { code, message, .. } = *status;
        assert_eq!(
            (code, message.as_str()),
            (400, "admission webhook \"w\" denied the request without explanation")
        );
        let AdmissionError::Status(status) =
            denied("w", Some(&json!({"code": 200, "reason": "NotAllowed"})))
        else {
            panic!()
        };
        let Status { code, message, .. } = *status;
        assert_eq!(
            (code, message.as_str()),
            (400, "admission webhook \"w\" denied the request: NotAllowed")
        );
    }
}
