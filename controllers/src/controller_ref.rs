//! Controller references, the way client-go's `ControllerRefManager` handles them: an object
//! belongs to at most one controller (the owner reference with `controller: true`), a
//! controller adopts the orphans its selector matches and releases the objects it owns that
//! its selector no longer matches. Adoption and release are strategic merge patches that name
//! the object's uid, so they never touch a different object of the same name.
//!
//! Used by the ReplicaSet controller (pods) and the Deployment controller (ReplicaSets).

use std::fmt::Debug;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::{Api, Patch, PatchParams};
use kube::Resource;
use serde_json::json;

/// The owner reference with `controller: true`, if the object has one.
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references.as_ref()?.iter().find(|r| r.controller == Some(true))
}

/// The controller reference an owner puts on what it makes or adopts: `controller` and
/// `blockOwnerDeletion` set, as upstream's controllers do.
pub fn owner_reference<K: Resource<DynamicType = ()>>(owner: &K) -> OwnerReference {
    let meta = owner.meta();
    OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Why a claim stopped: the API failed, or the owner turned out to be gone or going.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("{0}")]
    Owner(String),
}

/// Sorts `candidates` (objects in the owner's namespace) into the ones `owner` controls, and
/// fixes references on the way, as client-go's `ClaimObject`:
///
/// - owned by `owner` and matched by its selector (`matches`): kept;
/// - owned by `owner`, not matched: released (its reference removed), unless the owner is
///   being deleted, when it is left alone;
/// - owned by another controller: ignored;
/// - an orphan that `matches`, not being deleted, while the owner is not being deleted:
///   adopted, after one fresh read of the owner confirms that it still exists with the same
///   uid and is not being deleted (a cached owner may be stale).
///
/// Objects that vanish meanwhile are dropped. Returns the objects `owner` now controls.
pub async fn claim<O, K>(
    owner_api: &Api<O>,
    owner: &O,
    objects: &Api<K>,
    candidates: Vec<Arc<K>>,
    matches: impl Fn(&K) -> bool,
) -> Result<Vec<Arc<K>>, ClaimError>
where
    O: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    claim_releasing(owner_api, owner, objects, candidates, matches, &[]).await
}

/// [`claim`], where a release also takes the owner's `finalizers` off the object in the same
/// patch (upstream's ref manager with finalizers: a Job's pods lose its tracking finalizer
/// as they lose the Job).
pub async fn claim_releasing<O, K>(
    owner_api: &Api<O>,
    owner: &O,
    objects: &Api<K>,
    candidates: Vec<Arc<K>>,
    matches: impl Fn(&K) -> bool,
    finalizers: &[&str],
) -> Result<Vec<Arc<K>>, ClaimError>
where
    O: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let reference = owner_reference(owner);
    let owner_deleting = owner.meta().deletion_timestamp.is_some();
    let mut rechecked = false;
    let mut claimed = Vec::new();
    for object in candidates {
        let meta = object.meta();
        let name = meta.name.clone().unwrap_or_default();
        let uid = meta.uid.clone().unwrap_or_default();
        match controller_of(meta) {
            Some(controller) if controller.uid == reference.uid => {
                if matches(&object) {
                    claimed.push(object);
                } else if !owner_deleting {
                    release(objects, &name, &uid, &reference.uid, finalizers).await?;
                }
            }
            Some(_) => {}
            None => {
                if owner_deleting || meta.deletion_timestamp.is_some() || !matches(&object) {
                    continue;
                }
                if !rechecked {
                    recheck(owner_api, &reference).await?;
                    rechecked = true;
                }
                let patch = json!({"metadata": {"ownerReferences": [reference], "uid": uid}});
                match objects.patch(&name, &PatchParams::default(), &Patch::Strategic(&patch)).await
                {
                    Ok(adopted) => claimed.push(Arc::new(adopted)),
                    Err(kube::Error::Api(e)) if e.code == 404 => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    Ok(claimed)
}

/// Removes the reference to `owner_uid` from the object; one that is gone or no longer has
/// it (404, 422) needs nothing more.
async fn release<K>(
    objects: &Api<K>,
    name: &str,
    uid: &str,
    owner_uid: &str,
    finalizers: &[&str],
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let mut patch = json!({
        "metadata": {"ownerReferences": [{"$patch": "delete", "uid": owner_uid}], "uid": uid}
    });
    if !finalizers.is_empty() {
        patch["metadata"]["$deleteFromPrimitiveList/finalizers"] = json!(finalizers);
    }
    match objects.patch(name, &PatchParams::default(), &Patch::Strategic(&patch)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 422 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Reads the owner afresh: adoption must not happen for an owner that is gone, replaced by
/// another of the same name, or being deleted.
async fn recheck<O>(owner_api: &Api<O>, reference: &OwnerReference) -> Result<(), ClaimError>
where
    O: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let fresh = owner_api.get(&reference.name).await?;
    let kind = &reference.kind;
    let name = &reference.name;
    let uid = fresh.meta().uid.as_deref().unwrap_or_default();
    if uid != reference.uid {
        return Err(ClaimError::Owner(format!(
            "original {kind} {name} is gone: got uid {uid}, wanted {}",
            reference.uid
        )));
    }
    if fresh.meta().deletion_timestamp.is_some() {
        return Err(ClaimError::Owner(format!(
            "{kind} {name} has just been deleted at {:?}",
            fresh.meta().deletion_timestamp
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::ReplicaSet;

    #[test]
    fn controller_references_as_upstream_controllers_write_them() {
        let rs = ReplicaSet {
            metadata: ObjectMeta {
                name: Some("web-5d4f".into()),
                uid: Some("u1".into()),
                ..ObjectMeta::default()
            },
            ..ReplicaSet::default()
        };
        let r = owner_reference(&rs);
        assert_eq!((r.api_version.as_str(), r.kind.as_str()), ("apps/v1", "ReplicaSet"));
        assert_eq!((r.name.as_str(), r.uid.as_str()), ("web-5d4f", "u1"));
        assert_eq!((r.controller, r.block_owner_deletion), (Some(true), Some(true)));
        let mut meta = ObjectMeta::default();
        assert!(controller_of(&meta).is_none());
        let plain = OwnerReference { controller: None, uid: "u0".into(), ..r.clone() };
        meta.owner_references = Some(vec![plain, r]);
        assert_eq!(controller_of(&meta).unwrap().uid, "u1");
    }
}
