//! Pods' resolv.conf and /etc/hosts on a real node, as upstream's kubelet writes them: per
//! dnsPolicy (ClusterFirst, ClusterFirstWithHostNet, Default, and ClusterFirst on the host's
//! network, which is Default), `dnsConfig` merged in or alone (None), the node's resolvers
//! cut to 3 with a `DNSConfigForming` warning, and the managed hosts file with the pod's
//! FQDN from `hostname` and `subdomain`; without a cluster DNS (`rkube kubelet`'s default),
//! ClusterFirst falls back to the node's resolvers with `MissingClusterDNS` warnings. Read
//! with stock kubectl exec.

use std::process::Command;
use std::time::{Duration, Instant};

use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::node::NodeServer;

const PODS: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: cluster-first}
spec:
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: merged}
spec:
  dnsConfig:
    nameservers: ["192.0.2.53"]
    searches: ["extra.example", "svc.cluster.local"]
    options: [{name: ndots, value: "1"}, {name: edns0}]
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: default-policy}
spec:
  dnsPolicy: Default
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: host-net}
spec:
  hostNetwork: true
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: host-net-cluster}
spec:
  hostNetwork: true
  dnsPolicy: ClusterFirstWithHostNet
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: only-config}
spec:
  dnsPolicy: "None"
  dnsConfig:
    nameservers: ["192.0.2.77"]
    searches: ["a.example"]
    options: [{name: ndots, value: "2"}]
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: db-0}
spec:
  hostname: db-host
  subdomain: backend
  hostAliases: [{ip: "192.0.2.9", hostnames: [foo.local, bar.local]}]
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
"#;

/// The node's resolvers as the test gives them: one nameserver too many.
const NODE_RESOLV_CONF: &str = "# the test's node\nnameserver 192.0.2.1\nnameserver 192.0.2.2\n\
nameserver 192.0.2.3\nnameserver 192.0.2.4\nsearch corp.example. lab.example\noptions timeout:2\n";

const CLUSTER_SEARCH: &str = "search default.svc.cluster.local svc.cluster.local cluster.local \
corp.example lab.example\n";

#[test]
fn resolv_conf_and_hosts_follow_the_pods_dns_settings() {
    let dir = tempfile::tempdir().unwrap();
    let resolv = dir.path().join("resolv.conf");
    std::fs::write(&resolv, NODE_RESOLV_CONF).unwrap();
    let node = NodeServer::start_with(&["--resolv-conf", resolv.to_str().unwrap()]);
    let server = &node.server;
    server.ok_stdin(&["apply", "-f", "-"], PODS);
    let names = [
        "cluster-first",
        "merged",
        "default-policy",
        "host-net",
        "host-net-cluster",
        "only-config",
        "db-0",
    ];
    for pod in names {
        node.wait_for(
            &["get", "pod", pod, "-o", "jsonpath={.status.phase}"],
            Duration::from_secs(60),
            |t| t == "Running",
        );
    }
    let cat = |pod: &str, file: &str| server.ok(&["exec", pod, "--", "cat", file]);

    // ClusterFirst: the cluster DNS (`rkube server`'s default, the 10th address of
    // 10.43.0.0/16), the cluster's search domains then the node's, ndots:5.
    let cluster = format!("{CLUSTER_SEARCH}nameserver 10.43.0.10\noptions ndots:5\n");
    assert_eq!(cat("cluster-first", "/etc/resolv.conf"), cluster);
    // ... the same on the host's network with ClusterFirstWithHostNet.
    assert_eq!(cat("host-net-cluster", "/etc/resolv.conf"), cluster);
    // dnsConfig merged in: nameservers and searches added once, options by name.
    assert_eq!(
        cat("merged", "/etc/resolv.conf"),
        format!(
            "{} extra.example\nnameserver 10.43.0.10\nnameserver 192.0.2.53\noptions ndots:1 edns0\n",
            CLUSTER_SEARCH.trim_end()
        )
    );
    // Default, and ClusterFirst on the host's network: the node's resolvers, 3 of the 4.
    let node_dns = "search corp.example lab.example\nnameserver 192.0.2.1\nnameserver 192.0.2.2\n\
                    nameserver 192.0.2.3\noptions timeout:2\n";
    assert_eq!(cat("default-policy", "/etc/resolv.conf"), node_dns);
    assert_eq!(cat("host-net", "/etc/resolv.conf"), node_dns);
    // None: the pod's dnsConfig alone.
    assert_eq!(
        cat("only-config", "/etc/resolv.conf"),
        "search a.example\nnameserver 192.0.2.77\noptions ndots:2\n"
    );
    // The cut nameserver line is a warning on the pod.
    node.wait_for(
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=default-policy",
            "-o",
            "jsonpath={range .items[*]}{.type} {.reason}: {.message}{\"\\n\"}{end}",
        ],
        Duration::from_secs(20),
        |t| {
            t.contains(
                "Warning DNSConfigForming: Nameserver limits were exceeded, some nameservers \
                 have been omitted, the applied nameserver line is: 192.0.2.1 192.0.2.2 192.0.2.3",
            )
        },
    );

    // The managed hosts file: the pod's IP with its FQDN and hostname, then its aliases.
    let ip = server.ok(&["get", "pod", "db-0", "-o", "jsonpath={.status.podIP}"]);
    let hosts = cat("db-0", "/etc/hosts");
    assert!(
        hosts.starts_with("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"),
        "{hosts}"
    );
    assert!(
        hosts.ends_with(&format!(
            "{ip}\tdb-host.backend.default.svc.cluster.local\tdb-host\n\n\
             # Entries added by HostAliases.\n192.0.2.9\tfoo.local\tbar.local\n"
        )),
        "{hosts}"
    );
    assert_eq!(server.ok(&["exec", "db-0", "--", "hostname"]).trim(), "db-host");
    // Without a subdomain: the hostname alone.
    let ip = server.ok(&["get", "pod", "cluster-first", "-o", "jsonpath={.status.podIP}"]);
    assert!(cat("cluster-first", "/etc/hosts").ends_with(&format!("{ip}\tcluster-first\n")));
    // On the host's network: the node's own hosts file under upstream's header.
    let node_hosts = std::fs::read_to_string("/etc/hosts").unwrap();
    assert_eq!(
        cat("host-net", "/etc/hosts"),
        format!("# Kubernetes-managed hosts file (host network).\n{node_hosts}")
    );
}

