//! The protocol-free request pipeline for resources: a [`Request`] (who asks, the verb, the
//! resource, namespace, name and subresource, the options, the body and what representations
//! the answer may take) goes through the checks and the verb's handler over the generic
//! registry, and comes back as a [`Reply`] (a status code, the encoded answer or a stream of
//! watch events, warnings). The REST facade (`crate::api`, axum) is one codec over it: it
//! reads the HTTP request into a [`Request`] and writes the [`Reply`] back; another facade
//! (gRPC) is another codec over the same handlers. Subresources are a table of their own
//! (`crate::subresources`); resources answered rather than stored (reviews, bindings,
//! component statuses) are rows of [`ANSWERED`].

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::stream::BoxStream;
use http::{HeaderValue, StatusCode};
use rkube_apis::patch::{apply_patch, decode_patch_body, PatchError, PatchSchema, PatchType};
use rkube_apis::resources::{ResourceInfo, Resources};
use rkube_apis::selectors::{FieldSelector, LabelSelector};
use rkube_apis::strategy;
use serde_json::{json, Value};

use crate::api::ApiState;
use crate::auth::UserInfo;
use crate::kubelet;
use crate::negotiate::{self, Output};
use crate::object;
use crate::registry::{DeleteOptions, Filter, FilterView, ListOptions, Registry, WriteOptions};
use crate::request::{query_bool, Query, ResourceRequest};
use crate::status::{ApiError, ApiResult};
use crate::table::{self, IncludeObject};
use crate::watch::{self, WatchRequest};

/// One request for a resource, whatever the protocol it came by.
pub struct Request {
    pub user: UserInfo,
    /// The verb, group, version, resource, namespace, name and subresource.
    pub target: ResourceRequest,
    /// Upstream's options (`dryRun`, `fieldManager`, `labelSelector`, `resourceVersion`,
    /// `propagationPolicy`, ...), by their query parameter names.
    pub options: Query,
    /// The representations the client takes, as an HTTP `Accept` value (empty: JSON).
    pub accept: String,
    /// The client's name for itself (an HTTP `User-Agent`): the default field manager.
    pub user_agent: String,
    pub body: RequestBody,
}

/// The body of a request, in the encoding its media type names (decoded by the handler
/// that needs it, so that a request is refused for its path before its body).
#[derive(Default)]
pub struct RequestBody {
    /// `application/json`, `application/yaml`, the protobuf or patch media types; without
    /// parameters.
    pub content_type: String,
    pub bytes: Bytes,
}

impl RequestBody {
    /// The body as a JSON value, with the fields a JSON body has more than once.
    /// The request's audit event records it.
    pub fn decode_noting_duplicates(&self) -> ApiResult<(Value, Vec<String>)> {
        let decoded = negotiate::decode_body_noting_duplicates(&self.content_type, &self.bytes)?;
        crate::audit::request_object(&decoded.0);
        Ok(decoded)
    }

    /// The body as a JSON value.
    pub fn decode(&self) -> ApiResult<Value> {
        self.decode_noting_duplicates().map(|(value, _)| value)
    }
}

impl Request {
    /// The representation an answer of `info`'s kind takes (406 when the client takes none
    /// rkube writes for it: protobuf only for kinds with a protobuf message).
    pub fn output(&self, info: &ResourceInfo) -> ApiResult<Output> {
        let protobuf = rkube_apis::protobuf::supports(&info.api_version(), info.kind);
        negotiate::output(&self.accept, protobuf)
    }

    /// [`Request::output`] for a resource with no Table form (the reviews).
    pub fn output_without_table(&self, info: &ResourceInfo) -> ApiResult<Output> {
        let protobuf = rkube_apis::protobuf::supports(&info.api_version(), info.kind);
        negotiate::output_without_table(&self.accept, protobuf)
    }
}

/// The answer to a request, whatever the protocol it goes back by.
pub struct Reply {
    pub code: StatusCode,
    /// The media type of the body.
    pub content_type: &'static str,
    pub body: ReplyBody,
    pub warnings: Vec<String>,
}

/// What a reply carries.
pub enum ReplyBody {
    /// One encoded answer.
    Bytes(Bytes),
    /// A watch: one encoded event after another, until the watch ends.
    Stream(BoxStream<'static, Bytes>),
    /// A connection handed to a kubelet (logs, exec, attach, port-forward, proxy): the
    /// HTTP response as the kubelet gave it, upgrades included. Only the REST facade has
    /// such requests.
    Connected(Response),
}

impl Reply {
    /// An encoded answer.
    pub fn bytes(code: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
        Reply { code, content_type, body: ReplyBody::Bytes(body.into()), warnings: Vec::new() }
    }

    /// An error's `Status`, as an answer (for answers that carry warnings whatever happens).
    pub fn error(e: ApiError) -> Reply {
        Reply::bytes(e.code, "application/json", rkube_apis::go_json::to_vec(&e.to_status()))
    }

