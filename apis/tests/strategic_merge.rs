//! Strategic merge patch on real types (Pod, Deployment, Service, PodDisruptionBudget) with the
//! built-in schema: every directive and strategy, ordering, and upstream's errors.

use rkube_apis::patch::{
    apply_patch, strategic_merge_patch, PatchError, PatchSchema, PatchType, StrategicMergeError,
};
use serde_json::{json, Value};

const POD: &str = "io.k8s.api.core.v1.Pod";
const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";
const SERVICE: &str = "io.k8s.api.core.v1.Service";
const PDB: &str = "io.k8s.api.policy.v1.PodDisruptionBudget";

fn smp(type_name: &str, original: Value, patch: Value) -> Result<Value, StrategicMergeError> {
    strategic_merge_patch(&original, &patch, PatchSchema::builtin(), type_name)
}

fn pod_with_containers(containers: Value) -> Value {
    json!({"metadata": {"name": "p"}, "spec": {"containers": containers}})
}

fn containers_of(pod: &Value) -> &Value {
    &pod["spec"]["containers"]
}

struct Case {
    name: &'static str,
    type_name: &'static str,
    original: Value,
    patch: Value,
    want: Value,
}

fn run(cases: Vec<Case>) {
    for case in cases {
        let got = smp(case.type_name, case.original, case.patch)
            .unwrap_or_else(|e| panic!("{}: unexpected error {e}", case.name));
        assert_eq!(got, case.want, "{}", case.name);
    }
}

#[test]
fn maps_merge_and_null_deletes() {
    run(vec![
        Case {
            name: "labels merge, null deletes a label",
            type_name: POD,
            original: json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            patch: json!({"metadata": {"labels": {"a": null, "c": "3"}}}),
            want: json!({"metadata": {"labels": {"b": "2", "c": "3"}}}),
        },
        Case {
            name: "null deletes a whole field",
            type_name: POD,
            original: json!({"spec": {"nodeSelector": {"disk": "ssd"}, "hostname": "h"}}),
            patch: json!({"spec": {"nodeSelector": null}}),
            want: json!({"spec": {"hostname": "h"}}),
        },
        Case {
            name: "a new map has its nulls dropped",
            type_name: POD,
            original: json!({"metadata": {"name": "p"}}),
            patch: json!({"metadata": {"annotations": {"a": null, "b": "1"}}}),
            want: json!({"metadata": {"name": "p", "annotations": {"b": "1"}}}),
        },
        Case {
            name: "a value of another type replaces",
            type_name: POD,
            original: json!({"spec": {"hostname": "h"}}),
            patch: json!({"spec": {"hostname": {"x": 1}}}),
            want: json!({"spec": {"hostname": {"x": 1}}}),
        },
        Case {
            name: "a null patch changes nothing",
            type_name: POD,
            original: json!({"metadata": {"name": "p"}}),
            patch: Value::Null,
            want: json!({"metadata": {"name": "p"}}),
        },
        Case {
            name: "unknown types merge maps without list metadata",
            type_name: "io.example.Unknown",
            original: json!({"a": {"b": 1, "l": [1, 2]}}),
            patch: json!({"a": {"c": 2, "l": [3]}}),
            want: json!({"a": {"b": 1, "c": 2, "l": [3]}}),
        },
    ]);
}

