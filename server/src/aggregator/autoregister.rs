//! Local APIServices for this server's own group/versions, as kube-apiserver's
//! autoregistration does at start: `v1.` for the core group, `v1.apps`, `v2.autoscaling`, ...,
//! each with `spec.service` unset (so `Local`, always available), upstream's
//! `groupPriorityMinimum` and `versionPriority`, and the label
//! `kube-aggregator.kubernetes.io/automanaged: onstart`. A group/version without a known
//! priority gets none, as upstream skips it. One that exists is left alone unless it is still
//! managed here (the label, no service) and its priorities changed; one still managed here
//! that this server no longer serves is deleted.
//!
//! Custom resource definitions get theirs the way upstream's `crd-autoregister` controller
//! makes them ([`definitions_desired`], [`sync`]): `<version>.<group>` for each served version
//! of a group that is not built in, Local, `groupPriorityMinimum` 1000 and `versionPriority`
//! 100, labelled `kube-aggregator.kubernetes.io/automanaged: "true"`, kept in step with the
//! definitions (made, put back, deleted when no definition serves the group/version any more).
//! An APIService of that name made by someone else (no label) is left alone.

use rkube_apis::resources::Resources;
use serde_json::{json, Value};

use crate::registry::{DeleteOptions, Filter, Registry, WriteOptions};

/// The label that marks an APIService as this server's.
pub const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

/// The label's value on the APIServices kept in step with the definitions.
pub const SYNCED: &str = "true";

/// A group, its priority, and its versions' priorities.
type GroupPriority = (&'static str, i64, &'static [(&'static str, i64)]);

/// Upstream's priorities (kube-apiserver v1.33) of the group/versions served here by
/// default.
const PRIORITIES: &[GroupPriority] = &[
    ("", 18000, &[("v1", 1)]),
    ("apps", 17800, &[("v1", 15)]),
    ("events.k8s.io", 17750, &[("v1", 15)]),
    ("authentication.k8s.io", 17700, &[("v1", 15)]),
    ("authorization.k8s.io", 17600, &[("v1", 15)]),
    ("autoscaling", 17500, &[("v1", 15), ("v2", 30)]),
    ("batch", 17400, &[("v1", 15)]),
    ("certificates.k8s.io", 17300, &[("v1", 15)]),
    ("networking.k8s.io", 17200, &[("v1", 15)]),
    ("policy", 17100, &[("v1", 15)]),
    ("rbac.authorization.k8s.io", 17000, &[("v1", 15)]),
    ("storage.k8s.io", 16800, &[("v1", 15)]),
    ("apiextensions.k8s.io", 16700, &[("v1", 15)]),
    ("admissionregistration.k8s.io", 16700, &[("v1", 15)]),
    ("scheduling.k8s.io", 16600, &[("v1", 15)]),
    ("coordination.k8s.io", 16500, &[("v1", 15)]),
    ("node.k8s.io", 16300, &[("v1", 15)]),
    ("discovery.k8s.io", 16200, &[("v1", 15)]),
    ("flowcontrol.apiserver.k8s.io", 16100, &[("v1", 21)]),
];

/// The priorities of a group/version, if upstream has them.
pub fn priority(group: &str, version: &str) -> Option<(i64, i64)> {
    let (_, group_priority, versions) = PRIORITIES.iter().find(|(g, _, _)| *g == group)?;
    let (_, version_priority) = versions.iter().find(|(v, _)| *v == version)?;
    Some((*group_priority, *version_priority))
}

/// The APIServices for the built-in group/versions `resources` serves.
pub fn desired(resources: &Resources) -> Vec<Value> {
    let mut out = Vec::new();
    for (group, versions) in resources.groups() {
        for version in versions {
            let Some((group_priority, version_priority)) = priority(group, version) else {
                continue;
            };
            out.push(local(group, version, (group_priority, version_priority), "onstart"));
        }
    }
    out
}

/// A Local APIService (no `spec.service`) for `group`/`version`, labelled `managed`.
fn local(
    group: &str,
    version: &str,
    (group_priority, version_priority): (i64, i64),
    managed: &str,
) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": format!("{version}.{group}"), "labels": {AUTOMANAGED: managed}},
        "spec": {"group": group, "version": version,
                 "groupPriorityMinimum": group_priority,
                 "versionPriority": version_priority},
    })
}

