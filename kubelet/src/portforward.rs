//! `/portForward/{namespace}/{pod}[/{uid}]`: `kubectl port-forward`, as upstream's kubelet
//! serves it. Three ways in, one forwarding underneath:
//!
//! - **SPDY/3.1 upgrade** (kubectl 1.27 to 1.30, and later ones when WebSockets fail):
//!   `Connection: Upgrade`, `Upgrade: SPDY/3.1`, `X-Stream-Protocol-Version:
//!   portforward.k8s.io`, answered `101` with the same three headers, then a SPDY session
//!   ([`crate::spdy`]) on the raw connection.
//! - **SPDY tunnelled in a WebSocket** (kubectl 1.31 and later): subprotocol
//!   `SPDY/3.1+portforward.k8s.io`, the same SPDY session carried in binary messages.
//!   Upstream's API server unwraps the tunnel and speaks plain SPDY to the kubelet; rkube's
//!   API server passes upgrades through, so the kubelet unwraps it.
//! - **The `v4.channel.k8s.io` and `v4.base64.channel.k8s.io` WebSocket protocols** (client
//!   libraries such as kube-rs, browser clients): the ports come from the `port` query
//!   (required, as upstream); port *i* has data channel *2i* and error channel *2i+1*, each
//!   starting with the port in two little-endian bytes; messages are framed by the
//!   protocol's [`Codec`] (binary, or a digit and base64 in text), the client's read
//!   whatever their frame type.
//!
//! In SPDY each forwarded connection is a pair of streams the client opens, `streamtype:
//! error` and `streamtype: data`, tied by a `requestid` header. The kubelet connects to the
//! port on the loopback address inside the pod's network namespace
//! ([`crate::runtime::Runtime::port_forward`]) and copies bytes both ways; when the pod's side
//! ends, both streams are closed. A failure is written on the error stream as upstream writes
//! it, `error forwarding port 81 to pod <sandbox id>, uid : <why>`, which kubectl prints.
//! A connection the pod resets (or a peer that stops reading) resets both streams instead.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Path, RawQuery, Request, State};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use futures::{FutureExt, SinkExt, StreamExt};
use http::{header, StatusCode};
use k8s_openapi::api::core::v1::Pod;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use crate::httpstream;
use crate::remotecommand::websocket::Codec;
use crate::runtime::{ContainerState, Runtime};
use crate::server::{text_error, ServerState};
use crate::spdy::{self, Headers, NewStream, StreamWriter};

/// The port-forward protocol of `X-Stream-Protocol-Version`.
pub const PROTOCOL: &str = "portforward.k8s.io";
/// The WebSocket subprotocol of SPDY tunnelled through WebSockets.
pub const TUNNEL_PROTOCOL: &str = "SPDY/3.1+portforward.k8s.io";
/// The channel WebSocket protocol for port forwarding.
pub const CHANNEL_PROTOCOL: &str = "v4.channel.k8s.io";
/// The same with base64 text messages.
pub const BASE64_CHANNEL_PROTOCOL: &str = "v4.base64.channel.k8s.io";

/// How long the second stream of a pair may take to arrive (upstream's stream creation
/// timeout).
const STREAM_CREATION_TIMEOUT: Duration = Duration::from_secs(30);

