//! `metadata.managedFields`: reading and writing the entries, who each entry is (an applier is
//! one entry whatever apiVersion it applied with; an updater is one entry per apiVersion), how
//! conflicts name them, and the fields the server sets, which nobody owns.

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use super::fieldset::FieldSet;
use super::path::PathElement;
use crate::gofmt::go_quote;

pub(crate) const APPLY: &str = "Apply";
pub(crate) const UPDATE: &str = "Update";
const FIELDS_V1: &str = "FieldsV1";

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub time: Option<String>,
    pub subresource: Option<String>,
    pub fields: FieldSet,
}

impl Entry {
    /// Whether this is the entry of `manager` doing `operation` (for updates, with
    /// `api_version`) through `subresource`.
    pub(crate) fn is(
        &self,
        manager: &str,
        operation: &str,
        api_version: &str,
        subresource: Option<&str>,
    ) -> bool {
        self.manager == manager
            && self.operation == operation
            && (operation == APPLY || self.api_version == api_version)
            && self.subresource.as_deref() == subresource
    }

    /// The manager as conflicts name it: `"kubectl"` for an applier, `"kubectl-edit" using
    /// apps/v1 at 2026-11-21T10:00:00Z` for an updater, with ` with subresource "status"`
    /// after the name for an entry of a subresource.
    pub(crate) fn describe(&self) -> String {
        let mut out = go_quote(&self.manager);
        if let Some(subresource) = &self.subresource {
            out.push_str(&format!(" with subresource {}", go_quote(subresource)));
        }
        if self.operation == UPDATE {
            out.push_str(&format!(" using {}", self.api_version));
            if let Some(time) = &self.time {
                out.push_str(&format!(" at {}", utc_seconds(time)));
            }
        }
        out
    }

    fn to_value(&self) -> Value {
        let mut entry = Map::new();
        if !self.manager.is_empty() {
            entry.insert("manager".into(), json!(self.manager));
        }
        entry.insert("operation".into(), json!(self.operation));
        entry.insert("apiVersion".into(), json!(self.api_version));
        if let Some(time) = &self.time {
            entry.insert("time".into(), json!(time));
        }
        entry.insert("fieldsType".into(), json!(FIELDS_V1));
        entry.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if let Some(subresource) = &self.subresource {
            entry.insert("subresource".into(), json!(subresource));
        }
        Value::Object(entry)
    }
}

/// Reads `managedFields` (absent: no entries), with upstream's checks: a list of entries with
/// operation `Apply` or `Update`, an apiVersion, fieldsType `FieldsV1` and a valid
/// `fieldsV1`. A later entry with the same identity replaces an earlier one.
pub(crate) fn decode(managed_fields: Option<&Value>) -> Result<Vec<Entry>, String> {
    let items = match managed_fields {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(format!("managedFields must be a list, not {other}")),
    };
    let mut entries: Vec<Entry> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let entry = decode_entry(item).map_err(|e| format!("managed fields entry {index}: {e}"))?;
        let identity = (&entry.manager, &entry.operation, &entry.api_version, &entry.subresource);
        entries.retain(|e| !e.is(identity.0, identity.1, identity.2, identity.3.as_deref()));
        entries.push(entry);
    }
    Ok(entries)
}

fn decode_entry(item: &Value) -> Result<Entry, String> {
    let text = |key: &str| -> Result<Option<String>, String> {
        match item.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("{key} must be a string, not {other}")),
        }
    };
    if !item.is_object() {
        return Err("not an object".to_string());
    }
    let operation = text("operation")?.unwrap_or_default();
    if operation != APPLY && operation != UPDATE {
        return Err("operation must be `Apply` or `Update`".to_string());
    }
    let api_version = text("apiVersion")?.filter(|v| !v.is_empty());
    let api_version = api_version.ok_or("apiVersion must not be empty")?;
    match text("fieldsType")?.as_deref() {
        Some(FIELDS_V1) => {}
        None | Some("") => return Err("missing fieldsType".to_string()),
        Some(other) => return Err(format!("invalid fieldsType {other:?}")),
    }
    let fields = match item.get("fieldsV1") {
        None | Some(Value::Null) => FieldSet::new(),
        Some(fields) => FieldSet::from_fields_v1(fields)?,
    };
    Ok(Entry {
        manager: text("manager")?.unwrap_or_default(),
        operation,
        api_version,
        time: text("time")?,
        subresource: text("subresource")?.filter(|s| !s.is_empty()),
        fields,
    })
}

