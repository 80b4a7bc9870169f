//! The scale of a pod's controller, for budgets given as a percentage or as
//! `maxUnavailable`: upstream's controller finders, tried in its order. ReplicationControllers,
//! Deployments (through the pod's ReplicaSet), ReplicaSets that no Deployment controls and
//! StatefulSets are read from the informers' caches; any other controller through its `scale`
//! subresource, found by discovery (refreshed every 30 s, as kube-controller-manager resets
//! its REST mapper). A controller counts only when its uid is the one the pod names.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DynamicObject};
use kube::runtime::reflector::ObjectRef;
use kube::Client;
use rkube_runtime::store::Store;
use std::sync::Arc;

use crate::controller_ref::controller_of;
use crate::discovery::{self, Mapper};

/// How long a discovery of the served resources is trusted.
const MAPPER_LIFETIME: Duration = Duration::from_secs(30);

/// Why a controller's scale could not be found (upstream's messages).
#[derive(Debug, thiserror::Error)]
pub enum ScaleError {
    #[error("found no controllers for pod {0:?}")]
    NoController(String),
    #[error("unexpected GroupVersion string: {0}")]
    GroupVersion(String),
    #[error("no matches for kind {kind:?} in version {api_version:?}")]
    NoKindMatch { kind: String, api_version: String },
    #[error("{0} does not implement the scale subresource")]
    NoScale(String),
    #[error(transparent)]
    Api(#[from] kube::Error),
}

/// The caches and the client the finders read.
pub struct Finders {
    pub client: Client,
    pub replication_controllers: Store<ReplicationController>,
    pub replica_sets: Store<ReplicaSet>,
    pub deployments: Store<Deployment>,
    pub stateful_sets: Store<StatefulSet>,
    mapper: tokio::sync::Mutex<Option<(Mapper, Instant)>>,
}

/// A controller found: its uid and its desired replicas.
type Found = Option<(String, i32)>;

/// The group of an apiVersion (`apps/v1` → `apps`, `v1` → ``).
fn group_of(api_version: &str) -> Result<&str, ScaleError> {
    match api_version.split('/').collect::<Vec<_>>()[..] {
        [_version] => Ok(""),
        [group, _version] => Ok(group),
        _ => Err(ScaleError::GroupVersion(api_version.to_string())),
    }
}

/// upstream's `verifyGroupKind`.
fn is_kind(r: &OwnerReference, kind: &str, groups: &[&str]) -> Result<bool, ScaleError> {
    let group = group_of(&r.api_version)?;
    Ok(r.kind == kind && groups.contains(&group))
}

fn get<K>(store: &Store<K>, namespace: &str, r: &OwnerReference) -> Option<Arc<K>>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    let found = store.get(&ObjectRef::new(&r.name).within(namespace))?;
    (found.meta().uid.as_deref() == Some(r.uid.as_str())).then_some(found)
}

impl Finders {
    pub fn new(
        client: Client,
        replication_controllers: Store<ReplicationController>,
        replica_sets: Store<ReplicaSet>,
        deployments: Store<Deployment>,
        stateful_sets: Store<StatefulSet>,
    ) -> Finders {
        Finders {
            client,
            replication_controllers,
            replica_sets,
            deployments,
            stateful_sets,
            mapper: tokio::sync::Mutex::new(None),
        }
    }

    /// The summed scale of the controllers of `pods` (each counted once), and the names of
    /// the pods without a controller; an error when a pod's controller is found nowhere.
    pub async fn expected_scale(
        &self,
        pods: &[Arc<Pod>],
    ) -> Result<(i32, Vec<String>), ScaleError> {
        let mut scales: HashMap<String, i32> = HashMap::new();
        let mut seen = std::collections::HashSet::new();
        let mut unmanaged = Vec::new();
        for pod in pods {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let Some(controller) = controller_of(&pod.metadata) else {
                unmanaged.push(name);
                continue;
            };
            if !seen.insert(controller.uid.clone()) {
                continue;
            }
            let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
            match self.find(controller, namespace).await? {
                Some((uid, scale)) => {
                    scales.insert(uid, scale);
                }
                None => return Err(ScaleError::NoController(name)),
            }
        }
        Ok((scales.values().sum(), unmanaged))
    }

    /// The first finder that knows `controller`, in upstream's order.
    async fn find(
        &self,
        controller: &OwnerReference,
        namespace: &str,
    ) -> Result<Found, ScaleError> {
        if let Some(found) = self.replication_controller(controller, namespace)? {
            return Ok(Some(found));
        }
        if let Some(found) = self.deployment(controller, namespace)? {
            return Ok(Some(found));
        }
        if let Some(found) = self.replica_set(controller, namespace)? {
            return Ok(Some(found));
        }
        if let Some(found) = self.stateful_set(controller, namespace)? {
            return Ok(Some(found));
        }
        self.scale_subresource(controller, namespace).await
    }

