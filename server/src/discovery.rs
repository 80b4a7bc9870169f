//! Discovery: `/api`, `/apis`, `/apis/<group>`, `/api/v1` and `/apis/<group>/<version>`, in
//! the legacy form and, when the client asks for it, the aggregated form
//! (`apidiscovery.k8s.io/v2`, one request for everything). The stored resources come from
//! the registry; `metrics.k8s.io` ([`crate::metrics_api`]) is added to them; the groups
//! APIServices hand to extension servers ([`crate::aggregator`]) are merged in from the
//! discovery documents the availability controller keeps, after this server's own groups in
//! upstream's priority order (an APIService for `metrics.k8s.io` replaces this server's own).

use rkube_apis::resources::{ResourceInfo, Resources};
use serde_json::{json, Value};

use crate::aggregator::Remote;
use crate::metrics_api;

/// What discovery describes: the resources served here and the group/versions served by
/// extension servers (in [`crate::aggregator::Aggregator::remote_versions`]'s order).
pub struct Served<'a> {
    pub resources: &'a Resources,
    pub remotes: &'a [Remote],
}

impl Served<'_> {
    /// The remote groups in order, each with its versions in order.
    fn remote_groups(&self) -> Vec<(&str, Vec<&Remote>)> {
        let mut groups: Vec<(&str, Vec<&Remote>)> = Vec::new();
        for r in self.remotes {
            match groups.iter_mut().find(|(g, _)| *g == r.group) {
                Some((_, versions)) => versions.push(r),
                None => groups.push((r.group.as_str(), vec![r])),
            }
        }
        groups
    }

    fn remote_versions(&self, group: &str) -> Vec<&str> {
        self.remotes.iter().filter(|r| r.group == group).map(|r| r.version.as_str()).collect()
    }

    /// Whether this server's own metrics API is served (no APIService replaces it).
    fn own_metrics(&self) -> bool {
        self.remote_versions(metrics_api::GROUP).is_empty()
    }

    /// A group's versions: the remote ones first (by priority), then the local ones no
    /// APIService claims.
    fn versions<'a>(&'a self, group: &'a str, local: &[&'a str]) -> Vec<&'a str> {
        let mut versions = self.remote_versions(group);
        for v in local {
            if !versions.contains(v) {
                versions.push(v);
            }
        }
        versions
    }
}

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

