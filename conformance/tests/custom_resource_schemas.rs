//! What a CustomResourceDefinition's versions say about their objects beyond the schema:
//! `additionalPrinterColumns` become the columns of `kubectl get` (and of the Table JSON on
//! the wire), `selectableFields` the field selectors of lists and watches, and a definition
//! being deleted refuses new objects. Each with the definition checks and messages of
//! kube-apiserver, driven with stock kubectl and raw HTTPS.

use std::time::Duration;

use rkube_conformance::cluster::{stdout_of, RkubeServer};
use serde_json::{json, Value};

/// Widgets with a schema of their own; `extra` is added to the version (columns, fields).
fn definition(extra: &str) -> String {
    format!(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {{plural: widgets, singular: widget, kind: Widget}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {{status: {{}}}}
{extra}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {{type: integer}}
              color: {{type: string}}
              ratio: {{type: number}}
              shiny: {{type: boolean}}
              parts: {{type: array, items: {{type: string}}}}
          status:
            type: object
            properties:
              conditions:
                type: array
                items:
                  type: object
                  properties:
                    type: {{type: string}}
                    status: {{type: string}}
"#
    )
}

const COLUMNS: &str = r#"    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Color, type: string, jsonPath: .spec.color, description: The colour of the widget.}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Ratio, type: number, format: double, priority: 1, jsonPath: .spec.ratio}
    - {name: Created, type: date, jsonPath: .metadata.creationTimestamp}"#;

const SELECTABLE: &str = r#"    selectableFields:
    - {jsonPath: .spec.color}
    - {jsonPath: .spec.size}
    - {jsonPath: .spec.shiny}"#;

fn widget(name: &str, spec: Value) -> String {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})
        .to_string()
}

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

/// The words of each line kubectl printed.
fn rows(table: &str) -> Vec<Vec<String>> {
    table.lines().map(|l| l.split_whitespace().map(String::from).collect()).collect()
}

const TABLE: &str = "Accept: application/json;as=Table;v=v1;g=meta.k8s.io";

#[test]
fn printer_columns_are_the_table_of_kubectl_get() {
    let s = RkubeServer::start();
    s.define_crd(&definition(COLUMNS), "widgets.example.com");
    s.ok_stdin(
        &["create", "-f", "-"],
        &widget("w1", json!({"size": 3, "color": "blue", "ratio": 1.5})),
    );
    s.ok_stdin(&["create", "-f", "-"], &widget("w2", json!({"size": 7})));
    s.ok(&[
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Synced","status":"False"},{"type":"Ready","status":"True"}]}}"#,
    ]);

    // Name and the given columns, no Age; the wide column only with -o wide; missing values
    // are null cells, which kubectl leaves blank.
    let printed = s.ok(&["get", "widgets"]);
    let table = rows(&printed);
    assert_eq!(table[0], ["NAME", "SIZE", "COLOR", "READY", "CREATED"], "{printed}");
    assert_eq!(table[1][..4], ["w1", "3", "blue", "True"], "{printed}");
    assert_eq!(table[2][..2], ["w2", "7"], "{printed}");
    assert_eq!(table[2].len(), 3, "blank color and readiness:\n{printed}");
    for age in [&table[1][4], &table[2][2]] {
        assert!(age.ends_with('s') || age.ends_with('m'), "an age, not a time: {age}");
    }
    let printed = s.ok(&["get", "widgets", "-o", "wide"]);
    let wide = rows(&printed);
    assert_eq!(wide[0], ["NAME", "SIZE", "COLOR", "READY", "RATIO", "CREATED"], "{printed}");
    assert_eq!(wide[1][4], "1.5", "{printed}");
    assert_eq!(wide[2].len(), 3, "{printed}");

    // The Table on the wire: the column definitions as upstream gives them, null cells.
    let got = s.curl(&["-H", TABLE], "/apis/example.com/v1/namespaces/default/widgets");
    assert_eq!(got.code, 200, "{}", got.body);
    let table = json(&got.body);
    assert_eq!(table["kind"], "Table");
    let columns = table["columnDefinitions"].as_array().unwrap();
    let described: Vec<(&str, &str, &str, i64)> = columns
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["type"].as_str().unwrap(),
                c["format"].as_str().unwrap(),
                c["priority"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        described,
        [
            ("Name", "string", "name", 0),
            ("Size", "integer", "", 0),
            ("Color", "string", "", 0),
            ("Ready", "string", "", 0),
            ("Ratio", "number", "double", 1),
            ("Created", "date", "", 0),
        ]
    );
    assert_eq!(
        columns[1]["description"],
        "Custom resource definition column (in JSONPath format): .spec.size"
    );
    assert_eq!(columns[2]["description"], "The colour of the widget.");
    let cells = table["rows"][1]["cells"].as_array().unwrap();
    assert_eq!(cells[0..5], [json!("w2"), json!(7), Value::Null, Value::Null, Value::Null]);
    assert_eq!(table["rows"][0]["cells"][4], json!(1.5));
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");

    // A single object's table, as `kubectl get widget w1` asks for it.
    let one = s.curl(&["-H", TABLE], "/apis/example.com/v1/namespaces/default/widgets/w1");
    assert_eq!(json(&one.body)["rows"][0]["cells"][1], 3, "{}", one.body);

    // A changed definition changes the table while the server runs.
    s.ok(&[
        "patch",
        "crd",
        "widgets.example.com",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/versions/0/additionalPrinterColumns","value":[{"name":"Shiny","type":"boolean","jsonPath":".spec.shiny"}]}]"#,
    ]);
    s.wait_until("the new columns", Duration::from_secs(20), || {
        let printed = s.ok(&["get", "widgets"]);
        (rows(&printed)[0] == ["NAME", "SHINY"], printed)
    });
}

