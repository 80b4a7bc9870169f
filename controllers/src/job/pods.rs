//! What the Job controller asks of a pod (active, terminating, finished, ready), the order in
//! which it gives up surplus pods, and how it makes a pod from a Job's template.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, ObjectFieldSelector, Pod, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;

use super::indexes::{self, COMPLETION_INDEX, COMPLETION_INDEX_ENV};

/// The finalizer that keeps a finished pod around until the Job counted it.
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

pub fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

pub fn has_tracking_finalizer(pod: &Pod) -> bool {
    pod.metadata.finalizers.as_ref().is_some_and(|f| f.iter().any(|f| f == TRACKING_FINALIZER))
}

fn is_terminal(pod: &Pod) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// Still running or about to: neither finished nor being deleted.
pub fn is_active(pod: &Pod) -> bool {
    !is_terminal(pod) && pod.metadata.deletion_timestamp.is_none()
}

/// Being deleted but not finished yet.
pub fn is_terminating(pod: &Pod) -> bool {
    !is_terminal(pod) && pod.metadata.deletion_timestamp.is_some()
}

pub fn succeeded(pod: &Pod) -> bool {
    phase(pod) == "Succeeded"
}

fn ready_condition(pod: &Pod) -> Option<&k8s_openapi::api::core::v1::PodCondition> {
    pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "Ready")
}

pub fn is_ready(pod: &Pod) -> bool {
    ready_condition(pod).is_some_and(|c| c.status == "True")
}

/// Whether the pod counts as failed: it is `Failed`, or, unless pods are replaced only once
/// they failed, it is being deleted without having succeeded (a pod deleted while running
/// may never reach a phase).
pub fn is_failed(pod: &Pod, only_replace_failed: bool) -> bool {
    if phase(pod) == "Failed" {
        return true;
    }
    !only_replace_failed && pod.metadata.deletion_timestamp.is_some() && !succeeded(pod)
}

pub fn completion_index(pod: &Pod) -> Option<i32> {
    indexes::completion_index(pod.metadata.annotations.as_ref())
}

/// The sum of the restarts of the pod's containers and init containers.
pub fn restarts(pod: &Pod) -> i64 {
    let Some(status) = pod.status.as_ref() else { return 0 };
    let lists = [status.container_statuses.as_ref(), status.init_container_statuses.as_ref()];
    lists.into_iter().flatten().flatten().map(|c| i64::from(c.restart_count)).sum()
}

fn max_restarts(pod: &Pod) -> i32 {
    let Some(status) = pod.status.as_ref() else { return 0 };
    let lists = [status.container_statuses.as_ref(), status.init_container_statuses.as_ref()];
    lists.into_iter().flatten().flatten().map(|c| c.restart_count).max().unwrap_or(0)
}

fn ready_since(pod: &Pod) -> Option<Timestamp> {
    ready_condition(pod).filter(|c| c.status == "True")?.last_transition_time.as_ref().map(|t| t.0)
}

/// Later first, an unknown time before any known one (client-go's `afterOrZero`).
fn later_first(a: Option<Timestamp>, b: Option<Timestamp>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => b.cmp(&a),
    }
}

/// The order in which active pods are given up, first the ones that lose least (client-go's
/// `ActivePods`): unscheduled before scheduled, pending before unknown before running, not
/// ready before ready, ready for a shorter time first, more restarts first, newer first.
pub fn deletion_order(a: &Pod, b: &Pod) -> Ordering {
    let node = |p: &Pod| p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
    let (na, nb) = (node(a), node(b));
    if na != nb && (na.is_empty() || nb.is_empty()) {
        return if na.is_empty() { Ordering::Less } else { Ordering::Greater };
    }
    let rank = |p: &Pod| match phase(p) {
        "Pending" => 0,
        "Unknown" => 1,
        "Running" => 2,
        _ => 3,
    };
    rank(a)
        .cmp(&rank(b))
        .then_with(|| is_ready(a).cmp(&is_ready(b)))
        .then_with(|| {
            if is_ready(a) && is_ready(b) {
                later_first(ready_since(a), ready_since(b))
            } else {
                Ordering::Equal
            }
        })
        .then_with(|| max_restarts(b).cmp(&max_restarts(a)))
        .then_with(|| {
            let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
            later_first(created(a), created(b))
        })
}