    pub fn with_warnings(mut self, warnings: &[String]) -> Reply {
        self.warnings.extend(warnings.iter().cloned());
        self
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let mut response = match self.body {
            ReplyBody::Bytes(bytes) => (self.code, bytes).into_response(),
            ReplyBody::Stream(stream) => {
                let body = axum::body::Body::from_stream(futures_util::StreamExt::map(
                    stream,
                    Ok::<Bytes, std::convert::Infallible>,
                ));
                let mut response = (self.code, body).into_response();
                // Each event goes out as it happens.
                response.headers_mut().insert(
                    http::header::CACHE_CONTROL,
                    HeaderValue::from_static("no-cache, private"),
                );
                response
            }
            ReplyBody::Connected(response) => return response,
        };
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, HeaderValue::from_static(self.content_type));
        for value in crate::warnings::header_values(&self.warnings) {
            if let Ok(v) = HeaderValue::from_str(&value) {
                response.headers_mut().append(http::header::WARNING, v);
            }
        }
        response
    }
}

/// A handler of a resource answered rather than stored.
type Answer = for<'a> fn(
    &'a ApiState,
    &'a Request,
    &'a ResourceInfo,
) -> Pin<Box<dyn Future<Output = ApiResult<Reply>> + Send + 'a>>;

/// The resources answered rather than stored, by group and resource: the reviews, the older
/// `bindings` and the component statuses (each of its verbs goes to its handler). The reviews
/// have no Table form, as upstream's review storages have no table convertor.
pub const ANSWERED: &[(&str, &str, Answer)] = &[
    ("authentication.k8s.io", "tokenreviews", token_review),
    ("authentication.k8s.io", "selfsubjectreviews", review),
    ("authorization.k8s.io", "selfsubjectaccessreviews", review),
    ("authorization.k8s.io", "subjectaccessreviews", review),
    ("authorization.k8s.io", "localsubjectaccessreviews", review),
    ("authorization.k8s.io", "selfsubjectrulesreviews", review),
    ("", "bindings", binding),
    ("", "componentstatuses", component_statuses),
];

fn token_review<'a>(
    state: &'a ApiState,
    req: &'a Request,
    info: &'a ResourceInfo,
) -> Pin<Box<dyn Future<Output = ApiResult<Reply>> + Send + 'a>> {
    Box::pin(async move {
        let output = req.output_without_table(info)?;
        let review = req.body.decode()?;
        let answered = crate::authn::token_review(state, review).await?;
        Ok(object_response(StatusCode::CREATED, info, answered, output, &req.options))
    })
}

fn review<'a>(
    state: &'a ApiState,
    req: &'a Request,
    info: &'a ResourceInfo,
) -> Pin<Box<dyn Future<Output = ApiResult<Reply>> + Send + 'a>> {
    Box::pin(async move {
        let output = req.output_without_table(info)?;
        let review = req.body.decode()?;
        let ns = req.target.namespace.as_deref();
        let answered =
            crate::reviews::answer(state.authorizer.as_ref(), info, &req.user, ns, review)?;
        Ok(object_response(StatusCode::CREATED, info, answered, output, &req.options))
    })
}

/// The older way to bind a pod: POST a Binding named after the pod.
fn binding<'a>(
    state: &'a ApiState,
    req: &'a Request,
    _info: &'a ResourceInfo,
) -> Pin<Box<dyn Future<Output = ApiResult<Reply>> + Send + 'a>> {
    Box::pin(async move {
        let binding = req.body.decode()?;
        let pod = binding["metadata"]["name"].as_str().unwrap_or("").to_string();
        let pods = Resources::builtin().get("", "v1", "pods").expect("pods");
        let target = ResourceRequest {
            verb: "create",
            group: String::new(),
            version: "v1".into(),
            namespace: req.target.namespace.clone(),
            resource: "pods".into(),
            name: Some(pod),
            subresource: Some("binding".into()),
        };
        crate::subresources::serve(state, req, pods, &target, "binding", None).await
    })
}

fn component_statuses<'a>(
    state: &'a ApiState,
    req: &'a Request,
    info: &'a ResourceInfo,
) -> Pin<Box<dyn Future<Output = ApiResult<Reply>> + Send + 'a>> {
    Box::pin(async move {
        let name = req.target.name.as_deref();
        crate::component_status::serve(state, req, info, name).await
    })
}

/// Serves one request for a resource: `raw` is the connection of a request that streams to
/// a kubelet (REST only). The warnings raised while it is served (admission's) go out with
/// its answer, a refusal's too.
pub async fn serve(
    state: &ApiState,
    req: &Request,
    raw: Option<kubelet::RawRequest>,
) -> ApiResult<Reply> {
    let (answer, warnings) = crate::warnings::recording(serve_resource(state, req, raw)).await;
    match answer {
        Ok(reply) => Ok(reply.with_warnings(&warnings)),
        // A Status as an answer carries no Retry-After: such errors keep their own way out.
        Err(e) if warnings.is_empty() || e.details.retry_after.is_some() => Err(e),
        Err(e) => {
            Ok(negotiate::error(e, negotiate::error_output(&req.accept)).with_warnings(&warnings))
        }
    }
}