/// The `port` query values of a WebSocket request (upstream's NewV4Options), or the 400's text.
pub fn query_ports(query: Option<&str>) -> Result<Vec<u16>, String> {
    let values: Vec<String> = query
        .map(|q| {
            form_urlencoded::parse(q.as_bytes())
                .filter(|(k, _)| k == "port")
                .map(|(_, v)| v.into_owned())
                .collect()
        })
        .unwrap_or_default();
    if values.is_empty() {
        return Err(r#"query parameter "port" is required"#.into());
    }
    let mut ports = Vec::new();
    for value in &values {
        if value.is_empty() {
            return Err(r#"query parameter "port" cannot be empty"#.into());
        }
        for p in value.split(',') {
            let port: u16 = p.parse().map_err(|e| {
                format!("unable to parse {value:?} as a port: {}", go_parse_error(p, e))
            })?;
            if port < 1 {
                return Err(format!("port {value:?} must be > 0"));
            }
            ports.push(port);
        }
    }
    Ok(ports)
}

/// A port parse error as Go's strconv words it.
fn go_parse_error(text: &str, e: std::num::ParseIntError) -> String {
    let why = match e.kind() {
        std::num::IntErrorKind::PosOverflow => "value out of range",
        _ => "invalid syntax",
    };
    format!("strconv.ParseUint: parsing {text:?}: {why}")
}

/// Connects to a port of a sandbox (the runtime's [`Runtime::port_forward`]).
type Dialer =
    Arc<dyn Fn(String, u16) -> BoxFuture<'static, Result<TcpStream, String>> + Send + Sync>;

/// Where forwarded connections go: the pod's sandbox.
#[derive(Clone)]
struct Target {
    dial: Dialer,
    sandbox_id: String,
}

impl Target {
    fn new(runtime: Arc<dyn Runtime>, sandbox_id: String) -> Target {
        let dial: Dialer = Arc::new(move |sandbox_id: String, port: u16| {
            let runtime = runtime.clone();
            async move { runtime.port_forward(&sandbox_id, port).await.map_err(|e| e.to_string()) }
                .boxed()
        });
        Target { dial, sandbox_id }
    }

    async fn connect(&self, port: u16) -> Result<TcpStream, String> {
        (self.dial)(self.sandbox_id.clone(), port).await
    }

    /// Upstream's words on the error stream (the streaming server knows the pod by its
    /// sandbox and has no uid).
    fn error_message(&self, port: u16, why: &str) -> String {
        format!("error forwarding port {port} to pod {}, uid : {why}", self.sandbox_id)
    }
}

/// The pod's newest sandbox.
async fn find_sandbox(state: &ServerState, pod: &Pod) -> Result<String, Response> {
    let uid = pod.metadata.uid.as_deref().unwrap_or("");
    let records = state
        .runtime
        .list(&state.config.node_name, Some(uid))
        .await
        .map_err(|e| text_error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let newest = records
        .iter()
        .filter(|r| r.is_sandbox())
        .max_by_key(|r| (matches!(r.state, ContainerState::Running { .. }), r.attempt()));
    newest.map(|r| r.id.clone()).ok_or_else(|| {
        text_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "failed to find sandbox for pod \"{}_{}({uid})\"",
                pod.metadata.name.as_deref().unwrap_or(""),
                pod.metadata.namespace.as_deref().unwrap_or("")
            ),
        )
    })
}

/// The handler of both routes.
pub async fn port_forward(
    State(state): State<Arc<ServerState>>,
    Path(params): Path<Vec<String>>,
    RawQuery(query): RawQuery,
    request: Request,
) -> Response {
    let (namespace, pod_name, uid) = match params.as_slice() {
        [ns, pod] => (ns, pod, None),
        [ns, pod, uid] => (ns, pod, Some(uid.as_str())),
        _ => return text_error(StatusCode::NOT_FOUND, "404 page not found\n"),
    };
    let (mut parts, _body) = request.into_parts();
    let websocket = httpstream::is_upgrade_to(&parts.headers, "websocket");
    let offered = httpstream::header_list(&parts.headers, header::SEC_WEBSOCKET_PROTOCOL);
    let tunnel = websocket && offered.iter().any(|p| p == TUNNEL_PROTOCOL);
    // Only the channel protocol names its ports in the query.
    let ports = if websocket && !tunnel {
        match query_ports(query.as_deref()) {
            Ok(ports) => ports,
            Err(e) => return text_error(StatusCode::BAD_REQUEST, e),
        }
    } else {
        Vec::new()
    };
    let Some(pod) = state.pods.get(namespace, pod_name) else {
        return text_error(StatusCode::NOT_FOUND, "pod does not exist");
    };
    if uid.is_some_and(|u| Some(u) != pod.metadata.uid.as_deref()) {
        return text_error(StatusCode::NOT_FOUND, "pod not found");
    }
    let sandbox_id = match find_sandbox(&state, &pod).await {
        Ok(id) => id,
        Err(response) => return response,
    };
    let target = Target::new(state.runtime.clone(), sandbox_id);

    if websocket {
        let ws = match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
            Ok(ws) => ws,
            Err(rejection) => return rejection.into_response(),
        };
        if tunnel {
            return ws
                .protocols([TUNNEL_PROTOCOL])
                .on_upgrade(move |socket| serve_spdy(WsBytes::new(socket), target));
        }
        // The client's first protocol that is served (upstream's handshake), binary when it
        // names none.
        let chosen = offered.iter().find_map(|p| match p.as_str() {
            CHANNEL_PROTOCOL => Some((CHANNEL_PROTOCOL, Codec::Binary)),
            BASE64_CHANNEL_PROTOCOL => Some((BASE64_CHANNEL_PROTOCOL, Codec::Base64)),
            _ => None,
        });
        let (protocol, codec) = match chosen {
            Some(chosen) => chosen,
            None if offered.is_empty() => (CHANNEL_PROTOCOL, Codec::Binary),
            None => {
                return text_error(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "unable to upgrade websocket connection: requested protocol(s) are not \
                         supported: [{}]; supports [{TUNNEL_PROTOCOL} {CHANNEL_PROTOCOL} \
                         {BASE64_CHANNEL_PROTOCOL}]",
                        offered.join(" ")
                    ),
                )
            }
        };
        return ws
            .protocols([protocol])
            .on_upgrade(move |socket| serve_channels(socket, codec, ports, target));
    }

    let protocol = match httpstream::handshake(&parts.headers, &[PROTOCOL]) {
        Ok(p) => p,
        Err(response) => return *response,
    };
    httpstream::upgrade_to_spdy(&mut parts, protocol, "forwards ports", move |io| {
        serve_spdy(io, target)
    })
}

