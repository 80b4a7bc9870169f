//! API aggregation, as kube-aggregator does inside kube-apiserver: an `APIService`
//! (`apiregistration.k8s.io/v1`) with a `spec.service` hands its group/version to an
//! extension API server reached through that Service over TLS.
//!
//! | module | what |
//! |---|---|
//! | [`availability`] | the controller that checks each APIService (Service, endpoints, a discovery GET) and writes its `Available` condition; it also keeps the [`Aggregator`]'s table of what is served where, and each extension's discovery document |
//! | [`proxy`] | a request under `/apis/<group>/<version>` sent on to the extension server, as the authenticated user (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-*`) with the front-proxy client certificate |
//! | [`openapi`] | the extension servers' OpenAPI documents (v2, and every v3 document their index lists), fetched when they become available, merged into the server's by [`crate::openapi`] |
//! | [`swagger_merge`] | an extension's Swagger 2.0 document merged into the server's: clashing definitions renamed, references following them |
//! | [`autoregister`] | the Local APIServices of this server's own group/versions (`v1.`, `v1.apps`, ...), made at start, and of the custom resource definitions' groups, kept in step with them |
//! | [`authentication_info`] | the `kube-system/extension-apiserver-authentication` ConfigMap extension servers read to trust that certificate and those headers |
//!
//! As upstream, a proxied request is authenticated and authorized here first (the whole
//! filter chain runs before the aggregator's handler); the extension server authorizes it
//! again (usually with a SubjectAccessReview). APIServices without a service (`Local`) name
//! this server's own groups and change nothing. Discovery ([`crate::discovery`]) merges the
//! extensions' groups from [`Aggregator::remote_versions`].

pub mod authentication_info;
pub mod autoregister;
pub mod availability;
pub mod openapi;
pub mod proxy;
pub mod swagger_merge;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::registry::Registry;
use crate::service_client::{ClientCert, ClientConfig, Destination, ServiceClient};

/// How this server proves itself to extension servers: the front-proxy client certificate
/// (`--proxy-client-cert-file`, `--proxy-client-key-file`), which they verify against the
/// requestheader CA published in [`authentication_info`].
#[derive(Clone, Debug)]
pub struct FrontProxy {
    pub client: ClientCert,
}

/// One group/version an APIService hands to a Service, as the availability controller last
/// saw it.
#[derive(Clone, Debug)]
pub struct Remote {
    /// The APIService's name, `<version>.<group>`.
    pub name: String,
    pub group: String,
    pub version: String,
    pub group_priority_minimum: i64,
    pub version_priority: i64,
    /// How to reach the extension server.
    pub client: ClientConfig,
    /// Whether its last check passed.
    pub available: bool,
    /// Its `/apis/<group>/<version>` (APIResourceList) from the last check that got one.
    pub resources: Option<Value>,
    /// Its OpenAPI documents as last fetched.
    pub openapi: Option<Arc<openapi::ExtensionDocs>>,
}

/// The aggregator: what is proxied where, shared by the router, discovery and the
/// availability controller.
pub struct Aggregator {
    registry: Arc<Registry>,
    client: Arc<ServiceClient>,
    front_proxy: Option<FrontProxy>,
    /// By (group, version).
    remotes: RwLock<BTreeMap<(String, String), Remote>>,
    /// Counts changes of the extensions' OpenAPI documents (one added, changed or gone).
    openapi_generation: AtomicU64,
}

impl Aggregator {
    pub fn new(
        registry: Arc<Registry>,
        client: Arc<ServiceClient>,
        front_proxy: Option<FrontProxy>,
    ) -> Arc<Aggregator> {
        Arc::new(Aggregator {
            registry,
            client,
            front_proxy,
            remotes: RwLock::default(),
            openapi_generation: AtomicU64::new(0),
        })
    }

