//! The webhooks of the MutatingWebhookConfigurations and ValidatingWebhookConfigurations, read
//! from the watch caches and parsed once per version of each configuration: every request
//! lists the configurations (a lookup in memory), and only a configuration whose
//! `resourceVersion` changed is parsed again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use rkube_apis::selectors::LabelSelector;
use serde_json::Value;

use crate::error::AdmissionError;
use crate::state::{ClusterState, Freshness, GroupResource};

/// Where a webhook is reached (`clientConfig`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientConfig {
    /// `url`: `https://host[:port]/path`.
    pub url: Option<String>,
    pub service: Option<ServiceReference>,
    /// `caBundle`, decoded from base64: PEM certificates to verify the server with; empty
    /// for the system's trust roots.
    pub ca_bundle: Vec<u8>,
}

/// `clientConfig.service`: reached at `https://<name>.<namespace>.svc:<port><path>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServiceReference {
    pub namespace: String,
    pub name: String,
    /// `""` for none.
    pub path: String,
    /// 443 unless given.
    pub port: u16,
}

impl ClientConfig {
    fn parse(v: &Value) -> ClientConfig {
        let text = |v: &Value| v.as_str().unwrap_or("").to_string();
        let service = v["service"].as_object().map(|s| ServiceReference {
            namespace: text(&s["namespace"]),
            name: text(&s["name"]),
            path: s.get("path").map(text).unwrap_or_default(),
            port: s
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(443),
        });
        let ca_bundle = v["caBundle"]
            .as_str()
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default();
        ClientConfig { url: v["url"].as_str().map(String::from), service, ca_bundle }
    }
}

/// One rule (`rules[]`): which operations on which resources.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    pub operations: Vec<String>,
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    /// `pods`, `pods/status`, `*/scale`, `*`, `*/*`.
    pub resources: Vec<String>,
    /// `Namespaced`, `Cluster` or `*`.
    pub scope: String,
}

/// `failurePolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePolicy {
    Fail,
    Ignore,
}

/// One webhook of a configuration, with the API's defaults filled in.
#[derive(Debug)]
pub struct Webhook {
    /// Upstream's accessor uid, `<configuration>/<webhook>/<index>`: what reinvocation keys on.
    pub uid: String,
    pub configuration: String,
    pub name: String,
    pub client: ClientConfig,
    pub rules: Vec<Rule>,
    pub failure_policy: FailurePolicy,
    /// `matchPolicy: Equivalent` (the default), else `Exact`.
    pub equivalent: bool,
    /// A selector that does not parse is an internal error when it is needed, as upstream's.
    pub namespace_selector: Result<LabelSelector, String>,
    pub object_selector: Result<LabelSelector, String>,
    /// `sideEffects`: `None`, `NoneOnDryRun`, `Some`, `Unknown`.
    pub side_effects: Option<String>,
    pub timeout: Duration,
    pub review_versions: Vec<String>,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks).
    pub reinvoke_if_needed: bool,
    /// `matchConditions`, compiled once per version of the configuration.
    pub match_conditions: Vec<MatchCondition>,
}

/// One of `matchConditions`: a CEL expression over `object`, `oldObject`, `request` and
/// `authorizer`.
#[derive(Debug)]
pub struct MatchCondition {
    pub name: String,
    pub expression: String,
    pub program: Result<rkube_cel::Program, rkube_cel::CompileError>,
}

/// The variables a webhook's match conditions may read.
const CONDITION_VARIABLES: &[&str] = &["object", "oldObject", "request", "authorizer"];

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default()
}

fn selector(v: &Value) -> Result<LabelSelector, String> {
    match v {
        // Absent: the API's default, `{}`, which selects everything.
        Value::Null => Ok(LabelSelector::everything()),
        v => LabelSelector::from_api(v).map_err(|e| e.to_string()),
    }
}

