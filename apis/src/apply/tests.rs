//! Server-side apply and update recording end to end, on built-in kinds, against what upstream
//! shows for the same requests.

use serde_json::{json, Value};

use super::*;

const T1: &str = "2026-11-21T10:00:00Z";
const T2: &str = "2026-11-21T11:00:00Z";
const CONFIG_MAP: &str = "io.k8s.api.core.v1.ConfigMap";
const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";
const SERVICE: &str = "io.k8s.api.core.v1.Service";

fn schema() -> &'static PatchSchema {
    PatchSchema::builtin()
}

fn options<'a>(
    manager: &'a str,
    force: bool,
    api_version: &'a str,
    time: &'a str,
) -> ApplyOptions<'a> {
    ApplyOptions { manager, force, api_version, time, subresource: None }
}

fn apply_as(
    type_ref: &str,
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
) -> Result<Value, ApplyError> {
    let api_version = config["apiVersion"].as_str().unwrap();
    apply(schema(), Some(type_ref), live, config, &options(manager, force, api_version, T2))
}

fn update_as(type_ref: &str, old: Option<&Value>, mut new: Value, manager: &str) -> Value {
    let api_version = new["apiVersion"].as_str().unwrap().to_string();
    record_update(schema(), Some(type_ref), old, &mut new, manager, &api_version, T1, None);
    new
}

/// The fieldsV1 of `manager`'s entry with `operation`, or null.
fn fields(object: &Value, manager: &str, operation: &str) -> Value {
    object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or(Value::Null)
}

fn managers(object: &Value) -> Vec<String> {
    object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| format!("{}/{}", e["manager"].as_str().unwrap(), e["operation"].as_str().unwrap()))
        .collect()
}

fn without_managed_fields(object: &Value) -> Value {
    let mut object = object.clone();
    take_managed_fields(&mut object);
    object
}

fn config_map(labels: Value, data: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": labels},
        "data": data
    })
}

fn deployment(replicas: i64, container: Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [container]}
            }
        }
    })
}

// Upstream: `kubectl create configmap c --from-literal=a=b`.
#[test]
fn a_create_owns_what_it_added_maps_included() {
    let created = update_as(
        CONFIG_MAP,
        None,
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "c", "namespace": "default", "uid": "u", "resourceVersion": "1",
                "creationTimestamp": "2026-11-21T10:00:00Z"
            },
            "data": {"a": "b"}
        }),
        "kubectl-create",
    );
    assert_eq!(
        created["metadata"]["managedFields"],
        json!([{
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "v1",
            "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:a": {}}}
        }])
    );
}

// Upstream: `kubectl apply --server-side` of a ConfigMap with a label.
#[test]
fn an_apply_owns_the_leaves_of_its_configuration() {
    let config = config_map(json!({"app": "x"}), json!({"a": "b"}));
    let created = apply_as(CONFIG_MAP, None, &config, "kubectl", false).unwrap();
    assert_eq!(
        created["metadata"]["managedFields"],
        json!([{
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": T2,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}
        }])
    );
    assert_eq!(without_managed_fields(&created), config);
}

