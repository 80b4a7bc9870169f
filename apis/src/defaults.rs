//! Defaulting: the values kube-apiserver fills in for fields a client leaves out, so that
//! `kubectl get -o yaml` shows what it shows against a real cluster.

use serde_json::{json, Value};

use crate::resources::ResourceInfo;

/// Sets `obj[key]` to `value` when it is missing or null.
fn default(obj: &mut Value, key: &str, value: Value) {
    if obj.is_object() && obj.get(key).is_none_or(Value::is_null) {
        obj[key] = value;
    }
}

/// The field `key` of an object, when it is there: unlike `obj[key]` on a mutable value, this
/// never inserts a null.
fn field<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    obj.get_mut(key).filter(|v| !v.is_null())
}

/// Applies the defaults of the object's kind.
pub fn apply(info: &ResourceInfo, obj: &mut Value) {
    match (info.group, info.plural) {
        ("", "pods") => field(obj, "spec").into_iter().for_each(pod_spec),
        ("", "podtemplates") => field(obj, "template").into_iter().for_each(pod_template),
        ("", "replicationcontrollers") => {
            if let Some(spec) = field(obj, "spec") {
                default(spec, "replicas", json!(1));
                default(spec, "minReadySeconds", json!(0));
                field(spec, "template").into_iter().for_each(pod_template);
            }
            // The selector and the object's labels default to the template's labels.
            let labels = obj["spec"]["template"]["metadata"]["labels"].clone();
            if labels.is_object() {
                let empty = |v: &Value| v.as_object().is_none_or(|m| m.is_empty());
                if empty(&obj["spec"]["selector"]) {
                    obj["spec"]["selector"] = labels.clone();
                }
                if empty(&obj["metadata"]["labels"]) && obj["metadata"].is_object() {
                    obj["metadata"]["labels"] = labels;
                }
            }
        }
        ("apps", "deployments") => {
            if let Some(spec) = field(obj, "spec") {
                default(spec, "replicas", json!(1));
                default(spec, "strategy", json!({}));
                rolling_update(&mut spec["strategy"], json!("25%"), json!("25%"));
                default(spec, "revisionHistoryLimit", json!(10));
                default(spec, "progressDeadlineSeconds", json!(600));
                field(spec, "template").into_iter().for_each(pod_template);
            }
        }
        ("apps", "replicasets") => {
            if let Some(spec) = field(obj, "spec") {
                default(spec, "replicas", json!(1));
                field(spec, "template").into_iter().for_each(pod_template);
            }
        }
        ("apps", "statefulsets") => {
            if let Some(spec) = field(obj, "spec") {
                default(spec, "replicas", json!(1));
                default(spec, "podManagementPolicy", json!("OrderedReady"));
                default(spec, "updateStrategy", json!({}));
                if let Some(strategy) = field(spec, "updateStrategy") {
                    if strategy.get("type").is_none_or(Value::is_null) {
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
                default(
                    spec,
                    "persistentVolumeClaimRetentionPolicy",
                    json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
                );
                field(spec, "template").into_iter().for_each(pod_template);
            }
        }
        ("apps", "daemonsets") => {
            if let Some(spec) = field(obj, "spec") {
                default(spec, "updateStrategy", json!({}));
                rolling_update(&mut spec["updateStrategy"], json!(1), json!(0));
                default(spec, "revisionHistoryLimit", json!(10));
                field(spec, "template").into_iter().for_each(pod_template);
            }
        }
        ("batch", "jobs") => field(obj, "spec").into_iter().for_each(job_spec),
        ("batch", "cronjobs") => {
            if let Some(spec) = field(obj, "spec") {
                default(spec, "concurrencyPolicy", json!("Allow"));
                default(spec, "suspend", json!(false));
                default(spec, "successfulJobsHistoryLimit", json!(3));
                default(spec, "failedJobsHistoryLimit", json!(1));
                if let Some(template) = field(spec, "jobTemplate") {
                    field(template, "spec").into_iter().for_each(job_spec);
                }
            }
        }
        ("", "services") => field(obj, "spec").into_iter().for_each(service_spec),
        ("", "secrets") => default(obj, "type", json!("Opaque")),
        ("", "persistentvolumeclaims") => field(obj, "spec")
            .into_iter()
            .for_each(|s| default(s, "volumeMode", json!("Filesystem"))),
        ("", "persistentvolumes") => {
            if let Some(spec) = field(obj, "spec") {
                default(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
                default(spec, "volumeMode", json!("Filesystem"));
            }
        }
        _ => {}
    }
}

/// A Deployment's `strategy` or a DaemonSet's `updateStrategy`: `RollingUpdate` when no type
/// is given, and then the rolling update's limits when they are missing.
fn rolling_update(strategy: &mut Value, max_unavailable: Value, max_surge: Value) {
    if !strategy.is_object() {
        return;
    }
    default(strategy, "type", json!("RollingUpdate"));
    if strategy["type"] == "RollingUpdate" {
        default(strategy, "rollingUpdate", json!({}));
        if let Some(rolling) = field(strategy, "rollingUpdate") {
            default(rolling, "maxUnavailable", max_unavailable);
            default(rolling, "maxSurge", max_surge);
        }
    }
}

fn pod_template(template: &mut Value) {
    field(template, "spec").into_iter().for_each(pod_spec);
}

fn job_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    if spec.get("completions").is_none_or(Value::is_null)
        && spec.get("parallelism").is_none_or(Value::is_null)
    {
        spec["completions"] = json!(1);
        spec["parallelism"] = json!(1);
    }
    default(spec, "parallelism", json!(1));
    default(spec, "backoffLimit", json!(6));
    default(spec, "completionMode", json!("NonIndexed"));
    default(spec, "suspend", json!(false));
    default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    field(spec, "template").into_iter().for_each(pod_template);
}

/// Pod spec defaults (also inside every workload's pod template).
pub fn pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default(spec, "restartPolicy", json!("Always"));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "securityContext", json!({}));
    default(spec, "schedulerName", json!("default-scheduler"));
    default(spec, "enableServiceLinks", json!(true));
    default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    for list in ["initContainers", "containers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers {
                container(c);
            }
        }
    }
}

