//! Admission benchmark: what the default admission chain costs a Pod create, and whether a
//! ResourceQuota holds under concurrent creators.
//!
//! ```text
//! cargo build --release -p rkube -p rkube-conformance
//! target/release/admission-bench [--quick] [--output FILE]
//! ```
//!
//! - Pod creates (one busybox container, no resources stated) from 64 kube-rs tasks against
//!   two API servers (`--disable scheduler,controllers`) in alternating turns: one with
//!   every default admission plugin and, in the namespace, a LimitRange (container defaults,
//!   min and max) and a ResourceQuota (pods, requests.cpu, limits.memory, configmaps) that
//!   admission charges; the other with `--disable-admission-plugins` naming every default
//!   plugin. The quota's status is set by this program (the controllers are off). To show
//!   where the cost goes, each turn also creates pods in a second namespace of the first
//!   server that has the LimitRange but no quota, and, to separate what the plugins cost
//!   from what the larger admitted pod costs every later step, the chain-off server is also
//!   given the pod as the chain admitted it (service-account volume, the LimitRange's
//!   resources, tolerations, priority). Each run reports the server's CPU time per create.
//! - Quota races: 64 tasks each create one pod at once in a namespace whose quota allows
//!   10, ten times (the whole `rkube server`, controllers on): over-admissions counted.
//!
//! Writes the `admission-bench` section of docs/benchmarks.md (or `--output`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use k8s_openapi::api::core::v1::{Namespace, Pod, ResourceQuota, ServiceAccount};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::Client;
use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::report::{self, Table};
use serde_json::json;

const CONCURRENCY: usize = 64;
const TURNS: usize = 4;
const RACE_RUNS: usize = 10;
const RACE_LIMIT: usize = 10;

/// One timed phase: creates per second, sorted latencies, and the server's CPU time.
struct Run {
    latencies: Vec<Duration>,
    elapsed: Duration,
    server_cpu: Duration,
}

impl Run {
    fn rate(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }
    /// The server's CPU time per create.
    fn cpu_per_create(&self) -> Duration {
        self.server_cpu / self.latencies.len().max(1) as u32
    }
    fn cell(&self) -> String {
        format!(
            "{:.0}/s, p50 {}, p99 {}; server CPU {} µs per create",
            self.rate(),
            report::ms(report::percentile(&self.latencies, 50.0)),
            report::ms(report::percentile(&self.latencies, 99.0)),
            self.cpu_per_create().as_micros()
        )
    }
}

fn pod(name: String) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}]}
    }))
    .expect("a pod")
}

/// `admitted` (a pod as the chain stored it) as a client would send it: its spec, nothing the
/// server set in its metadata or status.
fn as_sent(admitted: Pod) -> Pod {
    Pod { spec: admitted.spec, ..Default::default() }
}

/// `template` named `name`.
fn named(template: &Pod, name: String) -> Pod {
    let mut pod = template.clone();
    pod.metadata.name = Some(name);
    pod
}

/// Pod creates into `ns` on the server `server` from [`CONCURRENCY`] tasks for `duration`;
/// any error ends it.
async fn creates(
    server: &RkubeServer,
    client: &Client,
    ns: &str,
    prefix: &str,
    duration: Duration,
    template: &Pod,
) -> Result<Run> {
    let template = Arc::new(template.clone());
    let pid = server.pid().to_string();
    let cpu_before = report::cpu_time(&pid)?;
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let end = started + duration;
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (api, next, prefix) = (api.clone(), next.clone(), prefix.to_string());
            let template = template.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < end {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let t = Instant::now();
                    api.create(
                        &PostParams::default(),
                        &named(&template, format!("{prefix}-{i:07}")),
                    )
                    .await?;
                    latencies.push(t.elapsed());
                }
                anyhow::Ok(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await??);
    }
    let elapsed = started.elapsed();
    let server_cpu = report::cpu_time(&pid)?.saturating_sub(cpu_before);
    latencies.sort();
    Ok(Run { latencies, elapsed, server_cpu })
}

