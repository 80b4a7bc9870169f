//! The REST facade for `/api` and `/apis`, behind the authorization layer ([`crate::authz`]):
//! one codec over the protocol-free handlers ([`crate::handlers`]). It reads the HTTP request
//! (path → request info, query → options, `Accept`, `User-Agent`, `Content-Type` and body),
//! answers discovery, and hands every resource request to [`handlers::serve`], writing its
//! [`handlers::Reply`] back as HTTP.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, Method, StatusCode};
use serde_json::Value;

use crate::auth::UserInfo;
use crate::discovery;
use crate::handlers::{self, RequestBody};
use crate::kubelet;
use crate::negotiate::{self, Output};
use crate::registry::Registry;
use crate::request::{self, Target};
use crate::status::{ApiError, ApiResult};

/// What every API request shares.
pub struct ApiState {
    pub registry: Arc<Registry>,
    /// `host:port` clients reach this server at, for `/api`.
    pub server_address: String,
    pub metrics: crate::metrics::Metrics,
    /// How kubelets are reached (logs, exec, attach, port-forward, node proxy).
    pub kubelet: kubelet::KubeletClient,
    /// Service-account tokens: issued by `serviceaccounts/token`, checked by the bearer
    /// token layer and `TokenReview` ([`crate::authn`]).
    pub tokens: crate::authn::ServiceAccountTokens,
    /// `--anonymous-auth`, `--token-auth-file`, bootstrap tokens ([`crate::authn`]).
    pub authentication: crate::authn::AuthenticationOptions,
    /// Where ComponentStatus probes the scheduler and the controller-manager.
    pub component_ports: crate::component_status::ComponentPorts,
    /// The authorizer of every request ([`crate::authz`]), asked again by the access reviews.
    pub authorizer: Arc<dyn crate::authz::Authorizer>,
    /// Bearer tokens that authenticated lately ([`crate::authn::token_cache`]).
    pub token_cache: crate::authn::token_cache::TokenCache,
    /// The group/versions APIServices hand to extension servers ([`crate::aggregator`]).
    pub aggregator: Arc<crate::aggregator::Aggregator>,
    /// What requests are recorded, and where ([`crate::audit`]).
    pub auditor: Arc<crate::audit::Auditor>,
}

/// Axum fallback handler for every `/api` and `/apis` path.
pub async fn handle(State(state): State<Arc<ApiState>>, request: http::Request<Body>) -> Response {
    let started = std::time::Instant::now();
    // A group/version an APIService hands to an extension server goes there whole.
    if let Some(remote) = state.aggregator.route(request.uri().path()) {
        let user =
            request.extensions().get::<UserInfo>().cloned().unwrap_or_else(UserInfo::anonymous);
        let peer = request.extensions().get::<std::net::SocketAddr>().copied();
        let target =
            request.extensions().get::<request::RequestInfo>().and_then(|i| match &i.target {
                Some(Target::Resource(r)) => Some(r.clone()),
                _ => None,
            });
        let response =
            crate::aggregator::proxy::serve(&state.aggregator, &remote, &user, peer, request).await;
        if let Some(r) = target {
            record(&state, &r, response.status(), started);
        }
        return response;
    }
    let (mut parts, body) = request.into_parts();
    let user = parts.extensions.get::<UserInfo>().cloned().unwrap_or_else(UserInfo::anonymous);
    // Read once by the authorization layer, which has already let the request through.
    let info = parts
        .extensions
        .remove::<request::RequestInfo>()
        .unwrap_or_else(|| request::RequestInfo::read(&parts.method, &parts.uri));
    let query = info.query;
    let Some(target) = info.target else {
        return ApiError::path_not_found().into_response();
    };
    // What goes to a kubelet keeps its body unread (it streams through) and its connection
    // upgrade; everything else is read whole.
    let (body, raw) = match &target {
        Target::Resource(r) if crate::subresources::streams(r) => {
            let raw = kubelet::RawRequest {
                method: parts.method.clone(),
                headers: parts.headers.clone(),
                uri: parts.uri.clone(),
                body,
                upgrade: parts.extensions.remove::<hyper::upgrade::OnUpgrade>(),
                peer: parts.extensions.get::<std::net::SocketAddr>().copied(),
            };
            (bytes::Bytes::new(), Some(raw))
        }
        _ => match axum::body::to_bytes(body, negotiate::MAX_BODY + 1).await {
            Ok(b) => (b, None),
            Err(_) => {
                return ApiError::too_large("Request entity too large: limit is 3145728")
                    .into_response()
            }
        },
    };
    // Discovery answers from the resources served now.
    let resources = state.registry.resources();
    let remotes = state.aggregator.remote_versions();
    let resources = discovery::Served { resources: &resources, remotes: &remotes };
    let result = match target {
        Target::CoreVersions => discovery_response(
            &parts.headers,
            || Some(discovery::core_versions(&state.server_address)),
            Some(true),
            &resources,
        ),
        Target::Groups => discovery_response(
            &parts.headers,
            || Some(discovery::group_list(&resources)),
            Some(false),
            &resources,
        ),
        Target::Group(g) => discovery_response(
            &parts.headers,
            || discovery::group(&resources, &g),
            None,
            &resources,
        ),
        Target::GroupVersion { group, version } => discovery_response(
            &parts.headers,
            || discovery::resource_list(&resources, &group, &version),
            None,
            &resources,
        ),
        Target::NotFound => Err(ApiError::path_not_found()),
        Target::Resource(r) => {
            let response = resource(
                &state,
                &user,
                &parts.method,
                &parts.headers,
                &query,
                r.clone(),
                body,
                raw,
            )
            .await
            .unwrap_or_else(IntoResponse::into_response);
            record(&state, &r, response.status(), started);
            return response;
        }
    };
    result.unwrap_or_else(IntoResponse::into_response)
}