#[test]
fn lists_of_objects_merge_on_their_merge_key() {
    run(vec![
        Case {
            name: "containers merge by name",
            type_name: POD,
            original: pod_with_containers(
                json!([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]),
            ),
            patch: json!({"spec": {"containers": [{"name": "b", "image": "z"}]}}),
            want: pod_with_containers(
                json!([{"name": "a", "image": "x"}, {"name": "b", "image": "z"}]),
            ),
        },
        Case {
            name: "a new container comes before the existing ones",
            type_name: POD,
            original: pod_with_containers(json!([{"name": "a", "image": "x"}])),
            patch: json!({"spec": {"containers": [{"name": "b", "image": "y"}]}}),
            want: pod_with_containers(
                json!([{"name": "b", "image": "y"}, {"name": "a", "image": "x"}]),
            ),
        },
        Case {
            name: "patched elements take the patch's order around the others",
            type_name: POD,
            original: pod_with_containers(json!([{"name": "a"}, {"name": "b"}, {"name": "c"}])),
            patch: json!({"spec": {"containers": [{"name": "c", "image": "3"}, {"name": "a", "image": "1"}]}}),
            want: pod_with_containers(
                json!([{"name": "b"}, {"name": "c", "image": "3"}, {"name": "a", "image": "1"}]),
            ),
        },
        Case {
            name: "container ports merge by containerPort",
            type_name: POD,
            original: pod_with_containers(json!([{"name": "a", "ports": [
                {"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}]}])),
            patch: json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]}}),
            want: pod_with_containers(json!([{"name": "a", "ports": [
                {"containerPort": 80, "protocol": "TCP", "name": "http"}, {"containerPort": 443, "protocol": "TCP"}]}])),
        },
        Case {
            name: "env merges by name, new entries after the ones they follow",
            type_name: POD,
            original: pod_with_containers(
                json!([{"name": "a", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]),
            ),
            patch: json!({"spec": {"containers": [{"name": "a", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}]}}),
            want: pod_with_containers(json!([{"name": "a", "env": [
                {"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}])),
        },
        Case {
            name: "a null inside a merged element deletes that field",
            type_name: POD,
            original: pod_with_containers(json!([{"name": "a", "image": "x", "command": ["sh"]}])),
            patch: json!({"spec": {"containers": [{"name": "a", "command": null}]}}),
            want: pod_with_containers(json!([{"name": "a", "image": "x"}])),
        },
        Case {
            name: "ownerReferences merge by uid",
            type_name: POD,
            original: json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "rs1"}]}}),
            patch: json!({"metadata": {"ownerReferences": [{"uid": "1", "controller": true}]}}),
            want: json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "rs1", "controller": true}]}}),
        },
        Case {
            name: "service ports merge by port",
            type_name: SERVICE,
            original: json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}),
            patch: json!({"spec": {"ports": [{"port": 443, "name": "https"}]}}),
            want: json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "name": "https"}]}}),
        },
        Case {
            name: "deployment pod template containers merge",
            type_name: DEPLOYMENT,
            original: json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}}}),
            patch: json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}}),
            want: json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}}),
        },
    ]);
}

#[test]
fn lists_without_merge_strategy_are_replaced() {
    run(vec![
        Case {
            name: "tolerations (atomic, no patch strategy) are replaced",
            type_name: POD,
            original: json!({"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}}),
            patch: json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}),
            want: json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}),
        },
        Case {
            name: "container args are replaced",
            type_name: POD,
            original: pod_with_containers(json!([{"name": "a", "args": ["1", "2"]}])),
            patch: json!({"spec": {"containers": [{"name": "a", "args": ["3"]}]}}),
            want: pod_with_containers(json!([{"name": "a", "args": ["3"]}])),
        },
        Case {
            name: "a replace-strategy object (PDB selector) is replaced, not merged",
            type_name: PDB,
            original: json!({"spec": {"selector": {"matchLabels": {"a": "1"}}, "minAvailable": 1}}),
            patch: json!({"spec": {"selector": {"matchLabels": {"b": "2"}}}}),
            want: json!({"spec": {"selector": {"matchLabels": {"b": "2"}}, "minAvailable": 1}}),
        },
    ]);
}

