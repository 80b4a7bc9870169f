//! What reaches a kubelet through the API server: `pods/log`, `pods/exec`, `pods/attach`,
//! `pods/portforward` and `nodes/proxy`, driven with stock kubectl against the real
//! `rkube server`. The kubelet is a fake one in this process: HTTPS on 127.0.0.1 with a
//! self-signed certificate, demanding a client certificate from the cluster CA, recording
//! every request it gets. A Node object points at it (InternalIP 127.0.0.1, its port as the
//! kubelet endpoint), and pods are bound to that node.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::Duration;

use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::PKey;
use openssl::ssl::{SslAcceptor, SslConnector, SslMethod, SslStream, SslVerifyMode};
use openssl::x509::extension::SubjectAlternativeName;
use openssl::x509::store::X509StoreBuilder;
use openssl::x509::{X509NameBuilder, X509};
use rkube_conformance::cluster::{wait_with_timeout, RkubeServer};

const NODE: &str = "fake-node";
/// The CN of the API server's kubelet-client certificate (certs crate, KUBELET_CLIENT_USER).
const KUBELET_CLIENT_CN: &str = "kube-apiserver-kubelet-client";
/// RFC 6455's example key and its accept value.
const WS_KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const WS_ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

/// One request as the fake kubelet got it.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    client_cn: String,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A kubelet stand-in: what it serves is described in [`respond`].
struct FakeKubelet {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Holds back the second line of the slow log until set.
    release: Arc<(Mutex<bool>, Condvar)>,
    stop: Arc<AtomicBool>,
}

impl FakeKubelet {
    /// Serves on a free loopback port, accepting only client certificates from `ca_pem`.
    fn start(ca_pem: &[u8]) -> FakeKubelet {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake kubelet");
        let port = listener.local_addr().unwrap().port();
        let acceptor = Arc::new(acceptor(ca_pem));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let release = Arc::new((Mutex::new(false), Condvar::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, r, st) = (seen.clone(), release.clone(), stop.clone());
        std::thread::spawn(move || {
            for tcp in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(tcp) = tcp else { continue };
                let (acceptor, s, r) = (acceptor.clone(), s.clone(), r.clone());
                std::thread::spawn(move || serve_connection(&acceptor, tcp, &s, &r));
            }
        });
        FakeKubelet { port, seen, release, stop }
    }

    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The last request whose path starts with `prefix`.
    fn last(&self, prefix: &str) -> Seen {
        self.requests().into_iter().rev().find(|r| r.path.starts_with(prefix)).unwrap_or_else(
            || panic!("no request for {prefix} reached the kubelet: {:#?}", self.requests()),
        )
    }

    fn released(&self) -> bool {
        *self.release.0.lock().unwrap()
    }

    fn release(&self) {
        *self.release.0.lock().unwrap() = true;
        self.release.1.notify_all();
    }
}

impl Drop for FakeKubelet {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.release();
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A self-signed serving certificate for 127.0.0.1, and client certificates required and
/// verified against the cluster CA.
fn acceptor(ca_pem: &[u8]) -> SslAcceptor {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
    let key = PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap();
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_nid(Nid::COMMONNAME, "fake-kubelet").unwrap();
    let name = name.build();
    let mut cert = X509::builder().unwrap();
    cert.set_version(2).unwrap();
    cert.set_serial_number(&BigNum::from_u32(1).unwrap().to_asn1_integer().unwrap()).unwrap();
    cert.set_subject_name(&name).unwrap();
    cert.set_issuer_name(&name).unwrap();
    cert.set_pubkey(&key).unwrap();
    cert.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
    cert.set_not_after(&Asn1Time::days_from_now(1).unwrap()).unwrap();
    let san = SubjectAlternativeName::new()
        .ip("127.0.0.1")
        .build(&cert.x509v3_context(None, None))
        .unwrap();
    cert.append_extension(san).unwrap();
    cert.sign(&key, MessageDigest::sha256()).unwrap();
    let cert = cert.build();

    let mut builder = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server()).unwrap();
    builder.set_private_key(&key).unwrap();
    builder.set_certificate(&cert).unwrap();
    let mut store = X509StoreBuilder::new().unwrap();
    for ca in X509::stack_from_pem(ca_pem).unwrap() {
        store.add_cert(ca).unwrap();
    }
    builder.set_verify_cert_store(store.build()).unwrap();
    builder.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
    builder.build()
}

