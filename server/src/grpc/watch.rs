//! A watch's reply (one encoded event after another, as REST streams them) as gRPC
//! [`WatchEvent`] messages. An `ERROR` event ends the stream with its Status as the call's
//! status (see [`super::errors`]); the call's deadline ends it too. Dropping the stream (the
//! client cancelled, or went away) drops the server-side watch with it.

use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use http::StatusCode;
use tonic::Status;

use super::errors;
use super::proto::{watch_event, WatchEvent};

/// The prefix and infix of a JSON watch frame (`{"type":"ADDED","object":{...}}\n`).
const TYPE_PREFIX: &[u8] = b"{\"type\":\"";
const OBJECT_INFIX: &[u8] = b"\",\"object\":";

/// One JSON frame read: the event type and the object's bytes.
fn read_json_frame(frame: &Bytes) -> Option<(&str, Bytes)> {
    let rest = frame.strip_prefix(TYPE_PREFIX)?;
    let end = rest.iter().position(|&b| b == b'"')?;
    let kind = std::str::from_utf8(&rest[..end]).ok()?;
    let object_at = TYPE_PREFIX.len() + end;
    if !frame[object_at..].starts_with(OBJECT_INFIX) {
        return None;
    }
    let start = object_at + OBJECT_INFIX.len();
    let trimmed = frame.len() - frame.iter().rev().take_while(|b| b.is_ascii_whitespace()).count();
    // The object ends before the frame's closing brace.
    let end = trimmed.checked_sub(1).filter(|&e| e >= start && frame[e] == b'}')?;
    Some((kind, frame.slice(start..end)))
}

fn event_type(kind: &str) -> watch_event::Type {
    match kind {
        "ADDED" => watch_event::Type::Added,
        "MODIFIED" => watch_event::Type::Modified,
        "DELETED" => watch_event::Type::Deleted,
        "BOOKMARK" => watch_event::Type::Bookmark,
        "ERROR" => watch_event::Type::Error,
        _ => watch_event::Type::Unspecified,
    }
}

/// The ERROR event's Status as the call's status.
fn error_status(object: &[u8]) -> Status {
    let status: serde_json::Value = serde_json::from_slice(object).unwrap_or_default();
    let code = status["code"]
        .as_u64()
        .and_then(|c| StatusCode::from_u16(c as u16).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    errors::from_status_json(code, object)
}

/// The events of `frames` (encoded as `content_type`), until an ERROR or `deadline`.
pub fn events(
    frames: BoxStream<'static, Bytes>,
    content_type: &'static str,
    deadline: Option<Duration>,
) -> super::WatchStream {
    let json = content_type.starts_with("application/json");
    let stream = async_stream::stream! {
        let sleep = tokio::time::sleep(deadline.unwrap_or(Duration::from_secs(u32::MAX as u64)));
        tokio::pin!(sleep);
        let mut frames = frames;
        loop {
            let frame = tokio::select! {
                frame = frames.next() => frame,
                _ = &mut sleep => {
                    yield Err(Status::deadline_exceeded("the call's deadline passed"));
                    break;
                }
            };
            let Some(frame) = frame else { break };
            if !json {
                // Protobuf frames go out whole: the client reads the type from them.
                yield Ok(WatchEvent {
                    r#type: watch_event::Type::Unspecified as i32,
                    object: frame,
                    content_type: content_type.to_string(),
                });
                continue;
            }
            let Some((kind, object)) = read_json_frame(&frame) else {
                yield Err(Status::internal("an unreadable watch frame"));
                break;
            };
            let kind = event_type(kind);
            if kind == watch_event::Type::Error {
                yield Err(error_status(&object));
                break;
            }
            yield Ok(WatchEvent {
                r#type: kind as i32,
                object,
                content_type: content_type.to_string(),
            });
        }
    };
    Box::pin(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_frames() {
        let frame = Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":{\"a\":{\"b\":1}}}\n");
        let (kind, object) = read_json_frame(&frame).unwrap();
        assert_eq!((kind, &object[..]), ("ADDED", &b"{\"a\":{\"b\":1}}"[..]));
        assert!(read_json_frame(&Bytes::from_static(b"{\"object\":{}}")).is_none());
        assert!(read_json_frame(&Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":")).is_none());
    }

    #[tokio::test]
    async fn an_error_event_ends_the_stream_with_its_status() {
        let gone = b"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"too old resource version: 1 (5)\",\"reason\":\"Expired\",\"code\":410}}\n";
        let frames = futures_util::stream::iter(vec![
            Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":{}}\n"),
            Bytes::from_static(gone),
            Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":{}}\n"),
        ])
        .boxed();
        let got: Vec<_> = events(frames, "application/json", None).collect().await;
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].as_ref().unwrap().r#type, watch_event::Type::Added as i32);
        let status = got[1].as_ref().unwrap_err();
        assert_eq!(status.code(), tonic::Code::OutOfRange);
        assert_eq!(status.message(), "too old resource version: 1 (5)");
    }
}
