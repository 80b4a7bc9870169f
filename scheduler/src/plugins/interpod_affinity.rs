//! `InterPodAffinity`: a pod may ask to run in the same topology domain (node, zone, ...) as
//! pods matching a selector (`podAffinity`) or away from them (`podAntiAffinity`), and pods
//! already running may ask the same of newcomers. Required terms filter nodes; preferred
//! terms (and, with weight 1, existing pods' required affinity) score them.
//!
//! Both extension points count, once per cycle, which topology domains hold matching pods
//! (upstream's PreFilter / PreScore) and then look each node's labels up in those counts.
//!
//! Namespaces: a term applies to the namespaces it lists, or to its own pod's namespace when
//! it lists none and has no `namespaceSelector`. The scheduler does not watch Namespace
//! objects, so a `namespaceSelector` is matched against the one label every namespace
//! carries, `kubernetes.io/metadata.name`: `{}` and selectors on that label behave as
//! upstream; a selector on any other namespace label matches no namespace (unless it only
//! excludes). `matchLabelKeys` / `mismatchLabelKeys` are merged into the selector by the API
//! server in v1.33 and are not read here.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Pod, PodAffinityTerm, WeightedPodAffinityTerm};
use rkube_apis::selectors::LabelSelector;

use crate::framework::MAX_NODE_SCORE;
use crate::framework::{CycleState, FilterPlugin, Next, NodeInfo, PodInfo, Rejection, ScorePlugin};
use crate::plugins::{label_selector, pod_labels, TopologyCounts};

/// The incoming pod's required affinity is not met on the node.
pub const ERR_REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
/// The incoming pod's required anti-affinity is not met on the node.
pub const ERR_REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
/// A pod already running has required anti-affinity to the incoming pod in the node's domain.
pub const ERR_REASON_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

/// What existing pods' required affinity terms weigh when scoring (upstream's
/// `hardPodAffinityWeight` default).
pub const HARD_POD_AFFINITY_WEIGHT: i64 = 1;

/// The label every namespace carries with its own name.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

const PRE_FILTER_KEY: &str = "PreFilterInterPodAffinity";
const PRE_SCORE_KEY: &str = "PreScoreInterPodAffinity";

pub struct InterPodAffinity;

/// One pod affinity term, with its namespaces resolved.
#[derive(Clone, Debug)]
pub struct AffinityTerm {
    namespaces: BTreeSet<String>,
    namespace_selector: Option<LabelSelector>,
    selector: LabelSelector,
    topology_key: String,
}

impl AffinityTerm {
    fn new(term: &PodAffinityTerm, owner_namespace: &str) -> AffinityTerm {
        let listed = term.namespaces.as_deref().unwrap_or(&[]);
        let namespaces = if listed.is_empty() && term.namespace_selector.is_none() {
            BTreeSet::from([owner_namespace.to_string()])
        } else {
            listed.iter().cloned().collect()
        };
        AffinityTerm {
            namespaces,
            namespace_selector: term
                .namespace_selector
                .as_ref()
                .map(|s| label_selector(Some(s), &BTreeMap::new())),
            selector: label_selector(term.label_selector.as_ref(), &BTreeMap::new()),
            topology_key: term.topology_key.clone(),
        }
    }

    /// Whether the pod is one the term is about: in one of its namespaces and matching its
    /// label selector.
    fn matches(&self, pod: &PodInfo) -> bool {
        let namespace = pod.namespace();
        let in_namespace = self.namespaces.contains(namespace)
            || self.namespace_selector.as_ref().is_some_and(|s| {
                s.matches_with(|key| (key == NAMESPACE_NAME_LABEL).then_some(namespace))
            });
        in_namespace && self.selector.matches(pod_labels(pod))
    }

    /// The node's value for the term's topology key, if the node has the label.
    fn value<'n>(&self, node: &'n NodeInfo) -> Option<&'n str> {
        node.labels().get(&self.topology_key).map(String::as_str)
    }
}

