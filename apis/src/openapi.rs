//! The OpenAPI documents the API server serves: `/openapi/v3` (an index of group versions) and
//! `/openapi/v3/<api|apis/group>/<version>` (one OpenAPI 3.0 document each), and `/openapi/v2`.
//!
//! Schemas are generated from the `k8s-openapi` types (their `JsonSchema` impls), then given
//! what kubectl reads from them: `x-kubernetes-group-version-kind` on every kind, and the
//! strategic-merge-patch keys (`x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`)
//! from [`crate::patch::PatchSchema`]. Paths list each resource's operations with the query
//! parameters kubectl checks for (it uses server-side field validation when the PATCH
//! operation takes `fieldValidation`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use crate::patch::PatchSchema;
use crate::resources::{ResourceInfo, Resources};

/// One served group version's document and a hash of it (clients cache by hash).
#[derive(Clone)]
pub struct GroupVersionDoc {
    /// `api/v1` or `apis/apps/v1`.
    pub path: String,
    pub body: Vec<u8>,
    pub hash: String,
}

impl GroupVersionDoc {
    /// The document `body` served at `/openapi/v3/<path>`, with its hash.
    pub fn new(path: String, body: Vec<u8>) -> GroupVersionDoc {
        let hash = hash(&body);
        GroupVersionDoc { path, body, hash }
    }
}

/// Every document of one set of resources.
#[derive(Clone)]
pub struct Documents {
    pub v3: BTreeMap<String, GroupVersionDoc>,
    pub v2: Vec<u8>,
    /// `v2` as the gnostic protobuf, made on first use.
    v2_protobuf: OnceLock<std::sync::Arc<[u8]>>,
}

impl Documents {
    /// The documents of the built-in resources, built once.
    pub fn builtin() -> &'static Documents {
        static DOCS: OnceLock<Documents> = OnceLock::new();
        DOCS.get_or_init(|| build(Resources::builtin()))
    }

    /// The documents of `resources`.
    pub fn build(resources: &Resources) -> Documents {
        build(resources)
    }

    /// Documents made elsewhere (the server's own merged with extension servers'):
    /// `v3` by path, `v2` the Swagger 2.0 JSON.
    pub fn from_parts(v3: BTreeMap<String, GroupVersionDoc>, v2: Vec<u8>) -> Documents {
        Documents { v3, v2, v2_protobuf: OnceLock::new() }
    }

    /// `/openapi/v2` as the gnostic `openapi.v2.Document` protobuf.
    pub fn v2_protobuf(&self) -> std::sync::Arc<[u8]> {
        self.v2_protobuf
            .get_or_init(|| {
                let doc: Value = serde_json::from_slice(&self.v2).expect("the v2 document is JSON");
                crate::openapi_v2_proto::encode(&doc).into()
            })
            .clone()
    }

    /// `/openapi/v3`: where each group version's document is.
    pub fn v3_index(&self) -> Value {
        let paths: Map<String, Value> = self
            .v3
            .values()
            .map(|d| {
                (
                    d.path.clone(),
                    json!({"serverRelativeURL": format!("/openapi/v3/{}?hash={}", d.path, d.hash)}),
                )
            })
            .collect();
        json!({"paths": paths})
    }
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn build(resources: &Resources) -> Documents {
    let mut by_gv: BTreeMap<String, Vec<&ResourceInfo>> = BTreeMap::new();
    for r in resources.all() {
        by_gv.entry(gv_path(r.group, r.version)).or_default().push(r);
    }
    let mut v3 = BTreeMap::new();
    let mut all_paths = Map::new();
    let mut all_schemas = Map::new();
    for (path, list) in by_gv {
        let (paths, schemas) = group_version(&list);
        let doc = json!({
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": crate::KUBERNETES_VERSION},
            "paths": paths,
            "components": {
                "schemas": schemas,
                "securitySchemes": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}},
            },
        });
        for (k, v) in paths.iter() {
            all_paths.insert(k.clone(), v.clone());
        }
        for (k, v) in schemas.iter() {
            all_schemas.insert(k.clone(), v.clone());
        }
        let body = serde_json::to_vec(&doc).expect("serializable");
        let hash = hash(&body);
        v3.insert(path.clone(), GroupVersionDoc { path, body, hash });
    }
    let v2 = to_v2(all_paths, all_schemas);
    Documents {
        v3,
        v2: serde_json::to_vec(&v2).expect("serializable"),
        v2_protobuf: OnceLock::new(),
    }
}

