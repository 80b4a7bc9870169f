//! The `horizontal-pod-autoscaler-controller`, as kube-controller-manager's: every
//! autoscaling/v2 HorizontalPodAutoscaler's target is scaled to the count its metrics ask for,
//! and the HPA's status (current and desired replicas, the metrics, `lastScaleTime`, the
//! `AbleToScale`, `ScalingActive` and `ScalingLimited` conditions) and events say how.
//!
//! Start at [`run`]: each HPA is reconciled once every `--horizontal-pod-autoscaler-sync-period`
//! (a new or changed HPA waits for the next period, as upstream's queue makes it). A
//! reconcile (`Controller::reconcile`, upstream's `reconcileAutoscaler`):
//!
//! 1. reads the target's `Scale` through its `/scale` subresource ([`scale_target`]: any
//!    scalable resource, the kind resolved through discovery), and its pod selector from the
//!    Scale's status;
//! 2. keeps the count within `minReplicas`..`maxReplicas`, leaves a target scaled to zero
//!    alone, and otherwise computes each metric's count ([`replica_calculator`], from the
//!    [`metrics`] the API server serves and the pods of the shared informer), taking the
//!    highest;
//! 3. stabilizes and limits that count ([`behavior`]) and writes it to the Scale;
//! 4. writes the status when it changed, and records the events upstream records
//!    (`SuccessfulRescale`, `FailedGetScale`, `FailedGetResourceMetric`,
//!    `FailedComputeMetricsReplicas`, ...).
//!
//! Recommendations and scale events live in this process only, as upstream's.

pub mod behavior;
pub mod metrics;
pub mod replica_calculator;
pub mod scale_target;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::{
    ContainerResourceMetricStatus, ExternalMetricStatus, HorizontalPodAutoscaler,
    HorizontalPodAutoscalerCondition, HorizontalPodAutoscalerStatus, MetricIdentifier, MetricSpec,
    MetricStatus, MetricTarget, MetricValueStatus, ObjectMetricStatus, PodsMetricStatus,
    ResourceMetricStatus,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector as ApiLabelSelector, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_apis::selectors::LabelSelector;
use rkube_runtime::events::{object_reference, Recorder};
use rkube_runtime::informer::{self, Change};
use rkube_runtime::store::Store;
use rkube_runtime::workqueue::WorkQueue;

use crate::api_errors::message;
use behavior::{Behavior, History};
use metrics::{DescribedObject, MetricsClient};
use replica_calculator::{ready_pod_count, CalcError, Calculator, Observed};
use scale_target::{group_of, Targets};

/// Upstream's controller name (`--controllers`).
pub const NAME: &str = "horizontal-pod-autoscaler-controller";
/// The events' source, as upstream's.
const COMPONENT: &str = "horizontal-pod-autoscaler";
/// The longest one reconcile may take before it is retried.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

/// The controller's settings (kube-controller-manager's flags).
#[derive(Clone, Debug)]
pub struct Config {
    /// `--horizontal-pod-autoscaler-sync-period`.
    pub sync_period: Duration,
    /// `--horizontal-pod-autoscaler-tolerance`.
    pub tolerance: f64,
    /// `--horizontal-pod-autoscaler-downscale-stabilization`.
    pub downscale_stabilization: Duration,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period`.
    pub cpu_initialization_period: Duration,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay`.
    pub initial_readiness_delay: Duration,
    /// `--concurrent-horizontal-pod-autoscaler-syncs`.
    pub workers: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            sync_period: Duration::from_secs(15),
            tolerance: 0.1,
            downscale_stabilization: Duration::from_secs(300),
            cpu_initialization_period: Duration::from_secs(300),
            initial_readiness_delay: Duration::from_secs(30),
            workers: 5,
        }
    }
}

/// A reconcile's failure, as upstream's error reads (it is logged; the HPA is reconciled
/// again next period).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SyncError(String);

struct Controller {
    config: Config,
    calculator: Calculator,
    hpas: Store<HorizontalPodAutoscaler>,
    pods: Store<Pod>,
    client: Client,
    targets: Targets,
    metrics: MetricsClient,
    recorder: Recorder,
    queue: WorkQueue<String>,
    histories: Mutex<HashMap<String, History>>,
    /// Each known HPA's pod selector (nothing until its first reconcile), to find pods two
    /// HPAs would scale.
    selectors: Mutex<HashMap<String, LabelSelector>>,
}

/// Runs the controller until the task is aborted; `pods` is the shared pod informer's cache.
pub async fn run(client: Client, config: Config, pods: Store<Pod>) {
    let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
    let (hpas, _watch) = informer::start(
        Api::<HorizontalPodAutoscaler>::all(client.clone()),
        watcher::Config::default(),
        vec![tx],
    );
    if hpas.wait_until_ready().await.is_err() {
        return;
    }
    let ctl = Arc::new(Controller {
        calculator: Calculator {
            tolerance: config.tolerance,
            cpu_initialization_period: config.cpu_initialization_period,
            initial_readiness_delay: config.initial_readiness_delay,
        },
        hpas,
        pods,
        targets: Targets::new(client.clone()),
        metrics: MetricsClient::new(client.clone()),
        recorder: Recorder::new(client.clone(), COMPONENT),
        client,
        queue: WorkQueue::new(config.sync_period),
        histories: Default::default(),
        selectors: Default::default(),
        config,
    });
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..ctl.config.workers.max(1) {
        let ctl = ctl.clone();
        tasks.spawn(async move {
            let sync = |key: String| {
                let ctl = ctl.clone();
                async move { ctl.sync(&key).await }
            };
            ctl.queue.work(NAME, SYNC_TIMEOUT, sync, |_: &SyncError| false).await
        });
    }
    tracing::info!(workers = ctl.config.workers, period = ?ctl.config.sync_period, "{NAME} started");
    while let Some(change) = changes.recv().await {
        match change {
            Change::Object { namespace: Some(ns), name } => ctl.changed(&format!("{ns}/{name}")),
            Change::Synced => {
                for hpa in ctl.hpas.state() {
                    ctl.changed(&key_of(&hpa));
                }
            }
            Change::Object { .. } => {}
        }
    }
    ctl.queue.shut_down();
}

