//! ValidatingAdmissionPolicies as stock kubectl meets them: a policy bound with `Deny`
//! refuses a Deployment over a replica limit with upstream's message, a `Warn` binding
//! lets it through with kubectl's `Warning:` line, and a policy reads its limit from a
//! ConfigMap named by the binding's `paramRef`. Under `matchPolicy: Equivalent` a policy
//! whose rule names a custom resource's v1 sees a v2 request's object converted to v1 (by
//! the definition's conversion webhook, written here: v1's `spec.replicas` is v2's
//! `spec.count`), with `request.kind` naming v1 and `request.requestKind` v2; `Exact` lets
//! the v2 request by; a conversion that fails obeys the policy's failure policy. Admission
//! webhooks with a v1 rule see the same conversion (one mechanism): a validating one gets
//! the v1 object, a mutating one's v1 patch is converted back to v2. Expressions are
//! compiled when policies and webhook configurations are written, and the policy status
//! controller reports expressions that do not type-check against the matched kinds'
//! schemas in the policy's `status.typeChecking`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rkube_conformance::cluster::{stderr_of, stdout_of, RkubeServer};
use rkube_conformance::webhook::{Answer, Handler, TestCa, WebhookServer};
use serde_json::{json, Value};

const POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: demo-policy.example.com
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= 5"
"#;

fn binding(name: &str, policy: &str, actions: &str, extra: &str) -> String {
    format!(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {name}
spec:
  policyName: {policy}
  validationActions: [{actions}]
  matchResources:
    namespaceSelector:
      matchLabels:
        environment: test
{extra}"#
    )
}

fn deployment(name: &str, replicas: u32) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: c, image: registry.invalid/none}}]
"#
    )
}

/// Applies `manifest` until the server refuses it (a new policy or binding reaches the
/// admission chain through the watch caches, within moments); the refusal's text.
fn refused_soon(s: &RkubeServer, args: &[&str], manifest: &str) -> String {
    let mut last = String::new();
    s.wait_until("the policy refuses", Duration::from_secs(20), || {
        let out = s.kubectl_with(&s.kubectl, args, Some(manifest));
        last = format!("{}{}", stdout_of(&out), stderr_of(&out));
        if out.status.success() {
            // Taken before the policy was seen: take it back and try again.
            s.kubectl(&["delete", "deployment", "--all", "-n", "test", "--wait=false"]);
            return (false, last.clone());
        }
        (true, last.clone())
    });
    last
}

