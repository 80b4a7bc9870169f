//! A request under `/apis/<group>/<version>` sent on to the extension server that serves
//! it (kube-aggregator's proxy handler): the same method, path, query, headers and body,
//! the body and the answer streaming (a watch lasts as long as either side keeps it).
//!
//! The caller was authenticated and authorized here; the extension server learns who it is
//! from `X-Remote-User`, `X-Remote-Group` (one per group) and `X-Remote-Extra-<key>` (key
//! percent-encoded), and trusts those headers because this server presents the front-proxy
//! client certificate (and `X-Remote-Uid` when the user has one; the client's address is
//! appended to `X-Forwarded-For`). What the caller sent as credentials or as those headers is removed
//! first (`Authorization`, `Impersonate-*`, `X-Remote-*`), as are hop-by-hop headers.
//! A connection upgrade (`Connection: Upgrade`: the WebSocket or SPDY of exec-style
//! subresources) goes to the extension server on a new HTTP/1.1 connection and, when it
//! switches protocols, the two connections are spliced both ways ([`crate::proxy`], as
//! upstream's UpgradeAwareHandler). Errors are upstream's: 503 `service unavailable` while the APIService is not available,
//! 503 with the dial error when the server cannot be reached, 500 when no front-proxy
//! certificate is configured. They are plain text, as upstream writes them (clients report
//! "the server is currently unable to handle the request").

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, StatusCode};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::{Aggregator, Remote};
use crate::auth::UserInfo;
use crate::service_client::Destination;

/// What an extra key keeps unescaped in a header name (upstream escapes as url.PathEscape).
const EXTRA_KEY: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// Hop-by-hop headers (RFC 9110), never forwarded.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// Sends `request` (from `user`, connected from `peer`) on to `remote`'s extension server.
pub async fn serve(
    aggregator: &Aggregator,
    remote: &Remote,
    user: &UserInfo,
    peer: Option<std::net::SocketAddr>,
    request: http::Request<Body>,
) -> Response {
    if !remote.available {
        return error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    }
    if aggregator.front_proxy.is_none() {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "no front-proxy client certificate is configured: aggregated APIs cannot be reached",
        );
    }
    let (mut parts, body) = request.into_parts();
    // A connection upgrade (exec-style subresources: WebSocket, SPDY) goes on a connection
    // of its own, as upstream's UpgradeAwareHandler does.
    let upgrade = match crate::proxy::is_upgrade_request(&parts.headers) {
        true => parts.extensions.remove::<hyper::upgrade::OnUpgrade>(),
        false => None,
    };
    let protocols: Vec<HeaderValue> =
        parts.headers.get_all(http::header::UPGRADE).iter().cloned().collect();
    scrub(&mut parts.headers);
    set_user(&mut parts.headers, user);
    // As Go's reverse proxy: the client's address appended to `X-Forwarded-For`.
    if let Some(peer) = peer {
        let forwarded = match parts.headers.get("x-forwarded-for").and_then(|v| v.to_str().ok()) {
            Some(earlier) => format!("{earlier}, {}", peer.ip()),
            None => peer.ip().to_string(),
        };
        if let Ok(v) = HeaderValue::from_str(&forwarded) {
            parts.headers.insert("x-forwarded-for", v);
        }
    }
    if let Some(client) = upgrade {
        parts.headers.insert(http::header::CONNECTION, HeaderValue::from_static("Upgrade"));
        for protocol in protocols {
            parts.headers.append(http::header::UPGRADE, protocol);
        }
        return upgrade_through(aggregator, remote, client, http::Request::from_parts(parts, body))
            .await;
    }
    let request = http::Request::from_parts(parts, body);
    match aggregator.client.forward(&remote.client, request).await {
        Ok(answer) => {
            let (mut parts, body) = answer.into_parts();
            for name in HOP_BY_HOP {
                parts.headers.remove(name);
            }
            Response::from_parts(parts, Body::new(body))
        }
        Err(e) => {
            tracing::info!(apiservice = remote.name, error = %e, "error while proxying request");
            error(StatusCode::SERVICE_UNAVAILABLE, &e.0)
        }
    }
}

