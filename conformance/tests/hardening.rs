//! The cheap ways to hurt an API server, closed as kube-apiserver closes them, against the
//! real `rkube server` over raw HTTPS (what only the wire shows), kubectl and kube-rs:
//! patches that grow the document exponentially or nest without end, connections that send
//! nothing or trickle their headers or idle, floods of requests (429, not timeouts), and
//! responses with more warnings than a client can read.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use openssl::pkey::{PKey, Private};
use openssl::ssl::{SslConnector, SslMethod, SslStream, SslVerifyMode};
use openssl::x509::X509;
use rkube_conformance::cluster::RkubeServer;
use serde_json::{json, Value};

/// A client identity: certificate and key.
struct Identity {
    cert: X509,
    key: PKey<Private>,
}

/// The administrator (`system:masters`) from the server's PKI.
fn admin(s: &RkubeServer) -> Identity {
    identity_files(&s.data_dir.path().join("pki"), "admin")
}

fn identity_files(pki: &Path, name: &str) -> Identity {
    let read = |ext: &str| std::fs::read(pki.join(format!("{name}.{ext}"))).expect("pki file");
    Identity {
        cert: X509::from_pem(&read("crt")).expect("certificate"),
        key: PKey::private_key_from_pem(&read("key")).expect("key"),
    }
}

/// A user who is not in `system:masters` (whom the in-flight limits do not spare): a client
/// certificate for `cn` signed by the cluster CA.
fn ordinary_user(s: &RkubeServer, cn: &str) -> Identity {
    use openssl::asn1::Asn1Time;
    use openssl::bn::{BigNum, MsbOption};
    use openssl::ec::{EcGroup, EcKey};
    use openssl::hash::MessageDigest;
    use openssl::nid::Nid;
    use openssl::x509::extension::ExtendedKeyUsage;
    use openssl::x509::X509NameBuilder;
    let ca = identity_files(&s.data_dir.path().join("pki"), "ca");
    let key = PKey::from_ec_key(
        EcKey::generate(&EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap()).unwrap(),
    )
    .unwrap();
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_nid(Nid::COMMONNAME, cn).unwrap();
    let name = name.build();
    let mut builder = X509::builder().unwrap();
    builder.set_version(2).unwrap();
    let mut serial = BigNum::new().unwrap();
    serial.rand(64, MsbOption::MAYBE_ZERO, false).unwrap();
    builder.set_serial_number(&serial.to_asn1_integer().unwrap()).unwrap();
    builder.set_subject_name(&name).unwrap();
    builder.set_issuer_name(ca.cert.subject_name()).unwrap();
    builder.set_pubkey(&key).unwrap();
    builder.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
    builder.set_not_after(&Asn1Time::days_from_now(1).unwrap()).unwrap();
    builder.append_extension(ExtendedKeyUsage::new().client_auth().build().unwrap()).unwrap();
    builder.sign(&ca.key, MessageDigest::sha256()).unwrap();
    Identity { cert: builder.build(), key }
}

fn connector(identity: Option<&Identity>, alpn: &[u8]) -> openssl::ssl::ConnectConfiguration {
    let mut builder = SslConnector::builder(SslMethod::tls_client()).unwrap();
    if let Some(id) = identity {
        builder.set_certificate(&id.cert).unwrap();
        builder.set_private_key(&id.key).unwrap();
    }
    // The server is this test's own, on loopback.
    builder.set_verify(SslVerifyMode::NONE);
    builder.set_alpn_protos(alpn).unwrap();
    let mut config = builder.build().configure().unwrap();
    config.set_verify_hostname(false);
    config
}

/// A TLS connection (HTTP/1.1) to the server.
fn tls(s: &RkubeServer, identity: Option<&Identity>) -> SslStream<TcpStream> {
    let tcp = TcpStream::connect(("127.0.0.1", s.port)).expect("connect to the API server");
    tcp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    connector(identity, b"\x08http/1.1").connect("127.0.0.1", tcp).expect("TLS")
}