// ---------------------------------------------------------------------------------------
// SPDY

/// Checks a new stream's headers as upstream's stream handler does; a refused stream is reset.
fn check_stream(headers: &Headers) -> Result<(), String> {
    let port = spdy::header(headers, "port").filter(|p| !p.is_empty());
    let Some(port) = port else { return Err(r#""port" header is required"#.into()) };
    let number: u16 = port
        .parse()
        .map_err(|e| format!("unable to parse {port:?} as a port: {}", go_parse_error(port, e)))?;
    if number < 1 {
        return Err(format!("port {port:?} must be > 0"));
    }
    match spdy::header(headers, "streamtype") {
        None | Some("") => Err(r#""streamtype" header is required"#.into()),
        Some("error") | Some("data") => Ok(()),
        Some(other) => Err(format!("invalid stream type {other:?}")),
    }
}

/// The pair a stream belongs to: its `requestid`, or for clients too old to send one, a guess
/// from the stream ids (an error stream and the data stream after it).
fn request_id(stream: &NewStream) -> String {
    if let Some(id) = spdy::header(&stream.headers, "requestid").filter(|id| !id.is_empty()) {
        return id.to_string();
    }
    match spdy::header(&stream.headers, "streamtype") {
        Some("data") => stream.id.saturating_sub(2).to_string(),
        _ => stream.id.to_string(),
    }
}

#[derive(Default)]
struct Pair {
    error: Option<NewStream>,
    data: Option<NewStream>,
}

impl Pair {
    /// Adds a stream; a second stream of one type is refused with upstream's message.
    fn add(&mut self, stream: NewStream) -> Result<(), (String, NewStream)> {
        let slot = match spdy::header(&stream.headers, "streamtype") {
            Some("error") => &mut self.error,
            _ => &mut self.data,
        };
        if slot.is_some() {
            let kind = if spdy::header(&stream.headers, "streamtype") == Some("error") {
                "error"
            } else {
                "data"
            };
            return Err((format!("{kind} stream already assigned"), stream));
        }
        *slot = Some(stream);
        Ok(())
    }
}

/// One SPDY port-forward connection: pairs up the streams and forwards each pair.
async fn serve_spdy<IO>(io: IO, target: Target)
where
    IO: AsyncRead + AsyncWrite + Send + 'static,
{
    let (streams_tx, mut streams) = mpsc::channel(16);
    let session = tokio::spawn(spdy::serve(io, check_stream, streams_tx));
    let mut pairs: HashMap<String, Pair> = HashMap::new();
    let (expired_tx, mut expired) = mpsc::unbounded_channel::<String>();
    loop {
        tokio::select! {
            stream = streams.recv() => {
                let Some(stream) = stream else { break };
                let id = request_id(&stream);
                let pair = pairs.entry(id.clone()).or_insert_with(|| {
                    let expired_tx = expired_tx.clone();
                    let id = id.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(STREAM_CREATION_TIMEOUT).await;
                        let _ = expired_tx.send(id);
                    });
                    Pair::default()
                });
                if let Err((why, extra)) = pair.add(stream) {
                    let message = format!("error processing stream for request {id}: {why}");
                    tracing::warn!(message, "port-forward");
                    if let Some(error) = &pair.error {
                        let _ = error.writer.write(message.into()).await;
                    }
                    let _ = extra.writer.reset(spdy::status::PROTOCOL_ERROR).await;
                    continue;
                }
                if pair.error.is_some() && pair.data.is_some() {
                    let pair = pairs.remove(&id).expect("the pair just completed");
                    let (Some(error), Some(data)) = (pair.error, pair.data) else { continue };
                    tokio::spawn(forward_pair(target.clone(), data, error));
                }
            }
            Some(id) = expired.recv() => {
                // Still incomplete after the timeout: say so and let it go.
                if let Some(pair) = pairs.remove(&id) {
                    let message = format!("(request={id}) timed out waiting for streams");
                    tracing::warn!(message, "port-forward");
                    if let Some(error) = pair.error {
                        let _ = error.writer.write(message.into()).await;
                        let _ = error.writer.finish().await;
                    }
                    if let Some(data) = pair.data {
                        let _ = data.writer.reset(spdy::status::CANCEL).await;
                    }
                }
            }
        }
    }
    drop(pairs);
    match session.await {
        Ok(Err(e)) => tracing::debug!(error = %e, "port-forward connection ended"),
        Err(e) => tracing::debug!(error = %e, "port-forward session task failed"),
        Ok(Ok(())) => {}
    }
}

/// Forwards one connection: the pod's port to the data stream and back.
async fn forward_pair(target: Target, data: NewStream, error: NewStream) {
    let NewStream { headers, data: from_client, reset, writer: data_writer, .. } = data;
    // The client writes nothing on the error stream.
    let NewStream { writer: error_writer, .. } = error;
    let port: u16 = spdy::header(&headers, "port").and_then(|p| p.parse().ok()).unwrap_or(0);
    let outcome = match target.connect(port).await {
        Ok(conn) => {
            pump(conn, from_client, Out::Spdy(data_writer.clone()), reset).await.map_err(|e| {
                if is_reset(&e) {
                    Failure::Reset(e.to_string())
                } else {
                    Failure::Message(e.to_string())
                }
            })
        }
        Err(why) => Err(Failure::Message(why)),
    };
    match outcome {
        Ok(()) => {}
        // The pod reset its connection, or stopped reading: the client's connection is reset
        // too, and other forwards go on (upstream's handling of ECONNRESET and EPIPE).
        Err(Failure::Reset(why)) => {
            tracing::info!(port, why, "port-forward: connection reset");
            let _ = data_writer.reset(spdy::status::CANCEL).await;
            let _ = error_writer.reset(spdy::status::CANCEL).await;
            return;
        }
        Err(Failure::Message(why)) => {
            let message = target.error_message(port, &why);
            tracing::info!(message, "port-forward");
            let _ = error_writer.write(message.into()).await;
        }
    }
    let _ = data_writer.finish().await;
    let _ = error_writer.finish().await;
}

enum Failure {
    Reset(String),
    Message(String),
}

fn is_reset(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe)
}