/// Columns reading slices, unions and recursive descent, as client-go's JSONPath reads them:
/// the cell is the first value reached; a slice out of bounds fails, leaving the cell empty.
const JSONPATH_COLUMNS: &str = r#"    additionalPrinterColumns:
    - {name: Last, type: string, jsonPath: '.spec.parts[-1:]'}
    - {name: Mid, type: string, jsonPath: '.spec.parts[1:3]'}
    - {name: Step, type: string, jsonPath: '.spec.parts[-3::2]'}
    - {name: Union, type: string, jsonPath: '.spec.parts[3,0]'}
    - {name: Keys, type: string, jsonPath: ".spec['nothing','color']"}
    - {name: Deep, type: string, jsonPath: '.status..status'}
    - {name: Beyond, type: string, jsonPath: '.spec.parts[0:9]'}"#;

#[test]
fn printer_columns_read_slices_unions_and_recursive_descent() {
    let s = RkubeServer::start();
    s.define_crd(&definition(JSONPATH_COLUMNS), "widgets.example.com");
    let parts = json!(["a", "b", "c", "d", "e"]);
    s.ok_stdin(&["create", "-f", "-"], &widget("w1", json!({"color": "blue", "parts": parts})));
    s.ok(&[
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Synced","status":"False"},{"type":"Ready","status":"True"}]}}"#,
    ]);
    let printed = s.ok(&["get", "widgets"]);
    let table = rows(&printed);
    assert_eq!(
        table[0],
        ["NAME", "LAST", "MID", "STEP", "UNION", "KEYS", "DEEP", "BEYOND"],
        "{printed}"
    );
    assert_eq!(table[1], ["w1", "e", "b", "c", "d", "blue", "False"], "{printed}");
    let got = s.curl(&["-H", TABLE], "/apis/example.com/v1/namespaces/default/widgets/w1");
    assert_eq!(json(&got.body)["rows"][0]["cells"][7], Value::Null, "{}", got.body);
}

