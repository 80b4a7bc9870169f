//! The cluster zone: every name the Kubernetes DNS specification gives Services, their
//! endpoints and pods, built at once from the informers' Services, EndpointSlices and
//! Namespaces into one map from name to its records, so that answering a query is one hash
//! lookup and an iteration over records made beforehand (nothing is allocated per query
//! except for the synthesized `a-b-c-d.<ns>.pod.<domain>` names).
//!
//! What is there follows CoreDNS's `kubernetes` plugin (`pods insecure`, `fallthrough
//! in-addr.arpa ip6.arpa`):
//! - `<svc>.<ns>.svc.<domain>`: A/AAAA of the cluster IPs; for a headless Service, of its
//!   ready endpoints (all of them with `publishNotReadyAddresses`); CNAME for ExternalName.
//! - `<host>.<svc>.<ns>.svc.<domain>`: each ready endpoint, `host` being its `hostname`
//!   (StatefulSet pods) or its address with dashes.
//! - `_<port>._<proto>.<svc>.<ns>.svc.<domain>` SRV for named ports (one per endpoint for a
//!   headless Service), with the targets' addresses as additional records; an SRV query for
//!   the Service's own name gives every port.
//! - `<a-b-c-d>.<ns>.pod.<domain>` for any address in an existing namespace.
//! - PTR for cluster IPs and headless endpoints' addresses; other reverse names are not ours.
//! - The apex: SOA, NS `ns.dns.<domain>`, and `dns-version.<domain>` TXT.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::rr::rdata::{A, AAAA, CNAME, NS, PTR, SOA, SRV, TXT};
use hickory_proto::rr::{LowerName, Name, RData, Record, RecordType};
use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;

use crate::model::SERVICE_NAME_LABEL;

/// The TTL of every cluster record, and the SOA's minimum (CoreDNS's default `ttl`).
pub const TTL: u32 = 5;

/// The version of the Kubernetes DNS schema served at `dns-version.<domain>`.
const SCHEMA_VERSION: &str = "1.1.0";

/// What the zone is built for.
#[derive(Clone, Debug)]
pub struct ZoneConfig {
    /// `--cluster-domain`, e.g. `cluster.local`.
    pub domain: Name,
    /// The `kube-dns` Service's address, served as `ns.dns.<domain>`.
    pub dns_ip: Option<IpAddr>,
}

/// A name of the zone and its records. A name without records exists (NODATA).
#[derive(Debug, Default)]
struct Node {
    records: Vec<Record>,
    /// Additional records (the addresses of SRV targets), sent with SRV answers.
    additionals: Vec<Record>,
}

/// The answer to one question.
#[derive(Debug)]
pub enum Answer<'z> {
    /// The name exists: its records of the type asked (none: NODATA, with the SOA in
    /// authority).
    Found(Found<'z>),
    /// A pod record made for this query.
    Synthesized(Box<Record>),
    /// No such name in the cluster zone (NXDOMAIN, with the SOA).
    NxDomain,
    /// Not a name of ours: forward it.
    NotOurs,
}

/// The records of a name that exists, filtered by the type asked when iterated (nothing is
/// copied).
#[derive(Clone, Copy, Debug)]
pub struct Found<'z> {
    records: &'z [Record],
    additionals: &'z [Record],
    qtype: RecordType,
}

impl<'z> Found<'z> {
    const NODATA: Found<'static> = Found { records: &[], additionals: &[], qtype: RecordType::A };

    /// The records answering the question.
    pub fn answers(self) -> impl Iterator<Item = &'z Record> + Clone + Send + 'z {
        let qtype = self.qtype;
        self.records.iter().filter(move |r| matches(qtype, r))
    }

    /// The additional records (the addresses of SRV targets, for SRV questions).
    pub fn additionals(self) -> &'z [Record] {
        match self.qtype {
            RecordType::SRV | RecordType::ANY => self.additionals,
            _ => &[],
        }
    }

    /// NODATA: the name has no record of the type asked.
    pub fn is_empty(self) -> bool {
        self.answers().next().is_none()
    }
}

