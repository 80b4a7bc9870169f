//! Services: type, ports (names, protocols, target ports, node ports, duplicates), selector,
//! session affinity, traffic policies, IP families and ExternalName, with upstream's (v1.33)
//! messages and field paths (`ValidateService`, `validateServicePort`).
//!
//! Validation runs before the ClusterIP and NodePorts are allocated (`server::services`),
//! which also owns the "may not change once set" rule for the ClusterIP on update. Upstream
//! allocates first, and its allocator checks the cluster-IP fields before it does
//! (`ValidateServiceClusterIPsRelatedFields`, then the IP families against the cluster's
//! service ranges): when those fail, their errors are the only ones reported. rkube does the
//! same here, reading `clusterIP`/`clusterIPs` the way upstream's registry first reconciles
//! them, and its service range is single-stack IPv4. A field upstream defaults (type,
//! protocol, targetPort, sessionAffinity, traffic policies) is never an error when absent,
//! whether or not rkube's defaulting filled it.

use std::collections::HashSet;

use serde_json::{json, Value};

use crate::gofmt::{go_int_or_string, go_pointee, go_quote, go_string_slice};
use crate::validation::net::{cidr_legacy, family, ip_legacy, non_special_ip};
use crate::validation::values::{
    items, label_map, one_of, port_name_problems, port_number, str_of,
};
use crate::validation::{name_problems, qualified_name_problems, FieldError, NameRule};

/// The kubelet's port, which no LoadBalancer may expose.
const KUBELET_PORT: i64 = 10250;

/// Upper bound of `sessionAffinityConfig.clientIP.timeoutSeconds` (one day).
const MAX_AFFINITY_SECONDS: i64 = 86400;

/// The annotation older clients set instead of `loadBalancerSourceRanges`.
const SOURCE_RANGES_ANNOTATION: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";
const TOPOLOGY_MODE_ANNOTATION: &str = "service.kubernetes.io/topology-mode";
const TOPOLOGY_HINTS_ANNOTATION: &str = "service.kubernetes.io/topology-aware-hints";

/// A service with the single cluster IP `None`.
fn is_headless(cluster_ips: &[String]) -> bool {
    cluster_ips.len() == 1 && cluster_ips[0] == "None"
}

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array().map(|list| list.iter().map(|s| str_of(s).to_string()).collect())
}

/// `clusterIPs` as upstream's registry leaves it before validating (`normalizeClusterIPs`):
/// on create a lone `clusterIP` fills it; on update a changed `clusterIP` with the old
/// `clusterIPs` replaces them, and a cleared one with the old `clusterIPs` clears them.
/// `None` stands for Go's nil slice.
fn effective_cluster_ips(spec: &Value, old_spec: Option<&Value>) -> Option<Vec<String>> {
    let ip = str_of(&spec["clusterIP"]);
    let ips = strings(&spec["clusterIPs"]).filter(|l| !l.is_empty());
    if spec["type"] == "ExternalName" {
        return ips;
    }
    let Some(old) = old_spec else {
        if !ip.is_empty() && ips.is_none() {
            return Some(vec![ip.to_string()]);
        }
        return ips;
    };
    let (old_ip, old_ips) = (str_of(&old["clusterIP"]), strings(&old["clusterIPs"]));
    let old_ips = old_ips.filter(|l| !l.is_empty());
    let mut ips = ips;
    if old_ips.is_some() && ips.is_none() && old_ip == ip {
        ips = old_ips.clone();
    }
    if old_ip != ip && ips == old_ips {
        ips = if ip.is_empty() { None } else { Some(vec![ip.to_string()]) };
    }
    ips
}

