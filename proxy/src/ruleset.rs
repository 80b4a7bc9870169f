//! The proxy's rules between syncs: every Service's ports with their rendered rules, and
//! which of the per-port chains changed since the last sync. A full sync writes all of it;
//! a partial sync (upstream's `MinimizeIPTablesRestore`) writes the shared chains and only
//! the chains of Services that changed, and deletes the chains that went, so one endpoint
//! change costs a few lines of `iptables-restore` input however many Services there are.

use std::collections::{BTreeMap, BTreeSet};

use crate::conntrack::{self, Flush};
use crate::iptables::ChainName;
use crate::model::ServicePort;
use crate::rules::{self, PortRules, RuleConfig, Tables};

/// A Service: namespace and name.
pub type ServiceKey = (String, String);

/// Every Service's ports and rules, and the per-port chains changed since [`RuleSet::synced`].
pub struct RuleSet {
    config: RuleConfig,
    services: BTreeMap<ServiceKey, Vec<(ServicePort, PortRules)>>,
    /// Per-port nat chains written or deleted since the last sync: true when the chain
    /// exists now (write it), false when it went (delete it).
    changed: BTreeMap<String, bool>,
    /// UDP flows the changes since the last sync left stale, to delete once the rules are
    /// written.
    stale_flows: BTreeSet<Flush>,
    /// Whether any rule changed since the last sync (also in the shared chains only, e.g. a
    /// port that lost its last endpoint and is now rejected).
    dirty: bool,
}

/// What a partial sync writes: the shared chains and the changed per-port chains, and the
/// per-port chains to delete.
pub struct Partial {
    pub tables: Tables,
    pub deleted: BTreeSet<ChainName>,
}

impl RuleSet {
    pub fn new(config: RuleConfig) -> RuleSet {
        RuleSet {
            config,
            services: BTreeMap::new(),
            changed: BTreeMap::new(),
            stale_flows: BTreeSet::new(),
            dirty: false,
        }
    }

    pub fn config(&self) -> &RuleConfig {
        &self.config
    }

    /// The number of Services held.
    pub fn len(&self) -> usize {
        self.services.len()
    }

    pub fn is_empty(&self) -> bool {
        self.services.is_empty()
    }

    /// Sets a Service's ports (none: the Service is gone or not proxied), rendering only
    /// ports that differ from what it had. Returns whether its rules changed.
    pub fn update(&mut self, key: ServiceKey, mut ports: Vec<ServicePort>) -> bool {
        ports.sort_by(|a, b| (&a.name, a.protocol).cmp(&(&b.name, b.protocol)));
        let old = self.services.remove(&key).unwrap_or_default();
        let unchanged = old.len() == ports.len() && old.iter().zip(&ports).all(|(o, n)| o.0 == *n);
        if unchanged {
            if !old.is_empty() {
                self.services.insert(key, old);
            }
            return false;
        }
        for (port, _) in &old {
            let same = |p: &&ServicePort| (&p.name, p.protocol) == (&port.name, port.protocol);
            self.stale_flows.extend(conntrack::stale(Some(port), ports.iter().find(same)));
        }
        for port in &ports {
            let same = |p: &&ServicePort| (&p.name, p.protocol) == (&port.name, port.protocol);
            if !old.iter().map(|(p, _)| p).any(|p| same(&p)) {
                self.stale_flows.extend(conntrack::stale(None, Some(port)));
            }
        }
        let mut before: BTreeMap<&str, &Vec<String>> = BTreeMap::new();
        for (_, rules) in &old {
            for (chain, lines) in &rules.chains {
                before.insert(chain, lines);
            }
        }
        let new: Vec<(ServicePort, PortRules)> = ports
            .into_iter()
            .map(|port| {
                let rules = rules::render_port(&self.config, &port);
                (port, rules)
            })
            .collect();
        let mut changed = old.iter().map(|(_, r)| r).ne(new.iter().map(|(_, r)| r));
        for (_, rules) in &new {
            for (chain, lines) in &rules.chains {
                if before.remove(chain.as_str()) != Some(lines) {
                    self.changed.insert(chain.clone(), true);
                }
            }
        }
        for chain in before.into_keys() {
            self.changed.insert(chain.to_string(), false);
            changed = true;
        }
        if !new.is_empty() {
            self.services.insert(key, new);
        }
        self.dirty |= changed;
        changed
    }

    /// The Services held, for finding the ones that went.
    pub fn keys(&self) -> impl Iterator<Item = &ServiceKey> {
        self.services.keys()
    }

    fn ports(&self) -> impl Iterator<Item = &PortRules> {
        self.services.values().flatten().map(|(_, rules)| rules)
    }

    /// Every chain with its rules.
    pub fn full(&self) -> Tables {
        let mut tables = rules::top_level(&self.config, self.ports());
        for port in self.ports() {
            tables.nat.extend(port.chains.iter().cloned());
        }
        tables
    }

    /// The shared chains, and the per-port chains changed since the last sync.
    pub fn partial(&self) -> Partial {
        let mut tables = rules::top_level(&self.config, self.ports());
        for port in self.ports() {
            for (chain, lines) in &port.chains {
                if self.changed.get(chain) == Some(&true) {
                    tables.nat.push((chain.clone(), lines.clone()));
                }
            }
        }
        let deleted = self
            .changed
            .iter()
            .filter(|(_, exists)| !**exists)
            .map(|(chain, _)| ("nat", chain.clone()))
            .collect();
        Partial { tables, deleted }
    }

