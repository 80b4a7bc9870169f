//! The rkube service proxy: kube-proxy's iptables mode. It watches Services and
//! EndpointSlices through the API server's public API ([`proxier`], reading them with
//! [`model`]), writes the nat and filter chains ([`rules`]) with one `iptables-restore` call
//! per sync ([`iptables`]), and routes the service CIDR to a local dummy device
//! ([`device`]) so that a packet to a cluster IP without rules never leaves the machine.
//! The cluster DNS server ([`dns`]) runs next to it on each node.

pub mod conntrack;
pub mod device;
pub mod dns;
pub mod iptables;
pub mod metrics;
pub mod model;
pub mod proxier;
pub mod rules;
pub mod ruleset;
