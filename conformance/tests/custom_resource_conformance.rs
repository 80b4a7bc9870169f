//! The sig-api-machinery conformance cases of CustomResourceDefinitions, asserted the way the
//! upstream e2e tests assert them: definitions listed by label and removed by
//! deletecollection, their `/status` read, replaced and JSON-patched, the
//! `apiextensions.k8s.io` discovery documents, schema defaults applied on create and on read
//! of stored objects; each served version published in `/openapi/v2` under upstream's
//! definition name with the definition's schema (and gone once unserved or renamed), kubectl
//! create, apply and explain with `x-kubernetes-preserve-unknown-fields`; and server-side
//! field validation (`fieldValidation=Strict`) of server-side applied custom objects: unknown
//! fields, unknown metadata, duplicate keys, with upstream's messages.

use std::time::Duration;

use rkube_conformance::cluster::{stdout_of, Curl, RkubeServer};
use serde_json::{json, Value};

fn parse(what: &str, text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what}: not JSON ({e}):\n{text}"))
}

/// A raw GET that must answer 200; its JSON body.
fn get(s: &RkubeServer, path: &str) -> Value {
    let answer = s.curl(&[], path);
    assert_eq!(answer.code, 200, "GET {path}: {}", answer.body);
    parse(path, &answer.body)
}

/// A request with a JSON (or YAML) body of `content_type`.
fn send(s: &RkubeServer, method: &str, path: &str, content_type: &str, body: &str) -> Curl {
    let header = format!("Content-Type: {content_type}");
    s.curl_body(&["-X", method, "-H", &header], path, body.as_bytes())
}

const AGGREGATED: &str =
    "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// `/apis` or `/api` as an APIGroupDiscoveryList (apidiscovery.k8s.io/v2).
fn aggregated(s: &RkubeServer, path: &str) -> Value {
    let answer = s.curl(&["-H", AGGREGATED], path);
    assert_eq!(answer.code, 200, "{path}: {}", answer.body);
    let list = parse(path, &answer.body);
    assert_eq!(
        (&list["apiVersion"], &list["kind"]),
        (&json!("apidiscovery.k8s.io/v2"), &json!("APIGroupDiscoveryList")),
        "{path}"
    );
    list
}

fn aggregated_has(list: &Value, group: &str, version: &str, resource: &str) -> bool {
    let items = list["items"].as_array().into_iter().flatten();
    items.filter(|g| g["metadata"]["name"].as_str().unwrap_or("") == group).any(|g| {
        let versions = g["versions"].as_array().into_iter().flatten();
        versions.filter(|v| v["version"] == version).any(|v| {
            let resources = v["resources"].as_array().into_iter().flatten();
            resources.clone().any(|r| r["resource"] == resource)
        })
    })
}

