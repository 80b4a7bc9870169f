//! The Docker runtime, through bollard: sandboxes are containers of the kubelet's pause
//! image, started without a Docker network and then given their address on the node's pod
//! network ([`super::podnet`]); a pod's containers join the sandbox's network and IPC (and
//! with `shareProcessNamespace`, PID) namespaces.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptions, CreateImageOptions, ListContainersOptions, ListImagesOptions,
    LogsOptions, RemoveContainerOptions, StopContainerOptions,
};
use bollard::Docker;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};

use super::cgroups::CgroupPaths;
use super::podnet::PodNetwork;
use super::{
    labels, pause, ContainerRecord, ContainerSpec, ContainerState, ContainerStats, Credentials,
    ExecSession, HostPort, ImageRecord, LogOptions, Result, Runtime, RuntimeError, SandboxSpec,
};

pub struct DockerRuntime {
    docker: Docker,
    /// Where each container's cgroup is, found once per container (its stats are read
    /// from there).
    cgroups: std::sync::Mutex<HashMap<String, CgroupPaths>>,
    /// What inspecting each container said, with the state Docker's list showed for it then.
    /// The kubelet never restarts a container in place, so an inspect stays true until the
    /// list shows another state or an event says the container changed: pods whose
    /// containers did not change are synced with one list call and no inspects.
    inspected: Arc<std::sync::Mutex<InspectCache>>,
    /// Containers the kubelet is starting: their `start` events are its own doing, and the
    /// sync that started them has inspected them, so those events wake no pod worker.
    own_starts: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// Each node's pod network, once [`Runtime::ensure_network`] made it.
    networks: std::sync::Mutex<HashMap<String, Arc<PodNetwork>>>,
}

/// One container's inspect, as [`DockerRuntime::list`] keeps it.
#[derive(Clone)]
struct Inspected {
    /// The state the list showed (`running`, `exited`, ...).
    listed_state: String,
    record: ContainerRecord,
    /// Its IP on the pod network (sandboxes).
    ip: String,
    /// When the inspect was asked for.
    at: Instant,
}

/// The inspects kept, and when an event last said each container changed.
///
/// Docker sends a container's `die` event before its list (a snapshot updated afterwards)
/// shows the container exited, while an inspect waits for the exit to be handled: so after
/// an event the list's state cannot be trusted to say whether the kept inspect is stale,
/// and the container is inspected again.
#[derive(Default)]
struct InspectCache {
    kept: HashMap<String, Inspected>,
    changed: HashMap<String, Instant>,
}

impl InspectCache {
    /// The kept inspect of `id`, if the list still shows the state it was made in and no
    /// event came since it was asked for.
    fn get(&self, id: &str, listed_state: &str) -> Option<Inspected> {
        let kept = self.kept.get(id)?;
        // An unknown state (an engine newer than bollard) is inspected every time.
        let same = !listed_state.is_empty() && kept.listed_state == listed_state;
        let unchanged = self.changed.get(id).is_none_or(|at| kept.at > *at);
        (same && unchanged).then(|| kept.clone())
    }

    fn insert(&mut self, id: &str, inspected: Inspected) {
        if self.kept.len() >= MAX_INSPECTED {
            self.kept.clear();
        }
        self.kept.insert(id.to_string(), inspected);
    }

    /// An event said the container changed: what was inspected before is stale.
    fn changed(&mut self, id: &str) {
        if self.changed.len() >= MAX_INSPECTED {
            self.changed.clear();
        }
        self.kept.remove(id);
        self.changed.insert(id.to_string(), Instant::now());
    }

    fn remove(&mut self, id: &str) {
        self.kept.remove(id);
        self.changed.remove(id);
    }
}

/// The container events that can change what the kubelet reports: upstream's PLEG looks
/// for containers started, exited and removed.
const EVENTS: [&str; 4] = ["start", "die", "oom", "destroy"];

/// Inspects kept at most: beyond it the cache starts again (they are only a shortcut).
const MAX_INSPECTED: usize = 10_000;

fn err(e: bollard::errors::Error) -> RuntimeError {
    RuntimeError::Other(e.to_string())
}

fn is_not_found(e: &bollard::errors::Error) -> bool {
    matches!(e, bollard::errors::Error::DockerResponseServerError { status_code: 404, .. })
}

/// The Docker network earlier versions put `node`'s pods on (removed when found).
fn legacy_network_name(node: &str) -> String {
    format!("rkube-{node}")
}

/// How long a container with a memory limit that just ended with SIGKILL's code is
/// re-inspected, waiting for Docker to note an OOM kill.
const OOM_SETTLE_POLLS: usize = 10;
const OOM_SETTLE_POLL: Duration = Duration::from_millis(100);

