//! JSON patch (RFC 6902), applied with the `json-patch` crate after resolving each operation
//! the way evanphx/json-patch v4 (kube-apiserver's library) does, which also gives its error
//! messages. Its departures from the RFC that clients can notice are kept:
//!
//! - `replace` of a key an object does not have adds it;
//! - array indices may be negative, counting from the end;
//! - an operation without `value` uses `null`; `copy` from a missing object key copies `null`;
//! - a `test` of a missing or `null` member passes only when `value` is `null`;
//! - `replace` of the whole document with a scalar does nothing.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, RemoveOperation, ReplaceOperation};
use serde_json::{Map, Value};

use super::PatchError;
use crate::gofmt::go_quote;

/// kube-apiserver's limit on operations in one JSON patch.
pub(crate) const MAX_OPERATIONS: usize = 10000;

/// kube-apiserver's limit on the bytes `copy` operations may add to the document in one
/// patch (`JSONPatchMaxCopyBytes`, its request body limit: 3 MiB). Without it a few dozen
/// copies of the document into itself grow it exponentially.
pub(crate) const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// One decoded operation; fields stay raw until the operation needs them, as upstream.
struct Operation<'a> {
    fields: Option<&'a Map<String, Value>>,
}

impl<'a> Operation<'a> {
    fn kind(&self) -> &'a str {
        self.fields.and_then(|f| f.get("op")).and_then(Value::as_str).unwrap_or("unknown")
    }

    /// The `path` (or `from`) member; `Err` holds upstream's wording for a missing one.
    fn pointer(&self, member: &str, missing: &str) -> Result<&'a str, String> {
        match self.fields.and_then(|f| f.get(member)) {
            None | Some(Value::Null) => Err(format!("{missing}: missing value")),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(format!(
                "json: cannot unmarshal {} into Go value of type string",
                crate::gofmt::go_json_kind(other)
            )),
        }
    }

    fn path(&self) -> Result<&'a str, String> {
        self.pointer("path", "operation missing path field")
    }

    fn from(&self) -> Result<&'a str, String> {
        self.pointer("from", "operation, missing from field")
    }

    /// The `value` member: `None` when absent (upstream then uses a nil node).
    fn value(&self) -> Option<&'a Value> {
        self.fields.and_then(|f| f.get("value"))
    }
}

pub(crate) fn apply(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    let operations = decode(patch)?;
    if operations.len() > MAX_OPERATIONS {
        return Err(PatchError::TooManyOperations { max: MAX_OPERATIONS, got: operations.len() });
    }
    let mut doc = original.clone();
    let mut copied = 0;
    for operation in &operations {
        apply_operation(&mut doc, operation, &mut copied).map_err(PatchError::Unprocessable)?;
    }
    Ok(doc)
}

/// The body must be a list of objects (or `null`, which is no operations); list elements that
/// are `null` decode to operations of kind "unknown".
fn decode(patch: &Value) -> Result<Vec<Operation<'_>>, PatchError> {
    let items = match patch {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                crate::gofmt::go_json_kind(other)
            )))
        }
    };
    items
        .iter()
        .map(|item| match item {
            Value::Object(fields) => Ok(Operation { fields: Some(fields) }),
            Value::Null => Ok(Operation { fields: None }),
            other => Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                crate::gofmt::go_json_kind(other)
            ))),
        })
        .collect()
}

/// Runs one operation; `copied` is what `copy` operations have added so far (bytes of JSON).
fn apply_operation(doc: &mut Value, op: &Operation<'_>, copied: &mut usize) -> Result<(), String> {
    match op.kind() {
        "add" => add(doc, op),
        "remove" => remove(doc, op),
        "replace" => replace(doc, op),
        "move" => move_value(doc, op),
        "test" => test(doc, op),
        "copy" => copy(doc, op, copied),
        other => Err(format!("Unexpected kind: {other}")),
    }
}

/// The container a pointer's last token lives in, with every array index resolved.
#[derive(Debug)]
struct Target {
    /// Tokens (decoded) from the root to the container.
    container: Vec<String>,
    /// Whether the container is an array.
    is_array: bool,
    /// The container's length when it is an array.
    len: usize,
    /// The last token, decoded.
    key: String,
}

