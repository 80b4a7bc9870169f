//! The Node object: registration, the status the kubelet reports (capacity, allocatable,
//! conditions, addresses, node info, images), and the heartbeat Lease in `kube-node-lease`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::{json, Value};

use crate::runtime::Runtime;
use crate::Config;

/// Upstream's default hard eviction thresholds (`--eviction-hard`): what is kept back from
/// allocatable, and below which the node reports pressure.
/// One hard-eviction threshold: an amount, or a share of the signal's capacity, as upstream's
/// `--eviction-hard` takes either (`memory.available<100Mi`, `nodefs.available<10%`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Threshold {
    Bytes(u64),
    Percent(u64),
}

impl Threshold {
    fn parse(signal: &str, value: &str) -> Result<Threshold, String> {
        if let Some(percent) = value.strip_suffix('%') {
            return percent
                .parse::<u64>()
                .ok()
                .filter(|v| *v <= 100)
                .map(Threshold::Percent)
                .ok_or_else(|| format!("invalid percentage {value:?} for {signal}"));
        }
        rkube_apis::quantity::parse_units(value)
            .filter(|v| *v >= 0)
            .map(|v| Threshold::Bytes(v as u64))
            .ok_or_else(|| format!("invalid quantity {value:?} for {signal}"))
    }

    /// The threshold in bytes for a signal whose capacity is `capacity` bytes.
    pub fn bytes_of(self, capacity: u64) -> u64 {
        match self {
            Threshold::Bytes(bytes) => bytes.min(capacity),
            Threshold::Percent(percent) => {
                capacity / 100 * percent + capacity % 100 * percent / 100
            }
        }
    }
}

/// The kubelet's hard-eviction thresholds: below them a node reports memory or disk pressure
/// (and is tainted for it), and they are held back from its allocatable.
#[derive(Clone, Debug, PartialEq)]
pub struct EvictionThresholds {
    /// `memory.available<100Mi`.
    pub memory: Threshold,
    /// `nodefs.available<10%`.
    pub nodefs: Threshold,
}

impl Default for EvictionThresholds {
    fn default() -> Self {
        EvictionThresholds {
            memory: Threshold::Bytes(100 * 1024 * 1024),
            nodefs: Threshold::Percent(10),
        }
    }
}

impl EvictionThresholds {
    /// Parses `--eviction-hard` (`memory.available<100Mi,nodefs.available<10%`); each value is
    /// a quantity or a percentage, and signals not named keep their defaults.
    pub fn parse(text: &str) -> Result<EvictionThresholds, String> {
        let mut out = EvictionThresholds::default();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (signal, value) = entry.split_once('<').ok_or_else(|| {
                format!("invalid eviction threshold {entry:?} (e.g. nodefs.available<10%)")
            })?;
            match signal {
                "memory.available" => out.memory = Threshold::parse(signal, value)?,
                "nodefs.available" => out.nodefs = Threshold::parse(signal, value)?,
                other => return Err(format!("unsupported eviction signal {other:?}")),
            }
        }
        Ok(out)
    }
}

const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
const LEASE_DURATION_SECONDS: i32 = 40;

/// What this machine has, read from /proc and the filesystem.
#[derive(Clone, Debug, Default)]
pub struct Machine {
    pub cpus: usize,
    pub memory_bytes: u64,
    pub memory_available_bytes: u64,
    pub disk_bytes: u64,
    pub disk_available_bytes: u64,
    pub machine_id: String,
    pub boot_id: String,
    pub kernel: String,
    pub os_image: String,
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default()
}

fn meminfo(field: &str) -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()))
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

fn statvfs(path: &std::path::Path) -> (u64, u64) {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else { return (0, 0) };
    // SAFETY: statvfs writes into the zeroed struct we own; the path is a valid C string.
    let stat = unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c_path.as_ptr(), &mut stat) != 0 {
            return (0, 0);
        }
        stat
    };
    let block = stat.f_frsize as u64;
    (stat.f_blocks as u64 * block, stat.f_bavail as u64 * block)
}

impl Machine {
    pub fn read(root_dir: &std::path::Path) -> Machine {
        let os_image = std::fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|text| {
                text.lines().find_map(|l| {
                    l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_string())
                })
            })
            .unwrap_or_else(|| "Linux".into());
        let disk_path = if root_dir.exists() { root_dir } else { std::path::Path::new("/") };
        let (disk_bytes, disk_available_bytes) = statvfs(disk_path);
        Machine {
            cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            memory_bytes: meminfo("MemTotal:"),
            memory_available_bytes: meminfo("MemAvailable:"),
            disk_bytes,
            disk_available_bytes,
            machine_id: read_trimmed("/etc/machine-id"),
            boot_id: read_trimmed("/proc/sys/kernel/random/boot_id"),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            os_image,
        }
    }
}

fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// The labels a kubelet puts on its node.
pub fn node_labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("kubernetes.io/hostname".to_string(), name.to_string()),
        ("kubernetes.io/os".to_string(), "linux".to_string()),
        ("kubernetes.io/arch".to_string(), arch().to_string()),
        ("beta.kubernetes.io/os".to_string(), "linux".to_string()),
        ("beta.kubernetes.io/arch".to_string(), arch().to_string()),
    ])
}

/// A condition, keeping its lastTransitionTime while its status does not change.
fn condition(
    previous: Option<&Value>,
    kind: &str,
    status: bool,
    reason: &str,
    message: &str,
) -> Value {
    let status = if status { "True" } else { "False" };
    let now = now();
    let transition = previous
        .and_then(|conditions| conditions.as_array())
        .and_then(|list| list.iter().find(|c| c["type"] == kind))
        .filter(|c| c["status"] == status)
        .and_then(|c| c["lastTransitionTime"].as_str().map(str::to_string))
        .unwrap_or_else(|| now.clone());
    json!({
        "type": kind,
        "status": status,
        "lastHeartbeatTime": now,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    })
}

/// The node status the kubelet reports now.
pub fn status(
    config: &Config,
    machine: &Machine,
    runtime_version: &str,
    images: &[crate::runtime::ImageRecord],
    previous_conditions: Option<&Value>,
    network_ready: bool,
) -> Value {
    let eviction = &config.eviction;
    let memory_kib = machine.memory_bytes / 1024;
    let memory_threshold = eviction.memory.bytes_of(machine.memory_bytes);
    let allocatable_memory_kib = machine.memory_bytes.saturating_sub(memory_threshold) / 1024;
    let disk = machine.disk_bytes;
    let disk_threshold = eviction.nodefs.bytes_of(disk);
    let allocatable_disk = disk - disk_threshold;
    let capacity = json!({
        "cpu": machine.cpus.to_string(),
        "memory": format!("{memory_kib}Ki"),
        "ephemeral-storage": format!("{}Ki", disk / 1024),
        "pods": config.max_pods.to_string(),
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    });
    let allocatable = json!({
        "cpu": machine.cpus.to_string(),
        "memory": format!("{allocatable_memory_kib}Ki"),
        "ephemeral-storage": allocatable_disk.to_string(),
        "pods": config.max_pods.to_string(),
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    });
    let memory_pressure =
        machine.memory_available_bytes > 0 && machine.memory_available_bytes < memory_threshold;
    let disk_pressure = machine.disk_bytes > 0 && machine.disk_available_bytes < disk_threshold;
    let conditions = vec![
        if memory_pressure {
            condition(
                previous_conditions,
                "MemoryPressure",
                true,
                "KubeletHasInsufficientMemory",
                "kubelet has insufficient memory available",
            )
        } else {
            condition(
                previous_conditions,
                "MemoryPressure",
                false,
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            )
        },
        if disk_pressure {
            condition(
                previous_conditions,
                "DiskPressure",
                true,
                "KubeletHasDiskPressure",
                "kubelet has disk pressure",
            )
        } else {
            condition(
                previous_conditions,
                "DiskPressure",
                false,
                "KubeletHasNoDiskPressure",
                "kubelet has no disk pressure",
            )
        },
        condition(
            previous_conditions,
            "PIDPressure",
            false,
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
        if network_ready {
            condition(
                previous_conditions,
                "Ready",
                true,
                "KubeletReady",
                "kubelet is posting ready status",
            )
        } else {
            // As upstream's kubelet before its CNI plugin is configured.
            condition(
                previous_conditions,
                "Ready",
                false,
                "KubeletNotReady",
                "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:the node has no pod network yet (waiting for its podCIDR)",
            )
        },
    ];
    let mut images: Vec<&crate::runtime::ImageRecord> =
        images.iter().filter(|i| !i.names.is_empty() && i.names[0] != "<none>:<none>").collect();
    // Upstream reports the 50 largest.
    images.sort_by_key(|i| std::cmp::Reverse(i.size));
    images.truncate(50);
    let images: Vec<Value> =
        images.iter().map(|i| json!({"names": i.names, "sizeBytes": i.size})).collect();
    json!({
        "capacity": capacity,
        "allocatable": allocatable,
        "conditions": conditions,
        "addresses": [
            {"type": "InternalIP", "address": config.node_ip.to_string()},
            {"type": "Hostname", "address": config.node_name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": config.port}},
        "nodeInfo": {
            "machineID": machine.machine_id,
            "systemUUID": machine.machine_id,
            "bootID": machine.boot_id,
            "kernelVersion": machine.kernel,
            "osImage": machine.os_image,
            "containerRuntimeVersion": runtime_version,
            "kubeletVersion": crate::KUBELET_VERSION,
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": arch(),
        },
        "images": images,
    })
}

/// Creates the Node (or takes over the one that exists), then reports its status.
pub async fn register(
    client: &Client,
    config: &Config,
    runtime: &dyn Runtime,
) -> crate::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": config.node_name,
            "labels": node_labels(&config.node_name),
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": config.pod_cidr.as_ref().map(|c| json!({"podCIDR": c, "podCIDRs": [c]})).unwrap_or(json!({})),
    }))?;
    match nodes.create(&PostParams::default(), &node).await {
        Ok(_) => tracing::info!(node = config.node_name, "registered the node"),
        Err(kube::Error::Api(e)) if e.code == 409 => {
            // Registered before: keep the object, refresh the labels.
            let patch = json!({"metadata": {"labels": node_labels(&config.node_name)}});
            nodes.patch(&config.node_name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        }
        Err(e) => return Err(e.into()),
    }
    report_status(client, config, runtime, false).await
}

