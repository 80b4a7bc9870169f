//! The admission chain as the registry runs it: the attributes of a write, the cluster-state
//! reader the plugins read through (the watch caches), and their refusals as `Status` errors.
//!
//! The reader answers from the watch caches. A cache may lag the store by a moment, so a
//! miss is confirmed: the reader waits (3 s at most) for the cache to reach the store's
//! current revision and looks again, and asks the store itself only when the cache cannot
//! catch up (or the resource has no cache, as in the registry's own unit tests). An object
//! created before the request is therefore always found, as the registry's own
//! NamespaceLifecycle check guaranteed before it moved here.

use std::collections::BTreeMap;
use std::sync::Arc;

use http::StatusCode;
use rkube_admission::state::{field_of, JsonObject};
use rkube_admission::{
    AdmissionError, Attributes, ClusterState, Freshness, GroupResource, GroupVersionKind,
    GroupVersionResource, Object, Operation, OperationOptions, UserInfo,
};
use rkube_apis::resources::ResourceInfo;
use rkube_apis::selectors::LabelSelector;
use rkube_apis::strategy::Requester;
use rkube_store::RangeRequest;
use serde_json::Value;

use crate::cache::{CachedObject, Filter, FilterView};
use crate::object;
use crate::registry::Registry;
use crate::status::{ApiError, ApiResult, Cause};

/// What the registry knows of a write, for the plugins' attributes.
pub(crate) struct Write<'a> {
    pub operation: Operation,
    pub info: &'a ResourceInfo,
    pub namespace: Option<&'a str>,
    /// `""` for a create whose name is generated.
    pub name: &'a str,
    pub subresource: Option<&'a str>,
    pub dry_run: bool,
    pub user: Option<&'a Requester>,
    pub options: OperationOptions<'a>,
}

impl Write<'_> {
    fn attributes<'a>(
        &'a self,
        object: Option<&'a mut Value>,
        old_object: Option<&'a Value>,
    ) -> Attributes<'a> {
        let info = self.info;
        let user = self.user.map_or_else(UserInfo::default, |u| UserInfo {
            name: &u.name,
            uid: &u.uid,
            groups: &u.groups,
            extra: Some(&u.extra),
        });
        // A pod's binding is a Binding and a service account's token a TokenRequest (the
        // subresources whose kind is not their resource's).
        let (kind_group, kind) = match self.subresource {
            Some("binding") => (info.group, "Binding"),
            Some("token") => ("authentication.k8s.io", "TokenRequest"),
            Some("eviction") => ("policy", "Eviction"),
            _ => (info.group, info.kind),
        };
        Attributes {
            operation: self.operation,
            user,
            resource: GroupVersionResource {
                group: info.group,
                version: info.version,
                resource: info.plural,
            },
            subresource: self.subresource.unwrap_or(""),
            kind: GroupVersionKind { group: kind_group, version: info.version, kind },
            namespace: self.namespace.filter(|_| info.namespaced).unwrap_or(""),
            name: self.name,
            object,
            old_object,
            dry_run: self.dry_run,
            options: self.options,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        }
    }
}

