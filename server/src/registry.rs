//! The generic registry: create, get, list, update, patch and delete for every resource, over
//! the store, in the manner of kube-apiserver's generic registry store. Per-kind behaviour comes
//! from the strategy hooks in `rkube_apis::strategy`; nothing here is per-kind code.
//!
//! Objects are stored as JSON in their resource's storage version under
//! `ResourceInfo::key`; `metadata.resourceVersion` is never stored, it is the key's
//! `mod_revision`, set on every read. A custom resource whose definition converts through a
//! webhook is held in the request's version while it is admitted, validated and given its
//! managedFields, converted to its storage version only to be stored, and read back through
//! the webhook (`crate::crd_conversion`).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use bytes::Bytes;
use rkube_admission::{Operation, OperationOptions};
use rkube_apis::resources::{ResourceInfo, Resources};
use rkube_apis::strategy;
use rkube_store::{Error as StoreError, KeyValue, RangeRequest, Revision, Store};
use serde_json::{json, Value};

use crate::admission::Write;
use crate::cache::Cache;
use crate::crd_conversion::Converter;
use crate::object::{self, meta_mut};
use crate::services::{Allocator, ServiceRanges};
use crate::status::{ApiError, ApiResult};
use crate::write_hooks::WriteHooks;

/// How many times an unconditional write retries after losing a compare-and-swap race.
const MAX_RETRIES: usize = 16;
/// How many `generateName` names a create tries before giving up (as upstream).
const GENERATE_NAME_TRIES: usize = 8;

pub use crate::cache::{Filter, FilterView};

/// `dryRun` and friends.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    pub dry_run: bool,
    /// Who the write is recorded for in `metadata.managedFields` (an `Update` entry); `None`
    /// records nothing (server-side apply records its own `Apply` entry).
    pub field_manager: Option<String>,
    /// The API server writes the object for itself and vouches for it: only its metadata is
    /// validated. The one user is the `kubernetes` Endpoints and EndpointSlice, which point
    /// at `--advertise-address`: rkube allows a loopback one for a single-machine cluster,
    /// where upstream's validation (rightly, for clients) refuses loopback endpoints.
    pub trusted: bool,
    /// Who asks for a create, for the kinds that record it (see
    /// `strategy::record_requester`); `None` for the server's own writes.
    pub requester: Option<strategy::Requester>,
    /// The request was admitted already as another operation (an eviction: a create of
    /// `pods/eviction`), so the write is not admitted again, as upstream's eviction writes
    /// with `rest.ValidateAllObjectFunc`.
    pub admitted: bool,
}

/// What a delete asks for (DeleteOptions).
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    pub dry_run: bool,
    pub grace_period_seconds: Option<i64>,
    /// Orphan, Background or Foreground.
    pub propagation_policy: Option<String>,
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
    /// Who asks (for admission); `None` for the server's own deletes.
    pub requester: Option<strategy::Requester>,
    /// Admitted already as another operation (see [`WriteOptions::admitted`]).
    pub admitted: bool,
}

/// What a delete did.
pub struct Deleted {
    /// The object: as it was when removed, or as it is now while it waits (finalizers,
    /// grace period).
    pub object: Value,
    /// True when the object is gone from the store.
    pub gone: bool,
}

/// One page of a list.
pub struct ListPage {
    pub items: Vec<Value>,
    pub resource_version: Revision,
    pub continue_token: Option<String>,
    pub remaining: Option<i64>,
}

/// List options after parsing.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
}

/// The registry over one store.
pub struct Registry {
    pub store: Arc<dyn Store>,
    /// The live resource table: the resources served now (a snapshot swapped whole when a
    /// resource is added or removed, see [`Registry::add_resource`]).
    table: RwLock<Arc<Resources>>,
    /// Counts the changes of the table, for what is built from it (OpenAPI).
    generation: tokio::sync::watch::Sender<u64>,
    /// The side effects of the resources whose writes hold storage of their own, by (group,
    /// plural): a Service's ClusterIPs and NodePorts.
    hooks: HashMap<(&'static str, &'static str), Arc<dyn WriteHooks>>,
    /// The watch cache of each stored resource, by (group, plural).
    caches: RwLock<HashMap<(&'static str, &'static str), Arc<Cache>>>,
    /// The admission chain every write goes through (see `crate::admission`).
    pub admission: rkube_admission::Chain,
    /// Checks every write passes before admission's validating plugins, whatever the
    /// admission flags (RBAC's escalation check).
    pub guards: Vec<Arc<dyn rkube_admission::ValidatingPlugin>>,
    /// Converts custom resources whose definition has a conversion webhook (set once the
    /// server's HTTPS client exists, see [`Registry::set_converter`]).
    converter: OnceLock<Arc<Converter>>,
}

impl Registry {
    pub fn new(store: Arc<dyn Store>, ranges: ServiceRanges) -> Registry {
        Registry {
            store,
            table: RwLock::new(Arc::new(Resources::builtin().clone())),
            generation: tokio::sync::watch::Sender::new(0),
            hooks: HashMap::from([(
                ("", "services"),
                Arc::new(Allocator { ranges }) as Arc<dyn WriteHooks>,
            )]),
            caches: RwLock::new(HashMap::new()),
            admission: rkube_admission::Chain::with_defaults(),
            guards: Vec::new(),
            converter: OnceLock::new(),
        }
    }

    /// Gives the registry the converter it calls conversion webhooks with (once).
    pub fn set_converter(&self, converter: Arc<Converter>) {
        let _ = self.converter.set(converter);
    }

    /// `objects` (of `to`'s resource, in any of its versions) in `to`'s version: through the
    /// resource's conversion webhook when it has one (one review for them all), else by its
    /// strategy. A failed conversion is upstream's 500 (an error with no reason).
    pub async fn convert_objects(
        &self,
        objects: Vec<Value>,
        to: &ResourceInfo,
    ) -> ApiResult<Vec<Value>> {
        let Some(webhook) = to.strategy.conversion_webhook() else {
            return Ok(objects.into_iter().map(|o| convert(o, to)).collect());
        };
        let converter = self
            .converter
            .get()
            .ok_or_else(|| ApiError::internal("no conversion webhook client"))?;
        converter
            .convert(webhook, objects, to)
            .await
            .map_err(|e| ApiError::new(http::StatusCode::INTERNAL_SERVER_ERROR, "", e.to_string()))
    }

