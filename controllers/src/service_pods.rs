//! How the endpoint controllers read Services and their pods, as upstream's endpoint utilities
//! do (shared by [`crate::endpoints`] and [`crate::endpoint_slice`]): which pods a Service
//! selects, which of them belong in its endpoints, the container port a Service port reaches
//! on each pod, and which Services a pod change concerns ([`PodChanges`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{Pod, Service, ServicePort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::runtime::reflector::ObjectRef;
use rkube_runtime::informer::Change;
use rkube_runtime::store::Store;

/// The label that marks an Endpoints or EndpointSlice of a headless Service.
pub const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";
/// The annotation with the time of the change that caused an endpoints write.
pub const LAST_CHANGE_TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";

/// `namespace/name`, the work-queue key of a Service.
pub fn key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// A Service's selector, when it selects pods. A Service without one (or with an empty one,
/// which the API stores as none) gets its endpoints from elsewhere: this selects nothing.
pub fn selector(service: &Service) -> Option<&BTreeMap<String, String>> {
    service.spec.as_ref()?.selector.as_ref().filter(|s| !s.is_empty())
}

/// Whether `labels` carry every pair of `selector`.
pub fn selects(selector: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// Whether the Service is of type ExternalName (which gets no endpoints).
pub fn is_external_name(service: &Service) -> bool {
    service.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("ExternalName")
}

/// Whether the Service has a cluster IP (not headless, not unset).
pub fn is_service_ip_set(service: &Service) -> bool {
    let ip = service.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()).unwrap_or("");
    !ip.is_empty() && ip != "None"
}

/// `spec.publishNotReadyAddresses`.
pub fn publish_not_ready(service: &Service) -> bool {
    service.spec.as_ref().and_then(|s| s.publish_not_ready_addresses).unwrap_or(false)
}

/// The pods of `pods` (one namespace's) that `service` selects.
pub fn selected_pods(
    service: &Service,
    pods: Vec<std::sync::Arc<Pod>>,
) -> Vec<std::sync::Arc<Pod>> {
    let Some(selector) = selector(service) else { return Vec::new() };
    let mut pods = pods;
    pods.retain(|p| selects(selector, labels_of(p)));
    pods
}

fn labels_of(pod: &Pod) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    pod.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

/// The pod's Ready condition is True.
pub fn is_pod_ready(pod: &Pod) -> bool {
    ready_condition(pod).is_some_and(|c| c.status == "True")
}

/// The pod's Ready condition.
pub fn ready_condition(pod: &Pod) -> Option<&k8s_openapi::api::core::v1::PodCondition> {
    pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "Ready")
}

/// The pod succeeded or failed: its containers are done for good.
pub fn is_terminal(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    matches!(phase, Some("Succeeded" | "Failed"))
}

/// The pod's IPs as reported (`status.podIPs`, else `status.podIP`).
pub fn pod_ips(pod: &Pod) -> Vec<String> {
    let Some(status) = pod.status.as_ref() else { return Vec::new() };
    let listed: Vec<String> = status
        .pod_ips
        .iter()
        .flatten()
        .map(|ip| ip.ip.clone())
        .filter(|ip| !ip.is_empty())
        .collect();
    if !listed.is_empty() {
        return listed;
    }
    status.pod_ip.iter().filter(|ip| !ip.is_empty()).cloned().collect()
}

/// Whether a pod belongs in an Endpoints or EndpointSlice at all: not terminal, has an IP,
/// and (unless `include_terminating`) is not being deleted.
pub fn should_be_in_endpoints(pod: &Pod, include_terminating: bool) -> bool {
    if is_terminal(pod) || pod_ips(pod).is_empty() {
        return false;
    }
    include_terminating || pod.metadata.deletion_timestamp.is_none()
}

/// Whether the pod's endpoint carries its hostname: it has one and its subdomain is the
/// Service's name (in the Service's namespace), as a StatefulSet's pods under their
/// governing Service.
pub fn should_set_hostname(pod: &Pod, service: &Service) -> bool {
    let spec = pod.spec.as_ref();
    let hostname = spec.and_then(|s| s.hostname.as_deref()).unwrap_or("");
    let subdomain = spec.and_then(|s| s.subdomain.as_deref()).unwrap_or("");
    !hostname.is_empty()
        && Some(subdomain) == service.metadata.name.as_deref()
        && pod.metadata.namespace == service.metadata.namespace
}

/// A Service port's protocol (TCP when unset, as defaulted).
pub fn protocol(port: &ServicePort) -> String {
    port.protocol.clone().unwrap_or_else(|| "TCP".to_string())
}

