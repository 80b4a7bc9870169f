//! Cluster DNS benchmark: queries per second and latency for cluster names, answered by
//! rkube's DNS (the `rkube_proxy::dns` library, started in this process on a runtime of its
//! own, its zone fed by informers from a real `rkube server` holding N Services), and in the
//! same run by the anchor: Debian's `unbound` answering the same names from a local zone
//! (installed with apt-get when missing). One load generator for both: several UDP clients
//! on loopback, each keeping a few queries in flight. Nothing leaves the machine.
//!
//! cargo build --release -p rkube -p rkube-conformance && target/release/dns-bench

use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use hickory_proto::rr::RecordType;
use k8s_openapi::api::core::v1::{Namespace, Service};
use kube::api::{Api, PostParams};
use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::dns;
use rkube_conformance::report::{self, Table};
use rkube_proxy::dns::forward::Forwarder;

#[derive(clap::Parser)]
struct Cli {
    #[command(flatten)]
    common: report::Args,
    /// How many Services the cluster holds (each a name to ask for)
    #[arg(long, default_value_t = 1000)]
    services: usize,
    /// Concurrent UDP clients (threads of the load generator)
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Queries each client keeps in flight
    #[arg(long, default_value_t = 4)]
    window: usize,
    /// Seconds each server is measured (after one second of warm-up)
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Worker threads of the runtime serving rkube's DNS (the `rkube` binary has one per
    /// core)
    #[arg(long)]
    workers: Option<usize>,
}

/// What one server did under the generator.
struct Figures {
    queries: u64,
    qps: f64,
    p50: Duration,
    p99: Duration,
    p999: Duration,
    /// Answers that were not one record with NOERROR, and queries that got no answer.
    bad: u64,
    lost: u64,
}

fn service_name(i: usize) -> String {
    format!("svc-{i}.bench.svc.cluster.local")
}

/// Runs the load generator against `server` for `seconds` (after a second of warm-up):
/// `clients` threads, each with its own socket and `window` queries in flight, asking for
/// the `names` in turn.
fn load(server: SocketAddr, names: &[Vec<u8>], cli: &Cli) -> Result<Figures> {
    let stop = Arc::new(AtomicBool::new(false));
    let measuring = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for client in 0..cli.clients {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        socket.connect(server)?;
        socket.set_read_timeout(Some(Duration::from_millis(200)))?;
        let (stop, measuring) = (stop.clone(), measuring.clone());
        let names: Vec<Vec<u8>> = names.to_vec();
        let window = cli.window;
        threads.push(std::thread::spawn(move || -> std::io::Result<(Vec<u32>, u64, u64)> {
            let mut latencies: Vec<u32> = Vec::with_capacity(1 << 20);
            let (mut bad, mut lost) = (0u64, 0u64);
            // Slot s sends ids s, s + window, ...: the id tells which slot answered.
            let mut sent = vec![Instant::now(); window];
            let mut ids = vec![0u16; window];
            let mut next = client * 7919;
            let mut send = |slot: usize, id: u16, sent: &mut [Instant]| -> std::io::Result<()> {
                let mut q = names[next % names.len()].clone();
                next += 1;
                q[..2].copy_from_slice(&id.to_be_bytes());
                sent[slot] = Instant::now();
                socket.send(&q).map(|_| ())
            };
            let mut seq: u16 = 0;
            for (slot, id) in ids.iter_mut().enumerate() {
                *id = seq;
                send(slot, seq, &mut sent)?;
                seq = seq.wrapping_add(1);
            }
            let mut buffer = [0u8; 1500];
            while !stop.load(Ordering::Relaxed) {
                let n = match socket.recv(&mut buffer) {
                    Ok(n) => n,
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) =>
                    {
                        // Lost: ask again on every slot.
                        for (slot, id) in ids.iter_mut().enumerate() {
                            lost += 1;
                            *id = seq;
                            send(slot, seq, &mut sent)?;
                            seq = seq.wrapping_add(1);
                        }
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                if n < 12 {
                    continue;
                }
                let id = u16::from_be_bytes([buffer[0], buffer[1]]);
                let Some(slot) = ids.iter().position(|i| *i == id) else { continue };
                let took = sent[slot].elapsed();
                let rcode = buffer[3] & 0x0f;
                let answers = u16::from_be_bytes([buffer[6], buffer[7]]);
                if measuring.load(Ordering::Relaxed) {
                    if rcode != 0 || answers != 1 {
                        bad += 1;
                    }
                    latencies.push(took.as_micros().min(u32::MAX as u128) as u32);
                }
                ids[slot] = seq;
                send(slot, seq, &mut sent)?;
                seq = seq.wrapping_add(1);
            }
            Ok((latencies, bad, lost))
        }));
    }
    std::thread::sleep(Duration::from_secs(1));
    measuring.store(true, Ordering::SeqCst);
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(cli.seconds));
    measuring.store(false, Ordering::SeqCst);
    let elapsed = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let mut all: Vec<Duration> = Vec::new();
    let (mut bad, mut lost) = (0, 0);
    for thread in threads {
        let (latencies, b, l) =
            thread.join().map_err(|_| anyhow::anyhow!("a client panicked"))??;
        all.extend(latencies.into_iter().map(|us| Duration::from_micros(u64::from(us))));
        bad += b;
        lost += l;
    }
    all.sort();
    Ok(Figures {
        queries: all.len() as u64,
        qps: all.len() as f64 / elapsed.as_secs_f64(),
        p50: report::percentile(&all, 50.0),
        p99: report::percentile(&all, 99.0),
        p999: report::percentile(&all, 99.9),
        bad,
        lost,
    })
}