#[test]
fn policies_refuse_warn_and_read_params_as_upstream() {
    let s = RkubeServer::start();
    s.ok(&["create", "namespace", "test"]);
    s.ok(&["label", "namespace", "test", "environment=test"]);
    s.ok_stdin(&["apply", "-f", "-"], POLICY);
    s.ok_stdin(
        &["apply", "-f", "-"],
        &binding("demo-binding-test.example.com", "demo-policy.example.com", "Deny", ""),
    );

    let refused = refused_soon(&s, &["apply", "-n", "test", "-f", "-"], &deployment("nginx", 6));
    assert!(
        refused.contains(r#"The deployments "nginx" is invalid: : ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5"#),
        "{refused}"
    );
    // Within the limit, and outside the bound namespaces, Deployments are taken.
    s.ok_stdin(&["apply", "-n", "test", "-f", "-"], &deployment("small", 5));
    s.ok_stdin(&["apply", "-n", "default", "-f", "-"], &deployment("nginx", 6));
    // An update over the limit is refused too (the scale subresource is another resource,
    // which the policy's rule does not name, as upstream).
    let patched = s.fails(&[
        "patch",
        "deployment",
        "small",
        "-n",
        "test",
        "-p",
        r#"{"spec":{"replicas":7}}"#,
    ]);
    assert!(
        patched.contains("denied request: failed expression: object.spec.replicas <= 5"),
        "{patched}"
    );

    // Warn: the request goes through, and kubectl prints the warning.
    s.ok(&["delete", "validatingadmissionpolicybinding", "demo-binding-test.example.com"]);
    s.ok_stdin(
        &["apply", "-f", "-"],
        &binding("demo-binding-warn.example.com", "demo-policy.example.com", "Warn", ""),
    );
    let warning = "Warning: Validation failed for ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-warn.example.com': failed expression: object.spec.replicas <= 5";
    s.wait_until("kubectl warns", Duration::from_secs(20), || {
        let out = s.kubectl_with(
            &s.kubectl,
            &["apply", "-n", "test", "-f", "-"],
            Some(&deployment("warned", 8)),
        );
        let stderr = stderr_of(&out);
        assert!(out.status.success(), "{stderr}");
        (stderr.contains(warning), stderr)
    });
    s.ok(&["delete", "validatingadmissionpolicybinding", "demo-binding-warn.example.com"]);

    // Params: the limit is read from a ConfigMap the binding names.
    s.ok(&["create", "configmap", "replica-limit", "-n", "test", "--from-literal=maxReplicas=2"]);
    s.ok_stdin(
        &["apply", "-f", "-"],
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: param-policy.example.com
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= int(params.data.maxReplicas)"
    messageExpression: "'replicas must be no greater than ' + params.data.maxReplicas"
    reason: Forbidden
"#,
    );
    s.ok_stdin(
        &["apply", "-f", "-"],
        &binding(
            "param-binding.example.com",
            "param-policy.example.com",
            "Deny",
            "  paramRef: {name: replica-limit, namespace: test, parameterNotFoundAction: Deny}\n",
        ),
    );
    let refused = refused_soon(&s, &["apply", "-n", "test", "-f", "-"], &deployment("three", 3));
    assert!(
        refused.contains(r#"deployments.apps "three" is forbidden: ValidatingAdmissionPolicy 'param-policy.example.com' with binding 'param-binding.example.com' denied request: replicas must be no greater than 2"#),
        "{refused}"
    );
    s.ok_stdin(&["apply", "-n", "test", "-f", "-"], &deployment("two", 2));
}

/// The test's webhooks: `/convert` converts a Gadget to `desired` (v1's `spec.replicas` is
/// v2's `spec.count`; while `failing`, every review is answered with a failure);
/// `/validate` allows; `/mutate` sets `spec.replicas` to 4 of a gadget named `mutated`.
fn gadget_webhooks(failing: Arc<AtomicBool>) -> Handler {
    Arc::new(move |path, request| {
        match path {
            "/validate" => return Answer::allow(),
            "/mutate" if request["name"] == "mutated" => {
                return Answer::patch(
                    json!([{"op": "replace", "path": "/spec/replicas", "value": 4}]),
                )
            }
            "/mutate" => return Answer::allow(),
            _ => {}
        }
        let desired = request["desiredAPIVersion"].as_str().unwrap_or("").to_string();
        let (from, to) = match desired.as_str() {
            "example.com/v1" => ("count", "replicas"),
            _ => ("replicas", "count"),
        };
        let objects = request["objects"].as_array().cloned().unwrap_or_default();
        let converted: Vec<Value> = objects
            .into_iter()
            .map(|mut o| {
                o["apiVersion"] = json!(desired);
                if let Some(spec) = o["spec"].as_object_mut() {
                    if let Some(v) = spec.remove(from) {
                        spec.insert(to.to_string(), v);
                    }
                }
                o
            })
            .collect();
        let response = match failing.load(Ordering::SeqCst) {
            true => {
                json!({"result": {"status": "Failure", "message": "gadgets are not convertible today"}})
            }
            false => json!({"result": {"status": "Success"}, "convertedObjects": converted}),
        };
        Answer { delay: Duration::ZERO, response }
    })
}

fn gadget(name: &str, count: i64) -> String {
    json!({"apiVersion": "example.com/v2", "kind": "Gadget",
           "metadata": {"name": name, "namespace": "default"}, "spec": {"count": count}})
    .to_string()
}

fn gadget_policy(match_policy: &str, failure_policy: &str) -> String {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
           "metadata": {"name": "gadget-limit.example.com"},
           "spec": {"failurePolicy": failure_policy,
                    "matchConstraints": {"matchPolicy": match_policy, "resourceRules": [
                        {"apiGroups": ["example.com"], "apiVersions": ["v1"],
                         "operations": ["CREATE", "UPDATE"], "resources": ["gadgets"]}]},
                    "validations": [{
                        "expression": "object.apiVersion == 'example.com/v1' && object.spec.replicas <= 5",
                        "messageExpression": "'replicas ' + string(object.spec.replicas) + ' over 5 as ' + request.kind.version + ' ' + request.resource.version + ' of ' + request.requestKind.version + ' ' + request.requestResource.version"}]}})
    .to_string()
}

