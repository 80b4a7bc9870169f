//! Cluster policy and admin kinds: PodDisruptionBudgets, HorizontalPodAutoscalers (v2, and
//! v1 as clients send it), RBAC Roles, ClusterRoles and their bindings, ResourceQuotas,
//! LimitRanges, PriorityClasses and Namespaces, with upstream's (v1.33) messages and paths.
//!
//! Objects arrive after rkube's defaulting, which does not fill these kinds' defaults, so
//! each check reads an absent field as the default upstream would have given it (an HPA's
//! `minReplicas` of 1, a binding's `roleRef.apiGroup`, a Container LimitRange's `default` and
//! `defaultRequest` taken from `max` and `min`, ...). Where upstream prints a Go struct as
//! the bad value (a `resource.Quantity`, a `rbac.RoleRef`, a PDB spec) it is rendered the way
//! Go's `%#v` prints it.

// The entry points are wired into `kinds` separately; until then nothing calls them.

use serde_json::{json, Map, Value};

use super::values::{
    container_resource_name, is_native_resource, items, label_selector, milli, one_of,
    quantity_value, resource_name, str_of, INTEGER_RESOURCES,
};
use super::workloads::{not_over_100_percent, positive_int_or_percent};
use super::{name_problems, qualified_name_problems, FieldError, NameRule};
use crate::gofmt::{go_pointer, go_quantity, go_quote, go_slice, go_string_slice};
use crate::quantity::Quantity;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const NANOS: i128 = 1_000_000_000;

// ---------------------------------------------------------------------------------------
// Shared pieces.

fn strings(v: &Value) -> Option<Vec<&str>> {
    v.as_array().map(|a| a.iter().map(str_of).collect())
}

fn entries(v: &Value) -> Vec<(&String, &Value)> {
    let mut all: Vec<(&String, &Value)> = v.as_object().into_iter().flatten().collect();
    all.sort_by(|a, b| a.0.cmp(b.0));
    all
}

/// `field.Required(path, "")` when empty, else one `Invalid` per path-segment problem (the
/// rule for object references' kinds and names and RBAC role names).
fn path_segment(at: &str, v: &Value, errors: &mut Vec<FieldError>) {
    let s = str_of(v);
    if s.is_empty() {
        errors.push(FieldError::required(at, ""));
    } else {
        for p in name_problems(s, NameRule::PathSegment) {
            errors.push(FieldError::invalid(at, v, &p));
        }
    }
}

/// `ceil(q)`, as upstream's `Value`.
fn units(q: &Quantity) -> i128 {
    ceil_div(q.nanos, NANOS)
}

fn ceil_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b > 0 {
        q + 1
    } else {
        q
    }
}

// ---------------------------------------------------------------------------------------
// Resource names (quota keys, LimitRange keys, HPA container resources).

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// Upstream's `IsStandardQuotaResourceName`: the integer resources, these, and hugepages.
fn is_standard_quota_resource(name: &str) -> bool {
    const STANDARD: [&str; 10] = [
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.storage",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
    ];
    STANDARD.contains(&name)
        || INTEGER_RESOURCES.contains(&name)
        || is_hugepages(name)
        || name.starts_with("requests.hugepages-")
}

// ---------------------------------------------------------------------------------------
// policy/v1 PodDisruptionBudget.

/// `ValidatePodDisruptionBudget` (also on update: upstream lets the spec change).
pub fn pod_disruption_budget(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let mut errors = Vec::new();
    let (min, max) = (&spec["minAvailable"], &spec["maxUnavailable"]);
    if !min.is_null() && !max.is_null() {
        let shown = format!(
            "policy.PodDisruptionBudgetSpec{{MinAvailable:{}, Selector:{}, MaxUnavailable:{}, UnhealthyPodEvictionPolicy:{}}}",
            go_pointer("intstr.IntOrString", min),
            go_pointer("v1.LabelSelector", &spec["selector"]),
            go_pointer("intstr.IntOrString", max),
            go_pointer("policy.UnhealthyPodEvictionPolicyType", &spec["unhealthyPodEvictionPolicy"]),
        );
        errors.push(FieldError::invalid_shown(
            "spec",
            &shown,
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (name, v) in [("minAvailable", min), ("maxUnavailable", max)] {
        if !v.is_null() {
            let at = format!("spec.{name}");
            errors.extend(positive_int_or_percent(&at, v));
            errors.extend(not_over_100_percent(&at, v));
        }
    }
    errors.extend(label_selector("spec.selector", &spec["selector"]));
    errors.extend(one_of(
        "spec.unhealthyPodEvictionPolicy",
        &spec["unhealthyPodEvictionPolicy"],
        &["AlwaysAllow", "IfHealthyBudget"],
    ));
    errors
}

// ---------------------------------------------------------------------------------------
// autoscaling HorizontalPodAutoscaler.

/// The spec as upstream validates it (its internal version, which is v2's shape): a v1
/// object's `targetCPUUtilizationPercentage` becomes its CPU utilization metric.
fn hpa_spec(obj: &Value) -> Value {
    let mut spec = obj["spec"].clone();
    if obj["apiVersion"] == "autoscaling/v1" && spec.is_object() {
        let cpu = spec.as_object_mut().and_then(|s| s.remove("targetCPUUtilizationPercentage"));
        if let Some(cpu) = cpu.filter(|c| !c.is_null()) {
            spec["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": cpu}}}]);
        }
    }
    spec
}