// Upstream: a Deployment created by apply, with one container.
#[test]
fn list_items_are_owned_as_items_and_field_by_field() {
    let config = deployment(1, json!({"name": "c", "image": "nginx"}));
    let created = apply_as(DEPLOYMENT, None, &config, "kubectl", false).unwrap();
    assert_eq!(
        fields(&created, "kubectl", "Apply"),
        json!({
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {
                        "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}
                    }}
                }
            }
        })
    );
    let text = created["metadata"]["managedFields"][0]["fieldsV1"].to_string();
    assert!(text.contains(r#""k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{}}"#), "{text}");
}

#[test]
fn an_apply_keeps_what_the_server_set() {
    let mut live =
        apply_as(CONFIG_MAP, None, &config_map(json!({"a": "1"}), json!({})), "m", false).unwrap();
    let metadata = live["metadata"].as_object_mut().unwrap();
    metadata.insert("uid".into(), json!("u-1"));
    metadata.insert("resourceVersion".into(), json!("7"));
    metadata.insert("creationTimestamp".into(), json!(T1));
    let applied =
        apply_as(CONFIG_MAP, Some(&live), &config_map(json!({"a": "2"}), json!({})), "m", false)
            .unwrap();
    assert_eq!(applied["metadata"]["uid"], "u-1");
    assert_eq!(applied["metadata"]["resourceVersion"], "7");
    assert_eq!(applied["metadata"]["creationTimestamp"], T1);
    assert_eq!(applied["metadata"]["labels"], json!({"a": "2"}));
}

#[test]
fn applying_without_a_label_removes_it() {
    let first = config_map(json!({"a": "1", "b": "2"}), json!({"k": "v"}));
    let live = apply_as(CONFIG_MAP, None, &first, "kubectl", false).unwrap();
    let second = config_map(json!({"a": "1"}), json!({"k": "v"}));
    let applied = apply_as(CONFIG_MAP, Some(&live), &second, "kubectl", false).unwrap();
    assert_eq!(applied["metadata"]["labels"], json!({"a": "1"}));
    assert_eq!(
        fields(&applied, "kubectl", "Apply"),
        json!({"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {"f:a": {}}}})
    );
    // Without any label the map itself goes, and nothing else of metadata.
    let mut third = second.clone();
    third["metadata"].as_object_mut().unwrap().shift_remove("labels");
    let applied = apply_as(CONFIG_MAP, Some(&applied), &third, "kubectl", false).unwrap();
    assert_eq!(applied["metadata"]["name"], "c");
    assert!(applied["metadata"].get("labels").is_none(), "{applied}");
    assert_eq!(applied["data"], json!({"k": "v"}));
}

#[test]
fn a_label_another_manager_also_applies_stays() {
    let live = apply_as(CONFIG_MAP, None, &config_map(json!({"a": "1"}), json!({})), "one", false)
        .unwrap();
    let live =
        apply_as(CONFIG_MAP, Some(&live), &config_map(json!({"a": "1"}), json!({})), "two", false)
            .unwrap();
    let bare = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let applied = apply_as(CONFIG_MAP, Some(&live), &bare, "one", false).unwrap();
    assert_eq!(applied["metadata"]["labels"], json!({"a": "1"}));
    // "one" applies nothing any more, so it has no entry.
    assert_eq!(managers(&applied), ["two/Apply"]);
}

#[test]
fn changing_a_field_another_manager_owns_conflicts() {
    let created = update_as(
        DEPLOYMENT,
        None,
        deployment(1, json!({"name": "c", "image": "nginx"})),
        "kubectl-create",
    );
    let config = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"replicas": 3}
    });
    let error = apply_as(DEPLOYMENT, Some(&created), &config, "kubectl", false).unwrap_err();
    assert_eq!(
        error,
        ApplyError::Conflicts(vec![Conflict {
            manager: "\"kubectl-create\" using apps/v1 at 2026-11-21T10:00:00Z".into(),
            field: ".spec.replicas".into(),
        }])
    );
    assert_eq!(
        error.message(),
        "Apply failed with 1 conflict: conflict with \"kubectl-create\" using apps/v1 at \
         2026-11-21T10:00:00Z: .spec.replicas"
    );

    // The same value: no conflict, both own it.
    let same = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"replicas": 1}
    });
    let shared = apply_as(DEPLOYMENT, Some(&created), &same, "kubectl", false).unwrap();
    assert_eq!(fields(&shared, "kubectl", "Apply"), json!({"f:spec": {"f:replicas": {}}}));
    assert!(fields(&shared, "kubectl-create", "Update")["f:spec"].get("f:replicas").is_some());
    assert_eq!(managers(&shared), ["kubectl/Apply", "kubectl-create/Update"]);

    // Forced: the apply takes it.
    let forced = apply_as(DEPLOYMENT, Some(&created), &config, "kubectl", true).unwrap();
    assert_eq!(forced["spec"]["replicas"], 3);
    assert!(fields(&forced, "kubectl-create", "Update")["f:spec"].get("f:replicas").is_none());
    assert_eq!(fields(&forced, "kubectl", "Apply"), json!({"f:spec": {"f:replicas": {}}}));
}

