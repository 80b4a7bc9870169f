//! Webhook conversion of custom resources (`spec.conversion.strategy: Webhook`): what a
//! definition's webhook is ([`WebhookConversion::of`]), the `ConversionReview` the server
//! sends ([`WebhookConversion::review`]), and how an answer is read and checked
//! ([`WebhookConversion::converted`], [`check_converted`]), as apiextensions-apiserver's
//! webhook converter does. Pure: the server (`crd_conversion`) makes the call.

use std::sync::Arc;

use base64::Engine;
use serde_json::{json, Map, Value};

use crate::validation::values::{annotation_map, label_map};
use crate::validation::FieldError;

/// How long the server waits for a conversion webhook (upstream's webhook client timeout).
pub const TIMEOUT_SECONDS: u64 = 30;

/// A Service a webhook is reached through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceReference {
    pub namespace: String,
    pub name: String,
    /// The path on the Service (`""` for `/`).
    pub path: String,
    pub port: u16,
}

/// A definition's conversion webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookConversion {
    /// The webhook's `clientConfig.url`, when it is reached by URL.
    pub url: Option<String>,
    /// The webhook's `clientConfig.service`, when it is reached through a Service.
    pub service: Option<ServiceReference>,
    /// The PEM CA bundle to verify the webhook with (empty: the system's roots).
    pub ca_bundle: Vec<u8>,
    /// The `ConversionReview` versions the webhook accepts, in its order of preference.
    pub review_versions: Vec<String>,
}

/// A review as sent: the version it is in (`v1` or `v1beta1`) and its JSON.
pub struct Review {
    pub version: &'static str,
    pub body: Value,
}

impl WebhookConversion {
    /// The webhook of a definition whose conversion strategy is `Webhook` (validation made
    /// sure it has one); `None` for strategy `None`.
    pub fn of(crd: &Value) -> Option<Arc<WebhookConversion>> {
        let conversion = &crd["spec"]["conversion"];
        if conversion["strategy"] != "Webhook" {
            return None;
        }
        let webhook = &conversion["webhook"];
        let config = &webhook["clientConfig"];
        let text = |v: &Value| v.as_str().unwrap_or("").to_string();
        let service = config.get("service").filter(|s| s.is_object()).map(|s| ServiceReference {
            namespace: text(&s["namespace"]),
            name: text(&s["name"]),
            path: text(&s["path"]),
            port: s["port"].as_u64().and_then(|p| u16::try_from(p).ok()).unwrap_or(443),
        });
        let ca_bundle = config["caBundle"]
            .as_str()
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default();
        let review_versions = webhook["conversionReviewVersions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect();
        Some(Arc::new(WebhookConversion {
            url: config["url"].as_str().map(String::from),
            service,
            ca_bundle,
            review_versions,
        }))
    }

    /// The review asking for `objects` in `desired` (an apiVersion), in the first of the
    /// webhook's versions the server knows; `Err` when it knows none.
    pub fn review(&self, uid: &str, desired: &str, objects: &[Value]) -> Result<Review, String> {
        let version = self
            .review_versions
            .iter()
            .find_map(|v| match v.as_str() {
                "v1" => Some("v1"),
                "v1beta1" => Some("v1beta1"),
                _ => None,
            })
            .ok_or_else(|| "no supported conversion review versions".to_string())?;
        Ok(Review {
            version,
            body: json!({
                "kind": "ConversionReview",
                "apiVersion": format!("apiextensions.k8s.io/{version}"),
                "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
            }),
        })
    }

    /// The converted objects of an answer to a review in `version` with `uid`, or why the
    /// answer is not one (upstream's texts; a failed conversion's own message when it has
    /// one). A v1beta1 answer's kind and uid are not checked, as upstream.
    pub fn converted(version: &str, uid: &str, answer: &Value) -> Result<Vec<Value>, String> {
        if version == "v1" {
            let gvk = |api_version: &str, kind: &str| match api_version.split_once('/') {
                Some((group, version)) => format!("{group}/{version}, Kind={kind}"),
                None => format!("/{api_version}, Kind={kind}"),
            };
            let api_version = answer["apiVersion"].as_str().unwrap_or("");
            let kind = answer["kind"].as_str().unwrap_or("");
            if (api_version, kind) != ("apiextensions.k8s.io/v1", "ConversionReview") {
                return Err(format!(
                    "expected webhook response of {}, got {}",
                    gvk("apiextensions.k8s.io/v1", "ConversionReview"),
                    gvk(api_version, kind)
                ));
            }
        }
        let response = match &answer["response"] {
            Value::Object(r) => r,
            _ => return Err("no response provided".into()),
        };
        if version == "v1" {
            let got = response.get("uid").and_then(Value::as_str).unwrap_or("");
            if got != uid {
                return Err(format!("expected response.uid={uid:?}, got {got:?}"));
            }
        }
        let result = &response.get("result").cloned().unwrap_or(Value::Null);
        if result["status"] != "Success" {
            if let Some(message) = result["message"].as_str().filter(|m| !m.is_empty()) {
                return Err(message.to_string());
            }
            let status = result["status"].as_str().unwrap_or("");
            return Err(format!("response.result.status was '{status}', not 'Success'"));
        }
        Ok(response.get("convertedObjects").and_then(Value::as_array).cloned().unwrap_or_default())
    }
}

/// Checks one converted object against the object it came from and gives it the original's
/// metadata with the converted labels and annotations (the only metadata a webhook may
/// change), as upstream's converter; `Err` says what is wrong, in upstream's words after
/// `conversion webhook for <gvk> returned ...`.
pub fn check_converted(
    original: &Value,
    converted: Value,
    desired: &str,
    index: usize,
) -> Result<Value, String> {
    let invalid =
        |why: String| format!("returned invalid converted object at index {index}: {why}");
    let got_version = converted["apiVersion"].as_str().unwrap_or("");
    if got_version != desired {
        return Err(invalid(format!(
            "invalid groupVersion (expected {desired}, received {got_version})"
        )));
    }
    let (kind, got_kind) =
        (original["kind"].as_str().unwrap_or(""), converted["kind"].as_str().unwrap_or(""));
    if kind != got_kind {
        return Err(invalid(format!("invalid kind (expected {kind}, received {got_kind})")));
    }
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (a, b) = (
            original["metadata"][field].as_str().unwrap_or(""),
            converted["metadata"][field].as_str().unwrap_or(""),
        );
        if a != b {
            return Err(invalid(format!("must have the same {what}: {a} != {b}")));
        }
    }
    restore_metadata(original, converted)
        .map_err(|why| format!("returned invalid metadata in object at index {index}: {why}"))
}

