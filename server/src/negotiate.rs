//! Content negotiation: decoding request bodies (JSON, YAML, protobuf, the patch types) and
//! choosing the response form the client asked for (JSON, YAML, the Kubernetes protobuf
//! encoding, a `meta.k8s.io/v1 Table`, or only the objects' metadata as
//! `PartialObjectMetadata`).
//!
//! Protobuf is served as kube-apiserver serves it: for kinds with a protobuf message (built-in
//! kinds, their lists, `Status`, `PartialObjectMetadata`), never for custom resources (a client
//! that also takes JSON gets JSON; one that takes only protobuf gets 406), never for Tables.

use http::{HeaderMap, StatusCode};
use serde_json::Value;

use crate::handlers::Reply;
use crate::status::{ApiError, ApiResult};

/// The largest request body accepted (kube-apiserver: 3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// What the client wants back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Json,
    Yaml,
    /// `application/vnd.kubernetes.protobuf` (client-go's default for built-in kinds).
    Protobuf,
    /// `meta.k8s.io/v1` (or v1beta1) Table.
    Table {
        v1beta1: bool,
    },
    /// `meta.k8s.io/v1` (or v1beta1) `PartialObjectMetadata`, or `PartialObjectMetadataList`
    /// for lists: the objects' metadata alone (client-go's metadata informers, kube-rs's
    /// `metadata_watcher`).
    Metadata {
        v1beta1: bool,
        /// In protobuf rather than JSON.
        protobuf: bool,
    },
}

impl Output {
    /// The object as this output shows it: its metadata alone for [`Output::Metadata`].
    pub fn shape(self, obj: Value) -> Value {
        match self {
            Output::Metadata { v1beta1, .. } => partial_object_metadata(obj, v1beta1),
            _ => obj,
        }
    }

    /// Whether the answer is in the Kubernetes protobuf encoding.
    pub fn is_protobuf(self) -> bool {
        matches!(self, Output::Protobuf | Output::Metadata { protobuf: true, .. })
    }
}

/// `apiVersion` of the meta.k8s.io kinds in the version asked for.
pub fn meta_api_version(v1beta1: bool) -> &'static str {
    if v1beta1 {
        "meta.k8s.io/v1beta1"
    } else {
        "meta.k8s.io/v1"
    }
}

/// [`partial_object_metadata`] straight from an object's JSON, its metadata copied as it is
/// and the rest only scanned past (what watches and cached lists send); None when the JSON
/// has no metadata object.
pub fn partial_object_metadata_json(json: &[u8], v1beta1: bool) -> Option<Vec<u8>> {
    #[derive(serde::Deserialize)]
    struct Metadata<'a> {
        #[serde(borrow)]
        metadata: &'a serde_json::value::RawValue,
    }
    let raw = serde_json::from_slice::<Metadata>(json).ok()?.metadata.get();
    let mut out = Vec::with_capacity(raw.len() + 80);
    out.extend_from_slice(b"{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"");
    out.extend_from_slice(meta_api_version(v1beta1).as_bytes());
    out.extend_from_slice(b"\",\"metadata\":");
    out.extend_from_slice(raw.as_bytes());
    out.push(b'}');
    Some(out)
}

/// An object reduced to a `PartialObjectMetadata` (its metadata, with upstream's kind).
pub fn partial_object_metadata(mut obj: Value, v1beta1: bool) -> Value {
    let metadata =
        obj.get_mut("metadata").map(Value::take).unwrap_or_else(|| serde_json::json!({}));
    serde_json::json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": meta_api_version(v1beta1),
        "metadata": metadata,
    })
}

/// Reads the Accept header for an answer whose kind has a protobuf message or not
/// (`protobuf`). kubectl asks for tables with JSON as the fallback, client-go for protobuf
/// with JSON as the fallback; a client that accepts nothing we can produce gets 406.
pub fn output(accept: &str, protobuf: bool) -> ApiResult<Output> {
    negotiate(accept, protobuf, true)
}

/// [`output`] for a resource that has no Table form (upstream's storages without a table
/// convertor: the reviews): a Table is passed over like any conversion not served, so a
/// client that will take nothing else gets 406 before the request is answered.
pub fn output_without_table(accept: &str, protobuf: bool) -> ApiResult<Output> {
    negotiate(accept, protobuf, false)
}

