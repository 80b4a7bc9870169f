//! Resource usage of the node and of the pods it runs, as the kubelet serves it to the API
//! server's `metrics.k8s.io` API (and so to `kubectl top`) and to monitoring:
//!
//! | path | what |
//! |---|---|
//! | `GET /stats/summary[?only_cpu_and_memory=true]` | upstream's Summary API (`stats/v1alpha1`): node and per-pod, per-container CPU and memory |
//! | `GET /metrics/resource` | the same in the Prometheus text format, with upstream's metric names |
//!
//! Containers are measured by the runtime ([`Runtime::container_stats`]: Docker reads the
//! container's cgroup, see [`crate::runtime::cgroups`]); the node from `/proc/stat`,
//! `/proc/meminfo` and `/proc/vmstat`, and its filesystem with statvfs on the root dir.
//!
//! CPU usage is read as a cumulative counter; `usageNanoCores` is a rate, so every reading
//! is kept as the next one's reference ([`Rate`]). The [`StatsProvider`] takes a reading of
//! everything every housekeeping interval ([`StatsProvider::run`], 10 s by default, as
//! upstream's housekeeping), and each request takes a fresh one: its rate is measured from
//! the previous reading when that is at least [`MIN_WINDOW`] old (otherwise the previous
//! rate stands). Readings of containers that no longer run are dropped at each sweep.
//!
//! What is measured honestly is served, the rest left out: no network, no per-container
//! filesystem, no swap, no system containers.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use http::{header, HeaderValue, StatusCode};
use serde_json::{json, Map, Value};

use crate::pods::PodCache;
use crate::runtime::{labels, ContainerState, ContainerStats, Runtime, RuntimeError};
use crate::server::ServerState;

/// The shortest window a CPU rate is measured over: readings closer together than this
/// keep the previous rate (two reads milliseconds apart would give noise).
pub const MIN_WINDOW: Duration = Duration::from_secs(1);

/// One reading of a cumulative CPU counter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuPoint {
    pub at: DateTime<Utc>,
    /// Nanoseconds of CPU time, all cores.
    pub cpu_ns: u64,
}

/// A CPU rate kept up to date from successive readings (as cAdvisor and the CRI stats
/// provider keep the previous reading of each container).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rate {
    last: Option<CpuPoint>,
    nano_cores: Option<u64>,
}

impl Rate {
    /// Takes a reading and answers the current rate in nanocores (CPU nanoseconds per
    /// second): measured from the last reading when it is at least [`MIN_WINDOW`] older,
    /// else the rate known so far. A counter that went back (a new container behind the
    /// same key) starts over.
    pub fn observe(&mut self, point: CpuPoint) -> Option<u64> {
        let Some(last) = self.last else {
            self.last = Some(point);
            return None;
        };
        if point.cpu_ns < last.cpu_ns {
            *self = Rate { last: Some(point), nano_cores: None };
            return None;
        }
        let window = (point.at - last.at).to_std().unwrap_or_default();
        if window < MIN_WINDOW {
            return self.nano_cores;
        }
        let used = u128::from(point.cpu_ns - last.cpu_ns);
        let rate = used * 1_000_000_000 / window.as_nanos().max(1);
        self.nano_cores = Some(u64::try_from(rate).unwrap_or(u64::MAX));
        self.last = Some(point);
        self.nano_cores
    }

    pub fn nano_cores(&self) -> Option<u64> {
        self.nano_cores
    }
}

/// CPU figures of one reading.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cpu {
    pub time: DateTime<Utc>,
    pub usage_core_nano_seconds: u64,
    pub usage_nano_cores: Option<u64>,
}

/// Memory figures of one reading.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Memory {
    pub time: DateTime<Utc>,
    pub usage_bytes: u64,
    pub working_set_bytes: u64,
    pub available_bytes: Option<u64>,
    pub rss_bytes: Option<u64>,
    pub page_faults: Option<u64>,
    pub major_page_faults: Option<u64>,
}

