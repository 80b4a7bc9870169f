//! The built-in resources rkube serves: what discovery says of each one, and where it lives
//! in the store.
//!
//! Group, version, kind, list kind, plural and scope come from the `k8s-openapi` types (its
//! `Resource` trait), so they cannot drift from the types; what the types do not carry
//! (verbs, short names, categories, subresources) is a table per resource below, as
//! kube-apiserver v1.33 reports it.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use k8s_openapi::api;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;

use crate::kinds;
use crate::strategy::{Generic, Strategy};

/// See [`ResourceInfo::normalize`]: the normalized object and the unknown fields, or the
/// type error.
pub type NormalizeFn = Arc<
    dyn Fn(&serde_json::Value) -> Result<(serde_json::Value, Vec<String>), String> + Send + Sync,
>;

/// See [`ResourceInfo::schema`]: puts the kind's schema in the generator's definitions and
/// answers a `$ref` to it.
pub type SchemaFn = Arc<dyn Fn(&mut schemars::SchemaGenerator) -> schemars::Schema + Send + Sync>;

/// One resource of one group version.
#[derive(Clone)]
pub struct ResourceInfo {
    /// `""` for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub list_kind: &'static str,
    /// The URL segment, e.g. `pods`.
    pub plural: &'static str,
    /// The lower-case kind, e.g. `pod`.
    pub singular: String,
    pub namespaced: bool,
    pub verbs: &'static [&'static str],
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    /// Subresources served under `<plural>/<name>/<subresource>`.
    pub subresources: &'static [&'static str],
    /// True when this version is where objects are stored (one per stored resource).
    pub storage_version: bool,
    /// The group and plural whose storage holds this resource's objects: its own, except for
    /// what upstream serves in two groups from one storage (its "cohabitating resources":
    /// events.k8s.io Events are core Events). Such a resource is converted to and from the
    /// storage version like another version of the same resource (see `crate::convert`).
    pub storage_resource: (&'static str, &'static str),
    /// Reads an object as this kind's `k8s-openapi` type and writes it back, as kube-apiserver
    /// decodes into its Go types: a type error is `Err`; fields the type does not have are
    /// dropped, and their paths (`spec.foo`) returned, for the API's `fieldValidation`.
    pub normalize: NormalizeFn,
    /// The kind's JSON schema (a `$ref` into the generator's definitions), for OpenAPI.
    pub schema: SchemaFn,
    /// Everything the registry does differently for this resource (see
    /// [`crate::strategy::Strategy`]).
    pub strategy: Arc<dyn Strategy>,
}

impl std::fmt::Debug for ResourceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceInfo")
            .field("group", &self.group)
            .field("version", &self.version)
            .field("plural", &self.plural)
            .field("kind", &self.kind)
            .field("strategy", &self.strategy)
            .finish_non_exhaustive()
    }
}

impl ResourceInfo {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `pods` or `deployments.apps`: how kubectl and errors name the resource.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    pub fn has_subresource(&self, name: &str) -> bool {
        self.subresources.contains(&name)
    }

    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }

    /// The store prefix of every object of this resource, as kube-apiserver lays out etcd:
    /// `/registry/<resource>/` for the core group, `/registry/<group>/<resource>/` otherwise,
    /// named for the resource it is stored with. Every served version of a resource (and every
    /// group serving it) shares it.
    pub fn key_prefix(&self) -> String {
        match self.storage_resource {
            ("", plural) => format!("/registry/{plural}/"),
            (group, plural) => format!("/registry/{group}/{plural}/"),
        }
    }

    /// True when this resource's objects are stored with another group's resource.
    pub fn stored_elsewhere(&self) -> bool {
        self.storage_resource != (self.group, self.plural)
    }

    /// The store key of one object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace.filter(|_| self.namespaced) {
            Some(ns) => format!("{}{ns}/{name}", self.key_prefix()),
            None => format!("{}{name}", self.key_prefix()),
        }
    }

    /// The store prefix of the objects in one namespace (or all, with `None`).
    pub fn namespace_prefix(&self, namespace: Option<&str>) -> String {
        match namespace.filter(|_| self.namespaced) {
            Some(ns) => format!("{}{ns}/", self.key_prefix()),
            None => self.key_prefix(),
        }
    }
}

