//! Defaults of `apps/v1` (`pkg/apis/apps/v1/defaults.go` upstream, with the nested defaults its
//! generated defaulters call): Deployments, ReplicaSets, StatefulSets and DaemonSets.

use serde_json::{json, Value};

use super::core::pod_template;
use super::{default, default_unset, field};

/// A Deployment's defaults.
pub fn deployment(obj: &mut Value) {
    if let Some(spec) = field(obj, "spec") {
        default(spec, "replicas", json!(1));
        default(spec, "strategy", json!({}));
        rolling_update(&mut spec["strategy"], json!("25%"), json!("25%"));
        default(spec, "revisionHistoryLimit", json!(10));
        default(spec, "progressDeadlineSeconds", json!(600));
        field(spec, "template").into_iter().for_each(pod_template);
    }
}

/// A ReplicaSet's defaults.
pub fn replica_set(obj: &mut Value) {
    if let Some(spec) = field(obj, "spec") {
        default(spec, "replicas", json!(1));
        field(spec, "template").into_iter().for_each(pod_template);
    }
}

/// A StatefulSet's defaults.
pub fn stateful_set(obj: &mut Value) {
    field(obj, "spec").into_iter().for_each(stateful_set_spec)
}

/// A DaemonSet's defaults.
pub fn daemon_set(obj: &mut Value) {
    if let Some(spec) = field(obj, "spec") {
        default(spec, "updateStrategy", json!({}));
        rolling_update(&mut spec["updateStrategy"], json!(1), json!(0));
        default(spec, "revisionHistoryLimit", json!(10));
        field(spec, "template").into_iter().for_each(pod_template);
    }
}

/// A Deployment's `strategy` or a DaemonSet's `updateStrategy`: `RollingUpdate` when no type
/// is given, and then the rolling update's limits when they are missing.
fn rolling_update(strategy: &mut Value, max_unavailable: Value, max_surge: Value) {
    if !strategy.is_object() {
        return;
    }
    default_unset(strategy, "type", json!("RollingUpdate"));
    if strategy["type"] == "RollingUpdate" {
        default(strategy, "rollingUpdate", json!({}));
        if let Some(rolling) = field(strategy, "rollingUpdate") {
            default(rolling, "maxUnavailable", max_unavailable);
            default(rolling, "maxSurge", max_surge);
        }
    }
}

fn stateful_set_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default(spec, "replicas", json!(1));
    default_unset(spec, "podManagementPolicy", json!("OrderedReady"));
    default(spec, "updateStrategy", json!({}));
    if let Some(strategy) = field(spec, "updateStrategy").filter(|s| s.is_object()) {
        // Only a strategy without a type gets an empty rolling update to fill in; the
        // partition (not maxUnavailable: MaxUnavailableStatefulSet is alpha, off in 1.33)
        // goes into one the client sent.
        if strategy.get("type").is_none_or(|t| t.is_null() || t == "") {
            strategy["type"] = json!("RollingUpdate");
            default(strategy, "rollingUpdate", json!({}));
        }
        if strategy["type"] == "RollingUpdate" {
            field(strategy, "rollingUpdate")
                .into_iter()
                .for_each(|r| default(r, "partition", json!(0)));
        }
    }
    default(spec, "revisionHistoryLimit", json!(10));
    // StatefulSetAutoDeletePVC is on (GA): each policy is completed on its own.
    default(spec, "persistentVolumeClaimRetentionPolicy", json!({}));
    if let Some(policy) = field(spec, "persistentVolumeClaimRetentionPolicy") {
        if policy.is_object() {
            default_unset(policy, "whenDeleted", json!("Retain"));
            default_unset(policy, "whenScaled", json!("Retain"));
        }
    }
    field(spec, "template").into_iter().for_each(pod_template);
    if let Some(claims) = spec.get_mut("volumeClaimTemplates").and_then(Value::as_array_mut) {
        claims.iter_mut().for_each(claim_template);
    }
}

/// A StatefulSet's claim template gets a claim's defaults: a `Pending` status and a
/// filesystem volume.
fn claim_template(claim: &mut Value) {
    if !claim.is_object() {
        return;
    }
    if let Some(spec) = field(claim, "spec") {
        default(spec, "volumeMode", json!("Filesystem"));
    }
    default(claim, "status", json!({}));
    if let Some(status) = field(claim, "status").filter(|s| s.is_object()) {
        default_unset(status, "phase", json!("Pending"));
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::defaulted;
    use super::*;

    #[test]
    fn stateful_sets_get_upstream_defaults() {
        let sts = defaulted(
            "apps",
            "statefulsets",
            json!({"spec": {"serviceName": "db", "template": {"spec": {}},
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}),
        );
        let mut spec = sts["spec"].clone();
        spec.as_object_mut().unwrap().remove("template");
        assert_eq!(
            spec,
            json!({"serviceName": "db",
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                        "volumeMode": "Filesystem"},
                    "status": {"phase": "Pending"}}],
                "replicas": 1, "podManagementPolicy": "OrderedReady",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                "revisionHistoryLimit": 10,
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}})
        );
        // A partial retention policy is completed; an OnDelete strategy gets nothing.
        let sts = defaulted(
            "apps",
            "statefulsets",
            json!({"spec": {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"},
                "updateStrategy": {"type": "OnDelete"}}}),
        );
        assert_eq!(
            sts["spec"]["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Delete", "whenScaled": "Retain"})
        );
        assert_eq!(sts["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
        // A RollingUpdate type without a rollingUpdate gets none.
        let sts = defaulted(
            "apps",
            "statefulsets",
            json!({"spec": {"updateStrategy": {"type": "RollingUpdate"}}}),
        );
        assert_eq!(sts["spec"]["updateStrategy"], json!({"type": "RollingUpdate"}));
    }

    #[test]
    fn deployments_daemon_sets_and_replica_sets() {
        let d = defaulted("apps", "deployments", json!({"spec": {"strategy": {"type": ""}}}));
        assert_eq!(
            d["spec"],
            json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600})
        );
        let ds = defaulted("apps", "daemonsets", json!({"spec": {}}));
        assert_eq!(
            ds["spec"],
            json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                "revisionHistoryLimit": 10})
        );
        let ds = defaulted(
            "apps",
            "daemonsets",
            json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
        );
        assert_eq!(ds["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
        let rs = defaulted("apps", "replicasets", json!({"spec": {}}));
        assert_eq!(rs["spec"], json!({"replicas": 1}));
        // No spec: nothing to default, and nothing added.
        let rs = defaulted("apps", "replicasets", json!({"metadata": {}}));
        assert_eq!(rs, json!({"metadata": {}}));
    }
}
