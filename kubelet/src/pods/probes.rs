//! Liveness, readiness and startup probes, as upstream's prober manager runs them: one task
//! per (container instance, probe type) that probes every `periodSeconds` from
//! `initialDelaySeconds` after the container started, settles a result after
//! `successThreshold` successes or `failureThreshold` failures in a row, records `Unhealthy`
//! events, and wakes the pod's worker when a settled result changes so that the status (or a
//! restart) follows at once.
//!
//! The startup probe holds the other two back until it succeeds. A liveness or startup
//! failure is acted on by the pod's sync ([`super::sync`]), which kills the container; the
//! restarted container is a new instance with fresh workers. A pod without probes has no
//! tasks at all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Container, Pod, Probe};
use tokio::sync::{watch, Notify};

use super::handlers::{self, Outcome};
use crate::runtime::{ContainerRecord, ContainerState, Runtime};
use rkube_runtime::events::{pod_reference, Recorder};

/// Upstream's retries of a probe that errored (could not run at all).
const MAX_PROBE_RETRIES: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Liveness,
    Readiness,
    Startup,
}

impl Kind {
    /// As upstream's events name it (`Liveness probe failed: ...`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Liveness => "Liveness",
            Kind::Readiness => "Readiness",
            Kind::Startup => "Startup",
        }
    }

    fn of(self, container: &Container) -> Option<&Probe> {
        match self {
            Kind::Liveness => container.liveness_probe.as_ref(),
            Kind::Readiness => container.readiness_probe.as_ref(),
            Kind::Startup => container.startup_probe.as_ref(),
        }
    }

    const ALL: [Kind; 3] = [Kind::Startup, Kind::Readiness, Kind::Liveness];
}

/// Whether a container has any probe (else it costs nothing here).
pub fn has_probes(container: &Container) -> bool {
    Kind::ALL.iter().any(|k| k.of(container).is_some())
}

/// A settled probe result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Success,
    Failure,
}

/// Upstream's thresholds: a result settles once the same result came `successThreshold`
/// (or `failureThreshold`) times in a row; until then the previous one stands.
#[derive(Clone, Debug)]
pub struct Thresholds {
    success: u32,
    failure: u32,
    last: Option<Verdict>,
    run: u32,
}

impl Thresholds {
    pub fn of(probe: &Probe) -> Thresholds {
        Thresholds {
            success: probe.success_threshold.unwrap_or(1).max(1) as u32,
            failure: probe.failure_threshold.unwrap_or(3).max(1) as u32,
            last: None,
            run: 0,
        }
    }

    /// Counts one result; the result that settles, if one does.
    pub fn observe(&mut self, verdict: Verdict) -> Option<Verdict> {
        if self.last == Some(verdict) {
            self.run = self.run.saturating_add(1);
        } else {
            self.last = Some(verdict);
            self.run = 1;
        }
        let needed = match verdict {
            Verdict::Success => self.success,
            Verdict::Failure => self.failure,
        };
        (self.run >= needed).then_some(verdict)
    }
}

/// The timing fields with upstream's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    pub initial_delay: Duration,
    pub period: Duration,
    pub timeout: Duration,
}

impl Timing {
    pub fn of(probe: &Probe) -> Timing {
        let secs = |v: Option<i32>, default: i32, min: i32| {
            Duration::from_secs(v.unwrap_or(default).max(min) as u64)
        };
        Timing {
            initial_delay: secs(probe.initial_delay_seconds, 0, 0),
            period: secs(probe.period_seconds, 10, 1),
            timeout: secs(probe.timeout_seconds, 1, 1),
        }
    }
}

/// The settled results of one pod's probes, with the container instance each is about.
#[derive(Default)]
struct Results {
    by_probe: Mutex<HashMap<(String, Kind), (String, Verdict)>>,
}

impl Results {
    fn get(&self, container: &str, kind: Kind, id: &str) -> Option<Verdict> {
        let map = self.by_probe.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&(container.to_string(), kind)).filter(|(for_id, _)| for_id == id).map(|r| r.1)
    }

    /// Stores a result; whether it changed.
    fn set(&self, container: &str, kind: Kind, id: &str, verdict: Verdict) -> bool {
        let mut map = self.by_probe.lock().unwrap_or_else(|e| e.into_inner());
        let new = (id.to_string(), verdict);
        map.insert((container.to_string(), kind), new.clone()) != Some(new)
    }

    fn remove(&self, container: &str) {
        let mut map = self.by_probe.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|(c, _), _| c != container);
    }

    fn clear(&self) {
        self.by_probe.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// What the probes say of a container for its status: `(started, ready)` inputs, each None
/// when the container has no such probe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Says {
    pub startup: Option<bool>,
    pub readiness: Option<bool>,
}