async fn namespace(client: &Client, name: &str) -> Result<()> {
    let ns = Namespace {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await?;
    // The ServiceAccount plugin wants the `default` account (its controller is off here).
    let account = ServiceAccount {
        metadata: ObjectMeta { name: Some("default".into()), ..Default::default() },
        ..Default::default()
    };
    Api::<ServiceAccount>::namespaced(client.clone(), name)
        .create(&PostParams::default(), &account)
        .await?;
    Ok(())
}

/// The namespace's LimitRange and (with `quota`) ResourceQuota, the quota's status counted as
/// the controller would (nothing in it yet).
async fn policies(client: &Client, ns: &str, quota: bool) -> Result<()> {
    let limits = json!({
        "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"},
        "spec": {"limits": [{"type": "Container",
            "default": {"cpu": "100m", "memory": "64Mi"},
            "defaultRequest": {"cpu": "10m", "memory": "16Mi"},
            "min": {"cpu": "1m", "memory": "1Mi"},
            "max": {"cpu": "2", "memory": "1Gi"}}]}
    });
    let limit_ranges: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        ns,
        &kube::discovery::ApiResource::erase::<k8s_openapi::api::core::v1::LimitRange>(&()),
    );
    limit_ranges.create(&PostParams::default(), &serde_json::from_value(limits)?).await?;
    if !quota {
        return Ok(());
    }
    let hard = json!({"pods": "10000000", "requests.cpu": "100000", "limits.memory": "100000Gi", "configmaps": "100"});
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "quota"}, "spec": {"hard": hard}
    }))?;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), ns);
    let mut created = quotas.create(&PostParams::default(), &quota).await?;
    created.status = Some(serde_json::from_value(json!({
        "hard": hard,
        "used": {"pods": "0", "requests.cpu": "0", "limits.memory": "0", "configmaps": "0"}
    }))?);
    quotas.replace_status("quota", &PostParams::default(), &created).await?;
    Ok(())
}

/// `--disable-admission-plugins` of every plugin rkube runs by default.
fn every_default_plugin() -> String {
    let names = rkube_admission::chain::enabled(&[], &[]).expect("the defaults are known");
    format!("--disable-admission-plugins={}", names.join(","))
}

struct Figures {
    /// Per turn: (whole chain with quota and limits, chain off).
    turns: Vec<(Run, Run)>,
    /// Per turn: the whole chain with the LimitRange but no quota (same server as the first).
    unquoted: Vec<Run>,
    /// Per turn: the chain off, given the pod as the chain admitted it.
    off_admitted: Vec<Run>,
    /// The sizes in JSON of the pod as sent and as the chain admitted it (as sent).
    pod_sizes: (usize, usize),
    /// Per race run: pods admitted.
    races: Vec<usize>,
    plugins: Vec<&'static str>,
}