async fn serve_resource(
    state: &ApiState,
    req: &Request,
    raw: Option<kubelet::RawRequest>,
) -> ApiResult<Reply> {
    let r = &req.target;
    let query = &req.options;
    let info = state
        .registry
        .resources()
        .get(&r.group, &r.version, &r.resource)
        .cloned()
        .ok_or_else(ApiError::path_not_found)?;
    let info = &info;
    // Namespaced resources need a namespace except for list and watch across all of them;
    // cluster-scoped ones take none.
    match (info.namespaced, &r.namespace) {
        (true, None) if !matches!(r.verb, "list" | "watch") => {
            return Err(ApiError::path_not_found())
        }
        (false, Some(_)) => return Err(ApiError::path_not_found()),
        _ => {}
    }
    check_path_names(&state.registry, info, r)?;
    if let Some(sub) = &r.subresource {
        if !info.has_subresource(sub) {
            return Err(ApiError::path_not_found());
        }
        return crate::subresources::serve(state, req, info, r, sub, raw).await;
    }
    if !info.has_verb(r.verb) {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    if let Some((_, _, answer)) =
        ANSWERED.iter().find(|(group, plural, _)| (*group, *plural) == (info.group, info.plural))
    {
        return answer(state, req, info).await;
    }
    let registry = &state.registry;
    let ns = r.namespace.as_deref();
    match r.verb {
        "get" => {
            let output = req.output(info)?;
            // A resourceVersion is a minimum the read must reflect (not older than); one the
            // store has not reached is waited for briefly, then refused, as upstream.
            if let Some(rv) = resource_version_param(query)?.filter(|&rv| rv > 0) {
                registry.cache(info)?.wait_for(rv).await?;
            }
            let obj = registry.get(info, ns, r.name.as_deref().unwrap_or("")).await?;
            Ok(object_response(StatusCode::OK, info, obj, output, query))
        }
        "list" => list(state, req, info, ns).await,
        "watch" => {
            let output = req.output(info)?;
            let filter = filter_for(info, query, r.name.as_deref())?;
            let timeout = query
                .get("timeoutSeconds")
                .and_then(|t| t.parse::<u64>().ok())
                .map(Duration::from_secs)
                .unwrap_or_else(default_watch_timeout);
            watch::watch(
                registry.clone(),
                info.clone(),
                r.namespace.clone(),
                WatchRequest {
                    resource_version: query.get("resourceVersion").cloned(),
                    allow_bookmarks: query_bool(query, "allowWatchBookmarks"),
                    send_initial_events: query
                        .get("sendInitialEvents")
                        .map(|_| query_bool(query, "sendInitialEvents")),
                    timeout,
                    output,
                    include: IncludeObject::parse(query.get("includeObject").map(String::as_str)),
                },
                filter,
            )
            .await
        }
        "create" => {
            crate::custom_resources::refuse_create_while_terminating(registry, info)?;
            let output = req.output(info)?;
            let (obj, warnings) = decode_object(info, req)?;
            let options = write_options(req, "create")?;
            let created = registry.create(info, ns, obj, &options).await?;
            Ok(object_response(StatusCode::CREATED, info, created, output, query)
                .with_warnings(&warnings))
        }
        "update" => {
            let output = req.output(info)?;
            let (obj, warnings) = decode_object(info, req)?;
            let name = r.name.as_deref().unwrap_or("");
            let options = write_options(req, "update")?;
            let updated = registry.update(info, ns, name, None, obj, &options).await?;
            Ok(object_response(StatusCode::OK, info, updated, output, query)
                .with_warnings(&warnings))
        }
        "patch" => {
            let output = req.output(info)?;
            let name = r.name.as_deref().unwrap_or("");
            let (code, patched, warnings) =
                patch(registry, req, info, ns, name, None, Some(requester(&req.user))).await?;
            Ok(object_response(code, info, patched, output, query).with_warnings(&warnings))
        }
        "delete" => {
            let output = req.output(info)?;
            let name = r.name.as_deref().unwrap_or("");
            let options = delete_options(req)?;
            let deleted = registry.delete(info, ns, name, &options).await?;
            if deleted.gone && !info.strategy.returns_deleted_object() {
                let status = json!({
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": {
                        "name": name,
                        "group": info.group,
                        "kind": info.plural,
                        "uid": object::uid(&deleted.object).unwrap_or(""),
                    },
                });
                // A Status has a message for every resource: protobuf if asked for at all.
                let output = negotiate::error_output(&req.accept);
                return Ok(negotiate::respond(StatusCode::OK, &status, output, &[]));
            }
            Ok(object_response(StatusCode::OK, info, deleted.object, output, query))
        }
        "deletecollection" => {
            let output = req.output(info)?;
            let filter = filter_for(info, query, None)?;
            let options = delete_options(req)?;
            let page = registry.list(info, ns, &ListOptions::default(), &filter).await?;
            let mut deleted = Vec::new();
            for obj in page.items {
                let name = object::name(&obj).unwrap_or("").to_string();
                let obj_ns = object::namespace(&obj).map(String::from);
                match registry.delete(info, obj_ns.as_deref(), &name, &options).await {
                    Ok(d) => deleted.push(d.object),
                    Err(e) if e.code == StatusCode::NOT_FOUND => {}
                    Err(e) => return Err(e),
                }
            }
            let list = json!({
                "kind": info.list_kind,
                "apiVersion": info.api_version(),
                "metadata": {"resourceVersion": page.resource_version.to_string()},
                "items": deleted,
            });
            let output = if matches!(output, Output::Protobuf) { output } else { Output::Json };
            Ok(negotiate::respond(StatusCode::OK, &list, output, &[]))
        }
        _ => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

/// The path's name and namespace become store keys, checked as upstream's registry and
/// storage check them: a name that is not a path segment is a 400; a namespace of `.` or
/// `..` makes a key the storage refuses (upstream's 500 without a reason), never a list of
/// nothing or of another directory.
fn check_path_names(
    registry: &Registry,
    info: &ResourceInfo,
    r: &ResourceRequest,
) -> ApiResult<()> {
    if let Some(name) = &r.name {
        let problems = path_segment_problems(name);
        if !problems.is_empty() {
            return Err(ApiError::bad_request(format!(
                "Name parameter invalid: {name:?}: {}",
                problems.join(";")
            )));
        }
    }
    if let Some(namespace) = r.namespace.as_deref().filter(|ns| matches!(*ns, "." | "..")) {
        let key = match &r.name {
            Some(name) => registry.storage(info)?.key(Some(namespace), name),
            None => registry.prefix(info, Some(namespace))?.trim_end_matches('/').to_string(),
        };
        let key = key.strip_prefix("/registry").unwrap_or(&key);
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "",
            format!("invalid key: {key:?}"),
        ));
    }
    Ok(())
}