    /// One object in `to`'s version (see [`Registry::convert_objects`]).
    pub async fn convert_object(&self, obj: Value, to: &ResourceInfo) -> ApiResult<Value> {
        let mut converted = self.convert_objects(vec![obj], to).await?;
        converted.pop().ok_or_else(|| ApiError::internal("the conversion returned no object"))
    }

    /// Where a write in `info`'s version is stored, when it is stored in another: the
    /// storage version of a resource converted by a webhook. As upstream's handler of a custom
    /// resource's version, the request's version is the one the object is held in while it
    /// is admitted, validated and given its managedFields; it is converted to the storage
    /// version only to be stored ([`Registry::to_storage`]), and back to be answered.
    /// Whether a list or watch of `info` selects with `filter` from objects converted to
    /// `info`'s version rather than from the stored ones: a webhook may move a version's
    /// selectable fields and labels anywhere (upstream keeps a watch cache per served version
    /// of a custom resource, holding its objects converted, and filters those).
    pub fn filters_converted(&self, info: &ResourceInfo, filter: &Filter) -> ApiResult<bool> {
        Ok(filter.is_selective() && self.webhook_storage(info)?.is_some())
    }

    /// `objects` converted to `info`'s version, and, when [`Registry::filters_converted`]
    /// says so (`late`), the ones `filter` passes.
    pub async fn convert_selected(
        &self,
        objects: Vec<Value>,
        info: &ResourceInfo,
        filter: &Filter,
        late: bool,
    ) -> ApiResult<Vec<Value>> {
        let mut converted = self.convert_objects(objects, info).await?;
        if late {
            converted.retain(|obj| matches(info, filter, obj));
        }
        Ok(converted)
    }

    fn webhook_storage(&self, info: &ResourceInfo) -> ApiResult<Option<Arc<ResourceInfo>>> {
        if info.strategy.conversion_webhook().is_none() {
            return Ok(None);
        }
        let storage = self.storage(info)?;
        Ok((storage.version != info.version).then_some(storage))
    }

    /// An object about to be stored (in `info`'s version, which it may leave out) in
    /// `storage`'s: a conversion that fails is upstream's 500 from its storage's encoding.
    async fn to_storage(
        &self,
        info: &ResourceInfo,
        mut obj: Value,
        storage: &ResourceInfo,
    ) -> ApiResult<Value> {
        if obj["apiVersion"].as_str().is_none_or(str::is_empty) {
            obj["apiVersion"] = json!(info.api_version());
        }
        if obj["kind"].as_str().is_none_or(str::is_empty) {
            obj["kind"] = json!(info.kind);
        }
        self.convert_object(obj, storage).await
    }

    /// The side effects of `info`'s writes, if it has any.
    fn hooks(&self, info: &ResourceInfo) -> Option<&Arc<dyn WriteHooks>> {
        self.hooks.get(&info.storage_resource)
    }

    /// The resources served now.
    pub fn resources(&self) -> Arc<Resources> {
        self.table.read().expect("resource table lock").clone()
    }

    /// Follows the changes of the resource table: its generation, one more on each change.
    pub fn table_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Starts the watch cache of every stored resource.
    pub async fn start_caches(&self) -> ApiResult<()> {
        for info in self.resources().all().iter().filter(|r| r.storage_version) {
            let cache = Cache::start(self.store.clone(), info.clone()).await?;
            self.caches.write().expect("cache table lock").insert((info.group, info.plural), cache);
        }
        Ok(())
    }

    /// Serves `info` from now on: its watch cache first (for a storage version), then the
    /// table, so that no request finds the resource without its cache. Discovery and OpenAPI
    /// follow the table. This is how custom resources are added.
    pub async fn add_resource(&self, info: ResourceInfo) -> ApiResult<()> {
        // Checked before the cache starts, and again when the table is swapped.
        self.resources()
            .with(info.clone())
            .map_err(|e| ApiError::new(http::StatusCode::CONFLICT, "Conflict", e))?;
        let info = Arc::new(info);
        let key = (info.group, info.plural);
        let started = match info.storage_version {
            true => Some(Cache::start(self.store.clone(), info.clone()).await?),
            false => None,
        };
        let mut table = self.table.write().expect("resource table lock");
        let updated = table
            .with((*info).clone())
            .map_err(|e| ApiError::new(http::StatusCode::CONFLICT, "Conflict", e))?;
        if let Some(cache) = started.clone() {
            self.caches.write().expect("cache table lock").insert(key, cache);
        }
        *table = Arc::new(updated);
        drop(table);
        self.generation.send_modify(|g| *g += 1);
        tracing::info!(resource = %info.group_resource(), version = info.version, "serving");
        Ok(())
    }

    /// Stops serving the resource at `group`/`version`/`plural`: it leaves the table (and
    /// discovery and OpenAPI); when no served version is stored there any more, its watch
    /// cache stops and its watches end. The stored objects stay in the store.
    pub fn remove_resource(&self, group: &str, version: &str, plural: &str) {
        let mut table = self.table.write().expect("resource table lock");
        let Some(removed) = table.get(group, version, plural).cloned() else { return };
        let updated = table.without(group, version, plural);
        let still_stored = updated.storage_of(&removed).is_some();
        *table = Arc::new(updated);
        drop(table);
        if !still_stored {
            let cache =
                self.caches.write().expect("cache table lock").remove(&removed.storage_resource);
            if let Some(cache) = cache {
                cache.stop();
            }
        }
        self.generation.send_modify(|g| *g += 1);
        tracing::info!(resource = %removed.group_resource(), version, "no longer served");
    }

    /// The watch cache of `info`'s resource (of the resource it is stored with).
    pub fn cache(&self, info: &ResourceInfo) -> ApiResult<Arc<Cache>> {
        let caches = self.caches.read().expect("cache table lock");
        caches.get(&info.storage_resource).cloned().ok_or_else(|| {
            ApiError::internal(format!("no watch cache for {}", info.group_resource()))
        })
    }

    /// The store prefix of `info`'s objects in `namespace` (all namespaces with `None`).
    pub fn prefix(&self, info: &ResourceInfo, namespace: Option<&str>) -> ApiResult<String> {
        Ok(self.storage(info)?.namespace_prefix(namespace))
    }

