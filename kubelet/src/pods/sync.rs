//! One pod's sync, in the manner of upstream's SyncPod: make sure its sandbox runs, run the
//! init containers in order, then the app containers, restart the ones that ended as the
//! restart policy says (with upstream's back-off), and report the status. A pod being
//! deleted is stopped gracefully and its object removed.
//!
//! Probes ([`super::probes`]) run beside the sync and wake it when a result changes: readiness
//! goes into the status, a failed liveness or startup probe has the container killed and
//! restarted here. Lifecycle hooks ([`super::hooks`]) run here: postStart before the
//! container is reported running, preStop before it is stopped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use futures::future::{join_all, BoxFuture, Shared};
use futures::FutureExt;
use k8s_openapi::api::core::v1::{Container, Pod, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::Client;
use serde_json::{json, Value};
use tokio::sync::{watch, Notify};

use super::spec::{self, pod_ref, Context, Lookup};
use super::status::{self, ContainerView, PodFacts};
use super::{dns, hooks, probes, volumes};
use crate::runtime::{
    labels, ContainerRecord, ContainerState, Credentials, HostPort, LogOptions, PodRef, Runtime,
    SandboxSpec,
};
use crate::Config;
use rkube_runtime::backoff::Backoff;
use rkube_runtime::events::{pod_reference, Recorder};

mod ephemeral;

/// The crash-loop and image-pull back-offs (upstream's flowcontrol back-off): the first retry
/// is at once, then 10 s doubling to 5 min; forgotten after twice the maximum without failures.
const INITIAL_BACKOFF: Duration = Duration::from_secs(10);
/// How often a pod is synced when nothing wakes its worker: what refreshes its configMap and
/// secret volumes, and catches a runtime event that was missed.
const RESYNC: Duration = Duration::from_secs(10);
/// The same while containers are being started (their start or exit is an event too).
const BUSY_RESYNC: Duration = Duration::from_secs(3);
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// What starting a container needs from the sync that starts it.
struct StartInputs<'a> {
    sandbox_id: &'a str,
    pod_ip: &'a str,
    host_ip: &'a str,
    volumes: &'a std::collections::BTreeMap<String, volumes::Mounted>,
    /// `name_namespace(uid)`, as upstream's messages name the pod.
    pod_key: &'a str,
    /// The service links: listed once, and only when a container starts.
    service_env: tokio::sync::OnceCell<Vec<(String, String)>>,
    /// The container whose process namespace a new container joins (an ephemeral
    /// container's target).
    pid_target: Option<String>,
}

/// How [`Syncer::keep_running`] treats a container: its restart policy (the pod's, or
/// Always for a sidecar), whether it is an init container, and the pod's IP for its probes
/// and hooks.
struct KeepRunning<'a> {
    restart_policy: &'a str,
    init: bool,
    pod_ip: &'a str,
}

/// What a pod's worker keeps between syncs.
pub struct PodState {
    pub start_time: String,
    pub crash_backoff: Backoff,
    pub image_backoff: Backoff,
    /// When each image pull last failed.
    image_failures: HashMap<String, (Instant, String)>,
    /// Events already recorded, so a sync repeated every second does not repeat them.
    recorded: std::collections::HashSet<String>,
    last_status: Option<Value>,
    /// The pod's probe workers and their results.
    pub probes: probes::Probes,
    /// Container instances the kubelet killed (a failed probe or postStart hook): restarted
    /// unless the policy is Never, whatever their exit code; with the waiting reason to show
    /// meanwhile, if any.
    killed: HashMap<String, Option<(String, String)>>,
    /// The pod as the watch sees it, to notice its deletion while a postStart hook runs.
    updates: Option<watch::Receiver<Option<Arc<Pod>>>>,
    /// The soonest a back-off this sync met ends: the next sync is then, not later.
    wake: Option<Duration>,
    /// The end of the log of each failed container whose policy is
    /// `FallbackToLogsOnError`, by container id: read once.
    log_messages: HashMap<String, Option<String>>,
}

impl Default for PodState {
    fn default() -> Self {
        PodState {
            start_time: status::time(&Utc::now()),
            crash_backoff: Backoff::new(INITIAL_BACKOFF, MAX_BACKOFF),
            image_backoff: Backoff::new(INITIAL_BACKOFF, MAX_BACKOFF),
            image_failures: HashMap::new(),
            recorded: Default::default(),
            last_status: None,
            probes: probes::Probes::default(),
            killed: HashMap::new(),
            updates: None,
            wake: None,
            log_messages: HashMap::new(),
        }
    }
}

impl PodState {
    /// Asks for the next sync within `delay`.
    fn wake_within(&mut self, delay: Duration) {
        self.wake = Some(self.wake.map_or(delay, |w| w.min(delay)));
    }

    /// The state of a pod worker that `wake` wakes and that sees the pod through `updates`.
    pub fn new(wake: Arc<Notify>, updates: watch::Receiver<Option<Arc<Pod>>>) -> PodState {
        PodState {
            probes: probes::Probes::new(wake),
            updates: Some(updates),
            ..PodState::default()
        }
    }
}

/// Resolves once the pod is deleted or being deleted (never without a view of the pod).
async fn deletion(updates: Option<watch::Receiver<Option<Arc<Pod>>>>) {
    let Some(mut updates) = updates else { return std::future::pending().await };
    loop {
        let gone = updates
            .borrow_and_update()
            .as_ref()
            .is_none_or(|p| p.metadata.deletion_timestamp.is_some());
        if gone {
            return;
        }
        if updates.changed().await.is_err() {
            return std::future::pending().await;
        }
    }
}

/// The spec of the container (app or init) named `name`.
fn container_named<'a>(pod: &'a Pod, name: &str) -> Option<&'a Container> {
    let spec = pod.spec.as_ref()?;
    spec.containers.iter().chain(spec.init_containers.iter().flatten()).find(|c| c.name == name)
}

/// The pod's `terminationGracePeriodSeconds` (30 s by default).
pub(crate) fn termination_grace(pod: &Pod) -> Duration {
    let seconds = pod.spec.as_ref().and_then(|s| s.termination_grace_period_seconds).unwrap_or(30);
    Duration::from_secs(seconds.max(0) as u64)
}

/// Upstream's shortest stop after a preStop hook, so a container is not SIGKILLed at once.
const MINIMUM_GRACE: Duration = Duration::from_secs(2);