fn serve_connection(
    acceptor: &SslAcceptor,
    tcp: TcpStream,
    seen: &Mutex<Vec<Seen>>,
    release: &(Mutex<bool>, Condvar),
) {
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(tls) = acceptor.accept(tcp) else {
        // No client certificate, or one the cluster CA did not sign: nothing is served.
        return;
    };
    let client_cn = tls
        .ssl()
        .peer_certificate()
        .and_then(|c| {
            c.subject_name()
                .entries_by_nid(Nid::COMMONNAME)
                .next()
                .map(|e| String::from_utf8_lossy(e.data().as_slice()).into_owned())
        })
        .unwrap_or_default();
    let mut conn = BufReader::new(tls);
    let mut line = String::new();
    if conn.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or("").to_string();
    let target = words.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if conn.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let body = if chunked { read_chunked(&mut conn) } else { read_exact(&mut conn, length) };
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (target.clone(), String::new()),
    };
    let request = Seen { method, path, query, headers, client_cn, body };
    seen.lock().unwrap().push(request.clone());
    respond(&request, &mut conn, release);
}

/// What the fake serves:
/// - `/containerLogs/{ns}/{pod}/{c}`: three lines (honouring `tailLines`); pod `slow` sends one
///   line, then the next only once released; pod `broken` answers 400 as a kubelet does for
///   a container that has not started.
/// - `/exec`, `/attach`, `/portForward`: a WebSocket upgrade. An exec whose first command is
///   not `echo-bytes` then speaks `v5.channel.k8s.io` as far as kubectl needs (a line on
///   stdout, a Success status, close); everything else echoes raw bytes.
/// - `/healthz`, `/`: a fixed body; any other path echoes the method, path, query and body.
fn respond(r: &Seen, conn: &mut BufReader<SslStream<TcpStream>>, release: &(Mutex<bool>, Condvar)) {
    let segments: Vec<&str> = r.path.trim_start_matches('/').split('/').collect();
    let params = query_pairs(&r.query);
    let param = |k: &str| params.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    match segments[0] {
        "containerLogs" => {
            let pod = segments.get(2).copied().unwrap_or("");
            match pod {
                "broken" => reply(
                    conn,
                    "400 Bad Request",
                    "container \"app\" in pod \"broken\" is waiting to start: ContainerCreating",
                ),
                "slow" => {
                    let w = conn.get_mut();
                    let _ = w.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                    );
                    let _ = write_chunk(w, b"slow line 1\n");
                    let (released, wake) = release;
                    let guard = released.lock().unwrap();
                    let _ =
                        wake.wait_timeout_while(guard, Duration::from_secs(30), |r| !*r).unwrap();
                    let _ = write_chunk(w, b"slow line 2\n");
                    let _ = w.write_all(b"0\r\n\r\n");
                    let _ = w.flush();
                }
                _ => {
                    let lines = ["line 1\n", "line 2\n", "line 3\n"];
                    let tail = param("tailLines")
                        .and_then(|t| t.parse::<usize>().ok())
                        .unwrap_or(lines.len());
                    reply(conn, "200 OK", &lines[lines.len() - tail.min(lines.len())..].concat());
                }
            }
        }
        "exec" | "attach" | "portForward" => {
            if !r.header("upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket")) {
                reply(conn, "400 Bad Request", "the fake kubelet speaks WebSocket only");
                return;
            }
            let offered: Vec<&str> = r
                .header("sec-websocket-protocol")
                .unwrap_or("")
                .split(',')
                .map(str::trim)
                .collect();
            let protocol = if offered.contains(&"v5.channel.k8s.io") {
                "v5.channel.k8s.io"
            } else {
                offered[0]
            };
            let accept = websocket_accept(r.header("sec-websocket-key").unwrap_or(""));
            let w = conn.get_mut();
            let _ = write!(
                w,
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: {protocol}\r\n\r\n"
            );
            let _ = w.flush();
            let commands: Vec<String> =
                params.iter().filter(|(k, _)| k == "command").map(|(_, v)| v.clone()).collect();
            if segments[0] == "exec" && commands.first().is_some_and(|c| c != "echo-bytes") {
                let container = segments.get(3).copied().unwrap_or("");
                let out = format!("fake exec in {container}: {}\n", commands.join(" "));
                let _ = w.write_all(&ws_frame(0x2, &[&[1u8][..], out.as_bytes()].concat()));
                let status = br#"{"metadata":{},"status":"Success"}"#;
                let _ = w.write_all(&ws_frame(0x2, &[&[3u8][..], &status[..]].concat()));
                let _ = w.write_all(&ws_frame(0x8, &[0x03, 0xe8]));
                let _ = w.flush();
                // Wait for the client to close (its close frame, then EOF), briefly.
                let _ = conn.get_ref().get_ref().set_read_timeout(Some(Duration::from_secs(5)));
                let mut sink = [0u8; 1024];
                while matches!(conn.read(&mut sink), Ok(n) if n > 0) {}
            } else {
                let mut buf = [0u8; 4096];
                loop {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            let w = conn.get_mut();
                            if w.write_all(&buf[..n]).and_then(|_| w.flush()).is_err() {
                                break;
                            }
                        }
                    }
                }
            }
        }
        "healthz" => reply(conn, "200 OK", "fake-kubelet healthz ok"),
        "" => reply(conn, "200 OK", "fake-kubelet root"),
        _ => {
            let text = format!(
                "{} {} query={} body={}",
                r.method,
                r.path,
                r.query,
                String::from_utf8_lossy(&r.body)
            );
            reply(conn, "200 OK", &text);
        }
    }
}