/// A cluster-scoped definition like upstream's fixtures: one served storage version
/// `v1beta1` whose schema keeps every field, in group `mygroup.example.com`.
fn noxu(plural: &str, labels: Value) -> Value {
    let kind = format!("{}{}", plural[..1].to_uppercase(), &plural[1..plural.len() - 1]);
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.mygroup.example.com"), "labels": labels},
        "spec": {
            "group": "mygroup.example.com",
            "scope": "Cluster",
            "names": {"plural": plural, "singular": &plural[..plural.len() - 1], "kind": kind,
                      "listKind": format!("{kind}List")},
            "versions": [{"name": "v1beta1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {
                              "type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        }
    })
}

/// Upstream's "Custom Resource Definition, list / status sub-resource / discovery /
/// defaulting" cases, its two Discovery cases (preferred versions, a resource of each
/// group version) and the raw aggregated discovery ones (Accept headers, CRDs), one server.
#[test]
fn definitions_are_listed_patched_discovered_and_default_their_objects() {
    let s = RkubeServer::start();
    const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

    // -- list: ten labelled definitions and one without the label.
    let labelled: Vec<Value> = (0..10)
        .map(|i| noxu(&format!("listed{i}s"), json!({"e2e-list-test-uuid": "1234"})))
        .collect();
    let mut items = labelled.clone();
    items.push(noxu("unlabelleds", json!({})));
    s.ok_stdin(
        &["create", "-f", "-"],
        &json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string(),
    );
    let list = get(&s, &format!("{CRDS}?labelSelector=e2e-list-test-uuid%3D1234"));
    let got = list["items"].as_array().expect("items");
    assert_eq!(got.len(), 10, "{list:#}");
    for expected in &labelled {
        let name = &expected["metadata"]["name"];
        let actual = got.iter().find(|c| &c["metadata"]["name"] == name).expect("listed");
        // The spec as written, with the defaults the server adds (conversion: None).
        for (key, value) in expected["spec"].as_object().unwrap() {
            if key == "names" {
                for (k, v) in value.as_object().unwrap() {
                    assert_eq!(&actual["spec"]["names"][k], v, "{name}: names.{k}");
                }
            } else {
                assert_eq!(&actual["spec"][key], value, "{name}: spec.{key}");
            }
        }
        assert_eq!(actual["spec"]["conversion"], json!({"strategy": "None"}), "{name}");
    }
    let gone =
        s.curl(&["-X", "DELETE"], &format!("{CRDS}?labelSelector=e2e-list-test-uuid%3D1234"));
    assert_eq!(gone.code, 200, "deletecollection: {}", gone.body);
    s.wait_until("the labelled definitions deleted", Duration::from_secs(30), || {
        let list = get(&s, &format!("{CRDS}?labelSelector=e2e-list-test-uuid%3D1234"));
        (list["items"].as_array().is_some_and(Vec::is_empty), list.to_string())
    });
    get(&s, &format!("{CRDS}/unlabelleds.mygroup.example.com"));

    // -- status sub-resource: read, replace with a condition added, JSON-patch.
    let name = "unlabelleds.mygroup.example.com";
    s.ok(&["wait", "--for=condition=Established", "--timeout=20s", &format!("crd/{name}")]);
    let mut status = get(&s, &format!("{CRDS}/{name}/status"));
    let crd = get(&s, &format!("{CRDS}/{name}"));
    assert_eq!(status["spec"], crd["spec"], "the status sub-resource carries the whole object");
    status["status"]["conditions"]
        .as_array_mut()
        .expect("conditions")
        .push(json!({"message": "updated"}));
    let put =
        send(&s, "PUT", &format!("{CRDS}/{name}/status"), "application/json", &status.to_string());
    assert_eq!(put.code, 200, "PUT status: {}", put.body);
    let updated = parse("PUT status", &put.body);
    // A condition of only a message (type and status are written empty, as Go writes them).
    let has = |crd: &Value, message: &str| {
        crd["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter().any(|c| c == &json!({"type": "", "status": "", "message": message}))
        })
    };
    assert!(has(&updated, "updated"), "{:#}", updated["status"]);
    let patch =
        r#"[{"op": "add", "path": "/status/conditions", "value": [{"message": "patched"}]}]"#;
    let patched =
        send(&s, "PATCH", &format!("{CRDS}/{name}/status"), "application/json-patch+json", patch);
    assert_eq!(patched.code, 200, "PATCH status: {}", patched.body);
    let patched = parse("PATCH status", &patched.body);
    assert!(has(&patched, "patched"), "{:#}", patched["status"]);
    assert!(has(&get(&s, &format!("{CRDS}/{name}")), "patched"), "the patch is kept");

    // -- discovery of apiextensions.k8s.io/v1 and its customresourcedefinitions.
    let apis = get(&s, "/apis");
    let group = apis["groups"]
        .as_array()
        .and_then(|gs| gs.iter().find(|g| g["name"] == "apiextensions.k8s.io"))
        .unwrap_or_else(|| panic!("apiextensions.k8s.io in /apis: {apis:#}"));
    assert!(
        group["versions"].as_array().unwrap().iter().any(|v| v["version"] == "v1"),
        "{group:#}"
    );
    let group = get(&s, "/apis/apiextensions.k8s.io");
    assert_eq!(group["name"], "apiextensions.k8s.io", "{group:#}");
    assert!(
        group["versions"].as_array().unwrap().iter().any(|v| v["version"] == "v1"),
        "{group:#}"
    );
    let resources = get(&s, "/apis/apiextensions.k8s.io/v1");
    assert_eq!(resources["groupVersion"], "apiextensions.k8s.io/v1", "{resources:#}");
    assert!(
        resources["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "customresourcedefinitions"),
        "{resources:#}"
    );

    // -- Discovery: every group's document (trailing slash, as upstream asks) names a
    // preferred version among its versions; each group version upstream names lists its
    // groupVersion and a resource.
    for group in apis["groups"].as_array().unwrap() {
        let name = group["name"].as_str().unwrap();
        let doc = get(&s, &format!("/apis/{name}/"));
        let versions = doc["versions"].as_array().filter(|v| !v.is_empty());
        let versions = versions.unwrap_or_else(|| panic!("no versions for {name}: {doc:#}"));
        let preferred = &doc["preferredVersion"]["groupVersion"];
        assert!(versions.iter().any(|v| &v["groupVersion"] == preferred), "{doc:#}");
    }
    let expected = [
        ("/api/v1", "namespaces"),
        ("/apis/admissionregistration.k8s.io/v1", "validatingwebhookconfigurations"),
        ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions"),
        ("/apis/apiregistration.k8s.io/v1", "apiservices"),
        ("/apis/apps/v1", "deployments"),
        ("/apis/authentication.k8s.io/v1", "tokenreviews"),
        ("/apis/authorization.k8s.io/v1", "selfsubjectaccessreviews"),
        ("/apis/autoscaling/v1", "horizontalpodautoscalers"),
        ("/apis/autoscaling/v2", "horizontalpodautoscalers"),
        ("/apis/batch/v1", "jobs"),
        ("/apis/certificates.k8s.io/v1", "certificatesigningrequests"),
        ("/apis/coordination.k8s.io/v1", "leases"),
        ("/apis/discovery.k8s.io/v1", "endpointslices"),
        ("/apis/events.k8s.io/v1", "events"),
        ("/apis/networking.k8s.io/v1", "ingresses"),
        ("/apis/node.k8s.io/v1", "runtimeclasses"),
        ("/apis/policy/v1", "poddisruptionbudgets"),
        ("/apis/scheduling.k8s.io/v1", "priorityclasses"),
        ("/apis/storage.k8s.io/v1", "csinodes"),
    ];
    for (path, resource) in expected {
        let list = get(&s, path);
        let group_version = path.trim_start_matches("/api/").trim_start_matches("/apis/");
        assert_eq!(list["groupVersion"], group_version, "{path}");
        let names = list["resources"].as_array().unwrap();
        assert!(names.iter().any(|r| r["name"] == resource), "{resource} in {path}: {list:#}");
    }

    // -- Aggregated discovery asked for with its Accept header, raw: every one of those
    // resources in `/apis` (or `/api`).
    for (path, resource) in expected {
        let (root, group_version) = path[1..].split_once('/').unwrap();
        let (group, version) = group_version.rsplit_once('/').unwrap_or(("", group_version));
        let discovery = aggregated(&s, &format!("/{root}"));
        assert!(aggregated_has(&discovery, group, version, resource), "{path} {resource}");
    }

    // -- defaulting: of stored objects on read, of new objects on create.
    let mut def = noxu("defaulteds", json!({}));
    def["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"] =
        json!({"a": {"type": "string"}, "b": {"type": "string"}});
    s.define_crd(&def.to_string(), "defaulteds.mygroup.example.com");
    const CRS: &str = "/apis/mygroup.example.com/v1beta1/defaulteds";
    let object = |name: &str| {
        json!({"apiVersion": "mygroup.example.com/v1beta1", "kind": "Defaulted", "metadata": {"name": name}}).to_string()
    };
    // Its resource is in the aggregated discovery of /apis.
    s.wait_until("defaulteds in aggregated discovery", Duration::from_secs(30), || {
        let discovery = aggregated(&s, "/apis");
        (aggregated_has(&discovery, "mygroup.example.com", "v1beta1", "defaulteds"), String::new())
    });
    let created = send(&s, "POST", CRS, "application/json", &object("cr-1"));
    assert_eq!(created.code, 201, "{}", created.body);
    let patch_crd = |patch: &str| {
        let answer = send(
            &s,
            "PATCH",
            &format!("{CRDS}/defaulteds.mygroup.example.com"),
            "application/json-patch+json",
            patch,
        );
        assert_eq!(answer.code, 200, "{patch}: {}", answer.body);
    };
    patch_crd(
        r#"[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/a/default","value":"A"}]"#,
    );
    s.wait_until("cr-1 defaulted on read", Duration::from_secs(30), || {
        let cr = get(&s, &format!("{CRS}/cr-1"));
        (cr["a"] == "A", cr.to_string())
    });
    let created = send(&s, "POST", CRS, "application/json", &object("cr-2"));
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(parse("cr-2", &created.body)["a"], "A", "defaulted on create: {}", created.body);
    patch_crd(
        r#"[{"op":"remove","path":"/spec/versions/0/schema/openAPIV3Schema/properties/a/default"},
            {"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/b/default","value":"B"}]"#,
    );
    s.wait_until("cr-2 defaulted on read for b, a stored", Duration::from_secs(30), || {
        let cr = get(&s, &format!("{CRS}/cr-2"));
        (cr["b"] == "B" && cr["a"] == "A", cr.to_string())
    });
    // cr-1 was stored before `a` had a default: with it gone, nothing defaults `a` any more.
    let cr = get(&s, &format!("{CRS}/cr-1"));
    assert_eq!((cr.get("a"), &cr["b"]), (None, &json!("B")), "{cr:#}");
}

