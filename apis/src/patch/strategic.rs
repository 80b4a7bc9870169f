//! Strategic merge patch, as kube-apiserver applies `application/strategic-merge-patch+json`
//! (k8s.io/apimachinery `pkg/util/strategicpatch`, server side).
//!
//! - Objects merge recursively; a `null` value deletes the key.
//! - Lists whose field has strategy `merge` merge: lists of objects element by element on the
//!   field's merge key, lists of scalars as sets. Other lists, and objects under strategy
//!   `replace`, are replaced by the patch's value.
//! - Order: without `$setElementOrder/<list>`, elements named in the patch come in patch order
//!   and the object's other elements keep their relative order around them; elements new to
//!   the object come before any object element they are compared with.
//! - Directives: `$patch: replace` (replace this object, or the list it is an element of),
//!   `$patch: delete` (remove the object, or the list element with this merge key),
//!   `$deleteFromPrimitiveList/<list>` (remove these scalars), `$setElementOrder/<list>`
//!   (final order of the list), `$retainKeys` (drop the object's keys not listed).
//!   `$patch: merge` is rejected, as upstream does.
//!
//! Errors keep upstream's wording; [`StrategicMergeError::status_code`] gives the status
//! kube-apiserver answers with (several are plain 500s upstream).

use serde_json::{Map, Value};

use super::schema::PatchSchema;
use crate::gofmt::{go_s, go_type_name, go_v_list, go_v_map, is_go_int};

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_STRATEGY: &str = "retainKeys";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";
const MAP_TYPE: &str = "map[string]interface {}";
const LIST_TYPE: &str = "[]interface {}";

/// Why a strategic merge patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategicMergeError {
    /// The object is not a JSON object.
    #[error("invalid JSON document")]
    BadJsonDoc,
    /// The patch is not a JSON object (Go's decoding error).
    #[error("{0}")]
    NotAnObject(String),
    /// A merging list holds lists.
    #[error("lists of lists are not supported")]
    NoListOfLists,
    /// A `$deleteFromPrimitiveList` key without `/<list>`.
    #[error("invalid patch format of primitive list")]
    BadPatchFormatForPrimitiveList,
    /// `$retainKeys` is not a list, or the patch sets a key it does not list.
    #[error("invalid patch format of retainKeys")]
    BadPatchFormatForRetainKeys,
    /// A `$setElementOrder` key without `/<list>`.
    #[error("invalid patch format of setElementOrder list")]
    BadPatchFormatForSetElementOrderList,
    /// The type has no patch metadata (custom resources).
    #[error("strategic merge patch format is not supported")]
    Unsupported,
    /// Any other invalid patch (missing merge key, unknown `$patch`, mismatched list types,
    /// `$setElementOrder` disagreeing with the list...).
    #[error("{0}")]
    Invalid(String),
}

impl StrategicMergeError {
    /// The status kube-apiserver answers with: 400 for decoding and directive-format errors,
    /// 422 for lists of lists, and 500 (reason unknown, this message) for the rest, which
    /// upstream does not classify.
    pub fn status_code(&self) -> u16 {
        match self {
            StrategicMergeError::BadJsonDoc
            | StrategicMergeError::NotAnObject(_)
            | StrategicMergeError::BadPatchFormatForPrimitiveList
            | StrategicMergeError::BadPatchFormatForRetainKeys
            | StrategicMergeError::BadPatchFormatForSetElementOrderList
            | StrategicMergeError::Unsupported => 400,
            StrategicMergeError::NoListOfLists => 422,
            StrategicMergeError::Invalid(_) => 500,
        }
    }
}

type Result<T> = std::result::Result<T, StrategicMergeError>;

/// Applies a strategic merge patch to `original`, an object of the OpenAPI definition
/// `type_name` (unknown names merge with no list metadata). A `null` patch changes nothing.
pub fn strategic_merge_patch(
    original: &Value,
    patch: &Value,
    schema: &PatchSchema,
    type_name: &str,
) -> Result<Value> {
    let Value::Object(original) = original else { return Err(StrategicMergeError::BadJsonDoc) };
    let patch = match patch {
        Value::Object(patch) => patch.clone(),
        Value::Null => Map::new(),
        other => {
            return Err(StrategicMergeError::NotAnObject(format!(
                "json: cannot unmarshal {} into Go value of type {MAP_TYPE}",
                crate::gofmt::go_json_kind(other)
            )))
        }
    };
    let merger = Merger { schema };
    merger.merge_map(original.clone(), patch, schema.root(type_name)).map(Value::Object)
}