/// Whether a request's `managedFields` asks to clear them: a list of one empty entry.
pub(crate) fn is_reset(managed_fields: Option<&Value>) -> bool {
    match managed_fields.and_then(Value::as_array).map(Vec::as_slice) {
        Some([only]) => only.as_object().is_some_and(Map::is_empty),
        _ => false,
    }
}

/// The `managedFields` value for these entries, in upstream's order (appliers before
/// updaters, then oldest first, then by manager, apiVersion and subresource), or `None` when
/// no entry owns anything.
pub(crate) fn encode(entries: &[Entry]) -> Option<Value> {
    let mut entries: Vec<&Entry> = entries.iter().filter(|e| !e.fields.is_empty()).collect();
    if entries.is_empty() {
        return None;
    }
    entries.sort_by(|a, b| {
        a.operation
            .cmp(&b.operation)
            .then_with(|| seconds(&a.time).cmp(&seconds(&b.time)))
            .then_with(|| a.manager.cmp(&b.manager))
            .then_with(|| a.api_version.cmp(&b.api_version))
            .then_with(|| a.subresource.cmp(&b.subresource))
    });
    Some(Value::Array(entries.into_iter().map(Entry::to_value).collect()))
}

fn seconds(time: &Option<String>) -> i64 {
    time.as_deref().and_then(|t| DateTime::parse_from_rfc3339(t).ok()).map_or(0, |t| t.timestamp())
}

/// A time as RFC 3339 in UTC with seconds, as upstream prints it in conflicts.
fn utc_seconds(time: &str) -> String {
    match DateTime::parse_from_rfc3339(time) {
        Ok(t) => t.with_timezone(&Utc).format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        Err(_) => time.to_string(),
    }
}

/// Drops the fields the server sets from a manager's set: apiVersion, kind, metadata itself
/// and its server-set fields. Only these exact paths go: `metadata.labels` stays.
pub(crate) fn without_server_fields(fields: &FieldSet) -> FieldSet {
    // Built once: every write asks.
    static SERVER: std::sync::OnceLock<FieldSet> = std::sync::OnceLock::new();
    fields.difference(SERVER.get_or_init(server_fields))
}

fn server_fields() -> FieldSet {
    let field = |name: &str| PathElement::Field(name.to_string());
    let mut server = FieldSet::new();
    for top in ["apiVersion", "kind", "metadata"] {
        server.insert(&[field(top)]);
    }
    for meta in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
        "clusterName",
        "managedFields",
    ] {
        server.insert(&[field("metadata"), field(meta)]);
    }
    server
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_in_upstream_order() {
        let stored = json!([
            {"manager": "b", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:02Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:b": {}}}},
            {"manager": "a", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:01Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}},
            {"manager": "z", "operation": "Apply", "apiVersion": "v1", "time": "2026-01-01T00:00:09Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:z": {}}}, "subresource": "status"}
        ]);
        let entries = decode(Some(&stored)).unwrap();
        let encoded = encode(&entries).unwrap();
        let managers: Vec<&str> =
            encoded.as_array().unwrap().iter().map(|e| e["manager"].as_str().unwrap()).collect();
        assert_eq!(managers, ["z", "a", "b"]);
        assert_eq!(encoded[0], stored[2]);
        assert_eq!(entries[2].describe(), r#""z" with subresource "status""#);
        assert_eq!(entries[0].describe(), r#""b" using v1 at 2026-01-01T00:00:02Z"#);
    }

    #[test]
    fn bad_entries_are_refused() {
        for bad in [
            json!({}),
            json!([{"operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}]),
            json!([{"operation": "Apply", "fieldsType": "FieldsV1"}]),
            json!([{"operation": "Apply", "apiVersion": "v1"}]),
            json!([{"operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"x": {}}}]),
        ] {
            assert!(decode(Some(&bad)).is_err(), "{bad}");
        }
        assert!(is_reset(Some(&json!([{}]))));
        assert!(!is_reset(Some(&json!([]))));
    }

    #[test]
    fn server_fields_are_not_owned() {
        let fields = FieldSet::from_fields_v1(&json!({
            "f:apiVersion": {}, "f:kind": {},
            "f:metadata": {".": {}, "f:name": {}, "f:uid": {}, "f:labels": {".": {}, "f:a": {}}}
        }))
        .unwrap();
        assert_eq!(
            without_server_fields(&fields).to_fields_v1(),
            json!({"f:metadata": {"f:labels": {".": {}, "f:a": {}}}})
        );
    }
}
