//! `TaintToleration`: a pod may not land on a node with a `NoSchedule` or `NoExecute` taint it
//! does not tolerate, and prefers nodes with fewer `PreferNoSchedule` taints it does not
//! tolerate.
//!
//! Node conditions count as the taints Kubernetes' node lifecycle controller puts on for
//! them (`node.kubernetes.io/not-ready`, `unreachable`, `memory-pressure`, `disk-pressure`,
//! `pid-pressure`, `network-unavailable`), so a node that is not Ready takes no pods even
//! before a controller has tainted it, with the same message a tainted node gives.

use k8s_openapi::api::core::v1::{Taint, Toleration};

use crate::framework::{FilterPlugin, NodeInfo, PodInfo, Rejection, ScorePlugin};
use crate::plugins::{default_normalize, tolerations_tolerate};

pub struct TaintToleration;

fn taints(node: &NodeInfo) -> &[Taint] {
    node.node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or(&[])
}

fn tolerations(pod: &PodInfo) -> &[Toleration] {
    pod.pod.spec.as_ref().and_then(|s| s.tolerations.as_deref()).unwrap_or(&[])
}

impl FilterPlugin for TaintToleration {
    fn name(&self) -> &'static str {
        "TaintToleration"
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo) -> Result<(), Rejection> {
        let tolerations = tolerations(pod);
        let implied = condition_taints(node);
        // Upstream reports the first offending taint, in the node's order.
        let untolerated = taints(node).iter().chain(implied.iter()).find(|taint| {
            matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
                && !tolerations_tolerate(tolerations, taint)
        });
        match untolerated {
            None => Ok(()),
            Some(taint) => Err(Rejection::new(format!(
                "node(s) had untolerated taint {{{}: {}}}",
                taint.key,
                taint.value.as_deref().unwrap_or("")
            ))),
        }
    }
}

/// The taints a node's conditions stand for, when the node does not carry them yet.
fn condition_taints(node: &NodeInfo) -> Vec<Taint> {
    let conditions = node.node.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or(&[]);
    let mut implied = Vec::new();
    for c in conditions {
        let key = match (c.type_.as_str(), c.status.as_str()) {
            ("Ready", "False") => "node.kubernetes.io/not-ready",
            ("Ready", "Unknown") => "node.kubernetes.io/unreachable",
            ("MemoryPressure", "True") => "node.kubernetes.io/memory-pressure",
            ("DiskPressure", "True") => "node.kubernetes.io/disk-pressure",
            ("PIDPressure", "True") => "node.kubernetes.io/pid-pressure",
            ("NetworkUnavailable", "True") => "node.kubernetes.io/network-unavailable",
            _ => continue,
        };
        if !taints(node).iter().any(|t| t.key == key) {
            implied.push(Taint {
                key: key.to_string(),
                effect: "NoSchedule".into(),
                ..Default::default()
            });
        }
    }
    implied
}

