//! Validation of admissionregistration.k8s.io: webhook configurations (mutating and
//! validating), ValidatingAdmissionPolicies and their bindings, with upstream's (v1.33)
//! messages and field paths (`ValidateValidatingWebhookConfiguration[Update]`,
//! `ValidateMutatingWebhookConfiguration[Update]`, `ValidateValidatingAdmissionPolicy[Update]`,
//! `ValidateValidatingAdmissionPolicyBinding[Update]`; the webhook URL and service checks of
//! `k8s.io/apiserver/pkg/util/webhook` are shared with CRDs in `super::webhook`).
//!
//! Objects arrive after rkube's defaulting (failure and match policies, selectors, timeouts,
//! rule scopes, service ports), so the `Required` errors upstream keeps for those fields only
//! fire when the defaulting could not run. Metadata is checked by the caller.
//!
//! CEL expressions (match conditions, validation and message expressions, audit-annotation
//! value expressions, variables) are checked for presence and the lengths and shapes upstream
//! checks, then compiled by the installed [`rules::ExpressionChecker`] (the server's is
//! rkube-cel's) with upstream's details ("compilation failed: ...", "must evaluate to bool").
//! The variables are typed `dyn` there (upstream types `request` and `namespaceObject`), so
//! a misspelled field of theirs is not found, nor is a result that is `dyn` where cel-go
//! would know it is not a bool.
//!
//! Two upstream slips are kept on purpose, since kubectl shows them: a binding's match
//! resources are reported under `spec.matchResouces`, and a webhook service's missing
//! `namespace` is reported at `service.name` as "service name is required" (and a missing
//! `name` at `service.namespace`), because upstream passes the two to its service check the
//! other way round.

use std::collections::HashSet;

use serde_json::Value;

use super::rules::{self, Returns};
use super::values::{items, label_selector, one_of, str_of, text};
use super::webhook::{webhook_service, webhook_url};
use super::{name_problems, qualified_name_problems, FieldError, NameRule};
use crate::gofmt::{go_quote, go_slice, go_string_slice};

/// `sets.List` of each enum upstream checks: sorted, as the messages print them.
const FAILURE_POLICIES: [&str; 2] = ["Fail", "Ignore"];
const MATCH_POLICIES: [&str; 2] = ["Equivalent", "Exact"];
const ALL_SIDE_EFFECTS: [&str; 4] = ["None", "NoneOnDryRun", "Some", "Unknown"];
const NO_SIDE_EFFECTS: [&str; 2] = ["None", "NoneOnDryRun"];
const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const REINVOCATION_POLICIES: [&str; 2] = ["IfNeeded", "Never"];
const SCOPES: [&str; 3] = ["*", "Cluster", "Namespaced"];
const VALIDATION_REASONS: [&str; 3] = ["Forbidden", "Invalid", "RequestEntityTooLarge"];
const VALIDATION_ACTIONS: [&str; 3] = ["Audit", "Deny", "Warn"];
/// Not sorted: upstream lists these two by hand.
const PARAMETER_NOT_FOUND_ACTIONS: [&str; 2] = ["Deny", "Allow"];
/// The AdmissionReview versions this server (and the one before it) understands.
const ACCEPTED_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];
const MAX_MATCH_CONDITIONS: usize = 64;
const MAX_AUDIT_ANNOTATIONS: usize = 20;
const MAX_AUDIT_VALUE_EXPRESSION: usize = 5 * 1024;
const NAME_AND_SELECTOR: &str = "name and selector are mutually exclusive";

/// A list field's items as Go reads a `[]string`: unset and non-string entries are `""`.
fn strings(v: &Value) -> Vec<&str> {
    items(v).iter().map(str_of).collect()
}

/// A named string slice as `%#v` prints it: `[]admissionregistration.OperationType{"*"}`.
fn go_typed_slice(type_name: &str, values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[]{type_name}{{{}}}", quoted.join(", "))
}

/// Upstream's `field.TooMany`.
fn too_many(field: String, actual: usize, max: usize) -> FieldError {
    FieldError {
        reason: "FieldValueTooMany",
        message: format!("Too many: {actual}: must have at most {max} items"),
        field,
    }
}

/// A pointer-typed enum: unset is fine (upstream defaults it), anything else must be listed.
fn enum_field(field: String, value: &Value, supported: &[&str], errors: &mut Vec<FieldError>) {
    errors.extend(one_of(&field, value, supported));
}

// ---------------------------------------------------------------------------------------
// Webhook configurations

/// What an update relaxes, from what the stored object already had wrong.
#[derive(Clone, Copy)]
struct WebhookOptions {
    /// Match conditions unchanged (same number of webhooks, each with the same conditions).
    ignore_match_conditions: bool,
    /// Only `None` and `NoneOnDryRun` side effects (unless an old webhook had another).
    require_no_side_effects: bool,
    /// At least one known AdmissionReview version per webhook.
    require_recognized_review_version: bool,
    /// Webhook names unique within the configuration.
    require_unique_names: bool,
    /// Selector values need not be label values (an old selector was already invalid).
    allow_invalid_label_values: bool,
}

const CREATE_OPTIONS: WebhookOptions = WebhookOptions {
    ignore_match_conditions: false,
    require_no_side_effects: true,
    require_recognized_review_version: true,
    require_unique_names: true,
    allow_invalid_label_values: false,
};

fn webhook_options(obj: &Value, old: Option<&Value>) -> WebhookOptions {
    let Some(old) = old else { return CREATE_OPTIONS };
    let (new_hooks, old_hooks) = (items(&obj["webhooks"]), items(&old["webhooks"]));
    let mut names = HashSet::new();
    WebhookOptions {
        ignore_match_conditions: new_hooks.len() == old_hooks.len()
            && new_hooks
                .iter()
                .zip(old_hooks)
                .all(|(n, o)| items(&n["matchConditions"]) == items(&o["matchConditions"])),
        require_no_side_effects: old_hooks
            .iter()
            .all(|h| h["sideEffects"].as_str().is_some_and(|s| NO_SIDE_EFFECTS.contains(&s))),
        require_recognized_review_version: old_hooks.iter().all(|h| {
            let versions = strings(&h["admissionReviewVersions"]);
            versions.is_empty() || versions.iter().any(|v| ACCEPTED_REVIEW_VERSIONS.contains(v))
        }),
        require_unique_names: old_hooks.iter().all(|h| names.insert(str_of(&h["name"]))),
        allow_invalid_label_values: old_hooks.iter().any(|h| {
            ["namespaceSelector", "objectSelector"]
                .iter()
                .any(|key| !h[*key].is_null() && !label_selector("", &h[*key]).is_empty())
        }),
    }
}

