//! kubectl with custom resources as a user drives them: `explain` from the definition's
//! schema, `edit` through an editor, `apply --server-side` from two field managers merging by
//! the schema's list types (with upstream's conflict text and `--force-conflicts`), `scale`
//! through the scale subresource, and `delete crd` taking the objects with it.

use rkube_conformance::cluster::{run_command, stderr_of, stdout_of, RkubeServer};
use serde_json::{json, Value};

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        description: A widget of the test.
        properties:
          spec:
            type: object
            description: What the widget should be.
            properties:
              replicas: {type: integer, description: How many copies of the widget run.}
              color: {type: string, description: The paint of the widget.}
              ports:
                type: array
                description: Where the widget listens.
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
"#;

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

/// An editor for `kubectl edit`: a script in `dir` running `sed -i <script>` on its file.
fn sed_editor(dir: &std::path::Path, name: &str, script: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\nexec sed -i '{script}' \"$1\"\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn widget(s: &RkubeServer) -> Value {
    json(&s.ok(&["get", "widget", "w1", "-o", "json"]))
}

#[test]
fn explain_and_edit_a_custom_resource() {
    let s = RkubeServer::start();
    s.define_crd(CRD, "widgets.example.com");
    let explained = s.ok(&["explain", "widgets.spec"]);
    for expected in [
        "GROUP:      example.com",
        "KIND:       Widget",
        "VERSION:    v1",
        "FIELD: spec <Object>",
        "What the widget should be.",
        "How many copies of the widget run.",
        "Where the widget listens.",
    ] {
        assert!(explained.contains(expected), "no {expected:?} in:\n{explained}");
    }
    // Each field with its type, from the schema.
    let field = |text: &str, name: &str| -> String {
        let line = text.lines().find(|l| l.trim_start().starts_with(name));
        line.unwrap_or_else(|| panic!("no field {name} in:\n{text}")).split_whitespace().collect()
    };
    assert_eq!(field(&explained, "replicas"), "replicas<integer>");
    assert_eq!(field(&explained, "ports"), "ports<[]Object>");
    let ports = s.ok(&["explain", "widgets.spec.ports"]);
    assert_eq!(field(&ports, "name"), "name<string>-required-");

    s.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {color: blue}\n",
    );
    // kubectl runs the editor on a file holding the object; what it leaves there is written.
    let editors = tempfile::tempdir().unwrap();
    let mut edit = s.kubectl_command(&s.kubectl);
    let editor = sed_editor(editors.path(), "paint-green", "s/color: blue/color: green/");
    edit.env("KUBE_EDITOR", &editor).args(["edit", "widget/w1"]);
    let out = run_command(&mut edit, None);
    assert!(out.status.success(), "kubectl edit failed:\n{}", stderr_of(&out));
    assert_eq!(stdout_of(&out).trim(), "widget.example.com/w1 edited");
    let edited = json(&s.ok(&["get", "widget", "w1", "-o", "json", "--show-managed-fields"]));
    assert_eq!(edited["spec"]["color"], "green");
    let managers: Vec<&str> = edited["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert!(managers.contains(&"kubectl-edit"), "{managers:?}");
    // An edit that leaves the object invalid is refused, and the object stays as it was.
    let mut bad = s.kubectl_command(&s.kubectl);
    let editor = sed_editor(editors.path(), "paint-list", "s/color: green/color: [1]/");
    bad.env("KUBE_EDITOR", &editor).args(["edit", "widget/w1"]);
    let out = run_command(&mut bad, None);
    assert!(!out.status.success(), "an invalid edit was accepted:\n{}", stdout_of(&out));
    let stderr = stderr_of(&out);
    assert!(stderr.starts_with("error: widgets.example.com \"w1\" is invalid\n"), "{stderr}");
    // kubectl showed the server's causes in the file it reopened, and keeps a copy of it.
    let copy = stderr
        .split('"')
        .find(|part| part.starts_with('/') && part.ends_with(".yaml"))
        .unwrap_or_else(|| panic!("no copy of the edit named in:\n{stderr}"));
    let kept = std::fs::read_to_string(copy).unwrap();
    let _ = std::fs::remove_file(copy);
    assert!(
        kept.contains(
            "# * spec.color: Invalid value: \"array\": spec.color in body must be of type \
             string: \"array\""
        ),
        "{kept}"
    );
    assert_eq!(widget(&s)["spec"]["color"], "green");
}

const ALICE: &str = r#"
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec:
  replicas: 1
  ports: [{name: http, port: 80}]
"#;

