//! Escalation prevention, as upstream's RBAC storage: nobody gives, through a Role or
//! ClusterRole they write, or a binding they write, permissions they do not hold themselves.
//!
//! A role write passes when the writer is in `system:masters`, may `escalate` the role, or
//! holds every permission of its rules (their RBAC rules in the role's namespace *cover* the
//! role's: [`covers`]). A binding write passes when the writer is in `system:masters`, may
//! `bind` the role it refers to, or holds every permission of that role. A ClusterRole with
//! an `aggregationRule` needs `escalate` (upstream: cluster-admin). Refusals are `403
//! Forbidden` worded as upstream's, listing the permissions not held.
//!
//! The check runs as a validating step of every write of the four RBAC resources (the
//! registry's guards), with the writer from the request; the server's own writes (the
//! bootstrap policy) carry no user and are not checked.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use rkube_admission::{AdmissionError, Attributes as Admission, ClusterState, Operation};

use super::{RoleRules, SharedIndex};
use crate::auth::UserInfo;
use crate::authz::rules::ALL;
use crate::authz::{Attributes, Authorizer, NonResourceRule, ResourceRule};

const GROUP: &str = "rbac.authorization.k8s.io";
const MASTERS: &str = "system:masters";

/// One permission: a verb on one resource (and name) of one group, or on one path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    Resource { group: String, resource: String, name: Option<String>, verb: String },
    Path { url: String, verb: String },
}

fn atoms(rules: &RoleRules) -> Vec<Atom> {
    let mut out = Vec::new();
    for r in &rules.resource {
        for group in &r.api_groups {
            for resource in &r.resources {
                for verb in &r.verbs {
                    if r.resource_names.is_empty() {
                        out.push(Atom::Resource {
                            group: group.clone(),
                            resource: resource.clone(),
                            name: None,
                            verb: verb.clone(),
                        });
                    }
                    for name in &r.resource_names {
                        out.push(Atom::Resource {
                            group: group.clone(),
                            resource: resource.clone(),
                            name: Some(name.clone()),
                            verb: verb.clone(),
                        });
                    }
                }
            }
        }
    }
    for r in &rules.non_resource {
        for url in &r.non_resource_urls {
            for verb in &r.verbs {
                out.push(Atom::Path { url: url.clone(), verb: verb.clone() });
            }
        }
    }
    out
}

fn has(items: &[String], wanted: &str) -> bool {
    items.iter().any(|i| i == ALL || i == wanted)
}

fn resource_covered(owner: &[String], resource: &str) -> bool {
    owner.iter().any(|o| {
        o == ALL
            || o == resource
            || resource.split_once('/').is_some_and(|(_, sub)| o.strip_prefix("*/") == Some(sub))
    })
}

fn rule_covers(
    owner: &ResourceRule,
    group: &str,
    resource: &str,
    name: Option<&str>,
    verb: &str,
) -> bool {
    has(&owner.verbs, verb)
        && has(&owner.api_groups, group)
        && resource_covered(&owner.resources, resource)
        && (owner.resource_names.is_empty()
            || name.is_some_and(|n| owner.resource_names.iter().any(|o| o == n)))
}

fn path_covers(owner: &NonResourceRule, url: &str, verb: &str) -> bool {
    has(&owner.verbs, verb)
        && owner.non_resource_urls.iter().any(|o| {
            o == ALL || o == url || o.strip_suffix('*').is_some_and(|p| url.starts_with(p))
        })
}

