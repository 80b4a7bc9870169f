//! Exec and attach over a WebSocket: the `channel.k8s.io` protocols v1 to v5 (kubectl 1.30
//! and later, client libraries). Each binary message starts with the byte of its stream (0
//! stdin, 1 stdout, 2 stderr, 3 error, 4 resize; v5 adds 255, "the stream in the next byte
//! is closed"); the session ends with the outcome on the error stream and a normal close.

use std::sync::Arc;

use async_trait::async_trait;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use bytes::Bytes;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use http::StatusCode;

use super::session::{self, ClientEvent, Gone, Outcome, Output, Pipe};
use super::{Protocol, StreamOptions, Target};
use crate::runtime::Runtime;
use crate::server::text_error;

/// The subprotocols served, most preferred first.
pub const PROTOCOLS: [Protocol; 5] =
    [Protocol::V5, Protocol::V4, Protocol::V3, Protocol::V2, Protocol::V1];

/// Stream ids of the protocol.
const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;
const RESIZE: u8 = 4;
/// v5: "the stream in the next byte is closed".
const CLOSE: u8 = 255;

/// The newest protocol both sides speak, whatever the client's order; a client offering
/// none gets v1 (as upstream), one offering only others gets `None`.
pub fn negotiate<'a>(offered: impl IntoIterator<Item = &'a str>) -> Option<Protocol> {
    let offered: Vec<&str> = offered.into_iter().map(str::trim).filter(|p| !p.is_empty()).collect();
    if offered.is_empty() {
        return Some(Protocol::V1);
    }
    PROTOCOLS.into_iter().find(|p| offered.contains(&p.name()))
}

/// Negotiates the subprotocol and upgrades; the session runs on the upgraded connection.
pub fn upgrade(
    ws: WebSocketUpgrade,
    runtime: Arc<dyn Runtime>,
    target: Target,
    options: StreamOptions,
) -> Response {
    let offered: Vec<String> =
        ws.requested_protocols().filter_map(|p| p.to_str().ok().map(String::from)).collect();
    let Some(protocol) = negotiate(offered.iter().map(String::as_str)) else {
        let supported: Vec<&str> = PROTOCOLS.iter().map(|p| p.name()).collect();
        return text_error(
            StatusCode::FORBIDDEN,
            format!(
                "requested protocol(s) are not supported: [{}]; supports [{}]",
                offered.join(" "),
                supported.join(" ")
            ),
        );
    };
    let ws = if offered.is_empty() { ws } else { ws.protocols([protocol.name()]) };
    ws.on_upgrade(move |socket| serve(socket, protocol, runtime, target, options))
}

/// One session on an upgraded WebSocket.
async fn serve(
    socket: WebSocket,
    protocol: Protocol,
    runtime: Arc<dyn Runtime>,
    target: Target,
    options: StreamOptions,
) {
    let (sink, source) = socket.split();
    let output = WsOutput { sink, protocol };
    session::run(runtime, target, options, output, events(source).boxed()).await;
}

/// The client's messages as session events, ending when the client closes.
fn events(source: SplitStream<WebSocket>) -> impl futures::Stream<Item = ClientEvent> + Send {
    source
        .take_while(|message| {
            std::future::ready(matches!(message, Ok(m) if !matches!(m, Message::Close(_))))
        })
        .filter_map(|message| std::future::ready(message.ok().and_then(decode)))
}

/// One client message as an event, if it is one.
fn decode(message: Message) -> Option<ClientEvent> {
    let Message::Binary(data) = message else { return None };
    let (&stream, rest) = data.split_first()?;
    match stream {
        STDIN => Some(ClientEvent::Stdin(data.slice(1..))),
        RESIZE => session::parse_size(rest).map(ClientEvent::Resize),
        CLOSE if rest.first() == Some(&STDIN) => Some(ClientEvent::StdinEnd),
        _ => None,
    }
}

/// The session's output as binary messages.
struct WsOutput {
    sink: SplitSink<WebSocket, Message>,
    protocol: Protocol,
}

#[async_trait]
impl Output for WsOutput {
    async fn send(&mut self, pipe: Pipe, data: Bytes) -> Result<(), Gone> {
        let stream = match pipe {
            Pipe::Stdout => STDOUT,
            Pipe::Stderr => STDERR,
        };
        self.sink.send(frame(stream, &data)).await.map_err(|_| Gone)
    }

    async fn finish(&mut self, outcome: &Outcome) {
        if let Some(message) = outcome.error_stream(self.protocol) {
            let _ = self.sink.send(frame(ERROR, &message)).await;
        }
        let close = CloseFrame { code: 1000, reason: "".into() };
        let _ = self.sink.send(Message::Close(Some(close))).await;
    }
}

/// A binary message on one stream.
fn frame(stream: u8, data: &[u8]) -> Message {
    let mut message = Vec::with_capacity(data.len() + 1);
    message.push(stream);
    message.extend_from_slice(data);
    Message::Binary(message.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remotecommand::session::TerminalSize;

    #[test]
    fn the_newest_common_protocol_is_chosen() {
        let kubectl = "v5.channel.k8s.io, v4.channel.k8s.io, v3.channel.k8s.io, \
                       v2.channel.k8s.io, channel.k8s.io";
        assert_eq!(negotiate(kubectl.split(',')), Some(Protocol::V5));
        assert_eq!(
            negotiate(["channel.k8s.io", "v4.channel.k8s.io"]),
            Some(Protocol::V4),
            "the newest, whatever the client's order"
        );
        assert_eq!(negotiate([]), Some(Protocol::V1));
        assert_eq!(negotiate(["base64.channel.k8s.io"]), None);
    }

    #[test]
    fn messages_decode_to_events() {
        let binary = |bytes: &[u8]| Message::Binary(Bytes::copy_from_slice(bytes));
        assert_eq!(decode(binary(b"\x00hi")), Some(ClientEvent::Stdin("hi".into())));
        assert_eq!(
            decode(binary(b"\x04{\"Width\":3,\"Height\":4}")),
            Some(ClientEvent::Resize(TerminalSize { width: 3, height: 4 }))
        );
        assert_eq!(decode(binary(&[CLOSE, STDIN])), Some(ClientEvent::StdinEnd));
        assert_eq!(decode(binary(&[CLOSE, RESIZE])), None);
        assert_eq!(decode(binary(b"\x04nonsense")), None);
        assert_eq!(decode(binary(b"")), None);
        assert_eq!(decode(Message::Text("x".into())), None);
    }
}