#[test]
fn primitive_lists_with_merge_strategy_merge_as_sets() {
    run(vec![
        Case {
            name: "finalizers: union, existing order first",
            type_name: POD,
            original: json!({"metadata": {"finalizers": ["a", "b"]}}),
            patch: json!({"metadata": {"finalizers": ["b", "c"]}}),
            want: json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
        },
        Case {
            name: "finalizers: a new one alone comes first",
            type_name: POD,
            original: json!({"metadata": {"finalizers": ["a"]}}),
            patch: json!({"metadata": {"finalizers": ["b"]}}),
            want: json!({"metadata": {"finalizers": ["b", "a"]}}),
        },
        Case {
            name: "finalizers: duplicates in the patch collapse",
            type_name: POD,
            original: json!({"metadata": {"finalizers": ["a"]}}),
            patch: json!({"metadata": {"finalizers": ["a", "a"]}}),
            want: json!({"metadata": {"finalizers": ["a"]}}),
        },
        Case {
            name: "$deleteFromPrimitiveList removes finalizers",
            type_name: POD,
            original: json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            patch: json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "x"]}}),
            want: json!({"metadata": {"finalizers": ["a", "c"]}}),
        },
        Case {
            name: "$deleteFromPrimitiveList on a missing list adds nothing",
            type_name: POD,
            original: json!({"metadata": {"name": "p"}}),
            patch: json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}}),
            want: json!({"metadata": {"name": "p"}}),
        },
        Case {
            name: "$deleteFromPrimitiveList also works on lists without merge strategy",
            type_name: POD,
            original: pod_with_containers(json!([{"name": "a", "args": ["1", "2", "3"]}])),
            patch: json!({"spec": {"containers": [{"name": "a", "$deleteFromPrimitiveList/args": ["2"]}]}}),
            want: pod_with_containers(json!([{"name": "a", "args": ["1", "3"]}])),
        },
        Case {
            name: "delete and add in one patch",
            type_name: POD,
            original: json!({"metadata": {"finalizers": ["a", "b"]}}),
            patch: json!({"metadata": {"finalizers": ["c"], "$deleteFromPrimitiveList/finalizers": ["a"]}}),
            want: json!({"metadata": {"finalizers": ["c", "b"]}}),
        },
    ]);
}

#[test]
fn patch_directives() {
    run(vec![
        Case {
            name: "$patch: delete removes a list element by merge key",
            type_name: POD,
            original: pod_with_containers(
                json!([{"name": "a"}, {"name": "b"}, {"name": "a", "image": "dup"}]),
            ),
            patch: json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}),
            want: pod_with_containers(json!([{"name": "b"}])),
        },
        Case {
            name: "$patch: delete of a missing element is a no-op",
            type_name: POD,
            original: pod_with_containers(json!([{"name": "b"}])),
            patch: json!({"spec": {"containers": [{"name": "zz", "$patch": "delete"}]}}),
            want: pod_with_containers(json!([{"name": "b"}])),
        },
        Case {
            name: "$patch: delete and an addition in one list",
            type_name: POD,
            original: json!({"spec": {"volumes": [{"name": "v1", "emptyDir": {}}, {"name": "v2", "emptyDir": {}}]}}),
            patch: json!({"spec": {"volumes": [{"name": "v1", "$patch": "delete"}, {"name": "v3", "emptyDir": {}}]}}),
            want: json!({"spec": {"volumes": [{"name": "v3", "emptyDir": {}}, {"name": "v2", "emptyDir": {}}]}}),
        },
        Case {
            name: "$patch: replace in a list makes it exactly the patch's elements",
            type_name: POD,
            original: pod_with_containers(json!([{"name": "a", "image": "x"}, {"name": "b"}])),
            patch: json!({"spec": {"containers": [{"name": "c", "image": "z"}, {"$patch": "replace"}]}}),
            want: pod_with_containers(json!([{"name": "c", "image": "z"}])),
        },
        Case {
            name: "$patch: replace alone empties a list",
            type_name: POD,
            original: pod_with_containers(json!([{"name": "a"}])),
            patch: json!({"spec": {"containers": [{"$patch": "replace"}]}}),
            want: pod_with_containers(json!([])),
        },
        Case {
            name: "$patch: replace on a map replaces it",
            type_name: POD,
            original: json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            patch: json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}}),
            want: json!({"metadata": {"labels": {"c": "3"}}}),
        },
        Case {
            name: "$patch: replace at the top replaces the object",
            type_name: POD,
            original: json!({"metadata": {"name": "p"}, "spec": {"hostname": "h"}}),
            patch: json!({"$patch": "replace", "metadata": {"name": "q"}}),
            want: json!({"metadata": {"name": "q"}}),
        },
        Case {
            name: "$patch: delete on a map empties it",
            type_name: POD,
            original: json!({"metadata": {"labels": {"a": "1"}, "name": "p"}}),
            patch: json!({"metadata": {"labels": {"$patch": "delete"}}}),
            want: json!({"metadata": {"labels": {}, "name": "p"}}),
        },
        Case {
            name: "a directive map for a missing key is dropped",
            type_name: POD,
            original: json!({"metadata": {"name": "p"}}),
            patch: json!({"metadata": {"labels": {"$patch": "replace", "a": "1"}}}),
            want: json!({"metadata": {"name": "p"}}),
        },
        Case {
            name: "a new list loses its directive elements",
            type_name: POD,
            original: json!({"spec": {"hostname": "h"}}),
            patch: json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "$patch": "delete"}]}}),
            want: json!({"spec": {"hostname": "h", "containers": [{"name": "a"}]}}),
        },
    ]);
}

