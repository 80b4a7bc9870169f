//! Endpoints subsets in upstream's canonical shape: [`repack`] regroups addresses and ports
//! so that each subset pairs one set of addresses with every port they all serve (as
//! upstream's `RepackSubsets`), and [`truncate`] keeps an Endpoints object within
//! [`MAX_CAPACITY`] addresses. Used by the Endpoints controller (its output) and by the
//! mirroring controller (its input).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset};

/// The most addresses an Endpoints object holds; beyond, it is truncated and annotated
/// `endpoints.kubernetes.io/over-capacity: truncated`.
pub const MAX_CAPACITY: usize = 1000;

/// An address by what tells it apart: its IP and its target's uid.
type AddressKey = (String, String);
/// A port by all its fields; port -1 stands for "no ports" (headless Services).
type PortKey = (Option<String>, i32, Option<String>, Option<String>);

fn address_key(address: &EndpointAddress) -> AddressKey {
    let uid = address.target_ref.as_ref().and_then(|t| t.uid.clone()).unwrap_or_default();
    (address.ip.clone(), uid)
}

fn port_key(port: &EndpointPort) -> PortKey {
    (port.name.clone(), port.port, port.protocol.clone(), port.app_protocol.clone())
}

/// Regroups `subsets`: every address (by IP and target uid) is listed with every port it
/// serves, addresses serving the same ports share a subset, and an address not ready on any
/// port is not ready on all of them. Addresses are sorted by IP and uid.
pub fn repack(subsets: &[EndpointSubset]) -> Vec<EndpointSubset> {
    let mut addresses: BTreeMap<AddressKey, EndpointAddress> = BTreeMap::new();
    let mut by_port: BTreeMap<PortKey, BTreeMap<AddressKey, bool>> = BTreeMap::new();
    for subset in subsets {
        let ports: Vec<PortKey> = match subset.ports.as_deref() {
            Some(ports) if !ports.is_empty() => ports.iter().map(port_key).collect(),
            _ => vec![(None, -1, None, None)],
        };
        let ready = subset.addresses.iter().flatten().map(|a| (a, true));
        let not_ready = subset.not_ready_addresses.iter().flatten().map(|a| (a, false));
        let listed: Vec<(&EndpointAddress, bool)> = ready.chain(not_ready).collect();
        for port in ports {
            for (address, ready) in &listed {
                let key = address_key(address);
                addresses.entry(key.clone()).or_insert_with(|| (*address).clone());
                let readiness = by_port.entry(port.clone()).or_default();
                // Not ready wins over ready.
                if readiness.get(&key) != Some(&false) {
                    readiness.insert(key, *ready);
                }
            }
        }
    }
    let mut groups: BTreeMap<Vec<(AddressKey, bool)>, Vec<PortKey>> = BTreeMap::new();
    for (port, readiness) in by_port {
        let ports = groups.entry(readiness.into_iter().collect()).or_default();
        if port.1 > 0 {
            ports.push(port);
        }
    }
    groups
        .into_iter()
        .map(|(members, ports)| {
            let pick = |want: bool| -> Option<Vec<EndpointAddress>> {
                let list: Vec<EndpointAddress> = members
                    .iter()
                    .filter(|(_, ready)| *ready == want)
                    .map(|(key, _)| addresses[key].clone())
                    .collect();
                (!list.is_empty()).then_some(list)
            };
            let ports: Vec<EndpointPort> = ports
                .into_iter()
                .map(|(name, port, protocol, app_protocol)| EndpointPort {
                    name,
                    port,
                    protocol,
                    app_protocol,
                })
                .collect();
            EndpointSubset {
                addresses: pick(true),
                not_ready_addresses: pick(false),
                ports: (!ports.is_empty()).then_some(ports),
            }
        })
        .collect()
}

/// How many addresses (ready and not) the subsets hold.
pub fn count(subsets: &[EndpointSubset]) -> usize {
    subsets
        .iter()
        .map(|s| {
            s.addresses.as_ref().map_or(0, Vec::len)
                + s.not_ready_addresses.as_ref().map_or(0, Vec::len)
        })
        .sum()
}

