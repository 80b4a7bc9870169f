//! ValidatingAdmissionPolicies as stock kubectl meets them: a policy bound with `Deny`
//! refuses a Deployment over a replica limit with upstream's message, a `Warn` binding
//! lets it through with kubectl's `Warning:` line, and a policy reads its limit from a
//! ConfigMap named by the binding's `paramRef`; the policy status controller reports
//! expressions that do not type-check against the matched kinds' schemas in the policy's
//! `status.typeChecking`.

use std::time::Duration;

use rkube_conformance::cluster::{stderr_of, stdout_of, RkubeServer};

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
    messageExpression: "'replicas: ' + object.spec.replicas.size()"
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
        "apps/v1, Kind=Deployment: ERROR: <input>:1:41: found no matching overload for 'size' applied to 'int.()'\n | 'replicas: ' + object.spec.replicas.size()\n | ........................................^\n\nexample.com/v1, Kind=Widget: ERROR: <input>:1:14: found no matching overload for '_+_' applied to '(string, int)'\n | 'replicas: ' + object.spec.replicas.size()\n | .............^\nERROR: <input>:1:27: undefined field 'replicas'\n | 'replicas: ' + object.spec.replicas.size()\n | ..........................^\n"
    );

    // A new generation is checked again: what checks leaves no warning.
    let fixed = typed_policy("object.spec.replicas > 1").replace(
        "'replicas: ' + object.spec.replicas.size()",
        "'replicas: ' + string(object.metadata.name)",
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