/// The cluster zone at one moment.
#[derive(Debug)]
pub struct Zone {
    domain: LowerName,
    soa: Record,
    names: HashMap<LowerName, Node>,
    /// `<ns>.pod.<domain>` for each namespace: the parents of synthesized pod names.
    pod_namespaces: HashSet<LowerName>,
}

fn record(name: &Name, data: RData) -> Record {
    Record::from_rdata(name.clone(), TTL, data)
}

fn address(name: &Name, ip: IpAddr) -> Record {
    match ip {
        IpAddr::V4(v4) => record(name, RData::A(A(v4))),
        IpAddr::V6(v6) => record(name, RData::AAAA(AAAA(v6))),
    }
}

/// `10.0.0.1` -> `10-0-0-1`, `fd00::1` -> `fd00--1`: an endpoint's name without a hostname.
fn dashed(ip: IpAddr) -> String {
    ip.to_string().replace(['.', ':'], "-")
}

/// The address a pod label stands for (`a-b-c-d`, or IPv6 with `-` for `:`), as CoreDNS
/// reads it.
fn undashed(label: &str) -> Option<IpAddr> {
    let text = if label.matches('-').count() == 3 && !label.contains("--") {
        label.replace('-', ".")
    } else {
        label.replace('-', ":")
    };
    text.parse().ok()
}

fn child(parent: &Name, label: &str) -> Option<Name> {
    parent.prepend_label(label).ok()
}

/// One endpoint as DNS sees it.
struct Endpoint<'a> {
    ip: IpAddr,
    hostname: Option<&'a str>,
}

impl Endpoint<'_> {
    fn label(&self) -> String {
        match self.hostname {
            Some(h) if !h.is_empty() => h.to_string(),
            _ => dashed(self.ip),
        }
    }
}

/// The port of a slice or a Service, by name and protocol.
struct Port<'a> {
    name: &'a str,
    protocol: &'a str,
    port: u16,
}

impl Zone {
    /// The zone with only its apex (before the informers have listed).
    pub fn empty(config: &ZoneConfig) -> Zone {
        Zone::build(config, &[], &[], &[])
    }

    /// Builds the zone from the informers' objects.
    pub fn build(
        config: &ZoneConfig,
        services: &[Arc<Service>],
        slices: &[Arc<EndpointSlice>],
        namespaces: &[Arc<Namespace>],
    ) -> Zone {
        let mut builder = Builder { names: HashMap::new() };
        let domain = config.domain.clone();
        let ns_name = Name::from_ascii("ns.dns").expect("valid").append_domain(&domain);
        let ns_name = ns_name.unwrap_or_else(|_| domain.clone());
        let serial = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as u32);
        let hostmaster = child(&domain, "hostmaster").unwrap_or_else(|| domain.clone());
        // As CoreDNS: refresh 2h, retry 30m, expire 1d, minimum the records' TTL.
        let soa = record(
            &domain,
            RData::SOA(SOA::new(ns_name.clone(), hostmaster, serial, 7200, 1800, 86400, TTL)),
        );
        builder.add(&domain, soa.clone());
        builder.add(&domain, record(&domain, RData::NS(NS(ns_name.clone()))));
        if let Some(ip) = config.dns_ip {
            builder.add(&ns_name, address(&ns_name, ip));
        }
        if let Some(version) = child(&domain, "dns-version") {
            let txt = RData::TXT(TXT::new(vec![SCHEMA_VERSION.to_string()]));
            builder.add(&version, record(&version, txt));
        }
        let svc_zone = child(&domain, "svc").unwrap_or_else(|| domain.clone());
        let pod_zone = child(&domain, "pod").unwrap_or_else(|| domain.clone());
        builder.names.entry(svc_zone.clone().into()).or_default();
        builder.names.entry(pod_zone.clone().into()).or_default();
        let mut pod_namespaces = HashSet::new();
        let mut existing = HashSet::new();
        for namespace in namespaces {
            let Some(ns) = namespace.metadata.name.as_deref() else { continue };
            existing.insert(ns);
            if let Some(name) = child(&svc_zone, ns) {
                builder.names.entry(name.into()).or_default();
            }
            if let Some(name) = child(&pod_zone, ns) {
                builder.names.entry(name.clone().into()).or_default();
                pod_namespaces.insert(name.into());
            }
        }

