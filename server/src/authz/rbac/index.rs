//! The RBAC index: every Role, ClusterRole, RoleBinding and ClusterRoleBinding, parsed once
//! and indexed by subject, so that a decision reads only the bindings of the asking user and
//! their groups (in the request's namespace and cluster-wide), never every binding.
//!
//! The index is fed from the API server's watch caches ([`super::feed`]); it is pure data
//! and takes objects as JSON, so its tests need no server.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use serde_json::Value;

use crate::auth::UserInfo;
use crate::authz::{NonResourceRule, ResourceRule};

/// The four RBAC kinds, by their plural resource names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl Kind {
    pub const ALL: [Kind; 4] =
        [Kind::Role, Kind::ClusterRole, Kind::RoleBinding, Kind::ClusterRoleBinding];

    pub fn plural(self) -> &'static str {
        match self {
            Kind::Role => "roles",
            Kind::ClusterRole => "clusterroles",
            Kind::RoleBinding => "rolebindings",
            Kind::ClusterRoleBinding => "clusterrolebindings",
        }
    }
}

/// A role's rules, read once from its `rules` (rules it cannot read are skipped: validation
/// keeps them out of the store).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RoleRules {
    pub resource: Vec<ResourceRule>,
    pub non_resource: Vec<NonResourceRule>,
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|items| items.iter().filter_map(|s| s.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

impl RoleRules {
    /// The rules of a `rules` array of `PolicyRule`s.
    pub fn from_json(rules: &Value) -> RoleRules {
        let mut parsed = RoleRules::default();
        for rule in rules.as_array().into_iter().flatten() {
            let verbs = strings(&rule["verbs"]);
            let urls = strings(&rule["nonResourceURLs"]);
            if !urls.is_empty() {
                parsed.non_resource.push(NonResourceRule { verbs, non_resource_urls: urls });
            } else {
                parsed.resource.push(ResourceRule {
                    verbs,
                    api_groups: strings(&rule["apiGroups"]),
                    resources: strings(&rule["resources"]),
                    resource_names: strings(&rule["resourceNames"]),
                });
            }
        }
        parsed
    }
}

/// Who a binding names: users (service accounts are their user names) and groups.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Subject {
    User(String),
    Group(String),
}

/// A subject borrowed from the asking user: what a decision looks up, without copying names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubjectRef<'a> {
    User(&'a str),
    Group(&'a str),
}

impl std::fmt::Display for SubjectRef<'_> {
    /// As upstream describes a subject in a decision's reason: `User "jane"`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SubjectRef::User(name) => write!(f, "User {name:?}"),
            SubjectRef::Group(name) => write!(f, "Group {name:?}"),
        }
    }
}

/// What a binding grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoleRef {
    Role(String),
    ClusterRole(String),
}

#[derive(Debug)]
struct Binding {
    role_ref: RoleRef,
    subjects: Vec<Subject>,
}

/// The bindings that name one subject.
#[derive(Debug, Default)]
struct SubjectBindings {
    /// ClusterRoleBinding names.
    cluster: Vec<String>,
    /// RoleBinding names by namespace.
    namespaced: HashMap<String, Vec<String>>,
}

impl SubjectBindings {
    fn is_empty(&self) -> bool {
        self.cluster.is_empty() && self.namespaced.is_empty()
    }
}

/// Where a rule came from, as upstream's rule visitor describes it in `evaluationError`s.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// The binding's namespace; `""` for a ClusterRoleBinding.
    pub namespace: &'a str,
    pub binding: &'a str,
    pub role_ref: &'a RoleRef,
    /// The subject of the binding that matched the user.
    pub subject: SubjectRef<'a>,
}

impl Source<'_> {
    /// Whether the binding grants its role's non-resource rules (ClusterRoleBindings only).
    pub fn grants_paths(&self) -> bool {
        self.namespace.is_empty()
    }
}

/// A binding that names a role the index does not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingRole {
    /// `role.rbac.authorization.k8s.io "x" not found`, as upstream.
    pub message: String,
}

/// Objects by namespace, then name (`""` namespace for cluster-scoped ones), so that a
/// lookup borrows the request's strings instead of building a key: a decision allocates
/// nothing.
#[derive(Debug)]
struct ByNamespace<T>(HashMap<String, HashMap<String, T>>);

