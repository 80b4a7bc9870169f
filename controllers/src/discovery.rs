//! API discovery as the controllers use it: which resources the API server serves, each at
//! its group's preferred version (client-go's `ServerPreferredResources`), and which resource
//! serves a given apiVersion and kind (a REST mapper).

use std::collections::{HashMap, HashSet};

use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope};
use kube::Client;

/// Discovers everything the API server serves: aggregated discovery (two requests) when the
/// server offers it, else group by group.
pub async fn run(client: &Client) -> Result<Discovery, kube::Error> {
    match Discovery::new(client.clone()).run_aggregated().await {
        Ok(discovery) => Ok(discovery),
        Err(e) => {
            tracing::debug!(error = %e, "aggregated discovery failed; asking group by group");
            Discovery::new(client.clone()).run().await
        }
    }
}

/// Every resource, once: at its group's preferred version, or, when the preferred version
/// does not serve it, at the first other version that does.
pub fn preferred_resources(discovery: &Discovery) -> Vec<(ApiResource, ApiCapabilities)> {
    let mut resources = Vec::new();
    for group in discovery.groups() {
        let preferred = group.preferred_version_or_latest();
        let mut seen = HashSet::new();
        let versions =
            std::iter::once(preferred).chain(group.versions().filter(|v| *v != preferred));
        for version in versions {
            for (resource, caps) in group.versioned_resources(version) {
                if seen.insert(resource.plural.clone()) {
                    resources.push((resource, caps));
                }
            }
        }
    }
    resources
}

/// Which resource serves an apiVersion and kind, at that very version.
#[derive(Clone, Debug, Default)]
pub struct Mapper {
    kinds: HashMap<(String, String), (ApiResource, bool)>,
    /// The subresources of each (apiVersion, kind), by name (`scale`, `status`, ...).
    subresources: HashSet<(String, String, String)>,
}

impl Mapper {
    pub fn new(discovery: &Discovery) -> Mapper {
        let mut kinds = HashMap::new();
        let mut subresources = HashSet::new();
        for group in discovery.groups() {
            for version in group.versions() {
                for (resource, caps) in group.versioned_resources(version) {
                    let key = (resource.api_version.clone(), resource.kind.clone());
                    for (sub, _) in &caps.subresources {
                        subresources.insert((key.0.clone(), key.1.clone(), sub.plural.clone()));
                    }
                    kinds.entry(key).or_insert((resource, caps.scope == Scope::Namespaced));
                }
            }
        }
        Mapper { kinds, subresources }
    }

    /// The resource for `api_version` and `kind`, and whether it is namespaced.
    pub fn resolve(&self, api_version: &str, kind: &str) -> Option<(ApiResource, bool)> {
        self.kinds.get(&(api_version.to_string(), kind.to_string())).cloned()
    }

    /// Whether the resource of `api_version` and `kind` serves the subresource `name`.
    pub fn has_subresource(&self, api_version: &str, kind: &str, name: &str) -> bool {
        self.subresources.contains(&(api_version.to_string(), kind.to_string(), name.to_string()))
    }
}
