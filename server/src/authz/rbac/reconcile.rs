//! Writes the bootstrap policy ([`super::policy`]) at every start, as kube-apiserver's
//! `rbac/bootstrap-roles` post-start hook: a missing object is created; one whose
//! `rbac.authorization.kubernetes.io/autoupdate` annotation is not `"false"` gets the rules,
//! subjects, labels and annotations of the policy it lacks (what an administrator added is
//! kept, as upstream's reconciliation keeps extra permissions and subjects); a binding whose
//! `roleRef` differs (which cannot be updated) is deleted and created again.

use serde_json::Value;

use super::policy::{self, AUTOUPDATE};
use crate::registry::{DeleteOptions, Registry, WriteOptions};
use crate::status::ApiResult;

const GROUP: &str = "rbac.authorization.k8s.io";

/// Adds to `existing[key]` (an array) the items of `wanted` it lacks; true if any.
fn add_missing(existing: &mut Value, key: &str, wanted: &Value) -> bool {
    let mut changed = false;
    if !existing[key].is_array() {
        existing[key] = Value::Array(Vec::new());
    }
    for item in wanted.as_array().into_iter().flatten() {
        let list = existing[key].as_array_mut().expect("made an array");
        if !list.contains(item) {
            list.push(item.clone());
            changed = true;
        }
    }
    changed
}

/// Adds the labels and annotations of `wanted` that `existing` lacks; true if any.
fn add_metadata(existing: &mut Value, wanted: &Value) -> bool {
    let mut changed = false;
    for map in ["labels", "annotations"] {
        for (k, v) in wanted["metadata"][map].as_object().into_iter().flatten() {
            if existing["metadata"][map].get(k) != Some(v) {
                if !existing["metadata"][map].is_object() {
                    existing["metadata"][map] = Value::Object(Default::default());
                }
                existing["metadata"][map][k] = v.clone();
                changed = true;
            }
        }
    }
    changed
}

/// The object as it should be after reconciliation, or `None` when it already is (or an
/// administrator turned autoupdate off).
fn reconciled(plural: &str, existing: &Value, wanted: &Value) -> Option<Value> {
    if existing["metadata"]["annotations"][AUTOUPDATE] == "false" {
        return None;
    }
    let mut updated = existing.clone();
    let mut changed = add_metadata(&mut updated, wanted);
    match plural {
        "roles" | "clusterroles" => {
            if wanted.get("aggregationRule").is_some() {
                if updated["aggregationRule"] != wanted["aggregationRule"] {
                    updated["aggregationRule"] = wanted["aggregationRule"].clone();
                    changed = true;
                }
            } else {
                changed |= add_missing(&mut updated, "rules", &wanted["rules"]);
            }
        }
        _ => changed |= add_missing(&mut updated, "subjects", &wanted["subjects"]),
    }
    changed.then_some(updated)
}

/// Creates or brings up to date every object of the bootstrap policy.
pub async fn bootstrap_policy(registry: &Registry) -> ApiResult<()> {
    let resources = registry.resources();
    let options =
        WriteOptions { field_manager: Some("kube-apiserver".to_string()), ..Default::default() };
    let sets = [
        ("clusterroles", policy::cluster_roles()),
        ("clusterrolebindings", policy::cluster_role_bindings()),
        ("roles", policy::roles()),
        ("rolebindings", policy::role_bindings()),
    ];
    let (mut created, mut updated) = (0, 0);
    for (plural, objects) in sets {
        let info = resources.get(GROUP, "v1", plural).expect("RBAC is built in");
        for wanted in objects {
            let namespace = wanted["metadata"]["namespace"].as_str();
            let name = wanted["metadata"]["name"].as_str().unwrap_or_default();
            let existing = match registry.get(info, namespace, name).await {
                Ok(existing) => existing,
                Err(e) if e.code == http::StatusCode::NOT_FOUND => {
                    registry.create(info, namespace, wanted.clone(), &options).await?;
                    created += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            if plural.ends_with("bindings") && existing["roleRef"] != wanted["roleRef"] {
                if existing["metadata"]["annotations"][AUTOUPDATE] == "false" {
                    continue;
                }
                registry.delete(info, namespace, name, &DeleteOptions::default()).await?;
                registry.create(info, namespace, wanted.clone(), &options).await?;
                updated += 1;
                continue;
            }
            if let Some(new) = reconciled(plural, &existing, &wanted) {
                registry.update(info, namespace, name, None, new, &options).await?;
                updated += 1;
            }
        }
    }
    tracing::info!(created, updated, "bootstrap RBAC policy reconciled");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reconciling_adds_what_is_missing_and_keeps_the_rest() {
        let wanted = json!({"metadata": {"name": "r", "labels": {"a": "1"}, "annotations": {AUTOUPDATE: "true"}},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]});
        let edited = json!({"metadata": {"name": "r", "labels": {"a": "1", "mine": "x"}, "annotations": {AUTOUPDATE: "true"}},
            "rules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["secrets"]}]});
        let new = reconciled("clusterroles", &edited, &wanted).unwrap();
        assert_eq!(new["rules"].as_array().unwrap().len(), 2);
        assert_eq!(new["metadata"]["labels"]["mine"], "x");
        assert_eq!(reconciled("clusterroles", &new, &wanted), None);
        let mut frozen = edited.clone();
        frozen["metadata"]["annotations"][AUTOUPDATE] = json!("false");
        assert_eq!(reconciled("clusterroles", &frozen, &wanted), None);
        let binding =
            json!({"metadata": {"name": "b"}, "subjects": [{"kind": "Group", "name": "g"}]});
        let bare = json!({"metadata": {"name": "b"}, "subjects": [{"kind": "User", "name": "u"}]});
        let new = reconciled("clusterrolebindings", &bare, &binding).unwrap();
        assert_eq!(new["subjects"].as_array().unwrap().len(), 2);
    }
}