#[test]
fn several_conflicts_are_listed_by_manager() {
    let config = config_map(json!({"a": "1"}), json!({"x": "1"}));
    let live = apply_as(CONFIG_MAP, None, &config, "one", false).unwrap();
    let mut edited = live.clone();
    edited["data"]["y"] = json!("2");
    record_update(schema(), Some(CONFIG_MAP), Some(&live), &mut edited, "editor", "v1", T1, None);
    let config = config_map(json!({"a": "9"}), json!({"x": "9", "y": "9"}));
    let error = apply_as(CONFIG_MAP, Some(&edited), &config, "two", false).unwrap_err();
    assert_eq!(
        error.message(),
        "Apply failed with 3 conflicts: conflicts with \"editor\" using v1 at \
         2026-11-21T10:00:00Z:\n- .data.y\nconflicts with \"one\":\n- .data.x\n- .metadata.labels.a"
    );
}

#[test]
fn containers_merge_by_name_and_keep_other_managers_fields() {
    let live = apply_as(
        DEPLOYMENT,
        None,
        &deployment(1, json!({"name": "c", "image": "v1"})),
        "app",
        false,
    )
    .unwrap();
    // Another client sets the container's limits with an update.
    let mut edited = live.clone();
    edited["spec"]["template"]["spec"]["containers"][0]["resources"] =
        json!({"limits": {"cpu": "1"}});
    let live = {
        let mut new = edited;
        record_update(
            schema(),
            Some(DEPLOYMENT),
            Some(&live),
            &mut new,
            "kubectl-set",
            "apps/v1",
            T1,
            None,
        );
        new
    };
    assert_eq!(
        fields(&live, "kubectl-set", "Update"),
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {
            "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}}}
        }}}}}})
    );
    let applied = apply_as(
        DEPLOYMENT,
        Some(&live),
        &deployment(1, json!({"name": "c", "image": "v2"})),
        "app",
        false,
    )
    .unwrap();
    assert_eq!(
        applied["spec"]["template"]["spec"]["containers"],
        json!([{"name": "c", "image": "v2", "resources": {"limits": {"cpu": "1"}}}])
    );
    assert_eq!(managers(&applied), ["app/Apply", "kubectl-set/Update"]);
    // A second container is appended, and dropping it removes it again.
    let two = {
        let mut config = deployment(1, json!({"name": "c", "image": "v2"}));
        config["spec"]["template"]["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "side", "image": "s"}));
        config
    };
    let applied = apply_as(DEPLOYMENT, Some(&applied), &two, "app", false).unwrap();
    let names: Vec<&str> = applied["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "side"]);
    let applied = apply_as(
        DEPLOYMENT,
        Some(&applied),
        &deployment(1, json!({"name": "c", "image": "v2"})),
        "app",
        false,
    )
    .unwrap();
    assert_eq!(applied["spec"]["template"]["spec"]["containers"].as_array().unwrap().len(), 1);
}

#[test]
fn finalizers_are_a_set() {
    let with = |finalizers: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": finalizers}});
    let live = apply_as(CONFIG_MAP, None, &with(json!(["a"])), "one", false).unwrap();
    let live = apply_as(CONFIG_MAP, Some(&live), &with(json!(["b"])), "two", false).unwrap();
    assert_eq!(live["metadata"]["finalizers"], json!(["a", "b"]));
    assert_eq!(
        fields(&live, "two", "Apply"),
        json!({"f:metadata": {"f:finalizers": {"v:\"b\"": {}}}})
    );
    let live = apply_as(CONFIG_MAP, Some(&live), &with(json!([])), "one", false).unwrap();
    assert_eq!(live["metadata"]["finalizers"], json!(["b"]));
    assert_eq!(managers(&live), ["two/Apply"]);
}

#[test]
fn atomic_lists_are_replaced_whole() {
    let container = |command: Value| json!({"name": "c", "image": "i", "command": command});
    let live = apply_as(DEPLOYMENT, None, &deployment(1, container(json!(["a", "b"]))), "m", false)
        .unwrap();
    let applied =
        apply_as(DEPLOYMENT, Some(&live), &deployment(1, container(json!(["c"]))), "m", false)
            .unwrap();
    assert_eq!(applied["spec"]["template"]["spec"]["containers"][0]["command"], json!(["c"]));
    let owned = fields(&applied, "m", "Apply");
    let item = &owned["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"];
    assert_eq!(item["f:command"], json!({}));
}

#[test]
fn an_update_takes_the_fields_it_changes() {
    let created = update_as(
        CONFIG_MAP,
        None,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}),
        "creator",
    );
    assert_eq!(
        fields(&created, "creator", "Update"),
        json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})
    );
    let mut new = created.clone();
    new["data"]["a"] = json!("changed");
    record_update(schema(), Some(CONFIG_MAP), Some(&created), &mut new, "editor", "v1", T2, None);
    assert_eq!(fields(&new, "creator", "Update"), json!({"f:data": {".": {}, "f:b": {}}}));
    assert_eq!(fields(&new, "editor", "Update"), json!({"f:data": {"f:a": {}}}));
    // Oldest first among updaters.
    assert_eq!(managers(&new), ["creator/Update", "editor/Update"]);
    // Writing nothing new changes nothing.
    let mut same = new.clone();
    record_update(schema(), Some(CONFIG_MAP), Some(&new), &mut same, "third", "v1", T2, None);
    assert_eq!(same, new);
    // An update that removes the last field of an entry drops the entry.
    let mut emptied = new.clone();
    emptied["data"].as_object_mut().unwrap().shift_remove("a");
    record_update(schema(), Some(CONFIG_MAP), Some(&new), &mut emptied, "third", "v1", T2, None);
    assert_eq!(managers(&emptied), ["creator/Update"]);
}

