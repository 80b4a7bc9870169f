//! Validation of API priority and fairness (flowcontrol.apiserver.k8s.io/v1): FlowSchemas
//! and PriorityLevelConfigurations, with upstream's (v1.33) messages and field paths
//! (`ValidateFlowSchema[Update]` and `ValidatePriorityLevelConfiguration[Update]`).
//!
//! Metadata is checked by the caller; these look at the spec and the status. The two
//! mandatory FlowSchemas and PriorityLevelConfigurations (`exempt` and `catch-all`) must keep
//! the spec the API server bootstraps them with; the bad value is the spec as Go's `%#v`
//! prints it (pointer addresses are stand-ins, as in `crate::gofmt`).

use serde_json::{json, Value};

use super::values::{items, str_of, text};
use super::{name_problems, FieldError, NameRule};
use crate::gofmt::{go_pointer, go_quote, go_string_slice};

/// A `[]string` as `%#v` prints it, from a JSON list (`(nil)` when absent).
fn go_strings(v: &Value) -> String {
    let list: Option<Vec<&str>> = v.as_array().map(|a| a.iter().map(str_of).collect());
    go_string_slice(list.as_deref())
}

/// A JSON integer as Go holds it in an `int32` field (0 when unset).
fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

/// Whether a pointer or slice field is set (not absent, not null).
fn is_set(v: &Value) -> bool {
    !v.is_null()
}

// ---------------------------------------------------------------------------------------
// FlowSchema

const FLOW_SCHEMA_MAX_MATCHING_PRECEDENCE: i64 = 10000;
const EXEMPT: &str = "exempt";
const CATCH_ALL: &str = "catch-all";
/// `supportedDistinguisherMethods.List()`.
const DISTINGUISHER_METHODS: [&str; 2] = ["ByNamespace", "ByUser"];
/// `supportedVerbs.List()`.
const VERBS: [&str; 9] =
    ["create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"];
/// `supportedSubjectKinds.List()`.
const SUBJECT_KINDS: [&str; 3] = ["Group", "ServiceAccount", "User"];
const NS_ERR_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";

/// A FlowSchema, on create or update (upstream validates an update as a create).
pub fn flow_schema(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let name = str_of(&obj["metadata"]["name"]);
    let spec = &obj["spec"];
    let mut errors = flow_schema_spec(name, spec);
    if let Some(fixed) = mandatory_flow_schema(name) {
        if canonical_fs_spec(spec) != canonical_fs_spec(&fixed) {
            errors.push(FieldError::invalid_shown(
                "spec",
                &go_fs_spec(spec),
                &format!("spec of '{name}' must equal the fixed value"),
            ));
        }
    }
    status_conditions(obj, &mut errors);
    errors
}

fn flow_schema_spec(name: &str, spec: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let precedence = int(&spec["matchingPrecedence"]);
    let at = "spec.matchingPrecedence";
    if precedence <= 0 {
        errors.push(FieldError::invalid(at, &json!(precedence), "must be a positive value"));
    }
    if precedence > FLOW_SCHEMA_MAX_MATCHING_PRECEDENCE {
        errors.push(FieldError::invalid(
            at,
            &json!(precedence),
            &format!("must not be greater than {FLOW_SCHEMA_MAX_MATCHING_PRECEDENCE}"),
        ));
    }
    if precedence == 1 && name != EXEMPT {
        errors.push(FieldError::invalid(
            at,
            &json!(precedence),
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    let method = &spec["distinguisherMethod"];
    if is_set(method) && !DISTINGUISHER_METHODS.contains(&str_of(&method["type"])) {
        let shown = format!(
            "flowcontrol.FlowDistinguisherMethod{{Type:{}}}",
            go_quote(str_of(&method["type"]))
        );
        errors.push(FieldError::unsupported_shown(
            "spec.distinguisherMethod.type",
            &shown,
            &DISTINGUISHER_METHODS,
        ));
    }
    let level = str_of(&spec["priorityLevelConfiguration"]["name"]);
    let at = "spec.priorityLevelConfiguration.name";
    if level.is_empty() {
        errors.push(FieldError::required(at, "must reference a priority level"));
    } else {
        for p in name_problems(level, NameRule::Subdomain) {
            errors.push(FieldError::invalid(at, &text(level), &p));
        }
    }
    for (i, rule) in items(&spec["rules"]).iter().enumerate() {
        policy_rules(rule, &format!("spec.rules[{i}]"), &mut errors);
    }
    errors
}

fn policy_rules(rule: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let subjects = items(&rule["subjects"]);
    if subjects.is_empty() {
        errors.push(FieldError::required(
            format!("{at}.subjects"),
            "subjects must contain at least one value",
        ));
    }
    for (i, subject) in subjects.iter().enumerate() {
        flow_subject(subject, &format!("{at}.subjects[{i}]"), errors);
    }
    let (resource_rules, non_resource_rules) =
        (items(&rule["resourceRules"]), items(&rule["nonResourceRules"]));
    if resource_rules.is_empty() && non_resource_rules.is_empty() {
        errors.push(FieldError::required(
            at,
            "at least one of resourceRules and nonResourceRules has to be non-empty",
        ));
    }
    for (i, r) in resource_rules.iter().enumerate() {
        resource_rule(r, &format!("{at}.resourceRules[{i}]"), errors);
    }
    for (i, r) in non_resource_rules.iter().enumerate() {
        non_resource_rule(r, &format!("{at}.nonResourceRules[{i}]"), errors);
    }
}

fn flow_subject(subject: &Value, at: &str, errors: &mut Vec<FieldError>) {
    const USER: &str = "user is forbidden when subject kind is not 'User'";
    const GROUP: &str = "group is forbidden when subject kind is not 'Group'";
    const SERVICE_ACCOUNT: &str =
        "serviceAccount is forbidden when subject kind is not 'ServiceAccount'";
    let forbid = |key: &str, detail: &str, errors: &mut Vec<FieldError>| {
        if is_set(&subject[key]) {
            errors.push(FieldError::forbidden(format!("{at}.{key}"), detail));
        }
    };
    match str_of(&subject["kind"]) {
        "ServiceAccount" => {
            service_account_subject(
                &subject["serviceAccount"],
                &format!("{at}.serviceAccount"),
                errors,
            );
            forbid("user", USER, errors);
            forbid("group", GROUP, errors);
        }
        "User" => {
            named_subject(&subject["user"], &format!("{at}.user"), "user", "User", errors);
            forbid("serviceAccount", SERVICE_ACCOUNT, errors);
            forbid("group", GROUP, errors);
        }
        "Group" => {
            named_subject(&subject["group"], &format!("{at}.group"), "group", "Group", errors);
            forbid("serviceAccount", SERVICE_ACCOUNT, errors);
            forbid("user", USER, errors);
        }
        other => {
            errors.push(FieldError::unsupported(format!("{at}.kind"), &text(other), &SUBJECT_KINDS))
        }
    }
}

fn service_account_subject(sa: &Value, at: &str, errors: &mut Vec<FieldError>) {
    if !is_set(sa) {
        errors.push(FieldError::required(
            at,
            "serviceAccount is required when subject kind is 'ServiceAccount'",
        ));
        return;
    }
    let name = str_of(&sa["name"]);
    if name.is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), ""));
    } else if name != "*" {
        for p in name_problems(name, NameRule::Subdomain) {
            errors.push(FieldError::invalid(format!("{at}.name"), &text(name), &p));
        }
    }
    let namespace = str_of(&sa["namespace"]);
    if namespace.is_empty() {
        errors.push(FieldError::required(
            format!("{at}.namespace"),
            "must specify namespace for service account",
        ));
    } else {
        for p in name_problems(namespace, NameRule::Label) {
            errors.push(FieldError::invalid(format!("{at}.namespace"), &text(namespace), &p));
        }
    }
}

