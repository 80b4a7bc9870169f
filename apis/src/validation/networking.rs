//! networking.k8s.io kinds: Ingress (rules, hosts, paths, backends, TLS, class),
//! IngressClass (controller, parameters), NetworkPolicy (selectors, ports, peers, ipBlocks,
//! policyTypes), IPAddress (parent reference) and ServiceCIDR (ranges), with upstream's
//! (v1.33) messages and field paths (`ValidateIngressCreate`, `ValidateIngressUpdate`,
//! `ValidateIngressClass`, `ValidateNetworkPolicy`, `ValidateIPAddress`,
//! `ValidateServiceCIDR` and their update checks). An IPAddress's name, a canonical IP, is
//! checked with the metadata (`NameRule::IpAddress`).
//!
//! Metadata is checked by the caller; these look at the spec (and, for Ingress, the class
//! annotation). Fields upstream defaults (a NetworkPolicy port's protocol, policyTypes, an
//! IngressClass parameters' scope) are never an error when absent.

use std::net::IpAddr;

use ipnet::{IpNet, Ipv4Net};
use serde_json::{json, Value};

use super::net::{cidr_legacy, cidr_strict, family};
use super::values::{items, label_selector, one_of, port_name_problems, range_msg, str_of, text};
use super::{name_problems, FieldError, NameRule};
use crate::gofmt::{go_quote, go_string_slice};

const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
const MAX_CONTROLLER_LEN: usize = 250;
const WILDCARD_MSG: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const HTTP_PATH_MSG: &str =
    "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')";
const CIDR_MSG: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

fn is_dns_subdomain(s: &str) -> bool {
    name_problems(s, NameRule::Subdomain).is_empty()
}

/// Upstream's `IsDNS1123Subdomain` problems as `Invalid` errors at `field`.
fn subdomain(field: &str, value: &str) -> Vec<FieldError> {
    name_problems(value, NameRule::Subdomain)
        .iter()
        .map(|p| FieldError::invalid(field, &text(value), p))
        .collect()
}

/// `IsWildcardDNS1123Subdomain`: `*.` and a subdomain, 253 characters at most in all.
fn wildcard_subdomain(field: &str, value: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if value.len() > 253 {
        errors.push(FieldError::invalid(
            field,
            &text(value),
            "must be no more than 253 characters",
        ));
    }
    let rest = value.strip_prefix("*.").unwrap_or("*");
    // The regex has no length bound; only the characters count here.
    let pattern_ok = rest.split('.').all(|l| {
        !l.is_empty()
            && l.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    });
    if !pattern_ok {
        errors.push(FieldError::invalid(field, &text(value), WILDCARD_MSG));
    }
    errors
}

// ---------------------------------------------------------------------------------------
// Ingress

#[derive(Clone, Copy, Default)]
struct IngressOptions {
    /// An update keeps accepting a TLS secret name the old object already had wrong.
    allow_invalid_secret_name: bool,
    /// An update keeps accepting wildcard-host rules the old object already had wrong.
    allow_invalid_wildcard_rule: bool,
}