/// A type reference into the schema (`None`: nothing known).
type Node<'s> = Option<&'s str>;

/// The Go type of a decoded value, which decides how list elements compare and merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Int,
    Float,
    String,
    List,
    Map,
}

fn kind_of(value: &Value) -> Kind {
    match value {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(n) if is_go_int(n) => Kind::Int,
        Value::Number(_) => Kind::Float,
        Value::String(_) => Kind::String,
        Value::Array(_) => Kind::List,
        Value::Object(_) => Kind::Map,
    }
}

struct Merger<'s> {
    schema: &'s PatchSchema,
}

impl<'s> Merger<'s> {
    fn merge_map(
        &self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
        node: Node<'s>,
    ) -> Result<Map<String, Value>> {
        if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
            let directive = directive.clone();
            return directive_on_map(&directive, patch);
        }
        apply_retain_keys(&mut original, &mut patch)?;
        self.apply_set_element_orders(&mut original, &mut patch, node)?;
        let mut keys: Vec<String> = patch.keys().cloned().collect();
        keys.sort();
        for key in keys {
            let value = patch.remove(&key).unwrap_or(Value::Null);
            self.merge_entry(&mut original, key, value, node)?;
        }
        Ok(original)
    }

    /// Merges one key of the patch into the object.
    fn merge_entry(
        &self,
        original: &mut Map<String, Value>,
        key: String,
        value: Value,
        node: Node<'s>,
    ) -> Result<()> {
        let (key, is_delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
            (extract_key(&key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?, true)
        } else {
            (key, false)
        };
        if value.is_null() {
            original.remove(&key);
            return Ok(());
        }
        let same_kind = match original.get(&key) {
            None => false,
            Some(current) => kind_of(current) == kind_of(&value),
        };
        if !same_kind {
            // New key, or a value of another type: the patch's value replaces it; a deletion
            // list for a missing or mismatched list does nothing.
            if !is_delete_list {
                set_patch_value(original, key, value);
            }
            return Ok(());
        }
        // Taken out and put back under the same key, so key order is kept in every Map flavour.
        let current = original.get_mut(&key).map(std::mem::take).unwrap_or(Value::Null);
        let field = self.schema.lookup(node, &key);
        let merged = match (current, value) {
            (Value::Object(current), Value::Object(patch)) => {
                let strategy = non_retain_keys_strategy(&field.strategies())?;
                if strategy == REPLACE_DIRECTIVE {
                    Value::Object(patch)
                } else {
                    Value::Object(self.merge_map(current, patch, field.value_type)?)
                }
            }
            (Value::Array(current), Value::Array(patch)) => {
                let strategy = non_retain_keys_strategy(&field.strategies())?;
                let merge_key = field.merge_key.unwrap_or_default();
                let list = ListField { node: field.value_type, strategy, merge_key };
                Value::Array(self.merge_list_field(current, patch, &list, is_delete_list)?)
            }
            (_, scalar) => match remove_directives(scalar) {
                Some(value) => value,
                None => {
                    original.remove(&key);
                    return Ok(());
                }
            },
        };
        original.insert(key, merged);
        Ok(())
    }

    /// A list field: replaced by the patch unless its strategy is `merge` (deletion lists are
    /// always merged).
    fn merge_list_field(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        list: &ListField<'s>,
        is_delete_list: bool,
    ) -> Result<Vec<Value>> {
        if list.strategy == MERGE_DIRECTIVE || is_delete_list {
            self.merge_list(original, patch, list, is_delete_list)
        } else {
            Ok(patch)
        }
    }

    fn merge_list(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        list: &ListField<'s>,
        is_delete_list: bool,
    ) -> Result<Vec<Value>> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        let kind = element_kind(&[original.as_slice(), patch.as_slice()])?;
        let merge_key = list.merge_key;
        let (original, patch, merged) = if kind != Kind::Map {
            if is_delete_list {
                return Ok(original.into_iter().filter(|v| !patch.contains(v)).collect());
            }
            let merged = unique(original.iter().chain(patch.iter()).cloned().collect());
            (original, patch, merged)
        } else {
            if merge_key.is_empty() {
                return Err(invalid("cannot merge lists without merge key for struct".to_string()));
            }
            let (original, patch) = apply_list_directives(original, patch, merge_key)?;
            let merged = self.merge_elements(original.clone(), &patch, merge_key, list.node)?;
            (original, patch, merged)
        };
        let (in_patch, server_only) = partition(merged, &patch, merge_key)?;
        order_elements(in_patch, server_only, &patch, &original, merge_key, kind)
    }

    /// Merges each patch element into the object's element with the same merge key, or
    /// appends it.
    fn merge_elements(
        &self,
        mut original: Vec<Value>,
        patch: &[Value],
        merge_key: &str,
        node: Node<'s>,
    ) -> Result<Vec<Value>> {
        for element in patch {
            let Value::Object(fields) = element else {
                return Err(bad_arg_type(MAP_TYPE, element));
            };
            let key_value = fields.get(merge_key).ok_or_else(|| no_merge_key(fields, merge_key))?;
            match find_by_merge_key(&original, merge_key, key_value)? {
                Some(index) => {
                    let Value::Object(current) = std::mem::take(&mut original[index]) else {
                        return Err(bad_arg_type(MAP_TYPE, &original[index]));
                    };
                    original[index] =
                        Value::Object(self.merge_map(current, fields.clone(), node)?);
                }
                None => original.push(element.clone()),
            }
        }
        Ok(original)
    }

    /// Processes every `$setElementOrder/<list>` of the patch: merges that list and orders it.
    fn apply_set_element_orders(
        &self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
        node: Node<'s>,
    ) -> Result<()> {
        let mut keys: Vec<String> =
            patch.keys().filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX)).cloned().collect();
        keys.sort();
        for key in keys {
            let order = patch.remove(&key).unwrap_or(Value::Null);
            let Value::Array(order) = order else { return Err(bad_arg_type(LIST_TYPE, &order)) };
            let list_key = extract_key(&key, SET_ELEMENT_ORDER_PREFIX)?;
            self.apply_set_element_order(original, patch, &list_key, &order, node)?;
        }
        Ok(())
    }

    fn apply_set_element_order(
        &self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
        list_key: &str,
        order: &[Value],
        node: Node<'s>,
    ) -> Result<()> {
        let current = list_at(original, list_key)?;
        let patched = list_at(patch, list_key)?;
        let field = self.schema.lookup(node, list_key);
        let strategy = non_retain_keys_strategy(&field.strategies())?;
        let merge_key = field.merge_key.unwrap_or_default();
        validate_against_order(patched.as_deref().unwrap_or_default(), order, merge_key)?;
        let merged = match (current.clone(), patched.clone()) {
            (Some(current), None) => current,
            (None, Some(patched)) => patched.into_iter().filter_map(remove_directives).collect(),
            (Some(current), Some(patched)) => {
                let list = ListField { node: field.value_type, strategy, merge_key };
                self.merge_list_field(current, patched, &list, false)?
            }
            (None, None) => return Ok(()),
        };
        let current = current.unwrap_or_default();
        let (in_order, server_only) = partition(merged, order, merge_key)?;
        let kind = element_kind(&[current.as_slice(), patched.as_deref().unwrap_or_default()])?;
        let ordered = order_elements(in_order, server_only, order, &current, merge_key, kind)?;
        original.insert(list_key.to_string(), Value::Array(ordered));
        patch.remove(list_key);
        Ok(())
    }
}