impl Registry {
    /// The mutating plugins, on `object` as it will be stored (`None` for a delete).
    pub(crate) async fn admit(
        &self,
        write: &Write<'_>,
        object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> ApiResult<()> {
        let mut attributes = write.attributes(object, old);
        let admitted = self.admission.admit(&mut attributes, &CacheState { registry: self }).await;
        crate::warnings::add(attributes.warnings.take());
        crate::audit::admission_annotations(attributes.audit_annotations.take());
        Ok(admitted?)
    }

    /// The validating plugins, after the object passed validation.
    pub(crate) async fn validate_admission(
        &self,
        write: &Write<'_>,
        object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> ApiResult<()> {
        // A create's generated name exists by now: upstream's validating plugins see it
        // (its store generates the name between the mutating and the validating plugins).
        let generated = object.as_deref().and_then(object::name).unwrap_or("").to_string();
        let mut attributes = write.attributes(object, old);
        if attributes.name.is_empty() {
            attributes.name = &generated;
        }
        let state = CacheState { registry: self };
        let validated = async {
            for guard in &self.guards {
                guard.validate(&attributes, &state).await?;
            }
            self.admission.validate(&attributes, &state).await
        }
        .await;
        crate::warnings::add(attributes.warnings.take());
        crate::audit::admission_annotations(attributes.audit_annotations.take());
        Ok(validated?)
    }
}

/// The options object of each CONNECT subresource (upstream's `NewConnectOptions`): the
/// resource (group, plural), the subresource, the options' kind, and whether the rest of the
/// path after the subresource is the options' `path`.
const CONNECT_OPTIONS: &[(&str, &str, &str, &str, bool)] = &[
    ("", "pods", "exec", "PodExecOptions", false),
    ("", "pods", "attach", "PodAttachOptions", false),
    ("", "pods", "portforward", "PodPortForwardOptions", false),
    ("", "pods", "proxy", "PodProxyOptions", true),
    ("", "services", "proxy", "ServiceProxyOptions", true),
    ("", "nodes", "proxy", "NodeProxyOptions", true),
];

/// The options a CONNECT request's query (and, for `proxy`, its path after the
/// subresource) give, as the versioned object upstream's admission sees: fields that are
/// false or empty left out, as Go's `omitempty` does. `None` for a subresource that is not
/// a CONNECT (`pods/log` is a read).
pub(crate) fn connect_options(
    info: &ResourceInfo,
    name: &str,
    subresource: &str,
    uri: &http::Uri,
) -> ApiResult<Option<(&'static str, Value)>> {
    let Some(&(_, _, _, kind, subpath)) = CONNECT_OPTIONS
        .iter()
        .find(|(g, r, s, _, _)| (*g, *r, *s) == (info.group, info.plural, subresource))
    else {
        return Ok(None);
    };
    let params = crate::kubelet::Params::parse(uri.query());
    let mut options = serde_json::Map::new();
    options.insert("kind".into(), Value::from(kind));
    options.insert("apiVersion".into(), Value::from("v1"));
    match kind {
        "PodExecOptions" | "PodAttachOptions" => {
            for flag in ["stdin", "stdout", "stderr", "tty"] {
                if params.flag(flag) {
                    options.insert(flag.into(), Value::Bool(true));
                }
            }
            if let Some(container) = params.first("container").filter(|c| !c.is_empty()) {
                options.insert("container".into(), Value::from(container));
            }
            if kind == "PodExecOptions" {
                let command: Vec<Value> = params.all("command").map(Value::from).collect();
                options.insert("command".into(), Value::Array(command));
            }
        }
        "PodPortForwardOptions" => {
            let ports = crate::kubelet::forward_ports(&params)?;
            if !ports.is_empty() {
                options.insert("ports".into(), Value::from(ports));
            }
        }
        _ => {}
    }
    // Upstream's subpath: the path's parts after the subresource, with a leading slash, and
    // the request's trailing slash kept.
    if subpath {
        // The first `/<resource>/<name>/<subresource>/` is the request's own.
        let marker = format!("/{}/{name}/{subresource}/", info.plural);
        let mut path = match uri.path().split_once(&marker) {
            Some((_, "")) | None => String::new(),
            Some((_, rest)) => format!("/{rest}"),
        };
        if uri.path().ends_with('/') && !path.ends_with('/') {
            path.push('/');
        }
        if !path.is_empty() {
            options.insert("path".into(), Value::from(path));
        }
    }
    Ok(Some((kind, Value::Object(options))))
}

impl Registry {
    /// A CONNECT (exec, attach, port-forward, proxy) through the admission chain before it
    /// goes on, as upstream's connect handler: the mutating then the validating plugins, on
    /// the request's options object ([`connect_options`]), of the options' kind.
    pub(crate) async fn admit_connect(
        &self,
        write: &Write<'_>,
        kind: &'static str,
        options: &mut Value,
    ) -> ApiResult<()> {
        let state = CacheState { registry: self };
        let mut attributes = write.attributes(Some(options), None);
        attributes.kind.kind = kind;
        let admitted = self.admission.admit(&mut attributes, &state).await;
        crate::warnings::add(attributes.warnings.take());
        crate::audit::admission_annotations(attributes.audit_annotations.take());
        admitted?;
        let validated = self.admission.validate(&attributes, &state).await;
        crate::warnings::add(attributes.warnings.take());
        crate::audit::admission_annotations(attributes.audit_annotations.take());
        Ok(validated?)
    }
}

/// The cluster as the plugins read it: the registry's watch caches.
pub struct CacheState<'a> {
    pub registry: &'a Registry,
}

impl CacheState<'_> {
    fn storage(&self, resource: GroupResource<'_>) -> Result<Arc<ResourceInfo>, AdmissionError> {
        let resources = self.registry.resources();
        let info = resources.storage_version_of(resource.group, resource.resource).cloned();
        info.ok_or_else(|| {
            AdmissionError::Internal(format!(
                "no resource {}/{}",
                resource.group, resource.resource
            ))
        })
    }

