//! The APIService availability controller (kube-aggregator's `AvailableConditionController`)
//! and the table of what is served where.
//!
//! Each pass reads every APIService and, for those with a `spec.service`, checks in turn:
//! the Service exists (`ServiceNotFound`) and has the port (`ServicePortError`), its
//! Endpoints exist and have an address for that port (`MissingEndpoints`), and a GET of
//! `/apis/<group>/<version>` through the Service, with the front-proxy certificate, answers
//! 2xx within [`DISCOVERY_TIMEOUT`] (`FailedDiscoveryCheck`). A lookup that fails otherwise
//! is `ServiceAccessError`. All passing is `Passed`, "all checks passed"; an APIService
//! without a service is `Local`. The `Available` condition is written when it changes (its
//! `lastTransitionTime` when its status does), with upstream's messages. The body of a
//! passing discovery GET is the version's APIResourceList: kept as the extension's discovery
//! ([`super::Remote::resources`]), so discovery is refreshed on every pass.
//!
//! A pass runs when an APIService changes, when a Service or Endpoints that one names
//! changes, and every [`RESYNC`] (what an extension server does is seen no other way).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use rkube_apis::resources::{ResourceInfo, Resources};
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;

use super::{openapi, Aggregator, Remote};
use crate::registry::{Filter, Registry, WriteOptions};

/// How long the discovery GET of one check may take (upstream's 5s).
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// How often every APIService is checked again without a change.
pub const RESYNC: Duration = Duration::from_secs(5);

fn info(group: &str, plural: &str) -> &'static Arc<ResourceInfo> {
    let version = "v1";
    Resources::builtin().get(group, version, plural).expect("built in")
}

fn api_services() -> &'static Arc<ResourceInfo> {
    info("apiregistration.k8s.io", "apiservices")
}

/// Starts the controller; runs as long as the server.
pub fn start(aggregator: Arc<Aggregator>) {
    tokio::spawn(async move {
        if let Err(e) = run(aggregator).await {
            tracing::error!(error = %e, "APIServices are not checked: aggregated APIs are not served");
        }
    });
}

async fn run(aggregator: Arc<Aggregator>) -> Result<(), String> {
    let registry = aggregator.registry.clone();
    let cache = registry.cache(api_services()).map_err(|e| e.message)?;
    let prefix = api_services().key_prefix();
    let mut changes = cache.watch(None, &prefix).map_err(|e| e.message)?.live;
    let services = registry.cache(info("", "services")).map_err(|e| e.message)?;
    let mut service_changes =
        services.watch(None, &info("", "services").key_prefix()).map_err(|e| e.message)?.live;
    let endpoints = registry.cache(info("", "endpoints")).map_err(|e| e.message)?;
    let mut endpoint_changes =
        endpoints.watch(None, &info("", "endpoints").key_prefix()).map_err(|e| e.message)?.live;
    loop {
        let everything = Filter::everything();
        let objects: Vec<Value> =
            cache.list(&prefix, &everything).0.iter().map(|c| c.value()).collect();
        let named: Vec<(String, String)> = objects
            .iter()
            .filter_map(|o| {
                let s = o["spec"].get("service").filter(|s| s.is_object())?;
                Some((s["namespace"].as_str()?.to_string(), s["name"].as_str()?.to_string()))
            })
            .collect();
        pass(&aggregator, &objects).await;
        // Level-triggered: a change (or a missed one) checks everything again.
        let concerns = |event: Result<Arc<crate::cache::CacheEvent>, RecvError>| match event {
            Ok(e) => named.iter().any(|(ns, n)| e.object.namespace == *ns && e.object.name == *n),
            Err(RecvError::Lagged(_)) => true,
            Err(RecvError::Closed) => false,
        };
        let deadline = tokio::time::sleep(RESYNC);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                event = changes.recv() => match event {
                    Ok(_) | Err(RecvError::Lagged(_)) => break,
                    Err(RecvError::Closed) => return Err("the APIService cache stopped".into()),
                },
                event = service_changes.recv() => if concerns(event) { break },
                event = endpoint_changes.recv() => if concerns(event) { break },
                _ = &mut deadline => break,
            }
        }
    }
}