/// The converted object with the original's metadata, but for its own labels and
/// annotations (string maps, or absent).
fn restore_metadata(original: &Value, mut converted: Value) -> Result<Value, String> {
    let Some(obj) = converted.as_object_mut() else {
        return Err("the converted object is not an object".into());
    };
    let theirs = match (obj.remove("metadata"), original.get("metadata")) {
        (None, None) => return Ok(converted),
        (None, Some(_)) => return Err("missing metadata in converted object".into()),
        (Some(Value::Object(m)), _) => m,
        (Some(other), _) => {
            return Err(format!("invalid metadata of type {} in converted object", go_type(&other)))
        }
    };
    let mut meta: Map<String, Value> =
        original.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    for field in ["labels", "annotations"] {
        match theirs.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
            }
            Some(Value::Object(map)) => {
                if let Some((key, value)) = map.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{key}] must be a string, but is {} in converted object",
                        go_type(value)
                    ));
                }
                // Changed ones are validated, under upstream's paths (`annotation`, sic).
                if original["metadata"].get(field) != Some(&Value::Object(map.clone())) {
                    let value = Value::Object(map.clone());
                    let errors = match field {
                        "labels" => label_map("metadata.labels", &value),
                        _ => annotation_map("metadata.annotation", &value),
                    };
                    if !errors.is_empty() {
                        return Err(aggregate(errors.iter().map(FieldError::line).collect()));
                    }
                }
                meta.insert(field.into(), Value::Object(map.clone()));
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ))
            }
        }
    }
    obj.insert("metadata".into(), Value::Object(meta));
    Ok(converted)
}

