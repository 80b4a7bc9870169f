//! The plugin over requests: refusals, warnings, and what it leaves alone.

use serde_json::{json, Value};

use super::*;
use crate::attributes::*;
use crate::state::Snapshot;

fn namespace(name: &str, labels: Value) -> Value {
    json!({"metadata": {"name": name, "labels": labels}, "status": {"phase": "Active"}})
}

fn state() -> Snapshot {
    Snapshot::default()
        .with("", "namespaces", namespace("plain", json!({})))
        .with(
            "",
            "namespaces",
            namespace("strict", json!({"pod-security.kubernetes.io/enforce": "restricted"})),
        )
        .with(
            "",
            "namespaces",
            namespace("warned", json!({"pod-security.kubernetes.io/warn": "baseline"})),
        )
        .with(
            "",
            "namespaces",
            namespace("broken", json!({"pod-security.kubernetes.io/enforce": "strict"})),
        )
        .with(
            "",
            "namespaces",
            namespace(
                "mixed",
                json!({"pod-security.kubernetes.io/enforce": "baseline",
                       "pod-security.kubernetes.io/warn": "restricted",
                       "pod-security.kubernetes.io/warn-version": "v1.22"}),
            ),
        )
        .with(
            "",
            "pods",
            json!({"metadata": {"namespace": "plain", "name": "root"},
                   "spec": {"hostNetwork": true, "containers": [{"name": "c", "image": "i"}]}}),
        )
}

fn privileged_pod(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"containers": [
        {"name": "c", "image": "busybox", "securityContext": {"privileged": true}}]}})
}

fn compliant_pod() -> Value {
    json!({"metadata": {"name": "ok"}, "spec": {
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "image": "busybox", "securityContext": {
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}})
}

struct Request {
    operation: Operation,
    group: &'static str,
    resource: &'static str,
    subresource: &'static str,
    kind: &'static str,
    namespace: &'static str,
    name: &'static str,
    object: Value,
    old: Option<Value>,
}

impl Request {
    fn create(resource: &'static str, namespace: &'static str, object: Value) -> Request {
        let (group, kind) = match resource {
            "pods" => ("", "Pod"),
            "namespaces" => ("", "Namespace"),
            "deployments" => ("apps", "Deployment"),
            "cronjobs" => ("batch", "CronJob"),
            other => panic!("{other}"),
        };
        let name = match object["metadata"]["name"].as_str() {
            Some(name) => name.to_string().leak(),
            None => "",
        };
        Request {
            operation: Operation::Create,
            group,
            resource,
            subresource: "",
            kind,
            namespace,
            name,
            object,
            old: None,
        }
    }

    fn update(mut self, old: Value) -> Request {
        self.operation = Operation::Update;
        self.old = Some(old);
        self
    }

    /// The plugin's answer, and the warnings it gave.
    async fn run(self, state: &Snapshot) -> (Result<(), AdmissionError>, Vec<String>) {
        let (result, warnings, _) = self.run_audited(state).await;
        (result, warnings)
    }

    /// [`Request::run`], with the audit annotations left (key, value), all at level Metadata.
    async fn run_audited(
        mut self,
        state: &Snapshot,
    ) -> (Result<(), AdmissionError>, Vec<String>, Vec<(String, String)>) {
        let a = Attributes {
            operation: self.operation,
            user: UserInfo::default(),
            resource: GroupVersionResource {
                group: self.group,
                version: "v1",
                resource: self.resource,
            },
            subresource: self.subresource,
            kind: GroupVersionKind { group: self.group, version: "v1", kind: self.kind },
            namespace: self.namespace,
            name: self.name,
            object: Some(&mut self.object),
            old_object: self.old.as_ref(),
            dry_run: false,
            options: OperationOptions::None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        };
        let result = PodSecurity.validate(&a, state).await;
        let annotations = a.audit_annotations.take();
        assert!(annotations.iter().all(|x| x.level == AuditLevel::Metadata));
        let annotations = annotations.into_iter().map(|x| (x.key, x.value)).collect();
        (result, a.warnings.take(), annotations)
    }
}

const PRIVILEGED_RESTRICTED: &str = "privileged (container \"c\" must not set securityContext.privileged=true), allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")";

