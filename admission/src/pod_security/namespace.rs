//! A namespace's writes: its Pod Security labels must parse (on create; on update when they
//! changed), and a new, stricter enforce level is tried on the pods already there, each
//! violation a warning (upstream's dry run of the new level: at most 3000 pods, one of each
//! controller first, for at most a second; pods with the same findings counted together).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rkube_apis::go_quote;
use rkube_apis::selectors::LabelSelector;
use serde_json::Value;

use super::evaluator::evaluate;
use super::level::{Level, LevelVersion, Policy};
use super::pod::Pod;
use crate::attributes::{Attributes, Operation};
use crate::error::AdmissionError;
use crate::state::{ClusterState, Freshness, GroupResource, Object};

const PODS: GroupResource<'static> = GroupResource::new("", "pods");

/// At most this many existing pods are tried against a new enforce level.
pub const MAX_PODS: usize = 3000;
/// For at most this long.
pub const TIMEOUT: Duration = Duration::from_secs(1);

/// The labels of a namespace object.
fn labels(object: Option<&Value>) -> BTreeMap<String, String> {
    let labels = object.and_then(|o| o.pointer("/metadata/labels")).and_then(Value::as_object);
    let text = |(k, v): (&String, &Value)| Some((k.clone(), v.as_str()?.to_string()));
    labels.into_iter().flatten().filter_map(text).collect()
}