/// What makes a name unusable as a path segment (upstream's `IsValidPathSegmentName`).
fn path_segment_problems(name: &str) -> Vec<String> {
    if matches!(name, "." | "..") {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// kube-apiserver's default watch timeout: between the minimum request timeout (30 min) and
/// twice that, at random, so that watches do not all end at once.
fn default_watch_timeout() -> Duration {
    use rand::RngExt;
    Duration::from_secs(rand::rng().random_range(1800..3600))
}

/// One object of `info`'s resource as `output` shows it.
pub(crate) fn object_response(
    status: StatusCode,
    info: &ResourceInfo,
    obj: Value,
    output: Output,
    query: &Query,
) -> Reply {
    match output {
        Output::Table { v1beta1 } => {
            let include = IncludeObject::parse(query.get("includeObject").map(String::as_str));
            let rv = object::resource_version(&obj).map(String::from);
            let t = table::table(
                info,
                std::slice::from_ref(&obj),
                include,
                v1beta1,
                true,
                rv,
                None,
                None,
            );
            negotiate::respond(status, &t, Output::Json, &[])
        }
        other => negotiate::respond(status, &other.shape(obj), other, &[]),
    }
}

async fn list(
    state: &ApiState,
    req: &Request,
    info: &ResourceInfo,
    ns: Option<&str>,
) -> ApiResult<Reply> {
    let query = &req.options;
    let output = req.output(info)?;
    let filter = filter_for(info, query, None)?;
    let options = ListOptions {
        limit: match query.get("limit") {
            Some(l) => Some(
                l.parse::<usize>()
                    .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
            ),
            None => None,
        },
        continue_token: query.get("continue").filter(|c| !c.is_empty()).cloned(),
        resource_version: query.get("resourceVersion").cloned(),
        resource_version_match: query
            .get("resourceVersionMatch")
            .filter(|m| !m.is_empty())
            .cloned(),
    };
    if options.continue_token.is_some()
        && options.resource_version.as_deref().is_some_and(|rv| !rv.is_empty())
    {
        return Err(ApiError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    // Whole lists come from the watch cache; pages (and exact revisions) from the store, so
    // that every page is consistent at one revision.
    let from_cache = options.limit.is_none_or(|l| l == 0)
        && options.continue_token.is_none()
        && options.resource_version_match.as_deref() != Some("Exact");
    if from_cache {
        return list_from_cache(state, query, info, ns, output, &options, &filter).await;
    }
    let page = state.registry.list(info, ns, &options, &filter).await?;
    let rv = page.resource_version.to_string();
    if let Output::Table { v1beta1 } = output {
        let include = IncludeObject::parse(query.get("includeObject").map(String::as_str));
        let t = table::table(
            info,
            &page.items,
            include,
            v1beta1,
            true,
            Some(rv),
            page.continue_token,
            page.remaining,
        );
        return Ok(negotiate::respond(StatusCode::OK, &t, Output::Json, &[]));
    }
    let mut metadata = json!({"resourceVersion": rv});
    if let Some(token) = page.continue_token {
        metadata["continue"] = json!(token);
    }
    if let Some(remaining) = page.remaining {
        metadata["remainingItemCount"] = json!(remaining);
    }
    let list = list_of(info, output, metadata, page.items);
    Ok(negotiate::respond(StatusCode::OK, &list, output, &[]))
}

/// A list of `items` as `output` shows it: the kind's list, or a `PartialObjectMetadataList`.
fn list_of(info: &ResourceInfo, output: Output, metadata: Value, items: Vec<Value>) -> Value {
    match output {
        Output::Metadata { v1beta1, .. } => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": negotiate::meta_api_version(v1beta1),
            "metadata": metadata,
            "items": items.into_iter().map(|i| output.shape(i)).collect::<Vec<_>>(),
        }),
        _ => {
            // As kube-apiserver's lists of built-in kinds: items without kind and apiVersion.
            let typed = rkube_apis::go_json::is_typed(&info.api_version(), info.kind);
            let items: Vec<Value> = match typed {
                true => items.into_iter().map(without_type_meta).collect(),
                false => items,
            };
            json!({
                "kind": info.list_kind,
                "apiVersion": info.api_version(),
                "metadata": metadata,
                "items": items,
            })
        }
    }
}

/// `json` without the leading `prefix` (an object's kind and apiVersion), when it has it:
/// the opening brace to write, then the rest, so that nothing is copied twice.
fn strip_type_meta<'a>(json: &'a [u8], prefix: Option<&[u8]>) -> (&'static [u8], Cow<'a, [u8]>) {
    match prefix.and_then(|p| json.strip_prefix(p)) {
        Some(rest) => (b"{", Cow::Borrowed(rest)),
        None => (b"", Cow::Borrowed(json)),
    }
}

fn without_type_meta(mut item: Value) -> Value {
    if let Some(map) = item.as_object_mut() {
        map.remove("kind");
        map.remove("apiVersion");
    }
    item
}

/// A whole list from the watch cache, once the cache has caught up with what the client
/// asked for: with no resourceVersion, everything written before the request (a consistent
/// read); with `0`, whatever the cache has; with N, at least N.
#[allow(clippy::too_many_arguments)]
async fn list_from_cache(
    state: &ApiState,
    query: &Query,
    info: &ResourceInfo,
    ns: Option<&str>,
    output: Output,
    options: &ListOptions,
    filter: &Filter,
) -> ApiResult<Reply> {
    let registry = &state.registry;
    let cache = registry.cache(info)?;
    match options.resource_version.as_deref().filter(|rv| !rv.is_empty()) {
        None => {
            cache.wait_fresh(registry.store.as_ref()).await?;
        }
        Some("0") => {}
        Some(_) => {
            if let Some(rv) = resource_version_param(query)? {
                cache.wait_for(rv).await?;
            }
        }
    }
    // A version a webhook converts is filtered once converted.
    let late = registry.filters_converted(info, filter)?;
    let selecting = if late { Filter::everything() } else { filter.clone() };
    let (objects, revision) = cache.list(&registry.prefix(info, ns)?, &selecting);
    let same_version = (info.group, info.version) == (cache.info().group, cache.info().version);
    // The cached bytes go out as they are (or their metadata alone).
    let raw_items = match output {
        _ if late => None,
        Output::Json if same_version && objects.iter().all(|o| o.in_storage_version) => {
            // Items of a built-in list carry no kind and apiVersion, as kube-apiserver's
            // (its items are converted without their TypeMeta): the cached bytes start with
            // them (Go's order), so they go out from just after.
            let type_meta = format!(
                "{{\"kind\":{},\"apiVersion\":{},",
                serde_json::Value::from(info.kind),
                serde_json::Value::from(info.api_version())
            );
            let typed = rkube_apis::go_json::is_typed(&info.api_version(), info.kind);
            let prefix = typed.then_some(type_meta.as_bytes());
            let items = objects.iter().map(|o| strip_type_meta(&o.json, prefix)).collect();
            Some((info.list_kind, info.api_version(), items))
        }
        Output::Metadata { v1beta1, protobuf: false } => objects
            .iter()
            .map(|o| {
                let json = negotiate::partial_object_metadata_json(&o.json, v1beta1)?;
                Some((&b""[..], Cow::Owned(json)))
            })
            .collect::<Option<Vec<_>>>()
            .map(|items| {
                (
                    "PartialObjectMetadataList",
                    negotiate::meta_api_version(v1beta1).to_string(),
                    items,
                )
            }),
        _ => None,
    };
    if let Some((kind, api_version, items)) = raw_items {
        // A list's Go order: kind, apiVersion, metadata, items (written here, not by the
        // Go-order writer, which would write the absent items as null).
        let size: usize = items.iter().map(|(open, item)| open.len() + item.len() + 1).sum();
        let mut body = Vec::with_capacity(256 + size);
        body.extend_from_slice(b"{\"kind\":");
        serde_json::to_writer(&mut body, kind).map_err(|e| ApiError::internal(e.to_string()))?;
        body.extend_from_slice(b",\"apiVersion\":");
        serde_json::to_writer(&mut body, &api_version)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        body.extend_from_slice(
            format!(",\"metadata\":{{\"resourceVersion\":\"{revision}\"}},\"items\":[").as_bytes(),
        );
        for (i, (open, item)) in items.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(open);
            body.extend_from_slice(item);
        }
        body.extend_from_slice(b"]}\n");
        return Ok(Reply::bytes(StatusCode::OK, "application/json", body));
    }
    // One conversion for the whole list (one review for a custom resource's webhook).
    let objects = objects.iter().map(|o| o.value()).collect();
    let items = registry.convert_selected(objects, info, filter, late).await?;
    let metadata = json!({"resourceVersion": revision.to_string()});
    Ok(list_response(info, output, query, metadata, items, Some(revision.to_string())))
}