/// A pod's affinity and anti-affinity terms, parsed once when its [`PodInfo`] is made.
#[derive(Clone, Debug, Default)]
pub struct AffinityTerms {
    pub required_affinity: Vec<AffinityTerm>,
    pub required_anti_affinity: Vec<AffinityTerm>,
    pub preferred_affinity: Vec<(AffinityTerm, i64)>,
    pub preferred_anti_affinity: Vec<(AffinityTerm, i64)>,
}

impl AffinityTerms {
    pub fn of(pod: &Pod) -> AffinityTerms {
        let Some(affinity) = pod.spec.as_ref().and_then(|s| s.affinity.as_ref()) else {
            return AffinityTerms::default();
        };
        if affinity.pod_affinity.is_none() && affinity.pod_anti_affinity.is_none() {
            return AffinityTerms::default();
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let required = |terms: Option<&Vec<PodAffinityTerm>>| -> Vec<AffinityTerm> {
            terms.into_iter().flatten().map(|t| AffinityTerm::new(t, ns)).collect()
        };
        let preferred = |terms: Option<&Vec<WeightedPodAffinityTerm>>| -> Vec<(AffinityTerm, i64)> {
            terms
                .into_iter()
                .flatten()
                .map(|t| (AffinityTerm::new(&t.pod_affinity_term, ns), i64::from(t.weight)))
                .collect()
        };
        let affinity_terms = affinity.pod_affinity.as_ref();
        let anti_terms = affinity.pod_anti_affinity.as_ref();
        AffinityTerms {
            required_affinity: required(
                affinity_terms
                    .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref()),
            ),
            required_anti_affinity: required(
                anti_terms
                    .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref()),
            ),
            preferred_affinity: preferred(
                affinity_terms
                    .and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_ref()),
            ),
            preferred_anti_affinity: preferred(
                anti_terms
                    .and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_ref()),
            ),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.required_affinity.is_empty()
            && self.required_anti_affinity.is_empty()
            && self.preferred_affinity.is_empty()
            && self.preferred_anti_affinity.is_empty()
    }

    fn has_required(&self) -> bool {
        !self.required_affinity.is_empty() || !self.required_anti_affinity.is_empty()
    }

    fn has_preferred(&self) -> bool {
        !self.preferred_affinity.is_empty() || !self.preferred_anti_affinity.is_empty()
    }
}

/// What the filter needs, computed once per cycle.
struct FilterState {
    /// Domains holding pods that match all of the incoming pod's required affinity terms.
    affinity: TopologyCounts,
    /// Domains holding pods that match one of its required anti-affinity terms.
    anti_affinity: TopologyCounts,
    /// Domains where a running pod's required anti-affinity matches the incoming pod.
    existing_anti_affinity: TopologyCounts,
}

/// Whether the pod matches every term (and there is at least one).
fn matches_all(terms: &[AffinityTerm], pod: &PodInfo) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod))
}

/// Upstream's PreFilter: running pods' required anti-affinity is looked up only among the
/// pods that have some (kept per node), and the incoming pod's own required terms against
/// every pod, only when it has any.
fn pre_filter_state(pod: &PodInfo, nodes: &[&NodeInfo]) -> FilterState {
    let terms = &pod.affinity;
    let mut state = FilterState {
        affinity: TopologyCounts::default(),
        anti_affinity: TopologyCounts::default(),
        existing_anti_affinity: TopologyCounts::default(),
    };
    let want_incoming = terms.has_required();
    for node in nodes {
        for existing in &node.pods_with_required_anti_affinity {
            for term in &existing.affinity.required_anti_affinity {
                if term.matches(pod) {
                    if let Some(value) = term.value(node) {
                        state.existing_anti_affinity.add(&term.topology_key, value, 1);
                    }
                }
            }
        }
        if !want_incoming {
            continue;
        }
        for existing in &node.pods {
            if matches_all(&terms.required_affinity, existing) {
                for term in &terms.required_affinity {
                    if let Some(value) = term.value(node) {
                        state.affinity.add(&term.topology_key, value, 1);
                    }
                }
            }
            for term in &terms.required_anti_affinity {
                if term.matches(existing) {
                    if let Some(value) = term.value(node) {
                        state.anti_affinity.add(&term.topology_key, value, 1);
                    }
                }
            }
        }
    }
    state
}

