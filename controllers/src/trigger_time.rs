//! The `endpoints.kubernetes.io/last-change-trigger-time` annotation, as upstream's
//! `TriggerTimeTracker` computes it: the time of the earliest change, since the Service's
//! last sync, that causes its endpoints to be written. A change is a pod's Ready condition
//! moving (its `lastTransitionTime`) or the Service being made (its creationTimestamp).
//! Kube-proxy measures network programming latency from it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::jiff::Timestamp;

use crate::service_pods;

/// The trigger times last seen for each Service (by `namespace/name`).
#[derive(Default)]
pub struct TriggerTimes {
    states: Mutex<HashMap<String, State>>,
}

#[derive(Default)]
struct State {
    pods: HashMap<String, Timestamp>,
    service: Option<Timestamp>,
}

impl TriggerTimes {
    /// The trigger time of this sync of `service` with `pods` (its selected pods): the
    /// Service's creation for a Service not seen before, else the earliest trigger newer than
    /// last time's; `None` when nothing changed (the annotation is then removed).
    pub fn compute(&self, key: &str, service: &Service, pods: &[Arc<Pod>]) -> Option<Timestamp> {
        let mut states = self.states.lock().expect("trigger times");
        let known = states.contains_key(key);
        let state = states.entry(key.to_string()).or_default();
        let mut earliest: Option<Timestamp> = None;
        let mut pod_times = HashMap::new();
        for pod in pods {
            let Some(at) = service_pods::ready_condition(pod)
                .and_then(|c| c.last_transition_time.as_ref())
                .map(|t| t.0)
            else {
                continue;
            };
            let name = pod.metadata.name.clone().unwrap_or_default();
            if state.pods.get(&name).is_none_or(|last| at > *last) {
                earliest = Some(earliest.map_or(at, |e| e.min(at)));
            }
            pod_times.insert(name, at);
        }
        let created = service.metadata.creation_timestamp.as_ref().map(|t| t.0);
        if let Some(at) = created {
            if state.service.is_none_or(|last| at > last) {
                earliest = Some(earliest.map_or(at, |e| e.min(at)));
            }
        }
        state.pods = pod_times;
        state.service = created;
        if known {
            earliest
        } else {
            created
        }
    }

    /// Forgets a deleted Service.
    pub fn forget(&self, key: &str) {
        self.states.lock().expect("trigger times").remove(key);
    }
}

/// A time as Go's `time.RFC3339Nano` prints it in UTC: fractional seconds only when there
/// are any, without trailing zeros.
pub fn rfc3339_nano(at: Timestamp) -> String {
    let seconds = at.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    let nanos = at.subsec_nanosecond();
    if nanos == 0 {
        return format!("{seconds}Z");
    }
    let fraction = format!("{nanos:09}");
    format!("{seconds}.{}Z", fraction.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, ready_at: &str) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name},
                "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ready_at}]},
            }))
            .unwrap(),
        )
    }

    #[test]
    fn the_earliest_new_change_is_the_trigger() {
        let service: Service = serde_json::from_value(
            json!({"metadata": {"name": "web", "creationTimestamp": "2024-01-01T00:00:00Z"}}),
        )
        .unwrap();
        let t = TriggerTimes::default();
        let at = |s: &str| s.parse::<Timestamp>().unwrap();
        // First sync: the Service's creation.
        let pods = vec![pod("a", "2024-01-01T00:00:05Z")];
        assert_eq!(t.compute("ns/web", &service, &pods), Some(at("2024-01-01T00:00:00Z")));
        // Nothing new.
        assert_eq!(t.compute("ns/web", &service, &pods), None);
        // Two pods changed: the earlier one.
        let pods = vec![pod("a", "2024-01-01T00:01:00Z"), pod("b", "2024-01-01T00:00:30Z")];
        assert_eq!(t.compute("ns/web", &service, &pods), Some(at("2024-01-01T00:00:30Z")));
        t.forget("ns/web");
        assert_eq!(t.compute("ns/web", &service, &pods), Some(at("2024-01-01T00:00:00Z")));
    }

    #[test]
    fn times_print_as_go_prints_them() {
        let at = |s: &str| s.parse::<Timestamp>().unwrap();
        assert_eq!(rfc3339_nano(at("2024-05-06T07:08:09Z")), "2024-05-06T07:08:09Z");
        assert_eq!(rfc3339_nano(at("2024-05-06T07:08:09.120Z")), "2024-05-06T07:08:09.12Z");
    }
}
