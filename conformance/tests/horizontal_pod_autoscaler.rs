//! HorizontalPodAutoscalers on a real Docker node, as a user meets them with stock kubectl:
//! `kubectl autoscale` makes an HPA that scales a Deployment of busybox CPU loops up while
//! they burn (the kubelet's CPU figures reach it through the API server's metrics.k8s.io)
//! and back down once they stop, with `kubectl get hpa` and `kubectl describe hpa` showing
//! the targets, conditions and events upstream shows. A custom resource with a scale
//! subresource is scaled the same way; metrics from custom and external metrics APIs that
//! nobody serves, a missing target and two HPAs over the same pods are reported with
//! upstream's conditions and events.

use std::time::Duration;

use rkube_conformance::node::NodeServer;
use serde_json::Value;

/// The controller reconciles every 2 s here (15 s upstream by default), so that a test takes
/// seconds, not minutes; every other HPA setting is upstream's default.
const FLAGS: &[&str] = &["--horizontal-pod-autoscaler-sync-period", "2s"];

/// A Deployment whose pods spin while `LOAD` is 1 and sleep otherwise; a spinning pod uses
/// its limit, 200 millicores: twice its request.
const WEB: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: loop
        image: "busybox:1.36"
        imagePullPolicy: IfNotPresent
        env: [{name: LOAD, value: "1"}]
        command: ["sh", "-c", "if [ \"$LOAD\" = 1 ]; then while :; do :; done; else exec sleep 3600; fi"]
        resources:
          requests: {cpu: 100m}
          limits: {cpu: 200m}
"#;

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The HPA's condition `type` as (status, reason, message).
fn condition(hpa: &Value, type_: &str) -> Option<(String, String, String)> {
    let c = hpa["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == type_)?;
    let text = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    Some((text("status"), text("reason"), text("message")))
}

/// The messages of the events of `reason` about HPA `name`.
fn events(n: &NodeServer, name: &str, reason: &str) -> Vec<String> {
    let selector = format!(
        "involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name={name},reason={reason}"
    );
    let out = n.server.ok(&["get", "events", "--field-selector", &selector, "-o", "json"]);
    let list = json(&out);
    let items = list["items"].as_array().cloned().unwrap_or_default();
    for e in &items {
        assert_eq!(e["source"]["component"], "horizontal-pod-autoscaler", "{e}");
    }
    items.iter().map(|e| e["message"].as_str().unwrap_or_default().to_string()).collect()
}

#[test]
fn kubectl_autoscale_scales_a_cpu_loop_up_and_back_down() {
    let n = NodeServer::start_with(FLAGS);
    let s = &n.server;
    let minute = Duration::from_secs(60);
    s.ok_stdin(&["apply", "-f", "-"], WEB);
    s.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    s.ok(&["autoscale", "deployment", "web", "--cpu-percent=50", "--min=1", "--max=3"]);

    // Up: the loop uses about 200% of its request; a quarter-core target asks for 4 pods,
    // the maximum allows 3.
    let hpa = n.wait_for(&["get", "hpa", "web", "-o", "json"], Duration::from_secs(120), |t| {
        let hpa = json(t);
        hpa["status"]["desiredReplicas"] == 3 && hpa["status"]["currentReplicas"] == 3
    });
    let hpa = json(&hpa);
    let scaled = s.ok(&["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(scaled, "3");
    let current = &hpa["status"]["currentMetrics"][0];
    assert_eq!(current["type"], "Resource", "{hpa}");
    assert_eq!(current["resource"]["name"], "cpu", "{hpa}");
    let utilization = current["resource"]["current"]["averageUtilization"].as_i64().unwrap();
    assert!(utilization > 55, "well above the 50% target: {hpa}");
    assert!(current["resource"]["current"]["averageValue"].is_string(), "{hpa}");
    assert!(hpa["status"]["lastScaleTime"].is_string(), "{hpa}");
    let (status, reason, message) = condition(&hpa, "ScalingActive").expect("ScalingActive");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "ValidMetricFound"), "{hpa}");
    assert_eq!(
        message,
        "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)"
    );
    let (status, _, _) = condition(&hpa, "AbleToScale").expect("AbleToScale");
    assert_eq!(status, "True", "{hpa}");
    let rescales = events(&n, "web", "SuccessfulRescale");
    assert!(
        rescales.iter().any(|m| {
            m.starts_with("New size: ")
                && m.ends_with(
                    "; reason: cpu resource utilization (percentage of request) above target",
                )
        }),
        "{rescales:?}"
    );

    // What kubectl shows: the table's targets, and describe's metrics, conditions, events.
    let table = s.ok(&["get", "hpa", "web"]);
    let lines: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        lines[0],
        ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"],
        "{table}"
    );
    assert_eq!(&lines[1][..3], ["web", "Deployment/web", "cpu:"], "{table}");
    let targets = lines[1][3];
    let (now, target) = targets.split_once('/').unwrap_or_else(|| panic!("{table}"));
    assert!(now.ends_with('%') && now.trim_end_matches('%').parse::<u32>().is_ok(), "{table}");
    assert_eq!(target, "50%", "{table}");
    assert_eq!(&lines[1][4..7], ["1", "3", "3"], "{table}");
    let described = s.ok(&["describe", "hpa", "web"]);
    eprintln!("kubectl get hpa:\n{table}\nkubectl describe hpa web:\n{described}");
    for expected in [
        "Reference:",
        "Deployment/web",
        "resource cpu on pods  (as a percentage of request):",
        "/ 50%",
        "Min replicas:",
        "Deployment pods:",
        "3 current / 3 desired",
        "AbleToScale",
        "ScalingActive   True    ValidMetricFound",
        "ScalingLimited",
        "SuccessfulRescale",
        "horizontal-pod-autoscaler",
        "reason: cpu resource utilization (percentage of request) above target",
    ] {
        assert!(described.contains(expected), "{expected:?} missing from:\n{described}");
    }

    // Down: a short scale-down window, and the loops stop (a new rollout of idle pods).
    s.ok(&[
        "patch",
        "hpa",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":5}}}}"#,
    ]);
    let behavior = s.ok(&["get", "hpa", "web", "-o", "jsonpath={.spec.behavior}"]);
    let behavior = json(&behavior);
    assert_eq!(behavior["scaleDown"]["stabilizationWindowSeconds"], 5, "{behavior}");
    assert_eq!(
        behavior["scaleUp"]["policies"],
        serde_json::json!([{"type": "Pods", "value": 4, "periodSeconds": 15},
                           {"type": "Percent", "value": 100, "periodSeconds": 15}]),
        "the API completes the behavior with upstream's defaults: {behavior}"
    );
    s.ok(&["set", "env", "deployment/web", "LOAD=0"]);
    let hpa = n.wait_for(&["get", "hpa", "web", "-o", "json"], Duration::from_secs(180), |t| {
        let hpa = json(t);
        hpa["status"]["desiredReplicas"] == 1 && hpa["status"]["currentReplicas"] == 1
    });
    let hpa = json(&hpa);
    eprintln!("scaled down:\n{}", s.ok(&["describe", "hpa", "web"]));
    assert_eq!(s.ok(&["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"]), "1");
    let rescales = events(&n, "web", "SuccessfulRescale");
    assert!(
        rescales.iter().any(|m| m == "New size: 1; reason: All metrics below target"),
        "{rescales:?}"
    );
    // At the minimum now: the desired count is within range or held by the minimum.
    let (_, reason, _) = condition(&hpa, "ScalingLimited").expect("ScalingLimited");
    assert!(["DesiredWithinRange", "TooFewReplicas"].contains(&reason.as_str()), "{hpa}");
    n.wait_for(&["get", "deployment", "web", "-o", "jsonpath={.status.replicas}"], minute, |r| {
        r == "1"
    });
}

