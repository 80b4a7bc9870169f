//! Exec and attach over SPDY/3.1: how kubectl 1.29 and older speak them (and later ones
//! when WebSockets fail). The request is a `POST` with `Upgrade: SPDY/3.1` and the
//! `X-Stream-Protocol-Version`s the client speaks; the kubelet answers `101` with the one it
//! chose ([`negotiate`]), and runs a SPDY session ([`crate::spdy`]) on the connection.
//!
//! The client then opens one stream per standard stream it asked for, each named by its
//! `streamtype` header: `error` always, `stdin`, `stdout` and `stderr` as the query asks,
//! and `resize` with a TTY from v3 on. Once all have arrived (within
//! [`STREAM_CREATION_TIMEOUT`], as upstream's stream creation timeout) the command runs:
//! its output goes as data frames on `stdout` and `stderr`, the client's `stdin` data (its
//! `FIN` the end of input) to the process, and terminal sizes come on `resize` as JSON
//! documents one after another. At the end the output streams are finished, the outcome
//! written on `error` (a `metav1.Status` in v4; before, a failure's message only), and the
//! client closes the connection.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::response::Response;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use http::HeaderMap;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use super::session::{self, ClientEvent, Gone, Outcome, Output, Pipe};
use super::{Protocol, StreamOptions, Target};
use crate::httpstream;
use crate::runtime::Runtime;
use crate::spdy::{self, NewStream, StreamWriter};

/// The protocols served over SPDY, most preferred first (upstream's
/// `SupportedStreamingProtocols`).
pub const PROTOCOLS: [Protocol; 4] = [Protocol::V4, Protocol::V3, Protocol::V2, Protocol::V1];

/// How long the client may take to open its streams.
pub const STREAM_CREATION_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the client has, after the outcome was sent, to close the connection.
const CONNECTION_CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

/// The `streamtype` header values.
mod stream_type {
    pub const ERROR: &str = "error";
    pub const STDIN: &str = "stdin";
    pub const STDOUT: &str = "stdout";
    pub const STDERR: &str = "stderr";
    pub const RESIZE: &str = "resize";
}

/// The protocol of a SPDY upgrade request, or the error response (upstream's handshake).
pub fn negotiate(headers: &HeaderMap) -> Result<Protocol, Box<Response>> {
    let names = PROTOCOLS.map(Protocol::name);
    let chosen = httpstream::handshake(headers, &names)?;
    Ok(PROTOCOLS.into_iter().find(|p| p.name() == chosen).expect("one of ours"))
}

/// The stream types a session waits for.
fn expected(options: StreamOptions, protocol: Protocol) -> Vec<&'static str> {
    let mut types = vec![stream_type::ERROR];
    let wanted = [
        (options.stdin, stream_type::STDIN),
        (options.stdout, stream_type::STDOUT),
        (options.stderr, stream_type::STDERR),
        (options.tty && protocol >= Protocol::V3, stream_type::RESIZE),
    ];
    types.extend(wanted.into_iter().filter(|(on, _)| *on).map(|(_, t)| t));
    types
}

/// One session on an upgraded connection.
pub async fn serve<IO>(
    io: IO,
    protocol: Protocol,
    runtime: Arc<dyn Runtime>,
    target: Target,
    options: StreamOptions,
) where
    IO: AsyncRead + AsyncWrite + Send + 'static,
{
    let (streams_tx, mut new_streams) = mpsc::channel(8);
    // Every stream is taken; the ones not wanted are let go below (as upstream, which only
    // logs them).
    let mut connection = tokio::spawn(spdy::serve(io, |_| Ok(()), streams_tx));
    let gathered =
        wait_for_streams(&mut new_streams, &expected(options, protocol), STREAM_CREATION_TIMEOUT)
            .await;
    // Streams opened later are not used; taking them keeps the connection reading.
    tokio::spawn(async move {
        while let Some(stream) = new_streams.recv().await {
            let kind = spdy::header(&stream.headers, "streamtype").unwrap_or("").to_string();
            tracing::debug!(stream_type = kind, "unexpected exec stream ignored");
        }
    });
    match gathered {
        Ok(streams) => {
            let (output, events) = streams.into_session(protocol);
            session::run(runtime, target, options, output, events).await;
            // The client closes the connection once it has read the outcome.
            if tokio::time::timeout(CONNECTION_CLOSE_TIMEOUT, &mut connection).await.is_ok() {
                return;
            }
        }
        Err(why) => tracing::warn!(why, "exec or attach over SPDY"),
    }
    connection.abort();
}