fn satisfies_affinity(state: &FilterState, pod: &PodInfo, node: &NodeInfo) -> bool {
    let terms = &pod.affinity.required_affinity;
    let mut pods_exist = true;
    for term in terms {
        // Every topology label the terms name must be on the node.
        let Some(value) = term.value(node) else { return false };
        if state.affinity.get(&term.topology_key, value) <= 0 {
            pods_exist = false;
        }
    }
    // The first pod of a group with affinity to its own kind: nothing in the cluster matches
    // the terms yet, so it may go to any node with the topology labels when it matches them
    // itself (otherwise it would wait forever).
    pods_exist || (state.affinity.is_empty() && matches_all(terms, pod))
}

fn satisfies_anti_affinity(state: &FilterState, pod: &PodInfo, node: &NodeInfo) -> bool {
    pod.affinity.required_anti_affinity.iter().all(|term| {
        term.value(node).is_none_or(|v| state.anti_affinity.get(&term.topology_key, v) <= 0)
    })
}

fn satisfies_existing_anti_affinity(state: &FilterState, node: &NodeInfo) -> bool {
    state.existing_anti_affinity.is_empty() || !state.existing_anti_affinity.any_positive(node)
}

/// Score per topology key and value.
type TopologyScore = TopologyCounts;

fn add_score(scores: &mut TopologyScore, term: &AffinityTerm, node: &NodeInfo, amount: i64) {
    if let Some(value) = term.value(node) {
        scores.add(&term.topology_key, value, amount);
    }
}

/// Upstream's PreScore: each existing pod adds to (or takes from) the score of its node's
/// domains, for the incoming pod's preferred terms it matches and for its own terms the
/// incoming pod matches. Unless the incoming pod has preferred terms, only the pods with
/// affinity terms of their own can add anything, and only they are looked at.
fn pre_score_state(pod: &PodInfo, nodes: &[&NodeInfo]) -> TopologyScore {
    let terms = &pod.affinity;
    let has_preferred = terms.has_preferred();
    let mut scores = TopologyScore::default();
    for node in nodes {
        let existing_pods = if has_preferred { &node.pods } else { &node.pods_with_affinity };
        // The pods first: most nodes have none to look at, and that is known without
        // following the node's pointer to its labels.
        if existing_pods.is_empty() || node.labels().is_empty() {
            continue;
        }
        for existing in existing_pods {
            for (term, weight) in &terms.preferred_affinity {
                if term.matches(existing) {
                    add_score(&mut scores, term, node, *weight);
                }
            }
            for (term, weight) in &terms.preferred_anti_affinity {
                if term.matches(existing) {
                    add_score(&mut scores, term, node, -weight);
                }
            }
            let theirs = &existing.affinity;
            if theirs.is_empty() {
                continue;
            }
            for term in &theirs.required_affinity {
                if term.matches(pod) {
                    add_score(&mut scores, term, node, HARD_POD_AFFINITY_WEIGHT);
                }
            }
            for (term, weight) in &theirs.preferred_affinity {
                if term.matches(pod) {
                    add_score(&mut scores, term, node, *weight);
                }
            }
            for (term, weight) in &theirs.preferred_anti_affinity {
                if term.matches(pod) {
                    add_score(&mut scores, term, node, -weight);
                }
            }
        }
    }
    scores
}

