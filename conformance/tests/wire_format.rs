//! The bytes of responses, as only the wire shows them: JSON as Go's `json.Encoder` writes it
//! (the Go types' field order, HTML-safe strings, a trailing newline) for objects, lists,
//! Status errors, watch events and tables, read with raw HTTPS and the admin certificate.

use rkube_conformance::cluster::RkubeServer;

/// A raw HTTPS request with the admin certificate: the status code and the body's bytes.
fn curl(s: &RkubeServer, extra: &[&str], path: &str) -> (u16, String) {
    let answer = s.curl(extra, path);
    (answer.code, answer.body)
}

fn assert_prefix(body: &str, prefix: &str) {
    assert!(
        body.starts_with(prefix),
        "expected the body to start with\n{prefix}\nbut it is\n{body}"
    );
}

fn assert_suffix(body: &str, suffix: &str) {
    assert!(
        body.ends_with(suffix),
        "expected the body to end with\n{suffix:?}\nbut it is\n{body:?}"
    );
}

const CONFIG_MAP: &str = r#"{"data":{"b":"2","a":"x <&> y"},"metadata":{"labels":{"z":"1","a":"2"},"name":"wire"},"apiVersion":"v1","kind":"ConfigMap"}"#;

#[test]
fn objects_lists_and_errors_are_written_as_go_writes_them() {
    let s = RkubeServer::start();
    let json = ["-H", "Content-Type: application/json"];
    let (code, created) = curl(
        &s,
        &[&json[..], &["-X", "POST", "--data", CONFIG_MAP]].concat(),
        "/api/v1/namespaces/default/configmaps",
    );
    assert_eq!(code, 201, "{created}");
    let object: serde_json::Value = serde_json::from_str(&created).unwrap();
    let uid = object["metadata"]["uid"].as_str().unwrap().to_string();
    let rv = object["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    // TypeMeta, then ObjectMeta in its Go order, then data (keys sorted, as Go writes maps,
    // and HTML-safe), and the encoder's newline.
    let head = format!(
        r#"{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"name":"wire","namespace":"default","uid":"{uid}","resourceVersion":"{rv}","creationTimestamp":""#
    );
    let tail = "},\"data\":{\"a\":\"x \\u003c\\u0026\\u003e y\",\"b\":\"2\"}}\n";
    assert_prefix(&created, &head);
    assert!(created.contains(r#""labels":{"a":"2","z":"1"},"managedFields":["#), "{created}");
    assert_suffix(&created, tail);

    let (code, got) = curl(&s, &[], "/api/v1/namespaces/default/configmaps/wire");
    assert_eq!(code, 200);
    assert_eq!(got, created, "a get answers what the create answered");

    // A list from the watch cache (the stored bytes as they are) and a page from the store;
    // as kube-apiserver's, its items carry no kind and apiVersion.
    let head = head.replacen(r#""kind":"ConfigMap","apiVersion":"v1","#, "", 1);
    for query in ["", "?limit=5"] {
        let (code, list) = curl(&s, &[], &format!("/api/v1/namespaces/default/configmaps{query}"));
        assert_eq!(code, 200);
        assert_prefix(
            &list,
            r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":""#,
        );
        assert!(
            list.contains(&format!(r#","items":[{head}"#))
                || list.contains(&format!(r#"}},{head}"#)),
            "{list}"
        );
        // The last item (kube-root-ca.crt sorts first) closes the list.
        assert_suffix(&list, &format!("{}]}}\n", tail.trim_end()));
    }

    // A Status error, byte for byte as kube-apiserver writes it.
    let (code, missing) = curl(&s, &[], "/api/v1/namespaces/default/configmaps/nope");
    assert_eq!(code, 404);
    assert_eq!(
        missing,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
         \"message\":\"configmaps \\\"nope\\\" not found\",\"reason\":\"NotFound\",\
         \"details\":{\"name\":\"nope\",\"kind\":\"configmaps\"},\"code\":404}\n"
    );

    // Each watch event is a line of its own, the object in its Go order.
    let (code, events) = curl(
        &s,
        &[],
        "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dwire",
    );
    assert_eq!(code, 200);
    assert_eq!(events, format!("{{\"type\":\"ADDED\",\"object\":{}}}\n", created.trim_end()));

    // A table, as kubectl asks for it.
    let (code, table) = curl(
        &s,
        &["-H", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io"],
        "/api/v1/namespaces/default/configmaps/wire",
    );
    assert_eq!(code, 200);
    assert_prefix(
        &table,
        r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":""#,
    );
    assert!(table.contains(&format!(r#""object":{{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{{"name":"wire","namespace":"default","uid":"{uid}""#)), "{table}");
    assert_suffix(&table, "}]}\n");

    // Discovery too.
    let (_, versions) = curl(&s, &[], "/api");
    assert_prefix(&versions, r#"{"kind":"APIVersions","versions":["v1"]"#);
    assert_suffix(&versions, "}\n");

    // Struct fields Go always writes: a Service's status, on create and on the built-in one.
    let service = r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"port":80}]}}"#;
    let (code, created) = curl(
        &s,
        &[&json[..], &["-X", "POST", "--data", service]].concat(),
        "/api/v1/namespaces/default/services",
    );
    assert_eq!(code, 201, "{created}");
    assert_suffix(&created, "},\"status\":{\"loadBalancer\":{}}}\n");
    let (_, kubernetes) = curl(&s, &[], "/api/v1/namespaces/default/services/kubernetes");
    assert_suffix(&kubernetes, "},\"status\":{\"loadBalancer\":{}}}\n");

    // Users see the same object through kubectl.
    let out = s.ok(&["get", "configmap", "wire", "-o", "jsonpath={.data.a}"]);
    assert_eq!(out, "x <&> y");
}
