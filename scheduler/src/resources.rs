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

/// Splits a quantity into its number and suffix, and returns (mantissa, power of ten, binary
/// multiplier): `1.5Gi` is (15, -1, 2^30).
fn split(q: &str) -> Option<(i128, i32, i128)> {
    let q = q.trim();
    if q.is_empty() {
        return None;
    }
    let (sign, q) = match q.as_bytes()[0] {
        b'-' => (-1, &q[1..]),
        b'+' => (1, &q[1..]),
        _ => (1, q),
    };
    let number_end = q.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(q.len());
    let (number, suffix) = q.split_at(number_end);
    if number.is_empty() || number.matches('.').count() > 1 {
        return None;
    }
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits = format!("{int}{frac}");
    let mantissa: i128 = digits.parse().ok()?;
    let mut exp10 = -(frac.len() as i32);
    let mut binary: i128 = 1;
    match suffix {
        "" => {}
        "n" => exp10 -= 9,
        "u" => exp10 -= 6,
        "m" => exp10 -= 3,
        "k" => exp10 += 3,
        "M" => exp10 += 6,
        "G" => exp10 += 9,
        "T" => exp10 += 12,
        "P" => exp10 += 15,
        "E" => exp10 += 18,
        "Ki" => binary = 1 << 10,
        "Mi" => binary = 1 << 20,
        "Gi" => binary = 1 << 30,
        "Ti" => binary = 1 << 40,
        "Pi" => binary = 1 << 50,
        "Ei" => binary = 1 << 60,
        s if s.starts_with(['e', 'E']) => exp10 += s[1..].parse::<i32>().ok()?,
        _ => return None,
    }
    Some((sign * mantissa, exp10, binary))
}

/// The value times 10^`scale`, rounded up (as upstream's `ScaledValue`).
fn scaled(q: &str, scale: i32) -> Option<i64> {
    let (mantissa, exp10, binary) = split(q)?;
    let value = mantissa.checked_mul(binary)?;
    let exp = exp10 + scale;
    let result = if exp >= 0 {
        value.checked_mul(10i128.checked_pow(exp as u32)?)?
    } else {
        let div = 10i128.checked_pow((-exp) as u32)?;
        // Round up, as upstream does for requests.
        let q = value / div;
        if value % div > 0 {
            q + 1
        } else {
            q
        }
    };
    i64::try_from(result).ok()
}

/// A quantity in thousandths (CPU millicores): `100m` is 100, `1.5` is 1500.
pub fn parse_milli(q: &str) -> Option<i64> {
    scaled(q, 3)
}

/// A quantity in whole units (bytes, counts): `1Gi` is 1073741824, `1k` is 1000.
pub fn parse_units(q: &str) -> Option<i64> {
    scaled(q, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_like_upstream() {
        assert_eq!(parse_milli("100m"), Some(100));
        assert_eq!(parse_milli("1"), Some(1000));
        assert_eq!(parse_milli("1.5"), Some(1500));
        assert_eq!(parse_milli("0.1"), Some(100));
        assert_eq!(parse_milli("1500u"), Some(2), "rounded up");
        assert_eq!(parse_units("1Gi"), Some(1 << 30));
        assert_eq!(parse_units("512Mi"), Some(512 << 20));
        assert_eq!(parse_units("1.5Gi"), Some(3 << 29));
        assert_eq!(parse_units("1k"), Some(1000));
        assert_eq!(parse_units("2e3"), Some(2000));
        assert_eq!(parse_units("110"), Some(110));
        assert_eq!(parse_units("bogus"), None);
        assert_eq!(parse_units(""), None);
    }

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
