//! Tests of the sync's pure parts.

use super::*;
use k8s_openapi::api::batch::v1::JobSpec;
use k8s_openapi::api::core::v1::{ContainerStatus, PodSpec, PodStatus, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn spec(completions: Option<i32>, parallelism: i32) -> Spec {
    Spec { completions, parallelism, backoff_limit: 6, ..Spec::default() }
}

#[test]
fn wanted_active_pods() {
    // min(parallelism, remaining completions).
    assert_eq!(wanted_active(&spec(Some(3), 2), 0, 0), 2);
    assert_eq!(wanted_active(&spec(Some(3), 2), 2, 2), 1);
    assert_eq!(wanted_active(&spec(Some(3), 5), 0, 0), 3);
    assert_eq!(wanted_active(&spec(Some(3), 2), 0, 3), 0);
    assert_eq!(wanted_active(&spec(Some(3), 2), 0, 4), 0);
    assert_eq!(wanted_active(&spec(Some(3), 0), 1, 0), 0);
    // A work queue: parallelism until one succeeds, then whatever still runs.
    assert_eq!(wanted_active(&spec(None, 4), 1, 0), 4);
    assert_eq!(wanted_active(&spec(None, 4), 3, 1), 3);
    assert_eq!(wanted_active(&spec(None, 4), 0, 1), 0);
}

#[test]
fn the_spec_with_the_api_defaults() {
    let mut job = Job {
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(4),
            pod_replacement_policy: Some("Failed".into()),
            template: PodTemplateSpec {
                metadata: None,
                spec: Some(PodSpec {
                    restart_policy: Some("OnFailure".into()),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    };
    let s = Spec::of(&job);
    assert_eq!((s.parallelism, s.backoff_limit, s.indexed, s.suspended), (1, 6, true, false));
    assert!(s.only_replace_failed && s.restart_on_failure);
    assert_eq!(s.indexed_completions(), Some(4));
    job.spec.as_mut().unwrap().pod_replacement_policy = Some("TerminatingOrFailed".into());
    assert!(!Spec::of(&job).only_replace_failed);
    assert_eq!(Spec::of(&Job::default()).indexed_completions(), None);
    job.spec.as_mut().unwrap().managed_by = Some("kueue.x-k8s.io/multikueue".into());
    assert_eq!(managed_elsewhere(&job), Some("kueue.x-k8s.io/multikueue"));
    job.spec.as_mut().unwrap().managed_by = Some(MANAGED_BY.into());
    assert_eq!(managed_elsewhere(&job), None);
}

#[test]
fn uncounted_pods_move_into_the_counters_once_their_finalizer_is_gone() {
    let mut status = JobStatus {
        succeeded: Some(2),
        uncounted_terminated_pods: Some(UncountedTerminatedPods {
            succeeded: Some(vec!["a".into(), "b".into()]),
            failed: Some(vec!["c".into()]),
        }),
        ..Default::default()
    };
    let with_finalizer: HashSet<String> = ["b".to_string()].into();
    assert!(clean_uncounted(&mut status, &with_finalizer));
    assert_eq!((status.succeeded, status.failed), (Some(3), Some(1)));
    let uncounted = status.uncounted_terminated_pods.clone().unwrap();
    assert_eq!((uncounted.succeeded, uncounted.failed), (Some(vec!["b".to_string()]), None));
    assert!(!clean_uncounted(&mut status, &with_finalizer));
    normalize(&mut status);
    status.active = Some(0);
    normalize(&mut status);
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"succeeded": 3, "failed": 1, "uncountedTerminatedPods": {"succeeded": ["b"]}})
    );
    let mut empty = JobStatus { ready: Some(0), terminating: Some(0), ..Default::default() };
    normalize(&mut empty);
    assert_eq!(
        serde_json::to_value(&empty).unwrap(),
        serde_json::json!({"ready": 0, "terminating": 0, "uncountedTerminatedPods": {}})
    );
}

fn failed_pod(annotations: &[(&str, &str)], restarts: i32) -> Pod {
    Pod {
        metadata: ObjectMeta {
            annotations: Some(
                annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ),
            ..Default::default()
        },
        spec: None,
        status: Some(PodStatus {
            phase: Some("Failed".into()),
            container_statuses: Some(vec![ContainerStatus {
                restart_count: restarts,
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

#[test]
fn per_index_failures() {
    let s = Spec {
        backoff_limit_per_index: Some(1),
        indexed: true,
        completions: Some(3),
        ..spec(Some(3), 3)
    };
    let first = failed_pod(&[(indexes::COMPLETION_INDEX, "1")], 0);
    // One retry allowed: the first failure does not fail the index, the retry's does.
    assert!(!index_failed(&s, &first));
    assert_eq!(index_failure_counts(&s, Some(&first)), (1, 0));
    assert_eq!(index_failure_counts(&s, None), (0, 0));
    let retry =
        failed_pod(&[(indexes::COMPLETION_INDEX, "1"), (indexes::INDEX_FAILURE_COUNT, "1")], 0);
    assert!(index_failed(&s, &retry));
    // An ignored failure counts in the other column.
    let ignoring = Spec {
        pod_failure_policy: Some(PodFailurePolicy {
            rules: vec![k8s_openapi::api::batch::v1::PodFailurePolicyRule {
                action: "Ignore".into(),
                on_exit_codes: None,
                on_pod_conditions: Some(vec![
                    k8s_openapi::api::batch::v1::PodFailurePolicyOnPodConditionsPattern {
                        type_: "DisruptionTarget".into(),
                        status: "True".into(),
                    },
                ]),
            }],
        }),
        ..s.clone()
    };
    let mut disrupted = retry.clone();
    disrupted.status.as_mut().unwrap().conditions =
        Some(vec![k8s_openapi::api::core::v1::PodCondition {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
            ..Default::default()
        }]);
    assert!(!index_failed(&ignoring, &disrupted));
    assert_eq!(index_failure_counts(&ignoring, Some(&disrupted)), (1, 1));
}

#[test]
fn restarts_in_place_count_against_the_back_off_limit() {
    let mut running = failed_pod(&[], 2);
    running.status.as_mut().unwrap().phase = Some("Running".into());
    let pods = vec![Arc::new(running)];
    let mut s = Spec { restart_on_failure: true, backoff_limit: 2, ..spec(Some(1), 1) };
    assert!(past_backoff_limit_on_failure(&s, &pods));
    s.backoff_limit = 3;
    assert!(!past_backoff_limit_on_failure(&s, &pods));
    s.restart_on_failure = false;
    s.backoff_limit = 0;
    assert!(!past_backoff_limit_on_failure(&s, &pods));
    s.restart_on_failure = true;
    assert!(past_backoff_limit_on_failure(&s, &pods));
}

#[test]
fn slow_start_doubles_each_batch() {
    assert_eq!(slow_start_batches(0), Vec::<usize>::new());
    assert_eq!(slow_start_batches(1), [1]);
    assert_eq!(slow_start_batches(10), [1, 2, 4, 3]);
}

#[test]
fn finalizer_expectations_track_uids() {
    let f = FinalizerExpectations::default();
    f.expect("ns/j", ["a".to_string(), "b".to_string()]);
    f.observed("ns/j", "a");
    assert_eq!(f.expected("ns/j"), ["b".to_string()].into());
    f.observed("ns/j", "b");
    assert!(f.expected("ns/j").is_empty());
    f.expect("ns/j", ["c".to_string()]);
    f.forget("ns/j");
    assert!(f.expected("ns/j").is_empty());
}