/// A User or Group subject: present, with a name.
fn named_subject(s: &Value, at: &str, key: &str, kind: &str, errors: &mut Vec<FieldError>) {
    if !is_set(s) {
        errors.push(FieldError::required(
            at,
            &format!("{key} is required when subject kind is '{kind}'"),
        ));
    } else if str_of(&s["name"]).is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), ""));
    }
}

fn has_wildcard(list: &[Value]) -> bool {
    list.iter().any(|v| v == "*")
}

/// A rule's verbs: at least one, `*` alone, or only the verbs upstream knows.
fn rule_verbs(rule: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let verbs = items(&rule["verbs"]);
    let at = format!("{at}.verbs");
    if verbs.is_empty() {
        errors.push(FieldError::required(at, "verbs must contain at least one value"));
    } else if has_wildcard(verbs) {
        if verbs.len() > 1 {
            errors.push(FieldError::invalid_shown(
                at,
                &go_strings(&rule["verbs"]),
                "if '*' is present, must not specify other verbs",
            ));
        }
    } else if !verbs.iter().all(|v| VERBS.contains(&str_of(v))) {
        errors.push(FieldError::unsupported_shown(at, &go_strings(&rule["verbs"]), &VERBS));
    }
}

/// A list that must not be empty and may hold `*` only alone.
fn wildcard_list(
    rule: &Value,
    key: &str,
    at: &str,
    required: &str,
    what: &str,
    errors: &mut Vec<FieldError>,
) {
    let list = items(&rule[key]);
    let at = format!("{at}.{key}");
    if list.is_empty() {
        errors.push(FieldError::required(at, required));
    } else if list.len() > 1 && has_wildcard(list) {
        errors.push(FieldError::invalid_shown(
            at,
            &go_strings(&rule[key]),
            &format!("if '*' is present, must not specify other {what}"),
        ));
    }
}

fn resource_rule(rule: &Value, at: &str, errors: &mut Vec<FieldError>) {
    rule_verbs(rule, at, errors);
    wildcard_list(
        rule,
        "apiGroups",
        at,
        "resource rules must supply at least one api group",
        "api groups",
        errors,
    );
    wildcard_list(
        rule,
        "resources",
        at,
        "resource rules must supply at least one resource",
        "resources",
        errors,
    );
    let namespaces = items(&rule["namespaces"]);
    let field = format!("{at}.namespaces");
    if namespaces.is_empty() && rule["clusterScope"] != true {
        errors.push(FieldError::required(
            field,
            "resource rules that are not cluster scoped must supply at least one namespace",
        ));
    } else if has_wildcard(namespaces) {
        if namespaces.len() > 1 {
            errors.push(FieldError::invalid_shown(
                field,
                &go_strings(&rule["namespaces"]),
                "if '*' is present, must not specify other namespaces",
            ));
        }
    } else {
        for (i, ns) in namespaces.iter().enumerate() {
            for p in name_problems(str_of(ns), NameRule::Label) {
                errors.push(FieldError::invalid(
                    format!("{field}[{i}]"),
                    &text(str_of(ns)),
                    &format!("{NS_ERR_INTRO}{p}"),
                ));
            }
        }
    }
}

