//! The subresources served under `<resource>/<name>/<subresource>`: a table of handlers, one
//! row each ([`TABLE`]), in the manner of kube-apiserver's subresource REST objects. A row
//! names the subresource, the resource it belongs to (or every resource that lists it, for
//! `status` and `scale`), the verbs it takes, and how it is served: answered here from the
//! whole request, or streamed to the node's kubelet with the body unread and the connection
//! upgradeable (`pods/log`, `exec`, `attach`, `portforward`, `proxy`, `nodes/proxy`:
//! [`crate::kubelet`]).

use std::future::Future;
use std::pin::Pin;

use http::StatusCode;
use rkube_apis::patch::{apply_patch, PatchSchema};
use rkube_apis::resources::ResourceInfo;
use serde_json::{json, Value};

use crate::api::ApiState;
use crate::handlers::{self as api, Reply, ReplyBody, Request};
use crate::kubelet;
use crate::negotiate::{self, Output};
use crate::object;
use crate::request::{Query, ResourceRequest};
use crate::status::{ApiError, ApiResult};

/// One subresource request, read whole.
pub struct Call<'a> {
    pub state: &'a ApiState,
    pub req: &'a Request,
    pub query: &'a Query,
    pub info: &'a ResourceInfo,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    /// The subresource's name (`status`, `ephemeralcontainers`, ...).
    pub subresource: &'a str,
    pub verb: &'static str,
    pub output: Output,
}

/// What a handler answers, later.
pub type Replied<'a> = Pin<Box<dyn Future<Output = ApiResult<Reply>> + Send + 'a>>;

/// How a subresource is served.
#[derive(Clone, Copy)]
pub enum Serve {
    /// Answered here from the whole request.
    Handler(for<'a> fn(Call<'a>) -> Replied<'a>),
    /// Streamed to the node's kubelet, with the connection (`crate::kubelet`).
    Kubelet(kubelet::Connect),
}

/// One row of the table.
pub struct Subresource {
    pub name: &'static str,
    /// The resource (group, plural) it belongs to; `None`: every resource that lists it.
    pub resource: Option<(&'static str, &'static str)>,
    /// The verbs it takes; empty: any (the kubelet decides).
    pub verbs: &'static [&'static str],
    pub serve: Serve,
}

const READ_WRITE: &[&str] = &["get", "update", "patch"];
const CREATE: &[&str] = &["create"];
const POD: Option<(&str, &str)> = Some(("", "pods"));

/// Every subresource rkube serves.
pub const TABLE: &[Subresource] = &[
    Subresource {
        name: "status",
        resource: None,
        verbs: READ_WRITE,
        serve: Serve::Handler(status),
    },
    Subresource {
        name: "approval",
        resource: Some(("certificates.k8s.io", "certificatesigningrequests")),
        verbs: READ_WRITE,
        serve: Serve::Handler(status),
    },
    Subresource {
        name: "ephemeralcontainers",
        resource: POD,
        verbs: READ_WRITE,
        serve: Serve::Handler(status),
    },
    Subresource {
        name: "finalize",
        resource: Some(("", "namespaces")),
        verbs: &["update"],
        serve: Serve::Handler(finalize),
    },
    Subresource { name: "scale", resource: None, verbs: READ_WRITE, serve: Serve::Handler(scale) },
    Subresource { name: "binding", resource: POD, verbs: CREATE, serve: Serve::Handler(binding) },
    Subresource {
        name: "eviction",
        resource: POD,
        verbs: CREATE,
        serve: Serve::Handler(crate::eviction::serve),
    },
    Subresource {
        name: "token",
        resource: Some(("", "serviceaccounts")),
        verbs: CREATE,
        serve: Serve::Handler(token),
    },
    Subresource { name: "log", resource: POD, verbs: &[], serve: Serve::Kubelet(kubelet::pod_log) },
    Subresource {
        name: "exec",
        resource: POD,
        verbs: &[],
        serve: Serve::Kubelet(kubelet::pod_stream),
    },
    Subresource {
        name: "attach",
        resource: POD,
        verbs: &[],
        serve: Serve::Kubelet(kubelet::pod_stream),
    },
    Subresource {
        name: "portforward",
        resource: POD,
        verbs: &[],
        serve: Serve::Kubelet(kubelet::pod_port_forward),
    },
    Subresource {
        name: "proxy",
        resource: POD,
        verbs: &[],
        serve: Serve::Kubelet(kubelet::pod_proxy_connect),
    },
    Subresource {
        name: "proxy",
        resource: Some(("", "services")),
        verbs: &[],
        serve: Serve::Kubelet(kubelet::service_proxy_connect),
    },
    Subresource {
        name: "proxy",
        resource: Some(("", "nodes")),
        verbs: &[],
        serve: Serve::Kubelet(kubelet::node_proxy_connect),
    },
];