// ---------------------------------------------------------------------------------------------
// OpenAPI publishing

const SCHEMA_FOO: &str = r#"{"description": "Foo CRD for Testing", "type": "object", "properties": {
  "spec": {"type": "object", "description": "Specification of Foo", "properties": {
    "bars": {"description": "List of Bars and their specs.", "type": "array", "items": {
      "type": "object", "required": ["name"], "properties": {
        "name": {"description": "Name of Bar.", "type": "string"},
        "age": {"description": "Age of Bar.", "type": "string"},
        "feeling": {"description": "Whether Bar is feeling great.", "type": "string", "enum": ["Great", "Down"]},
        "bazs": {"description": "List of Bazs.", "items": {"type": "string"}, "type": "array"}}}}}},
  "status": {"description": "Status of Foo", "type": "object", "properties": {
    "bars": {"description": "List of Bars and their statuses.", "type": "array", "items": {
      "type": "object", "properties": {
        "name": {"description": "Name of Bar.", "type": "string"},
        "available": {"description": "Whether the Bar is installed.", "type": "boolean"},
        "quxType": {"description": "Indicates to external qux type.", "pattern": "in-tree|out-of-tree", "type": "string"}}}}}}}}"#;

const SCHEMA_WALDO: &str = r#"{"description": "Waldo CRD for Testing", "type": "object", "properties": {
  "spec": {"description": "Specification of Waldo", "type": "object", "properties": {
    "dummy": {"description": "Dummy property.", "type": "object"}}},
  "status": {"description": "Status of Waldo", "type": "object", "properties": {
    "bars": {"description": "List of Bars and their statuses.", "type": "array", "items": {"type": "object"}}}}}}"#;