impl<T> Default for ByNamespace<T> {
    fn default() -> Self {
        ByNamespace(HashMap::new())
    }
}

impl<T> ByNamespace<T> {
    fn get(&self, namespace: &str, name: &str) -> Option<&T> {
        self.0.get(namespace)?.get(name)
    }

    fn insert(&mut self, namespace: String, name: String, value: T) {
        self.0.entry(namespace).or_default().insert(name, value);
    }

    fn remove(&mut self, namespace: &str, name: &str) -> Option<T> {
        let names = self.0.get_mut(namespace)?;
        let removed = names.remove(name);
        if names.is_empty() {
            self.0.remove(namespace);
        }
        removed
    }

    fn len(&self) -> usize {
        self.0.values().map(HashMap::len).sum()
    }
}

/// The index (see the module doc).
#[derive(Debug, Default)]
pub struct Index {
    roles: ByNamespace<Arc<RoleRules>>,
    cluster_roles: HashMap<String, Arc<RoleRules>>,
    /// `""` namespace for ClusterRoleBindings.
    bindings: ByNamespace<Binding>,
    by_user: HashMap<String, SubjectBindings>,
    by_group: HashMap<String, SubjectBindings>,
}

/// `system:serviceaccount:<ns>:<name>`.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

fn subjects_of(binding_namespace: &str, subjects: &Value) -> Vec<Subject> {
    let mut out = Vec::new();
    for s in subjects.as_array().into_iter().flatten() {
        let name = s["name"].as_str().unwrap_or_default();
        match s["kind"].as_str().unwrap_or_default() {
            "User" => out.push(Subject::User(name.to_string())),
            "Group" => out.push(Subject::Group(name.to_string())),
            "ServiceAccount" => {
                // A RoleBinding's account without a namespace is in the binding's (upstream).
                let ns =
                    s["namespace"].as_str().filter(|n| !n.is_empty()).unwrap_or(binding_namespace);
                out.push(Subject::User(service_account_user(ns, name)));
            }
            _ => {}
        }
    }
    out.dedup();
    out
}

impl Index {
    /// Puts (adds or replaces) the object `obj` of `kind`.
    pub fn put(&mut self, kind: Kind, obj: &Value) {
        let namespace = obj["metadata"]["namespace"].as_str().unwrap_or("").to_string();
        let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
        match kind {
            Kind::Role => {
                self.roles.insert(namespace, name, Arc::new(RoleRules::from_json(&obj["rules"])));
            }
            Kind::ClusterRole => {
                self.cluster_roles.insert(name, Arc::new(RoleRules::from_json(&obj["rules"])));
            }
            Kind::RoleBinding | Kind::ClusterRoleBinding => {
                let namespace =
                    if kind == Kind::ClusterRoleBinding { String::new() } else { namespace };
                self.remove_binding(&namespace, &name);
                let role_name = obj["roleRef"]["name"].as_str().unwrap_or("").to_string();
                let role_ref = match obj["roleRef"]["kind"].as_str() {
                    Some("Role") => RoleRef::Role(role_name),
                    _ => RoleRef::ClusterRole(role_name),
                };
                let subjects = subjects_of(&namespace, &obj["subjects"]);
                for subject in &subjects {
                    let entry = match subject {
                        Subject::User(user) => self.by_user.entry(user.clone()),
                        Subject::Group(group) => self.by_group.entry(group.clone()),
                    }
                    .or_default();
                    if namespace.is_empty() {
                        entry.cluster.push(name.clone());
                    } else {
                        entry.namespaced.entry(namespace.clone()).or_default().push(name.clone());
                    }
                }
                self.bindings.insert(namespace, name, Binding { role_ref, subjects });
            }
        }
    }

    /// Removes the object `namespace/name` of `kind`.
    pub fn remove(&mut self, kind: Kind, namespace: &str, name: &str) {
        match kind {
            Kind::Role => {
                self.roles.remove(namespace, name);
            }
            Kind::ClusterRole => {
                self.cluster_roles.remove(name);
            }
            Kind::RoleBinding => self.remove_binding(namespace, name),
            Kind::ClusterRoleBinding => self.remove_binding("", name),
        }
    }

