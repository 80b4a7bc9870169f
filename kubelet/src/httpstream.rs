//! The HTTP side of the kubelet's streaming endpoints (exec, attach, port-forward), as
//! upstream's `httpstream` package has it: reading which upgrade a request asks for, the
//! `X-Stream-Protocol-Version` negotiation of a SPDY upgrade ([`handshake`]), and the `101
//! Switching Protocols` answer that hands the raw connection to a SPDY session
//! ([`upgrade_to_spdy`]). What runs on the upgraded connection is the caller's
//! ([`crate::remotecommand`], [`crate::portforward`]).

use std::future::Future;

use axum::response::Response;
use http::request::Parts;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use hyper_util::rt::TokioIo;

use crate::server::text_error;

/// The request header naming the sub-protocols a client speaks (several values, or one with
/// commas), and the response header naming the one chosen.
pub const PROTOCOL_HEADER: &str = "x-stream-protocol-version";
/// The response header listing what the server speaks, when nothing matched.
pub const ACCEPTED_PROTOCOLS_HEADER: &str = "x-accepted-stream-protocol-versions";
/// The `Upgrade` token of SPDY.
pub const SPDY_UPGRADE: &str = "SPDY/3.1";

/// The raw connection of an upgraded request.
pub type Upgraded = TokioIo<hyper::upgrade::Upgraded>;

/// Whether a header (every value of it) contains `token`, in any case.
pub fn header_has(headers: &HeaderMap, name: header::HeaderName, token: &str) -> bool {
    let token = token.to_ascii_lowercase();
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains(&token))
}

/// `Connection: Upgrade` with an `Upgrade` naming `protocol` (`websocket`, `SPDY/3.1`).
pub fn is_upgrade_to(headers: &HeaderMap, protocol: &str) -> bool {
    header_has(headers, header::CONNECTION, "upgrade")
        && header_has(headers, header::UPGRADE, protocol)
}

/// The values of a list header (several values, or one with commas, or both), in order.
pub fn header_list(headers: &HeaderMap, name: impl header::AsHeaderName) -> Vec<String> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The client's `X-Stream-Protocol-Version` values, in its order.
pub fn offered_protocols(headers: &HeaderMap) -> Vec<String> {
    header_list(headers, PROTOCOL_HEADER)
}

/// The sub-protocol negotiation of a SPDY upgrade (upstream's `httpstream.Handshake`): the
/// first of the client's protocols, in the client's order, that the server speaks; or the
/// error response: 400 when the client named none, 403 with
/// `X-Accepted-Stream-Protocol-Versions` when none of them is spoken here.
pub fn handshake(
    headers: &HeaderMap,
    server: &[&'static str],
) -> Result<&'static str, Box<Response>> {
    let offered = offered_protocols(headers);
    if offered.is_empty() {
        return Err(Box::new(text_error(
            StatusCode::BAD_REQUEST,
            "unable to upgrade: X-Stream-Protocol-Version is required",
        )));
    }
    if let Some(chosen) = offered.iter().find_map(|p| server.iter().find(|s| *s == p)) {
        return Ok(chosen);
    }
    let mut response = text_error(
        StatusCode::FORBIDDEN,
        format!(
            "unable to upgrade: unable to negotiate protocol: client supports [{}], server accepts [{}]",
            offered.join(" "),
            server.join(" ")
        ),
    );
    for protocol in server {
        response
            .headers_mut()
            .append(ACCEPTED_PROTOCOLS_HEADER, HeaderValue::from_static(protocol));
    }
    Err(Box::new(response))
}

/// Answers the request `101 Switching Protocols` to SPDY/3.1 with the chosen `protocol` (the
/// caller's [`handshake`]), and runs `serve` on the raw connection once the upgrade
/// completes. A request that is no SPDY upgrade gets upstream's 400 instead, saying that
/// this kubelet `does` (`forwards ports`, ...) over SPDY or WebSockets.
pub fn upgrade_to_spdy<F, Fut>(
    parts: &mut Parts,
    protocol: &'static str,
    does: &str,
    serve: F,
) -> Response
where
    F: FnOnce(Upgraded) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    if !is_upgrade_to(&parts.headers, SPDY_UPGRADE) {
        return text_error(
            StatusCode::BAD_REQUEST,
            format!(
                "unable to upgrade: missing upgrade headers in request: this kubelet {does} \
                 over SPDY/3.1 (Upgrade: SPDY/3.1) or WebSockets"
            ),
        );
    }
    let Some(on_upgrade) = parts.extensions.remove::<hyper::upgrade::OnUpgrade>() else {
        return text_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unable to upgrade: unable to hijack response",
        );
    };
    tokio::spawn(async move {
        match on_upgrade.await {
            Ok(upgraded) => serve(TokioIo::new(upgraded)).await,
            Err(e) => tracing::debug!(error = %e, "SPDY upgrade did not complete"),
        }
    });
    let mut response = Response::new(axum::body::Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static(SPDY_UPGRADE));
    headers.insert(PROTOCOL_HEADER, HeaderValue::from_static(protocol));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offering(values: &[&'static str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(PROTOCOL_HEADER, HeaderValue::from_static(v));
        }
        headers
    }

    const SERVER: [&str; 2] = ["v4.channel.k8s.io", "channel.k8s.io"];

    #[test]
    fn the_client_s_first_protocol_that_the_server_speaks_wins() {
        let h = offering(&["v9.example", "v4.channel.k8s.io", "channel.k8s.io"]);
        assert_eq!(handshake(&h, &SERVER).unwrap(), "v4.channel.k8s.io");
        // The client's order decides, as httpstream.Handshake reads it.
        let h = offering(&["channel.k8s.io, v4.channel.k8s.io"]);
        assert_eq!(handshake(&h, &SERVER).unwrap(), "channel.k8s.io");
    }

    #[test]
    fn no_protocol_is_a_400_and_an_unknown_one_a_403_listing_ours() {
        let none = handshake(&HeaderMap::new(), &SERVER).unwrap_err();
        assert_eq!(none.status(), StatusCode::BAD_REQUEST);
        let refused = handshake(&offering(&["v9.example"]), &SERVER).unwrap_err();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        let accepted: Vec<&str> = refused
            .headers()
            .get_all(ACCEPTED_PROTOCOLS_HEADER)
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(accepted, SERVER);
    }

    #[test]
    fn a_request_that_is_no_spdy_upgrade_is_a_400() {
        let (mut parts, ()) = http::Request::new(()).into_parts();
        let response =
            upgrade_to_spdy(&mut parts, "portforward.k8s.io", "forwards ports", |_| async {
                unreachable!("no upgrade")
            });
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn list_headers_are_read_from_every_value() {
        let mut h = HeaderMap::new();
        h.append(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static("a, b"));
        h.append(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(" ,c"));
        assert_eq!(header_list(&h, header::SEC_WEBSOCKET_PROTOCOL), ["a", "b", "c"]);
    }

    #[test]
    fn upgrades_are_read_from_both_headers() {
        let mut h = HeaderMap::new();
        h.insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
        assert!(!is_upgrade_to(&h, "spdy/3.1"));
        h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive, Upgrade"));
        assert!(is_upgrade_to(&h, "spdy/3.1"));
        assert!(!is_upgrade_to(&h, "websocket"));
    }
}