/// What a list field's schema says: its items' type, strategy (without `retainKeys`) and
/// merge key (empty for none).
struct ListField<'s> {
    node: Node<'s>,
    strategy: &'s str,
    merge_key: &'s str,
}

fn invalid(message: String) -> StrategicMergeError {
    StrategicMergeError::Invalid(message)
}

fn bad_arg_type(expected: &str, actual: &Value) -> StrategicMergeError {
    invalid(format!("expected a {expected}, but received a {}", go_type_name(actual)))
}

fn no_merge_key(map: &Map<String, Value>, merge_key: &str) -> StrategicMergeError {
    invalid(format!("map: {} does not contain declared merge key: {merge_key}", go_v_map(map)))
}

fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> StrategicMergeError {
    invalid(format!("unknown patch type: {} in map: {}", go_s(directive), go_v_map(map)))
}

/// `$patch` on an object: `replace` gives the patch itself (without the marker), `delete` an
/// empty object.
fn directive_on_map(
    directive: &Value,
    mut patch: Map<String, Value>,
) -> Result<Map<String, Value>> {
    match directive.as_str() {
        Some(REPLACE_DIRECTIVE) => {
            patch.remove(DIRECTIVE_MARKER);
            Ok(patch)
        }
        Some(DELETE_DIRECTIVE) => Ok(Map::new()),
        _ => Err(bad_patch_type(directive, &patch)),
    }
}

