//! Hairpin: a pod reaching itself through its own Service's cluster IP. The proxy DNATs the
//! connection back to the pod (and masquerades it); the pod bridge must then send the frame
//! out of the port it came in on, which it does only with hairpin mode on that port.
//! Every address is checked local (`ip route get`) before anything connects to it.

use std::time::{Duration, Instant};

use rkube_conformance::node::{assert_route_is_local, NodeServer};

const OBJECTS: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: mirror, labels: {app: mirror}}
spec:
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "while true; do echo reply-from-mirror | nc -l -p 8080; done"]}
---
apiVersion: v1
kind: Service
metadata: {name: mirror}
spec:
  selector: {app: mirror}
  ports: [{port: 80, targetPort: 8080, protocol: TCP}]
"#;

#[test]
fn a_pod_reaches_itself_through_its_service() {
    let mut node = NodeServer::start_with_proxy(&[]);
    node.server.ok_stdin(&["apply", "-f", "-"], OBJECTS);
    let pod_ip = node
        .wait_for(
            &["get", "pod", "mirror", "-o", "jsonpath={.status.phase} {.status.podIP}"],
            Duration::from_secs(60),
            |t| t.starts_with("Running ") && t.len() > "Running ".len(),
        )
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string();
    assert_route_is_local(&pod_ip);
    let cluster_ip = node.server.ok(&["get", "svc", "mirror", "-o", "jsonpath={.spec.clusterIP}"]);
    assert_route_is_local(&cluster_ip);
    // The Service's only endpoint is the pod itself.
    node.wait_for(
        &[
            "get",
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=mirror",
            "-o",
            "jsonpath={.items[*].endpoints[*].addresses[*]}",
        ],
        Duration::from_secs(30),
        |t| t.trim() == pod_ip,
    );
    reaches_itself(&node, &cluster_ip);

    // Its bridge port has hairpin on.
    let id = node
        .containers_of(&node.server.ok(&["get", "pod", "mirror", "-o", "jsonpath={.metadata.uid}"]))
        .into_iter()
        .find(|id| {
            let out = std::process::Command::new("docker")
                .args([
                    "inspect",
                    "-f",
                    "{{index .Config.Labels \"io.kubernetes.docker.type\"}}",
                    id,
                ])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).trim() == "podsandbox"
        })
        .expect("the pod's sandbox");
    let mode = format!("/sys/class/net/rkv{}/brport/hairpin_mode", &id[..12]);
    let hairpin = std::fs::read_to_string(&mode).expect("the sandbox's veth on the bridge");
    assert_eq!(hairpin.trim(), "1");

    // A restarted kubelet turns it on again for the sandboxes it finds (here turned off by
    // hand on the test's own veth, as a kubelet of an earlier version left them).
    std::fs::write(&mode, "0").unwrap();
    node.server.restart();
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(&mode).unwrap().trim() != "1" {
        assert!(Instant::now() < deadline, "hairpin not turned on again after a restart");
        std::thread::sleep(Duration::from_millis(200));
    }
    reaches_itself(&node, &cluster_ip);
}

/// From inside the pod, through the cluster IP, back to itself.
fn reaches_itself(node: &NodeServer, cluster_ip: &str) {
    let server = &node.server;
    // Its nc loop answers each connection; between two it is briefly not listening, so a
    // few tries.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut tries = 0;
    loop {
        tries += 1;
        let out = server.kubectl(&["exec", "mirror", "--", "nc", "-w", "2", cluster_ip, "80"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if text.contains("reply-from-mirror") {
            break;
        }
        if Instant::now() > deadline {
            let rules = std::process::Command::new("iptables-save").args(["-t", "nat"]).output();
            let rules = String::from_utf8_lossy(&rules.unwrap().stdout).to_string();
            let prefix = node.proxy_prefix.clone().unwrap();
            let ours: Vec<&str> = rules.lines().filter(|l| l.contains(&prefix)).collect();
            panic!(
                "the pod did not reach itself through {cluster_ip} in {tries} tries: {text:?} \
                 {:?}\nrules:\n{}\n{}",
                String::from_utf8_lossy(&out.stderr),
                ours.join("\n"),
                server.log()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
