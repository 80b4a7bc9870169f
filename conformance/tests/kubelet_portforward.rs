//! `kubectl port-forward` through `rkube server` to a pod on a real Docker engine, as a user
//! runs it: stock kubectl 1.32 (SPDY tunnelled in a WebSocket) and 1.29 (a plain SPDY/3.1
//! upgrade), local ports chosen by kubectl and fixed ones, sequential, concurrent and large
//! transfers both ways, a server the pod binds to 127.0.0.1 only, a port nobody listens on,
//! and `svc/NAME`.
//!
//! The test talks only to the local ports kubectl listens on (127.0.0.1); kubectl reaches the
//! pod through the API server and the kubelet.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::node::NodeServer;
use rkube_conformance::streaming::{api_connection, read_head, Streaming, WebSocketClient, BINARY};

const KUBECTL_1_29: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.29";

const INDEX: &str = "hello through port-forward\n";

/// `web` serves /srv on 8080 (all addresses) and on 127.0.0.1:9000 only; /srv/big is 5 MiB of
/// random bytes with its digest beside it. `sink` writes what it receives on 9100 to /tmp/up.
const MANIFEST: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers:
  - name: web
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command:
    - sh
    - -c
    - >-
      mkdir -p /srv &&
      echo 'hello through port-forward' > /srv/index.html &&
      head -c 5242880 /dev/urandom > /srv/big &&
      sha256sum /srv/big | cut -d' ' -f1 > /srv/big.sha256 &&
      httpd -p 127.0.0.1:9000 -h /srv &&
      exec httpd -f -p 8080 -h /srv
"#;

/// Starts `kubectl port-forward` with these arguments; killed when dropped, also when the
/// test fails.
fn port_forward(s: &RkubeServer, kubectl: &Path, args: &[&str]) -> Streaming {
    Streaming::start(s.kubectl_command(kubectl).arg("port-forward").args(args))
}

/// The local port kubectl forwards to `remote` (its "Forwarding from 127.0.0.1:L -> R"
/// line), waiting 60 s at most.
fn local_port(pf: &mut Streaming, remote: u16) -> u16 {
    let remote = remote.to_string();
    let forwarded = |line: &str| -> Option<u16> {
        let rest = line.strip_prefix("Forwarding from 127.0.0.1:")?;
        let (port, to) = rest.split_once(" -> ")?;
        (to == remote).then(|| port.parse().ok()).flatten()
    };
    let line = pf.wait_for_line(|l| forwarded(l).is_some(), Duration::from_secs(60));
    forwarded(&line).expect("a forwarded port")
}

