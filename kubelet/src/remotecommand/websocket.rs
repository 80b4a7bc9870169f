//! Exec and attach over a WebSocket: the `channel.k8s.io` protocols v1 to v5 (kubectl 1.30
//! and later, client libraries), and the `base64.channel.k8s.io` ones (v1 and v4: browser
//! clients that send text). Each message starts with its stream (0 stdin, 1 stdout, 2 stderr,
//! 3 error, 4 resize; v5 adds 255, "the stream in the next byte is closed"): a byte then the
//! bytes in binary messages, an ASCII digit then base64 in text messages ([`Codec`]); the
//! client's messages are read whatever their frame type, as upstream reads them. The session
//! ends with the outcome on the error stream and a normal close.

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

/// How a channel protocol's messages carry their bytes (upstream wsstream's codecs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// `channel.k8s.io`: binary messages, the stream's number then the bytes.
    Binary,
    /// `base64.channel.k8s.io`: text messages, the stream's number as an ASCII digit
    /// (`'0' + n`) then the bytes in standard base64.
    Base64,
}

impl Codec {
    /// One message on `stream`.
    pub fn encode(self, stream: u8, data: &[u8]) -> Message {
        match self {
            Codec::Binary => {
                let mut message = Vec::with_capacity(data.len() + 1);
                message.push(stream);
                message.extend_from_slice(data);
                Message::Binary(message.into())
            }
            Codec::Base64 => {
                use base64::Engine;
                let mut text = String::with_capacity(data.len() * 4 / 3 + 5);
                text.push(char::from(b'0'.wrapping_add(stream)));
                base64::engine::general_purpose::STANDARD.encode_string(data, &mut text);
                Message::Text(text.into())
            }
        }
    }

    /// A client message's stream and bytes. Text and binary messages are read alike (upstream
    /// reads a message's payload whatever its frame type); empty messages, other kinds and
    /// bad base64 are `None`.
    pub fn decode(self, message: &Message) -> Option<(u8, Bytes)> {
        let payload: Bytes = match message {
            Message::Binary(data) => data.clone(),
            Message::Text(text) => Bytes::copy_from_slice(text.as_str().as_bytes()),
            _ => return None,
        };
        let (&first, _) = payload.split_first()?;
        match self {
            Codec::Binary => Some((first, payload.slice(1..))),
            Codec::Base64 => {
                use base64::Engine;
                let data = base64::engine::general_purpose::STANDARD.decode(&payload[1..]).ok()?;
                Some((first.wrapping_sub(b'0'), data.into()))
            }
        }
    }
}

/// A WebSocket subprotocol served: its version and codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WsProtocol {
    pub version: Protocol,
    pub codec: Codec,
}

impl WsProtocol {
    const fn binary(version: Protocol) -> WsProtocol {
        WsProtocol { version, codec: Codec::Binary }
    }

    /// `v4.channel.k8s.io`, `v4.base64.channel.k8s.io`, `base64.channel.k8s.io`, ...
    pub fn name(self) -> &'static str {
        match (self.codec, self.version) {
            (Codec::Binary, v) => v.name(),
            (Codec::Base64, Protocol::V4) => "v4.base64.channel.k8s.io",
            (Codec::Base64, _) => "base64.channel.k8s.io",
        }
    }
}