/// A stable hash for cache keys (FNV-1a, hex; not for security).
fn hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016X}{:016X}", bytes.len())
}

/// The paths and component schemas of one group version.
fn group_version(resources: &[&ResourceInfo]) -> (Map<String, Value>, Map<String, Value>) {
    let mut generator = schemars::generate::SchemaSettings::openapi3().into_generator();
    let mut paths = Map::new();
    let mut kinds: Vec<(String, &ResourceInfo)> = Vec::new();
    for r in resources {
        let schema = (r.schema)(&mut generator);
        let Some(name) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .map(|s| s.rsplit('/').next().unwrap_or("").to_string())
        else {
            continue;
        };
        kinds.push((name.clone(), r));
        for (path, item) in resource_paths(r, &name) {
            paths.insert(path, item);
        }
    }
    // Common types every document refers to.
    let _ = generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>();
    let _ =
        generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions>();
    let _ = generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta>();
    let mut schemas: Map<String, Value> = generator.definitions().clone();
    for (name, r) in &kinds {
        if let Some(schema) = schemas.get_mut(name) {
            schema["x-kubernetes-group-version-kind"] =
                json!([{"group": r.group, "version": r.version, "kind": r.kind}]);
        }
        if !r.list_kind.is_empty() {
            let list_name = format!("{name}List");
            schemas.insert(list_name, list_schema(r, name));
        }
    }
    metadata_optional(&mut schemas);
    add_patch_extensions(&mut schemas);
    (paths, schemas)
}

/// The kinds whose Go type requires `metadata` (its JSON tag has no `omitempty`): upstream's
/// documents list it among their required fields, and only theirs.
const METADATA_REQUIRED: &[&str] = &["io.k8s.api.core.v1.Event"];

/// `metadata` optional in every schema but [`METADATA_REQUIRED`]'s, as upstream's documents
/// have it. k8s-openapi's types make it a required field of every kind, which kubectl's
/// client-side validation would then demand of a manifest (`kubectl create -f` of a
/// SelfSubjectAccessReview with no metadata: `missing required field "metadata"`).
fn metadata_optional(schemas: &mut Map<String, Value>) {
    for (name, schema) in schemas.iter_mut() {
        if METADATA_REQUIRED.contains(&name.as_str()) {
            continue;
        }
        let Some(object) = schema.as_object_mut() else { continue };
        if let Some(required) = object.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|field| field != "metadata");
            if required.is_empty() {
                object.remove("required");
            }
        }
    }
}

fn list_schema(r: &ResourceInfo, item: &str) -> Value {
    json!({
        "description": format!("{} is a list of {}.", r.list_kind, r.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": "APIVersion defines the versioned schema of this representation of an object.", "type": "string"},
            "items": {"description": format!("List of {}.", r.plural), "type": "array", "items": {"$ref": format!("#/components/schemas/{item}")}},
            "kind": {"description": "Kind is a string value representing the REST resource this object represents.", "type": "string"},
            "metadata": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"},
        },
        "x-kubernetes-group-version-kind": [{"group": r.group, "version": r.version, "kind": r.list_kind}],
    })
}

