//! Validation of the kinds that record what runs where and what happened: Endpoints and
//! EndpointSlices, Events (core and events.k8s.io) and Leases, with upstream's (v1.33)
//! messages and field paths (`ValidateEndpoints`, `ValidateEndpointSlice{Create,Update}`,
//! `ValidateEvent{Create,Update}`, `ValidateLease{,Update}`).
//!
//! Metadata is checked by the caller. Fields upstream drops before validating (an
//! EndpointSlice's `deprecatedTopology` on v1 writes, `hints.forNodes` and a Lease's
//! `strategy` and `preferredHolder` with their feature gates off, as they are by default in
//! v1.33) are not checked here.
//!
//! Upstream validates both Event APIs on its internal Event type, so errors name the internal
//! fields whatever the request's version: a core/v1 Event's `reportingComponent` is
//! `reportingController`, an events.k8s.io/v1 Event's `regarding` is `involvedObject`, `note`
//! is `message`, `deprecatedSource` is `source`, and so on.

use std::collections::HashSet;
use std::net::IpAddr;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::net::{ip_legacy, non_special_ip, parse_ip_sloppy};
use super::values::{items, one_of, range_msg, str_of, text};
use super::{label_value_problems, name_problems, qualified_name_problems, FieldError, NameRule};
use crate::gofmt::go_quote;

const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const ADDRESS_TYPES: [&str; 3] = ["FQDN", "IPv4", "IPv6"];
const MAX_SLICE_ENDPOINTS: usize = 1000;
const MAX_SLICE_ADDRESSES: usize = 100;
const MAX_SLICE_PORTS: usize = 20000;
const MAX_ZONE_HINTS: usize = 8;
const EVENT_FIELD_LIMIT: usize = 128;
const EVENT_NOTE_LIMIT: usize = 1024;
const IMMUTABLE: &str = "field is immutable";

/// One `Invalid` error per problem upstream's name check found.
fn problems_at(field: &str, value: &str, problems: Vec<String>) -> Vec<FieldError> {
    problems.iter().map(|p| FieldError::invalid(field, &text(value), p)).collect()
}

/// `ValidateDNS1123Label`.
fn dns_label(field: &str, value: &str) -> Vec<FieldError> {
    problems_at(field, value, name_problems(value, NameRule::Label))
}

/// `ValidateNodeName`: a DNS subdomain.
fn node_name(field: &str, value: &str) -> Vec<FieldError> {
    problems_at(field, value, name_problems(value, NameRule::Subdomain))
}

/// `ValidateQualifiedName`.
fn qualified_name(field: &str, value: &str) -> Vec<FieldError> {
    problems_at(field, value, qualified_name_problems(value))
}

/// Upstream's `field.TooMany`.
fn too_many(field: &str, actual: usize, max: usize) -> FieldError {
    FieldError {
        reason: "FieldValueTooMany",
        message: format!("Too many: {actual}: must have at most {max} items"),
        field: field.to_string(),
    }
}

/// An `appProtocol` when set: a qualified name.
fn app_protocol(field: &str, value: &Value) -> Vec<FieldError> {
    match value {
        Value::Null => Vec::new(),
        v => qualified_name(field, str_of(v)),
    }
}

// ---------------------------------------------------------------------------------------
// Endpoints

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

/// A port's protocol: required, and TCP, UDP or SCTP.
fn protocol(field: &str, value: &Value) -> Option<FieldError> {
    if str_of(value).is_empty() {
        return Some(FieldError::required(field, ""));
    }
    one_of(field, value, &PROTOCOLS)
}

// ---------------------------------------------------------------------------------------
// EndpointSlice

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

// ---------------------------------------------------------------------------------------
// Events

/// A core/v1 Event: only upstream's legacy checks, on create and update alike (upstream
/// applies nothing more to requests through the v1 API).
pub fn core_event(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    legacy_event(&internal_from_core(obj))
}

