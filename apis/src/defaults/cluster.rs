//! Defaults of the remaining groups: autoscaling, policy, networking, discovery, RBAC, storage,
//! scheduling, node, coordination, events and certificates (each group's `defaults.go`
//! upstream), and API registration (kube-aggregator's). policy, node, coordination, events
//! and certificates (v1) have no defaults upstream.

use serde_json::{json, Map, Value};

use super::{default, default_unset, field, items};
use crate::convert::{self, BEHAVIOR_ANNOTATION, METRICS_ANNOTATION};

/// The CPU utilization an HPA without metrics aims for.
const HPA_DEFAULT_CPU_UTILIZATION: i64 = 80;
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// An autoscaling/v2 HorizontalPodAutoscaler's defaults (v1's are [`hpa_v1`]).
pub fn hpa_v2(obj: &mut Value) {
    field(obj, "spec").into_iter().for_each(hpa_v2_spec)
}

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

/// An EndpointSlice's defaults.
pub fn endpoint_slice(obj: &mut Value) {
    for port in items(obj, "ports") {
        default(port, "name", json!(""));
        default(port, "protocol", json!("TCP"));
    }
}

/// A StorageClass's defaults.
pub fn storage_class(obj: &mut Value) {
    default(obj, "reclaimPolicy", json!("Delete"));
    default(obj, "volumeBindingMode", json!("Immediate"));
}

/// A CSIDriver's defaults.
pub fn csi_driver(obj: &mut Value) {
    field(obj, "spec").into_iter().for_each(csi_driver_spec)
}

/// A VolumeAttachment's defaults: an inline (migrated in-tree) volume gets its volume
/// source's core defaults.
pub fn volume_attachment(obj: &mut Value) {
    let source = field(obj, "spec").and_then(|s| field(s, "source"));
    if let Some(pv) = source.and_then(|s| field(s, "inlineVolumeSpec")) {
        super::core::volume_plugins(pv);
    }
}

/// A PriorityClass's defaults.
pub fn priority_class(obj: &mut Value) {
    default(obj, "preemptionPolicy", json!("PreemptLowerPriority"));
}

/// An APIService's defaults.
pub fn api_service(obj: &mut Value) {
    if let Some(service) = field(obj, "spec").and_then(|s| field(s, "service")) {
        default(service, "port", json!(443));
    }
}

/// An empty or missing array counts as unset where upstream tests the length.
fn is_empty_list(v: Option<&Value>) -> bool {
    v.is_none_or(|v| v.is_null() || v.as_array().is_some_and(Vec::is_empty))
}

/// autoscaling/v2 (the stored version): one replica at least, an 80% CPU target when no
/// metric is given, and a `behavior` the client sent completed with the default rules.
fn hpa_v2_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default(spec, "minReplicas", json!(1));
    if is_empty_list(spec.get("metrics")) {
        spec["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": HPA_DEFAULT_CPU_UTILIZATION}}}]);
    }
    if let Some(behavior) = field(spec, "behavior") {
        hpa_behavior(behavior);
    }
}

/// autoscaling/v1 says in annotations what it has no fields for; the defaults v2 would apply
/// after conversion are applied to them, so the stored object is the same whichever version
/// the client used, and the annotations read as upstream writes them back (see
/// `crate::convert`). One Go cannot decode is dropped, as converting to v2 drops it.
pub fn hpa_v1(obj: &mut Value) {
    let Some(spec) = field(obj, "spec").filter(|s| s.is_object()) else { return };
    default(spec, "minReplicas", json!(1));
    let annotation = |obj: &Value, key: &str| -> Option<String> {
        obj["metadata"]["annotations"][key].as_str().map(str::to_string)
    };
    // Converted, a v1 HPA's metrics are those of the annotation and its CPU target.
    let other_metrics = annotation(obj, METRICS_ANNOTATION)
        .map(|text| convert::hpa_metrics_from_annotation(&text).filter(|m| !m.is_empty()));
    if let Some(other_metrics) = other_metrics {
        let text = other_metrics.as_deref().map(convert::hpa_metrics_annotation);
        set_annotation(obj, METRICS_ANNOTATION, text);
    }
    if annotation(obj, METRICS_ANNOTATION).is_none() {
        default(
            &mut obj["spec"],
            "targetCPUUtilizationPercentage",
            json!(HPA_DEFAULT_CPU_UTILIZATION),
        );
    }
    if let Some(text) = annotation(obj, BEHAVIOR_ANNOTATION) {
        let behavior = convert::hpa_behavior_from_annotation(&text).map(|mut behavior| {
            hpa_behavior(&mut behavior);
            convert::hpa_behavior_annotation(&behavior)
        });
        set_annotation(obj, BEHAVIOR_ANNOTATION, behavior);
    }
}