#[tokio::test]
async fn enforce_refuses_with_upstreams_message_and_admits_compliant_pods() {
    let state = state();
    let (result, warnings) =
        Request::create("pods", "strict", privileged_pod("web")).run(&state).await;
    let e = result.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("pods \"web\" is forbidden: violates PodSecurity \"restricted:latest\": {PRIVILEGED_RESTRICTED}")
    );
    assert!(matches!(e, AdmissionError::Forbidden { ref name, .. } if name == "web"));
    // A refusal carries no warning.
    assert!(warnings.is_empty());

    let (result, warnings) = Request::create("pods", "strict", compliant_pod()).run(&state).await;
    assert_eq!((result, warnings), (Ok(()), vec![]));

    // Without a name (the server passes a create's generated one), upstream names no pod.
    let mut generated = privileged_pod("");
    generated["metadata"] = json!({"generateName": "web-"});
    let (result, _) = Request::create("pods", "strict", generated).run(&state).await;
    assert!(result.unwrap_err().to_string().starts_with("pods is forbidden: violates PodSecurity"));
}

#[tokio::test]
async fn warn_admits_with_a_warning() {
    let state = state();
    let (result, warnings) =
        Request::create("pods", "warned", privileged_pod("p")).run(&state).await;
    assert_eq!(result, Ok(()));
    assert_eq!(
        warnings,
        ["would violate PodSecurity \"baseline:latest\": privileged (container \"c\" must not set securityContext.privileged=true)"]
    );
    // Unlabelled namespaces are privileged: nothing to say.
    let (result, warnings) =
        Request::create("pods", "plain", privileged_pod("p")).run(&state).await;
    assert_eq!((result, warnings), (Ok(()), vec![]));
    // Enforce and warn at different levels and versions: refused only by the first,
    // warned by the second (v1.22: no runAsUser check yet).
    let mut root = compliant_pod();
    root["spec"]["securityContext"]["runAsUser"] = json!(0);
    root["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = json!(true);
    let (result, warnings) = Request::create("pods", "mixed", root).run(&state).await;
    assert_eq!(result, Ok(()));
    assert_eq!(
        warnings,
        ["would violate PodSecurity \"restricted:v1.22\": allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false)"]
    );
}

#[tokio::test]
async fn labels_that_do_not_parse_enforce_restricted() {
    let state = state();
    let (result, _) = Request::create("pods", "broken", privileged_pod("p")).run(&state).await;
    assert!(result.unwrap_err().to_string().contains("violates PodSecurity \"restricted:latest\""));
    let (result, _) = Request::create("pods", "broken", compliant_pod()).run(&state).await;
    assert_eq!(result, Ok(()));
}

#[tokio::test]
async fn workload_templates_are_warned_never_refused() {
    let state = state();
    let template = privileged_pod("");
    let deployment = json!({"metadata": {"name": "d"}, "spec": {"template": template}});
    let (result, warnings) =
        Request::create("deployments", "strict", deployment.clone()).run(&state).await;
    assert_eq!(result, Ok(()));
    assert_eq!(
        warnings,
        [format!("would violate PodSecurity \"restricted:latest\": {PRIVILEGED_RESTRICTED}")]
    );
    let cron = json!({"metadata": {"name": "j"},
        "spec": {"jobTemplate": {"spec": {"template": template}}}});
    let (result, warnings) = Request::create("cronjobs", "warned", cron).run(&state).await;
    assert_eq!(result, Ok(()));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let (_, warnings) =
        Request::create("deployments", "plain", deployment.clone()).run(&state).await;
    assert!(warnings.is_empty());
    // Subresources (scale, status) are not looked at.
    let mut scale = Request::create("deployments", "strict", deployment);
    scale.subresource = "scale";
    assert_eq!(scale.run(&state).await, (Ok(()), vec![]));
}

#[tokio::test]
async fn pod_updates_are_checked_only_when_images_or_containers_change() {
    let state = state();
    let old = privileged_pod("p");
    let mut relabelled = old.clone();
    relabelled["metadata"]["labels"] = json!({"a": "b"});
    let (result, _) =
        Request::create("pods", "strict", relabelled).update(old.clone()).run(&state).await;
    assert_eq!(result, Ok(()));
    let mut new_image = old.clone();
    new_image["spec"]["containers"][0]["image"] = json!("busybox:2");
    let (result, _) =
        Request::create("pods", "strict", new_image).update(old.clone()).run(&state).await;
    assert!(result.is_err());
    // An ephemeral container added (kubectl debug) is checked.
    let mut debugged = compliant_pod();
    debugged["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox"}]);
    let mut ephemeral = Request::create("pods", "strict", debugged).update(compliant_pod());
    ephemeral.subresource = "ephemeralcontainers";
    let (result, _) = ephemeral.run(&state).await;
    assert!(result.unwrap_err().to_string().contains("container \"debug\" must set"));
    // Status writes never are.
    let mut status = Request::create("pods", "strict", old.clone()).update(old);
    status.subresource = "status";
    assert_eq!(status.run(&state).await.0, Ok(()));
}

