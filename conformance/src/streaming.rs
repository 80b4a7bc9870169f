//! A command that keeps running while a test talks to it (`kubectl logs -f`, `attach`,
//! `port-forward`, `debug -i`): its stdout read line by line on a thread as it comes, its
//! stderr collected on another, its stdin written when the test has something to say (and
//! kept open meanwhile), waited on with a deadline, and killed when dropped (also when the
//! test fails).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A running command and the stdout lines it has printed so far.
pub struct Streaming {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    stderr: Arc<Mutex<String>>,
}

impl Streaming {
    /// Starts `command` (typically [`crate::cluster::RkubeServer::kubectl_command`] with its
    /// arguments) with no stdin.
    pub fn start(command: &mut Command) -> Streaming {
        Self::spawn(command.stdin(Stdio::null()))
    }

    /// Starts `command` with its stdin a pipe the test writes with [`Streaming::send`] and
    /// closes with [`Streaming::close_stdin`]; it stays open until then.
    pub fn start_interactive(command: &mut Command) -> Streaming {
        Self::spawn(command.stdin(Stdio::piped()))
    }

    fn spawn(command: &mut Command) -> Streaming {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", command.get_program()));
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let collected = Arc::new(Mutex::new(String::new()));
        let sink = collected.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut text = sink.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
        let stdin = child.stdin.take();
        Streaming { child, stdin, lines, seen: Vec::new(), stderr: collected }
    }

    /// Writes `text` to its stdin (see [`Streaming::start_interactive`]).
    pub fn send(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("started with start_interactive, stdin open");
        stdin.write_all(text.as_bytes()).expect("write to the command's stdin");
        stdin.flush().expect("flush the command's stdin");
    }

    /// Closes its stdin: the command reads the end of its input.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The stdout lines read so far (by [`Streaming::wait_for_line`]).
    pub fn seen(&self) -> &[String] {
        &self.seen
    }

    /// Its stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits (at most `timeout`) for a stdout line that `check` accepts, and returns the
    /// first such line. Fails the test when the time is up or stdout ends first.
    pub fn wait_for_line(&mut self, check: impl Fn(&str) -> bool, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(line) = self.seen.iter().find(|l| check(l)) {
                return line.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "no such line within {timeout:?}; saw {:?}\n{}",
                self.seen,
                self.stderr()
            );
            match self.lines.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(line) => self.seen.push(line),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    panic!("the command ended early; saw {:?}\n{}", self.seen, self.stderr())
                }
            }
        }
    }

    /// Whether it has not exited yet.
    pub fn still_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits (at most `timeout`) for it to exit on its own.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }

    /// Waits (at most `timeout`) until its stderr contains `text`; returns the stderr then
    /// (also when the time ran out).
    pub fn wait_stderr(&self, text: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let stderr = self.stderr();
            if stderr.contains(text) || Instant::now() > deadline {
                return stderr;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A WebSocket to the API server, as its admin user (the kubeconfig's client certificate):
/// the upgrade of one path with the subprotocols offered, then messages both ways, the
/// client's masked as RFC 6455 wants. For the channel protocols of exec, attach and
/// port-forward, seen as client libraries speak them.
pub struct WebSocketClient {
    conn: openssl::ssl::SslStream<std::net::TcpStream>,
    /// The status code of the upgrade's answer.
    pub status: u16,
    /// The answer's head (status line and headers).
    pub head: String,
}

/// WebSocket opcodes.
pub const TEXT: u8 = 1;
pub const BINARY: u8 = 2;
pub const CLOSE: u8 = 8;

impl WebSocketClient {
    /// Asks to upgrade `GET path` with `Sec-WebSocket-Protocol: protocols`; reads are given
    /// up after 30 s.
    pub fn connect(
        server: &crate::cluster::RkubeServer,
        path: &str,
        protocols: &str,
    ) -> WebSocketClient {
        let mut conn = api_connection(server);
        write!(
            conn,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             Sec-WebSocket-Protocol: {protocols}\r\n\r\n"
        )
        .expect("send the upgrade");
        let (status, head) = read_head(&mut conn);
        WebSocketClient { conn, status, head }
    }

    /// The subprotocol the server chose.
    pub fn protocol(&self) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("sec-websocket-protocol").then(|| value.trim().to_string())
        })
    }

    /// Sends one message (`TEXT` or `BINARY`).
    pub fn send(&mut self, opcode: u8, payload: &[u8]) {
        let mask = [0x5a, 0x17, 0xc3, 0x08];
        let mut frame = vec![0x80 | opcode];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n <= usize::from(u16::MAX) => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.conn.write_all(&frame).expect("send a WebSocket message");
    }

    /// The next message from the server: (opcode, payload).
    pub fn read(&mut self) -> (u8, Vec<u8>) {
        use std::io::Read;
        let mut head = [0u8; 2];
        self.conn.read_exact(&mut head).expect("a WebSocket frame");
        let len = match head[1] & 0x7f {
            126 => {
                let mut n = [0u8; 2];
                self.conn.read_exact(&mut n).unwrap();
                u64::from(u16::from_be_bytes(n))
            }
            127 => {
                let mut n = [0u8; 8];
                self.conn.read_exact(&mut n).unwrap();
                u64::from_be_bytes(n)
            }
            n => u64::from(n),
        };
        let mut payload = vec![0u8; len as usize];
        self.conn.read_exact(&mut payload).unwrap();
        (head[0] & 0x0f, payload)
    }

    /// Every message until the server closes (at most 1000), as (opcode, payload).
    pub fn read_to_close(&mut self) -> Vec<(u8, Vec<u8>)> {
        let mut messages = Vec::new();
        for _ in 0..1000 {
            let (opcode, payload) = self.read();
            if opcode == CLOSE {
                return messages;
            }
            messages.push((opcode, payload));
        }
        panic!("no close after 1000 messages");
    }
}

