//! Kubelet benchmark: pod startup on a real Docker engine next to a bare `docker run`, the
//! kubelet's memory with 100 pods, and how many simulated nodes fit in a GiB.
//!
//! ```text
//! cargo build --release -p rkube -p rkube-conformance
//! target/release/kubelet-bench [--quick] [--pods N] [--docker-only] [--output FILE]
//! ```
//!
//! `--help` prints the options ([`USAGE`]).
//!
//! Docker part: a fresh `rkube server` (no local node) and `rkube kubelet` as a process of its
//! own (so that its memory is measured apart from the API server's) on this machine's Docker
//! engine, with the busybox image present. Then:
//!
//! - bare Docker: `docker run -d busybox:1.36 sleep 3600`, one after another, timed from the
//!   command's start to its exit (the container is running then), on the default bridge;
//! - one at a time: a pod (one busybox container, `sleep 3600`, image pull IfNotPresent)
//!   created with kube-rs, timed from the start of the create to a watch seeing it Running
//!   (the kubelet's status update), then the next; this is the latency of one pod on an
//!   otherwise idle node, next to the bare `docker run` of the same image;
//! - a burst: the pods' count created at once (64 creates in flight), once the kubelet has
//!   removed the containers of the one-at-a-time pods (as each bare Docker phase removes its
//!   own before the next); latency per pod from its create to Running, and the time until
//!   the last one runs;
//! - the kubelet process's RSS before the pods, and with them all running.
//!
//! Simulated part: `rkube kubelet --runtime simulated --nodes N` against a fresh server, for
//! two values of N; its RSS once every node is Ready and the process is idle gives the memory
//! per simulated node (the difference between the two runs, divided by the difference in N),
//! hence nodes per GiB.
//!
//! Writes the `kubelet-bench` section of `docs/benchmarks.md` (or `--output`) after a full
//! run; `--quick` (20 pods, 20 and 50 simulated nodes), `--pods N` and `--docker-only` only
//! print.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::Client;
use rkube_conformance::cluster::{rkube_binary, RkubeServer};
use rkube_conformance::node::{ensure_busybox_image, BUSYBOX};
use rkube_conformance::report::{self, cpu_time, ms, percentile, rss, Table};

/// What `--help` prints.
const USAGE: &str = "\
kubelet-bench: pod startup on this machine's Docker engine (a bare `docker run`, Docker alone
doing a pod's work, and `rkube kubelet` starting pods one at a time and all at once), the
kubelet's memory with its pods, and how many simulated nodes fit in a GiB.

Usage: kubelet-bench [OPTIONS]

Build first: cargo build --release -p rkube -p rkube-conformance
It starts its own `rkube server` and `rkube kubelet` (the `rkube` binary next to this one) and
needs a reachable Docker engine and root (the kubelet makes a bridge and veth pairs).

Options:
  --quick          a small run: 20 pods, 20 and 50 simulated nodes; prints only
  --pods N         pods (and bare Docker runs) per part instead of 100; prints only
  --docker-only    skip the simulated nodes; prints only
  --output FILE    where a full run writes its section (default: docs/benchmarks.md)
  --keep-logs DIR  copy the Docker part's server and kubelet logs there (set RUST_LOG for
                   more: rkube_kubelet::pods::sync=debug times each pod's sync)
  -h, --help       print this text and exit
";

/// The command line.
struct Options {
    pods: usize,
    /// The simulated-node counts, None with `--docker-only`.
    simulated: Option<(usize, usize)>,
    /// Where to write the figures: None unless it is a full run.
    output: Option<String>,
    /// Where to copy the logs of the Docker part.
    keep_logs: Option<std::path::PathBuf>,
}

