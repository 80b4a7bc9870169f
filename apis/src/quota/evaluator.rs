//! What an object uses of a quota, by resource, as upstream's quota evaluators measure it:
//! pods (compute requests and limits, extended resources, hugepages, counts), services
//! (counts, node ports, load balancers), persistent volume claims (counts and storage, per
//! storage class) and, for every other namespaced resource, its object count
//! (`count/<resource>.<group>`, and the legacy names `configmaps`, `secrets`, ...).

use serde_json::Value;

use super::list::{self, ResourceList};
use super::scopes::{self, ScopeSelector};
use crate::quantity::Quantity;

/// Which measure applies to a resource.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Evaluator {
    Pods,
    Services,
    PersistentVolumeClaims,
    /// Any other resource: one per object.
    Count {
        group: String,
        resource: String,
    },
}

/// The write a quota is checked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    Create,
    Update,
}

/// Compute resources of pods, by the names quotas give them.
const POD_RESOURCES: [&str; 11] = [
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// A quota on any of these makes every container say it (upstream's backward-compatible
/// "must specify" rule; no other resource is added to it).
const MUST_SPECIFY: [&str; 6] =
    ["cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"];

const SERVICE_RESOURCES: [&str; 4] =
    ["count/services", "services", "services.loadbalancers", "services.nodeports"];

const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// The core resources whose object counts also have a bare name (`configmaps: 10`).
const LEGACY_COUNTS: [&str; 7] = [
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
];

/// Upstream's native resource names: no domain, or a `kubernetes.io` one.
fn is_native(name: &str) -> bool {
    match name.split_once('/') {
        None => true,
        Some((domain, _)) => domain == "kubernetes.io" || domain.ends_with(".kubernetes.io"),
    }
}

/// An extended resource a container may ask for (`example.com/gpu`).
fn is_extended(name: &str) -> bool {
    !is_native(name) && !name.starts_with("requests.")
}

impl Evaluator {
    /// The evaluator of a resource (`""` is the core group).
    pub fn of(group: &str, resource: &str) -> Evaluator {
        match (group, resource) {
            ("", "pods") => Evaluator::Pods,
            ("", "services") => Evaluator::Services,
            ("", "persistentvolumeclaims") => Evaluator::PersistentVolumeClaims,
            _ => Evaluator::Count { group: group.to_string(), resource: resource.to_string() },
        }
    }

    /// The `(group, resource)` it measures.
    pub fn group_resource(&self) -> (&str, &str) {
        match self {
            Evaluator::Pods => ("", "pods"),
            Evaluator::Services => ("", "services"),
            Evaluator::PersistentVolumeClaims => ("", "persistentvolumeclaims"),
            Evaluator::Count { group, resource } => (group, resource),
        }
    }

    /// `count/<resource>` (core) or `count/<resource>.<group>`.
    pub fn object_count_name(&self) -> String {
        match self.group_resource() {
            ("", resource) => format!("count/{resource}"),
            (group, resource) => format!("count/{resource}.{group}"),
        }
    }

    /// Whether a write is charged: creates of everything; updates of pods' `resize`, of
    /// services and of claims (and a claim's `status` when its allocated storage changes).
    pub fn handles(&self, change: Change, subresource: &str, obj: &Value, old: &Value) -> bool {
        match (self, subresource) {
            (Evaluator::Pods, "") => change == Change::Create,
            (Evaluator::Pods, "resize") => change == Change::Update,
            (Evaluator::Services | Evaluator::PersistentVolumeClaims, "") => true,
            (Evaluator::PersistentVolumeClaims, "status") => {
                let allocated = |v: &Value| v["status"]["allocatedResources"]["storage"].clone();
                allocated(obj) != allocated(old)
            }
            (Evaluator::Count { .. }, "") => change == Change::Create,
            _ => false,
        }
    }

    /// The names among `names` (a quota's hard resources) this evaluator measures.
    pub fn matching_resources<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let count = self.object_count_name();
        let (group, resource) = self.group_resource();
        let legacy = (group.is_empty() && LEGACY_COUNTS.contains(&resource)).then_some(resource);
        names
            .into_iter()
            .filter(|name| match self {
                Evaluator::Pods => {
                    POD_RESOURCES.contains(name)
                        || name.starts_with("hugepages-")
                        || name.starts_with("requests.hugepages-")
                        || (name.starts_with("requests.") && !is_native(name))
                }
                Evaluator::Services => SERVICE_RESOURCES.contains(name),
                Evaluator::PersistentVolumeClaims => {
                    let base = ["persistentvolumeclaims", "requests.storage"];
                    *name == count
                        || base.contains(name)
                        || base
                            .iter()
                            .any(|b| name.ends_with(&format!("{STORAGE_CLASS_SUFFIX}{b}")))
                }
                Evaluator::Count { .. } => *name == count || Some(*name) == legacy,
            })
            .map(String::from)
            .collect()
    }

    /// Whether `quota` counts `obj`: it limits something this evaluator measures (by its
    /// `status.hard`: a quota the controller has not seen yet limits nothing) and `obj` is in
    /// every one of its scopes (objects other than pods are in none).
    pub fn matches(&self, quota: &Value, obj: &Value) -> bool {
        let hard = quota["status"]["hard"].as_object();
        let names = hard.into_iter().flat_map(|h| h.keys().map(String::as_str));
        !self.matching_resources(names).is_empty()
            && scopes::of_quota(quota).iter().all(|s| self.matches_scope(s, obj))
    }

    /// Whether `obj` is in the scope `selector`.
    pub fn matches_scope(&self, selector: &ScopeSelector, obj: &Value) -> bool {
        match self {
            Evaluator::Pods => scopes::pod_matches(selector, obj),
            _ => false,
        }
    }

    /// What `obj` uses; `now` decides whether a pod stuck terminating still counts.
    pub fn usage(&self, obj: &Value, now: std::time::SystemTime) -> ResourceList {
        let one = Quantity::count(1);
        let mut out = ResourceList::new();
        out.insert(self.object_count_name(), one);
        match self {
            Evaluator::Pods => {
                if counts_compute(obj, now) {
                    out = list::add(&out, &pod_compute_usage(obj));
                }
            }
            Evaluator::Services => {
                out.insert("services".into(), one);
                let ports = obj["spec"]["ports"].as_array().map_or(0, Vec::len) as i64;
                let (load_balancers, node_ports) = match obj["spec"]["type"].as_str() {
                    Some("NodePort") => (0, ports),
                    Some("LoadBalancer") => {
                        let explicit = obj["spec"]["ports"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter(|p| p["nodePort"].as_i64().is_some_and(|n| n != 0))
                            .count() as i64;
                        match obj["spec"]["allocateLoadBalancerNodePorts"].as_bool() {
                            Some(false) => (1, explicit),
                            _ => (1, ports),
                        }
                    }
                    _ => (0, 0),
                };
                out.insert("services.loadbalancers".into(), Quantity::count(load_balancers));
                out.insert("services.nodeports".into(), Quantity::count(node_ports));
            }
            Evaluator::PersistentVolumeClaims => {
                out.insert("persistentvolumeclaims".into(), one);
                let class = claim_class(obj);
                if !class.is_empty() {
                    out.insert(format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"), one);
                }
                if let Some(storage) = claim_storage(obj) {
                    out.insert("requests.storage".into(), storage);
                    if !class.is_empty() {
                        out.insert(
                            format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"),
                            storage,
                        );
                    }
                }
            }
            Evaluator::Count { group, resource } => {
                if group.is_empty() && LEGACY_COUNTS.contains(&resource.as_str()) {
                    out.insert(resource.clone(), one);
                }
            }
        }
        out
    }

    /// Upstream's "must specify" rule: with a quota on CPU or memory (`required`, the
    /// quota's names this evaluator matches), every container and init container states
    /// them; the error names what is missing and where (`must specify limits.cpu for: app`).
    pub fn constraints(&self, required: &[String], obj: &Value) -> Result<(), String> {
        if *self != Evaluator::Pods {
            return Ok(());
        }
        let required: Vec<&str> =
            required.iter().map(String::as_str).filter(|r| MUST_SPECIFY.contains(r)).collect();
        if required.is_empty() {
            return Ok(());
        }
        let mut missing: std::collections::BTreeMap<&str, std::collections::BTreeSet<String>> =
            Default::default();
        let spec = &obj["spec"];
        for c in ["containers", "initContainers"]
            .iter()
            .flat_map(|l| spec[*l].as_array().into_iter().flatten())
        {
            let stated = container_usage(&c["resources"]["requests"], &c["resources"]["limits"]);
            for r in &required {
                if !stated.contains_key(*r) {
                    missing
                        .entry(r)
                        .or_default()
                        .insert(c["name"].as_str().unwrap_or("").to_string());
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = missing
            .iter()
            .map(|(r, names)| {
                format!("{r} for: {}", names.iter().cloned().collect::<Vec<_>>().join(","))
            })
            .collect();
        Err(format!("must specify {}", parts.join("; ")))
    }
}

/// A pod counts for compute resources unless it is done (Succeeded, Failed) or stuck
/// terminating past its grace period (so a lost node's pods do not block new ones):
/// upstream's `QuotaV1Pod`, which also tells the quota controller when a pod's change
/// gives usage back.
pub fn counts_compute(pod: &Value, now: std::time::SystemTime) -> bool {
    let now = chrono::DateTime::<chrono::Utc>::from(now);
    if matches!(pod["status"]["phase"].as_str(), Some("Succeeded" | "Failed")) {
        return false;
    }
    let meta = &pod["metadata"];
    let deleted = meta["deletionTimestamp"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
    match (deleted, meta["deletionGracePeriodSeconds"].as_i64()) {
        (Some(at), Some(grace)) => now <= at + chrono::Duration::seconds(grace),
        _ => true,
    }
}

/// One container's (or the pod's effective) usage from its requests and limits.
fn container_usage(requests: &Value, limits: &Value) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("pods".into(), Quantity::count(1));
    let q = |list: &Value, name: &str| list.get(name).and_then(Quantity::parse);
    for name in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(request) = q(requests, name) {
            out.insert(name.to_string(), request);
            out.insert(format!("requests.{name}"), request);
        }
        if let Some(limit) = q(limits, name) {
            out.insert(format!("limits.{name}"), limit);
        }
    }
    for (name, value) in requests.as_object().into_iter().flatten() {
        let Some(request) = Quantity::parse(value) else { continue };
        if name.starts_with("hugepages-") {
            out.insert(name.clone(), request);
            out.insert(format!("requests.{name}"), request);
        } else if is_extended(name) {
            out.insert(format!("requests.{name}"), request);
        }
    }
    out
}

/// A pod's containers' requests or limits (`field`) as a whole: the app containers and the
/// sidecars (init containers with restartPolicy Always) add up, and each other init
/// container runs alone next to the sidecars started before it, so the pod needs the larger
/// of the two. Upstream's `PodRequests`/`PodLimits` without the overhead, as LimitRanger
/// counts a pod (quota adds the overhead, [`pod_resources`]).
pub fn pod_containers_total(spec: &Value, field: &str) -> ResourceList {
    let of = |c: &Value| list::from_json(&c["resources"][field]);
    let mut total = ResourceList::new();
    for c in spec["containers"].as_array().into_iter().flatten() {
        list::add_into(&mut total, &of(c));
    }
    let (mut sidecars, mut init_max) = (ResourceList::new(), ResourceList::new());
    for c in spec["initContainers"].as_array().into_iter().flatten() {
        let needs = if c["restartPolicy"] == "Always" {
            list::add_into(&mut total, &of(c));
            list::add_into(&mut sidecars, &of(c));
            sidecars.clone()
        } else {
            list::add(&of(c), &sidecars)
        };
        list::max_into(&mut init_max, &needs);
    }
    list::max_into(&mut total, &init_max);
    total
}

/// A pod's effective requests or limits (`field`) as quota charges them: its containers'
/// total plus the RuntimeClass overhead (to limits only where a limit is set).
fn pod_resources(pod: &Value, field: &str) -> ResourceList {
    let spec = &pod["spec"];
    let mut total = pod_containers_total(spec, field);
    let overhead = list::from_json(&spec["overhead"]);
    for (name, q) in overhead {
        if field == "requests" {
            let sum = total.get(&name).map_or(q, |have| have.add(&q));
            total.insert(name, sum);
        } else if let Some(have) = total.get(&name).copied() {
            total.insert(name, have.add(&q));
        }
    }
    total
}

fn pod_compute_usage(pod: &Value) -> ResourceList {
    let requests = list::to_json(&pod_resources(pod, "requests"));
    let limits = list::to_json(&pod_resources(pod, "limits"));
    container_usage(&requests, &limits)
}

/// A claim's storage class: `spec.storageClassName`, else the beta annotation.
fn claim_class(claim: &Value) -> String {
    claim["spec"]["storageClassName"]
        .as_str()
        .or_else(|| {
            claim["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"].as_str()
        })
        .unwrap_or("")
        .to_string()
}

/// A claim's storage: its request, or what was allocated when that is more, in whole bytes.
fn claim_storage(claim: &Value) -> Option<Quantity> {
    let request = Quantity::parse(&claim["spec"]["resources"]["requests"]["storage"])?.round_up();
    match Quantity::parse(&claim["status"]["allocatedResources"]["storage"]) {
        Some(allocated) if allocated > request => Some(allocated.round_up()),
        _ => Some(request),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> std::time::SystemTime {
        std::time::SystemTime::now()
    }

    #[test]
    fn pods_use_their_effective_requests_and_limits() {
        let pod = json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi", "example.com/gpu": "1"},
                    "limits": {"cpu": "200m"}}},
                {"name": "b", "resources": {"requests": {"cpu": "100m", "hugepages-2Mi": "4Mi"}}},
            ],
            "initContainers": [
                {"name": "init", "resources": {"requests": {"cpu": "500m"}}},
                {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"memory": "16Mi"}}},
            ],
            "overhead": {"cpu": "10m"}}});
        let usage = list::to_json(&Evaluator::Pods.usage(&pod, now()));
        assert_eq!(
            usage,
            json!({"count/pods": "1", "cpu": "510m", "hugepages-2Mi": "4Mi", "limits.cpu": "210m",
                "memory": "80Mi", "pods": "1", "requests.cpu": "510m",
                "requests.example.com/gpu": "1", "requests.hugepages-2Mi": "4Mi", "requests.memory": "80Mi"})
        );
        // Done pods count only as objects.
        let mut done = pod.clone();
        done["status"]["phase"] = json!("Succeeded");
        assert_eq!(list::to_json(&Evaluator::Pods.usage(&done, now())), json!({"count/pods": "1"}));
        // A pod past its deletion grace period is not charged either.
        let mut stuck = pod.clone();
        stuck["metadata"] =
            json!({"deletionTimestamp": "2020-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30});
        assert_eq!(Evaluator::Pods.usage(&stuck, now()).len(), 1);
    }

    #[test]
    fn services_claims_and_counts() {
        let svc = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
        assert_eq!(
            list::to_json(&Evaluator::Services.usage(&svc, now())),
            json!({"count/services": "1", "services": "1", "services.loadbalancers": "1", "services.nodeports": "2"})
        );
        let pvc = json!({"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1.5Gi"}}},
            "status": {"allocatedResources": {"storage": "2Gi"}}});
        assert_eq!(
            list::to_json(&Evaluator::PersistentVolumeClaims.usage(&pvc, now())),
            json!({"count/persistentvolumeclaims": "1", "fast.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
                "fast.storageclass.storage.k8s.io/requests.storage": "2Gi", "persistentvolumeclaims": "1",
                "requests.storage": "2Gi"})
        );
        let cm = Evaluator::of("", "configmaps");
        assert_eq!(
            list::to_json(&cm.usage(&json!({}), now())),
            json!({"configmaps": "1", "count/configmaps": "1"})
        );
        let deploy = Evaluator::of("apps", "deployments");
        assert_eq!(
            deploy.matching_resources(["count/deployments.apps", "pods"]),
            ["count/deployments.apps"]
        );
        assert_eq!(
            Evaluator::Pods.matching_resources([
                "pods",
                "requests.cpu",
                "requests.example.com/gpu",
                "services",
                "count/pods"
            ]),
            ["pods", "requests.cpu", "requests.example.com/gpu", "count/pods"]
        );
        assert!(deploy.handles(Change::Create, "", &json!({}), &json!({})));
        assert!(!deploy.handles(Change::Update, "", &json!({}), &json!({})));
        assert!(!Evaluator::Pods.handles(Change::Update, "", &json!({}), &json!({})));
    }

    #[test]
    fn quotas_on_cpu_or_memory_make_containers_state_them() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1"}}},
            {"name": "b"}]}});
        let required = vec!["limits.cpu".to_string(), "requests.cpu".into(), "pods".into()];
        assert_eq!(
            Evaluator::Pods.constraints(&required, &pod).unwrap_err(),
            "must specify limits.cpu for: a,b; requests.cpu for: b"
        );
        assert!(Evaluator::Pods.constraints(&["pods".to_string()], &pod).is_ok());
    }

    #[test]
    fn quotas_match_by_hard_names_and_scopes() {
        let quota = json!({"spec": {"scopes": ["BestEffort"]}, "status": {"hard": {"pods": "2"}}});
        assert!(Evaluator::Pods.matches(&quota, &json!({"spec": {"containers": [{"name": "c"}]}})));
        let burstable = json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"memory": "1Gi"}}}]}});
        assert!(!Evaluator::Pods.matches(&quota, &burstable));
        // Scoped quotas count nothing else; a quota without status limits nothing yet.
        assert!(!Evaluator::Services.matches(&quota, &json!({})));
        assert!(!Evaluator::Pods.matches(&json!({"spec": {"hard": {"pods": "2"}}}), &burstable));
    }
}