#[test]
fn server_side_apply_merges_by_the_schema_and_reports_conflicts() {
    let s = RkubeServer::start();
    s.define_crd(CRD, "widgets.example.com");
    let apply = ["apply", "--server-side", "-f", "-"];
    s.ok_stdin(&[&apply[..], &["--field-manager=alice"]].concat(), ALICE);
    // Another manager's item of the map-list joins alice's.
    let bob = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\n\
               spec:\n  ports: [{name: metrics, port: 9090}]\n";
    s.ok_stdin(&[&apply[..], &["--field-manager=bob"]].concat(), bob);
    assert_eq!(
        widget(&s)["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}])
    );
    // A field alice owns conflicts, in upstream's words.
    let bob_scales = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\n\
                      spec:\n  replicas: 2\n  ports: [{name: metrics, port: 9090}]\n";
    let refused = s.fails_stdin(&[&apply[..], &["--field-manager=bob"]].concat(), bob_scales);
    assert!(
        refused.contains(r#"Apply failed with 1 conflict: conflict with "alice": .spec.replicas"#),
        "{refused}"
    );
    assert!(refused.contains("--force-conflicts"), "kubectl explains the way out: {refused}");
    assert_eq!(widget(&s)["spec"]["replicas"], 1);
    // Forced, bob wins the field; alice's port stays hers.
    s.ok_stdin(&[&apply[..], &["--field-manager=bob", "--force-conflicts"]].concat(), bob_scales);
    let forced = json(&s.ok(&["get", "widget", "w1", "-o", "json", "--show-managed-fields"]));
    assert_eq!(forced["spec"]["replicas"], 2);
    assert_eq!(forced["spec"]["ports"].as_array().unwrap().len(), 2);
    let entries = forced["metadata"]["managedFields"].as_array().unwrap();
    let fields_of = |manager: &str| {
        entries.iter().find(|e| e["manager"] == manager).unwrap()["fieldsV1"]["f:spec"].clone()
    };
    assert!(fields_of("bob").get("f:replicas").is_some(), "{entries:?}");
    assert!(fields_of("alice").get("f:replicas").is_none(), "{entries:?}");
    assert!(fields_of("alice")["f:ports"].get(r#"k:{"name":"http"}"#).is_some(), "{entries:?}");
    // alice leaving her port out removes it, and only it.
    let alice_again = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {}\n";
    s.ok_stdin(&[&apply[..], &["--field-manager=alice"]].concat(), alice_again);
    assert_eq!(widget(&s)["spec"]["ports"], json!([{"name": "metrics", "port": 9090}]));
    // On the wire: upstream's 409 with one FieldManagerConflict cause per field.
    let carol = r#"{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
                    "spec": {"replicas": 4, "ports": [{"name": "metrics", "port": 9091}]}}"#;
    let path = "/apis/example.com/v1/namespaces/default/widgets/w1?fieldManager=carol";
    let args = ["-X", "PATCH", "-H", "Content-Type: application/apply-patch+yaml", "--data-binary"];
    let refused = s.curl(&[&args[..], &[carol]].concat(), path);
    assert_eq!(refused.code, 409, "{}", refused.body);
    let status = json(&refused.body);
    assert_eq!(status["reason"], "Conflict");
    assert_eq!(
        status["message"],
        "Apply failed with 2 conflicts: conflicts with \"bob\":\n- .spec.replicas\n\
         - .spec.ports[name=\"metrics\"].port"
    );
    assert_eq!(
        status["details"]["causes"],
        json!([
            {"reason": "FieldManagerConflict", "message": "conflict with \"bob\"",
             "field": ".spec.replicas"},
            {"reason": "FieldManagerConflict", "message": "conflict with \"bob\"",
             "field": ".spec.ports[name=\"metrics\"].port"},
        ])
    );
}

#[test]
fn scale_a_custom_resource_and_delete_its_definition() {
    let s = RkubeServer::start();
    s.define_crd(CRD, "widgets.example.com");
    s.ok_stdin(&["apply", "-f", "-"], ALICE);
    assert_eq!(
        s.ok(&["scale", "widget/w1", "--replicas=3"]).trim(),
        "widget.example.com/w1 scaled"
    );
    assert_eq!(widget(&s)["spec"]["replicas"], 3);
    let scale =
        json(&s.ok(&["get", "--raw", "/apis/example.com/v1/namespaces/default/widgets/w1/scale"]));
    assert_eq!(
        (scale["kind"].as_str(), scale["spec"]["replicas"].as_i64()),
        (Some("Scale"), Some(3))
    );
    // A precondition on the current replicas is checked.
    let refused = s.fails(&["scale", "widget/w1", "--current-replicas=2", "--replicas=5"]);
    assert!(refused.contains("Expected replicas to be 2, was 3"), "{refused}");

    s.ok(&["create", "namespace", "other"]);
    s.ok_stdin(&["apply", "-n", "other", "-f", "-"], ALICE);
    assert_eq!(s.ok(&["get", "widgets", "-A", "-o", "name"]).lines().count(), 2);
    let deleted = s.ok(&["delete", "crd", "widgets.example.com", "--timeout=30s"]);
    assert_eq!(
        deleted.trim(),
        "customresourcedefinition.apiextensions.k8s.io \"widgets.example.com\" deleted"
    );
    // kubectl knows the resource from its discovery cache, the server no longer serves it.
    let gone = s.fails(&["get", "widgets", "-A"]);
    assert!(gone.contains("the server could not find the requested resource"), "{gone}");
    let gone = s.curl(&[], "/apis/example.com/v1/widgets");
    assert_eq!(gone.code, 404, "{}", gone.body);
    // Defined again, the resource starts empty: its objects went with the definition.
    s.define_crd(CRD, "widgets.example.com");
    assert!(s.ok(&["get", "widgets", "-A", "-o", "name"]).trim().is_empty());
}