fn non_resource_rule(rule: &Value, at: &str, errors: &mut Vec<FieldError>) {
    rule_verbs(rule, at, errors);
    let urls = items(&rule["nonResourceURLs"]);
    let field = format!("{at}.nonResourceURLs");
    if urls.is_empty() {
        errors.push(FieldError::required(field, "nonResourceURLs must contain at least one value"));
    } else if has_wildcard(urls) {
        if urls.len() > 1 {
            errors.push(FieldError::invalid_shown(
                field,
                &go_strings(&rule["nonResourceURLs"]),
                "if '*' is present, must not specify other non-resource URLs",
            ));
        }
    } else {
        for (i, url) in urls.iter().enumerate() {
            let url = str_of(url);
            if let Some(problem) = non_resource_url_problem(url) {
                errors.push(FieldError::invalid(format!("{field}[{i}]"), &text(url), problem));
            }
        }
    }
}

/// Upstream's `ValidateNonResourceURLPath`: `/`, or an absolute path without blanks or `//`
/// whose only wildcard is a final `/*`.
fn non_resource_url_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("must not be empty");
    }
    if path == "/" {
        return None;
    }
    if !path.starts_with('/') {
        return Some("must start with slash");
    }
    if path.contains(' ') {
        return Some("must not contain white-space");
    }
    if path.contains("//") {
        return Some("must not contain double slash");
    }
    let wildcards = path.matches('*').count();
    if wildcards > 1 || (wildcards == 1 && !path.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}

/// FlowSchema and PriorityLevelConfiguration status: condition types set and distinct.
fn status_conditions(obj: &Value, errors: &mut Vec<FieldError>) {
    let conditions = items(&obj["status"]["conditions"]);
    for (i, c) in conditions.iter().enumerate() {
        let kind = str_of(&c["type"]);
        let at = format!("status.conditions[{i}].type");
        if conditions[..i].iter().any(|o| str_of(&o["type"]) == kind) {
            errors.push(FieldError::duplicate(&at, &text(kind)));
        }
        if kind.is_empty() {
            errors.push(FieldError::required(at, "must not be empty"));
        }
    }
}

/// The spec the API server bootstraps a mandatory FlowSchema with.
fn mandatory_flow_schema(name: &str) -> Option<Value> {
    let rules = |groups: &[&str]| {
        let subjects: Vec<Value> =
            groups.iter().map(|g| json!({"kind": "Group", "group": {"name": g}})).collect();
        json!([{
            "subjects": subjects,
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                "clusterScope": true, "namespaces": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        }])
    };
    match name {
        EXEMPT => Some(json!({
            "priorityLevelConfiguration": {"name": EXEMPT},
            "matchingPrecedence": 1,
            "rules": rules(&["system:masters"]),
        })),
        CATCH_ALL => Some(json!({
            "priorityLevelConfiguration": {"name": CATCH_ALL},
            "matchingPrecedence": 10000,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": rules(&["system:unauthenticated", "system:authenticated"]),
        })),
        _ => None,
    }
}

/// A string list as `Semantic.DeepEqual` compares it (unset and empty alike).
fn canonical_strings(v: &Value) -> Value {
    Value::Array(items(v).iter().map(|s| text(str_of(s))).collect())
}

/// A FlowSchema spec reduced to what the Go struct holds, so that two specs compare equal
/// exactly when upstream's semantic comparison says so.
fn canonical_fs_spec(spec: &Value) -> Value {
    let named =
        |v: &Value| if is_set(v) { json!({"name": str_of(&v["name"])}) } else { Value::Null };
    let rules: Vec<Value> = items(&spec["rules"])
        .iter()
        .map(|r| {
            let subjects: Vec<Value> = items(&r["subjects"])
                .iter()
                .map(|s| {
                    let sa = &s["serviceAccount"];
                    json!({
                        "kind": str_of(&s["kind"]),
                        "user": named(&s["user"]),
                        "group": named(&s["group"]),
                        "serviceAccount": if is_set(sa) {
                            json!({"namespace": str_of(&sa["namespace"]), "name": str_of(&sa["name"])})
                        } else {
                            Value::Null
                        },
                    })
                })
                .collect();
            let resource_rules: Vec<Value> = items(&r["resourceRules"])
                .iter()
                .map(|rr| {
                    json!({
                        "verbs": canonical_strings(&rr["verbs"]),
                        "apiGroups": canonical_strings(&rr["apiGroups"]),
                        "resources": canonical_strings(&rr["resources"]),
                        "clusterScope": rr["clusterScope"] == true,
                        "namespaces": canonical_strings(&rr["namespaces"]),
                    })
                })
                .collect();
            let non_resource_rules: Vec<Value> = items(&r["nonResourceRules"])
                .iter()
                .map(|nr| {
                    json!({
                        "verbs": canonical_strings(&nr["verbs"]),
                        "nonResourceURLs": canonical_strings(&nr["nonResourceURLs"]),
                    })
                })
                .collect();
            json!({"subjects": subjects, "resourceRules": resource_rules,
                "nonResourceRules": non_resource_rules})
        })
        .collect();
    let method = &spec["distinguisherMethod"];
    json!({
        "priorityLevelConfiguration": str_of(&spec["priorityLevelConfiguration"]["name"]),
        "matchingPrecedence": int(&spec["matchingPrecedence"]),
        "distinguisherMethod": if is_set(method) { json!(str_of(&method["type"])) } else { Value::Null },
        "rules": rules,
    })
}