fn key_of(hpa: &HorizontalPodAutoscaler) -> String {
    let ns = hpa.metadata.namespace.as_deref().unwrap_or_default();
    format!("{ns}/{}", hpa.metadata.name.as_deref().unwrap_or_default())
}

/// A condition to set: type, status, reason, message.
struct Condition {
    type_: &'static str,
    status: bool,
    reason: String,
    message: String,
}

/// One metric's failure: the condition and event it sets, and the error it returns.
struct MetricFailure {
    condition: Condition,
    error: String,
}

/// One metric's proposal.
struct Proposal {
    replicas: i32,
    metric: String,
}

/// What all metrics propose together.
struct Proposals {
    /// -1 when nothing may be done.
    replicas: i32,
    metric: String,
    statuses: Option<Vec<MetricStatus>>,
    error: Option<String>,
}

fn unable(reason: &str, error: impl std::fmt::Display) -> Condition {
    Condition {
        type_: "ScalingActive",
        status: false,
        reason: reason.to_string(),
        message: format!("the HPA was unable to compute the replica count: {error}"),
    }
}

/// `value` thousandths as a quantity, as upstream's `NewMilliQuantity(_, DecimalSI)` prints.
fn milli_quantity(value: i64) -> Quantity {
    let q = rkube_apis::quantity::Quantity::parse(&serde_json::json!(format!("{value}m")));
    Quantity(q.map(|q| q.canonical()).unwrap_or_else(|| format!("{value}m")))
}

/// A label selector of the API as a selector string (`nil` selects nothing, printed empty).
fn selector_string(selector: Option<&ApiLabelSelector>) -> Result<String, String> {
    let value = serde_json::to_value(selector).unwrap_or_default();
    LabelSelector::from_api(&value).map(|s| s.to_string()).map_err(|e| e.message().to_string())
}

/// A `*metav1.LabelSelector` as Go's `%+v` prints it.
fn go_selector(selector: Option<&ApiLabelSelector>) -> String {
    let Some(s) = selector else { return "nil".into() };
    let labels: String =
        s.match_labels.iter().flatten().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = s
        .match_expressions
        .iter()
        .flatten()
        .map(|e| {
            let values = e.values.as_deref().unwrap_or_default().join(" ");
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{values}],}},",
                e.key, e.operator
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

/// Sets a condition as upstream's `setCondition`: its time changes only with its status.
fn set_condition(status: &mut HorizontalPodAutoscalerStatus, c: Condition) {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let value = if c.status { "True" } else { "False" };
    let index = match conditions.iter().position(|x| x.type_ == c.type_) {
        Some(i) => i,
        None => {
            conditions.push(HorizontalPodAutoscalerCondition {
                type_: c.type_.to_string(),
                ..Default::default()
            });
            conditions.len() - 1
        }
    };
    let existing = &mut conditions[index];
    if existing.status != value {
        existing.last_transition_time = Some(Time(Timestamp::now()));
    }
    existing.status = value.to_string();
    existing.reason = Some(c.reason);
    existing.message = Some(c.message);
}

fn condition(
    type_: &'static str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
) -> Condition {
    Condition { type_, status, reason: reason.to_string(), message: message.into() }
}

impl Controller {
    /// An HPA was added or changed (or deleted): reconciled after one period.
    fn changed(&self, key: &str) {
        let (ns, name) = key.split_once('/').unwrap_or_default();
        if self.hpas.get(&ObjectRef::new(name).within(ns)).is_some() {
            self.selectors
                .lock()
                .expect("selectors")
                .entry(key.to_string())
                .or_insert_with(LabelSelector::nothing);
        } else {
            self.selectors.lock().expect("selectors").remove(key);
        }
        self.queue.add_after(key.to_string(), self.config.sync_period);
    }

    /// Reconciles `key` and asks for the next period (none once the HPA is gone).
    async fn sync(&self, key: &str) -> Result<Option<Duration>, SyncError> {
        let (ns, name) = key.split_once('/').unwrap_or_default();
        let Some(hpa) = self.hpas.get(&ObjectRef::new(name).within(ns)) else {
            self.histories.lock().expect("histories").remove(key);
            self.selectors.lock().expect("selectors").remove(key);
            return Ok(None);
        };
        if let Err(e) = self.reconcile((*hpa).clone(), key).await {
            tracing::warn!(hpa = key, error = %e, "horizontal pod autoscaler not reconciled");
        }
        Ok(Some(self.config.sync_period))
    }

    fn event(&self, hpa: &HorizontalPodAutoscaler, type_: &str, reason: &str, message: &str) {
        self.recorder.record(&object_reference(hpa), type_, reason, message);
    }