/// The Local APIServices the definitions `crds` want: one per served version, in a group
/// this server does not build in, whoever else serves it (upstream's CRD registration).
pub fn definitions_desired(crds: &[Value]) -> Vec<Value> {
    let builtin = Resources::builtin().groups();
    let mut out: Vec<Value> = Vec::new();
    for crd in crds {
        let Some(group) = crd["spec"]["group"].as_str() else { continue };
        if builtin.iter().any(|(g, _)| *g == group) {
            continue;
        }
        let versions = crd["spec"]["versions"].as_array().map(Vec::as_slice).unwrap_or_default();
        for version in versions.iter().filter(|v| v["served"] == true) {
            let Some(version) = version["name"].as_str() else { continue };
            let want = local(group, version, (1000, 100), SYNCED);
            if !out.iter().any(|o| o["metadata"]["name"] == want["metadata"]["name"]) {
                out.push(want);
            }
        }
    }
    out
}

/// Brings the APIServices labelled [`SYNCED`] in line with `wanted`: the missing ones made,
/// changed ones put back, the ones no longer wanted deleted; an APIService of a wanted name
/// that is not labelled so belongs to someone else and is left alone. Reads the watch cache
/// and writes only what differs; failures are logged and left for the next pass.
pub async fn sync(registry: &Registry, wanted: &[Value]) {
    let info =
        Resources::builtin().get("apiregistration.k8s.io", "v1", "apiservices").expect("built in");
    let options =
        WriteOptions { field_manager: Some("kube-apiserver".to_string()), ..Default::default() };
    let cache = match registry.cache(info) {
        Ok(cache) => cache,
        Err(e) => return tracing::warn!(error = %e.message, "APIServices not synced"),
    };
    let everything = Filter::everything();
    let existing: Vec<Value> =
        cache.list(&info.key_prefix(), &everything).0.iter().map(|c| c.value()).collect();
    let synced = |o: &Value| o["metadata"]["labels"][AUTOMANAGED] == SYNCED;
    for old in existing.iter().filter(|o| synced(o)) {
        let name = old["metadata"]["name"].as_str().unwrap_or("");
        if wanted.iter().any(|w| w["metadata"]["name"] == name) {
            continue;
        }
        match registry.delete(info, None, name, &DeleteOptions::default()).await {
            Ok(_) => tracing::info!(apiservice = name, "deleted: no definition serves it"),
            Err(e) if e.reason == "NotFound" => {}
            Err(e) => tracing::warn!(apiservice = name, error = %e.message, "cannot delete"),
        }
    }
    for want in wanted {
        let name = want["metadata"]["name"].as_str().unwrap_or("").to_string();
        let current = existing.iter().find(|o| o["metadata"]["name"] == name.as_str());
        let result = match current {
            None => match registry.create(info, None, want.clone(), &options).await {
                Err(e) if e.reason == "AlreadyExists" => Ok(()),
                other => other.map(drop),
            },
            Some(current) if !synced(current) || current["spec"] == want["spec"] => Ok(()),
            Some(_) => {
                let update = |old: &Value| {
                    let mut new = old.clone();
                    new["spec"] = want["spec"].clone();
                    Ok(new)
                };
                registry.modify(info, None, &name, None, &options, None, update).await.map(drop)
            }
        };
        if let Err(e) = result {
            tracing::warn!(apiservice = name, error = %e.message, "cannot sync");
        }
    }
}