    /// Forgets every object of `kind` (before it is loaded again).
    pub fn clear(&mut self, kind: Kind) {
        match kind {
            Kind::Role => self.roles = ByNamespace::default(),
            Kind::ClusterRole => self.cluster_roles.clear(),
            Kind::RoleBinding | Kind::ClusterRoleBinding => {
                let cluster = kind == Kind::ClusterRoleBinding;
                let keys: Vec<(String, String)> = self
                    .bindings
                    .0
                    .iter()
                    .filter(|(ns, _)| ns.is_empty() == cluster)
                    .flat_map(|(ns, names)| names.keys().map(|n| (ns.clone(), n.clone())))
                    .collect();
                for (ns, name) in keys {
                    self.remove_binding(&ns, &name);
                }
            }
        }
    }

    fn remove_binding(&mut self, namespace: &str, name: &str) {
        let Some(old) = self.bindings.remove(namespace, name) else {
            return;
        };
        for subject in old.subjects {
            let (map, key) = match &subject {
                Subject::User(user) => (&mut self.by_user, user),
                Subject::Group(group) => (&mut self.by_group, group),
            };
            let Some(entry) = map.get_mut(key) else { continue };
            if namespace.is_empty() {
                entry.cluster.retain(|n| n != name);
            } else if let Some(names) = entry.namespaced.get_mut(namespace) {
                names.retain(|n| n != name);
                if names.is_empty() {
                    entry.namespaced.remove(namespace);
                }
            }
            if entry.is_empty() {
                map.remove(key);
            }
        }
    }

    /// The rules of the role a binding in `namespace` refers to.
    fn role(&self, namespace: &str, role_ref: &RoleRef) -> Result<&Arc<RoleRules>, MissingRole> {
        match role_ref {
            RoleRef::ClusterRole(name) => self.cluster_roles.get(name).ok_or_else(|| MissingRole {
                message: format!("clusterrole.rbac.authorization.k8s.io {name:?} not found"),
            }),
            RoleRef::Role(name) => self.roles.get(namespace, name).ok_or_else(|| MissingRole {
                message: format!("role.rbac.authorization.k8s.io {name:?} not found"),
            }),
        }
    }

    /// The bindings naming `subject`, if any.
    fn bindings_of(&self, subject: SubjectRef<'_>) -> Option<&SubjectBindings> {
        match subject {
            SubjectRef::User(user) => self.by_user.get(user),
            SubjectRef::Group(group) => self.by_group.get(group),
        }
    }

    /// Calls `visit` with the rules of every binding that applies to `user` for a request in
    /// `namespace` (`""`: cluster-wide only), cluster-wide bindings first, as upstream's
    /// `VisitRulesFor`; a role that is missing is reported as an error. RoleBindings grant
    /// only resource rules (their non-resource rules are left out, as upstream).
    pub fn visit<B>(
        &self,
        user: &UserInfo,
        namespace: &str,
        mut visit: impl FnMut(Source<'_>, Result<&RoleRules, &MissingRole>) -> ControlFlow<B>,
    ) -> Option<B> {
        let subjects = || {
            std::iter::once(SubjectRef::User(user.name.as_str()))
                .chain(user.groups.iter().map(|g| SubjectRef::Group(g.as_str())))
        };
        let mut each = |ns: &str, name: &str, subject: SubjectRef<'_>| -> ControlFlow<B> {
            let Some(binding) = self.bindings.get(ns, name) else {
                return ControlFlow::Continue(());
            };
            let source =
                Source { namespace: ns, binding: name, role_ref: &binding.role_ref, subject };
            match self.role(ns, &binding.role_ref) {
                Ok(rules) => visit(source, Ok(rules)),
                Err(missing) => visit(source, Err(&missing)),
            }
        };
        for subject in subjects() {
            let Some(entry) = self.bindings_of(subject) else { continue };
            for name in &entry.cluster {
                if let ControlFlow::Break(b) = each("", name, subject) {
                    return Some(b);
                }
            }
        }
        if namespace.is_empty() {
            return None;
        }
        for subject in subjects() {
            let Some(names) = self.bindings_of(subject).and_then(|e| e.namespaced.get(namespace))
            else {
                continue;
            };
            for name in names {
                if let ControlFlow::Break(b) = each(namespace, name, subject) {
                    return Some(b);
                }
            }
        }
        None
    }