/// `ValidateHorizontalPodAutoscaler` and its update: replica bounds, the scale target, the
/// metrics and the scaling behavior. `minReplicas` may be 0 only when it already was (the
/// HPAScaleToZero gate is off in v1.33).
pub fn horizontal_pod_autoscaler(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = hpa_spec(obj);
    let mut errors = Vec::new();
    let lower = if old.is_some_and(|o| o["spec"]["minReplicas"] == 0) { 0 } else { 1 };
    // minReplicas defaults to 1.
    let min = spec["minReplicas"].as_i64().unwrap_or(1);
    if !spec["minReplicas"].is_null() && min < lower {
        errors.push(FieldError::invalid(
            "spec.minReplicas",
            &spec["minReplicas"],
            &format!("must be greater than or equal to {lower}"),
        ));
    }
    let max = json!(spec["maxReplicas"].as_i64().unwrap_or(0));
    if max.as_i64() < Some(1) {
        errors.push(FieldError::invalid("spec.maxReplicas", &max, "must be greater than 0"));
    }
    if max.as_i64() < Some(min) {
        errors.push(FieldError::invalid(
            "spec.maxReplicas",
            &max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    object_reference(&spec["scaleTargetRef"], "spec.scaleTargetRef", &mut errors);
    let metrics = items(&spec["metrics"]);
    let mut scales_on_objects = false;
    for (i, m) in metrics.iter().enumerate() {
        metric_spec(m, &format!("spec.metrics[{i}]"), &mut errors);
        scales_on_objects |= m["type"] == "Object" || m["type"] == "External";
    }
    // An empty list is defaulted to CPU utilization (which cannot scale to zero either).
    if min == 0 && !scales_on_objects {
        errors.push(FieldError::forbidden(
            "spec.metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
    let behavior = &spec["behavior"];
    if behavior.is_object() {
        for direction in ["scaleUp", "scaleDown"] {
            scaling_rules(&behavior[direction], &format!("spec.behavior.{direction}"), &mut errors);
        }
    }
    errors
}

/// `ValidateCrossVersionObjectReference`: kind and name.
fn object_reference(r: &Value, at: &str, errors: &mut Vec<FieldError>) {
    path_segment(&format!("{at}.kind"), &r["kind"], errors);
    path_segment(&format!("{at}.name"), &r["name"], errors);
}

/// Rules the defaulting left alone: a missing direction or policy list is filled in, an
/// explicitly empty list is not.
fn scaling_rules(rules: &Value, at: &str, errors: &mut Vec<FieldError>) {
    if !rules.is_object() {
        return;
    }
    let window = &rules["stabilizationWindowSeconds"];
    if let Some(w) = window.as_i64() {
        if w < 0 {
            errors.push(FieldError::invalid(
                format!("{at}.stabilizationWindowSeconds"),
                window,
                "must be greater than or equal to zero",
            ));
        }
        if w > 3600 {
            errors.push(FieldError::invalid(
                format!("{at}.stabilizationWindowSeconds"),
                window,
                "must be less than or equal to 3600",
            ));
        }
    }
    errors.extend(one_of(
        &format!("{at}.selectPolicy"),
        &rules["selectPolicy"],
        &["Disabled", "Max", "Min"],
    ));
    if rules["policies"].as_array().is_some_and(Vec::is_empty) {
        errors.push(FieldError::required(
            format!("{at}.policies"),
            "must specify at least one Policy",
        ));
    }
    for (i, p) in items(&rules["policies"]).iter().enumerate() {
        let at = format!("{at}.policies[{i}]");
        if p["type"] != "Pods" && p["type"] != "Percent" {
            let t = if p["type"].is_string() { p["type"].clone() } else { json!("") };
            errors.push(FieldError::unsupported(format!("{at}.type"), &t, &["Percent", "Pods"]));
        }
        for field in ["value", "periodSeconds"] {
            let v = json!(p[field].as_i64().unwrap_or(0));
            if v.as_i64() <= Some(0) {
                errors.push(FieldError::invalid(
                    format!("{at}.{field}"),
                    &v,
                    "must be greater than zero",
                ));
            }
        }
        let period = json!(p["periodSeconds"].as_i64().unwrap_or(0));
        if period.as_i64() > Some(1800) {
            errors.push(FieldError::invalid(
                format!("{at}.periodSeconds"),
                &period,
                "must be less than or equal to 1800",
            ));
        }
    }
}

const METRIC_TYPES: [&str; 5] = ["ContainerResource", "External", "Object", "Pods", "Resource"];

/// `validateMetricSpec`: the type, the one source it names (only the first source present
/// is checked further), and no other sources.
fn metric_spec(m: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let kind = str_of(&m["type"]);
    let shown = json!(kind);
    if kind.is_empty() {
        errors
            .push(FieldError::required(format!("{at}.type"), "must specify a metric source type"));
    }
    if !METRIC_TYPES.contains(&kind) {
        errors.push(FieldError::unsupported(format!("{at}.type"), &shown, &METRIC_TYPES));
    }
    let mut present: Vec<&str> = Vec::new();
    for source in ["object", "external", "pods", "resource", "containerResource"] {
        let s = &m[source];
        if s.is_null() {
            continue;
        }
        present.push(source);
        if present.len() > 1 {
            continue;
        }
        let at = format!("{at}.{source}");
        match source {
            "object" => object_source(s, &at, errors),
            "external" => external_source(s, &at, errors),
            "pods" => pods_source(s, &at, errors),
            "resource" => resource_source(s, &at, false, errors),
            _ => resource_source(s, &at, true, errors),
        }
    }
    let expected = match kind {
        "Object" => "object",
        "Pods" => "pods",
        "Resource" => "resource",
        "External" => "external",
        "ContainerResource" => "containerResource",
        _ => {
            errors.push(FieldError::unsupported(format!("{at}.type"), &shown, &METRIC_TYPES));
            ""
        }
    };
    if !expected.is_empty() && m[expected].is_null() {
        errors.push(FieldError::required(
            format!("{at}.{expected}"),
            "must populate information for the given metric source",
        ));
    }
    if present.len() != 1 {
        present.sort_unstable();
        for source in present.into_iter().filter(|s| *s != expected) {
            errors.push(FieldError::forbidden(
                format!("{at}.{source}"),
                "must populate the given metric source only",
            ));
        }
    }
}

fn metric_identifier(id: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let name = &id["name"];
    if str_of(name).is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), "must specify a metric name"));
    } else {
        path_segment(&format!("{at}.name"), name, errors);
    }
}

/// `validateMetricTarget`: the target type and positive values.
fn metric_target(t: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let kind = str_of(&t["type"]);
    if kind.is_empty() {
        errors
            .push(FieldError::required(format!("{at}.type"), "must specify a metric target type"));
    }
    if !matches!(kind, "Utilization" | "Value" | "AverageValue") {
        errors.push(FieldError::invalid(
            format!("{at}.type"),
            &json!(kind),
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    for field in ["value", "averageValue"] {
        let v = &t[field];
        if Quantity::parse(v).is_some_and(|q| q.nanos <= 0) {
            errors.push(FieldError::invalid_shown(
                format!("{at}.{field}"),
                &go_quantity(v, false),
                "must be positive",
            ));
        }
    }
    let utilization = &t["averageUtilization"];
    if utilization.as_i64().is_some_and(|u| u < 1) {
        errors.push(FieldError::invalid(
            format!("{at}.averageUtilization"),
            utilization,
            "must be greater than 0",
        ));
    }
}

fn object_source(s: &Value, at: &str, errors: &mut Vec<FieldError>) {
    object_reference(&s["describedObject"], &format!("{at}.describedObject"), errors);
    metric_identifier(&s["metric"], &format!("{at}.metric"), errors);
    let target = &s["target"];
    metric_target(target, &format!("{at}.target"), errors);
    if target["value"].is_null() && target["averageValue"].is_null() {
        errors.push(FieldError::required(
            format!("{at}.target.averageValue"),
            "must set either a target value or averageValue",
        ));
    }
}

fn external_source(s: &Value, at: &str, errors: &mut Vec<FieldError>) {
    metric_identifier(&s["metric"], &format!("{at}.metric"), errors);
    let target = &s["target"];
    metric_target(target, &format!("{at}.target"), errors);
    let (value, average) = (target["value"].is_null(), target["averageValue"].is_null());
    if value && average {
        errors.push(FieldError::required(
            format!("{at}.target.averageValue"),
            "must set either a target value for metric or a per-pod target",
        ));
    }
    if !value && !average {
        errors.push(FieldError::forbidden(
            format!("{at}.target.value"),
            "may not set both a target value for metric and a per-pod target",
        ));
    }
}

fn pods_source(s: &Value, at: &str, errors: &mut Vec<FieldError>) {
    metric_identifier(&s["metric"], &format!("{at}.metric"), errors);
    let target = &s["target"];
    metric_target(target, &format!("{at}.target"), errors);
    if target["averageValue"].is_null() {
        errors.push(FieldError::required(
            format!("{at}.target.averageValue"),
            "must specify a positive target averageValue",
        ));
    }
}

/// `Resource` and `ContainerResource` sources: the resource (and container) name, and a
/// utilization or an average value, not both.
fn resource_source(s: &Value, at: &str, container: bool, errors: &mut Vec<FieldError>) {
    let name = str_of(&s["name"]);
    if name.is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), "must specify a resource name"));
    } else if container {
        container_resource_name(name, &format!("{at}.name"), errors);
    }
    if container {
        let c = str_of(&s["container"]);
        if c.is_empty() {
            errors
                .push(FieldError::required(format!("{at}.container"), "must specify a container"));
        } else {
            for p in name_problems(c, NameRule::Label) {
                errors.push(FieldError::invalid(format!("{at}.container"), &s["container"], &p));
            }
        }
    }
    let target = &s["target"];
    metric_target(target, &format!("{at}.target"), errors);
    let (utilization, average) =
        (target["averageUtilization"].is_null(), target["averageValue"].is_null());
    if utilization && average {
        errors.push(FieldError::required(
            format!("{at}.target.averageUtilization"),
            "must set either a target raw value or a target utilization",
        ));
    }
    if !utilization && !average {
        errors.push(FieldError::forbidden(
            format!("{at}.target.averageValue"),
            "may not set both a target raw value and a target utilization",
        ));
    }
}

// ---------------------------------------------------------------------------------------
// rbac.authorization.k8s.io/v1.

/// `ValidateRole`: each rule (a Role's rules cannot name non-resource URLs).
pub fn role(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, rule) in items(&obj["rules"]).iter().enumerate() {
        policy_rule(rule, true, &format!("rules[{i}]"), &mut errors);
    }
    errors
}