fn read_exact(conn: &mut impl Read, length: usize) -> Vec<u8> {
    let mut body = vec![0; length];
    let _ = conn.read_exact(&mut body);
    body
}

/// A chunked request body (the API server streams bodies it has not measured).
fn read_chunked(conn: &mut impl BufRead) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        if conn.read_line(&mut size).unwrap_or(0) == 0 {
            return body;
        }
        let size =
            usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16).unwrap_or(0);
        if size == 0 {
            let mut trailer = String::new();
            while conn.read_line(&mut trailer).unwrap_or(0) > 0 && !trailer.trim().is_empty() {
                trailer.clear();
            }
            return body;
        }
        body.extend(read_exact(conn, size));
        let mut crlf = [0u8; 2];
        let _ = conn.read_exact(&mut crlf);
    }
}

fn reply(conn: &mut BufReader<SslStream<TcpStream>>, status: &str, body: &str) {
    let w = conn.get_mut();
    let _ = write!(
        w,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = w.flush();
}

fn write_chunk(w: &mut impl Write, data: &[u8]) -> std::io::Result<()> {
    write!(w, "{:x}\r\n", data.len())?;
    w.write_all(data)?;
    w.write_all(b"\r\n")?;
    w.flush()
}

/// A server-to-client WebSocket frame (FIN, unmasked).
fn ws_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x80 | opcode];
    match payload.len() {
        n if n < 126 => frame.push(n as u8),
        n if n < 65536 => {
            frame.push(126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    frame.extend_from_slice(payload);
    frame
}

fn websocket_accept(key: &str) -> String {
    let digest =
        openssl::sha::sha1(format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes());
    openssl::base64::encode_block(&digest)
}

fn query_pairs(query: &str) -> Vec<(String, String)> {
    let decode = |s: &str| -> String {
        let bytes = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                    out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                    i += 2;
                }
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// A server, the fake kubelet, its Node (pointing at the fake), and pods bound to it.
struct Cluster {
    server: RkubeServer,
    kubelet: FakeKubelet,
}

impl Cluster {
    fn start() -> Cluster {
        let server = RkubeServer::start();
        let ca = std::fs::read(server.data_dir.path().join("pki/ca.crt")).expect("cluster CA");
        let kubelet = FakeKubelet::start(&ca);
        add_node(&server, NODE, kubelet.port);
        Cluster { server, kubelet }
    }

    fn pod(&self, name: &str, containers: &[&str], node: Option<&str>) {
        let containers: Vec<serde_json::Value> =
            containers.iter().map(|c| serde_json::json!({"name": c, "image": "busybox"})).collect();
        let mut pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": containers},
        });
        if let Some(node) = node {
            pod["spec"]["nodeName"] = node.into();
        }
        self.server.ok_stdin(&["create", "-f", "-"], &pod.to_string());
    }
}

/// A Node whose kubelet is on 127.0.0.1:`port` (status set through `nodes/status`).
fn add_node(s: &RkubeServer, name: &str, port: u16) {
    let node = serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}});
    s.ok_stdin(&["create", "-f", "-"], &node.to_string());
    let status = serde_json::json!({"status": {
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
    }});
    s.ok(&[
        "patch",
        "node",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);
}