/// `$retainKeys`: every key the patch sets must be listed; the object keeps only listed keys.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<()> {
    let Some(retained) = patch.remove(RETAIN_KEYS_DIRECTIVE) else { return Ok(()) };
    let Value::Array(retained) = retained else {
        return Err(StrategicMergeError::BadPatchFormatForRetainKeys);
    };
    let listed = |key: &str| retained.iter().any(|v| v.as_str() == Some(key));
    let unlisted = patch.iter().any(|(key, value)| {
        !value.is_null()
            && !key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            && !key.starts_with(SET_ELEMENT_ORDER_PREFIX)
            && !listed(key)
    });
    if unlisted {
        return Err(StrategicMergeError::BadPatchFormatForRetainKeys);
    }
    original.retain(|key, _| listed(key));
    Ok(())
}

/// The list a directive key (`$setElementOrder/containers`) refers to.
fn extract_key(key: &str, prefix: &str) -> Result<String> {
    match key.split_once('/') {
        Some((head, rest)) if head == prefix => Ok(rest.to_string()),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST_PREFIX => {
            Err(StrategicMergeError::BadPatchFormatForPrimitiveList)
        }
        _ => Err(StrategicMergeError::BadPatchFormatForSetElementOrderList),
    }
}

/// The strategy besides `retainKeys` (`retainKeys` itself only shapes patch creation; the
/// server honours a `$retainKeys` directive wherever it appears).
fn non_retain_keys_strategy<'a>(strategies: &[&'a str]) -> Result<&'a str> {
    match strategies {
        [] => Ok(""),
        [one] if *one == RETAIN_KEYS_STRATEGY => Ok(""),
        [one] => Ok(one),
        [first, second] if *first == RETAIN_KEYS_STRATEGY => Ok(second),
        [first, second] if *second == RETAIN_KEYS_STRATEGY => Ok(first),
        _ => Err(invalid(format!("unexpected patch strategy: [{}]", strategies.join(" ")))),
    }
}

/// A key's value set whole: nulls dropped from its objects, directive-marked objects removed.
fn set_patch_value(original: &mut Map<String, Value>, key: String, mut value: Value) {
    discard_nulls(&mut value);
    match remove_directives(value) {
        Some(value) => {
            original.insert(key, value);
        }
        None => {
            original.remove(&key);
        }
    }
}

fn discard_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(discard_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// Drops every object carrying `$patch` (`None` when the value itself is one).
fn remove_directives(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) if map.contains_key(DIRECTIVE_MARKER) => None,
        Value::Object(map) => Some(Value::Object(
            map.into_iter().filter_map(|(k, v)| remove_directives(v).map(|v| (k, v))).collect(),
        )),
        Value::Array(items) => {
            Some(Value::Array(items.into_iter().filter_map(remove_directives).collect()))
        }
        other => Some(other),
    }
}

/// The list under `key`, `None` when absent; anything but a list is an error.
fn list_at(map: &Map<String, Value>, key: &str) -> Result<Option<Vec<Value>>> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items.clone())),
        Some(other) => Err(bad_arg_type(LIST_TYPE, other)),
    }
}

/// The one Go type of all elements of the lists; lists of lists are refused.
fn element_kind(lists: &[&[Value]]) -> Result<Kind> {
    let mut found: Option<Kind> = None;
    for element in lists.iter().flat_map(|list| list.iter()) {
        let kind = kind_of(element);
        match found {
            None if kind == Kind::List => return Err(StrategicMergeError::NoListOfLists),
            None => found = Some(kind),
            Some(previous) if previous != kind => {
                let rendered: Vec<String> = lists.iter().map(|l| go_v_list(l)).collect();
                return Err(invalid(format!(
                    "list element types are not identical: [{}]",
                    rendered.join(" ")
                )));
            }
            Some(_) => {}
        }
    }
    found.ok_or_else(|| invalid("no elements in any of the given slices".to_string()))
}

