//! `--authorization-mode=RBAC`: Roles, ClusterRoles and their bindings decide, as upstream's
//! RBAC authorizer.
//!
//! | file | what it holds |
//! |------|---------------|
//! | [`index`] | every role and binding, parsed once and indexed by subject |
//! | [`feed`] | keeps the index current from the API server's watch caches |
//! | [`policy`] | upstream's bootstrap policy: the default roles and bindings |
//! | [`reconcile`] | writes the bootstrap policy at every start, honouring `autoupdate` |
//! | [`escalation`] | no one grants, through a role or a binding, what they may not do themselves |
//!
//! Start at [`Rbac`]: a decision visits the bindings of the user and of each of their
//! groups (cluster-wide, then in the request's namespace) and allows on the first rule that
//! matches; it reads only the index, never the store.

pub mod escalation;
pub mod feed;
pub mod index;
pub mod policy;
pub mod reconcile;

use std::ops::ControlFlow;
use std::sync::{Arc, RwLock};

pub use index::{Index, Kind, RoleRules};

use super::{Attributes, Authorizer, Rules, Verdict};
use crate::auth::UserInfo;

/// The index, shared by the authorizer, the feed and the escalation checks.
pub type SharedIndex = Arc<RwLock<Index>>;

/// The RBAC authorizer.
pub struct Rbac {
    index: SharedIndex,
}

impl Rbac {
    pub fn new(index: SharedIndex) -> Rbac {
        Rbac { index }
    }
}

/// Whether the rules of a binding (`grants_paths`: a ClusterRoleBinding) allow `a`.
pub fn rules_allow(rules: &RoleRules, grants_paths: bool, a: &Attributes<'_>) -> bool {
    if a.resource_request {
        rules.resource.iter().any(|r| r.matches(a))
    } else {
        grants_paths && rules.non_resource.iter().any(|r| r.matches(a))
    }
}

/// Upstream's `RBAC: [a, b]` of the errors met while deciding.
fn describe_errors(errors: &[String]) -> String {
    match errors {
        [one] => format!("RBAC: {one}"),
        many => format!("RBAC: [{}]", many.join(", ")),
    }
}

impl Authorizer for Rbac {
    fn authorize(&self, a: &Attributes<'_>) -> Verdict {
        let index = self.index.read().expect("rbac index lock");
        let mut errors = Vec::new();
        let allowed = index.visit(a.user, a.namespace, |source, rules| {
            match rules {
                Ok(rules) if rules_allow(rules, source.grants_paths(), a) => {
                    let (binding_kind, role_kind, role) = match source.role_ref {
                        index::RoleRef::ClusterRole(n) if source.grants_paths() => {
                            ("ClusterRoleBinding", "ClusterRole", n)
                        }
                        index::RoleRef::ClusterRole(n) => ("RoleBinding", "ClusterRole", n),
                        index::RoleRef::Role(n) => ("RoleBinding", "Role", n),
                    };
                    let binding = match source.namespace {
                        "" => format!("{:?}", source.binding),
                        ns => format!("\"{}/{ns}\"", source.binding),
                    };
                    return ControlFlow::Break(format!(
                        "RBAC: allowed by {binding_kind} {binding} of {role_kind} {role:?} to {}",
                        source.subject
                    ));
                }
                Ok(_) => {}
                Err(missing) => errors.push(missing.message.clone()),
            }
            ControlFlow::Continue(())
        });
        match allowed {
            Some(reason) => Verdict { reason, ..Verdict::allow() },
            None if errors.is_empty() => Verdict::no_opinion(""),
            None => Verdict::no_opinion(describe_errors(&errors)),
        }
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let index = self.index.read().expect("rbac index lock");
        let mut rules = Rules::default();
        let mut errors = Vec::new();
        index.visit::<()>(user, namespace, |source, found| {
            match found {
                Ok(found) => {
                    rules.resource_rules.extend(found.resource.iter().cloned());
                    if source.grants_paths() {
                        rules.non_resource_rules.extend(found.non_resource.iter().cloned());
                    }
                }
                Err(missing) => errors.push(missing.message.clone()),
            }
            ControlFlow::Continue(())
        });
        if !errors.is_empty() {
            rules.incomplete = true;
            rules.evaluation_error = Some(describe_errors(&errors));
        }
        rules
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::Decision;
    use serde_json::json;

    fn attrs<'a>(
        user: &'a UserInfo,
        verb: &'a str,
        ns: &'a str,
        resource: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user,
            verb: verb.into(),
            namespace: ns,
            api_group: "",
            api_version: "v1",
            resource,
            subresource: "",
            name: name.into(),
            resource_request: true,
            path: "",
        }
    }

    #[test]
    fn decides_from_bindings_and_lists_what_it_decides() {
        let index: SharedIndex = Default::default();
        {
            let mut i = index.write().unwrap();
            i.put(
                Kind::Role,
                &json!({"metadata": {"name": "pod-reader", "namespace": "dev"},
                "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
            );
            i.put(
                Kind::RoleBinding,
                &json!({"metadata": {"name": "jane-reads", "namespace": "dev"},
                "roleRef": {"kind": "Role", "name": "pod-reader"},
                "subjects": [{"kind": "User", "name": "jane"}]}),
            );
            i.put(
                Kind::ClusterRole,
                &json!({"metadata": {"name": "paths"},
                "rules": [{"verbs": ["get"], "nonResourceURLs": ["/version"]}]}),
            );
            i.put(
                Kind::RoleBinding,
                &json!({"metadata": {"name": "paths", "namespace": "dev"},
                "roleRef": {"kind": "ClusterRole", "name": "paths"},
                "subjects": [{"kind": "User", "name": "jane"}]}),
            );
            i.put(
                Kind::RoleBinding,
                &json!({"metadata": {"name": "dangling", "namespace": "prod"},
                "roleRef": {"kind": "Role", "name": "nope"},
                "subjects": [{"kind": "User", "name": "jane"}]}),
            );
        }
        let rbac = Rbac::new(index);
        let jane = UserInfo::authenticated("jane".into(), vec![]);
        let yes = rbac.authorize(&attrs(&jane, "get", "dev", "pods", "web"));
        assert_eq!(yes.decision, Decision::Allow);
        assert_eq!(
            yes.reason,
            "RBAC: allowed by RoleBinding \"jane-reads/dev\" of Role \"pod-reader\" to User \"jane\""
        );
        assert_eq!(
            rbac.authorize(&attrs(&jane, "list", "dev", "pods", "")).decision,
            Decision::NoOpinion
        );
        assert_eq!(
            rbac.authorize(&attrs(&jane, "get", "other", "pods", "web")).decision,
            Decision::NoOpinion
        );
        // A RoleBinding of a ClusterRole grants no paths.
        let path = Attributes::non_resource(&jane, "get", "/version");
        assert_eq!(rbac.authorize(&path).decision, Decision::NoOpinion);
        let refused = rbac.authorize(&attrs(&jane, "get", "prod", "pods", "web"));
        assert_eq!(refused.reason, "RBAC: role.rbac.authorization.k8s.io \"nope\" not found");
        let listed = rbac.rules_for(&jane, "dev");
        assert_eq!(listed.resource_rules.len(), 1);
        assert!(listed.non_resource_rules.is_empty() && !listed.incomplete);
        let listed = rbac.rules_for(&jane, "prod");
        assert!(listed.incomplete);
        assert_eq!(
            listed.evaluation_error.as_deref(),
            Some("RBAC: role.rbac.authorization.k8s.io \"nope\" not found")
        );
    }
}