    /// Where objects of `info`'s resource are stored.
    pub fn storage(&self, info: &ResourceInfo) -> ApiResult<Arc<ResourceInfo>> {
        let table = self.table.read().expect("resource table lock");
        // Only a resource removed while the request ran has none.
        table.storage_of(info).cloned().ok_or_else(ApiError::path_not_found)
    }

    /// An object read from the store, in the version `info` serves.
    pub fn decode(&self, info: &ResourceInfo, kv: &KeyValue) -> ApiResult<Value> {
        Ok(convert(self.decode_stored(kv)?, info))
    }

    /// An object read from the store, as stored (with its resourceVersion).
    fn decode_stored(&self, kv: &KeyValue) -> ApiResult<Value> {
        let mut obj: Value = serde_json::from_slice(&kv.value).map_err(|e| {
            ApiError::internal(format!("stored object {} is not JSON: {e}", kv.key))
        })?;
        object::set_resource_version(&mut obj, kv.mod_revision);
        Ok(obj)
    }

    /// The bytes stored for an object: storage version, no resourceVersion.
    fn encode(&self, info: &ResourceInfo, obj: &Value) -> ApiResult<Bytes> {
        let storage = self.storage(info)?;
        let in_storage_version = obj["apiVersion"].as_str() == Some(&storage.api_version())
            && obj["kind"].as_str() == Some(storage.kind);
        // Stored as Go would write it, so that lists and watches can send the bytes as they are.
        let options = rkube_apis::go_json::Options { stored: true };
        let mut bytes = Vec::with_capacity(512);
        if in_storage_version {
            rkube_apis::go_json::write(obj, options, &mut bytes);
        } else {
            rkube_apis::go_json::write(&convert(obj.clone(), &storage), options, &mut bytes);
        }
        Ok(Bytes::from(bytes))
    }

    fn key(&self, info: &ResourceInfo, namespace: Option<&str>, name: &str) -> ApiResult<String> {
        Ok(self.storage(info)?.key(namespace, name))
    }

