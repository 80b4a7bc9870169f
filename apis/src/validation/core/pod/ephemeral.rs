//! Ephemeral containers (`kubectl debug`): the checks of `spec.ephemeralContainers` in a pod
//! spec (upstream's validateEphemeralContainers) and what a write to the
//! `pods/ephemeralcontainers` subresource may change (ValidatePodEphemeralContainersUpdate):
//! containers are only added, never changed or removed, and never to a static pod's mirror.

use super::*;

/// What an ephemeral container is refused for having.
const NOT_FOR_EPHEMERAL: &str = "cannot be set for an Ephemeral Container";

/// The fields of upstream's EphemeralContainerCommon that an ephemeral container may not
/// set, in the struct's order (the order of the errors): what would make the workload rely
/// on it (ports, probes, hooks, resources, restarts).
const FORBIDDEN_FIELDS: [&str; 8] = [
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
];

/// The annotation that marks a static pod's mirror.
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// The ephemeral containers of a pod spec at `path`: the common container checks, names
/// unique across every kind of container (`names` holds the regular and init ones), a
/// `targetContainerName` that names a regular or init container, none of the forbidden
/// fields, no sub-path mounts.
pub(super) fn ephemeral_containers(
    spec: &Value,
    path: &str,
    ctx: &Ctx,
    names: &HashSet<&str>,
    errors: &mut Vec<FieldError>,
) {
    let list = spec["ephemeralContainers"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut all: HashSet<&str> = names.clone();
    for (i, ec) in list.iter().enumerate() {
        let at = format!("{path}.ephemeralContainers[{i}]");
        container_common(ec, &at, ctx, errors);
        let image = str_of(&ec["image"]);
        if image.trim() != image {
            errors.push(FieldError::invalid(
                format!("{at}.image"),
                &ec["image"],
                "must not have leading or trailing whitespace",
            ));
        }
        let name = str_of(&ec["name"]);
        if !all.insert(name) {
            errors.push(FieldError::duplicate(format!("{at}.name"), &ec["name"]));
        }
        let target = str_of(&ec["targetContainerName"]);
        if !target.is_empty() && !names.contains(target) {
            errors.push(FieldError::not_found(
                format!("{at}.targetContainerName"),
                &ec["targetContainerName"],
            ));
        }
        for field in FORBIDDEN_FIELDS {
            if is_set(field, &ec[field]) {
                errors.push(FieldError::forbidden(format!("{at}.{field}"), NOT_FOR_EPHEMERAL));
            }
        }
        for (j, mount) in ec["volumeMounts"].as_array().into_iter().flatten().enumerate() {
            for field in ["subPath", "subPathExpr"] {
                if !str_of(&mount[field]).is_empty() {
                    errors.push(FieldError::forbidden(
                        format!("{at}.volumeMounts[{j}].{field}"),
                        NOT_FOR_EPHEMERAL,
                    ));
                }
            }
        }
    }
}

/// Whether a field differs from its Go zero value, as upstream's allow list compares it:
/// lists, maps and pointers are set once present (even empty); `resources` is a struct
/// value, set when one of its members is.
fn is_set(field: &str, value: &Value) -> bool {
    match (field, value) {
        (_, Value::Null) => false,
        ("resources", Value::Object(members)) => members.values().any(|v| !v.is_null()),
        _ => true,
    }
}

/// The errors of a write to `pods/ephemeralcontainers` beyond the metadata's: the new pod's
/// spec (with its ephemeral containers) checked as a pod's, then no existing ephemeral
/// container removed or changed. A mirror pod gets one error only.
pub fn ephemeral_containers_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errors = pod_spec(&new["spec"], "spec");
    if old["metadata"]["annotations"].get(MIRROR_ANNOTATION).is_some() {
        // Upstream's error is at `field.NewPath("")`, which Go prints as `[]`.
        return vec![FieldError::forbidden(
            "[]",
            "static pods do not support ephemeral containers",
        )];
    }
    let list = |pod: &Value| -> Vec<Value> {
        pod["spec"]["ephemeralContainers"].as_array().cloned().unwrap_or_default()
    };
    let now = list(new);
    for before in list(old) {
        let name = str_of(&before["name"]);
        match now.iter().find(|c| str_of(&c["name"]) == name) {
            None => errors.push(FieldError::forbidden(
                "spec.ephemeralContainers",
                &format!("existing ephemeral containers {name:?} may not be removed\n"),
            )),
            // Upstream appends a diff that go-cmp deliberately words differently from run
            // to run; rkube gives the first line only, as for other refused pod updates.
            Some(c) if without_nulls(c) != without_nulls(&before) => {
                errors.push(FieldError::forbidden(
                    "spec.ephemeralContainers",
                    &format!("existing ephemeral containers {name:?} may not be changed"),
                ))
            }
            Some(_) => {}
        }
    }
    errors
}