fn decode_token(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Upstream's `findObject`: walks every token but the last; `None` when any step is missing
/// or not a container, or the pointer has no `/` at all. Text before the first `/` is ignored.
fn find_container(doc: &Value, path: &str) -> Option<Target> {
    let tokens: Vec<&str> = path.split('/').collect();
    if tokens.len() < 2 {
        return None;
    }
    let (last, middle) = tokens[1..].split_last()?;
    let mut node = doc;
    let mut container = Vec::with_capacity(middle.len());
    for token in middle {
        let token = decode_token(token);
        let (next, resolved) = child(node, &token)?;
        if !(next.is_object() || next.is_array()) {
            return None;
        }
        container.push(resolved);
        node = next;
    }
    let len = node.as_array().map_or(0, Vec::len);
    Some(Target { container, is_array: node.is_array(), len, key: decode_token(last) })
}

/// A child by key or (possibly negative) index, with the token it resolves to.
fn child<'v>(node: &'v Value, token: &str) -> Option<(&'v Value, String)> {
    match node {
        Value::Object(map) => {
            map.get(token).filter(|v| !v.is_null()).map(|v| (v, token.to_string()))
        }
        Value::Array(items) => {
            let index = resolve_index(token, items.len(), items.len()).ok()?;
            items.get(index).map(|v| (v, index.to_string()))
        }
        _ => None,
    }
}

/// An array index as upstream reads it: an integer, negative counting back from `len`, and
/// below `limit`.
fn resolve_index(token: &str, len: usize, limit: usize) -> Result<usize, String> {
    let index: i64 = token
        .parse()
        .map_err(|_| format!("strconv.Atoi: parsing {}: invalid syntax", go_quote(token)))?;
    let invalid = || format!("Unable to access invalid index: {index}: invalid index referenced");
    let resolved = if index < 0 { index + len as i64 } else { index };
    if resolved < 0 || resolved >= limit as i64 {
        return Err(invalid());
    }
    Ok(resolved as usize)
}

fn pointer(container: &[String], last: &str) -> PointerBuf {
    PointerBuf::from_tokens(container.iter().map(String::as_str).chain([last]))
}

/// Runs one crate operation; resolution above has already ruled out the crate's errors.
fn run(doc: &mut Value, operation: PatchOperation) -> Result<(), String> {
    json_patch::patch(doc, &[operation]).map_err(|e| e.to_string())
}