fn unique(values: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(values.len());
    for value in values {
        if !out.contains(&value) {
            out.push(value);
        }
    }
    out
}

/// Handles the `$patch` elements of a list of objects: `delete` removes the object's
/// elements with that merge key, `replace` makes the list exactly the patch's other elements.
/// Returns the object's list and the patch's plain elements.
fn apply_list_directives(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for element in patch {
        let Value::Object(fields) = &element else { return Err(bad_arg_type(MAP_TYPE, &element)) };
        let Some(directive) = fields.get(DIRECTIVE_MARKER) else {
            plain.push(element);
            continue;
        };
        match directive.as_str() {
            Some(DELETE_DIRECTIVE) => {
                let key_value =
                    fields.get(merge_key).ok_or_else(|| no_merge_key(fields, merge_key))?;
                while let Some(index) = find_by_merge_key(&original, merge_key, key_value)? {
                    original.remove(index);
                }
            }
            Some(REPLACE_DIRECTIVE) => replace = true,
            Some(MERGE_DIRECTIVE) => {
                return Err(invalid(
                    "merging lists cannot yet be specified in the patch".to_string(),
                ))
            }
            _ => return Err(bad_patch_type(directive, fields)),
        }
    }
    Ok(if replace { (plain, Vec::new()) } else { (original, plain) })
}

/// The index of the first element whose merge key has this value; every element must be an
/// object.
fn find_by_merge_key(list: &[Value], merge_key: &str, value: &Value) -> Result<Option<usize>> {
    for (index, element) in list.iter().enumerate() {
        let Value::Object(fields) = element else {
            return Err(invalid(format!("value for key {index} is not a map")));
        };
        if fields.get(merge_key) == Some(value) {
            return Ok(Some(index));
        }
    }
    Ok(None)
}

/// Splits merged elements into those the patch (or order list) names and the others.
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut named = Vec::with_capacity(merged.len());
    let mut others = Vec::with_capacity(merged.len());
    for element in merged {
        let is_named = if merge_key.is_empty() {
            by.contains(&element)
        } else {
            let Value::Object(fields) = &element else {
                return Err(bad_arg_type(MAP_TYPE, &element));
            };
            let key_value = fields.get(merge_key).ok_or_else(|| no_merge_key(fields, merge_key))?;
            find_by_merge_key(by, merge_key, key_value)?.is_some()
        };
        if is_named {
            named.push(element);
        } else {
            others.push(element);
        }
    }
    Ok((named, others))
}

/// Sorts the named elements by `patch_order` and the others by `server_order`, then merges
/// the two runs so each keeps its order.
fn order_elements(
    named: Vec<Value>,
    others: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Result<Vec<Value>> {
    let named = sort_by_order(named, patch_order, merge_key, kind)?;
    let others = sort_by_order(others, server_order, merge_key, kind)?;
    Ok(merge_sorted(others, named, server_order, merge_key, kind))
}

/// The identity an element is ordered by: its merge-key value for objects, itself otherwise;
/// `None` stands for Go's nil (absent or null).
fn identity<'v>(element: &'v Value, merge_key: &str, kind: Kind) -> Option<&'v Value> {
    let value = if kind == Kind::Map {
        element.as_object().and_then(|fields| fields.get(merge_key))
    } else {
        Some(element)
    };
    value.filter(|v| !v.is_null())
}

fn position(order: &[Value], element: &Value, merge_key: &str, kind: Kind) -> Option<usize> {
    let wanted = identity(element, merge_key, kind);
    order.iter().position(|candidate| identity(candidate, merge_key, kind) == wanted)
}