#[test]
fn an_update_keeps_the_managed_fields_its_client_sent() {
    let created = update_as(
        CONFIG_MAP,
        None,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}),
        "creator",
    );
    let mut new = created.clone();
    new["metadata"]["managedFields"][0]["manager"] = json!("renamed");
    record_update(schema(), Some(CONFIG_MAP), Some(&created), &mut new, "editor", "v1", T2, None);
    assert_eq!(managers(&new), ["renamed/Update"]);
    // A list of one empty entry clears them.
    let mut reset = created.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    record_update(schema(), Some(CONFIG_MAP), Some(&created), &mut reset, "editor", "v1", T2, None);
    assert!(reset["metadata"].get("managedFields").is_none());
    // Without managedFields in the request, the stored ones carry on.
    let mut bare = without_managed_fields(&created);
    bare["data"]["b"] = json!("2");
    record_update(schema(), Some(CONFIG_MAP), Some(&created), &mut bare, "editor", "v1", T2, None);
    assert_eq!(managers(&bare), ["creator/Update", "editor/Update"]);
}

#[test]
fn service_ports_are_keyed_by_port_and_protocol() {
    let service = |ports: Value| json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": ports}});
    let created =
        apply_as(SERVICE, None, &service(json!([{"port": 80, "targetPort": 8080}])), "m", false)
            .unwrap();
    assert_eq!(
        fields(&created, "m", "Apply"),
        json!({"f:spec": {"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {
            ".": {}, "f:port": {}, "f:targetPort": {}
        }}}})
    );
    // The server defaults the protocol; applying without it still names the same port.
    let mut live = created.clone();
    live["spec"]["ports"][0]["protocol"] = json!("TCP");
    let applied = apply_as(
        SERVICE,
        Some(&live),
        &service(json!([{"port": 80, "targetPort": 9090}])),
        "m",
        false,
    )
    .unwrap();
    assert_eq!(
        applied["spec"]["ports"],
        json!([{"port": 80, "targetPort": 9090, "protocol": "TCP"}])
    );
    let error = apply_as(
        SERVICE,
        Some(&live),
        &service(json!([{"port": 80, "targetPort": 1}])),
        "other",
        false,
    )
    .unwrap_err();
    assert_eq!(
        error.message(),
        "Apply failed with 1 conflict: conflict with \"m\": .spec.ports[port=80,protocol=\"TCP\"].targetPort"
    );
}

