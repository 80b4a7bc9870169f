//! Defaults of `admissionregistration.k8s.io/v1` (`pkg/apis/admissionregistration/v1/defaults.go`
//! upstream): webhook configurations and admission policies. None depends on a feature gate
//! in v1.33.

use serde_json::{json, Value};

use super::{default, field, items};

/// A ValidatingWebhookConfiguration's defaults.
pub fn validating_webhook_configuration(obj: &mut Value) {
    items(obj, "webhooks").for_each(webhook);
}

/// A MutatingWebhookConfiguration's defaults.
pub fn mutating_webhook_configuration(obj: &mut Value) {
    items(obj, "webhooks").for_each(|w| {
        webhook(w);
        // Only mutating webhooks are called again after later mutations.
        default(w, "reinvocationPolicy", json!("Never"));
    });
}

/// A ValidatingAdmissionPolicy's defaults.
pub fn validating_admission_policy(obj: &mut Value) {
    if let Some(spec) = field(obj, "spec") {
        default(spec, "failurePolicy", json!("Fail"));
        field(spec, "matchConstraints").into_iter().for_each(match_resources);
    }
}

/// A ValidatingAdmissionPolicyBinding's defaults. v1 leaves
/// `paramRef.parameterNotFoundAction` to the client (it is required).
pub fn validating_admission_policy_binding(obj: &mut Value) {
    if let Some(spec) = field(obj, "spec") {
        field(spec, "matchResources").into_iter().for_each(match_resources);
    }
}

/// What validating and mutating webhooks share. In v1, `sideEffects` and
/// `admissionReviewVersions` are required rather than defaulted (v1beta1 defaulted them).
fn webhook(w: &mut Value) {
    default(w, "failurePolicy", json!("Fail"));
    default(w, "matchPolicy", json!("Equivalent"));
    // An empty selector matches everything.
    default(w, "namespaceSelector", json!({}));
    default(w, "objectSelector", json!({}));
    default(w, "timeoutSeconds", json!(10));
    items(w, "rules").for_each(rule);
    if let Some(config) = field(w, "clientConfig") {
        field(config, "service").into_iter().for_each(service_reference);
    }
}

/// A webhook's or a policy's rule applies to cluster and namespaced resources alike unless
/// it says otherwise.
fn rule(r: &mut Value) {
    default(r, "scope", json!("*"));
}

/// A webhook service (admission or CRD conversion) is called on the HTTPS port.
pub(super) fn service_reference(service: &mut Value) {
    default(service, "port", json!(443));
}

/// A policy's `matchConstraints` or a binding's `matchResources`: matched like a webhook.
fn match_resources(m: &mut Value) {
    if !m.is_object() {
        return;
    }
    default(m, "matchPolicy", json!("Equivalent"));
    default(m, "namespaceSelector", json!({}));
    default(m, "objectSelector", json!({}));
    items(m, "resourceRules").for_each(rule);
    items(m, "excludeResourceRules").for_each(rule);
}

#[cfg(test)]
mod tests {
    use super::super::test_support::defaulted;
    use super::*;

    const ADMISSION: &str = "admissionregistration.k8s.io";

