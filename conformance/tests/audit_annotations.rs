//! What the admission plugins write into the audit log (`--audit-policy-file`,
//! `--audit-log-path`), read back from the log's JSON lines after stock kubectl's requests:
//!
//! - PodSecurity: in a namespace labelled `enforce=privileged`, `audit=restricted`, a
//!   privileged pod is created and its `create` event carries `enforce-policy` and
//!   upstream's `audit-violations` text; a Deployment's carries the violations only.
//! - ValidatingAdmissionPolicy: a binding with `validationActions: [Audit]` lets a failing
//!   ConfigMap in, and its event carries `validation_failure` (a JSON list) and the policy's
//!   `auditAnnotations` value as `<policy>/<key>`.
//! - Admission webhooks (a TLS webhook server written here, on loopback): a mutating webhook's
//!   and a validating webhook's `auditAnnotations` as `<webhook>/<key>`, the mutation
//!   annotation, and the patch annotation only where the policy records the request at level
//!   Request (not at Metadata).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rkube_conformance::cluster::{stderr_of, RkubeServer};
use rkube_conformance::webhook::{Answer, Handler, TestCa, WebhookServer};
use serde_json::{json, Value};

/// Requests in the namespace `metadata-only` are recorded at Metadata; pods, Deployments and
/// ConfigMaps elsewhere at RequestResponse; nothing else.
const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  namespaces: ["metadata-only"]
  resources:
  - group: ""
    resources: ["configmaps"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["pods", "configmaps"]
  - group: "apps"
    resources: ["deployments"]
- level: None
"#;

/// The server with the audit policy above, and its log's path (both in a directory of the
/// test's own, removed at its end).
fn audited_server() -> (RkubeServer, tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new().prefix("rkube-audit-").tempdir().expect("temp dir");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).expect("policy written");
    let log = dir.path().join("audit.log");
    let s = RkubeServer::start_with(&[
        "--audit-policy-file",
        policy.to_str().expect("a UTF-8 path"),
        "--audit-log-path",
        log.to_str().expect("a UTF-8 path"),
    ]);
    (s, dir, log)
}

/// The log's events so far.
fn events(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

/// The `ResponseComplete` event of the `create` of `resource` `name` in `namespace`,
/// waited for up to 10 s.
fn create_event(s: &RkubeServer, log: &Path, resource: &str, namespace: &str, name: &str) -> Value {
    let found = |e: &Value| {
        e["stage"] == "ResponseComplete"
            && e["verb"] == "create"
            && e["objectRef"]["resource"] == resource
            && e["objectRef"]["namespace"] == namespace
            && e["objectRef"]["name"] == name
    };
    let mut event = Value::Null;
    s.wait_until(
        &format!("the create event of {resource} {name}"),
        Duration::from_secs(10),
        || match events(log).into_iter().find(found) {
            Some(e) => {
                event = e;
                (true, String::new())
            }
            None => (false, std::fs::read_to_string(log).unwrap_or_default()),
        },
    );
    event
}

/// The event's admission annotations (those this test looks at: not the authorizer's).
fn admission_annotations(event: &Value) -> Value {
    let mut annotations = event["annotations"].clone();
    if let Some(map) = annotations.as_object_mut() {
        map.retain(|k, _| !k.starts_with("authorization.k8s.io/"));
    }
    annotations
}

const PRIVILEGED_POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: priv}
spec:
  containers:
  - {name: c, image: "busybox:1.36", securityContext: {privileged: true}}
"#;

const PRIVILEGED_DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: priv}
spec:
  selector: {matchLabels: {app: priv}}
  template:
    metadata: {labels: {app: priv}}
    spec:
      containers:
      - {name: c, image: "busybox:1.36", securityContext: {privileged: true}}
"#;

/// What the restricted level finds in one privileged container named `c` (upstream's order
/// and wording).
const RESTRICTED_FINDINGS: &str = "privileged (container \"c\" must not set securityContext.privileged=true), allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")";