    /// Upstream's `reconcileAutoscaler` (see the module documentation).
    async fn reconcile(
        &self,
        mut hpa: HorizontalPodAutoscaler,
        key: &str,
    ) -> Result<(), SyncError> {
        let original = hpa.status.clone().unwrap_or_default();
        let mut status = original.clone();
        let ns = hpa.metadata.namespace.clone().unwrap_or_default();
        let spec = hpa.spec.clone().unwrap_or_default();
        let target = &spec.scale_target_ref;
        let reference = format!("{}/{ns}/{}", target.kind, target.name);

        let scale = match self
            .scale_of(&ns, target.api_version.as_deref(), &target.kind, &target.name)
            .await
        {
            Ok(found) => found,
            Err((e, context)) => {
                let e = e.to_string();
                self.event(&hpa, "Warning", "FailedGetScale", &e);
                set_condition(
                    &mut status,
                    condition(
                        "AbleToScale",
                        false,
                        "FailedGetScale",
                        format!(
                            "the HPA controller was unable to get the target's current scale: {e}"
                        ),
                    ),
                );
                self.write_status_if_needed(&mut hpa, &original, status).await.ok();
                let error = match context {
                    ScaleStep::ApiVersion => {
                        format!("invalid API version in scale target reference: {e}")
                    }
                    ScaleStep::Mapping => {
                        format!("unable to determine resource for scale target reference: {e}")
                    }
                    ScaleStep::Get => {
                        format!("failed to query scale subresource for {reference}: {e}")
                    }
                };
                return Err(SyncError(error));
            }
        };
        let (mut scale, mapping) = scale;
        set_condition(
            &mut status,
            condition(
                "AbleToScale",
                true,
                "SucceededGetScale",
                "the HPA controller was able to get the target's current scale",
            ),
        );
        let current = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
        let now = Instant::now();
        self.histories
            .lock()
            .expect("histories")
            .entry(key.to_string())
            .or_default()
            .record_initial(current, now);

        let min = spec.min_replicas.unwrap_or(1);
        let max = spec.max_replicas;
        let behavior =
            Behavior::from_spec(spec.behavior.as_ref(), self.config.downscale_stabilization);
        let mut statuses = None;
        let mut desired = 0;
        let mut rescale_reason = String::new();
        let mut rescale = true;
        let mut result = Ok(());
        if current == 0 && min != 0 {
            // Autoscaling is off for a target scaled to zero.
            rescale = false;
            set_condition(
                &mut status,
                condition(
                    "ScalingActive",
                    false,
                    "ScalingDisabled",
                    "scaling is disabled since the replica count of the target is zero",
                ),
            );
        } else if current > max {
            rescale_reason = "Current number of replicas above Spec.MaxReplicas".into();
            desired = max;
        } else if current < min {
            rescale_reason = "Current number of replicas below Spec.MinReplicas".into();
            desired = min;
        } else {
            let default_metrics;
            let specs = match spec.metrics.as_deref() {
                Some(specs) if !specs.is_empty() => specs,
                // The API defaults an HPA without metrics to 80% CPU.
                _ => {
                    default_metrics = [default_metric()];
                    &default_metrics[..]
                }
            };
            let proposals =
                self.compute_replicas_for_metrics(&hpa, &mut status, &scale, specs).await;
            statuses = proposals.statuses;
            if let (Some(e), -1) = (&proposals.error, proposals.replicas) {
                set_current(&mut status, current, statuses);
                self.write_status_if_needed(&mut hpa, &original, status).await.ok();
                self.event(&hpa, "Warning", "FailedComputeMetricsReplicas", e);
                return Err(SyncError(format!(
                    "failed to compute desired number of replicas based on listed metrics for {reference}: {e}"
                )));
            }
            if let Some(e) = proposals.error {
                // Some metrics still work: scale by them, but report the others.
                result = Err(SyncError(e));
            }
            let mut rescale_metric = String::new();
            if proposals.replicas > desired {
                desired = proposals.replicas;
                rescale_metric = proposals.metric;
            }
            if desired > current {
                rescale_reason = format!("{rescale_metric} above target");
            }
            if desired < current {
                rescale_reason = "All metrics below target".into();
            }
            let normalized = self
                .histories
                .lock()
                .expect("histories")
                .entry(key.to_string())
                .or_default()
                .normalize(
                    behavior.as_ref(),
                    self.config.downscale_stabilization,
                    current,
                    desired,
                    min,
                    max,
                    now,
                );
            let (reason, message) = normalized.able_to_scale;
            set_condition(&mut status, condition("AbleToScale", true, reason, message));
            let (reason, message) = normalized.limited_reason;
            set_condition(
                &mut status,
                condition("ScalingLimited", normalized.limited, reason, message),
            );
            desired = normalized.replicas;
            rescale = desired != current;
        }

        if rescale {
            scale.spec.get_or_insert_with(Default::default).replicas = Some(desired);
            if let Err(e) = self.targets.update(&ns, &mapping, &scale).await {
                self.event(
                    &hpa,
                    "Warning",
                    "FailedRescale",
                    &format!("New size: {desired}; reason: {rescale_reason}; error: {e}"),
                );
                set_condition(
                    &mut status,
                    condition(
                        "AbleToScale",
                        false,
                        "FailedUpdateScale",
                        format!("the HPA controller was unable to update the target scale: {e}"),
                    ),
                );
                set_current(&mut status, current, statuses);
                self.write_status_if_needed(&mut hpa, &original, status).await.ok();
                return Err(SyncError(format!("failed to rescale {reference}: {e}")));
            }
            set_condition(
                &mut status,
                condition(
                    "AbleToScale",
                    true,
                    "SucceededRescale",
                    format!("the HPA controller was able to update the target scale to {desired}"),
                ),
            );
            self.event(
                &hpa,
                "Normal",
                "SuccessfulRescale",
                &format!("New size: {desired}; reason: {rescale_reason}"),
            );
            self.histories
                .lock()
                .expect("histories")
                .entry(key.to_string())
                .or_default()
                .record_scale(behavior.as_ref(), current, desired, now);
            tracing::info!(
                hpa = key,
                current,
                desired,
                reason = rescale_reason,
                "successfully rescaled"
            );
        } else {
            desired = current;
        }
        set_status(&mut status, current, desired, statuses, rescale);
        self.write_status_if_needed(&mut hpa, &original, status).await?;
        result
    }