/// Stops one container instance as upstream's killContainer does: its preStop hook first
/// (within `grace`; a failure is a `FailedPreStopHook` event), then its `turn` in the pod's
/// termination order (a sidecar waits for the containers stopped before it, within what is
/// left of the grace period), then the stop signal with what is left. The caller records
/// the `Killing` event.
#[allow(clippy::too_many_arguments)]
async fn stop_instance(
    runtime: Arc<dyn Runtime>,
    recorder: Recorder,
    pod: Option<Arc<Pod>>,
    id: String,
    name: String,
    pod_ip: String,
    grace: Duration,
    turn: Option<BoxFuture<'static, ()>>,
) {
    let mut left = grace;
    let started = Instant::now();
    let container = pod.as_deref().and_then(|p| container_named(p, &name));
    let hook = container.and_then(|c| c.lifecycle.as_ref()).and_then(|l| l.pre_stop.as_ref());
    if let (Some(pod), Some(container), Some(hook)) = (pod.as_deref(), container, hook) {
        if !grace.is_zero() {
            let run = hooks::run(runtime.as_ref(), pod, container, &id, &pod_ip, hook);
            match tokio::time::timeout(grace, run).await {
                Ok(Err(message)) => {
                    recorder.record(&pod_reference(pod), "Warning", "FailedPreStopHook", &message);
                }
                Ok(Ok(())) => {}
                Err(_) => {
                    tracing::info!(container = name, "preStop hook not completed in grace period")
                }
            }
            left = grace.saturating_sub(started.elapsed()).max(MINIMUM_GRACE);
        }
    }
    if let Some(turn) = turn.filter(|_| !grace.is_zero()) {
        let _ = tokio::time::timeout(grace.saturating_sub(started.elapsed()), turn).await;
        left = grace.saturating_sub(started.elapsed()).max(MINIMUM_GRACE);
    }
    if let Err(e) = runtime.stop_container(&id, left).await {
        tracing::warn!(error = %e, container = name, "cannot stop the container");
    }
}

/// What the worker does after a sync.
#[derive(Debug, PartialEq)]
pub enum Next {
    /// Sync again after this long (or sooner when something changes).
    After(Duration),
    /// The pod is gone: the worker ends.
    Done,
}

pub struct Syncer {
    pub client: Client,
    pub runtime: Arc<dyn Runtime>,
    pub config: Arc<Config>,
    pub recorder: Recorder,
    /// Service-account tokens of projected volumes, cached across syncs.
    pub tokens: Arc<crate::tokens::TokenManager>,
}

/// A container's newest attempt and the one before it (by the attempt label).
pub(crate) fn latest<'a>(
    records: &'a [ContainerRecord],
    name: &str,
) -> (Option<&'a ContainerRecord>, Option<&'a ContainerRecord>) {
    let mut mine: Vec<&ContainerRecord> = records
        .iter()
        .filter(|r| !r.is_sandbox() && r.label(labels::CONTAINER_NAME) == name)
        .collect();
    mine.sort_by_key(|r| r.attempt());
    let current = mine.pop();
    (current, mine.pop())
}

/// A container as the runtime's records show it: its latest instance and the one before.
fn view_of(records: &[ContainerRecord], container: &Container) -> ContainerView {
    let (current, previous) = latest(records, &container.name);
    ContainerView {
        name: container.name.clone(),
        image: container.image.clone().unwrap_or_default(),
        current: current.cloned(),
        previous: previous.cloned(),
        ..Default::default()
    }
}

fn finished_at(record: &ContainerRecord) -> Option<chrono::DateTime<Utc>> {
    match &record.state {
        ContainerState::Exited { finished_at, .. } => Some(*finished_at),
        _ => None,
    }
}

/// An Instant as long ago as the given wall-clock time.
fn instant_of(t: chrono::DateTime<Utc>) -> Instant {
    let ago = (Utc::now() - t).to_std().unwrap_or_default();
    Instant::now().checked_sub(ago).unwrap_or_else(Instant::now)
}

fn is_running(record: &ContainerRecord) -> bool {
    matches!(record.state, ContainerState::Running { .. })
}

fn should_restart(policy: &str, exit_code: i64) -> bool {
    match policy {
        "Never" => false,
        "OnFailure" => exit_code != 0,
        _ => true,
    }
}

/// Whether every regular container has ended and will not run again (restart policy Never,
/// or OnFailure after success): the pod is done, whatever its sidecars do.
fn apps_done(
    containers: &[Container],
    records: &[ContainerRecord],
    restart_policy: &str,
    state: &PodState,
) -> bool {
    restart_policy != "Always"
        && !containers.is_empty()
        && containers.iter().all(|c| match latest(records, &c.name).0 {
            Some(ContainerRecord {
                state: ContainerState::Exited { exit_code, .. }, id, ..
            }) => {
                let killed = state.killed.contains_key(id) && restart_policy != "Never";
                !killed && !should_restart(restart_policy, *exit_code)
            }
            _ => false,
        })
}

impl Syncer {
    fn node(&self) -> &str {
        &self.config.node_name
    }

