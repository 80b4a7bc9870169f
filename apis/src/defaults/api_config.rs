//! Defaults of the groups that configure the API server itself: admissionregistration.k8s.io,
//! apiextensions.k8s.io and flowcontrol.apiserver.k8s.io (each group's `defaults.go` upstream).
//! None of these defaults depends on a feature gate in v1.33.

use serde_json::{json, Value};

use super::{default, default_unset, field, items};

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

/// A FlowSchema's defaults: `matchingPrecedence` is a plain integer upstream, so 0 counts as
/// unset too.
pub fn flow_schema(obj: &mut Value) {
    field(obj, "spec")
        .into_iter()
        .for_each(|s| default_unset(s, "matchingPrecedence", json!(1000)));
}

/// A PriorityLevelConfiguration's defaults.
pub fn priority_level_configuration(obj: &mut Value) {
    if let Some(spec) = field(obj, "spec") {
        field(spec, "limited").into_iter().for_each(limited_priority_level);
        field(spec, "exempt").into_iter().for_each(exempt_priority_level);
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
fn service_reference(service: &mut Value) {
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

/// The CRD's names are completed from its kind, conversion is `None` unless asked for, and
/// the storage version is recorded as stored. Status' `acceptedNames` and `conditions` are
/// not defaults: upstream's naming and establishing controllers write them.
pub fn custom_resource_definition(crd: &mut Value) {
    let Some(spec) = field(crd, "spec").filter(|s| s.is_object()) else {
        return;
    };
    if let Some(names) = field(spec, "names").filter(|n| n.is_object()) {
        if let Some(kind) = names["kind"].as_str().filter(|k| !k.is_empty()) {
            let (singular, list_kind) = (kind.to_lowercase(), format!("{kind}List"));
            if names["singular"].as_str().is_none_or(str::is_empty) {
                names["singular"] = json!(singular);
            }
            if names["listKind"].as_str().is_none_or(str::is_empty) {
                names["listKind"] = json!(list_kind);
            }
        }
    }
    default(spec, "conversion", json!({"strategy": "None"}));
    if let Some(webhook) = field(spec, "conversion").and_then(|c| field(c, "webhook")) {
        if let Some(config) = field(webhook, "clientConfig") {
            field(config, "service").into_iter().for_each(service_reference);
        }
    }
    // The version marked for storage.
    let storage = spec["versions"].as_array().and_then(|versions| {
        versions.iter().find(|v| v["storage"] == true).map(|v| v["name"].clone())
    });
    if let Some(name) = storage.filter(Value::is_string) {
        default(crd, "status", json!({}));
        if let Some(status) = field(crd, "status") {
            // Every version objects were ever stored in, so a storage migration knows what
            // to rewrite: a new storage version joins the list (upstream's strategy does this
            // on create and on every update).
            if !status["storedVersions"].is_array() {
                status["storedVersions"] = json!([]);
            }
            let stored = status["storedVersions"].as_array_mut().expect("a list");
            if !stored.contains(&name) {
                stored.push(name);
            }
        }
    }
}

/// A limited priority level: 30 nominal shares (an explicit 0 is kept: the field is a pointer
/// in v1), nothing lent, and the queuing parameters when it queues.
fn limited_priority_level(limited: &mut Value) {
    default(limited, "nominalConcurrencyShares", json!(30));
    default(limited, "lendablePercent", json!(0));
    if let Some(queuing) = field(limited, "limitResponse").and_then(|r| field(r, "queuing")) {
        default_unset(queuing, "handSize", json!(8));
        default_unset(queuing, "queues", json!(64));
        default_unset(queuing, "queueLengthLimit", json!(50));
    }
}

/// The exempt priority level: no nominal shares and nothing lent.
fn exempt_priority_level(exempt: &mut Value) {
    default(exempt, "nominalConcurrencyShares", json!(0));
    default(exempt, "lendablePercent", json!(0));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defaults::apply;
    use crate::resources::Resources;

    fn defaulted(group: &str, plural: &str, mut obj: Value) -> Value {
        let info = Resources::builtin().get(group, "v1", plural).unwrap();
        apply(info, &mut obj);
        obj
    }

    const ADMISSION: &str = "admissionregistration.k8s.io";
    const FLOW: &str = "flowcontrol.apiserver.k8s.io";

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

    #[test]
    fn crds_get_names_conversion_and_stored_versions() {
        let crd = json!({"metadata": {"name": "widgets.example.com"}, "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1beta1", "served": true, "storage": false},
                {"name": "v1", "served": true, "storage": true}
            ]
        }});
        assert_eq!(
            defaulted("apiextensions.k8s.io", "customresourcedefinitions", crd),
            json!({"metadata": {"name": "widgets.example.com"}, "spec": {
                "group": "example.com",
                "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                "scope": "Namespaced",
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false},
                    {"name": "v1", "served": true, "storage": true}
                ],
                "conversion": {"strategy": "None"}
            }, "status": {"storedVersions": ["v1"]}})
        );
    }

    #[test]
    fn crds_keep_what_the_client_set() {
        let crd = json!({"metadata": {"name": "widgets.example.com"}, "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "gadget", "listKind": "Gadgets"},
            "scope": "Cluster",
            "versions": [{"name": "v2", "served": true, "storage": true}],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"service": {"namespace": "ns", "name": "conv"}}
            }}
        }, "status": {"storedVersions": ["v1", "v2"]}});
        let mut expected = crd.clone();
        expected["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] = json!(443);
        assert_eq!(defaulted("apiextensions.k8s.io", "customresourcedefinitions", crd), expected);
        // No kind: no names are made up; no storage version: no status.
        let partial = json!({"metadata": {"name": "x.example.com"}, "spec": {
            "names": {"plural": "x"},
            "versions": [{"name": "v1", "served": true, "storage": false}],
            "conversion": {"strategy": "None"}
        }});
        assert_eq!(
            defaulted("apiextensions.k8s.io", "customresourcedefinitions", partial.clone()),
            partial
        );
        let no_spec = json!({"metadata": {"name": "x.example.com"}});
        assert_eq!(
            defaulted("apiextensions.k8s.io", "customresourcedefinitions", no_spec.clone()),
            no_spec
        );
    }

    #[test]
    fn flow_schemas_get_a_matching_precedence() {
        let schema = |spec: Value| json!({"metadata": {"name": "f"}, "spec": spec});
        let plc = json!({"priorityLevelConfiguration": {"name": "global-default"}});
        let mut expected = plc.clone();
        expected["matchingPrecedence"] = json!(1000);
        assert_eq!(defaulted(FLOW, "flowschemas", schema(plc.clone())), schema(expected.clone()));
        let mut zero = plc.clone();
        zero["matchingPrecedence"] = json!(0);
        assert_eq!(defaulted(FLOW, "flowschemas", schema(zero)), schema(expected));
        let mut set = plc;
        set["matchingPrecedence"] = json!(500);
        assert_eq!(defaulted(FLOW, "flowschemas", schema(set.clone())), schema(set));
        let no_spec = json!({"metadata": {"name": "f"}});
        assert_eq!(defaulted(FLOW, "flowschemas", no_spec.clone()), no_spec);
    }

    #[test]
    fn limited_priority_levels_get_shares_and_queuing() {
        let plc = json!({"metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {
            "limitResponse": {"type": "Queue", "queuing": {"queues": 0}}
        }}});
        assert_eq!(
            defaulted(FLOW, "prioritylevelconfigurations", plc),
            json!({"metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {
                "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}},
                "nominalConcurrencyShares": 30,
                "lendablePercent": 0
            }}})
        );
        // Rejecting adds no queuing; an explicit 0 share is kept (a pointer in v1).
        let reject = json!({"metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 0,
            "lendablePercent": 50,
            "borrowingLimitPercent": 10,
            "limitResponse": {"type": "Reject"}
        }}});
        assert_eq!(defaulted(FLOW, "prioritylevelconfigurations", reject.clone()), reject);
    }

    #[test]
    fn exempt_priority_levels_get_zero_shares() {
        let plc = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}}});
        assert_eq!(
            defaulted(FLOW, "prioritylevelconfigurations", plc),
            json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {
                "nominalConcurrencyShares": 0,
                "lendablePercent": 0
            }}})
        );
        // `exempt` is not made up when the client leaves it out.
        let bare = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt"}});
        assert_eq!(defaulted(FLOW, "prioritylevelconfigurations", bare.clone()), bare);
    }
}
