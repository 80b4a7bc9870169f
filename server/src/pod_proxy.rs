//! `pods/{pod}/proxy/{path}`: any request (upgrades too) on to a port of the pod, dialed by
//! this server at the pod's IP over the pod network, as upstream's pod `ResourceLocation`
//! and proxy handler do. The pod is named `pod`, `pod:port` or `scheme:pod:port`; without a
//! port the first port a container declares is used, else the scheme's (80 or 443). The
//! forwarding itself is `nodes/proxy`'s ([`crate::kubelet::forward`]).

use std::net::IpAddr;

use axum::response::Response;
use http::{HeaderMap, Method};
use serde_json::Value;

use crate::api::ApiState;
use crate::kubelet::{
    check_proxy_method, forward, proxy_path, split_scheme_name_port, unreachable, RawRequest,
};
use crate::proxy::{Endpoint, Tls};
use crate::request::ResourceRequest;
use crate::status::{ApiError, ApiResult};

/// Serves `pods/{id}/proxy` in namespace `ns`.
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
        .ok_or_else(|| ApiError::bad_request(format!("invalid pod request {id:?}")))?;
    let pods = rkube_apis::resources::Resources::builtin()
        .get("", "v1", "pods")
        .expect("pods are built in");
    let pod = state.registry.get(pods, Some(ns), name).await?;
    let ip = allowed_ip(&pod)?;
    let https = scheme == "https";
    let port = match port.map(String::from).or_else(|| first_container_port(&pod)) {
        Some(port) => resolve_port(&port).map_err(unreachable)?,
        None if https => 443,
        None => 80,
    };
    dial(state, method, headers, https, ip.to_string(), port, r, raw).await
}

/// Sends the request on to `host:port` (of a pod, or a Service's endpoint) over the pod
/// network, with the path after `.../proxy`.
#[allow(clippy::too_many_arguments)]
pub async fn dial(
    state: &ApiState,
    method: &Method,
    headers: &HeaderMap,
    https: bool,
    host: String,
    port: u16,
    r: &ResourceRequest,
    raw: RawRequest,
) -> ApiResult<Response> {
    let endpoint = Endpoint { scheme: if https { "https" } else { "http" }, host, port };
    // Upstream's proxy transport does not verify what answers at a pod's IP.
    let tls = https.then_some(Tls { connector: &state.kubelet.anonymous_tls, skip_verify: true });
    forward(method, headers, &endpoint, Ok(tls), &proxy_path(raw.uri.path(), r), raw).await
}

/// The pod's first IP (`status.podIPs[0]`), if it is one a proxy may dial: a global unicast
/// address as Go's `IsGlobalUnicast` says (not loopback, link-local, multicast, unspecified
/// or broadcast); otherwise upstream's 400.
pub fn allowed_ip(pod: &Value) -> ApiResult<IpAddr> {
    let ip = pod["status"]["podIPs"][0]["ip"].as_str().unwrap_or("");
    ip.parse::<IpAddr>()
        .ok()
        .filter(is_global_unicast)
        .ok_or_else(|| ApiError::bad_request("address not allowed"))
}

fn is_global_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_broadcast()
                || v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_multicast()
                || v4.is_link_local())
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_global_unicast(&IpAddr::V4(v4)),
            None => {
                let link_local = v6.segments()[0] & 0xffc0 == 0xfe80;
                !(v6.is_unspecified() || v6.is_loopback() || v6.is_multicast() || link_local)
            }
        },
    }
}

/// The first `containerPort` a regular container declares.
fn first_container_port(pod: &Value) -> Option<String> {
    pod["spec"]["containers"].as_array()?.iter().find_map(|c| {
        let first = c["ports"].as_array()?.first()?;
        first["containerPort"].as_i64().map(|p| p.to_string())
    })
}

/// A port as Go's dialer reads it: a number, or a TCP service name from `/etc/services` (or
/// Go's few built-in ones). Upstream passes the name through unresolved, so a container
/// port's name means nothing here; the errors are Go's.
pub fn resolve_port(port: &str) -> Result<u16, String> {
    if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) {
        return port.parse::<u16>().map_err(|_| format!("dial tcp: address {port}: invalid port"));
    }
    let wanted = port.to_ascii_lowercase();
    let services = std::fs::read_to_string("/etc/services").unwrap_or_default();
    services_port(&services, &wanted)
        .or_else(|| builtin_port(&wanted))
        .ok_or_else(|| format!("dial tcp: lookup tcp/{port}: unknown port"))
}

/// `name port/tcp [aliases...]` lines of an `/etc/services` text.
fn services_port(services: &str, name: &str) -> Option<u16> {
    services.lines().find_map(|line| {
        let line = line.split('#').next().unwrap_or("");
        let mut fields = line.split_whitespace();
        let service = fields.next()?;
        let (number, protocol) = fields.next()?.split_once('/')?;
        let named = service == name || fields.any(|alias| alias == name);
        (protocol == "tcp" && named).then(|| number.parse().ok()).flatten()
    })
}

/// Go's own table, for machines without `/etc/services`.
fn builtin_port(name: &str) -> Option<u16> {
    Some(match name {
        "ftp" => 21,
        "ftps" => 990,
        "gopher" => 70,
        "http" => 80,
        "https" => 443,
        "imap2" => 143,
        "imap3" => 220,
        "imaps" => 993,
        "pop3" => 110,
        "pop3s" => 995,
        "smtp" => 25,
        "submissions" => 465,
        "ssh" => 22,
        "telnet" => 23,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_global_unicast_pod_ips_are_dialed() {
        let pod = |ip: &str| json!({"status": {"podIPs": [{"ip": ip}]}});
        assert_eq!(allowed_ip(&pod("10.42.0.7")).unwrap().to_string(), "10.42.0.7");
        assert_eq!(allowed_ip(&pod("fd00::7")).unwrap().to_string(), "fd00::7");
        for bad in ["", "127.0.0.1", "169.254.169.254", "0.0.0.0", "224.0.0.1", "::1", "fe80::1"] {
            let e = allowed_ip(&pod(bad)).unwrap_err();
            assert_eq!(
                (e.code.as_u16(), e.message.as_str()),
                (400, "address not allowed"),
                "{bad}"
            );
        }
        // A pod without an IP yet.
        assert!(allowed_ip(&json!({"status": {"phase": "Pending"}})).is_err());
    }

    #[test]
    fn the_first_declared_container_port_is_the_default() {
        let pod = json!({"spec": {"containers": [
            {"name": "a"},
            {"name": "b", "ports": [{"containerPort": 8080}, {"containerPort": 9090}]},
        ]}});
        assert_eq!(first_container_port(&pod).as_deref(), Some("8080"));
        assert_eq!(first_container_port(&json!({"spec": {"containers": [{"name": "a"}]}})), None);
    }

    #[test]
    fn ports_are_numbers_or_service_names_as_go_dials_them() {
        assert_eq!(resolve_port("8080"), Ok(8080));
        assert_eq!(resolve_port("99999").unwrap_err(), "dial tcp: address 99999: invalid port");
        assert_eq!(resolve_port("http"), Ok(80));
        assert_eq!(resolve_port("HTTPS"), Ok(443));
        assert_eq!(
            resolve_port("no-such-port").unwrap_err(),
            "dial tcp: lookup tcp/no-such-port: unknown port"
        );
        let services = "# comment\nwww-http 8000/tcp web # alias\nweb 53/udp\n";
        assert_eq!(services_port(services, "web"), Some(8000));
        assert_eq!(services_port(services, "www-http"), Some(8000));
        assert_eq!(services_port(services, "dns"), None);
    }
}
