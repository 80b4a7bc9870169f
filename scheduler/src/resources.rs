//! Resource amounts: parsing Kubernetes quantities, and what a pod requests the way
//! kube-scheduler counts it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Amounts of the resources the scheduler counts: CPU in millicores, memory and ephemeral
/// storage in bytes, pods as a count, and any other (extended) resource in its own unit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub pods: i64,
    pub scalar: BTreeMap<String, i64>,
}

impl Resources {
    /// From a `ResourceList` (allocatable, requests, overhead). Unparsable amounts count as 0.
    pub fn from_quantities(list: Option<&BTreeMap<String, Quantity>>) -> Resources {
        let mut r = Resources::default();
        for (name, q) in list.into_iter().flatten() {
            match name.as_str() {
                "cpu" => r.milli_cpu = parse_milli(&q.0).unwrap_or(0),
                "memory" => r.memory = parse_units(&q.0).unwrap_or(0),
                "ephemeral-storage" => r.ephemeral_storage = parse_units(&q.0).unwrap_or(0),
                "pods" => r.pods = parse_units(&q.0).unwrap_or(0),
                other => {
                    r.scalar.insert(other.to_string(), parse_units(&q.0).unwrap_or(0));
                }
            }
        }
        r
    }

    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu += other.milli_cpu;
        self.memory += other.memory;
        self.ephemeral_storage += other.ephemeral_storage;
        self.pods += other.pods;
        for (k, v) in &other.scalar {
            *self.scalar.entry(k.clone()).or_default() += v;
        }
    }

    pub fn subtract(&mut self, other: &Resources) {
        self.milli_cpu -= other.milli_cpu;
        self.memory -= other.memory;
        self.ephemeral_storage -= other.ephemeral_storage;
        self.pods -= other.pods;
        for (k, v) in &other.scalar {
            *self.scalar.entry(k.clone()).or_default() -= v;
        }
    }

    /// Each amount the larger of the two.
    fn max(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        for (k, v) in &other.scalar {
            let e = self.scalar.entry(k.clone()).or_default();
            *e = (*e).max(*v);
        }
    }

    fn container_requests(c: &Container) -> Resources {
        Resources::from_quantities(c.resources.as_ref().and_then(|r| r.requests.as_ref()))
    }

    /// What a pod requests, as kube-scheduler computes it: the sum of its containers
    /// (restartable init containers, i.e. sidecars, included), or the largest init container
    /// plus the sidecars started before it if that is more; plus the pod overhead. A pod
    /// always takes one of the node's pod slots.
    pub fn pod_requests(pod: &Pod) -> Resources {
        let Some(spec) = pod.spec.as_ref() else {
            return Resources { pods: 1, ..Default::default() };
        };
        let mut total = Resources::default();
        for c in &spec.containers {
            total.add(&Resources::container_requests(c));
        }
        let mut sidecars = Resources::default();
        let mut init_peak = Resources::default();
        for c in spec.init_containers.iter().flatten() {
            let requests = Resources::container_requests(c);
            if c.restart_policy.as_deref() == Some("Always") {
                sidecars.add(&requests);
                total.add(&requests);
                init_peak.max(&sidecars);
            } else {
                let mut during = sidecars.clone();
                during.add(&requests);
                init_peak.max(&during);
            }
        }
        total.max(&init_peak);
        if let Some(overhead) = spec.overhead.as_ref() {
            total.add(&Resources::from_quantities(Some(overhead)));
        }
        total.pods = 1;
        total
    }
}

/// The CPU a container without a CPU request counts as when scoring (upstream's
/// `DefaultMilliCPURequest`), so that best-effort pods still spread.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// The memory a container without a memory request counts as when scoring (200Mi).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// CPU (millicores) and memory (bytes) a pod counts for when scoring, as upstream's
/// `NonZeroRequested`: the usual pod-request rule (containers and sidecars summed, the
/// largest init-time peak if bigger, plus overhead), except that a container which does not
/// mention cpu or memory in its requests counts the defaults for it.
pub fn non_zero_requests(pod: &Pod) -> (i64, i64) {
    let Some(spec) = pod.spec.as_ref() else { return (0, 0) };
    let container = |c: &Container| -> (i64, i64) {
        let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref());
        let get = |name: &str| requests.and_then(|r| r.get(name)).map(|q| q.0.as_str());
        let cpu = get("cpu").map_or(DEFAULT_MILLI_CPU_REQUEST, |q| parse_milli(q).unwrap_or(0));
        let mem = get("memory").map_or(DEFAULT_MEMORY_REQUEST, |q| parse_units(q).unwrap_or(0));
        (cpu, mem)
    };
    let add = |a: (i64, i64), b: (i64, i64)| (a.0 + b.0, a.1 + b.1);
    let max = |a: (i64, i64), b: (i64, i64)| (a.0.max(b.0), a.1.max(b.1));

    let mut total = spec.containers.iter().map(container).fold((0, 0), add);
    let mut sidecars = (0, 0);
    let mut init_peak = (0, 0);
    for c in spec.init_containers.iter().flatten() {
        let requests = container(c);
        if c.restart_policy.as_deref() == Some("Always") {
            sidecars = add(sidecars, requests);
            total = add(total, requests);
            init_peak = max(init_peak, sidecars);
        } else {
            init_peak = max(init_peak, add(sidecars, requests));
        }
    }
    total = max(total, init_peak);
    if let Some(overhead) = spec.overhead.as_ref() {
        total = add(total, overhead_of(overhead));
    }
    total
}

fn overhead_of(list: &BTreeMap<String, Quantity>) -> (i64, i64) {
    let cpu = list.get("cpu").and_then(|q| parse_milli(&q.0)).unwrap_or(0);
    let mem = list.get("memory").and_then(|q| parse_units(&q.0)).unwrap_or(0);
    (cpu, mem)
}

pub use rkube_apis::quantity::{parse_milli, parse_units};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_requests_take_init_containers_and_overhead_into_account() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "spec": {
                "containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                    {"name": "b", "resources": {"requests": {"cpu": "200m"}}},
                ],
                "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "500m", "memory": "32Mi"}}}],
                "overhead": {"cpu": "10m"},
            }
        }))
        .unwrap();
        let r = Resources::pod_requests(&pod);
        assert_eq!((r.milli_cpu, r.memory, r.pods), (510, 64 << 20, 1));
    }
}