    async fn records(&self, uid: &str) -> Vec<ContainerRecord> {
        match self.runtime.list(self.node(), Some(uid)).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, uid, "cannot list the pod's containers");
                Vec::new()
            }
        }
    }

    /// Stops every container of the pod (app containers gracefully, then the sandbox) and
    /// removes them with the pod's volumes.
    pub async fn kill(&self, pod: Option<&Pod>, uid: &str, grace: Duration) {
        let records = self.records(uid).await;
        // preStop hooks need the pod's spec, and its IP for an httpGet.
        let with_hooks = pod.filter(|p| {
            let spec = p.spec.as_ref();
            spec.into_iter()
                .flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten()))
                .any(|c| c.lifecycle.as_ref().is_some_and(|l| l.pre_stop.is_some()))
        });
        let pod_ip = match with_hooks {
            Some(pod) => self.pod_ip_of(pod, &records).await,
            None => String::new(),
        };
        self.stop_in_order(pod, &records, &pod_ip, grace).await;
        for record in records.iter().filter(|r| r.is_sandbox()) {
            let _ = self.runtime.stop_container(&record.id, Duration::ZERO).await;
        }
        for record in &records {
            let _ = self.runtime.remove_container(&record.id).await;
        }
        volumes::clean_up(&self.config.root_dir, uid);
        self.tokens.forget_pod(uid);
        self.recorder.forget(uid);
    }

    /// The pod's IP: as its status says, else its running sandbox's.
    async fn pod_ip_of(&self, pod: &Pod, records: &[ContainerRecord]) -> String {
        if let Some(ip) =
            pod.status.as_ref().and_then(|s| s.pod_ip.clone()).filter(|ip| !ip.is_empty())
        {
            return ip;
        }
        for sandbox in records.iter().filter(|r| r.is_sandbox()) {
            if matches!(sandbox.state, ContainerState::Running { .. }) {
                if let Ok(ip) = self.runtime.sandbox_ip(&sandbox.id).await {
                    return ip;
                }
            }
        }
        String::new()
    }

    /// Runs a container's postStart hook (unless the pod is deleted meanwhile); when it fails,
    /// records `FailedPostStartHook`, kills the container and remembers why, so that the
    /// status says `PostStartHookError` until it restarts.
    async fn post_start(
        &self,
        pod: &Pod,
        container: &Container,
        id: &str,
        pod_ip: &str,
        state: &mut PodState,
    ) {
        let Some(hook) = container.lifecycle.as_ref().and_then(|l| l.post_start.as_ref()) else {
            return;
        };
        let run = hooks::run(self.runtime.as_ref(), pod, container, id, pod_ip, hook);
        let message = tokio::select! {
            result = run => match result {
                Ok(()) => return,
                Err(message) => message,
            },
            _ = deletion(state.updates.clone()) => return,
        };
        self.recorder.record(&pod_reference(pod), "Warning", "FailedPostStartHook", &message);
        self.recorder.record(&pod_reference(pod), "Normal", "Killing", "FailedPostStartHook");
        stop_instance(
            self.runtime.clone(),
            self.recorder.clone(),
            Some(Arc::new(pod.clone())),
            id.to_string(),
            container.name.clone(),
            pod_ip.to_string(),
            termination_grace(pod),
            None,
        )
        .await;
        state.killed.insert(id.to_string(), Some(("PostStartHookError".into(), message)));
    }

    /// Kills a container whose liveness or startup probe failed, as upstream: a `Killing`
    /// event, preStop, and the probe's own terminationGracePeriodSeconds when it has one.
    async fn kill_for_probe(
        &self,
        pod: &Pod,
        container: &Container,
        record: &ContainerRecord,
        kind: probes::Kind,
        how: &KeepRunning<'_>,
        state: &mut PodState,
    ) {
        let restart = how.restart_policy != "Never";
        let mut message =
            format!("Container {} failed {} probe", container.name, kind.name().to_lowercase());
        if restart {
            message.push_str(", will be restarted");
        }
        self.recorder.record(&pod_reference(pod), "Normal", "Killing", &message);
        let probe = match kind {
            probes::Kind::Startup => container.startup_probe.as_ref(),
            _ => container.liveness_probe.as_ref(),
        };
        let grace = match probe.and_then(|p| p.termination_grace_period_seconds) {
            Some(seconds) => Duration::from_secs(seconds.max(0) as u64),
            None => termination_grace(pod),
        };
        stop_instance(
            self.runtime.clone(),
            self.recorder.clone(),
            Some(Arc::new(pod.clone())),
            record.id.clone(),
            container.name.clone(),
            how.pod_ip.to_string(),
            grace,
            None,
        )
        .await;
        state.killed.insert(record.id.clone(), None);
        state.probes.stop(&container.name);
    }

    /// The credentials of the pod's imagePullSecrets for the image's registry.
    async fn credentials(&self, pod: &Pod, image: &str) -> Option<Credentials> {
        let namespace = pod.metadata.namespace.as_deref()?;
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        let registry = image.split('/').next().filter(|r| r.contains('.') || r.contains(':'));
        let registry = registry.unwrap_or("docker.io");
        for reference in pod.spec.as_ref()?.image_pull_secrets.iter().flatten() {
            let Ok(Some(secret)) = secrets.get_opt(&reference.name).await else { continue };
            let Some(data) = secret.data.as_ref().and_then(|d| d.get(".dockerconfigjson")) else {
                continue;
            };
            let Ok(config) = serde_json::from_slice::<Value>(&data.0) else { continue };
            for (server, entry) in config["auths"].as_object().into_iter().flatten() {
                let host = server.trim_start_matches("https://").trim_start_matches("http://");
                let host = host.split('/').next().unwrap_or("");
                let matches =
                    host == registry || (registry == "docker.io" && host.contains("docker.io"));
                if matches {
                    return Some(Credentials {
                        username: entry["username"].as_str().map(str::to_string),
                        password: entry["password"].as_str().map(str::to_string),
                        auth: entry["auth"].as_str().map(str::to_string),
                        server: Some(server.clone()),
                    });
                }
            }
        }
        None
    }

    /// Makes sure the container's image is there, as its pull policy says; else the waiting
    /// reason and message.
    async fn ensure_image(
        &self,
        pod: &Pod,
        container: &Container,
        state: &mut PodState,
    ) -> Result<(), (String, String)> {
        let image = container.image.clone().unwrap_or_default();
        let tag_latest =
            !image.rsplit('/').next().unwrap_or("").contains(':') || image.ends_with(":latest");
        let policy = container.image_pull_policy.clone().unwrap_or_else(|| {
            if tag_latest {
                "Always".into()
            } else {
                "IfNotPresent".into()
            }
        });
        let present = self.runtime.image_present(&image).await.unwrap_or(false);
        let event_key = |what: &str| format!("{what}/{}/{image}", container.name);
        match policy.as_str() {
            "Never" if !present => {
                let message =
                    format!("Container image \"{image}\" is not present with pull policy of Never");
                if state.recorded.insert(event_key("never")) {
                    self.recorder.record(
                        &pod_reference(pod),
                        "Warning",
                        "ErrImageNeverPull",
                        &message,
                    );
                }
                return Err(("ErrImageNeverPull".into(), message));
            }
            "Never" | "IfNotPresent" if present => {
                if state.recorded.insert(event_key("present")) {
                    self.recorder.record(
                        &pod_reference(pod),
                        "Normal",
                        "Pulled",
                        &format!("Container image \"{image}\" already present on machine"),
                    );
                }
                return Ok(());
            }
            _ => {}
        }
        if let Some((failed_at, _)) = state.image_failures.get(&image) {
            if let Some(left) =
                state.image_backoff.remaining_since(&image, *failed_at, Instant::now())
            {
                state.wake_within(left);
                return Err((
                    "ImagePullBackOff".into(),
                    format!("Back-off pulling image \"{image}\""),
                ));
            }
        }
        self.recorder.record(
            &pod_reference(pod),
            "Normal",
            "Pulling",
            &format!("Pulling image \"{image}\""),
        );
        let started = Instant::now();
        let credentials = self.credentials(pod, &image).await;
        match self.runtime.pull_image(&image, credentials).await {
            Ok(()) => {
                state.image_failures.remove(&image);
                self.recorder.record(
                    &pod_reference(pod),
                    "Normal",
                    "Pulled",
                    &format!(
                        "Successfully pulled image \"{image}\" in {:.3}s",
                        started.elapsed().as_secs_f64()
                    ),
                );
                Ok(())
            }
            Err(e) => {
                let message = format!("Failed to pull image \"{image}\": {e}");
                self.recorder.record(&pod_reference(pod), "Warning", "Failed", &message);
                self.recorder.record(
                    &pod_reference(pod),
                    "Warning",
                    "Failed",
                    "Error: ErrImagePull",
                );
                state.image_backoff.next(&image, Instant::now());
                state.image_failures.insert(image.clone(), (Instant::now(), message.clone()));
                Err(("ErrImagePull".into(), message))
            }
        }
    }

    /// Starts the next attempt of a container that is not running, unless it is still
    /// backing off after its last exit (upstream's CrashLoopBackOff); the new instance, or
    /// why there is none, goes into `view`.
    #[allow(clippy::too_many_arguments)]
    async fn start_or_back_off(
        &self,
        pod: &Pod,
        container: &Container,
        how: &KeepRunning<'_>,
        current: Option<&ContainerRecord>,
        attempt: u32,
        lookup: &mut Lookup<'_>,
        inputs: &StartInputs<'_>,
        state: &mut PodState,
        view: &mut ContainerView,
    ) {
        let init = how.init;
        let key = if init { format!("init/{}", container.name) } else { container.name.clone() };
        let after_exit = current.and_then(finished_at);
        if let Some(delay) = after_exit
            .and_then(|t| state.crash_backoff.in_backoff_since(&key, instant_of(t), Instant::now()))
        {
            if let Some(left) = after_exit.and_then(|t| {
                state.crash_backoff.remaining_since(&key, instant_of(t), Instant::now())
            }) {
                state.wake_within(left);
            }
            let pod_key = inputs.pod_key;
            if state.recorded.insert(format!("backoff/{key}/{attempt}")) {
                let message = format!(
                    "Back-off restarting failed container {} in pod {pod_key}",
                    container.name
                );
                self.recorder.record(&pod_reference(pod), "Warning", "BackOff", &message);
            }
            view.waiting = Some((
                "CrashLoopBackOff".into(),
                format!(
                    "back-off {}s restarting failed container={} pod={pod_key}",
                    delay.as_secs(),
                    container.name
                ),
            ));
            return;
        }
        if after_exit.is_some() {
            state.crash_backoff.next(&key, Instant::now());
        }
        match self.start(pod, container, init, attempt, lookup, inputs, state).await {
            Err(waiting) => view.waiting = Some(waiting),
            Ok(id) => {
                view.current = self.runtime.inspect(&id).await.ok();
                if current.map(|c| c.attempt()) != Some(attempt) {
                    view.previous = current.cloned();
                }
                let restarts = how.restart_policy != "Never";
                if let Some(Some(waiting)) = state.killed.get(&id).filter(|_| restarts) {
                    view.waiting = Some(waiting.clone());
                }
            }
        }
    }

    /// Makes and starts one container (a new attempt): its id (it exists even when it
    /// could not start: its status shows why), or the waiting reason.
    #[allow(clippy::too_many_arguments)]
    async fn start(
        &self,
        pod: &Pod,
        container: &Container,
        init: bool,
        attempt: u32,
        lookup: &mut Lookup<'_>,
        inputs: &StartInputs<'_>,
        state: &mut PodState,
    ) -> Result<String, (String, String)> {
        self.ensure_image(pod, container, state).await?;
        let service_env = inputs
            .service_env
            .get_or_init(|| async {
                let links = pod.spec.as_ref().and_then(|s| s.enable_service_links).unwrap_or(true);
                if links {
                    spec::service_env(&self.client, &lookup.namespace).await
                } else {
                    Vec::new()
                }
            })
            .await;
        let ctx = Context {
            pod_ip: inputs.pod_ip,
            host_ip: inputs.host_ip,
            service_env,
            node_allocatable: &self.config.allocatable,
            volumes: inputs.volumes,
        };
        let mut spec = spec::container_spec(pod, container, init, attempt, lookup, &ctx)
            .await
            .map_err(|e| ("CreateContainerConfigError".to_string(), e.0))?;
        // The termination message file is the node's, so it outlives the container; any
        // user the container runs as may write it (0666, as upstream's kubelet makes it).
        if let Some(path) = spec.termination_message_path.clone() {
            let host = termination_log(&self.config, pod, &container.name, attempt);
            let made = match host.parent() {
                Some(dir) => std::fs::create_dir_all(dir)
                    .and_then(|()| std::fs::write(&host, b""))
                    .and_then(|()| {
                        use std::os::unix::fs::PermissionsExt;
                        std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o666))
                    }),
                None => Ok(()),
            };
            if let Err(e) = made {
                return Err((
                    "CreateContainerError".into(),
                    format!("cannot create {}: {e}", host.display()),
                ));
            }
            spec.binds.push(format!("{}:{path}", host.display()));
        }
        let names = self.name_files(pod, container, inputs.pod_ip, spec.read_only_rootfs);
        spec.binds.extend(names.map_err(|e| ("CreateContainerConfigError".to_string(), e))?);
        spec.pid_target = inputs.pid_target.clone();
        let share_pid = pod.spec.as_ref().and_then(|s| s.share_process_namespace).unwrap_or(false);
        let id = match self
            .runtime
            .create_container(self.node(), inputs.sandbox_id, share_pid, &spec)
            .await
        {
            Ok(id) => id,
            Err(e) => {
                let message = e.to_string();
                self.recorder.record(
                    &pod_reference(pod),
                    "Warning",
                    "Failed",
                    &format!("Error: {message}"),
                );
                return Err(("CreateContainerError".into(), message));
            }
        };
        self.recorder.record(
            &pod_reference(pod),
            "Normal",
            "Created",
            &format!("Created container {}", container.name),
        );
        if let Err(e) = self.runtime.start_container(&id).await {
            let message = e.to_string();
            self.recorder.record(
                &pod_reference(pod),
                "Warning",
                "Failed",
                &format!("Error: {message}"),
            );
            // The container exists and has exited: its status shows the error.
            return Ok(id);
        }
        self.recorder.record(
            &pod_reference(pod),
            "Normal",
            "Started",
            &format!("Started container {}", container.name),
        );
        // Until the hook is done the sync does not go on, so the status does not say Running.
        self.post_start(pod, container, &id, inputs.pod_ip, state).await;
        Ok(id)
    }

    /// A failed container's termination message from its log, as upstream's
    /// `FallbackToLogsOnError`: the last 80 lines, at most their last 2048 bytes. Read once
    /// per container (and at most 5 s).
    async fn log_tail_message(&self, id: &str, state: &mut PodState) -> Option<String> {
        if let Some(known) = state.log_messages.get(id) {
            return known.clone();
        }
        let options = LogOptions { tail_lines: Some(80), ..Default::default() };
        let read = async {
            let mut stream = self.runtime.logs(id, options);
            let mut log = Vec::new();
            while let Some(Ok(chunk)) = futures::StreamExt::next(&mut stream).await {
                log.extend_from_slice(&chunk);
            }
            log
        };
        let log = tokio::time::timeout(Duration::from_secs(5), read).await.ok()?;
        let tail = &log[log.len().saturating_sub(2048)..];
        let message = String::from_utf8_lossy(tail).into_owned();
        let message = (!message.is_empty()).then_some(message);
        state.log_messages.insert(id.to_string(), message.clone());
        message
    }

    /// Keeps one container running as its restart policy says: kills it when a liveness or
    /// startup probe failed, starts its next attempt (after the back-off) when it ended or was
    /// never made, and follows the running instance with its probes. What it saw goes into
    /// `view`; true when it started or killed something (the pod is busy).
    #[allow(clippy::too_many_arguments)]
    async fn keep_running(
        &self,
        pod: &Pod,
        container: &Container,
        how: &KeepRunning<'_>,
        lookup: &mut Lookup<'_>,
        inputs: &StartInputs<'_>,
        state: &mut PodState,
        view: &mut ContainerView,
    ) -> bool {
        let mut busy = false;
        // A failed liveness or startup probe: the container is killed, then restarted below
        // as the policy says.
        if let Some(record) = view.current.clone().filter(is_running) {
            if let Some(kind) = state.probes.failed(&container.name, &record.id) {
                busy = true;
                self.kill_for_probe(pod, container, &record, kind, how, state).await;
                if let Ok(after) = self.runtime.inspect(&record.id).await {
                    view.current = Some(after);
                }
            }
        }
        let current = view.current.clone();
        let current = current.as_ref();
        let start_attempt = match current.map(|c| &c.state) {
            Some(ContainerState::Running { .. }) => None,
            Some(ContainerState::Exited { exit_code, .. }) => {
                let killed = current.is_some_and(|c| state.killed.contains_key(&c.id))
                    && how.restart_policy != "Never";
                (killed || should_restart(how.restart_policy, *exit_code))
                    .then(|| current.map(|c| c.attempt() + 1).unwrap_or(0))
            }
            // Made but not started, or not made yet.
            Some(ContainerState::Created) => {
                if let Some(c) = current {
                    let _ = self.runtime.remove_container(&c.id).await;
                }
                Some(current.map(|c| c.attempt()).unwrap_or(0))
            }
            None => Some(0),
        };
        if let Some(attempt) = start_attempt {
            busy = true;
            self.start_or_back_off(
                pod, container, how, current, attempt, lookup, inputs, state, view,
            )
            .await;
        }
        // Probes follow the running instance; what they say goes into the status.
        if probes::has_probes(container) {
            match view.current.as_ref().filter(|r| is_running(r)) {
                Some(record) => {
                    let ctx = probes::Context {
                        runtime: self.runtime.clone(),
                        recorder: self.recorder.clone(),
                        pod_ip: how.pod_ip.to_string(),
                        simulated: !self.runtime.runs_processes(),
                    };
                    state.probes.ensure(&ctx, pod, container, record);
                    let says = state.probes.says(container, &record.id);
                    view.startup = says.startup;
                    view.readiness = says.readiness;
                }
                None => state.probes.stop(&container.name),
            }
        }
        busy
    }

    /// Stops the running containers of a pod in upstream's termination order: the regular
    /// (and plain init) containers all at once, then the sidecars one at a time, the one
    /// declared last first. Every preStop hook starts at once; the stop signals follow that
    /// order within `grace` (at least 2 s each once a hook ran or a turn was waited for).
    /// Whether anything was running.
    async fn stop_in_order(
        &self,
        pod: Option<&Pod>,
        records: &[ContainerRecord],
        pod_ip: &str,
        grace: Duration,
    ) -> bool {
        let sidecars: Vec<String> = pod
            .and_then(|p| p.spec.as_ref())
            .and_then(|s| s.init_containers.as_ref())
            .into_iter()
            .flatten()
            .filter(|c| spec::is_sidecar(c))
            .map(|c| c.name.clone())
            .collect();
        let rank = |r: &ContainerRecord| {
            sidecars.iter().position(|n| n == r.label(labels::CONTAINER_NAME))
        };
        let running: Vec<&ContainerRecord> =
            records.iter().filter(|r| !r.is_sandbox() && is_running(r)).collect();
        if running.is_empty() {
            return false;
        }
        let (mut last, first): (Vec<&ContainerRecord>, Vec<&ContainerRecord>) =
            running.into_iter().partition(|r| rank(r).is_some());
        last.sort_by_key(|r| std::cmp::Reverse(rank(r)));
        let shared_pod = pod.map(|p| Arc::new(p.clone()));
        let mut done: Vec<Shared<BoxFuture<'static, ()>>> = Vec::new();
        let mut before: Vec<Shared<BoxFuture<'static, ()>>> = Vec::new();
        for record in first.into_iter().chain(last) {
            let name = record.label(labels::CONTAINER_NAME).to_string();
            if let Some(pod) = pod {
                self.recorder.record(
                    &pod_reference(pod),
                    "Normal",
                    "Killing",
                    &format!("Stopping container {name}"),
                );
            }
            let turn = rank(record).map(|_| join_all(before.clone()).map(|_| ()).boxed());
            let stop = tokio::spawn(stop_instance(
                self.runtime.clone(),
                self.recorder.clone(),
                shared_pod.clone(),
                record.id.clone(),
                name,
                pod_ip.to_string(),
                grace,
                turn,
            ));
            let finished = stop.map(|_| ()).boxed().shared();
            done.push(finished.clone());
            if rank(record).is_some() {
                before = vec![finished];
            } else {
                before = done.clone();
            }
        }
        join_all(done).await;
        true
    }

    /// Writes the pod's resolv.conf into its directory (as its dnsPolicy and dnsConfig
    /// say, [`dns::pod_resolv_conf`]), recording the warnings making it gave; what it says.
    fn write_resolv_conf(&self, pod: &Pod) -> Result<dns::ResolvConf, String> {
        let host = dns::host_resolv_conf(&self.config.dns).map_err(|e| {
            let path = self.config.dns.resolv_conf.as_deref().unwrap_or(Path::new(""));
            format!("open {}: {e}", path.display())
        })?;
        let made = dns::pod_resolv_conf(pod, &self.config.dns, &host, &pod_key(pod));
        for warning in &made.warnings {
            let target =
                if warning.on_node { node_reference(&self.config) } else { pod_reference(pod) };
            self.recorder.record(&target, "Warning", warning.reason, &warning.message);
        }
        let path = dns::resolv_conf_path(&pod_dir(&self.config, pod));
        dns::write_file(&path, &made.conf.render())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(made.conf)
    }

    /// The pod's resolv.conf and hosts file as bind mounts for one of its containers
    /// (neither where the container mounts a volume of its own): the resolv.conf the
    /// sandbox was made with, the hosts file written anew with the pod's IP, as upstream's
    /// kubelet does for each container it makes.
    fn name_files(
        &self,
        pod: &Pod,
        container: &Container,
        pod_ip: &str,
        read_only: bool,
    ) -> Result<Vec<String>, String> {
        let dir = pod_dir(&self.config, pod);
        let mounted = |at: &str| {
            container
                .volume_mounts
                .iter()
                .flatten()
                .any(|m| m.mount_path.trim_end_matches('/') == at)
        };
        let mut binds = Vec::new();
        if !mounted("/etc/resolv.conf") {
            let path = dns::resolv_conf_path(&dir);
            // A sandbox made by an earlier kubelet has none yet.
            if !path.exists() {
                self.write_resolv_conf(pod)?;
            }
            let ro = if read_only { ":ro" } else { "" };
            binds.push(format!("{}:/etc/resolv.conf{ro}", path.display()));
        }
        if !mounted("/etc/hosts") && !pod_ip.is_empty() {
            let spec = pod.spec.as_ref();
            let aliases = spec.and_then(|s| s.host_aliases.as_deref()).unwrap_or(&[]);
            let text = if spec.and_then(|s| s.host_network).unwrap_or(false) {
                let node = std::fs::read_to_string("/etc/hosts")
                    .map_err(|e| format!("open /etc/hosts: {e}"))?;
                dns::host_network_hosts(&node, aliases)
            } else {
                let name = dns::hostname_and_domain(pod, &self.config.dns.cluster_domain)?;
                dns::managed_hosts(&[pod_ip], &name, aliases)
            };
            let path = dns::hosts_path(&dir);
            dns::write_file(&path, &text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            binds.push(format!("{}:/etc/hosts", path.display()));
        }
        Ok(binds)
    }

    /// Makes the pod's sandbox run; its id and IP.
    async fn sandbox(
        &self,
        pod: &Pod,
        records: &[ContainerRecord],
    ) -> crate::runtime::Result<(String, String, bool)> {
        let mut sandboxes: Vec<&ContainerRecord> =
            records.iter().filter(|r| r.is_sandbox()).collect();
        sandboxes.sort_by_key(|r| r.attempt());
        let latest = sandboxes.last();
        if let Some(sandbox) = latest.filter(|s| matches!(s.state, ContainerState::Running { .. }))
        {
            let host_network = pod.spec.as_ref().and_then(|s| s.host_network).unwrap_or(false);
            let ip = if host_network {
                String::new()
            } else {
                self.runtime.sandbox_ip(&sandbox.id).await?
            };
            return Ok((sandbox.id.clone(), ip, false));
        }
        // A new sandbox: whatever ran in the old one must go (upstream kills the pod).
        let attempt = latest.map(|s| s.attempt() + 1).unwrap_or(0);
        for record in records.iter().filter(|r| matches!(r.state, ContainerState::Running { .. })) {
            let _ = self.runtime.stop_container(&record.id, Duration::from_secs(2)).await;
        }
        let other = crate::runtime::RuntimeError::Other;
        let dns = self.write_resolv_conf(pod).map_err(other)?;
        let spec = sandbox_spec(pod, attempt, &self.config, dns).map_err(other)?;
        let (id, ip) = self.runtime.run_sandbox(self.node(), &spec).await?;
        Ok((id, ip, true))
    }

    /// One sync of a live pod.
    pub async fn sync(&self, pod: &Pod, state: &mut PodState) -> Next {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        if pod.metadata.deletion_timestamp.is_some() {
            let grace = pod
                .metadata
                .deletion_grace_period_seconds
                .or_else(|| pod.spec.as_ref().and_then(|s| s.termination_grace_period_seconds))
                .unwrap_or(30)
                .max(0) as u64;
            state.probes.clear();
            self.kill(Some(pod), &uid, Duration::from_secs(grace)).await;
            self.report_terminal(pod, &uid, state).await;
            delete_now(&self.client, pod).await;
            return Next::Done;
        }
        let terminal = matches!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded" | "Failed")
        );
        let began = Instant::now();
        let records = self.records(&uid).await;
        let host_ip = self.config.node_ip.to_string();
        let host_network = pod.spec.as_ref().and_then(|s| s.host_network).unwrap_or(false);
        let spec = pod.spec.clone().unwrap_or_default();
        let restart_policy = spec.restart_policy.clone().unwrap_or_else(|| "Always".into());
        state.killed.retain(|id, _| records.iter().any(|r| r.id == *id));
        state.log_messages.retain(|id, _| records.iter().any(|r| r.id == *id));
        if terminal {
            state.probes.clear();
            // Nothing runs again; the sandbox is no longer needed. Containers stay for logs.
            for record in records
                .iter()
                .filter(|r| r.is_sandbox() && matches!(r.state, ContainerState::Running { .. }))
            {
                let _ = self.runtime.stop_container(&record.id, Duration::ZERO).await;
            }
            return Next::After(Duration::from_secs(30));
        }
        // `activeDeadlineSeconds`: past it, the pod is stopped and Failed, as upstream's
        // kubelet does; before it, a sync is due when it passes.
        if let Some(deadline) = spec.active_deadline_seconds.filter(|d| *d >= 0) {
            let now = Utc::now().timestamp();
            let started = pod
                .status
                .as_ref()
                .and_then(|s| s.start_time.as_ref())
                .map_or(now, |t| t.0.as_second());
            let active = Duration::from_secs((now - started).max(0) as u64);
            let deadline = Duration::from_secs(deadline as u64);
            if active >= deadline {
                self.deadline_exceeded(pod, &uid, state).await;
                return Next::After(Duration::from_secs(30));
            }
            state.wake_within(deadline - active);
        }
        let (sandbox_id, sandbox_ip, fresh) = match self.sandbox(pod, &records).await {
            Ok(s) => s,
            Err(e) => {
                let message = format!("Failed to create pod sandbox: {e}");
                if state.recorded.insert(format!("sandbox/{message}")) {
                    self.recorder.record(
                        &pod_reference(pod),
                        "Warning",
                        "FailedCreatePodSandBox",
                        &message,
                    );
                }
                return Next::After(Duration::from_secs(2));
            }
        };
        // A new sandbox stopped what ran in the old one: listed again, unless nothing did.
        let relist = fresh && records.iter().any(|r| !r.is_sandbox());
        let mut records = if relist { self.records(&uid).await } else { records };
        let pod_ip = if host_network { host_ip.clone() } else { sandbox_ip };
        let sandbox_ready = began.elapsed();
        let mut lookup =
            Lookup::new(&self.client, pod.metadata.namespace.as_deref().unwrap_or("default"))
                .with_tokens(self.tokens.clone());
        let node = volumes::Node {
            pod_ip: &pod_ip,
            host_ip: &host_ip,
            allocatable: &self.config.allocatable,
        };
        let volumes = match volumes::prepare(&self.config.root_dir, pod, &mut lookup, &node).await {
            Ok(v) => v,
            Err(e) => {
                if state.recorded.insert(format!("mount/{}", e.0)) {
                    self.recorder.record(&pod_reference(pod), "Warning", "FailedMount", &e.0);
                }
                Default::default()
            }
        };
        let pod_key = pod_key(pod);
        let inputs = StartInputs {
            sandbox_id: &sandbox_id,
            pod_ip: &pod_ip,
            host_ip: &host_ip,
            volumes: &volumes,
            pod_key: &pod_key,
            service_env: tokio::sync::OnceCell::new(),
            pid_target: None,
        };
        let mut busy = false;

        // A pod whose regular containers have all ended for good (restart policy Never or
        // OnFailure) is done: its sidecars are stopped, last first, and not restarted.
        let apps_done = apps_done(&spec.containers, &records, &restart_policy, state);
        if apps_done
            && self.stop_in_order(Some(pod), &records, &pod_ip, termination_grace(pod)).await
        {
            records = self.records(&uid).await;
        }
        // Upstream's podHasInitialized: once a regular container was made, the regular init
        // containers are not run again (sidecars are kept running whatever their order).
        let initialized_before = spec.containers.iter().any(|c| {
            latest(&records, &c.name).0.is_some_and(|r| {
                matches!(r.state, ContainerState::Created | ContainerState::Running { .. })
            })
        });

        // Init containers, one at a time, in order; a sidecar (restartPolicy Always) counts as
        // done once it has started, and is kept running from then on.
        let mut init_views = Vec::new();
        let mut init_done = true;
        for container in spec.init_containers.iter().flatten() {
            let sidecar = spec::is_sidecar(container);
            let mut view = ContainerView { sidecar, ..view_of(&records, container) };
            if initialized_before && !sidecar {
                init_views.push(view);
                continue;
            }
            if !init_done && !initialized_before {
                view.waiting = Some(("PodInitializing".into(), String::new()));
                init_views.push(view);
                continue;
            }
            if sidecar {
                if apps_done {
                    state.probes.stop(&container.name);
                } else {
                    let how = KeepRunning { restart_policy: "Always", init: true, pod_ip: &pod_ip };
                    busy |= self
                        .keep_running(pod, container, &how, &mut lookup, &inputs, state, &mut view)
                        .await;
                    if !view.started() {
                        init_done = false;
                    }
                }
                init_views.push(view);
                continue;
            }
            let current = view.current.clone();
            let current = current.as_ref();
            match current.map(|c| &c.state) {
                Some(ContainerState::Exited { exit_code: 0, .. }) => {}
                Some(ContainerState::Running { .. }) => {
                    init_done = false;
                    busy = true;
                }
                other => {
                    init_done = false;
                    let failed = matches!(other, Some(ContainerState::Exited { .. }));
                    if failed && restart_policy == "Never" {
                        init_views.push(view);
                        continue;
                    }
                    busy = true;
                    let attempt = current.map(|c| c.attempt() + 1).unwrap_or(0);
                    let how = KeepRunning {
                        restart_policy: &restart_policy,
                        init: true,
                        pod_ip: &pod_ip,
                    };
                    self.start_or_back_off(
                        pod,
                        container,
                        &how,
                        current,
                        attempt,
                        &mut lookup,
                        &inputs,
                        state,
                        &mut view,
                    )
                    .await;
                }
            }
            init_views.push(view);
        }

        // App containers, once the init containers are done.
        let mut app_views = Vec::new();
        for container in &spec.containers {
            let mut view = view_of(&records, container);
            if !init_done && !initialized_before {
                view.waiting = Some(("PodInitializing".into(), String::new()));
                app_views.push(view);
                continue;
            }
            let how = KeepRunning { restart_policy: &restart_policy, init: false, pod_ip: &pod_ip };
            busy |= self
                .keep_running(pod, container, &how, &mut lookup, &inputs, state, &mut view)
                .await;
            if let Some(record) =
                view.current.as_ref().filter(|r| matches!(r.state, ContainerState::Exited { .. }))
            {
                let path = termination_log(&self.config, pod, &container.name, record.attempt());
                if let Ok(bytes) = std::fs::read(&path) {
                    // Upstream keeps at most 4096 bytes of it.
                    let text =
                        String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned();
                    view.termination_message = (!text.is_empty()).then_some(text);
                }
                let failed = matches!(record.state, ContainerState::Exited { exit_code, .. } if exit_code != 0);
                let fallback = container.termination_message_policy.as_deref()
                    == Some("FallbackToLogsOnError");
                if view.termination_message.is_none() && failed && fallback {
                    view.termination_message = self.log_tail_message(&record.id, state).await;
                }
            }
            app_views.push(view);
        }

        let others: Vec<&ContainerView> = init_views.iter().chain(&app_views).collect();
        let (ephemeral_views, started) = self
            .ephemeral_containers(pod, &records, &others, !apps_done, &mut lookup, &inputs, state)
            .await;
        busy |= started;

        let facts = PodFacts {
            pod_ip: &pod_ip,
            host_ip: &host_ip,
            sandbox_ready: true,
            start_time: &state.start_time,
        };
        let mut status = status::pod_status(pod, &facts, &init_views, &app_views);
        if !ephemeral_views.is_empty() {
            status["ephemeralContainerStatuses"] = status::ephemeral_statuses(&ephemeral_views);
        }
        let phase = status["phase"].as_str().unwrap_or("").to_string();
        let containers_done = began.elapsed();
        self.report(pod, status, state).await;
        // Where a sync's time goes (`RUST_LOG=rkube_kubelet::pods::sync=debug`).
        tracing::debug!(
            pod = pod.metadata.name.as_deref().unwrap_or(""),
            fresh,
            sandbox_ms = sandbox_ready.as_millis() as u64,
            containers_ms = containers_done.as_millis() as u64,
            total_ms = began.elapsed().as_millis() as u64,
            "synced"
        );
        if phase == "Succeeded" || phase == "Failed" {
            // Stop the sandbox now that nothing will run again.
            let _ = self.runtime.stop_container(&sandbox_id, Duration::ZERO).await;
        }
        // Containers starting or stopping wake the worker (runtime events), and so do probes;
        // the timer is for back-offs ending, and a safety net.
        let safety = if busy { BUSY_RESYNC } else { RESYNC };
        Next::After(state.wake.take().map_or(safety, |w| w.min(safety)))
    }

    /// Moves a deleted pod whose containers were stopped to a terminal phase before its final
    /// delete, as upstream's kubelet does, so that whatever still holds the object (a Job's
    /// tracking finalizer) sees how it ended: Succeeded when every container exited with 0,
    /// else Failed, with the containers' terminated states.
    async fn report_terminal(&self, pod: &Pod, uid: &str, state: &mut PodState) {
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded" | "Failed")) {
            return;
        }
        let records = self.records(uid).await;
        let spec = pod.spec.clone().unwrap_or_default();
        let apps: Vec<ContainerView> =
            spec.containers.iter().map(|c| view_of(&records, c)).collect();
        let succeeded = apps.iter().all(|v| v.exit_code() == Some(0));
        let statuses: Vec<Value> =
            apps.iter().map(|v| status::container_status(v, false)).collect();
        let phase = if succeeded { "Succeeded" } else { "Failed" };
        self.report(pod, json!({"phase": phase, "containerStatuses": statuses}), state).await;
    }

    /// Stops a pod past its `activeDeadlineSeconds` (within its grace period) and reports it
    /// Failed with upstream's reason and message.
    async fn deadline_exceeded(&self, pod: &Pod, uid: &str, state: &mut PodState) {
        let message = "Pod was active on the node longer than the specified deadline";
        if state.recorded.insert("DeadlineExceeded".into()) {
            self.recorder.record(&pod_reference(pod), "Normal", "DeadlineExceeded", message);
        }
        state.probes.clear();
        let grace = pod.spec.as_ref().and_then(|s| s.termination_grace_period_seconds);
        self.kill(Some(pod), uid, Duration::from_secs(grace.unwrap_or(30).max(0) as u64)).await;
        let records = self.records(uid).await;
        let spec = pod.spec.clone().unwrap_or_default();
        let statuses: Vec<Value> = spec
            .containers
            .iter()
            .map(|c| status::container_status(&view_of(&records, c), false))
            .collect();
        let status = json!({
            "phase": "Failed",
            "reason": "DeadlineExceeded",
            "message": message,
            "containerStatuses": statuses,
        });
        self.report(pod, status, state).await;
    }

    /// Reports a pod rejected at admission ([`super::admission`]): Failed with upstream's
    /// reason and message, and a warning event, without running anything.
    pub(crate) async fn reject(&self, pod: &Pod, state: &mut PodState) {
        use super::admission::{NODE_PORTS_MESSAGE, NODE_PORTS_REASON};
        if state.recorded.insert(NODE_PORTS_REASON.into()) {
            self.recorder.record(
                &pod_reference(pod),
                "Warning",
                NODE_PORTS_REASON,
                NODE_PORTS_MESSAGE,
            );
        }
        let status = json!({
            "phase": "Failed",
            "reason": NODE_PORTS_REASON,
            "message": format!("Pod was rejected: {NODE_PORTS_MESSAGE}"),
        });
        self.report(pod, status, state).await;
    }

    /// Patches the pod's status when it changed.
    async fn report(&self, pod: &Pod, status: Value, state: &mut PodState) {
        if state.last_status.as_ref() == Some(&status) {
            return;
        }
        let pods: Api<Pod> = Api::namespaced(
            self.client.clone(),
            pod.metadata.namespace.as_deref().unwrap_or("default"),
        );
        let name = pod.metadata.name.as_deref().unwrap_or("");
        // Upstream's kubelet patches with the pod's uid as a precondition; a static pod's
        // status goes to its mirror pod, whose uid is the API server's.
        let patch = if crate::static_pods::is_static(pod) {
            json!({"status": status})
        } else {
            json!({"metadata": {"uid": pod.metadata.uid}, "status": status})
        };
        match pods.patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch)).await {
            Ok(_) => state.last_status = Some(status),
            Err(e) => tracing::debug!(pod = name, error = %e, "cannot update the pod status"),
        }
    }
}