async fn bench(duration: Duration) -> Result<Figures> {
    eprintln!("starting two API servers (whole chain, chain off)");
    let on = tokio::task::spawn_blocking(|| {
        RkubeServer::start_with(&["--disable", "scheduler,controllers"])
    })
    .await?;
    let off = tokio::task::spawn_blocking(|| {
        RkubeServer::start_with(&["--disable", "scheduler,controllers", &every_default_plugin()])
    })
    .await?;
    let (on_client, off_client) = (on.kube_client().await?, off.kube_client().await?);
    let ns = "bench-admission";
    namespace(&on_client, ns).await?;
    namespace(&off_client, ns).await?;
    policies(&on_client, ns, true).await?;
    policies(&off_client, ns, true).await?;
    // Where the chain's cost goes: the same chain and LimitRange without a quota.
    let unquoted_ns = "bench-limits";
    namespace(&on_client, unquoted_ns).await?;
    policies(&on_client, unquoted_ns, false).await?;
    // Warm both (connections, caches), then the turns, alternating which goes first.
    let plain = pod(String::new());
    creates(&on, &on_client, ns, "warm", Duration::from_millis(500), &plain).await?;
    creates(&off, &off_client, ns, "warm", Duration::from_millis(500), &plain).await?;
    let admitted =
        as_sent(Api::<Pod>::namespaced(on_client.clone(), ns).get("warm-0000000").await?);
    let pod_sizes = (serde_json::to_vec(&plain)?.len(), serde_json::to_vec(&admitted)?.len());
    let mut turns = Vec::new();
    let mut unquoted = Vec::new();
    let mut off_admitted = Vec::new();
    for turn in 0..TURNS {
        let prefix = format!("limits{turn}");
        let limits_only = creates(&on, &on_client, unquoted_ns, &prefix, duration, &plain).await?;
        eprintln!("  turn {turn}: chain without quota {}", limits_only.cell());
        unquoted.push(limits_only);
        let prefix = format!("admitted{turn}");
        let big = creates(&off, &off_client, ns, &prefix, duration, &admitted).await?;
        eprintln!("  turn {turn}: chain off, admitted pod {}", big.cell());
        off_admitted.push(big);
        let (a, b) = (format!("on{turn}"), format!("off{turn}"));
        let pair = if matches!(turn % 4, 0 | 3) {
            let with = creates(&on, &on_client, ns, &a, duration, &plain).await?;
            (with, creates(&off, &off_client, ns, &b, duration, &plain).await?)
        } else {
            let without = creates(&off, &off_client, ns, &b, duration, &plain).await?;
            (creates(&on, &on_client, ns, &a, duration, &plain).await?, without)
        };
        eprintln!("  turn {turn}: chain {}; off {}", pair.0.cell(), pair.1.cell());
        turns.push(pair);
    }
    // The LimitRange's defaults were applied and the quota charged: check, so the figure is
    // of the work the issue names.
    let sample = Api::<Pod>::namespaced(on_client.clone(), ns).get("on0-0000000").await?;
    let limits = serde_json::to_value(&sample.spec.context("no spec")?.containers[0].resources)?;
    if limits["limits"]["memory"] != "64Mi" {
        bail!("the LimitRange's defaults were not applied: {limits}");
    }
    let used = Api::<ResourceQuota>::namespaced(on_client.clone(), ns).get("quota").await?;
    eprintln!("  quota used: {:?}", used.status.and_then(|s| s.used));
    drop((on, off));

    eprintln!("starting the whole rkube server (quota races)");
    let server = tokio::task::spawn_blocking(RkubeServer::start).await?;
    let client = server.kube_client().await?;
    let mut races = Vec::new();
    for run in 0..RACE_RUNS {
        let ns = format!("race-{run}");
        Api::<Namespace>::all(client.clone())
            .create(
                &PostParams::default(),
                &Namespace {
                    metadata: ObjectMeta { name: Some(ns.clone()), ..Default::default() },
                    ..Default::default()
                },
            )
            .await?;
        let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), &ns);
        let quota: ResourceQuota = serde_json::from_value(
            json!({"metadata": {"name": "pods"}, "spec": {"hard": {"pods": RACE_LIMIT.to_string()}}}),
        )?;
        quotas.create(&PostParams::default(), &quota).await?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while quotas.get("pods").await?.status.and_then(|s| s.used).is_none() {
            if Instant::now() > deadline {
                bail!("the quota in {ns} was not counted within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Each namespace waits for its default account, as a user's first pod would.
        let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &ns);
        while accounts.get_opt("default").await?.is_none() {
            if Instant::now() > deadline {
                bail!("no default ServiceAccount in {ns} within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let tasks: Vec<_> = (0..CONCURRENCY)
            .map(|i| {
                let pods = pods.clone();
                tokio::spawn(async move {
                    match pods.create(&PostParams::default(), &pod(format!("p{i}"))).await {
                        Ok(_) => Ok(true),
                        Err(kube::Error::Api(e)) if e.code == 403 => Ok(false),
                        Err(e) => Err(e),
                    }
                })
            })
            .collect();
        let mut admitted = 0;
        for t in tasks {
            admitted += usize::from(t.await??);
        }
        let stored = pods.list(&Default::default()).await?.items.len();
        if stored != admitted {
            bail!("{ns}: {admitted} creates answered 201 but {stored} pods are stored");
        }
        eprintln!("  race {run}: {admitted} of {CONCURRENCY} admitted (quota {RACE_LIMIT})");
        races.push(admitted);
    }
    let plugins = rkube_admission::chain::enabled(&[], &[]).expect("the defaults are known");
    Ok(Figures { turns, unquoted, off_admitted, pod_sizes, races, plugins })
}

fn render(f: &Figures, quick: bool) -> String {
    let mut table = Table::new(&[
        "turn",
        "whole chain, quota and LimitRange",
        "whole chain and LimitRange, no quota",
        "chain off",
        "chain off, the admitted pod",
        "chain / off",
    ]);
    let (mut with, mut unquoted, mut without, mut big) = (0.0, 0.0, 0.0, 0.0);
    let per_turn = |run: &Run| run.cpu_per_create() / f.turns.len() as u32;
    let (mut with_cpu, mut unquoted_cpu, mut without_cpu, mut big_cpu) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for (i, (((a, b), u), g)) in f.turns.iter().zip(&f.unquoted).zip(&f.off_admitted).enumerate() {
        with += a.rate();
        unquoted += u.rate();
        without += b.rate();
        big += g.rate();
        with_cpu += per_turn(a);
        unquoted_cpu += per_turn(u);
        without_cpu += per_turn(b);
        big_cpu += per_turn(g);
        table.row(vec![
            format!("{}", i + 1),
            a.cell(),
            u.cell(),
            b.cell(),
            g.cell(),
            format!(
                "{:.2}x the rate ({:.2}x without quota; {:.2}x against the admitted pod)",
                a.rate() / b.rate(),
                u.rate() / b.rate(),
                a.rate() / g.rate()
            ),
        ]);
    }
    let slower = (1.0 - with / without) * 100.0;
    let unquoted_slower = (1.0 - unquoted / without) * 100.0;
    let fair_slower = (1.0 - with / big) * 100.0;
    let fair_unquoted_slower = (1.0 - unquoted / big) * 100.0;
    let word = |p: f64| if p >= 0.0 { "slower" } else { "faster" };
    let over: usize = f.races.iter().map(|a| a.saturating_sub(RACE_LIMIT)).sum();
    let under = f.races.iter().filter(|a| **a < RACE_LIMIT).count();
    format!(
        "## Admission (`admission-bench`)\n\n{}{}\n\nPod creates (one busybox container, no \
         resources stated), {CONCURRENCY} at a time with kube-rs, on two API servers \
         (`--disable scheduler,controllers`) in {TURNS} alternating turns: one with the whole \
         default chain ({}) and, in the namespace, a LimitRange whose defaults every pod gets \
         and a ResourceQuota that charges each create (and, to show where the cost goes, in a \
         second namespace of the same server the LimitRange alone); the other with every one \
         of those plugins disabled. Over all turns the chain made creates **{:.1}%** {} \
         (target: at most 10% slower), and {:.1}% {} without the quota; the server spent {} µs \
         of CPU per create with the chain, {} µs without the quota and {} µs with the chain \
         off.\n\nThe chain also makes the pod larger ({} bytes of JSON as sent, {} as admitted, \
         before the server's metadata), and every later step (managedFields, encoding, the \
         store) pays for that. Given the admitted pod, the chain-off server spent {} µs per \
         create; against it the whole chain with the quota was **{:.1}%** {}, and {:.1}% {} \
         without the quota: that is what the plugins themselves cost.\n\n{}\n\nQuota races: {CONCURRENCY} concurrent pod creates into a \
         namespace whose quota allows {RACE_LIMIT} pods, {} times on the whole server: \
         **{over} over-admissions** (admitted per run: {}){}.\n",
        report::machine(),
        if quick { " (quick run)" } else { "" },
        f.plugins.join(", "),
        slower.abs(),
        word(slower),
        unquoted_slower.abs(),
        word(unquoted_slower),
        with_cpu.as_micros(),
        unquoted_cpu.as_micros(),
        without_cpu.as_micros(),
        f.pod_sizes.0,
        f.pod_sizes.1,
        big_cpu.as_micros(),
        fair_slower.abs(),
        word(fair_slower),
        fair_unquoted_slower.abs(),
        word(fair_unquoted_slower),
        table.markdown(),
        f.races.len(),
        f.races.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", "),
        if under > 0 {
            format!("; {under} runs admitted fewer than the limit")
        } else {
            String::new()
        },
    )
}

#[tokio::main]
async fn main() -> Result<()> {
    let report::Args { quick, output } = report::Args::parse();
    let duration = if quick { Duration::from_secs(1) } else { Duration::from_secs(5) };
    let figures = bench(duration).await?;
    let markdown = render(&figures, quick);
    report::publish(&output, "admission-bench", &markdown, quick)
}
