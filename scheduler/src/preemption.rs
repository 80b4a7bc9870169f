//! Preemption (upstream's DefaultPreemption PostFilter): when a pod fits nowhere, find the
//! node where evicting the fewest, lowest-priority pods would let it fit, evict them, and
//! nominate the node (`status.nominatedNodeName`). The pod is scheduled for real once the
//! victims are gone.
//!
//! PodDisruptionBudgets (the scheduler's informer's cache of them, their status kept by the
//! disruption controller) are respected where they can be, as upstream does: a victim whose
//! eviction would take a budget below what its `status.disruptionsAllowed` permits is put
//! back first, and the node needing the fewest such violations wins; a pod the eviction API
//! already counted against its budget (`status.disruptedPods`) uses up nothing more.
//! Victims get the `DisruptionTarget` condition (`PreemptionByScheduler`) and are deleted, as
//! upstream's preemption does, not evicted through the eviction API.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::Client;
use rkube_runtime::events::{pod_reference, Recorder};
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

/// Splits candidate victims (most important first) into those whose eviction would violate
/// a PodDisruptionBudget and the others (upstream's filterPodsWithPDBViolation): each pod a
/// budget selects uses up one of its allowed disruptions, unless the budget already counts
/// it as disrupted; past them, it violates. Budgets with an empty selector select nothing
/// here, as upstream.
fn split_by_budgets(
    pods: Vec<Arc<PodInfo>>,
    budgets: &[Arc<PodDisruptionBudget>],
) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
    let mut allowed: Vec<i32> = budgets
        .iter()
        .map(|b| b.status.as_ref().map(|s| s.disruptions_allowed).unwrap_or(0))
        .collect();
    let selectors: Vec<_> = budgets
        .iter()
        .map(|b| {
            let selector = b.spec.as_ref().and_then(|s| s.selector.as_ref());
            let selector = crate::plugins::label_selector(selector, &BTreeMap::new());
            (!selector.is_empty()).then_some(selector)
        })
        .collect();
    let (mut violating, mut fine) = (Vec::new(), Vec::new());
    for pod in pods {
        let labels = pod.pod.metadata.labels.clone().unwrap_or_default();
        let mut violates = false;
        for (i, budget) in budgets.iter().enumerate() {
            let same_namespace = budget.metadata.namespace.as_deref() == Some(pod.namespace());
            let selected = selectors[i].as_ref().is_some_and(|s| s.matches(&labels));
            let counted = budget
                .status
                .as_ref()
                .and_then(|s| s.disrupted_pods.as_ref())
                .is_some_and(|d| d.contains_key(pod.name()));
            if same_namespace && selected && !counted {
                allowed[i] -= 1;
                violates |= allowed[i] < 0;
            }
        }
        if violates {
            violating.push(pod);
        } else {
            fine.push(pod);
        }
    }
    (violating, fine)
}

/// The victims on one node and how many of them violate a budget: every lower-priority
/// pod taken off, then as many as possible put back, highest priority first, the ones a
/// budget protects before the others (upstream's reprieve). `None` when even an empty
/// node of lower-priority pods would not do.
fn victims_on(
    profile: &Profile,
    pod: &PodInfo,
    node: &NodeInfo,
    all: &[&NodeInfo],
    budgets: &[Arc<PodDisruptionBudget>],
) -> Option<(Vec<Arc<PodInfo>>, usize)> {
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
    let (violating, fine) = split_by_budgets(lower, budgets);
    let mut victims = Vec::new();
    let mut violations = 0;
    for (protected, group) in [(true, violating), (false, fine)] {
        for p in group {
            trial.add_pod(p.clone());
            if !fits(profile, pod, &trial, all) {
                trial.remove_pod(p.namespace(), p.name());
                victims.push(p);
                violations += usize::from(protected);
            }
        }
    }
    Some((victims, violations))
}

/// The best node to preempt on, by upstream's order: the fewest budget violations, then
/// the lowest highest-victim priority, then the lowest sum of victim priorities, then the
/// fewest victims.
pub fn find(
    profile: &Profile,
    pod: &PodInfo,
    nodes: &[&NodeInfo],
    budgets: &[Arc<PodDisruptionBudget>],
) -> Option<Plan> {
    nodes
        .iter()
        .filter_map(|node| {
            victims_on(profile, pod, node, nodes, budgets).map(|v| (node.name().to_string(), v))
        })
        .filter(|(_, (v, _))| !v.is_empty())
        .min_by_key(|(_, (v, violations))| {
            let highest = v.iter().map(|p| p.priority()).max().unwrap_or(i32::MIN);
            let sum: i64 = v.iter().map(|p| i64::from(p.priority())).sum();
            (*violations, highest, sum, v.len())
        })
        .map(|(node, (victims, _))| Plan { node, victims })
}

/// The condition a victim gets before it is deleted.
fn disruption_target(preemptor: &Pod) -> serde_json::Value {
    let scheduler = preemptor.spec.as_ref().and_then(|s| s.scheduler_name.as_deref());
    json!({
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": format!(
            "{}: preempting to accommodate a higher priority pod",
            scheduler.unwrap_or("default-scheduler")
        ),
        "lastTransitionTime": Time(Timestamp::now()),
    })
}

