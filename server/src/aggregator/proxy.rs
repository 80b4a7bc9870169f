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
//! Errors are upstream's: 503 `service unavailable` while the APIService is not available,
//! 503 with the dial error when the server cannot be reached, 500 when no front-proxy
//! certificate is configured. They are plain text, as upstream writes them (clients report
//! "the server is currently unable to handle the request").

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, StatusCode};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::{Aggregator, Remote};
use crate::auth::UserInfo;

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
