//! Admission webhooks against a webhook server written here (HTTPS with a CA the test makes):
//! reached by `url` on loopback and by `service` through a selector-less Service whose
//! hand-written Endpoints name an address of this machine (the API refuses loopback
//! addresses in Endpoints, as upstream's; the address's route is checked local). A mutating
//! webhook labels pods by JSON patch, a validating one refuses some (kubectl shows
//! upstream's text); failing webhooks obey failurePolicy; a slow one times out; dry runs
//! call webhooks without side effects, told so; kube-rs sees the refusal's Status.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::node::assert_route_is_local;
use rkube_conformance::webhook::{local_non_loopback_ipv4, Answer, Handler, TestCa, WebhookServer};
use serde_json::{json, Value};

const MUTATED: &str = "webhook.rkube.test/mutated";

fn pod(name: &str, namespace: &str) -> String {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
           "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}})
    .to_string()
}

fn configmap(name: &str, namespace: &str) -> String {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}})
        .to_string()
}

/// A namespace labelled for the test's webhooks, with its default service account.
fn namespace(s: &RkubeServer, name: &str) {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": name, "labels": {"webhooks": name}}});
    s.ok_stdin(&["apply", "-f", "-"], &ns.to_string());
    s.wait_until("the default service account", Duration::from_secs(30), || {
        let out = s.kubectl(&["get", "serviceaccount", "default", "-n", name]);
        (out.status.success(), String::from_utf8_lossy(&out.stderr).to_string())
    });
}

/// A webhook (of either kind) for CREATEs of `resources` in the namespaces labelled
/// `webhooks=<namespace>`.
fn hook(name: &str, client: Value, resources: &[&str], namespace: &str, extra: Value) -> Value {
    let mut w = json!({
        "name": name,
        "clientConfig": client,
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": resources}],
        "namespaceSelector": {"matchLabels": {"webhooks": namespace}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1", "v1beta1"],
    });
    for (k, v) in extra.as_object().expect("an object") {
        w[k] = v.clone();
    }
    w
}

fn configure(s: &RkubeServer, kind: &str, name: &str, webhooks: Vec<Value>) {
    let config = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                        "metadata": {"name": name}, "webhooks": webhooks});
    s.ok_stdin(&["apply", "-f", "-"], &config.to_string());
}

/// Creates `manifest` until the webhooks answer (the configuration reaches the server's
/// cache a moment after it is stored): the first answer that `done` accepts, as kubectl's
/// (success, stdout, stderr).
fn create_until(
    s: &RkubeServer,
    manifest: impl Fn(usize) -> String,
    done: impl Fn(bool, &str) -> bool,
) -> (bool, String, String) {
    let deadline = Instant::now() + Duration::from_secs(20);
    for attempt in 0.. {
        let out = s.kubectl_with(&s.kubectl, &["create", "-f", "-"], Some(&manifest(attempt)));
        let (ok, stdout, stderr) = (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        );
        if done(ok, &stderr) {
            return (ok, stdout, stderr);
        }
        assert!(Instant::now() < deadline, "the webhooks never answered: {stderr}");
        std::thread::sleep(Duration::from_millis(100));
    }
    unreachable!()
}

