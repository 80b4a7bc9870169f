//! What the proxy programs, read from Services and EndpointSlices: one [`ServicePort`] per
//! port of each Service, with the endpoints its slices give that port. Pure data, so the
//! rules written from it ([`crate::rules`]) are tested without a cluster.

use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;

/// The label an EndpointSlice names its Service with.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// A transport protocol the proxy forwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

impl Protocol {
    /// The API's name (`TCP`, the default when unset).
    pub fn parse(text: Option<&str>) -> Option<Protocol> {
        match text.unwrap_or("TCP") {
            "TCP" => Some(Protocol::Tcp),
            "UDP" => Some(Protocol::Udp),
            "SCTP" => Some(Protocol::Sctp),
            _ => None,
        }
    }

    /// As iptables names it (`tcp`), and as kube-proxy hashes chain names with it.
    pub fn lower(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }
}

/// A Service's port by name: `namespace/name:port` (`namespace/name` for an unnamed port),
/// as kube-proxy writes it in comments and hashes it into chain names.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServicePortName {
    pub namespace: String,
    pub name: String,
    pub port: String,
}

impl fmt::Display for ServicePortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)?;
        if !self.port.is_empty() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

/// One endpoint of a Service port.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Endpoint {
    pub ip: Ipv4Addr,
    pub port: u16,
    pub ready: bool,
    pub serving: bool,
    pub terminating: bool,
    /// On the node this proxy runs on.
    pub local: bool,
}

impl Endpoint {
    /// For tests: a ready endpoint 10.42.0.`last`:8080 on another node.
    #[cfg(test)]
    pub(crate) fn example(last: u8) -> Endpoint {
        Endpoint {
            ip: Ipv4Addr::new(10, 42, 0, last),
            port: 8080,
            ready: true,
            serving: true,
            terminating: false,
            local: false,
        }
    }

    /// `10.42.0.5:8080`, as kube-proxy hashes endpoint chain names with it.
    pub fn address(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }
}

/// One port of a Service, and where its traffic goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServicePort {
    pub name: ServicePortName,
    pub protocol: Protocol,
    pub port: u16,
    /// None for headless Services (which the proxy does not program) and ExternalName ones.
    pub cluster_ip: Option<Ipv4Addr>,
    pub node_port: Option<u16>,
    pub external_ips: Vec<Ipv4Addr>,
    pub load_balancer_ips: Vec<Ipv4Addr>,
    /// `sessionAffinity: ClientIP`: its timeout in seconds.
    pub affinity_seconds: Option<i32>,
    /// `externalTrafficPolicy: Local` (for NodePort and LoadBalancer Services).
    pub external_local: bool,
    /// `internalTrafficPolicy: Local`.
    pub internal_local: bool,
    pub endpoints: Vec<Endpoint>,
}

impl ServicePort {
    /// For tests to adjust: TCP port 80 of `ns/{service}` (port name `port`) at cluster IP
    /// 10.43.0.7, nothing external, no endpoints.
    #[cfg(test)]
    pub(crate) fn example(service: &str, port: &str) -> ServicePort {
        ServicePort {
            name: ServicePortName {
                namespace: "ns".into(),
                name: service.into(),
                port: port.into(),
            },
            protocol: Protocol::Tcp,
            port: 80,
            cluster_ip: Some(Ipv4Addr::new(10, 43, 0, 7)),
            node_port: None,
            external_ips: Vec::new(),
            load_balancer_ips: Vec::new(),
            affinity_seconds: None,
            external_local: false,
            internal_local: false,
            endpoints: Vec::new(),
        }
    }

    /// Whether traffic from outside reaches it (NodePort, external IPs, load balancers).
    pub fn is_external(&self) -> bool {
        self.node_port.is_some()
            || !self.external_ips.is_empty()
            || !self.load_balancer_ips.is_empty()
    }

    /// The endpoints traffic may go to: ready ones, or (as upstream, so that connections
    /// drain rather than fail) serving terminating ones when none is ready.
    pub fn usable_endpoints(&self) -> Vec<&Endpoint> {
        usable(self.endpoints.iter())
    }

