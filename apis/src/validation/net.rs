//! IP addresses and CIDRs as upstream's `k8s.io/apimachinery/pkg/util/validation/ip.go`
//! checks them. Fields that predate strict checking (a Service's `clusterIP`, a pod's IPs,
//! a node's `podCIDR`, ...) use the `legacy` checks, which in v1.33 (the
//! `StrictIPCIDRValidation` gate off) accept IPv4 octets with leading zeros and CIDRs with
//! host bits set; newer fields (an IPAddress's name, a ServiceCIDR's ranges) use the strict
//! ones, which also want the canonical form.

use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;
use serde_json::Value;

use super::FieldError;

const IP_EXAMPLE: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
const CIDR_EXAMPLE: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// Go's `netutils.ParseIPSloppy`: the standard forms, and IPv4 octets with leading zeros
/// (read as decimal).
pub fn parse_ip_sloppy(s: &str) -> Option<IpAddr> {
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    let octets: Vec<&str> = s.split('.').collect();
    if octets.len() != 4 {
        return None;
    }
    let mut parsed = [0u8; 4];
    for (slot, octet) in parsed.iter_mut().zip(&octets) {
        if octet.is_empty() || octet.len() > 3 || !octet.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *slot = octet.parse().ok()?;
    }
    Some(IpAddr::V4(Ipv4Addr::from(parsed)))
}

/// Go's `net.IP.String()`: an IPv4-mapped IPv6 address prints as IPv4.
fn go_ip_string(ip: IpAddr) -> String {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6.to_string(),
        },
        v4 => v4.to_string(),
    }
}

fn is_4in6(ip: &IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// `IsValidIPForLegacyField` as v1.33 calls it: any address `ParseIPSloppy` reads.
pub fn ip_legacy(field: &str, value: &str) -> Vec<FieldError> {
    match parse_ip_sloppy(value) {
        Some(_) => Vec::new(),
        None => vec![FieldError::invalid(field, &Value::from(value), IP_EXAMPLE)],
    }
}

/// The `ingress` entries of a load balancer's status at `field` (`status.loadBalancer`),
/// as upstream's `ValidateLoadBalancerStatus` (a Service's, `with_ip_mode`) and
/// `ValidateIngressLoadBalancerStatus` check them: each `ip` an address, a Service's
/// `ipMode` given with an `ip` only and one of VIP and Proxy (required with an `ip`: the
/// defaults give it), each `hostname` a DNS-1123 subdomain and not an address.
pub(crate) fn load_balancer_ingress(
    field: &str,
    status: &Value,
    with_ip_mode: bool,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let entries = status["ingress"].as_array().map(Vec::as_slice).unwrap_or_default();
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("{field}.ingress[{i}]");
        let ip = entry["ip"].as_str().unwrap_or("");
        if !ip.is_empty() {
            errors.extend(ip_legacy(&format!("{at}.ip"), ip));
        }
        if with_ip_mode {
            match entry["ipMode"].as_str() {
                None if !ip.is_empty() => errors.push(FieldError::required(
                    format!("{at}.ipMode"),
                    "must be specified when `ip` is set",
                )),
                Some(_) if ip.is_empty() => errors.push(FieldError::forbidden(
                    format!("{at}.ipMode"),
                    "may not be specified when `ip` is not set",
                )),
                Some(mode) if !matches!(mode, "Proxy" | "VIP") => {
                    errors.push(FieldError::unsupported(
                        format!("{at}.ipMode"),
                        &Value::from(mode),
                        &["Proxy", "VIP"],
                    ))
                }
                _ => {}
            }
        }
        let hostname = entry["hostname"].as_str().unwrap_or("");
        if !hostname.is_empty() {
            let shown = Value::from(hostname);
            for problem in super::name_problems(hostname, super::NameRule::Subdomain) {
                errors.push(FieldError::invalid(format!("{at}.hostname"), &shown, &problem));
            }
            if parse_ip_sloppy(hostname).is_some() {
                errors.push(FieldError::invalid(
                    format!("{at}.hostname"),
                    &shown,
                    "must be a DNS name, not an IP address",
                ));
            }
        }
    }
    errors
}