    fn replication_controller(&self, r: &OwnerReference, ns: &str) -> Result<Found, ScaleError> {
        if !is_kind(r, "ReplicationController", &[""])? {
            return Ok(None);
        }
        Ok(get(&self.replication_controllers, ns, r).map(|rc| {
            let replicas = rc.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
            (r.uid.clone(), replicas)
        }))
    }

    /// A ReplicaSet's Deployment, when one controls it.
    fn deployment(&self, r: &OwnerReference, ns: &str) -> Result<Found, ScaleError> {
        if !is_kind(r, "ReplicaSet", &["apps", "extensions"])? {
            return Ok(None);
        }
        let Some(rs) = get(&self.replica_sets, ns, r) else { return Ok(None) };
        let Some(owner) = controller_of(&rs.metadata) else { return Ok(None) };
        if !is_kind(owner, "Deployment", &["apps", "extensions"])? {
            return Ok(None);
        }
        Ok(get(&self.deployments, ns, owner).map(|d| {
            let replicas = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
            (owner.uid.clone(), replicas)
        }))
    }

    /// A ReplicaSet that no Deployment controls.
    fn replica_set(&self, r: &OwnerReference, ns: &str) -> Result<Found, ScaleError> {
        if !is_kind(r, "ReplicaSet", &["apps", "extensions"])? {
            return Ok(None);
        }
        let Some(rs) = get(&self.replica_sets, ns, r) else { return Ok(None) };
        if controller_of(&rs.metadata).is_some_and(|owner| owner.kind == "Deployment") {
            return Ok(None);
        }
        let replicas = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        Ok(Some((r.uid.clone(), replicas)))
    }

    fn stateful_set(&self, r: &OwnerReference, ns: &str) -> Result<Found, ScaleError> {
        if !is_kind(r, "StatefulSet", &["apps"])? {
            return Ok(None);
        }
        Ok(get(&self.stateful_sets, ns, r).map(|ss| {
            let replicas = ss.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
            (r.uid.clone(), replicas)
        }))
    }

    /// Any other controller, through its `scale` subresource.
    async fn scale_subresource(&self, r: &OwnerReference, ns: &str) -> Result<Found, ScaleError> {
        let group = group_of(&r.api_version)?;
        let mapper = self.mapper().await?;
        let no_match =
            || ScaleError::NoKindMatch { kind: r.kind.clone(), api_version: r.api_version.clone() };
        let (resource, _) = mapper.resolve(&r.api_version, &r.kind).ok_or_else(no_match)?;
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, &resource);
        match api.get_scale(&r.name).await {
            Ok(scale) => {
                let uid = scale.metadata.uid.unwrap_or_default();
                if uid != r.uid {
                    return Ok(None);
                }
                Ok(Some((uid, scale.spec.and_then(|s| s.replicas).unwrap_or(0))))
            }
            // Not found: the object is gone, or it has no scale subresource, which is an
            // error of its own.
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 405 => {
                if mapper.has_subresource(&r.api_version, &r.kind, "scale") {
                    return Ok(None);
                }
                let resource = match group {
                    "" => resource.plural.clone(),
                    group => format!("{}.{group}", resource.plural),
                };
                Err(ScaleError::NoScale(resource))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The served resources, discovered again once [`MAPPER_LIFETIME`] passed.
    async fn mapper(&self) -> Result<Mapper, ScaleError> {
        let mut cached = self.mapper.lock().await;
        if let Some((mapper, at)) = cached.as_ref() {
            if at.elapsed() < MAPPER_LIFETIME {
                return Ok(mapper.clone());
            }
        }
        let mapper = Mapper::new(&discovery::run(&self.client).await?);
        *cached = Some((mapper.clone(), Instant::now()));
        Ok(mapper)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(api_version: &str, kind: &str) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: "x".into(),
            uid: "u".into(),
            ..Default::default()
        }
    }

    #[test]
    fn kinds_are_matched_by_group_and_kind() {
        assert!(is_kind(
            &reference("apps/v1", "ReplicaSet"),
            "ReplicaSet",
            &["apps", "extensions"]
        )
        .unwrap());
        assert!(is_kind(
            &reference("extensions/v1beta1", "ReplicaSet"),
            "ReplicaSet",
            &["apps", "extensions"]
        )
        .unwrap());
        assert!(
            !is_kind(&reference("example.com/v1", "ReplicaSet"), "ReplicaSet", &["apps"]).unwrap()
        );
        assert!(is_kind(&reference("v1", "ReplicationController"), "ReplicationController", &[""])
            .unwrap());
        assert_eq!(
            is_kind(&reference("a/b/c", "X"), "X", &[""]).unwrap_err().to_string(),
            "unexpected GroupVersion string: a/b/c"
        );
    }
}