/// The permissions of `servant` that `owner` does not cover (empty: it covers them all),
/// as upstream's `Covers`.
pub fn covers(owner: &RoleRules, servant: &RoleRules) -> Vec<ResourceOrPath> {
    let mut missing: BTreeMap<(String, String, String, String), Vec<String>> = BTreeMap::new();
    for atom in atoms(servant) {
        let covered = match &atom {
            Atom::Resource { group, resource, name, verb } => owner
                .resource
                .iter()
                .any(|o| rule_covers(o, group, resource, name.as_deref(), verb)),
            Atom::Path { url, verb } => {
                owner.non_resource.iter().any(|o| path_covers(o, url, verb))
            }
        };
        if covered {
            continue;
        }
        // Gathered back by everything but the verb, as upstream compacts what it reports.
        let (key, verb) = match atom {
            Atom::Resource { group, resource, name, verb } => {
                ((String::from("0"), group, resource, name.unwrap_or_default()), verb)
            }
            Atom::Path { url, verb } => {
                ((String::from("1"), url, String::new(), String::new()), verb)
            }
        };
        let verbs = missing.entry(key).or_default();
        if !verbs.contains(&verb) {
            verbs.push(verb);
        }
    }
    missing
        .into_iter()
        .map(|((kind, a, b, name), verbs)| match kind.as_str() {
            "0" => ResourceOrPath::Resource(ResourceRule {
                verbs,
                api_groups: vec![a],
                resources: vec![b],
                resource_names: if name.is_empty() { vec![] } else { vec![name] },
            }),
            _ => ResourceOrPath::Path(NonResourceRule { verbs, non_resource_urls: vec![a] }),
        })
        .collect()
}

/// A permission not held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceOrPath {
    Resource(ResourceRule),
    Path(NonResourceRule),
}

fn quoted(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", inner.join(" "))
}

impl std::fmt::Display for ResourceOrPath {
    /// Upstream's compact form: `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        match self {
            ResourceOrPath::Resource(r) => {
                parts.push(format!("APIGroups:{}", quoted(&r.api_groups)));
                parts.push(format!("Resources:{}", quoted(&r.resources)));
                if !r.resource_names.is_empty() {
                    parts.push(format!("ResourceNames:{}", quoted(&r.resource_names)));
                }
                parts.push(format!("Verbs:{}", quoted(&r.verbs)));
            }
            ResourceOrPath::Path(p) => {
                parts.push(format!("NonResourceURLs:{}", quoted(&p.non_resource_urls)));
                parts.push(format!("Verbs:{}", quoted(&p.verbs)));
            }
        }
        write!(f, "{{{}}}", parts.join(", "))
    }
}

/// The escalation check (see the module doc).
pub struct EscalationCheck {
    index: SharedIndex,
    /// The server's authorizer, for the `escalate` and `bind` verbs; set once it is built.
    authorizer: OnceLock<Arc<dyn Authorizer>>,
}

impl EscalationCheck {
    pub fn new(index: SharedIndex) -> EscalationCheck {
        EscalationCheck { index, authorizer: OnceLock::new() }
    }

    /// Gives the check the server's authorizer.
    pub fn set_authorizer(&self, authorizer: Arc<dyn Authorizer>) {
        let _ = self.authorizer.set(authorizer);
    }

    fn may(
        &self,
        user: &UserInfo,
        verb: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> bool {
        let Some(authorizer) = self.authorizer.get() else { return false };
        let a = Attributes {
            user,
            verb: verb.to_string().into(),
            namespace,
            api_group: GROUP,
            api_version: "*",
            resource,
            subresource: "",
            name: name.to_string().into(),
            resource_request: true,
            path: "",
        };
        authorizer.authorize(&a).is_allowed()
    }

    /// `Ok` when `user` holds every permission of `rules` in `namespace`.
    fn confirm_no_escalation(
        &self,
        a: &Admission<'_>,
        user: &UserInfo,
        namespace: &str,
        rules: &RoleRules,
    ) -> Result<(), AdmissionError> {
        let owner = crate::authz::rbac::Rbac::new(self.index.clone()).rules_for(user, namespace);
        let owner =
            RoleRules { resource: owner.resource_rules, non_resource: owner.non_resource_rules };
        let missing = covers(&owner, rules);
        if missing.is_empty() {
            return Ok(());
        }
        let mut lines: Vec<String> = missing.iter().map(|m| m.to_string()).collect();
        lines.sort();
        let reason = format!(
            "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
            user.name,
            quoted(&user.groups),
            lines.join("\n")
        );
        Err(AdmissionError::forbidden(a, reason))
    }
}

fn user_of(a: &Admission<'_>) -> UserInfo {
    UserInfo {
        name: a.user.name.to_string(),
        uid: a.user.uid.to_string(),
        groups: a.user.groups.to_vec(),
        extra: a.user.extra.cloned().unwrap_or_default(),
    }
}

#[async_trait::async_trait]
impl rkube_admission::ValidatingPlugin for EscalationCheck {
    fn name(&self) -> &'static str {
        "RBACEscalation"
    }

