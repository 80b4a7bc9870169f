//! Who may use the kubelet API, as upstream's kubelet with `--authorization-mode=Webhook`:
//! each request's caller (from its client certificate) and what it asks for become a
//! SubjectAccessReview on the node (`nodes/<name>` with subresource `stats`, `metrics`,
//! `log`, `spec`, else `proxy`; the verb from the method), asked of the API server with the
//! kubelet's own credentials. Answers are cached as upstream's defaults: allowed ones for
//! 5 minutes, refusals for 30 seconds; the cache holds at most [`MAX_ENTRIES`].
//!
//! A refusal is upstream's 403 text: `Forbidden (user=jane, verb=get, resource=nodes,
//! subresource=proxy)`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use kube::Client;

/// How long an allowed answer is kept.
pub const ALLOWED_TTL: Duration = Duration::from_secs(300);
/// How long a refusal is kept.
pub const DENIED_TTL: Duration = Duration::from_secs(30);
/// The most answers kept; when full, expired ones go, then all.
pub const MAX_ENTRIES: usize = 10_000;

/// What a request to the kubelet asks, as upstream's kubelet names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ask {
    pub user: String,
    pub groups: Vec<String>,
    pub verb: &'static str,
    pub subresource: &'static str,
}

/// The verb and node subresource of a request for `path` with `method`.
pub fn attributes(method: &http::Method, path: &str) -> (&'static str, &'static str) {
    let verb = match *method {
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "get",
    };
    let under = |prefix: &str| path == prefix || path.starts_with(&format!("{prefix}/"));
    let subresource = if under("/stats") {
        "stats"
    } else if under("/metrics") {
        "metrics"
    } else if under("/logs") {
        "log"
    } else if under("/spec") {
        "spec"
    } else {
        "proxy"
    };
    (verb, subresource)
}

/// The kubelet's authorizer (see the module doc).
pub struct KubeletAuthorizer {
    client: Client,
    node: String,
    cache: Mutex<HashMap<Ask, (bool, Instant)>>,
}

impl KubeletAuthorizer {
    pub fn new(client: Client, node: String) -> KubeletAuthorizer {
        KubeletAuthorizer { client, node, cache: Mutex::new(HashMap::new()) }
    }

    /// Whether the caller may; an API server that cannot be asked is a refusal.
    pub async fn allowed(&self, ask: &Ask) -> bool {
        if let Some((allowed, until)) = self.cache.lock().expect("cache lock").get(ask) {
            if Instant::now() < *until {
                return *allowed;
            }
        }
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(ask.user.clone()),
                groups: Some(ask.groups.clone()),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(ask.verb.into()),
                    resource: Some("nodes".into()),
                    subresource: Some(ask.subresource.into()),
                    name: Some(self.node.clone()),
                    version: Some("v1".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let allowed = match api.create(&PostParams::default(), &review).await {
            Ok(answer) => answer.status.is_some_and(|s| s.allowed),
            Err(e) => {
                tracing::warn!(error = %e, "cannot ask the API server whether a kubelet API caller may");
                return false;
            }
        };
        let ttl = if allowed { ALLOWED_TTL } else { DENIED_TTL };
        let mut cache = self.cache.lock().expect("cache lock");
        if cache.len() >= MAX_ENTRIES {
            let now = Instant::now();
            cache.retain(|_, (_, until)| *until > now);
            if cache.len() >= MAX_ENTRIES {
                cache.clear();
            }
        }
        cache.insert(ask.clone(), (allowed, Instant::now() + ttl));
        allowed
    }
}

/// Upstream kubelet's refusal text.
pub fn forbidden_text(ask: &Ask) -> String {
    format!(
        "Forbidden (user={}, verb={}, resource=nodes, subresource={})",
        ask.user, ask.verb, ask.subresource
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_map_to_upstreams_node_subresources() {
        use http::Method;
        assert_eq!(attributes(&Method::GET, "/stats/summary"), ("get", "stats"));
        assert_eq!(attributes(&Method::GET, "/metrics/resource"), ("get", "metrics"));
        assert_eq!(attributes(&Method::GET, "/logs/"), ("get", "log"));
        assert_eq!(attributes(&Method::GET, "/spec/"), ("get", "spec"));
        assert_eq!(attributes(&Method::POST, "/exec/ns/p/c"), ("create", "proxy"));
        assert_eq!(attributes(&Method::GET, "/containerLogs/ns/p/c"), ("get", "proxy"));
        assert_eq!(attributes(&Method::GET, "/statsx"), ("get", "proxy"));
        assert_eq!(attributes(&Method::DELETE, "/pods"), ("delete", "proxy"));
    }
}
