//! Scheduler benchmark: fake Node objects and pending pods created through the real API
//! server, bound by the real scheduler, timed end to end from this process.
//!
//! ```text
//! cargo build --release -p rkube -p rkube-conformance
//! target/release/scheduler-bench [--quick] [--output FILE]
//! ```
//!
//! Each scenario starts a fresh `rkube server --disable scheduler` (the binary next to this
//! one, or `$RKUBE_BIN`) on a free loopback port, and `rkube scheduler --kubeconfig ...` as a
//! process of its own (default profile, leader election off: there is one scheduler), so
//! that the scheduler's memory is measured apart from the API server's. Then, with kube-rs:
//!
//! - creates N Node objects (allocatable cpu 8, memory 32Gi, pods 110, `Ready`) from 64
//!   tasks; nobody heartbeats them, and nothing needs to: they keep the status they were
//!   created with;
//! - opens a watch on the pods of the benchmark's namespace, then creates M pods (one busybox
//!   container requesting 100m cpu and 128Mi) from 64 tasks, noting when each create started;
//!   the watch notes when each pod's `spec.nodeName` first appears;
//! - throughput is pods bound / (last bind seen - first create started); latency is bind seen
//!   - create started, per pod (p50 / p99);
//! - memory: the scheduler process's RSS with an empty cluster, after the nodes and after the
//!   pods (each once the scheduler is idle), giving bytes per node and per pod of its cache.
//!
//! Scenarios: 1,000 nodes / 10,000 pods and 5,000 nodes / 30,000 pods with the default
//! plugins, and 1,000 / 10,000 with a required inter-pod anti-affinity on every pod (`--quick`:
//! 100 / 1,000, both ways). A scenario that is still binding when its time cap passes is
//! reported as partial; one where binding stops altogether fails. Writes the figures to the
//! `scheduler-bench` section of `docs/benchmarks.md` (or `--output`); `--quick` only prints.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{
    Affinity, Container, Namespace, Node, NodeCondition, NodeStatus, Pod, PodAffinityTerm,
    PodAntiAffinity, PodSpec, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::{Api, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Client;
use rkube_conformance::cluster::{rkube_binary, RkubeServer};
use rkube_conformance::report::{self, cpu_time, rss, Rss, Table};

/// Concurrent creates of nodes and of pods.
const CONCURRENCY: usize = 64;
/// The namespace the pods are created in.
const NAMESPACE: &str = "scheduler-bench";
/// The namespace of the pods that check whether anti-affinity is enforced.
const PROBE_NAMESPACE: &str = "scheduler-bench-probe";
/// How long a probe pod may wait to be bound or refused.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// Pods sharing one anti-affinity group (so that with real inter-pod anti-affinity every
/// scenario still fits: a group needs as many nodes as it has pods).
const GROUP_SIZE: usize = 10;
/// A scenario fails when no pod is bound for this long while some still wait.
const STALL: Duration = Duration::from_secs(60);
/// How long creating the nodes may take.
const NODES_TIMEOUT: Duration = Duration::from_secs(300);
/// A process counts as idle when it uses at most this much CPU in [`IDLE_WINDOW`].
const IDLE_CPU: Duration = Duration::from_millis(20);
const IDLE_WINDOW: Duration = Duration::from_millis(500);
/// How long to wait for the scheduler to go idle before reading its memory anyway.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How often binding progress is printed.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Node capacity (and allocatable) and what each pod requests.
const NODE_CPU: &str = "8";
const NODE_MEMORY: &str = "32Gi";
const NODE_PODS: &str = "110";
const POD_CPU: &str = "100m";
const POD_MEMORY: &str = "128Mi";

#[derive(Clone)]
struct Scenario {
    nodes: usize,
    pods: usize,
    anti_affinity: bool,
    /// Binding still going at this long after the first create is reported as partial.
    cap: Duration,
    /// The throughput the issue asks for, pods/s.
    target: Option<f64>,
}

impl Scenario {
    fn plugins(&self) -> &'static str {
        if self.anti_affinity {
            "default + required pod anti-affinity on every pod"
        } else {
            "default"
        }
    }
}

/// CPU used by the scheduler, the server and this program over one phase.
#[derive(Clone, Copy, Default)]
struct Cpu {
    scheduler: Duration,
    server: Duration,
    bench: Duration,
    wall: Duration,
}

struct CpuMark {
    pids: (String, String),
    at: (Duration, Duration, Duration, Instant),
}

impl CpuMark {
    fn now(scheduler: u32, server: u32) -> Result<CpuMark> {
        let pids = (scheduler.to_string(), server.to_string());
        let at = (cpu_time(&pids.0)?, cpu_time(&pids.1)?, cpu_time("self")?, Instant::now());
        Ok(CpuMark { pids, at })
    }