/// Creates `manifest` until the outcome is `refused` (a changed policy reaches the chain
/// through the watch caches within moments; a gadget taken meanwhile is deleted); the
/// output.
fn create_until(s: &RkubeServer, manifest: &str, refused: bool) -> String {
    let name = serde_json::from_str::<Value>(manifest).unwrap()["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let mut last = String::new();
    s.wait_until("the policy's outcome", Duration::from_secs(20), || {
        let out = s.kubectl_with(&s.kubectl, &["create", "-f", "-"], Some(manifest));
        last = format!("{}{}", stdout_of(&out), stderr_of(&out));
        if out.status.success() {
            s.kubectl(&["delete", "gadgets.v2.example.com", &name, "--wait=false"]);
        }
        (out.status.success() != refused, last.clone())
    });
    last
}

#[test]
fn equivalent_match_converts_the_object_to_the_version_the_rule_names() {
    let s = RkubeServer::start();
    let ca = TestCa::new("rkube policy conversion test CA");
    let failing = Arc::new(AtomicBool::new(false));
    let webhook = WebhookServer::start(&ca, &[], gadget_webhooks(failing.clone()));
    let schema = |field: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {
            "type": "object", "properties": {field: {"type": "integer"}}}}}})
    };
    let definition = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "conversion": {"strategy": "Webhook", "webhook": {
                     "clientConfig": {"url": webhook.url("/convert"), "caBundle": ca.bundle()},
                     "conversionReviewVersions": ["v1"]}},
                 "versions": [
                     {"name": "v1", "served": true, "storage": true, "schema": schema("replicas")},
                     {"name": "v2", "served": true, "storage": false, "schema": schema("count")}]},
    });
    s.define_crd(&definition.to_string(), "gadgets.example.com");
    let rules = json!([{"apiGroups": ["example.com"], "apiVersions": ["v1"],
                        "operations": ["CREATE"], "resources": ["gadgets"]}]);
    for (kind, path) in [
        ("MutatingWebhookConfiguration", "/mutate"),
        ("ValidatingWebhookConfiguration", "/validate"),
    ] {
        let hook = json!({"name": format!("gadgets{}.example.com", path.replace('/', ".")),
                          "rules": rules, "sideEffects": "None", "admissionReviewVersions": ["v1"],
                          "clientConfig": {"url": webhook.url(path), "caBundle": ca.bundle()}});
        let configuration = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                                   "metadata": {"name": "gadgets.example.com"}, "webhooks": [hook]});
        s.ok_stdin(&["apply", "-f", "-"], &configuration.to_string());
    }
    s.ok_stdin(&["apply", "-f", "-"], &gadget_policy("Equivalent", "Fail"));
    s.ok_stdin(
        &["apply", "-f", "-"],
        &json!({"apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": "gadget-limit-binding.example.com"},
                "spec": {"policyName": "gadget-limit.example.com", "validationActions": ["Deny"]}})
        .to_string(),
    );

    // A v2 create over the limit: the policy sees it as v1 (converted by the webhook).
    let refused = create_until(&s, &gadget("big", 6), true);
    assert!(
        refused.contains("ValidatingAdmissionPolicy 'gadget-limit.example.com' with binding 'gadget-limit-binding.example.com' denied request: replicas 6 over 5 as v1 v1 of v2 v2"),
        "{refused}"
    );
    let asked = webhook.reviews_to("/convert").iter().any(|r| {
        r["request"]["desiredAPIVersion"] == "example.com/v1"
            && r["request"]["objects"][0]["metadata"]["name"] == "big"
            && r["request"]["objects"][0]["spec"] == json!({"count": 6})
    });
    assert!(asked, "the object was converted to v1 by the definition's webhook");
    // Within the limit it is taken, in v2; a v1 request is checked as it is.
    let created = s.ok_stdin(&["create", "-f", "-", "-o", "json"], &gadget("small", 5));
    let created: Value = serde_json::from_str(&created).unwrap();
    assert_eq!(created["apiVersion"], "example.com/v2");
    assert_eq!(created["spec"], json!({"count": 5}));
    let v1 = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
                    "metadata": {"name": "big-v1", "namespace": "default"},
                    "spec": {"replicas": 9}});
    let refused = s.fails_stdin(&["create", "-f", "-"], &v1.to_string());
    assert!(refused.contains("denied request: replicas 9 over 5 as v1 v1 of v1 v1"), "{refused}");

    // The webhooks see the request as v1 too; a v1 patch comes back to the v2 object.
    let mut last = String::new();
    s.wait_until("the mutating webhook's patch", Duration::from_secs(20), || {
        last = s.ok_stdin(&["create", "-f", "-", "-o", "json"], &gadget("mutated", 9));
        s.ok(&["delete", "gadgets.v2.example.com", "mutated", "--wait=false"]);
        (serde_json::from_str::<Value>(&last).unwrap()["spec"] == json!({"count": 4}), last.clone())
    });
    let reviews = webhook.reviews_to("/validate");
    let review = reviews
        .iter()
        .rfind(|r| r["request"]["name"] == "mutated")
        .unwrap_or_else(|| panic!("the validating webhook saw it: {reviews:?}"));
    assert_eq!(review["request"]["kind"]["version"], "v1");
    assert_eq!(review["request"]["requestKind"]["version"], "v2");
    assert_eq!(review["request"]["object"]["apiVersion"], "example.com/v1");
    assert_eq!(review["request"]["object"]["spec"], json!({"replicas": 4}));

    // A conversion that fails: for a webhook, an internal error (upstream's
    // `VersionedAttribute`); for the policy, its failure policy decides.
    failing.store(true, Ordering::SeqCst);
    let refused = s.fails_stdin(&["create", "-f", "-"], &gadget("broken", 1));
    assert!(
        refused.contains(
            "Internal error occurred: conversion webhook for example.com/v2, Kind=Gadget failed: "
        ),
        "{refused}"
    );
    s.ok(&[
        "delete",
        "mutatingwebhookconfiguration,validatingwebhookconfiguration",
        "gadgets.example.com",
    ]);
    let mut last = String::new();
    s.wait_until("the policy refuses the unconvertible gadget", Duration::from_secs(20), || {
        last = s.fails_stdin(&["create", "-f", "-"], &gadget("broken", 1));
        (last.contains("ValidatingAdmissionPolicy 'gadget-limit.example.com' with binding 'gadget-limit-binding.example.com' denied request: failed to configure binding: failed to convert object version: conversion webhook for example.com/v2, Kind=Gadget failed: "), last.clone())
    });
    failing.store(false, Ordering::SeqCst);

    // Exact: the v2 request is not one the rule names.
    s.ok_stdin(&["apply", "-f", "-"], &gadget_policy("Exact", "Fail"));
    create_until(&s, &gadget("big", 6), false);
}