/// Where the pod's bytes go.
enum Out {
    Spdy(StreamWriter),
    Channel(u8, mpsc::Sender<(u8, Bytes)>),
}

impl Out {
    /// False once the client side is gone.
    async fn send(&self, data: Bytes) -> bool {
        match self {
            Out::Spdy(writer) => writer.write(data).await.is_ok(),
            Out::Channel(channel, tx) => tx.send((*channel, data)).await.is_ok(),
        }
    }
}

/// Copies both ways until the pod's side ends, the client resets the stream, or a copy
/// fails. The client's end of data half-closes the pod connection.
async fn pump(
    conn: TcpStream,
    mut from_client: mpsc::Receiver<Bytes>,
    to_client: Out,
    mut reset: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let (mut pod_read, mut pod_write) = conn.into_split();
    let upload = async move {
        while let Some(chunk) = from_client.recv().await {
            pod_write.write_all(&chunk).await?;
        }
        // The client sends no more: the pod reads its end.
        pod_write.shutdown().await
    };
    let download = async move {
        let mut buf = BytesMut::with_capacity(32 * 1024);
        loop {
            if buf.capacity() < 16 * 1024 {
                buf.reserve(32 * 1024);
            }
            if pod_read.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
            if !to_client.send(buf.split().freeze()).await {
                return Ok(());
            }
        }
    };
    tokio::pin!(upload, download);
    let mut uploading = true;
    loop {
        tokio::select! {
            done = &mut download => return done,
            done = &mut upload, if uploading => {
                uploading = false;
                done?;
            }
            _ = reset.wait_for(|r| *r) => return Ok(()),
        }
    }
}

