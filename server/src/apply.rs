//! Server-side apply requests (`PATCH` with `application/apply-patch+yaml`) and the field
//! managers every write is recorded for.
//!
//! The merge, the ownership and the conflicts are [`rkube_apis::apply`]'s; this module reads
//! the request (the applied configuration, `fieldManager`, `force`), applies it to the stored
//! object through the registry (creating the object when it does not exist, as upstream does),
//! and turns conflicts into upstream's 409.

use http::StatusCode;
use rkube_apis::apply::{ApplyError, ApplyOptions};
use rkube_apis::patch::PatchType;
use rkube_apis::resources::ResourceInfo;
use rkube_apis::validation::FieldError;
use serde_json::Value;

use crate::object;
use crate::registry::{Registry, WriteOptions};
use crate::request::{query_bool, Query};
use crate::status::{ApiError, ApiResult};

/// The longest field manager name upstream accepts.
const MAX_FIELD_MANAGER: usize = 128;

/// `fieldManager` must be at most 128 bytes of printable characters; the error is an
/// `Invalid` of the request's options kind (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
pub fn validate_field_manager(options_kind: &str, manager: &str) -> ApiResult<()> {
    let mut errors = Vec::new();
    if manager.len() > MAX_FIELD_MANAGER {
        errors.push(FieldError::too_long("fieldManager", MAX_FIELD_MANAGER));
    }
    if manager.chars().any(|c| c.is_control()) {
        errors.push(FieldError::invalid(
            "fieldManager",
            &Value::String(manager.to_string()),
            "must only contain printable characters",
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("meta.k8s.io", options_kind, "", errors))
    }
}

/// The manager of a write that names none: the User-Agent up to its first `/`, printable
/// characters only, at most 128 bytes (`kubectl/v1.32.0 (linux/amd64) ...` is `kubectl`).
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or("");
    let mut manager = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if manager.len() + c.len_utf8() > MAX_FIELD_MANAGER {
            break;
        }
        manager.push(c);
    }
    manager
}

/// The `PatchOptions` checks upstream makes before anything else: an apply needs a
/// `fieldManager`, and only an apply may say `force`.
pub fn check_patch_options(query: &Query, apply: bool) -> ApiResult<()> {
    let problem = if apply && query.get("fieldManager").is_none_or(|m| m.is_empty()) {
        Some(FieldError::required("fieldManager", "is required for apply patch"))
    } else if !apply && query.contains_key("force") {
        Some(FieldError::forbidden("force", "may not be specified for non-apply patch"))
    } else {
        None
    };
    match problem {
        Some(problem) => Err(ApiError::invalid("meta.k8s.io", "PatchOptions", "", vec![problem])),
        None => Ok(()),
    }
}

/// What an apply request is for.
pub struct ApplyRequest<'a> {
    pub query: &'a Query,
    pub info: &'a ResourceInfo,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    /// `status` for an apply to the status subresource.
    pub subresource: Option<&'a str>,
    /// Who applies: a create by apply records them where the kind keeps its requester (a
    /// CSR's `spec.username` and the rest), as a plain create does.
    pub requester: Option<rkube_apis::strategy::Requester>,
}

