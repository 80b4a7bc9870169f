//! The TokenRequest API: `POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token` takes
//! an `authentication.k8s.io/v1 TokenRequest` and answers it (201) with `status.token` and
//! `status.expirationTimestamp`, as upstream's TokenREST does (`kubectl create token`, the
//! kubelet's projected token volumes).
//!
//! In order: the body's name and namespace must match the path's; the service account must
//! exist (404); audiences default to the API server's and `expirationSeconds` to 3600, which
//! must be at least 10 minutes and at most 2^32 seconds (422); a `boundObjectRef` (a Pod, a
//! Secret or a Node) must exist, with its uid when one is given (404, 409), and a pod must
//! run as this service account (400); `--service-account-max-token-expiration` shortens the
//! token with a warning; a pod-bound token of the admission plugin's 3607 s is extended to
//! a year, warning after the 3607 s, when `--service-account-extend-token-expiration` is on.

use chrono::{SecondsFormat, TimeZone, Utc};
use rkube_apis::validation::FieldError;
use serde_json::{json, Value};

use super::jwt::{Binding, Claims, ObjectRef, TokenSpec};
use super::{DEFAULT_EXPIRATION_SECONDS, WARN_ONLY_EXPIRATION_SECONDS};
use crate::api::ApiState;
use crate::status::{ApiError, ApiResult};

const GROUP: &str = "authentication.k8s.io";
const KIND: &str = "TokenRequest";

/// The shortest and longest token TokenRequest validation allows.
const MIN_EXPIRATION_SECONDS: i64 = 10 * 60;
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// `TokenRequest.authentication.k8s.io "<name>" is invalid: ...`.
fn invalid(name: &str, causes: Vec<FieldError>) -> ApiError {
    ApiError::invalid(GROUP, KIND, name, causes)
}

fn decode_error(detail: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{KIND} in version \"v1\" cannot be handled as a {KIND}: {detail}"
    ))
}

/// Reads an object the request names; 404 as the registry words it.
async fn get(
    state: &ApiState,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
) -> ApiResult<Value> {
    let info =
        rkube_apis::resources::Resources::builtin().get("", "v1", plural).expect("core resource");
    state.registry.get(info, namespace, name).await
}

fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["metadata"][field].as_str().unwrap_or("")
}

/// A pod's service account: `serviceAccountName`, else the deprecated `serviceAccount`, else
/// `default` (what the ServiceAccount admission plugin would have set).
pub fn pod_service_account(pod: &Value) -> &str {
    let spec = &pod["spec"];
    [&spec["serviceAccountName"], &spec["serviceAccount"]]
        .into_iter()
        .filter_map(Value::as_str)
        .find(|s| !s.is_empty())
        .unwrap_or("default")
}