// ---------------------------------------------------------------------------------------
// WebSocket as a byte stream

/// A WebSocket read and written as bytes: each write is one binary message, reads run across
/// message boundaries (client-go's TunnelingConnection on the other side does the same).
pub struct WsBytes {
    socket: WebSocket,
    pending: Bytes,
    read_closed: bool,
    close_sent: bool,
}

impl WsBytes {
    pub fn new(socket: WebSocket) -> WsBytes {
        WsBytes { socket, pending: Bytes::new(), read_closed: false, close_sent: false }
    }
}

fn ws_error(e: axum::Error) -> std::io::Error {
    std::io::Error::other(e)
}

impl AsyncRead for WsBytes {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        let this = self.get_mut();
        loop {
            if !this.pending.is_empty() {
                let n = this.pending.len().min(buf.remaining());
                buf.put_slice(&this.pending.split_to(n));
                return Poll::Ready(Ok(()));
            }
            if this.read_closed {
                return Poll::Ready(Ok(()));
            }
            match futures::ready!(this.socket.poll_next_unpin(cx)) {
                None | Some(Ok(Message::Close(_))) => this.read_closed = true,
                Some(Ok(Message::Binary(data))) => this.pending = data,
                Some(Ok(Message::Text(_))) => {
                    return Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "invalid message type received",
                    )))
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Poll::Ready(Err(ws_error(e))),
            }
        }
    }
}

impl AsyncWrite for WsBytes {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        futures::ready!(this.socket.poll_ready_unpin(cx)).map_err(ws_error)?;
        this.socket
            .start_send_unpin(Message::Binary(Bytes::copy_from_slice(buf)))
            .map_err(ws_error)?;
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.get_mut().socket.poll_flush_unpin(cx).map_err(ws_error)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if !this.close_sent {
            futures::ready!(this.socket.poll_ready_unpin(cx)).map_err(ws_error)?;
            let close = CloseFrame { code: 1000, reason: "".into() };
            // The peer may have closed first; then there is nothing to say.
            let _ = this.socket.start_send_unpin(Message::Close(Some(close)));
            this.close_sent = true;
        }
        this.socket.poll_close_unpin(cx).map_err(ws_error)
    }
}

// ---------------------------------------------------------------------------------------
// v4.channel.k8s.io

