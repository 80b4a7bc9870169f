//! Which nodes a DaemonSet's pod belongs on, and how its pods are pinned there: upstream's
//! `NodeShouldRunDaemonPod` (the template's node name, node selector and required node
//! affinity match the node; its taints are tolerated, with the tolerations every daemon pod
//! gets), `ReplaceDaemonSetPodNodeNameNodeAffinity` and `GetTargetNodeName`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PodSpec, PodTemplateSpec, Taint, Toleration,
};
use rkube_apis::node_selector::{matches_required, NODE_NAME_FIELD};
use rkube_apis::taints::tolerations_tolerate;

const NO_SCHEDULE: &str = "NoSchedule";
const NO_EXECUTE: &str = "NoExecute";

/// The tolerations upstream adds to every daemon pod, so that node conditions neither keep it
/// off a node nor evict it: (key, effect).
const DEFAULT_TOLERATIONS: [(&str, &str); 6] = [
    ("node.kubernetes.io/not-ready", NO_EXECUTE),
    ("node.kubernetes.io/unreachable", NO_EXECUTE),
    ("node.kubernetes.io/disk-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/memory-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/pid-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/unschedulable", NO_SCHEDULE),
];
/// Added for host-network pods: they need no pod network.
const NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";

fn exists(key: &str, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        effect: Some(effect.into()),
        ..Toleration::default()
    }
}

/// Adds `toleration` as upstream's `AddOrUpdateTolerationInPodSpec`: a toleration with the same
/// key, operator, value and effect is replaced by it (unless identical), else it is appended.
fn add_or_update(tolerations: &mut Vec<Toleration>, toleration: Toleration) {
    let same = |t: &Toleration| {
        t.key == toleration.key
            && t.operator == toleration.operator
            && t.value == toleration.value
            && t.effect == toleration.effect
    };
    if tolerations.contains(&toleration) {
        return;
    }
    let mut replaced = false;
    let mut updated = Vec::with_capacity(tolerations.len() + 1);
    for t in tolerations.drain(..) {
        if !same(&t) {
            updated.push(t);
        } else if !replaced {
            updated.push(toleration.clone());
            replaced = true;
        }
    }
    if !replaced {
        updated.push(toleration);
    }
    *tolerations = updated;
}

/// The spec's tolerations with the daemon pods' default ones (upstream's
/// `AddOrUpdateDaemonPodTolerations`).
pub fn daemon_tolerations(spec: &PodSpec) -> Vec<Toleration> {
    let mut tolerations = spec.tolerations.clone().unwrap_or_default();
    for (key, effect) in DEFAULT_TOLERATIONS {
        add_or_update(&mut tolerations, exists(key, effect));
    }
    if spec.host_network == Some(true) {
        add_or_update(&mut tolerations, exists(NETWORK_UNAVAILABLE, NO_SCHEDULE));
    }
    tolerations
}

/// Whether a daemon pod should be on a node: `should_run` (a missing pod is created there) and
/// `should_continue` (a pod already there stays: only untolerated NoExecute taints, or a
/// selector, affinity or node name that no longer matches, send it away).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub should_run: bool,
    pub should_continue: bool,
}

/// Upstream's `NodeShouldRunDaemonPod` for the DaemonSet's template on `node`.
pub fn placement(template: &PodTemplateSpec, node: &Node) -> Placement {
    let nowhere = Placement { should_run: false, should_continue: false };
    let default_spec = PodSpec::default();
    let spec = template.spec.as_ref().unwrap_or(&default_spec);
    let node_name = node.metadata.name.as_deref().unwrap_or("");
    if spec.node_name.as_deref().is_some_and(|n| !n.is_empty() && n != node_name) {
        return nowhere;
    }
    if !fits_node_affinity(spec, node) {
        return nowhere;
    }
    let tolerations = daemon_tolerations(spec);
    let taints: &[Taint] = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or(&[]);
    let untolerated = |effects: &[&str]| {
        taints
            .iter()
            .any(|t| effects.contains(&t.effect.as_str()) && !tolerations_tolerate(&tolerations, t))
    };
    if untolerated(&[NO_SCHEDULE, NO_EXECUTE]) {
        return Placement { should_run: false, should_continue: !untolerated(&[NO_EXECUTE]) };
    }
    Placement { should_run: true, should_continue: true }
}