/// The expressions of policies and webhook configurations are compiled when they are
/// written, as kube-apiserver's validation compiles them: syntax errors, undeclared
/// variables (`params` without a paramKind) and results of the wrong type are refused with
/// upstream's details, and nothing is stored.
#[test]
fn expressions_are_compiled_when_written_and_the_authorizer_answers_for_paths() {
    let s = RkubeServer::start();
    let policy = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: bad-expressions}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  matchConditions:
  - {name: counted, expression: "size(object.metadata.name)"}
  variables:
  - {name: limit, expression: "params.max"}
  validations:
  - {expression: "object.spec.replicas <=", messageExpression: "object.spec.replicas"}
  - {expression: "object.spec.replicas <= 5", messageExpression: "1 + 1"}
  auditAnnotations:
  - {key: replicas, valueExpression: "object.spec.replicas > 1"}
"#;
    let refused = s.fails_stdin(&["create", "-f", "-"], policy);
    for expected in [
        r#"The ValidatingAdmissionPolicy "bad-expressions" is invalid"#,
        r#"spec.matchConditions[0].expression: Invalid value: "size(object.metadata.name)": must evaluate to bool"#,
        r#"spec.variables[0].expression: Invalid value: "params.max": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')"#,
        r#"spec.validations[0].expression: Invalid value: "object.spec.replicas <=": compilation failed: ERROR: <input>:1:"#,
        r#"spec.validations[1].messageExpression: Invalid value: "1 + 1": must evaluate to string"#,
        r#"spec.auditAnnotations[0].valueExpression: Invalid value: "object.spec.replicas > 1": must evaluate to one of [string null_type]"#,
    ] {
        assert!(refused.contains(expected), "{expected:?} not in:\n{refused}");
    }
    let webhooks = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: bad-conditions}