pub fn group_list(served: &Served<'_>) -> Value {
    let local = served.resources.groups();
    let mut groups: Vec<Value> = local
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, versions)| group_json(g, &served.versions(g, versions)))
        .collect();
    // Served but not stored (no registry entry), as an aggregated API would be.
    if served.own_metrics() {
        groups.push(metrics_api::api_group());
    }
    for (group, versions) in served.remote_groups() {
        if !local.iter().any(|(g, _)| *g == group) {
            let versions: Vec<&str> = versions.iter().map(|r| r.version.as_str()).collect();
            groups.push(group_json(group, &versions));
        }
    }
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn group(served: &Served<'_>, name: &str) -> Option<Value> {
    let local = served.resources.groups();
    let local = local.iter().find(|(g, _)| *g == name && !g.is_empty());
    let mut out = if name == metrics_api::GROUP && served.own_metrics() {
        metrics_api::api_group()
    } else {
        let versions = served.versions(name, local.map(|(_, v)| v.as_slice()).unwrap_or(&[]));
        if versions.is_empty() {
            return None;
        }
        group_json(name, &versions)
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
pub fn resource_list(served: &Served<'_>, group: &str, version: &str) -> Option<Value> {
    let resources = served.resources;
    if group == metrics_api::GROUP && served.own_metrics() {
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
pub fn aggregated(served: &Served<'_>, core: bool, api_version: &str) -> Value {
    let resources = served.resources;
    let mut items = Vec::new();
    let local = resources.groups();
    for (group, versions) in &local {
        if group.is_empty() != core {
            continue;
        }
        let remote = served.remote_versions(group);
        let mut versions: Vec<Value> = versions
            .iter()
            .filter(|v| !remote.contains(v))
            .map(|v| {
                let list: Vec<Value> =
                    resources.in_group_version(group, v).map(|r| aggregated_resource(r)).collect();
                json!({"version": v, "resources": list, "freshness": "Current"})
            })
            .collect();
        if !core {
            let remotes = served.remotes.iter().filter(|r| r.group == *group);
            let mut first: Vec<Value> = remotes.filter_map(aggregated_remote).collect();
            first.append(&mut versions);
            versions = first;
        }
        let mut metadata = json!({"creationTimestamp": null});
        if !group.is_empty() {
            metadata["name"] = json!(group);
        }
        items.push(json!({"metadata": metadata, "versions": versions}));
    }
    if !core {
        if served.own_metrics() {
            items.push(metrics_api::aggregated_group());
        }
        for (group, versions) in served.remote_groups() {
            if local.iter().any(|(g, _)| *g == group) {
                continue;
            }
            let versions: Vec<Value> = versions.into_iter().filter_map(aggregated_remote).collect();
            if !versions.is_empty() {
                items.push(json!({
                    "metadata": {"name": group, "creationTimestamp": null},
                    "versions": versions,
                }));
            }
        }
    }
    let api_version = if api_version == AGGREGATED_V2BETA1 {
        "apidiscovery.k8s.io/v2beta1"
    } else {
        "apidiscovery.k8s.io/v2"
    };
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items})
}

/// A remote version in aggregated discovery, from its APIResourceList: `Stale` while the
/// extension is unavailable; left out until one was fetched.
fn aggregated_remote(remote: &Remote) -> Option<Value> {
    let list = remote.resources.as_ref()?;
    let entries = list["resources"].as_array()?;
    let kind_of = |e: &Value| {
        json!({
            "group": e["group"].as_str().unwrap_or(&remote.group),
            "version": e["version"].as_str().unwrap_or(&remote.version),
            "kind": e["kind"],
        })
    };
    let mut resources: Vec<Value> = Vec::new();
    for e in entries {
        let Some(name) = e["name"].as_str() else { continue };
        if name.contains('/') {
            continue;
        }
        let mut entry = json!({
            "resource": name,
            "responseKind": kind_of(e),
            "scope": if e["namespaced"].as_bool() == Some(true) { "Namespaced" } else { "Cluster" },
            "singularResource": e["singularName"].as_str().unwrap_or(""),
            "verbs": e["verbs"].clone(),
        });
        for field in ["shortNames", "categories"] {
            if e[field].as_array().is_some_and(|a| !a.is_empty()) {
                entry[field] = e[field].clone();
            }
        }
        let subresources: Vec<Value> = entries
            .iter()
            .filter_map(|s| {
                let (parent, sub) = s["name"].as_str()?.split_once('/')?;
                (parent == name).then(|| {
                    json!({"subresource": sub, "responseKind": kind_of(s), "verbs": s["verbs"].clone()})
                })
            })
            .collect();
        if !subresources.is_empty() {
            entry["subresources"] = Value::Array(subresources);
        }
        resources.push(entry);
    }
    let freshness = if remote.available { "Current" } else { "Stale" };
    Some(json!({"version": remote.version, "resources": resources, "freshness": freshness}))
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
        let own = Served { resources: Resources::builtin(), remotes: &[] };
        let list = resource_list(&own, "", "v1").unwrap();
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
        let apps = aggregated(&own, false, AGGREGATED_V2);
        assert!(apps["items"].as_array().unwrap().iter().any(|g| g["metadata"]["name"] == "apps"));
        let metrics = apps["items"].as_array().unwrap().last().unwrap();
        assert_eq!(metrics["metadata"]["name"], "metrics.k8s.io");
        assert!(group_list(&own)["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "metrics.k8s.io"));
        assert_eq!(group(&own, "metrics.k8s.io").unwrap()["kind"], "APIGroup");
        assert!(resource_list(&own, "metrics.k8s.io", "v1beta1").is_some());
        assert!(resource_list(&own, "metrics.k8s.io", "v1").is_none());
    }

    fn remote(group: &str, version: &str, priority: i64, available: bool) -> Remote {
        use crate::service_client::{ClientConfig, Destination};
        let destination = Destination::Service {
            namespace: "ns".into(),
            name: "api".into(),
            port: 443,
            path: String::new(),
        };
        Remote {
            name: format!("{version}.{group}"),
            group: group.into(),
            version: version.into(),
            group_priority_minimum: 1000,
            version_priority: priority,
            client: ClientConfig::new(destination, Vec::new()),
            available,
            openapi: None,
            resources: Some(
                json!({"kind": "APIResourceList", "groupVersion": format!("{group}/{version}"),
                "resources": [
                    {"name": "flunders", "singularName": "flunder", "namespaced": true, "kind": "Flunder",
                     "verbs": ["get", "list"], "shortNames": ["fl"]},
                    {"name": "flunders/status", "singularName": "", "namespaced": true, "kind": "Flunder",
                     "verbs": ["get", "patch"]},
                ]}),
            ),
        }
    }

    #[test]
    fn remote_groups_are_merged_and_replace_the_own_metrics_api() {
        let remotes = [
            remote("wardle.example.com", "v1beta1", 20, true),
            remote("wardle.example.com", "v1alpha1", 10, false),
            remote("metrics.k8s.io", "v1beta1", 15, true),
        ];
        let served = Served { resources: Resources::builtin(), remotes: &remotes };
        let list = group_list(&served);
        let groups = list["groups"].as_array().unwrap();
        let metrics: Vec<_> = groups.iter().filter(|g| g["name"] == "metrics.k8s.io").collect();
        assert_eq!(metrics.len(), 1, "once, from the APIService");
        let wardle = groups.iter().find(|g| g["name"] == "wardle.example.com").unwrap();
        assert_eq!(wardle["preferredVersion"]["version"], "v1beta1");
        assert_eq!(wardle["versions"][1]["version"], "v1alpha1");
        assert_eq!(group(&served, "wardle.example.com").unwrap()["kind"], "APIGroup");
        assert!(resource_list(&served, "metrics.k8s.io", "v1beta1").is_none(), "not served here");

        let aggregated = aggregated(&served, false, AGGREGATED_V2);
        let items = aggregated["items"].as_array().unwrap();
        let wardle = items.iter().find(|i| i["metadata"]["name"] == "wardle.example.com").unwrap();
        let v1beta1 = &wardle["versions"][0];
        assert_eq!(v1beta1["freshness"], "Current");
        assert_eq!(wardle["versions"][1]["freshness"], "Stale");
        let flunders = &v1beta1["resources"][0];
        assert_eq!(flunders["resource"], "flunders");
        assert_eq!(flunders["scope"], "Namespaced");
        assert_eq!(flunders["shortNames"], json!(["fl"]));
        assert_eq!(flunders["subresources"][0]["subresource"], "status");
        assert_eq!(v1beta1["resources"].as_array().unwrap().len(), 1);
        let metrics: Vec<_> =
            items.iter().filter(|i| i["metadata"]["name"] == "metrics.k8s.io").collect();
        assert_eq!(metrics.len(), 1);
        assert_eq!(metrics[0]["versions"][0]["resources"][0]["resource"], "flunders");
    }
}