/// A value with its null members dropped, at every depth: a null in JSON is an unset field.
fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(ephemeral: Value) -> Value {
        json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "containers": [{"name": "app", "image": "busybox"}],
                "initContainers": [{"name": "setup", "image": "busybox"}],
                "ephemeralContainers": ephemeral,
            },
        })
    }

    fn lines(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    #[test]
    fn a_debug_container_as_kubectl_sends_it_is_valid() {
        let debugger = json!([{
            "name": "debugger-x", "image": "busybox:1.36", "targetContainerName": "app",
            "stdin": true, "tty": true, "resources": {},
            "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent",
        }]);
        assert_eq!(lines(&pod_spec(&pod(debugger)["spec"], "spec")), Vec::<String>::new());
    }

    #[test]
    fn ephemeral_containers_are_checked_with_upstreams_messages() {
        let bad = json!([
            {"name": "app", "image": "busybox"},
            {"name": "d1", "image": "busybox", "targetContainerName": "nope",
             "ports": [], "resources": {"limits": {"cpu": "1"}}, "restartPolicy": "Always",
             "readinessProbe": {"exec": {"command": ["true"]}}, "lifecycle": {}},
            {"name": "d1", "image": " busybox", "volumeMounts": [
                {"name": "v", "mountPath": "/v", "subPath": "a", "subPathExpr": "b"}]},
            {"name": "d2", "image": "busybox", "targetContainerName": "d1"},
        ]);
        let mut p = pod(bad);
        p["spec"]["volumes"] = json!([{"name": "v", "emptyDir": {}}]);
        let found = lines(&pod_spec(&p["spec"], "spec"));
        let expected = [
            "spec.ephemeralContainers[0].name: Duplicate value: \"app\"",
            "spec.ephemeralContainers[1].targetContainerName: Not found: \"nope\"",
            "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container",
            "spec.ephemeralContainers[1].resources: Forbidden: cannot be set for an Ephemeral Container",
            "spec.ephemeralContainers[1].restartPolicy: Forbidden: cannot be set for an Ephemeral Container",
            "spec.ephemeralContainers[1].readinessProbe: Forbidden: cannot be set for an Ephemeral Container",
            "spec.ephemeralContainers[1].lifecycle: Forbidden: cannot be set for an Ephemeral Container",
            "spec.ephemeralContainers[2].image: Invalid value: \" busybox\": must not have leading or trailing whitespace",
            "spec.ephemeralContainers[2].name: Duplicate value: \"d1\"",
            "spec.ephemeralContainers[2].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container",
            "spec.ephemeralContainers[2].volumeMounts[0].subPathExpr: Forbidden: cannot be set for an Ephemeral Container",
            // An ephemeral container is no target.
            "spec.ephemeralContainers[3].targetContainerName: Not found: \"d1\"",
        ];
        for line in expected {
            assert!(found.contains(&line.to_string()), "missing {line:?} in {found:#?}");
        }
    }

    #[test]
    fn existing_ephemeral_containers_stay_as_they_are() {
        let d = json!({"name": "d", "image": "busybox"});
        let old = pod(json!([d]));
        // Adding one is fine.
        let added = pod(json!([d, {"name": "e", "image": "busybox"}]));
        assert!(ephemeral_containers_update(&added, &old).is_empty());
        // Patches may reorder the list.
        let reordered = pod(json!([{"name": "e", "image": "busybox"}, d]));
        assert!(ephemeral_containers_update(&reordered, &old).is_empty());
        assert_eq!(
            lines(&ephemeral_containers_update(&pod(json!([])), &old)),
            ["spec.ephemeralContainers: Forbidden: existing ephemeral containers \"d\" may not be removed\n"]
        );
        let changed = pod(json!([{"name": "d", "image": "busybox:2"}]));
        assert_eq!(
            lines(&ephemeral_containers_update(&changed, &old)),
            ["spec.ephemeralContainers: Forbidden: existing ephemeral containers \"d\" may not be changed"]
        );
        let mut mirror = old.clone();
        mirror["metadata"]["annotations"] = json!({MIRROR_ANNOTATION: "abc"});
        assert_eq!(
            lines(&ephemeral_containers_update(&added, &mirror)),
            ["[]: Forbidden: static pods do not support ephemeral containers"]
        );
    }
}
