//! How many pods per second the scheduling cycle itself places, without the API server:
//! N nodes (8 CPUs, 32Gi, 110 pods, `kubernetes.io/hostname`) and M pods (one container,
//! 100m CPU, 128Mi) through [`decide`] with kube-scheduler's default profile, each pod
//! added to the node chosen for it before the next cycle, as the scheduler's cache does.
//! With `anti`, every pod also has a required pod anti-affinity on `kubernetes.io/hostname`
//! against the pods of its group of 10 (as `scheduler-bench` does).
//!
//! ```text
//! cargo run --release -p rkube-scheduler --example schedule_throughput   # every scenario
//! cargo run --release -p rkube-scheduler --example schedule_throughput -- 1000 10000 [anti]
//! ```

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::{Node, Pod};
use rkube_scheduler::framework::{NodeInfo, PodInfo};
use rkube_scheduler::plugins::default_profile;
use rkube_scheduler::scheduler::decide;
use serde_json::json;

fn node(i: usize) -> NodeInfo {
    let name = format!("node-{i:05}");
    let allocatable = json!({"cpu": "8", "memory": "32Gi", "pods": "110"});
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": allocatable, "capacity": allocatable}
    }))
    .expect("valid node");
    NodeInfo::new(Arc::new(node))
}

/// Pods sharing one anti-affinity group.
const GROUP_SIZE: usize = 10;

fn pod(i: usize, anti_affinity: bool) -> PodInfo {
    let group = format!("g-{:05}", i / GROUP_SIZE);
    let mut spec = json!({"containers": [{
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}
    }]});
    if anti_affinity {
        spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"group": group}}, "topologyKey": "kubernetes.io/hostname"}
        ]}});
    }
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": format!("pod-{i:06}"), "namespace": "bench", "labels": {"app": "bench", "group": group}},
        "spec": spec
    }))
    .expect("valid pod");
    PodInfo::new(Arc::new(pod))
}

/// Schedules `pods` pods onto `nodes` fresh nodes; returns pods per second.
fn run(nodes: usize, pods: usize, anti_affinity: bool) -> f64 {
    let profile = default_profile();
    let mut infos: Vec<NodeInfo> = (0..nodes).map(node).collect();
    let index: std::collections::HashMap<String, usize> =
        infos.iter().enumerate().map(|(i, n)| (n.name().to_string(), i)).collect();
    let incoming: Vec<PodInfo> = (0..pods).map(|i| pod(i, anti_affinity)).collect();
    let mut next_start = 0;
    let started = Instant::now();
    for p in incoming {
        let chosen = {
            let refs: Vec<&NodeInfo> = infos.iter().collect();
            decide(&profile, &p, &refs, &mut next_start).expect("every pod fits")
        };
        infos[index[&chosen]].add_pod(Arc::new(p));
    }
    let elapsed = started.elapsed().as_secs_f64();
    let per_node: Vec<usize> = infos.iter().map(|n| n.pods.len()).collect();
    let (min, max) = (per_node.iter().min().unwrap(), per_node.iter().max().unwrap());
    let rate = pods as f64 / elapsed;
    println!(
        "| {nodes:>6} | {pods:>6} | {anti:>13} | {elapsed:>8.2} | {rate:>9.0} | {min:>3}..{max:<3}  |",
        anti = if anti_affinity { "yes" } else { "no" },
        elapsed = elapsed,
    );
    rate
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |a: &String| a.parse::<usize>().expect("a number of nodes or pods");
    let scenarios = match args.as_slice() {
        [] => vec![(1000, 10_000, false), (5000, 30_000, false), (1000, 10_000, true)],
        [nodes, pods] => vec![(number(nodes), number(pods), false)],
        [nodes, pods, anti] if anti == "anti" => vec![(number(nodes), number(pods), true)],
        _ => panic!("usage: schedule_throughput [NODES PODS [anti]]"),
    };
    println!("|  nodes |   pods | anti-affinity |  seconds |    pods/s | pods/node |");
    println!("|-------:|-------:|--------------:|---------:|----------:|----------:|");
    for (nodes, pods, anti_affinity) in scenarios {
        run(nodes, pods, anti_affinity);
    }
}
