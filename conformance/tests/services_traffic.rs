//! What a Service's traffic does on a real node (Docker, the service proxy in this machine's
//! iptables), seen from the node through cluster IPs: `sessionAffinity: ClientIP` keeps a
//! client on one endpoint, an endpoint that goes not-ready leaves the rotation, UDP works and
//! a UDP client that keeps sending is moved off an endpoint that left (its conntrack flow
//! deleted), an external IP and a LoadBalancer ingress address take the Service's traffic.
//! Every address is checked local (`ip route get`) before anything is sent to it.

use std::collections::BTreeSet;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use rkube_conformance::cluster::jsonpath;
use rkube_conformance::node::{assert_route_is_local, ensure_tools_image, NodeServer, TOOLS};
use rkube_conformance::traffic::{ask_tcp, ask_udp, eventually, spread};

/// Two pods answering their name on TCP 8080 and UDP 9090, ready while /tmp/ready exists;
/// three Services on them.
fn manifests() -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
      - name: app
        image: "{TOOLS}"
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "touch /tmp/ready; socat UDP4-RECVFROM:9090,fork SYSTEM:hostname & socat TCP4-LISTEN:8080,fork,reuseaddr SYSTEM:hostname"]
        readinessProbe: {{exec: {{command: ["test", "-f", "/tmp/ready"]}}, periodSeconds: 1, failureThreshold: 1}}
---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec:
  selector: {{app: web}}
  ports: [{{name: tcp, port: 80, targetPort: 8080}}, {{name: udp, port: 90, targetPort: 9090, protocol: UDP}}]
---
apiVersion: v1
kind: Service
metadata: {{name: sticky}}
spec:
  selector: {{app: web}}
  sessionAffinity: ClientIP
  sessionAffinityConfig: {{clientIP: {{timeoutSeconds: 600}}}}
  ports: [{{port: 80, targetPort: 8080}}]
"#
    )
}

#[test]
fn affinity_readiness_and_udp_through_cluster_ips() {
    ensure_tools_image();
    let node = NodeServer::start_with_proxy(&[]);
    let server = &node.server;
    server.ok_stdin(&["apply", "-f", "-"], &manifests());
    let ready = |text: &str| text.split_whitespace().count() == 2;
    let names = node.wait_for(
        &[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            &jsonpath("{.items[?(@.status.podIP)].metadata.name}"),
        ],
        Duration::from_secs(90),
        ready,
    );
    let pods: BTreeSet<String> = names.split_whitespace().map(String::from).collect();
    let ip_of = |svc: &str| server.ok(&["get", "svc", svc, "-o", &jsonpath("{.spec.clusterIP}")]);
    let (web, sticky) = (ip_of("web"), ip_of("sticky"));
    assert_route_is_local(&web);
    assert_route_is_local(&sticky);
    let web_tcp: SocketAddr = format!("{web}:80").parse().unwrap();
    let web_udp: SocketAddr = format!("{web}:90").parse().unwrap();
    let sticky_tcp: SocketAddr = format!("{sticky}:80").parse().unwrap();

    // Both endpoints serve web.
    eventually(Duration::from_secs(60), "web spreads over both pods", || {
        spread(web_tcp, 20).into_iter().collect::<BTreeSet<_>>() == pods
    });

    // sticky keeps this client on one of them.
    let first = (0..50).find_map(|_| ask_tcp(sticky_tcp)).expect("sticky answers");
    let answers = spread(sticky_tcp, 20);
    assert!(answers.len() >= 15, "{answers:?}");
    assert!(answers.iter().all(|a| *a == first), "affinity broken: {first} then {answers:?}");

    // UDP: a client with one source port reaches one endpoint, and keeps reaching it.
    let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let mut udp_first = None;
    eventually(Duration::from_secs(30), "web answers on UDP", || {
        udp_first = ask_udp(&socket, web_udp);
        udp_first.is_some()
    });
    let left = udp_first.unwrap();
    assert!(pods.contains(&left), "{left}");
    // (socat may miss a datagram between two of its forks: an unanswered one is no answer.)
    let answers: Vec<String> = (0..8).filter_map(|_| ask_udp(&socket, web_udp)).collect();
    assert!(answers.len() >= 3 && answers.iter().all(|a| *a == left), "{left}: {answers:?}");

    // That pod goes not-ready: it leaves the rotation, for new TCP connections and for the
    // UDP client that keeps sending from the same port (its flow deleted, or it would keep
    // reaching the pod for as long as it sends).
    server.ok(&["exec", &left, "--", "rm", "/tmp/ready"]);
    let other: String = pods.iter().find(|p| **p != left).unwrap().clone();
    eventually(Duration::from_secs(30), "the not-ready pod leaves the endpoints", || {
        let addresses = server.ok(&[
            "get",
            "endpoints",
            "web",
            "-o",
            &jsonpath("{.subsets[*].addresses[*].targetRef.name}"),
        ]);
        addresses.trim() == other
    });
    eventually(Duration::from_secs(30), "TCP goes to the ready pod only", || {
        let answers = spread(web_tcp, 20);
        answers.len() >= 15 && answers.iter().all(|a| *a == other)
    });
    eventually(Duration::from_secs(10), "the UDP client is moved to the ready pod", || {
        ask_udp(&socket, web_udp).as_deref() == Some(other.as_str())
    });
    for _ in 0..5 {
        let answer = ask_udp(&socket, web_udp);
        assert!(answer.is_none() || answer.as_deref() == Some(other.as_str()), "{answer:?}");
    }

    // An external IP (one of the test's own service CIDR, routed to its proxy's device)
    // takes the Service's traffic too.
    let external = format!("{}.250", web.rsplit_once('.').unwrap().0);
    assert_route_is_local(&external);
    let patch = format!(r#"{{"spec":{{"externalIPs":["{external}"]}}}}"#);
    server.ok(&["patch", "svc", "web", "-p", &patch]);
    let external_tcp: SocketAddr = format!("{external}:80").parse().unwrap();
    eventually(Duration::from_secs(30), "the external IP answers", || {
        ask_tcp(external_tcp).as_deref() == Some(other.as_str())
    });

    // A LoadBalancer Service gets the node's address as its ingress (as k3s's ServiceLB),
    // and answers there. Its port is a free one: the rules catch that port on that address
    // for the whole machine while the test runs.
    let port = rkube_store::testing::free_port().to_string();
    server.ok(&[
        "expose",
        "deployment",
        "web",
        "--name",
        "lb",
        "--type",
        "LoadBalancer",
        "--port",
        &port,
        "--target-port",
        "8080",
    ]);
    let ingress = node.wait_for(
        &["get", "svc", "lb", "-o", &jsonpath("{.status.loadBalancer.ingress[0].ip}")],
        Duration::from_secs(30),
        |ip| !ip.is_empty(),
    );
    let node_ip = node.internal_ip();
    assert_eq!(ingress, node_ip.trim());
    let columns = server.ok(&["get", "svc", "lb"]);
    let row = columns.lines().find(|l| l.starts_with("lb ")).unwrap_or_default();
    assert!(row.contains("LoadBalancer") && row.contains(&ingress), "{columns}");
    assert_route_is_local(&ingress);
    let lb: SocketAddr = format!("{ingress}:{port}").parse().unwrap();
    eventually(Duration::from_secs(30), "the load balancer address answers", || {
        ask_tcp(lb).as_deref() == Some(other.as_str())
    });
}
