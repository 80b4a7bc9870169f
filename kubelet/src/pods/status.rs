//! The pod status the kubelet reports, computed from what the runtime says of each container
//! and what the sync decided for the ones not running (waiting reasons): phase, conditions,
//! IPs, container statuses, as upstream's kubelet words them.

use chrono::{DateTime, SecondsFormat, Utc};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};

use crate::runtime::{ContainerRecord, ContainerState};

/// One container of the pod as the sync saw it.
#[derive(Clone, Debug, Default)]
pub struct ContainerView {
    pub name: String,
    pub image: String,
    /// The latest instance.
    pub current: Option<ContainerRecord>,
    /// The one before it (`lastState`).
    pub previous: Option<ContainerRecord>,
    /// Why it is not running, when the sync knows: (reason, message).
    pub waiting: Option<(String, String)>,
    /// What the container wrote to its termination message path.
    pub termination_message: Option<String>,
    /// Whether its startup probe succeeded for the current instance (None: it has none).
    pub startup: Option<bool>,
    /// Whether its readiness probe says ready (None: it has none).
    pub readiness: Option<bool>,
    /// An init container with `restartPolicy: Always`, kept running beside the app
    /// containers.
    pub sidecar: bool,
}

impl ContainerView {
    pub fn restart_count(&self) -> u32 {
        self.current.as_ref().map(ContainerRecord::attempt).unwrap_or(0)
    }

    pub fn is_running(&self) -> bool {
        matches!(self.current.as_ref().map(|c| &c.state), Some(ContainerState::Running { .. }))
    }

    /// `started`, as upstream: running, and its startup probe (if any) succeeded.
    pub fn started(&self) -> bool {
        self.is_running() && self.startup.unwrap_or(true)
    }

    /// `ready`, as upstream: started, and its readiness probe (if any) says so; without a
    /// readiness probe a started container is ready.
    pub fn ready(&self) -> bool {
        self.started() && self.readiness.unwrap_or(true)
    }

    /// The `ready` of its status entry: a plain init container is ready once it succeeded.
    fn status_ready(&self, init: bool) -> bool {
        if init && !self.sidecar {
            self.exit_code() == Some(0)
        } else {
            self.ready()
        }
    }

    /// Upstream's "started" for the Initialized condition: a regular container whose state
    /// is running or terminated (not waiting).
    fn has_run(&self) -> bool {
        self.is_running() || (self.exit_code().is_some() && self.waiting.is_none())
    }

    /// The exit code of the latest instance, when it has exited.
    pub fn exit_code(&self) -> Option<i64> {
        match self.current.as_ref().map(|c| &c.state) {
            Some(ContainerState::Exited { exit_code, .. }) => Some(*exit_code),
            _ => None,
        }
    }
}