/// The cluster: `count` ClusterIP Services in namespace `bench`; returns their addresses.
async fn make_services(server: &RkubeServer, count: usize) -> Result<Vec<String>> {
    let client = server.kube_client().await?;
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "bench"}}))?;
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await?;
    let services = Api::<Service>::namespaced(client, "bench");
    let mut ips = Vec::with_capacity(count);
    for chunk in (0..count).collect::<Vec<_>>().chunks(50) {
        let created = futures_util::future::try_join_all(chunk.iter().map(|i| {
            let service: Service = serde_json::from_value(serde_json::json!({
                "metadata": {"name": format!("svc-{i}")},
                "spec": {"ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
            }))
            .expect("service");
            let services = services.clone();
            async move { services.create(&PostParams::default(), &service).await }
        }))
        .await?;
        for service in created {
            ips.push(service.spec.and_then(|s| s.cluster_ip).context("no cluster IP")?);
        }
    }
    Ok(ips)
}

/// Debian's unbound, installed when missing; returns its version line.
fn ensure_unbound() -> Result<String> {
    let version = || -> Option<String> {
        let out = Command::new("unbound").arg("-V").output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        // `Version 1.17.1` -> `unbound 1.17.1`.
        let line = text.lines().next()?;
        Some(line.replace("Version", "unbound"))
    };
    if let Some(v) = version() {
        return Ok(v);
    }
    eprintln!("installing unbound (apt-get)");
    let ok = Command::new("apt-get")
        .args(["install", "-y", "--no-install-recommends", "unbound"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdout(Stdio::null())
        .status()?
        .success();
    if !ok {
        bail!("apt-get install unbound failed");
    }
    version().context("unbound -V")
}

/// unbound on 127.0.0.1:`port` with the same names as a static local zone, as many threads
/// as rkube's DNS has workers.
fn start_unbound(
    dir: &std::path::Path,
    port: u16,
    ips: &[String],
    threads: usize,
) -> Result<std::process::Child> {
    let mut conf = format!(
        "server:\n  interface: 127.0.0.1\n  port: {port}\n  num-threads: {threads}\n  \
         do-daemonize: no\n  use-syslog: no\n  logfile: \"\"\n  chroot: \"\"\n  username: \"\"\n  \
         directory: \"{dir}\"\n  pidfile: \"\"\n  verbosity: 0\n  do-ip6: no\n  \
         access-control: 127.0.0.0/8 allow\n  module-config: \"iterator\"\n  \
         so-reuseport: yes\n  local-zone: \"cluster.local.\" static\n",
        dir = dir.display()
    );
    for (i, ip) in ips.iter().enumerate() {
        conf.push_str(&format!("  local-data: \"{}. 5 IN A {ip}\"\n", service_name(i)));
    }
    let path = dir.join("unbound.conf");
    std::fs::write(&path, conf)?;
    let check = Command::new("unbound-checkconf").arg(&path).output()?;
    if !check.status.success() {
        bail!("unbound-checkconf: {}", String::from_utf8_lossy(&check.stdout));
    }
    Ok(Command::new("unbound")
        .args(["-d", "-c"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?)
}

/// Waits until `server` answers the last name with its address.
fn wait_answering(server: SocketAddr, name: &str, ip: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(reply) = dns::ask(server, name, RecordType::A) {
            if dns::answers(&reply) == [format!("A {ip}")] {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            bail!("{server} did not answer {name} with {ip} within 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// How long building the whole zone takes for `count` Services with one slice of 10
/// endpoints each (in memory; the DNS rebuilds it after each batch of changes): the median
/// of 5 builds, and the names it holds.
fn zone_build(count: usize) -> Result<(Duration, usize)> {
    use std::sync::Arc;
    let mut services = Vec::with_capacity(count);
    let mut slices = Vec::with_capacity(count);
    for i in 0..count {
        let ip = format!("10.{}.{}.{}", 96 + i / 65536, (i / 256) % 256, i % 256);
        services.push(Arc::new(serde_json::from_value::<Service>(serde_json::json!({
            "metadata": {"name": format!("svc-{i}"), "namespace": "bench"},
            "spec": {"clusterIP": ip, "ports": [{"name": "http", "port": 80}]},
        }))?));
        let endpoints: Vec<serde_json::Value> = (0..10)
            .map(|e| {
                let n = i * 10 + e;
                serde_json::json!({"addresses": [format!("10.{}.{}.{}", 128 + n / 65536, (n / 256) % 256, n % 256)],
                                   "conditions": {"ready": true}})
            })
            .collect();
        slices.push(Arc::new(serde_json::from_value::<
            k8s_openapi::api::discovery::v1::EndpointSlice,
        >(serde_json::json!({
                "metadata": {"name": format!("svc-{i}-1"), "namespace": "bench",
                             "labels": {"kubernetes.io/service-name": format!("svc-{i}")}},
                "addressType": "IPv4", "endpoints": endpoints,
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}))?));
    }
    let namespaces = vec![Arc::new(serde_json::from_value::<Namespace>(
        serde_json::json!({"metadata": {"name": "bench"}}),
    )?)];
    let config = rkube_proxy::dns::zone_config("cluster.local", None)?;
    let mut times = Vec::new();
    let mut names = 0;
    for _ in 0..5 {
        let started = Instant::now();
        let zone = rkube_proxy::dns::records::Zone::build(&config, &services, &slices, &namespaces);
        times.push(started.elapsed());
        names = zone.len();
    }
    times.sort();
    Ok((times[times.len() / 2], names))
}

fn main() -> Result<()> {
    let mut cli = <Cli as clap::Parser>::parse();
    let report::Args { quick, output } =
        std::mem::replace(&mut cli.common, report::Args { quick: false, output: String::new() });
    if quick {
        cli.services = cli.services.min(100);
        cli.seconds = cli.seconds.min(2);
    }
    if cli.services == 0 || cli.clients == 0 || cli.window == 0 {
        bail!("--services, --clients and --window must be at least 1");
    }
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let workers = cli.workers.unwrap_or(cores);
    let unbound_version = ensure_unbound()?;

    let control = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    eprintln!("starting rkube server ({})", rkube_conformance::cluster::rkube_binary().display());
    let server = RkubeServer::start_with(&[]);
    eprintln!("creating {} Services", cli.services);
    let ips = control.block_on(make_services(&server, cli.services))?;
    let names: Vec<Vec<u8>> =
        (0..cli.services).map(|i| dns::query(0, &service_name(i), RecordType::A, None)).collect();
    let last = service_name(cli.services - 1);

    // rkube's DNS, on a runtime of its own (as in the `rkube` binary: one worker per core).
    let serving =
        tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build()?;
    let zone = rkube_proxy::dns::zone_config("cluster.local", None)?;
    let forwarder = Forwarder::new(Vec::new(), rkube_proxy::dns::FORWARD_TIMEOUT);
    // The client is made on the serving runtime: its connection task runs there.
    let rkube_dns = serving.block_on(async {
        let client = server.kube_client().await?;
        let addr = "127.0.0.1:0".parse()?;
        let served = rkube_proxy::dns::serve_zone(client, zone, forwarder, addr).await?;
        anyhow::Ok(served)
    })?;
    let rkube_addr = rkube_dns.listening.addr;
    wait_answering(rkube_addr, &last, &ips[cli.services - 1])?;
    eprintln!(
        "rkube DNS on {rkube_addr}: {} clients x {} in flight, {} s",
        cli.clients, cli.window, cli.seconds
    );
    let rkube = load(rkube_addr, &names, &cli)?;
    drop(rkube_dns);
    drop(serving);

    let dir = tempfile::tempdir()?;
    let port = rkube_store::testing::free_port();
    let mut unbound = start_unbound(dir.path(), port, &ips, workers)?;
    let unbound_addr: SocketAddr = format!("127.0.0.1:{port}").parse()?;
    let result = wait_answering(unbound_addr, &last, &ips[cli.services - 1]).and_then(|()| {
        eprintln!("{unbound_version} on {unbound_addr}");
        load(unbound_addr, &names, &cli)
    });
    let _ = unbound.kill();
    let _ = unbound.wait();
    let anchor = result?;

    let mut builds = Table::new(&["Services x endpoints", "names", "zone build (median of 5)"]);
    for count in if quick { vec![1000] } else { vec![1000, 10_000] } {
        let (took, names) = zone_build(count)?;
        builds.row(vec![format!("{count} x 10"), names.to_string(), report::ms(took)]);
    }
    let mut table = Table::new(&[
        "server",
        "queries/s",
        "p50",
        "p99",
        "p99.9",
        "queries",
        "wrong / unanswered",
    ]);
    for (name, f) in [("rkube DNS", &rkube), (unbound_version.as_str(), &anchor)] {
        table.row(vec![
            name.to_string(),
            format!("{:.0}", f.qps),
            report::ms(f.p50),
            report::ms(f.p99),
            report::ms(f.p999),
            f.queries.to_string(),
            format!("{} / {}", f.bad, f.lost),
        ]);
    }
    let markdown = format!(
        "## Cluster DNS (`dns-bench`)\n\n{}\nA queries over UDP on loopback for the names of {} ClusterIP Services (`svc-N.bench.svc.cluster.local`, each asked in turn), from {} client threads keeping {} queries in flight each, for {} s after 1 s of warm-up; latency is from send to answer at the client. rkube's DNS is the `rkube_proxy::dns` library started in the benchmark's process on a tokio runtime of {workers} worker threads (as the `rkube` binary has here), its zone fed by informers from a real `rkube server`; the anchor, in the same run with the same generator, is Debian's {} serving the same names from a static local zone with {workers} threads. Targets: at least 30,000 queries/s with p99 under 2 ms (a managed CoreDNS replica is rated at 5,000/s). The generator shares the machine's cores with the server it measures.\n\nThe zone is one index rebuilt whole after each batch of changes (at most every 100 ms); its build time, in memory, for Services with one EndpointSlice of 10 ready endpoints each (every endpoint's name, PTR and SRV records included):\n\n{}\n{}\n",
        table.markdown(),
        cli.services,
        cli.clients,
        cli.window,
        cli.seconds,
        unbound_version,
        builds.markdown(),
        report::machine()
    );
    println!("{markdown}");
    if !quick {
        report::write_section(&output, "dns-bench", &markdown)?;
        eprintln!("wrote {output}");
    }
    Ok(())
}
