//! Endpoints by identity, as upstream's `EndpointSet`: an endpoint is the same one when its
//! addresses, hostname and target (namespace and name) are; its other fields (conditions,
//! node, zone, target uid) may change in place. Both slice reconcilers keep their desired
//! endpoints in one, and compare them with what existing slices hold.
//!
//! Also the port sets slices are grouped by ([`PortKey`]): endpoints whose ports resolve
//! differently (a named target port on different pods) go to different slices.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort};

/// What makes an endpoint the same endpoint.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Identity {
    addresses: Vec<String>,
    hostname: String,
    target_namespace: String,
    target_name: String,
}

fn identity(endpoint: &Endpoint) -> Identity {
    let mut addresses = endpoint.addresses.clone();
    addresses.sort();
    let target = endpoint.target_ref.as_ref();
    Identity {
        addresses,
        hostname: endpoint.hostname.clone().unwrap_or_default(),
        target_namespace: target.and_then(|t| t.namespace.clone()).unwrap_or_default(),
        target_name: target.and_then(|t| t.name.clone()).unwrap_or_default(),
    }
}

/// A set of endpoints by identity; taken out in a stable order (by addresses).
#[derive(Debug, Clone, Default)]
pub struct EndpointSet(BTreeMap<Identity, Endpoint>);

impl EndpointSet {
    /// Adds `endpoint`, replacing one with the same identity.
    pub fn insert(&mut self, endpoint: Endpoint) {
        self.0.insert(identity(&endpoint), endpoint);
    }

    /// The endpoint with `endpoint`'s identity.
    pub fn get(&self, endpoint: &Endpoint) -> Option<&Endpoint> {
        self.0.get(&identity(endpoint))
    }

    /// Removes the endpoint with `endpoint`'s identity.
    pub fn remove(&mut self, endpoint: &Endpoint) {
        self.0.remove(&identity(endpoint));
    }

    /// Takes one endpoint out.
    pub fn pop(&mut self) -> Option<Endpoint> {
        self.0.pop_first().map(|(_, e)| e)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Whether two endpoints of the same identity agree on everything else that is compared
/// (upstream's `EndpointsEqualBeyondHash`): node, zone, the three conditions, and the target
/// (its resourceVersion aside). Hints are looked after separately.
pub fn same_beyond_identity(a: &Endpoint, b: &Endpoint) -> bool {
    let conditions = |e: &Endpoint| e.conditions.clone().unwrap_or_default();
    let (ca, cb): (EndpointConditions, EndpointConditions) = (conditions(a), conditions(b));
    let target = |e: &Endpoint| {
        e.target_ref.clone().map(|t| ObjectReference { resource_version: None, ..t })
    };
    a.node_name == b.node_name
        && a.zone == b.zone
        && ca.ready == cb.ready
        && ca.serving == cb.serving
        && ca.terminating == cb.terminating
        && target(a) == target(b)
}

/// A set of ports in a canonical order, to group slices by.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PortKey(Vec<PortFields>);

/// A port's name, number, protocol and app protocol.
type PortFields = (Option<String>, Option<i32>, Option<String>, Option<String>);

impl PortKey {
    pub fn of(ports: &[EndpointPort]) -> PortKey {
        let mut key: Vec<_> = ports
            .iter()
            .map(|p| (p.name.clone(), p.port, p.protocol.clone(), p.app_protocol.clone()))
            .collect();
        key.sort();
        PortKey(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn endpoint(value: serde_json::Value) -> Endpoint {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn identity_is_addresses_hostname_and_target() {
        let mut set = EndpointSet::default();
        set.insert(endpoint(json!({
            "addresses": ["10.0.0.2", "10.0.0.1"],
            "targetRef": {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "u1"},
            "conditions": {"ready": true},
        })));
        // Same identity, other conditions and uid: found.
        let changed = endpoint(json!({
            "addresses": ["10.0.0.1", "10.0.0.2"],
            "targetRef": {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "u2"},
            "conditions": {"ready": false},
        }));
        let found = set.get(&changed).expect("same identity").clone();
        assert!(!same_beyond_identity(&found, &changed));
        let other_host = endpoint(json!({"addresses": ["10.0.0.1", "10.0.0.2"], "hostname": "h",
            "targetRef": {"kind": "Pod", "namespace": "ns", "name": "a"}}));
        assert!(set.get(&other_host).is_none());
        set.remove(&changed);
        assert!(set.is_empty());
    }

    #[test]
    fn resource_versions_of_targets_do_not_count() {
        let a = endpoint(
            json!({"addresses": ["10.0.0.1"], "targetRef": {"name": "a", "resourceVersion": "1"}}),
        );
        let b = endpoint(
            json!({"addresses": ["10.0.0.1"], "targetRef": {"name": "a", "resourceVersion": "2"}}),
        );
        assert!(same_beyond_identity(&a, &b));
    }

    #[test]
    fn port_keys_ignore_order() {
        let p = |name: &str, port: i32| EndpointPort {
            name: Some(name.into()),
            port: Some(port),
            protocol: Some("TCP".into()),
            app_protocol: None,
        };
        assert_eq!(PortKey::of(&[p("a", 1), p("b", 2)]), PortKey::of(&[p("b", 2), p("a", 1)]));
        assert_ne!(PortKey::of(&[p("a", 1)]), PortKey::of(&[p("a", 2)]));
    }
}