/// `IsValidIP`: a well-formed address in canonical form.
pub fn ip_strict(field: &str, value: &str) -> Vec<FieldError> {
    let shown = Value::from(value);
    let Some(ip) = parse_ip_sloppy(value) else {
        return vec![FieldError::invalid(field, &shown, IP_EXAMPLE)];
    };
    let mut errors = Vec::new();
    if value.parse::<IpAddr>().is_err() {
        errors.push(FieldError::invalid(field, &shown, "must not have leading 0s"));
    }
    if is_4in6(&ip) {
        errors.push(FieldError::invalid(field, &shown, "must not be an IPv4-mapped IPv6 address"));
    }
    let canonical = go_ip_string(ip);
    if errors.is_empty() && value != canonical {
        errors.push(FieldError::invalid(
            field,
            &shown,
            &format!("must be in canonical form (\"{canonical}\")"),
        ));
    }
    errors
}

/// A CIDR as `ParseCIDRSloppy` reads it: the address, the prefix length, and whether both
/// parts were in the strict form (no leading zeros).
fn parse_cidr_sloppy(s: &str) -> Option<(IpAddr, u8, bool)> {
    let (ip, len) = s.split_once('/')?;
    let addr = parse_ip_sloppy(ip)?;
    if len.is_empty() || len.len() > 3 || !len.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let prefix: u8 = len.parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if prefix > max {
        return None;
    }
    let strict = ip.parse::<IpAddr>().is_ok() && (len == "0" || !len.starts_with('0'));
    Some((addr, prefix, strict))
}

/// `IsValidCIDRForLegacyField` as v1.33 calls it: any CIDR `ParseCIDRSloppy` reads.
pub fn cidr_legacy(field: &str, value: &str) -> Vec<FieldError> {
    match parse_cidr_sloppy(value) {
        Some(_) => Vec::new(),
        None => vec![FieldError::invalid(field, &Value::from(value), CIDR_EXAMPLE)],
    }
}

/// `IsValidCIDR`: a subnet (no bits beyond the prefix) in canonical form.
pub fn cidr_strict(field: &str, value: &str) -> Vec<FieldError> {
    let shown = Value::from(value);
    let Some((ip, prefix, strict)) = parse_cidr_sloppy(value) else {
        return vec![FieldError::invalid(field, &shown, CIDR_EXAMPLE)];
    };
    if !strict {
        return vec![FieldError::invalid(
            field,
            &shown,
            "must not have leading 0s in IP or prefix length",
        )];
    }
    if is_4in6(&ip) {
        return vec![FieldError::invalid(
            field,
            &shown,
            "must not have an IPv4-mapped IPv6 address",
        )];
    }
    let network = IpNet::new(ip, prefix).map_or(ip, |net| net.network());
    if network != ip {
        return vec![FieldError::invalid(
            field,
            &shown,
            "must not have bits set beyond the prefix length",
        )];
    }
    let canonical = format!("{}/{prefix}", go_ip_string(network));
    if value != canonical {
        return vec![FieldError::invalid(
            field,
            &shown,
            &format!("must be in canonical form (\"{canonical}\")"),
        )];
    }
    Vec::new()
}

/// Upstream's `ValidateNonSpecialIP` (endpoint addresses and a Service's external IPs): an
/// address `ParseIPSloppy` reads that is not unspecified, loopback, link-local or link-local
/// multicast. IPv4-mapped IPv6 addresses count as IPv4, as Go's `net.IP` methods see them.
pub fn non_special_ip(field: &str, value: &str) -> Vec<FieldError> {
    let shown = Value::from(value);
    let Some(ip) = parse_ip_sloppy(value) else {
        return vec![FieldError::invalid(field, &shown, "must be a valid IP address")];
    };
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    let (link_local, link_local_multicast) = match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (o[0] == 169 && o[1] == 254, o[0] == 224 && o[1] == 0 && o[2] == 0)
        }
        IpAddr::V6(v6) => {
            let o = v6.octets();
            (o[0] == 0xfe && o[1] & 0xc0 == 0x80, o[0] == 0xff && o[1] & 0x0f == 0x02)
        }
    };
    let unspecified = format!("may not be unspecified ({value})");
    let checks = [
        (ip.is_unspecified(), unspecified.as_str()),
        (ip.is_loopback(), "may not be in the loopback range (127.0.0.0/8, ::1/128)"),
        (link_local, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"),
        (
            link_local_multicast,
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ),
    ];
    checks
        .into_iter()
        .filter(|(special, _)| *special)
        .map(|(_, detail)| FieldError::invalid(field, &shown, detail))
        .collect()
}

