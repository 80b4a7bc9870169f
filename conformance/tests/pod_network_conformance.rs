//! What upstream's pod-network and proxy conformance tests check, on a real node (Docker,
//! the kubelet's pod network and hostPort rules in this machine's iptables):
//! - the `pods/proxy` and `services/proxy` subresources pass every HTTP method (DELETE, GET,
//!   HEAD, OPTIONS, PATCH, POST, PUT), a path and a query to the pod, and its answer back
//!   (upstream's "validate Proxy responses" and "validate ProxyWithPath responses");
//! - pods on one hostPort that differ by hostIP or protocol are all scheduled, run and each
//!   answers at its own address and protocol (upstream's "HostPort matching and HostIP and
//!   Protocol not-matching");
//! - UDP from one pod to another's IP, and from a hostNetwork pod to a pod's IP (upstream's
//!   "intra pod udp" and the node-to-pod UDP check).
//!
//! Every address is checked local (`ip route get`) before anything is sent to it.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use rkube_conformance::cluster::{jsonpath, RkubeServer};
use rkube_conformance::node::{assert_route_is_local, ensure_tools_image, NodeServer, TOOLS};
use rkube_conformance::traffic::{ask_tcp, ask_udp, eventually};

/// An HTTP server in a pod (socat runs it for each connection): whatever the method, path
/// and query, 200 with `{"Method":"<method>","Body":"foo"}` (agnhost porter's JSON answer
/// that upstream's test reads), no body for HEAD.
const HANDLER: &str = r#"#!/bin/sh
read -r method target version
while read -r line; do
  line=$(printf '%s' "$line" | tr -d '\r')
  [ -z "$line" ] && break
done
body="{\"Method\":\"$method\",\"Body\":\"foo\",\"Target\":\"$target\"}"
printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n' "${#body}"
[ "$method" = HEAD ] || printf '%s' "$body"
"#;

