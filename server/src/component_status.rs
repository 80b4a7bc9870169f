//! ComponentStatus (`/api/v1/componentstatuses`, `kubectl get cs`): upstream's deprecated view
//! of the control plane's health, worked out afresh on every read as kube-apiserver does.
//!
//! Three components, probed at once:
//! - `scheduler` and `controller-manager`: an HTTPS `GET /healthz` on this machine's loopback
//!   at the ports they serve it on (upstream's 10259 and 10257 unless configured), the
//!   certificate not verified, as upstream's prober. Whether they run in this process or as
//!   `rkube scheduler` next to it, each answers for itself.
//! - `etcd-0`: the store (etcd, or the embedded store in its place) answering a read.
//!
//! As upstream, a probe that gets no answer is `False` with Go's error text as the message
//! (`Get "https://127.0.0.1:10259/healthz": dial tcp ...: connect: connection refused`), an
//! answer of 400 or more is `False` with `HTTP probe failed with statuscode: N`, and every
//! response carries the deprecation warning. Label and field selectors filter the list (the
//! objects have no labels, so a label selector that needs one leaves nothing), and an unknown
//! name is upstream's plain 500 `Component not found: NAME`.

use std::time::Duration;

use http::StatusCode;
use serde_json::{json, Value};

use crate::api::ApiState;
use crate::cache::FilterView;
use crate::handlers::{self, Reply, Request};
use crate::proxy::{self, Endpoint, Tls};
use crate::status::{ApiError, ApiResult};
use rkube_apis::resources::ResourceInfo;

/// Where the scheduler and the controller-manager serve `/healthz` (HTTPS, loopback).
#[derive(Clone, Copy, Debug)]
pub struct ComponentPorts {
    pub scheduler: u16,
    pub controller_manager: u16,
}

impl Default for ComponentPorts {
    /// kube-scheduler's and kube-controller-manager's secure ports.
    fn default() -> Self {
        ComponentPorts { scheduler: 10259, controller_manager: 10257 }
    }
}

/// The warning every ComponentStatus response carries, as upstream's.
pub const DEPRECATED: &str = "v1 ComponentStatus is deprecated in v1.19+";

/// Upstream's probe timeout.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// The most of a health answer kept as the message.
const BODY_LIMIT: usize = 10 * 1024;

/// The result of one probe: upstream's `probe.Result` as a condition status, the message and
/// the error.
struct Probe {
    status: &'static str,
    message: String,
    error: String,
}

/// `GET /api/v1/componentstatuses[/NAME]`: the list, or one component; every answer, errors
/// too, carries the deprecation warning.
pub async fn serve(
    state: &ApiState,
    req: &Request,
    info: &ResourceInfo,
    name: Option<&str>,
) -> ApiResult<Reply> {
    let answer = match name {
        Some(name) => get(state, req, info, name).await,
        None => list(state, req, info).await,
    };
    Ok(answer.unwrap_or_else(Reply::error).with_warnings(&[DEPRECATED.to_string()]))
}

async fn list(state: &ApiState, req: &Request, info: &ResourceInfo) -> ApiResult<Reply> {
    let (query, output) = (&req.options, req.output(info)?);
    let filter = handlers::filter_for(info, query, None)?;
    let items: Vec<Value> = statuses(state)
        .await
        .into_iter()
        .filter(|item| {
            let name = item["metadata"]["name"].as_str().unwrap_or("");
            let fields = [("metadata.name", name.to_string())];
            let labels = Default::default();
            filter.matches(&FilterView { name, labels: &labels, fields: &fields })
        })
        .collect();
    Ok(handlers::list_response(info, output, query, json!({}), items, None))
}

async fn get(state: &ApiState, req: &Request, info: &ResourceInfo, name: &str) -> ApiResult<Reply> {
    let (query, output) = (&req.options, req.output(info)?);
    let probe = match name {
        "scheduler" => http_probe(state, state.component_ports.scheduler).await,
        "controller-manager" => http_probe(state, state.component_ports.controller_manager).await,
        "etcd-0" => store_probe(state).await,
        // Upstream's storage answers with a plain error: a 500 without a reason.
        _ => {
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "",
                format!("Component not found: {name}"),
            ))
        }
    };
    Ok(handlers::object_response(StatusCode::OK, info, object(name, probe), output, query))
}

/// The three components' statuses, probed concurrently.
async fn statuses(state: &ApiState) -> Vec<Value> {
    let (scheduler, controller_manager, store) = tokio::join!(
        http_probe(state, state.component_ports.scheduler),
        http_probe(state, state.component_ports.controller_manager),
        store_probe(state),
    );
    vec![
        object("scheduler", scheduler),
        object("controller-manager", controller_manager),
        object("etcd-0", store),
    ]
}

fn object(name: &str, probe: Probe) -> Value {
    let mut condition = json!({"type": "Healthy", "status": probe.status});
    if !probe.message.is_empty() {
        condition["message"] = json!(probe.message);
    }
    if !probe.error.is_empty() {
        condition["error"] = json!(probe.error);
    }
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "conditions": [condition],
    })
}

/// Upstream's HTTP prober against `https://127.0.0.1:PORT/healthz`.
async fn http_probe(state: &ApiState, port: u16) -> Probe {
    let endpoint = Endpoint { scheme: "https", host: "127.0.0.1".into(), port };
    let url = endpoint.url("/healthz");
    let failed = |e: String| Probe {
        status: "False",
        message: format!("Get {url:?}: {e}"),
        error: String::new(),
    };
    let tls = Tls { connector: &state.kubelet.anonymous_tls, skip_verify: true };
    let answer = tokio::time::timeout(PROBE_TIMEOUT, async {
        let sender = proxy::connect(&endpoint, Some(tls)).await?;
        let request = http::Request::get("/healthz")
            .header(http::header::HOST, endpoint.authority())
            .header(http::header::USER_AGENT, "kube-probe/1.33")
            .body(axum::body::Body::empty())
            .map_err(|e| e.to_string())?;
        let response = proxy::send(sender, request).await?;
        let code = response.status().as_u16();
        let body = http_body_util::BodyExt::collect(http_body_util::Limited::new(
            response.into_body(),
            BODY_LIMIT,
        ))
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
        Ok::<_, String>((code, body))
    })
    .await;
    match answer {
        Err(_) => failed(
            "context deadline exceeded (Client.Timeout exceeded while awaiting headers)".into(),
        ),
        Ok(Err(e)) => failed(e),
        Ok(Ok((code, _))) if code >= 400 => Probe {
            status: "False",
            message: format!("HTTP probe failed with statuscode: {code}"),
            error: String::new(),
        },
        Ok(Ok((_, body))) => Probe {
            status: "True",
            message: String::from_utf8_lossy(&body).into_owned(),
            error: String::new(),
        },
    }
}

/// The store answers a read within the probe timeout: `ok`, else the error.
async fn store_probe(state: &ApiState) -> Probe {
    let read = tokio::time::timeout(PROBE_TIMEOUT, state.registry.store.current_revision());
    match read.await {
        Ok(Ok(_)) => Probe { status: "True", message: "ok".into(), error: String::new() },
        Ok(Err(e)) => Probe { status: "False", message: String::new(), error: e.to_string() },
        Err(_) => Probe {
            status: "False",
            message: String::new(),
            error: "context deadline exceeded".into(),
        },
    }
}