#[test]
fn kubectl_logs_reaches_the_kubelet_with_its_options() {
    let c = Cluster::start();
    let s = &c.server;
    c.pod("web", &["app"], Some(NODE));

    assert_eq!(s.ok(&["logs", "web"]), "line 1\nline 2\nline 3\n");
    let seen = c.kubelet.last("/containerLogs/");
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("GET", "/containerLogs/default/web/app")
    );
    assert_eq!(seen.query, "");
    assert_eq!(seen.client_cn, KUBELET_CLIENT_CN, "the API server's kubelet-client certificate");

    assert_eq!(s.ok(&["logs", "web", "--tail=2"]), "line 2\nline 3\n");
    assert_eq!(c.kubelet.last("/containerLogs/").query, "tailLines=2");
    s.ok(&["logs", "web", "-c", "app", "--timestamps", "--limit-bytes=100", "--since=1h"]);
    assert_eq!(
        c.kubelet.last("/containerLogs/").query,
        "limitBytes=100&sinceSeconds=3600&timestamps=true"
    );

    // Upstream's validation, before anything reaches the kubelet.
    let before = c.kubelet.requests().len();
    let err = s.fails(&["get", "--raw", "/api/v1/namespaces/default/pods/web/log?tailLines=-1"]);
    assert!(
        err.contains(
            "PodLogOptions \"web\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0"
        ),
        "{err}"
    );
    let err = s.fails(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/web/log?sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z",
    ]);
    assert!(err.contains("at most one of `sinceTime` or `sinceSeconds` may be specified"), "{err}");
    assert_eq!(c.kubelet.requests().len(), before);
}