/// Waldo's schema keeping unknown fields at the root (`at: ""`) or in `spec`.
fn schema_preserving(at: &str, description: &str) -> Value {
    let mut schema = parse("waldo", SCHEMA_WALDO);
    schema["description"] = json!(description);
    let node = if at.is_empty() { &mut schema } else { &mut schema["properties"][at] };
    node["x-kubernetes-preserve-unknown-fields"] = json!(true);
    schema
}

/// A test definition as upstream's crd utilities make it: group
/// `crd-publish-openapi-test-<suffix>.example.com`, kind `E2e-test-crd-publish-openapi-<n>-crd`,
/// one version per name (the first the storage version) with `schema` (none: every field
/// kept).
fn publish_crd(suffix: &str, n: u32, schema: Option<&Value>, versions: &[&str]) -> (String, Value) {
    let group = format!("crd-publish-openapi-test-{suffix}.example.com");
    let singular = format!("e2e-test-crd-publish-openapi-{n}-crd");
    let kind = format!("E{}", &singular[1..]);
    let plural = format!("{singular}s");
    let schema = schema
        .cloned()
        .unwrap_or(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    let versions: Vec<Value> = versions
        .iter()
        .enumerate()
        .map(|(i, v)| json!({"name": v, "served": true, "storage": i == 0, "schema": {"openAPIV3Schema": schema}}))
        .collect();
    let name = format!("{plural}.{group}");
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {"group": group, "scope": "Namespaced", "versions": versions,
                 "names": {"plural": plural, "singular": singular, "kind": kind, "listKind": format!("{kind}List")}},
    });
    (name, crd)
}