impl Webhook {
    fn parse(configuration: &str, index: usize, v: &Value) -> Webhook {
        let name = v["name"].as_str().unwrap_or("").to_string();
        let rules = v["rules"]
            .as_array()
            .map(|rules| {
                rules
                    .iter()
                    .map(|r| Rule {
                        operations: strings(&r["operations"]),
                        api_groups: strings(&r["apiGroups"]),
                        api_versions: strings(&r["apiVersions"]),
                        resources: strings(&r["resources"]),
                        scope: r["scope"].as_str().unwrap_or("*").to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        // The API bounds timeoutSeconds to 1..=30; 10 by default.
        let timeout = v["timeoutSeconds"].as_u64().unwrap_or(10).clamp(1, 30);
        Webhook {
            uid: format!("{configuration}/{name}/{index}"),
            configuration: configuration.to_string(),
            client: ClientConfig::parse(&v["clientConfig"]),
            rules,
            failure_policy: match v["failurePolicy"].as_str() {
                Some("Ignore") => FailurePolicy::Ignore,
                _ => FailurePolicy::Fail,
            },
            equivalent: v["matchPolicy"].as_str() != Some("Exact"),
            namespace_selector: selector(&v["namespaceSelector"]),
            object_selector: selector(&v["objectSelector"]),
            side_effects: v["sideEffects"].as_str().map(String::from),
            timeout: Duration::from_secs(timeout),
            review_versions: strings(&v["admissionReviewVersions"]),
            reinvoke_if_needed: v["reinvocationPolicy"].as_str() == Some("IfNeeded"),
            match_conditions: v["matchConditions"]
                .as_array()
                .map(|list| {
                    list.iter()
                        .map(|c| {
                            let expression = c["expression"].as_str().unwrap_or("").to_string();
                            MatchCondition {
                                name: c["name"].as_str().unwrap_or("").to_string(),
                                program: rkube_cel::compile(&expression, CONDITION_VARIABLES),
                                expression,
                            }
                        })
                        .collect()
                })
                .unwrap_or_default(),
            name,
        }
    }
}

/// One configuration's webhooks as parsed, with the resourceVersion they were parsed from.
type Parsed = (String, Arc<Vec<Arc<Webhook>>>);

/// The webhooks of one kind of configuration, in upstream's order: configurations by name,
/// webhooks in the order each configuration lists them.
pub(crate) struct Configurations {
    resource: GroupResource<'static>,
    /// Each configuration's webhooks as last parsed, by name, with its resourceVersion.
    parsed: Mutex<HashMap<String, Parsed>>,
}

impl Configurations {
    pub(crate) fn new(resource: &'static str) -> Configurations {
        Configurations {
            resource: GroupResource::new("admissionregistration.k8s.io", resource),
            parsed: Mutex::default(),
        }
    }

    /// The webhooks configured now.
    pub(crate) async fn load(
        &self,
        state: &dyn ClusterState,
    ) -> Result<Vec<Arc<Webhook>>, AdmissionError> {
        let listed = state
            .list(self.resource, None, &LabelSelector::everything(), Freshness::Cached)
            .await?;
        let mut parsed = self.parsed.lock().unwrap_or_else(|e| e.into_inner());
        if listed.is_empty() {
            parsed.clear();
            return Ok(Vec::new());
        }
        let mut webhooks = Vec::new();
        for configuration in &listed {
            let version = configuration.resource_version();
            let name = configuration.name();
            let fresh = parsed.get(name).filter(|(v, _)| *v == version).map(|(_, w)| w.clone());
            let hooks = match fresh {
                Some(hooks) => hooks,
                None => {
                    let value = configuration.value();
                    let hooks: Vec<Arc<Webhook>> = value["webhooks"]
                        .as_array()
                        .map(|list| {
                            list.iter()
                                .enumerate()
                                .map(|(i, w)| Arc::new(Webhook::parse(name, i, w)))
                                .collect()
                        })
                        .unwrap_or_default();
                    let hooks = Arc::new(hooks);
                    parsed.insert(name.to_string(), (version, hooks.clone()));
                    hooks
                }
            };
            webhooks.extend(hooks.iter().cloned());
        }
        // Forget configurations that are gone.
        if parsed.len() > listed.len() {
            parsed.retain(|name, _| listed.iter().any(|c| c.name() == name));
        }
        Ok(webhooks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_webhook_gets_the_api_defaults() {
        let w = Webhook::parse(
            "c",
            0,
            &json!({"name": "w.example.com", "clientConfig": {"service": {"namespace": "ns", "name": "svc"},
                    "caBundle": "aGVsbG8="},
                    "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                               "resources": ["pods"]}],
                    "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 99}),
        );
        assert_eq!(w.uid, "c/w.example.com/0");
        assert_eq!(w.failure_policy, FailurePolicy::Fail);
        assert!(w.equivalent && !w.reinvoke_if_needed);
        assert_eq!(w.rules[0].scope, "*");
        assert_eq!(w.timeout, Duration::from_secs(30));
        assert_eq!(w.client.ca_bundle, b"hello");
        let service = w.client.service.unwrap();
        assert_eq!((service.port, service.path.as_str()), (443, ""));
        assert!(w.namespace_selector.unwrap().is_empty());
    }
}