    fn since(&self) -> Result<Cpu> {
        Ok(Cpu {
            scheduler: cpu_time(&self.pids.0)?.saturating_sub(self.at.0),
            server: cpu_time(&self.pids.1)?.saturating_sub(self.at.1),
            bench: cpu_time("self")?.saturating_sub(self.at.2),
            wall: self.at.3.elapsed(),
        })
    }
}

impl Cpu {
    fn summary(&self) -> String {
        let cores = |d: Duration| d.as_secs_f64() / self.wall.as_secs_f64().max(1e-9);
        format!(
            "{:.2} / {:.2} / {:.2}",
            cores(self.scheduler),
            cores(self.server),
            cores(self.bench)
        )
    }
}

/// The scheduler's configuration: the default profile, no leader election.
const SCHEDULER_CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
";

/// A task aborted when dropped, so that a failing scenario leaves nothing running.
struct Task<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `rkube scheduler` as its own process, killed when dropped.
struct SchedulerProcess {
    child: Child,
    log: PathBuf,
}

impl SchedulerProcess {
    fn start(server: &RkubeServer) -> Result<SchedulerProcess> {
        let log = server.data_dir.path().join("scheduler.log");
        let log_file =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        // One scheduler, so no leader election (as upstream's scheduler_perf runs it): the
        // figures are of scheduling, and a lost lease would end the run.
        let config = server.data_dir.path().join("scheduler-config.yaml");
        std::fs::write(&config, SCHEDULER_CONFIG)
            .with_context(|| format!("writing {}", config.display()))?;
        let binary = rkube_binary();
        let child = Command::new(&binary)
            .arg("scheduler")
            .arg("--kubeconfig")
            .arg(&server.kubeconfig)
            .arg("--config")
            .arg(&config)
            // No /healthz: the figures need none, and a port could be taken.
            .args(["--secure-port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("starting {} scheduler", binary.display()))?;
        Ok(SchedulerProcess { child, log })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails when the process has exited.
    fn check_running(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("rkube scheduler exited with {status}:\n{}", tail(&self.log(), 20));
        }
        Ok(())
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for SchedulerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How process `pid`, a child of this one not yet waited for, ended: `None` while it runs.
/// Read from `/proc` (the zombie's exit code), since the server's handle is not ours to wait
/// on.
fn exit_of(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    if fields.first() != Some(&"Z") {
        return None;
    }
    // Field 52 of stat (49 after the command name): the status as waitpid reports it.
    let code: i32 = fields.get(49).and_then(|c| c.parse().ok()).unwrap_or(-1);
    Some(match (code & 0x7f, (code >> 8) & 0xff) {
        _ if code < 0 => "ended (status unknown)".to_string(),
        (0, status) => format!("exited with status {status}"),
        (signal, _) => format!("was killed by signal {signal}"),
    })
}

/// Fails when the server or the scheduler has exited.
fn check_alive(server: &RkubeServer, scheduler: &mut SchedulerProcess) -> Result<()> {
    if let Some(how) = exit_of(server.pid()) {
        bail!(
            "the rkube server (pid {}) {how} (the scheduler cannot reach it from then on); \
             server log (last 20 lines):\n{}",
            server.pid(),
            tail(&server.log(), 20)
        );
    }
    scheduler.check_running()
}

fn tail(log: &str, lines: usize) -> String {
    let all: Vec<&str> = log.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Waits until process `pid` is idle (at most [`IDLE_CPU`] over [`IDLE_WINDOW`]), or
/// [`IDLE_TIMEOUT`] has passed; returns whether it went idle.
async fn settle(pid: u32) -> Result<bool> {
    let pid = pid.to_string();
    let deadline = Instant::now() + IDLE_TIMEOUT;
    loop {
        let before = cpu_time(&pid)?;
        tokio::time::sleep(IDLE_WINDOW).await;
        if cpu_time(&pid)?.saturating_sub(before) <= IDLE_CPU {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
    }
}

/// Runs `op(0)` .. `op(count - 1)` from [`CONCURRENCY`] tasks; the first error stops them all.
async fn concurrently<F, Fut>(count: usize, op: F) -> Result<()>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..CONCURRENCY {
        let (op, next, stop) = (op.clone(), next.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                if let Err(e) = op(i).await {
                    stop.store(true, Ordering::Relaxed);
                    return Err(e.context(format!("operation {i}")));
                }
            }
            anyhow::Ok(())
        }));
    }
    let mut first_error = None;
    for task in tasks {
        if let Err(e) = task.await? {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

fn quantities(cpu: &str, memory: &str, pods: Option<&str>) -> BTreeMap<String, Quantity> {
    let mut q = BTreeMap::from([
        ("cpu".to_string(), Quantity(cpu.to_string())),
        ("memory".to_string(), Quantity(memory.to_string())),
    ]);
    if let Some(pods) = pods {
        q.insert("pods".to_string(), Quantity(pods.to_string()));
    }
    q
}

fn node(i: usize) -> Node {
    let name = format!("node-{i:05}");
    let capacity = quantities(NODE_CPU, NODE_MEMORY, Some(NODE_PODS));
    Node {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some(BTreeMap::from([
                ("kubernetes.io/hostname".to_string(), name),
                ("kubernetes.io/os".to_string(), "linux".to_string()),
                ("kubernetes.io/arch".to_string(), "amd64".to_string()),
            ])),
            ..Default::default()
        },
        spec: Some(Default::default()),
        status: Some(NodeStatus {
            allocatable: Some(capacity.clone()),
            capacity: Some(capacity),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".to_string(),
                status: "True".to_string(),
                reason: Some("KubeletReady".to_string()),
                message: Some("fake node of scheduler-bench".to_string()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

fn pod_name(i: usize) -> String {
    format!("pod-{i:06}")
}

fn pod_index(name: &str) -> Option<usize> {
    name.strip_prefix("pod-")?.parse().ok()
}

fn group_of(i: usize) -> String {
    format!("g-{:05}", i / GROUP_SIZE)
}

/// Pod `i` of a scenario.
fn bench_pod(i: usize, anti_affinity: bool) -> Pod {
    pod(pod_name(i), group_of(i), anti_affinity)
}

/// A pod labelled with `group`, with (when `anti_affinity`) a required anti-affinity to the
/// pods of its group on the node level.
fn pod(name: String, group: String, anti_affinity: bool) -> Pod {
    let affinity = anti_affinity.then(|| Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                label_selector: Some(LabelSelector {
                    match_labels: Some(BTreeMap::from([("group".to_string(), group.clone())])),
                    ..Default::default()
                }),
                topology_key: "kubernetes.io/hostname".to_string(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    });
    Pod {
        metadata: ObjectMeta {
            name: Some(name),
            labels: Some(BTreeMap::from([
                ("app".to_string(), "scheduler-bench".to_string()),
                ("group".to_string(), group),
            ])),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".to_string(),
                image: Some("busybox".to_string()),
                command: Some(vec!["sleep".to_string(), "3600".to_string()]),
                resources: Some(ResourceRequirements {
                    requests: Some(quantities(POD_CPU, POD_MEMORY, None)),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            affinity,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// What the anti-affinity scenario found out about the constraint.
struct AntiAffinity {
    /// The probe's second pod was refused.
    enforced: bool,
    /// Pods placed on a node that already held a pod of their group.
    shared: usize,
}

/// What one scenario measured.
struct Outcome {
    scenario: Scenario,
    nodes_created_in: Duration,
    pods_created_in: Duration,
    bound: usize,
    /// Last bind seen - first create started.
    elapsed: Duration,
    /// Bind seen - create started, of the bound pods, sorted.
    latencies: Vec<Duration>,
    /// The cap passed before every pod was bound.
    partial: bool,
    /// Pods bound/s over the first and the last tenth of the binds.
    early_rate: f64,
    late_rate: f64,
    cpu: Cpu,
    scheduler_empty: Rss,
    scheduler_nodes: Rss,
    scheduler_pods: Rss,
    server_nodes: Rss,
    server_pods: Rss,
    /// Every memory reading was taken with the scheduler idle.
    settled: bool,
    anti_affinity: Option<AntiAffinity>,
}

impl Outcome {
    fn throughput(&self) -> f64 {
        self.bound as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The `p`th percentile over all pods, unbound ones counting as slower than any bound
    /// one; `None` when it falls among the unbound.
    fn latency(&self, p: f64) -> Option<Duration> {
        let total = self.scenario.pods;
        let rank = ((p / 100.0) * total as f64).ceil() as usize;
        let rank = rank.clamp(1, total);
        (rank <= self.latencies.len()).then(|| self.latencies[rank - 1])
    }

    fn latency_text(&self, p: f64) -> String {
        match self.latency(p) {
            Some(d) => secs_or_ms(d),
            None => format!("> {:.0} s", self.scenario.cap.as_secs_f64()),
        }
    }

    fn bytes_per_node(&self) -> f64 {
        per_item(self.scheduler_empty, self.scheduler_nodes, self.scenario.nodes)
    }

    fn bytes_per_pod(&self) -> f64 {
        per_item(self.scheduler_nodes, self.scheduler_pods, self.scenario.pods)
    }

    fn server_bytes_per_pod(&self) -> f64 {
        per_item(self.server_nodes, self.server_pods, self.scenario.pods)
    }
}

/// Pods bound/s over the first tenth of the binds (from the first create) and over the last
/// tenth: whether binding slows down as the cluster fills.
fn tenth_rates(bind_at: &[Option<Instant>], first_create: Instant) -> (f64, f64) {
    let mut times: Vec<Instant> = bind_at.iter().flatten().copied().collect();
    times.sort();
    let k = times.len() / 10;
    if k == 0 {
        return (0.0, 0.0);
    }
    let rate = |from: Instant, to: Instant| {
        k as f64 / to.saturating_duration_since(from).as_secs_f64().max(1e-9)
    };
    let n = times.len();
    (rate(first_create, times[k - 1]), rate(times[n - 1 - k], times[n - 1]))
}

fn per_item(before: Rss, after: Rss, items: usize) -> f64 {
    (after.total as f64 - before.total as f64) * 1024.0 / items.max(1) as f64
}

fn secs_or_ms(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        report::ms(d)
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// Runs `phase`, adding the end of the server's and the scheduler's logs to its error.
async fn with_logs<T>(
    server: &RkubeServer,
    scheduler_log: &std::path::Path,
    phase: impl Future<Output = Result<T>>,
) -> Result<T> {
    phase.await.map_err(|e| {
        let e = match exit_of(server.pid()) {
            Some(how) => e.context(format!("the rkube server (pid {}) {how}", server.pid())),
            None => e,
        };
        let scheduler_log = std::fs::read_to_string(scheduler_log).unwrap_or_default();
        e.context(format!(
            "server log (last 20 lines):\n{}\nscheduler log (last 20 lines):\n{}",
            tail(&server.log(), 20),
            tail(&scheduler_log, 20)
        ))
    })
}

async fn run_scenario(scenario: &Scenario) -> Result<Outcome> {
    eprintln!(
        "scenario: {} nodes, {} pods, plugins: {}",
        scenario.nodes,
        scenario.pods,
        scenario.plugins()
    );
    let server = tokio::task::spawn_blocking(|| {
        RkubeServer::start_with(&[
            "--disable",
            "scheduler",
            // The fake nodes renew no Lease: the node lifecycle controller would taint them
            // unreachable after 40 s, and IPAM would patch each one.
            "--controllers",
            "*,-node-lifecycle-controller,-node-ipam-controller",
        ])
    })
    .await
    .context("the rkube server did not start")?;
    let mut scheduler = SchedulerProcess::start(&server)?;
    let log = scheduler.log.clone();
    let result = with_logs(&server, &log, measure(scenario, &server, &mut scheduler)).await;
    drop(scheduler);
    drop(server);
    result
}

async fn measure(
    scenario: &Scenario,
    server: &RkubeServer,
    scheduler: &mut SchedulerProcess,
) -> Result<Outcome> {
    let client = server.kube_client().await?;
    let (sched_pid, server_pid) = (scheduler.pid(), server.pid());
    let mut settled = settle(sched_pid).await?;
    check_alive(server, scheduler)?;
    let scheduler_empty = rss(sched_pid)?;
    eprintln!(
        "  server pid {server_pid} on port {}, scheduler pid {sched_pid}: RSS {}",
        server.port,
        mib(scheduler_empty.total)
    );

    // The nodes.
    let started = Instant::now();
    let nodes: Api<Node> = Api::all(client.clone());
    let create_nodes = concurrently(scenario.nodes, move |i| {
        let nodes = nodes.clone();
        async move {
            nodes.create(&PostParams::default(), &node(i)).await?;
            Ok(())
        }
    });
    tokio::time::timeout(NODES_TIMEOUT, create_nodes)
        .await
        .with_context(|| format!("creating {} nodes took over {NODES_TIMEOUT:?}", scenario.nodes))?
        .context("creating nodes")?;
    let nodes_created_in = started.elapsed();
    let check: Node = Api::all(client.clone()).get("node-00000").await?;
    let allocatable = check.status.and_then(|s| s.allocatable).unwrap_or_default();
    if allocatable.get("pods").map(|q| q.0.as_str()) != Some(NODE_PODS) {
        bail!("node-00000 did not keep the allocatable it was created with: {allocatable:?}");
    }
    settled &= settle(sched_pid).await?;
    check_alive(server, scheduler)?;
    let scheduler_nodes = rss(sched_pid)?;
    let server_nodes = rss(server_pid)?;
    eprintln!(
        "  {} nodes created in {:.1} s; scheduler RSS {}, server RSS {}",
        scenario.nodes,
        nodes_created_in.as_secs_f64(),
        mib(scheduler_nodes.total),
        mib(server_nodes.total)
    );

    // The watch, open (its initial list done) before the first pod is created.
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta { name: Some(NAMESPACE.to_string()), ..Default::default() },
                ..Default::default()
            },
        )
        .await
        .context("creating the namespace")?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let (bind_tx, mut binds) = tokio::sync::mpsc::unbounded_channel::<(usize, String, Instant)>();
    let (ready_tx, ready) = tokio::sync::oneshot::channel::<()>();
    let watch = {
        let pods = pods.clone();
        Task(tokio::spawn(async move {
            let mut ready_tx = Some(ready_tx);
            let mut events =
                watcher::watcher(pods, watcher::Config::default()).default_backoff().boxed();
            while let Some(event) = events.next().await {
                let pod = match event {
                    Ok(Event::Apply(pod) | Event::InitApply(pod)) => pod,
                    Ok(Event::InitDone) => {
                        if let Some(tx) = ready_tx.take() {
                            let _ = tx.send(());
                        }
                        continue;
                    }
                    Ok(_) => continue,
                    Err(e) => {
                        eprintln!("  pod watch: {e} ({e:?}) (retrying)");
                        continue;
                    }
                };
                let seen = Instant::now();
                let bound = pod.spec.and_then(|s| s.node_name).filter(|n| !n.is_empty());
                if let Some(node) = bound {
                    if let Some(i) = pod.metadata.name.as_deref().and_then(pod_index) {
                        if bind_tx.send((i, node, seen)).is_err() {
                            return;
                        }
                    }
                }
            }
        }))
    };
    tokio::time::timeout(Duration::from_secs(60), ready)
        .await
        .context("the pod watch did not start within 60 s")?
        .context("the pod watch ended before it started")?;

    // The pods: each notes when its create started, in nanoseconds after `base` (plus one, so
    // that zero means "not started").
    let base = Instant::now();
    let created: Arc<Vec<AtomicU64>> =
        Arc::new((0..scenario.pods).map(|_| AtomicU64::new(0)).collect());
    let cpu_mark = CpuMark::now(sched_pid, server_pid)?;
    let mut creator = {
        let (created, pods, anti) = (created.clone(), pods.clone(), scenario.anti_affinity);
        Task(tokio::spawn(concurrently(scenario.pods, move |i| {
            let (created, pods) = (created.clone(), pods.clone());
            async move {
                let pod = bench_pod(i, anti);
                created[i].store(base.elapsed().as_nanos() as u64 + 1, Ordering::Relaxed);
                pods.create(&PostParams::default(), &pod).await?;
                Ok(())
            }
        })))
    };
    let mut creating = true;
    let mut pods_created_in = Duration::ZERO;
    let mut bind_at: Vec<Option<Instant>> = vec![None; scenario.pods];
    let mut node_of: Vec<Option<String>> = vec![None; scenario.pods];
    let mut bound = 0usize;
    let mut last_bind = base;
    let mut last_progress = Instant::now();
    let cap = base + scenario.cap;
    let mut progress = tokio::time::interval(PROGRESS_EVERY);
    progress.tick().await;
    let partial = loop {
        if bound == scenario.pods {
            break false;
        }
        let now = Instant::now();
        if now >= cap {
            break true;
        }
        if !creating && now >= last_progress + STALL {
            bail!(
                "only {bound} of {} pods bound: none in the last {} s ({:.0} s after the first \
                 create)",
                scenario.pods,
                STALL.as_secs(),
                base.elapsed().as_secs_f64()
            );
        }
        let wake = cap.min(last_progress + STALL);
        tokio::select! {
            bind = binds.recv() => match bind {
                Some((i, node, seen)) => {
                    if i < bind_at.len() && bind_at[i].is_none() {
                        bind_at[i] = Some(seen);
                        node_of[i] = Some(node);
                        bound += 1;
                        last_bind = last_bind.max(seen);
                        last_progress = seen;
                    }
                }
                None => bail!("the pod watch ended with {bound} of {} pods bound", scenario.pods),
            },
            done = &mut creator.0, if creating => {
                done.context("the create task panicked")?
                    .with_context(|| format!("creating pods ({bound} bound so far)"))?;
                creating = false;
                pods_created_in = base.elapsed();
                // Stalls count from the end of the creates.
                last_progress = last_progress.max(Instant::now());
                eprintln!(
                    "  {} pods created in {:.1} s ({bound} bound so far)",
                    scenario.pods,
                    pods_created_in.as_secs_f64()
                );
            },
            _ = progress.tick() => {
                check_alive(server, scheduler)?;
                eprintln!(
                    "  {:.0} s: {bound} of {} pods bound",
                    base.elapsed().as_secs_f64(),
                    scenario.pods
                );
            },
            _ = tokio::time::sleep_until(wake.into()) => {}
        }
    };
    let cpu = cpu_mark.since()?;
    drop(watch);
    if creating {
        bail!(
            "creating {} pods did not finish within the {} s cap ({bound} bound)",
            scenario.pods,
            scenario.cap.as_secs()
        );
    }
    let first_create = created
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .filter(|&n| n > 0)
        .min()
        .map(|n| base + Duration::from_nanos(n - 1))
        .context("no pod create started")?;
    let mut latencies: Vec<Duration> = bind_at
        .iter()
        .enumerate()
        .filter_map(|(i, at)| {
            let at = (*at)?;
            let started = base + Duration::from_nanos(created[i].load(Ordering::Relaxed) - 1);
            Some(at.saturating_duration_since(started))
        })
        .collect();
    latencies.sort();
    let elapsed = last_bind.saturating_duration_since(first_create);
    let (early_rate, late_rate) = tenth_rates(&bind_at, first_create);
    if partial {
        eprintln!(
            "  cap of {} s reached: {bound} of {} pods bound",
            scenario.cap.as_secs(),
            scenario.pods
        );
    } else {
        eprintln!(
            "  all {} pods bound in {:.1} s ({:.0} pods/s)",
            scenario.pods,
            elapsed.as_secs_f64(),
            bound as f64 / elapsed.as_secs_f64().max(1e-9)
        );
    }

    // Memory with every pod in the scheduler's cache (bound, or still pending when partial).
    settled &= settle(sched_pid).await?;
    check_alive(server, scheduler)?;
    let scheduler_pods = rss(sched_pid)?;
    let server_pods = rss(server_pid)?;
    eprintln!(
        "  scheduler RSS {}, server RSS {}{}",
        mib(scheduler_pods.total),
        mib(server_pods.total),
        if settled { "" } else { " (the scheduler was not idle at some reading)" }
    );

    let anti_affinity = if scenario.anti_affinity {
        let enforced = probe_anti_affinity(&client).await?;
        let shared = pods_sharing_a_node(&node_of);
        eprintln!(
            "  required pod anti-affinity {}; {shared} pods share a node with a pod of their group",
            if enforced { "enforced" } else { "IGNORED" }
        );
        Some(AntiAffinity { enforced, shared })
    } else {
        None
    };
    Ok(Outcome {
        scenario: scenario.clone(),
        nodes_created_in,
        pods_created_in,
        bound,
        elapsed,
        latencies,
        partial,
        early_rate,
        late_rate,
        cpu,
        scheduler_empty,
        scheduler_nodes,
        scheduler_pods,
        server_nodes,
        server_pods,
        settled,
        anti_affinity,
    })
}

/// Pods on a node that already holds an earlier pod of their group.
fn pods_sharing_a_node(node_of: &[Option<String>]) -> usize {
    let mut seen = std::collections::HashSet::new();
    node_of
        .iter()
        .enumerate()
        .filter_map(|(i, node)| Some((group_of(i), node.as_ref()?)))
        .filter(|(group, node)| !seen.insert((group.clone(), (*node).clone())))
        .count()
}

/// Whether the scheduler enforces required pod anti-affinity, asked directly: two pods that
/// repel each other, both pinned to `node-00000` by a nodeSelector, created one after the
/// other. If the second is bound too the term was ignored; if the scheduler marks it
/// `PodScheduled=False` it was enforced.
async fn probe_anti_affinity(client: &Client) -> Result<bool> {
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(PROBE_NAMESPACE.to_string()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .context("creating the probe namespace")?;
    let api: Api<Pod> = Api::namespaced(client.clone(), PROBE_NAMESPACE);
    for name in ["probe-a", "probe-b"] {
        let mut probe = pod(name.to_string(), "probe".to_string(), true);
        if let Some(spec) = probe.spec.as_mut() {
            spec.node_selector = Some(BTreeMap::from([(
                "kubernetes.io/hostname".to_string(),
                "node-00000".to_string(),
            )]));
        }
        api.create(&PostParams::default(), &probe)
            .await
            .with_context(|| format!("creating {name}"))?;
        let deadline = Instant::now() + PROBE_TIMEOUT;
        loop {
            let probe = api.get(name).await.with_context(|| format!("reading {name}"))?;
            let bound = probe.spec.as_ref().and_then(|s| s.node_name.as_deref());
            let bound = bound.is_some_and(|n| !n.is_empty());
            let unschedulable = probe
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .find(|c| c.type_ == "PodScheduled" && c.status == "False")
                .map(|c| c.message.clone().unwrap_or_default());
            match (name, bound, unschedulable) {
                ("probe-a", true, _) => break,
                ("probe-a", false, Some(why)) => {
                    bail!("probe-a, alone on node-00000, was not scheduled: {why}")
                }
                (_, true, _) => return Ok(false),
                (_, false, Some(_)) => return Ok(true),
                _ => {}
            }
            if Instant::now() >= deadline {
                bail!(
                    "{name} was neither bound nor marked unschedulable within {} s",
                    PROBE_TIMEOUT.as_secs()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    unreachable!("the loop returns at probe-b")
}

/// Scheduler benchmark: fake nodes and pending pods created through a real `rkube server`,
/// bound by a real `rkube scheduler` process (the binaries next to this one, or $RKUBE_BIN):
/// pods bound per second, bind latency p50/p99 and the scheduler's memory per node and pod.
/// Scenarios: 1,000 nodes / 10,000 pods and 5,000 / 30,000 with the default plugins, and
/// 1,000 / 10,000 with required anti-affinity (--quick: 100 / 1,000). Writes the
/// `scheduler-bench` section of docs/benchmarks.md.
#[derive(Parser)]
#[command(name = "scheduler-bench")]
struct Cli {
    #[command(flatten)]
    common: report::Args,
}

#[tokio::main]
async fn main() -> Result<()> {
    let Cli { common: report::Args { quick, output } } = Cli::parse();
    let scenarios = if quick {
        let small = |anti_affinity| Scenario {
            nodes: 100,
            pods: 1_000,
            anti_affinity,
            cap: Duration::from_secs(120),
            target: None,
        };
        vec![small(false), small(true)]
    } else {
        vec![
            Scenario {
                nodes: 1_000,
                pods: 10_000,
                anti_affinity: false,
                cap: Duration::from_secs(180),
                target: Some(1_000.0),
            },
            Scenario {
                nodes: 5_000,
                pods: 30_000,
                anti_affinity: false,
                cap: Duration::from_secs(360),
                target: Some(300.0),
            },
            Scenario {
                nodes: 1_000,
                pods: 10_000,
                anti_affinity: true,
                cap: Duration::from_secs(180),
                target: None,
            },
        ]
    };
    let started = Instant::now();
    let mut outcomes = Vec::new();
    for scenario in &scenarios {
        outcomes.push(run_scenario(scenario).await?);
    }
    eprintln!("done in {:.0} s", started.elapsed().as_secs_f64());
    let markdown = render(&outcomes, quick);
    println!("{markdown}");
    if !quick {
        report::write_section(&output, "scheduler-bench", &markdown)
            .with_context(|| format!("writing {output}"))?;
        eprintln!("wrote {output}");
    }
    Ok(())
}

fn render(outcomes: &[Outcome], quick: bool) -> String {
    let mut table = Table::new(&[
        "nodes / pods",
        "plugins",
        "bound",
        "pods bound/s",
        "first / last tenth of binds",
        "latency p50 / p99",
        "scheduler CPU per pod",
        "cores: scheduler / server / bench",
    ]);
    for o in outcomes {
        let s = &o.scenario;
        let mut plugins = s.plugins().to_string();
        match &o.anti_affinity {
            Some(a) if a.enforced => plugins.push_str(&format!(
                " (enforced; {} pods share a node with a pod of their group)",
                a.shared
            )),
            Some(a) => plugins.push_str(&format!(
                " (NOT ENFORCED: {} pods share a node with a pod of their group)",
                a.shared
            )),
            None => {}
        }
        let bound = if o.partial {
            format!("{} of {} (PARTIAL: {} s cap reached)", o.bound, s.pods, s.cap.as_secs())
        } else {
            format!("{} of {}", o.bound, s.pods)
        };
        table.row(vec![
            format!("{} / {}", s.nodes, s.pods),
            plugins,
            bound,
            format!("{:.0}", o.throughput()),
            format!("{:.0}/s / {:.0}/s", o.early_rate, o.late_rate),
            format!("{} / {}", o.latency_text(50.0), o.latency_text(99.0)),
            report::ms(o.cpu.scheduler / o.bound.max(1) as u32),
            o.cpu.summary(),
        ]);
    }
    let mut memory = Table::new(&[
        "nodes / pods",
        "scheduler RSS: empty -> nodes -> pods",
        "scheduler cache per node",
        "scheduler cache per pod",
        "server RSS: nodes -> pods (per pod)",
    ]);
    for o in outcomes {
        let s = &o.scenario;
        memory.row(vec![
            format!(
                "{} / {}{}",
                s.nodes,
                s.pods,
                if s.anti_affinity { " (anti-affinity)" } else { "" }
            ),
            format!(
                "{} -> {} -> {}",
                mib(o.scheduler_empty.total),
                mib(o.scheduler_nodes.total),
                mib(o.scheduler_pods.total)
            ),
            format!("{:.0} B", o.bytes_per_node()),
            format!("{:.0} B", o.bytes_per_pod()),
            format!(
                "{} -> {} ({:.0} B)",
                mib(o.server_nodes.total),
                mib(o.server_pods.total),
                o.server_bytes_per_pod()
            ),
        ]);
    }
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    let targets: Vec<String> = outcomes
        .iter()
        .filter_map(|o| {
            let target = o.scenario.target?;
            Some(format!(
                "- at least {target:.0} pods/s on {} nodes with the default plugins: \
                 {:.0}/s ({}{})",
                o.scenario.nodes,
                o.throughput(),
                verdict(!o.partial && o.throughput() >= target),
                if o.partial { ", partial run" } else { "" }
            ))
        })
        .collect();
    let targets = if targets.is_empty() {
        "Targets (full run only): at least 1000 pods/s on 1000 nodes and 300 pods/s on 5000 \
         nodes with the default plugins."
            .to_string()
    } else {
        format!("Targets:\n\n{}", targets.join("\n"))
    };
    let creates: Vec<String> = outcomes
        .iter()
        .map(|o| {
            format!(
                "{} nodes in {:.1} s and {} pods in {:.1} s",
                o.scenario.nodes,
                o.nodes_created_in.as_secs_f64(),
                o.scenario.pods,
                o.pods_created_in.as_secs_f64()
            )
        })
        .collect();
    let unsettled = if outcomes.iter().all(|o| o.settled) {
        String::new()
    } else {
        format!(
            " In some scenario the scheduler was still busy after {} s at a memory reading, \
             which was taken anyway.",
            IDLE_TIMEOUT.as_secs()
        )
    };
    let anon: Vec<String> = outcomes
        .iter()
        .map(|o| {
            format!(
                "{} -> {} -> {}",
                mib(o.scheduler_empty.anon),
                mib(o.scheduler_nodes.anon),
                mib(o.scheduler_pods.anon)
            )
        })
        .collect();
    format!(
        "## Scheduler (`scheduler-bench`{quick})\n\n{table}\n\n{memory}\n\n\
         Each scenario runs on a fresh `rkube server --disable scheduler` (embedded SQLite \
         store) with `rkube scheduler --kubeconfig ... --config ...` as a process of its \
         own (the default profile; `leaderElect: false`, as there is one scheduler), both \
         on loopback, driven by kube-rs from this program; the three processes share the \
         machine's cores. Nodes: Node objects created through the API from {c} tasks, \
         allocatable and capacity cpu {NODE_CPU}, memory {NODE_MEMORY}, pods {NODE_PODS}, \
         condition `Ready`. Pods: created through the API from {c} tasks in one namespace, \
         one busybox container requesting {POD_CPU} cpu and {POD_MEMORY}. A watch on the \
         namespace's pods, opened before the first create, notes when each pod's \
         `spec.nodeName` first appears. Pods bound/s = pods bound / (last bind seen - first \
         create started): it includes the API server's create, the scheduler's watch, \
         filter, score and `pods/binding` POST (and its `Scheduled` event), and the watch \
         back; the rates over the first and the last tenth of the binds show whether binding \
         slows down as the cluster fills. Latency = bind seen - create started, per pod; \
         when pods are created faster than they are bound, it is mostly time spent waiting \
         in the scheduler's queue. Scheduler CPU per pod: the scheduler process's CPU time \
         from the first create to the last bind / pods bound. A scenario still binding when \
         its cap passes is reported as partial, its rate over the pods bound so far and its \
         percentiles over all pods (unbound ones counted as slower than the cap). The \
         anti-affinity scenario gives each pod a \
         `requiredDuringSchedulingIgnoredDuringExecution` podAntiAffinity against pods with \
         its own `group` label ({GROUP_SIZE} pods per group) on topology key \
         `kubernetes.io/hostname`. Whether the scheduler enforces it is asked directly after \
         the run: two pods that repel each other, both pinned to one node; enforced means \
         the second was refused (`PodScheduled=False`). The row also counts the pods placed \
         next to a pod of their own group (0 when enforced).\n\n\
         Memory: VmRSS of the scheduler process alone (its cache of nodes and pods, the two \
         watch streams, the allocator's free lists) read when the process is idle: with no \
         nodes, after the nodes, and after the pods; per node = growth with the nodes / \
         nodes, per pod = growth with the pods / pods (RssAnon: {anon}). The pods figure \
         holds every pod in the cache (bound, or pending in a partial run); freed memory the \
         allocator keeps counts too, so these are upper bounds. The server's VmRSS is shown \
         for comparison (its store, watch cache and the events the scheduler records).{unsettled} \
         Creates took: {creates}.\n\n\
         {targets}\n\n{machine}\n",
        quick = if quick { ", quick run" } else { "" },
        table = table.markdown(),
        memory = memory.markdown(),
        c = CONCURRENCY,
        anon = anon.join("; "),
        creates = creates.join("; "),
        machine = report::machine(),
    )
}