/// Whether the node has every label of the spec's `nodeSelector` and matches one term of its
/// required node affinity (upstream's `GetRequiredNodeAffinity(pod).Match(node)`).
pub fn fits_node_affinity(spec: &PodSpec, node: &Node) -> bool {
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref());
    let node_name = node.metadata.name.as_deref().unwrap_or("");
    matches_required(spec.node_selector.as_ref(), required, labels, node_name)
}

/// The affinity of a daemon pod for `node`: the template's, with its required node affinity
/// replaced by the one term `metadata.name In [node]` (safe: the node already matched the
/// template's terms), so the scheduler puts it there.
pub fn pin_to_node(affinity: Option<Affinity>, node: &str) -> Affinity {
    let selector = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_fields: Some(vec![NodeSelectorRequirement {
                key: NODE_NAME_FIELD.into(),
                operator: "In".into(),
                values: Some(vec![node.into()]),
            }]),
            match_expressions: None,
        }],
    };
    let mut affinity = affinity.unwrap_or_default();
    let node_affinity = affinity.node_affinity.get_or_insert_with(NodeAffinity::default);
    node_affinity.required_during_scheduling_ignored_during_execution = Some(selector);
    affinity
}

/// The node a daemon pod is for: its `spec.nodeName`, else the one node its required node
/// affinity names by `metadata.name` (upstream's `GetTargetNodeName`).
pub fn target_node(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(name) = spec.node_name.as_ref().filter(|n| !n.is_empty()) {
        return Some(name.clone());
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms.iter().flat_map(|t| t.match_fields.iter().flatten()).find_map(|r| {
        match (r.key.as_str(), r.operator.as_str(), r.values.as_deref()) {
            (NODE_NAME_FIELD, "In", Some([name])) => Some(name.clone()),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(value: serde_json::Value) -> Node {
        serde_json::from_value(value).unwrap()
    }

    fn template(spec: serde_json::Value) -> PodTemplateSpec {
        let mut full = json!({"containers": [{"name": "c", "image": "i"}]});
        full.as_object_mut().unwrap().extend(spec.as_object().unwrap().clone());
        serde_json::from_value(json!({"metadata": {"labels": {"app": "d"}}, "spec": full})).unwrap()
    }

    fn runs(should_run: bool, should_continue: bool) -> Placement {
        Placement { should_run, should_continue }
    }

    #[test]
    fn every_plain_node_runs_a_plain_daemon_set() {
        let n = node(json!({"metadata": {"name": "n1"}}));
        assert_eq!(placement(&template(json!({})), &n), runs(true, true));
        let pinned = template(json!({"nodeName": "n2"}));
        assert_eq!(placement(&pinned, &n), runs(false, false));
        assert_eq!(placement(&template(json!({"nodeName": "n1"})), &n), runs(true, true));
    }

    #[test]
    fn node_selectors_and_required_affinity_choose_nodes() {
        let ssd = node(json!({"metadata": {"name": "a", "labels": {"disk": "ssd", "rank": "5"}}}));
        let hdd = node(json!({"metadata": {"name": "b", "labels": {"disk": "hdd"}}}));
        let selected = template(json!({"nodeSelector": {"disk": "ssd"}}));
        assert_eq!(placement(&selected, &ssd), runs(true, true));
        assert_eq!(placement(&selected, &hdd), runs(false, false));
        let affinity = |terms| {
            template(json!({"affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }}}))
        };
        let gt = affinity(json!([{"matchExpressions": [
            {"key": "rank", "operator": "Gt", "values": ["3"]}
        ]}]));
        assert!(placement(&gt, &ssd).should_run);
        assert!(!placement(&gt, &hdd).should_run);
        // Terms are ORed: the second one lets "b" in by name.
        let either = affinity(json!([
            {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}
        ]));
        assert!(placement(&either, &ssd).should_run && placement(&either, &hdd).should_run);
        let not_in = affinity(
            json!([{"matchExpressions": [{"key": "disk", "operator": "NotIn", "values": ["ssd"]}]}]),
        );
        assert!(!placement(&not_in, &ssd).should_run && placement(&not_in, &hdd).should_run);
        // No terms, an empty term, or a malformed one match nothing.
        assert!(!placement(&affinity(json!([])), &ssd).should_run);
        assert!(!placement(&affinity(json!([{}])), &ssd).should_run);
        let malformed = affinity(
            json!([{"matchExpressions": [{"key": "disk", "operator": "In", "values": []}]}]),
        );
        assert!(!placement(&malformed, &ssd).should_run);
    }

    #[test]
    fn taints_keep_new_pods_off_and_only_no_execute_sends_them_away() {
        let tainted = |effect: &str| {
            node(json!({"metadata": {"name": "n"}, "spec": {"taints": [
                {"key": "dedicated", "value": "db", "effect": effect}
            ]}}))
        };
        let plain = template(json!({}));
        assert_eq!(placement(&plain, &tainted("NoSchedule")), runs(false, true));
        assert_eq!(placement(&plain, &tainted("NoExecute")), runs(false, false));
        assert_eq!(placement(&plain, &tainted("PreferNoSchedule")), runs(true, true));
        let tolerant =
            template(json!({"tolerations": [{"key": "dedicated", "operator": "Exists"}]}));
        assert_eq!(placement(&tolerant, &tainted("NoExecute")), runs(true, true));
        let only_schedule = template(json!({"tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}
        ]}));
        assert_eq!(placement(&only_schedule, &tainted("NoSchedule")), runs(true, true));
        assert_eq!(placement(&only_schedule, &tainted("NoExecute")), runs(false, false));
    }

    #[test]
    fn daemon_pods_tolerate_node_conditions() {
        let condition = |key: &str, effect: &str| {
            node(
                json!({"metadata": {"name": "n"}, "spec": {"taints": [{"key": key, "effect": effect}]}}),
            )
        };
        let plain = template(json!({}));
        for (key, effect) in [
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
        ] {
            assert_eq!(placement(&plain, &condition(key, effect)), runs(true, true), "{key}");
        }
        let network = condition(NETWORK_UNAVAILABLE, "NoSchedule");
        assert_eq!(placement(&plain, &network), runs(false, true));
        assert_eq!(placement(&template(json!({"hostNetwork": true})), &network), runs(true, true));
        // A not-ready toleration with a time limit is replaced by the default one.
        let spec: PodSpec = serde_json::from_value(json!({"containers": [], "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
            {"key": "mine", "operator": "Exists"}
        ]}))
        .unwrap();
        let tolerations = daemon_tolerations(&spec);
        assert_eq!(tolerations.len(), 7);
        assert_eq!(tolerations[0], exists("node.kubernetes.io/not-ready", NO_EXECUTE));
        assert_eq!(tolerations[1].key.as_deref(), Some("mine"));
    }

    #[test]
    fn pods_are_pinned_by_a_node_name_field_term() {
        let pinned = pin_to_node(None, "n1");
        let expected = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n1"]}
            ]}]
        }}});
        assert_eq!(serde_json::to_value(&pinned).unwrap(), expected);
        // The template's required terms are replaced; everything else is kept.
        let own: Affinity = serde_json::from_value(json!({
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
                ]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": {"matchExpressions": [
                        {"key": "zone", "operator": "Exists"}
                    ]}}
                ]
            },
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "d"}}}
            ]}
        }))
        .unwrap();
        let merged = serde_json::to_value(pin_to_node(Some(own), "n2")).unwrap();
        assert_eq!(
            merged["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
            json!({"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n2"]}
            ]}]})
        );
        assert_eq!(
            merged["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"],
            1
        );
        assert_eq!(
            merged["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
                ["topologyKey"],
            "zone"
        );
        let with_both_targets = |node_name: Option<&str>| Pod {
            spec: Some(PodSpec {
                node_name: node_name.map(String::from),
                affinity: Some(pin_to_node(None, "n3")),
                ..PodSpec::default()
            }),
            ..Pod::default()
        };
        assert_eq!(target_node(&with_both_targets(None)).as_deref(), Some("n3"));
        assert_eq!(target_node(&with_both_targets(Some("n4"))).as_deref(), Some("n4"));
        assert_eq!(target_node(&Pod::default()), None);
    }
}
