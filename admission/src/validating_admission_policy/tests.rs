//! Policies and bindings over a snapshot of the cluster, against requests built here.

use serde_json::json;

use super::*;
use crate::attributes::{
    GroupVersionKind, GroupVersionResource, Operation, OperationOptions, UserInfo,
};
use crate::state::Snapshot;

fn policy(name: &str, spec: Json) -> Json {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
           "metadata": {"name": name, "resourceVersion": "1"}, "spec": spec})
}

fn binding(name: &str, spec: Json) -> Json {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
           "metadata": {"name": name, "resourceVersion": "1"}, "spec": spec})
}

fn deployments_rule() -> Json {
    json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                              "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]})
}

fn replica_limit() -> Json {
    policy(
        "replica-limit",
        json!({
            "failurePolicy": "Fail",
            "matchConstraints": deployments_rule(),
            "validations": [{"expression": "object.spec.replicas <= 5"}],
        }),
    )
}

fn state(objects: Vec<(&str, &str, Json)>) -> Snapshot {
    let mut s = Snapshot::default()
        .with("", "namespaces", json!({"metadata": {"name": "default", "labels": {"env": "prod"}}}))
        .with("", "namespaces", json!({"metadata": {"name": "dev", "labels": {"env": "dev"}}}));
    for (group, resource, object) in objects {
        s = s.with(group, resource, object);
    }
    s
}

const VAP: &str = "admissionregistration.k8s.io";

async fn admit(
    state: &Snapshot,
    namespace: &str,
    replicas: i64,
) -> (Result<(), AdmissionError>, Vec<String>) {
    let (result, warnings, _) = admit_audited(state, namespace, replicas).await;
    (result, warnings)
}

/// [`admit`], with the audit annotations left: (key, value), all at level Metadata.
async fn admit_audited(
    state: &Snapshot,
    namespace: &str,
    replicas: i64,
) -> (Result<(), AdmissionError>, Vec<String>, Vec<(String, String)>) {
    let mut deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace, "labels": {"app": "web"}},
        "spec": {"replicas": replicas}});
    let groups = vec!["system:authenticated".to_string()];
    let a = Attributes {
        operation: Operation::Create,
        user: UserInfo { name: "alice", uid: "", groups: &groups, extra: None },
        resource: GroupVersionResource { group: "apps", version: "v1", resource: "deployments" },
        subresource: "",
        kind: GroupVersionKind { group: "apps", version: "v1", kind: "Deployment" },
        namespace,
        name: "web",
        object: Some(&mut deployment),
        old_object: None,
        dry_run: false,
        options: OperationOptions::None,
        warnings: Default::default(),
        audit_annotations: Default::default(),
    };
    let plugin = ValidatingAdmissionPolicy::new(AuthorizerSlot::default());
    let result = plugin.validate(&a, state).await;
    let annotations = a.audit_annotations.take();
    assert!(annotations.iter().all(|x| x.level == crate::AuditLevel::Metadata));
    (result, a.warnings.take(), annotations.into_iter().map(|x| (x.key, x.value)).collect())
}

#[tokio::test]
async fn a_deny_binding_refuses_what_the_policy_does_not_allow() {
    let s = state(vec![
        (VAP, "validatingadmissionpolicies", replica_limit()),
        (
            VAP,
            "validatingadmissionpolicybindings",
            binding(
                "limit-all",
                json!({
            "policyName": "replica-limit", "validationActions": ["Deny"]}),
            ),
        ),
    ]);
    assert!(admit(&s, "default", 3).await.0.is_ok());
    let refused = admit(&s, "default", 6).await.0.unwrap_err();
    let text = "ValidatingAdmissionPolicy 'replica-limit' with binding 'limit-all' denied request: failed expression: object.spec.replicas <= 5";
    assert_eq!(refused.to_string(), format!("deployments.apps \"web\" is forbidden: {text}"));
    let AdmissionError::Refused(r) = refused else { panic!() };
    assert_eq!((r.code, r.reason, r.resource.as_str()), (422, "Invalid", "deployments"));
    assert_eq!(r.causes[0].message, text);
}

#[tokio::test]
async fn warn_and_audit_bindings_let_the_request_through() {
    let s = state(vec![
        (VAP, "validatingadmissionpolicies", replica_limit()),
        (
            VAP,
            "validatingadmissionpolicybindings",
            binding(
                "warn",
                json!({
            "policyName": "replica-limit", "validationActions": ["Warn", "Audit"]}),
            ),
        ),
    ]);
    let (result, warnings) = admit(&s, "default", 6).await;
    assert!(result.is_ok());
    assert_eq!(warnings, ["Validation failed for ValidatingAdmissionPolicy 'replica-limit' with binding 'warn': failed expression: object.spec.replicas <= 5"]);
}

