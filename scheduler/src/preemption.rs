//! Preemption (upstream's DefaultPreemption PostFilter): when a pod fits nowhere, find the
//! node where evicting the fewest, lowest-priority pods would let it fit, evict them, and
//! nominate the node (`status.nominatedNodeName`). The pod is scheduled for real once the
//! victims are gone.
//!
//! Simplification: PodDisruptionBudgets are not consulted yet.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::Client;
use serde_json::json;

use crate::framework::{CycleState, Next, NodeInfo, PodInfo, Profile};

/// Where to put the pod and whom to evict for it.
pub struct Plan {
    pub node: String,
    pub victims: Vec<Arc<PodInfo>>,
}

/// Whether every filter passes `pod` on `node`, the other nodes as they are.
fn fits(profile: &Profile, pod: &PodInfo, node: &NodeInfo, all: &[&NodeInfo]) -> bool {
    let nodes: Vec<&NodeInfo> =
        all.iter().map(|n| if n.name() == node.name() { node } else { *n }).collect();
    let mut state = CycleState::new(&nodes);
    let mut run = Vec::with_capacity(profile.filters.len());
    for filter in &profile.filters {
        match filter.pre_filter(pod, &mut state) {
            Err(_) => return false,
            Ok(Next::Skip) => {}
            Ok(Next::Run) => run.push(filter),
        }
    }
    run.iter().all(|f| f.filter_with_state(pod, node, &state).is_ok())
}

/// The victims on one node: every lower-priority pod taken off, then as many as possible
/// put back, highest priority first (upstream's reprieve). `None` when even an empty node
/// of lower-priority pods would not do.
fn victims_on(
    profile: &Profile,
    pod: &PodInfo,
    node: &NodeInfo,
    all: &[&NodeInfo],
) -> Option<Vec<Arc<PodInfo>>> {
    let mut lower: Vec<Arc<PodInfo>> =
        node.pods.iter().filter(|p| p.priority() < pod.priority()).cloned().collect();
    if lower.is_empty() {
        return None;
    }
    let mut trial = node.clone();
    for p in &lower {
        trial.remove_pod(p.namespace(), p.name());
    }
    if !fits(profile, pod, &trial, all) {
        return None;
    }
    lower.sort_by_key(|p| std::cmp::Reverse(p.priority()));
    let mut victims = Vec::new();
    for p in lower {
        trial.add_pod(p.clone());
        if !fits(profile, pod, &trial, all) {
            trial.remove_pod(p.namespace(), p.name());
            victims.push(p);
        }
    }
    Some(victims)
}

/// The best node to preempt on: the lowest highest-victim priority, then the lowest sum of
/// victim priorities, then the fewest victims.
pub fn find(profile: &Profile, pod: &PodInfo, nodes: &[&NodeInfo]) -> Option<Plan> {
    nodes
        .iter()
        .filter_map(|node| {
            victims_on(profile, pod, node, nodes).map(|v| (node.name().to_string(), v))
        })
        .filter(|(_, v)| !v.is_empty())
        .min_by_key(|(_, v)| {
            let highest = v.iter().map(|p| p.priority()).max().unwrap_or(i32::MIN);
            let sum: i64 = v.iter().map(|p| i64::from(p.priority())).sum();
            (highest, sum, v.len())
        })
        .map(|(node, victims)| Plan { node, victims })
}

/// Evicts the victims and nominates the node for the preemptor.
pub async fn carry_out(client: &Client, preemptor: &Pod, plan: Plan) {
    let namespace = preemptor.metadata.namespace.as_deref().unwrap_or("default");
    let name = preemptor.metadata.name.as_deref().unwrap_or("");
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let patch = json!({"status": {"nominatedNodeName": plan.node}});
    if let Err(e) = pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        tracing::debug!(error = %e, "cannot nominate a node");
    }
    for victim in plan.victims {
        let victims: Api<Pod> = Api::namespaced(client.clone(), victim.namespace());
        let uid = preemptor.metadata.uid.as_deref().unwrap_or("");
        let message = format!("Preempted by pod {uid} on node {}", plan.node);
        crate::scheduler::event(client, &victim.pod, "Normal", "Preempted", &message).await;
        match victims.delete(victim.name(), &DeleteParams::default()).await {
            Ok(_) => tracing::info!(
                victim = victim.name(),
                preemptor = name,
                node = plan.node,
                "preempted"
            ),
            Err(e) => tracing::warn!(error = %e, victim = victim.name(), "cannot evict"),
        }
    }
}