/// A response as the wire has it.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&self.body[..self.body.len().min(500)]))
        })
    }

    fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// One HTTP/1.1 request (the connection closed after it) as the administrator.
fn request(s: &RkubeServer, method: &str, path: &str, content_type: &str, body: &[u8]) -> Answer {
    let mut conn = tls(s, Some(&admin(s)));
    write!(
        conn,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\
         Content-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    conn.write_all(body).unwrap();
    let mut raw = Vec::new();
    let _ = conn.read_to_end(&mut raw);
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head");
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect::<Vec<_>>();
    let mut body = raw[end + 4..].to_vec();
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    if chunked {
        body = dechunk(&body);
    }
    Answer { status, headers, body }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(std::str::from_utf8(&raw[..eol]).unwrap().trim(), 16)
            .expect("chunk size");
        if size == 0 {
            break;
        }
        out.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
        raw = &raw[eol + 2 + size + 2..];
    }
    out
}

/// A kubeconfig for `identity`: the admin kubeconfig with its user's credentials replaced.
fn user_kubeconfig(s: &RkubeServer, identity: &Identity, name: &str) -> std::path::PathBuf {
    let dir = s.data_dir.path();
    let (cert, key) = (dir.join(format!("{name}.crt")), dir.join(format!("{name}.key")));
    std::fs::write(&cert, identity.cert.to_pem().unwrap()).unwrap();
    std::fs::write(&key, identity.key.private_key_to_pem_pkcs8().unwrap()).unwrap();
    let kubeconfig = dir.join(format!("{name}.kubeconfig"));
    std::fs::copy(&s.kubeconfig, &kubeconfig).unwrap();
    let config = |args: &[&str]| {
        let out = std::process::Command::new(&s.kubectl)
            .env("KUBECONFIG", &kubeconfig)
            .arg("config")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    config(&[
        "set-credentials",
        name,
        &format!("--client-certificate={}", cert.display()),
        &format!("--client-key={}", key.display()),
        "--embed-certs",
    ]);
    config(&["set-context", "--current", &format!("--user={name}")]);
    kubeconfig
}

/// The server's resident memory (kB).
fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

fn assert_alive(s: &RkubeServer) {
    let got = request(s, "GET", "/readyz", "application/json", b"");
    assert_eq!(got.status, 200, "the server no longer answers; log:\n{}", s.log_tail(30));
}

/// 25 `copy` operations each copying the ConfigMap's data into itself: 2^25 times the
/// document. kube-apiserver stops once the copies pass 3 MiB in all (422, its generic
/// message); the server must answer at once, with its memory barely moved.
#[test]
fn a_json_patch_that_doubles_the_document_is_refused_at_once() {
    let s = RkubeServer::start();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "grow", "namespace": "default"}, "data": {"k": "x".repeat(1000)}});
    let created = request(
        &s,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        cm.to_string().as_bytes(),
    );
    assert_eq!(created.status, 201, "{}", String::from_utf8_lossy(&created.body));
    let ops: Vec<Value> = (0..25)
        .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")}))
        .collect();
    let patch = Value::Array(ops).to_string();
    assert!(patch.len() < 2048, "{}", patch.len());
    let before = rss_kb(s.pid());
    let started = Instant::now();
    let got = request(
        &s,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/grow",
        "application/json-patch+json",
        patch.as_bytes(),
    );
    let took = started.elapsed();
    let grew_mb = rss_kb(s.pid()).saturating_sub(before) / 1024;
    assert_eq!(got.status, 422, "{}", String::from_utf8_lossy(&got.body));
    let status = got.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["message"], "the server rejected our request due to an error in our request");
    assert!(took < Duration::from_secs(2), "answered after {took:?}");
    // The limit is 3 MiB: a few copies of that at most, not gigabytes.
    assert!(grew_mb < 64, "the server's memory grew by {grew_mb} MiB");
    eprintln!("doubling patch: 422 after {took:?}, RSS +{grew_mb} MiB");
    // Copies within the limit still work, and the object is untouched by the refused one.
    let small = r#"[{"op":"copy","from":"/data/k","path":"/data/k2"}]"#;
    let got = request(
        &s,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/grow",
        "application/json-patch+json",
        small.as_bytes(),
    );
    assert_eq!(got.status, 200, "{}", String::from_utf8_lossy(&got.body));
    let data = got.json()["data"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(data, ["k", "k2"]);
}

