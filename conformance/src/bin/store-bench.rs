//! Storage benchmark: the same work against the embedded SQLite store, the etcd store, and raw
//! etcd (etcd-client with no rkube code in between), in one run on this machine.
//!
//! ```text
//! cargo run --release -p rkube-conformance --bin store-bench [-- --quick] [--output FILE]
//! ```
//!
//! It starts its own etcd (Debian's `etcd-server`) on free loopback ports, and writes the
//! figures to the `store-bench` section of `docs/benchmarks.md` (or `--output`).
//!
//! - writes: creates of new keys with 1 KiB values at concurrency 1, 16 and 128: ops/s and
//!   p50/p99 latency. Every SQLite write is acknowledged after its fsync'd commit; every etcd
//!   write after etcd's WAL fsync (etcd's default).
//! - range: one read of all 10,000 keys (1 KiB each) under a prefix: median of 5.
//! - watch: 1,000 watchers on one prefix, 200 writes: p50/p99 time from the start of a write to
//!   its event reaching a watcher, over all 200,000 deliveries.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use clap::Parser;
use etcd_client::{GetOptions, WatchOptions};
use rkube_conformance::report::{self, Table};
use rkube_store::testing::EtcdServer;
use rkube_store::{EtcdOptions, EtcdStore, RangeRequest, SqliteOptions, SqliteStore, Store};
use tokio::sync::Barrier;

/// One system under test.
#[derive(Clone)]
enum Target {
    Store(Arc<dyn Store>),
    RawEtcd(Box<etcd_client::Client>),
}

impl Target {
    async fn create(&self, key: &str, value: Bytes) -> Result<()> {
        match self {
            Target::Store(store) => {
                store.create(key, value).await?;
            }
            Target::RawEtcd(client) => {
                report::raw_etcd_create(&mut client.kv_client(), key, value.to_vec()).await?;
            }
        }
        Ok(())
    }

    async fn range_count(&self, prefix: &str) -> Result<usize> {
        match self {
            Target::Store(store) => Ok(store.range(RangeRequest::prefix(prefix)).await?.kvs.len()),
            Target::RawEtcd(client) => {
                let response = client
                    .kv_client()
                    .max_decoding_message_size(i32::MAX as usize)
                    .get(prefix, Some(GetOptions::new().with_prefix()))
                    .await?;
                Ok(response.kvs().len())
            }
        }
    }

    /// Starts a watch on `prefix` that sends each event's value to `deliver`.
    async fn watch(
        &self,
        prefix: &str,
        deliver: tokio::sync::mpsc::UnboundedSender<(Bytes, Instant)>,
    ) -> Result<()> {
        match self {
            Target::Store(store) => {
                let mut stream = store.watch(prefix, true, 0).await?;
                tokio::spawn(async move {
                    while let Some(Ok(response)) = stream.recv().await {
                        let now = Instant::now();
                        for event in response.events {
                            if deliver.send((event.kv.value, now)).is_err() {
                                return;
                            }
                        }
                    }
                });
            }
            Target::RawEtcd(client) => {
                let mut stream = client
                    .watch_client()
                    .watch(prefix, Some(WatchOptions::new().with_prefix()))
                    .await?;
                // Wait for the "created" answer, as the etcd store does.
                stream.message().await?;
                tokio::spawn(async move {
                    while let Ok(Some(response)) = stream.message().await {
                        let now = Instant::now();
                        for event in response.events() {
                            let value = Bytes::copy_from_slice(
                                event.kv().map(|kv| kv.value()).unwrap_or_default(),
                            );
                            if deliver.send((value, now)).is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        }
        Ok(())
    }
}

struct Config {
    write_duration: Duration,
    range_keys: usize,
    watchers: usize,
    watch_events: usize,
}

#[derive(Default, Clone)]
struct WriteFigures {
    ops_per_sec: f64,
    p50: Duration,
    p99: Duration,
}

#[derive(Default, Clone)]
struct Figures {
    writes: Vec<(usize, WriteFigures)>,
    range: Duration,
    watch_p50: Duration,
    watch_p99: Duration,
}

const CONCURRENCY: [usize; 3] = [1, 16, 128];

/// Creates new keys from `concurrency` tasks for `duration`; every latency is kept.
async fn bench_writes(
    target: &Target,
    tag: &str,
    concurrency: usize,
    duration: Duration,
) -> Result<WriteFigures> {
    let value = Bytes::from(vec![b'v'; 1024]);
    let barrier = Arc::new(Barrier::new(concurrency + 1));
    let mut tasks = Vec::new();
    for t in 0..concurrency {
        let (target, value, barrier, tag) =
            (target.clone(), value.clone(), barrier.clone(), tag.to_string());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let end = Instant::now() + duration;
            let mut latencies = Vec::new();
            // Bounded in time and in count.
            for i in 0..1_000_000u64 {
                let now = Instant::now();
                if now >= end {
                    break;
                }
                target
                    .create(&format!("/bench/write/{tag}/c{concurrency}/t{t}/{i}"), value.clone())
                    .await?;
                latencies.push(now.elapsed());
            }
            anyhow::Ok(latencies)
        }));
    }
    barrier.wait().await;
    let started = Instant::now();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await??);
    }
    let elapsed = started.elapsed();
    latencies.sort();
    Ok(WriteFigures {
        ops_per_sec: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: report::percentile(&latencies, 50.0),
        p99: report::percentile(&latencies, 99.0),
    })
}