/// Docker can answer for a container its memory limit has just killed before it has handled
/// the kernel's OOM event (exit code 137, `OOMKilled` still false): then the pod would be
/// reported `Error` instead of `OOMKilled` for good, as an exited container is inspected
/// once. True for such a container that ended in the last few seconds.
fn may_not_have_noted_oom(inspect: &bollard::models::ContainerInspectResponse) -> bool {
    let limited = inspect.host_config.as_ref().and_then(|h| h.memory).is_some_and(|m| m > 0);
    let Some(state) = inspect.state.as_ref() else {
        return false;
    };
    let recent = parse_time(state.finished_at.as_deref())
        .is_some_and(|t| (Utc::now() - t).num_seconds() < 5);
    limited
        && state.running != Some(true)
        && state.exit_code == Some(137)
        && state.oom_killed != Some(true)
        && recent
}

fn parse_time(text: Option<&str>) -> Option<DateTime<Utc>> {
    text.and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
        .filter(|t| t.timestamp() > 0)
}

impl DockerRuntime {
    /// Connects to the local engine (`DOCKER_HOST` or the default socket) and agrees on an
    /// API version with it.
    pub async fn connect() -> Result<DockerRuntime> {
        let docker = Docker::connect_with_local_defaults().map_err(err)?;
        let docker = docker
            .negotiate_version()
            .await
            .map_err(|e| RuntimeError::Other(format!("cannot reach the Docker engine: {e}")))?;
        docker
            .ping()
            .await
            .map_err(|e| RuntimeError::Other(format!("cannot reach the Docker engine: {e}")))?;
        Ok(DockerRuntime {
            docker,
            cgroups: Default::default(),
            inspected: Default::default(),
            own_starts: Default::default(),
            networks: Default::default(),
        })
    }

    /// Removes (force, with their anonymous volumes) every container the kubelet made for
    /// `node`, or for any node without one: a node taken down for good (`rkube killall`).
    /// Each removed one as `name (short id)`. Containers without the kubelet's node label
    /// (anything not rkube's) are never touched.
    pub async fn remove_all(&self, node: Option<&str>) -> Result<Vec<String>> {
        let label = match node {
            Some(node) => format!("{}={node}", labels::NODE),
            None => labels::NODE.to_string(),
        };
        let filters = HashMap::from([("label".to_string(), vec![label])]);
        let options =
            ListContainersOptions { all: true, filters: Some(filters), ..Default::default() };
        let mut removed = Vec::new();
        for summary in self.docker.list_containers(Some(options)).await.map_err(err)? {
            let Some(id) = summary.id else { continue };
            let name = summary.names.unwrap_or_default().first().cloned().unwrap_or_default();
            let options = RemoveContainerOptions { force: true, v: true, ..Default::default() };
            match self.docker.remove_container(&id, Some(options)).await {
                Ok(()) => removed.push(format!(
                    "{} ({})",
                    name.trim_start_matches('/'),
                    &id[..id.len().min(12)]
                )),
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(err(e)),
            }
        }
        Ok(removed)
    }

    /// Makes the pause image from the program in [`pause`] unless it is there already.
    pub async fn ensure_pause_image(&self) -> Result<()> {
        if self.image_present(pause::IMAGE).await? {
            return Ok(());
        }
        let program = pause::program().ok_or_else(|| {
            RuntimeError::Other(format!(
                "no pause program for this architecture ({})",
                std::env::consts::ARCH
            ))
        })?;
        let tar = pause::rootfs_tar(&program);
        let (repo, tag) = pause::IMAGE.split_once(':').unwrap_or((pause::IMAGE, "latest"));
        let options = CreateImageOptions {
            from_src: Some("-".into()),
            repo: Some(repo.into()),
            tag: Some(tag.into()),
            changes: vec![format!("ENTRYPOINT [\"{}\"]", pause::COMMAND)],
            ..Default::default()
        };
        let mut progress = self.docker.create_image(
            Some(options),
            Some(bollard::body_full(Bytes::from(tar))),
            None,
        );
        while let Some(step) = progress.next().await {
            step.map_err(err)?;
        }
        Ok(())
    }

    /// A sandbox's pod IP, from its label.
    fn ip_of(inspect: &bollard::models::ContainerInspectResponse) -> String {
        let labels = inspect.config.as_ref().and_then(|c| c.labels.as_ref());
        labels.and_then(|l| l.get(labels::POD_IP)).cloned().unwrap_or_default()
    }

