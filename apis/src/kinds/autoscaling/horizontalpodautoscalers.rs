//! autoscaling/v2 HorizontalPodAutoscalers (the stored version).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{
    age, arr, at, int, int_or, name, opt_int, quantity, quantity_or_nil, st, text, TablePrinter,
    AGE, NAME,
};
use crate::validation::FieldError;
use crate::{convert, defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct HorizontalPodAutoscalers;

impl Strategy for HorizontalPodAutoscalers {
    fn default(&self, obj: &mut Value) {
        defaults::autoscaling::hpa_v2(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::autoscaling::horizontal_pod_autoscaler(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }

    fn convert_from(&self, obj: Value, from: &str) -> Value {
        convert::hpa_to_v2(obj, from)
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
/// autoscaling/v1 prints the same.
pub(super) const PRINTER: TablePrinter = TablePrinter {
    columns: &[
        NAME,
        text("Reference", D_HPA_REF),
        text("Targets", D_HPA_METRICS),
        text("MinPods", D_HPA_MIN),
        text("MaxPods", D_HPA_MAX),
        text("Replicas", D_HPA_CURRENT),
        AGE,
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        st(obj, &["spec", "scaleTargetRef", "kind"]),
        st(obj, &["spec", "scaleTargetRef", "name"])
    );
    vec![
        name(obj),
        reference.into(),
        hpa_targets(obj).into(),
        int_or(obj, &["spec", "minReplicas"], 1).to_string().into(),
        int(obj, &["spec", "maxReplicas"]).into(),
        int(obj, &["status", "currentReplicas"]).into(),
        age(obj, now),
    ]
}

/// `Targets` of an HPA: autoscaling/v2 metrics, or the v1 CPU target.
fn hpa_targets(obj: &Value) -> String {
    let specs = arr(obj, &["spec", "metrics"]);
    let statuses = arr(obj, &["status", "currentMetrics"]);
    if specs.is_empty() {
        return match opt_int(obj, &["spec", "targetCPUUtilizationPercentage"]) {
            Some(target) => {
                let current = match opt_int(obj, &["status", "currentCPUUtilizationPercentage"]) {
                    Some(c) => format!("{c}%"),
                    None => "<unknown>".to_string(),
                };
                format!("cpu: {current}/{target}%")
            }
            None => "<none>".to_string(),
        };
    }
    const MAX: usize = 2;
    let mut list = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let status = statuses.get(i);
        // The status's source of the same type, when it reports one.
        let current_of =
            |source: &str| status.and_then(|s| at(s, &[source])).filter(|s| s.is_object());
        let item = match st(spec, &["type"]) {
            "External" | "Object" => {
                let source = if st(spec, &["type"]) == "External" { "external" } else { "object" };
                let target = at(spec, &[source, "target"]);
                match target.and_then(|t| at(t, &["averageValue"])).filter(|v| !v.is_null()) {
                    Some(avg) => {
                        let current = current_of(source)
                            .and_then(|c| at(c, &["current", "averageValue"]))
                            .filter(|v| !v.is_null())
                            .map(quantity)
                            .unwrap_or_else(|| "<unknown>".to_string());
                        format!("{current}/{} (avg)", quantity(avg))
                    }
                    None => {
                        let current = match current_of(source) {
                            Some(c) => quantity_or_nil(at(c, &["current", "value"])),
                            None => "<unknown>".to_string(),
                        };
                        let target = quantity_or_nil(target.and_then(|t| at(t, &["value"])));
                        format!("{current}/{target}")
                    }
                }
            }
            "Pods" => {
                let current = match current_of("pods") {
                    Some(c) => quantity_or_nil(at(c, &["current", "averageValue"])),
                    None => "<unknown>".to_string(),
                };
                let target = quantity_or_nil(at(spec, &["pods", "target", "averageValue"]));
                format!("{current}/{target}")
            }
            "Resource" | "ContainerResource" => {
                let source = if st(spec, &["type"]) == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let resource = st(spec, &[source, "name"]);
                let target = at(spec, &[source, "target"]);
                match target.and_then(|t| at(t, &["averageValue"])).filter(|v| !v.is_null()) {
                    Some(avg) => {
                        let current = match current_of(source) {
                            Some(c) => quantity_or_nil(at(c, &["current", "averageValue"])),
                            None => "<unknown>".to_string(),
                        };
                        format!("{resource}: {current}/{}", quantity(avg))
                    }
                    None => {
                        let current = current_of(source)
                            .and_then(|c| opt_int(c, &["current", "averageUtilization"]))
                            .map(|u| format!("{u}%"))
                            .unwrap_or_else(|| "<unknown>".to_string());
                        let target = target
                            .and_then(|t| opt_int(t, &["averageUtilization"]))
                            .map(|u| format!("{u}%"))
                            .unwrap_or_else(|| "<auto>".to_string());
                        format!("{resource}: {current}/{target}")
                    }
                }
            }
            _ => "<unknown type>".to_string(),
        };
        list.push(item);
    }
    let count = list.len();
    if count > MAX {
        format!("{} + {} more...", list[..MAX].join(", "), count - MAX)
    } else {
        list.join(", ")
    }
}

// Column descriptions: the API field documentation upstream takes them from.
const D_HPA_REF: &str = "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.";
const D_HPA_METRICS: &str = "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond. If not set, the default metric will be set to 80% average CPU utilization.";
const D_HPA_MIN: &str = "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available.";
const D_HPA_MAX: &str = "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.";
const D_HPA_CURRENT: &str = "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.";
