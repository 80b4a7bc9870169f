//! Service proxy benchmark: full syncs of kube-proxy's iptables rules for 1,000 and 10,000
//! Services with 10 endpoints each, written into this machine's iptables under a chain
//! prefix of the benchmark's own (removed afterwards), and in the same run the time of
//! `iptables-restore` alone on the same input (the anchor). Nothing is sent anywhere: the
//! cluster IPs and endpoints are never connected to.
//!
//! target/release/proxy-bench [--quick] [--output FILE]

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::node::{metric_sample, proxy_metrics};
use rkube_conformance::report::{self, Table};
use rkube_proxy::iptables::{self, Writer};
use rkube_proxy::model;
use rkube_proxy::rules::{self, RuleConfig};
use rkube_proxy::ruleset::{RuleSet, ServiceKey};

/// `count` Services (one TCP port each, cluster IPs in 10.96.0.0/12) with one EndpointSlice
/// of `endpoints` ready endpoints each.
fn objects(count: usize, endpoints: usize) -> (Vec<Arc<Service>>, Vec<Arc<EndpointSlice>>) {
    let mut services = Vec::with_capacity(count);
    let mut slices = Vec::with_capacity(count);
    for i in 0..count {
        let name = format!("svc-{i}");
        let ip = format!("10.{}.{}.{}", 96 + i / 65536, (i / 256) % 256, i % 256);
        let service: Service = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "bench"},
            "spec": {"clusterIP": ip, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
        }))
        .expect("service");
        let addresses: Vec<serde_json::Value> = (0..endpoints)
            .map(|e| {
                let n = i * endpoints + e;
                serde_json::json!({
                    "addresses": [format!("10.{}.{}.{}", 128 + n / 65536, (n / 256) % 256, n % 256)],
                    "conditions": {"ready": true},
                    "nodeName": "bench",
                })
            })
            .collect();
        let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("{name}-1"), "namespace": "bench",
                         "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": addresses,
        }))
        .expect("slice");
        services.push(Arc::new(service));
        slices.push(Arc::new(slice));
    }
    (services, slices)
}

/// The median; zero for no samples (not measured).
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

struct Figures {
    services: usize,
    rules: usize,
    restore_mib: f64,
    first: Duration,
    full: Duration,
    build: Duration,
    restore_alone: Duration,
    /// Sorted: one endpoint of one Service replaced, then a partial sync.
    partials: Vec<Duration>,
    /// `iptables-restore` alone rewriting one chain on the same tables (median).
    one_chain: Duration,
}

fn key(service: &Service) -> ServiceKey {
    let namespace = service.metadata.namespace.clone().unwrap_or_default();
    (namespace, service.metadata.name.clone().unwrap_or_default())
}

/// Every Service's rules, rendered afresh (as a restarted proxy does).
fn build(config: &RuleConfig, svcs: &[Arc<Service>], slices: &[Arc<EndpointSlice>]) -> RuleSet {
    let mut set = RuleSet::new(config.clone());
    for (service, slice) in svcs.iter().zip(slices) {
        set.update(key(service), model::service_ports(service, &[slice], "bench"));
    }
    set
}