/// Creates (or brings up to date) the Local APIServices of this server's built-in groups.
pub async fn register(registry: &Registry) -> Result<(), String> {
    let info =
        Resources::builtin().get("apiregistration.k8s.io", "v1", "apiservices").expect("built in");
    let options =
        WriteOptions { field_manager: Some("kube-apiserver".to_string()), ..Default::default() };
    let wanted = desired(Resources::builtin());
    // Made by an earlier start for a group/version no longer served here.
    let everything = Filter::everything();
    let cache = registry.cache(info).map_err(|e| e.message)?;
    for existing in cache.list(&info.key_prefix(), &everything).0 {
        let existing = existing.value();
        let name = existing["metadata"]["name"].as_str().unwrap_or("");
        let managed = existing["metadata"]["labels"][AUTOMANAGED] == "onstart"
            && !existing["spec"]["service"].is_object();
        if managed && !wanted.iter().any(|w| w["metadata"]["name"] == name) {
            match registry.delete(info, None, name, &DeleteOptions::default()).await {
                Ok(_) => tracing::info!(apiservice = name, "deleted: no longer served"),
                Err(e) => tracing::warn!(apiservice = name, error = %e.message, "cannot delete"),
            }
        }
    }
    for want in wanted {
        let name = want["metadata"]["name"].as_str().unwrap_or("").to_string();
        match registry.create(info, None, want.clone(), &options).await {
            Ok(_) => continue,
            Err(e) if e.reason == "AlreadyExists" => {}
            Err(e) => return Err(format!("APIService {name}: {}", e.message)),
        }
        let Ok(current) = registry.get(info, None, &name).await else { continue };
        let managed = current["metadata"]["labels"][AUTOMANAGED].is_string()
            && !current["spec"]["service"].is_object();
        let same = ["groupPriorityMinimum", "versionPriority"]
            .iter()
            .all(|f| current["spec"][f] == want["spec"][f]);
        if !managed || same {
            continue;
        }
        let update = |old: &Value| {
            let mut new = old.clone();
            for f in ["groupPriorityMinimum", "versionPriority"] {
                new["spec"][f] = want["spec"][f].clone();
            }
            Ok(new)
        };
        if let Err(e) = registry.modify(info, None, &name, None, &options, None, update).await {
            return Err(format!("APIService {name}: {}", e.message));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_group_has_its_local_api_service() {
        let all = desired(Resources::builtin());
        let names: Vec<&str> =
            all.iter().map(|a| a["metadata"]["name"].as_str().unwrap()).collect();
        for want in ["v1.", "v1.apps", "v2.autoscaling", "v1.rbac.authorization.k8s.io"] {
            assert!(names.contains(&want), "{want} in {names:?}");
        }
        let core = all.iter().find(|a| a["metadata"]["name"] == "v1.").unwrap();
        assert_eq!(core["spec"]["groupPriorityMinimum"], 18000);
        assert!(core["spec"].get("service").is_none());
        // Every one is made at every start: the system test's server would not start if one
        // failed validation.
    }

    #[test]
    fn definitions_want_one_local_api_service_per_served_version_of_their_own_groups() {
        let crd =
            |group: &str, versions: Value| json!({"spec": {"group": group, "versions": versions}});
        let crds = [
            crd(
                "stable.example.com",
                json!([{"name": "v1", "served": true},
                                              {"name": "v2", "served": false}]),
            ),
            // Another kind in the same group/version: still one APIService.
            crd("stable.example.com", json!([{"name": "v1", "served": true}])),
            // A built-in group is served here whatever the definition says.
            crd("apps", json!([{"name": "v9", "served": true}])),
        ];
        let wanted = definitions_desired(&crds);
        assert_eq!(wanted.len(), 1, "{wanted:?}");
        assert_eq!(wanted[0]["metadata"]["name"], "v1.stable.example.com");
        assert_eq!(wanted[0]["metadata"]["labels"][AUTOMANAGED], "true");
        assert_eq!(wanted[0]["spec"]["groupPriorityMinimum"], 1000);
        assert_eq!(wanted[0]["spec"]["versionPriority"], 100);
        assert!(wanted[0]["spec"].get("service").is_none());
    }
}