#[test]
fn configurations_upstream_cannot_read_are_invalid() {
    let config = deployment(1, json!({"image": "x"}));
    let error = apply_as(DEPLOYMENT, None, &config, "m", false).unwrap_err();
    assert_eq!(
        error,
        ApplyError::Invalid(
            "failed to create typed patch object (default/d; apps/v1, Kind=Deployment): \
             .spec.template.spec.containers: element 0: associative list with keys has an \
             element that omits all key fields [\"name\"] (and doesn't have default values for \
             any key fields)"
                .into()
        )
    );
    let mut twice = deployment(1, json!({"name": "c"}));
    twice["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "c"}));
    twice["spec"]["template"]["spec"]["volumes"] = json!([{"emptyDir": {}}]);
    let error = apply_as(DEPLOYMENT, None, &twice, "m", false).unwrap_err();
    assert!(
        error.message().ends_with(
            "errors:\n  .spec.template.spec.containers: duplicate entries for key [name=\"c\"]\n  \
         .spec.template.spec.volumes: element 0: associative list with keys has an element \
         that omits all key fields [\"name\"] (and doesn't have default values for any key \
         fields)"
        ),
        "{}",
        error.message()
    );
    let error =
        apply(schema(), None, None, &json!([]), &options("m", false, "v1", T1)).unwrap_err();
    assert!(matches!(error, ApplyError::Invalid(_)));
    let with_managed = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "managedFields": []}});
    let error = apply_as(CONFIG_MAP, None, &with_managed, "m", false).unwrap_err();
    assert_eq!(error.message(), "metadata.managedFields must be nil");
}

#[test]
fn objects_without_managed_fields_belong_to_before_first_apply() {
    let mut live = deployment(1, json!({"name": "c", "image": "nginx"}));
    live["metadata"]["uid"] = json!("u");
    let config = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"replicas": 2}
    });
    let error = apply_as(DEPLOYMENT, Some(&live), &config, "kubectl", false).unwrap_err();
    assert_eq!(
        error.message(),
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1 at \
         2026-11-21T11:00:00Z: .spec.replicas"
    );
    // Unreadable stored managedFields own nothing either.
    live["metadata"]["managedFields"] = json!("garbage");
    let mut same = config.clone();
    same["spec"]["replicas"] = json!(1);
    let applied = apply_as(DEPLOYMENT, Some(&live), &same, "kubectl", false).unwrap();
    assert_eq!(managers(&applied), ["kubectl/Apply", "before-first-apply/Update"]);
}

#[test]
fn an_apply_that_changes_nothing_returns_the_live_object() {
    let config = config_map(json!({"a": "1"}), json!({"k": "v"}));
    let live = apply_as(CONFIG_MAP, None, &config, "m", false).unwrap();
    let again = apply(
        schema(),
        Some(CONFIG_MAP),
        Some(&live),
        &config,
        &options("m", false, "v1", "2030-01-01T00:00:00Z"),
    )
    .unwrap();
    assert_eq!(again, live);
}

#[test]
fn null_in_a_configuration_unsets_the_field_and_owns_it() {
    let live =
        apply_as(DEPLOYMENT, None, &deployment(3, json!({"name": "c"})), "m", false).unwrap();
    let mut config = deployment(3, json!({"name": "c"}));
    config["spec"]["replicas"] = Value::Null;
    let applied = apply_as(DEPLOYMENT, Some(&live), &config, "m", false).unwrap();
    assert!(applied["spec"].get("replicas").is_none());
    assert_eq!(fields(&applied, "m", "Apply")["f:spec"]["f:replicas"], json!({}));
}

#[test]
fn status_applies_are_recorded_with_their_subresource() {
    let live =
        apply_as(DEPLOYMENT, None, &deployment(1, json!({"name": "c"})), "m", false).unwrap();
    let status = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "status": {"replicas": 1}
    });
    let opts =
        ApplyOptions { subresource: Some("status"), ..options("controller", false, "apps/v1", T1) };
    let applied = apply(schema(), Some(DEPLOYMENT), Some(&live), &status, &opts).unwrap();
    assert_eq!(applied["status"], json!({"replicas": 1}));
    // The manager's main-resource apply is another entry: nothing of the spec goes.
    let opts = ApplyOptions { subresource: Some("status"), ..options("m", false, "apps/v1", T1) };
    let same_manager = apply(schema(), Some(DEPLOYMENT), Some(&applied), &status, &opts).unwrap();
    assert_eq!(same_manager["spec"], live["spec"]);
    let entries = same_manager["metadata"]["managedFields"].as_array().unwrap();
    let main = entries.iter().find(|e| e["manager"] == "m" && e.get("subresource").is_none());
    assert!(main.unwrap()["fieldsV1"]["f:spec"].is_object());
    let status_entry = entries.iter().find(|e| e["manager"] == "m" && e["subresource"] == "status");
    assert_eq!(status_entry.unwrap()["fieldsV1"], json!({"f:status": {"f:replicas": {}}}));
    let entry = applied["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "controller")
        .unwrap();
    assert_eq!(entry["subresource"], "status");
    let mut other = status.clone();
    other["status"]["replicas"] = json!(5);
    let error = apply_as(DEPLOYMENT, Some(&applied), &other, "someone", false).unwrap_err();
    assert_eq!(
        error.message(),
        "Apply failed with 1 conflict: conflict with \"controller\" with subresource \"status\": \
         .status.replicas"
    );
}

