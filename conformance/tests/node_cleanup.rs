//! `rkube killall --node-name N --iptables-chain-prefix P` on a host with two running nodes
//! (each an `rkube server` with its kubelet on Docker and its proxy under a chain prefix of
//! its own): it stops N's server, removes N's pod containers, veths, bridge, hostPort chain
//! and rules, its proxy's chains and service device, says so one line each, and leaves the
//! other node (processes, containers, bridge, chains, device) as it was. Scoped to the
//! test's own node and prefix, so tests running beside it keep theirs.

use std::process::Command;
use std::time::{Duration, Instant};

use rkube_conformance::node::NodeServer;

/// A pod with a hostPort (`{host_port}`, a free port: its DNAT rule is in the node's
/// hostPort chain) behind a Service.
const OBJECTS: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "while true; do echo hi | nc -l -p 8080; done"]
    ports: [{containerPort: 8080, hostPort: {host_port}}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, protocol: TCP}]
"#;

fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().expect(program);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn iptables_save() -> String {
    run("iptables-save", &[])
}

fn link_exists(name: &str) -> bool {
    std::path::Path::new(&format!("/sys/class/net/{name}")).exists()
}

/// What a node has on this host.
struct Footprint {
    containers: Vec<String>,
    bridge: String,
    veths: Vec<String>,
    hostport_chain: String,
    prefix: String,
    device: String,
}

impl Footprint {
    fn of(node: &NodeServer) -> Footprint {
        let containers = run(
            "docker",
            &["ps", "-a", "-q", "--filter", &format!("label=io.rkube.node={}", node.node)],
        );
        let bridge = rkube_kubelet::runtime::podnet::bridge_name(&node.node);
        let veths = run("ip", &["-o", "link", "show", "master", &bridge])
            .lines()
            .filter_map(|l| l.split(": ").nth(1))
            .map(|n| n.split('@').next().unwrap().to_string())
            .collect();
        let prefix = node.proxy_prefix.clone().unwrap();
        Footprint {
            containers: containers.lines().map(str::to_string).collect(),
            hostport_chain: rkube_kubelet::runtime::podnet::hostport_chain(&node.node),
            device: rkube_proxy::device::device_name(&prefix),
            bridge,
            veths,
            prefix,
        }
    }

    fn assert_present(&self) {
        assert!(!self.containers.is_empty(), "no containers");
        assert!(link_exists(&self.bridge), "no bridge {}", self.bridge);
        assert!(!self.veths.is_empty(), "no veths on {}", self.bridge);
        assert!(self.veths.iter().all(|v| link_exists(v)), "{:?}", self.veths);
        assert!(link_exists(&self.device), "no device {}", self.device);
        let rules = iptables_save();
        assert!(
            rules.contains(&format!(":{} ", self.hostport_chain)),
            "no {}",
            self.hostport_chain
        );
        assert!(rules.contains(&format!("-A {}-SEP-", self.prefix)), "no {} rules", self.prefix);
    }
}

/// Waits until the node's pod runs and its proxy has the Service's endpoint in its rules.
fn ready(node: &NodeServer) {
    let host_port = rkube_store::testing::free_port().to_string();
    node.server.ok_stdin(&["apply", "-f", "-"], &OBJECTS.replace("{host_port}", &host_port));
    node.wait_for(
        &["get", "pod", "web", "-o", "jsonpath={.status.phase}"],
        Duration::from_secs(60),
        |t| t == "Running",
    );
    let prefix = node.proxy_prefix.clone().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !iptables_save().contains(&format!("-A {prefix}-SEP-")) {
        assert!(Instant::now() < deadline, "no endpoint rules under {prefix}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn killall_takes_one_node_off_the_host_and_leaves_the_others() {
    let gone = NodeServer::start_with_proxy(&[]);
    let kept = NodeServer::start_with_proxy(&[]);
    ready(&gone);
    ready(&kept);
    let before = Footprint::of(&gone);
    let other = Footprint::of(&kept);
    before.assert_present();
    other.assert_present();
    let pid = gone.server.pid();

    // The server still runs: killall stops it first, as k3s's does.
    let started = Instant::now();
    let out = Command::new(rkube_conformance::cluster::rkube_binary())
        .args(["killall", "--node-name", &gone.node, "--iptables-chain-prefix", &before.prefix])
        .output()
        .expect("rkube killall");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    println!("{text}(in {:?})", started.elapsed());
    assert!(
        out.status.success(),
        "rkube killall failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let says = |line: &str| {
        assert!(text.lines().any(|l| l.starts_with(line)), "no line {line:?} in:\n{text}")
    };
    says(&format!("removed process: {pid} ("));
    for id in &before.containers {
        assert!(text.contains(&format!("({id})")), "container {id} not reported:\n{text}");
    }
    for veth in &before.veths {
        says(&format!("removed veth: {veth}"));
    }
    says(&format!("removed bridge: {}", before.bridge));
    says(&format!("removed nat chain: {}", before.hostport_chain));
    says(&format!("removed filter rule: -A FORWARD -i {} ", before.bridge));
    says(&format!("removed nat chain: {}-SERVICES", before.prefix));
    says(&format!("removed nat rule: -A PREROUTING -m comment --comment \"kubernetes service portals\" -j {}-SERVICES", before.prefix));
    says(&format!("removed device: {}", before.device));

    // All of it is gone ...
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(stat.is_empty() || stat.contains(") Z "), "the server still runs: {stat}");
    assert!(Footprint::of(&gone).containers.is_empty(), "containers left");
    assert!(!link_exists(&before.bridge), "bridge left");
    assert!(before.veths.iter().all(|v| !link_exists(v)), "veths left");
    assert!(!link_exists(&before.device), "device left");
    let rules = iptables_save();
    for name in [&before.bridge, &before.hostport_chain, &format!("{}-", before.prefix)] {
        assert!(!rules.contains(name.as_str()), "{name} left in iptables:\n{rules}");
    }

    // ... and the other node kept everything, its server still serving.
    let after = Footprint::of(&kept);
    assert_eq!(after.containers, other.containers);
    assert_eq!(after.veths, other.veths);
    after.assert_present();
    assert_eq!(kept.server.ok(&["get", "pod", "web", "-o", "jsonpath={.status.phase}"]), "Running");

    // Nothing is left to remove the second time.
    let again = Command::new(rkube_conformance::cluster::rkube_binary())
        .args(["killall", "--node-name", &gone.node, "--iptables-chain-prefix", &before.prefix])
        .output()
        .expect("rkube killall");
    assert!(again.status.success());
    assert_eq!(String::from_utf8_lossy(&again.stdout), "nothing to remove\n");
}
