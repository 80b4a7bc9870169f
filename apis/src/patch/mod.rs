//! The PATCH verb's three patch formats, applied the way kube-apiserver applies them.
//!
//! Start with [`apply_patch`]: it takes the [`PatchType`] named by the request's Content-Type,
//! the current object, the patch, and for strategic merge patches the [`PatchSchema`] and the
//! OpenAPI definition name of the object's type.
//!
//! - `application/json-patch+json`: RFC 6902 operations, with the quirks of the
//!   evanphx/json-patch v4 library kube-apiserver uses (`replace` of a missing object key adds
//!   it, negative array indices count from the end, a missing `value` is `null`).
//! - `application/merge-patch+json`: RFC 7386 merge patch.
//! - `application/strategic-merge-patch+json`: Kubernetes' strategic merge patch, driven by
//!   `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` (see [`strategic`]).
//! - `application/apply-patch+yaml` (server-side apply) is recognised here but not applied:
//!   its merge and field ownership are [`crate::apply`]'s.
//!
//! Errors carry the HTTP status, reason and message kube-apiserver answers with
//! ([`PatchError::status_code`], [`PatchError::reason`], [`PatchError::status_message`]).

mod rfc6902;
mod rfc7386;
pub mod schema;
pub mod strategic;
mod structural;

use std::fmt;

use serde_json::Value;

pub use schema::{FieldLookup, FieldPatchMeta, ListType, PatchSchema, SchemaError};
pub use strategic::{strategic_merge_patch, StrategicMergeError};
pub use structural::custom_definition_name;

/// The patch formats of the PATCH verb, by Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json`.
    StrategicMerge,
    /// `application/apply-patch+yaml` (server-side apply).
    ApplyYaml,
    /// `application/apply-patch+cbor` (server-side apply, CBOR-encoded).
    ApplyCbor,
}

impl PatchType {
    /// Every patch type, in the order kube-apiserver lists them.
    pub const ALL: [PatchType; 5] = [
        PatchType::Json,
        PatchType::Merge,
        PatchType::StrategicMerge,
        PatchType::ApplyYaml,
        PatchType::ApplyCbor,
    ];

    /// The patch type of a Content-Type header; parameters such as `; charset=utf-8` are
    /// ignored, the media type itself must match exactly (as upstream).
    pub fn from_content_type(content_type: &str) -> Option<PatchType> {
        let media_type = match content_type.find(';') {
            Some(i) if i > 0 => &content_type[..i],
            _ => content_type,
        };
        PatchType::ALL.into_iter().find(|t| t.content_type() == media_type)
    }

    /// The Content-Type of this patch type.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::ApplyYaml => "application/apply-patch+yaml",
            PatchType::ApplyCbor => "application/apply-patch+cbor",
        }
    }
}

impl fmt::Display for PatchType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.content_type())
    }
}

/// Why a patch could not be applied, with the status kube-apiserver answers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch is malformed: 400 Bad Request with this message.
    #[error("{0}")]
    BadRequest(String),
    /// A JSON patch operation does not apply to the object (a failed `test`, a missing path).
    /// kube-apiserver answers 422 Invalid with a generic message; this detail is for logs.
    #[error("{0}")]
    Unprocessable(String),
    /// A JSON patch with more operations than kube-apiserver accepts: 413.
    #[error("The allowed maximum operations in a JSON patch is {max}, got {got}")]
    TooManyOperations {
        /// The limit (10000).
        max: usize,
        /// The number of operations in the patch.
        got: usize,
    },
    /// A strategic merge patch failed; see [`StrategicMergeError`] for the statuses.
    #[error(transparent)]
    Strategic(#[from] StrategicMergeError),
    /// An apply patch given to [`apply_patch`]: server-side apply needs the field manager and
    /// the object's managed fields, and goes through [`crate::apply`] instead (415 here).
    #[error("{0} patches (server-side apply) are applied with rkube_apis::apply, not as patches")]
    ApplyNotSupported(PatchType),
}

impl PatchError {
    /// The HTTP status code kube-apiserver answers with.
    pub fn status_code(&self) -> u16 {
        match self {
            PatchError::BadRequest(_) => 400,
            PatchError::Unprocessable(_) => 422,
            PatchError::TooManyOperations { .. } => 413,
            PatchError::Strategic(e) => e.status_code(),
            PatchError::ApplyNotSupported(_) => 415,
        }
    }

    /// The `metav1.Status` reason; empty for the errors upstream answers as plain 500s.
    pub fn reason(&self) -> &'static str {
        match self.status_code() {
            400 => "BadRequest",
            413 => "RequestEntityTooLarge",
            415 => "UnsupportedMediaType",
            422 => "Invalid",
            _ => "",
        }
    }

    /// The `metav1.Status` message kube-apiserver sends for this error.
    pub fn status_message(&self) -> String {
        match self {
            PatchError::Unprocessable(_)
            | PatchError::Strategic(StrategicMergeError::NoListOfLists) => {
                "the server rejected our request due to an error in our request".to_string()
            }
            PatchError::TooManyOperations { .. } => format!("Request entity too large: {self}"),
            other => other.to_string(),
        }
    }
}

/// Applies `patch` to `original` as kube-apiserver does for a PATCH request of `patch_type`.
///
/// `schema` and `type_name` (the OpenAPI definition name, e.g. `io.k8s.api.apps.v1.Deployment`,
/// see [`PatchSchema::definition_for`]) drive strategic merge patches and are ignored by the
/// other types. Pass `None` for types without patch metadata (custom resources): a strategic
/// merge patch is then refused with upstream's "strategic merge patch format is not supported".
/// Apply patches return [`PatchError::ApplyNotSupported`]: they are [`crate::apply`]'s.
pub fn apply_patch(
    patch_type: PatchType,
    original: &Value,
    patch: &Value,
    schema: Option<&PatchSchema>,
    type_name: &str,
) -> Result<Value, PatchError> {
    match patch_type {
        PatchType::Json => rfc6902::apply(original, patch),
        PatchType::Merge => rfc7386::apply(original, patch),
        PatchType::StrategicMerge => {
            let schema = schema.ok_or(StrategicMergeError::Unsupported)?;
            Ok(strategic_merge_patch(original, patch, schema, type_name)?)
        }
        PatchType::ApplyYaml | PatchType::ApplyCbor => {
            Err(PatchError::ApplyNotSupported(patch_type))
        }
    }
}

/// Decodes a PATCH request body as JSON, with the error kube-apiserver gives for a body that
/// is not JSON (400; `Invalid JSON Patch` for merge patches).
pub fn decode_patch_body(patch_type: PatchType, body: &[u8]) -> Result<Value, PatchError> {
    if matches!(patch_type, PatchType::ApplyYaml | PatchType::ApplyCbor) {
        return Err(PatchError::ApplyNotSupported(patch_type));
    }
    serde_json::from_slice(body).map_err(|e| match patch_type {
        PatchType::Merge => PatchError::BadRequest(rfc7386::BAD_PATCH.to_string()),
        _ => PatchError::BadRequest(e.to_string()),
    })
}
