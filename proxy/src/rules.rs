//! The iptables rules of kube-proxy's iptables mode, written from [`ServicePort`]s: the
//! chains of the `nat` and `filter` tables and the `iptables-restore` input that replaces
//! them in one call.
//!
//! Layout, as kube-proxy's (with `KUBE` the default chain prefix):
//! - nat `KUBE-SERVICES`: per cluster IP, external IP and load-balancer IP a jump to the
//!   port's `KUBE-SVC-*` (or `KUBE-EXT-*`), and last the jump of local destinations to
//!   `KUBE-NODEPORTS`;
//! - `KUBE-SVC-*`: masquerade for traffic from outside the cluster CIDR, then the endpoints'
//!   `KUBE-SEP-*` chains chosen with `statistic --mode random` (and `recent` for
//!   `sessionAffinity: ClientIP`); `KUBE-SVL-*` likewise over this node's endpoints;
//! - `KUBE-SEP-*`: masquerade for hairpin traffic, DNAT to the endpoint;
//! - `KUBE-EXT-*`: external traffic, masqueraded (policy Cluster) or sent to `KUBE-SVL-*`
//!   (policy Local);
//! - `KUBE-MARK-MASQ` marks, `KUBE-POSTROUTING` masquerades what is marked;
//! - filter `KUBE-SERVICES` / `KUBE-EXTERNAL-SERVICES`: REJECT for ports without endpoints
//!   (refused at once rather than left to time out), `KUBE-FORWARD` accepts marked and
//!   established traffic.
//!
//! Chain names hash the port's name and protocol (and the endpoint's address) as kube-proxy
//! does: SHA-256, base32, the first 16 characters.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use ipnet::Ipv4Net;

use crate::model::{Endpoint, ServicePort};

/// The mark of packets to masquerade (kube-proxy's default `--iptables-masquerade-bit` 14).
pub const MASQUERADE_MARK: &str = "0x4000";

/// What the rules depend on besides the Services.
#[derive(Clone, Debug)]
pub struct RuleConfig {
    /// The chain-name prefix: `KUBE` (kube-proxy's names) unless several rkube nodes share
    /// one host's tables (tests).
    pub prefix: String,
    /// The pods' addresses: traffic to a cluster IP from elsewhere is masqueraded.
    pub cluster_cidr: Option<Ipv4Net>,
}

/// The longest chain-name prefix: iptables names are at most 28 characters, and a port's
/// chains add 21 (`-SVC-` and a 16-character hash).
pub const MAX_PREFIX_LEN: usize = 7;

/// The chains shared by every Service (names after the prefix), by table.
const SHARED_CHAINS: &[(&str, &str)] = &[
    ("filter", "SERVICES"),
    ("filter", "EXTERNAL-SERVICES"),
    ("filter", "FORWARD"),
    ("filter", "NODEPORTS"),
    ("filter", "FIREWALL"),
    ("nat", "SERVICES"),
    ("nat", "NODEPORTS"),
    ("nat", "POSTROUTING"),
    ("nat", "MARK-MASQ"),
];

/// Why a chain-name prefix cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid chain prefix {0:?}: 1 to 7 characters from A-Z and 0-9 (iptables chain names are at most 28 characters)")]
pub struct InvalidPrefix(pub String);

impl RuleConfig {
    /// A configuration whose chains are named with `prefix`.
    pub fn new(prefix: &str, cluster_cidr: Option<Ipv4Net>) -> Result<RuleConfig, InvalidPrefix> {
        let valid = (1..=MAX_PREFIX_LEN).contains(&prefix.len())
            && prefix.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
        if !valid {
            return Err(InvalidPrefix(prefix.to_string()));
        }
        Ok(RuleConfig { prefix: prefix.to_string(), cluster_cidr })
    }

    pub fn chain(&self, name: &str) -> String {
        format!("{}-{name}", self.prefix)
    }