/// Upstream's definition name (`ToRESTFriendlyName`): the group reversed, version, kind.
fn definition_name(crd: &Value, version: &str) -> String {
    let group = crd["spec"]["group"].as_str().unwrap();
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{}", reversed.join("."), crd["spec"]["names"]["kind"].as_str().unwrap())
}

/// The `definitions` of `/openapi/v2`.
fn swagger_definitions(s: &RkubeServer) -> Value {
    let out = s.kubectl(&["get", "--raw", "/openapi/v2"]);
    assert!(out.status.success(), "GET /openapi/v2 failed");
    parse("/openapi/v2", &stdout_of(&out))["definitions"].take()
}

/// Waits until `/openapi/v2` has the definition `name`, and (when given) with `schema` once
/// the properties and extension the server adds (`metadata`, `apiVersion`, `kind`,
/// `x-kubernetes-group-version-kind`) are dropped, as upstream's e2e test compares.
fn wait_for_definition(s: &RkubeServer, name: &str, schema: Option<&Value>) {
    s.wait_until(&format!("{name} in /openapi/v2"), Duration::from_secs(30), || {
        let mut definitions = swagger_definitions(s);
        let Some(d) = definitions.get_mut(name) else { return (false, format!("{name} missing")) };
        if let Some(props) = d.get_mut("properties").and_then(Value::as_object_mut) {
            for key in ["metadata", "apiVersion", "kind"] {
                props.remove(key);
            }
        }
        d.as_object_mut().unwrap().remove("x-kubernetes-group-version-kind");
        // No properties left is no properties (upstream compares semantically).
        if d["properties"].as_object().is_some_and(|p| p.is_empty()) {
            d.as_object_mut().unwrap().remove("properties");
        }
        (schema.is_none_or(|expected| expected == d), format!("{d:#}"))
    });
}

fn wait_for_definition_cleanup(s: &RkubeServer, name: &str) {
    s.wait_until(&format!("{name} gone from /openapi/v2"), Duration::from_secs(30), || {
        (swagger_definitions(s).get(name).is_none(), format!("{name} still there"))
    });
}

/// kubectl create, then apply, of `object`, each deleted after: both must succeed.
fn create_and_apply(s: &RkubeServer, plural: &str, object: &str) {
    for verb in ["create", "apply"] {
        s.ok_stdin(&[verb, "-f", "-"], object);
        s.ok(&["delete", plural, "test-cr"]);
    }
}

fn assert_explains(s: &RkubeServer, what: &str, expected: &[&str]) {
    let out = s.ok(&["explain", what]);
    let mut rest = out.as_str();
    for part in expected {
        let at = rest
            .find(part)
            .unwrap_or_else(|| panic!("explain {what}: {part:?} missing (in order):\n{out}"));
        rest = &rest[at + part.len()..];
    }
}