/// Sets (or, with `None`, removes) one of the object's annotations.
fn set_annotation(obj: &mut Value, key: &str, text: Option<String>) {
    let Some(annotations) = obj["metadata"]["annotations"].as_object_mut() else { return };
    match text {
        Some(text) => {
            annotations.insert(key.to_string(), json!(text));
        }
        None => {
            annotations.shift_remove(key);
            if annotations.is_empty() {
                if let Some(meta) = obj["metadata"].as_object_mut() {
                    meta.shift_remove("annotations");
                }
            }
        }
    }
}

/// Both directions of an HPA's `behavior` are filled in: scaling up by 4 pods or 100% every
/// 15s with no stabilization window, down by 100% every 15s (its window is left to the
/// controller's flag), taking the larger change. Keys go in upstream's field order.
fn hpa_behavior(behavior: &mut Value) {
    let Some(given) = behavior.as_object_mut() else { return };
    let up = scaling_rules(
        given.remove("scaleUp"),
        json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}]}),
    );
    let down = scaling_rules(
        given.remove("scaleDown"),
        json!({"selectPolicy": "Max", "policies": [
            {"type": "Percent", "value": 100, "periodSeconds": 15}]}),
    );
    let mut rebuilt =
        Map::from_iter([("scaleUp".to_string(), up), ("scaleDown".to_string(), down)]);
    rebuilt.append(given);
    *behavior = Value::Object(rebuilt);
}

