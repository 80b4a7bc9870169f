//! Endpoints: each subset's addresses (IP, hostname, node name) and ports, with upstream's
//! (v1.33) messages and field paths (`ValidateEndpoints`, the same on create and update).
//! Metadata is checked by the caller.

use serde_json::{json, Value};

use crate::validation::net::{ip_legacy, non_special_ip};
use crate::validation::values::{
    app_protocol, dns_label, items, node_name, protocol, range_msg, str_of,
};
use crate::validation::FieldError;

/// Endpoints, on create and update alike (upstream checks the new object only).
pub fn endpoints(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, subset) in items(&obj["subsets"]).iter().enumerate() {
        let at = format!("subsets[{i}]");
        let addresses = items(&subset["addresses"]);
        let not_ready = items(&subset["notReadyAddresses"]);
        if addresses.is_empty() && not_ready.is_empty() {
            errors
                .push(FieldError::required(&at, "must specify `addresses` or `notReadyAddresses`"));
        }
        for (j, address) in addresses.iter().enumerate() {
            errors.extend(endpoint_address(address, &format!("{at}.addresses[{j}]")));
        }
        for (j, address) in not_ready.iter().enumerate() {
            errors.extend(endpoint_address(address, &format!("{at}.notReadyAddresses[{j}]")));
        }
        let ports = items(&subset["ports"]);
        for (j, port) in ports.iter().enumerate() {
            errors.extend(endpoint_port(port, ports.len() > 1, &format!("{at}.ports[{j}]")));
        }
    }
    errors
}

/// One address: the IP (any form the legacy parser reads), hostname, nodeName, then the IP's
/// range (upstream's `ValidateNonSpecialIP`).
fn endpoint_address(address: &Value, at: &str) -> Vec<FieldError> {
    let ip_field = format!("{at}.ip");
    let ip = str_of(&address["ip"]);
    let mut errors = ip_legacy(&ip_field, ip);
    let hostname = str_of(&address["hostname"]);
    if !hostname.is_empty() {
        errors.extend(dns_label(&format!("{at}.hostname"), hostname));
    }
    if let Some(node) = address["nodeName"].as_str() {
        errors.extend(node_name(&format!("{at}.nodeName"), node));
    }
    errors.extend(non_special_ip(&ip_field, ip));
    errors
}

/// One port of a subset: a name (required when the subset has several), the number, the
/// protocol and the appProtocol.
fn endpoint_port(port: &Value, require_name: bool, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = str_of(&port["name"]);
    if require_name && name.is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), ""));
    } else if !name.is_empty() {
        errors.extend(dns_label(&format!("{at}.name"), name));
    }
    let number = port["port"].as_i64().unwrap_or(0);
    if !(1..=65535).contains(&number) {
        errors.push(FieldError::invalid(
            format!("{at}.port"),
            &json!(number),
            &range_msg(1, 65535),
        ));
    }
    errors.extend(protocol(&format!("{at}.protocol"), &port["protocol"]));
    errors.extend(app_protocol(&format!("{at}.appProtocol"), &port["appProtocol"]));
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    #[test]
    fn endpoints_addresses_and_ports() {
        let good = json!({"subsets": [{
            "addresses": [{"ip": "10.1.2.3", "hostname": "web-0", "nodeName": "node-1",
                "targetRef": {"kind": "Pod", "name": "web-0", "namespace": "default"}}],
            "notReadyAddresses": [{"ip": "2001:db8::5"}],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"},
                {"name": "dns", "port": 53, "protocol": "UDP", "appProtocol": "kubernetes.io/h2c"}]}]});
        assert!(endpoints(&good, None).is_empty());
        assert!(endpoints(&good, Some(&good)).is_empty());
        // Headless: addresses without ports; a lone port needs no name.
        assert!(
            endpoints(&json!({"subsets": [{"addresses": [{"ip": "010.1.2.3"}]}]}), None).is_empty()
        );
        assert!(endpoints(
            &json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 1, "protocol": "SCTP"}]}]}),
            None
        )
        .is_empty());

        let bad = json!({"subsets": [
            {"ports": [{"name": "a", "port": 80, "protocol": "TCP"}]},
            {"addresses": [{"ip": "1.2.3", "hostname": "Web.0", "nodeName": "Node_1"},
                    {"ip": "127.0.0.1"}, {"ip": "::ffff:169.254.1.1"}, {"ip": "0.0.0.0"}],
                "notReadyAddresses": [{"ip": "ff02::1"}, {"ip": "224.0.0.5"}, {"ip": "fe80::1"}],
                "ports": [{"port": 0, "protocol": "XTP"}, {"name": "Web", "port": 70000, "protocol": "TCP", "appProtocol": "a/b/c"}, {"name": "c"}]}]});
        assert_eq!(
            lines(endpoints(&bad, None)),
            [
                "subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`".to_string(),
                "subsets[1].addresses[0].ip: Invalid value: \"1.2.3\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into(),
                format!("subsets[1].addresses[0].hostname: Invalid value: \"Web.0\": {LABEL_MSG}"),
                format!("subsets[1].addresses[0].nodeName: Invalid value: \"Node_1\": {SUBDOMAIN_MSG}"),
                "subsets[1].addresses[0].ip: Invalid value: \"1.2.3\": must be a valid IP address".into(),
                "subsets[1].addresses[1].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)".into(),
                "subsets[1].addresses[2].ip: Invalid value: \"::ffff:169.254.1.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)".into(),
                "subsets[1].addresses[3].ip: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)".into(),
                "subsets[1].notReadyAddresses[0].ip: Invalid value: \"ff02::1\": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".into(),
                "subsets[1].notReadyAddresses[1].ip: Invalid value: \"224.0.0.5\": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".into(),
                "subsets[1].notReadyAddresses[2].ip: Invalid value: \"fe80::1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)".into(),
                "subsets[1].ports[0].name: Required value".into(),
                "subsets[1].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive".into(),
                "subsets[1].ports[0].protocol: Unsupported value: \"XTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".into(),
                format!("subsets[1].ports[1].name: Invalid value: \"Web\": {LABEL_MSG}"),
                "subsets[1].ports[1].port: Invalid value: 70000: must be between 1 and 65535, inclusive".into(),
                "subsets[1].ports[1].appProtocol: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into(),
                "subsets[1].ports[2].port: Invalid value: 0: must be between 1 and 65535, inclusive".into(),
                "subsets[1].ports[2].protocol: Required value".into(),
            ]
        );
    }
}