/// The container port `port` reaches on `pod`: a numeric target port as it is (the port
/// itself when unset), a named one looked up among the pod's containers' ports (and its
/// sidecars', init containers that always restart) with the same protocol. `None`: the pod
/// has no such port.
pub fn find_port(pod: &Pod, port: &ServicePort) -> Option<i32> {
    let name = match &port.target_port {
        None => return Some(port.port),
        Some(IntOrString::Int(n)) => return Some(*n),
        Some(IntOrString::String(name)) => name,
    };
    let protocol = protocol(port);
    let spec = pod.spec.as_ref()?;
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    spec.containers.iter().chain(sidecars).flat_map(|c| c.ports.iter().flatten()).find_map(|p| {
        let same_protocol = p.protocol.as_deref().unwrap_or("TCP") == protocol;
        (p.name.as_deref() == Some(name.as_str()) && same_protocol).then_some(p.container_port)
    })
}

/// Whether an IP address (as a pod reports it) is IPv6, and its canonical text. An
/// IPv4-mapped IPv6 address counts as IPv4, as Go's `net.IP` reads it.
pub fn canonical_ip(ip: &str) -> Option<(bool, String)> {
    match ip.parse::<IpAddr>().ok()? {
        IpAddr::V4(v4) => Some((false, v4.to_string())),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => Some((false, v4.to_string())),
            None => Some((true, v6.to_string())),
        },
    }
}

/// What of a pod decides its endpoints and the Services it belongs to.
#[derive(Debug, Clone, PartialEq)]
struct Projection {
    resource_version: Option<String>,
    labels: BTreeMap<String, String>,
    hostname: Option<String>,
    subdomain: Option<String>,
    deleting: bool,
    ready: bool,
    ips: Vec<String>,
}

impl Projection {
    fn of(pod: &Pod) -> Projection {
        let spec = pod.spec.as_ref();
        Projection {
            resource_version: pod.metadata.resource_version.clone(),
            labels: labels_of(pod).clone(),
            hostname: spec.and_then(|s| s.hostname.clone()),
            subdomain: spec.and_then(|s| s.subdomain.clone()),
            deleting: pod.metadata.deletion_timestamp.is_some(),
            ready: is_pod_ready(pod),
            ips: pod
                .status
                .as_ref()
                .and_then(|s| s.pod_ips.as_ref())
                .map_or_else(Vec::new, |ips| ips.iter().map(|ip| ip.ip.clone()).collect()),
        }
    }
}

/// Which Services a pod change concerns, as upstream's `GetPodUpdateProjectionKey` and
/// `GetServicesToUpdate` tell: the pod is remembered as last seen, so an update is compared
/// with it. Only changes that can move an endpoint count (labels, hostname and subdomain,
/// deletion, readiness, IPs); a change of labels concerns the Services of the old labels too.
#[derive(Default)]
pub struct PodChanges {
    seen: HashMap<(String, String), Projection>,
}

impl PodChanges {
    /// The keys of the Services to sync for `change` (a pod's), looked up in `pods` and
    /// `services`.
    pub fn services_for(
        &mut self,
        change: Change,
        pods: &Store<Pod>,
        services: &Store<Service>,
    ) -> BTreeSet<String> {
        let Change::Object { namespace, name } = change else { return BTreeSet::new() };
        let namespace = namespace.unwrap_or_default();
        let current = pods.get(&ObjectRef::new(&name).within(&namespace));
        let at = (namespace, name);
        let old = self.seen.remove(&at);
        let Some(current) = current else {
            // Gone: the Services it was in.
            return old.map_or_else(BTreeSet::new, |o| matching(services, &at.0, &o.labels));
        };
        let now = Projection::of(&current);
        self.seen.insert(at.clone(), now.clone());
        let Some(old) = old else { return matching(services, &at.0, &now.labels) };
        if old.resource_version == now.resource_version {
            return BTreeSet::new();
        }
        let labels_changed = old.labels != now.labels
            || old.hostname != now.hostname
            || old.subdomain != now.subdomain;
        let pod_changed =
            old.deleting != now.deleting || old.ready != now.ready || old.ips != now.ips;
        match (pod_changed, labels_changed) {
            (false, false) => BTreeSet::new(),
            (true, false) => matching(services, &at.0, &now.labels),
            (_, true) => {
                let new = matching(services, &at.0, &now.labels);
                let old = matching(services, &at.0, &old.labels);
                if pod_changed {
                    new.union(&old).cloned().collect()
                } else {
                    // Only the membership changed: the Services it joined or left.
                    new.symmetric_difference(&old).cloned().collect()
                }
            }
        }
    }
}