pub fn time(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn terminated(record: &ContainerRecord, message: Option<&str>) -> Option<Value> {
    match &record.state {
        ContainerState::Exited { exit_code, started_at, finished_at, oom_killed, error } => {
            let reason = if *oom_killed {
                "OOMKilled"
            } else if !error.is_empty() {
                "ContainerCannotRun"
            } else if *exit_code == 0 {
                "Completed"
            } else {
                "Error"
            };
            let mut t = json!({
                "exitCode": exit_code,
                "reason": reason,
                "startedAt": started_at.as_ref().map(time),
                "finishedAt": time(finished_at),
                "containerID": format!("docker://{}", record.id),
            });
            let message = if error.is_empty() { message.unwrap_or("") } else { error.as_str() };
            if !message.is_empty() {
                t["message"] = message.into();
            }
            Some(t)
        }
        _ => None,
    }
}

fn image_id(record: &ContainerRecord) -> String {
    if record.image_id.is_empty() {
        String::new()
    } else {
        format!("docker://{}", record.image_id)
    }
}

/// A container's status entry (`containerStatuses[]`).
pub fn container_status(view: &ContainerView, ready: bool) -> Value {
    let state = match (&view.current, &view.waiting) {
        (Some(record), _) if matches!(record.state, ContainerState::Running { .. }) => {
            let ContainerState::Running { started_at } = &record.state else { unreachable!() };
            json!({"running": {"startedAt": time(started_at)}})
        }
        (_, Some((reason, message))) => {
            let mut waiting = json!({"reason": reason});
            if !message.is_empty() {
                waiting["message"] = message.clone().into();
            }
            json!({"waiting": waiting})
        }
        (Some(record), None) => match terminated(record, view.termination_message.as_deref()) {
            Some(t) => json!({"terminated": t}),
            None => json!({"waiting": {"reason": "ContainerCreating"}}),
        },
        (None, None) => json!({"waiting": {"reason": "ContainerCreating"}}),
    };
    // While waiting to restart, the last instance's end is the lastState.
    let last = match (&view.waiting, &view.current) {
        (Some(_), Some(current)) => terminated(current, view.termination_message.as_deref()),
        _ => view.previous.as_ref().and_then(|p| terminated(p, None)),
    };
    let mut status = json!({
        "name": view.name,
        "image": view.image,
        "imageID": view.current.as_ref().map(image_id).unwrap_or_default(),
        "state": state,
        "lastState": last.map(|t| json!({"terminated": t})).unwrap_or(json!({})),
        "ready": ready,
        "restartCount": view.restart_count(),
        "started": view.started(),
    });
    if let Some(record) = &view.current {
        status["containerID"] = format!("docker://{}", record.id).into();
    }
    status
}

/// `ephemeralContainerStatuses`, sorted by name as upstream sorts them: never ready and
/// without `started` (upstream's prober does not follow ephemeral containers).
pub fn ephemeral_statuses(views: &[ContainerView]) -> Value {
    let mut statuses: Vec<Value> = views
        .iter()
        .map(|v| {
            let mut status = container_status(v, false);
            status.as_object_mut().map(|s| s.remove("started"));
            status
        })
        .collect();
    statuses.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Value::Array(statuses)
}

/// Upstream's getPhase over the container views. Sidecars count as running while they run;
/// until the pod has initialized, one not started yet keeps it Pending; their ends do not
/// decide the pod's.
pub fn phase(pod: &Pod, init: &[ContainerView], apps: &[ContainerView]) -> &'static str {
    let restart_policy =
        pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()).unwrap_or("Always");
    let (mut pending_init, mut failed_init, mut pending_sidecars) = (0, 0, 0);
    let (mut running, mut waiting, mut stopped, mut succeeded) = (0, 0, 0, 0);
    for view in init {
        match (view.sidecar, view.is_running(), view.exit_code()) {
            (false, true, _) | (false, false, None) => pending_init += 1,
            (false, false, Some(code)) => failed_init += usize::from(code != 0),
            (true, true, _) => {
                running += 1;
                pending_sidecars += usize::from(!view.started());
            }
            // Ended, and restarting: neither running nor stopped.
            (true, false, Some(_)) => {}
            (true, false, None) => pending_sidecars += 1,
        }
    }
    if failed_init > 0 && restart_policy == "Never" {
        return "Failed";
    }
    for view in apps {
        if view.is_running() {
            running += 1;
        } else if let Some(code) = view.exit_code() {
            stopped += 1;
            // Waiting to restart after it ended counts as stopped, not as succeeded.
            if view.waiting.is_none() && code == 0 {
                succeeded += 1;
            }
        } else {
            waiting += 1;
        }
    }
    let initialized = apps.iter().any(ContainerView::is_running);
    if pending_init > 0 || (pending_sidecars > 0 && !initialized) || waiting > 0 {
        return "Pending";
    }
    if running > 0 {
        return "Running";
    }
    if stopped > 0 {
        if restart_policy == "Always" {
            return "Running";
        }
        if stopped == succeeded {
            return "Succeeded";
        }
        if restart_policy == "Never" {
            return "Failed";
        }
        return "Running";
    }
    "Pending"
}

fn condition(
    previous: &Pod,
    kind: &str,
    ok: bool,
    reason: Option<&str>,
    message: Option<String>,
) -> Value {
    let status = if ok { "True" } else { "False" };
    let old = previous
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == kind));
    let transition = old
        .filter(|c| c.status == status)
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0.to_string())
        .unwrap_or_else(|| time(&Utc::now()));
    let mut c = json!({
        "type": kind,
        "status": status,
        "lastProbeTime": null,
        "lastTransitionTime": transition,
    });
    if let Some(reason) = reason {
        c["reason"] = reason.into();
    }
    if let Some(message) = message {
        c["message"] = message.into();
    }
    c
}