#[test]
fn webhooks_label_and_refuse_pods_through_a_service_and_a_url() {
    let s = RkubeServer::start();
    let ca = TestCa::new("rkube webhook test CA");
    let handler: Handler = Arc::new(|path, request| match path {
        "/mutate" => match request["object"]["metadata"]["labels"].is_object() {
            true => Answer::patch(
                json!([{"op": "add", "path": "/metadata/labels/webhook.rkube.test~1mutated", "value": "yes"}]),
            ),
            false => Answer::patch(
                json!([{"op": "add", "path": "/metadata/labels", "value": {MUTATED: "yes"}}]),
            ),
        },
        "/validate" => {
            let name = request["name"].as_str().unwrap_or("");
            if name.starts_with("bad-") {
                Answer::deny(json!({"code": 403, "reason": "Forbidden",
                                    "message": format!("pod name {name:?} is not allowed")}))
            } else {
                let mut allow = Answer::allow();
                allow.response["warnings"] = json!(["checked by the test webhook"]);
                allow
            }
        }
        _ => Answer::allow(),
    });
    // The mutating webhook through a Service: an address Endpoints may name.
    let ip = local_non_loopback_ipv4().expect("this machine has a non-loopback IPv4 address");
    assert_route_is_local(&ip.to_string());
    let behind_service = WebhookServer::start_on(ip, &ca, &["hook.hooks.svc"], handler.clone());
    let by_url = WebhookServer::start(&ca, &[], handler);
    namespace(&s, "hooks");
    let port = behind_service.addr.port();
    let service = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hook", "namespace": "hooks"},
         "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}},
        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "hook", "namespace": "hooks"},
         "subsets": [{"addresses": [{"ip": ip.to_string()}], "ports": [{"name": "https", "port": port}]}]},
    ]});
    s.ok_stdin(&["apply", "-f", "-"], &service.to_string());
    let service_client = json!({"service": {"namespace": "hooks", "name": "hook", "path": "/mutate"},
                                "caBundle": ca.bundle()});
    configure(
        &s,
        "MutatingWebhookConfiguration",
        "label-pods",
        vec![hook("label.rkube.test", service_client, &["pods"], "hooks", json!({}))],
    );
    let url_client = json!({"url": by_url.url("/validate"), "caBundle": ca.bundle()});
    configure(
        &s,
        "ValidatingWebhookConfiguration",
        "check-pods",
        vec![hook("check.rkube.test", url_client, &["pods"], "hooks", json!({}))],
    );

    // Refused, with upstream's text, once the webhook answers.
    let (_, _, stderr) = create_until(&s, |i| pod(&format!("bad-{i}"), "hooks"), |ok, _| !ok);
    let name = stderr.split("pod name \"").nth(1).and_then(|r| r.split('"').next()).unwrap_or("");
    assert_eq!(
        stderr.trim(),
        format!("Error from server (Forbidden): error when creating \"STDIN\": admission webhook \"check.rkube.test\" denied the request: pod name \"{name}\" is not allowed")
    );
    // Labelled by the webhook behind the Service, checked (with a warning) by the other.
    let (_, _, stderr) = create_until(&s, |_| pod("good", "hooks"), |ok, _| ok);
    assert!(stderr.contains("Warning: checked by the test webhook"), "{stderr}");
    let label = s.ok(&[
        "get",
        "pod",
        "good",
        "-n",
        "hooks",
        "-o",
        "jsonpath={.metadata.labels.webhook\\.rkube\\.test/mutated}",
    ]);
    assert_eq!(label, "yes");
    // What the webhooks were sent.
    let reviews = behind_service.reviews_to("/mutate");
    let review =
        reviews.iter().rev().find(|r| r["request"]["name"] == "good").expect("the mutating review");
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    let request = &review["request"];
    assert_eq!(request["kind"], json!({"group": "", "version": "v1", "kind": "Pod"}));
    assert_eq!(request["resource"], json!({"group": "", "version": "v1", "resource": "pods"}));
    assert_eq!(request["requestKind"], request["kind"]);
    assert_eq!(
        (request["namespace"].as_str(), request["operation"].as_str()),
        (Some("hooks"), Some("CREATE"))
    );
    assert_eq!(request["userInfo"]["username"], "system:admin");
    assert!(request["userInfo"]["groups"].as_array().unwrap().contains(&json!("system:masters")));
    assert_eq!(request["dryRun"], false);
    assert_eq!(request["options"]["kind"], "CreateOptions");
    // The validating webhook saw the mutated pod.
    let checked = by_url.reviews_to("/validate");
    let checked = checked
        .iter()
        .rev()
        .find(|r| r["request"]["name"] == "good")
        .expect("the validating review");
    assert_eq!(checked["request"]["object"]["metadata"]["labels"][MUTATED], "yes");
    // Pods elsewhere are left alone.
    namespace(&s, "elsewhere");
    s.ok_stdin(&["create", "-f", "-"], &pod("bad-but-elsewhere", "elsewhere"));

    // Dry runs: called when the webhooks have no side effects ...
    let before = by_url.reviews_to("/validate").len();
    s.ok_stdin(&["create", "--dry-run=server", "-f", "-"], &pod("dry", "hooks"));
    let dry = by_url.reviews_to("/validate");
    assert_eq!(dry.len(), before + 1);
    assert_eq!(dry[before]["request"]["dryRun"], true);
    // (A webhook with side effects, which a dry run must not call, cannot be stored: v1
    // accepts only `None` and `NoneOnDryRun`. The plugin's refusal is unit-tested.)

    // kube-rs sees the refusal's Status.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        use k8s_openapi::api::core::v1::Pod;
        let client = s.kube_client().await.unwrap();
        let pods: kube::Api<Pod> = kube::Api::namespaced(client, "hooks");
        let bad: Pod = serde_json::from_str(&pod("bad-from-kube-rs", "hooks")).unwrap();
        match pods.create(&Default::default(), &bad).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
                assert_eq!(status.message, "admission webhook \"check.rkube.test\" denied the request: pod name \"bad-from-kube-rs\" is not allowed");
            }
            other => panic!("expected the webhook's refusal, got {other:?}"),
        }
        let good: Pod = serde_json::from_str(&pod("good-from-kube-rs", "hooks")).unwrap();
        let created = pods.create(&Default::default(), &good).await.unwrap();
        assert_eq!(created.metadata.labels.unwrap_or_default().get(MUTATED).map(String::as_str), Some("yes"));
    });
}