    /// The chains every sync writes, with the table they are in.
    pub fn top_level_chains(&self) -> Vec<(&'static str, String)> {
        SHARED_CHAINS.iter().map(|(table, name)| (*table, self.chain(name))).collect()
    }

    /// The jumps from the built-in chains to this proxy's, as kube-proxy inserts them:
    /// `(table, built-in chain, rule)`.
    pub fn jumps(&self) -> Vec<(&'static str, &'static str, String)> {
        // (table, built-in chain, only new connections, comment, this proxy's chain)
        const JUMPS: &[(&str, &str, bool, &str, &str)] = &[
            (
                "filter",
                "INPUT",
                true,
                "kubernetes externally-visible service portals",
                "EXTERNAL-SERVICES",
            ),
            ("filter", "INPUT", false, "kubernetes health check service ports", "NODEPORTS"),
            (
                "filter",
                "INPUT",
                false,
                "kubernetes firewall for dropping marked packets",
                "FIREWALL",
            ),
            (
                "filter",
                "OUTPUT",
                false,
                "kubernetes firewall for dropping marked packets",
                "FIREWALL",
            ),
            ("filter", "FORWARD", true, "kubernetes service portals", "SERVICES"),
            (
                "filter",
                "FORWARD",
                true,
                "kubernetes externally-visible service portals",
                "EXTERNAL-SERVICES",
            ),
            ("filter", "FORWARD", false, "kubernetes forwarding rules", "FORWARD"),
            ("filter", "OUTPUT", true, "kubernetes service portals", "SERVICES"),
            ("nat", "PREROUTING", false, "kubernetes service portals", "SERVICES"),
            ("nat", "OUTPUT", false, "kubernetes service portals", "SERVICES"),
            ("nat", "POSTROUTING", false, "kubernetes postrouting rules", "POSTROUTING"),
        ];
        JUMPS
            .iter()
            .map(|&(table, builtin, new, comment, target)| {
                let new = if new { "-m conntrack --ctstate NEW " } else { "" };
                let rule =
                    format!("{new}-m comment --comment \"{comment}\" -j {}", self.chain(target));
                (table, builtin, rule)
            })
            .collect()
    }

    /// Whether `chain` is one of [`RuleConfig::top_level_chains`] (in either table).
    pub fn is_top_level(&self, chain: &str) -> bool {
        let name = chain.strip_prefix(&self.prefix).and_then(|rest| rest.strip_prefix('-'));
        name.is_some_and(|name| SHARED_CHAINS.iter().any(|(_, shared)| *shared == name))
    }

    /// Whether `chain` is one this proxy makes (top-level or per Service).
    pub fn owns(&self, chain: &str) -> bool {
        chain
            .strip_prefix(&self.prefix)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|rest| !rest.is_empty())
    }
}

/// kube-proxy's hash in chain names: SHA-256 of the text, base32, first 16 characters.
fn hash(text: &str) -> String {
    let digest = openssl::sha::sha256(text.as_bytes());
    data_encoding::BASE32.encode(&digest)[..16].to_string()
}

/// The chains of one Service port.
struct PortChains {
    svc: String,
    svl: String,
    ext: String,
}

impl PortChains {
    fn of(config: &RuleConfig, port: &ServicePort) -> PortChains {
        let h = hash(&format!("{}{}", port.name, port.protocol.lower()));
        PortChains {
            svc: config.chain(&format!("SVC-{h}")),
            svl: config.chain(&format!("SVL-{h}")),
            ext: config.chain(&format!("EXT-{h}")),
        }
    }
}

/// The `KUBE-SVC-*` chain of a port (where its traffic is spread over its endpoints).
pub fn service_chain(config: &RuleConfig, port: &ServicePort) -> String {
    PortChains::of(config, port).svc
}

