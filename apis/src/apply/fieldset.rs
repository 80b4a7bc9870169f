//! Sets of field paths, the unit of ownership in server-side apply: what a manager owns, what
//! an apply sets, what a write changed. A set is a tree: each node holds the path elements
//! that end there (its members) and the subtrees below it (its children). A path can be both a
//! member and the parent of other members (a list item owned as a whole and field by field).
//!
//! In `metadata.managedFields` a set is written as `fieldsV1`: a JSON object whose keys are
//! [`PathElement::to_key`] forms; a member with nothing below is `{}`, a member that also has
//! children carries a `".": {}` key, and a node that only leads to members has no `.`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::path::PathElement;

/// A set of paths, each a list of [`PathElement`]s from the object's root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    // Never holds an empty set, so equality and emptiness are structural.
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    /// Whether the set has no paths.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// The number of paths in the set.
    pub fn len(&self) -> usize {
        self.members.len() + self.children.values().map(FieldSet::len).sum::<usize>()
    }

    /// Adds a path; the empty path (the object itself) is never a member, as upstream.
    pub fn insert(&mut self, path: &[PathElement]) {
        let Some((last, parents)) = path.split_last() else { return };
        let mut node = self;
        for element in parents {
            node = node.children.entry(element.clone()).or_default();
        }
        node.members.insert(last.clone());
    }

    /// Whether the set holds exactly this path.
    pub fn has(&self, path: &[PathElement]) -> bool {
        let Some((last, parents)) = path.split_last() else { return false };
        let mut node = self;
        for element in parents {
            match node.children.get(element) {
                Some(child) => node = child,
                None => return false,
            }
        }
        node.members.contains(last)
    }

    /// Whether this element (directly under the root of this set) is a member.
    pub fn has_member(&self, element: &PathElement) -> bool {
        self.members.contains(element)
    }

    /// The paths below `element`, relative to it.
    pub fn child(&self, element: &PathElement) -> Option<&FieldSet> {
        self.children.get(element)
    }

    /// The members directly under the root of this set.
    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    /// The subtrees directly under the root of this set.
    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &FieldSet)> {
        self.children.iter()
    }

    /// Every path, in upstream's iteration order: a node's members first, then its children's
    /// paths, each in element order.
    pub fn paths(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        for member in &self.members {
            let mut path = prefix.clone();
            path.push(member.clone());
            out.push(path);
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (element, child) in &other.children {
            let merged = match out.children.get(element) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(element.clone(), merged);
        }
        out
    }

    /// The paths of this set that are not in `other` (paths below a path of `other` stay).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .map(|(element, child)| match other.children.get(element) {
                Some(theirs) => (element.clone(), child.difference(theirs)),
                None => (element.clone(), child.clone()),
            })
            .filter(|(_, child)| !child.is_empty())
            .collect();
        FieldSet { members, children }
    }

    /// The paths of this set that are neither in `other` nor below a path of `other`.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter(|(element, _)| !other.members.contains(element))
            .map(|(element, child)| match other.children.get(element) {
                Some(theirs) => (element.clone(), child.recursive_difference(theirs)),
                None => (element.clone(), child.clone()),
            })
            .filter(|(_, child)| !child.is_empty())
            .collect();
        FieldSet { members, children }
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(element, child)| {
                let both = child.intersection(other.children.get(element)?);
                (!both.is_empty()).then(|| (element.clone(), both))
            })
            .collect();
        FieldSet { members, children }
    }

    /// Reads a `fieldsV1` object.
    pub fn from_fields_v1(value: &Value) -> Result<FieldSet, String> {
        let Value::Object(object) = value else {
            return Err(format!("fieldsV1 must be an object, not {value}"));
        };
        let (set, _) = read_node(object)?;
        Ok(set)
    }

    /// Writes the set as a `fieldsV1` object, keys in element order.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.write_node(false))
    }

    fn write_node(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self {
            out.insert(".".to_string(), Value::Object(Map::new()));
        }
        let mut elements: BTreeSet<&PathElement> = self.members.iter().collect();
        elements.extend(self.children.keys());
        for element in elements {
            let member = self.members.contains(element);
            let node = match self.children.get(element) {
                Some(child) => child.write_node(member),
                None => Map::new(),
            };
            out.insert(element.to_key(), Value::Object(node));
        }
        out
    }
}

/// A `fieldsV1` node: the set below it, and whether the node itself is a member (it has a
/// `.` key, or nothing below it).
fn read_node(object: &Map<String, Value>) -> Result<(FieldSet, bool), String> {
    let mut set = FieldSet::new();
    let mut is_member = false;
    for (key, value) in object {
        if key == "." {
            is_member = true;
            continue;
        }
        let element = PathElement::from_key(key)?;
        let Value::Object(inner) = value else {
            return Err(format!("the value of {key:?} must be an object"));
        };
        let (child, child_is_member) = read_node(inner)?;
        if child_is_member {
            set.members.insert(element.clone());
        }
        if !child.is_empty() {
            set.children.insert(element, child);
        }
    }
    let is_member = is_member || set.is_empty();
    Ok((set, is_member))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(fields_v1: Value) -> FieldSet {
        FieldSet::from_fields_v1(&fields_v1).unwrap()
    }

    fn field(name: &str) -> PathElement {
        PathElement::Field(name.to_string())
    }

    #[test]
    fn fields_v1_round_trips_in_upstream_order() {
        let text = r#"{"f:data":{".":{},"f:a":{}},"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{}}},"f:replicas":{}}}"#;
        let fields: Value = serde_json::from_str(text).unwrap();
        let parsed = set(fields);
        assert_eq!(parsed.to_fields_v1().to_string(), text);
        assert!(parsed.has(&[field("data")]));
        assert!(parsed.has(&[field("data"), field("a")]));
        assert!(!parsed.has(&[field("spec")]));
        assert_eq!(parsed.len(), 5);
        // Keys come out sorted whatever the input order.
        let shuffled = set(json!({"f:b": {}, "f:a": {"f:y": {}, ".": {}, "f:x": {}}}));
        assert_eq!(
            shuffled.to_fields_v1().to_string(),
            r#"{"f:a":{".":{},"f:x":{},"f:y":{}},"f:b":{}}"#
        );
    }

    #[test]
    fn bad_fields_v1_is_an_error() {
        assert!(FieldSet::from_fields_v1(&json!([])).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"name": {}})).is_err());
        assert_eq!(set(json!({})), FieldSet::new());
    }

    #[test]
    fn set_operations() {
        let a = set(json!({"f:m": {".": {}, "f:x": {}, "f:y": {}}, "f:s": {}}));
        let b = set(json!({"f:m": {"f:y": {}, "f:z": {}}}));
        assert_eq!(
            a.union(&b),
            set(json!({"f:m": {".": {}, "f:x": {}, "f:y": {}, "f:z": {}}, "f:s": {}}))
        );
        assert_eq!(a.intersection(&b), set(json!({"f:m": {"f:y": {}}})));
        assert_eq!(a.difference(&b), set(json!({"f:m": {".": {}, "f:x": {}}, "f:s": {}})));
        let m = set(json!({"f:m": {}}));
        assert_eq!(a.difference(&m), set(json!({"f:m": {"f:x": {}, "f:y": {}}, "f:s": {}})));
        assert_eq!(a.recursive_difference(&m), set(json!({"f:s": {}})));
        assert!(a.difference(&a).is_empty());
        let paths: Vec<String> =
            a.paths().iter().map(|p| super::super::path::path_string(p)).collect();
        assert_eq!(paths, [".m", ".s", ".m.x", ".m.y"]);
    }
}