#[tokio::test]
async fn namespace_labels_must_parse() {
    let state = state();
    let bad = namespace(
        "n",
        json!({"pod-security.kubernetes.io/enforce": "strict",
        "pod-security.kubernetes.io/warn-version": "v2"}),
    );
    let (result, _) = Request::create("namespaces", "", bad.clone()).run(&state).await;
    let AdmissionError::Invalid { kind, name, causes, .. } = result.unwrap_err() else {
        panic!("not Invalid")
    };
    assert_eq!((kind.as_str(), name.as_str()), ("Namespace", "n"));
    let lines: Vec<String> = causes.iter().map(|c| c.line()).collect();
    assert_eq!(
        lines,
        [
            "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted",
            "metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: \"v2\": must be \"latest\" or \"v1.x\"",
        ]
    );
    // Already wrong the same way: other changes go through; a new mistake does not.
    let mut relabelled = bad.clone();
    relabelled["metadata"]["labels"]["team"] = json!("a");
    let (result, _) =
        Request::create("namespaces", "", relabelled.clone()).update(bad.clone()).run(&state).await;
    assert_eq!(result, Ok(()));
    relabelled["metadata"]["labels"]["pod-security.kubernetes.io/audit"] = json!("x");
    let (result, _) = Request::create("namespaces", "", relabelled).update(bad).run(&state).await;
    assert!(matches!(result, Err(AdmissionError::Invalid { .. })));
}

#[tokio::test]
async fn a_stricter_enforce_level_warns_about_existing_pods() {
    let state = state();
    let old = namespace("plain", json!({}));
    let stricter = namespace("plain", json!({"pod-security.kubernetes.io/enforce": "baseline"}));
    let (result, warnings) =
        Request::create("namespaces", "", stricter.clone()).update(old.clone()).run(&state).await;
    assert_eq!(result, Ok(()));
    assert_eq!(
        warnings,
        [
            "existing pods in namespace \"plain\" violate the new PodSecurity enforce level \"baseline:latest\"",
            "root: host namespaces",
        ]
    );
    // Relaxed at the same version, or privileged, or unchanged: no dry run.
    let (_, warnings) =
        Request::create("namespaces", "", old.clone()).update(stricter.clone()).run(&state).await;
    assert!(warnings.is_empty());
    let (_, warnings) =
        Request::create("namespaces", "", stricter.clone()).update(stricter).run(&state).await;
    assert!(warnings.is_empty());
    let privileged = namespace(
        "plain",
        json!({"pod-security.kubernetes.io/enforce": "privileged",
        "pod-security.kubernetes.io/enforce-version": "v1.0"}),
    );
    let (_, warnings) = Request::create("namespaces", "", privileged).update(old).run(&state).await;
    assert!(warnings.is_empty());
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> =
        expected.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    v.sort();
    v
}