/// Serves an apply: the answer's status code (201 when the apply created the object), the
/// object, and warnings. `normalize` reads the configuration as the kind's type (dropping and
/// reporting unknown fields as `fieldValidation` says).
pub async fn serve(
    registry: &Registry,
    request: &ApplyRequest<'_>,
    body: &crate::handlers::RequestBody,
    normalize: impl Fn(Value) -> ApiResult<(Value, Vec<String>)>,
) -> ApiResult<(StatusCode, Value, Vec<String>)> {
    let ApplyRequest { query, info, namespace, name, subresource, .. } = *request;
    let content_type = &body.content_type;
    if PatchType::from_content_type(content_type) != Some(PatchType::ApplyYaml) {
        return Err(ApiError::unsupported_media_type(content_type));
    }
    let config = decode_config(info, namespace, name, &body.bytes)?;
    let (config, warnings) = normalize(config)?;
    if query.get("fieldValidation").map(String::as_str) == Some("Strict") {
        strict_yaml(&body.bytes)?;
    }
    let config = scoped(config, subresource);
    let manager = query.get("fieldManager").map(String::as_str).unwrap_or("");
    validate_field_manager("PatchOptions", manager)?;
    let time = object::now();
    let api_version = info.api_version();
    let options = ApplyOptions {
        manager,
        force: query_bool(query, "force"),
        api_version: &api_version,
        time: &time,
        subresource,
    };
    // The apply records its own managedFields entry.
    let write = WriteOptions {
        dry_run: crate::handlers::dry_run(query)?,
        field_manager: None,
        requester: request.requester.clone(),
        ..Default::default()
    };
    let (schema, type_ref) = rkube_apis::strategy::apply_schema(info);
    let apply_to = |live: Option<&Value>| {
        rkube_apis::apply::apply(schema, type_ref, live, &config, &options).map_err(apply_error)
    };
    // Created when missing; a create that loses a race with another applies to its object.
    for _ in 0..2 {
        let result = registry
            .modify(info, namespace, name, subresource, &write, None, |live| apply_to(Some(live)))
            .await;
        match result {
            Ok(applied) => return Ok((StatusCode::OK, applied, warnings)),
            Err(e) if e.code == StatusCode::NOT_FOUND && subresource.is_none() => {
                match registry.create(info, namespace, apply_to(None)?, &write).await {
                    Ok(created) => return Ok((StatusCode::CREATED, created, warnings)),
                    Err(e) if e.reason == "AlreadyExists" => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
    Err(ApiError::conflict(
        info.group,
        info.plural,
        name,
        "the object was created and deleted while it was being applied; please try again",
    ))
}

/// An applied configuration read as its kind's type, as upstream's apply reads it: fields the
/// type does not have are refused under `fieldValidation=Strict` with the apply's own message
/// (`failed to create typed patch object (...): .spec.foo: field not declared in schema`),
/// otherwise dropped and reported as `fieldValidation` says.
pub fn normalize_config(
    info: &ResourceInfo,
    query: &Query,
    config: Value,
) -> ApiResult<(Value, Vec<String>)> {
    if query.get("fieldValidation").map(String::as_str) != Some("Strict") {
        return crate::handlers::normalize_object(info, query, config, &[]);
    }
    let (normalized, unknown) = crate::handlers::read_as_type(info, config.clone())?;
    if unknown.is_empty() {
        return Ok((normalized, Vec::new()));
    }
    let errors: Vec<String> =
        unknown.iter().map(|path| format!(".{path}: field not declared in schema")).collect();
    Err(ApiError::bad_request(rkube_apis::apply::typed_patch_error(&config, &errors)))
}

/// Upstream's strict reading of an applied configuration's YAML (after the configuration
/// was read as its type): a key set twice in one mapping is refused, with the line of the
/// second.
fn strict_yaml(body: &[u8]) -> ApiResult<()> {
    let Err(e) = serde_yaml_ng::from_slice::<UniqueKeys>(body) else { return Ok(()) };
    // The message is `<path>: duplicate key "k" at line L column C`.
    let text = e.to_string();
    let Some((_, key)) = text.split_once(DUPLICATE) else { return Ok(()) };
    let key = key.split(" at line ").next().unwrap_or(key);
    // serde_yaml_ng locates the mapping; upstream names the line of the key set again.
    let line = e.location().map_or(0, |at| {
        let raw = serde_json::from_str::<String>(key).unwrap_or_else(|_| key.to_string());
        second_key_line(body, at.line(), at.column(), &raw).unwrap_or(at.line())
    });
    Err(ApiError::bad_request(format!(
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  \
         line {line}: key {key} already set in map"
    )))
}

const DUPLICATE: &str = "duplicate key ";

/// The line (1-based) where the block mapping starting at `line`, `column` sets `key` the
/// second time: its keys are the lines indented as its first one, until one indented less.
fn second_key_line(body: &[u8], line: usize, column: usize, key: &str) -> Option<usize> {
    let text = std::str::from_utf8(body).ok()?;
    let indent = column.checked_sub(1)?;
    let mut seen = 0;
    for (i, l) in text.lines().enumerate().skip(line.checked_sub(1)?) {
        let content = l.trim_start();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let at = l.len() - content.len();
        // The first key of a mapping in a sequence follows its `- `.
        let key_text = if i + 1 == line {
            l.get(indent..)?
        } else if at == indent {
            content
        } else {
            if at < indent {
                return None;
            }
            continue;
        };
        let named =
            key_text.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with(':'))
                || key_text
                    .strip_prefix(&format!("{key:?}"))
                    .is_some_and(|r| r.trim_start().starts_with(':'));
        if named {
            seen += 1;
            if seen == 2 {
                return Some(i + 1);
            }
        }
    }
    None
}

/// A YAML document read only to find a mapping that sets a key twice.
struct UniqueKeys;

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueKeysVisitor)
    }
}

struct UniqueKeysVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueKeysVisitor {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_none<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<UniqueKeys, D::Error> {
        serde::Deserialize::deserialize(d)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKeys, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(UniqueKeys)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<UniqueKeys, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<serde_yaml_ng::Value>()? {
            let text = match &key {
                serde_yaml_ng::Value::String(s) => format!("{s:?}"),
                other => serde_yaml_ng::to_string(other).unwrap_or_default().trim().to_string(),
            };
            if !seen.insert(text.clone()) {
                return Err(serde::de::Error::custom(format!("{DUPLICATE}{text}")));
            }
            map.next_value::<UniqueKeys>()?;
        }
        Ok(UniqueKeys)
    }
}