    /// The rules in the filter and nat tables (for metrics).
    pub fn rule_counts(&self) -> (usize, usize) {
        let shared = rules::top_level(&self.config, std::iter::empty());
        let (mut filter, mut nat) = (shared.filter_count(), shared.nat_count());
        for port in self.ports() {
            filter += port.filter_services.len() + port.filter_external.len();
            nat += port.nat_services.len() + port.nat_nodeports.len();
            nat += port.chains.iter().map(|(_, rules)| rules.len()).sum::<usize>();
        }
        (filter, nat)
    }

    /// Whether any rule changed since the last sync.
    pub fn has_changes(&self) -> bool {
        self.dirty
    }

    /// The rules are written: nothing has changed since. Returns the UDP flows to delete now.
    pub fn synced(&mut self) -> Vec<Flush> {
        self.changed.clear();
        self.dirty = false;
        std::mem::take(&mut self.stale_flows).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::model::{Endpoint, Protocol, ServicePortName};

    fn port(service: &str, endpoints: &[u8]) -> ServicePort {
        ServicePort {
            name: ServicePortName { namespace: "ns".into(), name: service.into(), port: "".into() },
            protocol: Protocol::Tcp,
            port: 80,
            cluster_ip: Some(Ipv4Addr::new(10, 43, 0, 7)),
            node_port: None,
            external_ips: Vec::new(),
            load_balancer_ips: Vec::new(),
            affinity_seconds: None,
            external_local: false,
            internal_local: false,
            endpoints: endpoints
                .iter()
                .map(|&last| Endpoint {
                    ip: Ipv4Addr::new(10, 42, 0, last),
                    port: 8080,
                    ready: true,
                    serving: true,
                    terminating: false,
                    local: false,
                })
                .collect(),
        }
    }

    fn key(name: &str) -> ServiceKey {
        ("ns".into(), name.into())
    }

    fn set() -> RuleSet {
        RuleSet::new(RuleConfig::new("KUBE", None).unwrap())
    }

    fn written(partial: &Partial) -> Vec<&str> {
        partial
            .tables
            .nat
            .iter()
            .map(|(c, _)| c.as_str())
            .filter(|c| !RuleConfig::new("KUBE", None).unwrap().is_top_level(c))
            .collect()
    }

    #[test]
    fn a_partial_sync_writes_only_the_changed_service() {
        let mut set = set();
        for name in ["a", "b", "c"] {
            assert!(set.update(key(name), vec![port(name, &[1, 2])]));
        }
        assert_eq!(
            set.full(),
            rules::render(
                set.config(),
                &[port("a", &[1, 2]), port("b", &[1, 2]), port("c", &[1, 2])]
            )
        );
        set.synced();
        assert!(!set.has_changes());
        // The same ports again: nothing to do.
        assert!(!set.update(key("b"), vec![port("b", &[1, 2])]));
        assert!(!set.has_changes());
        // One endpoint of b replaced: b's SVC chain and the new SEP chain are written, the
        // old SEP chain deleted, nothing of a or c is.
        assert!(set.update(key("b"), vec![port("b", &[1, 3])]));
        let partial = set.partial();
        let chains = written(&partial);
        assert_eq!(chains.len(), 2, "{chains:?}");
        assert!(chains.iter().any(|c| c.starts_with("KUBE-SVC-")));
        assert!(chains.iter().any(|c| c.starts_with("KUBE-SEP-")));
        assert_eq!(partial.deleted.len(), 1);
        let all = set.full();
        let sep_of = |t: &Tables, ip: &str| {
            t.nat.iter().find(|(_, r)| r.iter().any(|l| l.contains(ip))).map(|(c, _)| c.clone())
        };
        let new_sep = sep_of(&all, "DNAT --to-destination 10.42.0.3:8080").unwrap();
        assert!(chains.contains(&new_sep.as_str()));
        // The shared chains are always there, whole.
        assert_eq!(partial.tables.filter.len(), 5);
        assert!(partial.tables.nat.iter().any(|(c, r)| c == "KUBE-SERVICES" && r.len() == 4));
        set.synced();
        // A Service that goes: every chain of it deleted.
        assert!(set.update(key("c"), Vec::new()));
        let partial = set.partial();
        assert!(written(&partial).is_empty());
        assert_eq!(partial.deleted.len(), 3, "SVC and two SEP chains");
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn a_port_losing_its_last_endpoint_is_a_change() {
        let mut set = set();
        set.update(key("a"), vec![port("a", &[1])]);
        set.synced();
        assert!(!set.has_changes());
        // Only the shared filter chain changes (a REJECT for the cluster IP), and the port's
        // chains go.
        assert!(set.update(key("a"), vec![port("a", &[])]));
        assert!(set.has_changes());
        let partial = set.partial();
        assert!(partial.tables.filter.iter().any(|(c, r)| c == "KUBE-SERVICES" && r.len() == 1));
        set.synced();
        // A new Service without endpoints: no chain of its own, still a change.
        assert!(set.update(key("b"), vec![port("b", &[])]));
        assert!(set.has_changes());
    }

    #[test]
    fn a_chain_that_goes_and_comes_back_in_one_batch_is_written() {
        let mut set = set();
        set.update(key("a"), vec![port("a", &[1])]);
        set.synced();
        set.update(key("a"), vec![port("a", &[2])]);
        set.update(key("a"), vec![port("a", &[1])]);
        let partial = set.partial();
        assert!(partial.deleted.iter().all(|(_, c)| !written(&partial).contains(&c.as_str())));
        assert_eq!(written(&partial).len(), 2, "the SVC chain and 10.42.0.1's SEP chain");
    }
}