/// Cuts `subsets` down to [`MAX_CAPACITY`] addresses, as upstream: not-ready addresses go
/// first; if the ready ones alone are too many, every not-ready one goes and the ready ones
/// are cut, each subset keeping its share (rounded up). True when anything was cut.
pub fn truncate(subsets: &mut [EndpointSubset]) -> bool {
    let len = |l: &Option<Vec<EndpointAddress>>| l.as_ref().map_or(0, Vec::len);
    let total_ready: usize = subsets.iter().map(|s| len(&s.addresses)).sum();
    let total_not_ready: usize = subsets.iter().map(|s| len(&s.not_ready_addresses)).sum();
    if total_ready + total_not_ready <= MAX_CAPACITY {
        return false;
    }
    let cut_ready = total_ready > MAX_CAPACITY;
    let (max, total) = if cut_ready {
        (MAX_CAPACITY, total_ready)
    } else {
        (MAX_CAPACITY - total_ready, total_not_ready)
    };
    let mut room = max;
    for subset in subsets.iter_mut() {
        let list = if cut_ready { &mut subset.addresses } else { &mut subset.not_ready_addresses };
        let here = len(list);
        let share = (here * max).div_ceil(total).min(room);
        if let Some(addresses) = list.as_mut() {
            addresses.truncate(share);
        }
        room -= len(list);
        if cut_ready {
            subset.not_ready_addresses = None;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn subsets(value: serde_json::Value) -> Vec<EndpointSubset> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn addresses_serving_the_same_ports_share_a_subset() {
        // Two pods, two ports each, given one subset per pod and port (as the controller
        // builds them); one pod is not ready.
        let input = subsets(json!([
            {"addresses": [{"ip": "10.0.0.2", "targetRef": {"uid": "b"}}], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
            {"addresses": [{"ip": "10.0.0.2", "targetRef": {"uid": "b"}}], "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]},
            {"addresses": [{"ip": "10.0.0.1", "targetRef": {"uid": "a"}}], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
            {"addresses": [{"ip": "10.0.0.1", "targetRef": {"uid": "a"}}], "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]},
            {"notReadyAddresses": [{"ip": "10.0.0.3", "targetRef": {"uid": "c"}}], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
            {"notReadyAddresses": [{"ip": "10.0.0.3", "targetRef": {"uid": "c"}}], "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]},
        ]));
        let out = serde_json::to_value(repack(&input)).unwrap();
        assert_eq!(
            out,
            json!([{
                "addresses": [{"ip": "10.0.0.1", "targetRef": {"uid": "a"}}, {"ip": "10.0.0.2", "targetRef": {"uid": "b"}}],
                "notReadyAddresses": [{"ip": "10.0.0.3", "targetRef": {"uid": "c"}}],
                "ports": [{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "https", "port": 443, "protocol": "TCP"}],
            }])
        );
    }

    #[test]
    fn different_ports_make_different_subsets_and_not_ready_wins() {
        let input = subsets(json!([
            {"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 8080, "protocol": "TCP"}]},
            {"addresses": [{"ip": "10.0.0.2"}], "ports": [{"port": 9090, "protocol": "TCP"}]},
            {"addresses": [{"ip": "10.0.0.1"}], "notReadyAddresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 7070, "protocol": "TCP"}]},
            {"addresses": [{"ip": "10.0.0.9"}]},
        ]));
        let out = repack(&input);
        assert_eq!(out.len(), 4, "{out:?}");
        let of = |ip: &str| -> Vec<(bool, i32)> {
            out.iter()
                .flat_map(|s| {
                    let ready = s.addresses.iter().flatten().map(|a| (true, a));
                    let not = s.not_ready_addresses.iter().flatten().map(|a| (false, a));
                    let ports: Vec<i32> = s.ports.iter().flatten().map(|p| p.port).collect();
                    ready
                        .chain(not)
                        .filter(|(_, a)| a.ip == ip)
                        .flat_map(move |(r, _)| {
                            let ports = if ports.is_empty() { vec![-1] } else { ports.clone() };
                            ports.into_iter().map(move |p| (r, p))
                        })
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        let mut one = of("10.0.0.1");
        one.sort();
        assert_eq!(one, [(false, 7070), (true, 8080)]);
        assert_eq!(of("10.0.0.9"), [(true, -1)], "a subset without ports keeps its addresses");
    }

    #[test]
    fn truncation_cuts_not_ready_addresses_first_then_ready_ones() {
        let addresses = |prefix: &str, n: usize| -> Vec<serde_json::Value> {
            (0..n).map(|i| json!({"ip": format!("{prefix}.{}.{}", i / 250, i % 250)})).collect()
        };
        let mut s = subsets(json!([
            {"addresses": addresses("10.1", 900), "notReadyAddresses": addresses("10.2", 300), "ports": [{"port": 80}]},
        ]));
        assert!(truncate(&mut s));
        assert_eq!(s[0].addresses.as_ref().unwrap().len(), 900);
        assert_eq!(s[0].not_ready_addresses.as_ref().unwrap().len(), 100);
        let mut s = subsets(json!([
            {"addresses": addresses("10.1", 800), "notReadyAddresses": addresses("10.2", 5), "ports": [{"port": 80}]},
            {"addresses": addresses("10.3", 700), "ports": [{"port": 81}]},
        ]));
        assert!(truncate(&mut s));
        assert_eq!(count(&s), 1000);
        // Shares of 1000 by 800:700, rounded up (534 + 466).
        assert_eq!(s[0].addresses.as_ref().unwrap().len(), 534);
        assert!(s[0].not_ready_addresses.is_none());
        assert_eq!(s[1].addresses.as_ref().unwrap().len(), 466);
        let mut small = subsets(json!([{"addresses": addresses("10.1", 10)}]));
        assert!(!truncate(&mut small));
    }
}
