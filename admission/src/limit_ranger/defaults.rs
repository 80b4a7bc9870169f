//! The mutating half of LimitRanger: a new pod's containers and init containers get the
//! default requests and limits of the namespace's LimitRanges where they set none, and the
//! pod says so in its `kubernetes.io/limit-ranger` annotation.

use serde_json::{Map, Value};

use super::resources::{LimitRange, ResourceList};

/// The annotation that says what LimitRanger set.
pub const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// Applies `limit_range`'s Container defaults to `pod` (upstream's `PodMutateLimitFunc`).
/// The annotation lists, per container, the resources whose request and whose limit were
/// set; a LimitRange that sets nothing leaves it as it was.
pub fn apply(pod: &mut Value, limit_range: &LimitRange) {
    let (requests, limits) = limit_range.container_defaults();
    if requests.is_empty() && limits.is_empty() {
        return;
    }
    let mut notes = Vec::new();
    for (field, what) in [("containers", "container"), ("initContainers", "init container")] {
        let Some(list) = pod.get_mut("spec").and_then(|s| s.get_mut(field)) else { continue };
        for container in list.as_array_mut().into_iter().flatten().filter(|c| c.is_object()) {
            let name = container["name"].as_str().unwrap_or("").to_string();
            let set_requests = fill(container, "requests", &requests);
            let set_limits = fill(container, "limits", &limits);
            if !set_requests.is_empty() {
                notes.push(format!("{} request for {what} {name}", set_requests.join(", ")));
            }
            if !set_limits.is_empty() {
                notes.push(format!("{} limit for {what} {name}", set_limits.join(", ")));
            }
        }
    }
    if notes.is_empty() {
        return;
    }
    let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    let annotations = meta.entry("annotations").or_insert_with(|| Value::Object(Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    annotations[ANNOTATION] =
        Value::String(format!("LimitRanger plugin set: {}", notes.join("; ")));
}

/// Gives the container's `resources.<side>` each default it lacks; the names set, sorted.
/// The list is left in Go's order (by name), as upstream would write it.
fn fill(container: &mut Value, side: &str, defaults: &ResourceList) -> Vec<String> {
    let have = container.get("resources").and_then(|r| r.get(side)).and_then(Value::as_object);
    let missing: Vec<&String> =
        defaults.keys().filter(|k| !have.is_some_and(|h| h.contains_key(*k))).collect();
    if missing.is_empty() {
        return Vec::new();
    }
    if !container["resources"].is_object() {
        container["resources"] = Value::Object(Map::new());
    }
    let resources = &mut container["resources"];
    let mut list: Vec<(String, Value)> = resources
        .get_mut(side)
        .and_then(Value::as_object_mut)
        .map(std::mem::take)
        .unwrap_or_default()
        .into_iter()
        .collect();
    list.extend(missing.iter().map(|k| ((*k).clone(), Value::String(defaults[*k].canonical()))));
    list.sort_by(|a, b| a.0.cmp(&b.0));
    resources[side] = Value::Object(list.into_iter().collect());
    missing.into_iter().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn defaults() -> LimitRange {
        LimitRange::read(&json!({"spec": {"limits": [{"type": "Container",
            "default": {"cpu": "500m", "memory": "512Mi"},
            "defaultRequest": {"memory": "256Mi", "cpu": "100m"}}]}}))
    }

    #[test]
    fn containers_get_the_defaults_they_lack_and_the_pod_says_so() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {
            "initContainers": [{"name": "init", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}}],
            "containers": [{"name": "app"}, {"name": "sized", "resources": {
                "requests": {"cpu": "200m", "memory": "300Mi"}, "limits": {"memory": "1Gi", "cpu": "1"}}}],
        }});
        apply(&mut pod, &defaults());
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "500m", "memory": "512Mi"},
                   "requests": {"cpu": "100m", "memory": "256Mi"}})
        );
        // What a container sets is kept (and its order with it).
        assert_eq!(
            pod["spec"]["containers"][1]["resources"],
            json!({"requests": {"cpu": "200m", "memory": "300Mi"}, "limits": {"memory": "1Gi", "cpu": "1"}})
        );
        assert_eq!(
            pod["spec"]["initContainers"][0]["resources"],
            json!({"limits": {"cpu": "1", "memory": "512Mi"}, "requests": {"cpu": "1", "memory": "256Mi"}})
        );
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; memory request for init container init; memory limit for init container init"
        );
    }

    #[test]
    fn nothing_set_means_no_annotation() {
        let mut pod = json!({"metadata": {"name": "p", "annotations": {"a": "b"}}, "spec": {
            "containers": [{"name": "c", "resources": {
                "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]}});
        let before = pod.clone();
        apply(&mut pod, &defaults());
        assert_eq!(pod, before);
        let no_defaults = LimitRange::read(
            &json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}),
        );
        let mut bare = json!({"metadata": {}, "spec": {"containers": [{"name": "c"}]}});
        apply(&mut bare, &no_defaults);
        assert_eq!(bare, json!({"metadata": {}, "spec": {"containers": [{"name": "c"}]}}));
    }
}