    /// The target's Scale and the mapping that served it; on failure, the error and which
    /// step failed.
    async fn scale_of(
        &self,
        ns: &str,
        api_version: Option<&str>,
        kind: &str,
        name: &str,
    ) -> Result<(Scale, scale_target::Mapping), (scale_target::ScaleError, ScaleStep)> {
        let group =
            group_of(api_version.unwrap_or_default()).map_err(|e| (e, ScaleStep::ApiVersion))?;
        let mappings =
            self.targets.mappings(group, kind).await.map_err(|e| (e, ScaleStep::Mapping))?;
        self.targets.get(ns, name, &mappings).await.map_err(|e| (e, ScaleStep::Get))
    }

    /// Writes `status` when it differs from `original` (as upstream, a semantic comparison:
    /// times to the second, quantities as written).
    async fn write_status_if_needed(
        &self,
        hpa: &mut HorizontalPodAutoscaler,
        original: &HorizontalPodAutoscalerStatus,
        status: HorizontalPodAutoscalerStatus,
    ) -> Result<(), SyncError> {
        if serde_json::to_value(original).ok() == serde_json::to_value(&status).ok() {
            return Ok(());
        }
        hpa.status = Some(status);
        let ns = hpa.metadata.namespace.clone().unwrap_or_default();
        let name = hpa.metadata.name.clone().unwrap_or_default();
        let api: Api<HorizontalPodAutoscaler> = Api::namespaced(self.client.clone(), &ns);
        if let Err(e) = api.replace_status(&name, &PostParams::default(), hpa).await {
            let e = message(&e);
            self.event(hpa, "Warning", "FailedUpdateStatus", &e);
            return Err(SyncError(format!("failed to update status for {name}: {e}")));
        }
        Ok(())
    }

    /// Every metric's proposal, the highest winning (upstream's `computeReplicasForMetrics`).
    async fn compute_replicas_for_metrics(
        &self,
        hpa: &HorizontalPodAutoscaler,
        status: &mut HorizontalPodAutoscalerStatus,
        scale: &Scale,
        specs: &[MetricSpec],
    ) -> Proposals {
        let selector = scale.status.as_ref().and_then(|s| s.selector.clone()).unwrap_or_default();
        let ns = hpa.metadata.namespace.clone().unwrap_or_default();
        let (selector, pods) = match self.validate_selector(hpa, status, &ns, &selector) {
            Ok(found) => found,
            Err(e) => {
                return Proposals {
                    replicas: -1,
                    metric: String::new(),
                    statuses: None,
                    error: Some(e),
                }
            }
        };
        let pods: Vec<&Pod> = pods.iter().map(|p| &**p).collect();
        let spec_replicas = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
        let status_replicas = scale.status.as_ref().map_or(0, |s| s.replicas);
        let mut statuses = vec![MetricStatus::default(); specs.len()];
        let (mut replicas, mut metric) = (0, String::new());
        let mut invalid = 0;
        let mut first_failure: Option<MetricFailure> = None;
        let context = MetricContext {
            namespace: &ns,
            selector: &selector,
            pods: &pods,
            spec_replicas,
            status_replicas,
        };
        for (spec, metric_status) in specs.iter().zip(statuses.iter_mut()) {
            match self.compute_replicas_for_metric(hpa, spec, &context, metric_status).await {
                Ok(proposal) => {
                    if replicas == 0 || proposal.replicas > replicas {
                        replicas = proposal.replicas;
                        metric = proposal.metric;
                    }
                }
                Err(failure) => {
                    invalid += 1;
                    first_failure.get_or_insert(failure);
                }
            }
        }
        let error = first_failure.as_ref().map(|f| {
            format!(
                "invalid metrics ({invalid} invalid out of {}), first error is: {}",
                specs.len(),
                f.error
            )
        });
        if let Some(failure) =
            first_failure.filter(|_| invalid >= specs.len() || replicas < spec_replicas)
        {
            set_condition(status, failure.condition);
            return Proposals {
                replicas: -1,
                metric: String::new(),
                statuses: Some(statuses),
                error,
            };
        }
        set_condition(
            status,
            condition(
                "ScalingActive",
                true,
                "ValidMetricFound",
                format!("the HPA was able to successfully calculate a replica count from {metric}"),
            ),
        );
        Proposals { replicas, metric, statuses: Some(statuses), error }
    }