#[test]
fn retain_keys() {
    run(vec![
        Case {
            name: "volumes: $retainKeys drops the old volume source",
            type_name: POD,
            original: json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}, {"name": "w", "emptyDir": {}}]}}),
            patch: json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["configMap", "name"], "configMap": {"name": "cm"}}]}}),
            want: json!({"spec": {"volumes": [{"name": "v", "configMap": {"name": "cm"}}, {"name": "w", "emptyDir": {}}]}}),
        },
        Case {
            name: "deployment strategy: $retainKeys drops rollingUpdate",
            type_name: DEPLOYMENT,
            original: json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
            patch: json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
            want: json!({"spec": {"strategy": {"type": "Recreate"}}}),
        },
        Case {
            name: "deployment strategy: without $retainKeys the map merges",
            type_name: DEPLOYMENT,
            original: json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
            patch: json!({"spec": {"strategy": {"type": "Recreate"}}}),
            want: json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}}}),
        },
        Case {
            name: "$retainKeys allows nulls and directives for unlisted keys",
            type_name: DEPLOYMENT,
            original: json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
            patch: json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": null}}}),
            want: json!({"spec": {"strategy": {"type": "RollingUpdate"}}}),
        },
    ]);
}

#[test]
fn set_element_order() {
    run(vec![
        Case {
            name: "$setElementOrder orders containers, with a new one",
            type_name: POD,
            original: pod_with_containers(json!([{"name": "a"}, {"name": "b"}])),
            patch: json!({"spec": {
                "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}, {"name": "c"}],
                "containers": [{"name": "c", "image": "z"}]}}),
            want: pod_with_containers(
                json!([{"name": "b"}, {"name": "a"}, {"name": "c", "image": "z"}]),
            ),
        },
        Case {
            name: "$setElementOrder places server-only elements by their old neighbours",
            type_name: POD,
            original: pod_with_containers(
                json!([{"name": "1"}, {"name": "2"}, {"name": "s"}, {"name": "3"}, {"name": "4"}]),
            ),
            patch: json!({"spec": {"$setElementOrder/containers": [{"name": "2"}, {"name": "1"}, {"name": "4"}, {"name": "3"}]}}),
            want: pod_with_containers(
                json!([{"name": "2"}, {"name": "1"}, {"name": "s"}, {"name": "4"}, {"name": "3"}]),
            ),
        },
        Case {
            name: "$setElementOrder on finalizers",
            type_name: POD,
            original: json!({"metadata": {"finalizers": ["a", "b"]}}),
            patch: json!({"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"], "finalizers": ["c"]}}),
            want: json!({"metadata": {"finalizers": ["c", "b", "a"]}}),
        },
        Case {
            name: "$setElementOrder for a list the object lacks",
            type_name: POD,
            original: json!({"metadata": {"name": "p"}}),
            patch: json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"], "finalizers": ["b", "a"]}}),
            want: json!({"metadata": {"name": "p", "finalizers": ["b", "a"]}}),
        },
        Case {
            name: "$setElementOrder with a deletion",
            type_name: POD,
            original: json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}),
            patch: json!({"spec": {
                "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
                "containers": [{"name": "b", "$patch": "delete"}]}}),
            want: json!({"spec": {"containers": [{"name": "c"}, {"name": "a"}]}}),
        },
    ]);
}

fn error_of(type_name: &str, original: Value, patch: Value) -> (u16, String) {
    let error = smp(type_name, original, patch).expect_err("the patch should fail");
    (error.status_code(), error.to_string())
}

