//! Upstream's "Admission webhook" conformance cases (test/e2e/apimachinery/webhook.go), as
//! they assert them, against a webhook server written here that answers like upstream's
//! agnhost webhook (HTTPS with a test CA, reached by `url` on loopback rather than through a
//! Deployment behind a Service). One test covers ConfigMaps, pods and the configurations
//! themselves (listing, deletecollection, updates taking effect, ordered mutation,
//! matchConditions, defaulting after mutation, CONNECT of `pods/attach`, webhooks never
//! called for webhook configurations, discovery); the other custom resources and their
//! definitions (denied create, update and delete, mutation, a changed storage version,
//! pruning of what a webhook added).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rkube_conformance::cluster::{stderr_of, stdout_of, RkubeServer};
use rkube_conformance::node::SimulatedNodes;
use rkube_conformance::webhook::{Answer, Handler, TestCa, WebhookServer};
use serde_json::{json, Value};

const NS: &str = "webhook-conformance";
const GROUP: &str = "webhook.rkube.test";

/// The webhook: upstream agnhost's answers, by path.
fn handler() -> Handler {
    Arc::new(|path, request| {
        let data = |field: &str| request[field]["data"].clone();
        match path {
            // Mutations in stages: the second stage needs the first's key.
            "/mutating-configmaps" | "/mutating-custom-resource" => {
                let object = data("object");
                if object["mutation-stage-1"] == "yes" {
                    Answer::patch(
                        json!([{"op": "add", "path": "/data/mutation-stage-2", "value": "yes"}]),
                    )
                } else if object["mutation-start"] == "yes" {
                    Answer::patch(
                        json!([{"op": "add", "path": "/data/mutation-stage-1", "value": "yes"}]),
                    )
                } else {
                    Answer::allow()
                }
            }
            "/configmaps" if data("object")["webhook-e2e-test"] == "webhook-disallow" => {
                deny("the configmap contains unwanted key and value")
            }
            "/custom-resource" => match request["operation"].as_str() {
                Some("DELETE") if data("oldObject")["webhook-e2e-test"] == "webhook-nondeletable" => {
                    deny("the custom resource cannot be deleted because it contains unwanted key and value")
                }
                Some("CREATE" | "UPDATE")
                    if data("object")["webhook-e2e-test"] == "webhook-disallow" =>
                {
                    deny("the custom resource contains unwanted data")
                }
                _ => Answer::allow(),
            },
            "/mutating-pods" => Answer::patch(json!([{"op": "add", "path": "/spec/initContainers",
                "value": [{"name": "webhook-added-init-container", "image": "webhook-added-image",
                           "resources": {}}]}])),
            "/crd" if request["object"]["metadata"]["labels"]["webhook-e2e-test"]
                == "webhook-disallow" =>
            {
                deny("the crd contains unwanted label")
            }
            "/pods/attach"
                if request["name"] == "to-be-attached-pod"
                    && request["object"]["container"] == "container1" =>
            {
                deny("attaching to pod 'to-be-attached-pod' is not allowed")
            }
            "/always-deny" => deny("this webhook denies all requests"),
            "/add-label" => Answer::patch(json!([{"op": "add", "path": "/metadata/labels",
                "value": {"added-label": "yes"}}])),
            _ => Answer::allow(),
        }
    })
}

/// A refusal as agnhost answers it: a message, no code (the server makes it 400).
fn deny(message: &str) -> Answer {
    Answer::deny(json!({"message": message}))
}

/// A webhook on `rules`, reached at `path`, for namespaced objects only in the test's
/// namespace (the namespace selector ignores cluster-scoped ones).
fn hook(server: &WebhookServer, ca: &TestCa, name: &str, path: &str, rules: Value) -> Value {
    json!({
        "name": name,
        "clientConfig": {"url": server.url(path), "caBundle": ca.bundle()},
        "rules": rules,
        "namespaceSelector": {"matchLabels": {"webhooks": NS}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1", "v1beta1"],
    })
}

fn rule(operations: &[&str], group: &str, resources: &[&str]) -> Value {
    json!([{"operations": operations, "apiGroups": [group], "apiVersions": ["*"],
            "resources": resources}])
}

fn configuration(kind: &str, name: &str, labels: Value, webhooks: Vec<Value>) -> String {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
           "metadata": {"name": name, "labels": labels}, "webhooks": webhooks})
    .to_string()
}