    /// The Scale's selector parsed, and the pods it selects, unless another HPA scales some
    /// of them too (upstream's `validateAndParseSelector`).
    #[allow(clippy::type_complexity)]
    fn validate_selector(
        &self,
        hpa: &HorizontalPodAutoscaler,
        status: &mut HorizontalPodAutoscalerStatus,
        ns: &str,
        selector: &str,
    ) -> Result<(String, Vec<Arc<Pod>>), String> {
        if selector.is_empty() {
            let e = "selector is required";
            self.event(hpa, "Warning", "SelectorRequired", e);
            set_condition(
                status,
                condition(
                    "ScalingActive",
                    false,
                    "InvalidSelector",
                    "the HPA target's scale is missing a selector",
                ),
            );
            return Err(e.to_string());
        }
        let parsed = match LabelSelector::parse(selector) {
            Ok(parsed) => parsed,
            Err(e) => {
                let e = format!(
                    "couldn't convert selector into a corresponding internal selector object: {}",
                    e.message()
                );
                self.event(hpa, "Warning", "InvalidSelector", &e);
                set_condition(
                    status,
                    condition("ScalingActive", false, "InvalidSelector", e.clone()),
                );
                return Err(e);
            }
        };
        let key = key_of(hpa);
        let others: Vec<(String, LabelSelector)> = {
            let mut selectors = self.selectors.lock().expect("selectors");
            if let Some(known) = selectors.get_mut(&key) {
                *known = parsed.clone();
            }
            selectors
                .iter()
                .filter(|(k, _)| k.split_once('/').is_some_and(|(n, _)| n == ns))
                .map(|(k, s)| (k.clone(), s.clone()))
                .collect()
        };
        let pods = self.pods_of(ns, &parsed);
        let mut controlling = BTreeSet::new();
        for pod in &pods {
            let labels = pod.metadata.labels.clone().unwrap_or_default();
            for (k, s) in &others {
                if s.matches(&labels) {
                    controlling.insert(k.clone());
                }
            }
        }
        if controlling.len() > 1 {
            let list: Vec<String> = controlling.into_iter().collect();
            let e = format!(
                "pods by selector {selector} are controlled by multiple HPAs: [{}]",
                list.join(" ")
            );
            self.event(hpa, "Warning", "AmbiguousSelector", &e);
            set_condition(
                status,
                condition("ScalingActive", false, "AmbiguousSelector", e.clone()),
            );
            return Err(e);
        }
        Ok((parsed.to_string(), pods))
    }

    fn pods_of(&self, ns: &str, selector: &LabelSelector) -> Vec<Arc<Pod>> {
        self.pods
            .in_namespace(ns)
            .into_iter()
            .filter(|p| selector.matches(&p.metadata.labels.clone().unwrap_or_default()))
            .collect()
    }

