//! The fields an applied configuration sets, which become its manager's: every scalar, every
//! atomic list or object, every list item, every map entry, and every struct field that is
//! null or an empty object. A struct field with content is not itself a member, only what is
//! in it; that is why an applied `metadata.labels.app` is `{"f:metadata":{"f:labels":
//! {"f:app":{}}}}` while an associative-list item is always a member (`".": {}`).
//!
//! Building the set also checks what upstream checks when it reads the configuration: list
//! items must have their key fields (or set items be scalars), and no two items may share a key.

use std::collections::BTreeSet;

use serde_json::Value;

use super::fieldset::FieldSet;
use super::path::{path_string, PathElement};
use super::types::{Shape, Ty, Types};
use crate::patch::ListType;

/// The field set of `config`, or every problem found in it, each prefixed with its path.
pub(crate) fn applied_fields(
    types: Types<'_>,
    ty: Ty<'_>,
    config: &Value,
) -> Result<FieldSet, Vec<String>> {
    let mut walker = Walker { types, path: Vec::new(), set: FieldSet::new(), errors: Vec::new() };
    walker.walk(ty, config);
    if walker.errors.is_empty() {
        Ok(walker.set)
    } else {
        Err(walker.errors)
    }
}

struct Walker<'a> {
    types: Types<'a>,
    path: Vec<PathElement>,
    set: FieldSet,
    errors: Vec<String>,
}

impl<'a> Walker<'a> {
    fn walk(&mut self, ty: Ty<'a>, value: &Value) {
        match value {
            Value::Array(items) => match self.types.list_type(ty) {
                ListType::Atomic => self.set.insert(&self.path),
                list => {
                    let item_ty = self.types.items(ty);
                    let mut seen = BTreeSet::new();
                    for (index, item) in items.iter().enumerate() {
                        let element = match self.types.item_element(item_ty, &list, item) {
                            Ok(element) => element,
                            Err(e) => {
                                self.error(format!("element {index}: {e}"));
                                continue;
                            }
                        };
                        if !seen.insert(element.clone()) {
                            self.error(format!("duplicate entries for key {element}"));
                            continue;
                        }
                        self.path.push(element);
                        self.walk(item_ty, item);
                        self.set.insert(&self.path);
                        self.path.pop();
                    }
                }
            },
            Value::Object(object) => {
                if matches!(self.types.shape(ty), Shape::Atomic) {
                    self.set.insert(&self.path);
                    return;
                }
                for (key, child) in object {
                    let (child_ty, named) = self.types.entry(ty, key);
                    self.path.push(PathElement::Field(key.clone()));
                    self.walk(child_ty, child);
                    let empty = child.is_null() || child.as_object().is_some_and(|o| o.is_empty());
                    if empty || !named {
                        self.set.insert(&self.path);
                    }
                    self.path.pop();
                }
            }
            _ => self.set.insert(&self.path),
        }
    }

    fn error(&mut self, message: String) {
        let at = path_string(&self.path);
        self.errors.push(if at.is_empty() { message } else { format!("{at}: {message}") });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::PatchSchema;
    use serde_json::json;

    fn fields(type_ref: &str, config: Value) -> Result<Value, Vec<String>> {
        let types = Types::new(PatchSchema::builtin());
        applied_fields(types, types.root(Some(type_ref)), &config).map(|s| s.to_fields_v1())
    }

    #[test]
    fn struct_fields_with_content_are_not_members() {
        let set = fields(
            "io.k8s.api.apps.v1.Deployment",
            json!({"spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "x"}},
                "strategy": {},
                "template": {"spec": {"containers": [{"name": "c", "image": "i", "command": ["a"]}]}}
            }}),
        )
        .unwrap();
        assert_eq!(
            set,
            json!({"f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:strategy": {},
                "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {
                    ".": {}, "f:command": {}, "f:image": {}, "f:name": {}
                }}}}
            }})
        );
    }

    #[test]
    fn sets_and_map_entries() {
        let set = fields(
            "io.k8s.api.core.v1.ConfigMap",
            json!({"metadata": {"finalizers": ["a", "b"], "annotations": {"x": "1"}}, "data": {}}),
        )
        .unwrap();
        assert_eq!(
            set,
            json!({
                "f:data": {},
                "f:metadata": {"f:annotations": {"f:x": {}}, "f:finalizers": {"v:\"a\"": {}, "v:\"b\"": {}}}
            })
        );
    }

    #[test]
    fn items_without_keys_and_duplicates_are_refused() {
        let errors = fields(
            "io.k8s.api.core.v1.Pod",
            json!({"spec": {"containers": [{"image": "x"}, {"name": "a"}, {"name": "a"}]}}),
        )
        .unwrap_err();
        assert_eq!(
            errors,
            [
                ".spec.containers: element 0: associative list with keys has an element that \
                 omits all key fields [\"name\"] (and doesn't have default values for any key \
                 fields)",
                ".spec.containers: duplicate entries for key [name=\"a\"]",
            ]
        );
    }
}