    /// The remote group/version that serves `path` (`/apis/<group>/<version>[/...]`), if
    /// an APIService with a service claims it.
    pub fn route(&self, path: &str) -> Option<Remote> {
        let mut segments = path.trim_start_matches('/').split('/');
        if segments.next() != Some("apis") {
            return None;
        }
        let group = segments.next().filter(|g| !g.is_empty())?;
        let version = segments.next().filter(|v| !v.is_empty())?;
        let remotes = self.remotes.read().unwrap_or_else(|e| e.into_inner());
        remotes.get(&(group.to_string(), version.to_string())).cloned()
    }

    /// Every group/version served remotely, highest group priority first, then by group
    /// name, then highest version priority first (upstream's discovery order).
    pub fn remote_versions(&self) -> Vec<Remote> {
        let remotes = self.remotes.read().unwrap_or_else(|e| e.into_inner());
        let mut all: Vec<Remote> = remotes.values().cloned().collect();
        all.sort_by(|a, b| {
            b.group_priority_minimum
                .cmp(&a.group_priority_minimum)
                .then_with(|| a.group.cmp(&b.group))
                .then_with(|| b.version_priority.cmp(&a.version_priority))
                .then_with(|| version_order(&a.version, &b.version))
        });
        // A group's priority is the highest of its versions'; keep each group together.
        let mut grouped: Vec<Remote> = Vec::new();
        let mut groups: Vec<String> = Vec::new();
        for r in &all {
            if !groups.contains(&r.group) {
                groups.push(r.group.clone());
            }
        }
        for g in groups {
            grouped.extend(all.iter().filter(|r| r.group == g).cloned());
        }
        grouped
    }

    /// The extensions' OpenAPI documents, by group/version, and the generation they are of
    /// (0 before any was fetched).
    pub fn openapi_documents(&self) -> (u64, Vec<(String, String, Arc<openapi::ExtensionDocs>)>) {
        let remotes = self.remotes.read().unwrap_or_else(|e| e.into_inner());
        let generation = self.openapi_generation.load(Ordering::Acquire);
        let docs = remotes
            .values()
            .filter_map(|r| {
                let docs = r.openapi.clone().filter(|d| !d.is_empty())?;
                Some((r.group.clone(), r.version.clone(), docs))
            })
            .collect();
        (generation, docs)
    }

    /// The connection settings of an APIService's `spec`, with the front-proxy certificate.
    fn client_config(&self, spec: &Value) -> Option<ClientConfig> {
        let service = spec.get("service").filter(|s| s.is_object())?;
        let port = service["port"].as_u64().and_then(|p| u16::try_from(p).ok()).unwrap_or(443);
        let ca_bundle = spec["caBundle"]
            .as_str()
            .and_then(|b| {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.decode(b).ok()
            })
            .unwrap_or_default();
        Some(ClientConfig {
            destination: Destination::Service {
                namespace: service["namespace"].as_str().unwrap_or("").to_string(),
                name: service["name"].as_str().unwrap_or("").to_string(),
                port,
                path: String::new(),
            },
            ca_bundle,
            client_cert: self.front_proxy.as_ref().map(|f| f.client.clone()),
            insecure_skip_tls_verify: spec["insecureSkipTLSVerify"].as_bool() == Some(true),
        })
    }
}

/// Kubernetes' version order (`version.CompareKubeAwareVersionStrings`), as a sort order:
/// GA before beta before alpha, higher numbers first; other strings after, by name.
pub fn version_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let major = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        let (level, minor) = if tail.is_empty() {
            (2, 0)
        } else if let Some(n) = tail.strip_prefix("beta") {
            (1, n.parse().ok()?)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n.parse().ok()?)
        } else {
            return None;
        };
        Some((major, level, minor))
    }
    match (parse(a), parse(b)) {
        (Some((ma, la, na)), Some((mb, lb, nb))) => lb.cmp(&la).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_aware_version_order() {
        let mut v = vec!["v1alpha1", "foo", "v2", "v1beta2", "v1", "v1beta1", "v10", "v2alpha1"];
        v.sort_by(|a, b| version_order(a, b));
        assert_eq!(v, ["v10", "v2", "v1", "v1beta2", "v1beta1", "v2alpha1", "v1alpha1", "foo"]);
    }
}