async fn bench_range(target: &Target, keys: usize) -> Result<Duration> {
    let value = Bytes::from(vec![b'r'; 1024]);
    // Fill from 64 tasks.
    let mut tasks = Vec::new();
    for t in 0..64 {
        let (target, value) = (target.clone(), value.clone());
        tasks.push(tokio::spawn(async move {
            for i in (t..keys).step_by(64) {
                target.create(&format!("/bench/range/{i:06}"), value.clone()).await?;
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let mut times = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let n = target.range_count("/bench/range/").await?;
        times.push(started.elapsed());
        if n != keys {
            bail!("range returned {n} keys, expected {keys}");
        }
    }
    times.sort();
    Ok(times[times.len() / 2])
}

async fn bench_watch(
    target: &Target,
    watchers: usize,
    events: usize,
) -> Result<(Duration, Duration)> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..watchers {
        target.watch("/bench/watch/", tx.clone()).await?;
    }
    drop(tx);
    let base = Instant::now();
    let writer = {
        let target = target.clone();
        tokio::spawn(async move {
            for i in 0..events {
                // The value carries the moment the write started.
                let sent = base.elapsed().as_nanos() as u64;
                let mut value = sent.to_be_bytes().to_vec();
                value.resize(1024, b'w');
                target.create(&format!("/bench/watch/{i:05}"), Bytes::from(value)).await?;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            anyhow::Ok(())
        })
    };
    let expected = watchers * events;
    let mut latencies = Vec::with_capacity(expected);
    let deadline = Instant::now() + Duration::from_secs(120);
    while latencies.len() < expected {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let Ok(Some((value, received))) = tokio::time::timeout(remaining, rx.recv()).await else {
            bail!("watch: only {} of {expected} deliveries within 120 s", latencies.len());
        };
        let sent = u64::from_be_bytes(value[..8].try_into().context("short value")?);
        let sent_at = base + Duration::from_nanos(sent);
        latencies.push(received.saturating_duration_since(sent_at));
    }
    writer.await??;
    latencies.sort();
    Ok((report::percentile(&latencies, 50.0), report::percentile(&latencies, 99.0)))
}

async fn bench_target(name: &str, target: &Target, config: &Config) -> Result<Figures> {
    let mut figures = Figures::default();
    for concurrency in CONCURRENCY {
        let f = bench_writes(target, name, concurrency, config.write_duration).await?;
        eprintln!(
            "  {name}: writes c={concurrency}: {:.0} ops/s, p50 {}, p99 {}",
            f.ops_per_sec,
            report::ms(f.p50),
            report::ms(f.p99)
        );
        figures.writes.push((concurrency, f));
    }
    figures.range = bench_range(target, config.range_keys).await?;
    eprintln!("  {name}: range of {} keys: {}", config.range_keys, report::ms(figures.range));
    let (p50, p99) = bench_watch(target, config.watchers, config.watch_events).await?;
    eprintln!(
        "  {name}: watch, {} watchers: p50 {}, p99 {}",
        config.watchers,
        report::ms(p50),
        report::ms(p99)
    );
    figures.watch_p50 = p50;
    figures.watch_p99 = p99;
    Ok(figures)
}

/// Storage benchmark: creates, a 10,000-key range read and 1,000 watchers against the embedded
/// SQLite store, the etcd store and raw etcd (Debian's etcd-server, started here on loopback
/// ports), in one run. Writes the `store-bench` section of docs/benchmarks.md.
#[derive(Parser)]
#[command(name = "store-bench")]
struct Cli {
    #[command(flatten)]
    common: report::Args,
}

#[tokio::main]
async fn main() -> Result<()> {
    let Cli { common: report::Args { quick, output } } = Cli::parse();
    let config = if quick {
        Config {
            write_duration: Duration::from_millis(500),
            range_keys: 1000,
            watchers: 100,
            watch_events: 20,
        }
    } else {
        Config {
            write_duration: Duration::from_secs(5),
            range_keys: 10_000,
            watchers: 1000,
            watch_events: 200,
        }
    };

    let dir = tempfile::Builder::new().prefix("rkube-store-bench-").tempdir()?;
    let mut results = Vec::new();

    eprintln!("sqlite store (data dir {})", dir.path().display());
    let sqlite = SqliteStore::open(dir.path().join("sqlite"), SqliteOptions::default())?;
    results.push((
        "rkube sqlite store",
        bench_target("sqlite", &Target::Store(Arc::new(sqlite.clone())), &config).await?,
    ));
    sqlite.close().await?;

    for (label, tag) in [("rkube etcd store", "etcd"), ("raw etcd (etcd-client)", "raw")] {
        // A fresh etcd for each, so that neither inherits the other's data.
        let server = tokio::task::spawn_blocking(EtcdServer::start).await?;
        eprintln!("{label} ({})", server.client_url());
        let target = if tag == "etcd" {
            Target::Store(Arc::new(
                EtcdStore::connect(EtcdOptions::new([server.client_url()])).await?,
            ))
        } else {
            Target::RawEtcd(Box::new(
                etcd_client::Client::connect([server.client_url()], None).await?,
            ))
        };
        results.push((label, bench_target(tag, &target, &config).await?));
    }

    let markdown = render(&results, &config, quick);
    println!("{markdown}");
    if !quick {
        report::write_section(&output, "store-bench", &markdown)?;
        eprintln!("wrote {output}");
    }
    Ok(())
}

fn render(results: &[(&str, Figures)], config: &Config, quick: bool) -> String {
    let mut table = Table::new(&[
        "backend",
        "writes c=1",
        "writes c=16",
        "writes c=128",
        "p50 / p99 c=1",
        "p50 / p99 c=16",
        "p50 / p99 c=128",
        "range 10k",
        "watch p50 / p99",
    ]);
    for (name, f) in results {
        let mut row = vec![name.to_string()];
        for (_, w) in &f.writes {
            row.push(format!("{:.0}/s", w.ops_per_sec));
        }
        for (_, w) in &f.writes {
            row.push(format!("{} / {}", report::ms(w.p50), report::ms(w.p99)));
        }
        row.push(report::ms(f.range));
        row.push(format!("{} / {}", report::ms(f.watch_p50), report::ms(f.watch_p99)));
        table.row(row);
    }
    let sqlite128 = &results[0].1.writes[2].1;
    let etcd128 = results[1].1.writes[2].1.ops_per_sec;
    let raw128 = results[2].1.writes[2].1.ops_per_sec;
    let ratio = sqlite128.ops_per_sec / etcd128.max(raw128);
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    format!(
        "## Storage (`store-bench`{})\n\n{}\n\nWrites create new keys with 1 KiB values; each is acknowledged only when durable \
         (SQLite: WAL with synchronous=FULL, one fsync per group commit; etcd: its WAL fsync). \
         Range reads all {} keys of a prefix (median of 5). Watch: {} watchers on one prefix, {} writes 5 ms apart; \
         latency from the start of the write to the event reaching each watcher.\n\n\
         Targets: SQLite writes at c=128 at least 2x etcd: {:.1}x ({}); SQLite p99 at c=128 under 20 ms: {} ({}).\n\n{}\n",
        if quick { ", quick run" } else { "" },
        table.markdown(),
        config.range_keys,
        config.watchers,
        config.watch_events,
        ratio,
        verdict(ratio >= 2.0),
        report::ms(sqlite128.p99),
        verdict(sqlite128.p99 < Duration::from_millis(20)),
        report::machine(),
    )
}