    #[test]
    fn validating_webhooks_get_v1_defaults() {
        let config = json!({"metadata": {"name": "v"}, "webhooks": [{
            "name": "v.example.com",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]
        }]});
        assert_eq!(
            defaulted(ADMISSION, "validatingwebhookconfigurations", config),
            json!({"metadata": {"name": "v"}, "webhooks": [{
                "name": "v.example.com",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 443}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "*"}],
                "failurePolicy": "Fail",
                "matchPolicy": "Equivalent",
                "namespaceSelector": {},
                "objectSelector": {},
                "timeoutSeconds": 10
            }]})
        );
    }

    #[test]
    fn mutating_webhooks_also_get_a_reinvocation_policy() {
        let config = json!({"metadata": {"name": "m"}, "webhooks": [{
            "name": "m.example.com",
            "clientConfig": {"url": "https://example.com/mutate"}
        }]});
        assert_eq!(
            defaulted(ADMISSION, "mutatingwebhookconfigurations", config),
            json!({"metadata": {"name": "m"}, "webhooks": [{
                "name": "m.example.com",
                "clientConfig": {"url": "https://example.com/mutate"},
                "failurePolicy": "Fail",
                "matchPolicy": "Equivalent",
                "namespaceSelector": {},
                "objectSelector": {},
                "timeoutSeconds": 10,
                "reinvocationPolicy": "Never"
            }]})
        );
    }

    #[test]
    fn webhooks_keep_what_the_client_set_and_gain_no_nulls() {
        let webhook = json!({
            "name": "w.example.com",
            "clientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 8443}},
            "rules": [{"scope": "Namespaced"}],
            "failurePolicy": "Ignore",
            "matchPolicy": "Exact",
            "namespaceSelector": {"matchLabels": {"a": "b"}},
            "objectSelector": {"matchLabels": {"c": "d"}},
            "timeoutSeconds": 5,
            "reinvocationPolicy": "IfNeeded"
        });
        let config = json!({"metadata": {"name": "m"}, "webhooks": [webhook.clone()]});
        assert_eq!(defaulted(ADMISSION, "mutatingwebhookconfigurations", config.clone()), config);
        // No webhooks: nothing to default, and no `webhooks` is added.
        let empty = json!({"metadata": {"name": "m"}});
        assert_eq!(defaulted(ADMISSION, "validatingwebhookconfigurations", empty.clone()), empty);
        let null = json!({"metadata": {"name": "m"}, "webhooks": null});
        assert_eq!(defaulted(ADMISSION, "mutatingwebhookconfigurations", null.clone()), null);
    }

    #[test]
    fn validating_admission_policies_get_failure_policy_and_match_defaults() {
        let policy = json!({"metadata": {"name": "p"}, "spec": {
            "matchConstraints": {
                "resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}],
                "excludeResourceRules": [{"operations": ["*"], "apiGroups": [""], "apiVersions": ["*"], "resources": ["pods"], "scope": "Cluster"}]
            },
            "validations": [{"expression": "object.spec.replicas <= 5"}]
        }});
        assert_eq!(
            defaulted(ADMISSION, "validatingadmissionpolicies", policy),
            json!({"metadata": {"name": "p"}, "spec": {
                "matchConstraints": {
                    "resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"], "scope": "*"}],
                    "excludeResourceRules": [{"operations": ["*"], "apiGroups": [""], "apiVersions": ["*"], "resources": ["pods"], "scope": "Cluster"}],
                    "matchPolicy": "Equivalent",
                    "namespaceSelector": {},
                    "objectSelector": {}
                },
                "validations": [{"expression": "object.spec.replicas <= 5"}],
                "failurePolicy": "Fail"
            }})
        );
        // Without matchConstraints none is made up; without spec nothing is added.
        let bare = json!({"metadata": {"name": "p"}, "spec": {"failurePolicy": "Ignore"}});
        assert_eq!(defaulted(ADMISSION, "validatingadmissionpolicies", bare.clone()), bare);
        let no_spec = json!({"metadata": {"name": "p"}});
        assert_eq!(defaulted(ADMISSION, "validatingadmissionpolicies", no_spec.clone()), no_spec);
    }

    #[test]
    fn bindings_default_only_their_match_resources() {
        let binding = json!({"metadata": {"name": "b"}, "spec": {
            "policyName": "p",
            "validationActions": ["Deny"],
            "paramRef": {"name": "params"},
            "matchResources": {"namespaceSelector": {"matchLabels": {"env": "test"}}}
        }});
        assert_eq!(
            defaulted(ADMISSION, "validatingadmissionpolicybindings", binding),
            json!({"metadata": {"name": "b"}, "spec": {
                "policyName": "p",
                "validationActions": ["Deny"],
                "paramRef": {"name": "params"},
                "matchResources": {
                    "namespaceSelector": {"matchLabels": {"env": "test"}},
                    "matchPolicy": "Equivalent",
                    "objectSelector": {}
                }
            }})
        );
        let plain = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": ["Deny"]}});
        assert_eq!(defaulted(ADMISSION, "validatingadmissionpolicybindings", plain.clone()), plain);
    }
}