fn proxy_objects() -> String {
    let handler = HANDLER.replace('\n', "\n    ");
    format!(
        r#"
apiVersion: v1
kind: ConfigMap
metadata: {{name: handler}}
data:
  handler.sh: |
    {handler}
---
apiVersion: v1
kind: Pod
metadata: {{name: porter, labels: {{app: porter}}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: "{TOOLS}"
    imagePullPolicy: IfNotPresent
    command: ["socat", "TCP4-LISTEN:80,fork,reuseaddr", "EXEC:/handler/handler.sh"]
    ports: [{{name: http, containerPort: 80}}]
    readinessProbe: {{tcpSocket: {{port: 80}}, periodSeconds: 1}}
    volumeMounts: [{{name: handler, mountPath: /handler}}]
  volumes:
  - name: handler
    configMap: {{name: handler, defaultMode: 0755}}
---
apiVersion: v1
kind: Service
metadata: {{name: proxy-service}}
spec:
  selector: {{app: porter}}
  ports: [{{port: 80, targetPort: 80}}]
"#
    )
}

/// Sends `method` to `path` (through the API server) until it answers 200 (the Service's
/// endpoints follow the pod's readiness), and returns the answer's body.
fn proxied(server: &RkubeServer, method: &str, path: &str) -> String {
    // A GET of the proxy's root without its slash is redirected there (301), as upstream's
    // proxy does; Go's client follows it, so does curl here.
    let args: &[&str] = match method {
        "HEAD" => &["-I", "-L"],
        _ => &["-X", method, "-L"],
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = server.curl(args, path);
        if got.code == 200 {
            return got.body;
        }
        assert!(
            Instant::now() < deadline,
            "{method} {path}: {} {}\n{}\n{}",
            got.code,
            got.body,
            got.headers,
            server.cluster_state()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_proxy_subresources_pass_every_method_path_and_query_to_pods_and_services() {
    ensure_tools_image();
    let node = NodeServer::start();
    let server = &node.server;
    server.ok_stdin(&["apply", "-f", "-"], &proxy_objects());
    node.wait_for(
        &[
            "get",
            "pod",
            "porter",
            "-o",
            &jsonpath("{.status.conditions[?(@.type==\"Ready\")].status}"),
        ],
        Duration::from_secs(90),
        |s| s == "True",
    );
    let bases = [
        "/api/v1/namespaces/default/pods/porter/proxy",
        "/api/v1/namespaces/default/pods/porter:80/proxy",
        "/api/v1/namespaces/default/pods/http:porter:80/proxy",
        "/api/v1/namespaces/default/services/proxy-service/proxy",
        "/api/v1/namespaces/default/services/proxy-service:80/proxy",
        "/api/v1/namespaces/default/services/http:proxy-service:80/proxy",
    ];
    for base in bases {
        for method in ["DELETE", "OPTIONS", "PATCH", "POST", "PUT", "GET"] {
            // With a path (ProxyWithPath) and with a query only (Proxy).
            for (suffix, target) in [
                (format!("/some/path/with/{method}"), format!("/some/path/with/{method}")),
                (format!("?method={method}"), format!("/?method={method}")),
            ] {
                let path = format!("{base}{suffix}");
                let body = proxied(server, method, &path);
                let answer: serde_json::Value = serde_json::from_str(&body)
                    .unwrap_or_else(|e| panic!("{method} {path}: {e}: {body:?}"));
                assert_eq!(answer["Method"], method, "{path}: {answer}");
                assert_eq!(answer["Body"], "foo", "{path}: {answer}");
                assert_eq!(answer["Target"], target.as_str(), "{path}: {answer}");
            }
        }
        // The redirect itself: to the root with its slash, the query kept.
        let redirect = server.curl(&[], &format!("{base}?method=GET"));
        assert_eq!(redirect.code, 301, "{base}: {}", redirect.headers);
        assert!(
            redirect.headers.contains(&format!("location: {base}/?method=GET")),
            "{}",
            redirect.headers
        );
        // HEAD: 200 and the pod's headers (curl -I reads no body).
        let head = server.curl(&["-I"], &format!("{base}/some/path/with/HEAD"));
        assert_eq!(head.code, 200, "HEAD {base}: {}", head.headers);
        assert!(
            head.headers.to_lowercase().contains("content-type: application/json"),
            "{}",
            head.headers
        );
    }
}

/// A pod on hostPort `port` (`protocol`, `host_ip`) answering its name on container port 8080.
fn host_port_pod(name: &str, port: u16, protocol: &str, host_ip: &str) -> String {
    let listen = match protocol {
        "UDP" => "UDP4-RECVFROM:8080,fork",
        _ => "TCP4-LISTEN:8080,fork,reuseaddr",
    };
    format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: {name}, labels: {{app: host-port}}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: "{TOOLS}"
    imagePullPolicy: IfNotPresent
    command: ["socat", "{listen}", "SYSTEM:hostname"]
    ports: [{{containerPort: 8080, hostPort: {port}, hostIP: "{host_ip}", protocol: {protocol}}}]
"#
    )
}

fn pod_ip(node: &NodeServer, pod: &str) -> String {
    node.wait_for(
        &["get", "pod", pod, "-o", "jsonpath={.status.podIP}"],
        Duration::from_secs(90),
        |ip| !ip.is_empty(),
    )
}

fn wait_running(node: &NodeServer, pod: &str) {
    node.wait_for(
        &["get", "pod", pod, "-o", "jsonpath={.status.phase}"],
        Duration::from_secs(90),
        |p| p == "Running",
    );
}

#[test]
fn host_ports_differing_by_address_or_protocol_coexist_and_pods_talk_udp() {
    ensure_tools_image();
    let node = NodeServer::start();
    let server = &node.server;
    // The node's address in tests is loopback: its second address is the pod bridge's
    // gateway, which this node made.
    let node_ip = node.gateway().to_string();

    // Three pods on one hostPort (a free port of this machine, so no one else's traffic is
    // caught): TCP on 127.0.0.1, TCP on the gateway, UDP on the gateway.
    let port = rkube_store::testing::free_port();
    let pods = [
        ("pod1", "TCP", "127.0.0.1"),
        ("pod2", "TCP", node_ip.as_str()),
        ("pod3", "UDP", node_ip.as_str()),
    ];
    for (name, protocol, host_ip) in pods {
        server.ok_stdin(&["apply", "-f", "-"], &host_port_pod(name, port, protocol, host_ip));
    }
    for (name, _, _) in pods {
        wait_running(&node, name);
    }
    let at = |ip: &str| -> SocketAddr { format!("{ip}:{port}").parse().unwrap() };
    eventually(Duration::from_secs(30), "127.0.0.1 reaches pod1", || {
        ask_tcp(at("127.0.0.1")).as_deref() == Some("pod1")
    });
    eventually(Duration::from_secs(30), "the gateway reaches pod2", || {
        ask_tcp(at(&node_ip)).as_deref() == Some("pod2")
    });
    let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    eventually(Duration::from_secs(30), "UDP to the gateway reaches pod3", || {
        ask_udp(&socket, at(&node_ip)).as_deref() == Some("pod3")
    });
    // A fourth on the same hostIP, port and protocol as pod2 does not fit the node.
    server.ok_stdin(&["apply", "-f", "-"], &host_port_pod("pod4", port, "TCP", &node_ip));
    let reason = node.wait_for(
        &[
            "get",
            "pod",
            "pod4",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}",
        ],
        Duration::from_secs(30),
        |m| !m.is_empty(),
    );
    assert!(reason.contains("didn't have free ports for the requested pod ports"), "{reason}");

    // UDP pod to pod: a client pod sends to pod3's IP and container port.
    let server_ip = pod_ip(&node, "pod3");
    server.ok(&[
        "run",
        "client",
        "--image",
        TOOLS,
        "--image-pull-policy",
        "IfNotPresent",
        "--",
        "sleep",
        "3600",
    ]);
    wait_running(&node, "client");
    let udp_to = format!("UDP4:{server_ip}:8080");
    eventually(Duration::from_secs(30), "client pod reaches pod3 over UDP", || {
        let out = server.kubectl(&[
            "exec",
            "client",
            "--",
            "sh",
            "-c",
            &format!("echo who | socat -T2 - {udp_to}"),
        ]);
        String::from_utf8_lossy(&out.stdout).trim() == "pod3"
    });
    // From the node's network (a hostNetwork pod) to the pod's IP.
    server.ok_stdin(
        &["apply", "-f", "-"],
        &format!(
            r#"
apiVersion: v1
kind: Pod
metadata: {{name: host-client}}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - {{name: app, image: "{TOOLS}", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}}
"#
        ),
    );
    wait_running(&node, "host-client");
    eventually(Duration::from_secs(30), "a hostNetwork pod reaches pod3 over UDP", || {
        let out = server.kubectl(&[
            "exec",
            "host-client",
            "--",
            "sh",
            "-c",
            &format!("echo who | socat -T2 - {udp_to}"),
        ]);
        String::from_utf8_lossy(&out.stdout).trim() == "pod3"
    });
    // And the test process on the node, straight to the pod's IP.
    assert_route_is_local(&server_ip);
    let direct: SocketAddr = format!("{server_ip}:8080").parse().unwrap();
    eventually(Duration::from_secs(30), "the node reaches pod3 over UDP", || {
        ask_udp(&socket, direct).as_deref() == Some("pod3")
    });
}
