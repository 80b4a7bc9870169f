//! The kubelet's own API on a real Docker engine, reached as a user reaches it: stock kubectl
//! through `rkube server`, which proxies to the kubelet over HTTPS with its kubelet-client
//! certificate. `kubectl logs` (tail, containers, previous, follow), `kubectl exec` (output,
//! stderr, exit codes, stdin), `kubectl attach`, and `nodes/proxy` to `/healthz` and `/pods`.

use std::path::Path;
use std::time::Duration;

use rkube_conformance::cluster::{jsonpath, run_command, stderr_of, stdout_of};
use rkube_conformance::node::{NodeServer, ATTACH_PODS, EXEC_PODS};
use rkube_conformance::streaming::Streaming;

#[test]
fn kubectl_logs_tail_containers_previous_and_follow() {
    let n = NodeServer::start();
    let s = &n.server;
    let manifest = r#"
apiVersion: v1
kind: Pod
metadata: {name: echo}
spec:
  containers:
  - {name: echo, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo one; echo two; echo three; exec sleep 3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: pair}
spec:
  containers:
  - {name: a, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo from-a; exec sleep 3600"]}
  - {name: b, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo from-b; exec sleep 3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    volumeMounts: [{name: data, mountPath: /data}]
    # The first attempt fails; the second stays up.
    command: ["sh", "-c", "n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; echo attempt-$n; if [ $n -ge 2 ]; then exec sleep 3600; fi; exit 1"]
---
apiVersion: v1
kind: Pod
metadata: {name: ticker}
spec:
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo first; while [ ! -f /tmp/go ]; do sleep 0.2; done; echo second; exec sleep 3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: waiting}
spec:
  containers:
  - {name: app, image: "busybox:not-here", imagePullPolicy: Never}
"#;
    s.ok_stdin(&["apply", "-f", "-"], manifest);
    let minute = Duration::from_secs(60);

    // What the container wrote, all of it and the last line.
    n.wait_for(&["logs", "echo"], minute, |l| l == "one\ntwo\nthree\n");
    assert_eq!(s.ok(&["logs", "echo", "--tail=1"]), "three\n");
    assert_eq!(s.ok(&["logs", "echo", "--limit-bytes=6"]), "one\ntw");
    let stamped = s.ok(&["logs", "echo", "--timestamps"]);
    let first = stamped.lines().next().unwrap_or("");
    let (stamp, text) = first.split_once(' ').unwrap_or(("", ""));
    assert_eq!(text, "one", "{stamped}");
    assert!(stamp.contains('T') && stamp.ends_with('Z'), "an RFC 3339 time: {stamped}");
    let since = s.ok(&["logs", "echo", "--since=1h"]);
    assert_eq!(since, "one\ntwo\nthree\n");

    // One container of two, by name.
    n.wait_for(&["logs", "pair", "-c", "b"], minute, |l| l == "from-b\n");
    assert_eq!(s.ok(&["logs", "pair", "-c", "a"]), "from-a\n");
    let e = s.fails(&["logs", "pair", "-c", "c"]);
    assert!(e.contains("container c is not valid for pod pair"), "{e}");

    // No previous attempt yet: upstream's BadRequest.
    let e = s.fails(&["logs", "echo", "--previous"]);
    assert!(e.contains(r#"previous terminated container "echo" in pod "echo" not found"#), "{e}");
    // After a restart, the attempt before.
    n.wait_for(
        &[
            "get",
            "pod",
            "crash",
            "-o",
            &jsonpath(
                "{.status.containerStatuses[0].restartCount}/{.status.containerStatuses[0].ready}",
            ),
        ],
        Duration::from_secs(90),
        |v| v == "1/true",
    );
    assert_eq!(s.ok(&["logs", "crash", "--previous"]), "attempt-1\n");
    n.wait_for(&["logs", "crash"], minute, |l| l == "attempt-2\n");

    // A container that never started.
    n.wait_for(
        &[
            "get",
            "pod",
            "waiting",
            "-o",
            &jsonpath("{.status.containerStatuses[0].state.waiting.reason}"),
        ],
        minute,
        |r| r == "ErrImageNeverPull",
    );
    let e = s.fails(&["logs", "waiting"]);
    assert!(
        e.contains(r#"container "app" in pod "waiting" is waiting to start: ErrImageNeverPull"#),
        "{e}"
    );

    // `-f` streams: a line written after kubectl started arrives while it runs.
    n.wait_for(&["logs", "ticker"], minute, |l| l.contains("first"));
    let mut follow = Streaming::start(s.kubectl_command(&s.kubectl).args(["logs", "-f", "ticker"]));
    follow.wait_for_line(|l| l == "first", Duration::from_secs(30));
    assert!(follow.still_running(), "kubectl logs -f ended early");
    s.ok(&["exec", "ticker", "--", "touch", "/tmp/go"]);
    follow.wait_for_line(|l| l == "second", Duration::from_secs(30));
    assert!(follow.still_running(), "kubectl logs -f ended while the container runs");
}

#[test]
fn kubectl_exec_streams_output_exit_codes_and_stdin() {
    let n = NodeServer::start();
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], EXEC_PODS);
    s.ok(&["wait", "--for=condition=Ready", "pod/shell", "--timeout=50s"]);

    assert_eq!(s.ok(&["exec", "shell", "--", "echo", "hi"]), "hi\n");

    // stdout and stderr stay apart.
    let out = s.kubectl(&["exec", "shell", "--", "sh", "-c", "echo out; echo err >&2"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "out\n");
    assert!(stderr_of(&out).contains("err"), "{}", stderr_of(&out));

    // A non-zero exit is kubectl's exit code, with upstream's message.
    let out = s.kubectl(&["exec", "shell", "--", "sh", "-c", "echo before; exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "before\n");
    assert!(stderr_of(&out).contains("command terminated with exit code 3"), "{}", stderr_of(&out));

    // stdin reaches the command, and its end ends `cat`.
    let text = "hello\nworld\n";
    let out = s.kubectl_with(&s.kubectl, &["exec", "-i", "shell", "--", "cat"], Some(text));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), text);
    let big: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    let out = s.kubectl_with(&s.kubectl, &["exec", "-i", "shell", "--", "wc", "-l"], Some(&big));
    assert_eq!(stdout_of(&out).trim(), "2000", "{}", stderr_of(&out));

    // What the command changes stays in the container.
    s.ok(&["exec", "shell", "--", "sh", "-c", "echo kept > /tmp/f"]);
    assert_eq!(s.ok(&["exec", "shell", "--", "cat", "/tmp/f"]), "kept\n");

    // With a TTY (kubectl given one by `script`): one stream, and still the exit code.
    let command = format!(
        "{} exec -it shell -- sh -c '[ -t 1 ] && echo on-a-tty; echo to-stderr >&2; exit 5'",
        s.kubectl.display()
    );
    let out = run_command(
        s.kubectl_command(Path::new("script")).args(["-qec", &command, "/dev/null"]),
        None,
    );
    let text = stdout_of(&out);
    assert!(text.contains("on-a-tty") && text.contains("to-stderr"), "{text}");
    assert!(text.contains("command terminated with exit code 5"), "{text}");
    assert_eq!(out.status.code(), Some(5), "{text}");

    // A container the pod does not have: the API server's BadRequest.
    let e = s.fails(&["exec", "shell", "-c", "nope", "--", "true"]);
    assert!(e.contains("container nope is not valid for pod shell"), "{e}");
    // A container that is not running: the kubelet's error, as kubectl shows upstream's.
    n.wait_for(
        &[
            "get",
            "pod",
            "waiting",
            "-o",
            &jsonpath("{.status.containerStatuses[0].state.waiting.reason}"),
        ],
        Duration::from_secs(60),
        |r| r == "ErrImageNeverPull",
    );
    let e = s.fails(&["exec", "waiting", "--", "true"]);
    assert!(e.contains(r#"container not found ("app")"#), "{e}");
}

#[test]
fn kubectl_attach_and_the_node_proxy() {
    let n = NodeServer::start();
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], ATTACH_PODS);
    s.ok(&["wait", "--for=condition=Ready", "pod/counter", "pod/reader", "--timeout=50s"]);

    // The kubelet's health and pods, through the API server's node proxy.
    let path = format!("/api/v1/nodes/{}/proxy/healthz", n.node);
    assert_eq!(s.ok(&["get", "--raw", &path]), "ok");
    let path = format!("/api/v1/nodes/{}/proxy/pods", n.node);
    let list: serde_json::Value = serde_json::from_str(&s.ok(&["get", "--raw", &path])).unwrap();
    assert_eq!(list["kind"], "PodList");
    let mut names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    names.sort();
    assert_eq!(names, ["counter", "reader"]);

    // Attach: the main process's output from now on.
    let mut attached = Streaming::start(s.kubectl_command(&s.kubectl).args(["attach", "counter"]));
    attached.wait_for_line(|l| l.starts_with("tick-"), Duration::from_secs(30));
    assert!(attached.still_running());
    drop(attached);

    // Attach with stdin: the process reads it, answers and ends; kubectl ends with it.
    let out = s.kubectl_with(&s.kubectl, &["attach", "-i", "reader"], Some("hello\n"));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("got-hello"), "{}", stdout_of(&out));
    n.wait_for(
        &["get", "pod", "reader", "-o", &jsonpath("{.status.phase}")],
        Duration::from_secs(60),
        |p| p == "Succeeded",
    );
}

#[test]
fn kubectl_cp_both_ways_and_run_with_rm() {
    let n = NodeServer::start();
    let s = &n.server;
    s.ok(&[
        "run",
        "box",
        "--image=busybox:1.36",
        "--image-pull-policy=IfNotPresent",
        "--",
        "sleep",
        "3600",
    ]);
    s.ok(&["wait", "--for=condition=Ready", "pod/box", "--timeout=50s"]);

    // A directory with a text file and a binary one goes in (tar over exec with stdin)...
    let local = tempfile::tempdir().unwrap();
    let tree = local.path().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("a.txt"), "alpha\n").unwrap();
    let binary: Vec<u8> =
        (0..300_000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(tree.join("sub/b.bin"), &binary).unwrap();
    s.ok(&["cp", tree.to_str().unwrap(), "box:/tmp/tree"]);
    assert_eq!(s.ok(&["exec", "box", "--", "cat", "/tmp/tree/a.txt"]), "alpha\n");
    let size = s.ok(&["exec", "box", "--", "stat", "-c", "%s", "/tmp/tree/sub/b.bin"]);
    assert_eq!(size.trim(), binary.len().to_string());

    // ... and comes back out the same (tar over exec with stdout).
    let back = local.path().join("back");
    s.ok(&["cp", "box:/tmp/tree", back.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(back.join("a.txt")).unwrap(), "alpha\n");
    assert_eq!(std::fs::read(back.join("sub/b.bin")).unwrap(), binary);
    // A single file.
    let single = local.path().join("single.txt");
    s.ok(&["cp", "box:/tmp/tree/a.txt", single.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&single).unwrap(), "alpha\n");

    // `kubectl run -i --rm`: stdin reaches the pod's process, its output comes back, and the
    // pod is deleted afterwards.
    let out = s.kubectl_with(
        &s.kubectl,
        &[
            "run",
            "once",
            "-i",
            "--rm",
            "--restart=Never",
            "--image=busybox:1.36",
            "--image-pull-policy=IfNotPresent",
            "--",
            "sh",
            "-c",
            "read x; echo got-$x",
        ],
        Some("abc\n"),
    );
    assert!(out.status.success(), "{}\n{}", stdout_of(&out), stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.contains("got-abc"), "{text}");
    assert!(text.contains("pod \"once\" deleted"), "{text}");
    n.wait_for(&["get", "pods", "-o", "name"], Duration::from_secs(30), |out| {
        !out.contains("pod/once")
    });
}

/// The stream of each channel-protocol message and its bytes: a byte then the bytes in
/// binary messages, an ASCII digit then base64 in text ones.
fn channels(messages: &[(u8, Vec<u8>)], base64: bool) -> Vec<(u8, Vec<u8>)> {
    use rkube_conformance::streaming::{BINARY, TEXT};
    messages
        .iter()
        .map(|(opcode, payload)| {
            assert_eq!(*opcode, if base64 { TEXT } else { BINARY }, "{payload:?}");
            let (&first, rest) = payload.split_first().expect("a stream byte");
            if base64 {
                let text = std::str::from_utf8(rest).expect("base64 text");
                let data = if text.is_empty() {
                    Vec::new()
                } else {
                    openssl::base64::decode_block(text).expect("base64")
                };
                (first - b'0', data)
            } else {
                (first, rest.to_vec())
            }
        })
        .collect()
}

/// The bytes of one stream, after its first `skip` messages, as text.
fn stream_text(frames: &[(u8, Vec<u8>)], stream: u8, skip: usize) -> String {
    let bytes: Vec<u8> = frames
        .iter()
        .filter(|(s, _)| *s == stream)
        .skip(skip)
        .flat_map(|(_, d)| d.clone())
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn websocket_channels_read_text_frames_and_speak_base64() {
    use rkube_conformance::streaming::{WebSocketClient, TEXT};
    let n = NodeServer::start();
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], EXEC_PODS);
    let web = r#"
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["httpd", "-f", "-p", "8080", "-h", "/var/www"]}
"#;
    s.ok_stdin(&["apply", "-f", "-"], web);
    s.ok(&["wait", "--for=condition=Ready", "pod/shell", "pod/web", "--timeout=60s"]);
    let exec = "/api/v1/namespaces/default/pods/shell/exec?command=sh&command=-c\
                &command=read%20x%3B%20echo%20got-%24x%3B%20exit%20$CODE\
                &stdin=true&stdout=true&stderr=true";

    // v4.channel.k8s.io with stdin in a TEXT message: read as a binary one is, as upstream
    // reads both.
    let mut ws = WebSocketClient::connect(s, &exec.replace("$CODE", "0"), "v4.channel.k8s.io");
    assert_eq!(ws.status, 101, "{}", ws.head);
    assert_eq!(ws.protocol().as_deref(), Some("v4.channel.k8s.io"));
    ws.send(TEXT, b"\x00hello\n");
    let frames = channels(&ws.read_to_close(), false);
    assert_eq!(stream_text(&frames, 1, 0), "got-hello\n");
    let status: serde_json::Value = serde_json::from_str(&stream_text(&frames, 3, 0)).unwrap();
    assert_eq!(status["status"], "Success", "{status}");

    // v4.base64.channel.k8s.io: text messages both ways, a digit then base64; the exit code
    // on the error stream.
    let mut ws =
        WebSocketClient::connect(s, &exec.replace("$CODE", "7"), "v4.base64.channel.k8s.io");
    assert_eq!(ws.status, 101, "{}", ws.head);
    assert_eq!(ws.protocol().as_deref(), Some("v4.base64.channel.k8s.io"));
    ws.send(TEXT, format!("0{}", openssl::base64::encode_block(b"there\n")).as_bytes());
    let frames = channels(&ws.read_to_close(), true);
    assert_eq!(stream_text(&frames, 1, 0), "got-there\n");
    let status: serde_json::Value = serde_json::from_str(&stream_text(&frames, 3, 0)).unwrap();
    assert_eq!(
        (&status["status"], &status["reason"]),
        (&"Failure".into(), &"NonZeroExitCode".into())
    );
    assert_eq!(status["details"]["causes"][0]["message"], "7", "{status}");

    // Port-forward over v4.base64.channel.k8s.io, and v4.channel.k8s.io fed text messages:
    // each channel opens with the port, the page comes back on the data channel.
    for (protocol, base64) in [("v4.base64.channel.k8s.io", true), ("v4.channel.k8s.io", false)] {
        let path = "/api/v1/namespaces/default/pods/web/portforward?ports=8080";
        let mut ws = WebSocketClient::connect(s, path, protocol);
        assert_eq!(ws.status, 101, "{}", ws.head);
        assert_eq!(ws.protocol().as_deref(), Some(protocol));
        let request = b"GET /index.html HTTP/1.0\r\n\r\n";
        let message = if base64 {
            format!("0{}", openssl::base64::encode_block(request)).into_bytes()
        } else {
            [&[0u8][..], request].concat()
        };
        ws.send(TEXT, &message);
        let frames = channels(&ws.read_to_close(), base64);
        let port = 8080u16.to_le_bytes().to_vec();
        let first = |stream: u8| frames.iter().find(|(s, _)| *s == stream).map(|(_, d)| d.clone());
        assert_eq!((first(0), first(1)), (Some(port.clone()), Some(port)), "{protocol}");
        let page = stream_text(&frames, 0, 1);
        assert!(page.contains("200 OK") && page.ends_with("hello from busybox\n"), "{page:?}");
        assert_eq!(stream_text(&frames, 1, 1), "", "{protocol}: nothing on the error channel");
    }
}

#[test]
fn pod_proxy_reaches_the_pods_ports_over_the_pod_network() {
    use rkube_conformance::node::assert_route_is_local;
    use rkube_conformance::streaming::{api_connection, api_request, read_head};
    use std::io::{Read, Write};
    let n = NodeServer::start();
    let s = &n.server;
    // `web` serves busybox's page on its declared port, `plain` on port 80 (declaring none),
    // `upgrader` answers any request with a 101 and then echoes; `nowhere` never gets an IP.
    let upgrade_script = r#"while IFS= read -r l; do case "$l" in "$(printf "\r")"|"") break;; esac; done; printf "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n"; exec cat"#;
    let pods = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": {"containers": [
            {"name": "app", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent",
             "command": ["httpd", "-f", "-p", "8080", "-h", "/var/www"],
             "ports": [{"containerPort": 8080, "name": "web"}]}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"}, "spec": {"containers": [
            {"name": "app", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent",
             "command": ["httpd", "-f", "-p", "80", "-h", "/var/www"]}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "upgrader"}, "spec": {"containers": [
            {"name": "app", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent",
             "env": [{"name": "UP", "value": upgrade_script}],
             "command": ["sh", "-c", "exec nc -ll -p 9000 -e sh -c \"$UP\""]}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nowhere"}, "spec": {
            "nodeName": "no-such-node",
            "containers": [{"name": "app", "image": "busybox:1.36"}]}},
    ]});
    s.ok_stdin(&["apply", "-f", "-"], &pods.to_string());
    s.ok(&[
        "wait",
        "--for=condition=Ready",
        "pod/web",
        "pod/plain",
        "pod/upgrader",
        "--timeout=60s",
    ]);
    // The API server dials the pods' IPs: they must be on this machine's pod bridge.
    for pod in ["web", "plain", "upgrader"] {
        let ip = s.ok(&["get", "pod", pod, "-o", &jsonpath("{.status.podIP}")]);
        assert_route_is_local(&ip);
    }
    let page = "hello from busybox\n";
    let base = "/api/v1/namespaces/default/pods";
    for path in [
        "web/proxy/index.html",           // the first declared port
        "web:8080/proxy/",                // a port, the directory's index
        "http:web:8080/proxy/index.html", // scheme, name and port
        "plain/proxy/index.html",         // no port declared: the scheme's
        "plain:http/proxy/index.html",    // a service name, as Go's dialer reads it
        "web:8080/proxy/./x/../index.html",
    ] {
        assert_eq!(s.ok(&["get", "--raw", &format!("{base}/{path}")]), page, "{path}");
    }

    // Every method reaches the pod, which answers as it does (busybox's httpd refuses a
    // PUT); the answer comes back as it is.
    let (status, head, body) = api_request(s, "PUT", &format!("{base}/web/proxy/index.html"), b"x");
    assert_eq!(status, 501, "{head}");
    assert!(String::from_utf8_lossy(&body).contains("Not Implemented"), "{body:?}");
    let (status, head, _) = api_request(s, "HEAD", &format!("{base}/web/proxy/index.html"), b"");
    assert_eq!(status, 200, "{head}");
    // `.../proxy` alone is redirected to `.../proxy/`.
    let (status, head, _) = api_request(s, "GET", &format!("{base}/web/proxy?a=b"), b"");
    assert_eq!(status, 301, "{head}");
    assert!(head.contains(&format!("{base}/web/proxy/?a=b")), "{head}");

    // Upgrades are spliced through: the pod's 101, then its echo.
    let mut conn = api_connection(s);
    write!(
        conn,
        "GET {base}/upgrader:9000/proxy/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n\
         Upgrade: echo\r\n\r\n"
    )
    .unwrap();
    let (status, head) = read_head(&mut conn);
    assert_eq!(status, 101, "{head}");
    assert!(head.to_ascii_lowercase().contains("upgrade: echo"), "{head}");
    conn.write_all(b"ping\n").unwrap();
    let mut echoed = [0u8; 5];
    conn.read_exact(&mut echoed).unwrap();
    assert_eq!(&echoed, b"ping\n");
    drop(conn);

    // Upstream's errors.
    let e = s.fails(&["get", "--raw", &format!("{base}/nowhere/proxy/")]);
    assert!(e.contains("address not allowed"), "{e}");
    let e = s.fails(&["get", "--raw", &format!("{base}/nope/proxy/")]);
    assert!(e.contains(r#"pods "nope" not found"#), "{e}");
    let (status, _, body) = api_request(s, "GET", &format!("{base}/web:no-such-port/proxy/"), b"");
    let status_body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, 503, "{status_body}");
    assert_eq!(
        status_body["message"],
        "error trying to reach service: dial tcp: lookup tcp/no-such-port: unknown port"
    );
    // A port nothing listens on.
    let (status, _, body) = api_request(s, "GET", &format!("{base}/web:8081/proxy/"), b"");
    let message = serde_json::from_slice::<serde_json::Value>(&body).unwrap()["message"].clone();
    assert_eq!(status, 503, "{message}");
    assert!(message.as_str().unwrap().ends_with(":8081: connect: connection refused"), "{message}");
    let (status, _, body) = api_request(s, "GET", &format!("{base}/a:b:c:d/proxy/"), b"");
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&body).contains(r#"invalid pod request \"a:b:c:d\""#));
    let (status, _, _) = api_request(s, "TRACE", &format!("{base}/web/proxy/"), b"");
    assert_eq!(status, 405);
}
