//! The service proxy of a real node (`rkube server` with its kubelet on Docker and its
//! proxy writing this machine's iptables under a chain prefix of the test's own): cluster
//! IPs reach their endpoints from the node and from pods, traffic spreads over every
//! endpoint, a Service without endpoints refuses at once, and a deleted Service's rules go.
//! Every address is checked local (`ip route get`) before anything connects to it.

use std::collections::BTreeSet;
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use rkube_conformance::node::{assert_route_is_local, NodeServer};

const PODS: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: web-a}
spec:
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "while true; do echo reply-from-web-a | nc -l -p 8080; done"]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-b}
spec:
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "while true; do echo reply-from-web-b | nc -l -p 8080; done"]}
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ports: [{port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: empty}
spec:
  ports: [{port: 80, protocol: TCP}]
"#;

fn iptables_save() -> String {
    let out = Command::new("iptables-save").output().expect("iptables-save");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One answer through `addr`, or the error of the last try (an endpoint's `nc` loop is
/// briefly not listening between two connections).
fn ask(addr: SocketAddr) -> std::io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer.trim().to_string())
}

#[test]
fn cluster_ips_reach_their_endpoints_and_refuse_without_them() {
    let node = NodeServer::start_with_proxy(&[]);
    let server = &node.server;
    let prefix = node.proxy_prefix.clone().unwrap();
    server.ok_stdin(&["apply", "-f", "-"], PODS);
    let ip_of = |pod: &str| {
        node.wait_for(
            &["get", "pod", pod, "-o", "jsonpath={.status.phase} {.status.podIP}"],
            Duration::from_secs(60),
            |t| t.starts_with("Running ") && t.len() > "Running ".len(),
        )
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string()
    };
    let (a, b) = (ip_of("web-a"), ip_of("web-b"));
    ip_of("client");
    // The endpoints, written by hand (a Service without a selector).
    let slice = format!(
        r#"{{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {{"name": "web-1", "labels": {{"kubernetes.io/service-name": "web"}}}},
            "addressType": "IPv4", "ports": [{{"port": 8080, "protocol": "TCP"}}],
            "endpoints": [{{"addresses": ["{a}"], "nodeName": "{n}"}},
                          {{"addresses": ["{b}"], "nodeName": "{n}"}}]}}"#,
        n = node.node
    );
    server.ok_stdin(&["apply", "-f", "-"], &slice);
    let cluster_ip =
        |svc: &str| server.ok(&["get", "svc", svc, "-o", "jsonpath={.spec.clusterIP}"]);
    let (web, empty) = (cluster_ip("web"), cluster_ip("empty"));
    assert_route_is_local(&web);
    assert_route_is_local(&empty);
    // The proxy programs what it saw within its 100 ms batching.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !iptables_save().contains(&format!("-A {prefix}-SEP-")) {
        assert!(Instant::now() < deadline, "no rules for web:\n{}", iptables_save());
        std::thread::sleep(Duration::from_millis(100));
    }

    // From the node: both endpoints answer through the cluster IP.
    let addr: SocketAddr = format!("{web}:80").parse().unwrap();
    let mut seen = BTreeSet::new();
    for _ in 0..60 {
        if let Ok(answer) = ask(addr) {
            seen.insert(answer);
        }
        if seen.len() == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        seen,
        BTreeSet::from(["reply-from-web-a".to_string(), "reply-from-web-b".to_string()]),
        "60 connections to {web} should reach both endpoints"
    );

    // From a pod, by cluster IP.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = server.kubectl(&["exec", "client", "--", "nc", "-w", "2", &web, "80"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if text.contains("reply-from-web-") {
            break;
        }
        assert!(Instant::now() < deadline, "the client pod did not reach {web}: {text:?} {out:?}");
        std::thread::sleep(Duration::from_millis(200));
    }

    // Without endpoints: refused at once.
    let started = Instant::now();
    let refused =
        TcpStream::connect_timeout(&format!("{empty}:80").parse().unwrap(), Duration::from_secs(3));
    let error = refused.expect_err("a Service without endpoints must refuse");
    assert_eq!(error.kind(), std::io::ErrorKind::ConnectionRefused, "{error}");
    assert!(started.elapsed() < Duration::from_secs(1), "took {:?}", started.elapsed());

    // A Deployment exposed the usual way: the endpoint controllers fill its slices and
    // the proxy sends its cluster IP's traffic to them.
    server.ok(&[
        "create",
        "deployment",
        "echo",
        "--image",
        "busybox:1.36",
        "--replicas",
        "2",
        "--",
        "sh",
        "-c",
        "while true; do echo reply-from-echo | nc -l -p 8080; done",
    ]);
    server.ok(&[
        "expose",
        "deployment",
        "echo",
        "--port",
        "80",
        "--target-port",
        "8080",
        "--type",
        "NodePort",
    ]);
    let echo = cluster_ip("echo");
    assert_route_is_local(&echo);
    let addr: SocketAddr = format!("{echo}:80").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if ask(addr).is_ok_and(|answer| answer == "reply-from-echo") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the exposed Deployment never answered on {echo}:\n{}",
            server.ok(&["get", "pods,endpointslices", "-o", "wide"])
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // Its NodePort answers on the node's loopback too, as upstream's proxy allows.
    let node_port = server.ok(&["get", "svc", "echo", "-o", "jsonpath={.spec.ports[0].nodePort}"]);
    let local: SocketAddr = format!("127.0.0.1:{node_port}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if ask(local).is_ok_and(|answer| answer == "reply-from-echo") {
            break;
        }
        assert!(Instant::now() < deadline, "nothing answered on {local}:\n{}", iptables_save());
        std::thread::sleep(Duration::from_millis(200));
    }

    // Deleting the Service removes its rules.
    let before = iptables_save();
    assert!(before.contains("\"default/web cluster IP\""));
    server.ok(&["delete", "svc", "web"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = iptables_save();
        if !now.contains("default/web") {
            for ip in [&a, &b] {
                let dnat = format!("--to-destination {ip}:8080");
                assert!(!now.contains(&dnat), "stale endpoint chains:\n{now}");
            }
            break;
        }
        assert!(Instant::now() < deadline, "web's rules stayed:\n{now}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The kubernetes Service's chain is kube-proxy's name under the prefix.
    assert!(iptables_save().contains(&format!(":{prefix}-SVC-NPX46M4PTMTKRN6Y")));

    // After the first (full) sync, the changes went in as partial syncs, and each
    // endpoint change the endpoint controller stamped was timed to its rules.
    let metric = |name: &str| node.proxy_metric(name).unwrap_or_else(|| panic!("no {name}"));
    assert!(metric("kubeproxy_sync_full_proxy_rules_duration_seconds_count") >= 1.0);
    assert!(metric("kubeproxy_sync_partial_proxy_rules_duration_seconds_count") >= 2.0);
    assert!(
        metric("kubeproxy_network_programming_duration_seconds_count") >= 1.0,
        "{}\n{}",
        server.ok(&["get", "endpointslices", "-o", "yaml"]),
        server.log()
    );
    assert!(metric("kubeproxy_sync_proxy_rules_endpoint_changes_total") >= 2.0);
    assert_eq!(metric("kubeproxy_sync_proxy_rules_iptables_restore_failures_total"), 0.0);
}

const HTTPD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: httpd, labels: {app: httpd}}
spec:
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["httpd", "-f", "-p", "8080", "-h", "/var/www"], ports: [{containerPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: site}
spec:
  selector: {app: httpd}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: nobody}
spec:
  selector: {app: nobody}
  ports: [{name: http, port: 80}]
"#;

/// `services/{name}/proxy` through the API server (no service proxy needed: the API server
/// dials an endpoint's pod IP), by port number, port name and scheme, and upstream's 503s.
#[test]
fn services_proxy_reaches_an_endpoint_through_the_api_server() {
    let node = NodeServer::start();
    let server = &node.server;
    server.ok_stdin(&["apply", "-f", "-"], HTTPD);
    let ip = node.wait_for(
        &["get", "endpoints", "site", "-o", "jsonpath={.subsets[0].addresses[0].ip}"],
        Duration::from_secs(60),
        |ip| !ip.is_empty(),
    );
    assert_route_is_local(&ip);
    let base = "/api/v1/namespaces/default/services";
    for id in ["site:80", "site:http", "http:site:80"] {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let out = server.kubectl(&["get", "--raw", &format!("{base}/{id}/proxy/index.html")]);
            if String::from_utf8_lossy(&out.stdout) == "hello from busybox\n" {
                break;
            }
            assert!(Instant::now() < deadline, "{id}: {out:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let error = server.fails(&["get", "--raw", &format!("{base}/site:81/proxy/")]);
    assert!(
        error.contains(
            "Error from server (ServiceUnavailable): no service port 81 found for service \"site\""
        ),
        "{error}"
    );
    // Without a port, the port named "" is meant: site has none (upstream's answer too).
    let error = server.fails(&["get", "--raw", &format!("{base}/site/proxy/")]);
    assert!(error.contains("no endpoints available for service \"site\""), "{error}");
    let error = server.fails(&["get", "--raw", &format!("{base}/nobody/proxy/")]);
    assert!(
        error.contains("(ServiceUnavailable): no endpoints available for service \"nobody\""),
        "{error}"
    );
    let error = server.fails(&["get", "--raw", &format!("{base}/missing/proxy/")]);
    assert!(error.contains("(NotFound)"), "{error}");
}