/// Standard verbs of a resource that is stored.
pub const STANDARD_VERBS: &[&str] =
    &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
const CREATE_ONLY: &[&str] = &["create"];
const READ_ONLY: &[&str] = &["get", "list"];

/// What the k8s-openapi types do not say about a resource.
struct Extra {
    verbs: &'static [&'static str],
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    subresources: &'static [&'static str],
    storage_version: bool,
}

const fn extra(
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    subresources: &'static [&'static str],
) -> Extra {
    Extra { verbs: STANDARD_VERBS, short_names, categories, subresources, storage_version: true }
}

const ALL: &[&str] = &["all"];
const API_EXTENSIONS: &[&str] = &["api-extensions"];
const NONE: &[&str] = &[];
const STATUS: &[&str] = &["status"];
const SCALE_STATUS: &[&str] = &["scale", "status"];

/// Whether a `k8s-openapi` scope type is namespaced.
trait Scope {
    const NAMESPACED: bool;
}
impl Scope for k8s_openapi::NamespaceResourceScope {
    const NAMESPACED: bool = true;
}
impl Scope for k8s_openapi::ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// Deserializes `value` as `T` and serializes it again, collecting the fields `T` does not
/// know; zero times where k8s-openapi wants a time are read as Go reads them
/// ([`crate::go_json::zero_times`]).
fn normalize<T: serde::de::DeserializeOwned + serde::Serialize>(
    value: &serde_json::Value,
) -> Result<(serde_json::Value, Vec<String>), String> {
    use crate::go_json::{may_hold_zero_times, zero_times, ZeroTimes};
    let mut unknown = Vec::new();
    // Most kinds hold no required time: they are read as they came, without a copy.
    let times = may_hold_zero_times(value);
    let filled;
    let value = if times {
        let mut copy = value.clone();
        zero_times(&mut copy, ZeroTimes::Fill);
        filled = copy;
        &filled
    } else {
        value
    };
    let typed: T = serde_ignored::deserialize(value, |path| {
        let field = field_path(&path);
        if !field.is_empty() {
            unknown.push(field);
        }
    })
    .map_err(|e| e.to_string())?;
    let mut normalized = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    if times {
        zero_times(&mut normalized, ZeroTimes::Drop);
    }
    drop_invented_lists(value, &mut normalized);
    Ok((normalized, unknown))
}

/// Drops the empty lists the typed round trip wrote where the object had none (absent or
/// `null`): k8s-openapi keeps a required list as a `Vec`, written `[]`, where Go keeps a nil
/// slice, written `null` (a CSINode's `spec.drivers`, an EndpointSlice's `endpoints`). Left
/// out, the list is written as Go writes it ([`crate::go_json`] writes `null` for a required
/// one). A list the client sent empty stays `[]`, as Go decodes it; kube-apiserver's protobuf
/// storage then reads it back as nil (`null` or left out), which rkube's JSON storage does not.
fn drop_invented_lists(original: &serde_json::Value, normalized: &mut serde_json::Value) {
    use serde_json::Value;
    match (original, normalized) {
        (Value::Object(was), Value::Object(now)) => {
            now.retain(|key, v| {
                let had = was.get(key).is_some_and(|w| !w.is_null());
                had || !matches!(v, Value::Array(items) if items.is_empty())
            });
            for (key, v) in now.iter_mut() {
                if let Some(w) = was.get(key) {
                    drop_invented_lists(w, v);
                }
            }
        }
        (Value::Array(was), Value::Array(now)) => {
            for (w, v) in was.iter().zip(now.iter_mut()) {
                drop_invented_lists(w, v);
            }
        }
        _ => {}
    }
}

/// `spec.containers[0].foo`, the way upstream names fields in errors.
fn field_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", field_path(parent)),
        Path::Map { parent, key } => {
            let p = field_path(parent);
            if p.is_empty() {
                key.clone()
            } else {
                format!("{p}.{key}")
            }
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => field_path(parent),
    }
}

