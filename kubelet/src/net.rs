//! Addresses: the first host of a CIDR (a pod network's gateway), the node's own address.

use std::net::Ipv4Addr;

/// The first usable address of an IPv4 CIDR: `10.42.0.0/24` → `10.42.0.1`.
pub fn first_host(cidr: &str) -> Option<Ipv4Addr> {
    let (addr, bits) = cidr.split_once('/')?;
    let addr: Ipv4Addr = addr.parse().ok()?;
    let bits: u32 = bits.parse().ok()?;
    if !(8..=30).contains(&bits) {
        return None;
    }
    let network = u32::from(addr) & (u32::MAX << (32 - bits));
    Some(Ipv4Addr::from(network + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_host_of_a_cidr() {
        assert_eq!(first_host("10.42.3.0/24"), Some(Ipv4Addr::new(10, 42, 3, 1)));
        assert_eq!(first_host("10.42.3.7/24"), Some(Ipv4Addr::new(10, 42, 3, 1)));
        assert_eq!(first_host("10.42.0.0/33"), None);
        assert_eq!(first_host("nonsense"), None);
    }
}