/// The active pods to delete so that at least `at_least` go: for Indexed Jobs first the pods
/// without a valid index, with an index past `completions`, or repeating an index (keeping
/// the one of each index that loses most), then by [`deletion_order`].
pub fn active_pods_for_removal(
    pods: &[Arc<Pod>],
    indexed_completions: Option<i32>,
    at_least: usize,
) -> Vec<Arc<Pod>> {
    let mut remove = Vec::new();
    let mut left: Vec<Arc<Pod>> = Vec::new();
    match indexed_completions {
        Some(completions) => {
            let mut by_index: BTreeMap<i32, Vec<Arc<Pod>>> = BTreeMap::new();
            for pod in pods {
                match completion_index(pod).filter(|i| *i < completions) {
                    Some(index) => by_index.entry(index).or_default().push(pod.clone()),
                    None => remove.push(pod.clone()),
                }
            }
            for (_, mut same) in by_index {
                same.sort_by(|a, b| deletion_order(a, b));
                if let Some(keep) = same.pop() {
                    left.push(keep);
                }
                remove.extend(same);
            }
        }
        None => left = pods.to_vec(),
    }
    if remove.len() < at_least {
        left.sort_by(|a, b| deletion_order(a, b));
        let more = (at_least - remove.len()).min(left.len());
        remove.extend(left.into_iter().take(more));
    }
    remove
}

/// The template every pod of the Job is made from: the Job's, with the tracking finalizer,
/// and for Indexed Jobs `JOB_COMPLETION_INDEX` in every container's environment (read from
/// the index label).
pub fn base_template(job: &Job, indexed: bool) -> PodTemplateSpec {
    let mut template = job.spec.as_ref().map(|s| s.template.clone()).unwrap_or_default();
    if indexed {
        if let Some(spec) = template.spec.as_mut() {
            let containers =
                spec.init_containers.iter_mut().flatten().chain(spec.containers.iter_mut());
            containers.for_each(add_completion_index_env);
        }
    }
    let meta = template.metadata.get_or_insert_with(ObjectMeta::default);
    let finalizers = meta.finalizers.get_or_insert_with(Vec::new);
    if !finalizers.iter().any(|f| f == TRACKING_FINALIZER) {
        finalizers.push(TRACKING_FINALIZER.to_string());
    }
    template
}

fn add_completion_index_env(container: &mut Container) {
    let env = container.env.get_or_insert_with(Vec::new);
    if env.iter().any(|e| e.name == COMPLETION_INDEX_ENV) {
        return;
    }
    env.push(EnvVar {
        name: COMPLETION_INDEX_ENV.to_string(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: format!("metadata.labels['{COMPLETION_INDEX}']"),
            }),
            ..Default::default()
        }),
    });
}

/// What an indexed pod carries beyond the template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexOf {
    pub index: i32,
    /// With `backoffLimitPerIndex`: the failures of the index so far (counted, ignored).
    pub failures: Option<(i32, i32)>,
}

