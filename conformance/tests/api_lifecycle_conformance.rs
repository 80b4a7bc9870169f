//! Upstream's API-operation conformance tests of kinds that only need the API server, done
//! the way upstream's e2e tests do them and with one generic walk for all of them
//! ([`lifecycle`]): discovery lists the resource (and its `/status` and other subresources),
//! three labelled objects are created and watched from a list's resourceVersion, read,
//! listed by label (and across namespaces), merge-patched, replaced, their `/status` read,
//! patched and replaced, one deleted and the rest deleted by collection, and the watch sees
//! each change in order. Kinds: FlowSchema and PriorityLevelConfiguration (APF's "API"
//! tests), CertificateSigningRequest (with `/approval`), core and events.k8s.io Events, and
//! ServiceAccounts (lifecycle and update), CronJobs, PodDisruptionBudgets and Jobs,
//! ValidatingAdmissionPolicies and their bindings (with upstream's variables test). Clients:
//! kube-rs (dynamic objects) and raw HTTPS.

use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    WatchEvent, WatchParams,
};
use rkube_conformance::cluster::{api_resource, run_command, stdout_of, RkubeServer};
use serde_json::{json, Value};

/// One kind as the walk needs it.
struct Kind {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    /// Subresources discovery must list besides the resource (`status`, `approval`).
    subresources: &'static [&'static str],
    /// The object's body but for its metadata.
    body: Value,
    /// A merge patch of the status (when it has a status subresource), and the field of the
    /// status it sets, read back ([`status_took`]).
    status_patch: Option<(Value, &'static str)>,
}

impl Kind {
    fn resource(&self) -> ApiResource {
        api_resource(self.group, self.version, self.kind, self.plural)
    }

    fn discovery_path(&self) -> String {
        match self.group {
            "" => format!("/api/{}", self.version),
            group => format!("/apis/{group}/{}", self.version),
        }
    }
}

/// Whether a status field reads back what was sent: the same value, or for a list of
/// conditions the same first type (the server may add to a condition: a CSR's timestamps).
fn status_took(sent: &Value, got: &Value) -> bool {
    match sent {
        Value::Array(items) => {
            let first = |c: &Value| (c["type"].clone(), c["message"].clone());
            items.first().map(first) == got.get(0).map(first)
        }
        _ => sent == got,
    }
}