/// Upstream's "Custom Resource OpenAPI Publish" cases: varying groups, versions and kinds,
/// version rename, stop serving a version, and `x-kubernetes-preserve-unknown-fields` at the
/// root, in an embedded object and in a definition without schema; one server.
#[test]
fn served_versions_are_published_in_openapi_v2_and_kubectl_uses_them() {
    let s = RkubeServer::start();
    let foo = parse("foo", SCHEMA_FOO);
    let waldo = parse("waldo", SCHEMA_WALDO);
    let define = |crd: &(String, Value)| s.define_crd(&crd.1.to_string(), &crd.0);

    // Varying groups.
    let foo_crd = publish_crd("foo", 1, Some(&foo), &["v1"]);
    let waldo_crd = publish_crd("waldo", 2, Some(&waldo), &["v1beta1"]);
    define(&foo_crd);
    define(&waldo_crd);
    assert_eq!(
        definition_name(&foo_crd.1, "v1"),
        "com.example.crd-publish-openapi-test-foo.v1.E2e-test-crd-publish-openapi-1-crd"
    );
    wait_for_definition(&s, &definition_name(&waldo_crd.1, "v1beta1"), Some(&waldo));
    wait_for_definition(&s, &definition_name(&foo_crd.1, "v1"), Some(&foo));

    // Varying versions: one definition with two, two definitions of one group.
    let multi = publish_crd("multi-ver", 3, Some(&foo), &["v2", "v3"]);
    define(&multi);
    wait_for_definition(&s, &definition_name(&multi.1, "v3"), Some(&foo));
    wait_for_definition(&s, &definition_name(&multi.1, "v2"), Some(&foo));
    let v4 = publish_crd("common-group", 4, Some(&foo), &["v4"]);
    let v5 = publish_crd("common-group", 5, Some(&waldo), &["v5"]);
    define(&v4);
    define(&v5);
    wait_for_definition(&s, &definition_name(&v5.1, "v5"), Some(&waldo));
    wait_for_definition(&s, &definition_name(&v4.1, "v4"), Some(&foo));

    // Varying kinds: two definitions of one group and version.
    let k6 = publish_crd("common-group", 6, Some(&foo), &["v6"]);
    let k7 = publish_crd("common-group", 7, Some(&waldo), &["v6"]);
    define(&k6);
    define(&k7);
    wait_for_definition(&s, &definition_name(&k7.1, "v6"), Some(&waldo));
    wait_for_definition(&s, &definition_name(&k6.1, "v6"), Some(&foo));

    // Deleting a definition withdraws its documents.
    s.ok(&["delete", "crd", &v4.0]);
    wait_for_definition_cleanup(&s, &definition_name(&v4.1, "v4"));
    wait_for_definition(&s, &definition_name(&v5.1, "v5"), Some(&waldo));

    // Version rename: v3 becomes v4; v2 stays.
    let rename = r#"[{"op":"test","path":"/spec/versions/1/name","value":"v3"},
                     {"op":"replace","path":"/spec/versions/1/name","value":"v4"}]"#;
    s.ok(&["patch", "crd", &multi.0, "--type=json", "-p", rename]);
    wait_for_definition(&s, &definition_name(&multi.1, "v4"), Some(&foo));
    wait_for_definition_cleanup(&s, &definition_name(&multi.1, "v3"));
    wait_for_definition(&s, &definition_name(&multi.1, "v2"), Some(&foo));

    // Stop serving a version: v6alpha1 goes, v5 stays.
    let single = publish_crd("multi-to-single-ver", 8, Some(&foo), &["v5", "v6alpha1"]);
    define(&single);
    wait_for_definition(&s, &definition_name(&single.1, "v6alpha1"), Some(&foo));
    wait_for_definition(&s, &definition_name(&single.1, "v5"), Some(&foo));
    s.ok(&[
        "patch",
        "crd",
        &single.0,
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/versions/1/served","value":false}]"#,
    ]);
    wait_for_definition_cleanup(&s, &definition_name(&single.1, "v6alpha1"));
    wait_for_definition(&s, &definition_name(&single.1, "v5"), Some(&foo));

    // x-kubernetes-preserve-unknown-fields: kubectl create and apply objects with any fields
    // (its default server-side validation must let them through) and explains the kind.
    let meta = |crd: &Value, version: &str| {
        format!(
            r#""kind":"{}","apiVersion":"{}/{version}","metadata":{{"name":"test-cr"}}"#,
            crd["spec"]["names"]["kind"].as_str().unwrap(),
            crd["spec"]["group"].as_str().unwrap()
        )
    };
    let plural = |crd: &Value| crd["spec"]["names"]["plural"].as_str().unwrap().to_string();

    let empty = publish_crd("empty", 9, None, &["v1"]);
    define(&empty);
    wait_for_definition(&s, &definition_name(&empty.1, "v1"), Some(&json!({"type": "object"})));
    create_and_apply(
        &s,
        &plural(&empty.1),
        &format!(r#"{{{},"a":{{"b":[{{"c":"d"}}]}}}}"#, meta(&empty.1, "v1")),
    );
    assert_explains(&s, &plural(&empty.1), &["DESCRIPTION:", "<empty>"]);

    let root = publish_crd(
        "unknown-at-root",
        10,
        Some(&schema_preserving("", "preserve-unknown-properties at root for Testing")),
        &["v1"],
    );
    define(&root);
    wait_for_definition(&s, &definition_name(&root.1, "v1"), None);
    create_and_apply(
        &s,
        &plural(&root.1),
        &format!(r#"{{{},"a":{{"b":[{{"c":"d"}}]}}}}"#, meta(&root.1, "v1")),
    );
    assert_explains(&s, &plural(&root.1), &["KIND:", "E2e-test-crd-publish-openapi-10-crd"]);

    let nested = publish_crd(
        "unknown-in-nested",
        11,
        Some(&schema_preserving("spec", "preserve-unknown-properties in nested field for Testing")),
        &["v1"],
    );
    define(&nested);
    wait_for_definition(&s, &definition_name(&nested.1, "v1"), None);
    create_and_apply(
        &s,
        &plural(&nested.1),
        &format!(r#"{{{},"spec":{{"a":null,"b":[{{"c":"d"}}]}}}}"#, meta(&nested.1, "v1")),
    );
    assert_explains(
        &s,
        &plural(&nested.1),
        &["DESCRIPTION:", "preserve-unknown-properties in nested field for Testing"],
    );
}

// ---------------------------------------------------------------------------------------------
// Server-side field validation

/// The schema upstream's field validation tests give their definitions; `preserve` keeps
/// unknown fields in `spec` and adds an embedded resource `template` there.
fn validation_schema(preserve: bool) -> Value {
    let mut spec = json!({"type": "object", "properties": {
        "foo": {"type": "string"},
        "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
        "ports": {"type": "array", "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                  "x-kubernetes-list-type": "map", "items": {"type": "object",
                  "required": ["containerPort", "protocol"], "properties": {
                      "containerPort": {"format": "int32", "type": "integer"},
                      "hostIP": {"type": "string"},
                      "hostPort": {"format": "int32", "type": "integer"},
                      "name": {"type": "string"},
                      "protocol": {"type": "string"}}}}}});
    if preserve {
        spec["x-kubernetes-preserve-unknown-fields"] = json!(true);
        spec["properties"]["template"] = json!({"type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
                           "spec": {"type": "object"}}});
    }
    json!({"type": "object", "properties": {"spec": spec}})
}

