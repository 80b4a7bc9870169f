//! The `rkube.api.v1.Api` service: each call's message is read into a protocol-free
//! [`handlers::Request`] (the verb and the resource, the options under their query
//! parameter names, the body and the representation asked for), authorized with the
//! server's authorizer exactly as the REST layer authorizes a path (same [`Attributes`],
//! same Forbidden Status), served by [`handlers::serve`], and its [`handlers::Reply`]
//! written back as an [`Object`], a stream of [`WatchEvent`]s or an error status
//! ([`super::errors`]). Nothing below decoding is gRPC's own.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use tonic::{Request, Response, Status};

use super::proto::api_server::Api;
use super::proto::{
    patch_request, DeleteCollectionRequest, DeleteOptions, DeleteRequest, Encoding, GetRequest,
    ListRequest, Object, PatchRequest, Preconditions, ResourceRef, WatchRequest, WriteRequest,
};
use super::{errors, WatchStream};
use crate::api::ApiState;
use crate::auth::UserInfo;
use crate::authz::{forbidden, Attributes};
use crate::handlers::{self, Reply, ReplyBody, RequestBody};
use crate::negotiate;
use crate::request::{Query, ResourceRequest, Target};
use crate::status::ApiError;

/// The Kubernetes protobuf media type.
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The service over the server's state.
pub struct ApiService {
    pub state: Arc<ApiState>,
}

/// What every call carries besides its message.
struct Call {
    user: UserInfo,
    user_agent: String,
    /// The caller's `grpc-timeout`.
    deadline: Option<Duration>,
}

impl Call {
    fn of<T>(request: &Request<T>) -> Call {
        let metadata = request.metadata();
        Call {
            user: request
                .extensions()
                .get::<UserInfo>()
                .cloned()
                .unwrap_or_else(UserInfo::anonymous),
            user_agent: metadata
                .get("user-agent")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string(),
            deadline: metadata
                .get("grpc-timeout")
                .and_then(|v| v.to_str().ok())
                .and_then(parse_timeout),
        }
    }
}

/// A `grpc-timeout` value: at most 8 digits and a unit (H, M, S, m, u, n).
pub fn parse_timeout(value: &str) -> Option<Duration> {
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// The media type of an encoding.
fn media_type(encoding: i32) -> &'static str {
    match Encoding::try_from(encoding) {
        Ok(Encoding::Protobuf) => PROTOBUF,
        _ => "application/json",
    }
}

/// The request's target, as REST's request info would read the same path.
fn target(verb: &'static str, r: Option<&ResourceRef>) -> Result<ResourceRequest, ApiError> {
    let r = r.ok_or_else(|| ApiError::bad_request("ref: Required value"))?;
    if r.version.is_empty() || r.resource.is_empty() {
        return Err(ApiError::bad_request(
            "ref: Required value: version and resource name the resource",
        ));
    }
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    // The namespace object is not in a namespace of its own, as on REST.
    let namespace =
        if r.group.is_empty() && r.resource == "namespaces" { None } else { some(&r.namespace) };
    Ok(ResourceRequest {
        verb,
        group: r.group.clone(),
        version: r.version.clone(),
        namespace,
        resource: r.resource.clone(),
        name: some(&r.name),
        subresource: some(&r.subresource),
    })
}

/// Options that are set, by their query parameter names.
#[derive(Default)]
struct Options(Query);

impl Options {
    fn text(mut self, name: &str, value: &str) -> Self {
        if !value.is_empty() {
            self.0.insert(name.to_string(), value.to_string());
        }
        self
    }

    fn flag(self, name: &str, value: bool) -> Self {
        if value {
            self.text(name, "true")
        } else {
            self
        }
    }

    fn dry_run(self, value: bool) -> Self {
        if value {
            self.text("dryRun", "All")
        } else {
            self
        }
    }
}