/// Another value for a status field than `sent` (a condition's message, a time).
fn another(sent: &Value) -> Value {
    match sent {
        Value::Array(items) => {
            let mut items = items.clone();
            items[0]["message"] = json!("replaced");
            Value::Array(items)
        }
        _ => json!("2026-01-02T00:00:00Z"),
    }
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// A label-selected watch and the changes it has shown, as `(type, name, annotation
/// "step")`.
struct Watched<S> {
    events: S,
    seen: std::collections::HashSet<(String, String, String)>,
}

impl<S: futures_util::Stream<Item = kube::Result<WatchEvent<DynamicObject>>> + Unpin> Watched<S> {
    /// The next event, within 10 s.
    async fn next_event(&mut self) -> WatchEvent<DynamicObject> {
        tokio::time::timeout(Duration::from_secs(10), self.events.try_next())
            .await
            .expect("a watch event within 10 s")
            .expect("a watch event")
            .expect("the watch still open")
    }

    /// The next MODIFIED event of `name` whose object `took` accepts, within 10 s of each
    /// event (others are passed over: a status write keeps the metadata of some kinds, so
    /// it is known by what it changed).
    async fn until(&mut self, name: &str, took: impl Fn(&DynamicObject) -> bool) {
        loop {
            let event = self.next_event().await;
            if let WatchEvent::Modified(o) = event {
                if o.metadata.name.as_deref() == Some(name) && took(&o) {
                    return;
                }
            }
        }
    }

    /// The next change the test made, within 10 s. A MODIFIED event that repeats one already
    /// seen is another writer's (a controller setting the status, as upstream's tests meet it
    /// too) and is passed over.
    async fn change(&mut self) -> (String, String, String) {
        loop {
            let event = self.next_event().await;
            let (kind, object) = match event {
                WatchEvent::Added(o) => ("ADDED", o),
                WatchEvent::Modified(o) => ("MODIFIED", o),
                WatchEvent::Deleted(o) => ("DELETED", o),
                // kube-rs asks for bookmarks; the server sends one now and then.
                WatchEvent::Bookmark(_) => continue,
                other => panic!("unexpected {other:?}"),
            };
            let step = object.metadata.annotations.as_ref().and_then(|a| a.get("step")).cloned();
            let seen = (
                kind.to_string(),
                object.metadata.name.unwrap_or_default(),
                step.unwrap_or_default(),
            );
            let repeat = kind == "MODIFIED"
                && (self.seen.contains(&seen)
                    || self.seen.contains(&("ADDED".into(), seen.1.clone(), seen.2.clone())));
            if !repeat {
                self.seen.insert(seen.clone());
                return seen;
            }
        }
    }
}

fn event(kind: &str, name: &str, step: &str) -> (String, String, String) {
    (kind.to_string(), name.to_string(), step.to_string())
}

/// The walk (see the module doc), in namespace `namespace` for a namespaced kind.
async fn lifecycle(server: &RkubeServer, client: &kube::Client, kind: &Kind, namespace: &str) {
    let label = format!("e2e-{}", kind.plural);
    let selector = format!("e2e-test={label}");
    let resource = kind.resource();
    let api: Api<DynamicObject> = match kind.namespaced {
        true => Api::namespaced_with(client.clone(), namespace, &resource),
        false => Api::all_with(client.clone(), &resource),
    };

    // Discovery.
    let discovery = server.curl(&[], &kind.discovery_path());
    assert_eq!(discovery.code, 200, "{}", discovery.body);
    let listed: Vec<String> = json_of(&discovery.body)["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    assert!(listed.contains(&kind.plural.to_string()), "{listed:?}");
    for sub in kind.subresources {
        assert!(listed.contains(&format!("{}/{sub}", kind.plural)), "{sub}: {listed:?}");
    }

    // Watched from a list's resourceVersion.
    let list = api.list(&ListParams::default().labels(&selector)).await.unwrap();
    assert!(list.items.is_empty());
    let rv = list.metadata.resource_version.unwrap();
    let events = api.watch(&WatchParams::default().labels(&selector), &rv).await.unwrap().boxed();
    let mut events = Watched { events, seen: Default::default() };

    // Three made, each seen.
    let names: Vec<String> = (1..=3).map(|i| format!("{label}-{i}")).collect();
    for name in &names {
        let mut object = kind.body.clone();
        object["apiVersion"] = json!(resource.api_version);
        object["kind"] = json!(kind.kind);
        object["metadata"] = json!({"name": name, "labels": {"e2e-test": label}, "annotations": {"step": "created"}});
        let object: DynamicObject = serde_json::from_value(object).unwrap();
        api.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("create {name}: {e}"));
        assert_eq!(events.change().await, event("ADDED", name, "created"));
    }
    let first = &names[0];
    let got = api.get(first).await.unwrap();
    assert_eq!(got.metadata.labels.unwrap()["e2e-test"], label);
    let listed = api.list(&ListParams::default().labels(&selector)).await.unwrap();
    assert_eq!(listed.items.len(), 3);
    if kind.namespaced {
        let everywhere: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let all = everywhere.list(&ListParams::default().labels(&selector)).await.unwrap();
        assert_eq!(all.items.len(), 3);
    }

    // Merge patch, then a replace of what was read.
    let patch = json!({"metadata": {"annotations": {"step": "patched"}}});
    let patched = api.patch(first, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(patched.metadata.annotations.as_ref().unwrap()["step"], "patched");
    assert_eq!(events.change().await, event("MODIFIED", first, "patched"));
    let mut read = api.get(first).await.unwrap();
    read.metadata.annotations.get_or_insert_default().insert("step".into(), "updated".into());
    let updated = api.replace(first, &PostParams::default(), &read).await.unwrap();
    assert_eq!(updated.metadata.annotations.as_ref().unwrap()["step"], "updated");
    assert_eq!(events.change().await, event("MODIFIED", first, "updated"));

    // The status subresource: read, merge-patched, replaced.
    if let Some((status_patch, field)) = &kind.status_patch {
        let status = api.get_status(first).await.unwrap();
        assert_eq!(status.metadata.name.as_deref(), Some(first.as_str()));
        // (Not marked with a step: some kinds' status writes keep the old metadata.)
        let sent = &status_patch[field];
        let body = json!({"status": status_patch});
        let patched =
            api.patch_status(first, &PatchParams::default(), &Patch::Merge(&body)).await.unwrap();
        assert!(status_took(sent, &patched.data["status"][field]), "{:?}", patched.data);
        events.until(first, |o| status_took(sent, &o.data["status"][field])).await;
        let mut read = api.get_status(first).await.unwrap();
        let replacement = another(sent);
        read.data["status"][field] = replacement.clone();
        let replaced = api.replace_status(first, &PostParams::default(), &read).await.unwrap();
        assert!(status_took(&replacement, &replaced.data["status"][field]), "{:?}", replaced.data);
        events.until(first, |o| status_took(&replacement, &o.data["status"][field])).await;
    }

    // One deleted, the rest by collection.
    api.delete(first, &DeleteParams::default()).await.unwrap();
    let (kind_seen, name, _) = events.change().await;
    assert_eq!((kind_seen.as_str(), name.as_str()), ("DELETED", first.as_str()));
    assert_eq!(api.list(&ListParams::default().labels(&selector)).await.unwrap().items.len(), 2);
    api.delete_collection(&DeleteParams::default(), &ListParams::default().labels(&selector))
        .await
        .unwrap();
    let mut deleted: Vec<String> = Vec::new();
    for _ in 0..2 {
        let (kind_seen, name, _) = events.change().await;
        assert_eq!(kind_seen, "DELETED");
        deleted.push(name);
    }
    deleted.sort();
    assert_eq!(deleted, names[1..]);
    assert!(api.list(&ListParams::default().labels(&selector)).await.unwrap().items.is_empty());
}

/// A PEM certificate request for `/CN=<cn>` (a fresh EC key), base64 as the API carries it.
fn certificate_request(server: &RkubeServer, cn: &str) -> String {
    let key = server.data_dir.path().join(format!("{cn}.key"));
    let out = run_command(
        std::process::Command::new("openssl")
            .args(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"])
            .args(["-nodes", "-subj", &format!("/CN={cn}"), "-keyout"])
            .arg(&key),
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let encoded = run_command(
        std::process::Command::new("openssl").args(["base64", "-A"]),
        Some(&out.stdout),
    );
    stdout_of(&encoded).trim().to_string()
}

#[tokio::test]
async fn flow_control_csr_event_and_service_account_apis_as_upstream() {
    let server = RkubeServer::start_with(&["--disable", "scheduler,controllers"]);
    let client = server.kube_client().await.unwrap();
    server.ok(&["create", "namespace", "e2e-lifecycle"]);
    let ns = "e2e-lifecycle";
    let now = "2026-01-01T00:00:00.000000Z";
    let kinds = [
        Kind {
            group: "flowcontrol.apiserver.k8s.io",
            version: "v1",
            kind: "FlowSchema",
            plural: "flowschemas",
            namespaced: false,
            subresources: &["status"],
            body: json!({"spec": {
                "priorityLevelConfiguration": {"name": "global-default"},
                "matchingPrecedence": 10000,
                "rules": [{"subjects": [{"kind": "User", "user": {"name": "e2e-user"}}],
                           "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}}),
            status_patch: Some((
                json!({"conditions": [{"type": "StatusPatched", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "E2E", "message": "patched"}]}),
                "conditions",
            )),
        },
        Kind {
            group: "flowcontrol.apiserver.k8s.io",
            version: "v1",
            kind: "PriorityLevelConfiguration",
            plural: "prioritylevelconfigurations",
            namespaced: false,
            subresources: &["status"],
            body: json!({"spec": {"type": "Limited", "limited": {
                "nominalConcurrencyShares": 2, "limitResponse": {"type": "Reject"}}}}),
            status_patch: Some((
                json!({"conditions": [{"type": "StatusPatched", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "E2E", "message": "patched"}]}),
                "conditions",
            )),
        },
        Kind {
            group: "certificates.k8s.io",
            version: "v1",
            kind: "CertificateSigningRequest",
            plural: "certificatesigningrequests",
            namespaced: false,
            subresources: &["status", "approval"],
            body: json!({"spec": {
                "request": certificate_request(&server, "e2e-csr"),
                "signerName": "example.com/e2e",
                "usages": ["digital signature", "key encipherment", "client auth"]}}),
            status_patch: Some((
                json!({"conditions": [{"type": "StatusPatched", "status": "True", "reason": "E2E", "message": "patched"}]}),
                "conditions",
            )),
        },
        Kind {
            group: "",
            version: "v1",
            kind: "Event",
            plural: "events",
            namespaced: true,
            subresources: &[],
            body: json!({
                "involvedObject": {"kind": "Pod", "namespace": ns, "name": "e2e-pod", "apiVersion": "v1"},
                "reason": "E2E", "message": "lifecycle", "type": "Normal", "count": 1,
                "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
                "source": {"component": "e2e"}, "reportingComponent": "e2e", "reportingInstance": "e2e-1"}),
            status_patch: None,
        },
        Kind {
            group: "events.k8s.io",
            version: "v1",
            kind: "Event",
            plural: "events",
            namespaced: true,
            subresources: &[],
            body: json!({
                "eventTime": now, "reportingController": "e2e.example.com/controller",
                "reportingInstance": "e2e-1", "action": "Test", "reason": "E2E", "type": "Normal",
                "note": "lifecycle",
                "regarding": {"kind": "Pod", "namespace": ns, "name": "e2e-pod", "apiVersion": "v1"}}),
            status_patch: None,
        },
        Kind {
            group: "",
            version: "v1",
            kind: "ServiceAccount",
            plural: "serviceaccounts",
            namespaced: true,
            subresources: &["token"],
            body: json!({"automountServiceAccountToken": false}),
            status_patch: None,
        },
    ];
    for kind in &kinds {
        lifecycle(&server, &client, kind, ns).await;
    }
}

#[tokio::test]
async fn approval_events_and_service_accounts_keep_what_upstreams_tests_change() {
    let server = RkubeServer::start_with(&["--disable", "scheduler,controllers"]);
    let client = server.kube_client().await.unwrap();
    server.ok(&["create", "namespace", "e2e-details"]);
    let ns = "e2e-details";

    // A CSR's /approval takes an Approved condition; /status refuses to add one, with
    // upstream's message.
    let csr = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "e2e-approval"},
        "spec": {"request": certificate_request(&server, "e2e-approval"), "signerName": "example.com/e2e",
                 "usages": ["client auth"]}});
    server.ok_stdin(&["create", "-f", "-"], &csr.to_string());
    let approve = json!({"status": {"conditions": [{"type": "Approved", "status": "True", "reason": "E2E", "message": "approved"}]}});
    let path = "/apis/certificates.k8s.io/v1/certificatesigningrequests/e2e-approval";
    let merge =
        ["-X", "PATCH", "-H", "Content-Type: application/merge-patch+json", "--data-binary"];
    let through_status =
        server.curl(&[&merge[..], &[&approve.to_string()]].concat(), &format!("{path}/status"));
    assert_eq!(through_status.code, 422, "{}", through_status.body);
    let refusal = json_of(&through_status.body);
    assert_eq!(refusal["details"]["causes"][0]["field"], "status.conditions");
    assert_eq!(
        refusal["details"]["causes"][0]["message"],
        "Forbidden: updates may not add a condition of type \"Approved\""
    );
    let approved =
        server.curl(&[&merge[..], &[&approve.to_string()]].concat(), &format!("{path}/approval"));
    assert_eq!(approved.code, 200, "{}", approved.body);
    assert_eq!(json_of(&approved.body)["status"]["conditions"][0]["type"], "Approved");
    let printed = server.ok(&["get", "csr", "e2e-approval"]);
    assert!(printed.contains("Approved"), "{printed}");

    // A core Event: message patched, series updated, read back; visible in a list of every
    // namespace (upstream's "manage lifecycle of an Event").
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), ns);
    let event: k8s_openapi::api::core::v1::Event = serde_json::from_value(json!({
        "metadata": {"name": "e2e-event", "labels": {"testevent-constant": "true"}},
        "involvedObject": {"kind": "Pod", "namespace": ns, "name": "e2e-pod"},
        "reason": "E2E", "message": "first", "type": "Normal", "count": 1,
        "source": {"component": "e2e"}}))
    .unwrap();
    events.create(&PostParams::default(), &event).await.unwrap();
    let everywhere: Api<k8s_openapi::api::core::v1::Event> = Api::all(client.clone());
    let all =
        everywhere.list(&ListParams::default().labels("testevent-constant=true")).await.unwrap();
    assert_eq!(all.items.len(), 1);
    let patch = json!({"message": "patched"});
    let patched =
        events.patch("e2e-event", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(patched.message.as_deref(), Some("patched"));
    let mut read = events.get("e2e-event").await.unwrap();
    read.series = Some(k8s_openapi::api::core::v1::EventSeries {
        count: Some(2),
        last_observed_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
            "2026-01-01T00:00:01.000000Z".parse().unwrap(),
        )),
    });
    let updated = events.replace("e2e-event", &PostParams::default(), &read).await.unwrap();
    assert_eq!(updated.series.as_ref().unwrap().count, Some(2));
    let described = server.ok(&[
        "get",
        "events",
        "-n",
        ns,
        "e2e-event",
        "-o",
        "jsonpath={.message} {.series.count}",
    ]);
    assert_eq!(described, "patched 2");

    // A ServiceAccount's update keeps the field it changes (upstream's "update a
    // ServiceAccount": automountServiceAccountToken true then false).
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> = Api::namespaced(client.clone(), ns);
    let sa: k8s_openapi::api::core::v1::ServiceAccount = serde_json::from_value(json!({
        "metadata": {"name": "e2e-sa"}, "automountServiceAccountToken": true}))
    .unwrap();
    sas.create(&PostParams::default(), &sa).await.unwrap();
    let mut read = sas.get("e2e-sa").await.unwrap();
    assert_eq!(read.automount_service_account_token, Some(true));
    read.automount_service_account_token = Some(false);
    sas.replace("e2e-sa", &PostParams::default(), &read).await.unwrap();
    assert_eq!(sas.get("e2e-sa").await.unwrap().automount_service_account_token, Some(false));
}

#[tokio::test]
async fn cron_job_disruption_budget_and_job_apis_as_upstream() {
    let server = RkubeServer::start_with(&["--disable", "scheduler,controllers"]);
    let client = server.kube_client().await.unwrap();
    server.ok(&["create", "namespace", "e2e-workloads"]);
    let template = json!({"spec": {"restartPolicy": "OnFailure",
        "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "300"]}]}});
    let kinds = [
        Kind {
            group: "batch",
            version: "v1",
            kind: "CronJob",
            plural: "cronjobs",
            namespaced: true,
            subresources: &["status"],
            body: json!({"spec": {"schedule": "*/1 * * * ?", "jobTemplate": {"spec": {"template": template}}}}),
            status_patch: Some((
                json!({"lastScheduleTime": "2026-01-01T00:00:00Z"}),
                "lastScheduleTime",
            )),
        },
        Kind {
            group: "policy",
            version: "v1",
            kind: "PodDisruptionBudget",
            plural: "poddisruptionbudgets",
            namespaced: true,
            subresources: &["status"],
            body: json!({"spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "none"}}}}),
            status_patch: Some((
                json!({"conditions": [{"type": "StatusPatched", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "E2E", "message": "patched"}],
                       "currentHealthy": 0, "desiredHealthy": 1, "disruptionsAllowed": 0, "expectedPods": 0}),
                "conditions",
            )),
        },
        Kind {
            group: "batch",
            version: "v1",
            kind: "Job",
            plural: "jobs",
            namespaced: true,
            subresources: &["status"],
            body: json!({"spec": {"suspend": true, "template": template}}),
            status_patch: None,
        },
    ];
    for kind in &kinds {
        lifecycle(&server, &client, kind, "e2e-workloads").await;
    }
    // A suspended Job made no pod (upstream's "manage lifecycle" checks it).
    let pods = server.ok(&["get", "pods", "-n", "e2e-workloads", "-o", "name"]);
    assert!(pods.trim().is_empty(), "{pods}");
}

#[tokio::test]
async fn admission_policy_apis_and_a_policy_whose_validations_use_variables() {
    let server = RkubeServer::start_with(&["--disable", "scheduler"]);
    let client = server.kube_client().await.unwrap();
    let rules = json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]});
    let kinds = [
        Kind {
            group: "admissionregistration.k8s.io",
            version: "v1",
            kind: "ValidatingAdmissionPolicy",
            plural: "validatingadmissionpolicies",
            namespaced: false,
            subresources: &["status"],
            body: json!({"spec": {"matchConstraints": rules,
                "validations": [{"expression": "object.spec.replicas < 100"}]}}),
            status_patch: Some((
                json!({"conditions": [{"type": "StatusPatched", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "E2E", "message": "patched"}]}),
                "conditions",
            )),
        },
        Kind {
            group: "admissionregistration.k8s.io",
            version: "v1",
            kind: "ValidatingAdmissionPolicyBinding",
            plural: "validatingadmissionpolicybindings",
            namespaced: false,
            subresources: &[],
            body: json!({"spec": {"policyName": "no-such-policy", "validationActions": ["Deny"]}}),
            status_patch: None,
        },
    ];
    for kind in &kinds {
        lifecycle(&server, &client, kind, "").await;
    }

    // Upstream's "should allow expressions to refer variables": an odd number of replicas
    // above one, through two variables, one built on the other.
    server.ok(&["create", "namespace", "e2e-variables"]);
    server.ok(&["label", "namespace", "e2e-variables", "e2e-policy=variables"]);
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "variables"},
        "spec": {
            "matchConstraints": rules,
            "variables": [
                {"name": "replicas", "expression": "object.spec.replicas"},
                {"name": "oddReplicas", "expression": "variables.replicas % 2 == 1"}],
            "validations": [
                {"expression": "variables.replicas > 1"},
                {"expression": "variables.oddReplicas"}]}});
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "variables"},
        "spec": {"policyName": "variables", "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {"e2e-policy": "variables"}}}}});
    server.ok_stdin(&["create", "-f", "-"], &policy.to_string());
    server.ok_stdin(&["create", "-f", "-"], &binding.to_string());
    let deployment = |name: &str, replicas: u32| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "e2e-variables"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}})
        .to_string()
    };
    // Enforced once the policy is in place (upstream waits for the first refusal).
    let refusal = server.fails_stdin(&["create", "-f", "-"], &deployment("even", 4));
    assert!(
        refusal.contains("ValidatingAdmissionPolicy 'variables' with binding 'variables' denied request: failed expression: variables.oddReplicas"),
        "{refusal}"
    );
    let refusal = server.fails_stdin(&["create", "-f", "-"], &deployment("one", 1));
    assert!(refusal.contains("failed expression: variables.replicas > 1"), "{refusal}");
    server.ok_stdin(&["create", "-f", "-"], &deployment("odd", 3));
}
