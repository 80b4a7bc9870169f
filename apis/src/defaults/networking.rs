//! Defaults of `networking.k8s.io/v1` (`pkg/apis/networking/v1/defaults.go` upstream):
//! NetworkPolicies and IngressClasses.

use serde_json::{json, Value};

use super::{default, field, is_empty_list, items};

/// A NetworkPolicy's defaults.
pub fn network_policy(obj: &mut Value) {
    field(obj, "spec").into_iter().for_each(network_policy_spec)
}

/// An IngressClass's defaults: parameters name a cluster-scoped object unless they say
/// otherwise.
pub fn ingress_class(obj: &mut Value) {
    if let Some(parameters) = field(obj, "spec").and_then(|s| field(s, "parameters")) {
        default(parameters, "scope", json!("Cluster"));
    }
}

/// A policy without types is an ingress policy, and an egress one too when it has egress
/// rules; ports are TCP unless they say otherwise.
fn network_policy_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    for direction in ["ingress", "egress"] {
        let rules = spec.get_mut(direction).and_then(Value::as_array_mut);
        for rule in rules.into_iter().flatten() {
            for port in items(rule, "ports") {
                default(port, "protocol", json!("TCP"));
            }
        }
    }
    if is_empty_list(spec.get("policyTypes")) {
        let egress = !is_empty_list(spec.get("egress"));
        spec["policyTypes"] =
            if egress { json!(["Ingress", "Egress"]) } else { json!(["Ingress"]) };
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::defaulted_in as defaulted;
    use super::*;

    #[test]
    fn network_policies_get_types_and_protocols() {
        let np = defaulted(
            "networking.k8s.io",
            "v1",
            "networkpolicies",
            json!({"spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}, {}]}}),
        );
        assert_eq!(
            np["spec"],
            json!({"podSelector": {}, "ingress": [{"ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}, {}],
                "policyTypes": ["Ingress"]})
        );
        let np = defaulted(
            "networking.k8s.io",
            "v1",
            "networkpolicies",
            json!({"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 443}]}], "policyTypes": []}}),
        );
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        let np = defaulted(
            "networking.k8s.io",
            "v1",
            "networkpolicies",
            json!({"spec": {"podSelector": {}, "egress": [{}], "policyTypes": ["Egress"]}}),
        );
        assert_eq!(
            np["spec"],
            json!({"podSelector": {}, "egress": [{}], "policyTypes": ["Egress"]})
        );
    }

    #[test]
    fn ingress_class_parameters_are_cluster_scoped() {
        let class = defaulted(
            "networking.k8s.io",
            "v1",
            "ingressclasses",
            json!({"spec": {"controller": "example.com/ingress", "parameters": {"kind": "P", "name": "p"}}}),
        );
        assert_eq!(
            class["spec"]["parameters"],
            json!({"kind": "P", "name": "p", "scope": "Cluster"})
        );
        let class = defaulted(
            "networking.k8s.io",
            "v1",
            "ingressclasses",
            json!({"spec": {"controller": "example.com/ingress"}}),
        );
        assert_eq!(class, json!({"spec": {"controller": "example.com/ingress"}}));
    }
}