fn info<T>(extra: Extra, strategy: impl Strategy + 'static) -> ResourceInfo
where
    T: 'static
        + k8s_openapi::Resource
        + k8s_openapi::ListableResource
        + serde::de::DeserializeOwned
        + serde::Serialize
        + schemars::JsonSchema,
    T::Scope: Scope,
{
    ResourceInfo {
        group: T::GROUP,
        version: T::VERSION,
        kind: T::KIND,
        list_kind: T::LIST_KIND,
        plural: T::URL_PATH_SEGMENT,
        singular: T::KIND.to_ascii_lowercase(),
        namespaced: <T::Scope as Scope>::NAMESPACED,
        verbs: extra.verbs,
        short_names: extra.short_names,
        categories: extra.categories,
        subresources: extra.subresources,
        storage_version: extra.storage_version,
        storage_resource: (T::GROUP, T::URL_PATH_SEGMENT),
        normalize: Arc::new(normalize::<T>),
        schema: Arc::new(|generator| generator.subschema_for::<T>()),
        strategy: Arc::new(strategy),
    }
}

/// A resource that is only ever created and answered, never stored (reviews, bindings).
fn create_only<T>(namespaced: bool) -> ResourceInfo
where
    T: 'static
        + k8s_openapi::Resource
        + serde::de::DeserializeOwned
        + serde::Serialize
        + schemars::JsonSchema,
{
    ResourceInfo {
        group: T::GROUP,
        version: T::VERSION,
        kind: T::KIND,
        list_kind: "",
        plural: T::URL_PATH_SEGMENT,
        singular: T::KIND.to_ascii_lowercase(),
        namespaced,
        verbs: CREATE_ONLY,
        short_names: NONE,
        categories: NONE,
        subresources: NONE,
        storage_version: false,
        storage_resource: (T::GROUP, T::URL_PATH_SEGMENT),
        normalize: Arc::new(normalize::<T>),
        schema: Arc::new(|generator| generator.subschema_for::<T>()),
        strategy: Arc::new(Generic),
    }
}

/// Every built-in resource with its strategy: the one table that maps resources to
/// strategies (`crate::kinds`).
fn build() -> Vec<ResourceInfo> {
    use api::{
        admissionregistration::v1 as admission, apps::v1 as apps, authentication::v1 as authn,
        authorization::v1 as authz, autoscaling::v1 as autoscaling1,
        autoscaling::v2 as autoscaling2, batch::v1 as batch, certificates::v1 as certificates,
        coordination::v1 as coordination, core::v1 as core, discovery::v1 as discovery,
        events::v1 as events, flowcontrol::v1 as flowcontrol, networking::v1 as networking,
        node::v1 as node, policy::v1 as policy, rbac::v1 as rbac, scheduling::v1 as scheduling,
        storage::v1 as storage,
    };
    let mut all = vec![
        // core
        create_only::<core::Binding>(true),
        ResourceInfo {
            verbs: READ_ONLY,
            ..info::<core::ComponentStatus>(
                extra(&["cs"], NONE, NONE),
                kinds::core::ComponentStatuses,
            )
        },
        info::<core::ConfigMap>(extra(&["cm"], NONE, NONE), kinds::core::ConfigMaps),
        info::<core::Endpoints>(extra(&["ep"], NONE, NONE), kinds::core::Endpoints),
        info::<core::Event>(extra(&["ev"], NONE, NONE), kinds::core::Events),
        info::<core::LimitRange>(extra(&["limits"], NONE, NONE), kinds::core::LimitRanges),
        info::<core::Namespace>(
            extra(&["ns"], NONE, &["finalize", "status"]),
            kinds::core::Namespaces,
        ),
        info::<core::Node>(extra(&["no"], NONE, &["proxy", "status"]), kinds::core::Nodes),
        info::<core::PersistentVolume>(
            extra(&["pv"], NONE, STATUS),
            kinds::core::PersistentVolumes,
        ),
        info::<core::PersistentVolumeClaim>(
            extra(&["pvc"], NONE, STATUS),
            kinds::core::PersistentVolumeClaims,
        ),
        info::<core::Pod>(
            extra(
                &["po"],
                ALL,
                &[
                    "attach",
                    "binding",
                    "ephemeralcontainers",
                    "eviction",
                    "exec",
                    "log",
                    "portforward",
                    "proxy",
                    "resize",
                    "status",
                ],
            ),
            kinds::core::Pods,
        ),
        info::<core::PodTemplate>(extra(NONE, NONE, NONE), kinds::core::PodTemplates),
        info::<core::ReplicationController>(
            extra(&["rc"], ALL, SCALE_STATUS),
            kinds::core::ReplicationControllers,
        ),
        info::<core::ResourceQuota>(extra(&["quota"], NONE, STATUS), kinds::core::ResourceQuotas),
        info::<core::Secret>(extra(NONE, NONE, NONE), kinds::core::Secrets),
        info::<core::ServiceAccount>(
            extra(&["sa"], NONE, &["token"]),
            kinds::core::ServiceAccounts,
        ),
        info::<core::Service>(extra(&["svc"], ALL, &["proxy", "status"]), kinds::core::Services),
        // apps
        info::<apps::ControllerRevision>(extra(NONE, NONE, NONE), kinds::apps::ControllerRevisions),
        info::<apps::DaemonSet>(extra(&["ds"], ALL, STATUS), kinds::apps::DaemonSets),
        info::<apps::Deployment>(extra(&["deploy"], ALL, SCALE_STATUS), kinds::apps::Deployments),
        info::<apps::ReplicaSet>(extra(&["rs"], ALL, SCALE_STATUS), kinds::apps::ReplicaSets),
        info::<apps::StatefulSet>(extra(&["sts"], ALL, SCALE_STATUS), kinds::apps::StatefulSets),
        // batch
        info::<batch::CronJob>(extra(&["cj"], ALL, STATUS), kinds::batch::CronJobs),
        info::<batch::Job>(extra(NONE, ALL, STATUS), kinds::batch::Jobs),
        // autoscaling: v2 is stored, v1 served from it
        ResourceInfo {
            storage_version: false,
            ..info::<autoscaling1::HorizontalPodAutoscaler>(
                extra(&["hpa"], ALL, STATUS),
                kinds::autoscaling::HorizontalPodAutoscalersV1,
            )
        },
        info::<autoscaling2::HorizontalPodAutoscaler>(
            extra(&["hpa"], ALL, STATUS),
            kinds::autoscaling::HorizontalPodAutoscalers,
        ),
        // policy
        info::<policy::PodDisruptionBudget>(
            extra(&["pdb"], NONE, STATUS),
            kinds::policy::PodDisruptionBudgets,
        ),
        // networking.k8s.io
        info::<networking::IngressClass>(
            extra(NONE, NONE, NONE),
            kinds::networking::IngressClasses,
        ),
        info::<networking::Ingress>(extra(&["ing"], NONE, STATUS), kinds::networking::Ingresses),
        info::<networking::IPAddress>(extra(&["ip"], NONE, NONE), kinds::networking::IpAddresses),
        info::<networking::NetworkPolicy>(
            extra(&["netpol"], NONE, NONE),
            kinds::networking::NetworkPolicies,
        ),
        info::<networking::ServiceCIDR>(extra(NONE, NONE, STATUS), kinds::networking::ServiceCidrs),
        // discovery.k8s.io, events.k8s.io, coordination.k8s.io
        info::<discovery::EndpointSlice>(extra(NONE, NONE, NONE), kinds::discovery::EndpointSlices),
        // served from the core Events' storage, as upstream
        ResourceInfo {
            storage_version: false,
            storage_resource: ("", "events"),
            ..info::<events::Event>(extra(&["ev"], NONE, NONE), kinds::events::Events)
        },
        info::<coordination::Lease>(extra(NONE, NONE, NONE), kinds::coordination::Leases),
        // rbac.authorization.k8s.io
        info::<rbac::ClusterRoleBinding>(extra(NONE, NONE, NONE), kinds::rbac::ClusterRoleBindings),
        info::<rbac::ClusterRole>(extra(NONE, NONE, NONE), kinds::rbac::ClusterRoles),
        info::<rbac::RoleBinding>(extra(NONE, NONE, NONE), kinds::rbac::RoleBindings),
        info::<rbac::Role>(extra(NONE, NONE, NONE), kinds::rbac::Roles),
        // storage.k8s.io
        info::<storage::CSIDriver>(extra(NONE, NONE, NONE), kinds::storage::CsiDrivers),
        info::<storage::CSINode>(extra(NONE, NONE, NONE), kinds::storage::CsiNodes),
        info::<storage::CSIStorageCapacity>(
            extra(NONE, NONE, NONE),
            kinds::storage::CsiStorageCapacities,
        ),
        info::<storage::StorageClass>(extra(&["sc"], NONE, NONE), kinds::storage::StorageClasses),
        info::<storage::VolumeAttachment>(
            extra(NONE, NONE, STATUS),
            kinds::storage::VolumeAttachments,
        ),
        // scheduling.k8s.io, node.k8s.io, certificates.k8s.io
        info::<scheduling::PriorityClass>(
            extra(&["pc"], NONE, NONE),
            kinds::scheduling::PriorityClasses,
        ),
        info::<node::RuntimeClass>(extra(NONE, NONE, NONE), kinds::node::RuntimeClasses),
        info::<certificates::CertificateSigningRequest>(
            extra(&["csr"], NONE, &["approval", "status"]),
            kinds::certificates::CertificateSigningRequests,
        ),
        // admissionregistration.k8s.io
        info::<admission::MutatingWebhookConfiguration>(
            extra(NONE, API_EXTENSIONS, NONE),
            kinds::admissionregistration::MutatingWebhookConfigurations,
        ),
        info::<admission::ValidatingAdmissionPolicy>(
            extra(NONE, API_EXTENSIONS, STATUS),
            kinds::admissionregistration::ValidatingAdmissionPolicies,
        ),
        info::<admission::ValidatingAdmissionPolicyBinding>(
            extra(NONE, API_EXTENSIONS, NONE),
            kinds::admissionregistration::ValidatingAdmissionPolicyBindings,
        ),
        info::<admission::ValidatingWebhookConfiguration>(
            extra(NONE, API_EXTENSIONS, NONE),
            kinds::admissionregistration::ValidatingWebhookConfigurations,
        ),
        // apiextensions.k8s.io, apiregistration.k8s.io
        info::<apiextensions::CustomResourceDefinition>(
            extra(&["crd", "crds"], API_EXTENSIONS, STATUS),
            kinds::apiextensions::CustomResourceDefinitions,
        ),
        info::<apiregistration::APIService>(
            extra(NONE, API_EXTENSIONS, STATUS),
            kinds::apiregistration::ApiServices,
        ),
        // flowcontrol.apiserver.k8s.io
        info::<flowcontrol::FlowSchema>(extra(NONE, NONE, STATUS), kinds::flowcontrol::FlowSchemas),
        info::<flowcontrol::PriorityLevelConfiguration>(
            extra(NONE, NONE, STATUS),
            kinds::flowcontrol::PriorityLevelConfigurations,
        ),
        // authentication and authorization: reviews answered on create
        create_only::<authn::SelfSubjectReview>(false),
        create_only::<authn::TokenReview>(false),
        create_only::<authz::LocalSubjectAccessReview>(true),
        create_only::<authz::SelfSubjectAccessReview>(false),
        create_only::<authz::SelfSubjectRulesReview>(false),
        create_only::<authz::SubjectAccessReview>(false),
    ];
    // The event kinds share a plural across groups; nothing else does.
    all.sort_by(|a, b| (a.group, a.version, a.plural).cmp(&(b.group, b.version, b.plural)));
    all
}

/// A set of resources with lookups: the built-in ones ([`Resources::builtin`]), and the
/// snapshots of a live table that adds and removes resources while the server runs
/// ([`Resources::with`], [`Resources::without`]). A snapshot never changes; the table swaps
/// in a new one.
#[derive(Clone)]
pub struct Resources {
    all: Vec<Arc<ResourceInfo>>,
    by_gvr: HashMap<(&'static str, &'static str, &'static str), usize>,
    /// The storage version of each stored group and plural (asked on every request).
    storage_by_gr: HashMap<(&'static str, &'static str), usize>,
}

impl Resources {
    /// The built-in resources of Kubernetes v1.33, built once.
    pub fn builtin() -> &'static Resources {
        static RESOURCES: OnceLock<Resources> = OnceLock::new();
        RESOURCES.get_or_init(|| Resources::new(build().into_iter().map(Arc::new).collect()))
    }

    fn new(all: Vec<Arc<ResourceInfo>>) -> Resources {
        let by_gvr =
            all.iter().enumerate().map(|(i, r)| ((r.group, r.version, r.plural), i)).collect();
        let storage_by_gr = all
            .iter()
            .enumerate()
            .filter(|(_, r)| r.storage_version)
            .map(|(i, r)| ((r.group, r.plural), i))
            .collect();
        Resources { all, by_gvr, storage_by_gr }
    }

    /// These resources and `added`; an error when its group, version and resource are taken,
    /// or when it is a storage version of a stored resource that has one.
    pub fn with(&self, added: ResourceInfo) -> Result<Resources, String> {
        if self.get(added.group, added.version, added.plural).is_some() {
            return Err(format!("{}/{} is already served", added.api_version(), added.plural));
        }
        if added.storage_version && self.storage_version_of(added.group, added.plural).is_some() {
            return Err(format!("{} already has a storage version", added.group_resource()));
        }
        let mut all = self.all.clone();
        all.push(Arc::new(added));
        Ok(Resources::new(all))
    }

    /// These resources without the one served at `group`/`version`/`plural`.
    pub fn without(&self, group: &str, version: &str, plural: &str) -> Resources {
        let all = self
            .all
            .iter()
            .filter(|r| (r.group, r.version, r.plural) != (group, version, plural))
            .cloned()
            .collect();
        Resources::new(all)
    }

    pub fn all(&self) -> &[Arc<ResourceInfo>] {
        &self.all
    }

    /// The resource served at `/apis/<group>/<version>/<plural>`.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceInfo>> {
        self.by_gvr.get(&(group, version, plural)).map(|&i| &self.all[i])
    }

    /// The served groups with their versions, preferred (first) version first, in the order
    /// kube-apiserver lists them: the core group, then the others.
    pub fn groups(&self) -> Vec<(&'static str, Vec<&'static str>)> {
        let mut groups: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
        for r in &self.all {
            match groups.iter_mut().find(|(g, _)| *g == r.group) {
                Some((_, versions)) if !versions.contains(&r.version) => versions.push(r.version),
                Some(_) => {}
                None => groups.push((r.group, vec![r.version])),
            }
        }
        for (_, versions) in &mut groups {
            // Newest first: v2 before v1, v1 before v1beta1.
            versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        }
        groups.sort_by_key(|(g, _)| group_order(g));
        groups
    }

    /// The resources of one group version.
    pub fn in_group_version<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
    ) -> impl Iterator<Item = &'a Arc<ResourceInfo>> + 'a {
        self.all.iter().filter(move |r| r.group == group && r.version == version)
    }

    /// The resource whose kind (or list kind) `kind` is in `api_version` (`v1`, `apps/v1`).
    pub fn kind_in(&self, api_version: &str, kind: &str) -> Option<&Arc<ResourceInfo>> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.all.iter().find(|r| {
            (r.group, r.version) == (group, version) && (r.kind == kind || r.list_kind == kind)
        })
    }

    /// The version objects of this stored group and resource are stored in.
    pub fn storage_version_of(&self, group: &str, plural: &str) -> Option<&Arc<ResourceInfo>> {
        self.storage_by_gr.get(&(group, plural)).map(|&i| &self.all[i])
    }

    /// Where the objects `info` serves are stored: its storage version, or that of the
    /// resource it is stored with.
    pub fn storage_of(&self, info: &ResourceInfo) -> Option<&Arc<ResourceInfo>> {
        let (group, plural) = info.storage_resource;
        self.storage_version_of(group, plural)
    }
}

