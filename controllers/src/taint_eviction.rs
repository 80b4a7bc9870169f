//! The taint eviction controller, as kube-controller-manager's `taint-eviction-controller`:
//! pods bound to a node with `NoExecute` taints are deleted when they do not tolerate every
//! one of them; a pod that tolerates them all with `tolerationSeconds` is deleted once the
//! shortest of those has passed since the taint appeared; one that tolerates them without
//! `tolerationSeconds` stays.
//!
//! A taint's time starts when this controller first sees it on the node (its own clock, as
//! upstream); for taints already there when the controller starts, at the taint's
//! `timeAdded` when it has one, so a restart does not give pods extra time.
//!
//! Each deletion is announced with a `TaintManagerEviction` event (`Marking for deletion Pod
//! <namespace>/<name>`), and the pod gets the `DisruptionTarget` condition (reason
//! `DeletionByTaintManager`) first. A pending deletion called off (the taint went, or the
//! pod's tolerations changed) gets `Cancelling deletion of Pod <namespace>/<name>`.
//!
//! Note: upstream's `DefaultTolerationSeconds` admission plugin gives every pod 300 s
//! tolerations for `node.kubernetes.io/not-ready` and `node.kubernetes.io/unreachable`; rkube
//! has no such plugin yet, so a pod without its own tolerations is deleted as soon as its node
//! is tainted.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod, Taint, Toleration};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::Client;
use rkube_runtime::store::Store;
use serde_json::json;
use tokio::sync::mpsc;

use rkube_runtime::events::Recorder;
use rkube_runtime::informer::{self, Change};

pub use rkube_apis::taints::tolerates;

/// What to do with a pod on a node with NoExecute taints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Every taint is tolerated for ever.
    Keep,
    /// A taint is not tolerated (or tolerated for zero seconds): delete the pod now.
    EvictNow,
    /// Every taint is tolerated, the shortest for this long after it appeared.
    EvictAt(Timestamp),
}

/// The decision for a pod with `tolerations` on a node with these NoExecute `taints`, each
/// with the time it appeared. As upstream, each taint is matched by the first toleration that
/// tolerates it.
pub fn decide(taints: &[(Taint, Timestamp)], tolerations: &[Toleration]) -> Decision {
    let mut deadline: Option<Timestamp> = None;
    for (taint, since) in taints {
        let Some(toleration) = tolerations.iter().find(|t| tolerates(t, taint)) else {
            return Decision::EvictNow;
        };
        match toleration.toleration_seconds {
            None => {}
            Some(seconds) if seconds <= 0 => return Decision::EvictNow,
            Some(seconds) => {
                let at =
                    since.checked_add(SignedDuration::from_secs(seconds)).unwrap_or(Timestamp::MAX);
                deadline = Some(deadline.map_or(at, |d| d.min(at)));
            }
        }
    }
    deadline.map_or(Decision::Keep, Decision::EvictAt)
}

type PodKey = (String, String);

struct Controller {
    client: Client,
    recorder: Recorder,
    nodes: Store<Node>,
    pods: Store<Pod>,
    /// When each NoExecute taint (node, key, value) was first seen.
    since: HashMap<(String, String, Option<String>), Timestamp>,
    /// Pods waiting for their toleration to run out, with when it does.
    scheduled: HashMap<PodKey, Timestamp>,
    /// Pods deleted by us (by uid), so a stale cache does not delete them twice.
    evicted: HashSet<String>,
    started: bool,
}

/// Runs the controller until the task is aborted. `nodes` and `pods` are shared informers'
/// stores; `node_changes` and `pod_changes` say when they changed.
pub async fn run(
    client: Client,
    nodes: Store<Node>,
    mut node_changes: mpsc::UnboundedReceiver<Change>,
    pods: Store<Pod>,
    mut pod_changes: mpsc::UnboundedReceiver<Change>,
) {
    if nodes.wait_until_ready().await.is_err() || pods.wait_until_ready().await.is_err() {
        return;
    }
    tracing::info!("taint eviction controller started");
    let mut ctl = Controller {
        recorder: Recorder::new(client.clone(), "taint-eviction-controller"),
        client,
        nodes,
        pods,
        since: HashMap::new(),
        scheduled: HashMap::new(),
        evicted: HashSet::new(),
        started: false,
    };
    loop {
        let next = ctl.pass().await;
        let wait = next.map(|at| {
            let d = at.duration_since(Timestamp::now());
            Duration::try_from(d).unwrap_or_default() + Duration::from_millis(1)
        });
        let sleep = tokio::time::sleep(wait.unwrap_or(Duration::from_secs(3600)));
        tokio::select! {
            Some(change) = node_changes.recv() => { informer::drain(change, &mut node_changes); }
            Some(change) = pod_changes.recv() => { informer::drain(change, &mut pod_changes); }
            _ = sleep => {}
        }
    }
}