    fn network(&self, node: &str) -> Result<Arc<PodNetwork>> {
        let networks = self.networks.lock().unwrap_or_else(|e| e.into_inner());
        networks
            .get(node)
            .cloned()
            .ok_or_else(|| RuntimeError::Other(format!("node {node} has no pod network yet")))
    }

    /// Frees what a sandbox held on its pod network (its address and hostPorts); nothing
    /// for other containers.
    async fn release_network(&self, id: &str) {
        let networks: Vec<Arc<PodNetwork>> =
            self.networks.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
        for network in networks {
            if network.release(id) {
                if let Err(e) = network.remove_host_ports(id).await {
                    tracing::warn!(error = %e, id, "cannot remove a sandbox's hostPort rules");
                }
            }
        }
    }

    /// Removes the Docker network of earlier versions, and the sandboxes on it (the kubelet
    /// makes them anew on its own network): its subnet is the bridge's.
    async fn remove_legacy_network(&self, node: &str) -> Result<()> {
        let name = legacy_network_name(node);
        let network = match self.docker.inspect_network(&name, None).await {
            Ok(network) => network,
            Err(e) if is_not_found(&e) => return Ok(()),
            Err(e) => return Err(err(e)),
        };
        tracing::info!(network = name, "removing the Docker network of an earlier version");
        for id in network.containers.unwrap_or_default().into_keys() {
            let options = RemoveContainerOptions { force: true, v: true, ..Default::default() };
            let _ = self.docker.remove_container(&id, Some(options)).await;
        }
        match self.docker.remove_network(&name).await {
            Err(e) if !is_not_found(&e) => Err(err(e)),
            _ => Ok(()),
        }
    }

    /// Sets up the network of a started sandbox: its eth0 and hostPorts. On failure the
    /// caller removes the sandbox.
    async fn attach_sandbox(
        &self,
        network: &PodNetwork,
        id: &str,
        ip: Ipv4Addr,
        host_ports: &[HostPort],
    ) -> Result<()> {
        let at = Instant::now();
        let inspect =
            timed("inspect sandbox", self.docker.inspect_container(id, None)).await.map_err(err)?;
        let pid = inspect.state.as_ref().and_then(|s| s.pid).filter(|pid| *pid > 0);
        let Some(pid) = pid else {
            return Err(RuntimeError::Other(format!("sandbox {id} is not running")));
        };
        timed("attach eth0", network.attach(id, pid, ip)).await?;
        network.add_host_ports(id, ip, host_ports).await?;
        // The list that follows finds the sandbox running: it need not inspect it again.
        let record = Self::record(inspect);
        let kept = Inspected { listed_state: "running".into(), record, ip: ip.to_string(), at };
        self.inspected.lock().unwrap_or_else(|e| e.into_inner()).insert(id, kept);
        Ok(())
    }

    /// The container as the list showed it in `listed_state`: the inspect kept from when it
    /// last showed that state, or a new one.
    async fn inspect_listed(&self, id: &str, listed_state: &str) -> Result<ContainerRecord> {
        let kept = self.inspected.lock().unwrap_or_else(|e| e.into_inner()).get(id, listed_state);
        if let Some(kept) = kept {
            return Ok(kept.record);
        }
        let at = Instant::now();
        let mut inspect = self.docker.inspect_container(id, None).await.map_err(err)?;
        for _ in 0..OOM_SETTLE_POLLS {
            if !may_not_have_noted_oom(&inspect) {
                break;
            }
            tokio::time::sleep(OOM_SETTLE_POLL).await;
            inspect = self.docker.inspect_container(id, None).await.map_err(err)?;
        }
        let ip = Self::ip_of(&inspect);
        let record = Self::record(inspect);
        let listed_state = listed_state.to_string();
        let kept = Inspected { listed_state, record: record.clone(), ip, at };
        self.inspected.lock().unwrap_or_else(|e| e.into_inner()).insert(id, kept);
        Ok(record)
    }