fn container(c: &mut Value) {
    if !c.is_object() {
        return;
    }
    let image = c["image"].as_str().unwrap_or("");
    // `:latest`, or no tag and no digest, means Always.
    let last = image.rsplit('/').next().unwrap_or("");
    let always = !image.contains('@') && (!last.contains(':') || last.ends_with(":latest"));
    default(c, "imagePullPolicy", json!(if always { "Always" } else { "IfNotPresent" }));
    default(c, "terminationMessagePath", json!("/dev/termination-log"));
    default(c, "terminationMessagePolicy", json!("File"));
    default(c, "resources", json!({}));
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            default(p, "protocol", json!("TCP"));
        }
    }
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = field(c, key) {
            default(probe, "timeoutSeconds", json!(1));
            default(probe, "periodSeconds", json!(10));
            default(probe, "successThreshold", json!(1));
            default(probe, "failureThreshold", json!(3));
            field(probe, "httpGet").into_iter().for_each(http_get);
        }
    }
    if let Some(lifecycle) = field(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            field(lifecycle, hook).and_then(|h| field(h, "httpGet")).into_iter().for_each(http_get);
        }
    }
}

/// An HTTP GET action (of a probe or a lifecycle hook).
fn http_get(action: &mut Value) {
    default(action, "path", json!("/"));
    default(action, "scheme", json!("HTTP"));
}

fn service_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default(spec, "type", json!("ClusterIP"));
    default(spec, "sessionAffinity", json!("None"));
    if spec["type"] != "ExternalName" {
        default(spec, "ipFamilyPolicy", json!("SingleStack"));
        default(spec, "ipFamilies", json!(["IPv4"]));
        default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if matches!(spec["type"].as_str(), Some("NodePort" | "LoadBalancer")) {
        default(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if spec["type"] == "LoadBalancer" {
        default(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    if spec["sessionAffinity"] == "ClientIP"
        && spec["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"].is_null()
    {
        spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 10800}});
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            default(p, "protocol", json!("TCP"));
            let port = p["port"].clone();
            default(p, "targetPort", port);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;

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
    fn image_pull_policy_follows_the_tag() {
        for (image, policy) in [
            ("busybox:1.36", "IfNotPresent"),
            ("busybox", "Always"),
            ("busybox:latest", "Always"),
            ("reg:5000/busybox", "Always"),
            ("reg:5000/busybox:1", "IfNotPresent"),
        ] {
            let mut c = json!({"image": image});
            container(&mut c);
            assert_eq!(c["imagePullPolicy"], policy, "{image}");
        }
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

    #[test]
    fn probes_and_hooks_get_upstream_defaults() {
        let mut c = json!({
            "image": "busybox:1.36",
            "readinessProbe": {"httpGet": {"port": 80}},
            "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 2},
            "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}}
        });
        container(&mut c);
        let readiness = &c["readinessProbe"];
        assert_eq!(
            (readiness["timeoutSeconds"].clone(), readiness["periodSeconds"].clone()),
            (json!(1), json!(10))
        );
        assert_eq!(
            (readiness["successThreshold"].clone(), readiness["failureThreshold"].clone()),
            (json!(1), json!(3))
        );
        assert_eq!(readiness["httpGet"], json!({"port": 80, "path": "/", "scheme": "HTTP"}));
        assert_eq!(c["livenessProbe"]["periodSeconds"], 2);
        assert!(c["livenessProbe"].get("httpGet").is_none() && c.get("startupProbe").is_none());
        assert_eq!(
            c["lifecycle"]["preStop"]["httpGet"],
            json!({"port": 80, "path": "/stop", "scheme": "HTTP"})
        );
    }
}
