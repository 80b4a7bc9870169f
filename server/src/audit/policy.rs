//! The audit policy (`--audit-policy-file`, an `audit.k8s.io/v1` `Policy`): read and checked
//! as kube-apiserver reads and checks it at startup, and asked which [`Level`] a request is
//! recorded at and which stages are left out. The first rule that matches decides; no match
//! is [`Level::None`].

use std::collections::BTreeSet;

use rkube_apis::go_quote;
use rkube_apis::validation::{name_problems, FieldError, NameRule};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::authz::Attributes;

/// How much of a request an event records, from the least.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Level {
    /// Not recorded.
    None,
    /// Who asked what (user, verb, resource, time, answer's code), no bodies.
    Metadata,
    /// And the request's object.
    Request,
    /// And the response's object.
    RequestResponse,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// When in a request an event is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Stage {
    /// As the request arrives, before it is served.
    RequestReceived,
    /// When the response's headers go out: long-running requests (watches, exec, logs,
    /// proxies) only.
    ResponseStarted,
    /// When the response is done.
    ResponseComplete,
    /// When serving the request failed unexpectedly.
    Panic,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }
}

const LEVELS: [&str; 4] = ["None", "Metadata", "Request", "RequestResponse"];
const STAGES: [&str; 4] = ["RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"];

/// What a rule gives a request it matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub level: Level,
    /// The policy's omitted stages and the rule's.
    pub omit_stages: BTreeSet<Stage>,
    /// Leave `metadata.managedFields` out of the recorded objects.
    pub omit_managed_fields: bool,
}

/// A checked policy.
#[derive(Clone, Debug)]
pub struct Policy {
    rules: Vec<Rule>,
    omit_stages: BTreeSet<Stage>,
    omit_managed_fields: bool,
}

#[derive(Clone, Debug)]
struct Rule {
    level: Level,
    users: Vec<String>,
    user_groups: Vec<String>,
    verbs: Vec<String>,
    resources: Vec<GroupResources>,
    namespaces: Vec<String>,
    non_resource_urls: Vec<String>,
    omit_stages: BTreeSet<Stage>,
    omit_managed_fields: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupResources {
    #[serde(default)]
    group: String,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    resource_names: Vec<String>,
}

/// The file's rule as written (levels and stages checked after reading).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleFile {
    #[serde(default)]
    level: String,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResources>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyFile {
    #[serde(default)]
    rules: Vec<RuleFile>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: bool,
}

impl Policy {
    /// Reads the policy file's text (YAML or JSON), with kube-apiserver's errors.
    pub fn parse(text: &[u8]) -> Result<Policy, String> {
        let value: Value = crate::yaml::decode(text)
            .map_err(|e| format!("failed decoding: error converting YAML to JSON: {e}"))?;
        let api_version = value["apiVersion"].as_str().unwrap_or("");
        let kind = value["kind"].as_str().unwrap_or("");
        if kind.is_empty() {
            return Err(format!(
                "failed decoding: Object 'Kind' is missing in '{}'",
                String::from_utf8_lossy(text).trim()
            ));
        }
        if api_version != "audit.k8s.io/v1" || kind != "Policy" {
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            return Err(format!(
                "failed decoding: no kind \"{kind}\" is registered for version \"{api_version}\" \
                 (group \"{group}\", version \"{version}\"); the policy must be an \
                 audit.k8s.io/v1 Policy"
            ));
        }
        let file: PolicyFile = serde_json::from_value(value)
            .map_err(|e| format!("failed decoding: json: cannot unmarshal the policy: {e}"))?;
        let errors = validate(&file);
        if !errors.is_empty() {
            let lines: Vec<String> = errors.iter().map(FieldError::line).collect();
            return Err(match lines.len() {
                1 => lines.into_iter().next().unwrap_or_default(),
                _ => format!("[{}]", lines.join(", ")),
            });
        }
        if file.rules.is_empty() {
            return Err("loaded illegal policy with 0 rules".into());
        }
        let omit_stages: BTreeSet<Stage> = stages(&file.omit_stages);
        let rules = file
            .rules
            .into_iter()
            .map(|r| Rule {
                level: level(&r.level),
                users: r.users,
                user_groups: r.user_groups,
                verbs: r.verbs,
                resources: r.resources,
                namespaces: r.namespaces,
                non_resource_urls: r.non_resource_urls,
                omit_stages: stages(&r.omit_stages).union(&omit_stages).copied().collect(),
                omit_managed_fields: r.omit_managed_fields,
            })
            .collect();
        Ok(Policy { rules, omit_stages, omit_managed_fields: file.omit_managed_fields })
    }