fn endpoint_chain(config: &RuleConfig, port: &ServicePort, endpoint: &Endpoint) -> String {
    let h = hash(&format!("{}{}{}", port.name, port.protocol.lower(), endpoint.address()));
    config.chain(&format!("SEP-{h}"))
}

/// The rules of both tables: each chain with its rules, in order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tables {
    pub filter: Vec<(String, Vec<String>)>,
    pub nat: Vec<(String, Vec<String>)>,
}

impl Tables {
    /// Every chain named, by table.
    pub fn chains(&self) -> BTreeSet<(&'static str, String)> {
        let filter = self.filter.iter().map(|(c, _)| ("filter", c.clone()));
        filter.chain(self.nat.iter().map(|(c, _)| ("nat", c.clone()))).collect()
    }

    /// Every chain with its table and rules.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &str, &[String])> {
        let filter = self.filter.iter().map(|(c, r)| ("filter", c.as_str(), r.as_slice()));
        filter.chain(self.nat.iter().map(|(c, r)| ("nat", c.as_str(), r.as_slice())))
    }

    /// The number of filter rules.
    pub fn filter_count(&self) -> usize {
        self.filter.iter().map(|(_, rules)| rules.len()).sum()
    }

    /// The number of nat rules.
    pub fn nat_count(&self) -> usize {
        self.nat.iter().map(|(_, rules)| rules.len()).sum()
    }

    /// The number of rules (for metrics and logs).
    pub fn rule_count(&self) -> usize {
        self.filter.iter().chain(&self.nat).map(|(_, rules)| rules.len()).sum()
    }

    /// The `iptables-restore --noflush` input that makes the chains exactly these, and
    /// deletes `stale` chains (those of Services and endpoints that are gone).
    pub fn restore_input(&self, stale: &BTreeSet<(&'static str, String)>) -> String {
        let mut out = String::with_capacity(self.rule_count() * 160);
        for (table, chains) in [("filter", &self.filter), ("nat", &self.nat)] {
            let _ = writeln!(out, "*{table}");
            for (chain, _) in chains {
                let _ = writeln!(out, ":{chain} - [0:0]");
            }
            let gone: Vec<&String> =
                stale.iter().filter(|(t, _)| *t == table).map(|(_, c)| c).collect();
            // A chain is flushed (declared) before it is deleted: rules in it may jump to
            // others that go too.
            for chain in &gone {
                let _ = writeln!(out, ":{chain} - [0:0]");
            }
            for (chain, rules) in chains {
                for rule in rules {
                    let _ = writeln!(out, "-A {chain} {rule}");
                }
            }
            for chain in &gone {
                let _ = writeln!(out, "-X {chain}");
            }
            out.push_str("COMMIT\n");
        }
        out
    }
}

/// What one Service port adds to the rules: its rules in the shared chains (in the order
/// its port comes) and its own nat chains (`SVC`, `SVL`, `EXT`, `SEP`). Kept per port between
/// syncs ([`crate::ruleset`]), so a change to one Service renders only its ports.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PortRules {
    /// filter `KUBE-SERVICES`: REJECT or DROP of the cluster IP.
    pub filter_services: Vec<String>,
    /// filter `KUBE-EXTERNAL-SERVICES`: REJECT or DROP of external addresses and node ports.
    pub filter_external: Vec<String>,
    /// nat `KUBE-SERVICES`: the jumps of its cluster, external and load-balancer IPs.
    pub nat_services: Vec<String>,
    /// nat `KUBE-NODEPORTS`: the jump of its node port.
    pub nat_nodeports: Vec<String>,
    /// Its own nat chains, each once, with their rules.
    pub chains: Vec<(String, Vec<String>)>,
}

/// The rules for `ports`.
pub fn render(config: &RuleConfig, ports: &[ServicePort]) -> Tables {
    let rendered: Vec<PortRules> = ports.iter().map(|p| render_port(config, p)).collect();
    let mut tables = top_level(config, &rendered);
    for port in rendered {
        tables.nat.extend(port.chains);
    }
    tables
}