/// Deletes a pod object at once (grace period 0), if it is still the one with this uid: the
/// final delete of a pod whose containers are gone, or of a mirror pod.
pub async fn delete_now(client: &kube::Client, pod: &Pod) {
    let pods: Api<Pod> =
        Api::namespaced(client.clone(), pod.metadata.namespace.as_deref().unwrap_or("default"));
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: pod.metadata.uid.clone(),
            resource_version: None,
        }),
        ..Default::default()
    };
    if let Err(e) = pods.delete(pod.metadata.name.as_deref().unwrap_or(""), &params).await {
        tracing::debug!(error = %e, "deleting a pod object");
    }
}

/// What the runtime needs for the pod's sandbox, whose resolv.conf says `dns`; why it
/// cannot be made (a hostname too long for the kernel).
pub fn sandbox_spec(
    pod: &Pod,
    attempt: u32,
    config: &Config,
    dns: dns::ResolvConf,
) -> Result<SandboxSpec, String> {
    let spec = pod.spec.clone().unwrap_or_default();
    let hostname = dns::hostname_and_domain(pod, &config.dns.cluster_domain)?.nodename;
    let mut host_ports = Vec::new();
    for container in &spec.containers {
        for port in container.ports.iter().flatten() {
            if let Some(host_port) = port.host_port.filter(|p| *p > 0) {
                host_ports.push(HostPort {
                    protocol: port.protocol.as_deref().unwrap_or("TCP").to_lowercase(),
                    container_port: port.container_port as u16,
                    host_ip: port.host_ip.clone().unwrap_or_default(),
                    host_port: host_port as u16,
                });
            }
        }
    }
    let extra_hosts = spec
        .host_aliases
        .iter()
        .flatten()
        .flat_map(|a| a.hostnames.iter().flatten().map(move |h| format!("{h}:{}", a.ip)))
        .collect();
    Ok(SandboxSpec {
        pod: pod_ref(pod),
        attempt,
        hostname,
        host_network: spec.host_network.unwrap_or(false),
        share_pid: spec.share_process_namespace.unwrap_or(false),
        host_ports,
        dns_servers: dns.nameservers,
        dns_searches: dns.searches,
        dns_options: dns.options,
        extra_hosts,
        sysctls: spec
            .security_context
            .iter()
            .flat_map(|s| s.sysctls.iter().flatten())
            .map(|s| (s.name.clone(), s.value.clone()))
            .collect(),
    })
}