impl Options {
    /// Reads the arguments; `Ok(None)` after printing the usage for `--help`.
    fn parse(args: impl Iterator<Item = String>) -> Result<Option<Options>> {
        let (mut quick, mut docker_only, mut pods, mut output) = (false, false, None, None);
        let mut keep_logs = None;
        let mut args = args.peekable();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "-h" | "--help" => {
                    print!("{USAGE}");
                    return Ok(None);
                }
                "--quick" => quick = true,
                "--docker-only" => docker_only = true,
                "--pods" => {
                    let value = args.next().context("--pods needs a number")?;
                    let n: usize =
                        value.parse().with_context(|| format!("--pods {value:?}: not a number"))?;
                    if n == 0 {
                        bail!("--pods must be at least 1");
                    }
                    pods = Some(n);
                }
                "--output" => output = Some(args.next().context("--output needs a file")?),
                "--keep-logs" => {
                    keep_logs = Some(args.next().context("--keep-logs needs a directory")?.into())
                }
                other => bail!("unknown argument {other:?}\n\n{USAGE}"),
            }
        }
        let full = !quick && !docker_only && pods.is_none();
        Ok(Some(Options {
            pods: pods.unwrap_or(if quick { 20 } else { 100 }),
            simulated: (!docker_only).then_some(if quick { (20, 50) } else { (100, 500) }),
            output: full.then(|| output.unwrap_or_else(report::default_benchmarks_file)),
            keep_logs,
        }))
    }
}

/// Creates in flight during the burst.
const CONCURRENCY: usize = 64;
/// How long any one wait (a pod running, nodes Ready, pods gone) may take.
const WAIT: Duration = Duration::from_secs(300);
/// A process counts as idle when it uses at most this much CPU in [`IDLE_WINDOW`].
const IDLE_CPU: Duration = Duration::from_millis(30);
const IDLE_WINDOW: Duration = Duration::from_millis(1000);

/// A child process killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn kubelet(server: &RkubeServer, extra: &[&str], log: &Path) -> Result<Process> {
    let log = std::fs::File::create(log)?;
    let child = Command::new(rkube_binary())
        .arg("kubelet")
        .arg("--kubeconfig")
        .arg(&server.kubeconfig)
        .arg("--root-dir")
        .arg(server.data_dir.path().join("kubelet"))
        .args(["--eviction-hard", "memory.available<100Mi,nodefs.available<100Mi"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .context("starting rkube kubelet")?;
    Ok(Process(child))
}

/// Waits until `count` nodes are Ready.
async fn nodes_ready(client: &Client, count: usize) -> Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let deadline = Instant::now() + WAIT;
    loop {
        let ready = nodes
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .filter(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .count();
        if ready >= count {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{ready} of {count} nodes Ready after {WAIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits (bounded) until the process uses almost no CPU, then reads its RSS in KiB.
async fn idle_rss(pid: u32) -> Result<u64> {
    let pid_text = pid.to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let before = cpu_time(&pid_text)?;
        tokio::time::sleep(IDLE_WINDOW).await;
        if cpu_time(&pid_text)? - before <= IDLE_CPU || Instant::now() > deadline {
            return Ok(rss(pid)?.total);
        }
    }
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "kubelet-bench"}},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [{
                "name": "sleep", "image": BUSYBOX, "imagePullPolicy": "IfNotPresent",
                "command": ["sleep", "3600"]
            }]
        }
    }))
    .expect("a pod")
}

/// When each pod of the benchmark was first seen Running, by name.
type Seen = Arc<Mutex<HashMap<String, Instant>>>;

fn watch_running(client: &Client) -> (Seen, tokio::task::JoinHandle<()>) {
    let seen: Seen = Default::default();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let config = watcher::Config::default().labels("app=kubelet-bench");
    let record = seen.clone();
    let task = tokio::spawn(async move {
        let mut events = watcher::watcher(pods, config).boxed();
        while let Some(event) = events.next().await {
            let pods = match event {
                Ok(Event::Apply(pod) | Event::InitApply(pod)) => vec![pod],
                Ok(Event::Init) => {
                    eprintln!("watch: (re)listing");
                    continue;
                }
                Err(e) => {
                    eprintln!("watch: {e}");
                    continue;
                }
                _ => continue,
            };
            for pod in pods {
                let running =
                    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
                if running {
                    let name = pod.metadata.name.unwrap_or_default();
                    record.lock().unwrap().entry(name).or_insert_with(Instant::now);
                }
            }
        }
    });
    (seen, task)
}