fn sort_by_order(
    elements: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Result<Vec<Value>> {
    let (elements, deletions) = if kind == Kind::Map {
        require_merge_key(merge_key, &elements)?;
        require_merge_key(merge_key, order)?;
        split_deletions(elements)?
    } else {
        (elements, Vec::new())
    };
    let mut keyed: Vec<(Option<usize>, Value)> =
        elements.into_iter().map(|e| (position(order, &e, merge_key, kind), e)).collect();
    go_stable_sort(&mut keyed);
    let mut sorted: Vec<Value> = keyed.into_iter().map(|(_, e)| e).collect();
    sorted.extend(deletions);
    Ok(sorted)
}

/// Upstream sorts with a "less" that is true whenever either side is missing from the order
/// list. When every element has a position that is an ordinary stable sort; otherwise this
/// replays the insertion sort Go's `sort.SliceStable` runs.
fn go_stable_sort(keyed: &mut [(Option<usize>, Value)]) {
    if keyed.iter().all(|(p, _)| p.is_some()) {
        keyed.sort_by_key(|(p, _)| *p);
        return;
    }
    let less = |a: Option<usize>, b: Option<usize>| match (a, b) {
        (Some(a), Some(b)) => a < b,
        _ => true,
    };
    for i in 1..keyed.len() {
        let mut j = i;
        while j > 0 && less(keyed[j].0, keyed[j - 1].0) {
            keyed.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn require_merge_key(merge_key: &str, list: &[Value]) -> Result<()> {
    for element in list {
        let Value::Object(fields) = element else { return Err(bad_arg_type(MAP_TYPE, element)) };
        if !fields.contains_key(merge_key) {
            return Err(no_merge_key(fields, merge_key));
        }
    }
    Ok(())
}

/// Separates `$patch: delete` elements, which go last.
fn split_deletions(list: Vec<Value>) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut kept = Vec::with_capacity(list.len());
    let mut deletions = Vec::new();
    for element in list {
        let Value::Object(fields) = &element else { return Err(bad_arg_type(MAP_TYPE, &element)) };
        if fields.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some(DELETE_DIRECTIVE) {
            deletions.push(element);
        } else {
            kept.push(element);
        }
    }
    Ok((kept, deletions))
}

/// Interleaves the object's remaining elements (`server`) with the patch's (`patch`): a server
/// element goes first only when both are in `server_order` and it comes earlier there.
fn merge_sorted(
    server: Vec<Value>,
    patch: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Vec<Value> {
    let rank = |e: &Value| position(server_order, e, merge_key, kind);
    let mut server = server.into_iter().map(|e| (rank(&e), e)).peekable();
    let mut patch = patch.into_iter().map(|e| (rank(&e), e)).peekable();
    let mut out = Vec::new();
    loop {
        let take_server = match (server.peek(), patch.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((Some(s), _)), Some((Some(p), _))) => s < p,
            _ => false,
        };
        let next = if take_server { server.next() } else { patch.next() };
        out.extend(next.map(|(_, e)| e));
    }
    out
}

/// Checks the patch's list agrees with `$setElementOrder`: its elements (deletions aside) must
/// appear in the order list, in the same relative order.
fn validate_against_order(patch_list: &[Value], order: &[Value], merge_key: &str) -> Result<()> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let elements = if merge_key.is_empty() {
        patch_list.to_vec()
    } else {
        split_deletions(patch_list.to_vec())?.0
    };
    let (mut p, mut o) = (0, 0);
    while p < elements.len() && o < order.len() {
        if elements[p].as_object().is_some_and(|f| f.contains_key(DIRECTIVE_MARKER)) {
            p += 1;
            continue;
        }
        if same_merge_key(&elements[p], &order[o], merge_key)? {
            p += 1;
        }
        o += 1;
    }
    if p < elements.len() && o >= order.len() {
        return Err(invalid(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER_PREFIX} list:\n{}\n",
            go_v_list(patch_list),
            go_v_list(order)
        )));
    }
    Ok(())
}

fn same_merge_key(left: &Value, right: &Value, merge_key: &str) -> Result<bool> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let Value::Object(left) = left else { return Err(bad_arg_type(MAP_TYPE, left)) };
    let Value::Object(right) = right else { return Err(bad_arg_type(MAP_TYPE, right)) };
    let left_value = left.get(merge_key).ok_or_else(|| no_merge_key(left, merge_key))?;
    let right_value = right.get(merge_key).ok_or_else(|| no_merge_key(right, merge_key))?;
    Ok(left_value == right_value)
}
