//! Discovery: `/api`, `/apis`, `/apis/<group>`, `/api/v1` and `/apis/<group>/<version>`, in
//! the legacy form and, when the client asks for it, the aggregated form
//! (`apidiscovery.k8s.io/v2`, one request for everything). The stored resources come from
//! the registry; `metrics.k8s.io` ([`crate::metrics_api`]) is added to them.

use rkube_apis::resources::{ResourceInfo, Resources};
use serde_json::{json, Value};

use crate::metrics_api;

/// The content type of aggregated discovery responses.
pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
pub const AGGREGATED_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// Which aggregated discovery version the `Accept` header asks for, if any.
pub fn wants_aggregated(accept: &str) -> Option<&'static str> {
    for part in accept.split(',') {
        let p = part.replace(' ', "");
        if p.contains("as=APIGroupDiscoveryList") && p.contains("g=apidiscovery.k8s.io") {
            if p.contains("v=v2beta1") {
                return Some(AGGREGATED_V2BETA1);
            }
            if p.contains("v=v2") {
                return Some(AGGREGATED_V2);
            }
        }
    }
    None
}

pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_json(group: &str, versions: &[&str]) -> Value {
    let gv = |v: &str| json!({"groupVersion": format!("{group}/{v}"), "version": v});
    json!({
        "name": group,
        "versions": versions.iter().map(|v| gv(v)).collect::<Vec<_>>(),
        "preferredVersion": gv(versions[0]),
    })
}

pub fn group_list(resources: &Resources) -> Value {
    let mut groups: Vec<Value> = resources
        .groups()
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, versions)| group_json(g, &versions))
        .collect();
    // Served but not stored (no registry entry), as an aggregated API would be.
    groups.push(metrics_api::api_group());
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn group(resources: &Resources, name: &str) -> Option<Value> {
    let mut out = if name == metrics_api::GROUP {
        metrics_api::api_group()
    } else {
        let (g, versions) =
            resources.groups().into_iter().find(|(g, _)| *g == name && !g.is_empty())?;
        group_json(g, &versions)
    };
    out["kind"] = json!("APIGroup");
    out["apiVersion"] = json!("v1");
    Some(out)
}

/// The kind (and its group and version) a subresource answers with, and its verbs.
fn subresource_kind(
    info: &ResourceInfo,
    sub: &str,
) -> (&'static str, &'static str, String, &'static [&'static str]) {
    const GPU: &[&str] = &["get", "patch", "update"];
    match sub {
        "status" | "ephemeralcontainers" | "resize" => ("", "", info.kind.to_string(), GPU),
        "approval" => ("", "", info.kind.to_string(), GPU),
        "scale" => ("autoscaling", "v1", "Scale".into(), GPU),
        "binding" => ("", "", "Binding".into(), &["create"]),
        "eviction" => ("policy", "v1", "Eviction".into(), &["create"]),
        "log" => ("", "", "Pod".into(), &["get"]),
        "exec" => ("", "", "PodExecOptions".into(), &["create", "get"]),
        "attach" => ("", "", "PodAttachOptions".into(), &["create", "get"]),
        "portforward" => ("", "", "PodPortForwardOptions".into(), &["create", "get"]),
        "proxy" => (
            "",
            "",
            format!("{}ProxyOptions", info.kind),
            &["create", "delete", "get", "patch", "update"],
        ),
        "token" => ("authentication.k8s.io", "v1", "TokenRequest".into(), &["create"]),
        "finalize" => ("", "", info.kind.to_string(), &["update"]),
        _ => ("", "", info.kind.to_string(), GPU),
    }
}

/// `/api/v1` or `/apis/<group>/<version>`: the legacy APIResourceList.
pub fn resource_list(resources: &Resources, group: &str, version: &str) -> Option<Value> {
    if group == metrics_api::GROUP {
        return (version == metrics_api::VERSION).then(metrics_api::resource_list);
    }
    let mut list = Vec::new();
    for r in resources.in_group_version(group, version) {
        let mut entry = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": r.verbs,
        });
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            entry["categories"] = json!(r.categories);
        }
        list.push(entry);
        for sub in r.subresources {
            let (g, v, kind, verbs) = subresource_kind(r, sub);
            let mut entry = json!({
                "name": format!("{}/{sub}", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind,
                "verbs": verbs,
            });
            if !g.is_empty() || !v.is_empty() {
                entry["group"] = json!(g);
                entry["version"] = json!(v);
            }
            list.push(entry);
        }
    }
    if list.is_empty() {
        return None;
    }
    let group_version =
        if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": list}),
    )
}

/// Aggregated discovery of the core group (`core` = true, for `/api`) or of every other
/// group (for `/apis`).
pub fn aggregated(resources: &Resources, core: bool, api_version: &str) -> Value {
    let mut items = Vec::new();
    for (group, versions) in resources.groups() {
        if group.is_empty() != core {
            continue;
        }
        let versions: Vec<Value> = versions
            .iter()
            .map(|v| {
                let list: Vec<Value> =
                    resources.in_group_version(group, v).map(|r| aggregated_resource(r)).collect();
                json!({"version": v, "resources": list, "freshness": "Current"})
            })
            .collect();
        let mut metadata = json!({"creationTimestamp": null});
        if !group.is_empty() {
            metadata["name"] = json!(group);
        }
        items.push(json!({"metadata": metadata, "versions": versions}));
    }
    if !core {
        items.push(metrics_api::aggregated_group());
    }
    let api_version = if api_version == AGGREGATED_V2BETA1 {
        "apidiscovery.k8s.io/v2beta1"
    } else {
        "apidiscovery.k8s.io/v2"
    };
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items})
}

fn aggregated_resource(r: &ResourceInfo) -> Value {
    let mut entry = json!({
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": r.verbs,
    });
    if !r.short_names.is_empty() {
        entry["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        entry["categories"] = json!(r.categories);
    }
    if !r.subresources.is_empty() {
        let subs: Vec<Value> = r
            .subresources
            .iter()
            .map(|sub| {
                let (g, v, kind, verbs) = subresource_kind(r, sub);
                let (g, v) = if g.is_empty() && v.is_empty() { (r.group, r.version) } else { (g, v) };
                json!({"subresource": sub, "responseKind": {"group": g, "version": v, "kind": kind}, "verbs": verbs})
            })
            .collect();
        entry["subresources"] = Value::Array(subs);
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_accept_header_selects_aggregated_v2() {
        let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(wants_aggregated(accept), Some(AGGREGATED_V2));
        assert_eq!(wants_aggregated("application/json"), None);
    }

    #[test]
    fn core_resource_list_has_pods_and_subresources() {
        let list = resource_list(Resources::builtin(), "", "v1").unwrap();
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"pods")
                && names.contains(&"pods/status")
                && names.contains(&"pods/log")
        );
        let apps = aggregated(Resources::builtin(), false, AGGREGATED_V2);
        assert!(apps["items"].as_array().unwrap().iter().any(|g| g["metadata"]["name"] == "apps"));
        let metrics = apps["items"].as_array().unwrap().last().unwrap();
        assert_eq!(metrics["metadata"]["name"], "metrics.k8s.io");
        assert!(group_list(Resources::builtin())["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "metrics.k8s.io"));
        assert_eq!(group(Resources::builtin(), "metrics.k8s.io").unwrap()["kind"], "APIGroup");
        assert!(resource_list(Resources::builtin(), "metrics.k8s.io", "v1beta1").is_some());
        assert!(resource_list(Resources::builtin(), "metrics.k8s.io", "v1").is_none());
    }
}