/// The keys of the Services in `namespace` whose selector matches `labels`.
fn matching(
    services: &Store<Service>,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    services
        .in_namespace(namespace)
        .iter()
        .filter(|s| selector(s).is_some_and(|sel| selects(sel, labels)))
        .map(|s| key(namespace, s.metadata.name.as_deref().unwrap_or("")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, ContainerPort, PodSpec};
    use serde_json::json;

    fn pod(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).unwrap()
    }

    fn port(value: serde_json::Value) -> ServicePort {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn named_target_ports_are_resolved_per_pod() {
        let p = Pod {
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "app".into(),
                    ports: Some(vec![
                        ContainerPort {
                            name: Some("http".into()),
                            container_port: 8080,
                            ..Default::default()
                        },
                        ContainerPort {
                            name: Some("dns".into()),
                            container_port: 5353,
                            protocol: Some("UDP".into()),
                            ..Default::default()
                        },
                    ]),
                    ..Default::default()
                }],
                init_containers: Some(vec![Container {
                    name: "sidecar".into(),
                    restart_policy: Some("Always".into()),
                    ports: Some(vec![ContainerPort {
                        name: Some("metrics".into()),
                        container_port: 9090,
                        ..Default::default()
                    }]),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(find_port(&p, &port(json!({"port": 80, "targetPort": "http"}))), Some(8080));
        assert_eq!(find_port(&p, &port(json!({"port": 80, "targetPort": 9000}))), Some(9000));
        assert_eq!(find_port(&p, &port(json!({"port": 80}))), Some(80));
        // The protocol must match too.
        assert_eq!(find_port(&p, &port(json!({"port": 53, "targetPort": "dns"}))), None);
        assert_eq!(
            find_port(&p, &port(json!({"port": 53, "targetPort": "dns", "protocol": "UDP"}))),
            Some(5353)
        );
        assert_eq!(find_port(&p, &port(json!({"port": 1, "targetPort": "metrics"}))), Some(9090));
        assert_eq!(find_port(&p, &port(json!({"port": 1, "targetPort": "nope"}))), None);
    }

    #[test]
    fn which_pods_belong_in_endpoints() {
        let running = pod(json!({"status": {"phase": "Running", "podIP": "10.0.0.1"}}));
        assert!(should_be_in_endpoints(&running, false));
        let no_ip = pod(json!({"status": {"phase": "Pending"}}));
        assert!(!should_be_in_endpoints(&no_ip, true));
        let done = pod(json!({"status": {"phase": "Succeeded", "podIP": "10.0.0.1"}}));
        assert!(!should_be_in_endpoints(&done, true));
        let going = pod(json!({
            "metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]},
        }));
        assert!(should_be_in_endpoints(&going, true));
        assert!(!should_be_in_endpoints(&going, false));
    }

    #[test]
    fn hostnames_only_under_the_governing_service() {
        let service: Service =
            serde_json::from_value(json!({"metadata": {"name": "web", "namespace": "ns"}}))
                .unwrap();
        let p = |sub: &str, ns: &str| {
            pod(
                json!({"metadata": {"namespace": ns}, "spec": {"containers": [], "hostname": "web-0", "subdomain": sub}}),
            )
        };
        assert!(should_set_hostname(&p("web", "ns"), &service));
        assert!(!should_set_hostname(&p("other", "ns"), &service));
        assert!(!should_set_hostname(&p("web", "elsewhere"), &service));
    }

    #[test]
    fn ips_are_read_as_go_reads_them() {
        assert_eq!(canonical_ip("10.1.2.3"), Some((false, "10.1.2.3".into())));
        assert_eq!(canonical_ip("::ffff:10.1.2.3"), Some((false, "10.1.2.3".into())));
        assert_eq!(canonical_ip("fd00:0::1"), Some((true, "fd00::1".into())));
        assert_eq!(canonical_ip("nope"), None);
    }

    #[test]
    fn empty_selectors_select_nothing() {
        let s = |sel: serde_json::Value| -> Service {
            serde_json::from_value(json!({"spec": {"selector": sel}})).unwrap()
        };
        assert!(selector(&s(json!({}))).is_none());
        assert!(selector(&s(json!(null))).is_none());
        let web = s(json!({"app": "web"}));
        let labels: BTreeMap<String, String> =
            [("app".to_string(), "web".to_string()), ("x".into(), "y".into())].into();
        assert!(selects(selector(&web).unwrap(), &labels));
        assert!(!selects(selector(&web).unwrap(), &BTreeMap::new()));
    }
}