#[tokio::test]
async fn params_come_from_the_bindings_param_ref() {
    let p = policy(
        "param-limit",
        json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": deployments_rule(),
            "validations": [{"expression": "object.spec.replicas <= int(params.data.maxReplicas)",
                              "messageExpression": "'replicas must be at most ' + params.data.maxReplicas",
                              "reason": "Forbidden"}],
        }),
    );
    let b = binding(
        "param-binding",
        json!({"policyName": "param-limit", "validationActions": ["Deny"],
        "paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}}),
    );
    let limits = json!({"metadata": {"name": "limits", "namespace": "default"}, "data": {"maxReplicas": "2"}});
    let s = state(vec![
        (VAP, "validatingadmissionpolicies", p.clone()),
        (VAP, "validatingadmissionpolicybindings", b.clone()),
        ("", "configmaps", limits),
    ]);
    assert!(admit(&s, "default", 2).await.0.is_ok());
    let refused = admit(&s, "default", 3).await.0.unwrap_err();
    assert!(
        refused.to_string().ends_with("denied request: replicas must be at most 2"),
        "{refused}"
    );
    assert!(
        matches!(refused, AdmissionError::Refused(r) if r.code == 403 && r.reason == "Forbidden")
    );
    // Without the parameter object, the binding refuses.
    let s = state(vec![
        (VAP, "validatingadmissionpolicies", p),
        (VAP, "validatingadmissionpolicybindings", b),
    ]);
    let refused = admit(&s, "default", 1).await.0.unwrap_err();
    assert!(refused.to_string().ends_with("denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"), "{refused}");
}

#[tokio::test]
async fn selectors_variables_match_conditions_and_failure_policies() {
    let p = policy(
        "p",
        json!({
            "matchConstraints": {"namespaceSelector": {"matchLabels": {"env": "prod"}}, "resourceRules": deployments_rule()["resourceRules"]},
            "variables": [{"name": "replicas", "expression": "object.spec.replicas"},
                          {"name": "many", "expression": "variables.replicas > 4"}],
            "matchConditions": [{"name": "web-only", "expression": "object.metadata.name == 'web'"}],
            "validations": [{"expression": "!variables.many", "message": "too many"}],
        }),
    );
    let b = binding("b", json!({"policyName": "p", "validationActions": ["Deny"]}));
    let s = state(vec![
        (VAP, "validatingadmissionpolicies", p),
        (VAP, "validatingadmissionpolicybindings", b.clone()),
    ]);
    let refused = admit(&s, "default", 6).await.0.unwrap_err();
    assert!(refused.to_string().ends_with("denied request: too many"), "{refused}");
    assert!(admit(&s, "dev", 6).await.0.is_ok(), "the namespace selector leaves dev out");

    let failing = |failure_policy: &str| {
        policy(
            "p",
            json!({
                "failurePolicy": failure_policy,
                "matchConstraints": deployments_rule(),
                "validations": [{"expression": "object.spec.missing > 1"}],
            }),
        )
    };
    let s = state(vec![
        (VAP, "validatingadmissionpolicies", failing("Fail")),
        (VAP, "validatingadmissionpolicybindings", b.clone()),
    ]);
    let refused = admit(&s, "default", 1).await.0.unwrap_err();
    assert!(refused.to_string().ends_with("denied request: expression 'object.spec.missing > 1' resulted in error: no such key: missing"), "{refused}");
    let s = state(vec![
        (VAP, "validatingadmissionpolicies", failing("Ignore")),
        (VAP, "validatingadmissionpolicybindings", b),
    ]);
    assert!(admit(&s, "default", 1).await.0.is_ok());
}

#[tokio::test]
async fn requests_the_rules_do_not_cover_pass() {
    let p = policy(
        "pods-only",
        json!({
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"], "resources": ["pods"]}]},
            "validations": [{"expression": "false"}],
        }),
    );
    let b = binding("b", json!({"policyName": "pods-only", "validationActions": ["Deny"]}));
    let s = state(vec![
        (VAP, "validatingadmissionpolicies", p),
        (VAP, "validatingadmissionpolicybindings", b),
    ]);
    assert!(admit(&s, "default", 100).await.0.is_ok());
}

#[tokio::test]
async fn a_bindings_match_resources_without_rules_narrows_by_its_selectors_only() {
    let b = binding(
        "prod-only",
        json!({"policyName": "replica-limit", "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"env": "prod"}}}}),
    );
    let s = state(vec![
        (VAP, "validatingadmissionpolicies", replica_limit()),
        (VAP, "validatingadmissionpolicybindings", b),
    ]);
    assert!(admit(&s, "default", 6).await.0.is_err());
    assert!(admit(&s, "dev", 6).await.0.is_ok());
}

#[tokio::test]
async fn an_equivalent_match_sees_the_object_in_the_rules_version() {
    let rules = |match_policy: &str| {
        json!({"matchPolicy": match_policy, "resourceRules": [{"apiGroups": ["autoscaling"],
            "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["horizontalpodautoscalers"]}]})
    };
    let limit = |name: &str, match_policy: &str| {
        policy(
            name,
            json!({"matchConstraints": rules(match_policy), "validations": [{
                "expression": "object.apiVersion == 'autoscaling/v1' && object.spec.targetCPUUtilizationPercentage <= 40",
                "messageExpression": "string(object.spec.targetCPUUtilizationPercentage) + ' as ' + request.kind.version + '/' + request.resource.version + ' of ' + request.requestKind.version + '/' + request.requestResource.version"}]}),
        )
    };
    let bound =
        |name: &str| binding(name, json!({"policyName": name, "validationActions": ["Deny"]}));
    let s = state(vec![
        (VAP, "validatingadmissionpolicies", limit("equivalent", "Equivalent")),
        (VAP, "validatingadmissionpolicies", limit("exact", "Exact")),
        (VAP, "validatingadmissionpolicybindings", bound("equivalent")),
        (VAP, "validatingadmissionpolicybindings", bound("exact")),
    ]);
    let mut hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h", "namespace": "default"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d", "apiVersion": "apps/v1"},
                 "maxReplicas": 3,
                 "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                     "target": {"type": "Utilization", "averageUtilization": 50}}}]}});
    let sent = hpa.clone();
    let groups = vec!["system:authenticated".to_string()];
    let a = Attributes {
        operation: Operation::Create,
        user: UserInfo { name: "alice", uid: "", groups: &groups, extra: None },
        resource: GroupVersionResource {
            group: "autoscaling",
            version: "v2",
            resource: "horizontalpodautoscalers",
        },
        subresource: "",
        kind: GroupVersionKind {
            group: "autoscaling",
            version: "v2",
            kind: "HorizontalPodAutoscaler",
        },
        namespace: "default",
        name: "h",
        object: Some(&mut hpa),
        old_object: None,
        dry_run: false,
        options: OperationOptions::None,
        warnings: Default::default(),
        audit_annotations: Default::default(),
    };
    let plugin = ValidatingAdmissionPolicy::new(AuthorizerSlot::default());
    let refused = plugin.validate(&a, &s).await.unwrap_err().to_string();
    // Only the Equivalent policy matched, and saw a v1 object; the request is left as sent.
    assert!(
        refused.ends_with("ValidatingAdmissionPolicy 'equivalent' with binding 'equivalent' denied request: 50 as v1/v1 of v2/v2"),
        "{refused}"
    );
    assert_eq!(a.object.as_deref(), Some(&sent));
}

const FAILURE_KEY: &str = "validation.policy.admission.k8s.io/validation_failure";

#[tokio::test]
async fn audit_bindings_annotate_the_first_failure_and_policies_their_audit_annotations() {
    let p = policy(
        "limits",
        json!({
            "failurePolicy": "Fail",
            "matchConstraints": deployments_rule(),
            "validations": [{"expression": "object.spec.replicas >= 0"},
                            {"expression": "object.spec.replicas <= 5", "message": "at most 5 <replicas>"},
                            {"expression": "object.spec.replicas <= 3"}],
            "auditAnnotations": [
                {"key": "replicas", "valueExpression": "'  replicas: ' + string(object.spec.replicas) + ' '"},
                {"key": "absent", "valueExpression": "null"},
                {"key": "blank", "valueExpression": "'   '"},
            ],
        }),
    );
    let audit =
        binding("audit", json!({"policyName": "limits", "validationActions": ["Warn", "Audit"]}));
    let s = state(vec![
        (VAP, "validatingadmissionpolicies", p),
        (VAP, "validatingadmissionpolicybindings", audit),
    ]);
    let (result, warnings, annotations) = admit_audited(&s, "default", 6).await;
    assert!(result.is_ok());
    assert_eq!(warnings.len(), 2);
    // Both failures are audited under one key: the first is kept.
    assert_eq!(
        annotations,
        [
            (FAILURE_KEY.to_string(), r#"[{"message":"at most 5 \u003creplicas\u003e","policy":"limits","binding":"audit","expressionIndex":1,"validationActions":["Warn","Audit"]}]"#.to_string()),
            ("limits/replicas".to_string(), "replicas: 6".to_string()),
        ]
    );
    // Passing: only the policy's annotations.
    let (result, _, annotations) = admit_audited(&s, "default", 2).await;
    assert!(result.is_ok());
    assert_eq!(annotations, [("limits/replicas".to_string(), "replicas: 2".to_string())]);
}

#[tokio::test]
async fn one_key_from_several_bindings_joins_their_distinct_values() {
    let p = policy(
        "by-param",
        json!({
            "matchConstraints": deployments_rule(),
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "validations": [{"expression": "object.spec.replicas <= int(params.data.max)"}],
            "auditAnnotations": [{"key": "limit", "valueExpression": "params.data.max"},
                                 {"key": "count", "valueExpression": "string(object.spec.replicas)"}],
        }),
    );
    let params = |name: &str, max: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "default"}, "data": {"max": max}})
    };
    let bind = |name: &str, param: &str, actions: Json| {
        binding(
            name,
            json!({"policyName": "by-param", "validationActions": actions,
                             "paramRef": {"name": param, "namespace": "default"}}),
        )
    };
    let s = state(vec![
        (VAP, "validatingadmissionpolicies", p),
        ("", "configmaps", params("low", "2")),
        ("", "configmaps", params("high", "9")),
        ("", "configmaps", params("same", "9")),
        (VAP, "validatingadmissionpolicybindings", bind("a-low", "low", json!(["Deny"]))),
        (VAP, "validatingadmissionpolicybindings", bind("b-high", "high", json!(["Audit"]))),
        (VAP, "validatingadmissionpolicybindings", bind("c-same", "same", json!(["Audit"]))),
    ]);
    let (result, _, mut annotations) = admit_audited(&s, "default", 4).await;
    // Refused by the Deny binding, and annotated all the same.
    assert!(result.unwrap_err().to_string().contains("with binding 'a-low' denied request"));
    annotations.sort();
    assert_eq!(
        annotations,
        [
            ("by-param/count".to_string(), "4".to_string()),
            ("by-param/limit".to_string(), "2, 9".to_string()),
        ]
    );
}

#[tokio::test]
async fn audit_annotations_that_fail_refuse_whatever_the_actions() {
    let p = |failure_policy: &str| {
        policy(
            "typed",
            json!({
                "failurePolicy": failure_policy,
                "matchConstraints": deployments_rule(),
                "validations": [{"expression": "true"}],
                "auditAnnotations": [{"key": "n", "valueExpression": "object.spec.replicas"},
                                     {"key": "m", "valueExpression": "object.spec.missing"}],
            }),
        )
    };
    let audit_only = binding("b", json!({"policyName": "typed", "validationActions": ["Audit"]}));
    for failure_policy in ["Fail", "Ignore"] {
        let s = state(vec![
            (VAP, "validatingadmissionpolicies", p(failure_policy)),
            (VAP, "validatingadmissionpolicybindings", audit_only.clone()),
        ]);
        let (result, _, annotations) = admit_audited(&s, "default", 2).await;
        let refused = result.unwrap_err().to_string();
        // A value of the wrong type refuses under either policy; one that cannot be evaluated
        // only under Fail.
        assert!(refused.ends_with("ValidatingAdmissionPolicy 'typed' with binding 'b' denied request: valueExpression 'object.spec.replicas' resulted in unsupported return type: int. Return type must be either string or null."), "{refused}");
        assert!(annotations.is_empty());
    }
}

#[tokio::test]
async fn a_binding_that_cannot_be_used_refuses_whatever_its_actions_unless_ignored() {
    let p = |failure_policy: &str| {
        policy(
            "param-limit",
            json!({
                "failurePolicy": failure_policy,
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConstraints": deployments_rule(),
                "validations": [{"expression": "object.spec.replicas <= int(params.data.max)"}],
            }),
        )
    };
    // Audit only, and the parameter object is missing: upstream's configuration error.
    let b = binding(
        "audit-only",
        json!({"policyName": "param-limit", "validationActions": ["Audit", "Warn"],
               "paramRef": {"name": "gone", "namespace": "default", "parameterNotFoundAction": "Deny"}}),
    );
    let s = state(vec![
        (VAP, "validatingadmissionpolicies", p("Fail")),
        (VAP, "validatingadmissionpolicybindings", b.clone()),
    ]);
    let (result, warnings, annotations) = admit_audited(&s, "default", 1).await;
    let refused = result.unwrap_err().to_string();
    assert!(refused.ends_with("ValidatingAdmissionPolicy 'param-limit' with binding 'audit-only' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"), "{refused}");
    // Neither warned nor audited: it is no validation's failure.
    assert!(warnings.is_empty() && annotations.is_empty(), "{warnings:?} {annotations:?}");
    let s = state(vec![
        (VAP, "validatingadmissionpolicies", p("Ignore")),
        (VAP, "validatingadmissionpolicybindings", b),
    ]);
    assert_eq!(admit_audited(&s, "default", 1).await, (Ok(()), vec![], vec![]));
}
