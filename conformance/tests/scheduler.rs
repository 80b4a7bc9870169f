//! The scheduler inside `rkube server`, on nodes that are only API objects (no kubelet):
//! placement by the filters, the reason for a pending pod as `kubectl describe` shows it, and
//! a pending pod scheduled as soon as a node that fits appears.

use std::time::{Duration, Instant};

use rkube_conformance::cluster::RkubeServer;

fn node(name: &str, cpu: &str, taint: Option<&str>) -> String {
    let taints = match taint {
        Some(t) => format!("  taints:\n  - key: {t}\n    value: gpu\n    effect: NoSchedule\n"),
        None => String::new(),
    };
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n    kubernetes.io/hostname: {name}\nspec:\n{taints}status:\n  allocatable:\n    cpu: \"{cpu}\"\n    memory: 4Gi\n    pods: \"110\"\n  capacity:\n    cpu: \"{cpu}\"\n    memory: 4Gi\n    pods: \"110\"\n  conditions:\n  - type: Ready\n    status: \"True\"\n"
    )
}

fn pod(name: &str, cpu: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n    resources:\n      requests:\n        cpu: \"{cpu}\"\n"
    )
}

fn wait_for(s: &RkubeServer, args: &[&str], want: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = s.ok(args);
        if out.contains(want) {
            return out;
        }
        assert!(
            Instant::now() < deadline,
            "waited 30 s for {want:?} in `kubectl {}`:\n{out}",
            args.join(" ")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn pods_land_on_nodes_that_fit_and_wait_for_one_otherwise() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], &node("small", "1", None));
    s.ok_stdin(&["apply", "-f", "-"], &node("tainted", "8", Some("dedicated")));

    s.ok_stdin(&["apply", "-f", "-"], &pod("fits", "500m"));
    wait_for(&s, &["get", "pod", "fits", "-o", "jsonpath={.spec.nodeName}"], "small");
    let events = wait_for(
        &s,
        &["get", "events", "--field-selector", "involvedObject.name=fits", "-o", "name"],
        "event/",
    );
    assert!(!events.is_empty());

    s.ok_stdin(&["apply", "-f", "-"], &pod("big", "2"));
    let message = wait_for(
        &s,
        &[
            "get",
            "pod",
            "big",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}",
        ],
        "nodes are available",
    );
    assert!(message.starts_with("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}."), "{message}");
    let describe = wait_for(&s, &["describe", "pod", "big"], "FailedScheduling");
    assert!(describe.contains("Warning  FailedScheduling"), "{describe}");
    assert_eq!(s.ok(&["get", "pod", "big", "-o", "jsonpath={.spec.nodeName}"]), "");

    // A node that fits appears: the pending pod is placed on it, without any other nudge.
    s.ok_stdin(&["apply", "-f", "-"], &node("large", "4", None));
    wait_for(&s, &["get", "pod", "big", "-o", "jsonpath={.spec.nodeName}"], "large");
    let describe =
        wait_for(&s, &["describe", "pod", "big"], "Successfully assigned default/big to large");
    assert!(describe.contains("Normal   Scheduled"), "{describe}");
}

#[test]
fn node_selectors_and_cordoned_nodes() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], &node("a", "4", None));
    s.ok_stdin(&["apply", "-f", "-"], &node("b", "4", None));
    s.ok(&["label", "node", "b", "disk=ssd"]);
    let selected = pod("picky", "100m") + "  nodeSelector:\n    disk: ssd\n";
    s.ok_stdin(&["apply", "-f", "-"], &selected);
    wait_for(&s, &["get", "pod", "picky", "-o", "jsonpath={.spec.nodeName}"], "b");
    s.ok(&["cordon", "a"]);
    s.ok(&["cordon", "b"]);
    s.ok_stdin(&["apply", "-f", "-"], &pod("nowhere", "100m"));
    let message = wait_for(
        &s,
        &[
            "get",
            "pod",
            "nowhere",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}",
        ],
        "unschedulable",
    );
    assert!(
        message.starts_with("0/2 nodes are available: 2 node(s) were unschedulable."),
        "{message}"
    );
    s.ok(&["uncordon", "a"]);
    wait_for(&s, &["get", "pod", "nowhere", "-o", "jsonpath={.spec.nodeName}"], "a");
}