/// `list` as a `&'static` slice of `&'static str`, kept once per distinct list (see
/// [`intern`]).
pub fn intern_list(list: &[&str]) -> &'static [&'static str] {
    type Lists = HashMap<Vec<String>, &'static [&'static str]>;
    static INTERNED: OnceLock<std::sync::Mutex<Lists>> = OnceLock::new();
    let key: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    let mut lists = INTERNED.get_or_init(Default::default).lock().expect("intern lock");
    lists.entry(key).or_insert_with(|| {
        let owned: Vec<&'static str> = list.iter().map(|s| intern(s)).collect();
        Box::leak(owned.into_boxed_slice())
    })
}

/// `text` as a `&'static str`, for the names of resources added while the server runs: each
/// distinct text is kept once for the life of the process (re-adding a resource of the same
/// names takes no more memory).
pub fn intern(text: &str) -> &'static str {
    static INTERNED: OnceLock<std::sync::Mutex<std::collections::HashSet<&'static str>>> =
        OnceLock::new();
    let mut set = INTERNED.get_or_init(Default::default).lock().expect("intern lock");
    if let Some(kept) = set.get(text) {
        return kept;
    }
    let kept: &'static str = Box::leak(text.to_string().into_boxed_str());
    set.insert(kept);
    kept
}