    fn record(inspect: bollard::models::ContainerInspectResponse) -> ContainerRecord {
        // A container that never started has no finish time: its creation stands in.
        let created = parse_time(inspect.created.as_deref()).unwrap_or_default();
        let state = inspect.state.unwrap_or_default();
        let started_at = parse_time(state.started_at.as_deref());
        let status = state.status.map(|s| s.to_string()).unwrap_or_default();
        let state = if state.running == Some(true) {
            ContainerState::Running { started_at: started_at.unwrap_or_else(Utc::now) }
        } else if status == "created" && state.error.as_deref().unwrap_or("").is_empty() {
            ContainerState::Created
        } else {
            ContainerState::Exited {
                // A container that could not start has no exit code of its own.
                exit_code: match state.exit_code.unwrap_or(0) {
                    0 if !state.error.as_deref().unwrap_or("").is_empty() => 128,
                    code => code,
                },
                started_at,
                finished_at: parse_time(state.finished_at.as_deref()).unwrap_or(created),
                oom_killed: state.oom_killed.unwrap_or(false),
                error: state.error.unwrap_or_default(),
            }
        };
        let config = inspect.config.unwrap_or_default();
        ContainerRecord {
            id: inspect.id.unwrap_or_default(),
            labels: config.labels.unwrap_or_default(),
            state,
            image: config.image.unwrap_or_default(),
            image_id: inspect.image.unwrap_or_default(),
        }
    }

    /// Starts a container of the kubelet's (its `start` event is then not passed on).
    async fn start_own(&self, id: &str) -> Result<()> {
        {
            let mut own = self.own_starts.lock().unwrap_or_else(|e| e.into_inner());
            if own.len() >= MAX_INSPECTED {
                own.clear();
            }
            own.insert(id.to_string());
        }
        let started = timed("start", self.docker.start_container(id, None)).await.map_err(err);
        if started.is_err() {
            self.own_starts.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        }
        started
    }

    /// Creates a container under its kubelet-style name (`k8s_<container>_<pod>_...`).
    async fn create_named(&self, name: String, config: ContainerCreateBody) -> Result<String> {
        let options = CreateContainerOptions { name: Some(name), ..Default::default() };
        let created = timed("create", self.docker.create_container(Some(options), config))
            .await
            .map_err(err)?;
        Ok(created.id)
    }

    fn base_labels(node: &str, pod: &super::PodRef) -> HashMap<String, String> {
        HashMap::from([
            (labels::NODE.to_string(), node.to_string()),
            (labels::POD_UID.to_string(), pod.uid.clone()),
            (labels::POD_NAME.to_string(), pod.name.clone()),
            (labels::POD_NAMESPACE.to_string(), pod.namespace.clone()),
        ])
    }
}

/// Runs `call`, logging how long it took (`RUST_LOG=rkube_kubelet::runtime=debug`): where a
/// burst of pod starts waits.
async fn timed<T>(what: &'static str, call: impl std::future::Future<Output = T>) -> T {
    let started = Instant::now();
    let out = call.await;
    tracing::debug!(what, ms = started.elapsed().as_millis() as u64, "docker call");
    out
}

#[async_trait]
impl Runtime for DockerRuntime {
    async fn version(&self) -> Result<String> {
        let version = self.docker.version().await.map_err(err)?;
        Ok(format!("docker://{}", version.version.unwrap_or_default()))
    }

    async fn ensure_network(&self, node: &str, cidr: &str) -> Result<()> {
        let cidr = crate::net::parse_pod_cidr(cidr)
            .ok_or_else(|| RuntimeError::Other(format!("invalid pod CIDR {cidr:?}")))?;
        if self.network(node).is_ok_and(|n| n.cidr() == cidr) {
            return Ok(());
        }
        self.remove_legacy_network(node).await?;
        let network = PodNetwork::ensure(node, cidr).await?;
        // Sandboxes that kept running while the kubelet was away keep their addresses and
        // hostPorts.
        for sandbox in self.list(node, None).await?.iter().filter(|r| r.is_sandbox()) {
            let ip: Option<Ipv4Addr> = sandbox.label(labels::POD_IP).parse().ok();
            let Some(ip) = ip.filter(|_| matches!(sandbox.state, ContainerState::Running { .. }))
            else {
                continue;
            };
            if let Err(e) = network.ensure_hairpin(&sandbox.id) {
                tracing::warn!(error = %e, id = sandbox.id, "cannot turn hairpin on for a sandbox");
            }
            if network.claim(ip, &sandbox.id) {
                let ports = HostPort::decode_all(sandbox.label(labels::HOST_PORTS));
                network.add_host_ports(&sandbox.id, ip, &ports).await?;
            }
        }
        self.networks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(node.to_string(), Arc::new(network));
        Ok(())
    }