impl FilterPlugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        "InterPodAffinity"
    }

    /// The filter as if the node were the whole cluster; the scheduler uses
    /// [`FilterPlugin::filter_with_state`], which sees every node.
    fn filter(&self, pod: &PodInfo, node: &NodeInfo) -> Result<(), Rejection> {
        crate::framework::filter_alone(self, pod, node)
    }

    /// Skips when the pod has no required terms and no running pod's required
    /// anti-affinity matches it, as upstream does.
    fn pre_filter(&self, pod: &PodInfo, state: &mut CycleState<'_>) -> Result<Next, Rejection> {
        let computed = pre_filter_state(pod, state.nodes);
        if computed.existing_anti_affinity.is_empty() && !pod.affinity.has_required() {
            return Ok(Next::Skip);
        }
        state.put(PRE_FILTER_KEY, computed);
        Ok(Next::Run)
    }

    fn filter_with_state(
        &self,
        pod: &PodInfo,
        node: &NodeInfo,
        state: &CycleState<'_>,
    ) -> Result<(), Rejection> {
        let Some(state) = state.get::<FilterState>(PRE_FILTER_KEY) else {
            return self.filter(pod, node);
        };
        if !satisfies_affinity(state, pod, node) {
            return Err(Rejection::new(ERR_REASON_AFFINITY));
        }
        if !satisfies_anti_affinity(state, pod, node) {
            return Err(Rejection::new(ERR_REASON_ANTI_AFFINITY));
        }
        if !satisfies_existing_anti_affinity(state, node) {
            return Err(Rejection::new(ERR_REASON_EXISTING_ANTI_AFFINITY));
        }
        Ok(())
    }
}