async fn wait_running(seen: &Seen, names: &[String]) -> Result<()> {
    let deadline = Instant::now() + WAIT;
    loop {
        let done = {
            let seen = seen.lock().unwrap();
            names.iter().filter(|n| seen.contains_key(*n)).count()
        };
        if done == names.len() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{done} of {} pods Running after {WAIT:?}", names.len());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn delete_all(client: &Client) -> Result<()> {
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let params = ListParams::default().labels("app=kubelet-bench");
    pods.delete_collection(&DeleteParams::default(), &params).await?;
    let deadline = Instant::now() + WAIT;
    while !pods.list(&params).await?.items.is_empty() {
        if Instant::now() > deadline {
            bail!("pods not gone after {WAIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// The node's containers in Docker (running or not), by the label the kubelet gives them.
fn node_containers(node: &str) -> Result<Vec<String>> {
    let filter = format!("label=io.rkube.node={node}");
    let out = Command::new("docker").args(["ps", "-aq", "--filter", &filter]).output()?;
    if !out.status.success() {
        bail!("docker ps failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).split_whitespace().map(String::from).collect())
}

/// Waits until the kubelet has removed every container of the node's deleted pods, so
/// that a timed phase does not share Docker with the last phase's teardown (the API drops a
/// pod with no grace period at once; its containers go afterwards), as each bare Docker phase
/// removes its containers before the next one starts.
async fn wait_docker_idle(node: &str) -> Result<()> {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = node_containers(node)?.len();
        if left == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{left} containers of node {node} still in Docker after {WAIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn sorted(mut samples: Vec<Duration>) -> Vec<Duration> {
    samples.sort();
    samples
}

fn p50_p99(samples: &[Duration]) -> String {
    format!("{} / {}", ms(percentile(samples, 50.0)), ms(percentile(samples, 99.0)))
}

/// `docker run -d` of the image, `count` times: one after another, or all at once (one
/// thread each). Each sample is one command's start to exit; with `at_once`, the total time is
/// returned too. With `as_pods`, each sample is what a pod takes of Docker: a pause
/// container with no network (IPC shareable, as the kubelet's sandbox), then the image
/// joining its network and IPC namespaces. The containers are removed afterwards.
fn bare_docker(count: usize, at_once: bool, as_pods: bool) -> Result<(Vec<Duration>, Duration)> {
    let label = format!("rkube-kubelet-bench={}", std::process::id());
    let docker_run = |args: &[&str]| -> Result<String> {
        let out =
            Command::new("docker").args(["run", "-d", "--label", &label]).args(args).output()?;
        if !out.status.success() {
            bail!("docker run failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let run = || -> Result<Duration> {
        let start = Instant::now();
        if as_pods {
            let pause = "rkube/pause:3.10";
            let sandbox = docker_run(&["--ipc", "shareable", "--network", "none", pause])?;
            let join = format!("container:{sandbox}");
            docker_run(&["--network", &join, "--ipc", &join, BUSYBOX, "sleep", "3600"])?;
        } else {
            docker_run(&[BUSYBOX, "sleep", "3600"])?;
        }
        Ok(start.elapsed())
    };
    let started = Instant::now();
    let result: Result<Vec<Duration>> = if at_once {
        std::thread::scope(|scope| {
            let runs: Vec<_> = (0..count).map(|_| scope.spawn(run)).collect();
            runs.into_iter().map(|r| r.join().expect("docker run thread")).collect()
        })
    } else {
        (0..count).map(|_| run()).collect()
    };
    let total = started.elapsed();
    let ids = Command::new("docker")
        .args(["ps", "-aq", "--filter", &format!("label={label}")])
        .output()?;
    let ids: Vec<String> =
        String::from_utf8_lossy(&ids.stdout).split_whitespace().map(String::from).collect();
    if !ids.is_empty() {
        Command::new("docker").args(["rm", "-f"]).args(&ids).stdout(Stdio::null()).status()?;
    }
    Ok((sorted(result?), total))
}

struct DockerFigures {
    bare: Vec<Duration>,
    bare_at_once: Vec<Duration>,
    bare_at_once_total: Duration,
    as_pods: Vec<Duration>,
    as_pods_at_once: Vec<Duration>,
    as_pods_at_once_total: Duration,
    one_by_one: Vec<Duration>,
    burst: Vec<Duration>,
    burst_total: Duration,
    /// From the API's last delete of the one-at-a-time pods to Docker holding none of their
    /// containers.
    teardown: Duration,
    rss_idle_kib: u64,
    rss_pods_kib: u64,
    kubelet_cpu_per_pod: Duration,
}

async fn docker_part(pods: usize, keep_logs: Option<&Path>) -> Result<DockerFigures> {
    ensure_busybox_image();
    let server = RkubeServer::start();
    let port = rkube_store::testing::free_port();
    let node = format!("kubelet-bench-{port}");
    let cidr = format!("10.{}.{}.0/24", 200 + (port / 256) % 50, port % 256);
    let log = server.data_dir.path().join("kubelet.log");
    let kubelet = kubelet(
        &server,
        &["--node-name", &node, "--kubelet-port", &port.to_string(), "--pod-cidr", &cidr],
        &log,
    )?;
    let client = server.kube_client().await?;
    nodes_ready(&client, 1)
        .await
        .with_context(|| std::fs::read_to_string(&log).unwrap_or_default())?;
    let pid = kubelet.0.id();
    let rss_idle_kib = idle_rss(pid).await?;
    eprintln!("kubelet idle: {rss_idle_kib} KiB");

    // Warm up Docker's caches (and the kubelet's) before timing anything.
    let _ = bare_docker(3, false, false)?;
    let (bare, _) = bare_docker(pods, false, false)?;
    let (bare_at_once, bare_at_once_total) = bare_docker(pods, true, false)?;
    let (as_pods, _) = bare_docker(pods, false, true)?;
    let (as_pods_at_once, as_pods_at_once_total) = bare_docker(pods, true, true)?;
    eprintln!("docker alone, as pods: p50/p99 {}", p50_p99(&as_pods));
    eprintln!("bare docker run, all at once: p50/p99 {}", p50_p99(&bare_at_once));
    eprintln!("bare docker run: p50/p99 {}", p50_p99(&bare));

    let api: Api<Pod> = Api::default_namespaced(client.clone());
    let (seen, watch) = watch_running(&client);
    let names: Vec<String> = (0..pods).map(|i| format!("one-{i}")).collect();
    let mut one_by_one = Vec::with_capacity(pods);
    for name in &names {
        let start = Instant::now();
        api.create(&PostParams::default(), &pod(name)).await?;
        wait_running(&seen, std::slice::from_ref(name)).await?;
        one_by_one.push(seen.lock().unwrap()[name] - start);
    }
    let one_by_one = sorted(one_by_one);
    eprintln!("one at a time: p50/p99 {}", p50_p99(&one_by_one));
    delete_all(&client).await?;
    let teardown = Instant::now();
    wait_docker_idle(&node).await?;
    let teardown = teardown.elapsed();
    eprintln!("the kubelet removed the pods' containers {} after the API", ms(teardown));

    let names: Vec<String> = (0..pods).map(|i| format!("burst-{i}")).collect();
    let cpu_before = cpu_time(&pid.to_string())?;
    let started = Instant::now();
    let starts: Vec<(String, Instant)> = futures_util::stream::iter(names.clone())
        .map(|name| {
            let api = api.clone();
            async move {
                let start = Instant::now();
                api.create(&PostParams::default(), &pod(&name)).await.map(|_| (name, start))
            }
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect()
        .await?;
    wait_running(&seen, &names).await?;
    let burst_total = started.elapsed();
    let burst = {
        let seen = seen.lock().unwrap();
        sorted(starts.iter().map(|(name, start)| seen[name] - *start).collect())
    };
    eprintln!("burst: p50/p99 {}, all in {}", p50_p99(&burst), ms(burst_total));
    let rss_pods_kib = idle_rss(pid).await?;
    let kubelet_cpu_per_pod = (cpu_time(&pid.to_string())? - cpu_before) / pods as u32;
    eprintln!("kubelet with {pods} pods: {rss_pods_kib} KiB");
    delete_all(&client).await?;
    watch.abort();
    drop(kubelet);
    if let Some(dir) = keep_logs {
        std::fs::create_dir_all(dir)?;
        std::fs::copy(&log, dir.join("kubelet.log"))?;
        std::fs::write(dir.join("server.log"), server.log())?;
        eprintln!("logs in {}", dir.display());
    }
    remove_node_leftovers(&node);
    Ok(DockerFigures {
        bare,
        bare_at_once,
        bare_at_once_total,
        as_pods,
        as_pods_at_once,
        as_pods_at_once_total,
        one_by_one,
        burst,
        burst_total,
        teardown,
        rss_idle_kib,
        rss_pods_kib,
        kubelet_cpu_per_pod,
    })
}

/// Removes whatever the benchmark's kubelet left in Docker: exited containers of its pods
/// and its pod network.
fn remove_node_leftovers(node: &str) {
    if let Ok(ids) = node_containers(node) {
        if !ids.is_empty() {
            let _ =
                Command::new("docker").args(["rm", "-f"]).args(&ids).stdout(Stdio::null()).status();
        }
    }
    rkube_kubelet::runtime::podnet::remove(node);
}

/// The RSS (KiB) of one process running `nodes` simulated nodes, once they are Ready and idle.
async fn simulated_rss(nodes: usize) -> Result<(u64, Duration)> {
    // A cluster CIDR with room for every node's /24.
    let server = RkubeServer::start_with(&["--cluster-cidr", "10.64.0.0/10"]);
    let log = server.data_dir.path().join("sim.log");
    let started = Instant::now();
    let process =
        kubelet(&server, &["--runtime", "simulated", "--nodes", &nodes.to_string()], &log)?;
    let client = server.kube_client().await?;
    nodes_ready(&client, nodes)
        .await
        .with_context(|| std::fs::read_to_string(&log).unwrap_or_default())?;
    let ready_after = started.elapsed();
    Ok((idle_rss(process.0.id()).await?, ready_after))
}

#[tokio::main]
async fn main() -> Result<()> {
    let Some(options) = Options::parse(std::env::args().skip(1))? else { return Ok(()) };
    let pods = options.pods;

    let d = docker_part(pods, options.keep_logs.as_deref()).await?;
    let simulated = match options.simulated {
        Some((small, large)) => {
            eprintln!("simulated nodes: {small}");
            let (rss_small, ready_small) = simulated_rss(small).await?;
            eprintln!("simulated nodes: {large}");
            let (rss_large, ready_large) = simulated_rss(large).await?;
            Some((small, large, rss_small, rss_large, ready_small, ready_large))
        }
        None => None,
    };

    let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
    let bare_p99 = percentile(&d.bare, 99.0);
    let one_p99 = percentile(&d.one_by_one, 99.0);
    let ratio = one_p99.as_secs_f64() / bare_p99.as_secs_f64();
    let burst_ratio =
        percentile(&d.burst, 99.0).as_secs_f64() / percentile(&d.bare_at_once, 99.0).as_secs_f64();
    let pod_ratio = one_p99.as_secs_f64() / percentile(&d.as_pods, 99.0).as_secs_f64();
    let pod_burst_ratio = percentile(&d.burst, 99.0).as_secs_f64()
        / percentile(&d.as_pods_at_once, 99.0).as_secs_f64();
    let mut table = Table::new(&["measurement", "result"]);
    table.row(vec![
        format!("bare `docker run -d` of busybox, {pods} one after another, p50 / p99"),
        p50_p99(&d.bare),
    ]);
    table.row(vec![
        format!("bare `docker run -d` of busybox, {pods} at once, p50 / p99 (all running after)"),
        format!("{} ({})", p50_p99(&d.bare_at_once), ms(d.bare_at_once_total)),
    ]);
    table.row(vec![
        format!("Docker alone doing a pod's work (pause with no network + busybox joining it), {pods} one after another, p50 / p99"),
        p50_p99(&d.as_pods),
    ]);
    table.row(vec![
        format!("the same, {pods} at once, p50 / p99 (all running after)"),
        format!("{} ({})", p50_p99(&d.as_pods_at_once), ms(d.as_pods_at_once_total)),
    ]);
    table.row(vec![
        format!("pod create to Running, {pods} one at a time, p50 / p99"),
        p50_p99(&d.one_by_one),
    ]);
    table.row(vec![
        format!("pod create to Running, {pods} at once, p50 / p99 (all running after)"),
        format!("{} ({})", p50_p99(&d.burst), ms(d.burst_total)),
    ]);
    table.row(vec![
        format!("{pods} pods deleted (no grace period): the API's answer to none of their containers left in Docker"),
        ms(d.teardown),
    ]);
    table.row(vec!["kubelet CPU per pod in the burst".into(), ms(d.kubelet_cpu_per_pod)]);
    table.row(vec![
        format!("kubelet RSS: no pods -> {pods} pods running"),
        format!(
            "{} -> {} ({:.0} KiB per pod)",
            mib(d.rss_idle_kib),
            mib(d.rss_pods_kib),
            d.rss_pods_kib.saturating_sub(d.rss_idle_kib) as f64 / pods as f64
        ),
    ]);
    if let Some((small, large, rss_small, rss_large, ready_small, ready_large)) = simulated {
        let per_node_kib = (rss_large.saturating_sub(rss_small)) as f64 / (large - small) as f64;
        let nodes_per_gib = (1024.0 * 1024.0 / per_node_kib).floor();
        table.row(vec![
            format!("simulated nodes in one process: {small} -> {large}"),
            format!(
                "{} -> {} ({:.0} KiB per node; Ready after {:.1} s / {:.1} s)",
                mib(rss_small),
                mib(rss_large),
                per_node_kib,
                ready_small.as_secs_f64(),
                ready_large.as_secs_f64()
            ),
        ]);
        table.row(vec!["simulated nodes per GiB".into(), format!("{nodes_per_gib:.0}")]);
    }
    let met = |ok: bool| if ok { "met" } else { "NOT met" };
    let markdown = format!(
        "## Kubelet (`kubelet-bench`)\n\n{}\n\n\
         `rkube kubelet` as a process of its own on Docker {docker}, against a fresh `rkube \
         server`; the image is present. Bare Docker: the `docker` CLI's `run -d` (start to exit), one after another and all at once (a process each). \
         Pods: one busybox container each (`sleep 3600`), created with kube-rs; latency from the \
         start of the create to a watch seeing the pod Running, which takes the scheduler's \
         binding, the kubelet's sandbox (pause container with no Docker network, then the \
         kubelet's veth pair on the node's bridge) and app container, and its status update. \
         The burst starts once the kubelet has removed the containers of the one-at-a-time \
         pods, as every Docker-only phase starts with Docker idle. RSS is read once the process is idle. Simulated nodes: `rkube kubelet --runtime \
         simulated --nodes N`, every node registered, Ready and heartbeating (lease and status \
         every 10 s), no pods; memory per node is the difference between the two runs.\n\n\
         Targets:\n\n\
         - pod startup p99 under 1.5 s: {} one at a time ({}), {} in the burst ({})\n\
         - within 1.5x of bare Docker: {ratio:.2}x one at a time ({}), {burst_ratio:.2}x at once ({})\n\n\
         Against Docker alone doing a pod's work (two containers, the first with no network, \
         as the kubelet's sandbox before it gets its eth0), the kubelet's p99 is {pod_ratio:.2}x one at a time and {pod_burst_ratio:.2}x at once \
         (issue 15's targets: within 1.2x one at a time ({}), at most 1.3x at once ({})).\n\n{}",
        table.markdown(),
        ms(one_p99),
        met(one_p99 < Duration::from_millis(1500)),
        ms(percentile(&d.burst, 99.0)),
        met(percentile(&d.burst, 99.0) < Duration::from_millis(1500)),
        met(ratio <= 1.5),
        met(burst_ratio <= 1.5),
        met(pod_ratio <= 1.2),
        met(pod_burst_ratio <= 1.3),
        report::machine(),
        docker = docker_version(),
    );
    println!("{markdown}");
    if let Some(output) = options.output {
        report::write_section(&output, "kubelet-bench", &markdown)
            .with_context(|| format!("writing {output}"))?;
        eprintln!("wrote {output}");
    }
    Ok(())
}

fn docker_version() -> String {
    Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Options>> {
        Options::parse(args.iter().map(|a| a.to_string()))
    }

    #[test]
    fn help_prints_the_usage_instead_of_running() {
        assert!(parse(&["--help"]).unwrap().is_none());
        assert!(parse(&["--pods", "3", "-h"]).unwrap().is_none());
    }

    #[test]
    fn only_a_full_run_writes_its_figures() {
        let full = parse(&[]).unwrap().unwrap();
        assert_eq!(full.pods, 100);
        assert_eq!(full.simulated, Some((100, 500)));
        assert!(full.output.is_some());
        let small = parse(&["--pods", "10", "--docker-only"]).unwrap().unwrap();
        assert_eq!((small.pods, small.simulated, small.output), (10, None, None));
        let quick = parse(&["--quick", "--output", "x.md"]).unwrap().unwrap();
        assert_eq!((quick.pods, quick.simulated, quick.output), (20, Some((20, 50)), None));
    }

    #[test]
    fn bad_arguments_are_refused_with_the_usage() {
        let unknown = parse(&["--fast"]).err().unwrap().to_string();
        assert!(unknown.contains("--fast") && unknown.contains("Usage:"), "{unknown}");
        assert!(parse(&["--pods", "many"]).is_err());
        assert!(parse(&["--pods", "0"]).is_err());
        assert!(parse(&["--pods"]).is_err());
    }
}
