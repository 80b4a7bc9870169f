//! `/exec` and `/attach`: a command in a container, or the container's main process, with
//! the client's stdin, stdout, stderr and terminal, as upstream's kubelet serves them
//! (`remotecommand`). Two transports, one session:
//!
//! - **WebSocket** ([`websocket`]), the `channel.k8s.io` protocols v1 to v5: kubectl 1.30
//!   and later, client libraries.
//! - **SPDY/3.1** ([`spdy`]), the `channel.k8s.io` protocols v1 to v4 negotiated with
//!   `X-Stream-Protocol-Version`: kubectl 1.29 and older (and later ones when WebSockets
//!   fail). The API server passes either upgrade through to the kubelet.
//!
//! Both check the request the same way ([`exec`], [`attach`]: the query's streams, the pod,
//! a running container) and hand their connection to [`session::run`], which starts the
//! command on the runtime, feeds it the client's stdin and resizes, sends its output and
//! reports how it ended: a `metav1.Status` on the error stream from v4 on (with the exit
//! code of a failed command), a failure's message alone before.

pub mod session;
pub mod spdy;
pub mod websocket;

use std::sync::Arc;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{FromRequestParts, Path, RawQuery, Request, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;

use crate::httpstream;
use crate::pods::sync::latest;
use crate::runtime::ContainerState;
use crate::server::{first, query_pairs, text_error, ServerState};

/// The streams a client asks for (upstream's remotecommand Options).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamOptions {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
}

impl StreamOptions {
    /// `input`, `output`, `error` and `tty`, each on when `1`; with a TTY there is no
    /// separate stderr.
    pub fn parse(pairs: &[(String, String)]) -> Result<StreamOptions, String> {
        let on = |key: &str| first(pairs, key) == Some("1");
        let tty = on("tty");
        let options = StreamOptions {
            stdin: on("input"),
            stdout: on("output"),
            stderr: on("error") && !tty,
            tty,
        };
        if !options.stdin && !options.stdout && !options.stderr {
            return Err("you must specify at least 1 of stdin, stdout, stderr".into());
        }
        Ok(options)
    }
}

/// The versions of the `channel.k8s.io` streaming protocol, oldest first. Both transports
/// name them alike; what a version changes is the same in both (resizes from v3, a status
/// on the error stream from v4); v5 (closing one stream) is WebSocket-only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Protocol {
    V1,
    V2,
    V3,
    V4,
    V5,
}

impl Protocol {
    /// The name a client offers it by (a WebSocket subprotocol, an
    /// `X-Stream-Protocol-Version`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::V1 => "channel.k8s.io",
            Protocol::V2 => "v2.channel.k8s.io",
            Protocol::V3 => "v3.channel.k8s.io",
            Protocol::V4 => "v4.channel.k8s.io",
            Protocol::V5 => "v5.channel.k8s.io",
        }
    }
}

/// What a session runs.
#[derive(Clone, Debug)]
pub enum Target {
    Exec { container_id: String, command: Vec<String> },
    Attach { container_id: String },
}

/// `/exec/{ns}/{pod}[/{uid}]/{container}?command=..&input=1&output=1&error=1&tty=1`.
pub async fn exec(
    state: State<Arc<ServerState>>,
    Path(params): Path<Vec<String>>,
    query: RawQuery,
    request: Request,
) -> Response {
    stream_request(state, true, params, query, request).await
}

/// `/attach/{ns}/{pod}[/{uid}]/{container}?input=1&output=1&error=1&tty=1`.
pub async fn attach(
    state: State<Arc<ServerState>>,
    Path(params): Path<Vec<String>>,
    query: RawQuery,
    request: Request,
) -> Response {
    stream_request(state, false, params, query, request).await
}

/// Checks an exec or attach request as upstream's kubelet does (options, pod, running
/// container), then upgrades it: to a WebSocket when it asks for one, else to SPDY.
async fn stream_request(
    State(state): State<Arc<ServerState>>,
    is_exec: bool,
    params: Vec<String>,
    RawQuery(query): RawQuery,
    request: Request,
) -> Response {
    // `{ns}/{pod}/{container}` or `{ns}/{pod}/{uid}/{container}`.
    let (namespace, pod_name, uid, container) = match params.as_slice() {
        [ns, pod, container] => (ns, pod, None, container),
        [ns, pod, uid, container] => (ns, pod, Some(uid.as_str()), container),
        _ => return text_error(StatusCode::NOT_FOUND, "404 page not found\n"),
    };
    let pairs = query_pairs(query.as_deref());
    let options = match StreamOptions::parse(&pairs) {
        Ok(o) => o,
        Err(e) => return text_error(StatusCode::BAD_REQUEST, e),
    };
    let Some(pod) = state.pods.get(namespace, pod_name) else {
        return text_error(StatusCode::NOT_FOUND, "pod does not exist");
    };
    let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
    let running = match uid {
        Some(u) if u != pod_uid => None,
        _ => match state.runtime.list(&state.config.node_name, Some(&pod_uid)).await {
            Ok(records) => latest(&records, container)
                .0
                .filter(|r| matches!(r.state, ContainerState::Running { .. }))
                .map(|r| r.id.clone()),
            Err(e) => return text_error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        },
    };
    let Some(container_id) = running else {
        return text_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("container not found ({container:?})"),
        );
    };
    let target = if is_exec {
        let command: Vec<String> =
            pairs.iter().filter(|(k, _)| k == "command").map(|(_, v)| v.clone()).collect();
        if command.is_empty() {
            return text_error(StatusCode::BAD_REQUEST, "missing command");
        }
        Target::Exec { container_id, command }
    } else {
        Target::Attach { container_id }
    };
    let runtime = state.runtime.clone();
    let (mut parts, _body) = request.into_parts();

    if httpstream::is_upgrade_to(&parts.headers, "websocket") {
        return match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
            Ok(ws) => websocket::upgrade(ws, runtime, target, options),
            Err(rejection) => rejection.into_response(),
        };
    }
    // Anything else is taken for SPDY, as upstream does: the handshake's refusals first.
    let protocol = match spdy::negotiate(&parts.headers) {
        Ok(p) => p,
        Err(response) => return *response,
    };
    httpstream::upgrade_to_spdy(&mut parts, protocol.name(), "streams exec and attach", move |io| {
        spdy::serve(io, protocol, runtime, target, options)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(query: &str) -> Vec<(String, String)> {
        query_pairs(Some(query))
    }

    #[test]
    fn stream_options_need_a_stream_and_a_tty_has_no_stderr() {
        let o = StreamOptions::parse(&pairs("input=1&output=1&error=1&tty=1")).unwrap();
        assert_eq!(o, StreamOptions { stdin: true, stdout: true, stderr: false, tty: true });
        let o = StreamOptions::parse(&pairs("output=1&error=1&command=ls")).unwrap();
        assert_eq!(o, StreamOptions { stdin: false, stdout: true, stderr: true, tty: false });
        assert_eq!(
            StreamOptions::parse(&pairs("tty=1&error=1")).unwrap_err(),
            "you must specify at least 1 of stdin, stdout, stderr"
        );
    }
}
