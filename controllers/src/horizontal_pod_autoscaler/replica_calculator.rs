//! The replica count one metric asks for, as upstream's `ReplicaCalculator` computes it: pure
//! functions of the pods the scale target selects, their metrics, the target and the time,
//! so that every rule is tested here.
//!
//! For per-pod metrics (resource utilization or value, custom pod metrics):
//!
//! - Pods being deleted or failed are ignored; pending pods are unready; pods without a
//!   sample are missing. For CPU, a pod still within the CPU initialization period whose
//!   sample was taken before one full window after its last readiness change (or which is
//!   not ready) is unready too, as is a pod past that period that is not ready and never was
//!   since its start plus the initial readiness delay: their CPU is start-up noise.
//! - The usage ratio is the ready pods' average over the target. Within the tolerance the
//!   count stays; without unready or missing pods it becomes `ceil(ratio * ready pods)`.
//! - Otherwise the average is computed again more cautiously: on a scale-down missing pods
//!   count as using 100% of their request (or the target when it is higher); on a scale-up
//!   missing and unready pods count as using nothing. When that lands within the tolerance
//!   or reverses the direction, the count stays.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use rkube_apis::quantity::parse_milli;

/// One pod's sample: its value in thousandths, when it was taken and over which window.
#[derive(Clone, Debug, PartialEq)]
pub struct PodMetric {
    pub timestamp: Timestamp,
    pub window: Duration,
    pub value: i64,
}

/// Samples by pod name.
pub type PodMetrics = BTreeMap<String, PodMetric>;

/// The settings of the calculation (kube-controller-manager's flags).
#[derive(Clone, Copy, Debug)]
pub struct Calculator {
    /// `--horizontal-pod-autoscaler-tolerance`: how far from 1.0 the usage ratio must be
    /// before the count changes.
    pub tolerance: f64,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period`.
    pub cpu_initialization_period: Duration,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay`.
    pub initial_readiness_delay: Duration,
}

/// Why no count could be computed, in upstream's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CalcError {
    #[error("no pods returned by selector while calculating replica count")]
    NoPods,
    #[error("did not receive metrics for targeted pods (pods might be unready)")]
    NoReadyMetrics,
    #[error("missing request for {resource} in container {container} of Pod {pod}")]
    MissingRequest { resource: String, container: String, pod: String },
    #[error("no metrics returned matched known pods")]
    NoMatchingRequests,
}

/// A utilization target's outcome: the count, the average utilization (percent of the
/// requests) and the average raw value (thousandths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Utilization {
    pub replicas: i32,
    pub utilization: i32,
    pub raw_average: i64,
}

/// A value target's outcome: the count and the usage it was computed from (thousandths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    pub replicas: i32,
    pub usage: i64,
}

/// What a calculation observes: the pods the target selects, their samples, and the time.
pub struct Observed<'a> {
    pub pods: &'a [&'a Pod],
    pub metrics: PodMetrics,
    pub now: Timestamp,
}

/// The pods sorted by how their samples may be used.
#[derive(Debug, Default, PartialEq, Eq)]
struct Groups {
    ready: usize,
    unready: BTreeSet<String>,
    missing: BTreeSet<String>,
    ignored: BTreeSet<String>,
}

