use serde_json::{json, Value};

use super::Schema;

fn widget_schema() -> Schema {
    Schema::new(&json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {
                    "size": {"type": "integer", "minimum": 1, "maximum": 10},
                    "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                    "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5, "minLength": 2},
                    "when": {"type": "string", "format": "date-time"},
                    "port": {"x-kubernetes-int-or-string": true},
                    "tags": {"type": "array", "maxItems": 2, "x-kubernetes-list-type": "set",
                             "items": {"type": "string"}},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map",
                              "x-kubernetes-list-map-keys": ["name"],
                              "items": {"type": "object", "required": ["name"], "properties": {
                                  "name": {"type": "string"},
                                  "port": {"type": "integer", "default": 80}}}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "note": {"type": "string", "nullable": true},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                 "properties": {"spec": {"type": "object", "properties": {
                                     "replicas": {"type": "integer", "default": 1}}}}},
                },
            },
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
        },
    }))
}

fn lines(schema: &Schema, obj: &Value) -> Vec<String> {
    schema.validate(obj).iter().map(|e| e.line()).collect()
}

#[test]
fn values_are_checked_with_kube_openapis_messages() {
    let s = widget_schema();
    assert!(lines(&s, &json!({"spec": {"size": 3, "port": "http"}})).is_empty());
    let got = lines(
        &s,
        &json!({"spec": {
            "size": "big", "color": "green", "name": "ABCDEFG", "when": "yesterday",
            "port": true, "tags": ["a", "b", "a"],
        }}),
    );
    assert_eq!(
        got,
        vec![
            r#"spec.size: Invalid value: "string": spec.size in body must be of type integer: "string""#,
            r#"spec.color: Unsupported value: "green": supported values: "red", "blue""#,
            "spec.name: Too long: may not be more than 5 bytes",
            r#"spec.name: Invalid value: "ABCDEFG": spec.name in body should match '^[a-z]+$'"#,
            r#"spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday""#,
            r#"spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#,
            "spec.tags: Too many: 3: must have at most 2 items",
            r#"spec.tags[2]: Duplicate value: "a""#,
        ]
    );
    assert_eq!(
        lines(&s, &json!({"spec": {"size": 0}})),
        vec!["spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"]
    );
    assert_eq!(lines(&s, &json!({"spec": {}})), vec!["spec.size: Required value"]);
    assert_eq!(
        lines(&s, &json!({"spec": {"size": 1, "ports": [{"name": "a"}, {"name": "a"}]}})),
        vec![r#"spec.ports[1]: Duplicate value: map[string]interface {}{"name":"a"}"#]
    );
    assert_eq!(
        lines(&s, &json!({"spec": {"size": 1, "labels": {"a": 1}}})),
        vec![
            r#"spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer""#
        ]
    );
    assert_eq!(
        lines(&s, &json!({"spec": {"size": 1, "template": {"spec": {}}}})),
        vec![
            "spec.template.apiVersion: Required value: must not be empty",
            "spec.template.kind: Required value: must not be empty",
        ]
    );
    assert!(lines(&s, &json!({"spec": {"size": 1, "note": null}})).is_empty(), "nullable");
}

#[test]
fn unknown_fields_are_pruned_and_reported() {
    let s = widget_schema();
    let mut obj = json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "top": 1,
        "spec": {"size": 1, "foo": {"bar": 1}, "ports": [{"name": "a", "x": 1}],
                 "extra": {"anything": {"goes": true}},
                 "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                              "spec": {"replicas": 2, "bogus": 1}}},
        "status": {"ready": true, "phase": "x"},
    });
    let pruned = s.prune(&mut obj);
    assert_eq!(
        pruned,
        vec!["spec.foo", "spec.ports[0].x", "spec.template.spec.bogus", "status.phase", "top"]
    );
    assert_eq!(obj["spec"]["extra"], json!({"anything": {"goes": true}}));
    assert_eq!(obj["spec"]["template"]["metadata"], json!({"name": "p"}));
    assert_eq!(obj["metadata"], json!({"name": "w"}));
    assert!(obj.get("top").is_none() && obj["spec"].get("foo").is_none());
}

#[test]
fn unknown_metadata_of_the_object_and_of_embedded_resources_is_pruned_and_reported() {
    let s = widget_schema();
    let mut obj = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "labels": {"a": "b"}, "unknownMeta": 1},
        "spec": {"size": 1, "template": {"kind": "Pod", "metadata": {"name": "p", "sub": 2}}},
    });
    let pruned = s.prune(&mut obj);
    assert_eq!(pruned, vec!["metadata.unknownMeta", "spec.template.metadata.sub"]);
    assert_eq!(obj["metadata"], json!({"name": "w", "labels": {"a": "b"}}));
    assert_eq!(obj["spec"]["template"]["metadata"], json!({"name": "p"}));
}

#[test]
fn defaults_fill_missing_fields_in_items_and_maps() {
    let s = widget_schema();
    let mut obj = json!({"spec": {"size": 1, "color": null, "name": null, "note": null,
                                  "ports": [{"name": "a"}, {"name": "b", "port": 8080}],
                                  "template": {"spec": {}}}});
    s.default(&mut obj);
    assert_eq!(obj["spec"]["color"], "red", "a non-nullable null takes the default");
    assert!(obj["spec"].get("name").is_none(), "a non-nullable null without default goes");
    assert!(obj["spec"]["note"].is_null() && obj["spec"].get("note").is_some(), "nullable stays");
    assert_eq!(
        obj["spec"]["ports"],
        json!([{"name": "a", "port": 80}, {"name": "b", "port": 8080}])
    );
    assert_eq!(obj["spec"]["template"]["spec"]["replicas"], 1);
}

#[test]
fn a_missing_schema_keeps_everything() {
    let s = Schema::new(&Value::Null);
    let mut obj = json!({"spec": {"a": 1}});
    assert!(s.prune(&mut obj).is_empty());
    assert!(s.validate(&obj).is_empty());
}