    pub async fn get(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> ApiResult<Value> {
        let (kv, _) = self.store.get(&self.key(info, namespace, name)?, None).await?;
        let kv = kv.ok_or_else(|| ApiError::not_found(info.group, info.plural, name))?;
        self.convert_object(self.decode_stored(&kv)?, info).await
    }

    pub async fn create(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        obj: Value,
        options: &WriteOptions,
    ) -> ApiResult<Value> {
        let storage = self.webhook_storage(info)?;
        self.create_stored(info, storage.as_deref(), namespace, obj, options).await
    }

    /// A create in `info`'s version, stored in `storage`'s when given (see
    /// [`Registry::webhook_storage`]).
    async fn create_stored(
        &self,
        info: &ResourceInfo,
        storage: Option<&ResourceInfo>,
        namespace: Option<&str>,
        mut obj: Value,
        options: &WriteOptions,
    ) -> ApiResult<Value> {
        check_type(info, &obj)?;
        set_namespace(info, namespace, &mut obj)?;
        if object::resource_version(&obj).is_some() {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let generate = object::name(&obj)
            .is_none()
            .then(|| object::meta_str(&obj, "generateName").map(String::from))
            .flatten();
        // Admission sees the name the request gave (none when it is generated).
        let requested_name = object::name(&obj).unwrap_or("").to_string();
        let write = Write {
            operation: Operation::Create,
            info,
            namespace,
            name: &requested_name,
            subresource: None,
            dry_run: options.dry_run,
            user: options.requester.as_ref(),
            options: OperationOptions::Create { field_manager: options.field_manager.as_deref() },
        };
        {
            let meta = meta_mut(&mut obj);
            meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            meta.insert("creationTimestamp".into(), json!(object::now()));
            meta.remove("deletionTimestamp");
            meta.remove("deletionGracePeriodSeconds");
            meta.remove("selfLink");
            if strategy::tracks_generation(info) {
                meta.insert("generation".into(), json!(1));
            } else {
                meta.remove("generation");
            }
        }
        for attempt in 0..GENERATE_NAME_TRIES {
            if let Some(prefix) = &generate {
                meta_mut(&mut obj).insert("name".into(), json!(object::generate_name(prefix)));
            }
            if attempt == 0 {
                // The fields the client sent (defaults included) are its own; what the
                // strategy and the admission plugins add next is not, as upstream's create
                // handler records managedFields before either runs.
                if let Some(manager) = &options.field_manager {
                    strategy::with_defaults(info, &mut obj);
                    record_update(info, None, &mut obj, manager, None);
                }
                strategy::record_requester(info, &mut obj, options.requester.as_ref());
                strategy::prepare_for_create(info, &mut obj);
                self.admit(&write, Some(&mut obj), None).await?;
                let errors = match options.trusted {
                    true => strategy::validate_metadata(info, &obj, None),
                    false => strategy::validate(info, &obj, None),
                };
                if !errors.is_empty() {
                    let name = object::name(&obj).unwrap_or("").to_string();
                    return Err(ApiError::invalid(info.group, info.kind, &name, errors));
                }
                self.validate_admission(&write, Some(&mut obj), None).await?;
            }
            let name = object::name(&obj).unwrap_or("").to_string();
            if options.dry_run {
                return Ok(obj);
            }
            let key = self.key(info, namespace, &name)?;
            let hooks = self.hooks(info);
            if let Some(hooks) = hooks {
                // Nothing to take for a name that is taken.
                if self.store.get(&key, None).await?.0.is_some() && generate.is_none() {
                    return Err(ApiError::already_exists(info.group, info.plural, &name));
                }
                hooks.before_create(self.store.as_ref(), &mut obj).await?;
            }
            let stored = match storage {
                Some(storage) => Some(self.to_storage(info, obj.clone(), storage).await?),
                None => None,
            };
            let bytes = match (&stored, storage) {
                (Some(stored), Some(storage)) => self.encode(storage, stored)?,
                _ => self.encode(info, &obj)?,
            };
            let result = self.store.create(&key, bytes).await;
            if let Some(hooks) = hooks.filter(|_| result.is_err()) {
                hooks.release(self.store.as_ref(), &obj).await;
            }
            match result {
                // What was stored, read back in the request's version, as upstream answers.
                Ok(kv) if stored.is_some() => {
                    let mut stored = stored.expect("converted");
                    object::set_resource_version(&mut stored, kv.mod_revision);
                    return self.convert_object(stored, info).await;
                }
                Ok(kv) => {
                    object::set_resource_version(&mut obj, kv.mod_revision);
                    return Ok(obj);
                }
                Err(StoreError::AlreadyExists { .. }) if generate.is_some() => continue,
                Err(StoreError::AlreadyExists { .. }) => {
                    return Err(ApiError::already_exists(info.group, info.plural, &name))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApiError::already_exists(info.group, info.plural, object::name(&obj).unwrap_or("")))
    }

    /// Replaces an object (PUT), or its status (`subresource` = status).
    pub async fn update(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        mut new: Value,
        options: &WriteOptions,
    ) -> ApiResult<Value> {
        check_type(info, &new)?;
        set_namespace(info, namespace, &mut new)?;
        name_from_url(&mut new, name)?;
        let precondition = object::resource_version(&new).map(String::from);
        self.modify(info, namespace, name, subresource, options, precondition, |_| Ok(new.clone()))
            .await
    }

    /// Reads the object, asks `change` for its new state, and writes it with
    /// compare-and-swap; retries on a lost race unless the caller named a resourceVersion.
    #[allow(clippy::too_many_arguments)]
    pub async fn modify(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        options: &WriteOptions,
        precondition: Option<String>,
        change: impl Fn(&Value) -> ApiResult<Value>,
    ) -> ApiResult<Value> {
        // Through a conversion webhook: stored in the storage version, everything else in
        // `info`'s.
        let storage = self.webhook_storage(info)?;
        self.modify_stored(
            info,
            storage.as_deref(),
            namespace,
            name,
            subresource,
            options,
            precondition,
            change,
        )
        .await
    }

    /// [`Registry::modify`] in `info`'s version, stored in `storage`'s when given (a webhook
    /// converts the object there and back).
    #[allow(clippy::too_many_arguments)]
    async fn modify_stored(
        &self,
        info: &ResourceInfo,
        storage: Option<&ResourceInfo>,
        namespace: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        options: &WriteOptions,
        precondition: Option<String>,
        change: impl Fn(&Value) -> ApiResult<Value>,
    ) -> ApiResult<Value> {
        let key = self.key(info, namespace, name)?;
        for _ in 0..MAX_RETRIES {
            let (kv, _) = self.store.get(&key, None).await?;
            let kv = kv.ok_or_else(|| ApiError::not_found(info.group, info.plural, name))?;
            // As a Go type holds it: the nulls Go writes for its zero values (stored with the
            // object) are absent, as they are in the decoded request, so that comparing the
            // two sees only real changes.
            let mut old = match storage {
                Some(storage) => {
                    let stored = self.decode(storage, &kv)?;
                    self.convert_object(stored, info).await?
                }
                None => self.decode(info, &kv)?,
            };
            rkube_apis::go_json::drop_nulls(&mut old);
            let requested = change(&old)?;
            // A resourceVersion in the new object (or in the patch) is a precondition.
            let wanted =
                object::resource_version(&requested).map(String::from).or(precondition.clone());
            if let Some(wanted) = &wanted {
                if *wanted != kv.mod_revision.to_string() {
                    return Err(ApiError::conflict(
                        info.group,
                        info.plural,
                        name,
                        "the object has been modified; please apply your changes to the latest version and try again",
                    ));
                }
            }
            let mut new = prepare_for_update(info, requested, &old, subresource);
            // Binding a pod is a create of its `binding` subresource, as upstream admits it.
            let write = Write {
                operation: match subresource {
                    Some("binding") => Operation::Create,
                    _ => Operation::Update,
                },
                info,
                namespace,
                name,
                subresource,
                dry_run: options.dry_run,
                user: options.requester.as_ref(),
                options: OperationOptions::Update {
                    field_manager: options.field_manager.as_deref(),
                },
            };
            if !options.admitted {
                self.admit(&write, Some(&mut new), Some(&old)).await?;
            }
            let hooks = self.hooks(info).filter(|_| subresource.is_none());
            if let Some(hooks) = hooks {
                hooks.keep_allocated(&mut new, &old);
            }
            // A status write keeps the old spec: only its metadata is checked, as upstream's
            // status strategies do, so an object stored before a stricter rule keeps getting
            // status updates.
            let errors = match subresource {
                Some(sub @ ("status" | "approval")) => {
                    strategy::validate_subresource_update(info, &new, &old, sub)
                }
                Some("ephemeralcontainers") => {
                    let mut errors = strategy::validate_metadata(info, &new, Some(&old));
                    errors.extend(rkube_apis::validation::ephemeral_containers_update(&new, &old));
                    errors
                }
                _ => strategy::validate(info, &new, Some(&old)),
            };
            if !errors.is_empty() {
                return Err(ApiError::invalid(info.group, info.kind, name, errors));
            }
            if !options.admitted {
                self.validate_admission(&write, Some(&mut new), Some(&old)).await?;
            }
            if unchanged(&new, &old) {
                return Ok(old); // nothing changed: no write, same resourceVersion
            }
            // Upstream's binding storage writes the pod directly, without a managedFields entry.
            if let Some(manager) =
                options.field_manager.as_ref().filter(|_| subresource != Some("binding"))
            {
                record_update(info, Some(&old), &mut new, manager, subresource);
                // A request that left out managedFields keeps the stored ones: unchanged
                // otherwise, it still writes nothing (upstream's no-op update).
                if unchanged(&new, &old) {
                    return Ok(old);
                }
            }
            if options.dry_run {
                object::set_resource_version(&mut new, kv.mod_revision);
                return Ok(new);
            }
            // The last finalizer of an object being deleted is gone: delete it now.
            if object::is_terminating(&new) && !has_finalizers(info, &new) {
                match self.store.delete(&key, Some(kv.mod_revision)).await {
                    Ok(_) => return Ok(new),
                    // A lost race is retried from a fresh read, where a resourceVersion
                    // the client named is checked again: a patch (re-applied to the fresh
                    // object) goes through, a stale update gets its 409.
                    Err(e) => match write_error(info, name, e, false) {
                        None => continue,
                        Some(error) => return Err(error),
                    },
                }
            }
            let held = match hooks {
                Some(hooks) => {
                    Some(hooks.before_update(self.store.as_ref(), &mut new, &old).await?)
                }
                None => None,
            };
            let stored = match storage {
                Some(storage) => Some(self.to_storage(info, new.clone(), storage).await),
                None => None,
            };
            let encoded = match (stored, storage) {
                (Some(Ok(stored)), Some(storage)) => {
                    self.encode(storage, &stored).map(|body| (body, Some(stored)))
                }
                (Some(Err(e)), _) => Err(e),
                _ => self.encode(info, &new).map(|body| (body, None)),
            };
            let (written, stored) = match encoded {
                Ok((body, stored)) => {
                    (Ok(self.store.update(&key, body, kv.mod_revision).await), stored)
                }
                Err(e) => (Err(e), None),
            };
            if let (Some(hooks), Some(held)) = (hooks, held) {
                let ok = matches!(written, Ok(Ok(_)));
                hooks.after_update(self.store.as_ref(), held, ok).await;
            }
            match written? {
                // What was stored, read back in the request's version, as upstream answers.
                Ok(written) if stored.is_some() => {
                    let mut stored = stored.expect("converted");
                    object::set_resource_version(&mut stored, written.mod_revision);
                    return self.convert_object(stored, info).await;
                }
                Ok(written) => {
                    object::set_resource_version(&mut new, written.mod_revision);
                    return Ok(new);
                }
                Err(e) => match write_error(info, name, e, false) {
                    None => continue,
                    Some(error) => return Err(error),
                },
            }
        }
        Err(too_many_writers(info, name))
    }

    pub async fn delete(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        options: &DeleteOptions,
    ) -> ApiResult<Deleted> {
        let Some(storage) = self.webhook_storage(info)? else {
            return self.delete_stored(info, namespace, name, options).await;
        };
        let deleted = self.delete_stored(&storage, namespace, name, options).await?;
        let object = self.convert_object(deleted.object, info).await?;
        Ok(Deleted { object, gone: deleted.gone })
    }

    /// A delete in the storage version (see [`Registry::webhook_storage`]).
    async fn delete_stored(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        options: &DeleteOptions,
    ) -> ApiResult<Deleted> {
        let key = self.key(info, namespace, name)?;
        for _ in 0..MAX_RETRIES {
            let (kv, _) = self.store.get(&key, None).await?;
            let kv = kv.ok_or_else(|| ApiError::not_found(info.group, info.plural, name))?;
            let old = self.decode(info, &kv)?;
            check_preconditions(info, name, &old, options)?;
            let write = Write {
                operation: Operation::Delete,
                info,
                namespace,
                name,
                subresource: None,
                dry_run: options.dry_run,
                user: options.requester.as_ref(),
                options: OperationOptions::Delete {
                    grace_period_seconds: options.grace_period_seconds,
                    propagation_policy: options.propagation_policy.as_deref(),
                },
            };
            if !options.admitted {
                self.admit(&write, None, Some(&old)).await?;
                self.validate_admission(&write, None, Some(&old)).await?;
            }
            let grace = grace_period(info, &old, options);
            let mut finalizers = object::finalizers(&old);
            match options.propagation_policy.as_deref() {
                Some("Foreground") if !finalizers.iter().any(|f| f == "foregroundDeletion") => {
                    finalizers.push("foregroundDeletion".into())
                }
                Some("Orphan") if !finalizers.iter().any(|f| f == "orphan") => {
                    finalizers.push("orphan".into())
                }
                _ => {}
            }
            for finalizer in info.strategy.finalizers_on_delete() {
                if !finalizers.iter().any(|f| f == finalizer) {
                    finalizers.push(finalizer.to_string());
                }
            }
            if finalizers.is_empty() && grace == 0 && !has_finalizers(info, &old) {
                if options.dry_run {
                    return Ok(Deleted { object: old, gone: true });
                }
                match self.store.delete(&key, Some(kv.mod_revision)).await {
                    Ok(_) => {
                        if let Some(hooks) = self.hooks(info) {
                            hooks.release(self.store.as_ref(), &old).await;
                        }
                        return Ok(Deleted { object: old, gone: true });
                    }
                    Err(e) => match write_error(info, name, e, false) {
                        None => continue,
                        Some(error) => return Err(error),
                    },
                }
            }
            // Graceful or finalized deletion: mark the object and let its owners finish.
            if object::is_terminating(&old) && !shortens_grace(&old, grace) {
                return Ok(Deleted { object: old, gone: false });
            }
            let mut marked = old.clone();
            let deadline = chrono::Utc::now() + chrono::Duration::seconds(grace);
            {
                let meta = meta_mut(&mut marked);
                // The first mark changes what the object's controllers should do: a new
                // generation, as upstream's BeforeDelete gives it.
                if !meta.contains_key("deletionTimestamp") {
                    if let Some(g) =
                        meta.get("generation").and_then(Value::as_i64).filter(|g| *g > 0)
                    {
                        meta.insert("generation".into(), json!(g + 1));
                    }
                }
                if !meta.contains_key("deletionTimestamp") || grace == 0 {
                    meta.insert(
                        "deletionTimestamp".into(),
                        json!(deadline.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
                    );
                }
                meta.insert("deletionGracePeriodSeconds".into(), json!(grace));
                if finalizers.is_empty() {
                    meta.remove("finalizers");
                } else {
                    meta.insert("finalizers".into(), json!(finalizers));
                }
            }
            info.strategy.mark_for_deletion(&mut marked);
            if options.dry_run {
                return Ok(Deleted { object: marked, gone: false });
            }
            match self.store.update(&key, self.encode(info, &marked)?, kv.mod_revision).await {
                Ok(written) => {
                    object::set_resource_version(&mut marked, written.mod_revision);
                    return Ok(Deleted { object: marked, gone: false });
                }
                Err(e) => match write_error(info, name, e, false) {
                    None => continue,
                    Some(error) => return Err(error),
                },
            }
        }
        Err(too_many_writers(info, name))
    }

    /// A page of objects (all of them without a limit), filtered.
    pub async fn list(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        options: &ListOptions,
        filter: &Filter,
    ) -> ApiResult<ListPage> {
        let prefix = self.storage(info)?.namespace_prefix(namespace);
        let (mut start, mut revision) = match &options.continue_token {
            Some(token) => {
                let (rv, start) = decode_continue(token, &prefix)?;
                (start, Some(rv).filter(|&rv| rv > 0))
            }
            None => (prefix.clone(), None),
        };
        if revision.is_none() {
            revision = self.list_revision(options).await?;
        }
        let limit = options.limit.filter(|&l| l > 0);
        // Filtered after conversion, a page may hold fewer than its limit (as the API allows).
        let late = self.filters_converted(info, filter)?;
        let mut items = Vec::new();
        loop {
            let page = self
                .store
                .range(RangeRequest {
                    prefix: &prefix,
                    continue_from: Some(&start),
                    limit: limit.map(|l| l - items.len().min(l)).map(|l| l.max(1)),
                    revision,
                })
                .await
                .map_err(|e| match e {
                    StoreError::Compacted { .. } if options.continue_token.is_some() => {
                        let mut gone = ApiError::gone(
                            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                        );
                        // The same start key at the latest revision: an inconsistent continue.
                        gone.details.continue_token = Some(encode_continue(-1, &start, &prefix));
                        gone
                    }
                    other => other.into(),
                })?;
            revision = Some(page.revision);
            let last_key = page.kvs.last().map(|kv| kv.key.clone());
            // Selectors read the stored object, as the watch cache does (a resource stored
            // with another has its field labels converted to the storage's), or the converted
            // one for a version a webhook converts.
            let storage = self.storage(info)?;
            for kv in &page.kvs {
                let obj = self.decode_stored(kv)?;
                if late || matches(&storage, filter, &obj) {
                    items.push(obj);
                }
            }
            let full = limit.is_some_and(|l| items.len() >= l);
            match (page.more, last_key) {
                (true, Some(last)) if full => {
                    let remaining = page.count - page.kvs.len() as i64;
                    let token = encode_continue(page.revision, &format!("{last}\0"), &prefix);
                    return Ok(ListPage {
                        items: self.convert_selected(items, info, filter, late).await?,
                        resource_version: page.revision,
                        continue_token: Some(token),
                        // The store counts objects the selectors would leave out: with
                        // selectors no count, as upstream.
                        remaining: Some(remaining).filter(|_| !filter.is_selective()),
                    });
                }
                (true, Some(last)) => start = format!("{last}\0"),
                _ => {
                    return Ok(ListPage {
                        items: self.convert_selected(items, info, filter, late).await?,
                        resource_version: page.revision,
                        continue_token: None,
                        remaining: None,
                    })
                }
            }
        }
    }

    /// The revision a list without a continue token reads at: `resourceVersionMatch=Exact`
    /// reads at that revision; otherwise the latest (which is never older than one asked
    /// for with NotOlderThan; a future one is waited for, briefly).
    async fn list_revision(&self, options: &ListOptions) -> ApiResult<Option<Revision>> {
        let Some(rv) = options.resource_version.as_deref().filter(|rv| !rv.is_empty()) else {
            return Ok(None);
        };
        let rv: Revision = rv
            .parse()
            .map_err(|_| ApiError::bad_request(format!("invalid resource version {rv:?}")))?;
        match options.resource_version_match.as_deref() {
            Some("Exact") => {
                if rv == 0 {
                    return Err(ApiError::bad_request("resourceVersionMatch: Exact requires a resourceVersion other than 0"));
                }
                Ok(Some(rv))
            }
            Some("NotOlderThan") | None => {
                if rv > 0 {
                    self.wait_for_revision(rv).await?;
                }
                Ok(None)
            }
            Some(other) => Err(ApiError::bad_request(format!(
                "resourceVersionMatch: Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""
            ))),
        }
    }

    /// Waits (up to 3 s, as upstream) until the store reaches `revision`.
    pub async fn wait_for_revision(&self, revision: Revision) -> ApiResult<()> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        loop {
            let current = self.store.current_revision().await?;
            if current >= revision {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ApiError::too_large_resource_version(revision, current));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Whether anything still holds the object: its finalizers, and for namespaces the
/// `spec.finalizers` the namespace controller removes once the namespace is empty.
fn has_finalizers(info: &ResourceInfo, obj: &Value) -> bool {
    info.strategy.has_own_finalizers(obj) || !object::finalizers(obj).is_empty()
}

/// Whether `filter` passes an object held as a value.
pub fn matches(info: &ResourceInfo, filter: &Filter, obj: &Value) -> bool {
    let labels = object::labels(obj);
    let fields = strategy::field_values(info, obj);
    filter.matches(&FilterView {
        name: object::name(obj).unwrap_or(""),
        labels: &labels,
        fields: &fields,
    })
}

/// What a failed guarded write answers: `None` to read again and retry (the object changed
/// under us and the caller named no resourceVersion), else the error.
fn write_error(
    info: &ResourceInfo,
    name: &str,
    e: StoreError,
    conditional: bool,
) -> Option<ApiError> {
    match e {
        StoreError::Conflict { current: None } => {
            Some(ApiError::not_found(info.group, info.plural, name))
        }
        StoreError::Conflict { .. } if !conditional => None,
        StoreError::Conflict { .. } => Some(modified(info, name)),
        other => Some(other.into()),
    }
}

fn too_many_writers(info: &ResourceInfo, name: &str) -> ApiError {
    ApiError::conflict(info.group, info.plural, name, "too many concurrent writers; try again")
}

fn modified(info: &ResourceInfo, name: &str) -> ApiError {
    ApiError::conflict(
        info.group,
        info.plural,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// An object in the version `info` serves (see `rkube_apis::convert`).
/// The object of a write to `.../<name>` is named so: a missing name is the URL's, another
/// is a 400.
pub fn name_from_url(obj: &mut Value, name: &str) -> ApiResult<()> {
    match object::name(obj) {
        Some(n) if n != name => Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        ))),
        Some(_) => Ok(()),
        None => {
            meta_mut(obj).insert("name".into(), json!(name));
            Ok(())
        }
    }
}

/// Records a write by `manager` in `new`'s managedFields: what it changed becomes its own
/// (in an entry of its own for a write to the status subresource).
fn record_update(
    info: &ResourceInfo,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
) {
    let (schema, type_ref) = rkube_apis::strategy::apply_schema(info);
    let time = object::now();
    let subresource =
        subresource.filter(|s| matches!(*s, "status" | "ephemeralcontainers" | "approval"));
    rkube_apis::apply::record_update(
        schema,
        type_ref,
        old,
        new,
        manager,
        &info.api_version(),
        &time,
        subresource,
    );
}

pub fn convert(obj: Value, info: &ResourceInfo) -> Value {
    rkube_apis::convert::convert(obj, info)
}

/// The body's apiVersion and kind, when given, must be the endpoint's, as kube-apiserver's
/// decoding has them: a kind it does not know in that version cannot be decoded; a known one
/// that is not the endpoint's type cannot be converted to it; and another version of the
/// endpoint's own type (another served version, or the group it is stored with) is refused
/// by the handler's group-version check. Each answer is upstream's 400.
pub fn check_type(info: &ResourceInfo, obj: &Value) -> ApiResult<()> {
    if !obj.is_object() {
        return Err(ApiError::bad_request("the body of the request must be an object"));
    }
    // What the body leaves out is the endpoint's.
    let expected = info.api_version();
    let api_version = obj["apiVersion"].as_str().filter(|v| !v.is_empty()).unwrap_or(&expected);
    let kind = obj["kind"].as_str().filter(|k| !k.is_empty()).unwrap_or(info.kind);
    if (api_version, kind) == (expected.as_str(), info.kind) {
        return Ok(());
    }
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    let cannot_handle = |why: String| {
        ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {}: {why}",
            info.kind
        ))
    };
    let Some(known) = Resources::builtin().kind_in(api_version, kind) else {
        return Err(cannot_handle(format!(
            "no kind {kind:?} is registered for version {api_version:?} in scheme {:?}",
            "pkg/api/legacyscheme/scheme.go:30"
        )));
    };
    // Upstream decodes into the internal type of the endpoint's storage: Go package `core`
    // for the core group, else the group's first label.
    let same_type = known.kind == kind && known.storage_resource == info.storage_resource;
    if !same_type {
        let internal = match info.storage_resource.0 {
            "" => "core",
            group => group.split('.').next().unwrap_or(group),
        };
        return Err(cannot_handle(format!(
            "converting ({version}.{kind}) to ({internal}.{}): unknown conversion",
            info.kind
        )));
    }
    Err(ApiError::bad_request(format!(
        "the API version in the data ({api_version}) does not match the expected API version ({expected})"
    )))
}

/// The request's namespace goes into the object; a different one in the body is an error.
fn set_namespace(info: &ResourceInfo, namespace: Option<&str>, obj: &mut Value) -> ApiResult<()> {
    let meta = meta_mut(obj);
    if !info.namespaced {
        meta.remove("namespace");
        return Ok(());
    }
    let Some(namespace) = namespace else {
        return Err(ApiError::bad_request("a namespace is required for namespaced resources"));
    };
    match meta.get("namespace").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        Some(ns) if ns != namespace => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => {
            meta.insert("namespace".into(), json!(namespace));
            Ok(())
        }
    }
}

/// Whether an update leaves the object as it was: equal but for `metadata.resourceVersion`,
/// which a request may leave out and the store keeps apart (upstream compares the encoded
/// objects, which hold none).
fn unchanged(new: &Value, old: &Value) -> bool {
    let (Some(new), Some(old)) = (new.as_object(), old.as_object()) else { return new == old };
    let metadata_equal = |a: &Value, b: &Value| match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            let fields = |m: &'_ serde_json::Map<String, Value>| {
                m.iter().filter(|(k, _)| *k != "resourceVersion").count()
            };
            fields(a) == fields(b)
                && a.iter()
                    .filter(|(k, _)| *k != "resourceVersion")
                    .all(|(k, v)| b.get(k) == Some(v))
        }
        _ => a == b,
    };
    new.len() == old.len()
        && new.iter().all(|(k, v)| match old.get(k) {
            Some(o) if k == "metadata" => metadata_equal(v, o),
            Some(o) => v == o,
            None => false,
        })
}

