//! A watch in the Kubernetes protobuf encoding, as kube-apiserver streams it: one frame per
//! event, each a 4-byte big-endian length then a bare `meta.k8s.io/v1 WatchEvent` message
//! (the stream serializer writes no magic and no `runtime.Unknown` around it) whose `object`
//! is a `RawExtension` holding the object's full protobuf body (magic, envelope, message).

use k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent;
use k8s_pb::apimachinery::pkg::runtime::RawExtension;
use prost::Message as _;
use serde_json::Value;

use super::ProtobufError;

/// The media type of a protobuf watch response.
pub const STREAM_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// One event of a protobuf watch: `event_type` ("ADDED", "MODIFIED", "DELETED", "BOOKMARK",
/// "ERROR") and the object (a `Status` for "ERROR"), framed for the stream.
pub fn watch_frame(event_type: &str, object: &Value) -> Result<Vec<u8>, ProtobufError> {
    let event = WatchEvent {
        r#type: Some(event_type.to_string()),
        object: Some(RawExtension { raw: Some(super::encode(object)?) }),
    };
    let len = event.encoded_len();
    let header = u32::try_from(len).map_err(|_| ProtobufError::Unencodable {
        kind: "WatchEvent".to_string(),
        path: String::new(),
        reason: format!("{len} bytes do not fit a frame"),
    })?;
    let mut out = Vec::with_capacity(4 + len);
    out.extend_from_slice(&header.to_be_bytes());
    event.encode_raw(&mut out);
    Ok(out)
}