    /// [`ServicePort::usable_endpoints`] on this node (for the traffic policies `Local`).
    pub fn local_endpoints(&self) -> Vec<&Endpoint> {
        usable(self.endpoints.iter().filter(|e| e.local))
    }
}

fn usable<'a>(endpoints: impl Iterator<Item = &'a Endpoint> + Clone) -> Vec<&'a Endpoint> {
    let ready: Vec<&Endpoint> = endpoints.clone().filter(|e| e.ready).collect();
    if !ready.is_empty() {
        return ready;
    }
    endpoints.filter(|e| e.serving && e.terminating).collect()
}

/// The ports of `service`, with the endpoints of `slices` (those of this Service), as seen
/// from node `node`. Headless and ExternalName Services have none; IPv6 is not programmed.
pub fn service_ports(service: &Service, slices: &[&EndpointSlice], node: &str) -> Vec<ServicePort> {
    let Some(spec) = &service.spec else { return Vec::new() };
    let namespace = service.metadata.namespace.clone().unwrap_or_default();
    let name = service.metadata.name.clone().unwrap_or_default();
    if spec.type_.as_deref() == Some("ExternalName") {
        return Vec::new();
    }
    let cluster_ip = spec
        .cluster_ip
        .as_deref()
        .filter(|ip| *ip != "None")
        .and_then(|ip| ip.parse::<Ipv4Addr>().ok());
    let Some(cluster_ip) = cluster_ip else { return Vec::new() };
    let parse_all = |ips: Option<&Vec<String>>| -> Vec<Ipv4Addr> {
        ips.into_iter().flatten().filter_map(|ip| ip.parse().ok()).collect()
    };
    let external_ips = parse_all(spec.external_ips.as_ref());
    let load_balancer_ips: Vec<Ipv4Addr> = service
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|i| i.ip.as_deref()?.parse().ok())
        .collect();
    let affinity_seconds = (spec.session_affinity.as_deref() == Some("ClientIP")).then(|| {
        spec.session_affinity_config
            .as_ref()
            .and_then(|c| c.client_ip.as_ref())
            .and_then(|c| c.timeout_seconds)
            .unwrap_or(10_800)
    });
    let external_type = matches!(spec.type_.as_deref(), Some("NodePort" | "LoadBalancer"));
    let external_local = spec.external_traffic_policy.as_deref() == Some("Local");
    let internal_local = spec.internal_traffic_policy.as_deref() == Some("Local");
    let mut ports = Vec::new();
    for port in spec.ports.iter().flatten() {
        let Some(protocol) = Protocol::parse(port.protocol.as_deref()) else { continue };
        let Ok(number) = u16::try_from(port.port) else { continue };
        let port_name = port.name.clone().unwrap_or_default();
        let endpoints = endpoints_for(slices, &port_name, protocol, node);
        ports.push(ServicePort {
            name: ServicePortName {
                namespace: namespace.clone(),
                name: name.clone(),
                port: port_name,
            },
            protocol,
            port: number,
            cluster_ip: Some(cluster_ip),
            node_port: port
                .node_port
                .filter(|_| external_type)
                .and_then(|p| u16::try_from(p).ok())
                .filter(|p| *p != 0),
            external_ips: external_ips.clone(),
            load_balancer_ips: load_balancer_ips.clone(),
            affinity_seconds,
            external_local: external_local && (external_type || !external_ips.is_empty()),
            internal_local,
            endpoints,
        });
    }
    ports
}

