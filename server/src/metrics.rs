//! Prometheus metrics at `/metrics`, with kube-apiserver's names where there is a counterpart:
//! `apiserver_request_total`, `apiserver_request_duration_seconds`,
//! `apiserver_storage_objects`, and the process's resident memory.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// The duration buckets of `apiserver_request_duration_seconds` (upstream's, shortened).
const BUCKETS: &[f64] =
    &[0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0];

/// verb, group, version, resource, subresource, scope.
type RequestKey = (String, String, String, String, String, &'static str);

#[derive(Default)]
struct Histogram {
    buckets: Vec<u64>,
    sum: f64,
    count: u64,
}

#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(RequestKey, u16), u64>>,
    durations: Mutex<BTreeMap<RequestKey, Histogram>>,
}

impl Metrics {
    /// Counts one request and its duration.
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &self,
        verb: &str,
        group: &str,
        version: &str,
        resource: &str,
        subresource: &str,
        scope: &'static str,
        code: u16,
        elapsed: Duration,
    ) {
        let key: RequestKey = (
            verb.to_ascii_uppercase(),
            group.to_string(),
            version.to_string(),
            resource.to_string(),
            subresource.to_string(),
            scope,
        );
        *self.requests.lock().expect("metrics lock").entry((key.clone(), code)).or_default() += 1;
        let seconds = elapsed.as_secs_f64();
        let mut durations = self.durations.lock().expect("metrics lock");
        let h = durations
            .entry(key)
            .or_insert_with(|| Histogram { buckets: vec![0; BUCKETS.len()], ..Default::default() });
        for (i, bound) in BUCKETS.iter().enumerate() {
            if seconds <= *bound {
                h.buckets[i] += 1;
            }
        }
        h.sum += seconds;
        h.count += 1;
    }

    /// The text exposition format; `objects` is the count of stored objects per resource.
    pub fn render(&self, objects: &[(String, usize)]) -> String {
        let mut out = String::new();
        let labels = |k: &RequestKey| {
            format!(
                "verb=\"{}\",group=\"{}\",version=\"{}\",resource=\"{}\",subresource=\"{}\",scope=\"{}\"",
                k.0, k.1, k.2, k.3, k.4, k.5
            )
        };
        out.push_str("# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.\n");
        out.push_str("# TYPE apiserver_request_total counter\n");
        for ((k, code), n) in self.requests.lock().expect("metrics lock").iter() {
            let _ = writeln!(out, "apiserver_request_total{{{},code=\"{code}\"}} {n}", labels(k));
        }
        out.push_str("# HELP apiserver_request_duration_seconds Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.\n");
        out.push_str("# TYPE apiserver_request_duration_seconds histogram\n");
        for (k, h) in self.durations.lock().expect("metrics lock").iter() {
            let l = labels(k);
            for (i, bound) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "apiserver_request_duration_seconds_bucket{{{l},le=\"{bound}\"}} {}",
                    h.buckets[i]
                );
            }
            let _ = writeln!(
                out,
                "apiserver_request_duration_seconds_bucket{{{l},le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(out, "apiserver_request_duration_seconds_sum{{{l}}} {}", h.sum);
            let _ = writeln!(out, "apiserver_request_duration_seconds_count{{{l}}} {}", h.count);
        }
        out.push_str("# HELP apiserver_storage_objects Number of stored objects at the time of last check split by kind.\n");
        out.push_str("# TYPE apiserver_storage_objects gauge\n");
        for (resource, n) in objects {
            let _ = writeln!(out, "apiserver_storage_objects{{resource=\"{resource}\"}} {n}");
        }
        if let Some(rss) = resident_bytes() {
            out.push_str("# HELP process_resident_memory_bytes Resident memory size in bytes.\n");
            out.push_str("# TYPE process_resident_memory_bytes gauge\n");
            let _ = writeln!(out, "process_resident_memory_bytes {rss}");
        }
        out
    }
}

/// VmRSS of this process.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