#[test]
fn without_printer_columns_the_table_is_name_and_age_of_type_date() {
    let s = RkubeServer::start();
    s.define_crd(&definition(""), "widgets.example.com");
    s.ok_stdin(&["create", "-f", "-"], &widget("w1", json!({"size": 1})));
    assert_eq!(rows(&s.ok(&["get", "widgets"]))[0], ["NAME", "AGE"]);
    let got = s.curl(&["-H", TABLE], "/apis/example.com/v1/namespaces/default/widgets");
    let table = json(&got.body);
    let columns: Vec<(&str, &str)> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["type"].as_str().unwrap()))
        .collect();
    assert_eq!(columns, [("Name", "string"), ("Age", "date")], "{}", got.body);
    let age = table["rows"][0]["cells"][1].as_str().unwrap();
    assert!(age.ends_with('s') || age.ends_with('m'), "{age}");
}

#[test]
fn bad_printer_columns_and_selectable_fields_are_refused_with_upstreams_messages() {
    let s = RkubeServer::start();
    let columns = r#"    additionalPrinterColumns:
    - {name: Size, type: float, jsonPath: spec.size}
    - {name: Color, type: string, format: colour, jsonPath: .spec.color}"#;
    let refused = s.fails_stdin(&["apply", "-f", "-"], &definition(columns));
    for expected in [
        r#"The CustomResourceDefinition "widgets.example.com" is invalid"#,
        r#"spec.additionalPrinterColumns[0].type: Invalid value: "float": must be one of boolean,date,integer,number,string"#,
        r#"spec.additionalPrinterColumns[0].JSONPath: Invalid value: "spec.size": must be a simple json path starting with ."#,
        r#"spec.additionalPrinterColumns[1].format: Invalid value: "colour": must be one of byte,date,date-time,double,float,int32,int64,password"#,
    ] {
        assert!(refused.contains(expected), "{expected:?} not in:\n{refused}");
    }
    let fields = r#"    selectableFields:
    - {jsonPath: .spec.shape}
    - {jsonPath: .spec.parts}
    - {jsonPath: .metadata.name}
    - {jsonPath: .spec.color}
    - {jsonPath: .spec.color}"#;
    let refused = s.fails_stdin(&["apply", "-f", "-"], &definition(fields));
    for expected in [
        r#"spec.selectableFields[0].jsonPath: Invalid value: ".spec.shape": is an invalid path: does not refer to a valid field"#,
        r#"spec.selectableFields[1].jsonPath: Invalid value: ".spec.parts": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."#,
        r#"spec.selectableFields[2].jsonPath: Invalid value: ".metadata.name": is an invalid path: does not refer to a valid field"#,
        r#"spec.selectableFields[4].jsonPath: Duplicate value: ".spec.color""#,
    ] {
        assert!(refused.contains(expected), "{expected:?} not in:\n{refused}");
    }
    // Nothing was stored.
    let crds = s.ok(&["get", "crd", "-o", "name"]);
    assert!(!crds.contains("widgets.example.com"), "{crds}");
}