/// Adds the strategic-merge-patch keys to every property that has them.
fn add_patch_extensions(schemas: &mut Map<String, Value>) {
    let patch = PatchSchema::builtin();
    for (name, schema) in schemas.iter_mut() {
        let Some(fields) = patch.fields(name) else { continue };
        let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
            continue;
        };
        for (field, meta) in fields {
            let Some(property) = properties.get_mut(field) else { continue };
            if let Some(strategy) = &meta.strategy {
                property["x-kubernetes-patch-strategy"] = json!(strategy);
            }
            if let Some(key) = &meta.merge_key {
                property["x-kubernetes-patch-merge-key"] = json!(key);
            }
        }
    }
}

fn param(name: &str, description: &str, kind: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": kind, "uniqueItems": true}})
}

fn write_params() -> Vec<Value> {
    vec![
        param("dryRun", "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed", "string"),
        param("fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes.", "string"),
        param("fieldValidation", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict", "string"),
    ]
}

fn list_params() -> Vec<Value> {
    vec![
        param("allowWatchBookmarks", "allowWatchBookmarks requests watch events with type \"BOOKMARK\".", "boolean"),
        param("continue", "The continue option should be set when retrieving more results from the server.", "string"),
        param("fieldSelector", "A selector to restrict the list of returned objects by their fields. Defaults to everything.", "string"),
        param("labelSelector", "A selector to restrict the list of returned objects by their labels. Defaults to everything.", "string"),
        param("limit", "limit is a maximum number of responses to return for a list call.", "integer"),
        param("resourceVersion", "resourceVersion sets a constraint on what resource versions a request may be served from.", "string"),
        param("resourceVersionMatch", "resourceVersionMatch determines how resourceVersion is applied to list calls.", "string"),
        param("sendInitialEvents", "`sendInitialEvents=true` may be set together with `watch=true`.", "boolean"),
        param("timeoutSeconds", "Timeout for the list/watch call.", "integer"),
        param("watch", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.", "boolean"),
    ]
}

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn response(name: &str) -> Value {
    json!({"description": "OK", "content": {"application/json": {"schema": reference(name)}, "application/yaml": {"schema": reference(name)}}})
}

/// `listCoreV1NamespacedPod`, `patchAppsV1NamespacedDeploymentScale`: upstream's scheme.
fn operation_id(verb: &str, r: &ResourceInfo, suffix: &str) -> String {
    let group: String = if r.group.is_empty() {
        "Core".into()
    } else {
        r.group.split('.').next().unwrap_or("").split('-').map(capitalize).collect()
    };
    let scope = if r.namespaced { "Namespaced" } else { "" };
    format!("{verb}{group}{}{scope}{}{suffix}", capitalize(r.version), r.kind)
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// The paths of one resource: the collection and the object, plus status and scale.
fn resource_paths(r: &ResourceInfo, schema: &str) -> Vec<(String, Value)> {
    let base = format!("/{}", gv_path(r.group, r.version));
    let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
    let ns_param = json!({"name": "namespace", "in": "path", "description": "object name and auth scope, such as for teams and projects", "required": true, "schema": {"type": "string", "uniqueItems": true}});
    let name_param = json!({"name": "name", "in": "path", "description": format!("name of the {}", r.kind), "required": true, "schema": {"type": "string", "uniqueItems": true}});
    let scope = if r.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", r.plural)
    } else {
        format!("{base}/{}", r.plural)
    };
    let mut out = Vec::new();
    let verbs = |v: &str| r.has_verb(v);
    let patch_body = json!({"content": {
        "application/json-patch+json": {"schema": reference("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")},
        "application/merge-patch+json": {"schema": reference("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")},
        "application/strategic-merge-patch+json": {"schema": reference("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")},
        "application/apply-patch+yaml": {"schema": reference("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")},
    }, "required": true});

    let mut collection = Map::new();
    if verbs("list") {
        collection.insert(
            "get".into(),
            json!({
                "description": format!("list or watch objects of kind {}", r.kind),
                "operationId": operation_id("list", r, ""),
                "parameters": list_params(),
                "responses": {"200": response(&format!("{schema}List"))},
                "x-kubernetes-action": "list",
                "x-kubernetes-group-version-kind": gvk,
            }),
        );
    }
    if verbs("create") {
        collection.insert("post".into(), json!({
            "description": format!("create a {}", r.kind),
            "operationId": operation_id("create", r, ""),
            "parameters": write_params(),
            "requestBody": {"content": {"*/*": {"schema": reference(schema)}}, "required": true},
            "responses": {"200": response(schema), "201": response(schema), "202": response(schema)},
            "x-kubernetes-action": "post",
            "x-kubernetes-group-version-kind": gvk,
        }));
    }
    if verbs("deletecollection") {
        collection.insert(
            "delete".into(),
            json!({
                "description": format!("delete collection of {}", r.kind),
                "operationId": operation_id("deleteCollection", r, ""),
                "parameters": list_params(),
                "responses": {"200": response("io.k8s.apimachinery.pkg.apis.meta.v1.Status")},
                "x-kubernetes-action": "deletecollection",
                "x-kubernetes-group-version-kind": gvk,
            }),
        );
    }
    let mut shared =
        vec![param("pretty", "If 'true', then the output is pretty printed.", "string")];
    if r.namespaced {
        shared.insert(0, ns_param.clone());
    }
    collection.insert("parameters".into(), Value::Array(shared.clone()));
    out.push((scope.clone(), Value::Object(collection)));

    let mut item = Map::new();
    if verbs("get") {
        item.insert(
            "get".into(),
            json!({
                "description": format!("read the specified {}", r.kind),
                "operationId": operation_id("read", r, ""),
                "responses": {"200": response(schema)},
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind": gvk,
            }),
        );
    }
    if verbs("update") {
        item.insert("put".into(), json!({
            "description": format!("replace the specified {}", r.kind),
            "operationId": operation_id("replace", r, ""),
            "parameters": write_params(),
            "requestBody": {"content": {"*/*": {"schema": reference(schema)}}, "required": true},
            "responses": {"200": response(schema), "201": response(schema)},
            "x-kubernetes-action": "put",
            "x-kubernetes-group-version-kind": gvk,
        }));
    }
    if verbs("patch") {
        let mut params = write_params();
        params.push(param("force", "Force is going to \"force\" Apply requests.", "boolean"));
        item.insert(
            "patch".into(),
            json!({
                "description": format!("partially update the specified {}", r.kind),
                "operationId": operation_id("patch", r, ""),
                "parameters": params,
                "requestBody": patch_body,
                "responses": {"200": response(schema), "201": response(schema)},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": gvk,
            }),
        );
    }
    if verbs("delete") {
        item.insert("delete".into(), json!({
            "description": format!("delete a {}", r.kind),
            "operationId": operation_id("delete", r, ""),
            "parameters": [
                param("dryRun", "When present, indicates that modifications should not be persisted.", "string"),
                param("gracePeriodSeconds", "The duration in seconds before the object should be deleted.", "integer"),
                param("propagationPolicy", "Whether and how garbage collection will be performed.", "string"),
            ],
            "responses": {"200": response(schema), "202": response(schema)},
            "x-kubernetes-action": "delete",
            "x-kubernetes-group-version-kind": gvk,
        }));
    }
    if !item.is_empty() {
        let mut params = shared.clone();
        params.insert(0, name_param.clone());
        item.insert("parameters".into(), Value::Array(params));
        out.push((format!("{scope}/{{name}}"), Value::Object(item)));
    }
    // Status and scale subresources.
    for (sub, sub_schema, sub_gvk) in [
        ("status", schema.to_string(), gvk.clone()),
        (
            "scale",
            "io.k8s.api.autoscaling.v1.Scale".to_string(),
            json!({"group": "autoscaling", "version": "v1", "kind": "Scale"}),
        ),
    ] {
        if !r.has_subresource(sub) {
            continue;
        }
        let mut params = shared.clone();
        params.insert(0, name_param.clone());
        let mut patch_params = write_params();
        patch_params.push(param("force", "Force is going to \"force\" Apply requests.", "boolean"));
        out.push((format!("{scope}/{{name}}/{sub}"), json!({
            "get": {"operationId": operation_id("read", r, &capitalize(sub)), "responses": {"200": response(&sub_schema)}, "x-kubernetes-action": "get", "x-kubernetes-group-version-kind": sub_gvk},
            "put": {"operationId": operation_id("replace", r, &capitalize(sub)), "parameters": write_params(), "requestBody": {"content": {"*/*": {"schema": reference(&sub_schema)}}, "required": true}, "responses": {"200": response(&sub_schema)}, "x-kubernetes-action": "put", "x-kubernetes-group-version-kind": sub_gvk},
            "patch": {"operationId": operation_id("patch", r, &capitalize(sub)), "parameters": patch_params, "requestBody": patch_body, "responses": {"200": response(&sub_schema)}, "x-kubernetes-action": "patch", "x-kubernetes-group-version-kind": sub_gvk},
            "parameters": params,
        })));
    }
    if r.namespaced && verbs("list") {
        out.push((format!("{base}/{}", r.plural), json!({
            "get": {
                "description": format!("list or watch objects of kind {}", r.kind),
                "operationId": operation_id("list", r, "ForAllNamespaces").replace("Namespaced", ""),
                "responses": {"200": response(&format!("{schema}List"))},
                "x-kubernetes-action": "list",
                "x-kubernetes-group-version-kind": gvk,
            },
            "parameters": list_params(),
        })));
    }
    out
}

/// The Swagger 2.0 form of everything (`/openapi/v2`, JSON).
fn to_v2(paths: Map<String, Value>, schemas: Map<String, Value>) -> Value {
    let mut definitions = Value::Object(schemas);
    rewrite_refs(&mut definitions);
    if let Some(all) = definitions.as_object_mut() {
        all.values_mut().for_each(|d| unknown_fields_to_v2(d, true));
    }
    let mut v2_paths = Map::new();
    for (path, item) in paths {
        let mut item = item;
        if let Some(ops) = item.as_object_mut() {
            for (_, op) in ops.iter_mut() {
                if let Some(op) = op.as_object_mut() {
                    op.remove("requestBody");
                    if let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut)
                    {
                        for (_, r) in responses.iter_mut() {
                            let schema = r["content"]["application/json"]["schema"].clone();
                            *r = json!({"description": "OK", "schema": schema});
                        }
                    }
                }
            }
            flatten_param_schemas(ops);
        }
        rewrite_refs(&mut item);
        v2_paths.insert(path, item);
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": crate::KUBERNETES_VERSION},
        "paths": v2_paths,
        "definitions": definitions,
    })
}