/// The row serving `subresource` of the resource `group`/`plural`.
pub fn find(group: &str, plural: &str, subresource: &str) -> Option<&'static Subresource> {
    TABLE.iter().find(|s| {
        s.name == subresource && s.resource.is_none_or(|(g, p)| (g, p) == (group, plural))
    })
}

/// Admission of a CONNECT subresource (exec, attach, port-forward, proxy) before it goes on
/// to a kubelet, pod or Service ([`crate::admission::connect_options`]).
async fn admit_connect(
    state: &ApiState,
    req: &Request,
    info: &ResourceInfo,
    r: &ResourceRequest,
    sub: &str,
    uri: &http::Uri,
) -> ApiResult<()> {
    let name = r.name.as_deref().unwrap_or("");
    let Some((kind, mut options)) = crate::admission::connect_options(info, name, sub, uri)? else {
        return Ok(());
    };
    let requester = api::requester(&req.user);
    let write = crate::admission::Write {
        operation: rkube_admission::Operation::Connect,
        info,
        namespace: r.namespace.as_deref(),
        name,
        subresource: Some(sub),
        dry_run: false,
        user: Some(&requester),
        options: rkube_admission::OperationOptions::None,
    };
    state.registry.admit_connect(&write, kind, &mut options).await
}

/// True for the requests whose body streams to a kubelet (never buffered).
pub fn streams(r: &ResourceRequest) -> bool {
    r.name.is_some()
        && r.subresource
            .as_deref()
            .and_then(|sub| find(&r.group, &r.resource, sub))
            .is_some_and(|s| matches!(s.serve, Serve::Kubelet(_)))
}

/// Serves a subresource the resource lists (`r` is the request's target; the older
/// `bindings` resource is served as `pods/binding`). `raw` is the connection of a request
/// that streams to a kubelet (REST only).
pub async fn serve(
    state: &ApiState,
    req: &Request,
    info: &ResourceInfo,
    r: &ResourceRequest,
    sub: &str,
    raw: Option<kubelet::RawRequest>,
) -> ApiResult<Reply> {
    let not_allowed = || {
        ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )
    };
    let row = find(info.group, info.plural, sub).ok_or_else(not_allowed)?;
    match (row.serve, raw) {
        (Serve::Kubelet(connect), Some(raw)) => {
            admit_connect(state, req, info, r, sub, &raw.uri).await?;
            let response = connect(state, r, raw).await?;
            Ok(Reply {
                code: response.status(),
                content_type: "",
                body: ReplyBody::Connected(response),
                warnings: Vec::new(),
            })
        }
        (Serve::Kubelet(_), None) => Err(not_allowed()),
        (Serve::Handler(handler), _) => {
            if !row.verbs.contains(&r.verb) {
                return Err(not_allowed());
            }
            let call = Call {
                state,
                req,
                query: &req.options,
                info,
                namespace: r.namespace.as_deref(),
                name: r.name.as_deref().ok_or_else(ApiError::path_not_found)?,
                subresource: sub,
                verb: r.verb,
                output: req.output(info)?,
            };
            handler(call).await
        }
    }
}