/// Upstream's aggregate error: one message alone, several as `[a, b]`.
fn aggregate(mut errors: Vec<String>) -> String {
    errors.dedup();
    match errors.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The Go type a JSON value decodes to, as `%T` prints it.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn webhook(versions: &[&str]) -> WebhookConversion {
        let crd = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"namespace": "ns", "name": "conv", "path": "/convert"},
                             "caBundle": "Y2E="},
            "conversionReviewVersions": versions}}}});
        (*WebhookConversion::of(&crd).unwrap()).clone()
    }

    #[test]
    fn a_definition_names_its_webhook() {
        let w = webhook(&["v2", "v1beta1", "v1"]);
        let service = w.service.clone().unwrap();
        assert_eq!(
            (service.name.as_str(), service.path.as_str(), service.port),
            ("conv", "/convert", 443)
        );
        assert_eq!(w.ca_bundle, b"ca");
        assert!(
            WebhookConversion::of(&json!({"spec": {"conversion": {"strategy": "None"}}})).is_none()
        );
        // The first version the server knows.
        let review = w.review("u", "example.com/v2", &[json!({"a": 1})]).unwrap();
        assert_eq!(review.version, "v1beta1");
        assert_eq!(review.body["apiVersion"], "apiextensions.k8s.io/v1beta1");
        assert_eq!(review.body["request"]["desiredAPIVersion"], "example.com/v2");
        let err = webhook(&["v9"]).review("u", "example.com/v2", &[]).err().unwrap();
        assert_eq!(err, "no supported conversion review versions");
    }

    #[test]
    fn answers_are_checked_as_upstream() {
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [{"a": 1}]}});
        assert_eq!(WebhookConversion::converted("v1", "u", &ok).unwrap(), vec![json!({"a": 1})]);
        assert_eq!(
            WebhookConversion::converted("v1", "x", &ok).unwrap_err(),
            r#"expected response.uid="x", got "u""#
        );
        let mut failed = ok.clone();
        failed["response"]["result"] = json!({"status": "Failure", "message": "cannot"});
        assert_eq!(WebhookConversion::converted("v1", "u", &failed).unwrap_err(), "cannot");
        failed["response"]["result"] = json!({"status": "Failure"});
        assert_eq!(
            WebhookConversion::converted("v1", "u", &failed).unwrap_err(),
            "response.result.status was 'Failure', not 'Success'"
        );
        let wrong = json!({"apiVersion": "v1", "kind": "Status"});
        assert_eq!(
            WebhookConversion::converted("v1", "u", &wrong).unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got /v1, Kind=Status"
        );
        // v1beta1 answers are not held to kind and uid.
        let beta = json!({"response": {"result": {"status": "Success"}, "convertedObjects": []}});
        assert!(WebhookConversion::converted("v1beta1", "u", &beta).unwrap().is_empty());
    }

    #[test]
    fn converted_objects_keep_their_metadata_but_labels_and_annotations() {
        let original = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "a", "uid": "1", "resourceVersion": "5", "labels": {"x": "1"}}});
        let converted = json!({"apiVersion": "example.com/v2", "kind": "Widget",
            "metadata": {"name": "a", "uid": "1", "resourceVersion": "99", "labels": {"y": "2"},
                         "generation": 7}, "spec": {}});
        let out = check_converted(&original, converted.clone(), "example.com/v2", 0).unwrap();
        assert_eq!(
            out["metadata"],
            json!({"name": "a", "uid": "1", "resourceVersion": "5", "labels": {"y": "2"}})
        );
        let err = check_converted(&original, converted.clone(), "example.com/v3", 0).unwrap_err();
        assert_eq!(err, "returned invalid converted object at index 0: invalid groupVersion (expected example.com/v3, received example.com/v2)");
        let mut renamed = converted.clone();
        renamed["metadata"]["name"] = json!("b");
        assert_eq!(
            check_converted(&original, renamed, "example.com/v2", 1).unwrap_err(),
            "returned invalid converted object at index 1: must have the same name: a != b"
        );
        let mut bad_label = converted.clone();
        bad_label["metadata"]["labels"] = json!({"y": "a b"});
        let err = check_converted(&original, bad_label, "example.com/v2", 0).unwrap_err();
        assert!(
            err.starts_with("returned invalid metadata in object at index 0: metadata.labels: Invalid value: \"a b\": "),
            "{err}"
        );
        let mut bad_label = converted;
        bad_label["metadata"]["labels"] = json!({"y": 2});
        assert_eq!(
            check_converted(&original, bad_label, "example.com/v2", 0).unwrap_err(),
            "returned invalid metadata in object at index 0: metadata.labels[y] must be a string, but is int64 in converted object"
        );
    }
}