        let mut by_service: HashMap<(&str, &str), Vec<&EndpointSlice>> = HashMap::new();
        for slice in slices {
            let namespace = slice.metadata.namespace.as_deref().unwrap_or("");
            let labels = slice.metadata.labels.as_ref();
            let Some(service) = labels.and_then(|l| l.get(SERVICE_NAME_LABEL)) else { continue };
            by_service.entry((namespace, service.as_str())).or_default().push(slice);
        }
        for service in services {
            let namespace = service.metadata.namespace.as_deref().unwrap_or("");
            let name = service.metadata.name.as_deref().unwrap_or("");
            // As CoreDNS: only the namespaces that exist are served.
            if !existing.contains(namespace) {
                continue;
            }
            let Some(fqdn) = child(&svc_zone, namespace).and_then(|ns| child(&ns, name)) else {
                continue;
            };
            let slices = by_service.get(&(namespace, name)).map(Vec::as_slice).unwrap_or(&[]);
            builder.service(service, &fqdn, slices);
        }
        Zone { domain: domain.into(), soa, names: builder.names, pod_namespaces }
    }

    /// The zone's SOA, for the authority section of NXDOMAIN and NODATA answers.
    pub fn soa(&self) -> &Record {
        &self.soa
    }

    /// How many names the zone holds.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether the zone holds no names (it always holds its apex).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Answers `name` of type `qtype`.
    pub fn lookup(&self, name: &LowerName, qtype: RecordType) -> Answer<'_> {
        if let Some(node) = self.names.get(name) {
            return Answer::Found(Found {
                records: &node.records,
                additionals: &node.additionals,
                qtype,
            });
        }
        if !self.domain.zone_of(name) {
            return Answer::NotOurs;
        }
        // `<a-b-c-d>.<ns>.pod.<domain>`: `pods insecure` answers any address.
        if name.num_labels() == self.domain.num_labels() + 3 {
            let parent = name.base_name();
            if self.pod_namespaces.contains(&parent) {
                let label = name.iter().next().map(String::from_utf8_lossy);
                if let Some(ip) = label.as_deref().and_then(undashed) {
                    let record = address(&Name::from(name), ip);
                    return match matches(qtype, &record) {
                        true => Answer::Synthesized(Box::new(record)),
                        false => Answer::Found(Found::NODATA),
                    };
                }
            }
        }
        Answer::NxDomain
    }
}

/// Whether `record` answers a question of type `qtype` (a CNAME answers any type).
fn matches(qtype: RecordType, record: &Record) -> bool {
    let rtype = record.record_type();
    qtype == RecordType::ANY || rtype == qtype || rtype == RecordType::CNAME
}

struct Builder {
    names: HashMap<LowerName, Node>,
}

impl Builder {
    fn add(&mut self, name: &Name, record: Record) {
        self.names.entry(name.clone().into()).or_default().records.push(record);
    }

    /// Adds `record` unless `name` has it already (an address in two slices).
    fn add_once(&mut self, name: &Name, record: Record) {
        let node = self.names.entry(name.clone().into()).or_default();
        if !node.records.contains(&record) {
            node.records.push(record);
        }
    }

    fn add_srv(&mut self, name: &Name, srv: SRV, target_ips: &[IpAddr]) {
        let target = srv.target.clone();
        self.add_once(name, record(name, RData::SRV(srv)));
        let node = self.names.entry(name.clone().into()).or_default();
        for ip in target_ips {
            let extra = address(&target, *ip);
            if !node.additionals.contains(&extra) {
                node.additionals.push(extra);
            }
        }
    }

