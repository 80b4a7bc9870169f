//! Kubernetes errors as gRPC statuses: one mapping from a `metav1.Status`'s code and reason
//! to a gRPC code (documented in `proto/rkube/v1/api.proto` and docs/grpc.md), with the
//! Status itself, as REST would have answered it, in the standard details
//! (`grpc-status-details-bin`: a `google.rpc.Status` holding one `Any` of
//! `rkube.api.v1.KubernetesStatus`).

use bytes::Bytes;
use http::StatusCode;
use prost::Message;
use tonic::Code;

use super::proto::KubernetesStatus;
use crate::status::ApiError;

/// The `Any` type URL of the detail.
pub const STATUS_TYPE_URL: &str = "type.googleapis.com/rkube.api.v1.KubernetesStatus";

/// `google.rpc.Status`, the message gRPC's rich error model puts in `grpc-status-details-bin`.
#[derive(Clone, PartialEq, Message)]
pub struct RpcStatus {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<prost_types::Any>,
}

/// The gRPC code of a Kubernetes error, by its HTTP code and reason.
pub fn code(http: StatusCode, reason: &str) -> Code {
    match http.as_u16() {
        400 | 406 | 415 | 422 => Code::InvalidArgument,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::NotFound,
        405 => Code::Unimplemented,
        409 if reason == "AlreadyExists" => Code::AlreadyExists,
        409 => Code::Aborted,
        410 => Code::OutOfRange,
        413 | 429 => Code::ResourceExhausted,
        503 => Code::Unavailable,
        504 => Code::DeadlineExceeded,
        c if c >= 500 => Code::Internal,
        _ => Code::Unknown,
    }
}

/// The gRPC status of an encoded `metav1.Status` (as a handler answered it) with HTTP code
/// `http`.
pub fn from_status_json(http: StatusCode, json: &[u8]) -> tonic::Status {
    let status: serde_json::Value = serde_json::from_slice(json).unwrap_or_default();
    let reason = status["reason"].as_str().unwrap_or("");
    let message = status["message"].as_str().unwrap_or("").to_string();
    with_detail(code(http, reason), message, json)
}

/// A status with `json` (a `metav1.Status`) in its details.
fn with_detail(code: Code, message: String, json: &[u8]) -> tonic::Status {
    let detail = KubernetesStatus { json: Bytes::copy_from_slice(json) };
    let rpc = RpcStatus {
        code: code as i32,
        message: message.clone(),
        details: vec![prost_types::Any {
            type_url: STATUS_TYPE_URL.to_string(),
            value: detail.encode_to_vec(),
        }],
    };
    tonic::Status::with_details(code, message, Bytes::from(rpc.encode_to_vec()))
}

/// An error of the pipeline as a gRPC status.
pub fn from_api(e: &ApiError) -> tonic::Status {
    let json = rkube_apis::go_json::to_vec(&e.to_status());
    with_detail(code(e.code, e.reason), e.message.clone(), &json)
}

/// The Kubernetes Status in a gRPC status's details (what a client reads to see the reason,
/// the field causes, the retry delay).
pub fn kubernetes_status(status: &tonic::Status) -> Option<serde_json::Value> {
    let rpc = RpcStatus::decode(status.details()).ok()?;
    let any = rpc.details.into_iter().find(|a| a.type_url == STATUS_TYPE_URL)?;
    let detail = KubernetesStatus::decode(any.value.as_slice()).ok()?;
    serde_json::from_slice(&detail.json).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_mapping_from_kubernetes_reasons() {
        let cases = [
            (ApiError::not_found("", "pods", "p"), Code::NotFound),
            (ApiError::already_exists("", "pods", "p"), Code::AlreadyExists),
            (ApiError::conflict("", "pods", "p", "stale"), Code::Aborted),
            (ApiError::invalid("", "Pod", "p", Vec::new()), Code::InvalidArgument),
            (ApiError::bad_request("bad"), Code::InvalidArgument),
            (ApiError::forbidden("no"), Code::PermissionDenied),
            (ApiError::gone("too old"), Code::OutOfRange),
            (ApiError::method_not_allowed("no"), Code::Unimplemented),
            (ApiError::too_large("big"), Code::ResourceExhausted),
            (ApiError::internal("oops"), Code::Internal),
        ];
        for (error, expected) in cases {
            let status = from_api(&error);
            assert_eq!(status.code(), expected, "{}", error.reason);
            assert_eq!(status.message(), error.message);
            let detail = kubernetes_status(&status).expect("the Status in the details");
            assert_eq!(detail["reason"], error.reason);
            assert_eq!(detail["code"], error.code.as_u16());
        }
        assert_eq!(code(StatusCode::UNAUTHORIZED, "Unauthorized"), Code::Unauthenticated);
        assert_eq!(code(StatusCode::TOO_MANY_REQUESTS, "TooManyRequests"), Code::ResourceExhausted);
        assert_eq!(code(StatusCode::SERVICE_UNAVAILABLE, ""), Code::Unavailable);
    }
}
