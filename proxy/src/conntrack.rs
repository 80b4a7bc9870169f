//! Forgetting UDP flows that the rules no longer describe, as kube-proxy does after a sync.
//! A UDP "connection" is only a conntrack entry, refreshed by every datagram: without this, a
//! client that keeps sending would keep reaching an endpoint that left its Service (or keep
//! hitting the REJECT of a Service that since got endpoints) until it pauses for the
//! entry's timeout. TCP needs none of it: a dead endpoint resets or times out.
//!
//! Entries are deleted with the `conntrack` tool (Debian's `conntrack` package), one call per
//! [`Flush`]; without the tool the proxy says so once and goes on.

use std::net::Ipv4Addr;
use std::process::Command;

use crate::model::{Protocol, ServicePort};

/// Flows to delete.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Flush {
    /// Flows to `address:port` (a Service's IP) translated to `endpoint`, which left.
    Nat { address: Ipv4Addr, port: u16, endpoint: Ipv4Addr },
    /// Flows to `address:port` (a Service's IP that had no endpoints and now has some).
    Address { address: Ipv4Addr, port: u16 },
    /// Flows to a node port translated to `endpoint`, which left.
    NodePortNat { port: u16, endpoint: Ipv4Addr },
    /// Flows to a node port that had no endpoints and now has some.
    NodePort { port: u16 },
}

impl Flush {
    /// The `conntrack -D` arguments.
    pub fn args(&self) -> Vec<String> {
        let mut args: Vec<String> = ["-D", "-p", "udp"].map(String::from).to_vec();
        let mut push = |flag: &str, value: String| {
            args.push(flag.to_string());
            args.push(value);
        };
        match self {
            Flush::Nat { address, port, endpoint } => {
                push("--orig-dst", address.to_string());
                push("--orig-port-dst", port.to_string());
                push("--dst-nat", endpoint.to_string());
            }
            Flush::Address { address, port } => {
                push("--orig-dst", address.to_string());
                push("--orig-port-dst", port.to_string());
            }
            Flush::NodePortNat { port, endpoint } => {
                push("--orig-port-dst", port.to_string());
                push("--dst-nat", endpoint.to_string());
            }
            Flush::NodePort { port } => push("--orig-port-dst", port.to_string()),
        }
        args
    }
}

/// The flows a change of a UDP port from `old` to `new` leaves stale: those to endpoints
/// that left, and all of them when the port had no endpoint and now has one.
pub fn stale(old: Option<&ServicePort>, new: Option<&ServicePort>) -> Vec<Flush> {
    let udp = |p: &&ServicePort| p.protocol == Protocol::Udp;
    let (old, new) = (old.filter(udp), new.filter(udp));
    let addresses = |p: &ServicePort| {
        let cluster = p.cluster_ip.into_iter().chain(p.external_ips.iter().copied());
        cluster.chain(p.load_balancer_ips.iter().copied()).collect::<Vec<_>>()
    };
    let endpoints = |p: Option<&ServicePort>| -> Vec<Ipv4Addr> {
        p.map(|p| p.usable_endpoints().iter().map(|e| e.ip).collect()).unwrap_or_default()
    };
    let (before, after) = (endpoints(old), endpoints(new));
    let mut flushes = Vec::new();
    for (old, endpoint) in
        before.iter().filter(|ip| !after.contains(ip)).filter_map(|e| Some((old?, e)))
    {
        for address in addresses(old) {
            flushes.push(Flush::Nat { address, port: old.port, endpoint: *endpoint });
        }
        if let Some(port) = old.node_port {
            flushes.push(Flush::NodePortNat { port, endpoint: *endpoint });
        }
    }
    if let Some(new) = new.filter(|_| before.is_empty() && !after.is_empty()) {
        for address in addresses(new) {
            flushes.push(Flush::Address { address, port: new.port });
        }
        if let Some(port) = new.node_port {
            flushes.push(Flush::NodePort { port });
        }
    }
    flushes
}

