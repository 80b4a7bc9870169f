//! The container runtime as the kubelet sees it: sandboxes (the container holding a pod's
//! network and IPC namespaces) and containers that join them, images, logs. One trait, so
//! the pod logic above it does not know whether Docker or the simulated runtime is below.
//!
//! Every container the kubelet makes carries labels naming its node, pod and container, and
//! the attempt number, so that a restarted kubelet rebuilds its view from the runtime alone
//! ([`Runtime::list`]).

pub mod cgroups;
pub mod docker;
pub mod pause;
pub mod podnet;
pub mod sim;

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;

/// Label keys, as dockershim wrote them (so `docker ps` reads the same as on a kubelet).
pub mod labels {
    pub const NODE: &str = "io.rkube.node";
    pub const POD_UID: &str = "io.kubernetes.pod.uid";
    pub const POD_NAME: &str = "io.kubernetes.pod.name";
    pub const POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
    pub const CONTAINER_NAME: &str = "io.kubernetes.container.name";
    pub const ATTEMPT: &str = "io.kubernetes.container.restartCount";
    /// `podsandbox` or `container`.
    pub const TYPE: &str = "io.kubernetes.docker.type";
    /// `init` for init containers.
    pub const KIND: &str = "io.rkube.container.kind";
    pub const TERMINATION_MESSAGE_PATH: &str = "io.kubernetes.container.terminationMessagePath";
    /// A sandbox's address on the pod network.
    pub const POD_IP: &str = "io.rkube.pod-ip";
    /// A sandbox's hostPorts, as [`super::HostPort::encode_all`] writes them.
    pub const HOST_PORTS: &str = "io.rkube.host-ports";
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("image {0:?} not found")]
    ImageNotFound(String),
    #[error("{0}")]
    Other(String),
    /// The runtime cannot do this at all (e.g. resource stats of the simulated runtime).
    #[error("{0}")]
    Unsupported(String),
}

pub type Result<T> = std::result::Result<T, RuntimeError>;

/// Which pod a container belongs to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PodRef {
    pub uid: String,
    pub namespace: String,
    pub name: String,
}

/// What the kubelet asks of a pod sandbox.
#[derive(Clone, Debug, Default)]
pub struct SandboxSpec {
    pub pod: PodRef,
    pub attempt: u32,
    pub hostname: String,
    pub host_network: bool,
    pub share_pid: bool,
    pub host_ports: Vec<HostPort>,
    pub dns_servers: Vec<String>,
    pub dns_searches: Vec<String>,
    pub dns_options: Vec<String>,
    pub extra_hosts: Vec<String>,
    /// The pod's `securityContext.sysctls`, set in the sandbox's namespaces (which its
    /// containers join).
    pub sysctls: Vec<(String, String)>,
}

/// A container port published on the node (`hostPort`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostPort {
    /// `tcp`, `udp` or `sctp`.
    pub protocol: String,
    pub container_port: u16,
    /// Empty for every address of the node.
    pub host_ip: String,
    pub host_port: u16,
}

impl HostPort {
    /// `tcp/80/0.0.0.0/8080,...`: how a sandbox's label keeps them.
    pub fn encode_all(ports: &[HostPort]) -> String {
        let each = ports
            .iter()
            .map(|p| format!("{}/{}/{}/{}", p.protocol, p.container_port, p.host_ip, p.host_port));
        each.collect::<Vec<_>>().join(",")
    }

    pub fn decode_all(text: &str) -> Vec<HostPort> {
        let decode = |one: &str| {
            let mut parts = one.split('/');
            let protocol = parts.next()?.to_string();
            let container_port = parts.next()?.parse().ok()?;
            let host_ip = parts.next()?.to_string();
            let host_port = parts.next()?.parse().ok()?;
            Some(HostPort { protocol, container_port, host_ip, host_port })
        };
        text.split(',').filter_map(decode).collect()
    }
}