    fn service(&mut self, service: &Service, fqdn: &Name, slices: &[&EndpointSlice]) {
        let Some(spec) = service.spec.as_ref() else { return };
        if spec.type_.as_deref() == Some("ExternalName") {
            let target = spec.external_name.as_deref().and_then(|n| Name::from_ascii(n).ok());
            if let Some(mut target) = target {
                target.set_fqdn(true);
                self.add(fqdn, record(fqdn, RData::CNAME(CNAME(target))));
            }
            return;
        }
        let publish_not_ready = spec.publish_not_ready_addresses == Some(true);
        // Each endpoint with the ports of its slice (a named target port may resolve to
        // other numbers on other pods, in other slices).
        let mut endpoints: Vec<(Endpoint<'_>, usize)> = Vec::new();
        let mut slice_ports: Vec<Vec<Port<'_>>> = Vec::new();
        for slice in slices {
            let ports = slice.ports.iter().flatten().filter_map(|p| {
                Some(Port {
                    name: p.name.as_deref().unwrap_or(""),
                    protocol: p.protocol.as_deref().unwrap_or("TCP"),
                    port: u16::try_from(p.port?).ok()?,
                })
            });
            slice_ports.push(ports.collect());
            let ports = slice_ports.len() - 1;
            for endpoint in &slice.endpoints {
                let conditions = endpoint.conditions.as_ref();
                // A nil `ready` is unknown, which consumers take as ready.
                let ready = conditions.and_then(|c| c.ready).unwrap_or(true);
                if !(ready || publish_not_ready) {
                    continue;
                }
                for address in &endpoint.addresses {
                    let Ok(ip) = address.parse::<IpAddr>() else { continue };
                    endpoints
                        .push((Endpoint { ip, hostname: endpoint.hostname.as_deref() }, ports));
                }
            }
        }
        // Every endpoint's own name, for any Service (CoreDNS answers endpoint queries for
        // ClusterIP Services too).
        for (endpoint, _) in &endpoints {
            if let Some(name) = child(fqdn, &endpoint.label()) {
                self.add_once(&name, address(&name, endpoint.ip));
            }
        }
        let headless = spec.cluster_ip.as_deref() == Some("None");
        if headless {
            let weight = (100 / endpoints.len().max(1)).max(1) as u16;
            for (endpoint, ports) in &endpoints {
                self.add_once(fqdn, address(fqdn, endpoint.ip));
                let Some(target) = child(fqdn, &endpoint.label()) else { continue };
                let reverse = Name::from(endpoint.ip);
                self.add_once(&reverse, record(&reverse, RData::PTR(PTR(target.clone()))));
                for port in &slice_ports[*ports] {
                    let srv = SRV::new(0, weight, port.port, target.clone());
                    self.port_srv(fqdn, port, srv, &[endpoint.ip]);
                }
            }
            return;
        }
        let mut ips: Vec<IpAddr> = Vec::new();
        let all = spec.cluster_ips.iter().flatten().chain(spec.cluster_ip.as_ref());
        for ip in all.filter_map(|ip| ip.parse().ok()) {
            if !ips.contains(&ip) {
                ips.push(ip);
            }
        }
        for ip in &ips {
            self.add(fqdn, address(fqdn, *ip));
            let reverse = Name::from(*ip);
            self.add_once(&reverse, record(&reverse, RData::PTR(PTR(fqdn.clone()))));
        }
        if ips.is_empty() {
            return;
        }
        for port in spec.ports.iter().flatten() {
            let Ok(number) = u16::try_from(port.port) else { continue };
            let port = Port {
                name: port.name.as_deref().unwrap_or(""),
                protocol: port.protocol.as_deref().unwrap_or("TCP"),
                port: number,
            };
            let srv = SRV::new(0, 100, port.port, fqdn.clone());
            self.port_srv(fqdn, &port, srv, &ips);
        }
    }

    /// An SRV record of `port`: on `_<port>._<proto>.<fqdn>` when the port has a name, and
    /// on the Service's own name (CoreDNS's SRV query without port and protocol).
    fn port_srv(&mut self, fqdn: &Name, port: &Port<'_>, srv: SRV, ips: &[IpAddr]) {
        if !port.name.is_empty() {
            let proto = format!("_{}", port.protocol.to_ascii_lowercase());
            let name = child(fqdn, &proto).and_then(|n| child(&n, &format!("_{}", port.name)));
            if let Some(name) = name {
                self.add_srv(&name, srv.clone(), ips);
            }
        }
        self.add_srv(fqdn, srv, ips);
    }
}

#[cfg(test)]
mod tests;
