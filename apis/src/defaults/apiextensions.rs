//! Defaults of `apiextensions.k8s.io/v1` (apiextensions-apiserver's `defaults.go`):
//! CustomResourceDefinitions.

use serde_json::{json, Value};

use super::admissionregistration::service_reference;
use super::{default, field};

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

#[cfg(test)]
mod tests {
    use super::super::test_support::defaulted;
    use super::*;

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
}