/// `rkube kubelet` on Docker without `--cluster-dns` (upstream's default: none), against a
/// server with no node of its own; stopped, and its containers and pod network removed,
/// when dropped.
struct BareKubelet {
    child: std::process::Child,
    node: String,
    log: std::path::PathBuf,
}

impl BareKubelet {
    fn start(server: &RkubeServer, resolv_conf: &std::path::Path) -> BareKubelet {
        let port = rkube_store::testing::free_port();
        let node = format!("rkube-test-{port}");
        // As NodeServer's: free ports are unique among running tests, so the CIDR is too.
        let cidr = format!("10.{}.{}.0/24", 200 + (port / 256) % 50, port % 256);
        let dir = server.data_dir.path();
        let log = dir.join("kubelet.log");
        let child = Command::new(rkube_conformance::cluster::rkube_binary())
            .arg("kubelet")
            .arg("--kubeconfig")
            .arg(&server.kubeconfig)
            .args(["--node-name", &node, "--kubelet-port", &port.to_string(), "--pod-cidr", &cidr])
            .args(["--eviction-hard", "memory.available<100Mi,nodefs.available<100Mi"])
            .arg("--client-ca-file")
            .arg(dir.join("pki/ca.crt"))
            .arg("--root-dir")
            .arg(dir.join("kubelet"))
            .arg("--resolv-conf")
            .arg(resolv_conf)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start rkube kubelet");
        BareKubelet { child, node, log }
    }
}

impl Drop for BareKubelet {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let label = format!("label=io.rkube.node={}", self.node);
        let out = Command::new("docker").args(["ps", "-a", "-q", "--filter", &label]).output();
        let ids = String::from_utf8_lossy(&out.map(|o| o.stdout).unwrap_or_default()).to_string();
        if !ids.trim().is_empty() {
            let _ = Command::new("docker").args(["rm", "-f", "-v"]).args(ids.lines()).output();
        }
        rkube_kubelet::runtime::podnet::remove(&self.node);
    }
}

#[test]
fn cluster_first_without_a_cluster_dns_falls_back_to_the_nodes_resolvers() {
    rkube_conformance::node::ensure_busybox_image();
    let dir = tempfile::tempdir().unwrap();
    let resolv = dir.path().join("resolv.conf");
    std::fs::write(&resolv, "nameserver 192.0.2.1\nsearch corp.example\n").unwrap();
    let server = RkubeServer::start_with(&["--disable", "kubelet"]);
    let kubelet = BareKubelet::start(&server, &resolv);
    let deadline = Instant::now() + Duration::from_secs(60);
    let ready = "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}";
    loop {
        let out = server.kubectl(&["get", "node", &kubelet.node, "-o", ready]);
        if String::from_utf8_lossy(&out.stdout) == "True" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node not Ready: {}",
            std::fs::read_to_string(&kubelet.log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: cluster-first}\nspec:\n  containers:\n  \
               - {name: app, image: \"busybox:1.36\", imagePullPolicy: IfNotPresent, command: [\"sleep\", \"3600\"]}\n";
    server.ok_stdin(&["apply", "-f", "-"], pod);
    server.ok(&["wait", "--for=condition=Ready", "pod/cluster-first", "--timeout=60s"]);
    // The node's resolvers (dnsPolicy Default) ...
    assert_eq!(
        server.ok(&["exec", "cluster-first", "--", "cat", "/etc/resolv.conf"]),
        "search corp.example\nnameserver 192.0.2.1\n"
    );
    // ... with upstream's warning on the pod and on the node.
    let uid = server.ok(&["get", "pod", "cluster-first", "-o", "jsonpath={.metadata.uid}"]);
    let why = "kubelet does not have ClusterDNS IP configured and cannot create Pod using \
               \"ClusterFirst\" policy. Falling back to \"Default\" policy.";
    let events = "jsonpath={range .items[*]}{.involvedObject.kind}/{.involvedObject.name} \
                  {.type} {.reason}: {.message}{\"\\n\"}{end}";
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = server.ok(&["get", "events", "-o", events]);
        let on_pod = format!(
            "Pod/cluster-first Warning MissingClusterDNS: pod: \"cluster-first_default({uid})\". {why}"
        );
        let on_node = format!("Node/{} Warning MissingClusterDNS: {why}", kubelet.node);
        if seen.contains(&on_pod) && seen.contains(&on_node) {
            break;
        }
        assert!(Instant::now() < deadline, "no MissingClusterDNS warnings in:\n{seen}");
        std::thread::sleep(Duration::from_millis(250));
    }
}