    async fn list(&self, node: &str, pod_uid: Option<&str>) -> Result<Vec<ContainerRecord>> {
        let mut wanted = vec![format!("{}={node}", labels::NODE)];
        if let Some(uid) = pod_uid {
            wanted.push(format!("{}={uid}", labels::POD_UID));
        }
        let filters = HashMap::from([("label".to_string(), wanted)]);
        let summaries = self
            .docker
            .list_containers(Some(ListContainersOptions {
                all: true,
                filters: Some(filters),
                ..Default::default()
            }))
            .await
            .map_err(err)?;
        let mut records = Vec::with_capacity(summaries.len());
        for summary in summaries {
            let Some(id) = summary.id else { continue };
            let state = summary.state.map(|s| s.to_string()).unwrap_or_default();
            match self.inspect_listed(&id, &state).await {
                Ok(record) => records.push(record),
                // Removed between the list and the inspect.
                Err(RuntimeError::ImageNotFound(_)) => {}
                Err(e) => {
                    if !e.to_string().contains("No such container") {
                        return Err(e);
                    }
                }
            }
        }
        Ok(records)
    }

    fn container_events(&self, node: &str) -> BoxStream<'static, String> {
        let filters = HashMap::from([
            ("type".to_string(), vec!["container".to_string()]),
            ("event".to_string(), EVENTS.iter().map(|e| e.to_string()).collect()),
            ("label".to_string(), vec![format!("{}={node}", labels::NODE)]),
        ]);
        let options = bollard::query_parameters::EventsOptions {
            filters: Some(filters),
            ..Default::default()
        };
        let inspected = self.inspected.clone();
        let own_starts = self.own_starts.clone();
        self.docker
            .events(Some(options))
            // A broken stream (the engine restarting) ends: the caller connects again.
            .take_while(|event| {
                if let Err(e) = event {
                    tracing::warn!(error = %e, "Docker's event stream broke");
                }
                futures::future::ready(event.is_ok())
            })
            .filter_map(move |event| {
                let Some(event) = event.ok() else { return futures::future::ready(None) };
                let start = event.action.as_deref() == Some("start");
                let uid = event.actor.and_then(|actor| {
                    let id = actor.id.unwrap_or_default();
                    if start {
                        // The sync that started it has seen it running.
                        if own_starts.lock().unwrap_or_else(|e| e.into_inner()).remove(&id) {
                            return None;
                        }
                    } else {
                        inspected.lock().unwrap_or_else(|e| e.into_inner()).changed(&id);
                    }
                    actor.attributes.and_then(|mut a| a.remove(labels::POD_UID))
                });
                futures::future::ready(uid)
            })
            .boxed()
    }

    async fn inspect(&self, id: &str) -> Result<ContainerRecord> {
        let inspect = self.docker.inspect_container(id, None).await.map_err(err)?;
        Ok(Self::record(inspect))
    }

    async fn run_sandbox(&self, node: &str, spec: &SandboxSpec) -> Result<(String, String)> {
        let name = format!(
            "k8s_POD_{}_{}_{}_{}",
            spec.pod.name, spec.pod.namespace, spec.pod.uid, spec.attempt
        );
        let mut labels = Self::base_labels(node, &spec.pod);
        labels.insert(labels::TYPE.into(), "podsandbox".into());
        labels.insert(labels::ATTEMPT.into(), spec.attempt.to_string());
        let mut extra_hosts = spec.extra_hosts.clone();
        let network = if spec.host_network {
            None
        } else {
            let network = self.network(node)?;
            let ip = network.allocate(&name)?;
            labels.insert(labels::POD_IP.into(), ip.to_string());
            if !spec.host_ports.is_empty() {
                labels.insert(labels::HOST_PORTS.into(), HostPort::encode_all(&spec.host_ports));
            }
            // The pod's own name in its /etc/hosts, first, as upstream's kubelet writes it.
            extra_hosts.insert(0, format!("{}:{ip}", spec.hostname));
            Some((network, ip))
        };
        let host_config = HostConfig {
            network_mode: Some(if spec.host_network { "host" } else { "none" }.into()),
            ipc_mode: Some("shareable".into()),
            dns: (!spec.dns_servers.is_empty()).then(|| spec.dns_servers.clone()),
            dns_search: (!spec.dns_searches.is_empty()).then(|| spec.dns_searches.clone()),
            dns_options: (!spec.dns_options.is_empty()).then(|| spec.dns_options.clone()),
            extra_hosts: (!extra_hosts.is_empty()).then_some(extra_hosts),
            sysctls: (!spec.sysctls.is_empty()).then(|| spec.sysctls.iter().cloned().collect()),
            ..Default::default()
        };
        let config = ContainerCreateBody {
            image: Some(pause::IMAGE.into()),
            // The pause program ignores SIGTERM as PID 1: stopping a sandbox kills it.
            stop_signal: Some("SIGKILL".into()),
            hostname: (!spec.host_network).then(|| spec.hostname.clone()),
            labels: Some(labels),
            host_config: Some(host_config),
            ..Default::default()
        };
        let Some((network, ip)) = network else {
            let id = self.create_named(name, config).await?;
            self.start_own(&id).await?;
            return Ok((id, String::new()));
        };
        let id = match self.create_named(name.clone(), config).await {
            Ok(id) => id,
            Err(e) => {
                network.release(&name);
                return Err(e);
            }
        };
        network.hand_over(&name, &id);
        let started = match self.start_own(&id).await {
            Ok(()) => self.attach_sandbox(&network, &id, ip, &spec.host_ports).await,
            Err(e) => Err(e),
        };
        if let Err(e) = started {
            // Nothing of a sandbox that cannot run stays behind.
            let _ = self.remove_container(&id).await;
            return Err(e);
        }
        Ok((id, ip.to_string()))
    }

    async fn sandbox_ip(&self, id: &str) -> Result<String> {
        // A running sandbox keeps its IP: the list's inspect has it.
        let kept = self.inspected.lock().unwrap_or_else(|e| e.into_inner()).kept.get(id).cloned();
        if let Some(kept) = kept.filter(|k| {
            matches!(k.record.state, ContainerState::Running { .. }) && !k.ip.is_empty()
        }) {
            return Ok(kept.ip);
        }
        let inspect = self.docker.inspect_container(id, None).await.map_err(err)?;
        Ok(Self::ip_of(&inspect))
    }

    async fn create_container(
        &self,
        node: &str,
        sandbox_id: &str,
        share_pid: bool,
        spec: &ContainerSpec,
    ) -> Result<String> {
        let pod = spec.pod.clone().unwrap_or_default();
        let mut labels = Self::base_labels(node, &pod);
        labels.insert(labels::TYPE.into(), "container".into());
        labels.insert(labels::CONTAINER_NAME.into(), spec.name.clone());
        labels.insert(labels::ATTEMPT.into(), spec.attempt.to_string());
        if spec.init {
            labels.insert(labels::KIND.into(), "init".into());
        }
        if let Some(path) = &spec.termination_message_path {
            labels.insert(labels::TERMINATION_MESSAGE_PATH.into(), path.clone());
        }
        let sandbox = format!("container:{sandbox_id}");
        let host_config = HostConfig {
            network_mode: Some(sandbox.clone()),
            ipc_mode: Some(sandbox.clone()),
            pid_mode: match &spec.pid_target {
                Some(target) => Some(format!("container:{target}")),
                None => share_pid.then_some(sandbox),
            },
            binds: (!spec.binds.is_empty()).then(|| spec.binds.clone()),
            tmpfs: (!spec.tmpfs.is_empty())
                .then(|| spec.tmpfs.iter().map(|p| (p.clone(), String::new())).collect()),
            privileged: Some(spec.privileged),
            readonly_rootfs: Some(spec.read_only_rootfs),
            cap_add: (!spec.cap_add.is_empty()).then(|| spec.cap_add.clone()),
            cap_drop: (!spec.cap_drop.is_empty()).then(|| spec.cap_drop.clone()),
            group_add: (!spec.groups.is_empty()).then(|| spec.groups.clone()),
            security_opt: spec.no_new_privileges.then(|| vec!["no-new-privileges".to_string()]),
            cpu_shares: spec.cpu_shares,
            cpu_quota: spec.cpu_quota,
            cpu_period: spec.cpu_quota.map(|_| 100_000),
            memory: spec.memory_limit,
            ..Default::default()
        };
        let config = ContainerCreateBody {
            image: Some(spec.image.clone()),
            entrypoint: spec.entrypoint.clone(),
            cmd: spec.cmd.clone(),
            env: Some(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            working_dir: spec.working_dir.clone(),
            tty: Some(spec.tty),
            open_stdin: Some(spec.stdin),
            stdin_once: Some(spec.stdin_once),
            attach_stdin: Some(spec.stdin),
            user: spec.user.clone(),
            labels: Some(labels),
            host_config: Some(host_config),
            ..Default::default()
        };
        let name = format!(
            "k8s_{}_{}_{}_{}_{}",
            spec.name, pod.name, pod.namespace, pod.uid, spec.attempt
        );
        let id = self.create_named(name, config).await?;
        Ok(id)
    }

    async fn start_container(&self, id: &str) -> Result<()> {
        self.start_own(id).await
    }

    async fn stop_container(&self, id: &str, grace: Duration) -> Result<()> {
        let options = StopContainerOptions {
            t: Some(grace.as_secs().min(i32::MAX as u64) as i32),
            ..Default::default()
        };
        match self.docker.stop_container(id, Some(options)).await {
            Ok(()) => {}
            Err(bollard::errors::Error::DockerResponseServerError { status_code: 304, .. }) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(err(e)),
        }
        // A stopped sandbox's namespace is gone, and with it its eth0: its address is free.
        self.release_network(id).await;
        Ok(())
    }

    async fn remove_container(&self, id: &str) -> Result<()> {
        self.cgroups.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        self.inspected.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        self.release_network(id).await;
        let options = RemoveContainerOptions { force: true, v: true, ..Default::default() };
        match self.docker.remove_container(id, Some(options)).await {
            Err(e) if !is_not_found(&e) => Err(err(e)),
            _ => Ok(()),
        }
    }

    async fn image_present(&self, image: &str) -> Result<bool> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(err(e)),
        }
    }

    async fn pull_image(&self, image: &str, credentials: Option<Credentials>) -> Result<()> {
        let credentials = credentials.map(|c| bollard::auth::DockerCredentials {
            username: c.username,
            password: c.password,
            auth: c.auth,
            serveraddress: c.server,
            ..Default::default()
        });
        let options = CreateImageOptions { from_image: Some(image.into()), ..Default::default() };
        let mut progress = self.docker.create_image(Some(options), None, credentials);
        while let Some(step) = progress.next().await {
            step.map_err(err)?;
        }
        Ok(())
    }

    async fn images(&self) -> Result<Vec<ImageRecord>> {
        let images = self
            .docker
            .list_images(Some(ListImagesOptions { all: false, ..Default::default() }))
            .await
            .map_err(err)?;
        Ok(images
            .into_iter()
            .map(|i| ImageRecord { id: i.id, names: i.repo_tags, size: i.size })
            .collect())
    }

    fn logs(&self, id: &str, options: LogOptions) -> BoxStream<'static, Result<Bytes>> {
        let options = LogsOptions {
            follow: options.follow,
            stdout: true,
            stderr: true,
            since: options.since.map(|t| t.timestamp() as i32).unwrap_or(0),
            timestamps: options.timestamps,
            tail: options.tail_lines.map(|n| n.to_string()).unwrap_or_else(|| "all".into()),
            ..Default::default()
        };
        self.docker.logs(id, Some(options)).map_ok(|chunk| chunk.into_bytes()).map_err(err).boxed()
    }

    async fn exec(
        &self,
        id: &str,
        command: Vec<String>,
        tty: bool,
        stdin: bool,
    ) -> Result<ExecSession> {
        use bollard::exec::{CreateExecOptions, StartExecResults};
        let exec = self
            .docker
            .create_exec(
                id,
                CreateExecOptions {
                    cmd: Some(command),
                    attach_stdin: Some(stdin),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    tty: Some(tty),
                    ..Default::default()
                },
            )
            .await
            .map_err(err)?;
        match self.docker.start_exec(&exec.id, None).await.map_err(err)? {
            StartExecResults::Attached { output, input } => {
                Ok(ExecSession { id: exec.id, output: by_stream(output), input })
            }
            StartExecResults::Detached => Err(RuntimeError::Other("exec detached".into())),
        }
    }

    async fn exec_exit_code(&self, exec_id: &str) -> Result<Option<i64>> {
        let inspect = self.docker.inspect_exec(exec_id).await.map_err(err)?;
        Ok(if inspect.running == Some(true) { None } else { inspect.exit_code })
    }

    async fn resize_exec(&self, exec_id: &str, width: u16, height: u16) -> Result<()> {
        self.docker
            .resize_exec(exec_id, bollard::exec::ResizeExecOptions { height, width })
            .await
            .map_err(err)
    }

    async fn attach(&self, id: &str, stdin: bool) -> Result<ExecSession> {
        let inspect = self.docker.inspect_container(id, None).await.map_err(err)?;
        let open_stdin = inspect.config.and_then(|c| c.open_stdin).unwrap_or(false);
        let options = bollard::query_parameters::AttachContainerOptions {
            stream: true,
            stdin: stdin && open_stdin,
            stdout: true,
            stderr: true,
            logs: false,
            detach_keys: None,
        };
        let attached = self.docker.attach_container(id, Some(options)).await.map_err(err)?;
        Ok(ExecSession {
            id: id.to_string(),
            output: by_stream(attached.output),
            input: attached.input,
        })
    }

    async fn resize_container(&self, id: &str, width: u16, height: u16) -> Result<()> {
        let options = bollard::query_parameters::ResizeContainerTTYOptions {
            h: i32::from(height),
            w: i32::from(width),
        };
        self.docker.resize_container_tty(id, options).await.map_err(err)
    }

    async fn container_stats(&self, id: &str) -> Result<ContainerStats> {
        let known = self.cgroups.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned();
        let paths = match known {
            Some(paths) => paths,
            None => {
                let inspect = self.docker.inspect_container(id, None).await.map_err(err)?;
                let state = inspect.state.unwrap_or_default();
                if state.running != Some(true) {
                    return Err(RuntimeError::Other(format!("container {id} is not running")));
                }
                let full_id = inspect.id.unwrap_or_else(|| id.to_string());
                let paths = state
                    .pid
                    .filter(|pid| *pid > 0)
                    .and_then(CgroupPaths::for_pid)
                    .or_else(|| CgroupPaths::for_docker_id(&full_id))
                    .ok_or_else(|| {
                        RuntimeError::Other(format!("the cgroup of container {id} is not found"))
                    })?;
                self.cgroups
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id.to_string(), paths.clone());
                paths
            }
        };
        paths.read().map_err(|e| {
            // Gone with its container: found again if it ever runs again.
            self.cgroups.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
            RuntimeError::Other(format!("cannot read the cgroup of container {id}: {e}"))
        })
    }

    async fn port_forward(&self, sandbox_id: &str, port: u16) -> Result<tokio::net::TcpStream> {
        let inspect = self.docker.inspect_container(sandbox_id, None).await.map_err(err)?;
        let state = inspect.state.unwrap_or_default();
        let pid = state.pid.filter(|pid| *pid > 0 && state.running == Some(true));
        let Some(pid) = pid else {
            return Err(RuntimeError::Other(format!("container {sandbox_id} is not running")));
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let id = sandbox_id.to_string();
        // setns changes the calling thread's namespace: a thread of its own, gone afterwards.
        std::thread::Builder::new()
            .name("rkube-port-forward".into())
            .spawn(move || {
                let _ = tx.send(connect_in_netns(pid, port, &id));
            })
            .map_err(|e| RuntimeError::Other(format!("cannot start a thread: {e}")))?;
        let stream = rx
            .await
            .map_err(|_| RuntimeError::Other("the port-forward thread ended early".into()))??;
        tokio::net::TcpStream::from_std(stream).map_err(|e| RuntimeError::Other(e.to_string()))
    }
}