#[test]
fn kubectl_logs_follow_streams_lines_as_the_kubelet_writes_them() {
    let c = Cluster::start();
    let s = &c.server;
    c.pod("slow", &["app"], Some(NODE));
    let mut child = Command::new(&s.kubectl)
        .args(["logs", "-f", "slow"])
        .env("KUBECONFIG", &s.kubeconfig)
        .env("HOME", s.data_dir.path())
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl logs -f");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = rx.recv_timeout(Duration::from_secs(30));
    // The first line came through while the kubelet still held back the second: streamed,
    // not buffered until the end.
    let streamed = !c.kubelet.released();
    c.kubelet.release();
    let out = wait_with_timeout(child, Duration::from_secs(30));
    assert_eq!(first.as_deref(), Ok("slow line 1"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(streamed, "the first line arrived only after the kubelet finished");
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).as_deref(), Ok("slow line 2"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(c.kubelet.last("/containerLogs/").query, "follow=true");
}

#[test]
fn log_errors_are_upstreams() {
    let c = Cluster::start();
    let s = &c.server;
    c.pod("pair", &["a", "b"], Some(NODE));
    c.pod("pending", &["app"], None);
    c.pod("broken", &["app"], Some(NODE));

    // kubectl picks the first container itself; the API answers a request without one.
    let err = s.fails(&["get", "--raw", "/api/v1/namespaces/default/pods/pair/log"]);
    assert!(
        err.contains(
            "Error from server (BadRequest): a container name must be specified for pod pair, choose one of: [a b]"
        ),
        "{err}"
    );
    let err = s.fails(&["logs", "pair", "-c", "nope"]);
    assert!(err.contains("container nope is not valid for pod pair"), "{err}");
    assert_eq!(s.ok(&["logs", "pair", "-c", "b", "--tail=1"]), "line 3\n");
    assert_eq!(c.kubelet.last("/containerLogs/").path, "/containerLogs/default/pair/b");

    // Not scheduled: nothing to show (upstream answers 204).
    assert_eq!(s.ok(&["logs", "pending"]), "");
    let err = s.fails(&["logs", "missing"]);
    assert!(err.contains("pods \"missing\" not found"), "{err}");

    // The kubelet's own refusal reaches the user.
    let err = s.fails(&["logs", "broken"]);
    assert!(
        err.contains(
            "Error from server (BadRequest): container \"app\" in pod \"broken\" is waiting to start: ContainerCreating"
        ),
        "{err}"
    );

    // A kubelet nobody answers for: Go's wording of the failed request.
    let closed = rkube_store::testing::free_port();
    add_node(s, "gone", closed);
    c.pod("orphan", &["app"], Some("gone"));
    let err = s.fails(&["logs", "orphan"]);
    let expected = format!(
        "Error from server: Get \"https://127.0.0.1:{closed}/containerLogs/default/orphan/app\": dial tcp 127.0.0.1:{closed}: connect: connection refused"
    );
    assert!(err.contains(&expected), "{err}");
}

/// Opens an HTTP/1.1 upgrade to the API server as the admin: returns the response head and
/// the connection.
fn raw_upgrade(s: &RkubeServer, path: &str, protocol: &str) -> (String, SslStream<TcpStream>) {
    let pki = s.data_dir.path().join("pki");
    let mut connector = SslConnector::builder(SslMethod::tls_client()).unwrap();
    connector.set_certificate_chain_file(pki.join("admin.crt")).unwrap();
    connector.set_private_key_file(pki.join("admin.key"), openssl::ssl::SslFiletype::PEM).unwrap();
    connector.set_ca_file(pki.join("ca.crt")).unwrap();
    let connector = connector.build();
    let tcp = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut tls = connector.connect("127.0.0.1", tcp).expect("TLS to the API server");
    write!(
        tls,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Key: {WS_KEY}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {protocol}\r\n\r\n",
        s.port
    )
    .unwrap();
    tls.flush().unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if tls.read(&mut byte).unwrap_or(0) == 0 {
            break;
        }
        head.push(byte[0]);
    }
    (String::from_utf8_lossy(&head).into_owned(), tls)
}

fn assert_echoes(tls: &mut SslStream<TcpStream>, what: &[u8]) {
    tls.write_all(what).unwrap();
    tls.flush().unwrap();
    let mut back = vec![0u8; what.len()];
    tls.read_exact(&mut back).expect("the kubelet's echo");
    assert_eq!(back, what);
}

#[test]
fn exec_attach_and_port_forward_upgrade_through_to_the_kubelet() {
    let c = Cluster::start();
    let s = &c.server;
    c.pod("web", &["app"], Some(NODE));
    c.pod("pending", &["app"], None);

    // Stock kubectl, WebSocket (v5.channel.k8s.io) end to end.
    let out = s.ok(&["exec", "web", "--", "echo", "hello world"]);
    assert_eq!(out, "fake exec in app: echo hello world\n");
    let seen = c.kubelet.last("/exec/");
    assert_eq!(seen.path, "/exec/default/web/app");
    assert_eq!(seen.query, "command=echo&command=hello+world&error=1&output=1");
    assert_eq!(seen.client_cn, KUBELET_CLIENT_CN);
    assert!(
        seen.header("sec-websocket-protocol").is_some_and(|p| p.contains("v5.channel.k8s.io")),
        "{seen:?}"
    );

    // A raw upgrade: the query translated as upstream's ExecLocation does, the WebSocket
    // handshake answered by the kubelet, and bytes both ways once upgraded.
    let (head, mut tls) = raw_upgrade(
        s,
        "/api/v1/namespaces/default/pods/web/exec?command=echo-bytes&command=a%20b&container=app&stdin=true&stdout=true&stderr=false&tty=true",
        "v5.channel.k8s.io, v4.channel.k8s.io",
    );
    let lower = head.to_ascii_lowercase();
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert!(
        lower.contains(&format!("sec-websocket-accept: {}", WS_ACCEPT.to_ascii_lowercase())),
        "{head}"
    );
    assert!(lower.contains("sec-websocket-protocol: v5.channel.k8s.io"), "{head}");
    assert_echoes(&mut tls, b"ping through the splice");
    assert_echoes(&mut tls, &[0u8, 1, 2, 255]);
    drop(tls);
    let seen = c.kubelet.last("/exec/");
    assert_eq!(seen.query, "command=echo-bytes&command=a+b&input=1&output=1&tty=1");
    assert_eq!(seen.header("sec-websocket-key"), Some(WS_KEY));
    assert_eq!(seen.header("sec-websocket-version"), Some("13"));
    assert_eq!(seen.header("x-forwarded-for"), Some("127.0.0.1"));
    assert_eq!(seen.header("upgrade"), Some("websocket"));

    let (head, mut tls) = raw_upgrade(
        s,
        "/api/v1/namespaces/default/pods/web/attach?container=app&stdin=1&stdout=1&stderr=1",
        "v4.channel.k8s.io",
    );
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert_echoes(&mut tls, b"attached");
    drop(tls);
    let seen = c.kubelet.last("/attach/");
    assert_eq!(
        (seen.path.as_str(), seen.query.as_str()),
        ("/attach/default/web/app", "error=1&input=1&output=1")
    );

    let (head, mut tls) = raw_upgrade(
        s,
        "/api/v1/namespaces/default/pods/web/portforward?ports=8080&ports=9090",
        "SPDY/3.1+portforward.k8s.io",
    );
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("sec-websocket-protocol: spdy/3.1+portforward.k8s.io"),
        "{head}"
    );
    assert_echoes(&mut tls, b"forwarded");
    drop(tls);
    let seen = c.kubelet.last("/portForward/");
    assert_eq!(
        (seen.path.as_str(), seen.query.as_str()),
        ("/portForward/default/web", "port=8080%2C9090")
    );

    // kubectl 1.27 speaks SPDY (a POST upgrade): it reaches the kubelet as such, and the
    // kubelet's refusal (this one speaks WebSocket only) comes back to the user as it is.
    let old = std::path::Path::new("/usr/lib/google-cloud-sdk/bin/kubectl.1.27");
    if old.exists() {
        let out = s.kubectl_with(old, &["exec", "web", "--", "ls"], None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("the fake kubelet speaks WebSocket only"),
            "{err}"
        );
        let seen = c.kubelet.last("/exec/");
        assert_eq!(
            (seen.method.as_str(), seen.query.as_str()),
            ("POST", "command=ls&error=1&output=1")
        );
        assert_eq!(seen.header("upgrade"), Some("SPDY/3.1"));
        assert!(seen.header("x-stream-protocol-version").is_some(), "{seen:?}");
    }

    // Upstream's refusals, before any kubelet is dialed.
    let err = s.fails(&["exec", "pending", "--", "ls"]);
    assert!(err.contains("pod pending does not have a host assigned"), "{err}");
    let err = s.fails(&["get", "--raw", "/api/v1/namespaces/default/pods/web/exec?command=ls"]);
    assert!(err.contains("Error from server (BadRequest): Upgrade request required"), "{err}");
    let (head, _) = raw_upgrade(
        s,
        "/api/v1/namespaces/default/pods/web/exec?command=ls&container=nope",
        "v5.channel.k8s.io",
    );
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
}