/// Everything the status needs beyond the containers.
pub struct PodFacts<'a> {
    pub pod_ip: &'a str,
    pub host_ip: &'a str,
    pub sandbox_ready: bool,
    pub start_time: &'a str,
}

/// The whole `status` of the pod.
pub fn pod_status(
    pod: &Pod,
    facts: &PodFacts<'_>,
    init: &[ContainerView],
    apps: &[ContainerView],
) -> Value {
    let phase = phase(pod, init, apps);
    let init_statuses: Vec<Value> =
        init.iter().map(|v| container_status(v, v.status_ready(true))).collect();
    let app_statuses: Vec<Value> = apps.iter().map(|v| container_status(v, v.ready())).collect();
    // Sidecars first, as upstream lists them.
    let unready: Vec<&str> = init
        .iter()
        .filter(|v| v.sidecar)
        .chain(apps)
        .filter(|v| !v.ready())
        .map(|v| v.name.as_str())
        .collect();
    let incomplete: Vec<&str> = init
        .iter()
        .filter(|v| if v.sidecar { !v.started() } else { v.exit_code() != Some(0) })
        .map(|v| v.name.as_str())
        .collect();
    // A pod stays initialized while a sidecar restarts once a regular container has run.
    let initialized =
        incomplete.is_empty() || phase == "Succeeded" || apps.iter().any(ContainerView::has_run);
    let ready = unready.is_empty() && phase == "Running";
    let (ready_reason, ready_message) = if ready {
        (None, None)
    } else if phase == "Succeeded" || phase == "Failed" {
        (Some("PodCompleted"), None)
    } else {
        (
            Some("ContainersNotReady"),
            Some(format!("containers with unready status: [{}]", unready.join(" "))),
        )
    };
    let mut conditions = vec![
        condition(pod, "PodReadyToStartContainers", facts.sandbox_ready, None, None),
        if initialized {
            let reason =
                if phase == "Succeeded" && !init.is_empty() { Some("PodCompleted") } else { None };
            condition(pod, "Initialized", true, reason, None)
        } else {
            condition(
                pod,
                "Initialized",
                false,
                Some("ContainersNotInitialized"),
                Some(format!("containers with incomplete status: [{}]", incomplete.join(" "))),
            )
        },
        condition(pod, "Ready", ready, ready_reason, ready_message.clone()),
        condition(pod, "ContainersReady", ready, ready_reason, ready_message),
    ];
    let scheduled = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"))
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or_else(|| condition(pod, "PodScheduled", true, None, None));
    conditions.push(scheduled);
    let mut status = json!({
        "phase": phase,
        "conditions": conditions,
        "hostIP": facts.host_ip,
        "hostIPs": [{"ip": facts.host_ip}],
        "startTime": facts.start_time,
        "containerStatuses": app_statuses,
    });
    if !facts.pod_ip.is_empty() {
        status["podIP"] = facts.pod_ip.into();
        status["podIPs"] = json!([{"ip": facts.pod_ip}]);
    }
    if !init_statuses.is_empty() {
        status["initContainerStatuses"] = init_statuses.into();
    }
    if let Some(qos) = pod.status.as_ref().and_then(|s| s.qos_class.as_ref()) {
        status["qosClass"] = qos.clone().into();
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn pod(restart: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"restartPolicy": restart, "containers": [{"name": "a", "image": "busybox"}]}
        }))
        .unwrap()
    }

    fn record(state: ContainerState, attempt: u32) -> ContainerRecord {
        ContainerRecord {
            id: format!("id{attempt}"),
            labels: HashMap::from([(
                crate::runtime::labels::ATTEMPT.to_string(),
                attempt.to_string(),
            )]),
            state,
            image: "busybox".into(),
            image_id: "sha256:abc".into(),
        }
    }

    fn exited(code: i64) -> ContainerState {
        ContainerState::Exited {
            exit_code: code,
            started_at: Some(Utc::now()),
            finished_at: Utc::now(),
            oom_killed: false,
            error: String::new(),
        }
    }

    const FACTS: PodFacts<'static> = PodFacts {
        pod_ip: "10.42.0.5",
        host_ip: "127.0.0.1",
        sandbox_ready: true,
        start_time: "2026-01-01T00:00:00Z",
    };

    fn view(state: Option<ContainerState>) -> ContainerView {
        ContainerView {
            name: "a".into(),
            image: "busybox".into(),
            current: state.map(|s| record(s, 0)),
            ..Default::default()
        }
    }

    #[test]
    fn phases_follow_upstream() {
        let running = view(Some(ContainerState::Running { started_at: Utc::now() }));
        assert_eq!(phase(&pod("Always"), &[], std::slice::from_ref(&running)), "Running");
        assert_eq!(phase(&pod("Always"), &[], &[view(None)]), "Pending");
        assert_eq!(phase(&pod("Never"), &[], &[view(Some(exited(0)))]), "Succeeded");
        assert_eq!(phase(&pod("Never"), &[], &[view(Some(exited(1)))]), "Failed");
        assert_eq!(phase(&pod("OnFailure"), &[], &[view(Some(exited(1)))]), "Running");
        assert_eq!(phase(&pod("OnFailure"), &[], &[view(Some(exited(0)))]), "Succeeded");
        assert_eq!(phase(&pod("Always"), &[], &[view(Some(exited(0)))]), "Running");
        // An init container still running keeps the pod Pending.
        assert_eq!(phase(&pod("Always"), std::slice::from_ref(&running), &[view(None)]), "Pending");
        // A failed init container fails a Never pod.
        assert_eq!(phase(&pod("Never"), &[view(Some(exited(2)))], &[view(None)]), "Failed");
    }

    #[test]
    fn crash_loop_shows_waiting_with_the_last_termination() {
        let mut v = view(None);
        v.current = Some(record(exited(3), 2));
        v.waiting = Some((
            "CrashLoopBackOff".into(),
            "back-off 20s restarting failed container=a pod=p_default(u)".into(),
        ));
        let s = container_status(&v, false);
        assert_eq!(s["state"]["waiting"]["reason"], "CrashLoopBackOff");
        assert_eq!(s["lastState"]["terminated"]["exitCode"], 3);
        assert_eq!(s["lastState"]["terminated"]["reason"], "Error");
        assert_eq!(s["restartCount"], 2);
        assert_eq!(s["containerID"], "docker://id2");
    }

    #[test]
    fn conditions_name_the_unready_containers() {
        let p = pod("Always");
        let facts = FACTS;
        let s = pod_status(&p, &facts, &[], &[view(None)]);
        let ready =
            s["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").unwrap();
        assert_eq!(ready["status"], "False");
        assert_eq!(ready["reason"], "ContainersNotReady");
        assert_eq!(ready["message"], "containers with unready status: [a]");
        assert_eq!(s["podIP"], "10.42.0.5");
        assert_eq!(s["phase"], "Pending");
    }

    fn condition_of<'a>(status: &'a Value, kind: &str) -> &'a Value {
        status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == kind).unwrap()
    }

    #[test]
    fn probes_decide_started_and_ready() {
        let p = pod("Always");
        let facts = FACTS;
        let running = || view(Some(ContainerState::Running { started_at: Utc::now() }));
        // No probes: running is started and ready.
        let plain = running();
        assert!(plain.started() && plain.ready());
        let s = pod_status(&p, &facts, &[], std::slice::from_ref(&plain));
        assert_eq!(s["containerStatuses"][0]["ready"], true);
        assert_eq!(s["containerStatuses"][0]["started"], true);
        assert_eq!(condition_of(&s, "Ready")["status"], "True");
        assert_eq!(condition_of(&s, "ContainersReady")["status"], "True");
        // A readiness probe that has not succeeded: started, not ready; the conditions say
        // which container, with upstream's reason.
        let mut unready = running();
        unready.readiness = Some(false);
        let s = pod_status(&p, &facts, &[], std::slice::from_ref(&unready));
        assert_eq!(s["phase"], "Running");
        assert_eq!(s["containerStatuses"][0]["ready"], false);
        assert_eq!(s["containerStatuses"][0]["started"], true);
        for kind in ["Ready", "ContainersReady"] {
            let c = condition_of(&s, kind);
            assert_eq!(c["status"], "False");
            assert_eq!(c["reason"], "ContainersNotReady");
            assert_eq!(c["message"], "containers with unready status: [a]");
        }
        // A startup probe that has not succeeded holds both back, even if readiness said yes.
        let mut starting = running();
        starting.startup = Some(false);
        starting.readiness = Some(true);
        assert!(!starting.started() && !starting.ready());
        let s = container_status(&starting, starting.ready());
        assert_eq!(s["started"], false);
        assert_eq!(s["ready"], false);
        assert!(s["state"]["running"].is_object());
        starting.startup = Some(true);
        assert!(starting.started() && starting.ready());
        // Not running: neither, whatever the probes said last.
        let mut gone = view(Some(exited(137)));
        gone.startup = Some(true);
        gone.readiness = Some(true);
        assert!(!gone.started() && !gone.ready());
    }

    #[test]
    fn sidecars_follow_upstream() {
        let facts = FACTS;
        let sidecar = |state: Option<ContainerState>| ContainerView {
            name: "side".into(),
            sidecar: true,
            ..view(state)
        };
        let running = || Some(ContainerState::Running { started_at: Utc::now() });
        // A sidecar not started yet (startup probe pending) holds the pod in Pending, and is
        // what the Initialized condition waits for.
        let mut starting = sidecar(running());
        starting.startup = Some(false);
        let waiting_app = ContainerView {
            waiting: Some(("PodInitializing".into(), String::new())),
            ..view(None)
        };
        let p = pod("Never");
        let s = pod_status(
            &p,
            &facts,
            std::slice::from_ref(&starting),
            std::slice::from_ref(&waiting_app),
        );
        assert_eq!(s["phase"], "Pending");
        assert_eq!(
            condition_of(&s, "Initialized")["message"],
            "containers with incomplete status: [side]"
        );
        assert_eq!(s["initContainerStatuses"][0]["started"], false);
        // Started: initialized; its readiness counts for the pod's, listed first.
        let mut side = sidecar(running());
        side.readiness = Some(false);
        let app = view(running());
        let s = pod_status(&p, &facts, std::slice::from_ref(&side), std::slice::from_ref(&app));
        assert_eq!(s["phase"], "Running");
        assert_eq!(condition_of(&s, "Initialized")["status"], "True");
        assert_eq!(condition_of(&s, "Ready")["message"], "containers with unready status: [side]");
        assert_eq!(s["initContainerStatuses"][0]["ready"], false);
        side.readiness = Some(true);
        let s = pod_status(&p, &facts, std::slice::from_ref(&side), std::slice::from_ref(&app));
        assert_eq!(condition_of(&s, "Ready")["status"], "True");
        assert_eq!(s["initContainerStatuses"][0]["ready"], true);
        // The app ended with the sidecar still running: Running until the sidecar is
        // stopped; then the app's exit decides, not the sidecar's 137.
        let done = view(Some(exited(0)));
        assert_eq!(phase(&p, std::slice::from_ref(&side), std::slice::from_ref(&done)), "Running");
        let killed = sidecar(Some(exited(137)));
        assert_eq!(
            phase(&p, std::slice::from_ref(&killed), std::slice::from_ref(&done)),
            "Succeeded"
        );
        let failed = view(Some(exited(1)));
        assert_eq!(
            phase(&p, std::slice::from_ref(&killed), std::slice::from_ref(&failed)),
            "Failed"
        );
        // A sidecar restarting after the pod initialized keeps it Running and Initialized.
        let mut restarting = sidecar(Some(exited(1)));
        restarting.waiting = Some(("CrashLoopBackOff".into(), String::new()));
        let s =
            pod_status(&p, &facts, std::slice::from_ref(&restarting), std::slice::from_ref(&app));
        assert_eq!(s["phase"], "Running");
        assert_eq!(condition_of(&s, "Initialized")["status"], "True");
        assert_eq!(condition_of(&s, "Ready")["status"], "False");
    }
}
