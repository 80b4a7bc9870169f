//! Merging an extension server's Swagger 2.0 document into the server's own, as
//! kube-aggregator merges them (kube-openapi's merge that ignores path conflicts and renames
//! conflicting definitions and parameters):
//!
//! - a path the document already has stays as it is;
//! - a definition (or parameter) of a name the document already has, with other content, is
//!   added as `<name>_v2` (`_v3`, ... the first name free in both documents; a rename made
//!   for an earlier extension with the same content is reused), and every `$ref` of the
//!   extension's document follows it;
//! - one with the same content apart from its `x-kubernetes-group-version-kind` list adds
//!   its kinds to the existing one's.
//!
//! So `kubectl explain` of an extension's kind reads the extension's own schema even where
//! the extension was built against other Kubernetes types than this server's.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

/// The extension naming the kinds a definition is the schema of.
const GVK: &str = "x-kubernetes-group-version-kind";

/// Adds `theirs` to `ours` (both Swagger 2.0 documents), as the module says.
pub fn merge(ours: &mut Value, theirs: &Value) {
    let mut theirs = theirs.clone();
    for (section, ref_prefix) in
        [("definitions", "#/definitions/"), ("parameters", "#/parameters/")]
    {
        let empty = Map::new();
        let existing = ours[section].as_object().unwrap_or(&empty);
        let incoming = theirs[section].as_object().unwrap_or(&empty);
        let renames = renames(existing, incoming);
        if renames.is_empty() {
            continue;
        }
        rename_refs(&mut theirs, ref_prefix, &renames);
        if let Some(incoming) = theirs[section].as_object_mut() {
            let renamed: Vec<(String, Value)> = renames
                .iter()
                .filter_map(|(old, new)| incoming.remove(old).map(|v| (new.clone(), v)))
                .collect();
            incoming.extend(renamed);
        }
    }
    for section in ["paths", "definitions", "parameters"] {
        let Some(incoming) = theirs[section].as_object() else { continue };
        if !ours[section].is_object() {
            ours[section] = Value::Object(Map::new());
        }
        let existing = ours[section].as_object_mut().expect("an object");
        for (name, value) in incoming {
            match existing.get_mut(name) {
                None => {
                    existing.insert(name.clone(), value.clone());
                }
                Some(current) if section != "paths" => add_kinds(current, value),
                Some(_) => {}
            }
        }
    }
}

/// The new names of `incoming`'s entries that clash with `existing`'s.
fn renames(
    existing: &Map<String, Value>,
    incoming: &Map<String, Value>,
) -> HashMap<String, String> {
    let mut used: HashSet<String> = existing.keys().cloned().collect();
    let mut renames = HashMap::new();
    'entries: for (name, value) in incoming {
        match existing.get(name) {
            Some(current) if !same_but_kinds(current, value) => {}
            _ => continue,
        }
        let mut i = 1;
        let mut new_name;
        loop {
            i += 1;
            new_name = format!("{name}_v{i}");
            match existing.get(&new_name) {
                Some(current) if same_but_kinds(current, value) => {
                    renames.insert(name.clone(), new_name);
                    continue 'entries;
                }
                Some(_) => {}
                None => break,
            }
        }
        while used.contains(&new_name) || incoming.contains_key(&new_name) {
            i += 1;
            new_name = format!("{name}_v{i}");
        }
        used.insert(new_name.clone());
        renames.insert(name.clone(), new_name);
    }
    renames
}

/// Whether two definitions are the same apart from the kinds they name.
fn same_but_kinds(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let rest = |m: &Map<String, Value>| m.iter().filter(|(k, _)| *k != GVK).count();
            rest(a) == rest(b)
                && a.iter().filter(|(k, _)| *k != GVK).all(|(k, v)| b.get(k) == Some(v))
        }
        _ => a == b,
    }
}

