//! `NodeAffinity`: the pod's `nodeSelector` and required node affinity decide which nodes it
//! may run on; its preferred node affinity terms rank the nodes by the weights they match.

use k8s_openapi::api::core::v1::NodeAffinity as Affinity;
use rkube_apis::node_selector::{self, term_matches};

use crate::framework::{CycleState, FilterPlugin, Next, NodeInfo, PodInfo, Rejection, ScorePlugin};
use crate::plugins::default_normalize;

/// Upstream's reason when the pod's selector or required affinity excludes the node.
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";

pub struct NodeAffinity;

fn affinity(pod: &PodInfo) -> Option<&Affinity> {
    pod.pod.spec.as_ref()?.affinity.as_ref()?.node_affinity.as_ref()
}

/// Whether the node satisfies the pod's `nodeSelector` and required node affinity.
pub fn matches_required(pod: &PodInfo, node: &NodeInfo) -> bool {
    let selector = pod.pod.spec.as_ref().and_then(|s| s.node_selector.as_ref());
    let required =
        affinity(pod).and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref());
    node_selector::matches_required(selector, required, node.labels(), node.name())
}

impl FilterPlugin for NodeAffinity {
    fn name(&self) -> &'static str {
        "NodeAffinity"
    }

    /// Nothing to check for a pod without a node selector or required node affinity
    /// (upstream skips it).
    fn pre_filter(&self, pod: &PodInfo, _state: &mut CycleState<'_>) -> Result<Next, Rejection> {
        let selector = pod.pod.spec.as_ref().and_then(|s| s.node_selector.as_ref());
        let required = affinity(pod)
            .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref());
        Ok(if selector.is_none_or(|s| s.is_empty()) && required.is_none() {
            Next::Skip
        } else {
            Next::Run
        })
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo) -> Result<(), Rejection> {
        if matches_required(pod, node) {
            Ok(())
        } else {
            Err(Rejection::new(ERR_REASON_POD))
        }
    }
}