#[test]
fn untyped_objects_are_deduced() {
    let config = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "labels": {"a": "1"}},
        "spec": {"size": {"x": 1}, "tags": ["a"]}
    });
    let created =
        apply(schema(), None, None, &config, &options("m", false, "example.com/v1", T1)).unwrap();
    assert_eq!(
        fields(&created, "m", "Apply"),
        json!({
            "f:metadata": {"f:labels": {"f:a": {}}},
            "f:spec": {"f:size": {".": {}, "f:x": {}}, "f:tags": {}}
        })
    );
    let mut new = without_managed_fields(&created);
    new["spec"]["size"]["y"] = json!(2);
    record_update(schema(), None, Some(&created), &mut new, "editor", "example.com/v1", T2, None);
    assert_eq!(fields(&new, "editor", "Update"), json!({"f:spec": {"f:size": {"f:y": {}}}}));
}

#[test]
fn kubectl_takes_over_what_its_client_side_apply_last_applied() {
    // `kubectl apply` (client-side) keeps its configuration in an annotation and owns the
    // fields as kubectl-client-side-apply; `kubectl apply --server-side` then changes them.
    let mut first = config_map(json!({"a": "b"}), json!({"k": "v"}));
    let last = first.to_string();
    first["metadata"]["annotations"] = json!({LAST_APPLIED: last});
    let live = update_as(CONFIG_MAP, None, first, "kubectl-client-side-apply");
    let changed = config_map(json!({"a": "b"}), json!({"k": "w"}));
    let applied = apply_as(CONFIG_MAP, Some(&live), &changed, KUBECTL, false).unwrap();
    assert_eq!(applied["data"], json!({"k": "w"}));
    assert_eq!(fields(&applied, "kubectl", "Apply")["f:data"], json!({"f:k": {}}));
    // Another manager name gets the conflict, as does a field the annotation does not hold.
    let err = apply_as(CONFIG_MAP, Some(&live), &changed, "other", false).unwrap_err();
    assert!(err.message().contains("kubectl-client-side-apply"), "{err}");
    let mut without = live.clone();
    without["metadata"]["annotations"] =
        json!({LAST_APPLIED: config_map(json!({}), json!({})).to_string()});
    assert!(apply_as(CONFIG_MAP, Some(&without), &changed, KUBECTL, false).is_err());
}

/// A custom resource's schema, as `PatchSchema::from_structural` reads its definition.
fn widget_schema() -> (PatchSchema, String) {
    let props = crate::structural::Props::parse(&json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "properties": {
                              "name": {"type": "string"}, "port": {"type": "integer"}}}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set",
                         "items": {"type": "string"}},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                             "additionalProperties": {"type": "string"}},
                "limits": {"type": "object",
                           "additionalProperties": {"type": "integer"}},
                "groups": {"type": "object", "additionalProperties": {
                    "type": "object", "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"}}},
                "routes": {"type": "array", "x-kubernetes-list-type": "map",
                           "x-kubernetes-list-map-keys": ["host", "path"],
                           "items": {"type": "object", "properties": {
                               "host": {"type": "string"},
                               "path": {"type": "string", "default": "/"},
                               "weight": {"type": "integer"}}}}
            }}
        }
    }));
    let root = crate::patch::custom_definition_name("example.com", "v1", "Widget");
    (PatchSchema::from_structural(&props, &root), root)
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
           "spec": spec})
}