pub fn service(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let old_spec = old.map(|o| &o["spec"]);
    let kind = spec["type"].as_str().unwrap_or("ClusterIP");
    let cluster_ips = effective_cluster_ips(spec, old_spec);
    let ips = cluster_ips.as_deref().unwrap_or_default();
    let headless = is_headless(ips);
    let ports = spec["ports"].as_array().map_or(&[][..], Vec::as_slice);

    // Upstream's allocator refuses bad cluster-IP fields before anything else is looked at.
    if kind != "ExternalName" {
        let early = cluster_ips_related(spec, cluster_ips.as_deref());
        if !early.is_empty() {
            return early;
        }
        let early = cluster_families(spec, old_spec, ips);
        if !early.is_empty() {
            return early;
        }
    }

    let mut errors = Vec::new();
    if let Some(old_spec) = old_spec {
        errors.extend(upgrade_downgrade(spec, old_spec, ips));
        errors.extend(load_balancer_class(spec, Some(old_spec), kind));
        let needs_health_check =
            |s: &Value| s["type"] == "LoadBalancer" && s["externalTrafficPolicy"] == "Local";
        if needs_health_check(old_spec)
            && needs_health_check(spec)
            && spec["healthCheckNodePort"] != old_spec["healthCheckNodePort"]
        {
            errors.push(FieldError::forbidden("spec.healthCheckNodePort", "field is immutable"));
        }
    }
    errors.extend(topology_annotations(&obj["metadata"]["annotations"]));

    if ports.is_empty() && !headless && kind != "ExternalName" {
        errors.push(FieldError::required("spec.ports", ""));
    }
    match kind {
        "LoadBalancer" | "NodePort" => {
            if kind == "LoadBalancer" {
                for (i, p) in ports.iter().enumerate() {
                    if p["port"].as_i64() == Some(KUBELET_PORT) {
                        errors.push(FieldError::invalid(
                            format!("spec.ports[{i}]"),
                            &p["port"],
                            "may not expose port 10250 externally since it is used by kubelet",
                        ));
                    }
                }
            }
            if headless {
                errors.push(FieldError::invalid(
                    "spec.clusterIPs[0]",
                    &json!("None"),
                    &format!("may not be set to 'None' for {kind} services"),
                ));
            }
        }
        "ExternalName" => errors.extend(external_name(spec)),
        _ => {}
    }

    let mut names = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        errors.extend(service_port(p, ports.len() > 1, &mut names, &format!("spec.ports[{i}]")));
    }

    errors.extend(label_map("spec.selector", &spec["selector"]));
    errors.extend(session_affinity(spec));
    for (i, ip) in items(&spec["externalIPs"]).iter().enumerate() {
        let at = format!("spec.externalIPs[{i}]");
        let invalid = ip_legacy(&at, str_of(ip));
        if invalid.is_empty() {
            errors.extend(non_special_ip(&at, str_of(ip)));
        } else {
            errors.extend(invalid);
        }
    }
    if let Some(e) = one_of(
        "spec.type",
        &spec["type"],
        &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
    ) {
        errors.push(e);
    }
    // Node ports left over from a change of type were dropped before validation
    // (`server::services`, upstream's `dropTypeDependentFields`).
    if kind == "ClusterIP" {
        for (i, p) in ports.iter().enumerate() {
            if p["nodePort"].as_i64().is_some_and(|n| n != 0) {
                errors.push(FieldError::forbidden(
                    format!("spec.ports[{i}].nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    errors.extend(duplicate_ports(ports));
    errors.extend(source_ranges(spec, &obj["metadata"]["annotations"], kind));
    if kind != "LoadBalancer" && !spec["allocateLoadBalancerNodePorts"].is_null() {
        errors.push(FieldError::forbidden("spec.allocateLoadBalancerNodePorts", LB_ONLY));
    }
    errors.extend(load_balancer_class(spec, None, kind));
    errors.extend(traffic_policies(spec, kind));
    errors
}

/// A write of a Service's `status` (upstream's `ValidateServiceStatusUpdate`): load-balancer
/// ingress only on a LoadBalancer Service, and each entry well formed.
pub fn service_status(obj: &Value) -> Vec<FieldError> {
    let lb = &obj["status"]["loadBalancer"];
    let has_ingress = lb["ingress"].as_array().is_some_and(|i| !i.is_empty());
    if has_ingress && obj["spec"]["type"] != "LoadBalancer" {
        return vec![FieldError::forbidden(
            "status.loadBalancer.ingress",
            "may only be used when `spec.type` is 'LoadBalancer'",
        )];
    }
    crate::validation::net::load_balancer_ingress("status.loadBalancer", lb, true)
}

/// `service.kubernetes.io/topology-mode` must agree with the deprecated
/// `service.kubernetes.io/topology-aware-hints` when both are set.
fn topology_annotations(annotations: &Value) -> Option<FieldError> {
    let (mode, hints) =
        (&annotations[TOPOLOGY_MODE_ANNOTATION], &annotations[TOPOLOGY_HINTS_ANNOTATION]);
    (mode.is_string() && hints.is_string() && mode != hints).then(|| {
        FieldError::invalid(
            format!("metadata.annotations[{TOPOLOGY_MODE_ANNOTATION}]"),
            mode,
            &format!("must match annotations[{TOPOLOGY_HINTS_ANNOTATION}] when both are specified"),
        )
    })
}

/// `ValidateServiceClusterIPsRelatedFields`: `clusterIPs` in step with `clusterIP`, the IP
/// families and policy, each cluster IP (`None` only alone), at most two and one per family,
/// and each of the family its `ipFamilies` entry names.
fn cluster_ips_related(spec: &Value, cluster_ips: Option<&[String]>) -> Vec<FieldError> {
    const AT: &str = "spec.clusterIPs";
    let mut errors = Vec::new();
    let ips = cluster_ips.unwrap_or_default();
    let shown_ips = go_string_slice(cluster_ips);
    if !str_of(&spec["clusterIP"]).is_empty() {
        if ips.is_empty() {
            errors.push(FieldError::required(AT, ""));
        } else if ips[0] != str_of(&spec["clusterIP"]) {
            errors.push(FieldError::invalid_shown(
                AT,
                &shown_ips,
                "first value must match `clusterIP`",
            ));
        }
    } else if !ips.is_empty() {
        errors.push(FieldError::invalid_shown(
            AT,
            &shown_ips,
            "must be empty when `clusterIP` is not specified",
        ));
    }

    let families = items(&spec["ipFamilies"]);
    let mut seen = HashSet::new();
    for (i, family) in families.iter().enumerate() {
        let at = format!("spec.ipFamilies[{i}]");
        if !matches!(family.as_str(), Some("IPv4" | "IPv6")) {
            errors.push(FieldError::unsupported(&at, family, &["IPv4", "IPv6"]));
        }
        if !seen.insert(family.to_string()) {
            errors.push(FieldError::duplicate(at, family));
        }
    }
    errors.extend(one_of(
        "spec.ipFamilyPolicy",
        &spec["ipFamilyPolicy"],
        &["PreferDualStack", "RequireDualStack", "SingleStack"],
    ));

    let mut bad_ips = false;
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && ip == "None" {
            if ips.len() > 1 {
                bad_ips = true;
                errors.push(FieldError::invalid_shown(
                    AT,
                    &shown_ips,
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        let invalid = ip_legacy(&format!("{AT}[{i}]"), ip);
        bad_ips |= !invalid.is_empty();
        errors.extend(invalid);
    }
    if ips.len() > 2 {
        errors.push(FieldError::invalid_shown(AT, &shown_ips, "may only hold up to 2 values"));
    }
    // Bad addresses would only make the family checks below misleading.
    if bad_ips {
        return errors;
    }
    if ips.len() > 1 {
        let fams: HashSet<Option<u8>> = ips.iter().map(|ip| family(ip)).collect();
        if !(fams.contains(&Some(4)) && fams.contains(&Some(6))) {
            errors.push(FieldError::invalid_shown(
                AT,
                &shown_ips,
                "may specify no more than one IP for each IP family",
            ));
        }
    }
    if !is_headless(ips) {
        for (i, (ip, fam)) in ips.iter().zip(families).enumerate() {
            let expected = match (fam.as_str(), family(ip)) {
                (Some("IPv4"), Some(6)) => "IPv4",
                (Some("IPv6"), f) if f != Some(6) => "IPv6",
                _ => continue,
            };
            errors.push(FieldError::invalid(
                format!("{AT}[{i}]"),
                &Value::String(ip.clone()),
                &format!("expected an {expected} value as indicated by `ipFamilies[{i}]`"),
            ));
        }
    }
    errors
}

/// What upstream's allocator (`initIPFamilyFields`) checks once the fields are well formed,
/// against rkube's single-stack IPv4 service range: one family, and only IPv4.
fn cluster_families(spec: &Value, old_spec: Option<&Value>, ips: &[String]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let families = items(&spec["ipFamilies"]);
    // Headless services without a selector may ask for any families.
    let selectorless = spec["selector"].as_object().is_none_or(|s| s.is_empty());
    let headless_selectorless = str_of(&spec["clusterIP"]) == "None" && selectorless;
    // An unset policy is the old one, or what upstream defaults it to.
    let policy = match (&spec["ipFamilyPolicy"], old_spec.map(|o| &o["ipFamilyPolicy"])) {
        (Value::Null, Some(old)) if !old.is_null() => old.clone(),
        (Value::Null, _) if headless_selectorless => json!("RequireDualStack"),
        (Value::Null, _) => json!("SingleStack"),
        (policy, _) => policy.clone(),
    };
    if policy == "SingleStack" {
        for (count, what) in [(ips.len(), "cluster IPs"), (families.len(), "IP families")] {
            if count == 2 {
                errors.push(FieldError::invalid(
                    "spec.ipFamilyPolicy",
                    &policy,
                    &format!(
                        "must be 'RequireDualStack' or 'PreferDualStack' when multiple {what} are specified"
                    ),
                ));
            }
        }
    }
    // Families a cluster IP implies where `ipFamilies` names none.
    for (i, ip) in ips.iter().enumerate().skip(families.len()) {
        if ip == "None" {
            break;
        }
        if family(ip) == Some(6) {
            errors.push(FieldError::invalid_shown(
                format!("spec.clusterIPs[{i}]"),
                &go_string_slice(Some(ips)),
                "IPv6 is not configured on this cluster",
            ));
        }
    }
    if !errors.is_empty() || headless_selectorless {
        return errors;
    }
    if policy == "RequireDualStack" {
        errors.push(FieldError::invalid(
            "spec.ipFamilyPolicy",
            &policy,
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, family) in families.iter().enumerate() {
        if family != "IPv4" {
            errors.push(FieldError::invalid(
                format!("spec.ipFamilies[{i}]"),
                family,
                "not configured on this cluster",
            ));
        }
    }
    errors
}

/// `loadBalancerSourceRanges` (spaces around an entry allowed), or when it is empty the
/// older annotation (a comma-separated list): LoadBalancers only, each a CIDR.
fn source_ranges(spec: &Value, annotations: &Value, kind: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let ranges = items(&spec["loadBalancerSourceRanges"]);
    if !ranges.is_empty() {
        // Upstream's path really is capitalised here.
        let at = "spec.LoadBalancerSourceRanges";
        if kind != "LoadBalancer" {
            errors.push(FieldError::forbidden(at, LB_ONLY));
        }
        for (i, range) in ranges.iter().enumerate() {
            errors.extend(cidr_legacy(&format!("{at}[{i}]"), str_of(range).trim()));
        }
    } else if let Some(value) = annotations[SOURCE_RANGES_ANNOTATION].as_str() {
        let at = format!("metadata.annotations[{SOURCE_RANGES_ANNOTATION}]");
        if kind != "LoadBalancer" {
            errors.push(FieldError::forbidden(&at, LB_ONLY));
        }
        let value = value.trim();
        if !value.is_empty() {
            for range in value.split(',') {
                errors.extend(cidr_legacy(&at, range.trim()));
            }
        }
    }
    errors
}

/// An ExternalName service: a DNS name and no cluster IP or IP families.
fn external_name(spec: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    // A change to ExternalName drops the old ones first (`server::services`).
    let has_ip = spec["clusterIP"].as_str().is_some_and(|ip| !ip.is_empty())
        || spec["clusterIPs"].as_array().is_some_and(|ips| !ips.is_empty());
    if has_ip {
        errors.push(FieldError::forbidden(
            "spec.clusterIPs",
            "may not be set for ExternalName services",
        ));
    }
    if spec["ipFamilies"].as_array().is_some_and(|f| !f.is_empty()) {
        errors.push(FieldError::forbidden(
            "spec.ipFamilies",
            "may not be set for ExternalName services",
        ));
    }
    if !spec["ipFamilyPolicy"].is_null() {
        errors.push(FieldError::forbidden(
            "spec.ipFamilyPolicy",
            "may not be set for ExternalName services",
        ));
    }
    // A trailing dot marks the name fully qualified.
    let name = spec["externalName"].as_str().unwrap_or("");
    let cname = name.strip_suffix('.').unwrap_or(name);
    if cname.is_empty() {
        errors.push(FieldError::required("spec.externalName", ""));
    } else {
        for p in name_problems(cname, NameRule::Subdomain) {
            errors.push(FieldError::invalid("spec.externalName", &json!(cname), &p));
        }
    }
    errors
}

/// `validateServicePort`: name (a DNS label, required when there are several, unique),
/// port, protocol, targetPort (a port number or an IANA port name) and appProtocol.
fn service_port(
    p: &Value,
    require_name: bool,
    names: &mut HashSet<String>,
    at: &str,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = p["name"].as_str().unwrap_or("");
    if name.is_empty() {
        if require_name {
            errors.push(FieldError::required(format!("{at}.name"), ""));
        }
    } else {
        for problem in name_problems(name, NameRule::Label) {
            errors.push(FieldError::invalid(format!("{at}.name"), &p["name"], &problem));
        }
        if !names.insert(name.to_string()) {
            errors.push(FieldError::duplicate(format!("{at}.name"), &p["name"]));
        }
    }
    // An absent port is Go's zero value.
    errors.extend(port_number(&format!("{at}.port"), &json!(p["port"].as_i64().unwrap_or(0))));
    if let Some(e) = one_of(&format!("{at}.protocol"), &p["protocol"], &["SCTP", "TCP", "UDP"]) {
        errors.push(e);
    }
    // 0 and "" are defaulted to the port upstream.
    let target = &p["targetPort"];
    match target {
        Value::String(s) if !s.is_empty() => {
            for problem in port_name_problems(s) {
                errors.push(FieldError::invalid(format!("{at}.targetPort"), target, &problem));
            }
        }
        Value::Number(n) if n.as_i64() != Some(0) => {
            errors.extend(port_number(&format!("{at}.targetPort"), target));
        }
        _ => {}
    }
    if let Some(protocol) = p["appProtocol"].as_str() {
        for problem in qualified_name_problems(protocol) {
            errors.push(FieldError::invalid(
                format!("{at}.appProtocol"),
                &p["appProtocol"],
                &problem,
            ));
        }
    }
    errors
}

fn session_affinity(spec: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let affinity = &spec["sessionAffinity"];
    errors.extend(one_of("spec.sessionAffinity", affinity, &["ClientIP", "None"]));
    let config = &spec["sessionAffinityConfig"];
    match affinity.as_str().unwrap_or("None") {
        // Upstream defaults a missing timeout (3 hours); only a given one is checked.
        "ClientIP" => {
            let timeout = &config["clientIP"]["timeoutSeconds"];
            if timeout.as_i64().is_some_and(|t| t <= 0 || t > MAX_AFFINITY_SECONDS) {
                errors.push(FieldError::invalid(
                    "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                    timeout,
                    &format!("must be greater than 0 and less than {MAX_AFFINITY_SECONDS}"),
                ));
            }
        }
        "None" if !config.is_null() => errors.push(FieldError::forbidden(
            "spec.sessionAffinityConfig",
            "must not be set when session affinity is None",
        )),
        _ => {}
    }
    errors
}

/// The same node port twice, and the same port twice, each per protocol.
fn duplicate_ports(ports: &[Value]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let protocol = |p: &Value| p["protocol"].as_str().unwrap_or("TCP").to_string();
    let mut node_ports = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let Some(node_port) = p["nodePort"].as_i64().filter(|n| *n != 0) else { continue };
        if !node_ports.insert((protocol(p), node_port)) {
            errors.push(FieldError::duplicate(format!("spec.ports[{i}].nodePort"), &p["nodePort"]));
        }
    }
    let mut seen = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let port = p["port"].as_i64().unwrap_or(0);
        if !seen.insert((protocol(p), port)) {
            // Upstream prints the (protocol, port) key as a Go ServicePort struct.
            let shown = format!(
                "core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{port}, TargetPort:{}, NodePort:0}}",
                go_quote(&protocol(p)),
                go_int_or_string(&json!(0))
            );
            errors.push(FieldError::duplicate_shown(format!("spec.ports[{i}]"), &shown));
        }
    }
    errors
}

/// Upstream's `validateUpgradeDowngradeClusterIPs` and `validateUpgradeDowngradeIPFamilies`:
/// the primary cluster IP and IP family may not change once set (a secondary may be added or
/// released, the latter only with `SingleStack`), unless the service is or was an
/// ExternalName, or stays headless.
fn upgrade_downgrade(spec: &Value, old_spec: &Value, ips: &[String]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if spec["type"] == "ExternalName" || old_spec["type"] == "ExternalName" {
        return errors;
    }
    let old_ips = strings(&old_spec["clusterIPs"]).unwrap_or_default();
    let (new_headless, old_headless) = (is_headless(ips), is_headless(&old_ips));
    let shown_ips = go_string_slice(Some(ips));
    let policy_is_single = spec["ipFamilyPolicy"] == "SingleStack";
    let shown_policy = match spec["ipFamilyPolicy"].as_str() {
        Some(p) => go_quote(p),
        None => "\"null\"".to_string(),
    };
    let changed = |at: &str| FieldError::invalid_shown(at, &shown_ips, "may not change once set");
    if !(old_headless && new_headless) {
        if old_ips.len() == ips.len() {
            for (i, (was, now)) in old_ips.iter().zip(ips).enumerate() {
                if was != now {
                    errors.push(changed(&format!("spec.clusterIPs[{i}]")));
                }
            }
        } else if old_ips.len() > ips.len() {
            if ips.is_empty() {
                errors.push(FieldError::invalid_shown(
                    "spec.clusterIPs[0]",
                    &shown_ips,
                    "primary clusterIP can not be unset",
                ));
            } else if ips[0] != old_ips[0] {
                errors.push(changed("spec.clusterIPs[0]"));
            }
            if ips.len() == 1 && !policy_is_single {
                errors.push(FieldError::invalid_shown(
                    "spec.ipFamilyPolicy",
                    &shown_policy,
                    "must be set to 'SingleStack' when releasing the secondary clusterIP",
                ));
            }
        } else if !old_ips.is_empty() && ips[0] != old_ips[0] {
            errors.push(changed("spec.clusterIPs[0]"));
        }
    }
    if new_headless != old_headless || new_headless {
        return errors;
    }
    let families = strings(&spec["ipFamilies"]).unwrap_or_default();
    let old_families = strings(&old_spec["ipFamilies"]).unwrap_or_default();
    let shown_families = format!(
        "[]core.IPFamily{{{}}}",
        families.iter().map(|f| go_quote(f)).collect::<Vec<_>>().join(", ")
    );
    if old_families.len() == families.len() {
        for (was, now) in old_families.iter().zip(&families) {
            if was != now {
                errors.push(FieldError::invalid_shown(
                    "spec.ipFamilies[0]",
                    &shown_families,
                    "may not change once set",
                ));
            }
        }
    } else if old_families.len() > families.len() {
        if ips.is_empty() {
            errors.push(FieldError::invalid_shown(
                "spec.ipFamilies[0]",
                &shown_families,
                "primary ipFamily can not be unset",
            ));
        }
        if !families.is_empty() && families[0] != old_families[0] {
            errors.push(FieldError::invalid_shown(
                "spec.ipFamilies[0]",
                &shown_ips,
                "may not change once set",
            ));
        }
        if families.len() == 1 && !policy_is_single {
            errors.push(FieldError::invalid_shown(
                "spec.ipFamilyPolicy",
                &shown_policy,
                "must be set to 'SingleStack' when releasing the secondary ipFamily",
            ));
        }
    } else if !old_families.is_empty() && !families.is_empty() && families[0] != old_families[0] {
        errors.push(FieldError::invalid_shown(
            "spec.ipFamilies[0]",
            &shown_ips,
            "may not change once set",
        ));
    }
    errors
}

const LB_ONLY: &str = "may only be used when `type` is 'LoadBalancer'";

/// `validateLoadBalancerClassField`: on update (`old_spec` given) fixed while the service
/// stays a LoadBalancer; a qualified name, and only for LoadBalancers. Upstream runs it once
/// for the update and again within the service's own checks.
fn load_balancer_class(spec: &Value, old_spec: Option<&Value>, kind: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let lb = kind == "LoadBalancer";
    let class = &spec["loadBalancerClass"];
    if let Some(old) = old_spec {
        if lb && old["type"] == "LoadBalancer" && &old["loadBalancerClass"] != class {
            errors.push(FieldError::invalid(
                "spec.loadBalancerClass",
                &go_pointee(class),
                "may not change once set",
            ));
        }
    }
    if lb {
        for problem in class.as_str().map(qualified_name_problems).unwrap_or_default() {
            errors.push(FieldError::invalid("spec.loadBalancerClass", class, &problem));
        }
    } else if !class.is_null() {
        errors.push(FieldError::forbidden("spec.loadBalancerClass", LB_ONLY));
    }
    errors
}

/// externalTrafficPolicy (only for services reachable from outside), healthCheckNodePort,
/// internalTrafficPolicy and trafficDistribution.
fn traffic_policies(spec: &Value, kind: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let external = &spec["externalTrafficPolicy"];
    let has_external_ips = spec["externalIPs"].as_array().is_some_and(|ips| !ips.is_empty());
    let accessible =
        matches!(kind, "LoadBalancer" | "NodePort") || (kind == "ClusterIP" && has_external_ips);
    if !accessible {
        if external.as_str().is_some_and(|p| !p.is_empty()) {
            errors.push(FieldError::invalid(
                "spec.externalTrafficPolicy",
                external,
                "may only be set for externally-accessible services",
            ));
        }
    } else if external.as_str().is_some_and(|p| !p.is_empty()) {
        errors.extend(one_of("spec.externalTrafficPolicy", external, &["Cluster", "Local"]));
    }
    let needs_health_check = kind == "LoadBalancer" && external == "Local";
    let health = &spec["healthCheckNodePort"];
    if health.as_i64().is_some_and(|p| p != 0) {
        if !needs_health_check {
            errors.push(FieldError::invalid(
                "spec.healthCheckNodePort",
                health,
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        } else {
            errors.extend(port_number("spec.healthCheckNodePort", health));
        }
    }
    errors.extend(one_of(
        "spec.internalTrafficPolicy",
        &spec["internalTrafficPolicy"],
        &["Cluster", "Local"],
    ));
    errors.extend(one_of(
        "spec.trafficDistribution",
        &spec["trafficDistribution"],
        &["PreferClose"],
    ));
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    fn defaulted(mut svc: Value) -> Value {
        crate::defaults::apply(Resources::builtin().get("", "v1", "services").unwrap(), &mut svc);
        svc
    }

    fn node_port_service() -> Value {
        defaulted(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [
                {"name": "http", "port": 80, "targetPort": "http"},
                {"name": "https", "port": 443, "targetPort": 8443, "nodePort": 30443},
                {"name": "dns", "port": 53, "protocol": "UDP"}]}}))
    }

    #[test]
    fn the_primary_cluster_ip_and_family_are_fixed_once_set() {
        let old = with_spec(json!({"clusterIP": "10.43.0.9", "clusterIPs": ["10.43.0.9"]}));
        // As a patch of clusterIP sends it: the old clusterIPs kept alongside.
        let moved = with_spec(json!({"clusterIP": "10.43.0.10", "clusterIPs": ["10.43.0.9"]}));
        assert_eq!(
            lines(service(&moved, Some(&old))),
            ["spec.clusterIPs[0]: Invalid value: []string{\"10.43.0.10\"}: may not change once set"]
        );
        let same = with_spec(json!({"clusterIP": "10.43.0.9", "clusterIPs": ["10.43.0.9"]}));
        assert!(service(&same, Some(&old)).is_empty());
        // To and from ExternalName, anything goes.
        let external = with_spec(json!({"type": "ExternalName", "externalName": "db.example.com"}));
        assert!(upgrade_downgrade(&external["spec"], &old["spec"], &[]).is_empty());
        let mut families = old.clone();
        families["spec"]["ipFamilies"] = json!(["IPv6"]);
        assert_eq!(
            lines(upgrade_downgrade(&families["spec"], &old["spec"], &["10.43.0.9".to_string()])),
            ["spec.ipFamilies[0]: Invalid value: []core.IPFamily{\"IPv6\"}: may not change once set"]
        );
    }

    fn with_spec(patch: Value) -> Value {
        let mut svc = json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}});
        for (k, v) in patch.as_object().unwrap() {
            svc["spec"][k] = v.clone();
        }
        defaulted(svc)
    }

    #[test]
    fn realistic_services_are_valid() {
        let svc = node_port_service();
        assert_eq!(lines(service(&svc, None)), Vec::<String>::new());
        assert_eq!(lines(service(&svc, Some(&svc))), Vec::<String>::new());
        let headless = with_spec(json!({"clusterIP": "None", "ports": []}));
        assert_eq!(lines(service(&headless, None)), Vec::<String>::new());
        let lb = with_spec(json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
            "loadBalancerSourceRanges": ["10.0.0.0/8"], "sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}}));
        assert_eq!(lines(service(&lb, None)), Vec::<String>::new());
        let external = defaulted(json!({"metadata": {"name": "db"},
            "spec": {"type": "ExternalName", "externalName": "db.example.com."}}));
        assert_eq!(lines(service(&external, None)), Vec::<String>::new());
        // NodePort -> ClusterIP with the old node ports and traffic policy still there is
        // refused, as upstream's validation does: the server drops them first when the client
        // left them unchanged (`server::services`, checked in conformance/server_lifecycle.rs).
        let mut to_cluster_ip = svc.clone();
        to_cluster_ip["spec"]["type"] = json!("ClusterIP");
        assert_eq!(
            lines(service(&to_cluster_ip, Some(&svc))),
            [
                "spec.ports[1].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
                "spec.externalTrafficPolicy: Invalid value: \"Cluster\": may only be set for externally-accessible services",
            ]
        );
    }

    #[test]
    fn ports() {
        let svc = with_spec(json!({"ports": [
            {"name": "Web_1", "port": 80, "protocol": "HTTP", "targetPort": "Web_Port"},
            {"name": "Web_1", "port": 70000, "targetPort": 70000},
            {"port": 80, "protocol": "HTTP", "targetPort": 8080}]}));
        let label = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
        assert_eq!(
            lines(service(&svc, None)),
            [
                format!("spec.ports[0].name: Invalid value: \"Web_1\": {label}"),
                "spec.ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".to_string(),
                "spec.ports[0].targetPort: Invalid value: \"Web_Port\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
                format!("spec.ports[1].name: Invalid value: \"Web_1\": {label}"),
                "spec.ports[1].name: Duplicate value: \"Web_1\"".to_string(),
                "spec.ports[1].port: Invalid value: 70000: must be between 1 and 65535, inclusive".to_string(),
                "spec.ports[1].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive".to_string(),
                "spec.ports[2].name: Required value".to_string(),
                "spec.ports[2].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".to_string(),
                "spec.ports[2]: Duplicate value: core.ServicePort{Name:\"\", Protocol:\"HTTP\", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}".to_string(),
            ]
        );
        // The same port number over TCP and UDP is fine; the same node port twice is not.
        let svc = with_spec(json!({"type": "NodePort", "ports": [
            {"name": "a", "port": 53, "nodePort": 30053},
            {"name": "b", "port": 53, "protocol": "UDP", "nodePort": 30053},
            {"name": "c", "port": 54, "nodePort": 30053}]}));
        assert_eq!(lines(service(&svc, None)), ["spec.ports[2].nodePort: Duplicate value: 30053"]);
        let svc = with_spec(json!({"ports": [{"port": 80, "nodePort": 30080}]}));
        assert_eq!(
            lines(service(&svc, None)),
            ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]
        );
        let svc = with_spec(json!({"type": "LoadBalancer", "ports": [{"port": 10250}]}));
        assert_eq!(
            lines(service(&svc, None)),
            ["spec.ports[0]: Invalid value: 10250: may not expose port 10250 externally since it is used by kubelet"]
        );
        assert_eq!(
            lines(service(&with_spec(json!({"ports": []})), None)),
            ["spec.ports: Required value"]
        );
    }

    #[test]
    fn type_affinity_and_policies() {
        let svc = with_spec(json!({"type": "Internal", "sessionAffinity": "Cookie",
            "selector": {"app": "web server"},
            "internalTrafficPolicy": "Node", "externalTrafficPolicy": "Local"}));
        assert_eq!(
            lines(service(&svc, None)),
            [
                "spec.selector: Invalid value: \"web server\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "spec.sessionAffinity: Unsupported value: \"Cookie\": supported values: \"ClientIP\", \"None\"",
                "spec.type: Unsupported value: \"Internal\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
                "spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set for externally-accessible services",
                "spec.internalTrafficPolicy: Unsupported value: \"Node\": supported values: \"Cluster\", \"Local\"",
            ]
        );
        // Bad IP-family fields are reported alone (upstream's allocator checks them first).
        let svc = with_spec(json!({"sessionAffinity": "ClientIP", "ipFamilyPolicy": "DualStack",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 0}}, "ipFamilies": ["IPv4", "IPv4"]}));
        assert_eq!(
            lines(service(&svc, None)),
            [
                "spec.ipFamilies[1]: Duplicate value: \"IPv4\"",
                "spec.ipFamilyPolicy: Unsupported value: \"DualStack\": supported values: \"PreferDualStack\", \"RequireDualStack\", \"SingleStack\"",
            ]
        );
        let svc = with_spec(json!({"sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 0}}}));
        assert_eq!(
            lines(service(&svc, None)),
            ["spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be greater than 0 and less than 86400"]
        );
        // Defaulting drops `sessionAffinityConfig` when affinity is None, as upstream's does,
        // so its "must not be set" error never reaches a client.
        let svc = with_spec(json!({"sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 60}},
            "type": "NodePort", "externalTrafficPolicy": "Global", "healthCheckNodePort": 31000,
            "allocateLoadBalancerNodePorts": true, "loadBalancerSourceRanges": ["10.0.0.0/8"]}));
        assert_eq!(
            lines(service(&svc, None)),
            [
                "spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'",
                "spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` is 'LoadBalancer'",
                "spec.externalTrafficPolicy: Unsupported value: \"Global\": supported values: \"Cluster\", \"Local\"",
                "spec.healthCheckNodePort: Invalid value: 31000: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ]
        );
    }

    #[test]
    fn external_name_and_headless() {
        let svc = defaulted(json!({"metadata": {"name": "x"},
            "spec": {"type": "ExternalName", "clusterIP": "10.0.0.1", "externalName": "Bad_Name"}}));
        assert_eq!(
            lines(service(&svc, None)),
            [
                "spec.clusterIPs: Forbidden: may not be set for ExternalName services",
                "spec.externalName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ]
        );
        let svc = defaulted(json!({"metadata": {"name": "x"},
            "spec": {"type": "ExternalName", "ipFamilyPolicy": "SingleStack"}}));
        assert_eq!(
            lines(service(&svc, None)),
            [
                "spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services",
                "spec.externalName: Required value",
            ]
        );
        let svc = with_spec(json!({"type": "NodePort", "clusterIP": "None"}));
        assert_eq!(
            lines(service(&svc, None)),
            ["spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"]
        );
    }

    #[test]
    fn cluster_ips_are_checked_first_and_alone() {
        let ip_msg = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
        // A lone clusterIP stands for clusterIPs too; a bad one hides the other errors.
        let svc = with_spec(json!({"clusterIP": "10.43.0.300", "ports": [{"port": 0}]}));
        assert_eq!(
            lines(service(&svc, None)),
            [format!("spec.clusterIPs[0]: Invalid value: \"10.43.0.300\": {ip_msg}")]
        );
        let svc = with_spec(json!({"clusterIP": "10.43.0.10"}));
        assert_eq!(lines(service(&svc, None)), Vec::<String>::new());
        let svc = with_spec(json!({"clusterIP": "010.43.0.10"}));
        assert_eq!(lines(service(&svc, None)), Vec::<String>::new());
        let svc = with_spec(json!({"clusterIP": "10.43.0.10", "clusterIPs": ["10.43.0.11"]}));
        assert_eq!(
            lines(service(&svc, None)),
            ["spec.clusterIPs: Invalid value: []string{\"10.43.0.11\"}: first value must match `clusterIP`"]
        );
        let svc = with_spec(json!({"clusterIPs": ["10.43.0.11"]}));
        assert_eq!(
            lines(service(&svc, None)),
            ["spec.clusterIPs: Invalid value: []string{\"10.43.0.11\"}: must be empty when `clusterIP` is not specified"]
        );
        let svc = with_spec(json!({"clusterIP": "None", "clusterIPs": ["None", "10.43.0.1", "x"],
            "ipFamilies": ["IPv4", "IPv5", "IPv4"], "ipFamilyPolicy": "Dual"}));
        assert_eq!(
            lines(service(&svc, None)),
            [
                "spec.ipFamilies[1]: Unsupported value: \"IPv5\": supported values: \"IPv4\", \"IPv6\"".to_string(),
                "spec.ipFamilies[2]: Duplicate value: \"IPv4\"".into(),
                "spec.ipFamilyPolicy: Unsupported value: \"Dual\": supported values: \"PreferDualStack\", \"RequireDualStack\", \"SingleStack\"".into(),
                "spec.clusterIPs: Invalid value: []string{\"None\", \"10.43.0.1\", \"x\"}: 'None' must be the first and only value".into(),
                format!("spec.clusterIPs[2]: Invalid value: \"x\": {ip_msg}"),
                "spec.clusterIPs: Invalid value: []string{\"None\", \"10.43.0.1\", \"x\"}: may only hold up to 2 values".into(),
            ]
        );
        let svc =
            with_spec(json!({"clusterIP": "10.43.0.1", "clusterIPs": ["10.43.0.1", "10.43.0.2"],
            "ipFamilies": ["IPv6"], "ipFamilyPolicy": "PreferDualStack"}));
        assert_eq!(
            lines(service(&svc, None)),
            [
                "spec.clusterIPs: Invalid value: []string{\"10.43.0.1\", \"10.43.0.2\"}: may specify no more than one IP for each IP family",
                "spec.clusterIPs[0]: Invalid value: \"10.43.0.1\": expected an IPv6 value as indicated by `ipFamilies[0]`",
            ]
        );
    }

    #[test]
    fn families_against_the_single_stack_cluster() {
        let svc =
            with_spec(json!({"clusterIP": "10.43.0.1", "clusterIPs": ["10.43.0.1", "fd00::1"]}));
        assert_eq!(
            lines(service(&svc, None)),
            [
                "spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
                "spec.clusterIPs[1]: Invalid value: []string{\"10.43.0.1\", \"fd00::1\"}: IPv6 is not configured on this cluster",
            ]
        );
        let svc = with_spec(
            json!({"ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv4", "IPv6"]}),
        );
        assert_eq!(
            lines(service(&svc, None)),
            [
                "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services",
                "spec.ipFamilies[1]: Invalid value: \"IPv6\": not configured on this cluster",
            ]
        );
        let svc = with_spec(json!({"ipFamilyPolicy": "PreferDualStack"}));
        assert_eq!(lines(service(&svc, None)), Vec::<String>::new());
        // Headless services without a selector may ask for both families.
        let mut svc = with_spec(json!({"clusterIP": "None", "ipFamilyPolicy": "RequireDualStack",
            "ipFamilies": ["IPv4", "IPv6"]}));
        svc["spec"].as_object_mut().unwrap().remove("selector");
        assert_eq!(lines(service(&svc, None)), Vec::<String>::new());
    }

    #[test]
    fn external_ips_and_source_ranges() {
        let svc = with_spec(json!({"externalIPs": ["203.0.113.7", "0.0.0.0", "127.0.0.2",
            "fe80::1", "224.0.0.251", "::ffff:169.254.1.1", "1.2.3", "::"]}));
        let at = "spec.externalIPs";
        assert_eq!(
            lines(service(&svc, None)),
            [
                format!("{at}[1]: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)"),
                format!("{at}[2]: Invalid value: \"127.0.0.2\": may not be in the loopback range (127.0.0.0/8, ::1/128)"),
                format!("{at}[3]: Invalid value: \"fe80::1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)"),
                format!("{at}[4]: Invalid value: \"224.0.0.251\": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"),
                format!("{at}[5]: Invalid value: \"::ffff:169.254.1.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)"),
                format!("{at}[6]: Invalid value: \"1.2.3\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"),
                format!("{at}[7]: Invalid value: \"::\": may not be unspecified (::)"),
            ]
        );
        let cidr_msg = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
        let svc = with_spec(json!({"type": "LoadBalancer",
            "loadBalancerSourceRanges": [" 10.0.0.0/8 ", "10.1.2.3/16", "10.0.0.0/33", "fd00::/64"]}));
        assert_eq!(
            lines(service(&svc, None)),
            [format!(
                "spec.LoadBalancerSourceRanges[2]: Invalid value: \"10.0.0.0/33\": {cidr_msg}"
            )]
        );
        let mut svc = with_spec(json!({}));
        svc["metadata"]["annotations"] =
            json!({SOURCE_RANGES_ANNOTATION: " 10.0.0.0/8, 300.0.0.0/8 "});
        let at = format!("metadata.annotations[{SOURCE_RANGES_ANNOTATION}]");
        assert_eq!(
            lines(service(&svc, None)),
            [
                format!("{at}: Forbidden: may only be used when `type` is 'LoadBalancer'"),
                format!("{at}: Invalid value: \"300.0.0.0/8\": {cidr_msg}"),
            ]
        );
    }

    #[test]
    fn annotations_and_update_rules() {
        let mut svc = with_spec(json!({}));
        svc["metadata"]["annotations"] =
            json!({TOPOLOGY_MODE_ANNOTATION: "Auto", TOPOLOGY_HINTS_ANNOTATION: "auto"});
        assert_eq!(
            lines(service(&svc, None)),
            [format!("metadata.annotations[{TOPOLOGY_MODE_ANNOTATION}]: Invalid value: \"Auto\": must match annotations[{TOPOLOGY_HINTS_ANNOTATION}] when both are specified")]
        );
        // On update the load-balancer class and health-check port rules come first (the
        // class's format is checked twice, as upstream does).
        let old = with_spec(json!({"type": "LoadBalancer", "loadBalancerClass": "example.com/lb",
            "externalTrafficPolicy": "Local", "healthCheckNodePort": 31000, "clusterIP": "10.43.0.5",
            "clusterIPs": ["10.43.0.5"]}));
        let mut new = old.clone();
        new["spec"]["loadBalancerClass"] = json!("Bad Class");
        new["spec"]["healthCheckNodePort"] = json!(31001);
        new["spec"]["ports"][0]["protocol"] = json!("HTTP");
        let qualified = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        assert_eq!(
            lines(service(&new, Some(&old))),
            [
                "spec.loadBalancerClass: Invalid value: \"Bad Class\": may not change once set".to_string(),
                format!("spec.loadBalancerClass: Invalid value: \"Bad Class\": {qualified}"),
                "spec.healthCheckNodePort: Forbidden: field is immutable".into(),
                "spec.ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".into(),
                format!("spec.loadBalancerClass: Invalid value: \"Bad Class\": {qualified}"),
            ]
        );
        // A resubmitted service without its allocated IPs (the server patched them back in)
        // and an ExternalName becoming a ClusterIP service are fine.
        let mut resubmit = old.clone();
        resubmit["spec"].as_object_mut().unwrap().remove("clusterIPs");
        assert_eq!(lines(service(&resubmit, Some(&old))), Vec::<String>::new());
        let external = defaulted(json!({"metadata": {"name": "s"},
            "spec": {"type": "ExternalName", "externalName": "db.example.com"}}));
        let back = with_spec(json!({}));
        assert_eq!(lines(service(&back, Some(&external))), Vec::<String>::new());
        let back = with_spec(json!({"clusterIP": "10.43.0.9"}));
        assert_eq!(lines(service(&back, Some(&external))), Vec::<String>::new());
    }
}