struct Shared {
    results: Results,
    /// Bumped on every settled change, so workers held back by the startup probe go on.
    changes: watch::Sender<u64>,
    /// The pod's worker.
    wake: Arc<Notify>,
}

struct WorkerHandle {
    container_id: String,
    task: tokio::task::JoinHandle<()>,
}

/// One pod's probe workers. Dropping it stops them.
pub struct Probes {
    shared: Arc<Shared>,
    workers: HashMap<(String, Kind), WorkerHandle>,
}

impl Default for Probes {
    fn default() -> Self {
        Probes::new(Arc::new(Notify::new()))
    }
}

impl Drop for Probes {
    fn drop(&mut self) {
        for worker in self.workers.values() {
            worker.task.abort();
        }
    }
}

/// What a worker needs from the kubelet.
#[derive(Clone)]
pub struct Context {
    pub runtime: Arc<dyn Runtime>,
    pub recorder: Recorder,
    pub pod_ip: String,
    /// The runtime runs no processes ([`crate::runtime::Runtime::runs_processes`], the
    /// simulated one): nothing is probed, every probe succeeds.
    pub simulated: bool,
}

impl Probes {
    /// Workers that wake `wake` (the pod worker's) when a result changes.
    pub fn new(wake: Arc<Notify>) -> Probes {
        let (changes, _) = watch::channel(0);
        Probes {
            shared: Arc::new(Shared { results: Results::default(), changes, wake }),
            workers: HashMap::new(),
        }
    }

    /// Makes sure the running instance `record` of `container` has its workers (fresh ones
    /// for a new instance: the initial delay counts from its start).
    pub fn ensure(
        &mut self,
        ctx: &Context,
        pod: &Pod,
        container: &Container,
        record: &ContainerRecord,
    ) {
        let ContainerState::Running { started_at } = &record.state else {
            self.stop(&container.name);
            return;
        };
        let mut pod_snapshot: Option<Arc<Pod>> = None;
        for kind in Kind::ALL {
            let key = (container.name.clone(), kind);
            let Some(probe) = kind.of(container) else {
                if let Some(old) = self.workers.remove(&key) {
                    old.task.abort();
                }
                continue;
            };
            if self.workers.get(&key).is_some_and(|w| w.container_id == record.id) {
                continue;
            }
            if let Some(old) = self.workers.remove(&key) {
                old.task.abort();
            }
            let pod = pod_snapshot.get_or_insert_with(|| Arc::new(pod.clone())).clone();
            let worker = Worker {
                ctx: ctx.clone(),
                pod,
                container: container.clone(),
                kind,
                probe: probe.clone(),
                container_id: record.id.clone(),
                started_at: *started_at,
                shared: self.shared.clone(),
            };
            let task = tokio::spawn(worker.run());
            self.workers.insert(key, WorkerHandle { container_id: record.id.clone(), task });
        }
    }

    /// Stops the workers of a container that does not run (and forgets their results).
    pub fn stop(&mut self, container: &str) {
        let mut any = false;
        self.workers.retain(|(c, _), w| {
            let keep = c != container;
            if !keep {
                w.task.abort();
                any = true;
            }
            keep
        });
        if any {
            self.shared.results.remove(container);
        }
    }

    /// Stops every worker (the pod is terminating or done).
    pub fn clear(&mut self) {
        for (_, worker) in self.workers.drain() {
            worker.task.abort();
        }
        self.shared.results.clear();
    }

    /// The liveness or startup probe that failed for this instance, if one did.
    pub fn failed(&self, container: &str, id: &str) -> Option<Kind> {
        [Kind::Liveness, Kind::Startup]
            .into_iter()
            .find(|k| self.shared.results.get(container, *k, id) == Some(Verdict::Failure))
    }

    /// What the startup and readiness probes say of the instance.
    pub fn says(&self, container: &Container, id: &str) -> Says {
        let ok = |kind: Kind| {
            kind.of(container).map(|_| {
                self.shared.results.get(&container.name, kind, id) == Some(Verdict::Success)
            })
        };
        Says { startup: ok(Kind::Startup), readiness: ok(Kind::Readiness) }
    }

