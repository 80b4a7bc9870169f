//! The gRPC facade: the Kubernetes API as the `rkube.api.v1.Api` service
//! (`proto/rkube/v1/api.proto`), a second codec over the protocol-free handlers
//! ([`crate::handlers`]) beside REST's ([`crate::api`]). It is served on the REST port:
//! requests whose content type is `application/grpc` go to it ([`by_content_type`]), after
//! the same authentication and impersonation layers (a bearer token is an `authorization`
//! metadata entry, a client certificate is the connection's), but not through REST's
//! path-reading authorization layer: [`service`] authorizes each call once its message names
//! the resource, with the same authorizer. The standard health (`grpc.health.v1`) and
//! reflection (`grpc.reflection.v1`) services are served beside it, so `grpcurl` lists and
//! calls it without the proto file. [`client`] is a typed Rust client over it.

pub mod client;
pub mod errors;
pub mod service;
pub mod watch;

use std::sync::Arc;

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower::ServiceExt;

use crate::api::ApiState;

/// The generated messages, server and client.
pub mod proto {
    tonic::include_proto!("rkube.api.v1");

    /// The encoded file descriptor set of the proto, for the reflection service.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("rkube_api_v1_descriptor");
}

/// The full name of the service.
pub const SERVICE_NAME: &str = "rkube.api.v1.Api";

/// A watch's events, as the service streams them.
pub type WatchStream = std::pin::Pin<
    Box<dyn futures_util::Stream<Item = Result<proto::WatchEvent, tonic::Status>> + Send + 'static>,
>;

/// The largest message taken: a body REST takes (3 MiB) with room for the rest of the
/// message, so that a larger body is refused as REST refuses it (413, with its Status).
const MAX_MESSAGE: usize = 2 * crate::negotiate::MAX_BODY;

/// The gRPC services (the API, health, reflection) as a router.
pub async fn routes(state: Arc<ApiState>) -> Router {
    let api = proto::api_server::ApiServer::new(service::ApiService { state })
        .max_decoding_message_size(MAX_MESSAGE);
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<proto::api_server::ApiServer<service::ApiService>>().await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
        .build_v1();
    let mut routes = tonic::service::Routes::new(api).add_service(health_service);
    match reflection {
        Ok(reflection) => routes = routes.add_service(reflection),
        Err(error) => tracing::warn!(%error, "no gRPC reflection service"),
    }
    routes.prepare().into_axum_router()
}

/// True for a gRPC request (`application/grpc`, `application/grpc+proto`, ...).
pub fn is_grpc(request: &Request) -> bool {
    request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t == "application/grpc" || t.starts_with("application/grpc+"))
}

/// One router for both facades: gRPC requests to `grpc`, every other to `rest`.
pub fn by_content_type(grpc: Router, rest: Router) -> Router {
    Router::new().fallback(move |request: Request| {
        let target = if is_grpc(&request) { grpc.clone() } else { rest.clone() };
        async move {
            match target.oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            }
            .into_response()
        }
    })
}

/// A refusal made before the gRPC service (authentication's 401, the in-flight limit's
/// 429) as a gRPC status, so that a gRPC client reads its code and Status like any other.
pub async fn refusals_as_status(request: Request, next: axum::middleware::Next) -> Response {
    if !is_grpc(&request) {
        return next.run(request).await;
    }
    let response = next.run(request).await;
    let is_grpc_answer = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/grpc"));
    if is_grpc_answer || response.status().is_success() {
        return response;
    }
    let code = response.status();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap_or_default();
    errors::from_status_json(code, &body).into_http()
}
