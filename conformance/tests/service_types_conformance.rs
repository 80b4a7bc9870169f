//! What upstream's Service conformance tests check on a node, on a real one here (Docker,
//! the service proxy in this machine's iptables, the node's cluster DNS), seen from the test
//! process on the node:
//! - a Service changed between ExternalName, ClusterIP and NodePort gets and gives back its
//!   cluster IP and node port, its traffic follows, and the cluster DNS answers it by a CNAME
//!   or by its address (upstream's four "change type" tests and "DNS for ExternalName");
//! - a NodePort Service answers on the node's address and its node port, and session
//!   affinity switched between ClientIP and None is kept or dropped through the cluster IP and
//!   the node port alike (upstream's NodePort and session affinity tests);
//! - endpoints follow pods that each serve one of a Service's named ports, one port number
//!   serves TCP and UDP, and 200 Services get their endpoints within upstream's thresholds
//!   (multiport endpoints, same port different protocols, endpoint latency).
//!
//! Every address is checked local (`ip route get`) before anything is sent to it. Each test's
//! node ports come from a range of its own, below the ephemeral ports other tests' servers
//! listen on.

use std::collections::BTreeSet;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use hickory_proto::op::Message;
use hickory_proto::rr::RecordType;
use rkube_conformance::cluster::{jsonpath, RkubeServer};
use rkube_conformance::dns::{answers, ask};
use rkube_conformance::node::{assert_route_is_local, ensure_tools_image, NodeServer, TOOLS};
use rkube_conformance::traffic::{ask_tcp, ask_udp, eventually, spread};

/// A node with its proxy whose node ports are ten of the default range, picked by this test
/// process (tests run as processes of their own, so two running tests rarely share a range).
fn node_with_own_node_ports() -> (NodeServer, u16) {
    let first = 30000 + (std::process::id() % 276) as u16 * 10;
    let range = format!("{first}-{}", first + 9);
    (NodeServer::start_with_proxy(&["--service-node-port-range", &range]), first)
}

/// `replicas` pods labelled `app=<name>` answering their name on TCP and UDP 8080.
fn echo_deployment(name: &str, replicas: usize) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: "{TOOLS}"
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "socat UDP4-RECVFROM:8080,fork SYSTEM:hostname & socat TCP4-LISTEN:8080,fork,reuseaddr SYSTEM:hostname"]
        ports: [{{containerPort: 8080}}]
        readinessProbe: {{tcpSocket: {{port: 8080}}, periodSeconds: 1}}
"#
    )
}

/// The names of the ready pods labelled `app=<app>`, once there are `count`.
fn ready_pods(node: &NodeServer, app: &str, count: usize) -> BTreeSet<String> {
    let selector = format!("app={app}");
    let path = jsonpath(
        "{range .items[*]}{.metadata.name} {.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}",
    );
    let text = node.wait_for(
        &["get", "pods", "-l", &selector, "-o", &path],
        Duration::from_secs(120),
        |t| t.lines().filter(|l| l.ends_with(" True")).count() == count,
    );
    text.lines().filter_map(|l| l.strip_suffix(" True")).map(String::from).collect()
}

fn service_field(server: &RkubeServer, name: &str, path: &str) -> String {
    server.ok(&["get", "svc", name, "-o", &jsonpath(path)]).trim().to_string()
}