    #[cfg(test)]
    fn settle(&self, container: &str, kind: Kind, id: &str, verdict: Verdict) {
        self.shared.results.set(container, kind, id, verdict);
    }
}

/// One probe of one container instance.
struct Worker {
    ctx: Context,
    pod: Arc<Pod>,
    container: Container,
    kind: Kind,
    probe: Probe,
    container_id: String,
    started_at: DateTime<Utc>,
    shared: Arc<Shared>,
}

impl Worker {
    /// Whether the container counts as started (no startup probe, or it succeeded).
    fn started(&self) -> bool {
        self.container.startup_probe.is_none()
            || self.shared.results.get(&self.container.name, Kind::Startup, &self.container_id)
                == Some(Verdict::Success)
    }

    async fn run(self) {
        if self.ctx.simulated {
            // Nothing runs to be probed: it is as healthy as it is ready.
            let results = &self.shared.results;
            if results.set(&self.container.name, self.kind, &self.container_id, Verdict::Success) {
                self.shared.changes.send_modify(|n| *n = n.wrapping_add(1));
                self.shared.wake.notify_one();
            }
            return;
        }
        let timing = Timing::of(&self.probe);
        let mut thresholds = Thresholds::of(&self.probe);
        // The initial delay counts from the container's start.
        let since_start = (Utc::now() - self.started_at).to_std().unwrap_or_default();
        let first = tokio::time::Instant::now() + timing.initial_delay.saturating_sub(since_start);
        let mut ticks = tokio::time::interval_at(first, timing.period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut changes = self.shared.changes.subscribe();
        let mut held_back = false;
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                changed = changes.changed(), if held_back => {
                    if changed.is_err() { return }
                }
            }
            let started = self.started();
            if self.kind == Kind::Startup && started {
                return; // nothing left to probe for this instance
            }
            held_back = self.kind != Kind::Startup && !started;
            if held_back {
                continue;
            }
            let verdict = match self.probe_once(timing.timeout).await {
                Some(v) => v,
                None => continue, // errored: the result is thrown away
            };
            let Some(settled) = thresholds.observe(verdict) else { continue };
            let results = &self.shared.results;
            if results.set(&self.container.name, self.kind, &self.container_id, settled) {
                self.shared.changes.send_modify(|n| *n = n.wrapping_add(1));
                self.shared.wake.notify_one();
            }
            match (self.kind, settled) {
                // The sync kills the container; its next instance gets new workers.
                (Kind::Liveness | Kind::Startup, Verdict::Failure) => return,
                (Kind::Startup, Verdict::Success) => return,
                _ => {}
            }
        }
    }

    /// Runs the probe (retrying one that cannot run at all, as upstream) and records what
    /// upstream records; None when it errored.
    async fn probe_once(&self, timeout: Duration) -> Option<Verdict> {
        let mut outcome = Outcome::Error(String::new());
        for _ in 0..MAX_PROBE_RETRIES {
            outcome =
                run_probe(&self.ctx, &self.container, &self.probe, &self.container_id, timeout)
                    .await;
            if !matches!(outcome, Outcome::Error(_)) {
                break;
            }
        }
        let name = self.kind.name();
        let recorder = &self.ctx.recorder;
        match outcome {
            Outcome::Success(_) => Some(Verdict::Success),
            Outcome::Warning(output) => {
                let message = format!("{name} probe warning: {output}");
                recorder.record(&pod_reference(&self.pod), "Warning", "ProbeWarning", &message);
                Some(Verdict::Success)
            }
            Outcome::Failure(output) => {
                let message = format!("{name} probe failed: {output}");
                recorder.record(&pod_reference(&self.pod), "Warning", "Unhealthy", &message);
                Some(Verdict::Failure)
            }
            Outcome::Error(e) => {
                let message = format!("{name} probe errored and resulted in unknown state: {e}");
                recorder.record(&pod_reference(&self.pod), "Warning", "Unhealthy", &message);
                None
            }
        }
    }
}