/// `DeleteOptions` as REST takes them: the preconditions in a body, the rest as options.
fn delete_options(options: Option<&DeleteOptions>, query: Options) -> (Options, RequestBody) {
    let Some(o) = options else { return (query, RequestBody::default()) };
    let mut query = query.text("propagationPolicy", &o.propagation_policy).dry_run(o.dry_run);
    if let Some(g) = o.grace_period_seconds {
        query = query.text("gracePeriodSeconds", &g.to_string());
    }
    let body = match &o.preconditions {
        Some(Preconditions { uid, resource_version }) => {
            let mut preconditions = serde_json::Map::new();
            if let Some(uid) = uid {
                preconditions.insert("uid".into(), uid.clone().into());
            }
            if let Some(rv) = resource_version {
                preconditions.insert("resourceVersion".into(), rv.clone().into());
            }
            let options = serde_json::json!({
                "kind": "DeleteOptions",
                "apiVersion": "v1",
                "preconditions": preconditions,
            });
            RequestBody {
                content_type: "application/json".into(),
                bytes: Bytes::from(serde_json::to_vec(&options).unwrap_or_default()),
            }
        }
        None => RequestBody::default(),
    };
    (query, body)
}

impl ApiService {
    /// Authorizes and serves one request; the reply as the handlers gave it.
    async fn serve(
        &self,
        call: &Call,
        target: Result<ResourceRequest, ApiError>,
        options: Options,
        encoding: i32,
        body: RequestBody,
    ) -> Result<Reply, Status> {
        let target = target.map_err(|e| errors::from_api(&e))?;
        let options = options.0;
        let resource = Target::Resource(target.clone());
        let attributes =
            Attributes::of_request(&call.user, &Method::POST, "", &options, Some(&resource));
        let verdict = self.state.authorizer.authorize(&attributes);
        if !verdict.is_allowed() {
            tracing::debug!(user = call.user.name, verb = target.verb, "Forbidden (gRPC)");
            return Err(errors::from_api(&forbidden(&attributes, &verdict.reason)));
        }
        if crate::subresources::streams(&target) {
            return Err(errors::from_api(&ApiError::method_not_allowed(
                "logs, exec, attach, port-forward and proxy are served over REST only",
            )));
        }
        if body.bytes.len() > negotiate::MAX_BODY {
            return Err(errors::from_api(&ApiError::too_large(
                "Request entity too large: limit is 3145728",
            )));
        }
        let started = std::time::Instant::now();
        let recorded = target.clone();
        let request = handlers::Request {
            user: call.user.clone(),
            target,
            options,
            accept: media_type(encoding).to_string(),
            user_agent: call.user_agent.clone(),
            body,
        };
        let served = handlers::serve(&self.state, &request, None);
        let reply = match call.deadline {
            Some(deadline) => tokio::time::timeout(deadline, served)
                .await
                .map_err(|_| Status::deadline_exceeded("the call's deadline passed"))?,
            None => served.await,
        };
        // In the request metrics as REST's requests are.
        let code = match &reply {
            Ok(reply) => reply.code,
            Err(e) => e.code,
        };
        crate::api::record(&self.state, &recorded, code, started);
        reply.map_err(|e| errors::from_api(&e))
    }

    /// A unary call: one object back.
    async fn unary(
        &self,
        call: Call,
        target: Result<ResourceRequest, ApiError>,
        options: Options,
        encoding: i32,
        body: RequestBody,
    ) -> Result<Response<Object>, Status> {
        let reply = self.serve(&call, target, options, encoding, body).await?;
        let ReplyBody::Bytes(data) = reply.body else {
            return Err(Status::internal("the handler answered a stream to a unary call"));
        };
        if reply.code.is_client_error() || reply.code.is_server_error() {
            return Err(errors::from_status_json(reply.code, &data));
        }
        Ok(Response::new(Object {
            data,
            content_type: reply.content_type.to_string(),
            warnings: reply.warnings,
        }))
    }