/// One channel-protocol connection: every port of the query at once.
async fn serve_channels(socket: WebSocket, codec: Codec, ports: Vec<u16>, target: Target) {
    let (mut sink, mut source) = socket.split();
    let (out_tx, mut out_rx) = mpsc::channel::<(u8, Bytes)>(32);
    let writer = tokio::spawn(async move {
        while let Some((channel, data)) = out_rx.recv().await {
            if sink.send(codec.encode(channel, &data)).await.is_err() {
                return;
            }
        }
        let close = CloseFrame { code: 1000, reason: "".into() };
        let _ = sink.send(Message::Close(Some(close))).await;
    });
    let mut inputs = Vec::with_capacity(ports.len());
    let mut forwards = tokio::task::JoinSet::new();
    // The connection ends when the client goes: the forwards learn it here.
    let (gone_tx, gone) = watch::channel(false);
    for (i, &port) in ports.iter().enumerate() {
        let (data_channel, error_channel) = ((2 * i) as u8, (2 * i + 1) as u8);
        let prefix = Bytes::copy_from_slice(&port.to_le_bytes());
        let _ = out_tx.send((data_channel, prefix.clone())).await;
        let _ = out_tx.send((error_channel, prefix)).await;
        let (input_tx, input) = mpsc::channel::<Bytes>(16);
        inputs.push(input_tx);
        let (target, out, gone) = (target.clone(), out_tx.clone(), gone.clone());
        forwards.spawn(async move {
            let outcome = match target.connect(port).await {
                Ok(conn) => pump(conn, input, Out::Channel(data_channel, out.clone()), gone)
                    .await
                    .map_err(|e| e.to_string()),
                Err(why) => Err(why),
            };
            if let Err(why) = outcome {
                let message = target.error_message(port, &why);
                tracing::info!(message, "port-forward");
                let _ = out.send((error_channel, message.into())).await;
            }
        });
    }
    drop(out_tx);
    loop {
        tokio::select! {
            message = source.next() => match message {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                    let _ = gone_tx.send(true);
                    break;
                }
                Some(Ok(message)) => {
                    let Some((channel, data)) = codec.decode(&message) else { continue };
                    // Only data channels carry the client's bytes.
                    let input = (channel % 2 == 0).then(|| inputs.get(usize::from(channel / 2))).flatten();
                    if let Some(input) = input {
                        if !data.is_empty() {
                            let _ = input.send(data).await;
                        }
                    }
                }
            },
            done = forwards.join_next() => {
                if done.is_none() {
                    break;
                }
            }
        }
    }
    drop(inputs);
    while forwards.join_next().await.is_some() {}
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spdy::testing::{headers, Client};

    #[test]
    fn streams_are_checked_as_upstream_checks_them() {
        let ok = headers(&[("streamtype", "data"), ("port", "8080"), ("requestid", "0")]);
        assert_eq!(check_stream(&ok), Ok(()));
        assert_eq!(
            check_stream(&headers(&[("streamtype", "data")])).unwrap_err(),
            r#""port" header is required"#
        );
        assert_eq!(
            check_stream(&headers(&[("port", "x"), ("streamtype", "data")])).unwrap_err(),
            r#"unable to parse "x" as a port: strconv.ParseUint: parsing "x": invalid syntax"#
        );
        assert_eq!(
            check_stream(&headers(&[("port", "0"), ("streamtype", "data")])).unwrap_err(),
            r#"port "0" must be > 0"#
        );
        assert_eq!(
            check_stream(&headers(&[("port", "80")])).unwrap_err(),
            r#""streamtype" header is required"#
        );
        assert_eq!(
            check_stream(&headers(&[("port", "80"), ("streamtype", "stdin")])).unwrap_err(),
            r#"invalid stream type "stdin""#
        );
    }

    #[test]
    fn channel_ports_come_from_the_query() {
        assert_eq!(query_ports(Some("port=80&port=8080,9090")), Ok(vec![80, 8080, 9090]));
        assert_eq!(query_ports(None).unwrap_err(), r#"query parameter "port" is required"#);
        assert_eq!(
            query_ports(Some("port=")).unwrap_err(),
            r#"query parameter "port" cannot be empty"#
        );
        assert!(query_ports(Some("port=70000")).unwrap_err().contains("value out of range"));
        assert_eq!(query_ports(Some("port=0")).unwrap_err(), r#"port "0" must be > 0"#);
    }

    /// kubectl's side of one forwarded connection to `target`, in SPDY frames.
    fn connect(target: Target) -> Client {
        Client::connect(|io| serve_spdy(io, target)).0
    }

    /// Opens stream `id` with these headers; the kubelet must reply to it.
    async fn open_stream(kubectl: &mut Client, id: u32, pairs: &[(&str, &str)]) {
        kubectl.open(id, pairs).await;
        let reply = kubectl.next().await;
        assert!(
            matches!(reply, spdy::Frame::SynReply { stream_id, .. } if stream_id == id),
            "{reply:?}"
        );
    }

    /// Opens the error and data streams of request `request` to `port`, as client-go does.
    async fn open_pair(kubectl: &mut Client, first_id: u32, request: u32, port: u16) {
        let (port, request) = (port.to_string(), request.to_string());
        for (offset, kind) in [(0, "error"), (2, "data")] {
            let pairs = [("streamtype", kind), ("port", &port), ("requestid", &request)];
            open_stream(kubectl, first_id + offset, &pairs).await;
        }
        // kubectl closes its side of the error stream at once.
        kubectl
            .send(spdy::Frame::Data { stream_id: first_id, fin: true, data: Bytes::new() })
            .await;
    }

    /// Everything on both streams until both are finished: (data, error text).
    async fn collect(kubectl: &mut Client, error_id: u32, data_id: u32) -> (Vec<u8>, String) {
        let (mut data, mut error) = (Vec::new(), Vec::new());
        let (mut data_done, mut error_done) = (false, false);
        while !(data_done && error_done) {
            match kubectl.next().await {
                spdy::Frame::Data { stream_id, fin, data: bytes } if stream_id == data_id => {
                    data.extend_from_slice(&bytes);
                    data_done |= fin;
                }
                spdy::Frame::Data { stream_id, fin, data: bytes } if stream_id == error_id => {
                    error.extend_from_slice(&bytes);
                    error_done |= fin;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        (data, String::from_utf8(error).unwrap())
    }

    /// A "pod" that is this machine's loopback.
    fn target() -> Target {
        let dial: Dialer = Arc::new(|_sandbox, port| {
            async move {
                TcpStream::connect(("127.0.0.1", port))
                    .await
                    .map_err(|e| format!("dial tcp4 127.0.0.1:{port}: {e}"))
            }
            .boxed()
        });
        Target { dial, sandbox_id: "sandbox-1".into() }
    }

    #[tokio::test]
    async fn a_forwarded_connection_carries_a_request_and_its_answer() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        // An echo server that answers in upper case and closes when the client is done.
        tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut got = Vec::new();
            conn.read_to_end(&mut got).await.unwrap();
            conn.write_all(&got.to_ascii_uppercase()).await.unwrap();
        });
        let mut kubectl = connect(target());
        open_pair(&mut kubectl, 1, 0, port).await;
        kubectl.send(spdy::Frame::Data { stream_id: 3, fin: false, data: "hello ".into() }).await;
        kubectl.send(spdy::Frame::Data { stream_id: 3, fin: true, data: "pod".into() }).await;
        let (data, error) = collect(&mut kubectl, 1, 3).await;
        assert_eq!(data, b"HELLO POD");
        assert_eq!(error, "");
    }

    #[tokio::test]
    async fn a_closed_port_is_reported_on_the_error_stream_and_the_connection_goes_on() {
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let open = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            conn.write_all(b"still here").await.unwrap();
        });
        let mut kubectl = connect(target());
        open_pair(&mut kubectl, 1, 0, closed).await;
        let (data, error) = collect(&mut kubectl, 1, 3).await;
        assert!(data.is_empty());
        assert!(
            error.starts_with(&format!("error forwarding port {closed} to pod sandbox-1, uid : ")),
            "{error}"
        );
        open_pair(&mut kubectl, 5, 1, open).await;
        let (data, error) = collect(&mut kubectl, 5, 7).await;
        assert_eq!((data.as_slice(), error.as_str()), (&b"still here"[..], ""));
    }

    #[tokio::test]
    async fn pairs_without_request_ids_and_duplicate_streams() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            conn.write_all(b"old client").await.unwrap();
        });
        let mut kubectl = connect(target());
        // An old client: no requestid, error stream then data stream.
        let port = port.to_string();
        for (id, kind) in [(1, "error"), (3, "data")] {
            open_stream(&mut kubectl, id, &[("streamtype", kind), ("port", &port)]).await;
        }
        let (data, _) = collect(&mut kubectl, 1, 3).await;
        assert_eq!(data, b"old client");

        // Two error streams for one request: the second is reset, the first told why.
        for id in [5, 7] {
            open_stream(
                &mut kubectl,
                id,
                &[("streamtype", "error"), ("port", "1"), ("requestid", "9")],
            )
            .await;
        }
        let mut seen = Vec::new();
        for _ in 0..2 {
            seen.push(kubectl.next().await);
        }
        assert!(seen.contains(&spdy::Frame::Data {
            stream_id: 5,
            fin: false,
            data: "error processing stream for request 9: error stream already assigned".into()
        }));
        assert!(seen.contains(&spdy::Frame::RstStream {
            stream_id: 7,
            status: spdy::status::PROTOCOL_ERROR
        }));
    }

    #[tokio::test]
    async fn the_pod_s_bytes_reach_a_channel() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4];
            conn.read_exact(&mut buf).await.unwrap();
            conn.write_all(&buf).await.unwrap();
        });
        let conn = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (in_tx, in_rx) = mpsc::channel(4);
        let (out_tx, mut out_rx) = mpsc::channel(4);
        let (_gone_tx, gone) = watch::channel(false);
        in_tx.send(Bytes::from_static(b"ping")).await.unwrap();
        let pumping = tokio::spawn(pump(conn, in_rx, Out::Channel(4, out_tx), gone));
        assert_eq!(out_rx.recv().await, Some((4, Bytes::from_static(b"ping"))));
        drop(in_tx);
        pumping.await.unwrap().unwrap();
    }
}