/// A resource of the test with a scale subresource whose selector is a status string, as
/// operators' resources have.
const WIDGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.count, labelSelectorPath: .status.selector}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

/// A widget, a pod it "runs" that burns CPU, an HPA on the widget, and three idle
/// Deployments with HPAs on metrics nobody serves or a target that is not there.
const OTHERS: &str = r#"
apiVersion: example.com/v1
kind: Widget
metadata: {name: gadget}
spec: {size: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: gadget-0, labels: {widget: gadget}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: loop
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "while :; do :; done"]
    resources: {requests: {cpu: 40m}, limits: {cpu: 100m}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: gadget}
spec:
  scaleTargetRef: {apiVersion: example.com/v1, kind: Widget, name: gadget}
  minReplicas: 1
  maxReplicas: 2
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: quiet}
spec:
  replicas: 1
  selector: {matchLabels: {app: quiet}}
  template:
    metadata: {labels: {app: quiet}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: packets}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: quiet}
  maxReplicas: 3
  metrics:
  - type: Pods
    pods: {metric: {name: packets-per-second}, target: {type: AverageValue, averageValue: 1k}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: queue}
spec:
  replicas: 1
  selector: {matchLabels: {app: queue}}
  template:
    metadata: {labels: {app: queue}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: queue}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: queue}
  maxReplicas: 3
  metrics:
  - type: External
    external: {metric: {name: queue-length}, target: {type: Value, value: "30"}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: shared}
spec:
  replicas: 1
  selector:
    matchLabels: {app: shared}
    matchExpressions: [{key: tier, operator: In, values: [b, a]}]
  template:
    metadata: {labels: {app: shared, tier: a}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"], resources: {requests: {cpu: 10m}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: shared-a}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: shared}
  maxReplicas: 3
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: shared-b}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: shared}
  maxReplicas: 3
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: nothing}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: not-there}
  maxReplicas: 3
"#;