fn bench(config: &RuleConfig, services: usize, runs: usize, partials: usize) -> Result<Figures> {
    let (svcs, mut slices) = objects(services, 10);
    let mut writer = Writer::new(config.clone());
    let sync = |writer: &mut Writer| -> Result<(Duration, Duration, usize, usize)> {
        let started = Instant::now();
        let tables = build(config, &svcs, &slices).full();
        let built = started.elapsed();
        let stats = writer.sync(&tables, false)?;
        Ok((started.elapsed(), built, stats.rules, stats.restore_bytes))
    };
    let (first, _, rules, bytes) = sync(&mut writer)?;
    let mut fulls = Vec::new();
    let mut builds = Vec::new();
    for _ in 0..runs {
        let (full, build, _, _) = sync(&mut writer)?;
        fulls.push(full);
        builds.push(build);
    }
    // Partial syncs, as the proxy makes them: one endpoint of one Service replaced.
    let mut set = build(config, &svcs, &slices);
    // What it holds is in the tables (the full syncs above wrote it).
    set.synced();
    let mut times = Vec::with_capacity(partials);
    for i in 0..partials {
        let which = (i * 7919) % services;
        let mut slice = (*slices[which]).clone();
        let address = format!("10.{}.{}.{}", 250 + i / 65536, (i / 256) % 256, i % 256);
        slice.endpoints[0].addresses = vec![address];
        slices[which] = Arc::new(slice);
        let started = Instant::now();
        set.update(
            key(&svcs[which]),
            model::service_ports(&svcs[which], &[&slices[which]], "bench"),
        );
        let partial = set.partial();
        writer.sync_partial(&partial.tables, &partial.deleted, false)?;
        set.synced();
        times.push(started.elapsed());
    }
    times.sort();
    // The partial syncs' floor: iptables-restore alone rewriting one Service's chain (its
    // SVC chain, as it is) on the same tables.
    let all = set.full();
    let one = all.nat.iter().find(|(chain, _)| chain.contains("-SVC-")).expect("a SVC chain");
    let mut small = format!("*nat\n:{} - [0:0]\n", one.0);
    for rule in &one.1 {
        small.push_str(&format!("-A {} {rule}\n", one.0));
    }
    small.push_str("COMMIT\n");
    let mut small_times = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        restore(&small)?;
        small_times.push(started.elapsed());
    }
    // The anchor: the same input, straight to iptables-restore.
    let input = build(config, &svcs, &slices).full().restore_input(&Default::default());
    let mut alone = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        restore(&input)?;
        alone.push(started.elapsed());
    }
    Ok(Figures {
        services,
        rules,
        restore_mib: bytes as f64 / (1024.0 * 1024.0),
        first,
        full: median(fulls),
        build: median(builds),
        restore_alone: median(alone),
        partials: times,
        one_chain: median(small_times),
    })
}

