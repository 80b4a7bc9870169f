//! ResourceQuotas: the hard limits (standard quota resources or qualified names, with
//! non-negative quantities), scopes and scope selectors and what they may be combined
//! with, with upstream's (v1.33) messages and field paths (`ValidateResourceQuota[Update]`).

use serde_json::{json, Value};

use crate::gofmt::{go_quote, go_slice, go_string_slice};
use crate::validation::values::{
    is_standard_quota_resource, items, quantity_value, resource_name, str_of, strings,
};
use crate::validation::FieldError;

fn entries(v: &Value) -> Vec<(&String, &Value)> {
    let mut all: Vec<(&String, &Value)> = v.as_object().into_iter().flatten().collect();
    all.sort_by(|a, b| a.0.cmp(b.0));
    all
}

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
    resource_list("spec.hard", &spec["hard"], &mut errors);
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

/// `ValidateResourceQuotaStatusUpdate`: the names and quantities of `status.hard` and
/// `status.used`, as the spec's (a write through `/status`).
pub fn resource_quota_status(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    resource_list("status.hard", &obj["status"]["hard"], &mut errors);
    resource_list("status.used", &obj["status"]["used"], &mut errors);
    errors
}

/// `ValidateResourceQuotaResourceName` and `ValidateResourceQuantityValue` of each entry of a
/// resource list at `at`, in name order.
fn resource_list(at: &str, list: &Value, errors: &mut Vec<FieldError>) {
    for (name, v) in entries(list) {
        let at = format!("{at}[{name}]");
        resource_name(name, &at, errors);
        if !name.contains('/') && !is_standard_quota_resource(name) {
            errors.push(FieldError::invalid(
                &at,
                &json!(name),
                "must be a standard resource for quota",
            ));
        }
        quantity_value(name, v, &at, errors);
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    #[test]
    fn status_writes_check_hard_and_used() {
        let status = |hard: Value, used: Value| json!({"status": {"hard": hard, "used": used}});
        let fine = status(json!({"cpu": "1", "count/deployments.apps": "2"}), json!({"cpu": "0"}));
        assert!(resource_quota_status(&fine).is_empty());
        assert_eq!(
            lines(resource_quota_status(&status(json!({"cpu": "-1"}), json!({"bogus": "1"})))),
            [
                "status.hard[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
                "status.used[bogus]: Invalid value: \"bogus\": must be a standard resource type or fully qualified",
                "status.used[bogus]: Invalid value: \"bogus\": must be a standard resource for quota",
            ]
        );
    }

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
}