#[test]
fn pod_security_audit_mode_annotates_the_events_of_violating_pods() {
    let (s, _dir, log) = audited_server();
    s.ok(&["create", "namespace", "audited"]);
    s.ok(&[
        "label",
        "namespace",
        "audited",
        "pod-security.kubernetes.io/enforce=privileged",
        "pod-security.kubernetes.io/audit=restricted",
    ]);
    // Audit mode neither refuses nor warns.
    let out =
        s.kubectl_with(&s.kubectl, &["create", "-n", "audited", "-f", "-"], Some(PRIVILEGED_POD));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stderr_of(&out), "");

    let event = create_event(&s, &log, "pods", "audited", "priv");
    assert_eq!(event["responseStatus"]["code"], 201);
    let violations =
        format!("would violate PodSecurity \"restricted:latest\": {RESTRICTED_FINDINGS}");
    assert_eq!(
        admission_annotations(&event),
        json!({
            "pod-security.kubernetes.io/audit-violations": violations,
            "pod-security.kubernetes.io/enforce-policy": "privileged:latest",
        })
    );

    // A workload's template is audited too; nothing is enforced on it.
    s.ok_stdin(&["create", "-n", "audited", "-f", "-"], PRIVILEGED_DEPLOYMENT);
    let event = create_event(&s, &log, "deployments", "audited", "priv");
    assert_eq!(
        admission_annotations(&event),
        json!({"pod-security.kubernetes.io/audit-violations": violations})
    );
}

const COLORS_POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: colors.example.com}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - expression: "!has(object.data) || !('color' in object.data)"
    message: "no colors <here>"
  auditAnnotations:
  - key: color
    valueExpression: "has(object.data) && 'color' in object.data ? object.data.color : null"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: colors-audit}
spec:
  policyName: colors.example.com
  validationActions: [Audit]
  matchResources:
    namespaceSelector: {matchLabels: {colors: audited}}
"#;

fn configmap(name: &str, data: Value) -> String {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "test"}},
           "data": data})
    .to_string()
}

