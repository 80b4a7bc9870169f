//! Fields of features that kube-apiserver v1.33 has off by default (alpha, or beta and off).
//! Upstream's strategies drop them on every write unless the old object already used them, so
//! a client that sends one reads back an object without it, as from a real cluster:
//!
//! - pods and pod templates: resource claims (`DynamicResourceAllocation`), pod-level
//!   `resources` (`PodLevelResources`) and a container's `lifecycle.stopSignal`
//!   (`ContainerStopSignals`);
//! - Leases: `strategy` and `preferredHolder` (`CoordinatedLeaderElection`, always dropped);
//! - EndpointSlices: an endpoint's `hints.forNodes` (`PreferSameTrafficDistribution`).

use serde_json::Value;

/// A Lease's: `strategy` and `preferredHolder` are always dropped.
pub fn lease(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("strategy");
        spec.remove("preferredHolder");
    }
}

/// An EndpointSlice's: an endpoint's `hints.forNodes`, unless `old` has one.
pub fn endpoint_slice(obj: &mut Value, old: Option<&Value>) {
    let in_use = old.is_some_and(|o| endpoints(o).any(|e| !e["hints"]["forNodes"].is_null()));
    if in_use {
        return;
    }
    for e in obj.get_mut("endpoints").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(hints) = e.get_mut("hints").and_then(Value::as_object_mut) {
            hints.remove("forNodes");
        }
    }
}

fn endpoints(slice: &Value) -> impl Iterator<Item = &Value> {
    slice["endpoints"].as_array().into_iter().flatten()
}

/// Where the kinds that hold a pod spec keep it.
pub const POD: &[&str] = &["spec"];
pub const POD_TEMPLATE: &[&str] = &["template", "spec"];
pub const WORKLOAD: &[&str] = &["spec", "template", "spec"];
pub const CRON_JOB: &[&str] = &["spec", "jobTemplate", "spec", "template", "spec"];

/// The pod spec's at `path` of `obj` (see [`POD`], [`WORKLOAD`], ...), unless the same
/// place of `old` uses them.
pub fn pod_spec_at(obj: &mut Value, old: Option<&Value>, path: &[&str]) {
    let old_spec = old.map(|o| at(o, path)).unwrap_or(&Value::Null);
    if let Some(spec) = at_mut(obj, path) {
        pod_spec(spec, old_spec);
    }
}

fn at<'a>(obj: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(obj, |v, k| &v[*k])
}

fn at_mut<'a>(obj: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    path.iter().try_fold(obj, |v, k| v.get_mut(*k)).filter(|v| v.is_object())
}

const CONTAINER_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    CONTAINER_LISTS.iter().flat_map(move |l| spec[*l].as_array().into_iter().flatten())
}

fn pod_spec(spec: &mut Value, old: &Value) {
    let claims_in_use = !old["resourceClaims"].is_null()
        || containers(old).any(|c| !c["resources"]["claims"].is_null());
    let stop_signal_in_use = containers(old).any(|c| !c["lifecycle"]["stopSignal"].is_null());
    let Some(map) = spec.as_object_mut() else { return };
    if !claims_in_use {
        map.remove("resourceClaims");
    }
    if old["resources"].is_null() {
        map.remove("resources");
    }
    for list in CONTAINER_LISTS {
        for c in map.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            if !claims_in_use {
                if let Some(r) = c.get_mut("resources").and_then(Value::as_object_mut) {
                    r.remove("claims");
                }
            }
            if !stop_signal_in_use {
                if let Some(l) = c.get_mut("lifecycle").and_then(Value::as_object_mut) {
                    l.remove("stopSignal");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::{ResourceInfo, Resources};
    use serde_json::json;

    /// What a write of `obj` keeps, through the resource's strategy.
    fn drop(info: &ResourceInfo, obj: &mut Value, old: Option<&Value>) {
        info.strategy.drop_disabled_fields(obj, old);
    }

    #[test]
    fn disabled_features_fields_are_dropped_unless_already_used() {
        let r = Resources::builtin();
        let pods = r.get("", "v1", "pods").unwrap();
        let pod = || {
            json!({"spec": {
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "g"}],
                "resources": {"limits": {"cpu": "1"}},
                "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}], "limits": {"cpu": "1"}},
                                "lifecycle": {"stopSignal": "SIGUSR1", "preStop": {"sleep": {"seconds": 1}}}}]
            }})
        };
        let mut new = pod();
        drop(pods, &mut new, None);
        assert_eq!(
            new,
            json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}},
                "lifecycle": {"preStop": {"sleep": {"seconds": 1}}}}]}})
        );
        // An object that already has them keeps them.
        let mut update = pod();
        drop(pods, &mut update, Some(&pod()));
        assert_eq!(update, pod());

        let deployments = r.get("apps", "v1", "deployments").unwrap();
        let mut d = json!({"spec": {"template": {"spec": {"resourceClaims": [{"name": "x"}], "containers": []}}}});
        drop(deployments, &mut d, None);
        assert_eq!(d, json!({"spec": {"template": {"spec": {"containers": []}}}}));

        let leases = r.get("coordination.k8s.io", "v1", "leases").unwrap();
        let mut lease = json!({"spec": {"holderIdentity": "a", "strategy": "OldestEmulationVersion", "preferredHolder": "b"}});
        drop(leases, &mut lease, None);
        assert_eq!(lease, json!({"spec": {"holderIdentity": "a"}}));

        let slices = r.get("discovery.k8s.io", "v1", "endpointslices").unwrap();
        let slice = || json!({"endpoints": [{"addresses": ["10.0.0.1"], "hints": {"forZones": [{"name": "a"}], "forNodes": [{"name": "n"}]}}]});
        let mut new = slice();
        drop(slices, &mut new, None);
        assert_eq!(new["endpoints"][0]["hints"], json!({"forZones": [{"name": "a"}]}));
        let mut kept = slice();
        drop(slices, &mut kept, Some(&slice()));
        assert_eq!(kept, slice());
    }
}