/// Why flows could not be deleted.
#[derive(Debug, thiserror::Error)]
pub enum ConntrackError {
    #[error("cannot run conntrack: {0} (install Debian's conntrack package so that UDP clients stop reaching endpoints that left)")]
    Missing(std::io::Error),
    #[error("conntrack {args}: {message}")]
    Failed { args: String, message: String },
}

/// Deletes the flows of each flush. Deleting none is not an error.
pub fn flush(flushes: &[Flush]) -> Result<(), ConntrackError> {
    for flush in flushes {
        let args = flush.args();
        let out =
            Command::new("conntrack").args(&args).output().map_err(ConntrackError::Missing)?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        // It exits 1 when nothing matched ("0 flow entries have been deleted").
        if !out.status.success() && !stderr.contains("0 flow entries") {
            return Err(ConntrackError::Failed {
                args: args.join(" "),
                message: stderr.trim().to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Endpoint, ServicePortName};

    fn port(protocol: Protocol, endpoints: &[u8]) -> ServicePort {
        ServicePort {
            name: ServicePortName { namespace: "ns".into(), name: "dns".into(), port: "".into() },
            protocol,
            port: 53,
            cluster_ip: Some(Ipv4Addr::new(10, 43, 0, 10)),
            node_port: Some(30053),
            external_ips: vec![Ipv4Addr::new(192, 0, 2, 9)],
            load_balancer_ips: Vec::new(),
            affinity_seconds: None,
            external_local: false,
            internal_local: false,
            endpoints: endpoints
                .iter()
                .map(|&last| Endpoint {
                    ip: Ipv4Addr::new(10, 42, 0, last),
                    port: 5353,
                    ready: true,
                    serving: true,
                    terminating: false,
                    local: true,
                })
                .collect(),
        }
    }

    #[test]
    fn flows_to_endpoints_that_left_are_flushed() {
        let gone = Ipv4Addr::new(10, 42, 0, 1);
        let flushes = stale(Some(&port(Protocol::Udp, &[1, 2])), Some(&port(Protocol::Udp, &[2])));
        assert_eq!(
            flushes,
            [
                Flush::Nat { address: Ipv4Addr::new(10, 43, 0, 10), port: 53, endpoint: gone },
                Flush::Nat { address: Ipv4Addr::new(192, 0, 2, 9), port: 53, endpoint: gone },
                Flush::NodePortNat { port: 30053, endpoint: gone },
            ]
        );
        assert_eq!(
            flushes[0].args().join(" "),
            "-D -p udp --orig-dst 10.43.0.10 --orig-port-dst 53 --dst-nat 10.42.0.1"
        );
        // The whole Service goes: each of its endpoints' flows.
        assert_eq!(stale(Some(&port(Protocol::Udp, &[1, 2])), None).len(), 6);
        // A new Service with endpoints: flows from before it was programmed go.
        assert_eq!(stale(None, Some(&port(Protocol::Udp, &[3]))).len(), 3);
        // TCP and unchanged ports: nothing.
        assert!(stale(Some(&port(Protocol::Tcp, &[1])), Some(&port(Protocol::Tcp, &[]))).is_empty());
        assert!(
            stale(Some(&port(Protocol::Udp, &[1])), Some(&port(Protocol::Udp, &[1]))).is_empty()
        );
    }

    #[test]
    fn a_port_that_gets_its_first_endpoint_forgets_its_rejected_flows() {
        let flushes = stale(Some(&port(Protocol::Udp, &[])), Some(&port(Protocol::Udp, &[3])));
        assert_eq!(
            flushes,
            [
                Flush::Address { address: Ipv4Addr::new(10, 43, 0, 10), port: 53 },
                Flush::Address { address: Ipv4Addr::new(192, 0, 2, 9), port: 53 },
                Flush::NodePort { port: 30053 },
            ]
        );
    }
}