/// One HTTP/1.0 GET to 127.0.0.1:`port`: the status code and the body.
fn http_get(port: u16, path: &str) -> Result<(u16, Vec<u8>), String> {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    conn.set_read_timeout(Some(Duration::from_secs(60))).map_err(|e| e.to_string())?;
    write!(conn, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    conn.read_to_end(&mut response).map_err(|e| e.to_string())?;
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("no HTTP response: {:?}", String::from_utf8_lossy(&response)))?;
    let head = String::from_utf8_lossy(&response[..split]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status in {head:?}"))?;
    Ok((status, response[split + 4..].to_vec()))
}

/// A GET that must answer 200: a few tries, 30 s at most (the first connection can race
/// kubectl's dial of the API server).
fn get_ok(port: u16, path: &str) -> Vec<u8> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    for _ in 0..10 {
        match http_get(port, path) {
            Ok((200, body)) => return body,
            Ok((status, body)) => {
                last = format!("status {status}: {}", String::from_utf8_lossy(&body));
            }
            Err(e) => last = e,
        }
        if Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("GET 127.0.0.1:{port}{path} did not answer 200: {last}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Starts the pod and waits until both its servers answer from inside.
fn start_web(n: &NodeServer) -> String {
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], MANIFEST);
    s.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"]);
    n.wait_for(
        &[
            "exec",
            "web",
            "--",
            "sh",
            "-c",
            "wget -q -O - http://127.0.0.1:8080/index.html && wget -q -O - http://127.0.0.1:9000/index.html",
        ],
        Duration::from_secs(60),
        |out| out == format!("{INDEX}{INDEX}"),
    );
    let digest = s.ok(&["exec", "web", "--", "cat", "/srv/big.sha256"]).trim().to_string();
    assert_eq!(digest.len(), 64, "{digest}");
    digest
}

#[test]
fn kubectl_port_forward_over_websockets_and_spdy() {
    let n = NodeServer::start();
    let s = &n.server;
    let digest = start_web(&n);
    let kubectl_1_29 = Path::new(KUBECTL_1_29);
    for (kubectl, upgrade) in [
        // 1.32 tunnels SPDY in a WebSocket (a GET); 1.29 upgrades a POST to SPDY/3.1.
        (s.kubectl.as_path(), "GET"),
        (kubectl_1_29, "POST"),
    ] {
        let version = kubectl.display().to_string();
        // Local ports kubectl picks; -v=6 shows how it upgraded.
        let mut pf = port_forward(s, kubectl, &["pod/web", ":8080", ":9000", "-v=6"]);
        let (web, loopback_only) = (local_port(&mut pf, 8080), local_port(&mut pf, 9000));
        assert_eq!(get_ok(web, "/index.html"), INDEX.as_bytes(), "{version}");
        let stderr = pf.stderr();
        // 1.29 logs `POST https://... 101 Switching Protocols`, 1.32 `verb="GET" url=...`.
        let upgraded = stderr.lines().any(|l| {
            (l.contains(&format!("{upgrade} https://"))
                || l.contains(&format!("verb=\"{upgrade}\"")))
                && l.contains("/pods/web/portforward")
                && l.contains("101 Switching Protocols")
        });
        assert!(upgraded, "{version}: no {upgrade} upgrade in\n{stderr}");

        // Several connections one after the other over the one upgraded connection.
        for i in 0..5 {
            assert_eq!(get_ok(web, "/index.html"), INDEX.as_bytes(), "{version} GET {i}");
        }
        // A server the pod binds to its loopback only: reached inside the pod's namespace.
        assert_eq!(get_ok(loopback_only, "/index.html"), INDEX.as_bytes(), "{version}");

        // Two large downloads at once arrive whole.
        let downloads: Vec<_> =
            (0..2).map(|_| std::thread::spawn(move || http_get(web, "/big"))).collect();
        for download in downloads {
            let (status, body) = download.join().expect("download thread").expect("download");
            assert_eq!(status, 200, "{version}");
            assert_eq!(body.len(), 5 * 1024 * 1024, "{version}");
            assert_eq!(hex(&openssl::sha::sha256(&body)), digest, "{version}");
        }
        assert!(pf.still_running(), "{version}: kubectl ended: {}", pf.stderr());
        drop(pf);

        // A local port given on the command line.
        let fixed = rkube_store::testing::free_port();
        let mut pf = port_forward(s, kubectl, &["pod/web", &format!("{fixed}:8080")]);
        assert_eq!(local_port(&mut pf, 8080), fixed);
        assert_eq!(get_ok(fixed, "/index.html"), INDEX.as_bytes(), "{version}");

        // An upload: 5 MiB to a listener in the pod, which keeps what it reads.
        let port = 9100;
        s.ok(&[
            "exec",
            "web",
            "--",
            "sh",
            "-c",
            &format!("rm -f /tmp/up; (sleep 120 | nc -l -p {port} > /tmp/up) >/dev/null 2>&1 &"),
        ]);
        n.wait_for(&["exec", "web", "--", "netstat", "-ltn"], Duration::from_secs(30), |out| {
            out.contains(&format!(":{port} "))
        });
        let mut up = port_forward(s, kubectl, &["pod/web", &format!(":{port}")]);
        let local = local_port(&mut up, port);
        let payload: Vec<u8> =
            (0..5 * 1024 * 1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        let mut conn = TcpStream::connect(("127.0.0.1", local)).expect("connect to kubectl");
        conn.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        conn.write_all(&payload).expect("upload");
        conn.shutdown(std::net::Shutdown::Write).expect("half-close");
        let mut rest = Vec::new();
        let _ = conn.read_to_end(&mut rest);
        let want = hex(&openssl::sha::sha256(&payload));
        n.wait_for(
            &["exec", "web", "--", "sh", "-c", "sha256sum /tmp/up | cut -d' ' -f1"],
            Duration::from_secs(30),
            |out| out.trim() == want,
        );
        drop(up);
    }
}

#[test]
fn kubectl_port_forward_errors_and_services() {
    let n = NodeServer::start();
    let s = &n.server;
    start_web(&n);
    let uid = s.ok(&["get", "pod", "web", "-o", "jsonpath={.metadata.uid}"]);
    let containers = n.containers_of(&uid);
    let kubectl_1_29 = Path::new(KUBECTL_1_29);

    for kubectl in [s.kubectl.as_path(), kubectl_1_29] {
        let version = kubectl.display().to_string();
        let mut pf = port_forward(s, kubectl, &["pod/web", ":8080", ":81"]);
        let (web, nobody) = (local_port(&mut pf, 8080), local_port(&mut pf, 81));
        assert_eq!(get_ok(web, "/index.html"), INDEX.as_bytes(), "{version}");
        // Nobody listens on 81: the connection closes without an answer, and kubectl prints
        // the kubelet's message, naming the pod's sandbox.
        let answer = http_get(nobody, "/");
        assert!(answer.is_err(), "{version}: an answer from port 81: {answer:?}");
        let stderr = pf.wait_stderr("error forwarding port 81", Duration::from_secs(10));
        let wanted = format!(
            "an error occurred forwarding {nobody} -> 81: error forwarding port 81 to pod "
        );
        assert!(stderr.contains(&wanted), "{version}:\n{stderr}");
        assert!(stderr.contains("connection refused"), "{version}:\n{stderr}");
        let sandbox = stderr
            .split("error forwarding port 81 to pod ")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .unwrap_or("");
        assert!(
            containers.iter().any(|c| c == sandbox),
            "{version}: {sandbox:?} not in {containers:?}"
        );
        // kubectl (1.27 and later) gives up the whole forward after an error, as against
        // upstream's kubelet.
        assert!(pf.wait_exit(Duration::from_secs(30)).is_some(), "{version}: kubectl still runs");
        assert!(pf.stderr().contains("lost connection to pod"), "{version}:\n{}", pf.stderr());
        drop(pf);
        // The kubelet goes on: the next forward to a good port works.
        let mut pf = port_forward(s, kubectl, &["pod/web", ":8080"]);
        let web = local_port(&mut pf, 8080);
        assert_eq!(get_ok(web, "/index.html"), INDEX.as_bytes(), "{version}");
    }

    // A host-network pod: its loopback is the node's.
    let host_port = rkube_store::testing::free_port();
    let host_pod = format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: hostweb}}
spec:
  hostNetwork: true
  containers:
  - name: web
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /srv && echo 'hello through port-forward' > /srv/index.html && exec httpd -f -p 127.0.0.1:{host_port} -h /srv"]
"#
    );
    s.ok_stdin(&["apply", "-f", "-"], &host_pod);
    s.ok(&["wait", "--for=condition=Ready", "pod/hostweb", "--timeout=60s"]);
    let inside = format!("wget -q -O - http://127.0.0.1:{host_port}/index.html");
    n.wait_for(&["exec", "hostweb", "--", "sh", "-c", &inside], Duration::from_secs(60), |out| {
        out == INDEX
    });
    let mut pf = port_forward(s, &s.kubectl, &["pod/hostweb", &format!(":{host_port}")]);
    let local = local_port(&mut pf, host_port);
    assert_eq!(get_ok(local, "/index.html"), INDEX.as_bytes());
    drop(pf);

    // A Service: kubectl picks a pod it selects and the target port.
    s.ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    let mut pf = port_forward(s, &s.kubectl, &["svc/web", ":80"]);
    let web = local_port(&mut pf, 8080);
    assert_eq!(get_ok(web, "/index.html"), INDEX.as_bytes());
    drop(pf);

    // A pod the API server does not know: its 404, kubectl fails at once.
    let e = s.fails(&["port-forward", "pod/nope", ":8080"]);
    assert!(e.contains(r#"pods "nope" not found"#), "{e}");
}

/// A GET through the API server with extra header lines: the status and the body (read by
/// its Content-Length, else to the end of the connection).
fn raw_get(s: &RkubeServer, path: &str, headers: &str) -> (u16, String) {
    let mut conn = api_connection(s);
    write!(conn, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n").unwrap();
    let (status, head) = read_head(&mut conn);
    let length = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse::<usize>().ok())?
    });
    let mut body = Vec::new();
    match length {
        Some(n) => {
            body.resize(n, 0);
            conn.read_exact(&mut body).expect("the response body");
        }
        None => {
            let _ = conn.read_to_end(&mut body);
        }
    }
    (status, String::from_utf8_lossy(&body).to_string())
}