/// Defaults are checked against their schema, pruning and rules, and patterns must compile
/// as Go's regular expressions, when the definition is written (apiextensions-apiserver's
/// `ValidateDefaults` and structural checks); a good default is then applied.
#[test]
fn bad_defaults_and_patterns_are_refused_with_upstreams_messages() {
    let s = RkubeServer::start();
    let with = |properties: &str| {
        format!(
            r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {{plural: gadgets, singular: gadget, kind: Gadget}}
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
{properties}
"#
        )
    };
    // YAML 1.1 reads a bare On as a boolean: the classic refusal.
    let refused = s.fails_stdin(
        &["apply", "-f", "-"],
        &with(
            r#"              powerState: {type: string, default: On}
              size: {type: integer, minimum: 2, default: 1}
              box: {type: object, properties: {w: {type: integer}}, default: {w: 1, extra: x}}"#,
        ),
    );
    let at = "spec.validation.openAPIV3Schema.properties[spec].properties";
    for expected in [
        r#"The CustomResourceDefinition "gadgets.example.com" is invalid"#.to_string(),
        format!(
            r#"{at}[powerState].default: Invalid value: "boolean":  in body must be of type string: "boolean""#
        ),
        format!(
            r#"{at}[size].default: Invalid value: 1:  in body should be greater than or equal to 2"#
        ),
        format!(
            r#"{at}[box].default: Invalid value: map[string]interface {{}}{{"extra":"x", "w":1}}: must not have unknown fields"#
        ),
    ] {
        assert!(refused.contains(&expected), "{expected:?} not in:\n{refused}");
    }
    // The rules run on the default as it is (its own fields are not defaulted first).
    let refused = s.fails_stdin(
        &["apply", "-f", "-"],
        &with(
            r#"              worker:
                type: object
                default: {}
                properties: {min: {type: integer}, max: {type: integer}}
                x-kubernetes-validations: [{rule: "self.min <= self.max"}]"#,
        ),
    );
    let expected = format!(
        r#"{at}[worker].default: Invalid value: "object": no such key: min evaluating rule: self.min <= self.max"#
    );
    assert!(refused.contains(&expected), "{expected:?} not in:\n{refused}");
    let refused = s.fails_stdin(
        &["apply", "-f", "-"],
        &with(r#"              name: {type: string, pattern: "(a"}"#),
    );
    let expected = format!("{at}[name].pattern: Invalid value: \"(a\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(a`");
    assert!(refused.contains(&expected), "{expected:?} not in:\n{refused}");
    let crds = s.ok(&["get", "crd", "-o", "name"]);
    assert!(!crds.contains("gadgets.example.com"), "nothing stored: {crds}");

    // Good defaults and patterns: accepted, and the default fills in a new object.
    let good = with(
        r#"              size: {type: integer, minimum: 2, default: 3}
              name: {type: string, pattern: "^[a-z]+$"}"#,
    );
    s.define_crd(&good, "gadgets.example.com");
    let gadget = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
                        "metadata": {"name": "g"}, "spec": {"name": "abc"}});
    s.ok_stdin(&["create", "-f", "-"], &gadget.to_string());
    let created = json(&s.ok(&["get", "gadgets", "g", "-o", "json"]));
    assert_eq!(created["spec"], json!({"name": "abc", "size": 3}));
}