/// The address family of an address or CIDR `ParseIPSloppy`/`ParseCIDRSloppy` reads: 4 or 6.
pub fn family(value: &str) -> Option<u8> {
    let ip = match value.split_once('/') {
        Some(_) => parse_cidr_sloppy(value).map(|(ip, _, _)| ip),
        None => parse_ip_sloppy(value),
    }?;
    Some(if ip.is_ipv4() || is_4in6(&ip) { 4 } else { 6 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    #[test]
    fn load_balancer_ingress_entries() {
        let status = serde_json::json!({"ingress": [{"ip": "1.2.3.4", "ipMode": "VIP"},
            {"ip": "1.2.3.5"}, {"hostname": "lb.example.com"}, {"hostname": "Bad_Host"}]});
        assert_eq!(
            lines(load_balancer_ingress("s", &status, true)),
            [
                "s.ingress[1].ipMode: Required value: must be specified when `ip` is set",
                "s.ingress[3].hostname: Invalid value: \"Bad_Host\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ]
        );
        // An Ingress's entries have no ipMode.
        assert_eq!(load_balancer_ingress("s", &status, false).len(), 1);
    }

    #[test]
    fn addresses() {
        assert!(ip_legacy("f", "010.002.003.004").is_empty());
        assert!(ip_legacy("f", "2001:DB8::1").is_empty());
        assert_eq!(
            lines(ip_legacy("f", "10.1.2")),
            ["f: Invalid value: \"10.1.2\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
        );
        assert!(ip_strict("f", "10.1.2.3").is_empty() && ip_strict("f", "2001:db8::1").is_empty());
        assert_eq!(
            lines(ip_strict("f", "010.1.2.3")),
            ["f: Invalid value: \"010.1.2.3\": must not have leading 0s"]
        );
        assert_eq!(
            lines(ip_strict("f", "::ffff:1.2.3.4")),
            ["f: Invalid value: \"::ffff:1.2.3.4\": must not be an IPv4-mapped IPv6 address"]
        );
        assert_eq!(
            lines(ip_strict("f", "2001:DB8:0:0::1")),
            ["f: Invalid value: \"2001:DB8:0:0::1\": must be in canonical form (\"2001:db8::1\")"]
        );
        assert_eq!(
            (family("10.0.0.1"), family("fd00::/64"), family("x")),
            (Some(4), Some(6), None)
        );
    }

    #[test]
    fn special_addresses() {
        assert!(
            non_special_ip("f", "10.0.0.1").is_empty() && non_special_ip("f", "fd00::1").is_empty()
        );
        assert_eq!(
            lines(non_special_ip("f", "x")),
            ["f: Invalid value: \"x\": must be a valid IP address"]
        );
        assert_eq!(
            lines(non_special_ip("f", "0.0.0.0")),
            ["f: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)"]
        );
        assert_eq!(
            lines(non_special_ip("f", "::ffff:127.0.0.1")),
            ["f: Invalid value: \"::ffff:127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)"]
        );
        assert_eq!(
            lines(non_special_ip("f", "fe80::1")),
            ["f: Invalid value: \"fe80::1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)"]
        );
        assert_eq!(
            lines(non_special_ip("f", "224.0.0.1")),
            ["f: Invalid value: \"224.0.0.1\": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"]
        );
    }

    #[test]
    fn cidrs() {
        assert!(cidr_legacy("f", "10.1.2.3/8").is_empty());
        assert!(cidr_legacy("f", "10.0.0.0/08").is_empty());
        assert_eq!(
            lines(cidr_legacy("f", "10.0.0.0/33")),
            ["f: Invalid value: \"10.0.0.0/33\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
        );
        assert!(
            cidr_strict("f", "10.0.0.0/8").is_empty() && cidr_strict("f", "fd00::/64").is_empty()
        );
        assert_eq!(
            lines(cidr_strict("f", "10.1.2.3/8")),
            ["f: Invalid value: \"10.1.2.3/8\": must not have bits set beyond the prefix length"]
        );
        assert_eq!(
            lines(cidr_strict("f", "10.0.0.0/08")),
            ["f: Invalid value: \"10.0.0.0/08\": must not have leading 0s in IP or prefix length"]
        );
        assert_eq!(
            lines(cidr_strict("f", "FD00:0::/64")),
            ["f: Invalid value: \"FD00:0::/64\": must be in canonical form (\"fd00::/64\")"]
        );
    }
}
