//! The plugins against webhooks answered in the test itself: a [`Backend`] whose `post`
//! hands the AdmissionReview to a function of the test (the real HTTPS client and its
//! errors are the server's, tested by the system tests).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use base64::Engine;
use serde_json::json;

use super::*;
use crate::attributes::*;
use crate::chain::{Chain, Settings};
use crate::state::Snapshot;

type Answer = Box<dyn Fn(&str, &Value) -> Result<Value, CallError> + Send + Sync>;

/// Webhooks by URL: each answers with the test's function; every review is kept.
struct Webhooks {
    answer: Answer,
    calls: Mutex<Vec<(String, Value)>>,
}

#[async_trait::async_trait]
impl Backend for Webhooks {
    fn resources(&self) -> Arc<Resources> {
        Arc::new(Resources::builtin().clone())
    }

    async fn post(
        &self,
        client: &ClientConfig,
        body: Vec<u8>,
        _: Duration,
    ) -> Result<Vec<u8>, CallError> {
        let url = client.url.clone().unwrap_or_default();
        let review: Value = serde_json::from_slice(&body).unwrap();
        self.calls.lock().unwrap().push((url.clone(), review.clone()));
        let response = (self.answer)(&url, &review["request"])?;
        let mut response = response;
        response["uid"] = review["request"]["uid"].clone();
        Ok(serde_json::to_vec(
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": response}),
        )
        .unwrap())
    }
}

impl Webhooks {
    fn calls_to(&self, url: &str) -> Vec<Value> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(u, _)| u == url)
            .map(|(_, r)| r.clone())
            .collect()
    }
}

fn chain(answer: Answer) -> (Chain, Arc<Webhooks>) {
    let webhooks = Arc::new(Webhooks { answer, calls: Mutex::default() });
    let chain = Chain::new(&[MUTATING, VALIDATING], Settings::default());
    chain.set_webhook_backend(webhooks.clone());
    (chain, webhooks)
}

fn hook(name: &str, rules: Value, extra: Value) -> Value {
    let mut w = json!({"name": name, "clientConfig": {"url": format!("https://{name}/")},
        "rules": rules, "sideEffects": "None", "admissionReviewVersions": ["v1"]});
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    w
}

fn pod_rule() -> Value {
    json!([{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}])
}

/// A configuration; each gets a resourceVersion of its own, as stored ones do.
fn config(name: &str, webhooks: Vec<Value>) -> Value {
    static VERSION: AtomicUsize = AtomicUsize::new(1);
    let version = VERSION.fetch_add(1, Ordering::SeqCst).to_string();
    json!({"metadata": {"name": name, "resourceVersion": version}, "webhooks": webhooks})
}

fn state(mutating: Vec<Value>, validating: Vec<Value>) -> Snapshot {
    let mut s = Snapshot::default()
        .with("", "namespaces", json!({"metadata": {"name": "prod", "labels": {"env": "prod"}}}))
        .with("", "namespaces", json!({"metadata": {"name": "dev", "labels": {"env": "dev"}}}));
    if !mutating.is_empty() {
        s = s.with(
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            config("m", mutating),
        );
    }
    if !validating.is_empty() {
        s = s.with(
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            config("v", validating),
        );
    }
    s
}

fn attributes<'a>(
    op: Operation,
    ns: &'a str,
    object: Option<&'a mut Value>,
    old: Option<&'a Value>,
) -> Attributes<'a> {
    Attributes {
        operation: op,
        user: UserInfo { name: "alice", ..Default::default() },
        resource: GroupVersionResource { group: "", version: "v1", resource: "pods" },
        subresource: "",
        kind: GroupVersionKind { group: "", version: "v1", kind: "Pod" },
        namespace: ns,
        name: "p",
        object,
        old_object: old,
        dry_run: false,
        options: OperationOptions::Create { field_manager: None },
        warnings: Default::default(),
        audit_annotations: Default::default(),
    }
}

fn pod(labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "prod", "labels": labels},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
}