async fn annotations_of(request: Request, state: &Snapshot) -> Vec<(String, String)> {
    let (_, _, mut found) = request.run_audited(state).await;
    found.sort();
    found
}

#[tokio::test]
async fn pods_checked_are_annotated_with_the_enforced_policy_and_audit_violations() {
    let state = state()
        .with(
            "",
            "namespaces",
            namespace(
                "audited",
                json!({"pod-security.kubernetes.io/audit": "restricted",
                                        "pod-security.kubernetes.io/audit-version": "v1.30"}),
            ),
        )
        .with(
            "",
            "namespaces",
            namespace(
                "both",
                json!({"pod-security.kubernetes.io/enforce": "restricted",
                                     "pod-security.kubernetes.io/audit": "restricted"}),
            ),
        );
    const ENFORCE: &str = "pod-security.kubernetes.io/enforce-policy";
    const AUDIT: &str = "pod-security.kubernetes.io/audit-violations";
    // Privileged in every mode: upstream's shared answer.
    let plain = Request::create("pods", "plain", privileged_pod("p"));
    assert_eq!(annotations_of(plain, &state).await, pairs(&[(ENFORCE, "privileged:latest")]));

    let audited = Request::create("pods", "audited", privileged_pod("p"));
    let (result, warnings, found) = audited.run_audited(&state).await;
    assert_eq!((result, warnings), (Ok(()), vec![]));
    let violations =
        format!("would violate PodSecurity \"restricted:v1.30\": {PRIVILEGED_RESTRICTED}");
    let mut found = found;
    found.sort();
    assert_eq!(found, pairs(&[(ENFORCE, "privileged:latest"), (AUDIT, &violations)]));
    let compliant = Request::create("pods", "audited", compliant_pod());
    assert_eq!(annotations_of(compliant, &state).await, pairs(&[(ENFORCE, "privileged:latest")]));

    // A refused pod is annotated too.
    let refused = Request::create("pods", "both", privileged_pod("p"));
    let violations =
        format!("would violate PodSecurity \"restricted:latest\": {PRIVILEGED_RESTRICTED}");
    assert_eq!(
        annotations_of(refused, &state).await,
        pairs(&[(ENFORCE, "restricted:latest"), (AUDIT, &violations)])
    );

    // Labels that do not parse: enforce fails closed, and the error is noted.
    let broken = Request::create("pods", "broken", compliant_pod());
    assert_eq!(
        annotations_of(broken, &state).await,
        pairs(&[
            ("pod-security.kubernetes.io/error", "Failed to parse policy: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted"),
            (ENFORCE, "restricted:latest"),
        ])
    );

    // Workload resources: audit violations, never an enforced policy.
    let template = |object: Value| json!({"metadata": {"name": "d"}, "spec": {"template": {"metadata": {}, "spec": object["spec"]}}});
    let deployment = Request::create("deployments", "audited", template(privileged_pod("p")));
    let violations =
        format!("would violate PodSecurity \"restricted:v1.30\": {PRIVILEGED_RESTRICTED}");
    assert_eq!(annotations_of(deployment, &state).await, pairs(&[(AUDIT, &violations)]));
    let deployment = Request::create("deployments", "plain", template(privileged_pod("p")));
    assert!(annotations_of(deployment, &state).await.is_empty());
    let deployment = Request::create("deployments", "missing", template(privileged_pod("p")));
    assert_eq!(
        annotations_of(deployment, &state).await,
        pairs(&[(
            "pod-security.kubernetes.io/error",
            "failed to lookup namespace \"missing\": namespaces \"missing\" not found"
        )])
    );

    // An update that changes nothing the standards read is not checked, so not annotated.
    let same = Request::create("pods", "audited", privileged_pod("p")).update(privileged_pod("p"));
    assert!(annotations_of(same, &state).await.is_empty());
}