    async fn write(
        &self,
        call: Call,
        verb: &'static str,
        m: WriteRequest,
        subresource: Option<&str>,
    ) -> Result<Response<Object>, Status> {
        let mut target = target(verb, m.r#ref.as_ref());
        if let (Ok(t), Some(sub)) = (&mut target, subresource) {
            t.subresource = Some(sub.to_string());
        }
        let options = Options::default()
            .dry_run(m.dry_run)
            .text("fieldManager", &m.field_manager)
            .text("fieldValidation", &m.field_validation);
        let body =
            RequestBody { content_type: media_type(m.body_encoding).to_string(), bytes: m.body };
        self.unary(call, target, options, m.encoding, body).await
    }
}

#[tonic::async_trait]
impl Api for ApiService {
    async fn get(&self, request: Request<GetRequest>) -> Result<Response<Object>, Status> {
        let call = Call::of(&request);
        let m = request.into_inner();
        let options = Options::default().text("resourceVersion", &m.resource_version);
        let target = target("get", m.r#ref.as_ref());
        self.unary(call, target, options, m.encoding, RequestBody::default()).await
    }

    async fn list(&self, request: Request<ListRequest>) -> Result<Response<Object>, Status> {
        let call = Call::of(&request);
        let m = request.into_inner();
        let mut options = Options::default()
            .text("labelSelector", &m.label_selector)
            .text("fieldSelector", &m.field_selector)
            .text("continue", &m.continue_token)
            .text("resourceVersion", &m.resource_version)
            .text("resourceVersionMatch", &m.resource_version_match);
        if m.limit != 0 {
            options = options.text("limit", &m.limit.to_string());
        }
        let mut target = target("list", m.r#ref.as_ref());
        if let Ok(t) = &target {
            if t.name.is_some() {
                target = Err(ApiError::bad_request("ref.name: a list names no object"));
            }
        }
        self.unary(call, target, options, m.encoding, RequestBody::default()).await
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let call = Call::of(&request);
        let m = request.into_inner();
        let mut options = Options::default()
            .text("labelSelector", &m.label_selector)
            .text("fieldSelector", &m.field_selector)
            .text("resourceVersion", &m.resource_version)
            .text("resourceVersionMatch", &m.resource_version_match)
            .flag("allowWatchBookmarks", m.allow_watch_bookmarks);
        if let Some(initial) = m.send_initial_events {
            options = options.text("sendInitialEvents", if initial { "true" } else { "false" });
        }
        // The call's deadline bounds the watch as timeoutSeconds does.
        let deadline_seconds = call.deadline.map(|d| d.as_secs().max(1) as i64);
        let timeout = match (m.timeout_seconds, deadline_seconds) {
            (Some(t), Some(d)) => Some(t.min(d)),
            (t, d) => t.or(d),
        };
        if let Some(t) = timeout {
            options = options.text("timeoutSeconds", &t.to_string());
        }
        let target = target("watch", m.r#ref.as_ref());
        // The deadline bounds the start of the watch; the stream is bounded by its timeout.
        let reply = self.serve(&call, target, options, m.encoding, RequestBody::default()).await?;
        let stream = match reply.body {
            ReplyBody::Stream(s) => s,
            ReplyBody::Bytes(data) if reply.code.is_success() => {
                return Err(Status::internal(format!(
                    "the watch answered one object ({} bytes)",
                    data.len()
                )))
            }
            ReplyBody::Bytes(data) => return Err(errors::from_status_json(reply.code, &data)),
            ReplyBody::Connected(_) => return Err(Status::internal("a connected reply")),
        };
        Ok(Response::new(super::watch::events(stream, reply.content_type, call.deadline)))
    }

    async fn create(&self, request: Request<WriteRequest>) -> Result<Response<Object>, Status> {
        let call = Call::of(&request);
        self.write(call, "create", request.into_inner(), None).await
    }

    async fn update(&self, request: Request<WriteRequest>) -> Result<Response<Object>, Status> {
        let call = Call::of(&request);
        self.write(call, "update", request.into_inner(), None).await
    }

    async fn update_status(
        &self,
        request: Request<WriteRequest>,
    ) -> Result<Response<Object>, Status> {
        let call = Call::of(&request);
        self.write(call, "update", request.into_inner(), Some("status")).await
    }

    async fn patch(&self, request: Request<PatchRequest>) -> Result<Response<Object>, Status> {
        let call = Call::of(&request);
        let m = request.into_inner();
        let content_type = match patch_request::Type::try_from(m.r#type) {
            Ok(patch_request::Type::Json) => "application/json-patch+json",
            Ok(patch_request::Type::Merge) => "application/merge-patch+json",
            Ok(patch_request::Type::Strategic) => "application/strategic-merge-patch+json",
            Ok(patch_request::Type::Apply) => "application/apply-patch+yaml",
            Ok(patch_request::Type::Unspecified) | Err(_) => {
                return Err(errors::from_api(&ApiError::bad_request(format!(
                    "type: Unsupported value: {}: supported values: \"JSON\", \"MERGE\", \"STRATEGIC\", \"APPLY\"",
                    m.r#type
                ))))
            }
        };
        let mut options = Options::default()
            .dry_run(m.dry_run)
            .text("fieldManager", &m.field_manager)
            .text("fieldValidation", &m.field_validation);
        if let Some(force) = m.force {
            options = options.text("force", if force { "true" } else { "false" });
        }
        let body = RequestBody { content_type: content_type.to_string(), bytes: m.patch };
        let target = target("patch", m.r#ref.as_ref());
        self.unary(call, target, options, m.encoding, body).await
    }

    async fn delete(&self, request: Request<DeleteRequest>) -> Result<Response<Object>, Status> {
        let call = Call::of(&request);
        let m = request.into_inner();
        let (options, body) = delete_options(m.options.as_ref(), Options::default());
        let mut target = target("delete", m.r#ref.as_ref());
        if let Ok(t) = &target {
            if t.name.is_none() {
                target = Err(ApiError::bad_request(
                    "ref.name: Required value: use DeleteCollection to delete many",
                ));
            }
        }
        self.unary(call, target, options, m.encoding, body).await
    }

    async fn delete_collection(
        &self,
        request: Request<DeleteCollectionRequest>,
    ) -> Result<Response<Object>, Status> {
        let call = Call::of(&request);
        let m = request.into_inner();
        let query = Options::default()
            .text("labelSelector", &m.label_selector)
            .text("fieldSelector", &m.field_selector);
        let (options, body) = delete_options(m.options.as_ref(), query);
        let mut target = target("deletecollection", m.r#ref.as_ref());
        if let Ok(t) = &target {
            if t.name.is_some() {
                target = Err(ApiError::bad_request(
                    "ref.name: a collection names no object: use Delete",
                ));
            }
        }
        self.unary(call, target, options, m.encoding, body).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_grpc_timeouts() {
        assert_eq!(parse_timeout("5S"), Some(Duration::from_secs(5)));
        assert_eq!(parse_timeout("250m"), Some(Duration::from_millis(250)));
        assert_eq!(parse_timeout("2M"), Some(Duration::from_secs(120)));
        assert_eq!(parse_timeout("123456789S"), None);
        assert_eq!(parse_timeout("S"), None);
        assert_eq!(parse_timeout("5x"), None);
    }

    #[test]
    fn the_namespace_object_is_unscoped_as_on_rest() {
        let r = ResourceRef {
            version: "v1".into(),
            resource: "namespaces".into(),
            namespace: "ns".into(),
            name: "ns".into(),
            ..Default::default()
        };
        let t = target("get", Some(&r)).unwrap();
        assert_eq!((t.namespace, t.name.as_deref()), (None, Some("ns")));
        assert!(target("get", None).is_err());
    }
}