#[test]
fn errors_read_as_upstream() {
    let containers = pod_with_containers(json!([{"name": "a"}]));
    let cases: Vec<(&str, &str, Value, Value, u16, &str)> = vec![
        (
            "element without its merge key",
            POD,
            containers.clone(),
            json!({"spec": {"containers": [{"image": "x"}]}}),
            500,
            "map: map[image:x] does not contain declared merge key: name",
        ),
        (
            "delete directive without the merge key",
            POD,
            containers.clone(),
            json!({"spec": {"containers": [{"$patch": "delete"}]}}),
            500,
            "map: map[$patch:delete] does not contain declared merge key: name",
        ),
        (
            "unknown $patch in a map",
            POD,
            containers.clone(),
            json!({"metadata": {"$patch": "foo"}}),
            500,
            "unknown patch type: foo in map: map[$patch:foo]",
        ),
        (
            "unknown $patch in a list",
            POD,
            containers.clone(),
            json!({"spec": {"containers": [{"name": "a", "$patch": "foo"}]}}),
            500,
            "unknown patch type: foo in map: map[$patch:foo name:a]",
        ),
        (
            "$patch: merge in a map",
            POD,
            containers.clone(),
            json!({"metadata": {"$patch": "merge", "name": "x"}}),
            500,
            "unknown patch type: merge in map: map[$patch:merge name:x]",
        ),
        (
            "$patch: merge in a list",
            POD,
            containers.clone(),
            json!({"spec": {"containers": [{"$patch": "merge"}]}}),
            500,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            "$retainKeys not listing a patched key",
            DEPLOYMENT,
            json!({"spec": {"strategy": {"type": "RollingUpdate"}}}),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 1}}}}),
            400,
            "invalid patch format of retainKeys",
        ),
        (
            "$retainKeys that is not a list",
            DEPLOYMENT,
            json!({"spec": {"strategy": {"type": "RollingUpdate"}}}),
            json!({"spec": {"strategy": {"$retainKeys": "type"}}}),
            400,
            "invalid patch format of retainKeys",
        ),
        (
            "$deleteFromPrimitiveList without a list name",
            POD,
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}),
            400,
            "invalid patch format of primitive list",
        ),
        (
            "$setElementOrder without a list name",
            POD,
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"$setElementOrderfinalizers": ["a"]}}),
            400,
            "invalid patch format of setElementOrder list",
        ),
        (
            "$setElementOrder that is not a list",
            POD,
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"$setElementOrder/finalizers": "a"}}),
            500,
            "expected a []interface {}, but received a string",
        ),
        (
            "$setElementOrder disagreeing with the patch's list",
            POD,
            pod_with_containers(json!([{"name": "a"}, {"name": "b"}])),
            json!({"spec": {"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                            "containers": [{"name": "b", "image": "x"}, {"name": "a", "image": "y"}]}}),
            500,
            "The order in patch list:\n[map[image:x name:b] map[image:y name:a]]\n doesn't match $setElementOrder list:\n[map[name:a] map[name:b]]\n",
        ),
        (
            "a list of lists",
            POD,
            json!({"metadata": {"finalizers": []}}),
            json!({"metadata": {"finalizers": [["a"]]}}),
            422,
            "lists of lists are not supported",
        ),
        (
            "elements of different types",
            POD,
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"finalizers": [1]}}),
            500,
            "list element types are not identical: [[a] [1]]",
        ),
        (
            "deleting objects from a list without merge key",
            POD,
            json!({"spec": {"tolerations": [{"key": "a"}]}}),
            json!({"spec": {"$deleteFromPrimitiveList/tolerations": [{"key": "a"}]}}),
            500,
            "cannot merge lists without merge key for struct",
        ),
        (
            "a patch that is not an object",
            POD,
            containers.clone(),
            json!([1]),
            400,
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
    ];
    for (name, type_name, original, patch, status, message) in cases {
        assert_eq!(error_of(type_name, original, patch), (status, message.to_string()), "{name}");
    }
}

#[test]
fn apply_patch_dispatches_strategic_merge() {
    let pod = pod_with_containers(json!([{"name": "a", "image": "x"}]));
    let patch = json!({"spec": {"containers": [{"name": "a", "image": "y"}]}});
    let patched =
        apply_patch(PatchType::StrategicMerge, &pod, &patch, Some(PatchSchema::builtin()), POD)
            .unwrap();
    assert_eq!(containers_of(&patched), &json!([{"name": "a", "image": "y"}]));
    let refused = apply_patch(PatchType::StrategicMerge, &pod, &patch, None, POD).unwrap_err();
    assert_eq!(refused, PatchError::Strategic(StrategicMergeError::Unsupported));
    assert_eq!(refused.status_code(), 400);
    assert_eq!(refused.status_message(), "strategic merge patch format is not supported");
}