#[test]
fn custom_resources_scale_and_failures_are_reported_as_upstream_does() {
    let n = NodeServer::start_with(FLAGS);
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], WIDGETS);
    s.ok(&["wait", "--for=condition=Established", "--timeout=20s", "crd/widgets.example.com"]);
    n.wait_for(&["get", "widgets"], Duration::from_secs(20), |_| true);
    s.ok_stdin(&["apply", "-f", "-"], OTHERS);
    // The widget's "controller" reports its pod and selector.
    s.ok(&[
        "patch",
        "widget",
        "gadget",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"count":1,"selector":"widget=gadget"}}"#,
    ]);
    let scale = json(&s.ok(&[
        "get",
        "--raw",
        "/apis/example.com/v1/namespaces/default/widgets/gadget/scale",
    ]));
    assert_eq!(scale["spec"]["replicas"], 1, "{scale}");
    assert_eq!(scale["status"], serde_json::json!({"replicas": 1, "selector": "widget=gadget"}));

    // The widget's pod burns 250% of its request: the HPA doubles the widget's size.
    let hpa = n.wait_for(&["get", "hpa", "gadget", "-o", "json"], Duration::from_secs(120), |t| {
        json(t)["status"]["desiredReplicas"] == 2
    });
    assert_eq!(s.ok(&["get", "widget", "gadget", "-o", "jsonpath={.spec.size}"]), "2", "{hpa}");

    // A Pods metric needs a custom metrics API: none is registered.
    let hpa = n.wait_for(&["get", "hpa", "packets", "-o", "json"], Duration::from_secs(60), |t| {
        condition(&json(t), "ScalingActive").is_some_and(|c| c.0 == "False")
    });
    let hpa = json(&hpa);
    let fetch = "unable to get metric packets-per-second: unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered";
    assert_eq!(
        condition(&hpa, "ScalingActive").unwrap(),
        (
            "False".to_string(),
            "FailedGetPodsMetric".to_string(),
            format!("the HPA was unable to compute the replica count: {fetch}")
        ),
        "{hpa}"
    );
    assert_eq!(
        condition(&hpa, "AbleToScale").map(|c| c.1),
        Some("SucceededGetScale".into()),
        "{hpa}"
    );
    assert_eq!(hpa["status"]["currentMetrics"], serde_json::json!([{"type": ""}]), "{hpa}");
    assert_eq!(hpa["status"]["currentReplicas"], 1, "{hpa}");
    assert_eq!(events(&n, "packets", "FailedGetPodsMetric"), [fetch]);
    assert_eq!(
        events(&n, "packets", "FailedComputeMetricsReplicas"),
        [format!("invalid metrics (1 invalid out of 1), first error is: failed to get pods metric value: {fetch}")]
    );
    let table = s.ok(&["get", "hpa", "packets", "--no-headers"]);
    assert!(table.contains("<unknown>/1k"), "{table}");

    // An External metric: the API server has no such API.
    let hpa = n.wait_for(&["get", "hpa", "queue", "-o", "json"], Duration::from_secs(60), |t| {
        condition(&json(t), "ScalingActive").is_some_and(|c| c.0 == "False")
    });
    let (_, reason, message) = condition(&json(&hpa), "ScalingActive").unwrap();
    assert_eq!(reason, "FailedGetExternalMetric", "{hpa}");
    assert_eq!(
        message,
        "the HPA was unable to compute the replica count: unable to get external metric default/queue-length/nil: unable to fetch metrics from external metrics API: the server could not find the requested resource"
    );

    // Two HPAs over the same pods: neither acts. (The Deployment's scale names its pods by
    // its whole selector, expressions included.)
    for name in ["shared-a", "shared-b"] {
        let hpa = n.wait_for(&["get", "hpa", name, "-o", "json"], Duration::from_secs(60), |t| {
            condition(&json(t), "ScalingActive").is_some_and(|c| c.1 == "AmbiguousSelector")
        });
        let (_, _, message) = condition(&json(&hpa), "ScalingActive").unwrap();
        assert_eq!(
            message,
            "pods by selector app=shared,tier in (a,b) are controlled by multiple HPAs: [default/shared-a default/shared-b]"
        );
    }
    assert_eq!(s.ok(&["get", "deployment", "shared", "-o", "jsonpath={.spec.replicas}"]), "1");

    // A target that is not there.
    let hpa = n.wait_for(&["get", "hpa", "nothing", "-o", "json"], Duration::from_secs(60), |t| {
        condition(&json(t), "AbleToScale").is_some_and(|c| c.0 == "False")
    });
    assert_eq!(
        condition(&json(&hpa), "AbleToScale").unwrap(),
        (
            "False".to_string(),
            "FailedGetScale".to_string(),
            r#"the HPA controller was unable to get the target's current scale: deployments.apps "not-there" not found"#.to_string()
        )
    );
    assert!(!events(&n, "nothing", "FailedGetScale").is_empty());
}