/// Adds the kinds `incoming` names that `current` does not (same definitions otherwise).
fn add_kinds(current: &mut Value, incoming: &Value) {
    let Some(theirs) = incoming[GVK].as_array() else { return };
    let Some(current) = current.as_object_mut() else { return };
    let ours = current.entry(GVK).or_insert_with(|| Value::Array(Vec::new()));
    let Some(ours) = ours.as_array_mut() else { return };
    for kind in theirs {
        if !ours.contains(kind) {
            ours.push(kind.clone());
        }
    }
}

/// Points every `$ref` to `<prefix><old>` at `<prefix><new>`.
fn rename_refs(value: &mut Value, prefix: &str, renames: &HashMap<String, String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if key == "$ref" {
                    let target = v.as_str().and_then(|r| r.strip_prefix(prefix));
                    if let Some(new) = target.and_then(|name| renames.get(name)) {
                        *v = Value::String(format!("{prefix}{new}"));
                    }
                } else {
                    rename_refs(v, prefix, renames);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rename_refs(v, prefix, renames)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(fields: &[&str]) -> Value {
        let properties: Map<String, Value> =
            fields.iter().map(|f| (f.to_string(), json!({"type": "string"}))).collect();
        json!({"type": "object", "properties": properties})
    }

    #[test]
    fn a_clashing_definition_is_renamed_and_the_extensions_references_follow_it() {
        let mut ours = json!({
            "paths": {"/api/v1/pods": {"get": {}}},
            "definitions": {"ObjectMeta": meta(&["name", "uid"])},
        });
        let flunder = json!({"type": "object", "x-kubernetes-group-version-kind":
                                 [{"group": "wardle.example.com", "version": "v1", "kind": "Flunder"}],
                             "properties": {"metadata": {"$ref": "#/definitions/ObjectMeta"}}});
        let theirs = json!({
            "paths": {"/api/v1/pods": {"get": {"x": 1}},
                      "/apis/wardle.example.com/v1/flunders": {"get": {
                          "responses": {"200": {"schema": {"$ref": "#/definitions/Flunder"}}}}}},
            "definitions": {"ObjectMeta": meta(&["name"]), "Flunder": flunder},
        });
        merge(&mut ours, &theirs);
        // Ours stay as they were; theirs come in under the new name, referred to by it.
        assert_eq!(ours["definitions"]["ObjectMeta"], meta(&["name", "uid"]));
        assert_eq!(ours["definitions"]["ObjectMeta_v2"], meta(&["name"]));
        assert_eq!(
            ours["definitions"]["Flunder"]["properties"]["metadata"]["$ref"],
            "#/definitions/ObjectMeta_v2"
        );
        assert_eq!(ours["paths"]["/api/v1/pods"], json!({"get": {}}));
        assert!(ours["paths"]["/apis/wardle.example.com/v1/flunders"].is_object());

        // A second extension with the same clashing definition reuses the rename; a third,
        // different again, gets the next name.
        let again = json!({"definitions": {"ObjectMeta": meta(&["name"]),
                                           "Other": {"$ref": "#/definitions/ObjectMeta"}}});
        merge(&mut ours, &again);
        assert_eq!(ours["definitions"]["Other"]["$ref"], "#/definitions/ObjectMeta_v2");
        assert!(ours["definitions"].get("ObjectMeta_v3").is_none());
        let third = json!({"definitions": {"ObjectMeta": meta(&["generation"])}});
        merge(&mut ours, &third);
        assert_eq!(ours["definitions"]["ObjectMeta_v3"], meta(&["generation"]));
    }

    #[test]
    fn the_same_definition_naming_other_kinds_adds_them() {
        let kind = |k: &str| json!({"group": "", "version": "v1", "kind": k});
        let mut ours =
            json!({"definitions": {"DeleteOptions": {"type": "object", GVK: [kind("A")]}}});
        let theirs = json!({"definitions": {"DeleteOptions": {"type": "object", GVK: [kind("A"), kind("B")]}}});
        merge(&mut ours, &theirs);
        assert_eq!(ours["definitions"]["DeleteOptions"][GVK], json!([kind("A"), kind("B")]));
        assert!(ours["definitions"].get("DeleteOptions_v2").is_none());
    }
}
