//! Defaults of `scheduling.k8s.io/v1` (`pkg/apis/scheduling/v1/defaults.go` upstream):
//! PriorityClasses. policy, node, coordination, events and certificates (v1) have no defaults
//! upstream.

use serde_json::{json, Value};

use super::default;

/// A PriorityClass's defaults.
pub fn priority_class(obj: &mut Value) {
    default(obj, "preemptionPolicy", json!("PreemptLowerPriority"));
}

#[cfg(test)]
mod tests {
    use super::super::test_support::defaulted_in as defaulted;
    use super::*;

    #[test]
    fn priority_classes_api_services_and_groups_without_defaults() {
        let pc = defaulted("scheduling.k8s.io", "v1", "priorityclasses", json!({"value": 1000}));
        assert_eq!(pc, json!({"value": 1000, "preemptionPolicy": "PreemptLowerPriority"}));
        let svc = defaulted(
            "apiregistration.k8s.io",
            "v1",
            "apiservices",
            json!({"spec": {"group": "metrics.k8s.io", "service": {"name": "m", "namespace": "kube-system"}}}),
        );
        assert_eq!(
            svc["spec"]["service"],
            json!({"name": "m", "namespace": "kube-system", "port": 443})
        );
        let local = json!({"spec": {"group": "apps", "version": "v1"}});
        assert_eq!(defaulted("apiregistration.k8s.io", "v1", "apiservices", local.clone()), local);
        for (group, plural, obj) in [
            ("policy", "poddisruptionbudgets", json!({"spec": {"minAvailable": 1}})),
            ("node.k8s.io", "runtimeclasses", json!({"handler": "runc"})),
            ("coordination.k8s.io", "leases", json!({"spec": {"holderIdentity": "a"}})),
            ("events.k8s.io", "events", json!({"reason": "Started", "eventTime": null})),
            (
                "certificates.k8s.io",
                "certificatesigningrequests",
                json!({"spec": {"request": "x"}}),
            ),
        ] {
            assert_eq!(defaulted(group, "v1", plural, obj.clone()), obj, "{group}");
        }
    }
}