/// An Ingress, on create (`old` is `None`) or update.
pub fn ingress(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let opts = match old {
        None => IngressOptions::default(),
        Some(old) => IngressOptions {
            allow_invalid_secret_name: old["spec"]["tls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| str_of(&t["secretName"]))
                .any(|name| !name.is_empty() && !is_dns_subdomain(name)),
            allow_invalid_wildcard_rule: old["spec"]["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| str_of(&r["host"]).contains('*') && !rule_value(r, "").is_empty()),
        },
    };

    let mut errors = Vec::new();
    let rules = spec["rules"].as_array().map_or(&[][..], Vec::as_slice);
    let default_backend = &spec["defaultBackend"];
    if rules.is_empty() && default_backend.is_null() {
        let shown = if spec["rules"].is_array() {
            "[]networking.IngressRule{}"
        } else {
            "[]networking.IngressRule(nil)"
        };
        errors.push(FieldError::invalid_shown(
            "spec",
            shown,
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if !default_backend.is_null() {
        errors.extend(backend(default_backend, "spec.defaultBackend"));
    }
    for (i, rule) in rules.iter().enumerate() {
        errors.extend(ingress_rule(rule, &format!("spec.rules[{i}]"), opts));
    }
    for (i, tls) in spec["tls"].as_array().into_iter().flatten().enumerate() {
        let at = format!("spec.tls[{i}]");
        for (j, host) in tls["hosts"].as_array().into_iter().flatten().enumerate() {
            let field = format!("{at}.hosts[{j}]");
            let host = str_of(host);
            if host.contains('*') {
                errors.extend(wildcard_subdomain(&field, host));
            } else {
                errors.extend(subdomain(&field, host));
            }
        }
        let secret = str_of(&tls["secretName"]);
        if !secret.is_empty() && !opts.allow_invalid_secret_name {
            errors.extend(subdomain(&format!("{at}.secretName"), secret));
        }
    }
    if let Some(class) = spec["ingressClassName"].as_str() {
        errors.extend(subdomain("spec.ingressClassName", class));
    }
    if old.is_none() {
        let annotation = obj["metadata"]["annotations"][INGRESS_CLASS_ANNOTATION].as_str();
        if let (Some(annotation), Some(class)) = (annotation, spec["ingressClassName"].as_str()) {
            if annotation != class {
                errors.push(FieldError::invalid(
                    format!("annotations.{INGRESS_CLASS_ANNOTATION}"),
                    &text(annotation),
                    "must match `ingressClassName` when both are specified",
                ));
            }
        }
    }
    errors
}

/// One rule: the host (a DNS name or `*.` wildcard, never an IP address), then its paths.
fn ingress_rule(rule: &Value, at: &str, opts: IngressOptions) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let host = str_of(&rule["host"]);
    let field = format!("{at}.host");
    let wildcard = host.contains('*');
    if !host.is_empty() {
        if parse_ip_sloppy(host).is_some() {
            errors.push(FieldError::invalid(
                &field,
                &text(host),
                "must be a DNS name, not an IP address",
            ));
        }
        if wildcard {
            errors.extend(wildcard_subdomain(&field, host));
        } else {
            errors.extend(subdomain(&field, host));
        }
    }
    if !(wildcard && opts.allow_invalid_wildcard_rule) {
        errors.extend(rule_value(rule, at));
    }
    errors
}

/// `validateIngressRuleValue`: an `http` block needs paths, each valid.
fn rule_value(rule: &Value, at: &str) -> Vec<FieldError> {
    let http = &rule["http"];
    if http.is_null() {
        return Vec::new();
    }
    let at = format!("{at}.http");
    let paths = http["paths"].as_array().map_or(&[][..], Vec::as_slice);
    let mut errors = Vec::new();
    if paths.is_empty() {
        errors.push(FieldError::required(format!("{at}.paths"), ""));
    }
    for (i, p) in paths.iter().enumerate() {
        errors.extend(http_path(p, &format!("{at}.paths[{i}]")));
    }
    errors
}

/// One path: pathType required and known, Exact and Prefix paths absolute and clean, then
/// the backend.
fn http_path(p: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let path_type = &p["pathType"];
    if path_type.is_null() {
        errors.push(FieldError::required(format!("{at}.pathType"), "pathType must be specified"));
        return errors;
    }
    let path = str_of(&p["path"]);
    let field = format!("{at}.path");
    let bad = |detail: &str| FieldError::invalid(&field, &text(path), detail);
    match path_type.as_str() {
        Some("Exact" | "Prefix") => {
            if !path.starts_with('/') {
                errors.push(bad("must be an absolute path"));
            }
            for seq in ["//", "/./", "/../", "%2f", "%2F"] {
                if path.contains(seq) {
                    errors.push(bad(&format!("must not contain '{seq}'")));
                }
            }
            for suffix in ["/..", "/."] {
                if path.ends_with(suffix) {
                    errors.push(bad(&format!("cannot end with '{suffix}'")));
                }
            }
        }
        Some("ImplementationSpecific") => {
            if !path.is_empty() && !path.starts_with('/') {
                errors.push(bad("must be an absolute path"));
            }
        }
        _ => errors.push(FieldError::unsupported(
            format!("{at}.pathType"),
            path_type,
            &["Exact", "ImplementationSpecific", "Prefix"],
        )),
    }
    errors.extend(backend(&p["backend"], &format!("{at}.backend")));
    errors
}

/// `validateIngressBackend`: exactly one of a service (a DNS-1035 name and one of port name
/// or number) or a typed resource reference.
fn backend(b: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let service = &b["service"];
    let resource = &b["resource"];
    match (service.is_null(), resource.is_null()) {
        (false, false) => {
            errors.push(FieldError::invalid(
                at,
                &json!(""),
                "cannot set both resource and service backends",
            ));
        }
        (true, false) => errors.extend(typed_reference(resource, &format!("{at}.resource"))),
        (false, true) => {
            let name = str_of(&service["name"]);
            let name_field = format!("{at}.service.name");
            if name.is_empty() {
                errors.push(FieldError::required(name_field, ""));
            } else {
                for p in name_problems(name, NameRule::Dns1035Label) {
                    errors.push(FieldError::invalid(&name_field, &text(name), &p));
                }
            }
            let port = &service["port"];
            let port_name = str_of(&port["name"]);
            let number = port["number"].as_i64().unwrap_or(0);
            if !port_name.is_empty() && number != 0 {
                errors.push(FieldError::invalid(
                    at,
                    &json!(""),
                    "cannot set both port name & port number",
                ));
            } else if !port_name.is_empty() {
                for p in port_name_problems(port_name) {
                    errors.push(FieldError::invalid(
                        format!("{at}.service.port.name"),
                        &text(port_name),
                        &p,
                    ));
                }
            } else if number != 0 {
                if !(1..=65535).contains(&number) {
                    errors.push(FieldError::invalid(
                        format!("{at}.service.port.number"),
                        &json!(number),
                        &range_msg(1, 65535),
                    ));
                }
            } else {
                errors.push(FieldError::required(at, "port name or number is required"));
            }
        }
        (true, true) => {
            errors.push(FieldError::invalid(
                at,
                &json!(""),
                "resource or service backend is required",
            ));
        }
    }
    errors
}

/// `validateIngressTypedLocalObjectReference`: apiGroup a subdomain when given, kind and name
/// required path segments.
fn typed_reference(r: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(group) = r["apiGroup"].as_str() {
        errors.extend(subdomain(&format!("{at}.apiGroup"), group));
    }
    for key in ["kind", "name"] {
        let field = format!("{at}.{key}");
        let value = str_of(&r[key]);
        if value.is_empty() {
            errors.push(FieldError::required(field, &format!("{key} is required")));
        } else {
            for p in name_problems(value, NameRule::PathSegment) {
                errors.push(FieldError::invalid(&field, &text(value), &p));
            }
        }
    }
    errors
}

/// A write of an Ingress's `status` (upstream's `ValidateIngressStatusUpdate`): each
/// load-balancer ingress entry well formed.
pub fn ingress_status(obj: &Value) -> Vec<FieldError> {
    super::net::load_balancer_ingress("status.loadBalancer", &obj["status"]["loadBalancer"], false)
}

// ---------------------------------------------------------------------------------------
// IngressClass

/// An IngressClass: the controller (a domain-prefixed path, at most 250 bytes, immutable)
/// and its parameters reference.
pub fn ingress_class(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let mut errors = Vec::new();
    let controller = str_of(&spec["controller"]);
    if let Some(old) = old {
        let old_controller = str_of(&old["spec"]["controller"]);
        if controller != old_controller {
            errors.push(FieldError::invalid(
                "spec.controller",
                &text(controller),
                "field is immutable",
            ));
        }
    }
    if controller.len() > MAX_CONTROLLER_LEN {
        errors.push(FieldError::too_long("spec.controller", MAX_CONTROLLER_LEN));
    }
    errors.extend(domain_prefixed_path("spec.controller", controller));

    let params = &spec["parameters"];
    if !params.is_null() {
        let at = "spec.parameters";
        errors.extend(typed_reference(params, at));
        // Upstream defaults a missing scope to Cluster.
        let scope = params["scope"].as_str().unwrap_or("Cluster");
        let namespace = &params["namespace"];
        match scope {
            "Namespace" => match namespace.as_str() {
                None => errors.push(FieldError::required(
                    format!("{at}.namespace"),
                    "`parameters.scope` is set to 'Namespace'",
                )),
                Some(ns) => {
                    for p in name_problems(ns, NameRule::Label) {
                        errors.push(FieldError::invalid(format!("{at}.namespace"), namespace, &p));
                    }
                }
            },
            "Cluster" => {
                if !namespace.is_null() {
                    errors.push(FieldError::forbidden(
                        format!("{at}.namespace"),
                        "`parameters.scope` is set to 'Cluster'",
                    ));
                }
            }
            _ => errors.push(FieldError::unsupported(
                format!("{at}.scope"),
                &params["scope"],
                &["Cluster", "Namespace"],
            )),
        }
    }
    errors
}

/// `IsDomainPrefixedPath`: `host/path`, the host a subdomain and the path of URL path
/// characters; each problem shows the part it is about.
pub(super) fn domain_prefixed_path(field: &str, value: &str) -> Vec<FieldError> {
    if value.is_empty() {
        return vec![FieldError::required(field, "")];
    }
    let Some((host, path)) = value.split_once('/').filter(|(h, p)| !h.is_empty() && !p.is_empty())
    else {
        return vec![FieldError::invalid(
            field,
            &text(value),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errors = subdomain(field, host);
    let path_ok =
        path.bytes().all(|c| c.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&c));
    if !path_ok {
        errors.push(FieldError::invalid(field, &text(path), HTTP_PATH_MSG));
    }
    errors
}

// ---------------------------------------------------------------------------------------
// NetworkPolicy

/// A NetworkPolicy: the pod selector, each ingress and egress rule's ports and peers, and
/// policyTypes.
pub fn network_policy(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let mut errors = label_selector("spec.podSelector", &spec["podSelector"]);
    for (i, rule) in spec["ingress"].as_array().into_iter().flatten().enumerate() {
        let at = format!("spec.ingress[{i}]");
        for (j, port) in rule["ports"].as_array().into_iter().flatten().enumerate() {
            errors.extend(policy_port(port, &format!("{at}.ports[{j}]")));
        }
        for (j, peer) in rule["from"].as_array().into_iter().flatten().enumerate() {
            errors.extend(policy_peer(peer, &format!("{at}.from[{j}]")));
        }
    }
    for (i, rule) in spec["egress"].as_array().into_iter().flatten().enumerate() {
        let at = format!("spec.egress[{i}]");
        for (j, port) in rule["ports"].as_array().into_iter().flatten().enumerate() {
            errors.extend(policy_port(port, &format!("{at}.ports[{j}]")));
        }
        for (j, peer) in rule["to"].as_array().into_iter().flatten().enumerate() {
            errors.extend(policy_peer(peer, &format!("{at}.to[{j}]")));
        }
    }
    let types = spec["policyTypes"].as_array().map_or(&[][..], Vec::as_slice);
    if types.len() > 2 {
        let shown: Vec<String> = types.iter().map(|t| go_quote(str_of(t))).collect();
        errors.push(FieldError::invalid_shown(
            "spec.policyTypes",
            &format!("[]networking.PolicyType{{{}}}", shown.join(", ")),
            "may not specify more than two policyTypes",
        ));
    } else {
        for (i, t) in types.iter().enumerate() {
            errors.extend(one_of(&format!("spec.policyTypes[{i}]"), t, &["Ingress", "Egress"]));
        }
    }
    // An update keeps accepting bad label values in selectors when the old pod selector
    // already had problems (upstream's AllowInvalidLabelValueInSelector).
    if let Some(old) = old {
        if !label_selector("spec.podSelector", &old["spec"]["podSelector"]).is_empty() {
            errors.retain(|e| {
                !(e.field.contains(".matchExpressions[") && e.field.contains("].values["))
            });
        }
    }
    errors
}

/// `ValidateNetworkPolicyPort`: protocol, and a numbered port with an optional endPort or a
/// named port without one.
fn policy_port(port: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    errors.extend(one_of(&format!("{at}.protocol"), &port["protocol"], &["TCP", "UDP", "SCTP"]));
    let end = &port["endPort"];
    let end_field = format!("{at}.endPort");
    match &port["port"] {
        Value::Null => {
            if !end.is_null() {
                errors.push(FieldError::invalid(
                    &end_field,
                    end,
                    "may not be specified when `port` is not specified",
                ));
            }
        }
        Value::String(name) => {
            if !end.is_null() {
                errors.push(FieldError::invalid(
                    &end_field,
                    end,
                    "may not be specified when `port` is non-numeric",
                ));
            }
            for p in port_name_problems(name) {
                errors.push(FieldError::invalid(format!("{at}.port"), &port["port"], &p));
            }
        }
        number => {
            let n = number.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&n) {
                errors.push(FieldError::invalid(
                    format!("{at}.port"),
                    &json!(n),
                    &range_msg(1, 65535),
                ));
            }
            if let Some(e) = end.as_i64() {
                if e < n {
                    // v1.33 shows the port here, not the endPort.
                    errors.push(FieldError::invalid(
                        &end_field,
                        &json!(n),
                        "must be greater than or equal to `port`",
                    ));
                }
                if !(1..=65535).contains(&e) {
                    errors.push(FieldError::invalid(&end_field, end, &range_msg(1, 65535)));
                }
            }
        }
    }
    errors
}

/// `ValidateNetworkPolicyPeer`: pod and/or namespace selectors, or an ipBlock alone.
fn policy_peer(peer: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut count = 0;
    for key in ["podSelector", "namespaceSelector"] {
        if !peer[key].is_null() {
            count += 1;
            errors.extend(label_selector(&format!("{at}.{key}"), &peer[key]));
        }
    }
    let block = &peer["ipBlock"];
    if !block.is_null() {
        count += 1;
        errors.extend(ip_block(block, &format!("{at}.ipBlock")));
    }
    if count == 0 {
        errors.push(FieldError::required(at, "must specify a peer"));
    } else if count > 1 && !block.is_null() {
        errors.push(FieldError::forbidden(at, "may not specify both ipBlock and another peer"));
    }
    errors
}

/// `ValidateIPBlock`: a CIDR, and `except` CIDRs each strictly inside it.
fn ip_block(block: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let cidr = str_of(&block["cidr"]);
    if cidr.is_empty() {
        errors.push(FieldError::required(format!("{at}.cidr"), ""));
        return errors;
    }
    let Some(net) = parse_cidr_sloppy(cidr) else {
        errors.push(FieldError::invalid(format!("{at}.cidr"), &text(cidr), CIDR_MSG));
        return errors;
    };
    for (i, except) in block["except"].as_array().into_iter().flatten().enumerate() {
        let field = format!("{at}.except[{i}]");
        let value = str_of(except);
        match parse_cidr_sloppy(value) {
            None => errors.push(FieldError::invalid(&field, &text(value), CIDR_MSG)),
            Some(inner) => {
                if !go_contains(&net, inner.network()) || net.prefix_len() >= inner.prefix_len() {
                    errors.push(FieldError::invalid(
                        &field,
                        &text(value),
                        "must be a strict subset of `cidr`",
                    ));
                }
            }
        }
    }
    errors
}

// ---------------------------------------------------------------------------------------
// IP addresses and CIDRs as upstream's ParseIPSloppy / ParseCIDRSloppy read them (Go's
// net parsing, with leading zeros allowed in IPv4 octets).

/// Decimal digits as Go's `dtoi`: at least one, and below 2^24.
fn decimal(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut n: u32 = 0;
    for c in s.bytes() {
        n = n * 10 + u32::from(c - b'0');
        if n >= 0xFF_FFFF {
            return None;
        }
    }
    Some(n)
}

fn parse_ipv4_sloppy(s: &str) -> Option<[u8; 4]> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut out = [0u8; 4];
    for (o, p) in out.iter_mut().zip(parts) {
        *o = u8::try_from(decimal(p)?).ok()?;
    }
    Some(out)
}

fn parse_ipv6_sloppy(s: &str) -> Option<[u8; 16]> {
    // Groups before and after a single `::`; the last group may be an IPv4 address.
    let (head, tail, ellipsis) = match s.split_once("::") {
        Some((h, t)) if !t.contains("::") => (h, t, true),
        Some(_) => return None,
        None => (s, "", false),
    };
    let split = |part: &str| -> Vec<String> {
        if part.is_empty() {
            Vec::new()
        } else {
            part.split(':').map(str::to_string).collect()
        }
    };
    let head = split(head);
    let tail = split(tail);
    let bytes_of = |groups: &[String], last_side: bool| -> Option<Vec<u8>> {
        let mut out = Vec::new();
        for (i, g) in groups.iter().enumerate() {
            if g.contains('.') && last_side && i == groups.len() - 1 {
                out.extend(parse_ipv4_sloppy(g)?);
                continue;
            }
            if g.is_empty() || !g.bytes().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            let mut n: u32 = 0;
            for c in g.chars() {
                n = n * 16 + c.to_digit(16)?;
                if n > 0xFFFF {
                    return None;
                }
            }
            out.extend([(n >> 8) as u8, n as u8]);
        }
        Some(out)
    };
    let head = bytes_of(&head, !ellipsis)?;
    let tail = bytes_of(&tail, true)?;
    let len = head.len() + tail.len();
    if (ellipsis && len >= 16) || (!ellipsis && len != 16) {
        return None;
    }
    let mut out = [0u8; 16];
    out[..head.len()].copy_from_slice(&head);
    out[16 - tail.len()..].copy_from_slice(&tail);
    Some(out)
}

/// An address as 4 bytes (IPv4) or 16 (IPv6), like Go's parsing keeps them.
fn parse_ip_sloppy(s: &str) -> Option<Vec<u8>> {
    if s.contains(':') {
        parse_ipv6_sloppy(s).map(|a| a.to_vec())
    } else {
        parse_ipv4_sloppy(s).map(|a| a.to_vec())
    }
}

/// A CIDR as `ParseCIDRSloppy` reads it, host bits cleared (Go's `net.IPNet`). An IPv4
/// address written in IPv6 form stays IPv6 with its full prefix length, as Go keeps it.
fn parse_cidr_sloppy(s: &str) -> Option<IpNet> {
    let (addr, prefix) = s.split_once('/')?;
    let ip = match parse_ipv4_sloppy(addr) {
        Some(v4) => IpAddr::from(v4),
        None => IpAddr::from(parse_ipv6_sloppy(addr)?),
    };
    let prefix = u8::try_from(decimal(prefix)?).ok()?;
    IpNet::new(ip, prefix).ok().map(|net| net.trunc())
}

/// Go's `IPNet.Contains`: an IPv4-mapped network or address counts as IPv4 (the network's
/// mask then being its last 32 bits), and the families must match.
fn go_contains(net: &IpNet, ip: IpAddr) -> bool {
    let net = match net {
        IpNet::V6(v6) => match v6.network().to_ipv4_mapped() {
            Some(v4) => IpNet::from(
                Ipv4Net::new(v4, v6.prefix_len() - 96).expect("a mapped network keeps 96 bits"),
            ),
            None => *net,
        },
        v4 => *v4,
    };
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    net.contains(&ip)
}

// ---------------------------------------------------------------------------------------
// IPAddress and ServiceCIDR

/// An IPAddress (networking.k8s.io): the name is the address it records (a canonical IP,
/// checked with the metadata), and `spec.parentRef` names what holds it: required, with a
/// resource and a name that are path segments, an optional group (a DNS subdomain) and
/// namespace. The reference is fixed once created.
pub fn ip_address(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let parent = &obj["spec"]["parentRef"];
    let at = "spec.parentRef";
    if parent.is_null() {
        return vec![FieldError::required(at, "")];
    }
    let mut errors = Vec::new();
    let group = str_of(&parent["group"]);
    if !group.is_empty() {
        errors.extend(subdomain(&format!("{at}.group"), group));
    }
    for (field, required) in [("resource", true), ("name", true), ("namespace", false)] {
        let value = str_of(&parent[field]);
        let field = format!("{at}.{field}");
        if value.is_empty() {
            if required {
                errors.push(FieldError::required(field, ""));
            }
            continue;
        }
        for p in name_problems(value, NameRule::PathSegment) {
            errors.push(FieldError::invalid(&field, &text(value), &p));
        }
    }
    if let Some(old) = old {
        let was = &old["spec"]["parentRef"];
        if parent_ref_key(parent) != parent_ref_key(was) {
            errors.push(FieldError::invalid_shown(
                at,
                &go_parent_ref(parent),
                "field is immutable",
            ));
        }
    }
    errors
}

/// A parent reference's four strings, as Go compares the struct.
fn parent_ref_key(r: &Value) -> Option<[&str; 4]> {
    (!r.is_null()).then(|| ["group", "resource", "namespace", "name"].map(|f| str_of(&r[f])))
}

/// A `*networking.ParentReference` as `field.Invalid` prints it.
fn go_parent_ref(r: &Value) -> String {
    if r.is_null() {
        return "\"null\"".to_string();
    }
    format!(
        "networking.ParentReference{{Group:{}, Resource:{}, Namespace:{}, Name:{}}}",
        go_quote(str_of(&r["group"])),
        go_quote(str_of(&r["resource"])),
        go_quote(str_of(&r["namespace"])),
        go_quote(str_of(&r["name"]))
    )
}

/// A ServiceCIDR (networking.k8s.io): the ranges Services take their ClusterIPs from. One
/// or two CIDRs (two only one of each family), each a subnet in canonical form; fixed once
/// created.
pub fn service_cidr(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    const AT: &str = "spec.cidrs";
    let cidrs: Vec<&str> = items(&obj["spec"]["cidrs"]).iter().map(str_of).collect();
    let mut errors = service_cidr_spec(&obj["spec"], &cidrs);
    if let Some(old) = old {
        let was = &old["spec"]["cidrs"];
        let old_cidrs: Vec<&str> = items(was).iter().map(str_of).collect();
        // Go's semantic equality: an empty list is the same as none.
        if cidrs != old_cidrs {
            let shown = go_string_slice(obj["spec"]["cidrs"].as_array().map(|_| &cidrs[..]));
            errors.push(FieldError::invalid_shown(AT, &shown, "field is immutable"));
        }
    }
    errors
}

/// `ValidateServiceCIDR`'s spec checks; they stop at the first problem with the list itself.
fn service_cidr_spec(spec: &Value, cidrs: &[&str]) -> Vec<FieldError> {
    const AT: &str = "spec.cidrs";
    let shown_spec = || {
        let list = spec["cidrs"].as_array().map(|_| cidrs);
        format!("networking.ServiceCIDRSpec{{CIDRs:{}}}", go_string_slice(list))
    };
    if cidrs.is_empty() {
        return vec![FieldError::required(AT, "at least one CIDR required")];
    }
    if cidrs.len() > 2 {
        return vec![FieldError::invalid_shown(AT, &shown_spec(), "may only hold up to 2 values")];
    }
    if cidrs.len() == 2 {
        let families: Vec<Option<u8>> = cidrs.iter().map(|c| cidr_family(c)).collect();
        let dual = families.contains(&Some(4)) && families.contains(&Some(6));
        if !dual {
            return vec![FieldError::invalid_shown(
                AT,
                &shown_spec(),
                "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
            )];
        }
    }
    let mut errors = Vec::new();
    for (i, cidr) in cidrs.iter().enumerate() {
        errors.extend(cidr_strict(&format!("{AT}[{i}]"), cidr));
    }
    errors
}

/// The family of a CIDR `ParseCIDRSloppy` reads (`None` for anything else).
fn cidr_family(cidr: &str) -> Option<u8> {
    if !cidr.contains('/') || !cidr_legacy("", cidr).is_empty() {
        return None;
    }
    family(cidr)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    fn nginx_ingress() -> Value {
        json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "web", "namespace": "default",
                "annotations": {"nginx.ingress.kubernetes.io/rewrite-target": "/"}},
            "spec": {
                "ingressClassName": "nginx",
                "tls": [{"hosts": ["shop.example.com", "*.api.example.com"], "secretName": "shop-tls"}],
                "rules": [
                    {"host": "shop.example.com", "http": {"paths": [
                        {"path": "/", "pathType": "Prefix",
                         "backend": {"service": {"name": "web", "port": {"name": "http"}}}},
                        {"path": "/healthz", "pathType": "Exact",
                         "backend": {"service": {"name": "health", "port": {"number": 8080}}}}
                    ]}},
                    {"host": "*.api.example.com", "http": {"paths": [
                        {"path": "/v1", "pathType": "ImplementationSpecific",
                         "backend": {"service": {"name": "api", "port": {"number": 80}}}}
                    ]}}
                ]
            }
        })
    }

    fn ingress_with_path(path: Value) -> Value {
        json!({"metadata": {"name": "i"}, "spec": {"rules": [{"host": "a.example.com", "http": {"paths": [path]}}]}})
    }

    #[test]
    fn realistic_objects_are_valid() {
        let ing = nginx_ingress();
        assert_eq!(lines(ingress(&ing, None)), Vec::<String>::new());
        assert_eq!(lines(ingress(&ing, Some(&ing))), Vec::<String>::new());
        let default_only = json!({"spec": {"defaultBackend": {"service": {"name": "fallback", "port": {"number": 80}}}}});
        assert!(ingress(&default_only, None).is_empty());

        let class = json!({"metadata": {"name": "nginx", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
            "spec": {"controller": "k8s.io/ingress-nginx",
                "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}});
        assert!(ingress_class(&class, None).is_empty());
        assert!(ingress_class(&class, Some(&class)).is_empty());
        let namespaced = json!({"spec": {"controller": "example.com/ingress-controller",
            "parameters": {"kind": "ConfigMap", "name": "cfg", "scope": "Namespace", "namespace": "ingress"}}});
        assert!(ingress_class(&namespaced, None).is_empty());

        let deny_all = json!({"metadata": {"name": "default-deny", "namespace": "prod"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}});
        assert!(network_policy(&deny_all, None).is_empty());
        let bare = json!({"spec": {"podSelector": {}}});
        assert!(network_policy(&bare, None).is_empty());
        let allow = json!({"metadata": {"name": "allow-frontend", "namespace": "prod"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "db"}},
            "ingress": [{
                "from": [
                    {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "frontend"}},
                     "podSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]}]}},
                    {"ipBlock": {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24"]}},
                    {"ipBlock": {"cidr": "2001:db8::/32", "except": ["2001:db8:1::/48"]}}
                ],
                "ports": [{"protocol": "TCP", "port": 5432}, {"port": "metrics"},
                    {"protocol": "UDP", "port": 32000, "endPort": 32768}]
            }],
            "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"port": 53, "protocol": "UDP"}]}]
        }});
        assert_eq!(lines(network_policy(&allow, None)), Vec::<String>::new());
    }

    #[test]
    fn ingress_needs_rules_or_default_backend() {
        assert_eq!(
            lines(ingress(&json!({"spec": {}}), None)),
            ["spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"]
        );
        assert_eq!(
            lines(ingress(&json!({"spec": {"rules": []}}), None)),
            ["spec: Invalid value: []networking.IngressRule{}: either `defaultBackend` or `rules` must be specified"]
        );
    }

    #[test]
    fn path_types_and_paths() {
        let backend = json!({"service": {"name": "web", "port": {"number": 80}}});
        assert_eq!(
            lines(ingress(&ingress_with_path(json!({"path": "/", "backend": backend})), None)),
            ["spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"]
        );
        assert_eq!(
            lines(ingress(&ingress_with_path(json!({"path": "/", "pathType": "Regex", "backend": backend})), None)),
            ["spec.rules[0].http.paths[0].pathType: Unsupported value: \"Regex\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\""]
        );
        assert_eq!(
            lines(ingress(
                &ingress_with_path(
                    json!({"path": "api", "pathType": "Prefix", "backend": backend})
                ),
                None
            )),
            ["spec.rules[0].http.paths[0].path: Invalid value: \"api\": must be an absolute path"]
        );
        assert_eq!(
            lines(ingress(
                &ingress_with_path(json!({"pathType": "Exact", "backend": backend})),
                None
            )),
            ["spec.rules[0].http.paths[0].path: Invalid value: \"\": must be an absolute path"]
        );
        assert_eq!(
            lines(ingress(&ingress_with_path(json!({"path": "/a//b/..", "pathType": "Prefix", "backend": backend})), None)),
            [
                "spec.rules[0].http.paths[0].path: Invalid value: \"/a//b/..\": must not contain '//'",
                "spec.rules[0].http.paths[0].path: Invalid value: \"/a//b/..\": cannot end with '/..'",
            ]
        );
        assert_eq!(
            lines(ingress(&ingress_with_path(json!({"path": "/x%2Fy/.", "pathType": "Exact", "backend": backend})), None)),
            [
                "spec.rules[0].http.paths[0].path: Invalid value: \"/x%2Fy/.\": must not contain '%2F'",
                "spec.rules[0].http.paths[0].path: Invalid value: \"/x%2Fy/.\": cannot end with '/.'",
            ]
        );
        assert_eq!(
            lines(ingress(
                &ingress_with_path(
                    json!({"path": "(.*)", "pathType": "ImplementationSpecific", "backend": backend})
                ),
                None
            )),
            ["spec.rules[0].http.paths[0].path: Invalid value: \"(.*)\": must be an absolute path"]
        );
        assert!(ingress(
            &ingress_with_path(json!({"pathType": "ImplementationSpecific", "backend": backend})),
            None
        )
        .is_empty());
        let no_paths = json!({"spec": {"rules": [{"host": "a.example.com", "http": {}}]}});
        assert_eq!(lines(ingress(&no_paths, None)), ["spec.rules[0].http.paths: Required value"]);
        let no_http = json!({"spec": {"rules": [{"host": "a.example.com"}]}});
        assert!(ingress(&no_http, None).is_empty());
    }

    #[test]
    fn backends() {
        let with = |b: Value| {
            ingress(
                &ingress_with_path(json!({"path": "/", "pathType": "Prefix", "backend": b})),
                None,
            )
        };
        assert_eq!(
            lines(with(json!({"service": {"name": "web"}}))),
            ["spec.rules[0].http.paths[0].backend: Required value: port name or number is required"]
        );
        assert_eq!(
            lines(with(json!({"service": {"name": "web", "port": {"name": "http", "number": 80}}}))),
            ["spec.rules[0].http.paths[0].backend: Invalid value: \"\": cannot set both port name & port number"]
        );
        assert_eq!(
            lines(with(json!({"service": {"name": "Web_1", "port": {"number": 70000}}}))),
            [
                "spec.rules[0].http.paths[0].backend.service.name: Invalid value: \"Web_1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "spec.rules[0].http.paths[0].backend.service.port.number: Invalid value: 70000: must be between 1 and 65535, inclusive",
            ]
        );
        assert_eq!(
            lines(with(json!({"service": {"port": {"name": "HTTP"}}}))),
            [
                "spec.rules[0].http.paths[0].backend.service.name: Required value",
                "spec.rules[0].http.paths[0].backend.service.port.name: Invalid value: \"HTTP\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.rules[0].http.paths[0].backend.service.port.name: Invalid value: \"HTTP\": must contain at least one letter (a-z)",
            ]
        );
        assert_eq!(
            lines(with(json!({}))),
            ["spec.rules[0].http.paths[0].backend: Invalid value: \"\": resource or service backend is required"]
        );
        assert_eq!(
            lines(with(json!({"service": {"name": "web", "port": {"number": 80}}, "resource": {"kind": "Bucket", "name": "b"}}))),
            ["spec.rules[0].http.paths[0].backend: Invalid value: \"\": cannot set both resource and service backends"]
        );
        assert_eq!(
            lines(with(json!({"resource": {"apiGroup": "Storage", "name": "a/b"}}))),
            [
                format!("spec.rules[0].http.paths[0].backend.resource.apiGroup: Invalid value: \"Storage\": {SUBDOMAIN_MSG}"),
                "spec.rules[0].http.paths[0].backend.resource.kind: Required value: kind is required".to_string(),
                "spec.rules[0].http.paths[0].backend.resource.name: Invalid value: \"a/b\": may not contain '/'".to_string(),
            ]
        );
        assert!(with(json!({"resource": {"apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "static"}})).is_empty());
        assert_eq!(
            lines(ingress(
                &json!({"spec": {"defaultBackend": {"service": {"name": "web"}}}}),
                None
            )),
            ["spec.defaultBackend: Required value: port name or number is required"]
        );
    }

    #[test]
    fn hosts() {
        let rule = |host: &str| json!({"spec": {"rules": [{"host": host}]}});
        assert_eq!(
            lines(ingress(&rule("10.0.0.1"), None)),
            ["spec.rules[0].host: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address"]
        );
        assert_eq!(
            lines(ingress(&rule("::1"), None)),
            [
                "spec.rules[0].host: Invalid value: \"::1\": must be a DNS name, not an IP address"
                    .to_string(),
                format!("spec.rules[0].host: Invalid value: \"::1\": {SUBDOMAIN_MSG}"),
            ]
        );
        assert_eq!(
            lines(ingress(&rule("Foo.Example.com"), None)),
            [format!("spec.rules[0].host: Invalid value: \"Foo.Example.com\": {SUBDOMAIN_MSG}")]
        );
        assert_eq!(
            lines(ingress(&rule("*.*.example.com"), None)),
            [format!("spec.rules[0].host: Invalid value: \"*.*.example.com\": {WILDCARD_MSG}")]
        );
        assert_eq!(
            WILDCARD_MSG,
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        assert!(ingress(&rule("*.example.com"), None).is_empty());
        assert_eq!(lines(ingress(&rule("*"), None)).len(), 1);
        // Leading zeros still make an IPv4 address to upstream.
        assert_eq!(lines(ingress(&rule("010.1.1.1"), None)).len(), 1);
    }

    #[test]
    fn tls_and_class() {
        let ing = json!({"metadata": {"annotations": {"kubernetes.io/ingress.class": "traefik"}},
            "spec": {"ingressClassName": "Nginx",
                "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}},
                "tls": [{"hosts": ["*.example.com", "a_b.example.com", "*foo.com"], "secretName": "My-Cert"}]}});
        assert_eq!(
            lines(ingress(&ing, None)),
            [
                format!("spec.tls[0].hosts[1]: Invalid value: \"a_b.example.com\": {SUBDOMAIN_MSG}"),
                format!("spec.tls[0].hosts[2]: Invalid value: \"*foo.com\": {WILDCARD_MSG}"),
                format!("spec.tls[0].secretName: Invalid value: \"My-Cert\": {SUBDOMAIN_MSG}"),
                format!("spec.ingressClassName: Invalid value: \"Nginx\": {SUBDOMAIN_MSG}"),
                "annotations.kubernetes.io/ingress.class: Invalid value: \"traefik\": must match `ingressClassName` when both are specified".to_string(),
            ]
        );
        // On update the annotation is not compared, and a secret name the old object already
        // had wrong is kept.
        assert_eq!(lines(ingress(&ing, Some(&ing))).len(), 3);
        let old = json!({"spec": {"tls": [{"secretName": "Old"}]}});
        assert_eq!(lines(ingress(&ing, Some(&old))).len(), 3);
        let fine_old = json!({"spec": {"tls": [{"secretName": "ok"}]}});
        assert_eq!(lines(ingress(&ing, Some(&fine_old))).len(), 4);
    }

    #[test]
    fn wildcard_rules_kept_on_update() {
        let bad = json!({"spec": {"rules": [{"host": "*.example.com", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web"}}}]}}]}});
        let expected = [
            "spec.rules[0].http.paths[0].backend: Required value: port name or number is required",
        ];
        assert_eq!(lines(ingress(&bad, None)), expected);
        assert!(ingress(&bad, Some(&bad)).is_empty());
        assert_eq!(lines(ingress(&bad, Some(&nginx_ingress()))), expected);
    }

    #[test]
    fn ingress_class_checks() {
        let class = |spec: Value| json!({"spec": spec});
        assert_eq!(
            lines(ingress_class(&class(json!({})), None)),
            ["spec.controller: Required value"]
        );
        assert_eq!(
            lines(ingress_class(&class(json!({"controller": "nginx"})), None)),
            ["spec.controller: Invalid value: \"nginx\": must be a domain-prefixed path (such as \"acme.io/foo\")"]
        );
        assert_eq!(
            lines(ingress_class(&class(json!({"controller": "Example.com/a b"})), None)),
            [
                format!("spec.controller: Invalid value: \"Example.com\": {SUBDOMAIN_MSG}"),
                format!("spec.controller: Invalid value: \"a b\": {HTTP_PATH_MSG}"),
            ]
        );
        assert_eq!(
            HTTP_PATH_MSG,
            "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"
        );
        let long = format!("example.com/{}", "a".repeat(250));
        assert_eq!(
            lines(ingress_class(&class(json!({"controller": long})), None)),
            ["spec.controller: Too long: may not be more than 250 bytes"]
        );
        let old = class(json!({"controller": "example.com/old"}));
        assert_eq!(
            lines(ingress_class(&class(json!({"controller": "example.com/new"})), Some(&old))),
            ["spec.controller: Invalid value: \"example.com/new\": field is immutable"]
        );
        assert_eq!(
            lines(ingress_class(
                &class(json!({"controller": "example.com/c", "parameters": {"scope": "Namespace"}})),
                None
            )),
            [
                "spec.parameters.kind: Required value: kind is required",
                "spec.parameters.name: Required value: name is required",
                "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'",
            ]
        );
        assert_eq!(
            lines(ingress_class(
                &class(json!({"controller": "example.com/c",
                    "parameters": {"kind": "K", "name": "n", "namespace": "ns"}})),
                None
            )),
            ["spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"]
        );
        assert_eq!(
            lines(ingress_class(
                &class(json!({"controller": "example.com/c",
                    "parameters": {"kind": "K", "name": "..", "scope": "Global"}})),
                None
            )),
            [
                "spec.parameters.name: Invalid value: \"..\": may not be '..'",
                "spec.parameters.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespace\"",
            ]
        );
        assert_eq!(
            lines(ingress_class(
                &class(json!({"controller": "example.com/c",
                    "parameters": {"kind": "K", "name": "n", "scope": "Namespace", "namespace": "Kube_System"}})),
                None
            )),
            ["spec.parameters.namespace: Invalid value: \"Kube_System\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]
        );
    }

    fn policy_with_port(port: Value) -> Value {
        json!({"spec": {"podSelector": {}, "ingress": [{"ports": [port]}]}})
    }

    #[test]
    fn policy_ports() {
        let check = |p: Value| lines(network_policy(&policy_with_port(p), None));
        assert_eq!(
            check(json!({"protocol": "tcp", "port": 80})),
            ["spec.ingress[0].ports[0].protocol: Unsupported value: \"tcp\": supported values: \"TCP\", \"UDP\", \"SCTP\""]
        );
        assert_eq!(
            check(json!({"port": 0})),
            ["spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"]
        );
        assert_eq!(
            check(json!({"port": 8080, "endPort": 80})),
            ["spec.ingress[0].ports[0].endPort: Invalid value: 8080: must be greater than or equal to `port`"]
        );
        assert_eq!(
            check(json!({"port": 80, "endPort": 70000})),
            ["spec.ingress[0].ports[0].endPort: Invalid value: 70000: must be between 1 and 65535, inclusive"]
        );
        assert_eq!(
            check(json!({"port": "http", "endPort": 90})),
            ["spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric"]
        );
        assert_eq!(
            check(json!({"endPort": 90})),
            ["spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is not specified"]
        );
        assert_eq!(
            check(json!({"port": "web--api"})),
            ["spec.ingress[0].ports[0].port: Invalid value: \"web--api\": must not contain consecutive hyphens"]
        );
        assert!(check(json!({})).is_empty());
        assert!(check(json!({"protocol": "SCTP"})).is_empty());
    }

    #[test]
    fn policy_peers_and_ip_blocks() {
        let check = |peer: Value| {
            lines(network_policy(
                &json!({"spec": {"podSelector": {}, "egress": [{"to": [peer]}]}}),
                None,
            ))
        };
        assert_eq!(check(json!({})), ["spec.egress[0].to[0]: Required value: must specify a peer"]);
        assert_eq!(
            check(json!({"podSelector": {}, "ipBlock": {"cidr": "10.0.0.0/8"}})),
            ["spec.egress[0].to[0]: Forbidden: may not specify both ipBlock and another peer"]
        );
        assert!(check(json!({"podSelector": {}, "namespaceSelector": {}})).is_empty());
        assert_eq!(
            check(json!({"ipBlock": {}})),
            ["spec.egress[0].to[0].ipBlock.cidr: Required value"]
        );
        assert_eq!(
            check(json!({"ipBlock": {"cidr": "10.0.0.0"}})),
            ["spec.egress[0].to[0].ipBlock.cidr: Invalid value: \"10.0.0.0\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
        );
        assert_eq!(
            check(json!({"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16", "192.168.0.0/24", "10.0.0.0/8", "10.2.0.0/33"]}})),
            [
                "spec.egress[0].to[0].ipBlock.except[1]: Invalid value: \"192.168.0.0/24\": must be a strict subset of `cidr`",
                "spec.egress[0].to[0].ipBlock.except[2]: Invalid value: \"10.0.0.0/8\": must be a strict subset of `cidr`",
                "spec.egress[0].to[0].ipBlock.except[3]: Invalid value: \"10.2.0.0/33\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            ]
        );
        // Upstream's legacy parsing: host bits and leading zeros are accepted.
        assert!(check(json!({"ipBlock": {"cidr": "10.1.2.3/8", "except": ["010.001.0.0/16"]}}))
            .is_empty());
        assert_eq!(
            check(json!({"ipBlock": {"cidr": "2001:db8::/32", "except": ["10.0.0.0/8"]}})),
            ["spec.egress[0].to[0].ipBlock.except[0]: Invalid value: \"10.0.0.0/8\": must be a strict subset of `cidr`"]
        );
        assert_eq!(
            check(json!({"namespaceSelector": {"matchLabels": {"team": "a b"}}})),
            ["spec.egress[0].to[0].namespaceSelector.matchLabels: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]
        );
    }

    #[test]
    fn policy_types_and_selector() {
        let np = |spec: Value| json!({"spec": spec});
        assert_eq!(
            lines(network_policy(&np(json!({"podSelector": {}, "policyTypes": ["ingress"]})), None)),
            ["spec.policyTypes[0]: Unsupported value: \"ingress\": supported values: \"Ingress\", \"Egress\""]
        );
        assert_eq!(
            lines(network_policy(&np(json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress", "Ingress"]})), None)),
            ["spec.policyTypes: Invalid value: []networking.PolicyType{\"Ingress\", \"Egress\", \"Ingress\"}: may not specify more than two policyTypes"]
        );
        let bad_selector = np(
            json!({"podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["-x"]}]}}),
        );
        assert_eq!(
            lines(network_policy(&bad_selector, None)),
            ["spec.podSelector.matchExpressions[0].values[0]: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]
        );
        // An update of a policy whose selector was already bad keeps accepting it.
        assert!(network_policy(&bad_selector, Some(&bad_selector)).is_empty());
        assert_eq!(
            lines(network_policy(&np(json!({"podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]}})), None)),
            ["spec.podSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"]
        );
    }

    #[test]
    fn sloppy_addresses() {
        assert_eq!(parse_ip_sloppy("1.2.3.4"), Some(vec![1, 2, 3, 4]));
        assert_eq!(parse_ip_sloppy("001.002.003.004"), Some(vec![1, 2, 3, 4]));
        assert!(parse_ip_sloppy("256.1.1.1").is_none());
        assert!(parse_ip_sloppy("1.2.3").is_none());
        assert!(parse_ip_sloppy("::").is_some());
        assert!(parse_ip_sloppy("::ffff:1.2.3.4").is_some());
        assert!(parse_ip_sloppy("fe80::1:2:3:4:5:6").is_some());
        assert!(parse_ip_sloppy("1:2:3:4:5:6:7:8").is_some());
        assert!(parse_ip_sloppy("1:2:3:4:5:6:7::").is_some());
        assert!(parse_ip_sloppy("::1:2:3:4:5:6:7:8").is_none());
        assert!(parse_ip_sloppy("1::2::3").is_none());
        assert!(parse_ip_sloppy("1:2:3").is_none());
        assert!(parse_ip_sloppy("fe80::1%eth0").is_none());
        assert!(parse_ip_sloppy("example.com").is_none());
        let net = parse_cidr_sloppy("::ffff:10.0.0.0/104").unwrap();
        assert_eq!(net.prefix_len(), 104);
        assert!(go_contains(&net, IpAddr::from([10, 0, 1, 0])));
        assert!(!go_contains(&net, IpAddr::from([11, 0, 1, 0])));
        // Go's quirk: `::/80` holds no IPv4-mapped address.
        let net = parse_cidr_sloppy("::/80").unwrap();
        assert!(!go_contains(&net, "::ffff:1.2.3.4".parse().unwrap()));
        assert!(go_contains(&net, "::1".parse().unwrap()));
        assert!(parse_cidr_sloppy("10.0.0.0/08").is_some());
        assert!(parse_cidr_sloppy("10.0.0.0/").is_none());
        assert!(parse_cidr_sloppy("::/129").is_none());
    }

    #[test]
    fn ip_addresses() {
        let ip = |parent: Value| {
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
                "metadata": {"name": "10.43.0.10"}, "spec": {"parentRef": parent}})
        };
        let ok =
            ip(json!({"group": "", "resource": "services", "namespace": "default", "name": "web"}));
        assert_eq!(lines(ip_address(&ok, None)), Vec::<String>::new());
        assert_eq!(lines(ip_address(&ok, Some(&ok))), Vec::<String>::new());
        assert_eq!(lines(ip_address(&ip(Value::Null), None)), ["spec.parentRef: Required value"]);
        let bad =
            ip(json!({"group": "Bad_Group", "resource": "svc/x", "namespace": "..", "name": ""}));
        assert_eq!(
            lines(ip_address(&bad, None)),
            [
                format!("spec.parentRef.group: Invalid value: \"Bad_Group\": {SUBDOMAIN_MSG}"),
                "spec.parentRef.resource: Invalid value: \"svc/x\": may not contain '/'"
                    .to_string(),
                "spec.parentRef.name: Required value".to_string(),
                "spec.parentRef.namespace: Invalid value: \"..\": may not be '..'".to_string(),
            ]
        );
        let moved = ip(json!({"resource": "services", "namespace": "other", "name": "web"}));
        assert_eq!(
            lines(ip_address(&moved, Some(&ok))),
            ["spec.parentRef: Invalid value: networking.ParentReference{Group:\"\", Resource:\"services\", Namespace:\"other\", Name:\"web\"}: field is immutable"]
        );
        // The name: a canonical IP (checked with the metadata).
        assert!(name_problems("10.43.0.10", NameRule::IpAddress).is_empty());
        assert!(name_problems("fd00::a", NameRule::IpAddress).is_empty());
        assert_eq!(
            name_problems("fd00:0::A", NameRule::IpAddress),
            ["must be in canonical form (\"fd00::a\")"]
        );
        assert_eq!(name_problems("010.43.0.1", NameRule::IpAddress), ["must not have leading 0s"]);
        assert_eq!(
            name_problems("web", NameRule::IpAddress),
            ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
        );
    }

    #[test]
    fn service_cidrs() {
        let cidr = |cidrs: Value| {
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
                "metadata": {"name": "extra"}, "spec": {"cidrs": cidrs}})
        };
        let ok = cidr(json!(["10.44.0.0/16", "fd00:44::/108"]));
        assert_eq!(lines(service_cidr(&ok, None)), Vec::<String>::new());
        assert_eq!(lines(service_cidr(&ok, Some(&ok))), Vec::<String>::new());
        assert_eq!(
            lines(service_cidr(&cidr(json!([])), None)),
            ["spec.cidrs: Required value: at least one CIDR required"]
        );
        assert_eq!(
            lines(service_cidr(&cidr(json!(["10.0.0.0/8", "fd00::/64", "10.1.0.0/16"])), None)),
            ["spec.cidrs: Invalid value: networking.ServiceCIDRSpec{CIDRs:[]string{\"10.0.0.0/8\", \"fd00::/64\", \"10.1.0.0/16\"}}: may only hold up to 2 values"]
        );
        assert_eq!(
            lines(service_cidr(&cidr(json!(["10.0.0.0/8", "10.1.0.0/16"])), None)),
            ["spec.cidrs: Invalid value: networking.ServiceCIDRSpec{CIDRs:[]string{\"10.0.0.0/8\", \"10.1.0.0/16\"}}: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"]
        );
        assert_eq!(
            lines(service_cidr(&cidr(json!(["10.0.0.0/8", "bogus"])), None)),
            ["spec.cidrs: Invalid value: networking.ServiceCIDRSpec{CIDRs:[]string{\"10.0.0.0/8\", \"bogus\"}}: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"]
        );
        assert_eq!(
            lines(service_cidr(&cidr(json!(["10.0.0.1/8", "FD00::/64"])), None)),
            [
                "spec.cidrs[0]: Invalid value: \"10.0.0.1/8\": must not have bits set beyond the prefix length",
                "spec.cidrs[1]: Invalid value: \"FD00::/64\": must be in canonical form (\"fd00::/64\")",
            ]
        );
        assert_eq!(
            lines(service_cidr(&cidr(json!(["10.0.0.0"])), None)),
            [format!("spec.cidrs[0]: Invalid value: \"10.0.0.0\": {CIDR_MSG}")]
        );
        let changed = cidr(json!(["10.44.0.0/16"]));
        assert_eq!(
            lines(service_cidr(&changed, Some(&ok))),
            ["spec.cidrs: Invalid value: []string{\"10.44.0.0/16\"}: field is immutable"]
        );
    }
}