/// Kubernetes version priority: GA > beta > alpha, then by number.
fn version_priority(v: &str) -> (u8, u32, u32) {
    let rest = v.trim_start_matches('v');
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let major = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (level, minor) = if let Some(n) = tail.strip_prefix("beta") {
        (1, n.parse().unwrap_or(0))
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (0, n.parse().unwrap_or(0))
    } else {
        (2, 0)
    };
    (level, major, minor)
}

/// The order of groups in `/apis`, as kube-apiserver v1.33 lists them.
fn group_order(group: &str) -> usize {
    const ORDER: &[&str] = &[
        "",
        "apiregistration.k8s.io",
        "apps",
        "events.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "networking.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "storage.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "scheduling.k8s.io",
        "coordination.k8s.io",
        "node.k8s.io",
        "discovery.k8s.io",
        "flowcontrol.apiserver.k8s.io",
    ];
    ORDER.iter().position(|g| *g == group).unwrap_or(ORDER.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_are_namespaced_core_resources_with_subresources() {
        let pods = Resources::builtin().get("", "v1", "pods").unwrap();
        assert_eq!((pods.kind, pods.list_kind, pods.singular.as_str()), ("Pod", "PodList", "pod"));
        assert!(pods.namespaced);
        assert!(pods.has_subresource("status") && pods.has_subresource("binding"));
        assert_eq!(pods.key(Some("default"), "web"), "/registry/pods/default/web");
        let nodes = Resources::builtin().get("", "v1", "nodes").unwrap();
        assert!(!nodes.namespaced);
        assert_eq!(nodes.key(None, "n1"), "/registry/nodes/n1");
        let deploy = Resources::builtin().get("apps", "v1", "deployments").unwrap();
        assert_eq!(deploy.key(Some("ns"), "d"), "/registry/apps/deployments/ns/d");
        assert_eq!(deploy.short_names, &["deploy"]);
    }

    #[test]
    fn normalize_drops_unknown_fields_and_rejects_type_errors() {
        let pods = Resources::builtin().get("", "v1", "pods").unwrap();
        let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i", "bogus": 1}], "extra": true}});
        let (normalized, unknown) = (pods.normalize)(&pod).unwrap();
        assert_eq!(unknown, vec!["spec.containers[0].bogus", "spec.extra"]);
        assert!(normalized["spec"].get("extra").is_none());
        assert!(normalized["spec"]["containers"][0].get("bogus").is_none());
        assert_eq!(normalized["spec"]["containers"][0]["image"], "i");
        let bad = serde_json::json!({"spec": {"containers": "not a list"}});
        assert!((pods.normalize)(&bad).is_err());
    }

    #[test]
    fn normalize_keeps_a_required_list_nil_as_go_does() {
        let csinodes = Resources::builtin().get("storage.k8s.io", "v1", "csinodes").unwrap();
        let node = |spec: serde_json::Value| {
            serde_json::json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": "n"}, "spec": spec})
        };
        for spec in [serde_json::json!({"drivers": null}), serde_json::json!({})] {
            let (normalized, _) = (csinodes.normalize)(&node(spec)).unwrap();
            assert_eq!(normalized["spec"], serde_json::json!({}));
            // Written as Go writes a nil slice.
            let text = String::from_utf8(crate::go_json::to_vec(&normalized)).unwrap();
            assert!(text.contains(r#""spec":{"drivers":null}"#), "{text}");
        }
        // A list sent empty stays empty, as Go decodes an empty slice.
        let (normalized, _) =
            (csinodes.normalize)(&node(serde_json::json!({"drivers": []}))).unwrap();
        assert_eq!(normalized["spec"], serde_json::json!({"drivers": []}));
        let (normalized, _) = (csinodes.normalize)(&node(serde_json::json!({"drivers": [
            {"name": "d", "nodeID": "n1"}]})))
        .unwrap();
        assert_eq!(
            normalized["spec"]["drivers"][0],
            serde_json::json!({"name": "d", "nodeID": "n1"})
        );
    }

    #[test]
    fn normalize_reads_a_null_or_missing_condition_time_as_go_does() {
        let services = Resources::builtin().get("", "v1", "services").unwrap();
        let condition = |time: serde_json::Value| {
            let mut c = serde_json::json!({"type": "StatusUpdate", "status": "True",
                "reason": "E2E", "message": "m"});
            c["lastTransitionTime"] = time;
            serde_json::json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                "status": {"conditions": [c]}})
        };
        for time in [serde_json::json!(null), serde_json::json!("0001-01-01T00:00:00Z")] {
            let (normalized, _) = (services.normalize)(&condition(time)).unwrap();
            let written = normalized["status"]["conditions"][0].clone();
            assert!(written.get("lastTransitionTime").is_none(), "{written}");
            assert_eq!(written["reason"], "E2E");
            // Written as Go writes the zero time.
            let text = String::from_utf8(crate::go_json::to_vec(&normalized)).unwrap();
            assert!(text.contains(r#""lastTransitionTime":null"#), "{text}");
        }
        let mut missing = condition(serde_json::json!(null));
        missing["status"]["conditions"][0].as_object_mut().unwrap().remove("lastTransitionTime");
        assert!((services.normalize)(&missing).is_ok());
        let set = condition(serde_json::json!("2024-01-02T03:04:05Z"));
        let (normalized, _) = (services.normalize)(&set).unwrap();
        assert_eq!(
            normalized["status"]["conditions"][0]["lastTransitionTime"],
            "2024-01-02T03:04:05Z"
        );
    }

    #[test]
    fn only_kinds_with_a_required_time_are_walked_for_zero_times() {
        let kind = |api_version: &str, kind: &str| serde_json::json!({"apiVersion": api_version, "kind": kind});
        assert!(crate::go_json::may_hold_zero_times(&kind("v1", "Service")));
        assert!(!crate::go_json::may_hold_zero_times(&kind("v1", "Pod")));
        assert!(!crate::go_json::may_hold_zero_times(&kind("v1", "ConfigMap")));
    }

    #[test]
    fn both_autoscaling_versions_share_one_storage_version() {
        let r = Resources::builtin();
        let v1 = r.get("autoscaling", "v1", "horizontalpodautoscalers").unwrap();
        let v2 = r.get("autoscaling", "v2", "horizontalpodautoscalers").unwrap();
        assert_eq!(v1.key_prefix(), v2.key_prefix());
        assert_eq!(
            r.storage_version_of("autoscaling", "horizontalpodautoscalers").unwrap().version,
            "v2"
        );
        let groups = r.groups();
        let autoscaling = groups.iter().find(|(g, _)| *g == "autoscaling").unwrap();
        assert_eq!(autoscaling.1, vec!["v2", "v1"]);
        assert_eq!(groups[0].0, "");
    }

    #[test]
    fn events_of_both_groups_live_in_the_core_events_storage() {
        let r = Resources::builtin();
        let core = r.get("", "v1", "events").unwrap();
        let events = r.get("events.k8s.io", "v1", "events").unwrap();
        assert_eq!(events.key(Some("ns"), "e"), "/registry/events/ns/e");
        assert_eq!(core.key(Some("ns"), "e"), events.key(Some("ns"), "e"));
        assert!(events.stored_elsewhere() && !core.stored_elsewhere());
        assert_eq!(r.storage_of(events).unwrap().api_version(), "v1");
        assert_eq!(r.storage_of(core).unwrap().api_version(), "v1");
        // One storage version per stored resource.
        assert_eq!(r.all().iter().filter(|i| i.storage_version && i.plural == "events").count(), 1);
    }
}