/// A `flowcontrol.FlowSchemaSpec` as `%#v` prints it.
fn go_fs_spec(spec: &Value) -> String {
    let rules = crate::gofmt::go_slice(
        "flowcontrol.PolicyRulesWithSubjects",
        &spec["rules"],
        |r| {
            let subjects = crate::gofmt::go_slice("flowcontrol.Subject", &r["subjects"], |s| {
                format!(
                    "flowcontrol.Subject{{Kind:{}, User:{}, Group:{}, ServiceAccount:{}}}",
                    go_quote(str_of(&s["kind"])),
                    go_pointer("flowcontrol.UserSubject", &s["user"]),
                    go_pointer("flowcontrol.GroupSubject", &s["group"]),
                    go_pointer("flowcontrol.ServiceAccountSubject", &s["serviceAccount"]),
                )
            });
            let resource_rules = crate::gofmt::go_slice(
                "flowcontrol.ResourcePolicyRule",
                &r["resourceRules"],
                |rr| {
                    format!(
                "flowcontrol.ResourcePolicyRule{{Verbs:{}, APIGroups:{}, Resources:{}, ClusterScope:{}, Namespaces:{}}}",
                go_strings(&rr["verbs"]),
                go_strings(&rr["apiGroups"]),
                go_strings(&rr["resources"]),
                rr["clusterScope"] == true,
                go_strings(&rr["namespaces"]),
            )
                },
            );
            let non_resource_rules = crate::gofmt::go_slice(
                "flowcontrol.NonResourcePolicyRule",
                &r["nonResourceRules"],
                |nr| {
                    format!(
                        "flowcontrol.NonResourcePolicyRule{{Verbs:{}, NonResourceURLs:{}}}",
                        go_strings(&nr["verbs"]),
                        go_strings(&nr["nonResourceURLs"]),
                    )
                },
            );
            format!(
            "flowcontrol.PolicyRulesWithSubjects{{Subjects:{subjects}, ResourceRules:{resource_rules}, NonResourceRules:{non_resource_rules}}}"
        )
        },
    );
    format!(
        "flowcontrol.FlowSchemaSpec{{PriorityLevelConfiguration:flowcontrol.PriorityLevelConfigurationReference{{Name:{}}}, MatchingPrecedence:{}, DistinguisherMethod:{}, Rules:{rules}}}",
        go_quote(str_of(&spec["priorityLevelConfiguration"]["name"])),
        int(&spec["matchingPrecedence"]),
        go_pointer("flowcontrol.FlowDistinguisherMethod", &spec["distinguisherMethod"]),
    )
}

// ---------------------------------------------------------------------------------------
// PriorityLevelConfiguration

/// `supportedPriorityLevelEnablement.List()`.
const ENABLEMENTS: [&str; 2] = ["Exempt", "Limited"];
/// `supportedLimitResponseType.List()`.
const LIMIT_RESPONSE_TYPES: [&str; 2] = ["Queue", "Reject"];
const MAX_QUEUES: i64 = 10_000_000;
/// Shuffle sharding's `MaxHashBits`.
const MAX_HASH_BITS: i64 = 60;
/// The v1beta3 annotation that kept an explicit zero of nominalConcurrencyShares; it may
/// not survive conversion, so v1 objects may not carry it.
const PRESERVE_ZERO_SHARES_KEY: &str =
    "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";

/// A PriorityLevelConfiguration, on create or update (upstream validates an update as a
/// create; an explicit zero of `limited.nominalConcurrencyShares` is allowed since v1.30).
pub fn priority_level_configuration(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if obj["metadata"]["annotations"].get(PRESERVE_ZERO_SHARES_KEY).is_some() {
        errors.push(FieldError::forbidden(
            "metadata.annotations",
            &format!("annotation '{PRESERVE_ZERO_SHARES_KEY}' is forbidden"),
        ));
    }
    let name = str_of(&obj["metadata"]["name"]);
    let spec = &obj["spec"];
    priority_level_spec(name, spec, &mut errors);
    mandatory_priority_level(name, spec, &mut errors);
    status_conditions(obj, &mut errors);
    errors
}

fn priority_level_spec(name: &str, spec: &Value, errors: &mut Vec<FieldError>) {
    let kind = str_of(&spec["type"]);
    if (name == EXEMPT) != (kind == "Exempt") {
        errors.push(FieldError::invalid(
            "spec.type",
            &text(kind),
            "type must be 'Exempt' if and only if name is 'exempt'",
        ));
    }
    let (limited, exempt) = (&spec["limited"], &spec["exempt"]);
    match kind {
        "Exempt" => {
            if is_set(limited) {
                errors.push(FieldError::forbidden(
                    "spec.limited",
                    "must be nil if the type is not Limited",
                ));
            }
            if is_set(exempt) {
                let ncs = &exempt["nominalConcurrencyShares"];
                if ncs.as_i64().is_some_and(|n| n < 0) {
                    errors.push(FieldError::invalid(
                        "spec.exempt.nominalConcurrencyShares",
                        ncs,
                        "must be a non-negative integer",
                    ));
                }
                lendable_percent(exempt, "spec.exempt", errors);
            }
        }
        "Limited" => {
            if is_set(exempt) {
                errors.push(FieldError::forbidden(
                    "spec.exempt",
                    "must be nil if the type is Limited",
                ));
            }
            if is_set(limited) {
                limited_priority_level(limited, errors);
            } else {
                errors.push(FieldError::required(
                    "spec.limited",
                    "must not be empty when type is Limited",
                ));
            }
        }
        other => errors.push(FieldError::unsupported("spec.type", &text(other), &ENABLEMENTS)),
    }
}

fn lendable_percent(config: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let lendable = &config["lendablePercent"];
    if lendable.as_i64().is_some_and(|p| !(0..=100).contains(&p)) {
        errors.push(FieldError::invalid(
            format!("{at}.lendablePercent"),
            lendable,
            "must be between 0 and 100, inclusive",
        ));
    }
}