/// Upstream's fixture with two versions (`v1beta1` stored, `v1beta2`), cluster-scoped.
fn validated_crd(plural: &str, schema: Option<Value>) -> Value {
    let mut crd = noxu(plural, json!({}));
    let schema =
        schema.unwrap_or(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    crd["spec"]["versions"] = json!([
        {"name": "v1beta1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}},
        {"name": "v1beta2", "served": true, "storage": false, "schema": {"openAPIV3Schema": schema}},
    ]);
    crd
}

/// A server-side apply of `yaml` (fieldValidation=Strict) to `mytest` of `plural`.
fn strict_apply(s: &RkubeServer, plural: &str, yaml: &str) -> Curl {
    let path = format!(
        "/apis/mygroup.example.com/v1beta1/{plural}/mytest?fieldManager=field_validation_mgr&fieldValidation=Strict"
    );
    send(s, "PATCH", &path, "application/apply-patch+yaml", yaml)
}

/// Upstream's "Server side field validation" cases for custom resources (no schema, unknown
/// fields, unknown metadata, duplicates) and for a typed object's unknown metadata.
#[test]
fn strict_field_validation_of_applied_custom_objects() {
    let s = RkubeServer::start();
    let define = |plural: &str, schema: Option<Value>| {
        s.define_crd(
            &validated_crd(plural, schema).to_string(),
            &format!("{plural}.mygroup.example.com"),
        );
    };
    let head = |kind: &str| {
        format!("\napiVersion: mygroup.example.com/v1beta1\nkind: {kind}\nmetadata:\n  name: mytest\n  finalizers:\n  - test-finalizer\n")
    };
    const PORTS: &str = "  cronSpec: \"* * * * */5\"\n  ports:\n  - name: x\n    containerPort: 80\n    protocol: TCP";

    // No validation schema: unknown fields are fine.
    define("noschemas", None);
    let applied = strict_apply(
        &s,
        "noschemas",
        &format!("{}spec:\n  unknown: uk1\n{PORTS}", head("Noschema")),
    );
    assert_eq!(applied.code, 201, "{}", applied.body);
    assert_eq!(parse("applied", &applied.body)["spec"]["unknown"], "uk1");

    // A schema without the field: refused, naming it.
    define("schemeds", Some(validation_schema(false)));
    let refused = strict_apply(
        &s,
        "schemeds",
        &format!("{}unknownField: unknown\nspec:\n  foo: foo1\n{PORTS}", head("Schemed")),
    );
    assert!(
        refused.body.contains(".unknownField: field not declared in schema"),
        "{}: {}",
        refused.code,
        refused.body
    );
    // (The code is not checked: upstream's apply answers its typed patch error as an error
    // that is not a Status, which may be 500 there and is 400 here.)
    assert!(refused.code >= 400, "{}", refused.body);
    // Nothing was stored.
    assert_eq!(s.curl(&[], "/apis/mygroup.example.com/v1beta1/schemeds/mytest").code, 404);

    // Unknown metadata, at the root and in an embedded resource.
    define("preservings", Some(validation_schema(true)));
    let yaml = format!(
        "\napiVersion: mygroup.example.com/v1beta1\nkind: Preserving\nmetadata:\n  name: mytest\n  unknownMeta: unknown\n  finalizers:\n  - test-finalizer\nspec:\n  template:\n    apiversion: foo/v1\n    kind: Sub\n    metadata:\n        unknownSubMeta: unknown\n        name: subobject\n        namespace: default\n  foo: foo1\n{PORTS}"
    );
    let refused = strict_apply(&s, "preservings", &yaml);
    assert!(
        refused
            .body
            .contains(".spec.template.metadata.unknownSubMeta: field not declared in schema")
            || refused.body.contains(".metadata.unknownMeta: field not declared in schema"),
        "{}: {}",
        refused.code,
        refused.body
    );

    // Duplicate keys, even where unknown fields are kept: the YAML line of the second one.
    let yaml =
        format!("{}spec:\n  unknown: uk1\n  foo: foo1\n  foo: foo2\n{PORTS}", head("Preserving"));
    let refused = strict_apply(&s, "preservings", &yaml);
    assert!(
        refused.body.contains(r#"line 11: key \"foo\" already set in map"#),
        "{}: {}",
        refused.code,
        refused.body
    );

    // A typed object's unknown metadata.
    let deployment = r#"{"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "my-dep", "unknownMeta": "foo", "labels": {"app": "nginx"}},
        "spec": {"selector": {"matchLabels": {"app": "nginx"}},
                 "template": {"metadata": {"labels": {"app": "nginx"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}}}}"#;
    let refused = send(
        &s,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments?fieldManager=field_validation_mgr&fieldValidation=Strict",
        "application/json",
        deployment,
    );
    assert!(
        refused.body.contains(r#"strict decoding error: unknown field \"metadata.unknownMeta\""#),
        "{}: {}",
        refused.code,
        refused.body
    );
    assert_eq!(refused.code, 400, "{}", refused.body);
}
