//! Validation of discovery.k8s.io/v1: EndpointSlices, with upstream's (v1.33) messages and
//! field paths (`ValidateEndpointSlice{Create,Update}`): the address type, each endpoint's
//! addresses, hostname, node name and zone hints, the ports, and the limits on their counts.
//!
//! Metadata is checked by the caller. Fields upstream drops before validating (the
//! `deprecatedTopology` on v1 writes and `hints.forNodes`, its feature gate off as it is by
//! default in v1.33) are not checked here.

use std::collections::HashSet;
use std::net::IpAddr;

use serde_json::Value;

use super::net::{non_special_ip, parse_ip_sloppy};
use super::values::{
    app_protocol, dns_label, items, node_name, one_of, problems_at, protocol, str_of, text,
    IMMUTABLE,
};
use super::{label_value_problems, name_problems, FieldError, NameRule};

const ADDRESS_TYPES: [&str; 3] = ["FQDN", "IPv4", "IPv6"];
const MAX_SLICE_ENDPOINTS: usize = 1000;
const MAX_SLICE_ADDRESSES: usize = 100;
const MAX_SLICE_PORTS: usize = 20000;
const MAX_ZONE_HINTS: usize = 8;

/// Upstream's `field.TooMany`.
fn too_many(field: &str, actual: usize, max: usize) -> FieldError {
    FieldError {
        reason: "FieldValueTooMany",
        message: format!("Too many: {actual}: must have at most {max} items"),
        field: field.to_string(),
    }
}

/// An EndpointSlice: the address type, its endpoints, its ports; on update the address type
/// may not change.
pub fn endpoint_slice(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let address_type = &obj["addressType"];
    let kind = str_of(address_type);
    if kind.is_empty() {
        errors.push(FieldError::required("addressType", ""));
    } else {
        errors.extend(one_of("addressType", address_type, &ADDRESS_TYPES));
    }
    errors.extend(slice_endpoints(items(&obj["endpoints"]), kind));
    errors.extend(slice_ports(items(&obj["ports"])));
    if let Some(old) = old {
        if kind != str_of(&old["addressType"]) {
            errors.push(FieldError::invalid("addressType", &text(kind), IMMUTABLE));
        }
    }
    errors
}

fn slice_endpoints(endpoints: &[Value], address_type: &str) -> Vec<FieldError> {
    if endpoints.len() > MAX_SLICE_ENDPOINTS {
        return vec![too_many("endpoints", endpoints.len(), MAX_SLICE_ENDPOINTS)];
    }
    let mut errors = Vec::new();
    for (i, endpoint) in endpoints.iter().enumerate() {
        let at = format!("endpoints[{i}]");
        let addresses_at = format!("{at}.addresses");
        let addresses = items(&endpoint["addresses"]);
        if addresses.is_empty() {
            errors.push(FieldError::required(&addresses_at, "must contain at least 1 address"));
        } else if addresses.len() > MAX_SLICE_ADDRESSES {
            errors.push(too_many(&addresses_at, addresses.len(), MAX_SLICE_ADDRESSES));
        }
        for (j, address) in addresses.iter().enumerate() {
            errors.extend(slice_address(
                &format!("{addresses_at}[{j}]"),
                str_of(address),
                address_type,
            ));
        }
        if let Some(node) = endpoint["nodeName"].as_str() {
            errors.extend(node_name(&format!("{at}.nodeName"), node));
        }
        if let Some(hostname) = endpoint["hostname"].as_str() {
            errors.extend(dns_label(&format!("{at}.hostname"), hostname));
        }
        if endpoint["hints"].is_object() {
            errors.extend(zone_hints(&endpoint["hints"], &format!("{at}.hints")));
        }
    }
    errors
}

/// One address, as its slice's address type wants it (an unknown type checks nothing).
fn slice_address(field: &str, address: &str, address_type: &str) -> Vec<FieldError> {
    let family = |ip: IpAddr| match ip {
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => 6,
        _ => 4,
    };
    match address_type {
        "IPv4" | "IPv6" => {
            let (want, message) = if address_type == "IPv4" {
                (4, "must be a valid IPv4 address")
            } else {
                (6, "must be a valid IPv6 address")
            };
            let mut errors = Vec::new();
            if parse_ip_sloppy(address).map(family) != Some(want) {
                errors.push(FieldError::invalid(field, &text(address), message));
            }
            errors.extend(non_special_ip(field, address));
            errors
        }
        "FQDN" => fqdn(field, address),
        _ => Vec::new(),
    }
}