fn name_of(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

/// `t + d`, or the latest time when that overflows.
fn plus(t: Timestamp, d: Duration) -> Timestamp {
    SignedDuration::try_from(d).ok().and_then(|d| t.checked_add(d).ok()).unwrap_or(Timestamp::MAX)
}

impl Calculator {
    fn within_tolerance(&self, ratio: f64) -> bool {
        (1.0 - self.tolerance) <= ratio && ratio <= (1.0 + self.tolerance)
    }

    fn group(&self, pods: &[&Pod], metrics: &PodMetrics, resource: &str, now: Timestamp) -> Groups {
        let mut groups = Groups::default();
        for pod in pods {
            let name = name_of(pod);
            let status = pod.status.as_ref();
            let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or_default();
            if pod.metadata.deletion_timestamp.is_some() || phase == "Failed" {
                groups.ignored.insert(name);
                continue;
            }
            if phase == "Pending" {
                groups.unready.insert(name);
                continue;
            }
            let Some(metric) = metrics.get(&name) else {
                groups.missing.insert(name);
                continue;
            };
            if resource == "cpu" && self.cpu_unready(pod, metric, now) {
                groups.unready.insert(name);
                continue;
            }
            groups.ready += 1;
        }
        groups
    }

    /// Whether a pod's CPU sample is start-up noise (see the module documentation).
    fn cpu_unready(&self, pod: &Pod, metric: &PodMetric, now: Timestamp) -> bool {
        let status = pod.status.as_ref();
        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
        let start = status.and_then(|s| s.start_time.as_ref()).map(|t| t.0);
        let (Some(ready), Some(start)) = (ready, start) else { return true };
        // An absent transition time reads as Go's zero time: long ago.
        let transition = ready.last_transition_time.as_ref().map_or(Timestamp::MIN, |t| t.0);
        let not_ready = ready.status == "False";
        if plus(start, self.cpu_initialization_period) > now {
            not_ready || metric.timestamp < plus(transition, metric.window)
        } else {
            not_ready && plus(start, self.initial_readiness_delay) > transition
        }
    }

    /// The count for a utilization target (percent of the pods' requests of `resource`, of
    /// `container` only when named).
    pub fn resource_replicas(
        &self,
        current: i32,
        target_utilization: i32,
        resource: &str,
        container: &str,
        observed: Observed<'_>,
    ) -> Result<Utilization, CalcError> {
        let Observed { pods, mut metrics, now } = observed;
        if pods.is_empty() {
            return Err(CalcError::NoPods);
        }
        let groups = self.group(pods, &metrics, resource, now);
        for name in groups.ignored.iter().chain(&groups.unready) {
            metrics.remove(name);
        }
        if metrics.is_empty() {
            return Err(CalcError::NoReadyMetrics);
        }
        let requests = requests(pods, container, resource)?;
        let (ratio, utilization, raw_average) =
            utilization_ratio(&metrics, &requests, target_utilization)?;
        let result = |replicas| Utilization { replicas, utilization, raw_average };
        let scale_up_with_unready = !groups.unready.is_empty() && ratio > 1.0;
        if !scale_up_with_unready && groups.missing.is_empty() {
            if self.within_tolerance(ratio) {
                return Ok(result(current));
            }
            return Ok(result(ceil(ratio * groups.ready as f64)));
        }
        if ratio < 1.0 {
            // Scaling down: a missing pod may be busy; assume its whole request (or the
            // target when that is higher).
            let fallback = i64::from(target_utilization.max(100));
            for name in &groups.missing {
                let request = requests.get(name).copied().unwrap_or_default();
                metrics.insert(name.clone(), assumed(request.saturating_mul(fallback) / 100, now));
            }
        } else if ratio > 1.0 {
            for name in &groups.missing {
                metrics.insert(name.clone(), assumed(0, now));
            }
        }
        if scale_up_with_unready {
            for name in &groups.unready {
                metrics.insert(name.clone(), assumed(0, now));
            }
        }
        let (new_ratio, _, _) = utilization_ratio(&metrics, &requests, target_utilization)?;
        Ok(result(self.cautious(current, ratio, new_ratio, metrics.len())))
    }

    /// The count for an average-value target (thousandths per pod): a resource's raw usage
    /// (`resource` names it, so CPU samples get their start-up rules) or a custom pod metric
    /// (`resource` empty).
    pub fn plain_replicas(
        &self,
        current: i32,
        target_usage: i64,
        resource: &str,
        observed: Observed<'_>,
    ) -> Result<Usage, CalcError> {
        let Observed { pods, mut metrics, now } = observed;
        if pods.is_empty() {
            return Err(CalcError::NoPods);
        }
        let groups = self.group(pods, &metrics, resource, now);
        for name in groups.ignored.iter().chain(&groups.unready) {
            metrics.remove(name);
        }
        if metrics.is_empty() {
            return Err(CalcError::NoReadyMetrics);
        }
        let (ratio, usage) = usage_ratio(&metrics, target_usage);
        let result = |replicas| Usage { replicas, usage };
        let scale_up_with_unready = !groups.unready.is_empty() && ratio > 1.0;
        if !scale_up_with_unready && groups.missing.is_empty() {
            if self.within_tolerance(ratio) {
                return Ok(result(current));
            }
            return Ok(result(ceil(ratio * groups.ready as f64)));
        }
        if ratio < 1.0 {
            // Scaling down: a missing pod is assumed at exactly the target.
            for name in &groups.missing {
                metrics.insert(name.clone(), assumed(target_usage, now));
            }
        } else if ratio > 1.0 {
            for name in &groups.missing {
                metrics.insert(name.clone(), assumed(0, now));
            }
        }
        if scale_up_with_unready {
            for name in &groups.unready {
                metrics.insert(name.clone(), assumed(0, now));
            }
        }
        let (new_ratio, _) = usage_ratio(&metrics, target_usage);
        Ok(result(self.cautious(current, ratio, new_ratio, metrics.len())))
    }

    /// The count after the cautious second look: none when it falls within the tolerance
    /// or turns the direction around.
    fn cautious(&self, current: i32, ratio: f64, new_ratio: f64, counted: usize) -> i32 {
        if self.within_tolerance(new_ratio)
            || (ratio < 1.0 && new_ratio > 1.0)
            || (ratio > 1.0 && new_ratio < 1.0)
        {
            return current;
        }
        let replicas = ceil(new_ratio * counted as f64);
        if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
            return current;
        }
        replicas
    }

    /// The count for a whole-object or external value target (`usage` over `target`, both
    /// in thousandths): scaled by the ready pods, whose count `ready_pods` gives (asked only
    /// when needed).
    pub fn value_replicas(
        &self,
        current: i32,
        usage: i64,
        target: i64,
        ready_pods: impl FnOnce() -> Result<usize, CalcError>,
    ) -> Result<i32, CalcError> {
        let ratio = usage as f64 / target as f64;
        if current == 0 {
            // Scaling from zero (only reachable with HPAScaleToZero).
            return Ok(ceil(ratio));
        }
        if self.within_tolerance(ratio) {
            return Ok(current);
        }
        Ok(ceil(ratio * ready_pods()? as f64))
    }

    /// The count for an object or external average-value target: `usage` (thousandths, over
    /// all pods) spread over `status_replicas` pods of `target` each. Returns the count and
    /// the usage per pod.
    pub fn per_pod_replicas(&self, status_replicas: i32, usage: i64, target: i64) -> Usage {
        let ratio = usage as f64 / (target as f64 * f64::from(status_replicas));
        let replicas = if self.within_tolerance(ratio) {
            status_replicas
        } else {
            ceil(usage as f64 / target as f64)
        };
        let per_pod = if status_replicas == 0 {
            i64::MAX
        } else {
            (usage as f64 / f64::from(status_replicas)).ceil() as i64
        };
        Usage { replicas, usage: per_pod }
    }
}