/// The node's root filesystem (where the kubelet keeps pods).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fs {
    pub time: DateTime<Utc>,
    pub capacity_bytes: u64,
    pub available_bytes: u64,
    pub used_bytes: u64,
    pub inodes: u64,
    pub inodes_free: u64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeUsage {
    pub name: String,
    pub start_time: Option<DateTime<Utc>>,
    pub cpu: Option<Cpu>,
    pub memory: Option<Memory>,
    pub fs: Option<Fs>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ContainerUsage {
    pub name: String,
    pub start_time: DateTime<Utc>,
    pub cpu: Cpu,
    pub memory: Memory,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PodUsage {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub start_time: Option<DateTime<Utc>>,
    /// The app (and running init) containers, by name.
    pub containers: Vec<ContainerUsage>,
    /// The pod's total: its containers and its sandbox.
    pub cpu: Cpu,
    pub memory: Memory,
}

/// Everything one sweep measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Usage {
    pub node: NodeUsage,
    pub pods: Vec<PodUsage>,
    /// Something could not be measured (the runtime failed to list, or the node's files
    /// could not be read): `resource_scrape_error`.
    pub error: bool,
}

#[derive(Default)]
struct Rates {
    node: Rate,
    containers: HashMap<String, Rate>,
}

impl Rates {
    /// Takes the container readings of one sweep and answers each one's rate. When the
    /// sweep saw every running container (`complete`: the runtime listed them), the readings
    /// of the others are dropped: only what runs is remembered.
    fn sweep<'a>(
        &mut self,
        readings: impl Iterator<Item = (&'a str, CpuPoint)>,
        complete: bool,
    ) -> HashMap<String, Option<u64>> {
        let mut out = HashMap::new();
        for (id, point) in readings {
            let rate = self.containers.entry(id.to_string()).or_default();
            out.insert(id.to_string(), rate.observe(point));
        }
        if complete {
            self.containers.retain(|id, _| out.contains_key(id));
        }
        out
    }
}

/// Measures the node and its pods, and keeps the CPU rates.
pub struct StatsProvider {
    runtime: Arc<dyn Runtime>,
    node_name: String,
    root_dir: std::path::PathBuf,
    pods: PodCache,
    rates: Mutex<Rates>,
    /// Set once the runtime said it cannot measure containers: no more asking.
    unsupported: std::sync::atomic::AtomicBool,
}

impl StatsProvider {
    pub fn new(
        runtime: Arc<dyn Runtime>,
        node_name: &str,
        root_dir: &Path,
        pods: PodCache,
    ) -> StatsProvider {
        StatsProvider {
            runtime,
            node_name: node_name.to_string(),
            root_dir: root_dir.to_path_buf(),
            pods,
            rates: Mutex::default(),
            unsupported: Default::default(),
        }
    }

    /// Takes a reading every `interval` so that rates are ready before anyone asks, until
    /// the task is aborted (or the runtime cannot measure containers).
    pub async fn run(self: Arc<Self>, interval: Duration) {
        loop {
            self.collect().await;
            if self.unsupported.load(std::sync::atomic::Ordering::Relaxed) {
                tracing::info!("the container runtime has no resource stats: sampling stops");
                return;
            }
            tokio::time::sleep(interval).await;
        }
    }

    /// One sweep: the node, then every running container of this node.
    pub async fn collect(&self) -> Usage {
        let mut usage = Usage::default();
        let node = read_node(&self.root_dir);
        usage.error |= node.is_none();
        let (records, listed) = if self.unsupported.load(std::sync::atomic::Ordering::Relaxed) {
            (Vec::new(), true)
        } else {
            match self.runtime.list(&self.node_name, None).await {
                Ok(records) => (records, true),
                Err(e) => {
                    tracing::warn!(error = %e, "stats: cannot list containers");
                    (Vec::new(), false)
                }
            }
        };
        usage.error |= !listed;
        let running: Vec<_> = records
            .into_iter()
            .filter(|r| matches!(r.state, ContainerState::Running { .. }))
            .filter(|r| !r.label(labels::POD_UID).is_empty())
            .collect();
        let readings = futures::future::join_all(running.iter().map(|r| async move {
            let stats = self.runtime.container_stats(&r.id).await;
            (r, stats)
        }))
        .await;
        let mut measured: Vec<(&crate::runtime::ContainerRecord, ContainerStats)> = Vec::new();
        for (record, stats) in readings {
            match stats {
                Ok(s) => measured.push((record, s)),
                Err(RuntimeError::Unsupported(_)) => {
                    self.unsupported.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                // Stopped between the list and the read: not running any more.
                Err(e) => tracing::debug!(container = record.id, error = %e, "stats: no reading"),
            }
        }
        let mut rates = self.rates.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((cpu_ns, memory, fs, start_time, at)) = node {
            let nano_cores = rates.node.observe(CpuPoint { at, cpu_ns });
            usage.node = NodeUsage {
                name: self.node_name.clone(),
                start_time,
                cpu: Some(Cpu {
                    time: at,
                    usage_core_nano_seconds: cpu_ns,
                    usage_nano_cores: nano_cores,
                }),
                memory: Some(memory),
                fs,
            };
        } else {
            usage.node.name = self.node_name.clone();
        }
        let readings = measured.iter().map(|(record, stats)| {
            (record.id.as_str(), CpuPoint { at: stats.timestamp, cpu_ns: stats.cpu_usage_ns })
        });
        let cpu_of = rates.sweep(readings, listed);
        drop(rates);
        usage.pods = pods_of(&measured, &cpu_of, &self.pods);
        usage
    }
}

/// Groups the measured containers by pod: its containers (the newest running attempt of
/// each name) and its totals, sandbox included.
fn pods_of(
    measured: &[(&crate::runtime::ContainerRecord, ContainerStats)],
    cpu_of: &HashMap<String, Option<u64>>,
    cache: &PodCache,
) -> Vec<PodUsage> {
    let mut by_uid: BTreeMap<&str, Vec<&(&crate::runtime::ContainerRecord, ContainerStats)>> =
        BTreeMap::new();
    for m in measured {
        by_uid.entry(m.0.label(labels::POD_UID)).or_default().push(m);
    }
    let known = cache.list();
    let mut pods: Vec<PodUsage> = by_uid
        .into_iter()
        .map(|(uid, members)| {
            let first = members[0].0;
            let pod = known.iter().find(|p| p.metadata.uid.as_deref() == Some(uid));
            let start_time = pod
                .and_then(|p| p.status.as_ref()?.start_time.as_ref())
                .map(|t| t.0.to_string())
                .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
                .map(|t| t.to_utc())
                .or_else(|| {
                    members.iter().find(|m| m.0.is_sandbox()).and_then(|m| started_at(m.0))
                });
            let mut newest: BTreeMap<&str, &(&crate::runtime::ContainerRecord, ContainerStats)> =
                BTreeMap::new();
            for m in members.iter().filter(|m| !m.0.is_sandbox()) {
                let name = m.0.label(labels::CONTAINER_NAME);
                if newest.get(name).is_none_or(|n| n.0.attempt() < m.0.attempt()) {
                    newest.insert(name, m);
                }
            }
            let containers: Vec<ContainerUsage> = newest
                .into_iter()
                .map(|(name, (record, stats))| ContainerUsage {
                    name: name.to_string(),
                    start_time: started_at(record).unwrap_or(stats.timestamp),
                    cpu: Cpu {
                        time: stats.timestamp,
                        usage_core_nano_seconds: stats.cpu_usage_ns,
                        usage_nano_cores: cpu_of.get(&record.id).copied().flatten(),
                    },
                    memory: memory_of(stats),
                })
                .collect();
            let all: Vec<_> =
                members.iter().map(|m| (&m.1, cpu_of.get(&m.0.id).copied().flatten())).collect();
            let time = all.iter().map(|(s, _)| s.timestamp).max().unwrap_or_else(Utc::now);
            let sum = |f: &dyn Fn(&ContainerStats) -> Option<u64>| -> Option<u64> {
                all.iter().map(|(s, _)| f(s)).sum()
            };
            PodUsage {
                name: first.label(labels::POD_NAME).to_string(),
                namespace: first.label(labels::POD_NAMESPACE).to_string(),
                uid: uid.to_string(),
                start_time,
                containers,
                cpu: Cpu {
                    time,
                    usage_core_nano_seconds: sum(&|s| Some(s.cpu_usage_ns)).unwrap_or(0),
                    usage_nano_cores: all.iter().map(|(_, rate)| *rate).sum(),
                },
                memory: Memory {
                    time,
                    usage_bytes: sum(&|s| Some(s.memory_usage_bytes)).unwrap_or(0),
                    working_set_bytes: sum(&|s| Some(s.memory_working_set_bytes)).unwrap_or(0),
                    available_bytes: None,
                    rss_bytes: sum(&|s| s.memory_rss_bytes),
                    page_faults: sum(&|s| s.page_faults),
                    major_page_faults: sum(&|s| s.major_page_faults),
                },
            }
        })
        .collect();
    pods.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    pods
}

fn started_at(record: &crate::runtime::ContainerRecord) -> Option<DateTime<Utc>> {
    match record.state {
        ContainerState::Running { started_at } => Some(started_at),
        _ => None,
    }
}

fn memory_of(stats: &ContainerStats) -> Memory {
    Memory {
        time: stats.timestamp,
        usage_bytes: stats.memory_usage_bytes,
        working_set_bytes: stats.memory_working_set_bytes,
        // As upstream: what the limit leaves, only when there is one.
        available_bytes: stats
            .memory_limit_bytes
            .map(|l| l.saturating_sub(stats.memory_working_set_bytes)),
        rss_bytes: stats.memory_rss_bytes,
        page_faults: stats.page_faults,
        major_page_faults: stats.major_page_faults,
    }
}

// ---------------------------------------------------------------------------------------
// The node, from /proc

/// Busy CPU time of the `cpu` line of `/proc/stat` in clock ticks (user, nice, system, irq,
/// softirq, steal: everything but idle and iowait; guest time is inside user), and the boot
/// time (`btime`, seconds since the epoch).
pub fn parse_proc_stat(text: &str) -> Option<(u64, Option<i64>)> {
    let cpu = text.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = cpu.split_whitespace().skip(1).map(|f| f.parse().unwrap_or(0)).collect();
    let field = |i: usize| fields.get(i).copied().unwrap_or(0);
    let busy = field(0) + field(1) + field(2) + field(5) + field(6) + field(7);
    let btime =
        text.lines().find_map(|l| l.strip_prefix("btime ")).and_then(|v| v.trim().parse().ok());
    Some((busy, btime))
}

/// `/proc/meminfo` values (kB) in bytes, by key.
pub fn parse_meminfo(text: &str) -> HashMap<&str, u64> {
    text.lines()
        .filter_map(|l| {
            let (key, rest) = l.split_once(':')?;
            let kb: u64 = rest.split_whitespace().next()?.parse().ok()?;
            Some((key, kb * 1024))
        })
        .collect()
}

/// The node's memory as the kubelet reports it for the root cgroup: usage is everything
/// not free, the working set leaves out inactive file cache, available is what the working
/// set leaves of the total.
pub fn node_memory(meminfo: &HashMap<&str, u64>, vmstat: &str, at: DateTime<Utc>) -> Memory {
    let total = meminfo.get("MemTotal").copied().unwrap_or(0);
    let usage = total.saturating_sub(meminfo.get("MemFree").copied().unwrap_or(0));
    let working_set = usage.saturating_sub(meminfo.get("Inactive(file)").copied().unwrap_or(0));
    let vm: HashMap<&str, u64> = vmstat
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k, v.trim().parse().ok()?))
        })
        .collect();
    Memory {
        time: at,
        usage_bytes: usage,
        working_set_bytes: working_set,
        available_bytes: Some(total.saturating_sub(working_set)),
        rss_bytes: meminfo.get("AnonPages").copied(),
        page_faults: vm.get("pgfault").copied(),
        major_page_faults: vm.get("pgmajfault").copied(),
    }
}