/// The streams of a session, by type.
#[derive(Default)]
struct Streams {
    error: Option<NewStream>,
    stdin: Option<NewStream>,
    stdout: Option<NewStream>,
    stderr: Option<NewStream>,
    resize: Option<NewStream>,
}

impl Streams {
    fn slot(&mut self, stream_type: &str) -> Option<&mut Option<NewStream>> {
        Some(match stream_type {
            stream_type::ERROR => &mut self.error,
            stream_type::STDIN => &mut self.stdin,
            stream_type::STDOUT => &mut self.stdout,
            stream_type::STDERR => &mut self.stderr,
            stream_type::RESIZE => &mut self.resize,
            _ => return None,
        })
    }

    /// The session's output, and the client's events: stdin and resizes, ending when the
    /// client resets the error stream or the connection ends.
    fn into_session(self, protocol: Protocol) -> (SpdyOutput, BoxStream<'static, ClientEvent>) {
        let Streams { error, stdin, stdout, stderr, resize } = self;
        let error = error.expect("the error stream is always waited for");
        let mut reset = error.reset;
        let gone = async move {
            let _ = reset.wait_for(|reset| *reset).await;
        };
        let mut inputs: Vec<BoxStream<'static, ClientEvent>> = Vec::new();
        let stdin = stdin.map(|stream| {
            inputs.push(stdin_events(stream.data));
            stream.writer
        });
        if let Some(stream) = resize {
            inputs.push(resize_events(stream.data));
        }
        // Inputs that end are not the client going: that is the error stream's reset.
        let events = futures::stream::select_all(inputs)
            .chain(futures::stream::pending())
            .take_until(gone)
            .boxed();
        let output = SpdyOutput {
            protocol,
            error: error.writer,
            stdin,
            stdout: stdout.map(|s| s.writer),
            stderr: stderr.map(|s| s.writer),
        };
        (output, events)
    }
}

/// Waits until every stream type in `expected` has been opened (a second stream of a type,
/// or one not expected, is let go), for at most `timeout`.
async fn wait_for_streams(
    new_streams: &mut mpsc::Receiver<NewStream>,
    expected: &[&str],
    timeout: Duration,
) -> Result<Streams, String> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut streams = Streams::default();
    let mut missing = expected.len();
    while missing > 0 {
        let stream = match tokio::time::timeout_at(deadline, new_streams.recv()).await {
            Ok(Some(stream)) => stream,
            Ok(None) => return Err("the connection ended before its streams were created".into()),
            Err(_) => return Err("timed out waiting for client to create streams".into()),
        };
        let kind = spdy::header(&stream.headers, "streamtype").unwrap_or("").to_string();
        match streams.slot(&kind) {
            Some(slot) if expected.contains(&kind.as_str()) && slot.is_none() => {
                *slot = Some(stream);
                missing -= 1;
            }
            _ => tracing::debug!(stream_type = kind, "unexpected exec stream ignored"),
        }
    }
    Ok(streams)
}

/// The client's stdin stream: its data, then its end.
fn stdin_events(data: mpsc::Receiver<Bytes>) -> BoxStream<'static, ClientEvent> {
    futures::stream::unfold(data, |mut data| async move {
        data.recv().await.map(|chunk| (ClientEvent::Stdin(chunk), data))
    })
    .chain(futures::stream::once(async { ClientEvent::StdinEnd }))
    .boxed()
}

/// The client's resize stream: the sizes in it, however its frames cut them.
fn resize_events(data: mpsc::Receiver<Bytes>) -> BoxStream<'static, ClientEvent> {
    futures::stream::unfold((data, Vec::new()), |(mut data, mut buf)| async move {
        let chunk = data.recv().await?;
        buf.extend_from_slice(&chunk);
        let sizes = session::take_sizes(&mut buf);
        Some((futures::stream::iter(sizes.into_iter().map(ClientEvent::Resize)), (data, buf)))
    })
    .flatten()
    .boxed()
}

/// The session's output as data frames on the client's streams.
struct SpdyOutput {
    protocol: Protocol,
    error: StreamWriter,
    stdin: Option<StreamWriter>,
    stdout: Option<StreamWriter>,
    stderr: Option<StreamWriter>,
}