    /// One metric's proposal, its status filled in (upstream's `computeReplicasForMetric`).
    async fn compute_replicas_for_metric(
        &self,
        hpa: &HorizontalPodAutoscaler,
        spec: &MetricSpec,
        cx: &MetricContext<'_>,
        status: &mut MetricStatus,
    ) -> Result<Proposal, MetricFailure> {
        let failure = |reason: &str, inner: String, outer: String| {
            self.event(hpa, "Warning", reason, &inner);
            MetricFailure { condition: unable(reason, &inner), error: outer }
        };
        match spec.type_.as_str() {
            "Resource" | "ContainerResource" => {
                let container_metric = spec.type_ == "ContainerResource";
                let (name, container, target, reason) =
                    match (&spec.resource, &spec.container_resource) {
                        (Some(r), _) if !container_metric => {
                            (r.name.as_str(), "", &r.target, "FailedGetResourceMetric")
                        }
                        (_, Some(c)) if container_metric => (
                            c.name.as_str(),
                            c.container.as_str(),
                            &c.target,
                            "FailedGetContainerResourceMetric",
                        ),
                        _ => {
                            let e = format!(
                                "invalid metric source: {} has no {} source",
                                spec.type_, spec.type_
                            );
                            return Err(failure("InvalidMetricSourceType", e.clone(), e));
                        }
                    };
                match self.resource_metric(name, container, target, cx).await {
                    Ok((proposal, current)) => {
                        *status = MetricStatus { type_: spec.type_.clone(), ..Default::default() };
                        if container_metric {
                            status.container_resource = Some(ContainerResourceMetricStatus {
                                name: name.to_string(),
                                container: container.to_string(),
                                current,
                            });
                        } else {
                            status.resource =
                                Some(ResourceMetricStatus { name: name.to_string(), current });
                        }
                        Ok(proposal)
                    }
                    Err(e) => {
                        let outer = match container_metric {
                            true => {
                                format!("failed to get {container} container metric value: {e}")
                            }
                            false => format!("failed to get {name} resource metric value: {e}"),
                        };
                        Err(failure(reason, e, outer))
                    }
                }
            }
            "Pods" => {
                let Some(source) = &spec.pods else {
                    let e = "invalid metric source: Pods has no pods source".to_string();
                    return Err(failure("InvalidMetricSourceType", e.clone(), e));
                };
                let outer = |e: &str| format!("failed to get pods metric value: {e}");
                let metric_selector = match selector_string(source.metric.selector.as_ref()) {
                    Ok(s) => s,
                    Err(e) => return Err(failure("FailedGetPodsMetric", e.clone(), outer(&e))),
                };
                let Some(target) = source
                    .target
                    .average_value
                    .as_ref()
                    .and_then(|q| rkube_apis::quantity::parse_milli(&q.0))
                else {
                    let e =
                        "invalid pods metric source: no average value target was set".to_string();
                    return Err(failure("FailedGetPodsMetric", e.clone(), outer(&e)));
                };
                let name = &source.metric.name;
                let fetched = self
                    .metrics
                    .pods_metric(name, cx.namespace, cx.selector, &metric_selector)
                    .await
                    .map_err(|e| format!("unable to get metric {name}: {e}"));
                let calculated = fetched.and_then(|m| {
                    self.calculator
                        .plain_replicas(cx.spec_replicas, target, "", cx.observed(m))
                        .map_err(|e| e.to_string())
                });
                match calculated {
                    Ok(usage) => {
                        *status = MetricStatus {
                            type_: "Pods".into(),
                            pods: Some(PodsMetricStatus {
                                metric: source.metric.clone(),
                                current: MetricValueStatus {
                                    average_value: Some(milli_quantity(usage.usage)),
                                    ..Default::default()
                                },
                            }),
                            ..Default::default()
                        };
                        Ok(Proposal {
                            replicas: usage.replicas,
                            metric: format!("pods metric {name}"),
                        })
                    }
                    Err(e) => Err(failure("FailedGetPodsMetric", e.clone(), outer(&e))),
                }
            }
            "Object" => {
                let Some(source) = &spec.object else {
                    let e = "invalid metric source: Object has no object source".to_string();
                    return Err(failure("InvalidMetricSourceType", e.clone(), e));
                };
                let outer = |e: &str| format!("failed to get object metric value: {e}");
                let metric_selector = match selector_string(source.metric.selector.as_ref()) {
                    Ok(s) => s,
                    Err(e) => return Err(failure("FailedGetObjectMetric", e.clone(), outer(&e))),
                };
                self.object_metric(source, &metric_selector, cx, status).await.map_err(
                    |(inner, error)| failure("FailedGetObjectMetric", inner, outer(&error)),
                )
            }
            "External" => {
                let Some(source) = &spec.external else {
                    let e = "invalid metric source: External has no external source".to_string();
                    return Err(failure("InvalidMetricSourceType", e.clone(), e));
                };
                let name = &source.metric.name;
                self.external_metric(source, cx, status).await.map_err(|(inner, error)| {
                    failure(
                        "FailedGetExternalMetric",
                        inner,
                        format!("failed to get {name} external metric value: {error}"),
                    )
                })
            }
            other => {
                let e = format!("unknown metric source type {}", rkube_apis::go_quote(other));
                Err(failure("InvalidMetricSourceType", e.clone(), e))
            }
        }
    }

    /// A Resource or ContainerResource metric (upstream's
    /// `computeStatusForResourceMetricGeneric`).
    async fn resource_metric(
        &self,
        resource: &str,
        container: &str,
        target: &MetricTarget,
        cx: &MetricContext<'_>,
    ) -> Result<(Proposal, MetricValueStatus), String> {
        let fetch = || async {
            self.metrics
                .resource_metric(cx.namespace, cx.selector, resource, container)
                .await
                .map(|(m, _)| m)
                .map_err(|e| format!("unable to get metrics for resource {resource}: {e}"))
        };
        if let Some(average) = &target.average_value {
            let target = rkube_apis::quantity::parse_milli(&average.0).unwrap_or_default();
            let usage = fetch().await.and_then(|m| {
                self.calculator
                    .plain_replicas(cx.spec_replicas, target, resource, cx.observed(m))
                    .map_err(|e| e.to_string())
            });
            let usage = usage.map_err(|e| format!("failed to get {resource} usage: {e}"))?;
            let current = MetricValueStatus {
                average_value: Some(milli_quantity(usage.usage)),
                ..Default::default()
            };
            let metric = format!("{resource} resource");
            return Ok((Proposal { replicas: usage.replicas, metric }, current));
        }
        let Some(utilization) = target.average_utilization else {
            return Err("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set".into());
        };
        let result = fetch().await.and_then(|m| {
            self.calculator
                .resource_replicas(
                    cx.spec_replicas,
                    utilization,
                    resource,
                    container,
                    cx.observed(m),
                )
                .map_err(|e| e.to_string())
        });
        let result = result.map_err(|e| format!("failed to get {resource} utilization: {e}"))?;
        let metric = match container.is_empty() {
            true => format!("{resource} resource utilization (percentage of request)"),
            false => format!("{resource} container resource utilization (percentage of request)"),
        };
        let current = MetricValueStatus {
            average_utilization: Some(result.utilization),
            average_value: Some(milli_quantity(result.raw_average)),
            ..Default::default()
        };
        Ok((Proposal { replicas: result.replicas, metric }, current))
    }