/// A whole list of `items` in the form the client asked for: a Table, or the list kind with
/// `metadata` (a Table gets `resource_version`).
pub(crate) fn list_response(
    info: &ResourceInfo,
    output: Output,
    query: &Query,
    metadata: Value,
    items: Vec<Value>,
    resource_version: Option<String>,
) -> Reply {
    if let Output::Table { v1beta1 } = output {
        let include = IncludeObject::parse(query.get("includeObject").map(String::as_str));
        let t = table::table(info, &items, include, v1beta1, true, resource_version, None, None);
        return negotiate::respond(StatusCode::OK, &t, Output::Json, &[]);
    }
    let list = list_of(info, output, metadata, items);
    negotiate::respond(StatusCode::OK, &list, output, &[])
}

/// The `resourceVersion` parameter as a revision (`None` when unset or empty).
fn resource_version_param(query: &Query) -> ApiResult<Option<i64>> {
    match query.get("resourceVersion").filter(|rv| !rv.is_empty()) {
        None => Ok(None),
        Some(rv) => rv
            .parse()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("invalid resource version {rv:?}"))),
    }
}

/// The `labelSelector` and `fieldSelector` of a request, parsed (a syntax error is a 400).
pub(crate) fn selectors(
    query: &Query,
) -> ApiResult<(Option<LabelSelector>, Option<FieldSelector>)> {
    let labels = match query.get("labelSelector").filter(|s| !s.is_empty()) {
        Some(s) => Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?),
        None => None,
    };
    let fields = match query.get("fieldSelector").filter(|s| !s.is_empty()) {
        Some(s) => Some(FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?),
        None => None,
    };
    Ok((labels, fields))
}