/// What the kubelet asks of one container.
#[derive(Clone, Debug, Default)]
pub struct ContainerSpec {
    pub pod: Option<PodRef>,
    pub name: String,
    pub attempt: u32,
    pub init: bool,
    pub image: String,
    pub entrypoint: Option<Vec<String>>,
    pub cmd: Option<Vec<String>>,
    pub env: Vec<(String, String)>,
    pub working_dir: Option<String>,
    pub tty: bool,
    pub stdin: bool,
    pub stdin_once: bool,
    /// `host path:container path[:ro]` bind mounts.
    pub binds: Vec<String>,
    /// tmpfs mounts (emptyDir with medium Memory): container path.
    pub tmpfs: Vec<String>,
    pub user: Option<String>,
    /// Supplementary groups: the pod's `supplementalGroups` and `fsGroup`.
    pub groups: Vec<String>,
    pub privileged: bool,
    /// `allowPrivilegeEscalation: false`: the process may not gain privileges (setuid
    /// binaries, file capabilities), the kernel's no_new_privs.
    pub no_new_privileges: bool,
    pub read_only_rootfs: bool,
    pub cap_add: Vec<String>,
    pub cap_drop: Vec<String>,
    /// cpu shares (1024 per cpu requested, minimum 2), cpu quota in µs per 100ms period.
    pub cpu_shares: Option<i64>,
    pub cpu_quota: Option<i64>,
    pub memory_limit: Option<i64>,
    pub termination_message_path: Option<String>,
    /// The container whose process namespace this one joins (an ephemeral container's
    /// target: upstream's NamespaceMode_TARGET); otherwise its own, or the pod's.
    pub pid_target: Option<String>,
}

/// A container (or sandbox) as the runtime reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct ContainerRecord {
    pub id: String,
    pub labels: HashMap<String, String>,
    pub state: ContainerState,
    pub image: String,
    pub image_id: String,
}

impl ContainerRecord {
    pub fn label(&self, key: &str) -> &str {
        self.labels.get(key).map(String::as_str).unwrap_or("")
    }

    pub fn attempt(&self) -> u32 {
        self.label(labels::ATTEMPT).parse().unwrap_or(0)
    }

