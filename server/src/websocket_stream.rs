//! A streamed answer (the `pods/log` body) over a WebSocket, as upstream's `wsstream.Reader`
//! serves it when the client asks to upgrade: each chunk of the stream one message, then a
//! normal close. The protocols are upstream's defaults for a reader: none or
//! `binary.k8s.io` (binary messages holding the bytes) and `base64.binary.k8s.io` (text
//! messages holding them in standard base64). No channel byte: a reader has one stream.

use axum::body::Body;
use axum::extract::ws::{CloseFrame, Message, WebSocketUpgrade};
use axum::extract::FromRequestParts;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use http::{HeaderMap, Method, Uri};
use http_body_util::BodyExt;
use hyper::upgrade::OnUpgrade;

use crate::status::{ApiError, ApiResult};

/// The protocols a reader speaks, the base64 one last.
const BINARY: &str = "binary.k8s.io";
const BASE64: &str = "base64.binary.k8s.io";

/// True when the request asks for a WebSocket (`Connection: Upgrade`, `Upgrade: websocket`).
pub fn is_websocket_request(headers: &HeaderMap) -> bool {
    crate::proxy::is_upgrade_request(headers)
        && headers
            .get(http::header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket"))
}

/// Answers the upgrade and streams `body` over the WebSocket.
pub async fn serve(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    upgrade: Option<OnUpgrade>,
    body: Body,
) -> ApiResult<Response> {
    let mut request = http::Request::new(());
    *request.method_mut() = method.clone();
    *request.uri_mut() = uri.clone();
    *request.headers_mut() = headers.clone();
    if let Some(upgrade) = upgrade {
        request.extensions_mut().insert(upgrade);
    }
    let (mut parts, ()) = request.into_parts();
    let socket = WebSocketUpgrade::from_request_parts(&mut parts, &())
        .await
        .map_err(|rejection| ApiError::bad_request(rejection.body_text()))?;
    let socket = socket.protocols([BINARY, BASE64]);
    let base64 = socket.selected_protocol().and_then(|p| p.to_str().ok()) == Some(BASE64);
    Ok(socket
        .on_upgrade(move |mut socket| async move {
            let mut body = body;
            while let Some(Ok(frame)) = body.frame().await {
                let Ok(data) = frame.into_data() else { continue };
                if data.is_empty() {
                    continue;
                }
                let message = if base64 {
                    Message::Text(base64::engine::general_purpose::STANDARD.encode(&data).into())
                } else {
                    Message::Binary(data)
                };
                if socket.send(message).await.is_err() {
                    return;
                }
            }
            let close = CloseFrame { code: 1000, reason: "".into() };
            let _ = socket.send(Message::Close(Some(close))).await;
        })
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, http::HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn only_websocket_upgrades_are_streamed_over_a_websocket() {
        let ws = [("connection", "keep-alive, Upgrade"), ("upgrade", "WebSocket")];
        assert!(is_websocket_request(&headers(&ws)));
        assert!(!is_websocket_request(&headers(&[
            ("connection", "Upgrade"),
            ("upgrade", "SPDY/3.1")
        ])));
        assert!(!is_websocket_request(&headers(&[("upgrade", "websocket")])));
        assert!(!is_websocket_request(&headers(&[])));
    }
}