/// An events.k8s.io/v1 Event: the legacy checks, then the stricter ones of the newer API (on
/// create: a series of at least 2, eventTime set, type Normal or Warning, the deprecated
/// fields unset; on update: a changed series checked again and nearly every field immutable).
pub fn event(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let new = internal_from_events(obj);
    let mut errors = legacy_event(&new);
    match old {
        None => {
            errors.extend(event_series(&new));
            if is_zero_time(&new["eventTime"]) {
                errors.push(FieldError::required("eventTime", ""));
            }
            let kind = str_of(&new["type"]);
            if kind != "Normal" && kind != "Warning" {
                errors.push(FieldError::invalid(
                    "type",
                    &text(""),
                    &format!("has invalid value: {kind}"),
                ));
            }
            for field in ["firstTimestamp", "lastTimestamp"] {
                if !is_zero_time(&new[field]) {
                    errors.push(FieldError::invalid(field, &text(""), "needs to be unset"));
                }
            }
            if new["count"].as_i64().unwrap_or(0) != 0 {
                errors.push(FieldError::invalid("count", &text(""), "needs to be unset"));
            }
            let source = &new["source"];
            if !str_of(&source["component"]).is_empty() || !str_of(&source["host"]).is_empty() {
                errors.push(FieldError::invalid("source", &text(""), "needs to be unset"));
            }
        }
        Some(old) => {
            let old = internal_from_events(old);
            if some(&new["series"]) != some(&old["series"]) {
                errors.extend(event_series(&new));
            }
            errors.extend(immutable_event_fields(&new, &old));
        }
    }
    errors
}

/// A field that is unset when null.
fn some(v: &Value) -> Option<&Value> {
    (!v.is_null()).then_some(v)
}

/// A core/v1 Event with upstream's internal field names (only the reporting controller is
/// named differently).
fn internal_from_core(obj: &Value) -> Value {
    let mut e = obj.clone();
    e["reportingController"] = obj["reportingComponent"].clone();
    e
}

/// An events.k8s.io/v1 Event with upstream's internal (core) field names.
fn internal_from_events(obj: &Value) -> Value {
    json!({
        "metadata": obj["metadata"],
        "involvedObject": obj["regarding"],
        "related": obj["related"],
        "reason": obj["reason"],
        "message": obj["note"],
        "type": obj["type"],
        "action": obj["action"],
        "source": obj["deprecatedSource"],
        "firstTimestamp": obj["deprecatedFirstTimestamp"],
        "lastTimestamp": obj["deprecatedLastTimestamp"],
        "count": obj["deprecatedCount"],
        "eventTime": obj["eventTime"],
        "series": obj["series"],
        "reportingController": obj["reportingController"],
        "reportingInstance": obj["reportingInstance"],
    })
}

/// Upstream's `legacyValidateEvent`, on an Event with internal field names: the involved
/// object's namespace against the Event's, and for Events with an eventTime the reporting
/// fields, action and reason (required, at most 128 bytes) and the message (at most 1024).
fn legacy_event(e: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let namespace = str_of(&e["metadata"]["namespace"]);
    let involved_namespace = str_of(&e["involvedObject"]["namespace"]);
    let mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            &text(involved_namespace),
            "does not match event.namespace",
        )
    };
    if is_zero_time(&e["eventTime"]) {
        let matches = if involved_namespace.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved_namespace
        };
        if !matches {
            errors.push(mismatch());
        }
    } else {
        if involved_namespace.is_empty() && namespace != "default" && namespace != "kube-system" {
            errors.push(mismatch());
        }
        let controller = str_of(&e["reportingController"]);
        if controller.is_empty() {
            errors.push(FieldError::required("reportingController", ""));
        }
        errors.extend(qualified_name("reportingController", controller));
        for field in ["reportingInstance", "action", "reason"] {
            let value = str_of(&e[field]);
            if value.is_empty() {
                errors.push(FieldError::required(field, ""));
            }
            if value.len() > EVENT_FIELD_LIMIT {
                errors.push(at_most(field, EVENT_FIELD_LIMIT));
            }
        }
        if str_of(&e["message"]).len() > EVENT_NOTE_LIMIT {
            errors.push(at_most("message", EVENT_NOTE_LIMIT));
        }
    }
    errors.extend(problems_at(
        "namespace",
        namespace,
        name_problems(namespace, NameRule::Subdomain),
    ));
    errors
}

fn at_most(field: &str, limit: usize) -> FieldError {
    FieldError::invalid(field, &text(""), &format!("can have at most {limit} characters"))
}

/// `validateV1EventSeries`: a series counts at least 2 and has a last observed time.
fn event_series(e: &Value) -> Vec<FieldError> {
    let series = &e["series"];
    let mut errors = Vec::new();
    if series.is_null() {
        return errors;
    }
    if series["count"].as_i64().unwrap_or(0) < 2 {
        errors.push(FieldError::invalid("series.count", &text(""), "should be at least 2"));
    }
    if is_zero_time(&series["lastObservedTime"]) {
        errors.push(FieldError::required("series.lastObservedTime", ""));
    }
    errors
}

