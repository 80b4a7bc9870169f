//! One exec or attach session, whatever carries it: the command started on the runtime, the
//! client's stdin and terminal resizes fed to it, its output sent back, and how it ended
//! reported. A transport ([`super::websocket`], [`super::spdy`]) turns its wire into
//! [`ClientEvent`]s and implements [`Output`]; [`run`] does the rest.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::{Protocol, StreamOptions, Target};
use crate::runtime::Runtime;

/// A terminal size, as clients send it (`remotecommand.TerminalSize`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub struct TerminalSize {
    #[serde(rename = "Width")]
    pub width: u16,
    #[serde(rename = "Height")]
    pub height: u16,
}

/// What the client sends, once its transport has decoded it. The end of the events is the
/// client going away.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientEvent {
    /// Bytes for the process's stdin.
    Stdin(Bytes),
    /// The client sends no more stdin: the process reads its end.
    StdinEnd,
    Resize(TerminalSize),
}

/// The process's output streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pipe {
    Stdout,
    Stderr,
}

/// The client went away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone;

/// Where a session's output goes: the transport's side of it.
#[async_trait]
pub trait Output: Send {
    /// Sends a chunk of output on one of the process's streams (with a TTY, always stdout).
    async fn send(&mut self, pipe: Pipe, data: Bytes) -> Result<(), Gone>;
    /// Ends the session: reports the outcome as the protocol does, and closes the streams.
    async fn finish(&mut self, outcome: &Outcome);
}

/// How a session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// The command exited with a non-zero code.
    ExitCode {
        command: Vec<String>,
        code: i64,
    },
    /// The message of an internal error.
    Internal(String),
}

impl Outcome {
    /// The `metav1.Status` upstream's kubelet writes on the error stream (v4 and later).
    pub fn status(&self) -> Value {
        match self {
            Outcome::Success => json!({"metadata": {}, "status": "Success"}),
            Outcome::ExitCode { command, code } => json!({
                "metadata": {},
                "status": "Failure",
                // The runtime's error as containerd words it, inside the kubelet's.
                "message": format!(
                    "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
                    command.join(" ")
                ),
                "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
            }),
            Outcome::Internal(message) => json!({
                "metadata": {},
                "status": "Failure",
                "message": format!("Internal error occurred: {message}"),
                "reason": "InternalError",
                "details": {"causes": [{"message": message}]},
                "code": 500,
            }),
        }
    }

    /// What goes on the error stream: the status (v4+), or a failure's message alone (v1 to
    /// v3, where success writes nothing).
    pub fn error_stream(&self, protocol: Protocol) -> Option<Vec<u8>> {
        if protocol >= Protocol::V4 {
            return Some(self.status().to_string().into_bytes());
        }
        self.status()["message"].as_str().map(|m| m.as_bytes().to_vec())
    }
}

/// How long the client has, after the session's end was sent, to go away.
const CLIENT_CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs one session: starts the command (or attaches), copies until its output ends or the
/// client goes, and reports the outcome (unless the client is gone).
pub async fn run(
    runtime: Arc<dyn Runtime>,
    target: Target,
    options: StreamOptions,
    mut output: impl Output,
    events: BoxStream<'static, ClientEvent>,
) {
    let started = match &target {
        Target::Exec { container_id, command } => runtime
            .exec(container_id, command.clone(), options.tty, options.stdin)
            .await
            .map_err(|e| format!("error executing command in container: {e}")),
        Target::Attach { container_id } => runtime
            .attach(container_id, options.stdin)
            .await
            .map_err(|e| format!("error attaching to container: {e}")),
    };
    let session = match started {
        Ok(session) => session,
        Err(e) => {
            output.finish(&Outcome::Internal(e)).await;
            return;
        }
    };
    let (gone_tx, mut client_gone) = tokio::sync::oneshot::channel::<()>();
    let resize = match &target {
        Target::Exec { .. } => Resize::Exec(session.id.clone()),
        Target::Attach { container_id } => Resize::Container(container_id.clone()),
    };
    let mut feeder =
        tokio::spawn(feed(events, session.input, options, runtime.clone(), resize, gone_tx));
    let mut process_output = session.output;
    let mut gone = false;
    loop {
        tokio::select! {
            chunk = process_output.next() => match chunk {
                Some(Ok((stream, bytes))) => {
                    // The runtime's stream numbers: 1 stdout, 2 stderr.
                    let pipe = if stream == 2 { Pipe::Stderr } else { Pipe::Stdout };
                    let wanted = match pipe {
                        Pipe::Stderr => options.stderr,
                        Pipe::Stdout => options.stdout,
                    };
                    if !wanted || bytes.is_empty() {
                        continue;
                    }
                    let pipe = if options.tty { Pipe::Stdout } else { pipe };
                    if output.send(pipe, bytes).await.is_err() {
                        gone = true;
                        break;
                    }
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "exec output ended");
                    break;
                }
                None => break,
            },
            _ = &mut client_gone => {
                gone = true;
                break;
            }
        }
    }
    if !gone {
        let outcome = match &target {
            Target::Exec { command, .. } => {
                exit_outcome(runtime.as_ref(), &session.id, command).await
            }
            Target::Attach { .. } => Outcome::Success,
        };
        output.finish(&outcome).await;
    }
    drop(output);
    // The client answers the end by going; then the connection can go.
    if tokio::time::timeout(CLIENT_CLOSE_TIMEOUT, &mut feeder).await.is_err() {
        feeder.abort();
    }
}

/// What a resize resizes.
enum Resize {
    Exec(String),
    Container(String),
}