/// A MutatingWebhookConfiguration, on create (`old` is `None`) or update.
pub fn mutating_webhook_configuration(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    webhook_configuration(obj, webhook_options(obj, old), true)
}

/// A ValidatingWebhookConfiguration, on create (`old` is `None`) or update.
pub fn validating_webhook_configuration(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    webhook_configuration(obj, webhook_options(obj, old), false)
}

/// Each webhook, its AdmissionReview versions, then its name's uniqueness.
fn webhook_configuration(obj: &Value, opts: WebhookOptions, mutating: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut names = HashSet::new();
    for (i, hook) in items(&obj["webhooks"]).iter().enumerate() {
        let at = format!("webhooks[{i}]");
        webhook(hook, &at, opts, mutating, &mut errors);
        review_versions(
            &hook["admissionReviewVersions"],
            opts.require_recognized_review_version,
            &format!("{at}.admissionReviewVersions"),
            &mut errors,
        );
        let name = str_of(&hook["name"]);
        if opts.require_unique_names && !name.is_empty() && !names.insert(name) {
            errors.push(FieldError::duplicate(format!("{at}.name"), &text(name)));
        }
    }
    errors
}

/// One webhook: name, rules, policies, side effects, timeout, selectors, (for mutating
/// webhooks) reinvocation, client config, then match conditions.
fn webhook(
    hook: &Value,
    at: &str,
    opts: WebhookOptions,
    mutating: bool,
    errors: &mut Vec<FieldError>,
) {
    fully_qualified_name(&format!("{at}.name"), str_of(&hook["name"]), errors);
    for (i, rule) in items(&hook["rules"]).iter().enumerate() {
        rule_with_operations(rule, &format!("{at}.rules[{i}]"), errors);
    }
    enum_field(format!("{at}.failurePolicy"), &hook["failurePolicy"], &FAILURE_POLICIES, errors);
    enum_field(format!("{at}.matchPolicy"), &hook["matchPolicy"], &MATCH_POLICIES, errors);
    let side_effects: &[&str] =
        if opts.require_no_side_effects { &NO_SIDE_EFFECTS } else { &ALL_SIDE_EFFECTS };
    let field = format!("{at}.sideEffects");
    if hook["sideEffects"].is_null() {
        let detail = format!("must specify one of {}", side_effects.join(", "));
        errors.push(FieldError::required(field, &detail));
    } else {
        enum_field(field, &hook["sideEffects"], side_effects, errors);
    }
    let timeout = &hook["timeoutSeconds"];
    if !timeout.is_null() && !timeout.as_i64().is_some_and(|t| (1..=30).contains(&t)) {
        errors.push(FieldError::invalid(
            format!("{at}.timeoutSeconds"),
            timeout,
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for key in ["namespaceSelector", "objectSelector"] {
        if !hook[key].is_null() {
            let found = label_selector(&format!("{at}.{key}"), &hook[key]);
            errors.extend(found.into_iter().filter(|e| {
                // Only the expressions' values are relaxed, not matchLabels.
                !(opts.allow_invalid_label_values && e.field.contains("].values["))
            }));
        }
    }
    if mutating {
        enum_field(
            format!("{at}.reinvocationPolicy"),
            &hook["reinvocationPolicy"],
            &REINVOCATION_POLICIES,
            errors,
        );
    }
    client_config(&hook["clientConfig"], &format!("{at}.clientConfig"), errors);
    if !opts.ignore_match_conditions {
        let at = format!("{at}.matchConditions");
        match_conditions(&hook["matchConditions"], &at, &WEBHOOK_VARIABLES, errors);
    }
}

/// Upstream's `IsFullyQualifiedName`: a DNS subdomain of at least three labels, reporting
/// only the first problem found.
fn fully_qualified_name(at: &str, name: &str, errors: &mut Vec<FieldError>) {
    if name.is_empty() {
        errors.push(FieldError::required(at, ""));
        return;
    }
    let problems = name_problems(name, NameRule::Subdomain);
    if !problems.is_empty() {
        errors.push(FieldError::invalid(at, &text(name), &problems.join(",")));
    } else if name.split('.').count() < 3 {
        errors.push(FieldError::invalid(
            at,
            &text(name),
            "should be a domain with at least three segments separated by dots",
        ));
    }
}

/// `admissionReviewVersions`: required, no duplicates, each a DNS-1035 label, and (unless an
/// old webhook already had none) one this server understands.
fn review_versions(list: &Value, require_known: bool, at: &str, errors: &mut Vec<FieldError>) {
    let versions = strings(list);
    if versions.is_empty() {
        let detail = format!("must specify one of {}", ACCEPTED_REVIEW_VERSIONS.join(", "));
        errors.push(FieldError::required(at, &detail));
        return;
    }
    let mut seen = HashSet::new();
    let mut known = false;
    for (i, v) in versions.iter().enumerate() {
        let field = format!("{at}[{i}]");
        if !seen.insert(*v) {
            errors.push(FieldError::invalid(field, &text(v), "duplicate version"));
            continue;
        }
        for p in name_problems(v, NameRule::Dns1035Label) {
            errors.push(FieldError::invalid(&field, &text(v), &p));
        }
        known |= ACCEPTED_REVIEW_VERSIONS.contains(v);
    }
    if require_known && !known {
        errors.push(FieldError::invalid_shown(
            at,
            &go_string_slice(Some(&versions)),
            &format!("must include at least one of {}", ACCEPTED_REVIEW_VERSIONS.join(", ")),
        ));
    }
}

/// A rule with operations: the operations, then the rule itself.
fn rule_with_operations(rule: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let field = format!("{at}.operations");
    let operations = strings(&rule["operations"]);
    if operations.is_empty() {
        errors.push(FieldError::required(&field, ""));
    }
    if operations.len() > 1 && operations.contains(&"*") {
        errors.push(FieldError::invalid_shown(
            &field,
            &go_typed_slice("admissionregistration.OperationType", &operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in operations.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            errors.push(FieldError::unsupported(format!("{field}[{i}]"), &text(op), &OPERATIONS));
        }
    }
    resource_rule(rule, at, errors);
}

/// API groups and versions (required, `*` alone), resources, then the scope.
fn resource_rule(rule: &Value, at: &str, errors: &mut Vec<FieldError>) {
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let field = format!("{at}.{key}");
        let list = strings(&rule[key]);
        if list.is_empty() {
            errors.push(FieldError::required(&field, ""));
        }
        if list.len() > 1 && list.contains(&"*") {
            errors.push(FieldError::invalid_shown(
                &field,
                &go_string_slice(Some(&list)),
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
        if key == "apiVersions" {
            for (i, v) in list.iter().enumerate() {
                if v.is_empty() {
                    errors.push(FieldError::required(format!("{field}[{i}]"), ""));
                }
            }
        }
    }
    resources(&strings(&rule["resources"]), &format!("{at}.resources"), errors);
    enum_field(format!("{at}.scope"), &rule["scope"], &SCOPES, errors);
}

/// Resources and subresources: `*/*` alone, `*` only beside subresources, and no `a/x` beside
/// `a/*` nor `x/a` beside `*/a`.
fn resources(list: &[&str], at: &str, errors: &mut Vec<FieldError>) {
    if list.is_empty() {
        errors.push(FieldError::required(at, ""));
    }
    let mut wildcard_subresource_of: HashSet<&str> = HashSet::new();
    let mut subresource_of_wildcard: HashSet<&str> = HashSet::new();
    let (mut double_wildcard, mut single_wildcard) = (false, false);
    // As upstream: only the last plain resource decides (a trailing `*` clears it).
    let mut plain_resource = false;
    for (i, entry) in list.iter().enumerate() {
        let field = format!("{at}[{i}]");
        if entry.is_empty() {
            errors.push(FieldError::required(field, ""));
            continue;
        }
        double_wildcard |= *entry == "*/*";
        single_wildcard |= *entry == "*";
        let Some((res, sub)) = entry.split_once('/') else {
            plain_resource = *entry != "*";
            continue;
        };
        if wildcard_subresource_of.contains(res) {
            let detail = format!("if '{res}/*' is present, must not specify {entry}");
            errors.push(FieldError::invalid(&field, &text(entry), &detail));
        }
        if subresource_of_wildcard.contains(sub) {
            let detail = format!("if '*/{sub}' is present, must not specify {entry}");
            errors.push(FieldError::invalid(&field, &text(entry), &detail));
        }
        if sub == "*" {
            wildcard_subresource_of.insert(res);
        }
        if res == "*" {
            subresource_of_wildcard.insert(sub);
        }
    }
    if list.len() > 1 && double_wildcard {
        errors.push(FieldError::invalid_shown(
            at,
            &go_string_slice(Some(list)),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wildcard && plain_resource {
        errors.push(FieldError::invalid_shown(
            at,
            &go_string_slice(Some(list)),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

/// Exactly one of `url` and `service`, then that one's checks.
fn client_config(config: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let (url, service) = (&config["url"], &config["service"]);
    match (url.is_null(), service.is_null()) {
        (false, true) => errors.extend(webhook_url(&format!("{at}.url"), str_of(url))),
        (true, false) => {
            // Upstream passes the name where its check takes the namespace (module docs).
            let port = &service["port"];
            let port = if port.is_number() { port.clone() } else { Value::from(0) };
            errors.extend(webhook_service(
                &format!("{at}.service"),
                str_of(&service["name"]),
                str_of(&service["namespace"]),
                service["path"].as_str(),
                &port,
            ));
        }
        _ => errors.push(FieldError::required(at, "exactly one of url or service is required")),
    }
}

/// The variables of webhooks' match conditions (upstream's admission environment with an
/// authorizer and no params).
const WEBHOOK_VARIABLES: [&str; 5] =
    ["object", "oldObject", "namespaceObject", "request", "authorizer"];

/// An expression that must compile in a context of `variables` and give what `returns` says
/// (the installed [`rules::ExpressionChecker`]; none in this crate's own tests).
fn compiled(
    expression: &str,
    at: String,
    variables: &[&str],
    returns: Returns,
    errors: &mut Vec<FieldError>,
) {
    let checker = rules::expression_checker();
    if let Some(detail) = checker.and_then(|c| c.problem(expression, variables, returns)) {
        errors.push(FieldError::invalid(at, &text(expression), &detail));
    }
}

/// Match conditions: at most 64, each with an expression that compiles to a bool in a
/// context of `variables` and a qualified name, names unique.
fn match_conditions(list: &Value, at: &str, variables: &[&str], errors: &mut Vec<FieldError>) {
    let conditions = items(list);
    if conditions.len() > MAX_MATCH_CONDITIONS {
        errors.push(too_many(at.to_string(), conditions.len(), MAX_MATCH_CONDITIONS));
    }
    let mut names = HashSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let at = format!("{at}[{i}]");
        let expression = str_of(&condition["expression"]);
        if expression.trim().is_empty() {
            errors.push(FieldError::required(format!("{at}.expression"), ""));
        } else {
            compiled(expression, format!("{at}.expression"), variables, Returns::Bool, errors);
        }
        let name = str_of(&condition["name"]);
        let field = format!("{at}.name");
        if name.is_empty() {
            errors.push(FieldError::required(&field, ""));
        } else {
            for p in qualified_name_problems(name) {
                errors.push(FieldError::invalid(&field, &text(name), &p));
            }
            if !names.insert(name) {
                errors.push(FieldError::duplicate(&field, &text(name)));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// ValidatingAdmissionPolicy

/// A ValidatingAdmissionPolicy, on create (`old` is `None`) or update (where unchanged match
/// conditions and paramKind are not checked again).
pub fn validating_admission_policy(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let ignore_match_conditions = old.is_some_and(|old| {
        let old_spec = &old["spec"];
        spec["paramKind"] == old_spec["paramKind"]
            && items(&spec["matchConditions"]) == items(&old_spec["matchConditions"])
    });
    let mut errors = Vec::new();
    let failure_policy = &spec["failurePolicy"];
    // Upstream defaults the policy even without a spec; only a spec rkube could not default
    // is missing it.
    if failure_policy.is_null() {
        if spec.is_object() {
            errors.push(FieldError::required("spec.failurePolicy", ""));
        }
    } else {
        enum_field("spec.failurePolicy".into(), failure_policy, &FAILURE_POLICIES, &mut errors);
    }
    if !spec["paramKind"].is_null() {
        param_kind(&spec["paramKind"], "spec.paramKind", &mut errors);
    }
    let constraints = &spec["matchConstraints"];
    if constraints.is_null() {
        errors.push(FieldError::required("spec.matchConstraints", ""));
    } else {
        match_resources(constraints, "spec.matchConstraints", &mut errors);
        // The rules give the policy its types.
        if items(&constraints["resourceRules"]).is_empty() {
            errors.push(FieldError::required("spec.matchConstraints.resourceRules", ""));
        }
    }
    // Policies' expressions see `variables`, and `params` when the policy has a paramKind.
    let mut variables = WEBHOOK_VARIABLES.to_vec();
    variables.push("variables");
    if !spec["paramKind"].is_null() {
        variables.push("params");
    }
    if !ignore_match_conditions {
        match_conditions(&spec["matchConditions"], "spec.matchConditions", &variables, &mut errors);
    }
    for (i, v) in items(&spec["variables"]).iter().enumerate() {
        variable(v, &format!("spec.variables[{i}]"), &variables, &mut errors);
    }
    let (validations, audits) = (items(&spec["validations"]), items(&spec["auditAnnotations"]));
    if validations.is_empty() && audits.is_empty() {
        let detail = "validations or auditAnnotations must contain at least one item";
        errors.push(FieldError::required("spec.validations", detail));
        errors.push(FieldError::required("spec.auditAnnotations", detail));
        return errors;
    }
    for (i, v) in validations.iter().enumerate() {
        validation(v, &format!("spec.validations[{i}]"), &variables, &mut errors);
    }
    if audits.len() > MAX_AUDIT_ANNOTATIONS {
        errors.push(FieldError::invalid_shown(
            "spec.auditAnnotations",
            &go_audit_annotations(&spec["auditAnnotations"]),
            &format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
        ));
    }
    let policy_name = str_of(&obj["metadata"]["name"]);
    let mut keys = HashSet::new();
    for (i, a) in audits.iter().enumerate() {
        let at = format!("spec.auditAnnotations[{i}]");
        audit_annotation(policy_name, a, &at, &variables, &mut errors);
        let key = str_of(&a["key"]);
        if !keys.insert(key) {
            errors.push(FieldError::duplicate(format!("{at}.key"), &text(key)));
        }
    }
    errors
}

/// `[]admissionregistration.AuditAnnotation{...}` as `%#v` prints it.
fn go_audit_annotations(audits: &Value) -> String {
    go_slice("admissionregistration.AuditAnnotation", audits, |a| {
        format!(
            "admissionregistration.AuditAnnotation{{Key:{}, ValueExpression:{}}}",
            go_quote(str_of(&a["key"])),
            go_quote(str_of(&a["valueExpression"]))
        )
    })
}

/// `paramKind`: an apiVersion (`[group/]version`, a DNS subdomain and a DNS-1035 label) and a
/// kind (a DNS-1035 label once lower-cased).
fn param_kind(kind: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let field = format!("{at}.apiVersion");
    let api_version = str_of(&kind["apiVersion"]);
    if api_version.is_empty() {
        errors.push(FieldError::required(&field, ""));
    } else {
        match parse_group_version(api_version) {
            Err(e) => errors.push(FieldError::invalid(&field, &text(api_version), &e)),
            Ok((group, version)) => {
                let problems = name_problems(group, NameRule::Subdomain);
                if !group.is_empty() && !problems.is_empty() {
                    errors.push(FieldError::invalid(&field, &text(group), &problems.join(",")));
                }
                if version.is_empty() {
                    let detail = "version must be specified";
                    errors.push(FieldError::invalid(&field, &text(api_version), detail));
                } else {
                    let problems = name_problems(version, NameRule::Dns1035Label);
                    if !problems.is_empty() {
                        let detail = problems.join(",");
                        errors.push(FieldError::invalid(&field, &text(version), &detail));
                    }
                }
            }
        }
    }
    let field = format!("{at}.kind");
    let kind = str_of(&kind["kind"]);
    if kind.is_empty() {
        errors.push(FieldError::required(field, ""));
    } else {
        let problems = name_problems(&kind.to_lowercase(), NameRule::Dns1035Label);
        if !problems.is_empty() {
            let detail =
                format!("may have mixed case, but should otherwise match: {}", problems.join(","));
            errors.push(FieldError::invalid(field, &text(kind), &detail));
        }
    }
}

/// `group/version`, a bare version, or nothing (`""`, `/`); more slashes are an error.
fn parse_group_version(gv: &str) -> Result<(&str, &str), String> {
    if gv.is_empty() || gv == "/" {
        return Ok(("", ""));
    }
    match gv.matches('/').count() {
        0 => Ok(("", gv)),
        1 => Ok(gv.split_once('/').unwrap_or(("", gv))),
        _ => Err(format!("unexpected GroupVersion string: {gv}")),
    }
}

/// A policy's `matchConstraints` or a binding's `matchResources`: the match policy and both
/// selectors are required (and defaulted), then every rule and exclusion.
fn match_resources(m: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let field = format!("{at}.matchPolicy");
    if m["matchPolicy"].is_null() {
        errors.push(FieldError::required(field, ""));
    } else {
        enum_field(field, &m["matchPolicy"], &MATCH_POLICIES, errors);
    }
    for key in ["namespaceSelector", "objectSelector"] {
        let field = format!("{at}.{key}");
        if m[key].is_null() {
            errors.push(FieldError::required(field, ""));
        } else {
            errors.extend(label_selector(&field, &m[key]));
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in items(&m[key]).iter().enumerate() {
            named_rule(rule, &format!("{at}.{key}[{i}]"), errors);
        }
    }
}

/// A rule that may name resources: each name a path segment, no duplicates, then the rule.
fn named_rule(rule: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let mut names = HashSet::new();
    for (i, name) in strings(&rule["resourceNames"]).into_iter().enumerate() {
        let field = format!("{at}.resourceNames[{i}]");
        for p in name_problems(name, NameRule::PathSegment) {
            errors.push(FieldError::invalid(&field, &text(name), &p));
        }
        if !names.insert(name) {
            errors.push(FieldError::duplicate(&field, &text(name)));
        }
    }
    rule_with_operations(rule, at, errors);
}

/// A variable: a CEL identifier and an expression (not compiled).
fn variable(v: &Value, at: &str, variables: &[&str], errors: &mut Vec<FieldError>) {
    let name = str_of(&v["name"]);
    if name.trim().is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), "name is not specified"));
    } else if !is_cel_identifier(name) {
        errors.push(FieldError::invalid(
            format!("{at}.name"),
            &text(name),
            "name is not a valid CEL identifier",
        ));
    }
    let expression = str_of(&v["expression"]);
    if expression.trim().is_empty() {
        errors
            .push(FieldError::required(format!("{at}.expression"), "expression is not specified"));
    } else {
        compiled(expression, format!("{at}.expression"), variables, Returns::Any, errors);
    }
}

/// `[_a-zA-Z][_a-zA-Z0-9]*`, and not one of CEL's reserved words.
fn is_cel_identifier(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && (b[0] == b'_' || b[0].is_ascii_alphabetic())
        && b.iter().all(|c| *c == b'_' || c.is_ascii_alphanumeric())
        && !rules::CEL_RESERVED_WORDS.contains(&name)
}

/// A validation: an expression that compiles to a bool, a message expression (compiling to a
/// string) and a message that are not blank when set (the message on one line), and a known
/// reason.
fn validation(v: &Value, at: &str, variables: &[&str], errors: &mut Vec<FieldError>) {
    let expression = str_of(&v["expression"]);
    if expression.trim().is_empty() {
        errors
            .push(FieldError::required(format!("{at}.expression"), "expression is not specified"));
    } else {
        compiled(expression, format!("{at}.expression"), variables, Returns::Bool, errors);
    }
    let message_expression = str_of(&v["messageExpression"]);
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        errors.push(FieldError::invalid(
            format!("{at}.messageExpression"),
            &text(message_expression),
            "must be non-empty if specified",
        ));
    } else if !message_expression.is_empty() {
        let field = format!("{at}.messageExpression");
        compiled(message_expression, field, variables, Returns::String, errors);
    }
    let message = str_of(&v["message"]);
    let trimmed = message.trim();
    if !message.is_empty() && trimmed.is_empty() {
        errors.push(FieldError::invalid(
            format!("{at}.message"),
            &text(message),
            "message must be non-empty if specified",
        ));
    } else if trimmed.contains(['\n', '\r']) {
        errors.push(FieldError::invalid(
            format!("{at}.message"),
            &text(message),
            "message must not contain line breaks",
        ));
    }
    enum_field(format!("{at}.reason"), &v["reason"], &VALIDATION_REASONS, errors);
}

/// An audit annotation: `<policy name>/<key>` a qualified name, and a value expression that is
/// set, at most 5 KiB, and compiles to a string or null.
fn audit_annotation(
    policy: &str,
    a: &Value,
    at: &str,
    variables: &[&str],
    errors: &mut Vec<FieldError>,
) {
    let field = format!("{at}.key");
    let key = str_of(&a["key"]);
    if policy.is_empty() {
        errors.push(FieldError::invalid(field, &text(key), "requires metadata.name be non-empty"));
    } else {
        let full = format!("{policy}/{key}");
        for p in qualified_name_problems(&full) {
            errors.push(FieldError::invalid(&field, &text(&full), &p));
        }
    }
    let field = format!("{at}.valueExpression");
    let value = str_of(&a["valueExpression"]).trim();
    if value.is_empty() {
        errors.push(FieldError::required(field, "valueExpression is not specified"));
    } else if value.len() > MAX_AUDIT_VALUE_EXPRESSION {
        let detail = format!("must not exceed {MAX_AUDIT_VALUE_EXPRESSION} bytes in length");
        errors.push(FieldError::required(field, &detail));
    } else {
        compiled(str_of(&a["valueExpression"]), field, variables, Returns::StringOrNull, errors);
    }
}

// ---------------------------------------------------------------------------------------
// ValidatingAdmissionPolicyBinding

/// A ValidatingAdmissionPolicyBinding; an update is checked as a create.
pub fn validating_admission_policy_binding(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let mut errors = Vec::new();
    let policy = str_of(&spec["policyName"]);
    if policy.is_empty() {
        errors.push(FieldError::required("spec.policyName", ""));
    } else {
        for p in name_problems(policy, NameRule::Subdomain) {
            errors.push(FieldError::invalid("spec.policyName", &text(policy), &p));
        }
    }
    if !spec["paramRef"].is_null() {
        param_ref(&spec["paramRef"], "spec.paramRef", &mut errors);
    }
    if !spec["matchResources"].is_null() {
        // Upstream's spelling, which kubectl shows.
        match_resources(&spec["matchResources"], "spec.matchResouces", &mut errors);
    }
    validation_actions(&spec["validationActions"], "spec.validationActions", &mut errors);
    errors
}

/// `paramRef`: a name (a path segment) or a selector, not both; the not-found action required.
fn param_ref(r: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let name = str_of(&r["name"]);
    let selector = &r["selector"];
    if !name.is_empty() {
        for p in name_problems(name, NameRule::PathSegment) {
            errors.push(FieldError::invalid(format!("{at}.name"), &text(name), &p));
        }
        if !selector.is_null() {
            errors.push(FieldError::forbidden(format!("{at}.name"), NAME_AND_SELECTOR));
        }
    }
    if !selector.is_null() {
        errors.extend(label_selector(&format!("{at}.selector"), selector));
        if !name.is_empty() {
            errors.push(FieldError::forbidden(format!("{at}.selector"), NAME_AND_SELECTOR));
        }
    }
    if name.is_empty() && selector.is_null() {
        errors.push(FieldError::required(at, "one of name or selector must be specified"));
    }
    let field = format!("{at}.parameterNotFoundAction");
    let action = &r["parameterNotFoundAction"];
    if action.is_null() || action == "" {
        errors.push(FieldError::required(field, ""));
    } else {
        enum_field(field, action, &PARAMETER_NOT_FOUND_ACTIONS, errors);
    }
}

/// `validationActions`: known, unique, not both Deny and Warn, and at least one.
fn validation_actions(list: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let actions = strings(list);
    let mut seen = HashSet::new();
    for (i, action) in actions.iter().enumerate() {
        let field = format!("{at}[{i}]");
        if !VALIDATION_ACTIONS.contains(action) {
            errors.push(FieldError::unsupported(&field, &text(action), &VALIDATION_ACTIONS));
        }
        if !seen.insert(*action) {
            errors.push(FieldError::duplicate(&field, &text(action)));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        errors.push(FieldError::invalid_shown(
            at,
            &go_typed_slice("admissionregistration.ValidationAction", &actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        errors.push(FieldError::required(at, "at least one validation action is required"));
    }
}

// ---------------------------------------------------------------------------------------
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    /// A webhook as it arrives after defaulting, with `extra` merged in.
    fn hook(extra: Value) -> Value {
        let mut hook = json!({
            "name": "hook.example.com",
            "clientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 443}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["pods"], "scope": "*"}],
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "namespaceSelector": {},
            "objectSelector": {},
            "sideEffects": "None",
            "timeoutSeconds": 10,
            "admissionReviewVersions": ["v1"],
            "reinvocationPolicy": "Never"
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            hook[k] = v.clone();
        }
        hook
    }

    fn config(hooks: Vec<Value>) -> Value {
        json!({"metadata": {"name": "c"}, "webhooks": hooks})
    }

    fn validating(obj: &Value) -> Vec<String> {
        lines(validating_webhook_configuration(obj, None))
    }

    #[test]
    fn a_valid_configuration_passes() {
        assert!(validating(&config(vec![hook(json!({}))])).is_empty());
        assert!(
            lines(mutating_webhook_configuration(&config(vec![hook(json!({}))]), None)).is_empty()
        );
        let url = hook(json!({"clientConfig": {"url": "https://example.com:8443/hook"}}));
        assert!(validating(&config(vec![url])).is_empty());
        assert!(validating(&json!({"metadata": {"name": "c"}})).is_empty());
    }

    #[test]
    fn webhook_names_are_qualified_and_unique() {
        let obj = config(vec![
            hook(json!({"name": "k8s.io"})),
            hook(json!({"name": ""})),
            hook(json!({"name": "Bad_Name.x.y"})),
            hook(json!({"name": "a.b.c"})),
            hook(json!({"name": "a.b.c"})),
        ]);
        assert_eq!(
            validating(&obj),
            [
                "webhooks[0].name: Invalid value: \"k8s.io\": should be a domain with at least three segments separated by dots",
                "webhooks[1].name: Required value",
                "webhooks[2].name: Invalid value: \"Bad_Name.x.y\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "webhooks[4].name: Duplicate value: \"a.b.c\"",
            ]
        );
    }

    #[test]
    fn rules_read_like_upstream() {
        let rule = |r: Value| config(vec![hook(json!({"rules": [r]}))]);
        assert_eq!(
            validating(&rule(json!({"operations": ["CREATE", "*", "PATCH"],
                "apiGroups": ["*", "apps"], "apiVersions": ["v1", ""],
                "resources": ["*/*", "a"], "scope": "Everywhere"}))),
            [
                "webhooks[0].rules[0].operations: Invalid value: []admissionregistration.OperationType{\"CREATE\", \"*\", \"PATCH\"}: if '*' is present, must not specify other operations",
                "webhooks[0].rules[0].operations[2]: Unsupported value: \"PATCH\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
                "webhooks[0].rules[0].apiGroups: Invalid value: []string{\"*\", \"apps\"}: if '*' is present, must not specify other API groups",
                "webhooks[0].rules[0].apiVersions[1]: Required value",
                "webhooks[0].rules[0].resources: Invalid value: []string{\"*/*\", \"a\"}: if '*/*' is present, must not specify other resources",
                "webhooks[0].rules[0].scope: Unsupported value: \"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
            ]
        );
        assert_eq!(
            validating(&rule(json!({"scope": "*"}))),
            [
                "webhooks[0].rules[0].operations: Required value",
                "webhooks[0].rules[0].apiGroups: Required value",
                "webhooks[0].rules[0].apiVersions: Required value",
                "webhooks[0].rules[0].resources: Required value",
            ]
        );
        let resources = |list: Value| {
            validating(&rule(json!({"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": list})))
        };
        assert_eq!(
            resources(json!(["a/*", "a/x", "*/b", "y/b", ""])),
            [
                "webhooks[0].rules[0].resources[1]: Invalid value: \"a/x\": if 'a/*' is present, must not specify a/x",
                "webhooks[0].rules[0].resources[3]: Invalid value: \"y/b\": if '*/b' is present, must not specify y/b",
                "webhooks[0].rules[0].resources[4]: Required value",
            ]
        );
        assert_eq!(
            resources(json!(["*", "a"])),
            ["webhooks[0].rules[0].resources: Invalid value: []string{\"*\", \"a\"}: if '*' is present, must not specify other resources without subresources"]
        );
        // Upstream only remembers the last plain resource.
        assert!(resources(json!(["a", "*"])).is_empty());
        assert!(resources(json!(["*", "a/b", "a/*", "*/b"])).is_empty());
    }

    #[test]
    fn policies_side_effects_timeouts_and_review_versions() {
        let obj = config(vec![hook(json!({
            "failurePolicy": "Maybe", "matchPolicy": "Loose", "sideEffects": "Some",
            "timeoutSeconds": 31, "admissionReviewVersions": ["v2", "v2", "0v"],
            "reinvocationPolicy": "Always"
        }))]);
        let expected = [
            "webhooks[0].failurePolicy: Unsupported value: \"Maybe\": supported values: \"Fail\", \"Ignore\"",
            "webhooks[0].matchPolicy: Unsupported value: \"Loose\": supported values: \"Equivalent\", \"Exact\"",
            "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        ];
        let versions = [
            "webhooks[0].admissionReviewVersions[1]: Invalid value: \"v2\": duplicate version",
            "webhooks[0].admissionReviewVersions[2]: Invalid value: \"0v\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            "webhooks[0].admissionReviewVersions: Invalid value: []string{\"v2\", \"v2\", \"0v\"}: must include at least one of v1, v1beta1",
        ];
        let mut all: Vec<&str> = expected.to_vec();
        all.extend(versions);
        assert_eq!(validating(&obj), all);
        let mut mutating = expected.to_vec();
        mutating.push("webhooks[0].reinvocationPolicy: Unsupported value: \"Always\": supported values: \"IfNeeded\", \"Never\"");
        mutating.extend(versions);
        assert_eq!(lines(mutating_webhook_configuration(&obj, None)), mutating);

        let bare = config(vec![json!({"name": "a.b.c",
            "clientConfig": {"url": "https://x.example.com"}})]);
        assert_eq!(
            validating(&bare),
            [
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
            ]
        );
    }

    #[test]
    fn client_config_url_and_service() {
        let with = |cc: Value| validating(&config(vec![hook(json!({"clientConfig": cc}))]));
        assert_eq!(
            with(json!({})),
            ["webhooks[0].clientConfig: Required value: exactly one of url or service is required"]
        );
        assert_eq!(
            with(
                json!({"url": "https://a.example.com", "service": {"name": "s", "namespace": "n", "port": 443}})
            ),
            ["webhooks[0].clientConfig: Required value: exactly one of url or service is required"]
        );
        assert_eq!(
            with(json!({"url": ""})),
            [
                "webhooks[0].clientConfig.url: Invalid value: \"\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "webhooks[0].clientConfig.url: Invalid value: \"\": host must be specified; desired format: https://host[/path]",
            ]
        );
        assert_eq!(
            with(json!({"url": "http://harry.potter:pw@example.com/?arg=value#bookmark"})),
            [
                "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "webhooks[0].clientConfig.url: Invalid value: \"harry.potter:pw\": user information is not permitted in the URL",
                "webhooks[0].clientConfig.url: Invalid value: \"bookmark\": fragments are not permitted in the URL",
                "webhooks[0].clientConfig.url: Invalid value: \"arg=value\": query parameters are not permitted in the URL",
            ]
        );
        assert_eq!(
            with(json!({"url": "https:///fancy/webhook"})),
            ["webhooks[0].clientConfig.url: Invalid value: \"\": host must be specified; desired format: https://host[/path]"]
        );
        assert_eq!(
            with(json!({"url": "arg#backwards=thisis?html.index/port:host//:https"})),
            [
                "webhooks[0].clientConfig.url: Invalid value: \"\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "webhooks[0].clientConfig.url: Invalid value: \"\": host must be specified; desired format: https://host[/path]",
                "webhooks[0].clientConfig.url: Invalid value: \"backwards=thisis?html.index/port:host//:https\": fragments are not permitted in the URL",
            ]
        );
        assert_eq!(
            with(json!({"url": "::"})),
            ["webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse \"::\": missing protocol scheme; desired format: https://host[/path]"]
        );
        assert_eq!(
            with(json!({"url": "https://example.com:port/"})),
            ["webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse \"https://example.com:port/\": invalid port \":port\" after host; desired format: https://host[/path]"]
        );
        assert_eq!(
            with(json!({"url": "https://exa mple.com/%zz"})),
            ["webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse \"https://exa mple.com/%zz\": invalid character \" \" in host name; desired format: https://host[/path]"]
        );
        assert_eq!(
            with(json!({"url": "https://example.com/%zz"})),
            ["webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse \"https://example.com/%zz\": invalid URL escape \"%zz\"; desired format: https://host[/path]"]
        );

        // Upstream swaps name and namespace when it reports them.
        assert_eq!(
            with(json!({"service": {"name": "svc", "port": 0, "path": "foo//bar/"}})),
            [
                "webhooks[0].clientConfig.service.name: Required value: service name is required",
                "webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
                "webhooks[0].clientConfig.service.path: Invalid value: \"foo//bar/\": must start with a '/'",
                "webhooks[0].clientConfig.service.path: Invalid value: \"foo//bar/\": segment[1] may not be empty",
            ]
        );
        assert_eq!(
            with(json!({"service": {"namespace": "ns", "port": 443, "path": "/apis/--bad"}})),
            [
                "webhooks[0].clientConfig.service.namespace: Required value: service namespace is required",
                "webhooks[0].clientConfig.service.path: Invalid value: \"/apis/--bad\": segment[1]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ]
        );
        let path = |p: &str| {
            with(json!({"service": {"namespace": "ns", "name": "s", "port": 443, "path": p}}))
        };
        assert_eq!(
            path("//"),
            ["webhooks[0].clientConfig.service.path: Invalid value: \"//\": segment[0] may not be empty"]
        );
        assert!(path("/").is_empty() && path("").is_empty() && path("/foo/").is_empty());
    }

    #[test]
    fn selectors_and_match_conditions() {
        let mut conditions: Vec<Value> = vec![
            json!({"name": "", "expression": " "}),
            json!({"name": "-hello", "expression": "true"}),
            json!({"name": "ok", "expression": "true"}),
            json!({"name": "ok", "expression": "true"}),
        ];
        let obj = config(vec![hook(json!({
            "namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "In", "values": ["-x"]}]},
            "objectSelector": {"matchLabels": {"a": "-b"}},
            "matchConditions": conditions.clone(),
        }))]);
        let selector_errors = [
            "webhooks[0].namespaceSelector.matchExpressions[0].values[0]: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            "webhooks[0].objectSelector.matchLabels: Invalid value: \"-b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ];
        let condition_errors = [
            "webhooks[0].matchConditions[0].expression: Required value",
            "webhooks[0].matchConditions[0].name: Required value",
            "webhooks[0].matchConditions[1].name: Invalid value: \"-hello\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "webhooks[0].matchConditions[3].name: Duplicate value: \"ok\"",
        ];
        let mut expected = selector_errors.to_vec();
        expected.extend(condition_errors);
        assert_eq!(validating(&obj), expected);

        // An update keeps unchanged conditions and the selector values the old object had.
        assert_eq!(lines(validating_webhook_configuration(&obj, Some(&obj))), [selector_errors[1]]);

        conditions =
            (0..65).map(|i| json!({"name": format!("c{i}"), "expression": "true"})).collect();
        let obj = config(vec![hook(json!({"matchConditions": conditions}))]);
        assert_eq!(
            validating(&obj),
            ["webhooks[0].matchConditions: Too many: 65: must have at most 64 items"]
        );
    }

    #[test]
    fn updates_keep_what_the_old_object_allowed() {
        let old = config(vec![
            hook(json!({"sideEffects": "Unknown", "admissionReviewVersions": ["v0"]})),
            hook(json!({})),
        ]);
        let new = config(vec![
            hook(json!({"sideEffects": "Some", "admissionReviewVersions": ["v0"]})),
            hook(json!({})),
        ]);
        assert!(lines(validating_webhook_configuration(&new, Some(&old))).is_empty());
        assert_eq!(
            validating(&new),
            [
                "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
                "webhooks[0].admissionReviewVersions: Invalid value: []string{\"v0\"}: must include at least one of v1, v1beta1",
                "webhooks[1].name: Duplicate value: \"hook.example.com\"",
            ]
        );
        let strict_old = config(vec![hook(json!({"name": "a.b.c"})), hook(json!({}))]);
        let mut new = new.clone();
        new["webhooks"][0]["sideEffects"] = json!(null);
        assert_eq!(
            lines(validating_webhook_configuration(&new, Some(&strict_old))),
            [
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[0].admissionReviewVersions: Invalid value: []string{\"v0\"}: must include at least one of v1, v1beta1",
                "webhooks[1].name: Duplicate value: \"hook.example.com\"",
            ]
        );
        new["webhooks"][0]["sideEffects"] = json!("Bad");
        assert_eq!(
            lines(validating_webhook_configuration(&new, Some(&old)))[0],
            "webhooks[0].sideEffects: Unsupported value: \"Bad\": supported values: \"None\", \"NoneOnDryRun\", \"Some\", \"Unknown\""
        );
    }

    /// A policy as it arrives after defaulting, with `extra` merged into the spec.
    fn policy(extra: Value) -> Value {
        let mut obj = json!({"metadata": {"name": "policy.example.com"}, "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"],
                    "apiVersions": ["v1"], "resources": ["deployments"], "scope": "*"}],
                "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}
            },
            "validations": [{"expression": "object.spec.replicas <= 5"}]
        }});
        for (k, v) in extra.as_object().into_iter().flatten() {
            obj["spec"][k] = v.clone();
        }
        obj
    }

    fn policy_lines(obj: &Value) -> Vec<String> {
        lines(validating_admission_policy(obj, None))
    }

    #[test]
    fn policies_need_constraints_and_validations() {
        assert!(policy_lines(&policy(json!({}))).is_empty());
        assert_eq!(
            policy_lines(&json!({"metadata": {"name": "p"}})),
            [
                "spec.matchConstraints: Required value",
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
            ]
        );
        assert_eq!(
            policy_lines(&policy(json!({"failurePolicy": "Never", "validations": [],
                "matchConstraints": {"resourceRules": [], "excludeResourceRules": [
                    {"resourceNames": ["a/b", "x", "x"], "operations": ["DELETE"],
                     "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/status"]}
                ]}}))),
            [
                "spec.failurePolicy: Unsupported value: \"Never\": supported values: \"Fail\", \"Ignore\"",
                "spec.matchConstraints.matchPolicy: Required value",
                "spec.matchConstraints.namespaceSelector: Required value",
                "spec.matchConstraints.objectSelector: Required value",
                "spec.matchConstraints.excludeResourceRules[0].resourceNames[0]: Invalid value: \"a/b\": may not contain '/'",
                "spec.matchConstraints.excludeResourceRules[0].resourceNames[2]: Duplicate value: \"x\"",
                "spec.matchConstraints.resourceRules: Required value",
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
            ]
        );
    }

    #[test]
    fn param_kinds() {
        let kind = |pk: Value| policy_lines(&policy(json!({"paramKind": pk})));
        assert!(kind(json!({"apiVersion": "example.com/v1", "kind": "ReplicaLimit"})).is_empty());
        assert_eq!(
            kind(json!({})),
            ["spec.paramKind.apiVersion: Required value", "spec.paramKind.kind: Required value"]
        );
        assert_eq!(
            kind(json!({"apiVersion": "a/b/c", "kind": "Bad_Kind"})),
            [
                "spec.paramKind.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
                "spec.paramKind.kind: Invalid value: \"Bad_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ]
        );
        assert_eq!(
            kind(json!({"apiVersion": "Example.com/", "kind": "K"})),
            [
                "spec.paramKind.apiVersion: Invalid value: \"Example.com\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec.paramKind.apiVersion: Invalid value: \"Example.com/\": version must be specified",
            ]
        );
        assert_eq!(
            kind(json!({"apiVersion": "1v", "kind": "K"})),
            ["spec.paramKind.apiVersion: Invalid value: \"1v\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]
        );
    }

    #[test]
    fn validations_variables_and_audit_annotations() {
        let obj = policy(json!({
            "matchConditions": [{"name": "m", "expression": ""}],
            "variables": [{"name": "in", "expression": "1"}, {"name": " ", "expression": " "}],
            "validations": [
                {"expression": " ", "messageExpression": "  ", "message": " ", "reason": "Teapot"},
                {"expression": "true", "message": "two\nlines"}
            ],
            "auditAnnotations": [
                {"key": "ok", "valueExpression": "'x'"},
                {"key": "bad key", "valueExpression": " "},
                {"key": "ok", "valueExpression": "'x'"}
            ]
        }));
        assert_eq!(
            policy_lines(&obj),
            [
                "spec.matchConditions[0].expression: Required value",
                "spec.variables[0].name: Invalid value: \"in\": name is not a valid CEL identifier",
                "spec.variables[1].name: Required value: name is not specified",
                "spec.variables[1].expression: Required value: expression is not specified",
                "spec.validations[0].expression: Required value: expression is not specified",
                "spec.validations[0].messageExpression: Invalid value: \"  \": must be non-empty if specified",
                "spec.validations[0].message: Invalid value: \" \": message must be non-empty if specified",
                "spec.validations[0].reason: Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\"",
                "spec.validations[1].message: Invalid value: \"two\\nlines\": message must not contain line breaks",
                "spec.auditAnnotations[1].key: Invalid value: \"policy.example.com/bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "spec.auditAnnotations[1].valueExpression: Required value: valueExpression is not specified",
                "spec.auditAnnotations[2].key: Duplicate value: \"ok\"",
            ]
        );
        // Unchanged match conditions are not checked again on update.
        assert_eq!(
            lines(validating_admission_policy(&obj, Some(&obj)))[0],
            "spec.variables[0].name: Invalid value: \"in\": name is not a valid CEL identifier"
        );

        let many: Vec<Value> =
            (0..21).map(|i| json!({"key": format!("k{i}"), "valueExpression": "'v'"})).collect();
        let errors = policy_lines(&policy(json!({"auditAnnotations": many})));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("spec.auditAnnotations: Invalid value: []admissionregistration.AuditAnnotation{admissionregistration.AuditAnnotation{Key:\"k0\", ValueExpression:\"'v'\"}, "));
        assert!(errors[0].ends_with("}: must not have more than 20 auditAnnotations"));
        let long = json!([{"key": "k", "valueExpression": "x".repeat(5121)}]);
        assert_eq!(
            policy_lines(&policy(json!({"auditAnnotations": long}))),
            ["spec.auditAnnotations[0].valueExpression: Required value: must not exceed 5120 bytes in length"]
        );
        let mut unnamed =
            policy(json!({"auditAnnotations": [{"key": "k", "valueExpression": "'v'"}]}));
        unnamed["metadata"]["name"] = json!("");
        assert_eq!(
            policy_lines(&unnamed),
            ["spec.auditAnnotations[0].key: Invalid value: \"k\": requires metadata.name be non-empty"]
        );
    }

    fn binding_lines(spec: Value) -> Vec<String> {
        lines(validating_admission_policy_binding(
            &json!({"metadata": {"name": "b"}, "spec": spec}),
            None,
        ))
    }

    #[test]
    fn bindings() {
        assert!(binding_lines(json!({"policyName": "p", "validationActions": ["Deny", "Audit"],
            "paramRef": {"name": "params", "parameterNotFoundAction": "Allow"}}))
        .is_empty());
        assert_eq!(
            binding_lines(json!({})),
            [
                "spec.policyName: Required value",
                "spec.validationActions: Required value: at least one validation action is required",
            ]
        );
        assert_eq!(
            binding_lines(json!({"policyName": "Bad", "validationActions": ["Deny", "Warn", "Deny", "Log"],
                "paramRef": {"name": "a/b", "selector": {"matchLabels": {"a": "-"}}, "parameterNotFoundAction": "Ignore"},
                "matchResources": {"matchPolicy": "Exact", "namespaceSelector": {}, "objectSelector": {},
                    "resourceRules": [{"operations": ["CREATE"], "apiGroups": ["a"], "apiVersions": ["a"], "resources": ["a/*", "a/x"], "scope": "*"}]}})),
            [
                "spec.policyName: Invalid value: \"Bad\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec.paramRef.name: Invalid value: \"a/b\": may not contain '/'",
                "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
                "spec.paramRef.selector.matchLabels: Invalid value: \"-\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
                "spec.paramRef.parameterNotFoundAction: Unsupported value: \"Ignore\": supported values: \"Deny\", \"Allow\"",
                "spec.matchResouces.resourceRules[0].resources[1]: Invalid value: \"a/x\": if 'a/*' is present, must not specify a/x",
                "spec.validationActions[2]: Duplicate value: \"Deny\"",
                "spec.validationActions[3]: Unsupported value: \"Log\": supported values: \"Audit\", \"Deny\", \"Warn\"",
                "spec.validationActions: Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\", \"Deny\", \"Log\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ]
        );
        assert_eq!(
            binding_lines(
                json!({"policyName": "p", "validationActions": ["Audit"], "paramRef": {}})
            ),
            [
                "spec.paramRef: Required value: one of name or selector must be specified",
                "spec.paramRef.parameterNotFoundAction: Required value",
            ]
        );
    }
}