/// The chains every sync writes whole (the shared ones), from the ports' parts in order.
pub fn top_level<'a>(
    config: &RuleConfig,
    ports: impl IntoIterator<Item = &'a PortRules>,
) -> Tables {
    let c = |name: &str| config.chain(name);
    let mut filter_services = Vec::new();
    let mut filter_external = Vec::new();
    let mut nat_services = Vec::new();
    let mut nat_nodeports = Vec::new();
    for port in ports {
        filter_services.extend_from_slice(&port.filter_services);
        filter_external.extend_from_slice(&port.filter_external);
        nat_services.extend_from_slice(&port.nat_services);
        nat_nodeports.extend_from_slice(&port.nat_nodeports);
    }
    nat_services.push(format!(
        "-m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j {}",
        c("NODEPORTS")
    ));
    let mark = MASQUERADE_MARK;
    let postrouting = vec![
        format!("-m mark ! --mark {mark}/{mark} -j RETURN"),
        // The mark goes before the packet may be sent on (another pass must not see it).
        format!("-j MARK --xor-mark {mark}"),
        "-m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully"
            .to_string(),
    ];
    let forward = vec![
        format!("-m comment --comment \"kubernetes forwarding rules\" -m mark --mark {mark}/{mark} -j ACCEPT"),
        "-m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT".to_string(),
    ];
    let nat = vec![
        (c("SERVICES"), nat_services),
        (c("NODEPORTS"), nat_nodeports),
        (c("POSTROUTING"), postrouting),
        (c("MARK-MASQ"), vec![format!("-j MARK --or-mark {mark}")]),
    ];
    // Node ports answer on 127.0.0.1 (route_localnet is on where pods' traffic enters):
    // packets to 127.0.0.0/8 from anywhere else are dropped unless translated, so that a
    // pod cannot reach services the node binds to loopback only (CVE-2020-8558).
    let firewall = vec![
        "-d 127.0.0.0/8 ! -s 127.0.0.0/8 -m comment --comment \"block incoming localnet connections\" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP".to_string(),
    ];
    let filter = vec![
        (c("SERVICES"), filter_services),
        (c("EXTERNAL-SERVICES"), filter_external),
        (c("FORWARD"), forward),
        (c("NODEPORTS"), Vec::new()),
        (c("FIREWALL"), firewall),
    ];
    Tables { filter, nat }
}