fn negotiate(accept: &str, protobuf: bool, tables: bool) -> ApiResult<Output> {
    if accept.trim().is_empty() {
        return Ok(Output::Json);
    }
    for part in accept.split(',') {
        let part = part.replace(' ', "");
        let (media, params) = part.split_once(';').unwrap_or((part.as_str(), ""));
        let params: Vec<&str> = params.split(';').collect();
        let has = |p: &str| params.contains(&p);
        let meta_version = has("g=meta.k8s.io") && (has("v=v1") || has("v=v1beta1"));
        let metadata = (has("as=PartialObjectMetadata") || has("as=PartialObjectMetadataList"))
            && meta_version;
        let converted = params.iter().any(|p| p.starts_with("as="));
        match media {
            "application/json" | "*/*" | "application/*"
                if tables && has("as=Table") && meta_version =>
            {
                return Ok(Output::Table { v1beta1: has("v=v1beta1") });
            }
            "application/json" | "*/*" | "application/*" if metadata => {
                return Ok(Output::Metadata { v1beta1: has("v=v1beta1"), protobuf: false });
            }
            // Metadata has a protobuf message whatever the kind (custom resources' too).
            rkube_apis::protobuf::CONTENT_TYPE if metadata => {
                return Ok(Output::Metadata { v1beta1: has("v=v1beta1"), protobuf: true });
            }
            // Other conversions (a Table has no protobuf message) are not served: fall
            // through to the next acceptable type, as upstream does.
            _ if converted => continue,
            "application/json" | "application/*" | "*/*" => return Ok(Output::Json),
            "application/yaml" => return Ok(Output::Yaml),
            rkube_apis::protobuf::CONTENT_TYPE if protobuf => return Ok(Output::Protobuf),
            _ => {}
        }
    }
    Err(ApiError::not_acceptable(format!(
        "only the following media types are accepted: application/json, application/yaml{}",
        if protobuf { ", application/vnd.kubernetes.protobuf" } else { "" }
    )))
}