fn add_label(key: &str) -> Value {
    let patch = json!([{"op": "add", "path": format!("/metadata/labels/{key}"), "value": "yes"}]);
    json!({"allowed": true, "patchType": "JSONPatch",
           "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string())})
}

#[test]
fn rules_match_as_upstream() {
    let mut object = pod(json!({}));
    let mut a = attributes(Operation::Create, "prod", Some(&mut object), None);
    let rule = |resources: &[&str], scope: &str| Rule {
        operations: vec!["*".into()],
        api_groups: vec!["".into()],
        api_versions: vec!["*".into()],
        resources: resources.iter().map(|s| s.to_string()).collect(),
        scope: scope.into(),
    };
    let m = |r: &Rule, a: &Attributes<'_>| matching::rule_matches(r, a, "", "v1", "pods");
    assert!(m(&rule(&["*"], "*"), &a));
    assert!(m(&rule(&["pods"], "Namespaced"), &a));
    assert!(!m(&rule(&["pods"], "Cluster"), &a));
    assert!(!m(&rule(&["pods/status"], "*"), &a));
    a.subresource = "status";
    assert!(!m(&rule(&["*"], "*"), &a), "* is the resources, without subresources");
    assert!(m(&rule(&["*/status"], "*"), &a));
    assert!(m(&rule(&["pods/*"], "*"), &a));
    assert!(m(&rule(&["*/*"], "*"), &a));
    let mut create_only = rule(&["pods"], "*");
    create_only.operations = vec!["CREATE".into()];
    a.subresource = "";
    a.operation = Operation::Update;
    assert!(!m(&create_only, &a));
    // A Namespace is cluster-scoped, whatever the attributes' namespace.
    let namespaces = |a: &Attributes<'_>, scope| {
        matching::rule_matches(&rule(&["namespaces"], scope), a, "", "v1", "namespaces")
    };
    assert!(namespaces(&a, "Cluster") && !namespaces(&a, "Namespaced"));
}

#[tokio::test]
async fn mutating_webhooks_patch_in_order_and_reinvoke_if_needed() {
    let (chain, webhooks) = chain(Box::new(|url, request| {
        let labels = &request["object"]["metadata"]["labels"];
        Ok(match url {
            // Labels once; then it is satisfied.
            "https://first/" if labels.get("first").is_none() => add_label("first"),
            "https://second/" if labels.get("second").is_none() => add_label("second"),
            _ => json!({"allowed": true, "warnings": [format!("seen by {url}")]}),
        })
    }));
    let first = hook("first", pod_rule(), json!({"reinvocationPolicy": "IfNeeded"}));
    let second = hook("second", pod_rule(), json!({}));
    let state = state(vec![first, second], vec![]);
    let mut object = pod(json!({"app": "web"}));
    let mut a = attributes(Operation::Create, "prod", Some(&mut object), None);
    chain.admit(&mut a, &state).await.unwrap();
    assert_eq!(a.warnings.take(), ["seen by https://first/"]);
    assert_eq!(
        object["metadata"]["labels"],
        json!({"app": "web", "first": "yes", "second": "yes"})
    );
    // `first` saw the object again after `second` changed it; `second` (Never) did not.
    let first_calls = webhooks.calls_to("https://first/");
    assert_eq!(first_calls.len(), 2);
    assert_eq!(first_calls[1]["request"]["object"]["metadata"]["labels"]["second"], "yes");
    assert_eq!(webhooks.calls_to("https://second/").len(), 1);
    let request = &first_calls[0]["request"];
    assert_eq!(request["kind"], json!({"group": "", "version": "v1", "kind": "Pod"}));
    assert_eq!(request["resource"], json!({"group": "", "version": "v1", "resource": "pods"}));
    assert_eq!(
        (request["operation"].as_str(), request["namespace"].as_str(), request["name"].as_str()),
        (Some("CREATE"), Some("prod"), Some("p"))
    );
    assert_eq!(request["userInfo"], json!({"username": "alice"}));
    assert_eq!(request["options"]["kind"], "CreateOptions");
}

#[tokio::test]
async fn selectors_choose_the_webhooks() {
    let (chain, webhooks) = chain(Box::new(|_, _| Ok(json!({"allowed": true}))));
    let prod_only = hook(
        "prod-only",
        pod_rule(),
        json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}),
    );
    let labelled = hook(
        "labelled",
        pod_rule(),
        json!({"objectSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}}),
    );
    let state = state(vec![], vec![prod_only, labelled]);
    let calls = |hook: &str| webhooks.calls_to(&format!("https://{hook}/")).len();
    let mut web = pod(json!({"app": "web"}));
    chain
        .validate(&attributes(Operation::Create, "prod", Some(&mut web), None), &state)
        .await
        .unwrap();
    assert_eq!((calls("prod-only"), calls("labelled")), (1, 1));
    let mut db = pod(json!({"app": "db"}));
    chain
        .validate(&attributes(Operation::Create, "dev", Some(&mut db), None), &state)
        .await
        .unwrap();
    assert_eq!((calls("prod-only"), calls("labelled")), (1, 1));
    // The old object's labels count too.
    let old = pod(json!({"app": "web"}));
    chain
        .validate(&attributes(Operation::Update, "dev", Some(&mut db), Some(&old)), &state)
        .await
        .unwrap();
    assert_eq!((calls("prod-only"), calls("labelled")), (1, 2));
    let e =
        chain.validate(&attributes(Operation::Create, "gone", Some(&mut db), None), &state).await;
    assert_eq!(e.unwrap_err(), AdmissionError::not_found("", "namespaces", "gone"));
}

#[tokio::test]
async fn failures_obey_the_failure_policy_and_refusals_carry_the_status() {
    let (chain, _) = chain(Box::new(|url, _| match url {
        "https://deny/" => Ok(
            json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": "no"}}),
        ),
        _ => Err(CallError(
            "Post \"https://down/?timeout=10s\": dial tcp 127.0.0.1:1: connect: connection refused"
                .into(),
        )),
    }));
    let mut object = pod(json!({}));
    let a = attributes(Operation::Create, "prod", Some(&mut object), None);
    let ignored = state(vec![], vec![hook("down", pod_rule(), json!({"failurePolicy": "Ignore"}))]);
    chain.validate(&a, &ignored).await.unwrap();
    let failing = state(vec![], vec![hook("down", pod_rule(), json!({}))]);
    let e = chain.validate(&a, &failing).await.unwrap_err();
    assert_eq!(e.to_string(), "Internal error occurred: failed calling webhook \"down\": failed to call webhook: Post \"https://down/?timeout=10s\": dial tcp 127.0.0.1:1: connect: connection refused");
    let denying = state(vec![], vec![hook("deny", pod_rule(), json!({"failurePolicy": "Ignore"}))]);
    let e = chain.validate(&a, &denying).await.unwrap_err();
    assert!(
        matches!(&e, AdmissionError::Status(s) if s.code == 403 && s.reason == "Forbidden"),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "admission webhook \"deny\" denied the request: no");
}

#[tokio::test]
async fn dry_runs_need_webhooks_without_side_effects() {
    let (chain, webhooks) = chain(Box::new(|_, _| Ok(json!({"allowed": true}))));
    let mut object = pod(json!({}));
    let mut a = attributes(Operation::Create, "prod", Some(&mut object), None);
    a.dry_run = true;
    let fine =
        state(vec![], vec![hook("fine", pod_rule(), json!({"sideEffects": "NoneOnDryRun"}))]);
    chain.validate(&a, &fine).await.unwrap();
    assert_eq!(webhooks.calls_to("https://fine/")[0]["request"]["dryRun"], true);
    let some = state(
        vec![],
        vec![hook("some", pod_rule(), json!({"sideEffects": "Some", "failurePolicy": "Ignore"}))],
    );
    let e = chain.validate(&a, &some).await.unwrap_err();
    assert_eq!(
        e,
        AdmissionError::BadRequest("admission webhook \"some\" does not support dry run".into())
    );
    assert!(webhooks.calls_to("https://some/").is_empty());
}

#[tokio::test]
async fn match_conditions_choose_and_their_errors_obey_the_failure_policy() {
    let (chain, webhooks) = chain(Box::new(|_, _| Ok(json!({"allowed": false}))));
    let conditions = |expressions: &[&str]| -> Value {
        expressions
            .iter()
            .enumerate()
            .map(|(i, e)| json!({"name": format!("c{i}"), "expression": e}))
            .collect()
    };
    let mut object = pod(json!({"app": "web"}));
    let a = attributes(Operation::Create, "prod", Some(&mut object), None);
    let with = |expressions: &[&str], policy: &str| {
        state(
            vec![],
            vec![hook(
                "c",
                pod_rule(),
                json!({"matchConditions": conditions(expressions), "failurePolicy": policy}),
            )],
        )
    };
    // A false condition: not called.
    let not_alice = with(&["request.userInfo.username != 'alice'", "true"], "Fail");
    chain.validate(&a, &not_alice).await.unwrap();
    assert!(webhooks.calls.lock().unwrap().is_empty());
    // All true: called (and it refuses).
    let web = with(&["object.metadata.labels.app == 'web'", "oldObject == null"], "Fail");
    let e = chain.validate(&a, &web).await.unwrap_err();
    assert_eq!(e.to_string(), "admission webhook \"c\" denied the request without explanation");
    assert_eq!(webhooks.calls.lock().unwrap().len(), 1);
    // Errors: Ignore skips the webhook, Fail refuses with them.
    let broken = ["object.metadata.labels.missing == 'x'", "1 + 1"];
    chain.validate(&a, &with(&broken, "Ignore")).await.unwrap();
    let e = chain.validate(&a, &with(&broken, "Fail")).await.unwrap_err();
    assert!(matches!(e, AdmissionError::Forbidden { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.starts_with("pods \"p\" is forbidden: [expression 'object.metadata.labels.missing == 'x'' resulted in error: "), "{text}");
    assert!(
        text.ends_with("expression '1 + 1' resulted in error: expected bool but got int]"),
        "{text}"
    );
    // A false condition wins over errors.
    chain.validate(&a, &with(&["1 + 1", "false"], "Fail")).await.unwrap();
    assert_eq!(webhooks.calls.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn equivalent_resources_match_in_the_rules_version() {
    let (chain, webhooks) = chain(Box::new(|_, _| Ok(json!({"allowed": true}))));
    let v1_rule = json!([{"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v1"],
        "resources": ["horizontalpodautoscalers"]}]);
    let state = state(
        vec![],
        vec![
            hook("equivalent", v1_rule.clone(), json!({})),
            hook("exact", v1_rule, json!({"matchPolicy": "Exact"})),
        ],
    );
    let mut hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h", "namespace": "prod"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d", "apiVersion": "apps/v1"},
                 "maxReplicas": 3,
                 "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]}});
    let mut a = attributes(Operation::Create, "prod", Some(&mut hpa), None);
    a.resource = GroupVersionResource {
        group: "autoscaling",
        version: "v2",
        resource: "horizontalpodautoscalers",
    };
    a.kind =
        GroupVersionKind { group: "autoscaling", version: "v2", kind: "HorizontalPodAutoscaler" };
    chain.validate(&a, &state).await.unwrap();
    assert!(webhooks.calls_to("https://exact/").is_empty());
    let call = &webhooks.calls_to("https://equivalent/")[0]["request"];
    assert_eq!(
        call["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "HorizontalPodAutoscaler"})
    );
    assert_eq!(call["resource"]["version"], "v1");
    assert_eq!(call["requestKind"]["version"], "v2");
    assert_eq!(call["requestResource"]["version"], "v2");
    assert_eq!(call["object"]["apiVersion"], "autoscaling/v1");
    assert_eq!(call["object"]["spec"]["targetCPUUtilizationPercentage"], 50);
}

#[tokio::test]
async fn webhook_configurations_never_go_to_webhooks() {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let (chain, _) = chain(Box::new(move |_, _| {
        seen.fetch_add(1, Ordering::SeqCst);
        Ok(json!({"allowed": false}))
    }));
    let everything = json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]);
    let state = state(vec![], vec![hook("all", everything, json!({}))]);
    let mut object = json!({"metadata": {"name": "x"}});
    let mut a = attributes(Operation::Create, "", Some(&mut object), None);
    a.resource = GroupVersionResource {
        group: "admissionregistration.k8s.io",
        version: "v1",
        resource: "validatingwebhookconfigurations",
    };
    a.kind = GroupVersionKind {
        group: "admissionregistration.k8s.io",
        version: "v1",
        kind: "ValidatingWebhookConfiguration",
    };
    chain.validate(&a, &state).await.unwrap();
    a.resource.resource = "clusterroles";
    a.resource.group = "rbac.authorization.k8s.io";
    assert!(chain.validate(&a, &state).await.is_err());
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

/// The annotations as (key, value, level), in the order added.
fn annotations(a: &Attributes<'_>) -> Vec<(String, String, AuditLevel)> {
    a.audit_annotations.take().into_iter().map(|x| (x.key, x.value, x.level)).collect()
}

#[tokio::test]
async fn mutating_webhooks_leave_mutation_and_patch_annotations_per_round_and_index() {
    let (chain, _) = chain(Box::new(|url, request| {
        let labels = &request["object"]["metadata"]["labels"];
        Ok(match url {
            "https://first/" if labels.get("first").is_none() => add_label("first"),
            "https://second/" if labels.get("second").is_none() => {
                let mut answer = add_label("second");
                answer["auditAnnotations"] = json!({"decision": "labelled <b>", "Bad Key!": "x"});
                answer
            }
            _ => json!({"allowed": true}),
        })
    }));
    // `skipped` is never called (its rule does not match) but counts in the index.
    let skipped = hook(
        "skipped",
        json!([{"operations": ["DELETE"], "apiGroups": [""],
        "apiVersions": ["v1"], "resources": ["pods"]}]),
        json!({}),
    );
    let first = hook("first", pod_rule(), json!({"reinvocationPolicy": "IfNeeded"}));
    let second = hook("second", pod_rule(), json!({}));
    let state = state(vec![skipped, first, second], vec![]);
    let mut object = pod(json!({"app": "web"}));
    let mut a = attributes(Operation::Create, "prod", Some(&mut object), None);
    chain.admit(&mut a, &state).await.unwrap();
    let patch = |name: &str| {
        format!(
            r#"{{"configuration":"m","webhook":"{name}","patch":[{{"op":"add","path":"/metadata/labels/{name}","value":"yes"}}],"patchType":"JSONPatch"}}"#
        )
    };
    let mutation = |name: &str, mutated: bool| {
        format!(r#"{{"configuration":"m","webhook":"{name}","mutated":{mutated}}}"#)
    };
    use AuditLevel::{Metadata, Request};
    let s = |x: &str| x.to_string();
    assert_eq!(
        annotations(&a),
        vec![
            (s("patch.webhook.admission.k8s.io/round_0_index_1"), patch("first"), Request),
            (
                s("mutation.webhook.admission.k8s.io/round_0_index_1"),
                mutation("first", true),
                Metadata
            ),
            // The key that is not a qualified name is dropped; the value is kept as sent.
            (s("second/decision"), s("labelled <b>"), Metadata),
            (s("patch.webhook.admission.k8s.io/round_0_index_2"), patch("second"), Request),
            (
                s("mutation.webhook.admission.k8s.io/round_0_index_2"),
                mutation("second", true),
                Metadata
            ),
            // Reinvoked after `second` changed the object: `first` did nothing this time.
            (
                s("mutation.webhook.admission.k8s.io/round_1_index_1"),
                mutation("first", false),
                Metadata
            ),
        ]
    );
}

#[tokio::test]
async fn failed_calls_that_are_ignored_are_annotated_and_refusals_still_annotate() {
    let (chain, _) = chain(Box::new(|url, _| match url {
        "https://deny/" => Ok(json!({"allowed": false, "auditAnnotations": {"why": "policy"},
            "status": {"code": 403, "message": "no"}})),
        "https://ok/" => Ok(json!({"allowed": true, "auditAnnotations": {"seen": "yes"}})),
        _ => Err(CallError("connection refused".into())),
    }));
    let ignore = json!({"failurePolicy": "Ignore"});
    let mut object = pod(json!({}));
    let mut a = attributes(Operation::Create, "prod", Some(&mut object), None);
    use AuditLevel::Metadata;
    let s = |x: &str| x.to_string();

    let mutating = state(vec![hook("down", pod_rule(), ignore.clone())], vec![]);
    chain.admit(&mut a, &mutating).await.unwrap();
    assert_eq!(
        annotations(&a),
        vec![
            (
                s("mutation.webhook.admission.k8s.io/round_0_index_0"),
                s(r#"{"configuration":"m","webhook":"down","mutated":false}"#),
                Metadata
            ),
            (
                s("failed-open.mutation.webhook.admission.k8s.io/round_0_index_0"),
                s("down"),
                Metadata
            ),
        ]
    );

    // Validating webhooks are numbered among those called.
    let skipped = hook(
        "skipped",
        json!([{"operations": ["DELETE"], "apiGroups": [""],
        "apiVersions": ["v1"], "resources": ["pods"]}]),
        json!({}),
    );
    let validating = state(
        vec![],
        vec![skipped, hook("ok", pod_rule(), json!({})), hook("down", pod_rule(), ignore.clone())],
    );
    chain.validate(&a, &validating).await.unwrap();
    let mut found = annotations(&a);
    found.sort();
    assert_eq!(
        found,
        vec![
            (
                s("failed-open.validating.webhook.admission.k8s.io/round_0_index_1"),
                s("down"),
                Metadata
            ),
            (s("ok/seen"), s("yes"), Metadata),
        ]
    );

    let denying = state(vec![], vec![hook("deny", pod_rule(), json!({}))]);
    chain.validate(&a, &denying).await.unwrap_err();
    assert_eq!(annotations(&a), vec![(s("deny/why"), s("policy"), Metadata)]);
}