    /// Whether the cache has caught up with the store as it is now.
    async fn fresh(&self, info: &ResourceInfo) -> bool {
        match self.registry.cache(info) {
            Ok(cache) => cache.wait_fresh(self.registry.store.as_ref()).await.is_ok(),
            Err(_) => false,
        }
    }

    /// Objects under `prefix` read from the store itself, filtered.
    async fn list_store(
        &self,
        prefix: &str,
        keep: impl Fn(&JsonObject) -> bool,
    ) -> Result<Vec<Arc<dyn Object>>, AdmissionError> {
        let page =
            self.registry.store.range(RangeRequest::prefix(prefix)).await.map_err(internal)?;
        let mut objects: Vec<Arc<dyn Object>> = Vec::new();
        for kv in &page.kvs {
            let mut value: Value = serde_json::from_slice(&kv.value).map_err(internal)?;
            object::set_resource_version(&mut value, kv.mod_revision);
            let found = JsonObject::new(value);
            if keep(&found) {
                objects.push(Arc::new(found));
            }
        }
        Ok(objects)
    }

    async fn list_where(
        &self,
        resource: GroupResource<'_>,
        namespace: Option<&str>,
        freshness: Freshness,
        filter: Filter,
        keep: impl Fn(&JsonObject) -> bool,
    ) -> Result<Vec<Arc<dyn Object>>, AdmissionError> {
        let info = self.storage(resource)?;
        let prefix = info.namespace_prefix(namespace);
        let fresh = match freshness {
            Freshness::Latest => self.fresh(&info).await,
            Freshness::Cached => true,
        };
        match self.registry.cache(&info) {
            Ok(cache) if fresh => Ok(cache
                .list(&prefix, &filter)
                .0
                .into_iter()
                .map(|o| o as Arc<dyn Object>)
                .collect()),
            _ => self.list_store(&prefix, keep).await,
        }
    }
}

fn internal(e: impl std::fmt::Display) -> AdmissionError {
    AdmissionError::Internal(format!("cannot read the cluster state: {e}"))
}

#[async_trait::async_trait]
impl ClusterState for CacheState<'_> {
    async fn get(
        &self,
        resource: GroupResource<'_>,
        namespace: Option<&str>,
        name: &str,
        freshness: Freshness,
    ) -> Result<Option<Arc<dyn Object>>, AdmissionError> {
        let info = self.storage(resource)?;
        let key = info.key(namespace, name);
        if let Ok(cache) = self.registry.cache(&info) {
            if freshness == Freshness::Cached {
                if let Some(found) = cache.get(&key) {
                    return Ok(Some(found));
                }
            }
            // A miss (or a read that must be recent): once the cache has caught up, it knows.
            if self.fresh(&info).await {
                return Ok(cache.get(&key).map(|o| o as Arc<dyn Object>));
            }
        }
        let (kv, _) = self.registry.store.get(&key, None).await.map_err(internal)?;
        let Some(kv) = kv else { return Ok(None) };
        let mut value: Value = serde_json::from_slice(&kv.value).map_err(internal)?;
        object::set_resource_version(&mut value, kv.mod_revision);
        Ok(Some(Arc::new(JsonObject::new(value))))
    }

    async fn list(
        &self,
        resource: GroupResource<'_>,
        namespace: Option<&str>,
        selector: &LabelSelector,
        freshness: Freshness,
    ) -> Result<Vec<Arc<dyn Object>>, AdmissionError> {
        let matching = selector.clone();
        let filter = Filter::new(move |o: &FilterView<'_>| matching.matches(o.labels));
        self.list_where(resource, namespace, freshness, filter, |o| selector.matches(o.labels()))
            .await
    }

    async fn update_status(
        &self,
        resource: GroupResource<'_>,
        object: &Value,
    ) -> Result<Option<Arc<dyn Object>>, AdmissionError> {
        let info = self.storage(resource)?;
        let namespace = object::meta_str(object, "namespace").filter(|n| !n.is_empty());
        let name = object::name(object).unwrap_or("").to_string();
        // The server's own write (as upstream's quota admission writes through its loopback
        // client): admitted as a status update of no user, recorded for no field manager.
        let written = self
            .registry
            .update(&info, namespace, &name, Some("status"), object.clone(), &Default::default())
            .await;
        match written {
            Ok(mut value) => {
                // The registry answers in the storage version already.
                if value["metadata"]["resourceVersion"].is_null() {
                    return Ok(None);
                }
                rkube_apis::go_json::drop_nulls(&mut value);
                Ok(Some(Arc::new(JsonObject::new(value))))
            }
            Err(e) if e.code == StatusCode::CONFLICT || e.code == StatusCode::NOT_FOUND => Ok(None),
            Err(e) => Err(AdmissionError::Internal(e.message)),
        }
    }

    async fn list_by_field(
        &self,
        resource: GroupResource<'_>,
        namespace: Option<&str>,
        field: &str,
        value: &str,
        freshness: Freshness,
    ) -> Result<Vec<Arc<dyn Object>>, AdmissionError> {
        let (wanted_field, wanted) = (field.to_string(), value.to_string());
        let filter = Filter::new(move |o: &FilterView<'_>| {
            o.fields.iter().any(|(f, v)| *f == wanted_field && *v == wanted)
        });
        self.list_where(resource, namespace, freshness, filter, |o| {
            o.field(field).as_deref() == Some(value)
        })
        .await
    }
}