/// Feeds the client's events to the process until the client goes: stdin (closed at the
/// client's end of it), resizes to the runtime. Says when the client is gone.
async fn feed(
    mut events: BoxStream<'static, ClientEvent>,
    mut stdin: Pin<Box<dyn AsyncWrite + Send>>,
    options: StreamOptions,
    runtime: Arc<dyn Runtime>,
    resize: Resize,
    gone: tokio::sync::oneshot::Sender<()>,
) {
    let mut stdin_open = options.stdin;
    while let Some(event) = events.next().await {
        match event {
            // A process that stopped reading its stdin gets no more.
            ClientEvent::Stdin(data) if stdin_open => {
                if write_stdin(&mut stdin, &data).await.is_err() {
                    stdin_open = false;
                }
            }
            ClientEvent::StdinEnd if stdin_open => {
                stdin_open = false;
                let _ = stdin.shutdown().await;
            }
            ClientEvent::Resize(TerminalSize { width, height }) => {
                let resized = match &resize {
                    Resize::Exec(id) => runtime.resize_exec(id, width, height).await,
                    Resize::Container(id) => runtime.resize_container(id, width, height).await,
                };
                if let Err(e) = resized {
                    tracing::debug!(error = %e, "resize");
                }
            }
            ClientEvent::Stdin(_) | ClientEvent::StdinEnd => {}
        }
    }
    let _ = gone.send(());
}

async fn write_stdin(
    stdin: &mut Pin<Box<dyn AsyncWrite + Send>>,
    data: &[u8],
) -> std::io::Result<()> {
    stdin.write_all(data).await?;
    stdin.flush().await
}

/// The outcome of a finished exec: its exit code, once the runtime has it.
async fn exit_outcome(runtime: &dyn Runtime, exec_id: &str, command: &[String]) -> Outcome {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match runtime.exec_exit_code(exec_id).await {
            Ok(Some(0)) => return Outcome::Success,
            Ok(Some(code)) => return Outcome::ExitCode { command: command.to_vec(), code },
            Ok(None) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(None) => {
                return Outcome::Internal(
                    "error executing command in container: the command's exit code did not \
                     become known"
                        .into(),
                )
            }
            Err(e) => {
                return Outcome::Internal(format!("error executing command in container: {e}"))
            }
        }
    }
}

/// A terminal size from one JSON document, as the WebSocket resize channel carries them;
/// `None` for anything else.
pub fn parse_size(json: &[u8]) -> Option<TerminalSize> {
    serde_json::from_slice(json).ok()
}

/// Terminal sizes from a byte stream of JSON documents one after another (the SPDY resize
/// stream, written by a JSON encoder): every complete one in `buf` is taken off its front;
/// a partial one stays for the next chunk. A document that is not a size is skipped.
pub fn take_sizes(buf: &mut Vec<u8>) -> Vec<TerminalSize> {
    let mut sizes = Vec::new();
    let mut documents = serde_json::Deserializer::from_slice(buf).into_iter::<Value>();
    let mut consumed = 0;
    loop {
        match documents.next() {
            Some(Ok(value)) => {
                consumed = documents.byte_offset();
                if let Ok(size) = serde_json::from_value(value) {
                    sizes.push(size);
                }
            }
            // Not yet whole: wait for more.
            Some(Err(e)) if e.is_eof() => break,
            // Garbage: nothing after it can be read reliably.
            Some(Err(_)) => {
                consumed = buf.len();
                break;
            }
            None => {
                consumed = buf.len();
                break;
            }
        }
    }
    // The separator before a partial document goes too.
    while buf.get(consumed).is_some_and(u8::is_ascii_whitespace) {
        consumed += 1;
    }
    buf.drain(..consumed);
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_upstreams() {
        assert_eq!(Outcome::Success.status().to_string(), r#"{"metadata":{},"status":"Success"}"#);
        let failed = Outcome::ExitCode { command: vec!["false".into()], code: 1 };
        assert_eq!(
            failed.status(),
            json!({
                "metadata": {},
                "status": "Failure",
                "message": "command terminated with non-zero exit code: error executing command [false], exit code 1",
                "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": "1"}]}
            })
        );
        // Before v4 only a failure's message is written.
        assert_eq!(Outcome::Success.error_stream(Protocol::V3), None);
        let text = failed.error_stream(Protocol::V2).unwrap();
        assert!(String::from_utf8(text).unwrap().starts_with("command terminated"));
        let internal = Outcome::Internal("boom".into()).status();
        assert_eq!(internal["code"], 500);
        assert_eq!(internal["message"], "Internal error occurred: boom");
    }

    #[test]
    fn sizes_are_read_across_chunks() {
        let size = |width, height| TerminalSize { width, height };
        assert_eq!(parse_size(br#"{"Width":80,"Height":24}"#), Some(size(80, 24)));
        assert_eq!(parse_size(br#"{"Width":80}"#), None);
        assert_eq!(parse_size(br#"{"Width":70000,"Height":1}"#), None);

        let mut buf = br#"{"Width":80,"Height":24}
{"Width":100,"#
            .to_vec();
        assert_eq!(take_sizes(&mut buf), [size(80, 24)]);
        assert_eq!(buf, br#"{"Width":100,"#);
        buf.extend_from_slice(b"\"Height\":30}\n{\"other\":1}\n");
        assert_eq!(take_sizes(&mut buf), [size(100, 30)]);
        assert!(buf.is_empty(), "{:?}", String::from_utf8_lossy(&buf));
        let mut garbage = b"not json {".to_vec();
        assert!(take_sizes(&mut garbage).is_empty());
        assert!(garbage.is_empty());
    }
}