    async fn validate(
        &self,
        a: &Admission<'_>,
        _state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if a.resource.group != GROUP
            || !a.subresource.is_empty()
            || !matches!(a.operation, Operation::Create | Operation::Update)
            || a.user.name.is_empty()
            || a.user.groups.iter().any(|g| g == MASTERS)
        {
            return Ok(());
        }
        let Some(object) = a.object() else { return Ok(()) };
        let user = user_of(a);
        let resource = a.resource.resource;
        let name = object["metadata"]["name"].as_str().unwrap_or(a.name);
        match resource {
            "roles" | "clusterroles" => {
                if a.operation == Operation::Update
                    && a.old_object.is_some_and(|old| {
                        old["rules"] == object["rules"]
                            && old["aggregationRule"] == object["aggregationRule"]
                    })
                {
                    return Ok(());
                }
                if self.may(&user, "escalate", resource, a.namespace, name) {
                    return Ok(());
                }
                if object.get("aggregationRule").is_some_and(|r| !r.is_null()) {
                    return Err(AdmissionError::forbidden(
                        a,
                        "must have cluster-admin privileges to use the aggregationRule",
                    ));
                }
                self.confirm_no_escalation(
                    a,
                    &user,
                    a.namespace,
                    &RoleRules::from_json(&object["rules"]),
                )
            }
            "rolebindings" | "clusterrolebindings" => {
                let role_kind = object["roleRef"]["kind"].as_str().unwrap_or_default();
                let role_name = object["roleRef"]["name"].as_str().unwrap_or_default();
                let role_resource = if role_kind == "Role" { "roles" } else { "clusterroles" };
                if self.may(&user, "bind", role_resource, a.namespace, role_name) {
                    return Ok(());
                }
                let rules = {
                    let index = self.index.read().expect("rbac index lock");
                    index.role_rules(a.namespace, role_kind, role_name)
                };
                let Some(rules) = rules else {
                    let singular = if role_kind == "Role" { "role" } else { "clusterrole" };
                    return Err(AdmissionError::not_found(GROUP, singular, role_name));
                };
                self.confirm_no_escalation(a, &user, a.namespace, &rules)
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(v: serde_json::Value) -> RoleRules {
        RoleRules::from_json(&v)
    }

    #[test]
    fn covering_is_upstreams() {
        let owner = rules(json!([
            {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "*/scale"]},
            {"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"]},
            {"verbs": ["get"], "nonResourceURLs": ["/logs/*"]},
        ]));
        let fine = rules(json!([
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "replicationcontrollers/scale"]},
            {"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"]},
            {"verbs": ["get"], "nonResourceURLs": ["/logs/today"]},
        ]));
        assert!(covers(&owner, &fine).is_empty());
        let greedy = rules(json!([
            {"verbs": ["get", "delete", "*"], "apiGroups": [""], "resources": ["pods"]},
            {"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"]},
            {"verbs": ["get"], "nonResourceURLs": ["/metrics"]},
        ]));
        let missing: Vec<String> = covers(&owner, &greedy).iter().map(|m| m.to_string()).collect();
        assert_eq!(
            missing,
            [
                "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\" \"*\"]}",
                "{APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"get\"]}",
                "{NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}",
            ]
        );
        let everything = rules(
            json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, {"verbs": ["*"], "nonResourceURLs": ["*"]}]),
        );
        assert!(covers(&everything, &greedy).is_empty());
    }
}
