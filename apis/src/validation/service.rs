//! Services: type, ports (names, protocols, target ports, node ports, duplicates), selector,
//! session affinity, traffic policies, IP families and ExternalName, with upstream's (v1.33)
//! messages and field paths (`ValidateService`, `validateServicePort`).
//!
//! Validation runs before the ClusterIP and NodePorts are allocated (`server::services`),
//! which also owns the "may not change once set" rule for the ClusterIP on update. A field
//! upstream defaults (type, protocol, targetPort, sessionAffinity, traffic policies) is never
//! an error when absent, whether or not rkube's defaulting filled it.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::values::{label_map, one_of, port_name_problems, port_number};
use super::{name_problems, qualified_name_problems, FieldError, NameRule};
use crate::gofmt::{go_int_or_string, go_pointee, go_quote};

/// The kubelet's port, which no LoadBalancer may expose.
const KUBELET_PORT: i64 = 10250;

/// Upper bound of `sessionAffinityConfig.clientIP.timeoutSeconds` (one day).
const MAX_AFFINITY_SECONDS: i64 = 86400;

fn is_headless(spec: &Value) -> bool {
    spec["clusterIP"] == "None" || spec["clusterIPs"] == json!(["None"])
}

pub fn service(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let old_spec = old.map(|o| &o["spec"]);
    let kind = spec["type"].as_str().unwrap_or("ClusterIP");
    let headless = is_headless(spec);
    let ports = spec["ports"].as_array().map_or(&[][..], Vec::as_slice);
    let mut errors = Vec::new();

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
    if kind != "ExternalName" {
        errors.extend(ip_families(spec));
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
    errors.extend(load_balancer_fields(spec, old_spec, kind));
    errors.extend(traffic_policies(spec, kind));
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

/// `ipFamilies` entries and `ipFamilyPolicy` (the cluster IPs themselves are checked when
/// they are allocated).
fn ip_families(spec: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut seen = HashSet::new();
    for (i, family) in spec["ipFamilies"].as_array().into_iter().flatten().enumerate() {
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

/// Fields for LoadBalancer services only.
fn load_balancer_fields(spec: &Value, old_spec: Option<&Value>, kind: &str) -> Vec<FieldError> {
    const LB_ONLY: &str = "may only be used when `type` is 'LoadBalancer'";
    let mut errors = Vec::new();
    let lb = kind == "LoadBalancer";
    // Upstream's path really is capitalised here.
    if !lb && spec["loadBalancerSourceRanges"].as_array().is_some_and(|r| !r.is_empty()) {
        errors.push(FieldError::forbidden("spec.LoadBalancerSourceRanges", LB_ONLY));
    }
    if !lb && !spec["allocateLoadBalancerNodePorts"].is_null() {
        errors.push(FieldError::forbidden("spec.allocateLoadBalancerNodePorts", LB_ONLY));
    }
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
            "selector": {"app": "web server"}, "ipFamilyPolicy": "DualStack",
            "internalTrafficPolicy": "Node", "externalTrafficPolicy": "Local"}));
        assert_eq!(
            lines(service(&svc, None)),
            [
                "spec.selector: Invalid value: \"web server\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "spec.sessionAffinity: Unsupported value: \"Cookie\": supported values: \"ClientIP\", \"None\"",
                "spec.ipFamilyPolicy: Unsupported value: \"DualStack\": supported values: \"PreferDualStack\", \"RequireDualStack\", \"SingleStack\"",
                "spec.type: Unsupported value: \"Internal\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
                "spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set for externally-accessible services",
                "spec.internalTrafficPolicy: Unsupported value: \"Node\": supported values: \"Cluster\", \"Local\"",
            ]
        );
        let svc = with_spec(json!({"sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 0}}, "ipFamilies": ["IPv4", "IPv4"]}));
        assert_eq!(
            lines(service(&svc, None)),
            [
                "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be greater than 0 and less than 86400",
                "spec.ipFamilies[1]: Duplicate value: \"IPv4\"",
            ]
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
}