impl ScorePlugin for TaintToleration {
    fn name(&self) -> &'static str {
        "TaintToleration"
    }

    /// The number of `PreferNoSchedule` taints the pod does not tolerate; only tolerations
    /// for that effect (or for every effect) count.
    fn score(&self, pod: &PodInfo, node: &NodeInfo) -> i64 {
        if !taints(node).iter().any(|t| t.effect == "PreferNoSchedule") {
            return 0;
        }
        let prefer: Vec<Toleration> = tolerations(pod)
            .iter()
            .filter(|t| matches!(t.effect.as_deref().unwrap_or(""), "" | "PreferNoSchedule"))
            .cloned()
            .collect();
        taints(node)
            .iter()
            .filter(|taint| {
                taint.effect == "PreferNoSchedule" && !tolerations_tolerate(&prefer, taint)
            })
            .count() as i64
    }

    /// Fewer intolerable taints is better.
    fn normalize(&self, _pod: &PodInfo, scores: &mut [i64]) {
        default_normalize(scores, true);
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_node_that_is_not_ready_takes_no_pods_unless_they_tolerate_it() {
        let node: k8s_openapi::api::core::v1::Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n"},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]},
        }))
        .unwrap();
        let node = crate::framework::NodeInfo::new(std::sync::Arc::new(node));
        let plain: k8s_openapi::api::core::v1::Pod =
            serde_json::from_value(serde_json::json!({"spec": {"containers": [{"name": "c"}]}}))
                .unwrap();
        let plain = crate::framework::PodInfo::new(std::sync::Arc::new(plain));
        assert_eq!(
            TaintToleration.filter(&plain, &node),
            Err(Rejection::new("node(s) had untolerated taint {node.kubernetes.io/not-ready: }"))
        );
        let tolerant: k8s_openapi::api::core::v1::Pod =
            serde_json::from_value(serde_json::json!({"spec": {
                "containers": [{"name": "c"}],
                "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}],
            }}))
            .unwrap();
        let tolerant = crate::framework::PodInfo::new(std::sync::Arc::new(tolerant));
        assert_eq!(TaintToleration.filter(&tolerant, &node), Ok(()));
    }

    use serde_json::json;

    use super::*;
    use crate::plugins::testing::{node, pod};

    fn tainted(taints: serde_json::Value) -> NodeInfo {
        node(json!({
            "metadata": {"name": "cp-1", "labels": {"node-role.kubernetes.io/control-plane": ""}},
            "spec": {"taints": taints},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}
        }))
    }

    fn tolerating(tolerations: serde_json::Value) -> PodInfo {
        pod(json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "nginx"}], "tolerations": tolerations}
        }))
    }

    #[test]
    fn filter_rejects_the_first_untolerated_hard_taint_in_upstream_words() {
        let cp = tainted(
            json!([{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]),
        );
        let plain = tolerating(json!([]));
        assert_eq!(
            TaintToleration.filter(&plain, &cp),
            Err(Rejection::new(
                "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"
            ))
        );
        let tolerates_cp = tolerating(json!([
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
        ]));
        assert_eq!(TaintToleration.filter(&tolerates_cp, &cp), Ok(()));

        let node = tainted(json!([
            {"key": "soft", "value": "x", "effect": "PreferNoSchedule"},
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}
        ]));
        assert_eq!(
            TaintToleration.filter(&plain, &node),
            Err(Rejection::new("node(s) had untolerated taint {dedicated: gpu}")),
            "PreferNoSchedule is not a hard taint; the first hard one is reported"
        );
        let gpu_only = tolerating(json!([{"key": "dedicated", "value": "gpu"}]));
        assert_eq!(
            TaintToleration.filter(&gpu_only, &node),
            Err(Rejection::new("node(s) had untolerated taint {node.kubernetes.io/not-ready: }"))
        );
        let both = tolerating(json!([
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ]));
        assert_eq!(TaintToleration.filter(&both, &node), Ok(()));
    }

    #[test]
    fn score_counts_intolerable_prefer_no_schedule_taints_and_reverses() {
        let clean = tainted(json!([]));
        let one = tainted(json!([
            {"key": "a", "value": "1", "effect": "PreferNoSchedule"},
            {"key": "hard", "effect": "NoSchedule"}
        ]));
        let two = tainted(json!([
            {"key": "a", "value": "1", "effect": "PreferNoSchedule"},
            {"key": "b", "value": "2", "effect": "PreferNoSchedule"}
        ]));
        let plain = tolerating(json!([]));
        let mut scores: Vec<i64> =
            [&clean, &one, &two].iter().map(|n| TaintToleration.score(&plain, n)).collect();
        assert_eq!(scores, [0, 1, 2]);
        // Reversed against the worst (2): 100 - 100*0/2, 100 - 100*1/2, 100 - 100*2/2.
        TaintToleration.normalize(&plain, &mut scores);
        assert_eq!(scores, [100, 50, 0]);

        // A toleration for another effect does not help; one with no effect does.
        let no_execute_only =
            tolerating(json!([{"key": "a", "operator": "Exists", "effect": "NoExecute"}]));
        assert_eq!(TaintToleration.score(&no_execute_only, &two), 2);
        let any_effect = tolerating(json!([{"key": "a", "operator": "Exists"}]));
        assert_eq!(TaintToleration.score(&any_effect, &two), 1);
        let prefer = tolerating(json!([{"key": "b", "value": "2", "effect": "PreferNoSchedule"}]));
        assert_eq!(TaintToleration.score(&prefer, &two), 1);
    }
}