/// Writes the node's status (through `nodes/{name}/status`); the node is Ready once its pod
/// network is.
pub async fn report_status(
    client: &Client,
    config: &Config,
    runtime: &dyn Runtime,
    network_ready: bool,
) -> crate::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let current = nodes.get(&config.node_name).await?;
    let previous = current
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|c| serde_json::to_value(c).unwrap_or_default());
    let machine = Machine::read(&config.root_dir);
    let version = runtime.version().await.unwrap_or_default();
    let images = runtime.images().await.unwrap_or_default();
    let status = status(config, &machine, &version, &images, previous.as_ref(), network_ready);
    let patch = json!({"status": status});
    nodes.patch_status(&config.node_name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

fn micro_now() -> MicroTime {
    let micros = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_micros();
    MicroTime(
        k8s_openapi::jiff::Timestamp::from_microsecond(micros as i64)
            .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
    )
}

/// Creates or renews the node's Lease: the heartbeat the node lifecycle controller watches.
pub async fn renew_lease(client: &Client, config: &Config) -> crate::Result<()> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), NODE_LEASE_NAMESPACE);
    match leases.get_opt(&config.node_name).await? {
        Some(mut lease) => {
            let spec = lease.spec.get_or_insert_with(Default::default);
            spec.renew_time = Some(micro_now());
            spec.holder_identity = Some(config.node_name.clone());
            spec.lease_duration_seconds = Some(LEASE_DURATION_SECONDS);
            leases.replace(&config.node_name, &PostParams::default(), &lease).await?;
        }
        None => {
            let nodes: Api<Node> = Api::all(client.clone());
            let uid = nodes.get(&config.node_name).await?.metadata.uid;
            let lease: Lease = serde_json::from_value(json!({
                "metadata": {
                    "name": config.node_name,
                    "namespace": NODE_LEASE_NAMESPACE,
                    "ownerReferences": [{
                        "apiVersion": "v1", "kind": "Node", "name": config.node_name, "uid": uid,
                    }],
                },
                "spec": {
                    "holderIdentity": config.node_name,
                    "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                    "renewTime": micro_now(),
                },
            }))?;
            leases.create(&PostParams::default(), &lease).await?;
        }
    }
    Ok(())
}