/// The endpoints the slices give the port named `port_name` (IPv4 slices only), each once.
fn endpoints_for(
    slices: &[&EndpointSlice],
    port_name: &str,
    protocol: Protocol,
    node: &str,
) -> Vec<Endpoint> {
    let mut found: BTreeMap<(Ipv4Addr, u16), Endpoint> = BTreeMap::new();
    for slice in slices.iter().filter(|s| s.address_type == "IPv4") {
        let port = slice.ports.iter().flatten().find(|p| {
            p.name.as_deref().unwrap_or("") == port_name
                && Protocol::parse(p.protocol.as_deref()) == Some(protocol)
        });
        let Some(number) = port.and_then(|p| p.port).and_then(|p| u16::try_from(p).ok()) else {
            continue;
        };
        for endpoint in &slice.endpoints {
            let conditions = endpoint.conditions.as_ref();
            // Unset conditions mean ready and serving, as the API documents.
            let ready = conditions.and_then(|c| c.ready).unwrap_or(true);
            let serving = conditions.and_then(|c| c.serving).unwrap_or(ready);
            let terminating = conditions.and_then(|c| c.terminating).unwrap_or(false);
            let local = endpoint.node_name.as_deref() == Some(node);
            // An endpoint has one address that matters (the API allows more; kube-proxy
            // uses the first).
            let Some(ip) = endpoint.addresses.first().and_then(|a| a.parse().ok()) else {
                continue;
            };
            found.entry((ip, number)).or_insert(Endpoint {
                ip,
                port: number,
                ready,
                serving,
                terminating,
                local,
            });
        }
    }
    found.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service(spec: serde_json::Value) -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn slice(value: serde_json::Value) -> EndpointSlice {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn ports_get_their_endpoints_by_port_name_and_protocol() {
        let svc = service(json!({
            "type": "NodePort", "clusterIP": "10.43.0.7", "sessionAffinity": "ClientIP",
            "ports": [{"name": "http", "port": 80, "nodePort": 30080},
                      {"name": "dns", "port": 53, "protocol": "UDP"}],
        }));
        let slices = [slice(json!({
            "addressType": "IPv4", "metadata": {"name": "web-1"},
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"},
                      {"name": "dns", "port": 5353, "protocol": "UDP"}],
            "endpoints": [
                {"addresses": ["10.42.0.5"], "nodeName": "here", "conditions": {"ready": true}},
                {"addresses": ["10.42.1.5"], "nodeName": "there", "conditions": {"ready": false, "serving": true, "terminating": true}},
                {"addresses": ["10.42.0.6"]},
            ],
        }))];
        let ports = service_ports(&svc, &slices.iter().collect::<Vec<_>>(), "here");
        assert_eq!(ports.len(), 2);
        let http = &ports[0];
        assert_eq!(http.name.to_string(), "ns/web:http");
        assert_eq!(
            (http.port, http.node_port, http.affinity_seconds),
            (80, Some(30080), Some(10800))
        );
        let addresses: Vec<String> = http.endpoints.iter().map(Endpoint::address).collect();
        assert_eq!(addresses, ["10.42.0.5:8080", "10.42.0.6:8080", "10.42.1.5:8080"]);
        assert!(http.endpoints[0].local && !http.endpoints[1].local);
        // The terminating endpoint is left out while others are ready.
        assert_eq!(http.usable_endpoints().len(), 2);
        assert_eq!(ports[1].protocol, Protocol::Udp);
        assert_eq!(ports[1].endpoints[0].port, 5353);
        assert_eq!(ports[1].node_port, None);
    }

    #[test]
    fn terminating_serving_endpoints_are_used_when_none_is_ready() {
        let ep = |ready, serving, terminating| Endpoint {
            ip: Ipv4Addr::new(10, 42, 0, 9),
            port: 80,
            ready,
            serving,
            terminating,
            local: true,
        };
        assert_eq!(usable([ep(false, true, true)].iter()).len(), 1);
        assert_eq!(usable([ep(false, false, true)].iter()).len(), 0);
        assert_eq!(usable([ep(false, true, false)].iter()).len(), 0);
    }

    #[test]
    fn headless_and_external_name_services_are_not_programmed() {
        let headless = service(json!({"clusterIP": "None", "ports": [{"port": 80}]}));
        assert!(service_ports(&headless, &[], "n").is_empty());
        let external = service(json!({"type": "ExternalName", "externalName": "example.invalid"}));
        assert!(service_ports(&external, &[], "n").is_empty());
        let unnamed = service(json!({"clusterIP": "10.43.0.9", "ports": [{"port": 80}]}));
        assert_eq!(service_ports(&unnamed, &[], "n")[0].name.to_string(), "ns/web");
    }
}
