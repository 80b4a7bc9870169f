//! `services/{service}/proxy/{path}`: a request on to one of the Service's endpoints, dialed by
//! this server over the pod network, as upstream's service `ResourceLocation` chooses it. The
//! Service is named `svc`, `svc:port` or `scheme:svc:port`; the port is the Service port's
//! name (or its number, which names it). An endpoint is taken at random from the Service's
//! Endpoints subsets that have that port, and used only if it is a pod's address (its
//! `targetRef` names a pod that has that IP), so that the API server never dials an address
//! someone wrote by hand. The forwarding itself is `nodes/proxy`'s.
//!
//! [`resolve`] is the same choice for the server's own clients of a Service (admission
//! webhooks, see [`crate::service_client`]): upstream's endpoint resolver, which takes the
//! Service port by number and any endpoint address (the client verifies who answers with the
//! configuration's CA bundle, as `<service>.<namespace>.svc`).

use axum::response::Response;
use http::{HeaderMap, Method};
use rand::RngExt;
use serde_json::Value;

use crate::api::ApiState;
use crate::kubelet::{check_proxy_method, split_scheme_name_port, RawRequest};
use crate::registry::Registry;
use crate::request::ResourceRequest;
use crate::status::{ApiError, ApiResult};

fn resource(plural: &str) -> &'static rkube_apis::resources::ResourceInfo {
    rkube_apis::resources::Resources::builtin().get("", "v1", plural).expect("built in")
}

/// Serves `services/{id}/proxy` in namespace `ns`.
pub async fn serve(
    state: &ApiState,
    method: &Method,
    headers: &HeaderMap,
    ns: &str,
    id: &str,
    r: &ResourceRequest,
    raw: RawRequest,
) -> ApiResult<Response> {
    check_proxy_method(method)?;
    let (scheme, name, port) = split_scheme_name_port(id)
        .ok_or_else(|| ApiError::bad_request(format!("invalid service request {id:?}")))?;
    let mut port_name = port.unwrap_or("").to_string();
    // A port number stands for the Service port that has it.
    if let Ok(number) = port_name.parse::<i64>() {
        let service = state.registry.get(resource("services"), Some(ns), name).await?;
        let ports = service["spec"]["ports"].as_array().cloned().unwrap_or_default();
        let declared = ports.iter().find(|p| p["port"].as_i64() == Some(number));
        port_name = match declared {
            Some(p) => p["name"].as_str().unwrap_or("").to_string(),
            None => {
                return Err(ApiError::service_unavailable(format!(
                    "no service port {number} found for service {name:?}"
                )))
            }
        };
    }
    let endpoints = state.registry.get(resource("endpoints"), Some(ns), name).await?;
    let (ip, target_port) =
        choose(&state.registry, ns, &endpoints, &port_name, Addresses::Pods).await?.ok_or_else(
            || ApiError::service_unavailable(format!("no endpoints available for service {id:?}")),
        )?;
    crate::pod_proxy::dial(state, method, headers, scheme == "https", ip, target_port, r, raw).await
}

/// Which endpoint addresses may be dialed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Addresses {
    /// Only a pod's own IP (`services/proxy`, which any user with that permission reaches).
    Pods,
    /// Any IP address (the server's own clients, which verify the server they reach).
    Any,
}

/// Upstream's endpoint resolver (`ResolveEndpoint`): the address and port of one of the
/// endpoints of Service `name` in `ns` for its port numbered `port`. The errors are
/// upstream's texts.
pub(crate) async fn resolve(
    registry: &Registry,
    ns: &str,
    name: &str,
    port: u16,
) -> Result<(String, u16), String> {
    let service = registry
        .get(resource("services"), Some(ns), name)
        .await
        .map_err(|_| format!("service {name:?} not found"))?;
    let kind = service["spec"]["type"].as_str().unwrap_or("ClusterIP");
    if !matches!(kind, "ClusterIP" | "NodePort" | "LoadBalancer") {
        return Err(format!("unsupported service type {kind:?}"));
    }
    let ports = service["spec"]["ports"].as_array().cloned().unwrap_or_default();
    let declared = ports.iter().find(|p| p["port"].as_u64() == Some(u64::from(port)));
    let Some(declared) = declared else {
        return Err(format!("no service port {port} found for service {name:?}"));
    };
    let port_name = declared["name"].as_str().unwrap_or("");
    let endpoints = registry
        .get(resource("endpoints"), Some(ns), name)
        .await
        .map_err(|_| format!("endpoints {name:?} not found"))?;
    let no_endpoints = || format!("no endpoints available for service {name:?}");
    match choose(registry, ns, &endpoints, port_name, Addresses::Any).await {
        Ok(Some(found)) => Ok(found),
        _ => Err(no_endpoints()),
    }
}

/// An address and port of `endpoints` for the port named `port_name`: from a random subset
/// that has the port, a random address that `addresses` allows.
async fn choose(
    registry: &Registry,
    ns: &str,
    endpoints: &Value,
    port_name: &str,
    addresses: Addresses,
) -> ApiResult<Option<(String, u16)>> {
    let subsets = endpoints["subsets"].as_array().cloned().unwrap_or_default();
    if subsets.is_empty() {
        let name = endpoints["metadata"]["name"].as_str().unwrap_or("");
        return Err(ApiError::service_unavailable(format!(
            "no endpoints available for service {name:?}"
        )));
    }
    let start = rand::rng().random_range(0..subsets.len());
    for i in 0..subsets.len() {
        let subset = &subsets[(start + i) % subsets.len()];
        let list = subset["addresses"].as_array().cloned().unwrap_or_default();
        if list.is_empty() {
            continue;
        }
        let ports = subset["ports"].as_array().cloned().unwrap_or_default();
        let Some(port) = ports.iter().find(|p| p["name"].as_str().unwrap_or("") == port_name)
        else {
            continue;
        };
        let Some(port) = port["port"].as_u64().and_then(|p| u16::try_from(p).ok()) else {
            continue;
        };
        let first = rand::rng().random_range(0..list.len());
        for j in 0..list.len() {
            let address = &list[(first + j) % list.len()];
            let usable = match addresses {
                Addresses::Pods => pod_address(registry, ns, address).await,
                Addresses::Any => address["ip"]
                    .as_str()
                    .filter(|ip| ip.parse::<std::net::IpAddr>().is_ok())
                    .map(String::from),
            };
            if let Some(ip) = usable {
                return Ok(Some((ip, port)));
            }
        }
    }
    Ok(None)
}

/// The address's IP if it is the IP of the pod its `targetRef` names.
async fn pod_address(registry: &Registry, ns: &str, address: &Value) -> Option<String> {
    let ip = address["ip"].as_str()?;
    let target = &address["targetRef"];
    if target["kind"].as_str() != Some("Pod") {
        return None;
    }
    let namespace = target["namespace"].as_str().unwrap_or(ns);
    let pod = registry.get(resource("pods"), Some(namespace), target["name"].as_str()?).await;
    let pod = pod.ok()?;
    let ips = pod["status"]["podIPs"].as_array()?;
    let known = ips.iter().any(|p| p["ip"].as_str() == Some(ip));
    (known && crate::pod_proxy::allowed_ip(&pod).is_ok()).then(|| ip.to_string())
}