/// How many of `pods` are running and ready (for object and external value targets).
pub fn ready_pod_count(pods: &[&Pod]) -> Result<usize, CalcError> {
    if pods.is_empty() {
        return Err(CalcError::NoPods);
    }
    Ok(pods
        .iter()
        .filter(|p| {
            p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
                && crate::pod_state::is_ready(p)
        })
        .count())
}

/// `ceil(x)` as a replica count (saturating).
fn ceil(x: f64) -> i32 {
    let c = x.ceil();
    if c >= f64::from(i32::MAX) {
        i32::MAX
    } else if c <= f64::from(i32::MIN) {
        i32::MIN
    } else {
        c as i32
    }
}

/// A sample the calculation assumes for a pod.
fn assumed(value: i64, now: Timestamp) -> PodMetric {
    PodMetric { timestamp: now, window: Duration::ZERO, value }
}

/// Each pod's request of `resource` in thousandths: the sum over its containers and
/// restartable init containers (sidecars), or `container`'s alone when named; a counted
/// container without a request is an error.
fn requests(
    pods: &[&Pod],
    container: &str,
    resource: &str,
) -> Result<BTreeMap<String, i64>, CalcError> {
    let mut requests = BTreeMap::new();
    for pod in pods {
        let spec = pod.spec.as_ref();
        let sidecars = spec
            .and_then(|s| s.init_containers.as_ref())
            .into_iter()
            .flatten()
            .filter(|c| c.restart_policy.as_deref() == Some("Always"));
        let containers: Vec<&Container> =
            spec.map(|s| s.containers.iter()).into_iter().flatten().chain(sidecars).collect();
        let mut sum = 0i64;
        for c in containers.into_iter().filter(|c| container.is_empty() || c.name == container) {
            let request = c
                .resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .and_then(|r| r.get(resource))
                .and_then(|q| parse_milli(&q.0));
            match request {
                Some(milli) => sum = sum.saturating_add(milli),
                None => {
                    return Err(CalcError::MissingRequest {
                        resource: resource.to_string(),
                        container: c.name.clone(),
                        pod: name_of(pod),
                    })
                }
            }
        }
        requests.insert(name_of(pod), sum);
    }
    Ok(requests)
}