/// The pod to create from `template` ([`base_template`]): named `<job>-<random>`, or
/// `<job>-<index>-<random>` with hostname `<job>-<index>` for an indexed pod, with the
/// template's labels, annotations and finalizers and the Job as controller.
pub fn new_pod(
    template: &PodTemplateSpec,
    job_name: &str,
    namespace: &str,
    controller: OwnerReference,
    index: Option<IndexOf>,
) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    let mut pod = Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{job_name}-")),
            namespace: Some(namespace.to_string()),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![controller]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    };
    if let Some(IndexOf { index, failures }) = index {
        let text = index.to_string();
        let annotations = pod.metadata.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(COMPLETION_INDEX.to_string(), text.clone());
        if let Some((counted, ignored)) = failures {
            annotations.insert(indexes::INDEX_FAILURE_COUNT.to_string(), counted.to_string());
            if ignored > 0 {
                let key = indexes::INDEX_IGNORED_FAILURE_COUNT.to_string();
                annotations.insert(key, ignored.to_string());
            }
        }
        pod.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(COMPLETION_INDEX.to_string(), text);
        pod.metadata.generate_name = Some(indexes::generate_name_with_index(job_name, index));
        if let Some(spec) = pod.spec.as_mut() {
            spec.hostname = Some(format!("{job_name}-{index}"));
        }
    }
    pod
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::JobSpec;
    use k8s_openapi::api::core::v1::{PodCondition, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn pod(name: &str, phase: &str, node: &str, ready: bool, created: i64) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                creation_timestamp: Some(Time(Timestamp::from_second(created).unwrap())),
                ..Default::default()
            },
            spec: Some(PodSpec { node_name: Some(node.into()), ..Default::default() }),
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        })
    }

    fn with_index(p: Arc<Pod>, index: &str) -> Arc<Pod> {
        let mut p = (*p).clone();
        p.metadata.annotations = Some([(COMPLETION_INDEX.to_string(), index.to_string())].into());
        Arc::new(p)
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<&str> {
        pods.iter().map(|p| p.metadata.name.as_deref().unwrap()).collect()
    }

    #[test]
    fn pod_states() {
        let mut p = (*pod("a", "Running", "n", true, 0)).clone();
        assert!(is_active(&p) && is_ready(&p) && !is_terminating(&p) && !is_failed(&p, false));
        p.metadata.deletion_timestamp = Some(Time(Timestamp::from_second(5).unwrap()));
        assert!(!is_active(&p) && is_terminating(&p));
        // Deleted while running: failed, unless only failed pods are replaced.
        assert!(is_failed(&p, false) && !is_failed(&p, true));
        p.status.as_mut().unwrap().phase = Some("Succeeded".into());
        assert!(!is_terminating(&p) && !is_failed(&p, false) && succeeded(&p));
        p.status.as_mut().unwrap().phase = Some("Failed".into());
        assert!(is_failed(&p, true));
    }

    #[test]
    fn surplus_pods_go_least_valuable_first() {
        let pods = vec![
            pod("running-ready-old", "Running", "n", true, 1),
            pod("pending-unscheduled", "Pending", "", false, 2),
            pod("running-not-ready", "Running", "n", false, 3),
            pod("pending-scheduled", "Pending", "n", false, 4),
            pod("running-ready-new", "Running", "n", true, 5),
        ];
        let doomed = active_pods_for_removal(&pods, None, 3);
        assert_eq!(
            names(&doomed),
            ["pending-unscheduled", "pending-scheduled", "running-not-ready"]
        );
        assert_eq!(active_pods_for_removal(&pods, None, 0).len(), 0);
        assert_eq!(active_pods_for_removal(&pods, None, 9).len(), 5);
    }

    #[test]
    fn indexed_surplus_pods_are_duplicates_and_strays_first() {
        let pods = vec![
            with_index(pod("zero-a", "Running", "n", true, 1), "0"),
            with_index(pod("zero-b", "Pending", "n", false, 2), "0"),
            with_index(pod("one", "Running", "n", true, 3), "1"),
            with_index(pod("nine", "Running", "n", true, 4), "9"),
            pod("none", "Running", "n", true, 5),
        ];
        let doomed = active_pods_for_removal(&pods, Some(3), 0);
        assert_eq!(names(&doomed), ["nine", "none", "zero-b"]);
        let doomed = active_pods_for_removal(&pods, Some(3), 4);
        assert_eq!(names(&doomed), ["nine", "none", "zero-b", "one"]);
    }

    #[test]
    fn pods_are_made_from_the_template() {
        let job = Job {
            metadata: ObjectMeta { name: Some("pi".into()), ..Default::default() },
            spec: Some(JobSpec {
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some([("job-name".to_string(), "pi".to_string())].into()),
                        ..Default::default()
                    }),
                    spec: Some(PodSpec {
                        containers: vec![Container { name: "c".into(), ..Default::default() }],
                        init_containers: Some(vec![Container {
                            name: "i".into(),
                            ..Default::default()
                        }]),
                        ..Default::default()
                    }),
                },
                ..Default::default()
            }),
            status: None,
        };
        let owner = OwnerReference { name: "pi".into(), uid: "u".into(), ..Default::default() };
        let plain = new_pod(&base_template(&job, false), "pi", "ns", owner.clone(), None);
        assert_eq!(plain.metadata.generate_name.as_deref(), Some("pi-"));
        assert_eq!(plain.metadata.finalizers, Some(vec![TRACKING_FINALIZER.to_string()]));
        assert_eq!(plain.spec.as_ref().unwrap().containers[0].env, None);
        assert_eq!(plain.metadata.owner_references, Some(vec![owner.clone()]));

        let template = base_template(&job, true);
        let index = IndexOf { index: 2, failures: Some((1, 0)) };
        let p = new_pod(&template, "pi", "ns", owner, Some(index));
        assert_eq!(p.metadata.generate_name.as_deref(), Some("pi-2-"));
        let labels = p.metadata.labels.as_ref().unwrap();
        assert_eq!(labels.get(COMPLETION_INDEX).map(String::as_str), Some("2"));
        assert_eq!(labels.get("job-name").map(String::as_str), Some("pi"));
        let annotations = p.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations.get(COMPLETION_INDEX).map(String::as_str), Some("2"));
        assert_eq!(annotations.get(indexes::INDEX_FAILURE_COUNT).map(String::as_str), Some("1"));
        assert!(!annotations.contains_key(indexes::INDEX_IGNORED_FAILURE_COUNT));
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(spec.hostname.as_deref(), Some("pi-2"));
        for c in spec.containers.iter().chain(spec.init_containers.iter().flatten()) {
            let env = c.env.as_ref().unwrap();
            assert_eq!(env.len(), 1);
            let path = &env[0].value_from.as_ref().unwrap().field_ref.as_ref().unwrap().field_path;
            assert_eq!(path, "metadata.labels['batch.kubernetes.io/job-completion-index']");
        }
    }
}
