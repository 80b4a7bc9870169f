//! Simulated nodes: `rkube kubelet --runtime simulated --nodes N` runs N kubelets in one
//! process on the simulated runtime. To the API server, the scheduler and the controllers
//! they are N real nodes: registered, Ready, with leases and pod CIDRs; pods the scheduler
//! spreads over them become Running with IPs from their node's range; deleted,
//! the pods go; and when the process dies the node lifecycle controller marks them Unknown.

use std::time::Duration;

use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::node::SimulatedNodes;

#[test]
fn simulated_nodes_run_pods_as_real_nodes_would() {
    const NODES: usize = 20;
    const REPLICAS: usize = 100;
    let server = RkubeServer::start_with(&["--node-monitor-grace-period", "20s"]);
    let mut nodes = SimulatedNodes::start(&server, NODES, &[]);

    // Every node registers and turns Ready, with its own pod CIDR.
    let ready = "jsonpath={range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.conditions[?(@.type==\"Ready\")].status} {.status.nodeInfo.containerRuntimeVersion}{\"\\n\"}{end}";
    let listing = server.wait_until("simulated nodes Ready", Duration::from_secs(60), || {
        let out = server.ok(&["get", "nodes", "-o", ready]);
        let lines: Vec<&str> = out.lines().filter(|l| l.contains(" True ")).collect();
        (lines.len() == NODES, out.clone())
    });
    let mut cidrs: Vec<&str> = listing.lines().map(|l| l.split(' ').nth(1).unwrap()).collect();
    cidrs.sort();
    cidrs.dedup();
    assert_eq!(cidrs.len(), NODES, "each node its own pod CIDR:\n{listing}");
    assert!(listing.lines().all(|l| l.starts_with("sim-00") && l.ends_with("simulated://1.0.0")));
    let leases = server.ok(&["get", "leases", "-n", "kube-node-lease", "-o", "name"]);
    assert_eq!(leases.lines().filter(|l| l.contains("sim-00")).count(), NODES, "{leases}");

    // Pods spread over the nodes and run, with IPs from their node's range.
    let items: Vec<serde_json::Value> = (0..REPLICAS)
        .map(|i| {
            serde_json::json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("web-{i}"), "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "busybox:1.36"}]}
            })
        })
        .collect();
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    server.ok_stdin(&["create", "-f", "-"], &list.to_string());
    let pods_path = "jsonpath={range .items[*]}{.spec.nodeName} {.status.phase} {.status.podIP} {.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}";
    let pods = server.wait_until("100 pods Running", Duration::from_secs(90), || {
        let out = server.ok(&["get", "pods", "-l", "app=web", "-o", pods_path]);
        let running = out.lines().filter(|l| l.contains(" Running ") && l.ends_with("True"));
        (running.count() == REPLICAS, out.clone())
    });
    let nodes_used: std::collections::BTreeSet<&str> =
        pods.lines().map(|l| l.split(' ').next().unwrap()).collect();
    // Spread (5 a node when every node is Ready throughout; a heavily loaded machine can
    // delay a node's heartbeat, and the scheduler then leaves it out for a while).
    assert!(nodes_used.len() >= NODES * 3 / 4, "the pods spread over the nodes:\n{pods}");
    for line in pods.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let cidr = listing.lines().find(|l| l.starts_with(fields[0])).unwrap();
        let prefix = cidr.split(' ').nth(1).unwrap().trim_end_matches("0/24");
        assert!(fields[2].starts_with(prefix), "pod IP {} outside {cidr}", fields[2]);
    }
    // Deleted: the kubelets stop the pods and make the final deletes.
    server.ok(&["delete", "pods", "-l", "app=web", "--wait=false"]);
    server.wait_until("pods gone", Duration::from_secs(60), || {
        let out = server.ok(&["get", "pods", "-l", "app=web", "-o", "name"]);
        (out.trim().is_empty(), out)
    });

    // The process dies: its leases stop, and the nodes become Unknown.
    let _ = nodes.child.kill();
    let _ = nodes.child.wait();
    server.wait_until("nodes Unknown", Duration::from_secs(60), || {
        let out = server.ok(&["get", "nodes", "-o", ready]);
        (out.lines().filter(|l| l.contains(" Unknown ")).count() == NODES, out)
    });
}