/// The `Accept` header's value (empty when none).
pub fn accept(headers: &HeaderMap) -> &str {
    headers.get(http::header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("")
}

/// A body of the media type `content_type` as an object, from JSON, YAML or the Kubernetes
/// protobuf encoding, with the fields a JSON body has more than once in one object (a value
/// keeps only the last).
pub fn decode_body_noting_duplicates(
    content_type: &str,
    body: &[u8],
) -> ApiResult<(Value, Vec<String>)> {
    if body.len() > MAX_BODY {
        return Err(ApiError::too_large("Request entity too large: limit is 3145728"));
    }
    let mut duplicates = Vec::new();
    let value: Value = match content_type {
        "" | "application/json" => {
            let (value, found) = crate::duplicates::parse(body).map_err(|e| {
                ApiError::bad_request(format!(
                    "the body of the request could not be decoded as JSON: {e}"
                ))
            })?;
            duplicates = found;
            value
        }
        "application/yaml" | "application/x-yaml" | "text/yaml" => crate::yaml::decode(body)
            .map_err(|e| {
                ApiError::bad_request(format!(
                    "the body of the request could not be decoded as YAML: {e}"
                ))
            })?,
        rkube_apis::protobuf::CONTENT_TYPE => rkube_apis::protobuf::decode(body).map_err(|e| {
            ApiError::bad_request(format!(
                "the body of the request could not be decoded as protobuf: {e}"
            ))
        })?,
        other => return Err(ApiError::unsupported_media_type(other)),
    };
    if !value.is_object() {
        return Err(ApiError::bad_request("the body of the request must be an object"));
    }
    Ok((value, duplicates))
}

/// The media type of the body, without parameters.
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// An object (or list, or Status) in the requested encoding.
pub fn respond(status: StatusCode, value: &Value, output: Output, warnings: &[String]) -> Reply {
    let (body, content_type) = match output {
        Output::Yaml => {
            (serde_yaml_ng::to_string(value).unwrap_or_default().into_bytes(), "application/yaml")
        }
        _ if output.is_protobuf() => match rkube_apis::protobuf::encode(value) {
            Ok(body) => (body, rkube_apis::protobuf::CONTENT_TYPE),
            // Only kinds with a message are negotiated to protobuf: what fails here is an
            // object the message cannot hold, the server's fault.
            Err(e) => return error(ApiError::internal(e.to_string()), output),
        },
        // As Go's json.Encoder: the Go types' field order, HTML-safe, a trailing newline.
        _ => (rkube_apis::go_json::to_vec(value), "application/json"),
    };
    Reply::bytes(status, content_type, body).with_warnings(warnings)
}

/// An error's `Status` as the answer, in protobuf when the client prefers it (a `Status` has a
/// message whatever the resource, as upstream writes errors), otherwise JSON.
pub fn error(e: ApiError, output: Output) -> Reply {
    let status = e.to_status();
    if output.is_protobuf() {
        if let Ok(body) = rkube_apis::protobuf::encode(&status) {
            return Reply::bytes(e.code, rkube_apis::protobuf::CONTENT_TYPE, body);
        }
    }
    Reply::bytes(e.code, "application/json", rkube_apis::go_json::to_vec(&status))
}

/// The encoding of an error's `Status` for a client sending `accept`.
pub fn error_output(accept: &str) -> Output {
    output(accept, true).unwrap_or(Output::Json)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> String {
        v.to_string()
    }

    #[test]
    fn kubectl_get_asks_for_a_table() {
        let h = accept("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json");
        assert_eq!(output(&h, true).unwrap(), Output::Table { v1beta1: false });
        assert_eq!(output(&accept("application/json"), true).unwrap(), Output::Json);
        assert_eq!(
            output(
                &accept(
                    "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
                ),
                true
            )
            .unwrap(),
            Output::Metadata { v1beta1: false, protobuf: false }
        );
        // Other conversions fall through to the next type offered.
        assert_eq!(
            output(&accept("application/json;as=Foo;v=v1;g=meta.k8s.io,application/json"), true)
                .unwrap(),
            Output::Json
        );
    }

    #[test]
    fn protobuf_only_for_kinds_with_a_message() {
        let pb = "application/vnd.kubernetes.protobuf";
        let client_go = "application/vnd.kubernetes.protobuf, application/json";
        assert_eq!(output(pb, true).unwrap(), Output::Protobuf);
        assert_eq!(output(client_go, true).unwrap(), Output::Protobuf);
        assert_eq!(output(&format!("{pb};stream=watch"), true).unwrap(), Output::Protobuf);
        // A custom resource: JSON when JSON will do, else 406 naming what would.
        assert_eq!(output(client_go, false).unwrap(), Output::Json);
        let refused = output(pb, false).unwrap_err();
        assert_eq!(refused.code, StatusCode::NOT_ACCEPTABLE);
        assert_eq!(
            refused.message,
            "only the following media types are accepted: application/json, application/yaml"
        );
        assert!(output("text/html", true)
            .unwrap_err()
            .message
            .ends_with("application/json, application/yaml, application/vnd.kubernetes.protobuf"));
        // Metadata in protobuf whatever the kind; Tables never.
        let metadata = format!("{pb};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,{pb}");
        assert_eq!(
            output(&metadata, false).unwrap(),
            Output::Metadata { v1beta1: false, protobuf: true }
        );
        let table = format!("{pb};as=Table;g=meta.k8s.io;v=v1,application/json");
        assert_eq!(output(&table, true).unwrap(), Output::Json);
        assert!(output(&format!("{pb};as=Table;g=meta.k8s.io;v=v1"), true).is_err());
        // Errors follow the client's preference, for any resource.
        assert!(error_output(pb).is_protobuf());
        assert!(!error_output("application/json").is_protobuf());
        assert!(!error_output("text/html").is_protobuf());
    }

    #[test]
    fn resources_without_tables_pass_over_a_table() {
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
        let refused = output_without_table(table, true).unwrap_err();
        assert_eq!(refused.code, StatusCode::NOT_ACCEPTABLE);
        assert_eq!(refused.reason, "NotAcceptable");
        assert!(refused.message.ends_with("application/yaml, application/vnd.kubernetes.protobuf"));
        let fallback = format!("{table},application/json");
        assert_eq!(output_without_table(&fallback, true).unwrap(), Output::Json);
        assert_eq!(output(table, true).unwrap(), Output::Table { v1beta1: false });
        // Metadata alone is still served: the reviews have metadata.
        let metadata = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io";
        assert_eq!(
            output_without_table(metadata, true).unwrap(),
            Output::Metadata { v1beta1: false, protobuf: false }
        );
    }

    #[test]
    fn metadata_only_keeps_the_metadata() {
        let obj = serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "a", "resourceVersion": "5"}, "data": {"k": "v"}});
        let shaped = Output::Metadata { v1beta1: false, protobuf: false }.shape(obj.clone());
        assert_eq!(
            shaped,
            serde_json::json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"name": "a", "resourceVersion": "5"}})
        );
        assert_eq!(Output::Json.shape(obj.clone()), obj);
        let fast = partial_object_metadata_json(&serde_json::to_vec(&obj).unwrap(), false).unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&fast).unwrap(), shaped);
        assert!(partial_object_metadata_json(b"{\"kind\":\"X\"}", false).is_none());
    }
}
