//! Pod addresses: a node's pod CIDR ([`Cidr`]) and the addresses handed out of it ([`Ipam`]),
//! shared by the Docker runtime's pod network and the simulated runtime.

use std::collections::HashMap;
use std::fmt;
use std::net::Ipv4Addr;

/// An IPv4 network, `10.42.3.0/24`, held as its network address and prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    pub network: Ipv4Addr,
    pub prefix: u8,
}

impl Cidr {
    /// `10.42.3.7/24` is read as `10.42.3.0/24`. Prefixes from /8 to /30: a pod network
    /// needs a gateway and at least one pod address.
    pub fn parse(text: &str) -> Option<Cidr> {
        let (addr, bits) = text.split_once('/')?;
        let addr: Ipv4Addr = addr.parse().ok()?;
        let prefix: u8 = bits.parse().ok()?;
        if !(8..=30).contains(&prefix) {
            return None;
        }
        let network = Ipv4Addr::from(u32::from(addr) & Self::mask(prefix));
        Some(Cidr { network, prefix })
    }

    fn mask(prefix: u8) -> u32 {
        u32::MAX << (32 - u32::from(prefix))
    }

    /// The first usable address, the bridge's own (a pod's default gateway).
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.network) + 1)
    }

    /// The addresses pods may have: after the gateway, before the broadcast address.
    fn pod_range(&self) -> (u32, u32) {
        let network = u32::from(self.network);
        (network + 2, network + !Self::mask(self.prefix) - 1)
    }

    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & Self::mask(self.prefix) == u32::from(self.network)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// The pod addresses of one node, each with its owner (a sandbox). Addresses are handed out
/// round robin after the last one given, as the host-local IPAM plugin does, so one just
/// released is not given to the next pod at once (whose peers might still have the old pod's
/// connections).
#[derive(Debug)]
pub struct Ipam {
    cidr: Cidr,
    /// The next address to try.
    next: u32,
    owners: HashMap<Ipv4Addr, String>,
}

impl Ipam {
    pub fn new(cidr: Cidr) -> Ipam {
        Ipam { cidr, next: cidr.pod_range().0, owners: HashMap::new() }
    }

    pub fn cidr(&self) -> Cidr {
        self.cidr
    }

    /// A free address for `owner`, or None when every one is taken.
    pub fn allocate(&mut self, owner: &str) -> Option<Ipv4Addr> {
        let (first, last) = self.cidr.pod_range();
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
        let (first, last) = self.cidr.pod_range();
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

    fn cidr(text: &str) -> Cidr {
        Cidr::parse(text).unwrap()
    }

    #[test]
    fn cidrs() {
        assert_eq!(cidr("10.42.3.7/24").to_string(), "10.42.3.0/24");
        assert_eq!(cidr("10.42.3.0/24").gateway(), Ipv4Addr::new(10, 42, 3, 1));
        assert!(cidr("10.42.3.0/24").contains(Ipv4Addr::new(10, 42, 3, 255)));
        assert!(!cidr("10.42.3.0/24").contains(Ipv4Addr::new(10, 42, 4, 1)));
        assert_eq!(Cidr::parse("10.42.0.0/31"), None);
        assert_eq!(Cidr::parse("10.42.0.0/33"), None);
        assert_eq!(Cidr::parse("nonsense"), None);
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
