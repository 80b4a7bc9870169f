//! The scale target of an HPA: which resource its `scaleTargetRef` (an apiVersion's group and
//! a kind) names, found through discovery as upstream's REST mapper finds it (every version of
//! the group, the preferred first), and its `autoscaling/v1 Scale`, read and written through
//! the resource's `/scale` subresource: any scalable resource, built-in or custom.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::autoscaling::v1::Scale;
use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::{ApiResource, Scope};
use kube::Client;
use rkube_apis::go_quote;

use crate::api_errors::message;

/// How long discovery is trusted (upstream resets its mapper every 30 s).
const FRESH: Duration = Duration::from_secs(30);
/// How soon a miss may ask discovery again.
const MISS_RETRY: Duration = Duration::from_secs(1);

/// Why the target's scale could not be read or written; the message is upstream's.
#[derive(Debug, thiserror::Error)]
pub enum ScaleError {
    #[error("unexpected GroupVersion string: {0}")]
    BadApiVersion(String),
    #[error("no matches for kind {} in group {}", go_quote(.kind), go_quote(.group))]
    NoKindMatch { group: String, kind: String },
    #[error("{}", message(.0))]
    Api(kube::Error),
}

/// A resource that may serve the target, and whether it is namespaced.
#[derive(Clone, Debug)]
pub struct Mapping {
    pub resource: ApiResource,
    pub namespaced: bool,
}

#[derive(Default)]
struct Cache {
    /// By (group, kind): the resources of that kind, the group's preferred version first.
    kinds: HashMap<(String, String), Vec<Mapping>>,
    refreshed: Option<Instant>,
}

/// Resolves kinds to resources through discovery, and reads and writes scales.
pub struct Targets {
    client: Client,
    cache: tokio::sync::Mutex<Cache>,
}

/// The group of an apiVersion (`apps/v1` -> `apps`, `v1` -> core), as upstream parses it.
pub fn group_of(api_version: &str) -> Result<&str, ScaleError> {
    match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [_] => Ok(""),
        [group, _] => Ok(group),
        _ => Err(ScaleError::BadApiVersion(api_version.to_string())),
    }
}

impl Targets {
    pub fn new(client: Client) -> Targets {
        Targets { client, cache: Default::default() }
    }

    /// The resources of `kind` in `group`, preferred version first.
    pub async fn mappings(&self, group: &str, kind: &str) -> Result<Vec<Mapping>, ScaleError> {
        let key = (group.to_string(), kind.to_string());
        let mut cache = self.cache.lock().await;
        let age = cache.refreshed.map(|at| at.elapsed());
        let stale = age.is_none_or(|a| a > FRESH);
        let retry_miss = !cache.kinds.contains_key(&key) && age.is_none_or(|a| a > MISS_RETRY);
        if stale || retry_miss {
            match crate::discovery::run(&self.client).await {
                Ok(discovery) => {
                    cache.kinds = index(&discovery);
                    cache.refreshed = Some(Instant::now());
                }
                Err(e) if cache.refreshed.is_none() => return Err(ScaleError::Api(e)),
                Err(e) => tracing::debug!(error = %e, "discovery failed; keeping the last"),
            }
        }
        cache.kinds.get(&key).cloned().ok_or(ScaleError::NoKindMatch { group: key.0, kind: key.1 })
    }

    /// The target's scale through the first mapping that answers (else the first error),
    /// with that mapping.
    pub async fn get(
        &self,
        namespace: &str,
        name: &str,
        mappings: &[Mapping],
    ) -> Result<(Scale, Mapping), ScaleError> {
        let mut first = None;
        for mapping in mappings {
            match self.api(namespace, mapping).get_scale(name).await {
                Ok(scale) => return Ok((scale, mapping.clone())),
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        Err(first.map_or_else(
            || ScaleError::NoKindMatch { group: String::new(), kind: String::new() },
            ScaleError::Api,
        ))
    }

    /// Writes `scale` (its resourceVersion the precondition) back to the target.
    pub async fn update(
        &self,
        namespace: &str,
        mapping: &Mapping,
        scale: &Scale,
    ) -> Result<Scale, ScaleError> {
        let name = scale.metadata.name.clone().unwrap_or_default();
        self.api(namespace, mapping)
            .replace_scale(&name, &PostParams::default(), scale)
            .await
            .map_err(ScaleError::Api)
    }

    fn api(&self, namespace: &str, mapping: &Mapping) -> Api<DynamicObject> {
        match mapping.namespaced {
            true => Api::namespaced_with(self.client.clone(), namespace, &mapping.resource),
            false => Api::all_with(self.client.clone(), &mapping.resource),
        }
    }
}

/// Every served resource by (group, kind), each group's preferred version first.
fn index(discovery: &kube::Discovery) -> HashMap<(String, String), Vec<Mapping>> {
    let mut kinds: HashMap<(String, String), Vec<Mapping>> = HashMap::new();
    for group in discovery.groups() {
        let preferred = group.preferred_version_or_latest();
        let versions =
            std::iter::once(preferred).chain(group.versions().filter(|v| *v != preferred));
        for version in versions {
            for (resource, caps) in group.versioned_resources(version) {
                let key = (resource.group.clone(), resource.kind.clone());
                let namespaced = caps.scope == Scope::Namespaced;
                kinds.entry(key).or_default().push(Mapping { resource, namespaced });
            }
        }
    }
    kinds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions_name_their_group() {
        assert_eq!(group_of("apps/v1").unwrap(), "apps");
        assert_eq!(group_of("v1").unwrap(), "");
        assert_eq!(group_of("").unwrap(), "");
        let e = group_of("a/b/c").unwrap_err();
        assert_eq!(e.to_string(), "unexpected GroupVersion string: a/b/c");
        let e = ScaleError::NoKindMatch { group: "example.com".into(), kind: "Widget".into() };
        assert_eq!(e.to_string(), r#"no matches for kind "Widget" in group "example.com""#);
    }
}
