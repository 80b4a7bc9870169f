//! `--authorization-mode=Node`: what a kubelet may do, as upstream's Node authorizer. A
//! kubelet authenticates as `system:node:<name>` in group `system:nodes`; it gets upstream's
//! node rules (read pods and services, write Nodes, pod status, events, ...: the rules of
//! `system:node`), and reads Secrets, ConfigMaps, PersistentVolumeClaims and
//! PersistentVolumes, and asks for service-account tokens, only for the pods bound to it
//! (upstream's graph, here read from the pods on the node when asked). Its own Lease and
//! CSINode only. Writes are narrowed further by the NodeRestriction admission plugin.
//!
//! Any other user: no opinion (RBAC decides).

use std::sync::Arc;

use serde_json::Value;

use super::rbac::{rules_allow, RoleRules};
use super::{Attributes, Authorizer, Rules, Verdict};
use crate::auth::UserInfo;

/// What the Node authorizer reads of the cluster (the server backs it with its watch caches).
pub trait NodeGraph: Send + Sync {
    /// The pods bound to `node` in `namespace`.
    fn pods(&self, node: &str, namespace: &str) -> Vec<Value>;
    /// One object of a core resource (`persistentvolumeclaims`, ...).
    fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Value>;
}

/// The graph as the server reads it: its watch caches.
pub struct CacheGraph {
    pub registry: Arc<crate::registry::Registry>,
}

impl CacheGraph {
    fn cache(
        &self,
        resource: &str,
    ) -> Option<(Arc<crate::cache::Cache>, Arc<rkube_apis::resources::ResourceInfo>)> {
        let resources = self.registry.resources();
        let info = resources.get("", "v1", resource)?.clone();
        let cache = self.registry.cache(&info).ok()?;
        Some((cache, info))
    }
}

impl NodeGraph for CacheGraph {
    fn pods(&self, node: &str, namespace: &str) -> Vec<Value> {
        let Some((cache, info)) = self.cache("pods") else { return Vec::new() };
        let prefix = info.namespace_prefix(Some(namespace).filter(|n| !n.is_empty()));
        let node = node.to_string();
        let on_node = crate::cache::Filter::new(move |view| {
            view.fields.iter().any(|(field, value)| *field == "spec.nodeName" && *value == node)
        });
        let (pods, _) = cache.list(&prefix, &on_node);
        pods.iter().filter_map(|p| serde_json::from_slice(&p.json).ok()).collect()
    }

    fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Value> {
        let (cache, info) = self.cache(resource)?;
        let object = cache.get(&info.key(Some(namespace), name))?;
        serde_json::from_slice(&object.json).ok()
    }
}

/// The Node authorizer.
pub struct NodeAuthorizer {
    graph: Arc<dyn NodeGraph>,
    rules: RoleRules,
}

impl NodeAuthorizer {
    pub fn new(graph: Arc<dyn NodeGraph>) -> NodeAuthorizer {
        let rules = serde_json::Value::Array(super::rbac::policy::node_rules());
        NodeAuthorizer { graph, rules: RoleRules::from_json(&rules) }
    }
}

/// The node a user is, if it is one: `system:node:<name>` in `system:nodes`.
pub fn node_name(user: &UserInfo) -> Option<&str> {
    user.name.strip_prefix("system:node:").filter(|_| user.in_group("system:nodes"))
}