/// The label and field selectors of a list or watch, checked: a field the resource does not
/// support is a 400, as upstream.
pub(crate) fn filter_for(
    info: &ResourceInfo,
    query: &Query,
    name: Option<&str>,
) -> ApiResult<Filter> {
    let (labels, fields) = selectors(query)?;
    // Each label, with the label of the stored objects' field values it reads.
    let mut stored_labels: Vec<(String, &'static str)> = Vec::new();
    if let Some(fields) = &fields {
        for requirement in fields.requirements() {
            let Some(stored) = strategy::storage_field_label(info, &requirement.field) else {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {}",
                    requirement.field
                )));
            };
            stored_labels.push((requirement.field.clone(), stored));
        }
    }
    if labels.is_none() && fields.is_none() && name.is_none() {
        return Ok(Filter::everything());
    }
    let name = name.map(String::from);
    Ok(Filter::new(move |view: &FilterView<'_>| {
        if name.as_deref().is_some_and(|n| n != view.name) {
            return false;
        }
        if labels.as_ref().is_some_and(|l| !l.matches(view.labels)) {
            return false;
        }
        if let Some(fields) = &fields {
            let found = |field: &str| {
                let stored = stored_labels.iter().find(|(l, _)| l == field).map(|(_, s)| *s)?;
                view.fields.iter().find(|(f, _)| *f == stored).map(|(_, v)| v.clone())
            };
            if !fields.matches_with(found) {
                return false;
            }
        }
        true
    }))
}

/// `dryRun`: `All` or nothing.
pub(crate) fn dry_run(query: &Query) -> ApiResult<bool> {
    match query.get("dryRun").map(String::as_str) {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "Invalid dry run value: {other:?}: supported values: \"All\""
        ))),
    }
}