    /// An Object metric; on failure (the condition's error, the returned error).
    async fn object_metric(
        &self,
        source: &k8s_openapi::api::autoscaling::v2::ObjectMetricSource,
        metric_selector: &str,
        cx: &MetricContext<'_>,
        status: &mut MetricStatus,
    ) -> Result<Proposal, (String, String)> {
        let object = &source.described_object;
        let name = &source.metric.name;
        let group = group_of(object.api_version.as_deref().unwrap_or_default()).unwrap_or_default();
        let resource = self
            .targets
            .mappings(group, &object.kind)
            .await
            .ok()
            .and_then(|m| m.into_iter().next())
            .map(|m| (m.resource.plural, m.namespaced));
        let described = DescribedObject { kind: &object.kind, group, name: &object.name, resource };
        let fetch = || async {
            self.metrics
                .object_metric(name, cx.namespace, &described, metric_selector)
                .await
                .map_err(|e| {
                    format!(
                        "unable to get metric {name}: {} on {} {}/{e}",
                        object.kind, cx.namespace, object.name
                    )
                })
        };
        let target = &source.target;
        if let (true, Some(value)) = (target.type_ == "Value", &target.value) {
            let target = rkube_apis::quantity::parse_milli(&value.0).unwrap_or_default();
            let usage = fetch().await.map_err(|e| (e.clone(), e))?;
            let replicas = self
                .calculator
                .value_replicas(cx.spec_replicas, usage, target, || ready_pod_count(cx.pods))
                .map_err(|e| format!("unable to calculate ready pods: {e}"))
                .map_err(|e| (e.clone(), e))?;
            *status = MetricStatus {
                type_: "Object".into(),
                object: Some(ObjectMetricStatus {
                    described_object: object.clone(),
                    metric: MetricIdentifier {
                        name: name.clone(),
                        selector: source.metric.selector.clone(),
                    },
                    current: MetricValueStatus {
                        value: Some(milli_quantity(usage)),
                        ..Default::default()
                    },
                }),
                ..Default::default()
            };
            return Ok(Proposal { replicas, metric: format!("{} metric {name}", object.kind) });
        }
        if let (true, Some(average)) = (target.type_ == "AverageValue", &target.average_value) {
            let target = rkube_apis::quantity::parse_milli(&average.0).unwrap_or_default();
            let usage = fetch()
                .await
                .map_err(|e| (e.clone(), format!("failed to get {name} object metric: {e}")))?;
            let result = self.calculator.per_pod_replicas(cx.status_replicas, usage, target);
            *status = MetricStatus {
                type_: "Object".into(),
                object: Some(ObjectMetricStatus {
                    metric: MetricIdentifier {
                        name: name.clone(),
                        selector: source.metric.selector.clone(),
                    },
                    current: MetricValueStatus {
                        average_value: Some(milli_quantity(result.usage)),
                        ..Default::default()
                    },
                    ..Default::default()
                }),
                ..Default::default()
            };
            let metric =
                format!("external metric {name}({})", go_selector(source.metric.selector.as_ref()));
            return Ok(Proposal { replicas: result.replicas, metric });
        }
        let e = "invalid object metric source: neither a value target nor an average value target was set".to_string();
        Err((e.clone(), e))
    }

    /// An External metric; on failure (the condition's error, the returned error).
    async fn external_metric(
        &self,
        source: &k8s_openapi::api::autoscaling::v2::ExternalMetricSource,
        cx: &MetricContext<'_>,
        status: &mut MetricStatus,
    ) -> Result<Proposal, (String, String)> {
        let name = &source.metric.name;
        let metric =
            format!("external metric {name}({})", go_selector(source.metric.selector.as_ref()));
        let fetch = || async {
            let selector = selector_string(source.metric.selector.as_ref())?;
            let values =
                self.metrics.external_metric(name, cx.namespace, &selector).await.map_err(|e| {
                    format!(
                        "unable to get external metric {}/{name}/{}: {e}",
                        cx.namespace,
                        go_selector(source.metric.selector.as_ref())
                    )
                })?;
            Ok::<i64, String>(values.iter().fold(0i64, |sum, v| sum.saturating_add(*v)))
        };
        let identifier =
            MetricIdentifier { name: name.clone(), selector: source.metric.selector.clone() };
        if let Some(average) = &source.target.average_value {
            let target = rkube_apis::quantity::parse_milli(&average.0).unwrap_or_default();
            let usage = fetch()
                .await
                .map_err(|e| (e.clone(), format!("failed to get {name} external metric: {e}")))?;
            let result = self.calculator.per_pod_replicas(cx.status_replicas, usage, target);
            *status = MetricStatus {
                type_: "External".into(),
                external: Some(ExternalMetricStatus {
                    metric: identifier,
                    current: MetricValueStatus {
                        average_value: Some(milli_quantity(result.usage)),
                        ..Default::default()
                    },
                }),
                ..Default::default()
            };
            return Ok(Proposal { replicas: result.replicas, metric });
        }
        if let Some(value) = &source.target.value {
            let target = rkube_apis::quantity::parse_milli(&value.0).unwrap_or_default();
            let wrap =
                |e: String| (e.clone(), format!("failed to get external metric {name}: {e}"));
            let usage = fetch().await.map_err(wrap)?;
            let replicas = self
                .calculator
                .value_replicas(cx.spec_replicas, usage, target, || ready_pod_count(cx.pods))
                .map_err(|e: CalcError| format!("unable to calculate ready pods: {e}"))
                .map_err(wrap)?;
            *status = MetricStatus {
                type_: "External".into(),
                external: Some(ExternalMetricStatus {
                    metric: identifier,
                    current: MetricValueStatus {
                        value: Some(milli_quantity(usage)),
                        ..Default::default()
                    },
                }),
                ..Default::default()
            };
            return Ok(Proposal { replicas, metric });
        }
        let e = "invalid external metric source: neither a value target nor an average value target was set".to_string();
        Err((e.clone(), e))
    }
}