#[test]
fn failing_webhooks_obey_the_failure_policy() {
    let s = RkubeServer::start();
    let ca = TestCa::new("rkube webhook test CA");
    let other_ca = TestCa::new("some other CA");
    let server = WebhookServer::start(
        &ca,
        &[],
        Arc::new(|path, _| match path {
            "/slow" => Answer { delay: Duration::from_secs(3), response: json!({"allowed": true}) },
            _ => Answer::allow(),
        }),
    );
    namespace(&s, "failing");
    // A port nothing listens on: bound, then closed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let down = format!("https://127.0.0.1:{closed}/");
    let webhook = |name: &str, url: &str, ca: &TestCa, extra: Value| {
        hook(name, json!({"url": url, "caBundle": ca.bundle()}), &["configmaps"], "failing", extra)
    };

    // Fail: refused with upstream's message. (Each check waits until the configuration it
    // made is the one the server answers with.)
    configure(
        &s,
        "ValidatingWebhookConfiguration",
        "failing",
        vec![webhook("down.rkube.test", &down, &ca, json!({"failurePolicy": "Fail"}))],
    );
    let (_, _, stderr) =
        create_until(&s, |i| configmap(&format!("fail-{i}"), "failing"), |ok, _| !ok);
    assert_eq!(
        stderr.trim(),
        format!("Error from server (InternalError): error when creating \"STDIN\": Internal error occurred: failed calling webhook \"down.rkube.test\": failed to call webhook: Post \"https://127.0.0.1:{closed}/?timeout=10s\": dial tcp 127.0.0.1:{closed}: connect: connection refused")
    );
    // Ignore: created though the webhook still cannot be reached.
    configure(
        &s,
        "ValidatingWebhookConfiguration",
        "failing",
        vec![webhook("down.rkube.test", &down, &ca, json!({"failurePolicy": "Ignore"}))],
    );
    create_until(&s, |i| configmap(&format!("ignored-{i}"), "failing"), |ok, _| ok);

    // A webhook slower than its timeout.
    configure(
        &s,
        "ValidatingWebhookConfiguration",
        "failing",
        vec![webhook("slow.rkube.test", &server.url("/slow"), &ca, json!({"timeoutSeconds": 1}))],
    );
    let started = Instant::now();
    let (_, _, stderr) = create_until(
        &s,
        |i| configmap(&format!("slow-{i}"), "failing"),
        |ok, err| !ok && err.contains("slow.rkube.test"),
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(
        stderr.trim(),
        format!("Error from server (InternalError): error when creating \"STDIN\": Internal error occurred: failed calling webhook \"slow.rkube.test\": failed to call webhook: Post \"{}?timeout=1s\": context deadline exceeded", server.url("/slow"))
    );

    // A server the CA bundle does not vouch for.
    configure(
        &s,
        "ValidatingWebhookConfiguration",
        "failing",
        vec![webhook("untrusted.rkube.test", &server.url("/allow"), &other_ca, json!({}))],
    );
    let (_, _, stderr) = create_until(
        &s,
        |i| configmap(&format!("untrusted-{i}"), "failing"),
        |ok, err| !ok && err.contains("untrusted.rkube.test"),
    );
    assert_eq!(
        stderr.trim(),
        format!("Error from server (InternalError): error when creating \"STDIN\": Internal error occurred: failed calling webhook \"untrusted.rkube.test\": failed to call webhook: Post \"{}?timeout=10s\": tls: failed to verify certificate: x509: certificate signed by unknown authority", server.url("/allow"))
    );
    // Trusted, it allows: and the webhook configuration itself never went to a webhook.
    configure(
        &s,
        "ValidatingWebhookConfiguration",
        "failing",
        vec![webhook("trusted.rkube.test", &server.url("/allow"), &ca, json!({}))],
    );
    create_until(&s, |i| configmap(&format!("trusted-{i}"), "failing"), |ok, _| ok);
    assert!(server
        .reviews_to("/allow")
        .iter()
        .all(|r| r["request"]["kind"]["kind"] == "ConfigMap"));
}