/// One check of every APIService: the table of remotes is replaced, then the conditions
/// written.
async fn pass(aggregator: &Aggregator, objects: &[Value]) {
    let checks = objects.iter().map(|obj| async move {
        let condition = match aggregator.client_config(&obj["spec"]) {
            None => {
                ("True", "Local", "Local APIServices are always available".to_string(), None, None)
            }
            Some(client) => {
                let outcome = check(aggregator, obj, &client).await;
                let (status, reason, message, resources) = match outcome {
                    Ok(resources) => ("True", "Passed", "all checks passed".to_string(), resources),
                    Err((reason, message)) => ("False", reason, message, None),
                };
                (status, reason, message, Some(client), resources)
            }
        };
        (obj, condition)
    });
    let results = futures::future::join_all(checks).await;
    let mut remotes = BTreeMap::new();
    let mut conditions = Vec::new();
    let previous = aggregator.remotes.read().unwrap_or_else(|e| e.into_inner()).clone();
    for (obj, (status, reason, message, client, resources)) in results {
        let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
        let spec = &obj["spec"];
        let (group, version) = (
            spec["group"].as_str().unwrap_or("").to_string(),
            spec["version"].as_str().unwrap_or("").to_string(),
        );
        if let Some(client) = client {
            let key = (group.clone(), version.clone());
            // Discovery stays as last fetched while the extension is unavailable.
            let resources = resources.or_else(|| {
                previous.get(&key).filter(|r| r.name == name).and_then(|r| r.resources.clone())
            });
            remotes.insert(
                key,
                Remote {
                    name: name.clone(),
                    group,
                    version,
                    group_priority_minimum: spec["groupPriorityMinimum"].as_i64().unwrap_or(0),
                    version_priority: spec["versionPriority"].as_i64().unwrap_or(0),
                    client,
                    available: status == "True",
                    resources,
                    openapi: None,
                },
            );
        }
        conditions.push((obj, name, status, reason, message));
    }
    fetch_openapi(aggregator, &previous, &mut remotes).await;
    let changed = |a: &BTreeMap<(String, String), Remote>, b: &BTreeMap<_, Remote>| {
        a.len() != b.len()
            || a.iter().zip(b.iter()).any(|((ka, ra), (kb, rb))| {
                ka != kb
                    || match (&ra.openapi, &rb.openapi) {
                        (Some(x), Some(y)) => !x.same(y),
                        (None, None) => false,
                        _ => true,
                    }
            })
    };
    let with_docs = |m: &BTreeMap<(String, String), Remote>| -> BTreeMap<(String, String), Remote> {
        m.iter().filter(|(_, r)| r.openapi.is_some()).map(|(k, r)| (k.clone(), r.clone())).collect()
    };
    let openapi_changed = changed(&with_docs(&previous), &with_docs(&remotes));
    *aggregator.remotes.write().unwrap_or_else(|e| e.into_inner()) = remotes;
    if openapi_changed {
        aggregator.openapi_generation.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
    // Only now: a client that sees `Available` finds the group/version routed.
    for (obj, name, status, reason, message) in conditions {
        write_condition(&aggregator.registry, obj, &name, status, reason, &message).await;
    }
}

/// Gives each remote its OpenAPI documents: the last fetched, fetched again when it has
/// just become available or they are older than [`openapi::REFRESH`].
async fn fetch_openapi(
    aggregator: &Aggregator,
    previous: &BTreeMap<(String, String), Remote>,
    remotes: &mut BTreeMap<(String, String), Remote>,
) {
    let fetches = remotes.iter_mut().map(|(key, remote)| async move {
        let before = previous.get(key).filter(|p| p.name == remote.name);
        let kept = before.and_then(|p| p.openapi.clone());
        let stale = match (before, &kept) {
            (Some(p), Some(docs)) => !p.available || docs.fetched.elapsed() >= openapi::REFRESH,
            _ => true,
        };
        remote.openapi = kept.clone();
        if !remote.available || !stale {
            return;
        }
        let fresh = openapi::fetch(aggregator, &remote.client).await;
        remote.openapi = match kept {
            // Kept when the fetch gets nothing (tried again at the next check).
            Some(kept) if fresh.is_empty() && !kept.is_empty() => Some(kept),
            // Else the fresh ones, empty too: an extension without OpenAPI is asked again
            // only after the refresh period.
            _ => Some(fresh),
        };
    });
    futures::future::join_all(fetches).await;
}

/// Upstream's checks of one APIService with a service: its discovery document when all
/// pass, else the reason and message.
async fn check(
    aggregator: &Aggregator,
    obj: &Value,
    client: &crate::service_client::ClientConfig,
) -> Result<Option<Value>, (&'static str, String)> {
    let service = &obj["spec"]["service"];
    let ns = service["namespace"].as_str().unwrap_or("");
    let name = service["name"].as_str().unwrap_or("");
    let port = service["port"].as_i64().unwrap_or(443);
    let registry = &aggregator.registry;
    let svc = match registry.get(info("", "services"), Some(ns), name).await {
        Ok(svc) => svc,
        Err(e) if e.code == http::StatusCode::NOT_FOUND => {
            return Err(("ServiceNotFound", format!("service/{name} in {ns:?} is not present")))
        }
        Err(e) => {
            return Err((
                "ServiceAccessError",
                format!("service/{name} in {ns:?} cannot be checked due to: {}", e.message),
            ))
        }
    };
    if svc["spec"]["type"].as_str() != Some("ExternalName") {
        let ports = svc["spec"]["ports"].as_array().cloned().unwrap_or_default();
        let Some(declared) = ports.iter().find(|p| p["port"].as_i64() == Some(port)) else {
            return Err((
                "ServicePortError",
                format!("service/{name} in {ns:?} is not listening on port {port}"),
            ));
        };
        let port_name = declared["name"].as_str().unwrap_or("");
        let endpoints = match registry.get(info("", "endpoints"), Some(ns), name).await {
            Ok(e) => e,
            Err(e) if e.code == http::StatusCode::NOT_FOUND => {
                return Err((
                    "MissingEndpoints",
                    format!("cannot find endpoints for service/{name} in {ns:?}"),
                ))
            }
            Err(e) => {
                return Err((
                    "ServiceAccessError",
                    format!(
                        "endpoints for service/{name} in {ns:?} cannot be checked due to: {}",
                        e.message
                    ),
                ))
            }
        };
        let subsets = endpoints["subsets"].as_array().cloned().unwrap_or_default();
        let has_address = subsets.iter().any(|s| {
            let addresses = s["addresses"].as_array().is_some_and(|a| !a.is_empty());
            let ports = s["ports"].as_array().cloned().unwrap_or_default();
            addresses && ports.iter().any(|p| p["name"].as_str().unwrap_or("") == port_name)
        });
        if !has_address {
            return Err((
                "MissingEndpoints",
                format!(
                    "endpoints for service/{name} in {ns:?} have no addresses with port name {port_name:?}"
                ),
            ));
        }
    }
    let group = obj["spec"]["group"].as_str().unwrap_or("");
    let version = obj["spec"]["version"].as_str().unwrap_or("");
    let path = format!("/apis/{group}/{version}");
    let url = format!("https://{name}.{ns}.svc:{port}{path}");
    let failed = |cause: String| {
        ("FailedDiscoveryCheck", format!("failing or missing response from {url}: {cause}"))
    };
    let response = aggregator
        .client
        .get(client, &path, "application/json", DISCOVERY_TIMEOUT)
        .await
        .map_err(|e| failed(e.0))?;
    if !response.status.is_success() {
        return Err(failed(format!("bad status from {url}: {}", response.status.as_u16())));
    }
    let list = serde_json::from_slice::<Value>(&response.body)
        .ok()
        .filter(|v| v["kind"] == "APIResourceList" && v["resources"].is_array());
    Ok(list)
}

/// Writes the `Available` condition unless it says this already.
async fn write_condition(
    registry: &Registry,
    obj: &Value,
    name: &str,
    status: &str,
    reason: &str,
    message: &str,
) {
    let conditions = obj["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let current = conditions.iter().find(|c| c["type"] == "Available");
    if let Some(c) = current {
        if c["status"] == status && c["reason"] == reason && c["message"] == message {
            return;
        }
    }
    let options =
        WriteOptions { field_manager: Some("kube-apiserver".to_string()), ..Default::default() };
    let write = |old: &Value| {
        let mut new = old.clone();
        let mut conditions = old["status"]["conditions"].as_array().cloned().unwrap_or_default();
        let now = Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true);
        let transition = conditions
            .iter()
            .find(|c| c["type"] == "Available" && c["status"] == status)
            .and_then(|c| c["lastTransitionTime"].as_str().map(String::from))
            .unwrap_or(now);
        let condition = json!({
            "type": "Available",
            "status": status,
            "lastTransitionTime": transition,
            "reason": reason,
            "message": message,
        });
        match conditions.iter_mut().find(|c| c["type"] == "Available") {
            Some(c) => *c = condition,
            None => conditions.push(condition),
        }
        new["status"] = json!({"conditions": conditions});
        Ok(new)
    };
    match registry.modify(api_services(), None, name, Some("status"), &options, None, write).await {
        Ok(_) => {}
        // Deleted meanwhile.
        Err(e) if e.code == http::StatusCode::NOT_FOUND => {}
        Err(e) => {
            tracing::warn!(apiservice = name, error = %e.message, "cannot write the APIService's status")
        }
    }
}
