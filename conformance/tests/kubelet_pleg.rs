//! How soon the kubelet sees its containers end: from Docker's event stream, as upstream's
//! PLEG, not at the next periodic resync. A container's exit is in the pod's status within
//! about a second of Docker's `finishedAt`.

use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use kube::runtime::watcher::{self, Event};
use rkube_conformance::node::NodeServer;

/// How late the status may show an exit, counted from Docker's finish time.
const BOUND: Duration = Duration::from_secs(2);

fn pod(name: &str, script: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"test": "pleg"}},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [{
                "name": "c", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", script]
            }]
        }
    }))
    .expect("a pod")
}

/// Docker's `State.FinishedAt` of a container (nanoseconds), as system time.
fn finished_at(container_id: &str) -> SystemTime {
    let out = Command::new("docker")
        .args(["inspect", "-f", "{{.State.FinishedAt}}", container_id])
        .output()
        .expect("docker inspect");
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let at: k8s_openapi::jiff::Timestamp =
        text.parse().unwrap_or_else(|e| panic!("finishedAt {text:?} of {container_id}: {e}"));
    SystemTime::from(at)
}

/// Terminated pods as the watch first sees them: (name, when, the pod).
async fn watch_terminations(client: kube::Client, names: &[&str]) -> Vec<(SystemTime, Pod)> {
    let pods: Api<Pod> = Api::default_namespaced(client);
    let config = watcher::Config::default().labels("test=pleg");
    let mut events = watcher::watcher(pods, config).boxed();
    let mut seen: Vec<(SystemTime, Pod)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    while seen.len() < names.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = tokio::time::timeout(left, events.next()).await;
        let pod = match event {
            Ok(Some(Ok(Event::Apply(pod) | Event::InitApply(pod)))) => pod,
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the watch ended"),
            Err(_) => panic!("only {} of {names:?} ended within 90 s", seen.len()),
        };
        let phase = pod.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let known = seen.iter().any(|(_, p)| p.metadata.name.as_deref() == Some(&name));
        if (phase == "Succeeded" || phase == "Failed") && !known {
            seen.push((SystemTime::now(), pod));
        }
    }
    seen
}

#[test]
fn a_container_exit_is_in_the_status_within_two_seconds() {
    let n = NodeServer::start();
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let client = tokio.block_on(n.server.kube_client()).expect("a client");
    let names = ["fails", "completes"];
    let watch = tokio.spawn(watch_terminations(client.clone(), &["fails", "completes"]));
    let api: Api<Pod> = Api::default_namespaced(client);
    tokio.block_on(async {
        api.create(&PostParams::default(), &pod("fails", "sleep 1; exit 3")).await.unwrap();
        // As a Job's pod: its command ends with success.
        api.create(&PostParams::default(), &pod("completes", "sleep 1; true")).await.unwrap();
    });
    let seen = tokio.block_on(watch).expect("the watch task");
    assert_eq!(seen.len(), names.len());
    for (when, pod) in seen {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let status = pod.status.clone().unwrap_or_default();
        let container = &status.container_statuses.clone().unwrap_or_default()[0];
        let terminated = container
            .state
            .as_ref()
            .and_then(|s| s.terminated.clone())
            .unwrap_or_else(|| panic!("{name}: no terminated state in {status:?}"));
        let (phase, code, reason) = match name.as_str() {
            "fails" => ("Failed", 3, "Error"),
            _ => ("Succeeded", 0, "Completed"),
        };
        assert_eq!(status.phase.as_deref(), Some(phase), "{name}");
        assert_eq!(terminated.exit_code, code, "{name}");
        assert_eq!(terminated.reason.as_deref(), Some(reason), "{name}");
        let id = container.container_id.as_deref().unwrap_or("");
        let id = id.strip_prefix("docker://").unwrap_or_else(|| panic!("{name}: id {id:?}"));
        let late = when.duration_since(finished_at(id)).unwrap_or_default();
        eprintln!("{name}: in the status {} ms after it ended", late.as_millis());
        assert!(
            late < BOUND,
            "{name}: the exit reached the status {late:?} after Docker's finishedAt (bound \
             {BOUND:?})\n{}",
            n.server.log_tail(40)
        );
    }
}
