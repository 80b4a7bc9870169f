//! Validation of apiregistration.k8s.io/v1: APIServices, with upstream's (v1.33) messages and
//! field paths (`ValidateAPIService[Update]` of kube-aggregator): the name, group, version,
//! priorities, service reference and TLS settings.

use base64::Engine;
use serde_json::Value;

use super::values::{range_msg, str_of, text};
use super::{name_problems, FieldError, NameRule};
use crate::gofmt::go_quote;

/// An APIService, on create or update (upstream runs the same checks on both): the name must
/// be `<version>.<group>`, the group a DNS subdomain (empty only for the legacy `v1`), the
/// version a DNS-1035 label, the priorities in range, and a service reference complete while
/// a local service (none) has no TLS settings.
pub fn api_service(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let _ = old;
    let spec = &obj["spec"];
    let (group, version) = (str_of(&spec["group"]), str_of(&spec["version"]));
    let required = format!("{version}.{group}");
    let mut errors = Vec::new();
    let meta = &obj["metadata"];
    for field in ["generateName", "name"] {
        let name = str_of(&meta[field]);
        if !name.is_empty()
            && name_problems(name, NameRule::PathSegment).is_empty()
            && name != required
        {
            errors.push(FieldError::invalid(
                format!("metadata.{field}"),
                &meta[field],
                &format!("must be `spec.version+\".\"+spec.group`: {}", go_quote(&required)),
            ));
        }
    }
    if group.is_empty() && version != "v1" {
        errors.push(FieldError::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for p in name_problems(group, NameRule::Subdomain) {
            errors.push(FieldError::invalid("spec.group", &text(group), &p));
        }
    }
    for p in name_problems(version, NameRule::Dns1035Label) {
        errors.push(FieldError::invalid("spec.version", &text(version), &p));
    }
    let group_priority = spec["groupPriorityMinimum"].as_i64().unwrap_or(0);
    if !(1..=20000).contains(&group_priority) {
        errors.push(FieldError::invalid(
            "spec.groupPriorityMinimum",
            &Value::from(group_priority),
            "must be positive and less than 20000",
        ));
    }
    let version_priority = spec["versionPriority"].as_i64().unwrap_or(0);
    if !(1..=1000).contains(&version_priority) {
        errors.push(FieldError::invalid(
            "spec.versionPriority",
            &Value::from(version_priority),
            "must be positive and less than 1000",
        ));
    }
    let ca_bundle = ca_bundle_len(&spec["caBundle"]);
    let insecure = spec["insecureSkipTLSVerify"] == true;
    let service = &spec["service"];
    if service.is_null() {
        if ca_bundle > 0 {
            errors.push(FieldError::invalid(
                "spec.caBundle",
                &text(&format!("{ca_bundle} bytes")),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errors.push(FieldError::invalid(
                "spec.insecureSkipTLSVerify",
                &Value::Bool(true),
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return errors;
    }
    if str_of(&service["namespace"]).is_empty() {
        errors.push(FieldError::required("spec.service.namespace", ""));
    }
    if str_of(&service["name"]).is_empty() {
        errors.push(FieldError::required("spec.service.name", ""));
    }
    let port = service["port"].as_i64().unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errors.push(FieldError::invalid(
            "spec.service.port",
            &Value::from(port),
            &format!("port is not valid: {}", range_msg(1, 65535)),
        ));
    }
    if insecure && ca_bundle > 0 {
        errors.push(FieldError::invalid(
            "spec.insecureSkipTLSVerify",
            &Value::Bool(true),
            "may not be true if caBundle is present",
        ));
    }
    errors
}

/// The decoded length of a base64 `[]byte` field.
fn ca_bundle_len(v: &Value) -> usize {
    let s = str_of(v);
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_or_else(|_| s.len() / 4 * 3, |b| b.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    fn api_service_object(spec: Value) -> Value {
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": spec})
    }

    #[test]
    fn api_services() {
        let good = api_service_object(json!({"group": "metrics.k8s.io", "version": "v1beta1",
            "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443},
            "insecureSkipTLSVerify": true, "groupPriorityMinimum": 100, "versionPriority": 100}));
        assert!(api_service(&good, None).is_empty());
        assert!(api_service(&good, Some(&good)).is_empty());
        let bad = api_service_object(json!({"group": "Metrics", "version": "1", 
            "service": {"namespace": "", "name": "m", "port": 70000},
            "insecureSkipTLSVerify": true, "caBundle": "AAAA", "groupPriorityMinimum": 0, "versionPriority": 1001}));
        let errors = lines(api_service(&bad, None));
        assert_eq!(errors[0], "metadata.name: Invalid value: \"v1beta1.metrics.k8s.io\": must be `spec.version+\".\"+spec.group`: \"1.Metrics\"");
        assert!(errors[1]
            .starts_with("spec.group: Invalid value: \"Metrics\": a lowercase RFC 1123 subdomain"));
        assert!(errors[2].starts_with("spec.version: Invalid value: \"1\": a DNS-1035 label"));
        assert_eq!(
            errors[3..],
            [
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
                "spec.service.namespace: Required value",
                "spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
                "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
            ]
        );
        let local = api_service_object(json!({"group": "", "version": "v2",
            "insecureSkipTLSVerify": true, "caBundle": "AAAA", "groupPriorityMinimum": 1, "versionPriority": 1}));
        assert_eq!(
            lines(api_service(&local, None)),
            [
                "metadata.name: Invalid value: \"v1beta1.metrics.k8s.io\": must be `spec.version+\".\"+spec.group`: \"v2.\"",
                "spec.group: Required value: only v1 may have an empty group and it better be legacy kube",
                "spec.caBundle: Invalid value: \"3 bytes\": local APIServices may not have a caBundle",
                "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
            ]
        );
    }
}