/// The rules the client gave for one direction, each missing field taken from `defaults`.
fn scaling_rules(given: Option<Value>, defaults: Value) -> Value {
    let mut given = match given {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(other) => return other,
    };
    let mut rules = Map::new();
    for key in ["stabilizationWindowSeconds", "selectPolicy", "policies", "tolerance"] {
        let value =
            given.remove(key).filter(|v| !v.is_null()).or_else(|| defaults.get(key).cloned());
        if let Some(value) = value {
            rules.insert(key.to_string(), value);
        }
    }
    rules.extend(given.into_iter().filter(|(_, v)| !v.is_null()));
    Value::Object(rules)
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

/// The role and the user and group subjects of a binding belong to the RBAC group; a
/// service account's group stays empty (and so absent).
pub fn role_binding(binding: &mut Value) {
    if let Some(role_ref) = field(binding, "roleRef").filter(|r| r.is_object()) {
        default_unset(role_ref, "apiGroup", json!(RBAC_GROUP));
    }
    for subject in items(binding, "subjects") {
        if matches!(subject["kind"].as_str(), Some("User" | "Group")) {
            default_unset(subject, "apiGroup", json!(RBAC_GROUP));
        }
    }
}

/// A CSI driver needs attaching, gets no pod info, publishes no capacity, is never
/// republished, serves persistent volumes, applies fsGroup for ReadWriteOnce volumes with a
/// filesystem type, and does not mount with SELinux contexts (SELinuxMountReadWriteOncePod is
/// on in 1.33).
fn csi_driver_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default(spec, "attachRequired", json!(true));
    default(spec, "podInfoOnMount", json!(false));
    default(spec, "storageCapacity", json!(false));
    default(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    if is_empty_list(spec.get("volumeLifecycleModes")) {
        spec["volumeLifecycleModes"] = json!(["Persistent"]);
    }
    default(spec, "requiresRepublish", json!(false));
    default(spec, "seLinuxMount", json!(false));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defaults::apply;
    use crate::resources::Resources;

    fn defaulted(group: &str, version: &str, plural: &str, mut obj: Value) -> Value {
        apply(Resources::builtin().get(group, version, plural).unwrap(), &mut obj);
        obj
    }

    fn cpu(utilization: i64) -> Value {
        json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": utilization}}})
    }

    #[test]
    fn a_v2_hpa_gets_a_cpu_target_and_no_behavior() {
        let ref_ = json!({"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"});
        let hpa = defaulted(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            json!({"spec": {"scaleTargetRef": ref_, "maxReplicas": 5, "metrics": []}}),
        );
        assert_eq!(
            hpa["spec"],
            json!({"scaleTargetRef": ref_, "maxReplicas": 5, "metrics": [cpu(80)], "minReplicas": 1})
        );
        let memory = json!({"type": "Resource", "resource": {"name": "memory",
            "target": {"type": "AverageValue", "averageValue": "100Mi"}}});
        let hpa = defaulted(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            json!({"spec": {"minReplicas": 2, "metrics": [memory]}}),
        );
        assert_eq!(hpa["spec"], json!({"minReplicas": 2, "metrics": [memory]}));
    }

    #[test]
    fn a_v2_hpas_behavior_is_completed() {
        let hpa = defaulted(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            json!({"spec": {"metrics": [cpu(50)], "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
        );
        let behavior = &hpa["spec"]["behavior"];
        assert_eq!(
            behavior,
            &json!({
                "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
                    {"type": "Pods", "value": 4, "periodSeconds": 15},
                    {"type": "Percent", "value": 100, "periodSeconds": 15}]},
                "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
                    {"type": "Percent", "value": 100, "periodSeconds": 15}]}})
        );
        // In upstream's field order.
        let keys: Vec<&String> = behavior.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["scaleUp", "scaleDown"]);
        let given = json!({"selectPolicy": "Disabled", "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]});
        let hpa = defaulted(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            json!({"spec": {"behavior": {"scaleDown": given}}}),
        );
        assert_eq!(hpa["spec"]["behavior"]["scaleDown"], given);
    }

    #[test]
    fn a_v1_hpa_gets_what_v2_would_give_it() {
        let hpa = defaulted(
            "autoscaling",
            "v1",
            "horizontalpodautoscalers",
            json!({"metadata": {"name": "h"}, "spec": {"maxReplicas": 3}}),
        );
        assert_eq!(
            hpa,
            json!({"metadata": {"name": "h"},
                "spec": {"maxReplicas": 3, "minReplicas": 1, "targetCPUUtilizationPercentage": 80}})
        );
        // Other metrics kept in the annotation: no CPU target added; the annotation reads as
        // upstream writes it back. The behavior there, in either case, is completed.
        let completed = concat!(
            r#"{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Min","Policies":["#,
            r#"{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}],"#,
            r#""Tolerance":null},"ScaleDown":{"StabilizationWindowSeconds":null,"SelectPolicy":"Max","#,
            r#""Policies":[{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null}}"#,
        );
        for behavior in [
            r#"{"scaleUp":{"selectPolicy":"Min"}}"#,
            r#"{"ScaleUp":{"StabilizationWindowSeconds":null,"SelectPolicy":"Min","Policies":null,"Tolerance":null},"ScaleDown":null}"#,
            completed,
        ] {
            let hpa = defaulted(
                "autoscaling",
                "v1",
                "horizontalpodautoscalers",
                json!({"metadata": {"annotations": {
                        METRICS_ANNOTATION: r#"[{"type":"Pods","pods":{"targetAverageValue":"1e1","metricName":"qps"}}]"#,
                        BEHAVIOR_ANNOTATION: behavior}},
                    "spec": {"maxReplicas": 3, "minReplicas": 2}}),
            );
            assert_eq!(hpa["spec"], json!({"maxReplicas": 3, "minReplicas": 2}));
            assert_eq!(
                hpa["metadata"]["annotations"],
                json!({METRICS_ANNOTATION: r#"[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]"#,
                    BEHAVIOR_ANNOTATION: completed}),
                "{behavior}"
            );
        }
        // What upstream could not decode is dropped, and counts for nothing.
        let hpa = defaulted(
            "autoscaling",
            "v1",
            "horizontalpodautoscalers",
            json!({"metadata": {"annotations": {METRICS_ANNOTATION: "[]",
                    BEHAVIOR_ANNOTATION: r#"{"scaleUp":{"policies":"many"}}"#}},
                "spec": {"maxReplicas": 3}}),
        );
        assert_eq!(
            hpa,
            json!({"metadata": {},
                "spec": {"maxReplicas": 3, "minReplicas": 1, "targetCPUUtilizationPercentage": 80}})
        );
    }

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

    #[test]
    fn endpoint_slice_ports_get_a_name_and_protocol() {
        let slice = defaulted(
            "discovery.k8s.io",
            "v1",
            "endpointslices",
            json!({"addressType": "IPv4", "endpoints": [], "ports": [{"port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}]}),
        );
        assert_eq!(
            slice["ports"],
            json!([{"port": 80, "name": "", "protocol": "TCP"}, {"name": "dns", "port": 53, "protocol": "UDP"}])
        );
        let slice =
            defaulted("discovery.k8s.io", "v1", "endpointslices", json!({"addressType": "IPv4"}));
        assert_eq!(slice, json!({"addressType": "IPv4"}));
    }

    #[test]
    fn bindings_get_api_groups() {
        for plural in ["rolebindings", "clusterrolebindings"] {
            let binding = defaulted(
                "rbac.authorization.k8s.io",
                "v1",
                plural,
                json!({"roleRef": {"apiGroup": "", "kind": "ClusterRole", "name": "view"}, "subjects": [
                    {"kind": "User", "name": "jane"}, {"kind": "Group", "name": "devs"},
                    {"kind": "ServiceAccount", "name": "default", "namespace": "default"}]}),
            );
            assert_eq!(
                binding,
                json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view"}, "subjects": [
                    {"kind": "User", "name": "jane", "apiGroup": RBAC_GROUP},
                    {"kind": "Group", "name": "devs", "apiGroup": RBAC_GROUP},
                    {"kind": "ServiceAccount", "name": "default", "namespace": "default"}]})
            );
        }
        let role = json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        assert_eq!(defaulted("rbac.authorization.k8s.io", "v1", "roles", role.clone()), role);
    }

    #[test]
    fn storage_classes_and_csi_drivers() {
        let class = defaulted(
            "storage.k8s.io",
            "v1",
            "storageclasses",
            json!({"metadata": {"name": "standard"}, "provisioner": "example.com/disk"}),
        );
        assert_eq!(
            class,
            json!({"metadata": {"name": "standard"}, "provisioner": "example.com/disk",
                "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"})
        );
        let driver = defaulted(
            "storage.k8s.io",
            "v1",
            "csidrivers",
            json!({"spec": {"attachRequired": false}}),
        );
        assert_eq!(
            driver["spec"],
            json!({"attachRequired": false, "podInfoOnMount": false, "storageCapacity": false,
                "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
                "requiresRepublish": false, "seLinuxMount": false})
        );
        let driver = defaulted(
            "storage.k8s.io",
            "v1",
            "csidrivers",
            json!({"spec": {"volumeLifecycleModes": ["Ephemeral"], "fsGroupPolicy": "File"}}),
        );
        assert_eq!(driver["spec"]["volumeLifecycleModes"], json!(["Ephemeral"]));
        assert_eq!(driver["spec"]["fsGroupPolicy"], "File");
    }

    #[test]
    fn volume_attachments_default_only_an_inline_volume() {
        let attachment = json!({"spec": {"attacher": "a", "nodeName": "n", "source": {"persistentVolumeName": "pv"}}});
        assert_eq!(
            defaulted("storage.k8s.io", "v1", "volumeattachments", attachment.clone()),
            attachment
        );
        let attachment = defaulted(
            "storage.k8s.io",
            "v1",
            "volumeattachments",
            json!({"spec": {"source": {"inlineVolumeSpec": {"azureDisk": {"diskName": "d", "diskURI": "u"},
                "capacity": {"storage": "1Gi"}}}}}),
        );
        assert_eq!(
            attachment["spec"]["source"]["inlineVolumeSpec"],
            json!({"azureDisk": {"diskName": "d", "diskURI": "u", "cachingMode": "ReadWrite",
                "kind": "Shared", "fsType": "ext4", "readOnly": false}, "capacity": {"storage": "1Gi"}})
        );
    }

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