/// What an update of an events.k8s.io/v1 Event may not change, in upstream's order (reason
/// twice, as upstream checks it twice), each shown as Go prints the internal field's value.
fn immutable_event_fields(new: &Value, old: &Value) -> Vec<FieldError> {
    enum Kind {
        Reference,
        OptionalReference,
        Source,
        Text,
        Time,
        Count,
    }
    let fields = [
        ("involvedObject", Kind::Reference),
        ("reason", Kind::Text),
        ("message", Kind::Text),
        ("source", Kind::Source),
        ("firstTimestamp", Kind::Time),
        ("lastTimestamp", Kind::Time),
        ("count", Kind::Count),
        ("reason", Kind::Text),
        ("type", Kind::Text),
        ("eventTime", Kind::Time),
        ("action", Kind::Text),
        ("related", Kind::OptionalReference),
        ("reportingController", Kind::Text),
        ("reportingInstance", Kind::Text),
    ];
    let mut errors = Vec::new();
    for (field, kind) in fields {
        let (a, b) = (&new[field], &old[field]);
        let (same, shown) = match kind {
            Kind::Reference => (same_reference(a, b), go_object_reference(a)),
            Kind::OptionalReference => {
                let same = match (a.is_null(), b.is_null()) {
                    (true, true) => true,
                    (false, false) => same_reference(a, b),
                    _ => false,
                };
                let shown = if a.is_null() { go_quote("null") } else { go_object_reference(a) };
                (same, shown)
            }
            Kind::Source => (
                ["component", "host"].iter().all(|k| str_of(&a[k]) == str_of(&b[k])),
                format!(
                    "core.EventSource{{Component:{}, Host:{}}}",
                    go_quote(str_of(&a["component"])),
                    go_quote(str_of(&a["host"]))
                ),
            ),
            Kind::Text => (str_of(a) == str_of(b), go_quote(str_of(a))),
            Kind::Time => (same_time(a, b), go_time_string(a)),
            Kind::Count => {
                let n = a.as_i64().unwrap_or(0);
                (n == b.as_i64().unwrap_or(0), n.to_string())
            }
        };
        if !same {
            errors.push(FieldError::invalid_shown(field, &shown, IMMUTABLE));
        }
    }
    errors
}

const REFERENCE_FIELDS: [(&str, &str); 7] = [
    ("kind", "Kind"),
    ("namespace", "Namespace"),
    ("name", "Name"),
    ("uid", "UID"),
    ("apiVersion", "APIVersion"),
    ("resourceVersion", "ResourceVersion"),
    ("fieldPath", "FieldPath"),
];

fn same_reference(a: &Value, b: &Value) -> bool {
    REFERENCE_FIELDS.iter().all(|(k, _)| str_of(&a[k]) == str_of(&b[k]))
}

/// An internal `core.ObjectReference` as `%#v` prints it.
fn go_object_reference(r: &Value) -> String {
    let fields: Vec<String> = REFERENCE_FIELDS
        .iter()
        .map(|(k, go)| format!("{go}:{}", go_quote(str_of(&r[k]))))
        .collect();
    format!("core.ObjectReference{{{}}}", fields.join(", "))
}

/// A `metav1.Time` or `MicroTime` as the instant it names; Go's zero time when unset (or
/// empty), `None` when it is not a timestamp at all.
fn parse_time(v: &Value) -> Option<DateTime<Utc>> {
    match v.as_str() {
        None | Some("") => zero_time(),
        Some(s) => DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc)),
    }
}

/// Go's `time.Time{}`: January 1 of year 1, UTC.
fn zero_time() -> Option<DateTime<Utc>> {
    let naive = chrono::NaiveDate::from_ymd_opt(1, 1, 1)?.and_hms_opt(0, 0, 0)?;
    Some(DateTime::from_naive_utc_and_offset(naive, Utc))
}

fn is_zero_time(v: &Value) -> bool {
    parse_time(v) == zero_time()
}

