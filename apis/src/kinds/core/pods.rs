//! Pods (`v1`): created `Pending` with their QoS class (and the `SchedulingGated` condition
//! while gated), affinity label keys merged into selectors; graceful deletion on a node; a
//! status write keeps the owner references; a delete answers with the pod.

use serde_json::{json, Value};

use crate::strategy::{SelectableField, Strategy};
use crate::tables::Printer;
use crate::validation::FieldError;
use crate::{defaults, disabled_fields, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Pods;

impl Strategy for Pods {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({"phase": "Pending", "qosClass": qos_class(obj)});
        if obj["spec"]["schedulingGates"].as_array().is_some_and(|g| !g.is_empty()) {
            obj["status"]["conditions"] = json!([{
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": null,
                "lastTransitionTime": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }]);
        }
        merge_label_keys_into_affinity(obj);
    }

    fn drop_disabled_fields(&self, obj: &mut Value, old: Option<&Value>) {
        disabled_fields::pod_spec_at(obj, old, disabled_fields::POD);
    }

    fn default(&self, obj: &mut Value) {
        defaults::core::pod(obj);
    }

    fn metadata_kept_on_status_write(&self) -> &'static [&'static str] {
        &["ownerReferences"]
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errors = validation::core::pod::pod_spec(&obj["spec"], "spec");
        match old {
            Some(old) => errors.extend(validation::core::pod::pod_update(obj, old)),
            None => errors.extend(validation::core::pod::pod_create(obj)),
        }
        errors
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[
            ("spec.nodeName", &["spec", "nodeName"]),
            ("spec.restartPolicy", &["spec", "restartPolicy"]),
            ("spec.schedulerName", &["spec", "schedulerName"]),
            ("spec.serviceAccountName", &["spec", "serviceAccountName"]),
            ("spec.hostNetwork", &["spec", "hostNetwork"]),
            ("status.phase", &["status", "phase"]),
            ("status.podIP", &["status", "podIP"]),
            ("status.nominatedNodeName", &["status", "nominatedNodeName"]),
        ]
    }

    fn printer(&self) -> Printer {
        Printer::Pod
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }

    /// A pod on a node gets the grace period asked for (its own, or 30 seconds) for the
    /// kubelet to stop it; one on no node, or finished, goes at once.
    fn grace_period_seconds(&self, obj: &Value, requested: Option<i64>) -> i64 {
        let scheduled = obj["spec"]["nodeName"].as_str().is_some_and(|n| !n.is_empty());
        let phase = obj["status"]["phase"].as_str().unwrap_or("");
        if !scheduled || matches!(phase, "Succeeded" | "Failed") {
            return 0;
        }
        let grace = requested
            .or_else(|| obj["spec"]["terminationGracePeriodSeconds"].as_i64())
            .unwrap_or(30);
        grace.max(0)
    }
}

/// A pod (anti-)affinity term's `matchLabelKeys` and `mismatchLabelKeys` become `key in
/// (value)` and `key notin (value)` requirements of its label selector, with the values of the
/// new pod's own labels, as upstream's API server does when a pod is created (the scheduler
/// reads only the selector). A term without a selector matches nothing and is left alone.
fn merge_label_keys_into_affinity(pod: &mut Value) {
    let labels = pod["metadata"]["labels"].clone();
    let Some(affinity) = pod.get_mut("spec").and_then(|s| s.get_mut("affinity")) else { return };
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(section) = affinity.get_mut(kind).filter(|v| v.is_object()) else { continue };
        for (list, nested) in [
            ("requiredDuringSchedulingIgnoredDuringExecution", false),
            ("preferredDuringSchedulingIgnoredDuringExecution", true),
        ] {
            let Some(terms) = section.get_mut(list).and_then(Value::as_array_mut) else { continue };
            for term in terms {
                let term = if nested { &mut term["podAffinityTerm"] } else { term };
                if !term["labelSelector"].is_object() {
                    continue;
                }
                for (keys, operator) in [("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")] {
                    let keys: Vec<String> = term[keys]
                        .as_array()
                        .map(|k| k.iter().filter_map(|k| k.as_str().map(String::from)).collect())
                        .unwrap_or_default();
                    for key in keys {
                        let Some(value) = labels.get(&key).filter(|v| v.is_string()) else {
                            continue;
                        };
                        let selector = &mut term["labelSelector"];
                        if !selector["matchExpressions"].is_array() {
                            selector["matchExpressions"] = json!([]);
                        }
                        let requirement =
                            json!({"key": key, "operator": operator, "values": [value]});
                        selector["matchExpressions"]
                            .as_array_mut()
                            .expect("a list")
                            .push(requirement);
                    }
                }
            }
        }
    }
}

/// The pod's quality-of-service class from its containers' requests and limits.
pub fn qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|f| pod["spec"][f].as_array())
        .flatten()
        .collect();
    let mut any = false;
    let mut guaranteed = true;
    for c in &containers {
        let requests = c["resources"]["requests"].as_object();
        let limits = c["resources"]["limits"].as_object();
        if requests.is_some_and(|r| !r.is_empty()) || limits.is_some_and(|l| !l.is_empty()) {
            any = true;
        }
        for resource in ["cpu", "memory"] {
            let limit = limits.and_then(|l| l.get(resource));
            let request = requests.and_then(|r| r.get(resource)).or(limit);
            if limit.is_none() || request != limit {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed && !containers.is_empty() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}