/// Answers one TokenRequest: the request with its status, and the warnings to send.
pub async fn create(
    state: &ApiState,
    body: &crate::handlers::RequestBody,
    namespace: &str,
    name: &str,
    requester: &rkube_apis::strategy::Requester,
) -> ApiResult<(Value, Vec<String>)> {
    let tokens = &state.tokens;
    let mut request = body.decode()?;
    if !request.is_object() {
        return Err(decode_error("the body is not an object"));
    }
    if !request["metadata"].is_object() {
        request["metadata"] = json!({});
    }
    let body_name = meta(&request, "name").to_string();
    if !body_name.is_empty() && body_name != name {
        return Err(invalid(
            name,
            vec![FieldError::invalid(
                "metadata.name",
                &json!(body_name),
                "must match the service account name if specified",
            )],
        ));
    }
    let body_namespace = meta(&request, "namespace").to_string();
    if !body_namespace.is_empty() && body_namespace != namespace {
        return Err(invalid(
            name,
            vec![FieldError::invalid(
                "metadata.namespace",
                &json!(body_namespace),
                "must match the service account namespace if specified",
            )],
        ));
    }

    // The spec, decoded and defaulted.
    if !request["spec"].is_object() {
        request["spec"] = json!({});
    }
    let spec = &request["spec"];
    let mut audiences: Vec<String> = match &spec["audiences"] {
        Value::Null => Vec::new(),
        Value::Array(items) => items
            .iter()
            .map(|a| a.as_str().map(String::from))
            .collect::<Option<_>>()
            .ok_or_else(|| decode_error("spec.audiences must be a list of strings"))?,
        _ => return Err(decode_error("spec.audiences must be a list of strings")),
    };
    let expiration = match &spec["expirationSeconds"] {
        Value::Null => DEFAULT_EXPIRATION_SECONDS,
        v => v.as_i64().ok_or_else(|| decode_error("spec.expirationSeconds must be an integer"))?,
    };
    let bound = match &spec["boundObjectRef"] {
        Value::Null => None,
        Value::Object(_) => Some(spec["boundObjectRef"].clone()),
        _ => return Err(decode_error("spec.boundObjectRef must be an object")),
    };

    let account = get(state, "serviceaccounts", Some(namespace), name).await?;
    if audiences.is_empty() {
        audiences = tokens.api_audiences.clone();
    }
    let now = Utc::now();
    request["metadata"]["name"] = json!(name);
    request["metadata"]["namespace"] = json!(namespace);
    if meta(&request, "uid").is_empty() {
        request["metadata"]["uid"] = json!(meta(&account, "uid"));
    }
    request["metadata"]["creationTimestamp"] =
        json!(now.to_rfc3339_opts(SecondsFormat::Secs, true));
    request["spec"]["audiences"] = json!(audiences);
    request["spec"]["expirationSeconds"] = json!(expiration);
    if let Some(status) = request.as_object_mut() {
        status.remove("status");
    }

    let mut causes = Vec::new();
    if expiration < MIN_EXPIRATION_SECONDS {
        causes.push(FieldError::invalid(
            "spec.expirationSeconds",
            &json!(expiration),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if expiration > MAX_EXPIRATION_SECONDS {
        causes.push(FieldError::invalid(
            "spec.expirationSeconds",
            &json!(expiration),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    if !causes.is_empty() {
        return Err(invalid("", causes));
    }
    // Admission sees the request as a create of `serviceaccounts/token` (NodeRestriction
    // lets a node have tokens only for its own pods), before the bound object is looked up.
    let info =
        rkube_apis::resources::Resources::builtin().get("", "v1", "serviceaccounts").expect("core");
    let write = crate::admission::Write {
        operation: rkube_admission::Operation::Create,
        info,
        namespace: Some(namespace),
        name,
        subresource: Some("token"),
        dry_run: false,
        user: Some(requester),
        options: rkube_admission::OperationOptions::Create { field_manager: None },
    };
    state.registry.admit(&write, Some(&mut request), None).await?;
    state.registry.validate_admission(&write, Some(&mut request), None).await?;

    let binding = match &bound {
        None => Binding::None,
        Some(r) => bind(state, namespace, name, r).await?,
    };

    let mut warnings = Vec::new();
    let mut expiration = expiration;
    if tokens.max_expiration_seconds > 0 && expiration > tokens.max_expiration_seconds {
        warnings.push(format!(
            "requested expiration of {expiration} seconds shortened to {} seconds",
            tokens.max_expiration_seconds
        ));
        expiration = tokens.max_expiration_seconds;
        request["spec"]["expirationSeconds"] = json!(expiration);
    }
    // Upstream's safe rollout of bound tokens: the admission plugin's 3607 s tokens for the
    // API server live a year but are reported as stale after 3607 s.
    let (mut lifetime, mut warn_after) = (expiration, 0);
    let kube_audiences = audiences.iter().all(|a| tokens.api_audiences.contains(a));
    if tokens.extend_expiration
        && matches!(binding, Binding::Pod { .. })
        && expiration == WARN_ONLY_EXPIRATION_SECONDS
        && kube_audiences
    {
        warn_after = expiration;
        lifetime = tokens.max_extended_expiration_seconds;
    }
    let claims = Claims::new(
        &tokens.issuer,
        &TokenSpec {
            namespace: namespace.to_string(),
            service_account: ObjectRef::new(name, meta(&account, "uid")),
            audiences,
            now: now.timestamp(),
            expiration_seconds: lifetime,
            warn_after_seconds: warn_after,
            binding,
        },
    );
    let token = tokens
        .sign(&claims)
        .map_err(|e| ApiError::internal(format!("failed to generate token: {e}")))?;
    let expires = Utc
        .timestamp_opt(now.timestamp() + expiration, 0)
        .single()
        .unwrap_or(now)
        .to_rfc3339_opts(SecondsFormat::Secs, true);
    request["apiVersion"] = json!(format!("{GROUP}/v1"));
    request["kind"] = json!(KIND);
    request["status"] = json!({"token": token, "expirationTimestamp": expires});
    Ok((request, warnings))
}

/// The binding a `boundObjectRef` asks for, after checking the object as upstream does.
async fn bind(state: &ApiState, namespace: &str, account: &str, r: &Value) -> ApiResult<Binding> {
    let kind = r["kind"].as_str().unwrap_or("");
    let api_version = r["apiVersion"].as_str().unwrap_or("");
    let ref_name = r["name"].as_str().unwrap_or("");
    let ref_uid = r["uid"].as_str().unwrap_or("");
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let (binding, uid) = match (group, kind) {
        ("", "Pod") => {
            let pod = get(state, "pods", Some(namespace), ref_name).await?;
            if pod_service_account(&pod) != account {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {account:?} to pod running with different serviceaccount name."
                )));
            }
            // The pod's node goes into the token too: with its uid when the Node exists.
            let node_name = pod["spec"]["nodeName"].as_str().unwrap_or("");
            let node = if node_name.is_empty() {
                None
            } else {
                match get(state, "nodes", None, node_name).await {
                    Ok(node) => Some(ObjectRef::new(node_name, meta(&node, "uid"))),
                    Err(e) if e.code == http::StatusCode::NOT_FOUND => {
                        Some(ObjectRef::new(node_name, ""))
                    }
                    Err(e) => return Err(ApiError::internal(e.message)),
                }
            };
            let uid = meta(&pod, "uid").to_string();
            (Binding::Pod { pod: ObjectRef::new(ref_name, &uid), node }, uid)
        }
        ("", "Node") => {
            let node = get(state, "nodes", None, ref_name).await?;
            let uid = meta(&node, "uid").to_string();
            (Binding::Node(ObjectRef::new(ref_name, &uid)), uid)
        }
        ("", "Secret") => {
            let secret = get(state, "secrets", Some(namespace), ref_name).await?;
            let uid = meta(&secret, "uid").to_string();
            (Binding::Secret(ObjectRef::new(ref_name, &uid)), uid)
        }
        _ => {
            // Go's GroupVersionKind.String().
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )));
        }
    };
    if !ref_uid.is_empty() && ref_uid != uid {
        return Err(ApiError::conflict(
            group,
            kind,
            ref_name,
            &format!(
                "the UID in the bound object reference ({ref_uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok(binding)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pods_service_account_defaults_as_admission_would() {
        assert_eq!(pod_service_account(&json!({"spec": {"serviceAccountName": "bot"}})), "bot");
        assert_eq!(pod_service_account(&json!({"spec": {"serviceAccount": "old"}})), "old");
        assert_eq!(pod_service_account(&json!({"spec": {}})), "default");
    }

    #[test]
    fn validation_errors_read_as_upstreams() {
        let e = invalid(
            "",
            vec![FieldError::invalid(
                "spec.expirationSeconds",
                &json!(300),
                "may not specify a duration less than 10 minutes",
            )],
        );
        assert_eq!(
            e.message,
            "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"
        );
        let status = e.to_status();
        assert_eq!(status["code"], 422);
        assert_eq!(status["details"]["kind"], "TokenRequest");
        assert_eq!(status["details"]["group"], "authentication.k8s.io");
        assert_eq!(status["details"]["causes"][0]["field"], "spec.expirationSeconds");
    }
}
