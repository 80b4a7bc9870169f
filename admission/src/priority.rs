//! `Priority`: a new pod gets `spec.priority` (and `spec.preemptionPolicy`) from its
//! PriorityClass, or from the cluster's global default class, or 0; a class that does not
//! exist is refused. The built-in classes every cluster has are [`SYSTEM_CLASSES`].

use serde_json::{json, Value};

/// The classes kube-apiserver creates: name and value.
pub const SYSTEM_CLASSES: &[(&str, i64)] =
    &[("system-node-critical", 2_000_001_000), ("system-cluster-critical", 2_000_000_000)];

/// Why a pod was refused.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused(pub String);

/// Sets the pod's priority from `classes` (every PriorityClass object). A pod that names a
/// missing class is refused with upstream's message; a pod that sets `spec.priority`
/// itself must agree with its class.
pub fn admit(pod: &mut Value, classes: &[Value]) -> Result<(), Refused> {
    let spec = &pod["spec"];
    let name = spec["priorityClassName"].as_str().filter(|n| !n.is_empty()).map(String::from);
    let class = match &name {
        Some(name) => match classes.iter().find(|c| c["metadata"]["name"] == *name) {
            Some(c) => Some(c.clone()),
            None => {
                return Err(Refused(format!(
                    "pods \"{}\" is forbidden: no PriorityClass with name {name} was found",
                    pod["metadata"]["name"]
                        .as_str()
                        .or(pod["metadata"]["generateName"].as_str())
                        .unwrap_or("")
                )))
            }
        },
        None => classes
            .iter()
            .filter(|c| c["globalDefault"] == json!(true))
            .min_by_key(|c| c["value"].as_i64().unwrap_or(0))
            .cloned(),
    };
    let (priority, policy) = match &class {
        Some(c) => (
            c["value"].as_i64().unwrap_or(0),
            c["preemptionPolicy"].as_str().unwrap_or("PreemptLowerPriority").to_string(),
        ),
        None => (0, "PreemptLowerPriority".to_string()),
    };
    if let Some(given) = spec["priority"].as_i64() {
        if given != priority {
            return Err(Refused("the integer value of priority must not be provided in pod spec; priority admission controller computed the priority from the given PriorityClass name".into()));
        }
    }
    if let (Some(class), None) = (&class, &name) {
        pod["spec"]["priorityClassName"] = class["metadata"]["name"].clone();
    }
    pod["spec"]["priority"] = json!(priority);
    pod["spec"]["preemptionPolicy"] = json!(policy);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, value: i64, default: bool) -> Value {
        json!({"metadata": {"name": name}, "value": value, "globalDefault": default})
    }

    #[test]
    fn pods_get_their_class_priority_or_the_default_or_zero() {
        let classes = vec![class("high", 1000, false), class("normal", 10, true)];
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"priorityClassName": "high"}});
        admit(&mut pod, &classes).unwrap();
        assert_eq!(
            (pod["spec"]["priority"].as_i64(), pod["spec"]["preemptionPolicy"].as_str()),
            (Some(1000), Some("PreemptLowerPriority"))
        );
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {}});
        admit(&mut pod, &classes).unwrap();
        assert_eq!(
            (pod["spec"]["priority"].as_i64(), pod["spec"]["priorityClassName"].as_str()),
            (Some(10), Some("normal"))
        );
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {}});
        admit(&mut pod, &[]).unwrap();
        assert_eq!(pod["spec"]["priority"], 0);
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"priorityClassName": "nope"}});
        assert_eq!(
            admit(&mut pod, &classes),
            Err(Refused(
                "pods \"p\" is forbidden: no PriorityClass with name nope was found".into()
            ))
        );
    }
}