/// Evicts the victims and nominates the node for the preemptor.
pub async fn carry_out(client: &Client, recorder: &Recorder, preemptor: &Pod, plan: Plan) {
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
        // Marked first (the uid naming this very pod), as upstream does; a victim that
        // cannot be marked is not deleted.
        let marked =
            victim.pod.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|c| {
                c.iter().any(|c| {
                    c.type_ == "DisruptionTarget"
                        && c.status == "True"
                        && c.reason.as_deref() == Some("PreemptionByScheduler")
                })
            });
        if !marked {
            let patch = json!({
                "metadata": {"uid": victim.pod.metadata.uid},
                "status": {"conditions": [disruption_target(preemptor)]},
            });
            let params = PatchParams::default();
            if let Err(e) =
                victims.patch_status(victim.name(), &params, &Patch::Strategic(&patch)).await
            {
                tracing::warn!(error = %e, victim = victim.name(), "cannot mark the victim; not preempting it");
                continue;
            }
        }
        recorder.record(&pod_reference(&victim.pod), "Normal", "Preempted", &message);
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugins::default_profile;
    use crate::plugins::testing::{node_with, pod};

    fn with_priority(name: &str, app: &str, priority: i32, cpu: &str) -> PodInfo {
        pod(json!({
            "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
            "spec": {"priority": priority, "containers": [
                {"name": "a", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
            ]}
        }))
    }

    fn budget(
        namespace: &str,
        selector: serde_json::Value,
        allowed: i32,
    ) -> Arc<PodDisruptionBudget> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": "pdb", "namespace": namespace},
                "spec": {"selector": selector, "minAvailable": 1},
                "status": {"disruptionsAllowed": allowed, "currentHealthy": 1, "desiredHealthy": 1,
                           "expectedPods": 1, "observedGeneration": 1}
            }))
            .unwrap(),
        )
    }

    fn small(name: &str, pods: Vec<PodInfo>) -> NodeInfo {
        node_with(name, json!({"cpu": "2", "memory": "4Gi", "pods": "110"}), pods)
    }

    fn names(plan: &Plan) -> Vec<&str> {
        plan.victims.iter().map(|v| v.name()).collect()
    }

    #[test]
    fn a_budget_keeps_its_pod_when_another_victim_will_do() {
        let node = small(
            "n",
            vec![with_priority("guarded", "db", 10, "1"), with_priority("free", "web", 10, "1")],
        );
        let urgent = with_priority("urgent", "x", 1000, "1");
        let profile = default_profile();
        let db = budget("default", json!({"matchLabels": {"app": "db"}}), 0);
        let plan = find(&profile, &urgent, &[&node], &[db]).unwrap();
        assert_eq!(names(&plan), ["free"]);
        let web = budget("default", json!({"matchLabels": {"app": "web"}}), 0);
        let plan = find(&profile, &urgent, &[&node], &[web]).unwrap();
        assert_eq!(names(&plan), ["guarded"]);
    }

    #[test]
    fn the_node_with_fewer_violations_wins_over_lower_priorities() {
        let cheap = small("cheap", vec![with_priority("guarded", "db", 5, "2")]);
        let dear = small("dear", vec![with_priority("free", "web", 10, "2")]);
        let urgent = with_priority("urgent", "x", 1000, "1");
        let profile = default_profile();
        // Without budgets, the lowest-priority victim decides.
        assert_eq!(find(&profile, &urgent, &[&cheap, &dear], &[]).unwrap().node, "cheap");
        let db = budget("default", json!({"matchLabels": {"app": "db"}}), 0);
        let plan = find(&profile, &urgent, &[&cheap, &dear], std::slice::from_ref(&db)).unwrap();
        assert_eq!(plan.node, "dear");
        // With no other way, a budget is violated all the same.
        let plan = find(&profile, &urgent, &[&cheap], &[db]);
        assert_eq!(names(&plan.unwrap()), ["guarded"]);
    }

    #[test]
    fn budgets_count_their_allowed_disruptions() {
        let pods: Vec<Arc<PodInfo>> =
            ["a", "b", "c"].iter().map(|n| Arc::new(with_priority(n, "db", 10, "100m"))).collect();
        let db = budget("default", json!({"matchLabels": {"app": "db"}}), 1);
        let (violating, fine) = split_by_budgets(pods.clone(), &[db]);
        assert_eq!(fine.iter().map(|p| p.name()).collect::<Vec<_>>(), ["a"]);
        assert_eq!(violating.iter().map(|p| p.name()).collect::<Vec<_>>(), ["b", "c"]);
        // An empty selector selects nothing here (upstream), nor does another namespace's.
        let (violating, _) = split_by_budgets(pods.clone(), &[budget("default", json!({}), 0)]);
        assert!(violating.is_empty());
        let other = budget("other", json!({"matchLabels": {"app": "db"}}), 0);
        let (violating, _) = split_by_budgets(pods.clone(), &[other]);
        assert!(violating.is_empty());
        // A pod the eviction API already counted uses up nothing more.
        let mut counted = (*budget("default", json!({"matchLabels": {"app": "db"}}), 1)).clone();
        let status = counted.status.as_mut().unwrap();
        status.disrupted_pods = Some([("a".to_string(), Time(Timestamp::now()))].into());
        let (violating, fine) = split_by_budgets(pods, &[Arc::new(counted)]);
        assert_eq!(fine.iter().map(|p| p.name()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(violating.iter().map(|p| p.name()).collect::<Vec<_>>(), ["c"]);
    }

    #[test]
    fn victims_are_marked_as_upstream_marks_them() {
        let preemptor: Pod = serde_json::from_value(json!({
            "metadata": {"name": "urgent"}, "spec": {"schedulerName": "my-scheduler", "containers": []}
        }))
        .unwrap();
        let condition = disruption_target(&preemptor);
        assert_eq!(condition["reason"], "PreemptionByScheduler");
        assert_eq!(
            condition["message"],
            "my-scheduler: preempting to accommodate a higher priority pod"
        );
    }
}