/// Nanoseconds per clock tick of `/proc/stat`.
fn nanos_per_tick() -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1_000_000_000 / u64::try_from(hz).ok().filter(|h| *h > 0).unwrap_or(100)
}

fn read_fs(path: &Path, at: DateTime<Utc>) -> Option<Fs> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c_path = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes into the zeroed struct we own; the path is a valid C string.
    let stat = unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c_path.as_ptr(), &mut stat) != 0 {
            return None;
        }
        stat
    };
    let block = stat.f_frsize as u64;
    Some(Fs {
        time: at,
        capacity_bytes: stat.f_blocks as u64 * block,
        available_bytes: stat.f_bavail as u64 * block,
        used_bytes: (stat.f_blocks as u64).saturating_sub(stat.f_bfree as u64) * block,
        inodes: stat.f_files as u64,
        inodes_free: stat.f_ffree as u64,
    })
}

type NodeReading = (u64, Memory, Option<Fs>, Option<DateTime<Utc>>, DateTime<Utc>);

/// CPU nanoseconds, memory, filesystem, boot time, and when: None when /proc cannot be read.
fn read_node(root_dir: &Path) -> Option<NodeReading> {
    let at = Utc::now();
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let vmstat = std::fs::read_to_string("/proc/vmstat").unwrap_or_default();
    let (ticks, btime) = parse_proc_stat(&stat)?;
    let memory = node_memory(&parse_meminfo(&meminfo), &vmstat, at);
    let fs_path = if root_dir.exists() { root_dir } else { Path::new("/") };
    let boot = btime.and_then(|b| Utc.timestamp_opt(b, 0).single());
    Some((ticks.saturating_mul(nanos_per_tick()), memory, read_fs(fs_path, at), boot, at))
}