/// What an update keeps from the old object: identity, deletion state and, per subresource,
/// either the status (main resource) or everything but the status (`status`).
fn prepare_for_update(
    info: &ResourceInfo,
    mut new: Value,
    old: &Value,
    subresource: Option<&str>,
) -> Value {
    // A certificate request's `approval` writes its status as `status` does (its strategy
    // then keeps all but the conditions).
    if let Some(sub @ ("status" | "approval")) = subresource {
        let mut merged = old.clone();
        match new.get("status").filter(|s| !s.is_null()) {
            Some(status) => merged["status"] = status.clone(),
            None => {
                merged.as_object_mut().map(|m| m.remove("status"));
            }
        }
        // Upstream's status strategies keep the spec but let the client's labels,
        // annotations, finalizers and owner references through (the Deployment controller
        // writes its revision annotation this way), except what a kind's strategy resets.
        let kept = strategy::metadata_kept_on_status_write(info);
        for field in ["labels", "annotations", "finalizers", "ownerReferences", "managedFields"] {
            if kept.contains(&field) {
                continue;
            }
            match new["metadata"].get(field) {
                Some(value) => meta_mut(&mut merged).insert(field.into(), value.clone()),
                None => meta_mut(&mut merged).remove(field),
            };
        }
        strategy::drop_empty_metadata(&mut merged);
        // Decoding defaults the written status too (a LoadBalancer ingress's ipMode).
        strategy::with_defaults(info, &mut merged);
        strategy::prepare_for_subresource_update(info, &mut merged, old, sub);
        return merged;
    }
    if subresource == Some("ephemeralcontainers") {
        // Upstream's dropNonEphemeralContainerUpdates: of what the client sent, only the
        // ephemeral containers count; the rest of the pod, metadata included, stays.
        let mut merged = old.clone();
        match new["spec"].get("ephemeralContainers").filter(|c| !c.is_null()) {
            Some(list) => merged["spec"]["ephemeralContainers"] = list.clone(),
            None => {
                merged["spec"].as_object_mut().map(|s| s.remove("ephemeralContainers"));
            }
        }
        new = merged;
    }
    let old_meta = old["metadata"].clone();
    {
        let meta = meta_mut(&mut new);
        for field in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"]
        {
            match old_meta.get(field) {
                Some(v) => meta.insert(field.into(), v.clone()),
                None => meta.remove(field),
            };
        }
        meta.remove("resourceVersion");
        meta.remove("selfLink");
    }
    // A binding sets the pod's PodScheduled condition along with its node.
    if info.has_subresource("status") && subresource != Some("binding") {
        match old.get("status") {
            Some(status) => new["status"] = status.clone(),
            None => {
                new.as_object_mut().map(|m| m.remove("status"));
            }
        }
    }
    strategy::prepare_for_update(info, &mut new, old, subresource);
    // The generation is the server's: a client cannot set it. A binding writes the pod's node
    // without going through the pod's strategy, so it does not count as a change.
    let generation = old_meta["generation"].as_i64();
    if strategy::tracks_generation(info) {
        let bumped = subresource != Some("binding") && strategy::bumps_generation(info, &new, old);
        let next = generation.unwrap_or(1) + i64::from(bumped);
        meta_mut(&mut new).insert("generation".into(), json!(next));
    } else {
        meta_mut(&mut new).remove("generation");
    }
    let mut old_cmp = old.clone();
    if let Some(m) = old_cmp["metadata"].as_object_mut() {
        m.remove("resourceVersion");
    }
    // Keep field order stable relative to the old object where nothing changed.
    if new == old_cmp {
        return old.clone();
    }
    new
}

