//! The kinds a policy matches and their schemas, read from the API server as upstream's
//! controller reads them (a REST mapper and the OpenAPI v3 documents): a resource's kind from
//! discovery (`/api/v1`, `/apis/<group>/<version>`), its schema from the group version's
//! `/openapi/v3` document, the component whose `x-kubernetes-group-version-kind` names it,
//! with its `$ref`s resolved in place (a reference back into a schema being resolved, as
//! `JSONSchemaProps` makes, is left open: `dyn` to the checker).

use std::collections::HashMap;

use kube::Client;
use serde_json::{json, Map, Value};

/// The most kinds a policy is checked against (upstream's `maxTypesToCheck`).
pub const MAX_TYPES: usize = 10;

/// Reads kinds and schemas, keeping the documents read (one per policy check).
pub struct Schemas {
    client: Client,
    /// `/openapi/v3`'s index: group version path to document URL.
    index: Option<Value>,
    documents: HashMap<String, Option<Value>>,
}

/// `api/v1` or `apis/<group>/<version>`: how discovery and OpenAPI name a group version.
fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

impl Schemas {
    pub fn new(client: Client) -> Schemas {
        Schemas { client, index: None, documents: HashMap::new() }
    }

    /// The kind served as `resource` in `group`/`version`, if any.
    pub async fn kind_of(&self, group: &str, version: &str, resource: &str) -> Option<String> {
        let list = if group.is_empty() {
            self.client.list_core_api_resources(version).await
        } else {
            self.client.list_api_group_resources(&format!("{group}/{version}")).await
        };
        let list = list.ok()?;
        list.resources.into_iter().find(|r| r.name == resource).map(|r| r.kind)
    }

    async fn get(&self, path: &str) -> Option<Value> {
        let request = http::Request::get(path).body(Vec::new()).ok()?;
        let text = self.client.request_text(request).await.ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The OpenAPI v3 document of a group version.
    async fn document(&mut self, group: &str, version: &str) -> Option<&Value> {
        let key = group_version_path(group, version);
        if !self.documents.contains_key(&key) {
            if self.index.is_none() {
                self.index = self.get("/openapi/v3").await;
            }
            let url =
                self.index.as_ref()?["paths"][&key]["serverRelativeURL"].as_str().map(String::from);
            let document = match url {
                Some(url) => self.get(&url).await,
                None => None,
            };
            self.documents.insert(key.clone(), document);
        }
        self.documents.get(&key)?.as_ref()
    }

    /// The schema of `kind` in `group`/`version`, references resolved; `None` when the
    /// server publishes none.
    pub async fn schema(&mut self, group: &str, version: &str, kind: &str) -> Option<Value> {
        let document = self.document(group, version).await?;
        schema_of_kind(document, group, version, kind)
    }
}

/// The schema of a kind in an OpenAPI v3 document, references resolved.
pub fn schema_of_kind(document: &Value, group: &str, version: &str, kind: &str) -> Option<Value> {
    let components = document["components"]["schemas"].as_object()?;
    let names = |s: &Value| {
        s["x-kubernetes-group-version-kind"].as_array().is_some_and(|gvks| {
            gvks.iter().any(|g| g["group"] == group && g["version"] == version && g["kind"] == kind)
        })
    };
    let (name, schema) = components.iter().find(|(_, s)| names(s))?;
    let mut stack = vec![name.clone()];
    Some(resolve(schema, components, &mut stack))
}

/// The component a schema refers to, directly or as the one member of an `allOf`.
fn reference(schema: &Value) -> Option<&str> {
    let direct = schema["$ref"].as_str();
    let all_of = || match schema["allOf"].as_array().map(Vec::as_slice) {
        Some([only]) => only["$ref"].as_str(),
        _ => None,
    };
    direct.or_else(all_of).and_then(|r| r.strip_prefix("#/components/schemas/"))
}

/// `schema` with its references (and its properties', items' and values') replaced by the
/// components they name; `stack` holds the components being resolved.
fn resolve(schema: &Value, components: &Map<String, Value>, stack: &mut Vec<String>) -> Value {
    if let Some(name) = reference(schema) {
        let Some(target) = components.get(name).filter(|_| !stack.iter().any(|s| s == name)) else {
            return json!({});
        };
        stack.push(name.to_string());
        let resolved = resolve(target, components, stack);
        stack.pop();
        return resolved;
    }
    let Value::Object(fields) = schema else { return schema.clone() };
    let mut out = Map::new();
    for (key, value) in fields {
        let resolved = match key.as_str() {
            "properties" => Value::Object(
                value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, sub)| (name.clone(), resolve(sub, components, stack)))
                    .collect(),
            ),
            "items" | "additionalProperties" if value.is_object() => {
                resolve(value, components, stack)
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), resolved);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_is_found_by_its_gvk_and_its_references_resolved() {
        let document = json!({"components": {"schemas": {
            "io.k8s.api.apps.v1.Deployment": {
                "type": "object",
                "x-kubernetes-group-version-kind": [{"group": "apps", "version": "v1", "kind": "Deployment"}],
                "properties": {
                    "spec": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}], "default": {}},
                    "tree": {"$ref": "#/components/schemas/Tree"}
                }
            },
            "io.k8s.api.apps.v1.DeploymentSpec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "names": {"type": "array", "items": {"$ref": "#/components/schemas/Name"}}
            }},
            "Name": {"type": "string"},
            "Tree": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/components/schemas/Tree"}}}}
        }}});
        let schema = schema_of_kind(&document, "apps", "v1", "Deployment").unwrap();
        assert_eq!(schema["properties"]["spec"]["properties"]["replicas"]["type"], "integer");
        assert_eq!(
            schema["properties"]["spec"]["properties"]["names"]["items"],
            json!({"type": "string"})
        );
        assert_eq!(
            schema["properties"]["tree"]["properties"]["children"]["items"],
            json!({}),
            "a cycle is left open"
        );
        assert!(schema_of_kind(&document, "apps", "v1", "StatefulSet").is_none());
        assert_eq!(group_version_path("", "v1"), "api/v1");
        assert_eq!(group_version_path("apps", "v1"), "apis/apps/v1");
    }
}