/// `status` of any resource, `pods/ephemeralcontainers` and
/// `certificatesigningrequests/approval`: the object, with writes that change only that
/// part of it.
fn status(c: Call<'_>) -> Replied<'_> {
    Box::pin(async move {
        let registry = &c.state.registry;
        let (info, ns, name, sub) = (c.info, c.namespace, c.name, Some(c.subresource));
        match c.verb {
            "get" => {
                let obj = registry.get(info, ns, name).await?;
                Ok(api::object_response(StatusCode::OK, info, obj, c.output, c.query))
            }
            "update" => {
                let (obj, _) = api::decode_object(info, c.req)?;
                let options = api::write_options(c.req, "update")?;
                let updated = registry.update(info, ns, name, sub, obj, &options).await?;
                Ok(api::object_response(StatusCode::OK, info, updated, c.output, c.query))
            }
            _ => {
                // Admission sees who writes (a node's status writes are checked).
                let requester = Some(api::requester(&c.req.user));
                let (code, patched, warnings) =
                    api::patch(registry, c.req, info, ns, name, sub, requester).await?;
                Ok(api::object_response(code, info, patched, c.output, c.query)
                    .with_warnings(&warnings))
            }
        }
    })
}

/// `namespaces/finalize`: the only way to change a namespace's `spec.finalizers`.
fn finalize(c: Call<'_>) -> Replied<'_> {
    Box::pin(async move {
        let (obj, _) = api::decode_object(c.info, c.req)?;
        let options = api::write_options(c.req, "update")?;
        let updated = c
            .state
            .registry
            .update(c.info, c.namespace, c.name, Some("finalize"), obj, &options)
            .await?;
        Ok(api::object_response(StatusCode::OK, c.info, updated, c.output, c.query))
    })
}

/// `scale`: the object's replicas as an `autoscaling/v1 Scale`.
fn scale(c: Call<'_>) -> Replied<'_> {
    Box::pin(async move {
        let registry = &c.state.registry;
        let (info, ns, name) = (c.info, c.namespace, c.name);
        if c.verb == "get" {
            let obj = registry.get(info, ns, name).await?;
            let scale = to_scale(info, &obj);
            return Ok(negotiate::respond(StatusCode::OK, &scale, Output::Json, &[]));
        }
        let options = api::write_options(c.req, c.verb)?;
        let current = registry.get(info, ns, name).await?;
        let scale = if c.verb == "update" {
            c.req.body.decode()?
        } else {
            let (patch_type, patch) = api::decode_patch(&c.req.body)?;
            let schema = PatchSchema::builtin();
            let type_name = schema.definition_for("autoscaling", "v1", "Scale");
            apply_patch(
                patch_type,
                &to_scale(info, &current),
                &patch,
                type_name.map(|_| schema),
                type_name.unwrap_or(""),
            )
            .map_err(api::patch_error)?
        };
        let replicas = scale["spec"]["replicas"].as_i64().unwrap_or(0);
        if replicas < 0 {
            return Err(ApiError::invalid(
                "autoscaling",
                "Scale",
                name,
                vec![rkube_apis::validation::FieldError::invalid(
                    "spec.replicas",
                    &scale["spec"]["replicas"],
                    "must be greater than or equal to 0",
                )],
            ));
        }
        let precondition = object::resource_version(&scale).map(String::from);
        let updated = registry
            .modify(info, ns, name, None, &options, precondition, |old| {
                let mut new = old.clone();
                info.strategy.set_scale_replicas(&mut new, replicas);
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove("resourceVersion");
                }
                Ok(new)
            })
            .await?;
        Ok(negotiate::respond(StatusCode::OK, &to_scale(info, &updated), Output::Json, &[]))
    })
}

/// `pods/binding`: the scheduler's way to put a pod on a node.
fn binding(c: Call<'_>) -> Replied<'_> {
    Box::pin(async move {
        let binding = c.req.body.decode()?;
        let node = binding["target"]["name"].as_str().unwrap_or("").to_string();
        if node.is_empty() {
            return Err(ApiError::invalid(
                "",
                "Binding",
                c.name,
                vec![rkube_apis::validation::FieldError::required("target.name", "")],
            ));
        }
        let options = api::write_options(c.req, "create")?;
        let annotations = &binding["metadata"]["annotations"];
        c.state
            .registry
            .modify(c.info, c.namespace, c.name, Some("binding"), &options, None, |old| {
                bind(old, c.name, &node, annotations)
            })
            .await?;
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201});
        Ok(negotiate::respond(StatusCode::CREATED, &status, Output::Json, &[]))
    })
}

/// `serviceaccounts/token`: the TokenRequest API.
fn token(c: Call<'_>) -> Replied<'_> {
    Box::pin(async move {
        let ns = c.namespace.unwrap_or("default");
        let requester = api::requester(&c.req.user);
        let (answered, warnings) =
            crate::authn::token_request::create(c.state, &c.req.body, ns, c.name, &requester)
                .await?;
        let output = if matches!(c.output, Output::Yaml) { Output::Yaml } else { Output::Json };
        Ok(negotiate::respond(StatusCode::CREATED, &answered, output, &warnings))
    })
}

/// A pod bound to `node` by a `pods/binding` create, as upstream's binding storage does it:
/// the node set once (not while scheduling gates hold the pod back), the binding's
/// annotations copied, and the `PodScheduled` condition made true.
fn bind(old: &Value, name: &str, node: &str, annotations: &Value) -> ApiResult<Value> {
    let conflict = |message: String| ApiError::conflict("", "pods/binding", name, &message);
    if !old["metadata"]["deletionTimestamp"].is_null() {
        return Err(conflict(format!("pod {name} is being deleted, cannot be assigned to a host")));
    }
    if let Some(assigned) = old["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
        return Err(conflict(format!("pod {name} is already assigned to node {assigned:?}")));
    }
    if old["spec"]["schedulingGates"].as_array().is_some_and(|g| !g.is_empty()) {
        return Err(conflict(format!("pod {name} has non-empty .spec.schedulingGates")));
    }
    let mut new = old.clone();
    new["spec"]["nodeName"] = json!(node);
    if let Some(m) = new["metadata"].as_object_mut() {
        m.remove("resourceVersion");
    }
    if let Some(annotations) = annotations.as_object().filter(|a| !a.is_empty()) {
        if !new["metadata"]["annotations"].is_object() {
            new["metadata"]["annotations"] = json!({});
        }
        for (k, v) in annotations {
            new["metadata"]["annotations"][k] = v.clone();
        }
    }
    if !new["status"]["conditions"].is_array() {
        new["status"]["conditions"] = json!([]);
    }
    let conditions = new["status"]["conditions"].as_array_mut().expect("conditions list");
    let scheduled = json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null});
    match conditions.iter_mut().find(|c| c["type"] == "PodScheduled") {
        Some(c) => {
            let since = match c["status"] == "True" {
                true => c["lastTransitionTime"].clone(),
                false => json!(object::now()),
            };
            *c = scheduled;
            c["lastTransitionTime"] = since;
        }
        None => {
            conditions.push(scheduled);
            let c = conditions.last_mut().expect("just pushed");
            c["lastTransitionTime"] = json!(object::now());
        }
    }
    Ok(new)
}

/// The `autoscaling/v1 Scale` view of a scalable object (its strategy knows where it keeps
/// its replicas and selector).
fn to_scale(info: &ResourceInfo, obj: &Value) -> Value {
    let view = info.strategy.scale(obj);
    let mut status = json!({"replicas": view.status_replicas});
    // `omitempty`, as upstream's ScaleStatus.
    if !view.selector.is_empty() {
        status["selector"] = json!(view.selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": obj["metadata"]["name"],
            "namespace": obj["metadata"]["namespace"],
            "uid": obj["metadata"]["uid"],
            "resourceVersion": obj["metadata"]["resourceVersion"],
            "creationTimestamp": obj["metadata"]["creationTimestamp"],
        },
        "spec": {"replicas": view.spec_replicas},
        "status": status,
    })
}