// ---------------------------------------------------------------------------------------
// The Summary API

fn time(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn cpu_json(cpu: &Cpu) -> Value {
    let mut out =
        json!({"time": time(&cpu.time), "usageCoreNanoSeconds": cpu.usage_core_nano_seconds});
    if let Some(rate) = cpu.usage_nano_cores {
        out["usageNanoCores"] = json!(rate);
    }
    out
}

fn memory_json(memory: &Memory) -> Value {
    let mut out = Map::new();
    out.insert("time".into(), json!(time(&memory.time)));
    let mut put = |key: &str, value: Option<u64>| {
        if let Some(v) = value {
            out.insert(key.into(), json!(v));
        }
    };
    put("availableBytes", memory.available_bytes);
    put("usageBytes", Some(memory.usage_bytes));
    put("workingSetBytes", Some(memory.working_set_bytes));
    put("rssBytes", memory.rss_bytes);
    put("pageFaults", memory.page_faults);
    put("majorPageFaults", memory.major_page_faults);
    Value::Object(out)
}

/// The Summary (`stats/v1alpha1`) of a sweep; `only_cpu_and_memory` leaves out the
/// filesystem, as upstream's parameter of that name.
pub fn summary_json(usage: &Usage, only_cpu_and_memory: bool) -> Value {
    let node = &usage.node;
    let mut node_json = json!({"nodeName": node.name});
    if let Some(start) = &node.start_time {
        node_json["startTime"] = json!(time(start));
    }
    if let Some(cpu) = &node.cpu {
        node_json["cpu"] = cpu_json(cpu);
    }
    if let Some(memory) = &node.memory {
        node_json["memory"] = memory_json(memory);
    }
    if let (Some(fs), false) = (&node.fs, only_cpu_and_memory) {
        node_json["fs"] = json!({
            "time": time(&fs.time),
            "availableBytes": fs.available_bytes,
            "capacityBytes": fs.capacity_bytes,
            "usedBytes": fs.used_bytes,
            "inodesFree": fs.inodes_free,
            "inodes": fs.inodes,
            "inodesUsed": fs.inodes.saturating_sub(fs.inodes_free),
        });
    }
    let pods: Vec<Value> = usage
        .pods
        .iter()
        .map(|pod| {
            let containers: Vec<Value> = pod
                .containers
                .iter()
                .map(|c| {
                    json!({
                        "name": c.name,
                        "startTime": time(&c.start_time),
                        "cpu": cpu_json(&c.cpu),
                        "memory": memory_json(&c.memory),
                    })
                })
                .collect();
            let mut out = json!({
                "podRef": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
                "containers": containers,
                "cpu": cpu_json(&pod.cpu),
                "memory": memory_json(&pod.memory),
            });
            if let Some(start) = &pod.start_time {
                out["startTime"] = json!(time(start));
            }
            out
        })
        .collect();
    json!({"node": node_json, "pods": pods})
}

// ---------------------------------------------------------------------------------------
// /metrics/resource

/// A float as Go's `strconv.FormatFloat(f, 'g', -1, 64)` writes it (the Prometheus text
/// format's way): shortest digits, exponent form from 1e+06 and below 1e-04.
pub fn go_float(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let sci = format!("{v:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{v}")
    }
}

