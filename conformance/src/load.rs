//! Load for the benchmark programs: [`run`] keeps a number of operations in flight for a
//! fixed time and records each one's latency ([`Run`]); [`Cpu`] measures what a phase cost
//! the server process and this one.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::report::{self, cpu_time};

/// Latencies of one concurrent phase.
pub struct Run {
    /// Sorted.
    pub latencies: Vec<Duration>,
    pub elapsed: Duration,
}

impl Run {
    pub fn ops_per_sec(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }
    pub fn p50(&self) -> Duration {
        report::percentile(&self.latencies, 50.0)
    }
    pub fn p99(&self) -> Duration {
        report::percentile(&self.latencies, 99.0)
    }
    pub fn summary(&self) -> String {
        format!(
            "{:.0}/s ({} in {:.1} s), p50 {}, p99 {}",
            self.ops_per_sec(),
            self.latencies.len(),
            self.elapsed.as_secs_f64(),
            report::ms(self.p50()),
            report::ms(self.p99())
        )
    }
}

/// Runs `op(0)`, `op(1)`, ... from `concurrency` tasks until `count` have started or
/// `duration` has passed, keeping every latency. The first error stops every task.
pub async fn run<F, Fut>(concurrency: usize, count: usize, duration: Duration, op: F) -> Result<Run>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let end = started + duration;
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (op, next, stop) = (op.clone(), next.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let now = Instant::now();
                if now >= end {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                if let Err(e) = op(i).await {
                    stop.store(true, Ordering::Relaxed);
                    return Err(e.context(format!("operation {i}")));
                }
                latencies.push(now.elapsed());
            }
            anyhow::Ok(latencies)
        }));
    }
    let mut latencies = Vec::new();
    let mut first_error = None;
    for task in tasks {
        match task.await? {
            Ok(l) => latencies.extend(l),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let elapsed = started.elapsed();
    latencies.sort();
    Ok(Run { latencies, elapsed })
}

/// CPU the server and this benchmark used during one phase.
#[derive(Clone, Copy, Default)]
pub struct Cpu {
    pub server: Duration,
    pub client: Duration,
    pub wall: Duration,
}

impl Cpu {
    /// Runs `phase`, measuring the CPU of process `server` (none when `None`) and of this one.
    pub async fn measure<T>(
        server: Option<u32>,
        phase: impl Future<Output = Result<T>>,
    ) -> Result<(T, Cpu)> {
        let server_cpu = || server.map_or(Ok(Duration::ZERO), |pid| cpu_time(&pid.to_string()));
        let (server_before, client_before, started) =
            (server_cpu()?, cpu_time("self")?, Instant::now());
        let value = phase.await?;
        let cpu = Cpu {
            server: server_cpu()?.saturating_sub(server_before),
            client: cpu_time("self")?.saturating_sub(client_before),
            wall: started.elapsed(),
        };
        Ok((value, cpu))
    }

    pub fn cores(d: Duration, wall: Duration) -> f64 {
        d.as_secs_f64() / wall.as_secs_f64()
    }

    pub fn summary(&self) -> String {
        format!(
            "{:.2} / {:.2}",
            Self::cores(self.server, self.wall),
            Self::cores(self.client, self.wall)
        )
    }

    /// Microseconds of CPU per operation, server and client.
    pub fn per_op(&self, ops: usize) -> (f64, f64) {
        let per = |d: Duration| d.as_secs_f64() * 1e6 / ops.max(1) as f64;
        (per(self.server), per(self.client))
    }
}