/// The applied configuration from the body (YAML, of which JSON is a part), checked the way
/// upstream checks it: an object of the endpoint's apiVersion and kind, named as the URL, with
/// no managedFields of its own.
fn decode_config(
    info: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    body: &[u8],
) -> ApiResult<Value> {
    let mut config: Value = crate::yaml::decode(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !config.is_object() {
        return Err(ApiError::bad_request("the body of the request must be an object"));
    }
    let text = || String::from_utf8_lossy(body).into_owned();
    match config["kind"].as_str() {
        None | Some("") => {
            return Err(ApiError::bad_request(format!("Object 'Kind' is missing in '{}'", text())))
        }
        Some(kind) if kind != info.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind of the object ({kind}) does not match the kind of the endpoint ({})",
                info.kind
            )))
        }
        Some(_) => {}
    }
    let expected = info.api_version();
    let given = config["apiVersion"].as_str().unwrap_or("");
    if given != expected {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {given}, \
             expected: {expected}"
        )));
    }
    if !config["metadata"]["managedFields"].is_null() {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    crate::registry::name_from_url(&mut config, name)?;
    if let (Some(given), Some(wanted)) = (object::namespace(&config), namespace) {
        if given != wanted {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the \
                 request",
            ));
        }
    }
    Ok(config)
}

/// What an apply may set where it is sent, as upstream's reset fields say: an apply to an
/// object leaves its status alone, an apply to `status` only sets the status.
fn scoped(mut config: Value, subresource: Option<&str>) -> Value {
    let Some(fields) = config.as_object_mut() else { return config };
    match subresource {
        Some("status") => {
            fields
                .retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status"));
            if let Some(meta) = fields.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.retain(|k, _| matches!(k.as_str(), "name" | "namespace"));
            }
        }
        _ => {
            fields.remove("status");
        }
    }
    config
}

/// Conflicts as upstream answers them: 409 `Conflict`, one `FieldManagerConflict` cause per
/// field.
fn apply_error(e: ApplyError) -> ApiError {
    match &e {
        ApplyError::Conflicts(conflicts) => {
            let mut error = ApiError::new(StatusCode::CONFLICT, "Conflict", e.message());
            error.details.causes = conflicts
                .iter()
                .map(|c| FieldError {
                    reason: "FieldManagerConflict",
                    message: format!("conflict with {}", c.manager),
                    field: c.field.clone(),
                })
                .collect();
            error
        }
        ApplyError::Invalid(message) => ApiError::bad_request(message.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_yaml_names_the_line_of_a_key_set_again() {
        let body =
            b"a: 1\nspec:\n  x: 1\n  # c\n  foo: 1\n  ports:\n  - name: p\n    name: q\n  foo: 2\n";
        let error = strict_yaml(body).unwrap_err();
        assert_eq!(
            error.message,
            "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  \
             line 8: key \"name\" already set in map"
        );
        let body = b"spec:\n  x: 1\n  foo: 1\n  ports: [1]\n  foo: 2\n";
        assert!(strict_yaml(body)
            .unwrap_err()
            .message
            .ends_with("line 5: key \"foo\" already set in map"));
        assert!(strict_yaml(b"{\"a\": {\"b\": 1}, \"c\": 2}").is_ok());
    }

    #[test]
    fn managers_come_from_the_user_agent() {
        assert_eq!(
            manager_from_user_agent("kubectl/v1.32.0 (linux/amd64) kubernetes/abc"),
            "kubectl"
        );
        assert_eq!(manager_from_user_agent(""), "");
        assert_eq!(manager_from_user_agent("a\tb/1"), "ab");
        assert_eq!(manager_from_user_agent(&"x".repeat(200)).len(), MAX_FIELD_MANAGER);
    }

    #[test]
    fn patch_options_are_checked_as_upstream_does() {
        let query = |pairs: &[(&str, &str)]| -> Query {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let e = check_patch_options(&query(&[]), true).unwrap_err();
        assert_eq!(e.code, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            e.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required \
             for apply patch"
        );
        let e = check_patch_options(&query(&[("force", "true")]), false).unwrap_err();
        assert_eq!(
            e.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for \
             non-apply patch"
        );
        assert!(
            check_patch_options(&query(&[("fieldManager", "m"), ("force", "true")]), true).is_ok()
        );
        let e = validate_field_manager("CreateOptions", &"m".repeat(129)).unwrap_err();
        assert!(e
            .message
            .starts_with("CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long"));
    }

    #[test]
    fn an_apply_sets_only_what_its_endpoint_owns() {
        let config = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}},
            "spec": {"x": 1}, "status": {"phase": "Running"}
        });
        let main = scoped(config.clone(), None);
        assert!(main.get("status").is_none() && main.get("spec").is_some());
        let status = scoped(config, Some("status"));
        assert_eq!(
            status,
            serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                               "status": {"phase": "Running"}})
        );
    }
}