fn containers(pod: &Value) -> impl Iterator<Item = &Value> {
    ["containers", "initContainers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |k| pod["spec"][k].as_array().into_iter().flatten())
}

fn is(v: &Value, name: &str) -> bool {
    v.as_str() == Some(name)
}

/// Whether `pod` uses the Secret (`secret`) or ConfigMap (`configmap`) `name`.
fn pod_uses(pod: &Value, kind: &str, name: &str) -> bool {
    let (volume, projected, key_ref, env_from) = match kind {
        "secret" => ("secret", "secret", "secretKeyRef", "secretRef"),
        _ => ("configMap", "configMap", "configMapKeyRef", "configMapRef"),
    };
    let volumes = pod["spec"]["volumes"].as_array().into_iter().flatten();
    for v in volumes {
        let named = if kind == "secret" { &v[volume]["secretName"] } else { &v[volume]["name"] };
        if is(named, name) {
            return true;
        }
        let sources = v["projected"]["sources"].as_array().into_iter().flatten();
        if sources.into_iter().any(|s| is(&s[projected]["name"], name)) {
            return true;
        }
        if kind == "secret"
            && ["csi", "cephfs", "rbd", "iscsi", "azureFile", "flexVolume", "scaleIO", "storageos"]
                .iter()
                .any(|k| {
                    is(&v[k]["secretRef"]["name"], name)
                        || is(&v[k]["nodePublishSecretRef"]["name"], name)
                        || is(&v[k]["secretName"], name)
                })
        {
            return true;
        }
    }
    if kind == "secret"
        && pod["spec"]["imagePullSecrets"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| is(&s["name"], name))
    {
        return true;
    }
    containers(pod).any(|c| {
        c["env"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|e| is(&e["valueFrom"][key_ref]["name"], name))
            || c["envFrom"].as_array().into_iter().flatten().any(|e| is(&e[env_from]["name"], name))
    })
}

/// The claims `pod` mounts (its own, and those of its generic ephemeral volumes).
fn pod_claims(pod: &Value) -> Vec<String> {
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let mut claims = Vec::new();
    for v in pod["spec"]["volumes"].as_array().into_iter().flatten() {
        if let Some(claim) = v["persistentVolumeClaim"]["claimName"].as_str() {
            claims.push(claim.to_string());
        }
        if v.get("ephemeral").is_some() {
            claims.push(format!("{pod_name}-{}", v["name"].as_str().unwrap_or_default()));
        }
    }
    claims
}

impl NodeAuthorizer {
    fn related(&self, node: &str, a: &Attributes<'_>) -> bool {
        let pods = self.graph.pods(node, a.namespace);
        match a.resource {
            "secrets" => pods.iter().any(|p| pod_uses(p, "secret", &a.name)),
            "configmaps" => pods.iter().any(|p| pod_uses(p, "configmap", &a.name)),
            "persistentvolumeclaims" => {
                pods.iter().any(|p| pod_claims(p).iter().any(|c| *c == a.name))
            }
            "serviceaccounts" => pods.iter().any(|p| {
                let sa = p["spec"]["serviceAccountName"].as_str().filter(|s| !s.is_empty());
                sa.unwrap_or("default") == a.name
            }),
            _ => false,
        }
    }

    /// A PersistentVolume is the node's when a claim of one of its pods is bound to it.
    fn related_volume(&self, node: &str, name: &str) -> bool {
        let pods = self.graph.pods(node, "");
        pods.iter().any(|p| {
            let ns = p["metadata"]["namespace"].as_str().unwrap_or_default();
            pod_claims(p).iter().any(|claim| {
                self.graph
                    .get("persistentvolumeclaims", ns, claim)
                    .is_some_and(|pvc| is(&pvc["spec"]["volumeName"], name))
            })
        })
    }

    fn no_relationship(node: &str) -> Verdict {
        Verdict::no_opinion(format!("no relationship found between node '{node}' and this object"))
    }
}

impl Authorizer for NodeAuthorizer {
    fn authorize(&self, a: &Attributes<'_>) -> Verdict {
        let Some(node) = node_name(a.user) else { return Verdict::no_opinion("") };
        if node.is_empty() {
            return Verdict::no_opinion("unknown node");
        }
        if a.resource_request && a.api_group.is_empty() {
            match a.resource {
                "secrets" | "configmaps" | "persistentvolumeclaims" | "persistentvolumes" => {
                    let verbs: &[&str] = match a.resource {
                        "secrets" | "configmaps" => &["get", "list", "watch"],
                        _ => &["get"],
                    };
                    if !verbs.contains(&&*a.verb) {
                        return Verdict::no_opinion(match verbs.len() {
                            1 => "can only get individual resources of this type",
                            _ => "can only read resources of this type",
                        });
                    }
                    if !a.subresource.is_empty() {
                        return Verdict::no_opinion(format!(
                            "cannot read subresource {}",
                            a.subresource
                        ));
                    }
                    if a.name.is_empty() {
                        return Verdict::no_opinion("No Object name found");
                    }
                    let related = match a.resource {
                        "persistentvolumes" => self.related_volume(node, &a.name),
                        _ if a.namespace.is_empty() => {
                            return Verdict::no_opinion(
                                "can only read namespaced object of this type",
                            )
                        }
                        _ => self.related(node, a),
                    };
                    return match related {
                        true => Verdict::allow(),
                        false => Self::no_relationship(node),
                    };
                }
                "serviceaccounts" if a.subresource == "token" => {
                    if a.verb != "create" {
                        return Verdict::no_opinion(
                            "can only create tokens for individual service accounts",
                        );
                    }
                    return match !a.name.is_empty() && self.related(node, a) {
                        true => Verdict::allow(),
                        false => Self::no_relationship(node),
                    };
                }
                _ => {}
            }
        }
        if a.resource_request
            && a.api_group == "coordination.k8s.io"
            && a.resource == "leases"
            && a.subresource.is_empty()
        {
            if !["get", "create", "update", "patch", "delete"].contains(&&*a.verb) {
                return Verdict::no_opinion(
                    "can only get, create, update, patch, or delete a node lease",
                );
            }
            if a.namespace != "kube-node-lease" {
                return Verdict::no_opinion(
                    "can only access leases in the kube-node-lease namespace",
                );
            }
            if a.name != node && a.verb != "create" {
                return Verdict::no_opinion(
                    "can only access node lease with the same name as the requesting node",
                );
            }
            return Verdict::allow();
        }
        if a.resource_request && a.api_group == "storage.k8s.io" && a.resource == "csinodes" {
            if a.name != node && a.verb != "create" {
                return Verdict::no_opinion(
                    "can only access CSINode with the same name as the requesting node",
                );
            }
            return Verdict::allow();
        }
        if rules_allow(&self.rules, true, a) {
            return Verdict::allow();
        }
        Verdict::no_opinion("")
    }

    fn rules_for(&self, user: &UserInfo, _namespace: &str) -> Rules {
        match node_name(user) {
            // Upstream's Node authorizer lists no rules (its grants depend on the object).
            Some(_) => Rules { incomplete: true, ..Rules::default() },
            None => Rules::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::Decision;
    use serde_json::json;

    struct Pods(Vec<Value>);

    impl NodeGraph for Pods {
        fn pods(&self, node: &str, namespace: &str) -> Vec<Value> {
            self.0
                .iter()
                .filter(|p| {
                    p["spec"]["nodeName"] == node
                        && (namespace.is_empty() || p["metadata"]["namespace"] == namespace)
                })
                .cloned()
                .collect()
        }
        fn get(&self, _resource: &str, _namespace: &str, name: &str) -> Option<Value> {
            (name == "data").then(|| json!({"spec": {"volumeName": "pv-1"}}))
        }
    }

    fn resource<'a>(
        user: &'a UserInfo,
        verb: &'a str,
        ns: &'a str,
        group: &'a str,
        resource: &'a str,
        sub: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes::resource(user, verb, group, resource, sub, ns, name)
    }

    #[test]
    fn a_node_reads_only_what_its_pods_use() {
        let pods = Pods(vec![json!({
            "metadata": {"name": "web", "namespace": "app"},
            "spec": {"nodeName": "n1", "serviceAccountName": "robot",
                "volumes": [{"name": "v", "secret": {"secretName": "tls"}},
                            {"name": "p", "persistentVolumeClaim": {"claimName": "data"}},
                            {"name": "k", "projected": {"sources": [{"configMap": {"name": "kube-root-ca.crt"}}]}}],
                "containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "settings"}}]}]},
        })]);
        let node = NodeAuthorizer::new(Arc::new(pods));
        let n1 = UserInfo::authenticated("system:node:n1".into(), vec!["system:nodes".into()]);
        let n2 = UserInfo::authenticated("system:node:n2".into(), vec!["system:nodes".into()]);
        let decide = |a: Attributes<'_>| node.authorize(&a);
        assert_eq!(
            decide(resource(&n1, "get", "app", "", "secrets", "", "tls")).decision,
            Decision::Allow
        );
        assert_eq!(
            decide(resource(&n1, "watch", "app", "", "configmaps", "", "settings")).decision,
            Decision::Allow
        );
        assert_eq!(
            decide(resource(&n1, "get", "app", "", "configmaps", "", "kube-root-ca.crt")).decision,
            Decision::Allow
        );
        assert_eq!(
            decide(resource(&n1, "get", "app", "", "persistentvolumeclaims", "", "data")).decision,
            Decision::Allow
        );
        assert_eq!(
            decide(resource(&n1, "get", "", "", "persistentvolumes", "", "pv-1")).decision,
            Decision::Allow
        );
        assert_eq!(
            decide(resource(&n1, "create", "app", "", "serviceaccounts", "token", "robot"))
                .decision,
            Decision::Allow
        );
        let other = decide(resource(&n2, "get", "app", "", "secrets", "", "tls"));
        assert_eq!(
            (other.decision, other.reason.as_str()),
            (Decision::NoOpinion, "no relationship found between node 'n2' and this object")
        );
        assert_eq!(
            decide(resource(&n1, "get", "app", "", "secrets", "", "other")).decision,
            Decision::NoOpinion
        );
        assert_eq!(
            decide(resource(&n1, "list", "app", "", "secrets", "", "")).reason,
            "No Object name found"
        );
        assert_eq!(
            decide(resource(&n1, "delete", "app", "", "secrets", "", "tls")).reason,
            "can only read resources of this type"
        );
        // Node rules: pods are readable, nodes writable; secrets are not listed.
        assert_eq!(decide(resource(&n1, "list", "", "", "pods", "", "")).decision, Decision::Allow);
        assert_eq!(
            decide(resource(&n1, "patch", "", "", "nodes", "status", "n1")).decision,
            Decision::Allow
        );
        assert_eq!(
            decide(resource(&n1, "delete", "", "", "namespaces", "", "app")).decision,
            Decision::NoOpinion
        );
        // Its own Lease only.
        assert_eq!(
            decide(resource(
                &n1,
                "update",
                "kube-node-lease",
                "coordination.k8s.io",
                "leases",
                "",
                "n1"
            ))
            .decision,
            Decision::Allow
        );
        assert_eq!(
            decide(resource(
                &n1,
                "update",
                "kube-node-lease",
                "coordination.k8s.io",
                "leases",
                "",
                "n2"
            ))
            .decision,
            Decision::NoOpinion
        );
        // Not a node: no opinion at all.
        let jane = UserInfo::authenticated("jane".into(), vec![]);
        assert_eq!(decide(resource(&jane, "list", "", "", "pods", "", "")).reason, "");
    }
}