#[test]
fn selectable_fields_filter_lists_and_watches() {
    let s = RkubeServer::start();
    s.define_crd(&definition(SELECTABLE), "widgets.example.com");
    s.ok_stdin(&["create", "-f", "-"], &widget("blue-3", json!({"color": "blue", "size": 3})));
    s.ok_stdin(
        &["create", "-f", "-"],
        &widget("blue-5", json!({"color": "blue", "size": 5, "shiny": true})),
    );
    s.ok_stdin(&["create", "-f", "-"], &widget("red-3", json!({"color": "red", "size": 3})));
    s.ok_stdin(&["create", "-f", "-"], &widget("plain", json!({})));
    let names = |selector: &str| -> Vec<String> {
        let out = s.ok(&["get", "widgets", "--field-selector", selector, "-o", "name"]);
        out.lines().map(|l| l.trim_start_matches("widget.example.com/").to_string()).collect()
    };
    assert_eq!(names("spec.color=blue"), ["blue-3", "blue-5"]);
    assert_eq!(names("spec.size=3"), ["blue-3", "red-3"]);
    assert_eq!(names("spec.color=blue,spec.size!=3"), ["blue-5"]);
    assert_eq!(names("spec.shiny=true"), ["blue-5"]);
    assert_eq!(names("spec.color!=blue"), ["plain", "red-3"]);
    // An absent field reads as the empty string.
    assert_eq!(names("spec.color="), ["plain"]);
    assert_eq!(names("metadata.name=red-3"), ["red-3"]);

    // A field the version does not select on: upstream's 400.
    let refused = s.fails(&["get", "widgets", "--field-selector", "spec.ratio=1"]);
    assert!(refused.contains("field label not supported: spec.ratio"), "{refused}");
    let got =
        s.curl(&[], "/apis/example.com/v1/namespaces/default/widgets?fieldSelector=spec.ratio%3D1");
    assert_eq!(got.code, 400, "{}", got.body);
    let status = json(&got.body);
    assert_eq!(
        (&status["reason"], &status["message"]),
        (&json!("BadRequest"), &json!("field label not supported: spec.ratio"))
    );

    // A watch from now sees only the new objects that match.
    let list = json(&s.curl(&[], "/apis/example.com/v1/namespaces/default/widgets").body);
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let path = format!(
        "/apis/example.com/v1/namespaces/default/widgets?watch=1&resourceVersion={rv}&fieldSelector=spec.color%3Dred&timeoutSeconds=4"
    );
    let events = std::thread::scope(|scope| {
        let watch = scope.spawn(|| s.curl(&["-N"], &path));
        // Give the watch a moment to be registered; the events are kept from `rv` anyway.
        std::thread::sleep(Duration::from_millis(300));
        s.ok_stdin(&["create", "-f", "-"], &widget("blue-9", json!({"color": "blue", "size": 9})));
        s.ok_stdin(&["create", "-f", "-"], &widget("red-9", json!({"color": "red", "size": 9})));
        watch.join().expect("the watch thread")
    });
    let seen: Vec<(String, String)> = events
        .body
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let e = json(l);
            (
                e["type"].as_str().unwrap().to_string(),
                e["object"]["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(seen, [("ADDED".to_string(), "red-9".to_string())], "{}", events.body);

    // kubectl watches with the selector too.
    let out = s.kubectl(&[
        "get",
        "widgets",
        "--field-selector",
        "spec.size=9",
        "-w",
        "--request-timeout=3s",
        "-o",
        "name",
    ]);
    let watched: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(
        watched,
        ["widget.example.com/blue-9", "widget.example.com/red-9"],
        "{}",
        stdout_of(&out)
    );
}

#[test]
fn a_terminating_definition_refuses_new_objects() {
    let s = RkubeServer::start();
    s.define_crd(&definition(""), "widgets.example.com");
    // A finalizer holds one object, and with it the definition's delete.
    let held = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "spec": {"size": 1}});
    s.ok_stdin(&["create", "-f", "-"], &held.to_string());
    s.ok(&["delete", "crd", "widgets.example.com", "--wait=false"]);
    s.wait_until("the definition terminating", Duration::from_secs(20), || {
        let crd = json(&s.ok(&["get", "crd", "widgets.example.com", "-o", "json"]));
        let terminating = crd["status"]["conditions"].as_array().into_iter().flatten().any(|c| {
            c["type"] == "Terminating"
                && c["status"] == "True"
                && c["reason"] == "InstanceDeletionInProgress"
        });
        (terminating && crd["metadata"]["deletionTimestamp"].is_string(), crd.to_string())
    });

    let refused = s.fails_stdin(&["create", "-f", "-"], &widget("late", json!({"size": 2})));
    assert!(
        refused.contains("Error from server (MethodNotAllowed)")
            && refused
                .contains("create not allowed while custom resource definition is terminating"),
        "{refused}"
    );
    let body = widget("late", json!({"size": 2}));
    let got = s.curl_body(
        &["-X", "POST"],
        "/apis/example.com/v1/namespaces/default/widgets",
        body.as_bytes(),
    );
    assert_eq!(got.code, 405, "{}", got.body);
    let status = json(&got.body);
    assert_eq!(status["reason"], "MethodNotAllowed");
    assert_eq!(
        status["message"],
        "create not allowed while custom resource definition is terminating"
    );
    assert_eq!(status["details"], json!({"group": "example.com", "kind": "widgets"}));
    // Reading and updating the objects still works while it waits.
    assert_eq!(s.ok(&["get", "widgets", "-o", "name"]).trim(), "widget.example.com/held");

    // Released, the object goes, and the definition with it.
    s.ok(&["patch", "widget", "held", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    s.wait_until("the definition gone", Duration::from_secs(30), || {
        let out = s.kubectl(&["get", "crd", "-o", "name"]);
        let names = stdout_of(&out);
        (out.status.success() && !names.contains("widgets.example.com"), names)
    });
}