/// Bodies nested 100,000 deep, as a create, each patch type and an apply: a 4xx, never a
/// crash (a recursive decoder or merge would overflow its stack).
#[test]
fn deeply_nested_bodies_are_refused_without_harm() {
    let s = RkubeServer::start();
    let cm =
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":{"a":"b"}}"#;
    let created = request(
        &s,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        cm.as_bytes(),
    );
    assert_eq!(created.status, 201, "{}", String::from_utf8_lossy(&created.body));
    let depth = 100_000;
    let nested =
        |open: &str, close: &str| format!("{}1{}", open.repeat(depth), close.repeat(depth));
    let json_deep = format!(r#"{{"metadata":{{"labels":{}}}}}"#, nested(r#"{"a":"#, "}"));
    let list_deep = format!(r#"[{{"op":"add","path":"/data/x","value":{}}}]"#, nested("[", "]"));
    let yaml_deep = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata: {}\n",
        nested("[", "]")
    );
    let path = "/api/v1/namespaces/default/configmaps/deep";
    let cases: [(&str, &str, &str, &str); 6] = [
        ("create", "POST", "application/json", &json_deep),
        ("merge patch", "PATCH", "application/merge-patch+json", &json_deep),
        ("strategic merge patch", "PATCH", "application/strategic-merge-patch+json", &json_deep),
        ("json patch", "PATCH", "application/json-patch+json", &list_deep),
        ("apply", "PATCH", "application/apply-patch+yaml", &yaml_deep),
        ("update as YAML", "PUT", "application/yaml", &yaml_deep),
    ];
    for (what, method, content_type, body) in cases {
        let target = if method == "POST" { "/api/v1/namespaces/default/configmaps" } else { path };
        let target = if content_type.contains("apply") {
            format!("{target}?fieldManager=t")
        } else {
            target.to_string()
        };
        let started = Instant::now();
        let got = request(&s, method, &target, content_type, body.as_bytes());
        assert!(
            (400..500).contains(&got.status),
            "{what}: {} {}",
            got.status,
            String::from_utf8_lossy(&got.body[..got.body.len().min(300)])
        );
        assert_eq!(got.json()["kind"], "Status", "{what}");
        assert!(started.elapsed() < Duration::from_secs(5), "{what}: {:?}", started.elapsed());
        assert_alive(&s);
    }
}

/// Reads until the server closes the connection (or `limit` passes); how long that took.
fn closed_within(conn: &mut impl Read, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    while started.elapsed() < limit {
        match conn.read(&mut buf) {
            Ok(0) => return Some(started.elapsed()),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Some(started.elapsed()),
            Ok(_) => {}
        }
    }
    None
}

/// A client that completes no TLS handshake, one that completes it and sends nothing, one
/// that trickles a header line now and then, and an idle keep-alive connection: each is closed
/// after the header-read timeout (kube-apiserver: 32 s; 2 s here by flag).
#[test]
fn silent_slow_and_idle_connections_are_closed() {
    let s = RkubeServer::start_with(&["--read-header-timeout", "2s", "--idle-timeout", "4s"]);
    let bound = Duration::from_secs(8);

    // TCP only: no ClientHello at all.
    let mut tcp = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let took = closed_within(&mut tcp, bound).expect("a silent TCP client is never closed");
    assert!(took >= Duration::from_millis(1500), "closed after {took:?}");

    // TLS, then nothing.
    let mut conn = tls(&s, Some(&admin(&s)));
    conn.get_ref().set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let took = closed_within(&mut conn, bound).expect("a silent TLS client is never closed");
    assert!(took >= Duration::from_millis(1500), "closed after {took:?}");

    // A header line every 500 ms, never the end of the head: closed though it keeps sending.
    let mut conn = tls(&s, Some(&admin(&s)));
    conn.get_ref().set_read_timeout(Some(Duration::from_millis(10))).unwrap();
    let started = Instant::now();
    conn.write_all(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
    let mut closed = None;
    for i in 0..40 {
        std::thread::sleep(Duration::from_millis(500));
        if conn.write_all(format!("X-Trickle-{i}: 1\r\n").as_bytes()).is_err()
            || closed_within(&mut conn, Duration::from_millis(20)).is_some()
        {
            closed = Some(started.elapsed());
            break;
        }
    }
    let took = closed.expect("a trickling client is never closed");
    assert!(took < bound && took >= Duration::from_millis(1500), "closed after {took:?}");

    // Keep-alive: a request answered, then silence.
    let mut conn = tls(&s, Some(&admin(&s)));
    conn.write_all(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    conn.get_ref().set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let started = Instant::now();
    while !String::from_utf8_lossy(&seen).contains("gitVersion") && started.elapsed() < bound {
        if let Ok(n) = conn.read(&mut buf) {
            seen.extend_from_slice(&buf[..n]);
        }
    }
    assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"));
    let took = closed_within(&mut conn, bound).expect("an idle keep-alive connection stays open");
    assert!(took >= Duration::from_millis(1500), "closed after {took:?}");
}

/// HTTP/2: the server announces kube-apiserver's 100 concurrent streams (or the flag's
/// value), and a connection idle past the idle timeout gets its GOAWAY.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_streams_are_limited_and_idle_connections_closed() {
    let s = RkubeServer::start_with(&["--idle-timeout", "3s", "--read-header-timeout", "2s"]);
    let (max, idle) = h2_settings_and_idle(&s).await;
    assert_eq!(max, 100);
    assert!(idle >= Duration::from_millis(2500) && idle < Duration::from_secs(10), "{idle:?}");
    drop(s);
    let s = RkubeServer::start_with(&["--http2-max-streams-per-connection", "7"]);
    assert_eq!(h2_settings_and_idle_limited(&s, Duration::from_millis(500)).await.0, 7);
}

async fn h2_settings_and_idle(s: &RkubeServer) -> (usize, Duration) {
    h2_settings_and_idle_limited(s, Duration::from_secs(15)).await
}

/// Opens an HTTP/2 connection, asks for `/version`, and returns the stream limit the server
/// announced and how long after the answer the server ended the connection (at most `wait`).
async fn h2_settings_and_idle_limited(s: &RkubeServer, wait: Duration) -> (usize, Duration) {
    let id = admin(s);
    let ssl = connector(Some(&id), b"\x02h2").into_ssl("127.0.0.1").unwrap();
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", s.port)).await.unwrap();
    let mut stream = tokio_openssl::SslStream::new(ssl, tcp).unwrap();
    std::pin::Pin::new(&mut stream).connect().await.unwrap();
    assert_eq!(stream.ssl().selected_alpn_protocol(), Some(&b"h2"[..]));
    let (client, connection) = h2::client::handshake(stream).await.unwrap();
    let connection = tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let request =
        http::Request::get(format!("https://127.0.0.1:{}/version", s.port)).body(()).unwrap();
    let (response, _) = client.send_request(request, true).unwrap();
    let response = response.await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        chunk.unwrap();
    }
    let max = client.current_max_send_streams();
    let answered = Instant::now();
    let _ = tokio::time::timeout(wait, connection).await;
    (max, answered.elapsed())
}

/// With low limits, a flood of reads and writes from an ordinary user gets 429s with
/// `Retry-After` and upstream's text, at once, never a timeout; watches are not limited; the
/// administrator (`system:masters`) is always answered, as upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_gets_429s_while_kubectl_still_answers() {
    let s = RkubeServer::start_with(&[
        "--max-requests-inflight",
        "2",
        "--max-mutating-requests-inflight",
        "1",
    ]);
    let user = ordinary_user(&s, "flooder");
    // Not system:masters, but allowed everything by RBAC.
    s.ok(&[
        "create",
        "clusterrolebinding",
        "flooder",
        "--clusterrole=cluster-admin",
        "--user=flooder",
    ]);
    let flooder = user_kubeconfig(&s, &user, "flooder");
    s.wait_until("the flooder's binding is in force", Duration::from_secs(10), || {
        let out = s.kubectl(&["--kubeconfig", flooder.to_str().unwrap(), "get", "configmaps"]);
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    });
    let ssl = connector(Some(&user), b"\x02h2").into_ssl("127.0.0.1").unwrap();
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", s.port)).await.unwrap();
    let mut stream = tokio_openssl::SslStream::new(ssl, tcp).unwrap();
    std::pin::Pin::new(&mut stream).connect().await.unwrap();
    let (client, connection) = h2::client::handshake(stream).await.unwrap();
    tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let base = format!("https://127.0.0.1:{}", s.port);
    // One request answered first, so that the server's SETTINGS (its stream limit) are in
    // before the flood, as a client that waits for them would have it. Just after start the
    // server's own controllers may hold both slots for a moment (a 429): then again, as
    // client-go would after the Retry-After.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let first = http::Request::get(format!("{base}/version")).body(()).unwrap();
        let (first, _) = client.send_request(first, true).unwrap();
        let status = first.await.unwrap().status();
        if status == 429 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        assert_eq!(status, 200);
        break;
    }

    // A watch first: long-running, so it holds no slot and gets its 200 during the flood.
    let watch =
        http::Request::get(format!("{base}/api/v1/namespaces/default/configmaps?watch=true"))
            .body(())
            .unwrap();
    let (watch, _) = client.clone().send_request(watch, true).unwrap();

    let mut tasks = Vec::new();
    for i in 0..400 {
        let mut client = client.clone().ready().await.unwrap();
        let base = base.clone();
        tasks.push(tokio::spawn(async move {
            let started = Instant::now();
            let (request, body) = if i % 4 == 0 {
                let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("flood-{i}")}});
                let request =
                    http::Request::post(format!("{base}/api/v1/namespaces/default/configmaps"))
                        .header("content-type", "application/json")
                        .body(())
                        .unwrap();
                (request, Some(bytes::Bytes::from(body.to_string())))
            } else {
                (
                    http::Request::get(format!("{base}/api/v1/namespaces/default/configmaps"))
                        .body(())
                        .unwrap(),
                    None,
                )
            };
            let (response, mut send) = client.send_request(request, body.is_none()).unwrap();
            if let Some(body) = body {
                send.send_data(body, true).unwrap();
            }
            let response = tokio::time::timeout(Duration::from_secs(30), response)
                .await
                .expect("no answer within 30 s")
                .unwrap();
            let status = response.status().as_u16();
            let retry_after =
                response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
            let mut body = response.into_body();
            let mut text = Vec::new();
            while let Some(chunk) = body.data().await {
                let chunk = chunk.unwrap();
                let _ = body.flow_control().release_capacity(chunk.len());
                text.extend_from_slice(&chunk);
            }
            (status, retry_after, String::from_utf8_lossy(&text).into_owned(), started.elapsed())
        }));
    }
    // The administrator is answered meanwhile, and so is kubectl as the flooding user
    // (client-go retries a 429 after its Retry-After).
    let kubectl = |kubeconfig: std::path::PathBuf| {
        let kubectl = s.kubectl.clone();
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(kubectl)
                .env("KUBECONFIG", kubeconfig)
                .args(["get", "ns", "--request-timeout=20s"])
                .output()
                .unwrap()
        })
    };
    let as_admin = kubectl(s.kubeconfig.clone());
    let as_user = kubectl(user_kubeconfig(&s, &user, "flooder"));
    let mut counts = std::collections::BTreeMap::new();
    let mut slowest = Duration::ZERO;
    for task in tasks {
        let (status, retry_after, text, took) = task.await.unwrap();
        *counts.entry(status).or_insert(0) += 1;
        slowest = slowest.max(took);
        if status == 429 {
            assert_eq!(retry_after.as_deref(), Some("1"));
            assert_eq!(text, "Too many requests, please try again later.\n");
        } else {
            assert!(status == 200 || status == 201, "{status}: {text}");
        }
    }
    eprintln!("flood: {counts:?}, slowest answer {slowest:?}");
    assert!(counts.get(&429).copied().unwrap_or(0) > 0, "no 429 in {counts:?}");
    for kubectl in [as_admin.await.unwrap(), as_user.await.unwrap()] {
        assert!(kubectl.status.success(), "{}", String::from_utf8_lossy(&kubectl.stderr));
        assert!(String::from_utf8_lossy(&kubectl.stdout).contains("kube-system"));
    }
    let watch = tokio::time::timeout(Duration::from_secs(10), watch).await.unwrap().unwrap();
    assert_eq!(watch.status(), 200);
}