/// `ValidateClusterRole`: each rule, and the aggregation rule's selectors.
pub fn cluster_role(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, rule) in items(&obj["rules"]).iter().enumerate() {
        policy_rule(rule, false, &format!("rules[{i}]"), &mut errors);
    }
    let aggregation = &obj["aggregationRule"];
    if aggregation.is_object() {
        let selectors = items(&aggregation["clusterRoleSelectors"]);
        if selectors.is_empty() {
            errors.push(FieldError::required(
                "aggregationRule.clusterRoleSelectors",
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ));
        }
        for (i, selector) in selectors.iter().enumerate() {
            let at = format!("aggregationRule.clusterRoleSelectors[{i}]");
            let problems = label_selector(&at, selector);
            // What the selector fails on also fails its conversion, whose nil result is
            // the bad value.
            let unusable = !problems.is_empty();
            errors.extend(problems);
            if unusable {
                errors.push(FieldError::invalid(&at, &json!("null"), "invalid label selector."));
            }
        }
    }
    errors
}

fn policy_rule(rule: &Value, namespaced: bool, at: &str, errors: &mut Vec<FieldError>) {
    let empty = |field: &str| items(&rule[field]).is_empty();
    if empty("verbs") {
        errors.push(FieldError::required(
            format!("{at}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    if !empty("nonResourceURLs") {
        let urls = go_string_slice(strings(&rule["nonResourceURLs"]).as_deref());
        if namespaced {
            errors.push(FieldError::invalid_shown(
                format!("{at}.nonResourceURLs"),
                &urls,
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !empty("apiGroups") || !empty("resources") || !empty("resourceNames") {
            errors.push(FieldError::invalid_shown(
                format!("{at}.nonResourceURLs"),
                &urls,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if empty("apiGroups") {
        errors.push(FieldError::required(
            format!("{at}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if empty("resources") {
        errors.push(FieldError::required(
            format!("{at}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
}

/// A binding's roleRef with its API group defaulted.
fn role_ref(obj: &Value) -> (&str, &str, &str) {
    let r = &obj["roleRef"];
    let group = match str_of(&r["apiGroup"]) {
        "" => RBAC_GROUP,
        g => g,
    };
    (group, str_of(&r["kind"]), str_of(&r["name"]))
}

fn binding(obj: &Value, old: Option<&Value>, kinds: &[&str], namespaced: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let (group, kind, name) = role_ref(obj);
    if group != RBAC_GROUP {
        errors.push(FieldError::unsupported("roleRef.apiGroup", &json!(group), &[RBAC_GROUP]));
    }
    if !kinds.contains(&kind) {
        errors.push(FieldError::unsupported("roleRef.kind", &json!(kind), kinds));
    }
    path_segment("roleRef.name", &json!(name), &mut errors);
    for (i, subject) in items(&obj["subjects"]).iter().enumerate() {
        binding_subject(subject, namespaced, &format!("subjects[{i}]"), &mut errors);
    }
    if let Some(old) = old {
        if role_ref(old) != (group, kind, name) {
            let shown = format!(
                "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
                go_quote(group),
                go_quote(kind),
                go_quote(name)
            );
            errors.push(FieldError::invalid_shown("roleRef", &shown, "cannot change roleRef"));
        }
    }
    errors
}

/// `ValidateRoleBindingSubject`, with the API group defaulted as upstream's v1 defaulting
/// does ("" for service accounts, the RBAC group for users and groups).
fn binding_subject(s: &Value, namespaced: bool, at: &str, errors: &mut Vec<FieldError>) {
    let name = str_of(&s["name"]);
    if name.is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), ""));
    }
    let kind = str_of(&s["kind"]);
    let group = match (str_of(&s["apiGroup"]), kind) {
        ("", "User" | "Group") => RBAC_GROUP,
        (g, _) => g,
    };
    match kind {
        "ServiceAccount" => {
            if !name.is_empty() {
                for p in name_problems(name, NameRule::Subdomain) {
                    errors.push(FieldError::invalid(format!("{at}.name"), &s["name"], &p));
                }
            }
            if !group.is_empty() {
                errors.push(FieldError::unsupported(
                    format!("{at}.apiGroup"),
                    &json!(group),
                    &[""],
                ));
            }
            if !namespaced && str_of(&s["namespace"]).is_empty() {
                errors.push(FieldError::required(format!("{at}.namespace"), ""));
            }
        }
        "User" | "Group" => {
            if group != RBAC_GROUP {
                errors.push(FieldError::unsupported(
                    format!("{at}.apiGroup"),
                    &json!(group),
                    &[RBAC_GROUP],
                ));
            }
        }
        _ => errors.push(FieldError::unsupported(
            format!("{at}.kind"),
            &json!(kind),
            &["ServiceAccount", "User", "Group"],
        )),
    }
}

/// `ValidateRoleBinding` (and its update: the roleRef is fixed).
pub fn role_binding(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    binding(obj, old, &["Role", "ClusterRole"], true)
}

/// `ValidateClusterRoleBinding`: only ClusterRoles, and service accounts need a namespace.
pub fn cluster_role_binding(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    binding(obj, old, &["ClusterRole"], false)
}

// ---------------------------------------------------------------------------------------
// v1 ResourceQuota.

const SCOPES: [&str; 6] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// `IsResourceQuotaScopeValidForResource`.
fn scope_fits(scope: &str, resource: &str) -> bool {
    const POD_COMPUTE: [&str; 6] =
        ["cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"];
    match scope {
        "BestEffort" => resource == "pods",
        s if SCOPES.contains(&s) => resource == "pods" || POD_COMPUTE.contains(&resource),
        _ => true,
    }
}

fn go_scopes(scopes: &Value) -> String {
    go_slice("core.ResourceQuotaScope", scopes, |s| go_quote(str_of(s)))
}

fn go_scope_selector(sel: &Value) -> String {
    const REQUIREMENT: &str = "core.ScopedResourceSelectorRequirement";
    let expressions = go_slice(REQUIREMENT, &sel["matchExpressions"], |e| {
        format!(
            "{REQUIREMENT}{{ScopeName:{}, Operator:{}, Values:{}}}",
            go_quote(str_of(&e["scopeName"])),
            go_quote(str_of(&e["operator"])),
            go_string_slice(strings(&e["values"]).as_deref())
        )
    });
    format!("core.ScopeSelector{{MatchExpressions:{expressions}}}")
}

fn conflicting(scopes: &[&str]) -> usize {
    [("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")]
        .iter()
        .filter(|(a, b)| scopes.contains(a) && scopes.contains(b))
        .count()
}

/// `ValidateResourceQuota` and its update: the hard limits' names and quantities, the
/// scopes (each fitting every standard resource limited) and the scope selector; an update
/// may not change the scopes.
pub fn resource_quota(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let mut errors = Vec::new();
    let hard = entries(&spec["hard"]);
    for (name, v) in &hard {
        let at = format!("spec.hard[{name}]");
        resource_name(name, &at, &mut errors);
        if !name.contains('/') && !is_standard_quota_resource(name) {
            errors.push(FieldError::invalid(
                &at,
                &json!(name),
                "must be a standard resource for quota",
            ));
        }
        quantity_value(name, v, &at, &mut errors);
    }
    let standard: Vec<&str> =
        hard.iter().map(|(k, _)| k.as_str()).filter(|k| is_standard_quota_resource(k)).collect();
    let scopes: Vec<&str> = items(&spec["scopes"]).iter().map(str_of).collect();
    if !scopes.is_empty() {
        let shown = go_scopes(&spec["scopes"]);
        for scope in &scopes {
            if !SCOPES.contains(scope) {
                errors.push(FieldError::invalid_shown("spec.scopes", &shown, "unsupported scope"));
            }
            for _ in standard.iter().filter(|r| !scope_fits(scope, r)) {
                errors.push(FieldError::invalid_shown(
                    "spec.scopes",
                    &shown,
                    "unsupported scope applied to resource",
                ));
            }
        }
        for _ in 0..conflicting(&scopes) {
            errors.push(FieldError::invalid_shown("spec.scopes", &shown, "conflicting scopes"));
        }
    }
    if spec["scopeSelector"].is_object() {
        scope_selector(spec, &standard, &mut errors);
    }
    if let Some(old) = old {
        let set = |v: &Value| {
            let mut s: Vec<String> = items(v).iter().map(|s| str_of(s).to_string()).collect();
            s.sort();
            s.dedup();
            s
        };
        if set(&spec["scopes"]) != set(&old["spec"]["scopes"]) {
            errors.push(FieldError::invalid_shown(
                "spec.scopes",
                &go_scopes(&spec["scopes"]),
                "field is immutable",
            ));
        }
    }
    errors
}

fn scope_selector(spec: &Value, standard: &[&str], errors: &mut Vec<FieldError>) {
    let selector = &spec["scopeSelector"];
    let at = "spec.scopeSelector.matchExpressions";
    let mut scopes: Vec<&str> = Vec::new();
    for e in items(&selector["matchExpressions"]) {
        let scope = str_of(&e["scopeName"]);
        if !SCOPES.contains(&scope) {
            errors.push(FieldError::invalid(
                format!("{at}.scopeName"),
                &json!(scope),
                "unsupported scope",
            ));
        }
        for _ in standard.iter().filter(|r| !scope_fits(scope, r)) {
            errors.push(FieldError::invalid_shown(
                at,
                &go_scope_selector(selector),
                "unsupported scope applied to resource",
            ));
        }
        let operator = str_of(&e["operator"]);
        let pod_scope = matches!(
            scope,
            "BestEffort"
                | "NotBestEffort"
                | "Terminating"
                | "NotTerminating"
                | "CrossNamespacePodAffinity"
        );
        if pod_scope && operator != "Exists" {
            errors.push(FieldError::invalid(
                format!("{at}.operator"),
                &json!(operator),
                "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            ));
        }
        let values = items(&e["values"]);
        match operator {
            "In" | "NotIn" if values.is_empty() => errors.push(FieldError::required(
                format!("{at}.values"),
                "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errors
                .push(FieldError::invalid_shown(
                format!("{at}.values"),
                &go_string_slice(strings(&e["values"]).as_deref()),
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => errors.push(FieldError::invalid(
                format!("{at}.operator"),
                &json!(operator),
                "not a valid selector operator",
            )),
        }
        scopes.push(scope);
    }
    for _ in 0..conflicting(&scopes) {
        errors.push(FieldError::invalid_shown(
            at,
            &go_scopes(&spec["scopes"]),
            "conflicting scopes",
        ));
    }
}

// ---------------------------------------------------------------------------------------
// v1 LimitRange.

/// One of a LimitRange item's resource maps, as `(name, quantity as sent)`.
type Limits = Map<String, Value>;

fn limits(v: &Value) -> Limits {
    v.as_object().cloned().unwrap_or_default()
}

/// `ValidateLimitRange`: each item's type (standard or qualified, no repeats), resource
/// names, and that min <= defaultRequest <= default <= max and the ratio fit. A Container
/// item's `default` is first filled from `max`, and its `defaultRequest` from `default` and
/// then `min`, as upstream's defaulting does.
pub fn limit_range(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, item) in items(&obj["spec"]["limits"]).iter().enumerate() {
        let at = format!("spec.limits[{i}]");
        let kind = str_of(&item["type"]);
        limit_type(kind, &format!("{at}.type"), &mut errors);
        if seen.contains(&kind) {
            errors.push(FieldError::duplicate(format!("{at}.type"), &json!(kind)));
        }
        seen.push(kind);
        let (max, min, ratio) =
            (limits(&item["max"]), limits(&item["min"]), limits(&item["maxLimitRequestRatio"]));
        let (mut default, mut default_request) =
            (limits(&item["default"]), limits(&item["defaultRequest"]));
        if kind == "Container" {
            for (k, v) in &max {
                default.entry(k.clone()).or_insert_with(|| v.clone());
            }
            for (k, v) in default.iter().chain(&min) {
                default_request.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        let name_check = |name: &str, at: &str, errors: &mut Vec<FieldError>| {
            if matches!(kind, "Pod" | "Container") {
                container_resource_name(name, at, errors);
            } else {
                resource_name(name, at, errors);
            }
        };
        for (field, map) in [("max", &max), ("min", &min)] {
            for k in map.keys() {
                name_check(k, &format!("{at}.{field}[{k}]"), &mut errors);
            }
        }
        if kind == "Pod" {
            for field in ["default", "defaultRequest"] {
                if item[field].as_object().is_some_and(|m| !m.is_empty()) {
                    errors.push(FieldError::forbidden(
                        format!("{at}.{field}"),
                        "may not be specified when `type` is 'Pod'",
                    ));
                }
            }
            default.clear();
            default_request.clear();
        } else {
            for (field, map) in [("default", &default), ("defaultRequest", &default_request)] {
                for k in map.keys() {
                    name_check(k, &format!("{at}.{field}[{k}]"), &mut errors);
                }
            }
        }
        if kind == "PersistentVolumeClaim"
            && !min.contains_key("storage")
            && !max.contains_key("storage")
        {
            errors.push(FieldError::required(
                format!("{at}.limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            ));
        }
        for k in ratio.keys() {
            name_check(k, &format!("{at}.maxLimitRequestRatio[{k}]"), &mut errors);
        }
        let mut keys: Vec<&String> = max
            .keys()
            .chain(min.keys())
            .chain(default.keys())
            .chain(default_request.keys())
            .collect();
        keys.extend(ratio.keys());
        keys.sort();
        keys.dedup();
        for k in keys {
            let get =
                |m: &Limits| m.get(k).and_then(|v| Quantity::parse(v).map(|q| (v.clone(), q)));
            let q = LimitQuantities {
                min: get(&min),
                max: get(&max),
                default: get(&default),
                request: get(&default_request),
                ratio: get(&ratio),
            };
            limit_relations(&q, k, &at, &mut errors);
        }
    }
    errors
}

type Found = Option<(Value, Quantity)>;

struct LimitQuantities {
    min: Found,
    max: Found,
    default: Found,
    request: Found,
    ratio: Found,
}

fn limit_relations(q: &LimitQuantities, k: &str, at: &str, errors: &mut Vec<FieldError>) {
    let c = |f: &(Value, Quantity)| f.1.canonical();
    let mut push = |field: &str, bad: &(Value, Quantity), detail: String| {
        errors.push(FieldError::invalid_shown(
            format!("{at}.{field}[{k}]"),
            &go_quantity(&bad.0, true),
            &detail,
        ));
    };
    // Each pair must be in order (lower <= upper); upstream reports the field named last, with
    // the value named third (its "bad value" is not always the field's own).
    let ordered: [(&Found, &str, &Found, &str, &str, &Found); 6] = [
        (&q.min, "min", &q.max, "max", "min", &q.min),
        (&q.min, "min", &q.request, "default request", "defaultRequest", &q.request),
        (&q.request, "default request", &q.max, "max", "defaultRequest", &q.request),
        (&q.request, "default request", &q.default, "default limit", "defaultRequest", &q.request),
        (&q.min, "min", &q.default, "default", "default", &q.min),
        (&q.default, "default", &q.max, "max", "default", &q.max),
    ];
    for (lower, lower_name, upper, upper_name, field, shown) in ordered {
        if let (Some(lo), Some(hi), Some(bad)) = (lower, upper, shown) {
            if lo.1.nanos > hi.1.nanos {
                let detail = format!(
                    "{lower_name} value {} is greater than {upper_name} value {}",
                    c(lo),
                    c(hi)
                );
                push(field, bad, detail);
            }
        }
    }
    if let Some(ratio) = &q.ratio {
        if ratio.1.nanos < NANOS {
            push("maxLimitRequestRatio", ratio, format!("ratio {} is less than 1", c(ratio)));
        }
        if let (Some(min), Some(max)) = (&q.min, &q.max) {
            const MAX_MILLI: i128 = (i64::MAX / 1000) as i128;
            let (r, lo, hi) = (units(&ratio.1), units(&min.1), units(&max.1));
            let (r, lo, hi) = if r < MAX_MILLI && lo < MAX_MILLI && hi < MAX_MILLI {
                (milli(&ratio.1) as f64 / 1000.0, milli(&min.1), milli(&max.1))
            } else {
                (r as f64, lo, hi)
            };
            let limit = hi as f64 / lo as f64;
            if r > limit {
                let detail =
                    format!("ratio {} is greater than max/min = {}", c(ratio), go_f(limit));
                push("maxLimitRequestRatio", ratio, detail);
            }
        }
    }
    // Resources that cannot be overcommitted: the default request is the default limit.
    let overcommit = is_native_resource(k) && !is_hugepages(k);
    if let (false, Some(default), Some(request)) = (overcommit, &q.default, &q.request) {
        if default.1.nanos != request.1.nanos {
            let detail = format!(
                "default value {} must equal to defaultRequest value {} in {k}",
                c(default),
                c(request)
            );
            push("defaultRequest", request, detail);
        }
    }
}

/// Go's `%f`.
fn go_f(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{f:.6}")
    }
}

fn limit_type(kind: &str, at: &str, errors: &mut Vec<FieldError>) {
    let value = json!(kind);
    let problems = qualified_name_problems(kind);
    if !problems.is_empty() {
        errors.extend(problems.iter().map(|p| FieldError::invalid(at, &value, p)));
        return;
    }
    if !kind.contains('/') && !matches!(kind, "Pod" | "Container" | "PersistentVolumeClaim") {
        errors.push(FieldError::invalid(
            at,
            &value,
            "must be a standard limit type or fully qualified",
        ));
    }
}

// ---------------------------------------------------------------------------------------
// scheduling.k8s.io/v1 PriorityClass.

const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;

/// `ValidatePriorityClass`, or on update only `ValidatePriorityClassUpdate` (value and
/// preemption policy fixed).
pub fn priority_class(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let value = obj["value"].as_i64().unwrap_or(0);
    // preemptionPolicy defaults to PreemptLowerPriority.
    let policy = |o: &Value| match &o["preemptionPolicy"] {
        Value::Null => json!("PreemptLowerPriority"),
        p => p.clone(),
    };
    if let Some(old) = old {
        if value != old["value"].as_i64().unwrap_or(0) {
            errors.push(FieldError::forbidden("value", "may not be changed in an update."));
        }
        if policy(obj) != policy(old) {
            errors.push(FieldError::invalid(
                "preemptionPolicy",
                &policy(obj),
                "field is immutable",
            ));
        }
        return errors;
    }
    let name = str_of(&obj["metadata"]["name"]);
    if name.starts_with("system-") {
        let global_default = obj["globalDefault"].as_bool().unwrap_or(false);
        let known = match name {
            "system-node-critical" => Some(2_000_001_000),
            "system-cluster-critical" => Some(2_000_000_000),
            _ => None,
        };
        let problem = match known {
            None => Some(format!("{name} is not a known system priority class")),
            Some(v) if v != value => Some(format!("value of {name} PriorityClass must be {v}")),
            Some(_) if global_default => {
                Some(format!("globalDefault of {name} PriorityClass must be false"))
            }
            Some(_) => None,
        };
        if let Some(problem) = problem {
            errors.push(FieldError::forbidden(
                "metadata.name",
                &format!("priority class names with 'system-' prefix are reserved for system use only. error: {problem}"),
            ));
        }
    } else if value > HIGHEST_USER_PRIORITY {
        errors.push(FieldError::forbidden(
            "value",
            &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        ));
    }
    match &obj["preemptionPolicy"] {
        Value::Null => {}
        p if p == "" => errors.push(FieldError::required("preemptionPolicy", "")),
        p => {
            errors.extend(one_of("preemptionPolicy", p, &["PreemptLowerPriority", "PreemptNever"]))
        }
    }
    errors
}

// ---------------------------------------------------------------------------------------
// v1 Namespace.

/// `ValidateNamespace`: the finalizer names (qualified, or one of the standard ones).
/// Upstream ignores spec changes in a plain update (only `/finalize` may change them), so
/// unchanged finalizers are not checked again.
pub fn namespace(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let finalizers = &obj["spec"]["finalizers"];
    if old.is_some_and(|o| &o["spec"]["finalizers"] == finalizers) {
        return errors;
    }
    for f in items(finalizers) {
        let name = str_of(f);
        for p in qualified_name_problems(name) {
            errors.push(FieldError::invalid("spec.finalizers", f, &p));
        }
        if !name.contains('/') && !matches!(name, "kubernetes" | "orphan" | "foregroundDeletion") {
            errors.push(FieldError::invalid(
                "spec.finalizers",
                f,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    // --- PodDisruptionBudget -----------------------------------------------------------

    fn pdb(spec: Value) -> Value {
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"}, "spec": spec})
    }

    #[test]
    fn pdbs_from_kubectl_are_valid() {
        // kubectl create pdb web --selector=app=web --min-available=1 / --max-unavailable=25%
        for spec in [
            json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}),
            json!({"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"}}}),
            json!({"minAvailable": "100%", "selector": {}, "unhealthyPodEvictionPolicy": "AlwaysAllow"}),
        ] {
            assert!(pod_disruption_budget(&pdb(spec.clone()), None).is_empty(), "{spec}");
        }
    }

    #[test]
    fn pdb_errors_read_like_upstream() {
        assert_eq!(
            lines(pod_disruption_budget(
                &pdb(json!({"minAvailable": 1, "maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}})),
                None
            )),
            ["spec: Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)(0xc000a1c000), Selector:(*v1.LabelSelector)(0xc000a1c000), MaxUnavailable:(*intstr.IntOrString)(0xc000a1c000), UnhealthyPodEvictionPolicy:(*policy.UnhealthyPodEvictionPolicyType)(nil)}: minAvailable and maxUnavailable cannot be both set"]
        );
        assert_eq!(
            lines(pod_disruption_budget(&pdb(json!({"minAvailable": -1})), None)),
            ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"]
        );
        assert_eq!(
            lines(pod_disruption_budget(&pdb(json!({"maxUnavailable": "half"})), None)),
            ["spec.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"half\"}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"]
        );
        assert_eq!(
            lines(pod_disruption_budget(&pdb(json!({"minAvailable": "150%"})), None)),
            ["spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}: must not be greater than 100%"]
        );
        assert_eq!(
            lines(pod_disruption_budget(
                &pdb(json!({"minAvailable": 1, "unhealthyPodEvictionPolicy": "Never"})),
                None
            )),
            ["spec.unhealthyPodEvictionPolicy: Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\""]
        );
        assert_eq!(
            lines(pod_disruption_budget(
                &pdb(json!({"minAvailable": 1, "selector": {"matchExpressions": [{"key": "app", "operator": "In"}]}})),
                None
            )),
            ["spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"]
        );
    }

    // --- HorizontalPodAutoscaler -------------------------------------------------------

    fn hpa(spec: Value) -> Value {
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"}, "spec": spec})
    }

    fn target() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"})
    }

    #[test]
    fn hpas_from_kubectl_and_docs_are_valid() {
        // kubectl autoscale deployment web --min=2 --max=5 --cpu-percent=80 (autoscaling/v1)
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": target(), "minReplicas": 2, "maxReplicas": 5,
                "targetCPUUtilizationPercentage": 80}});
        assert!(horizontal_pod_autoscaler(&v1, None).is_empty());
        let v2 = hpa(json!({"scaleTargetRef": target(), "minReplicas": 1, "maxReplicas": 10,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                {"type": "Pods", "pods": {"metric": {"name": "packets-per-second"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
                {"type": "Object", "object": {"metric": {"name": "requests-per-second"},
                    "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main-route"},
                    "target": {"type": "Value", "value": "10k"}}},
                {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "application",
                    "target": {"type": "Utilization", "averageUtilization": 60}}},
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300,
                "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
                "scaleUp": {"selectPolicy": "Max"}}}));
        assert!(horizontal_pod_autoscaler(&v2, None).is_empty());
        // No minReplicas (defaults to 1), no metrics (defaults to CPU).
        assert!(horizontal_pod_autoscaler(
            &hpa(json!({"scaleTargetRef": target(), "maxReplicas": 3})),
            None
        )
        .is_empty());
    }

    #[test]
    fn hpa_replica_bounds_and_target() {
        assert_eq!(
            lines(horizontal_pod_autoscaler(
                &hpa(json!({"scaleTargetRef": target(), "minReplicas": 0, "maxReplicas": 3})),
                None
            )),
            [
                "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
                "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
            ]
        );
        assert_eq!(
            lines(horizontal_pod_autoscaler(
                &hpa(json!({"scaleTargetRef": target(), "minReplicas": 5, "maxReplicas": 3})),
                None
            )),
            ["spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`"]
        );
        assert_eq!(
            lines(horizontal_pod_autoscaler(&hpa(json!({"scaleTargetRef": target(), "maxReplicas": 0})), None)),
            [
                "spec.maxReplicas: Invalid value: 0: must be greater than 0",
                "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`",
            ]
        );
        assert_eq!(
            lines(horizontal_pod_autoscaler(
                &hpa(json!({"scaleTargetRef": {"name": "a/b"}, "maxReplicas": 2})),
                None
            )),
            [
                "spec.scaleTargetRef.kind: Required value",
                "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'",
            ]
        );
        // An HPA that already scales to zero may keep doing so.
        let zero = hpa(json!({"scaleTargetRef": target(), "minReplicas": 0, "maxReplicas": 3,
            "metrics": [{"type": "External", "external": {"metric": {"name": "queue"},
                "target": {"type": "AverageValue", "averageValue": "30"}}}]}));
        assert!(horizontal_pod_autoscaler(&zero, Some(&zero)).is_empty());
    }

    #[test]
    fn hpa_v1_cpu_target_is_checked_as_its_metric() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": target(), "maxReplicas": 5, "targetCPUUtilizationPercentage": 0}});
        assert_eq!(
            lines(horizontal_pod_autoscaler(&v1, None)),
            ["spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"]
        );
    }

    #[test]
    fn hpa_metric_errors_read_like_upstream() {
        let with = |metric: Value| {
            lines(horizontal_pod_autoscaler(
                &hpa(json!({"scaleTargetRef": target(), "maxReplicas": 3, "metrics": [metric]})),
                None,
            ))
        };
        assert_eq!(
            with(json!({"type": "Cpu"})),
            [
                "spec.metrics[0].type: Unsupported value: \"Cpu\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
                "spec.metrics[0].type: Unsupported value: \"Cpu\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
            ]
        );
        assert_eq!(
            with(json!({"type": "Resource"})),
            ["spec.metrics[0].resource: Required value: must populate information for the given metric source"]
        );
        assert_eq!(
            with(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"averageUtilization": 50}}})),
            [
                "spec.metrics[0].resource.target.type: Required value: must specify a metric target type",
                "spec.metrics[0].resource.target.type: Invalid value: \"\": must be either Utilization, Value, or AverageValue",
            ]
        );
        assert_eq!(
            with(json!({"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue"}}})),
            ["spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or a target utilization"]
        );
        assert_eq!(
            with(json!({"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50, "averageValue": "100m"}}})),
            ["spec.metrics[0].resource.target.averageValue: Forbidden: may not set both a target raw value and a target utilization"]
        );
        assert_eq!(
            with(json!({"type": "External", "external": {"metric": {"name": "queue"},
                "target": {"type": "AverageValue", "averageValue": "0"}}})),
            ["spec.metrics[0].external.target.averageValue: Invalid value: resource.Quantity{i:resource.int64Amount{value:0, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"0\", Format:\"DecimalSI\"}: must be positive"]
        );
        assert_eq!(
            with(json!({"type": "Pods", "pods": {"metric": {}, "target": {"type": "Value", "value": "-500m"}}})),
            [
                "spec.metrics[0].pods.metric.name: Required value: must specify a metric name",
                "spec.metrics[0].pods.target.value: Invalid value: resource.Quantity{i:resource.int64Amount{value:-500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"-500m\", Format:\"DecimalSI\"}: must be positive",
                "spec.metrics[0].pods.target.averageValue: Required value: must specify a positive target averageValue",
            ]
        );
        assert_eq!(
            with(json!({"type": "Object", "object": {"metric": {"name": "rps"}, "describedObject": {"kind": "Ingress"},
                "target": {"type": "Value"}}})),
            [
                "spec.metrics[0].object.describedObject.name: Required value",
                "spec.metrics[0].object.target.averageValue: Required value: must set either a target value or averageValue",
            ]
        );
        assert_eq!(
            with(json!({"type": "Pods", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 5}}})),
            ["spec.metrics[0].pods: Required value: must populate information for the given metric source"]
        );
        assert_eq!(
            with(
                json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 5}},
                "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1"}}})
            ),
            ["spec.metrics[0].pods: Forbidden: must populate the given metric source only"]
        );
        assert_eq!(
            with(json!({"type": "ContainerResource", "containerResource": {"name": "gpu", "container": "App",
                "target": {"type": "Utilization", "averageUtilization": 5}}})),
            [
                "spec.metrics[0].containerResource.name: Invalid value: \"gpu\": must be a standard resource type or fully qualified",
                "spec.metrics[0].containerResource.name: Invalid value: \"gpu\": must be a standard resource for containers",
                "spec.metrics[0].containerResource.container: Invalid value: \"App\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ]
        );
    }

    #[test]
    fn hpa_behavior_errors_read_like_upstream() {
        let with = |behavior: Value| {
            lines(horizontal_pod_autoscaler(
                &hpa(json!({"scaleTargetRef": target(), "maxReplicas": 3, "behavior": behavior})),
                None,
            ))
        };
        assert_eq!(
            with(json!({"scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Fastest", "policies": []}})),
            [
                "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
                "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Fastest\": supported values: \"Disabled\", \"Max\", \"Min\"",
                "spec.behavior.scaleUp.policies: Required value: must specify at least one Policy",
            ]
        );
        assert_eq!(
            with(json!({"scaleDown": {"stabilizationWindowSeconds": -1,
                "policies": [{"type": "Replicas", "value": 0, "periodSeconds": 3600}]}})),
            [
                "spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: -1: must be greater than or equal to zero",
                "spec.behavior.scaleDown.policies[0].type: Unsupported value: \"Replicas\": supported values: \"Percent\", \"Pods\"",
                "spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero",
                "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 3600: must be less than or equal to 1800",
            ]
        );
    }

    // --- RBAC --------------------------------------------------------------------------

    #[test]
    fn rbac_objects_from_kubectl_are_valid() {
        // kubectl create role pod-reader --verb=get,list,watch --resource=pods
        let r = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "pod-reader", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]});
        assert!(role(&r, None).is_empty());
        // kubectl create clusterrole logs --verb=get --non-resource-url=/logs/*
        let cr = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "logs"}, "rules": [{"nonResourceURLs": ["/logs/*"], "verbs": ["get"]},
                {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"], "verbs": ["*"]}]});
        assert!(cluster_role(&cr, None).is_empty());
        let aggregated = json!({"metadata": {"name": "monitoring"}, "aggregationRule":
            {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}]}});
        assert!(cluster_role(&aggregated, None).is_empty());
        // kubectl create rolebinding admin --clusterrole=admin --user=bob --serviceaccount=ns:sa
        let rb = json!({"metadata": {"name": "admin", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"},
                {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}, {"kind": "Group", "name": "devs"}]});
        assert!(role_binding(&rb, None).is_empty());
        assert!(role_binding(&rb, Some(&rb)).is_empty());
        let crb = json!({"metadata": {"name": "admin"},
            "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]});
        assert!(cluster_role_binding(&crb, None).is_empty());
    }

    #[test]
    fn rbac_rule_errors_read_like_upstream() {
        let r = json!({"rules": [{"resources": ["pods"]}, {"nonResourceURLs": ["/healthz"], "verbs": ["get"]},
            {"apiGroups": [""], "verbs": ["get"]}]});
        assert_eq!(
            lines(role(&r, None)),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[1].nonResourceURLs: Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs",
                "rules[2].resources: Required value: resource rules must supply at least one resource",
            ]
        );
        let cr = json!({"rules": [{"nonResourceURLs": ["/metrics"], "resources": ["pods"], "verbs": ["get"]}],
            "aggregationRule": {"clusterRoleSelectors": []}});
        assert_eq!(
            lines(cluster_role(&cr, None)),
            [
                "rules[0].nonResourceURLs: Invalid value: []string{\"/metrics\"}: rules cannot apply to both regular resources and non-resource URLs",
                "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil",
            ]
        );
    }

    #[test]
    fn binding_errors_read_like_upstream() {
        let rb = json!({"roleRef": {"apiGroup": "rbac", "kind": "Clusterrole"},
            "subjects": [{"kind": "user", "name": "bob"}, {"kind": "ServiceAccount", "name": "Bad_SA", "apiGroup": "rbac.authorization.k8s.io"},
                {"kind": "Group", "apiGroup": "x"}]});
        assert_eq!(
            lines(role_binding(&rb, None)),
            [
                "roleRef.apiGroup: Unsupported value: \"rbac\": supported values: \"rbac.authorization.k8s.io\"",
                "roleRef.kind: Unsupported value: \"Clusterrole\": supported values: \"Role\", \"ClusterRole\"",
                "roleRef.name: Required value",
                "subjects[0].kind: Unsupported value: \"user\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
                "subjects[1].name: Invalid value: \"Bad_SA\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "subjects[1].apiGroup: Unsupported value: \"rbac.authorization.k8s.io\": supported values: \"\"",
                "subjects[2].name: Required value",
                "subjects[2].apiGroup: Unsupported value: \"x\": supported values: \"rbac.authorization.k8s.io\"",
            ]
        );
        let crb = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "default"}]});
        assert_eq!(
            lines(cluster_role_binding(&crb, None)),
            [
                "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "subjects[0].namespace: Required value",
            ]
        );
        let old = json!({"roleRef": {"kind": "ClusterRole", "name": "view"}});
        let new = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}});
        assert_eq!(
            lines(role_binding(&new, Some(&old))),
            ["roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: cannot change roleRef"]
        );
        // Only the defaulted apiGroup differs: no change.
        let same = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}});
        assert!(role_binding(&same, Some(&old)).is_empty());
    }

    // --- ResourceQuota -----------------------------------------------------------------

    fn quota(spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "q", "namespace": "default"}, "spec": spec})
    }

    #[test]
    fn quotas_from_kubectl_are_valid() {
        // kubectl create quota best-effort --hard=pods=100 --scopes=BestEffort
        assert!(resource_quota(
            &quota(json!({"hard": {"pods": "100"}, "scopes": ["BestEffort"]})),
            None
        )
        .is_empty());
        let q = quota(json!({"hard": {"cpu": "1", "memory": "1G", "pods": "2", "services": "3",
            "replicationcontrollers": "2", "resourcequotas": "1", "secrets": "5", "persistentvolumeclaims": "10",
            "requests.storage": "100Gi", "count/deployments.apps": "4", "requests.nvidia.com/gpu": "4",
            "limits.cpu": "2", "requests.memory": "512Mi"}}));
        assert!(resource_quota(&q, None).is_empty());
        let scoped = quota(json!({"hard": {"pods": "10", "cpu": "1"},
            "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}));
        assert!(resource_quota(&scoped, None).is_empty());
        assert!(resource_quota(&scoped, Some(&scoped)).is_empty());
    }

    #[test]
    fn quota_errors_read_like_upstream() {
        assert_eq!(
            lines(resource_quota(&quota(json!({"hard": {"pods": "-1", "cpus": "1", "storage": "1Gi", "services": "1.5"}})), None)),
            [
                "spec.hard[cpus]: Invalid value: \"cpus\": must be a standard resource type or fully qualified",
                "spec.hard[cpus]: Invalid value: \"cpus\": must be a standard resource for quota",
                "spec.hard[pods]: Invalid value: \"-1\": must be greater than or equal to 0",
                "spec.hard[services]: Invalid value: resource.Quantity{i:resource.int64Amount{value:15, scale:-1}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"\", Format:\"DecimalSI\"}: must be an integer",
                "spec.hard[storage]: Invalid value: \"storage\": must be a standard resource for quota",
            ]
        );
        assert_eq!(
            lines(resource_quota(
                &quota(json!({"hard": {"pods": "1"}, "scopes": ["BestEffort", "NotBestEffort", "Forever"]})),
                None
            )),
            [
                "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\", \"Forever\"}: unsupported scope",
                "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\", \"Forever\"}: conflicting scopes",
            ]
        );
        assert_eq!(
            lines(resource_quota(&quota(json!({"hard": {"memory": "1Gi"}, "scopes": ["BestEffort"]})), None)),
            ["spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: unsupported scope applied to resource"]
        );
        assert_eq!(
            lines(resource_quota(
                &quota(json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                    {"scopeName": "Terminating", "operator": "In", "values": ["x"]},
                    {"scopeName": "PriorityClass", "operator": "In"}]}})),
                None
            )),
            [
                "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
                "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            ]
        );
        let old = quota(json!({"hard": {"pods": "1"}}));
        assert_eq!(
            lines(resource_quota(&quota(json!({"hard": {"pods": "1"}, "scopes": ["Terminating"]})), Some(&old))),
            ["spec.scopes: Invalid value: []core.ResourceQuotaScope{\"Terminating\"}: field is immutable"]
        );
    }

    // --- LimitRange --------------------------------------------------------------------

    fn limit_range_of(item: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "LimitRange",
            "metadata": {"name": "limits", "namespace": "default"}, "spec": {"limits": [item]}})
    }

    #[test]
    fn typical_limit_ranges_are_valid() {
        let lr = json!({"spec": {"limits": [
            {"type": "Container", "default": {"cpu": "500m", "memory": "512Mi"},
                "defaultRequest": {"cpu": "250m", "memory": "256Mi"},
                "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m", "memory": "64Mi"},
                "maxLimitRequestRatio": {"cpu": "4"}},
            {"type": "Pod", "max": {"cpu": "4", "memory": "2Gi"}},
            {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}},
        ]}});
        assert!(limit_range(&lr, None).is_empty());
        // Only a max: default and defaultRequest are taken from it.
        assert!(limit_range(
            &limit_range_of(json!({"type": "Container", "max": {"cpu": "1"}})),
            None
        )
        .is_empty());
    }

    #[test]
    fn limit_range_errors_read_like_upstream() {
        assert_eq!(
            lines(limit_range(
                &limit_range_of(json!({"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}})),
                None
            )),
            [
                "spec.limits[0].min[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:2, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"2\", Format:\"DecimalSI\"}: min value 2 is greater than max value 1",
                "spec.limits[0].defaultRequest[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:1, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1\", Format:\"DecimalSI\"}: min value 2 is greater than default request value 1",
                "spec.limits[0].default[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:2, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"2\", Format:\"DecimalSI\"}: min value 2 is greater than default value 1",
            ]
        );
        assert_eq!(
            lines(limit_range(
                &limit_range_of(json!({"type": "Container", "default": {"memory": "256Mi"},
                    "defaultRequest": {"memory": "512Mi"}, "max": {"memory": "128Mi"}})),
                None
            )),
            [
                "spec.limits[0].defaultRequest[memory]: Invalid value: resource.Quantity{i:resource.int64Amount{value:536870912, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"512Mi\", Format:\"BinarySI\"}: default request value 512Mi is greater than max value 128Mi",
                "spec.limits[0].defaultRequest[memory]: Invalid value: resource.Quantity{i:resource.int64Amount{value:536870912, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"512Mi\", Format:\"BinarySI\"}: default request value 512Mi is greater than default limit value 256Mi",
                "spec.limits[0].default[memory]: Invalid value: resource.Quantity{i:resource.int64Amount{value:134217728, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"128Mi\", Format:\"BinarySI\"}: default value 256Mi is greater than max value 128Mi",
            ]
        );
        assert_eq!(
            lines(limit_range(
                &limit_range_of(json!({"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"},
                    "maxLimitRequestRatio": {"cpu": "500m"}})),
                None
            )),
            ["spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"500m\", Format:\"DecimalSI\"}: ratio 500m is less than 1"]
        );
        assert_eq!(
            lines(limit_range(
                &limit_range_of(json!({"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"},
                    "maxLimitRequestRatio": {"cpu": "3"}})),
                None
            )),
            ["spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:3, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"3\", Format:\"DecimalSI\"}: ratio 3 is greater than max/min = 2.000000"]
        );
        assert_eq!(
            lines(limit_range(
                &limit_range_of(
                    json!({"type": "Pod", "max": {"cpu": "1"}, "default": {"cpu": "1"}})
                ),
                None
            )),
            ["spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"]
        );
        assert_eq!(
            lines(limit_range(&limit_range_of(json!({"type": "PersistentVolumeClaim", "max": {"cpu": "1"}})), None)),
            ["spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither was provided"]
        );
        assert_eq!(
            lines(limit_range(&limit_range_of(json!({"type": "Node", "max": {"cpus": "1"}})), None)),
            [
                "spec.limits[0].type: Invalid value: \"Node\": must be a standard limit type or fully qualified",
                "spec.limits[0].max[cpus]: Invalid value: \"cpus\": must be a standard resource type or fully qualified",
            ]
        );
        let two = json!({"spec": {"limits": [{"type": "Pod"}, {"type": "Pod"}]}});
        assert_eq!(
            lines(limit_range(&two, None)),
            ["spec.limits[1].type: Duplicate value: \"Pod\""]
        );
        assert_eq!(
            lines(limit_range(
                &limit_range_of(json!({"type": "Container", "default": {"example.com/gpu": "2"},
                    "defaultRequest": {"example.com/gpu": "1"}})),
                None
            )),
            ["spec.limits[0].defaultRequest[example.com/gpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:1, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1\", Format:\"DecimalSI\"}: default value 2 must equal to defaultRequest value 1 in example.com/gpu"]
        );
    }

    #[test]
    fn quantities_print_as_go_structs() {
        let shown = |v: Value, stringified| go_quantity(&v, stringified);
        assert_eq!(
            shown(json!("1000"), false),
            "resource.Quantity{i:resource.int64Amount{value:1000, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"\", Format:\"DecimalSI\"}"
        );
        assert_eq!(
            shown(json!("1000"), true),
            "resource.Quantity{i:resource.int64Amount{value:1000, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1k\", Format:\"DecimalSI\"}"
        );
        assert_eq!(
            shown(json!("2G"), false),
            "resource.Quantity{i:resource.int64Amount{value:2, scale:9}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"2G\", Format:\"DecimalSI\"}"
        );
        assert_eq!(
            shown(json!("400Mi"), false),
            "resource.Quantity{i:resource.int64Amount{value:419430400, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"\", Format:\"BinarySI\"}"
        );
        assert_eq!(
            shown(json!("0.5Gi"), false),
            "resource.Quantity{i:resource.int64Amount{value:0, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(0xc000a1c000)}, s:\"\", Format:\"BinarySI\"}"
        );
    }

    // --- PriorityClass -----------------------------------------------------------------

    fn pc(name: &str, extra: Value) -> Value {
        let mut obj = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": 1000});
        for (k, v) in extra.as_object().into_iter().flatten() {
            obj[k] = v.clone();
        }
        obj
    }

    #[test]
    fn priority_classes_from_kubectl_are_valid() {
        // kubectl create priorityclass high --value=1000 --description="high priority"
        let high = pc(
            "high",
            json!({"globalDefault": false, "description": "high priority",
            "preemptionPolicy": "PreemptLowerPriority"}),
        );
        assert!(priority_class(&high, None).is_empty());
        assert!(priority_class(&pc("low", json!({"preemptionPolicy": "PreemptNever"})), None)
            .is_empty());
        let system = pc("system-node-critical", json!({"value": 2000001000}));
        assert!(priority_class(&system, None).is_empty());
        // Absent preemptionPolicy reads as its default.
        assert!(priority_class(&high, Some(&pc("high", json!({})))).is_empty());
    }

    #[test]
    fn priority_class_errors_read_like_upstream() {
        assert_eq!(
            lines(priority_class(&pc("huge", json!({"value": 2000000000})), None)),
            ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
        );
        assert_eq!(
            lines(priority_class(&pc("system-high", json!({})), None)),
            ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-high is not a known system priority class"]
        );
        assert_eq!(
            lines(priority_class(&pc("system-cluster-critical", json!({})), None)),
            ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-cluster-critical PriorityClass must be 2000000000"]
        );
        assert_eq!(
            lines(priority_class(&pc("p", json!({"preemptionPolicy": "Always"})), None)),
            ["preemptionPolicy: Unsupported value: \"Always\": supported values: \"PreemptLowerPriority\", \"PreemptNever\""]
        );
        assert_eq!(
            lines(priority_class(
                &pc("p", json!({"value": 5, "preemptionPolicy": "PreemptNever"})),
                Some(&pc("p", json!({})))
            )),
            [
                "value: Forbidden: may not be changed in an update.",
                "preemptionPolicy: Invalid value: \"PreemptNever\": field is immutable",
            ]
        );
    }

    // --- Namespace ---------------------------------------------------------------------

    #[test]
    fn namespace_finalizers() {
        let ns = |f: Value| json!({"metadata": {"name": "dev"}, "spec": {"finalizers": f}});
        assert!(namespace(&ns(json!(["kubernetes", "example.com/cleanup"])), None).is_empty());
        assert_eq!(
            lines(namespace(&ns(json!(["cleanup", "a/b/c"])), None)),
            [
                "spec.finalizers: Invalid value: \"cleanup\": name is neither a standard finalizer name nor is it fully qualified",
                "spec.finalizers: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            ]
        );
        let bad = ns(json!(["cleanup"]));
        assert!(namespace(&bad, Some(&bad)).is_empty());
    }
}