    pub fn is_sandbox(&self) -> bool {
        self.label(labels::TYPE) == "podsandbox"
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ContainerState {
    /// Made but never started.
    Created,
    Running {
        started_at: DateTime<Utc>,
    },
    Exited {
        exit_code: i64,
        started_at: Option<DateTime<Utc>>,
        finished_at: DateTime<Utc>,
        oom_killed: bool,
        error: String,
    },
}

/// Which part of a container's log to read.
#[derive(Clone, Debug, Default)]
pub struct LogOptions {
    pub follow: bool,
    pub tail_lines: Option<i64>,
    pub since: Option<DateTime<Utc>>,
    pub timestamps: bool,
}

/// An image the runtime holds.
#[derive(Clone, Debug)]
pub struct ImageRecord {
    pub id: String,
    pub names: Vec<String>,
    pub size: i64,
}

/// A container's resource usage at one moment, as its cgroup accounts it: CPU time is
/// cumulative since the container started, memory is current.
#[derive(Clone, Debug, PartialEq)]
pub struct ContainerStats {
    /// When it was read.
    pub timestamp: DateTime<Utc>,
    /// CPU time used on all cores, in nanoseconds.
    pub cpu_usage_ns: u64,
    /// All memory charged to the container, page cache included.
    pub memory_usage_bytes: u64,
    /// The usage less inactive file cache: what `kubectl top` shows and eviction goes by.
    pub memory_working_set_bytes: u64,
    /// Anonymous memory (and swap cache), when the runtime knows it.
    pub memory_rss_bytes: Option<u64>,
    /// The memory limit, None when unlimited.
    pub memory_limit_bytes: Option<u64>,
    pub page_faults: Option<u64>,
    pub major_page_faults: Option<u64>,
}

/// Registry credentials from an imagePullSecret.
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    pub username: Option<String>,
    pub password: Option<String>,
    pub auth: Option<String>,
    pub server: Option<String>,
}

/// An exec (or attach) session: its input and output streams.
pub struct ExecSession {
    /// The exec id (for an attach, the container id).
    pub id: String,
    /// Chunks of output with their stream: 1 stdout (everything with a TTY), 2 stderr.
    pub output: BoxStream<'static, Result<(u8, Bytes)>>,
    pub input: std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
}

#[async_trait]
pub trait Runtime: Send + Sync {
    /// `docker://20.10.24`, as `nodeInfo.containerRuntimeVersion`.
    async fn version(&self) -> Result<String>;
    /// Whether containers really run processes. The simulated runtime's do not: probes and
    /// hooks then count as succeeding without running (nothing is sent to made-up pod IPs).
    fn runs_processes(&self) -> bool {
        true
    }
    /// Makes sure the pod network for `cidr` exists (idempotent).
    async fn ensure_network(&self, node: &str, cidr: &str) -> Result<()>;
    /// Every container and sandbox of this node (of one pod, given its uid), running or not.
    async fn list(&self, node: &str, pod_uid: Option<&str>) -> Result<Vec<ContainerRecord>>;
    /// The uids of pods whose containers start, stop or go, as it happens. After an event,
    /// [`Runtime::list`] shows what it changed. The stream ends when the runtime's event
    /// source breaks (the engine restarted): the caller asks for a new one, and relists for
    /// what it missed meanwhile ([`crate::pods::pleg`]).
    fn container_events(&self, node: &str) -> BoxStream<'static, String>;
    async fn inspect(&self, id: &str) -> Result<ContainerRecord>;
    /// Starts a sandbox; returns its id and pod IP (empty with host networking).
    async fn run_sandbox(&self, node: &str, spec: &SandboxSpec) -> Result<(String, String)>;
    /// The IP of a running sandbox.
    async fn sandbox_ip(&self, id: &str) -> Result<String>;
    async fn create_container(
        &self,
        node: &str,
        sandbox_id: &str,
        share_pid: bool,
        spec: &ContainerSpec,
    ) -> Result<String>;
    async fn start_container(&self, id: &str) -> Result<()>;
    /// SIGTERM, then SIGKILL after `grace`.
    async fn stop_container(&self, id: &str, grace: Duration) -> Result<()>;
    async fn remove_container(&self, id: &str) -> Result<()>;
    async fn image_present(&self, image: &str) -> Result<bool>;
    async fn pull_image(&self, image: &str, credentials: Option<Credentials>) -> Result<()>;
    async fn images(&self) -> Result<Vec<ImageRecord>>;
    fn logs(&self, id: &str, options: LogOptions) -> BoxStream<'static, Result<Bytes>>;
    /// Runs a command in a container; the caller drives the session.
    async fn exec(
        &self,
        id: &str,
        command: Vec<String>,
        tty: bool,
        stdin: bool,
    ) -> Result<ExecSession>;
    /// The exit code of a finished exec session.
    async fn exec_exit_code(&self, exec_id: &str) -> Result<Option<i64>>;
    async fn resize_exec(&self, exec_id: &str, width: u16, height: u16) -> Result<()>;
    /// Attaches to a container's main process: its output from now on, and its stdin when
    /// asked for and the container keeps it open. The output ends when the process does.
    async fn attach(&self, id: &str, stdin: bool) -> Result<ExecSession>;
    /// Resizes the TTY of a container's main process.
    async fn resize_container(&self, id: &str, width: u16, height: u16) -> Result<()>;
    /// The current CPU and memory usage of a running container (the kubelet's stats API,
    /// `kubectl top`). Runtimes without it answer [`RuntimeError::Unsupported`].
    async fn container_stats(&self, id: &str) -> Result<ContainerStats> {
        Err(RuntimeError::Unsupported(format!(
            "container stats are not supported by this runtime (container {id})"
        )))
    }
    /// A TCP connection to `port` on the loopback address inside the sandbox's network
    /// namespace (`kubectl port-forward`): what a server in the pod listening on 127.0.0.1
    /// accepts.
    async fn port_forward(&self, sandbox_id: &str, port: u16) -> Result<tokio::net::TcpStream> {
        let _ = (sandbox_id, port);
        Err(RuntimeError::Other("port forwarding is not supported by this runtime".into()))
    }
}