/// An upgrading request sent on a new HTTP/1.1 connection to the extension server: when it
/// switches protocols the client gets its `101` and the two connections are spliced; any
/// other answer reaches the client as it is.
async fn upgrade_through(
    aggregator: &Aggregator,
    remote: &Remote,
    client: hyper::upgrade::OnUpgrade,
    mut request: http::Request<Body>,
) -> Response {
    let sender = match aggregator.client.connect_upgradable(&remote.client).await {
        Ok(sender) => sender,
        Err(e) => {
            tracing::info!(apiservice = remote.name, error = %e, "error while proxying an upgrade");
            return error(StatusCode::SERVICE_UNAVAILABLE, &e.0);
        }
    };
    let path = request.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
    match path.parse() {
        Ok(uri) => *request.uri_mut() = uri,
        Err(_) => return error(StatusCode::BAD_REQUEST, "invalid request path"),
    }
    *request.version_mut() = http::Version::HTTP_11;
    if let Destination::Service { namespace, name, port, .. } = &remote.client.destination {
        if let Ok(host) = HeaderValue::from_str(&format!("{name}.{namespace}.svc:{port}")) {
            request.headers_mut().insert(http::header::HOST, host);
        }
    }
    match crate::proxy::send(sender, request).await {
        Ok(answer) if answer.status() == StatusCode::SWITCHING_PROTOCOLS => {
            crate::proxy::switch_protocols(client, answer)
        }
        Ok(answer) => crate::proxy::passthrough(answer),
        Err(e) => {
            tracing::info!(apiservice = remote.name, error = %e, "error while proxying an upgrade");
            error(StatusCode::SERVICE_UNAVAILABLE, &format!("error sending request: {e}"))
        }
    }
}

/// Removes what the caller sent that the extension server must not take from it.
fn scrub(headers: &mut http::HeaderMap) {
    let names: Vec<HeaderName> = headers
        .keys()
        .filter(|name| {
            let n = name.as_str();
            n == "authorization"
                || n.starts_with("impersonate-")
                || n.starts_with("x-remote-")
                || HOP_BY_HOP.contains(&n)
        })
        .cloned()
        .collect();
    for name in names {
        headers.remove(name);
    }
}

/// The user as the request-header authenticator of the extension server reads it.
fn set_user(headers: &mut http::HeaderMap, user: &UserInfo) {
    let value = |v: &str| HeaderValue::from_str(v).ok();
    if let Some(v) = value(&user.name) {
        headers.insert("x-remote-user", v);
    }
    if let Some(v) = Some(user.uid.as_str()).filter(|u| !u.is_empty()).and_then(value) {
        headers.insert("x-remote-uid", v);
    }
    for group in &user.groups {
        if let Some(v) = value(group) {
            headers.append("x-remote-group", v);
        }
    }
    for (key, values) in &user.extra {
        let escaped = utf8_percent_encode(key, EXTRA_KEY).to_string();
        let Ok(name) = HeaderName::from_bytes(format!("x-remote-extra-{escaped}").as_bytes())
        else {
            continue;
        };
        for v in values.iter().filter_map(|v| value(v)) {
            headers.append(name.clone(), v);
        }
    }
}

/// An error as Go's `http.Error` writes it.
fn error(code: StatusCode, text: &str) -> Response {
    let mut response = (code, format!("{text}\n")).into_response();
    let headers = response.headers_mut();
    headers
        .insert(http::header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caller_headers_are_replaced_by_the_authenticated_user() {
        let mut headers = http::HeaderMap::new();
        headers.insert("authorization", HeaderValue::from_static("Bearer secret"));
        headers.insert("x-remote-user", HeaderValue::from_static("system:admin"));
        headers.insert("impersonate-user", HeaderValue::from_static("someone"));
        headers.insert("accept", HeaderValue::from_static("application/json"));
        let mut user = UserInfo::authenticated("alice".into(), vec!["dev".into()]);
        user.extra.insert("scopes/a b".into(), vec!["x".into(), "y".into()]);
        scrub(&mut headers);
        set_user(&mut headers, &user);
        assert!(
            headers.get("authorization").is_none() && headers.get("impersonate-user").is_none()
        );
        assert_eq!(headers["x-remote-user"], "alice");
        let groups: Vec<_> = headers.get_all("x-remote-group").iter().collect();
        assert_eq!(groups, ["dev", "system:authenticated"]);
        let extra: Vec<_> = headers.get_all("x-remote-extra-scopes%2Fa%20b").iter().collect();
        assert_eq!(extra, ["x", "y"]);
        assert_eq!(headers["accept"], "application/json");
    }
}