impl ScorePlugin for NodeAffinity {
    fn name(&self) -> &'static str {
        "NodeAffinity"
    }

    /// Nothing to score a pod without preferred node affinity terms by (upstream skips it).
    fn pre_score(
        &self,
        pod: &PodInfo,
        _feasible: &[&NodeInfo],
        _state: &mut CycleState<'_>,
    ) -> Next {
        let preferred = affinity(pod)
            .and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_ref());
        if preferred.is_none_or(|p| p.is_empty()) {
            Next::Skip
        } else {
            Next::Run
        }
    }

    /// The sum of the weights of the preferred terms the node matches.
    fn score(&self, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let Some(preferred) = affinity(pod)
            .and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_ref())
        else {
            return 0;
        };
        preferred
            .iter()
            .filter(|p| {
                p.weight != 0
                    && term_matches(&p.preference, node.labels(), node.name()) == Some(true)
            })
            .map(|p| i64::from(p.weight))
            .sum()
    }

    /// The best-matching node gets the maximum, the others in proportion.
    fn normalize(&self, _pod: &PodInfo, scores: &mut [i64]) {
        default_normalize(scores, false);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugins::testing::{node, pod};

    fn labelled(name: &str, labels: serde_json::Value) -> NodeInfo {
        node(json!({
            "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}
        }))
    }

    fn with_spec(extra: serde_json::Value) -> PodInfo {
        let mut spec = json!({"containers": [{"name": "app", "image": "nginx"}]});
        spec.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        pod(json!({"metadata": {"name": "web", "namespace": "default"}, "spec": spec}))
    }

    fn required(terms: serde_json::Value) -> PodInfo {
        with_spec(json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }}}))
    }

    fn rejected() -> Result<(), Rejection> {
        Err(Rejection::new("node(s) didn't match Pod's node affinity/selector"))
    }

    #[test]
    fn node_selector_needs_every_label() {
        let ssd = labelled("a", json!({"disktype": "ssd", "zone": "z1"}));
        let hdd = labelled("b", json!({"disktype": "hdd", "zone": "z1"}));
        let p = with_spec(json!({"nodeSelector": {"disktype": "ssd", "zone": "z1"}}));
        assert_eq!(NodeAffinity.filter(&p, &ssd), Ok(()));
        assert_eq!(NodeAffinity.filter(&p, &hdd), rejected());
        assert_eq!(NodeAffinity.filter(&p, &labelled("c", json!({}))), rejected());
    }

    #[test]
    fn required_terms_are_ored_and_expressions_anded() {
        let node = labelled("worker-1", json!({"zone": "z1", "gen": "5", "gpu": "true"}));
        let expect = |terms: serde_json::Value, fits: bool| {
            let got = NodeAffinity.filter(&required(terms.clone()), &node);
            assert_eq!(got.is_ok(), fits, "{terms}");
            if !fits {
                assert_eq!(got, rejected());
            }
        };
        let expr = |key: &str, op: &str, values: serde_json::Value| json!([{"matchExpressions": [{"key": key, "operator": op, "values": values}]}]);
        expect(expr("zone", "In", json!(["z1", "z2"])), true);
        expect(expr("zone", "In", json!(["z2"])), false);
        expect(expr("zone", "NotIn", json!(["z2"])), true);
        expect(expr("zone", "NotIn", json!(["z1"])), false);
        expect(expr("missing", "NotIn", json!(["x"])), true);
        expect(json!([{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]), true);
        expect(json!([{"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}]), false);
        expect(json!([{"matchExpressions": [{"key": "tpu", "operator": "DoesNotExist"}]}]), true);
        expect(expr("gen", "Gt", json!(["4"])), true);
        expect(expr("gen", "Gt", json!(["5"])), false);
        expect(expr("gen", "Lt", json!(["6"])), true);
        expect(expr("zone", "Gt", json!(["4"])), false);
        expect(expr("missing", "Lt", json!(["4"])), false);
        // Malformed requirements match nothing.
        expect(expr("gen", "Gt", json!(["4", "5"])), false);
        expect(expr("gen", "Gt", json!(["four"])), false);
        expect(expr("zone", "In", json!([])), false);
        expect(expr("gpu", "Exists", json!(["true"])), false);
        expect(expr("zone", "Like", json!(["z1"])), false);
        // AND within a term.
        expect(
            json!([{"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["z1"]},
                {"key": "gpu", "operator": "DoesNotExist"}
            ]}]),
            false,
        );
        // OR across terms; an empty term matches nothing; no terms match nothing.
        expect(
            json!([
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z9"]}]},
                {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}
            ]),
            true,
        );
        expect(json!([{}]), false);
        expect(json!([]), false);
        // matchFields on metadata.name.
        expect(
            json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker-1"]}]}]),
            true,
        );
        expect(
            json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker-2"]}]}]),
            false,
        );
        expect(
            json!([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["worker-2"]}]}]),
            true,
        );
        expect(
            json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker-1", "worker-2"]}]}]),
            false,
        );
        expect(
            json!([{
                "matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}],
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker-2"]}]
            }]),
            false,
        );
    }

    #[test]
    fn selector_and_affinity_must_both_hold() {
        let node = labelled("a", json!({"zone": "z1"}));
        let p = with_spec(json!({
            "nodeSelector": {"zone": "z1"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]}]}
            ]}}}
        }));
        assert_eq!(NodeAffinity.filter(&p, &node), rejected());
    }

    #[test]
    fn preferred_terms_sum_weights_then_normalize() {
        let p = with_spec(
            json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 80, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}},
                {"weight": 20, "preference": {"matchExpressions": [{"key": "disktype", "operator": "In", "values": ["ssd"]}]}},
                {"weight": 50, "preference": {}}
            ]}}}),
        );
        let nodes = [
            labelled("a", json!({"zone": "z1", "disktype": "ssd"})),
            labelled("b", json!({"zone": "z1"})),
            labelled("c", json!({"disktype": "ssd"})),
            labelled("d", json!({})),
        ];
        let mut scores: Vec<i64> = nodes.iter().map(|n| NodeAffinity.score(&p, n)).collect();
        assert_eq!(scores, [100, 80, 20, 0]);
        NodeAffinity.normalize(&p, &mut scores);
        assert_eq!(scores, [100, 80, 20, 0]);

        // Only the zone matches anywhere: 20*100/20 = 100 for the ssd nodes, 0 elsewhere.
        let mut scores = [20, 0, 20];
        NodeAffinity.normalize(&p, &mut scores);
        assert_eq!(scores, [100, 0, 100]);
        // Max 80: 20 -> 100*20/80 = 25.
        let mut scores = [80, 20, 0];
        NodeAffinity.normalize(&p, &mut scores);
        assert_eq!(scores, [100, 25, 0]);

        let plain = with_spec(json!({}));
        assert_eq!(NodeAffinity.score(&plain, &nodes[0]), 0);
    }

    #[test]
    fn pods_without_node_affinity_skip_filter_and_score() {
        let nodes = [labelled("a", json!({"zone": "z1"}))];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let mut state = CycleState::new(&refs);
        let plain = with_spec(json!({}));
        assert_eq!(NodeAffinity.pre_filter(&plain, &mut state), Ok(Next::Skip));
        assert_eq!(NodeAffinity.pre_score(&plain, &refs, &mut state), Next::Skip);
        let selector = with_spec(json!({"nodeSelector": {"zone": "z1"}}));
        assert_eq!(NodeAffinity.pre_filter(&selector, &mut state), Ok(Next::Run));
        assert_eq!(NodeAffinity.pre_score(&selector, &refs, &mut state), Next::Skip);
        // Required terms, even none, are checked: no terms match no node.
        let none = with_spec(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}),
        );
        assert_eq!(NodeAffinity.pre_filter(&none, &mut state), Ok(Next::Run));
        let preferred = with_spec(
            json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}}
            ]}}}),
        );
        assert_eq!(NodeAffinity.pre_score(&preferred, &refs, &mut state), Next::Run);
    }
}