#[test]
fn node_proxy_forwards_any_request_to_the_kubelet() {
    let c = Cluster::start();
    let s = &c.server;
    let out = s.ok(&["get", "--raw", &format!("/api/v1/nodes/{NODE}/proxy/healthz")]);
    assert_eq!(out, "fake-kubelet healthz ok");
    let seen = c.kubelet.last("/healthz");
    assert_eq!(seen.method, "GET");
    assert_eq!(seen.client_cn, KUBELET_CLIENT_CN);

    let out = s.ok(&[
        "get",
        "--raw",
        &format!("/api/v1/nodes/{NODE}/proxy/stats/summary?only_cpu=true&x=a%20b"),
    ]);
    // kubectl re-encodes the query as Go does; it reaches the kubelet as sent.
    assert_eq!(out, "GET /stats/summary query=only_cpu=true&x=a+b body=");

    let body = c.server.data_dir.path().join("body.json");
    std::fs::write(&body, r#"{"hello":"kubelet"}"#).unwrap();
    let out = s.ok(&[
        "create",
        "--raw",
        &format!("/api/v1/nodes/{NODE}/proxy/echo"),
        "-f",
        body.to_str().unwrap(),
    ]);
    assert_eq!(out, r#"POST /echo query= body={"hello":"kubelet"}"#);

    // `.../proxy` is redirected to `.../proxy/`, the kubelet's root.
    assert_eq!(
        s.ok(&["get", "--raw", &format!("/api/v1/nodes/{NODE}/proxy")]),
        "fake-kubelet root"
    );

    let err = s.fails(&["get", "--raw", "/api/v1/nodes/nope/proxy/healthz"]);
    assert!(err.contains("nodes \"nope\" not found"), "{err}");
}