/// The samples' utilization of the requests: (ratio to the target, percent, average raw
/// value). Samples of pods without a known request are extraneous and skipped.
fn utilization_ratio(
    metrics: &PodMetrics,
    requests: &BTreeMap<String, i64>,
    target_utilization: i32,
) -> Result<(f64, i32, i64), CalcError> {
    let (mut used, mut requested, mut entries) = (0i128, 0i128, 0i128);
    for (name, metric) in metrics {
        let Some(request) = requests.get(name) else { continue };
        used += i128::from(metric.value);
        requested += i128::from(*request);
        entries += 1;
    }
    if requested == 0 {
        return Err(CalcError::NoMatchingRequests);
    }
    let percent = (used * 100 / requested).clamp(i128::from(i32::MIN), i128::from(i32::MAX)) as i32;
    let raw_average = (used / entries) as i64;
    Ok((f64::from(percent) / f64::from(target_utilization), percent, raw_average))
}

/// The samples' average over the target: (ratio, average).
fn usage_ratio(metrics: &PodMetrics, target: i64) -> (f64, i64) {
    let total: i128 = metrics.values().map(|m| i128::from(m.value)).sum();
    let average = (total / metrics.len().max(1) as i128) as i64;
    (average as f64 / target as f64, average)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodSpec, PodStatus, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    const NOW: i64 = 1_700_000_000;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(NOW + secs).unwrap()
    }

    fn calculator() -> Calculator {
        Calculator {
            tolerance: 0.1,
            cpu_initialization_period: Duration::from_secs(300),
            initial_readiness_delay: Duration::from_secs(30),
        }
    }

    /// A running, ready pod started an hour ago (ready since then), requesting `cpu`
    /// millicores in one container.
    fn pod(name: &str, cpu: i64) -> Pod {
        let requests = [("cpu".to_string(), Quantity(format!("{cpu}m")))].into();
        Pod {
            metadata: kube::api::ObjectMeta { name: Some(name.into()), ..Default::default() },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "app".into(),
                    resources: Some(ResourceRequirements {
                        requests: Some(requests),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some("Running".into()),
                start_time: Some(Time(at(-3600))),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: Some(Time(at(-3600))),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        }
    }

    fn with_phase(mut pod: Pod, phase: &str) -> Pod {
        pod.status.as_mut().unwrap().phase = Some(phase.into());
        pod
    }

    /// Started `started` seconds ago, its Ready condition `status` since `transition`.
    fn started(mut pod: Pod, started: i64, status: &str, transition: i64) -> Pod {
        let s = pod.status.as_mut().unwrap();
        s.start_time = Some(Time(at(-started)));
        let ready = &mut s.conditions.as_mut().unwrap()[0];
        ready.status = status.into();
        ready.last_transition_time = Some(Time(at(-transition)));
        pod
    }

    fn sample(value: i64) -> PodMetric {
        PodMetric { timestamp: at(-1), window: Duration::from_secs(10), value }
    }

    fn metrics(values: &[(&str, i64)]) -> PodMetrics {
        values.iter().map(|(n, v)| (n.to_string(), sample(*v))).collect()
    }

    fn cpu(
        current: i32,
        target: i32,
        pods: &[Pod],
        m: PodMetrics,
    ) -> Result<Utilization, CalcError> {
        let pods: Vec<&Pod> = pods.iter().collect();
        let observed = Observed { pods: &pods, metrics: m, now: at(0) };
        calculator().resource_replicas(current, target, "cpu", "", observed)
    }

    #[test]
    fn scales_by_the_usage_ratio() {
        // Upstream's TestReplicaCalcScaleUp: 3 pods at 30%, 50%, 70% of 1 CPU, target 30%.
        let pods = [pod("a", 1000), pod("b", 1000), pod("c", 1000)];
        let got = cpu(3, 30, &pods, metrics(&[("a", 300), ("b", 500), ("c", 700)])).unwrap();
        assert_eq!(got, Utilization { replicas: 5, utilization: 50, raw_average: 500 });
        // Down: 3 pods at 10%, 20%, 30% of 1 CPU, target 50% -> ceil(0.4*3) = 2.
        let got = cpu(3, 50, &pods, metrics(&[("a", 100), ("b", 200), ("c", 300)])).unwrap();
        assert_eq!(got.replicas, 2);
        assert_eq!(got.utilization, 20);
    }

    #[test]
    fn a_ratio_within_the_tolerance_keeps_the_count() {
        let pods = [pod("a", 1000), pod("b", 1000)];
        // 54% of a 50% target: ratio 1.08 <= 1.1.
        let got = cpu(2, 50, &pods, metrics(&[("a", 540), ("b", 540)])).unwrap();
        assert_eq!(got.replicas, 2);
        // 56%: ratio 1.12, outside: ceil(1.12 * 2) = 3.
        let got = cpu(2, 50, &pods, metrics(&[("a", 560), ("b", 560)])).unwrap();
        assert_eq!(got.replicas, 3);
    }

    #[test]
    fn unready_pods_count_as_idle_on_a_scale_up() {
        // Upstream's TestReplicaCalcScaleUpUnreadyLessScale: one of 3 pods unready; the
        // ready ones at 50% and 70% of a 30% target; the unready counts as 0 -> 4, not 5.
        let pods = [
            started(pod("a", 1000), 60, "False", 60),
            started(pod("b", 1000), 3600, "True", 3600),
            started(pod("c", 1000), 3600, "True", 3600),
        ];
        let got = cpu(3, 30, &pods, metrics(&[("a", 300), ("b", 500), ("c", 700)])).unwrap();
        assert_eq!(got, Utilization { replicas: 4, utilization: 60, raw_average: 600 });
    }

    #[test]
    fn missing_pods_count_as_busy_on_a_scale_down_and_idle_on_a_scale_up() {
        let pods = [pod("a", 1000), pod("b", 1000), pod("c", 1000), pod("d", 1000)];
        // Down: 3 pods at 10% of a 50% target, d has no sample and counts as 100%:
        // (10+10+10+100)/4 = 32.5% -> ratio 0.65 -> ceil(0.65*4) = 3, not ceil(0.2*3) = 1.
        let got = cpu(4, 50, &pods, metrics(&[("a", 100), ("b", 100), ("c", 100)])).unwrap();
        assert_eq!(got.replicas, 3);
        assert_eq!(got.utilization, 10, "the status reports the measured pods only");
        // Up: 3 pods at 100% of a 50% target, d at 0: 75% -> ceil(1.5*4) = 6.
        let got = cpu(4, 50, &pods, metrics(&[("a", 1000), ("b", 1000), ("c", 1000)])).unwrap();
        assert_eq!(got.replicas, 6);
        // A target above 100%: missing pods are assumed at the target on a scale-down.
        let got = cpu(4, 200, &pods, metrics(&[("a", 100), ("b", 100), ("c", 100)])).unwrap();
        // (100+100+100+2000)/4000 = 57% -> ratio 0.285 -> ceil(0.285*4) = 2.
        assert_eq!(got.replicas, 2);
    }

    #[test]
    fn a_cautious_look_that_reverses_the_direction_keeps_the_count() {
        // Two measured pods at 40% of a 50% target (down), two missing at 100%: 70% is up.
        let pods = [pod("a", 1000), pod("b", 1000), pod("c", 1000), pod("d", 1000)];
        let got = cpu(4, 50, &pods, metrics(&[("a", 400), ("b", 400)])).unwrap();
        assert_eq!(got.replicas, 4);
    }

    #[test]
    fn deleted_failed_and_pending_pods_do_not_count() {
        let mut deleted = pod("gone", 1000);
        deleted.metadata.deletion_timestamp = Some(Time(at(-1)));
        let pods = [
            pod("a", 1000),
            deleted,
            with_phase(pod("failed", 1000), "Failed"),
            with_phase(pod("pending", 1000), "Pending"),
        ];
        let m = metrics(&[("a", 1000), ("gone", 5000), ("failed", 5000)]);
        // Only a's 100% counts; pending is unready (counted as 0 on a scale-up): (100+0)/2
        // = 50% of a 50% target -> ratio 1.0 within tolerance -> the count stays.
        let got = cpu(2, 50, &pods, m).unwrap();
        assert_eq!(got.replicas, 2);
        assert_eq!(got.utilization, 100);
    }

    #[test]
    fn cpu_samples_of_starting_pods_are_start_up_noise() {
        let c = calculator();
        let m = sample(100);
        // Within the initialization period: ready long enough before the sample -> counts.
        assert!(!c.cpu_unready(&started(pod("p", 1), 120, "True", 60), &m, at(0)));
        // Ready only 5 s before the sample (window 10 s) -> noise.
        assert!(c.cpu_unready(&started(pod("p", 1), 120, "True", 6), &m, at(0)));
        // Not ready -> noise.
        assert!(c.cpu_unready(&started(pod("p", 1), 120, "False", 60), &m, at(0)));
        // Past the period, unready since within the readiness delay of its start: never
        // was ready -> noise; unready since later (it was ready once) -> counts.
        assert!(c.cpu_unready(&started(pod("p", 1), 600, "False", 590), &m, at(0)));
        assert!(!c.cpu_unready(&started(pod("p", 1), 600, "False", 100), &m, at(0)));
        // Without a start time or Ready condition -> noise.
        let mut bare = pod("p", 1);
        bare.status.as_mut().unwrap().conditions = None;
        assert!(c.cpu_unready(&bare, &m, at(0)));
        // Memory samples have no start-up rules.
        let pods = [started(pod("p", 1), 120, "True", 6)];
        let pods: Vec<&Pod> = pods.iter().collect();
        let groups = c.group(&pods, &metrics(&[("p", 1)]), "memory", at(0));
        assert_eq!(groups.ready, 1);
    }

    #[test]
    fn errors_read_as_upstream_s() {
        assert_eq!(cpu(1, 50, &[], PodMetrics::new()).unwrap_err(), CalcError::NoPods);
        let pods = [with_phase(pod("a", 1000), "Pending")];
        let e = cpu(1, 50, &pods, metrics(&[("a", 1)])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "did not receive metrics for targeted pods (pods might be unready)"
        );
        let mut no_request = pod("a", 1000);
        no_request.spec.as_mut().unwrap().containers[0].resources = None;
        let e = cpu(1, 50, &[no_request], metrics(&[("a", 1)])).unwrap_err();
        assert_eq!(e.to_string(), "missing request for cpu in container app of Pod a");
        let e = cpu(1, 50, &[pod("a", 0)], metrics(&[("a", 1)])).unwrap_err();
        assert_eq!(e.to_string(), "no metrics returned matched known pods");
    }

    #[test]
    fn requests_add_sidecars_or_take_the_named_container() {
        let mut p = pod("a", 100);
        let spec = p.spec.as_mut().unwrap();
        let mut sidecar = spec.containers[0].clone();
        sidecar.name = "sidecar".into();
        sidecar.restart_policy = Some("Always".into());
        let mut init = spec.containers[0].clone();
        init.name = "init".into();
        init.resources = None;
        spec.init_containers = Some(vec![sidecar, init]);
        let pods = [&p];
        assert_eq!(requests(&pods, "", "cpu").unwrap()["a"], 200);
        assert_eq!(requests(&pods, "sidecar", "cpu").unwrap()["a"], 100);
        assert_eq!(requests(&pods, "absent", "cpu").unwrap()["a"], 0);
    }

    #[test]
    fn plain_values_assume_the_target_for_missing_pods_on_a_scale_down() {
        let c = calculator();
        let pods = [pod("a", 1), pod("b", 1), pod("c", 1)];
        let pods: Vec<&Pod> = pods.iter().collect();
        // Average 1000 of a 500 target: ceil(2*3) = 6.
        let m = metrics(&[("a", 1000), ("b", 1000), ("c", 1000)]);
        assert_eq!(
            c.plain_replicas(3, 500, "", Observed { pods: &pods, metrics: m, now: at(0) }).unwrap(),
            Usage { replicas: 6, usage: 1000 }
        );
        // Two at 100 of 500, c missing (assumed 500): 700/3 = 233 -> ratio 0.47 -> 2.
        let m = metrics(&[("a", 100), ("b", 100)]);
        assert_eq!(
            c.plain_replicas(3, 500, "", Observed { pods: &pods, metrics: m, now: at(0) }).unwrap(),
            Usage { replicas: 2, usage: 100 }
        );
    }

    #[test]
    fn object_and_external_values() {
        let c = calculator();
        // 3000 over a target of 1000 with 2 ready pods: ceil(3*2) = 6; within tolerance: stays.
        assert_eq!(c.value_replicas(2, 3000, 1000, || Ok(2)), Ok(6));
        assert_eq!(c.value_replicas(2, 1050, 1000, || panic!("not needed")), Ok(2));
        // Per pod: 3000 over 1000 a pod -> 3; per-pod usage over 2 pods is 1500.
        assert_eq!(c.per_pod_replicas(2, 3000, 1000), Usage { replicas: 3, usage: 1500 });
        assert_eq!(c.per_pod_replicas(3, 3100, 1000), Usage { replicas: 3, usage: 1034 });
    }
}