/// The subprotocols served, most preferred first: upstream's (v5, v4 and v1, binary or
/// base64 up to v4) and the binary v2 and v3.
pub const PROTOCOLS: [WsProtocol; 7] = [
    WsProtocol::binary(Protocol::V5),
    WsProtocol::binary(Protocol::V4),
    WsProtocol { version: Protocol::V4, codec: Codec::Base64 },
    WsProtocol::binary(Protocol::V3),
    WsProtocol::binary(Protocol::V2),
    WsProtocol::binary(Protocol::V1),
    WsProtocol { version: Protocol::V1, codec: Codec::Base64 },
];

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
pub fn negotiate<'a>(offered: impl IntoIterator<Item = &'a str>) -> Option<WsProtocol> {
    let offered: Vec<&str> = offered.into_iter().map(str::trim).filter(|p| !p.is_empty()).collect();
    if offered.is_empty() {
        return Some(WsProtocol::binary(Protocol::V1));
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
    protocol: WsProtocol,
    runtime: Arc<dyn Runtime>,
    target: Target,
    options: StreamOptions,
) {
    let (sink, source) = socket.split();
    let output = WsOutput { sink, protocol };
    let events = events(source, protocol.codec).boxed();
    session::run(runtime, target, options, output, events).await;
}

/// The client's messages as session events, ending when the client closes.
fn events(
    source: SplitStream<WebSocket>,
    codec: Codec,
) -> impl futures::Stream<Item = ClientEvent> + Send {
    source
        .take_while(|message| {
            std::future::ready(matches!(message, Ok(m) if !matches!(m, Message::Close(_))))
        })
        .filter_map(move |message| std::future::ready(message.ok().and_then(|m| decode(codec, &m))))
}

/// One client message as an event, if it is one.
fn decode(codec: Codec, message: &Message) -> Option<ClientEvent> {
    let (stream, data) = codec.decode(message)?;
    match stream {
        STDIN => Some(ClientEvent::Stdin(data)),
        RESIZE => session::parse_size(&data).map(ClientEvent::Resize),
        CLOSE if data.first() == Some(&STDIN) => Some(ClientEvent::StdinEnd),
        _ => None,
    }
}

/// The session's output as messages of the protocol.
struct WsOutput {
    sink: SplitSink<WebSocket, Message>,
    protocol: WsProtocol,
}

#[async_trait]
impl Output for WsOutput {
    async fn send(&mut self, pipe: Pipe, data: Bytes) -> Result<(), Gone> {
        let stream = match pipe {
            Pipe::Stdout => STDOUT,
            Pipe::Stderr => STDERR,
        };
        self.sink.send(self.protocol.codec.encode(stream, &data)).await.map_err(|_| Gone)
    }

    async fn finish(&mut self, outcome: &Outcome) {
        if let Some(message) = outcome.error_stream(self.protocol.version) {
            let _ = self.sink.send(self.protocol.codec.encode(ERROR, &message)).await;
        }
        let close = CloseFrame { code: 1000, reason: "".into() };
        let _ = self.sink.send(Message::Close(Some(close))).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remotecommand::session::TerminalSize;

    fn names(p: Option<WsProtocol>) -> Option<&'static str> {
        p.map(WsProtocol::name)
    }

    #[test]
    fn the_newest_common_protocol_is_chosen() {
        let kubectl = "v5.channel.k8s.io, v4.channel.k8s.io, v3.channel.k8s.io, \
                       v2.channel.k8s.io, channel.k8s.io";
        assert_eq!(names(negotiate(kubectl.split(','))), Some("v5.channel.k8s.io"));
        assert_eq!(
            names(negotiate(["channel.k8s.io", "v4.channel.k8s.io"])),
            Some("v4.channel.k8s.io"),
            "the newest, whatever the client's order"
        );
        assert_eq!(negotiate([]), Some(WsProtocol::binary(Protocol::V1)));
        assert_eq!(
            negotiate(["v4.base64.channel.k8s.io"]),
            Some(WsProtocol { version: Protocol::V4, codec: Codec::Base64 })
        );
        assert_eq!(names(negotiate(["base64.channel.k8s.io"])), Some("base64.channel.k8s.io"));
        assert_eq!(negotiate(["v5.base64.channel.k8s.io", "x"]), None);
    }

    #[test]
    fn messages_decode_to_events_whatever_their_frame_type() {
        let binary = |bytes: &[u8]| Message::Binary(Bytes::copy_from_slice(bytes));
        let text = |s: &str| Message::Text(s.into());
        let b = Codec::Binary;
        assert_eq!(decode(b, &binary(b"\x00hi")), Some(ClientEvent::Stdin("hi".into())));
        assert_eq!(decode(b, &text("\u{0}hi")), Some(ClientEvent::Stdin("hi".into())));
        assert_eq!(
            decode(b, &binary(b"\x04{\"Width\":3,\"Height\":4}")),
            Some(ClientEvent::Resize(TerminalSize { width: 3, height: 4 }))
        );
        assert_eq!(
            decode(b, &text("\u{4}{\"Width\":3,\"Height\":4}")),
            Some(ClientEvent::Resize(TerminalSize { width: 3, height: 4 }))
        );
        assert_eq!(decode(b, &binary(&[CLOSE, STDIN])), Some(ClientEvent::StdinEnd));
        assert_eq!(decode(b, &binary(&[CLOSE, RESIZE])), None);
        assert_eq!(decode(b, &binary(b"\x04nonsense")), None);
        assert_eq!(decode(b, &binary(b"")), None);
        assert_eq!(decode(b, &text("")), None);
        assert_eq!(decode(b, &Message::Ping(Bytes::new())), None);
    }

    #[test]
    fn base64_frames_are_a_digit_then_base64() {
        let c = Codec::Base64;
        // "echo hi\n" on stdin, as a browser client sends it.
        assert_eq!(
            decode(c, &Message::Text("0ZWNobyBoaQo=".into())),
            Some(ClientEvent::Stdin("echo hi\n".into()))
        );
        // Read from binary frames too.
        assert_eq!(
            decode(c, &Message::Binary(Bytes::from_static(b"0aGk="))),
            Some(ClientEvent::Stdin("hi".into()))
        );
        // {"Width":3,"Height":4} on the resize stream.
        assert_eq!(
            decode(c, &Message::Text("4eyJXaWR0aCI6MywiSGVpZ2h0Ijo0fQ==".into())),
            Some(ClientEvent::Resize(TerminalSize { width: 3, height: 4 }))
        );
        assert_eq!(decode(c, &Message::Text("0not base64!".into())), None);
        assert_eq!(c.encode(STDOUT, b"hi\n"), Message::Text("1aGkK".into()));
        assert_eq!(c.encode(ERROR, b""), Message::Text("3".into()));
        assert_eq!(
            Codec::Binary.encode(STDERR, b"x"),
            Message::Binary(Bytes::from_static(b"\x02x"))
        );
    }
}