fn check_preconditions(
    info: &ResourceInfo,
    name: &str,
    obj: &Value,
    options: &DeleteOptions,
) -> ApiResult<()> {
    if let Some(uid) = &options.precondition_uid {
        let actual = object::uid(obj).unwrap_or("");
        if uid != actual {
            return Err(ApiError::conflict(
                info.group,
                info.plural,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                ),
            ));
        }
    }
    if let Some(rv) = &options.precondition_resource_version {
        let actual = object::resource_version(obj).unwrap_or("");
        if rv != actual {
            return Err(ApiError::conflict(
                info.group,
                info.plural,
                name,
                &format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"),
            ));
        }
    }
    Ok(())
}

/// The grace period of a delete: pods on a node get theirs (the kubelet finishes the delete);
/// everything else goes at once.
fn grace_period(info: &ResourceInfo, obj: &Value, options: &DeleteOptions) -> i64 {
    info.strategy.grace_period_seconds(obj, options.grace_period_seconds)
}

/// A second delete may only shorten the grace period of an object already terminating.
fn shortens_grace(obj: &Value, grace: i64) -> bool {
    obj["metadata"]["deletionGracePeriodSeconds"].as_i64().is_some_and(|g| grace < g)
}

/// Continue tokens: base64 of `{"v":"meta.k8s.io/v1","rv":N,"start":"<key after prefix>"}`,
/// as kube-apiserver writes them.
fn encode_continue(revision: Revision, start_key: &str, prefix: &str) -> String {
    use base64::Engine;
    let start = start_key.strip_prefix(prefix).unwrap_or(start_key);
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": start});
    base64::engine::general_purpose::URL_SAFE.encode(token.to_string())
}