/// Runs a probe's action once against the container instance.
pub async fn run_probe(
    ctx: &Context,
    container: &Container,
    probe: &Probe,
    container_id: &str,
    timeout: Duration,
) -> Outcome {
    if let Some(exec) = &probe.exec {
        // Upstream expands $(VAR) in probe commands with the container's plain values only.
        let env: Vec<(String, String)> = container
            .env
            .iter()
            .flatten()
            .filter(|e| e.value_from.is_none())
            .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
            .collect();
        let command: Vec<String> =
            exec.command.iter().flatten().map(|arg| super::spec::expand(arg, &env)).collect();
        return handlers::exec_probe(ctx.runtime.as_ref(), container_id, &command, timeout).await;
    }
    if let Some(get) = &probe.http_get {
        return match handlers::http_request(get, container, &ctx.pod_ip, "probe") {
            Ok(request) => handlers::http_probe(&request, timeout).await,
            Err(e) => Outcome::Error(e),
        };
    }
    if let Some(tcp) = &probe.tcp_socket {
        let host = tcp.host.clone().filter(|h| !h.is_empty()).unwrap_or_else(|| ctx.pod_ip.clone());
        return match handlers::resolve_port(&tcp.port, container) {
            Ok(port) => handlers::tcp_probe(&host, port, timeout).await,
            Err(e) => Outcome::Error(e),
        };
    }
    if let Some(grpc) = &probe.grpc {
        let service = grpc.service.clone().unwrap_or_default();
        return match u16::try_from(grpc.port).ok().filter(|p| *p > 0) {
            Some(port) => handlers::grpc_probe(&ctx.pod_ip, port, &service, timeout).await,
            None => Outcome::Error(format!("invalid port number: {}", grpc.port)),
        };
    }
    Outcome::Error("missing probe handler".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn probe(value: serde_json::Value) -> Probe {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn results_settle_after_the_thresholds() {
        let mut t = Thresholds::of(&probe(json!({"failureThreshold": 3, "successThreshold": 2})));
        assert_eq!(t.observe(Verdict::Failure), None);
        assert_eq!(t.observe(Verdict::Failure), None);
        assert_eq!(t.observe(Verdict::Failure), Some(Verdict::Failure));
        assert_eq!(t.observe(Verdict::Failure), Some(Verdict::Failure), "stays settled");
        assert_eq!(t.observe(Verdict::Success), None, "one success of two");
        assert_eq!(t.observe(Verdict::Failure), None, "a failure starts the run over");
        assert_eq!(t.observe(Verdict::Success), None);
        assert_eq!(t.observe(Verdict::Success), Some(Verdict::Success));
        // Upstream's defaults: 1 success, 3 failures.
        let mut d = Thresholds::of(&probe(json!({})));
        assert_eq!(d.observe(Verdict::Success), Some(Verdict::Success));
        assert_eq!(d.observe(Verdict::Failure), None);
        assert_eq!(d.observe(Verdict::Failure), None);
        assert_eq!(d.observe(Verdict::Failure), Some(Verdict::Failure));
    }

    #[test]
    fn timing_defaults_as_upstream() {
        let t = Timing::of(&probe(json!({})));
        assert_eq!(
            t,
            Timing {
                initial_delay: Duration::ZERO,
                period: Duration::from_secs(10),
                timeout: Duration::from_secs(1),
            }
        );
        let t = Timing::of(&probe(
            json!({"initialDelaySeconds": 5, "periodSeconds": 0, "timeoutSeconds": 3}),
        ));
        assert_eq!(t.initial_delay, Duration::from_secs(5));
        assert_eq!(t.period, Duration::from_secs(1), "at least a second");
        assert_eq!(t.timeout, Duration::from_secs(3));
    }

    fn container(value: serde_json::Value) -> Container {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn results_belong_to_one_container_instance() {
        let probes = Probes::default();
        let c = container(json!({
            "name": "app", "image": "busybox",
            "startupProbe": {"exec": {"command": ["true"]}},
            "readinessProbe": {"exec": {"command": ["true"]}},
        }));
        // Nothing settled yet: not started, not ready.
        assert_eq!(probes.says(&c, "id1"), Says { startup: Some(false), readiness: Some(false) });
        probes.settle("app", Kind::Startup, "id1", Verdict::Success);
        probes.settle("app", Kind::Readiness, "id1", Verdict::Success);
        assert_eq!(probes.says(&c, "id1"), Says { startup: Some(true), readiness: Some(true) });
        // A new instance starts over.
        assert_eq!(probes.says(&c, "id2"), Says { startup: Some(false), readiness: Some(false) });
        assert_eq!(probes.failed("app", "id1"), None);
        probes.settle("app", Kind::Liveness, "id1", Verdict::Failure);
        assert_eq!(probes.failed("app", "id1"), Some(Kind::Liveness));
        assert_eq!(probes.failed("app", "id2"), None);
        // Without probes, nothing to say.
        let plain = container(json!({"name": "plain", "image": "busybox"}));
        assert_eq!(probes.says(&plain, "x"), Says::default());
        assert!(!has_probes(&plain) && has_probes(&c));
    }

    /// Workers on loopback: events go to an API server that is not there (and are dropped).
    fn context() -> Context {
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        Context {
            runtime: Arc::new(crate::runtime::sim::SimulatedRuntime::new()),
            recorder: Recorder::on_host(client, "kubelet", "probe-test"),
            pod_ip: "127.0.0.1".into(),
            simulated: false,
        }
    }

    fn pod() -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": "p", "namespace": "default", "uid": "u"}}),
        )
        .unwrap()
    }

    fn running(id: &str) -> ContainerRecord {
        ContainerRecord {
            id: id.into(),
            labels: Default::default(),
            state: ContainerState::Running { started_at: Utc::now() },
            image: "busybox".into(),
            image_id: String::new(),
        }
    }

    /// Polls `check` every 50 ms for at most `limit`.
    async fn eventually(limit: Duration, check: impl Fn() -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < deadline {
            if check() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        check()
    }

    #[tokio::test]
    async fn readiness_follows_a_port_and_wakes_the_pod_worker() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let wake = Arc::new(Notify::new());
        let mut probes = Probes::new(wake.clone());
        let c = container(json!({
            "name": "app", "image": "busybox",
            "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 1, "failureThreshold": 2},
        }));
        probes.ensure(&context(), &pod(), &c, &running("id1"));
        tokio::time::timeout(Duration::from_secs(5), wake.notified()).await.expect("woken");
        assert_eq!(probes.says(&c, "id1").readiness, Some(true));
        // Nothing listens any more: not ready after two failures in a row.
        drop(listener);
        let started = std::time::Instant::now();
        assert!(
            eventually(Duration::from_secs(6), || probes.says(&c, "id1").readiness == Some(false))
                .await
        );
        assert!(started.elapsed() >= Duration::from_millis(900), "two periods, not one");
        // A container that stops loses its workers and results.
        probes.stop("app");
        assert!(probes.workers.is_empty());
        assert_eq!(probes.says(&c, "id1").readiness, Some(false));
    }

    #[tokio::test]
    async fn the_startup_probe_holds_liveness_back_until_it_succeeds() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let up = Arc::new(AtomicBool::new(false));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let serving = up.clone();
        let server = tokio::spawn(async move {
            for _ in 0..100 {
                let Ok((mut socket, _)) = listener.accept().await else { return };
                let mut buf = vec![0u8; 2048];
                let n = socket.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                // /started answers 200 once `up`; /healthz always 500.
                let ok = head.starts_with("GET /started ") && serving.load(Ordering::SeqCst);
                let status = if ok { "200 OK" } else { "500 Internal Server Error" };
                let reply = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
                let _ = socket.write_all(reply.as_bytes()).await;
            }
        });
        let mut probes = Probes::new(Arc::new(Notify::new()));
        let c = container(json!({
            "name": "app", "image": "busybox",
            "startupProbe": {"httpGet": {"port": port, "path": "/started"}, "periodSeconds": 1,
                             "failureThreshold": 30},
            "livenessProbe": {"httpGet": {"port": port, "path": "/healthz"}, "periodSeconds": 1,
                              "failureThreshold": 1},
        }));
        probes.ensure(&context(), &pod(), &c, &running("id1"));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(probes.failed("app", "id1"), None, "liveness ran before the start");
        assert_eq!(probes.says(&c, "id1").startup, Some(false));
        up.store(true, Ordering::SeqCst);
        assert!(
            eventually(Duration::from_secs(5), || probes.says(&c, "id1").startup == Some(true))
                .await
        );
        assert!(
            eventually(Duration::from_secs(5), || probes.failed("app", "id1")
                == Some(Kind::Liveness))
            .await
        );
        // A new instance of the container starts over with fresh workers.
        probes.ensure(&context(), &pod(), &c, &running("id2"));
        assert_eq!(probes.failed("app", "id2"), None);
        assert!(probes.workers.values().all(|w| w.container_id == "id2"));
        server.abort();
    }
}
