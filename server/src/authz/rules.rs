//! Rules: what a user may do, as `SelfSubjectRulesReview` lists it (upstream's
//! `ResourceRuleInfo` and `NonResourceRuleInfo`), and how one rule matches a request's
//! [`Attributes`] the way an RBAC `PolicyRule` does, so that an authorizer that decides from
//! rules lists exactly what it decides.

use serde_json::{json, Value};

use super::Attributes;

/// `*`: every verb, group, resource or path.
pub const ALL: &str = "*";

/// May `verbs` on `resources` in `api_groups` (of the objects in `resource_names`, or all).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    /// `pods`, `pods/log`, `*/scale`, or `*`.
    pub resources: Vec<String>,
    /// Empty: every name.
    pub resource_names: Vec<String>,
}

/// May `verbs` on the paths in `non_resource_urls` (`/healthz`, or a prefix ending in `*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NonResourceRule {
    pub verbs: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

/// What an authorizer lists for a user in a namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    pub resource_rules: Vec<ResourceRule>,
    pub non_resource_rules: Vec<NonResourceRule>,
    /// True when the authorizer may allow more than it lists (upstream's webhook, or RBAC
    /// when a role could not be read).
    pub incomplete: bool,
    pub evaluation_error: Option<String>,
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn has(items: &[String], wanted: &str) -> bool {
    items.iter().any(|i| i == ALL || i == wanted)
}

impl ResourceRule {
    pub fn new(verbs: &[&str], api_groups: &[&str], resources: &[&str]) -> ResourceRule {
        ResourceRule {
            verbs: strings(verbs),
            api_groups: strings(api_groups),
            resources: strings(resources),
            resource_names: Vec::new(),
        }
    }

    /// Whether this rule allows the resource request `a` (as RBAC's `RuleAllows`).
    pub fn matches(&self, a: &Attributes<'_>) -> bool {
        if !a.resource_request || !has(&self.verbs, &a.verb) || !has(&self.api_groups, a.api_group)
        {
            return false;
        }
        let resource_matches = self.resources.iter().any(|r| {
            r == ALL
                || (a.subresource.is_empty() && r == a.resource)
                || (!a.subresource.is_empty()
                    && (r.split_once('/') == Some((a.resource, a.subresource))
                        || r.strip_prefix("*/") == Some(a.subresource)))
        });
        resource_matches
            && (self.resource_names.is_empty()
                || (!a.name.is_empty() && self.resource_names.iter().any(|n| *n == a.name)))
    }

    /// The rule as `status.resourceRules[]` shows it (empty lists left out, as upstream's
    /// `omitempty`; `verbs` always there).
    pub fn to_json(&self) -> Value {
        let mut rule = json!({"verbs": self.verbs});
        for (key, items) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
        ] {
            if !items.is_empty() {
                rule[key] = json!(items);
            }
        }
        rule
    }
}

impl NonResourceRule {
    pub fn new(verbs: &[&str], non_resource_urls: &[&str]) -> NonResourceRule {
        NonResourceRule { verbs: strings(verbs), non_resource_urls: strings(non_resource_urls) }
    }

    /// Whether this rule allows the non-resource request `a`: a path listed exactly, or
    /// under a listed prefix that ends in `*`.
    pub fn matches(&self, a: &Attributes<'_>) -> bool {
        !a.resource_request
            && has(&self.verbs, &a.verb)
            && self.non_resource_urls.iter().any(|url| {
                url == ALL
                    || url == a.path
                    || url.strip_suffix('*').is_some_and(|prefix| a.path.starts_with(prefix))
            })
    }

    pub fn to_json(&self) -> Value {
        let mut rule = json!({"verbs": self.verbs});
        if !self.non_resource_urls.is_empty() {
            rule["nonResourceURLs"] = json!(self.non_resource_urls);
        }
        rule
    }
}

impl Rules {
    /// Whether one of the rules allows `a`.
    pub fn allow(&self, a: &Attributes<'_>) -> bool {
        if a.resource_request {
            self.resource_rules.iter().any(|r| r.matches(a))
        } else {
            self.non_resource_rules.iter().any(|r| r.matches(a))
        }
    }

    /// A `SelfSubjectRulesReview`'s `status`.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "resourceRules": self.resource_rules.iter().map(ResourceRule::to_json).collect::<Vec<_>>(),
            "nonResourceRules": self.non_resource_rules.iter().map(NonResourceRule::to_json).collect::<Vec<_>>(),
            "incomplete": self.incomplete,
        });
        if let Some(error) = self.evaluation_error.as_ref().filter(|e| !e.is_empty()) {
            status["evaluationError"] = json!(error);
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::UserInfo;

    fn resource<'a>(
        user: &'a UserInfo,
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        sub: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes::resource(user, verb, group, resource, sub, "default", name)
    }

    #[test]
    fn resource_rules_match_as_rbac_policy_rules() {
        let u = UserInfo::authenticated("jane".into(), vec![]);
        let pods = ResourceRule::new(&["get", "list"], &[""], &["pods"]);
        assert!(pods.matches(&resource(&u, "get", "", "pods", "", "web")));
        assert!(!pods.matches(&resource(&u, "delete", "", "pods", "", "web")));
        assert!(!pods.matches(&resource(&u, "get", "apps", "pods", "", "web")));
        // A subresource needs its own entry.
        assert!(!pods.matches(&resource(&u, "get", "", "pods", "log", "web")));
        let logs = ResourceRule::new(&["get"], &[""], &["pods/log"]);
        assert!(logs.matches(&resource(&u, "get", "", "pods", "log", "web")));
        let scale = ResourceRule::new(&["*"], &["*"], &["*/scale"]);
        assert!(scale.matches(&resource(&u, "update", "apps", "deployments", "scale", "d")));
        assert!(!scale.matches(&resource(&u, "update", "apps", "deployments", "", "d")));
        let mut named = ResourceRule::new(&["get"], &[""], &["configmaps"]);
        named.resource_names = vec!["one".into()];
        assert!(named.matches(&resource(&u, "get", "", "configmaps", "", "one")));
        assert!(!named.matches(&resource(&u, "get", "", "configmaps", "", "two")));
        assert!(!named.matches(&resource(&u, "get", "", "configmaps", "", "")));
    }

    #[test]
    fn non_resource_rules_match_paths_and_prefixes() {
        let u = UserInfo::anonymous();
        let rule = NonResourceRule::new(&["get"], &["/healthz", "/openapi/v3/*"]);
        let path = |verb: &'static str, path: &'static str| Attributes {
            verb: verb.into(),
            path,
            ..Attributes::non_resource(&u, verb, path)
        };
        assert!(rule.matches(&path("get", "/healthz")));
        assert!(!rule.matches(&path("post", "/healthz")));
        assert!(!rule.matches(&path("get", "/healthz/etcd")));
        assert!(rule.matches(&path("get", "/openapi/v3/apis/apps/v1")));
        assert!(!rule.matches(&path("get", "/openapi/v3")));
    }

    #[test]
    fn status_lists_rules_as_upstream() {
        let rules = Rules {
            resource_rules: vec![ResourceRule::new(&["*"], &["*"], &["*"])],
            non_resource_rules: vec![NonResourceRule::new(&["get"], &["/version"])],
            incomplete: false,
            evaluation_error: None,
        };
        assert_eq!(
            rules.to_status(),
            json!({
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/version"]}],
                "incomplete": false,
            })
        );
        assert_eq!(
            Rules::default().to_status(),
            json!({"resourceRules": [], "nonResourceRules": [], "incomplete": false})
        );
    }
}
