//! The host's primary IPv4 address: that of the interface the default route leaves through,
//! as kube-apiserver chooses its address when none is given. It is where pods reach the API
//! server (the `kubernetes` Service's endpoint).

use std::net::Ipv4Addr;
use std::process::Command;

/// The interface of the IPv4 default route, from `/proc/net/route` (destination and mask 0).
fn default_route_interface(table: &str) -> Option<String> {
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.len() > 7 && fields[1] == "00000000" && fields[7] == "00000000")
            .then(|| fields[0].to_string())
    })
}

/// The first global IPv4 address in `ip -4 -o addr show` output.
fn first_global_address(listing: &str) -> Option<Ipv4Addr> {
    listing.lines().filter(|l| l.contains(" scope global")).find_map(|line| {
        let mut words = line.split_whitespace();
        words.find(|w| *w == "inet")?;
        words.next()?.split('/').next()?.parse().ok()
    })
}

/// The primary address, or None (no default route, or its interface has no global IPv4
/// address).
pub fn primary_ipv4() -> Option<Ipv4Addr> {
    let table = std::fs::read_to_string("/proc/net/route").ok()?;
    let interface = default_route_interface(&table)?;
    let out =
        Command::new("ip").args(["-4", "-o", "addr", "show", "dev", &interface]).output().ok()?;
    first_global_address(&String::from_utf8_lossy(&out.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_route_names_the_interface() {
        let table =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                     docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n\
                     eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n";
        assert_eq!(default_route_interface(table).as_deref(), Some("eth0"));
        assert_eq!(default_route_interface("Iface\tDestination\n"), None);
        let listing = "2: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\\       valid_lft forever\n";
        assert_eq!(first_global_address(listing), Some(Ipv4Addr::new(192, 0, 2, 2)));
        assert_eq!(first_global_address("1: lo    inet 127.0.0.1/8 scope host lo\n"), None);
    }
}