fn get<'v>(doc: &'v Value, container: &[String], key: &str) -> Option<&'v Value> {
    let mut node = doc;
    for token in container.iter().map(String::as_str).chain([key]) {
        node = match node {
            Value::Object(map) => map.get(token)?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(node)
}

fn get_mut<'v>(doc: &'v mut Value, container: &[String], key: &str) -> Option<&'v mut Value> {
    let mut node = doc;
    for token in container.iter().map(String::as_str).chain([key]) {
        node = match node {
            Value::Object(map) => map.get_mut(token)?,
            Value::Array(items) => items.get_mut(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(node)
}

/// Inserts `value` at the target: any key of an object, `-` or an index up to the length of
/// an array.
fn insert(doc: &mut Value, target: &Target, value: Value) -> Result<(), String> {
    let key = if target.is_array && target.key != "-" {
        let limit = target.len + 1;
        let index = resolve_index(&target.key, limit, limit).map_err(|e| {
            if e.starts_with("strconv") {
                format!("value was not a proper array index: '{}': {e}", target.key)
            } else {
                e
            }
        })?;
        index.to_string()
    } else {
        target.key.clone()
    };
    let path = pointer(&target.container, &key);
    run(doc, PatchOperation::Add(AddOperation { path, value }))
}

/// Removes the target and returns what was there.
fn take(doc: &mut Value, target: &Target) -> Result<Value, String> {
    let key = if target.is_array {
        resolve_index(&target.key, target.len, target.len)?.to_string()
    } else {
        if get(doc, &target.container, &target.key).is_none() {
            return Err(format!("Unable to remove nonexistent key: {}: missing value", target.key));
        }
        target.key.clone()
    };
    // Taken out rather than cloned: the crate's remove then drops the `null` left behind.
    let removed = get_mut(doc, &target.container, &key).map(Value::take).unwrap_or(Value::Null);
    run(doc, PatchOperation::Remove(RemoveOperation { path: pointer(&target.container, &key) }))?;
    Ok(removed)
}

fn add(doc: &mut Value, op: &Operation<'_>) -> Result<(), String> {
    let path = op.path().map_err(|_| "add operation failed to decode path: missing value")?;
    let target = find_container(doc, path).ok_or_else(|| {
        format!("add operation does not apply: doc is missing path: \"{path}\": missing value")
    })?;
    let value = op.value().cloned().unwrap_or(Value::Null);
    insert(doc, &target, value).map_err(|e| format!("error in add for path: '{path}': {e}"))
}

fn remove(doc: &mut Value, op: &Operation<'_>) -> Result<(), String> {
    let path = op.path().map_err(|_| "remove operation failed to decode path: missing value")?;
    let target = find_container(doc, path).ok_or_else(|| {
        format!("remove operation does not apply: doc is missing path: \"{path}\": missing value")
    })?;
    take(doc, &target).map(drop).map_err(|e| format!("error in remove for path: '{path}': {e}"))
}

fn replace(doc: &mut Value, op: &Operation<'_>) -> Result<(), String> {
    let path = op.path().map_err(|e| format!("replace operation failed to decode path: {e}"))?;
    let value = op.value().cloned().unwrap_or(Value::Null);
    if path.is_empty() {
        if value.is_object() || value.is_array() {
            *doc = value;
        }
        return Ok(());
    }
    let target = find_container(doc, path).ok_or_else(|| {
        format!("replace operation does not apply: doc is missing path: {path}: missing value")
    })?;
    if !target.is_array {
        return insert(doc, &target, value);
    }
    let index = resolve_index(&target.key, target.len, target.len).map_err(|_| {
        format!("replace operation does not apply: doc is missing key: {path}: missing value")
    })?;
    let path = pointer(&target.container, &index.to_string());
    run(doc, PatchOperation::Replace(ReplaceOperation { path, value }))
}

fn move_value(doc: &mut Value, op: &Operation<'_>) -> Result<(), String> {
    let from = op.from().map_err(|e| format!("move operation failed to decode from: {e}"))?;
    let source = find_container(doc, from).ok_or_else(|| {
        format!("move operation does not apply: doc is missing from path: {from}: missing value")
    })?;
    peek(doc, &source).map_err(|e| format!("error in move for path: '{}': {e}", source.key))?;
    let value =
        take(doc, &source).map_err(|e| format!("error in move for path: '{}': {e}", source.key))?;
    let path = op.path().map_err(|e| format!("move operation failed to decode path: {e}"))?;
    let target = find_container(doc, path).ok_or_else(|| {
        format!(
            "move operation does not apply: doc is missing destination path: {path}: missing value"
        )
    })?;
    insert(doc, &target, value).map_err(|e| format!("error in move for path: '{path}': {e}"))
}

fn copy(doc: &mut Value, op: &Operation<'_>, copied: &mut usize) -> Result<(), String> {
    let from = op.from().map_err(|e| format!("copy operation failed to decode from: {e}"))?;
    let source = find_container(doc, from).ok_or_else(|| {
        format!("copy operation does not apply: doc is missing from path: {from}: missing value")
    })?;
    let value = peek(doc, &source).map_err(|e| format!("error in copy for from: '{from}': {e}"))?;
    let path = op.path().map_err(|_| "copy operation failed to decode path: missing value")?;
    let target = find_container(doc, path).ok_or_else(|| {
        format!(
            "copy operation does not apply: doc is missing destination path: {path}: missing value"
        )
    })?;
    // Counted before the value is cloned, and only as far as the limit, so that a refused
    // copy costs no more than the limit in time and nothing in memory.
    let left = MAX_COPY_BYTES.saturating_sub(*copied);
    *copied += encoded_len_up_to(value.unwrap_or(&Value::Null), left + 1);
    if *copied > MAX_COPY_BYTES {
        return Err(format!(
            "Unable to complete the copy, the accumulated size increase of copy is {copied}, \
             exceeding the limit {MAX_COPY_BYTES}"
        ));
    }
    let value = value.cloned().unwrap_or(Value::Null);
    insert(doc, &target, value).map_err(|e| format!("error while adding value during copy: {e}"))
}

/// What a `get` of the target reads: `None` for a missing object key (upstream's nil node).
fn peek<'v>(doc: &'v Value, target: &Target) -> Result<Option<&'v Value>, String> {
    if target.is_array {
        let index = resolve_index(&target.key, target.len, target.len)?;
        return Ok(get(doc, &target.container, &index.to_string()));
    }
    Ok(get(doc, &target.container, &target.key).filter(|v| !v.is_null()))
}

/// The length of `value` as compact JSON (what upstream counts for a copy), counting no
/// further than `limit`: the writer stops the encoder there.
fn encoded_len_up_to(value: &Value, limit: usize) -> usize {
    struct Counter {
        len: usize,
        limit: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.len += buf.len();
            if self.len >= self.limit {
                return Err(std::io::Error::other("limit reached"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { len: 0, limit };
    let _ = serde_json::to_writer(&mut counter, value);
    counter.len.min(limit)
}

fn test(doc: &mut Value, op: &Operation<'_>) -> Result<(), String> {
    let path = op.path().map_err(|e| format!("test operation failed to decode path: {e}"))?;
    let failed = || format!("testing value {path} failed: test failed");
    if path.is_empty() {
        return if op.value() == Some(&*doc) { Ok(()) } else { Err(failed()) };
    }
    let target = find_container(doc, path).ok_or_else(|| {
        format!("test operation does not apply: is missing path: {path}: missing value")
    })?;
    let actual =
        peek(doc, &target).map_err(|e| format!("error in test for path: '{path}': {e}"))?;
    match (actual, op.value()) {
        (None, Some(Value::Null)) => Ok(()),
        (Some(actual), Some(expected)) if actual == expected => Ok(()),
        _ => Err(failed()),
    }
}
