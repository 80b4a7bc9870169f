//! The `kubernetes` Service's endpoints: the API servers that are serving, as upstream's lease
//! endpoint reconciler keeps them. Each server renews a lease of its own in the store (under
//! `/registry/masterleases/<address>`, outside the API as upstream's), every
//! [`RECONCILE_INTERVAL`], and writes the addresses of every server whose lease is younger
//! than [`LEASE_TTL`] into the `default/kubernetes` Endpoints and EndpointSlice, so that a
//! server that stops leaves them and a server whose address changed replaces its old one.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rkube_store::Store;
use serde_json::{json, Value};

use crate::registry::{Registry, WriteOptions};

/// How often a server renews its lease and checks the endpoints (upstream's 10 s).
pub const RECONCILE_INTERVAL: Duration = Duration::from_secs(10);

/// How long a lease lasts without renewal (upstream's `--endpoint-reconciler` lease TTL).
pub const LEASE_TTL: Duration = Duration::from_secs(15);

const LEASES: &str = "/registry/masterleases/";

/// This server, as the endpoints name it.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub address: IpAddr,
    pub port: u16,
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Renews this server's lease and returns the addresses of every server with a live lease
/// (sorted, this one included); expired leases are deleted.
async fn live_servers(store: &dyn Store, me: &Endpoint) -> rkube_store::Result<Vec<String>> {
    let key = format!("{LEASES}{}", me.address);
    let lease = json!({"renewed": now(), "port": me.port}).to_string();
    let (current, _) = store.get(&key, None).await?;
    match current {
        Some(kv) => store.update(&key, lease.into(), kv.mod_revision).await.map(|_| ())?,
        None => store.create(&key, lease.into()).await.map(|_| ())?,
    }
    let listed = store.range(rkube_store::RangeRequest::prefix(LEASES)).await?;
    let mut live = Vec::new();
    for kv in listed.kvs {
        let renewed = serde_json::from_slice::<Value>(&kv.value)
            .ok()
            .and_then(|v| v["renewed"].as_u64())
            .unwrap_or(0);
        let address = kv.key.trim_start_matches(LEASES).to_string();
        if now().saturating_sub(renewed) <= LEASE_TTL.as_secs() {
            live.push(address);
        } else {
            // Another server may delete it first: either way it is gone.
            let _ = store.delete(&kv.key, Some(kv.mod_revision)).await;
        }
    }
    live.sort();
    live.dedup();
    Ok(live)
}

/// The Endpoints and EndpointSlice for `addresses` on `port`.
fn wanted(addresses: &[String], port: u16) -> (Value, Value) {
    let ip_family = |a: &String| if a.contains(':') { "IPv6" } else { "IPv4" };
    let endpoints = json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{
            "addresses": addresses.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>(),
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }],
    });
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"kubernetes.io/service-name": "kubernetes"}},
        "addressType": addresses.first().map_or("IPv4", ip_family),
        "endpoints": addresses.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}})).collect::<Vec<_>>(),
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    });
    (endpoints, slice)
}

/// Makes `default/kubernetes` of `plural` hold `wanted`'s addresses and ports, writing only
/// when they differ.
async fn reconcile_one(
    registry: &Registry,
    group: &'static str,
    plural: &'static str,
    mut wanted: Value,
) -> Result<(), String> {
    let resources = registry.resources();
    let info = resources.get(group, "v1", plural).expect("built-in resource");
    let options = WriteOptions {
        field_manager: Some("kube-apiserver".to_string()),
        // The endpoints may hold a loopback address (a server pods cannot reach).
        trusted: true,
        ..Default::default()
    };
    let fields: &[&str] = match plural {
        "endpoints" => &["subsets"],
        _ => &["addressType", "endpoints", "ports"],
    };
    match registry.get(info, Some("default"), "kubernetes").await {
        Ok(current) => {
            if fields.iter().all(|f| normalized(&current[*f]) == normalized(&wanted[*f])) {
                return Ok(());
            }
            let mut updated = current.clone();
            for field in fields {
                updated[*field] = wanted[*field].take();
            }
            registry
                .update(info, Some("default"), "kubernetes", None, updated, &options)
                .await
                .map(|_| ())
                .map_err(|e| e.message)
        }
        Err(e) if e.reason == "NotFound" => registry
            .create(info, Some("default"), wanted, &options)
            .await
            .map(|_| ())
            .map_err(|e| e.message),
        Err(e) => Err(e.message),
    }
}

/// What matters of a field for comparison: the stored object has defaults filled in
/// (e.g. a slice endpoint's conditions), so only addresses and ports are compared.
fn normalized(field: &Value) -> String {
    let mut out = Vec::new();
    collect(field, &mut out);
    out.sort();
    out.join(",")
}

fn collect(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("ip" | "port" | "name" | "protocol", _) => out.push(format!("{key}={v}")),
                    ("addresses", Value::Array(items)) if items.iter().all(Value::is_string) => {
                        out.extend(items.iter().map(|a| format!("address={a}")))
                    }
                    _ => collect(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
        Value::String(s) => out.push(s.clone()),
        _ => {}
    }
}

/// One round: renew the lease, then make the endpoints name the live servers.
pub async fn reconcile(
    registry: &Registry,
    store: &dyn Store,
    me: &Endpoint,
) -> Result<(), String> {
    let live = live_servers(store, me).await.map_err(|e| e.to_string())?;
    let (endpoints, slice) = wanted(&live, me.port);
    reconcile_one(registry, "", "endpoints", endpoints).await?;
    reconcile_one(registry, "discovery.k8s.io", "endpointslices", slice).await
}

/// Reconciles now and then every [`RECONCILE_INTERVAL`] until the task is dropped.
pub fn start(
    registry: Arc<Registry>,
    store: Arc<dyn Store>,
    me: Endpoint,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(RECONCILE_INTERVAL);
        loop {
            tick.tick().await;
            if let Err(e) = reconcile(&registry, store.as_ref(), &me).await {
                tracing::warn!(error = %e, "the kubernetes Service's endpoints were not reconciled");
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_do_not_count_as_differences() {
        let (endpoints, slice) = wanted(&["10.0.0.1".into(), "10.0.0.2".into()], 6443);
        let mut stored = slice.clone();
        stored["endpoints"][0]["conditions"] =
            json!({"ready": true, "serving": true, "terminating": false});
        assert_eq!(normalized(&stored["endpoints"]), normalized(&slice["endpoints"]));
        let (_, other) = wanted(&["10.0.0.1".into()], 6443);
        assert_ne!(normalized(&other["endpoints"]), normalized(&slice["endpoints"]));
        let (moved, _) = wanted(&["10.0.0.1".into(), "10.0.0.2".into()], 6444);
        assert_ne!(normalized(&moved["subsets"]), normalized(&endpoints["subsets"]));
    }
}