fn no_execute_taints(node: &Node) -> Vec<Taint> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|t| t.iter().filter(|t| t.effect == "NoExecute").cloned().collect())
        .unwrap_or_default()
}

impl Controller {
    /// Decides for every pod on a tainted node, deletes those whose time is up; returns when
    /// the next pending deletion is due.
    async fn pass(&mut self) -> Option<Timestamp> {
        let now = Timestamp::now();
        let mut tainted: HashMap<String, Vec<(Taint, Timestamp)>> = HashMap::new();
        let mut present = HashSet::new();
        let started = self.started;
        for node in self.nodes.state() {
            let taints = no_execute_taints(&node);
            if taints.is_empty() {
                continue;
            }
            let name = node.metadata.name.clone().unwrap_or_default();
            let mut timed = Vec::new();
            for taint in taints {
                let key = (name.clone(), taint.key.clone(), taint.value.clone());
                let since = *self.since.entry(key.clone()).or_insert_with(|| {
                    match (&taint.time_added, started) {
                        (Some(added), false) => added.0.min(now),
                        _ => now,
                    }
                });
                present.insert(key);
                timed.push((taint, since));
            }
            tainted.insert(name, timed);
        }
        self.since.retain(|k, _| present.contains(k));
        self.started = true;

        let mut scheduled = HashMap::new();
        let mut retry = None;
        if !tainted.is_empty() {
            // Only the pods of tainted nodes, by the node index.
            let pods = tainted.iter().flat_map(|(node, taints)| {
                self.pods.on_node(node).into_iter().map(move |pod| (pod, taints))
            });
            for (pod, taints) in pods.collect::<Vec<_>>() {
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                if pod.metadata.deletion_timestamp.is_some() || self.evicted.contains(&uid) {
                    continue;
                }
                let key = (
                    pod.metadata.namespace.clone().unwrap_or_default(),
                    pod.metadata.name.clone().unwrap_or_default(),
                );
                let tolerations =
                    pod.spec.as_ref().and_then(|s| s.tolerations.clone()).unwrap_or_default();
                let due = match decide(taints, &tolerations) {
                    Decision::Keep => continue,
                    Decision::EvictNow => true,
                    Decision::EvictAt(at) if at <= now => true,
                    Decision::EvictAt(at) => {
                        scheduled.insert(key.clone(), at);
                        false
                    }
                };
                if due {
                    self.scheduled.remove(&key);
                    if self.evict(&pod, &key).await {
                        self.evicted.insert(uid);
                    } else {
                        retry = Some(now.checked_add(SignedDuration::from_secs(1)).unwrap_or(now));
                    }
                }
            }
        }
        for (namespace, name) in self.scheduled.keys() {
            if !scheduled.contains_key(&(namespace.clone(), name.clone())) {
                tracing::info!(pod = format!("{namespace}/{name}"), "pod deletion cancelled");
                let message = format!("Cancelling deletion of Pod {namespace}/{name}");
                self.recorder.record(
                    &reference(namespace, name),
                    "Normal",
                    "TaintManagerEviction",
                    &message,
                );
            }
        }
        self.scheduled = scheduled;
        if !self.evicted.is_empty() {
            let uids: HashSet<String> =
                self.pods.state().iter().filter_map(|p| p.metadata.uid.clone()).collect();
            self.evicted.retain(|u| uids.contains(u));
        }
        self.scheduled.values().copied().chain(retry).min()
    }

    /// Marks the pod and deletes it; true when it is gone or going.
    async fn evict(&self, pod: &Pod, (namespace, name): &PodKey) -> bool {
        tracing::info!(
            pod = format!("{namespace}/{name}"),
            "deleting pod: NoExecute taint not tolerated"
        );
        let message = format!("Marking for deletion Pod {namespace}/{name}");
        self.recorder.record(
            &reference(namespace, name),
            "Normal",
            "TaintManagerEviction",
            &message,
        );
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let already =
            pod.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|c| {
                c.iter().any(|c| c.type_ == "DisruptionTarget" && c.status == "True")
            });
        if !already {
            let patch = json!({
                "metadata": {"uid": pod.metadata.uid},
                "status": {"conditions": [{
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "DeletionByTaintManager",
                    "message": "Taint manager: deleting due to NoExecute taint",
                    "lastTransitionTime": k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::now()),
                }]},
            });
            match pods.patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch)).await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => return true,
                Err(e) => {
                    tracing::debug!(pod = name, error = %e, "cannot set the DisruptionTarget condition")
                }
            }
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..Default::default()
        };
        match pods.delete(name, &params).await {
            Ok(_) => true,
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => true,
            Err(e) => {
                tracing::warn!(pod = format!("{namespace}/{name}"), error = %e, "cannot delete the pod; will retry");
                false
            }
        }
    }
}