/// Which step of reading the target's scale failed (upstream's errors differ by it).
enum ScaleStep {
    ApiVersion,
    Mapping,
    Get,
}

/// What every metric of one reconcile shares.
struct MetricContext<'a> {
    namespace: &'a str,
    selector: &'a str,
    pods: &'a [&'a Pod],
    spec_replicas: i32,
    status_replicas: i32,
}

impl<'a> MetricContext<'a> {
    /// The pods with their `metrics`, now.
    fn observed(&self, metrics: replica_calculator::PodMetrics) -> Observed<'a> {
        Observed { pods: self.pods, metrics, now: Timestamp::now() }
    }
}

/// The metric the API gives an HPA without metrics: 80% CPU.
fn default_metric() -> MetricSpec {
    MetricSpec {
        type_: "Resource".into(),
        resource: Some(k8s_openapi::api::autoscaling::v2::ResourceMetricSource {
            name: "cpu".into(),
            target: MetricTarget {
                type_: "Utilization".into(),
                average_utilization: Some(80),
                ..Default::default()
            },
        }),
        ..Default::default()
    }
}

/// The status as upstream's `setStatus` makes it: counts, metrics, conditions, and the
/// scale time when the target was scaled.
fn set_status(
    status: &mut HorizontalPodAutoscalerStatus,
    current: i32,
    desired: i32,
    metrics: Option<Vec<MetricStatus>>,
    rescaled: bool,
) {
    *status = HorizontalPodAutoscalerStatus {
        // Go's omitempty leaves a zero out.
        current_replicas: (current != 0).then_some(current),
        desired_replicas: desired,
        last_scale_time: status.last_scale_time.take(),
        current_metrics: metrics.filter(|m| !m.is_empty()),
        conditions: status.conditions.take(),
        observed_generation: None,
    };
    if rescaled {
        status.last_scale_time = Some(Time(Timestamp::now()));
    }
}

/// The current count and metrics, the desired count kept (after a failure).
fn set_current(
    status: &mut HorizontalPodAutoscalerStatus,
    current: i32,
    metrics: Option<Vec<MetricStatus>>,
) {
    let desired = status.desired_replicas;
    set_status(status, current, desired, metrics, false);
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    #[test]
    fn quantities_print_as_upstream_s_milli_quantities() {
        assert_eq!(milli_quantity(150).0, "150m");
        assert_eq!(milli_quantity(2000).0, "2");
        assert_eq!(milli_quantity(73_347_072_000).0, "73347072");
        assert_eq!(milli_quantity(0).0, "0");
    }

    #[test]
    fn selectors_print_as_go_does() {
        assert_eq!(go_selector(None), "nil");
        let s = ApiLabelSelector {
            match_labels: Some([("queue".to_string(), "worker".to_string())].into()),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "In".into(),
                values: Some(vec!["a".into(), "b".into()]),
            }]),
        };
        assert_eq!(
            go_selector(Some(&s)),
            "&LabelSelector{MatchLabels:map[string]string{queue: worker,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:tier,Operator:In,Values:[a b],},},}"
        );
        assert_eq!(selector_string(Some(&s)).unwrap(), "queue=worker,tier in (a,b)");
        assert_eq!(selector_string(None).unwrap(), "");
    }

    #[test]
    fn conditions_change_their_time_only_with_their_status() {
        let mut status = HorizontalPodAutoscalerStatus::default();
        set_condition(&mut status, condition("AbleToScale", true, "SucceededGetScale", "m"));
        set_condition(
            &mut status,
            condition("ScalingActive", false, "FailedGetResourceMetric", "x"),
        );
        let conditions = status.conditions.clone().unwrap();
        assert_eq!(
            conditions.iter().map(|c| c.type_.as_str()).collect::<Vec<_>>(),
            ["AbleToScale", "ScalingActive"]
        );
        let old = Time(Timestamp::from_second(1).unwrap());
        status.conditions.as_mut().unwrap()[0].last_transition_time = Some(old.clone());
        set_condition(&mut status, condition("AbleToScale", true, "SucceededRescale", "n"));
        let c = &status.conditions.as_ref().unwrap()[0];
        assert_eq!(
            (c.reason.as_deref(), c.last_transition_time.as_ref()),
            (Some("SucceededRescale"), Some(&old))
        );
        set_condition(&mut status, condition("AbleToScale", false, "FailedUpdateScale", "e"));
        assert_ne!(
            status.conditions.as_ref().unwrap()[0].last_transition_time.as_ref(),
            Some(&old)
        );
    }

    #[test]
    fn the_status_is_remade_as_upstream_s() {
        let mut status = HorizontalPodAutoscalerStatus {
            observed_generation: Some(3),
            desired_replicas: 4,
            ..Default::default()
        };
        set_current(&mut status, 2, Some(vec![MetricStatus::default()]));
        assert_eq!(status.desired_replicas, 4);
        assert_eq!(status.current_replicas, Some(2));
        assert_eq!(status.observed_generation, None);
        assert_eq!(
            serde_json::to_value(&status.current_metrics).unwrap(),
            serde_json::json!([{"type": ""}]),
            "a failed metric is an empty status, as upstream writes it"
        );
        assert!(status.last_scale_time.is_none());
        set_status(&mut status, 0, 1, None, true);
        assert_eq!(status.current_replicas, None);
        assert!(status.last_scale_time.is_some());
    }
}