/// One port's rules (none for a port without a cluster IP: headless and ExternalName
/// Services are not proxied).
pub fn render_port(config: &RuleConfig, port: &ServicePort) -> PortRules {
    let c = |name: &str| config.chain(name);
    let mut filter_services = Vec::new();
    let mut filter_external = Vec::new();
    let mut nat_services = Vec::new();
    let mut nat_nodeports = Vec::new();
    let mut per_port_nat: Vec<(String, Vec<String>)> = Vec::new();
    let Some(cluster_ip) = port.cluster_ip else { return PortRules::default() };
    let chains = PortChains::of(config, port);
    let name = port.name.to_string();
    let proto = port.protocol.lower();
    let match_proto = format!("-m {proto} -p {proto}");
    // Every usable endpoint, and this node's: the SVC and SVL chains spread over them.
    let all = port.usable_endpoints();
    let local = port.local_endpoints();
    let internal = if port.internal_local { &local } else { &all };
    let external = if port.external_local { &local } else { &all };
    let mut need_svc = false;
    let mut need_svl = false;
    let no_endpoints = "has no endpoints";
    let no_local = "has no local endpoints";
    let reject = "-j REJECT --reject-with icmp-port-unreachable";

    // Traffic to the cluster IP.
    let comment = format!("-m comment --comment \"{name} cluster IP\"");
    let to_cluster_ip = format!("{match_proto} -d {cluster_ip}/32 --dport {}", port.port);
    if all.is_empty() {
        filter_services.push(format!(
            "-m comment --comment \"{name} {no_endpoints}\" {to_cluster_ip} {reject}"
        ));
    } else if internal.is_empty() {
        filter_services
            .push(format!("-m comment --comment \"{name} {no_local}\" {to_cluster_ip} -j DROP"));
    } else {
        let chain = if port.internal_local { &chains.svl } else { &chains.svc };
        nat_services.push(format!("{comment} {to_cluster_ip} -j {chain}"));
        need_svl |= port.internal_local;
        need_svc |= !port.internal_local;
    }

    // Traffic from outside: external IPs, load balancers, node ports.
    let external_targets: Vec<(String, String)> = port
        .external_ips
        .iter()
        .map(|ip| ("external IP", ip))
        .chain(port.load_balancer_ips.iter().map(|ip| ("loadbalancer IP", ip)))
        .map(|(what, ip)| {
            (format!("{name} {what}"), format!("{match_proto} -d {ip}/32 --dport {}", port.port))
        })
        .collect();
    if external.is_empty() {
        let (why, verdict) =
            if all.is_empty() { (no_endpoints, reject) } else { (no_local, "-j DROP") };
        for (_, target) in &external_targets {
            filter_external
                .push(format!("-m comment --comment \"{name} {why}\" {target} {verdict}"));
        }
        if let Some(node_port) = port.node_port {
            filter_external.push(format!(
                "-m comment --comment \"{name} {why}\" -m addrtype --dst-type LOCAL {match_proto} --dport {node_port} {verdict}"
            ));
        }
    } else if port.is_external() {
        for (what, target) in &external_targets {
            nat_services
                .push(format!("-m comment --comment \"{what}\" {target} -j {}", chains.ext));
        }
        if let Some(node_port) = port.node_port {
            nat_nodeports.push(format!(
                "-m comment --comment {name} {match_proto} --dport {node_port} -j {}",
                chains.ext
            ));
        }
        let mut ext = Vec::new();
        if port.external_local {
            // Pods and the node itself use every endpoint; others only this node's.
            if let Some(cidr) = config.cluster_cidr {
                ext.push(format!(
                    "-m comment --comment \"pod traffic for {name} external destinations\" -s {cidr} -j {}",
                    chains.svc
                ));
            }
            ext.push(format!(
                "-m comment --comment \"masquerade LOCAL traffic for {name} external destinations\" -m addrtype --src-type LOCAL -j {}",
                c("MARK-MASQ")
            ));
            ext.push(format!(
                "-m comment --comment \"route LOCAL traffic for {name} external destinations\" -m addrtype --src-type LOCAL -j {}",
                chains.svc
            ));
            ext.push(format!("-j {}", chains.svl));
            need_svl = true;
        } else {
            ext.push(format!(
                "-m comment --comment \"masquerade traffic for {name} external destinations\" -j {}",
                c("MARK-MASQ")
            ));
            ext.push(format!("-j {}", chains.svc));
        }
        need_svc = true;
        per_port_nat.push((chains.ext.clone(), ext));
    }

    // The port's own chains, each once.
    if need_svc {
        let mut svc = Vec::new();
        if let Some(cidr) = config.cluster_cidr {
            svc.push(format!("{comment} {to_cluster_ip} ! -s {cidr} -j {}", c("MARK-MASQ")));
        }
        spread(config, port, &all, &mut svc);
        per_port_nat.push((chains.svc.clone(), svc));
    }
    if need_svl {
        let mut svl = Vec::new();
        spread(config, port, &local, &mut svl);
        per_port_nat.push((chains.svl.clone(), svl));
    }
    // Every endpoint used gets its chain once.
    let mut used: Vec<&Endpoint> = if need_svc { all.clone() } else { Vec::new() };
    if need_svl {
        // Usually a subset of `all`, unless only terminating ones serve here.
        let more: Vec<&Endpoint> = local.iter().filter(|e| !used.contains(e)).copied().collect();
        used.extend(more);
    }
    for endpoint in used {
        let chain = endpoint_chain(config, port, endpoint);
        let comment = format!("-m comment --comment {name}");
        let mut sep = vec![format!("{comment} -s {}/32 -j {}", endpoint.ip, c("MARK-MASQ"))];
        let affinity = match port.affinity_seconds {
            Some(_) => format!(" -m recent --name {chain} --set"),
            None => String::new(),
        };
        sep.push(format!(
            "{comment}{affinity} {match_proto} -j DNAT --to-destination {}",
            endpoint.address()
        ));
        per_port_nat.push((chain, sep));
    }
    PortRules {
        filter_services,
        filter_external,
        nat_services,
        nat_nodeports,
        chains: per_port_nat,
    }
}