webhooks:
- name: check.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig: {url: "https://127.0.0.1:1/check"}
  matchConditions:
  - {name: typo, expression: "objekt.metadata.name == 'x'"}
"#;
    let refused = s.fails_stdin(&["create", "-f", "-"], webhooks);
    let expected = r#"webhooks[0].matchConditions[0].expression: Invalid value: "objekt.metadata.name == 'x'": compilation failed: ERROR: <input>:1:1: undeclared reference to 'objekt' (in container '')"#;
    assert!(refused.contains(expected), "{expected:?} not in:\n{refused}");
    let stored =
        s.ok(&["get", "validatingadmissionpolicies,validatingwebhookconfigurations", "-o", "name"]);
    assert!(!stored.contains("bad-"), "nothing stored: {stored}");
    // The same expressions, corrected, are taken.
    let good = policy
        .replace("size(object.metadata.name)\"", "size(object.metadata.name) > 0\"")
        .replace("params.max", "object.spec.replicas")
        .replace("<=\", messageExpression: \"object.spec.replicas\"", "<= 5\"")
        .replace("1 + 1", "'too many'")
        .replace("object.spec.replicas > 1", "string(object.spec.replicas)");
    s.ok_stdin(&["create", "-f", "-"], &good);

    // The authorizer answers for non-resource paths too: everyone may read /healthz
    // (system:public-info-viewer), only the admin /metrics.
    s.ok_stdin(
        &["apply", "-f", "-"],
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: metrics-readers}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - expression: "authorizer.path('/healthz').check('get').allowed()"
    message: "cannot read /healthz"
  - expression: "authorizer.path('/metrics').check('get').allowed()"
    messageExpression: "request.userInfo.username + ' may not read /metrics'"
"#,
    );
    s.ok_stdin(&["apply", "-f", "-"], &binding("metrics-readers", "metrics-readers", "Deny", ""));
    s.ok(&["create", "namespace", "test"]);
    s.ok(&["label", "namespace", "test", "environment=test"]);
    s.ok(&[
        "create",
        "rolebinding",
        "jane-edit",
        "-n",
        "test",
        "--clusterrole=edit",
        "--user=jane",
    ]);
    let refused = refused_soon(
        &s,
        &["create", "-n", "test", "--as=jane", "-f", "-"],
        r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "janes-"}}"#,
    );
    assert!(refused.contains("denied request: jane may not read /metrics"), "{refused}");
    assert!(!refused.contains("cannot read /healthz"), "{refused}");
    s.ok_stdin(
        &["create", "-n", "test", "-f", "-"],
        r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "admins"}}"#,
    );
}

const WIDGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
"#;

fn typed_policy(expression: &str) -> String {
    format!(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: typed-policy.example.com
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["example.com"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["widgets"]
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["deployments", "deployments/scale"]
    - apiGroups: ["*"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods"]
  validations:
  - expression: "true"
    messageExpression: "'replicas: ' + object.spec.replicas"
  - expression: '{expression}'
"#
    )
}

/// The policy's status as `kubectl get -o jsonpath` prints `path`.
fn policy_status(s: &RkubeServer, path: &str) -> String {
    let jsonpath = format!("jsonpath={{{path}}}");
    s.ok(&["get", "validatingadmissionpolicy", "typed-policy.example.com", "-o", &jsonpath])
}

#[test]
fn expressions_that_do_not_type_check_are_reported_in_the_policy_status() {
    let s = RkubeServer::start();
    s.define_crd(WIDGETS, "widgets.example.com");
    s.ok_stdin(&["apply", "-f", "-"], &typed_policy(r#"object.spec.replicas > "x""#));
    s.wait_until("the policy's generation is observed", Duration::from_secs(30), || {
        let observed = policy_status(&s, ".status.observedGeneration");
        (observed == "1", observed)
    });
    let yaml =
        s.ok(&["get", "validatingadmissionpolicy", "typed-policy.example.com", "-o", "yaml"]);
    assert!(yaml.contains("typeChecking:\n    expressionWarnings:\n"), "{yaml}");
    assert!(yaml.contains("fieldRef: spec.validations[1].expression"), "{yaml}");
    // Each kind the rules name (sorted, wildcard groups left out) is checked: the
    // Deployment's schema from the built-in OpenAPI, the Widget's from its definition.
    assert_eq!(
        policy_status(&s, ".status.typeChecking.expressionWarnings[1].warning"),
        "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n | object.spec.replicas > \"x\"\n | .....................^\n\nexample.com/v1, Kind=Widget: ERROR: <input>:1:12: undefined field 'replicas'\n | object.spec.replicas > \"x\"\n | ...........^\n"
    );
    assert_eq!(
        policy_status(&s, ".status.typeChecking.expressionWarnings[0].fieldRef"),
        "spec.validations[0].messageExpression"
    );
    assert_eq!(
        policy_status(&s, ".status.typeChecking.expressionWarnings[0].warning"),
        "apps/v1, Kind=Deployment: ERROR: <input>:1:14: found no matching overload for '_+_' applied to '(string, int)'\n | 'replicas: ' + object.spec.replicas\n | .............^\n\nexample.com/v1, Kind=Widget: ERROR: <input>:1:27: undefined field 'replicas'\n | 'replicas: ' + object.spec.replicas\n | ..........................^\n"
    );

    // A new generation is checked again: what checks leaves no warning.
    let fixed = typed_policy("object.spec.replicas > 1").replace(
        "'replicas: ' + object.spec.replicas\"",
        "'replicas: ' + string(object.metadata.name)\"",
    );
    s.ok_stdin(&["apply", "-f", "-"], &fixed);
    s.wait_until("the new generation is observed", Duration::from_secs(30), || {
        let observed = policy_status(&s, ".status.observedGeneration");
        (observed == "2", observed)
    });
    assert_eq!(
        policy_status(&s, ".status.typeChecking.expressionWarnings[*].fieldRef"),
        "spec.validations[1].expression"
    );
    assert!(policy_status(&s, ".status.typeChecking.expressionWarnings[0].warning").starts_with(
        "example.com/v1, Kind=Widget: ERROR: <input>:1:12: undefined field 'replicas'"
    ));
}