impl ScorePlugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        "InterPodAffinity"
    }

    /// The score as if the node were the whole cluster; the scheduler uses
    /// [`ScorePlugin::score_with_state`].
    fn score(&self, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let nodes = [node];
        let mut state = CycleState::new(&nodes);
        match self.pre_score(pod, &nodes, &mut state) {
            Next::Skip => 0,
            Next::Run => self.score_with_state(pod, node, &state),
        }
    }

    /// Skips when no domain gets a score, as upstream does.
    fn pre_score(
        &self,
        pod: &PodInfo,
        _feasible: &[&NodeInfo],
        state: &mut CycleState<'_>,
    ) -> Next {
        // Pods anywhere count, not only on the feasible nodes.
        let computed = pre_score_state(pod, state.nodes);
        if computed.is_empty() {
            return Next::Skip;
        }
        state.put(PRE_SCORE_KEY, computed);
        Next::Run
    }

    /// The sum, over the topology keys scored, of the score of the node's domain; may be
    /// negative before normalizing.
    fn score_with_state(&self, pod: &PodInfo, node: &NodeInfo, state: &CycleState<'_>) -> i64 {
        let Some(scores) = state.get::<TopologyScore>(PRE_SCORE_KEY) else {
            return self.score(pod, node);
        };
        scores.sum_for(node)
    }

    /// Upstream's min-max scaling: the lowest raw score becomes 0, the highest 100; all equal
    /// gives 0 everywhere.
    fn normalize(&self, _pod: &PodInfo, scores: &mut [i64]) {
        let (Some(min), Some(max)) = (scores.iter().copied().min(), scores.iter().copied().max())
        else {
            return;
        };
        let spread = max - min;
        for s in scores.iter_mut() {
            *s = if spread > 0 {
                (MAX_NODE_SCORE as f64 * ((*s - min) as f64 / spread as f64)) as i64
            } else {
                0
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugins::testing::{filter_nodes, labelled_pod, pod, score_nodes, zone_node};

    const ZONE: &str = "topology.kubernetes.io/zone";
    const HOST: &str = "kubernetes.io/hostname";

    fn app(name: &str, app: &str) -> PodInfo {
        labelled_pod(name, json!({"app": app}), json!({}))
    }

    /// A pod labelled `app` with one required (anti-)affinity term for `app: target`.
    fn requiring(name: &str, app: &str, kind: &str, target: &str, key: &str) -> PodInfo {
        labelled_pod(
            name,
            json!({"app": app}),
            json!({"affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": target}}, "topologyKey": key}
            ]}}}),
        )
    }

    fn verdicts(pod: &PodInfo, nodes: &[NodeInfo]) -> Vec<Option<String>> {
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        filter_nodes(&InterPodAffinity, pod, &refs)
    }

    const AFF: Option<&str> = Some(ERR_REASON_AFFINITY);

    fn owned(v: &[Option<&str>]) -> Vec<Option<String>> {
        v.iter().map(|r| r.map(str::to_string)).collect()
    }

    #[test]
    fn required_affinity_needs_a_matching_pod_in_the_zone() {
        let other_ns = pod(json!({
            "metadata": {"name": "cache-x", "namespace": "other", "labels": {"app": "cache"}},
            "spec": {"containers": [{"name": "c", "image": "redis:7"}]}
        }));
        let nodes = [
            zone_node("node-1", "zone-a", vec![app("cache-0", "cache")]),
            zone_node("node-2", "zone-a", vec![]),
            // A cache pod in another namespace does not count for a term without namespaces.
            zone_node("node-3", "zone-b", vec![other_ns]),
            zone_node("node-4", "", vec![app("cache-1", "cache")]),
        ];
        let web = requiring("web", "web", "podAffinity", "cache", ZONE);
        // node-4 has a cache pod but no zone label: every topology key must be on the node.
        assert_eq!(verdicts(&web, &nodes), owned(&[None, None, AFF, AFF]));

        // Listing the namespace, or selecting it by its name label, brings it in.
        for namespaces in [
            json!({"namespaces": ["other"]}),
            json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "other"}}}),
        ] {
            let mut term =
                json!({"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": ZONE});
            for (k, v) in namespaces.as_object().unwrap() {
                term[k] = v.clone();
            }
            let web = labelled_pod(
                "web",
                json!({"app": "web"}),
                json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}),
            );
            assert_eq!(verdicts(&web, &nodes), owned(&[AFF, AFF, None, AFF]), "{namespaces}");
        }
        // `namespaceSelector: {}` is every namespace.
        let web = labelled_pod(
            "web",
            json!({"app": "web"}),
            json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": ZONE, "namespaceSelector": {}}
            ]}}}),
        );
        assert_eq!(verdicts(&web, &nodes), owned(&[None, None, None, AFF]));
    }

    #[test]
    fn all_affinity_terms_must_hold_on_the_same_pods() {
        // Two terms: the matching pod must satisfy both (app=cache and tier=backend).
        let web = labelled_pod(
            "web",
            json!({"app": "web"}),
            json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": ZONE},
                {"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["backend"]}]}, "topologyKey": HOST}
            ]}}}),
        );
        let both = labelled_pod("cache-0", json!({"app": "cache", "tier": "backend"}), json!({}));
        let nodes = [
            zone_node("node-1", "zone-a", vec![both]),
            // Same zone, different host: the hostname term fails here.
            zone_node("node-2", "zone-a", vec![]),
            zone_node("node-3", "zone-b", vec![app("cache-1", "cache")]),
        ];
        assert_eq!(verdicts(&web, &nodes), owned(&[None, AFF, AFF]));
    }

    #[test]
    fn the_first_pod_of_a_self_affine_group_may_go_anywhere_with_the_labels() {
        let web = requiring("web-0", "web", "podAffinity", "web", ZONE);
        let empty = [
            zone_node("node-1", "zone-a", vec![]),
            zone_node("node-2", "zone-b", vec![]),
            zone_node("node-3", "", vec![]),
        ];
        assert_eq!(verdicts(&web, &empty), owned(&[None, None, AFF]));
        // Once one runs, the rest follow it.
        let started = [
            zone_node("node-1", "zone-a", vec![]),
            zone_node("node-2", "zone-b", vec![app("web-1", "web")]),
        ];
        assert_eq!(verdicts(&web, &started), owned(&[AFF, None]));
        // A pod that does not match its own terms gets no such pass.
        let other = requiring("api", "api", "podAffinity", "web", ZONE);
        assert_eq!(verdicts(&other, &empty), owned(&[AFF, AFF, AFF]));
    }

    #[test]
    fn required_anti_affinity_keeps_away_from_matching_pods() {
        let web = requiring("web-1", "web", "podAntiAffinity", "web", HOST);
        let nodes = [
            zone_node("node-1", "zone-a", vec![app("web-0", "web")]),
            zone_node("node-2", "zone-a", vec![app("api-0", "api")]),
            zone_node("node-3", "zone-b", vec![]),
        ];
        assert_eq!(verdicts(&web, &nodes), owned(&[Some(ERR_REASON_ANTI_AFFINITY), None, None]));
        // By zone: all of zone-a is out.
        let web = requiring("web-1", "web", "podAntiAffinity", "web", ZONE);
        assert_eq!(
            verdicts(&web, &nodes),
            owned(&[Some(ERR_REASON_ANTI_AFFINITY), Some(ERR_REASON_ANTI_AFFINITY), None])
        );
    }

    #[test]
    fn existing_pods_anti_affinity_keeps_newcomers_out_of_their_zone() {
        let nodes = [
            zone_node(
                "node-1",
                "zone-a",
                vec![requiring("db-0", "db", "podAntiAffinity", "web", ZONE)],
            ),
            zone_node("node-2", "zone-a", vec![]),
            zone_node("node-3", "zone-b", vec![]),
        ];
        let existing = Some(ERR_REASON_EXISTING_ANTI_AFFINITY);
        assert_eq!(verdicts(&app("web-0", "web"), &nodes), owned(&[existing, existing, None]));
        assert_eq!(verdicts(&app("api-0", "api"), &nodes), owned(&[None, None, None]));
        // The db pod's term covers only its own namespace.
        let elsewhere = pod(json!({
            "metadata": {"name": "web-0", "namespace": "team-b", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}
        }));
        assert_eq!(verdicts(&elsewhere, &nodes), owned(&[None, None, None]));
        // Unless it selects every namespace.
        let db = labelled_pod(
            "db-0",
            json!({"app": "db"}),
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE, "namespaceSelector": {}}
            ]}}}),
        );
        let nodes =
            [zone_node("node-1", "zone-a", vec![db]), zone_node("node-3", "zone-b", vec![])];
        assert_eq!(verdicts(&elsewhere, &nodes), owned(&[existing, None]));
    }

    #[test]
    fn preferred_terms_weigh_domains_then_min_max_scale() {
        let web = labelled_pod(
            "web-2",
            json!({"app": "web"}),
            json!({"affinity": {
                "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 80, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": ZONE}}
                ]},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 30, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOST}}
                ]}
            }}),
        );
        let nodes = [
            zone_node("node-1", "zone-a", vec![app("cache-0", "cache"), app("web-0", "web")]),
            zone_node("node-2", "zone-a", vec![]),
            zone_node("node-3", "zone-b", vec![app("web-1", "web")]),
            zone_node("node-4", "zone-b", vec![]),
        ];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let (raw, normalized) = score_nodes(&InterPodAffinity, &web, &refs, &refs);
        // zone-a +80 (the cache pod); node-1 and node-3 -30 each (a web pod on the host).
        assert_eq!(raw, [50, 80, -30, 0]);
        // 100 * (s - min) / (max - min), min -30, max 80: 80/110, 110/110, 0, 30/110.
        assert_eq!(normalized, [72, 100, 0, 27]);
        // Pods on nodes that did not pass the filters still count.
        let (raw, _) = score_nodes(&InterPodAffinity, &web, &refs, &refs[1..]);
        assert_eq!(raw, [80, -30, 0]);
    }

    #[test]
    fn existing_pods_terms_score_the_incoming_pod() {
        let client = labelled_pod(
            "client-0",
            json!({"app": "client"}),
            json!({"affinity": {"podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE}
                ],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 5, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOST}}
                ]
            }}}),
        );
        let loner = labelled_pod(
            "loner-0",
            json!({"app": "loner"}),
            json!({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOST}}
            ]}}}),
        );
        let nodes = [
            zone_node("node-1", "zone-a", vec![]),
            zone_node("node-2", "zone-a", vec![]),
            zone_node("node-3", "zone-b", vec![client]),
            zone_node("node-4", "zone-b", vec![loner]),
        ];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let (raw, normalized) = score_nodes(&InterPodAffinity, &app("web-0", "web"), &refs, &refs);
        // zone-b +1 (client's required term, hardPodAffinityWeight), node-3 +5, node-4 -10.
        assert_eq!(raw, [0, 0, 6, -9]);
        assert_eq!(normalized, [60, 60, 100, 0]);
        // A pod nobody cares about scores 0 everywhere.
        let (raw, normalized) = score_nodes(&InterPodAffinity, &app("api-0", "api"), &refs, &refs);
        assert_eq!((raw, normalized), (vec![0; 4], vec![0; 4]));
    }

    #[test]
    fn anti_affinity_spreads_replicas_one_per_node_through_the_default_profile() {
        use crate::plugins::default_profile;
        use crate::scheduler::decide;
        use std::sync::Arc;

        let profile = default_profile();
        let mut nodes = [
            zone_node("node-1", "zone-a", vec![]),
            zone_node("node-2", "zone-b", vec![]),
            zone_node("node-3", "zone-c", vec![]),
        ];
        let mut used = Vec::new();
        let mut next_start = 0;
        for i in 0..3 {
            let replica = requiring(&format!("web-{i}"), "web", "podAntiAffinity", "web", HOST);
            let refs: Vec<&NodeInfo> = nodes.iter().collect();
            let chosen = decide(&profile, &replica, &refs, &mut next_start).expect("a free node");
            assert!(!used.contains(&chosen), "{chosen} already has a replica");
            nodes.iter_mut().find(|n| n.name() == chosen).unwrap().add_pod(Arc::new(replica));
            used.push(chosen);
        }
        let fourth = requiring("web-3", "web", "podAntiAffinity", "web", HOST);
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        assert_eq!(
            decide(&profile, &fourth, &refs, &mut next_start),
            Err("0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. \
                 preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
                .to_string())
        );
    }

    #[test]
    fn nothing_to_check_or_score_is_skipped() {
        let plain_nodes = [
            zone_node("node-1", "zone-a", vec![app("web-0", "web"), app("api-0", "api")]),
            zone_node("node-2", "zone-b", vec![]),
        ];
        let refs: Vec<&NodeInfo> = plain_nodes.iter().collect();
        let mut state = CycleState::new(&refs);
        // No terms anywhere.
        assert_eq!(InterPodAffinity.pre_filter(&app("web-1", "web"), &mut state), Ok(Next::Skip));
        assert_eq!(InterPodAffinity.pre_score(&app("web-1", "web"), &refs, &mut state), Next::Skip);
        // Its own required terms are always checked.
        let repelled = requiring("web-1", "web", "podAntiAffinity", "nothing-here", HOST);
        assert_eq!(InterPodAffinity.pre_filter(&repelled, &mut state), Ok(Next::Run));

        // A running pod repels web pods: checked for web pods only.
        let nodes = [
            zone_node(
                "node-1",
                "zone-a",
                vec![requiring("db-0", "db", "podAntiAffinity", "web", ZONE), app("api-0", "api")],
            ),
            zone_node("node-2", "zone-b", vec![]),
        ];
        assert_eq!(nodes[0].pods_with_required_anti_affinity.len(), 1);
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let mut state = CycleState::new(&refs);
        assert_eq!(InterPodAffinity.pre_filter(&app("web-1", "web"), &mut state), Ok(Next::Run));
        assert_eq!(InterPodAffinity.pre_filter(&app("api-1", "api"), &mut state), Ok(Next::Skip));
        // Existing required anti-affinity does not score; a preferred affinity to web does.
        assert_eq!(InterPodAffinity.pre_score(&app("web-1", "web"), &refs, &mut state), Next::Skip);
        let fan = labelled_pod(
            "fan-0",
            json!({"app": "fan"}),
            json!({"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 7, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE}}
            ]}}}),
        );
        let nodes =
            [zone_node("node-1", "zone-a", vec![fan]), zone_node("node-2", "zone-b", vec![])];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let (raw, _) = score_nodes(&InterPodAffinity, &app("web-1", "web"), &refs, &refs);
        assert_eq!(raw, [7, 0]);
    }
}