/// The jumps of a `KUBE-SVC-*` (or `KUBE-SVL-*`) chain to its endpoints: with session
/// affinity first the endpoint a client used recently, then one at random, each endpoint
/// taken with equal chance (the i-th of n with probability 1/(n-i), the last always).
fn spread(
    config: &RuleConfig,
    port: &ServicePort,
    endpoints: &[&Endpoint],
    rules: &mut Vec<String>,
) {
    let name = &port.name;
    let chains: Vec<String> = endpoints.iter().map(|e| endpoint_chain(config, port, e)).collect();
    if let Some(seconds) = port.affinity_seconds {
        for (endpoint, chain) in endpoints.iter().zip(&chains) {
            rules.push(format!(
                "-m comment --comment \"{name} -> {}\" -m recent --name {chain} --rcheck --seconds {seconds} --reap -j {chain}",
                endpoint.address()
            ));
        }
    }
    let n = endpoints.len();
    for (i, (endpoint, chain)) in endpoints.iter().zip(&chains).enumerate() {
        let comment = format!("-m comment --comment \"{name} -> {}\"", endpoint.address());
        if i + 1 < n {
            let probability = 1.0 / (n - i) as f64;
            rules.push(format!(
                "{comment} -m statistic --mode random --probability {probability:.10} -j {chain}"
            ));
        } else {
            rules.push(format!("{comment} -j {chain}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::model::{Protocol, ServicePortName};

    fn config() -> RuleConfig {
        RuleConfig { prefix: "KUBE".into(), cluster_cidr: Some("10.42.0.0/16".parse().unwrap()) }
    }

    fn endpoint(last: u8, ready: bool, local: bool) -> Endpoint {
        Endpoint {
            ip: Ipv4Addr::new(10, 42, 0, last),
            port: 8080,
            ready,
            serving: ready,
            terminating: false,
            local,
        }
    }

    fn port(endpoints: Vec<Endpoint>) -> ServicePort {
        ServicePort {
            name: ServicePortName {
                namespace: "ns".into(),
                name: "web".into(),
                port: "http".into(),
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
            endpoints,
        }
    }

    fn rules<'a>(tables: &'a [(String, Vec<String>)], chain: &str) -> &'a [String] {
        &tables.iter().find(|(c, _)| c == chain).unwrap_or_else(|| panic!("no chain {chain}")).1
    }

    #[test]
    fn chain_names_are_kube_proxys() {
        // kube-proxy names ns/web:http over TCP with this hash (portProtoHash of
        // "ns/web:http" + "tcp").
        let chains = PortChains::of(&config(), &port(Vec::new()));
        assert_eq!(chains.svc.len(), "KUBE-SVC-".len() + 16);
        assert_eq!(chains.svc, format!("KUBE-SVC-{}", hash("ns/web:httptcp")));
        assert_eq!(chains.ext, format!("KUBE-EXT-{}", hash("ns/web:httptcp")));
        // The chain every kube-proxy in iptables mode has for default/kubernetes:https.
        assert_eq!(hash("default/kubernetes:httpstcp"), "NPX46M4PTMTKRN6Y");
    }

    #[test]
    fn a_cluster_ip_spreads_over_ready_endpoints() {
        let p = port(vec![
            endpoint(5, true, true),
            endpoint(6, true, false),
            endpoint(7, false, false),
        ]);
        let t = render(&config(), std::slice::from_ref(&p));
        let svc = PortChains::of(&config(), &p).svc;
        let services = rules(&t.nat, "KUBE-SERVICES");
        assert_eq!(
            services[0],
            format!("-m comment --comment \"ns/web:http cluster IP\" -m tcp -p tcp -d 10.43.0.7/32 --dport 80 -j {svc}")
        );
        assert!(services
            .last()
            .unwrap()
            .ends_with("-m addrtype --dst-type LOCAL -j KUBE-NODEPORTS"));
        let spread = rules(&t.nat, &svc);
        assert!(spread[0].contains("! -s 10.42.0.0/16 -j KUBE-MARK-MASQ"));
        assert_eq!(spread.len(), 3);
        assert!(spread[1].contains("\"ns/web:http -> 10.42.0.5:8080\" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-"));
        assert!(spread[2].contains("\"ns/web:http -> 10.42.0.6:8080\" -j KUBE-SEP-"));
        let sep = endpoint_chain(&config(), &p, &p.endpoints[0]);
        assert_eq!(
            rules(&t.nat, &sep),
            [
                "-m comment --comment ns/web:http -s 10.42.0.5/32 -j KUBE-MARK-MASQ".to_string(),
                "-m comment --comment ns/web:http -m tcp -p tcp -j DNAT --to-destination 10.42.0.5:8080".to_string(),
            ]
        );
        // The not-ready endpoint has no chain; nothing is rejected.
        assert_eq!(t.nat.iter().filter(|(c, _)| c.starts_with("KUBE-SEP-")).count(), 2);
        assert!(rules(&t.filter, "KUBE-SERVICES").is_empty());
    }

    #[test]
    fn a_port_without_endpoints_is_rejected_at_once() {
        let mut p = port(vec![endpoint(5, false, true)]);
        p.node_port = Some(30080);
        let t = render(&config(), &[p]);
        assert_eq!(
            rules(&t.filter, "KUBE-SERVICES"),
            ["-m comment --comment \"ns/web:http has no endpoints\" -m tcp -p tcp -d 10.43.0.7/32 --dport 80 -j REJECT --reject-with icmp-port-unreachable".to_string()]
        );
        assert_eq!(
            rules(&t.filter, "KUBE-EXTERNAL-SERVICES"),
            ["-m comment --comment \"ns/web:http has no endpoints\" -m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30080 -j REJECT --reject-with icmp-port-unreachable".to_string()]
        );
        assert_eq!(rules(&t.nat, "KUBE-SERVICES").len(), 1);
        assert!(rules(&t.nat, "KUBE-NODEPORTS").is_empty());
    }

    #[test]
    fn node_ports_go_through_the_external_chain() {
        let mut p = port(vec![endpoint(5, true, false)]);
        p.node_port = Some(30080);
        let t = render(&config(), std::slice::from_ref(&p));
        let chains = PortChains::of(&config(), &p);
        assert_eq!(
            rules(&t.nat, "KUBE-NODEPORTS"),
            [format!(
                "-m comment --comment ns/web:http -m tcp -p tcp --dport 30080 -j {}",
                chains.ext
            )]
        );
        assert_eq!(
            rules(&t.nat, &chains.ext),
            [
                "-m comment --comment \"masquerade traffic for ns/web:http external destinations\" -j KUBE-MARK-MASQ".to_string(),
                format!("-j {}", chains.svc),
            ]
        );
        // Local policy without a local endpoint: external traffic is dropped, pods still
        // reach the Service.
        p.external_local = true;
        let t = render(&config(), &[p]);
        assert!(rules(&t.filter, "KUBE-EXTERNAL-SERVICES")[0]
            .contains("has no local endpoints\" -m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30080 -j DROP"));
        assert_eq!(rules(&t.nat, "KUBE-SERVICES").len(), 2);
    }

    #[test]
    fn session_affinity_checks_recent_clients_first() {
        let mut p = port(vec![endpoint(5, true, false), endpoint(6, true, false)]);
        p.affinity_seconds = Some(60);
        let t = render(&config(), std::slice::from_ref(&p));
        let chains = PortChains::of(&config(), &p);
        let svc = rules(&t.nat, &chains.svc);
        let sep = endpoint_chain(&config(), &p, &p.endpoints[0]);
        assert_eq!(
            svc[1],
            format!("-m comment --comment \"ns/web:http -> 10.42.0.5:8080\" -m recent --name {sep} --rcheck --seconds 60 --reap -j {sep}")
        );
        assert!(rules(&t.nat, &sep)[1].contains(&format!("-m recent --name {sep} --set -m tcp")));
    }

    #[test]
    fn restore_input_flushes_then_deletes_stale_chains() {
        let t = render(&config(), &[port(vec![endpoint(5, true, false)])]);
        let stale = BTreeSet::from([("nat", "KUBE-SVC-GONE".to_string())]);
        let input = t.restore_input(&stale);
        assert!(input.starts_with("*filter\n:KUBE-SERVICES - [0:0]\n"));
        let nat = &input[input.find("*nat").unwrap()..];
        assert!(nat.contains(":KUBE-SVC-GONE - [0:0]\n"));
        assert!(nat.ends_with("-X KUBE-SVC-GONE\nCOMMIT\n"));
        assert_eq!(input.matches("COMMIT").count(), 2);
    }

    #[test]
    fn the_prefix_names_every_chain() {
        let config = RuleConfig::new("RK1A2B", None).unwrap();
        assert!(RuleConfig::new("RKTOOLONG", None).is_err());
        assert!(RuleConfig::new("kube", None).is_err());
        assert!(RuleConfig::new("", None).is_err());
        let t = render(&config, &[port(vec![endpoint(5, true, false)])]);
        assert!(t.chains().iter().all(|(_, c)| c.starts_with("RK1A2B-") && c.len() <= 28));
        assert!(
            config.owns("RK1A2B-SVC-X") && !config.owns("KUBE-SVC-X") && !config.owns("RK1A2B")
        );
        assert!(config.jumps().iter().all(|(_, _, rule)| rule.contains("-j RK1A2B-")));
    }

    #[test]
    fn internal_local_keeps_external_traffic_on_every_endpoint() {
        let mut p = port(vec![endpoint(5, true, true), endpoint(6, true, false)]);
        p.internal_local = true;
        p.node_port = Some(30080);
        let t = render(&config(), std::slice::from_ref(&p));
        let chains = PortChains::of(&config(), &p);
        assert!(rules(&t.nat, "KUBE-SERVICES")[0].ends_with(&format!("-j {}", chains.svl)));
        assert_eq!(rules(&t.nat, &chains.svl).len(), 1, "this node's endpoint only");
        assert_eq!(rules(&t.nat, &chains.svc).len(), 3, "masquerade, then both endpoints");
        assert_eq!(t.nat.iter().filter(|(c, _)| c.starts_with("KUBE-SEP-")).count(), 2);
        // Each chain once.
        assert_eq!(t.chains().len(), t.filter.len() + t.nat.len());
        // Without a local endpoint the cluster IP drops (others still serve NodePorts).
        p.endpoints[0].local = false;
        let t = render(&config(), &[p]);
        assert!(rules(&t.filter, "KUBE-SERVICES")[0]
            .contains("has no local endpoints\" -m tcp -p tcp -d 10.43.0.7/32 --dport 80 -j DROP"));
    }
}
