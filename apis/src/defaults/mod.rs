//! Defaulting: the values kube-apiserver fills in for fields a client leaves out, so that
//! `kubectl get -o yaml` shows what it shows against a real cluster. Upstream keeps these in
//! each group's `defaults.go`; here one module per API group, named for it (`core`, `apps`,
//! `batch`, `autoscaling`, ...), with a function per kind that each resource's strategy
//! (`crate::kinds`) calls. The registry applies them on every create and update, as
//! upstream's decoding does.

pub mod admissionregistration;
pub mod apiextensions;
pub mod apiregistration;
pub mod apps;
pub mod autoscaling;
pub mod batch;
pub mod core;
pub mod discovery;
pub mod flowcontrol;
pub mod networking;
pub mod rbac;
pub mod scheduling;
pub mod storage;

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

/// An empty or missing array counts as unset where upstream tests the length.
pub(super) fn is_empty_list(v: Option<&Value>) -> bool {
    v.is_none_or(|v| v.is_null() || v.as_array().is_some_and(Vec::is_empty))
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

/// What the defaulting tests of every group share.
#[cfg(test)]
pub(super) mod test_support {
    use serde_json::Value;

    use crate::resources::Resources;

    /// `obj` as `group`/`version`/`plural`'s strategy defaults it.
    pub fn defaulted_in(group: &str, version: &str, plural: &str, mut obj: Value) -> Value {
        super::apply(Resources::builtin().get(group, version, plural).unwrap(), &mut obj);
        obj
    }

    /// [`defaulted_in`] version `v1`.
    pub fn defaulted(group: &str, plural: &str, obj: Value) -> Value {
        defaulted_in(group, "v1", plural, obj)
    }
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