fn limited_priority_level(limited: &Value, errors: &mut Vec<FieldError>) {
    let ncs = int(&limited["nominalConcurrencyShares"]);
    if ncs < 0 {
        errors.push(FieldError::invalid(
            "spec.limited.nominalConcurrencyShares",
            &json!(ncs),
            "must be a non-negative integer",
        ));
    }
    limit_response(&limited["limitResponse"], errors);
    lendable_percent(limited, "spec.limited", errors);
    let borrowing = &limited["borrowingLimitPercent"];
    if borrowing.as_i64().is_some_and(|p| p < 0) {
        errors.push(FieldError::invalid(
            "spec.limited.borrowingLimitPercent",
            borrowing,
            "if specified, must be a non-negative integer",
        ));
    }
}

fn limit_response(response: &Value, errors: &mut Vec<FieldError>) {
    let queuing = &response["queuing"];
    let at = "spec.limited.limitResponse";
    match str_of(&response["type"]) {
        "Reject" => {
            if is_set(queuing) {
                errors.push(FieldError::forbidden(
                    format!("{at}.queuing"),
                    "must be nil if limited.limitResponse.type is not Limited",
                ));
            }
        }
        "Queue" => {
            if is_set(queuing) {
                queuing_config(queuing, &format!("{at}.queuing"), errors);
            } else {
                errors.push(FieldError::required(
                    format!("{at}.queuing"),
                    "must not be empty if limited.limitResponse.type is Limited",
                ));
            }
        }
        other => errors.push(FieldError::unsupported(
            format!("{at}.type"),
            &text(other),
            &LIMIT_RESPONSE_TYPES,
        )),
    }
}

/// The queuing parameters, checked as shuffle sharding needs them: positive counts, at most
/// 10^7 queues, and a hand that fits the deck and 60 bits of hash.
fn queuing_config(queuing: &Value, at: &str, errors: &mut Vec<FieldError>) {
    const POSITIVE: &str = "must be positive";
    let limit = int(&queuing["queueLengthLimit"]);
    if limit <= 0 {
        errors.push(FieldError::invalid(format!("{at}.queueLengthLimit"), &json!(limit), POSITIVE));
    }
    let queues = int(&queuing["queues"]);
    if queues <= 0 {
        errors.push(FieldError::invalid(format!("{at}.queues"), &json!(queues), POSITIVE));
    } else if queues > MAX_QUEUES {
        errors.push(FieldError::invalid(
            format!("{at}.queues"),
            &json!(queues),
            &format!("must not be greater than {MAX_QUEUES}"),
        ));
    }
    let hand = int(&queuing["handSize"]);
    let field = format!("{at}.handSize");
    if hand <= 0 {
        errors.push(FieldError::invalid(field, &json!(hand), POSITIVE));
    } else if hand > queues {
        errors.push(FieldError::invalid(
            field,
            &json!(hand),
            &format!("should not be greater than queues ({queues})"),
        ));
    } else if required_entropy_bits(queues, hand) > MAX_HASH_BITS {
        errors.push(FieldError::invalid(
            field,
            &json!(hand),
            &format!(
                "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than {MAX_HASH_BITS}"
            ),
        ));
    }
}

/// Shuffle sharding's `RequiredEntropyBits`: `ceil(log2(deck) * hand)`, with `log2` computed
/// as Go's `math.Log2` does (exact for powers of two). `deck` is positive here.
fn required_entropy_bits(deck: i64, hand: i64) -> i64 {
    let bits = 64 - deck.unsigned_abs().leading_zeros();
    let frac = deck as f64 / 2f64.powi(bits as i32);
    let log2 = if frac == 0.5 {
        f64::from(bits - 1)
    } else {
        frac.ln() * std::f64::consts::LOG2_E + f64::from(bits)
    };
    (log2 * hand as f64).ceil() as i64
}

/// A PriorityLevelConfiguration spec reduced to what the Go struct holds (see
/// [`canonical_fs_spec`]).
fn canonical_plc_spec(spec: &Value) -> Value {
    let optional = |v: &Value| v.as_i64().map_or(Value::Null, |n| json!(n));
    let limited = &spec["limited"];
    let exempt = &spec["exempt"];
    json!({
        "type": str_of(&spec["type"]),
        "limited": if is_set(limited) {
            let response = &limited["limitResponse"];
            let queuing = &response["queuing"];
            json!({
                "nominalConcurrencyShares": int(&limited["nominalConcurrencyShares"]),
                "limitResponse": {
                    "type": str_of(&response["type"]),
                    "queuing": if is_set(queuing) {
                        json!({"queues": int(&queuing["queues"]), "handSize": int(&queuing["handSize"]),
                            "queueLengthLimit": int(&queuing["queueLengthLimit"])})
                    } else {
                        Value::Null
                    },
                },
                "lendablePercent": optional(&limited["lendablePercent"]),
                "borrowingLimitPercent": optional(&limited["borrowingLimitPercent"]),
            })
        } else {
            Value::Null
        },
        "exempt": if is_set(exempt) {
            json!({"nominalConcurrencyShares": optional(&exempt["nominalConcurrencyShares"]),
                "lendablePercent": optional(&exempt["lendablePercent"])})
        } else {
            Value::Null
        },
    })
}

/// The mandatory priority levels keep their bootstrap spec; `exempt` may change its
/// `spec.exempt` only.
fn mandatory_priority_level(name: &str, spec: &Value, errors: &mut Vec<FieldError>) {
    let (fixed, detail) = match name {
        EXEMPT => {
            let mut have = canonical_plc_spec(spec);
            have["exempt"] = json!({"nominalConcurrencyShares": 0, "lendablePercent": 0});
            let want = canonical_plc_spec(&json!({
                "type": "Exempt",
                "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0},
            }));
            (
                have == want,
                "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value",
            )
        }
        CATCH_ALL => {
            let want = canonical_plc_spec(&json!({
                "type": "Limited",
                "limited": {"nominalConcurrencyShares": 5, "lendablePercent": 0,
                    "limitResponse": {"type": "Reject"}},
            }));
            (canonical_plc_spec(spec) == want, "spec of 'catch-all' must equal the fixed value")
        }
        _ => return,
    };
    if !fixed {
        errors.push(FieldError::invalid_shown("spec", &go_plc_spec(spec), detail));
    }
}