fn decode_continue(token: &str, prefix: &str) -> ApiResult<(Revision, String)> {
    use base64::Engine;
    let invalid = || {
        ApiError::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    };
    let raw = base64::engine::general_purpose::URL_SAFE
        .decode(token)
        .or_else(|_| base64::engine::general_purpose::STANDARD.decode(token))
        .map_err(|_| invalid())?;
    let value: Value = serde_json::from_slice(&raw).map_err(|_| invalid())?;
    if value["v"] != "meta.k8s.io/v1" {
        return Err(invalid());
    }
    // -1: the rest of a list whose revision was compacted, at the latest revision.
    let rv = value["rv"].as_i64().filter(|&rv| rv > 0 || rv == -1).ok_or_else(invalid)?;
    let start = value["start"].as_str().ok_or_else(invalid)?;
    if start.contains("..") || start.starts_with('/') {
        return Err(invalid());
    }
    Ok((rv, format!("{prefix}{start}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let token = encode_continue(42, "/registry/pods/default/web\0", "/registry/pods/");
        assert_eq!(
            decode_continue(&token, "/registry/pods/").unwrap(),
            (42, "/registry/pods/default/web\0".to_string())
        );
        assert!(decode_continue("garbage", "/registry/pods/").is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn racing_patches_all_land_and_a_stale_update_gets_409() {
        let dir = std::env::temp_dir().join(format!("rkube-registry-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = rkube_store::SqliteStore::open(&dir, Default::default()).unwrap();
        let ranges = crate::services::ServiceRanges::parse("10.43.0.0/16", (30000, 32767));
        let registry = Arc::new(Registry::new(Arc::new(store), ranges.unwrap()));
        let info = rkube_apis::resources::Resources::builtin().get("", "v1", "configmaps").unwrap();
        let options = WriteOptions::default();
        let namespaces = rkube_apis::resources::Resources::builtin().get("", "v1", "namespaces");
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
        registry.create(namespaces.unwrap(), None, ns, &options).await.unwrap();
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let created = registry.create(info, Some("default"), cm, &options).await.unwrap();
        // Patches are applied to the object as it is when written (so they carry its
        // resourceVersion): one that loses a race is applied again, never refused.
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..16 {
            let registry = registry.clone();
            tasks.spawn(async move {
                let options = WriteOptions::default();
                registry
                    .modify(info, Some("default"), "c", None, &options, None, |old| {
                        let mut new = old.clone();
                        new["data"][format!("k{i}")] = json!("v");
                        Ok(new)
                    })
                    .await
            });
        }
        while let Some(result) = tasks.join_next().await {
            result.unwrap().unwrap();
        }
        let (kv, _) = registry
            .store
            .get(&registry.key(info, Some("default"), "c").unwrap(), None)
            .await
            .unwrap();
        let stored = registry.decode(info, &kv.unwrap()).unwrap();
        assert_eq!(stored["data"].as_object().unwrap().len(), 16, "{stored}");
        // An update naming an old resourceVersion is a conflict.
        let err =
            registry.update(info, Some("default"), "c", None, created, &options).await.unwrap_err();
        assert_eq!(err.code, http::StatusCode::CONFLICT);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