/// The pod as upstream names it in these events: no uid.
fn reference(namespace: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(namespace.to_string()),
        name: Some(name.to_string()),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: value.map(Into::into),
            effect: effect.into(),
            time_added: None,
        }
    }

    fn toleration(
        key: &str,
        operator: &str,
        value: &str,
        effect: &str,
        seconds: Option<i64>,
    ) -> Toleration {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        Toleration {
            key: opt(key),
            operator: opt(operator),
            value: opt(value),
            effect: opt(effect),
            toleration_seconds: seconds,
        }
    }

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + second).unwrap()
    }

    const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
    const NOT_READY: &str = "node.kubernetes.io/not-ready";

    #[test]
    fn untolerated_taints_evict_at_once() {
        let taints = [(taint(UNREACHABLE, None, "NoExecute"), at(0))];
        assert_eq!(decide(&taints, &[]), Decision::EvictNow);
        // A toleration for another key does not help.
        assert_eq!(
            decide(&taints, &[toleration(NOT_READY, "Exists", "", "NoExecute", None)]),
            Decision::EvictNow
        );
    }

    #[test]
    fn tolerations_without_seconds_keep_the_pod() {
        let taints = [(taint(UNREACHABLE, None, "NoExecute"), at(0))];
        assert_eq!(
            decide(&taints, &[toleration(UNREACHABLE, "Exists", "", "NoExecute", None)]),
            Decision::Keep
        );
        // Exists with no key tolerates everything.
        assert_eq!(decide(&taints, &[toleration("", "Exists", "", "", None)]), Decision::Keep);
    }

    #[test]
    fn toleration_seconds_count_from_when_the_taint_appeared() {
        let taints = [
            (taint(UNREACHABLE, None, "NoExecute"), at(10)),
            (taint("maintenance", Some("yes"), "NoExecute"), at(0)),
        ];
        let tolerations = [
            toleration(UNREACHABLE, "Exists", "", "NoExecute", Some(300)),
            toleration("maintenance", "Equal", "yes", "NoExecute", Some(60)),
        ];
        assert_eq!(decide(&taints, &tolerations), Decision::EvictAt(at(60)));
        let shorter =
            [toleration(UNREACHABLE, "Exists", "", "NoExecute", Some(3)), tolerations[1].clone()];
        assert_eq!(decide(&taints, &shorter), Decision::EvictAt(at(13)));
        // Zero or negative seconds: at once.
        let zero = [toleration("", "Exists", "", "NoExecute", Some(0))];
        assert_eq!(decide(&taints, &zero), Decision::EvictNow);
        // One taint tolerated for ever, the other for a while: the while.
        let mixed = [toleration(UNREACHABLE, "Exists", "", "", None), tolerations[1].clone()];
        assert_eq!(decide(&taints, &mixed), Decision::EvictAt(at(60)));
    }

    #[test]
    fn effects_keys_values_and_operators_match_as_upstream() {
        let t = taint("dedicated", Some("gpu"), "NoExecute");
        assert!(tolerates(&toleration("dedicated", "Equal", "gpu", "NoExecute", None), &t));
        assert!(tolerates(&toleration("dedicated", "", "gpu", "", None), &t));
        assert!(!tolerates(&toleration("dedicated", "Equal", "gpu", "NoSchedule", None), &t));
        assert!(!tolerates(&toleration("dedicated", "Equal", "cpu", "NoExecute", None), &t));
        assert!(tolerates(&toleration("dedicated", "Exists", "", "NoExecute", None), &t));
        assert!(!tolerates(&toleration("other", "Exists", "", "", None), &t));
        assert!(!tolerates(&toleration("dedicated", "Lt", "gpu", "", None), &t));
        // A NoSchedule toleration does not keep a pod on a NoExecute taint.
        let taints = [(t.clone(), at(0))];
        assert_eq!(
            decide(&taints, &[toleration("dedicated", "Exists", "", "NoSchedule", None)]),
            Decision::EvictNow
        );
        // The first matching toleration decides, as upstream.
        let first = [
            toleration("dedicated", "Exists", "", "NoExecute", Some(5)),
            toleration("dedicated", "Exists", "", "NoExecute", None),
        ];
        assert_eq!(decide(&taints, &first), Decision::EvictAt(at(5)));
    }
}
