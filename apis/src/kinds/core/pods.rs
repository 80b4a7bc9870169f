//! Pods (`v1`): created `Pending` with their QoS class (and the `SchedulingGated` condition
//! while gated), affinity label keys merged into selectors; graceful deletion on a node; a
//! status write keeps the owner references; a delete answers with the pod.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::strategy::{SelectableField, Strategy};
use crate::tables::{
    arr, at, boolean, int, or, or_none, since, st, text, time, wide, TablePrinter, AGE, NAME,
};
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

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
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

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[
            NAME,
            text("Ready", "The aggregate readiness state of this pod for accepting traffic."),
            text("Status", "The aggregate status of the containers in this pod."),
            text(
                "Restarts",
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            ),
            AGE,
            wide("IP", "string", D_POD_IP),
            wide("Node", "string", D_POD_NODE),
            wide("Nominated Node", "string", D_POD_NOMINATED),
            wide("Readiness Gates", "string", D_POD_GATES),
        ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let phase = st(obj, &["status", "phase"]);
    let mut reason = or(st(obj, &["status", "reason"]), phase).to_string();
    let conditions = arr(obj, &["status", "conditions"]);
    if conditions
        .iter()
        .any(|c| st(c, &["type"]) == "PodScheduled" && st(c, &["reason"]) == "SchedulingGated")
    {
        reason = "SchedulingGated".to_string();
    }

    let init_specs = arr(obj, &["spec", "initContainers"]);
    // Sidecars: init containers that keep running next to the app containers.
    let restartable =
        |name: &str| init_specs.iter().any(|c| st(c, &["name"]) == name && is_sidecar(c));
    let mut total = arr(obj, &["spec", "containers"]).len() as i64;
    total += init_specs.iter().filter(|c| is_sidecar(c)).count() as i64;
    let mut ready = 0i64;
    let mut restarts = 0i64;
    let mut sidecar_restarts = 0i64;
    let mut last_restart: Option<DateTime<Utc>> = None;
    let mut last_sidecar_restart: Option<DateTime<Utc>> = None;
    let later = |a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>| match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };

    let mut initializing = false;
    for (i, c) in arr(obj, &["status", "initContainerStatuses"]).iter().enumerate() {
        let count = int(c, &["restartCount"]);
        let finished = time(c, &["lastState", "terminated", "finishedAt"]);
        restarts += count;
        last_restart = later(last_restart, finished);
        let sidecar = restartable(st(c, &["name"]));
        if sidecar {
            sidecar_restarts += count;
            last_sidecar_restart = later(last_sidecar_restart, finished);
        }
        let terminated = at(c, &["state", "terminated"]).filter(|t| t.is_object());
        let waiting = at(c, &["state", "waiting"]).filter(|w| w.is_object());
        if terminated.is_some_and(|t| int(t, &["exitCode"]) == 0) {
            continue;
        }
        if sidecar && boolean(c, &["started"]) == Some(true) {
            if boolean(c, &["ready"]) == Some(true) {
                ready += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            reason = match st(t, &["reason"]) {
                "" if int(t, &["signal"]) != 0 => format!("Init:Signal:{}", int(t, &["signal"])),
                "" => format!("Init:ExitCode:{}", int(t, &["exitCode"])),
                r => format!("Init:{r}"),
            };
        } else if let Some(r) =
            waiting.map(|w| st(w, &["reason"])).filter(|r| !r.is_empty() && *r != "PodInitializing")
        {
            reason = format!("Init:{r}");
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }

    let initialized = conditions
        .iter()
        .any(|c| st(c, &["type"]) == "Initialized" && st(c, &["status"]) == "True");
    if !initializing || initialized {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        for c in arr(obj, &["status", "containerStatuses"]).iter().rev() {
            restarts += int(c, &["restartCount"]);
            last_restart = later(last_restart, time(c, &["lastState", "terminated", "finishedAt"]));
            let waiting = at(c, &["state", "waiting"]).filter(|w| w.is_object());
            let terminated = at(c, &["state", "terminated"]).filter(|t| t.is_object());
            let running = at(c, &["state", "running"]).is_some_and(Value::is_object);
            if let Some(r) = waiting.map(|w| st(w, &["reason"])).filter(|r| !r.is_empty()) {
                reason = r.to_string();
            } else if let Some(t) = terminated {
                reason = match st(t, &["reason"]) {
                    "" if int(t, &["signal"]) != 0 => format!("Signal:{}", int(t, &["signal"])),
                    "" => format!("ExitCode:{}", int(t, &["exitCode"])),
                    r => r.to_string(),
                };
            } else if boolean(c, &["ready"]) == Some(true) && running {
                has_running = true;
                ready += 1;
            }
        }
        // A pod whose finished containers report Completed while others still run.
        if reason == "Completed" && has_running {
            let pod_ready = conditions
                .iter()
                .any(|c| st(c, &["type"]) == "Ready" && st(c, &["status"]) == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.to_string();
        }
    }

    if at(obj, &["metadata", "deletionTimestamp"]).is_some_and(|d| !d.is_null()) {
        if st(obj, &["status", "reason"]) == "NodeLost" {
            reason = "Unknown".to_string();
        } else if phase != "Succeeded" && phase != "Failed" {
            reason = "Terminating".to_string();
        }
    }

    let restarts = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", since(Some(t), now)),
        _ => restarts.to_string(),
    };

    // Older objects carry only the singular podIP.
    let ip = arr(obj, &["status", "podIPs"])
        .first()
        .map(|p| st(p, &["ip"]))
        .unwrap_or_else(|| st(obj, &["status", "podIP"]));
    let gates = arr(obj, &["spec", "readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let passing = gates
            .iter()
            .filter(|g| {
                let kind = st(g, &["conditionType"]);
                conditions
                    .iter()
                    .find(|c| st(c, &["type"]) == kind)
                    .is_some_and(|c| st(c, &["status"]) == "True")
            })
            .count();
        format!("{passing}/{}", gates.len())
    };

    vec![
        st(obj, &["metadata", "name"]).into(),
        format!("{ready}/{total}").into(),
        reason.into(),
        restarts.into(),
        since(time(obj, &["metadata", "creationTimestamp"]), now).into(),
        or_none(ip).into(),
        or_none(st(obj, &["spec", "nodeName"])).into(),
        or_none(st(obj, &["status", "nominatedNodeName"])).into(),
        readiness_gates.into(),
    ]
}

fn is_sidecar(container: &Value) -> bool {
    st(container, &["restartPolicy"]) == "Always"
}

// Column descriptions: the API field documentation upstream takes them from.
const D_POD_IP: &str = "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.";
const D_POD_NODE: &str = "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename";
const D_POD_NOMINATED: &str = "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.";
const D_POD_GATES: &str = "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates";