/// Docker's multiplexed output as (stream, bytes): 2 for stderr, 1 for the rest (stdout, or
/// a TTY's console).
fn by_stream(
    output: impl futures::Stream<
            Item = std::result::Result<bollard::container::LogOutput, bollard::errors::Error>,
        > + Send
        + 'static,
) -> BoxStream<'static, Result<(u8, Bytes)>> {
    output
        .map_ok(|chunk| match chunk {
            bollard::container::LogOutput::StdErr { message } => (2, message),
            other => (1, other.into_bytes()),
        })
        .map_err(err)
        .boxed()
}

/// Connects to `localhost:port` inside the network namespace of process `pid` (IPv4, then
/// IPv6), on the calling thread, which stays in that namespace: call it on a thread of its
/// own. The socket keeps its namespace wherever it is used afterwards.
fn connect_in_netns(pid: i64, port: u16, sandbox_id: &str) -> Result<std::net::TcpStream> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
    use std::os::fd::AsRawFd;
    let path = format!("/proc/{pid}/ns/net");
    let namespace = std::fs::File::open(&path)
        .map_err(|e| RuntimeError::Other(format!("cannot open {path}: {e}")))?;
    // SAFETY: setns on a descriptor we own; it affects only this thread.
    if unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(RuntimeError::Other(format!("cannot enter the network namespace {path}: {e}")));
    }
    let timeout = std::time::Duration::from_secs(10);
    let v4 = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let v6 = SocketAddr::from((Ipv6Addr::LOCALHOST, port));
    let stream = match TcpStream::connect_timeout(&v4, timeout) {
        Ok(stream) => stream,
        Err(e4) => match TcpStream::connect_timeout(&v6, timeout) {
            Ok(stream) => stream,
            // Worded as containerd words it (kubectl shows it after the kubelet's prefix).
            Err(e6) => {
                return Err(RuntimeError::Other(format!(
                    "failed to connect to localhost:{port} inside namespace {sandbox_id:?}, \
                     IPv4: dial tcp4 {v4}: connect: {} IPv6 dial tcp6 {v6}: connect: {}",
                    go_error(&e4),
                    go_error(&e6)
                )))
            }
        },
    };
    stream.set_nonblocking(true).map_err(|e| RuntimeError::Other(e.to_string()))?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// An OS error as Go prints it: `connection refused`, not `Connection refused (os error 111)`.
fn go_error(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = text.split(" (os error").next().unwrap_or(&text);
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