#[test]
fn an_audit_binding_annotates_failed_validations_and_the_policys_audit_annotations() {
    let (s, _dir, log) = audited_server();
    s.ok(&["create", "namespace", "colors"]);
    s.ok(&["label", "namespace", "colors", "colors=audited"]);
    s.ok_stdin(&["apply", "-f", "-"], COLORS_POLICY);
    // The policy reaches the admission chain through the watch caches within moments: create
    // ConfigMaps that fail it until one's event is annotated. Each create succeeds.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut attempt = 0;
    let event = loop {
        attempt += 1;
        let name = format!("red-{attempt}");
        let manifest = configmap(&name, json!({"color": "red"}));
        let out =
            s.kubectl_with(&s.kubectl, &["create", "-n", "colors", "-f", "-"], Some(&manifest));
        assert!(out.status.success(), "an Audit binding refuses nothing: {}", stderr_of(&out));
        assert_eq!(stderr_of(&out), "", "and warns about nothing");
        let event = create_event(&s, &log, "configmaps", "colors", &name);
        if !admission_annotations(&event).as_object().is_some_and(|m| m.is_empty()) {
            break event;
        }
        assert!(Instant::now() < deadline, "the policy never applied: {event}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(event["responseStatus"]["code"], 201);
    let failure = r#"[{"message":"no colors \u003chere\u003e","policy":"colors.example.com","binding":"colors-audit","expressionIndex":0,"validationActions":["Audit"]}]"#;
    assert_eq!(
        admission_annotations(&event),
        json!({
            "colors.example.com/color": "red",
            "validation.policy.admission.k8s.io/validation_failure": failure,
        })
    );

    // A ConfigMap that passes: the audit annotation's value is null, so nothing at all.
    s.ok_stdin(&["create", "-n", "colors", "-f", "-"], &configmap("plain", json!({"size": "1"})));
    let event = create_event(&s, &log, "configmaps", "colors", "plain");
    assert_eq!(admission_annotations(&event), json!({}));
}

#[test]
fn webhooks_audit_annotations_mutations_and_patches_reach_the_log() {
    let (s, _dir, log) = audited_server();
    let ca = TestCa::new("rkube audit annotations test CA");
    let handler: Handler = Arc::new(|path, _request| match path {
        "/mutate" => {
            let mut answer = Answer::patch(
                json!([{"op": "add", "path": "/metadata/labels/audited", "value": "yes"}]),
            );
            answer.response["auditAnnotations"] =
                json!({"decision": "labelled", "not a key!": "dropped"});
            answer
        }
        "/validate" => {
            let mut answer = Answer::allow();
            answer.response["auditAnnotations"] = json!({"checked": "yes"});
            answer
        }
        _ => Answer::allow(),
    });
    let server = WebhookServer::start(&ca, &[], handler);
    let hook = |name: &str, path: &str| {
        json!({
            "name": name,
            "clientConfig": {"url": server.url(path), "caBundle": ca.bundle()},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}],
            "namespaceSelector": {"matchLabels": {"hooked": "yes"}},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        })
    };
    for ns in ["hooked", "metadata-only"] {
        s.ok(&["create", "namespace", ns]);
        s.ok(&["label", "namespace", ns, "hooked=yes"]);
    }
    let configs = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": "audit-label"}, "webhooks": [hook("label.rkube.test", "/mutate")]},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "audit-check"}, "webhooks": [hook("check.rkube.test", "/validate")]},
    ]});
    s.ok_stdin(&["apply", "-f", "-"], &configs.to_string());

    // Until both webhooks are called (the configurations reach the chain within moments).
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut attempt = 0;
    let (name, event) = loop {
        attempt += 1;
        let name = format!("cm-{attempt}");
        s.ok_stdin(&["create", "-n", "hooked", "-f", "-"], &configmap(&name, json!({})));
        let event = create_event(&s, &log, "configmaps", "hooked", &name);
        let annotations = admission_annotations(&event);
        if annotations.get("label.rkube.test/decision").is_some()
            && annotations.get("check.rkube.test/checked").is_some()
        {
            break (name, event);
        }
        assert!(Instant::now() < deadline, "the webhooks were never called: {event}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let labels =
        s.ok(&["get", "configmap", &name, "-n", "hooked", "-o", "jsonpath={.metadata.labels}"]);
    assert_eq!(
        serde_json::from_str::<Value>(&labels).unwrap(),
        json!({"app": "test", "audited": "yes"})
    );
    let mutation = r#"{"configuration":"audit-label","webhook":"label.rkube.test","mutated":true}"#;
    let patch = r#"{"configuration":"audit-label","webhook":"label.rkube.test","patch":[{"op":"add","path":"/metadata/labels/audited","value":"yes"}],"patchType":"JSONPatch"}"#;
    assert_eq!(
        admission_annotations(&event),
        json!({
            "check.rkube.test/checked": "yes",
            "label.rkube.test/decision": "labelled",
            "mutation.webhook.admission.k8s.io/round_0_index_0": mutation,
            "patch.webhook.admission.k8s.io/round_0_index_0": patch,
        })
    );

    // At level Metadata the patch, which shows request content, is left out.
    s.ok_stdin(&["create", "-n", "metadata-only", "-f", "-"], &configmap("meta", json!({})));
    let event = create_event(&s, &log, "configmaps", "metadata-only", "meta");
    assert_eq!(event["level"], "Metadata");
    assert_eq!(
        admission_annotations(&event),
        json!({
            "check.rkube.test/checked": "yes",
            "label.rkube.test/decision": "labelled",
            "mutation.webhook.admission.k8s.io/round_0_index_0": mutation,
        })
    );
}
