//! PodDisruptionBudgets (`policy/v1`): the strategy, and the `DisruptionAllowed` condition
//! that both writers of a budget's status keep (the disruption controller and the
//! `pods/eviction` handler), as upstream's `poddisruptionbudget` helpers.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::strategy::Strategy;
use crate::tables::{age, at, col, int, int_or_string, name, text, TablePrinter, AGE, NAME};
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct PodDisruptionBudgets;

impl Strategy for PodDisruptionBudgets {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::policy::pod_disruption_budget(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[
        NAME,
        text("Min Available", "The minimum number of pods that must be available."),
        text("Max Unavailable", "The maximum number of pods that may be unavailable."),
        col(
            "Allowed Disruptions",
            "integer",
            "Calculated number of pods that may be disrupted at this time.",
        ),
        AGE,
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(obj),
        int_or_string(at(obj, &["spec", "minAvailable"])).into(),
        int_or_string(at(obj, &["spec", "maxUnavailable"])).into(),
        int(obj, &["status", "disruptionsAllowed"]).into(),
        age(obj, now),
    ]
}

/// The condition type both writers keep.
pub const DISRUPTION_ALLOWED: &str = "DisruptionAllowed";

/// Sets one `metav1.Condition` in `status.conditions` as upstream's `SetStatusCondition`:
/// added with `now` as its transition time, or, when there, updated in place with the time
/// changed only when its status does.
pub fn set_condition(
    status: &mut Value,
    type_: &str,
    condition_status: &str,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
    now: &str,
) {
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let conditions = status["conditions"].as_array_mut().expect("conditions list");
    let index = match conditions.iter().position(|c| c["type"] == type_) {
        Some(i) => i,
        None => {
            conditions.push(
                json!({"type": type_, "status": condition_status, "lastTransitionTime": now}),
            );
            conditions.len() - 1
        }
    };
    let c = &mut conditions[index];
    if c["status"] != condition_status {
        c["status"] = json!(condition_status);
        c["lastTransitionTime"] = json!(now);
    }
    c["reason"] = json!(reason);
    c["message"] = json!(message);
    match observed_generation {
        Some(g) => c["observedGeneration"] = json!(g),
        None => {
            if let Some(c) = c.as_object_mut() {
                c.remove("observedGeneration");
            }
        }
    }
}

/// Upstream's `UpdateDisruptionAllowedCondition`: `DisruptionAllowed` is `True`
/// (`SufficientPods`) while `status.disruptionsAllowed` is above zero, else `False`
/// (`InsufficientPods`), observed at the status's `observedGeneration`.
pub fn update_disruption_allowed_condition(status: &mut Value, now: &str) {
    let allowed = status["disruptionsAllowed"].as_i64().unwrap_or(0) > 0;
    let (condition_status, reason) =
        if allowed { ("True", "SufficientPods") } else { ("False", "InsufficientPods") };
    let generation = status["observedGeneration"].as_i64().filter(|g| *g != 0);
    set_condition(status, DISRUPTION_ALLOWED, condition_status, reason, "", generation, now);
}

/// Upstream's `ConditionsAreUpToDate`: the budget's status was computed for its current
/// generation and its `DisruptionAllowed` condition agrees with `disruptionsAllowed`.
pub fn disruption_allowed_condition_up_to_date(pdb: &Value) -> bool {
    let status = &pdb["status"];
    let Some(condition) = status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == DISRUPTION_ALLOWED))
    else {
        return false;
    };
    let observed = status["observedGeneration"].as_i64().unwrap_or(0);
    if observed != pdb["metadata"]["generation"].as_i64().unwrap_or(0) {
        return false;
    }
    let (want_status, want_reason) = match status["disruptionsAllowed"].as_i64().unwrap_or(0) > 0 {
        true => ("True", "SufficientPods"),
        false => ("False", "InsufficientPods"),
    };
    condition["status"] == want_status && condition["reason"] == want_reason
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condition_follows_disruptions_allowed_and_keeps_its_transition_time() {
        let mut status = json!({"disruptionsAllowed": 1, "observedGeneration": 2});
        update_disruption_allowed_condition(&mut status, "2025-01-01T00:00:00Z");
        assert_eq!(
            status["conditions"],
            json!([{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods",
                    "message": "", "observedGeneration": 2,
                    "lastTransitionTime": "2025-01-01T00:00:00Z"}])
        );
        // The same status later: the transition time stays.
        update_disruption_allowed_condition(&mut status, "2025-01-01T00:05:00Z");
        assert_eq!(status["conditions"][0]["lastTransitionTime"], "2025-01-01T00:00:00Z");
        status["disruptionsAllowed"] = json!(0);
        update_disruption_allowed_condition(&mut status, "2025-01-01T00:10:00Z");
        let c = &status["conditions"][0];
        assert_eq!(
            (c["status"].as_str(), c["reason"].as_str()),
            (Some("False"), Some("InsufficientPods"))
        );
        assert_eq!(c["lastTransitionTime"], "2025-01-01T00:10:00Z");
        assert_eq!(status["conditions"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn conditions_are_up_to_date_only_for_the_current_generation() {
        let mut pdb = json!({"metadata": {"generation": 3},
            "status": {"disruptionsAllowed": 0, "observedGeneration": 3}});
        assert!(!disruption_allowed_condition_up_to_date(&pdb), "no condition yet");
        update_disruption_allowed_condition(&mut pdb["status"], "2025-01-01T00:00:00Z");
        assert!(disruption_allowed_condition_up_to_date(&pdb));
        pdb["status"]["disruptionsAllowed"] = json!(2);
        assert!(!disruption_allowed_condition_up_to_date(&pdb), "the condition disagrees");
        update_disruption_allowed_condition(&mut pdb["status"], "2025-01-01T00:00:00Z");
        pdb["metadata"]["generation"] = json!(4);
        assert!(!disruption_allowed_condition_up_to_date(&pdb), "an old generation");
    }
}
