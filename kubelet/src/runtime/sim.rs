//! A simulated container runtime: no containers, only their records. Sandboxes get pod IPs
//! from the node's pod CIDR, containers "run" from the moment they start until they are
//! stopped, images are present once pulled (and every image pulls at once). The kubelet code
//! above the [`Runtime`] trait is the same as with Docker, so many simulated nodes in one
//! process (`rkube kubelet --runtime simulated --nodes N`) load the API server, the scheduler
//! and the controllers as that many real nodes would, for scale tests.
//!
//! What it cannot do: logs are empty, exec, attach and port forwarding fail with a clear
//! error, and nothing a container would do (exit, crash, use memory) happens by itself.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::Utc;
use futures::stream::{self, BoxStream, StreamExt};
use tokio::sync::broadcast;

use crate::net::{parse_pod_cidr, Ipam};

use super::{
    labels, ContainerRecord, ContainerSpec, ContainerState, Credentials, ExecSession, ImageRecord,
    LogOptions, PodRef, Result, Runtime, RuntimeError, SandboxSpec,
};

/// The version string the simulated nodes report (`nodeInfo.containerRuntimeVersion`).
pub const VERSION: &str = "simulated://1.0.0";

/// One runtime for every simulated node of the process; records carry their node's label.
pub struct SimulatedRuntime {
    state: Mutex<State>,
    /// (node, pod uid) of every container that starts or stops.
    events: broadcast::Sender<(String, String)>,
    /// Bumped when the event streams break ([`SimulatedRuntime::break_events`]); odd while
    /// they stay down.
    events_epoch: Arc<AtomicU64>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    containers: HashMap<String, ContainerRecord>,
    /// Per node: the addresses of its pod network.
    networks: HashMap<String, Ipam>,
    /// Sandbox id → pod IP.
    ips: HashMap<String, String>,
    images: HashSet<String>,
}

impl Default for SimulatedRuntime {
    fn default() -> Self {
        SimulatedRuntime {
            state: Mutex::new(State::default()),
            events: broadcast::channel(4096).0,
            events_epoch: Default::default(),
        }
    }
}

fn unsupported(what: &str) -> RuntimeError {
    RuntimeError::Other(format!("{what} is not supported by the simulated runtime"))
}

