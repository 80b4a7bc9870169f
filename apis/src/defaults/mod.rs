//! Defaulting: the values kube-apiserver fills in for fields a client leaves out, so that
//! `kubectl get -o yaml` shows what it shows against a real cluster. Upstream keeps these in
//! each group's `defaults.go`; here one module per area: `core` (the core group: pods,
//! services, volumes), `workloads` (apps and batch), `api_config` (the groups that configure the API server:
//! admission registration, API extensions, flow control) and `cluster` (every other group). The
//! registry applies them on every create and update, as upstream's decoding does.

pub mod api_config;
pub mod cluster;
pub mod core;
pub mod workloads;

pub use self::core::pod_spec;

use serde_json::Value;

use crate::resources::ResourceInfo;

/// Sets `obj[key]` to `value` when it is missing or null.
pub(super) fn default(obj: &mut Value, key: &str, value: Value) {
    if obj.is_object() && obj.get(key).is_none_or(Value::is_null) {
        obj[key] = value;
    }
}

/// The field `key` of an object, when it is there: unlike `obj[key]` on a mutable value, this
/// never inserts a null.
pub(super) fn field<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    obj.get_mut(key).filter(|v| !v.is_null())
}

/// Sets `obj[key]` when it is missing, null or Go's zero value (`""` or `0`): upstream tests
/// fields that are not pointers against their zero value, so an empty string or a zero is
/// defaulted too.
pub(super) fn default_unset(obj: &mut Value, key: &str, value: Value) {
    if obj.get(key).is_some_and(|v| v == "" || v == 0) {
        obj[key] = Value::Null;
    }
    default(obj, key, value);
}

/// The objects of the array `obj[key]`, when there is one.
pub(super) fn items<'a>(obj: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    let list = obj.get_mut(key).and_then(Value::as_array_mut);
    list.into_iter().flatten().filter(|v| v.is_object())
}

/// Applies the defaults of the object's kind (its strategy's `default`).
pub fn apply(info: &ResourceInfo, obj: &mut Value) {
    info.strategy.default(obj);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;
    use serde_json::json;

    #[test]
    fn deployments_get_upstream_defaults() {
        let info = Resources::builtin().get("apps", "v1", "deployments").unwrap();
        let mut d = json!({"spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        apply(info, &mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["imagePullPolicy"], "Always");
        assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
        assert!(
            c.get("ports").is_none()
                && d["spec"]["template"]["spec"].get("initContainers").is_none(),
            "no nulls added: {d}"
        );
    }

    #[test]
    fn workload_strategies_are_completed_field_by_field() {
        let resources = crate::resources::Resources::builtin();
        let info = |group: &str, plural: &str| resources.get(group, "v1", plural).unwrap();
        // `kubectl create deployment` sends `strategy: {}`.
        let mut d = json!({"metadata": {}, "spec": {"strategy": {}, "template": {}}});
        apply(info("apps", "deployments"), &mut d);
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        let mut recreate = json!({"metadata": {}, "spec": {"strategy": {"type": "Recreate"}}});
        apply(info("apps", "deployments"), &mut recreate);
        assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
        let mut ds =
            json!({"metadata": {}, "spec": {"updateStrategy": {"rollingUpdate": {"maxSurge": 1}}}});
        apply(info("apps", "daemonsets"), &mut ds);
        assert_eq!(
            ds["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}})
        );
        let mut sts = json!({"metadata": {}, "spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {}}}});
        apply(info("apps", "statefulsets"), &mut sts);
        assert_eq!(sts["spec"]["updateStrategy"]["rollingUpdate"], json!({"partition": 0}));
        let mut rc = json!({"metadata": {"name": "r"}, "spec": {"template": {"metadata": {"labels": {"app": "a"}}}}});
        apply(info("", "replicationcontrollers"), &mut rc);
        assert_eq!(
            (&rc["spec"]["selector"], &rc["metadata"]["labels"]),
            (&json!({"app": "a"}), &json!({"app": "a"}))
        );
        let mut svc = json!({"metadata": {}, "spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 80}]}});
        apply(info("", "services"), &mut svc);
        assert_eq!(
            svc["spec"]["sessionAffinityConfig"],
            json!({"clientIP": {"timeoutSeconds": 10800}})
        );
        assert_eq!(svc["spec"]["allocateLoadBalancerNodePorts"], true);
    }
}