/// The options of a create, update or patch: dry run, and the field manager the write is
/// recorded for in `metadata.managedFields` (`fieldManager`, else the client's User-Agent up
/// to its first `/`, as upstream names managers: `kubectl`, `kube-rs`, ...).
pub(crate) fn write_options(req: &Request, verb: &str) -> ApiResult<WriteOptions> {
    let query = &req.options;
    let options_kind = match verb {
        "create" => "CreateOptions",
        "update" => "UpdateOptions",
        _ => "PatchOptions",
    };
    let dry_run = dry_run(query)?;
    let field_manager = match query.get("fieldManager").filter(|m| !m.is_empty()) {
        Some(manager) => {
            crate::apply::validate_field_manager(options_kind, manager)?;
            manager.clone()
        }
        None => crate::apply::manager_from_user_agent(&req.user_agent),
    };
    let requester = Some(requester(&req.user));
    Ok(WriteOptions {
        dry_run,
        field_manager: Some(field_manager),
        requester,
        ..Default::default()
    })
}

/// The body of a create or update, decoded and normalized (see [`normalize_object`]).
pub(crate) fn decode_object(info: &ResourceInfo, req: &Request) -> ApiResult<(Value, Vec<String>)> {
    let (obj, duplicates) = req.body.decode_noting_duplicates()?;
    normalize_object(info, &req.options, obj, &duplicates)
}

/// Reads an object as its kind's type, the way kube-apiserver decodes into its Go types: a
/// wrong type is a 400, fields the type does not have are dropped, and reported as
/// `fieldValidation` says (Strict: 400; Warn, the default: warnings; Ignore: nothing).
pub(crate) fn normalize_object(
    info: &ResourceInfo,
    query: &Query,
    obj: Value,
    duplicates: &[String],
) -> ApiResult<(Value, Vec<String>)> {
    let mode = query.get("fieldValidation").map(String::as_str).unwrap_or("Warn");
    if !matches!(mode, "Ignore" | "Warn" | "Strict") {
        return Err(ApiError::bad_request(format!(
            "fieldValidation parameter unsupported: {mode}. Supported values: Ignore, Warn, Strict"
        )));
    }
    let (normalized, unknown) = read_as_type(info, obj)?;
    let messages: Vec<String> = duplicates
        .iter()
        .map(|f| format!("duplicate field {f:?}"))
        .chain(unknown.iter().map(|f| format!("unknown field {f:?}")))
        .collect();
    match mode {
        "Strict" if !messages.is_empty() => Err(ApiError::bad_request(format!(
            "{} in version {:?} cannot be handled as a {}: strict decoding error: {}",
            info.kind,
            info.version,
            info.kind,
            messages.join(", ")
        ))),
        "Warn" => Ok((normalized, messages)),
        _ => Ok((normalized, Vec::new())),
    }
}

/// `obj` read as its kind's type: the object as the type keeps it and the paths of the fields
/// the type does not have (`spec.foo`); a wrong type is a 400.
pub(crate) fn read_as_type(info: &ResourceInfo, mut obj: Value) -> ApiResult<(Value, Vec<String>)> {
    crate::registry::check_type(info, &obj)?;
    obj["apiVersion"] = json!(info.api_version());
    obj["kind"] = json!(info.kind);
    (info.normalize)(&obj).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version {:?} cannot be handled as a {}: {e}",
            info.kind, info.version, info.kind
        ))
    })
}

fn delete_options(req: &Request) -> ApiResult<DeleteOptions> {
    let (query, body) = (&req.options, &req.body.bytes);
    let mut options =
        DeleteOptions { requester: Some(requester(&req.user)), ..DeleteOptions::default() };
    if !body.is_empty() {
        let value: Value = serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!(
                "the body of the request could not be decoded as DeleteOptions: {e}"
            ))
        })?;
        read_delete_options(&value, &mut options);
    }
    if let Some(g) = query.get("gracePeriodSeconds") {
        options.grace_period_seconds = Some(
            g.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid gracePeriodSeconds {g:?}")))?,
        );
    }
    if let Some(p) = query.get("propagationPolicy") {
        options.propagation_policy = Some(p.clone());
    }
    if let Some(p) = &options.propagation_policy {
        if !matches!(p.as_str(), "Orphan" | "Background" | "Foreground") {
            return Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: {p:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
            )));
        }
    }
    options.dry_run |= dry_run(query)?;
    if crate::audit::scope::level() >= crate::audit::Level::Request {
        crate::audit::request_object(&delete_options_json(&req.target, &options));
    }
    Ok(options)
}