impl SimulatedRuntime {
    pub fn new() -> SimulatedRuntime {
        SimulatedRuntime::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Breaks the event streams as an engine restart would: open streams end, and until
    /// [`SimulatedRuntime::restore_events`] new ones end at once and nothing is sent.
    pub fn break_events(&self) {
        if self.events_epoch.load(Ordering::SeqCst).is_multiple_of(2) {
            self.events_epoch.fetch_add(1, Ordering::SeqCst);
        }
        // Wakes every stream to see it.
        let _ = self.events.send((String::new(), String::new()));
    }

    /// Event streams work again (from the next one asked for).
    pub fn restore_events(&self) {
        if self.events_epoch.load(Ordering::SeqCst) % 2 == 1 {
            self.events_epoch.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// How many event streams are open.
    pub fn event_streams(&self) -> usize {
        self.events.receiver_count()
    }

    /// How many containers (sandboxes included) the runtime holds.
    pub fn container_count(&self) -> usize {
        self.lock().containers.len()
    }

    fn add(
        &self,
        node: &str,
        pod: &PodRef,
        mut labels: HashMap<String, String>,
        image: &str,
    ) -> String {
        labels.insert(super::labels::NODE.into(), node.into());
        labels.insert(super::labels::POD_UID.into(), pod.uid.clone());
        labels.insert(super::labels::POD_NAME.into(), pod.name.clone());
        labels.insert(super::labels::POD_NAMESPACE.into(), pod.namespace.clone());
        let mut state = self.lock();
        state.next_id += 1;
        let id = format!("{:064x}", state.next_id);
        state.containers.insert(
            id.clone(),
            ContainerRecord {
                id: id.clone(),
                labels,
                state: ContainerState::Created,
                image: image.into(),
                image_id: format!("sha256:{:064x}", fnv(image)),
            },
        );
        id
    }

    /// Sets a container's state and tells the pod's worker.
    fn transition(
        &self,
        id: &str,
        to: impl FnOnce(&ContainerState) -> Option<ContainerState>,
    ) -> Result<()> {
        let (node, uid) = {
            let mut state = self.lock();
            let record = state
                .containers
                .get_mut(id)
                .ok_or_else(|| RuntimeError::Other(format!("No such container: {id}")))?;
            match to(&record.state) {
                Some(next) => record.state = next,
                None => return Ok(()),
            }
            (record.label(labels::NODE).to_string(), record.label(labels::POD_UID).to_string())
        };
        if self.events_epoch.load(Ordering::SeqCst).is_multiple_of(2) {
            let _ = self.events.send((node, uid));
        }
        Ok(())
    }
}

/// A stable fake digest for an image name.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

#[async_trait]
impl Runtime for SimulatedRuntime {
    async fn version(&self) -> Result<String> {
        Ok(VERSION.into())
    }

    fn runs_processes(&self) -> bool {
        false
    }

    async fn ensure_network(&self, node: &str, cidr: &str) -> Result<()> {
        let cidr = parse_pod_cidr(cidr)
            .ok_or_else(|| RuntimeError::Other(format!("invalid pod CIDR {cidr:?}")))?;
        let mut state = self.lock();
        if state.networks.get(node).is_some_and(|n| n.cidr() == cidr) {
            return Ok(());
        }
        state.networks.insert(node.into(), Ipam::new(cidr));
        Ok(())
    }

    async fn list(&self, node: &str, pod_uid: Option<&str>) -> Result<Vec<ContainerRecord>> {
        let state = self.lock();
        Ok(state
            .containers
            .values()
            .filter(|r| r.label(labels::NODE) == node)
            .filter(|r| pod_uid.is_none_or(|uid| r.label(labels::POD_UID) == uid))
            .cloned()
            .collect())
    }

    fn container_events(&self, node: &str) -> BoxStream<'static, String> {
        let node = node.to_string();
        let receiver = self.events.subscribe();
        let epochs = self.events_epoch.clone();
        let epoch = epochs.load(Ordering::SeqCst);
        stream::unfold(receiver, move |mut receiver| {
            let node = node.clone();
            let epochs = epochs.clone();
            async move {
                loop {
                    // Down, or broken since the stream began.
                    if epoch % 2 == 1 || epochs.load(Ordering::SeqCst) != epoch {
                        return None;
                    }
                    match receiver.recv().await {
                        Ok((n, uid)) if n == node => return Some((uid, receiver)),
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => return None,
                    }
                }
            }
        })
        .boxed()
    }

    async fn inspect(&self, id: &str) -> Result<ContainerRecord> {
        self.lock()
            .containers
            .get(id)
            .cloned()
            .ok_or_else(|| RuntimeError::Other(format!("No such container: {id}")))
    }

    async fn run_sandbox(&self, node: &str, spec: &SandboxSpec) -> Result<(String, String)> {
        let pending = format!("pending/{}", spec.pod.uid);
        let ip = if spec.host_network {
            String::new()
        } else {
            let mut state = self.lock();
            let network = state.networks.get_mut(node).ok_or_else(|| {
                RuntimeError::Other(format!("node {node} has no pod network yet"))
            })?;
            let ip = network.allocate(&pending).ok_or_else(|| {
                RuntimeError::Other(format!("no free address left in {}", network.cidr()))
            })?;
            ip.to_string()
        };
        let labels = HashMap::from([
            (labels::TYPE.to_string(), "podsandbox".to_string()),
            (labels::ATTEMPT.to_string(), spec.attempt.to_string()),
        ]);
        let id = self.add(node, &spec.pod, labels, super::pause::IMAGE);
        {
            let mut state = self.lock();
            if let Some(network) = state.networks.get_mut(node) {
                network.hand_over(&pending, &id);
            }
            state.ips.insert(id.clone(), ip.clone());
        }
        self.start_container(&id).await?;
        Ok((id, ip))
    }

    async fn sandbox_ip(&self, id: &str) -> Result<String> {
        Ok(self.lock().ips.get(id).cloned().unwrap_or_default())
    }

    async fn create_container(
        &self,
        node: &str,
        _sandbox_id: &str,
        _share_pid: bool,
        spec: &ContainerSpec,
    ) -> Result<String> {
        let pod = spec.pod.clone().unwrap_or_default();
        let mut labels = HashMap::from([
            (labels::TYPE.to_string(), "container".to_string()),
            (labels::CONTAINER_NAME.to_string(), spec.name.clone()),
            (labels::ATTEMPT.to_string(), spec.attempt.to_string()),
        ]);
        if spec.init {
            labels.insert(labels::KIND.into(), "init".into());
        }
        Ok(self.add(node, &pod, labels, &spec.image))
    }

    async fn start_container(&self, id: &str) -> Result<()> {
        self.transition(id, |_| Some(ContainerState::Running { started_at: Utc::now() }))
    }

    async fn stop_container(&self, id: &str, _grace: Duration) -> Result<()> {
        self.transition(id, |current| match current {
            ContainerState::Running { started_at } => Some(ContainerState::Exited {
                // What a process killed by SIGKILL reports.
                exit_code: 137,
                started_at: Some(*started_at),
                finished_at: Utc::now(),
                oom_killed: false,
                error: String::new(),
            }),
            _ => None,
        })
    }

    async fn remove_container(&self, id: &str) -> Result<()> {
        let mut state = self.lock();
        state.containers.remove(id);
        if state.ips.remove(id).is_some() {
            for network in state.networks.values_mut() {
                network.release(id);
            }
        }
        Ok(())
    }

    async fn image_present(&self, image: &str) -> Result<bool> {
        Ok(self.lock().images.contains(image))
    }

    async fn pull_image(&self, image: &str, _credentials: Option<Credentials>) -> Result<()> {
        self.lock().images.insert(image.into());
        Ok(())
    }

    async fn images(&self) -> Result<Vec<ImageRecord>> {
        let state = self.lock();
        let mut images: Vec<ImageRecord> = state
            .images
            .iter()
            .map(|name| ImageRecord {
                id: format!("sha256:{:064x}", fnv(name)),
                names: vec![name.clone()],
                size: 1 << 20,
            })
            .collect();
        images.sort_by(|a, b| a.names.cmp(&b.names));
        Ok(images)
    }

    fn logs(&self, _id: &str, _options: LogOptions) -> BoxStream<'static, Result<Bytes>> {
        stream::empty().boxed()
    }

    async fn exec(
        &self,
        _id: &str,
        _command: Vec<String>,
        _tty: bool,
        _stdin: bool,
    ) -> Result<ExecSession> {
        Err(unsupported("exec"))
    }

    async fn exec_exit_code(&self, _exec_id: &str) -> Result<Option<i64>> {
        Err(unsupported("exec"))
    }

    async fn resize_exec(&self, _exec_id: &str, _width: u16, _height: u16) -> Result<()> {
        Err(unsupported("exec"))
    }

    async fn attach(&self, _id: &str, _stdin: bool) -> Result<ExecSession> {
        Err(unsupported("attach"))
    }

    async fn resize_container(&self, _id: &str, _width: u16, _height: u16) -> Result<()> {
        Err(unsupported("attach"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str) -> PodRef {
        PodRef { uid: uid.into(), namespace: "default".into(), name: format!("p-{uid}") }
    }

    fn sandbox(uid: &str) -> SandboxSpec {
        SandboxSpec { pod: pod(uid), hostname: "p".into(), ..Default::default() }
    }

    #[tokio::test]
    async fn containers_live_per_node_with_ips_from_the_node_cidr() {
        let runtime = SimulatedRuntime::new();
        assert!(runtime.run_sandbox("a", &sandbox("u1")).await.is_err(), "no network yet");
        runtime.ensure_network("a", "10.42.7.0/24").await.unwrap();
        runtime.ensure_network("b", "10.42.8.0/24").await.unwrap();
        let mut events = runtime.container_events("a");
        let (sandbox_a, ip_a) = runtime.run_sandbox("a", &sandbox("u1")).await.unwrap();
        let (_, ip_b) = runtime.run_sandbox("b", &sandbox("u2")).await.unwrap();
        assert_eq!((ip_a.as_str(), ip_b.as_str()), ("10.42.7.2", "10.42.8.2"));
        assert_eq!(runtime.sandbox_ip(&sandbox_a).await.unwrap(), "10.42.7.2");
        assert_eq!(events.next().await.as_deref(), Some("u1"));

        let spec = ContainerSpec {
            pod: Some(pod("u1")),
            name: "app".into(),
            image: "busybox:1.36".into(),
            ..Default::default()
        };
        assert!(!runtime.image_present("busybox:1.36").await.unwrap());
        runtime.pull_image("busybox:1.36", None).await.unwrap();
        assert!(runtime.image_present("busybox:1.36").await.unwrap());
        let id = runtime.create_container("a", &sandbox_a, false, &spec).await.unwrap();
        assert_eq!(runtime.inspect(&id).await.unwrap().state, ContainerState::Created);
        runtime.start_container(&id).await.unwrap();
        assert!(matches!(
            runtime.inspect(&id).await.unwrap().state,
            ContainerState::Running { .. }
        ));
        assert_eq!(runtime.list("a", Some("u1")).await.unwrap().len(), 2);
        assert_eq!(runtime.list("a", Some("u2")).await.unwrap().len(), 0);
        assert_eq!(runtime.list("b", None).await.unwrap().len(), 1);

        runtime.stop_container(&id, Duration::ZERO).await.unwrap();
        let ContainerState::Exited { exit_code, .. } = runtime.inspect(&id).await.unwrap().state
        else {
            panic!("not exited")
        };
        assert_eq!(exit_code, 137);
        runtime.remove_container(&id).await.unwrap();
        assert!(runtime.inspect(&id).await.is_err());
        assert!(runtime.exec(&sandbox_a, vec!["true".into()], false, false).await.is_err());
    }
}