pub async fn validate(a: &Attributes<'_>, state: &dyn ClusterState) -> Result<(), AdmissionError> {
    if !a.subresource.is_empty() {
        return Ok(());
    }
    let (new, new_errors) = Policy::from_labels(&labels(a.object()));
    let invalid = |causes| AdmissionError::Invalid {
        group: a.kind.group.to_string(),
        kind: a.kind.kind.to_string(),
        name: a.name.to_string(),
        causes,
    };
    match a.operation {
        Operation::Create if !new_errors.is_empty() => Err(invalid(new_errors)),
        Operation::Update => {
            let (old, old_errors) = Policy::from_labels(&labels(a.old_object));
            // Labels that were already wrong the same way do not stop other changes.
            if !new_errors.is_empty() && (old_errors.is_empty() || new_errors != old_errors) {
                return Err(invalid(new_errors));
            }
            let (new, old) = (new.enforce, old.enforce);
            let relaxed = new.version == old.version && new.level <= old.level;
            if new == old || new.level == Level::Privileged || relaxed {
                return Ok(());
            }
            for warning in existing_pods(state, a.name, new).await {
                a.warnings.add(warning);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The warnings of trying `enforce` on the pods of `namespace`.
pub async fn existing_pods(
    state: &dyn ClusterState,
    namespace: &str,
    enforce: LevelVersion,
) -> Vec<String> {
    let deadline = Instant::now() + TIMEOUT;
    let everything = LabelSelector::everything();
    let Ok(pods) = state.list(PODS, Some(namespace), &everything, Freshness::Cached).await else {
        return vec!["failed to list pods while checking new PodSecurity enforce level".into()];
    };
    let total = pods.len();
    let pods = prioritized(pods);
    // Findings (their reasons) in the order first seen, with the lexically first pod that
    // has them and how many do.
    let mut findings: Vec<String> = Vec::new();
    let mut counts: HashMap<String, (String, usize)> = HashMap::new();
    let mut checked = pods.len().min(MAX_PODS);
    for (i, (name, pod)) in pods.iter().take(MAX_PODS).enumerate() {
        if let Ok(pod) = Pod::decode(pod) {
            let found = evaluate(enforce, &pod);
            if !found.allowed() {
                let reasons = found.reasons();
                let entry = counts.entry(reasons.clone()).or_insert_with(|| {
                    findings.push(reasons);
                    (name.clone(), 0)
                });
                if *name < entry.0 {
                    entry.0 = name.clone();
                }
                entry.1 += 1;
            }
        }
        if Instant::now() >= deadline {
            checked = i + 1;
            break;
        }
    }
    let mut warnings = Vec::new();
    if checked < total {
        warnings.push(format!(
            "new PodSecurity enforce level only checked against the first {checked} of {total} existing pods"
        ));
    }
    if !findings.is_empty() {
        warnings.push(format!(
            "existing pods in namespace {} violate the new PodSecurity enforce level {}",
            go_quote(namespace),
            go_quote(&enforce.to_string())
        ));
    }
    let mut each: Vec<String> = findings
        .into_iter()
        .map(|reasons| {
            let (first, count) = &counts[&reasons];
            match count {
                1 => format!("{first}: {reasons}"),
                2 => format!("{first} (and 1 other pod): {reasons}"),
                n => format!("{first} (and {} other pods): {reasons}", n - 1),
            }
        })
        .collect();
    each.sort();
    warnings.extend(each);
    warnings
}

/// The pods by name and object, one of each controller first (pods of one controller are
/// alike), then the other pods of controllers.
fn prioritized(pods: Vec<Arc<dyn Object>>) -> Vec<(String, Value)> {
    let mut seen = HashSet::new();
    let (mut first, mut rest) = (Vec::new(), Vec::new());
    for object in pods {
        let pod = object.value();
        let controller = pod
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|r| r["controller"] == Value::Bool(true))
            .map(|r| r["uid"].as_str().unwrap_or("").to_string());
        let entry = (object.name().to_string(), pod);
        match controller.map(|uid| seen.insert(uid)) {
            Some(false) => rest.push(entry),
            _ => first.push(entry),
        }
    }
    first.extend(rest);
    first
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_security::level::Version;
    use crate::state::Snapshot;
    use serde_json::json;

    fn pod(name: &str, owner: Option<&str>, spec: Value) -> Value {
        let mut pod = json!({"metadata": {"namespace": "ns", "name": name}, "spec": spec});
        if let Some(uid) = owner {
            pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": uid, "controller": true}]);
        }
        pod
    }

    fn restricted() -> LevelVersion {
        LevelVersion { level: Level::Restricted, version: Version::Latest }
    }

    #[tokio::test]
    async fn existing_violations_are_counted_by_finding() {
        let privileged =
            json!({"containers": [{"name": "c", "securityContext": {"privileged": true}}]});
        let plain = json!({"containers": [{"name": "c"}]});
        let compliant = json!({
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]});
        let state = Snapshot::default()
            .with("", "pods", pod("web-2", Some("u1"), plain.clone()))
            .with("", "pods", pod("web-1", Some("u1"), plain.clone()))
            .with("", "pods", pod("solo", None, plain))
            .with("", "pods", pod("priv", None, privileged))
            .with("", "pods", pod("good", None, compliant))
            .with(
                "",
                "pods",
                json!({"metadata": {"namespace": "other", "name": "x"}, "spec": {"hostPID": true}}),
            );
        let warnings = existing_pods(&state, "ns", restricted()).await;
        assert_eq!(
            warnings,
            [
                "existing pods in namespace \"ns\" violate the new PodSecurity enforce level \"restricted:latest\"",
                "priv: privileged, allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile",
                "solo (and 2 other pods): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile",
            ]
        );
        assert!(existing_pods(&state, "empty", restricted()).await.is_empty());
    }

    #[test]
    fn one_pod_of_each_controller_comes_first() {
        let objects: Vec<Arc<dyn Object>> = ["a", "b", "c", "d"]
            .iter()
            .zip([Some("u1"), Some("u1"), None, Some("u2")])
            .map(|(name, owner)| {
                Arc::new(crate::state::JsonObject::new(pod(name, owner, json!({}))))
                    as Arc<dyn Object>
            })
            .collect();
        let names: Vec<String> = prioritized(objects).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["a", "c", "d", "b"]);
    }
}