/// Calls `attempt` (with its number) until it returns something, for 30 s at most: a
/// configuration reaches the server's webhook cache a moment after it is stored.
fn until<T>(what: &str, mut attempt: impl FnMut(usize) -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    for i in 0.. {
        if let Some(done) = attempt(i) {
            return done;
        }
        assert!(Instant::now() < deadline, "{what}: not within 30 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    unreachable!()
}

/// Creates `manifest`: the created object, or kubectl's error.
fn create(s: &RkubeServer, manifest: &Value) -> Result<Value, String> {
    let out = s.kubectl_with(
        &s.kubectl,
        &["create", "-o", "json", "-f", "-"],
        Some(&manifest.to_string()),
    );
    match out.status.success() {
        true => Ok(serde_json::from_str(&stdout_of(&out)).expect("JSON")),
        false => Err(stderr_of(&out)),
    }
}

fn configmap(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": NS}, "data": data})
}

/// Creates ConfigMaps (named `prefix-<n>`) with `data` until `done` accepts the outcome.
fn configmaps_until(
    s: &RkubeServer,
    what: &str,
    prefix: &str,
    data: Value,
    done: impl Fn(&Result<Value, String>) -> bool,
) -> Result<Value, String> {
    until(what, |i| {
        let outcome = create(s, &configmap(&format!("{prefix}-{i}"), data.clone()));
        done(&outcome).then_some(outcome)
    })
}

fn mutated(outcome: &Result<Value, String>) -> bool {
    matches!(outcome, Ok(cm) if cm["data"]["mutation-stage-1"] == "yes")
}

fn denied_configmap(outcome: &Result<Value, String>) -> bool {
    matches!(outcome, Err(e) if e.contains("the configmap contains unwanted key and value"))
}

/// Deletes every configuration of `resource` labelled `selector` in one request.
fn delete_collection(s: &RkubeServer, resource: &str, selector: &str) {
    let path = format!("/apis/admissionregistration.k8s.io/v1/{resource}?labelSelector={selector}");
    let out = s.curl(&["-X", "DELETE"], &path);
    assert_eq!(out.code, 200, "{}", out.body);
}

fn labelled_namespace(s: &RkubeServer) {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": NS, "labels": {"webhooks": NS}}});
    s.ok_stdin(&["apply", "-f", "-"], &ns.to_string());
    s.wait_until("the default service account", Duration::from_secs(30), || {
        let out = s.kubectl(&["get", "serviceaccount", "default", "-n", NS]);
        (out.status.success(), stderr_of(&out))
    });
}

#[test]
fn webhook_configurations_are_listed_updated_matched_and_never_admitted() {
    let s = RkubeServer::start();
    let ca = TestCa::new("rkube webhook conformance CA");
    let server = WebhookServer::start(&ca, &[], handler());
    labelled_namespace(&s);
    let configmaps = rule(&["CREATE"], "", &["configmaps"]);

    // Discovery document: the group, its preferred version and both resources.
    let apis: Value = serde_json::from_str(&s.ok(&["get", "--raw", "/apis"])).unwrap();
    let group = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "admissionregistration.k8s.io")
        .expect("admissionregistration.k8s.io in /apis");
    assert_eq!(group["preferredVersion"]["groupVersion"], "admissionregistration.k8s.io/v1");
    assert!(group["versions"].as_array().unwrap().iter().any(|v| v["version"] == "v1"));
    let group: Value =
        serde_json::from_str(&s.ok(&["get", "--raw", "/apis/admissionregistration.k8s.io"]))
            .unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v1");
    let v1: Value =
        serde_json::from_str(&s.ok(&["get", "--raw", "/apis/admissionregistration.k8s.io/v1"]))
            .unwrap();
    let names: Vec<&str> =
        v1["resources"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    assert!(names.contains(&"mutatingwebhookconfigurations"), "{names:?}");
    assert!(names.contains(&"validatingwebhookconfigurations"), "{names:?}");

    // List mutating webhooks: ten labelled configurations, listed by label; they mutate;
    // deleted as a collection by label, they mutate no more.
    for i in 0..10 {
        let webhooks = vec![hook(
            &server,
            &ca,
            "stage-1.rkube.test",
            "/mutating-configmaps",
            configmaps.clone(),
        )];
        let config = configuration(
            "MutatingWebhookConfiguration",
            &format!("list-mutating-{i}"),
            json!({"e2e-list-test": "mutating"}),
            webhooks,
        );
        s.ok_stdin(&["create", "-f", "-"], &config);
    }
    let listed: Value = serde_json::from_str(&s.ok(&[
        "get",
        "mutatingwebhookconfigurations",
        "-l",
        "e2e-list-test=mutating",
        "-o",
        "json",
    ]))
    .unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 10);
    let start = json!({"mutation-start": "yes"});
    configmaps_until(&s, "mutated by the listed webhooks", "listed", start.clone(), mutated)
        .unwrap();
    delete_collection(&s, "mutatingwebhookconfigurations", "e2e-list-test%3Dmutating");
    let left = s.ok(&[
        "get",
        "mutatingwebhookconfigurations",
        "-l",
        "e2e-list-test=mutating",
        "-o",
        "name",
    ]);
    assert_eq!(left.trim(), "");
    let cm = configmaps_until(
        &s,
        "no longer mutated",
        "unlisted",
        start.clone(),
        |o| matches!(o, Ok(cm) if cm["data"].get("mutation-stage-1").is_none()),
    );
    assert_eq!(cm.unwrap()["data"], start);

    // List validating webhooks: the same, denying.
    for i in 0..10 {
        let webhooks = vec![hook(
            &server,
            &ca,
            "deny-configmaps.rkube.test",
            "/configmaps",
            configmaps.clone(),
        )];
        let config = configuration(
            "ValidatingWebhookConfiguration",
            &format!("list-validating-{i}"),
            json!({"e2e-list-test": "validating"}),
            webhooks,
        );
        s.ok_stdin(&["create", "-f", "-"], &config);
    }
    let listed = s.ok(&[
        "get",
        "validatingwebhookconfigurations",
        "-l",
        "e2e-list-test=validating",
        "-o",
        "name",
    ]);
    assert_eq!(listed.lines().count(), 10, "{listed}");
    let disallowed = json!({"webhook-e2e-test": "webhook-disallow"});
    let refused = configmaps_until(
        &s,
        "denied by the listed webhooks",
        "disallowed",
        disallowed.clone(),
        denied_configmap,
    );
    assert!(
        refused.unwrap_err().contains("admission webhook \"deny-configmaps.rkube.test\" denied the request: the configmap contains unwanted key and value")
    );
    delete_collection(&s, "validatingwebhookconfigurations", "e2e-list-test%3Dvalidating");
    configmaps_until(&s, "no longer denied", "allowed", disallowed.clone(), Result::is_ok).unwrap();

    // Update validating webhook: rules without CREATE stop the denial, a JSON patch putting
    // CREATE back restores it.
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "update-validating",
        json!({}),
        vec![hook(&server, &ca, "deny-configmaps.rkube.test", "/configmaps", configmaps.clone())],
    );
    s.ok_stdin(&["create", "-f", "-"], &config);
    configmaps_until(&s, "denied", "update-v", disallowed.clone(), denied_configmap).unwrap_err();
    let mut stored: Value = serde_json::from_str(&s.ok(&[
        "get",
        "validatingwebhookconfiguration",
        "update-validating",
        "-o",
        "json",
    ]))
    .unwrap();
    stored["webhooks"][0]["rules"][0]["operations"] = json!(["UPDATE"]);
    s.ok_stdin(&["replace", "-f", "-"], &stored.to_string());
    configmaps_until(
        &s,
        "allowed once CREATE is dropped",
        "updated-v",
        disallowed.clone(),
        Result::is_ok,
    )
    .unwrap();
    let back =
        r#"[{"op": "replace", "path": "/webhooks/0/rules/0/operations", "value": ["CREATE"]}]"#;
    s.ok(&[
        "patch",
        "validatingwebhookconfiguration",
        "update-validating",
        "--type=json",
        "-p",
        back,
    ]);
    configmaps_until(&s, "denied again", "patched-v", disallowed.clone(), denied_configmap)
        .unwrap_err();
    s.ok(&["delete", "validatingwebhookconfiguration", "update-validating"]);

    // Update mutating webhook, the same way.
    let config = configuration(
        "MutatingWebhookConfiguration",
        "update-mutating",
        json!({}),
        vec![hook(&server, &ca, "stage-1.rkube.test", "/mutating-configmaps", configmaps.clone())],
    );
    s.ok_stdin(&["create", "-f", "-"], &config);
    configmaps_until(&s, "mutated", "update-m", start.clone(), mutated).unwrap();
    let drop_create =
        r#"[{"op": "replace", "path": "/webhooks/0/rules/0/operations", "value": ["UPDATE"]}]"#;
    s.ok(&[
        "patch",
        "mutatingwebhookconfiguration",
        "update-mutating",
        "--type=json",
        "-p",
        drop_create,
    ]);
    configmaps_until(
        &s,
        "not mutated once CREATE is dropped",
        "updated-m",
        start.clone(),
        |o| matches!(o, Ok(cm) if cm["data"] == json!({"mutation-start": "yes"})),
    )
    .unwrap();
    s.ok(&["patch", "mutatingwebhookconfiguration", "update-mutating", "--type=json", "-p", back]);
    configmaps_until(&s, "mutated again", "patched-m", start.clone(), mutated).unwrap();
    s.ok(&["delete", "mutatingwebhookconfiguration", "update-mutating"]);

    // Ordered mutation: two webhooks, the second building on the first.
    let config = configuration(
        "MutatingWebhookConfiguration",
        "ordered",
        json!({}),
        vec![
            hook(&server, &ca, "stage-1.rkube.test", "/mutating-configmaps", configmaps.clone()),
            hook(&server, &ca, "stage-2.rkube.test", "/mutating-configmaps", configmaps.clone()),
        ],
    );
    s.ok_stdin(&["create", "-f", "-"], &config);
    let cm = configmaps_until(
        &s,
        "mutated in order",
        "ordered",
        start.clone(),
        |o| matches!(o, Ok(cm) if cm["data"].get("mutation-stage-2").is_some()),
    );
    assert_eq!(
        cm.unwrap()["data"],
        json!({"mutation-start": "yes", "mutation-stage-1": "yes", "mutation-stage-2": "yes"})
    );
    s.ok(&["delete", "mutatingwebhookconfiguration", "ordered"]);

    // matchConditions, created and updated, read back as written; one that does not
    // compile is refused.
    for kind in ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"] {
        let resource = kind.to_lowercase();
        let mut webhook = hook(&server, &ca, "conditions.rkube.test", "/allow", configmaps.clone());
        let first = json!([{"name": "expression-1",
                             "expression": "object.metadata.namespace == 'production'"}]);
        webhook["matchConditions"] = first.clone();
        s.ok_stdin(
            &["create", "-f", "-"],
            &configuration(kind, "conditions", json!({}), vec![webhook.clone()]),
        );
        let conditions = || {
            let stored: Value =
                serde_json::from_str(&s.ok(&["get", &resource, "conditions", "-o", "json"]))
                    .unwrap();
            (stored["webhooks"][0]["matchConditions"].clone(), stored)
        };
        let (read, mut stored) = conditions();
        assert_eq!(read, first);
        let second = json!([
            {"name": "expression-1", "expression": "object.metadata.namespace == 'production'"},
            {"name": "expression-2", "expression": "object.metadata.namespace == 'staging'"}]);
        stored["webhooks"][0]["matchConditions"] = second.clone();
        s.ok_stdin(&["replace", "-f", "-"], &stored.to_string());
        assert_eq!(conditions().0, second);
        s.ok(&["delete", &resource, "conditions"]);

        webhook["matchConditions"] =
            json!([{"name": "invalid-expression-1", "expression": "... [] bad expression"}]);
        let err = s.fails_stdin(
            &["create", "-f", "-"],
            &configuration(kind, "invalid-conditions", json!({}), vec![webhook]),
        );
        assert!(err.contains("webhooks[0].matchConditions[0].expression: Invalid value"), "{err}");
        assert!(err.contains("compilation failed"), "{err}");
    }

    // A webhook excluding an object by name with a matchCondition.
    let mut webhook =
        hook(&server, &ca, "stage-1.rkube.test", "/mutating-configmaps", configmaps.clone());
    webhook["matchConditions"] =
        json!([{"name": "exclude-skip-me", "expression": "object.metadata.name != 'skip-me'"}]);
    s.ok_stdin(
        &["create", "-f", "-"],
        &configuration("MutatingWebhookConfiguration", "exclude-by-name", json!({}), vec![webhook]),
    );
    let cm = configmaps_until(&s, "mutated unless excluded", "not-skipped", start.clone(), mutated);
    assert_eq!(cm.unwrap()["data"], json!({"mutation-start": "yes", "mutation-stage-1": "yes"}));
    let skipped = create(&s, &configmap("skip-me", start.clone())).unwrap();
    assert_eq!(skipped["data"], start);
    s.ok(&["delete", "mutatingwebhookconfiguration", "exclude-by-name"]);

    // Mutation with defaulting: the init container a webhook adds gets the API's defaults.
    let pods = rule(&["CREATE"], "", &["pods"]);
    s.ok_stdin(
        &["create", "-f", "-"],
        &configuration(
            "MutatingWebhookConfiguration",
            "mutate-pods",
            json!({}),
            vec![hook(&server, &ca, "add-init-container.rkube.test", "/mutating-pods", pods)],
        ),
    );
    let pod = until("a pod mutated", |i| {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": format!("webhook-to-be-mutated-{i}"), "namespace": NS},
                         "spec": {"containers": [{"name": "example", "image": "busybox:1.36"}]}});
        create(&s, &pod).ok().filter(|p| p["spec"]["initContainers"].is_array())
    });
    let init = &pod["spec"]["initContainers"][0];
    assert_eq!(init["name"], "webhook-added-init-container");
    assert_eq!(init["terminationMessagePolicy"], "File");
    assert_eq!(init["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(init["imagePullPolicy"], "Always");
    s.ok(&["delete", "mutatingwebhookconfiguration", "mutate-pods"]);

    // Deny attach: a running pod (on a simulated node), refused by a webhook on CONNECT.
    let nodes = SimulatedNodes::start(&s, 1, &[]);
    nodes.wait_ready(&s, 1, Duration::from_secs(60));
    let attach = json!({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": "to-be-attached-pod", "namespace": NS},
                        "spec": {"containers": [{"name": "container1", "image": "busybox:1.36"}]}});
    create(&s, &attach).unwrap();
    s.ok(&[
        "wait",
        "-n",
        NS,
        "--for=jsonpath={.status.phase}=Running",
        "--timeout=60s",
        "pod/to-be-attached-pod",
    ]);
    s.ok_stdin(
        &["create", "-f", "-"],
        &configuration(
            "ValidatingWebhookConfiguration",
            "deny-attach",
            json!({}),
            vec![hook(
                &server,
                &ca,
                "deny-attaching-pod.rkube.test",
                "/pods/attach",
                rule(&["CONNECT"], "", &["pods/attach"]),
            )],
        ),
    );
    let err = until("attach refused", |_| {
        let out = s.kubectl(&["attach", "-n", NS, "-c", "container1", "-i", "to-be-attached-pod"]);
        let err = stderr_of(&out);
        err.contains("attaching to pod 'to-be-attached-pod' is not allowed").then_some(err)
    });
    assert!(
        err.contains("admission webhook \"deny-attaching-pod.rkube.test\" denied the request: attaching to pod 'to-be-attached-pod' is not allowed"),
        "{err}"
    );
    let review = server.reviews_to("/pods/attach").pop().expect("the attach review");
    let request = &review["request"];
    assert_eq!(request["operation"], "CONNECT");
    assert_eq!(request["subResource"], "attach");
    assert_eq!(request["kind"], json!({"group": "", "version": "v1", "kind": "PodAttachOptions"}));
    assert_eq!(request["object"]["kind"], "PodAttachOptions");
    assert_eq!(request["object"]["stdin"], true);
    assert_eq!(request["options"], Value::Null);
    drop(nodes);

    // Admission control is not allowed on webhook configurations: webhooks that would deny
    // or label them are never called for them. A marker ConfigMap shows they are in effect.
    let configs = json!([{"operations": ["CREATE", "UPDATE", "DELETE"],
                          "apiGroups": ["admissionregistration.k8s.io"], "apiVersions": ["*"],
                          "resources": ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"]}]);
    let mut marker =
        hook(&server, &ca, "deny-marker.rkube.test", "/always-deny", configmaps.clone());
    marker["objectSelector"] = json!({"matchLabels": {"marker": "yes"}});
    let mut deny_configs =
        hook(&server, &ca, "deny-configs.rkube.test", "/always-deny", configs.clone());
    deny_configs.as_object_mut().unwrap().remove("namespaceSelector");
    s.ok_stdin(
        &["create", "-f", "-"],
        &configuration(
            "ValidatingWebhookConfiguration",
            "deny-webhook-configs",
            json!({}),
            vec![marker, deny_configs],
        ),
    );
    let mut add_label = hook(&server, &ca, "label-configs.rkube.test", "/add-label", configs);
    add_label.as_object_mut().unwrap().remove("namespaceSelector");
    s.ok_stdin(
        &["create", "-f", "-"],
        &configuration(
            "MutatingWebhookConfiguration",
            "label-webhook-configs",
            json!({}),
            vec![add_label],
        ),
    );
    until("the marker denied", |i| {
        let mut cm = configmap(&format!("marker-{i}"), json!({}));
        cm["metadata"]["labels"] = json!({"marker": "yes"});
        create(&s, &cm).err().filter(|e| e.contains("this webhook denies all requests"))
    });
    for kind in ["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"] {
        let mut dummy = hook(&server, &ca, "dummy.rkube.test", "/always-deny", configmaps.clone());
        dummy["namespaceSelector"] = json!({"matchLabels": {"no-namespace": "has-this"}});
        let created = s.ok_stdin(
            &["create", "-o", "json", "-f", "-"],
            &configuration(kind, "dummy", json!({}), vec![dummy]),
        );
        let created: Value = serde_json::from_str(&created).unwrap();
        assert!(created["metadata"]["labels"].get("added-label").is_none(), "{created}");
        s.ok(&["delete", &kind.to_lowercase(), "dummy"]);
    }
    for path in ["/always-deny", "/add-label"] {
        let kinds: Vec<Value> =
            server.reviews_to(path).iter().map(|r| r["request"]["kind"]["kind"].clone()).collect();
        assert!(kinds.iter().all(|k| k == "ConfigMap"), "{path}: {kinds:?}");
    }
}

fn crd(plural: &str, kind: &str, schema: Value, versions: &[(&str, bool)]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|(name, storage)| {
            json!({"name": name, "served": true, "storage": storage,
                   "schema": {"openAPIV3Schema": schema}})
        })
        .collect();
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": format!("{plural}.{GROUP}")},
           "spec": {"group": GROUP, "scope": "Namespaced",
                    "names": {"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind,
                              "listKind": format!("{kind}List")},
                    "versions": versions}})
}

fn custom(kind: &str, version: &str, name: &str, data: Value) -> Value {
    json!({"apiVersion": format!("{GROUP}/{version}"), "kind": kind,
           "metadata": {"name": name, "namespace": NS}, "data": data})
}

#[test]
fn webhooks_deny_and_mutate_custom_resources_and_definitions() {
    let s = RkubeServer::start();
    let ca = TestCa::new("rkube webhook conformance CA");
    let server = WebhookServer::start(&ca, &[], handler());
    labelled_namespace(&s);
    // As upstream's test CRD: everything kept.
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let pruning = json!({"type": "object", "properties": {
        "data": {"type": "object", "properties": {
            "mutation-start": {"type": "string"}, "mutation-stage-1": {"type": "string"}}}}});
    let open_crd = crd("webhookcrs", "WebhookCr", open, &[("v1", true), ("v2", false)]);
    s.define_crd(&open_crd.to_string(), &format!("webhookcrs.{GROUP}"));
    let pruned_crd = crd("prunedcrs", "PrunedCr", pruning, &[("v1", true)]);
    s.define_crd(&pruned_crd.to_string(), &format!("prunedcrs.{GROUP}"));

    let all = &["CREATE", "UPDATE", "DELETE"];
    let resources = &["webhookcrs", "prunedcrs"];
    s.ok_stdin(
        &["create", "-f", "-"],
        &configuration(
            "ValidatingWebhookConfiguration",
            "deny-custom-resources",
            json!({}),
            vec![hook(
                &server,
                &ca,
                "deny-cr.rkube.test",
                "/custom-resource",
                rule(all, GROUP, resources),
            )],
        ),
    );
    let mutate = rule(&["CREATE", "UPDATE"], GROUP, resources);
    s.ok_stdin(
        &["create", "-f", "-"],
        &configuration(
            "MutatingWebhookConfiguration",
            "mutate-custom-resources",
            json!({}),
            vec![
                hook(
                    &server,
                    &ca,
                    "stage-1.rkube.test",
                    "/mutating-custom-resource",
                    mutate.clone(),
                ),
                hook(&server, &ca, "stage-2.rkube.test", "/mutating-custom-resource", mutate),
            ],
        ),
    );

    // Deny custom resource create and delete: a create with unwanted data is refused (400,
    // the webhook's message) ...
    let disallowed = json!({"webhook-e2e-test": "webhook-disallow"});
    let err = until("a custom resource refused", |i| {
        create(&s, &custom("WebhookCr", "v1", &format!("bad-{i}"), disallowed.clone())).err()
    });
    assert!(
        err.contains("admission webhook \"deny-cr.rkube.test\" denied the request: the custom resource contains unwanted data"),
        "{err}"
    );
    let raw = s.curl_body(
        &["-X", "POST"],
        &format!("/apis/{GROUP}/v1/namespaces/{NS}/webhookcrs"),
        custom("WebhookCr", "v1", "bad-raw", disallowed.clone()).to_string().as_bytes(),
    );
    assert_eq!(raw.code, 400, "{}", raw.body);
    let status: Value = serde_json::from_str(&raw.body).unwrap();
    assert_eq!(
        status["message"],
        "admission webhook \"deny-cr.rkube.test\" denied the request: the custom resource contains unwanted data"
    );
    // ... so is an update to it, and the delete of an object marked undeletable, which can
    // be deleted once unmarked.
    create(&s, &custom("WebhookCr", "v1", "guarded", json!({"webhook-e2e-test": "webhook-allow"})))
        .unwrap();
    let patch = |value: &str| {
        let patch = json!({"data": {"webhook-e2e-test": value}}).to_string();
        s.kubectl(&["patch", "-n", NS, "webhookcrs", "guarded", "--type=merge", "-p", &patch])
    };
    let out = patch("webhook-disallow");
    assert!(
        stderr_of(&out).contains("the custom resource contains unwanted data"),
        "{}",
        stderr_of(&out)
    );
    assert!(patch("webhook-nondeletable").status.success());
    let err = s.fails(&["delete", "-n", NS, "webhookcrs", "guarded"]);
    assert!(
        err.contains("admission webhook \"deny-cr.rkube.test\" denied the request: the custom resource cannot be deleted because it contains unwanted key and value"),
        "{err}"
    );
    assert!(patch("webhook-allow").status.success());
    s.ok(&["delete", "-n", NS, "webhookcrs", "guarded"]);

    // Mutate custom resource: both stages applied.
    let start = json!({"mutation-start": "yes"});
    let cr = create(&s, &custom("WebhookCr", "v1", "mutated", start.clone())).unwrap();
    assert_eq!(
        cr["data"],
        json!({"mutation-start": "yes", "mutation-stage-1": "yes", "mutation-stage-2": "yes"})
    );
    // With pruning: what the schema does not declare is dropped, after the webhooks.
    let cr = create(&s, &custom("PrunedCr", "v1", "pruned", start.clone())).unwrap();
    assert_eq!(cr["data"], json!({"mutation-start": "yes", "mutation-stage-1": "yes"}));
    let stored = s.ok(&["get", "-n", NS, "prunedcrs", "pruned", "-o", "jsonpath={.data}"]);
    assert_eq!(
        serde_json::from_str::<Value>(&stored).unwrap(),
        json!({"mutation-start": "yes", "mutation-stage-1": "yes"})
    );

    // With a different stored version: created at v1, v2 made the storage version, then
    // patched through v2 (and the webhooks) successfully.
    create(&s, &custom("WebhookCr", "v1", "multi-version", start.clone())).unwrap();
    let storage = r#"[{"op": "replace", "path": "/spec/versions/0/storage", "value": false},
                      {"op": "replace", "path": "/spec/versions/1/storage", "value": true}]"#;
    s.ok(&["patch", "crd", &format!("webhookcrs.{GROUP}"), "--type=json", "-p", storage]);
    s.wait_until("v2 stored", Duration::from_secs(20), || {
        let out = s.ok(&[
            "get",
            "crd",
            &format!("webhookcrs.{GROUP}"),
            "-o",
            "jsonpath={.status.storedVersions}",
        ]);
        (out.contains("v2"), out)
    });
    let path = format!("/apis/{GROUP}/v2/namespaces/{NS}/webhookcrs/multi-version");
    let raw = s.curl_body(
        &["-X", "PATCH", "-H", "Content-Type: application/json-patch+json"],
        &path,
        br#"[{"op": "add", "path": "/dummy", "value": "test"}]"#,
    );
    assert_eq!(raw.code, 200, "{}", raw.body);
    let patched: Value = serde_json::from_str(&raw.body).unwrap();
    assert_eq!(patched["apiVersion"], format!("{GROUP}/v2"));
    assert_eq!(patched["dummy"], "test");
    assert_eq!(
        patched["data"],
        json!({"mutation-start": "yes", "mutation-stage-1": "yes", "mutation-stage-2": "yes"})
    );
    let review = server
        .reviews_to("/mutating-custom-resource")
        .into_iter()
        .rev()
        .find(|r| r["request"]["name"] == "multi-version")
        .expect("the patch went to the webhook");
    assert_eq!(review["request"]["operation"], "UPDATE");
    assert_eq!(review["request"]["kind"]["version"], "v2");

    // Deny custom resource definition: a CRD with the unwanted label is refused.
    s.ok_stdin(
        &["create", "-f", "-"],
        &configuration(
            "ValidatingWebhookConfiguration",
            "deny-crds",
            json!({}),
            vec![hook(
                &server,
                &ca,
                "deny-crd.rkube.test",
                "/crd",
                rule(&["CREATE"], "apiextensions.k8s.io", &["customresourcedefinitions"]),
            )],
        ),
    );
    let err = until("a CRD refused", |i| {
        let plural = format!("denied{i}s");
        let mut denied =
            crd(&plural, &format!("Denied{i}"), json!({"type": "object"}), &[("v1", true)]);
        denied["metadata"]["labels"] = json!({"webhook-e2e-test": "webhook-disallow"});
        create(&s, &denied).err()
    });
    assert!(
        err.contains("admission webhook \"deny-crd.rkube.test\" denied the request: the crd contains unwanted label"),
        "{err}"
    );
}