/// Upstream's `IsFullyQualifiedDomainName`: a subdomain (a trailing dot allowed) of at least
/// two labels; only the first problem is reported.
fn fqdn(field: &str, name: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required(field, "")];
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let problems = name_problems(name, NameRule::Subdomain);
    if !problems.is_empty() {
        return vec![FieldError::invalid(field, &text(name), &problems.join(","))];
    }
    if name.split('.').count() < 2 {
        return vec![FieldError::invalid(
            field,
            &text(name),
            "should be a domain with at least two segments separated by dots",
        )];
    }
    for label in name.split('.') {
        let problems = name_problems(label, NameRule::Label);
        if !problems.is_empty() {
            return vec![FieldError::invalid(field, &text(label), &problems.join(","))];
        }
    }
    Vec::new()
}

/// `hints.forZones`: at most 8, each name once and a label value.
fn zone_hints(hints: &Value, at: &str) -> Vec<FieldError> {
    let zones_at = format!("{at}.forZones");
    let zones = items(&hints["forZones"]);
    if zones.len() > MAX_ZONE_HINTS {
        return vec![too_many(&zones_at, zones.len(), MAX_ZONE_HINTS)];
    }
    let mut errors = Vec::new();
    let mut seen = HashSet::new();
    for (i, zone) in zones.iter().enumerate() {
        let field = format!("{zones_at}[{i}].name");
        let name = str_of(&zone["name"]);
        if !seen.insert(name) {
            errors.push(FieldError::duplicate(&field, &text(name)));
        }
        errors.extend(problems_at(&field, name, label_value_problems(name)));
    }
    errors
}