/// Upstream compares times as instants (`Semantic.DeepEqual`).
fn same_time(a: &Value, b: &Value) -> bool {
    match (parse_time(a), parse_time(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Go's `time.Time.String()` of a parsed timestamp (the API server's zone taken to be UTC):
/// `2006-01-02 15:04:05.999999999 +0000 UTC`, the fraction without trailing zeros.
fn go_time_string(v: &Value) -> String {
    let Some(t) = parse_time(v).or_else(zero_time) else {
        return go_quote(str_of(v));
    };
    let mut out = t.format("%Y-%m-%d %H:%M:%S").to_string();
    let nanos = t.timestamp_subsec_nanos();
    if nanos > 0 {
        let frac = format!("{nanos:09}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out.push_str(" +0000 UTC");
    out
}

// ---------------------------------------------------------------------------------------
// Lease

/// A Lease: a positive duration and a non-negative transition count when set (upstream
/// checks the same on update).
pub fn lease(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let mut errors = Vec::new();
    let duration = &spec["leaseDurationSeconds"];
    if duration.as_i64().is_some_and(|d| d <= 0) {
        errors.push(FieldError::invalid(
            "spec.leaseDurationSeconds",
            duration,
            "must be greater than 0",
        ));
    }
    let transitions = &spec["leaseTransitions"];
    if transitions.as_i64().is_some_and(|t| t < 0) {
        errors.push(FieldError::invalid(
            "spec.leaseTransitions",
            transitions,
            "must be greater than or equal to 0",
        ));
    }
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

    /// A core/v1 Event as rkube's scheduler, controllers and kubelet write them.
    fn core_v1(namespace: &str, involved_namespace: Option<&str>) -> Value {
        let mut involved = json!({"apiVersion": "v1", "kind": "Pod", "name": "web-0", "uid": "u1"});
        if let Some(ns) = involved_namespace {
            involved["namespace"] = json!(ns);
        }
        json!({"metadata": {"name": "web-0.17a", "namespace": namespace},
            "involvedObject": involved, "reason": "Scheduled", "message": "assigned",
            "type": "Normal", "source": {"component": "default-scheduler"},
            "reportingComponent": "default-scheduler", "reportingInstance": "default-scheduler",
            "firstTimestamp": "2025-05-01T10:00:00Z", "lastTimestamp": "2025-05-01T10:00:00Z",
            "count": 1})
    }

    #[test]
    fn core_events() {
        assert!(core_event(&core_v1("team-a", Some("team-a")), None).is_empty());
        // Cluster-scoped objects: events in default (or with no namespace at all).
        assert!(core_event(&core_v1("default", None), None).is_empty());
        let moved = core_v1("team-b", Some("team-a"));
        assert_eq!(
            lines(core_event(&moved, Some(&core_v1("team-a", Some("team-a"))))),
            ["involvedObject.namespace: Invalid value: \"team-a\": does not match event.namespace"]
        );
        assert_eq!(
            lines(core_event(&core_v1("kube-system", None), None)),
            ["involvedObject.namespace: Invalid value: \"\": does not match event.namespace"]
        );
        // With an eventTime: the reporting fields, action and reason are required.
        let mut newer = core_v1("kube-system", None);
        newer["eventTime"] = json!("2025-05-01T10:00:00.000000Z");
        newer["action"] = json!("Binding");
        assert!(core_event(&newer, None).is_empty());
        let newer = json!({"metadata": {"name": "e", "namespace": "team-a"},
            "involvedObject": {"kind": "Node", "name": "n"},
            "eventTime": "2025-05-01T10:00:00.123456Z", "reason": "x".repeat(129),
            "reportingInstance": "i".repeat(129), "message": "m".repeat(1025)});
        assert_eq!(
            lines(core_event(&newer, None)),
            [
                "involvedObject.namespace: Invalid value: \"\": does not match event.namespace",
                "reportingController: Required value",
                "reportingController: Invalid value: \"\": name part must be non-empty",
                "reportingController: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "reportingInstance: Invalid value: \"\": can have at most 128 characters",
                "action: Required value",
                "reason: Invalid value: \"\": can have at most 128 characters",
                "message: Invalid value: \"\": can have at most 1024 characters",
            ]
        );
    }

    fn events_v1() -> Value {
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "web-0.17a", "namespace": "team-a"},
            "eventTime": "2025-05-01T10:00:00.123456Z",
            "reportingController": "example.com/operator", "reportingInstance": "operator-7d9",
            "action": "Reconcile", "reason": "Synced", "note": "all good", "type": "Normal",
            "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": "team-a", "name": "web-0", "uid": "u1"}})
    }

    #[test]
    fn events_k8s_io_create() {
        let good = events_v1();
        assert!(event(&good, None).is_empty());
        let mut series = good.clone();
        series["series"] = json!({"count": 2, "lastObservedTime": "2025-05-01T10:05:00.000000Z"});
        assert!(event(&series, None).is_empty());

        let bad = json!({"metadata": {"name": "e", "namespace": "team-a"},
            "regarding": {"kind": "Pod", "namespace": "team-a", "name": "p"},
            "type": "Info", "series": {"count": 1},
            "deprecatedSource": {"component": "kubelet"}, "deprecatedCount": 3,
            "deprecatedFirstTimestamp": "2025-05-01T10:00:00Z",
            "deprecatedLastTimestamp": "2025-05-01T10:00:00Z"});
        assert_eq!(
            lines(event(&bad, None)),
            [
                "series.count: Invalid value: \"\": should be at least 2",
                "series.lastObservedTime: Required value",
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: Info",
                "firstTimestamp: Invalid value: \"\": needs to be unset",
                "lastTimestamp: Invalid value: \"\": needs to be unset",
                "count: Invalid value: \"\": needs to be unset",
                "source: Invalid value: \"\": needs to be unset",
            ]
        );
        let mut no_reporter = good.clone();
        no_reporter["regarding"]["namespace"] = json!("team-b");
        for field in ["reportingController", "reportingInstance", "action", "reason"] {
            no_reporter.as_object_mut().unwrap().remove(field);
        }
        assert_eq!(
            lines(event(&no_reporter, None))
                .iter()
                .filter(|l| !l.contains("name part"))
                .cloned()
                .collect::<Vec<_>>(),
            [
                "reportingController: Required value",
                "reportingInstance: Required value",
                "action: Required value",
                "reason: Required value",
            ]
        );
    }

    #[test]
    fn events_k8s_io_update() {
        let old = events_v1();
        assert!(event(&old, Some(&old)).is_empty());
        let mut new = old.clone();
        new["series"] = json!({"count": 1, "lastObservedTime": "2025-05-01T10:05:00.5Z"});
        new["regarding"]["resourceVersion"] = json!("12");
        new["note"] = json!("changed");
        new["reason"] = json!("Other");
        new["eventTime"] = json!("2025-05-01T10:00:01.500000Z");
        new["deprecatedSource"] = json!({"component": "c", "host": "h"});
        new["deprecatedFirstTimestamp"] = json!("2025-05-01T10:00:00Z");
        new["deprecatedCount"] = json!(4);
        new["related"] = json!({"kind": "Node", "name": "n1"});
        new["reportingInstance"] = json!("operator-2");
        assert_eq!(
            lines(event(&new, Some(&old))),
            [
                "series.count: Invalid value: \"\": should be at least 2",
                "involvedObject: Invalid value: core.ObjectReference{Kind:\"Pod\", Namespace:\"team-a\", Name:\"web-0\", UID:\"u1\", APIVersion:\"v1\", ResourceVersion:\"12\", FieldPath:\"\"}: field is immutable",
                "reason: Invalid value: \"Other\": field is immutable",
                "message: Invalid value: \"changed\": field is immutable",
                "source: Invalid value: core.EventSource{Component:\"c\", Host:\"h\"}: field is immutable",
                "firstTimestamp: Invalid value: 2025-05-01 10:00:00 +0000 UTC: field is immutable",
                "count: Invalid value: 4: field is immutable",
                "reason: Invalid value: \"Other\": field is immutable",
                "eventTime: Invalid value: 2025-05-01 10:00:01.5 +0000 UTC: field is immutable",
                "related: Invalid value: core.ObjectReference{Kind:\"Node\", Namespace:\"\", Name:\"n1\", UID:\"\", APIVersion:\"\", ResourceVersion:\"\", FieldPath:\"\"}: field is immutable",
                "reportingInstance: Invalid value: \"operator-2\": field is immutable",
            ]
        );
        let mut dropped = old.clone();
        dropped["related"] = json!({"kind": "Node", "name": "n1"});
        let mut unset = old.clone();
        unset["deprecatedLastTimestamp"] = json!("2025-05-01T10:00:00Z");
        assert_eq!(
            lines(event(&old, Some(&dropped))),
            ["related: Invalid value: \"null\": field is immutable"]
        );
        assert_eq!(
            lines(event(&old, Some(&unset))),
            ["lastTimestamp: Invalid value: 0001-01-01 00:00:00 +0000 UTC: field is immutable"]
        );
    }

    #[test]
    fn leases() {
        let good = json!({"spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40,
            "renewTime": "2025-05-01T10:00:00.000000Z", "leaseTransitions": 0}});
        assert!(lease(&good, None).is_empty());
        assert!(lease(&json!({"spec": {}}), None).is_empty());
        let bad = json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}});
        assert_eq!(
            lines(lease(&bad, Some(&good))),
            [
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
    }
}
