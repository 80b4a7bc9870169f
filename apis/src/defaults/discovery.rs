//! Defaults of `discovery.k8s.io/v1` (`pkg/apis/discovery/v1/defaults.go` upstream): EndpointSlices.

use serde_json::{json, Value};

use super::{default, items};

/// An EndpointSlice's defaults.
pub fn endpoint_slice(obj: &mut Value) {
    for port in items(obj, "ports") {
        default(port, "name", json!(""));
        default(port, "protocol", json!("TCP"));
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::defaulted_in as defaulted;
    use super::*;

    #[test]
    fn endpoint_slice_ports_get_a_name_and_protocol() {
        let slice = defaulted(
            "discovery.k8s.io",
            "v1",
            "endpointslices",
            json!({"addressType": "IPv4", "endpoints": [], "ports": [{"port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}]}),
        );
        assert_eq!(
            slice["ports"],
            json!([{"port": 80, "name": "", "protocol": "TCP"}, {"name": "dns", "port": 53, "protocol": "UDP"}])
        );
        let slice =
            defaulted("discovery.k8s.io", "v1", "endpointslices", json!({"addressType": "IPv4"}));
        assert_eq!(slice, json!({"addressType": "IPv4"}));
    }
}