/// The slice's ports: at most 20000, names DNS labels and unique, protocol and appProtocol.
fn slice_ports(ports: &[Value]) -> Vec<FieldError> {
    if ports.len() > MAX_SLICE_PORTS {
        return vec![too_many("ports", ports.len(), MAX_SLICE_PORTS)];
    }
    let mut errors = Vec::new();
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let at = format!("ports[{i}]");
        let name = str_of(&port["name"]);
        if !name.is_empty() {
            errors.extend(dns_label(&format!("{at}.name"), name));
        }
        if !names.insert(name) {
            errors.push(FieldError::duplicate(format!("{at}.name"), &text(name)));
        }
        errors.extend(protocol(&format!("{at}.protocol"), &port["protocol"]));
        errors.extend(app_protocol(&format!("{at}.appProtocol"), &port["appProtocol"]));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    fn slice(address_type: &str, endpoints: Value, ports: Value) -> Value {
        let mut obj = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-abc", "namespace": "default"},
            "addressType": address_type, "endpoints": endpoints, "ports": ports});
        crate::defaults::apply(
            crate::resources::Resources::builtin()
                .get("discovery.k8s.io", "v1", "endpointslices")
                .unwrap(),
            &mut obj,
        );
        obj
    }

    #[test]
    fn endpoint_slices() {
        let good = slice(
            "IPv4",
            json!([{"addresses": ["10.1.0.7"], "conditions": {"ready": true}, "hostname": "web-0",
                "nodeName": "node-1", "zone": "us-east-1a", "targetRef": {"kind": "Pod", "name": "web-0"},
                "hints": {"forZones": [{"name": "us-east-1a"}]}}]),
            json!([{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}]),
        );
        assert!(endpoint_slice(&good, None).is_empty());
        assert!(endpoint_slice(&good, Some(&good)).is_empty());
        // No endpoints and one unnamed port is fine; so is an address type upstream does not
        // know on its addresses (the type itself is refused).
        assert!(endpoint_slice(&slice("IPv6", json!([]), json!([{"port": 80}])), None).is_empty());
        assert!(endpoint_slice(
            &slice("FQDN", json!([{"addresses": ["example.com.", "a.b.c"]}]), json!([])),
            None
        )
        .is_empty());

        let bad = slice(
            "IPv4",
            json!([
                {"addresses": []},
                {"addresses": ["fd00::1", "127.0.0.1", "1.2.3", "::ffff:10.0.0.1"], "nodeName": "Node_1",
                    "hostname": "a.b", "hints": {"forZones": [{"name": "z"}, {"name": "z"}, {"name": "-x"}]}},
            ]),
            json!([{"name": "http", "port": 80}, {"name": "http", "protocol": "XTP"},
                {"name": "Web", "appProtocol": "x/"}]),
        );
        assert_eq!(
            lines(endpoint_slice(&bad, None)),
            [
                "endpoints[0].addresses: Required value: must contain at least 1 address".to_string(),
                "endpoints[1].addresses[0]: Invalid value: \"fd00::1\": must be a valid IPv4 address".into(),
                "endpoints[1].addresses[1]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)".into(),
                "endpoints[1].addresses[2]: Invalid value: \"1.2.3\": must be a valid IPv4 address".into(),
                "endpoints[1].addresses[2]: Invalid value: \"1.2.3\": must be a valid IP address".into(),
                format!("endpoints[1].nodeName: Invalid value: \"Node_1\": {SUBDOMAIN_MSG}"),
                format!("endpoints[1].hostname: Invalid value: \"a.b\": {LABEL_MSG}"),
                "endpoints[1].hints.forZones[1].name: Duplicate value: \"z\"".into(),
                "endpoints[1].hints.forZones[2].name: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into(),
                "ports[1].name: Duplicate value: \"http\"".into(),
                "ports[1].protocol: Unsupported value: \"XTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".into(),
                format!("ports[2].name: Invalid value: \"Web\": {LABEL_MSG}"),
                "ports[2].appProtocol: Invalid value: \"x/\": name part must be non-empty".into(),
                "ports[2].appProtocol: Invalid value: \"x/\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into(),
            ]
        );
        assert_eq!(
            lines(endpoint_slice(
                &slice("IPv6", json!([{"addresses": ["10.0.0.1", "::ffff:10.0.0.1", "::1"]}]), json!([])),
                None
            )),
            [
                "endpoints[0].addresses[0]: Invalid value: \"10.0.0.1\": must be a valid IPv6 address",
                "endpoints[0].addresses[1]: Invalid value: \"::ffff:10.0.0.1\": must be a valid IPv6 address",
                "endpoints[0].addresses[2]: Invalid value: \"::1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            ]
        );
        assert_eq!(
            lines(endpoint_slice(
                &slice("FQDN", json!([{"addresses": ["example", "Example.com.", ""]}]), json!([])),
                None
            )),
            [
                "endpoints[0].addresses[0]: Invalid value: \"example\": should be a domain with at least two segments separated by dots".to_string(),
                format!("endpoints[0].addresses[1]: Invalid value: \"Example.com\": {SUBDOMAIN_MSG}"),
                "endpoints[0].addresses[2]: Required value".into(),
            ]
        );
        assert_eq!(
            lines(endpoint_slice(&slice("", json!([]), json!([])), None)),
            ["addressType: Required value"]
        );
        assert_eq!(
            lines(endpoint_slice(&slice("IP", json!([]), json!([])), None)),
            ["addressType: Unsupported value: \"IP\": supported values: \"FQDN\", \"IPv4\", \"IPv6\""]
        );
        let v6 = slice("IPv6", json!([]), json!([]));
        assert_eq!(
            lines(endpoint_slice(&v6, Some(&good))),
            ["addressType: Invalid value: \"IPv6\": field is immutable"]
        );
    }

    #[test]
    fn endpoint_slice_counts() {
        let many: Vec<Value> = (0..1001).map(|_| json!({"addresses": ["10.0.0.1"]})).collect();
        let addresses: Vec<String> =
            (0..101).map(|i| format!("10.0.{}.{}", i / 250, i % 250 + 1)).collect();
        let zones: Vec<Value> = (0..9).map(|i| json!({"name": format!("z{i}")})).collect();
        assert_eq!(
            lines(endpoint_slice(&slice("IPv4", json!(many), json!([])), None)),
            ["endpoints: Too many: 1001: must have at most 1000 items"]
        );
        assert_eq!(
            lines(endpoint_slice(
                &slice(
                    "IPv4",
                    json!([{"addresses": addresses, "hints": {"forZones": zones}}]),
                    json!([])
                ),
                None
            )),
            [
                "endpoints[0].addresses: Too many: 101: must have at most 100 items",
                "endpoints[0].hints.forZones: Too many: 9: must have at most 8 items",
            ]
        );
        let ports: Vec<Value> =
            (0..20001).map(|i| json!({"name": format!("p{i}"), "port": 1})).collect();
        assert_eq!(
            lines(endpoint_slice(&slice("IPv4", json!([]), json!(ports)), None)),
            ["ports: Too many: 20001: must have at most 20000 items"]
        );
    }
}