fn escape_label(value: &str) -> String {
    value.replace('\\', r"\\").replace('"', "\\\"").replace('\n', r"\n")
}

/// One sample: its labels (sorted by name), value and timestamp (ms).
type Sample = (Vec<(&'static str, String)>, f64, Option<i64>);

struct Family {
    name: &'static str,
    help: &'static str,
    kind: &'static str,
    samples: Vec<Sample>,
}

/// A sweep in the Prometheus text format (0.0.4), with the metric names and labels of
/// upstream's resource metrics endpoint; families sorted by name, samples by labels.
pub fn prometheus_text(usage: &Usage) -> String {
    let family = |name, help, kind| Family { name, help, kind, samples: Vec::new() };
    let mut container_cpu = family(
        "container_cpu_usage_seconds_total",
        "[STABLE] CPU time the container has used since it started, in core-seconds",
        "counter",
    );
    let mut container_memory = family(
        "container_memory_working_set_bytes",
        "[STABLE] The container's memory working set (usage less inactive file cache), in bytes",
        "gauge",
    );
    let mut container_start = family(
        "container_start_time_seconds",
        "[STABLE] When the container started, in seconds since the Unix epoch",
        "gauge",
    );
    let mut node_cpu = family(
        "node_cpu_usage_seconds_total",
        "[STABLE] CPU time the node has used, in core-seconds",
        "counter",
    );
    let mut node_memory = family(
        "node_memory_working_set_bytes",
        "[STABLE] The node's memory working set, in bytes",
        "gauge",
    );
    let mut pod_cpu = family(
        "pod_cpu_usage_seconds_total",
        "[STABLE] CPU time the pod's containers have used, in core-seconds",
        "counter",
    );
    let mut pod_memory = family(
        "pod_memory_working_set_bytes",
        "[STABLE] The pod's memory working set, in bytes",
        "gauge",
    );
    let error = if usage.error { 1.0 } else { 0.0 };
    let mut resource_error = family(
        "resource_scrape_error",
        "[STABLE] 1 if the resource metrics could not all be read, else 0",
        "gauge",
    );
    resource_error.samples.push((Vec::new(), error, None));
    let mut scrape_error = family(
        "scrape_error",
        "[ALPHA] (Deprecated since 1.29.0) 1 if the resource metrics could not all be read, else 0",
        "gauge",
    );
    scrape_error.samples.push((Vec::new(), error, None));
    let ms = |t: &DateTime<Utc>| Some(t.timestamp_millis());
    let seconds = |ns: u64| ns as f64 / 1e9;
    if let Some(cpu) = &usage.node.cpu {
        node_cpu.samples.push((Vec::new(), seconds(cpu.usage_core_nano_seconds), ms(&cpu.time)));
    }
    if let Some(memory) = &usage.node.memory {
        node_memory.samples.push((Vec::new(), memory.working_set_bytes as f64, ms(&memory.time)));
    }
    for pod in &usage.pods {
        let pod_labels = vec![("namespace", pod.namespace.clone()), ("pod", pod.name.clone())];
        for c in &pod.containers {
            let labels = vec![
                ("container", c.name.clone()),
                ("namespace", pod.namespace.clone()),
                ("pod", pod.name.clone()),
            ];
            let started = c.start_time.timestamp_nanos_opt().unwrap_or(0) as f64 / 1e9;
            container_start.samples.push((labels.clone(), started, None));
            container_cpu.samples.push((
                labels.clone(),
                seconds(c.cpu.usage_core_nano_seconds),
                ms(&c.cpu.time),
            ));
            container_memory.samples.push((
                labels,
                c.memory.working_set_bytes as f64,
                ms(&c.memory.time),
            ));
        }
        pod_cpu.samples.push((
            pod_labels.clone(),
            seconds(pod.cpu.usage_core_nano_seconds),
            ms(&pod.cpu.time),
        ));
        pod_memory.samples.push((
            pod_labels,
            pod.memory.working_set_bytes as f64,
            ms(&pod.memory.time),
        ));
    }
    let mut families = [
        container_cpu,
        container_memory,
        container_start,
        node_cpu,
        node_memory,
        pod_cpu,
        pod_memory,
        resource_error,
        scrape_error,
    ];
    families.sort_by_key(|f| f.name);
    let mut out = String::new();
    for f in families.iter_mut().filter(|f| !f.samples.is_empty()) {
        f.samples.sort_by(|a, b| a.0.cmp(&b.0));
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
        for (labels, value, timestamp) in &f.samples {
            out.push_str(f.name);
            if !labels.is_empty() {
                let pairs: Vec<String> =
                    labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label(v))).collect();
                let _ = write!(out, "{{{}}}", pairs.join(","));
            }
            let _ = write!(out, " {}", go_float(*value));
            if let Some(t) = timestamp {
                let _ = write!(out, " {t}");
            }
            out.push('\n');
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Handlers

/// `GET /stats/summary`.
pub async fn summary(State(state): State<Arc<ServerState>>, RawQuery(query): RawQuery) -> Response {
    let only_cpu_and_memory = query
        .as_deref()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect::<Vec<_>>())
        .unwrap_or_default()
        .iter()
        .any(|(k, v)| k == "only_cpu_and_memory" && v == "true");
    let usage = state.stats.collect().await;
    let mut response = summary_json(&usage, only_cpu_and_memory).to_string().into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// `GET /metrics/resource`.
pub async fn resource_metrics(State(state): State<Arc<ServerState>>) -> Response {
    let usage = state.stats.collect().await;
    let mut response = (StatusCode::OK, prometheus_text(&usage)).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::ContainerRecord;

    fn at(seconds: f64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000, 0).unwrap()
            + chrono::Duration::nanoseconds((seconds * 1e9) as i64)
    }

    #[test]
    fn rates_need_two_readings_a_second_apart() {
        let mut rate = Rate::default();
        assert_eq!(rate.observe(CpuPoint { at: at(0.0), cpu_ns: 1_000_000_000 }), None);
        // Too close: no rate yet, and the reference stays.
        assert_eq!(rate.observe(CpuPoint { at: at(0.5), cpu_ns: 1_100_000_000 }), None);
        // Half a core over two seconds.
        assert_eq!(
            rate.observe(CpuPoint { at: at(2.0), cpu_ns: 2_000_000_000 }),
            Some(500_000_000)
        );
        // Close again: the last rate stands.
        assert_eq!(
            rate.observe(CpuPoint { at: at(2.1), cpu_ns: 2_900_000_000 }),
            Some(500_000_000)
        );
        // Two cores for ten seconds.
        assert_eq!(
            rate.observe(CpuPoint { at: at(12.0), cpu_ns: 22_000_000_000 }),
            Some(2_000_000_000)
        );
        // A counter going back is a new container: start over.
        assert_eq!(rate.observe(CpuPoint { at: at(13.0), cpu_ns: 5 }), None);
        assert_eq!(rate.nano_cores(), None);
        assert_eq!(rate.observe(CpuPoint { at: at(15.0), cpu_ns: 200_000_005 }), Some(100_000_000));
    }

    #[test]
    fn only_running_containers_keep_a_reading() {
        let mut rates = Rates::default();
        let point = |s: f64, ns: u64| CpuPoint { at: at(s), cpu_ns: ns };
        let first = rates.sweep([("a", point(0.0, 0)), ("b", point(0.0, 0))].into_iter(), true);
        assert_eq!(first, HashMap::from([("a".into(), None), ("b".into(), None)]));
        let second = rates.sweep([("a", point(10.0, 5_000_000_000))].into_iter(), true);
        assert_eq!(second, HashMap::from([("a".into(), Some(500_000_000))]));
        assert_eq!(rates.containers.len(), 1, "b is gone, and so is its reading");
        // A sweep that could not list the containers forgets nothing.
        rates.sweep(std::iter::empty(), false);
        assert_eq!(rates.containers.len(), 1);
        rates.sweep(std::iter::empty(), true);
        assert!(rates.containers.is_empty());
    }

    #[tokio::test]
    async fn a_runtime_without_stats_still_gives_the_node_and_stops_the_sampler() {
        use crate::runtime::sim::SimulatedRuntime;
        use crate::runtime::{PodRef, SandboxSpec};
        let runtime = Arc::new(SimulatedRuntime::new());
        runtime.ensure_network("n1", "10.42.9.0/24").await.unwrap();
        let sandbox = SandboxSpec {
            pod: PodRef { uid: "u1".into(), namespace: "default".into(), name: "p".into() },
            hostname: "p".into(),
            ..Default::default()
        };
        runtime.run_sandbox("n1", &sandbox).await.unwrap();
        let provider =
            Arc::new(StatsProvider::new(runtime, "n1", &std::env::temp_dir(), PodCache::default()));
        let usage = provider.collect().await;
        assert!(usage.pods.is_empty());
        assert_eq!(usage.node.name, "n1");
        assert!(usage.node.cpu.is_some() && usage.node.memory.is_some(), "{usage:?}");
        assert!(!usage.error);
        // The sampler gives up at once instead of asking every interval.
        tokio::time::timeout(Duration::from_secs(5), provider.run(Duration::from_secs(3600)))
            .await
            .expect("the sampler stops");
    }

    #[test]
    fn proc_files_give_node_cpu_and_memory() {
        let stat = "cpu  100 20 30 1000 50 5 6 7 40 0\ncpu0 50 10 15 500 25 2 3 3 20 0\nbtime 1700000000\n";
        let (busy, btime) = parse_proc_stat(stat).unwrap();
        assert_eq!(busy, 100 + 20 + 30 + 5 + 6 + 7, "idle, iowait and guest left out");
        assert_eq!(btime, Some(1_700_000_000));
        let meminfo = parse_meminfo(
            "MemTotal:       1000 kB\nMemFree:         200 kB\nInactive(file):  100 kB\nAnonPages:       300 kB\n",
        );
        let m = node_memory(&meminfo, "pgfault 10\npgmajfault 1\n", at(0.0));
        assert_eq!(m.usage_bytes, 800 * 1024);
        assert_eq!(m.working_set_bytes, 700 * 1024);
        assert_eq!(m.available_bytes, Some(300 * 1024));
        assert_eq!(m.rss_bytes, Some(300 * 1024));
        assert_eq!((m.page_faults, m.major_page_faults), (Some(10), Some(1)));
    }

    #[test]
    fn floats_are_written_as_go_writes_them() {
        assert_eq!(go_float(0.0), "0");
        assert_eq!(go_float(1.0), "1");
        assert_eq!(go_float(12.5), "12.5");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1234567.0), "1.234567e+06");
        assert_eq!(go_float(67108864.0), "6.7108864e+07");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001234), "1.234e-05");
        assert_eq!(go_float(1.7000000001234567e9), "1.7000000001234567e+09");
    }

    fn sample_usage() -> Usage {
        let t = at(10.0);
        let cpu = |ns: u64, rate: Option<u64>| Cpu {
            time: t,
            usage_core_nano_seconds: ns,
            usage_nano_cores: rate,
        };
        let memory = |ws: u64| Memory {
            time: t,
            usage_bytes: ws + 100,
            working_set_bytes: ws,
            available_bytes: None,
            rss_bytes: Some(ws / 2),
            page_faults: None,
            major_page_faults: None,
        };
        Usage {
            node: NodeUsage {
                name: "n1".into(),
                start_time: Some(at(-1000.0)),
                cpu: Some(cpu(5_500_000_000, Some(250_000_000))),
                memory: Some(memory(2_000_000_000)),
                fs: Some(Fs {
                    time: t,
                    capacity_bytes: 100,
                    available_bytes: 40,
                    used_bytes: 60,
                    inodes: 10,
                    inodes_free: 4,
                }),
            },
            pods: vec![PodUsage {
                name: "web".into(),
                namespace: "default".into(),
                uid: "u1".into(),
                start_time: Some(at(0.0)),
                containers: vec![
                    ContainerUsage {
                        name: "b".into(),
                        start_time: at(1.0),
                        cpu: cpu(1_000_000_000, None),
                        memory: memory(1024),
                    },
                    ContainerUsage {
                        name: "a".into(),
                        start_time: at(1.5),
                        cpu: cpu(2_500_000_000, Some(1_000)),
                        memory: memory(4096),
                    },
                ],
                cpu: cpu(3_600_000_000, None),
                memory: memory(6000),
            }],
            error: false,
        }
    }

    #[test]
    fn the_summary_has_upstreams_shape() {
        let summary = summary_json(&sample_usage(), false);
        let node = &summary["node"];
        assert_eq!(node["nodeName"], "n1");
        assert_eq!(node["cpu"]["usageNanoCores"], 250_000_000);
        assert_eq!(node["cpu"]["usageCoreNanoSeconds"], 5_500_000_000u64);
        assert_eq!(node["cpu"]["time"], "2023-11-14T22:13:30Z");
        assert_eq!(node["memory"]["workingSetBytes"], 2_000_000_000u64);
        assert_eq!(node["fs"]["inodesUsed"], 6);
        let pod = &summary["pods"][0];
        assert_eq!(pod["podRef"], json!({"name": "web", "namespace": "default", "uid": "u1"}));
        assert_eq!(pod["containers"][0]["name"], "b");
        // No rate yet: the field is left out, not zero.
        assert!(pod["containers"][0]["cpu"].get("usageNanoCores").is_none());
        assert!(pod["memory"].get("availableBytes").is_none());
        assert!(summary_json(&sample_usage(), true)["node"].get("fs").is_none());
    }

    #[test]
    fn resource_metrics_use_upstreams_names_labels_and_order() {
        let text = prometheus_text(&sample_usage());
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines,
            vec![
                r#"container_cpu_usage_seconds_total{container="a",namespace="default",pod="web"} 2.5 1700000010000"#,
                r#"container_cpu_usage_seconds_total{container="b",namespace="default",pod="web"} 1 1700000010000"#,
                r#"container_memory_working_set_bytes{container="a",namespace="default",pod="web"} 4096 1700000010000"#,
                r#"container_memory_working_set_bytes{container="b",namespace="default",pod="web"} 1024 1700000010000"#,
                r#"container_start_time_seconds{container="a",namespace="default",pod="web"} 1.7000000015e+09"#,
                r#"container_start_time_seconds{container="b",namespace="default",pod="web"} 1.700000001e+09"#,
                "node_cpu_usage_seconds_total 5.5 1700000010000",
                "node_memory_working_set_bytes 2e+09 1700000010000",
                r#"pod_cpu_usage_seconds_total{namespace="default",pod="web"} 3.6 1700000010000"#,
                r#"pod_memory_working_set_bytes{namespace="default",pod="web"} 6000 1700000010000"#,
                "resource_scrape_error 0",
                "scrape_error 0",
            ]
        );
        assert!(text.contains("# TYPE container_cpu_usage_seconds_total counter\n"));
        assert!(text.contains("# TYPE node_memory_working_set_bytes gauge\n"));
        // Without pods, their families are left out entirely.
        let empty = prometheus_text(&Usage { error: true, ..Default::default() });
        assert!(!empty.contains("container_"), "{empty}");
        assert!(empty.contains("\nresource_scrape_error 1\n"));
        assert_eq!(escape_label("a\"b\\c\nd"), r#"a\"b\\c\nd"#);
    }

    fn record(
        id: &str,
        pod: &str,
        container: &str,
        attempt: u32,
        sandbox: bool,
    ) -> ContainerRecord {
        ContainerRecord {
            id: id.into(),
            labels: HashMap::from([
                (labels::POD_UID.to_string(), format!("uid-{pod}")),
                (labels::POD_NAME.to_string(), pod.to_string()),
                (labels::POD_NAMESPACE.to_string(), "ns".to_string()),
                (labels::CONTAINER_NAME.to_string(), container.to_string()),
                (labels::ATTEMPT.to_string(), attempt.to_string()),
                (
                    labels::TYPE.to_string(),
                    if sandbox { "podsandbox" } else { "container" }.to_string(),
                ),
            ]),
            state: ContainerState::Running { started_at: at(0.0) },
            image: String::new(),
            image_id: String::new(),
        }
    }

    fn stats(cpu_ns: u64, ws: u64) -> ContainerStats {
        ContainerStats {
            timestamp: at(5.0),
            cpu_usage_ns: cpu_ns,
            memory_usage_bytes: ws * 2,
            memory_working_set_bytes: ws,
            memory_rss_bytes: Some(ws),
            memory_limit_bytes: Some(ws * 4),
            page_faults: None,
            major_page_faults: None,
        }
    }

    #[test]
    fn pods_total_their_containers_and_sandbox() {
        let sandbox = record("s", "web", "", 0, true);
        let old = record("c0", "web", "app", 0, false);
        let new = record("c1", "web", "app", 1, false);
        let side = record("d", "web", "side", 0, false);
        let measured = vec![
            (&sandbox, stats(10, 1)),
            (&old, stats(100, 10)),
            (&new, stats(1000, 100)),
            (&side, stats(10000, 1000)),
        ];
        let cpu_of = HashMap::from([
            ("s".to_string(), Some(1)),
            ("c0".to_string(), Some(2)),
            ("c1".to_string(), Some(3)),
            ("d".to_string(), Some(4)),
        ]);
        let pods = pods_of(&measured, &cpu_of, &PodCache::default());
        assert_eq!(pods.len(), 1);
        let pod = &pods[0];
        assert_eq!(
            (pod.name.as_str(), pod.namespace.as_str(), pod.uid.as_str()),
            ("web", "ns", "uid-web")
        );
        let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["app", "side"]);
        assert_eq!(pod.containers[0].cpu.usage_core_nano_seconds, 1000, "the newest attempt");
        assert_eq!(pod.containers[0].memory.available_bytes, Some(300));
        assert_eq!(pod.cpu.usage_core_nano_seconds, 11110);
        assert_eq!(pod.cpu.usage_nano_cores, Some(10));
        assert_eq!(pod.memory.working_set_bytes, 1111);
        assert_eq!(pod.start_time, Some(at(0.0)), "the sandbox's start without a pod status");
        // One container without a rate: the pod has none either.
        let cpu_of = HashMap::from([("s".to_string(), None)]);
        assert_eq!(pods_of(&measured, &cpu_of, &PodCache::default())[0].cpu.usage_nano_cores, None);
    }
}
