//! Content negotiation: decoding request bodies (JSON, YAML, the patch types) and choosing the
//! response form the client asked for (JSON, YAML, a `meta.k8s.io/v1 Table`, or only the
//! objects' metadata as `PartialObjectMetadata`).

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
    /// `meta.k8s.io/v1` (or v1beta1) Table.
    Table {
        v1beta1: bool,
    },
    /// `meta.k8s.io/v1` (or v1beta1) `PartialObjectMetadata`, or `PartialObjectMetadataList`
    /// for lists: the objects' metadata alone (client-go's metadata informers, kube-rs's
    /// `metadata_watcher`).
    Metadata {
        v1beta1: bool,
    },
}

impl Output {
    /// The object as this output shows it: its metadata alone for [`Output::Metadata`].
    pub fn shape(self, obj: Value) -> Value {
        match self {
            Output::Metadata { v1beta1 } => partial_object_metadata(obj, v1beta1),
            _ => obj,
        }
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

/// Reads the Accept header. kubectl asks for tables with JSON as the fallback; a client that
/// accepts nothing we can produce gets 406.
pub fn output(accept: &str) -> ApiResult<Output> {
    if accept.trim().is_empty() {
        return Ok(Output::Json);
    }
    for part in accept.split(',') {
        let part = part.replace(' ', "");
        let (media, params) = part.split_once(';').unwrap_or((part.as_str(), ""));
        let params: Vec<&str> = params.split(';').collect();
        let has = |p: &str| params.contains(&p);
        match media {
            "application/json" | "*/*" | "application/*"
                if has("as=Table") && has("g=meta.k8s.io") && (has("v=v1") || has("v=v1beta1")) =>
            {
                return Ok(Output::Table { v1beta1: has("v=v1beta1") });
            }
            "application/json" | "*/*" | "application/*"
                if (has("as=PartialObjectMetadata") || has("as=PartialObjectMetadataList"))
                    && has("g=meta.k8s.io")
                    && (has("v=v1") || has("v=v1beta1")) =>
            {
                return Ok(Output::Metadata { v1beta1: has("v=v1beta1") });
            }
            "application/json" | "application/*" | "*/*" => {
                // Other conversions are not served: fall through to the next acceptable type,
                // as upstream does.
                if params.iter().any(|p| p.starts_with("as=")) {
                    continue;
                }
                return Ok(Output::Json);
            }
            "application/yaml" => return Ok(Output::Yaml),
            _ => {}
        }
    }
    Err(ApiError::not_acceptable(format!(
        "only the following media types are accepted: application/json, application/yaml, \
         application/json;as=Table;v=v1;g=meta.k8s.io, \
         application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io (asked for {accept:?})"
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
        // As Go's json.Encoder: the Go types' field order, HTML-safe, a trailing newline.
        _ => (rkube_apis::go_json::to_vec(value), "application/json"),
    };
    Reply::bytes(status, content_type, body).with_warnings(warnings)
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
        assert_eq!(output(&h).unwrap(), Output::Table { v1beta1: false });
        assert_eq!(output(&accept("application/json")).unwrap(), Output::Json);
        assert_eq!(
            output(&accept(
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
            ))
            .unwrap(),
            Output::Metadata { v1beta1: false }
        );
        // Other conversions fall through to the next type offered.
        assert_eq!(
            output(&accept("application/json;as=Foo;v=v1;g=meta.k8s.io,application/json")).unwrap(),
            Output::Json
        );
        assert!(output(&accept("application/vnd.kubernetes.protobuf")).is_err());
        assert_eq!(
            output(&accept("application/vnd.kubernetes.protobuf, */*")).unwrap(),
            Output::Json
        );
    }

    #[test]
    fn metadata_only_keeps_the_metadata() {
        let obj = serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "a", "resourceVersion": "5"}, "data": {"k": "v"}});
        let shaped = Output::Metadata { v1beta1: false }.shape(obj.clone());
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