/// Waits until the node has a pod CIDR (given by the node IPAM controller, or by the flag).
pub async fn wait_for_pod_cidr(client: &Client, config: &Config) -> String {
    if let Some(cidr) = &config.pod_cidr {
        return cidr.clone();
    }
    let nodes: Api<Node> = Api::all(client.clone());
    let mut said = false;
    loop {
        if let Ok(node) = nodes.get(&config.node_name).await {
            if let Some(cidr) = node.spec.and_then(|s| s.pod_cidr).filter(|c| !c.is_empty()) {
                return cidr;
            }
        }
        if !said {
            tracing::info!(node = config.node_name, "waiting for the node's podCIDR");
            said = true;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Renews the Lease every 10 s and reports the status every `status_update_frequency`, and
/// at once when the pod network becomes ready, for ever.
pub async fn heartbeat(
    client: Client,
    config: Arc<Config>,
    runtime: Arc<dyn Runtime>,
    mut network_ready: tokio::sync::watch::Receiver<bool>,
) {
    let mut lease = tokio::time::interval(Duration::from_secs(10));
    let mut status = tokio::time::interval(config.status_update_frequency);
    loop {
        tokio::select! {
            Ok(()) = network_ready.changed() => status.reset_immediately(),
            _ = lease.tick() => {
                if let Err(e) = renew_lease(&client, &config).await {
                    tracing::warn!(error = %e, "cannot renew the node lease");
                }
            }
            _ = status.tick() => {
                let ready = *network_ready.borrow();
                if let Err(e) = report_status(&client, &config, runtime.as_ref(), ready).await {
                    tracing::warn!(error = %e, "cannot update the node status");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_reports_capacity_allocatable_and_ready() {
        let config = Config::for_tests("n1");
        let machine = Machine {
            cpus: 2,
            memory_bytes: 4 * 1024 * 1024 * 1024,
            memory_available_bytes: 2 * 1024 * 1024 * 1024,
            disk_bytes: 100 * 1024 * 1024 * 1024,
            disk_available_bytes: 50 * 1024 * 1024 * 1024,
            ..Default::default()
        };
        let s = status(&config, &machine, "docker://20.10.24", &[], None, true);
        assert_eq!(s["capacity"]["cpu"], "2");
        assert_eq!(s["capacity"]["memory"], "4194304Ki");
        assert_eq!(s["allocatable"]["memory"], format!("{}Ki", 4194304 - 102400));
        assert_eq!(s["capacity"]["pods"], "110");
        let ready =
            s["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").unwrap();
        assert_eq!(ready["status"], "True");
        assert_eq!(ready["reason"], "KubeletReady");
        assert_eq!(s["nodeInfo"]["containerRuntimeVersion"], "docker://20.10.24");
        assert_eq!(s["daemonEndpoints"]["kubeletEndpoint"]["Port"], config.port);

        // Without its pod network the node is not ready, with upstream's reason.
        let s = status(&config, &machine, "docker://20.10.24", &[], None, false);
        let ready =
            s["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").unwrap();
        assert_eq!(
            (ready["status"].as_str(), ready["reason"].as_str()),
            (Some("False"), Some("KubeletNotReady"))
        );
        assert!(ready["message"]
            .as_str()
            .unwrap()
            .starts_with("container runtime network not ready"));
    }

    #[test]
    fn conditions_keep_their_transition_time_while_unchanged() {
        let previous = json!([{"type": "Ready", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}]);
        let kept = condition(Some(&previous), "Ready", true, "KubeletReady", "m");
        assert_eq!(kept["lastTransitionTime"], "2020-01-01T00:00:00Z");
        let changed = condition(Some(&previous), "Ready", false, "KubeletNotReady", "m");
        assert_ne!(changed["lastTransitionTime"], "2020-01-01T00:00:00Z");
    }

    #[test]
    fn eviction_thresholds_parse_as_upstream_flags() {
        let t = EvictionThresholds::parse("memory.available<200Mi,nodefs.available<5%").unwrap();
        assert_eq!(
            t,
            EvictionThresholds {
                memory: Threshold::Bytes(200 << 20),
                nodefs: Threshold::Percent(5)
            }
        );
        let t = EvictionThresholds::parse("memory.available<5%,nodefs.available<1Gi").unwrap();
        assert_eq!(t.memory.bytes_of(1000), 50);
        assert_eq!(t.nodefs.bytes_of(10 << 30), 1 << 30);
        assert_eq!(Threshold::Percent(10).bytes_of(u64::MAX), u64::MAX / 10);
        assert!(EvictionThresholds::parse("nodefs.available<101%").is_err());
        assert!(EvictionThresholds::parse("memory.available<-1Mi").is_err());
        assert_eq!(EvictionThresholds::parse("").unwrap(), EvictionThresholds::default());
        assert!(EvictionThresholds::parse("nodefs.available<five").is_err());
        assert!(EvictionThresholds::parse("imagefs.inodesFree<5%").is_err());
    }

    #[test]
    fn memory_pressure_below_the_eviction_threshold() {
        let config = Config::for_tests("n1");
        let machine = Machine {
            cpus: 1,
            memory_bytes: 1 << 30,
            memory_available_bytes: 50 << 20,
            ..Default::default()
        };
        let s = status(&config, &machine, "", &[], None, true);
        let c = s["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "MemoryPressure")
            .unwrap();
        assert_eq!(c["status"], "True");
    }
}