/// A resource request in the request metrics.
pub(crate) fn record(
    state: &ApiState,
    r: &request::ResourceRequest,
    code: StatusCode,
    started: std::time::Instant,
) {
    let scope = match (&r.namespace, &r.name) {
        (Some(_), _) => "namespace",
        (None, Some(_)) => "resource",
        (None, None) => "cluster",
    };
    state.metrics.record(
        r.verb,
        &r.group,
        &r.version,
        &r.resource,
        r.subresource.as_deref().unwrap_or(""),
        scope,
        code.as_u16(),
        started.elapsed(),
    );
}

fn discovery_response(
    headers: &HeaderMap,
    legacy: impl FnOnce() -> Option<Value>,
    aggregated_core: Option<bool>,
    resources: &discovery::Served<'_>,
) -> ApiResult<Response> {
    let accept = headers.get(http::header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if let (Some(core), Some(content_type)) = (aggregated_core, discovery::wants_aggregated(accept))
    {
        let body =
            rkube_apis::go_json::to_vec(&discovery::aggregated(resources, core, content_type));
        let mut response = (StatusCode::OK, body).into_response();
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
        return Ok(response);
    }
    let value = legacy().ok_or_else(ApiError::path_not_found)?;
    Ok(negotiate::respond(StatusCode::OK, &value, Output::Json, &[]).into_response())
}

/// A resource request: read into a protocol-free [`handlers::Request`], served, written back.
#[allow(clippy::too_many_arguments)]
async fn resource(
    state: &ApiState,
    user: &UserInfo,
    method: &Method,
    headers: &HeaderMap,
    query: &request::Query,
    target: request::ResourceRequest,
    body: bytes::Bytes,
    raw: Option<kubelet::RawRequest>,
) -> ApiResult<Response> {
    if target.group == crate::metrics_api::GROUP {
        // An aggregated API, not stored: read from the kubelets.
        return crate::metrics_api::serve(state, method, headers, query, &target).await;
    }
    // HEAD reads what GET reads; nothing else takes it.
    if *method == Method::HEAD && target.verb != "get" {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let text = |name: http::header::HeaderName| {
        headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_string()
    };
    let request = handlers::Request {
        user: user.clone(),
        target,
        options: query.clone(),
        accept: text(http::header::ACCEPT),
        user_agent: text(http::header::USER_AGENT),
        body: RequestBody { content_type: negotiate::content_type(headers), bytes: body },
    };
    match handlers::serve(state, &request, raw).await {
        Ok(reply) => Ok(reply.into_response()),
        Err(e) => Ok(e.negotiated_response(&request.accept)),
    }
}