#[test]
fn port_forward_over_the_channel_websocket_protocol_and_refusals() {
    let n = NodeServer::start();
    let s = &n.server;
    start_web(&n);

    // The v4.channel.k8s.io protocol (client libraries: kube-rs, the Python client): ports in
    // the query, data and error channel per port, each opened with the port's number.
    let mut ws = WebSocketClient::connect(
        s,
        "/api/v1/namespaces/default/pods/web/portforward?ports=8080&ports=81",
        "v4.channel.k8s.io",
    );
    assert_eq!(ws.status, 101, "{}", ws.head);
    assert_eq!(ws.protocol().as_deref(), Some("v4.channel.k8s.io"));
    ws.send(BINARY, b"\x00GET /index.html HTTP/1.0\r\n\r\n");
    let mut channels: Vec<Vec<u8>> = vec![Vec::new(); 4];
    let mut first: Vec<Option<Vec<u8>>> = vec![None; 4];
    for (_, payload) in ws.read_to_close() {
        let Some((&channel, data)) = payload.split_first() else { continue };
        let channel = usize::from(channel);
        assert!(channel < 4, "message on channel {channel}");
        if first[channel].is_none() {
            first[channel] = Some(data.to_vec());
        } else {
            channels[channel].extend_from_slice(data);
        }
    }
    let port_bytes = |p: u16| Some(p.to_le_bytes().to_vec());
    assert_eq!(first, [port_bytes(8080), port_bytes(8080), port_bytes(81), port_bytes(81)]);
    let page = String::from_utf8_lossy(&channels[0]).to_string();
    assert!(page.starts_with("HTTP/1.1 200 OK") && page.ends_with(INDEX), "{page:?}");
    assert!(channels[1].is_empty(), "{:?}", String::from_utf8_lossy(&channels[1]));
    let error = String::from_utf8_lossy(&channels[3]).to_string();
    assert!(error.starts_with("error forwarding port 81 to pod "), "{error}");

    // Refusals, as the kubelet words them (through the node proxy, which shows its text).
    let kubelet = format!("/api/v1/nodes/{}/proxy/portForward", n.node);
    let close = "Connection: close\r\n";
    let (status, body) = raw_get(s, &format!("{kubelet}/default/nope"), close);
    assert_eq!((status, body.as_str()), (404, "pod does not exist"));
    let (status, body) = raw_get(s, &format!("{kubelet}/default/web/not-its-uid"), close);
    assert_eq!((status, body.as_str()), (404, "pod not found"));
    // Not an upgrade: upstream's handshake error.
    let (status, body) = raw_get(s, &format!("{kubelet}/default/web"), close);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("X-Stream-Protocol-Version is required"), "{body}");
    // A protocol version the kubelet does not speak: 403 with the one it does.
    let mut conn = api_connection(s);
    write!(
        conn,
        "POST /api/v1/namespaces/default/pods/web/portforward HTTP/1.1\r\nHost: 127.0.0.1\r\n\
         Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v9.example\r\n\
         Content-Length: 0\r\n\r\n"
    )
    .unwrap();
    let (status, head) = read_head(&mut conn);
    assert_eq!(status, 403, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("x-accepted-stream-protocol-versions: portforward.k8s.io"),
        "{head}"
    );
    // A channel-protocol WebSocket must name its ports.
    let (status, body) = raw_get(
        s,
        &format!("{kubelet}/default/web"),
        "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
    );
    assert_eq!((status, body.as_str()), (400, r#"query parameter "port" is required"#));
}