#[test]
fn custom_resources_merge_by_their_schema() {
    let (schema, root) = widget_schema();
    let apply_as = |live: Option<&Value>, spec: Value, manager: &str, force: bool| {
        let opts = options(manager, force, "example.com/v1", T1);
        apply(&schema, Some(&root), live, &widget(spec), &opts)
    };
    let first = json!({"replicas": 1, "ports": [{"name": "a", "port": 1}], "tags": ["x"],
                       "selector": {"app": "w"}, "limits": {"cpu": 1}});
    let live = apply_as(None, first, "mgr1", false).unwrap();
    assert_eq!(
        fields(&live, "mgr1", "Apply")["f:spec"],
        json!({"f:replicas": {}, "f:ports": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {},
               "f:port": {}}}, "f:tags": {"v:\"x\"": {}}, "f:selector": {},
               "f:limits": {"f:cpu": {}}})
    );
    // Another manager's items of the map-list, the set and the map join the first's.
    let second = json!({"ports": [{"name": "b", "port": 2}], "tags": ["y"], "limits": {"mem": 2}});
    let live = apply_as(Some(&live), second, "mgr2", false).unwrap();
    assert_eq!(live["spec"]["ports"], json!([{"name": "a", "port": 1}, {"name": "b", "port": 2}]));
    assert_eq!(live["spec"]["tags"], json!(["x", "y"]));
    assert_eq!(live["spec"]["limits"], json!({"cpu": 1, "mem": 2}));
    // What the first no longer applies goes; the second's items stay.
    let again = json!({"replicas": 1, "selector": {"app": "w"}});
    let live = apply_as(Some(&live), again, "mgr1", false).unwrap();
    assert_eq!(live["spec"]["ports"], json!([{"name": "b", "port": 2}]));
    assert_eq!(live["spec"]["tags"], json!(["y"]));
    assert_eq!(live["spec"]["limits"], json!({"mem": 2}));
    // A shared field conflicts, in upstream's words, until forced.
    let error = apply_as(Some(&live), json!({"replicas": 3}), "mgr2", false).unwrap_err();
    assert_eq!(
        error.message(),
        "Apply failed with 1 conflict: conflict with \"mgr1\": .spec.replicas"
    );
    let error = apply_as(Some(&live), json!({"selector": {"x": "y"}}), "mgr2", false).unwrap_err();
    assert_eq!(
        error.message(),
        "Apply failed with 1 conflict: conflict with \"mgr1\": .spec.selector"
    );
    let forced = json!({"replicas": 3, "ports": [{"name": "b", "port": 2}], "tags": ["y"],
                        "limits": {"mem": 2}, "selector": {"x": "y"}});
    let live = apply_as(Some(&live), forced, "mgr2", true).unwrap();
    assert_eq!(live["spec"]["replicas"], 3);
    // An atomic map is replaced whole.
    assert_eq!(live["spec"]["selector"], json!({"x": "y"}));
    assert_eq!(fields(&live, "mgr1", "Apply"), Value::Null);
    // The values of a map may be atomic: owned whole.
    let groups = json!({"groups": {"a": {"x": "1", "y": "2"}}});
    let live = apply_as(Some(&live), groups, "mgr5", false).unwrap();
    assert_eq!(fields(&live, "mgr5", "Apply")["f:spec"], json!({"f:groups": {"f:a": {}}}));
    // A key field the item leaves out is keyed by its default.
    let routes = json!({"routes": [{"host": "a", "weight": 1}]});
    let live = apply_as(Some(&live), routes, "mgr3", false).unwrap();
    let routes = json!({"routes": [{"host": "a", "path": "/", "weight": 2}]});
    let error = apply_as(Some(&live), routes, "mgr4", false).unwrap_err();
    assert_eq!(
        error.message(),
        "Apply failed with 1 conflict: conflict with \"mgr3\": \
         .spec.routes[host=\"a\",path=\"/\"].weight"
    );
    assert!(fields(&live, "mgr3", "Apply")["f:spec"]["f:routes"]
        .get(r#"k:{"host":"a","path":"/"}"#)
        .is_some());
    // Items without their key are refused as upstream refuses them.
    let error = apply_as(Some(&live), json!({"ports": [{"port": 9}]}), "mgr3", false).unwrap_err();
    let expected = ".spec.ports: element 0: associative list with keys has an element that omits \
                    all key fields [\"name\"]";
    assert!(error.message().contains(expected), "{error}");
}