/// A delete's options as the `DeleteOptions` object upstream's audit event records.
fn delete_options_json(target: &ResourceRequest, options: &DeleteOptions) -> Value {
    let api_version = match target.group.as_str() {
        "" => target.version.clone(),
        group => format!("{group}/{}", target.version),
    };
    let mut out = json!({"kind": "DeleteOptions", "apiVersion": api_version});
    if let Some(seconds) = options.grace_period_seconds {
        out["gracePeriodSeconds"] = json!(seconds);
    }
    let mut preconditions = serde_json::Map::new();
    if let Some(uid) = &options.precondition_uid {
        preconditions.insert("uid".into(), json!(uid));
    }
    if let Some(rv) = &options.precondition_resource_version {
        preconditions.insert("resourceVersion".into(), json!(rv));
    }
    if !preconditions.is_empty() {
        out["preconditions"] = Value::Object(preconditions);
    }
    if let Some(policy) = &options.propagation_policy {
        out["propagationPolicy"] = json!(policy);
    }
    if options.dry_run {
        out["dryRun"] = json!(["All"]);
    }
    out
}

/// The fields of a `DeleteOptions` body (a delete's, or an Eviction's `deleteOptions`).
pub(crate) fn read_delete_options(value: &Value, options: &mut DeleteOptions) {
    options.grace_period_seconds = value["gracePeriodSeconds"].as_i64();
    options.propagation_policy = value["propagationPolicy"].as_str().map(String::from);
    options.precondition_uid = value["preconditions"]["uid"].as_str().map(String::from);
    options.precondition_resource_version =
        value["preconditions"]["resourceVersion"].as_str().map(String::from);
    if let Some(dry) = value["dryRun"].as_array() {
        options.dry_run = dry.iter().any(|d| d == "All");
    }
    if value["orphanDependents"] == json!(true) && options.propagation_policy.is_none() {
        options.propagation_policy = Some("Orphan".into());
    }
}

/// The patch type (from the Content-Type).
fn patch_type(body: &RequestBody) -> ApiResult<PatchType> {
    let content_type = &body.content_type;
    let patch_type = PatchType::from_content_type(content_type)
        .ok_or_else(|| ApiError::unsupported_media_type(content_type))?;
    if body.bytes.len() > negotiate::MAX_BODY {
        return Err(ApiError::too_large("Request entity too large: limit is 3145728"));
    }
    Ok(patch_type)
}

/// The patch type (from the Content-Type) and the patch.
pub(crate) fn decode_patch(body: &RequestBody) -> ApiResult<(PatchType, Value)> {
    let patch_type = patch_type(body)?;
    let patch = decode_patch_body(patch_type, &body.bytes).map_err(patch_error)?;
    crate::audit::request_patch(&patch);
    Ok((patch_type, patch))
}

pub(crate) fn patch_error(e: PatchError) -> ApiError {
    let code = StatusCode::from_u16(e.status_code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let reason = match e.reason() {
        "" => "InternalError",
        r => r,
    };
    ApiError::new(code, reason, e.status_message())
}

/// PATCH of an object or of its status.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn patch(
    registry: &Registry,
    req: &Request,
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    subresource: Option<&str>,
    requester: Option<strategy::Requester>,
) -> ApiResult<(StatusCode, Value, Vec<String>)> {
    let query = &req.options;
    let kind_of_patch = patch_type(&req.body)?;
    if kind_of_patch == PatchType::StrategicMerge && !info.strategy.accepts_strategic_merge_patch()
    {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: \
             application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        ));
    }
    let apply = matches!(kind_of_patch, PatchType::ApplyYaml | PatchType::ApplyCbor);
    crate::apply::check_patch_options(query, apply)?;
    if apply {
        let request =
            crate::apply::ApplyRequest { query, info, namespace: ns, name, subresource, requester };
        return crate::apply::serve(registry, &request, &req.body, |config| {
            crate::apply::normalize_config(info, query, config)
        })
        .await;
    }
    let (patch_type, patch) = decode_patch(&req.body)?;
    let schema = PatchSchema::builtin();
    let type_name = schema.definition_for(info.group, info.version, info.kind);
    let options = write_options(req, "patch")?;
    let warnings = std::sync::Mutex::new(Vec::new());
    let patched = registry
        .modify(info, ns, name, subresource, &options, None, |old| {
            let patched = apply_patch(
                patch_type,
                old,
                &patch,
                type_name.map(|_| schema),
                type_name.unwrap_or(""),
            )
            .map_err(patch_error)?;
            let (normalized, found) = normalize_object(info, query, patched, &[])?;
            *warnings.lock().expect("warnings") = found;
            Ok(normalized)
        })
        .await?;
    Ok((StatusCode::OK, patched, warnings.into_inner().expect("warnings")))
}

/// Who is asking, for the kinds whose strategy records it (a CSR's requester).
pub(crate) fn requester(user: &UserInfo) -> strategy::Requester {
    strategy::Requester {
        name: user.name.clone(),
        uid: user.uid.clone(),
        groups: user.groups.clone(),
        extra: user.extra.clone(),
    }
}