/// A ConfigMap with 100,000 fields its type does not have: the server warns as upstream
/// does (each text once, 4 KiB of text in all), so kubectl prints a screenful and kube-rs,
/// whose HTTP client reads at most 100 header lines, can read the answer at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_unknown_fields_give_readable_warnings() {
    let s = RkubeServer::start();
    let manifest = |name: &str| {
        let mut cm = serde_json::Map::new();
        cm.insert("apiVersion".into(), json!("v1"));
        cm.insert("kind".into(), json!("ConfigMap"));
        cm.insert("metadata".into(), json!({"name": name, "namespace": "default"}));
        for i in 0..100_000 {
            cm.insert(format!("f{i}"), json!(0));
        }
        Value::Object(cm)
    };

    // The wire: a bounded number of Warning headers, the first fields named.
    let got = request(
        &s,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        manifest("raw").to_string().as_bytes(),
    );
    assert_eq!(
        got.status,
        201,
        "{}",
        String::from_utf8_lossy(&got.body[..got.body.len().min(300)])
    );
    let warnings = got.header_values("warning");
    assert!(!warnings.is_empty() && warnings.len() <= 50, "{} warnings", warnings.len());
    assert_eq!(warnings[0], r#"299 - "unknown field \"f0\"""#);
    let total: usize = warnings.iter().map(|w| w.len()).sum();
    assert!(total <= 8 * 1024, "{total} bytes of warnings");

    // kube-rs.
    let client = s.kube_client().await.unwrap();
    let api: kube::Api<kube::core::DynamicObject> = kube::Api::namespaced_with(
        client,
        "default",
        &kube::core::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
    );
    let obj: kube::core::DynamicObject = serde_json::from_value(manifest("kube-rs")).unwrap();
    let created = api.create(&Default::default(), &obj).await.expect("kube-rs reads the answer");
    assert_eq!(created.metadata.name.as_deref(), Some("kube-rs"));

    // kubectl, warnings printed and bounded.
    let file = s.data_dir.path().join("many-fields.json");
    std::fs::write(&file, manifest("kubectl").to_string()).unwrap();
    let out = s.kubectl(&["create", "--validate=warn", "-f", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines = stderr.lines().filter(|l| l.contains("unknown field")).count();
    assert!((1..=50).contains(&lines), "{lines} warning lines");
}