/// A `flowcontrol.PriorityLevelConfigurationSpec` as `%#v` prints it.
fn go_plc_spec(spec: &Value) -> String {
    format!(
        "flowcontrol.PriorityLevelConfigurationSpec{{Type:{}, Limited:{}, Exempt:{}}}",
        go_quote(str_of(&spec["type"])),
        go_pointer("flowcontrol.LimitedPriorityLevelConfiguration", &spec["limited"]),
        go_pointer("flowcontrol.ExemptPriorityLevelConfiguration", &spec["exempt"]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    fn flow(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec})
    }

    fn fs_lines(spec: Value) -> Vec<String> {
        lines(flow_schema(&flow("fs", spec), None))
    }

    fn group_rule() -> Value {
        json!({
            "subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
            "resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["default"]}],
        })
    }

    #[test]
    fn a_realistic_flow_schema_is_valid() {
        assert!(fs_lines(json!({
            "priorityLevelConfiguration": {"name": "workload-low"},
            "matchingPrecedence": 1000,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [group_rule(), {
                "subjects": [{"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}},
                    {"kind": "User", "user": {"name": "alice"}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true}],
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/metrics/*", "/"]}],
            }],
        }))
        .is_empty());
    }

    #[test]
    fn flow_schema_spec_fields() {
        assert_eq!(
            fs_lines(json!({"matchingPrecedence": 1, "distinguisherMethod": {"type": "ByFoo"}})),
            [
                "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1",
                "spec.distinguisherMethod.type: Unsupported value: flowcontrol.FlowDistinguisherMethod{Type:\"ByFoo\"}: supported values: \"ByNamespace\", \"ByUser\"",
                "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
            ]
        );
        let high = fs_lines(
            json!({"matchingPrecedence": 10001, "priorityLevelConfiguration": {"name": "Bad"}}),
        );
        assert_eq!(
            high[0],
            "spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"
        );
        assert!(high[1].starts_with(
            "spec.priorityLevelConfiguration.name: Invalid value: \"Bad\": a lowercase RFC 1123 subdomain"
        ));
        assert_eq!(
            fs_lines(
                json!({"matchingPrecedence": -3, "priorityLevelConfiguration": {"name": "p"}})
            ),
            ["spec.matchingPrecedence: Invalid value: -3: must be a positive value"]
        );
    }

    #[test]
    fn flow_schema_subjects() {
        let spec = json!({
            "matchingPrecedence": 500,
            "priorityLevelConfiguration": {"name": "p"},
            "rules": [{
                "subjects": [
                    {"kind": "ServiceAccount", "user": {"name": "u"}},
                    {"kind": "ServiceAccount", "serviceAccount": {"name": "Bad", "namespace": ""}},
                    {"kind": "User", "user": {}, "group": {"name": "g"}},
                    {"kind": "Group", "serviceAccount": {"name": "s", "namespace": "n"}},
                    {"kind": "Robot"},
                ],
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}],
            }, {}],
        });
        let got = fs_lines(spec);
        let at = "spec.rules[0].subjects";
        assert_eq!(got[0], format!("{at}[0].serviceAccount: Required value: serviceAccount is required when subject kind is 'ServiceAccount'"));
        assert_eq!(
            got[1],
            format!("{at}[0].user: Forbidden: user is forbidden when subject kind is not 'User'")
        );
        assert!(got[2].starts_with(&format!(
            "{at}[1].serviceAccount.name: Invalid value: \"Bad\": a lowercase RFC 1123 subdomain"
        )));
        assert_eq!(got[3], format!("{at}[1].serviceAccount.namespace: Required value: must specify namespace for service account"));
        assert_eq!(got[4], format!("{at}[2].user.name: Required value"));
        assert_eq!(
            got[5],
            format!(
                "{at}[2].group: Forbidden: group is forbidden when subject kind is not 'Group'"
            )
        );
        assert_eq!(
            got[6],
            format!(
                "{at}[3].group: Required value: group is required when subject kind is 'Group'"
            )
        );
        assert_eq!(got[7], format!("{at}[3].serviceAccount: Forbidden: serviceAccount is forbidden when subject kind is not 'ServiceAccount'"));
        assert_eq!(got[8], format!("{at}[4].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\""));
        assert_eq!(
            got[9],
            "spec.rules[1].subjects: Required value: subjects must contain at least one value"
        );
        assert_eq!(got[10], "spec.rules[1]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty");
        assert_eq!(got.len(), 11);
    }

    #[test]
    fn flow_schema_rules() {
        let spec = json!({
            "matchingPrecedence": 500,
            "priorityLevelConfiguration": {"name": "p"},
            "rules": [{
                "subjects": [{"kind": "Group", "group": {"name": "g"}}],
                "resourceRules": [
                    {"verbs": ["*", "get"], "apiGroups": ["*", "apps"], "resources": ["*", "pods"], "namespaces": ["*", "a"]},
                    {"verbs": ["get", "fly"], "apiGroups": [], "resources": [], "namespaces": ["Bad"]},
                    {"verbs": [], "apiGroups": ["x"], "resources": ["y"]},
                ],
                "nonResourceRules": [
                    {"verbs": ["get"], "nonResourceURLs": ["*", "/a"]},
                    {"verbs": ["get"], "nonResourceURLs": ["", "a", "/a b", "//a", "/a*", "/a/*/*", "/ok/*"]},
                    {"verbs": ["get"]},
                ],
            }],
        });
        let got = fs_lines(spec);
        let r = "spec.rules[0].resourceRules";
        let n = "spec.rules[0].nonResourceRules";
        let want = [
            format!("{r}[0].verbs: Invalid value: []string{{\"*\", \"get\"}}: if '*' is present, must not specify other verbs"),
            format!("{r}[0].apiGroups: Invalid value: []string{{\"*\", \"apps\"}}: if '*' is present, must not specify other api groups"),
            format!("{r}[0].resources: Invalid value: []string{{\"*\", \"pods\"}}: if '*' is present, must not specify other resources"),
            format!("{r}[0].namespaces: Invalid value: []string{{\"*\", \"a\"}}: if '*' is present, must not specify other namespaces"),
            format!("{r}[1].verbs: Unsupported value: []string{{\"get\", \"fly\"}}: supported values: \"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"proxy\", \"update\", \"watch\""),
            format!("{r}[1].apiGroups: Required value: resource rules must supply at least one api group"),
            format!("{r}[1].resources: Required value: resource rules must supply at least one resource"),
            format!("{r}[1].namespaces[0]: Invalid value: \"Bad\": each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
            format!("{r}[2].verbs: Required value: verbs must contain at least one value"),
            format!("{r}[2].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace"),
            format!("{n}[0].nonResourceURLs: Invalid value: []string{{\"*\", \"/a\"}}: if '*' is present, must not specify other non-resource URLs"),
            format!("{n}[1].nonResourceURLs[0]: Invalid value: \"\": must not be empty"),
            format!("{n}[1].nonResourceURLs[1]: Invalid value: \"a\": must start with slash"),
            format!("{n}[1].nonResourceURLs[2]: Invalid value: \"/a b\": must not contain white-space"),
            format!("{n}[1].nonResourceURLs[3]: Invalid value: \"//a\": must not contain double slash"),
            format!("{n}[1].nonResourceURLs[4]: Invalid value: \"/a*\": wildcard can only do suffix matching"),
            format!("{n}[1].nonResourceURLs[5]: Invalid value: \"/a/*/*\": wildcard can only do suffix matching"),
            format!("{n}[2].nonResourceURLs: Required value: nonResourceURLs must contain at least one value"),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn mandatory_flow_schemas_keep_their_spec() {
        let exempt = mandatory_flow_schema(EXEMPT).unwrap();
        assert!(lines(flow_schema(&flow(EXEMPT, exempt.clone()), None)).is_empty());
        let catch_all = mandatory_flow_schema(CATCH_ALL).unwrap();
        // Explicit empty lists and false read as the defaults.
        let mut same = catch_all.clone();
        same["rules"][0]["subjects"][0]["user"] = Value::Null;
        assert!(lines(flow_schema(&flow(CATCH_ALL, same), None)).is_empty());

        let mut changed = exempt;
        changed["rules"][0]["subjects"][0]["group"]["name"] = json!("admins");
        assert_eq!(
            lines(flow_schema(&flow(EXEMPT, changed), None)),
            ["spec: Invalid value: flowcontrol.FlowSchemaSpec{PriorityLevelConfiguration:flowcontrol.PriorityLevelConfigurationReference{Name:\"exempt\"}, MatchingPrecedence:1, DistinguisherMethod:(*flowcontrol.FlowDistinguisherMethod)(nil), Rules:[]flowcontrol.PolicyRulesWithSubjects{flowcontrol.PolicyRulesWithSubjects{Subjects:[]flowcontrol.Subject{flowcontrol.Subject{Kind:\"Group\", User:(*flowcontrol.UserSubject)(nil), Group:(*flowcontrol.GroupSubject)(0xc000a1c000), ServiceAccount:(*flowcontrol.ServiceAccountSubject)(nil)}}, ResourceRules:[]flowcontrol.ResourcePolicyRule{flowcontrol.ResourcePolicyRule{Verbs:[]string{\"*\"}, APIGroups:[]string{\"*\"}, Resources:[]string{\"*\"}, ClusterScope:true, Namespaces:[]string{\"*\"}}}, NonResourceRules:[]flowcontrol.NonResourcePolicyRule{flowcontrol.NonResourcePolicyRule{Verbs:[]string{\"*\"}, NonResourceURLs:[]string{\"*\"}}}}}}: spec of 'exempt' must equal the fixed value"]
        );
        let mut moved = catch_all;
        moved["matchingPrecedence"] = json!(9000);
        let got = lines(flow_schema(&flow(CATCH_ALL, moved), None));
        assert_eq!(got.len(), 1);
        assert!(got[0].ends_with(": spec of 'catch-all' must equal the fixed value"));
    }

    #[test]
    fn flow_control_status_conditions() {
        let mut obj = flow(
            "fs",
            json!({"matchingPrecedence": 10, "priorityLevelConfiguration": {"name": "p"}}),
        );
        obj["status"] = json!({"conditions": [{"type": "Dangling"}, {"type": "Dangling"}, {}]});
        assert_eq!(
            lines(flow_schema(&obj, None)),
            [
                "status.conditions[1].type: Duplicate value: \"Dangling\"",
                "status.conditions[2].type: Required value: must not be empty",
            ]
        );
    }

    fn plc_lines(name: &str, spec: Value) -> Vec<String> {
        lines(priority_level_configuration(&flow(name, spec), None))
    }

    fn queued(queuing: Value) -> Value {
        json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 30, "lendablePercent": 0,
            "limitResponse": {"type": "Queue", "queuing": queuing}}})
    }

    #[test]
    fn realistic_priority_levels_are_valid() {
        assert!(plc_lines(
            "workload-low",
            queued(json!({"queues": 128, "handSize": 6, "queueLengthLimit": 50}))
        )
        .is_empty());
        assert!(plc_lines(
            "zero",
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
            "borrowingLimitPercent": 200, "limitResponse": {"type": "Reject"}}})
        )
        .is_empty());
        assert!(plc_lines(EXEMPT, json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 10, "lendablePercent": 50}})).is_empty());
        assert!(plc_lines(
            CATCH_ALL,
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
            "lendablePercent": 0, "limitResponse": {"type": "Reject"}}})
        )
        .is_empty());
    }

    #[test]
    fn priority_level_types_and_ranges() {
        assert_eq!(
            plc_lines("p", json!({"type": "Exempt", "limited": {}, "exempt": {"nominalConcurrencyShares": -1, "lendablePercent": 101}})),
            [
                "spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'",
                "spec.limited: Forbidden: must be nil if the type is not Limited",
                "spec.exempt.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
                "spec.exempt.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
            ]
        );
        assert_eq!(
            plc_lines("p", json!({"type": "Limited", "exempt": {}})),
            [
                "spec.exempt: Forbidden: must be nil if the type is Limited",
                "spec.limited: Required value: must not be empty when type is Limited",
            ]
        );
        assert_eq!(
            plc_lines("p", json!({})),
            ["spec.type: Unsupported value: \"\": supported values: \"Exempt\", \"Limited\""]
        );
        assert_eq!(
            plc_lines("p", json!({"type": "Limited", "limited": {"nominalConcurrencyShares": -2,
                "lendablePercent": -1, "borrowingLimitPercent": -1, "limitResponse": {"type": "Drop"}}})),
            [
                "spec.limited.nominalConcurrencyShares: Invalid value: -2: must be a non-negative integer",
                "spec.limited.limitResponse.type: Unsupported value: \"Drop\": supported values: \"Queue\", \"Reject\"",
                "spec.limited.lendablePercent: Invalid value: -1: must be between 0 and 100, inclusive",
                "spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative integer",
            ]
        );
    }

    #[test]
    fn limit_responses_and_queuing() {
        assert_eq!(
            plc_lines("p", json!({"type": "Limited", "limited": {"limitResponse": {"type": "Reject", "queuing": {}}}})),
            ["spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Limited"]
        );
        assert_eq!(
            plc_lines("p", json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}})),
            ["spec.limited.limitResponse.queuing: Required value: must not be empty if limited.limitResponse.type is Limited"]
        );
        let q = "spec.limited.limitResponse.queuing";
        assert_eq!(
            plc_lines("p", queued(json!({"queues": -1, "handSize": -1, "queueLengthLimit": -1}))),
            [
                format!("{q}.queueLengthLimit: Invalid value: -1: must be positive"),
                format!("{q}.queues: Invalid value: -1: must be positive"),
                format!("{q}.handSize: Invalid value: -1: must be positive"),
            ]
        );
        assert_eq!(
            plc_lines(
                "p",
                queued(json!({"queues": 10_000_001, "handSize": 2, "queueLengthLimit": 1}))
            ),
            [format!("{q}.queues: Invalid value: 10000001: must not be greater than 10000000")]
        );
        assert_eq!(
            plc_lines("p", queued(json!({"queues": 4, "handSize": 5, "queueLengthLimit": 1}))),
            [format!("{q}.handSize: Invalid value: 5: should not be greater than queues (4)")]
        );
        assert_eq!(
            plc_lines("p", queued(json!({"queues": 128, "handSize": 9, "queueLengthLimit": 1}))),
            [format!("{q}.handSize: Invalid value: 9: required entropy bits of deckSize 128 and handSize 9 should not be greater than 60")]
        );
        assert!(plc_lines(
            "p",
            queued(json!({"queues": 64, "handSize": 10, "queueLengthLimit": 1}))
        )
        .is_empty());
        assert_eq!(required_entropy_bits(1, 1), 0);
        assert_eq!(required_entropy_bits(100, 9), 60);
        assert_eq!(required_entropy_bits(101, 9), 60);
        assert_eq!(required_entropy_bits(102, 9), 61);
    }

    #[test]
    fn mandatory_priority_levels_and_the_roundtrip_annotation() {
        assert_eq!(
            plc_lines(EXEMPT, json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}})),
            [
                "spec.type: Invalid value: \"Limited\": type must be 'Exempt' if and only if name is 'exempt'",
                "spec: Invalid value: flowcontrol.PriorityLevelConfigurationSpec{Type:\"Limited\", Limited:(*flowcontrol.LimitedPriorityLevelConfiguration)(0xc000a1c000), Exempt:(*flowcontrol.ExemptPriorityLevelConfiguration)(nil)}: spec of 'exempt' except the 'spec.exempt' field must equal the fixed value",
            ]
        );
        assert_eq!(
            plc_lines(CATCH_ALL, json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {"type": "Reject"}}})),
            ["spec: Invalid value: flowcontrol.PriorityLevelConfigurationSpec{Type:\"Limited\", Limited:(*flowcontrol.LimitedPriorityLevelConfiguration)(0xc000a1c000), Exempt:(*flowcontrol.ExemptPriorityLevelConfiguration)(nil)}: spec of 'catch-all' must equal the fixed value"]
        );
        let mut obj =
            flow("p", json!({"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}));
        obj["metadata"]["annotations"] = json!({PRESERVE_ZERO_SHARES_KEY: ""});
        assert_eq!(
            lines(priority_level_configuration(&obj, None)),
            ["metadata.annotations: Forbidden: annotation 'flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares' is forbidden"]
        );
    }
}