/// A TLS connection to the API server as its admin user (the kubeconfig's client
/// certificate); reads are given up after 30 s.
pub fn api_connection(
    server: &crate::cluster::RkubeServer,
) -> openssl::ssl::SslStream<std::net::TcpStream> {
    use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
    let field = |path: &str| {
        let text = server.ok(&["config", "view", "--raw", "-o", &format!("jsonpath={path}")]);
        openssl::base64::decode_block(text.trim()).expect("base64 in the kubeconfig")
    };
    let cert = openssl::x509::X509::from_pem(&field("{.users[0].user.client-certificate-data}"))
        .expect("client certificate");
    let key = openssl::pkey::PKey::private_key_from_pem(&field("{.users[0].user.client-key-data}"))
        .expect("client key");
    let mut builder = SslConnector::builder(SslMethod::tls_client()).unwrap();
    builder.set_certificate(&cert).unwrap();
    builder.set_private_key(&key).unwrap();
    // The server is the test's own, on loopback.
    builder.set_verify(SslVerifyMode::NONE);
    let tcp = std::net::TcpStream::connect(("127.0.0.1", server.port))
        .expect("connect to the API server");
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut config = builder.build().configure().unwrap();
    config.set_verify_hostname(false);
    config.connect("127.0.0.1", tcp).expect("TLS to the API server")
}

/// Reads an HTTP response head: the status code and the whole head.
pub fn read_head(conn: &mut impl std::io::Read) -> (u16, String) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert!(head.len() < 64 * 1024, "no end of the response head");
        conn.read_exact(&mut byte).expect("a response head");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, head)
}

/// One request to the API server on a connection of its own (`Connection: close`): the
/// status, the head and the body (read to the end).
pub fn api_request(
    server: &crate::cluster::RkubeServer,
    method: &str,
    path: &str,
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    use std::io::Read;
    let mut conn = api_connection(server);
    write!(
        conn,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    )
    .expect("send the request");
    conn.write_all(body).expect("send the body");
    let (status, head) = read_head(&mut conn);
    let mut rest = Vec::new();
    let _ = conn.read_to_end(&mut rest);
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    (status, head, if chunked { dechunk(&rest) } else { rest })
}

/// A chunked body's data.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[..end]).unwrap_or("0").split(';').next().unwrap_or("0");
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || raw.len() < end + 2 + size {
            break;
        }
        out.extend_from_slice(&raw[end + 2..end + 2 + size]);
        raw = &raw[(end + 4 + size).min(raw.len())..];
    }
    out
}