#[async_trait]
impl Output for SpdyOutput {
    async fn send(&mut self, pipe: Pipe, data: Bytes) -> Result<(), Gone> {
        let writer = match pipe {
            Pipe::Stdout => &self.stdout,
            Pipe::Stderr => &self.stderr,
        };
        match writer {
            Some(writer) => writer.write(data).await.map_err(|_| Gone),
            None => Ok(()),
        }
    }

    async fn finish(&mut self, outcome: &Outcome) {
        // The client reads its output to the end, then the error stream to its end.
        for writer in [&self.stdout, &self.stderr].into_iter().flatten() {
            let _ = writer.finish().await;
        }
        if let Some(message) = outcome.error_stream(self.protocol) {
            let _ = self.error.write(message.into()).await;
        }
        let _ = self.error.finish().await;
        if let Some(stdin) = &self.stdin {
            let _ = stdin.finish().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remotecommand::session::TerminalSize;
    use crate::spdy::testing::{self, Client};
    use crate::spdy::Frame;
    use http::HeaderValue;

    #[test]
    fn kubectl_s_offer_gets_v4_and_old_clients_what_they_speak() {
        let mut kubectl = HeaderMap::new();
        for v in ["v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"] {
            kubectl.append(httpstream::PROTOCOL_HEADER, HeaderValue::from_static(v));
        }
        assert_eq!(negotiate(&kubectl).unwrap(), Protocol::V4);
        let mut old = HeaderMap::new();
        old.insert(httpstream::PROTOCOL_HEADER, HeaderValue::from_static("v2.channel.k8s.io"));
        assert_eq!(negotiate(&old).unwrap(), Protocol::V2);
        // v5 is WebSocket-only; no protocol at all is upstream's 400.
        let mut v5 = HeaderMap::new();
        v5.insert(httpstream::PROTOCOL_HEADER, HeaderValue::from_static("v5.channel.k8s.io"));
        let refused = negotiate(&v5).unwrap_err();
        assert_eq!(refused.status(), http::StatusCode::FORBIDDEN);
        assert_eq!(
            refused.headers().get_all(httpstream::ACCEPTED_PROTOCOLS_HEADER).iter().count(),
            4
        );
        assert_eq!(negotiate(&HeaderMap::new()).unwrap_err().status(), 400);
    }

    #[test]
    fn the_streams_waited_for_follow_the_query_and_the_version() {
        let o = |stdin, stdout, stderr, tty| StreamOptions { stdin, stdout, stderr, tty };
        assert_eq!(
            expected(o(false, true, true, false), Protocol::V4),
            ["error", "stdout", "stderr"]
        );
        assert_eq!(
            expected(o(true, true, false, true), Protocol::V3),
            ["error", "stdin", "stdout", "resize"]
        );
        // v2 has no resize stream.
        assert_eq!(
            expected(o(true, true, false, true), Protocol::V2),
            ["error", "stdin", "stdout"]
        );
    }

    /// A SPDY session on an in-memory connection, with the client's side.
    fn connect() -> (Client, mpsc::Receiver<NewStream>) {
        let (client, streams, _session) = testing::session(|_| Ok(()));
        (client, streams)
    }

    #[tokio::test]
    async fn streams_are_gathered_and_carry_the_session_both_ways() {
        let (mut client, mut new_streams) = connect();
        // kubectl -it (v4): error, stdin, stdout, resize; a stray stream is let go.
        for (id, kind) in [(1, "error"), (3, "stdin"), (5, "bogus"), (7, "stdout"), (9, "resize")] {
            client.open(id, &[("streamtype", kind)]).await;
        }
        let options = StreamOptions { stdin: true, stdout: true, stderr: false, tty: true };
        let wanted = expected(options, Protocol::V4);
        let streams = wait_for_streams(&mut new_streams, &wanted, Duration::from_secs(5))
            .await
            .expect("all streams");
        let (mut output, mut events) = streams.into_session(Protocol::V4);
        for _ in 0..5 {
            assert!(matches!(client.next().await, Frame::SynReply { .. }));
        }

        // A size cut across two frames, stdin and its end.
        let size = "{\"Width\":120,\"Height\":40}\n";
        let (a, b) = size.split_at(10);
        client.send(Frame::Data { stream_id: 9, fin: false, data: a.to_string().into() }).await;
        client.send(Frame::Data { stream_id: 9, fin: false, data: b.to_string().into() }).await;
        client.send(Frame::Data { stream_id: 3, fin: true, data: "typed".into() }).await;
        let mut got = Vec::new();
        for _ in 0..3 {
            let event = tokio::time::timeout(Duration::from_secs(5), events.next()).await;
            got.push(event.unwrap().unwrap());
        }
        let resize = ClientEvent::Resize(TerminalSize { width: 120, height: 40 });
        assert!(got.contains(&resize), "{got:?}");
        let stdin_at = got.iter().position(|e| e == &ClientEvent::Stdin("typed".into())).unwrap();
        assert_eq!(got.get(stdin_at + 1), Some(&ClientEvent::StdinEnd), "{got:?}");

        // Output on stdout; at the end every stream is finished and v4's status written.
        output.send(Pipe::Stdout, "out".into()).await.unwrap();
        output.finish(&Outcome::ExitCode { command: vec!["false".into()], code: 3 }).await;
        let mut frames = Vec::new();
        for _ in 0..5 {
            frames.push(client.next().await);
        }
        let data = |id: u32, fin: bool, text: &str| Frame::Data {
            stream_id: id,
            fin,
            data: Bytes::copy_from_slice(text.as_bytes()),
        };
        assert_eq!(frames[0], data(7, false, "out"));
        assert_eq!(frames[1], data(7, true, ""));
        let Frame::Data { stream_id: 1, fin: false, data: status } = &frames[2] else {
            panic!("{frames:?}")
        };
        let status: serde_json::Value = serde_json::from_slice(status).unwrap();
        assert_eq!(status["reason"], "NonZeroExitCode");
        assert_eq!(status["details"]["causes"][0]["message"], "3");
        assert_eq!(frames[3], data(1, true, ""));
        assert_eq!(frames[4], data(3, true, ""));

        // The client goes: the events end.
        drop(client);
        let end = tokio::time::timeout(Duration::from_secs(5), events.next()).await.unwrap();
        assert_eq!(end, None);
    }

    #[tokio::test]
    async fn a_client_that_opens_too_few_streams_times_out() {
        let (mut client, mut new_streams) = connect();
        client.open(1, &[("streamtype", "error")]).await;
        let wanted = ["error", "stdout"];
        let waited = wait_for_streams(&mut new_streams, &wanted, Duration::from_millis(200)).await;
        assert_eq!(waited.err().unwrap(), "timed out waiting for client to create streams");
        drop(client);
        let waited = wait_for_streams(&mut new_streams, &wanted, Duration::from_secs(5)).await;
        assert!(waited.is_err());
    }

    /// A client that opened streams of these types (ids 1, 3, ...), and the session's ends.
    async fn opened(
        types: &[&str],
        protocol: Protocol,
    ) -> (Client, SpdyOutput, BoxStream<'static, ClientEvent>) {
        let (mut client, mut new_streams) = connect();
        for (i, kind) in types.iter().enumerate() {
            client.open(2 * i as u32 + 1, &[("streamtype", *kind)]).await;
        }
        let streams =
            wait_for_streams(&mut new_streams, types, Duration::from_secs(5)).await.unwrap();
        for _ in types {
            assert!(matches!(client.next().await, Frame::SynReply { .. }));
        }
        let (output, events) = streams.into_session(protocol);
        (client, output, events)
    }

    #[tokio::test]
    async fn before_v4_only_a_failure_s_message_is_written() {
        let (mut client, mut output, _events) = opened(&["error", "stdout"], Protocol::V3).await;
        output.finish(&Outcome::Success).await;
        assert_eq!(
            client.next().await,
            Frame::Data { stream_id: 3, fin: true, data: Bytes::new() }
        );
        assert_eq!(
            client.next().await,
            Frame::Data { stream_id: 1, fin: true, data: Bytes::new() }
        );

        let (mut client, mut output, _events) = opened(&["error"], Protocol::V2).await;
        output.finish(&Outcome::ExitCode { command: vec!["sh".into()], code: 2 }).await;
        let Frame::Data { stream_id: 1, data, .. } = client.next().await else { panic!() };
        assert!(String::from_utf8_lossy(&data).starts_with("command terminated with non-zero"));
    }
}