/// Asks `name`'s `qtype` records until the answer section reads `want`, sorted (at most
/// 30 s).
fn dns_answers(dns: SocketAddr, name: &str, qtype: RecordType, want: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last: Option<Message> = None;
    loop {
        if let Ok(reply) = ask(dns, name, qtype) {
            if answers(&reply) == want {
                return;
            }
            last = Some(reply);
        }
        assert!(Instant::now() < deadline, "{name}: want {want:?}, last answer {last:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn addr(ip: &str, port: &str) -> SocketAddr {
    format!("{ip}:{port}").parse().unwrap_or_else(|_| panic!("not an address: {ip}:{port}"))
}

#[test]
fn type_changes_give_and_take_back_cluster_ips_node_ports_and_dns_names() {
    ensure_tools_image();
    let (node, first_port) = node_with_own_node_ports();
    let server = &node.server;
    let dns = SocketAddr::new(node.gateway().into(), 53);
    let node_ip = node.internal_ip();
    server.ok_stdin(&["apply", "-f", "-"], &echo_deployment("echo", 2));
    let pods = ready_pods(&node, "echo", 2);
    // The ExternalName's target: a ClusterIP Service of the pods.
    server.ok(&[
        "expose",
        "deployment",
        "echo",
        "--name",
        "target",
        "--port",
        "80",
        "--target-port",
        "8080",
    ]);
    let target_ip = service_field(server, "target", "{.spec.clusterIP}");
    let target_name = "target.default.svc.cluster.local";

    // An ExternalName Service: a CNAME in the cluster DNS (followed to the target's address
    // for an address question), no cluster IP, no rules.
    server.ok(&["create", "service", "externalname", "svc", "--external-name", target_name]);
    assert_eq!(service_field(server, "svc", "{.spec.clusterIP}"), "");
    let svc_name = "svc.default.svc.cluster.local";
    let cname = [format!("CNAME {target_name}.")];
    dns_answers(dns, svc_name, RecordType::CNAME, &cname);
    let followed = [format!("A {target_ip}"), format!("CNAME {target_name}.")];
    dns_answers(dns, svc_name, RecordType::A, &followed);
    // Its name changed: so is the CNAME (upstream's "DNS for ExternalName services").
    server.ok(&["patch", "svc", "svc", "-p", r#"{"spec":{"externalName":"other.example.com"}}"#]);
    dns_answers(dns, svc_name, RecordType::CNAME, &["CNAME other.example.com.".to_string()]);

    // ExternalName to ClusterIP: a cluster IP is allocated, the pods answer through it and
    // the DNS answers its address.
    let to_cluster_ip = r#"{"spec":{"type":"ClusterIP","externalName":null,"selector":{"app":"echo"},"ports":[{"port":80,"targetPort":8080,"protocol":"TCP"}]}}"#;
    server.ok(&["patch", "svc", "svc", "-p", to_cluster_ip]);
    let cluster_ip = service_field(server, "svc", "{.spec.clusterIP}");
    assert_eq!(service_field(server, "svc", "{.spec.clusterIPs[0]}"), cluster_ip);
    assert_route_is_local(&cluster_ip);
    let through_cluster_ip = addr(&cluster_ip, "80");
    eventually(Duration::from_secs(60), "both pods answer through the new cluster IP", || {
        spread(through_cluster_ip, 20).into_iter().collect::<BTreeSet<_>>() == pods
    });
    dns_answers(dns, svc_name, RecordType::A, &[format!("A {cluster_ip}")]);

    // ClusterIP to ExternalName: the cluster IP is given back (no IP in the spec, no rule
    // left for it) and the name is a CNAME again, to the target that still answers.
    let to_external =
        format!(r#"{{"spec":{{"type":"ExternalName","externalName":"{target_name}"}}}}"#);
    server.ok(&["patch", "svc", "svc", "-p", &to_external]);
    assert_eq!(service_field(server, "svc", "{.spec.clusterIP}{.spec.clusterIPs}"), "");
    dns_answers(dns, svc_name, RecordType::A, &followed);
    eventually(Duration::from_secs(30), "the old cluster IP stops answering", || {
        ask_tcp(through_cluster_ip).is_none()
    });
    assert!(pods.contains(&ask_tcp(addr(&target_ip, "80")).expect("the target answers")));
    // A pod reaches it by its short name, as upstream checks: its resolver (glibc, with the
    // namespace's search path) follows the CNAME to the target's cluster IP.
    let from_pod = pods.iter().next().unwrap();
    let mut by_name = String::new();
    eventually(Duration::from_secs(30), "a pod reaches svc by name", || {
        let out = server.kubectl(&["exec", from_pod, "--", "socat", "-T2", "-", "TCP:svc:80"]);
        by_name = String::from_utf8_lossy(&out.stdout).trim().to_string();
        pods.contains(&by_name)
    });

    // ExternalName to NodePort: a cluster IP and a node port of the range; the pods answer
    // on the node's address and on loopback at that port.
    let to_node_port = r#"{"spec":{"type":"NodePort","externalName":null,"ports":[{"port":80,"targetPort":8080,"protocol":"TCP"}]}}"#;
    server.ok(&["patch", "svc", "svc", "-p", to_node_port]);
    let node_port = service_field(server, "svc", "{.spec.ports[0].nodePort}");
    let port: u16 = node_port.parse().expect("a node port");
    assert!((first_port..first_port + 10).contains(&port), "{port} outside {first_port}+10");
    assert!(!service_field(server, "svc", "{.spec.clusterIP}").is_empty());
    for ip in [node_ip.as_str(), "127.0.0.1"] {
        let at = addr(ip, &node_port);
        eventually(Duration::from_secs(60), &format!("both pods answer at {at}"), || {
            spread(at, 20).into_iter().collect::<BTreeSet<_>>() == pods
        });
    }

    // NodePort to ExternalName: the node port is given back: nothing answers there, and
    // another Service can take it.
    server.ok(&["patch", "svc", "svc", "-p", &to_external]);
    assert_eq!(service_field(server, "svc", "{.spec.ports[0].nodePort}{.spec.clusterIP}"), "");
    let at_node_port = addr(&node_ip, &node_port);
    eventually(Duration::from_secs(30), "the node port stops answering", || {
        ask_tcp(at_node_port).is_none()
    });
    server.ok(&[
        "create",
        "service",
        "nodeport",
        "again",
        "--tcp",
        "80:8080",
        "--node-port",
        &node_port,
    ]);
    dns_answers(dns, svc_name, RecordType::CNAME, &cname);
}

/// Whether `count` connections through `at` all reach one pod (`Some(true)`), spread over
/// more than one (`Some(false)`), or too few were answered to say.
fn sticks(at: SocketAddr, count: usize) -> Option<bool> {
    let answers = spread(at, count);
    if answers.len() < count * 3 / 4 {
        return None;
    }
    Some(answers.iter().collect::<BTreeSet<_>>().len() == 1)
}

#[test]
fn node_ports_answer_and_session_affinity_switches_on_both_addresses() {
    ensure_tools_image();
    let (node, _) = node_with_own_node_ports();
    let server = &node.server;
    let node_ip = node.internal_ip();
    server.ok_stdin(&["apply", "-f", "-"], &echo_deployment("echo", 3));
    let pods = ready_pods(&node, "echo", 3);
    // A NodePort Service with ClientIP affinity (upstream's "NodePort type, session
    // affinity to ClientIP", then switched as in "session affinity to None").
    server.ok_stdin(
        &["apply", "-f", "-"],
        r#"
apiVersion: v1
kind: Service
metadata: {name: affinity}
spec:
  type: NodePort
  selector: {app: echo}
  sessionAffinity: ClientIP
  ports: [{port: 80, targetPort: 8080}]
"#,
    );
    assert_eq!(
        service_field(server, "affinity", "{.spec.sessionAffinityConfig.clientIP.timeoutSeconds}"),
        "10800"
    );
    let cluster_ip = service_field(server, "affinity", "{.spec.clusterIP}");
    assert_route_is_local(&cluster_ip);
    let node_port = service_field(server, "affinity", "{.spec.ports[0].nodePort}");
    let addresses = [addr(&cluster_ip, "80"), addr(&node_ip, &node_port)];

    // A functioning NodePort Service: every pod is reached on the node's address, over
    // the connections of many clients... here, one client that sticks: so first through the
    // affinity, each address keeps this client on one pod.
    for at in addresses {
        eventually(Duration::from_secs(60), &format!("{at} keeps this client on one pod"), || {
            sticks(at, 20) == Some(true)
        });
    }
    // Affinity off: the connections spread over the pods.
    server.ok(&["patch", "svc", "affinity", "-p", r#"{"spec":{"sessionAffinity":"None"}}"#]);
    assert_eq!(service_field(server, "affinity", "{.spec.sessionAffinityConfig}"), "");
    for at in addresses {
        eventually(Duration::from_secs(30), &format!("{at} spreads over the pods"), || {
            spread(at, 30).into_iter().collect::<BTreeSet<_>>() == pods
        });
    }
    // And on again: one pod per client once more.
    server.ok(&["patch", "svc", "affinity", "-p", r#"{"spec":{"sessionAffinity":"ClientIP"}}"#]);
    for at in addresses {
        eventually(Duration::from_secs(30), &format!("{at} sticks again"), || {
            sticks(at, 20) == Some(true)
        });
    }
}

/// The endpoints of `service` as `pod:port,port` entries of each subset, sorted.
fn endpoints_of(server: &RkubeServer, service: &str) -> Vec<String> {
    let path = jsonpath(
        "{range .subsets[*]}{range .addresses[*]}{.targetRef.name}{\" \"}{end}{\"|\"}{range .ports[*]}{.name}={.port}{\",\"}{end}{\"\\n\"}{end}",
    );
    let out = server.kubectl(&["get", "endpoints", service, "-o", &path]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut entries = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (pods, ports) = line.split_once('|').unwrap_or((line, ""));
        let mut ports: Vec<&str> = ports.split(',').filter(|p| !p.is_empty()).collect();
        ports.sort();
        for pod in pods.split_whitespace() {
            entries.push(format!("{pod}:{}", ports.join(",")));
        }
    }
    entries.sort();
    entries
}

fn wait_endpoints(server: &RkubeServer, service: &str, want: &[&str]) {
    eventually(Duration::from_secs(60), &format!("endpoints of {service} are {want:?}"), || {
        endpoints_of(server, service) == want
    });
}

/// A pod labelled `app=multi` serving its name on TCP `port`, which it names `name`.
fn named_port_pod(pod: &str, name: &str, port: u16) -> String {
    format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: {pod}, labels: {{app: multi}}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: "{TOOLS}"
    imagePullPolicy: IfNotPresent
    command: ["socat", "TCP4-LISTEN:{port},fork,reuseaddr", "SYSTEM:hostname"]
    ports: [{{name: {name}, containerPort: {port}}}]
"#
    )
}

#[test]
fn endpoints_follow_named_ports_and_one_port_serves_two_protocols() {
    ensure_tools_image();
    let (node, _) = node_with_own_node_ports();
    let server = &node.server;

    // Two ports that target named container ports (upstream's "multiport endpoints").
    server.ok_stdin(
        &["apply", "-f", "-"],
        r#"
apiVersion: v1
kind: Service
metadata: {name: multi}
spec:
  selector: {app: multi}
  ports:
  - {name: portname1, port: 80, targetPort: svc1}
  - {name: portname2, port: 81, targetPort: svc2}
"#,
    );
    wait_endpoints(server, "multi", &[]);
    server.ok_stdin(&["apply", "-f", "-"], &named_port_pod("pod1", "svc1", 100));
    wait_endpoints(server, "multi", &["pod1:portname1=100"]);
    server.ok_stdin(&["apply", "-f", "-"], &named_port_pod("pod2", "svc2", 101));
    wait_endpoints(server, "multi", &["pod1:portname1=100", "pod2:portname2=101"]);
    // Each Service port reaches the one pod that serves it.
    let cluster_ip = service_field(server, "multi", "{.spec.clusterIP}");
    assert_route_is_local(&cluster_ip);
    for (port, pod) in [("80", "pod1"), ("81", "pod2")] {
        let at = addr(&cluster_ip, port);
        eventually(Duration::from_secs(30), &format!("{at} reaches {pod}"), || {
            ask_tcp(at).as_deref() == Some(pod)
        });
    }
    server.ok(&["delete", "pod", "pod1", "--wait=false"]);
    wait_endpoints(server, "multi", &["pod2:portname2=101"]);
    server.ok(&["delete", "pod", "pod2", "--wait=false"]);
    wait_endpoints(server, "multi", &[]);

    // One port number, TCP and UDP (upstream's "same port and different protocols").
    server.ok_stdin(&["apply", "-f", "-"], &echo_deployment("echo", 1));
    let pod = ready_pods(&node, "echo", 1).into_iter().next().unwrap();
    server.ok_stdin(
        &["apply", "-f", "-"],
        r#"
apiVersion: v1
kind: Service
metadata: {name: both}
spec:
  selector: {app: echo}
  ports:
  - {name: tcp-port, port: 80, targetPort: 8080, protocol: TCP}
  - {name: udp-port, port: 80, targetPort: 8080, protocol: UDP}
"#,
    );
    let path = "{range .items[*]}{range .ports[*]}{.name}/{.protocol}={.port} {end}{end}";
    let slices = node.wait_for(
        &["get", "endpointslices", "-l", "kubernetes.io/service-name=both", "-o", &jsonpath(path)],
        Duration::from_secs(30),
        |t| t.split_whitespace().count() == 2,
    );
    let mut ports: Vec<&str> = slices.split_whitespace().collect();
    ports.sort();
    assert_eq!(ports, ["tcp-port/TCP=8080", "udp-port/UDP=8080"]);
    let both_ip = service_field(server, "both", "{.spec.clusterIP}");
    assert_route_is_local(&both_ip);
    let at = addr(&both_ip, "80");
    eventually(Duration::from_secs(30), "TCP port 80 answers", || {
        ask_tcp(at).as_deref() == Some(pod.as_str())
    });
    let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    eventually(Duration::from_secs(30), "UDP port 80 answers", || {
        ask_udp(&socket, at).as_deref() == Some(pod.as_str())
    });

    // Endpoint latency (upstream's thresholds: 50th percentile within 20 s, 99th within
    // 50 s, over 200 Services of one running pod): each Service created, then timed until
    // its Endpoints name the pod.
    let services: String = (0..200)
        .map(|i| {
            format!(
                "---\napiVersion: v1\nkind: Service\nmetadata: {{name: latency-{i}}}\nspec:\n  selector: {{app: echo}}\n  ports: [{{port: 80, targetPort: 8080}}]\n"
            )
        })
        .collect();
    let started = Instant::now();
    server.ok_stdin(&["create", "-f", "-"], &services);
    let mut latencies = Vec::new();
    let mut waiting: BTreeSet<usize> = (0..200).collect();
    let deadline = started + Duration::from_secs(60);
    while !waiting.is_empty() {
        let path = jsonpath(
            "{range .items[*]}{.metadata.name} {.subsets[0].addresses[0].targetRef.name}{\"\\n\"}{end}",
        );
        let listed = server.ok(&["get", "endpoints", "-o", &path]);
        for line in listed.lines() {
            let mut words = line.split_whitespace();
            let (Some(name), Some(target)) = (words.next(), words.next()) else { continue };
            let Some(i) = name.strip_prefix("latency-").and_then(|n| n.parse::<usize>().ok())
            else {
                continue;
            };
            if target == pod && waiting.remove(&i) {
                latencies.push(started.elapsed());
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} Services without endpoints after 60 s",
            waiting.len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    latencies.sort();
    let (p50, p99) = (latencies[99], latencies[197]);
    eprintln!("endpoint latency over 200 Services: p50 {p50:?}, p99 {p99:?}");
    assert!(p50 < Duration::from_secs(20) && p99 < Duration::from_secs(50), "{p50:?} {p99:?}");
}