/// A schema keeping unknown fields (`x-kubernetes-preserve-unknown-fields`, a custom
/// resource's) as upstream publishes it in Swagger 2, where kubectl's older validation would
/// refuse what it does not list: without the marker, its properties and items (a kind keeps
/// `apiVersion`, `kind` and `metadata`), and an array without items loses its type.
fn unknown_fields_to_v2(schema: &mut Value, root: bool) {
    let Some(node) = schema.as_object_mut() else { return };
    if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        node.remove("x-kubernetes-preserve-unknown-fields");
        node.remove("items");
        if root && node.contains_key("x-kubernetes-group-version-kind") {
            if let Some(props) = node.get_mut("properties").and_then(Value::as_object_mut) {
                props.retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "metadata"));
            }
        } else {
            node.remove("properties");
        }
    }
    if node.get("type") == Some(&json!("array")) && !node.contains_key("items") {
        node.remove("type");
    }
    if let Some(props) = node.get_mut("properties").and_then(Value::as_object_mut) {
        props.values_mut().for_each(|p| unknown_fields_to_v2(p, false));
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = node.get_mut(key) {
            unknown_fields_to_v2(sub, false);
        }
    }
}

/// OpenAPI 3 parameters carry `schema`; Swagger 2 has the type inline.
fn flatten_param_schemas(ops: &mut Map<String, Value>) {
    let fix = |params: &mut Value| {
        if let Some(list) = params.as_array_mut() {
            for p in list {
                if let Some(schema) = p.as_object_mut().and_then(|m| m.remove("schema")) {
                    if let Some(m) = schema.as_object() {
                        for (k, v) in m {
                            p[k] = v.clone();
                        }
                    }
                }
            }
        }
    };
    for (_, op) in ops.iter_mut() {
        if op.is_array() {
            fix(op);
        } else if let Some(params) = op.get_mut("parameters") {
            fix(params);
        }
    }
}

