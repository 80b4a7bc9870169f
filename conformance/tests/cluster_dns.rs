//! Cluster DNS of a real node (`rkube server` with its kubelet on Docker and its proxy):
//! the node's DNS, on its pod bridge's gateway, answers a Deployment's Service, a headless
//! StatefulSet's pods, an ExternalName Service (its CNAME followed), pods, PTR and unknown names as CoreDNS would,
//! over UDP and TCP; other names go to a resolver of the test's own on loopback (and get
//! SERVFAIL quickly once it is gone); a pod reaches it through the `kube-dns` Service.
//! Every address is checked local (`ip route get`) before anything is sent to it.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::RecordType;
use rkube_conformance::dns::{answers, ask, ask_tcp, Upstream};
use rkube_conformance::node::{assert_route_is_local, NodeServer};

const OBJECTS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: nginx}
spec:
  clusterIP: None
  selector: {app: nginx}
  ports: [{name: web, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: nginx
  replicas: 2
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {type: ExternalName, externalName: db.example.com}
"#;

/// Asks until `check` accepts the answer (the zone follows the cluster within moments).
fn ask_until(
    dns: SocketAddr,
    name: &str,
    qtype: RecordType,
    check: impl Fn(&Message) -> bool,
) -> Message {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let reply = ask(dns, name, qtype);
        if let Ok(reply) = &reply {
            if check(reply) {
                return reply.clone();
            }
        }
        assert!(Instant::now() < deadline, "{name} {qtype}: last answer {reply:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn soa_authority(reply: &Message) -> bool {
    reply.authorities.len() == 1
        && reply.authorities[0].record_type() == RecordType::SOA
        && reply.authorities[0].name.to_string() == "cluster.local."
}

#[test]
fn the_node_dns_answers_cluster_names_and_forwards_the_rest() {
    // A resolver of the test's own on a loopback address no other test process uses.
    let pid = std::process::id();
    let upstream_ip = IpAddr::V4(Ipv4Addr::new(127, 53, (pid >> 8) as u8, pid as u8));
    let mut upstream = Upstream::start(upstream_ip, "192.0.2.7".parse().unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let resolv = dir.path().join("resolv.conf");
    std::fs::write(&resolv, format!("nameserver {upstream_ip}\n")).unwrap();
    let node = NodeServer::start_with_proxy(&["--resolv-conf", resolv.to_str().unwrap()]);
    let server = &node.server;

    // It serves on the node's pod gateway, port 53.
    let gw = node.gateway();
    let dns = SocketAddr::new(IpAddr::V4(gw), 53);
    let service_ip =
        |svc: &str| server.ok(&["get", "svc", svc, "-o", "jsonpath={.spec.clusterIP}"]);
    let kubernetes = service_ip("kubernetes");
    ask_until(dns, "kubernetes.default.svc.cluster.local", RecordType::A, |r| {
        answers(r) == [format!("A {kubernetes}")]
    });

    // The kube-dns Service at the 10th address of the service CIDR, and this node's slice
    // for it (its DNS, on this node, ready).
    let kube_dns = server.ok(&[
        "get", "svc", "kube-dns", "-n", "kube-system", "-o",
        "jsonpath={.spec.clusterIP} {.spec.internalTrafficPolicy} {.metadata.labels.k8s-app} {.spec.ports[*].name} {.spec.ports[*].protocol}",
    ]);
    let kube_dns_ip = kube_dns.split_whitespace().next().unwrap().to_string();
    assert!(kube_dns_ip.ends_with(".10"), "{kube_dns}");
    assert_eq!(
        kube_dns.split_whitespace().skip(1).collect::<Vec<_>>(),
        ["Local", "kube-dns", "dns", "dns-tcp", "UDP", "TCP"]
    );
    // `kubectl cluster-info` lists it by its `kubernetes.io/cluster-service` label.
    let info = server.ok(&["cluster-info"]);
    assert!(
        info.contains("CoreDNS is running at") && info.contains("/services/kube-dns:dns/proxy"),
        "{info}"
    );
    let slice_name = format!("kube-dns-{}", node.node);
    let slice_path = "jsonpath={.metadata.labels.endpointslice\\.kubernetes\\.io/managed-by} {.endpoints[0].addresses[0]} {.endpoints[0].nodeName} {.endpoints[0].conditions.ready}";
    let slice = node.wait_for(
        &["get", "endpointslice", &slice_name, "-n", "kube-system", "-o", slice_path],
        Duration::from_secs(30),
        |t| !t.trim().is_empty(),
    );
    assert_eq!(slice, format!("cluster-dns.rkube.io {gw} {} true", node.node));

    server.ok_stdin(&["apply", "-f", "-"], OBJECTS);
    // A Deployment's Service: its cluster IP, over UDP and TCP, authoritatively.
    let web = service_ip("web");
    let name = "web.default.svc.cluster.local";
    let reply = ask_until(dns, name, RecordType::A, |r| answers(r) == [format!("A {web}")]);
    assert!(reply.metadata.authoritative);
    assert_eq!(reply.answers[0].ttl, 5);
    let over_tcp = ask_tcp(dns, name, RecordType::A).unwrap();
    assert_eq!(answers(&over_tcp), [format!("A {web}")]);
    // NODATA for a type the name lacks.
    let nodata = ask(dns, name, RecordType::AAAA).unwrap();
    assert_eq!(nodata.metadata.response_code, ResponseCode::NoError);
    assert!(nodata.answers.is_empty() && soa_authority(&nodata), "{nodata:?}");
    // SRV for the named port.
    let srv = ask(dns, "_http._tcp.web.default.svc.cluster.local", RecordType::SRV).unwrap();
    assert_eq!(answers(&srv), ["SRV 0 100 80 web.default.svc.cluster.local."]);
    // PTR of the cluster IP.
    let octets: Vec<&str> = web.split('.').rev().collect();
    let reverse = format!("{}.in-addr.arpa", octets.join("."));
    let ptr = ask(dns, &reverse, RecordType::PTR).unwrap();
    assert_eq!(answers(&ptr), ["PTR web.default.svc.cluster.local."]);

    // The headless Service: the StatefulSet's pods by their hostnames, and as a set.
    let pod_ip = |pod: &str| {
        node.wait_for(
            &[
                "get",
                "pod",
                pod,
                "-o",
                "jsonpath={.status.podIP} {.status.conditions[?(@.type==\"Ready\")].status}",
            ],
            Duration::from_secs(90),
            |t| t.ends_with(" True"),
        )
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
    };
    let (ip0, ip1) = (pod_ip("web-0"), pod_ip("web-1"));
    let mut both = vec![format!("A {ip0}"), format!("A {ip1}")];
    both.sort();
    ask_until(dns, "nginx.default.svc.cluster.local", RecordType::A, |r| answers(r) == both);
    let web0 = ask(dns, "web-0.nginx.default.svc.cluster.local", RecordType::A).unwrap();
    assert_eq!(answers(&web0), [format!("A {ip0}")]);
    let srv = ask(dns, "_web._tcp.nginx.default.svc.cluster.local", RecordType::SRV).unwrap();
    assert_eq!(
        answers(&srv),
        [
            "SRV 0 50 8080 web-0.nginx.default.svc.cluster.local.",
            "SRV 0 50 8080 web-1.nginx.default.svc.cluster.local."
        ]
    );
    assert_eq!(srv.additionals.len(), 2, "the targets' addresses: {srv:?}");
    let octets: Vec<&str> = ip1.split('.').rev().collect();
    let ptr = ask(dns, &format!("{}.in-addr.arpa", octets.join(".")), RecordType::PTR).unwrap();
    assert_eq!(answers(&ptr), ["PTR web-1.nginx.default.svc.cluster.local."]);

    // Pods by their dashed address; ExternalName as a CNAME.
    let dashed = format!("{}.default.pod.cluster.local", ip0.replace('.', "-"));
    assert_eq!(answers(&ask(dns, &dashed, RecordType::A).unwrap()), [format!("A {ip0}")]);
    let db =
        ask_until(dns, "db.default.svc.cluster.local", RecordType::A, |r| !r.answers.is_empty());
    // The CNAME followed to the target's address (from the test's resolver), as CoreDNS
    // answers: a pod's resolver does not ask again for the target.
    assert_eq!(answers(&db), ["A 192.0.2.7", "CNAME db.example.com."]);
    let cname = ask(dns, "db.default.svc.cluster.local", RecordType::CNAME).unwrap();
    assert_eq!(answers(&cname), ["CNAME db.example.com."]);
    // A deleted Service's name goes.
    server.ok(&["delete", "svc", "db"]);
    ask_until(dns, "db.default.svc.cluster.local", RecordType::A, |r| {
        r.metadata.response_code == ResponseCode::NXDomain
    });

    // Unknown cluster names: NXDOMAIN with the zone's SOA (over TCP too), as a pod's search
    // path needs to move on to its next suffix.
    for unknown in ["nope.default.svc.cluster.local", "web.kube-system.default.svc.cluster.local"] {
        let nx = ask(dns, unknown, RecordType::A).unwrap();
        assert_eq!(nx.metadata.response_code, ResponseCode::NXDomain, "{unknown}");
        assert!(soa_authority(&nx), "{nx:?}");
    }
    let nx = ask_tcp(dns, "nope.default.svc.cluster.local", RecordType::A).unwrap();
    assert_eq!(nx.metadata.response_code, ResponseCode::NXDomain);

    // From a pod, through the kube-dns Service's cluster IP (the proxy's Local rules lead to
    // this node's DNS). Debian's static busybox nslookup asks the server it is given.
    assert_route_is_local(&kube_dns_ip);
    let pod =
        server.ok(&["get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}"]);
    node.wait_for(
        &["get", "pod", &pod, "-o", "jsonpath={.status.phase}"],
        Duration::from_secs(60),
        |t| t == "Running",
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = server.kubectl(&["exec", &pod, "--", "nslookup", "-type=a", name, &kube_dns_ip]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if out.status.success() && text.contains(&format!("Address: {web}")) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the pod could not resolve {name} through {kube_dns_ip}: {text} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(300));
    }

    // And as pods ask, through their resolv.conf (the kubelet points ClusterFirst pods at the
    // kube-dns Service, with the search path): short names go through the search domains.
    // (busybox's nslookup applies them to names without a dot only, unlike glibc's ndots:5.)
    let resolv = server.ok(&["exec", &pod, "--", "cat", "/etc/resolv.conf"]);
    assert!(resolv.contains(&format!("nameserver {kube_dns_ip}")), "{resolv}");
    for (short, want) in [("web", web.clone()), ("nginx", ip0.clone())] {
        let out = server.kubectl(&["exec", &pod, "--", "nslookup", "-type=a", short]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(text.contains(&format!("Address: {want}")), "nslookup {short}: {text}");
    }

    // The controllers leave the DNS's own slice alone: the Services above got theirs from
    // the EndpointSlice controller meanwhile, and this one is still the DNS's.
    let slice =
        server.ok(&["get", "endpointslice", &slice_name, "-n", "kube-system", "-o", slice_path]);
    assert_eq!(slice, format!("cluster-dns.rkube.io {gw} {} true", node.node));
    let all = server.ok(&[
        "get",
        "endpointslices",
        "-n",
        "kube-system",
        "-l",
        "kubernetes.io/service-name=kube-dns",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    assert_eq!(all, slice_name, "only the DNS's own slice for kube-dns");

    // Other names go to the node's resolvers: here the test's own, over UDP and TCP.
    let forwarded = ask(dns, "www.example.org", RecordType::A).unwrap();
    assert_eq!(answers(&forwarded), ["A 192.0.2.7"]);
    assert!(!forwarded.metadata.authoritative);
    let forwarded = ask_tcp(dns, "www.example.org", RecordType::A).unwrap();
    assert_eq!(answers(&forwarded), ["A 192.0.2.7"]);
    // Once it is gone: SERVFAIL, not a hang.
    upstream.stop();
    let started = Instant::now();
    let failed = ask(dns, "www.example.org", RecordType::A).unwrap();
    assert_eq!(failed.metadata.response_code, ResponseCode::ServFail);
    assert!(started.elapsed() < Duration::from_millis(2500), "{:?}", started.elapsed());
}