/// A cached object, read without decoding where the cache already holds the answer.
impl Object for CachedObject {
    fn name(&self) -> &str {
        &self.name
    }

    fn namespace(&self) -> &str {
        &self.namespace
    }

    fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }

    fn field(&self, path: &str) -> Option<String> {
        match self.fields.iter().find(|(f, _)| *f == path) {
            Some((_, v)) => Some(v.clone()),
            None => field_of(&CachedObject::value(self), path),
        }
    }

    fn resource_version(&self) -> String {
        self.revision.to_string()
    }

    fn value(&self) -> Value {
        CachedObject::value(self)
    }
}

/// A refusal, as the `Status` upstream answers it with.
impl From<AdmissionError> for ApiError {
    fn from(e: AdmissionError) -> ApiError {
        let message = e.to_string();
        match e {
            AdmissionError::Forbidden { group, resource, name, causes, .. } => {
                let mut error = ApiError::new(StatusCode::FORBIDDEN, "Forbidden", message);
                // Upstream leaves out an empty name (a create whose name is generated).
                error.details.name = Some(name).filter(|n| !n.is_empty());
                error.details.group = Some(group);
                error.details.kind = Some(resource);
                error.details.causes = causes
                    .into_iter()
                    .map(|c| Cause { reason: c.reason, message: c.message, field: c.field })
                    .collect();
                error
            }
            AdmissionError::Refused(refusal) => {
                let r = *refusal;
                let code = StatusCode::from_u16(r.code).unwrap_or(StatusCode::FORBIDDEN);
                let mut error = ApiError::new(code, r.reason, message);
                error.details.name = Some(r.name).filter(|n| !n.is_empty());
                error.details.group = Some(r.group);
                error.details.kind = Some(r.resource);
                error.details.causes = r
                    .causes
                    .into_iter()
                    .map(|c| Cause { reason: c.reason, message: c.message, field: c.field })
                    .collect();
                error
            }
            AdmissionError::Invalid { group, kind, name, causes } => {
                ApiError::invalid(&group, &kind, &name, causes)
            }
            AdmissionError::NotFound { group, resource, name } => {
                ApiError::not_found(&group, &resource, &name)
            }
            AdmissionError::BadRequest(m) => ApiError::bad_request(m),
            AdmissionError::Internal(m) => ApiError::internal(m),
            AdmissionError::Status(status) => {
                let rkube_admission::error::Status { code, reason, details, .. } = *status;
                let code = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                // A webhook's reason is any text: kept once per distinct text.
                let mut error =
                    ApiError::new(code, rkube_apis::resources::intern(&reason), message);
                let text = |field: &str| details[field].as_str().map(String::from);
                error.details.name = text("name");
                error.details.group = text("group");
                error.details.kind = text("kind");
                error.details.retry_after = details["retryAfterSeconds"].as_u64().map(|s| s as u32);
                error.details.causes = details["causes"]
                    .as_array()
                    .map(|causes| {
                        causes
                            .iter()
                            .map(|c| Cause {
                                reason: rkube_apis::resources::intern(
                                    c["reason"].as_str().unwrap_or(""),
                                ),
                                message: c["message"].as_str().unwrap_or("").to_string(),
                                field: c["field"].as_str().unwrap_or("").to_string(),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                error
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{DeleteOptions, WriteOptions};
    use rkube_apis::resources::Resources;
    use serde_json::json;

    async fn start(name: &str, chain: rkube_admission::Chain) -> (Registry, std::path::PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("rkube-admission-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = rkube_store::SqliteStore::open(&dir, Default::default()).unwrap();
        let ranges = crate::services::ServiceRanges::parse("10.43.0.0/16", (30000, 32767));
        let mut registry = Registry::new(Arc::new(store), ranges.unwrap());
        registry.admission = chain;
        registry.start_caches().await.unwrap();
        (registry, dir)
    }

    fn info(group: &str, plural: &str) -> &'static ResourceInfo {
        Resources::builtin().storage_version_of(group, plural).unwrap()
    }

    #[test]
    fn connect_requests_give_upstreams_options_objects() {
        let options = |plural: &str, sub: &str, uri: &str| {
            connect_options(info("", plural), "p", sub, &uri.parse().unwrap()).unwrap()
        };
        let attach =
            "/api/v1/namespaces/ns/pods/p/attach?container=c1&stdin=true&stdout=1&tty=false";
        assert_eq!(
            options("pods", "attach", attach),
            Some((
                "PodAttachOptions",
                json!({"kind": "PodAttachOptions", "apiVersion": "v1",
                                             "stdin": true, "stdout": true, "container": "c1"})
            ))
        );
        let exec = "/api/v1/namespaces/ns/pods/p/exec?command=sh&command=-c&stderr=true";
        assert_eq!(
            options("pods", "exec", exec).unwrap().1,
            json!({"kind": "PodExecOptions", "apiVersion": "v1", "stderr": true,
                   "command": ["sh", "-c"]})
        );
        let forward = "/api/v1/namespaces/ns/pods/p/portforward?ports=80,443";
        assert_eq!(options("pods", "portforward", forward).unwrap().1["ports"], json!([80, 443]));
        // The subpath after `proxy`, with a leading slash and the request's trailing one.
        let proxy = |uri: &str| options("pods", "proxy", uri).unwrap().1["path"].clone();
        assert_eq!(proxy("/api/v1/namespaces/ns/pods/p/proxy/a/b"), json!("/a/b"));
        assert_eq!(proxy("/api/v1/namespaces/ns/pods/p/proxy/a/"), json!("/a/"));
        assert_eq!(proxy("/api/v1/namespaces/ns/pods/p/proxy/"), json!("/"));
        assert_eq!(proxy("/api/v1/namespaces/ns/pods/p/proxy"), Value::Null);
        let node = options("nodes", "proxy", "/api/v1/nodes/p/proxy/metrics").unwrap();
        assert_eq!(
            node,
            (
                "NodeProxyOptions",
                json!({"kind": "NodeProxyOptions",
                                                      "apiVersion": "v1", "path": "/metrics"})
            )
        );
        // `pods/log` is a read, not a CONNECT.
        assert_eq!(options("pods", "log", "/api/v1/namespaces/ns/pods/p/log"), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_reader_finds_what_the_store_had_before_the_read() {
        let (registry, dir) = start("reader", rkube_admission::Chain::with_defaults()).await;
        let namespaces = info("", "namespaces");
        let state = CacheState { registry: &registry };
        let ns = GroupResource::new("", "namespaces");
        for i in 0..20 {
            // Straight into the store: the cache learns of it only through its watch.
            let name = format!("ns{i}");
            let body = json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "labels": {"n": i.to_string()}},
                "status": {"phase": "Active"}});
            let bytes = serde_json::to_vec(&body).unwrap();
            registry.store.create(&namespaces.key(None, &name), bytes.into()).await.unwrap();
            let got = state.get(ns, None, &name, Freshness::Cached).await.unwrap();
            assert_eq!(
                got.and_then(|n| n.field("status.phase")).as_deref(),
                Some("Active"),
                "{name}"
            );
        }
        assert!(state.get(ns, None, "nope", Freshness::Cached).await.unwrap().is_none());
        let selector = LabelSelector::parse("n in (3,4)").unwrap();
        let listed = state.list(ns, None, &selector, Freshness::Latest).await.unwrap();
        let names: Vec<&str> = listed.iter().map(|o| o.name()).collect();
        assert_eq!(names, ["ns3", "ns4"]);
        let active = state.list_by_field(ns, None, "status.phase", "Active", Freshness::Latest);
        assert_eq!(active.await.unwrap().len(), 20);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn namespace_lifecycle_refuses_as_upstream_and_can_be_disabled() {
        let (registry, dir) = start("lifecycle", rkube_admission::Chain::with_defaults()).await;
        let (namespaces, configmaps) = (info("", "namespaces"), info("", "configmaps"));
        let options = WriteOptions::default();
        for name in ["default", "closing"] {
            let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            registry.create(namespaces, None, ns, &options).await.unwrap();
        }
        // Terminating while its finalizer (the namespace controller's) stays.
        registry.delete(namespaces, None, "closing", &DeleteOptions::default()).await.unwrap();
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let refused =
            registry.create(configmaps, Some("closing"), cm.clone(), &options).await.unwrap_err();
        assert_eq!(refused.code, StatusCode::FORBIDDEN);
        assert_eq!(
            refused.message,
            "configmaps \"c\" is forbidden: unable to create new content in namespace closing because it is being terminated"
        );
        let status = refused.to_status();
        assert_eq!(
            status["details"],
            json!({"name": "c", "kind": "configmaps", "causes": [{"reason": "NamespaceTerminating",
                "message": "namespace closing is being terminated", "field": "metadata.namespace"}]})
        );
        let missing = registry.create(configmaps, Some("nope"), cm.clone(), &options).await;
        assert_eq!(missing.unwrap_err().message, "namespaces \"nope\" not found");
        let immortal =
            registry.delete(namespaces, None, "default", &DeleteOptions::default()).await;
        assert_eq!(
            immortal.err().map(|e| e.message),
            Some("namespaces \"default\" is forbidden: this namespace may not be deleted".into())
        );
        let _ = std::fs::remove_dir_all(&dir);

        let none = rkube_admission::Chain::new(&[], Default::default());
        let (registry, dir) = start("no-lifecycle", none).await;
        registry.create(configmaps, Some("nope"), cm, &options).await.unwrap();
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
        registry.create(namespaces, None, ns, &options).await.unwrap();
        registry.delete(namespaces, None, "default", &DeleteOptions::default()).await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn plugin_warnings_and_refusals_reach_the_request_as_upstreams() {
        let chain = rkube_admission::Chain::new(&["PodSecurity"], Default::default());
        let (registry, dir) = start("pod-security", chain).await;
        let (namespaces, pods) = (info("", "namespaces"), info("", "pods"));
        let options = WriteOptions::default();
        let labels = json!({"pod-security.kubernetes.io/enforce": "baseline",
            "pod-security.kubernetes.io/warn": "restricted"});
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "w", "labels": labels}});
        registry.create(namespaces, None, ns, &options).await.unwrap();
        let pod = |meta: Value, port: Value| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {"containers": [{"name": "c", "image": "busybox", "ports": [port]}]}})
        };

        // Baseline lets it in; the restricted level's findings are warnings of the request.
        let plain = json!({"containerPort": 80});
        let create = registry.create(pods, Some("w"), pod(json!({"name": "p"}), plain), &options);
        let (created, warnings) = crate::warnings::recording(create).await;
        created.unwrap();
        assert_eq!(
            warnings,
            ["would violate PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"]
        );

        // A refusal of a pod whose name is generated names the generated name, as
        // upstream's validating plugins see it.
        let host_port = json!({"containerPort": 80, "hostPort": 8080});
        let generated = pod(json!({"generateName": "p-"}), host_port);
        let create = registry.create(pods, Some("w"), generated, &options);
        let (refused, warnings) = crate::warnings::recording(create).await;
        let status = refused.unwrap_err().to_status();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(status["code"], 403);
        let name = status["details"]["name"].as_str().unwrap_or_default().to_string();
        assert!(name.starts_with("p-") && name.len() == 7, "{status}");
        assert_eq!(
            status["message"],
            format!("pods \"{name}\" is forbidden: violates PodSecurity \"baseline:latest\": hostPort (container \"c\" uses hostPort 8080)")
        );
        assert_eq!(status["details"]["kind"], "pods");

        // Labels that do not parse: 422 with the field.
        let bad = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bad",
            "labels": {"pod-security.kubernetes.io/enforce": "x"}}});
        let refused = registry.create(namespaces, None, bad, &options).await.unwrap_err();
        assert_eq!(refused.code, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            refused.message,
            "Namespace \"bad\" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"x\": must be one of privileged, baseline, restricted"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