/// TCP connects from the node to a pod, through its Service's cluster IP and straight to
/// its pod IP, alternating, `count` of each (each connect is closed at once): a real node
/// (`rkube server` with its kubelet on Docker and its proxy) running one busybox httpd pod.
fn connect_latency(count: usize) -> Result<(Vec<Duration>, Vec<Duration>)> {
    use rkube_conformance::node::{assert_route_is_local, NodeServer};
    let node = NodeServer::start_with_proxy(&[]);
    let server = &node.server;
    server.ok_stdin(
        &["apply", "-f", "-"],
        r#"
apiVersion: v1
kind: Pod
metadata: {name: target, labels: {app: target}}
spec:
  containers:
  - {name: httpd, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["httpd", "-f", "-p", "8080", "-h", "/var/www"]}
---
apiVersion: v1
kind: Service
metadata: {name: target}
spec:
  selector: {app: target}
  ports: [{port: 80, targetPort: 8080}]
"#,
    );
    let pod_ip = node.wait_for(
        &["get", "endpoints", "target", "-o", "jsonpath={.subsets[0].addresses[0].ip}"],
        Duration::from_secs(90),
        |ip| !ip.is_empty(),
    );
    let cluster_ip = server.ok(&["get", "svc", "target", "-o", "jsonpath={.spec.clusterIP}"]);
    assert_route_is_local(&pod_ip);
    assert_route_is_local(&cluster_ip);
    let direct: std::net::SocketAddr = format!("{pod_ip}:8080").parse()?;
    let through: std::net::SocketAddr = format!("{cluster_ip}:80").parse()?;
    let connect = |addr: &std::net::SocketAddr| -> Result<Duration> {
        let started = Instant::now();
        let stream = std::net::TcpStream::connect_timeout(addr, Duration::from_secs(5))?;
        let took = started.elapsed();
        drop(stream);
        Ok(took)
    };
    // Until the rules are in place.
    let deadline = Instant::now() + Duration::from_secs(30);
    while connect(&through).is_err() {
        anyhow::ensure!(Instant::now() < deadline, "{through} never answered");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (mut pod, mut service) = (Vec::with_capacity(count), Vec::with_capacity(count));
    for i in 0..count {
        // Which goes first alternates: the first connect after a pause is the slower one.
        if i % 2 == 0 {
            pod.push(connect(&direct)?);
            service.push(connect(&through)?);
        } else {
            service.push(connect(&through)?);
            pod.push(connect(&direct)?);
        }
        // Paced: busybox httpd forks per connection, and a full accept queue would drop
        // SYNs (a 1 s retransmit measured as connect time).
        std::thread::sleep(Duration::from_millis(2));
    }
    pod.sort();
    service.sort();
    Ok((pod, service))
}

/// One `iptables-restore --noflush --counters` of `input`.
fn restore(input: &str) -> Result<()> {
    let mut child = std::process::Command::new("iptables-restore")
        .args(["-w", "5", "--noflush", "--counters"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .context("iptables-restore")?;
    use std::io::Write;
    child.stdin.take().expect("stdin").write_all(input.as_bytes())?;
    anyhow::ensure!(child.wait()?.success(), "iptables-restore failed");
    Ok(())
}

/// Network programming latency: `rkube proxy` against a real API server holding `services`
/// Services (10 endpoints each); `changes` times one endpoint of one Service is replaced
/// through the API and the time until the Service's chain sends to the new endpoint is taken
/// (polling `iptables -S` of that one chain every 5 ms). Changes are 1.2 s apart, more than
/// the proxy's default `--iptables-min-sync-period` of 1 s. Also returns the proxy's own
/// `kubeproxy_network_programming_duration_seconds` lines.
async fn programming_latency(
    services: usize,
    changes: usize,
    prefix: &str,
    min_sync_period: &str,
) -> Result<(Vec<Duration>, String)> {
    use kube::api::{Api, PostParams};
    let server = RkubeServer::start_with(&[
        "--disable",
        "kubelet,scheduler,controllers,proxy",
        "--service-cluster-ip-range",
        SERVICE_CIDR,
    ]);
    let client = server.kube_client().await?;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": "bench"}}))?,
        )
        .await?;
    let (svcs, slices) = objects(services, 10);
    let service_api: Api<Service> = Api::namespaced(client.clone(), "bench");
    let slice_api: Api<EndpointSlice> = Api::namespaced(client.clone(), "bench");
    use futures_util::StreamExt;
    let created: Vec<Result<Service>> = futures_util::stream::iter(svcs.iter().zip(&slices))
        .map(|(service, slice)| {
            let (service_api, slice_api) = (service_api.clone(), slice_api.clone());
            async move {
                let mut service = (**service).clone();
                // The API server gives the cluster IPs.
                service.spec.as_mut().expect("spec").cluster_ip = None;
                let made = service_api.create(&PostParams::default(), &service).await?;
                let mut slice = (**slice).clone();
                let labels = slice.metadata.labels.get_or_insert_with(Default::default);
                labels
                    .insert("endpointslice.kubernetes.io/managed-by".into(), "proxy-bench".into());
                slice_api.create(&PostParams::default(), &slice).await?;
                Ok(made)
            }
        })
        .buffered(16)
        .collect()
        .await;
    let made: Vec<Service> = created.into_iter().collect::<Result<_>>()?;
    let metrics_port = rkube_store::testing::free_port();
    let mut proxy = std::process::Command::new(rkube_conformance::cluster::rkube_binary())
        .args(["proxy", "--kubeconfig"])
        .arg(&server.kubeconfig)
        .args(["--hostname-override", "bench", "--iptables-chain-prefix", prefix])
        .args(["--service-cluster-ip-range", SERVICE_CIDR, "--cluster-cidr", "10.42.0.0/16"])
        .arg(format!("--metrics-bind-address=127.0.0.1:{metrics_port}"))
        .arg(format!("--iptables-min-sync-period={min_sync_period}"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("rkube proxy")?;
    let result = async {
        // The first (full) sync.
        let deadline = Instant::now() + Duration::from_secs(600);
        while !metric_sample(
            &proxy_metrics(metrics_port),
            "kubeproxy_sync_full_proxy_rules_duration_seconds_count",
        )
        .is_some_and(|n| n >= 1.0)
        {
            anyhow::ensure!(Instant::now() < deadline, "no full sync in 600 s");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let config = RuleConfig::new(prefix, None)?;
        let mut latencies = Vec::with_capacity(changes);
        for i in 0..changes {
            let which = (i * 7919) % services;
            let name = format!("svc-{which}-1");
            let mut slice = slice_api.get(&name).await?;
            let address = format!("10.{}.{}.{}", 250 + i / 65536, (i / 256) % 256, i % 256);
            slice.endpoints[0].addresses = vec![address.clone()];
            let now = k8s_openapi::jiff::Timestamp::now().to_string();
            slice
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert("endpoints.kubernetes.io/last-change-trigger-time".into(), now);
            let ports = model::service_ports(&made[which], &[&slice], "bench");
            let chain = rules::service_chain(&config, &ports[0]);
            let started = Instant::now();
            slice_api.replace(&name, &PostParams::default(), &slice).await?;
            let wanted = format!("-> {address}:8080");
            loop {
                let out = std::process::Command::new("iptables")
                    .args(["-w", "-t", "nat", "-S", &chain])
                    .output()?;
                if String::from_utf8_lossy(&out.stdout).contains(&wanted) {
                    break;
                }
                anyhow::ensure!(
                    started.elapsed() < Duration::from_secs(30),
                    "{chain} never sent to {address}"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            latencies.push(started.elapsed());
            tokio::time::sleep(Duration::from_millis(1200).saturating_sub(started.elapsed())).await;
        }
        latencies.sort();
        let own = proxy_metrics(metrics_port)
            .lines()
            .filter(|l| l.starts_with("kubeproxy_network_programming_duration_seconds_"))
            .filter(|l| {
                !l.contains("_bucket")
                    || ["le=\"0.25\"", "le=\"0.5\"", "le=\"1\"", "+Inf"]
                        .iter()
                        .any(|b| l.contains(b))
            })
            .collect::<Vec<_>>()
            .join("\n");
        Ok((latencies, own))
    }
    .await;
    let _ = proxy.kill();
    let _ = proxy.wait();
    let cleanup = std::process::Command::new(rkube_conformance::cluster::rkube_binary())
        .args(["proxy", "--cleanup", "--iptables-chain-prefix", prefix])
        .args(["--service-cluster-ip-range", SERVICE_CIDR])
        .output()?;
    anyhow::ensure!(cleanup.status.success(), "rkube proxy --cleanup failed");
    result
}

/// The service CIDR of the latency run's API server and proxy: routed to the proxy's own
/// dummy device while it runs.
const SERVICE_CIDR: &str = "10.249.0.0/16";

/// Service proxy benchmark: full syncs of the proxy's iptables rules against
/// `iptables-restore` alone on the same input.
#[derive(clap::Parser)]
#[command(name = "proxy-bench")]
struct Cli {
    #[command(flatten)]
    common: report::Args,
    /// The numbers of Services (10 endpoints each) to sync, comma-separated
    #[arg(long, value_delimiter = ',', default_values_t = [1000, 10_000])]
    services: Vec<usize>,
    /// Partial syncs after one endpoint change, at each size
    #[arg(long, default_value_t = 200)]
    partials: usize,
    /// Services in the network-programming-latency run (0: no such run)
    #[arg(long, default_value_t = 1000)]
    latency_services: usize,
    /// EndpointSlice changes timed in that run
    #[arg(long, default_value_t = 60)]
    latency_changes: usize,
    /// The proxy's `--iptables-min-sync-period` in that run (upstream's default: 1s)
    #[arg(long, default_value = "1s")]
    latency_min_sync_period: String,
    /// Full syncs (and `iptables-restore` alone) timed after the first, at each size (default
    /// 3, 1 above 2,000 Services; 0: only the first sync, then the partial syncs)
    #[arg(long)]
    full_runs: Option<usize>,
    /// TCP connects (each way) through a cluster IP and straight to the pod (0: none)
    #[arg(long, default_value_t = 2000)]
    connects: usize,
}

fn main() -> Result<()> {
    let cli = <Cli as clap::Parser>::parse();
    let report::Args { quick, output } = cli.common;
    let prefix = format!("RKB{:04}", std::process::id() % 10_000);
    let config = RuleConfig::new(&prefix, Some("10.42.0.0/16".parse()?))?;
    let sizes: &[usize] = if quick { &[100, 1000] } else { &cli.services };
    let partials = if quick { 20 } else { cli.partials };
    let mut results = Vec::new();
    for &n in sizes {
        // A full sync at 10,000 Services takes minutes with iptables-nft: fewer runs.
        let runs = match cli.full_runs {
            Some(runs) => runs,
            None if quick || n > 2000 => 1,
            None => 3,
        };
        eprintln!("{n} Services x 10 endpoints (chains {prefix}-*)");
        let result = bench(&config, n, runs, partials);
        let removed = iptables::cleanup(&config)?;
        eprintln!("  removed {} chains and jumps", removed.len());
        let f = result?;
        eprintln!(
            "  {} rules, first sync {}, full sync {} (building {}), iptables-restore alone {}",
            f.rules,
            report::ms(f.first),
            report::ms(f.full),
            report::ms(f.build),
            report::ms(f.restore_alone)
        );
        eprintln!(
            "  partial sync after one endpoint change: p50 {}, p99 {}, max {}",
            report::ms(report::percentile(&f.partials, 50.0)),
            report::ms(report::percentile(&f.partials, 99.0)),
            report::ms(*f.partials.last().unwrap_or(&Duration::ZERO)),
        );
        eprintln!("  iptables-restore of one chain alone: {}", report::ms(f.one_chain));
        results.push(f);
    }
    let latency = match (quick, cli.latency_services) {
        (true, _) | (_, 0) => None,
        (false, n) => {
            eprintln!(
                "network programming latency: {n} Services through the API and `rkube proxy`"
            );
            let runtime = tokio::runtime::Runtime::new()?;
            let (times, own) = runtime.block_on(programming_latency(
                n,
                cli.latency_changes,
                &prefix,
                &cli.latency_min_sync_period,
            ))?;
            eprintln!(
                "  p50 {}, p99 {}, max {}",
                report::ms(report::percentile(&times, 50.0)),
                report::ms(report::percentile(&times, 99.0)),
                report::ms(*times.last().unwrap_or(&Duration::ZERO))
            );
            Some((n, times, own))
        }
    };
    let connects = match (quick, cli.connects) {
        (true, _) | (_, 0) => None,
        (false, n) => {
            eprintln!("TCP connects: {n} through a cluster IP, {n} straight to the pod");
            let (pod, service) = connect_latency(n)?;
            let (p, s) = (report::percentile(&pod, 50.0), report::percentile(&service, 50.0));
            eprintln!(
                "  pod IP p50 {} p99 {}; cluster IP p50 {} p99 {}; {:.2}x",
                report::ms(p),
                report::ms(report::percentile(&pod, 99.0)),
                report::ms(s),
                report::ms(report::percentile(&service, 99.0)),
                s.as_secs_f64() / p.as_secs_f64()
            );
            Some((n, pod, service))
        }
    };
    let connect_text = match &connects {
        None => String::new(),
        Some((n, pod, service)) => {
            let (p, s) = (report::percentile(pod, 50.0), report::percentile(service, 50.0));
            format!(
                "\n**TCP connect through a cluster IP** (from the node, {n} connects each way, alternating, to one busybox httpd pod on a real node): straight to the pod IP p50 {} / p99 {}, through the cluster IP p50 {} / p99 {}: {:.2}x at the median (target at most 1.1x).\n",
                report::ms(p),
                report::ms(report::percentile(pod, 99.0)),
                report::ms(s),
                report::ms(report::percentile(service, 99.0)),
                s.as_secs_f64() / p.as_secs_f64()
            )
        }
    };
    let mut table = Table::new(&[
        "Services x endpoints",
        "rules",
        "restore input",
        "first sync",
        "full sync (of it: building the rules)",
        "iptables-restore alone",
        "full sync / restore alone",
        "partial sync p50 / p99",
        "iptables-restore of one chain alone",
    ]);
    for f in &results {
        table.row(vec![
            format!("{} x 10", f.services),
            f.rules.to_string(),
            format!("{:.1} MiB", f.restore_mib),
            report::ms(f.first),
            match f.full.is_zero() {
                true => "not measured".to_string(),
                false => format!("{} ({})", report::ms(f.full), report::ms(f.build)),
            },
            match f.restore_alone.is_zero() {
                true => "not measured".to_string(),
                false => report::ms(f.restore_alone),
            },
            match f.restore_alone.is_zero() {
                true => "-".to_string(),
                false => format!("{:.2}x", f.full.as_secs_f64() / f.restore_alone.as_secs_f64()),
            },
            format!(
                "{} / {}",
                report::ms(report::percentile(&f.partials, 50.0)),
                report::ms(report::percentile(&f.partials, 99.0))
            ),
            report::ms(f.one_chain),
        ]);
    }
    let latency_text = match &latency {
        None => String::new(),
        Some((n, times, own)) => format!(
            "\n**Network programming latency** ({n} Services x 10 endpoints, `--iptables-min-sync-period {}`, {} EndpointSlice changes through the API server, 1.2 s apart, each timed from the write to the new endpoint in the Service's chain): p50 {}, p99 {}, max {}. The proxy's own histogram (from the slices' `last-change-trigger-time`, which has one-second precision):\n\n```\n{own}\n```\n",
            cli.latency_min_sync_period,
            times.len(),
            report::ms(report::percentile(times, 50.0)),
            report::ms(report::percentile(times, 99.0)),
            report::ms(*times.last().unwrap_or(&Duration::ZERO)),
        ),
    };
    let markdown = format!(
        "## Service proxy (`proxy-bench`)\n\n{}\n{latency_text}{connect_text}\nFull syncs of the proxy's iptables rules (`rkube_proxy`: Services and EndpointSlices read into ports, rules rendered, one `iptables-restore --noflush --counters`), written into this machine's tables ({}) under a chain prefix of the benchmark's own and removed afterwards; median of 3 runs (1 above 2,000 Services) after a first sync that made the chains. The anchor is `iptables-restore` alone on the same input in the same run. A partial sync replaces one endpoint of one Service and writes what changed ({partials} of them, one after another). Targets: full sync at most 1.2x of `iptables-restore` alone and under 1.5 s at 10,000 Services; partial sync p99 under 50 ms at 10,000; network programming p99 under 200 ms at 1,000.\n\n{}\n",
        table.markdown(),
        iptables_version(),
        report::machine()
    );
    println!("{markdown}");
    if !quick {
        report::write_section(&output, "proxy-bench", &markdown)?;
        eprintln!("wrote {output}");
    }
    Ok(())
}

fn iptables_version() -> String {
    std::process::Command::new("iptables")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|_| "iptables".into())
}
