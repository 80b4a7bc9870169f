//! Pod addresses: a node's pod CIDR (an [`Ipv4Net`], read by [`parse_pod_cidr`]) and the
//! addresses handed out of it ([`Ipam`]), shared by the Docker runtime's pod network and the
//! simulated runtime.

use std::collections::HashMap;
use std::net::Ipv4Addr;

pub use ipnet::Ipv4Net;

/// `10.42.3.7/24` is read as `10.42.3.0/24`. Prefixes from /8 to /30: a pod network needs a
/// gateway and at least one pod address.
pub fn parse_pod_cidr(text: &str) -> Option<Ipv4Net> {
    let cidr: Ipv4Net = text.parse().ok()?;
    (8..=30).contains(&cidr.prefix_len()).then(|| cidr.trunc())
}

/// The first usable address, the bridge's own (a pod's default gateway).
pub fn gateway(cidr: Ipv4Net) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(cidr.network()) + 1)
}

/// The addresses pods may have: after the gateway, before the broadcast address.
fn pod_range(cidr: Ipv4Net) -> (u32, u32) {
    (u32::from(cidr.network()) + 2, u32::from(cidr.broadcast()) - 1)
}

/// The pod addresses of one node, each with its owner (a sandbox). Addresses are handed out
/// round robin after the last one given, as the host-local IPAM plugin does, so one just
/// released is not given to the next pod at once (whose peers might still have the old pod's
/// connections).
#[derive(Debug)]
pub struct Ipam {
    cidr: Ipv4Net,
    /// The next address to try.
    next: u32,
    owners: HashMap<Ipv4Addr, String>,
}

impl Ipam {
    pub fn new(cidr: Ipv4Net) -> Ipam {
        Ipam { cidr, next: pod_range(cidr).0, owners: HashMap::new() }
    }

    pub fn cidr(&self) -> Ipv4Net {
        self.cidr
    }

    /// A free address for `owner`, or None when every one is taken.
    pub fn allocate(&mut self, owner: &str) -> Option<Ipv4Addr> {
        let (first, last) = pod_range(self.cidr);
        let count = last - first + 1;
        for step in 0..count {
            let candidate = first + (self.next - first + step) % count;
            let ip = Ipv4Addr::from(candidate);
            if let std::collections::hash_map::Entry::Vacant(free) = self.owners.entry(ip) {
                free.insert(owner.to_string());
                self.next = if candidate == last { first } else { candidate + 1 };
                return Some(ip);
            }
        }
        None
    }

    /// Marks an address as `owner`'s (one found in use at start, or one allocated under a
    /// provisional owner). False when it is outside the pod range or another owner's.
    pub fn claim(&mut self, ip: Ipv4Addr, owner: &str) -> bool {
        let (first, last) = pod_range(self.cidr);
        if !(first..=last).contains(&u32::from(ip)) {
            return false;
        }
        match self.owners.get(&ip) {
            Some(current) if current != owner => false,
            _ => {
                self.owners.insert(ip, owner.to_string());
                true
            }
        }
    }

    /// Gives the address `from` has to `to` (a sandbox's name, then its id).
    pub fn hand_over(&mut self, from: &str, to: &str) {
        for owner in self.owners.values_mut().filter(|o| *o == from) {
            *owner = to.to_string();
        }
    }

    /// Frees the address of `owner`; which one it was.
    pub fn release(&mut self, owner: &str) -> Option<Ipv4Addr> {
        let ip = self.owners.iter().find(|(_, o)| *o == owner).map(|(ip, _)| *ip)?;
        self.owners.remove(&ip);
        Some(ip)
    }

    pub fn in_use(&self) -> usize {
        self.owners.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(text: &str) -> Ipv4Net {
        parse_pod_cidr(text).unwrap()
    }

    #[test]
    fn cidrs() {
        assert_eq!(cidr("10.42.3.7/24").to_string(), "10.42.3.0/24");
        assert_eq!(gateway(cidr("10.42.3.0/24")), Ipv4Addr::new(10, 42, 3, 1));
        assert_eq!(pod_range(cidr("10.42.3.0/24")), (0x0a2a0302, 0x0a2a03fe));
        assert_eq!(parse_pod_cidr("10.42.0.0/31"), None);
        assert_eq!(parse_pod_cidr("10.42.0.0/33"), None);
        assert_eq!(parse_pod_cidr("10.42.0.0/7"), None);
        assert_eq!(parse_pod_cidr("nonsense"), None);
    }

    #[test]
    fn addresses_go_round_robin_and_never_twice() {
        // /29: network .0, gateway .1, pods .2 to .6, broadcast .7.
        let mut ipam = Ipam::new(cidr("10.1.0.0/29"));
        let given: Vec<String> =
            (0..5).map(|i| ipam.allocate(&format!("p{i}")).unwrap().to_string()).collect();
        assert_eq!(given, ["10.1.0.2", "10.1.0.3", "10.1.0.4", "10.1.0.5", "10.1.0.6"]);
        assert_eq!(ipam.allocate("full"), None);
        assert_eq!(ipam.release("p1"), Some(Ipv4Addr::new(10, 1, 0, 3)));
        assert_eq!(ipam.release("p1"), None);
        assert_eq!(ipam.allocate("again"), Some(Ipv4Addr::new(10, 1, 0, 3)));
        // After the last one given, not the lowest free one.
        ipam.release("p0");
        ipam.release("p4");
        assert_eq!(ipam.allocate("x"), Some(Ipv4Addr::new(10, 1, 0, 6)));
        assert_eq!(ipam.allocate("y"), Some(Ipv4Addr::new(10, 1, 0, 2)));
    }

    #[test]
    fn claims_and_hand_overs() {
        let mut ipam = Ipam::new(cidr("10.1.0.0/24"));
        assert!(ipam.claim(Ipv4Addr::new(10, 1, 0, 9), "old"));
        assert!(!ipam.claim(Ipv4Addr::new(10, 1, 0, 9), "other"));
        assert!(!ipam.claim(Ipv4Addr::new(10, 1, 0, 1), "gateway"));
        assert!(!ipam.claim(Ipv4Addr::new(10, 1, 1, 9), "outside"));
        let ip = ipam.allocate("k8s_POD_web").unwrap();
        ipam.hand_over("k8s_POD_web", "abc123");
        assert_eq!(ipam.release("abc123"), Some(ip));
        assert_eq!(ipam.in_use(), 1);
    }
}