    /// The rules of the role a binding in `namespace` names (`kind` `Role` or `ClusterRole`).
    pub fn role_rules(&self, namespace: &str, kind: &str, name: &str) -> Option<RoleRules> {
        let role_ref = match kind {
            "Role" => RoleRef::Role(name.to_string()),
            _ => RoleRef::ClusterRole(name.to_string()),
        };
        self.role(namespace, &role_ref).ok().map(|r| RoleRules {
            resource: r.resource.clone(),
            non_resource: r.non_resource.clone(),
        })
    }

    /// How many objects of each kind the index holds (roles, cluster roles, bindings).
    pub fn counts(&self) -> (usize, usize, usize) {
        (self.roles.len(), self.cluster_roles.len(), self.bindings.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules_seen(index: &Index, user: &UserInfo, ns: &str) -> Vec<String> {
        let mut seen = Vec::new();
        index.visit::<()>(user, ns, |source, rules| {
            seen.push(match rules {
                Ok(r) => {
                    let paths = if source.grants_paths() { r.non_resource.len() } else { 0 };
                    format!("{}/{}:{}", source.namespace, source.binding, r.resource.len() + paths)
                }
                Err(e) => e.message.clone(),
            });
            ControlFlow::Continue(())
        });
        seen
    }

    #[test]
    fn bindings_are_found_by_user_group_and_service_account() {
        let mut index = Index::default();
        index.put(
            Kind::ClusterRole,
            &json!({"metadata": {"name": "view"}, "rules": [
                {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
                {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
            ]}),
        );
        index.put(
            Kind::Role,
            &json!({"metadata": {"name": "r", "namespace": "a"}, "rules": [
                {"verbs": ["list"], "apiGroups": [""], "resources": ["secrets"]},
            ]}),
        );
        index.put(
            Kind::ClusterRoleBinding,
            &json!({"metadata": {"name": "crb"},
            "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "Group", "name": "devs"}]}),
        );
        index.put(Kind::RoleBinding, &json!({"metadata": {"name": "rb", "namespace": "a"},
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "robot"}, {"kind": "User", "name": "jane"}]}));
        index.put(
            Kind::RoleBinding,
            &json!({"metadata": {"name": "view", "namespace": "a"},
            "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "jane"}]}),
        );
        index.put(
            Kind::RoleBinding,
            &json!({"metadata": {"name": "broken", "namespace": "b"},
            "roleRef": {"kind": "Role", "name": "gone"},
            "subjects": [{"kind": "User", "name": "jane"}]}),
        );

        let jane = UserInfo::authenticated("jane".into(), vec!["devs".into()]);
        // The cluster binding first, then the namespace's; the ClusterRole bound in a
        // namespace grants its resource rule only.
        assert_eq!(rules_seen(&index, &jane, "a"), ["/crb:2", "a/rb:1", "a/view:1"]);
        assert_eq!(rules_seen(&index, &jane, ""), ["/crb:2"]);
        assert_eq!(
            rules_seen(&index, &jane, "b"),
            ["/crb:2", "role.rbac.authorization.k8s.io \"gone\" not found"]
        );
        let robot = UserInfo::authenticated("system:serviceaccount:a:robot".into(), vec![]);
        assert_eq!(rules_seen(&index, &robot, "a"), ["a/rb:1"]);
        let other = UserInfo::authenticated("system:serviceaccount:b:robot".into(), vec![]);
        assert!(rules_seen(&index, &other, "a").is_empty());

        // Replacing a binding drops its old subjects; removing it drops it.
        index.put(
            Kind::RoleBinding,
            &json!({"metadata": {"name": "rb", "namespace": "a"},
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": "joe"}]}),
        );
        assert_eq!(rules_seen(&index, &jane, "a"), ["/crb:2", "a/view:1"]);
        assert!(rules_seen(&index, &robot, "a").is_empty());
        index.remove(Kind::ClusterRoleBinding, "", "crb");
        index.remove(Kind::RoleBinding, "a", "view");
        assert!(rules_seen(&index, &jane, "a").is_empty());
        assert!(!index.by_group.contains_key("devs"));
        // A role that goes is reported missing.
        index.remove(Kind::Role, "a", "r");
        let joe = UserInfo::authenticated("joe".into(), vec![]);
        assert_eq!(
            rules_seen(&index, &joe, "a"),
            ["role.rbac.authorization.k8s.io \"r\" not found"]
        );
    }
}
