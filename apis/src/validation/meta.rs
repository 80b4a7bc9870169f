//! Names and object metadata: the name rules each kind's `metadata.name` follows
//! ([`NameRule`]), label keys and values, and upstream's ObjectMeta checks
//! ([`validate_object_meta`]), with upstream's messages.

use serde_json::Value;

use super::net;
use super::values::{annotation_map, label_map};
use super::FieldError;
use crate::gofmt::go_quote;

/// Which rule an object's name follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// Most kinds: an RFC 1123 subdomain.
    Subdomain,
    /// Namespaces: an RFC 1123 label.
    Label,
    /// Services: an RFC 1035 label (starts with a letter).
    Dns1035Label,
    /// RBAC kinds and a few others: anything usable as a path segment.
    PathSegment,
    /// IPAddresses: an IP address in canonical form.
    IpAddress,
    /// CertificateSigningRequests: any name (upstream's name check for them accepts all).
    Any,
}

pub(super) const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
pub(super) const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// The problems with `name` under `rule`, as upstream's messages (empty when it is fine).
pub fn name_problems(name: &str, rule: NameRule) -> Vec<String> {
    let mut problems = Vec::new();
    match rule {
        NameRule::Subdomain => {
            if name.len() > 253 {
                problems.push("must be no more than 253 characters".to_string());
            }
            if !name.split('.').all(is_label) {
                problems.push(SUBDOMAIN_MSG.to_string());
            }
        }
        NameRule::Label => {
            if name.len() > 63 {
                problems.push("must be no more than 63 characters".to_string());
            }
            if !is_label(name) {
                problems.push(LABEL_MSG.to_string());
            }
        }
        NameRule::Dns1035Label => {
            if name.len() > 63 {
                problems.push("must be no more than 63 characters".to_string());
            }
            if !is_label(name) || !name.as_bytes()[0].is_ascii_lowercase() {
                problems.push(DNS1035_MSG.to_string());
            }
        }
        NameRule::Any => {}
        NameRule::IpAddress => {
            // Upstream reuses the field check's details for the name.
            let prefix = format!("Invalid value: {}: ", go_quote(name));
            for e in net::ip_strict("metadata.name", name) {
                problems.push(e.message.strip_prefix(&prefix).unwrap_or(&e.message).to_string());
            }
        }
        NameRule::PathSegment => {
            if name == "." || name == ".." {
                problems.push(format!("may not be '{name}'"));
            }
            for bad in ["/", "%"] {
                if name.contains(bad) {
                    problems.push(format!("may not contain '{bad}'"));
                }
            }
        }
    }
    problems
}

/// A label or annotation key (upstream's `IsQualifiedName`): an optional DNS subdomain prefix
/// and `/`, then a name of at most 63 characters. Returns upstream's messages.
pub fn qualified_name_problems(key: &str) -> Vec<String> {
    crate::selectors::qualified_name_errors(key)
}

/// A label value: empty, or at most 63 characters of the label-name alphabet.
pub fn label_value_problems(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if value.is_empty() {
        return problems;
    }
    if value.len() > 63 {
        problems.push("must be no more than 63 characters".to_string());
    }
    let b = value.as_bytes();
    let ok = b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric();
    if !ok {
        problems.push("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string());
    }
    problems
}

/// Checks `metadata` the way upstream's ObjectMeta validation does: name (or generateName),
/// namespace presence, labels and annotations.
pub fn validate_object_meta(obj: &Value, namespaced: bool, rule: NameRule) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let meta = &obj["metadata"];
    let name = meta["name"].as_str().unwrap_or("");
    if name.is_empty() {
        errors.push(FieldError::required("metadata.name", "name or generateName is required"));
    } else {
        for p in name_problems(name, rule) {
            errors.push(FieldError::invalid("metadata.name", &meta["name"], &p));
        }
    }
    let namespace = meta["namespace"].as_str().unwrap_or("");
    if namespaced && namespace.is_empty() {
        errors.push(FieldError::required("metadata.namespace", ""));
    } else if !namespaced && !namespace.is_empty() {
        errors.push(FieldError::forbidden("metadata.namespace", "not allowed on this type"));
    }
    errors.extend(label_map("metadata.labels", &meta["labels"]));
    errors.extend(annotation_map("metadata.annotations", &meta["annotations"]));
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_their_rules() {
        assert!(name_problems("web-1.example", NameRule::Subdomain).is_empty());
        assert_eq!(name_problems("Web", NameRule::Subdomain), vec![SUBDOMAIN_MSG.to_string()]);
        assert!(name_problems("a.b", NameRule::Label).len() == 1);
        assert!(name_problems("1abc", NameRule::Dns1035Label).len() == 1);
        assert!(name_problems("1abc", NameRule::Label).is_empty());
        assert_eq!(name_problems("a/b", NameRule::PathSegment), vec!["may not contain '/'"]);
        assert_eq!(
            name_problems(&"a".repeat(64), NameRule::Label)[0],
            "must be no more than 63 characters"
        );
    }

    #[test]
    fn object_meta_errors_read_like_upstream() {
        let errors = validate_object_meta(
            &json!({"metadata": {"name": "Bad_Name", "namespace": "default"}}),
            true,
            NameRule::Subdomain,
        );
        assert_eq!(errors.len(), 1);
        assert!(errors[0].line().starts_with(
            "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"
        ));
        let errors = validate_object_meta(
            &json!({"metadata": {"namespace": "default"}}),
            true,
            NameRule::Subdomain,
        );
        assert_eq!(
            errors[0].line(),
            "metadata.name: Required value: name or generateName is required"
        );
        let errors = validate_object_meta(
            &json!({"metadata": {"name": "x", "labels": {"a": "b c"}}}),
            false,
            NameRule::Subdomain,
        );
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "metadata.labels");
    }

    #[test]
    fn label_values() {
        assert!(label_value_problems("").is_empty());
        assert!(label_value_problems("v1.2_x-y").is_empty());
        assert_eq!(label_value_problems("-a").len(), 1);
        assert_eq!(
            label_value_problems(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
    }
}