fn rewrite_refs(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref") {
                *r = r.replace("#/components/schemas/", "#/definitions/");
            }
            map.remove("nullable");
            for (_, v) in map.iter_mut() {
                rewrite_refs(v);
            }
        }
        Value::Array(list) => list.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(path: &str) -> Value {
        serde_json::from_slice(&Documents::builtin().v3[path].body).unwrap()
    }

    #[test]
    fn swagger_drops_what_keeps_unknown_fields_but_a_kinds_type_meta() {
        let mut root = json!({
            "type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "x-kubernetes-group-version-kind": [{"group": "g", "version": "v1", "kind": "K"}],
            "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": {"$ref": "#/definitions/m"}, "spec": {"type": "object"},
            },
        });
        unknown_fields_to_v2(&mut root, true);
        assert_eq!(root["properties"].as_object().unwrap().len(), 3, "{root}");
        assert!(root.get("x-kubernetes-preserve-unknown-fields").is_none());

        let mut nested = json!({"type": "object", "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                     "description": "d", "properties": {"a": {"type": "string"}}},
            "list": {"type": "array", "x-kubernetes-preserve-unknown-fields": true,
                     "items": {"type": "string"}},
        }});
        unknown_fields_to_v2(&mut nested, true);
        assert_eq!(nested["properties"]["spec"], json!({"type": "object", "description": "d"}));
        assert_eq!(nested["properties"]["list"], json!({}));
    }

    #[test]
    fn core_v1_has_pods_with_gvk_patch_keys_and_field_validation() {
        let d = doc("api/v1");
        let pod = &d["components"]["schemas"]["io.k8s.api.core.v1.Pod"];
        assert_eq!(pod["x-kubernetes-group-version-kind"][0]["kind"], "Pod");
        let spec = &d["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"];
        assert_eq!(spec["properties"]["containers"]["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(spec["properties"]["containers"]["x-kubernetes-patch-strategy"], "merge");
        let patch = &d["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "ConfigMap");
        assert!(patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation" && p["in"] == "query"));
        assert!(d["components"]["schemas"]["io.k8s.api.core.v1.PodList"].is_object());
    }

    #[test]
    fn metadata_is_required_only_where_upstream_requires_it() {
        let required = |path: &str, name: &str| {
            let d = doc(path);
            d["components"]["schemas"][name].get("required").cloned().unwrap_or(json!([]))
        };
        let review = "io.k8s.api.authorization.v1.SelfSubjectAccessReview";
        assert_eq!(required("apis/authorization.k8s.io/v1", review), json!(["spec"]));
        assert_eq!(required("api/v1", "io.k8s.api.core.v1.ConfigMap"), json!([]));
        let status = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
        assert!(!required("api/v1", status).as_array().unwrap().contains(&json!("metadata")));
        let event = required("api/v1", "io.k8s.api.core.v1.Event");
        assert!(event.as_array().unwrap().contains(&json!("metadata")), "{event}");
        let v2: Value = serde_json::from_slice(&Documents::builtin().v2).unwrap();
        assert_eq!(v2["definitions"][review]["required"], json!(["spec"]));
    }

    #[test]
    fn index_points_at_every_group_version() {
        let index = Documents::builtin().v3_index();
        let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"].as_str().unwrap();
        assert!(url.starts_with("/openapi/v3/apis/apps/v1?hash="));
        assert!(doc("apis/apps/v1")["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]
            .is_object());
    }
}