    /// What the first rule matching `a` gives; no match records nothing.
    pub fn decide(&self, a: &Attributes<'_>, authenticated: bool) -> Decision {
        match self.rules.iter().find(|r| r.matches(a, authenticated)) {
            Some(rule) => Decision {
                level: rule.level,
                omit_stages: rule.omit_stages.clone(),
                omit_managed_fields: rule.omit_managed_fields.unwrap_or(self.omit_managed_fields),
            },
            None => Decision {
                level: Level::None,
                omit_stages: self.omit_stages.clone(),
                omit_managed_fields: self.omit_managed_fields,
            },
        }
    }
}

fn level(text: &str) -> Level {
    serde_json::from_value(json!(text)).unwrap_or(Level::None)
}

fn stages(texts: &[String]) -> BTreeSet<Stage> {
    texts.iter().filter_map(|s| serde_json::from_value(json!(s)).ok()).collect()
}

impl Rule {
    /// Upstream's `ruleMatches`. A request whose authentication failed has no user: rules
    /// naming users or groups do not match it.
    fn matches(&self, a: &Attributes<'_>, authenticated: bool) -> bool {
        let named = |list: &[String], user: bool| {
            list.is_empty()
                || (authenticated
                    && if user {
                        list.contains(&a.user.name)
                    } else {
                        a.user.groups.iter().any(|g| list.contains(g))
                    })
        };
        if !named(&self.users, true) || !named(&self.user_groups, false) {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.iter().any(|v| *v == a.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(a);
        }
        if !self.non_resource_urls.is_empty() {
            return !a.resource_request
                && self.non_resource_urls.iter().any(|spec| path_matches(a.path, spec));
        }
        true
    }

    fn matches_resource(&self, a: &Attributes<'_>) -> bool {
        if !a.resource_request {
            return false;
        }
        // Cluster-scoped resources have the empty namespace.
        if !self.namespaces.is_empty() && !self.namespaces.iter().any(|n| n == a.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let combined = if a.subresource.is_empty() {
            a.resource.to_string()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        self.resources.iter().filter(|gr| gr.group == a.api_group).any(|gr| {
            if gr.resources.is_empty() {
                return true;
            }
            if !gr.resource_names.is_empty() && !gr.resource_names.iter().any(|n| *n == a.name) {
                return false;
            }
            gr.resources.iter().any(|r| {
                r == "*"
                    || *r == combined
                    || (!a.subresource.is_empty() && r.strip_prefix("*/") == Some(a.subresource))
                    || r.strip_suffix("/*") == Some(a.resource)
            })
        })
    }
}

/// `*`, the path itself, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}

/// Upstream's `ValidatePolicy`.
fn validate(file: &PolicyFile) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, rule) in file.rules.iter().enumerate() {
        let at = format!("rules[{i}]");
        match rule.level.as_str() {
            "" => errors.push(FieldError::required(format!("{at}.level"), "")),
            l if LEVELS.contains(&l) => {}
            l => errors.push(FieldError::unsupported(format!("{at}.level"), &json!(l), &LEVELS)),
        }
        for (j, url) in rule.non_resource_urls.iter().enumerate() {
            if url == "*" {
                continue;
            }
            let field = format!("{at}.nonResourceURLs[{j}]");
            if !url.starts_with('/') {
                let detail = "non-resource URL rules must begin with a '/' character";
                errors.push(FieldError::invalid(field.clone(), &json!(url), detail));
            }
            if !url.is_empty() && url[..url.len() - 1].contains('*') {
                let detail =
                    "non-resource URL wildcards '*' must be the final character of the rule";
                errors.push(FieldError::invalid(field, &json!(url), detail));
            }
        }
        for gr in &rule.resources {
            if !gr.group.is_empty() {
                let problems = name_problems(&gr.group, NameRule::Subdomain);
                if !problems.is_empty() {
                    let field = format!("{at}.resources.group");
                    errors.push(FieldError::invalid(field, &json!(gr.group), &problems.join(",")));
                }
            }
            if !gr.resource_names.is_empty() && gr.resources.is_empty() {
                let field = format!("{at}.resources.resourceNames");
                let detail = "using resourceNames requires at least one resource";
                errors.push(invalid_strings(field, &gr.resource_names, detail));
            }
        }
        for (j, stage) in rule.omit_stages.iter().enumerate() {
            if !STAGES.contains(&stage.as_str()) {
                let field = format!("{at}.omitStages[{j}]");
                let detail = format!("allowed stages are {}", STAGES.join(","));
                errors.push(FieldError::invalid(field, &json!(stage), &detail));
            }
        }
        if !rule.non_resource_urls.is_empty()
            && (!rule.resources.is_empty() || !rule.namespaces.is_empty())
        {
            let detail = "rules cannot apply to both regular resources and non-resource URLs";
            let field = format!("{at}.nonResourceURLs");
            errors.push(invalid_strings(field, &rule.non_resource_urls, detail));
        }
    }
    // The policy's own omitted stages are checked as the rules' are (upstream converts and
    // would keep an unknown one, which matches no stage).
    for (j, stage) in file.omit_stages.iter().enumerate() {
        if !STAGES.contains(&stage.as_str()) {
            let detail = format!("allowed stages are {}", STAGES.join(","));
            errors.push(FieldError::invalid(format!("omitStages[{j}]"), &json!(stage), &detail));
        }
    }
    errors
}

/// `Invalid value` for a list of strings, printed as Go's `%#v` prints a `[]string`.
fn invalid_strings(field: String, values: &[String], detail: &str) -> FieldError {
    let shown: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    FieldError {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: []string{{{}}}: {detail}", shown.join(", ")),
        field,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::UserInfo;

    fn policy(yaml: &str) -> Result<Policy, String> {
        Policy::parse(yaml.as_bytes())
    }

    fn resource<'a>(
        user: &'a UserInfo,
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        subresource: &'a str,
        namespace: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes::resource(user, verb, group, resource, subresource, namespace, name)
    }

    const HEAD: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\n";

    #[test]
    fn the_first_matching_rule_decides() {
        let p = policy(&format!(
            "{HEAD}omitStages: [RequestReceived]
rules:
- level: None
  users: [system:kube-proxy]
  verbs: [watch]
- level: RequestResponse
  resources:
  - group: \"\"
    resources: [secrets/*, \"*/status\"]
  omitStages: [ResponseStarted]
- level: Request
  resources:
  - group: apps
    resources: [deployments]
    resourceNames: [web]
  namespaces: [prod]
  omitManagedFields: true
- level: Metadata
  nonResourceURLs: [/healthz*, /version]
- level: Metadata
  userGroups: [system:nodes]
"
        ))
        .unwrap();
        let proxy = UserInfo::authenticated("system:kube-proxy".into(), vec![]);
        let jane = UserInfo::authenticated("jane".into(), vec!["dev".into()]);
        let node = UserInfo::authenticated("system:node:n1".into(), vec!["system:nodes".into()]);
        let watch = resource(&proxy, "watch", "", "services", "", "", "");
        assert_eq!(p.decide(&watch, true).level, Level::None);
        let secret = resource(&jane, "get", "", "secrets", "", "ns", "s");
        let d = p.decide(&secret, true);
        assert_eq!(d.level, Level::RequestResponse);
        assert_eq!(d.omit_stages, BTreeSet::from([Stage::RequestReceived, Stage::ResponseStarted]));
        let status = resource(&jane, "update", "", "pods", "status", "ns", "p");
        assert_eq!(p.decide(&status, true).level, Level::RequestResponse);
        let deploy = resource(&jane, "patch", "apps", "deployments", "", "prod", "web");
        let d = p.decide(&deploy, true);
        assert_eq!((d.level, d.omit_managed_fields), (Level::Request, true));
        let other = resource(&jane, "patch", "apps", "deployments", "", "prod", "api");
        assert_eq!(p.decide(&other, true).level, Level::None);
        let healthz = Attributes::non_resource(&jane, "get", "/healthz/etcd");
        assert_eq!(p.decide(&healthz, true).level, Level::Metadata);
        let nodes = resource(&node, "get", "", "pods", "", "", "");
        assert_eq!(p.decide(&nodes, true).level, Level::Metadata);
        // Failed authentication: no user to match.
        assert_eq!(p.decide(&nodes, false).level, Level::None);
        assert_eq!(p.decide(&other, true).omit_stages, BTreeSet::from([Stage::RequestReceived]));
    }

    #[test]
    fn bad_policies_are_refused_with_upstreams_messages() {
        let err = |text: &str| policy(text).unwrap_err();
        assert_eq!(err(&format!("{HEAD}rules: []")), "loaded illegal policy with 0 rules");
        assert!(err("rules: []").starts_with("failed decoding: Object 'Kind' is missing in"));
        assert!(err("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: []")
            .contains("no kind \"Policy\" is registered for version \"audit.k8s.io/v1beta1\""));
        assert_eq!(
            err(&format!("{HEAD}rules:\n- level: Everything\n")),
            "rules[0].level: Unsupported value: \"Everything\": supported values: \"None\", \
             \"Metadata\", \"Request\", \"RequestResponse\""
        );
        assert_eq!(
            err(&format!(
                "{HEAD}rules:\n- nonResourceURLs: [healthz]\n  resources: [{{group: \"\"}}]\n"
            )),
            "[rules[0].level: Required value, rules[0].nonResourceURLs[0]: Invalid value: \
             \"healthz\": non-resource URL rules must begin with a '/' character, \
             rules[0].nonResourceURLs: Invalid value: []string{\"healthz\"}: rules cannot apply \
             to both regular resources and non-resource URLs]"
        );
        assert_eq!(
            err(&format!("{HEAD}rules:\n- level: None\n  omitStages: [Never]\n")),
            "rules[0].omitStages[0]: Invalid value: \"Never\": allowed stages are \
             RequestReceived,ResponseStarted,ResponseComplete,Panic"
        );
        assert_eq!(
            err(&format!("{HEAD}rules:\n- level: None\n  nonResourceURLs: [/a*b]\n")),
            "rules[0].nonResourceURLs[0]: Invalid value: \"/a*b\": non-resource URL wildcards \
             '*' must be the final character of the rule"
        );
        assert!(err(&format!(
            "{HEAD}rules:\n- level: None\n  resources: [{{group: rbac/v1, resourceNames: [x]}}]\n"
        ))
        .contains("rules[0].resources.resourceNames: Invalid value: []string{\"x\"}: using resourceNames requires at least one resource"));
    }
}