/// `name_namespace(uid)`, as upstream's messages name a pod.
fn pod_key(pod: &Pod) -> String {
    format!(
        "{}_{}({})",
        pod.metadata.name.as_deref().unwrap_or(""),
        pod.metadata.namespace.as_deref().unwrap_or(""),
        pod.metadata.uid.as_deref().unwrap_or("")
    )
}

/// The node, as the kubelet names it in events (its name as uid, as upstream's).
fn node_reference(config: &Config) -> k8s_openapi::api::core::v1::ObjectReference {
    k8s_openapi::api::core::v1::ObjectReference {
        kind: Some("Node".into()),
        name: Some(config.node_name.clone()),
        uid: Some(config.node_name.clone()),
        ..Default::default()
    }
}

/// The pod's directory on the node (its volumes, resolv.conf and hosts file).
fn pod_dir(config: &Config, pod: &Pod) -> PathBuf {
    pods_dir(config).join(pod.metadata.uid.as_deref().unwrap_or("unknown"))
}

/// Where a container's termination message lives on the node.
fn termination_log(config: &Config, pod: &Pod, container: &str, attempt: u32) -> PathBuf {
    pods_dir(config)
        .join(pod.metadata.uid.as_deref().unwrap_or("unknown"))
        .join("containers")
        .join(container)
        .join(format!("{attempt}.termination-log"))
}

/// The pod's uid, namespace and name.
pub fn reference(pod: &Pod) -> PodRef {
    pod_ref(pod)
}

/// Where this kubelet keeps pod data.
pub fn pods_dir(config: &Config) -> PathBuf {
    config.root_dir.join("pods")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_policies() {
        assert!(should_restart("Always", 0));
        assert!(should_restart("OnFailure", 1));
        assert!(!should_restart("OnFailure", 0));
        assert!(!should_restart("Never", 1));
    }
}
